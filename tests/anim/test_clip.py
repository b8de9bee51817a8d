"""Tests of the clip codec (anim/data/clip.py) from the spec's numbers.

Spec: "Data" (Descriptor, Keyframes, Events) and "Notes for implementers".
The chunks are built here byte by byte at the spec's offsets, independently of the
codec's own struct, so a wrong offset in the codec shows.
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_outcome
from hypothesis import strategies as st
from budget import examples

from scuffle.anim.data.clip import (
    DESCRIPTOR_SIZE, EVENT_DTYPE, EVENT_SIZE, KEY_DTYPE, KEY_SIZE, POS_SCALE, ROT_SCALE,
    VTABLE_PLACEHOLDER, Clip, ClipAuthoringError, ClipFormatError, EventType,
    author_clip, decode_positions, decode_rotations, encode_clip, key_frames, make_event,
    mask_bones, parse_clip, quantise_positions, quantise_rotations,
)

FLT_MAX = 3.4028234663852886e38
SETTINGS = settings(max_examples=examples(200), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------- raw chunk builders


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def key(delta: int, x: int = 0, y: int = 0, z: int = 0, extra: int = 0) -> bytes:
    """One 8-byte key: +0 u8 delta, +1 u8, +2/+4/+6 s16 x, y, z."""
    return struct.pack("<BBhhh", delta, extra, x, y, z)


def event(frame: int, etype: int, a0: int = 0, a1: int = 0, pos=(0, 0, 0), rot=(0, 0, 0),
          tail: bytes = b"\0\0\0\0") -> bytes:
    """One 24-byte event: frame, type, two args, position s16 x3, rotation s16 x3, +0x14 four bytes."""
    return struct.pack("<HHHHhhhhhh4s", frame, etype, a0, a1, *pos, *rot, tail)


def descriptor(*, vtable=VTABLE_PLACEHOLDER, dx=0.0, dy=0.0, duration=f32(10 / 30), size_a=0,
               size_b=0, size_c=0, nchan=0, nevents=0, keyptr=0, mask=0, name=b"clip",
               refcount=0, flags=0, trailing=b"\0" * 8, duration_bits=None, dx_bits=None,
               dy_bits=None) -> bytes:
    """An 80-byte descriptor with every field written at its spec offset."""
    d = bytearray(80)
    struct.pack_into("<I", d, 0x00, vtable)
    struct.pack_into("<f", d, 0x04, dx) if dx_bits is None else struct.pack_into("<I", d, 0x04, dx_bits)
    struct.pack_into("<f", d, 0x08, dy) if dy_bits is None else struct.pack_into("<I", d, 0x08, dy_bits)
    if duration_bits is None:
        struct.pack_into("<f", d, 0x0C, duration)
    else:
        struct.pack_into("<I", d, 0x0C, duration_bits)
    struct.pack_into("<H", d, 0x10, size_a)
    struct.pack_into("<H", d, 0x12, size_b)
    struct.pack_into("<I", d, 0x14, size_c)
    struct.pack_into("<H", d, 0x18, nchan)
    struct.pack_into("<H", d, 0x1A, nevents)
    struct.pack_into("<I", d, 0x1C, keyptr)
    d[0x20:0x25] = mask.to_bytes(5, "little")
    d[0x25:0x43] = name.ljust(30, b"\0")
    d[0x43] = refcount
    struct.pack_into("<I", d, 0x44, flags)
    d[0x48:0x50] = trailing
    assert len(d) == DESCRIPTOR_SIZE
    return bytes(d)


def chunks(a: bytes = b"", b: bytes = b"", rotations: dict[int, bytes] | None = None,
           events: list[bytes] = (), **overrides) -> tuple[bytes, bytes]:
    """(descriptor, keyframes) from raw sections; sizes, count and mask follow unless overridden."""
    rotations = rotations or {}
    c = b"".join(rotations[bone] for bone in sorted(rotations))
    fields = dict(size_a=len(a), size_b=len(b), size_c=len(c), nchan=len(rotations),
                  nevents=len(events), mask=sum(1 << bone for bone in rotations))
    fields.update(overrides)
    return descriptor(**fields), a + b + c + b"".join(events)


def sample_chunks() -> tuple[bytes, bytes]:
    """A small valid clip: 3 velocity keys, 2 translation keys, bones 1 and 5, two events."""
    return chunks(
        a=key(0, 0, 0, 0) + key(5, 10, 1072, -3, extra=7) + key(4, 0, 500, 0),
        b=key(0, 1, 2, 2047) + key(9, -1, -2, -2047),
        rotations={1: key(0, 100, 200, 300) + key(3, -100, 0, 32767),
                   5: key(0, 0, 0, 0, extra=0xAA)},
        events=[event(2, 11, pos=(0x5678, 0x1234, 0)), event(4, 0x21, 0, 6, tail=b"bld\0")],
    )


def assert_format_error(exc: pytest.ExceptionInfo, field: str, offset: int) -> None:
    """The error is a ValueError whose message names the field and the byte offset."""
    err = exc.value
    assert isinstance(err, ValueError)
    assert err.field == field
    assert err.offset == offset
    msg = str(err)
    assert field in msg
    assert f"byte {offset} " in msg and f"0x{offset:x}" in msg


# ---------------------------------------------------------------- decoding scales


def test_format_sizes():
    assert DESCRIPTOR_SIZE == 80
    assert KEY_DTYPE.itemsize == KEY_SIZE == 8
    assert EVENT_DTYPE.itemsize == EVENT_SIZE == 24
    assert VTABLE_PLACEHOLDER == 0x0045DE40


def test_position_scales_are_1023_1023_2047():
    raw = np.zeros(5, dtype=KEY_DTYPE)
    raw["x"] = [1023, -1023, 0, 500, 32767]
    raw["y"] = [0, 1023, -1023, -7, -32768]
    raw["z"] = [2047, -2047, 0, 1234, 32767]
    got = decode_positions(raw)
    assert got.dtype == np.float32 and got.shape == (5, 3)
    want = np.stack([raw["x"] / 1023, raw["y"] / 1023, raw["z"] / 2047], axis=-1)
    # Within one float32 step of the exact quotient.
    np.testing.assert_allclose(got, want, rtol=2.0 ** -23, atol=0)
    np.testing.assert_allclose(got[0], [1.0, 0.0, 1.0], rtol=2.0 ** -23)
    np.testing.assert_allclose(got[1], [-1.0, 1.0, -1.0], rtol=2.0 ** -23)
    np.testing.assert_allclose(POS_SCALE, [1 / 1023, 1 / 1023, 1 / 2047], rtol=2.0 ** -24)


def test_rotation_scale_is_the_constant_0x38000100():
    assert struct.unpack("<I", struct.pack("<f", ROT_SCALE))[0] == 0x38000100
    assert Fraction(ROT_SCALE) == Fraction(1, 2 ** 15) * (1 + Fraction(1, 2 ** 15))
    # About 1/32767 (which the spec rounds to 2^-15): 32767 x it is 1 - 2^-30.
    assert Fraction(ROT_SCALE) * 32767 == 1 - Fraction(1, 2 ** 30)


def test_rotation_decode_multiplies_xyz_and_rebuilds_w():
    raw = np.zeros(4, dtype=KEY_DTYPE)
    raw["x"] = [0, 16384, -12000, 100]
    raw["y"] = [0, 0, 8000, -200]
    raw["z"] = [0, -16384, 3000, 300]
    q = decode_rotations(raw)
    assert q.dtype == np.float32 and q.shape == (4, 4)
    for i in range(4):
        for axis, col in (("x", 0), ("y", 1), ("z", 2)):
            assert q[i, col] == np.float32(raw[axis][i]) * np.float32(ROT_SCALE)
        xyz = q[i, :3].astype(np.float64)
        assert q[i, 3] >= 0
        assert math.isclose(float(q[i, 3]), math.sqrt(1 - xyz @ xyz), rel_tol=1e-6)
        assert math.isclose(float(np.linalg.norm(q[i])), 1.0, rel_tol=1e-6)
    assert q[0].tolist() == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("xyz", [(-32768, 0, 0), (32767, 32767, 0), (-32768, -32768, -32768),
                                 (20000, 20000, 20000)])
def test_rotation_w_is_zero_when_the_xyz_norm_exceeds_one(xyz):
    raw = np.zeros(1, dtype=KEY_DTYPE)
    raw["x"], raw["y"], raw["z"] = xyz
    q = decode_rotations(raw)[0]
    assert np.all(np.isfinite(q))
    assert q[3] == 0.0 and not math.copysign(1.0, float(q[3])) < 0


@given(st.lists(st.tuples(*[st.integers(-32768, 32767)] * 3), min_size=1, max_size=20))
@SETTINGS
def test_rotation_w_never_negative_and_finite(values):
    raw = np.zeros(len(values), dtype=KEY_DTYPE)
    raw["x"], raw["y"], raw["z"] = np.array(values, dtype=np.int16).T
    q = decode_rotations(raw)
    assert np.all(np.isfinite(q))
    assert np.all(q[:, 3] >= 0)


def test_decoders_accept_empty_channels():
    empty = np.zeros(0, dtype=KEY_DTYPE)
    assert decode_positions(empty).shape == (0, 3)
    assert decode_rotations(empty).shape == (0, 4)
    assert key_frames(empty).shape == (0,)


def test_walk_start_section_a_is_displacement_over_duration():
    # Spec "Data", Keyframes: Rembrandt's walk-start y key 1.048 m/s is 0.349 m / 0.333 s.
    assert math.isclose(0.349 / 0.333, 1.048, abs_tol=1 / 1023)
    clip = author_clip("walk_start", 10, velocity=[(0, (0.0, 1.048, 0.0))])
    clip = parse_clip(*encode_clip(clip))
    assert clip.frames == 10
    assert math.isclose(clip.duration, 10 / 30, rel_tol=1e-6)
    vy = float(decode_positions(clip.velocity)[0, 1])
    assert abs(vy - 1.048) <= 0.5 / 1023             # one rounding of the 1/1023 step
    # The default displacement integrates the velocity: 1.048 m/s x 1/3 s = 0.349 m.
    assert math.isclose(clip.displacement[1], 0.349, abs_tol=1e-3)
    assert math.isclose(clip.displacement[1] / clip.duration, vy, abs_tol=1 / 1023)


# ---------------------------------------------------------------- sections and channels


def test_channel_rule_start_frames_and_section_order():
    d, k = sample_chunks()
    clip = parse_clip(d, k)
    # Section A: one channel, start frames = running sum of the deltas 0, 5, 4.
    assert clip.velocity["delta"].tolist() == [0, 5, 4]
    assert key_frames(clip.velocity).tolist() == [0, 5, 9]
    assert clip.velocity["y"].tolist() == [0, 1072, 500]
    assert clip.velocity["extra"].tolist() == [0, 7, 0]
    # Section B follows A.
    assert key_frames(clip.translation).tolist() == [0, 9]
    assert clip.translation["z"].tolist() == [2047, -2047]
    # Section C: one channel per mask bit, in bone order, split at each delta-0 key.
    assert clip.bones == [1, 5] and clip.mask == 0b100010
    assert key_frames(clip.rotations[1]).tolist() == [0, 3]
    assert clip.rotations[1]["z"].tolist() == [300, 32767]
    assert len(clip.rotations[5]) == 1 and clip.rotations[5]["extra"][0] == 0xAA
    # Then the events.
    assert len(clip.events) == 2
    assert [e.type for e in clip.decoded_events()] == [11, 0x21]


def test_channel_rule_many_channels_with_long_deltas():
    rot = {0: key(0, 1) + key(255, 2) + key(255, 3), 2: key(0, 4), 33: key(0, 5) + key(1, 6)}
    clip = parse_clip(*chunks(rotations=rot, duration=17.0))          # F = 510: every key reachable
    assert clip.bones == [0, 2, 33]
    assert key_frames(clip.rotations[0]).tolist() == [0, 255, 510]
    assert clip.rotations[0]["x"].tolist() == [1, 2, 3]
    assert clip.rotations[2]["x"].tolist() == [4]
    assert key_frames(clip.rotations[33]).tolist() == [0, 1]


def test_empty_sections_are_none_and_no_channels():
    clip = parse_clip(*chunks())
    assert clip.velocity is None and clip.translation is None
    assert clip.rotations == {} and clip.bones == [] and clip.mask == 0
    assert len(clip.events) == 0


def test_descriptor_fields():
    d, k = chunks(rotations={3: key(0)}, dx=0.25, dy=-1.5, duration=f32(1.0), flags=0xDEADBEEF,
                  name=b"walk_start\0junk", refcount=3, keyptr=0x1234, vtable=0x11223344)
    clip = parse_clip(d, k)
    assert clip.displacement == (0.25, -1.5)
    assert clip.duration == 1.0 and clip.frames == 30
    assert clip.flags == 0xDEADBEEF
    assert clip.name == "walk_start"
    assert clip.refcount == 3 and clip.keyframe_pointer == 0x1234 and clip.vtable == 0x11223344
    assert mask_bones(0b1001) == [0, 3]


# ---------------------------------------------------------------- events


def test_event_record_layout():
    ev = event(17, 9, 0x0102, 0x0304, pos=(1023, -1023, 2047), rot=(16384, -16384, 0),
               tail=b"\x01\x02\x03\x04")
    assert len(ev) == 24
    clip = parse_clip(*chunks(events=[ev]))
    (e,) = clip.decoded_events()
    assert e.frame == 17 and e.type == 9 and e.args == (0x0102, 0x0304)
    assert e.raw_pos == (1023, -1023, 2047) and e.raw_rot == (16384, -16384, 0)
    assert e.position == pytest.approx((1.0, -1.0, 1.0), rel=1e-6)
    assert e.rotation == (float(np.float32(16384) * np.float32(ROT_SCALE)),
                          float(np.float32(-16384) * np.float32(ROT_SCALE)), 0.0)
    assert e.tail == b"\x01\x02\x03\x04"
    assert e.word is None and e.code is None and e.fov is None
    assert e.name == "EFFECT_9"


@pytest.mark.parametrize("etype", [11, 12])
def test_event_types_11_and_12_pass_the_u32_at_8(etype):
    ev = bytearray(event(3, etype))
    struct.pack_into("<I", ev, 8, 0xCAFE1234)
    (e,) = parse_clip(*chunks(events=[bytes(ev)])).decoded_events()
    assert e.word == 0xCAFE1234
    assert e.to_json()["word"] == 0xCAFE1234
    assert e.fov is None and e.code is None


def test_event_type_0x21_code_and_name():
    (e,) = parse_clip(*chunks(events=[event(4, 0x21, 0, 6, pos=(10, 20, 30), tail=b"pch\0")])) \
        .decoded_events()
    assert e.code == "pch"
    assert e.name == "sub_pch"
    assert e.args[1] == 6                              # +0x06: the bone
    assert e.position == pytest.approx((10 / 1023, 20 / 1023, 30 / 2047), rel=1e-6)
    assert e.to_json()["code"] == "pch"
    assert e.word is None and e.fov is None


def test_event_type_0x3a_fov_float():
    ev = bytearray(event(0, 0x3A))
    struct.pack_into("<f", ev, 8, -1.0)
    (e,) = parse_clip(*chunks(events=[bytes(ev)])).decoded_events()
    assert e.fov == -1.0
    assert e.to_json()["fov"] == -1.0
    assert e.word is None and e.code is None
    assert e.name == "POWER_CAMERA_CUT"


def test_event_name_of_an_unknown_type():
    (e,) = parse_clip(*chunks(events=[event(0, 0x77)])).decoded_events()
    assert e.name == "type_0x77"
    assert EventType.SOUND == 11 and EventType.NAMED_EFFECT == 0x21


def test_event_to_json_fields():
    (e,) = parse_clip(*chunks(events=[event(5, 8, 1, 2, pos=(1023, 0, 0), rot=(0, 0, 0))])) \
        .decoded_events()
    j = e.to_json()
    assert set(j) == {"frame", "type", "args", "position", "rotation"}
    assert j["frame"] == 5 and j["type"] == 8 and j["args"] == [1, 2]
    assert j["position"] == [1.0, 0.0, 0.0] and j["rotation"] == [0.0, 0.0, 0.0]


def test_make_event_fields_round_trip():
    recs = [make_event(1, 11, word=0xFFFFFFFF), make_event(2, 0x21, (0, 4), (0.5, 0.25, 1.0),
                                                          (0.0, 0.0, 0.5), code="bld"),
            make_event(3, 0x3A, fov=-1.0), make_event(4, 15, (7, 9))]
    clip = author_clip("ev", 5, events=recs + [{"frame": 4, "type": 12, "word": 77}])
    ev = parse_clip(*encode_clip(clip)).decoded_events()
    assert ev[0].word == 0xFFFFFFFF
    assert ev[1].code == "bld" and ev[1].name == "sub_bld" and ev[1].args == (0, 4)
    assert ev[1].position == pytest.approx((0.5, 0.25, 1.0), abs=1 / 1023)
    assert ev[1].rotation[2] == pytest.approx(0.5, abs=ROT_SCALE)
    assert ev[2].fov == -1.0
    assert ev[3].args == (7, 9)
    assert ev[4].word == 77 and ev[4].type == 12


# ---------------------------------------------------------------- byte-exact round trip


def test_round_trip_keeps_every_byte():
    d, k = chunks(
        a=key(0, 1, 2, 3, extra=0xFF) + key(200, -4, -5, -6, extra=0x01),
        b=key(0, 7, 8, 9, extra=0x80),
        rotations={0: key(0, 1, 1, 1, extra=0x42), 33: key(0, -1, -1, -1) + key(9, 5, 5, 5, extra=9)},
        events=[event(1, 0x21, 3, 4, (1, 2, 3), (4, 5, 6), b"dus\xee"), event(2, 0x99, tail=b"\xff" * 4)],
        vtable=0x0045DE40, keyptr=0x00ABCDEF, refcount=0xFE, flags=0x80000001,
        trailing=b"\x01\x02\x03\x04\x05\x06\x07\x08", name=b"walk\0\x11\x22garbage",
        dx=f32(0.1), dy=-0.0, duration=f32(1 / 3),
    )
    clip = parse_clip(d, k)
    assert encode_clip(clip) == (d, k)
    assert clip.trailing == b"\x01\x02\x03\x04\x05\x06\x07\x08"
    assert clip.name_raw[:5] == b"walk\0" and clip.name_raw[5:7] == b"\x11\x22"
    assert math.copysign(1.0, clip.displacement[1]) == -1.0


def test_round_trip_accepts_bytearray_and_memoryview():
    d, k = sample_chunks()
    assert encode_clip(parse_clip(bytearray(d), memoryview(k))) == (d, k)


def test_clip_equals_compares_encoded_bytes():
    d, k = sample_chunks()
    a, b = parse_clip(d, k), parse_clip(d, k)
    assert a.equals(b)
    b.flags ^= 1
    assert not a.equals(b)


s16 = st.integers(-32768, 32767)
u8 = st.integers(0, 255)
u32 = st.integers(0, 0xFFFFFFFF)
finite_f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
# Durations the format accepts: positive, at most MAX_FRAMES (65535) frames.
positive_f32 = st.floats(min_value=0.0, max_value=2184.0, exclude_min=True, width=32,
                         allow_nan=False, allow_infinity=False)


@st.composite
def raw_channel(draw, max_keys: int = 6) -> bytes:
    n = draw(st.integers(1, max_keys))
    return b"".join(key(0 if i == 0 else draw(st.integers(1, 255)), draw(s16), draw(s16), draw(s16),
                        extra=draw(u8)) for i in range(n))


@st.composite
def raw_event(draw) -> bytes:
    etype = draw(st.one_of(st.sampled_from([8, 9, 10, 11, 12, 15, 0x20, 0x21, 0x2E, 0x39, 0x3A,
                                            0x3B, 0x3D, 0x48]), st.integers(0, 0xFFFF)))
    body = bytearray(draw(st.binary(min_size=24, max_size=24)))
    struct.pack_into("<H", body, 2, etype)
    if etype == 0x3A:
        struct.pack_into("<f", body, 8, draw(finite_f32))
    return bytes(body)


@st.composite
def raw_clip(draw) -> tuple[bytes, bytes]:
    """Random valid chunk bytes: any mask over bones 0-33 and any field the format allows."""
    bones = draw(st.sets(st.integers(0, 33), max_size=34))
    rotations = {bone: draw(raw_channel()) for bone in bones}
    a = draw(st.one_of(st.just(b""), raw_channel()))
    b = draw(st.one_of(st.just(b""), raw_channel()))
    events = draw(st.lists(raw_event(), max_size=5))
    return chunks(a, b, rotations, events, vtable=draw(u32), dx=draw(finite_f32), dy=draw(finite_f32),
                  duration=draw(positive_f32), keyptr=draw(u32), name=draw(st.binary(min_size=30, max_size=30)),
                  refcount=draw(u8), flags=draw(u32), trailing=draw(st.binary(min_size=8, max_size=8)))


@given(raw_clip())
@SETTINGS
def test_random_raw_chunks_round_trip_byte_for_byte(dk):
    d, k = dk
    clip = parse_clip(d, k)
    assert encode_clip(clip) == (d, k)
    assert clip.bones == mask_bones(int.from_bytes(d[0x20:0x25], "little"))
    for keys in [clip.velocity, clip.translation, *clip.rotations.values()]:
        if keys is not None:
            assert keys["delta"][0] == 0 and np.all(keys["delta"][1:] > 0)


# ---------------------------------------------------------------- authoring


def test_author_defaults():
    clip = author_clip("idle", 45)
    assert clip.duration == f32(45 / 30) and clip.frames == 45
    assert clip.name == "idle" and clip.name_raw == b"idle".ljust(30, b"\0")
    assert clip.displacement == (0.0, 0.0) and clip.flags == 0
    assert clip.velocity is None and clip.translation is None and clip.rotations == {}
    d, k = encode_clip(clip)
    assert d[0:4] == struct.pack("<I", VTABLE_PLACEHOLDER) and k == b""


def test_author_splits_gaps_over_255_frames():
    clip = author_clip("long", 700, translation=[(0, (0.0, 0.0, 0.0)), (600, (0.6, -0.6, 1.2))],
                       rotations={4: [(0, (0, 0, 0, 1)), (300, (0, 0, math.sin(0.5), math.cos(0.5)))]})
    tr = clip.translation
    assert tr["delta"].tolist() == [0, 255, 255, 90]
    assert key_frames(tr).tolist() == [0, 255, 510, 600]
    pos = decode_positions(tr)
    for f, p in zip([0, 255, 510, 600], pos):
        np.testing.assert_allclose(p, np.array([0.6, -0.6, 1.2]) * f / 600, atol=1 / 1023)
    rot = clip.rotations[4]
    assert rot["delta"].tolist() == [0, 255, 45]
    q = decode_rotations(rot)
    assert q[1, 2] > 0 and q[1, 2] < q[2, 2]            # on the way, nlerped
    assert math.isclose(float(np.linalg.norm(q[1])), 1.0, rel_tol=1e-4)
    clip2 = parse_clip(*encode_clip(clip))
    assert key_frames(clip2.translation).tolist() == [0, 255, 510, 600]


def test_author_quantises_to_the_steps():
    clip = author_clip("q", 10, velocity=[(0, (0.3, -0.3, 0.1))],
                       rotations={7: [(0, (0.5, 0.5, 0.5, 0.5))]})
    v = clip.velocity[0]
    assert (int(v["x"]), int(v["y"]), int(v["z"])) == (307, -307, 205)   # 306.9, 204.7 rounded
    r = clip.rotations[7][0]
    assert int(r["x"]) == int(r["y"]) == int(r["z"]) == round(0.5 / ROT_SCALE) == 16384
    assert quantise_positions([(1.0, 1.0, 1.0)]).tolist() == [[1023, 1023, 2047]]


def test_author_normalises_rotations_to_w_non_negative():
    # Not unit, w < 0: stored as the unit quaternion with w >= 0 (q and -q are one rotation).
    clip = author_clip("w", 5, rotations={2: [(0, (0.0, 0.0, -1.2, -1.6))]})
    r = clip.rotations[2][0]
    assert int(r["z"]) == round(0.6 / ROT_SCALE)
    q = decode_rotations(clip.rotations[2])[0]
    np.testing.assert_allclose(q, [0.0, 0.0, 0.6, 0.8], atol=1e-4)
    assert quantise_rotations([(0, 0, 0, -1)]).tolist() == [[0, 0, 0]]


def test_author_channel_not_starting_at_zero_holds_its_first_value():
    clip = author_clip("late", 20, velocity=[(4, (1.0, 0.0, 0.0)), (8, (2.0, 0.0, 0.0))],
                       rotations={9: [(6, (0.0, 0.6, 0.0, 0.8))]})
    assert key_frames(clip.velocity).tolist() == [0, 4, 8]
    assert clip.velocity["x"].tolist() == [1023, 1023, 2046]
    assert key_frames(clip.rotations[9]).tolist() == [0, 6]
    assert clip.rotations[9]["y"].tolist() == [round(0.6 / ROT_SCALE)] * 2


def test_author_explicit_displacement_and_flags():
    clip = author_clip("d", 3, displacement=(0.1, -0.2), flags=0x40)
    d, _ = encode_clip(clip)
    assert struct.unpack_from("<ff", d, 4) == (f32(0.1), f32(-0.2))
    assert struct.unpack_from("<I", d, 0x44)[0] == 0x40


Q = (0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("kwargs", [
    dict(frames=0),
    dict(frames=-3),
    dict(frames=2.0),
    dict(frames=True),
    dict(name="x" * 31),
    dict(name="snow\u2603"),
    dict(rotations={34: [(0, Q)]}),
    dict(rotations={-1: [(0, Q)]}),
    dict(rotations={3: []}),
    dict(rotations={3: [(0, (0.0, 0.0, 0.0, 0.0))]}),
    dict(rotations={3: [(0, (math.nan, 0.0, 0.0, 1.0))]}),
    dict(rotations={3: [(0, (0.0, 0.0, 1.0))]}),
    dict(rotations={3: [(0, Q), (1, (0.0, 0.0, 0.0))]}),
    dict(rotations={3: [(0, Q), (0, Q)]}),
    dict(rotations={3: [(5, Q), (2, Q)]}),
    dict(rotations={3: [(-1, Q)]}),
    dict(rotations={3: [(1.5, Q)]}),
    dict(rotations={3: [(math.nan, Q)]}),
    dict(velocity=[(0, (33.0, 0.0, 0.0))]),
    dict(velocity=[(0, (0.0, 0.0, 16.1))]),
    dict(velocity=[(0, (math.inf, 0.0, 0.0))]),
    dict(velocity=[(0, (0.0, 0.0, 0.0, 0.0))]),
    dict(translation=[(0, (0.0, 0.0, 0.0)), (0, (0.0, 0.0, 0.0))]),
    dict(events=[dict(frame=70000, type=1)]),
    dict(events=[dict(frame=0, type=0x3A, fov=math.nan)]),
])
def test_author_rejects_bad_input(kwargs):
    args = dict(name="bad", frames=10)
    args.update(kwargs)
    name, frames = args.pop("name"), args.pop("frames")
    with pytest.raises(ClipAuthoringError) as exc:
        author_clip(name, frames, **args)
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize("kwargs", [
    dict(frame=-1, type=1),
    dict(frame=0, type=0x10000),
    dict(frame=0, type=1, args=(0, 0x10000)),
    dict(frame=0, type=1, args=(1,)),
    dict(frame=0, type=1, position=(40.0, 0.0, 0.0)),
    dict(frame=0, type=1, position=(0.0, 0.0)),
    dict(frame=0, type=1, rotation=(1.5, 0.0, 0.0)),
    dict(frame=0, type=1, rotation=(0.0, 0.0, 0.0, 1.0)),
    dict(frame=0, type=11, word=-1),
    dict(frame=0, type=11, word=1 << 32),
    dict(frame=0, type=0x3A, fov=math.inf),
    dict(frame=0, type=0x3A, fov=1e39),
    dict(frame=0, type=0x3A, position=(0.0, -0.125, 0.0)),   # its x, y bytes read as the fov: -inf
    dict(frame=0, type=11, word=1, fov=1.0),
    dict(frame=0, type=0x21, code="blood"),
    dict(frame=0, type=0x21, code="\u2603"),
])
def test_make_event_rejects_bad_input(kwargs):
    with pytest.raises(ClipAuthoringError):
        make_event(**kwargs)


def test_a_camera_cuts_field_of_view_is_the_bytes_its_position_would_hold():
    """A 0x3a event's field of view is the f32 at +8, where another event holds its position's
    x and y: an event the parser would refuse is refused when authored, naming the field; a
    finite one, given as ``fov`` or left in the position's bytes, is read back as written."""
    with pytest.raises(ClipAuthoringError, match="field of view"):
        make_event(0, EventType.POWER_CAMERA_CUT, position=(0.0, -0.125, 0.0))
    for kwargs in (dict(fov=-1.0), dict(fov=42.5), dict(position=(0.0, 0.0, 1.0))):
        ev = make_event(0, EventType.POWER_CAMERA_CUT, **kwargs)
        clip = author_clip("cut", 4, events=[ev])
        back = parse_clip(*encode_clip(clip))
        assert back.decoded_events()[0].fov == kwargs.get("fov", 0.0)


