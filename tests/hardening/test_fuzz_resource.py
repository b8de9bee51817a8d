"""Fuzzed resource files: only ResourceFormatError comes out, naming the chunk and the
absolute byte offset, never a hang; a file that loads saves back to the same bytes, its
range records are finite, and every clip samples finite at every frame and plays.

A valid file (anim.data.animset.AnimSet.to_resource: clip pairs,
the Anim Range List, the id -> slot table, an unknown chunk) is damaged by 1-3 of:
truncation, byte flips, chunk headers (another type, a size off by a little or a lot),
oversized counts (the range list's, the table's), NaN and Inf in a clip's duration or
displacement and in a record's reach, mask bits above 33 in a descriptor, slots out of
range, a chunk dropped, doubled or moved. The clips themselves come from
fuzz_chunks.valid_clip (bone 0 keys past a unit norm included). Layout:
docs/formats-resource.md. tests/anim/test_resource.py holds the one-rule rejections and
the round trips of random valid files; these add the structural mutations, the range
records, the sampling and the play.
"""
from __future__ import annotations

import math
import struct

import pytest
from hypothesis import event
from hypothesis import strategies as st

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import MAX_FRAMES, parse_clip
from scuffle.anim.playback.player import Player
from scuffle.anim.data.rangelist import NUM_ANIM_IDS, RECORD_SIZE, author_range
from scuffle.anim.data.resource import (CHUNK_HEADER_SIZE, Chunk, ChunkType, ResourceFormatError, load_resource,
                           save_resource)
from scuffle.anim.engine.stack import CharacterInstance

from .fuzz_chunks import NASTY_FLOATS, OFF, valid_clip
from .support import fuzz_pair, no_hang
from .test_fuzz_clip import sample_every_frame

# numpy's overflow and invalid-value warnings mean a NaN or Inf was computed: an error here.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")
PLAY_UPDATES = 20


@st.composite
def valid_resource(draw) -> bytes:
    """A valid file: 0-3 clips under random ids, range records with every rate flag, an unknown chunk."""
    n = draw(st.integers(0, 3))
    clips = [parse_clip(*draw(valid_clip())) for _ in range(n)]
    start, step = draw(st.integers(0, NUM_ANIM_IDS - 22)), draw(st.integers(1, 7))
    ids = [start + step * i for i in range(n)]
    by_id = dict(zip(ids, clips))
    for extra in draw(st.lists(st.integers(0, NUM_ANIM_IDS - 1), max_size=2)):
        if clips:                                             # an id sharing another's clip
            by_id.setdefault(extra, clips[0])
    ranges = {}
    for anim_id in draw(st.lists(st.integers(0, NUM_ANIM_IDS - 1), max_size=4)) + list(by_id):
        ranges[anim_id] = author_range(
            direction=(draw(st.floats(-1, 1)), draw(st.floats(-1, 1))), reach=draw(st.floats(0, 30)),
            damage=draw(st.integers(0, 100)), hit=draw(st.integers(0, 63)),
            flags=draw(st.sampled_from([0, 0x100, 0x400, 0x800, 0x1000, 0x2000, 0x3800])))
    s = AnimSet.build(by_id, ranges, name="fuzz")
    extras = [Chunk(draw(st.sampled_from([0x01, 0x44, 0x1002, 0xFFFF])), draw(st.binary(max_size=16)))]
    return save_resource(s.to_resource(extras if draw(st.booleans()) else ()))


def chunk_layout(data: bytes) -> list[tuple[int, int, int]]:
    """(type, size, header offset) of each whole chunk, up to the first that does not fit."""
    out, pos = [], 0
    while pos + CHUNK_HEADER_SIZE <= len(data):
        ctype, size = struct.unpack_from("<II", data, pos)
        if pos + CHUNK_HEADER_SIZE + size > len(data):
            break
        out.append((ctype, size, pos))
        pos += CHUNK_HEADER_SIZE + size
    return out


