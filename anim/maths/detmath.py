"""Same bits on every machine: acos, asin, sin, cos and atan2 from + - * / and sqrt alone.

numpy picks the SIMD kernel of a transcendental ufunc (``np.arccos``, ``np.sin``...) by
the CPU it runs on, and libm has CPU-specific variants too, so their last bit differs
between machines (an AVX-512 ``np.arccos`` against libm's ``acos``, for one). IEEE 754
makes + - * / and sqrt correctly rounded everywhere: in Python's floats, in numpy's loops
(SIMD or not) and in numba's compiled code (fastmath off, no contraction into FMA). Every
angle that a trace, a pose or a bit-for-bit test depends on goes through this module.

Two forms of each function, one set of operations:

- the scalar forms (``acos_s``, ``asin_s``, ``sin_cos_s``, ``sin_cos_deg_s``, ``cos_pi_s``,
  ``atan2_s``) take and return Python floats; each is listed in ``JITABLE``, which
  anim.engine.kernels_maths hands to numba's ``register_jitable`` before it compiles them: plain Python
  when Python calls them, compiled into a kernel that calls them, so the kernels and the
  Python code run the same source. This module does not import numba itself, so that
  plain-Python users (the reference engine, anim.data.rates, anim.maths.quat) load without it;
- the array forms (``acos``, ``sin_cos_deg``, ...) take float64 arrays (or scalars),
  compute every branch with the same operations in the same order and pick with
  ``np.where``, so they equal the scalar forms bit for bit (tests/anim/test_detmath.py).

``hypot_s`` is sqrt(x^2 + y^2) as it is written (libm's hypot differs by build).

Method: acos and asin by fdlibm's rational R(z) = z P(z) / Q(z) on [0, 0.5] with its
reduction (1 - |x|) / 2 above 0.5; sin and cos by their Taylor series to degree 17 / 18
on |r| <= pi/4 after the quadrant is taken off (radians: pi/2 in two parts; degrees: 90
exactly; cos(pi x): 1/2 exactly); atan2 by asin of the smaller of |x|, |y| over the
radius. All within a few ulp of the correctly rounded value (the test pins the bounds).

Each kernel module (anim/kernels_*.py) pins this file's sha256 in its ``LINKED_SHA256``:
numba's disk cache is keyed on each function's own file, so an edit here must also change
them, or the kernels would keep the old machine code; tests/anim/test_kernels.py fails
until it does.

Bad input: NaN gives NaN and infinities give NaN (never an exception, never a hang);
acos and asin clamp their argument to [-1, 1].
"""
from __future__ import annotations

import math
from math import factorial

import numpy as np

__all__ = ["JITABLE", "acos_s", "asin_s", "sin_cos_s", "sin_cos_deg_s", "cos_pi_s", "atan2_s", "atan2_deg_s", "hypot_s",
           "acos", "sin_cos", "sin_cos_deg", "cos_pi", "atan2_deg", "DEG", "RAD"]

# The scalar forms and the helpers they call, in the order they are defined: anim.engine.kernels_maths
# registers each with numba (register_jitable) before its kernels compile them.
JITABLE: list = []


def _jitable(fn):
    """Lists ``fn`` in JITABLE (numba compiles it where a kernel calls it); returns it unchanged."""
    JITABLE.append(fn)
    return fn


PI = 3.14159265358979311600e+00           # the double nearest pi
PIO2_HI = 1.57079632679489655800e+00      # pi/2 = PIO2_HI + PIO2_LO
PIO2_LO = 6.12323399573676603587e-17
TWO_OVER_PI = 2.0 / PI
DEG = PI / 180.0                          # degrees -> radians (one multiply)
RAD = 180.0 / PI                          # radians -> degrees (one multiply)

# fdlibm's R(z) for asin / acos: asin(x) = x + x R(x^2) on |x| < 0.5.
_PS0 = 1.66666666666666657415e-01
_PS1 = -3.25565818622400915405e-01
_PS2 = 2.01212532134862925881e-01
_PS3 = -4.00555345006794114027e-02
_PS4 = 7.91534994289814532176e-04
_PS5 = 3.47933107596021167570e-05
_QS1 = -2.40339491173441421878e+00
_QS2 = 2.02094576023350569471e+00
_QS3 = -6.88283971605453293030e-01
_QS4 = 7.70381505559019352791e-02

# 1/n! for the Taylor series of sin (odd n) and cos (even n), each rounded once.
_F2, _F3, _F4, _F5, _F6, _F7, _F8, _F9 = (1.0 / factorial(n) for n in range(2, 10))
_F10, _F11, _F12, _F13, _F14, _F15, _F16, _F17, _F18 = (1.0 / factorial(n) for n in range(10, 19))

