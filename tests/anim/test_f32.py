"""PS2 FPU time arithmetic (anim/maths/f32.py): float32 with add and multiply rounded toward zero.

Spec: "When a clip ends" (uint(t x 30 + 0.5), the late ties at rates 0.75 and 0.9,
"that rests on the FPU rounding every add and multiply toward zero").
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from budget import examples

from scuffle.anim.maths import f32 as F

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

FLT_MAX = float(np.finfo(np.float32).max)


# ---------------------------------------------------------------- an exact reference


def _bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def trunc32(q: Fraction) -> float:
    """The float32 nearest to q in the direction of zero, from exact rational arithmetic.

    Independent of the module: a first guess, then stepped until the float32 is the
    largest (in magnitude) that does not exceed |q|.
    """
    if q == 0:
        return 0.0
    if abs(q) > FLT_MAX:
        return math.copysign(FLT_MAX, q)
    away = np.float32(math.copysign(math.inf, q))
    c = np.float32(float(q))
    while abs(Fraction(float(c))) > abs(q):
        c = np.nextafter(c, np.float32(0))
    while True:
        with np.errstate(over="ignore"):
            n = np.nextafter(c, away)
        if not np.isfinite(n) or abs(Fraction(float(n))) > abs(q):
            break
        c = n
    return float(c)


# Any finite float32, drawn from its bit pattern: every exponent is as likely as any
# other, so the pairs span wildly different magnitudes and both signs.
any_f32 = st.integers(0, 2**32 - 1).map(
    lambda b: struct.unpack("<f", struct.pack("<I", b))[0]).filter(math.isfinite)
plain_f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
f32s = st.one_of(any_f32, plain_f32)


@st.composite
def mixed_pairs(draw):
    """Pairs built to make the rounding matter: opposite signs, close or far magnitudes."""
    a = draw(plain_f32.filter(lambda v: v != 0 and abs(v) < 1e30))
    shift = draw(st.integers(-40, 40))
    m = draw(st.floats(0.5, 2.0, width=32))
    b = F.f32(-a * m * 2.0 ** shift) if draw(st.booleans()) else F.f32(a * m * 2.0 ** shift)
    assume(math.isfinite(b))
    return a, b


SETTINGS = settings(max_examples=examples(200), deadline=None)


# ---------------------------------------------------------------- scalar add / mul


@SETTINGS
@given(f32s, f32s)
def test_add_rounds_toward_zero(a, b):
    assert F.add(a, b) == trunc32(Fraction(a) + Fraction(b))


@SETTINGS
@given(mixed_pairs())
def test_add_mixed_signs_and_magnitudes(pair):
    a, b = pair
    assert F.add(a, b) == trunc32(Fraction(a) + Fraction(b))
    assert F.sub(a, b) == trunc32(Fraction(a) - Fraction(b))


@SETTINGS
@given(f32s, f32s)
def test_mul_rounds_toward_zero(a, b):
    assert F.mul(a, b) == trunc32(Fraction(a) * Fraction(b))


@SETTINGS
@given(mixed_pairs())
def test_mul_mixed_signs_and_magnitudes(pair):
    a, b = pair
    assert F.mul(a, b) == trunc32(Fraction(a) * Fraction(b))


def test_add_truncates_where_nearest_rounds_up():
    # 1 + 3/4 ulp: round-to-nearest gives 1 + ulp, toward zero gives 1.
    ulp = 2.0 ** -23
    b = F.f32(0.75 * ulp)
    assert float(np.float32(1.0) + np.float32(b)) == 1.0 + ulp
    assert F.add(1.0, b) == 1.0
    # The negative mirror truncates toward zero too (up, not down).
    assert F.add(-1.0, -b) == -1.0
    # Where the tail has the other sign the result steps below the representable sum.
    tiny = 2.0 ** -60
    assert F.add(1.0, -tiny) == float(np.nextafter(np.float32(1), np.float32(0)))
    assert F.add(-1.0, tiny) == -float(np.nextafter(np.float32(1), np.float32(0)))


def test_mul_truncates_where_nearest_rounds_up():
    # 0.1f x 3: the exact product lies between two float32s, nearer the upper one.
    a = F.f32(0.1)
    exact = Fraction(a) * 3
    nearest = float(np.float32(a) * np.float32(3))
    assert Fraction(nearest) > exact                      # nearest rounds up here
    assert F.mul(a, 3.0) == float(np.nextafter(np.float32(nearest), np.float32(0)))
    assert F.mul(a, 3.0) == trunc32(exact)
    assert F.mul(-a, 3.0) == -trunc32(exact)
    # DT x 0.75: the step of a 0.75 rate (spec, "When a clip ends").
    s = F.mul(F.DT, 0.75)
    assert s == trunc32(Fraction(F.DT) * Fraction(3, 4))
    assert s < float(np.float32(F.DT) * np.float32(0.75))


def test_overflow_saturates_at_flt_max():
    assert F.add(FLT_MAX, FLT_MAX) == FLT_MAX
    assert F.add(-FLT_MAX, -FLT_MAX) == -FLT_MAX
    assert F.mul(FLT_MAX, 2.0) == FLT_MAX
    assert F.mul(-FLT_MAX, 2.0) == -FLT_MAX


# ---------------------------------------------------------------- vectorised = scalar


@SETTINGS
@given(st.lists(st.tuples(f32s, f32s), min_size=1, max_size=40))
def test_vectorised_ops_give_the_scalar_bits(pairs):
    a = np.array([p[0] for p in pairs], dtype=np.float32)
    b = np.array([p[1] for p in pairs], dtype=np.float32)
    for vec, scal in ((F.add_v, F.add), (F.sub_v, F.sub), (F.mul_v, F.mul)):
        got = vec(a, b)
        assert got.dtype == np.float32
        want = np.array([scal(float(x), float(y)) for x, y in zip(a, b)], dtype=np.float32)
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist(), vec.__name__


@SETTINGS
@given(st.lists(mixed_pairs(), min_size=1, max_size=40))
def test_vectorised_mixed_pairs_give_the_scalar_bits(pairs):
    a = np.array([p[0] for p in pairs], dtype=np.float32)
    b = np.array([p[1] for p in pairs], dtype=np.float32)
    got_add, got_mul = F.add_v(a, b), F.mul_v(a, b)
    want_add = np.array([F.add(float(x), float(y)) for x, y in zip(a, b)], dtype=np.float32)
    want_mul = np.array([F.mul(float(x), float(y)) for x, y in zip(a, b)], dtype=np.float32)
    assert got_add.view(np.uint32).tolist() == want_add.view(np.uint32).tolist()
    assert got_mul.view(np.uint32).tolist() == want_mul.view(np.uint32).tolist()


def test_vectorised_overflow_saturates():
    a = np.array([FLT_MAX, -FLT_MAX], dtype=np.float32)
    assert F.add_v(a, a).tolist() == [FLT_MAX, -FLT_MAX]
    assert F.mul_v(a, np.float32(2)).tolist() == [FLT_MAX, -FLT_MAX]


# ---------------------------------------------------------------- constants and frames


def test_dt_is_float32_of_one_thirtieth():
    assert F.DT == float(np.float32(1 / 30))
    assert str(np.float32(F.DT)) == "0.033333335"
    assert _bits(F.DT) == 0x3D088889
    assert F.HALF_FRAME == float(np.float32(1 / 60))
    assert F.FRAMES_PER_SECOND == 30.0


@pytest.mark.parametrize("t, frame", [
    (0.0, 0), (0.01, 0), (F.f32(0.5 / 30 - 1e-6), 0), (F.f32(0.6 / 30), 1),
    (F.f32(1 / 30), 1), (F.f32(1.49 / 30), 1), (F.f32(1.51 / 30), 2),
    (F.f32(10 / 30), 10), (F.f32(59.4 / 30), 59), (F.f32(2.0), 60),
])
def test_frame_of_is_uint_t30_plus_half(t, frame):
    assert F.frame_of(t) == frame
    assert isinstance(F.frame_of(t), int)


def test_frame_of_uses_the_fpu_arithmetic():
    # t with t x 30 exactly 7.5 under exact arithmetic rounds up to frame 8; a time a
    # hair below it (the toward-zero sum, below) stays at 7.
    assert F.frame_of(0.25) == 8
    below = float(np.nextafter(np.float32(0.25), np.float32(0)))
    assert F.frame_of(below) == 7


@pytest.mark.parametrize("frames", [1, 2, 4, 16, 19, 21, 24, 26, 27, 60, 680])
def test_end_frame_of_a_whole_frame_duration(frames):
    assert F.end_frame(F.f32(frames / 30)) == frames


def test_end_frame_rounds_half_frames_up():
    assert F.end_frame(F.f32(2.5 / 30 + 1e-6)) == 3
    assert F.end_frame(F.f32(2.4 / 30)) == 2


# ---------------------------------------------------------------- the late tie


def _sum_steps(step: float, k: int, add) -> float:
    t = 0.0
    for _ in range(k):
        t = add(t, step)
    return t


def test_ten_steps_at_rate_075_land_below_the_tie():
    """10 x (DT x 0.75) is 7.5 frames exactly; the toward-zero sum falls a hair short,
    so the frame is 7, not 8 (the late tie of "When a clip ends")."""
    s = F.mul(F.DT, 0.75)
    t = _sum_steps(s, 10, F.add)
    assert t < 7.5 / 30
    assert F.mul(t, 30.0) < 7.5
    assert F.frame_of(t) == 7
    # Each add truncated: the same sum in exact arithmetic of the truncated results.
    t_exact = 0.0
    for _ in range(10):
        t_exact = trunc32(Fraction(t_exact) + Fraction(s))
    assert t == t_exact


def test_round_to_nearest_does_not_reproduce_the_late_tie():
    s = np.float32(F.DT) * np.float32(0.75)
    t = np.float32(0)
    for _ in range(10):
        t = np.float32(t + s)
    # numpy's float32 (round to nearest) lands on or above the tie: frame 8.
    assert float(t) >= 7.5 / 30
    assert int(np.float32(t * np.float32(30)) + np.float32(0.5)) == 8
    assert F.frame_of(_sum_steps(F.mul(F.DT, 0.75), 10, F.add)) == 7


def test_rate_09_tie_is_late_too():
    # 5 steps of 0.9 are 4.5 frames: a tie (the rate is a float32 constant, 0x00510264...).
    s = F.mul(F.DT, F.f32(0.9))
    t = _sum_steps(s, 5, F.add)
    assert F.mul(t, 30.0) < 4.5
    assert F.frame_of(t) == 4


def test_rate_one_steps_hit_whole_frames():
    t = _sum_steps(F.DT, 30, F.add)
    assert F.frame_of(t) == 30


def test_f32_rounds_to_nearest_like_rodata_constants():
    assert F.f32(1 / 30) == float(np.float32(1 / 30))
    assert F.f32(0.1) == float(np.float32(0.1))
    assert F.f32(1e39) == math.inf
    assert F.f32(-1e39) == -math.inf
