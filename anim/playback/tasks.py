"""Animation tasks (AnimTask): every type the spec describes, with the original's rules.

A character never plays a clip directly; it plays tasks. Each task owns cursors and
answers the same calls: ``start`` (+0x54, from the queue), ``emit`` (+0x5c sample:
push its pose on a SamplePlan's pose stack; the compiled engine advances (+0x64) and
samples the rows itself, anim.engine.kernels), ``current_time`` / ``duration``
(+0x6c / +0xd4), ``set_target`` / ``value`` / ``set_value`` (+0xac / +0xb4 / +0xbc),
``set_flags`` (+0xcc) and ``anim_id`` (+0x104). Stack changes (hand-overs, fades
giving tasks back) go through the Player, which owns the pool and the deferred list.

Each row kind has one writer, which every Python path calls (the classes' own
constructors, the Player's, a change's fade): ``write_task_row`` (a task's own row),
``write_fade_row``, ``write_gait_row`` and anim.playback.cursor.cursor_row; the rules they compute
with (the gait's pair and leaders, its target's rounding, the fade weight) are
anim.engine.rules', which the kernels and anim.engine.cmdkernel compile from the same text.
``TASK_CURSORS`` is each type's row shape (its cursor links).

Types whose details the spec leaves open (5, 7, 4, 10, 11 and 13's weights) follow the
simplest reading consistent with what it says; docs/original.md marks them as ours.

Spec: "Animation tasks", "Paired tasks", "Fades", "Gait blend", "When a clip ends".
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from scuffle.anim.maths import detmath, f32 as F
from scuffle.anim.base.callbackdata import check_callback
from scuffle.anim.data.clip import EventType
from scuffle.anim.base.enums import (AttachedVelocity, BlendWindow, EventRule, HeldFlags, HeldRelease, LOCOMOTION_FLAGS,  # noqa: F401
                    LOCOMOTION_STILL, MotionEntry, PAIRED_IDLE_FLAGS, PickSampling, PlaceEvents, TagBits, TaskFlags,
                    TaskType)
from scuffle.anim.playback.cursor import Cursor, cursor_row
from scuffle.anim.engine.sampler import CursorFlags
from scuffle.anim.engine.store import NO_ROW, Table, _stale, column, task_column
from scuffle.anim.engine.writefirst import write_first

from scuffle.anim.playback.interfaces import PoseProgram, TaskHost
from scuffle.anim.engine.rules import (TASK_CURSORS, dir_banks_misfit, HELD_EVENTS, WINDOW_RULES, PICK_THRESHOLDS, PICK_SAMPLINGS)  # noqa: F401
from scuffle.anim.engine.rules import (GAIT_ALONE_HIGH, GAIT_ALONE_LOW, GAIT_FALL_FRACTION, GAIT_SPEED, GAIT_STEPS, cursor_flags_of,
                    fade_weight, gait_clamp, gait_first_leader, gait_pair, gait_rounded_target, gait_sampled,
                    direction_centre, direction_value, mix_leader, mix_weight, pick_chosen, pick_value, near_scaled)

if TYPE_CHECKING:  # pragma: no cover
    from scuffle.anim.engine.stack import CharacterInstance

__all__ = ["ForeignTask", "TaskInUse", "not_a_task", "take_place", "TaskType", "TaskFlags", "HeldFlags", "HELD_EVENTS", "EventRule",
           "BlendWindow", "PickSampling", "PlaceEvents", "HeldRelease", "MotionEntry", "TagBits", "AttachedVelocity",
           "Task", "LoopTask",
           "ClipTask", "HoldTask",
           "SceneTask", "PairedClipTask", "PairedHoldTask", "FadeTask", "MixTask", "PickTask",
           "GaitTask", "DirectionTask", "LOCOMOTION_FLAGS", "LOCOMOTION_STILL", "PAIRED_IDLE_FLAGS",
           "GAIT_STEPS", "PICK_THRESHOLDS", "PICK_SAMPLINGS", "fade_weight", "task_at", "TASK_CURSORS",
           "write_gait_row", "write_fade_row", "write_task_row"]


_CURSOR_BITS = TaskFlags.NO_VELOCITY | TaskFlags.NO_TURN | TaskFlags.MUTED
# The constructors' fast paths write the columns with plain ints taken from the enums.
_CURSOR_INT = int(_CURSOR_BITS)
_CONTINUOUS_INT = int(TaskFlags.CONTINUOUS)
_FADE_INT = int(TaskType.FADE)
_GAIT_INT = int(TaskType.GAIT)
# The ranges the int32 flags and int64 held columns hold (the fast paths write them as they are).
_INT32 = 1 << 31
_INT63 = 1 << 63
# A float in this range is written into a float32 column as F.f32 rounds it (to nearest),
# so the fast paths write it as it is; anything else goes through F.f32.
_F32_MAX = F.FLT_MAX


# The attribute a link column is set through (for the errors).
_LINK_NAMES = {"nxt": "next", "incoming": "incoming"}


class TaskInUse(ValueError):
    """A task given a second place: it already is on a stack, in a queue or another task's
    next task (one task has one place: when it ends it goes back to the pool, and a second
    place would then hold a task that is gone); nothing was changed."""


def take_place(task: "Task", where: str) -> None:
    """Mark ``task`` placed (on a stack, in a queue, a next task); TaskInUse if it already is."""
    ts, r = task.tstore, task.trow
    if ts.m_placed[r]:
        raise TaskInUse(f"{where}: {type(task).__name__} (anim id {task.anim_id()}) already has a place (a stack, a "
                        "queue or a next task); make a new task for each place")
    ts.m_placed[r] = True


class ForeignTask(ValueError):
    """A task (or its cursor) made outside a world's Player given to it: on its stack, its
    queue, or as a next / incoming task of one of its tasks. Its rows live in another
    table, which the world's engine does not step; nothing was changed."""


def not_a_task(where: str, task: object) -> ValueError:
    """The error of a call (``where``: its name, "" for none) given something that is not a
    task."""
    return ValueError(f"{where + ': ' if where else ''}{task!r} is not a task (make one with the Player's "
                      "constructors: clip, loop, gait, ...)")


# The gait blend's pair steps and thresholds, and its rules: anim.engine.rules (one text for
# Python and the kernels).



def _world_tasks(tstore: Table | None, what: str) -> Table:
    """``tstore`` if it is a world's task table (anim.engine.store.Stores: it knows the world's
    other tables); ValueError otherwise: a task is made by a world's Player (its rows are
    the world's, the only place its state lives)."""
    if tstore is None or tstore.world is None:
        raise ValueError(f"{what}: a task is made by a world's Player (Player.loop, .clip, .gait, ...): its "
                         "rows live in the world's tables")
    return tstore


def _row_in(c, table: Table) -> int:
    """A cursor's row for a link column; ForeignTask unless it is a row of ``table`` (the
    world's cursor table)."""
    if c.store is not table:
        raise ForeignTask(f"{type(c).__name__} (anim id {c.anim_id}) was not made by this world's Player "
                          "(its row is in another cursor table)")
    return c.row


def new_handle(ts: Table, cls: Any) -> Any:
    """A handle object of task class ``cls`` for a new row of the world's task table ``ts``,
    every slot to be set by its constructor: one the flush kept when its row went back and
    nothing but the table held it (``ts.spare``: no one can see it again, so no stale
    handle is ever reused), else a new object. The Player's constructors take theirs here
    (no allocation on the command path, no deallocation at the flush)."""
    spare = ts.spare.get(cls)
    return spare.pop() if spare else cls.__new__(cls)


def note_view(ts: Table, r: int) -> None:
    """Row ``r`` of the world's task table ``ts`` holds a handle in ``views`` now: its
    flag set in ``ts.m_viewed`` ((the views list it follows, a memoryview of a bool per
    row, its length): a flag per row that may hold a handle, never False where one does),
    so the flush finds the handles of the rows it gives back without a read of ``views``
    per row (Player._rows_back). Made again from ``views`` itself when that list was
    replaced; not state (a cache of a cache: a snapshot never holds it)."""
    views = ts.views
    kept = ts.__dict__.get("m_viewed")
    if kept is None or kept[0] is not views or r >= kept[2]:
        n = max(r + 1, ts.capacity, len(views))
        flags = np.zeros(n, np.bool_)
        if kept is not None and kept[0] is views:
            flags[:kept[2]] = np.frombuffer(kept[1], np.bool_)
        else:
            flags[[k for k, t in enumerate(views) if t is not None]] = True
        kept = (views, memoryview(flags), n)  # type: ignore[arg-type]
        object.__setattr__(ts, "m_viewed", kept)
    kept[1][r] = True


