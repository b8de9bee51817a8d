"""Quaternion maths (anim/maths/quat.py) against a plain float64 matrix reference.

Spec: "Playing a clip" (nlerp with the sign flip), "Blending" (slerp), "Root motion"
(the turn scaled by the rate: Quat_Slerp(rate, identity, key), the factor clamped,
skipped at rate 1 or w within 5e-7 of 1; the angle 2 acos(w) with z's sign).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from budget import examples

from scuffle.anim.maths import quat

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

SETTINGS = settings(max_examples=examples(200), deadline=None)


# ---------------------------------------------------------------- references


def matrix(q) -> np.ndarray:
    """3x3 rotation matrix of a unit quaternion (x, y, z, w), float64."""
    x, y, z, w = (float(v) for v in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def axis_angle(axis, angle) -> np.ndarray:
    axis = np.asarray(axis, float)
    axis = axis / np.linalg.norm(axis)
    return np.array([*(axis * math.sin(angle / 2)), math.cos(angle / 2)])


def same_rotation(a, b, atol=1e-6) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.allclose(a, b, atol=atol) or np.allclose(a, -b, atol=atol)


unit_quats = st.tuples(*[st.floats(-1, 1) for _ in range(4)]).filter(
    lambda v: sum(c * c for c in v) > 1e-2).map(lambda v: np.array(v) / np.linalg.norm(v))
vectors = st.tuples(*[st.floats(-10, 10) for _ in range(3)]).map(np.array)
fractions = st.floats(0, 1)


# ---------------------------------------------------------------- mul, rotate


@SETTINGS
@given(unit_quats, unit_quats)
def test_mul_is_matrix_product(a, b):
    ab = quat.mul(a, b)
    assert np.allclose(matrix(ab), matrix(a) @ matrix(b), atol=1e-12)
    assert abs(np.linalg.norm(ab) - 1) < 1e-12


@SETTINGS
@given(unit_quats, vectors)
def test_rotate_is_matrix_times_vector(q, v):
    assert np.allclose(quat.rotate(q, v), matrix(q) @ v, atol=1e-9)


def test_mul_applies_b_first():
    # 90 degrees about x, then 90 about z: x-axis -> x-axis -> y-axis.
    rx = axis_angle((1, 0, 0), math.pi / 2)
    rz = axis_angle((0, 0, 1), math.pi / 2)
    v = np.array([1.0, 0, 0])
    assert np.allclose(quat.rotate(quat.mul(rz, rx), v), [0, 1, 0])
    # y-axis: about x -> z, about z stays z.
    assert np.allclose(quat.rotate(quat.mul(rz, rx), np.array([0, 1.0, 0])), [0, 0, 1])


def test_mul_and_rotate_broadcast_over_batches():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 5, 7)); a /= np.linalg.norm(a, axis=0)
    b = rng.normal(size=(4, 5, 7)); b /= np.linalg.norm(b, axis=0)
    v = rng.normal(size=(3, 5, 7))
    ab, rv = quat.mul(a, b), quat.rotate(a, v)
    for i in range(5):
        for j in range(7):
            assert np.allclose(ab[:, i, j], quat.mul(a[:, i, j], b[:, i, j]))
            assert np.allclose(rv[:, i, j], matrix(a[:, i, j]) @ v[:, i, j])
    out = np.empty_like(ab)
    assert quat.mul(a, b, out=out) is out
    assert np.array_equal(out, ab)


def test_conjugate_inverts():
    q = axis_angle((1, 2, 3), 1.1)
    assert np.allclose(quat.mul(q, quat.conjugate(q)), [0, 0, 0, 1])


def test_identity_shape_and_value():
    i = quat.identity((2, 3))
    assert i.shape == (4, 2, 3) and i.dtype == np.float32
    assert np.all(i[:3] == 0) and np.all(i[3] == 1)


def test_normalise_zero_is_identity_not_nan():
    q = np.array([[0.0, 3.0], [0.0, 0.0], [0.0, 4.0], [0.0, 0.0]])
    n = quat.normalise(q)
    assert np.all(np.isfinite(n))
    assert np.allclose(n[:, 0], [0, 0, 0, 1])
    assert np.allclose(n[:, 1], [0.6, 0, 0.8, 0])


# ---------------------------------------------------------------- nlerp


@SETTINGS
@given(unit_quats, unit_quats, fractions)
def test_nlerp_flips_and_normalises(a, b, t):
    got = quat.nlerp(a, b, t)
    bb = -b if a @ b < 0 else b
    raw = a + (bb - a) * t
    if np.linalg.norm(raw) < 1e-6:
        return                                  # a and -b opposite: undefined, skip
    assert np.allclose(got, raw / np.linalg.norm(raw), atol=1e-9)
    assert abs(np.linalg.norm(got) - 1) < 1e-9


def test_nlerp_takes_the_short_way_when_the_dot_is_negative():
    a = np.array([0.9, 0, 0, math.sqrt(1 - 0.81)])          # w >= 0 (as decoded)
    b = np.array([-0.9, 0, 0, math.sqrt(1 - 0.81)])         # w >= 0, a . b < 0
    assert a @ b < 0
    mid = quat.nlerp(a, b, 0.5)
    # Shortest arc: half-way between a and -b is the x half-turn, not the identity.
    assert same_rotation(mid, [1, 0, 0, 0])
    assert not same_rotation(mid, [0, 0, 0, 1])
    # Endpoints: a at 0, -b (the same rotation as b) at 1.
    assert np.allclose(quat.nlerp(a, b, 0.0), a)
    assert np.allclose(quat.nlerp(a, b, 1.0), -b)


def test_nlerp_is_not_clamped():
    # The sampler carries a key backwards with a negative t; nlerp must extrapolate.
    a = axis_angle((0, 0, 1), 0.0)
    b = axis_angle((0, 0, 1), 0.2)
    back = quat.nlerp(a, b, -0.5)
    assert back[2] < 0          # turned the other way


# ---------------------------------------------------------------- slerp


@SETTINGS
@given(unit_quats, unit_quats, fractions)
def test_slerp_follows_the_shortest_great_arc(a, b, t):
    got = quat.slerp(a, b, t)
    assert abs(np.linalg.norm(got) - 1) < 1e-6
    bb = -b if a @ b < 0 else b
    dot = min(abs(a @ b), 1.0)
    theta = math.acos(dot)
    if dot > quat.SLERP_LINEAR_DOT:
        raw = a + (bb - a) * t
        want = raw / np.linalg.norm(raw)
    else:
        want = (math.sin((1 - t) * theta) * a + math.sin(t * theta) * bb) / math.sin(theta)
    assert np.allclose(got, want, atol=1e-6)
    # Constant angular speed: the angle from a is t x the arc.
    if dot <= quat.SLERP_LINEAR_DOT:
        assert abs(math.acos(min(1.0, abs(float(got @ a)))) - t * theta) < 1e-6


@SETTINGS
@given(unit_quats, unit_quats)
def test_slerp_endpoints(a, b):
    assert same_rotation(quat.slerp(a, b, 0.0), a)
    assert same_rotation(quat.slerp(a, b, 1.0), b)


@SETTINGS
@given(unit_quats, unit_quats, st.floats(-5, 5))
def test_slerp_clamps_t(a, b, t):
    got = quat.slerp(a, b, t)
    assert np.allclose(got, quat.slerp(a, b, min(max(t, 0.0), 1.0)), atol=1e-12)


def test_slerp_shortest_arc_with_negative_dot():
    a = axis_angle((0, 0, 1), 0.0)
    b = -axis_angle((0, 0, 1), math.radians(40))       # same rotation, negative dot
    mid = quat.slerp(a, b, 0.5)
    assert abs(math.degrees(quat.angle_about_z(mid)) - 20) < 1e-6
    # Half-way between 10 deg and 350 deg is 0 deg (the short way), not 180.
    a = axis_angle((0, 0, 1), math.radians(10))
    b = axis_angle((0, 0, 1), math.radians(350))
    assert abs(float(quat.angle_about_z(quat.slerp(a, b, 0.5)))) < 1e-6


def test_slerp_near_parallel_stays_unit():
    a = axis_angle((0, 0, 1), 0.0).astype(np.float32)
    for ang in (1e-7, 1e-4, 1e-2):
        b = axis_angle((1, 1, 0), ang).astype(np.float32)
        for t in (0.0, 0.3, 0.5, 1.0):
            got = quat.slerp(a, b, t)
            assert np.all(np.isfinite(got))
            assert abs(np.linalg.norm(got.astype(np.float64)) - 1) < 1e-6
        b = -b                                           # near-antiparallel (same rotation)
        got = quat.slerp(a, b, 0.5)
        assert abs(np.linalg.norm(got.astype(np.float64)) - 1) < 1e-6
    assert quat.slerp(a, a, 0.5).dtype == np.float32


def test_slerp_per_pose_weights_broadcast():
    a = np.stack([axis_angle((0, 0, 1), 0.0)] * 3, axis=1)
    b = np.stack([axis_angle((0, 0, 1), 1.0)] * 3, axis=1)
    got = quat.slerp(a, b, np.array([0.0, 0.5, 1.0]))
    assert np.allclose(quat.angle_about_z(got), [0.0, 0.5, 1.0])


# ---------------------------------------------------------------- scale_turn


@SETTINGS
@given(st.tuples(*[st.floats(-1, 1) for _ in range(3)]).filter(lambda v: sum(c * c for c in v) > 1e-4),
       st.floats(0.01, math.pi * 0.999), st.floats(0, 1).filter(lambda r: r != 1))
def test_scale_turn_same_axis_angle_times_rate(axis, angle, rate):
    q = axis_angle(axis, angle)                      # w >= 0, as a decoded key
    got = quat.scale_turn(q, rate)
    assert np.allclose(got, axis_angle(axis, angle * rate), atol=1e-9)
    # ... which is Quat_Slerp(rate, identity, key).
    assert np.allclose(got, quat.slerp(np.array([0, 0, 0, 1.0]), q, rate), atol=1e-6)


def test_scale_turn_3_degrees_at_075_is_225_degrees():
    q = axis_angle((0, 0, 1), math.radians(3)).astype(np.float32)
    got = quat.scale_turn(q, np.float32(0.75))
    assert abs(math.degrees(float(quat.angle_about_z(got))) - 2.25) < 1e-3
    q = axis_angle((0, 0, 1), math.radians(-3)).astype(np.float32)
    got = quat.scale_turn(q, np.float32(0.75))
    assert abs(math.degrees(float(quat.angle_about_z(got))) + 2.25) < 1e-3


def test_scale_turn_skipped_at_rate_one():
    q = axis_angle((0.3, 0.1, 1), 0.4).astype(np.float32)
    assert quat.scale_turn(q, 1.0).tobytes() == q.tobytes()
    assert quat.scale_turn(q, np.float32(1.0)).tobytes() == q.tobytes()


def test_scale_turn_skipped_when_w_within_5e7_of_one():
    # w a hair below 1 (4.2e-7 off): returned as is, whatever the rate.
    w = np.float32(1 - 7 * 2.0 ** -24)
    assert abs(1 - float(w)) <= 5e-7
    s = np.sqrt(np.float32(1) - w * w)
    q = np.array([0, 0, s, w], dtype=np.float32)
    assert quat.scale_turn(q, np.float32(0.5)).tobytes() == q.tobytes()
    # Beyond the epsilon (about 1.1e-6 off) it is scaled.
    w2 = np.float32(1 - 18 * 2.0 ** -24)
    assert abs(1 - float(w2)) > 5e-7
    q2 = np.array([0, 0, np.sqrt(np.float32(1) - w2 * w2), w2], dtype=np.float32)
    got = quat.scale_turn(q2, np.float32(0.5))
    assert got.tobytes() != q2.tobytes()
    assert got[2] < q2[2]
    # A custom epsilon moves the boundary.
    assert quat.scale_turn(q2, np.float32(0.5), eps=2e-6).tobytes() == q2.tobytes()


def test_scale_turn_factor_clamped():
    q = axis_angle((0, 0, 1), 0.5)
    assert np.allclose(quat.scale_turn(q, 2.0), q)                    # clamped to 1
    assert np.allclose(quat.scale_turn(q, -1.0), [0, 0, 0, 1])        # clamped to 0
    assert np.allclose(quat.scale_turn(q, 0.0), [0, 0, 0, 1])


def test_scale_turn_per_element_rates_and_skips():
    q = np.stack([axis_angle((0, 0, 1), 0.4), axis_angle((0, 0, 1), 0.4),
                  np.array([0, 0, 0, 1.0]), axis_angle((0, 0, 1), -0.2)], axis=1).astype(np.float32)
    rate = np.array([1.0, 0.5, 0.5, 0.75], dtype=np.float32)
    got = quat.scale_turn(q, rate)
    assert got[:, 0].tobytes() == q[:, 0].tobytes()
    assert np.allclose(quat.angle_about_z(got), [0.4, 0.2, 0.0, -0.15], atol=1e-6)
    assert got.dtype == np.float32


# ---------------------------------------------------------------- angle_about_z


@pytest.mark.parametrize("deg", [-170, -90, -3, 0, 3, 45, 90, 179])
def test_angle_about_z_sign_from_z(deg):
    q = axis_angle((0, 0, 1), math.radians(deg))
    assert abs(math.degrees(float(quat.angle_about_z(q))) - deg) < 1e-6


def test_angle_about_z_is_the_full_angle_with_zs_sign():
    # A turn about a tilted axis: a = 2 acos(w), sign from z (not the projection).
    q = axis_angle((1, 0, 0.2), 0.6)
    assert abs(float(quat.angle_about_z(q)) - 0.6) < 1e-9
    q = axis_angle((1, 0, -0.2), 0.6)
    assert abs(float(quat.angle_about_z(q)) + 0.6) < 1e-9
    batch = np.stack([axis_angle((0, 0, 1), 0.1), axis_angle((0, 0, -1), 0.1)], axis=1)
    assert np.allclose(quat.angle_about_z(batch), [0.1, -0.1])