unit_quat = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4).filter(
    lambda q: math.sqrt(sum(v * v for v in q)) > 1e-3)


@st.composite
def authored_channel(draw, values):
    frames = sorted(draw(st.sets(st.integers(0, 900), min_size=1, max_size=6)))
    return [(f, draw(values)) for f in frames]


position = st.tuples(st.floats(-30, 30), st.floats(-30, 30), st.floats(-15, 15))


@st.composite
def authored_event(draw):
    """An event record as make_event writes it: any type, a camera cut (0x3a) with a finite
    field of view of its own (its position's x and y bytes are its fov)."""
    etype = draw(st.one_of(st.integers(0, 0xFFFF), st.just(int(EventType.POWER_CAMERA_CUT))))
    fov = draw(st.floats(allow_nan=False, allow_infinity=False, width=32)) \
        if etype == EventType.POWER_CAMERA_CUT else None
    args = draw(st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF)))
    return make_event(draw(st.integers(0, 0xFFFF)), etype, args, draw(position),
                      draw(st.tuples(*[st.floats(-1, 1)] * 3)), fov=fov)


@given(vel=st.one_of(st.none(), authored_channel(position)),
       tr=st.one_of(st.none(), authored_channel(position)),
       rot=st.dictionaries(st.integers(0, 33), authored_channel(unit_quat), max_size=6),
       frames=st.integers(1, 1000),
       events=st.lists(authored_event(), max_size=4))
