"""The deferred flush as rows (anim.engine.kernels.flush_release and flush_anim_ids).

Player.flush releases the runs of deferred tasks with no callback in one kernel call each
and the tasks with an end or report callback in Python between them, in the list's
order ("When a clip ends", L314; docs/original.md, "The per-update order"). Each case
runs on the engine and on the plain-Python reference (anim.reference), which releases
every task in Python, and checks the numbers the spec gives (the held bits of both
HeldRelease readings, state flag 0x4000000000) and what a callback sees mid-flush; the
pool and every table's rows come back (no leak), a cut-off chain's next tasks are given
back unreleased, a human forgotten with deferred tasks is released then freed, and a
snapshot taken between the step and the flush flushes to the same state.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.engine import kernels as K
from scuffle.anim.engine.callbacks import Callback
from scuffle.anim.playback.player import Player
from scuffle.anim.reference import engine_state
from scuffle.anim.engine.snapshot import load_engine, save_engine
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.engine.store import StaleHandle
from scuffle.anim.playback.tasks import HeldFlags, TaskType
from scuffle.game.fighters.moveset import demo_set

from flushhelp import CLIP, IDLE, flush_until, three_handing_over
from flushhelp import state as _state
from flushhelp import worlds as _worlds

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

ANIM_STATE = int(HeldFlags.ANIM_STATE)


def _rows_in_use(p: Player) -> tuple:
    st = p.stores
    return st.tasks.in_use, st.cursors.in_use, st.fades.in_use, st.gaits.in_use


def _until_released(w, hs, most: int = 60) -> int:
    """Step and flush until a human has released ids; returns the updates it took."""
    for u in range(1, most + 1):
        w.step(hs)
        w.flush()
        if any(h.released for h in hs):
            return u
    raise AssertionError("no release")


@pytest.mark.parametrize("rule, after_hold, after_clip", [
    # "When a clip ends" L314 (0x00105f78): every bit the released task holds goes
    ("original", 0x4 | ANIM_STATE, 0x0),
    # "Coney's implementation" L402: not the bits the clip still on the stack holds
    ("coney", 0x6 | ANIM_STATE, 0x0),
])
def test_held_bits_and_state_flag_of_both_readings(rule, after_hold, after_clip):
    """A hold holding 0x3 under a clip holding 0x6 (the record 0x7): the hold's release
    clears 0x3 (ORIGINAL) or 0x1 only (CONEY); the clip's hand-over release (type 3) then
    clears its bits and state flag 0x4000000000 (the hold, type 5, left it). The same on
    the kernel's rows and on the reference, with the same released ids and pool."""
    aset = demo_set()
    seen = []
    for w, cls in _worlds(held_release=rule):
        h = cls(aset, "a")
        w.change(h, w.hold(h, 11, held=0x3), 0.0)
        w.step([h])
        w.flush()                                   # the fade of 0 s ends: the hold alone
        assert h.record.flags == 0x3
        h.record.flags = h.record.flags | ANIM_STATE
        w.change(h, w.clip(h, CLIP, w.loop(h, IDLE), held=0x6), 0.0)
        assert h.record.flags == 0x7 | ANIM_STATE
        w.step([h])
        w.flush()                                   # the hold and the fade released
        assert h.record.flags == after_hold, rule
        assert sorted(h.released) == [-1, 11]       # a fade reports -1
        _until_released(w, [h])                     # the clip hands over to the idle
        assert h.released == [CLIP]
        assert h.record.flags == after_clip
        assert h.record.anim_id == IDLE
        assert w.pool.in_use == 1 == w.tasks_out([h])
        seen.append(_state(w, [h]))
    assert seen[0] == seen[1]


def _peek(log: list, others: list, w):
    """A callback that notes what the flush has done to the other humans so far, then raises."""
    def fn(inst):
        log.append(tuple((o.record.flags, list(o.released)) for o in others) + (w.pool.in_use,))
        raise RuntimeError(f"boom from {inst.name}")
    return fn


