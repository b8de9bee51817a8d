"""The character instance's data: task stack and queue, the human record, the task pool.

These are plain data (slots, no game logic); ``anim.player.Player`` runs the rules on
them. Limits are the original's: a pool of 360 tasks for the whole world, a stack of
18 and a queue of 10 per character.

Spec: "Animation tasks" (the free list), "The task stack".
Original: 0x001048a0 / 0x001054c8 / 0x00105510 (the AnimTask free list),
CharacterInstance +0x2bc / +0x2ac (stack), +0x304 / +0x2ae (queue).
"""
from __future__ import annotations

import numpy as np

from typing import Any, Callable

from .store import HumanTable

__all__ = ["POOL_SIZE", "STACK_SIZE", "QUEUE_SIZE", "AnimLimitError", "TaskPoolExhausted",
           "StackFull", "QueueFull", "HumanRecord", "CharacterInstance", "TaskPool"]

POOL_SIZE = 360
STACK_SIZE = 18
QUEUE_SIZE = 10


class AnimLimitError(RuntimeError):
    """A fixed-size structure of the original is full; nothing was changed."""


class TaskPoolExhausted(AnimLimitError):
    """All tasks of the pool are in use (the original's free list of 360 is empty)."""


class StackFull(AnimLimitError):
    """A character's task stack already holds 18 tasks."""


class QueueFull(AnimLimitError):
    """A character's task queue already holds 10 tasks."""


class HumanRecord:
    """The parts of the human's 0x180 record the animation reads and writes.

    ``held`` is the held flags word (+0x08, 64 bits; kept as int64, so bit 63 is
    refused with ValueError): the trace's ``held`` and the HUD's "held"; ``flags`` is its
    older name, the same word. ``anim_id`` the playing anim id (+0x20), refreshed from the
    top task, -1 with none. ``flags`` lives in row ``row`` of a human table
    (anim.store.HumanTable): a private one until the compiled engine first steps the
    human, then the world's (``attach``), where the compiled step reads and writes it.
    """

    __slots__ = ("table", "row", "anim_id")

    def __init__(self, flags: int = 0, anim_id: int = -1):
        self.table = HumanTable(1)
        self.row = self.table.alloc()
        self.flags = flags
        self.anim_id = int(anim_id)

    @property
    def flags(self) -> int:
        return int(self.table.flags[self.row])

    @flags.setter
    def flags(self, value: int) -> None:
        v = int(value)
        if not 0 <= v < 1 << 63:
            raise ValueError(f"HumanRecord.flags: 0x{v:x} is outside 0 .. 2**63 - 1")
        self.table.flags[self.row] = v

    @property
    def held(self) -> int:
        """The held flags (+0x08): the word the trace writes as ``held`` (``flags``, its older name)."""
        return int(self.table.flags[self.row])

    @held.setter
    def held(self, value: int) -> None:
        self.flags = value

    def attach(self, table: HumanTable, row: int) -> None:
        """Move the flags into row ``row`` of ``table`` (the world's human table)."""
        table.flags[row] = self.table.flags[self.row]
        self.table, self.row = table, row

    def detach(self) -> None:
        """Move the flags back into a private table (the human left the world's)."""
        if self.table.capacity > 1:
            v = self.flags
            self.table = HumanTable(1)
            self.row = self.table.alloc()
            self.flags = v

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HumanRecord):
            return NotImplemented
        return self.flags == other.flags and self.anim_id == other.anim_id

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HumanRecord(flags=0x{self.flags:x}, anim_id={self.anim_id})"


