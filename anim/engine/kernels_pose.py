"""The pose kernels: sampling, blending and local-to-model, for a plan or for the task stacks.

``_sample`` (the key in force, bone 0 held and rate-scaled, the tags), ``_blend``
(Pose_BlendPartial's tag rules, subtree masks), ``_emit`` (local-to-model over the parent
table), the slerp and the turn on anim.maths.detmath's polynomial angles; ``pose_plan`` runs a
recorded plan (anim.engine.plan) with them. ``pose_stacks`` samples every human's stack (the
task table's rows, anim.engine.store) onto its pose stack of seven (an eighth pose refused and
counted, 0x00104ce0), blends and builds the bone transforms; with
PlayerOptions.queued_default, a human's queued tasks first, their pose its default.
The plain-Python model of the spec (anim.reference) is the reference;
tests/anim/test_reference.py ties the two bit for bit over random crowds.

Spec: "The key in force", "The pose", "Blending". Original: 0x00104ce0
AnimCursor_SamplePose, 0x00105158 Pose_BlendPartial, 0x00104630
Instance_BuildBoneMatrices, 0x00176d60 CharacterInstance_Sample.
"""
from __future__ import annotations

import math
import numpy as np
from numba import njit
from scuffle.anim.engine.sampler import CursorFlags
from scuffle.anim.maths.pose import POSE_STACK_SIZE
from scuffle.anim.maths.skeleton import NUM_BONES
from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.jitpipe import InlineLinkOnlyCompiler, LinkOnlyCompiler
from scuffle.anim.engine.kernels_fetch import PREFETCH_ROWS, PREFETCH_TASKS, fetch_rows, fetch_tasks
from scuffle.anim.engine.kernels_maths import (LINK_ONLY, jit_kinds, _bits_f32, _div, _f32_bits, _mul, _sub, acos_s,
                                               sin_cos_s)
from scuffle.anim.maths import detmath as _detmath
from scuffle.anim.engine.kernels_rows import (_CLIP, _DIRECTION, _FADE, _GAIT, _KEPT, _MIX, _PAIRED_CLIP,
                           _PICK, _PICK_ALL, _POSES, _cursor_k, _duration, _fade_weight, _gait_sampled, _lead_of,
                           _pick_chosen, _set_time, _window)

# numba's on-disk cache of this module's kernels: True, or False with no writable cache
# folder (they then compile for the process only); a corrupt cache is set aside first.
CACHE = cache_setting(__file__)
_helper, _kernel, _inline = jit_kinds(CACHE)

__all__ = ["pose_plan", "pose_stacks", "pose_lean", "NO_POSE", "QUEUED_POSE", "LANES"]
# numba's cache is keyed on each function's own file: the sha256 of the kernel modules
# this one links (anim.maths.detmath's scalar forms and the kernels_* modules it imports), so an
# edit there changes this file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "871fe16e6c6f0862e2477f5544408f7bf7500f76274c40341ad8ddd3980c3230"
# Cursor flags the sampler tests, as plain ints (numba freezes globals as constants).
_NO_VELOCITY = int(CursorFlags.NO_VELOCITY)     # 0x1: section A not sampled
_NO_TURN = int(CursorFlags.NO_TURN)             # 0x2: bone 0 not sampled
NO_POSE = -(1 << 40)          # a plan's final handle for "no pose": the default pose
_SIMD_HUMANS = 32    # _emit_model: from this many consecutive columns, a bone's rows go to _model_rows
# pose_stacks takes its humans' bones to model space a block of this many at a time, as
# soon as the block is posed: the block's output (1,556 bytes a human) is still in the L2
# then, where one pass over the whole call at its end read it back from the L3 or memory
# past a few thousand humans
_MODEL_BLOCK = 512
QUEUED_POSE = POSE_STACK_SIZE + 1   # pose_stacks' scratch pose of the queued tasks' pose (queued_default)
# The scratch poses' bone lanes: 34 bones padded to a multiple of 8 (the SIMD width of the
# blend's float64 maths under AVX-512, and a multiple of AVX2's and SSE2's), so the
# blend's lane loop has a constant trip count and no scalar remainder. The padding lanes
# hold the identity and stay so (the blend of two identities is the identity).
LANES = 40
# scratch.lanes, rows of LANES float32: the blend's x, y, z, w; each lane's mix flag (1.0: in
# the mask, not both tagged), |dot| and dot; the slerping lanes' |dot| in a row and their
# two weights
_MIX_ROW, _D_ROW, _DOT_ROW, _DK_ROW, _WA_ROW, _WB_ROW = (r * LANES for r in range(4, 10))
LANE_ROWS = 10
# the bank's key rows (ClipBank.fkeys): each field's 34 bones at a constant offset (LLVM then
# sees one row read at fixed distances, not nine arrays)
_NB = NUM_BONES
_K_SLOPE, _K_START = 4 * _NB, 8 * _NB
_GROUP = 8                  # the slerping lanes' weights, a SIMD group at a time (8 float64 in AVX-512)



# ---------------------------------------------------------------- poses
#
# Scratch poses are human-major: vel (P, 3), root (P, 3), rot (P, 4, LANES), tag (P, 36). A
# pose's rotations are component-major, bones in the inner dimension (ozz-animation's
# SoaTransform idea): the blend's and the tag bits' loops over the bones read and write
# unit-stride rows, and LLVM's loop vectoriser runs them with a bone in each SIMD lane
# (tests/anim/test_kernels.py checks the machine code has them). Each lane does the same
# float operations in the same order as the scalar formula, its paths computed and one
# picked (no fast-math, so no reassociation and no contraction into FMA): the same bits
# on every CPU, vectorised or not. The sample's bone loop reads the frame's key row (the
# bank's keys laid out frame-major, bones contiguous) and runs a bone to a SIMD lane too;
# only the velocity, the root and bone 0 are gathered through the frame table.
#
# The slerps' and the turns' angles, the fade's cosine and the heading's sine and cosine
# come from anim.maths.detmath (+ - * / and sqrt only, within a few ulp of libm in float64),
# never from libm or numpy's SIMD ufuncs, so they have the same bits on every CPU; quat.slerp,
# quat.scale_turn and systems.motion's numpy root motion run the same operations in the
# same order, so the two paths agree bit for bit (tests/anim/test_detmath.py).
#
# The helpers are called with one type per argument (np.int64(...) around literals and
# int32 columns, np.bool_ around flags): numba compiles a function once per argument
# types, and a literal 0, -1 or True is a type of its own; each extra version cost the
# first step a second or so (the bench's compile breakdown; tests/anim/test_kernels.py,
# test_each_kernel_compiles_once, keeps it so).
#
# _sample, _blend, _emit and _reference are compiled with ``_nrt=False`` (numba's
# switch for its reference-counting runtime; they allocate nothing): with it on,
# _sample increfed and decrefed nine of its array arguments (atomic NRT calls) on every
# call and _blend some more, about a tenth of the pipeline. Inlining all of them was no
# faster and doubled the first-run compile time.
#
# The loops over bones are in ``_lanes`` helpers: numba's "numpy" error model (a float
# division by zero gives inf or NaN instead of raising), because a loop that may raise
# has an exit LLVM does not vectorise; every division there is by a value the scalar code
# divided by too, or its result is discarded (a lane's unused path).
_lanes = (njit(cache=False, _nrt=False, no_cpython_wrapper=True,  # type: ignore[call-overload]
               no_cfunc_wrapper=True, error_model="numpy", pipeline_class=LinkOnlyCompiler) if LINK_ONLY else
          njit(cache=CACHE, _nrt=False, no_cpython_wrapper=True,  # type: ignore[call-overload]
               no_cfunc_wrapper=True, error_model="numpy"))
