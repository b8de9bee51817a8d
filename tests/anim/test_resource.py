"""Resource file, Anim Range List and anim sets.

Spec: "Where clips are found", "The Anim Range List (chunk 0x45)", "Playback rate".
Validity tests first (one invalid input per rule), then behaviour, then properties.
"""
from __future__ import annotations

import dataclasses
import math
import pathlib
import re
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from budget import examples

from scuffle.anim.data.animset import AnimId, AnimSet, AnimSetError
from scuffle.anim.data.clip import Clip, ClipFormatError, author_clip, encode_clip, make_event
from scuffle.anim.data.rangelist import (
    DEFAULT_HIT, FIELD_OFFSETS, RANGE_DTYPE, ZERO_RECORD,
    RangeAuthoringError, RangeFlags, RangeList, RangeListFormatError, RangeRecord, RateClass,
    UnknownAnimId, author_range, parse_range_list, rate_class,
)
from scuffle.anim.data.resource import (
    NUM_ANIM_IDS, Chunk, ChunkType, Resource, ResourceFormatError, load_resource, save_resource,
)

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "formats-resource.md"
UNKNOWN_TYPE = 0x4E
KNOWN_TYPES = {int(t) for t in ChunkType}
FUZZ = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROUND_TRIP = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- helpers


def make_clip(name: str, frames: int = 6, bone: int = 1) -> Clip:
    return author_clip(
        name, frames,
        velocity=[(0, (0.0, 1.0, 0.0)), (frames - 1, (0.0, 1.5, 0.0))],
        rotations={bone: [(0, (0.0, 0.0, 0.0, 1.0)), (frames - 1, (0.0, 0.0, 0.6, 0.8))]},
        events=[make_event(1, 0x0B, word=77)],
    )


def pack(chunks) -> tuple[bytes, list[int]]:
    """(type, payload) pairs -> file bytes and each chunk's header offset."""
    out, offsets, pos = [], [], 0
    for ctype, payload in chunks:
        offsets.append(pos)
        out.append(struct.pack("<II", ctype, len(payload)) + payload)
        pos += 8 + len(payload)
    return b"".join(out), offsets


def table_payload(slots) -> bytes:
    return struct.pack("<I", len(slots)) + np.asarray(slots, "<i4").tobytes()


def range_payload(records: dict | None = None, count: int = NUM_ANIM_IDS) -> bytes:
    return RangeList.from_records(records or {}, count).to_bytes()


def base_chunks(num_clips: int = 2):
    """A valid resource's chunks: clip pairs, the range list, the table, an unknown chunk."""
    chunks = []
    for i in range(num_clips):
        desc, keys = encode_clip(make_clip(f"clip{i}", 4 + i))
        chunks += [(ChunkType.KEYFRAMES, keys), (ChunkType.DESCRIPTOR, desc)]
    slots = [-1] * NUM_ANIM_IDS
    for i in range(num_clips):
        slots[10 + i] = i
    chunks.append((ChunkType.ANIM_RANGE_LIST, range_payload({10: author_range((0, 1), 1.0, damage=5)})))
    chunks.append((ChunkType.ANIM_TABLE, table_payload(slots)))
    chunks.append((UNKNOWN_TYPE, b"kept as is"))
    return chunks


def rejects(chunks_or_bytes, index: int, ctype: int | None, offset: int, **kw) -> ResourceFormatError:
    """Load, expect a ResourceFormatError naming chunk ``index``/``ctype`` and absolute ``offset``."""
    data = chunks_or_bytes if isinstance(chunks_or_bytes, bytes) else pack(chunks_or_bytes)[0]
    with pytest.raises(ResourceFormatError) as ei:
        load_resource(data, **kw)
    e = ei.value
    msg = str(e)
    assert (e.chunk_index, e.chunk_type, e.offset) == (index, ctype, offset), msg
    assert f"chunk {index} " in msg and f"at byte {offset} " in msg, msg
    if ctype in {int(t) for t in ChunkType}:
        assert f"type 0x{ctype:02x}" in msg, msg
    elif ctype is not None:                     # an unknown word is not quoted (the file's bytes)
        assert f"{ctype:x}" not in msg and "an unknown type" in msg, msg
    return e