def viewed_rows(ts: Table, rows: np.ndarray) -> np.ndarray | None:
    """Of ``rows`` (task rows, an int array), those that may hold a handle in ``views``
    (``note_view``'s flags, cleared for them now), or None when no flags follow
    ``views`` (the caller reads ``views`` row by row)."""
    kept = ts.__dict__.get("m_viewed")
    if kept is None or kept[0] is not ts.views:
        return None
    flags = np.frombuffer(kept[1], np.bool_)
    inside = rows[rows < kept[2]] if len(rows) and int(rows.max()) >= kept[2] else rows
    got = inside[flags[inside]]
    flags[got] = False
    return got


def bind_row(ts: Table, t: "Task", r: int) -> None:
    """New handle ``t`` bound to task row ``r`` of the world's task table ``ts``, just
    taken: its ``tstore``, ``trow`` and ``tgen``, and the table's ``views`` entry (grown
    to the row) with its flag (note_view). Every writer of a new task row calls it
    (write_task_row; the handle calls' compiled writers' callers)."""
    t.tstore = ts
    t.trow = r
    t.tgen = ts.m_gen[r]
    views = ts.views                                    # row -> its handle (links read through it)
    try:
        views[r] = t
    except IndexError:                                  # a row past the list: grown
        views.extend([None] * (r + 1 - len(views)))
        views[r] = t
    kv = ts.__dict__.get("m_viewed")                    # its flag (note_view, inline)
    if kv is not None and kv[0] is views and r < kv[2]:
        kv[1][r] = True
    else:
        note_view(ts, r)


def bind_own(t: Any, store: Table, r: int) -> None:
    """Handle ``t`` bound to row ``r`` of its own second table ``store`` (a fade's, a
    gait's), just written: its ``store``, ``row`` and ``gen``. Every writer of a fade's or
    a gait's row binds its handle so."""
    t.store = store
    t.row = r
    t.gen = store.m_gen[r]


def write_task_row(ts: Table, t: "Task", ttype: int, rate: float, flags: int, held: int, on_end,
                   hint: int | None = None) -> int:
    """The one writer of a task's own row, every type and every Python path (the classes'
    constructors, the Player's, a change's fade): a row of the world's task table ``ts``
    taken for the new handle ``t`` (its ``tstore``, ``trow``, ``tgen`` and the table's
    ``views`` entry set) at the table's defaults (store.TASK_DEFAULTS: no links, every
    number 0; Table.alloc_default, inline: the constructors' hot path), its type ``ttype``
    and rate (float32, rounded to nearest as F.f32 rounds), then only the columns that
    differ from the defaults: flags, held bits and the end callback (checked by the
    caller). Plain ints in range go through the fast views, anything else through numpy's
    casts (and its errors). The row is the free one nearest ``hint`` (None: the table's
    ``near``, Table.take_near; below 0: the free list's top). Returns the row. anim.engine.cmdkernel writes the same columns for a
    prepared command. Original: 0x001054c8 (take a task from the free list)."""
    write_first(ts)                                     # buffered commands take their rows first
    if ts.unsettled:
        ts.settle()
    mv = ts.row_views                                   # the fast views, kept together (Table.row_views)
    if mv is None:
        mv = ts.row_views = tuple(getattr(ts, name) for name in _ROW_VIEWS)
    nf = mv[0]
    n = nf[0]
    if not n:
        ts._grow(ts.capacity * 2)                       # a new block: every array is new
        mv = ts.row_views = tuple(getattr(ts, name) for name in _ROW_VIEWS)
        nf = mv[0]
        n = nf[0]
    _, free_rows, live, _, types, rates = mv
    if hint is None:
        hint = ts.near
    if hint >= 0:                                       # near the human's rows (Table.take_near)
        r = ts.take_near(hint)
    else:
        n -= 1
        r = free_rows[n]
        nf[0] = n
        live[r] = True
    bind_row(ts, t, r)
    types[r] = ttype
    if rate.__class__ is float and -_F32_MAX <= rate <= _F32_MAX:
        rates[r] = rate                                 # rounded to float32 as F.f32 rounds
    else:
        ts.rate[r] = F.f32(float(rate))
    if flags:
        if flags.__class__ is int and 0 <= flags < _INT32:
            ts.m_flags[r] = flags
        else:
            ts.flags[r] = int(flags)
    if held:
        if held.__class__ is int and 0 <= held < _INT63:
            ts.m_held[r] = held
        else:
            ts.held[r] = int(held)
    if on_end is not None:
        set_call(ts, "on_end", r, on_end)
    return r


# The task table's fast views write_task_row keeps in Table.row_views, in its order.
_ROW_VIEWS = ("m_n_free", "m_free_rows", "m_live", "m_gen", "m_type", "m_rate")


def set_call(ts: Table, column: str, r: int, fn) -> None:
    """Write callback ``fn`` (checked: anim.engine.callbacks.check_callback; None: none) into the
    id column ``column`` (``on_end``, ``on_wrap``) of task row ``r``: its id in the world's
    CallbackTable (``ts.calls``) taken, the old one let go. One writer of the callback
    columns: the handles' setters and the constructors call it."""
    col = getattr(ts, "m_" + column)
    old = col[r]
    calls = ts.calls
    if old >= 0:
        calls.drop(old)
    col[r] = calls.take(fn)