# The radius sqrt(x^2 + y^2) of atan2 and hypot: outside [2^-500, 2^500] the larger of |x|,
# |y| is first scaled by a power of two (exact), so that x^2 neither underflows to 0 (a
# division by zero: a human at 1e-320 m) nor overflows to inf. Inside it nothing changes.
_R_BIG, _R_SMALL = 2.0 ** 500, 2.0 ** -500
_R_DOWN, _R_UP = 2.0 ** -600, 2.0 ** 600


@_jitable
def _asin_r(z):
    """fdlibm's R(z) = z P(z) / Q(z), z in [0, 0.5]; floats or arrays alike."""
    p = z * (_PS0 + z * (_PS1 + z * (_PS2 + z * (_PS3 + z * (_PS4 + z * _PS5)))))
    q = 1.0 + z * (_QS1 + z * (_QS2 + z * (_QS3 + z * _QS4)))
    return p / q


@_jitable
def _sin_k(r):
    """sin(r) for |r| <= pi/4: Taylor to r^17, Horner in r^2; floats or arrays alike."""
    r2 = r * r
    p = _F17
    p = p * r2 - _F15
    p = p * r2 + _F13
    p = p * r2 - _F11
    p = p * r2 + _F9
    p = p * r2 - _F7
    p = p * r2 + _F5
    p = p * r2 - _F3
    return r + r * r2 * p


@_jitable
def _cos_k(r):
    """cos(r) for |r| <= pi/4: Taylor to r^18, Horner in r^2; floats or arrays alike."""
    r2 = r * r
    p = -_F18
    p = p * r2 + _F16
    p = p * r2 - _F14
    p = p * r2 + _F12
    p = p * r2 - _F10
    p = p * r2 + _F8
    p = p * r2 - _F6
    p = p * r2 + _F4
    p = p * r2 - _F2
    return 1.0 + r2 * p


@_jitable
def _floor(v):
    """floor(v) as a float, exact (v % 1.0 is exact); NaN and infinities give NaN."""
    return v - v % 1.0


# ------------------------------------------------------------------ scalar forms


@_jitable
def acos_s(x: float) -> float:
    """acos(x) in radians, x clamped to [-1, 1] (fdlibm's three ranges)."""
    x = min(max(x, -1.0), 1.0)
    if x < -0.5:
        z = (1.0 + x) * 0.5
        s = math.sqrt(z)
        return PI - 2.0 * (s + (_asin_r(z) * s - PIO2_LO))
    if x > 0.5:
        z = (1.0 - x) * 0.5
        s = math.sqrt(z)
        return 2.0 * (s + s * _asin_r(z))
    return PIO2_HI - (x - (PIO2_LO - x * _asin_r(x * x)))


@_jitable
def asin_s(x: float) -> float:
    """asin(x) in radians, x clamped to [-1, 1]."""
    x = min(max(x, -1.0), 1.0)
    a = abs(x)
    if a < 0.5:
        return x + x * _asin_r(x * x)
    z = (1.0 - a) * 0.5
    s = math.sqrt(z)
    t = PIO2_HI - (2.0 * (s + s * _asin_r(z)) - PIO2_LO)
    return -t if x < 0.0 else t


@_jitable
def _quadrant(q: float, sk: float, ck: float) -> tuple[float, float]:
    """(sin, cos) of r + q pi/2 from sin r and cos r, q in {0, 1, 2, 3}."""
    if q == 0.0:
        return sk, ck
    if q == 1.0:
        return ck, -sk
    if q == 2.0:
        return -sk, -ck
    return -ck, sk


@_jitable
def sin_cos_s(y: float) -> tuple[float, float]:
    """(sin y, cos y), y in radians (pi/2 taken off in two parts)."""
    n = _floor(y * TWO_OVER_PI + 0.5)
    r = (y - n * PIO2_HI) - n * PIO2_LO
    return _quadrant(n % 4.0, _sin_k(r), _cos_k(r))


@_jitable
def sin_cos_deg_s(d: float) -> tuple[float, float]:
    """(sin, cos) of d degrees (whole quarter turns taken off exactly in degrees)."""
    n = _floor(d / 90.0 + 0.5)
    r = (d - 90.0 * n) * DEG
    return _quadrant(n % 4.0, _sin_k(r), _cos_k(r))


@_jitable
def cos_pi_s(x: float) -> float:
    """cos(pi x) (half turns taken off exactly: x - n/2)."""
    n = _floor(2.0 * x + 0.5)
    r = (x - 0.5 * n) * PI
    return _quadrant(n % 4.0, _sin_k(r), _cos_k(r))[1]


