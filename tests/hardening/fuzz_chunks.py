"""Hypothesis strategies for the clip chunks: valid raw chunks, and their mutations.

A valid clip is built byte by byte (any mask over bones 0-33, channels of random raw
keys, events of every type the spec names), so the keys are whatever an s16 holds: most
rotation keys have an x, y, z norm over 1, as a damaged clip would. ``mutated_clip``
damages one in the ways a loader must survive: truncation, byte flips, oversized counts and
sizes, NaN and Inf in the duration, the displacement and the field of view, mask bits
above 33, a bone 0 key whose x, y, z norm is over 1 (a valid clip, which must still
sample finite). Layout: docs/formats.md (spec "Data").
"""
from __future__ import annotations

import struct

from hypothesis import strategies as st

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.clip import DESCRIPTOR_SIZE, EVENT_SIZE, KEY_SIZE, VTABLE_PLACEHOLDER

__all__ = ["DESC", "valid_clip", "mutated_clip", "NASTY_FLOATS", "OFF"]

DESC = struct.Struct("<I f f f H H I H H I 5s 30s B I 8s")
assert DESC.size == DESCRIPTOR_SIZE

# Descriptor offsets (spec "Descriptor").
OFF = {"dx": 0x04, "dy": 0x08, "duration": 0x0C, "size_a": 0x10, "size_b": 0x12, "size_c": 0x14,
       "nchan": 0x18, "nevents": 0x1A, "mask": 0x20}
NASTY_FLOATS = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, -1.0, 1e-45, 1e30, 3.4e38, 2184.5, 2185.0)

s16 = st.integers(-32768, 32767)
u8 = st.integers(0, 255)
u16 = st.integers(0, 0xFFFF)
# Rotation x, y, z: anything an s16 holds, with the unit-norm edge and far beyond it.
big_xyz = st.sampled_from([(32767, 32767, 32767), (-32768, 0, 20000), (23170, 23170, 0), (32767, 1, 0)])


def _key(delta: int, extra: int, x: int, y: int, z: int) -> bytes:
    return struct.pack("<BBhhh", delta, extra, x, y, z)


@st.composite
def _channel(draw, max_keys: int = 5, bone0: bool = False) -> bytes:
    n = draw(st.integers(1, max_keys))
    out = []
    for i in range(n):
        xyz = draw(big_xyz | st.tuples(s16, s16, s16)) if bone0 else draw(st.tuples(s16, s16, s16))
        out.append(_key(0 if i == 0 else draw(st.integers(1, 255)), draw(u8), *xyz))
    return b"".join(out)


@st.composite
def _event(draw, frames: int) -> bytes:
    etype = draw(st.sampled_from([8, 9, 10, 11, 12, 15, 0x20, 0x21, 0x22, 0x2C, 0x2D, 0x2E, 0x39, 0x3A, 0x3B,
                                  0x3D, 0x40, 0x48]) | u16)
    body = bytearray(draw(st.binary(min_size=EVENT_SIZE, max_size=EVENT_SIZE)))
    struct.pack_into("<HH", body, 0, draw(st.integers(0, frames + 3) | u16), etype)
    if etype == 0x3A:
        struct.pack_into("<f", body, 8, draw(st.floats(-1e3, 1e3, width=32)))
    return bytes(body)


@st.composite
def valid_clip(draw) -> tuple[bytes, bytes]:
    """A valid (descriptor, keyframes) pair; bone 0, when animated, often turns past a unit norm."""
    frames = draw(st.integers(1, 90))
    bones = sorted(draw(st.sets(st.integers(0, 33), max_size=8)))
    rot = b"".join(draw(_channel(bone0=(b == 0))) for b in bones)
    a = draw(st.just(b"") | _channel())
    b = draw(st.just(b"") | _channel())
    events = [draw(_event(frames)) for _ in range(draw(st.integers(0, 4)))]
    mask = sum(1 << bone for bone in bones).to_bytes(5, "little")
    d = DESC.pack(VTABLE_PLACEHOLDER, draw(st.floats(-10, 10, width=32)), draw(st.floats(-10, 10, width=32)),
                  F.f32(frames / 30.0), len(a), len(b), len(rot), len(bones), len(events), 0, mask,
                  draw(st.binary(min_size=30, max_size=30)), 0, draw(st.integers(0, 0xFFFFFFFF)), b"\0" * 8)
    return d, a + b + rot + b"".join(events)


def _set_f32(buf: bytearray, off: int, v: float) -> None:
    """Write a float32 (NaN and the infinities included) at ``off``."""
    struct.pack_into("<f", buf, off, v)


@st.composite
def mutated_clip(draw) -> tuple[bytes, bytes, list[str]]:
    """A valid pair damaged by 1-3 mutations; returns (descriptor, keyframes, what was done)."""
    d0, k0 = draw(valid_clip())
    d, k = bytearray(d0), bytearray(k0)
    done = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "grow", "size", "nonfinite", "fov", "mask", "bone0"]))
        done.append(kind)
        if kind == "flip":
            for _ in range(draw(st.integers(1, 4))):
                buf = draw(st.sampled_from([d, k] if k else [d]))
                if buf:
                    buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            if draw(st.booleans()):
                del d[draw(st.integers(0, len(d))):]
            else:
                del k[draw(st.integers(0, len(k))):]
        elif kind == "grow":
            k += draw(st.binary(min_size=1, max_size=48))
        elif kind == "size" and len(d) == DESCRIPTOR_SIZE:
            name = draw(st.sampled_from(["size_a", "size_b", "size_c", "nchan", "nevents"]))
            wide = name == "size_c"
            cur = struct.unpack_from("<I" if wide else "<H", d, OFF[name])[0]
            top = 0xFFFFFFFF if wide else 0xFFFF
            v = draw(st.sampled_from([0, top, cur + 1, cur + KEY_SIZE, max(cur - KEY_SIZE, 0), len(k) + KEY_SIZE,
                                      cur + EVENT_SIZE]) | st.integers(0, top))
            struct.pack_into("<I" if wide else "<H", d, OFF[name], min(v, top))
        elif kind == "nonfinite" and len(d) == DESCRIPTOR_SIZE:
            name = draw(st.sampled_from(["duration", "dx", "dy"]))
            _set_f32(d, OFF[name], draw(st.sampled_from(NASTY_FLOATS)))
        elif kind == "fov" and len(d) == DESCRIPTOR_SIZE:
            n_ev = struct.unpack_from("<H", d, OFF["nevents"])[0]
            start = len(k) - n_ev * EVENT_SIZE
            if n_ev and start >= 0:
                at = start + EVENT_SIZE * draw(st.integers(0, n_ev - 1))
                struct.pack_into("<H", k, at + 2, 0x3A)
                _set_f32(k, at + 8, draw(st.sampled_from(NASTY_FLOATS)))
        elif kind == "mask" and len(d) == DESCRIPTOR_SIZE:
            bit = draw(st.integers(34, 39))
            d[OFF["mask"] + bit // 8] |= 1 << (bit % 8)
        elif kind == "bone0" and len(d) == DESCRIPTOR_SIZE:
            # Bone 0's channel is the first of section C when the mask has bit 0: push its
            # keys past a unit norm (the clip stays valid).
            if d[OFF["mask"]] & 1:
                a, b = struct.unpack_from("<HH", d, OFF["size_a"])
                at = a + b
                while at + KEY_SIZE <= len(k):
                    struct.pack_into("<hhh", k, at + 2, *draw(big_xyz))
                    at += KEY_SIZE
                    if at + KEY_SIZE > len(k) or k[at] == 0:
                        break
    return bytes(d), bytes(k), done