class _WrapCallback:
    """A task's wrap callback (+0x28): data (anim.engine.callbacks.Callback) or a callable, its id
    in the task table's ``on_wrap`` column (the world's CallbackTable); setting it marks the
    ``callback`` column (the compiled step then reports the task's wraps, and the Player
    calls it with the human after the step: docs/original.md, "The per-update order")."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        ts = obj.tstore
        return ts.calls.get(ts.m_on_wrap[obj.trow])

    def __set__(self, obj, fn) -> None:
        fn = check_callback(fn, "on_wrap")
        ts, r = obj.tstore, obj.trow
        if ts.gen[r] != obj.tgen:
            _stale(obj, ts, r)
        set_call(ts, "on_wrap", r, fn)
        ts.callback[r] = fn is not None


class _Partner:
    """A paired task's partner: the handle of the human whose set the clip came from (an
    entity id, the ``partner`` column), or its name when it has none (``partner_name``: an
    id of the world's CallbackTable, which holds plain values)."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        ts, r = obj.tstore, obj.trow
        p = ts.m_partner[r]
        return p if p >= 0 else ts.calls.get(ts.m_partner_name[r])

    def __set__(self, obj, value) -> None:
        ts, r = obj.tstore, obj.trow
        if ts.gen[r] != obj.tgen:
            _stale(obj, ts, r)
        write_partner(ts, r, value)


def write_partner(ts: Table, r: int, value) -> None:
    """Task row ``r``'s partner: a handle (an int >= 0) into ``partner``, a name (a str) into
    ``partner_name`` (an id of ``ts.calls``), None for none. Rejected (ValueError): any
    other value."""
    calls = ts.calls
    old = ts.m_partner_name[r]
    if old >= 0:
        calls.drop(old)
    ts.m_partner_name[r] = NO_ROW
    ts.m_partner[r] = NO_ROW
    if value is None:
        return
    if value.__class__ is str:
        ts.m_partner_name[r] = calls.take(value)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0:
        ts.m_partner[r] = int(value)
    else:
        raise ValueError(f"partner: {value!r}: expected a human's handle (an int >= 0) or its name")


class _EndCallback:
    """A task's end callback (+0x2c): data (anim.engine.callbacks.Callback) or a callable, its id
    in the task table's ``on_end`` column (the world's CallbackTable); the release calls
    it with the human."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        ts = obj.tstore
        return ts.calls.get(ts.m_on_end[obj.trow])

    def __set__(self, obj, fn) -> None:
        fn = check_callback(fn, "on_end")
        ts, r = obj.tstore, obj.trow
        if ts.gen[r] != obj.tgen:
            _stale(obj, ts, r)
        set_call(ts, "on_end", r, fn)


class _CursorLink:
    """A gait's pair cursor, read from task column ``column`` (the row is the truth: the
    compiled step changes it): a handle onto that row at each read. The cursor handle
    given to the class's own constructor is kept in ``attr`` and returned while it is
    still the row's (the Player's gaits keep none: no object per cursor)."""

    def __init__(self, attr: str, column: str, doc: str):
        self.attr, self.column, self.__doc__ = attr, column, doc
        self.fast = "m_" + column                    # the column's fast view (store._fast_view)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        ts, tr = obj.tstore, obj.trow
        if ts.m_gen[tr] != obj.tgen:
            _stale(obj, ts, tr)
        r = getattr(ts, self.fast)[tr]
        cs = obj.cstore
        c = getattr(obj, self.attr)
        if r < 0 or (c is not None and c.row == r and c.gen == cs.m_gen[r]):
            return c                                 # no row linked: the constructor's own, if any
        return Cursor.view(cs, r)

    def __set__(self, obj, c: Cursor) -> None:
        row = _row_in(c, obj.cstore)
        setattr(obj, self.attr, c)
        getattr(obj.tstore, self.column)[obj.trow] = row


class Task:
    """Fields every task has: rate (+0x0c), flags (+0x10), held bits (+0x24), the end
    callback (+0x2c) and the instance it plays on (+0x04).

    ``on_end(instance)`` runs at the release, whatever ended the task. The numbers live
    in row ``trow`` of the world's task table (``tstore``; the Player's constructors pass
    it) and only there: the object is a handle onto its row (``tgen``, the row's
    generation: StaleHandle once the row went back), which the compiled step reads and
    writes; the table's ``views`` maps the row back to it. Rejected: a ``tstore`` that is
    not a world's task table (ValueError: tasks are made by a Player).
    """

    __slots__ = ("tstore", "trow", "tgen", "__weakref__")
    tstore: Table
    trow: int
    tgen: int
    type: TaskType = TaskType.LOOP
    _TYPE = int(TaskType.LOOP)              # ``type`` as a plain int (the constructor writes it)

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        cls._TYPE = int(cls.type)

    def __init__(self, rate: float, flags: int = 0, held: int = 0, on_end: Callable | None = None,
                 tstore: Table | None = None):
        on_end = check_callback(on_end, "on_end")       # before a row is taken
        self._row_of(_world_tasks(tstore, type(self).__name__), rate, flags, held, on_end)

    def _row_of(self, ts: Table, rate: float, flags: int, held: int, on_end) -> int:
        """This new handle's row of the world's task table ``ts``: write_task_row."""
        return write_task_row(ts, self, self._TYPE, rate, flags, held, on_end)

    on_end = _EndCallback()

    rate = task_column("rate", float, "The rate (+0x0c), float32.")
    flags = task_column("flags", lambda v: TaskFlags(int(v)), "Task flags (+0x10).")
    held = task_column("held", int, "The held bits (+0x24) the task sets on the human.")
    @property
    def released(self) -> bool:
        """On the deferred list, released, or gone back to the pool (its row is another's
        now: the one question a stale task answers)."""
        ts, r = self.tstore, self.trow
        if ts.m_gen[r] != self.tgen:
            return True
        return ts.m_released[r]

    @released.setter
    def released(self, value: bool) -> None:
        ts, r = self.tstore, self.trow
        if ts.gen[r] != self.tgen:
            _stale(self, ts, r)
        ts.released[r] = value
    handed_over = task_column("handed_over", bool, "A type 3 / 6 that gave its place to its next task.")

    def _link(self, column: str, task: "Task | None", check: bool = False) -> None:
        """Write ``task``'s row into this task's link column (``nxt``, ``incoming``).
        Rejected (ForeignTask): a task of another world's table (its rows live in another
        table, which this world's engine cannot follow)."""
        ts = self.tstore
        if task is not None and task.tstore is not ts:
            raise ForeignTask(f"{type(self).__name__}.{_LINK_NAMES[column]}: {type(task).__name__} was not made "
                              "by this world's Player (its row is in another task table)")
        if check:
            if task is not None and task is not getattr(self, "next", None) and ts.placed[task.trow]:
                raise TaskInUse(f"{type(self).__name__}.{_LINK_NAMES[column]}: {type(task).__name__} (anim id "
                                f"{task.anim_id()}) already has a place (a stack, a queue or a next task); make a "
                                "new task for each place")
            return
        getattr(ts, column)[self.trow] = task.trow if task is not None else NO_ROW

    def dispose_row(self) -> None:
        """Give the task's row back to its table: the task is gone (reading it raises
        StaleHandle). A second dispose does nothing."""
        ts, r = self.tstore, self.trow
        if ts.m_gen[r] == self.tgen:
            if ts.views[r] is self:
                ts.views[r] = None
            ts.give_back(r)

    def alive(self) -> bool:
        """Whether the task's row is still its own (it has not gone back to the pool)."""
        return bool(self.tstore.gen[self.trow] == self.tgen and self.tstore.live[self.trow])

    # +0xcc
    def set_flags(self, flags: int) -> None:
        """+0xcc: set the task flags; the cursor bits (0x1, 0x2, 0x10) go to its cursors. Original: 0x001058f0."""
        self.flags = TaskFlags(flags)
        for c in self.cursors():
            c.flags = CursorFlags(int(self.flags & _CURSOR_BITS))

    def cursor_flags(self) -> int:
        """The cursor flags the task flags give (0x1 no velocity, 0x2 no turn, 0x10 muted)."""
        return int(self.flags & _CURSOR_BITS)

    # +0x54
    def start(self, player: "TaskHost", inst: "CharacterInstance") -> None:
        """Run once from the instance's queue: ours is a change to this task (no fade)."""
        player.change(inst, self, fade=0.0)

    def emit(self, plan: "PoseProgram") -> None:
        """+0x5c: push the task's pose (or blend the poses under it) on the plan's pose stack."""
        raise TypeError(f"{type(self).__name__} does not sample")

    def anim_id(self) -> int:
        """+0x104: the anim id the task reports (-1 for none). Original: 0x001752c8 (its reader)."""
        return -1

    def cursors(self) -> list[Cursor]:
        """The task's cursors (WarAnimInstance), lower / first first."""
        return []

    def leading_cursor(self) -> Cursor | None:
        """The cursor whose time and frame the task reports (its leading clip)."""
        cs = self.cursors()
        return cs[0] if cs else None

    def current_time(self) -> float:
        """+0x6c: the current time (s) of the leading cursor."""
        c = self.leading_cursor()
        return c.time if c else 0.0

    def duration(self) -> float:
        """+0xd4: the duration (s) of the leading clip."""
        c = self.leading_cursor()
        return c.duration if c else 0.0

    def set_window_time(self, t: float) -> None:
        """Keep the task at time ``t`` (a type 3 blend window into it)."""
        for c in self.cursors():
            c.set_time(F.mul(F.div(t, self.duration()), c.duration) if c != self.leading_cursor() else t)

    def following(self) -> list["Task"]:
        """Tasks this one owns that are not on the stack (a type 3's next task)."""
        return []

    def dispose(self) -> None:
        """Give the task's table rows back (it went back to the pool)."""
        for c in self.cursors():
            c.dispose()
        self.dispose_row()

    def trace(self) -> dict:
        """The task's entry in the trace: type, id, the leading cursor's time and frame."""
        c = self.leading_cursor()
        return {"type": int(self.type), "id": self.anim_id(),
                "time": c.time if c else 0.0, "frame": c.frame if c else 0}


# ---------------------------------------------------------------- single clips


class _ClipBase(Task):
    """A task on one clip: its cursor is the cursor table's row in task column ``c0`` (the
    only place it is kept: ``cursor`` makes a handle onto that row at each read, and the
    Player's constructors write the row with no handle at all: TaskBuilder._clip_made)."""

    # the anim id (an int: an old handle still names its clip); the cursor handle given to
    # the class's own constructor (None for the Player's tasks: a handle at each read)
    __slots__ = ("_aid", "_c")
    _aid: int
    _c: "Cursor | None"

    def __init__(self, cursor: Cursor, rate: float, flags: int = 0, held: int = 0, on_end=None,
                 tstore: Table | None = None):
        row = _row_in(cursor, _world_tasks(tstore, type(self).__name__).world.cursors)   # before a row is taken
        super().__init__(rate, flags, held, on_end, tstore)
        self._aid = cursor.anim_id
        self._c = cursor
        ts, r = self.tstore, self.trow
        ts.c0[r] = row
        cursor.store.flags[row] = int(ts.flags[r]) & _CURSOR_INT        # cursor_flags()

    @property
    def cursor(self) -> Cursor:
        """The clip's cursor: a handle onto the cursor row in task column ``c0`` (StaleHandle
        once the task went back to the pool)."""
        ts, r = self.tstore, self.trow
        if ts.m_gen[r] != self.tgen:
            _stale(self, ts, r)
        c = self._c
        return c if c is not None else Cursor.view(ts.world.cursors, ts.m_c0[r])

    def anim_id(self) -> int:
        return self._aid

    def cursors(self) -> list[Cursor]:
        return [self.cursor]

    def dispose(self) -> None:
        ts, r = self.tstore, self.trow
        if ts.m_gen[r] == self.tgen:             # cursors() is [cursor]: its row goes back with the task's
            c = ts.m_c0[r]
            if c >= 0:
                ts.world.cursors.give_back(c)
        self.dispose_row()

    def leading_cursor(self) -> Cursor:
        return self.cursor

    def emit(self, plan: "PoseProgram") -> None:
        c = self.cursor
        plan.sample(c.bank_index, c.time, self.rate, c.flags)


