"""The step and the pose on threads (PlayerOptions.threads): the same bits whatever the count.

A crowd of an odd size, driven by random commands (gaits changing pair, chains, fades,
paired tasks, queues, types 10, 11 and 13, cuts), is run with 1, 2, 3 and 7 threads, chunks
of one human allowed (anim.engine.crowd.MIN_CHUNK lowered for the test, so a few dozen humans
split): every table dump, pose, bone transform, command outcome and callback (in order,
across humans) equals the one-thread run's, and the threaded run equals the reference
engine's.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from scuffle.anim.engine import crowd
from scuffle.anim.data.options import PlayerOptions
from scuffle.anim.playback.player import Player
from scuffle.anim.reference import Reference

from test_reference import GAIT, _diff, _gen_commands, random_set, run_world

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

HUMANS = 23
UPDATES = 36


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a single human allowed: a crowd of a few dozen splits over the threads."""
    monkeypatch.setattr(crowd, "MIN_CHUNK", 1)


def _case(seed: int):
    aset = random_set(seed)
    cmds = _gen_commands(random.Random(seed), list(range(12)), GAIT, HUMANS, UPDATES, 0.2, directions=50)
    return aset, cmds


class _Counting(Player):
    """A Player that notes, after each step, how many chunks its engine stepped on and the
    gait pair changes so far (to show the threaded path and its left-out humans ran)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.chunk_counts: list[int] = []

    def step(self, *a, **kw):
        out = super().step(*a, **kw)
        self.chunk_counts.append(self.batch.chunks_used)
        return out


def _run(threads: int, seed: int):
    aset, cmds = _case(seed)
    w = _Counting(PlayerOptions(threads=threads))
    return w, run_world(w, aset, cmds, UPDATES, HUMANS, GAIT, poses=True, bones=True)


def _same(a, b, what: str) -> None:
    states_a, poses_a, outcomes_a, log_a = a
    states_b, poses_b, outcomes_b, log_b = b
    for k, (x, y) in enumerate(zip(states_a, states_b)):
        assert x == y, f"{what}: state {k} differs\n{_diff(x, y)}"
    assert outcomes_a == outcomes_b, f"{what}: command outcomes differ"
    assert log_a == log_b, f"{what}: callbacks differ (or come in another order)"
    for u, (pa, pb) in enumerate(zip(poses_a, poses_b)):
        for i, (xa, xb) in enumerate(zip(pa, pb)):
            for j, (p, q) in enumerate(zip(xa, xb)):
                assert np.array_equal(p, q), f"{what}: update {u}, human {i}, pose part {j} differs"


@pytest.mark.parametrize("seed", [5, pytest.param(8, marks=[pytest.mark.slow, pytest.mark.bits])])
def test_every_thread_count_gives_the_same_bits(small_chunks, seed):
    """1, 2, 3 and 7 threads: the same tables, poses, bone transforms, outcomes and callbacks."""
    w1, one = _run(1, seed)
    assert set(w1.chunk_counts) == {1}
    changes = w1.batch.pair_changes
    assert changes > 0, "the case should change gait pairs (the left-out humans' path)"
    for n in (2, 3, 7):
        w, many = _run(n, seed)
        assert max(w.chunk_counts) == n, (n, w.chunk_counts)
        assert w.batch.pair_changes == changes
        _same(one, many, f"{n} threads")


def test_threads_equal_the_reference(small_chunks):
    """Seven threads against the plain-Python reference engine, bit for bit."""
    aset, cmds = _case(11)
    eng = run_world(Player(PlayerOptions(threads=7)), aset, cmds, UPDATES, HUMANS, GAIT, poses=True, bones=True)
    ref = run_world(Reference(PlayerOptions()), aset, cmds, UPDATES, HUMANS, GAIT, poses=True, bones=True)
    for k, (a, b) in enumerate(zip(eng[0], ref[0])):
        assert a == b, f"state {k}: engine on threads and reference differ\n{_diff(a, b)}"
    assert eng[2] == ref[2]
    assert eng[3] == ref[3]
    for u, (pa, pb) in enumerate(zip(eng[1], ref[1])):
        for i, (xa, xb) in enumerate(zip(pa, pb)):
            for j, (p, q) in enumerate(zip(xa, xb)):
                assert np.array_equal(p, q), f"update {u}, human {i}, pose part {j}"


def test_chunks_cover_the_crowd_in_order():
    """chunks: contiguous, in order, nearly equal, none below the minimum unless alone."""
    assert crowd.chunks(10, 3, 1) == [(0, 4), (4, 7), (7, 10)]
    assert crowd.chunks(5, 8, 1) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert crowd.chunks(700, 4, 256) == [(0, 350), (350, 700)]
    assert crowd.chunks(100, 4, 256) == [(0, 100)]
    assert crowd.chunks(0, 4, 1) == [(0, 0)]


def test_workers_run_every_job_and_raise_the_first_error():
    """Workers.run: each job runs once; the first failing job's exception (in job order) is
    raised after all ended; the pool keeps working after it."""
    pool = crowd.Workers(3)
    seen = [0, 0, 0]

    def job(j, fail=False):
        def run():
            seen[j] += 1
            if fail:
                raise KeyError(j)
        return run

    pool.run([job(0), job(1), job(2)])
    assert seen == [1, 1, 1]
    with pytest.raises(KeyError) as e:
        pool.run([job(0), job(1, True), job(2, True)])
    assert e.value.args == (1,)
    assert seen == [2, 2, 2]
    pool.run([job(0), job(1)])
    assert seen == [3, 3, 2]
    with pytest.raises(ValueError):
        pool.run([job(0)] * 4)
    pool.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", 100000])
def test_threads_option_is_checked(bad):
    """PlayerOptions.threads: a whole number 1-1024 or None; anything else names the field."""
    with pytest.raises(ValueError, match="PlayerOptions.threads"):
        PlayerOptions(threads=bad)
    assert PlayerOptions().threads is None
    assert PlayerOptions(threads=3).threads == 3


def test_default_threads_are_the_usable_cores():
    import os
    assert crowd.default_threads() == len(os.sched_getaffinity(0))


def test_the_thread_count_is_not_part_of_a_games_configuration():
    """A snapshot of a Game on 2 threads restores into one on 1 (no state depends on the
    count: the configuration digest leaves it out)."""
    from scuffle import Game, Snapshot, demo_set

    games = [Game(PlayerOptions(threads=t)) for t in (2, 1)]
    try:
        for g in games:
            g.add_human("a", demo_set())
            g.change("a", g.player.loop(g.instance("a"), "FIGHT_IDLE"))
            g.step()
        a, b = games
        assert a.config_digest() == b.config_digest()
        b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
        assert b.checksum() == a.checksum()
    finally:
        for g in games:
            g.close()


def test_a_steady_threaded_update_checks_only_the_left_out_humans(small_chunks, monkeypatch):
    """On threads, each chunk's views, buffers and rules are the very objects of the last
    update while nothing grew (anim.playback.batch._Part.step_span, pose_span, step_out):
    its step and pose jobs check nothing again, as one thread's call does; only the job of
    the humans left out (their rows change each update) is checked. The threaded run's
    bits stay the one-thread run's (test_every_thread_count_gives_the_same_bits)."""
    from scuffle.anim.engine import jobs as J
    from scuffle.game.tools.bench import build_crowd

    game = build_crowd(40, "realistic", threads=2)
    for _ in range(4):
        game.step()
    checked = {"step": 0, "pose": 0}
    for cls, key in ((J.StepJob, "step"), (J.PoseJob, "pose")):
        orig = cls._check_call

        def counted(self, inputs, _orig=orig, _key=key):
            checked[_key] += 1
            return _orig(self, inputs)
        monkeypatch.setattr(cls, "_check_call", counted)
    eng = game.player.batch
    for b in eng.balance:               # cuts that stay (a moved cut's new views are checked once)
        b.window = 10 ** 9
    pairs0 = eng.pair_changes
    updates = 12
    for _ in range(updates):
        game.step()
        assert eng.chunks_used == 2
    game.close()
    from scuffle.anim.playback import batch as B
    if B._CHUNK_CLOCK:                                  # each run's chunk times reach the balance
        assert all(b.runs >= updates and sum(b.acc) > 0.0 for b in eng.balance)
    assert checked["pose"] == 0
    assert 0 < checked["step"] <= updates               # the left-out humans' job, when there are some
    assert eng.pair_changes > pairs0


