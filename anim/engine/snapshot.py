"""Save and restore one world's animation state: its tables' blocks and a few counters.

The tables (anim.engine.store) are the engine's state: a snapshot is a copy of each table's
block (its columns, generations, free list: one copy each), the human table's free list
and generations, and the Player's and its engine's few values beside them, each part
saving and loading its own (Player.save_state: the pool's flags, the deferred rows, the
stats, the callbacks table the rows' callback ids name; BatchEngine.save_state: its
counts, the humans leaving at the next flush, the instance of each human row). A human's
own values (its record's flags and playing anim id, its speed, its report callback) are
its row of the human table; a human with no row yet keeps them on its record's private
row (saved beside the tables); its last update's outputs (events, released ids) are
Python. ``save_engine`` copies all of it, ``load_engine`` hands each part its own back,
in place where the tables kept their size, else on new arrays (the tables' layout signal
moves, and what the engine made from the arrays is made again).

A snapshot shares nothing that a later step changes: every array and container is
copied on save and copied again on load, so one snapshot restores any number of times.
Handles (tasks, cursors, records, bodies: a row and a generation) are not saved: they
hold no numbers, only their row (a record or body given back since the snapshot is
alive again once its table's generations are restored); the task table's handle cache
forgets the rows a restore changed, whose handles are made on read. A handle made
*after* the snapshot was taken belongs to the abandoned future: after a restore its row
may be free or another task's (the game drops such handles, as a GGPO game drops its
predicted state).

The reference engine (anim.reference) is plain Python objects: ``save_reference`` deep-
copies its state, sharing the anim sets, clips and options, which never change.
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Any, Iterable, Sequence

import numpy as np

from scuffle.anim.engine.callbacks import Callback, CallbackError, check_callback
from scuffle.anim.engine.snapcheck import StateError
from scuffle.anim.engine.stack import instance_of, seated, serial_of
from scuffle.anim.engine.store import HumanTable, Table, TableArena, _layout

__all__ = ["TableState", "save_table", "load_table", "HumanTableState", "save_humans",
           "load_humans", "EngineState", "save_engine", "load_engine", "save_reference", "load_reference",
           "calls_plain", "save_arena", "load_arena", "ARENA_TABLES"]


@dataclasses.dataclass(slots=True)
class TableState:
    """A Table's state: its capacity and its block of memory (every column, ``live``,
    ``gen``, ``free_rows`` and ``n_free``: one copy). Nothing else: the callbacks its rows
    name are ids of the world's CallbackTable (saved with the Player), its handles a cache."""

    capacity: int
    block: np.ndarray


def _copy_into(a: np.ndarray, into: np.ndarray | None) -> np.ndarray:
    """A copy of ``a``: into ``into`` when it has the same shape and dtype and is large
    (no new memory to fault in), else a new array."""
    if into is not None and a.nbytes >= _REUSE_BYTES and into.shape == a.shape and into.dtype == a.dtype:
        np.copyto(into, a)
        return into
    return a.copy()


# Below this size a new copy costs less than writing over an old one (no page faults to
# save; np.copyto's own overhead is larger).
_REUSE_BYTES = 1 << 16


def save_table(t: Table, into: TableState | None = None, view: bool = False) -> TableState:
    """A copy of table ``t`` (TableState): one copy of its block (into ``into``'s block,
    an older state of the same table that is given up, when it fits). ``view``: the
    table's own block, not a copy (a state to read at once, for a checksum)."""
    if view:
        return TableState(t.capacity, t.block)
    return TableState(t.capacity, _copy_into(t.block, into.block if into is not None else None))


def load_table(t: Table, s: TableState, check: bool = True) -> bool:
    """Write state ``s`` back into table ``t`` through its own ``load`` (Table.load): in
    place when its capacity is the same, else on a new block of the saved capacity.
    Returns True when the arrays were replaced. Rejected (ValueError): a block of another
    size than the table's layout gives (checked by the table whatever ``check`` says)."""
    return t.load(s.capacity, s.block)


@dataclasses.dataclass(slots=True)
class HumanTableState:
    """A HumanTable's state: its capacity, its block (a copy), its free list and its rows'
    generations (HumanTable.save)."""

    capacity: int
    block: np.ndarray
    free: list[int]
    gen: list[int]


