"""Time like the PS2: the cursor's advance, the clip-end rule, loops and events.

Every length is counted as the spec counts it: from the first update showing the id
(the update the change is made, k = 0) to the first update showing the next id, with
the real Player (chain + change, then repeated updates).

Spec: "The cursor", "Playing a clip", "When a clip ends" (the table, the late ties,
the overshoot of 0.0, the loop's period D - 1/60), "Coney's implementation" (the
event rule uint(t x 30 + 0.5), the typed events), "Data" (Events).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.playback.cursor import Cursor
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.data.rates import CfgAnimSpeeds
from scuffle.anim.engine.sampler import CursorFlags
from scuffle.anim.engine.stack import CharacterInstance

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

X = 19          # the clip under test
NEXT = 388      # the idle it hands over to
NO_FLAG, F800, F1000, F2000 = 0, 0x800, 0x1000, 0x2000


def clip_of(frames: int, name: str = "X", events=()) -> object:
    """A clip of ``frames`` frames with a turning bone so its pose changes over time."""
    return author_clip(name, frames, rotations={5: [(0, (0, 0, 0, 1)), (frames, (0.3, 0, 0, 0.954))]},
                       events=list(events))


def chain_set(frames: int, flags: int, events=()) -> AnimSet:
    ranges = {X: author_range(flags=flags)} if flags else {}
    return AnimSet.build({X: clip_of(frames, "X", events), NEXT: clip_of(60, "idle")}, ranges, name="t")


def play_chain(anim_set: AnimSet, *, options: PlayerOptions | None = None, limit: int = 400,
               sample: bool = True):
    """Play [X, NEXT] from update 0; returns (updates until NEXT shows or None, the X
    cursor's (time, frame) on each update that still showed X, the player, the human,
    the events fired on each update)."""
    p = Player(options)
    h = CharacterInstance(anim_set, "a")
    head = p.chain(h, [X, NEXT])
    p.change(h, head, 0.0)
    p.flush()
    assert h.record.anim_id == X                         # update 0 (k = 0) shows X at time 0
    assert head.cursor.time == 0.0
    shown, fired = [], []
    for k in range(1, limit + 1):
        if sample:
            p.update([h])
        else:
            p.step([h])
            p.flush()
        fired.append(list(h.events))
        if h.record.anim_id != X:
            return k, shown, p, h, fired
        shown.append((head.cursor.time, head.cursor.frame))
    return None, shown, p, h, fired


def rule(frames: int, rate: str) -> int:
    """ceil((F - 0.5) / r), one more on an exact tie k x r = F - 0.5 (the late tie)."""
    x = (Fraction(frames) - Fraction(1, 2)) / Fraction(rate)
    return math.ceil(x) + (1 if x.denominator == 1 else 0)


# ---------------------------------------------------------------- the clip-end table

# (what, F, range flags, measured updates), from "When a clip ends" and the pages it cites.
TABLE = [
    ("19 SSS3", 21, F800, 26),
    ("20 SSS3_HOLD", 26, F800, 32),
    ("17 SSX3", 27, F800, 34),
    ("11 X1 / 14 XS2", 24, F800, 30),
    ("15 SX2", 16, F800, 20),
    ("389 the attack's end clip", 19, NO_FLAG, 25),
    ("34 Cross with a bat", 28, NO_FLAG, 37),
    ("36 (a late tie)", 26, NO_FLAG, 35),
    ("69", 12, NO_FLAG, 16),
    ("440 fence climb (tie)", 8, NO_FLAG, 11),
    ("441 fence climb (tie)", 11, NO_FLAG, 15),
    ("442 fence climb", 10, NO_FLAG, 13),
    ("1 the dive", 46, NO_FLAG, 61),
]


@pytest.mark.parametrize("what,frames,flags,measured", TABLE, ids=[t[0] for t in TABLE])
def test_clip_end_table(what, frames, flags, measured):
    n, shown, p, h, _ = play_chain(chain_set(frames, flags))
    assert n == measured
    times = [t for t, _ in shown]
    assert len(shown) == measured - 1                    # updates 1 .. n-1 still show X
    assert max(times) < F.f32(frames / 30.0)             # the time never reaches D
    assert shown[-1][1] == frames - 1                    # the last frame shown is F - 1
    assert all(b > a for a, b in zip(times, times[1:]))  # it stepped on every update but the end


@pytest.mark.parametrize("frames,flags,rate", [(21, F800, "0.8"), (19, NO_FLAG, "0.75"), (26, NO_FLAG, "0.75"),
                                                (10, F2000, "0.9"), (14, F2000, "0.9"), (7, F1000, "1.0")])
def test_range_flags_pick_the_rate(frames, flags, rate):
    n, _, p, h, _ = play_chain(chain_set(frames, flags), sample=False)
    assert n == rule(frames, rate)


def test_rates_via_range_flags():
    p = Player()
    s = AnimSet.build({1: clip_of(5), 2: clip_of(5), 3: clip_of(5), 4: clip_of(5)},
                      {2: author_range(flags=F800), 3: author_range(flags=F2000), 4: author_range(flags=F1000)})
    h = CharacterInstance(s)
    assert [p.loop(h, i).rate for i in (1, 2, 3, 4)] == [F.f32(0.75), F.f32(0.8), F.f32(0.9), 1.0]


def test_ceil_f_over_r_is_one_too_many_for_the_named_clips():
    for frames, flags, rate in [(21, F800, 0.8), (26, F800, 0.8), (19, NO_FLAG, 0.75), (28, NO_FLAG, 0.75),
                                (46, NO_FLAG, 0.75)]:
        n = play_chain(chain_set(frames, flags), sample=False)[0]
        assert n == math.ceil(frames / rate) - 1


def test_without_the_late_tie_one_too_few():
    for frames in (26, 8, 11):                           # 36, 440, 441 at 0.75
        n = play_chain(chain_set(frames, NO_FLAG), sample=False)[0]
        x = (Fraction(frames) - Fraction(1, 2)) / Fraction("0.75")
        assert x.denominator == 1                        # an exact tie
        assert n == int(x) + 1


# ---------------------------------------------------------------- the sweep

SWEEP_RATES = ["0.75", "0.8", "0.85", "0.9", "0.95", "1.0", "0.55", "0.6", "0.65"]


@pytest.mark.parametrize("rate", SWEEP_RATES)
def test_sweep_every_length(rate):
    """F = 2..60 at each rate (the default slot of CfgAnimSpeeds), all humans stepped together."""
    ids = list(range(2, 61))
    s = AnimSet.build({**{f: clip_of(f) for f in ids}, 700: clip_of(60, "idle")}, name="sweep")
    p = Player(PlayerOptions(speeds=CfgAnimSpeeds(default=float(rate))))
    humans, heads = [], []
    for f in ids:
        h = CharacterInstance(s, f"F{f}")
        heads.append(p.chain(h, [f, 700]))
        p.change(h, heads[-1], 0.0)
        humans.append(h)
    p.flush()
    ended = {}
    last = {f: (0.0, 0) for f in ids}
    for k in range(1, 125):
        p.step(humans)
        p.flush()
        for f, h, head in zip(ids, humans, heads):
            if f in ended:
                continue
            if h.record.anim_id != f:
                ended[f] = k
            else:
                last[f] = (head.cursor.time, head.cursor.frame)
    ties = 0
    for f in ids:
        x = (Fraction(f) - Fraction(1, 2)) / Fraction(rate)
        tie = x.denominator == 1
        if rate == "0.75" and f == 2:
            assert f not in ended                        # the zero overshoot (its own tests)
            continue
        ties += tie
        assert ended[f] == math.ceil(x) + (1 if tie else 0), (f, rate)
        assert last[f][0] < F.f32(f / 30.0)
        assert last[f][1] == f - 1
    if rate in ("0.75", "0.9"):
        assert ties >= 6                                 # the ties exist at these rates


def test_the_tie_rests_on_toward_zero_rounding():
    """Summed with round-to-nearest, 440 and 441 would end on time (10 and 14 updates)."""
    def nearest_length(frames, rate):
        t, s = np.float32(0), np.float32(np.float32(1 / 30) * np.float32(rate))
        for k in range(1, 200):
            if int(np.float32(np.float32(t + s) * np.float32(30)) + np.float32(0.5)) >= frames:
                return k
            t = np.float32(t + s)
    assert (nearest_length(8, 0.75), nearest_length(11, 0.75)) == (10, 14)
    assert play_chain(chain_set(8, NO_FLAG), sample=False)[0] == 11
    assert play_chain(chain_set(11, NO_FLAG), sample=False)[0] == 15


# ---------------------------------------------------------------- the overshoot of 0.0

def test_two_frames_at_075_reach_an_overshoot_of_exactly_zero():
    c = Cursor(clip_of(2), 0)
    s = c.step_size(F.DT, F.f32(0.75))
    assert c.advance(s, None) == 0.0 and not c.at_end     # k = 1: frame 1
    assert c.frame == 1
    t1 = c.time
    over = c.advance(s, None)                              # k = 2: the tie, exact
    assert c.at_end and over == 0.0
    assert c.time == t1 and c.frame == 1                   # nothing changed


def test_zero_overshoot_clip_never_ends_by_default():
    n, shown, p, h, _ = play_chain(chain_set(2, NO_FLAG), limit=200)
    assert n is None                                       # 200 updates, still showing X
    assert h.record.anim_id == X
    times = {t for t, _ in shown}
    assert times == {F.mul(F.DT, F.f32(0.75))}             # the time stays after the first step
    assert {fr for _, fr in shown} == {1}


def test_zero_overshoot_option_hands_over_at_update_2():
    n, shown, *_ = play_chain(chain_set(2, NO_FLAG), options=PlayerOptions(end_zero_overshoot=True))
    assert n == 2
    assert shown[-1][1] == 1


def test_option_changes_nothing_else():
    for frames, flags in [(21, F800), (26, NO_FLAG), (8, NO_FLAG), (46, NO_FLAG)]:
        a = play_chain(chain_set(frames, flags), sample=False)[0]
        b = play_chain(chain_set(frames, flags), options=PlayerOptions(end_zero_overshoot=True), sample=False)[0]
        assert a == b


def _loop_wraps(frames: int, options=None, updates: int = 200, anim_set=None, rate=None):
    s = anim_set or AnimSet.build({NEXT: clip_of(frames, "idle")})
    p = Player(options)
    h = CharacterInstance(s, "a")
    got = []
    t = p.loop(h, NEXT, on_wrap=got.append, rate=rate)
    p.change(h, t, 0.0)
    p.flush()
    wraps, times = [], []
    for k in range(1, updates + 1):
        before = t.wraps
        p.step([h])
        p.flush()
        if t.wraps != before:
            wraps.append(k)
            times.append(t.cursor.time)
    return wraps, times, got, h, t


def test_two_frame_loop_never_wraps_by_default():
    wraps, _, got, h, t = _loop_wraps(2)
    assert wraps == [] and got == []
    assert t.cursor.time == F.mul(F.DT, F.f32(0.75))


def test_two_frame_loop_wraps_with_the_option():
    wraps, times, got, h, t = _loop_wraps(2, PlayerOptions(end_zero_overshoot=True), 20)
    assert wraps == list(range(2, 21, 2))
    assert times == [0.0] * 10                             # restarted and advanced by 0.0
    assert len(got) == 10 and all(g is h for g in got)


# ---------------------------------------------------------------- the loop 388

def test_loop_388_period_is_d_minus_a_half_frame():
    wraps, times, got, h, t = _loop_wraps(60, updates=2400)
    assert wraps[:6] == [80, 159, 239, 318, 397, 477]
    trunc = [math.floor(x * 1e4) / 1e4 for x in times[:12]]
    assert trunc == [0.0166, 0.0083, 0.0249] * 4
    span = len(wraps) - 1
    assert span >= 27
    span -= span % 3
    assert (wraps[span] - wraps[0]) / span == pytest.approx(79 + 1 / 3, abs=1e-9)
    # each pass: D - 1/60 of clip time at 0.025 s an update
    step = F.mul(F.DT, F.f32(0.75))
    assert (2.0 - 1 / 60) / step == pytest.approx(79 + 1 / 3, rel=1e-5)
    assert len(got) == len(wraps) and all(g is h for g in got)
    assert t.cursor.frame < 60 and t.cursor.time < 2.0


def test_loop_wrap_on_the_cursor():
    c = Cursor(clip_of(60), 0)
    s = c.step_size(F.DT, F.f32(0.75))
    for k in range(1, 80):
        assert c.advance(s, None) == 0.0
    assert c.frame == 59 and c.time < 2.0
    over = c.advance(s, None)
    assert c.at_end and over == pytest.approx(c.time + s - (2.0 - 1 / 60), abs=1e-6)
    assert math.floor(over * 1e4) / 1e4 == 0.0166


# ---------------------------------------------------------------- events

def _event_updates(frames: int, flags: int, event_frames, rate_str: str):
    evs = [make_event(f, 11, word=1000 + f) for f in event_frames]
    n, shown, p, h, fired = play_chain(chain_set(frames, flags, evs), sample=False)
    when = {}
    for k, fs in enumerate(fired, start=1):
        for fe in fs:
            if fe.anim_id == X:
                assert fe.event.frame not in when            # fires once
                when[fe.event.frame] = k
    return n, when


@pytest.mark.parametrize("flags,rate", [(NO_FLAG, "0.75"), (F800, "0.8"), (F2000, "0.9")])
def test_event_fires_when_the_cursor_frame_reaches_it(flags, rate):
    frames = 21
    n, when = _event_updates(frames, flags, range(frames), rate)
    for f in range(frames):
        x = (Fraction(f) - Fraction(1, 2)) / Fraction(rate)
        expect = max(1, math.ceil(x) + (1 if x.denominator == 1 and x > 0 else 0))
        if (f, rate) == (2, "0.75"):
            expect = 2                                       # the one tie that is exact (k = 2)
        assert when[f] == expect, (f, rate)


def test_event_at_frame_8_fires_on_update_11_at_075():
    n, when = _event_updates(21, NO_FLAG, [8], "0.75")
    assert when == {8: 11}


def test_frame_0_events_fire_on_the_first_step_not_at_k0():
    s = chain_set(21, F800, [make_event(0, 11, word=7)])
    p = Player()
    h = CharacterInstance(s, "a")
    p.change(h, p.chain(h, [X, NEXT]), 0.0)
    p.flush()
    assert h.events == []                                    # k = 0: nothing fired
    p.update([h])
    assert [(fe.event.frame, fe.event.word) for fe in h.events] == [(0, 7)]
    p.update([h])
    assert h.events == []


def test_events_at_or_past_f_never_fire_in_a_clip_that_hands_over():
    n, when = _event_updates(21, F800, [20, 21, 25], "0.8")
    assert n == 26
    assert when == {20: 25}


def test_muted_cursor_fires_nothing():
    s = chain_set(21, F800, [make_event(f, 11, word=f) for f in range(21)])
    p = Player()
    h = CharacterInstance(s, "a")
    head = p.chain(h, [X, NEXT], flags=0x10)
    assert head.cursor.flags & CursorFlags.MUTED
    p.change(h, head, 0.0)
    p.flush()
    for _ in range(40):
        p.update([h])
        assert h.events == []


def test_typed_events():
    evs = [make_event(3, 11, word=0x00001234),
           make_event(3, 0x21, (0, 6), (0.1, 0.2, 0.3), code="bld"),
           make_event(4, 0x21, (0, 9), code="dus")]
    s = chain_set(21, F800, evs)
    p = Player()
    h = CharacterInstance(s, "a")
    p.change(h, p.chain(h, [X, NEXT]), 0.0)
    p.flush()
    got = []
    for _ in range(10):
        p.update([h])
        got += h.events
    assert [fe.event.type for fe in got] == [11, 0x21, 0x21]   # file order within a frame
    snd, bld, dus = got
    assert snd.event.word == 0x1234 and snd.anim_id == X
    assert bld.event.code == "bld" and bld.event.name == "sub_bld" and bld.event.args == (0, 6)
    assert bld.event.position == pytest.approx((0.1, 0.2, 0.3), abs=1 / 1023)
    assert dus.event.name == "sub_dus"
    assert all(fe.task is not None and fe.task.anim_id() == X for fe in got)


def test_loop_wrap_fires_the_frame_0_events_again():
    """Ours: the wrap restarts and advances the cursor, so frame 0 events fire each pass."""
    s = AnimSet.build({NEXT: clip_of(10, "idle", [make_event(0, 11, word=1), make_event(9, 11, word=9)])})
    p = Player()
    h = CharacterInstance(s, "a")
    t = p.loop(h, NEXT)
    p.change(h, t, 0.0)
    p.flush()
    fired = []
    for k in range(1, 60):
        before = t.wraps
        p.step([h])
        p.flush()
        for fe in h.events:
            fired.append((k, fe.event.word, t.wraps != before))
    zero = [(k, w) for k, w, wrapped in fired if w == 1]
    assert zero[0] == (1, 1)
    assert all(wrapped for k, w, wrapped in fired if w == 1 and k > 1)
    assert len(zero) == 1 + t.wraps
    assert len([f for f in fired if f[1] == 9]) >= t.wraps


def test_set_time_skips_events():
    c = Cursor(clip_of(30, events=[make_event(f, 11, word=f) for f in range(30)]), 0)
    c.set_time(F.f32(10 / 30))
    assert c.frame == 10
    sink = []
    c.advance(c.step_size(F.DT, 1.0), sink)
    assert [fe.event.frame for fe in sink] == [11]


def test_cursor_basics():
    clip = clip_of(21)
    c = Cursor(clip, 3, anim_id=19, flags=0x13)
    assert c.end == 21 and c.duration == F.f32(21 / 30)
    assert c.flags == CursorFlags(0x13) and c.bank_index == 3 and c.anim_id == 19
    c.advance(c.step_size(F.DT, 1.0), None)
    assert c.time == F.DT and c.frame == 1
    assert c.normalised_time() == pytest.approx(1 / 21, rel=1e-6)
    c.restart()
    assert (c.time, c.frame, c.at_end) == (0.0, 0, False)
