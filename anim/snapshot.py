"""Save and restore one world's animation state: copies of its tables and of the few
Python values the next update reads.

The tables (anim.store) are the engine's state: a snapshot is a copy of their columns,
generations and free lists, and of the values keyed by row (the callbacks, as data).
Beside them the Player keeps a few Python values the next update reads (the pool's
count, the deferred list, the stats, the humans leaving at the next flush). A human's own
values (its record's flags and playing anim id, its speed, its report callback) are its
row of the human table; a human with no row yet keeps them on its record's private row
(saved beside the tables); its last update's outputs (events, released ids) are Python.
``save_engine`` copies all of it, ``load_engine`` writes it back, in place where the
tables kept their size (so the kernels' named tuples of columns stay valid), else on new
arrays (the engine is told to rebuild them).

A snapshot shares nothing that a later step changes: every array and container is
copied on save and copied again on load, so one snapshot restores any number of times.
Handles (tasks, cursors, records, bodies: a row and a generation) are kept as they are:
they hold no numbers, only their row (a record or body given back since the snapshot is
alive again once its table's generations are restored). A handle made *after* the snapshot was taken belongs to the
abandoned future: after a restore its row may be free or another task's (the game drops
such handles, as a GGPO game drops its predicted state).

The reference engine (anim.reference) is plain Python objects: ``save_reference`` deep-
copies its state, sharing the anim sets, clips and options, which never change.
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Any, Iterable

import numpy as np

from .callbacks import Callback, CallbackError, check_callback
from .snapcheck import StateError
from .store import HumanTable, Table, _layout

__all__ = ["TableState", "save_table", "load_table", "HumanTableState", "save_humans",
           "load_humans", "EngineState", "save_engine", "load_engine", "save_reference", "load_reference"]


@dataclasses.dataclass(slots=True)
class TableState:
    """A Table's state: its capacity, its block of memory (every column, ``live``,
    ``gen``, ``free_rows`` and ``n_free``: one copy), the row-keyed dicts, and the task
    table's row-to-handle list (``views``)."""

    capacity: int
    block: np.ndarray
    keyed: dict[str, dict]
    views: list | None
    dirty: list[int]                                 # rows freed since the last take (reset at the next)


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


def fits(t: Table | HumanTable, s: "TableState | HumanTableState") -> bool:
    """Whether saved state ``s`` has the block this table's layout gives for its capacity."""
    if s.capacity == t.capacity:
        return s.block.nbytes == t.block.nbytes
    return s.block.nbytes == _layout(t._all if isinstance(t, Table) else t.COLUMNS, s.capacity)[1]


def save_table(t: Table, into: TableState | None = None, view: bool = False) -> TableState:
    """A copy of table ``t`` (TableState): one copy of its block (into ``into``'s block,
    an older state of the same table that is given up, when it fits). ``view``: the
    table's own block and dicts, not copies (a state to read at once, for a checksum)."""
    if view:
        return TableState(t.capacity, t.block, {name: getattr(t, name) for name in t._keyed}, None, t._dirty)
    keyed = {name: dict(getattr(t, name)) for name in t._keyed}
    views = None
    if isinstance(t.views, list):
        if into is not None and into.views is not None:
            views = into.views
            views[:] = t.views
        else:
            views = list(t.views)
    return TableState(t.capacity, _copy_into(t.block, into.block if into is not None else None), keyed, views,
                      list(t._dirty))


def _block_back(t: Table | HumanTable, s: "TableState | HumanTableState", check: bool) -> bool:
    """Put a saved block back into ``t``: copied in place at the same capacity, else a
    copy of it placed as the table's new memory (True: the arrays were replaced).
    Rejected (ValueError, when ``check``): a block of another size than the layout's."""
    if check and not fits(t, s):
        raise ValueError(f"snapshot {type(t).__name__}: a block of {s.block.nbytes} bytes is not this table's layout")
    if t.capacity != s.capacity:
        t._place(s.block.copy(), s.capacity)
        return True
    np.copyto(t.block, s.block)
    return False


def load_table(t: Table, s: TableState, check: bool = True) -> bool:
    """Write state ``s`` back into table ``t``: in place when its capacity is the same,
    else on a new block of the saved capacity. Returns True when the arrays were replaced
    (whoever kept a column must fetch it again). Rejected (ValueError; unless ``check``
    is False, the caller having checked): a block of another size than the table's
    layout gives."""
    replaced = _block_back(t, s, check)
    for name, d in s.keyed.items():
        mine = getattr(t, name)
        if mine != d:
            mine.clear()
            mine.update(d)
    if s.views is not None and t.views != s.views:
        t.views[:] = s.views
    if t._dirty != s.dirty:
        t._dirty[:] = s.dirty
    return replaced


