"""PS2 FPU time arithmetic: float32 with every add and multiply rounded toward zero.

The cursor's time, step and frame tests run on the Emotion Engine's FPU, which has
no round-to-nearest mode: every result is truncated toward zero. That truncation is
what makes a clip whose end falls exactly on a tie (k x r = F - 0.5 at rates 0.75
and 0.9) end one update late ("When a clip ends"; "Reading the tables").

Scalar helpers work on Python floats that hold float32 values; the ``*_v`` helpers
work elementwise on numpy float32 arrays and give the same bits.

Not emulated: the FPU's lack of infinities, NaNs and denormals. Cursor times stay
in the normal float32 range, so it never shows (docs/original.md, "Float policy").
"""
from __future__ import annotations

import math
import struct

import numpy as np

__all__ = [
    "f32", "add", "sub", "mul", "add_v", "sub_v", "mul_v", "FLT_MAX",
    "DT", "HALF_FRAME", "FRAMES_PER_SECOND", "frame_of", "end_frame",
]

_F = struct.Struct("<f")
_I = struct.Struct("<I")
FLT_MAX = 3.4028234663852886e38

FRAMES_PER_SECOND = 30.0
_INT_MAX = 2147483647.0      # the largest frame a float -> int conversion gives


def f32(x: float) -> float:
    """Round a Python float to the nearest float32 (how constants sit in .rodata).

    In: any float. Out: the float32 value as a Python float. Overflow gives +-inf.
    """
    try:
        return _F.unpack(_F.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _toward_zero(f: float) -> float:
    """The float32 next to ``f`` (nonzero, finite) in the direction of zero."""
    return _F.unpack(_I.pack(_I.unpack(_F.pack(f))[0] - 1))[0]


_TWO24 = 16777216.0
_MIN_NORMAL = 1.1754943508222875e-38     # 2^-126: below it float32 is subnormal


def _truncate_slow(r: float, err: float) -> float:
    """_truncate through struct (infinities, overflow and the subnormal range)."""
    if not math.isfinite(r):
        return r
    if abs(r) > FLT_MAX:
        return math.copysign(FLT_MAX, r)
    f = f32(r)
    if math.isinf(f):  # r rounded up past FLT_MAX
        return math.copysign(FLT_MAX, r)
    if f == r:
        if err != 0.0 and f != 0.0 and (err < 0.0) != (f < 0.0):
            return _toward_zero(f)
        return f
    if abs(f) > abs(r):
        return _toward_zero(f)
    return f


def _truncate(r: float, err: float) -> float:
    """Truncate the exact value ``r + err`` (r a double, err its tail) to float32.

    The normal range keeps 24 significant bits with frexp / ldexp (exact scalings by
    powers of two); the rest goes through struct.
    """
    a = r if r >= 0.0 else -r
    if not (_MIN_NORMAL <= a <= FLT_MAX):
        return r if r == 0.0 and err == 0.0 else _truncate_slow(r, err)
    m, e = math.frexp(r)
    sm = m * _TWO24                      # exact: 0.5 <= |m| < 1, so |sm| in [2^23, 2^24)
    k = float(int(sm))                   # toward zero
    if k == sm and err != 0.0 and (err < 0.0) != (r < 0.0):
        # r is a float32 and the exact value lies just inside it: one step toward zero
        if k == 8388608.0 or k == -8388608.0:      # a power of two: the step below is finer
            return math.ldexp(math.copysign(_TWO24 - 1.0, k), e - 25)
        k -= 1.0 if k > 0 else -1.0
    return math.ldexp(k, e - 24)


def add(a: float, b: float) -> float:
    """float32 a + b rounded toward zero (both inputs float32 values)."""
    r = a + b
    bb = r - a
    err = (a - (r - bb)) + (b - bb)  # TwoSum: a + b == r + err exactly
    return _truncate(r, err)


def sub(a: float, b: float) -> float:
    """float32 a - b rounded toward zero."""
    return add(a, -b)


def mul(a: float, b: float) -> float:
    """float32 a x b rounded toward zero (the double product of two float32s is exact)."""
    return _truncate(a * b, 0.0)


# The constants the code reads from .rodata, as float32 (nearest).
DT = f32(1.0 / 30.0)          # 0x005102cc, 0.033333335
HALF_FRAME = f32(1.0 / 60.0)  # D - 1/60 in the overshoot


def frame_of(t: float) -> int:
    """The cursor frame uint(t x 30 + 0.5), in the FPU's arithmetic.

    Original: 0x001044a0 AnimCursor_Advance (the frame test).
    """
    v = add(mul(t, FRAMES_PER_SECOND), 0.5)
    return int(min(v, _INT_MAX)) if v > 0.0 else 0      # saturates like the EE's cvt.w.s


def end_frame(duration: float) -> int:
    """The clip's frame count F = uint(D x 30 + 0.5), in the FPU's arithmetic.

    Original: 0x001044a0 AnimCursor_Advance (the end test).
    """
    return frame_of(duration)


# ---------------------------------------------------------------- vectorised


def _truncate_v(r: np.ndarray, err: np.ndarray | None) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        f = r.astype(np.float32)
        af, ar = np.abs(f.astype(np.float64)), np.abs(r)
        adj = af > ar
        if err is not None:
            adj |= (f == r) & (err != 0.0) & (f != 0.0) & (np.signbit(err) != np.signbit(f))
        adj &= np.isfinite(r)
        if adj.any():
            f[adj] = np.nextafter(f[adj], np.float32(0.0))
        big = np.isfinite(r) & (ar > FLT_MAX)
        if big.any():
            f[big] = np.copysign(np.float32(FLT_MAX), r[big]).astype(np.float32)
    return f


def add_v(a: np.ndarray | np.floating, b: np.ndarray | np.floating) -> np.ndarray:
    """Elementwise float32 a + b rounded toward zero; returns a new float32 array."""
    a64 = np.asarray(a, dtype=np.float32).astype(np.float64)
    b64 = np.asarray(b, dtype=np.float32).astype(np.float64)
    r = a64 + b64
    bb = r - a64
    err = (a64 - (r - bb)) + (b64 - bb)
    return _truncate_v(r, err)


def sub_v(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise float32 a - b rounded toward zero."""
    return add_v(a, -np.asarray(b, dtype=np.float32))


def mul_v(a: np.ndarray | np.floating, b: np.ndarray | np.floating) -> np.ndarray:
    """Elementwise float32 a x b rounded toward zero."""
    a64 = np.asarray(a, dtype=np.float32).astype(np.float64)
    b64 = np.asarray(b, dtype=np.float32).astype(np.float64)
    return _truncate_v(a64 * b64, None)


def div(a: float, b: float) -> float:
    """float32 a / b rounded toward zero (from the correctly rounded double quotient).

    Rejected: b == 0 (ZeroDivisionError).
    """
    q = a / b
    r = q * b
    # the sign of the remainder a - q b tells on which side of q the exact quotient lies
    err = (a - r) / b if math.isfinite(q) else 0.0
    return _truncate(q, err)


def div_v(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise float32 a / b rounded toward zero (the same formula as ``div``)."""
    a64 = np.asarray(a, dtype=np.float32).astype(np.float64)
    b64 = np.asarray(b, dtype=np.float32).astype(np.float64)
    q = a64 / b64
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(np.isfinite(q), (a64 - q * b64) / b64, 0.0)
    return _truncate_v(q, err)


def frame_of_v(t: np.ndarray) -> np.ndarray:
    """Elementwise cursor frame uint(t x 30 + 0.5) in the FPU's arithmetic (int64)."""
    v = add_v(mul_v(t, np.float32(FRAMES_PER_SECOND)), np.float32(0.5))
    return np.where(v > 0, np.minimum(v, _INT_MAX), 0).astype(np.int64)
