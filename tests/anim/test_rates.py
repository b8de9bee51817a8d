"""Playback rates: CfgAnimSpeeds, the range flags that pick one, and the blends' speed.

Spec: "Playback rate" (0x00104a38 Anim_RateMultiplier; CfgAnimSpeeds(default, f800,
f1000, f2000) sets 0x00510260-0x0051026c; .data holds 1.0, 0.85, 1.0, 1.0 before it
runs, 0.75, 0.8, 1.0, 0.9 at runtime; blends (types 9, 10, 12, 13) use the human's
speed multiplier), "Paired tasks" (the attacker's rate).
"""
from __future__ import annotations

import itertools
import math

import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.data.rangelist import RateClass, author_range, rate_class
from scuffle.anim.data.rates import DATA_SPEEDS, RATE_MASK, RUNTIME_SPEEDS, CfgAnimSpeeds, RateFlags
from scuffle.anim.engine.stack import CharacterInstance

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def test_runtime_values():
    s = CfgAnimSpeeds()
    assert (s.default, s.f800, s.f1000, s.f2000) == (F.f32(0.75), F.f32(0.8), 1.0, F.f32(0.9))
    assert s == RUNTIME_SPEEDS
    assert RUNTIME_SPEEDS.as_list() == [F.f32(0.75), F.f32(0.8), 1.0, F.f32(0.9)]
    assert PlayerOptions().speeds == RUNTIME_SPEEDS


def test_data_values():
    assert DATA_SPEEDS.as_list() == [1.0, F.f32(0.85), 1.0, 1.0]


def test_values_are_float32():
    s = CfgAnimSpeeds(0.7, 0.81, 1.1, 0.93)
    assert s.as_list() == [F.f32(0.7), F.f32(0.81), F.f32(1.1), F.f32(0.93)]
    assert s.default != 0.7                                  # 0.699999988..., as stored in .data


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.75"])
def test_bad_rates_rejected(bad):
    with pytest.raises(ValueError):
        CfgAnimSpeeds(default=bad)


@pytest.mark.parametrize("flags,expect", [
    (0x0, 0.75), (0x800, 0.8), (0x1000, 1.0), (0x2000, 0.9),
    (0x400, 0.75), (0x100 | 0x400, 0.75),                     # other bits do not pick a rate
    (0x800 | 0x1000, 0.8), (0x800 | 0x2000, 0.8), (0x1000 | 0x2000, 1.0), (0x3800, 0.8),  # ours: 0x800 > 0x1000 > 0x2000
])
def test_flag_selection(flags, expect):
    assert RUNTIME_SPEEDS.rate_for(flags) == F.f32(expect)


def test_flag_selection_agrees_with_the_rate_class():
    speeds = CfgAnimSpeeds(0.1, 0.2, 0.3, 0.4)
    for bits in itertools.product((0, 0x800), (0, 0x1000), (0, 0x2000), (0, 0x400)):
        flags = sum(bits)
        assert speeds.rate_for(flags) == speeds.as_list()[rate_class(flags)]
    assert int(RATE_MASK) == 0x3800 and RateFlags.F800 == 0x800 and RateClass.F2000 == 3


def rate_set():
    clips = {i: author_clip(f"c{i}", 30) for i in (1, 2, 3, 4, 5, 6, 7, 8, 100, 101, 102, 103, 104, 105, 106, 107)}
    ranges = {2: author_range(flags=0x800), 3: author_range(flags=0x1000), 4: author_range(flags=0x2000)}
    ranges.update({i: author_range(flags=0x1000) for i in range(100, 108)})
    return AnimSet.build(clips, ranges)


@pytest.mark.parametrize("speeds", [RUNTIME_SPEEDS, DATA_SPEEDS, CfgAnimSpeeds(0.5, 0.6, 0.7, 0.65)])
def test_single_clips_take_the_rate_of_their_range_flags(speeds):
    p = Player(PlayerOptions(speeds=speeds))
    h = CharacterInstance(rate_set(), "h", speed=0.5)
    want = dict(zip((1, 2, 3, 4), speeds.as_list()))
    for i, r in want.items():
        assert p.rate_of(h.anim_set, i) == r
        assert p.loop(h, i).rate == r
        assert p.clip(h, i).rate == r
        assert p.hold(h, i).rate == r
    head = p.chain(h, [2, 4, 1])
    assert [head.rate, head.next.rate, head.next.next.rate] == [want[2], want[4], want[1]]
    assert p.loop(h, 1, rate=0.3).rate == F.f32(0.3)          # an explicit rate wins


def test_blends_use_the_speed_multiplier():
    p = Player()
    h = CharacterInstance(rate_set(), "h", speed=0.6)
    assert p.fade(h, 0.2).rate == F.f32(0.6)
    assert p.mix(h, 2, 3).rate == F.f32(0.6)                   # not 0x800's 0.8
    assert p.gait(h, (100, 101, 102, 103, 103)).rate == F.f32(0.6)   # not the gait clips' 1.0
    assert p.direction(h, 100).rate == F.f32(0.6)
    assert p.pick(h, [1, 2, 3, 4], 0.9).rate == F.f32(0.9)     # type 11: the rate it is given
    h.speed = 1.0
    assert p.gait(h, (100, 101, 102, 103, 103)).rate == 1.0


def test_blend_advances_at_the_speed_multiplier():
    p = Player()
    h = CharacterInstance(rate_set(), "h", speed=0.6)
    g = p.gait(h, (100, 101, 102, 103, 103))
    p.insert_bottom(h, g)
    p.update([h])
    assert g.leading_cursor().time == F.mul(F.DT, F.f32(0.6))


def test_paired_clip_takes_the_attackers_rate():
    clip = author_clip("73", 20)
    victim = CharacterInstance(AnimSet.build({73: clip}, {73: author_range(flags=0x1000)}), "v")
    attacker = CharacterInstance(AnimSet.build({73: clip}, {73: author_range(flags=0x2000)}), "a")
    p = Player()
    assert p.paired(victim, attacker, 73).rate == F.f32(0.9)
    assert p.paired_hold(victim, attacker, 73).rate == F.f32(0.9)
    assert p.clip(victim, 73).rate == 1.0


def test_a_walk_start_lasts_longer_at_075():
    """The walk start's 0.333 s (10 frames) plays at 0.75: about 0.45 s (14 updates)."""
    p = Player()
    s = AnimSet.build({5: author_clip("walk_start", 10), 388: author_clip("idle", 60)})
    h = CharacterInstance(s, "h")
    p.change(h, p.chain(h, [5, 388]))
    p.flush()
    n = next(k for k in range(1, 40) if (p.update([h]), h.record.anim_id)[1] != 5)
    assert n == math.ceil((10 - 0.5) / 0.75) == 13
    assert n / 30 == pytest.approx(0.444, abs=0.02)