# The lanes' small steps, inlined into the lane loops by numba's IR inliner (they take the
# caller's error model); anim.maths.detmath's polynomials beside them (``_poly``: the
# acos and the sine, whose many blocks numba's inliner copied and typed again at every
# call site, about a quarter of the pose kernel's compile) are typed and lowered once,
# link-only, in the lane loops' error model, and marked for LLVM to inline at every call.
# The same source as detmath's scalar forms, the same bits.
_lane = njit(cache=False, inline="always")
_poly = (njit(cache=False, _nrt=False, no_cpython_wrapper=True,  # type: ignore[call-overload]
              no_cfunc_wrapper=True, error_model="numpy", pipeline_class=InlineLinkOnlyCompiler) if LINK_ONLY else
         _lane)


@_lane
def _with_tag(y, tag, keep, on):
    """A pose value's y float with its tag in its lowest bit (pose.set_tag_bits for one
    value), in the register: ``keep`` -2 and ``on`` 1 with the tag bits on; -1 and 0 leave
    y as it is. No branch: a SIMD lane's operation."""
    return _bits_f32(np.int32((_f32_bits(y) & keep) | (np.int32(tag) & on)))
_asin_r = _poly(_detmath._asin_r)
_PIO2_HI, _PIO2_LO, _TWO_OVER_PI = _detmath.PIO2_HI, _detmath.PIO2_LO, _detmath.TWO_OVER_PI


@_poly
def _acos_lane(x):
    """detmath.acos_s(x) for x in [0, 1] (or NaN), every path computed and one picked:
    the same operations as acos_s's two ranges there (x > 0.5: the reduction
    (1 - x) / 2), so the same bits, with no branch to keep a SIMD loop scalar."""
    x = min(max(x, -1.0), 1.0)
    high = x > 0.5
    z = (1.0 - x) * 0.5 if high else x * x
    r = _asin_r(z)
    s = math.sqrt(z)
    return 2.0 * (s + s * r) if high else _PIO2_HI - (x - (_PIO2_LO - x * r))


# detmath's Taylor coefficients for sin (to r^17) and cos (to r^18), Horner's steps in order,
# the sine's first step a multiply of 0 (0 x r^2 + 1/17! is 1/17! exactly)
_SIN_C = (_detmath._F17, -_detmath._F15, _detmath._F13, -_detmath._F11, _detmath._F9, -_detmath._F7, _detmath._F5,
          -_detmath._F3)
_COS_C = (_detmath._F16, -_detmath._F14, _detmath._F12, -_detmath._F10, _detmath._F8, -_detmath._F6, _detmath._F4,
          -_detmath._F2)
_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7 = _SIN_C
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7 = _COS_C
_COS_TOP = -_detmath._F18


@_poly
def _sin_lane(y):
    """detmath.sin_cos_s(y)[0] for y in [0, pi/2] (or NaN), with no branch: the same bits.

    The quadrant n = floor(y 2/pi + 1/2) is 0 or 1 there, so n mod 4 is n, and floor is
    detmath's v - v mod 1 for v >= 0. sin_cos_s's sine is its sine polynomial for n = 0
    and its cosine polynomial for n = 1 (negated for 2, 3 and NaN, as _quadrant picks):
    one Horner loop runs either, each lane with its polynomial's coefficients (a - c is
    a + (-c) exactly, and the sine's extra first step 0 x r^2 + 1/17! is exact), so each
    lane does its polynomial's operations in its order: the same bits, half the work of
    computing both.
    """
    n = np.floor(y * _TWO_OVER_PI + 0.5)
    r = (y - n * _PIO2_HI) - n * _PIO2_LO
    r2 = r * r
    odd = (n == 0.0) | (n == 2.0)             # the sine's polynomial, else the cosine's
    p = 0.0 if odd else _COS_TOP
    p = p * r2 + (_S0 if odd else _C0)
    p = p * r2 + (_S1 if odd else _C1)
    p = p * r2 + (_S2 if odd else _C2)
    p = p * r2 + (_S3 if odd else _C3)
    p = p * r2 + (_S4 if odd else _C4)
    p = p * r2 + (_S5 if odd else _C5)
    p = p * r2 + (_S6 if odd else _C6)
    p = p * r2 + (_S7 if odd else _C7)
    v = (r if odd else 1.0) + (r * r2 if odd else r2) * p     # r + r r^2 p, or 1 + r^2 p
    return v if (n == 0.0) | (n == 1.0) else -v


@_lane
def _lerp_lane(ax, ay, az, aw, bx, by, bz, bw, t):
    """Quat_Slerp's first half for a -> b by t (float32, already clamped to [0, 1];
    quat.slerp): the dot, min(|dot|, 1) and the normalised lerp (shortest path), which is
    the slerp above |dot| 0.9995. Returns (dot, d, x, y, z, w); no branch."""
    dot = ax * bx + ay * by + az * bz + aw * bw
    d = abs(dot)
    d = np.float32(1.0) if np.float32(1.0) < d else d     # min(abs(dot), 1)
    lb = t if dot >= 0 else -t
    la = np.float32(1.0) - t
    lx = ax * la + bx * lb
    ly = ay * la + by * lb
    lz = az * la + bz * lb
    lw = aw * la + bw * lb
    n = np.float32(math.sqrt(lx * lx + ly * ly + lz * lz + lw * lw))
    zero = n == 0
    lx = np.float32(0.0) if zero else lx / n
    ly = np.float32(0.0) if zero else ly / n
    lz = np.float32(0.0) if zero else lz / n
    lw = np.float32(1.0) if zero else lw / n
    return dot, d, lx, ly, lz, lw


@_lane
def _slerp_weights(d, t):
    """Quat_Slerp's weights for |dot| = d <= 0.9995 and t (float32): sin((1 - t) theta) /
    sin(theta) and sin(t theta) / sin(theta), theta = acos(d) <= pi/2, in float64 from the
    polynomial acos and sin, 1 / sin(theta) as 1 / sqrt(1 - d^2), each rounded to float32
    as numpy's float32 slerp rounds them (the second not yet negated for a negative dot).
    Max error vs the exact slerp under 3e-7 (weights under 5e-8); no branch."""
    dd = np.float64(d)
    td = np.float64(t)
    theta = _acos_lane(dd)
    inv = 1.0 / math.sqrt(1.0 - dd * dd)
    wa = np.float32(_sin_lane((1.0 - td) * theta) * inv)
    wb = np.float32(_sin_lane(td * theta) * inv)
    return wa, wb


@_lane
def _slerp_lane(ax, ay, az, aw, bx, by, bz, bw, t):
    """Quat_Slerp of a -> b by t (float32, already clamped to [0, 1]; quat.slerp): the
    normalised lerp above |dot| 0.9995 (``_lerp_lane``), else a x wa + b x (+-wb)
    (``_slerp_weights``). Returns (x, y, z, w)."""
    dot, d, lx, ly, lz, lw = _lerp_lane(ax, ay, az, aw, bx, by, bz, bw, t)
    if d > np.float32(0.9995):
        return lx, ly, lz, lw
    wa, wb = _slerp_weights(d, t)
    if dot < 0:
        wb = -wb
    return ax * wa + bx * wb, ay * wa + by * wb, az * wa + bz * wb, aw * wa + bw * wb


