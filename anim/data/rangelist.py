"""The Anim Range List (chunk 0x45): one 16-byte record per anim id, both ways.

A payload is a u32 count, then count x 16-byte records (722 in every character
data resource). A record holds, little-endian:

    +0x00, +0x02  s16 x 0.001  direction x, y (x right, y forward), a unit vector
    +0x04         f32          reach in metres; 0 means the id has no range data
    +0x08         s16 x 0.001  far range; 0 means reach x 1.25
    +0x0a         s16          the move's damage
    +0x0c         s16          hit code: bits 0-1 direction, 2-3 height, 4-5 strength
    +0x0e         u16          flags (RangeFlags)

The whole list is one read-only numpy structured array (``RANGE_DTYPE``) holding the
raw values, so ``encode_range_list(parse_range_list(p)) == p``; ``RangeRecord`` is a
frozen per-id view with the scaled values as properties. Scaled values use the
original's float32 arithmetic (multiplies rounded toward zero, anim.maths.f32).

Spec: "The Anim Range List (chunk 0x45)", "Playback rate". Layout: docs/formats-resource.md.
Original: 0x00254418 (direction), 0x002544a0 (reach), 0x00254508 (far range),
0x002542e8 (damage), 0x00254d60 (hit code), 0x00104a38 Anim_RateMultiplier (flags).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from types import MappingProxyType
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from scuffle.anim.maths import f32 as _f32

__all__ = [
    "NUM_ANIM_IDS", "RECORD_SIZE", "COUNT_SIZE", "RANGE_DTYPE",
    "DIRECTION_SCALE", "FAR_SCALE", "FAR_DEFAULT_FACTOR", "DEFAULT_HIT",
    "RangeFlags", "RateClass",
    "RangeListFormatError", "RangeAuthoringError", "UnknownAnimId",
    "RangeRecord", "RangeList", "ZERO_RECORD",
    "parse_range_list", "encode_range_list", "author_range", "rate_class", "check_anim_id",
]

NUM_ANIM_IDS = 722            # records per list, ids 0-721 (Where clips are found)
RECORD_SIZE = 16
COUNT_SIZE = 4                # the u32 count word before the records

RANGE_DTYPE = np.dtype([
    ("dir_x", "<i2"),         # +0x00
    ("dir_y", "<i2"),         # +0x02
    ("reach", "<f4"),         # +0x04
    ("far", "<i2"),           # +0x08 raw; 0 = reach x 1.25
    ("damage", "<i2"),        # +0x0a
    ("hit", "<i2"),           # +0x0c
    ("flags", "<u2"),         # +0x0e
])
assert RANGE_DTYPE.itemsize == RECORD_SIZE

# Byte offsets of the fields inside a record (the docs' table is checked against these).
FIELD_OFFSETS: dict[str, int] = {name: RANGE_DTYPE.fields[name][1] for name in RANGE_DTYPE.names or ()}  # type: ignore[index]
_REACH_OFFSET = FIELD_OFFSETS["reach"]

DIRECTION_SCALE = _f32.f32(0.001)     # s16 x 0.001 at 0x00254418
FAR_SCALE = _f32.f32(0.001)           # s16 x 0.001 at 0x00254508
FAR_DEFAULT_FACTOR = _f32.f32(1.25)   # far raw 0: reach x 1.25
DEFAULT_HIT = 10                      # the hit code a record built without one carries
RAW_PER_UNIT = 1000                   # 1 / 0.001: authoring floats -> s16

S16_MIN, S16_MAX = -0x8000, 0x7FFF
U16_MAX = 0xFFFF

HIT_FIELD_BITS = 2
HIT_FIELD_MASK = (1 << HIT_FIELD_BITS) - 1
HIT_DIRECTION_SHIFT = 0
HIT_HEIGHT_SHIFT = 2
HIT_STRENGTH_SHIFT = 4

_RECORD = struct.Struct("<hhfhhhH")
_COUNT = struct.Struct("<I")
assert _RECORD.size == RECORD_SIZE and _COUNT.size == COUNT_SIZE


class RangeFlags(IntFlag):
    """The record's flags at +0x0e.

    STUNS: the hit stuns (0x0026a6d0). RATE_800 / RATE_1000 / RATE_2000 choose the
    playback rate (Playback rate, 0x00104a38). FLAG_100: seen on escapes and throws,
    not traced.
    """

    NONE = 0
    FLAG_100 = 0x100
    STUNS = 0x400
    RATE_800 = 0x800
    RATE_1000 = 0x1000
    RATE_2000 = 0x2000


class RateClass(IntEnum):
    """Which of the four CfgAnimSpeeds values a clip plays at (0x00510260 + 4 x class).

    The values themselves are anim.data.rates.CfgAnimSpeeds (default, f800, f1000, f2000),
    in this order.
    """

    DEFAULT = 0       # no rate flag: 0x00510260
    F800 = 1          # 0x00510264
    F1000 = 2         # 0x00510268
    F2000 = 3         # 0x0051026c


# Rate flags in the order they are tested. The spec lists them 0x800, 0x1000, 0x2000
# and does not say which wins when several are set; we take that order.
_RATE_ORDER = ((RangeFlags.RATE_800, RateClass.F800),
               (RangeFlags.RATE_1000, RateClass.F1000),
               (RangeFlags.RATE_2000, RateClass.F2000))


def rate_class(flags: int) -> RateClass:
    """The rate class a record's flags pick.

    In: the u16 flags. Out: RateClass (0x800 before 0x1000 before 0x2000 when several
    are set, an order the spec does not state). Nothing is rejected.
    Original: 0x00104a38 Anim_RateMultiplier.
    """
    for flag, cls in _RATE_ORDER:
        if flags & flag:
            return cls
    return RateClass.DEFAULT


class RangeListFormatError(ValueError):
    """A chunk 0x45 payload that breaks the format.

    ``offset`` is the byte offset inside the payload, ``record`` the anim id whose
    record is at fault (None for the count word), ``field`` and ``problem`` say what.
    """

    def __init__(self, offset: int, field_name: str, problem: str, record: int | None = None):
        self.offset, self.field, self.problem, self.record = offset, field_name, problem, record
        where = f"record {record} ({field_name})" if record is not None else field_name
        super().__init__(f"anim range list, {where} at byte {offset} (0x{offset:x}): {problem}")


class RangeAuthoringError(ValueError):
    """Record values that cannot be written in the 16-byte record (names the field)."""


class UnknownAnimId(ValueError):
    """An anim id outside the list's ids (0-721 for a full list); names the id."""

    def __init__(self, anim_id: object, count: int = NUM_ANIM_IDS):
        self.anim_id, self.count = anim_id, count
        super().__init__(f"unknown anim id {anim_id!r}: ids are 0-{count - 1}")


