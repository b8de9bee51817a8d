"""Fuzzed clip chunks: only ClipFormatError comes out, naming the field and the byte
offset, never a hang; a clip that loads samples finite at every frame and plays.

The strategies (fuzz_chunks.py) damage valid chunk pairs:
truncation, byte flips, oversized counts and sizes, NaN and Inf in the duration, the
displacement and the field of view, mask bits above 33, bone 0 keys whose x, y, z norm
is over 1. The default run tries QUICK_EXAMPLES per property (the same ones each run);
``pytest -m fuzz`` tries LONG_EXAMPLES random ones. tests/anim/test_clip.py holds the
one-field rejections and flips of random chunks; these add the sampling and the play.
"""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import event

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import (DESCRIPTOR_SIZE, MAX_FRAMES, ClipFormatError, author_clip, encode_clip, parse_clip)
from scuffle.anim.playback.player import Player
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.engine.sampler import ClipBank
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.game.runtime.world import Game

from .fuzz_chunks import OFF, mutated_clip, valid_clip
from .support import fuzz_pair, no_hang

# numpy's overflow and invalid-value warnings mean a NaN or Inf was computed: an error here.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")
PLAY_UPDATES = 40


def check_error(e: ClipFormatError, d: bytes, k: bytes) -> None:
    """A documented error: the chunk, a field, an offset inside that chunk, one message."""
    assert e.chunk in ("descriptor", "keyframes"), e
    assert e.field and e.problem, e
    size = len(d) if e.chunk == "descriptor" else len(k)
    assert 0 <= e.offset <= max(size, 0), (e, size)
    assert str(e).startswith(f"{e.chunk} chunk, {e.field} at byte {e.offset} (0x{e.offset:x}): "), str(e)
    assert "\n" not in str(e)


def sample_every_frame(clip) -> None:
    """The clip sampled at every frame 0..F at three rates (and with the root switched
    off): every value finite."""
    bank = ClipBank([clip])
    n = clip.frames + 1
    t = (np.arange(n, dtype=np.float64) / 30.0).astype(np.float32)
    for rate, flags in ((0.75, 0), (1.0, 0), (0.8, 0x3)):
        poses = bank.sample(np.zeros(n, np.int64), t, np.float32(rate), flags)
        assert poses.is_finite(), (rate, flags)


def play(clip) -> None:
    """The clip played as a loop, and handing over into itself with a blend: finite poses."""
    s = AnimSet.build({1: clip, 2: clip}, {1: author_range(flags=0x1000)}, name="fuzz")
    p = Player()
    h, g = CharacterInstance(s, "h"), CharacterInstance(s, "g")
    p.change(h, p.loop(h, 1))
    p.change(g, p.chain(g, [2, 1], blend=0.1), 0.1)
    for _ in range(PLAY_UPDATES):
        assert p.update([h, g]).is_finite()
    assert p.pool.in_use == p.tasks_out([h, g])


def _loaded_or_rejected(d: bytes, k: bytes) -> None:
    with no_hang(20):
        try:
            clip = parse_clip(d, k)
        except ClipFormatError as e:
            check_error(e, d, k)
            event(f"rejected: {e.field.split()[0] if e.field.startswith('event') else e.field}")
            return
        event("loaded")
        assert math.isfinite(clip.duration) and 0 < clip.duration and clip.frames <= MAX_FRAMES
        assert encode_clip(clip) == (d, k)                  # what loads, writes back the same bytes
        sample_every_frame(clip)
        play(clip)


def _valid_property(dk):
    d, k = dk
    clip = parse_clip(d, k)                                 # a valid pair always loads
    with no_hang(20):
        sample_every_frame(clip)
        play(clip)


def _mutated_property(dkm):
    d, k, _ = dkm
    _loaded_or_rejected(d, k)


test_valid_clips_sample_finite_at_every_frame, test_valid_clips_sample_finite_at_every_frame_fuzz = \
    fuzz_pair(valid_clip())(_valid_property)
test_damaged_clips_raise_only_clip_format_error_or_play_finite, \
    test_damaged_clips_raise_only_clip_format_error_or_play_finite_fuzz = fuzz_pair(mutated_clip())(_mutated_property)


# ---------------------------------------------------------------- the damages one by one


def _base() -> tuple[bytes, bytes]:
    c = author_clip("b0", 12, rotations={0: [(0, (0, 0, 0, 1)), (6, (0, 0, 0.2, 0.98))],
                                         3: [(0, (0, 0, 0, 1))]},
                    velocity=[(0, (0, 1.0, 0))],
                    events=[{"frame": 2, "type": 0x3A, "fov": 60.0}])
    return encode_clip(c)


