"""The clip codec: descriptor (chunk 0x02) and keyframes (chunk 0x00), both ways.

``parse_clip(descriptor, keyframes) -> Clip`` reads the original's bytes, validates
every field, and keeps what a byte-exact re-encode needs (key byte +1, the vtable
placeholder, the keyframe pointer, the reference count and the 8 trailing
descriptor bytes). ``encode_clip(clip) -> (descriptor, keyframes)`` writes them back:
``encode_clip(parse_clip(d, k)) == (d, k)``.

``author_clip`` builds a clip from decoded keys (absolute frames, metres, unit
quaternions); it quantises and splits gaps over 255 frames.

Spec: "Data" (Descriptor, Keyframes, Events). Layouts: docs/formats.md.
Original: 0x001041f8 AnimCursor_Init (the channel rule), 0x00101dd8 (events).
"""
from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable, Mapping, Sequence, cast

import numpy as np

from scuffle.anim.maths import f32 as _f32

__all__ = [
    "ClipFormatError", "ClipAuthoringError", "Clip", "Event", "EventType",
    "KEY_DTYPE", "EVENT_DTYPE", "DESCRIPTOR_SIZE", "KEY_SIZE", "EVENT_SIZE",
    "NUM_BONES", "VTABLE_PLACEHOLDER", "POS_SCALE", "ROT_SCALE", "MAX_FRAMES",
    "parse_clip", "encode_clip", "reachable_count", "key_frames", "author_clip", "decode_positions", "decode_rotations",
    "quantise_positions", "quantise_rotations", "mask_bones",
]

DESCRIPTOR_SIZE = 80
KEY_SIZE = 8
EVENT_SIZE = 24
NUM_BONES = 34
MASK_BYTES = 5
NAME_SIZE = 30
VTABLE_PLACEHOLDER = 0x0045DE40
# The most frames a clip can have: the cursor's frame (WarAnimInstance +0x1c) is 16 bits
# wide (the u16 flags follow at +0x1e). The disc's clips run 1 to 680 frames.
MAX_FRAMES = 0xFFFF

KEY_DTYPE = np.dtype([("delta", "u1"), ("extra", "u1"), ("x", "<i2"), ("y", "<i2"), ("z", "<i2")])
EVENT_DTYPE = np.dtype([
    ("frame", "<u2"), ("type", "<u2"), ("arg0", "<u2"), ("arg1", "<u2"),
    ("pos", "<i2", (3,)), ("rot", "<i2", (3,)), ("tail", "u1", (4,)),
])
assert KEY_DTYPE.itemsize == KEY_SIZE and EVENT_DTYPE.itemsize == EVENT_SIZE

# Position keys: x / 1023, y / 1023, z / 2047 metres (float32 constants).
POS_SCALE = np.array([1.0 / 1023.0, 1.0 / 1023.0, 1.0 / 2047.0], dtype=np.float32)
# Rotation keys: x, y, z times the constant 0x38000100 = 2^-15 (1 + 2^-15), about 1/32767.
ROT_SCALE = struct.unpack("<f", struct.pack("<I", 0x38000100))[0]

_DESC = struct.Struct("<I f f f H H I H H I 5s 30s B I 8s")
assert _DESC.size == DESCRIPTOR_SIZE


class ClipFormatError(ValueError):
    """A clip chunk that breaks the format; the message names the field and byte offset."""

    def __init__(self, chunk: str, offset: int, field_name: str, problem: str):
        self.chunk, self.offset, self.field, self.problem = chunk, offset, field_name, problem
        super().__init__(f"{chunk} chunk, {field_name} at byte {offset} (0x{offset:x}): {problem}")


class ClipAuthoringError(ValueError):
    """Authored keys that cannot be written in the clip format (names the channel and key)."""


class EventType(IntEnum):
    """Event types the spec names (Data: Events; Paired tasks; Coney's held flags)."""

    PARTNER_PLACE = 0x08
    EFFECT_9 = 0x09
    EFFECT_10 = 0x0A
    SOUND = 0x0B
    MESSAGE_12 = 0x0C
    CAMERA_SHAKE = 0x20
    NAMED_EFFECT = 0x21
    EFFECT_22 = 0x22
    HELD_OPEN = 0x2C       # clears held 0x1, sets 0x2
    HELD_CLOSE = 0x2D      # clears held 0x7, sets 0x4
    SLOWMO_ON = 0x2E
    SLOWMO_OFF = 0x2F
    POWER_CAMERA_BEGIN = 0x39
    POWER_CAMERA_CUT = 0x3A
    POWER_CAMERA_SHOT = 0x3B
    POWER_CAMERA_END = 0x3D
    START_MOVE = 0x40
    HELD_REPLACE = 0x48    # all held bits replaced by 0x40000


# Types Anim_FireFrameEvents (0x00101dd8) never dispatches: type 8, the partner's place in
# a paired clip, is read from the clip's data by 0x00101558 ("Paired tasks" L247, L249).
UNDISPATCHED = frozenset({int(EventType.PARTNER_PLACE)})

# Types that pass the 32-bit word at +8 instead of a position (lw a1,0x8(s1)).
_WORD_TYPES = (EventType.SOUND, EventType.MESSAGE_12)


