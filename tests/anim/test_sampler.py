"""The batched sampler (anim/engine/sampler.py) on synthetic clips built with author_clip.

Spec: "Playing a clip" (lerp positions, nlerp rotations with the flip, the last key
holds), "Root motion" (velocity times the rate, bone 0 the key in force with its turn
scaled by the rate, flags 0x1 / 0x2), "The pose" (defaults tagged: the reference pose,
bone 0 the identity, the root from the instance), "Coney's implementation" (the key in
force: the key at or before the nearest whole frame, a tie to the lower, carried toward
the next key by t = (frame - key) / delta, not clamped).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from budget import examples

from scuffle.anim.maths import f32 as F
from scuffle.anim.maths import quat
from scuffle.anim.data.clip import author_clip, decode_positions, decode_rotations
from scuffle.anim.maths.pose import DTYPE, TAG_BONE, TAG_ROOT, TAG_VELOCITY, PoseBatch
from scuffle.anim.engine.sampler import (BANK_BASE_BYTES, BANK_ROW_BYTES, KEY_ROW_BYTES, NUM_SLOTS, ClipBank, CursorFlags,
                                        TURN_EPSILON, bank_bytes, clip_bytes, clip_keys, key_frame)
from scuffle.anim.maths.skeleton import HUMANOID, REFERENCE_ROTATIONS, Skeleton

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

R075 = F.f32(0.75)
R08 = F.f32(0.8)
R09 = F.f32(0.9)


def t_of(frame: float) -> float:
    """The cursor time (float32) whose t x 30 is the given frame."""
    return F.f32(frame / 30.0)


def sample1(bank: ClipBank, clip: int, time: float, rate: float = 1.0, flags: int = 0) -> PoseBatch:
    return bank.sample(np.array([clip]), np.array([time], DTYPE), np.array([rate], DTYPE), np.array([flags]))


def tagged(values, tag: bool = True) -> np.ndarray:
    """A value as the sampler stores it ("The pose" L102): the lowest bit of its y (the
    second float) set for a default ("| 1 on the second 32-bit float"), cleared for a
    sampled value."""
    a = np.array(values, np.float32)
    b = a.view(np.int32)
    b[1] = (b[1] & -2) | int(tag)
    return a


def zturn(deg: float) -> tuple:
    h = math.radians(deg) / 2
    return (0.0, 0.0, math.sin(h), math.cos(h))


def degrees_about_z(q) -> float:
    """The signed turn about z in degrees, computed in float64 (atan2, not float32 acos)."""
    q = np.asarray(q, dtype=np.float64)
    a = 2 * math.atan2(float(np.linalg.norm(q[:3])), abs(float(q[3])))
    assert math.isclose(abs(q[2]), float(np.linalg.norm(q[:3])), rel_tol=1e-6), "not a turn about z"
    return math.degrees(math.copysign(a, q[2] * (1 if q[3] >= 0 else -1)))


# ---------------------------------------------------------------- key_frame


@pytest.mark.parametrize("x, frame", [
    (0.0, 0), (0.3, 0), (0.5, 0), (0.51, 1), (0.75, 1), (1.0, 1), (1.49, 1),
    (4.5, 4), (4.51, 5), (4.49, 4), (7.5, 7), (7.500001, 8), (-0.7, 0),
])
def test_key_frame_nearest_with_ties_to_the_lower(x, frame):
    assert int(key_frame(x)) == frame


def test_key_frame_vectorised():
    assert key_frame(np.array([0.75, 4.5, 4.51, 7.5], np.float32)).tolist() == [1, 4, 5, 7]


# ---------------------------------------------------------------- velocity (section A)


@pytest.fixture(scope="module")
def walk_start():
    """Velocity 0 at frame 0, 1.048 at 1, 2.0 at 3 (y, m/s)."""
    return author_clip("walk_start", 10, velocity=[(0, (0, 0, 0)), (1, (0, 1.048, 0)), (3, (0, 2.0, 0))])


def test_key_in_force_is_carried_backwards_before_the_key(walk_start):
    bank = ClipBank([walk_start])
    v = decode_positions(walk_start.velocity)[:, 1].astype(np.float64)
    assert v[1] == pytest.approx(1.048, abs=5e-4) and v[2] == pytest.approx(2.0, abs=1e-3)
    # Frame 0.75: the nearest frame is 1, so the key at 1, carried by t = (0.75 - 1) / 2.
    want = v[1] + (v[2] - v[1]) * (0.75 - 1) / 2
    for rate in (1.0, R075):
        got = sample1(bank, 0, t_of(0.75), rate).vel[1, 0]
        assert got == pytest.approx(want * rate, abs=1e-6)
    # Not the plain lerp from frame 0 (that would be 0.75 x 1.048).
    assert sample1(bank, 0, t_of(0.75)).vel[1, 0] == pytest.approx(0.9289, abs=1e-3)
    assert abs(sample1(bank, 0, t_of(0.75)).vel[1, 0] - 0.75 * v[1]) > 0.1


def test_key_in_force_forward_from_the_key(walk_start):
    bank = ClipBank([walk_start])
    v = decode_positions(walk_start.velocity)[:, 1].astype(np.float64)
    # Frame 1.4: nearest frame 1, key 1, t = 0.4 / 2.
    assert sample1(bank, 0, t_of(1.4)).vel[1, 0] == pytest.approx(v[1] + (v[2] - v[1]) * 0.2, abs=1e-6)
    # Frame 2.6: nearest frame 3, key 3 is the last: held.
    assert sample1(bank, 0, t_of(2.6)).vel[1, 0] == pytest.approx(v[2], abs=1e-6)
    # Frame 0.4: key 0, t = 0.4 / 1.
    assert sample1(bank, 0, t_of(0.4)).vel[1, 0] == pytest.approx(v[1] * 0.4, abs=1e-6)


def test_the_last_key_holds(walk_start):
    bank = ClipBank([walk_start])
    v = decode_positions(walk_start.velocity)[2]
    for frame in (3, 5.2, 9, 9.4, 40, 3000):
        p = sample1(bank, 0, t_of(frame), R075)
        assert np.array_equal(p.vel[:, 0], v * np.float32(R075)), frame


def test_tie_goes_to_the_lower_key():
    # Keys 0 at frame 0, 1.0 at frame 5, 3.0 at frame 6. At frame 4.5 the key in force
    # is frame 0's (t = 4.5 / 5 -> 0.9); at 4.51 it is frame 5's, carried back (-> 0.02).
    clip = author_clip("tie", 10, velocity=[(0, (0, 0, 0)), (5, (0, 1.0, 0)), (6, (0, 3.0, 0))])
    bank = ClipBank([clip])
    v = decode_positions(clip.velocity)[:, 1].astype(np.float64)
    assert F.mul(t_of(4.5), 30.0) == 4.5
    assert sample1(bank, 0, t_of(4.5)).vel[1, 0] == pytest.approx(v[1] * 4.5 / 5, abs=1e-5)
    assert sample1(bank, 0, t_of(4.51)).vel[1, 0] == pytest.approx(v[1] + (v[2] - v[1]) * (4.51 - 5),
                                                                   abs=1e-4)
    # The summed time of a 0.75 rate reaches 7.5 frames a hair short: the lower key too.
    s = F.mul(F.DT, R075)
    t = 0.0
    for _ in range(6):
        t = F.add(t, s)                                  # 4.5 frames, from below
    assert sample1(bank, 0, t).vel[1, 0] == pytest.approx(v[1] * 4.5 / 5, abs=1e-5)


def test_frame_is_the_fpus_t_times_30():
    # A time one float32 above 8.5 / 30: t x 30 truncates to 8.5 (a tie: key 8's side),
    # where round-to-nearest would give 8.500001 and the key at 9.
    t = float(np.nextafter(np.float32(8.5 / 30), np.float32(1)))
    assert F.mul(t, 30.0) == 8.5
    assert float(np.float32(t) * np.float32(30)) > 8.5
    clip = author_clip("fpu", 12, velocity=[(0, (0, 0, 0)), (9, (0, 1.0, 0)), (10, (0, 3.0, 0))])
    v = decode_positions(clip.velocity)[:, 1].astype(np.float64)
    got = sample1(ClipBank([clip]), 0, t).vel[1, 0]
    assert got == pytest.approx(v[1] * 8.5 / 9, abs=1e-5)


def test_walk_start_speed_is_the_key_times_the_rate():
    # Spec: section A's 1.048 m/s at the idle rate 0.75 moves Rembrandt at about 0.786 m/s.
    clip = author_clip("walk_start", 10, velocity=[(0, (0, 1.048, 0))])
    bank = ClipBank([clip])
    p = sample1(bank, 0, t_of(2), R075)
    assert p.vel[1, 0] == pytest.approx(0.786, abs=1e-3)
    assert p.vel[1, 0] == decode_positions(clip.velocity)[0, 1] * np.float32(R075)
    assert not p.tag[TAG_VELOCITY, 0]
    assert sample1(bank, 0, t_of(2), 1.0).vel[1, 0] == pytest.approx(1.048, abs=1e-3)


def test_velocity_all_axes_scale_with_rate():
    clip = author_clip("v3", 6, velocity=[(0, (0.5, -1.0, 0.25))])
    bank = ClipBank([clip])
    v = decode_positions(clip.velocity)[0]
    for rate in (R075, R08, R09, 1.0, 1.5):
        assert np.array_equal(sample1(bank, 0, 0.0, rate).vel[:, 0], tagged(v * np.float32(rate), False))


# ---------------------------------------------------------------- root translation (section B)


def test_positions_lerp_and_z_adds_the_bind_height():
    clip = author_clip("root", 10, translation=[(0, (0.1, 0.2, 0.05)), (4, (0.3, -0.2, -0.1))])
    bank = ClipBank([clip])
    k = decode_positions(clip.translation).astype(np.float64)
    # Frame 1.2: key 0 (nearest frame 1 is still before key 4), t = 1.2 / 4.
    p = sample1(bank, 0, t_of(1.2), R075)
    want = k[0] + (k[1] - k[0]) * 1.2 / 4
    want[2] += HUMANOID.bind_height
    assert np.allclose(p.root[:, 0], want, atol=1e-5)
    assert not p.tag[TAG_ROOT, 0]
    # Frame 3.6: key 4 (the last) holds: not carried back, no rate applied to positions.
    p = sample1(bank, 0, t_of(3.6), R075)
    assert np.allclose(p.root[:, 0], k[1] + [0, 0, HUMANOID.bind_height], atol=1e-6)


def test_section_b_z_is_relative_to_the_skeletons_bind_height():
    clip = author_clip("root", 4, translation=[(0, (0.0, 0.0, 0.05))])
    skel = Skeleton(offsets=HUMANOID.offsets, bind_height=0.5, tips=HUMANOID.tips)
    z = float(decode_positions(clip.translation)[0, 2])
    assert z == pytest.approx(0.05, abs=3e-4)                 # z / 2047
    p = sample1(ClipBank([clip], skel), 0, 0.0)
    assert p.root[2, 0] == pytest.approx(0.5 + z, abs=1e-6)
    p = sample1(ClipBank([clip]), 0, 0.0)
    assert p.root[2, 0] == pytest.approx(HUMANOID.bind_height + z, abs=1e-6)


def test_clip_without_section_b_takes_the_default_root_tagged():
    clip = author_clip("noB", 4, velocity=[(0, (0, 1, 0))])
    p = sample1(ClipBank([clip]), 0, t_of(1.5))
    assert np.allclose(p.root[:, 0], [0, 0, HUMANOID.bind_height])
    assert p.tag[TAG_ROOT, 0]


def test_clip_without_section_a_takes_a_tagged_zero_velocity():
    clip = author_clip("noA", 4, translation=[(0, (0, 0, 0))])
    p = sample1(ClipBank([clip]), 0, t_of(1.5), R075)
    assert np.array_equal(p.vel[:, 0], tagged([0, 0, 0]))         # zero, its y | 1 (L102)
    assert p.tag[TAG_VELOCITY, 0]


# ---------------------------------------------------------------- rotations


def test_rotations_nlerp_with_the_sign_flip():
    # Two keys whose quaternions have a negative dot once w >= 0: the short way between
    # them passes through the x half-turn, the long way through the identity.
    a = (0.9, 0.0, 0.0, math.sqrt(1 - 0.81))
    b = (-0.9, 0.0, 0.0, math.sqrt(1 - 0.81))
    clip = author_clip("flip", 6, rotations={5: [(0, a), (2, b)]})
    ka, kb = decode_rotations(clip.rotations[5]).astype(np.float64)
    assert ka[3] >= 0 and kb[3] >= 0 and ka @ kb < 0
    p = sample1(ClipBank([clip]), 0, t_of(1.0))
    mid = p.rot[:, 5, 0].astype(np.float64)
    assert abs(abs(mid[0]) - 1) < 1e-4 and abs(mid[3]) < 1e-4
    assert not p.tag[TAG_BONE + 5, 0]
    assert abs(np.linalg.norm(mid) - 1) < 1e-6


@pytest.mark.parametrize("seed", range(6))
def test_rotations_match_nlerp_of_the_decoded_keys(seed):
    rng = np.random.default_rng(seed)
    qs = rng.normal(size=(3, 4))
    frames = [0, 3, 7]
    clip = author_clip("r", 12, rotations={9: list(zip(frames, map(tuple, qs)))})
    keys = decode_rotations(clip.rotations[9]).astype(np.float64)
    bank = ClipBank([clip])
    for x in (0.0, 0.4, 1.2, 2.4, 2.6, 3.0, 5.1, 6.5, 6.51, 7.0, 11.0):
        f = int(key_frame(x))
        i = max(j for j, kf in enumerate(frames) if kf <= f)
        if i + 1 < len(frames):
            want = quat.nlerp(keys[i], keys[i + 1], (x - frames[i]) / (frames[i + 1] - frames[i]))
        else:
            want = keys[i]
        got = sample1(bank, 0, t_of(x), R075).rot[:, 9, 0]
        assert np.allclose(got, want, atol=2e-6), x


def test_bone_without_channel_is_the_reference_pose_tagged():
    clip = author_clip("few", 4, rotations={5: [(0, (0, 0, 0, 1))]})
    p = sample1(ClipBank([clip]), 0, t_of(1.0), R075)
    for b in range(1, 34):
        if b == 5:
            assert not p.tag[TAG_BONE + b, 0]
            continue
        assert p.tag[TAG_BONE + b, 0], b
        assert np.allclose(p.rot[:, b, 0], REFERENCE_ROTATIONS[b], atol=1e-6), b
    # Bone 2: the reference pose's constant, never the identity (the bind rotation).
    assert p.rot[:, 2, 0].tolist() == tagged([-0.5, 0.5, -0.5, 0.5]).tolist()     # y | 1 (L102)
    # Bone 0 without a channel: the identity, tagged.
    assert p.rot[:, 0, 0].tolist() == tagged([0, 0, 0, 1]).tolist()
    assert p.tag[TAG_BONE, 0]


def test_empty_clip_is_the_default_pose():
    clip = author_clip("empty", 3)
    p = sample1(ClipBank([clip]), 0, 0.02, R075)
    ref = PoseBatch.reference(1, HUMANOID.bind_height)
    assert p.tag.all()
    assert np.allclose(p.rot, ref.rot, atol=1e-6)
    assert np.allclose(p.root, ref.root) and np.array_equal(p.vel[:, 0], tagged([0, 0, 0]))


def test_no_nan_for_a_key_whose_xyz_norm_exceeds_one():
    clip = author_clip("big", 4, rotations={0: [(0, (0, 0, 0, 1))], 5: [(0, (0, 0, 0, 1)), (2, (0, 0, 0, 1))]})
    for bone in (0, 5):
        k = clip.rotations[bone]
        k["x"][0], k["y"][0], k["z"][0] = 32767, 32767, -32767        # |xyz| ~ 1.73, w = 0
    keys = decode_rotations(clip.rotations[5])
    assert keys[0, 3] == 0
    bank = ClipBank([clip])
    for x in (0.0, 0.7, 1.0, 2.0):
        for rate in (R075, 1.0, 0.5):
            p = sample1(bank, 0, t_of(x), rate)
            assert p.is_finite(), (x, rate)
            assert abs(np.linalg.norm(p.rot[:, 5, 0].astype(np.float64)) - 1) < 1e-5


# ---------------------------------------------------------------- bone 0: the root turn


def test_bone_0_is_the_key_in_force_not_interpolated():
    keys = [(0, zturn(3)), (4, zturn(10))]
    clip = author_clip("turn", 8, rotations={0: keys, 6: keys})
    k = decode_rotations(clip.rotations[0])
    bank = ClipBank([clip])
    # Half-way between the keys (frame 2): bone 0 is the earlier key exactly at rate 1,
    # while bone 6 with the same keys is interpolated.
    p = sample1(bank, 0, t_of(2.0), 1.0)
    assert p.rot[:, 0, 0].tobytes() == k[0].tobytes()
    assert degrees_about_z(p.rot[:, 6, 0]) == pytest.approx(6.5, abs=0.01)
    assert not p.tag[TAG_BONE, 0]
    # Frame 3.6 rounds to 4: the later key, exactly (not carried back).
    assert sample1(bank, 0, t_of(3.6), 1.0).rot[:, 0, 0].tobytes() == k[1].tobytes()
    # The tie at 3.5 goes to the earlier key.
    assert sample1(bank, 0, t_of(3.5), 1.0).rot[:, 0, 0].tobytes() == k[0].tobytes()
    # Past the last key: held.
    assert sample1(bank, 0, t_of(7.4), 1.0).rot[:, 0, 0].tobytes() == k[1].tobytes()


def test_bone_0_turn_is_scaled_by_the_rate():
    clip = author_clip("turn3", 8, rotations={0: [(0, zturn(3)), (4, zturn(-3))]})
    bank = ClipBank([clip])
    k = decode_rotations(clip.rotations[0])
    key_deg = degrees_about_z(k[0])
    assert key_deg == pytest.approx(3.0, abs=0.01)
    p = sample1(bank, 0, t_of(1.0), R075)
    assert degrees_about_z(p.rot[:, 0, 0]) == pytest.approx(2.25, abs=0.01)
    # float32 arithmetic (acos of w near 1): within 2e-4 degrees of key x rate.
    assert degrees_about_z(p.rot[:, 0, 0]) == pytest.approx(key_deg * 0.75, abs=2e-4)
    assert degrees_about_z(sample1(bank, 0, t_of(5.0), R075).rot[:, 0, 0]) == pytest.approx(-2.25, abs=0.01)
    assert degrees_about_z(sample1(bank, 0, t_of(1.0), R08).rot[:, 0, 0]) == pytest.approx(2.4, abs=0.01)
    # Rate 1: the key exactly; a rate over 1 is clamped to 1.
    assert sample1(bank, 0, t_of(1.0), 1.0).rot[:, 0, 0].tobytes() == k[0].tobytes()
    assert np.allclose(sample1(bank, 0, t_of(1.0), 1.25).rot[:, 0, 0], k[0], atol=1e-7)


def test_bone_0_total_turn_does_not_depend_on_the_rate():
    # A clip turning 3 deg per frame over 20 frames, played update by update (the time
    # summed by rate x DT in the FPU's arithmetic, the clip ending on the update whose
    # step would reach frame F): the total turn is about the clip's 20 x 3 deg at any
    # rate (within one key's turn x the rate), not 1 / rate times it.
    clip = author_clip("spin", 20, rotations={0: [(0, zturn(3))]})
    bank = ClipBank([clip])
    key = degrees_about_z(decode_rotations(clip.rotations[0])[0])
    for rate in (R075, R08, R09, 1.0):
        s = F.mul(F.DT, rate)
        t, total, updates = 0.0, 0.0, 0
        while True:
            total += degrees_about_z(sample1(bank, 0, t, rate).rot[:, 0, 0])
            updates += 1
            if F.frame_of(F.add(t, s)) >= clip.frames:
                break
            t = F.add(t, s)
        assert total == pytest.approx(key * rate * updates, abs=2e-4 * updates)
        assert (clip.frames - 0.5) * key - 0.02 <= total <= (clip.frames - 0.5 + rate) * key + 0.02, rate


def test_tiny_turns_are_not_scaled():
    # w within 5e-7 of 1 counts as no turn: the key is used as is at any rate.
    clip = author_clip("tiny", 4, rotations={0: [(0, (0, 0, 1 / 32767, 1))]})
    k = decode_rotations(clip.rotations[0])[0]
    assert abs(1 - float(k[3])) <= TURN_EPSILON
    p = sample1(ClipBank([clip]), 0, 0.0, R075)
    assert p.rot[:, 0, 0].tobytes() == k.tobytes()


# ---------------------------------------------------------------- cursor flags


def test_flag_1_zeroes_the_velocity_tagged():
    clip = author_clip("both", 6, velocity=[(0, (0, 1, 0))], rotations={0: [(0, zturn(5))]})
    bank = ClipBank([clip])
    p = sample1(bank, 0, t_of(1.0), R075, CursorFlags.NO_VELOCITY)
    assert np.array_equal(p.vel[:, 0], tagged([0, 0, 0])) and p.tag[TAG_VELOCITY, 0]
    assert degrees_about_z(p.rot[:, 0, 0]) == pytest.approx(3.75, abs=0.01)   # the turn stays
    assert not p.tag[TAG_BONE, 0]


def test_flag_2_makes_bone_0_the_identity_tagged():
    clip = author_clip("both", 6, velocity=[(0, (0, 1, 0))], rotations={0: [(0, zturn(5))]})
    bank = ClipBank([clip])
    p = sample1(bank, 0, t_of(1.0), R075, CursorFlags.NO_TURN)
    assert p.rot[:, 0, 0].tolist() == tagged([0, 0, 0, 1]).tolist() and p.tag[TAG_BONE, 0]
    assert p.vel[1, 0] == pytest.approx(0.75, abs=1e-3) and not p.tag[TAG_VELOCITY, 0]
    p = sample1(bank, 0, t_of(1.0), R075, CursorFlags.NO_TURN | CursorFlags.NO_VELOCITY)
    assert np.array_equal(p.vel[:, 0], tagged([0, 0, 0])) and p.rot[:, 0, 0].tolist() == tagged([0, 0, 0, 1]).tolist()
    assert p.tag[TAG_VELOCITY, 0] and p.tag[TAG_BONE, 0]
    # The locomotion's flags (0x2c1, 0xc1) include 0x1 and so switch the velocity off.
    p = sample1(bank, 0, t_of(1.0), 1.0, 0x2C1)
    assert np.array_equal(p.vel[:, 0], tagged([0, 0, 0])) and p.rot[:, 0, 0].tolist() != tagged([0, 0, 0, 1]).tolist()


def test_muted_flag_does_not_change_the_pose():
    clip = author_clip("both", 6, velocity=[(0, (0, 1, 0))], rotations={0: [(0, zturn(5))], 4: [(0, zturn(20))]})
    bank = ClipBank([clip])
    a = sample1(bank, 0, t_of(2.2), R075, 0)
    b = sample1(bank, 0, t_of(2.2), R075, CursorFlags.MUTED)
    for f in ("vel", "root", "rot", "tag"):
        assert np.array_equal(getattr(a, f), getattr(b, f))


# ---------------------------------------------------------------- batching


def _bank_of_clips():
    rng = np.random.default_rng(42)

    def rq():
        return tuple(rng.normal(size=4))

    clips = [
        author_clip("a", 10, velocity=[(0, (0, 0, 0)), (1, (0, 1.048, 0)), (3, (0, 2.0, 0))],
                    translation=[(0, (0.0, 0.0, 0.0)), (5, (0.1, 0.05, -0.02))],
                    rotations={0: [(0, zturn(3)), (4, zturn(-7))], 2: [(0, rq()), (6, rq())],
                               5: [(0, rq()), (2, rq()), (9, rq())], 30: [(0, rq())]}),
        author_clip("b", 24, rotations={b: [(0, rq()), (7, rq()), (15, rq()), (23, rq())] for b in (1, 3, 17, 18, 33)}),
        author_clip("c", 4, velocity=[(0, (0.3, -0.2, 0.0)), (2, (0.0, 0.5, 0.1))]),
        author_clip("d", 2),
        author_clip("e", 300, rotations={0: [(0, zturn(12)), (280, zturn(1))], 6: [(0, rq()), (290, rq())]},
                    translation=[(0, (0, 0, 0.1)), (299, (0.2, 0.2, 0.0))]),
    ]
    return clips, ClipBank(clips)


CLIPS, BANK = _bank_of_clips()

requests = st.lists(
    st.tuples(st.integers(0, len(CLIPS) - 1),
              st.one_of(st.floats(0, 11, width=32), st.integers(0, 320).map(lambda k: t_of(k / 2))),
              st.one_of(st.sampled_from([R075, R08, R09, 1.0]), st.floats(0, 1.5, width=32)),
              st.sampled_from([0, 1, 2, 3, 0x10, 0x2C1, 0xC1])),
    min_size=1, max_size=60)


@settings(max_examples=examples(100), deadline=None)
@given(requests)
def test_batched_sampling_equals_one_at_a_time(reqs):
    clip = np.array([r[0] for r in reqs])
    time = np.array([r[1] for r in reqs], DTYPE)
    rate = np.array([r[2] for r in reqs], DTYPE)
    flags = np.array([r[3] for r in reqs])
    batch = BANK.sample(clip, time, rate, flags)
    assert len(batch) == len(reqs)
    assert batch.is_finite()
    for i in range(len(reqs)):
        one = BANK.sample(clip[i:i + 1], time[i:i + 1], rate[i:i + 1], flags[i:i + 1])
        assert batch.vel[:, i].tobytes() == one.vel[:, 0].tobytes()
        assert batch.root[:, i].tobytes() == one.root[:, 0].tobytes()
        assert batch.rot[:, :, i].tobytes() == one.rot[:, :, 0].tobytes()
        assert np.array_equal(batch.tag[:, i], one.tag[:, 0])


def test_sample_into_an_offset_of_a_given_batch():
    out = PoseBatch.reference(6, 0.0)
    before = out.copy()
    clip, time = np.array([0, 1, 4]), np.array([0.1, 0.5, 3.0], DTYPE)
    rate, flags = np.array([R075, 1.0, R08], DTYPE), np.array([0, 2, 1])
    res = BANK.sample(clip, time, rate, flags, out=out, start=2)
    assert res is out
    want = BANK.sample(clip, time, rate, flags)
    assert np.array_equal(out.rot[:, :, 2:5], want.rot)
    assert np.array_equal(out.tag[:, 2:5], want.tag)
    assert np.array_equal(out.rot[:, :, [0, 1, 5]], before.rot[:, :, [0, 1, 5]])
    assert np.array_equal(out.root[:, [0, 1, 5]], before.root[:, [0, 1, 5]])


def test_scalar_rate_and_flags_broadcast():
    clip, time = np.array([0, 0, 2]), np.array([0.01, 0.05, 0.07], DTYPE)
    a = BANK.sample(clip, time, R075, 0)
    b = BANK.sample(clip, time, np.full(3, R075, DTYPE), np.zeros(3, int))
    assert np.array_equal(a.rot, b.rot) and np.array_equal(a.vel, b.vel)


def test_empty_request_and_bad_indices():
    out = BANK.sample(np.zeros(0, int), np.zeros(0, DTYPE), np.zeros(0, DTYPE), np.zeros(0, int))
    assert len(out) == 0
    with pytest.raises(IndexError):
        BANK.sample(np.array([len(CLIPS)]), np.array([0.0], DTYPE), np.array([1.0], DTYPE), np.array([0]))
    with pytest.raises(IndexError):
        BANK.sample(np.array([-1]), np.array([0.0], DTYPE), np.array([1.0], DTYPE), np.array([0]))


def test_bank_bookkeeping():
    assert len(BANK) == len(CLIPS) and NUM_SLOTS == 36
    assert BANK.index_of(CLIPS[3]) == 3
    assert BANK.frames.tolist() == [c.frames for c in CLIPS] == [10, 24, 4, 2, 300]
    assert BANK.has_velocity.tolist() == [True, False, True, False, False]
    assert BANK.has_translation.tolist() == [True, False, False, False, True]
    with pytest.raises(KeyError):
        BANK.index_of(author_clip("other", 2))
    with pytest.raises(TypeError):
        ClipBank([object()])
    assert len(ClipBank([])) == 0


def test_long_gaps_split_by_authoring_still_sample_on_the_line():
    # Clip "e" holds a bone 6 channel with a 290-frame gap (split at 255 by author_clip).
    k = decode_rotations(CLIPS[4].rotations[6]).astype(np.float64)
    assert len(k) == 3
    p = sample1(BANK, 4, t_of(100.0), 1.0)
    assert np.all(np.isfinite(p.rot))
    assert abs(np.linalg.norm(p.rot[:, 6, 0].astype(np.float64)) - 1) < 1e-5


# ---------------------------------------------------------------- the key rows (frame-major)


def _key_row_bank() -> tuple[ClipBank, list]:
    """Clips with sparse, dense and no rotation channels, of several lengths."""
    rng = np.random.default_rng(7)

    def keys(frames, every):
        out = []
        for f in range(0, frames + 1, every):
            q = rng.normal(size=4)
            out.append((f, tuple(q / np.linalg.norm(q))))
        return out

    clips = [author_clip("dense", 20, rotations={b: keys(20, 1) for b in (0, 1, 5, 33)}),
             author_clip("sparse", 40, rotations={2: keys(40, 10), 7: keys(40, 13)},
                         velocity=[(0, (1.0, 0.0, 0.0)), (40, (2.0, 0.0, 0.0))]),
             author_clip("none", 30),
             author_clip("late", 12, rotations={9: [(4, (0.0, 0.0, 0.0, 1.0)), (9, zturn(30))]})]
    return ClipBank(clips), clips


def test_key_rows_hold_each_frames_keys_as_the_frame_table_names_them():
    """Every frame row's key row (``frow``) holds, for bones 0-33, the value, slope and
    start frame of the key the frame table names, field by field at 34-bone offsets, and
    its tag; a tagged bone's value is the reference rotation (bone 0: the identity)."""
    bank, _ = _key_row_bank()
    nb = NUM_SLOTS - 2
    assert bank.fkeys.shape == (bank.ftag.shape[0], 9 * nb) and bank.fkeys.dtype == np.float32
    assert bank.frow.shape == (bank.ftab.shape[1],) and bank.frow.dtype == np.int64
    for row in range(bank.ftab.shape[1]):
        k = bank.ftab[2:, row]
        kr = bank.fkeys[bank.frow[row]].reshape(9, nb)
        for c in range(4):
            assert kr[c].tobytes() == bank.kval[c][k].tobytes()
            assert kr[4 + c].tobytes() == bank.kslope[c][k].tobytes()
        assert kr[8].tobytes() == bank.kstart[k].tobytes()
        assert (bank.ftag[bank.frow[row]] == bank.ktag[k]).all()
        tagged_bones = np.flatnonzero(bank.ftag[bank.frow[row]])
        ref = REFERENCE_ROTATIONS.astype(np.float32)
        ref[0] = (0, 0, 0, 1)
        assert kr[:4, tagged_bones].T.tobytes() == ref[tagged_bones].tobytes()
    assert not bank.fkeys.flags.writeable and not bank.frow.flags.writeable and not bank.ftag.flags.writeable