class LoopTask(_ClipBase):
    """Type 1: one clip, looping with a period of D - 1/60; calls ``on_wrap`` each wrap.

    The wrap restarts the cursor, advances it by the overshoot (so the events of the
    new pass's first frame fire: ours, the restart was not read) and calls the wrap
    callback (+0x28) with the human.
    Original: 0x00105678 (ctor), 0x00105770 (advance).
    """

    __slots__ = ()
    type = TaskType.LOOP

    def __init__(self, cursor: Cursor, rate: float, flags: int = 0, held: int = 0, on_end=None,
                 on_wrap: Callable | None = None, tstore: Table | None = None):
        on_wrap = check_callback(on_wrap, "on_wrap")     # before a row is taken
        super().__init__(cursor, rate, flags, held, on_end, tstore)
        self.on_wrap = on_wrap

    wraps = task_column("wraps", int, "The wraps so far.")
    on_wrap = _WrapCallback()

class ClipTask(_ClipBase):
    """Type 3: one clip, then a next task, with an optional blend time b into it.

    During the clip's last b seconds (b at most the next task's duration) the next task
    is advanced too, by dt at its own rate, on every update whose step leaves the clip
    inside the window (``window_rule`` ADVANCED, the default), or kept at the time into
    the window by the sampler (KEPT); its pose is blended over the clip's by the share
    of b elapsed. On the update whose step would reach frame F, the next task takes this
    one's place in the stack (advanced by dt when b > 0, else showing time 0) and this
    one goes on the deferred list. With no next task the clip holds its last frame (ours).
    Original: 0x00105990 (ctor), 0x00105af0 (advance, hand over), 0x00105ba0 (sample),
    0x00105f78 (release).
    """

    __slots__ = ()
    type = TaskType.CLIP

    def __init__(self, cursor: Cursor, rate: float, next: Task | None = None, blend: float = 0.0,
                 flags: int = 0, held: int = 0, on_end=None, window_rule: str = BlendWindow.ADVANCED,
                 tstore: Table | None = None):
        if not (blend >= 0.0 and math.isfinite(blend)):
            raise ValueError(f"blend time {blend!r} must be finite and >= 0")
        rule = window_rule if window_rule.__class__ is BlendWindow else BlendWindow(window_rule)
        super().__init__(cursor, rate, flags, held, on_end, tstore)
        self.next = next
        ts, r = self.tstore, self.trow
        ts.blend[r] = blend if blend.__class__ is float and -_F32_MAX <= blend <= _F32_MAX else F.f32(float(blend))
        ts.window[r] = WINDOW_RULES.index(rule)

    @classmethod
    def check_next(cls, ts: Table, task: Task) -> None:
        """The ``next`` setter's checks of a new task's next task, before anything is taken:
        ValueError for a fade, ForeignTask for a task of another table, TaskInUse for a task
        that already has a place; ValueError for anything that is not a task."""
        if not isinstance(task, Task):
            raise not_a_task(f"{cls.__name__}.next", task)
        if task.type == TaskType.FADE:
            raise ValueError(f"{cls.__name__}.next: a fade (type 9) cannot be a next task: it fades "
                             "between tasks on a stack (Player.change makes it)")
        if task.tstore is not ts:
            raise ForeignTask(f"{cls.__name__}.next: {type(task).__name__} was not made "
                              "by this world's Player (its row is in another task table)")
        if ts.m_placed[task.trow]:
            raise TaskInUse(f"{cls.__name__}.next: {type(task).__name__} (anim id "
                            f"{task.anim_id()}) already has a place (a stack, a queue or a next task); make a "
                            "new task for each place")

    blend = task_column("blend", float, "The blend time b into the next task (s, float32).")

    @property
    def window_rule(self) -> BlendWindow:
        """The blend window rule (BlendWindow; column ``window``: its index in WINDOW_RULES)."""
        return WINDOW_RULES[int(self.tstore.window[self.trow])]

    @window_rule.setter
    def window_rule(self, rule: str) -> None:
        self.tstore.window[self.trow] = WINDOW_RULES.index(BlendWindow(rule))

    @property
    def next(self) -> Task | None:
        """The task that takes this one's place when its clip ends (None: hold the last
        frame): read from the row's ``nxt`` link (a task made alone keeps it itself)."""
        r = self.tstore.nxt[self.trow]
        return task_at(self.tstore, r) if r >= 0 else None

    @next.setter
    def next(self, task: Task | None) -> None:
        if task is not None and task.type == TaskType.FADE:
            raise ValueError(f"{type(self).__name__}.next: a fade (type 9) cannot be a next task: it fades "
                             "between tasks on a stack (Player.change makes it)")
        self._link("nxt", task, check=True)   # ForeignTask, TaskInUse before anything changes
        old = self.next
        if old is not None and old is not task:
            old.tstore.placed[old.trow] = False      # no longer this task's: free for a place
        if task is not None:
            task.tstore.placed[task.trow] = True
        self._link("nxt", task)

    def following(self) -> list[Task]:
        nxt = self.next
        if nxt is None or self.tstore.handed_over[self.trow]:      # self.handed_over
            return []
        return [nxt]

    def window(self) -> float:
        """The effective blend time: b, at most the next task's duration."""
        if self.next is None or self.blend <= 0.0:
            return 0.0
        return min(self.blend, self.next.duration())

    def into_window(self) -> float:
        """The time into the blend window, t - (D - b) (> 0 inside it; 0 without one)."""
        b = self.window()
        if b <= 0.0:
            return 0.0
        c = self.cursor
        return F.sub(c.time, F.sub(c.duration, b))

    def emit(self, plan: "PoseProgram") -> None:
        c = self.cursor
        plan.sample(c.bank_index, c.time, self.rate, c.flags)
        b = self.window()
        if b > 0.0:
            assert self.next is not None  # window() > 0 needs a next task
            into = self.into_window()
            if into > 0.0:
                if self.window_rule == BlendWindow.KEPT:
                    self.next.set_window_time(into)
                self.next.emit(plan)
                plan.blend_top(min(into / b, 1.0))

    def trace(self) -> dict:
        d = super().trace()
        if self.next is not None:
            d["next"] = self.next.anim_id()
            d["blend"] = self.blend
        return d


class HoldTask(_ClipBase):
    """Type 5 (not traced; ours): one clip played once, holding its last frame at the end."""

    __slots__ = ()
    type = TaskType.HOLD

class SceneTask(HoldTask):
    """Type 7: a scene's clip at the rate the scene code gives (+0x0c); held at its end (ours).

    Original: 0x001069c0 (ctor, called from the scene code 0x0039d870).
    """

    __slots__ = ()
    type = TaskType.SCENE


class PairedClipTask(ClipTask):
    """Type 6: a paired type 3; the clip and its rate come from another human's character.

    ``partner`` is the handle of the human whose set the clip was found in.
    Original: 0x00108a78 PairedTask_Init, 0x00108bd0 / 0x00108c80 / 0x00108ba8.
    """

    __slots__ = ()
    type = TaskType.PAIRED_CLIP
    partner = _Partner()

    def __init__(self, cursor: Cursor, rate: float, partner, next: Task | None = None, blend: float = 0.0,
                 flags: int = 0, held: int = 0, on_end=None, window_rule: str = BlendWindow.ADVANCED,
                 tstore: Table | None = None):
        super().__init__(cursor, rate, next, blend, flags, held, on_end, window_rule, tstore)
        self.partner = partner


class PairedHoldTask(HoldTask):
    """Type 4: a paired type 5 (the clip and rate from another human's character).

    Original: 0x00108450 PairedTask_Init (type 4).
    """

    __slots__ = ()
    type = TaskType.PAIRED_HOLD
    partner = _Partner()

    def __init__(self, cursor: Cursor, rate: float, partner, flags: int = 0, held: int = 0, on_end=None,
                 tstore: Table | None = None):
        super().__init__(cursor, rate, flags, held, on_end, tstore)
        self.partner = partner


# ---------------------------------------------------------------- fades


def write_fade_row(ts: Table, tr: int, fades: Table, duration: float) -> int:
    """The one writer of a type 9's own row, for every Python path (the class's
    constructor, the Player's ``fade``, a change's fade): a row of ``fades`` taken and
    linked from task row ``tr`` of ``ts`` (``aux``), nothing elapsed, the duration
    ``duration`` (checked: finite, >= 0, a float32 holds it). Out: the fade's row.
    anim.engine.cmdkernel writes the same columns for a prepared command's change.
    Original: 0x00106c80."""
    r = fades.alloc_default(near_scaled(tr, fades.capacity, ts.capacity))     # near its task's row
    fades.m_el[r] = 0.0
    fades.m_dur[r] = duration
    ts.m_aux[tr] = r
    return r