def save_humans(h: HumanTable, into: HumanTableState | None = None, view: bool = False) -> HumanTableState:
    """A copy of the human table ``h`` (into ``into``'s block when it fits; ``view``: its own
    block and lists, not copies)."""
    if view:
        return HumanTableState(h.capacity, h.block, h._free, h.gen)
    free, gen = h.save()
    return HumanTableState(h.capacity, _copy_into(h.block, into.block if into is not None else None), free, gen)


def load_humans(h: HumanTable, s: HumanTableState) -> bool:
    """Write ``s`` back into ``h`` through its own ``load`` (in place at the same capacity);
    True when replaced."""
    return h.load((s.free, s.gen), s.capacity, s.block)


def save_arena(arena: TableArena, into: tuple | None = None) -> tuple:
    """A copy of a TableArena's buffer (anim.engine.store: its tables' blocks side by side):
    (its key, the copy, a TableState of each table, its block a view of the copy, the
    copy's memoryview), written into ``into`` (an older save_arena of the same key that is
    given up: its states are taken again) when it fits."""
    mv, whole = arena.mv, arena.buf
    assert mv is not None and whole is not None             # an arena in use (TableArena.whole)
    if into is not None and into[0] == arena.key:
        into[3][:] = mv
        return into
    buf = whole.copy()
    states = tuple(TableState(t.capacity, buf[o:o + n]) for t, (o, n) in zip(arena.tables, arena.spans))
    return (arena.key, buf, states, buf.data)


def load_arena(arena: TableArena, saved: tuple) -> bool:
    """Copy a save_arena back into ``arena`` when it is the same arrangement (its key, every
    table still on its slice), then each Table's ``reloaded`` (its handle cache against the
    rows as saved): True. False (nothing done): the tables are loaded one by one."""
    if saved[0] != arena.key or not arena.whole():
        return False
    mv = arena.mv
    assert mv is not None                                   # whole(): the arena is in use
    mv[:] = saved[3]
    for t in arena.watched:
        t.reloaded()
    return True


def load_placed(arena: TableArena, placed: tuple, caps: Sequence[int]) -> bool:
    """Copy the first ``len(caps)`` tables of ``arena`` from ``placed`` (EngineState.placed:
    a buffer and each table's offset in it) in one copy when they lie there as in the
    arena (every table on its slice, of the saved capacity ``caps``, at the same offset,
    side by side), then each of those Tables' ``reloaded``: True. False (nothing done):
    they are loaded one by one."""
    buf, bases = placed[0], placed[1]
    if not arena.whole():
        return False
    spans, tables = arena.spans, arena.tables
    end = 0
    for i, (base, cap) in enumerate(zip(bases, caps)):
        off, n = spans[i]
        if off != base or off != end or tables[i].capacity != cap:
            return False
        end = off + n
    if end > len(buf):
        return False
    mv = arena.mv
    assert mv is not None                                   # whole(): the arena is in use
    mv[:end] = buf.data[:end]
    n = len(caps)
    for t in arena.watched:
        if tables.index(t) < n:
            t.reloaded()
    return True


_ENGINE_TABLES = ("cursors", "fades", "gaits", "tasks")
# The engine's tables in a Game's arena's order (game.runtime.snapshot): the four, then the humans'.
ARENA_TABLES = (*_ENGINE_TABLES, "humans")


@dataclasses.dataclass(slots=True)
class EngineState:
    """The compiled engine's state (``save_engine``): the five tables' blocks (a human's
    record, speed and report callback are its row of the human table), the Player's
    values beside them (Player.save_state: the pool's flags, the deferred rows, the step's
    lists, the stats, the callbacks table), the engine's (BatchEngine.save_state: its
    counts, the humans leaving, the instance of each human row), those humans without a
    row yet with the values of their record's private row (``loose``) and, with
    ``outputs``, the last update's events, released ids and refused poses."""

    tables: dict[str, TableState]
    humans: HumanTableState
    player: tuple
    batch: tuple
    loose: list[tuple]
    outputs: list[tuple] | None
    # the arena's one copy (save_arena: key, bytes, each table's state, a memoryview) when
    # the tables were saved through one; the states above are views of it
    arena: Any = None
    # a file's checked tables (game.runtime.snapfile.to_state): (a buffer holding the seven
    # tables' blocks side by side, each table's offset in it, the body and combat tables'
    # capacities), loaded in one copy when a Game's arena lays them out alike
    # (load_placed); the states above and the body and combat states are views of it
    placed: Any = None

    @property
    def instances(self) -> list:
        """The instance of each human row (None: a free row; the batch's seats name them by
        serial: anim.engine.stack.seated). Rejected (ValueError): one no longer alive."""
        return seated(self.batch[3])