@pytest.mark.parametrize("collect", [False, True])
def test_a_callback_raising_mid_flush_sees_the_releases_before_it(collect):
    """Three humans' clips hand over in one update; the middle one's end callback raises.
    It sees the first human's release done (held bits cleared, its id released, its task
    back in the pool) and the third's not yet, as when every release was Python; the
    third is still released and given back, the ids refreshed, then the exception is
    raised (or, with on_callback_error, handed over and nothing raised)."""
    aset = demo_set()
    logs = []
    for w, cls in _worlds():
        if collect and not isinstance(w, Player):
            continue
        log: list = []
        seen: list = []                         # the humans, once made (the callback peeks at two)
        w.callbacks.register("peek", _peek(log, seen, w))
        errors: list = []
        if collect:
            w.on_callback_error = lambda phase, exc: errors.append((phase, str(exc)))
        hs = three_handing_over(w, cls, aset, "peek")
        seen += [hs[0], hs[2]]
        raised = flush_until(w, hs, RuntimeError, lambda _: bool(hs[0].released))
        if collect:
            assert raised is None and errors == [("flush", "boom from h1")]
        else:
            assert raised == "boom from h1"
        # h0's clip released and back in the pool (6 tasks out, 5 left); h2's not yet: its clip
        # still holds RECOVERY (0x4), which its events 0x2c / 0x2d left of WINDUP (0x00101dd8)
        assert log == [((0, [CLIP]), (int(HeldFlags.RECOVERY), []), 5)]
        assert [h.released for h in hs] == [[CLIP]] * 3
        assert [h.record.flags for h in hs] == [0, 0, 0]
        assert [h.record.anim_id for h in hs] == [IDLE] * 3
        assert w.pool.in_use == 3 == w.tasks_out(hs)
        logs.append((log, _state(w, hs)))
    if not collect:
        assert logs[0] == logs[1]


def test_a_cut_off_chain_gives_its_next_tasks_back_unreleased():
    """A chain cut off before its first clip hands over: the first task is released (its
    held bits, its id, its end callback), the next tasks it owns go back to the pool
    without a release (no end callback: "When a clip ends", "gives back a cut-off task's
    next task"), and every row they held goes back: none leaks, no keyed value stays."""
    aset = demo_set()
    states = []
    for w, cls in _worlds():
        log: list = []
        w.callbacks.register("log", lambda inst, tag: log.append((tag, inst.name)))
        hs = [cls(aset, "a"), cls(aset, "b")]
        base = _rows_in_use(w) if isinstance(w, Player) else None
        first = w.chain(hs[0], [CLIP, 12, 14, IDLE], held=0x1)
        first.next.on_end = Callback("log", ("next",))          # never called: discarded, not released
        first.next.next.on_end = Callback("log", ("next-next",))
        w.change(hs[0], first, 0.2)
        w.change(hs[1], w.chain(hs[1], [12, IDLE], held=0x2, on_end=Callback("log", ("b",))), 0.2)
        for _ in range(3):
            w.step(hs)
            w.flush()
        assert w.pool.in_use == 4 + 2 + 2                    # the chains, the fades
        w.cut(hs[0])
        w.flush()
        assert hs[0].released == [CLIP, -1]
        assert hs[0].record.flags == 0 and hs[0].record.anim_id == -1
        assert hs[1].record.flags == 0x2
        assert log == []
        assert w.pool.in_use == 3 == w.tasks_out(hs)
        if isinstance(w, Player):
            tasks = w.stores.tasks
            assert _rows_in_use(w) == (3, 2, 1, 0)
            assert base == (0, 0, 0, 0)
            live = set(np.flatnonzero(tasks.live).tolist())
            ends = set(np.flatnonzero(tasks.on_end >= 0).tolist())
            assert ends <= live and len(ends) == 1
            assert all(v is None for r, v in enumerate(tasks.views) if r not in live)
            w.batch.validate()
        for _ in range(40):
            w.step(hs)
            w.flush()
        assert log == [("b", "b")]
        states.append(_state(w, hs))
    assert states[0] == states[1]