class _Outputs(Player):
    """A Player that notes, after each step and each flush, every human's events and
    released ids as plain values (read on every other update only, so the other updates
    clear outputs nobody made: the lazy rows)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.outputs: list = []
        self._n = 0

    def step(self, instances, *a, **kw):
        out = super().step(instances, *a, **kw)
        self._n += 1
        if self._n % 2:
            self.outputs.append([[(e.anim_id, e.event.frame, e.event.type, e.task.trow) for e in h.events]
                                 for h in instances])
        self._humans = instances
        return out

    def flush(self, *a, **kw):
        out = super().flush(*a, **kw)
        if self._n % 2 == 0 and getattr(self, "_humans", None):
            self.outputs.append([list(h.released) for h in self._humans])
        return out


def _random_spans(monkeypatch, seed: int) -> None:
    """Every step's and pose's chunks cut at random places (crowd.Balance.spans)."""
    rng = random.Random(seed)

    def spans(self, n, parts):
        self.n, self.parts = n, parts
        cuts = sorted(rng.sample(range(1, n), min(parts, n) - 1))
        bounds = [0, *cuts, n]
        self.spans_now = list(zip(bounds[:-1], bounds[1:]))
        self.acc, self.runs = [0.0] * len(self.spans_now), 0
        return self.spans_now
    monkeypatch.setattr(crowd.Balance, "spans", spans)


# every count with each way of forgetting last update's outputs: half of them in the default run
@pytest.mark.parametrize("threads, stamped", [
    pytest.param(2, True, id="2-stamp"), pytest.param(3, False, id="3-late clear"), pytest.param(7, True, id="7-stamp"),
    pytest.param(2, False, id="2-late clear", marks=[pytest.mark.slow, pytest.mark.bits]),
    pytest.param(3, True, id="3-stamp", marks=[pytest.mark.slow, pytest.mark.bits]),
    pytest.param(7, False, id="7-late clear", marks=[pytest.mark.slow, pytest.mark.bits])])
def test_chunks_cut_anywhere_give_the_same_bits(small_chunks, monkeypatch, threads, stamped):
    """The chunks cut at random places, new ones each step and pose (where crowd.Balance
    may move them): the same tables, poses, outcomes, callbacks, events and released ids
    as one thread. A step over every human of the engine forgets last update's outputs by
    moving the stamp on (no chunk clears anything); one that leaves a human of the engine
    out (here: counted as if one were seated beside them) has the calling thread clear them
    beside the other chunks (BatchEngine._clear_late); every human still begins its step
    with none."""
    aset, cmds = _case(5)
    w1 = _Outputs(PlayerOptions(threads=1))
    one = run_world(w1, aset, cmds, UPDATES, HUMANS, GAIT, poses=True, bones=True)
    _random_spans(monkeypatch, threads)
    from scuffle.anim.playback import batch as B
    monkeypatch.setattr(B, "_FEW", 2)        # the crowd's paths (a few dozen humans are "a few" otherwise)
    handed = []
    chunked = B.BatchEngine._step_chunks

    def step_chunks(self, *a, **kw):
        handed.append(bool(self._late_clear))
        return chunked(self, *a, **kw)
    monkeypatch.setattr(B.BatchEngine, "_step_chunks", step_chunks)
    if not stamped:
        cleared = B.BatchEngine._clear_noisy

        def clear_noisy(self, rows, late=False):
            self._n_seated += 1                  # one of the engine's humans as if not stepped now
            try:
                return cleared(self, rows, late=late)
            finally:
                self._n_seated -= 1
        monkeypatch.setattr(B.BatchEngine, "_clear_noisy", clear_noisy)
    w = _Outputs(PlayerOptions(threads=threads))
    many = run_world(w, aset, cmds, UPDATES, HUMANS, GAIT, poses=True, bones=True)
    if stamped:
        assert not any(handed), "a step over every human should move the stamp on, not clear"
    else:
        assert any(handed), "the first chunk's job should clear last update's outputs"
    _same(one, many, f"{threads} threads, random cuts")
    assert w.outputs == w1.outputs
    assert any(any(per) for per in w1.outputs[::2]), "the case should fire events"
    assert any(any(per) for per in w1.outputs[1::2]), "the case should release tasks"


def test_balance_moves_the_cut_toward_equal_time(monkeypatch):
    """crowd.Balance: a chunk whose humans cost twice as much gets fewer of them; the cut
    moves in steps of ``quantum``, keeps each chunk at MIN_CHUNK or more, and stays put
    when the slowest chunk would save less than ``gain``."""
    monkeypatch.setattr(crowd, "MIN_CHUNK", 256)
    b = crowd.Balance(window=2, quantum=32, gain=0.03)
    first = b.spans(10000, 2)
    assert first == [(0, 5000), (5000, 10000)]
    b.note(first, [1.0, 2.0])
    assert b.spans(10000, 2) is first            # one run of the window of two: not yet
    b.note(first, [1.0, 2.0])
    spans = b.spans(10000, 2)
    # cost 1 / 5000 a human below 5000, 2 / 5000 above: equal halves of 3 at 6250
    assert spans == [(0, 6240), (6240, 10000)] and b.moves == 1
    # at equal time the cut stays
    for _ in range(2):
        b.note(spans, [1.0, 1.0])
    assert b.spans(10000, 2) is spans
    # a difference under the gain: no move
    for _ in range(2):
        b.note(spans, [1.0, 1.05])
    assert b.spans(10000, 2) is spans and b.moves == 1
    # a chunk that costs everything: the other keeps MIN_CHUNK
    for _ in range(2):
        b.note(b.spans(10000, 2), [0.0, 5.0])
    assert b.spans(10000, 2)[0][1] <= 10000 - 256 and b.spans(10000, 2)[1][0] >= 256
    # another size or number of parts: cut by count again
    assert b.spans(9000, 3) == crowd.chunks(9000, 3)
    # a note of spans it did not give: ignored
    b.note([(0, 1), (1, 2), (2, 3)], [1.0, 9.0, 1.0])
    assert b.acc == [0.0, 0.0, 0.0]


def test_balance_cuts_given_by_hand_are_checked():
    """Balance.set_cuts: increasing cuts inside the crowd, one fewer than the parts."""
    b = crowd.Balance()
    b.spans(1000, 2)
    b.set_cuts([300])
    assert b.spans(1000, 2) == [(0, 300), (300, 1000)]
    for bad in ([0], [1000], [300, 400], []):
        with pytest.raises(ValueError, match="set_cuts"):
            b.set_cuts(bad)


class _Together(Player):
    """A Player whose ``pose`` hands back the Bones its last ``step_and_pose`` made, so the
    pose begun beside the step's Python is the one compared (its ``step`` is the Player's
    own: the engine may begin the pose)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._made = None

    def pose(self, instances):
        made, self._made = self._made, None
        return made if made is not None else super().pose(instances)


