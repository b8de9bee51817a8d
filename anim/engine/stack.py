"""The character instance's data: task stack and queue, the human record, the task pool.

These are plain data (slots, no game logic); ``anim.playback.player.Player`` runs the rules on
them. Limits are the original's: a pool of 360 tasks for the whole world, a stack of
18 and a queue of 10 per character.

Spec: "Animation tasks" (the free list), "The task stack".
Original: 0x001048a0 / 0x001054c8 / 0x00105510 (the AnimTask free list),
CharacterInstance +0x2bc / +0x2ac (stack), +0x304 / +0x2ae (queue).
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from typing import Any, Callable

from scuffle.anim.base.callbackdata import check_callback
from scuffle.anim.base.errors import POOL_SIZE, QUEUE_SIZE, STACK_SIZE, AnimLimitError, QueueFull, StackFull, TaskPoolExhausted
from scuffle.anim.maths.f32 import FLT_MAX
from scuffle.anim.base.limits import check_float
from scuffle.anim.engine.store import HumanTable, _fast_view, left_world
from scuffle.anim.engine.writefirst import write_first, write_first_for

__all__ = ["POOL_SIZE", "STACK_SIZE", "QUEUE_SIZE", "AnimLimitError", "TaskPoolExhausted", "not_a_human", "check_human",
           "StackFull", "QueueFull", "HumanRecord", "CharacterInstance", "TaskPool", "serial_of", "instance_of",
           "seated"]



class _Cell(list):
    """One column of a PrivateRow: a single cell, read and written as row 0 of a table's
    column is (``c[0]``, ``c.item(0)``)."""

    __slots__ = ()
    item = list.__getitem__


class PrivateRow:
    """The one row of a standalone record: a HumanRecord no world's human table holds yet
    (made before its human is stepped or given a task), or a reference world's human's.

    It holds what a human table's row holds for the record and its instance (``flags``,
    ``anim``, ``speed``, the report callback) with the row's ``live`` flag and generation,
    read and written as row 0 of a HumanTable is (``flags[0]``, ``flags.item(0)``,
    ``report(0)``, ``set_report``, ``alloc``, ``free``), but as a few plain values: no
    block, column views, callback registry or command buffer (``commands`` is None): a
    crowd's records wait for their rows as a few hundred bytes each, not a table's five
    kilobytes. ``world`` is None (no world's
    table), ``capacity`` 1. Rejected (ValueError): a row other than 0, freeing it twice,
    taking it while it is in use.
    """

    __slots__ = ("flags", "anim", "speed", "live", "gen", "_report")
    world = None
    capacity = 1
    commands = None             # no world: no Player's command buffer to write first

    def __init__(self) -> None:
        self.flags, self.anim, self.speed = _Cell((0,)), _Cell((-1,)), _Cell((1.0,))
        self.live, self.gen = _Cell((True,)), _Cell((0,))
        self._report: Any = None

    @property
    def in_use(self) -> int:
        """Rows taken and not given back (0 or 1)."""
        return 1 if self.live[0] else 0

    def alloc(self) -> int:
        """Take the row again, at a free row's values (no flags, no anim, speed 1, no report)."""
        if self.live[0]:
            raise ValueError("PrivateRow: its one row is in use")
        self.flags[0], self.anim[0], self.speed[0], self._report = 0, -1, 1.0, None
        self.live[0] = True
        return 0

    def free(self, row: int) -> None:
        """Give the row back (its generation counts up, its report callback goes)."""
        if row != 0 or not self.live[0]:
            raise ValueError(f"human row {row} freed twice or never taken")
        self.live[0] = False
        self.gen[0] += 1
        self._report = None

    def report(self, row: int) -> Any:
        """The row's report callback (None: none)."""
        return self._report

    def set_report(self, row: int, cb: Any) -> None:
        """Make ``cb`` (checked: anim.engine.callbacks.check_callback; None: none) the row's
        report callback."""
        self._report = cb