@_helper
def _scale_turn(qx, qy, qz, qw, rate32):
    """Bone 0's turn q scaled by the rate (quat.scale_turn for one float32 quaternion).

    In: q's four float32 components and the float32 rate; out: the scaled quaternion.
    Skipped at rate 1 or w within 5e-7 of 1; else q's half angle h = acos(w) scaled by
    the rate r clamped to [0, 1]: (q.xyz x sin(r h) / sin h, cos(r h)), the factors
    rounded to float32. sin(h) is sqrt(1 - w^2); sin and cos of r h in [0, pi] are
    cos and -sin of r h - pi/2 (the polynomials above); max error 8e-8 against the
    formula in float64 (was libm's acos, sin and cos).
    """
    if rate32 == np.float32(1.0) or abs(np.float32(1.0) - qw) <= np.float32(5e-7):
        return qx, qy, qz, qw
    r = rate32 if rate32 > np.float32(0.0) else np.float32(0.0)  # min(max(rate32, 0), 1) and min(max(qw, -1), 1)
    r = np.float64(np.float32(1.0) if np.float32(1.0) < r else r)
    w = np.float32(-1.0) if np.float32(-1.0) > qw else qw
    w = np.float64(np.float32(1.0) if np.float32(1.0) < w else w)
    half = acos_s(w)
    sh = math.sqrt(1.0 - w * w)
    if sh == 0.0:
        sh = 1.0
    s_rh, c_rh = sin_cos_s(r * half)
    kk = np.float32(s_rh / sh)
    return qx * kk, qy * kk, qz * kk, np.float32(c_rh)


@_lanes
def _tag_bits(p, scratch):
    """Scratch pose p's tags into the lowest bit of each value's y float (pose.set_tag_bits):
    set on a default, cleared otherwise ("The pose" L102: "| 1 on the second 32-bit float;
    sampled values have the bit cleared"). Through the int32 views of the same memory."""
    s_tag, vel_i, root_i, rot_i = scratch.tag, scratch.vel_i, scratch.root_i, scratch.rot_i
    vel_i[p, 1] = (vel_i[p, 1] & np.int32(-2)) | np.int32(s_tag[p, 0])
    root_i[p, 1] = (root_i[p, 1] & np.int32(-2)) | np.int32(s_tag[p, 1])
    ys = rot_i[p, 1]
    tags = s_tag[p, 2:]
    for b in range(tags.shape[0]):
        ys[b] = (ys[b] & np.int32(-2)) | np.int32(tags[b])


@_helper
def _frame_row(clip, time, bank):
    """A cursor's sampled frame on clip ``clip`` at ``time``: (x, row), x the time in
    frames (float32, the FPU's multiply), row its frame's row of the bank's frame table
    (the nearest frame, clamped to the clip's rows). ClipBank.sample's frame."""
    row0, rows = bank.row0, bank.rows
    x = np.float32(_mul(np.float64(time), 30.0))
    f = math.ceil(np.float64(x) - 0.5)
    if f < 0.0:
        f = 0.0
    fi = np.int64(f)
    last = rows[clip] - 1
    if fi > last:
        fi = last
    return x, row0[clip] + fi


@_helper
def _tag_bits_motion(p, scratch):
    """``_tag_bits`` of scratch pose p's velocity, root translation and bone 0 only (its
    bones 1-33 took their bits as they were written)."""
    s_tag, vel_i, root_i, rot_i = scratch.tag, scratch.vel_i, scratch.root_i, scratch.rot_i
    vel_i[p, 1] = (vel_i[p, 1] & np.int32(-2)) | np.int32(s_tag[p, 0])
    root_i[p, 1] = (root_i[p, 1] & np.int32(-2)) | np.int32(s_tag[p, 1])
    rot_i[p, 1, 0] = (rot_i[p, 1, 0] & np.int32(-2)) | np.int32(s_tag[p, 2])


@_lanes
def _sample(p, clip, time, rate, flags, bank, scratch):
    """One cursor's pose into scratch pose ``p`` (ClipBank.sample for one cursor).

    The bank's tables come key-major here: ``ftab`` (rows, 36), ``kval`` / ``kslope`` (K, 4).
    Slots 0-2 (velocity, root, bone 0) are gathered through the frame table before the bone
    loop (key indices read as unsigned: no negative-index wrap on the table reads); bones
    1-33 read the frame's key row (``frow``, ``fkeys``, ``ftag``), a bone to a SIMD lane. A
    bone's key is normalised by multiplying by the float32 reciprocal of its norm (within 1
    ulp of dividing). Its rotations go to the pose's lanes.
    """
    ftab, kval, kslope, kstart, ktag = bank.ftab, bank.kval, bank.kslope, bank.kstart, bank.ktag
    sent_vel, sent_bone = bank.sent_vel, bank.sent_bone
    frow, fkeys, ftag = bank.frow, bank.fkeys, bank.ftag
    bind_height = bank.bind_height
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    x, row = _frame_row(clip, time, bank)
    rate32 = np.float32(rate)
    # slot 0: the root velocity, scaled by the rate
    k = np.uint64(sent_vel if (flags & _NO_VELOCITY) != 0 else ftab[row, 0])
    s_tag[p, 0] = ktag[k]
    dx = x - kstart[k]
    for c in range(3):
        v = kslope[k, c] * dx
        v = v + kval[k, c]
        s_vel[p, c] = v * rate32
    # slot 1: the root translation (plus the bind height)
    k = np.uint64(ftab[row, 1])
    s_tag[p, 1] = ktag[k]
    dx = x - kstart[k]
    for c in range(3):
        v = kslope[k, c] * dx
        v = v + kval[k, c]
        s_root[p, c] = v
    s_root[p, 2] = s_root[p, 2] + bind_height
    # slot 2: bone 0, the turn scaled by the rate (a slerp from the identity): its key is
    # the key row's bone 0 (the frame table's slot 2, the same float32 values), or the
    # sentinel without a turn
    kr = frow[row]
    kk = fkeys[kr]
    kt = ftag[kr]
    if (flags & _NO_TURN) != 0:
        k = np.uint64(sent_bone)
        s_tag[p, 2] = ktag[k]
        dx = x - kstart[k]
        qx, qy, qz, qw = _scale_turn(kslope[k, 0] * dx + kval[k, 0], kslope[k, 1] * dx + kval[k, 1],
                                     kslope[k, 2] * dx + kval[k, 2], kslope[k, 3] * dx + kval[k, 3], rate32)
    else:
        s_tag[p, 2] = kt[0]
        dx = x - kk[_K_START]
        qx, qy, qz, qw = _scale_turn(kk[_K_SLOPE] * dx + kk[0], kk[_K_SLOPE + _NB] * dx + kk[_NB],
                                     kk[_K_SLOPE + 2 * _NB] * dx + kk[2 * _NB],
                                     kk[_K_SLOPE + 3 * _NB] * dx + kk[3 * _NB], rate32)
    s_rot[p, 0, 0] = qx
    s_rot[p, 1, 0] = qy
    s_rot[p, 2, 0] = qz
    s_rot[p, 3, 0] = qw
    # bones 1-33: the key in force carried by its slope (value + slope x (frame - key), the
    # multiply then the add, in the table's float32), normalised; a bone the clip leaves out
    # (its key a default, tagged; every bone no clip of the bank animates is) takes the
    # default pose's rotation as it is ("The pose" L102: copied from the default pose, not
    # through the key path, whose normalisation would move it by an ulp): the reference
    # pose's here (a default key's value is the reference rotation), or with queued_default
    # the queued tasks' pose's (scratch.dflt, after the loop). The frame's keys are one row
    # of the bank's key rows, each field's bones at a constant offset, and the pose's
    # rotations are written through one flat view of them, so LLVM sees two arrays read and
    # two written at fixed distances (a few run-time overlap checks, not the dozens of nine
    # rows read and four written, past its limit) and vectorises the loop, a bone to a SIMD
    # lane. Every lane computes the key path; a tagged one keeps its value.
    rot = s_rot[p].reshape(4 * LANES)
    tags = s_tag[p, 2:]
    d = scratch.dflt[0]
    # the tag bits of bones 1-33 set as their y is written (in the register), unless the
    # default pose's rotations replace the tagged ones after the loop
    bits = scratch.tag_bits and d < 0
    keep = np.int32(-2) if bits else np.int32(-1)
    on = np.int32(1) if bits else np.int32(0)
    for b in range(1, _NB):
        dx = x - kk[_K_START + b]
        q0 = kk[_K_SLOPE + b] * dx + kk[b]
        q1 = kk[_K_SLOPE + _NB + b] * dx + kk[_NB + b]
        q2 = kk[_K_SLOPE + 2 * _NB + b] * dx + kk[2 * _NB + b]
        q3 = kk[_K_SLOPE + 3 * _NB + b] * dx + kk[3 * _NB + b]
        n2 = q0 * q0
        n2 = n2 + q1 * q1
        n2 = n2 + q2 * q2
        n2 = n2 + q3 * q3
        n = np.float32(math.sqrt(n2))
        n = np.float32(1.0) if n == 0 else n
        inv = np.float32(1.0) / n
        tag = kt[b]
        tags[b] = tag
        rot[b] = kk[b] if tag else q0 * inv
        rot[LANES + b] = _with_tag(kk[_NB + b] if tag else q1 * inv, tag, keep, on)
        rot[2 * LANES + b] = kk[2 * _NB + b] if tag else q2 * inv
        rot[3 * LANES + b] = kk[3 * _NB + b] if tag else q3 * inv
    if d >= 0:
        _default_from(p, d, scratch)
        if scratch.tag_bits:
            _tag_bits(p, scratch)
    elif scratch.tag_bits:
        _tag_bits_motion(p, scratch)


