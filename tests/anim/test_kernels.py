"""The compiled kernels' float32 toward-zero arithmetic against anim.maths.f32, bit for bit.

The cursor's time sums (When a clip ends) must give the same bits on both paths: the
0.75 and 0.9 ties (k x r = F - 0.5), subnormals and the largest floats are pinned here,
plus random float32 pairs. The pose kernels' slerp and rate-scaled turn equal anim.maths.quat's numpy
slerp and scale_turn bit for bit (both on anim.maths.detmath), and stay within 3e-7 of the exact
formulas; the compiled root motion equals systems.motion's numpy one bit for bit.
"""
from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

from scuffle.anim.maths import detmath, quat
from scuffle.anim.maths import f32 as F
from scuffle.anim.engine import kernels as K
from scuffle.anim.engine import kernels_pose as KP

from jitprobe import machine_code, probe

# The wrappers compiled around the pose kernels' inlined helpers, their machine code cached
# for this tree (tests/jitprobe.py).
SLERP_RUN = """
import numpy as np
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=True, error_model="numpy")
def run(a, b, t, out):
    for i in range(a.shape[1]):
        tt = np.float32(0.0) if np.float32(0.0) > t[i] else t[i]
        tt = np.float32(1.0) if np.float32(1.0) < tt else tt
        out[0, i], out[1, i], out[2, i], out[3, i] = KP._slerp_lane(a[0, i], a[1, i], a[2, i], a[3, i],
                                                                     b[0, i], b[1, i], b[2, i], b[3, i], tt)
"""
LANE_RUN = """
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=True, error_model="numpy")
def run(x, y, out):
    for i in range(x.shape[0]):
        out[0, i] = KP._acos_lane(x[i])
        out[1, i] = KP._sin_lane(y[i])
"""
BLEND_RUN = """
import numpy as np
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=True)
def blend(sc, w, mbone, submask):
    KP._blend(np.int64(0), np.int64(1), np.int64(2), w, np.int64(mbone), submask, sc)
"""
BLEND_ASM = """
import numpy as np
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=False)
def blend(sc, w, submask):
    KP._blend(np.int64(0), np.int64(1), np.int64(2), w, np.int64(-1), submask, sc)
"""
SAMPLE_ASM = """
import numpy as np
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=False)
def sample(sc, bank, t):
    KP._sample(np.int64(0), np.int64(0), t, np.float32(1.0), np.int64(0), bank, sc)
"""
TAG_SAMPLE_RUN = """
import numpy as np
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=True)
def sample(sc, bank, t0, t1, flags):
    KP._sample(np.int64(0), np.int64(0), t0, np.float32(1.0), flags, bank, sc)
    KP._sample(np.int64(1), np.int64(1), t1, np.float32(0.5), np.int64(0), bank, sc)
"""
TAG_BLEND_RUN = """
import numpy as np
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=True)
def blend(sc, w, submask):
    KP._blend(np.int64(0), np.int64(1), np.int64(2), w, np.int64(-1), submask, sc)
"""
SCALE_TURN_RUN = """
from numba import njit
from scuffle.anim.engine import kernels_pose as KP

@njit(cache=True)
def run(q, rate, out):
    for i in range(q.shape[1]):
        out[0, i], out[1, i], out[2, i], out[3, i] = KP._scale_turn(q[0, i], q[1, i], q[2, i], q[3, i], rate[i])
"""

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def bits(x: float) -> int:
    if math.isnan(x):
        return -1
    return struct.unpack("<I", struct.pack("<f", x))[0] if abs(x) <= F.FLT_MAX else \
        (0x7F800000 | (0x80000000 if x < 0 else 0))


SUB = 1.401298464324817e-45          # the smallest subnormal
MIN_NORMAL = 1.1754943508222875e-38
SPECIAL = [0.0, -0.0, SUB, -SUB, 3 * SUB, MIN_NORMAL, -MIN_NORMAL, MIN_NORMAL - SUB, 1e-40, -1e-40,
           F.FLT_MAX, -F.FLT_MAX, F.f32(F.FLT_MAX / 2), F.f32(1.0), F.f32(0.5), F.DT, F.HALF_FRAME,
           F.f32(0.75), F.f32(0.9), F.f32(3.0), F.f32(-2.5), F.f32(1e30), F.f32(-7e37), F.f32(16777216.0)]


@pytest.mark.parametrize("op,ref", [(K.add, F.add), (K.sub, F.sub), (K.mul, F.mul)])
def test_special_pairs_match_bit_for_bit(op, ref):
    for a in SPECIAL:
        for b in SPECIAL:
            assert bits(op(a, b)) == bits(ref(a, b)), (a, b)