class HumanRecord:
    """The parts of the human's 0x180 record the animation reads and writes: a handle
    onto one row of a human table (anim.engine.store.HumanTable) and that row's generation.

    ``held`` is the held flags word (+0x08, 64 bits; kept as int64, so bit 63 is
    refused with ValueError): the trace's ``held`` and the HUD's "held"; ``flags`` is its
    older name, the same word. ``anim_id`` the playing anim id (+0x20), refreshed from the
    top task, -1 with none. Both live in row ``row`` of ``table``: a PrivateRow for a
    standalone record (``HumanRecord()``, before its human is stepped or given a task),
    then the world's human table (``attach``, by the compiled engine on first sight),
    where the compiled step reads and writes them. The row is the human's row, so it
    holds the instance's speed and report callback too (CharacterInstance.speed,
    .on_report). Once the human leaves the world (``Game.remove_human``,
    ``Player.forget``), its row goes back and every read or write of the record raises
    StaleHandle (a ValueError naming the field); a new human taking the row gets a new
    generation, so an old record never reads it.
    """

    __slots__ = ("table", "row", "gen")

    def __init__(self, flags: int = 0, anim_id: int = -1):
        table: Any = PrivateRow()
        self.table, self.row, self.gen = table, 0, 0
        self.flags = flags
        self.anim_id = anim_id

    def _at(self, owner: str, field: str) -> int:
        """The row, after checking its generation (StaleHandle naming ``owner.field``): the
        fields no command changes (the speed, the report callback), and ``attach``."""
        r = self.row
        if self.table.gen[r] != self.gen:
            raise left_world(owner, field, r, "human")
        return r

    def _row(self, field: str) -> int:
        """The row for a read or write of ``field`` (the held flags, the anim id: what a
        buffered command changes): its generation checked (StaleHandle naming
        ``HumanRecord.field``), then this human's waiting commands written
        (anim.engine.writefirst, one human's rows). The one check of every such field."""
        t, r = self.table, self.row
        if t.gen[r] != self.gen:
            raise left_world("HumanRecord", field, r, "human")
        write_first_for(t, r)
        return r

    def alive(self) -> bool:
        """Whether the row is still this record's (False once its human left the world)."""
        return bool(self.table.gen[self.row] == self.gen)

    @property
    def flags(self) -> int:
        """The held flags (+0x08), the older name of ``held``."""
        return self.table.flags.item(self._row("flags"))

    @flags.setter
    def flags(self, value: int) -> None:
        v = int(value)
        if not 0 <= v < 1 << 63:
            raise ValueError(f"HumanRecord.flags: 0x{v:x} is outside 0 .. 2**63 - 1")
        self.table.flags[self._row("flags")] = v

    @property
    def held(self) -> int:
        """The held flags (+0x08): the word the trace writes as ``held`` (``flags``, its older name)."""
        return self.table.flags.item(self._row("held"))

    @held.setter
    def held(self, value: int) -> None:
        self.flags = value

    @property
    def anim_id(self) -> int:
        """The playing anim id (+0x20), -1 with none."""
        return self.table.anim.item(self._row("anim_id"))

    @anim_id.setter
    def anim_id(self, value: int) -> None:
        v = int(value)
        if not -1 <= v < 1 << 63:
            raise ValueError(f"HumanRecord.anim_id: {v} is outside -1 .. 2**63 - 1")
        self.table.anim[self._row("anim_id")] = v

    def attach(self, table: HumanTable, row: int) -> None:
        """Move the record's row (flags, anim id, speed, report callback) into row ``row``
        of ``table`` (the world's human table: a live row the engine took for the human),
        giving the old row back. Rejected: a stale record (StaleHandle)."""
        old, r = self.table, self._at("HumanRecord", "attach")
        if old is table and r == row:
            return
        table.flags[row] = old.flags[r]
        table.anim[row] = old.anim[r]
        table.speed[row] = old.speed[r]
        table.set_report(row, old.report(r))
        old.free(r)
        self.table, self.row, self.gen = table, row, table.gen[row]

    def release(self) -> None:
        """Give a private row back (a standalone record's, or the one a reference world's
        human keeps): the record is stale from now on; a second release does nothing.
        Rejected: a row of a world's human table (ValueError: its Player's ``forget``
        gives it back)."""
        if not self.alive():
            return
        if self.table.world is not None:
            raise ValueError(f"HumanRecord.release: row {self.row} is a world's; forget its human there")
        self.table.free(self.row)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HumanRecord):
            return NotImplemented
        return self.flags == other.flags and self.anim_id == other.anim_id

    __hash__ = None  # type: ignore[assignment]

    def rebind(self, table: HumanTable, row: int) -> None:
        """Make the record the handle of row ``row`` of ``table`` at the row's generation now
        (a restored state's: the row the human had when it was saved)."""
        self.table, self.row, self.gen = table, row, table.gen[row]

    def __repr__(self) -> str:
        if not self.alive():
            return f"HumanRecord(stale: row {self.row} went back)"
        return f"HumanRecord(flags=0x{self.flags:x}, anim_id={self.anim_id})"