class FadeTask(Task):
    """Type 9: a cross-fade over d seconds from the tasks below it into the new one.

    Its sample blends the two poses under it with the outgoing weight
    w_old = (1 + cos(pi t / d)) / 2. When t reaches d, or the stack holds more than 12
    tasks, it gives back itself and every task between the new one and itself.
    Original: 0x00106c80 (ctor), 0x00106cc8 (advance, clean-up), 0x00106e50 (weight),
    0x00106ee8 (release).
    """

    __slots__ = ("store", "row", "gen")
    store: Table                # its own row: the fade table's (bind_own)
    row: int
    gen: int
    type = TaskType.FADE

    def __init__(self, duration: float, rate: float = 1.0, held: int = 0, on_end=None, store: Table | None = None,
                 tstore: Table | None = None):
        if not (duration >= 0.0 and math.isfinite(duration)):
            raise ValueError(f"fade time {duration!r} must be finite and >= 0")
        super().__init__(rate, 0, held, on_end, tstore)
        st = store if store is not None else self.tstore.world.fades
        bind_own(self, st, write_fade_row(self.tstore, self.trow, st, F.f32(float(duration))))

    @classmethod
    def _made(cls, ts: Table, fades: Table, duration: float, rate: float, held: int = 0) -> "FadeTask":
        """``FadeTask(duration, rate, held, store=fades, tstore=ts)`` for the Player's
        constructors (``ts`` / ``fades`` the world's tables): the task row, then the fade's
        (write_fade_row)."""
        try:
            fine = duration >= 0.0 and math.isfinite(duration)
        except TypeError:                       # not a number
            fine = False
        if not fine:
            raise ValueError(f"fade time {duration!r} must be finite and >= 0")
        t = new_handle(ts, cls)
        tr = write_task_row(ts, t, _FADE_INT, rate, 0, held, None)
        bind_own(t, fades, write_fade_row(ts, tr, fades, duration if duration.__class__ is float and
                                          duration <= _F32_MAX else F.f32(float(duration))))
        return t

    elapsed = column("el", float, "Time into the fade (+0x1c), float32 summed toward zero.")
    fade_time = column("dur", float, "The fade's duration d (s, float32).")

    @property
    def incoming(self) -> Task | None:
        """The new task the fade brings in (the tasks above it, up to the fade, go at its
        end): read from the row's ``incoming`` link (a fade made alone keeps it itself)."""
        r = self.tstore.incoming[self.trow]
        return task_at(self.tstore, r) if r >= 0 else None

    @incoming.setter
    def incoming(self, task: Task | None) -> None:
        self._link("incoming", task)     # ForeignTask before anything changes

    def dispose(self) -> None:
        self.dispose_row()
        if self.store.m_gen[self.row] == self.gen:
            self.store.give_back(self.row)

    def weight(self) -> float:
        return fade_weight(self.elapsed, self.fade_time)

    def duration(self) -> float:
        return self.fade_time

    def current_time(self) -> float:
        return self.elapsed

    def finish_early(self, player, inst) -> None:
        """Advance by the remaining time (the change's early finish, 0x00177eb8)."""
        self.elapsed = F.add(self.elapsed, F.sub(self.fade_time, self.elapsed))
        if self.elapsed < self.fade_time:
            self.elapsed = self.fade_time
        player.complete_fade(inst, self)

    def emit(self, plan: "PoseProgram") -> None:
        plan.blend_top(self.weight())

    def trace(self) -> dict:
        return {"type": int(self.type), "id": -1, "time": self.elapsed, "frame": 0,
                "elapsed": self.elapsed, "duration": self.fade_time, "weight": round(self.weight(), 6)}


# ---------------------------------------------------------------- blends of several clips


def _follow(leader: Cursor, other: Cursor) -> None:
    """Put ``other`` at the leader's normalised time (time / duration)."""
    other.set_time(F.mul(F.div(leader.time, leader.duration), other.duration))


def write_gait_row(ts: Table, tr: int, gaits: Table, ids: Sequence[int], banks: Sequence[int], v: float, tg: float,
                   speed: float) -> tuple[int, int, int]:
    """The one writer of a type 12's own row, for every Python path (the class's
    constructor, the Player's, the stack rules'): a row of ``gaits`` taken and linked from
    task row ``tr`` of ``ts`` (``aux``), its five ids and bank indices, the value ``v`` and
    target ``tg`` (float32 values, the target already rounded: anim.engine.rules), the pair and
    its first leader by anim.engine.rules, the gait's ``speed`` on the task row. Out: (gait row,
    lower, leader); the caller makes the pair's cursors. anim.engine.cmdkernel writes the same
    columns with the same rules for a prepared command. Original: 0x0010a310."""
    r = gaits.alloc_default(near_scaled(tr, gaits.capacity, ts.capacity))    # near its task's; every column written below
    ts.m_aux[tr] = r
    gaits.m_id0[r], gaits.m_id1[r], gaits.m_id2[r], gaits.m_id3[r], gaits.m_id4[r] = ids
    gaits.m_b0[r], gaits.m_b1[r], gaits.m_b2[r], gaits.m_b3[r], gaits.m_b4[r] = banks
    ts.m_speed[tr] = speed
    lower = gait_pair(v)
    leader = gait_first_leader(v, lower)
    gaits.m_value[r] = v                              # float32 values: read back unchanged
    gaits.m_target[r] = tg
    gaits.m_lower[r] = lower
    gaits.m_leader[r] = leader
    return r, lower, leader


