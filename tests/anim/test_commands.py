"""Commands write rows: the task table's defaults, the fast views, the
stack written one slot at a time, a constructor's checks before anything is taken.

The speed itself is measured by ``scuffle bench --crowd realistic`` (``command_us``),
never here; these tests pin what the cheaper paths must keep: the same rows, the same
stacks, the same errors.
"""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from scuffle.anim.engine.callbacks import Callback
from scuffle.anim.data.clip import author_clip
from scuffle.anim.playback.cursor import Cursor
from scuffle.anim.playback.player import Player
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.engine.store import NO_ROW, TASK_DEFAULTS, StaleHandle, Stores, task_table
from scuffle.anim.playback.tasks import ClipTask, LoopTask, TaskInUse, TaskType


def _tasks_row(ts, r: int) -> dict:
    return {name: getattr(ts, name)[r].tolist() for name in ts._columns}


def _ends(ts) -> dict:
    """Task row -> its end callback, for the rows that have one."""
    return {int(r): ts.calls.get(int(ts.on_end[r])) for r in np.flatnonzero(ts.on_end >= 0)}


def test_a_row_given_back_is_taken_again_at_the_defaults():
    """A task row freed with links, numbers and an end callback is back at TASK_DEFAULTS
    (0 elsewhere) at once, its callback id let go, and alloc_default takes it so."""
    from scuffle.anim.playback.tasks import set_call

    st = Stores(4)
    ts = st.tasks
    r = ts.alloc_default()
    ts.c0[r], ts.nxt[r], ts.incoming[r], ts.blend[r], ts.value[r] = 3, 2, 1, 0.25, 1.5
    ts.released[r] = ts.placed[r] = True
    set_call(ts, "on_end", r, Callback("k", ()))
    assert int(ts.on_end[r]) >= 0 and len(st.calls) == 1
    ts.free(r)
    assert ts.unsettled == [] and len(st.calls) == 0
    again = ts.alloc_default()
    assert again == r
    row = _tasks_row(ts, r)
    want = {name: TASK_DEFAULTS.get(name, 0) for name in ts._columns}
    want["dir_banks"] = [NO_ROW] * 8
    assert row == want


def test_the_bulk_reset_leaves_live_rows_alone():
    """Many rows a kernel gave back (Table.freed) are reset with one write per column at
    ``settle``; a row taken again in between by alloc (which settles first) keeps what its
    owner wrote."""
    ts = task_table(8)
    rows = [ts.alloc_default() for _ in range(6)]
    for r in rows:
        ts.c1[r] = 5
        ts.rate[r] = 2.0
    for r in rows[:5]:                                # as the flush's kernel gives rows back
        ts.live[r] = False
        ts.gen[r] += 1
        ts.free_rows[ts.n_free[0]] = r
        ts.n_free[0] += 1
    ts.freed(rows[:5])
    assert ts.unsettled == rows[:5]
    kept = rows[5]
    taken = ts.alloc(zero=False)                      # resets the five first
    ts.c1[taken] = 9
    assert ts.unsettled == [] and int(ts.c1[taken]) == 9 and int(ts.c1[kept]) == 5
    for r in rows[:5]:
        if r != taken:
            assert int(ts.c1[r]) == NO_ROW and float(ts.rate[r]) == 0.0


def test_fast_views_follow_the_arrays_through_growth_and_copies():
    """m_<column> is a view of the column's memory: a write through it is the array's, a
    read gives a Python number; growth and a pickle or deep copy make it again."""
    ts = task_table(2)
    r = ts.alloc_default()
    ts.m_c0[r] = 7
    ts.m_rate[r] = 0.1                                 # rounded to float32 as numpy rounds it
    assert int(ts.c0[r]) == 7 and ts.rate[r] == np.float32(0.1)
    assert type(ts.m_c0[r]) is int and ts.m_rate[r] == float(np.float32(0.1))
    for _ in range(3):
        ts.alloc_default()                             # grown past 2
    assert ts.capacity >= 4 and ts.m_c0.obj is ts.c0 and ts.m_c0[r] == 7
    for other in (pickle.loads(pickle.dumps(ts)), copy.deepcopy(ts)):
        assert other.m_c0.obj is other.c0 and other.m_c0[r] == 7
        other.m_c0[r] = 1
        assert int(other.c0[r]) == 1 and int(ts.c0[r]) == 7
    hum = copy.deepcopy(Stores(2).humans)
    hum.m_stack[hum.stack_width + 2] = 11
    assert int(hum.stack[1, 2]) == 11