# ---------------------------------------------------------------- rejections: chunk structure


def test_reject_chunk_header_cut_short():
    data, offs = pack(base_chunks())
    rejects(data + b"\x4e\0\0\0\x01", 7, UNKNOWN_TYPE, len(data))
    rejects(data + b"\x4e\0", 7, None, len(data))


def test_reject_payload_cut_short():
    data, offs = pack(base_chunks())
    e = rejects(data[:-1], 6, UNKNOWN_TYPE, offs[6] + 4)
    assert "overruns" in str(e)


def test_reject_descriptor_without_keyframes():
    chunks = base_chunks()
    chunks.insert(0, (ChunkType.DESCRIPTOR, chunks[1][1]))
    data, offs = pack(chunks)
    rejects(data, 0, ChunkType.DESCRIPTOR, 0)


def test_reject_keyframes_without_descriptor_at_end():
    chunks = base_chunks() + [(ChunkType.KEYFRAMES, base_chunks()[0][1])]
    data, offs = pack(chunks)
    rejects(data, 7, ChunkType.KEYFRAMES, offs[7])


def test_reject_keyframes_followed_by_another_chunk():
    chunks = base_chunks()
    chunks.insert(1, (UNKNOWN_TYPE, b"between"))
    data, offs = pack(chunks)
    rejects(data, 0, ChunkType.KEYFRAMES, 0)


def test_reject_second_range_list():
    chunks = base_chunks()
    chunks.append((ChunkType.ANIM_RANGE_LIST, range_payload()))
    data, offs = pack(chunks)
    rejects(data, 7, ChunkType.ANIM_RANGE_LIST, offs[7])


def test_reject_second_table():
    chunks = base_chunks()
    chunks.append((ChunkType.ANIM_TABLE, table_payload([-1] * NUM_ANIM_IDS)))
    data, offs = pack(chunks)
    rejects(data, 7, ChunkType.ANIM_TABLE, offs[7])


def test_reject_missing_range_list():
    chunks = [c for c in base_chunks() if c[0] != ChunkType.ANIM_RANGE_LIST]
    data, offs = pack(chunks)
    rejects(data, len(chunks), ChunkType.ANIM_RANGE_LIST, len(data))


def test_reject_missing_table():
    chunks = [c for c in base_chunks() if c[0] != ChunkType.ANIM_TABLE]
    data, offs = pack(chunks)
    rejects(data, len(chunks), ChunkType.ANIM_TABLE, len(data))


def test_reject_empty_file():
    rejects(b"", 0, ChunkType.ANIM_RANGE_LIST, 0)


# ---------------------------------------------------------------- rejections: clips (wrapped)


def test_reject_clip_descriptor_error_wrapped_with_absolute_offset():
    chunks = base_chunks()
    chunks[3] = (ChunkType.DESCRIPTOR, chunks[3][1][:79])
    data, offs = pack(chunks)
    e = rejects(data, 3, ChunkType.DESCRIPTOR, offs[3] + 8 + 79)
    assert isinstance(e.__cause__, ClipFormatError)
    assert e.offset == offs[3] + 8 + e.__cause__.offset


def test_reject_clip_keyframes_error_wrapped_with_absolute_offset():
    chunks = base_chunks()
    good = len(chunks[2][1])
    chunks[2] = (ChunkType.KEYFRAMES, chunks[2][1] + b"\0" * 8)   # bytes past the last event
    data, offs = pack(chunks)
    e = rejects(data, 2, ChunkType.KEYFRAMES, offs[2] + 8 + good)
    assert isinstance(e.__cause__, ClipFormatError) and e.__cause__.chunk == "keyframes"


# ---------------------------------------------------------------- rejections: range list


def test_reject_range_list_payload_under_4_bytes():
    chunks = base_chunks()
    chunks[4] = (ChunkType.ANIM_RANGE_LIST, b"\0\0\0")
    data, offs = pack(chunks)
    e = rejects(data, 4, ChunkType.ANIM_RANGE_LIST, offs[4] + 8)
    assert isinstance(e.__cause__, RangeListFormatError)


