"""The compiled engine's numba kernels: FPU time arithmetic, the task stacks' step and pose, root motion.

Every function here is ``@njit(cache=CACHE)`` with fastmath off, takes arrays and scalars
only and writes into buffers its caller preallocated: nothing is allocated per update.
The machine code is cached on disk next to this file (``__pycache__/kernels.*.nbi`` /
``.nbc``; numba moves it to its user cache dir, or ``NUMBA_CACHE_DIR``, when that is not
writable), so the first run on a machine compiles (``anim.warmup.compile_kernels`` does it
ahead, with a progress line) and every later process loads it.

They live in one module on purpose: numba's on-disk cache is keyed on the source file
of each function, so a kernel in another module calling these would keep stale machine
code after an edit here.

Four groups:

- the float32 toward-zero add, sub, multiply and divide and the frame test, bit for bit
  those of ``anim.f32`` (tests/anim/test_kernels.py pins them on the 0.75 and 0.9 ties,
  subnormals and the largest floats);
- the pose: ``_sample`` (the key in force, bone 0 held and rate-scaled, the tags),
  ``_blend`` (Pose_BlendPartial's tag rules, subtree masks), ``_emit`` (local-to-model
  over the parent table), the slerp and the turn on polynomial angles within 3e-7 of
  numpy's; ``pose_plan`` runs a recorded plan (anim.plan) with them;
- the task stacks as table rows (anim.store: the task table with type, rate, flags,
  held bits, cursor rows, the fade's or gait's row, next and incoming links, blend time
  and window rule, released, handed over, wraps; the human table with the record's
  flags and the stack as task rows), driven by anim.batch:
  ``step_stacks`` steps every human it is given, task by task bottom-up: the
  toward-zero cursor, the end test and the zero-overshoot reading, the loop's wrap,
  type 3 / 6's hand-over and blend window (its next task advanced too, or kept), the
  fade's end and clean-up, the gait blend's value, pair (its new cursors taken from the
  cursor table's free list), leader and follower, type 10's weight, leader and
  follower, type 11's four clips in step, type 13's centre and followers, the held-flag
  events; fired events, deferred tasks and wraps are written as rows of preallocated
  buffers. ``pose_stacks`` samples every human's stack onto its pose stack of seven (an
  eighth pose refused and counted, 0x00104ce0), blends and builds the bone transforms;
  with PlayerOptions.queued_default, a human's queued tasks first, their pose its default.
  The plain-Python model of the spec (anim.reference) is the reference;
  tests/anim/test_reference.py ties the two bit for bit over random crowds;
- ``root_motion_step``: StateUpdate's root motion and move (Human_ApplyRootMotion).

Spec: "The cursor", "When a clip ends", "Fades", "Gait blend", "The key in force",
"The pose", "Blending", "Animation tasks", "The task stack". Original: 0x001044a0
AnimCursor_Advance, 0x00104ce0 AnimCursor_SamplePose, 0x00105158 Pose_BlendPartial,
0x00104630 Instance_BuildBoneMatrices, 0x00175610 (the stack's +0x64 calls), 0x00105770
(loop), 0x00105af0 (type 3's hand-over), 0x00106cc8 (fade), 0x0010a5b8 (gait),
0x0010b090 / 0x0010b448 (type 10), 0x00106f50 / 0x00107f60 (type 11), 0x00109210 /
0x0010a008 (type 13), 0x00176d60 CharacterInstance_Sample.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .clip import EventType
from . import detmath as _detmath
from .detmath import RAD
from .kernel_types import (BankTables, CursorCols, EventIndex, FadeCols, GaitCols, HumanCols, PlanArrays,
                           PoseBuffers, PoseOut, Scratch, StepBuffers, StepRules, TaskCols)
from .sampler import CursorFlags
from .store import NO_EVENT, NO_ROW
from .pose import POSE_STACK_SIZE
from .tasks import (GAIT_ALONE_HIGH, GAIT_ALONE_LOW, GAIT_FALL_FRACTION, GAIT_STEPS, HELD_EVENTS, PICK_SAMPLINGS,
                    PICK_THRESHOLDS, WINDOW_RULES, BlendWindow, HeldFlags, PickSampling, TaskType)
from .jitcache import cache_setting
from .jitpipe import LinkOnlyCompiler, link_only_supported

# numba's on-disk cache: True, or False with no writable cache folder (the kernels then
# compile for the process only); a corrupt cache is set aside first (anim/jitcache.py).
CACHE = cache_setting(__file__)
# The decorator of the named steps and helpers, which only the kernels call: no CPython
# or C wrapper (numba compiles one per function otherwise, unboxing every argument, for
# a call from Python that never comes: a quarter of the cold compile),
# and no reference counting (_nrt=False: the arrays they take are the kernel's). Never
# call one from Python (it has no entry point there); from an @njit function, as the
# kernels do. Compiled for linking only (anim/jitpipe.py: no machine code of its own,
# so not in numba's on-disk cache either: cache=False; the kernels that link it are).
# Under a numba release anim/jitpipe.py was not checked against, numba's usual way
# (machine code and a cache entry of their own: slower to compile, the same kernels).
LINK_ONLY = link_only_supported()
_helper = (njit(cache=False, _nrt=False, no_cpython_wrapper=True,  # type: ignore[call-overload]
                no_cfunc_wrapper=True, pipeline_class=LinkOnlyCompiler) if LINK_ONLY else
           njit(cache=CACHE, _nrt=False, no_cpython_wrapper=True,  # type: ignore[call-overload]
                no_cfunc_wrapper=True))
# The kernels', which Python calls: without reference counting either (the caller holds
# every array for the call; its unboxing then cleans nothing up) and no C wrapper.
# They release the GIL (nogil): BatchEngine steps and poses chunks of a crowd on threads.
_kernel = njit(cache=CACHE, _nrt=False, no_cfunc_wrapper=True, nogil=True)  # type: ignore[call-overload]
# The pose's named steps: inlined into pose_stacks by numba (each a call that LLVM keeps
# passes the bank and scratch tuples field by field, which slows pose_stacks).
_inline = njit(cache=CACHE, inline="always")

__all__ = ["add", "sub", "mul", "div", "frame_of", "pose_plan", "root_motion_step", "NO_POSE", "step_stacks",
           "pose_stacks", "STATUS_BAD", "STATUS_STACK", "STATUS_EVENTS", "STATUS_TOP", "STATUS_DEFERRED",
           "STATUS_SKIPPED",
           "COUNT_EVENTS", "COUNT_DEFERRED", "COUNT_STOPPED", "COUNT_GAITS", "COUNT_WRAPS",
           # the interfaces (anim.kernel_types), for the callers
           "HumanCols", "TaskCols", "CursorCols", "FadeCols", "GaitCols", "EventIndex", "StepRules", "StepBuffers",
           "BankTables", "Scratch", "PoseOut", "PlanArrays", "PoseBuffers", "QUEUED_POSE"]

_FLT_MAX = 3.4028234663852886e38
_INT_MAX = 2147483647.0
_F32_ZERO = np.float32(0.0)
# Cursor flags the sampler tests, as plain ints (numba freezes globals as constants).
_NO_VELOCITY = int(CursorFlags.NO_VELOCITY)     # 0x1: section A not sampled
_NO_TURN = int(CursorFlags.NO_TURN)             # 0x2: bone 0 not sampled
NO_POSE = -(1 << 40)          # a plan's final handle for "no pose": the default pose
QUEUED_POSE = POSE_STACK_SIZE + 1   # pose_stacks' scratch pose of the queued tasks' pose (queued_default)
# anim.detmath's source, whose scalar forms compile into these kernels: numba's cache is
# keyed on this file only, so an edit there must change this line (tests/anim/test_detmath.py).
DETMATH_SHA256 = "fef4956f3a2564661bdafb27befc0bcd6091bf5b5435f74749389d03aefd4f62"




# ---------------------------------------------------------------- FPU arithmetic


@_helper
def _truncate(r, err):
    """The exact value r + err (r a double, err its tail) truncated to float32 (as float64)."""
    if r != r or r == math.inf or r == -math.inf:
        return r
    if r == 0.0 and err == 0.0:
        return r
    f = np.float32(r)                       # nearest (inf past FLT_MAX)
    fd = np.float64(f)
    if abs(fd) > abs(r):
        f = np.nextafter(f, _F32_ZERO)      # rounded away from zero: one step back
    elif fd == r and err != 0.0 and fd != 0.0 and (err < 0.0) != (fd < 0.0):
        f = np.nextafter(f, _F32_ZERO)      # r is a float32, the exact value just inside it
    return np.float64(f)


@_helper
def _add(a, b):
    """float32 a + b rounded toward zero (float64 in and out, holding float32 values)."""
    r = a + b
    bb = r - a
    err = (a - (r - bb)) + (b - bb)         # TwoSum: a + b == r + err exactly
    return _truncate(r, err)


@_helper
def _sub(a, b):
    """float32 a - b rounded toward zero."""
    return _add(a, -b)


@_helper
def _mul(a, b):
    """float32 a x b rounded toward zero (the double product of two float32s is exact)."""
    return _truncate(a * b, 0.0)


@_helper
def _div(a, b):
    """float32 a / b rounded toward zero (b != 0)."""
    q = a / b
    if q != q or q == math.inf or q == -math.inf:
        return _truncate(q, 0.0)
    r = q * b
    return _truncate(q, (a - r) / b)


@_helper
def _frame_of(t):
    """The cursor frame uint(t x 30 + 0.5) in the FPU's arithmetic, saturating."""
    v = _add(_mul(t, 30.0), 0.5)
    if v > 0.0:
        return np.int64(_INT_MAX if _INT_MAX < v else v)     # min(v, _INT_MAX)
    return np.int64(0)


def _python_of(f):
    """The Python function of an njit dispatcher (itself under NUMBA_DISABLE_JIT=1)."""
    return getattr(f, "py_func", f)


# anim.detmath's scalar forms as the kernels call them: link-only (anim.jitpipe) like the
# helpers, compiled from detmath's own Python functions (register_jitable: numba compiled
# each with machine code of its own in every process; what they call inside stays so).
acos_s = _helper(_detmath.acos_s)
cos_pi_s = _helper(_detmath.cos_pi_s)
sin_cos_s = _helper(_detmath.sin_cos_s)
sin_cos_deg_s = _helper(_detmath.sin_cos_deg_s)

# The same five for Python (tests, anim.f32's twins): compiled with an entry point and
# cached, when Python calls them; the kernels call the link-only ones above (anim.jitpipe).
add = njit(cache=CACHE)(_python_of(_add))
sub = njit(cache=CACHE)(_python_of(_sub))
mul = njit(cache=CACHE)(_python_of(_mul))
div = njit(cache=CACHE)(_python_of(_div))
frame_of = njit(cache=CACHE)(_python_of(_frame_of))


# ---------------------------------------------------------------- poses
#
# Scratch poses are human-major: vel (P, 3), root (P, 3), rot (P, 34, 4), tag (P, 36).
#
# The slerps' and the turns' angles, the fade's cosine and the heading's sine and cosine
# come from anim.detmath (+ - * / and sqrt only, within a few ulp of libm in float64),
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
# call and _blend some more, about a tenth of the pipeline. _slerp_into is
# ``inline='always'`` (into _blend). Inlining all of them was no faster and doubled the
# first-run compile time.



@_helper
def _key4(kslope, kval, k, dx):
    """A rotation key carried toward the next: value + slope x (frame - key), per
    component, in the table's float32 (the multiply, then the add, as the sampler does)."""
    return (kslope[k, 0] * dx + kval[k, 0], kslope[k, 1] * dx + kval[k, 1],
            kslope[k, 2] * dx + kval[k, 2], kslope[k, 3] * dx + kval[k, 3])


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