@pytest.mark.parametrize("field", ["duration", "dx", "dy"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_inf_in_the_descriptor_name_the_field_and_offset(field, value):
    d, k = _base()
    d = bytearray(d)
    struct.pack_into("<f", d, OFF[field], value)
    with pytest.raises(ClipFormatError) as ei:
        parse_clip(bytes(d), k)
    check_error(ei.value, bytes(d), k)
    assert ei.value.offset == OFF[field] and ei.value.chunk == "descriptor"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_inf_in_the_field_of_view_name_the_event_and_offset(value):
    d, k = _base()
    k = bytearray(k)
    ev_at = len(k) - 24
    struct.pack_into("<f", k, ev_at + 8, value)
    with pytest.raises(ClipFormatError) as ei:
        parse_clip(d, bytes(k))
    assert (ei.value.chunk, ei.value.field, ei.value.offset) == ("keyframes", "event 0 field of view", ev_at + 8)


@pytest.mark.parametrize("seconds, ok", [(MAX_FRAMES / 30.0, True), (2184.6, False), (1e30, False), (3.4e38, False)])
def test_a_duration_past_65535_frames_is_refused_before_anything_is_built(seconds, ok):
    """The cursor's frame (+0x1c) is 16 bits: the longest clip has 65535 frames. Longer
    durations were accepted before and then built frame tables of their length (a hang
    or a MemoryError in the sampler, an overflow in the cursor table)."""
    d, k = _base()
    d = bytearray(d)
    struct.pack_into("<f", d, OFF["duration"], seconds)
    with no_hang(30):
        if ok:
            clip = parse_clip(bytes(d), k)
            assert clip.frames == MAX_FRAMES
            sample_every_frame(clip)
        else:
            with pytest.raises(ClipFormatError, match="duration") as ei:
                parse_clip(bytes(d), k)
            assert ei.value.offset == OFF["duration"] and "65535" in ei.value.problem


@pytest.mark.parametrize("bit", range(34, 40))
def test_mask_bits_above_33_name_the_mask_byte(bit):
    d, k = _base()
    d = bytearray(d)
    d[OFF["mask"] + bit // 8] |= 1 << (bit % 8)
    with pytest.raises(ClipFormatError) as ei:
        parse_clip(bytes(d), k)
    assert (ei.value.field, ei.value.offset) == ("bone mask", OFF["mask"] + bit // 8)
    assert f"bone {bit}" in ei.value.problem


@pytest.mark.parametrize("xyz", [(32767, 32767, 32767), (-32768, 0, 20000), (0, 0, -32768), (23170, 23170, 1)])
@pytest.mark.parametrize("rate_flag", [0, 0x1000])
def test_a_bone_0_key_past_a_unit_norm_turns_the_body_by_a_finite_angle(xyz, rate_flag):
    """Bone 0 keys are rebuilt with w = sqrt(max(0, 1 - |xyz|^2)) = 0: the turn's slerp
    by the rate (0.75) and the human's turn (2 acos w) stay finite through the ECS."""
    d, k = _base()
    k = bytearray(k)
    a, b = struct.unpack_from("<HH", d, OFF["size_a"])
    for i in range(2):                                       # bone 0 is section C's first channel
        struct.pack_into("<hhh", k, a + b + 8 * i + 2, *xyz)
    clip = parse_clip(d, bytes(k))
    sample_every_frame(clip)
    s = AnimSet.build({1: clip}, {1: author_range(flags=rate_flag)}, name="turn")
    g = Game()
    try:
        g.add_human("h", s)
        g.change("h", g.player.loop(g.instance("h"), 1))
        headings = []
        for _ in range(30):
            g.step()
            headings.append(g.body("h").heading)
            assert np.all(np.isfinite(g.body("h").position)) and np.all(np.isfinite(g.ctx.bone_pos))
        assert all(math.isfinite(h) and -180.0 < h <= 180.0 for h in headings)
        assert len(set(headings)) > 1                          # it does turn
    finally:
        g.close()


def test_the_descriptor_size_is_checked_first():
    d, k = _base()
    for n in (0, 1, DESCRIPTOR_SIZE - 1, DESCRIPTOR_SIZE + 1):
        dd = (d + b"\0")[:n]
        with pytest.raises(ClipFormatError) as ei:
            parse_clip(dd, k)
        check_error(ei.value, dd, k)
        assert ei.value.field == "size"