@dataclass(frozen=True, slots=True)
class Event:
    """One decoded 24-byte event.

    ``position`` is (x/1023, y/1023, z/2047) m; ``rotation`` the quaternion x, y, z
    (x ROT_SCALE). ``word`` is the u32 at +8 for types 11/12 (for 0x3a, the f32 there
    is ``fov``); ``code`` the three-letter code at +0x14 for type 0x21.
    """

    frame: int
    type: int
    args: tuple[int, int]
    position: tuple[float, float, float]
    rotation: tuple[float, float, float]
    raw_pos: tuple[int, int, int]
    raw_rot: tuple[int, int, int]
    tail: bytes
    word: int | None = None
    code: str | None = None
    fov: float | None = None

    @property
    def name(self) -> str:
        """The type's name: an EventType name, ``sub_`` + code for 0x21, else ``type_0x..``."""
        if self.type == EventType.NAMED_EFFECT and self.code is not None:
            return "sub_" + self.code
        try:
            return EventType(self.type).name
        except ValueError:
            return f"type_0x{self.type:02x}"

    def typed(self) -> dict:
        """The fields the spec names for this event's type ("Data: Events", "Event types
        documented elsewhere", "Paired tasks"), by name; unknown types give {}.

        8 partner place (position in the attacker's frame, rotation); 9, 10 effects
        (position, rotation); 0x21 named effect (``effect`` sub_ + code, ``bone`` +0x06);
        11 ``sound`` (the word at +8, an id when +0xa-+0xb are 0) and 12 ``value``; 0x20
        camera shake ``level`` (the u32 at +4); 0x2e / 0x2f slow motion ``on``; 0x39 power
        camera begin ``mode`` (s16 +6: 1 one shot, else 2 alternating); 0x3a cut ``fov``
        (f32 at +8, -1.0 meaning 50 degrees); 0x3b add a shot ``slot`` (s16 +6, 0-7),
        ``check`` (s16 +4, 0 on the disc), position and rotation; 0x3d end; 0x40 start a
        move; 0x2c / 0x2d / 0x48 the held-flag changes (``clear`` / ``set`` bits).
        Original: 0x00101dd8 Anim_FireFrameEvents and the handlers it cites.
        """
        t = self.type
        s16 = lambda u: u - 0x10000 if u >= 0x8000 else u          # noqa: E731
        if t == EventType.PARTNER_PLACE:
            return {"kind": "partner_place", "place": self.position, "rotation": self.rotation}
        if t in (EventType.EFFECT_9, EventType.EFFECT_10, EventType.EFFECT_22):
            return {"kind": "effect", "position": self.position, "rotation": self.rotation}
        if t == EventType.NAMED_EFFECT:
            return {"kind": "named_effect", "effect": self.name, "bone": self.args[1],
                    "position": self.position, "rotation": self.rotation}
        if t == EventType.SOUND:
            return {"kind": "sound", "sound": self.word, "plain_id": (self.word or 0) >> 16 == 0}
        if t == EventType.MESSAGE_12:
            return {"kind": "message", "value": self.word}
        if t == EventType.CAMERA_SHAKE:
            return {"kind": "camera_shake", "level": self.args[0] | self.args[1] << 16}
        if t in (EventType.SLOWMO_ON, EventType.SLOWMO_OFF):
            return {"kind": "slow_motion", "on": t == EventType.SLOWMO_ON}
        if t == EventType.POWER_CAMERA_BEGIN:
            return {"kind": "power_camera_begin", "mode": 1 if s16(self.args[1]) == 1 else 2}
        if t == EventType.POWER_CAMERA_CUT:
            return {"kind": "power_camera_cut", "fov": self.fov, "fov_degrees": 50.0 if self.fov == -1.0 else None}
        if t == EventType.POWER_CAMERA_SHOT:
            return {"kind": "power_camera_shot", "check": s16(self.args[0]), "slot": s16(self.args[1]),
                    "position": self.position, "rotation": self.rotation}
        if t == EventType.POWER_CAMERA_END:
            return {"kind": "power_camera_end"}
        if t == EventType.START_MOVE:
            return {"kind": "start_move", "args": self.args}
        if t == EventType.HELD_OPEN:
            return {"kind": "held", "clear": 0x1, "set": 0x2}
        if t == EventType.HELD_CLOSE:
            return {"kind": "held", "clear": 0x7, "set": 0x4}
        if t == EventType.HELD_REPLACE:
            return {"kind": "held", "replace_with": 0x40000}
        return {}

    def to_json(self) -> dict:
        """A JSON-ready dict (the CLI's and the trace's event form)."""
        d = {"frame": self.frame, "type": self.type, "args": list(self.args),
             "position": [round(v, 6) for v in self.position],
             "rotation": [round(v, 6) for v in self.rotation]}
        if self.word is not None:
            d["word"] = self.word
        if self.code is not None:
            d["code"] = self.code
        if self.fov is not None:
            d["fov"] = self.fov
        return d


def _bytes8(rec: np.void | np.ndarray) -> bytes:
    """The four bytes at +8 of an event record (a record, or a 0-d array of one: its
    position's x and y as s16): a type 11/12 event's word, a camera cut's (0x3a) field
    of view."""
    return struct.pack("<hh", int(rec["pos"][0]), int(rec["pos"][1]))


def _fov(rec: np.void | np.ndarray) -> float:
    """A camera cut's (0x3a) field of view: the f32 at +8 of its record."""
    return struct.unpack("<f", _bytes8(rec))[0]