def test_cursor_rows_written_through_kept_views_survive_growth_and_copies():
    """cursor_row keeps the cursor table's fast views in one tuple (Table.row_views): rows
    written after the table grew land in the new arrays, and a pickled or copied table
    makes its own views (none shared with the original)."""
    from scuffle.anim.playback.cursor import cursor_proto, cursor_row
    from scuffle.anim.engine.store import cursor_table

    clip = author_clip("c", 10)
    proto = cursor_proto(clip, False)
    cur = cursor_table(2)
    rows = [cursor_row(cur, 5, 40 + k, 0x10, proto) for k in range(9)]    # grown past 2, 4, 8
    assert cur.capacity >= 9 and cur.row_views[4].obj is cur.anim
    assert cur.anim[rows].tolist() == [40 + k for k in range(9)] and set(cur.bank[rows].tolist()) == {5}
    assert set(cur.flags[rows].tolist()) == {0x10} and set(cur.end[rows].tolist()) == {proto[1]}
    for other in (pickle.loads(pickle.dumps(cur)), copy.deepcopy(cur)):
        assert other.row_views is None
        r = cursor_row(other, 6, 99, 0, proto)
        assert int(other.anim[r]) == 99 and other.row_views[4].obj is other.anim
        assert int(cur.anim[r]) != 99 or not cur.live[r]


def test_a_keyed_value_set_through_a_stale_handle_is_refused():
    """on_end / on_wrap set through a handle whose row went back raise StaleHandle (they
    would otherwise land on the row's next owner)."""
    st = Stores(2)
    cur = st.cursors
    c = Cursor(author_clip("c", 10), 0, 3, 0, cur)
    t = LoopTask(c, 1.0, tstore=st.tasks)
    t.dispose()
    with pytest.raises(StaleHandle):
        t.on_end = Callback("k", ())
    with pytest.raises(StaleHandle):
        t.on_wrap = Callback("k", ())
    assert (st.tasks.on_end == -1).all() and (st.tasks.on_wrap == -1).all() and len(st.calls) == 0


@pytest.fixture
def demo():
    from scuffle.game.fighters.moveset import Move, demo_set

    p = Player()
    return p, CharacterInstance(demo_set(), "h"), Move


def test_a_change_writes_the_same_stack_as_insert_bottom_then_push(demo):
    """The change's two slots written at once: new task at the bottom, the old ones above
    it in order, the fade on top; the playing id is the new task's; held bits set."""
    p, h, Move = demo
    p.change(h, p.loop(h, Move.IDLE), 0.0)
    p.change(h, p.loop(h, Move.WALK), 0.2)
    before = h.stack
    f = p.change(h, p.clip(h, Move.JAB, p.loop(h, Move.FIGHT_IDLE), held=0x1), 0.3)
    after = h.stack
    assert [t.type for t in after] == [TaskType.CLIP, *(t.type for t in before), TaskType.FADE]
    assert after[1:-1] == before and after[-1] is f and f.incoming is after[0]
    assert h.record.anim_id == int(Move.JAB) and h.record.flags & 0x1
    assert all(p.stores.tasks.placed[t.trow] for t in after)
    assert p.batch.top_task(h) is f and p.batch.bottom_task(h) is after[0]


def test_a_next_task_in_use_is_refused_before_anything_is_taken(demo):
    """Player.clip checks its next task (a fade, another table's, one with a place) before
    a cursor or a task row is taken: the pool and the tables stay as they were."""
    p, h, Move = demo
    idle = p.loop(h, Move.FIGHT_IDLE)
    p.change(h, idle, 0.0)
    st = p.stores
    counts = (p.pool.in_use, st.tasks.in_use, st.cursors.in_use)
    with pytest.raises(TaskInUse, match=r"ClipTask\.next: LoopTask"):
        p.clip(h, Move.JAB, idle)
    with pytest.raises(ValueError, match="a fade"):
        p.clip(h, Move.JAB, h.stack[-1])
    assert (p.pool.in_use, st.tasks.in_use, st.cursors.in_use) == counts


def test_the_constructors_write_what_the_handles_read(demo):
    """Each fast constructor leaves the rows its handle's properties read: rate, flags,
    held, the cursor rows and their flags, a clip's next task, blend and window."""
    p, h, Move = demo
    nxt = p.loop(h, Move.FIGHT_IDLE)
    c = p.clip(h, Move.JAB, nxt, blend=0.1, flags=0x13, held=0x4, rate=1.5)
    assert isinstance(c, ClipTask) and c.next is nxt and c.blend == np.float32(0.1) and c.rate == 1.5
    assert int(c.flags) == 0x13 and c.held == 0x4 and int(c.cursor.flags) == 0x13
    assert p.stores.tasks.c0[c.trow] == c.cursor.row and p.stores.tasks.placed[nxt.trow]
    g = p.gait(h, [Move.WALK, Move.JOG, Move.RUN, Move.SPRINT, Move.SPRINT], target=1.6, value=0.5, flags=0x41)
    lead, follow = g._lead_follow()                    # 0x200 (continuous) off: the target rounds
    assert g.value == 0.5 and g.target == 2.0 and g.lower == 0 and int(follow.flags) == 0x11
    assert int(lead.flags) == 0x1 and g.ids == tuple(int(m) for m in
                                                          (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT, Move.SPRINT))
    k = p.pick(h, [Move.WALK, Move.JOG, Move.RUN, Move.SPRINT], 1.0, value=1.7)
    assert k.chosen() == 2 and [int(c.flags) & 0x10 for c in k.clips] == [0x10, 0x10, 0, 0x10]
    m = p.mix(h, Move.WALK, Move.JOG, weight=0.7)
    assert m.leading_cursor() is m.b and int(m.a.flags) & 0x10 and not int(m.b.flags) & 0x10