def _put(buf: bytearray, fmt: str, at: int, *values) -> None:
    """struct.pack_into where it fits (an earlier mutation may have cut the file)."""
    if 0 <= at and at + struct.calcsize(fmt) <= len(buf):
        struct.pack_into(fmt, buf, at, *values)


@st.composite
def damaged_resource(draw) -> bytes:
    data = draw(valid_resource())
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        layout = chunk_layout(bytes(buf))
        kind = draw(st.sampled_from(["flip", "header_size", "nonfinite", "reach", "count", "header_type",
                                     "mask", "slot", "drop", "double", "move", "truncate"]))
        event(f"mutation: {kind}")
        by_type = {}
        for ctype, size, at in layout:
            by_type.setdefault(ctype, []).append((size, at))
        if kind == "truncate":
            del buf[draw(st.integers(0, len(buf))):]
        elif kind == "flip" and buf:
            for _ in range(draw(st.integers(1, 4))):
                buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
        elif kind == "header_type" and layout:
            _, _, at = draw(st.sampled_from(layout))
            _put(buf, "<I", at, draw(st.sampled_from([0x00, 0x02, 0x45, 0x1001, 0x03, 0xFFFFFFFF])))
        elif kind == "header_size" and layout:
            ctype, size, at = draw(st.sampled_from(layout))
            left = len(buf) - at - CHUNK_HEADER_SIZE
            v = draw(st.sampled_from([0, max(size - 1, 0), size + 1, max(size - 8, 0), size + 8, left, left + 1,
                                      0xFFFFFFFF]))
            _put(buf, "<I", at + 4, v)
        elif kind == "count":
            for ctype in (ChunkType.ANIM_RANGE_LIST, ChunkType.ANIM_TABLE):
                for size, at in by_type.get(ctype, []):
                    if size >= 4 and draw(st.booleans()):
                        cur = struct.unpack_from("<I", buf, at + CHUNK_HEADER_SIZE)[0]
                        v = draw(st.sampled_from([0, cur + 1, cur - 1, 0xFFFFFFFF, 0x10000000]))
                        _put(buf, "<I", at + CHUNK_HEADER_SIZE, v % 2 ** 32)
        elif kind in ("nonfinite", "mask") and by_type.get(ChunkType.DESCRIPTOR):
            size, at = draw(st.sampled_from(by_type[ChunkType.DESCRIPTOR]))
            p = at + CHUNK_HEADER_SIZE
            if size >= 0x25:
                if kind == "nonfinite":
                    name = draw(st.sampled_from(["duration", "dx", "dy"]))
                    _put(buf, "<f", p + OFF[name], draw(st.sampled_from(NASTY_FLOATS)))
                else:
                    bit = draw(st.integers(34, 39))
                    if p + OFF["mask"] + bit // 8 < len(buf):
                        buf[p + OFF["mask"] + bit // 8] |= 1 << (bit % 8)
        elif kind == "reach" and by_type.get(ChunkType.ANIM_RANGE_LIST):
            size, at = by_type[ChunkType.ANIM_RANGE_LIST][0]
            n = (size - 4) // RECORD_SIZE
            if n > 0:
                rec = at + CHUNK_HEADER_SIZE + 4 + RECORD_SIZE * draw(st.integers(0, n - 1))
                _put(buf, "<f", rec + 4, draw(st.sampled_from(NASTY_FLOATS)))
        elif kind == "slot" and by_type.get(ChunkType.ANIM_TABLE):
            size, at = by_type[ChunkType.ANIM_TABLE][0]
            n = (size - 4) // 4
            if n > 0:
                where = at + CHUNK_HEADER_SIZE + 4 + 4 * draw(st.integers(0, n - 1))
                _put(buf, "<i", where, draw(st.sampled_from([-2, -1, 0, 3, 4, 2 ** 31 - 1, -2 ** 31])))
        elif kind in ("drop", "double", "move") and layout:
            ctype, size, at = draw(st.sampled_from(layout))
            piece = bytes(buf[at:at + CHUNK_HEADER_SIZE + size])
            if kind != "double":
                del buf[at:at + CHUNK_HEADER_SIZE + size]
            if kind != "drop":
                cut = [a for _, _, a in chunk_layout(bytes(buf))] + [len(buf)]
                where = draw(st.sampled_from(cut))
                buf[where:where] = piece
    return bytes(buf)


def _finite_records(s: AnimSet) -> None:
    """Every id's record finite, read through the API once per distinct raw record (a
    record is a function of its 16 bytes; most ids of a file share the zero record)."""
    raw = s.range_list.records
    first: dict[bytes, int] = {}
    for anim_id in range(s.num_ids):
        first.setdefault(raw[anim_id].tobytes(), anim_id)
    for anim_id in first.values():
        r = s.range(anim_id)
        assert all(math.isfinite(v) for v in (*r.direction, r.reach, r.far)), (anim_id, r)


def _play_every_clip(s: AnimSet) -> None:
    """Every id with a clip played as a loop on its own human, the first one handing over
    into the next with a blend: PLAY_UPDATES updates, every pose finite, no leak."""
    ids = s.ids()
    if not ids:
        return
    p = Player()
    hs = []
    for anim_id in ids[:4]:
        h = CharacterInstance(s, f"h{anim_id}")
        p.change(h, p.loop(h, anim_id), 0.1)
        hs.append(h)
    g = CharacterInstance(s, "chain")
    p.change(g, p.chain(g, [ids[0], ids[-1]], blend=0.2, held=0x1))
    hs.append(g)
    for _ in range(PLAY_UPDATES):
        assert p.update(hs).is_finite()
    assert p.pool.in_use == p.tasks_out(hs)


def _check(data: bytes) -> None:
    with no_hang(30):
        try:
            res = load_resource(data)
        except ResourceFormatError as e:
            assert 0 <= e.offset <= len(data), (e, len(data))
            assert e.chunk_index >= 0 and (e.chunk_type is None or 0 <= e.chunk_type < 2 ** 32)
            text = str(e)
            assert text.startswith(f"chunk {e.chunk_index} (") and f"at byte {e.offset} (0x{e.offset:x}): " in text
            assert "\n" not in text and e.problem
            event(f"rejected: {e.problem.split(':')[0][:40]}")
            return
        event("loaded")
        assert save_resource(res) == data
        s = AnimSet.from_resource(res)
        _finite_records(s)
        for clip in s.clips_by_index:
            assert clip.frames <= MAX_FRAMES
            sample_every_frame(clip)
        _play_every_clip(s)


def _valid_property(data):
    res = load_resource(data)                 # a valid file always loads
    assert save_resource(res) == data
    _check(data)


test_valid_resources_load_sample_and_play, test_valid_resources_load_sample_and_play_fuzz = \
    fuzz_pair(valid_resource())(_valid_property)
test_damaged_resources_raise_only_resource_format_error, test_damaged_resources_raise_only_resource_format_error_fuzz = \
    fuzz_pair(damaged_resource())(_check)


def test_every_truncation_of_a_file_is_a_resource_format_error_at_the_cut():
    """Cut a three-clip file at every byte: each prefix is refused (no prefix is a valid
    file but the empty one, which has no range list), never half-loaded."""
    from scuffle.anim.data.clip import author_clip

    clips = {i: author_clip(f"c{i}", 5 + i, rotations={0: [(0, (0, 0, 0.1, 0.995))]}) for i in (3, 4, 5)}
    data = save_resource(AnimSet.build(clips, {3: author_range(flags=0x800)}).to_resource())
    boundaries = {at for _, _, at in chunk_layout(data)}
    for n in range(len(data)):
        try:
            load_resource(data[:n])
        except ResourceFormatError as e:
            assert 0 <= e.offset <= n
            if n not in boundaries:                        # inside a chunk: the cut chunk is named
                assert "cut short" in e.problem or "overruns the file" in e.problem, (n, e)
        else:
            raise AssertionError(f"a {n}-byte prefix of a {len(data)}-byte file loaded")
    assert load_resource(data).clips