def test_frames_with_the_same_keys_share_a_key_row_within_the_budgets_bound():
    """A key row for each clip's first frame and each frame where a bone's key changes:
    at most min(rows, keys + 1) a clip (what clip_bytes counts); a clip with no channel
    has one, whatever its length."""
    bank, clips = _key_row_bank()
    for ci, clip in enumerate(clips):
        lo, n = int(bank.row0[ci]), int(bank.rows[ci])
        used = np.unique(bank.frow[lo:lo + n])
        assert used.tolist() == list(range(used[0], used[-1] + 1))          # its own, in order
        assert len(used) <= min(n, clip_keys(clip) + 1)
        changes = 1 + int(np.any(bank.ftab[2:, lo + 1:lo + n] != bank.ftab[2:, lo:lo + n - 1], axis=0).sum())
        assert len(used) == changes
    assert len(np.unique(bank.frow[bank.row0[2]:bank.row0[2] + bank.rows[2]])) == 1
    assert bank_bytes(clips) == BANK_BASE_BYTES + sum(clip_bytes(c) for c in clips)
    assert clip_bytes(clips[2]) == BANK_ROW_BYTES * 31 + KEY_ROW_BYTES * 1


def test_the_kernel_sample_equals_the_frame_tables_gathers_bit_for_bit():
    """pose_plan's sample (the key rows, a bone to a SIMD lane) gives bones 1-33 the bits
    of the key path gathered through the frame table (value + slope x (frame - key), the
    norm's reciprocal, a tagged bone the default as it is), at every frame and between
    frames, and the frame table's tags, at rates 0.5, 1 and 1.5 with flags 0x1 and 0x2."""
    from scuffle.anim.engine.plan import SamplePlan

    _, clips = _key_row_bank()
    bank = ClipBank(clips, tag_bits=False)
    reqs = [(ci, F.f32((f + d) / 30.0), rate, flags) for ci, clip in enumerate(clips)
            for f in range(0, clip.frames + 2) for d in (0.0, 0.37, 0.5)
            for rate, flags in ((1.0, 0), (0.5, 1), (1.5, 2))]
    plan = SamplePlan()
    for ci, t, rate, flags in reqs:
        plan.begin()
        plan.sample(ci, t, rate, flags)
        plan.end()
    got = plan.execute(bank)
    clip = np.array([r[0] for r in reqs])
    x = F.mul_v(np.array([r[1] for r in reqs], DTYPE), np.float32(F.FRAMES_PER_SECOND))
    row = bank.row0[clip] + np.minimum(key_frame(x), bank.rows[clip] - 1)
    k = bank.ftab[3:, row]                                              # bones 1-33
    dx = x - bank.kstart[k]
    q = [bank.kslope[c][k] * dx + bank.kval[c][k] for c in range(4)]
    n2 = q[0] * q[0]
    for c in (1, 2, 3):
        n2 = n2 + q[c] * q[c]
    n = np.sqrt(n2)
    n[n == 0] = 1
    inv = np.float32(1.0) / n
    for c in range(4):
        want = np.where(bank.ktag[k], bank.kval[c][k], q[c] * inv)
        assert got.rot[c, 1:].tobytes() == want.astype(np.float32).tobytes(), c
    want_tags = bank.sample(clip, np.array([r[1] for r in reqs], DTYPE), np.array([r[2] for r in reqs], DTYPE),
                            np.array([r[3] for r in reqs])).tag
    assert got.tag.tobytes() == want_tags.tobytes()


