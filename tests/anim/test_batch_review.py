"""Review of the compiled engine: scenarios the random crowds of
test_batch.py do not reach, each run on the engine and on the reference model of the
spec (scuffle.anim.reference, the same commands) and compared update by update: the
dumps (anim.reference.dump: times, frames, events, ids, held bits, released ids, pool)
and the poses equal bit for bit. Each test keeps a scenario that shows the fault it
guards against."""
from __future__ import annotations

import pytest

from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.tasks import LoopTask, TaskType
from scuffle.game.fighters.moveset import demo_set

from test_batch import GAIT, _poses, _set, _state, same_poses, same_states, worlds

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _both(setup, updates=60, humans=2, seed=3, between=None, **options):
    """Run ``setup(w, hs)`` then ``updates`` updates on the engine and on the reference;
    ``between(w, hs, u, extra)`` after each flush. Returns [(states, poses, w, hs, extra)],
    the engine's then the reference's."""
    aset = _set(seed)
    out = []
    for w, cls in worlds(pool_size=4000, **options):
        hs = [cls(aset, f"h{i}") for i in range(humans)]
        extra = setup(w, hs)
        w.flush()
        states, poses = [], []
        for u in range(updates):
            w.step(hs)
            poses.append(_poses(w, hs))
            w.flush()
            states.append(_state(w, hs))
            if between is not None:
                between(w, hs, u, extra)
                w.flush()
        out.append((states, poses, w, hs, extra))
    return out


def _same(out, check_pool=True):
    (sa, qa, pa, ha, _), (sb, qb, pb, hb, _) = out
    same_states(sa, sb)
    same_poses(qa, qb)
    if check_pool:
        assert pa.pool.in_use == pa.tasks_out(ha)
        assert pb.pool.in_use == pb.tasks_out(hb)


def _runs_equal(runs) -> None:
    """Two runs' (states, poses) equal (see test_batch.same_states / same_poses)."""
    (sa, qa), (sb, qb) = runs
    same_states(sa, sb)
    same_poses(qa, qb)


def test_on_wrap_set_after_the_first_step_is_called():
    """The fault guarded against: LoopTask.on_wrap set between updates writes the task's ``callback`` column but
    does not mark the human, so its row keeps fast=True and the kernel (which never reads
    ``callback``) wraps the loop without calling it."""
    def setup(p, hs):
        calls = []
        for h in hs:
            p.change(h, p.loop(h, 2), 0.0)        # clip 2: a short clip, wraps often
        return calls

    def between(p, hs, u, calls):
        if u == 2:
            for h in hs:
                h.stack[0].on_wrap = lambda inst, calls=calls: calls.append(inst.name)

    out = _both(setup, updates=80, between=between)
    _same(out)
    (*_, calls_a), (*_, calls_b) = out
    assert calls_b, "the scenario must wrap"
    assert calls_a == calls_b


def test_gait_on_wrap_set_after_the_first_step_is_called():
    """The fault guarded against (same cause): GaitTask.on_wrap set later is never called on the compiled path."""
    def setup(p, hs):
        for h in hs:
            p.change(h, p.gait(h, GAIT, target=2.0, value=2.0), 0.0)
        return []

    def between(p, hs, u, calls):
        if u == 2:
            for h in hs:
                h.stack[0].on_wrap = lambda inst, calls=calls: calls.append(inst.name)

    out = _both(setup, updates=120, between=between)
    _same(out)
    (*_, calls_a), (*_, calls_b) = out
    assert calls_b
    assert calls_a == calls_b


