"""Pose batches and Pose_BlendPartial (anim/maths/pose.py).

Spec: "The pose" (the default tag; "for bones 1-33 two tagged rotations stay as they
are (the result keeps the lower pose's), and otherwise the two are slerped, even when
one of them is a default; for the root velocity and bone 0 (the motion channels) a
tagged side is ignored and the other side is copied"), "Blending" (subtree blends).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from scuffle.anim.maths import quat
from scuffle.anim.maths.pose import (DTYPE, NUM_TAGS, POSE_STACK_SIZE, TAG_BONE, TAG_ROOT, TAG_VELOCITY,
                       PoseBatch, blend)
from scuffle.anim.maths.skeleton import NUM_BONES, REFERENCE_ROTATIONS, subtree_mask

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def random_pose(rng, n=1, tag=False) -> PoseBatch:
    rot = rng.normal(size=(4, NUM_BONES, n))
    rot /= np.linalg.norm(rot, axis=0)
    rot[:, :, :] *= np.where(rot[3] < 0, -1, 1)          # w >= 0 (as sampled)
    return PoseBatch(rng.normal(size=(3, n)).astype(DTYPE), rng.normal(size=(3, n)).astype(DTYPE),
                     rot.astype(DTYPE), np.full((NUM_TAGS, n), tag, dtype=bool))


def same_rotation(a, b, atol=1e-6) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return bool(np.allclose(a, b, atol=atol) or np.allclose(a, -b, atol=atol))


def all_same_rotation(a, b, atol=1e-6) -> bool:
    """(4, ...) arrays equal up to a sign per quaternion."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = np.abs(np.sum(a * b, axis=0))
    return bool(np.all(np.abs(d - 1) < atol))


# ---------------------------------------------------------------- PoseBatch


def test_layout_constants():
    assert (TAG_VELOCITY, TAG_ROOT, TAG_BONE) == (0, 1, 2)
    assert NUM_TAGS == 36
    assert POSE_STACK_SIZE == 7
    assert DTYPE == np.float32


def test_empty_shapes():
    p = PoseBatch.empty(3)
    assert len(p) == 3
    assert p.vel.shape == (3, 3) and p.root.shape == (3, 3)
    assert p.rot.shape == (4, 34, 3) and p.tag.shape == (36, 3)
    assert p.vel.dtype == np.float32 and p.tag.dtype == bool


def test_reference_pose_every_value_tagged():
    p = PoseBatch.reference(4, 1.25)
    assert p.tag.all()
    assert np.all(p.vel == 0)
    assert np.all(p.root[:2] == 0) and np.allclose(p.root[2], 1.25)
    for i in range(4):
        assert np.array_equal(p.rot[:, :, i].T, REFERENCE_ROTATIONS)
    # Bone 0 is the identity (the table's row 0), bone 2 the hips' (-0.5, 0.5, -0.5, 0.5).
    assert p.rot[:, 0, 0].tolist() == [0, 0, 0, 1]
    assert p.rot[:, 2, 0].tolist() == [-0.5, 0.5, -0.5, 0.5]
    assert p.is_finite()


def test_take_put_copy():
    rng = np.random.default_rng(0)
    p = random_pose(rng, 5)
    sub = p.take(np.array([3, 1]))
    assert len(sub) == 2
    assert np.array_equal(sub.rot[:, :, 0], p.rot[:, :, 3])
    q = PoseBatch.reference(5, 1.0)
    q.put(np.array([0, 4]), sub)
    assert np.array_equal(q.rot[:, :, 0], p.rot[:, :, 3])
    assert np.array_equal(q.vel[:, 4], p.vel[:, 1])
    assert not q.tag[:, 0].any() and q.tag[:, 1].all()
    c = p.copy()
    c.vel[:] = 99
    assert not np.any(p.vel == 99)
    s = p.take(slice(1, 3))
    assert np.array_equal(s.root, p.root[:, 1:3])