@dataclasses.dataclass(slots=True)
class HumanTableState:
    """A HumanTable's state: its capacity, its block (a copy), its free list, its rows'
    generations and the report callbacks keyed by row."""

    capacity: int
    block: np.ndarray
    free: list[int]
    gen: list[int]
    on_report: dict


def save_humans(h: HumanTable, into: HumanTableState | None = None, view: bool = False) -> HumanTableState:
    """A copy of the human table ``h`` (into ``into``'s block when it fits; ``view``: its own
    block and lists, not copies)."""
    if view:
        return HumanTableState(h.capacity, h.block, h._free, h.gen, h.on_report)
    return HumanTableState(h.capacity, _copy_into(h.block, into.block if into is not None else None), list(h._free),
                           list(h.gen), dict(h.on_report))


def load_humans(h: HumanTable, s: HumanTableState) -> bool:
    """Write ``s`` back into ``h`` (in place at the same capacity); True when replaced."""
    replaced = _block_back(h, s, True)
    h._free[:] = s.free
    h.gen[:] = s.gen
    if h.on_report != s.on_report:                  # (a clear resets every row's mark)
        h.on_report.clear()
        h.on_report.update(s.on_report)
    return replaced


_ENGINE_TABLES = ("cursors", "fades", "gaits", "tasks")


@dataclasses.dataclass(slots=True)
class EngineState:
    """The compiled engine's state (``save_engine``): the five tables (a human's record,
    speed and report callback are its row of the human table), the pool's flags, the
    Player's and the engine's Python values, the instance of each human row
    (``instances``; their values are in the rows), those without a row yet with the
    values of their record's private row (``loose``) and, with ``outputs``, the last
    update's events, released ids and refused poses."""

    tables: dict[str, TableState]
    humans: HumanTableState
    pool: tuple
    player: dict[str, Any]
    batch: tuple
    instances: list
    loose: list[tuple]
    outputs: list[tuple] | None


# the Player's Python values the next update reads: lists and a dict of handles and
# instances (empty between two updates but for a cut human's deferred tasks), and the stats
_PLAYER_LISTS = ("refused", "_wraps", "_failed")
# and the deferred list, as its rows (anim.deferred.DeferredRows.save: the entries' human and
# task rows, the entries held as objects)
# the engine's: counts, and the rows (with their generations) of humans forgotten with
# tasks on the deferred list, which the next flush gives back
# the engine's values saved beside the tables: (kernel_humans, pair_changes, _leaving)


def _private_values(rec) -> tuple:
    """A record on a private row (a human with no engine row yet, or the reference's):
    its generation and the row's values (flags, anim id, speed, report callback)."""
    t, r = rec.table, rec.row
    return (rec.gen, t.flags.item(r), t.anim.item(r), t.speed.item(r), t.on_report.get(r))


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
    if report is None:
        t.on_report.pop(r, None)
    else:
        t.on_report[r] = report
    rec.table, rec.row, rec.gen = t, r, gen


def save_engine(player: Any, instances: Iterable[Any], outputs: bool = False,
                into: EngineState | None = None, view: bool = False) -> EngineState:
    """The compiled engine's state: ``player`` (anim.player.Player) and the world's
    ``instances`` (CharacterInstance, stepped or not). ``outputs``: also the last
    update's outputs, which no later update reads (each human's events, made into
    FiredEvent objects, its released ids and refused poses), for a viewer. ``into``: an
    older state of this engine that is given up, whose arrays are reused. ``view``: the
    engine's own arrays and lists where a save copies them, for a state read at once (a
    checksum) and never restored."""
    st = player.stores
    batch = player.batch
    if view:
        return EngineState({name: save_table(getattr(st, name), view=True) for name in _ENGINE_TABLES},
                           save_humans(st.humans, view=True), (player.pool.out, player.pool.n_out),
                           {"refused": player.refused, "_wraps": player._wraps, "_failed": player._failed,
                            "deferred": player.deferred_rows.save(view=True), "_stepped": player._stepped,
                            "stats": (player.stats.poses_refused, player.stats.samples)},
                           (batch.kernel_humans, batch.pair_changes, batch._leaving), batch._instances,
                           [(inst, _private_values(inst.record)) for inst in instances
                            if inst.engine is not batch and inst.record.table.world is None], None)
    old = into.tables if into is not None else {}
    tables = {name: save_table(getattr(st, name), old.get(name)) for name in _ENGINE_TABLES}
    pool = (_copy_into(player.pool.out, into.pool[0] if into is not None else None), player.pool.n_out)
    p: dict[str, Any] = {name: list(getattr(player, name)) for name in _PLAYER_LISTS}
    p["deferred"] = player.deferred_rows.save()
    p["_stepped"] = [rows.copy() for rows in player._stepped]
    p["stats"] = (player.stats.poses_refused, player.stats.samples)
    b = (batch.kernel_humans, batch.pair_changes, list(batch._leaving))
    rows = list(batch._instances)
    loose = [(inst, _private_values(inst.record)) for inst in instances
             if inst.engine is not batch and inst.record.table.world is None]
    out = None
    if outputs:
        if player.released_log:
            player.make_released()
        out = [(inst, list(inst.events), list(inst.released), inst.poses_refused)
               for inst in dict.fromkeys([*batch._noisy, *player._pose_refused])]
    return EngineState(tables, save_humans(st.humans, into.humans if into is not None else None), pool, p, b,
                       rows, loose, out)