def test_a_task_made_outside_the_world_is_refused_not_stepped_by_the_scalar_path():
    """A ClipTask.next set between updates to a task outside the world's task table (a
    private one, nxt -1) cannot send its human off the compiled step: a task's rows are
    a world's or it is not made (ValueError: tasks are made by a
    Player), and a world's task never links to or stacks another world's task, nor takes
    another table's cursor (ForeignTask, a ValueError, nothing changed)."""
    from scuffle.anim.engine.store import task_table
    from scuffle.anim.playback.tasks import ForeignTask

    aset = demo_set()
    p, other = Player(), Player()
    h = CharacterInstance(aset, "h")
    p.change(h, p.clip(h, 15), 0.0)
    p.flush()
    clip = h.stack[0]
    before_rows = (p.stores.tasks.in_use, p.stores.cursors.in_use)
    for tstore in (None, task_table(4)):                    # no world's table: not made at all
        with pytest.raises(ValueError, match="LoopTask: a task is made by a world's Player"):
            LoopTask(p.cursor(h.anim_set, 388), 1.0, tstore=tstore)
    theirs = other.loop(CharacterInstance(aset, "x"), 388)
    their_cursor = other.cursor(aset, 388)
    with pytest.raises(ForeignTask, match="Cursor .anim id 388. was not made by this world's Player"):
        LoopTask(their_cursor, 1.0, tstore=p.stores.tasks)      # another world's cursor
    assert (p.stores.tasks.in_use, p.stores.cursors.in_use) == (before_rows[0], before_rows[1] + 2)
    before = (list(h.stack), clip.next, p.pool.in_use, int(p.stores.tasks.nxt[clip.trow]))
    with pytest.raises(ForeignTask, match="ClipTask.next: LoopTask was not made by this world's Player"):
        clip.next = theirs
    for act in (lambda t: p.push(h, t), lambda t: p.insert_bottom(h, t), lambda t: p.enqueue(h, t),
                lambda t: p.change(h, t, 0.2)):
        with pytest.raises(ForeignTask, match="was not made by this world's Player"):
            act(theirs)
    assert issubclass(ForeignTask, ValueError)
    assert (list(h.stack), clip.next, p.pool.in_use, int(p.stores.tasks.nxt[clip.trow])) == before
    assert h.queue == []
    p.step([h])                                # the kernel steps the human as before
    p.flush()
    assert p.batch.kernel_humans == 1
    assert h.stack == [clip] and clip.cursors()[0].time > 0.0


def test_next_set_after_the_first_step_to_a_mix_task():
    """The fault guarded against: ClipTask.next set later to a world task of a type the kernel did
    not run then (type 10 MIX): the human stayed fast, the kernel handed over to it and then
    never advanced it (``else: break``). The kernel now runs type 10: the same steps."""
    def setup(p, hs):
        for h in hs:
            p.change(h, p.clip(h, 2), 0.0)
        return None

    def between(p, hs, u, extra):
        if u == 1:
            for h in hs:
                h.stack[0].next = p.mix(h, 4, 5, weight=0.3)

    _same(_both(setup, updates=90, between=between))


def test_next_set_after_the_first_step_to_a_world_loop():
    """Passes (covers a risky path): next set later to a world task; the row link is
    written by the setter, the kernel sees it without a mark."""
    def setup(p, hs):
        for h in hs:
            p.change(h, p.clip(h, 2, blend=0.05), 0.0)
        return None

    def between(p, hs, u, extra):
        if u == 1:
            for h in hs:
                h.stack[0].next = p.loop(h, 4)

    _same(_both(setup, updates=90, between=between))


def test_a_human_twice_in_the_instance_list():
    """The fault guarded against: a human listed twice is stepped twice, and the scalar step
    (as the reference's step_one does) cleared its events at its second step while the
    compiled one kept the first step's event rows when the second step fired none
    (``_event_rows`` set per status row, never reset)."""
    aset = _set(4)
    runs = []
    for p, cls in worlds(pool_size=4000):
        hs = [cls(aset, f"h{i}") for i in range(3)]
        p.change(hs[0], p.chain(hs[0], [1, 2, 3], blend=0.1, held=0x3), 0.2)
        p.change(hs[1], p.gait(hs[1], GAIT, target=3.5, value=0.2, flags=0x2C1), 0.0)
        p.change(hs[2], p.loop(hs[2], 5), 0.0)
        p.flush()
        lst = [hs[0], hs[1], hs[0], hs[2], hs[1]]
        states, poses = [], []
        for u in range(120):
            p.step(lst)
            poses.append(_poses(p, lst))
            p.flush()
            states.append(_state(p, hs))
        runs.append((states, poses))
    _runs_equal(runs)
    sa = runs[0][0]
    assert all(st[0] == st[1] for st in sa)         # the engine's pool: every task out is held
    fired = [bool(st[2][0][3]) for st in sa]        # the listed-twice human's events, per update
    assert any(fired) and not all(fired)


