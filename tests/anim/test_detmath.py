"""anim.maths.detmath: the same bits on every machine, and close to the true values.

The array forms equal the scalar forms bit for bit, the scalar forms compiled by numba
equal them run by Python, and every function is within a few ulp of libm (used here only
as the yardstick of accuracy, never in the code under test). The fade curve (Fades,
L263-267) and the headings' quarter turns are exact where the spec's numbers need them.
The kernel modules pin detmath's source (tests/anim/test_kernels.py: numba's cache is keyed
on each kernel's own file).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scuffle.anim.maths import detmath as D
from scuffle.anim.playback.tasks import fade_weight

from jitprobe import probe

# The compiled forms run in a wrapper whose machine code is cached for this tree
# (tests/jitprobe.py).
COMPILED_FORMS = """
from numba import njit
from scuffle.anim.maths import detmath as D

@njit(cache=True)
def run(x, y, d, out):
    for i in range(x.shape[0]):
        out[i, 0] = D.acos_s(x[i])
        out[i, 1], out[i, 2] = D.sin_cos_s(y[i])
        out[i, 3], out[i, 4] = D.sin_cos_deg_s(d[i])
        out[i, 5] = D.cos_pi_s(x[i] * 3.0)
        out[i, 6] = D.atan2_deg_s(x[i], y[i])
        out[i, 7] = D.hypot_s(x[i], y[i])
