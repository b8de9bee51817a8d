"""The skeleton (anim/maths/skeleton.py): parent table, reference pose, humanoid offsets, bone transforms.

Spec: "The pose" (the parent table), "The reference pose" (the 34 rotations),
"Bone transforms" (entry 0 motion, entry 1 absolute, bones 2-33 composed).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from scuffle.anim.maths import quat
from scuffle.anim.maths.skeleton import (HUMANOID, MIRROR_PAIRS, NUM_BONES, PARENTS, REFERENCE_ROTATIONS, Bone,
                           Skeleton, depth_levels, subtree_mask)

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

SPEC = Path("/work/shared/spec/animation.txt")

# The spec's parent table ("The pose"), copied literally.
SPEC_PARENTS = (-1, 0, 1, 1, 3, 4, 5, 6, 6, 8, 6, 10, 6, 12, 6, 6, 5, 16, 17, 18, 19, 19,
                5, 22, 23, 24, 25, 25, 2, 28, 29, 2, 31, 32)

# The spec's reference pose table ("The reference pose"), (x, y, z, w) to four places.
SPEC_REFERENCE = [
    (0.0, 0.0, 0.0, 1.0),  # 0
    (-0.4912, -0.5087, 0.4912, 0.5087),  # 1
    (-0.5, 0.5, -0.5, 0.5),  # 2
    (0.4793, -0.5199, 0.5199, -0.4793),  # 3
    (0.0, -0.0298, 0.0, 0.9996),  # 4
    (0.0, -0.1757, 0.0, 0.9844),  # 5
    (0.0, 0.1172, 0.0, 0.9931),  # 6
    (0.5274, -0.471, 0.471, 0.5274),  # 7
    (0.659, 0.0, 0.7521, 0.0),  # 8
    (0.0, -0.2983, 0.0, 0.9545),  # 9
    (0.6081, -0.578, 0.3635, 0.405),  # 10
    (0.0, 0.6425, 0.0, 0.7663),  # 11
    (0.4043, -0.3602, 0.5801, 0.6085),  # 12
    (-0.0036, -0.6166, 0.0054, 0.7873),  # 13
    (0.7393, 0.0, 0.6733, 0.0),  # 14
    (0.5247, -0.4805, 0.4743, 0.5186),  # 15
    (0.62, -0.7643, -0.1281, 0.1227),  # 16
    (0.0452, -0.0282, 0.1112, 0.9924),  # 17
    (0.0, 0.1174, 0.0, 0.9931),  # 18
    (-0.6951, -0.0567, 0.0262, 0.7162),  # 19
    (-0.0004, -0.2858, 0.0001, 0.9583),  # 20
    (-0.0811, -0.3223, -0.003, 0.9431),  # 21
    (-0.62, -0.7643, 0.1281, 0.1227),  # 22
    (-0.0452, -0.0282, -0.1112, 0.9924),  # 23
    (0.0, 0.1174, 0.0, 0.9931),  # 24
    (0.6951, -0.0567, -0.0262, 0.7162),  # 25
    (0.0004, -0.2858, -0.0001, 0.9583),  # 26
    (0.0811, -0.3223, 0.003, 0.9431),  # 27
    (-0.0066, -0.1154, 0.991, -0.0678),  # 28
    (0.0, 0.034, 0.0, 0.9994),  # 29
    (-0.003, -0.0194, -0.07, 0.9974),  # 30
    (-0.0066, 0.1154, 0.991, 0.0678),  # 31
    (0.0, 0.034, 0.0, 0.9994),  # 32
    (0.003, -0.0194, 0.07, 0.9974),  # 33
]


def matrix(q) -> np.ndarray:
    x, y, z, w = (float(v) for v in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def random_rotations(rng, n) -> np.ndarray:
    q = rng.normal(size=(4, NUM_BONES, n))
    return q / np.linalg.norm(q, axis=0)


def reference_batch(n=1, dtype=np.float64):
    return np.repeat(REFERENCE_ROTATIONS.T[:, :, None].astype(dtype), n, axis=2)


# ---------------------------------------------------------------- parent table


def test_parents_are_the_spec_table():
    assert PARENTS == SPEC_PARENTS
    assert len(PARENTS) == NUM_BONES == 34


def test_bone_3_hangs_from_the_pelvis_not_bone_2():
    # The table wins over the prose that calls bone 2 the spine's parent.
    assert PARENTS[3] == 1
    assert PARENTS[28] == 2 and PARENTS[31] == 2


def test_parents_against_the_spec_file_when_present():
    if not SPEC.exists():
        pytest.skip("spec not available")
    text = SPEC.read_text()
    line = "-1, 0, 1, 1, 3, 4, 5, 6, 6, 8, 6, 10, 6, 12, 6, 6, 5, 16, 17, 18, 19, 19, 5, 22, 23, 24, 25, 25, 2, 28, 29, 2, 31, 32"
    assert line in text
    assert tuple(int(v) for v in line.split(",")) == PARENTS


def test_bone_names_sit_where_the_table_puts_them():
    assert PARENTS[Bone.PELVIS] == Bone.ROOT
    assert PARENTS[Bone.L_THIGH] == Bone.HIPS and PARENTS[Bone.R_THIGH] == Bone.HIPS
    assert PARENTS[Bone.L_CLAVICLE] == Bone.CHEST and PARENTS[Bone.R_CLAVICLE] == Bone.CHEST
    assert PARENTS[Bone.HEAD] == Bone.CHEST


# ---------------------------------------------------------------- reference pose


def test_reference_rotations_match_the_spec_to_four_places():
    assert REFERENCE_ROTATIONS.shape == (34, 4)
    assert REFERENCE_ROTATIONS.dtype == np.float32
    assert np.allclose(REFERENCE_ROTATIONS, np.array(SPEC_REFERENCE), atol=1.5e-4)


def test_reference_rotations_against_the_spec_file_when_present():
    if not SPEC.exists():
        pytest.skip("spec not available")
    lines = SPEC.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Bone\tx\ty\tz\tw"))
    rows = {}
    for ln in lines[start + 1:start + 18]:
        p = ln.split("\t")
        rows[int(p[0])] = [float(v) for v in p[1:5]]
        rows[int(p[5])] = [float(v) for v in p[6:10]]
    assert sorted(rows) == list(range(34))
    assert np.allclose(REFERENCE_ROTATIONS, [rows[b] for b in range(34)], atol=1.5e-4)


def test_reference_rotations_are_unit_and_read_only():
    assert np.allclose(np.linalg.norm(REFERENCE_ROTATIONS.astype(np.float64), axis=1), 1, atol=1e-6)
    assert REFERENCE_ROTATIONS[0].tolist() == [0, 0, 0, 1]
    assert REFERENCE_ROTATIONS[2].tolist() == [-0.5, 0.5, -0.5, 0.5]
    with pytest.raises(ValueError):
        REFERENCE_ROTATIONS[0, 0] = 1


# ---------------------------------------------------------------- levels, subtrees


def test_depth_levels_put_parents_before_children():
    levels = depth_levels()
    seen = {0, 1}
    for level in levels:
        for b in level:
            assert PARENTS[b] in seen, f"bone {b} before its parent {PARENTS[b]}"
        seen.update(int(b) for b in level)
    flat = sorted(int(b) for lv in levels for b in lv)
    assert flat == list(range(2, 34))                       # each of 2-33 once
    assert sorted(levels[0].tolist()) == [2, 3]             # the pelvis's children


def test_subtree_of_the_hips_is_the_legs():
    assert np.flatnonzero(subtree_mask(2)).tolist() == [2, 28, 29, 30, 31, 32, 33]


def test_subtree_of_the_left_arm():
    assert np.flatnonzero(subtree_mask(16)).tolist() == [16, 17, 18, 19, 20, 21]


def test_subtree_masks_follow_the_table():
    assert subtree_mask(0).all()
    assert np.flatnonzero(subtree_mask(1)).tolist() == list(range(1, 34))
    assert np.flatnonzero(subtree_mask(33)).tolist() == [33]
    for bone in range(34):
        m = subtree_mask(bone)
        for b in range(34):
            # b is in the subtree iff walking up from b meets bone.
            a, inside = b, False
            while a >= 0:
                if a == bone:
                    inside = True
                    break
                a = PARENTS[a]
            assert m[b] == inside, (bone, b)
    with pytest.raises(ValueError):
        subtree_mask(34)
    with pytest.raises(ValueError):
        subtree_mask(-1)


# ---------------------------------------------------------------- the humanoid


@pytest.fixture(scope="module")
def ref_pose():
    pos, rot = HUMANOID.reference_model_space()
    tips = HUMANOID.tip_positions(pos.T[:, :, None], rot.T[:, :, None])[:, :, 0].T
    return pos, rot, tips


def test_reference_pose_feet_on_the_ground(ref_pose):
    pos, rot, tips = ref_pose
    for foot in (30, 33):
        assert abs(tips[foot, 2]) < 0.02, f"foot {foot} tip at z={tips[foot, 2]:.3f}"
    assert tips[:, 2].min() > -0.02
    assert pos[1:, 2].min() > -0.02


def test_reference_pose_head_is_highest_and_height_is_human(ref_pose):
    pos, rot, tips = ref_pose
    head = max(tips[15, 2], pos[6, 2])
    top = max(tips[1:, 2].max(), pos[1:, 2].max())
    assert head == pytest.approx(top)
    assert pos[6, 2] > pos[5, 2] > pos[4, 2] > pos[3, 2] > pos[1, 2]      # spine goes up
    assert 1.7 <= top - min(tips[30, 2], tips[33, 2]) <= 1.9
    assert pos[1, 2] == pytest.approx(HUMANOID.bind_height)
    assert 0.8 < HUMANOID.bind_height < 1.2


def test_reference_pose_arms_hang(ref_pose):
    pos, rot, tips = ref_pose
    for shoulder, elbow, hand in ((17, 18, 19), (23, 24, 25)):
        assert pos[elbow, 2] < pos[shoulder, 2]
        assert pos[hand, 2] < pos[elbow, 2]
        assert pos[hand, 2] < pos[shoulder, 2]
    # Legs hang too: knee below hip, ankle below knee.
    for hip, knee, ankle in ((28, 29, 30), (31, 32, 33)):
        assert pos[ankle, 2] < pos[knee, 2] < pos[hip, 2]


def test_reference_pose_is_mirror_symmetric(ref_pose):
    pos, rot, tips = ref_pose
    flip = np.array([-1.0, 1.0, 1.0])
    for a, b in MIRROR_PAIRS:
        assert np.allclose(pos[a] * flip, pos[b], atol=0.005), (a, b)
        assert np.allclose(tips[a] * flip, tips[b], atol=0.005), (a, b)
        assert abs(pos[a, 0]) > 0.01, f"bone {a} is on the mid-line"
    # The mid-line bones stay on x = 0.
    for b in (1, 2, 3, 4, 5, 6):
        assert abs(pos[b, 0]) < 0.005


def test_mirror_pairs_are_left_right_bones_of_the_table():
    for a, b in MIRROR_PAIRS:
        pa, pb = PARENTS[a], PARENTS[b]
        assert pa == pb or (pa, pb) in MIRROR_PAIRS


@pytest.mark.parametrize("bone", [4, 5, 6, 17, 18, 19, 23, 24, 25, 29, 30, 32, 33])
def test_single_child_chains_step_along_the_parents_x(bone):
    x, y, z = HUMANOID.offsets[bone]
    assert y == 0 and z == 0 and x > 0


def test_skeleton_rejects_bad_tables():
    offs = np.zeros((34, 3))
    with pytest.raises(ValueError):
        Skeleton(offsets=offs, bind_height=1.0, tips=np.zeros(34), parents=PARENTS[:-1])
    bad = list(PARENTS)
    bad[5] = 7                                              # parent after its child
    with pytest.raises(ValueError):
        Skeleton(offsets=offs, bind_height=1.0, tips=np.zeros(34), parents=tuple(bad))
    with pytest.raises(ValueError):
        Skeleton(offsets=np.zeros((33, 3)), bind_height=1.0, tips=np.zeros(34))


# ---------------------------------------------------------------- model_space


def loop_reference(skel: Skeleton, rot: np.ndarray, root: np.ndarray):
    """Per-bone Python loop, float64 matrices: positions (34, 3) and matrices (34, 3, 3)."""
    pos = np.zeros((34, 3))
    mats = np.zeros((34, 3, 3))
    mats[0] = np.eye(3)
    pos[1] = root
    mats[1] = matrix(rot[:, 1])
    for b in range(2, 34):
        p = skel.parents[b]
        mats[b] = mats[p] @ matrix(rot[:, b])
        pos[b] = pos[p] + mats[p] @ skel.offsets[b]
    return pos, mats


def test_model_space_matches_a_per_bone_loop():
    rng = np.random.default_rng(7)
    rot = random_rotations(rng, 5)
    root = rng.normal(size=(3, 5))
    pos, mrot = HUMANOID.model_space(rot, root)
    assert pos.shape == (3, 34, 5) and mrot.shape == (4, 34, 5)
    for i in range(5):
        want_pos, want_mats = loop_reference(HUMANOID, rot[:, :, i], root[:, i])
        assert np.allclose(pos[:, :, i].T[1:], want_pos[1:], atol=1e-12)
        for b in range(1, 34):
            assert np.allclose(matrix(mrot[:, b, i]), want_mats[b], atol=1e-12), b


def test_model_space_reference_pose_matches_loop():
    pos, rot = HUMANOID.reference_model_space()
    want_pos, want_mats = loop_reference(HUMANOID, REFERENCE_ROTATIONS.T.astype(np.float64),
                                         np.array([0, 0, HUMANOID.bind_height]))
    assert np.allclose(pos[1:], want_pos[1:], atol=1e-6)
    for b in range(1, 34):
        assert np.allclose(matrix(rot[b]), want_mats[b], atol=1e-6)


def test_entry_one_is_the_root_translation_and_bone_1_as_is():
    rng = np.random.default_rng(3)
    rot = random_rotations(rng, 2)
    root = np.array([[0.5, -1.0], [2.0, 0.25], [1.1, 0.9]])
    pos, mrot = HUMANOID.model_space(rot, root)
    assert np.array_equal(pos[:, 1], root)
    assert np.array_equal(mrot[:, 1], rot[:, 1])
    # Entry 0 is motion: zero / identity here, whatever bone 0 holds.
    assert np.all(pos[:, 0] == 0)
    assert np.all(mrot[:3, 0] == 0) and np.all(mrot[3, 0] == 1)


def test_bone_0_never_moves_or_tilts_the_body():
    rng = np.random.default_rng(11)
    rot = random_rotations(rng, 3)
    root = rng.normal(size=(3, 3))
    turned = rot.copy()
    big = np.array([0.3, -0.5, 0.8, 0.1])
    turned[:, 0] = (big / np.linalg.norm(big))[:, None]       # a big turn (and tilt) on bone 0
    turned[:, 0, 2] = [0, 0, math.sin(1.5), math.cos(1.5)]    # 172 deg about z on another
    p0, r0 = HUMANOID.model_space(rot, root)
    p1, r1 = HUMANOID.model_space(turned, root)
    assert np.array_equal(p0[:, 1:], p1[:, 1:])
    assert np.array_equal(r0[:, 1:], r1[:, 1:])


def test_model_space_batched_equals_single():
    rng = np.random.default_rng(5)
    rot = random_rotations(rng, 5).astype(np.float32)
    root = rng.normal(size=(3, 5)).astype(np.float32)
    pos, mrot = HUMANOID.model_space(rot, root)
    assert pos.dtype == np.float32 and mrot.dtype == np.float32
    for i in range(5):
        p1, r1 = HUMANOID.model_space(rot[:, :, i:i + 1], root[:, i:i + 1])
        assert np.array_equal(pos[:, :, i:i + 1], p1)
        assert np.array_equal(mrot[:, :, i:i + 1], r1)


def test_model_space_writes_into_given_buffers():
    rot = reference_batch(2)
    root = np.zeros((3, 2))
    op, orot = np.full((3, 34, 2), np.nan), np.full((4, 34, 2), np.nan)
    p, r = HUMANOID.model_space(rot, root, out_pos=op, out_rot=orot)
    assert p is op and r is orot
    assert np.all(np.isfinite(op)) and np.all(np.isfinite(orot))


def test_children_follow_a_rotated_parent():
    # Rotating the hips turns both legs about the pelvis and nothing else.
    rot = reference_batch(2)
    turn = np.array([0, 0, math.sin(0.5), math.cos(0.5)])       # 60 deg about model z
    rot[:, 2, 1] = quat.mul(quat.mul(quat.conjugate(rot[:, 1, 1]), turn),
                            quat.mul(rot[:, 1, 1], rot[:, 2, 1]))
    root = np.zeros((3, 2))
    pos, _ = HUMANOID.model_space(rot, root)
    legs = subtree_mask(2)
    assert np.allclose(pos[:, ~legs, 0], pos[:, ~legs, 1])
    assert not np.allclose(pos[:, 30, 0], pos[:, 30, 1])
    # Heights unchanged by a turn about the vertical through the pelvis.
    assert np.allclose(pos[2, legs, 0], pos[2, legs, 1], atol=1e-9)
