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

from enum import IntFlag
from typing import Sequence

import numpy as np

from . import f32 as F
from . import quat
from .clip import Clip, decode_positions, decode_rotations, key_frames
from .pose import DTYPE, NUM_TAGS, PoseBatch, TAG_BONE
from .skeleton import HUMANOID, NUM_BONES, REFERENCE_ROTATIONS, Skeleton

__all__ = ["CursorFlags", "ClipBank", "SLOT_VELOCITY", "SLOT_ROOT", "SLOT_BONE", "NUM_SLOTS",
           "key_frame"]

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


class ClipBank:
    """Decoded clips in flat arrays for batched sampling (build once, read-only after).

    In: a sequence of Clips and the skeleton whose bind height section B's z is added to.
    ``index_of(clip)`` gives a clip's index (by identity). Rejected: an empty sequence is
    allowed (only the sentinels exist); a non-Clip raises TypeError.
    """

    __slots__ = ("clips", "skeleton", "frames", "durations", "base", "tlen", "ftable",
                 "kval", "kdiff", "kstart", "kinv", "ktag", "has_velocity", "has_translation",
                 "_index", "_sent_vel", "_sent_root", "_sent_bone")

    def __init__(self, clips: Sequence[Clip], skeleton: Skeleton = HUMANOID):
        self.clips = list(clips)
        self.skeleton = skeleton
        self._index = {id(c): i for i, c in enumerate(self.clips)}
        for c in self.clips:
            if not isinstance(c, Clip):
                raise TypeError(f"ClipBank: expected Clip, got {type(c).__name__}")

        vals, diffs, starts, invs, tags = [], [], [], [], []
        nk = 0

        def add_keys(val, diff, start, inv, tag):
            nonlocal nk
            vals.append(val); diffs.append(diff); starts.append(start); invs.append(inv); tags.append(tag)
            first = nk
            nk += len(start)
            return first

        # Sentinels: the defaults a slot without a channel takes (tagged).
        z4 = np.zeros((1, 4), DTYPE)
        self._sent_vel = add_keys(z4, z4, np.zeros(1, DTYPE), np.zeros(1, DTYPE), np.ones(1, bool))
        self._sent_root = add_keys(z4, z4, np.zeros(1, DTYPE), np.zeros(1, DTYPE), np.ones(1, bool))
        ref = REFERENCE_ROTATIONS.copy()
        ref[0] = (0, 0, 0, 1)                     # bone 0 without a channel is the identity
        self._sent_bone = add_keys(ref, np.zeros_like(ref), np.zeros(NUM_BONES, DTYPE),
                                   np.zeros(NUM_BONES, DTYPE), np.ones(NUM_BONES, bool))

        n = len(self.clips)
        self.frames = np.array([c.frames for c in self.clips], dtype=np.int64)
        self.durations = np.array([c.duration for c in self.clips], dtype=DTYPE)
        self.base = np.zeros((n, NUM_SLOTS), dtype=np.int64)
        self.tlen = np.ones((n, NUM_SLOTS), dtype=np.int64)
        self.has_velocity = np.zeros(n, bool)
        self.has_translation = np.zeros(n, bool)
        tables = [np.array([self._sent_vel], np.int32), np.array([self._sent_root], np.int32)]
        tables += [np.array([self._sent_bone + b], np.int32) for b in range(NUM_BONES)]
        sentinel_base = np.cumsum([0] + [1] * NUM_SLOTS)[:-1]
        ntab = NUM_SLOTS

        for ci, clip in enumerate(self.clips):
            chans = {SLOT_VELOCITY: clip.velocity, SLOT_ROOT: clip.translation}
            for bone, keys in clip.rotations.items():
                chans[SLOT_BONE + bone] = keys
            self.has_velocity[ci] = clip.velocity is not None and len(clip.velocity) > 0
            self.has_translation[ci] = clip.translation is not None and len(clip.translation) > 0
            for slot in range(NUM_SLOTS):
                keys = chans.get(slot)
                if keys is None or len(keys) == 0:
                    self.base[ci, slot] = sentinel_base[slot]
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
                diff = (nxt - v).astype(DTYPE)
                inv = np.zeros(len(keys), DTYPE)
                if len(keys) > 1:
                    inv[:-1] = 1.0 / keys["delta"][1:].astype(DTYPE)
                if slot == SLOT_BONE:               # bone 0: the key in force, never interpolated
                    inv[:] = 0
                first = add_keys(v, diff, start.astype(DTYPE), inv, np.zeros(len(keys), bool))
                length = int(max(start[-1], clip.frames)) + 1
                table = (np.searchsorted(start, np.arange(length), side="right") - 1).astype(np.int32) + first
                self.base[ci, slot] = ntab
                self.tlen[ci, slot] = length
                tables.append(table)
                ntab += length

        self.ftable = np.concatenate(tables)
        self.kval = np.ascontiguousarray(np.concatenate(vals).T)      # (4, K)
        self.kdiff = np.ascontiguousarray(np.concatenate(diffs).T)    # (4, K)
        self.kstart = np.concatenate(starts).astype(DTYPE)
        self.kinv = np.concatenate(invs).astype(DTYPE)
        self.ktag = np.concatenate(tags)
        for a in (self.base, self.tlen, self.ftable, self.kval, self.kdiff, self.kstart, self.kinv,
                  self.ktag, self.frames, self.durations):
            a.setflags(write=False)

    def __len__(self) -> int:
        return len(self.clips)

    def index_of(self, clip: Clip) -> int:
        """The bank index of ``clip`` (by identity); KeyError when it is not in the bank."""
        return self._index[id(clip)]

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
        x = F.mul_v(time, np.float32(F.FRAMES_PER_SECOND))        # the FPU's t x 30
        f = key_frame(x)                                            # (n,)
        base = self.base[clip].T                                    # (36, n)
        tlen = self.tlen[clip].T
        key = self.ftable[base + np.minimum(f[None, :], tlen - 1)]  # (36, n)
        no_vel = (flags & CursorFlags.NO_VELOCITY) != 0
        no_turn = (flags & CursorFlags.NO_TURN) != 0
        if no_vel.any():
            key[SLOT_VELOCITY] = np.where(no_vel, self._sent_vel, key[SLOT_VELOCITY])
        if no_turn.any():
            key[SLOT_BONE] = np.where(no_turn, self._sent_bone, key[SLOT_BONE])
        u = (x[None, :] - self.kstart[key]) * self.kinv[key]         # (36, n)
        val = self.kval[:, key] + self.kdiff[:, key] * u            # (4, 36, n)
        sl = slice(start, start + n)
        out.vel[:, sl] = val[:3, SLOT_VELOCITY] * rate
        out.root[:, sl] = val[:3, SLOT_ROOT]
        out.root[2, sl] += np.float32(self.skeleton.bind_height)
        out.rot[:, 1:, sl] = quat.normalise(val[:, SLOT_BONE + 1:])
        out.rot[:, 0, sl] = quat.scale_turn(val[:, SLOT_BONE], rate, TURN_EPSILON)
        out.tag[:, sl] = self.ktag[key]
        return out