def test_reject_range_list_count_not_matching_size():
    chunks = base_chunks()
    chunks[4] = (ChunkType.ANIM_RANGE_LIST, chunks[4][1] + b"\0" * 16)
    data, offs = pack(chunks)
    rejects(data, 4, ChunkType.ANIM_RANGE_LIST, offs[4] + 8)


@pytest.mark.parametrize("bits", [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001])
def test_reject_non_finite_reach_names_id_and_offset(bits):
    chunks = base_chunks()
    payload = bytearray(chunks[4][1])
    struct.pack_into("<I", payload, 4 + 147 * 16 + 4, bits)
    chunks[4] = (ChunkType.ANIM_RANGE_LIST, bytes(payload))
    data, offs = pack(chunks)
    e = rejects(data, 4, ChunkType.ANIM_RANGE_LIST, offs[4] + 8 + 4 + 147 * 16 + 4)
    assert "record 147" in str(e) and e.__cause__.record == 147


def test_reject_range_list_count_not_722():
    chunks = base_chunks()
    chunks[4] = (ChunkType.ANIM_RANGE_LIST, range_payload(count=700))
    chunks[5] = (ChunkType.ANIM_TABLE, table_payload([-1] * 700))
    data, offs = pack(chunks)
    rejects(data, 4, ChunkType.ANIM_RANGE_LIST, offs[4] + 8)


# ---------------------------------------------------------------- rejections: table


def test_reject_table_payload_under_4_bytes():
    chunks = base_chunks()
    chunks[5] = (ChunkType.ANIM_TABLE, b"\x01")
    data, offs = pack(chunks)
    rejects(data, 5, ChunkType.ANIM_TABLE, offs[5] + 8)


def test_reject_table_count_not_matching_size():
    chunks = base_chunks()
    chunks[5] = (ChunkType.ANIM_TABLE, chunks[5][1][:-2])
    data, offs = pack(chunks)
    rejects(data, 5, ChunkType.ANIM_TABLE, offs[5] + 8)


def test_reject_table_count_not_722():
    chunks = base_chunks()
    chunks[5] = (ChunkType.ANIM_TABLE, table_payload([-1] * 723))
    data, offs = pack(chunks)
    rejects(data, 5, ChunkType.ANIM_TABLE, offs[5] + 8)


def test_reject_table_count_not_range_list_count_when_any_count_allowed():
    chunks = base_chunks()
    chunks[4] = (ChunkType.ANIM_RANGE_LIST, range_payload(count=30))
    chunks[5] = (ChunkType.ANIM_TABLE, table_payload([-1] * 31))
    data, offs = pack(chunks)
    rejects(data, 5, ChunkType.ANIM_TABLE, offs[5] + 8, num_ids=None)
    chunks[5] = (ChunkType.ANIM_TABLE, table_payload([0, 1] + [-1] * 28))
    res = load_resource(pack(chunks)[0], num_ids=None)
    assert res.num_ids == 30 and res.clip_for_id(0) is res.clips[1]


@pytest.mark.parametrize("slot", [2, 1000, -2, -(2 ** 31)])
def test_reject_slot_out_of_range(slot):
    chunks = base_chunks()                       # two clips: slots -1, 0, 1 are valid
    slots = [-1] * NUM_ANIM_IDS
    slots[500] = slot
    chunks[5] = (ChunkType.ANIM_TABLE, table_payload(slots))
    data, offs = pack(chunks)
    e = rejects(data, 5, ChunkType.ANIM_TABLE, offs[5] + 8 + 4 + 4 * 500)
    assert "id 500" in str(e)


# ---------------------------------------------------------------- rejections: range list alone, authoring


def test_range_list_rejects_short_and_mismatched_payloads():
    with pytest.raises(RangeListFormatError) as ei:
        parse_range_list(b"\0\0")
    assert ei.value.offset == 0
    with pytest.raises(RangeListFormatError, match="2 records"):
        parse_range_list(struct.pack("<I", 2) + b"\0" * 16)


