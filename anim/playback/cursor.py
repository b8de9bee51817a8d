"""The cursor (WarAnimInstance): one clip's playing time, frame, flags and event position.

Time is float32 summed with the FPU's toward-zero rounding (anim.maths.f32). The sampler is
stateless (a channel's key in force follows from the time), so the cursor keeps only
what the original's advance decides with: the time (+0x18), the frame (+0x1c), the
flags (+0x1e) and which events have been passed.

Spec: "The cursor", "Playing a clip", "When a clip ends".
"""
from __future__ import annotations

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.clip import Clip, Event
from scuffle.anim.engine.sampler import CursorFlags
from scuffle.anim.engine.store import (NO_EVENT, PROTO_DUR32, PROTO_END, PROTO_EVF0, PROTO_LIMIT32, Table, column,
                                       cursor_table)

__all__ = ["Cursor", "FiredEvent", "cursor_proto", "cursor_row"]


class FiredEvent:
    """An event fired by a step: the clip's event, the anim id and task that played it."""

    __slots__ = ("event", "anim_id", "task")

    def __init__(self, event: Event, anim_id: int, task):
        self.event, self.anim_id, self.task = event, anim_id, task

    def __repr__(self) -> str:
        return f"FiredEvent(id={self.anim_id}, frame={self.event.frame}, type=0x{self.event.type:x})"


def cursor_proto(clip: Clip, all_events: bool) -> tuple:
    """What every new cursor on ``clip`` starts from: (duration, F, D - 1/60, its events and
    their frames sorted by frame (type 8's too when ``all_events``), the first event's
    frame or NO_EVENT, the duration and D - 1/60 as the float32 columns hold them: read by
    anim.engine.store's PROTO_* places). The clip keeps the parts (Clip.timing,
    Clip.dispatched_by_frame)."""
    end, limit = clip.timing()
    evs, frames = clip.events_by_frame() if all_events else clip.dispatched_by_frame()
    # and the float32 values the columns hold (rounded to nearest once, as numpy's cast
    # rounds: a write of these is exact)
    dur32, limit32 = F.f32(float(clip.duration)), F.f32(float(limit))
    return clip.duration, int(end), limit, evs, frames, int(frames[0]) if frames else NO_EVENT, dur32, limit32


# The cursor table's columns cursor_row writes, in the order it writes them (Table.row_views).
_ROW_COLUMNS = ("end", "limit", "dur", "bank", "anim", "flags", "evf0", "evf", "t", "frame", "ev", "at_end")


def cursor_row(st: Table, bank_index: int, anim_id: int, flags: int, proto: tuple) -> int:
    """A new cursor as a row alone (no handle object: a task reads it through its link
    column): take a row of the cursor table ``st`` and write every column (a row the kernel
    gave back keeps old numbers: nothing is left to a default) from ``proto``
    (``cursor_proto(clip, ...)``), the clip's bank index, the anim id and the flags (an
    int); returns the row. Original: 0x001041f8 AnimCursor_Init."""
    r = st.alloc_default()                                # alloc(zero=False): every column is written
    views = st.row_views
    if views is None:                                     # the fast views (store._fast_view), kept together
        views = st.row_views = tuple(getattr(st, "m_" + name) for name in _ROW_COLUMNS)
    m_end, m_limit, m_dur, m_bank, m_anim, m_flags, m_evf0, m_evf, m_t, m_frame, m_ev, m_at_end = views
    # the numbers are the clip's (float32 values, ints)
    m_end[r] = proto[PROTO_END]
    m_limit[r] = proto[PROTO_LIMIT32]
    m_dur[r] = proto[PROTO_DUR32]
    m_bank[r] = bank_index
    m_anim[r] = anim_id
    m_flags[r] = flags
    evf0 = proto[PROTO_EVF0]
    m_evf0[r] = evf0
    m_evf[r] = evf0
    m_t[r] = 0.0                                          # restarted: time 0, no event passed
    m_frame[r] = 0
    m_ev[r] = 0
    m_at_end[r] = False
    return r


