"""The player's clip look-up: anim ids (or clip names) to clips, cursors and rates.

``ClipLookup`` is the part of ``scuffle.anim.playback.player.Player`` that finds clips: the bank
of every clip the player has seen (``bank``, ``bank_index``, ``register``, its memory
budget), ``find`` and ``cursor`` by anim id or clip name, the playback ``rate_of`` an id
(CfgAnimSpeeds by its Anim Range List flags), the gait speeds, and the cache that keeps
what was found per set (an AnimSet is immutable). A part the Player owns
(``Player.lookup``), over the world's stores: it holds the bank's clips and the caches;
the Player gives it its options (``options``, set again when the Player's are).

Spec: "Where clips are found", "Playback rate", "The Anim Range List".
Original: 0x00175080 CharacterInstance_GetAnim, 0x00104a38 Anim_RateMultiplier.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from scuffle.anim.data.animset import AnimRef
from scuffle.anim.data.clip import Clip
from scuffle.anim.data.rangelist import check_anim_id
from scuffle.anim.base.errors import UnknownClip
from scuffle.anim.playback.cursor import Cursor, cursor_proto, cursor_row
from scuffle.anim.data.rates import gait_speed
from scuffle.anim.engine.sampler import BANK_BASE_BYTES, MAX_BANK_BYTES, BankBudgetError, ClipBank, clip_bytes
from scuffle.anim.maths.skeleton import Skeleton
from scuffle.anim.data.options import PlayerOptions
from scuffle.anim.playback.tasks import MotionEntry, TagBits
from scuffle.anim.engine.store import Stores


__all__ = ["ClipLookup", "UnknownClip"]




def _ref(anim_set, anim_id: AnimRef) -> int:
    """An anim id, or a clip name resolved through ``anim_set`` (AnimSet.id_of: did you
    mean), as it is. Rejected: anything else, a bool among them, or an id of another type
    than int outside the set's ids (rangelist.check_anim_id: UnknownAnimId naming it; a
    plain int's range is the look-up's to check)."""
    if isinstance(anim_id, str):
        return anim_set.id_of(anim_id)
    if anim_id.__class__ is not int:
        check_anim_id(anim_id, anim_set.num_ids)         # (an id of another type: UnknownAnimId)
    return anim_id


def _refs(anim_set, ids: Sequence[AnimRef], what: str = "anim ids") -> Sequence[int]:
    """``_ref`` of each of ``ids`` (the same sequence when none is a name). Rejected: ``ids``
    not a sequence of them (a ValueError naming ``what``; UnknownAnimId for an item)."""
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__len__") or not hasattr(ids, "__getitem__"):
        raise ValueError(f"{what}: {ids!r} is not a list of anim ids or clip names")
    for i in ids:
        if i.__class__ is not int and (not isinstance(i, (int, np.integer)) or isinstance(i, bool)):
            return [_ref(anim_set, i) for i in ids]        # a name resolved, anything else refused
    return ids  # type: ignore[return-value]  # ints (IntEnum members among them)


class ClipLookup:
    """Clips, cursors and rates by anim id (see the module docstring): the Player's look-up.

    In: the Player's options, the skeleton the bank samples for and the world's stores
    (the cursor table's ``clips`` is this part's clip list: bank index -> clip)."""

    def __init__(self, options: PlayerOptions, skeleton: Skeleton, stores: Stores):
        self.options = options
        self.skeleton = skeleton
        self.stores = stores
        self._clips: list[Clip] = []
        stores.cursors.clips = self._clips          # bank index -> clip, for cursors the kernel made
        self._clip_index: dict[int, int] = {}
        self._flags: dict[int, tuple] = {}         # id(anim set) -> (set, its range flags column)
        # id(anim set) -> (set, the speeds, {anim id: [clip, rate, bank index or -1]}): the ids
        # found there before (a set is immutable, so its clips and range flags never change)
        self._known_ids: dict[int, tuple] = {}
        self._id_types: set[type] = {int}          # the id types the cache may be asked with
        self._gait_speeds: dict[tuple, tuple] = {}  # (id(anim set), ids) -> (set, speeds, options.speeds)
        self._gait_clips: dict | None = None       # (id(anim set), *ids) -> what _entries_of found
        self._bank: ClipBank | None = None
        self._bank_cost = BANK_BASE_BYTES               # bank_bytes of _clips (the sentinels' keys)

    @property
    def clips(self) -> list[Clip]:
        """Every clip seen, by bank index (the list the cursor table's ``clips`` is)."""
        return self._clips

    @property
    def bank(self) -> ClipBank:
        """The ClipBank of every clip this player has seen (rebuilt after new clips)."""
        if self._bank is None or len(self._bank) != len(self._clips):
            self._bank = None                       # the old bank (and its pose tables) goes before the new one is built
            opts = self.options
            self._bank = ClipBank(self._clips, self.skeleton, opts.tag_bits == TagBits.Y_BIT,
                                  opts.motion_entry == MotionEntry.MOTION)
        return self._bank

    @staticmethod
    def _cost(clip: Clip) -> int:
        return clip_bytes(clip)

    def bank_index(self, clip: Clip) -> int:
        """The bank index of ``clip``, adding it to the bank's clips when new. Rejected: a
        clip that would take the bank past MAX_BANK_BYTES (BankBudgetError; nothing added)."""
        key = id(clip)
        i = self._clip_index.get(key)
        if i is None:
            cost = self._cost(clip)
            if self._bank_cost + cost > MAX_BANK_BYTES:
                raise BankBudgetError(f"clip {clip.name!r}: clip bank", self._bank_cost + cost, MAX_BANK_BYTES)
            i = len(self._clips)
            self._clips.append(clip)
            self._clip_index[key] = i
            self._bank_cost += cost
        return i

    def check_budget(self, anim_set, what: str = "anim_set") -> None:
        """Refuse an anim set whose new clips would take the bank past MAX_BANK_BYTES
        (BankBudgetError naming ``what``), computed from the clips' declared sizes before
        anything is added or allocated."""
        new = {id(c): c for c in (anim_set.clip(a) for a in anim_set.ids()) if id(c) not in self._clip_index}
        need = self._bank_cost + sum(self._cost(c) for c in new.values())
        if need > MAX_BANK_BYTES:
            raise BankBudgetError(f"{what}: clip bank", need, MAX_BANK_BYTES)

    def register(self, anim_set) -> None:
        """Put every clip of an anim set in the bank up front (optional; lookups add them).
        Rejected: a set that would take the bank past MAX_BANK_BYTES (BankBudgetError;
        nothing added)."""
        self.check_budget(anim_set)
        for anim_id in anim_set.ids():
            self.bank_index(anim_set.clip(anim_id))
        _ = self.bank

    def warm(self, anim_set, ids: Sequence[Any], gait_ids: Sequence[Any] | None = None) -> None:
        """Fill the caches a command reads, before the first command (a game's load): each
        of ``ids`` found by its own type and as an int (clip, rate, bank index, cursor
        template) and, given, a gait's five ``gait_ids`` (their entries). Caches only: a
        command finds the same values itself. In: ids the set has (every clip registered,
        so no bank index changes). Rejected: an id the set lacks (UnknownClip,
        UnknownAnimId, as a command would raise them)."""
        for m in ids:                       # both id types known first (a new type re-learns an entry)
            self._entry(anim_set, int(m))
            self._entry(anim_set, m)
        for m in ids:
            self._proto_of(self._entry(anim_set, m))
            self.rate_of(anim_set, m)
        if gait_ids is not None:
            self._entries_of(anim_set, gait_ids)

    def _known(self, anim_set, anim_id) -> list | None:
        """The cached [clip, rate or None, bank index or -1, cursor_proto or None] of an id found in ``anim_set`` before,
        or None (not found yet, or an id of a type the cache is not asked with: those take
        the checked path, which raises the errors)."""
        if anim_id.__class__ not in self._id_types:
            return None
        per = self._known_ids.get(id(anim_set))
        if per is None or per[0] is not anim_set or per[1] is not self.options.speeds:
            return None
        return per[2].get(anim_id)

    def _learn(self, anim_set, anim_id, clip: Clip) -> list:
        """Cache a found id: its clip (its rate on the first ``rate_of``, its bank index on
        its first cursor: caching adds no clip to the bank)."""
        per = self._known_ids.get(id(anim_set))
        speeds = self.options.speeds
        if per is None or per[0] is not anim_set or per[1] is not speeds:
            per = self._known_ids[id(anim_set)] = (anim_set, speeds, {})
        entry = [clip, None, -1, None]
        kind = anim_id.__class__
        if issubclass(kind, int) and kind is not bool:
            self._id_types.add(kind)
            per[2][anim_id] = entry
        return entry

    def _bank_of(self, entry: list) -> int:
        """The bank index of a cache entry's clip (added to the bank on first use)."""
        bank = entry[2]
        if bank < 0:
            bank = entry[2] = self.bank_index(entry[0])
        return bank

    def _proto_of(self, entry: list) -> tuple:
        """A cache entry's cursor_proto (its clip's bank index and proto kept in the entry
        after the first call)."""
        proto = entry[3]
        if proto is None:
            self._bank_of(entry)
            proto = entry[3] = cursor_proto(entry[0], self.stores.cursors.all_events)
        return proto

    def _cursor_of(self, entry: list, anim_id: int, flags: int = 0) -> Cursor:
        """A new cursor handle from a cache entry (``_known`` / ``_learn``)."""
        proto = self._proto_of(entry)
        c = Cursor.__new__(Cursor)
        c._fill(entry[0], entry[2], anim_id, int(flags), self.stores.cursors, proto)
        return c

    def _cursor_row_of(self, entry: list, anim_id: int, flags: int = 0) -> int:
        """``_cursor_of`` without the handle: the new cursor's row (anim.playback.cursor.cursor_row)."""
        proto = self._proto_of(entry)
        return cursor_row(self.stores.cursors, entry[2], anim_id, int(flags), proto)

    def _entry(self, anim_set, anim_id) -> list:
        """The cache entry of ``anim_id`` (found and cached on a miss: UnknownAnimId,
        UnknownClip as ``find`` raises them)."""
        hit = self._known(anim_set, anim_id)
        if hit is None:
            if isinstance(anim_id, str):
                anim_id = _ref(anim_set, anim_id)
                hit = self._known(anim_set, anim_id)
                if hit is not None:
                    return hit
            hit = self._learn(anim_set, anim_id, self._find_checked(anim_set, anim_id))
        return hit


    def _entries_of(self, anim_set, ids: Sequence[Any]) -> tuple[list, list, list, list]:
        """The cache entries (``_entry``) of ``ids`` found in ``anim_set``, their clips' bank
        indices, the ids as ints and their clips' cursor_proto (``_proto_of``), kept per set
        and ids (a gait's five, a direction's eight): ``_check_ids`` on a miss (its errors),
        nothing looked up again on a hit."""
        hit = self._entries_known(anim_set, ids)
        if hit is not None:
            return hit
        self._check_ids(anim_set, ids)
        entries = [self._entry(anim_set, i) for i in ids]
        banks = [self._bank_of(e) for e in entries]
        ints = [int(i) for i in ids]
        protos = [self._proto_of(e) for e in entries]
        if all(i.__class__ in self._id_types for i in ids):
            if self._gait_clips is None:
                self._gait_clips = {}
            self._gait_clips[(id(anim_set), *ids)] = (anim_set, entries, banks, ints, protos)
        return entries, banks, ints, protos

    def _entries_known(self, anim_set, ids: Sequence[Any]) -> tuple[list, list, list, list] | None:
        """``_entries_of`` when kept from before (its ids all found then), else None."""
        cache = self._gait_clips
        if cache is None:
            return None
        types = self._id_types
        for i in ids:
            if i.__class__ not in types:
                return None
        hit = cache.get((id(anim_set), *ids))
        if hit is None or hit[0] is not anim_set:
            return None
        return hit[1], hit[2], hit[3], hit[4]

    def _check_ids(self, anim_set, ids: Sequence[int]) -> None:
        """``find`` each id in order (the same errors), the ids found before by the cache."""
        per = self._known_ids.get(id(anim_set))
        if per is None or per[0] is not anim_set or per[1] is not self.options.speeds:
            for i in ids:
                self.find(anim_set, i)
            return
        known, types = per[2], self._id_types
        for i in ids:
            if i.__class__ not in types or i not in known:
                self.find(anim_set, i)

    def find(self, anim_set, anim_id: AnimRef) -> Clip:
        """The clip an id names in a set; UnknownClip when it has none (UnknownAnimId for
        an id outside the set's ids). Kept per set and id after the first look-up (an
        AnimSet is immutable); an id that is not an int (nor an IntEnum) is looked up and
        checked every time. Original: 0x00175080 CharacterInstance_GetAnim.
        """
        return self._entry(anim_set, anim_id)[0]

    @staticmethod
    def _find_checked(anim_set, anim_id: int) -> Clip:
        """``find`` through the set itself (no cache)."""
        clip = anim_set.clip(anim_id)
        if clip is None:
            raise UnknownClip(f"anim id {anim_id}: no clip in set {getattr(anim_set, 'name', '?')!r}")
        return clip

    def cursor(self, anim_set, anim_id: AnimRef, flags: int = 0) -> Cursor:
        """A new cursor on the clip ``anim_id`` (an id or a clip name) names in ``anim_set``."""
        if isinstance(anim_id, str):
            anim_id = _ref(anim_set, anim_id)
        return self._cursor_of(self._entry(anim_set, anim_id), anim_id, flags)

    def rate_of(self, anim_set, anim_id: AnimRef) -> float:
        """A single clip's rate: CfgAnimSpeeds by its id's range flags (0x00104a38).

        The flags are read from the set's range list records (+0x0e), once per set; the
        rate of an id already found (``find``) is kept with it.
        """
        if isinstance(anim_id, str):
            anim_id = _ref(anim_set, anim_id)
        hit = self._known(anim_set, anim_id)
        if hit is None:
            return self._rate_checked(anim_set, anim_id)
        r = hit[1]
        if r is None:
            r = hit[1] = self._rate_checked(anim_set, anim_id)
        return r

    def _rate_checked(self, anim_set, anim_id: int) -> float:
        """``rate_of`` through the range list (no cache)."""
        anim_id = _ref(anim_set, anim_id)             # (an id of another type: UnknownAnimId)
        flags = self._flags.get(id(anim_set))
        if flags is None or flags[0] is not anim_set:
            flags = self._flags[id(anim_set)] = (anim_set, anim_set.range_list.records["flags"])
        table = flags[1]
        if not 0 <= anim_id < len(table):
            return self.options.speeds.rate_for(int(anim_set.range(anim_id).flags))   # its own error
        return self.options.speeds.rate_for(int(table[anim_id]))

    def gait_speeds(self, anim_set, ids: Sequence[int]) -> tuple[float, ...]:
        """The speeds (m/s) of the looping gait clips ``ids`` (walk, jog, run, sprint) in a
        set: each clip's displacement length over its duration, divided by the rate its
        range flags give (anim.data.rates.gait_speed). Cached per set and ids, while the set
        and the rate table (``options.speeds``) are the same objects (new options with
        other rates: found again).

        Rejected: an id with no clip in the set (UnknownClip). Original: 0x00254078 (the
        human's walking speeds), 0x00101950 Anim_RootDisplacementLength.
        """
        key = (id(anim_set), tuple(int(i) for i in ids))
        hit = self._gait_speeds.get(key)
        rates = self.options.speeds
        if hit is not None and hit[0] is anim_set and hit[2] is rates:
            return hit[1]
        speeds = tuple(gait_speed(self.find(anim_set, i), self.rate_of(anim_set, i)) for i in key[1])
        self._gait_speeds[key] = (anim_set, speeds, rates)
        return speeds