def test_every_task_type_gives_its_rows_back():
    """A stack of every type (1, 3 with its next, 5, 9, 10, 11, 12, 13) cut and flushed:
    the kernel gives every cursor, fade, gait and task row back (none leaks), the
    direction's keyed bank indices go with its row, the pool is empty; the released ids
    are those of the reference."""
    from scuffle.game.tools.bench import DIRECTION_BASE, crowd_set

    aset = crowd_set()
    released = []
    for w, cls in _worlds():
        h = cls(aset, "a")
        w.push(h, w.loop(h, IDLE))
        w.push(h, w.clip(h, CLIP, w.loop(h, IDLE)))
        w.push(h, w.hold(h, 12))
        w.push(h, w.mix(h, 408, 409, weight=0.7))
        w.push(h, w.pick(h, [408, 409, 410, 411], 1.0, value=2.2))
        w.push(h, w.gait(h, [408, 409, 410, 411, 411], target=2.5, value=1.0))
        w.change(h, w.direction(h, DIRECTION_BASE, direction=3.4), 0.3)
        for _ in range(4):
            w.step([h])
            w.flush()
        w.cut(h)
        w.flush()
        assert w.pool.in_use == 0 == w.tasks_out([h])
        if isinstance(w, Player):
            assert _rows_in_use(w) == (0, 0, 0, 0)
            ts = w.stores.tasks
            assert (ts.dir_banks == -1).all() and (ts.on_end == -1).all() and len(w.stores.calls) == 0
            w.batch.validate()
        assert h.record.anim_id == -1
        released.append(sorted(h.released))
    assert released[0] == released[1]
    assert len(released[0]) == 8


def test_a_human_forgotten_with_deferred_tasks():
    """A human cut and forgotten before the flush (its row kept until then): the flush
    releases its tasks on its record (Python: the engine no longer holds it) beside a
    human the kernel releases, then gives its row back; the pool is balanced and the
    record is stale afterwards."""
    aset = demo_set()
    p = Player()
    a, b = CharacterInstance(aset, "a"), CharacterInstance(aset, "b")
    for h in (a, b):
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), held=0x5), 0.0)
    for _ in range(2):                                 # the fade of 0 s ends, then an update of the clips
        p.step([a, b])
        p.flush()
    rows = p.stores.humans.in_use
    p.cut(a)
    p.cut(b)
    p.forget(a)
    assert p.stores.humans.in_use == rows              # kept until the flush
    record = a.record
    touched = p.flush()
    assert touched == [a, b]
    assert a.released == [CLIP] and b.released == [CLIP]
    assert b.record.flags == 0 and b.record.anim_id == -1
    assert p.stores.humans.in_use == rows - 1
    with pytest.raises(StaleHandle):
        record.flags                                   # noqa: B018
    assert p.pool.in_use == 0 == p.tasks_out([b])
    assert _rows_in_use(p) == (0, 0, 0, 0)


def test_a_human_forgotten_makes_its_own_released_ids_and_leaves_the_others_to_their_read():
    """A human forgotten after a flush released tasks of several humans: its released ids
    are made then (its row may go to a newcomer), the others' stay in the log, in release
    order, made when read: the same lists as read before the leave."""
    aset = demo_set()
    lists: list = []
    for leave in (False, True):
        p = Player()
        hs = [CharacterInstance(aset, f"h{i}") for i in range(5)]
        for h in hs:
            p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), held=0x5), 0.0)
        for _ in range(60):                            # until the clips end (released by the flush)
            p.step(hs)
            p.flush()
            if p.released_log:
                break
        assert p.released_log
        logged = int(sum(len(c[0]) for c in p.released_log))
        if leave:
            gone = hs[2]
            p.cut(gone)
            p.forget(gone)                             # its ids made now; the others' wait
            assert gone.released and gone.released == lists[0][2]
            left = int(sum(len(c[0]) for c in p.released_log))
            assert 0 < left == logged - len(gone.released)
        lists.append([h.released for h in hs])
    assert lists[0] == lists[1] and all(lists[1])


