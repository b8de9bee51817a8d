"""The compiled engine's numba kernels: FPU time arithmetic, the crowd's step and its poses.

Every function here is ``@njit(cache=True)`` with fastmath off, takes arrays and scalars
only and writes into buffers its caller preallocated: nothing is allocated per update.
The machine code is cached on disk next to this file (``__pycache__/kernels.*.nbi`` /
``.nbc``; numba moves it to its user cache dir, or ``NUMBA_CACHE_DIR``, when that is not
writable), so the first run on a machine compiles (``anim.warmup.compile_kernels`` does it
ahead, with a progress line) and every later process loads it.

Four groups:

- the float32 toward-zero add, sub, multiply and divide and the frame test, bit for bit
  those of ``anim.f32`` (tests/anim/test_kernels.py pins them on the 0.75 and 0.9 ties,
  subnormals and the largest floats);
- ``step_programs``: one update of every compiled human's cursors, fades and gait blend
  (the end test and overshoot, the loop wrap, the blend window, the fade's end, the gait
  pair and leader), committing the uneventful ones and listing for the driver
  (anim.batch) the events, wraps and follower skips, and the humans that take the scalar
  step;
- ``pose_programs`` / ``pose_plan``: sample (the key in force, bone 0 held and
  rate-scaled, the tags), blend (Pose_BlendPartial's tag rules, subtree masks) and
  local-to-model over the parent table, for the whole crowd in one call (the slerp and
  the turn on polynomial angles, within 3e-7 of numpy's);
- ``root_motion_step``: StateUpdate's root motion and move (Human_ApplyRootMotion).

Spec: "The cursor", "When a clip ends", "Fades", "Gait blend", "The key in force",
"The pose", "Blending". Original: 0x001044a0 AnimCursor_Advance, 0x00104ce0
AnimCursor_SamplePose, 0x00105158 Pose_BlendPartial, 0x00104630 Instance_BuildBoneMatrices.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .sampler import CursorFlags

__all__ = ["add", "sub", "mul", "div", "frame_of", "step_programs", "pose_programs", "pose_plan",
           "KIND_FADE", "KIND_GAIT", "FLAG_EVENTFUL"]

_FLT_MAX = 3.4028234663852886e38
_INT_MAX = 2147483647.0
_F32_ZERO = np.float32(0.0)
KIND_FADE = 1
KIND_GAIT = 2
FLAG_EVENTFUL = 1
# Cursor flags the sampler tests, as plain ints (numba freezes globals as constants).
_NO_VELOCITY = int(CursorFlags.NO_VELOCITY)     # 0x1: section A not sampled
_NO_TURN = int(CursorFlags.NO_TURN)             # 0x2: bone 0 not sampled
NO_POSE = -(1 << 40)          # a plan's final handle for "no pose": the default pose


# ---------------------------------------------------------------- FPU arithmetic


@njit(cache=True)
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


@njit(cache=True)
def add(a, b):
    """float32 a + b rounded toward zero (float64 in and out, holding float32 values)."""
    r = a + b
    bb = r - a
    err = (a - (r - bb)) + (b - bb)         # TwoSum: a + b == r + err exactly
    return _truncate(r, err)


@njit(cache=True)
def sub(a, b):
    """float32 a - b rounded toward zero."""
    return add(a, -b)


@njit(cache=True)
def mul(a, b):
    """float32 a x b rounded toward zero (the double product of two float32s is exact)."""
    return _truncate(a * b, 0.0)


@njit(cache=True)
def div(a, b):
    """float32 a / b rounded toward zero (b != 0)."""
    q = a / b
    if q != q or q == math.inf or q == -math.inf:
        return _truncate(q, 0.0)
    r = q * b
    return _truncate(q, (a - r) / b)


@njit(cache=True)
def frame_of(t):
    """The cursor frame uint(t x 30 + 0.5) in the FPU's arithmetic, saturating."""
    v = add(mul(t, 30.0), 0.5)
    if v > 0.0:
        return np.int64(min(v, _INT_MAX))
    return np.int64(0)


# ---------------------------------------------------------------- the step