def _run_together(w: _Together, aset, cmds: list) -> tuple:
    """run_world (test_reference) with each update's step and pose made by one
    ``step_and_pose`` call, the pose complete when it returns."""
    from test_reference import Log, _apply, _poses_of, _state_of
    from scuffle.anim.engine.stack import CharacterInstance

    hs = [CharacterInstance(aset, f"h{i}") for i in range(HUMANS)]
    log: list = []
    w.callbacks.register("log", lambda inst, kind, tag: log.append((kind, tag, inst.name)))
    for h in hs:
        h.on_report = Log(log, "report", 0)
    states, pose_list, outcomes = [], [], []
    by_update: dict[int, list] = {}
    for cmd in cmds:
        by_update.setdefault(cmd[0], []).append(cmd)
    eng = w.batch
    for u in range(UPDATES):
        w._made = w.step_and_pose(hs)
        assert eng._begun is None and not (eng._workers is not None and eng._workers.busy), \
            "the pose must be complete when step_and_pose returns"
        pose_list.append(_poses_of(w, hs, True))
        w.flush()
        states.append((_state_of(w, hs), len(w.refused), len(log)))
        for (_, hi, fade, c) in by_update.get(u, []):
            outcomes.append((u, hi, c[0], _apply(w, hs, log, hi, fade, c, GAIT)))
        w.flush()
        states.append((_state_of(w, hs), len(log)))
    return states, pose_list, outcomes, log