def test_division_matches_bit_for_bit():
    vals = [v for v in SPECIAL if v != 0.0]
    for a in SPECIAL:
        for b in vals:
            assert bits(K.div(a, b)) == bits(F.div(a, b)), (a, b)


def test_largest_floats_saturate_toward_zero():
    assert K.add(F.FLT_MAX, F.FLT_MAX) == F.FLT_MAX
    assert K.mul(F.FLT_MAX, 2.0) == F.FLT_MAX
    assert K.mul(-F.FLT_MAX, 2.0) == -F.FLT_MAX
    assert K.mul(SUB, 0.5) == 0.0 and K.mul(SUB, 0.5) == F.mul(SUB, 0.5)


@pytest.mark.parametrize("rate", [0.75, 0.9])
def test_the_tie_rates_sum_as_the_fpu(rate):
    """The cursor time summed update by update at the tie rates, and its frames."""
    step = F.mul(F.DT, F.f32(rate))
    assert K.mul(F.DT, F.f32(rate)) == step
    t = k = 0.0
    for _ in range(400):
        t, k = F.add(t, step), K.add(k, K.mul(F.DT, F.f32(rate)))
        assert bits(t) == bits(k)
        assert F.frame_of(t) == K.frame_of(k)
    # the tie: the end of a 10-frame clip at 0.75 comes one update late in both
    for frames in (10, 13, 19, 28):
        tt = kk = 0.0
        for u in range(200):
            tt, kk = F.add(tt, step), K.add(kk, step)
            if F.frame_of(tt) >= frames:
                break
        assert F.frame_of(kk) == F.frame_of(tt)


def test_random_float32_pairs_match_bit_for_bit():
    rng = random.Random(14)
    for _ in range(4000):
        a = F.f32(rng.uniform(-1, 1) * 10 ** rng.randint(-40, 38))
        b = F.f32(rng.uniform(-1, 1) * 10 ** rng.randint(-40, 38))
        if rng.random() < 0.3:
            b = F.f32(a * rng.choice([1, -1, 0.5, 1 + 2 ** -23]))
        assert bits(K.add(a, b)) == bits(F.add(a, b)), (a, b)
        assert bits(K.mul(a, b)) == bits(F.mul(a, b)), (a, b)
        if b != 0.0:
            assert bits(K.div(a, b)) == bits(F.div(a, b)), (a, b)
        t = F.f32(abs(a) % 1e6)
        assert K.frame_of(t) == F.frame_of(t), t


def test_the_truncation_matches_at_the_edges_of_its_bit_path():
    """The toward-zero rounding reads a double in float32's normal range (2^-125 up to
    2^128) from its bits (the low 29 mantissa bits cleared, a step less for an exact
    float32 whose tail points to zero) and the rest by rounding and stepping back: both
    the FPU's bits (anim.maths.f32) at the range's edges, on each side of them and at
    float32 values with tails of either sign."""
    edges = [2.0 ** -126, 2.0 ** -125, 2.0 ** -124, 2.0 ** 127, F.FLT_MAX, 1.0, 2.0, 0.5, 3.0]
    tails = [0.0, 2.0 ** -60, -(2.0 ** -60), 2.0 ** -30, -(2.0 ** -30), 2.0 ** -24, -(2.0 ** -24)]
    for e in edges:
        for sign in (1.0, -1.0):
            for a in (sign * e, sign * F.f32(e * (1 + 2 ** -23)), sign * F.f32(e * (1 - 2 ** -24))):
                for t in tails:
                    b = F.f32(a * t) if t else 0.0
                    assert bits(K.add(a, b)) == bits(F.add(a, b)), (a, b)
                    assert bits(K.sub(a, b)) == bits(F.sub(a, b)), (a, b)
                    for m in (F.f32(1.0 + 2 ** -23), F.f32(1.0 - 2 ** -24), F.f32(0.5), F.f32(3.0)):
                        assert bits(K.mul(a, m)) == bits(F.mul(a, m)), (a, m)
                        assert bits(K.div(a, m)) == bits(F.div(a, m)), (a, m)


def test_vectorised_helpers_agree_with_the_kernels():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(500) * 10.0 ** rng.integers(-40, 38, 500)).astype(np.float32)
    b = (rng.standard_normal(500) * 10.0 ** rng.integers(-40, 38, 500)).astype(np.float32)
    va, vm = F.add_v(a, b), F.mul_v(a, b)
    for i in range(500):
        assert bits(float(va[i])) == bits(K.add(float(a[i]), float(b[i])))
        assert bits(float(vm[i])) == bits(K.mul(float(a[i]), float(b[i])))