def _rows(p) -> tuple:
    """Every column of the world's task, cursor, fade and gait tables and the humans' stack
    rows, as lists (two worlds given the same commands compare equal)."""
    st = p.stores
    out = []
    for t in (st.tasks, st.cursors, st.fades, st.gaits):
        live = t.live.copy()
        out.append({name: getattr(t, name)[live].tolist() for name in t._columns})
    h = st.humans
    out.append({name: getattr(h, name).tolist() for name in ("flags", "anim", "depth", "stack")})
    out.append(p.pool.out[:p.pool.out.size].nonzero()[0].tolist())
    return tuple(out)


def test_the_straight_change_writes_what_the_general_change_writes():
    """A change under a float fade (the straight path over the human's row) and the same
    change under an int fade (the general path: insert_bottom, then push) leave the same
    rows in every table, through early finishes and a stack near its limit."""
    from scuffle.game.fighters.moveset import Move, demo_set

    worlds = []
    for as_float in (True, False):
        p = Player()
        h = CharacterInstance(demo_set(), "h")
        deepest = 0
        for k in range(14):
            fade = float(k % 3) if as_float else k % 3
            nxt = p.loop(h, Move.FIGHT_IDLE if k % 2 else Move.IDLE)
            t = p.clip(h, Move.JAB, nxt, blend=0.1, held=0x4 if k % 4 == 0 else 0) if k % 3 else nxt
            p.change(h, t, fade)
            deepest = max(deepest, len(h.stack))
        worlds.append((_rows(p), [(type(t).__name__, t.trow) for t in h.stack], h.record.anim_id,
                       h.record.flags, deepest))
    assert worlds[0] == worlds[1]
    assert worlds[0][-1] > 6                           # the early finishes' rule was reached


def test_running_is_the_newest_unreleased_task_of_its_type(demo):
    """Player.running reads the human's stack row: the task of that type nearest the
    bottom that is not released, as a walk of ``inst.stack`` finds it; None without one
    or without a row."""
    p, h, Move = demo
    gait_ids = [Move.WALK, Move.JOG, Move.RUN, Move.SPRINT, Move.SPRINT]
    assert p.running(h, TaskType.GAIT) is None         # no row yet
    p.change(h, p.loop(h, Move.IDLE), 0.0)
    assert p.running(h, TaskType.GAIT) is None
    g1 = p.gait(h, gait_ids, target=1.0)
    p.change(h, g1, 0.2)
    g2 = p.gait(h, gait_ids, target=2.0)
    p.change(h, g2, 0.2)
    walk = next(t for t in h.stack if t.type == TaskType.GAIT and not t.released)
    assert p.running(h, TaskType.GAIT) is walk is g2
    assert p.running(h, TaskType.LOOP).type == TaskType.LOOP
    p.defer(h, g2)                                     # released: the older gait answers
    assert p.running(h, TaskType.GAIT) is g1
    assert p.running(h, TaskType.MIX) is None


def test_running_agrees_with_the_reference():
    """The reference world answers Player.running from its plain stack the same way."""
    from scuffle.anim.reference.world import Reference
    from scuffle.anim.reference.world import RefInstance
    from scuffle.game.fighters.moveset import Move, demo_set

    ref = Reference()
    h = RefInstance(demo_set(), "h")
    ids = [Move.WALK, Move.JOG, Move.RUN, Move.SPRINT, Move.SPRINT]
    assert ref.running(h, TaskType.GAIT) is None
    ref.change(h, ref.gait(h, ids, target=1.0), 0.0)
    g = ref.gait(h, ids, target=2.0)
    ref.change(h, g, 0.2)
    assert ref.running(h, TaskType.GAIT) is g


def test_held_on_stack_is_the_or_of_the_unreleased_tasks_held_bits(demo):
    """StackRules.held_on_stack reads the stack row: the held bits of every task on it not
    released, as a walk of ``inst.stack`` ORs them; 0 for an empty stack."""
    p, h, Move = demo

    def walked():
        held = 0
        for t in h.stack:
            if not t.released:
                held |= int(t.held)
        return held

    assert p.held_on_stack(h) == 0
    p.change(h, p.loop(h, Move.IDLE, held=0x2), 0.0)
    clip = p.clip(h, Move.IDLE, held=0x5)
    p.change(h, clip, 0.2)
    assert p.held_on_stack(h) == walked() == 0x7
    p.defer(h, clip)                                   # released: its bits no longer count
    assert p.held_on_stack(h) == walked() == 0x2