def test_a_bank_of_the_same_clips_shares_the_read_only_tables_and_samples_the_same():
    """A second bank of the same Clip objects, skeleton and options takes the first's tables
    (no decoding again) and samples to the same bits; another order, other options or
    another skeleton builds its own; every shared table is read-only; at most BANKS_KEPT
    are kept; each bank keeps its own scratch and pose tables."""
    from scuffle.anim.engine import sampler

    rot = {3: [(0, (0.0, 0.0, 0.0, 1.0)), (6, (0.2, 0.0, 0.0, 0.98))]}
    clips = [author_clip(f"s{i}", 8 + i, rotations=rot, velocity=[(0, (0.0, 1.0 + i, 0.0))]) for i in range(3)]
    a, b = ClipBank(clips), ClipBank(list(clips))
    for name in sampler._SHARED_TABLES:
        assert getattr(a, name) is getattr(b, name), name
        v = getattr(a, name)
        assert not isinstance(v, np.ndarray) or not v.flags.writeable, name
    assert a._work(4) is not b._work(4)
    for clip in range(3):
        pa, pb = sample1(a, clip, t_of(4.5), R09), sample1(b, clip, t_of(4.5), R09)
        assert pa.rot.tobytes() == pb.rot.tobytes() and pa.vel.tobytes() == pb.vel.tobytes()
    fresh = ClipBank(clips[::-1])
    assert fresh.kval is not a.kval and fresh.index_of(clips[0]) == 2
    assert ClipBank(clips, tag_bits=False).kval is not a.kval
    assert ClipBank(clips, motion_entry=False).kval is not a.kval
    other = Skeleton(HUMANOID.offsets, HUMANOID.bind_height, HUMANOID.tips)
    assert ClipBank(clips, other).kval is not a.kval
    for i in range(sampler.BANKS_KEPT):
        ClipBank([author_clip(f"other{i}", 5)])
    assert len(sampler._BUILT) == sampler.BANKS_KEPT
    assert ClipBank(clips).kval is not a.kval                 # pushed out by the newer banks: built again