@_lanes
def _default_from(p, d, scratch):
    """Scratch pose p's bones 1-33 taken from the default (tagged) get scratch pose d's
    rotations as they are: the default pose is the queued tasks' pose (queued_default,
    "The pose" L102; bone 0, the velocity and the root translation keep the reference
    pose's). A bone is tagged exactly when ``_sample`` took it from the default (a slot no
    clip of the bank animates has the tagged sentinel key)."""
    s_rot, s_tag = scratch.rot, scratch.tag
    tags = s_tag[p, 2:]
    for c in range(4):
        dst = s_rot[p, c]
        src = s_rot[d, c]
        for b in range(1, tags.shape[0]):
            dst[b] = src[b] if tags[b] else dst[b]


@_lanes
def _blend(pa, pb, po, w, mbone, submask, scratch):
    """Pose_BlendPartial of scratch poses pa (lower) and pb (upper) by w into po (pose.blend).

    ``mbone`` >= 0 limits the blend to that bone's subtree (``submask[mbone]``). Bones 1-33
    one to a SIMD lane (``_slerp_lane``, every lane's slerp computed and the mixed ones
    kept), bone 0 and the motion channels one by one.
    """
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    full = mbone < 0
    mrow = np.int64(0) if full else mbone
    t = np.float32(0.0) if np.float32(0.0) > w else w     # min(max(w, 0), 1), the slerp's t
    t = np.float32(1.0) if np.float32(1.0) < t else t
    # motion channels: a tagged side gives way
    if full or submask[mrow, 0]:
        lt = s_tag[pa, 0]
        ut = s_tag[pb, 0]
        for c in range(3):
            lo = s_vel[pa, c]
            up = s_vel[pb, c]
            if ut:
                v = lo
            elif lt:
                v = up
            else:
                v = lo + (up - lo) * w
            s_vel[po, c] = v
        lt2 = s_tag[pa, 2]
        ut2 = s_tag[pb, 2]
        if ut2:
            for c in range(4):
                s_rot[po, c, 0] = s_rot[pa, c, 0]
        elif lt2:
            for c in range(4):
                s_rot[po, c, 0] = s_rot[pb, c, 0]
        else:
            ox, oy, oz, ow = _slerp_lane(s_rot[pa, 0, 0], s_rot[pa, 1, 0], s_rot[pa, 2, 0], s_rot[pa, 3, 0],
                                         s_rot[pb, 0, 0], s_rot[pb, 1, 0], s_rot[pb, 2, 0], s_rot[pb, 3, 0], t)
            s_rot[po, 0, 0] = ox
            s_rot[po, 1, 0] = oy
            s_rot[po, 2, 0] = oz
            s_rot[po, 3, 0] = ow
        s_tag[po, 0] = lt and ut
        s_tag[po, 2] = lt2 and ut2
    else:
        for c in range(3):
            s_vel[po, c] = s_vel[pa, c]
        for c in range(4):
            s_rot[po, c, 0] = s_rot[pa, c, 0]
        s_tag[po, 0] = s_tag[pa, 0]
        s_tag[po, 2] = s_tag[pa, 2]
    # the root translation: both tagged keeps the lower's
    both = s_tag[pa, 1] and s_tag[pb, 1]
    if (full or submask[mrow, 1]) and not both:
        for c in range(3):
            lo = s_root[pa, c]
            s_root[po, c] = lo + (s_root[pb, c] - lo) * w
        s_tag[po, 1] = False
    else:
        for c in range(3):
            s_root[po, c] = s_root[pa, c]
        s_tag[po, 1] = s_tag[pa, 1] if not full and not submask[mrow, 1] else both
    # bones 1-33: slerped where in the mask and not both tagged, else the lower's. First
    # each lane's mix flag and tag; then every lane's slerp, one bone a SIMD lane, into
    # scratch.lanes (a constant-offset buffer: LLVM checks no overlap at run time, which
    # it would with po itself, and po is pa on the pose stack), then the lanes to po
    nb = s_tag.shape[1] - 2
    W, lane_tag = scratch.lanes, scratch.lane_tag
    ta, tb, inside = s_tag[pa, 2:], s_tag[pb, 2:], submask[mrow]
    for b in range(1, nb):
        lt = ta[b]
        both = lt & tb[b]
        mask = full | inside[b]
        W[_MIX_ROW + b] = np.float32(1.0) if mask > both else np.float32(0.0)     # in the mask, not both tagged
        lane_tag[b] = both if mask else lt
    a0, a1, a2, a3 = s_rot[pa, 0], s_rot[pa, 1], s_rot[pa, 2], s_rot[pa, 3]
    b0, b1, b2, b3 = s_rot[pb, 0], s_rot[pb, 1], s_rot[pb, 2], s_rot[pb, 3]
    zero = np.float32(0.0)
    for b in range(LANES):
        # every lane's dot and normalised lerp; a lane not mixed works on zeros: a tagged
        # zero y word is the subnormal 1e-45 (the tag bit), and a subnormal operand in any
        # lane costs the whole SIMD operation a microcode assist of some hundred cycles
        mix = W[_MIX_ROW + b] != zero
        dot, d, x, y, z, ww = _lerp_lane(a0[b] if mix else zero, a1[b] if mix else zero, a2[b] if mix else zero,
                                         a3[b] if mix else zero, b0[b] if mix else zero, b1[b] if mix else zero,
                                         b2[b] if mix else zero, b3[b] if mix else zero, t)
        lerp = mix & (d > np.float32(0.9995))
        W[b] = x if lerp else a0[b]
        W[LANES + b] = y if lerp else a1[b]
        W[2 * LANES + b] = z if lerp else a2[b]
        W[3 * LANES + b] = ww if lerp else a3[b]
        W[_D_ROW + b] = d
        W[_DOT_ROW + b] = dot
    # the lanes that slerp (mixed, |dot| <= 0.9995: a few of the 33 in a real pose) in a
    # row, padded with d = 0 to whole SIMD groups; their float64 weights a group at a time
    idx = scratch.lane_idx
    k = 0
    for b in range(1, nb):
        if W[_MIX_ROW + b] != zero and not W[_D_ROW + b] > np.float32(0.9995):
            idx[k] = b
            W[_DK_ROW + k] = W[_D_ROW + b]
            k += 1
    kk = (k + _GROUP - 1) // _GROUP * _GROUP
    for j in range(k, kk):
        W[_DK_ROW + j] = zero
    for j in range(kk):
        wa, wb = _slerp_weights(W[_DK_ROW + j], t)
        W[_WA_ROW + j] = wa
        W[_WB_ROW + j] = wb
    for j in range(k):
        b = idx[j]
        wa = W[_WA_ROW + j]
        wb = W[_WB_ROW + j]
        if W[_DOT_ROW + b] < zero:
            wb = -wb
        W[b] = a0[b] * wa + b0[b] * wb
        W[LANES + b] = a1[b] * wa + b1[b] * wb
        W[2 * LANES + b] = a2[b] * wa + b2[b] * wb
        W[3 * LANES + b] = a3[b] * wa + b3[b] * wb
    # the lanes to po, a blended value's tag bit following its tag (ours: L104 is silent),
    # set in the register as y is written
    bits = scratch.tag_bits
    keep = np.int32(-2) if bits else np.int32(-1)
    on = np.int32(1) if bits else np.int32(0)
    for c in (0, 2, 3):
        o = s_rot[po, c]
        for b in range(1, LANES):
            o[b] = W[c * LANES + b]
    o = s_rot[po, 1]
    for b in range(1, nb):
        o[b] = _with_tag(W[LANES + b], lane_tag[b], keep, on)
    for b in range(nb, LANES):
        o[b] = W[LANES + b]
    ot = s_tag[po, 2:]
    for b in range(1, nb):
        ot[b] = lane_tag[b]
    if bits:
        _tag_bits_motion(po, scratch)