def _private_values(rec) -> tuple:
    """A record on a private row (a human with no engine row yet, or the reference's):
    its generation and the row's values (flags, anim id, speed, report callback)."""
    t, r = rec.table, rec.row
    return (rec.gen, t.flags.item(r), t.anim.item(r), t.speed.item(r), t.report(r))


def _private_back(rec, values: tuple) -> None:
    """Write ``_private_values`` back onto the record's private row, taking the row again
    (with its saved generation) when it went back since (its human was removed)."""
    gen, flags, anim, speed, report = values
    t = rec.table
    if t.world is not None or not (0 <= rec.row < t.capacity):
        t = HumanTable(1)
    r = rec.row if t is rec.table and t.live[rec.row] else t.alloc()
    t.gen[r] = gen
    t.flags[r], t.anim[r], t.speed[r] = flags, anim, speed
    t.set_report(r, report)
    rec.rebind(t, r)


def save_engine(player: Any, instances: Iterable[Any], outputs: bool = False,
                into: EngineState | None = None, view: bool = False,
                arena: TableArena | None = None) -> EngineState:
    """The compiled engine's state: ``player`` (anim.playback.player.Player) and the world's
    ``instances`` (CharacterInstance, stepped or not). ``outputs``: also the last
    update's outputs, which no later update reads (each human's events, made into
    FiredEvent objects, its released ids and refused poses), for a viewer. ``into``: an
    older state of this engine that is given up, whose arrays are reused. ``view``: the
    engine's own arrays and lists where a save copies them, for a state read at once (a
    checksum) and never restored. ``arena``: the TableArena holding the engine's tables
    (and others: a Game's), laid out again when a table left it; its one copy (save_arena,
    into ``into``'s when it fits) is the state's ``arena`` and the tables' states views
    of it. Past its size limit, or without it, each table is copied on its own. The
    Player's buffered commands are written first (a state holds no command buffer)."""
    player.prepared.commands.apply()
    st = player.stores
    batch = player.batch
    loose = [(inst if view else serial_of(inst), _private_values(inst.record)) for inst in instances
             if inst.engine is not batch and inst.record.table.world is None]
    if view:
        return EngineState({name: save_table(getattr(st, name), view=True) for name in _ENGINE_TABLES},
                           save_humans(st.humans, view=True), player.save_state(view=True),
                           batch.save_state(view=True), loose, None)
    saved = None
    if arena is not None and (arena.whole() or arena.gather()):   # (laid out: the layout signal moves)
        old_arena = into.arena if into is not None else None
        saved = got = save_arena(arena, old_arena)
        h = st.humans
        if got is old_arena:
            # the older state's copy written over: its table states are views of it still,
            # and its human lists stand while they equal the table's (a human came or went)
            assert into is not None
            tables, humans = into.tables, into.humans
            if humans.capacity != h.capacity or humans.free != h._free or humans.gen != h.gen:
                humans = HumanTableState(h.capacity, got[2][len(_ENGINE_TABLES)].block, *h.save())
        else:
            tables = dict(zip(_ENGINE_TABLES, got[2]))
            humans = HumanTableState(h.capacity, got[2][len(_ENGINE_TABLES)].block, *h.save())
    else:
        old = into.tables if into is not None else {}
        tables = {name: save_table(getattr(st, name), old.get(name)) for name in _ENGINE_TABLES}
        humans = save_humans(st.humans, into.humans if into is not None else None)
    out = None
    if outputs:
        if player.released_log:
            player.make_released()
        out = [(inst, list(inst.events), list(inst.released), inst.poses_refused)
               for inst in dict.fromkeys([*batch._noisy, *player._pose_refused])]
    return EngineState(tables, humans, player.save_state(into.player if into is not None else None),
                       batch.save_state(), loose, out, saved)