def test_a_newcomer_listed_again_in_a_crowd_is_seen_by_its_row():
    """Humans appended to a list of more than a few (a crowd's joins) take the fast way
    unless one of them is listed already: then the rows are made again and the engine
    knows a human is listed twice; a few newcomers and many are checked alike."""
    from scuffle.anim.playback.batch import _FEW

    aset = _set(4)
    p = Player(PlayerOptions(pool_size=4000))
    hs = [CharacterInstance(aset, f"h{i}") for i in range(2 * _FEW + 4)]
    for h in hs:
        p.change(h, p.loop(h, 5), 0.0)
    p.flush()
    eng = p.batch
    base = hs[:-4]
    rows = eng._rows_of(base).tolist()
    got = eng._rows_of(base + [hs[-4]])                # one newcomer: the fast way
    assert got.tolist() == rows + [hs[-4].slot] and not eng._twice
    got = eng._rows_of(base + [hs[-4], hs[3]])         # a listed human again: made again
    assert got.tolist() == rows + [hs[-4].slot, hs[3].slot] and eng._twice
    eng._rows_of(base)
    many = base + [hs[i] for i in range(_FEW + 1)]     # more newcomers than a few, one listed
    assert eng._rows_of(many).tolist() == [h.slot for h in many] and eng._twice
    eng._rows_of(base)
    assert eng._rows_of(hs).tolist() == [h.slot for h in hs] and not eng._twice


def test_forget_and_re_add_a_human():
    """Humans cut, flushed and forgotten (their rows back: on the engine their records are
    stale), others taking their rows, and new humans coming back under the same names
    (new instances, new records, new rows): the engine equals the reference and nothing
    leaks."""
    aset = _set(5)
    runs = []
    for p, cls in worlds(pool_size=4000):
        hs = [cls(aset, f"h{i}") for i in range(4)]
        for i, h in enumerate(hs):
            p.change(h, p.chain(h, [i, i + 1, i + 2], blend=0.1, held=0x1), 0.0)
        p.flush()
        states, poses = [], []
        for u in range(150):
            live = [h for k, h in enumerate(hs) if not (40 <= u < 70 and k % 2)]
            p.step(live)
            poses.append(_poses(p, live))
            p.flush()
            if u == 39:
                for h in hs[1::2]:
                    h.record.flags |= 0x800
                    p.cut(h)
                p.flush()
                for h in hs[1::2]:
                    p.forget(h)
                if isinstance(p, Player):
                    assert not any(h.record.alive() for h in hs[1::2])
                extra = cls(aset, "x")                  # takes a freed row
                p.change(extra, p.loop(extra, 3), 0.0)
                p.step(hs[::2] + [extra])
                poses.append(_poses(p, hs[::2] + [extra]))
                p.flush()
                p.cut(extra)
                p.flush()
                p.forget(extra)
            if u == 69:
                for k in (1, 3):
                    hs[k] = cls(aset, f"h{k}")          # back as new humans: new records and rows
                for h in hs[1::2]:
                    p.change(h, p.gait(h, GAIT, target=1.0, value=3.0), 0.3)
                p.flush()
            states.append(_state(p, [h for k, h in enumerate(hs) if not (39 <= u < 69 and k % 2)]))
        runs.append((states, poses))
    _runs_equal(runs)
    assert all(st[0] == st[1] for st in runs[0][0])   # the engine's pool: every task held