def check_anim_id(anim_id: object, count: int = NUM_ANIM_IDS) -> int:
    """An anim id as an int, or UnknownAnimId when it is not an integer in 0..count-1."""
    if isinstance(anim_id, bool) or not isinstance(anim_id, (int, np.integer)):
        raise UnknownAnimId(anim_id, count)
    i = int(anim_id)
    if not 0 <= i < count:
        raise UnknownAnimId(i, count)
    return i


def _check_int(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise RangeAuthoringError(f"{name}: {value!r} is not an integer")
    v = int(value)
    if not lo <= v <= hi:
        raise RangeAuthoringError(f"{name}: {v} outside {lo}..{hi}")
    return v


def _thousandths(name: str, v: float) -> int:
    """A finite value in s16 thousandths (the direction, the far range); out of range
    (including values whose thousandths overflow a float) raises RangeAuthoringError."""
    scaled = v * RAW_PER_UNIT
    if not math.isfinite(scaled):
        raise RangeAuthoringError(f"{name}: {v} outside {S16_MIN}..{S16_MAX} thousandths")
    return _check_int(name, round(scaled), S16_MIN, S16_MAX)


def _check_reach(value: object) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]  # anything float() takes; the rest is refused below
    except (TypeError, ValueError):
        raise RangeAuthoringError(f"reach: {value!r} is not a number") from None
    r = _f32.f32(v)
    if not math.isfinite(r):
        raise RangeAuthoringError(f"reach: {v} is not a finite float32")
    return r