def _event_from_record(rec: np.void) -> Event:
    pos = tuple(int(v) for v in rec["pos"])
    rot = tuple(int(v) for v in rec["rot"])
    tail = bytes(rec["tail"].tobytes())
    etype = int(rec["type"])
    word = code = fov = None
    if etype in _WORD_TYPES:
        word = struct.unpack("<I", _bytes8(rec))[0]
    if etype == EventType.POWER_CAMERA_CUT:
        fov = _fov(rec)
    if etype == EventType.NAMED_EFFECT:
        code = tail.split(b"\0", 1)[0].decode("latin-1")
    position = tuple(float(v) for v in (np.array(pos, np.float32) * POS_SCALE))
    rotation = tuple(float(np.float32(v) * np.float32(ROT_SCALE)) for v in rot)
    # Three of each: EVENT_DTYPE's "pos" and "rot" fields are (3,) wide.
    return Event(int(rec["frame"]), etype, (int(rec["arg0"]), int(rec["arg1"])),
                 cast("tuple[float, float, float]", position), cast("tuple[float, float, float]", rotation),
                 cast("tuple[int, int, int]", pos), cast("tuple[int, int, int]", rot), tail, word, code, fov)


def mask_bones(mask: int) -> list[int]:
    """The bone numbers set in a mask, ascending."""
    return [b for b in range(40) if mask >> b & 1]


@dataclass(slots=True, eq=False, weakref_slot=True)
class Clip:
    """One clip, as in the chunks: raw keys (``KEY_DTYPE``) per channel and raw events.

    ``velocity`` (section A) and ``translation`` (section B) are key arrays or None
    when the section is empty; ``rotations`` maps bone -> key array, one per mask bit.
    Fields that only matter for a byte-exact re-encode keep their file values.
    """

    name_raw: bytes
    duration: float
    displacement: tuple[float, float]
    flags: int
    velocity: np.ndarray | None
    translation: np.ndarray | None
    rotations: dict[int, np.ndarray]
    events: np.ndarray
    vtable: int = VTABLE_PLACEHOLDER
    keyframe_pointer: int = 0
    refcount: int = 0
    trailing: bytes = b"\0" * 8
    # The raw bytes of each channel's keys that no cursor can reach (see reachable_count),
    # by channel label ("A", "B" or the bone number); written back as they were.
    unreachable: dict = field(default_factory=dict, repr=False)
    _sorted_events: tuple | None = field(default=None, repr=False)
    _dispatched: tuple | None = field(default=None, repr=False, compare=False)
    _timing: tuple | None = field(default=None, repr=False)
    _digest: bytes | None = field(default=None, repr=False, compare=False)

    # ---- derived
    @property
    def name(self) -> str:
        return self.name_raw.split(b"\0", 1)[0].decode("latin-1")

    @property
    def mask(self) -> int:
        m = 0
        for b in self.rotations:
            m |= 1 << b
        return m

    @property
    def bones(self) -> list[int]:
        return sorted(self.rotations)

    @property
    def frames(self) -> int:
        """F = uint(D x 30 + 0.5) (Original: 0x001044a0 AnimCursor_Advance)."""
        return _f32.end_frame(self.duration)

    def decoded_events(self) -> list[Event]:
        return [_event_from_record(r) for r in self.events]

    def timing(self) -> tuple[int, float]:
        """(F, D - 1/60): the end test's frame count and the overshoot's origin, in the
        FPU's arithmetic, computed once (Original: 0x001044a0 AnimCursor_Advance)."""
        if self._timing is None:
            self._timing = (_f32.end_frame(self.duration), _f32.sub(self.duration, _f32.HALF_FRAME))
        return self._timing

    def events_by_frame(self) -> tuple[tuple[Event, ...], tuple[int, ...]]:
        """The decoded events sorted by frame (file order within a frame) and their frames,
        decoded once and kept (a clip's events do not change once it plays)."""
        if self._sorted_events is None:
            evs = tuple(sorted(self.decoded_events(), key=lambda e: e.frame))
            self._sorted_events = (evs, tuple(e.frame for e in evs))
        return self._sorted_events

    def dispatched_by_frame(self) -> tuple[tuple[Event, ...], tuple[int, ...]]:
        """``events_by_frame`` without the types Anim_FireFrameEvents never dispatches
        (``UNDISPATCHED``: type 8, the partner's place, "Paired tasks" L249), kept."""
        if self._dispatched is None:
            evs = tuple(e for e in self.events_by_frame()[0] if e.type not in UNDISPATCHED)
            self._dispatched = (evs, tuple(e.frame for e in evs))
        return self._dispatched

    def equals(self, other: "Clip") -> bool:
        """True when both encode to the same bytes."""
        return encode_clip(self) == encode_clip(other)


# ---------------------------------------------------------------- decoding


def decode_positions(keys: np.ndarray) -> np.ndarray:
    """Keys -> (n, 3) float32 metres: x / 1023, y / 1023, z / 2047.

    In: a KEY_DTYPE array. Out: float32 values (x times the float32 constant 1/1023,
    and so on). Rejects nothing.

    Original: 0x00104ce0 AnimCursor_SamplePose (the position decode).
    """
    raw = np.stack([keys["x"], keys["y"], keys["z"]], axis=-1).astype(np.float32)
    return raw * POS_SCALE