def test_one_task_has_one_place():
    """A task put on two stacks (game code re-using a task) was once advanced twice an
    update and, once it ended, left on the second stack after it went back to the pool
    (the original's free list would hand it out again: a use after free). A task now has
    one place, a stack, a queue or another task's next (TaskInUse, a ValueError, nothing
    changed), and gets it back when it leaves that place without ending (a queued start,
    a next task replaced)."""
    from scuffle.anim.playback.tasks import TaskInUse

    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(2)]
    t = p.loop(hs[0], 388)
    p.change(hs[0], t, 0.0)
    chain = p.chain(hs[0], [15, 388], blend=0.1)
    nxt = chain.next
    state = lambda: ([list(h.stack) for h in hs], [list(h.queue) for h in hs], p.pool.in_use)   # noqa: E731
    before = state()
    for act in (lambda: p.insert_bottom(hs[1], t), lambda: p.push(hs[1], t), lambda: p.enqueue(hs[1], t),
                lambda: p.change(hs[1], t, 0.2), lambda: p.push(hs[1], nxt),
                lambda: setattr(p.clip(hs[1], 15), "next", t)):
        with pytest.raises(TaskInUse, match="already has a place"):
            act()
    assert issubclass(TaskInUse, ValueError)
    assert state()[:2] == before[:2] and state()[2] == before[2] + 1     # + the clip made by the last act
    # a next task replaced is free again; a queued task's place moves to the stack
    spare = p.loop(hs[1], 388)
    chain.next = spare
    p.push(hs[1], nxt)
    q = p.loop(hs[1], 389)
    p.enqueue(hs[1], q)
    p.step(hs)
    p.flush()
    assert q in hs[1].stack and hs[1].queue == []
    with pytest.raises(TaskInUse):
        p.push(hs[0], q)


@pytest.mark.slow
def test_chain_longer_than_the_walk_scratch():
    """A chain of 80 short clips (the kernel's walk scratch holds 64) with blend windows:
    hand-overs, pool accounting and events agree."""
    def setup(p, hs):
        for h in hs:
            p.change(h, p.chain(h, [k % 12 for k in range(80)], blend=0.02, held=0x3), 0.1)
        return None

    _same(_both(setup, updates=400))


def test_chain_longer_than_the_walk_scratch_cut_midway():
    """The same chain cut after a few hand-overs: all 60-odd next tasks go back."""
    def setup(p, hs):
        for h in hs:
            p.change(h, p.chain(h, [(k * 5) % 12 for k in range(80)], blend=0.0), 0.0)
        return None

    def between(p, hs, u, extra):
        if u == 30:
            for h in hs:
                p.cut(h)

    _same(_both(setup, updates=60, between=between))


def test_step_of_one_group_keeps_the_other_groups_events_and_released():
    """The fault guarded against: BatchEngine.step clears the events and released ids of every human in
    ``_noisy`` (those touched since the last step), also those not in this step's list;
    the scalar path clears only the humans it steps (step_one). A game stepping its crowd
    in two groups (or a spawned human on its own) loses the other group's released ids
    / events between the flush and their reading. The reference clears, as the scalar
    step did, only the humans it steps."""
    aset = _set(6)
    runs = []
    for p, cls in worlds(pool_size=4000):
        a = [cls(aset, f"a{i}") for i in range(3)]
        b = [cls(aset, f"b{i}") for i in range(3)]
        for h in a + b:
            p.change(h, p.chain(h, [2, 3], blend=0.0), 0.1)
        p.flush()
        states = []
        for u in range(60):
            p.step(a)
            p.flush()
            p.step(b)                    # must not touch group a's events / released
            p.flush()
            states.append(_state(p, a + b))
        runs.append(states)
    same_states(*runs)
    assert any(h[3] or h[4] for st in runs[0] for h in st[2][:3])   # group a kept events / released ids


def test_gait_spares_go_back_with_the_task():
    """Gaits that had spare cursors made (pair changes in the kernel, set_value far from
    the pair, retargets back before the spares were used), then cut: no cursor, gait or
    task row stays in use in the engine, the reference's pool empties too (covers a risky path)."""
    def setup(p, hs):
        for i, h in enumerate(hs):
            p.change(h, p.gait(h, GAIT, target=(i % 5) * 0.9, value=((i + 2) % 5) * 0.9, flags=0x2C1), 0.0)
        return None

    def between(p, hs, u, extra):
        for i, h in enumerate(hs):
            g = [t for t in h.stack if t.type == TaskType.GAIT]
            if not g:
                continue
            if u % 7 == 3:
                g[0].set_target(((u + i) * 1.7) % 4.0)
            if u % 11 == 5 and i % 2:
                g[0].set_value(4.0 if g[0].value < 2 else 0.0)
        if u == 70:
            for h in hs:
                p.cut(h)

    out = _both(setup, updates=80, humans=10, between=between)
    _same(out)
    (_, _, pa, ha, _), (_, _, pb, hb, _) = out
    assert pa.batch.pair_changes > 5
    for name in ("cursors", "gaits", "tasks", "fades"):
        assert getattr(pa.stores, name).in_use == 0, name
    assert pa.pool.in_use == pb.pool.in_use == 0