@dataclass(frozen=True, slots=True)
class RangeRecord:
    """One anim id's 16-byte range record, raw values as stored.

    Fields are the raw file values (``dir_x``, ``dir_y``, ``far_raw`` in thousandths,
    ``reach`` the float32 as a Python float). Scaled values are properties. Rejected
    on construction with RangeAuthoringError: a raw value outside its s16/u16 range,
    a reach that is not finite as a float32 (a reach is stored rounded to float32).
    """

    dir_x: int = 0
    dir_y: int = 0
    reach: float = 0.0
    far_raw: int = 0
    damage: int = 0
    hit: int = 0
    flags: RangeFlags = RangeFlags.NONE

    def __post_init__(self) -> None:
        for name in ("dir_x", "dir_y", "far_raw", "damage", "hit"):
            object.__setattr__(self, name, _check_int(name, getattr(self, name), S16_MIN, S16_MAX))
        object.__setattr__(self, "flags", RangeFlags(_check_int("flags", self.flags, 0, U16_MAX)))
        object.__setattr__(self, "reach", _check_reach(self.reach))

    # ---- scaled values (float32, toward-zero multiplies)
    @property
    def direction(self) -> tuple[float, float]:
        """(x, y) = raw x 0.001 (x right, y forward). Original: 0x00254418."""
        return (_f32.mul(float(self.dir_x), DIRECTION_SCALE), _f32.mul(float(self.dir_y), DIRECTION_SCALE))

    @property
    def far(self) -> float:
        """The effective far range: raw x 0.001, or reach x 1.25 when raw is 0. Original: 0x00254508."""
        if self.far_raw == 0:
            return _f32.mul(self.reach, FAR_DEFAULT_FACTOR)
        return _f32.mul(float(self.far_raw), FAR_SCALE)

    @property
    def has_range(self) -> bool:
        """True when the id has range data (reach not 0). Original: 0x002544a0."""
        return self.reach != 0.0

    @property
    def stuns(self) -> bool:
        """True when flag 0x400 (the hit stuns) is set. Carried for a host's own rules:
        the spec names the bit only, and no rule of scuffle reads it (docs/original.md)."""
        return bool(self.flags & RangeFlags.STUNS)

    @property
    def hit_direction(self) -> int:
        """Bits 0-1 of the hit code."""
        return self.hit >> HIT_DIRECTION_SHIFT & HIT_FIELD_MASK

    @property
    def hit_height(self) -> int:
        """Bits 2-3 of the hit code."""
        return self.hit >> HIT_HEIGHT_SHIFT & HIT_FIELD_MASK

    @property
    def hit_strength(self) -> int:
        """Bits 4-5 of the hit code."""
        return self.hit >> HIT_STRENGTH_SHIFT & HIT_FIELD_MASK

    @property
    def rate_class(self) -> RateClass:
        """The playback rate class the flags pick. Original: 0x00104a38 Anim_RateMultiplier."""
        return rate_class(self.flags)

    # ---- bytes
    def to_bytes(self) -> bytes:
        """The 16 record bytes."""
        return _RECORD.pack(self.dir_x, self.dir_y, self.reach, self.far_raw,
                            self.damage, self.hit, int(self.flags))

    @classmethod
    def from_bytes(cls, data: bytes) -> "RangeRecord":
        """A record from its 16 bytes; RangeListFormatError when not 16 bytes or reach not finite."""
        if len(data) != RECORD_SIZE:
            raise RangeListFormatError(min(len(data), RECORD_SIZE), "record",
                                       f"{len(data)} bytes, expected {RECORD_SIZE}")
        dx, dy, reach, far, dmg, hit, flags = _RECORD.unpack(bytes(data))
        if not math.isfinite(reach):
            raise RangeListFormatError(_REACH_OFFSET, "reach", f"{reach} is not finite")
        return cls(dx, dy, reach, far, dmg, hit, RangeFlags(flags))


ZERO_RECORD = RangeRecord()