def test_range_list_rejects_nan_reach_naming_record_and_offset():
    payload = bytearray(range_payload(count=5))
    struct.pack_into("<f", payload, 4 + 3 * 16 + 4, math.nan)
    with pytest.raises(RangeListFormatError) as ei:
        parse_range_list(bytes(payload))
    assert ei.value.record == 3 and ei.value.offset == 56
    assert "record 3" in str(ei.value) and "byte 56" in str(ei.value)


@pytest.mark.parametrize("kwargs, word", [
    ({"direction": (40.0, 0.0)}, "direction x"),
    ({"direction": (0.0, math.nan)}, "direction y"),
    ({"direction": (1.0,)}, "direction"),
    ({"reach": -1.0}, "reach"),
    ({"reach": math.inf}, "reach"),
    ({"reach": 1e39}, "reach"),
    ({"far": 0.0002}, "far"),
    ({"far": 40.0}, "far"),
    ({"far": math.nan}, "far"),
    ({"damage": 40000}, "damage"),
    ({"hit": -40000}, "hit"),
    ({"flags": 0x10000}, "flags"),
    ({"damage": 1.5}, "damage"),
])
def test_author_range_rejects(kwargs, word):
    with pytest.raises(RangeAuthoringError, match=word):
        author_range(**kwargs)


def test_range_record_rejects_raw_values_out_of_range():
    with pytest.raises(RangeAuthoringError, match="dir_x"):
        RangeRecord(dir_x=40000)
    with pytest.raises(RangeAuthoringError, match="flags"):
        RangeRecord(flags=-1)
    with pytest.raises(RangeAuthoringError, match="reach"):
        RangeRecord(reach=math.nan)


def test_unknown_anim_id_names_the_id():
    s = AnimSet.build({})
    for bad in (-1, NUM_ANIM_IDS, 10_000):
        with pytest.raises(UnknownAnimId, match=str(bad)):
            s.clip(bad)
    with pytest.raises(UnknownAnimId):
        s.range(722)
    with pytest.raises(UnknownAnimId):
        AnimSet.build({722: make_clip("x")})
    with pytest.raises(UnknownAnimId):
        s.has("walk")
    assert issubclass(UnknownAnimId, ValueError)


def test_anim_set_rejects_non_clips():
    with pytest.raises(AnimSetError):
        AnimSet.build({3: "not a clip"})
    with pytest.raises(AnimSetError):
        AnimSet.build({}).with_clip(3, object())
    with pytest.raises(RangeAuthoringError):
        AnimSet.build({}, {3: (0, 1)})


def test_resource_constructor_rejects_inconsistent_parts():
    res = load_resource(pack(base_chunks())[0])
    with pytest.raises(ResourceFormatError, match="2 clip pairs"):
        dataclasses.replace(res, clips=res.clips[:1])
    slots = np.array(res.anim_table)
    slots[0] = 5
    with pytest.raises(ResourceFormatError, match="slot 5"):
        dataclasses.replace(res, anim_table=slots)
    with pytest.raises(ResourceFormatError, match="unknown type"):
        Resource.build(res.clips, res.range_list, res.anim_table, [Chunk(ChunkType.ANIM_TABLE, b"")])


# ---------------------------------------------------------------- round trip and the LIFO rule


def test_byte_for_byte_round_trip_with_unknown_chunk():
    chunks = base_chunks(3)
    chunks.insert(2, (0x9999, b"\x01\x02\x03"))          # between two clip pairs
    chunks.insert(0, (UNKNOWN_TYPE, b""))                # empty payload, first
    data, _ = pack(chunks)
    res = load_resource(data)
    assert save_resource(res) == data
    assert [c.type for c in res.chunks] == [c[0] for c in chunks]
    assert [c.name for c in res.clips] == ["clip0", "clip1", "clip2"]
    assert res.chunks[3].payload == b"\x01\x02\x03"
    again = load_resource(save_resource(res))
    assert save_resource(again) == data