def load_engine(player: Any, s: EngineState, check: bool = True, rehome: bool = False,
                arena: TableArena | None = None) -> bool:
    """Write ``s`` (save_engine's) back into ``player`` and its instances, each part through
    its own ``load`` (the tables, the Player, its BatchEngine, the records): what the
    engine made from the arrays is made again when the tables' layout signal moved.
    Without saved outputs, each human's events, released ids and refused poses are left
    empty (as at the start of an update). ``rehome``: every human's record takes its row
    and generation as saved (a state read from a file), not only when the rows moved.
    ``check`` is kept for callers; each table checks its block's size itself. ``arena``:
    the TableArena the state was saved through (only a Game's own snapshot has one: its
    values are trusted), copied back at once when the tables still lie as they did
    (load_arena), or a file's tables in one copy when they lie as in ``arena``
    (``s.placed``: load_placed). Returns whether either was (the arena's other tables
    are then loaded too: the body and combat tables; a file's state has no AI rows of
    its own).
    Commands buffered since the state was saved are dropped (they belong to the state it
    replaces: Player.load_state drops them, before anything reads the rows)."""
    st = player.stores
    batch = player.batch
    copied = arena is not None and s.arena is not None and load_arena(arena, s.arena)
    placed = not copied and arena is not None and s.placed is not None and \
        load_placed(arena, s.placed, (*(s.tables[n].capacity for n in _ENGINE_TABLES), s.humans.capacity,
                                      *s.placed[2]))
    if copied or placed:
        h = s.humans
        st.humans.load((h.free, h.gen))
    else:
        for name, ts in s.tables.items():
            load_table(getattr(st, name), ts)
        load_humans(st.humans, s.humans)
    player.load_state(s.player, trusted=copied)          # (a file's values: not trusted)
    batch.load_state(s.batch, rehome)
    for inst, values in s.loose:                     # (a serial, or a file's instance)
        _private_back((inst if inst.__class__ is not int else instance_of(inst)).record, values)
    if s.outputs is not None:
        for inst, events, released, refused in s.outputs:
            inst.events = list(events)
            inst.released = list(released)
            inst.poses_refused = refused
            batch.note_output(inst)
            if refused:
                player.note_refused(inst)
    return copied or placed


def _graph_copy(v: Any, memo: dict, own) -> Any:
    """A copy of ``v`` in which containers, arrays and the objects ``own(obj)`` accepts
    (the reference engine's tasks, cursors and pool) are copied, each once (``memo``:
    id -> copy, so shared objects stay shared), and everything else is shared (clips,
    anim sets, instances, callables)."""
    t = type(v)
    if v is None or t in (int, float, bool, str, bytes):
        return v
    got = memo.get(id(v))
    if got is not None:
        return got
    if t is list:
        out: Any = []
        memo[id(v)] = out
        out.extend(_graph_copy(x, memo, own) for x in v)
    elif t is dict:
        out = {}
        memo[id(v)] = out
        for k, x in v.items():
            out[k] = _graph_copy(x, memo, own)
    elif t is tuple:
        out = tuple(_graph_copy(x, memo, own) for x in v)
        memo[id(v)] = out
    elif t is set:
        out = set(v)
        memo[id(v)] = out
    elif t is np.ndarray:
        out = v.copy()
        memo[id(v)] = out
    elif own(v):
        out = object.__new__(t)
        memo[id(v)] = out
        for k, x in _fields_of(v):
            setattr(out, k, _graph_copy(x, memo, own))
    else:
        return v
    return out


def _fields_of(obj) -> list[tuple[str, Any]]:
    """An object's attributes: its ``__dict__`` and every slot of its classes that is set."""
    out = list(vars(obj).items()) if hasattr(obj, "__dict__") else []
    for klass in type(obj).__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                out.append((name, getattr(obj, name)))
    return out


_REFERENCE_STATE = ("pool", "deferred", "refused", "_stepped", "_wraps", "_leaving")
_REF_INSTANCE_STATE = ("speed", "stack", "queue", "events", "released", "on_report", "poses_refused")