def author_range(direction: tuple[float, float] = (0.0, 1.0), reach: float = 0.0,
                 far: float | None = None, damage: int = 0, hit: int = DEFAULT_HIT,
                 flags: int = RangeFlags.NONE) -> RangeRecord:
    """Build a record from decoded values; the path tests and the demo's move set use.

    In: ``direction`` (x, y) in units (stored rounded to thousandths), ``reach`` in
    metres, ``far`` in metres or None (stored as 0: reach x 1.25), ``damage``, the
    ``hit`` code (10 by default) and ``flags``. Out: a RangeRecord. Rejected with
    RangeAuthoringError: a non-finite or out-of-range direction or far (s16 thousandths),
    a far that rounds to 0 (which would mean "reach x 1.25"), a negative or non-finite
    reach, damage or hit outside s16, flags outside u16.
    """
    try:
        dx, dy = (float(v) for v in direction)
    except (TypeError, ValueError):
        raise RangeAuthoringError(f"direction: {direction!r} is not an (x, y) pair of numbers") from None
    raw = []
    for name, v in (("direction x", dx), ("direction y", dy)):
        if not math.isfinite(v):
            raise RangeAuthoringError(f"{name}: {v} is not finite")
        raw.append(_thousandths(name, v))
    r = _check_reach(reach)
    if r < 0.0:
        raise RangeAuthoringError(f"reach: {r} is negative")
    far_raw = 0
    if far is not None:
        fv = float(far)
        if not math.isfinite(fv):
            raise RangeAuthoringError(f"far: {fv} is not finite")
        far_raw = _thousandths("far (thousandths)", fv)
        if far_raw == 0:
            raise RangeAuthoringError(f"far: {fv} rounds to 0, which means reach x 1.25; pass None for that")
    return RangeRecord(raw[0], raw[1], r, far_raw,
                       _check_int("damage", damage, S16_MIN, S16_MAX),
                       _check_int("hit", hit, S16_MIN, S16_MAX),
                       RangeFlags(_check_int("flags", flags, 0, U16_MAX)))