class GaitTask(Task):
    """Type 12: five clips on a blend value v from 0 to 4 (walk, jog, run, sprint, sprint).

    Each advance moves v toward the target by at most rate x dt x speed; the pair is
    clip floor(v) and floor(v) + 1 with the steps 0.995 / 1.995 / 2.995; a clip that
    comes in joins at the normalised time of the one it joins; one cursor leads (the
    leader rule below) and advances, looping, and the other follows at the same
    normalised time, muted. Leader: fraction < 0.01 the lower, >= 0.995 the upper;
    otherwise the upper when v is still above the target (falling) or the fraction
    before the move was over 0.875, else the lower. Only the leader's events fire.
    Original: 0x0010a310 (ctor), 0x0010a5b8 (advance), 0x0010adf8 (sample),
    0x0010a500 (set target), 0x0010a558 (set value).
    """

    __slots__ = ("_lower_cursor", "_upper_cursor", "_make_cursor", "store", "row", "gen", "cstore")
    store: Table                # its own row: the gait table's (bind_own)
    row: int
    gen: int
    type = TaskType.GAIT
    _lower_cursor: Cursor | None
    _upper_cursor: Cursor | None

    def __init__(self, ids: Sequence[int], make_cursor: Callable[[int], Cursor], rate: float = 1.0,
                 value: float = 0.0, target: float | None = None, flags: int = int(LOCOMOTION_FLAGS),
                 speed: float = GAIT_SPEED, on_wrap: Callable | None = None, held: int = 0, on_end=None,
                 store: Table | None = None, tstore: Table | None = None, banks: Sequence[int] | None = None):
        if len(ids) != 5:
            raise ValueError(f"gait blend: 5 anim ids, got {len(ids)}")
        v = self._clamp(value)
        tg = None if target is None else self._clamp(target)
        on_wrap = check_callback(on_wrap, "on_wrap")     # before a row is taken
        super().__init__(rate, flags, held, on_end, tstore)
        ts, tr = self.tstore, self.trow
        fl = int(ts.flags[tr])
        # a target given is rounded as set_target rounds it; none: the value, as it is
        tg = v if tg is None else gait_rounded_target(tg, fl & _CONTINUOUS_INT)
        st = store if store is not None else ts.world.gaits
        sp = speed if speed.__class__ is float and -_F32_MAX <= speed <= _F32_MAX else F.f32(float(speed))
        # the clips' bank indices (the compiled step makes the cursors a change of pair
        # brings in from them); a gait made alone makes them with ``make_cursor``
        r, lower, leader = write_gait_row(ts, tr, st, tuple(map(int, ids)),
                                          tuple(banks) if banks is not None else (0,) * 5, v, tg, sp)
        bind_own(self, st, r)
        self._make_cursor = None if banks is not None else make_cursor
        self.on_wrap = on_wrap
        ids = self.ids
        lo = make_cursor(ids[lower])
        up = make_cursor(ids[lower + 1])
        self.cstore = ts.world.cursors
        self.lower_cursor, self.upper_cursor = lo, up
        base = fl & _CURSOR_INT                      # _apply_flags()
        lo.store.flags[lo.row] = cursor_flags_of(base, leader == 0)
        up.store.flags[up.row] = cursor_flags_of(base, leader == 1)

    @staticmethod
    def _bind_rows(t: "GaitTask", gaits: Table, r: int, cursors: Table) -> None:
        """Handle ``t`` bound to gait row ``r`` of ``gaits`` (bind_own), its pair's cursors
        rows alone of ``cursors`` (no handle objects, none made on demand): as every writer
        of a new gait's rows binds its handle (``_made``, the handle calls' compiled
        writer's caller)."""
        bind_own(t, gaits, r)
        t._make_cursor = None
        t.cstore = cursors
        t._lower_cursor = t._upper_cursor = None

    @classmethod
    def _made(cls, ts: Table, gaits: Table, ids: Sequence[int], banks: Sequence[int], protos: Sequence[tuple],
              rate: float, value: float, target: float, flags: int, held: int = 0) -> "GaitTask":
        """``GaitTask(ids, ..., rate, value, target, flags, held=held, banks=banks)`` for the
        Player's constructors, which checked everything first (``ts`` / ``gaits`` the world's
        tables, ``ids`` five found ints, ``banks`` their clips' bank indices and ``protos``
        their cursor_proto, ``value`` and ``target`` checked numbers): the pair's two cursors
        made as rows of the world's cursor table (anim.playback.cursor.cursor_row, no handles). The
        gait's row is write_gait_row's, as every path writes it."""
        v = cls._clamp(value)
        t = new_handle(ts, cls)
        fl = int(flags)
        tr = write_task_row(ts, t, _GAIT_INT, rate, fl, held, None)
        tg = gait_rounded_target(v if target is value else cls._clamp(target), fl & _CONTINUOUS_INT)
        r, lower, leader = write_gait_row(ts, tr, gaits, ids, banks, v, tg, GAIT_SPEED)
        cs = ts.world.cursors
        cls._bind_rows(t, gaits, r, cs)
        base = fl & _CURSOR_INT                      # _apply_flags()
        ts.m_c0[tr] = cursor_row(cs, banks[lower], ids[lower], cursor_flags_of(base, leader == 0), protos[lower])
        ts.m_c1[tr] = cursor_row(cs, banks[lower + 1], ids[lower + 1], cursor_flags_of(base, leader == 1),
                                 protos[lower + 1])
        return t

    # ---- the numbers, in the tables
    speed = task_column("speed", float, "The value's speed (units per second at rate 1), float32.")

    @property
    def ids(self) -> tuple[int, int, int, int, int]:
        """The five anim ids (walk, jog, run, sprint, sprint), from the gait's row."""
        st, r = self.store, self.row
        return int(st.id0[r]), int(st.id1[r]), int(st.id2[r]), int(st.id3[r]), int(st.id4[r])

    lower_cursor = _CursorLink("_lower_cursor", "c0", "The pair's lower clip's cursor (task column ``c0``).")
    upper_cursor = _CursorLink("_upper_cursor", "c1", "The pair's upper clip's cursor (task column ``c1``).")
    on_wrap = _WrapCallback()

    value = column("value", float, "The blend value v (+0x38), 0-4.")
    target = column("target", float, "The target value (+0x34).")
    lower = column("lower", int, "The pair's lower index, floor(v) with the 0.995 steps.")
    leader = column("leader", int, "0: the lower clip leads, 1: the upper.")

    def dispose(self) -> None:
        ts, tr = self.tstore, self.trow
        if ts.m_gen[tr] == self.tgen:            # Task.dispose: the cursors' rows, then the task's
            cs = self.cstore
            cs.give_back(ts.m_c0[tr])
            cs.give_back(ts.m_c1[tr])
        self.dispose_row()
        if self.store.m_gen[self.row] == self.gen:
            self.store.give_back(self.row)

    @staticmethod
    def _clamp(v: float) -> float:
        """A value or target clamped to 0-4 (anim.engine.rules.gait_clamp), as a float32 value;
        ValueError when it is not finite."""
        if v.__class__ is float and 0.0 <= v <= 4.0:
            return F.f32(v)                          # within 0-4 already
        if not math.isfinite(v):
            raise ValueError(f"gait value {v!r} must be finite")
        return F.f32(gait_clamp(float(v)))

    @staticmethod
    def pair_index(v: float) -> int:
        """floor(v) with the steps 0.995, 1.995, 2.995 (0-3): anim.engine.rules.gait_pair."""
        return gait_pair(v)

    def set_target(self, target: float) -> None:
        """+0xac: clamp to 0-4, rounded to the nearest integer unless flag 0x200 (0x0010a500)."""
        t = self._clamp(target)
        ts, tr = self.tstore, self.trow
        if ts.m_gen[tr] != self.tgen:
            _stale(self, ts, tr)
        t = gait_rounded_target(t, ts.m_flags[tr] & _CONTINUOUS_INT)
        st, r = self.store, self.row                   # self.target = t, through the fast view
        if st.m_gen[r] != self.gen:
            _stale(self, st, r)
        st.m_target[r] = t                             # a float32 value in 0-4: stored exactly

    def set_value(self, v: float) -> None:
        """+0xbc: set the value at once (0x0010a558); the pair follows on the next advance."""
        self.value = self._clamp(v)

    def set_flags(self, flags: int) -> None:
        self.flags = TaskFlags(flags)
        self._apply_flags()

    def _apply_flags(self) -> None:
        base = self.cursor_flags()
        lead, follow = self._lead_follow()
        lead.flags = CursorFlags(base)
        follow.flags = CursorFlags(base | CursorFlags.MUTED)

    def _lead_follow(self) -> tuple[Cursor, Cursor]:
        if self.leader == 0:
            return self.lower_cursor, self.upper_cursor
        return self.upper_cursor, self.lower_cursor

    def cursors(self) -> list[Cursor]:
        return [self.lower_cursor, self.upper_cursor]

    def leading_cursor(self) -> Cursor:
        return self.lower_cursor if self.store.leader[self.row] == 0 else self.upper_cursor

    def anim_id(self) -> int:
        ts, tr = self.tstore, self.trow              # the leader's cursor row's id
        if ts.m_gen[tr] != self.tgen:
            _stale(self, ts, tr)
        return self.cstore.m_anim[ts.m_c0[tr] if self.store.m_leader[self.row] == 0 else ts.m_c1[tr]]

    def fraction(self) -> float:
        return self.value - self.lower

    def emit(self, plan: "PoseProgram") -> None:
        frac = self.fraction()
        lo, up = self.lower_cursor, self.upper_cursor
        alone = gait_sampled(frac)                     # anim.engine.rules: one clip near a step, else both
        if alone == 0:
            plan.sample(lo.bank_index, lo.time, self.rate, lo.flags)
        elif alone == 1:
            plan.sample(up.bank_index, up.time, self.rate, up.flags)
        else:
            plan.sample(lo.bank_index, lo.time, self.rate, lo.flags)
            plan.sample(up.bank_index, up.time, self.rate, up.flags)
            plan.blend_top(frac)

    def trace(self) -> dict:
        d = super().trace()
        ids = self.ids
        d.update(ids=list(ids), value=self.value, target=self.target,
                 lower=ids[self.lower], upper=ids[self.lower + 1],
                 leader=self.leading_cursor().anim_id)
        return d