@_helper
def _tag_bits(p, scratch):
    """Scratch pose p's tags into the lowest bit of each value's y float (pose.set_tag_bits):
    set on a default, cleared otherwise ("The pose" L102: "| 1 on the second 32-bit float;
    sampled values have the bit cleared"). Through the int32 views of the same memory."""
    s_tag, vel_i, root_i, rot_i = scratch.tag, scratch.vel_i, scratch.root_i, scratch.rot_i
    vel_i[p, 1] = (vel_i[p, 1] & np.int32(-2)) | np.int32(s_tag[p, 0])
    root_i[p, 1] = (root_i[p, 1] & np.int32(-2)) | np.int32(s_tag[p, 1])
    for b in range(rot_i.shape[1]):
        rot_i[p, b, 1] = (rot_i[p, b, 1] & np.int32(-2)) | np.int32(s_tag[p, 2 + b])


@_helper
def _sample(p, clip, time, rate, flags, bank, scratch):
    """One cursor's pose into scratch pose ``p`` (ClipBank.sample for one cursor).

    The bank's tables come key-major here: ``ftab`` (rows, 36), ``kval`` / ``kslope`` (K, 4).
    Slots 0-2 (velocity, root, bone 0) are taken before the bone loop; key indices are
    read as unsigned (no negative-index wrap on the table reads); a bone's key is
    normalised by multiplying by the float32 reciprocal of its norm (within 1 ulp of
    dividing).
    """
    row0, rows, ftab, kval, kslope, kstart, ktag = (bank.row0, bank.rows, bank.ftab, bank.kval, bank.kslope,
                                                    bank.kstart, bank.ktag)
    sent_vel, sent_bone, animated = bank.sent_vel, bank.sent_bone, bank.animated
    ref_rot, bind_height = bank.ref_bone_rot, bank.bind_height
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    x = np.float32(_mul(np.float64(time), 30.0))
    f = math.ceil(np.float64(x) - 0.5)
    if f < 0.0:
        f = 0.0
    fi = np.int64(f)
    last = rows[clip] - 1
    if fi > last:
        fi = last
    row = row0[clip] + fi
    nslot = ftab.shape[1]
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
    # slot 2: bone 0, the turn scaled by the rate (a slerp from the identity)
    k = np.uint64(sent_bone if (flags & _NO_TURN) != 0 else ftab[row, 2])
    s_tag[p, 2] = ktag[k]
    qx, qy, qz, qw = _key4(kslope, kval, k, x - kstart[k])
    qx, qy, qz, qw = _scale_turn(qx, qy, qz, qw, rate32)
    s_rot[p, 0, 0] = qx
    s_rot[p, 0, 1] = qy
    s_rot[p, 0, 2] = qz
    s_rot[p, 0, 3] = qw
    # bones 1-33: the key in force, normalised; a bone the clip leaves out (its key a
    # default, tagged) or no clip of the bank animates takes the default pose's rotation as
    # it is ("The pose" L102: copied from the default pose, not through the key path, whose
    # normalisation would move it by an ulp): the reference pose's here, or with
    # queued_default the queued tasks' pose's (scratch.dflt, after the loop)
    for slot in range(3, nslot):
        k = np.uint64(ftab[row, slot])
        s_tag[p, slot] = ktag[k]
        b = slot - 2
        if not animated[slot] or ktag[k]:
            s_rot[p, b, 0] = ref_rot[b, 0]
            s_rot[p, b, 1] = ref_rot[b, 1]
            s_rot[p, b, 2] = ref_rot[b, 2]
            s_rot[p, b, 3] = ref_rot[b, 3]
            continue
        q0, q1, q2, q3 = _key4(kslope, kval, k, x - kstart[k])
        n2 = q0 * q0
        n2 = n2 + q1 * q1
        n2 = n2 + q2 * q2
        n2 = n2 + q3 * q3
        n = np.float32(math.sqrt(n2))
        if n == 0:
            n = np.float32(1.0)
        inv = np.float32(1.0) / n
        s_rot[p, b, 0] = q0 * inv
        s_rot[p, b, 1] = q1 * inv
        s_rot[p, b, 2] = q2 * inv
        s_rot[p, b, 3] = q3 * inv
    d = scratch.dflt[0]
    if d >= 0:
        _default_from(p, d, scratch)
    if scratch.tag_bits:
        _tag_bits(p, scratch)


@_helper
def _default_from(p, d, scratch):
    """Scratch pose p's bones 1-33 taken from the default (tagged) get scratch pose d's
    rotations as they are: the default pose is the queued tasks' pose (queued_default,
    "The pose" L102; bone 0, the velocity and the root translation keep the reference
    pose's). A bone is tagged exactly when ``_sample`` took it from the default (a slot no
    clip of the bank animates has the tagged sentinel key)."""
    s_rot, s_tag = scratch.rot, scratch.tag
    for b in range(1, s_rot.shape[1]):
        if s_tag[p, 2 + b]:
            s_rot[p, b, 0] = s_rot[d, b, 0]
            s_rot[p, b, 1] = s_rot[d, b, 1]
            s_rot[p, b, 2] = s_rot[d, b, 2]
            s_rot[p, b, 3] = s_rot[d, b, 3]


@njit(cache=CACHE, inline='always')
def _slerp_into(s_rot, pa, pb, b, t, po):
    """Quat_Slerp of bone b, poses pa -> pb by t (clamped), into pose po (quat.slerp).

    Shortest path (b negated when the dot is negative), a normalised lerp above |dot|
    0.9995; else the weights sin((1 - t) theta) / sin(theta) and sin(t theta) / sin(theta)
    in float64 from the polynomial acos and sin (theta <= pi/2), 1 / sin(theta) as
    1 / sqrt(1 - dot^2), rounded to float32 as numpy's float32 slerp rounds them. Max
    error vs quat.slerp under 3e-7 (weights under 5e-8; was libm acos, sin and cos).
    """
    t = np.float32(0.0) if np.float32(0.0) > t else t     # min(max(t, 0), 1)
    t = np.float32(1.0) if np.float32(1.0) < t else t
    ax = s_rot[pa, b, 0]
    ay = s_rot[pa, b, 1]
    az = s_rot[pa, b, 2]
    aw = s_rot[pa, b, 3]
    bx = s_rot[pb, b, 0]
    by = s_rot[pb, b, 1]
    bz = s_rot[pb, b, 2]
    bw = s_rot[pb, b, 3]
    dot = ax * bx + ay * by + az * bz + aw * bw
    d = abs(dot)
    d = np.float32(1.0) if np.float32(1.0) < d else d     # min(abs(dot), 1)
    if d > np.float32(0.9995):
        wb = t if dot >= 0 else -t
        wa = np.float32(1.0) - t
        ox = ax * wa + bx * wb
        oy = ay * wa + by * wb
        oz = az * wa + bz * wb
        ow = aw * wa + bw * wb
        n = np.float32(math.sqrt(ox * ox + oy * oy + oz * oz + ow * ow))
        if n == 0:
            ox = np.float32(0.0)
            oy = np.float32(0.0)
            oz = np.float32(0.0)
            ow = np.float32(1.0)
        else:
            ox = ox / n
            oy = oy / n
            oz = oz / n
            ow = ow / n
    else:
        dd = np.float64(d)
        td = np.float64(t)
        theta = acos_s(dd)
        inv = 1.0 / math.sqrt(1.0 - dd * dd)
        wa = np.float32(sin_cos_s((1.0 - td) * theta)[0] * inv)
        wb = np.float32(sin_cos_s(td * theta)[0] * inv)
        if dot < 0:
            wb = -wb
        ox = ax * wa + bx * wb
        oy = ay * wa + by * wb
        oz = az * wa + bz * wb
        ow = aw * wa + bw * wb
    s_rot[po, b, 0] = ox
    s_rot[po, b, 1] = oy
    s_rot[po, b, 2] = oz
    s_rot[po, b, 3] = ow


@_helper
def _blend(pa, pb, po, w, mbone, submask, scratch):
    """Pose_BlendPartial of scratch poses pa (lower) and pb (upper) by w into po (pose.blend).

    ``mbone`` >= 0 limits the blend to that bone's subtree (``submask[mbone]``).
    """
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    nb = s_rot.shape[1]
    full = mbone < 0
    # motion channels: a tagged side gives way
    if full or submask[mbone, 0]:
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
                s_rot[po, 0, c] = s_rot[pa, 0, c]
        elif lt2:
            for c in range(4):
                s_rot[po, 0, c] = s_rot[pb, 0, c]
        else:
            _slerp_into(s_rot, pa, pb, 0, w, po)
        s_tag[po, 0] = lt and ut
        s_tag[po, 2] = lt2 and ut2
    else:
        for c in range(3):
            s_vel[po, c] = s_vel[pa, c]
        for c in range(4):
            s_rot[po, 0, c] = s_rot[pa, 0, c]
        s_tag[po, 0] = s_tag[pa, 0]
        s_tag[po, 2] = s_tag[pa, 2]
    # the root translation: both tagged keeps the lower's
    both = s_tag[pa, 1] and s_tag[pb, 1]
    if (full or submask[mbone, 1]) and not both:
        for c in range(3):
            lo = s_root[pa, c]
            s_root[po, c] = lo + (s_root[pb, c] - lo) * w
        s_tag[po, 1] = False
    else:
        for c in range(3):
            s_root[po, c] = s_root[pa, c]
        s_tag[po, 1] = s_tag[pa, 1] if not full and not submask[mbone, 1] else both
    for b in range(1, nb):
        both = s_tag[pa, 2 + b] and s_tag[pb, 2 + b]
        if (full or submask[mbone, b]) and not both:
            _slerp_into(s_rot, pa, pb, b, w, po)
            s_tag[po, 2 + b] = False
        else:
            if po != pa:
                for c in range(4):
                    s_rot[po, b, c] = s_rot[pa, b, c]
            s_tag[po, 2 + b] = s_tag[pa, 2 + b] if not full and not submask[mbone, b] else both
    if scratch.tag_bits:            # a blended value's bit follows its tag too (ours: L104 is silent)
        _tag_bits(po, scratch)


@_helper
def _emit(p, i, bank, scratch, out):
    """Scratch pose p to output column i: the pose, then local-to-model (skeleton.model_space);
    entry 0 the motion channels (``scratch.motion_entry``) or zero and the identity.

    One pass over the bones: each local rotation is read once, copied out and composed
    with its parent's model rotation (read back from the column just written; the
    parent index as unsigned).
    """
    parents, offsets = bank.parents, bank.offsets
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    o_vel, o_root, o_rot, o_tag, o_pos, o_mrot = out.vel, out.root, out.rot, out.tag, out.pos, out.mrot
    nb = s_rot.shape[1]
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
        o_rot[c, 0, i] = s_rot[p, 0, c]
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
                o_mrot[c, 0, i] = s_rot[p, 0, c]
    o_pos[0, 1, i] = rx
    o_pos[1, 1, i] = ry
    o_pos[2, 1, i] = rz
    for c in range(4):
        v = s_rot[p, 1, c]
        o_rot[c, 1, i] = v
        o_mrot[c, 1, i] = v
    for b in range(2, nb):
        bx = s_rot[p, b, 0]
        by = s_rot[p, b, 1]
        bz = s_rot[p, b, 2]
        bw = s_rot[p, b, 3]
        vx = offsets[b, 0]
        vy = offsets[b, 1]
        vz = offsets[b, 2]
        par = np.uint64(parents[b])
        ax = o_mrot[0, par, i]
        ay = o_mrot[1, par, i]
        az = o_mrot[2, par, i]
        aw = o_mrot[3, par, i]
        px = o_pos[0, par, i]
        py = o_pos[1, par, i]
        pz = o_pos[2, par, i]
        o_rot[0, b, i] = bx
        o_rot[1, b, i] = by
        o_rot[2, b, i] = bz
        o_rot[3, b, i] = bw
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
def _reference(p, bank, scratch):
    """The default pose into scratch pose p (PoseBatch.reference)."""
    ref_rot, bind_height = bank.ref_rot, bank.bind_height
    s_vel, s_root, s_rot, s_tag = scratch.vel, scratch.root, scratch.rot, scratch.tag
    for c in range(3):
        s_vel[p, c] = 0.0
        s_root[p, c] = 0.0
    s_root[p, 2] = bind_height
    for b in range(s_rot.shape[1]):
        for c in range(4):
            s_rot[p, b, c] = ref_rot[b, c]
    for t in range(s_tag.shape[1]):
        s_tag[p, t] = True
    if scratch.tag_bits:
        _tag_bits(p, scratch)


