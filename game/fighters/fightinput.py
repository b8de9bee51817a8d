"""One fighter's commands in one update, as a value: what a keyboard, an AI or a scenario
asks the fight rules for, and what two peers of a netplay session send each other.

    inp = FightInput(move=(0.0, 1.0), pace=1)          # jog north
    inp = FightInput(face_toward="p2", action=Action.GRAB)
    fight.apply("p1", inp)                              # Fight.apply: move, then face, then the action
    FightInput.from_bytes(inp.to_bytes()) == inp        # True: a few bytes, exact
    FightInput.EMPTY.to_bytes()                         # 4 bytes

``Fight.apply(who, input)`` gives its parts to the fight's commands in a fixed order:
the locomotion (``Fight.move``), the facing (``Fight.face``), then the action (``grab``,
``strike``, ``throw`` or ``let_go``); a scenario's commands and the demo's keys are one
part each, so a recorded session replays through the same calls.

The byte form (little-endian, version 1): a header of four bytes (the version, the
``InputFlags`` saying which parts are present, the ``Action``, the pace or 255), then, in
this order and only when present, the move id (int32), the direction (two float64), the
speed (float64), the heading (float64) and the name faced (a length byte, 1-64, and its
UTF-8). Floats are stored as their float64 bits, so equal bytes give the same
simulation. ``from_bytes`` validates every field and raises ``FightInputError`` (a
ValueError) naming it. Original: none (ours; the fight's commands are ours).
"""
from __future__ import annotations

import math
import struct
from enum import IntEnum, IntFlag
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from scuffle.anim.base.limits import INT32_MAX, MAX_COORD
from scuffle.game.fighters.fightdata import MAX_MOVE_SPEED, PACES

__all__ = ["FightInput", "FightInputError", "Action", "InputFlags", "INPUT_VERSION", "MAX_INPUT_BYTES",
           "MAX_NAME_BYTES"]

INPUT_VERSION = 1
MAX_NAME_BYTES = 64                  # the longest human name a face part may carry (UTF-8 bytes)
_HEAD = struct.Struct("<BBBB")       # version, flags, action, pace (255: none)
_I32 = struct.Struct("<i")
_F64 = struct.Struct("<d")
_F64X2 = struct.Struct("<dd")
_NO_PACE = 255
# header, move id, direction, speed, heading, name (length byte and bytes)
MAX_INPUT_BYTES = _HEAD.size + 4 + 16 + 8 + 8 + 1 + MAX_NAME_BYTES


class FightInputError(ValueError):
    """A FightInput (or its bytes) that breaks a rule: the message names the field."""


class Action(IntEnum):
    """The one-shot command of an input (at most one per update)."""

    NONE = 0
    GRAB = 1
    STRIKE = 2
    THROW = 3
    LET_GO = 4


class InputFlags(IntFlag):
    """Which parts of a FightInput are present (its bytes' second byte)."""

    MOVE = 0x01          # a locomotion intent: direction, and speed or pace (or neither: the walk)
    SPEED = 0x02         # ... its speed given in m/s
    HEADING = 0x04       # face a heading (degrees)
    TOWARD = 0x08        # face a human (by name)
    MOVE_ID = 0x10       # the strike's or throw's anim id given


_KNOWN = int(InputFlags.MOVE | InputFlags.SPEED | InputFlags.HEADING | InputFlags.TOWARD | InputFlags.MOVE_ID)
# the flags as plain ints: read() tests them per input, and IntFlag's operators cost a call each
_MOVE, _SPEED, _HEADING, _TOWARD, _MOVE_ID = (int(f) for f in (InputFlags.MOVE, InputFlags.SPEED, InputFlags.HEADING,
                                                             InputFlags.TOWARD, InputFlags.MOVE_ID))
_ACTIONS = tuple(Action)
_READ_CACHE: dict[bytes, "FightInput"] = {}     # recent byte forms -> their (immutable) inputs
_READ_CACHE_SIZE = 4096