def decode_rotations(keys: np.ndarray) -> np.ndarray:
    """Keys -> (n, 4) float32 quaternions (x, y, z, w); w = sqrt(max(0, 1 - x^2 - y^2 - z^2)) >= 0.

    In: a KEY_DTYPE array. Out: x, y, z times 0x38000100 (2^-15 (1 + 2^-15)); w is
    never negative and is exactly 0 when the x, y, z norm exceeds 1. Rejects nothing.

    Original: 0x00104ce0 AnimCursor_SamplePose (the rotation decode).
    """
    xyz = np.stack([keys["x"], keys["y"], keys["z"]], axis=-1).astype(np.float32) * np.float32(ROT_SCALE)
    w2 = np.float32(1.0) - np.sum(xyz * xyz, axis=-1, dtype=np.float32)
    w = np.sqrt(np.maximum(w2, np.float32(0.0)))
    return np.concatenate([xyz, w[:, None]], axis=-1).astype(np.float32)


def key_frames(keys: np.ndarray) -> np.ndarray:
    """Each key's start frame: the running sum of the deltas (int32).

    In: one channel's KEY_DTYPE array. Out: int32 frames. Rejects nothing.

    Original: 0x00104110 AnimCursor_Step (the countdown from each key's delta).
    """
    return np.cumsum(keys["delta"].astype(np.int32), dtype=np.int32)


def reachable_count(keys: np.ndarray, frames: int) -> int:
    """How many of a channel's keys a cursor can ever read in a clip of ``frames`` frames.

    The last frame a clip shows is F - 1 (When a clip ends); the sampler reads the key in
    force and the next one it carries toward (Playing a clip: Sample). So the keys whose
    start frame is at most F - 1 are read, and the first key starting at F or later as the
    target of the last lerp; every key after that is never read. Each key after the
    first has a delta of at least 1, so the answer is at most F + 1 and only the first
    F + 1 deltas are summed (no 32-bit frame counter; constant work in the channel's length).

    In: a KEY_DTYPE array (delta 0 first, then deltas of 1-255) and F. Out: a count >= 1
    (>= 0 for an empty array). Rejects nothing.

    Original: 0x00104110 AnimCursor_Step, 0x001044a0 AnimCursor_Advance (the step that
    would reach F is not taken), 0x00104ce0 AnimCursor_SamplePose (the next key's lerp).
    """
    n = len(keys)
    if n == 0:
        return 0
    head = np.cumsum(keys["delta"][:frames + 1].astype(np.int64))
    past = int(np.searchsorted(head, frames, side="left"))   # first key starting at F or later
    return min(n, past + 1)


# ---------------------------------------------------------------- parsing

_D = "descriptor"
_K = "keyframes"


def _split_channels(keys: np.ndarray) -> list[np.ndarray]:
    starts = np.flatnonzero(keys["delta"] == 0)
    bounds = list(starts) + [len(keys)]
    return [keys[bounds[i]:bounds[i + 1]] for i in range(len(starts))]