class MixTask(Task):
    """Type 10 (details ours): two looping clips mixed by a weight (the second's share).

    The weight eases toward its target at ``speed`` units/s like the gait value; the
    heavier clip leads (advances, loops, fires its events) and the other follows at its
    normalised time, muted. The numbers live in the task's row: the cursors ``c0`` /
    ``c1`` (``a`` / ``b``), the weight ``value`` and its ``target`` (doubles, as the
    scalar code always added them), ``speed`` (float32).
    Original: 0x0010b090 (ctor), 0x0010b448 (sample).
    """

    __slots__ = ("a", "b")
    type = TaskType.MIX

    def __init__(self, a: Cursor, b: Cursor, rate: float = 1.0, weight: float = 0.0, flags: int = 0,
                 speed: float = GAIT_SPEED, held: int = 0, on_end=None, tstore: Table | None = None):
        cs = _world_tasks(tstore, type(self).__name__).world.cursors
        rows = _row_in(a, cs), _row_in(b, cs)              # before a row is taken
        super().__init__(rate, flags, held, on_end, tstore)
        self.a, self.b = a, b
        ts, r = self.tstore, self.trow
        ts.c0[r], ts.c1[r] = rows
        ts.value[r] = ts.target[r] = min(max(float(weight), 0.0), 1.0)
        self.speed = F.f32(float(speed))
        self._apply()

    @classmethod
    def _made(cls, ts: Table, make_cursor: Callable, rate: float, weight: float, flags: int = 0) -> "MixTask":
        """``MixTask(a, b, rate, weight, flags, tstore=ts)`` for the Player's constructors,
        which checked everything first; ``make_cursor(k, cursor_flags)`` makes clip ``k``'s
        cursor (0: a, 1: b) with its flags (the leader's: the task's cursor bits; the other's
        muted too). One function: each row written once."""
        w = mix_weight(float(weight))
        base = int(flags) & _CURSOR_INT              # _apply(): the heavier clip leads
        lead = mix_leader(w)
        t = cls.__new__(cls)
        r = t._row_of(ts, rate, flags, 0, None)
        a = make_cursor(0, cursor_flags_of(base, lead == 0))
        b = make_cursor(1, cursor_flags_of(base, lead == 1))
        t.a, t.b = a, b
        ts.m_c0[r] = a.row
        ts.m_c1[r] = b.row
        ts.m_value[r] = w
        ts.m_target[r] = w
        ts.m_speed[r] = GAIT_SPEED                   # F.f32(GAIT_SPEED): 10.0 exactly
        return t

    value = task_column("value", float, "The weight (the second clip's share), 0-1, a double.")
    target = task_column("target", float, "The weight's target, 0-1, a double.")
    speed = task_column("speed", float, "The weight's speed (units per second at rate 1), float32.")

    def _apply(self) -> None:
        base = self.cursor_flags()
        lead = self.leading_cursor()
        for c in (self.a, self.b):
            c.flags = CursorFlags(base | (0 if c is lead else CursorFlags.MUTED))

    def set_target(self, w: float) -> None:
        """+0xac: the weight's target, clamped to 0-1."""
        self.target = mix_weight(float(w))

    def set_value(self, w: float) -> None:
        """+0xbc: the weight (and its target) at once, clamped to 0-1; the leader follows."""
        self.value = self.target = mix_weight(float(w))
        self._apply()

    def cursors(self) -> list[Cursor]:
        return [self.a, self.b]

    def leading_cursor(self) -> Cursor:
        return self.b if self.value >= 0.5 else self.a

    def anim_id(self) -> int:
        return self.leading_cursor().anim_id

    def emit(self, plan: "PoseProgram") -> None:
        plan.sample(self.a.bank_index, self.a.time, self.rate, self.a.flags)
        plan.sample(self.b.bank_index, self.b.time, self.rate, self.b.flags)
        plan.blend_top(self.value)


class PickTask(Task):
    """Type 11 (details ours): four looping clips; a value 0-3 picks the one that is heard
    (the others carry flag 0x10), by the thresholds 0.51 / 1.51 / 2.51. All four advance
    in step. ``sampling`` CHOSEN (the default) samples the picked clip only; ALL pushes
    all four on the pose stack and keeps the picked one's pose (PickSampling). The
    numbers live in the task's row: the cursors ``c0``-``c3``, ``value`` (a float32) and
    ``sampling`` (its index in PICK_SAMPLINGS).
    Original: 0x00106f50 (ctor), 0x00107f60 (sample, its +0x0c rate).
    """

    __slots__ = ("clips",)
    type = TaskType.PICK

    def __init__(self, cursors: Sequence[Cursor], rate: float, value: float = 0.0, flags: int = 0,
                 held: int = 0, on_end=None, sampling: str = PickSampling.CHOSEN, tstore: Table | None = None):
        if len(cursors) != 4:
            raise ValueError(f"type 11: 4 clips, got {len(cursors)}")
        rule = PickSampling(sampling)
        cs = _world_tasks(tstore, type(self).__name__).world.cursors
        rows = tuple(_row_in(c, cs) for c in cursors)       # before a row is taken
        super().__init__(rate, flags, held, on_end, tstore)
        ts, r = self.tstore, self.trow
        ts.sampling[r] = PICK_SAMPLINGS.index(rule)
        self.clips = list(cursors)
        ts.c0[r], ts.c1[r], ts.c2[r], ts.c3[r] = rows
        ts.value[r] = F.f32(min(max(float(value), 0.0), 3.0))
        self._apply()

    @classmethod
    def _made(cls, ts: Table, make_cursor: Callable, rate: float, value: float, flags: int = 0,
              sampling: int = 0) -> "PickTask":
        """``PickTask(cursors, rate, value, flags, sampling=PICK_SAMPLINGS[sampling],
        tstore=ts)`` for the Player's constructors, which checked everything first;
        ``make_cursor(k, cursor_flags)`` makes clip ``k``'s cursor (0-3) with its flags (the
        chosen one's: the task's cursor bits; the others muted too). One function."""
        v = F.f32(pick_value(float(value)))
        k = pick_chosen(v)                           # chosen()
        base = int(flags) & _CURSOR_INT
        t = cls.__new__(cls)
        r = t._row_of(ts, rate, flags, 0, None)
        clips = t.clips = [make_cursor(i, cursor_flags_of(base, i == k)) for i in range(4)]
        ts.m_c0[r], ts.m_c1[r], ts.m_c2[r], ts.m_c3[r] = (c.row for c in clips)
        ts.m_value[r] = v
        if sampling:
            ts.m_sampling[r] = sampling
        return t

    value = task_column("value", float, "The value 0-3 that picks the audible clip (float32).")

    @property
    def sampling(self) -> PickSampling:
        """What the pose samples (PickSampling; column ``sampling``: its index in PICK_SAMPLINGS)."""
        return PICK_SAMPLINGS[int(self.tstore.sampling[self.trow])]

    @sampling.setter
    def sampling(self, rule: str) -> None:
        self.tstore.sampling[self.trow] = PICK_SAMPLINGS.index(PickSampling(rule))

    def chosen(self) -> int:
        """The audible clip: 0 below 0.51, 1 below 1.51, 2 below 2.51, else 3."""
        return pick_chosen(self.value)

    def set_value(self, v: float) -> None:
        """Set the value (clamped to 0-3, float32) and so the audible clip."""
        self.value = F.f32(pick_value(float(v)))
        self._apply()

    set_target = set_value

    def _apply(self) -> None:
        base = self.cursor_flags()
        k = self.chosen()
        for i, c in enumerate(self.clips):
            c.flags = CursorFlags(base | (0 if i == k else CursorFlags.MUTED))

    def cursors(self) -> list[Cursor]:
        return list(self.clips)

    def leading_cursor(self) -> Cursor:
        return self.clips[self.chosen()]

    def anim_id(self) -> int:
        return self.leading_cursor().anim_id

    def emit(self, plan: "PoseProgram") -> None:
        if self.sampling == PickSampling.ALL:
            k = self.chosen()
            handles = [plan.sample(c.bank_index, c.time, self.rate, c.flags) for c in self.clips]
            plan.keep(handles, handles[k])
            return
        c = self.leading_cursor()
        plan.sample(c.bank_index, c.time, self.rate, c.flags)


