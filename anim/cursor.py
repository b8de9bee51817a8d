"""The cursor (WarAnimInstance): one clip's playing time, frame, flags and event position.

Time is float32 summed with the FPU's toward-zero rounding (anim.f32). The sampler is
stateless (a channel's key in force follows from the time), so the cursor keeps only
what the original's advance decides with: the time (+0x18), the frame (+0x1c), the
flags (+0x1e) and which events have been passed.

Spec: "The cursor", "Playing a clip", "When a clip ends".
"""
from __future__ import annotations

from . import f32 as F
from .clip import Clip, Event
from .sampler import CursorFlags

__all__ = ["Cursor", "FiredEvent"]


class FiredEvent:
    """An event fired by a step: the clip's event, the anim id and task that played it."""

    __slots__ = ("event", "anim_id", "task")

    def __init__(self, event: Event, anim_id: int, task):
        self.event, self.anim_id, self.task = event, anim_id, task

    def __repr__(self) -> str:
        return f"FiredEvent(id={self.anim_id}, frame={self.event.frame}, type=0x{self.event.type:x})"


class Cursor:
    """The playing state of one clip.

    ``clip`` the Clip, ``bank_index`` its index in the world's ClipBank (for the batched
    sampler), ``anim_id`` the id it was found under. Events are kept sorted by frame
    (file order within a frame) and fired as their frame is passed.
    Original: 0x0010bb60 WarAnimInstance, 0x001041f8 AnimCursor_Init.
    """

    __slots__ = ("clip", "bank_index", "anim_id", "time", "frame", "end", "flags",
                 "duration", "at_end", "_limit", "_events", "_next_event")

    def __init__(self, clip: Clip, bank_index: int, anim_id: int = -1, flags: int = 0):
        self.clip = clip
        self.bank_index = bank_index
        self.anim_id = anim_id
        self.flags = CursorFlags(flags)
        self.duration = clip.duration
        self.end = F.end_frame(clip.duration)
        self._limit = F.sub(clip.duration, F.HALF_FRAME)     # D - 1/60
        evs = clip.decoded_events()
        self._events = sorted(evs, key=lambda e: e.frame)     # stable: file order within a frame
        self.restart()

    def restart(self) -> None:
        """Back to time 0, frame 0, no event passed. Original: AnimCursor_Restart."""
        self.time = 0.0
        self.frame = 0
        self.at_end = False
        self._next_event = 0

    def step_size(self, dt: float, rate: float) -> float:
        """The step s = dt x rate, in the FPU's arithmetic."""
        return F.mul(dt, rate)

    def advance(self, step: float, sink: list | None, task=None) -> float:
        """Advance by ``step`` seconds of clip time; returns 0.0 or the overshoot.

        When the frame uint((t + s) x 30 + 0.5) would reach F, nothing changes and the
        overshoot (t + s) - (D - 1/60) is returned and ``at_end`` set (callers take
        exactly 0.0 as "not ended": the original's bug, anim.player.PlayerOptions). Otherwise the time becomes t + s, the frame follows,
        and the events whose frame has now been reached are appended to ``sink`` as
        FiredEvent (none when the cursor is muted, flag 0x10, or ``sink`` is None).
        Original: 0x001044a0 AnimCursor_Advance, 0x00104110 AnimCursor_Step.
        """
        t = F.add(self.time, step)
        frame = F.frame_of(t)
        if frame >= self.end:
            self.at_end = True
            return F.sub(t, self._limit)
        self.at_end = False
        self.time = t
        self.frame = frame
        self._fire(sink, task)
        return 0.0

    def set_time(self, t: float) -> None:
        """Put the cursor at time ``t`` without a step: events up to its frame count as passed.

        Used where the original keeps a cursor's time from outside (the gait blend's
        follower, the type 3 blend window).
        """
        self.time = t
        self.frame = min(F.frame_of(t), max(self.end - 1, 0))
        self._skip()

    def normalised_time(self) -> float:
        """time / duration (the gait blend's shared phase)."""
        return self.time / self.duration

    def _fire(self, sink: list | None, task) -> None:
        evs = self._events
        i = self._next_event
        n = len(evs)
        if i >= n:
            return
        frame = self.frame
        muted = sink is None or (self.flags & CursorFlags.MUTED)
        while i < n and evs[i].frame <= frame:
            if not muted:
                sink.append(FiredEvent(evs[i], self.anim_id, task))
            i += 1
        self._next_event = i

    def _skip(self) -> None:
        evs = self._events
        i = 0
        while i < len(evs) and evs[i].frame <= self.frame:
            i += 1
        self._next_event = i