@pytest.mark.parametrize("threads", [2, pytest.param(3, marks=[pytest.mark.slow, pytest.mark.bits]), 7])
def test_the_pose_begun_beside_the_step_gives_the_same_bits(small_chunks, monkeypatch, threads):
    """Player.step_and_pose (the animation system's call) begins the pose's other chunks
    as soon as the threaded step's kernels are through, beside the merge and the step's
    Python: the same tables, poses, bone transforms, outcomes and callbacks as one thread,
    with the cuts at random places; an update whose step has wrap callbacks to run poses
    after them (nothing begun)."""
    _, one = _run(1, 8)
    _random_spans(monkeypatch, threads + 100)
    aset, cmds = _case(8)
    w = _Together(PlayerOptions(threads=threads))
    wraps = []
    note = Player.note_wrap

    def counted(self, inst, task):
        wraps.append(self.batch.kernel_humans)
        return note(self, inst, task)
    monkeypatch.setattr(Player, "note_wrap", counted)
    many = _run_together(w, aset, cmds)
    _same(one, many, f"{threads} threads, the pose begun beside the step")
    begun = w.batch.poses_begun
    assert 0 < begun < UPDATES, (begun, "some updates begin the pose; those with wraps do not")
    assert wraps, "the case should have wrap callbacks (the path that poses after them)"