@pytest.mark.parametrize("options", [dict(cleanup_above=3, early_finish_above=2),
                                     dict(cleanup_above=4, early_finish_above=1, events="newest",
                                          end_zero_overshoot=True),
                                     dict(blend_window="kept", cleanup_above=5, end_zero_overshoot=True)],
                         ids=["small-limits", "small-newest-zero", "kept-zero"])
def test_small_stack_limits_and_options(options):
    """Covers risky paths (passes): the clean-up and early-finish limits small, so fades
    are completed by depth in the kernel, with the other readings."""
    from test_batch import _check_pair, _run_pair
    _check_pair(_run_pair(8, humans=10, updates=150, rate_of_commands=0.15, **options))


def _game_command(p, h, rng):
    """What game code does between updates besides changes: held bits, flags, enqueue,
    insert_bottom, cut."""
    r = rng.random()
    ids = list(range(12))
    if r < 0.2 and h.stack:
        t = rng.choice(h.stack)
        t.held = rng.choice([0, 0x1, 0x3, 0x7, 0x100])
    elif r < 0.35 and h.stack:
        t = rng.choice(h.stack)
        t.set_flags(rng.choice([0, 0x1, 0x10, 0x2C1, 0x81]))
    elif r < 0.5:
        p.enqueue(h, p.chain(h, [rng.choice(ids), rng.choice(ids)], blend=0.1))
    elif r < 0.65:
        try:
            p.insert_bottom(h, p.loop(h, rng.choice(ids), held=rng.choice([0, 1])))
        except Exception:
            pass
    elif r < 0.7:
        p.cut(h)
    else:
        p.change(h, p.chain(h, [rng.choice(ids) for _ in range(3)], blend=rng.choice([0.0, 0.2]),
                            held=rng.choice([0, 0x3])), rng.choice([0.0, 0.2]))


@pytest.mark.parametrize("seed", [pytest.param(1, marks=[pytest.mark.slow, pytest.mark.bits]), 2, pytest.param(3, marks=[pytest.mark.slow, pytest.mark.bits])])
def test_game_code_between_updates(seed):
    """Covers risky paths (passes): held bits and flags changed by game code, enqueue,
    insert_bottom and cut between updates (rows dirty when the next step runs)."""
    import random
    def setup(p, hs):
        for h in hs:
            p.change(h, p.chain(h, [1, 2, 3], blend=0.1, held=0x3), 0.1)
        return random.Random(seed)

    def between(p, hs, u, rng):
        for h in hs:
            if rng.random() < 0.2:
                try:
                    _game_command(p, h, rng)
                except Exception as exc:          # limits: both paths raise alike
                    if "full" not in str(exc) and "exhausted" not in str(exc):
                        raise

    _same(_both(setup, updates=150, humans=8, seed=seed, between=between))


