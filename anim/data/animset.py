"""Anim sets: a shared, read-only map of the 722 anim ids to clips and range records.

An ``AnimSet`` is what a character's CharacterData holds once its resource is loaded:
per id a clip (or none) and a range record. Sets are immutable and meant to be
shared between every human of a class; a scenario override makes a new set
(``with_clip``). Each distinct clip has a stable integer index (``clip_index``,
``clips_by_index``), so a numpy clip bank can be built from a set and gathered by
``clip_indices``.

Spec: "Where clips are found", "The Anim Range List (chunk 0x45)".
Original: 0x00175080 CharacterInstance_GetAnim (id -> clip), 0x00254568 (the range list).
"""
from __future__ import annotations

import difflib
import hashlib
from enum import IntEnum
from typing import Mapping, Sequence

import numpy as np

from scuffle.anim.data.clip import Clip, clip_digest, encode_clip
from scuffle.anim.data.rangelist import (
    NUM_ANIM_IDS, RangeAuthoringError, RangeList, RangeRecord, UnknownAnimId, check_anim_id,
)
from scuffle.anim.data.resource import NO_CLIP, Chunk, Resource

__all__ = ["AnimId", "AnimRef", "AnimSet", "AnimSetError", "UnknownAnimId", "UnknownAnimName"]


class AnimId(IntEnum):
    """Anim ids the spec names, by the spec's words (Where clips are found; The Anim Range List;
    The reference pose). Other ids are plain ints 0-721."""

    TACKLE = 3             # the tackle searches within this id's far range x 1.25 (0x00284920)
    SNAP_RIGHT_01 = 25     # direction (999, -12)
    GRAB = 70              # the grab searches within this id's far range x 1.25 (0x00284920)
    HOLD = 82              # paired hold: direction (0.351, 0.936) x reach 1.081
    GROUNDED_IDLE = 196
    FIGHT_IDLE = 358
    WALK = 408             # Rembrandt's walk, the id the LIFO slot rule was confirmed on
    BLOCK = 606


class AnimSetError(ValueError):
    """An anim set built from values that are not clips or records, or tables that disagree."""


# An anim id, or the name of its clip in the set (``"FIGHT_IDLE"``): what every call that
# takes an anim id accepts (AnimSet.id_of resolves it).
AnimRef = int | str


_QUOTE = 80          # an error quotes at most this many characters of a value it was given


class UnknownAnimName(UnknownAnimId):
    """A clip name no clip of the set carries; names the set and the closest names
    ("did you mean ..."). An UnknownAnimId (a ValueError), so callers that catch a bad
    id catch a bad name too."""

    def __init__(self, name: str, set_name: str, known: Sequence[str]):
        ValueError.__init__(self)
        self.anim_id, self.count = name, NUM_ANIM_IDS
        self.name, self.set_name = name, set_name
        # a name longer than any clip's (30 bytes) is neither matched nor quoted whole
        short = len(name) <= _QUOTE
        self.suggestions = (difflib.get_close_matches(name, list(known), n=3, cutoff=0.6) or
                            difflib.get_close_matches(name.upper(), [k.upper() for k in known], n=3, cutoff=0.6)
                            ) if short else []
        hint = f"; did you mean {' or '.join(repr(x) for x in self.suggestions)}?" if self.suggestions else ""
        shown = repr(name) if short else repr(name[:_QUOTE]) + f"... ({len(name)} characters)"
        self.args = (f"no clip named {shown} in set {set_name[:_QUOTE]!r}{hint}",)

    def __str__(self) -> str:
        return str(self.args[0])