def not_a_human(call: str, inst: object) -> ValueError:
    """The error of a call (``call``: its name, "" for none) given something that is not a
    human (a CharacterInstance)."""
    return ValueError(f"{call + ': ' if call else ''}{inst!r} is not a human (a CharacterInstance)")


def check_human(call: str, inst: object) -> None:
    """Rejected (``not_a_human``'s ValueError): ``inst`` not a CharacterInstance."""
    if inst.__class__ is not CharacterInstance and not isinstance(inst, CharacterInstance):
        raise not_a_human(call, inst)


class CharacterInstance:
    """One character's animation state (CharacterInstance): a handle onto its human's row.

    ``stack`` bottom to top and ``queue`` waiting tasks (read from the engine's rows),
    ``record`` the human record (the handle onto the human's row),
    ``anim_set`` where its clips are found, ``speed`` the speed multiplier (+0x3a4, the
    blends' rate factor) and ``on_report`` (called when a released task held 0x400000: a
    Callback as data, or a callable) live in the human's row with the record's flags
    (HumanTable ``speed`` and keyed ``on_report``): the row is the only copy, and they
    raise StaleHandle like the record once the human left the world.

    The rest are per-update outputs that no later update reads, so they are kept as
    Python values and not in the rows: ``events``, the events fired this update
    (FiredEvent objects; the compiled step leaves them as rows of its event buffer,
    ``_event_rows``, until ``events`` is read: a crowd nobody listens to makes none),
    ``released`` the ids the last flush released (for the trace and the host; the
    compiled flush leaves them as rows until one human's are read, Player.make_released;
    the human's next step empties it without reading it), ``poses_refused`` the poses its
    last sample could not push (the pose stack of seven refuses an eighth, 0x00104ce0).
    Rejected: a speed that is not a finite number a float32 holds (RangeError, a
    ValueError naming ``CharacterInstance.speed``), an on_report that is neither None, a
    Callback of plain data nor a callable (CallbackError naming the field).
    """

    __slots__ = ("name", "record", "anim_set", "_ev_list", "_rows", "_rel_list", "_at",
                 "handle", "slot", "engine", "poses_refused", "serial", "__weakref__")

    def __init__(self, anim_set, name: str = "", record: HumanRecord | None = None, speed: float = 1.0,
                 handle=None):
        self.name = name
        self.record = record if record is not None else HumanRecord()
        self.anim_set = anim_set
        self.speed = speed
        # The outputs, stamped rather than cleared per human at each step: they are the
        # update's while ``_at`` is the engine's ``stamp`` (a step over every human of the
        # engine moves it on, so last update's outputs read as empty with no write per
        # human); ``_rows`` (source, first, end, its stamp): this update's event rows.
        self._ev_list: list = []
        self._rows: tuple | None = None
        self._rel_list: list[int] = []
        self._at = 0
        self.handle = handle
        self.slot = -1                     # its row in the compiled engine's human table
        self.engine: Any = None            # that engine (anim.playback.batch.BatchEngine), once it has a row
        self.poses_refused = 0             # poses its last sample's stack of 7 refused
        self.serial = 0                    # the number a snapshot names it by (anim.playback.batch.serial_of; 0: none yet)

    @property
    def speed(self) -> float:
        """The speed multiplier (+0x3a4): the human row's ``speed``. The constructors of
        types 9, 10, 12 and 13 take it (as a float32) into the task's row ("Playback
        rate", L295: a task's rate is set by its constructor), which is what the kernel
        steps; a later change reaches the blends built after it (a buffered command took
        it at its call, so no command waits on it)."""
        rec = self.record
        return rec.table.speed.item(rec._at("CharacterInstance", "speed"))

    @speed.setter
    def speed(self, value: float) -> None:
        v = check_float("CharacterInstance.speed", value, -FLT_MAX, FLT_MAX)
        rec = self.record
        rec.table.speed[rec._at("CharacterInstance", "speed")] = v

    @property
    def on_report(self) -> Callable | None:
        """The report callback (a released task held 0x400000; "When a clip ends", L314):
        the human row's ``on_report`` (an id of the world's CallbackTable), None when there is none."""
        rec = self.record
        return rec.table.report(rec._at("CharacterInstance", "on_report"))

    @on_report.setter
    def on_report(self, value: Callable | None) -> None:
        cb = check_callback(value, "CharacterInstance.on_report")
        rec = self.record
        rec.table.set_report(rec._at("CharacterInstance", "on_report"), cb)

    def _fresh(self) -> None:
        """Last update's outputs forgotten when the engine's stamp moved past them (the
        human stepped since they were written): the lists emptied, event rows of an older
        step dropped, the outputs the stamp's."""
        stamp = self.engine.stamp
        if self._at != stamp:
            self._ev_list.clear()
            self._rel_list.clear()
            rows = self._rows
            if rows is not None and rows[3] != stamp:
                self._rows = None
            self._at = stamp

    @property
    def _events(self) -> list:
        """This update's FiredEvent objects made so far (the event rows not yet made: ``_rows``)."""
        eng = self.engine
        if eng is not None and self._at != eng.stamp:
            self._fresh()
        return self._ev_list

    @property
    def _released(self) -> list[int]:
        """This update's released ids made so far (the flush's rows not yet made: Player.released_log)."""
        eng = self.engine
        if eng is not None and self._at != eng.stamp:
            self._fresh()
        return self._rel_list

    def _own_outputs(self) -> None:
        """This human's outputs made its own before a write: fresh at the engine's stamp
        (last update's cleared) and its staged event rows dropped from the engine's."""
        eng = self.engine
        if eng is not None:
            if self._at != eng.stamp:
                self._fresh()
            if eng.staged is not None:
                eng.drop_staged(self.slot)

    @property
    def _event_rows(self) -> tuple | None:
        """This update's event rows not yet made into objects: (engine, first, end), or None
        (its own ``_rows``, else those the engine keeps by human row: BatchEngine.staged_rows)."""
        rows = self._rows
        if rows is not None and rows[3] == rows[0].stamp:    # (an older step's: gone)
            return rows[:3]
        eng = self.engine
        if eng is not None and eng.staged is not None:
            return eng.staged_rows(self.slot)
        return None

    @_event_rows.setter
    def _event_rows(self, value: tuple | None) -> None:
        self._own_outputs()
        self._rows = None if value is None else (value[0], value[1], value[2], value[0].stamp)

    @property
    def released(self) -> list[int]:
        """The anim ids the last flush released for this human, in its order (the compiled
        flush leaves them as rows until one human's are read: Player.make_released)."""
        eng = self.engine
        if eng is not None:
            if eng.player.released_log:
                eng.player.make_released()
            if self._at != eng.stamp:
                self._fresh()
        return self._rel_list

    @released.setter
    def released(self, value: list[int]) -> None:
        eng = self.engine
        if eng is not None and self._at != eng.stamp:
            self._fresh()
        self._rel_list = value

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
        eng = self.engine
        if eng is not None and self._at != eng.stamp:
            self._fresh()
        rows = self._rows
        if rows is not None:
            self._rows = None
            if rows[3] == rows[0].stamp:        # (an older step's rows: gone)
                rows[0].fired(self._ev_list, rows[1], rows[2])
        if eng is not None and eng.staged is not None:
            rows = eng.staged_rows(self.slot)   # those the engine keeps by human row
            if rows is not None:
                eng.drop_staged(self.slot)
                eng.fired(self._ev_list, rows[1], rows[2])
        return self._ev_list

    @events.setter
    def events(self, value: list) -> None:
        self._own_outputs()
        self._rows = None
        self._ev_list = value

    def clear_events(self) -> None:
        """Forget this update's events (the next step's start), made or not."""
        self._rows = None
        eng = self.engine
        if eng is not None and eng.staged is not None:
            eng.drop_staged(self.slot)
        self._ev_list.clear()

    def clear_outputs(self) -> None:
        """Forget the last update's outputs: its events, released ids and refused poses."""
        self.clear_events()
        self._rel_list = []
        self.poses_refused = 0

    def settle_outputs(self) -> None:
        """Before the human leaves its engine (BatchEngine.forget): its outputs made into
        objects while the engine's buffer and stamp still say what they are (they stay the
        human's, as they were, with no engine to stamp them)."""
        if self.engine is not None:
            self.events                         # noqa: B018 (made from the rows now)
            self._released                      # noqa: B018 (an older update's: emptied)

    def seat(self, engine: Any, slot: int) -> None:
        """The human's row ``slot`` of ``engine``'s human table (-1 and None: no row)."""
        self.slot, self.engine = slot, engine

    def __repr__(self) -> str:
        return f"CharacterInstance({self.name!r}, stack={[type(t).__name__ for t in self.stack]})"