@pytest.mark.slow
def test_event_buffer_grows_mid_step_with_pair_changes():
    """Covers a risky path (passes): 200 humans on clips with many events (the step's
    buffers start at 256 rows: the kernel stops and goes on from counts[COUNT_STOPPED]),
    half of them gaits changing pairs (the second kernel run for the spares)."""
    clips, ranges = {}, {}
    for i in range(12):
        frames = 20 + i
        clips[i] = author_clip(f"c{i}", frames, rotations={3: [(0, (0, 0, 0, 1)), (frames, (0.1, 0, 0, 0.995))]},
                               events=[make_event(f, 11, word=f) for f in range(0, frames + 1)]
                               + [make_event(3, 0x2C), make_event(9, 0x2D), make_event(15, 0x48)])
        ranges[i] = author_range(flags=0x1000)
    for k, i in enumerate(GAIT[:4]):
        frames = (35, 24, 21, 18)[k]
        clips[i] = author_clip(f"g{k}", frames, rotations={3: [(0, (0, 0, 0, 1)), (frames, (0.1, 0, 0, 0.995))]},
                               events=[make_event(f, 11, word=100 + f) for f in range(0, frames + 1)])
        ranges[i] = author_range(flags=0x1000)
    aset = AnimSet.build(clips, ranges)
    runs = []
    for p, cls in worlds(pool_size=4000):
        hs = [cls(aset, f"h{i}") for i in range(200)]
        for i, h in enumerate(hs):
            if i % 2:
                p.change(h, p.gait(h, GAIT, target=(i % 5) * 0.95, value=((i + 2) % 5) * 0.95, flags=0x2C1), 0.0)
            else:
                p.change(h, p.chain(h, [i % 12, (i + 1) % 12, (i + 5) % 12], blend=0.1, held=0x3), 0.2)
        p.flush()
        states = []
        for u in range(50):
            p.step(hs, dt=0.1)               # several frames an update: many events each
            p.flush()
            states.append(_state(p, hs))
            if u % 9 == 4:
                for i, h in enumerate(hs[1::2]):
                    h.stack[0].set_target(((u + i) * 1.3) % 4.0)
        runs.append((states, p, hs))
    same_states(runs[0][0], runs[1][0])
    pa = runs[0][1]
    assert len(pa.batch._ev_out) > 256 and pa.batch.pair_changes > 10
    assert pa.pool.in_use == pa.tasks_out(runs[0][2])


def _no_wrap(inst) -> None:
    """A wrap callback that does nothing (its human once took the scalar step)."""


@pytest.mark.parametrize("how", ["argument", "option"])
def test_a_dt_that_is_not_a_float32(how):
    """The fault guarded against: a dt that is not a float32 value (0.1, 1/30 unrounded) was
    rounded to float32 by the compiled step (``dt32`` in BatchEngine._run_step) but used
    as a double by the scalar one (F.mul(dt, rate)), and by the compiled path's own slow
    humans (a loop with a wrap callback, kept here): times differed in the last bit.
    Player.step rounds dt once, as the reference does (F.f32 of dt, "Playback rate")."""
    def setup(p, hs):
        p.change(hs[0], p.chain(hs[0], [1, 2, 3], blend=0.1), 0.2)
        p.change(hs[1], p.gait(hs[1], GAIT, target=3.0, value=0.5, flags=0x2C1), 0.0)
        p.change(hs[2], p.mix(hs[2], 4, 5, weight=0.3), 0.0)        # a type 10 (compiled)
        p.change(hs[3], p.loop(hs[3], 4, on_wrap=_no_wrap), 0.0)    # once a slow human (a wrap callback)
        return None

    aset = _set(3)
    runs = []
    opts = dict(dt=0.1) if how == "option" else {}
    for p, cls in worlds(pool_size=4000, **opts):
        hs = [cls(aset, f"h{i}") for i in range(4)]
        setup(p, hs)
        p.flush()
        states, poses = [], []
        for u in range(40):
            p.step(hs, dt=(1.0 / 30.0 if how == "argument" else None))
            poses.append(_poses(p, hs))
            p.flush()
            states.append(_state(p, hs))
        runs.append((states, poses))
    _runs_equal(runs)
    assert any(h[0][0][5][1] > 0 for h in runs[0][0][-1][2][3:])   # the loop wrapped


def test_more_than_64_nested_blend_windows_pose():
    """The fault guarded against: a chain of 70 clips of non-decreasing durations under
    blend=100 s nests 70 blend windows at once. The reference blends innermost first (only
    the innermost 6 weights act on the 7 poses the stack holds); a pose_stacks keeping only
    the first 64 window weights (``weights`` scratch, ``nw < weights.shape[0]``) blends
    with the weights of windows 58-63 instead, and the pose differs (refused poses agree).
    pose_stacks keeps the weights as a ring (the innermost 64), so it blends as the
    reference model does, bit for bit (the spec's reading)."""
    aset = _set(3)
    runs = []
    for p, cls in worlds(pool_size=4000):
        h = cls(aset, "h0")
        p.change(h, p.chain(h, [(7, 9, 10)[k % 3] for k in range(60)] + [0, 8, 4, 6, 11, 3, 2, 5, 5, 5],
                            blend=100.0), 0.0)
        p.flush()
        poses, refused = [], []
        for u in range(2):
            p.step([h])
            poses.append(_poses(p, [h]))
            refused.append(h.poses_refused)
            p.flush()
        runs.append((poses, refused, [_state(p, [h])]))
    (pa, ra, sa), (pb, rb, sb) = runs
    same_states(sa, sb)
    assert ra == rb and ra[0] > 60
    same_poses(pa, pb)