def _ref_owned(insts: list):
    skip = {id(i) for i in insts}

    def own(obj) -> bool:
        return type(obj).__module__.startswith("scuffle.anim.reference") and id(obj) not in skip \
            and not callable(obj)
    return own


def save_reference(reference: Any, instances: Iterable[Any]) -> tuple:
    """The reference engine's state: its pool, deferred list and step lists, and each
    instance's stack, queue, events, released ids, speed and record, with the tasks and
    cursors they reach copied (plain objects) and the clips, anim sets and callables shared."""
    insts = list(instances)
    memo: dict = {}
    own = _ref_owned(insts)
    ref = {n: _graph_copy(getattr(reference, n), memo, own) for n in _REFERENCE_STATE}
    per = [({n: _graph_copy(getattr(inst, n), memo, own) for n in _REF_INSTANCE_STATE},
            _private_values(inst.record) if hasattr(inst.record, "table")      # a HumanRecord (the Game's)
            else (int(inst.record.flags), int(inst.record.anim_id))) for inst in insts]
    # the humans removed whose cut tasks the next flush releases: their records, kept till then
    leaving = [(inst, _private_values(inst.record)) for inst in reference._leaving
               if hasattr(inst.record, "table") and inst.record.alive()]
    return insts, ref, per, leaving


def load_reference(reference: Any, saved: tuple) -> None:
    """Write ``saved`` (save_reference's) back: copied again, so the saved state stays."""
    insts, ref, per, leaving = saved
    memo: dict = {}
    own = _ref_owned(insts)
    for n, v in ref.items():
        setattr(reference, n, _graph_copy(v, memo, own))
    for inst, (values, record) in zip(insts, per):
        for n, v in values.items():
            setattr(inst, n, _graph_copy(v, memo, own))
        if len(record) == 5:
            _private_back(inst.record, record)
        else:
            inst.record.flags, inst.record.anim_id = record
    for inst, record in leaving:
        _private_back(inst.record, record)


# ---------------------------------------------------------------- the plain form (snapshot files)
class NoPlainForm(ValueError):
    """A state that has no byte form (a callback given as code, a human removed since the
    last update whose tasks still wait for the flush): the message says what to do."""


def callback_plain(cb: Any, where: str, strict: bool = True) -> Any:
    """A callback as plain data: (kind, args) for a Callback, None for none; a plain
    callable has none (NoPlainForm naming ``where``), unless not ``strict`` (a checksum):
    then ("code", its module, its name)."""
    if cb is None:
        return None
    if cb.__class__ is Callback:
        return (cb.kind, tuple(cb.args))
    if not strict:
        return ("code", str(getattr(cb, "__module__", "")), str(getattr(cb, "__qualname__", type(cb).__qualname__)))
    raise NoPlainForm(f"{where}: a callback given as code ({type(cb).__name__}) has no byte form: callbacks "
                      "must be data (anim.engine.callbacks.Callback)")


def callback_back(v: Any, where: str, callbacks: Any) -> Any:
    """``callback_plain``'s value as a Callback. Rejected (StateError naming ``where``): not
    (kind, args) of plain data, a kind the world's ``callbacks`` (anim.engine.callbacks.Callbacks)
    has not registered, arguments its check refuses."""
    if v is None:
        return None
    if not (v.__class__ is tuple and len(v) == 2 and v[0].__class__ is str and v[1].__class__ is tuple):
        raise StateError(f"{where}: not a callback (kind, args)")
    try:
        check_callback(Callback(v[0], v[1]), where)
    except CallbackError as e:
        raise StateError(str(e)) from None
    why = callbacks.check_args(v[0], v[1])
    if why is not None:
        raise StateError(f"{where}: {why}")
    return Callback(v[0], v[1])


def calls_plain(values: list, strict: bool = True) -> list:
    """The world's CallbackTable's values as plain data, one per id: None for a free id,
    (kind, args) for a Callback, ("", name) for a partner's name; a callable has none
    (NoPlainForm), unless not ``strict`` (a checksum: ("code", its module, its name))."""
    out = []
    for i, v in enumerate(values):
        if v.__class__ is str:
            out.append(("", v))
        else:
            out.append(callback_plain(v, f"calls[{i}]", strict))
    return out