def parse_clip(descriptor: bytes, keyframes: bytes) -> Clip:
    """Parse a descriptor (chunk 0x02) and its keyframes (chunk 0x00) into a Clip.

    In: the two chunk payloads. Out: a validated Clip. Rejected with ClipFormatError
    (field and byte offset named): a descriptor not 80 bytes; a non-finite or
    non-positive duration; non-finite displacement; section sizes that are not whole
    keys, overrun the chunk or leave bytes over; a section A or B holding more than one
    channel; a channel whose first key's delta is not 0; a channel count that is not
    the mask's bit count or not the number of channels in section C; mask bits above
    33; events that overrun; a type 0x3a event whose field of view is not finite; a
    duration of more than MAX_FRAMES frames (uint(D x 30 + 0.5) > 65535: the cursor's
    frame at +0x1c is 16 bits wide, and a longer clip could not be played or sampled).

    Original: 0x001041f8 AnimCursor_Init (the channel rule), 0x00101dd8 (events).
    """
    if not isinstance(descriptor, (bytes, bytearray, memoryview)):
        raise ClipFormatError(_D, 0, "payload", f"expected bytes, got {type(descriptor).__name__}")
    if not isinstance(keyframes, (bytes, bytearray, memoryview)):
        raise ClipFormatError(_K, 0, "payload", f"expected bytes, got {type(keyframes).__name__}")
    descriptor, keyframes = bytes(descriptor), bytes(keyframes)
    if len(descriptor) != DESCRIPTOR_SIZE:
        raise ClipFormatError(_D, min(len(descriptor), DESCRIPTOR_SIZE), "size",
                              f"{len(descriptor)} bytes, expected {DESCRIPTOR_SIZE}")
    (vtable, dx, dy, duration, size_a, size_b, size_c, nchan, nevents, keyptr,
     mask_raw, name_raw, refcount, flags, trailing) = _DESC.unpack(descriptor)

    for off, fname, v in ((0x04, "displacement x", dx), (0x08, "displacement y", dy)):
        if not math.isfinite(v):
            raise ClipFormatError(_D, off, fname, f"{v} is not finite")
    if not math.isfinite(duration) or duration <= 0.0:
        raise ClipFormatError(_D, 0x0C, "duration", f"{duration} must be finite and positive")
    if _f32.end_frame(duration) > MAX_FRAMES:
        raise ClipFormatError(_D, 0x0C, "duration",
                              f"{duration} s is {_f32.end_frame(duration)} frames; at most {MAX_FRAMES} "
                              f"(the cursor's frame is 16 bits)")
    mask = int.from_bytes(mask_raw, "little")
    if mask >> NUM_BONES:
        bad = [b for b in mask_bones(mask) if b >= NUM_BONES]
        raise ClipFormatError(_D, 0x20 + bad[0] // 8, "bone mask",
                              f"bit for bone {bad[0]} set; bones are 0-{NUM_BONES - 1}")
    bones = mask_bones(mask)
    if nchan != len(bones):
        raise ClipFormatError(_D, 0x18, "channel count",
                              f"{nchan} channels but the mask sets {len(bones)} bits")
    for off, fname, size in ((0x10, "section A size", size_a), (0x12, "section B size", size_b),
                             (0x14, "section C size", size_c)):
        if size % KEY_SIZE:
            raise ClipFormatError(_D, off, fname, f"{size} is not a whole number of {KEY_SIZE}-byte keys")
    if nchan and size_c == 0:
        raise ClipFormatError(_D, 0x14, "section C size", f"0 bytes for {nchan} channels")

    total = size_a + size_b + size_c
    if total > len(keyframes):
        raise ClipFormatError(_K, len(keyframes), "sections A-C",
                              f"sizes {size_a}+{size_b}+{size_c} = {total} overrun the {len(keyframes)}-byte chunk")
    ev_end = total + nevents * EVENT_SIZE
    if ev_end > len(keyframes):
        raise ClipFormatError(_K, total, "events",
                              f"{nevents} events x {EVENT_SIZE} bytes overrun the {len(keyframes)}-byte chunk")
    if ev_end < len(keyframes):
        raise ClipFormatError(_K, ev_end, "chunk size",
                              f"{len(keyframes) - ev_end} bytes past the last event")

    def section(start: int, size: int, label: str, single: bool) -> list[np.ndarray]:
        keys = np.frombuffer(keyframes, dtype=KEY_DTYPE, count=size // KEY_SIZE, offset=start)
        if len(keys) == 0:
            return []
        if keys["delta"][0] != 0:
            raise ClipFormatError(_K, start, f"section {label} first key delta",
                                  f"{keys['delta'][0]}, a channel's first key must have delta 0")
        starts = np.flatnonzero(keys["delta"] == 0)
        if single and len(starts) > 1:
            off = start + KEY_SIZE * int(starts[1])
            raise ClipFormatError(_K, off, f"section {label}",
                                  "a second channel starts here (delta 0); the section holds one channel")
        if not single and len(starts) != nchan:      # counted before any channel is built
            raise ClipFormatError(_K, size_a + size_b, "section C",
                                  f"holds {len(starts)} channels, the descriptor says {nchan}")
        return _split_channels(keys)

    sec_a = section(0, size_a, "A", True)
    sec_b = section(size_a, size_b, "B", True)
    sec_c = section(size_a + size_b, size_c, "C", False)
    if len(sec_c) != nchan:
        raise ClipFormatError(_K, size_a + size_b, "section C",
                              f"holds {len(sec_c)} channels, the descriptor says {nchan}")
    nframes = _f32.end_frame(duration)
    unreachable: dict = {}

    def reachable(keys: np.ndarray, label) -> np.ndarray:
        """The keys a cursor can read, copied; the rest kept as raw bytes for the re-encode."""
        keep = reachable_count(keys, nframes)
        if keep < len(keys):
            unreachable[label] = keys[keep:].tobytes()
        return keys[:keep].copy()

    sec_a = [reachable(c, "A") for c in sec_a]
    sec_b = [reachable(c, "B") for c in sec_b]
    sec_c = [reachable(c, bone) for c, bone in zip(sec_c, bones)]
    events = np.frombuffer(keyframes, dtype=EVENT_DTYPE, count=nevents, offset=total).copy()
    for i, rec in enumerate(events):
        if int(rec["type"]) == EventType.POWER_CAMERA_CUT:
            fov = _fov(rec)
            if not math.isfinite(fov):
                raise ClipFormatError(_K, total + i * EVENT_SIZE + 8, f"event {i} field of view",
                                      f"{fov} is not finite")
    return Clip(
        name_raw=name_raw, duration=duration, displacement=(dx, dy), flags=flags,
        velocity=sec_a[0] if sec_a else None, translation=sec_b[0] if sec_b else None,
        rotations=dict(zip(bones, sec_c)), events=events, vtable=vtable,
        keyframe_pointer=keyptr, refcount=refcount, trailing=trailing, unreachable=unreachable,
    )


# ---------------------------------------------------------------- encoding


def clip_digest(clip: Clip) -> bytes:
    """The sha256 of the clip's encoded bytes (descriptor and keyframes), kept on the clip:
    two clips with the same digest play alike. A snapshot names the clips of its clip bank
    by it. Rejected: a clip that does not encode (ClipFormatError)."""
    d = clip._digest
    if d is None:
        desc, keys = encode_clip(clip)
        d = clip._digest = hashlib.sha256(len(desc).to_bytes(4, "little") + desc + keys).digest()
    return d


def encode_clip(clip: Clip) -> tuple[bytes, bytes]:
    """Write a Clip back to (descriptor, keyframes) bytes; the inverse of parse_clip.

    Rejected with ClipFormatError: a section that would not fit its size field, more
    than 65535 events, a bone outside 0-33, a channel whose first delta is not 0 or
    that holds a second delta-0 key. Section sizes and counts are computed from the data.

    Original: 0x001041f8 AnimCursor_Init (the layout it reads back).
    """
    def chan(keys: np.ndarray | None, label: str, key) -> bytes:
        if keys is None or len(keys) == 0:
            return b""
        keys = np.asarray(keys, dtype=KEY_DTYPE)
        if keys["delta"][0] != 0 or np.any(keys["delta"][1:] == 0):
            raise ClipFormatError(_K, 0, f"channel {label}", "must start with delta 0 and have no other delta-0 key")
        return keys.tobytes() + clip.unreachable.get(key, b"")

    a = chan(clip.velocity, "A", "A")
    b = chan(clip.translation, "B", "B")
    c_parts = []
    for bone in sorted(clip.rotations):
        if not 0 <= bone < NUM_BONES:
            raise ClipFormatError(_D, 0x20, "bone mask", f"bone {bone} outside 0-{NUM_BONES - 1}")
        c_parts.append(chan(clip.rotations[bone], f"bone {bone}", bone))
    c = b"".join(c_parts)
    for label, data, limit, off in (("section A size", a, 0xFFFF, 0x10), ("section B size", b, 0xFFFF, 0x12),
                                    ("section C size", c, 0xFFFFFFFF, 0x14)):
        if len(data) > limit:
            raise ClipFormatError(_D, off, label, f"{len(data)} bytes do not fit")
    ev_arr = np.asarray(clip.events, dtype=EVENT_DTYPE).reshape(-1)
    if len(ev_arr) > 0xFFFF:
        raise ClipFormatError(_D, 0x1A, "event count", f"{len(ev_arr)} events do not fit a u16")
    ev = ev_arr.tobytes()
    name = bytes(clip.name_raw)[:NAME_SIZE].ljust(NAME_SIZE, b"\0")
    desc = _DESC.pack(clip.vtable, clip.displacement[0], clip.displacement[1], clip.duration,
                      len(a), len(b), len(c), len(clip.rotations), len(ev_arr), clip.keyframe_pointer,
                      clip.mask.to_bytes(MASK_BYTES, "little"), name, clip.refcount, clip.flags,
                      bytes(clip.trailing)[:8].ljust(8, b"\0"))
    return desc, a + b + c + ev


# ---------------------------------------------------------------- authoring


def quantise_positions(values: np.ndarray, label: str = "position") -> np.ndarray:
    """(n, 3) metres -> (n, 3) int16 (x * 1023, y * 1023, z * 2047, rounded).

    Rejected (ClipAuthoringError): non-finite values, values beyond +-32767 steps.

    Original: 0x00104ce0 AnimCursor_SamplePose (the decode this inverts).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1, 3)
    if not np.all(np.isfinite(v)):
        raise ClipAuthoringError(f"{label}: values must be finite")
    q = np.rint(v / POS_SCALE.astype(np.float64))
    if np.any(np.abs(q) > 32767):
        lim = 32767 * POS_SCALE.astype(np.float64)
        raise ClipAuthoringError(f"{label}: value out of range (|x|,|y| <= {lim[0]:.3f}, |z| <= {lim[2]:.3f})")
    return q.astype(np.int16)


def quantise_rotations(quats: np.ndarray, label: str = "rotation") -> np.ndarray:
    """(n, 4) quaternions (x, y, z, w) -> (n, 3) int16 x, y, z with w >= 0 (q and -q are one rotation).

    The quaternion is normalised first. Rejected (ClipAuthoringError): non-finite or
    zero quaternions.

    Original: 0x00104ce0 AnimCursor_SamplePose (the decode this inverts).
    """
    q = np.asarray(quats, dtype=np.float64).reshape(-1, 4)
    n = np.linalg.norm(q, axis=1)
    if not np.all(np.isfinite(q)) or np.any(n < 1e-9):
        raise ClipAuthoringError(f"{label}: quaternions must be finite and non-zero")
    q = q / n[:, None]
    q[q[:, 3] < 0] *= -1
    return np.clip(np.rint(q[:, :3] / ROT_SCALE), -32767, 32767).astype(np.int16)


def _channel_keys(frames: Sequence[int], raw: np.ndarray, label: str,
                  interp) -> np.ndarray:
    """Absolute frames + raw values -> keys with deltas, splitting gaps over 255 frames."""
    frames = _whole_frames(frames, label)
    if len(frames) != len(raw):
        raise ClipAuthoringError(f"{label}: {len(frames)} frames for {len(raw)} values")
    if not frames:
        raise ClipAuthoringError(f"{label}: a channel needs at least one key")
    if any(f < 0 for f in frames) or any(b <= a for a, b in zip(frames, frames[1:])):
        raise ClipAuthoringError(f"{label}: frames must be >= 0 and strictly increasing")
    out_f, out_v = [], []
    if frames[0] != 0:                      # a channel starts at frame 0: hold the first value
        out_f.append(0)
        out_v.append(raw[0])
    for i, f in enumerate(frames):
        if out_f:
            prev_f = out_f[-1]
            while f - prev_f > 255:        # split the gap: intermediate keys on the line
                mid = prev_f + 255
                out_v.append(interp(out_v[-1], raw[i], (mid - prev_f) / (f - prev_f)))
                out_f.append(mid)
                prev_f = mid
        out_f.append(f)
        out_v.append(raw[i])
    keys = np.zeros(len(out_f), dtype=KEY_DTYPE)
    keys["delta"] = np.diff(np.asarray(out_f), prepend=0)
    v = np.asarray(out_v)
    keys["x"], keys["y"], keys["z"] = v[:, 0], v[:, 1], v[:, 2]
    return keys


def _whole_frames(frames: Sequence, label: str) -> list[int]:
    """Key frames as ints; a frame that is not a whole number raises ClipAuthoringError."""
    out = []
    for f in frames:
        if isinstance(f, bool) or not isinstance(f, (int, np.integer, float, np.floating)) \
                or not math.isfinite(f) or f != int(f):
            raise ClipAuthoringError(f"{label}: frame {f!r} is not a whole number")
        out.append(int(f))
    return out


def _values(keys: list, width: int, label: str) -> np.ndarray:
    """The keys' values as an (n, width) float array; any other shape raises ClipAuthoringError."""
    try:
        v = np.asarray([k[1] for k in keys], dtype=np.float64)
    except (TypeError, ValueError, IndexError) as exc:
        raise ClipAuthoringError(f"{label}: keys must be (frame, values) pairs ({exc})") from None
    if v.ndim != 2 or v.shape[1] != width:
        raise ClipAuthoringError(f"{label}: each value must have {width} components")
    return v


def _lerp_raw(a, b, t):
    return np.rint(np.asarray(a, float) + (np.asarray(b, float) - np.asarray(a, float)) * t).astype(np.int16)


def _author_positions(keys: Iterable | None, label: str) -> np.ndarray | None:
    keys = list(keys) if keys is not None else []
    if not keys:
        return None
    frames = [k[0] for k in keys]
    raw = quantise_positions(_values(keys, 3, label), label)
    return _channel_keys(frames, raw, label, _lerp_raw)


def _author_rotations(keys: Iterable, label: str) -> np.ndarray:
    keys = list(keys) if keys is not None else []
    if not keys:
        raise ClipAuthoringError(f"{label}: a channel needs at least one key")
    frames = [k[0] for k in keys]
    raw = quantise_rotations(_values(keys, 4, label), label)

    def interp(a, b, t):
        qa = np.append(np.asarray(a, float) * ROT_SCALE, 0.0)
        qb = np.append(np.asarray(b, float) * ROT_SCALE, 0.0)
        qa[3] = math.sqrt(max(0.0, 1.0 - qa[:3] @ qa[:3]))
        qb[3] = math.sqrt(max(0.0, 1.0 - qb[:3] @ qb[:3]))
        if qa @ qb < 0:
            qb = -qb
        return quantise_rotations(qa + (qb - qa) * t, label)[0]

    return _channel_keys(frames, raw, label, interp)


def make_event(frame: int, type: int, args: tuple[int, int] = (0, 0),
               position: Sequence[float] = (0.0, 0.0, 0.0), rotation: Sequence[float] = (0.0, 0.0, 0.0),
               word: int | None = None, code: str | None = None, fov: float | None = None) -> np.ndarray:
    """One raw event record from decoded fields (position in metres, rotation x, y, z).

    ``word`` (types 11/12, a u32) or ``fov`` (0x3a, a finite f32) overwrites the bytes
    at +8 (not both); ``code`` (0x21) fills +0x14. Rejected (ClipAuthoringError):
    frame, type or args outside u16, a position or rotation that is not three finite
    values in range, a word outside u32, a non-finite fov (given, or for a 0x3a event
    without one, the f32 its position's x and y bytes make: parse_clip's check), a code
    over three latin-1 letters.

    Original: 0x00101dd8 Anim_FireFrameEvents (the record it reads).
    """
    rec = np.zeros((), dtype=EVENT_DTYPE)
    try:
        a0, a1 = (int(a) for a in args)
    except (TypeError, ValueError):
        raise ClipAuthoringError(f"event args {args!r}: two u16 values") from None
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 <= v <= 0xFFFF
               for v in (frame, type, a0, a1)):
        raise ClipAuthoringError(f"event: frame, type and args must be u16 (got {frame}, {type}, {args})")
    rec["frame"], rec["type"], rec["arg0"], rec["arg1"] = frame, type, a0, a1
    pos = np.asarray(position, dtype=np.float64)
    if pos.shape != (3,):
        raise ClipAuthoringError(f"event position: three values (got shape {pos.shape})")
    rec["pos"] = quantise_positions(pos, "event position")[0]
    rot = np.asarray(rotation, dtype=np.float64)
    if rot.shape != (3,):
        raise ClipAuthoringError(f"event rotation: three values (got shape {rot.shape})")
    if not np.all(np.isfinite(rot)) or np.any(np.abs(rot) > 1.0):
        raise ClipAuthoringError("event rotation: x, y, z must be finite within [-1, 1]")
    rec["rot"] = np.clip(np.rint(rot / ROT_SCALE), -32767, 32767).astype(np.int16)
    if word is not None and fov is not None:
        raise ClipAuthoringError("event: word and fov share the bytes at +8; give one")
    if word is not None:
        if isinstance(word, bool) or not isinstance(word, (int, np.integer)) or not 0 <= word <= 0xFFFFFFFF:
            raise ClipAuthoringError(f"event word {word!r}: must be a u32")
        raw8 = struct.pack("<I", int(word))
    elif fov is not None:
        if not math.isfinite(_f32.f32(float(fov))):
            raise ClipAuthoringError(f"event fov {fov!r}: must be a finite float32")
        raw8 = struct.pack("<f", float(fov))
    else:
        raw8 = None
    if raw8 is not None:
        lo, hi = struct.unpack("<hh", raw8)
        rec["pos"][0], rec["pos"][1] = lo, hi
    elif type == EventType.POWER_CAMERA_CUT:      # its position's x and y bytes are its fov (parse_clip's check)
        got = _fov(rec)
        if not math.isfinite(got):
            raise ClipAuthoringError(f"event type 0x3a: its field of view is the f32 at +8, where position "
                                     f"{tuple(float(v) for v in pos[:2])} puts {got}: give a finite fov")
    if code is not None:
        try:
            c = code.encode("latin-1")
        except (AttributeError, UnicodeEncodeError):
            raise ClipAuthoringError(f"event code {code!r}: latin-1 text") from None
        if len(c) > 3 or b"\0" in c:
            raise ClipAuthoringError(f"event code {code!r}: at most three letters")
        rec["tail"] = np.frombuffer(c.ljust(4, b"\0"), dtype=np.uint8)
    return rec