def test_root_motion_kernel_matches_the_numpy_root_motion():
    """StateUpdate's compiled move against systems.motion.root_motion (Human_ApplyRootMotion):
    the cap, tagged velocities and turns, attachments (the velocity rule's sum, their turn
    onto the held heading), headings wrapping past 180."""
    from scuffle.systems.motion import _wrap, _wrap_v, root_motion

    rng = np.random.default_rng(7)
    n = 300
    vel = (rng.standard_normal((3, n)) * rng.choice([0.5, 5.0, 80.0], n)).astype(np.float32)
    q = rng.standard_normal((4, n))
    q[3] = np.abs(q[3]) + 1.5
    q /= np.linalg.norm(q, axis=0)
    rot = np.zeros((4, 34, n), np.float32)
    rot[:, 0] = q
    tag = rng.random((36, n)) < 0.2
    idx = np.where(rng.random(n) < 0.1, -1, rng.integers(0, n, n)).astype(np.int64)
    heading = rng.uniform(-180, 180, n)
    attached = rng.random(n) < 0.15
    sv = rng.standard_normal((n, 3))
    pos = rng.standard_normal((n, 3))
    ah = rng.uniform(-180, 180, n)
    dt, cap = 1.0 / 30.0, 50.0
    ok = idx >= 0
    j = np.where(ok, idx, 0)
    world, dturn = root_motion(vel[:, j], tag[0, j] | ~ok, rot[:, 0, j], tag[2, j] | ~ok, heading, dt, cap)
    want_vel = sv + world.T
    want_vel[attached & ~ok] = 0.0               # a held row without a pose: 0; an attached human: the sum (L349)
    want_pos = np.where(attached[:, None], pos, pos + want_vel * dt)
    want_heading = np.where(attached, heading, _wrap_v(heading + dturn))
    raw = quat.angle_about_z(rot[:, 0, j].astype(np.float64)) * detmath.RAD
    raw = np.where(tag[2, j] | ~ok, 0.0, raw)
    want_ah = np.array([_wrap(a + r) if at else a for a, r, at in zip(ah, raw, attached)])
    out = np.empty((n, 3))
    h2, p2, a2 = heading.copy(), pos.copy(), ah.copy()
    K.root_motion_step(idx, vel, tag, rot, h2, attached, sv, p2, a2, dt, cap, out)
    np.testing.assert_array_equal(out, want_vel)
    np.testing.assert_array_equal(p2, want_pos)
    np.testing.assert_array_equal(h2, want_heading)
    np.testing.assert_array_equal(a2, want_ah)
    # The turn itself is within 1e-9 degrees of libm's 2 acos(w) (the yardstick only).
    libm = np.degrees(np.where(rot[2, 0, j] < 0, -1, 1) * 2 * np.arccos(np.clip(rot[3, 0, j].astype(np.float64), -1, 1)))
    libm = np.where(tag[2, j] | ~ok, 0.0, libm)
    assert np.abs(raw - libm).max() < 1e-9


def _random_pairs(rng, n):
    """Unit float32 quaternion pairs covering every slerp case: random, near each other
    on both sides of the 0.9995 lerp switch, opposite hemispheres, equal and antipodal."""
    a = rng.standard_normal((4, n))
    a /= np.linalg.norm(a, axis=0)
    b = rng.standard_normal((4, n))
    kind = rng.integers(0, 5, n)
    near = a + rng.standard_normal((4, n)) * 10.0 ** rng.uniform(-5, -0.5, n)
    b = np.where(kind == 1, near, b)
    b = np.where(kind == 2, -near, b)
    b = np.where(kind == 3, a, b)
    b = np.where(kind == 4, -a, b)
    b /= np.linalg.norm(b, axis=0)
    return a.astype(np.float32), b.astype(np.float32)