def test_a_snapshot_between_the_step_and_the_flush():
    """A snapshot taken after a step that deferred tasks, before their flush: restored,
    the flush releases them again to the same state, rows, pool and ids, and the updates
    after it run the same."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(6)]
    for i, h in enumerate(hs):
        p.change(h, p.chain(h, [CLIP, 12, IDLE][i % 2:], held=0x1 << i, blend=0.1 * (i % 3)), 0.2)
    for _ in range(60):
        p.step(hs)
        if len(p.deferred) >= 3:
            break
        p.flush()
    assert len(p.deferred) >= 3
    snap = save_engine(p, hs)

    def run() -> list:
        p.flush()
        out = [(engine_state(p, hs), _rows_in_use(p), [list(h.released) for h in hs])]
        for _ in range(25):
            p.update(hs)
            out.append((engine_state(p, hs), _rows_in_use(p), [list(h.released) for h in hs]))
        return out

    first = run()
    load_engine(p, snap)
    assert len(p.deferred) >= 3
    assert run() == first


def test_the_flush_kernels_run():
    """The flush's releases and ids run in the compiled kernels (one signature each)."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(3)]
    for h in hs:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE)), 0.1)
    _until_released(p, hs)
    assert len(K.flush_release.signatures) == 1
    assert len(K.flush_anim_ids.signatures) == 1
    assert [h.released for h in hs] == [[-1]] * 3                     # the fades
    assert [h.record.anim_id for h in hs] == [CLIP] * 3
    assert all(t.type == TaskType.CLIP for h in hs for t in h.stack)


def test_a_callback_giving_a_later_task_its_end_callback_mid_flush():
    """An end callback that gives an end callback (and the report bit) to a task later on
    the same deferred list: that task's release then calls them, as when every release
    was Python (the kernel takes only the tasks with nothing to call at their turn)."""
    aset = demo_set()
    logs = []
    for w, cls in _worlds():
        hs = [cls(aset, f"h{i}") for i in range(4)]
        log: list = []
        later: list = []

        def arm(inst, log=log, later=later):
            log.append(("arm", inst.name))
            later[0].on_end = Callback("log", ("late",))
            later[1].held = later[1].held | int(HeldFlags.REPORT)

        w.callbacks.register("arm", arm)
        w.callbacks.register("log", lambda inst, tag, log=log: log.append((tag, inst.name)))
        hs[3].on_report = Callback("log", ("report",))
        for i, h in enumerate(hs):
            t = w.clip(h, CLIP, w.loop(h, IDLE), on_end=Callback("arm", ()) if i == 0 else None)
            if i >= 2:
                later.append(t)
            w.change(h, t, 0.0)
        _until_released(w, hs)
        while not hs[0].released or hs[0].released == [-1]:
            w.step(hs)
            w.flush()
        assert log == [("arm", "h0"), ("late", "h2"), ("report", "h3")]
        logs.append((log, _state(w, hs)))
    assert logs[0] == logs[1]


@pytest.mark.slow
def test_the_warm_up_compiles_the_flush_kernels():
    """anim.playback.warmup.compile_kernels runs the flush's kernels too (a fresh process: none
    compiled or loaded before it), so a world's first flush does not compile."""
    import subprocess
    import sys

    code = ("from scuffle.anim.engine import kernels as K\n"
            "from scuffle.anim.playback.warmup import compile_kernels\n"
            "before = (len(K.flush_release.signatures), len(K.flush_anim_ids.signatures))\n"
            "compile_kernels()\n"
            "print(before, (len(K.flush_release.signatures), len(K.flush_anim_ids.signatures)))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "(0, 0) (1, 1)"



_FIRST_FLUSH = """
from scuffle.anim.engine import kernels as K
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game
g = Game()
s = demo_set()
for i in range(2):
    g.add_human(f"h{i}", s, (2.0 * i, 0.0, 0.0), 0.0)
g.step()
released = sum(len(g.instance(f"h{i}").released) for i in range(2))
print(released, len(K.flush_release.overloads), len(K.flush_anim_ids.overloads))
"""


@pytest.mark.slow
def test_the_first_flush_loads_its_kernels_with_nothing_to_release():
    """A fresh process whose first update releases nothing has both flush kernels loaded
    after it (Player._load_flush_kernels): their load from numba's cache (15-30 ms) falls
    on the first update, not on the first update with a task to release (a hitch at a
    fight's first strike)."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", _FIRST_FLUSH], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[-3:] == ["0", "1", "1"], p.stdout


def _released_after_grow(grow: bool) -> tuple:
    """Four humans ending their clips in one flush, h0's and h2's with end callbacks (two
    stops); h0's grows the task table (``grow``: its columns replaced mid-flush). Returns
    the callbacks' log, every human's released ids and anim id, and the player."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(4)]
    log: list = []

    def first(inst):
        log.append(("first", inst.name))
        if grow:
            ts = p.stores.tasks
            assert ts.reserve(ts.capacity + 1)

    p.callbacks.register("first", first)
    p.callbacks.register("log", lambda inst, tag: log.append((tag, inst.name)))
    for i, h in enumerate(hs):
        on_end = Callback("first", ()) if i == 0 else Callback("log", ("second",)) if i == 2 else None
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), on_end=on_end), 0.0)
    _until_released(p, hs)
    while not hs[0].released or hs[0].released == [-1]:
        p.step(hs)
        p.flush()
    return log, [(h.released, h.record.anim_id) for h in hs], p