def engine_plain(s: EngineState, name_of: Any, strict: bool = True, array: Any = None) -> dict:
    """The compiled engine's saved values but its tables' blocks (the human table's free
    list and generations, the callbacks table, the pool, the deferred list, the step's row
    lists, the counts, and the humans by row), as plain data (anim.engine.plaindata): instances by
    ``name_of(instance)``, callbacks as (kind, args). Rejected (NoPlainForm): a callback
    given as code, a human removed since the last update with tasks still on the deferred
    list, a step's lists left non-empty (a snapshot is taken between two updates). Not
    ``strict`` (a checksum): callbacks as code are named, entries held as objects given by
    their rows, and the step's pending lists counted. ``array``: what each array becomes
    (a checksum's form, anim.engine.digest.array_form; None: the array itself)."""
    arr = array if array is not None else _same
    # a list of rows: an int64 array, or in a checksum's form (dtype, shape, bytes) at once
    ints = _int_array if array is None else _int_form
    if strict:
        ts = s.tables["tasks"]
        lay = _layout(_TASK_COLUMNS(), ts.capacity)[0]
        dirs = _column(ts, lay, "live") & (_column(ts, lay, "type") == 13)
        bad = np.flatnonzero(dirs & (_column(ts, lay, "dir_banks")[:, 0] < 0)) if dirs.any() else np.empty(0, np.int64)
        if len(bad):
            raise NoPlainForm(f"tasks[{int(bad[0])}]: a direction task made with a make_cursor function has no "
                              "byte form (its clips come from code); make it with Player.direction")
    h = s.humans
    pool, (rows, odd), (refused, wraps, failed), stepped, stats, (values, uses, free) = s.player
    if odd and strict:
        raise NoPlainForm("a human removed since the last update still has tasks waiting for the flush: step "
                          "once, then save the byte form")
    if (wraps or failed) and strict:
        raise NoPlainForm("the step's wrap callbacks or failures are pending: save between two updates")
    kernel_humans, pair_changes, leaving, instances = s.batch
    instances = seated(instances)
    out = {
        "humans": {"free": ints(h.free), "gen": ints(h.gen)},
        "calls": {"values": calls_plain(values, strict), "uses": ints(uses), "free": ints(free)},
        "pool": (arr(np.asarray(pool[0], np.bool_)), int(pool[1])),
        "deferred": arr(np.asarray(rows, np.int64).reshape(-1, 2)),
        "stepped": [arr(np.asarray(r, np.int64)) for r in stepped],
        "stats": (int(stats[0]), int(stats[1])),
        "batch": (int(kernel_humans), int(pair_changes), [(int(r), int(g)) for r, g in leaving]),
        "instances": [None if i is None else name_of(i) for i in instances],
        "loose": [(name_of(inst), (int(v[0]), int(v[1]), int(v[2]), float(v[3]),
                                   callback_plain(v[4], f"{name_of(inst)}.on_report", strict)))
                  for inst, v in ((x if x.__class__ is not int else instance_of(x), v) for x, v in s.loose)],
    }
    if not strict and (odd or wraps or failed):
        out["pending"] = ([(k, t.trow, t.tgen, name_of(i)) for k, (t, i) in sorted(odd.items())],
                          len(wraps), len(failed))
    return out


def _same(a: np.ndarray) -> np.ndarray:
    return a


def _int_array(xs: list) -> np.ndarray:
    return np.array(xs, np.int64)


def _int_form(xs: list) -> tuple:
    """anim.engine.digest.array_form of ``np.array(xs, np.int64)``, without the array."""
    return ("<i8", (len(xs),), struct.pack(f"<{len(xs)}q", *xs))


def _TASK_COLUMNS() -> dict:
    from scuffle.anim.engine.store import task_table
    global _TASK_COLS
    if _TASK_COLS is None:
        _TASK_COLS = task_table(1)._all
    return _TASK_COLS


_TASK_COLS: dict | None = None


def _column(ts: TableState, lay: dict, name: str) -> np.ndarray:
    """Column ``name`` of a saved block (laid out as ``lay``)."""
    off, dt, shape = lay[name]
    return np.ndarray(shape, dt, ts.block, off)