def test_is_finite_sees_nan():
    p = PoseBatch.reference(2, 1.0)
    p.rot[1, 5, 1] = np.nan
    assert not p.is_finite()


# ---------------------------------------------------------------- the tag table


def slerp1(a, b, w):
    return quat.slerp(a.astype(DTYPE), b.astype(DTYPE), w)


@pytest.mark.parametrize("lt, ut", [(False, False), (True, False), (False, True), (True, True)])
def test_tag_table_bones_1_to_33_and_root(lt, ut):
    rng = np.random.default_rng(1)
    lo, up = random_pose(rng, 1, lt), random_pose(rng, 1, ut)
    w = 0.3
    out = blend(lo, up, w)
    if lt and ut:
        # Both defaults: the lower pose's value, still tagged.
        assert np.array_equal(out.rot[:, 1:], lo.rot[:, 1:])
        assert np.array_equal(out.root, lo.root)
        assert out.tag[TAG_ROOT].all() and out.tag[TAG_BONE + 1:].all()
    else:
        # One or none tagged: slerp / lerp (even with a default), untagged.
        for b in range(1, 34):
            assert np.allclose(out.rot[:, b, 0], slerp1(lo.rot[:, b, 0], up.rot[:, b, 0], w), atol=1e-6)
        assert np.allclose(out.root, lo.root + (up.root - lo.root) * w, atol=1e-6)
        assert not out.tag[TAG_ROOT].any() and not out.tag[TAG_BONE + 1:].any()
        # Really a mix: neither side as is.
        assert not np.allclose(out.rot[:, 1:], lo.rot[:, 1:])
        assert not np.allclose(out.rot[:, 1:], up.rot[:, 1:])


@pytest.mark.parametrize("lt, ut", [(False, False), (True, False), (False, True), (True, True)])
def test_tag_table_motion_channels(lt, ut):
    rng = np.random.default_rng(2)
    lo, up = random_pose(rng, 1, lt), random_pose(rng, 1, ut)
    w = 0.4
    out = blend(lo, up, w)
    vel, b0 = out.vel[:, 0], out.rot[:, 0, 0]
    if lt and not ut:
        # The lower side is a default: the upper's motion is copied, untagged.
        assert np.array_equal(vel, up.vel[:, 0])
        assert np.array_equal(b0, up.rot[:, 0, 0])
        assert not out.tag[TAG_VELOCITY, 0] and not out.tag[TAG_BONE, 0]
    elif ut and not lt:
        # The upper side is a default: the lower's is copied (untagged, as it was).
        assert np.array_equal(vel, lo.vel[:, 0])
        assert np.array_equal(b0, lo.rot[:, 0, 0])
        assert not out.tag[TAG_VELOCITY, 0] and not out.tag[TAG_BONE, 0]
    elif lt and ut:
        assert np.array_equal(vel, lo.vel[:, 0])
        assert np.array_equal(b0, lo.rot[:, 0, 0])
        assert out.tag[TAG_VELOCITY, 0] and out.tag[TAG_BONE, 0]
    else:
        assert np.allclose(vel, lo.vel[:, 0] + (up.vel[:, 0] - lo.vel[:, 0]) * w, atol=1e-6)
        assert np.allclose(b0, slerp1(lo.rot[:, 0, 0], up.rot[:, 0, 0], w), atol=1e-6)
        assert not out.tag[TAG_VELOCITY, 0] and not out.tag[TAG_BONE, 0]


def test_motion_rule_differs_from_the_bone_rule():
    # The same half-default pair: bone 5 is slerped, bone 0 and the velocity are copied.
    rng = np.random.default_rng(3)
    lo, up = random_pose(rng, 1, False), random_pose(rng, 1, False)
    up.tag[:] = True
    out = blend(lo, up, 0.5)
    assert np.array_equal(out.rot[:, 0], lo.rot[:, 0])
    assert np.array_equal(out.vel, lo.vel)
    assert not same_rotation(out.rot[:, 5, 0], lo.rot[:, 5, 0])