@SETTINGS
def test_authored_clips_round_trip(vel, tr, rot, frames, events):
    clip = author_clip("prop", frames, velocity=vel, translation=tr, rotations=rot, events=events)
    d, k = encode_clip(clip)
    back = parse_clip(d, k)
    assert encode_clip(back) == (d, k)
    assert back.frames == frames and back.bones == sorted(rot)
    for authored, keys, label, quantise in ([(vel, back.velocity, "A", quantise_positions),
                                             (tr, back.translation, "B", quantise_positions)]
                                            + [(rot[b], back.rotations[b], b, quantise_rotations) for b in rot]):
        if authored is None:
            assert keys is None
            continue
        # The kept keys run to the first one at or past F; the rest stay raw (never read).
        starts = key_frames(keys).tolist()
        assert all(f < frames for f in starts[:-1])
        if label in back.unreachable:
            assert starts[-1] >= frames
        keys = np.frombuffer(keys.tobytes() + back.unreachable.get(label, b""), dtype=KEY_DTYPE)
        assert np.all(keys["delta"][1:] >= 1) and np.all(keys["delta"] <= 255)
        starts = key_frames(keys).tolist()
        raw = np.stack([keys["x"], keys["y"], keys["z"]], axis=-1)
        for f, value in authored:                      # absolute frames and values kept
            i = starts.index(f)
            assert raw[i].tolist() == quantise([value])[0].tolist()