@_helper
def _fade_weight(el, dur):
    """anim.tasks.fade_weight: (1 + cos(pi t / d)) / 2, d <= 0 gives 0."""
    if dur <= 0.0:
        return 0.0
    q = el / dur
    x = 0.0 if 0.0 > q else q             # min(max(el / dur, 0), 1)
    x = 1.0 if 1.0 < x else x
    return (1.0 + cos_pi_s(x)) / 2.0


@_kernel
def pose_plan(cols, plan, bank, scratch, out):
    """A recorded pose-stack plan (anim.plan.SamplePlan), human by human, into columns ``cols``.

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


# ---------------------------------------------------------------- task stacks
#
# The task stacks as table rows (anim.store): the step and the pose of every human's
# whole stack (see step_stacks and pose_stacks; anim.batch drives them).

# Numba freezes module globals as constants: the enums as plain ints.
_LOOP = int(TaskType.LOOP)
_CLIP = int(TaskType.CLIP)
_PAIRED_HOLD = int(TaskType.PAIRED_HOLD)
_HOLD = int(TaskType.HOLD)
_PAIRED_CLIP = int(TaskType.PAIRED_CLIP)
_SCENE = int(TaskType.SCENE)
_FADE = int(TaskType.FADE)
_AGAIN = -(1 << 62)          # flush_anim_ids: a human listed again (done at its first place)
_GAIT = int(TaskType.GAIT)
_MIX = int(TaskType.MIX)
_PICK = int(TaskType.PICK)
_DIRECTION = int(TaskType.DIRECTION)
_MUTED = int(CursorFlags.MUTED)
_CURSOR_BITS = int(CursorFlags.NO_VELOCITY | CursorFlags.NO_TURN | CursorFlags.MUTED)
_HELD_OPEN = int(EventType.HELD_OPEN)
_HELD_CLOSE = int(EventType.HELD_CLOSE)
_HELD_REPLACE = int(EventType.HELD_REPLACE)
_REPLACED = int(HeldFlags.REPLACED)
_NO_EVENT = int(NO_EVENT)
_NO_ROW = int(NO_ROW)
_STEP0 = float(GAIT_STEPS[0])
_STEP1 = float(GAIT_STEPS[1])
_STEP2 = float(GAIT_STEPS[2])
_ALONE_LOW = float(GAIT_ALONE_LOW)
_ALONE_HIGH = float(GAIT_ALONE_HIGH)
_FALL = float(GAIT_FALL_FRACTION)
_PICK0 = float(PICK_THRESHOLDS[0])
_PICK1 = float(PICK_THRESHOLDS[1])
_PICK2 = float(PICK_THRESHOLDS[2])
_PICK_ALL = PICK_SAMPLINGS.index(PickSampling.ALL)   # the task table's sampling column
_KEPT = WINDOW_RULES.index(BlendWindow.KEPT)     # the task table's window column
_POSES = POSE_STACK_SIZE        # the pose stack (0x00104ce0 refuses an eighth)
_OPEN_NEED, _OPEN_CLEAR, _OPEN_SET = HELD_EVENTS[EventType.HELD_OPEN]
_CLOSE_NEED, _CLOSE_CLEAR, _CLOSE_SET = HELD_EVENTS[EventType.HELD_CLOSE]
_WALK = 64                      # scratch rows for walks over a stack and its next tasks

# status bits per human (step_stacks' ``status``)
STATUS_BAD = 1                  # not stepped: a task without the rows the kernel follows
STATUS_STACK = 2                # its stack rows (or a next / incoming link) changed
STATUS_EVENTS = 4               # it fired events (rows in ev_out)
STATUS_TOP = 8                  # the playing anim id may have changed (refresh at the flush)
STATUS_DEFERRED = 16            # it put tasks on the deferred list
STATUS_SKIPPED = 32             # not stepped: its gait changes pair (StepRules.skip_pairs)
# counts (step_stacks' ``counts``)
COUNT_EVENTS = 0
COUNT_DEFERRED = 1
COUNT_STOPPED = 2               # the index it stopped at (== len(rows) when done)
COUNT_GAITS = 3                 # gaits whose pair changed
COUNT_WRAPS = 4                 # wraps of tasks with a wrap callback (wrap_out rows)


# ---------------------------------------------------------------- cursors


@_helper
def _set_next_event(c, i, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    c_ev[c] = i
    b = c_bank[c]
    if i < e_count[b]:
        c_evf[c] = e_frame[e_first[b] + i]
    else:
        c_evf[c] = _NO_EVENT


@_helper
def _fire(hi, c, tr, sink_on, c_frame, c_flags, c_bank, c_ev, c_evf, e_first, e_count, e_frame, ev_out, n_ev):
    """Cursor._fire: the events up to the cursor's frame, as rows (none when muted)."""
    b = c_bank[c]
    first = e_first[b]
    n = e_count[b]
    i = np.int64(c_ev[c])
    frame = c_frame[c]
    muted = (not sink_on) or (c_flags[c] & _MUTED) != 0
    while i < n and e_frame[first + i] <= frame:
        if not muted:
            ev_out[n_ev, 0] = hi
            ev_out[n_ev, 1] = tr
            ev_out[n_ev, 2] = c
            ev_out[n_ev, 3] = first + i
            n_ev += 1
        i += 1
    _set_next_event(c, i, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
    return n_ev


@_helper
def _skip(c, c_frame, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    """Cursor._skip: every event up to the frame counts as passed."""
    b = c_bank[c]
    first = e_first[b]
    n = e_count[b]
    frame = c_frame[c]
    i = 0
    while i < n and e_frame[first + i] <= frame:
        i += 1
    _set_next_event(c, i, c_bank, c_ev, c_evf, e_first, e_count, e_frame)


@_helper
def _set_time(c, t, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    """Cursor.set_time: the time without a step, the frame capped at F - 1."""
    c_t[c] = t
    f = _frame_of(t)
    cap = np.int64(c_end[c]) - 1
    cap = 0 if 0 > cap else cap          # max(end - 1, 0)
    if f > cap:
        f = cap
    c_frame[c] = f
    if f >= c_evf[c] or c_ev[c] > 0:
        _skip(c, c_frame, c_bank, c_ev, c_evf, e_first, e_count, e_frame)


@_helper
def _restart(c, c_t, c_frame, c_at_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    """Cursor.restart: time 0, frame 0, no event passed. Original: AnimCursor_Restart."""
    c_t[c] = 0.0
    c_frame[c] = 0
    c_at_end[c] = False
    _set_next_event(c, np.int64(0), c_bank, c_ev, c_evf, e_first, e_count, e_frame)


@_helper
def _advance(hi, c, r, step, sink_on, c_t, c_frame, c_end, c_limit, c_flags, c_bank, c_ev, c_evf, c_at_end,
             e_first, e_count, e_frame, ev_out, n_ev):
    """Cursor.advance: by ``step``; the events reached go to ``ev_out`` as task ``r``'s
    (muted: none). Returns (the overshoot or 0.0, the events' new count).
    Original: 0x001044a0 AnimCursor_Advance."""
    t = _add(np.float64(c_t[c]), step)
    f = _frame_of(t)
    if f >= c_end[c]:
        c_at_end[c] = True
        return _sub(t, np.float64(c_limit[c])), n_ev
    c_at_end[c] = False
    c_t[c] = t
    c_frame[c] = f
    if f >= c_evf[c]:
        n_ev = _fire(hi, c, r, sink_on, c_frame, c_flags, c_bank, c_ev, c_evf, e_first, e_count, e_frame, ev_out,
                     n_ev)
    return 0.0, n_ev


@_helper
def _advance_looping(hi, c, r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit, c_flags, c_bank, c_ev,
                     c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev):
    """tasks._advance_looping: advance; when the clip ended, restart and advance by the
    overshoot (period D - 1/60). Returns (wrapped, the events' new count)."""
    over, n_ev = _advance(hi, c, r, step, sink_on, c_t, c_frame, c_end, c_limit, c_flags, c_bank, c_ev, c_evf,
                          c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
    if over != 0.0 or (zero_overshoot and c_at_end[c]):
        _restart(c, c_t, c_frame, c_at_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
        _, n_ev = _advance(hi, c, r, over, sink_on, c_t, c_frame, c_end, c_limit, c_flags, c_bank, c_ev, c_evf,
                           c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
        return True, n_ev
    return False, n_ev


# ---------------------------------------------------------------- task helpers


@_helper
def _lead(r, t_c0, t_c1, t_aux, g_leader):
    """A gait's leading cursor row (the lower when leader is 0)."""
    if g_leader[t_aux[r]] == 0:
        return t_c0[r]
    return t_c1[r]


@_helper
def _pick_chosen(v):
    """PickTask.chosen: the audible clip of value ``v``, 0 below 0.51, 1 below 1.51, 2 below 2.51, else 3."""
    if v < _PICK0:
        return 0
    if v < _PICK1:
        return 1
    if v < _PICK2:
        return 2
    return 3


@_helper
def _cursor_k(r, k, t_c0, t_c1, t_c2, t_c3):
    """Task ``r``'s cursor row ``k`` (0-3: columns c0-c3)."""
    if k == 0:
        return t_c0[r]
    if k == 1:
        return t_c1[r]
    if k == 2:
        return t_c2[r]
    return t_c3[r]


@_helper
def _lead_of(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, g_leader):
    """Task.leading_cursor's row: a gait's leader, a mix's heavier clip (the second from
    a weight of 0.5), a pick's chosen clip, a direction's centre (c1), a clip's cursor."""
    tt = t_type[r]
    if tt == _GAIT:
        return _lead(r, t_c0, t_c1, t_aux, g_leader)
    if tt == _MIX:
        return t_c1[r] if t_value[r] >= 0.5 else t_c0[r]
    if tt == _PICK:
        return _cursor_k(r, _pick_chosen(t_value[r]), t_c0, t_c1, t_c2, t_c3)
    if tt == _DIRECTION:
        return t_c1[r]
    return t_c0[r]


@_helper
def _duration(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, c_dur, f_dur, g_leader):
    """Task.duration (+0xd4): the leading clip's, a fade's time."""
    if t_type[r] == _FADE:
        return np.float64(f_dur[t_aux[r]])
    return np.float64(c_dur[_lead_of(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, g_leader)])


@_helper
def _window(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, c_dur, f_dur, g_leader):
    """ClipTask.window: b, at most the next task's duration (0 without a next task)."""
    nx = t_nxt[r]
    b = np.float64(t_blend[r])
    if nx < 0 or b <= 0.0:
        return 0.0
    d = _duration(nx, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, c_dur, f_dur, g_leader)
    return d if d < b else b              # min(b, d)


@_helper
def _pair_index(v):
    if v < _STEP0:
        return 0
    if v < _STEP1:
        return 1
    if v < _STEP2:
        return 2
    return 3


@_helper
def _gait_value(r, dt, t_rate, t_speed, t_aux, g_value, g_target):
    """The gait's value after this update's move toward the target (GaitTask.advance)."""
    g = t_aux[r]
    old = np.float64(g_value[g])
    tgt = np.float64(g_target[g])
    limit = _mul(_mul(np.float64(t_rate[r]), dt), np.float64(t_speed[r]))
    if tgt > old:
        v = _add(old, limit)
        return tgt if tgt < v else v      # min(old + limit, tgt)
    if tgt < old:
        v = _sub(old, limit)
        return tgt if tgt > v else v      # max(old - limit, tgt)
    return old


@_helper
def _runnable(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux):
    """Whether the kernel runs task ``r``: a type it knows (1, 3-7, 9-13) with its rows."""
    tt = t_type[r]
    if tt == _LOOP or tt == _CLIP or tt == _PAIRED_HOLD or tt == _HOLD or tt == _PAIRED_CLIP or tt == _SCENE:
        return t_c0[r] >= 0
    if tt == _FADE:
        return t_aux[r] >= 0
    if tt == _GAIT:
        return t_aux[r] >= 0 and t_c0[r] >= 0 and t_c1[r] >= 0
    if tt == _MIX:
        return t_c0[r] >= 0 and t_c1[r] >= 0
    if tt == _PICK:
        return t_c0[r] >= 0 and t_c1[r] >= 0 and t_c2[r] >= 0 and t_c3[r] >= 0
    if tt == _DIRECTION:
        return t_c0[r] >= 0 and t_c1[r] >= 0 and t_c2[r] >= 0
    return False


@_helper
def _seed_walk(hi, h_depth, h_stack, walk):
    """Put the human's stack rows on the walk's scratch (a walk then pops them and pushes
    next tasks); returns how many are on it."""
    n = h_depth[hi]
    for i in range(n):
        walk[i] = h_stack[hi, i]
    return n


@_helper
def _find(hi, r, h_depth, h_stack):
    for i in range(h_depth[hi]):
        if h_stack[hi, i] == r:
            return i
    return -1


@_helper
def _of_five(g, idx, c0, c1, c2, c3, c4):
    """Row ``g`` of the ``idx``-th (0-4) of a gait's five columns (its ids ``id0``-``id4``
    or their clips' bank indices ``b0``-``b4``)."""
    if idx == 0:
        return c0[g]
    if idx == 1:
        return c1[g]
    if idx == 2:
        return c2[g]
    if idx == 3:
        return c3[g]
    return c4[g]


@_helper
def _take_cursor(bank, anim, cursors, events):
    """Cursor.__init__ in the kernel: a row from the cursor table's free list (the caller
    reserved enough), restarted on clip ``bank`` (its end test, duration and first event)
    for ``anim``, flags 0. Returns the row. Original: 0x001041f8 AnimCursor_Init."""
    n = cursors.n_free[0] - 1
    c = cursors.free_rows[n]
    cursors.n_free[0] = n
    cursors.live[c] = True
    cursors.t[c] = 0.0
    cursors.frame[c] = 0
    cursors.end[c] = events.end[bank]
    cursors.limit[c] = events.limit[bank]
    cursors.dur[c] = events.dur[bank]
    cursors.flags[c] = 0
    cursors.bank[c] = bank
    cursors.ev[c] = 0
    if events.n[bank] > 0:
        f0 = events.frame[events.first[bank]]
    else:
        f0 = _NO_EVENT
    cursors.evf[c] = f0
    cursors.evf0[c] = f0
    cursors.at_end[c] = False
    cursors.anim[c] = anim
    return c


@_helper
def _give_cursor(c, cursors):
    """Cursor.dispose in the kernel: the row back on the free list, its generation up."""
    _give_row(c, cursors.live, cursors.gen, cursors.free_rows, cursors.n_free)


@_helper
def _new_pair(r, nl, t_c0, t_c1, t_aux, gaits, cursors, events, out):
    """GaitTask.advance's change of pair to ``nl``: each of the two cursors is kept once, by
    id (a pair of one id twice keeps the upper); a clip that comes in gets a new cursor
    (``_take_cursor``); the cursors not kept go back (``_give_cursor``), after. Writes the
    new (lower, upper) rows into ``out[0:2]`` and, for a clip that comes in, 1 into
    ``out[2 + j]``."""
    g = t_aux[r]
    lower = np.int64(gaits.lower[g])
    k_id0 = _of_five(g, lower, gaits.id0, gaits.id1, gaits.id2, gaits.id3, gaits.id4)
    k_id1 = _of_five(g, lower + 1, gaits.id0, gaits.id1, gaits.id2, gaits.id3, gaits.id4)
    k_alive0 = k_id0 != k_id1                # one id twice: the dict keeps the upper
    k_alive1 = True
    old0 = t_c0[r]
    old1 = t_c1[r]
    for j in range(2):
        cid = _of_five(g, nl + j, gaits.id0, gaits.id1, gaits.id2, gaits.id3, gaits.id4)
        out[2 + j] = 0
        if k_alive0 and k_id0 == cid:
            out[j] = old0
            k_alive0 = False
        elif k_alive1 and k_id1 == cid:
            out[j] = old1
            k_alive1 = False
        else:
            bank = _of_five(g, nl + j, gaits.b0, gaits.b1, gaits.b2, gaits.b3, gaits.b4)
            out[j] = _take_cursor(bank, cid, cursors, events)
            out[2 + j] = 1
    # the cursors not kept go back, then the lower of a pair of one id twice (the order of
    # GaitTask.advance: the dict's values left, then the dropped one)
    if k_alive0:
        _give_cursor(old0, cursors)
    if k_alive1:
        _give_cursor(old1, cursors)
    if k_id0 == k_id1:
        _give_cursor(old0, cursors)


@_helper
def _defer(hi, r, t_released, def_out, n_def):
    """Player.defer: on the deferred list once. Original: 0x00105640 AnimTask_DeferGive."""
    if not t_released[r]:
        t_released[r] = True
        def_out[n_def, 0] = hi
        def_out[n_def, 1] = r
        n_def += 1
    return n_def


@_helper
def _owner_of(hi, task, h_depth, h_stack, t_type, t_nxt, t_handed, walk):
    """Player._owner_of: the clip task (on the stack or following one) whose next is ``task``."""
    n = _seed_walk(hi, h_depth, h_stack, walk)
    while n > 0:
        n -= 1
        t = walk[n]
        tt = t_type[t]
        if (tt == _CLIP or tt == _PAIRED_CLIP) and not t_handed[t]:
            if t_nxt[t] == task:
                return t
            if t_nxt[t] >= 0 and n < walk.shape[0]:
                walk[n] = t_nxt[t]
                n += 1
    return -1


@_helper
def _clear_flags(hi, bits, task, h_depth, h_stack, h_flags, t_held, t_released):
    """Player._clear_flags: clear ``bits`` from the human but those another task holds."""
    others = np.int64(0)
    for i in range(h_depth[hi]):
        t = h_stack[hi, i]
        if t != task and not t_released[t]:
            others |= t_held[t]
    h_flags[hi] &= ~(bits & ~others)


# ---------------------------------------------------------------- the step
#
# step_stacks and its named steps, one per rule of the spec's per-update order. The steps
# take plain columns (arrays and scalars): steps taking the tables' named tuples make
# step_stacks several times slower, inlined or not. They allocate nothing and
# are compiled with ``_nrt=False``: with numba's reference counting every array argument
# costs an atomic increment and decrement per call (a large share of the split step); without it
# LLVM inlines the small ones. Each returns the buffers' fill counts it moved. (Numba's
# ``inline='always'`` is no way out: CPython 3.11 passes a call of more than 30 arguments
# as *args, which numba's inliner refuses.)


@_helper
def _step_mix(hi, r, dt, step, sink_on, zero_overshoot, t_rate, t_flags, t_speed, t_c0, t_c1, t_value, t_target,
              c_t, c_frame, c_end, c_limit, c_dur, c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count,
              e_frame, ev_out, n_ev):
    """MixTask.advance: the weight (a double) moves toward its target by at most
    rate x dt x speed; the heavier clip leads (unmuted), advancing and looping, the other
    follows at its normalised time, muted. Returns the events' new count.
    Original: 0x0010b090 (type 10; its details ours)."""
    v = t_value[r]
    tgt = t_target[r]
    limit = _mul(_mul(np.float64(t_rate[r]), dt), np.float64(t_speed[r]))
    if tgt > v:
        nv = v + limit
        if tgt < nv:                        # min(v + limit, target): the first unless the second is less
            nv = tgt
    elif tgt < v:
        nv = v - limit
        if tgt > nv:                        # max(v - limit, target)
            nv = tgt
    else:
        nv = v
    t_value[r] = nv
    if nv >= 0.5:
        lc = t_c1[r]
        fc = t_c0[r]
    else:
        lc = t_c0[r]
        fc = t_c1[r]
    base = t_flags[r] & _CURSOR_BITS
    c_flags[lc] = base
    c_flags[fc] = base | _MUTED
    _, n_ev = _advance_looping(hi, lc, r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit, c_flags,
                               c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
    tf = _mul(_div(np.float64(c_t[lc]), np.float64(c_dur[lc])), np.float64(c_dur[fc]))
    _set_time(fc, tf, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
    return n_ev


@_helper
def _step_fade(hi, r, step, cleanup_above, h_depth, h_stack, t_aux, t_incoming, t_released, f_el, f_dur, def_out,
               n_def):
    """Type 9 advances ("Fades" L261-267): its clock by ``step``; at its end, or with more
    than ``cleanup_above`` tasks on the stack, it goes with every task between its new
    task and itself (StackRules.complete_fade). Returns (the deferred count, whether the
    stack changed). Original: 0x00106cc8."""
    a = t_aux[r]
    el = _add(np.float64(f_el[a]), step)
    f_el[a] = el
    if not (el >= f_dur[a] or h_depth[hi] > cleanup_above):
        return n_def, False
    hpos = _find(hi, r, h_depth, h_stack)
    if t_released[r] or hpos < 0:
        return n_def, False
    inc = t_incoming[r]
    lo = 0
    if inc >= 0:
        ipos = _find(hi, inc, h_depth, h_stack)
        if ipos >= 0:
            lo = ipos + 1
    d = h_depth[hi]
    for j in range(lo, hpos + 1):
        n_def = _defer(hi, h_stack[hi, j], t_released, def_out, n_def)
    gone = hpos + 1 - lo
    for j in range(hpos + 1, d):
        h_stack[hi, j - gone] = h_stack[hi, j]
    for j in range(d - gone, d):
        h_stack[hi, j] = _NO_ROW
    h_depth[hi] = d - gone
    return n_def, True


@_helper
def _held_events(hi, n0, n_ev, e_type, ev_out, h_depth, h_stack, h_flags, t_held, t_released):
    """Events 0x2c, 0x2d and 0x48 among the rows ``n0``-``n_ev`` act on the task that fired
    them if it holds the bits ("Animation tasks" L231-237). Original: 0x00101dd8."""
    for j in range(n0, n_ev):
        et = e_type[ev_out[j, 3]]
        tr = ev_out[j, 1]
        if et == _HELD_OPEN or et == _HELD_CLOSE:
            if et == _HELD_OPEN:
                need, clear, setb = _OPEN_NEED, _OPEN_CLEAR, _OPEN_SET
            else:
                need, clear, setb = _CLOSE_NEED, _CLOSE_CLEAR, _CLOSE_SET
            if t_held[tr] & need:
                t_held[tr] = (t_held[tr] & ~clear) | setb
                _clear_flags(hi, np.int64(clear), tr, h_depth, h_stack, h_flags, t_held, t_released)
                h_flags[hi] |= setb
        elif et == _HELD_REPLACE and t_held[tr] != 0:
            oldh = t_held[tr]
            t_held[tr] = _REPLACED
            _clear_flags(hi, oldh, tr, h_depth, h_stack, h_flags, t_held, t_released)
            h_flags[hi] |= _REPLACED


@_helper
def _room(hi, h_depth, h_stack, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_nxt, c_bank, e_count, g_b0, g_b1, g_b2,
          g_b3, g_b4, walk):
    """The buffer room human ``hi``'s step may need, and whether the kernel can follow its
    rows: each cursor passes at most its clip's events twice (a wrap), a gait's change of
    pair may bring in its clip with the most events, each task (a clip's next tasks
    included) is deferred at most once. Not runnable: a task ``_runnable`` refuses or a
    fade as a clip's next task (rows written behind the engine's back). Returns (events,
    deferred, runnable)."""
    need_ev = 0
    need_def = 0
    runnable = True
    n = _seed_walk(hi, h_depth, h_stack, walk)
    while n > 0:
        n -= 1
        r = walk[n]
        need_def += 1
        if not _runnable(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux):
            runnable = False
        if t_c0[r] >= 0:
            need_ev += 2 * e_count[c_bank[t_c0[r]]]
        if t_c1[r] >= 0:
            need_ev += 2 * e_count[c_bank[t_c1[r]]]
        if t_c2[r] >= 0:                # types 11 and 13
            need_ev += 2 * e_count[c_bank[t_c2[r]]]
            if t_c3[r] >= 0:            # type 11
                need_ev += 2 * e_count[c_bank[t_c3[r]]]
        if t_type[r] == _GAIT:          # a clip a change of pair brings in may lead
            g = t_aux[r]
            most = e_count[g_b0[g]]      # the most of the five pairs' clips' events
            for b in (g_b1[g], g_b2[g], g_b3[g], g_b4[g]):
                most = e_count[b] if e_count[b] > most else most
            need_ev += 2 * most
        if (t_type[r] == _CLIP or t_type[r] == _PAIRED_CLIP) and t_nxt[r] >= 0 and n < walk.shape[0]:
            if t_type[t_nxt[r]] == _FADE:
                runnable = False
            walk[n] = t_nxt[r]
            n += 1
    return need_ev, need_def, runnable


@_helper
def _pair_ahead(hi, dt, h_depth, h_stack, t_type, t_nxt, t_rate, t_speed, t_aux, g_value, g_target, g_lower, walk):
    """Whether human ``hi``'s step changes a gait's pair (which takes cursors from the
    cursor table's free list, shared by the crowd): a gait on its stack, or in a clip's
    chain of next tasks, whose value after this update's move (``_gait_value``, the move
    ``_gait_move`` makes: each task steps once an update) falls in another pair; a
    chain longer than the walk's scratch counts as one. Read only."""
    n = _seed_walk(hi, h_depth, h_stack, walk)
    while n > 0:
        n -= 1
        r = walk[n]
        tt = t_type[r]
        if tt == _GAIT:
            if _pair_index(_gait_value(r, dt, t_rate, t_speed, t_aux, g_value, g_target)) != g_lower[t_aux[r]]:
                return True
        elif (tt == _CLIP or tt == _PAIRED_CLIP) and t_nxt[r] >= 0:
            if n >= walk.shape[0]:
                return True
            walk[n] = t_nxt[r]
            n += 1
    return False


@_helper
def _save_counts(counts, n_ev, n_def, n_gait, n_wrap, stopped):
    """The buffers' fill counts and the index the step stopped at, into ``counts``."""
    counts[COUNT_EVENTS] = n_ev
    counts[COUNT_DEFERRED] = n_def
    counts[COUNT_GAITS] = n_gait
    counts[COUNT_WRAPS] = n_wrap
    counts[COUNT_STOPPED] = stopped


@_helper
def _newest(hi, newest_only, h_depth, h_stack, t_type):
    """The task whose events alone fire under EventRule.NEWEST (Player.top: the top task, or
    the bottom one when the top is a fade), -1 when every task's fire ("The task stack"
    L256). Original: 0x00175210."""
    depth = h_depth[hi]
    if not newest_only or depth == 0:
        return -1
    newest = h_stack[hi, depth - 1]
    if t_type[newest] == _FADE:
        newest = h_stack[hi, 0]
    return newest


@_helper
def _note_wrap(hi, r, wrap_out, n_wrap):
    """A wrap of task ``r``, which has a wrap callback, as a row of ``wrap_out`` (the caller
    runs the callback after the step). Returns the wraps' new count."""
    wrap_out[n_wrap, 0] = hi
    wrap_out[n_wrap, 1] = r
    return n_wrap + 1


@_helper
def _step_loop(hi, r, step, sink_on, zero_overshoot, t_c0, t_wraps, t_callback, c_t, c_frame, c_end, c_limit,
               c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev, wrap_out, n_wrap):
    """Type 1 advances ("When a clip ends" L318): its cursor by ``step``; at the clip's end
    it restarts and advances by the overshoot (period D - 1/60), the wrap is counted and,
    with a wrap callback, noted. Returns (the events' count, the wraps' count).
    Original: 0x00105770."""
    wrapped, n_ev = _advance_looping(hi, t_c0[r], r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit,
                                     c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
    if wrapped:
        t_wraps[r] += 1
        if t_callback[r]:
            n_wrap = _note_wrap(hi, r, wrap_out, n_wrap)
    return n_ev, n_wrap


@_helper
def _step_clip(hi, c, r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit, c_flags, c_bank, c_ev, c_evf,
               c_at_end, e_first, e_count, e_frame, ev_out, n_ev):
    """Types 3-7 advance their clip's cursor ``c`` by ``step`` ("When a clip ends"
    L299-308): whether the clip ended, an overshoot of exactly 0.0 taken as "not ended"
    (L320) unless ``zero_overshoot``. Returns (ended, the events' count).
    Original: 0x00105af0 (type 3), 0x00108bd0 (type 6)."""
    over, n_ev = _advance(hi, c, r, step, sink_on, c_t, c_frame, c_end, c_limit, c_flags, c_bank, c_ev, c_evf,
                          c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
    return over != 0.0 or (zero_overshoot and c_at_end[c]), n_ev


@_helper
def _hand_over(hi, r, nx, h_depth, h_stack, t_type, t_nxt, t_handed, t_incoming, t_released, walk, def_out, n_def):
    """A type 3 / 6 at its clip's end ("When a clip ends" L313-314): its next task ``nx``
    takes its place in the same update (on the stack, a fade's incoming link following
    it; or as the next task of the clip it follows) and it goes on the deferred list.
    Returns the deferred count. Original: 0x00105af0, 0x00105640 AnimTask_DeferGive."""
    t_handed[r] = True
    pos = _find(hi, r, h_depth, h_stack)
    if pos < 0:
        owner = _owner_of(hi, r, h_depth, h_stack, t_type, t_nxt, t_handed, walk)
        t_nxt[owner] = nx
    else:
        h_stack[hi, pos] = nx
        for j in range(h_depth[hi]):
            fj = h_stack[hi, j]
            if t_type[fj] == _FADE and t_incoming[fj] == r:
                t_incoming[fj] = nx
    return _defer(hi, r, t_released, def_out, n_def)


@_helper
def _in_window(r, c, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, t_window, c_t, c_dur, f_dur,
               g_leader):
    """Whether a type 3 / 6 that did not hand over advances its next task too: inside its
    clip's last b seconds (t - (D - b) > 0, b the window) under BlendWindow.ADVANCED
    ("Animation tasks" L215: "the next task is advanced too"). Original: 0x00105af0."""
    if t_window[r] == _KEPT:
        return False
    b = _window(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, c_dur, f_dur, g_leader)
    return b > 0.0 and _sub(np.float64(c_t[c]), _sub(np.float64(c_dur[c]), b)) > 0.0


@_helper
def _gait_move(r, dt, t_rate, t_speed, t_c0, t_c1, t_aux, g_value, g_target, g_lower, g_leader):
    """The gait's value moves toward its target by at most rate x dt x speed ("Gait blend"
    L283). Returns (the new value, the old value's fraction over the old pair's index, the
    old leading cursor), for the change of pair and the leader rule.
    Original: 0x0010a5b8."""
    a = t_aux[r]
    old_frac = np.float64(g_value[a]) - g_lower[a]
    old_lead = _lead(r, t_c0, t_c1, t_aux, g_leader)
    v = _gait_value(r, dt, t_rate, t_speed, t_aux, g_value, g_target)
    g_value[a] = v
    return v, old_frac, old_lead


@_helper
def _change_pair(r, nl, old_lead, t_c0, t_c1, t_aux, gaits, cursors, events, pair4):
    """The gait's pair becomes clips ``nl`` and ``nl`` + 1 ("Gait blend" L284): the
    clips that come in get cursors (``_new_pair``) at the old leader's normalised time.
    Called on a change of pair only (so it may take the tables' tuples).
    Original: 0x0010a5b8."""
    _new_pair(r, nl, t_c0, t_c1, t_aux, gaits, cursors, events, pair4)
    c_t, c_dur = cursors.t, cursors.dur
    for j in range(2):
        if pair4[2 + j] == 1:
            cn = pair4[j]
            tn = _mul(_div(np.float64(c_t[old_lead]), np.float64(c_dur[old_lead])), np.float64(c_dur[cn]))
            _set_time(cn, tn, c_t, cursors.frame, cursors.end, cursors.bank, cursors.ev, cursors.evf, events.first,
                      events.n, events.frame)
    t_c0[r] = pair4[0]
    t_c1[r] = pair4[1]
    gaits.lower[t_aux[r]] = nl


@_helper
def _gait_leader(r, v, old_frac, t_aux, g_target, g_lower, g_leader):
    """Which cursor leads, 0 the lower, 1 the upper ("Gait blend" L285), into the leader
    column: the lower below a new fraction of 0.01, the upper from 0.995; else the upper
    when the value ``v`` is still above the target (falling) or the old fraction was over
    0.875. Returns whether the leader changed. Original: 0x0010a5b8."""
    a = t_aux[r]
    frac = v - g_lower[a]
    if frac < _ALONE_LOW:
        lead = 0
    elif frac >= _ALONE_HIGH:
        lead = 1
    elif v > np.float64(g_target[a]) or old_frac > _FALL:
        lead = 1
    else:
        lead = 0
    changed = lead != g_leader[a]
    g_leader[a] = lead
    return changed


@_helper
def _gait_advance(hi, r, step, sink_on, zero_overshoot, t_flags, t_c0, t_c1, t_aux, t_callback, g_leader, c_t,
                  c_frame, c_end, c_limit, c_dur, c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame,
                  ev_out, n_ev, wrap_out, n_wrap):
    """One cursor leads ("Gait blend" L285): the leader, unmuted, advances by ``step``,
    looping (a wrap noted with a wrap callback); the follower, muted, is set to its
    normalised time. Returns (the events' count, the wraps' count).
    Original: 0x0010a5b8."""
    base = t_flags[r] & _CURSOR_BITS
    if g_leader[t_aux[r]] == 0:
        lc = t_c0[r]
        fc = t_c1[r]
    else:
        lc = t_c1[r]
        fc = t_c0[r]
    c_flags[lc] = base
    c_flags[fc] = base | _MUTED
    wrapped, n_ev = _advance_looping(hi, lc, r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit, c_flags,
                                     c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
    if wrapped and t_callback[r]:
        n_wrap = _note_wrap(hi, r, wrap_out, n_wrap)
    tf = _mul(_div(np.float64(c_t[lc]), np.float64(c_dur[lc])), np.float64(c_dur[fc]))
    _set_time(fc, tf, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
    return n_ev, n_wrap


@_helper
def _step_pick(hi, r, step, sink_on, zero_overshoot, t_c0, t_c1, t_c2, t_c3, c_t, c_frame, c_end, c_limit, c_flags,
               c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev):
    """Type 11 advances ("Animation tasks" L218; its advance ours, PickTask.advance): its
    four clips in step by ``step``, each looping (the muted ones fire nothing). Returns
    the events' count. Original: 0x00106f50 (type 11's constructor)."""
    for j in range(4):
        _, n_ev = _advance_looping(hi, _cursor_k(r, j, t_c0, t_c1, t_c2, t_c3), r, step, sink_on, zero_overshoot,
                                   c_t, c_frame, c_end, c_limit, c_flags, c_bank, c_ev, c_evf, c_at_end, e_first,
                                   e_count, e_frame, ev_out, n_ev)
    return n_ev


@_helper
def _step_direction(hi, r, step, sink_on, zero_overshoot, t_c0, t_c1, t_c2, c_t, c_frame, c_end, c_limit, c_dur,
                    c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev):
    """Type 13 advances ("Animation tasks" L220; its advance ours, DirectionTask.advance):
    the centre clip (c1) leads by ``step``, looping; its two neighbours (c0, c2) follow at
    its normalised time. Returns the events' count. Original: 0x00109210 (type 13's
    constructor)."""
    lc = t_c1[r]
    _, n_ev = _advance_looping(hi, lc, r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit, c_flags,
                               c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
    for fc in (t_c0[r], t_c2[r]):
        tf = _mul(_div(np.float64(c_t[lc]), np.float64(c_dur[lc])), np.float64(c_dur[fc]))
        _set_time(fc, tf, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
    return n_ev


@_kernel
def step_stacks(rows, start, dt, rules, humans, tasks, cursors, fades, gaits, events, out):
    """One animation step of the humans ``rows[start:]`` (rows of the human table), each
    in turn (see the module docstring), in the spec's order: the room, then every task of
    the stack bottom-up, each by its type's named step ("When a clip ends" L299-334,
    "Fades" L261-267, "Gait blend" L269-288), then the held-flag events of what it fired.
    The named steps take columns, not the tables' named tuples (taking the tuples, split
    step_stacks runs several times slower, inlined or not; ``_change_pair``, run
    on a change of pair only, takes them), and run without numba's reference counting
    (``_nrt=False``; with it each call's arrays cost an atomic increment and decrement
    each, which slows the split step markedly); so split it runs as fast as in one piece.

    Out: ``status[k]`` (STATUS_* bits) for rows[k]; ``ev_out[:counts[0]]`` the fired
    events (human row, task row, cursor row, event index into e_*), in firing order,
    rows[k]'s from ``ev_lo[k]`` to ``ev_hi[k]``;
    ``def_out[:counts[1]]`` the deferred tasks (human row, task row), in order;
    ``counts[2]`` the index it stopped at: a human whose events or deferred tasks might
    not fit the buffers is not begun (the caller grows them and calls again from there).
    A gait changing its clip pair takes the cursors the clips that come in need from the
    cursor table's free list and gives back those it drops (the caller reserves two free
    rows per gait first); ``counts[3]`` counts the changes. ``wrap_out[:counts[4]]`` (human,
    task row) the wraps of tasks with a wrap callback (the ``callback`` column), in step
    order: the caller runs the callbacks after the step. A human with a task the kernel
    cannot follow (``_runnable``: a fade as a next task, a task without its rows: a
    table written behind the engine's back) is not stepped (STATUS_BAD). ``counts`` are
    read as the fill so far (the caller zeroes them first). ``snap`` (>= 18), ``walk``
    (>= 64) and ``pair4`` (4) are scratch. Nothing is allocated (no numpy array: table
    rows are taken from free lists). In: ``rules`` the StepRules, the tables as
    HumanCols, TaskCols, CursorCols, FadeCols, GaitCols, the EventIndex, and ``out`` the
    StepBuffers (status, ev_lo, ev_hi and the buffers above).
    """
    zero_overshoot, newest_only, cleanup_above = rules.zero_overshoot, rules.newest_only, rules.cleanup_above
    skip_pairs = rules.skip_pairs
    h_depth, h_stack, h_flags = humans.depth, humans.stack, humans.flags
    t_type, t_rate, t_flags, t_held, t_c0, t_c1 = (tasks.type, tasks.rate, tasks.flags, tasks.held, tasks.c0,
                                                   tasks.c1)
    t_aux, t_nxt, t_blend, t_window, t_incoming = tasks.aux, tasks.nxt, tasks.blend, tasks.window, tasks.incoming
    t_released, t_handed, t_wraps, t_speed = tasks.released, tasks.handed_over, tasks.wraps, tasks.speed
    t_callback = tasks.callback
    t_c2, t_c3, t_value, t_target = tasks.c2, tasks.c3, tasks.value, tasks.target
    c_t, c_frame, c_end, c_limit, c_dur, c_flags = (cursors.t, cursors.frame, cursors.end, cursors.limit,
                                                    cursors.dur, cursors.flags)
    c_bank, c_ev, c_evf, c_at_end = cursors.bank, cursors.ev, cursors.evf, cursors.at_end
    f_el, f_dur = fades.el, fades.dur
    g_value, g_target, g_lower, g_leader = gaits.value, gaits.target, gaits.lower, gaits.leader
    g_b0, g_b1, g_b2, g_b3, g_b4 = gaits.b0, gaits.b1, gaits.b2, gaits.b3, gaits.b4
    e_first, e_count, e_frame, e_type = events.first, events.n, events.frame, events.type
    status, ev_lo, ev_hi, ev_out, def_out = out.status, out.ev_lo, out.ev_hi, out.ev_out, out.def_out
    counts, snap, walk, pair4, wrap_out = out.counts, out.snap, out.walk, out.pair4, out.wrap_out
    n_ev = counts[COUNT_EVENTS]
    n_def = counts[COUNT_DEFERRED]
    n_gait = counts[COUNT_GAITS]
    n_wrap = counts[COUNT_WRAPS]
    cap_ev = ev_out.shape[0]
    cap_def = wrap_out.shape[0] if wrap_out.shape[0] < def_out.shape[0] else def_out.shape[0]
    for k in range(start, rows.shape[0]):
        hi = rows[k]
        need_ev, need_def, runnable = _room(hi, h_depth, h_stack, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_nxt, c_bank,
                                            e_count, g_b0, g_b1, g_b2, g_b3, g_b4, walk)
        if not runnable:
            status[k] = STATUS_BAD
            ev_lo[k] = ev_hi[k] = n_ev
            continue
        if skip_pairs and _pair_ahead(hi, dt, h_depth, h_stack, t_type, t_nxt, t_rate, t_speed, t_aux, g_value,
                                      g_target, g_lower, walk):
            status[k] = STATUS_SKIPPED
            ev_lo[k] = ev_hi[k] = n_ev
            continue
        if n_ev + need_ev > cap_ev or (n_wrap if n_wrap > n_def else n_def) + need_def > cap_def:
            _save_counts(counts, n_ev, n_def, n_gait, n_wrap, k)
            return
        st = 0
        ev0 = n_ev
        def0 = n_def
        newest = _newest(hi, newest_only, h_depth, h_stack, t_type)
        depth = h_depth[hi]
        for i in range(depth):
            snap[i] = h_stack[hi, i]
        for si in range(depth):             # the stack as it was, bottom-up
            task = snap[si]
            if t_released[task]:
                continue
            sink_on = newest < 0 or task == newest
            n0 = n_ev
            r = task
            while True:                     # a task, then the next tasks it advances too
                tt = t_type[r]
                step = _mul(dt, np.float64(t_rate[r]))
                if tt == _LOOP:
                    n_ev, n_wrap = _step_loop(hi, r, step, sink_on, zero_overshoot, t_c0, t_wraps, t_callback, c_t,
                                              c_frame, c_end, c_limit, c_flags, c_bank, c_ev, c_evf, c_at_end,
                                              e_first, e_count, e_frame, ev_out, n_ev, wrap_out, n_wrap)
                elif tt == _CLIP or tt == _PAIRED_CLIP:
                    c = t_c0[r]
                    ended, n_ev = _step_clip(hi, c, r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit,
                                             c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame,
                                             ev_out, n_ev)
                    nx = t_nxt[r]
                    if nx >= 0 and ended:
                        n_def = _hand_over(hi, r, nx, h_depth, h_stack, t_type, t_nxt, t_handed, t_incoming,
                                           t_released, walk, def_out, n_def)
                        st |= STATUS_STACK | STATUS_TOP
                        if _window(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, c_dur, f_dur,
                                   g_leader) > 0.0:
                            r = nx          # with a blend time the next task is advanced by dt (L313)
                            continue
                    elif _in_window(r, c, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, t_window,
                                    c_t, c_dur, f_dur, g_leader):
                        r = nx              # "the next task is advanced too" (L215)
                        continue
                elif tt == _HOLD or tt == _SCENE or tt == _PAIRED_HOLD:
                    _, n_ev = _step_clip(hi, t_c0[r], r, step, sink_on, zero_overshoot, c_t, c_frame, c_end, c_limit,
                                         c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out,
                                         n_ev)
                elif tt == _FADE:
                    n_def, done = _step_fade(hi, r, step, cleanup_above, h_depth, h_stack, t_aux, t_incoming,
                                             t_released, f_el, f_dur, def_out, n_def)
                    if done:
                        st |= STATUS_STACK | STATUS_TOP
                elif tt == _GAIT:
                    v, old_frac, old_lead = _gait_move(r, dt, t_rate, t_speed, t_c0, t_c1, t_aux, g_value, g_target,
                                                       g_lower, g_leader)
                    nl = _pair_index(v)
                    if nl != g_lower[t_aux[r]]:
                        _change_pair(r, nl, old_lead, t_c0, t_c1, t_aux, gaits, cursors, events, pair4)
                        n_gait += 1
                        st |= STATUS_TOP
                    if _gait_leader(r, v, old_frac, t_aux, g_target, g_lower, g_leader):
                        st |= STATUS_TOP
                    n_ev, n_wrap = _gait_advance(hi, r, step, sink_on, zero_overshoot, t_flags, t_c0, t_c1, t_aux,
                                                 t_callback, g_leader, c_t, c_frame, c_end, c_limit, c_dur, c_flags,
                                                 c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out,
                                                 n_ev, wrap_out, n_wrap)
                elif tt == _MIX:
                    # types 10, 11 and 13: the playing id follows a set_value given since the last step too
                    n_ev = _step_mix(hi, r, dt, step, sink_on, zero_overshoot, t_rate, t_flags, t_speed, t_c0,
                                     t_c1, t_value, t_target, c_t, c_frame, c_end, c_limit, c_dur, c_flags,
                                     c_bank, c_ev, c_evf, c_at_end, e_first, e_count, e_frame, ev_out, n_ev)
                    st |= STATUS_TOP
                elif tt == _PICK:
                    n_ev = _step_pick(hi, r, step, sink_on, zero_overshoot, t_c0, t_c1, t_c2, t_c3, c_t, c_frame,
                                      c_end, c_limit, c_flags, c_bank, c_ev, c_evf, c_at_end, e_first, e_count,
                                      e_frame, ev_out, n_ev)
                    st |= STATUS_TOP
                elif tt == _DIRECTION:
                    n_ev = _step_direction(hi, r, step, sink_on, zero_overshoot, t_c0, t_c1, t_c2, c_t, c_frame,
                                           c_end, c_limit, c_dur, c_flags, c_bank, c_ev, c_evf, c_at_end, e_first,
                                           e_count, e_frame, ev_out, n_ev)
                    st |= STATUS_TOP
                break
            # the held-flag events of what this task fired (0x00101dd8: 0x2c, 0x2d, 0x48)
            _held_events(hi, n0, n_ev, e_type, ev_out, h_depth, h_stack, h_flags, t_held, t_released)
        if n_ev > ev0:
            st |= STATUS_EVENTS
        if n_def > def0:
            st |= STATUS_DEFERRED
        status[k] = st
        ev_lo[k] = ev0
        ev_hi[k] = n_ev
    _save_counts(counts, n_ev, n_def, n_gait, n_wrap, rows.shape[0])


# ---------------------------------------------------------------- the flush (the deferred flush as rows)
# Its own section: the release of the deferred tasks and the playing anim ids' refresh,
# as table rows (anim.player.Player.flush drives them; the callbacks stay in Python).

__all__ += ["flush_release", "flush_anim_ids", "FLUSH_FREED", "FLUSH_IN", "FLUSH_STOP", "FLUSH_HELD", "FLUSH_GEN",
            "FLUSH_RESUME"]

_ANIM_STATE = int(HeldFlags.ANIM_STATE)
_REPORT = int(HeldFlags.REPORT)
FLUSH_FREED = 0                 # flush_release's counts: task rows written to ``freed``
FLUSH_IN = 1                    # tasks counted back into the pool
FLUSH_STOP = 2                  # the entry it stopped at (Python runs its callbacks), or ``hi``
FLUSH_HELD = 3                  # the held bits that entry's task held before its release
FLUSH_GEN = 4                   # that task row's generation at its release
FLUSH_RESUME = 5                # in: 1 when entry ``lo`` is released already (its callbacks ran): discard it


@_helper
def _give_row(r, live, gen, free_rows, n_free):
    """Table.give_back of row ``r``: a row in use goes back (its generation counts up, the
    row on top of the free list); a free row (or NO_ROW) is left alone. True when given."""
    if r < 0 or not live[r]:
        return False
    live[r] = False
    gen[r] += 1
    n = n_free[0]
    free_rows[n] = r
    n_free[0] = n + 1
    return True


@_helper
def _anim_of(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, g_leader, c_anim):
    """Task.anim_id (+0x104) of task row ``r``: its leading cursor's anim id, -1 for a fade.
    Original: 0x001752c8 (its reader)."""
    if t_type[r] == _FADE:
        return np.int64(-1)
    return np.int64(c_anim[_lead_of(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, g_leader)])


@_helper
def _held_by_others(hi, r, h_depth, h_stack, t_held, t_released):
    """The held bits of the tasks on human ``hi``'s stack but task ``r`` that are not
    released (Player._clear_flags: HeldRelease.CONEY, "Coney's implementation" L402)."""
    others = np.int64(0)
    for i in range(h_depth[hi]):
        s = h_stack[hi, i]
        if s != r and not t_released[s]:
            others |= t_held[s]
    return others


@_helper
def _release_flags(hi, r, release_all, h_flags, h_depth, h_stack, t_type, t_held, t_released):
    """The release's record bits: a type 3 / 6 clears state flag 0x4000000000 (0x00105f78,
    0x00108f10; not the fade's 0x00106ee8), then the held bits the task still holds go
    (every one, the original's, or not those another live task on the stack holds:
    ``release_all`` False, HeldRelease.CONEY) and the task holds none."""
    flags = h_flags[hi]
    tt = t_type[r]
    if tt == _CLIP or tt == _PAIRED_CLIP:
        flags &= ~np.int64(_ANIM_STATE)
    held = t_held[r]
    if held:
        if release_all:                   # 0x00105f78: no test of other tasks ("When a clip ends" L314)
            flags &= ~held
        else:
            flags &= ~(held & ~_held_by_others(hi, r, h_depth, h_stack, t_held, t_released))
        t_held[r] = 0
    h_flags[hi] = flags


@_helper
def _owned_chain(r, t_type, t_nxt, t_handed, t_live, chain):
    """Task ``r`` and the next tasks it owns (Task.following, followed: a type 3 / 6's next
    task until it handed over), into ``chain``; returns their number."""
    chain[0] = r
    n = 1
    x = r
    while n < chain.shape[0]:
        tx = t_type[x]
        if tx != _CLIP and tx != _PAIRED_CLIP:
            break
        nx = t_nxt[x]
        if nx < 0 or t_handed[x] or not t_live[nx]:
            break
        chain[n] = nx
        n += 1
        x = nx
    return n


@_helper
def _give_cursors(r, tt, t_c0, t_c1, t_c2, t_c3, c_live, c_gen, c_free, c_nfree):
    """The cursor rows of task ``r`` (type ``tt``) back to the cursor table, in the order
    of its ``cursors()``: c0 (one clip), c0-c1 (a gait's lower and upper, a mix's a and
    b), c0-c2 (a direction's lower, centre, upper), c0-c3 (a pick's four); a fade has none."""
    if tt == _FADE:
        return
    _give_row(t_c0[r], c_live, c_gen, c_free, c_nfree)
    if tt == _GAIT or tt == _MIX or tt == _DIRECTION or tt == _PICK:
        _give_row(t_c1[r], c_live, c_gen, c_free, c_nfree)
        if tt == _DIRECTION or tt == _PICK:
            _give_row(t_c2[r], c_live, c_gen, c_free, c_nfree)
            if tt == _PICK:
                _give_row(t_c3[r], c_live, c_gen, c_free, c_nfree)


@_kernel
def flush_release(lo, hi, release_all, humans, tasks, task_rows, cursors, gaits, gait_rows, fade_rows, buf):
    """Release the deferred tasks ``buf.entries[lo:hi]`` (rows of (human row, task row): the
    deferred list as the step wrote it, anim.deferred), in order, as Player._release does,
    up to the first entry with a callback to run: a task with an end callback
    (``buf.end_mark[task row]`` >= 0: its callback id) or one holding 0x400000 whose human
    has a report callback (``buf.report_mark[human row]`` >= 0), released up to its callbacks (its held bits before
    into ``counts[FLUSH_HELD]``, its row's generation into ``counts[FLUSH_GEN]``: Python runs
    the callbacks, then calls again with ``counts[FLUSH_RESUME]`` 1 to discard it first,
    unless its row went back meanwhile), or an entry held as objects (human row -1, not
    begun); its index goes to ``counts[FLUSH_STOP]`` (``hi`` when none). Each release: the
    record's state flag and held bits (``release_all``: HeldRelease.ORIGINAL), the anim id
    it reports into ``buf.ids[k]``, then its discard: the task and the next tasks it owns (deepest first),
    each counted back into the pool (``buf.pool_out``) when it is out, its rows then given
    back to their tables (its cursors, its task row, its fade or gait row). The task rows
    given back go to ``buf.freed`` (``counts[FLUSH_FREED]`` so far), the tasks counted in
    to ``counts[FLUSH_IN]`` (the caller zeroes the counts first and finishes what Python
    holds: the handles, keyed values, reset to defaults, TaskPool.n_out). Nothing is
    allocated. In: the HumanCols, TaskCols, the task table's RowState, the CursorCols,
    GaitCols, the gait and fade tables' RowStates, the FlushBuffers.
    Original: 0x00105570 AnimTask_FlushDeferred, 0x00105f78 (type 3's release), 0x00108f10
    (type 6's), 0x00106ee8 (the fade's), 0x00105510 (the pool's give-back).
    """
    h_flags, h_depth, h_stack = humans.flags, humans.depth, humans.stack
    t_type, t_held, t_c0, t_c1, t_c2, t_c3 = tasks.type, tasks.held, tasks.c0, tasks.c1, tasks.c2, tasks.c3
    t_aux, t_nxt, t_value, t_released, t_handed = tasks.aux, tasks.nxt, tasks.value, tasks.released, tasks.handed_over
    t_live, t_gen, t_free, t_nfree = task_rows.live, task_rows.gen, task_rows.free_rows, task_rows.n_free
    c_anim, c_live, c_gen, c_free, c_nfree = cursors.anim, cursors.live, cursors.gen, cursors.free_rows, cursors.n_free
    g_leader = gaits.leader
    entries, ids, freed, counts, chain, pool_out = buf.entries, buf.ids, buf.freed, buf.counts, buf.chain, buf.pool_out
    end_mark, report_mark = buf.end_mark, buf.report_mark
    n_pool = pool_out.shape[0]
    nf = counts[FLUSH_FREED]
    n_in = counts[FLUSH_IN]
    stop = hi
    for k in range(lo, hi):
        h = entries[k, 0]
        r = entries[k, 1]
        if k == lo and counts[FLUSH_RESUME]:
            if t_gen[r] != counts[FLUSH_GEN]:
                continue                      # a callback gave it back already: its row is another's
        else:
            if h < 0:
                stop = k                      # held as objects: Python releases it
                break
            held = t_held[r]
            _release_flags(h, r, release_all, h_flags, h_depth, h_stack, t_type, t_held, t_released)
            ids[k] = _anim_of(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, g_leader, c_anim)
            if end_mark[r] >= 0 or ((held & _REPORT) != 0 and report_mark[h] >= 0):
                counts[FLUSH_HELD] = held     # Python runs its callbacks, then resumes with its discard
                counts[FLUSH_GEN] = t_gen[r]
                stop = k
                break
        n = _owned_chain(r, t_type, t_nxt, t_handed, t_live, chain)
        for j in range(n - 1, -1, -1):        # StackRules.discard: the next tasks first
            x = chain[j]
            if x >= n_pool or not pool_out[x]:
                continue                      # not out of the pool: not given back (TaskPool._take_back)
            pool_out[x] = False
            n_in += 1
            tt = t_type[x]
            _give_cursors(x, tt, t_c0, t_c1, t_c2, t_c3, c_live, c_gen, c_free, c_nfree)
            if _give_row(x, t_live, t_gen, t_free, t_nfree):
                freed[nf] = x
                nf += 1
            if tt == _FADE:
                _give_row(t_aux[x], fade_rows.live, fade_rows.gen, fade_rows.free_rows, fade_rows.n_free)
            elif tt == _GAIT:
                _give_row(t_aux[x], gait_rows.live, gait_rows.gen, gait_rows.free_rows, gait_rows.n_free)
    counts[FLUSH_FREED] = nf
    counts[FLUSH_IN] = n_in
    counts[FLUSH_STOP] = stop


@_kernel
def flush_anim_ids(rows, humans, h_anim, tasks, cursors, gaits, seen):
    """The playing anim id (record +0x20) of each human row in ``rows`` into ``h_anim``:
    its top task's, the bottom task's when the top is a fade, -1 with an empty stack
    (StackRules.refresh_anim_id, every human at once; a human listed twice is done once:
    ``seen``, a flag per human row, all False before and after). In passes over all the
    humans, each a short loop whose cache misses (task rows, cursor rows) overlap: the top
    task row, the bottom one under a fade, the leading cursor row, its anim id, each kept
    in ``h_anim`` meanwhile; ``rows`` is the caller's scratch (overwritten: a human done
    or listed again is marked there). In: the HumanCols, the human table's ``anim``
    column, the TaskCols, CursorCols, GaitCols.
    Original: 0x001752c8, 0x00175210 TaskStack_Top."""
    h_depth, h_stack = humans.depth, humans.stack
    t_type, t_c0, t_c1, t_c2, t_c3 = tasks.type, tasks.c0, tasks.c1, tasks.c2, tasks.c3
    t_aux, t_value = tasks.aux, tasks.value
    c_anim, g_leader = cursors.anim, gaits.leader
    n = rows.shape[0]
    for k in range(n):                    # each human once: its top task row (or -1: done)
        hi = rows[k]
        if seen[hi]:
            rows[k] = _AGAIN
            continue
        seen[hi] = True
        d = h_depth[hi]
        if d == 0:
            h_anim[hi] = -1
            rows[k] = ~hi
            continue
        h_anim[hi] = h_stack[hi, d - 1]
    for k in range(n):                    # a fade on top: the bottom task
        hi = rows[k]
        if hi >= 0 and t_type[h_anim[hi]] == _FADE:
            h_anim[hi] = h_stack[hi, 0]
    for k in range(n):                    # the leading cursor row (a fade: -1, done)
        hi = rows[k]
        if hi >= 0:
            t = h_anim[hi]
            if t_type[t] == _FADE:
                h_anim[hi] = -1
                rows[k] = ~hi
            else:
                h_anim[hi] = _lead_of(t, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, g_leader)
    for k in range(n):                    # its anim id (Task.anim_id)
        hi = rows[k]
        if hi >= 0:
            h_anim[hi] = np.int64(c_anim[h_anim[hi]])
    for k in range(n):
        hi = rows[k]
        if hi >= 0:
            seen[hi] = False
        elif hi != _AGAIN:
            seen[~hi] = False


# ---------------------------------------------------------------- the pose


@_helper
def _push(c, sp, nref, rate, c_t, c_flags, c_bank, bank, scratch):
    """Cursor ``c``'s pose pushed on the pose stack of ``sp`` poses at ``rate``, or refused
    and counted when it holds seven (0x00104ce0). Returns (sp, nref)."""
    if sp >= _POSES:
        return sp, nref + 1
    _sample(np.int64(sp), np.int64(c_bank[c]), c_t[c], rate, np.int64(c_flags[c]), bank, scratch)
    return sp + 1, nref


@_helper
def _pose_blend_task(r, sp, nref, t_type, t_rate, t_c0, t_c1, t_c2, t_c3, t_value, t_centre, t_sampling, c_t,
                     c_flags, c_bank, bank, scratch):
    """Task.emit of types 10, 11 and 13 on the pose stack of ``sp`` poses; returns (sp, nref).

    10 (MixTask.emit): both clips, blended by the weight. 11 (PickTask.emit): the chosen
    clip; under PickSampling.ALL the four are pushed and the chosen one's pose kept
    (SamplePlan.keep): the pushes past seven are refused and counted, and the kept pose is
    the chosen clip's, sampled straight into its place (the same bits: a sample depends on
    its cursor only), or nothing when its push was refused. 13 (DirectionTask.emit): the
    centre, then, when the value is off it, the neighbour on its side blended by the
    distance. A blend with fewer than two poses does nothing.
    """
    submask = bank.submask
    tt = t_type[r]
    rate = t_rate[r]
    if tt == _MIX:
        sp, nref = _push(t_c0[r], sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
        sp, nref = _push(t_c1[r], sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
        if sp >= 2:
            _blend(sp - 2, sp - 1, sp - 2, np.float32(t_value[r]), np.int64(-1), submask, scratch)
            sp -= 1
        return sp, nref
    if tt == _PICK:
        k = _pick_chosen(t_value[r])
        c = _cursor_k(r, k, t_c0, t_c1, t_c2, t_c3)
        if t_sampling[r] != _PICK_ALL:
            return _push(c, sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
        fit = _POSES - sp                      # the four pushes that fit (min(max(., 0), 4)); the rest refused
        fit = 0 if 0 > fit else fit
        fit = 4 if 4 < fit else fit
        nref += 4 - fit
        if k < fit:
            sp, nref = _push(c, sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
        return sp, nref
    # the direction (DirectionTask.side_weight): the value off the centre, -0.5 .. 0.5
    off = (t_value[r] - np.float64(t_centre[r]) + 4.0) % 8.0 - 4.0
    if off >= 0:
        side = t_c2[r]
        w = off
    else:
        side = t_c0[r]
        w = -off
    sp, nref = _push(t_c1[r], sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
    if w > 0.0:
        sp, nref = _push(side, sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
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
    for b in range(s_rot.shape[1]):
        for c in range(4):
            s_rot[dst, b, c] = s_rot[src, b, c]
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
def _pose_fade(r, sp, t_aux, f_el, f_dur, submask, scratch):
    """FadeTask.emit on the pose stack of ``sp`` poses: the top two blended by the fade's
    outgoing weight (elapsed over duration, "Fades" L261-267); fewer than two: nothing.
    Returns sp. Original: 0x00106cc8."""
    a = t_aux[r]
    w = np.float32(_fade_weight(np.float64(f_el[a]), np.float64(f_dur[a])))
    if sp >= 2:
        _blend(sp - 2, sp - 1, sp - 2, w, np.int64(-1), submask, scratch)
        sp -= 1
    return sp


@_inline
def _pose_gait(r, sp, nref, t_rate, t_c0, t_c1, t_aux, g_value, g_lower, c_t, c_flags, c_bank, bank, scratch):
    """GaitTask.emit on the pose stack of ``sp`` poses ("Gait blend" L269-288): near a
    step (the fraction below GAIT_ALONE_LOW or above GAIT_ALONE_HIGH) the nearer clip
    alone, else both clips of the pair blended by the fraction. Returns (sp, nref).
    Original: 0x0010a5b8."""
    a = t_aux[r]
    frac = np.float64(g_value[a]) - g_lower[a]
    rate = t_rate[r]
    if frac < _ALONE_LOW or frac > _ALONE_HIGH:
        c = t_c0[r] if frac < _ALONE_LOW else t_c1[r]
        return _push(c, sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
    sp, nref = _push(t_c0[r], sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
    sp, nref = _push(t_c1[r], sp, nref, rate, c_t, c_flags, c_bank, bank, scratch)
    if sp >= 2:
        _blend(sp - 2, sp - 1, sp - 2, np.float32(frac), np.int64(-1), bank.submask, scratch)
        sp -= 1
    return sp, nref


@_inline
def _pose_window(r, c, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, t_window, c_t, c_frame, c_end,
                 c_dur, c_bank, c_ev, c_evf, e_first, e_count, e_frame, f_dur, g_leader):
    """Whether type 3 / 6's task ``r`` (its cursor ``c``) is in its blend window (its time
    past its duration less the blend time b), and its next task's weight there: the
    share of b elapsed, at most 1; -1.0 when it is not. Under the kept rule
    (Task.set_window_time) the next task's cursors are set to the time into the window
    first (its lead cursor to it, the others in proportion). "When a clip ends" L299-334.
    Original: 0x00105af0."""
    b = _window(r, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, c_dur, f_dur, g_leader)
    if b <= 0.0:
        return -1.0
    into = _sub(np.float64(c_t[c]), _sub(np.float64(c_dur[c]), b))
    if into <= 0.0:
        return -1.0
    nx = t_nxt[r]
    if t_window[r] == _KEPT:
        d = _duration(nx, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, c_dur, f_dur, g_leader)
        lead = _lead_of(nx, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, g_leader)
        for cc in (t_c0[nx], t_c1[nx], t_c2[nx], t_c3[nx]):
            if cc < 0:
                continue
            tt2 = into if cc == lead else _mul(_div(into, d), np.float64(c_dur[cc]))
            _set_time(cc, tt2, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
    q = into / b
    return 1.0 if 1.0 < q else q          # min(into / b, 1)


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
    when it has one (``over_queue``), else the reference pose. Original: 0x00176d60,
    0x00104630 Instance_BuildBoneMatrices."""
    if sp > 0:
        top = sp - 1
    elif over_queue:
        top = np.int64(QUEUED_POSE)
    else:
        _reference(np.int64(_POSES), bank, scratch)
        top = np.int64(_POSES)
    _emit(top, cols[k], bank, scratch, out)


@_kernel
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
    the PoseOut and the PoseBuffers (anim.kernel_types). One walk for the queue and the
    stack, with the columns unpacked once (a helper taking the tuples per human costs a
    quarter of the kernel's time); each task by its type's named step, which takes
    columns: ``_pose_fade``, ``_pose_gait``, ``_pose_blend_task``, a
    clip's ``_push`` and ``_pose_window``, then ``_pose_windows`` and ``_pose_top``.
    Original: 0x00176d60 CharacterInstance_Sample (0x005fd040, the queued tasks' buffer),
    0x00104ce0, 0x00104630 Instance_BuildBoneMatrices.
    """
    h_depth, h_stack, h_queued, h_queue = humans.depth, humans.stack, humans.queued, humans.queue
    t_type, t_rate, t_c0, t_c1, t_aux = tasks.type, tasks.rate, tasks.c0, tasks.c1, tasks.aux
    t_nxt, t_blend, t_window = tasks.nxt, tasks.blend, tasks.window
    t_c2, t_c3, t_value, t_centre, t_sampling = tasks.c2, tasks.c3, tasks.value, tasks.centre, tasks.sampling
    c_t, c_frame, c_end, c_dur, c_flags = cursors.t, cursors.frame, cursors.end, cursors.dur, cursors.flags
    c_bank, c_ev, c_evf = cursors.bank, cursors.ev, cursors.evf
    f_el, f_dur = fades.el, fades.dur
    g_value, g_lower, g_leader = gaits.value, gaits.lower, gaits.leader
    e_first, e_count, e_frame = events.first, events.n, events.frame
    submask = bank.submask
    refused, weights, queued_default = buffers.refused, buffers.weights, buffers.queued_default
    dflt_slot = scratch.dflt
    for k in range(rows.shape[0]):
        hi = rows[k]
        dflt_slot[0] = -1
        over_queue = queued_default[k]
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
                r = trows[hi, si]
                nw = 0
                while True:                         # a task, then the next tasks in their blend windows
                    tt = t_type[r]
                    if tt == _FADE:
                        sp = _pose_fade(r, np.int64(sp), t_aux, f_el, f_dur, submask, scratch)
                        break
                    if tt == _GAIT:
                        sp, nref = _pose_gait(r, np.int64(sp), np.int64(nref), t_rate, t_c0, t_c1, t_aux, g_value,
                                              g_lower, c_t, c_flags, c_bank, bank, scratch)
                        break
                    if tt == _MIX or tt == _PICK or tt == _DIRECTION:
                        sp, nref = _pose_blend_task(r, np.int64(sp), np.int64(nref), t_type, t_rate, t_c0, t_c1, t_c2,
                                                    t_c3, t_value, t_centre, t_sampling, c_t, c_flags, c_bank, bank,
                                                    scratch)
                        break
                    c = t_c0[r]                     # a clip
                    if sp >= _POSES:
                        nref += 1
                    else:
                        _sample(np.int64(sp), np.int64(c_bank[c]), c_t[c], t_rate[r], np.int64(c_flags[c]), bank,
                                scratch)
                        sp += 1
                    if tt != _CLIP and tt != _PAIRED_CLIP:
                        break
                    w = _pose_window(r, c, t_type, t_c0, t_c1, t_c2, t_c3, t_aux, t_value, t_nxt, t_blend, t_window,
                                     c_t, c_frame, c_end, c_dur, c_bank, c_ev, c_evf, e_first, e_count, e_frame, f_dur,
                                     g_leader)
                    if w < 0.0:
                        break
                    # a ring: the innermost windows' weights are kept (only they can act, innermost
                    # first, on the seven poses the stack holds)
                    weights[nw % weights.shape[0]] = np.float32(w)
                    nw += 1
                    r = t_nxt[r]
                sp = _pose_windows(np.int64(sp), np.int64(nw), weights, submask, scratch)
            if queue_pass:                         # its top is the default pose of the stack's pass
                _keep_queued_pose(np.int64(sp), bank, scratch)
                dflt_slot[0] = QUEUED_POSE
        dflt_slot[0] = -1
        refused[k] = nref
        _pose_top(k, np.int64(sp), over_queue, cols, bank, scratch, out)