def test_a_shared_bank_is_still_refused_over_the_budget(monkeypatch):
    """The budget is checked before the shared tables are looked for: clips a bank was
    built from are refused once the limit is lower than they need."""
    from scuffle.anim.engine import sampler
    from scuffle.anim.engine.sampler import BankBudgetError

    clips = [author_clip("b0", 12)]
    ClipBank(clips)
    monkeypatch.setattr(sampler, "MAX_BANK_BYTES", 1024)
    with pytest.raises(BankBudgetError, match="clip bank"):
        ClipBank(clips)


def test_the_banks_kept_stay_within_their_bytes_and_the_clip_sizes_go_with_their_clips(monkeypatch):
    """A bank larger than BANKS_KEPT_BYTES is not kept; the kept banks' tables stay within
    it in all, the oldest dropped first; a clip's remembered sizes go when the clip goes."""
    import gc
    import weakref

    from scuffle.anim.engine import sampler

    big = [author_clip("big", 40)]
    need = sampler.bank_bytes(big)
    monkeypatch.setattr(sampler, "BANKS_KEPT_BYTES", need - 1)
    first = ClipBank(big)
    assert ClipBank(big).kval is not first.kval
    monkeypatch.setattr(sampler, "BANKS_KEPT_BYTES", need + need // 2)
    a = ClipBank(big)
    small = [author_clip("small", 40)]
    ClipBank(small)                                     # as large as big: the two together are over
    assert ClipBank(big).kval is not a.kval
    assert sum(e[0][2] for e in sampler._BUILT.values()) <= sampler.BANKS_KEPT_BYTES
    clip = author_clip("gone", 9)
    assert sampler.clip_rows(clip) == 10 and clip in sampler._SIZES
    alive = weakref.ref(clip)
    sampler._BUILT.clear()
    del clip
    gc.collect()
    assert alive() is None                              # the memo did not keep it