def test_a_bad_held_is_refused_before_anything_is_taken(demo):
    """A held word that is not an int is refused by loop and clip before a cursor or a task
    row is taken."""
    p, h, Move = demo
    st = p.stores
    counts = (p.pool.in_use, st.tasks.in_use, st.cursors.in_use)
    with pytest.raises(ValueError):
        p.loop(h, Move.IDLE, held="x")
    with pytest.raises(ValueError):
        p.clip(h, Move.JAB, held="x")
    assert (p.pool.in_use, st.tasks.in_use, st.cursors.in_use) == counts


def test_a_chain_writes_what_its_loop_and_clips_write():
    """Player.chain's clips made straight from their rows (no per-clip checks of a next task
    it just made) leave the rows Player.loop and Player.clip leave for the same chain:
    the first clip holds the held bits and the end callback, each hands over to the next
    under the blend time."""
    from scuffle.game.fighters.moveset import Move, demo_set

    ids = [Move.JAB, Move.CROSS, Move.HOOK, Move.FIGHT_IDLE]
    cb = Callback("k", (1,))
    worlds = []
    for by_chain in (True, False):
        p = Player()
        h = CharacterInstance(demo_set(), "h")
        if by_chain:
            top = p.chain(h, ids, blend=0.1, flags=0x1, held=0x4, on_end=cb)
        else:
            top = p.loop(h, ids[-1], flags=0x1)
            for k, i in enumerate(reversed(ids[:-1])):
                first = k == len(ids) - 2
                top = p.clip(h, i, top, blend=0.1, flags=0x1, held=0x4 if first else 0, on_end=cb if first else None)
        p.change(h, top, 0.2)
        worlds.append((_rows(p), _ends(p.stores.tasks), top.trow))
    assert worlds[0] == worlds[1]
    assert worlds[0][1] == {worlds[0][2]: cb}


def test_a_mix_or_pick_holding_another_tables_cursor_is_refused(demo):
    """A mix or pick whose cursor handle was swapped for one of another cursor table is
    not the world's: change refuses it (ForeignTask) before anything changes; the mix and
    pick the Player made pass."""
    from scuffle.anim.engine.store import cursor_table
    from scuffle.anim.playback.tasks import ForeignTask

    p, h, Move = demo
    m = p.mix(h, Move.WALK, Move.JOG, weight=0.3)
    k = p.pick(h, [Move.WALK, Move.JOG, Move.RUN, Move.SPRINT], 1.0, value=1.2)
    other = Cursor(author_clip("o", 10), 0, 7, 0, cursor_table(1))
    for task, swap in ((m, lambda: setattr(m, "b", other)), (k, lambda: k.clips.__setitem__(3, other))):
        swap()
        depth = len(h.stack)
        with pytest.raises(ForeignTask, match="was not made by this world's Player"):
            p.change(h, task, 0.2)
        assert len(h.stack) == depth
    p.change(h, p.mix(h, Move.WALK, Move.JOG, weight=0.7), 0.2)
    p.change(h, p.pick(h, [Move.WALK, Move.JOG, Move.RUN, Move.SPRINT], 1.0, value=2.0), 0.2)
    assert [t.type for t in h.stack] == [TaskType.PICK, TaskType.MIX, TaskType.FADE, TaskType.FADE]


def test_a_direction_reads_its_centre_from_the_rows():
    """A type 13 task the Player made keeps no cursor handles: its anim id is the centre
    row's (c1), the same as its leading cursor's, before and after set_value moves the
    centre; its cursors are handles onto the rows c0 / c1 / c2."""
    from scuffle.game.tools.bench import DIRECTION_BASE, crowd_set

    p = Player()
    h = CharacterInstance(crowd_set(), "h")
    t = p.direction(h, DIRECTION_BASE, direction=2.2, flags=0x1)
    assert t._dir_cache == []
    assert t.anim_id() == t.leading_cursor().anim_id == DIRECTION_BASE + 2
    ts = p.stores.tasks
    assert [c.row for c in t.cursors()] == [int(ts.c0[t.trow]), int(ts.c1[t.trow]), int(ts.c2[t.trow])]
    assert [int(c.flags) for c in t.cursors()] == [0x11, 0x1, 0x11]
    t.set_value(5.9)
    assert t.anim_id() == t.leading_cursor().anim_id == DIRECTION_BASE + 6
    p.change(h, t, 0.2)
    assert h.record.anim_id == DIRECTION_BASE + 6
