"""The datagrams two netplay peers (and a spectator) exchange: a small versioned byte
format, read as data.

Every datagram starts with a header of four bytes: the magic ``b"SN"``, the format
version (``WIRE_VERSION``) and its ``Kind``. Then, little-endian:

- HELLO (the handshake): flags (HEARD: the sender has heard this peer; SPECTATOR), a
  nonce (u32), the snapshot format version (u32), the configuration digest (32 bytes),
  the digest of the state at the session's first update (32 bytes),
  the scuffle version (a length byte and ASCII), the players (a count byte, then each
  name as a length byte and UTF-8), the sender's local players as a bit mask (u32).
- INPUT (peer to peer, many per second): flags (FINISHED), the sender's next update
  (u32), the number of updates of the receiver's inputs the sender holds without a gap
  (``ack``, u32), the sender's confirmed updates (u32), the sender's frame advantage
  (int16, in 1/16 update), a ping (u32 ms of the sender's clock), the last ping received
  and how long ago (u32, u16 ms), the first update of the inputs carried (u32) and
  their count (u8), each update's inputs of the sender's local players (FightInput
  bytes, each after its length byte), then the checks: a count byte, each the update
  (u32) and the first 16 bytes of its state digest.
- CONFIRMED (a peer to a spectator): the first update (u32), the count (u8), each
  update's inputs of every player (as above), the sender's next update (u32).
- SPEC_ACK (a spectator to its peer): the number of updates the spectator holds (u32).
- BYE: flags (FINISHED).

``read(data, players)`` validates as it goes (sizes, counts, ranges, every input through
``FightInput.read``) and raises ``WireError`` (a ValueError naming the field) on the
first fault; the session drops such a datagram and counts it. Nothing is unpickled,
evaluated or allocated beyond the datagram's own size. Original: none (ours).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import Any

from scuffle.game.fighters.fightinput import MAX_INPUT_BYTES, FightInput, FightInputError

__all__ = ["Kind", "WireFlags", "WireError", "Hello", "Inputs", "Confirmed", "SpecAck", "Bye", "read",
           "WIRE_VERSION", "MAX_DATAGRAM", "MAX_FRAMES", "MAX_CHECKS", "DIGEST_BYTES", "MAX_PLAYERS"]

MAGIC = b"SN"
WIRE_VERSION = 1
MAX_DATAGRAM = 1200          # bytes: under every path's MTU (IPv6's 1280 less headers)
MAX_FRAMES = 64              # updates of inputs one datagram carries at most
MAX_CHECKS = 8               # state digests one datagram carries at most
MAX_PLAYERS = 8
DIGEST_BYTES = 16            # the part of a state digest the peers compare
MAX_UPDATE = (1 << 31) - 1   # an update number (u32 on the wire, kept below 2^31)
_HEAD = struct.Struct("<2sBB")
_HELLO = struct.Struct("<BII32s32s")
_INPUT = struct.Struct("<BIIIhIIHIB")
_CONFIRMED = struct.Struct("<IB")
_U32 = struct.Struct("<I")
_CHECK = struct.Struct(f"<I{DIGEST_BYTES}s")


class WireError(ValueError):
    """A datagram that breaks the format: the message names the field."""


class Kind(IntEnum):
    HELLO = 1
    INPUT = 2
    CONFIRMED = 3
    SPEC_ACK = 4
    BYE = 5


class WireFlags(IntFlag):
    HEARD = 0x01             # the sender has received this peer's HELLO
    SPECTATOR = 0x02         # the sender is a spectator
    FINISHED = 0x04          # (INPUT, BYE) the sender has confirmed its last update and knows ours


@dataclass(frozen=True, slots=True)
class Hello:
    flags: int
    nonce: int
    snapshot_version: int
    config: bytes
    start: bytes
    version: str
    players: tuple[str, ...]
    local_mask: int

    def to_bytes(self) -> bytes:
        v = self.version.encode("ascii")
        out = [_HEAD.pack(MAGIC, WIRE_VERSION, Kind.HELLO),
               _HELLO.pack(self.flags, self.nonce, self.snapshot_version, self.config, self.start),
               bytes((len(v),)), v, bytes((len(self.players),))]
        for p in self.players:
            b = p.encode("utf-8")
            out += [bytes((len(b),)), b]
        out.append(_U32.pack(self.local_mask))
        return b"".join(out)


@dataclass(frozen=True, slots=True)
class Inputs:
    flags: int
    frame: int
    ack: int
    confirmed: int
    advantage: float
    ping: int
    echo: int
    echo_hold: int
    first: int
    inputs: tuple[tuple[FightInput, ...], ...]          # per update: the sender's local players' inputs
    checks: tuple[tuple[int, bytes], ...] = field(default=())

    def to_bytes(self) -> bytes:
        adv = max(-32768, min(32767, int(round(self.advantage * 16))))
        out = [_HEAD.pack(MAGIC, WIRE_VERSION, Kind.INPUT),
               _INPUT.pack(self.flags, self.frame, self.ack, self.confirmed, adv, self.ping & 0xFFFFFFFF,
                           self.echo & 0xFFFFFFFF, min(self.echo_hold, 0xFFFF), self.first, len(self.inputs))]
        out += [_frame_bytes(f) for f in self.inputs]
        out.append(bytes((len(self.checks),)))
        out += [_CHECK.pack(u, d[:DIGEST_BYTES]) for u, d in self.checks]
        return b"".join(out)


@dataclass(frozen=True, slots=True)
class Confirmed:
    first: int
    inputs: tuple[tuple[FightInput, ...], ...]          # per update: every player's input
    frame: int

    def to_bytes(self) -> bytes:
        return b"".join([_HEAD.pack(MAGIC, WIRE_VERSION, Kind.CONFIRMED), _CONFIRMED.pack(self.first, len(self.inputs)),
                         *(_frame_bytes(f) for f in self.inputs), _U32.pack(self.frame)])


@dataclass(frozen=True, slots=True)
class SpecAck:
    have: int

    def to_bytes(self) -> bytes:
        return _HEAD.pack(MAGIC, WIRE_VERSION, Kind.SPEC_ACK) + _U32.pack(self.have)


@dataclass(frozen=True, slots=True)
class Bye:
    flags: int

    def to_bytes(self) -> bytes:
        return _HEAD.pack(MAGIC, WIRE_VERSION, Kind.BYE) + bytes((self.flags,))


def _frame_bytes(inputs: tuple[FightInput, ...]) -> bytes:
    out = []
    for inp in inputs:
        b = inp.to_bytes()
        out += [bytes((len(b),)), b]
    return b"".join(out)


def frame_size(inputs: tuple[FightInput, ...]) -> int:
    """The bytes one update's inputs take in a datagram."""
    return len(_frame_bytes(inputs))