def test_a_step_that_raises_leaves_no_pose_under_way(small_chunks, monkeypatch):
    """An exception from the step after the pose was begun (the animation system's call):
    the worker threads' chunks are waited for before it reaches the caller, and the next
    update steps and poses as usual."""
    from scuffle.anim.playback import batch as B
    from scuffle.game.tools.bench import build_crowd

    game = build_crowd(41, "realistic", threads=2)
    eng = game.player.batch
    try:
        game.step()
        assert eng.poses_begun >= 1
        staged = B.BatchEngine._stage
        hit = [0]

        def failing(self, *a, **kw):
            if self._begun is not None:
                hit[0] += 1
                raise RuntimeError("a failure with the pose under way")
            return staged(self, *a, **kw)
        monkeypatch.setattr(B.BatchEngine, "_stage", failing)
        with pytest.raises(RuntimeError, match="under way"):
            for _ in range(60):
                game.step()
        assert hit[0] == 1
        assert eng._begun is None and not eng._workers.busy
        monkeypatch.setattr(B.BatchEngine, "_stage", staged)
        begun = eng.poses_begun
        game.step()
        assert eng.poses_begun == begun + 1 and eng._begun is None
    finally:
        game.close()


def test_workers_begin_then_wait():
    """Workers.begin hands the jobs after the first to the threads and returns; wait joins
    and raises the first worker's error; a second begin before the wait is refused."""
    import threading
    ran = []
    gate = threading.Event()

    def job(k):
        def run():
            gate.wait(5)
            ran.append(k)
            if k == 2:
                raise KeyError(k)
        return run
    pool = crowd.Workers(3)
    try:
        pool.begin([None, job(1), job(2)])
        assert pool.busy
        with pytest.raises(RuntimeError):
            pool.begin([None, job(3)])
        gate.set()
        with pytest.raises(KeyError):
            pool.wait()
        assert sorted(ran) == [1, 2] and not pool.busy
        pool.run([lambda: ran.append(0), job(1)])
        assert ran.count(1) == 2 and 0 in ran
    finally:
        pool.close()