def test_slerp_kernel_equals_quat_slerp_bit_for_bit():
    """Quat_Slerp compiled against quat.slerp (numpy), both on anim.maths.detmath: the same bits
    (shortest path, the lerp above 0.9995, t clamped), and within 3e-7 of the exact slerp
    in float64 with libm's angles (the yardstick only). The kernel's form is the SIMD
    lane's (``_slerp_lane``: the lerp's and the slerp's lanes, each with the same operations
    as the scalar formula), run here over 200,000 pairs in a loop LLVM vectorises."""
    run = probe(SLERP_RUN, "run")

    rng = np.random.default_rng(11)
    n = 200_000
    a, b = _random_pairs(rng, n)
    t = rng.uniform(-0.2, 1.2, n).astype(np.float32)
    t[:1000] = np.float32(0.0)
    t[1000:2000] = np.float32(1.0)
    got = np.empty_like(a)
    run(a, b, t, got)
    want = quat.slerp(a, b, t)
    dot = np.abs((a.astype(np.float64) * b).sum(axis=0))
    assert (dot > quat.SLERP_LINEAR_DOT).sum() > 1000 and (dot < 0.99).sum() > 1000
    np.testing.assert_array_equal(got, want)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    sd = (a64 * b64).sum(axis=0)
    b64 = np.where(sd < 0, -b64, b64)
    tc = np.clip(t.astype(np.float64), 0, 1)
    theta = np.arccos(np.minimum(np.abs(sd), 1))
    slow = (np.abs(sd) <= quat.SLERP_LINEAR_DOT)
    st = np.where(slow, np.sin(theta), 1.0)
    exact = (a64 * np.sin((1 - tc) * theta) + b64 * np.sin(tc * theta)) / st
    assert np.abs(want[:, slow] - exact[:, slow]).max() < 3e-7


@pytest.mark.slow
@pytest.mark.bits
def test_lane_angles_equal_detmath_bit_for_bit():
    """The blend's SIMD lanes' acos and sine (``_acos_lane`` on [0, 1], ``_sin_lane`` on
    [0, pi/2]: every path computed and one picked, the sine and cosine polynomials in one
    Horner loop) against anim.maths.detmath's scalar forms, bit for bit: random values,
    the branch points (0.5, pi/4, the quadrant's edge), the ends and NaN."""
    run = probe(LANE_RUN, "run")

    rng = np.random.default_rng(5)
    quarter = math.pi / 4
    edge = [0.0, 0.5, np.nextafter(0.5, 1.0), np.nextafter(0.5, 0.0), 1.0, np.nextafter(1.0, 0.0), 5e-324, 0.9995,
            quarter, np.nextafter(quarter, 0.0), np.nextafter(quarter, 2.0), math.pi / 2, detmath.PIO2_HI,
            np.nextafter(detmath.PIO2_HI, 2.0), float("nan")]
    x = np.concatenate([rng.uniform(0.0, 1.0, 300_000), rng.uniform(0.49, 0.51, 20_000), edge])
    y = np.concatenate([rng.uniform(0.0, math.pi / 2, 300_000), rng.uniform(0.78, 0.79, 20_000), edge])
    out = np.empty((2, len(x)))
    run(x, y, out)
    want_acos = np.array([detmath.acos_s(v) for v in x])
    want_sin = np.array([detmath.sin_cos_s(v)[0] for v in y])
    np.testing.assert_array_equal(out[0].view(np.int64), want_acos.view(np.int64))
    np.testing.assert_array_equal(out[1].view(np.int64), want_sin.view(np.int64))


def test_the_blend_equals_quat_slerp_per_bone_bit_for_bit():
    """_blend's bones, one to a SIMD lane (the lerp's lanes, then the slerping lanes'
    weights in a row), against quat.slerp per bone and the tag rules: random pose pairs
    with each bone near, far, equal or opposite, either side tagged (its y word then
    carrying the tag bit, subnormal where the value is 0), a subtree mask or none."""
    from scuffle.anim.engine.plan import scratch_poses
    from scuffle.anim.maths.skeleton import HUMANOID, NUM_BONES, subtree_mask

    blend = probe(BLEND_RUN, "blend")

    submask = np.stack([subtree_mask(b, HUMANOID.parents) for b in range(NUM_BONES)])
    rng = np.random.default_rng(17)
    sc = scratch_poses(3)
    slerped = 0
    for trial in range(300):
        a, b = _random_pairs(rng, NUM_BONES)
        a[:, ::5] = np.array([0, 0, 0, 1], np.float32)[:, None]       # some zero words: subnormal when tagged
        sc.rot[:2, :, :NUM_BONES] = (a, b)
        sc.tag[:2] = rng.random((2, NUM_BONES + 2)) < 0.3
        sc.rot_i[:2, 1, :NUM_BONES] = (sc.rot_i[:2, 1, :NUM_BONES] & -2) | sc.tag[:2, 2:]
        a, b = sc.rot[0, :, :NUM_BONES].copy(), sc.rot[1, :, :NUM_BONES].copy()
        w = np.float32(rng.uniform(-0.1, 1.1))
        mbone = -1 if trial % 3 else int(rng.integers(0, NUM_BONES))
        blend(sc, w, mbone, submask)
        inside = np.ones(NUM_BONES, bool) if mbone < 0 else submask[mbone]
        both = sc.tag[0, 2:] & sc.tag[1, 2:]
        mix = inside & ~both
        mix[0] = False                                     # bone 0 follows the motion channels' rule
        want = np.where(mix, quat.slerp(a, b, np.full(NUM_BONES, w, np.float32)), a)
        want_tag = np.where(inside, both, sc.tag[0, 2:])
        got = sc.rot[2, :, :NUM_BONES].copy()
        got_i = got.view(np.int32)
        want_i = want.view(np.int32).copy()
        want_i[1] = (want_i[1] & -2) | want_tag                 # the blended pose's tag bits
        np.testing.assert_array_equal(got_i[:, 1:], want_i[:, 1:])
        np.testing.assert_array_equal(sc.tag[2, 3:], want_tag[1:])
        assert (sc.rot[2, :, NUM_BONES:] == np.array([0, 0, 0, 1], np.float32)[:, None]).all()   # padding lanes
        slerped += int(mix.sum())
    assert slerped > 3000