# ---------------------------------------------------------------- encoding rejects


def test_encode_rejects_a_channel_not_starting_with_delta_0():
    clip = parse_clip(*sample_chunks())
    clip.velocity = clip.velocity.copy()
    clip.velocity["delta"][0] = 1
    with pytest.raises(ClipFormatError) as exc:
        encode_clip(clip)
    assert "channel A" in str(exc.value)


def test_encode_rejects_a_second_delta_0_key_in_a_channel():
    clip = parse_clip(*sample_chunks())
    clip.rotations[1] = clip.rotations[1].copy()
    clip.rotations[1]["delta"][1] = 0
    with pytest.raises(ClipFormatError) as exc:
        encode_clip(clip)
    assert "bone 1" in str(exc.value)


def test_encode_rejects_a_bone_outside_0_33():
    clip = parse_clip(*sample_chunks())
    clip.rotations[34] = clip.rotations[5]
    with pytest.raises(ClipFormatError) as exc:
        encode_clip(clip)
    assert_format_error(exc, "bone mask", 0x20)


def test_encode_rejects_a_section_over_its_size_field():
    clip = parse_clip(*sample_chunks())
    long = np.zeros(0x10000 // 8, dtype=KEY_DTYPE)
    long["delta"][1:] = 1
    clip.velocity = long
    with pytest.raises(ClipFormatError) as exc:
        encode_clip(clip)
    assert_format_error(exc, "section A size", 0x10)


def test_encode_rejects_more_than_65535_events():
    clip = parse_clip(*sample_chunks())
    clip.events = np.zeros(0x10000, dtype=EVENT_DTYPE)
    with pytest.raises(ClipFormatError) as exc:
        encode_clip(clip)
    assert_format_error(exc, "event count", 0x1A)


# ---------------------------------------------------------------- parse rejects, one test per rule


def test_error_class_is_a_value_error():
    assert issubclass(ClipFormatError, ValueError)
    assert issubclass(ClipAuthoringError, ValueError)


@pytest.mark.parametrize("which", ["descriptor", "keyframes"])
def test_reject_payload_not_bytes(which):
    d, k = sample_chunks()
    args = (d.hex(), k) if which == "descriptor" else (d, None)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(*args)
    assert_format_error(exc, "payload", 0)
    assert exc.value.chunk == which


@pytest.mark.parametrize("size", [0, 1, 79, 81])
def test_reject_descriptor_not_80_bytes(size):
    d, k = sample_chunks()
    d = (d + b"\0")[:size]
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, "size", min(size, 80))
    assert exc.value.chunk == "descriptor"