@_helper
def _emit(p, i, bank, scratch, out):
    """Scratch pose p to output column i: the pose, entry 0 the motion channels
    (``scratch.motion_entry``) or zero and the identity, bone 1's model transform (the
    root); ``_emit_model`` then takes bones 2 and up to model space for every column of
    the call at once (skeleton.model_space).
    """
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    o_vel, o_root, o_rot, o_tag, o_pos, o_mrot = out.vel, out.root, out.rot, out.tag, out.pos, out.mrot
    nb = s_tag.shape[1] - 2
    rx = s_root[p, 0]
    ry = s_root[p, 1]
    rz = s_root[p, 2]
    o_vel[0, i] = s_vel[p, 0]
    o_vel[1, i] = s_vel[p, 1]
    o_vel[2, i] = s_vel[p, 2]
    o_root[0, i] = rx
    o_root[1, i] = ry
    o_root[2, i] = rz
    for t in range(s_tag.shape[1]):
        o_tag[t, i] = s_tag[p, t]
    # entry 0 is motion ("Bone transforms" L116: the root velocity and bone 0's rotation, the
    # identity where tagged; or always the identity, Coney's), bone 1 absolute, the rest down
    # the parent table
    for c in range(4):
        o_rot[c, 0, i] = s_rot[p, c, 0]
    o_pos[0, 0, i] = 0.0
    o_pos[1, 0, i] = 0.0
    o_pos[2, 0, i] = 0.0
    o_mrot[0, 0, i] = 0.0
    o_mrot[1, 0, i] = 0.0
    o_mrot[2, 0, i] = 0.0
    o_mrot[3, 0, i] = 1.0
    if scratch.motion_entry:
        if not s_tag[p, 0]:
            for c in range(3):
                o_pos[c, 0, i] = s_vel[p, c]
        if not s_tag[p, 2]:
            for c in range(4):
                o_mrot[c, 0, i] = s_rot[p, c, 0]
    o_pos[0, 1, i] = rx
    o_pos[1, 1, i] = ry
    o_pos[2, 1, i] = rz
    for c in range(4):
        v = s_rot[p, c, 1]
        o_rot[c, 1, i] = v
        o_mrot[c, 1, i] = v
    for c in range(4):
        src = s_rot[p, c]
        dst = o_rot[c]
        for b in range(2, nb):
            dst[b, i] = src[b]


@_inline
def _model_bone(b, par, i, vx, vy, vz, o_rot, o_pos, o_mrot):
    """Bone ``b`` of output column ``i`` to model space: its local rotation (``o_rot``)
    composed with its parent's model rotation, its offset turned by it and added to the
    parent's position (skeleton.model_space's float32 operations, in its order)."""
    bx = o_rot[0, b, i]
    by = o_rot[1, b, i]
    bz = o_rot[2, b, i]
    bw = o_rot[3, b, i]
    ax = o_mrot[0, par, i]
    ay = o_mrot[1, par, i]
    az = o_mrot[2, par, i]
    aw = o_mrot[3, par, i]
    px = o_pos[0, par, i]
    py = o_pos[1, par, i]
    pz = o_pos[2, par, i]
    o_mrot[0, b, i] = aw * bx + ax * bw + ay * bz - az * by
    o_mrot[1, b, i] = aw * by - ax * bz + ay * bw + az * bx
    o_mrot[2, b, i] = aw * bz + ax * by - ay * bx + az * bw
    o_mrot[3, b, i] = aw * bw - ax * bx - ay * by - az * bz
    cx = ay * vz - az * vy + aw * vx
    cy = az * vx - ax * vz + aw * vy
    cz = ax * vy - ay * vx + aw * vz
    o_pos[0, b, i] = (ay * cz - az * cy) * np.float32(2.0) + vx + px
    o_pos[1, b, i] = (az * cx - ax * cz) * np.float32(2.0) + vy + py
    o_pos[2, b, i] = (ax * cy - ay * cx) * np.float32(2.0) + vz + pz


@_helper
def _model_rows(local, parent_rot, parent_pos, model_rot, model_pos, offset, n):
    """One bone of ``n`` consecutive humans to model space, the rows of the human-last
    output as 1-D arrays (``local`` its local rotation's x, y, z, w; ``parent_rot`` /
    ``parent_pos`` its parent's model rotation and position; ``model_rot`` / ``model_pos``
    written; ``offset`` its bone offset): ``_model_bone``'s operations, in its order, on
    plain unit-stride loops that LLVM's loop vectoriser takes (SIMD across humans: each
    lane the same float32 operations, so the same bits)."""
    bx, by, bz, bw = local
    ax, ay, az, aw = parent_rot
    px, py, pz = parent_pos
    m0, m1, m2, m3 = model_rot
    q0, q1, q2 = model_pos
    vx, vy, vz = offset
    two = np.float32(2.0)
    for i in range(n):
        m0[i] = aw[i] * bx[i] + ax[i] * bw[i] + ay[i] * bz[i] - az[i] * by[i]
        m1[i] = aw[i] * by[i] - ax[i] * bz[i] + ay[i] * bw[i] + az[i] * bx[i]
        m2[i] = aw[i] * bz[i] + ax[i] * by[i] - ay[i] * bx[i] + az[i] * bw[i]
        m3[i] = aw[i] * bw[i] - ax[i] * bx[i] - ay[i] * by[i] - az[i] * bz[i]
        cx = ay[i] * vz - az[i] * vy + aw[i] * vx
        cy = az[i] * vx - ax[i] * vz + aw[i] * vy
        cz = ax[i] * vy - ay[i] * vx + aw[i] * vz
        q0[i] = (ay[i] * cz - az[i] * cy) * two + vx + px[i]
        q1[i] = (az[i] * cx - ax[i] * cz) * two + vy + py[i]
        q2[i] = (ax[i] * cy - ay[i] * cx) * two + vz + pz[i]