class _Reader:
    __slots__ = ("data", "at")

    def __init__(self, data: bytes, at: int):
        self.data, self.at = data, at

    def take(self, field: str, size: int) -> int:
        if len(self.data) - self.at < size:
            raise WireError(f"datagram {field}: cut short ({len(self.data) - self.at} of {size} bytes)")
        self.at += size
        return self.at - size

    def unpack(self, field: str, s: struct.Struct) -> tuple[Any, ...]:
        return s.unpack_from(self.data, self.take(field, s.size))

    def byte(self, field: str) -> int:
        return self.data[self.take(field, 1)]

    def text(self, field: str, ascii_only: bool = False) -> str:
        n = self.byte(field)
        raw = self.data[self.take(field, n):self.at]
        try:
            return raw.decode("ascii" if ascii_only else "utf-8")
        except UnicodeDecodeError:
            raise WireError(f"datagram {field}: not {'ASCII' if ascii_only else 'UTF-8'} text") from None

    def frames(self, field: str, count: int, per: int) -> tuple[tuple[FightInput, ...], ...]:
        out = []
        for _ in range(count):
            row = []
            for _ in range(per):
                n = self.byte(field)
                if not 1 <= n <= MAX_INPUT_BYTES:
                    raise WireError(f"datagram {field}: an input of {n} bytes (1-{MAX_INPUT_BYTES})")
                start = self.take(field, n)
                try:
                    inp, end = FightInput.read(self.data[start:self.at], 0)
                except FightInputError as exc:
                    raise WireError(f"datagram {field}: {exc}") from None
                if end != n:
                    raise WireError(f"datagram {field}: an input's length byte says {n}, its bytes {end}")
                row.append(inp)
            out.append(tuple(row))
        return tuple(out)

    def update(self, field: str, v: int) -> int:
        if v > MAX_UPDATE:
            raise WireError(f"datagram {field}: update {v} is past {MAX_UPDATE}")
        return v

    def end(self) -> None:
        if self.at != len(self.data):
            raise WireError(f"datagram: {len(self.data) - self.at} bytes left over")