@njit(cache=True)
def step_programs(slots, dt, zero_overshoot,
                  adv_row, adv_rate, adv_ws, adv_wrap, fade_row, fade_rate,
                  gait_row, gait_rate, gait_speed, gait_regime, fol_row, fol_lead,
                  c_t, c_frame, c_end, c_limit, c_dur, c_ev, c_evf, c_evf0, c_at_end,
                  f_el, f_dur, g_value, g_target, g_lower, g_leader,
                  gait_steps, alone_low, alone_high, fall_fraction,
                  eventful, ev_out, wrap_out, skip_out, counts, work_f, work_i, work_b):
    """One update of every compiled human in ``slots`` (see the module docstring).

    A human is eventful (``eventful[i]`` = 1, nothing of it written) when a clip ends
    (a hand-over, a wrap that is not simple, the zero overshoot), a clip enters its blend
    window, a fade ends, or the gait changes pair, leader or sampling regime: the scalar
    step then runs it from the state before the update. The others are committed; out:
    ``ev_out[:n0]`` (slot, k, cursor row) of cursors that reached their next event frame,
    in stack order; ``wrap_out[:n1]`` (slot, k) of simple wraps; ``skip_out[:n2]`` slots
    whose gait follower must re-find its next event; ``counts`` = (n0, n1, n2).
    ``work_f`` (2, >= A), ``work_i`` (>= A) and ``work_b`` (>= A) are scratch.
    Original: 0x001044a0 AnimCursor_Advance, 0x00105770 (the loop), 0x00106cc8 (the fade),
    0x0010a5b8 (the gait blend).
    """
    n_ev = 0
    n_wrap = 0
    n_skip = 0
    na = adv_row.shape[1]
    nfade = fade_row.shape[1]
    nt = work_f[0]                          # the caller's scratch: nothing allocated here
    nel = work_f[1]
    nf = work_i
    wrapped = work_b
    for i in range(slots.shape[0]):
        s = slots[i]
        flag = False
        # the gait blend: the value, the pair, the leader, the sampling regime
        gr = gait_row[s]
        nv = 0.0
        if gr >= 0:
            val = np.float64(g_value[gr])
            tgt = np.float64(g_target[gr])
            lower = g_lower[gr]
            limit = mul(mul(np.float64(gait_rate[s]), dt), np.float64(gait_speed[s]))
            if tgt > val:
                nv = min(add(val, limit), tgt)
            elif tgt < val:
                nv = max(sub(val, limit), tgt)
            else:
                nv = val
            nlower = 0
            for j in range(gait_steps.shape[0]):
                if nv >= gait_steps[j]:
                    nlower = j + 1
            frac = nv - lower
            old_frac = val - lower
            if frac < alone_low:
                nlead = 0
            elif frac >= alone_high:
                nlead = 1
            elif nv > tgt or old_frac > fall_fraction:
                nlead = 1
            else:
                nlead = 0
            if frac < alone_low:
                regime = 0
            elif frac > alone_high:
                regime = 2
            else:
                regime = 1
            if nlower != lower or nlead != g_leader[gr] or regime != gait_regime[s]:
                flag = True
        # the cursors: the step, the end test, the wrap, the blend window
        if not flag:
            for k in range(na):
                r = adv_row[s, k]
                wrapped[k] = False
                if r < 0:
                    continue
                step = mul(dt, np.float64(adv_rate[s, k]))
                t = add(np.float64(c_t[r]), step)
                f = frame_of(t)
                ended = f >= c_end[r]
                if ended and adv_wrap[s, k]:
                    over = sub(t, np.float64(c_limit[r]))
                    f2 = frame_of(over)
                    good = over > 0.0 and f2 < c_end[r]
                    if zero_overshoot:
                        good = good and over != 0.0
                    if good:
                        t = over
                        f = f2
                        ended = False
                        wrapped[k] = True
                ws = adv_ws[s, k]
                if ws != np.inf and sub(t, np.float64(ws)) > 0.0:
                    ended = True
                if ended:
                    flag = True
                    break
                nt[k] = t
                nf[k] = f
        # the fades: the elapsed time, the end
        if not flag:
            for k in range(nfade):
                r = fade_row[s, k]
                if r < 0:
                    continue
                e = add(np.float64(f_el[r]), mul(dt, np.float64(fade_rate[s, k])))
                if e >= f_dur[r]:
                    flag = True
                    break
                nel[k] = e
        if flag:
            eventful[i] = FLAG_EVENTFUL
            continue
        eventful[i] = 0
        # commit
        for k in range(na):
            r = adv_row[s, k]
            if r < 0:
                continue
            c_t[r] = nt[k]
            c_frame[r] = nf[k]
            c_at_end[r] = False
            if wrapped[k]:
                c_ev[r] = 0
                c_evf[r] = c_evf0[r]
                wrap_out[n_wrap, 0] = s
                wrap_out[n_wrap, 1] = k
                n_wrap += 1
        for k in range(nfade):
            r = fade_row[s, k]
            if r >= 0:
                f_el[r] = nel[k]
        if gr >= 0:
            g_value[gr] = nv
            fo = fol_row[s]
            le = fol_lead[s]
            tf = mul(div(np.float64(c_t[le]), np.float64(c_dur[le])), np.float64(c_dur[fo]))
            ff = frame_of(tf)
            cap = max(c_end[fo] - 1, 0)
            if ff > cap:
                ff = cap
            back = ff < c_frame[fo] and c_ev[fo] > 0          # the leader wrapped
            c_t[fo] = tf
            c_frame[fo] = ff
            if ff >= c_evf[fo] or back:
                skip_out[n_skip] = s
                n_skip += 1
        for k in range(na):
            r = adv_row[s, k]
            if r >= 0 and c_frame[r] >= c_evf[r]:
                ev_out[n_ev, 0] = s
                ev_out[n_ev, 1] = k
                ev_out[n_ev, 2] = r
                n_ev += 1
    counts[0] = n_ev
    counts[1] = n_wrap
    counts[2] = n_skip