@_helper
def _emit_model(cols, n, bank, out):
    """Local-to-model of bones 2 and up for output columns ``cols[:n]`` (``_emit`` wrote
    their local rotations, entry 0 and bone 1), bones outer, humans inner. Consecutive
    columns (the engine's: the output is human-last), at least ``_SIMD_HUMANS`` of them:
    each bone's rows as 1-D arrays to ``_model_rows`` (SIMD across humans, the same bits);
    else column by column (``_model_bone``: a row's views cost more than a few humans)."""
    parents, offsets = bank.parents, bank.offsets
    o_rot, o_pos, o_mrot = out.rot, out.pos, out.mrot
    nb = o_rot.shape[1]
    if n <= 0:
        return
    c0 = cols[0]
    run = n >= _SIMD_HUMANS
    for k in range(n):
        if not run:
            break
        if cols[k] != c0 + k:
            run = False
    if run:
        e = c0 + n
        for b in range(2, nb):
            par = parents[b]
            _model_rows((o_rot[0, b, c0:e], o_rot[1, b, c0:e], o_rot[2, b, c0:e], o_rot[3, b, c0:e]),
                        (o_mrot[0, par, c0:e], o_mrot[1, par, c0:e], o_mrot[2, par, c0:e], o_mrot[3, par, c0:e]),
                        (o_pos[0, par, c0:e], o_pos[1, par, c0:e], o_pos[2, par, c0:e]),
                        (o_mrot[0, b, c0:e], o_mrot[1, b, c0:e], o_mrot[2, b, c0:e], o_mrot[3, b, c0:e]),
                        (o_pos[0, b, c0:e], o_pos[1, b, c0:e], o_pos[2, b, c0:e]),
                        (offsets[b, 0], offsets[b, 1], offsets[b, 2]), n)
        return
    for b in range(2, nb):
        par = np.uint64(parents[b])
        vx = offsets[b, 0]
        vy = offsets[b, 1]
        vz = offsets[b, 2]
        for k in range(n):
            _model_bone(b, par, cols[k], vx, vy, vz, o_rot, o_pos, o_mrot)


@_helper
def _reference(p, bank, scratch):
    """The default pose into scratch pose p (PoseBatch.reference)."""
    ref, bind_height = bank.ref_lanes, bank.bind_height
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    for c in range(3):
        s_vel[p, c] = 0.0
        s_root[p, c] = 0.0
    s_root[p, 2] = bind_height
    for c in range(4):
        dst = s_rot[p, c]
        src = ref[c]
        for b in range(LANES):
            dst[b] = src[b]
    for t in range(s_tag.shape[1]):
        s_tag[p, t] = True
    if scratch.tag_bits:
        _tag_bits(p, scratch)


@_kernel
def pose_plan(cols, plan, bank, scratch, out):
    """A recorded pose-stack plan (anim.engine.plan.SamplePlan), human by human, into columns ``cols``.

    Human i owns samples first_s[i]:first_s[i + 1] and blends first_b[i]:first_b[i + 1];
    a handle h >= 0 is sample h, h < 0 blend -h - 1 (both plan-wide); ``finals[i]`` the
    top of its stack, or ``NO_POSE`` (the default pose). The scratch holds one human's
    poses: its samples, then its blends, then the default. In: ``plan`` a PlanArrays,
    ``bank`` the BankTables, ``scratch`` a Scratch, ``out`` the PoseOut.
    """
    first_s, first_b, s_clip, s_time, s_rate, s_flags = (plan.first_s, plan.first_b, plan.s_clip, plan.s_time,
                                                         plan.s_rate, plan.s_flags)
    b_a, b_b, b_w, b_mask, finals = plan.b_a, plan.b_b, plan.b_w, plan.b_mask, plan.finals
    submask = bank.submask
    for i in range(cols.shape[0]):
        s0 = first_s[i]
        s1 = first_s[i + 1]
        bb0 = first_b[i]
        bb1 = first_b[i + 1]
        nsm = s1 - s0
        for j in range(s0, s1):
            _sample(j - s0, s_clip[j], s_time[j], s_rate[j], s_flags[j], bank, scratch)
        for j in range(bb0, bb1):
            ha = b_a[j]
            hb = b_b[j]
            pa = ha - s0 if ha >= 0 else nsm + (-ha - 1) - bb0
            pb = hb - s0 if hb >= 0 else nsm + (-hb - 1) - bb0
            _blend(pa, pb, nsm + j - bb0, b_w[j], b_mask[j], submask, scratch)
        h = finals[i]
        dflt = nsm + bb1 - bb0
        if h == NO_POSE:
            _reference(dflt, bank, scratch)
            p = dflt
        elif h >= 0:
            p = h - s0
        else:
            p = nsm + (-h - 1) - bb0
        _emit(p, cols[i], bank, scratch, out)
    _emit_model(cols, cols.shape[0], bank, out)


# ---------------------------------------------------------------- the pose


@_helper
def _push(c, sp, nref, rate, cursors, bank, scratch):
    """Cursor ``c``'s pose pushed on the pose stack of ``sp`` poses at ``rate``, or refused
    and counted when it holds seven (0x00104ce0). Returns (sp, nref)."""
    c_t, c_flags, c_bank = cursors.t, cursors.flags, cursors.bank
    if sp >= _POSES:
        return sp, nref + 1
    _sample(np.int64(sp), np.int64(c_bank[c]), c_t[c], rate, np.int64(c_flags[c]), bank, scratch)
    return sp + 1, nref


@_helper
def _pose_blend_task(r, sp, nref, tasks, cursors, bank, scratch):
    """Task.emit of types 10, 11 and 13 on the pose stack of ``sp`` poses; returns (sp, nref).

    10 (MixTask.emit): both clips, blended by the weight. 11 (PickTask.emit): the chosen
    clip; under PickSampling.ALL the four are pushed and the chosen one's pose kept
    (SamplePlan.keep): the pushes past seven are refused and counted, and the kept pose is
    the chosen clip's, sampled straight into its place (the same bits: a sample depends on
    its cursor only), or nothing when its push was refused. 13 (DirectionTask.emit): the
    centre, then, when the value is off it, the neighbour on its side blended by the
    distance. A blend with fewer than two poses does nothing.
    """
    t_type, t_rate, t_c0, t_c1, t_c2, t_value = tasks.type, tasks.rate, tasks.c0, tasks.c1, tasks.c2, tasks.value
    t_centre, t_sampling = tasks.centre, tasks.sampling
    submask = bank.submask
    tt = t_type[r]
    rate = t_rate[r]
    if tt == _MIX:
        sp, nref = _push(np.int64(t_c0[r]), sp, nref, rate, cursors, bank, scratch)
        sp, nref = _push(np.int64(t_c1[r]), sp, nref, rate, cursors, bank, scratch)
        if sp >= 2:
            _blend(sp - 2, sp - 1, sp - 2, np.float32(t_value[r]), np.int64(-1), submask, scratch)
            sp -= 1
        return sp, nref
    if tt == _PICK:
        k = _pick_chosen(t_value[r])
        c = _cursor_k(r, k, tasks)
        if t_sampling[r] != _PICK_ALL:
            return _push(c, sp, nref, rate, cursors, bank, scratch)
        fit = _POSES - sp                      # the four pushes that fit (min(max(., 0), 4)); the rest refused
        fit = 0 if 0 > fit else fit
        fit = 4 if 4 < fit else fit
        nref += 4 - fit
        if k < fit:
            sp, nref = _push(c, sp, nref, rate, cursors, bank, scratch)
        return sp, nref
    # the direction (DirectionTask.side_weight): the value off the centre, -0.5 .. 0.5
    off = (t_value[r] - np.float64(t_centre[r]) + 4.0) % 8.0 - 4.0
    if off >= 0:
        side = np.int64(t_c2[r])
        w = off
    else:
        side = np.int64(t_c0[r])
        w = -off
    sp, nref = _push(np.int64(t_c1[r]), sp, nref, rate, cursors, bank, scratch)
    if w > 0.0:
        sp, nref = _push(side, sp, nref, rate, cursors, bank, scratch)
        if sp >= 2:
            _blend(sp - 2, sp - 1, sp - 2, np.float32(w), np.int64(-1), submask, scratch)
            sp -= 1
    return sp, nref