def test_lifo_slot_rule_slot_0_is_the_last_clip():
    clips = [make_clip(n) for n in ("first", "middle", "last")]
    chunks = []
    for c in clips:
        d, k = encode_clip(c)
        chunks += [(ChunkType.KEYFRAMES, k), (ChunkType.DESCRIPTOR, d)]
    slots = [-1] * NUM_ANIM_IDS
    slots[AnimId.WALK], slots[4], slots[5] = 0, 1, 2
    chunks += [(ChunkType.ANIM_RANGE_LIST, range_payload()), (ChunkType.ANIM_TABLE, table_payload(slots))]
    res = load_resource(pack(chunks)[0])
    assert res.clip_for_id(408).name == "last"
    assert res.clip_for_id(4).name == "middle"
    assert res.clip_for_id(5).name == "first"
    assert res.clip_for_id(0) is None
    s = AnimSet.from_resource(res)
    assert s.clip(408).name == "last" and s.clip(5).name == "first"
    assert s.clip_index(408) == 2 and s.clip_index(5) == 0 and s.clip_index(0) is None
    assert s.ids() == [4, 5, 408]


def test_anim_set_to_resource_round_trip_and_sharing():
    walk, run = make_clip("walk"), make_clip("run", 9, bone=2)
    rec = author_range((0.351, 0.936), 1.081, damage=12, flags=RangeFlags.STUNS)
    s = AnimSet.build({AnimId.WALK: walk, 409: walk, 410: run}, {AnimId.HOLD: rec}, name="rembrandt")
    assert s.clip_index(408) == s.clip_index(409) == 0 and s.clip_index(410) == 1
    res = s.to_resource([Chunk(UNKNOWN_TYPE, b"extra")])
    assert len(res.clips) == 2                                  # the shared clip is written once
    data = save_resource(res)
    back = AnimSet.from_resource(load_resource(data), name="rembrandt")
    assert back.equals(s)
    assert back.clip(408) is back.clip(409)
    assert back.ids() == [408, 409, 410]
    assert back.range(82) == rec and back.range(83) == ZERO_RECORD
    assert [c.name for c in back.clips_by_index] == ["walk", "run"]
    assert save_resource(load_resource(data)) == data


def test_anim_set_is_immutable_and_with_clip_returns_a_new_set():
    walk, punch = make_clip("walk"), make_clip("punch")
    s = AnimSet.build({408: walk})
    t = s.with_clip(11, punch, author_range((1, 0), 0.9, damage=8))
    assert s.clip(11) is None and s.range(11) == ZERO_RECORD
    assert t.clip(11) is punch and t.range(11).damage == 8
    assert t.clip_index(408) == s.clip_index(408) == 0 and t.clip_index(11) == 1
    u = t.with_clip(408, None)
    assert not u.has(408) and 408 not in u and u.clips_by_index[0] is walk   # index kept
    assert AnimSet.from_resource(load_resource(save_resource(u.to_resource()))).equals(u)
    with pytest.raises(AttributeError):
        s.name = "other"
    with pytest.raises(ValueError):
        s.clip_indices[0] = 3
    with pytest.raises(ValueError):
        s.range_list.records["damage"][0] = 1
    assert s.with_range(3, rec := author_range(reach=2.0)).range(3) == rec and s.range(3) == ZERO_RECORD


# ---------------------------------------------------------------- the range record


@pytest.mark.parametrize("raw, expected", [
    ((0, 1000), (0.0, 1.0)),
    ((999, -12), (0.999, -0.012)),       # id 25 SNAP_RIGHT_01
    ((-1000, 0), (-1.0, 0.0)),           # id 27
    ((-39, -999), (-0.039, -0.999)),     # id 29
    ((351, 936), (0.351, 0.936)),        # id 147
])
def test_direction_is_raw_times_0_001(raw, expected):
    rec = RangeRecord(dir_x=raw[0], dir_y=raw[1])
    assert rec.direction == pytest.approx(expected, abs=1e-6)
    assert np.float32(rec.direction[0]) == rec.direction[0]           # float32 values
    rl = RangeList.from_records({147: rec})
    assert tuple(rl.direction[147]) == rec.direction
    assert struct.unpack_from("<hh", rl.to_bytes(), 4 + 147 * 16) == raw


