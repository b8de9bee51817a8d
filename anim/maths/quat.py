"""Quaternion maths on structure-of-arrays data: component first, humans last.

A quaternion array has shape (4, ...) holding x, y, z, w; a vector array (3, ...).
Keeping the parts in separate rows with the batch on the last axis is what makes
numpy fast here (an interleaved layout is several times slower).

Original: 0x00336bb8 vector lerp, 0x00336bf8 quaternion nlerp, 0x00336a00 Quat_Slerp.
"""
from __future__ import annotations

import numpy as np

from scuffle.anim.maths import detmath

__all__ = ["mul", "rotate", "nlerp", "slerp", "normalise", "conjugate", "identity",
           "scale_turn", "angle_about_z", "SLERP_LINEAR_DOT"]

# Above this |dot| slerp falls back to a normalised lerp (sin(theta) too small to divide by).
SLERP_LINEAR_DOT = 0.9995


def identity(shape: tuple[int, ...] = (), dtype=np.float32) -> np.ndarray:
    """The identity quaternion(s), shape (4, *shape)."""
    q = np.zeros((4, *shape), dtype=dtype)
    q[3] = 1
    return q


def mul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Hamilton product a x b (apply b, then a), broadcasting over the trailing axes.

    With ``out`` (shape (4, ...) of the result) the sums accumulate in place.
    """
    ax, ay, az, aw = a[0], a[1], a[2], a[3]
    bx, by, bz, bw = b[0], b[1], b[2], b[3]
    if out is None:
        x = aw * bx + ax * bw + ay * bz - az * by
        y = aw * by - ax * bz + ay * bw + az * bx
        z = aw * bz + ax * by - ay * bx + az * bw
        w = aw * bw - ax * bx - ay * by - az * bz
        return np.stack([x, y, z, w])
    t = np.empty_like(out[0])
    for o, terms in ((out[0], ((aw, bx, 1), (ax, bw, 1), (ay, bz, 1), (az, by, -1))),
                     (out[1], ((aw, by, 1), (ax, bz, -1), (ay, bw, 1), (az, bx, 1))),
                     (out[2], ((aw, bz, 1), (ax, by, 1), (ay, bx, -1), (az, bw, 1))),
                     (out[3], ((aw, bw, 1), (ax, bx, -1), (ay, by, -1), (az, bz, -1)))):
        (p0, q0, _), *rest = terms
        np.multiply(p0, q0, out=o)
        for p, q, sign in rest:
            np.multiply(p, q, out=t)
            if sign > 0:
                o += t
            else:
                o -= t
    return out


def conjugate(q: np.ndarray) -> np.ndarray:
    """The inverse of unit quaternions q."""
    return np.stack([-q[0], -q[1], -q[2], q[3]])


def rotate(q: np.ndarray, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Rotate vectors v (3, ...) by unit quaternions q (4, ...): v + 2 u x (u x v + w v).

    With ``out`` (shape (3, ...) of the result) it is written there.
    """
    ux, uy, uz, w = q[0], q[1], q[2], q[3]
    vx, vy, vz = v[0], v[1], v[2]
    cx = uy * vz - uz * vy + w * vx
    cy = uz * vx - ux * vz + w * vy
    cz = ux * vy - uy * vx + w * vz
    if out is None:
        return np.stack([vx + 2 * (uy * cz - uz * cy),
                         vy + 2 * (uz * cx - ux * cz),
                         vz + 2 * (ux * cy - uy * cx)])
    for o, (p1, q1, p2, q2, base) in zip(out, ((uy, cz, uz, cy, vx), (uz, cx, ux, cz, vy), (ux, cy, uy, cx, vz))):
        np.multiply(p1, q1, out=o)
        o -= p2 * q2
        o *= 2
        o += base
    return out


def normalise(q: np.ndarray) -> np.ndarray:
    """q / |q| over the first axis; a zero quaternion becomes the identity (never NaN)."""
    n = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    zero = n == 0
    n = np.where(zero, 1, n)
    out = q / n
    if np.any(zero):
        out[3] = np.where(zero, 1, out[3])
    return out