@pytest.mark.parametrize("cut", [0, 1, 8, 30, 50])
def test_reject_keyframes_truncated_in_the_sections(cut):
    d, k = sample_chunks()                       # sections A-C are 64 bytes
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k[:cut])
    assert_format_error(exc, "sections A-C", cut)
    assert exc.value.chunk == "keyframes"


@pytest.mark.parametrize("field,offset", [("section A size", 0x10), ("section B size", 0x12),
                                          ("section C size", 0x14)])
def test_reject_section_size_that_overruns_the_chunk(field, offset):
    d, k = sample_chunks()
    d = bytearray(d)
    fmt = "<I" if offset == 0x14 else "<H"
    struct.pack_into(fmt, d, offset, struct.unpack_from(fmt, d, offset)[0] + 8 * 100)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(bytes(d), k)
    assert_format_error(exc, "sections A-C", len(k))


@pytest.mark.parametrize("field,offset", [("section A size", 0x10), ("section B size", 0x12),
                                          ("section C size", 0x14)])
def test_reject_section_size_not_a_multiple_of_8(field, offset):
    d, k = sample_chunks()
    d = bytearray(d)
    fmt = "<I" if offset == 0x14 else "<H"
    struct.pack_into(fmt, d, offset, struct.unpack_from(fmt, d, offset)[0] + 4)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(bytes(d), k + b"\0" * 4)
    assert_format_error(exc, field, offset)