def test_a_clip_without_root_motion_does_not_damp_the_other():
    # Upper: a pose sampled from a clip with no section A and no bone 0 channel.
    rng = np.random.default_rng(4)
    walking = random_pose(rng, 1, False)
    still = PoseBatch.reference(1, 1.0)
    for w in (0.1, 0.5, 0.9):
        out = blend(walking, still, w)
        assert np.array_equal(out.vel, walking.vel)
        assert np.array_equal(out.rot[:, 0], walking.rot[:, 0])
        out = blend(still, walking, w)
        assert np.array_equal(out.vel, walking.vel)
        assert np.array_equal(out.rot[:, 0], walking.rot[:, 0])


def test_tags_per_channel_and_per_pose():
    # Mixed tags in one batch: each (channel, pose) follows its own row of the table.
    rng = np.random.default_rng(5)
    lo, up = random_pose(rng, 4), random_pose(rng, 4)
    lo.tag[:] = np.array([True, False, True, False])[None, :]
    up.tag[:] = np.array([True, True, False, False])[None, :]
    lo.tag[TAG_BONE + 7, 1] = True                       # a single bone both tagged in pose 1
    out = blend(lo, up, np.float32(0.5))
    assert out.tag[:, 0].all()                           # both tagged
    assert np.array_equal(out.rot[:, :, 0], lo.rot[:, :, 0])
    assert out.tag[TAG_BONE + 7, 1] and not out.tag[TAG_BONE + 6, 1]
    assert np.array_equal(out.rot[:, 7, 1], lo.rot[:, 7, 1])
    assert np.array_equal(out.vel[:, 1], lo.vel[:, 1])   # upper tagged: lower copied
    assert np.array_equal(out.vel[:, 2], up.vel[:, 2])   # lower tagged: upper copied
    assert not out.tag[:, 3].any()
    for i in (1, 2, 3):
        for b in (3, 20):
            assert np.allclose(out.rot[:, b, i], slerp1(lo.rot[:, b, i], up.rot[:, b, i], 0.5), atol=1e-6)


# ---------------------------------------------------------------- weights


def test_weight_0_gives_lower_and_1_gives_upper():
    rng = np.random.default_rng(6)
    lo, up = random_pose(rng, 3), random_pose(rng, 3)
    out = blend(lo, up, 0.0)
    assert all_same_rotation(out.rot, lo.rot)
    assert np.allclose(out.vel, lo.vel) and np.allclose(out.root, lo.root)
    out = blend(lo, up, 1.0)
    assert all_same_rotation(out.rot, up.rot)
    assert np.allclose(out.vel, up.vel) and np.allclose(out.root, up.root)


def test_per_pose_weights():
    rng = np.random.default_rng(7)
    lo, up = random_pose(rng, 3), random_pose(rng, 3)
    w = np.array([0.0, 0.5, 1.0], dtype=DTYPE)
    out = blend(lo, up, w)
    for i in range(3):
        single = blend(lo.take(np.array([i])), up.take(np.array([i])), w[i])
        assert np.allclose(out.rot[:, :, i], single.rot[:, :, 0], atol=1e-6)
        assert np.allclose(out.vel[:, i], single.vel[:, 0])


def test_half_way_blend_is_half_the_angle():
    lo, up = PoseBatch.reference(1, 1.0), PoseBatch.reference(1, 1.0)
    lo.tag[:] = False
    up.tag[:] = False
    up.rot[:, 5, 0] = [0, 0, math.sin(0.4), math.cos(0.4)]      # 0.8 rad about z
    lo.rot[:, 5, 0] = [0, 0, 0, 1]
    out = blend(lo, up, 0.5)
    assert abs(float(quat.angle_about_z(out.rot[:, 5, 0])) - 0.4) < 1e-6


