"""The root motion kernel: StateUpdate's root motion and move (Human_ApplyRootMotion).

``root_motion_step`` turns each body's pose root velocity by its heading, caps it,
moves the body and turns its heading, the same arithmetic as systems.motion's numpy path
(anim.maths.detmath's angles: the same bits on every CPU).

Spec: "Root motion". Original: Human_ApplyRootMotion.
"""
from __future__ import annotations

import math
import numpy as np
from scuffle.anim.maths.detmath import RAD
from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.kernels_maths import (jit_kinds, acos_s, sin_cos_deg_s)

# numba's on-disk cache of this module's kernels: True, or False with no writable cache
# folder (they then compile for the process only); a corrupt cache is set aside first.
CACHE = cache_setting(__file__)
_helper, _kernel, _inline = jit_kinds(CACHE)

__all__ = ["root_motion_step"]
# numba's cache is keyed on each function's own file: the sha256 of the kernel modules
# this one links (anim.maths.detmath's scalar forms and the kernels_* modules it imports), so an
# edit there changes this file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "fd22a8f07a89b4509214910760b1636407918120a77aa3416981ff323075be6d"




# ---------------------------------------------------------------- root motion


@_helper
def _wrap_deg(deg):
    """Degrees into (-180, 180] (systems.motion._wrap)."""
    d = np.fmod(deg, 360.0)
    if d <= -180.0:
        d += 360.0
    if d > 180.0:
        d -= 360.0
    return d


@_helper
def _turn_deg(qz, qw):
    """The turn 2 acos(w) signed by z, in degrees (quat.angle_about_z, np.degrees)."""
    a = 2.0 * acos_s(qw)
    if qz < 0:
        a = -a
    return a * RAD


@_kernel
def root_motion_step(idx, p_vel, p_tag, p_rot, heading, attached, state_vel, position, attach_heading, dt, cap,
                     out_vel):
    """Human_ApplyRootMotion then the move, for every body (systems.motion.StateUpdate).

    Body k reads pose column ``idx[k]`` (-1: no pose, nothing added): the root velocity
    turned by the heading into world axes, capped at ``cap`` m/s (none when tagged),
    added to ``state_vel``; the bone-0 turn a x 30 x dt turns the heading. A held body
    (``attached[k]``) keeps its position and heading and turns ``attach_heading`` by the
    raw turn; its velocity is the same sum when it has a pose column (an attached human:
    the velocity rule has no exception for it, "Root motion" L349-350), else 0 (a row no
    human moves). Writes ``out_vel`` (k, 3), ``position``, ``heading`` and
    ``attach_heading`` in place. Original: 0x0023fea8, 0x0023f238 Human_ApplyRootMotion.
    """
    for k in range(idx.shape[0]):
        i = idx[k]
        ok = i >= 0
        if not ok:
            i = 0
        vel_none = p_tag[0, i] or not ok
        turn_none = p_tag[2, i] or not ok
        qz = np.float64(p_rot[2, 0, i])
        qw = np.float64(p_rot[3, 0, i])
        if attached[k] and not ok:
            for c in range(3):
                out_vel[k, c] = 0.0
            attach_heading[k] = _wrap_deg(attach_heading[k] + 0.0)
            continue
        s_, c_ = sin_cos_deg_s(heading[k])
        vx = np.float64(p_vel[0, i])
        vy = np.float64(p_vel[1, i])
        vz = np.float64(p_vel[2, i])
        wx = vx * c_ - vy * s_
        wy = vx * s_ + vy * c_
        wz = vz
        if vel_none:
            wx = wy = wz = 0.0
        else:
            speed = math.sqrt(wx * wx + wy * wy + wz * wz)
            if speed > cap:
                sc = cap / speed
                wx *= sc
                wy *= sc
                wz *= sc
        out_vel[k, 0] = state_vel[k, 0] + wx
        out_vel[k, 1] = state_vel[k, 1] + wy
        out_vel[k, 2] = state_vel[k, 2] + wz
        if attached[k]:
            raw = 0.0 if turn_none else _turn_deg(qz, qw)
            attach_heading[k] = _wrap_deg(attach_heading[k] + raw)
            continue
        dturn = 0.0 if turn_none else _turn_deg(qz, qw) * 30.0 * dt
        for c in range(3):
            position[k, c] = position[k, c] + out_vel[k, c] * dt
        heading[k] = _wrap_deg(heading[k] + dturn)