def nlerp(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    """Normalised lerp with the sign flip: b is negated where a . b < 0, then normalised.

    Original: 0x00336bf8 (quaternion nlerp).
    """
    dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    s = np.where(dot < 0, -1, 1).astype(a.dtype)
    return normalise(a + (b * s - a) * t)


def slerp(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    """Spherical lerp from a (t = 0) to b (t = 1) along the shorter arc; t clamped to [0, 1].

    Near-parallel pairs (|dot| > SLERP_LINEAR_DOT) use a normalised lerp. The weights
    sin((1 - t) theta) / sin(theta) and sin(t theta) / sin(theta) are computed in float64
    from scuffle.anim.maths.detmath (1 / sin(theta) as 1 / sqrt(1 - dot^2)) and rounded to a's dtype:
    for float32 the same operations in the same order as the pose kernel's slerp, so the
    two agree bit for bit on every CPU. Original: 0x00336a00 Quat_Slerp.
    """
    dtype = a.dtype
    one = dtype.type(1)
    t = np.clip(np.asarray(t, dtype=dtype), 0, 1)
    dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    d = np.minimum(np.abs(dot), one)
    linear = d > dtype.type(SLERP_LINEAR_DOT)
    dd = d.astype(np.float64)
    td = t.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = detmath.acos(dd)
        inv = 1.0 / np.sqrt(1.0 - dd * dd)
        wa = (detmath.sin_cos((1.0 - td) * theta)[0] * inv).astype(dtype)
        wb = (detmath.sin_cos(td * theta)[0] * inv).astype(dtype)
    wa = np.where(linear, one - t, wa)
    wb = np.where(linear, np.where(dot >= 0, t, -t), np.where(dot < 0, -wb, wb))
    out = a * wa + b * wb
    if np.any(linear):
        n = np.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2] + out[3] * out[3])
        zero = n == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            lerped = out / np.where(zero, one, n)
        lerped = np.where(zero, identity(zero.shape, dtype), lerped)
        out = np.where(linear, lerped, out)
    return out.astype(dtype, copy=False)


def scale_turn(q: np.ndarray, rate, eps: float = 5e-7) -> np.ndarray:
    """Scale a turn by the rate: Quat_Slerp(rate, identity, q), the factor clamped to [0, 1].

    Skipped (q returned as is) where the rate is exactly 1 or w is within ``eps`` of 1.
    The result is q's axis turned by q's angle x rate (w >= 0 for a decoded key): with the
    half angle h = acos(w) and r the rate, (q.xyz x sin(r h) / sin h, cos(r h)), sin h as
    sqrt(1 - w^2), in float64 from anim.maths.detmath and the factors rounded to q's dtype (the
    pose kernel's operations in its order: the same bits).
    Original: 0x00104ce0 AnimCursor_SamplePose (bone 0), 0x00336a00 Quat_Slerp.
    """
    rate = np.asarray(rate, dtype=q.dtype)
    skip = (rate == 1) | (np.abs(1 - q[3]) <= q.dtype.type(eps))
    if np.all(skip):
        return q
    r = np.clip(rate, 0, 1).astype(np.float64)
    w = np.clip(q[3], -1, 1).astype(np.float64)
    half = detmath.acos(w)                          # the key's half angle
    sh = np.sqrt(1.0 - w * w)
    sh = np.where(sh == 0.0, 1.0, sh)
    s_rh, c_rh = detmath.sin_cos(r * half)
    k = (s_rh / sh).astype(q.dtype)
    scaled = np.stack(np.broadcast_arrays(q[0] * k, q[1] * k, q[2] * k, c_rh.astype(q.dtype))).astype(q.dtype)
    return np.where(skip, q, scaled)


def angle_about_z(q: np.ndarray) -> np.ndarray:
    """The turn a = 2 acos(w) with the sign of the quaternion's z (radians).

    Original: 0x0023f238 Human_ApplyRootMotion (the turn).
    """
    a = 2.0 * detmath.acos(q[3])
    return np.where(q[2] < 0, -a, a)
