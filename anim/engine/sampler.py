"""The clip bank and the batched sampler: many (clip, time, rate, flags) into poses at once.

``ClipBank`` decodes clips once, at load, into flat key arrays prepared for gathers:
each key's value, its step to the next key (the rotation's sign flip already done),
1 / the next key's delta (0 for a channel's last key, and for bone 0, which is never
interpolated), and per-channel frame -> key tables. Every clip has 36 channel slots
(velocity, translation, bones 0-33); a slot the clip leaves out points at a sentinel
key holding the default (zero velocity, the pelvis at its bind height, the reference
rotation, the identity for bone 0), tagged as a default.

``ClipBank.sample`` is then gathers and arithmetic, whatever the batch size.

Spec: "Playing a clip", "Root motion", "The key in force", "The pose".
Original: 0x00104ce0 AnimCursor_SamplePose, 0x00104110 AnimCursor_Step.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from enum import IntFlag
from typing import Any, Sequence

import numpy as np

from scuffle.anim.maths import f32 as F
from scuffle.anim.maths import quat
from scuffle.anim.data.clip import Clip, decode_positions, decode_rotations, key_frames
from scuffle.anim.base.limits import BudgetError
from scuffle.anim.maths.pose import DTYPE, NUM_TAGS, PoseBatch, set_tag_bits
from scuffle.anim.maths.skeleton import HUMANOID, NUM_BONES, REFERENCE_ROTATIONS, Skeleton

__all__ = ["CursorFlags", "ClipBank", "SLOT_VELOCITY", "SLOT_ROOT", "SLOT_BONE", "NUM_SLOTS",
           "key_frame", "BankBudgetError", "MAX_BANK_BYTES", "clip_rows", "clip_keys", "clip_bytes", "bank_bytes"]

SLOT_VELOCITY = 0
SLOT_ROOT = 1
SLOT_BONE = 2
NUM_SLOTS = 2 + NUM_BONES
assert NUM_SLOTS == NUM_TAGS
# w within this of 1 is "no turn": the root turn's rate slerp is skipped.
TURN_EPSILON = 5e-7


class CursorFlags(IntFlag):
    """WarAnimInstance +0x1e (set from the task flags).

    Original: 0x001041f8 AnimCursor_Init, 0x00104ce0 (reads), 0x00101dd8 (events muted).
    """

    NONE = 0
    NO_VELOCITY = 0x1
    NO_TURN = 0x2
    MUTED = 0x10


def key_frame(x: np.ndarray) -> np.ndarray:
    """The frame whose key is in force: the nearest whole frame, a tie going to the lower.

    In: frames x = t x 30 (>= 0). Out: int64 ceil(x - 0.5), at least 0.
    """
    return np.maximum(np.ceil(np.asarray(x, dtype=np.float64) - 0.5), 0).astype(np.int64)


# The memory budget of one clip bank (docs/tools.md, "Limits"). A clip's frame table has
# one row of 36 key indices per frame, F + 1 rows (more when a channel's keys run past F),
# whatever its channels: a clip of F = 65,535 with no channel costs 65,536 rows. Each row
# is 8 bytes a slot in the bank and again in the pose kernels' key-major copy, plus its
# index into the key rows (``frow``); each key costs its value, slope, start and tag here
# and in the kernels' copy, plus its 8 bytes in the clip. The key rows (``fkeys``,
# ``ftag``: bones 0-33's keys of a frame, frame-major) cost KEY_ROW_BYTES each, one for each
# run of frames whose bones' keys are the same: at most one per frame, and at most one per
# key plus the clip's first (a key starts a run). The budget is checked on these declared
# sizes before anything is allocated.
BANK_ROW_BYTES = 2 * NUM_SLOTS * 8 + 8
BANK_KEY_BYTES = 80
KEY_ROW_FIELDS = 9                  # fkeys' rows: value x, y, z, w, slope x, y, z, w, start frame
KEY_ROW_BYTES = KEY_ROW_FIELDS * NUM_BONES * 4 + NUM_BONES
MAX_BANK_BYTES = 256 << 20


class BankBudgetError(BudgetError):
    """A set of clips whose clip bank would need more than MAX_BANK_BYTES (a ValueError)."""


def _channels(clip: Clip):
    yield clip.velocity
    yield clip.translation
    yield from clip.rotations.values()


# clip_rows and clip_keys of the clips alive, by identity (a clip is read-only once built,
# as its anim set is): every Game that loads a set sizes its clips three times (the
# budget, the bank index, the bank), about 0.1 ms a clip. Weak: a clip's entry goes with it.
_SIZES: weakref.WeakKeyDictionary[Clip, tuple[int, int]] = weakref.WeakKeyDictionary()


def _sizes(clip: Clip) -> tuple[int, int]:
    """(clip_rows, clip_keys) of ``clip``, through the memo."""
    known = _SIZES.get(clip)
    if known is not None:
        return known
    length = clip.frames + 1
    keys = 0
    for chan in _channels(clip):
        if chan is not None and len(chan):
            length = max(length, int(chan["delta"].sum(dtype=np.int64)) + 1)
            keys += len(chan)
    _SIZES[clip] = (length, keys)
    return length, keys


def clip_rows(clip: Clip) -> int:
    """The rows a clip takes in a bank's frame table: F + 1, or one past its last key's frame
    when a channel runs longer (computed from the declared deltas, in int64)."""
    return _sizes(clip)[0]


def clip_keys(clip: Clip) -> int:
    """The keys a clip adds to a bank (every non-empty channel's)."""
    return _sizes(clip)[1]


def clip_bytes(clip: Clip, rows: int | None = None) -> int:
    """The bytes ``clip`` adds to a bank (its frame table's rows, its keys and at most
    min(rows, keys + 1) key rows), from its declared sizes. ``rows``: its clip_rows when known."""
    rows = clip_rows(clip) if rows is None else rows
    keys = clip_keys(clip)
    return BANK_ROW_BYTES * rows + BANK_KEY_BYTES * keys + KEY_ROW_BYTES * min(rows, keys + 1)


# the sentinels' keys, in every bank
BANK_BASE_BYTES = BANK_KEY_BYTES * NUM_SLOTS


def bank_bytes(clips: Sequence[Clip], rows: Sequence[int] | None = None) -> int:
    """The bytes a bank of ``clips`` needs (frame tables, keys and key rows, every layout):
    what MAX_BANK_BYTES is checked against. ``rows``: the clips' clip_rows when known."""
    rows = [clip_rows(c) for c in clips] if rows is None else rows
    return BANK_BASE_BYTES + sum(clip_bytes(c, r) for c, r in zip(clips, rows))


class _Scratch:
    """Preallocated work arrays for up to ``cap`` samples (freeing and taking buffers
    again costs page faults that double the time)."""

    __slots__ = ("cap", "keys", "dx", "val", "n2", "tags")

    def __init__(self, cap: int):
        self.cap = cap
        self.keys = np.empty((NUM_SLOTS, cap), np.intp)
        self.dx = np.empty((NUM_SLOTS, cap), DTYPE)
        self.val = np.empty((4, NUM_SLOTS, cap), DTYPE)
        self.n2 = np.empty((NUM_BONES, cap), DTYPE)
        self.tags = np.empty((NUM_SLOTS, cap), bool)


# A bank's tables, once built, are read-only: a bank of the same clips (the same Clip
# objects, in the same order), skeleton and pose options shares them instead of decoding
# the clips again (10-30 ms a bank: every Game that loads a shared set, such as the demo
# set, builds one). The most recently built are kept, at most BANKS_KEPT and BANKS_KEPT_BYTES
# of tables (bank_bytes) in all, each with its clips (so that the ids in the key stay
# theirs); a bank's scratch and pose tables stay its own.
BANKS_KEPT = 8
BANKS_KEPT_BYTES = 64 << 20
_SHARED_TABLES = ("frames", "durations", "row0", "rows", "ftab", "kval", "kslope", "kstart", "ktag", "frow",
                  "fkeys", "ftag", "has_velocity", "has_translation", "animated", "_index", "_sent_vel",
                  "_sent_root", "_sent_bone", "_live_bones", "_dead_bones", "_ref_rot")
_BUILT: OrderedDict[tuple, tuple[tuple, dict]] = OrderedDict()     # key -> ((clips, skeleton, bytes), tables)
_BUILT_LOCK = threading.Lock()


class ClipBank:
    """Decoded clips in flat arrays for batched sampling (build once, read-only after).

    Layout (structure of arrays, built at load): every key of every channel has its
    value (``kval``, 4 rows x, y, z, w; positions have w = 0), its slope per frame toward
    the next key (``kslope`` = the step to the next key, sign flip done, x 1 / its delta;
    0 for a channel's last key and for bone 0), its start frame and its default tag.
    Each clip has a frame-major key table: row ``row0[clip] + f`` holds, for the 36
    slots, the key in force at frame f (``ftab``, shape (36, rows)). Beside it, for the
    pose kernels' sample, bones 0-33's keys themselves frame-major: ``frow[row]`` is the
    frame's key row, ``fkeys[key row]`` (9 x 34,) float32 the bones' values x, then y, z,
    w, their slopes x, y, z, w and their start frames, 34 bones contiguous each, and
    ``ftag[key row]`` (34,) their default tags (a tagged bone's value is the default
    rotation itself); consecutive frames whose bones hold the same keys share a key row.
    A sample then reads one unit-stride row that vectorises instead of gathering each
    bone's key through the frame table.

    In: a sequence of Clips and the skeleton whose bind height section B's z is added to;
    ``tag_bits``: the poses carry each value's default tag in the lowest bit of its y
    float too (L102), ``motion_entry``: bone-transform entry 0 holds the motion channels
    (L116); both the original's by default (PlayerOptions.tag_bits, .motion_entry).
    ``index_of(clip)`` gives a clip's index (by identity). A bank of clips, skeleton and
    options built before (BANKS_KEPT) shares that bank's read-only tables. Rejected: a
    non-Clip (TypeError); clips whose tables would need more than MAX_BANK_BYTES
    (``bank_bytes``), before any table is allocated (BankBudgetError, a ValueError).
    """

    __slots__ = ("clips", "skeleton", "frames", "durations", "row0", "rows", "ftab",
                 "kval", "kslope", "kstart", "ktag", "frow", "fkeys", "ftag", "has_velocity", "has_translation",
                 "animated", "_index", "_sent_vel", "_sent_root", "_sent_bone", "_scratch",
                 "_live_bones", "_dead_bones", "_ref_rot", "tag_bits", "motion_entry", "pose_tables")

    def __init__(self, clips: Sequence[Clip], skeleton: Skeleton = HUMANOID, tag_bits: bool = True,
                 motion_entry: bool = True):
        self.clips = list(clips)
        self.skeleton = skeleton
        # how its poses are written (PlayerOptions.tag_bits, .motion_entry; the original's by default)
        self.tag_bits = bool(tag_bits)
        self.motion_entry = bool(motion_entry)
        # its tables in the pose kernels' layout (anim.engine.plan.pose_tables, built on first use;
        # kept here, so that they go with the bank and two Games never rebuild each other's)
        self.pose_tables: Any = None                # an anim.engine.plan.PoseTables once built (plan imports this module)
        self._index = {id(c): i for i, c in enumerate(self.clips)}
        for c in self.clips:
            if not isinstance(c, Clip):
                raise TypeError(f"ClipBank: expected Clip, got {type(c).__name__}")
        self._scratch: _Scratch | None = None

        lengths = [clip_rows(c) for c in self.clips]
        need = bank_bytes(self.clips, lengths)
        if need > MAX_BANK_BYTES:       # refused before any table is allocated
            raise BankBudgetError("clip bank", need, MAX_BANK_BYTES)
        key = (tuple(map(id, self.clips)), id(skeleton), self.tag_bits, self.motion_entry)
        with _BUILT_LOCK:
            built = _BUILT.get(key)
            if built is not None:
                _BUILT.move_to_end(key)
        if built is not None and built[0][1] is skeleton and all(a is b for a, b in zip(built[0][0], self.clips)):
            for name, value in built[1].items():
                setattr(self, name, value)
            return
        self._build(lengths)
        if need > BANKS_KEPT_BYTES:
            return
        with _BUILT_LOCK:
            _BUILT[key] = ((tuple(self.clips), skeleton, need), {name: getattr(self, name) for name in _SHARED_TABLES})
            kept = sum(entry[0][2] for entry in _BUILT.values())
            while len(_BUILT) > BANKS_KEPT or kept > BANKS_KEPT_BYTES:
                kept -= _BUILT.popitem(last=False)[1][0][2]

    def _build(self, lengths: list[int]) -> None:
        """The tables of the class docstring, from ``self.clips`` (each clip's ``clip_rows``
        in ``lengths``); every one read-only at the end."""
        # Every array is allocated once at its final size and filled clip by clip (no
        # lists of per-clip tables joined afterwards: the peak is the bank itself).
        nkeys = 2 + NUM_BONES + sum(clip_keys(c) for c in self.clips)
        self.kval = np.zeros((4, nkeys), DTYPE)
        self.kslope = np.zeros((4, nkeys), DTYPE)
        self.kstart = np.zeros(nkeys, DTYPE)
        self.ktag = np.zeros(nkeys, bool)
        nk = 0

        def add_keys(val, slope, start, tag):
            nonlocal nk
            first, nk = nk, nk + len(start)
            self.kval[:, first:nk] = val.T
            self.kslope[:, first:nk] = slope.T
            self.kstart[first:nk] = start
            self.ktag[first:nk] = tag
            return first

        # Sentinels: the defaults a slot without a channel takes (tagged).
        z4 = np.zeros((1, 4), DTYPE)
        self._sent_vel = add_keys(z4, z4, np.zeros(1, DTYPE), np.ones(1, bool))
        self._sent_root = add_keys(z4, z4, np.zeros(1, DTYPE), np.ones(1, bool))
        ref = REFERENCE_ROTATIONS.copy()
        ref[0] = (0, 0, 0, 1)                     # bone 0 without a channel is the identity
        self._sent_bone = add_keys(ref, np.zeros_like(ref), np.zeros(NUM_BONES, DTYPE),
                                   np.ones(NUM_BONES, bool))
        sentinel = np.array([self._sent_vel, self._sent_root] + [self._sent_bone + b for b in range(NUM_BONES)],
                            dtype=np.intp)

        n = len(self.clips)
        self.frames = np.array([c.frames for c in self.clips], dtype=np.int64)
        self.durations = np.array([c.duration for c in self.clips], dtype=DTYPE)
        self.row0 = np.zeros(n, dtype=np.int64)
        self.rows = np.ones(n, dtype=np.int64)
        self.has_velocity = np.zeros(n, bool)
        self.has_translation = np.zeros(n, bool)
        self.ftab = np.empty((NUM_SLOTS, sum(lengths)), np.intp)
        nrow = 0
        for ci, clip in enumerate(self.clips):
            chans: dict[int, np.ndarray | None] = {SLOT_VELOCITY: clip.velocity, SLOT_ROOT: clip.translation}
            for bone, rot_keys in clip.rotations.items():
                chans[SLOT_BONE + bone] = rot_keys
            self.has_velocity[ci] = clip.velocity is not None and len(clip.velocity) > 0
            self.has_translation[ci] = clip.translation is not None and len(clip.translation) > 0
            length = lengths[ci]
            table = self.ftab[:, nrow:nrow + length]
            table[:] = sentinel[:, None]
            for slot, keys in chans.items():
                if keys is None or len(keys) == 0:
                    continue
                start = key_frames(keys)
                if slot < SLOT_BONE:
                    v = np.zeros((len(keys), 4), DTYPE)
                    v[:, :3] = decode_positions(keys)
                    nxt = np.vstack([v[1:], v[-1:]])
                else:
                    v = decode_rotations(keys)
                    nxt = np.vstack([v[1:], v[-1:]])
                    dot = np.sum(v * nxt, axis=1)
                    nxt = np.where((dot < 0)[:, None], -nxt, nxt)
                inv = np.zeros(len(keys), DTYPE)
                if len(keys) > 1:
                    inv[:-1] = 1.0 / keys["delta"][1:].astype(DTYPE)
                if slot == SLOT_BONE:               # bone 0: the key in force, never interpolated
                    inv[:] = 0
                slope = ((nxt - v) * inv[:, None]).astype(DTYPE)
                first = add_keys(v, slope, start.astype(DTYPE), np.zeros(len(keys), bool))
                table[slot] = np.searchsorted(start, np.arange(length), side="right") - 1 + first
            self.row0[ci] = nrow
            self.rows[ci] = length
            nrow += length

        self.frow, self.fkeys, self.ftag = self._key_rows()
        # Slots no clip of the bank animates always hold their default: the sampler fills
        # them without gathers.
        self.animated = np.zeros(NUM_SLOTS, bool)
        self.animated[:2] = True
        for clip in self.clips:
            for bone in clip.rotations:
                self.animated[SLOT_BONE + bone] = True
        self.animated[SLOT_BONE] = True
        self._live_bones = np.flatnonzero(self.animated[SLOT_BONE + 1:]) + 1      # bones 1-33
        self._dead_bones = np.flatnonzero(~self.animated[SLOT_BONE + 1:]) + 1
        self._ref_rot = REFERENCE_ROTATIONS.astype(DTYPE)
        for name in _SHARED_TABLES:
            a = getattr(self, name)
            if isinstance(a, np.ndarray):
                a.setflags(write=False)

    def _key_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bones 0-33's keys frame-major (the class docstring's ``frow``, ``fkeys``, ``ftag``):
        a key row for each clip's first frame and each frame where a bone's key changes."""
        keys = self.ftab[SLOT_BONE:]                                # (34, rows)
        nrow = keys.shape[1]
        new = np.ones(nrow, bool)
        if nrow > 1:
            np.any(keys[:, 1:] != keys[:, :-1], axis=0, out=new[1:])
        new[self.row0] = True
        frow = np.cumsum(new, dtype=np.int64) - 1
        k = keys[:, new].T                                          # (key rows, 34)
        fkeys = np.empty((k.shape[0], KEY_ROW_FIELDS, NUM_BONES), DTYPE)
        for c in range(4):
            np.take(self.kval[c], k, out=fkeys[:, c])
            np.take(self.kslope[c], k, out=fkeys[:, 4 + c])
        np.take(self.kstart, k, out=fkeys[:, 8])
        return frow, fkeys.reshape(k.shape[0], KEY_ROW_FIELDS * NUM_BONES), np.ascontiguousarray(self.ktag[k])

    def __len__(self) -> int:
        return len(self.clips)

    def index_of(self, clip: Clip) -> int:
        """The bank index of ``clip`` (by identity); KeyError when it is not in the bank."""
        return self._index[id(clip)]

    def _work(self, n: int) -> _Scratch:
        sc = self._scratch
        if sc is None or sc.cap < n:
            sc = self._scratch = _Scratch(max(n, 2 * (sc.cap if sc else 0), 64))
        return sc

    def sample(self, clip: np.ndarray, time: np.ndarray, rate: np.ndarray, flags: np.ndarray,
               out: PoseBatch | None = None, start: int = 0) -> PoseBatch:
        """Sample n cursors into poses ``out[start:start + n]``.

        In: (n,) arrays of bank clip indices, cursor times (s, float32), rates and
        CursorFlags. Each channel takes its key in force (the key at or before the nearest
        whole frame, a tie going to the lower) carried toward the next key by
        t = (frame - key) / delta, not clamped; the last key holds. Rotations nlerp,
        positions lerp. Bone 0 is the key in force, its turn scaled by the rate (a slerp
        from the identity, skipped at rate 1 or w within 5e-7 of 1); the velocity is
        multiplied by the rate; flags 0x1 / 0x2 switch them off (tagged defaults);
        section B's z is added to the bind height.
        Rejected: clip indices outside the bank (IndexError).
        Original: 0x00104ce0 AnimCursor_SamplePose.
        """
        clip = np.asarray(clip, dtype=np.int64)
        n = clip.shape[0]
        if out is None:
            out = PoseBatch.empty(start + n)
        if n == 0:
            return out
        if clip.min() < 0 or clip.max() >= len(self.clips):
            raise IndexError(f"clip index out of range 0-{len(self.clips) - 1}")
        time = np.asarray(time, dtype=DTYPE)
        rate = np.broadcast_to(np.asarray(rate, dtype=DTYPE), (n,))
        flags = np.broadcast_to(np.asarray(flags, dtype=np.int64), (n,))
        sc = self._work(n)
        x = F.mul_v(time, np.float32(F.FRAMES_PER_SECOND))        # the FPU's t x 30
        f = key_frame(x)                                            # (n,)
        row = self.row0[clip] + np.minimum(f, self.rows[clip] - 1)
        keys = sc.keys[:, :n]
        np.take(self.ftab, row, axis=1, out=keys, mode="clip")     # (36, n)
        no_vel = (flags & CursorFlags.NO_VELOCITY) != 0
        no_turn = (flags & CursorFlags.NO_TURN) != 0
        if no_vel.any():
            keys[SLOT_VELOCITY] = np.where(no_vel, self._sent_vel, keys[SLOT_VELOCITY])
        if no_turn.any():
            keys[SLOT_BONE] = np.where(no_turn, self._sent_bone, keys[SLOT_BONE])
        live = self._live_bones
        nl = len(live)
        slots = np.empty(3 + nl, np.intp)                           # velocity, root, bone 0, live bones
        slots[:3] = (SLOT_VELOCITY, SLOT_ROOT, SLOT_BONE)
        slots[3:] = SLOT_BONE + live
        k = keys if nl == NUM_BONES - 1 else keys[slots]
        m = k.shape[0]
        dx = sc.dx[:m, :n]
        np.take(self.kstart, k, out=dx, mode="clip")
        np.subtract(x, dx, out=dx)                                  # frames past the key
        val = sc.val[:, :m, :n]
        for c in range(4):
            vc = val[c]
            np.take(self.kslope[c], k, out=vc, mode="clip")
            vc *= dx
            vc += np.take(self.kval[c], k, mode="clip")
        sl = slice(start, start + n)
        np.multiply(val[:3, 0], rate, out=out.vel[:, sl])
        out.root[:, sl] = val[:3, 1]
        out.root[2, sl] += np.float32(self.skeleton.bind_height)
        rot = val[:, 3:]                                            # (4, live, n)
        n2 = sc.n2[:nl, :n]
        np.multiply(rot[0], rot[0], out=n2)
        for c in (1, 2, 3):
            n2 += rot[c] * rot[c]
        np.sqrt(n2, out=n2)
        n2[n2 == 0] = 1                                             # never NaN (a zero quaternion)
        if nl == NUM_BONES - 1:
            np.divide(rot, n2, out=out.rot[:, 1:, sl])
        else:
            out.rot[:, live, sl] = rot / n2
            dead = self._dead_bones                                 # never animated: the default
            out.rot[:, dead, sl] = self._ref_rot[dead].T[:, :, None]
        out.rot[:, 0, sl] = quat.scale_turn(val[:, 2], rate, TURN_EPSILON)
        np.take(self.ktag, keys, out=out.tag[:, sl], mode="clip")
        if self.tag_bits:
            set_tag_bits(out, sl)
        return out