@pytest.mark.parametrize("extra", [1, 8, 24])
def test_reject_bytes_past_the_events(extra):
    d, k = sample_chunks()
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k + b"\0" * extra)
    assert_format_error(exc, "chunk size", len(k))


@pytest.mark.parametrize("nchan", [0, 1, 3, 34])
def test_reject_channel_count_not_the_mask_bit_count(nchan):
    d, k = sample_chunks()                       # mask bones 1 and 5
    d = bytearray(d)
    struct.pack_into("<H", d, 0x18, nchan)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(bytes(d), k)
    assert_format_error(exc, "channel count", 0x18)


@pytest.mark.parametrize("section_c", [key(0), key(0) + key(0) + key(0), key(0) + key(1) + key(2)])
def test_reject_section_c_channels_not_the_count(section_c):
    d, k = chunks(rotations={1: b"", 2: b""}, size_c=len(section_c))
    k = section_c
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, "section C", 0)


def test_reject_section_c_empty_with_channels():
    d, k = chunks(rotations={4: b""})
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, "section C size", 0x14)


def test_reject_channels_in_section_c_without_mask_bits():
    d, k = chunks(a=key(0), size_c=8, nchan=0, mask=0)
    k = k + key(0)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, "section C", 8)


@pytest.mark.parametrize("bone", [34, 35, 39])
def test_reject_mask_bits_above_33(bone):
    d, k = chunks(rotations={1: key(0)})
    d = bytearray(d)
    d[0x20 + bone // 8] |= 1 << (bone % 8)
    struct.pack_into("<H", d, 0x18, 2)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(bytes(d), k)
    assert_format_error(exc, "bone mask", 0x24)
    assert str(bone) in str(exc.value)


@pytest.mark.parametrize("label", ["A", "B", "C"])
def test_reject_first_key_delta_not_0(label):
    sections = {"a": key(0), "b": key(0), "rotations": {6: key(0)}}
    bad = key(3)
    if label == "A":
        sections["a"] = bad
    elif label == "B":
        sections["b"] = bad
    else:
        sections["rotations"] = {6: bad}
    d, k = chunks(**sections)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, f"section {label} first key delta", {"A": 0, "B": 8, "C": 16}[label])