def test_a_resume_after_the_task_table_grew_mid_flush_is_checked_again():
    """A callback that grows the task table between two stops: the flush resumes on the
    new columns (checked by FlushJob, not the columns it checked before the stop) and
    releases as it does when nothing grows."""
    log, out, p = _released_after_grow(True)
    log0, out0, p0 = _released_after_grow(False)
    assert log == log0 == [("first", "h0"), ("second", "h2")]
    assert out == out0
    assert p.stores.tasks.capacity > p0.stores.tasks.capacity
    checked = p.batch._flush_job._last
    assert checked.tasks.type is p.stores.tasks.type             # the last run's check saw the grown table
    assert _rows_in_use(p) == _rows_in_use(p0)


def _five_ending(peek: bool) -> tuple:
    """Five humans whose clips hand over in the same update, the second's and fourth's
    with end callbacks (two stops, two resumes), stepped until that update's flush (the
    callbacks note each human's ``released`` then, with ``peek``). Returns the player,
    the humans, the callbacks' notes and the flush's kernel calls."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(5)]
    seen: list = []
    p.callbacks.register("peek", lambda inst: seen.append((inst.name, [list(h.released) for h in hs] if peek else 0)))
    for i, h in enumerate(hs):
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), on_end=Callback("peek", ()) if i in (1, 3) else None), 0.0)
    p.step(hs)
    p.flush()
    calls = [0]
    orig = p._kernel_release

    def counted(*a):
        calls[0] += 1
        return orig(*a)
    p._kernel_release = counted
    for _ in range(60):
        p.released_log = []
        calls[0] = 0
        p.step(hs)
        p.flush()
        if seen:
            return p, hs, seen, calls[0]
    raise AssertionError("no clip ended")


def test_a_flush_with_stops_logs_one_range_a_round_owning_its_ids():
    """The released ids of a round's kernel calls (the first, then a resume after each
    callback's stop) are one range of the log, each resume going on from the call before,
    copied out of the round's arrays when the round ends (the next round writes them
    again)."""
    p, hs, seen, calls = _five_ending(peek=False)
    assert calls == 3
    assert [name for name, _ in seen] == ["h1", "h3"]
    assert len(p.released_log) == 1
    hrows, ids = p.released_log[0]
    assert hrows.base is None and ids.base is None  # its own memory, not the round's arrays
    assert ids.tolist() == [CLIP] * 5
    assert [p.batch._instances[r].name for r in hrows.tolist()] == [h.name for h in hs]
    assert [h.released for h in hs] == [[CLIP]] * 5


def test_a_callback_reading_released_mid_flush_sees_every_release_before_it():
    """A callback reading the humans' ``released`` in the middle of the flush sees the
    releases before its own human's and its own (its id included), none after."""
    p, hs, seen, calls = _five_ending(peek=True)
    assert calls == 3
    assert seen == [("h1", [[CLIP], [CLIP], [], [], []]), ("h3", [[CLIP]] * 4 + [[]])]
    assert [h.released for h in hs] == [[CLIP]] * 5