class DirectionTask(Task):
    """Type 13 (weights ours): an eight-direction blend of three neighbouring clips.

    The clips are ids base + (d - 1) & 7, base + d, base + (d + 1) & 7 around the
    nearest direction d to the value (0-8, wrapping). The centre leads and fires its
    events, the neighbours follow at its normalised time; the pose mixes the centre with
    the neighbour on the value's side by the distance to it (a linear weight). The
    numbers live in the task's row: ``base``, ``value`` (a double), ``centre`` and the
    three cursors ``c0`` / ``c1`` / ``c2`` (the lower neighbour, the centre, the upper);
    ``set_value`` (a command) makes the cursors of directions that come in.
    Original: 0x00109210 (ctor), 0x0010a008 (sample).
    """

    __slots__ = ("_dir_cache", "_make_cursor")
    type = TaskType.DIRECTION

    def __init__(self, base: int, make_cursor: Callable[[int], Cursor] | None = None, rate: float = 1.0,
                 direction: float = 0.0, flags: int = 0, held: int = 0, on_end=None, tstore: Table | None = None,
                 banks: Sequence[int] | None = None):
        if banks is None and make_cursor is None:
            raise ValueError("DirectionTask: the eight clips' bank indices (banks) or a make_cursor")
        super().__init__(rate, flags, held, on_end, tstore)
        self.base = int(base)
        # the eight clips' bank indices, a column of the row (the cursors of directions that
        # come in are made from them); make_cursor only without them
        if banks is not None:
            self.tstore.dir_banks[self.trow] = [int(b) for b in banks]
        self._make_cursor = None if banks is not None else make_cursor
        self._dir_cache: list[Cursor] = []
        self.value = float(direction) % 8.0
        self.centre = int(math.floor(self.value + 0.5)) & 7
        self._ensure({})

    @classmethod
    def _made(cls, ts: Table, base: int, banks: Sequence[int], make_cursor: Callable, rate: float,
              direction: float, flags: int = 0) -> "DirectionTask":
        """``DirectionTask(base, None, rate, direction, flags, tstore=ts, banks=banks)`` for
        the Player's constructors, which checked everything first; ``make_cursor(d,
        cursor_flags)`` makes direction ``d``'s cursor with its flags (the centre's: the
        task's cursor bits; its neighbours muted too) and returns its row (no handle: the
        cursors are read from the rows, cursors_by_dir). One function: each row written once."""
        t = cls.__new__(cls)
        r = t._row_of(ts, rate, flags, 0, None)
        ts.m_base[r] = int(base)
        ts.dir_banks[r] = [int(b) for b in banks]
        t._make_cursor = None
        value = direction_value(float(direction))
        centre = direction_centre(value)
        ts.m_value[r] = value
        ts.m_centre[r] = centre
        cb = int(flags) & _CURSOR_INT                # _ensure({}): three new cursors
        ts.m_c0[r] = make_cursor((centre - 1) & 7, cursor_flags_of(cb, False))    # lower, centre (leads), upper
        ts.m_c1[r] = make_cursor(centre, cursor_flags_of(cb, True))
        ts.m_c2[r] = make_cursor((centre + 1) & 7, cursor_flags_of(cb, False))
        t._dir_cache = []                                # handles made when read (cursors_by_dir)
        return t

    base = task_column("base", int, "The first of the eight anim ids (direction 0).")
    value = task_column("value", float, "The direction 0-8 (wrapping), a double.")
    centre = task_column("centre", int, "The nearest direction to the value, 0-7: the leading clip's.")

    def _neighbours(self) -> tuple[int, int, int]:
        c = self.centre
        return (c - 1) & 7, c, (c + 1) & 7

    @property
    def cursors_by_dir(self) -> dict[int, Cursor]:
        """The three cursors by direction (lower neighbour, centre, upper), read from the
        rows ``c0`` / ``c1`` / ``c2``: a new dict; the Cursor objects are a cache, made again
        when a row or its generation moved on."""
        ts, r = self.tstore, self.trow
        cs = ts.world.cursors
        out: dict[int, Cursor] = {}
        cache = self._dir_cache
        for d, row in zip(self._neighbours(), (int(ts.c0[r]), int(ts.c1[r]), int(ts.c2[r]))):
            hit = next((c for c in cache if c.row == row and c.gen == cs.gen[row]), None)
            out[d] = hit if hit is not None else Cursor.view(cs, row)
        self._dir_cache = list(out.values())
        return out

    def _ensure(self, old: dict[int, Cursor]) -> None:
        """The cursors of the three neighbours of the (new) centre: those ``old`` (by
        direction, before the change) has are kept, the others made at the old centre's
        normalised time (when there was one) and the ones left behind given back."""
        lead = old.get(self.centre)
        keep = {}
        for d in self._neighbours():
            cur = old.get(d)
            if cur is None:
                cur = self._new_cursor(d)
                if lead is not None:
                    _follow(lead, cur)
            keep[d] = cur
        for d, cur in old.items():
            if d not in keep:
                cur.dispose()
        self._dir_cache = list(keep.values())
        ts, r = self.tstore, self.trow
        cs = ts.world.cursors
        ts.c0[r], ts.c1[r], ts.c2[r] = (_row_in(c, cs) for c in keep.values())     # lower, centre, upper
        base = self.cursor_flags()
        for d, cur in keep.items():
            cur.flags = CursorFlags(base | (0 if d == self.centre else CursorFlags.MUTED))

    def _new_cursor(self, d: int) -> Cursor:
        """A new cursor on direction ``d``'s clip (id base + d), from its bank index."""
        if self._make_cursor is not None:
            return self._make_cursor(self.base + d)
        cs = self.tstore.world.cursors
        bank = int(self.tstore.dir_banks[self.trow, d])
        return Cursor(cs.clips[bank], bank, self.base + d, 0, cs, cs.all_events)

    def set_value(self, direction: float) -> None:
        """+0xbc: the direction (taken modulo 8); the clips of the new neighbours come in
        at the new centre's normalised time (fresh when the centre was not a neighbour)."""
        old = self.cursors_by_dir                     # by direction, around the old centre
        self.value = direction_value(float(direction))
        self.centre = direction_centre(self.value)
        self._ensure(old)

    set_target = set_value

    def cursors(self) -> list[Cursor]:
        return [self.cursors_by_dir[d] for d in self._neighbours()]

    def leading_cursor(self) -> Cursor:
        return self.cursors_by_dir[self.centre]

    def anim_id(self) -> int:
        ts, r = self.tstore, self.trow
        if ts.m_gen[r] == self.tgen:                     # the centre's cursor row (c1): its anim id
            c = ts.m_c1[r]
            if c >= 0:
                return ts.world.cursors.m_anim[c]
        return self.leading_cursor().anim_id

    def side_weight(self) -> tuple[int, float]:
        """The neighbour on the value's side (its direction) and its share."""
        off = (self.value - self.centre + 4.0) % 8.0 - 4.0     # -0.5 .. 0.5
        lo, c, hi = self._neighbours()
        return (hi, off) if off >= 0 else (lo, -off)

    def emit(self, plan: "PoseProgram") -> None:
        lead = self.leading_cursor()
        side, w = self.side_weight()
        plan.sample(lead.bank_index, lead.time, self.rate, lead.flags)
        if w > 0.0:
            other = self.cursors_by_dir[side]
            plan.sample(other.bank_index, other.time, self.rate, other.flags)
            plan.blend_top(w)


# The task classes whose rows a prepared command writes with no handle (anim.playback.recipe): a
# handle is made for such a row on its first read (task_at), from the row alone.
_MADE_ON_READ: dict[int, type] = {int(TaskType.LOOP): LoopTask, int(TaskType.CLIP): ClipTask,
                                  int(TaskType.FADE): FadeTask, int(TaskType.GAIT): GaitTask,
                                  int(TaskType.HOLD): HoldTask, int(TaskType.SCENE): SceneTask,
                                  int(TaskType.PAIRED_CLIP): PairedClipTask,
                                  int(TaskType.PAIRED_HOLD): PairedHoldTask, int(TaskType.MIX): MixTask,
                                  int(TaskType.PICK): PickTask, int(TaskType.DIRECTION): DirectionTask}


def task_at(ts: Table, r: int) -> Task | None:
    """The handle of row ``r`` of the world's task table ``ts`` (``ts.views[r]``), made on
    its first read for a live row a prepared command wrote without one (Player.run: its
    ``views`` entry None) and kept there, so every later read gets the same object; None
    for a row that is not live. In: the table, a row. Out: the handle, or None.
    The handle is what the Player's constructor would have made: a clip task's anim id
    read from its cursor row, a fade's and a gait's own row from ``aux`` (no cursor
    handles: the rows alone), a mix's and a pick's cursor handles onto its rows, a
    direction's clips from ``dir_banks``. Every type is made so: a restored snapshot file
    holds rows, never handles."""
    views = ts.views
    try:
        t = views[r]
    except IndexError:
        t = None
    if t is not None or r < 0 or not ts.m_live[r]:
        return t
    cls = _MADE_ON_READ.get(ts.m_type[r])
    if cls is None:
        return None
    t = new_handle(ts, cls)
    t.tstore = ts
    t.trow = r = r if r.__class__ is int else int(r)    # a plain int whoever read the row (a numpy
    t.tgen = ts.m_gen[r]                                 # int from an array: the state's digest sees the type)
    world = ts.world
    if cls is FadeTask or cls is GaitTask:
        st = t.store = world.fades if cls is FadeTask else world.gaits
        a = t.row = ts.m_aux[r]
        t.gen = st.m_gen[a]
        if cls is GaitTask:
            t._make_cursor = None
            t.cstore = world.cursors
            t._lower_cursor = t._upper_cursor = None
    elif cls is MixTask:                                 # its two cursors' handles, onto the rows
        cs = world.cursors
        t.a, t.b = Cursor.view(cs, ts.m_c0[r]), Cursor.view(cs, ts.m_c1[r])
    elif cls is PickTask:
        cs = world.cursors
        t.clips = [Cursor.view(cs, ts.m_c0[r]), Cursor.view(cs, ts.m_c1[r]), Cursor.view(cs, ts.m_c2[r]),
                   Cursor.view(cs, ts.m_c3[r])]
    elif cls is DirectionTask:                           # its clips from dir_banks, handles on read
        t._make_cursor = None
        t._dir_cache = []
    else:
        t._aid = world.cursors.m_anim[ts.m_c0[r]]
        t._c = None
    if r >= len(views):
        views.extend([None] * (r + 1 - len(views)))
    views[r] = t
    note_view(ts, r)
    return t