def test_hold_82_direction_times_reach_is_the_partner_place():
    rec = author_range((0.351, 0.936), 1.081)
    assert (rec.dir_x, rec.dir_y) == (351, 936)
    assert rec.reach == float(np.float32(1.081))
    place = (rec.direction[0] * rec.reach, rec.direction[1] * rec.reach)
    assert place == pytest.approx((0.380, 1.012), abs=0.002)          # event 8 of the hold 82


def test_far_range_default_is_reach_times_1_25():
    rec = RangeRecord(reach=2.0, far_raw=0)
    assert rec.far == 2.5 and rec.far_raw == 0
    assert RangeRecord(reach=2.0, far_raw=1500).far == pytest.approx(1.5, abs=1e-6)
    odd = author_range(reach=1.081)                    # far=None -> raw 0
    assert odd.far_raw == 0 and odd.far == pytest.approx(1.081 * 1.25, rel=1e-6)
    rl = RangeList.from_records({70: rec, 3: RangeRecord(reach=2.0, far_raw=1500)})
    assert rl.far[70] == np.float32(2.5) and rl.far[3] == np.float32(rl[3].far)
    assert rl.far[0] == 0.0                            # no range data
    assert author_range(reach=1.0, far=1.5).far_raw == 1500


def test_fields_at_their_byte_offsets():
    rec = author_range((0.5, -0.25), 1.5, far=2.0, damage=0x1234, hit=0x35,
                       flags=RangeFlags.STUNS | RangeFlags.RATE_2000 | RangeFlags.FLAG_100)
    raw = rec.to_bytes()
    assert len(raw) == 16
    assert struct.unpack_from("<h", raw, 0x00)[0] == 500
    assert struct.unpack_from("<h", raw, 0x02)[0] == -250
    assert struct.unpack_from("<f", raw, 0x04)[0] == 1.5
    assert struct.unpack_from("<h", raw, 0x08)[0] == 2000
    assert struct.unpack_from("<h", raw, 0x0A)[0] == 0x1234
    assert struct.unpack_from("<h", raw, 0x0C)[0] == 0x35
    assert struct.unpack_from("<H", raw, 0x0E)[0] == 0x2500
    payload = RangeList.from_records({700: rec}).to_bytes()
    assert struct.unpack_from("<I", payload, 0)[0] == NUM_ANIM_IDS
    assert payload[4 + 700 * 16: 4 + 701 * 16] == raw
    assert RangeRecord.from_bytes(raw) == rec
    assert FIELD_OFFSETS == {"dir_x": 0, "dir_y": 2, "reach": 4, "far": 8, "damage": 10, "hit": 12, "flags": 14}


def test_hit_code_default_and_bits():
    assert author_range().hit == DEFAULT_HIT == 10
    assert struct.unpack_from("<h", author_range().to_bytes(), 0x0C)[0] == 10
    rec = RangeRecord(hit=0b10_01_11)
    assert (rec.hit_direction, rec.hit_height, rec.hit_strength) == (3, 1, 2)
    assert ZERO_RECORD.hit == 0 and not ZERO_RECORD.has_range


def test_range_flags_and_rate_class():
    assert (RangeFlags.FLAG_100, RangeFlags.STUNS, RangeFlags.RATE_800, RangeFlags.RATE_1000,
            RangeFlags.RATE_2000) == (0x100, 0x400, 0x800, 0x1000, 0x2000)
    assert RangeRecord(flags=0x400).stuns and not RangeRecord(flags=0x800).stuns
    assert rate_class(0) == RateClass.DEFAULT and rate_class(0x400 | 0x100) == RateClass.DEFAULT
    assert [rate_class(f) for f in (0x800, 0x1000, 0x2000)] == [RateClass.F800, RateClass.F1000, RateClass.F2000]
    assert rate_class(0x800 | 0x1000 | 0x2000) == RateClass.F800      # tested in the listed order
    assert rate_class(0x1000 | 0x2000) == RateClass.F1000
    assert RangeRecord(flags=RangeFlags.RATE_2000 | RangeFlags.STUNS).rate_class == RateClass.F2000
    rl = RangeList.from_records({i: RangeRecord(flags=f) for i, f in enumerate((0, 0x800, 0x1000, 0x2000, 0x1800))})
    assert list(rl.rate_classes[:5]) == [rate_class(f) for f in (0, 0x800, 0x1000, 0x2000, 0x1800)]


