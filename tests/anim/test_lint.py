"""anim.data.lint: the clips that reach an end step whose overshoot is exactly 0.0.

Spec: "When a clip ends" (a 2-frame clip at 0.75 reaches its k = 2 tie exactly; the
callers take 0.0 as "not ended"; the check over every set it asks for).
"""
from __future__ import annotations

import time

import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip
from scuffle.anim.playback.cursor import Cursor
from scuffle.anim.data.lint import Finding, end_step, lint_clip, lint_set, never_ending
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.data.rates import DATA_SPEEDS, RUNTIME_SPEEDS, CfgAnimSpeeds


def cursor_never_ends(clip, rate: float) -> bool:
    """The same question asked of the real cursor."""
    c = Cursor(clip, 0)
    s = c.step_size(F.DT, F.f32(rate))
    for _ in range(2000):
        over = c.advance(s, None)
        if c.at_end:
            return over == 0.0
    raise AssertionError("never reached the end test")


def test_two_frames_at_075_never_end():
    clip = author_clip("short", 2)
    assert never_ending(clip, 0.75)
    assert end_step(clip, 0.75) == (2, 0.0)
    for rate in (0.8, 0.9, 1.0, 0.85):
        assert not never_ending(clip, rate)
    assert not never_ending(author_clip("longer", 3), 0.75)


@pytest.mark.parametrize("rate", [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.25, 2.0])
def test_agrees_with_the_cursor(rate):
    found = []
    for frames in range(1, 61):
        clip = author_clip("c", frames)
        got = never_ending(clip, rate)
        assert got == cursor_never_ends(clip, rate), (frames, rate)
        if got:
            found.append(frames)
    if rate == 0.75:
        assert found == [2]                                    # the only one at the runtime default


def naive_end_step(clip, rate: float):
    """One step at a time, as the cursor does (no runs)."""
    step = F.mul(F.DT, F.f32(rate))
    end, limit = F.end_frame(clip.duration), F.sub(clip.duration, F.HALF_FRAME)
    t = 0.0
    for k in range(1, 10 ** 6):
        nt = F.add(t, step)
        if F.frame_of(nt) >= end:
            return k, F.sub(nt, limit)
        t = nt


@pytest.mark.parametrize("frames,rate", [(60, 0.01), (60, 0.003), (200, 0.05), (680, 0.75), (137, 0.33),
                                         (45, 1.7), (9, 3.0), (2, 0.75), (4, 0.7)])
def test_runs_of_steps_give_the_same_end(frames, rate):
    clip = author_clip("c", frames)
    assert end_step(clip, rate) == naive_end_step(clip, rate)


def test_other_rates_have_their_own():
    assert never_ending(author_clip("c", 4), 0.7)
    assert never_ending(author_clip("c", 2), 0.5) and never_ending(author_clip("c", 1), 0.5)


def test_terminates_quickly():
    t0 = time.perf_counter()
    assert not never_ending(author_clip("long", 680), 0.75)
    assert not never_ending(author_clip("long", 680), 1e-6)   # a stalled sum stops
    assert not never_ending(author_clip("c", 2), 0.0)
    assert not never_ending(author_clip("c", 2), float("nan"))
    assert not never_ending(author_clip("c", 2), -1.0)
    assert time.perf_counter() - t0 < 2.0
    assert end_step(author_clip("c", 30), 1.0) == (30, pytest.approx(1 / 60, abs=1e-6))


def short_set(flags: int) -> AnimSet:
    two = author_clip("two", 2)
    ranges = {5: author_range(flags=flags), 6: author_range(flags=flags)} if flags else {}
    return AnimSet.build({5: two, 6: two, 388: author_clip("idle", 60), 7: author_clip("three", 3)}, ranges,
                         name="s")


def test_lint_set_flags_a_two_frame_clip_at_no_flag():
    out = lint_set(short_set(0), RUNTIME_SPEEDS, source="set.res")
    assert [f.anim_id for f in out] == [5, 6]                 # every id, a shared clip reported per id
    f = out[0]
    assert isinstance(f, Finding)
    assert (f.name, f.frames, f.rate, f.range_flags, f.update, f.source) == ("two", 2, F.f32(0.75), 0, 2, "set.res")
    assert f.to_json() == {"source": "set.res", "id": 5, "name": "two", "frames": 2, "rate": 0.75,
                           "range_flags": 0, "update": 2}
    assert "id 5" in f.text() and "0.75" in f.text()


@pytest.mark.parametrize("flags", [0x1000, 0x800, 0x2000])
def test_lint_set_passes_the_clip_at_a_flagged_rate(flags):
    assert lint_set(short_set(flags), RUNTIME_SPEEDS) == []


def test_lint_set_uses_the_speeds_given():
    assert lint_set(short_set(0), DATA_SPEEDS) == []          # 1.0 before CfgAnimSpeeds runs
    out = lint_set(short_set(0x2000), CfgAnimSpeeds(0.75, 0.8, 1.0, 0.75))
    assert [f.anim_id for f in out] == [5, 6]


def test_lint_clip():
    assert lint_clip(author_clip("two", 2), 1.0) is None
    f = lint_clip(author_clip("two", 2), 0.75, source="x.desc")
    assert f.anim_id is None and "clip 'two'" in f.text()
