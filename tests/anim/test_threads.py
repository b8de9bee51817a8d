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


@pytest.mark.parametrize("seed", [5, 8])
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
    pairs0 = eng.pair_changes
    updates = 12
    for _ in range(updates):
        game.step()
        assert eng.chunks_used == 2
    game.close()
    assert checked["pose"] == 0
    assert 0 < checked["step"] <= updates               # the left-out humans' job, when there are some
    assert eng.pair_changes > pairs0
