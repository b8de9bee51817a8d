"""Helpers of the hardening tests: the CLI in a subprocess, a hang guard, the fuzz budgets,
a synthetic move set, and a snapshot of a player's state for the "nothing changed" checks.

Nothing here comes from the disc: every clip is authored (anim.data.clip.author_clip).
"""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from budget import examples

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.playback.player import Player
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.engine.stack import CharacterInstance

__all__ = ["REPO", "run_game", "Hang", "no_hang", "QUICK_EXAMPLES", "LONG_EXAMPLES", "fuzz_pair",
           "IDLE", "A", "B", "LONG", "SHORT", "GAIT", "synthetic_set", "snapshot", "keeps_playing"]

REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- the CLI


def run_game(*args, cwd=None, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``scuffle ARGS`` in a subprocess (text output captured); ``env`` adds variables."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "scuffle", *map(str, args)], cwd=cwd or REPO, env=e,
                          capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------- hangs


class Hang(AssertionError):
    """A call ran past its time limit (a loader that hangs fails the test, never blocks it)."""


@contextmanager
def no_hang(seconds: float):
    """Fail with Hang when the block runs longer than ``seconds`` (SIGALRM, main thread).
    The test's own alarm (pytest-timeout's, pyproject.toml) is put back after the block
    with what is left of it."""
    def on_alarm(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    left, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 0.001))


# ---------------------------------------------------------------- fuzz budgets

QUICK_EXAMPLES = examples(50)  # per property: 50 in the full suite (CI), 20 in the default run
# per property under ``pytest -m fuzz``: 2,000 random ones, or SCUFFLE_FUZZ_EXAMPLES (.ci/run
# sets 400: its ten minutes on 2 cores hold the whole suite, in slow hours too)
LONG_EXAMPLES = int(os.environ.get("SCUFFLE_FUZZ_EXAMPLES") or 2000)
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.filter_too_much])


def fuzz_pair(*strategies, **kw_strategies):
    """Two tests from one property: ``(quick, long)``.

    ``quick`` runs QUICK_EXAMPLES derandomized examples (the same ones every CI run);
    ``long`` carries the ``fuzz`` marker and runs LONG_EXAMPLES random ones. Assign both
    at module level: ``test_x, test_x_fuzz = fuzz_pair(strategy)(_property)``.
    """
    def make(fn):
        quick = settings(max_examples=QUICK_EXAMPLES, derandomize=True, database=None, **_COMMON)(
            given(*strategies, **kw_strategies)(fn))
        long = settings(max_examples=LONG_EXAMPLES, **_COMMON)(given(*strategies, **kw_strategies)(fn))
        return quick, pytest.mark.fuzz(long)
    return make


# ---------------------------------------------------------------- a synthetic move set

IDLE = 388          # 60 frames, no rate flag (0.75), a sound event at frame 0
A = 19              # 21 frames at 0.8: the hit window opens (0x2c) at 3 and closes (0x2d) at 9
B = 20              # 12 frames at 0.9, root velocity
LONG = 1            # 30 frames at 1.0
SHORT = tuple(range(30, 38))          # 2 frames each at 1.0 (always inside a blend window)
GAIT = (404, 405, 406, 407, 407)


def _clip(name: str, frames: int, angle: float, events=(), velocity=None):
    h = angle / 2
    return author_clip(
        name, frames,
        rotations={0: [(0, (0, 0, 0, 1)), (frames // 3 + 1, (0, 0, math.sin(h / 9), math.cos(h / 9)))],
                   2: [(0, (0, 0, 0, 1)), (frames, (0, math.sin(h), 0, math.cos(h)))],
                   7: [(0, (math.sin(h), 0, 0, math.cos(h))), (max(frames // 2, 1), (0, 0, 0, 1))]},
        translation=[(0, (0, 0, 0.05)), (frames, (0.1, 0.0, -0.05))],
        velocity=velocity, events=list(events))


def synthetic_set() -> AnimSet:
    """The set the limit tests play (ids above; every clip has bone 0, 2, 7 and the root)."""
    clips = {IDLE: _clip("idle", 60, 0.2, [make_event(0, 11, word=1)]),
             A: _clip("A", 21, 0.9, [make_event(3, 0x2C), make_event(9, 0x2D)]),
             B: _clip("B", 12, -0.7, [make_event(2, 11, word=5)], velocity=[(0, (0, 0, 0)), (6, (0, 1.0, 0))]),
             LONG: _clip("long", 30, 0.4)}
    for i, sid in enumerate(SHORT):
        clips[sid] = _clip(f"short{i}", 2, 0.1 * (i + 1))
    for i, gid in enumerate(sorted(set(GAIT))):
        clips[gid] = _clip(f"gait{i}", 30 + 7 * i, 0.3 * (i + 1), [make_event(5, 11, word=gid)])
    ranges = {A: author_range(flags=0x800), B: author_range(flags=0x2000), LONG: author_range(flags=0x1000),
              **{g: author_range(flags=0x1000) for g in GAIT}, **{s: author_range(flags=0x1000) for s in SHORT}}
    return AnimSet.build(clips, ranges, name="synthetic")


# ---------------------------------------------------------------- state snapshots


def snapshot(player: Player, instances) -> dict:
    """Everything a refused call must leave as it was: the pool, the stores' tables, the
    deferred list, and per human the stack and queue (by identity), the held flags, the
    playing anim id and every task's traced numbers (times, frames, fade and gait values)."""
    st = player.stores
    return {
        "pool": (player.pool.in_use, player.pool.free),
        "stores": (st.cursors.in_use, st.fades.in_use, st.gaits.in_use),
        "deferred": [(id(t), id(i)) for t, i in player.deferred],
        "humans": [(inst.name, [id(t) for t in inst.stack], [id(t) for t in inst.queue], inst.record.flags,
                    inst.record.anim_id, [t.trace() for t in inst.stack]) for inst in instances],
    }


def keeps_playing(player: Player, inst: CharacterInstance, others=()) -> None:
    """After a refusal the human still plays: a change to A then the idle runs A to its
    end and hands over, every pose finite, and the pool holds exactly the tasks in play."""
    everyone = [inst, *others]
    player.change(inst, player.chain(inst, [A, IDLE], held=0x1), 0.1)
    seen = []
    for _ in range(40):
        poses = player.update(everyone)
        assert poses.is_finite()
        seen.append(inst.record.anim_id)
        assert player.pool.in_use == player.tasks_out(everyone)
    assert seen[0] == A and seen[-1] == IDLE, seen
    assert inst.record.flags & 0x7 == 0          # A's held bits went with it