@_jitable
def atan2_s(y: float, x: float) -> float:
    """atan2(y, x) in radians, in [-pi, pi]; (0, 0) gives 0."""
    ax, ay = abs(x), abs(y)
    if ax == 0.0 and ay == 0.0:
        return 0.0
    m = ax if ax > ay else ay
    if m > _R_BIG:
        ax, ay = ax * _R_DOWN, ay * _R_DOWN
    elif m < _R_SMALL:
        ax, ay = ax * _R_UP, ay * _R_UP
    r = math.sqrt(ax * ax + ay * ay)
    if ay <= ax:
        a = asin_s(ay / r)
    else:
        a = PIO2_HI - asin_s(ax / r)
    if x < 0.0:
        a = PI - a
    return -a if y < 0.0 else a


@_jitable
def hypot_s(x: float, y: float) -> float:
    """sqrt(x^2 + y^2) (two multiplies, an add and a sqrt: no libm hypot); outside
    [2^-500, 2^500] scaled by a power of two first, so it is 0 only for (0, 0)."""
    ax, ay = abs(x), abs(y)
    m = ax if ax > ay else ay
    if m > _R_BIG:
        return math.sqrt((ax * _R_DOWN) * (ax * _R_DOWN) + (ay * _R_DOWN) * (ay * _R_DOWN)) * _R_UP
    if m < _R_SMALL:
        return math.sqrt((ax * _R_UP) * (ax * _R_UP) + (ay * _R_UP) * (ay * _R_UP)) * _R_DOWN
    return math.sqrt(x * x + y * y)


@_jitable
def atan2_deg_s(y: float, x: float) -> float:
    """atan2(y, x) in degrees, in [-180, 180]."""
    return atan2_s(y, x) * RAD


# ------------------------------------------------------------------ array forms


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def acos(x) -> np.ndarray:
    """acos_s over an array (each branch computed, then picked): the same bits."""
    x = np.clip(_f64(x), -1.0, 1.0)
    zl = (1.0 + x) * 0.5
    sl = np.sqrt(zl)
    low = PI - 2.0 * (sl + (_asin_r(zl) * sl - PIO2_LO))
    zh = (1.0 - x) * 0.5
    sh = np.sqrt(zh)
    high = 2.0 * (sh + sh * _asin_r(zh))
    mid = PIO2_HI - (x - (PIO2_LO - x * _asin_r(x * x)))
    return np.where(x < -0.5, low, np.where(x > 0.5, high, mid))


def _asin_pos(a: np.ndarray) -> np.ndarray:
    """asin_s over an array of a in [0, 1]."""
    z = (1.0 - a) * 0.5
    s = np.sqrt(z)
    high = PIO2_HI - (2.0 * (s + s * _asin_r(z)) - PIO2_LO)
    return np.where(a < 0.5, a + a * _asin_r(a * a), high)


def _quadrants(q: np.ndarray, sk: np.ndarray, ck: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.where(q == 0.0, sk, np.where(q == 1.0, ck, np.where(q == 2.0, -sk, -ck)))
    c = np.where(q == 0.0, ck, np.where(q == 1.0, -sk, np.where(q == 2.0, -ck, sk)))
    return s, c


def sin_cos(y) -> tuple[np.ndarray, np.ndarray]:
    """sin_cos_s over an array: the same bits."""
    y = _f64(y)
    with np.errstate(invalid="ignore"):
        n = _floor(y * TWO_OVER_PI + 0.5)
        r = (y - n * PIO2_HI) - n * PIO2_LO
        return _quadrants(n % 4.0, _sin_k(r), _cos_k(r))


def sin_cos_deg(d) -> tuple[np.ndarray, np.ndarray]:
    """sin_cos_deg_s over an array: the same bits."""
    d = _f64(d)
    with np.errstate(invalid="ignore"):
        n = _floor(d / 90.0 + 0.5)
        r = (d - 90.0 * n) * DEG
        return _quadrants(n % 4.0, _sin_k(r), _cos_k(r))


def cos_pi(x) -> np.ndarray:
    """cos_pi_s over an array: the same bits."""
    x = _f64(x)
    with np.errstate(invalid="ignore"):
        n = _floor(2.0 * x + 0.5)
        r = (x - 0.5 * n) * PI
        return _quadrants(n % 4.0, _sin_k(r), _cos_k(r))[1]


def atan2_deg(y, x) -> np.ndarray:
    """atan2_deg_s over arrays: the same bits."""
    y, x = np.broadcast_arrays(_f64(y), _f64(x))
    ax, ay = np.abs(x), np.abs(y)
    m = np.where(ax > ay, ax, ay)
    f = np.where(m > _R_BIG, _R_DOWN, np.where(m < _R_SMALL, _R_UP, 1.0))
    ax, ay = ax * f, ay * f
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sqrt(ax * ax + ay * ay)
        small = np.where(ay <= ax, _asin_pos(ay / r), PIO2_HI - _asin_pos(ax / r))
    a = np.where(x < 0.0, PI - small, small)
    a = np.where(y < 0.0, -a, a)
    return np.where((ax == 0.0) & (ay == 0.0), 0.0, a) * RAD