def test_range_list_keeps_raw_values_negative_zero_and_denormals():
    payload = bytearray(range_payload(count=3))
    struct.pack_into("<hhIhhhH", payload, 4, -1, 32767, 0x80000000, -5, -1, -32768, 0xFFFF)
    struct.pack_into("<I", payload, 4 + 16 + 4, 0x00000001)
    rl = parse_range_list(bytes(payload))
    assert rl.to_bytes() == bytes(payload)
    assert RangeList.from_records(list(rl), 3).to_bytes() == bytes(payload)
    assert math.copysign(1.0, rl[0].reach) == -1.0 and rl[0].flags == 0xFFFF


def test_docs_record_table_matches_the_dtype():
    text = DOCS.read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*`\+0x([0-9a-f]{2})`\s*\|\s*`(\w+)`\s*\|\s*(\w+)", text, re.M)
    assert rows, "the record table is missing from docs/formats-resource.md"
    kinds = {"<i2": "s16", "<u2": "u16", "<f4": "f32"}
    assert {name: (int(off, 16), t) for off, name, t in rows} == {
        name: (FIELD_OFFSETS[name], kinds[RANGE_DTYPE.fields[name][0].str]) for name in RANGE_DTYPE.names}
    for ctype in ChunkType:
        assert f"0x{int(ctype):02x}" in text.lower()


# ---------------------------------------------------------------- properties

_quat = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4).map(
    lambda q: q if sum(v * v for v in q) > 0.01 else (0.0, 0.0, 0.0, 1.0))
_pos = st.tuples(st.floats(-20, 20), st.floats(-20, 20), st.floats(-10, 10))


@st.composite
def clips(draw) -> Clip:
    frames = draw(st.integers(1, 40))
    frame_lists = st.lists(st.integers(0, frames - 1), min_size=1, max_size=3, unique=True).map(sorted)
    bones = draw(st.lists(st.integers(0, 33), max_size=4, unique=True))
    rotations = {b: [(f, draw(_quat)) for f in draw(frame_lists)] for b in bones}
    velocity = draw(st.none() | frame_lists.map(lambda fs: [(f, draw(_pos)) for f in fs]))
    translation = draw(st.none() | frame_lists.map(lambda fs: [(f, draw(_pos)) for f in fs]))
    events = [make_event(draw(st.integers(0, frames)), draw(st.integers(0, 0x50).map(lambda t: 0x3B if t == 0x3A else t)),
                         (draw(st.integers(0, 0xFFFF)), draw(st.integers(0, 0xFFFF))))
              for _ in range(draw(st.integers(0, 2)))]
    name = draw(st.text("abcdefghij_0123456789", max_size=30))
    clip = author_clip(name, frames, velocity=velocity, translation=translation, rotations=rotations,
                       events=events, flags=draw(st.integers(0, 0xFFFFFFFF)))
    # Raw fields only a byte-exact re-encode keeps.
    return dataclasses.replace(clip, refcount=draw(st.integers(0, 255)),
                               keyframe_pointer=draw(st.integers(0, 0xFFFFFFFF)),
                               trailing=draw(st.binary(min_size=8, max_size=8)))


def random_range_payload(rng: np.random.Generator) -> bytes:
    raw = rng.integers(0, 256, size=NUM_ANIM_IDS * 16, dtype=np.uint8)
    arr = np.frombuffer(raw.tobytes(), dtype=RANGE_DTYPE).copy()
    bits = arr["reach"].view("<u4")
    inf_nan = (bits & 0x7F800000) == 0x7F800000
    bits[inf_nan] ^= 0x40000000                        # exponent 0xff -> 0xbf: finite
    zero = rng.random(NUM_ANIM_IDS) < 0.3
    bits[zero] = 0                                     # ids without range data
    return struct.pack("<I", NUM_ANIM_IDS) + arr.tobytes()