def _skip_unless_host_simd() -> None:
    """Skip where the packed instructions' names are not x86-64's, where numba targets
    a CPU without the host's features (NUMBA_CPU_NAME: LLVM's cost model may keep the
    loops scalar there, with the same bits), or checks every index (NUMBA_BOUNDSCHECK:
    a loop that may raise is not vectorised)."""
    import platform

    from numba.core import config

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the packed instructions' names are x86-64's")
    if config.CPU_NAME or not config.ENABLE_AVX:
        pytest.skip("numba targets a CPU without the host's features (NUMBA_CPU_NAME): LLVM's cost model "
                    "may keep the loops scalar there, with the same bits")
    if config.BOUNDSCHECK:
        pytest.skip("numba checks every index (NUMBA_BOUNDSCHECK): the bone loops stay scalar, with the same bits")


def test_the_blend_runs_its_bones_in_simd_lanes():
    """The blend's machine code holds packed float64 square roots and divisions (the
    slerp weights' lanes: sqrtpd / divpd, SSE2's or AVX's) and packed float32 ones (the
    lerp's lanes): its bone loops are vectorised for the host's CPU. Compiled fresh into
    a wrapper (numba gives no machine code for a kernel loaded from its cache), once for
    this tree and CPU (tests/jitprobe.py)."""
    _skip_unless_host_simd()

    from scuffle.anim.engine.plan import scratch_poses
    from scuffle.anim.maths.skeleton import NUM_BONES

    def call(blend):
        blend(scratch_poses(3), np.float32(0.5), np.ones((NUM_BONES, NUM_BONES), np.bool_))

    asm = machine_code(BLEND_ASM, "blend", call)
    for op in ("sqrtpd", "divpd", "sqrtps", "divps"):
        assert op in asm, op


def test_the_sample_runs_its_bones_in_simd_lanes():
    """The sample's bone loop reads the frame's key row (the bank's keys frame-major) and
    its machine code holds packed float32 square roots and divisions (sqrtps / divps, SSE2's
    or AVX's): a bone to a SIMD lane, not a gather a bone. Compiled fresh into a wrapper,
    once for this tree and CPU (tests/jitprobe.py)."""
    _skip_unless_host_simd()

    from scuffle.anim.data.clip import author_clip
    from scuffle.anim.engine.plan import pose_tables, scratch_poses
    from scuffle.anim.engine.sampler import ClipBank

    bank = ClipBank([author_clip("c", 10, rotations={b: [(0, (0.0, 0.0, 0.0, 1.0)), (10, (0.0, 0.6, 0.0, 0.8))]
                                                     for b in range(1, 34)})])
    def call(sample):
        sample(scratch_poses(1), pose_tables(bank).tables, np.float32(0.1))

    asm = machine_code(SAMPLE_ASM, "sample", call)
    for op in ("sqrtps", "divps"):
        assert op in asm, op