@pytest.mark.parametrize("label", ["A", "B"])
def test_reject_a_second_channel_in_section_a_or_b(label):
    two = key(0) + key(4) + key(0) + key(1)
    d, k = chunks(a=two if label == "A" else key(0), b=two if label == "B" else b"")
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    start = 0 if label == "A" else 8
    assert_format_error(exc, f"section {label}", start + 16)


@pytest.mark.parametrize("nevents", [3, 100, 0xFFFF])
def test_reject_events_that_overrun(nevents):
    d, k = sample_chunks()                       # 2 events after 64 bytes of keys
    d = bytearray(d)
    struct.pack_into("<H", d, 0x1A, nevents)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(bytes(d), k)
    assert_format_error(exc, "events", 64)


def test_reject_keyframes_truncated_in_the_events():
    d, k = sample_chunks()
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k[:-1])
    assert_format_error(exc, "events", 64)


@pytest.mark.parametrize("bits", [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F800000, 0xFF800000,
                                  0x00000000, 0x80000000, 0xBF800000, 0x80000001])
def test_reject_duration_nan_inf_zero_or_negative(bits):
    d, k = chunks(duration_bits=bits)
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, "duration", 0x0C)


@pytest.mark.parametrize("axis,offset", [("x", 0x04), ("y", 0x08)])
@pytest.mark.parametrize("bits", [0x7FC00000, 0x7F800000, 0xFF800000])
def test_reject_displacement_not_finite(axis, offset, bits):
    d, k = chunks(**{f"d{axis}_bits": bits})
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, f"displacement {axis}", offset)


