"""step_lean, the first step's kernel on a fresh install: step_stacks without the rare paths
(a gait's change of pair, types 10, 11 and 13), which stops before a human whose step
takes one; the engine then goes on with step_stacks, and the two write the same bits.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.engine import coldstart, kernels as K
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.player import Player

pytestmark = pytest.mark.simd        # (it compares bits: again with numpy's AVX kernels off)
STEPS = 40


def _scene(rare: bool):
    """A Player and its humans: loops (one with a wrap callback), a clip handing over to a
    loop in its blend window, a gait under a fade; with ``rare`` a gait whose target
    crosses into another pair and types 10, 11 and 13 too (the fifth step on)."""
    rot = {1: [(0, (0.0, 0.0, 0.0, 1.0)), (8, (0.1, 0.0, 0.0, 0.995))]}
    clips = {i: author_clip(f"k{i}", 8 + 2 * i, rotations=rot, events=[make_event(2, 11, word=1)])
             for i in range(8)}
    aset = AnimSet.build(clips, {i: author_range() for i in range(8)}, name="lean")
    p = Player()
    hs = [CharacterInstance(aset, f"k{i}") for i in range(7)]
    p.change(hs[0], p.loop(hs[0], 0), 0.0)
    p.change(hs[1], p.gait(hs[1], [0, 1, 2, 3, 3], target=1.2, value=1.0), 0.2)
    p.change(hs[2], p.clip(hs[2], 1, p.loop(hs[2], 2), blend=0.3), 0.0)
    p.change(hs[3], p.loop(hs[3], 3, on_wrap=lambda inst: None), 0.0)
    p.change(hs[4], p.clip(hs[4], 5, p.clip(hs[4], 6, p.loop(hs[4], 7))), 0.0)
    p.change(hs[5], p.loop(hs[5], 4), 0.0)
    p.change(hs[6], p.loop(hs[6], 6), 0.0)
    p.flush()
    return p, hs


def _run(lean: bool, rare: bool) -> tuple[list, list]:
    """STEPS updates of ``_scene(rare)`` with the step kernel the engine starts on (step_lean
    or step_stacks): each update's tables (bytes) and poses, and the kernel each used."""
    saved = coldstart.STEP_KERNEL[0]
    coldstart.STEP_KERNEL[0] = "step_lean" if lean else "step_stacks"
    try:
        p, hs = _scene(rare)
        states, used = [], []
        for i in range(STEPS):
            if rare and i == 4:
                p.change(hs[1], p.gait(hs[1], [0, 1, 2, 3, 3], target=3.5, value=1.0), 0.0)
                p.change(hs[5], p.mix(hs[5], 3, 4, weight=0.5), 0.0)
                p.change(hs[6], p.pick(hs[6], [0, 1, 2, 3], 1.0, value=1.0), 0.0)
                p.flush()
            p.step(hs)
            used.append(p.batch._step_name)
            b = p.pose(hs)
            p.flush()
            st = p.stores
            states.append([t.block.tobytes() for t in (st.humans, st.tasks, st.cursors, st.fades, st.gaits)]
                          + [b.poses.rot.tobytes(), b.poses.vel.tobytes()])
        return states, used
    finally:
        coldstart.STEP_KERNEL[0] = saved


def test_lean_steps_a_plain_scene_as_step_stacks_does():
    full, used_full = _run(False, False)
    lean, used_lean = _run(True, False)
    assert set(used_full) == {"step_stacks"}
    assert set(used_lean) == {"step_lean"}          # nothing rare: it stays lean
    for i, (a, b) in enumerate(zip(full, lean)):
        assert a == b, f"update {i}"


def test_lean_hands_a_rare_path_to_step_stacks_with_the_same_bits():
    full, _ = _run(False, True)
    lean, used = _run(True, True)
    assert used[:4] == ["step_lean"] * 4
    assert used[4:] == ["step_stacks"] * (STEPS - 4)     # the change of pair and types 10, 11
    for i, (a, b) in enumerate(zip(full, lean)):
        assert a == b, f"update {i}"


def test_step_lean_stops_before_a_type_10_and_writes_nothing_of_it():
    """Called directly: the humans before the one with a mix stepped, STATUS_LEAN for it,
    ``counts[2]`` its index, and not one byte of the tables written for it."""
    p, hs = _scene(False)
    p.change(hs[5], p.mix(hs[5], 3, 4, weight=0.5), 0.0)
    p.flush()
    p.step(hs)                                            # (the engine's tables and buffers made)
    p.pose(hs)
    p.flush()
    eng = p.batch
    rows_all, _, dt, rules, H, T, C, F, G, E, one = eng.kernel_args("step_stacks")
    slots = np.array([h.slot for h in hs], np.int64)
    n = len(slots)
    status, lo, hi = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    counts = np.zeros_like(one.counts)
    out = one._replace(status=status, ev_lo=lo, ev_hi=hi, counts=counts)
    st = p.stores
    before = [t.block.copy() for t in (st.humans, st.tasks, st.cursors, st.fades, st.gaits)]
    K.step_lean(slots, 0, dt, rules, H, T, C, F, G, E, out)
    assert counts[K.COUNT_STOPPED] == 5
    assert status[5] == K.STATUS_LEAN
    assert not any(status[:5] & K.STATUS_LEAN)
    stepped = [t.block.copy() for t in (st.humans, st.tasks, st.cursors, st.fades, st.gaits)]
    assert any(not np.array_equal(a, b) for a, b in zip(before, stepped))      # the first five stepped
    # the rest, from the mix on, by step_stacks: as one call of step_stacks over all of them
    K.step_stacks(slots, 5, dt, rules, H, T, C, F, G, E, out)
    assert counts[K.COUNT_STOPPED] == n
    lean_then_full = [t.block.copy() for t in (st.humans, st.tasks, st.cursors, st.fades, st.gaits)]
    for t, b in zip((st.humans, st.tasks, st.cursors, st.fades, st.gaits), before):
        np.copyto(t.block, b)
    counts[:] = 0
    K.step_stacks(slots, 0, dt, rules, H, T, C, F, G, E, out)
    for a, b in zip(lean_then_full, (st.humans, st.tasks, st.cursors, st.fades, st.gaits)):
        assert np.array_equal(a, b.block)


@pytest.mark.parametrize("env, cached, lean", [("", False, True), ("0", False, False), ("", True, False)])
def test_the_first_step_is_lean_only_on_a_cold_cache(monkeypatch, env, cached, lean):
    monkeypatch.setenv(coldstart.LEAN_ENV, env)
    monkeypatch.setattr(coldstart, "kernel_cached", lambda name, mod=None: cached)
    has = bool(K.step_stacks.signatures)
    assert coldstart.lean_first_step() is (lean and not has)
