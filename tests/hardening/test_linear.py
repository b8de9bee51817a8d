"""Linear time in the humans: the fight rules' separation and the trace diff.

No timing assertion: the separation is compared bit for bit with the pairwise loop it
replaced on random layouts, and its work is counted (pair distance checks) on a crowd
where a quadratic loop would look at every pair; the diff runs on sizes where list
look-ups visibly hang, under a generous subprocess timeout.
"""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import numpy as np
import pytest

from scuffle.components import NO_ATTACHMENT
from scuffle.anim.maths import detmath
from scuffle.game.fighters.combat import MIN_SEPARATION, Fight
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd



def _reference_separate(fight: Fight) -> None:
    """The pairwise loop _separate replaced (O(N^2)), kept as the reference."""
    hs = [(e, fight.body(e)) for _, e in fight.game.humans()]
    for i, (ea, ba) in enumerate(hs):
        for eb, bb in hs[i + 1:]:
            if fight.combat(ea).partner == eb or ba.attachment != NO_ATTACHMENT or \
                    bb.attachment != NO_ATTACHMENT or ba.slide_left or bb.slide_left:
                continue
            d = bb.position[:2] - ba.position[:2]
            dist = detmath.hypot_s(float(d[0]), float(d[1]))
            if dist >= MIN_SEPARATION:
                continue
            n = d / dist if dist > 1e-9 else np.array([1.0, 0.0])
            push = (MIN_SEPARATION - dist) / 2.0
            ba.position = ba.position - np.array([n[0], n[1], 0.0]) * push
            bb.position = bb.position + np.array([n[0], n[1], 0.0]) * push


SET = None


def _world(layout: list[tuple[float, float]], rng: random.Random) -> tuple[Game, Fight]:
    global SET
    SET = SET or demo_set()
    game = Game()
    for k, (x, y) in enumerate(layout):
        game.add_human(f"h{k}", SET, (x, y, 0.0))
    fight = Fight(game, separate=True)
    ents = [e for _, e in game.humans()]
    r = random.Random(rng.random())
    for e in ents:                      # a few held, sliding and partnered bodies
        roll = r.random()
        if roll < 0.05:
            fight.body(e).attachment = r.choice(ents)
        elif roll < 0.1:
            fight.body(e).slide_left = 3
        elif roll < 0.15:
            fight.combat(e).partner = r.choice(ents)
    return game, fight


def _positions(game: Game, fight: Fight) -> bytes:
    return b"".join(fight.body(e).position.tobytes() for _, e in game.humans())


def _layouts(seed: int) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    kind = seed % 4
    n = rng.randint(2, 70)
    if kind == 0:                       # a tight clump: many pushes, bodies change cells
        return [(rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5)) for _ in range(n)]
    if kind == 1:                       # spread on a ring of cells' edges
        return [(round(rng.uniform(-5, 5) / 0.6375) * 0.6375, rng.uniform(-2, 2)) for _ in range(n)]
    if kind == 2:                       # exact duplicates (distance 0) and near ties
        base = [(rng.uniform(-3, 3), rng.uniform(-3, 3)) for _ in range(max(1, n // 3))]
        return [rng.choice(base) for _ in range(n)]
    return [(rng.gauss(0, 1.5), rng.gauss(0, 1.5)) for _ in range(n)]     # a crowd


# eight seeds in the default run, the other sixteen in the full suite
@pytest.mark.parametrize("seed", [*range(8), *(pytest.param(s, marks=[pytest.mark.slow, pytest.mark.bits]) for s in range(8, 24))])
def test_the_grid_separation_equals_the_pairwise_loop_bit_for_bit(seed):
    layout = _layouts(seed)
    ga, fa = _world(layout, random.Random(seed))
    gb, fb = _world(layout, random.Random(seed))
    for _ in range(3):                  # three rounds: bodies pushed into each other again
        fa._separate()
        _reference_separate(fb)
        assert _positions(ga, fa) == _positions(gb, fb)
    ga.close()
    gb.close()


def test_one_nan_body_leaves_the_others_alone():
    game, fight = _world([(0.0, 0.0), (0.3, 0.0), (0.1, 0.2)], random.Random(0))
    ents = [e for _, e in game.humans()]
    for e in ents:
        fight.body(e).attachment = NO_ATTACHMENT
        fight.body(e).slide_left = 0
        fight.combat(e).partner = None
    game.ctx.bodies.position[fight.body(ents[0]).row] = (math.nan, 0.0, 0.0)   # past every check
    fight._separate()
    for e in ents[1:]:
        assert np.isfinite(fight.body(e).position).all()
    game.close()


def test_the_separation_looks_at_a_spread_crowd_in_linear_work(monkeypatch):
    """A grid of 900 bodies 1 m apart: a pairwise loop measures 404,550 distances, the grid
    at most 8 per body (its neighbours' cells)."""
    count = {"n": 0}
    real = detmath.hypot_s

    def counting(a, b):
        count["n"] += 1
        return real(a, b)

    layout = [(float(i % 30), float(i // 30)) for i in range(900)]
    game, fight = _world(layout, random.Random(1))
    monkeypatch.setattr(detmath, "hypot_s", counting)
    fight._separate()
    monkeypatch.undo()
    assert 0 < count["n"] <= 8 * 900
    game.close()


# ---------------------------------------------------------------- the trace diff


def _trace(path, pairs) -> None:
    with open(path, "w") as f:
        for u, h in pairs:
            f.write(json.dumps({"update": u, "human": h, "anim": 3, "pos": [1.0, 2.0, 0.0]}) + "\n")


def test_the_diff_looks_up_each_record_once_not_every_human_at_every_update(tmp_path, monkeypatch):
    """4,000 updates with a different human each: a look-up of every human at every update
    is 16 million look-ups; the diff makes one per record and trace."""
    from scuffle.game.tools import diff

    pairs = [(u, f"h{u}") for u in range(4000)]
    _trace(tmp_path / "a.jsonl", pairs)
    _trace(tmp_path / "b.jsonl", pairs)
    a, b = diff.read_trace(str(tmp_path / "a.jsonl")), diff.read_trace(str(tmp_path / "b.jsonl"))
    count = {"n": 0}
    real_get = diff._RecordView.get

    def counting_get(self, key, default=None):
        count["n"] += 1
        return real_get(self, key, default)

    monkeypatch.setattr(diff._RecordView, "get", counting_get)
    report = diff.diff_traces(a, b)
    assert report.agree and len(report.updates) == 4000
    assert count["n"] <= 2 * len(pairs)


@pytest.mark.slow
def test_the_diff_of_100000_humans_finishes(tmp_path):
    """100,000 humans at one update in both traces: list look-ups (10^10 comparisons)
    would not finish within the timeout; the dicts take seconds."""
    pairs = [(0, f"human{i}") for i in range(100_000)]
    _trace(tmp_path / "a.jsonl", pairs)
    pairs[-1] = (0, "someone else")
    _trace(tmp_path / "b.jsonl", pairs)
    r = subprocess.run([sys.executable, "-m", "scuffle", "diff", "a.jsonl", "b.jsonl"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "first difference: update 0" in r.stdout and "human99999  record" in r.stdout