def _finite(field: str, v: object, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise FightInputError(f"FightInput {field}: {v!r} is not a number")
    f = float(v)
    if not (math.isfinite(f) and lo <= f <= hi):
        raise FightInputError(f"FightInput {field}: {v!r} must be a finite number from {lo:g} to {hi:g}")
    return f


@dataclass(frozen=True, slots=True)
class FightInput:
    """One fighter's commands in one update (see the module docstring); immutable, hashable,
    compared by value, checked when made.

    ``move`` a world direction (x, y), or None: no locomotion command (a zero direction or a
    speed of 0 stops); ``speed`` m/s (<= 50) or ``pace`` (PACES' name or index: walk, jog,
    run, sprint), neither: the set's walk. ``face_heading`` degrees, ``face_toward`` a
    human's name (it wins over the heading, as in ``Fight.face``). ``action`` an Action,
    ``move_id`` the strike's or throw's anim id (None: the rules choose). Numbers are kept
    as float / int, the pace as its index, the action as an Action.

    Rejected (FightInputError naming the field): a direction that is not two finite
    numbers within +-1e9; a speed outside 0-50 m/s, or given with a pace; a pace not one
    of PACES or 0-3; a speed or pace without a direction; a heading not finite within
    +-1e9; a name faced that is not a non-empty str of at most 64 UTF-8 bytes; an
    unknown action; a move id outside 0-2^31-1, or given to an action other than strike
    and throw.
    """

    move: tuple[float, float] | None = None
    speed: float | None = None
    pace: int | None = None
    face_heading: float | None = None
    face_toward: str | None = None
    action: Action = Action.NONE
    move_id: int | None = None

    _bytes: bytes | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    EMPTY: ClassVar["FightInput"]     # (set below) no command at all

    def __post_init__(self) -> None:
        put = object.__setattr__
        if self.move is not None:
            if not isinstance(self.move, (tuple, list)) or len(self.move) != 2:
                raise FightInputError(f"FightInput move: {self.move!r} is not a direction (x, y)")
            put(self, "move", (_finite("move x", self.move[0], -MAX_COORD, MAX_COORD),
                               _finite("move y", self.move[1], -MAX_COORD, MAX_COORD)))
        if self.speed is not None:
            put(self, "speed", _finite("speed", self.speed, 0.0, MAX_MOVE_SPEED))
        if self.pace is not None:
            p = self.pace
            if isinstance(p, str) and p in PACES:
                p = PACES.index(p)
            if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < len(PACES):
                raise FightInputError(f"FightInput pace: {self.pace!r} must be one of {', '.join(PACES)} "
                                      f"or 0-{len(PACES) - 1}")
            put(self, "pace", int(p))
        if (self.speed is not None or self.pace is not None) and self.move is None:
            raise FightInputError("FightInput speed: a speed or pace needs a move direction")
        if self.speed is not None and self.pace is not None:
            raise FightInputError("FightInput pace: give a speed or a pace, not both")
        if self.face_heading is not None:
            put(self, "face_heading", _finite("face_heading", self.face_heading, -MAX_COORD, MAX_COORD))
        toward = self.face_toward
        if toward is not None:
            if not isinstance(toward, str) or not toward:
                raise FightInputError(f"FightInput face_toward: {toward!r} must be a human's name")
            try:
                size = len(toward.encode("utf-8"))
            except UnicodeEncodeError:
                raise FightInputError(f"FightInput face_toward: {toward!r} is not valid UTF-8 text") from None
            if size > MAX_NAME_BYTES:
                raise FightInputError(f"FightInput face_toward: {size} UTF-8 bytes, at most {MAX_NAME_BYTES}")
        if isinstance(self.action, bool) or not isinstance(self.action, int):
            raise FightInputError(f"FightInput action: {self.action!r} is not an Action")
        try:
            put(self, "action", Action(self.action))
        except ValueError:
            raise FightInputError(f"FightInput action: {self.action!r} is not an Action "
                                  f"({', '.join(a.name for a in Action)})") from None
        move_id = self.move_id
        if move_id is not None:
            if isinstance(move_id, bool) or not isinstance(move_id, int) or not 0 <= move_id <= INT32_MAX:
                raise FightInputError(f"FightInput move_id: {move_id!r} must be a whole number 0-{INT32_MAX}")
            if self.action not in (Action.STRIKE, Action.THROW):
                raise FightInputError(f"FightInput move_id: given to {Action(self.action).name}; "
                                      f"only STRIKE and THROW take one")
            put(self, "move_id", int(move_id))

    def commands(self) -> list[tuple[str, dict[str, Any]]]:
        """The scenario commands of this input (docs/scenarios.md, "Actions"), in
        ``Fight.apply``'s order: ``(action, keys)`` pairs, e.g. ``("move", {"direction":
        [0.0, 1.0], "pace": "jog"})``, ``("strike", {"move": 51})``; a scenario that gives
        them at the input's update replays it exactly."""
        out: list[tuple[str, dict[str, Any]]] = []
        if self.move is not None:
            keys: dict[str, Any] = {"direction": [self.move[0], self.move[1]]}
            if self.pace is not None:
                keys["pace"] = PACES[self.pace]
            elif self.speed is not None:
                keys["speed"] = self.speed
            out.append(("move", keys))
        if self.face_heading is not None or self.face_toward is not None:
            keys = {}
            if self.face_heading is not None:
                keys["heading"] = self.face_heading
            if self.face_toward is not None:
                keys["toward"] = self.face_toward
            out.append(("face", keys))
        if self.action != Action.NONE:
            out.append((self.action.name.lower(), {} if self.move_id is None else {"move": self.move_id}))
        return out

    @property
    def empty(self) -> bool:
        """No command at all."""
        return self == EMPTY

    # ------------------------------------------------------------ bytes
    def to_bytes(self) -> bytes:
        """The byte form (see the module docstring): 4 bytes for EMPTY, at most
        MAX_INPUT_BYTES (every FightInput is valid: it was checked when made)."""
        if self._bytes is not None:
            return self._bytes
        v = self
        flags = 0
        parts = []
        if v.move_id is not None:
            flags |= InputFlags.MOVE_ID
            parts.append(_I32.pack(v.move_id))
        if v.move is not None:
            flags |= InputFlags.MOVE
            parts.append(_F64X2.pack(*v.move))
            if v.speed is not None:
                flags |= InputFlags.SPEED
                parts.append(_F64.pack(v.speed))
        if v.face_heading is not None:
            flags |= InputFlags.HEADING
            parts.append(_F64.pack(v.face_heading))
        if v.face_toward is not None:
            flags |= InputFlags.TOWARD
            name = v.face_toward.encode("utf-8")
            parts.append(bytes((len(name),)) + name)
        head = _HEAD.pack(INPUT_VERSION, int(flags), int(v.action), _NO_PACE if v.pace is None else v.pace)
        out = head + b"".join(parts)
        object.__setattr__(self, "_bytes", out)         # made once: an input is sent many times
        return out

    @classmethod
    def from_bytes(cls, data: bytes) -> "FightInput":
        """The FightInput of ``to_bytes`` (the whole of ``data``). Rejected
        (FightInputError naming the field): another version, unknown flag bits, an
        unknown action or pace, a field cut short, bytes left over, a float that is not
        finite or out of range, a name that is not UTF-8, and every rule of
        the constructor."""
        inp, end = cls.read(data, 0)
        if end != len(data):
            raise FightInputError(f"FightInput bytes: {len(data) - end} bytes left over after the input")
        return inp

    @classmethod
    def read(cls, data: bytes, at: int = 0) -> tuple["FightInput", int]:
        """One FightInput read from ``data`` at offset ``at``: (the input, the offset after
        it). Rejected: as ``from_bytes`` (bytes after it are the caller's)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise FightInputError(f"FightInput bytes: {type(data).__name__} is not bytes")
        data = bytes(data) if not isinstance(data, bytes) else data
        n = len(data)
        if n - at >= 2:                                  # a byte form seen lately: its input
            size = _size_of(data, at)
            if size:
                hit = _READ_CACHE.get(data[at:at + size])
                if hit is not None:
                    return hit, at + size
        start = at
        if n - at < _HEAD.size:
            raise FightInputError(f"FightInput header: {n - at} bytes, expected at least {_HEAD.size}")
        version, flags, action, pace = _HEAD.unpack_from(data, at)
        if version != INPUT_VERSION:
            raise FightInputError(f"FightInput version: {version}, this scuffle reads version {INPUT_VERSION}")
        if flags & ~_KNOWN:
            raise FightInputError(f"FightInput flags: unknown bits 0x{flags & ~_KNOWN:02x}")
        if action >= len(Action):
            raise FightInputError(f"FightInput action: {action} is not an Action (0-{len(Action) - 1})")
        if pace != _NO_PACE and pace >= len(PACES):
            raise FightInputError(f"FightInput pace: {pace} is not 0-{len(PACES) - 1} or 255 (none)")
        at += _HEAD.size

        def take(field: str, size: int) -> int:
            nonlocal at
            if n - at < size:
                raise FightInputError(f"FightInput {field}: cut short ({n - at} of {size} bytes)")
            at += size
            return at - size

        move_id = move = speed = heading = toward = None
        if flags & _MOVE_ID:
            move_id = _I32.unpack_from(data, take("move_id", 4))[0]
        if flags & _MOVE:
            move = _F64X2.unpack_from(data, take("move", 16))
            if flags & _SPEED:
                speed = _F64.unpack_from(data, take("speed", 8))[0]
        elif flags & _SPEED:
            raise FightInputError("FightInput speed: the SPEED flag without MOVE")
        if flags & _HEADING:
            heading = _F64.unpack_from(data, take("face_heading", 8))[0]
        if flags & _TOWARD:
            size = data[take("face_toward", 1)]
            if not 1 <= size <= MAX_NAME_BYTES:
                raise FightInputError(f"FightInput face_toward: a name of {size} bytes (1-{MAX_NAME_BYTES})")
            raw = data[take("face_toward", size):at]
            try:
                toward = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise FightInputError("FightInput face_toward: the name is not UTF-8") from None
        inp = cls(move, speed, None if pace == _NO_PACE else pace, heading, toward, _ACTIONS[action], move_id)
        raw = data[start:at]
        if inp.to_bytes() == raw:                        # (-0.0 and 0.0 read alike: only the exact form is kept)
            if len(_READ_CACHE) >= _READ_CACHE_SIZE:
                _READ_CACHE.clear()
            _READ_CACHE[raw] = inp
        return inp, at

    def __repr__(self) -> str:
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.name != "_bytes"
                 and getattr(self, f.name) is not None and not (f.name == "action" and self.action == Action.NONE)]
        return f"FightInput({', '.join(parts)})" if parts else "FightInput.EMPTY"


def _size_of(data: bytes, at: int) -> int:
    """The length of the well-formed byte form at ``at`` as its flags say (0: not one)."""
    flags = data[at + 1]
    if flags & ~_KNOWN:
        return 0
    n = _HEAD.size + (4 if flags & _MOVE_ID else 0) + (16 if flags & _MOVE else 0) + (8 if flags & _SPEED else 0) \
        + (8 if flags & _HEADING else 0)
    if flags & _TOWARD:
        if len(data) <= at + n:
            return 0
        n += 1 + data[at + n]
    return n if len(data) - at >= n else 0


EMPTY = FightInput()
FightInput.EMPTY = EMPTY