# ---------------------------------------------------------------- poses
#
# Scratch poses are human-major: vel (P, 3), root (P, 3), rot (P, 34, 4), tag (P, 36).
#
# The slerps' angles come from polynomials, not libm: acos by Abramowitz & Stegun 4.4.46
# (|error| <= 2e-8 on [0, 1]) and sin / cos on [-pi/2, pi/2] by their Taylor series to
# the 13th / 14th power (|error| < 1e-9), all in float64; the slerp weights are within
# 5e-8 of libm's. Measured on random pairs (tests/anim/test_kernels.py): the slerp within
# 2.4e-7 of quat.slerp (numpy float32), the turn within 8e-8 of quat.scale_turn's
# formula in float64 (quat.scale_turn itself, float32, drifts up to 2e-6 near w = -1);
# about three times faster than libm's acos + sin + cos.
#
# _sample, _blend, _emit and _reference are compiled with ``_nrt=False`` (numba's
# switch for its reference-counting runtime; they allocate nothing): with it on,
# _sample increfed and decrefed nine of its array arguments (atomic NRT calls) on every
# call and _blend some more, about a tenth of the pipeline. _slerp_into is
# ``inline='always'`` (into _blend). Inlining all of them was no faster and doubled the
# first-run compile time.

_HALF_PI = math.pi / 2.0


@njit(cache=True)
def _acos(x):
    """acos(x) for x in [-1, 1], float64, |error| <= 2e-8 (Abramowitz & Stegun 4.4.46)."""
    a = abs(x)
    p = -0.0012624911
    p = p * a + 0.0066700901
    p = p * a - 0.0170881256
    p = p * a + 0.0308918810
    p = p * a - 0.0501743046
    p = p * a + 0.0889789874
    p = p * a - 0.2145988016
    p = p * a + 1.5707963050
    r = math.sqrt(1.0 - a) * p
    if x < 0.0:
        r = math.pi - r
    return r


@njit(cache=True)
def _sin_hp(y):
    """sin(y) for |y| <= pi/2, float64 (Taylor to y^13, |error| < 7e-10)."""
    y2 = y * y
    p = 1.0 / 6227020800.0
    p = p * y2 - 1.0 / 39916800.0
    p = p * y2 + 1.0 / 362880.0
    p = p * y2 - 1.0 / 5040.0
    p = p * y2 + 1.0 / 120.0
    p = p * y2 - 1.0 / 6.0
    return y + y * y2 * p


@njit(cache=True)
def _cos_hp(y):
    """cos(y) for |y| <= pi/2, float64 (Taylor to y^14, |error| < 1e-10)."""
    y2 = y * y
    p = -1.0 / 87178291200.0
    p = p * y2 + 1.0 / 479001600.0
    p = p * y2 - 1.0 / 3628800.0
    p = p * y2 + 1.0 / 40320.0
    p = p * y2 - 1.0 / 720.0
    p = p * y2 + 1.0 / 24.0
    p = p * y2 - 0.5
    return 1.0 + y2 * p