@_helper
def _copy_pose(src, dst, scratch):
    """Scratch pose ``src`` into scratch pose ``dst``, its values' bits and its tags as they are."""
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    for c in range(3):
        s_vel[dst, c] = s_vel[src, c]
        s_root[dst, c] = s_root[src, c]
    for c in range(4):
        for b in range(LANES):
            s_rot[dst, c, b] = s_rot[src, c, b]
    for t in range(s_tag.shape[1]):
        s_tag[dst, t] = s_tag[src, t]


@_helper
def _keep_queued_pose(sp, bank, scratch):
    """The queued tasks' pose stack of ``sp`` poses done: its top, or the reference pose
    when it is empty (the buffer 0x005fd040 starts as the reference pose), into scratch
    pose ``QUEUED_POSE``, the default pose of the stack's pass ("The pose" L102).
    Original: 0x00176d60."""
    if sp == 0:
        _reference(np.int64(QUEUED_POSE), bank, scratch)
    else:
        _copy_pose(np.int64(sp - 1), np.int64(QUEUED_POSE), scratch)


@_inline
def _pose_fade(r, sp, tasks, fades, submask, scratch):
    """FadeTask.emit on the pose stack of ``sp`` poses: the top two blended by the fade's
    outgoing weight (elapsed over duration, "Fades" L261-267); fewer than two: nothing.
    Returns sp. Original: 0x00106cc8."""
    t_aux = tasks.aux
    f_el, f_dur = fades.el, fades.dur
    a = np.int64(t_aux[r])
    w = np.float32(_fade_weight(np.float64(f_el[a]), np.float64(f_dur[a])))
    if sp >= 2:
        _blend(sp - 2, sp - 1, sp - 2, w, np.int64(-1), submask, scratch)
        sp -= 1
    return sp


@_inline
def _pose_gait(r, sp, nref, tasks, gaits, cursors, bank, scratch):
    """GaitTask.emit on the pose stack of ``sp`` poses ("Gait blend" L269-288): near a
    step (the fraction below GAIT_ALONE_LOW or above GAIT_ALONE_HIGH) the nearer clip
    alone, else both clips of the pair blended by the fraction. Returns (sp, nref).
    Original: 0x0010a5b8."""
    t_rate, t_c0, t_c1, t_aux = tasks.rate, tasks.c0, tasks.c1, tasks.aux
    g_value, g_lower = gaits.value, gaits.lower
    a = np.int64(t_aux[r])
    frac = np.float64(g_value[a]) - g_lower[a]
    rate = t_rate[r]
    alone = _gait_sampled(frac)                     # anim.engine.rules.gait_sampled
    if alone >= 0:
        c = np.int64(t_c0[r]) if alone == 0 else np.int64(t_c1[r])
        return _push(c, sp, nref, rate, cursors, bank, scratch)
    sp, nref = _push(np.int64(t_c0[r]), sp, nref, rate, cursors, bank, scratch)
    sp, nref = _push(np.int64(t_c1[r]), sp, nref, rate, cursors, bank, scratch)
    if sp >= 2:
        _blend(sp - 2, sp - 1, sp - 2, np.float32(frac), np.int64(-1), bank.submask, scratch)
        sp -= 1
    return sp, nref


@_inline
def _pose_window_into(r, c, tasks, cursors, fades, gaits):
    """Whether type 3 / 6's task ``r`` (its cursor ``c``) is in its blend window (its time
    past its duration less the blend time b): (the time into the window, its next task's
    weight there: the share of b elapsed, at most 1), the weight -1.0 when it is not. Its
    cursors as they are (pose_lean's window: ``_pose_window`` adds the kept rule's).
    "When a clip ends" L299-334. Original: 0x00105af0."""
    c_t, c_dur = cursors.t, cursors.dur
    b = _window(r, tasks, cursors, fades, gaits)
    if b <= 0.0:
        return -1.0, -1.0
    into = _sub(np.float64(c_t[c]), _sub(np.float64(c_dur[c]), b))
    if into <= 0.0:
        return into, -1.0
    q = into / b
    return into, (1.0 if 1.0 < q else q)      # min(into / b, 1)


@_inline
def _pose_window(r, c, tasks, cursors, events, fades, gaits):
    """Whether type 3 / 6's task ``r`` (its cursor ``c``) is in its blend window, and its
    next task's weight there: the share of b elapsed, at most 1; -1.0 when it is not.
    Under the kept rule (Task.set_window_time) the next task's cursors are set to the time
    into the window first (its lead cursor to it, the others in proportion). "When a clip
    ends" L299-334. Original: 0x00105af0."""
    t_c0, t_c1, t_c2, t_c3, t_nxt, t_window = tasks.c0, tasks.c1, tasks.c2, tasks.c3, tasks.nxt, tasks.window
    c_dur = cursors.dur
    into, w = _pose_window_into(r, c, tasks, cursors, fades, gaits)
    if w < 0.0:
        return w
    if t_window[r] == _KEPT:
        nx = np.int64(t_nxt[r])
        d = _duration(nx, tasks, cursors, fades, gaits)
        lead = _lead_of(nx, tasks, gaits)
        for cc in (np.int64(t_c0[nx]), np.int64(t_c1[nx]), np.int64(t_c2[nx]), np.int64(t_c3[nx])):
            if cc < 0:
                continue
            tt2 = into if cc == lead else _mul(_div(into, d), np.float64(c_dur[cc]))
            _set_time(cc, tt2, cursors, events)
    return w


@_inline
def _pose_windows(sp, nw, weights, submask, scratch):
    """The blends of a task's ``nw`` blend windows on the pose stack of ``sp`` poses,
    innermost first, each by its weight (``weights``, a ring: the innermost ones kept);
    one with fewer than two poses does nothing. Returns sp."""
    while nw > 0:
        nw -= 1
        if sp >= 2:
            _blend(sp - 2, sp - 1, sp - 2, weights[nw % weights.shape[0]], np.int64(-1), submask, scratch)
            sp -= 1
    return sp


@_inline
def _pose_top(k, sp, over_queue, cols, bank, scratch, out):
    """Human ``k``'s pose out (column ``cols[k]``, with its bone transforms: ``_emit``): the
    top of its pose stack of ``sp`` poses; an empty stack shows the queued tasks' pose
    when it has one (``over_queue``), else the reference pose. The ``k``-th human that
    ends a block of ``_MODEL_BLOCK``: the block's bones 2 and up to model space
    (``_emit_model``, SIMD across its humans). Original: 0x00176d60, 0x00104630
    Instance_BuildBoneMatrices."""
    if sp > 0:
        top = sp - 1
    elif over_queue:
        top = np.int64(QUEUED_POSE)
    else:
        _reference(np.int64(_POSES), bank, scratch)
        top = np.int64(_POSES)
    _emit(top, cols[k], bank, scratch, out)
    if (k + 1) % _MODEL_BLOCK == 0:         # a block posed: its bones 2 and up to model space
        _emit_model(cols[k + 1 - _MODEL_BLOCK:k + 1], np.int64(_MODEL_BLOCK), bank, out)


@_helper
def _lean_refuses(hi, humans, tasks):
    """Whether human ``hi``'s stack holds a task whose pose ``pose_lean`` leaves to
    ``pose_stacks``: a type 10, 11 or 13, or a clip under the kept rule with a next task,
    its chain of next tasks followed (a chain longer than the task table counts as one).
    Read only."""
    h_depth, h_stack = humans.depth, humans.stack
    t_type, t_nxt, t_window = tasks.type, tasks.nxt, tasks.window
    most = t_type.shape[0]
    for si in range(h_depth[hi]):
        r = np.int64(h_stack[hi, si])
        steps = 0
        while True:
            tt = t_type[r]
            if tt == _MIX or tt == _PICK or tt == _DIRECTION:
                return True
            if (tt != _CLIP and tt != _PAIRED_CLIP) or t_nxt[r] < 0:
                break
            if t_window[r] == _KEPT or steps >= most:
                return True
            r = np.int64(t_nxt[r])
            steps += 1
    return False