def test_the_sample_and_the_blend_write_the_tag_bits_with_the_values():
    """With tag_bits on, a sample's and a blend's values are those with tag_bits off (the
    blend's from the same inputs, whose bits it reads) but for the lowest bit of every y
    float (velocity, root, bones 0-33), which is the slot's tag ("The pose" L102): the
    kernels set it as they write y (in the register), not in a pass after, and leave the
    padding lanes alone."""
    from scuffle.anim.data.clip import author_clip
    from scuffle.anim.engine.plan import pose_tables, scratch_poses
    from scuffle.anim.engine.sampler import ClipBank
    from scuffle.anim.maths.skeleton import NUM_BONES

    sample, blend = probe(TAG_SAMPLE_RUN, "sample"), probe(TAG_BLEND_RUN, "blend")

    def same_but_the_bits(on, off, p):
        tag = on.tag[p].astype(np.int32)
        ys = off.rot_i[p, 1].copy()
        ys[:NUM_BONES] = (ys[:NUM_BONES] & -2) | tag[2:]
        np.testing.assert_array_equal(on.rot_i[p, 1], ys)
        for c in (0, 2, 3):
            np.testing.assert_array_equal(on.rot_i[p, c], off.rot_i[p, c])
        for got, was, t in ((on.vel_i[p], off.vel_i[p], tag[0]), (on.root_i[p], off.root_i[p], tag[1])):
            assert got[1] == (was[1] & -2) | t and got[0] == was[0] and got[2] == was[2]

    # two clips animating different bones (the others tagged), one with a velocity
    a = author_clip("a", 12, rotations={b: [(0, (0.0, 0.0, 0.0, 1.0)), (12, (0.0, 0.6, 0.0, 0.8))]
                                        for b in range(0, 34, 2)},
                    velocity=[(0, (0.5, 0.25, 0.0)), (12, (1.0, 0.0, 0.0))])
    b = author_clip("b", 9, rotations={bb: [(0, (0.0, 0.0, 0.6, 0.8)), (9, (0.28, 0.0, 0.0, 0.96))]
                                       for bb in range(1, 34, 3)})
    bank = pose_tables(ClipBank([a, b])).tables
    submask = np.ones((NUM_BONES, NUM_BONES), np.bool_)
    for flags in (0, 3):                            # with and without the velocity and the turn
        for t0, t1, w in ((0.1, 0.2, 0.5), (0.35, 0.05, 0.25), (0.0, 0.3, 1.0)):
            on, off = scratch_poses(3, tag_bits=True), scratch_poses(3, tag_bits=False)
            for sc in (on, off):
                sample(sc, bank, np.float32(t0), np.float32(t1), np.int64(flags))
            np.testing.assert_array_equal(on.tag, off.tag)
            for p in range(2):
                same_but_the_bits(on, off, p)
            assert on.tag[:2, 2:].any() and not on.tag[:2, 2:].all()       # both kinds of bone met
            # the blend of the same (bit-carrying) poses, with the bits and without
            for arr_on, arr_off in ((on.vel, off.vel), (on.root, off.root), (on.rot, off.rot)):
                arr_off[:2] = arr_on[:2]
            blend(on, np.float32(w), submask)
            blend(off, np.float32(w), submask)
            np.testing.assert_array_equal(on.tag, off.tag)
            same_but_the_bits(on, off, 2)


def test_scaled_turn_kernel_equals_quat_scale_turn_and_the_exact_turn():
    """Bone 0's rate-scaled turn compiled equals quat.scale_turn (numpy) bit for bit, and is
    within 3e-7 of its formula in float64 with libm's angles (the yardstick): rates below 0,
    above 1 and exactly 1, w near 1, w of either sign."""
    run = probe(SCALE_TURN_RUN, "run")

    rng = np.random.default_rng(12)
    n = 200_000
    q, near = _random_pairs(rng, n)
    q[:, :20_000] = np.array([0, 0, 0, 1], np.float32)[:, None] + near[:, :20_000] * np.float32(1e-3)
    q /= np.linalg.norm(q, axis=0)
    rate = rng.uniform(-0.3, 1.3, n).astype(np.float32)
    rate[::7] = np.float32(1.0)
    out = np.empty_like(q)
    run(q, rate, out)
    r = np.clip(rate.astype(np.float64), 0, 1)
    half = np.arccos(np.clip(q[3].astype(np.float64), -1, 1))
    sin_half = np.sin(half)
    k = np.sin(r * half) / np.where(sin_half == 0, 1, sin_half)
    exact = np.stack([q[0] * k, q[1] * k, q[2] * k, np.cos(r * half)])
    skip = (rate == 1) | (np.abs(1 - q[3]) <= np.float32(5e-7))
    assert 1000 < skip.sum() < n - 1000
    exact[:, skip] = q[:, skip]
    err = np.abs(out - exact).max()
    assert err < 3e-7, err
    np.testing.assert_array_equal(out, quat.scale_turn(q, rate))


def test_the_kernels_table_tuples_are_the_tables_columns():
    """The named tuples the kernels take (so that no kernel takes dozens of
    positional arguments) hold the tables' own columns, in the tables' order, so a column
    added to a table is a field added here (and the other way round)."""
    from scuffle.anim.engine.store import HumanTable, cursor_table, fade_table, gait_table, task_table

    for cols, table, extra in ((K.TaskCols, task_table(), []), (K.FadeCols, fade_table(), []),
                               (K.GaitCols, gait_table(), []),
                               # the cursors' row state and free list: the step takes and gives cursors
                               (K.CursorCols, cursor_table(), ["live", "gen", "free_rows", "n_free", "free_at"])):
        assert list(cols._fields) == list(table._columns) + extra, cols.__name__
    h = HumanTable()
    assert all(getattr(h, f).shape[0] == h.capacity for f in K.HumanCols._fields)
    for kernel, most in ((K.step_stacks, 11), (K.pose_stacks, 13), (K.pose_plan, 5), (K.root_motion_step, 12),
                         (K.flush_release, 11), (K.flush_anim_ids, 7)):
        assert kernel.py_func.__code__.co_argcount <= most, kernel.__name__