class RangeList:
    """The Anim Range List: a read-only structured array of raw records, one per anim id.

    Build with ``parse_range_list``, ``RangeList.zeros`` or ``RangeList.from_records``;
    change with ``with_record`` (a new list). ``records`` is the raw array
    (``RANGE_DTYPE``); ``direction``, ``reach``, ``far``, ``damage``, ``hit``, ``flags``
    are per-id columns for vectorised code. Rejected on construction with
    RangeListFormatError: an array of another dtype or shape, a non-finite reach.

    ``overrides``: the per-character (class) override table, {class name: {id: record}}:
    the class record (CfgChar) "overrides the range data for some ids" as the human is
    attached (Human_AttachInstance 0x00217a98, through the jump tables 0x0055d640 and
    0x0055d6f0; "The Anim Range List", L178). ``for_class`` gives the list a human of
    that class reads. The disc's override values are not known (the spec does not
    decode the tables), so no set carries any unless its author gives them; the table
    is not part of the chunk (``to_bytes`` writes the records only). Rejected
    (RangeAuthoringError, UnknownAnimId): an empty or non-string class, an id outside
    the list, a value that is not a RangeRecord.
    """

    __slots__ = ("_records", "_overrides", "_made")
    _records: np.ndarray
    _overrides: "MappingProxyType[str, Mapping[int, RangeRecord]]"
    _made: dict[int, RangeRecord]                   # each id's record, made once (read-only records)

    def __init__(self, records: np.ndarray, overrides: Mapping[str, Mapping[int, RangeRecord]] | None = None):
        arr = np.asarray(records)
        if arr.dtype != RANGE_DTYPE or arr.ndim != 1:
            raise RangeListFormatError(0, "records", f"need a 1-d {RANGE_DTYPE} array, got {arr.dtype} {arr.shape}")
        arr = arr.copy()
        _check_reaches(arr)
        arr.flags.writeable = False
        table: dict[str, Mapping[int, RangeRecord]] = {}
        for klass, rows in (overrides or {}).items():
            if not isinstance(klass, str) or not klass:
                raise RangeAuthoringError(f"override class {klass!r}: need a non-empty name")
            if not isinstance(rows, Mapping):
                raise RangeAuthoringError(f"override class {klass!r}: need {{id: RangeRecord}}")
            checked = {}
            for anim_id, rec in rows.items():
                i = check_anim_id(anim_id, len(arr))
                if not isinstance(rec, RangeRecord):
                    raise RangeAuthoringError(f"override class {klass!r}, id {i}: {type(rec).__name__} "
                                              "is not a RangeRecord")
                checked[i] = rec
            table[klass] = MappingProxyType(checked)
        object.__setattr__(self, "_records", arr)
        object.__setattr__(self, "_overrides", MappingProxyType(table))
        # id -> its RangeRecord, made at the first read (the records are read-only and a
        # RangeRecord is frozen: one object per id serves every read)
        object.__setattr__(self, "_made", {})

    def __setattr__(self, name, value):
        raise AttributeError("RangeList is immutable; use with_record")

    # ---- construction
    @classmethod
    def zeros(cls, count: int = NUM_ANIM_IDS) -> "RangeList":
        """A list of ``count`` all-zero records (no range data, no flags)."""
        return cls(np.zeros(count, dtype=RANGE_DTYPE))

    @classmethod
    def from_records(cls, records: Mapping[int, RangeRecord] | Sequence[RangeRecord],
                     count: int = NUM_ANIM_IDS) -> "RangeList":
        """A list from {id: record} (missing ids get ZERO_RECORD) or a sequence of ``count`` records.

        Rejected: UnknownAnimId for a key outside 0..count-1; RangeAuthoringError for
        a value that is not a RangeRecord or a sequence of the wrong length.
        """
        arr = np.zeros(count, dtype=RANGE_DTYPE)
        if isinstance(records, Mapping):
            items: Iterable[tuple[int, RangeRecord]] = records.items()
        else:
            seq = list(records)
            if len(seq) != count:
                raise RangeAuthoringError(f"{len(seq)} records for a list of {count}")
            items = enumerate(seq)
        for anim_id, rec in items:
            i = check_anim_id(anim_id, count)
            if not isinstance(rec, RangeRecord):
                raise RangeAuthoringError(f"id {i}: {type(rec).__name__} is not a RangeRecord")
            arr[i] = _row(rec)
        return cls(arr)

    def with_record(self, anim_id: int, record: RangeRecord) -> "RangeList":
        """A new list with ``anim_id``'s record replaced (UnknownAnimId outside the list)."""
        i = check_anim_id(anim_id, len(self))
        if not isinstance(record, RangeRecord):
            raise RangeAuthoringError(f"id {i}: {type(record).__name__} is not a RangeRecord")
        arr = self._records.copy()
        arr[i] = _row(record)
        return RangeList(arr, self._overrides)

    @property
    def overrides(self) -> Mapping[str, Mapping[int, RangeRecord]]:
        """The per-class override table (read-only), {class: {id: record}}."""
        return self._overrides

    def with_overrides(self, klass: str, rows: Mapping[int, RangeRecord]) -> "RangeList":
        """A new list whose override table gives class ``klass`` the records ``rows``
        (replacing that class's earlier table). Rejected as in the constructor."""
        return RangeList(self._records, {**self._overrides, klass: rows})

    def for_class(self, klass: str) -> "RangeList":
        """The list a human of class ``klass`` reads: these records with the class's
        overrides applied (no override table of its own). Rejected: a class the table does
        not name (RangeAuthoringError naming it and the known ones).
        Original: 0x00217a98 Human_AttachInstance (the class record's overrides)."""
        rows = self._overrides.get(klass)
        if rows is None:
            known = ", ".join(sorted(self._overrides)) or "none"
            raise RangeAuthoringError(f"override class {klass!r}: not in the table (known: {known})")
        arr = self._records.copy()
        for i, rec in rows.items():
            arr[i] = _row(rec)
        return RangeList(arr)

    # ---- access
    @property
    def records(self) -> np.ndarray:
        """The raw records (read-only ``RANGE_DTYPE`` array)."""
        return self._records

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, anim_id: int) -> RangeRecord:
        """The record of ``anim_id`` (UnknownAnimId outside 0..len-1), made once per id."""
        if anim_id.__class__ is int:
            rec = self._made.get(anim_id)
            if rec is not None:
                return rec
        i = check_anim_id(anim_id, len(self))
        rec = self._made.get(i)
        if rec is None:
            r = self._records[i]
            rec = self._made[i] = RangeRecord(int(r["dir_x"]), int(r["dir_y"]), float(r["reach"]), int(r["far"]),
                                              int(r["damage"]), int(r["hit"]), RangeFlags(int(r["flags"])))
        return rec

    def __iter__(self) -> Iterator[RangeRecord]:
        return (self[i] for i in range(len(self)))

    def __reduce__(self):
        """Pickled as its records and overrides (a snapshot's byte form, Game.snapshot)."""
        return (RangeList, (np.array(self._records), {k: dict(v) for k, v in self._overrides.items()}))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RangeList):
            return NotImplemented
        return self.to_bytes() == other.to_bytes() and dict(self._overrides) == dict(other._overrides)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RangeList({len(self)} records, {int(np.count_nonzero(self._records['reach']))} with range data)"

    # ---- columns (float32, the original's arithmetic)
    @property
    def direction(self) -> np.ndarray:
        """(n, 2) float32 directions, raw x 0.001."""
        raw = np.stack([self._records["dir_x"], self._records["dir_y"]], axis=-1).astype(np.float32)
        return _f32.mul_v(raw, np.float32(DIRECTION_SCALE))

    @property
    def reach(self) -> np.ndarray:
        """(n,) float32 reaches (0: no range data)."""
        return self._records["reach"].copy()

    @property
    def far(self) -> np.ndarray:
        """(n,) float32 effective far ranges (raw x 0.001, or reach x 1.25 when raw is 0)."""
        raw = self._records["far"]
        scaled = _f32.mul_v(raw.astype(np.float32), np.float32(FAR_SCALE))
        default = _f32.mul_v(self._records["reach"], np.float32(FAR_DEFAULT_FACTOR))
        return np.where(raw == 0, default, scaled).astype(np.float32)

    @property
    def damage(self) -> np.ndarray:
        """(n,) int16 damage."""
        return self._records["damage"].copy()

    @property
    def hit(self) -> np.ndarray:
        """(n,) int16 hit codes."""
        return self._records["hit"].copy()

    @property
    def flags(self) -> np.ndarray:
        """(n,) uint16 flags."""
        return self._records["flags"].copy()

    @property
    def rate_classes(self) -> np.ndarray:
        """(n,) int8 RateClass per id. Original: 0x00104a38 Anim_RateMultiplier."""
        flags = self._records["flags"]
        out = np.full(len(flags), RateClass.DEFAULT, dtype=np.int8)
        for flag, cls in reversed(_RATE_ORDER):   # the first flag in test order wins
            out[(flags & flag) != 0] = cls
        return out

    def to_bytes(self) -> bytes:
        """The chunk 0x45 payload: u32 count, then the records."""
        return _COUNT.pack(len(self._records)) + self._records.tobytes()