def author_clip(name: str, frames: int, *,
                velocity: Iterable | None = None,
                translation: Iterable | None = None,
                rotations: Mapping[int, Iterable] | None = None,
                events: Iterable | None = None,
                displacement: tuple[float, float] | None = None,
                flags: int = 0) -> Clip:
    """Build a Clip from decoded keys; the path tests and the demo's move set use.

    In: ``frames`` F (the duration is F / 30 s, as on the disc); ``velocity`` and
    ``translation`` as [(frame, (x, y, z)), ...] in m/s and m; ``rotations`` as
    {bone: [(frame, (x, y, z, w)), ...]}; ``events`` as make_event records or dicts of
    its arguments; ``displacement`` (x, y) in m, by default the velocity channel
    integrated over the clip. Frames are absolute; a channel that does not start at 0
    holds its first value from 0; gaps over 255 frames are split with keys on the line.
    Rejected (ClipAuthoringError): no frames or more than MAX_FRAMES, bones outside 0-33, an empty channel,
    unordered, negative or fractional key frames, values of the wrong shape,
    non-finite or out-of-range values, names over 30 bytes or not latin-1.

    Original: 0x001041f8 AnimCursor_Init (the layout the result must satisfy).
    """
    if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or not 1 <= frames <= MAX_FRAMES:
        raise ClipAuthoringError(f"frames: {frames!r} must be a whole number 1-{MAX_FRAMES}")
    try:
        raw_name = name.encode("latin-1")
    except (AttributeError, UnicodeEncodeError):
        raise ClipAuthoringError(f"name {name!r}: latin-1 text") from None
    if len(raw_name) > NAME_SIZE:
        raise ClipAuthoringError(f"name {name!r}: at most {NAME_SIZE} bytes")
    rot = {}
    for bone, keys in (rotations or {}).items():
        if not 0 <= int(bone) < NUM_BONES:
            raise ClipAuthoringError(f"rotation channel for bone {bone}: bones are 0-{NUM_BONES - 1}")
        rot[int(bone)] = _author_rotations(keys, f"bone {bone}")
    vel = _author_positions(velocity, "velocity")
    tr = _author_positions(translation, "translation")
    evs = []
    for e in events or []:
        evs.append(make_event(**e) if isinstance(e, Mapping) else e)
    ev_arr = np.array(evs, dtype=EVENT_DTYPE) if evs else np.zeros(0, dtype=EVENT_DTYPE)
    duration = _f32.f32(frames / 30.0)
    if displacement is None:
        displacement = (0.0, 0.0)
        if vel is not None:
            displacement = _integrate_velocity(vel, frames)
    dx, dy = (_f32.f32(float(v)) for v in displacement)
    # Keys past the first one at or after F are never read: kept as raw bytes, as parse_clip does.
    unreachable: dict = {}

    def reachable(keys, label):
        if keys is None:
            return None
        keep = reachable_count(keys, _f32.end_frame(duration))
        if keep < len(keys):
            unreachable[label] = keys[keep:].tobytes()
        return keys[:keep].copy()

    vel, tr = reachable(vel, "A"), reachable(tr, "B")
    rot = {b: reachable(k, b) for b, k in sorted(rot.items())}
    return Clip(name_raw=raw_name.ljust(NAME_SIZE, b"\0"), duration=duration, displacement=(dx, dy),
                flags=int(flags), velocity=vel, translation=tr, rotations=rot,
                events=ev_arr, unreachable=unreachable)


def _integrate_velocity(keys: np.ndarray, frames: int) -> tuple[float, float]:
    """The x, y distance the velocity channel covers over F frames (lerped keys, 1/30 s a frame)."""
    starts = key_frames(keys).astype(np.float64)
    vals = decode_positions(keys).astype(np.float64)
    grid = np.arange(frames, dtype=np.float64) + 0.5
    vx = np.interp(grid, starts, vals[:, 0])
    vy = np.interp(grid, starts, vals[:, 1])
    return float(vx.sum() / 30.0), float(vy.sum() / 30.0)