@njit(cache=True)
def _key4(kslope, kval, k, dx):
    """A rotation key carried toward the next: value + slope x (frame - key), per
    component, in the table's float32 (the multiply, then the add, as the sampler does)."""
    return (kslope[k, 0] * dx + kval[k, 0], kslope[k, 1] * dx + kval[k, 1],
            kslope[k, 2] * dx + kval[k, 2], kslope[k, 3] * dx + kval[k, 3])


@njit(cache=True)
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
    r = np.float64(min(max(rate32, np.float32(0.0)), np.float32(1.0)))
    w = np.float64(min(max(qw, np.float32(-1.0)), np.float32(1.0)))
    half = _acos(w)
    sh = math.sqrt(1.0 - w * w)
    if sh == 0.0:
        sh = 1.0
    z = r * half - _HALF_PI
    kk = np.float32(_cos_hp(z) / sh)
    return qx * kk, qy * kk, qz * kk, np.float32(-_sin_hp(z))


@njit(cache=True, _nrt=False)
def _sample(p, clip, time, rate, flags, row0, rows, ftab, kval, kslope, kstart, ktag,
            sent_vel, sent_bone, animated, ref_rot, bind_height, s_vel, s_root, s_rot, s_tag):
    """One cursor's pose into scratch pose ``p`` (ClipBank.sample for one cursor).

    The bank's tables come key-major here: ``ftab`` (rows, 36), ``kval`` / ``kslope`` (K, 4).
    Slots 0-2 (velocity, root, bone 0) are taken before the bone loop; key indices are
    read as unsigned (no negative-index wrap on the table reads); a bone's key is
    normalised by multiplying by the float32 reciprocal of its norm (within 1 ulp of
    dividing).
    """
    x = np.float32(mul(np.float64(time), 30.0))
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
    # bones 1-33: the key in force, normalised; an unanimated bone keeps its reference
    for slot in range(3, nslot):
        k = np.uint64(ftab[row, slot])
        s_tag[p, slot] = ktag[k]
        b = slot - 2
        if not animated[slot]:
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


@njit(cache=True, inline='always')
def _slerp_into(s_rot, pa, pb, b, t, po):
    """Quat_Slerp of bone b, poses pa -> pb by t (clamped), into pose po (quat.slerp).

    Shortest path (b negated when the dot is negative), a normalised lerp above |dot|
    0.9995; else the weights sin((1 - t) theta) / sin(theta) and sin(t theta) / sin(theta)
    in float64 from the polynomial acos and sin (theta <= pi/2), 1 / sin(theta) as
    1 / sqrt(1 - dot^2), rounded to float32 as numpy's float32 slerp rounds them. Max
    error vs quat.slerp under 3e-7 (weights under 5e-8; was libm acos, sin and cos).
    """
    t = min(max(t, np.float32(0.0)), np.float32(1.0))
    ax = s_rot[pa, b, 0]
    ay = s_rot[pa, b, 1]
    az = s_rot[pa, b, 2]
    aw = s_rot[pa, b, 3]
    bx = s_rot[pb, b, 0]
    by = s_rot[pb, b, 1]
    bz = s_rot[pb, b, 2]
    bw = s_rot[pb, b, 3]
    dot = ax * bx + ay * by + az * bz + aw * bw
    d = min(abs(dot), np.float32(1.0))
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
        theta = _acos(dd)
        inv = 1.0 / math.sqrt(1.0 - dd * dd)
        wa = np.float32(_sin_hp((1.0 - td) * theta) * inv)
        wb = np.float32(_sin_hp(td * theta) * inv)
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


@njit(cache=True, _nrt=False)
def _blend(pa, pb, po, w, mbone, submask, s_vel, s_root, s_rot, s_tag):
    """Pose_BlendPartial of scratch poses pa (lower) and pb (upper) by w into po (pose.blend).

    ``mbone`` >= 0 limits the blend to that bone's subtree (``submask[mbone]``).
    """
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