# A snapshot names an instance by a serial, never by the object: each instance gets one
# the first time a snapshot names it, never given twice in a process, and is found again
# by it while it is alive (a snapshot keeps no instance alive).
_SERIALS = itertools.count(1)
_BY_SERIAL: "weakref.WeakValueDictionary[int, CharacterInstance]" = weakref.WeakValueDictionary()


def serial_of(inst: "CharacterInstance") -> int:
    """``inst``'s serial (given on first use)."""
    s = inst.serial
    if not s:
        s = inst.serial = next(_SERIALS)
        _BY_SERIAL[s] = inst
    return s


def instance_of(serial: int) -> "CharacterInstance":
    """The instance of ``serial`` (0: None). Rejected (ValueError): an instance no longer
    alive (a snapshot of a human since dropped)."""
    if not serial:
        return None  # type: ignore[return-value]
    inst = _BY_SERIAL.get(serial)
    if inst is None:
        raise ValueError(f"the human of serial {serial} a snapshot names is gone")
    return inst


def seated(seats) -> list:
    """The instance of each human row of the seats a BatchEngine saves (anim.playback.batch:
    (the arrangement's id, each row's serial); None: a free row); a list of instances (a
    file's, game.runtime.snapfile) is itself. Rejected (ValueError): an instance no longer
    alive."""
    if seats.__class__ is list:
        return seats
    return [instance_of(s) for s in seats[1].tolist()]