def test_events_read_after_the_flush_and_new_tasks():
    """Lazy events (CharacterInstance._event_rows) read after the flush released the
    tasks that fired them (a fade of 0 s completing in the same step) and new tasks took
    every free row (the released rows are taken last): the FiredEvent's anim id and task
    must be those of the step, as the reference makes them. The fault guarded against:
    BatchEngine.fired read ``cursors.anim[cr]`` and ``_tasks[tr]`` at reading time (the
    new task's id, None or the new task); Player.flush makes a human's lazy events
    before it releases a deferred task that fired one of them (BatchEngine.fired_by)."""
    clips, ranges = {}, {}
    for i in range(12):
        clips[i] = author_clip(f"c{i}", 6, rotations={3: [(0, (0, 0, 0, 1))]},
                               events=[make_event(f, 11, word=i * 10 + f) for f in range(7)])
        ranges[i] = author_range(flags=0x1000)
    aset = AnimSet.build(clips, ranges)
    logs, taken = [], []
    for p, cls in worlds(pool_size=100000):
        hs = [cls(aset, f"h{i}") for i in range(4)]
        for i, h in enumerate(hs):
            p.change(h, p.loop(h, i), 0.0)
        p.flush()
        log = []
        for u in range(12):
            for i, h in enumerate(hs):
                p.change(h, p.loop(h, (u + i + 1) % 12), 0.0)   # the old loop fires, then goes
            p.flush()
            p.step(hs)
            p.flush()                            # the old loops go back: rows given back
            if isinstance(p, Player):
                st = p.stores
                taken.append(min(int(st.tasks.n_free[0]), int(st.cursors.n_free[0])))
            made = [p.loop(hs[0], (u + k) % 12) for k in range(taken[u])]   # every free row taken
            log.append([[(fe.anim_id, fe.event.frame, None if fe.task is None else (int(fe.task.type), fe.task.anim_id()))
                         for fe in h.events] for h in hs])
            for t in made:
                p.discard(t)
        logs.append(log)
    for u, (a, b) in enumerate(zip(*logs)):
        assert a == b, u
    assert sum(len(x) for u in logs[1] for x in u) > 10
    assert min(taken) > 0                        # free rows were taken every update


def test_set_flags_reaches_the_cursors_alike():
    """+0xcc (0x001058f0) between updates: the task flags' cursor bits (0x1 no velocity,
    0x2 no turn, 0x10 muted: "Animation tasks" L226-231) go to every cursor of a clip
    task, and to a gait's leader, its follower staying muted (L285); the engine and the
    reference (whose tasks gained set_flags for this) agree, before and after the next
    step."""
    aset = _set(3)
    dumps = []
    for w, cls in worlds():
        hs = [cls(aset, "a"), cls(aset, "b")]
        w.change(hs[0], w.chain(hs[0], [2, 4], blend=0.1), 0.0)
        w.change(hs[1], w.gait(hs[1], GAIT, target=1.5, value=1.5), 0.0)
        w.flush()
        w.update(hs)
        clip, gait = hs[0].stack[0], hs[1].stack[0]
        clip.set_flags(0x13)
        gait.set_flags(0x2C1 | 0x2)
        got = [[int(c.flags) for c in clip.cursors()], sorted(int(c.flags) for c in gait.cursors())]
        assert got == [[0x13], [0x3, 0x13]], got
        before = _state(w, hs)
        w.update(hs)
        dumps.append((before, _state(w, hs)))
    assert dumps[0] == dumps[1]