def test_blend_rejects_length_mismatch():
    with pytest.raises(ValueError):
        blend(PoseBatch.reference(2, 1.0), PoseBatch.reference(3, 1.0), 0.5)


def test_blend_rejects_bad_mask():
    with pytest.raises(ValueError):
        blend(PoseBatch.reference(1, 1.0), PoseBatch.reference(1, 1.0), 0.5, mask=np.ones(33, bool))


def test_blend_into_given_output_and_in_place():
    rng = np.random.default_rng(8)
    lo, up = random_pose(rng, 2), random_pose(rng, 2)
    want = blend(lo, up, 0.25)
    out = PoseBatch.empty(2)
    assert blend(lo, up, 0.25, out=out) is out
    assert np.array_equal(out.rot, want.rot) and np.array_equal(out.tag, want.tag)
    lo.tag[::2] = True
    up.tag[1::3] = True
    for mask in (None, subtree_mask(16), subtree_mask(1)):
        want = blend(lo, up, 0.25, mask=mask)
        for into_upper in (False, True):
            l2, u2 = lo.copy(), up.copy()
            o = u2 if into_upper else l2
            blend(l2, u2, 0.25, out=o, mask=mask)
            for f in ("vel", "root", "rot", "tag"):
                assert np.array_equal(getattr(o, f), getattr(want, f)), (f, into_upper)


# ---------------------------------------------------------------- subtree blends


def test_subtree_blend_left_arm_changes_only_bones_16_to_21():
    rng = np.random.default_rng(9)
    lo, up = random_pose(rng, 2), random_pose(rng, 2)
    mask = subtree_mask(16)
    out = blend(lo, up, 0.6, mask=mask)
    arm = list(range(16, 22))
    for b in range(34):
        if b in arm:
            assert not np.allclose(out.rot[:, b], lo.rot[:, b]), b
            for i in range(2):
                assert np.allclose(out.rot[:, b, i], slerp1(lo.rot[:, b, i], up.rot[:, b, i], 0.6), atol=1e-6)
        else:
            assert np.array_equal(out.rot[:, b], lo.rot[:, b]), b
    # Motion channels and the root belong to bones 0 and 1: not in the arm's subtree.
    assert np.array_equal(out.vel, lo.vel)
    assert np.array_equal(out.root, lo.root)
    assert np.array_equal(out.tag, lo.tag)


def test_subtree_blend_keeps_the_lower_tags_outside():
    rng = np.random.default_rng(10)
    lo, up = random_pose(rng, 1, True), random_pose(rng, 1, False)
    out = blend(lo, up, 0.5, mask=subtree_mask(2))
    legs = subtree_mask(2)
    assert out.tag[TAG_BONE:][~legs].all()           # untouched: lower's tags
    assert not out.tag[TAG_BONE:][legs].any()        # blended with a non-default: untagged
    assert out.tag[TAG_VELOCITY] and out.tag[TAG_ROOT]


def test_full_mask_equals_no_mask():
    rng = np.random.default_rng(11)
    lo, up = random_pose(rng, 3), random_pose(rng, 3)
    lo.tag[::3] = True
    up.tag[1::4] = True
    a = blend(lo, up, 0.35)
    b = blend(lo, up, 0.35, mask=subtree_mask(0))
    assert np.array_equal(a.rot, b.rot) and np.array_equal(a.vel, b.vel)
    assert np.array_equal(a.root, b.root) and np.array_equal(a.tag, b.tag)


def test_pelvis_subtree_blends_the_root_but_not_the_motion():
    rng = np.random.default_rng(12)
    lo, up = random_pose(rng, 1), random_pose(rng, 1)
    out = blend(lo, up, 0.5, mask=subtree_mask(1))
    assert np.allclose(out.root, (lo.root + up.root) / 2, atol=1e-6)
    assert np.array_equal(out.vel, lo.vel)
    assert np.array_equal(out.rot[:, 0], lo.rot[:, 0])