"""

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

RNG = np.random.default_rng(20261201)
UNIT = np.concatenate([np.linspace(-1.0, 1.0, 40_001), RNG.uniform(-1.0, 1.0, 40_000),
                       [-1.0, 1.0, 0.0, -0.0, 0.5, -0.5, np.nextafter(0.5, 1), np.nextafter(-0.5, -1),
                        1 - 2.0 ** -52, -1 + 2.0 ** -52, 5e-324]])
RADIANS = np.concatenate([np.linspace(-20.0, 20.0, 40_001), RNG.uniform(-4.0, 4.0, 40_000),
                          [0.0, math.pi / 4, math.pi / 2, math.pi, -math.pi, 2 * math.pi]])
DEGREES = np.concatenate([np.linspace(-720.0, 720.0, 28_801), RNG.uniform(-180.0, 180.0, 40_000),
                          np.arange(-360.0, 361.0, 15.0)])


def _ulps(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want) / np.spacing(np.maximum(np.abs(want), 1e-300))))


def test_acos_is_within_one_ulp_of_libm():
    assert _ulps(D.acos(UNIT), np.array([math.acos(x) for x in UNIT])) <= 1.0


def test_asin_and_atan2_are_within_a_few_ulp():
    got = np.array([D.asin_s(float(x)) for x in UNIT[::5]])
    want = np.array([math.asin(x) for x in UNIT[::5]])
    assert np.max(np.abs(got - want)) <= 4 * np.spacing(1.0)
    y, x = RNG.uniform(-5, 5, 20_000), RNG.uniform(-5, 5, 20_000)
    x[:50], y[50:100] = 0.0, 0.0
    want = np.array([math.degrees(math.atan2(a, b)) for a, b in zip(y, x)])
    assert np.max(np.abs(D.atan2_deg(y, x) - want)) < 1e-13


def test_sin_and_cos_are_within_an_ulp_of_the_argument():
    """Within an ulp of max(1, |y|) (the reduction by pi/2 costs an ulp of y); exact enough
    for the slerp's and the turn's angles, which stay in [0, pi]."""
    s, c = D.sin_cos(RADIANS)
    bound = np.spacing(np.maximum(1.0, np.abs(RADIANS)))
    assert np.all(np.abs(s - [math.sin(v) for v in RADIANS]) <= bound)
    assert np.all(np.abs(c - [math.cos(v) for v in RADIANS]) <= bound)
    small = np.abs(RADIANS) <= math.pi
    assert np.max(np.abs(s - np.sin(RADIANS))[small]) <= np.spacing(1.0)


def test_degrees_take_whole_quarter_turns_off_exactly():
    """A heading of 0, 90, 180, -90 degrees turns by exact unit axes (no 6e-17 residue)."""
    assert D.sin_cos_deg_s(0.0) == (0.0, 1.0)
    assert D.sin_cos_deg_s(90.0) == (1.0, 0.0)
    assert D.sin_cos_deg_s(180.0) == (0.0, -1.0)
    assert D.sin_cos_deg_s(-90.0) == (-1.0, 0.0)
    s, c = D.sin_cos_deg(DEGREES)
    assert np.max(np.abs(s - np.sin(np.radians(DEGREES)))) < 4e-16 * 10
    assert np.max(np.abs(c - np.cos(np.radians(DEGREES)))) < 4e-16 * 10
    assert np.max(np.abs(s * s + c * c - 1.0)) <= 4 * np.spacing(1.0)


def test_the_fade_curve_from_the_spec():
    """w_old = (1 + cos(pi t / d)) / 2: 1 at the start, 0 at the end, 0.5 half way, d = 0
    gives 0 at once (Fades, L265); symmetric about the middle."""
    assert fade_weight(0.0, 0.15) == 1.0
    assert fade_weight(0.15, 0.15) == 0.0
    assert fade_weight(0.075, 0.15) == 0.5
    assert fade_weight(0.0, 0.0) == 0.0
    for t in np.linspace(0.0, 1.0, 101):
        assert abs(fade_weight(t, 1.0) - (1 + math.cos(math.pi * t)) / 2) <= 2 * np.spacing(1.0)
        assert abs(fade_weight(t, 1.0) + fade_weight(1.0 - t, 1.0) - 1.0) <= 2 * np.spacing(1.0)


def test_array_forms_equal_scalar_forms_bit_for_bit():
    assert np.array_equal(D.acos(UNIT), [D.acos_s(float(x)) for x in UNIT], equal_nan=True)
    s, c = D.sin_cos(RADIANS)
    pairs = [D.sin_cos_s(float(v)) for v in RADIANS]
    assert np.array_equal(s, [p[0] for p in pairs]) and np.array_equal(c, [p[1] for p in pairs])
    s, c = D.sin_cos_deg(DEGREES)
    pairs = [D.sin_cos_deg_s(float(v)) for v in DEGREES]
    assert np.array_equal(s, [p[0] for p in pairs]) and np.array_equal(c, [p[1] for p in pairs])
    x = np.linspace(-2.0, 3.0, 50_001)
    assert np.array_equal(D.cos_pi(x), [D.cos_pi_s(float(v)) for v in x])
    y, xx = RNG.uniform(-3, 3, 20_000), RNG.uniform(-3, 3, 20_000)
    xx[:30], y[30:60] = 0.0, 0.0
    assert np.array_equal(D.atan2_deg(y, xx), [D.atan2_deg_s(float(a), float(b)) for a, b in zip(y, xx)])


def test_compiled_forms_equal_python_forms_bit_for_bit():
    """numba compiles the very same functions into the kernels: the same bits as Python."""
    run = probe(COMPILED_FORMS, "run")

    n = 20_000
    x, y, d = UNIT[:n].copy(), RADIANS[:n].copy(), DEGREES[:n].copy()
    out = np.empty((n, 8))
    run(x, y, d, out)
    for i in range(0, n, 7):
        want = (D.acos_s(x[i]), *D.sin_cos_s(y[i]), *D.sin_cos_deg_s(d[i]), D.cos_pi_s(x[i] * 3.0),
                D.atan2_deg_s(x[i], y[i]), D.hypot_s(x[i], y[i]))
        assert tuple(out[i]) == want, i


# Vectors whose x^2 + y^2 underflows to 0 or overflows to inf: a subnormal offset (a
# scenario's human at 1e-320 m made "face toward" divide by zero), a huge one.
EXTREME = [(1e-320, 0.0), (0.0, 1e-320), (1e-320, 1e-320), (-5e-324, 3e-310), (1e-170, -2e-170),
           (3e-160, 1e-161), (1e200, 1e200), (-1e300, 1e-300), (1e308, -1e308), (2.0 ** -500, 1.0)]


@pytest.mark.parametrize("y, x", EXTREME)
def test_atan2_and_hypot_are_finite_and_right_at_extreme_scales(y, x):
    got = D.atan2_deg_s(y, x)
    assert math.isfinite(got) and abs(got - math.degrees(math.atan2(y, x))) < 1e-12, got
    assert D.atan2_deg(np.array([y]), np.array([x]))[0] == got            # the array form: the same bits
    h, want = D.hypot_s(y, x), math.hypot(y, x)
    assert h > 0.0 and (abs(h - want) <= 4 * np.spacing(want) or want < 1e-300), (h, want)


def test_the_radius_scaling_changes_nothing_inside_its_range():
    """Between 2^-500 and 2^500 atan2 and hypot are the plain formulas, bit for bit."""
    y, x = RNG.uniform(-5, 5, 2_000), RNG.uniform(-5, 5, 2_000)
    for k in (-400, -20, 0, 30, 400):
        for a, b in zip(y * 2.0 ** k, x * 2.0 ** k):
            a, b = float(a), float(b)
            assert D.hypot_s(a, b) == math.sqrt(a * a + b * b)
            r = math.sqrt(a * a + b * b)
            small = D.asin_s(abs(a) / r) if abs(a) <= abs(b) else D.PIO2_HI - D.asin_s(abs(b) / r)
            small = D.PI - small if b < 0.0 else small
            assert D.atan2_s(a, b) == (-small if a < 0.0 else small)


def test_bad_numbers_give_nan_never_an_exception():
    nan, inf = float("nan"), float("inf")
    assert math.isnan(D.acos_s(nan))
    assert all(math.isnan(v) for v in D.sin_cos_s(nan) + D.sin_cos_s(inf) + D.sin_cos_deg_s(-inf))
    assert math.isnan(D.cos_pi_s(inf))
    assert np.isnan(D.sin_cos_deg(np.array([nan, inf]))[0]).all()
    assert D.acos_s(2.0) == 0.0 and D.acos_s(-7.0) == D.acos_s(-1.0)        # clamped to [-1, 1]


@pytest.mark.parametrize("fn", [D.acos_s, D.asin_s, D.cos_pi_s])
def test_scalar_forms_take_plain_floats(fn):
    assert isinstance(fn(0.25), float)
