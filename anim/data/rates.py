"""Playback rates: CfgAnimSpeeds and the Anim Range List flags that pick one.

Spec: "Playback rate". Single clips (types 1, 3, 5) take their rate from the clip's
range flags: 0x800, 0x1000 or 0x2000 pick the second, third or fourth value, no flag
the first. Blends (types 9, 10, 12, 13) use the human's speed multiplier instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntFlag

from scuffle.anim.maths import detmath, f32 as F

__all__ = ["RateFlags", "CfgAnimSpeeds", "RUNTIME_SPEEDS", "DATA_SPEEDS", "RATE_MASK",
           "root_displacement_length", "gait_speed"]


class RateFlags(IntFlag):
    """The Anim Range List flag bits (+0x0e) that choose the playback rate."""

    NONE = 0
    F800 = 0x800
    F1000 = 0x1000
    F2000 = 0x2000


RATE_MASK = RateFlags.F800 | RateFlags.F1000 | RateFlags.F2000


@dataclass(frozen=True, slots=True)
class CfgAnimSpeeds:
    """The four playback rates set by the Lua binding CfgAnimSpeeds(default, f800, f1000, f2000).

    Values are stored as float32. Rejected: a non-finite or negative rate (ValueError).
    Original: 0x002364a0 (binding 0x0035a510), values at 0x00510260-0x0051026c.
    """

    default: float = 0.75
    f800: float = 0.8
    f1000: float = 1.0
    f2000: float = 0.9

    def __post_init__(self):
        for name in ("default", "f800", "f1000", "f2000"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not (v >= 0.0 and math.isfinite(F.f32(float(v)))):
                raise ValueError(f"CfgAnimSpeeds.{name}: {v!r} must be a finite float32 rate >= 0")
            object.__setattr__(self, name, F.f32(float(v)))

    def rate_for(self, range_flags: int) -> float:
        """The rate a single clip plays at, from its id's range flags (first match 0x800,
        0x1000, 0x2000, else the default). Original: 0x00104a38 Anim_RateMultiplier."""
        if range_flags & _F800:                      # the flags as plain ints (an int & IntFlag runs in Python)
            return self.f800
        if range_flags & _F1000:
            return self.f1000
        if range_flags & _F2000:
            return self.f2000
        return self.default

    def as_list(self) -> list[float]:
        """[default, f800, f1000, f2000]."""
        return [self.default, self.f800, self.f1000, self.f2000]


_F800, _F1000, _F2000 = int(RateFlags.F800), int(RateFlags.F1000), int(RateFlags.F2000)

# What the game sets at runtime (PCSX2 2.9.94, level99), and what .data holds before.
RUNTIME_SPEEDS = CfgAnimSpeeds(0.75, 0.8, 1.0, 0.9)
DATA_SPEEDS = CfgAnimSpeeds(1.0, 0.85, 1.0, 1.0)


def root_displacement_length(clip) -> float:
    """The length of a clip's root displacement: sqrt(x^2 + y^2) of descriptor +0x04 / +0x08 (m).

    In: a Clip. Out: metres (>= 0). Original: 0x00101950 Anim_RootDisplacementLength.
    """
    dx, dy = clip.displacement
    return detmath.hypot_s(float(dx), float(dy))


def gait_speed(clip, rate: float) -> float:
    """A looping gait's speed (m/s): its displacement length over its duration, divided by
    the rate its range flags give ("Playback rate", L297: the walking speeds "divide by the
    same rate"; L413, "Notes for implementers").

    In: a Clip and its single-clip rate (CfgAnimSpeeds by the id's range flags). Rejected:
    a rate of 0 (ValueError naming it). The gait loops carry flag 0x1000 (rate 1.0 at
    runtime), so for the original's sets the division changes nothing.
    Original: 0x00254078 (the human's walking speeds), 0x00101950.
    """
    if not rate > 0.0:
        raise ValueError(f"gait speed of {clip.name!r}: rate {rate!r} must be > 0")
    return root_displacement_length(clip) / float(clip.duration) / float(rate)