def load_engine(player: Any, s: EngineState, check: bool = True, rehome: bool = False) -> None:
    """Write ``s`` (save_engine's) back into ``player`` and its instances; the engine's
    cached column tuples and growth check are reset when a table's arrays were replaced.
    Without saved outputs, each human's events, released ids and refused poses are left
    empty (as at the start of an update). ``rehome``: every human's record takes its row
    and generation as saved (a state read from a file), not only when the rows moved."""
    st = player.stores
    batch = player.batch
    replaced = False
    for name, ts in s.tables.items():
        replaced |= load_table(getattr(st, name), ts, check)
    replaced |= load_humans(st.humans, s.humans)
    out, saved = player.pool.out, s.pool[0]
    if out.shape == saved.shape and out.dtype == saved.dtype:
        np.copyto(out, saved)                       # in place whatever its size: the same array, so
    else:                                           # what was made from it (the prepared commands'
        player.pool.out = saved.copy()              # views, the flush's arguments) holds
    player.pool.n_out = s.pool[1]
    player.pool.made = None                         # what the handle API made: found again from the rows
    for name in _PLAYER_LISTS:
        setattr(player, name, list(s.player[name]))
    player.stats.poses_refused, player.stats.samples = s.player["stats"]
    batch.kernel_humans, batch.pair_changes, leaving = s.batch
    batch._leaving = list(leaving)
    batch._last = None                              # the rows of the step's humans: found again
    if replaced:
        batch._table_key = ()
        batch._validated = -1
    # the last update's outputs: those of the abandoned future go
    player.released_log = []
    if batch._noisy or player._pose_refused:
        for inst in dict.fromkeys([*batch._noisy, *player._pose_refused]):
            inst.clear_events()
            inst.released = []
            inst.poses_refused = 0
        batch._noisy = []
        player._pose_refused = []
    rows = s.instances
    if rehome or batch._instances != rows:          # humans came or went (or a file's rows): as saved
        for r, inst in enumerate(batch._instances):
            if inst is not None and (r >= len(rows) or rows[r] is not inst):
                inst.slot, inst.engine = -1, None
        batch._instances = list(rows)
        humans = st.humans
        for r, inst in enumerate(rows):
            if inst is not None:
                inst.slot, inst.engine = r, batch
                rec = inst.record                   # the row's generation as saved: alive again
                rec.table, rec.row, rec.gen = humans, r, humans.gen[r]
    for inst, values in s.loose:
        _private_back(inst.record, values)
    stepped = s.player["_stepped"]                  # human rows (an older state's: id -> instance)
    player._stepped = ([np.array([i.slot for i in stepped.values()], np.int64)] if isinstance(stepped, dict)
                       else [rows.copy() for rows in stepped])
    deferred = s.player["deferred"]
    if isinstance(deferred, tuple):
        player.deferred_rows.load(deferred)
    else:                                           # an older state's (task, instance) pairs
        player.deferred = list(deferred)
    if s.outputs is not None:
        for inst, events, released, refused in s.outputs:
            inst.events = list(events)
            inst.released = list(released)
            inst.poses_refused = refused
            batch._noisy.append(inst)
            if refused:
                player._pose_refused.append(inst)


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
                      "must be data (anim.callbacks.Callback)")