class CharacterInstance:
    """One character's animation state (CharacterInstance): data only.

    ``stack`` bottom to top and ``queue`` waiting tasks (read from the engine's rows),
    ``record`` the human record,
    ``anim_set`` where its clips are found, ``speed`` the speed multiplier (+0x3a4, the
    blends' rate), ``events`` the events fired this update (FiredEvent objects; the
    compiled step leaves them as rows of its event buffer, ``_event_rows``, until
    ``events`` is read: a crowd nobody listens to makes none), ``released`` the ids the
    last flush released, ``on_report`` called when a released task held 0x400000,
    ``poses_refused`` the poses its last sample could not push (the pose stack of seven
    refuses an eighth, 0x00104ce0).
    """

    __slots__ = ("name", "record", "anim_set", "speed", "_events", "_event_rows", "released",
                 "on_report", "handle", "slot", "engine", "poses_refused", "__weakref__")

    def __init__(self, anim_set, name: str = "", record: HumanRecord | None = None, speed: float = 1.0,
                 handle=None):
        self.name = name
        self.record = record if record is not None else HumanRecord()
        self.anim_set = anim_set
        self.speed = float(speed)
        self._events: list = []
        self._event_rows: tuple | None = None     # (source, first, end): this update's event rows
        self.released: list[int] = []
        self.on_report: Callable | None = None
        self.handle = handle
        self.slot = -1                     # its row in the compiled engine's human table
        self.engine: Any = None            # that engine (anim.batch.BatchEngine), once it has a row
        self.poses_refused = 0             # poses its last sample's stack of 7 refused

    @property
    def stack(self) -> list:
        """The task stack, bottom to top: a new list of the tasks whose rows the human's row
        of the engine's human table holds (changing the list changes nothing: the Player's
        stack rules write the rows)."""
        eng = self.engine
        return eng.stack_of(self) if eng is not None else []

    @property
    def queue(self) -> list:
        """The queued tasks, first first: a new list read from the human's row (see ``stack``)."""
        eng = self.engine
        return eng.queue_of(self) if eng is not None else []

    @property
    def events(self) -> list:
        """The events fired this update (a list of FiredEvent, in firing order)."""
        rows = self._event_rows
        if rows is not None:
            self._event_rows = None
            rows[0].fired(self._events, rows[1], rows[2])
        return self._events

    @events.setter
    def events(self, value: list) -> None:
        self._event_rows = None
        self._events = value

    def clear_events(self) -> None:
        """Forget this update's events (the next step's start), made or not."""
        self._event_rows = None
        self._events.clear()

    def __repr__(self) -> str:
        return f"CharacterInstance({self.name!r}, stack={[type(t).__name__ for t in self.stack]})"


class TaskPool:
    """The world's task free list: ``capacity`` tasks (360 in the original).

    ``take`` counts a task out (TaskPoolExhausted when none is left), ``give_back``
    counts it in; ``in_use`` is what a leak check compares. Giving back a task that is
    not out raises ValueError (a double release). A task is counted by its row of the
    task table: ``out`` holds one flag per row (grown with the table), ``n_out`` their
    count, so a snapshot copies an array (Game.snapshot).
    Original: 0x001048a0 (build), 0x001054c8 (take), 0x00105510 (give back).
    """

    __slots__ = ("capacity", "out", "n_out")

    def __init__(self, capacity: int = POOL_SIZE):
        if capacity < 1:
            raise ValueError(f"task pool capacity {capacity} must be >= 1")
        self.capacity = int(capacity)
        self.out = np.zeros(64, np.bool_)
        self.n_out = 0

    @property
    def in_use(self) -> int:
        """Tasks taken and not given back."""
        return self.n_out

    @property
    def free(self) -> int:
        """Tasks that can still be taken."""
        return self.capacity - self.n_out

    def require(self, n: int) -> None:
        """Raise TaskPoolExhausted unless ``n`` tasks can be taken."""
        if self.capacity - self.n_out < n:
            raise TaskPoolExhausted(
                f"task pool exhausted: {n} needed, {self.free} of {self.capacity} free")

    def take(self, task):
        """Count ``task`` out of the pool; TaskPoolExhausted when none is left."""
        if self.n_out >= self.capacity:
            self.require(1)                 # raises
        r = task.trow
        out = self.out
        if r >= len(out):
            grown = np.zeros(max(2 * len(out), r + 1), np.bool_)
            grown[:len(out)] = out
            self.out = out = grown
        if not out[r]:
            out[r] = True
            self.n_out += 1
        return task

    def give_back(self, task) -> None:
        """Count ``task`` back in; ValueError for a task not out (a double release)."""
        if not self._take_back(task):
            raise ValueError(f"task {task!r} given back twice or never taken")

    def _take_back(self, task) -> bool:
        """``give_back`` if ``task`` is out (True), else nothing (False): holds + give_back."""
        r = task.trow
        out = self.out
        if r < len(out) and out[r]:
            out[r] = False
            self.n_out -= 1
            return True
        return False

    def holds(self, task) -> bool:
        """Whether ``task`` is out of the pool."""
        r = task.trow
        return r < len(self.out) and bool(self.out[r])