def _game_run(threads: int, updates: int) -> list:
    """The realistic crowd (the systems' schedule, fight rules, commands, rows handlers) of
    an odd size on ``threads``: after each update its poses and bone transforms as bits,
    the events the update fired and the crowd's digest."""
    from scuffle.game.tools.bench import build_crowd, crowd_checksum

    game = build_crowd(67, "realistic", threads=threads)
    eng = game.player.batch
    out = []
    try:
        for _ in range(updates):
            game.step()
            # a read between updates: the pose is complete (nothing under way on a worker)
            assert eng._begun is None and not (eng._workers is not None and eng._workers.busy)
            ctx = game.ctx
            fired = [(int(e), [(f.anim_id, f.event.frame, int(f.event.type)) for f in inst.events])
                     for e, _, inst in ctx.fired] if ctx.fired else []
            out.append(([a.view(np.uint32).copy() if a.dtype == np.float32 else a.copy()
                         for a in (ctx.poses.vel, ctx.poses.root, ctx.poses.rot, ctx.poses.tag,
                                   ctx.bone_pos, ctx.bone_rot)],
                        fired, crowd_checksum(game)))
        import esper
        from scuffle.systems.motion import StateUpdate
        with game.active():
            motion = esper.get_processor(StateUpdate)
        out.append((eng.poses_begun, len(motion._chunk_jobs)))
    finally:
        game.close()
    return out


def test_the_animation_system_on_threads_gives_the_same_bits(small_chunks):
    """Through the systems (AnimationStep's Player.step_and_pose: the pose begun beside the
    step's Python; StateUpdate's root motion in chunks of the body rows) a realistic crowd
    of an odd size on 2, 3 and 7 threads poses, fires, moves and ends each update as on one
    thread, bit for bit, and no pose is under way between updates."""
    updates = 40
    one = _game_run(1, updates)
    assert one[-1] == (0, 0)
    assert any(f for _, f, _ in one[:-1]), "the crowd should fire events"
    for n in (2, 3, 7):
        many = _game_run(n, updates)
        assert many[-1][0] > 0, "the pose should have been begun beside the step"
        assert many[-1][1] == n, "root motion should have run in chunks on the threads"
        for u, (a, b) in enumerate(zip(one[:-1], many[:-1])):
            for j, (x, y) in enumerate(zip(a[0], b[0])):
                assert np.array_equal(x, y), f"{n} threads: update {u}, pose array {j} differs"
            assert a[1] == b[1], f"{n} threads: update {u}: the fired events differ"
            assert a[2] == b[2], f"{n} threads: update {u}: the crowd's state differs"


def test_a_wrapped_step_is_called_and_nothing_is_begun(small_chunks):
    """A step wrapped on the instance (a timer, as scuffle bench's stage pass) or
    overridden runs, and the pose then waits for it: nothing is begun beside code that is
    not the engine's (nor with a queued-default test, game code asked at the pose)."""
    aset, _ = _case(5)
    from scuffle.anim.engine.stack import CharacterInstance
    w = Player(PlayerOptions(threads=2))
    hs = [CharacterInstance(aset, f"h{i}") for i in range(HUMANS)]
    w.step_and_pose(hs)
    assert w.batch.poses_begun == 1
    calls = []
    step = w.step

    def timed(*a, **kw):
        calls.append(1)
        return step(*a, **kw)
    w.step = timed                                  # type: ignore[method-assign]
    w.step_and_pose(hs)
    assert calls == [1] and w.batch.poses_begun == 1
    c = _Counting(PlayerOptions(threads=2))
    c.step_and_pose([CharacterInstance(aset, f"c{i}") for i in range(HUMANS)])
    assert c.chunk_counts == [2] and c.batch.poses_begun == 0
    # PlayerOptions.queued_default's test is game code, asked when the pose is made
    q = Player(PlayerOptions(threads=2, queued_default=lambda inst: False))
    q.step_and_pose([CharacterInstance(aset, f"q{i}") for i in range(HUMANS)])
    assert q.batch.chunks_used == 2 and q.batch.poses_begun == 0