def _pose_kernel(lean):
    """The pose kernel: ``pose_stacks`` (``lean`` False), or ``pose_lean`` (True), the same
    code without the rare paths (types 10, 11 and 13, a blend window under the kept rule,
    a human's queued tasks' pose under PlayerOptions.queued_default), for the first step of
    a fresh install: numba compiles a kernel with every function it calls, and the first
    step of most scenes runs none of those. ``pose_lean`` stops at a human whose pose
    would take one (nothing of it written, and nothing of the tables: its pose so far is
    in the scratch poses only) and returns that human's index: the caller goes on from it
    with ``pose_stacks`` over the rest of the rows and columns, so the two write the same
    bits. ``lean`` is a constant of the closure: numba prunes the branches on it before
    typing, so neither kernel types (nor compiles) the other's paths. (The closure holds
    nothing but ``lean``: numba keys a cached closure on its cells' pickled values, and a
    dispatcher's carry an id of the process, so a cell holding one would miss the cache.)"""

    def pose_stacks(rows, cols, humans, tasks, cursors, fades, gaits, events, bank, scratch, out, buffers):
        """Every human's pose (rows of the human table) into output column ``cols[k]``: its
        stack sampled bottom-up onto a pose stack of seven, the top emitted with its bone
        transforms (``_emit``), the default pose for an empty stack. Each task as Task.emit
        says: a clip pushes its pose; type 3 / 6 in its blend window then its next task (kept
        at the time into the window under the kept rule, which moves its cursors) and blends
        by the share of b elapsed; a fade blends the top two by its outgoing weight; a gait
        its pair by the fraction (one clip alone near the steps); types 10, 11, 13 as
        ``_pose_blend_task`` says (a mix, the picked clip, a direction and its side). An
        eighth pose is skipped and counted in ``buffers.refused[k]``; a blend with fewer than
        two poses does nothing.

        The default pose from the queued tasks ("The pose" L102): for a human with
        ``buffers.queued_default[k]`` set (PlayerOptions.queued_default passed for it, and it
        has queued tasks), a first pass walks its queue row (first first) the same way onto a
        pose stack of its own (the reference pose its default; its refusals not counted),
        whose top (or the reference pose) goes to scratch pose ``QUEUED_POSE`` and is the
        default of the stack's pass: the rotations of bones 1-33 its samples leave out are
        that pose's (``Scratch.dflt``, ``_default_from``), and an empty stack shows it.

        The scratch holds 9 poses (0-6 the pose stack, 7 the reference pose, 8 the queued
        tasks' pose); ``buffers.weights`` (>= 64) is scratch. In: the tables as HumanCols,
        TaskCols, CursorCols, FadeCols, GaitCols, the EventIndex, the BankTables, a Scratch,
        the PoseOut and the PoseBuffers (anim.engine.kernel_types). One walk for the queue and the
        stack; each task by its type's named step, which takes the tables' named tuples
        (inlined or linked: LLVM keeps only the columns it reads): ``_pose_fade``,
        ``_pose_gait``, ``_pose_blend_task``, a clip's ``_push`` and ``_pose_window``, then
        ``_pose_windows`` and ``_pose_top``. Returns the index it stopped at: ``len(rows)``
        (``pose_lean``: the human whose pose takes a path it leaves out, none of it written).
        Original: 0x00176d60 CharacterInstance_Sample (0x005fd040, the queued tasks' buffer),
        0x00104ce0, 0x00104630 Instance_BuildBoneMatrices.
        """
        h_depth, h_stack, h_queued, h_queue = humans.depth, humans.stack, humans.queued, humans.queue
        t_type, t_rate, t_c0, t_nxt = tasks.type, tasks.rate, tasks.c0, tasks.nxt
        c_t, c_flags, c_bank = cursors.t, cursors.flags, cursors.bank
        submask = bank.submask
        refused, weights, queued_default = buffers.refused, buffers.weights, buffers.queued_default
        dflt_slot = scratch.dflt
        n_rows = rows.shape[0]
        stop = n_rows
        for k in range(n_rows):
            hi = rows[k]
            if k + PREFETCH_TASKS < n_rows:     # the rows of the humans ahead, on their way meanwhile
                fetch_tasks(rows[k + PREFETCH_TASKS], np.bool_(False), humans, tasks)
            if k + PREFETCH_ROWS < n_rows:
                fetch_rows(rows[k + PREFETCH_ROWS], np.bool_(False), humans, tasks, cursors, fades, gaits)
            dflt_slot[0] = -1
            over_queue = queued_default[k]
            if lean:
                if over_queue or _lean_refuses(hi, humans, tasks):
                    stop = k                    # (pose_stacks from this human on)
                    break
            passes = 2 if over_queue else 1
            sp = 0
            nref = 0
            for ps in range(passes):
                queue_pass = ps + 1 < passes           # the queue's pass first, then the stack's
                sp = 0
                nref = 0
                trows = h_queue if queue_pass else h_stack
                n_tasks = h_queued[hi] if queue_pass else h_depth[hi]
                for si in range(n_tasks):
                    r = np.int64(trows[hi, si])
                    nw = 0
                    while True:                         # a task, then the next tasks in their blend windows
                        tt = t_type[r]
                        if tt == _FADE:
                            sp = _pose_fade(r, np.int64(sp), tasks, fades, submask, scratch)
                            break
                        if tt == _GAIT:
                            sp, nref = _pose_gait(r, np.int64(sp), np.int64(nref), tasks, gaits, cursors, bank, scratch)
                            break
                        if tt == _MIX or tt == _PICK or tt == _DIRECTION:
                            if not lean:            # (pose_lean stopped before types 10, 11 and 13)
                                sp, nref = _pose_blend_task(r, np.int64(sp), np.int64(nref), tasks, cursors, bank,
                                                            scratch)
                            break
                        c = np.int64(t_c0[r])                     # a clip
                        if sp >= _POSES:
                            nref += 1
                        else:
                            _sample(np.int64(sp), np.int64(c_bank[c]), c_t[c], t_rate[r], np.int64(c_flags[c]), bank,
                                    scratch)
                            sp += 1
                        if tt != _CLIP and tt != _PAIRED_CLIP:
                            break
                        if not lean:
                            w = _pose_window(r, c, tasks, cursors, events, fades, gaits)
                        else:                       # (pose_lean stopped before the kept rule)
                            w = _pose_window_into(r, c, tasks, cursors, fades, gaits)[1]
                        if w < 0.0:
                            break
                        # a ring: the innermost windows' weights are kept (only they can act, innermost
                        # first, on the seven poses the stack holds)
                        weights[nw % weights.shape[0]] = np.float32(w)
                        nw += 1
                        r = np.int64(t_nxt[r])
                    sp = _pose_windows(np.int64(sp), np.int64(nw), weights, submask, scratch)
                if queue_pass:                         # its top is the default pose of the stack's pass
                    if not lean:                       # (pose_lean stopped before a queue's pass)
                        _keep_queued_pose(np.int64(sp), bank, scratch)
                        dflt_slot[0] = QUEUED_POSE
            dflt_slot[0] = -1
            refused[k] = nref
            _pose_top(k, np.int64(sp), over_queue, cols, bank, scratch, out)
        _emit_model(cols[stop - stop % _MODEL_BLOCK:stop], stop % _MODEL_BLOCK, bank, out)   # (the last block's)
        return stop

    pose_stacks.__name__ = pose_stacks.__qualname__ = "pose_lean" if lean else "pose_stacks"
    return _kernel(pose_stacks)


pose_stacks = _pose_kernel(False)
# the first step's pose kernel on a fresh install (anim.engine.coldstart.lean_first_step)
pose_lean = _pose_kernel(True)