_unknown_type = st.sampled_from([0x01, 0x03, 0x44, 0x46, 0x1000, 0x1002, 0xFFFFFFFF]) | st.integers(0x1002, 0xFFFFFFFF)
_unknown_chunk = st.tuples(_unknown_type, st.binary(max_size=24))


@st.composite
def resource_files(draw) -> bytes:
    """A valid file: clip pairs, range list and table in a random order, unknown chunks anywhere between."""
    clip_list = draw(st.lists(clips(), max_size=4))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    slots = rng.integers(-1, len(clip_list), size=NUM_ANIM_IDS) if clip_list else np.full(NUM_ANIM_IDS, -1)
    units = [[(ChunkType.KEYFRAMES, k), (ChunkType.DESCRIPTOR, d)] for d, k in map(encode_clip, clip_list)]
    units += [[(ChunkType.ANIM_RANGE_LIST, random_range_payload(rng))], [(ChunkType.ANIM_TABLE, table_payload(slots))]]
    order = draw(st.permutations(range(len(units))))
    chunks = []
    for u in order:
        chunks += [c for c in draw(st.lists(_unknown_chunk, max_size=2))]
        chunks += units[u]
    chunks += draw(st.lists(_unknown_chunk, max_size=2))
    return pack(chunks)[0]


@ROUND_TRIP
@given(resource_files())
def test_random_valid_resources_round_trip_byte_for_byte(data):
    res = load_resource(data)
    assert save_resource(res) == data
    s = AnimSet.from_resource(res)
    for anim_id in s.ids():
        assert encode_clip(s.clip(anim_id)) == encode_clip(res.clip_for_id(anim_id))
    assert AnimSet.from_resource(load_resource(save_resource(s.to_resource()))).equals(s)


_BASE = pack(base_chunks(3))[0]
_BASE_CLIP_END = pack(base_chunks(3)[:6])[0].__len__()     # the clip pairs' bytes


@st.composite
def damaged_files(draw) -> bytes:
    data = draw(st.sampled_from([_BASE]) | resource_files())
    if draw(st.booleans()):
        return data[:draw(st.integers(0, len(data)))]
    buf = bytearray(data)
    hot = min(len(buf), _BASE_CLIP_END)                   # favour headers and clips over the tables
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, hot - 1) | st.integers(0, len(buf) - 1) if hot else st.integers(0, len(buf) - 1))
        buf[where] ^= draw(st.integers(1, 255))
    return bytes(buf)


@FUZZ
@given(damaged_files())
def test_damaged_resources_raise_only_resource_format_error(data):
    try:
        res = load_resource(data)
    except ResourceFormatError as e:
        assert f"at byte {e.offset} " in str(e) and 0 <= e.offset <= len(data)
        return
    assert save_resource(res) == data                     # what loads, saves back to the same bytes


def test_a_range_lists_records_are_made_once_and_a_new_list_has_its_own():
    """RangeList[i] is made at the first read and the same (frozen) record after, by an
    int or an IntEnum id alike; with_record's new list reads its own record, the old list
    keeps its; ids outside the list are refused as before."""
    from scuffle.anim.data.rangelist import RangeFlags, RangeList, RangeRecord, UnknownAnimId
    from scuffle.game.fighters.moves import Move

    rl = RangeList.from_records({5: RangeRecord(1, 2, 0.5, 0, 7, 3, RangeFlags(0)),
                                 int(Move.JAB): RangeRecord(0, 1000, 1.0, 0, 10, 1, RangeFlags(0))})
    first = rl[5]
    assert first == RangeRecord(1, 2, 0.5, 0, 7, 3, RangeFlags(0)) and rl[5] is first
    assert rl[Move.JAB] is rl[int(Move.JAB)] and rl[Move.JAB].damage == 10
    other = rl.with_record(5, RangeRecord(0, 0, 2.0, 0, 1, 0, RangeFlags(0)))
    assert other[5].reach == 2.0 and other[5].damage == 1
    assert rl[5] is first and rl[5].damage == 7
    for bad in (-1, len(rl), True, 2.0):
        with pytest.raises(UnknownAnimId):
            rl[bad]