def test_the_flush_kernel_marks_the_rows_holding_callback_ids():
    """flush_release writes a task row given back that holds a callback id (an end
    callback here) as ~row and counts it (FLUSH_KEYED), so Python lets the ids go without
    reading the other rows: after the flushes the callback table holds no id of a task
    given back, and the task rows' id columns are at NO_CALLBACK."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(4)]
    p.callbacks.register("log", lambda inst, tag: None)
    for i, h in enumerate(hs):
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), on_end=Callback("log", (f"t{i}",)) if i % 2 else None), 0.0)
    ts = p.stores.tasks
    assert len(ts.calls) == 2
    keyed = []
    orig = p._rows_back

    def spy(tasks, freed, nf, n_keyed):
        keyed.append(([int(r) for r in freed[:nf] if r < 0], n_keyed))
        return orig(tasks, freed, nf, n_keyed)
    p._rows_back = spy
    for _ in range(60):
        p.step(hs)
        p.flush()
        if hs[1].released == [CLIP]:
            break
    assert [h.released for h in hs] == [[CLIP]] * 4
    marked = [r for rows, _ in keyed for r in rows]
    assert sum(n for _, n in keyed) == len(marked) == 2
    assert all(ts.on_end[~r] == -1 and not ts.live[~r] for r in marked)
    assert len(ts.calls) == 0


def test_a_stops_few_rows_keep_their_free_handles_for_reuse():
    """The few rows a callback's stop gives back (read one by one, no numpy call) lose
    their handles as a crowd's rows do: each handle nothing else holds goes to the spare
    list of its class (the next constructor takes it), one the caller holds or a weak
    reference names stays out, every ``views`` slot of a row given back is emptied, and
    the callback ids of the stops' tasks are let go."""
    import weakref

    from scuffle.anim.playback.tasks import ClipTask

    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(5)]
    p.callbacks.register("note", lambda inst: None)
    clips = [p.clip(h, CLIP, p.loop(h, IDLE), on_end=Callback("note", ()) if i in (1, 3) else None)
             for i, h in enumerate(hs)]
    for h, c in zip(hs, clips):
        p.change(h, c, 0.0)
    p.step(hs)
    p.flush()                                         # the changes' fades released
    rows = [c.trow for c in clips]
    free_ids = {id(clips[i]) for i in (0, 2, 4)}
    held = clips[1]                                   # the caller keeps this one
    ref = weakref.ref(clips[3])                       # and a weak reference names this one
    del clips, c
    ts = p.stores.tasks
    spare = ts.spare[ClipTask]
    spare.clear()
    few = []
    orig = Player._few_rows_back

    def spy(tasks, marked, keyed):
        few.append(list(marked))
        return orig(tasks, marked, keyed)
    Player._few_rows_back = staticmethod(spy)
    try:
        for _ in range(60):
            p.step(hs)
            p.flush()
            if hs[0].released == [CLIP]:
                break
    finally:
        Player._few_rows_back = staticmethod(orig)
    assert [h.released for h in hs] == [[CLIP]] * 5
    assert len(few) >= 3                              # the first call and a resume after each stop
    assert sum(r < 0 for part in few for r in part) == 2      # the two stops' rows, keyed
    assert {id(t) for t in spare} >= free_ids
    assert all(t is not held and t is not ref() for t in spare)
    assert all(ts.views[r] is None for r in rows)
    assert len(ts.calls) == 0
    assert held.trow == rows[1] and ref() is None   # the weakly named one let go, not kept