# the named steps step_stacks runs, in the spec's per-update order
STEP_STAGES = ("_room", "_newest", "_step_loop", "_step_clip", "_hand_over", "_in_window", "_step_fade",
               "_gait_move", "_change_pair", "_gait_leader", "_gait_advance", "_step_mix", "_step_pick",
               "_step_direction", "_held_events")


def test_step_stacks_reads_as_named_steps():
    """step_stacks is the per-update order with each rule a call: its body stays short, it
    calls every named step, each documented; the steps take the tables' named tuples
    (anim.engine.kernel_types), never loose columns, and run without numba's reference counting
    (``_nrt=False``: with it, each step's array arguments cost an atomic increment and
    decrement per call)."""
    import ast
    import inspect
    import textwrap

    fn = ast.parse(textwrap.dedent(inspect.getsource(K.step_stacks.py_func))).body[0]
    assert isinstance(fn, ast.FunctionDef)
    body = fn.body[1:]                                   # after the docstring
    assert body[-1].end_lineno - body[0].lineno + 1 <= 130
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    called = {c.func.id for c in calls}
    assert set(STEP_STAGES) <= called, set(STEP_STAGES) - called
    for c in calls:
        if c.func.id in STEP_STAGES:
            loose = [a.id for a in c.args if isinstance(a, ast.Name) and LOOSE_COLUMN.match(a.id)]
            assert not loose, (c.func.id, loose)
    for name in STEP_STAGES:
        step = K.step_stacks.py_func.__globals__[name]
        assert (step.py_func.__doc__ or "").strip(), name
        assert step.targetoptions.get("_nrt") is False, name


# a column passed loose (t_type, c_bank, g_leader, ...) rather than in its table's named tuple
LOOSE_COLUMN = __import__("re").compile(r"^[tcefgh]_[a-z0-9_]+$")
MOST_ARGUMENTS = 12             # the entry points' and helpers' arguments (about ten)


# the named steps pose_stacks runs for a task, by type, then for the human
POSE_STAGES = ("_pose_fade", "_pose_gait", "_pose_blend_task", "_sample", "_pose_window", "_pose_windows",
               "_keep_queued_pose", "_pose_top")


def test_pose_stacks_reads_as_named_steps():
    """pose_stacks is the walk of the queue and the stack with each task type's emit a call:
    its body stays short (75 lines at most, pose_lean's pruned branches among them), it
    calls every named step, each documented, and none takes the tables' named tuples (columns only: the bank, scratch and output
    tuples the pose writes excepted). The steps the walk calls per task are inlined by
    numba (``inline="always"``: kept as calls they would pass the bank and scratch tuples
    field by field, a cost on every task) or run without reference counting
    (``_nrt=False``)."""
    import ast
    import inspect
    import textwrap

    fn = ast.parse(textwrap.dedent(inspect.getsource(K.pose_stacks.py_func))).body[0]
    assert isinstance(fn, ast.FunctionDef)
    body = fn.body[1:]                                   # after the docstring
    assert body[-1].end_lineno - body[0].lineno + 1 <= 75
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    called = {c.func.id for c in calls}
    assert set(POSE_STAGES) <= called, set(POSE_STAGES) - called
    for c in calls:
        if c.func.id in POSE_STAGES:
            loose = [a.id for a in c.args if isinstance(a, ast.Name) and LOOSE_COLUMN.match(a.id)]
            assert not loose, (c.func.id, loose)
    for name in POSE_STAGES:
        step = K.pose_stacks.py_func.__globals__[name]
        assert (step.py_func.__doc__ or "").strip(), name
        opts = step.targetoptions
        assert opts.get("inline") == "always" or opts.get("_nrt") is False, name
        assert len(inspect.signature(step.py_func).parameters) <= MOST_ARGUMENTS, name


@pytest.mark.parametrize("name", ("kernels_maths", "kernels_rows", "kernels_write", "kernels_fetch", "kernels_pose",
                                  "kernels_step", "kernels_flush", "kernels_motion", "snapkernel", "cmdkernel",
                                  "digest"))
