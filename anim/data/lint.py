"""Clips that never end: an end step whose overshoot is exactly 0.0.

The callers of AnimCursor_Advance take an overshoot of exactly 0.0 as "not ended",
although the end test did fire and the cursor was not stepped, so such a clip repeats
that update for ever: a type 3 never hands over, a loop never wraps. It happens when
the summed time lands exactly on D - 1/60 at the end step, e.g. a 2-frame clip at rate
0.75 (k = 2). ``never_ending`` replays the cursor's arithmetic (anim.maths.f32) from time 0;
``lint_set`` checks every id of a set at the rate its range flags pick.

Spec: "When a clip ends" (the overshoot of 0.0, and the check it asks for: clips of
2/30 s at the 0.75 rate, "not done"). Catalogue: docs/original-bugs.md.
Original: 0x001044a0 AnimCursor_Advance; 0x00105af0, 0x00108bd0, 0x00105770 (the callers).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.clip import Clip
from scuffle.anim.data.rates import CfgAnimSpeeds

__all__ = ["Finding", "never_ending", "end_step", "lint_set", "lint_clip"]


def end_step(clip: Clip, rate: float, dt: float = F.DT) -> tuple[int, float] | None:
    """The first update k (the first step is k = 1) whose step would reach frame F, and the
    overshoot it returns; None when no step ever reaches it.

    In: a clip, a playback rate (a float32 value is used as is), the update's dt. The
    time is summed as the cursor sums it (float32, rounded toward zero). Steps inside
    one binade all add the same truncated increment, so runs of them are taken at once
    (``_steady``), up to the first time at frame F found by bisection: at most
    _MAX_ITERATIONS (4096) iterations, a few hundred in practice, whatever the rate. A step of 0, a
    non-finite or negative rate, or a time that stops growing gives None.
    Original: 0x001044a0 AnimCursor_Advance.
    """
    r = F.f32(float(rate))
    if not (r > 0.0 and math.isfinite(r)):
        return None
    step = F.mul(dt, r)
    if not step > 0.0:
        return None
    end = F.end_frame(clip.duration)
    limit = F.sub(clip.duration, F.HALF_FRAME)
    t_end = _first_time_at(end)
    t, k = 0.0, 0
    for _ in range(_MAX_ITERATIONS):
        nt = F.add(t, step)
        k += 1
        if F.frame_of(nt) >= end:
            return k, F.sub(nt, limit)
        if nt == t:
            return None
        n, d = _steady(nt, step, t_end)
        t, k = nt + n * d, k + n
    raise AssertionError(f"end_step: no end after {_MAX_ITERATIONS} iterations (rate {r})")


# Each binade of the time takes at most a few iterations (a run, then single steps up to
# the next binade or the end), and float32 has under 280 binades: a bound with room.
_MAX_ITERATIONS = 4096


def _first_time_at(end: int) -> float:
    """The smallest positive float32 time whose frame (frame_of) is ``end`` or more.

    frame_of never decreases as the time grows, and positive float32 values are ordered
    as their bit patterns, so 31 bisection steps over the patterns find it. Returns inf
    when no finite time reaches ``end``.
    """
    lo, hi = 0, 0x7F800000                       # +0 .. +inf as bit patterns
    bits = lambda b: struct.unpack("<f", struct.pack("<I", b))[0]   # noqa: E731
    if F.frame_of(bits(hi - 1)) < end:
        return math.inf
    while hi - lo > 1:                           # frame_of(bits(lo)) < end <= frame_of(bits(hi))
        mid = (lo + hi) // 2
        if F.frame_of(bits(mid)) >= end:
            hi = mid
        else:
            lo = mid
    return bits(hi)


def _steady(t: float, step: float, t_end: float) -> tuple[int, float]:
    """How many further steps from ``t`` can be taken at once, and their increment.

    Within t's binade [2^(e-1), 2^e) every sum is truncated to the same grid (ulp
    2^(e-24)), so each step adds d = floor(step / ulp) x ulp while the exact sum stays
    below 2^e. Returns (n, d) with n steps that stay in the binade and whose sums stay
    below ``t_end``, the first time at the end frame (n = 0 when none can be skipped
    safely); the step after the run is taken singly and tested as the cursor tests it.
    """
    if t < 2.0 ** -126:
        return 0, 0.0
    e = math.frexp(t)[1]
    ulp = 2.0 ** (e - 24)
    d = math.floor(step / ulp) * ulp
    if d <= 0.0:
        return 0, 0.0
    top = 2.0 ** e
    in_binade = math.floor((top - step - t) / d)              # sums t + j d + step < 2^e
    below_end = math.ceil((t_end - t) / d) - 1 if math.isfinite(t_end) else in_binade
    n = min(in_binade, below_end) - 1                          # sums t + j d < t_end
    return (n, d) if n > 0 else (0, 0.0)


def never_ending(clip: Clip, rate: float) -> bool:
    """True when the clip, advanced from time 0 at ``rate``, reaches an end step whose
    overshoot is exactly 0.0 (the original then never ends or wraps it).

    In: a clip and its playback rate. Out: bool. Replays at most F / rate + 2 steps, most
    of them in runs (``end_step``).
    """
    found = end_step(clip, rate)
    return found is not None and found[1] == 0.0


@dataclass(frozen=True)
class Finding:
    """One never-ending clip: where it is, its id (None for a lone clip), name, frames F,
    the rate it plays at, the range flags that picked it, and the stuck update k."""

    source: str
    anim_id: int | None
    name: str
    frames: int
    rate: float
    range_flags: int
    update: int

    def to_json(self) -> dict:
        return {"source": self.source, "id": self.anim_id, "name": self.name, "frames": self.frames,
                "rate": float(f"{self.rate:.7g}"), "range_flags": self.range_flags, "update": self.update}

    def text(self) -> str:
        where = f"id {self.anim_id}" if self.anim_id is not None else "clip"
        return (f"{self.source}: {where} {self.name!r}: {self.frames} frames at rate {self.rate:.7g} "
                f"(range flags 0x{self.range_flags:04x}) never ends: overshoot 0.0 on update {self.update}")


def lint_clip(clip: Clip, rate: float, *, source: str = "", anim_id: int | None = None,
              range_flags: int = 0) -> Finding | None:
    """A Finding when ``clip`` never ends at ``rate``, else None."""
    found = end_step(clip, rate)
    if found is None or found[1] != 0.0:
        return None
    return Finding(source, anim_id, clip.name, F.end_frame(clip.duration), F.f32(float(rate)),
                   int(range_flags), found[0])


def lint_set(anim_set, speeds: CfgAnimSpeeds, source: str = "") -> list[Finding]:
    """Every id of ``anim_set`` with a clip, at the rate its range flags pick from ``speeds``,
    that never ends; ascending ids.

    In: an AnimSet, the CfgAnimSpeeds values, a label for the findings. Out: a list
    (empty when none). A clip shared by several ids is checked once per rate.
    """
    seen: dict[tuple[int, float], tuple[int, float] | None] = {}
    out = []
    for anim_id in anim_set.ids():
        clip = anim_set.clip(anim_id)
        flags = int(anim_set.range(anim_id).flags)
        rate = speeds.rate_for(flags)
        key = (id(clip), rate)
        if key not in seen:
            seen[key] = end_step(clip, rate)
        found = seen[key]
        if found is not None and found[1] == 0.0:
            out.append(Finding(source, anim_id, clip.name, F.end_frame(clip.duration), rate, flags, found[0]))
    return out