def test_a_resume_runs_on_the_inputs_the_rounds_first_call_checked():
    """FlushJob.resumes: inputs that are the very objects the job last found good but for
    an entry range inside the one checked (a resume after a callback's stop) need no
    check; another range, other objects, or no check yet, do."""
    from scuffle.anim.engine.jobs import FlushJob

    aset = demo_set()
    p = Player()
    h = CharacterInstance(aset, "h")
    p.change(h, p.loop(h, IDLE), 0.0)
    p.step([h])
    p.flush()
    ents = np.zeros((8, 2), np.int64)
    inputs = p._flush_inputs(ents, 2, 6)
    job = FlushJob()
    assert not job.resumes(inputs)                  # nothing checked yet
    job.validate(inputs)
    assert job.resumes(inputs)
    assert job.resumes(inputs._replace(lo=3)) and job.resumes(inputs._replace(lo=6))
    assert not job.resumes(inputs._replace(lo=1)) and not job.resumes(inputs._replace(hi=7))
    assert not job.resumes(p._flush_inputs(np.zeros((8, 2), np.int64), 2, 6))    # another entries array


class _FreeRowsChecked(Player):
    """A Player whose every flush ends with each free task row at the table's defaults
    (anim.engine.store.TASK_DEFAULTS, 0 for the columns it leaves out), every column: the
    kernel resets the rows it gives back (kernels_flush._reset_task), writing a column
    only where it holds another value."""

    checked = 0

    def flush(self, *a, **kw):
        out = super().flush(*a, **kw)
        from scuffle.anim.engine.store import TASK_DEFAULTS
        ts = self.stores.tasks
        free = np.flatnonzero(~ts.live)
        for name in ts._columns:
            col = getattr(ts, name)[free]
            want = TASK_DEFAULTS.get(name, 0)
            bad = np.flatnonzero((col != want).reshape(len(free), -1).any(axis=1))
            assert not len(bad), f"free task row {int(free[bad[0]])}: {name} = {col[bad[0]]}, not {want}"
        type(self).checked += len(free)
        return out


@pytest.mark.parametrize("seed", [3, 7])
def test_every_free_task_row_is_at_the_defaults_after_a_flush(seed):
    """Random worlds of every task type (gaits changing pair, fades, chains, pairs, queues,
    types 10, 11, 13, cuts, end and wrap callbacks): after every flush each free task
    row holds the table's defaults in every column, as a take expects (anim.engine
    kernels_write: a writer writes only what it sets), and the engine still equals the
    reference bit for bit."""
    import random

    from test_reference import GAIT, _gen_commands, random_set, run_world

    aset = random_set(seed)
    cmds = _gen_commands(random.Random(seed), list(range(12)), GAIT, 19, 40, 0.2, directions=50)
    _FreeRowsChecked.checked = 0
    eng = run_world(_FreeRowsChecked(), aset, cmds, 40, 19, GAIT, poses=False)
    assert _FreeRowsChecked.checked > 0
    from scuffle.anim.reference import Reference
    from scuffle.anim.data.options import PlayerOptions
    ref = run_world(Reference(PlayerOptions()), aset, cmds, 40, 19, GAIT, poses=False)
    assert eng[0] == ref[0] and eng[2] == ref[2] and eng[3] == ref[3]


def test_the_flush_finds_the_handles_of_the_rows_it_gives_back_by_their_flags():
    """The rows given back lose their handles (``views`` slot None, the spare kept) though
    the flush reads only the rows flagged as holding one (anim.playback.tasks.note_view):
    every handle in ``views`` is of a live row and flagged, in a crowd whose flushes give
    back hundreds of rows an update (handles made by the constructors and on read), and
    after ``views`` is replaced the flags follow the new list."""
    from scuffle.game.tools.bench import build_crowd

    g = build_crowd(300, "realistic")
    try:
        ts = g.player.stores.tasks
        given = 0
        for u in range(40):
            before = int(ts.in_use)
            g.step()
            given += max(0, before - int(ts.in_use))
            views = ts.views
            kept = ts.__dict__["m_viewed"]
            assert kept[0] is views
            flags = np.frombuffer(kept[1], np.bool_)
            held = [r for r, t in enumerate(views) if t is not None]
            assert held and all(ts.live[r] for r in held)
            assert flags[held].all()
            if u == 20:                                 # a new list: the flags made again from it
                ts.views = list(views)
                g.player.batch._tasks = ts.views
        assert given > 0
    finally:
        g.close()