class AnimSet:
    """The anim ids of one character set: clip per id (or none) and range record per id.

    ``clips_by_index`` holds each distinct clip once (by identity) with a stable index;
    ``clip_indices`` maps every id to its clip's index (-1 for none). Built with
    ``from_resource`` or ``build``; never changed in place (``with_clip`` and
    ``with_range`` return new sets; arrays are read-only). Ids outside 0..num_ids-1
    (0..721) raise UnknownAnimId.
    """

    __slots__ = ("_name", "_clips", "_index", "_ranges", "_names", "_digest")
    _name: str
    _names: dict[str, int] | None
    _digest: str | None
    _clips: tuple[Clip, ...]
    _index: np.ndarray
    _ranges: RangeList

    def __init__(self, clips_by_index: Sequence[Clip], clip_indices: np.ndarray | Sequence[int],
                 range_list: RangeList, name: str = ""):
        """A set from its parts.

        In: the distinct clips, one index per id into them (-1 none), the range list
        (one record per id), a name. Rejected with AnimSetError: a non-Clip, an index
        table whose length is not the range list's, an index outside -1..len(clips)-1.
        """
        clips = tuple(clips_by_index)
        for i, c in enumerate(clips):
            if not isinstance(c, Clip):
                raise AnimSetError(f"clip index {i}: {type(c).__name__} is not a Clip")
        if not isinstance(range_list, RangeList):
            raise AnimSetError(f"range_list: {type(range_list).__name__} is not a RangeList")
        index = np.array(clip_indices, dtype=np.int32)
        if index.ndim != 1 or len(index) != len(range_list):
            raise AnimSetError(f"{index.size} clip indices for {len(range_list)} range records")
        bad = np.flatnonzero((index < NO_CLIP) | (index >= len(clips)))
        if len(bad):
            i = int(bad[0])
            raise AnimSetError(f"id {i}: clip index {int(index[i])} outside -1..{len(clips) - 1}")
        index.flags.writeable = False
        object.__setattr__(self, "_name", str(name))
        object.__setattr__(self, "_clips", clips)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_ranges", range_list)
        object.__setattr__(self, "_names", None)
        object.__setattr__(self, "_digest", None)

    def __setattr__(self, name, value):
        raise AttributeError("AnimSet is immutable; use with_clip / with_range")

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_resource(cls, res: Resource, name: str = "") -> "AnimSet":
        """The set a resource defines: id -> clip through the table's LIFO slots.

        In: a loaded or built Resource. Out: an AnimSet whose ``clips_by_index`` is the
        resource's clips in file order (so index = len(clips) - 1 - slot). Nothing is
        rejected beyond what Resource already checked.
        Original: 0x00175080 CharacterInstance_GetAnim.
        """
        n = len(res.clips)
        slots = res.anim_table
        index = np.where(slots == NO_CLIP, NO_CLIP, n - 1 - slots).astype(np.int32)
        return cls(res.clips, index, res.range_list, name)

    @classmethod
    def build(cls, clips: Mapping[int, Clip], ranges: Mapping[int, RangeRecord] | RangeList | None = None,
              name: str = "", num_ids: int = NUM_ANIM_IDS) -> "AnimSet":
        """A set from {id: clip} and {id: record}.

        In: clips by id (one Clip object used for several ids is stored once), range
        records by id (missing ids and ``ranges=None`` give ZERO_RECORD) or a whole
        RangeList, a name. Indices follow the first id that uses each clip. Rejected:
        UnknownAnimId for an id outside 0..num_ids-1; AnimSetError for a value that is
        not a Clip or a RangeList of another length; RangeAuthoringError for a value
        that is not a RangeRecord.
        """
        index = np.full(num_ids, NO_CLIP, dtype=np.int32)
        distinct: list[Clip] = []
        seen: dict[int, int] = {}
        for anim_id in sorted(check_anim_id(k, num_ids) for k in clips):
            clip = clips[anim_id]
            if not isinstance(clip, Clip):
                raise AnimSetError(f"id {anim_id}: {type(clip).__name__} is not a Clip")
            if id(clip) not in seen:
                seen[id(clip)] = len(distinct)
                distinct.append(clip)
            index[anim_id] = seen[id(clip)]
        if isinstance(ranges, RangeList):
            if len(ranges) != num_ids:
                raise AnimSetError(f"range list of {len(ranges)} records for {num_ids} ids")
            range_list = ranges
        else:
            range_list = RangeList.from_records(ranges or {}, num_ids)
        return cls(distinct, index, range_list, name)

    def to_resource(self, extra_chunks: Sequence[Chunk] = ()) -> Resource:
        """A Resource whose load gives back this set.

        Out: one clip pair per entry of ``clips_by_index``, in index order, so the clip
        at index k gets slot len - 1 - k (LIFO); the range list; the table; then
        ``extra_chunks`` (unknown types only). Rejected with ResourceFormatError: a
        clip that does not encode, an extra chunk of a known type.
        """
        n = len(self._clips)
        table = np.where(self._index == NO_CLIP, NO_CLIP, n - 1 - self._index).astype(np.int32)
        return Resource.build(self._clips, self._ranges, table, extra_chunks)

    def with_clip(self, anim_id: int, clip: Clip | None, range: RangeRecord | None = None) -> "AnimSet":
        """A new set where ``anim_id`` plays ``clip`` (None: no clip), and has ``range`` if given.

        Existing indices are kept (a new clip gets the next index; a clip no id uses
        any more keeps its index), so a bank built for this set stays valid. Rejected:
        UnknownAnimId; AnimSetError for a non-Clip; RangeAuthoringError for a non-record.
        """
        i = check_anim_id(anim_id, self.num_ids)
        clips = list(self._clips)
        index = self._index.copy()
        if clip is None:
            index[i] = NO_CLIP
        else:
            if not isinstance(clip, Clip):
                raise AnimSetError(f"id {i}: {type(clip).__name__} is not a Clip")
            k = next((j for j, c in enumerate(clips) if c is clip), None)
            if k is None:
                k = len(clips)
                clips.append(clip)
            index[i] = k
        ranges = self._ranges if range is None else self._ranges.with_record(i, range)
        return AnimSet(clips, index, ranges, self._name)

    def with_class_overrides(self, klass: str, rows: Mapping[int, RangeRecord]) -> "AnimSet":
        """A new set whose range list carries class ``klass``'s override records ``rows``
        (RangeList.with_overrides; "The Anim Range List", L178)."""
        return AnimSet(self._clips, self._index, self._ranges.with_overrides(klass, rows), self._name)

    def for_class(self, klass: str) -> "AnimSet":
        """The set a human of class ``klass`` plays: the same clips, the range list with the
        class's overrides applied (RangeList.for_class; RangeAuthoringError for a class the
        table does not name). Original: 0x00217a98 Human_AttachInstance."""
        return AnimSet(self._clips, self._index, self._ranges.for_class(klass), f"{self._name}/{klass}")

    def with_range(self, anim_id: int, record: RangeRecord) -> "AnimSet":
        """A new set with ``anim_id``'s range record replaced (UnknownAnimId, RangeAuthoringError)."""
        i = check_anim_id(anim_id, self.num_ids)
        if not isinstance(record, RangeRecord):
            raise RangeAuthoringError(f"id {i}: {type(record).__name__} is not a RangeRecord")
        return AnimSet(self._clips, self._index, self._ranges.with_record(i, record), self._name)

    # ---------------------------------------------------------------- queries
    @property
    def name(self) -> str:
        """The set's name (a label only)."""
        return self._name

    @property
    def num_ids(self) -> int:
        """The number of anim ids (722)."""
        return len(self._index)

    @property
    def range_list(self) -> RangeList:
        """The whole range list (read-only)."""
        return self._ranges

    @property
    def clips_by_index(self) -> tuple[Clip, ...]:
        """The distinct clips, by their stable index."""
        return self._clips

    @property
    def clip_indices(self) -> np.ndarray:
        """Per id, the index of its clip in ``clips_by_index`` or -1 (read-only int32)."""
        return self._index

    def clip(self, anim_id: AnimRef) -> Clip | None:
        """The clip of ``anim_id`` (an id, or a clip name: ``id_of``), or None.
        UnknownAnimId outside the ids (UnknownAnimName for an unknown name).

        Original: 0x00175080 CharacterInstance_GetAnim.
        """
        if isinstance(anim_id, str):
            anim_id = self.id_of(anim_id)
        k = int(self._index[check_anim_id(anim_id, self.num_ids)])
        return None if k == NO_CLIP else self._clips[k]

    def clip_index(self, anim_id: AnimRef) -> int | None:
        """The stable index of ``anim_id``'s clip, or None. UnknownAnimId outside the ids."""
        if isinstance(anim_id, str):
            anim_id = self.id_of(anim_id)
        k = int(self._index[check_anim_id(anim_id, self.num_ids)])
        return None if k == NO_CLIP else k

    def range(self, anim_id: AnimRef) -> RangeRecord:
        """The range record of ``anim_id`` (ZERO_RECORD where none was given). UnknownAnimId outside the ids."""
        if isinstance(anim_id, str):
            anim_id = self.id_of(anim_id)
        return self._ranges[check_anim_id(anim_id, self.num_ids)]

    def has(self, anim_id: AnimRef) -> bool:
        """True when ``anim_id`` has a clip. UnknownAnimId outside the ids (UnknownAnimName
        for a name no clip carries: a named clip is always there)."""
        if isinstance(anim_id, str):
            anim_id = self.id_of(anim_id)
        return int(self._index[check_anim_id(anim_id, self.num_ids)]) != NO_CLIP

    def __contains__(self, anim_id: object) -> bool:
        """``x in aset``: ``has(x)``, False (not an error) for an unknown name or id."""
        try:
            return self.has(anim_id)  # type: ignore[arg-type]
        except UnknownAnimId:
            return False

    def names_view(self) -> Mapping[str, int]:
        """``names()`` without the copy (read it, do not change it)."""
        if self._names is None:
            self.names()
        assert self._names is not None
        return self._names

    # ---------------------------------------------------------------- names
    def names(self) -> dict[str, int]:
        """Clip name -> anim id, for every id with a named clip (the descriptor's name,
        +0x20 "Data: Descriptor"); a name several ids play maps to the lowest of them.
        The demo set names its clips after its moves (``"FIGHT_IDLE"`` -> 358)."""
        if self._names is None:
            out: dict[str, int] = {}
            for anim_id in self.ids():
                clip = self._clips[int(self._index[anim_id])]
                nm = clip.name
                if nm and nm not in out:
                    out[nm] = anim_id
            object.__setattr__(self, "_names", out)
        assert self._names is not None
        return dict(self._names)

    def id_of(self, anim: "AnimRef") -> int:
        """The anim id ``anim`` stands for: an id as an int, or a clip's name in this set
        (exact, else the one name equal to it ignoring case). Rejected: UnknownAnimId for
        an id outside the ids or a value that is neither; UnknownAnimName (with "did you
        mean ...") for a name no clip carries. Ids without a clip are returned as they
        are (``has`` tells)."""
        if isinstance(anim, str):
            if self._names is None:
                self.names()
            table = self._names
            assert table is not None
            hit = table.get(anim)
            if hit is None:
                folded = [k for k in table if k.casefold() == anim.casefold()]
                if len(folded) == 1:
                    return table[folded[0]]
                raise UnknownAnimName(anim, self._name, list(table))
            return hit
        return check_anim_id(anim, self.num_ids)

    def name_of(self, anim_id: int) -> str:
        """The name of ``anim_id``'s clip ('' for an id without a clip or an unnamed one).
        UnknownAnimId outside the ids."""
        clip = self.clip(anim_id)
        return clip.name if clip is not None else ""

    def ids(self) -> list[int]:
        """The ids that have a clip, ascending."""
        return [int(i) for i in np.flatnonzero(self._index != NO_CLIP)]

    def digest(self) -> str:
        """A sha256 (hex) of the set's contents: its name, the clip each id plays (each
        clip by its encoded bytes, anim.data.clip.clip_digest) and its range list. Sets with the
        same digest play alike; a snapshot file records the digest of each human's set and
        is restored only where the sets match. Computed once (the set never changes)."""
        d = self._digest
        if d is None:
            h = hashlib.sha256()
            name = self._name.encode("utf-8", "surrogatepass")
            h.update(len(name).to_bytes(4, "little") + name)
            h.update(np.ascontiguousarray(self._index, dtype="<i4").tobytes())
            h.update(self._ranges.to_bytes())
            for c in self._clips:
                h.update(clip_digest(c))
            d = h.hexdigest()
            object.__setattr__(self, "_digest", d)
        return d

    def equals(self, other: "AnimSet") -> bool:
        """True when both map every id to clips that encode to the same bytes and hold the same records."""
        if not isinstance(other, AnimSet) or self.num_ids != other.num_ids or self._ranges != other._ranges:
            return False
        mine = [encode_clip(c) for c in self._clips]
        theirs = [encode_clip(c) for c in other._clips]
        for a, b in zip(self._index, other._index):
            if (a == NO_CLIP) != (b == NO_CLIP):
                return False
            if a != NO_CLIP and mine[a] != theirs[b]:
                return False
        return True

    def __repr__(self) -> str:
        return (f"AnimSet({self._name!r}, {len(self.ids())} ids with clips, "
                f"{len(self._clips)} distinct clips, {self.num_ids} ids)")