def callback_back(v: Any, where: str, callbacks: Any) -> Any:
    """``callback_plain``'s value as a Callback. Rejected (StateError naming ``where``): not
    (kind, args) of plain data, a kind the world's ``callbacks`` (anim.callbacks.Callbacks)
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


def engine_plain(s: EngineState, name_of: Any, strict: bool = True, array: Any = None) -> dict:
    """The compiled engine's saved values but its tables' blocks (each table's keyed values,
    rows freed since the last take, the human table's free list, generations and report
    callbacks, the pool, the deferred list, the step's row lists, the counts, and the
    humans by row), as plain data (anim.plaindata): instances by ``name_of(instance)``,
    callbacks as (kind, args). Rejected (NoPlainForm): a callback given as code, a human
    removed since the last update with tasks still on the deferred list, a step's lists
    left non-empty (a snapshot is taken between two updates). Not ``strict`` (a checksum):
    callbacks as code are named, entries held as objects given by their rows, and the
    step's pending lists counted. ``array``: what each array becomes (a checksum's form,
    anim.digest.array_form; None: the array itself)."""
    arr = array if array is not None else _same
    # a list of rows: an int64 array, or in a checksum's form (dtype, shape, bytes) at once
    ints = _int_array if array is None else _int_form
    tables = {}
    if strict:
        ts = s.tables["tasks"]
        lay = _layout(_TASK_COLUMNS(), ts.capacity)[0]
        live = _column(ts, lay, "live")
        ty = _column(ts, lay, "type")
        bad = [int(r) for r in np.flatnonzero(live & (ty == 13)) if int(r) not in ts.keyed["dir_banks"]]
        if bad:
            raise NoPlainForm(f"tasks[{bad[0]}]: a direction task made with a make_cursor function has no byte "
                              "form (its clips come from code); make it with Player.direction")
    for name, ts in s.tables.items():
        keyed = {}
        for k, d in ts.keyed.items():
            if k in ("on_end", "on_wrap"):
                keyed[k] = {int(r): callback_plain(v, f"tasks.{k}[{r}]", strict) for r, v in d.items()}
            elif k == "dir_banks":
                keyed[k] = {int(r): tuple(int(b) for b in v) for r, v in d.items()}
            else:                                    # partner: a human's handle (an int or a name)
                keyed[k] = dict(d)
        tables[name] = {"keyed": keyed, "dirty": ints(ts.dirty)}
    h = s.humans
    p = s.player
    rows, odd = p["deferred"]
    if odd and strict:
        raise NoPlainForm("a human removed since the last update still has tasks waiting for the flush: step "
                          "once, then save the byte form")
    if (p["_wraps"] or p["_failed"]) and strict:
        raise NoPlainForm("the step's wrap callbacks or failures are pending: save between two updates")
    out = {
        "tables": tables,
        "humans": {"free": ints(h.free), "gen": ints(h.gen),
                   "on_report": {int(r): callback_plain(v, f"humans.on_report[{r}]", strict)
                                 for r, v in h.on_report.items()}},
        "pool": (arr(np.asarray(s.pool[0], np.bool_)), int(s.pool[1])),
        "deferred": arr(np.asarray(rows, np.int64).reshape(-1, 2)),
        "stepped": [arr(np.asarray(r, np.int64)) for r in p["_stepped"]],
        "stats": (int(p["stats"][0]), int(p["stats"][1])),
        "batch": (int(s.batch[0]), int(s.batch[1]), [(int(r), int(g)) for r, g in s.batch[2]]),
        "instances": [None if i is None else name_of(i) for i in s.instances],
        "loose": [(name_of(inst), (int(v[0]), int(v[1]), int(v[2]), float(v[3]),
                                   callback_plain(v[4], f"{name_of(inst)}.on_report", strict)))
                  for inst, v in s.loose],
    }
    if not strict and (odd or p["_wraps"] or p["_failed"]):
        out["pending"] = ([(k, t.trow, t.tgen, name_of(i)) for k, (t, i) in sorted(odd.items())],
                          len(p["_wraps"]), len(p["_failed"]))
    return out


def _same(a: np.ndarray) -> np.ndarray:
    return a


def _int_array(xs: list) -> np.ndarray:
    return np.array(xs, np.int64)


def _int_form(xs: list) -> tuple:
    """anim.digest.array_form of ``np.array(xs, np.int64)``, without the array."""
    return ("<i8", (len(xs),), struct.pack(f"<{len(xs)}q", *xs))


def _TASK_COLUMNS() -> dict:
    from .store import task_table
    global _TASK_COLS
    if _TASK_COLS is None:
        _TASK_COLS = task_table(1)._all
    return _TASK_COLS


_TASK_COLS: dict | None = None


def _column(ts: TableState, lay: dict, name: str) -> np.ndarray:
    """Column ``name`` of a saved block (laid out as ``lay``)."""
    off, dt, shape = lay[name]
    return ts.block[off:off + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)