@pytest.mark.parametrize("bits", [0x7FC00000, 0x7F800000, 0xFF800000])
def test_reject_type_0x3a_fov_not_finite(bits):
    ok = event(0, 0x3A)
    bad = bytearray(event(1, 0x3A))
    struct.pack_into("<I", bad, 8, bits)
    d, k = chunks(a=key(0), events=[ok, bytes(bad)])
    with pytest.raises(ClipFormatError) as exc:
        parse_clip(d, k)
    assert_format_error(exc, "event 1 field of view", 8 + 24 + 8)


def test_other_event_types_may_hold_any_bits_at_8():
    ev = bytearray(event(1, 11))
    struct.pack_into("<I", ev, 8, 0x7FC00000)        # a NaN pattern, but a word for type 11
    (e,) = parse_clip(*chunks(events=[bytes(ev)])).decoded_events()
    assert e.word == 0x7FC00000


# ---------------------------------------------------------------- fuzz: flips and truncations


def _assert_all_finite(clip: Clip) -> None:
    assert math.isfinite(clip.duration) and clip.duration > 0 and clip.frames >= 0
    assert all(math.isfinite(v) for v in clip.displacement)
    for keys in (clip.velocity, clip.translation):
        if keys is not None:
            assert np.all(np.isfinite(decode_positions(keys)))
    for keys in clip.rotations.values():
        assert np.all(np.isfinite(decode_rotations(keys)))
    for e in clip.decoded_events():
        assert all(math.isfinite(v) for v in e.position + e.rotation)
        assert e.fov is None or math.isfinite(e.fov)
        assert isinstance(e.name, str)


@given(dk=raw_clip(), data=st.data())
@SETTINGS
def test_flipped_or_truncated_clips_parse_or_raise_clip_format_error(dk, data):
    d, k = bytearray(dk[0]), bytearray(dk[1])
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        target = data.draw(st.sampled_from([d, k] if k else [d]), label="chunk")
        i = data.draw(st.integers(0, len(target) - 1), label="index")
        target[i] ^= data.draw(st.integers(1, 255), label="xor")
    cut = data.draw(st.sampled_from(["none", "descriptor", "keyframes", "grow"]), label="cut")
    if cut == "descriptor":
        d = d[:data.draw(st.integers(0, len(d)), label="dlen")]
    elif cut == "keyframes":
        k = k[:data.draw(st.integers(0, len(k)), label="klen")]
    elif cut == "grow":
        k = k + data.draw(st.binary(min_size=1, max_size=32), label="tail")
    try:
        clip = parse_clip(bytes(d), bytes(k))
    except ClipFormatError as exc:
        note_outcome(f"rejected: {exc.field}")
        return
    note_outcome("parsed")
    _assert_all_finite(clip)
    assert encode_clip(clip) == (bytes(d), bytes(k))    # anything accepted re-encodes exactly


# ---------------------------------------------------------------- typed events (spec "Keyframes": the event types)


def _one(**kw):
    c = author_clip("E", 10, events=[make_event(**kw)])
    d, k = encode_clip(c)
    return parse_clip(d, k).decoded_events()[0]


def test_typed_events_name_the_fields_the_spec_documents():
    ev = _one(frame=0, type=0x08, position=(0.380, 1.012, 0.0))
    assert ev.typed()["kind"] == "partner_place" and ev.typed()["place"][:2] == pytest.approx((0.380, 1.012), abs=1e-3)
    ev = _one(frame=2, type=0x21, args=(0, 19), code="bld", position=(0.1, 0.2, 0.3))
    assert ev.typed() == {"kind": "named_effect", "effect": "sub_bld", "bone": 19,
                          "position": ev.position, "rotation": ev.rotation}
    ev = _one(frame=3, type=11, word=1234)
    assert ev.typed() == {"kind": "sound", "sound": 1234, "plain_id": True}
    assert _one(frame=3, type=11, word=0x10004).typed()["plain_id"] is False
    assert _one(frame=3, type=12, word=77).typed() == {"kind": "message", "value": 77}
    assert _one(frame=1, type=0x20, args=(5, 1)).typed() == {"kind": "camera_shake", "level": 5 + 65536}
    assert _one(frame=1, type=0x2E).typed() == {"kind": "slow_motion", "on": True}
    assert _one(frame=1, type=0x2F).typed() == {"kind": "slow_motion", "on": False}
    assert _one(frame=1, type=0x39, args=(0, 1)).typed()["mode"] == 1
    assert _one(frame=1, type=0x39, args=(0, 7)).typed()["mode"] == 2
    cut = _one(frame=1, type=0x3A, fov=-1.0).typed()
    assert cut["fov"] == -1.0 and cut["fov_degrees"] == 50.0
    shot = _one(frame=1, type=0x3B, args=(0, 6), position=(1.0, 2.0, 0.5)).typed()
    assert shot["slot"] == 6 and shot["check"] == 0 and shot["position"][:2] == pytest.approx((1.0, 2.0), abs=1e-3)
    assert _one(frame=1, type=0x3D).typed() == {"kind": "power_camera_end"}
    assert _one(frame=1, type=0x40, args=(3, 4)).typed() == {"kind": "start_move", "args": (3, 4)}
    assert _one(frame=1, type=0x2C).typed() == {"kind": "held", "clear": 0x1, "set": 0x2}
    assert _one(frame=1, type=0x2D).typed() == {"kind": "held", "clear": 0x7, "set": 0x4}
    assert _one(frame=1, type=0x48).typed() == {"kind": "held", "replace_with": 0x40000}
    assert _one(frame=1, type=0x77).typed() == {}         # unknown types keep their raw fields only
    assert _one(frame=1, type=0x77, args=(1, 2)).args == (1, 2)