@njit(cache=True, _nrt=False)
def _emit(p, i, parents, offsets, s_vel, s_root, s_rot, s_tag, o_vel, o_root, o_rot, o_tag, o_pos, o_mrot):
    """Scratch pose p to output column i: the pose, then local-to-model (skeleton.model_space).

    One pass over the bones: each local rotation is read once, copied out and composed
    with its parent's model rotation (read back from the column just written; the
    parent index as unsigned).
    """
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
    # bone 0 is motion (identity here), bone 1 absolute, the rest down the parent table
    for c in range(4):
        o_rot[c, 0, i] = s_rot[p, 0, c]
    o_pos[0, 0, i] = 0.0
    o_pos[1, 0, i] = 0.0
    o_pos[2, 0, i] = 0.0
    o_mrot[0, 0, i] = 0.0
    o_mrot[1, 0, i] = 0.0
    o_mrot[2, 0, i] = 0.0
    o_mrot[3, 0, i] = 1.0
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


@njit(cache=True, _nrt=False)
def _reference(p, ref_rot, bind_height, s_vel, s_root, s_rot, s_tag):
    """The default pose into scratch pose p (PoseBatch.reference)."""
    for c in range(3):
        s_vel[p, c] = 0.0
        s_root[p, c] = 0.0
    s_root[p, 2] = bind_height
    for b in range(s_rot.shape[1]):
        for c in range(4):
            s_rot[p, b, c] = ref_rot[b, c]
    for t in range(s_tag.shape[1]):
        s_tag[p, t] = True


@njit(cache=True)
def _fade_weight(el, dur):
    """anim.tasks.fade_weight: (1 + cos(pi t / d)) / 2, d <= 0 gives 0."""
    if dur <= 0.0:
        return 0.0
    x = min(max(el / dur, 0.0), 1.0)
    return (1.0 + math.cos(math.pi * x)) / 2.0


@njit(cache=True)
def pose_programs(slots, cols, s_row, s_rate, b_a, b_b, b_kind, b_src, final, fade_row, gait_row,
                  c_t, c_flags, c_bank, f_el, f_dur, g_value, g_lower,
                  row0, rows, ftab, kval, kslope, kstart, ktag, sent_vel, sent_bone, animated,
                  ref_rot, ref_bone_rot, bind_height, parents, offsets, submask,
                  s_vel, s_root, s_rot, s_tag,
                  o_vel, o_root, o_rot, o_tag, o_pos, o_mrot):
    """Every compiled human's pose and bone transforms, written to output column ``cols[i]``.

    Each human's program names its samples by cursor row (handles 0-5) and its blends
    (handles 6 + j, in order) by their inputs and weight source: a fade's elapsed time
    (fade_weight, as FadeTask.emit gives it) or a gait's fraction (GaitTask.emit).
    Scratch poses: the samples, then the blends, then the default.
    """
    ns = s_row.shape[1]
    nbl = b_a.shape[1]
    dflt = ns + nbl
    for i in range(slots.shape[0]):
        s = slots[i]
        for j in range(ns):
            r = s_row[s, j]
            if r < 0:
                break
            _sample(j, c_bank[r], c_t[r], s_rate[s, j], c_flags[r], row0, rows, ftab, kval, kslope,
                    kstart, ktag, sent_vel, sent_bone, animated, ref_bone_rot, bind_height,
                    s_vel, s_root, s_rot, s_tag)
        for j in range(nbl):
            a = b_a[s, j]
            if a < 0:
                break
            if b_kind[s, j] == KIND_FADE:
                fr = fade_row[s, b_src[s, j]]
                w = np.float32(_fade_weight(np.float64(f_el[fr]), np.float64(f_dur[fr])))
            else:
                gr = gait_row[s]
                w = np.float32(np.float64(g_value[gr]) - g_lower[gr])
            _blend(a, b_b[s, j], ns + j, w, -1, submask, s_vel, s_root, s_rot, s_tag)
        fin = final[s]
        if fin < 0:
            _reference(dflt, ref_rot, bind_height, s_vel, s_root, s_rot, s_tag)
            fin = dflt
        _emit(fin, cols[i], parents, offsets, s_vel, s_root, s_rot, s_tag, o_vel, o_root, o_rot, o_tag,
              o_pos, o_mrot)


