"""pose_lean, the first step's pose kernel on a fresh install: pose_stacks without the rare
paths (types 10, 11 and 13, a blend window under the kept rule, the queued tasks' pose of
PlayerOptions.queued_default), which stops at a human whose pose takes one; the engine
then goes on from that human with pose_stacks, and the two write the same bits.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.base.enums import BlendWindow
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.engine import coldstart, kernels as K
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.player import Player, PlayerOptions

pytestmark = pytest.mark.simd        # (it compares bits: again with numpy's AVX kernels off)
STEPS = 30
RARE_AT = 4


def _scene(queued: bool = False):
    """A Player and its humans: loops, a clip handing over to a loop in its blend window, a
    gait under a fade, a chain of clips; ``queued``: PlayerOptions.queued_default on."""
    rot = {1: [(0, (0.0, 0.0, 0.0, 1.0)), (8, (0.1, 0.0, 0.0, 0.995))],
           5: [(0, (0.0, 0.2, 0.0, 0.98)), (6, (0.0, -0.1, 0.0, 0.995))]}
    clips = {i: author_clip(f"k{i}", 8 + 2 * i, rotations=rot, events=[make_event(2, 11, word=1)])
             for i in range(8)}
    aset = AnimSet.build(clips, {i: author_range() for i in range(8)}, name="lean")
    p = Player(PlayerOptions(queued_default=(lambda inst: True) if queued else None))
    hs = [CharacterInstance(aset, f"k{i}") for i in range(8)]
    p.change(hs[0], p.loop(hs[0], 0), 0.0)
    p.change(hs[1], p.gait(hs[1], [0, 1, 2, 3, 3], target=1.2, value=1.0), 0.2)
    p.change(hs[2], p.clip(hs[2], 1, p.loop(hs[2], 2), blend=0.3), 0.0)
    p.change(hs[3], p.loop(hs[3], 3), 0.0)
    p.change(hs[4], p.clip(hs[4], 5, p.clip(hs[4], 6, p.loop(hs[4], 7))), 0.0)
    for h in hs[5:]:
        p.change(h, p.loop(h, 4), 0.0)
    p.flush()
    return p, hs


def _rare(p: Player, hs: list, kind: str) -> None:
    """Give the scene's humans a pose only pose_stacks runs: ``kind`` "types" (a mix, a
    pick and a direction), "kept" (a clip handing over under the kept rule, in its
    window for several updates) or "queued" (a queued task, given after a step, with
    queued_default on)."""
    if kind == "types":
        p.change(hs[5], p.mix(hs[5], 3, 4, weight=0.5), 0.0)
        p.change(hs[6], p.pick(hs[6], [0, 1, 2, 3], 1.0, value=1.0), 0.0)
        p.change(hs[7], p.direction(hs[7], 0, direction=2.6), 0.0)
        p.flush()
    elif kind == "kept":
        t = p.clip(hs[6], 0, p.loop(hs[6], 2), blend=0.25)
        t.window_rule = BlendWindow.KEPT
        p.change(hs[6], t, 0.0)
        p.flush()
    else:                               # after a step: waiting at the pose (the next step starts it)
        p.enqueue(hs[6], p.clip(hs[6], 3, p.loop(hs[6], 1)))


def _run(lean: bool, kind: str | None) -> tuple[list, list]:
    """STEPS updates of the scene with the pose kernel the engine starts on (pose_lean or
    pose_stacks), ``kind``'s rare pose given at update RARE_AT: each update's tables (bytes)
    and poses, and the pose kernel each used."""
    saved = coldstart.POSE_KERNEL[0]
    coldstart.POSE_KERNEL[0] = "pose_lean" if lean else "pose_stacks"
    try:
        p, hs = _scene(queued=kind == "queued")
        states, used = [], []
        for i in range(STEPS):
            if kind is not None and kind != "queued" and i == RARE_AT:
                _rare(p, hs, kind)
            p.step(hs)
            if kind == "queued" and i == RARE_AT:
                _rare(p, hs, kind)
            b = p.pose(hs)
            used.append(p.batch._pose_name)
            p.flush()
            st = p.stores
            states.append([t.block.tobytes() for t in (st.humans, st.tasks, st.cursors, st.fades, st.gaits)]
                          + [b.poses.rot.tobytes(), b.poses.vel.tobytes(), b.poses.root.tobytes(),
                             b.poses.tag.tobytes(), b.pos.tobytes(), b.rot.tobytes()])
        return states, used
    finally:
        coldstart.POSE_KERNEL[0] = saved


def test_lean_poses_a_plain_scene_as_pose_stacks_does():
    full, used_full = _run(False, None)
    lean, used_lean = _run(True, None)
    assert set(used_full) == {"pose_stacks"}
    assert set(used_lean) == {"pose_lean"}          # nothing rare: it stays lean
    for i, (a, b) in enumerate(zip(full, lean)):
        assert a == b, f"update {i}"


@pytest.mark.parametrize("kind", ["types", "kept", "queued"])
def test_lean_hands_a_rare_pose_to_pose_stacks_with_the_same_bits(kind):
    full, _ = _run(False, kind)
    lean, used = _run(True, kind)
    assert used[:RARE_AT] == ["pose_lean"] * RARE_AT
    assert used[RARE_AT:] == ["pose_stacks"] * (STEPS - RARE_AT)
    for i, (a, b) in enumerate(zip(full, lean)):
        assert a == b, f"update {i}"


def _direct(kind: str):
    """The scene with ``kind``'s rare pose given and stepped once, and pose_stacks' arguments
    over its humans (their own rows, one output column each)."""
    p, hs = _scene(queued=kind == "queued")
    if kind != "queued":
        _rare(p, hs, kind)
    p.step(hs)
    p.pose(hs)                                            # (the engine's tables and buffers made)
    p.step(hs)
    if kind == "queued":
        _rare(p, hs, kind)
    eng = p.batch
    rows = np.array([h.slot for h in hs], np.int64)
    n = len(rows)
    _, _, H, T, C, F, G, E, banks, scratch, _, bufs = eng.kernel_args("pose_stacks")
    from scuffle.anim.engine.plan import Bones
    qd = np.array([kind == "queued" and bool(h.queue) for h in hs], np.bool_)
    return p, hs, rows, (H, T, C, F, G, E, banks, scratch), Bones(n), bufs.weights, qd


@pytest.mark.parametrize("kind", ["types", "kept", "queued"])
def test_pose_lean_stops_at_the_rare_human_and_writes_nothing_of_it(kind):
    """Called directly: the humans before the first with a rare pose posed, its index
    returned, not one byte of its output column (nor of the tables) written; pose_stacks
    over the rest then gives the bits of one pose_stacks call over all of them."""
    p, hs, rows, tables, bones, weights, qd = _direct(kind)
    n = len(rows)
    first = 5 if kind == "types" else 6
    st = p.stores
    before = [t.block.copy() for t in (st.humans, st.tasks, st.cursors, st.fades, st.gaits)]
    cols = np.arange(n, dtype=np.int64)
    sentinel = np.float32(7.5)
    out = bones.outs()
    for a in out:
        a[...] = sentinel if a.dtype != np.bool_ else True
    refused = np.full(n, -3, np.int64)
    stopped = K.pose_lean(rows, cols, *tables, out, K.PoseBuffers(refused, weights, qd))
    assert stopped == first
    for a in out:                                   # the stopped human's column and those after: untouched
        assert (a[..., first:] == (sentinel if a.dtype != np.bool_ else True)).all()
        if a.dtype != np.bool_:                     # those before it: posed
            assert not (a[..., :first] == sentinel).any()
    assert (refused[first:] == -3).all() and (refused[:first] >= 0).all()
    for t, b in zip((st.humans, st.tasks, st.cursors, st.fades, st.gaits), before):
        assert np.array_equal(t.block, b)
    done = K.pose_stacks(rows[first:], cols[first:], *tables, out, K.PoseBuffers(refused[first:], weights, qd[first:]))
    assert done == n - first
    lean_then_full = [a.copy() for a in out] + [refused.copy()]
    tables_after = [t.block.copy() for t in (st.humans, st.tasks, st.cursors, st.fades, st.gaits)]
    for t, b in zip((st.humans, st.tasks, st.cursors, st.fades, st.gaits), before):
        np.copyto(t.block, b)                       # (the kept rule moves the next task's cursors)
    whole = bones.outs()
    for a in whole:
        a[...] = 0
    refused2 = np.zeros(n, np.int64)
    assert K.pose_stacks(rows, cols, *tables, whole, K.PoseBuffers(refused2, weights, qd)) == n
    for a, b in zip(lean_then_full, list(whole) + [refused2]):
        assert a.tobytes() == b.tobytes()
    for a, t in zip(tables_after, (st.humans, st.tasks, st.cursors, st.fades, st.gaits)):
        assert np.array_equal(a, t.block)


@pytest.mark.parametrize("env, cached, lean", [("", False, True), ("0", False, False), ("", True, False)])
def test_the_first_pose_is_lean_only_on_a_cold_cache(monkeypatch, env, cached, lean):
    monkeypatch.setenv(coldstart.LEAN_ENV, env)
    monkeypatch.setattr(coldstart, "kernel_cached", lambda name, mod=None: cached)
    has = bool(K.pose_stacks.signatures)
    assert coldstart.lean_first_pose() is (lean and not has)


def test_a_threaded_crowd_poses_on_one_thread_while_lean():
    """While the pose is lean, the pose is not cut into chunks (the chunks' kernel is
    pose_stacks): one pose_lean call over every human; once whole, the chunks again."""
    saved = coldstart.POSE_KERNEL[0]
    coldstart.POSE_KERNEL[0] = "pose_lean"
    try:
        from scuffle.anim.engine import crowd
        rot = {1: [(0, (0.0, 0.0, 0.0, 1.0)), (8, (0.1, 0.0, 0.0, 0.995))]}
        clips = {i: author_clip(f"c{i}", 10 + i, rotations=rot) for i in range(3)}
        aset = AnimSet.build(clips, {i: author_range() for i in range(3)}, name="crowd")
        p = Player(PlayerOptions(threads=2, pool_size=1 << 14))
        hs = [CharacterInstance(aset, f"h{i}") for i in range(2 * crowd.MIN_CHUNK + 8)]
        for i, h in enumerate(hs):
            p.change(h, p.loop(h, i % 3), 0.0)
        p.flush()
        p.step(hs)
        p.pose(hs)
        assert p.batch._pose_name == "pose_lean"
        assert p.batch._spans(len(hs), 1) is not None     # (the crowd is large enough to cut)
        assert p.batch._pose_prepare(hs, None)[2] is None  # but a lean pose is not cut
        coldstart.POSE_KERNEL[0] = "pose_stacks"
        assert p.batch._pose_prepare(hs, None)[2] is not None
    finally:
        coldstart.POSE_KERNEL[0] = saved


def test_the_child_compiles_pose_lean_for_the_types_the_engine_calls_it_with():
    """compile_aside sends the child the types of ``kernel_args("pose_lean")``: those of the
    engine's own lean calls (else the parent would compile it again)."""
    import json

    saved = coldstart.POSE_KERNEL[0]
    coldstart.POSE_KERNEL[0] = "pose_lean"
    try:
        p, hs = _scene()
        p.step(hs)
        p.pose(hs)
        assert p.batch._pose_name == "pose_lean"
        sig = tuple(K.pose_lean.typeof_pyval(a) for a in p.batch.kernel_args("pose_lean"))
        assert sig in K.pose_lean.signatures, (sig, K.pose_lean.signatures)
        assert coldstart.sig_from_plain(json.loads(json.dumps(coldstart.sig_plain(sig)))) == sig
    finally:
        coldstart.POSE_KERNEL[0] = saved