class Cursor:
    """The playing state of one clip.

    ``clip`` the Clip, ``bank_index`` its index in the world's ClipBank (for the batched
    sampler), ``anim_id`` the id it was found under. The changing numbers (time, frame,
    flags, the next event) live in row ``row`` of a cursor table (anim.engine.store), the
    world's when the Player makes the cursor, a private one otherwise. Events are kept
    sorted by frame (file order within a frame) and fired as their frame is passed;
    type 8 (the partner's place) is never dispatched ("Paired tasks" L249) unless
    ``all_events`` (``PlayerOptions.place_events="fired"``).
    Original: 0x0010bb60 WarAnimInstance, 0x001041f8 AnimCursor_Init.
    """

    __slots__ = ("clip", "bank_index", "anim_id", "end", "duration", "_limit", "_events", "_frames",
                 "store", "row", "gen", "__weakref__")

    def __init__(self, clip: Clip, bank_index: int, anim_id: int = -1, flags: int = 0, store: Table | None = None,
                 all_events: bool = False):
        self._fill(clip, bank_index, anim_id, int(flags), store if store is not None else cursor_table(1),
                   cursor_proto(clip, all_events))

    def _fill(self, clip: Clip, bank_index: int, anim_id: int, flags: int, st: Table, proto: tuple) -> None:
        """Take a row of ``st`` and write every column (cursor_row), then hold it: this
        handle's fields from ``proto`` (``cursor_proto(clip, ...)``)."""
        dur, end, limit, evs, frames = proto[:5]
        self.clip = clip
        self.bank_index = bank_index
        self.anim_id = anim_id
        self.duration = dur
        self.end = end                                        # F
        self._limit = limit                                   # D - 1/60
        self._events = evs
        self._frames = frames
        self.store = st
        self.row = r = cursor_row(st, bank_index, anim_id, flags, proto)
        self.gen = st.m_gen[r]

    @classmethod
    def view(cls, store: Table, row: int) -> "Cursor":
        """A handle onto a live row of a world's cursor table (its clip from the table's
        ``clips`` by the row's bank index): for cursors the engine made (a gait's pair)."""
        c = cls.__new__(cls)
        c.bank_index = bank = store.m_bank[row]
        c.clip = clip = store.clips[bank]
        c.anim_id = store.m_anim[row]
        c.duration = clip.duration
        c.end, c._limit = clip.timing()
        c._events, c._frames = clip.events_by_frame() if store.all_events else clip.dispatched_by_frame()
        c.store, c.row, c.gen = store, row, store.m_gen[row]
        return c

    def __eq__(self, other: object) -> bool:
        """Handles are equal when they name the same row of the same table in the same
        generation (a task makes a new handle onto its cursor's row at each read)."""
        if other.__class__ is not Cursor:
            return NotImplemented
        return self.store is other.store and self.row == other.row and self.gen == other.gen  # type: ignore[attr-defined]

    def __hash__(self) -> int:                       # equal handles: the same row and generation
        return (int(self.row) << 24) ^ int(self.gen)

    def alive(self) -> bool:
        """Whether the cursor's row is still its own (not given back)."""
        return bool(self.store.gen[self.row] == self.gen and self.store.live[self.row])

    def dispose(self) -> None:
        """Give the cursor's row back to its table (the task that owned it is gone); reading
        it afterwards raises StaleHandle. A second dispose does nothing."""
        if self.store.m_gen[self.row] == self.gen:
            self.store.give_back(self.row)

    # ---- the numbers, in the table
    time = column("t", float, "Time in seconds (+0x18), float32 summed toward zero.")
    frame = column("frame", int, "The current frame (+0x1c).")
    flags = column("flags", lambda v: CursorFlags(int(v)), "Cursor flags (+0x1e).")
    at_end = column("at_end", bool, "Whether the last advance met the end test (its step was not taken).")

    @property
    def _next_event(self) -> int:
        return int(self.store.ev[self.row])

    @_next_event.setter
    def _next_event(self, i: int) -> None:
        st, r = self.store, self.row
        st.ev[r] = i
        st.evf[r] = self._frames[i] if i < len(self._frames) else NO_EVENT

    def restart(self) -> None:
        """Back to time 0, frame 0, no event passed. Original: AnimCursor_Restart."""
        st, r = self.store, self.row
        st.t[r] = 0.0
        st.frame[r] = 0
        st.at_end[r] = False
        self._next_event = 0

    def step_size(self, dt: float, rate: float) -> float:
        """The step s = dt x rate, in the FPU's arithmetic."""
        return F.mul(dt, rate)

    def advance(self, step: float, sink: list | None, task=None) -> float:
        """Advance by ``step`` seconds of clip time; returns 0.0 or the overshoot.

        When the frame uint((t + s) x 30 + 0.5) would reach F, nothing changes and the
        overshoot (t + s) - (D - 1/60) is returned and ``at_end`` set (callers take
        exactly 0.0 as "not ended": the original's bug, anim.playback.player.PlayerOptions).
        Otherwise the time becomes t + s, the frame follows, and the events whose frame
        has now been reached are appended to ``sink`` as FiredEvent (none when the cursor
        is muted, flag 0x10, or ``sink`` is None).
        Original: 0x001044a0 AnimCursor_Advance, 0x00104110 AnimCursor_Step.
        """
        st, r = self.store, self.row
        t = F.add(float(st.t[r]), step)
        frame = F.frame_of(t)
        if frame >= self.end:
            st.at_end[r] = True
            return F.sub(t, self._limit)
        st.at_end[r] = False
        st.t[r] = t
        st.frame[r] = frame
        if frame >= st.evf[r]:
            self._fire(sink, task)
        return 0.0

    def set_time(self, t: float) -> None:
        """Put the cursor at time ``t`` without a step: events up to its frame count as passed.

        Used where the original keeps a cursor's time from outside (the gait blend's
        follower, the type 3 blend window).
        """
        st, r = self.store, self.row
        st.t[r] = t
        frame = min(F.frame_of(t), max(self.end - 1, 0))
        st.frame[r] = frame
        if frame >= st.evf[r] or int(st.ev[r]) > 0:
            self._skip()

    def normalised_time(self) -> float:
        """time / duration (the gait blend's shared phase)."""
        return self.time / self.duration

    def _fire(self, sink: list | None, task) -> None:
        st, r = self.store, self.row
        frames = self._frames
        i = int(st.ev[r])
        n = len(frames)
        frame = int(st.frame[r])
        muted = sink is None or (int(st.flags[r]) & CursorFlags.MUTED)
        evs = self._events
        while i < n and frames[i] <= frame:
            if not muted and sink is not None:
                sink.append(FiredEvent(evs[i], self.anim_id, task))
            i += 1
        self._next_event = i

    def _skip(self) -> None:
        frame = self.frame
        frames = self._frames
        i = 0
        while i < len(frames) and frames[i] <= frame:
            i += 1
        self._next_event = i