class TaskPool:
    """The world's task free list: ``capacity`` tasks (360 in the original).

    ``take`` counts a task out (TaskPoolExhausted when none is left), ``give_back``
    counts it in; ``in_use`` is what a leak check compares. Giving back a task that is
    not out raises ValueError (a double release). A task is counted by its row of the
    task table: ``out`` holds one flag per row (grown with the table), ``n_out`` their
    count, so a snapshot copies an array (Game.snapshot). ``m_out`` is ``out``'s fast view
    (a memoryview of the same memory, made again whenever ``out`` is replaced) for the
    constructors' one-row writes.

    ``made`` is the one place that knows what the handle API made since the last step:
    the rows ``take_row`` counted out, which the next step's start gives back unless they
    were placed (anim.playback.orphans: a task made and never placed goes back at the end of the
    update that made it). A cache: None (after a restore, a grown ``out``) makes that
    sweep look at every row instead; no snapshot saves it.
    Original: 0x001048a0 (build), 0x001054c8 (take), 0x00105510 (give back).
    """

    __slots__ = ("capacity", "_out", "m_out", "_n_out", "made", "commands")

    def __init__(self, capacity: int = POOL_SIZE):
        if capacity < 1:
            raise ValueError(f"task pool capacity {capacity} must be >= 1")
        self.commands: Any = None           # the Player's command buffer: written before a count is read
        self.capacity = int(capacity)
        self.out = np.zeros(64, np.bool_)
        self._n_out = 0
        self.made: list[int] | None = []

    @property
    def n_out(self) -> int:
        """The flags set in ``out``: the tasks out of the pool (the Player's buffered
        commands written first: anim.playback.cmdbuffer)."""
        write_first(self)                   # a count of rows: every waiting command first
        return self._n_out

    @n_out.setter
    def n_out(self, n: int) -> None:
        self._n_out = n

    @property
    def out(self) -> np.ndarray:
        """One flag per task row: counted out of the pool."""
        return self._out

    @out.setter
    def out(self, value: np.ndarray) -> None:
        self._out = value
        self.m_out = _fast_view(value)
        self.made = None                    # new flags (a restore, a growth): the next sweep looks at every row

    def __getstate__(self) -> tuple:
        """The pool's state without the fast view (a memoryview is not copied or pickled)."""
        return self.capacity, self._out, self.n_out

    def __setstate__(self, state: tuple) -> None:
        self.commands = None
        self.capacity, self.out, self.n_out = state

    def save(self, into: tuple | None = None) -> tuple:
        """The pool's state: a copy of ``out`` (into ``into``'s array, an older state given
        up, when it has the same shape) and ``n_out``."""
        old = into[0] if into is not None else None
        if old is not None and old.shape == self._out.shape:
            memoryview(old)[:] = self.m_out         # (a copy through the views: no numpy dispatch)
            return (old, self.n_out)
        return (self._out.copy(), self.n_out)

    def load(self, state: tuple) -> None:
        """Write a ``save`` back: into ``out`` in place when it has the saved shape (what was
        made from it, the prepared commands' views and the flush's arguments, holds); what
        the handle API made (``made``) is found again from the rows."""
        saved, n = state
        if self._out.shape == saved.shape and self._out.dtype == saved.dtype:
            if self.m_out.__class__ is memoryview:
                self.m_out[:] = saved                # (a copy through the view: no numpy dispatch)
            else:
                np.copyto(self._out, saved)
        else:
            self.out = saved.copy()
        self.n_out = n
        self.made = None

    def take_row(self, r: int) -> None:
        """``take`` by task row (the constructors' new rows; TaskPoolExhausted when none is left)."""
        write_first(self)                   # a row taken: the waiting commands take theirs first
        n = self._n_out
        if n >= self.capacity:
            self.require(1)                 # raises
        out = self.m_out
        try:
            was = out[r]
        except IndexError:                  # a row past the flags: grown
            self._grow_out(r)
            out = self.m_out
            was = False
        if not was:
            out[r] = True
            self._n_out = n + 1
            made = self.made
            if made is not None:
                made.append(r)

    def counted(self, r: int) -> None:
        """Task row ``r`` whose pool flag a compiled writer has just set (anim.engine
        .cmdkernel's handle-call writers: newly, the flag within ``out``): counted out of
        the pool, and among the rows made this update (``made``), as ``take_row`` counts it."""
        self._n_out += 1
        made = self.made
        if made is not None:
            made.append(r)

    def _grow_out(self, r: int) -> None:
        """``out`` grown to hold row ``r`` (doubling)."""
        out = self._out
        grown = np.zeros(max(2 * len(out), r + 1), np.bool_)
        grown[:len(out)] = out
        self.out = grown

    @property
    def in_use(self) -> int:
        """Tasks taken and not given back."""
        return self.n_out

    @property
    def free(self) -> int:
        """Tasks that can still be taken."""
        return self.capacity - self.in_use

    def require(self, n: int) -> None:
        """Raise TaskPoolExhausted unless ``n`` tasks can be taken."""
        if self.capacity - self.in_use < n:
            raise TaskPoolExhausted(
                f"task pool exhausted: {n} needed, {self.free} of {self.capacity} free")

    def take(self, task):
        """Count ``task`` out of the pool; TaskPoolExhausted when none is left."""
        self.take_row(task.trow)
        return task

    def give_back(self, task) -> None:
        """Count ``task`` back in; ValueError for a task not out (a double release)."""
        if not self._take_back(task):
            raise ValueError(f"task {task!r} given back twice or never taken")

    def _take_back(self, task) -> bool:
        """``give_back`` if ``task`` is out (True), else nothing (False): holds + give_back."""
        write_first(self)                   # a row given back: the waiting commands first
        r = task.trow
        out = self.m_out
        if r < len(out) and out[r]:
            out[r] = False
            self._n_out -= 1
            return True
        return False

    def holds(self, task) -> bool:
        """Whether ``task`` is out of the pool."""
        r = task.trow
        return r < len(self.out) and bool(self.out[r])