def test_no_kernel_or_helper_takes_loose_columns(name):
    """Every numba function of the kernel modules (read from their source, AST) takes at
    most MOST_ARGUMENTS arguments: the tables come in as their named tuples, not as
    dozens of loose columns."""
    import ast
    from pathlib import Path

    path = Path(K.__file__).with_name(name + ".py")
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and node.decorator_list:
            decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
            if decorators & {"_helper", "_kernel", "_inline", "njit"}:
                found.append(node.name)
                n = len(node.args.args)
                assert n <= MOST_ARGUMENTS, f"{name}.{node.name} takes {n} arguments"
    assert found


KERNEL_MODULES = ("kernels_maths", "kernels_rows", "kernels_write", "kernels_fetch", "kernels_pose", "kernels_step",
                  "kernels_flush", "kernels_motion")


@pytest.mark.parametrize("name", KERNEL_MODULES)
def test_each_kernel_module_pins_the_sources_it_links(name):
    """numba's on-disk cache is keyed on each function's own file: a kernel linking a
    helper of another module (anim.maths.detmath's scalar forms, kernels_maths, kernels_rows)
    would keep stale machine code after an edit there, unless the edit changes the
    kernel's module too. Each pins the sha256 of what it links (``LINKED_SHA256``)."""
    import importlib

    from scuffle.anim.engine import jitcache
    mod = importlib.import_module(f"scuffle.anim.engine.{name}")
    linked = jitcache.linked_modules(mod.__file__)
    assert "detmath" in linked or name == "kernels_maths" and linked == ["detmath"]
    want = jitcache.linked_sha256(mod.__file__)
    assert mod.LINKED_SHA256 == want, (
        f"{', '.join(linked)} changed: set LINKED_SHA256 in anim/engine/{name}.py to {want!r} "
        "(kernels_maths first, then kernels_rows, then the others: each pin covers the ones before)")


def test_the_entry_points_are_named_by_stage():
    """anim.engine.kernels names every entry point Python calls, each from its stage's module
    (the cache's file names are the module's: anim.engine.coldstart reads MODULE_OF)."""
    import importlib

    for mod, names in K.STAGES.items():
        m = importlib.import_module(f"scuffle.anim.engine.{mod}")
        for n in names:
            assert getattr(K, n) is getattr(m, n) and K.MODULE_OF[n] == mod
    assert set(K.MODULE_OF) >= {"step_stacks", "pose_stacks", "pose_plan", "flush_release", "flush_anim_ids",
                                "root_motion_step"}


def test_the_step_and_the_pose_prefetch_the_rows_of_the_humans_ahead():
    """step_stacks and pose_stacks fetch the rows of the humans a few places ahead through
    the same two helpers (anim.engine.kernels_fetch's ``fetch_tasks`` and ``fetch_rows``,
    each a loop of LLVM prefetch hints; one list of columns, the step's own behind its
    flag): the hint (anim.engine.jitpipe.prefetch) compiles to llvm.prefetch of the
    element's address (read, every cache level, data), is a no-op under
    NUMBA_DISABLE_JIT, and each kernel calls both helpers for the humans PREFETCH_TASKS and
    PREFETCH_ROWS ahead, the first further ahead (its rows are what the second reads), and
    no prefetch list of its own."""
    import ast
    import inspect
    import textwrap

    from numba import njit

    from scuffle.anim.engine import jitpipe
    from scuffle.anim.engine import kernels_fetch as KF
    from scuffle.anim.engine import kernels_pose as KPS
    from scuffle.anim.engine import kernels_step as KS

    @njit
    def touch(a, i):
        jitpipe._prefetch_jit(a, i)
        return a[i]

    a = np.arange(16, dtype=np.int64)
    assert touch(a, 5) == 5
    ir = next(iter(touch.inspect_llvm().values()))
    assert "@llvm.prefetch" in ir and "i32 0, i32 3, i32 1" in ir
    assert jitpipe._no_prefetch(a, 5) is None
    assert KF.PREFETCH_TASKS > KF.PREFETCH_ROWS > 0
    for mod, kernel, flag in ((KS, K.step_stacks, True), (KPS, K.pose_stacks, False)):
        assert mod.fetch_tasks is KF.fetch_tasks and mod.fetch_rows is KF.fetch_rows
        tree = ast.parse(textwrap.dedent(inspect.getsource(kernel.py_func)))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
        fetches = {c.func.id: ast.unparse(c.args[1]) for c in calls if c.func.id in ("fetch_tasks", "fetch_rows")}
        assert fetches == {"fetch_tasks": f"np.bool_({flag})", "fetch_rows": f"np.bool_({flag})"}, fetches
        assert "_prefetch" not in inspect.getsource(mod), mod.__name__       # one list: kernels_fetch's