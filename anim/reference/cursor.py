"""The reference cursor (WarAnimInstance) and the events it fires: plain attributes.

Spec: "The cursor" (L147-158), "Playing a clip" (L182-189), "When a clip ends" (L299-320).
Original: 0x0010bb60 WarAnimInstance, 0x001041f8 AnimCursor_Init, 0x001044a0
AnimCursor_Advance, 0x00104110 AnimCursor_Step.
"""
from __future__ import annotations

from scuffle.anim.data.clip import Clip, Event, EventType
from scuffle.anim.maths import f32 as F

__all__ = ["RefCursor", "RefEvent", "MUTED", "NO_VELOCITY", "NO_TURN", "CURSOR_BITS"]

# "Paired tasks" L249: Anim_FireFrameEvents (0x00101dd8) never dispatches type 8 (the partner's place).
PARTNER_PLACE = int(EventType.PARTNER_PLACE)

# Cursor flags +0x1e (L133): 0x1 no root velocity, 0x2 no root turn, 0x10 events muted.
NO_VELOCITY = 0x1
NO_TURN = 0x2
MUTED = 0x10
CURSOR_BITS = NO_VELOCITY | NO_TURN | MUTED


class RefEvent:
    """An event fired in a step: the clip's event, the anim id that played it, and the task."""

    __slots__ = ("event", "anim_id", "task")

    def __init__(self, event: Event, anim_id: int, task):
        self.event, self.anim_id, self.task = event, anim_id, task

    def __repr__(self) -> str:
        return f"RefEvent(id={self.anim_id}, frame={self.event.frame}, type=0x{self.event.type:x})"


class RefCursor:
    """One clip's playing state: time (+0x18), frame (+0x1c), flags (+0x1e), next event.

    ``end`` is F = uint(D x 30 + 0.5) and ``limit`` D - 1/60, both in the FPU's arithmetic
    (L303-306). ``next_event`` indexes the clip's events sorted by frame (file order
    within a frame): the events before it have been passed.
    Original: 0x001041f8 AnimCursor_Init.
    """

    __slots__ = ("clip", "anim_id", "duration", "end", "limit", "events", "event_frames",
                 "time", "frame", "flags", "next_event", "at_end", "fire_place")

    def __init__(self, clip: Clip, anim_id: int, flags: int = 0, fire_place: bool = False):
        self.clip = clip
        self.fire_place = fire_place            # type 8 dispatched too (place_events="fired")
        self.anim_id = int(anim_id)
        self.duration = F.f32(float(clip.duration))
        self.end = F.end_frame(self.duration)                       # F (L303)
        self.limit = F.sub(self.duration, F.HALF_FRAME)             # D - 1/60 (L306)
        # the clip's events sorted by frame, file order within a frame (decoded here: the
        # clip's own cache is left alone)
        self.events = tuple(sorted(clip.decoded_events(), key=lambda e: e.frame))
        self.event_frames = tuple(e.frame for e in self.events)
        self.time = 0.0
        self.frame = 0
        self.flags = int(flags)
        self.next_event = 0
        self.at_end = False

    def restart(self) -> None:
        """Back to time 0, frame 0, no event passed (AnimCursor_Restart, L318)."""
        self.time = 0.0
        self.frame = 0
        self.at_end = False
        self.next_event = 0

    def advance(self, step: float, sink: list | None, task) -> float:
        """Advance by ``step`` seconds of clip time; 0.0, or the overshoot past D - 1/60.

        "When a clip ends" L303-307: frame = uint((t + s) x 30 + 0.5); frame < F: add s to
        t, fire the events passed, return 0; otherwise change nothing and return
        (t + s) - (D - 1/60). Events fire "as their frame is passed" (L187) unless the
        cursor is muted (flag 0x10, L231) or there is no sink (a muted task); a type 8
        is passed without being dispatched (L249) unless ``fire_place``.
        Original: 0x001044a0 AnimCursor_Advance, 0x00104110 AnimCursor_Step.
        """
        t = F.add(self.time, step)
        frame = F.frame_of(t)
        if frame >= self.end:
            self.at_end = True
            return F.sub(t, self.limit)
        self.at_end = False
        self.time = t
        self.frame = frame
        frames = self.event_frames
        i = self.next_event
        while i < len(frames) and frames[i] <= frame:
            ev = self.events[i]
            if sink is not None and not (self.flags & MUTED) and (ev.type != PARTNER_PLACE or self.fire_place):
                sink.append(RefEvent(ev, self.anim_id, task))
            i += 1
        self.next_event = i
        return 0.0

    def set_time(self, t: float) -> None:
        """Put the cursor at time ``t`` without a step; the events up to its frame count as
        passed and none fires (the gait's follower, "Gait blend" L285; the kept blend
        window, L313). The frame is held below F."""
        self.time = t
        frame = min(F.frame_of(t), max(self.end - 1, 0))
        self.frame = frame
        frames = self.event_frames
        i = self.next_event
        if (i < len(frames) and frame >= frames[i]) or i > 0:
            i = 0
            while i < len(frames) and frames[i] <= frame:
                i += 1
            self.next_event = i

    def normalised_time(self) -> float:
        """time / duration in the FPU's arithmetic (the gait's shared phase, L285)."""
        return F.div(self.time, self.duration)


def follow(leader: RefCursor, other: RefCursor) -> None:
    """Put ``other`` at the leader's normalised time: (t / D_lead) x D_other (L285)."""
    other.set_time(F.mul(F.div(leader.time, leader.duration), other.duration))