def _row(rec: RangeRecord) -> tuple:
    return (rec.dir_x, rec.dir_y, rec.reach, rec.far_raw, rec.damage, rec.hit, int(rec.flags))


def _check_reaches(arr: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(arr["reach"]))
    if len(bad):
        i = int(bad[0])
        raise RangeListFormatError(COUNT_SIZE + i * RECORD_SIZE + _REACH_OFFSET, "reach",
                                   f"{float(arr['reach'][i])} is not finite", record=i)


def parse_range_list(payload: bytes) -> RangeList:
    """Parse a chunk 0x45 payload into a RangeList.

    In: the payload (u32 count, then count x 16 bytes). Out: a RangeList of ``count``
    records (any count; the resource requires 722). Rejected with RangeListFormatError
    (offset inside the payload): fewer than 4 bytes; count x 16 not the size after the
    count; a non-finite reach (the record's id and the reach's offset named).
    Original: 0x00254568 (the human's pointer to the list; readers 0x00254418-0x00254d60).
    """
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise RangeListFormatError(0, "payload", f"expected bytes, got {type(payload).__name__}")
    payload = bytes(payload)
    if len(payload) < COUNT_SIZE:
        raise RangeListFormatError(0, "count", f"payload of {len(payload)} bytes has no count word")
    (count,) = _COUNT.unpack_from(payload, 0)
    body = len(payload) - COUNT_SIZE
    if count * RECORD_SIZE != body:
        raise RangeListFormatError(0, "count", f"{count} records x {RECORD_SIZE} bytes = {count * RECORD_SIZE}, "
                                   f"but {body} bytes follow the count")
    arr = np.frombuffer(payload, dtype=RANGE_DTYPE, count=count, offset=COUNT_SIZE)
    _check_reaches(arr)
    return RangeList(arr)


def encode_range_list(range_list: RangeList) -> bytes:
    """Write a RangeList as a chunk 0x45 payload; the inverse of parse_range_list."""
    return range_list.to_bytes()
