"""Our character data resource file: clip pairs, the Anim Range List and the id -> slot table.

The file is a sequence of chunks, ``u32 type, u32 size, payload (size bytes)``, and
nothing else (no header, no padding). It holds pairs of chunk 0x00 (keyframes) then
0x02 (its descriptor), as on the disc; one 0x45 Anim Range List; one 0x1001
"CharacterData anim table" of our own (u32 count, then count x s32 slot, -1 for no
clip). Any other chunk is kept, in order, so ``save_resource(load_resource(b)) == b``
for every file ``load_resource`` accepts.

Slots count the clips from the last one loaded (the chunk system pops them last-in
first-out): slot 0 is the last clip pair of the file, slot n the (n+1)-th from the end.

Spec: "Where clips are found", "The Anim Range List (chunk 0x45)". Layout:
docs/formats-resource.md.
Original: 0x00175080 CharacterInstance_GetAnim (id -> descriptor through the slots).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Iterable, Sequence, cast

import numpy as np

from scuffle.anim.data.clip import Clip, ClipFormatError, encode_clip, parse_clip
from scuffle.anim.data.rangelist import (
    NUM_ANIM_IDS, RangeList, RangeListFormatError, UnknownAnimId, check_anim_id, parse_range_list,
)

__all__ = [
    "NUM_ANIM_IDS", "NO_CLIP", "CHUNK_HEADER_SIZE", "MAX_CHUNKS", "MAX_RESOURCE_BYTES", "ChunkType", "Chunk", "Resource",
    "ResourceFormatError", "load_resource", "save_resource", "slot_to_clip_index",
    "clip_index_to_slot", "parse_anim_table", "encode_anim_table", "AnimTableFormatError", "UnknownAnimId",
]

CHUNK_HEADER_SIZE = 8
TYPE_FIELD_SIZE = 4           # the header's u32 type, then at +4 ...
SIZE_FIELD_OFFSET = 4         # ... the u32 payload size
NO_CLIP = -1                  # a table slot for an id without a clip
# The most chunks a file may hold: two per clip pair, the range list, the table and extra
# chunks. A file of many empty chunks is refused on the first chunk past this, so reading
# one stays linear in the file and bounded in memory (docs/formats-resource.md).
MAX_CHUNKS = 1 << 16
# The largest resource file the CLI and the scenarios read (bytes); see read_limited.
MAX_RESOURCE_BYTES = 256 << 20
TABLE_COUNT_SIZE = 4
SLOT_SIZE = 4

_HEADER = struct.Struct("<II")
_U32 = struct.Struct("<I")
assert _HEADER.size == CHUNK_HEADER_SIZE

# ClipFormatError.chunk names the clip chunk at fault by these words.
_CLIP_CHUNK_DESCRIPTOR = "descriptor"
_CLIP_CHUNK_KEYFRAMES = "keyframes"


class ChunkType(IntEnum):
    """Chunk types the resource reader understands; any other type is kept as it is."""

    KEYFRAMES = 0x00          # a clip's keyframes (Data: Keyframes)
    DESCRIPTOR = 0x02         # its 80-byte descriptor (Data: Descriptor)
    ANIM_RANGE_LIST = 0x45    # The Anim Range List
    ANIM_TABLE = 0x1001       # ours: the CharacterData anim table, id -> slot


_KNOWN_TYPES = frozenset(int(t) for t in ChunkType)


def _type_name(ctype: int | None) -> str:
    """A chunk type for an error: a type the reader knows by number and name; any other
    word as "an unknown type", never its value (an error quotes no bytes of a file that
    may be anything: /etc/passwd's first chunk "type" is the text ``root``)."""
    if ctype is None:
        return "type unknown"
    try:
        return f"type 0x{ctype:02x} {ChunkType(ctype).name}"
    except ValueError:
        return "an unknown type"


class ResourceFormatError(ValueError):
    """A resource file that breaks the format.

    ``chunk_index`` and ``chunk_type`` name the chunk (the index a missing chunk would
    have, and ``chunk_type`` None when its header is cut short), ``offset`` is the
    absolute byte offset in the file, ``problem`` says what. A clip or range-list error
    is wrapped, with the original as ``__cause__``.
    """

    def __init__(self, chunk_index: int, chunk_type: int | None, offset: int, problem: str):
        self.chunk_index, self.chunk_type, self.offset, self.problem = chunk_index, chunk_type, offset, problem
        where = f"at byte {offset} (0x{offset:x})" if offset >= 0 else "(built, no file offset)"
        super().__init__(f"chunk {chunk_index} ({_type_name(chunk_type)}) {where}: {problem}")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as in the file: its type, payload and the file offset of its header (-1 if built)."""

    type: int
    payload: bytes
    offset: int = -1

    @property
    def payload_offset(self) -> int:
        """The file offset of the payload (-1 for a built chunk)."""
        return self.offset + CHUNK_HEADER_SIZE if self.offset >= 0 else -1

    def to_bytes(self) -> bytes:
        """Header and payload."""
        return _HEADER.pack(self.type, len(self.payload)) + self.payload


def slot_to_clip_index(slot: int, num_clips: int) -> int:
    """The file-order index of the clip a table slot names: num_clips - 1 - slot (LIFO).

    In: a slot 0..num_clips-1 and the number of clips. Out: the index in file order.
    Rejected (ValueError): a slot outside 0..num_clips-1.
    Original: 0x00175080 CharacterInstance_GetAnim (slots filled last-in first-out).
    """
    if not 0 <= slot < num_clips:
        raise ValueError(f"slot {slot} outside 0..{num_clips - 1}")
    return num_clips - 1 - slot


def clip_index_to_slot(index: int, num_clips: int) -> int:
    """The table slot of the clip at file-order ``index``: num_clips - 1 - index (LIFO).

    Rejected (ValueError): an index outside 0..num_clips-1.
    """
    if not 0 <= index < num_clips:
        raise ValueError(f"clip index {index} outside 0..{num_clips - 1}")
    return num_clips - 1 - index


def parse_anim_table(payload: bytes) -> np.ndarray:
    """Parse a chunk 0x1001 payload: u32 count, then count x s32 slots.

    Out: a read-only int32 array. Rejected with AnimTableFormatError (``offset``
    inside the payload): fewer than 4 bytes, count x 4 not the size after the count.
    Slot values are checked by load_resource, which knows the clip count.
    """
    if len(payload) < TABLE_COUNT_SIZE:
        raise AnimTableFormatError(0, f"payload of {len(payload)} bytes has no count word")
    (count,) = _U32.unpack_from(payload, 0)
    body = len(payload) - TABLE_COUNT_SIZE
    if count * SLOT_SIZE != body:
        raise AnimTableFormatError(0, f"{count} slots x {SLOT_SIZE} bytes = {count * SLOT_SIZE}, "
                             f"but {body} bytes follow the count")
    slots = np.frombuffer(payload, dtype="<i4", count=count, offset=TABLE_COUNT_SIZE).astype(np.int32)
    slots.flags.writeable = False
    return slots


def encode_anim_table(slots: Sequence[int] | np.ndarray) -> bytes:
    """Write slots as a chunk 0x1001 payload; the inverse of parse_anim_table."""
    arr = np.asarray(slots, dtype="<i4")
    return _U32.pack(len(arr)) + arr.tobytes()


class AnimTableFormatError(ValueError):
    """A chunk 0x1001 payload that breaks the format; ``offset`` is inside the payload."""

    def __init__(self, offset: int, problem: str):
        self.offset, self.problem = offset, problem
        super().__init__(problem)


@dataclass(frozen=True, eq=False)
class Resource:
    """A loaded (or built) resource: clips in file order, the range list, the id -> slot table.

    ``clips`` is a tuple of Clip in file order; ``anim_table`` a read-only int32 array
    of slots (-1 none; slot 0 the last clip); ``chunks`` the ordered chunks (unknown
    types kept as they were). ``save_resource`` writes the chunks in that order, the
    known ones encoded from ``clips``, ``range_list`` and ``anim_table``. Rejected on
    construction with ResourceFormatError: chunks that do not hold exactly
    ``len(clips)`` keyframes/descriptor pairs and one range list and one table chunk,
    a table whose length is not the range list's, or a slot outside -1..len(clips)-1.
    """

    clips: tuple[Clip, ...]
    range_list: RangeList
    anim_table: np.ndarray
    chunks: tuple[Chunk, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "clips", tuple(self.clips))
        object.__setattr__(self, "chunks", tuple(self.chunks))
        table = np.array(self.anim_table, dtype=np.int32)
        table.flags.writeable = False
        object.__setattr__(self, "anim_table", table)
        _check_layout(self)

    @classmethod
    def build(cls, clips: Sequence[Clip], range_list: RangeList, anim_table: Sequence[int] | np.ndarray,
              extra_chunks: Iterable[Chunk] = ()) -> "Resource":
        """A resource laid out as on the disc: the clip pairs, the range list, the table, then extras.

        In: clips in file order (slot 0 is the last), the range list, the slots (one
        per id, -1 none), any chunks of other types to keep after the table. Rejected
        with ResourceFormatError: a clip that does not encode, an extra chunk of a known
        type, and whatever the constructor rejects.
        """
        clips = tuple(clips)
        chunks: list[Chunk] = []
        for i, clip in enumerate(clips):
            try:
                desc, keys = encode_clip(clip)
            except ClipFormatError as e:
                raise ResourceFormatError(2 * i, ChunkType.KEYFRAMES, -1, f"clip {i} does not encode: {e}") from e
            chunks.append(Chunk(ChunkType.KEYFRAMES, keys))
            chunks.append(Chunk(ChunkType.DESCRIPTOR, desc))
        chunks.append(Chunk(ChunkType.ANIM_RANGE_LIST, range_list.to_bytes()))
        chunks.append(Chunk(ChunkType.ANIM_TABLE, encode_anim_table(anim_table)))
        for extra in extra_chunks:
            if extra.type in _KNOWN_TYPES:
                raise ResourceFormatError(len(chunks), extra.type, -1, "an extra chunk must be of an unknown type")
            chunks.append(Chunk(int(extra.type), bytes(extra.payload)))
        # __post_init__ makes the table the read-only int32 array the field holds.
        return cls(clips, range_list, cast(np.ndarray, anim_table), tuple(chunks))

    @property
    def num_ids(self) -> int:
        """The number of anim ids (table entries; 722 in a full resource)."""
        return len(self.anim_table)

    def clip_for_slot(self, slot: int) -> Clip:
        """The clip a slot names (slot 0: the last clip). ValueError outside 0..len(clips)-1."""
        return self.clips[slot_to_clip_index(slot, len(self.clips))]

    def clip_for_id(self, anim_id: int) -> Clip | None:
        """The clip an anim id gets, or None when its slot is -1.

        Rejected: UnknownAnimId outside 0..num_ids-1.
        Original: 0x00175080 CharacterInstance_GetAnim.
        """
        slot = int(self.anim_table[check_anim_id(anim_id, self.num_ids)])
        return None if slot == NO_CLIP else self.clip_for_slot(slot)


def _check_layout(res: Resource) -> None:
    """The constructor's consistency rules (chunk structure against the decoded parts)."""
    pairs = 0
    kinds: dict[int, int] = {}
    for i, ch in enumerate(res.chunks):
        if ch.type == ChunkType.DESCRIPTOR:
            if i == 0 or res.chunks[i - 1].type != ChunkType.KEYFRAMES:
                raise ResourceFormatError(i, ch.type, ch.offset, "descriptor without the keyframes chunk before it")
            pairs += 1
        elif ch.type == ChunkType.KEYFRAMES:
            if i + 1 >= len(res.chunks) or res.chunks[i + 1].type != ChunkType.DESCRIPTOR:
                raise ResourceFormatError(i, ch.type, ch.offset, "keyframes without a descriptor chunk after it")
        elif ch.type in (ChunkType.ANIM_RANGE_LIST, ChunkType.ANIM_TABLE):
            if ch.type in kinds:
                raise ResourceFormatError(i, ch.type, ch.offset,
                                          f"a second {ChunkType(ch.type).name} chunk (the first is chunk {kinds[ch.type]})")
            kinds[ch.type] = i
    end = len(res.chunks)
    if pairs != len(res.clips):
        raise ResourceFormatError(end, ChunkType.KEYFRAMES, -1,
                                  f"the chunks hold {pairs} clip pairs but the resource has {len(res.clips)} clips")
    for ctype in (ChunkType.ANIM_RANGE_LIST, ChunkType.ANIM_TABLE):
        if ctype not in kinds:
            raise ResourceFormatError(end, ctype, -1, f"no {ctype.name} chunk")
    if not isinstance(res.range_list, RangeList):
        raise ResourceFormatError(kinds[ChunkType.ANIM_RANGE_LIST], ChunkType.ANIM_RANGE_LIST, -1,
                                  f"range_list is a {type(res.range_list).__name__}, not a RangeList")
    table_i = kinds[ChunkType.ANIM_TABLE]
    table_off = res.chunks[table_i].payload_offset
    if res.anim_table.ndim != 1 or len(res.anim_table) != len(res.range_list):
        raise ResourceFormatError(table_i, ChunkType.ANIM_TABLE, table_off,
                                  f"table count {res.anim_table.size} is not the range list's count {len(res.range_list)}")
    _check_slots(res.anim_table, len(res.clips), table_i, table_off)


def _check_slots(slots: np.ndarray, num_clips: int, chunk_index: int, payload_offset: int) -> None:
    bad = np.flatnonzero((slots < NO_CLIP) | (slots >= num_clips))
    if len(bad):
        i = int(bad[0])
        off = payload_offset + TABLE_COUNT_SIZE + SLOT_SIZE * i if payload_offset >= 0 else -1
        raise ResourceFormatError(chunk_index, ChunkType.ANIM_TABLE, off,
                                  f"id {i}: slot {int(slots[i])} outside -1..{num_clips - 1} "
                                  f"(the resource has {num_clips} clips)")


def _split_chunks(data: bytes) -> list[Chunk]:
    chunks: list[Chunk] = []
    pos, n = 0, len(data)
    while pos < n:
        if len(chunks) >= MAX_CHUNKS:
            raise ResourceFormatError(len(chunks), None, pos,
                                      f"more than {MAX_CHUNKS} chunks; a resource holds at most {MAX_CHUNKS}")
        left = n - pos
        if left < CHUNK_HEADER_SIZE:
            ctype = _U32.unpack_from(data, pos)[0] if left >= TYPE_FIELD_SIZE else None
            raise ResourceFormatError(len(chunks), ctype, pos,
                                      f"chunk header cut short: {left} bytes left, a header is {CHUNK_HEADER_SIZE}")
        ctype, size = _HEADER.unpack_from(data, pos)
        if size > left - CHUNK_HEADER_SIZE:
            raise ResourceFormatError(len(chunks), ctype, pos + SIZE_FIELD_OFFSET,
                                      f"its payload size overruns the file ({left - CHUNK_HEADER_SIZE} bytes left)")
        start = pos + CHUNK_HEADER_SIZE
        chunks.append(Chunk(ctype, data[start:start + size], pos))
        pos = start + size
    return chunks


def load_resource(data: bytes, *, num_ids: int | None = NUM_ANIM_IDS) -> Resource:
    """Load a resource file.

    In: the file's bytes; ``num_ids`` the id count the range list and table must have
    (722; None accepts any count as long as both agree). Out: a Resource. Nothing is
    returned half-loaded. Rejected with ResourceFormatError naming the chunk (index,
    type) and the absolute byte offset: a chunk header or payload cut short by the end
    of the file; a descriptor (0x02) not right after a keyframes chunk (0x00), or a
    keyframes chunk not followed by its descriptor; a clip the codec rejects (the
    offset is the failing chunk's payload start + ClipFormatError.offset); a second
    range list or table chunk, or none; a range list the range-list reader rejects
    (payload under 4 bytes, count x 16 not the payload, a non-finite reach); a table
    payload under 4 bytes or whose count x 4 is not the payload; a table count other
    than the range list's, or either other than ``num_ids``; a slot below -1 or not
    below the number of clips; more than MAX_CHUNKS chunks (refused on the first one past
    it); anything but bytes (as ResourceFormatError, not TypeError).
    Original: 0x00175080 CharacterInstance_GetAnim (the LIFO slots).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ResourceFormatError(0, None, 0, f"load_resource needs bytes, got {type(data).__name__}")
    data = bytes(data)
    chunks = _split_chunks(data)

    clips: list[Clip] = []
    range_at: int | None = None
    table_at: int | None = None
    range_list: RangeList | None = None
    table: np.ndarray | None = None
    for i, ch in enumerate(chunks):
        if ch.type == ChunkType.KEYFRAMES:
            if i + 1 >= len(chunks) or chunks[i + 1].type != ChunkType.DESCRIPTOR:
                raise ResourceFormatError(i, ch.type, ch.offset, "keyframes without a descriptor chunk after it")
        elif ch.type == ChunkType.DESCRIPTOR:
            if i == 0 or chunks[i - 1].type != ChunkType.KEYFRAMES:
                raise ResourceFormatError(i, ch.type, ch.offset, "descriptor without the keyframes chunk before it")
            clips.append(_parse_pair(chunks, i - 1, i))
        elif ch.type == ChunkType.ANIM_RANGE_LIST:
            if range_at is not None:
                raise ResourceFormatError(i, ch.type, ch.offset, f"a second anim range list (the first is chunk {range_at})")
            range_at = i
            try:
                range_list = parse_range_list(ch.payload)
            except RangeListFormatError as e:
                raise ResourceFormatError(i, ch.type, ch.payload_offset + e.offset, str(e)) from e
        elif ch.type == ChunkType.ANIM_TABLE:
            if table_at is not None:
                raise ResourceFormatError(i, ch.type, ch.offset, f"a second anim table (the first is chunk {table_at})")
            table_at = i
            try:
                table = parse_anim_table(ch.payload)
            except AnimTableFormatError as e:
                raise ResourceFormatError(i, ch.type, ch.payload_offset + e.offset, f"anim table: {e.problem}") from e

    end = len(chunks)
    if range_list is None:
        raise ResourceFormatError(end, ChunkType.ANIM_RANGE_LIST, len(data), "no anim range list chunk")
    if table is None:
        raise ResourceFormatError(end, ChunkType.ANIM_TABLE, len(data), "no anim table chunk")
    assert range_at is not None and table_at is not None  # set with range_list and table
    range_off = chunks[range_at].payload_offset
    table_off = chunks[table_at].payload_offset
    if num_ids is not None and len(range_list) != num_ids:
        raise ResourceFormatError(range_at, ChunkType.ANIM_RANGE_LIST, range_off,
                                  f"range list count {len(range_list)}, expected {num_ids}")
    if num_ids is not None and len(table) != num_ids:
        raise ResourceFormatError(table_at, ChunkType.ANIM_TABLE, table_off,
                                  f"table count {len(table)}, expected {num_ids}")
    if len(table) != len(range_list):
        raise ResourceFormatError(table_at, ChunkType.ANIM_TABLE, table_off,
                                  f"table count {len(table)} is not the range list's count {len(range_list)}")
    _check_slots(table, len(clips), table_at, table_off)
    return Resource(tuple(clips), range_list, table, tuple(chunks))


def _parse_pair(chunks: Sequence[Chunk], ki: int, di: int) -> Clip:
    kf, desc = chunks[ki], chunks[di]
    try:
        return parse_clip(desc.payload, kf.payload)
    except ClipFormatError as e:
        at_keys = e.chunk == _CLIP_CHUNK_KEYFRAMES
        i, ch = (ki, kf) if at_keys else (di, desc)
        raise ResourceFormatError(i, ch.type, ch.payload_offset + e.offset, f"clip: {e}") from e


def save_resource(res: Resource) -> bytes:
    """Write a Resource as file bytes; the inverse of load_resource.

    In: a Resource. Out: the chunks in ``res.chunks`` order, the clip pairs, range list
    and table encoded from ``res.clips``, ``res.range_list``, ``res.anim_table``, other
    chunks as kept. Rejected with ResourceFormatError: a clip the codec cannot encode.
    """
    out: list[bytes] = []
    clip_i = 0
    pending_desc: bytes | None = None
    for i, ch in enumerate(res.chunks):
        if ch.type == ChunkType.KEYFRAMES:
            try:
                desc, keys = encode_clip(res.clips[clip_i])
            except ClipFormatError as e:
                raise ResourceFormatError(i, ch.type, -1, f"clip {clip_i} does not encode: {e}") from e
            clip_i += 1
            out.append(Chunk(ch.type, keys).to_bytes())
            pending_desc = desc
        elif ch.type == ChunkType.DESCRIPTOR:
            assert pending_desc is not None  # a Resource's descriptor follows its keyframes
            out.append(Chunk(ch.type, pending_desc).to_bytes())
            pending_desc = None
        elif ch.type == ChunkType.ANIM_RANGE_LIST:
            out.append(Chunk(ch.type, res.range_list.to_bytes()).to_bytes())
        elif ch.type == ChunkType.ANIM_TABLE:
            out.append(Chunk(ch.type, encode_anim_table(res.anim_table)).to_bytes())
        else:
            out.append(ch.to_bytes())
    return b"".join(out)