def read(data: bytes, remote_players: int, all_players: int) -> Hello | Inputs | Confirmed | SpecAck | Bye:
    """One datagram as a Hello, Inputs, Confirmed, SpecAck or Bye. ``remote_players``:
    how many inputs an INPUT datagram carries per update (the sender's local players);
    ``all_players``: a CONFIRMED datagram's. Rejected (WireError naming the field): more
    than MAX_DATAGRAM bytes, another magic or version, an unknown kind or flag bit, a
    field cut short, bytes left over, counts past their caps, an update past 2^31 - 1,
    an input that FightInput.read refuses, text that is not UTF-8."""
    if not isinstance(data, (bytes, bytearray)):
        raise WireError(f"datagram: {type(data).__name__} is not bytes")
    if len(data) > MAX_DATAGRAM:
        raise WireError(f"datagram: {len(data)} bytes, at most {MAX_DATAGRAM}")
    data = bytes(data)
    r = _Reader(data, 0)
    magic, version, kind = r.unpack("header", _HEAD)
    if magic != MAGIC:
        raise WireError(f"datagram magic: {magic!r}, expected {MAGIC!r}")
    if version != WIRE_VERSION:
        raise WireError(f"datagram version: {version}, this scuffle speaks version {WIRE_VERSION}")
    if kind == Kind.HELLO:
        flags, nonce, snap, config, start = r.unpack("hello", _HELLO)
        if flags & ~int(WireFlags.HEARD | WireFlags.SPECTATOR):
            raise WireError(f"datagram hello flags: unknown bits 0x{flags:02x}")
        ver = r.text("hello version", ascii_only=True)
        n = r.byte("hello players")
        if not 1 <= n <= MAX_PLAYERS:
            raise WireError(f"datagram hello players: {n} (1-{MAX_PLAYERS})")
        players = tuple(r.text("hello player name") for _ in range(n))
        (mask,) = r.unpack("hello local mask", _U32)
        if mask >> n:
            raise WireError(f"datagram hello local mask: 0x{mask:x} names more than {n} players")
        r.end()
        return Hello(flags, nonce, snap, config, start, ver, players, mask)
    if kind == Kind.INPUT:
        flags, frame, ack, confirmed, adv, ping, echo, hold, first, count = r.unpack("input", _INPUT)
        if flags & ~int(WireFlags.FINISHED):
            raise WireError(f"datagram input flags: unknown bits 0x{flags:02x}")
        for name, v in (("frame", frame), ("ack", ack), ("confirmed", confirmed), ("first", first)):
            r.update(f"input {name}", v)
        if count > MAX_FRAMES:
            raise WireError(f"datagram input count: {count} updates, at most {MAX_FRAMES}")
        r.update("input last", first + count)
        inputs = r.frames("input inputs", count, remote_players)
        nc = r.byte("input checks")
        if nc > MAX_CHECKS:
            raise WireError(f"datagram input checks: {nc}, at most {MAX_CHECKS}")
        checks = tuple((r.update("input check update", u), d) for u, d in (r.unpack("input check", _CHECK)
                                                                            for _ in range(nc)))
        r.end()
        return Inputs(flags, frame, ack, confirmed, adv / 16.0, ping, echo, hold, first, inputs, checks)
    if kind == Kind.CONFIRMED:
        first, count = r.unpack("confirmed", _CONFIRMED)
        r.update("confirmed first", first)
        if count > MAX_FRAMES:
            raise WireError(f"datagram confirmed count: {count} updates, at most {MAX_FRAMES}")
        r.update("confirmed last", first + count)
        inputs = r.frames("confirmed inputs", count, all_players)
        (frame,) = r.unpack("confirmed frame", _U32)
        r.end()
        return Confirmed(first, inputs, r.update("confirmed frame", frame))
    if kind == Kind.SPEC_ACK:
        (have,) = r.unpack("spec_ack", _U32)
        r.end()
        return SpecAck(r.update("spec_ack have", have))
    if kind == Kind.BYE:
        flags = r.byte("bye flags")
        if flags & ~int(WireFlags.FINISHED):
            raise WireError(f"datagram bye flags: unknown bits 0x{flags:02x}")
        r.end()
        return Bye(flags)
    raise WireError(f"datagram kind: {kind} is not one of {', '.join(f'{k.value} ({k.name})' for k in Kind)}")