@njit(cache=True)
def pose_plan(cols, first_s, first_b, s_clip, s_time, s_rate, s_flags, b_a, b_b, b_w, b_mask, finals,
              row0, rows, ftab, kval, kslope, kstart, ktag, sent_vel, sent_bone, animated,
              ref_rot, ref_bone_rot, bind_height, parents, offsets, submask,
              s_vel, s_root, s_rot, s_tag,
              o_vel, o_root, o_rot, o_tag, o_pos, o_mrot):
    """A recorded pose-stack plan (anim.plan.SamplePlan), human by human, into columns ``cols``.

    Human i owns samples first_s[i]:first_s[i + 1] and blends first_b[i]:first_b[i + 1];
    a handle h >= 0 is sample h, h < 0 blend -h - 1 (both plan-wide); ``finals[i]`` the
    top of its stack, or ``NO_POSE`` (the default pose). The scratch holds one human's
    poses: its samples, then its blends, then the default.
    """
    for i in range(cols.shape[0]):
        s0 = first_s[i]
        s1 = first_s[i + 1]
        bb0 = first_b[i]
        bb1 = first_b[i + 1]
        nsm = s1 - s0
        for j in range(s0, s1):
            _sample(j - s0, s_clip[j], s_time[j], s_rate[j], s_flags[j], row0, rows, ftab, kval, kslope,
                    kstart, ktag, sent_vel, sent_bone, animated, ref_bone_rot, bind_height,
                    s_vel, s_root, s_rot, s_tag)
        for j in range(bb0, bb1):
            ha = b_a[j]
            hb = b_b[j]
            pa = ha - s0 if ha >= 0 else nsm + (-ha - 1) - bb0
            pb = hb - s0 if hb >= 0 else nsm + (-hb - 1) - bb0
            _blend(pa, pb, nsm + j - bb0, b_w[j], b_mask[j], submask, s_vel, s_root, s_rot, s_tag)
        h = finals[i]
        dflt = nsm + bb1 - bb0
        if h == NO_POSE:
            _reference(dflt, ref_rot, bind_height, s_vel, s_root, s_rot, s_tag)
            p = dflt
        elif h >= 0:
            p = h - s0
        else:
            p = nsm + (-h - 1) - bb0
        _emit(p, cols[i], parents, offsets, s_vel, s_root, s_rot, s_tag, o_vel, o_root, o_rot, o_tag,
              o_pos, o_mrot)



# ---------------------------------------------------------------- root motion


@njit(cache=True)
def _wrap_deg(deg):
    """Degrees into (-180, 180] (systems.motion._wrap)."""
    d = np.fmod(deg, 360.0)
    if d <= -180.0:
        d += 360.0
    if d > 180.0:
        d -= 360.0
    return d


@njit(cache=True)
def _turn_deg(qz, qw):
    """The turn 2 acos(w) signed by z, in degrees (quat.angle_about_z, np.degrees)."""
    a = 2.0 * math.acos(min(max(qw, -1.0), 1.0))
    if qz < 0:
        a = -a
    return a * (180.0 / math.pi)


@njit(cache=True)
def root_motion_step(idx, p_vel, p_tag, p_rot, heading, attached, state_vel, position, attach_heading, dt, cap,
                     out_vel):
    """Human_ApplyRootMotion then the move, for every body (systems.motion.StateUpdate).

    Body k reads pose column ``idx[k]`` (-1: no pose, nothing added): the root velocity
    turned by the heading into world axes, capped at ``cap`` m/s (none when tagged),
    added to ``state_vel``; the bone-0 turn a x 30 x dt turns the heading. An attached
    body keeps velocity 0, its position and heading, and turns ``attach_heading`` by the
    raw turn. Writes ``out_vel`` (k, 3), ``position``, ``heading`` and ``attach_heading``
    in place. Original: 0x0023fea8, 0x0023f238 Human_ApplyRootMotion.
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
        if attached[k]:
            for c in range(3):
                out_vel[k, c] = 0.0
            raw = 0.0 if turn_none else _turn_deg(qz, qw)
            attach_heading[k] = _wrap_deg(attach_heading[k] + raw)
            continue
        h = math.radians(heading[k])
        c_, s_ = math.cos(h), math.sin(h)
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
        dturn = 0.0 if turn_none else _turn_deg(qz, qw) * 30.0 * dt
        out_vel[k, 0] = state_vel[k, 0] + wx
        out_vel[k, 1] = state_vel[k, 1] + wy
        out_vel[k, 2] = state_vel[k, 2] + wz
        for c in range(3):
            position[k, c] = position[k, c] + out_vel[k, c] * dt
        heading[k] = _wrap_deg(heading[k] + dturn)
