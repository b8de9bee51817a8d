"""Check a saved state's rows before the engine sees them.

A snapshot file comes from anyone: its tables are read into one scratch buffer first and
checked here, all of it, before a single row of the world changes. A state that passes
is one the engine could have made: every row link points at a row in use of the right
table, each task has one place, every free list holds each free row once, every number
the kernels index with is in range, every float the rules compute with is finite, and
every cursor's clip numbers are those of its clip. So the kernels never read out of
bounds, never loop on a chain, and never compute a NaN from a stranger's bytes.

Two kinds of check, both in one compiled pass (anim.engine.snapkernel): the declared ones,
``RANGES``, a rule per column of every saved table (a new column needs its line here,
or the file reader refuses to build its checks), and the structural ones (free lists,
links by task type, owners, places, chains, clip numbers against ``ClipFacts``).
``check_saved`` raises ``StateError`` (a ValueError) naming the table, the column and
the first bad row. Original: none (ours).
"""
from __future__ import annotations

from itertools import accumulate
from typing import Any, NamedTuple, Sequence

import numpy as np

from scuffle.anim.engine import snapkernel as K
from scuffle.anim.engine.interpret import kcall
from scuffle.anim.engine.kernel_types import (ClipFacts, IdCalls, IdHumans, IdRules, IdTasks, SnapLists, SnapPlan,
                                              SnapScratch, SnapViews)
from scuffle.anim.base.limits import MAX_COORD, MAX_HEALTH
from scuffle.anim.engine.store import (FRAME_COLUMNS, NO_ROW, PROTO_DUR32, PROTO_END, PROTO_EVF0, PROTO_FRAMES,
                                       PROTO_LIMIT32, _layout)
from scuffle.anim.base.enums import TaskType
from scuffle.anim.engine.rules import TASK_CURSORS, dir_banks_misfit

__all__ = ["StateError", "check_saved", "check_deferred", "Saved", "Packing", "packing", "pack", "pack_all", "pack_plan", "pack_with", "unpack", "compile_kernels", "RANGES", "ClipFacts", "clip_facts", "MAX_RATE", "MAX_SECONDS",
           "MAX_VALUE", "MAX_COUNT", "check_ids", "id_kinds", "MAX_CALL_ID", "EIGHT_CLIPS_TYPE"]

# What a task of each type links to: the cursor columns that must hold a cursor row (the
# others hold none: anim.playback.tasks.TASK_CURSORS, its links c0, c1, ...), and whether it owns a
# fade or a gait row (aux) or has a next task.
_CURSORS: dict[int, tuple[str, ...]] = {int(t): tuple(f"c{i}" for i in range(n)) for t, n in TASK_CURSORS.items()}
_NEXT_TYPES = (int(TaskType.CLIP), int(TaskType.PAIRED_CLIP))
MAX_RATE = 1e6                 # a rate or speed beyond this is not one any constructor takes
MAX_SECONDS = 1e9              # a fade's time or a blend time, far past any clip
MAX_VALUE = 1e9                # a mix's weight or a pick's or direction's value, far past their ranges
MAX_COUNT = 1 << 62            # a loop's wrap count: an int64 with room to count on
MAX_CALL_ID = (1 << 20) - 1   # a callback id of a file's callbacks table (snapfile.MAX_CALLS of them)
MAX_UNPACKED = 1 << 30         # a table's block unpacked without a Game is refused past this
_I63 = (1 << 63) - 1
_I31 = (1 << 31) - 1


class StateError(ValueError):
    """A saved state that the engine could not have made (one line naming the field)."""


# ---------------------------------------------------------------- the declared checks
def _int(lo: int | str, hi: int | str) -> tuple:
    """An int within [lo, hi]; a bound given as a name ("bank": the last clip of the bank,
    "texts": the last combat text) is the Game's, filled in at each check."""
    return (K.Kind.INT, lo, hi)


def _float(lo: float, hi: float) -> tuple:
    return (K.Kind.FLOAT, lo, hi)


def _set(values: Sequence[int], what: str) -> tuple:
    return (K.Kind.SET, sum(1 << int(v) for v in values), what)


BOOL = (K.Kind.BOOL,)
ANY = (K.Kind.ANY,)            # any value is one the engine handles (or a structural check reads it)
ENTITY = (K.Kind.ENTITY,)      # -1 or a human's entity
_COORD = _float(-MAX_COORD, MAX_COORD)
_NUM = _float(-1e6, 1e6)

# Each saved table's columns and what a row in use may hold in them. The free list's
# columns (live, gen, free_rows, n_free) are the structural checks'.
RANGES: dict[str, dict[str, tuple]] = {
    "cursors": {"t": _float(0.0, MAX_SECONDS), "frame": _int(0, 1 << 30), "end": ANY, "limit": ANY, "dur": ANY,
                "flags": ANY, "bank": _int(0, "bank"), "ev": ANY, "evf": ANY, "evf0": ANY, "at_end": BOOL,
                "anim": ANY},
    "fades": {"el": _float(0.0, MAX_SECONDS), "dur": _float(0.0, MAX_SECONDS)},
    "gaits": {"value": _float(0.0, 4.0), "target": _float(0.0, 4.0), "lower": _int(0, 3), "leader": _int(0, 1),
              **{f"id{i}": ANY for i in range(5)}, **{f"b{i}": _int(0, "bank") for i in range(5)}},
    "tasks": {"type": _set(tuple(_CURSORS), "a task type"), "rate": _float(0.0, MAX_RATE), "flags": ANY,
              "held": _int(0, _I63),                  # record +0x08's bits: 0 to 2^63 - 1
              "c0": ANY, "c1": ANY, "c2": ANY, "c3": ANY, "aux": ANY, "nxt": ANY, "incoming": ANY,
              "blend": _float(0.0, MAX_SECONDS), "window": _int(0, 1), "released": BOOL, "handed_over": BOOL,
              "wraps": _int(0, MAX_COUNT), "speed": _float(0.0, MAX_RATE), "callback": BOOL, "placed": BOOL,
              "value": _float(-MAX_VALUE, MAX_VALUE), "target": _float(-MAX_VALUE, MAX_VALUE), "base": ANY,
              "centre": _int(0, 7), "sampling": _int(0, 1),
              # ids of the callbacks table (-1: none); which id and which type: check_ids
              "on_end": _int(-1, MAX_CALL_ID), "on_wrap": _int(-1, MAX_CALL_ID), "partner": _int(-1, _I63),
              "partner_name": _int(-1, MAX_CALL_ID), "dir_banks": ANY},
    "humans": {"flags": _int(0, _I63), "anim": _int(-1, _I31), "speed": _float(0.0, MAX_RATE),
               "depth": _int(0, "stack"), "queued": _int(0, "queue"), "stack": ANY, "queue": ANY,
               "on_report": _int(-1, MAX_CALL_ID)},
    "bodies": {"position": _COORD, "heading": _COORD, "velocity": _NUM, "state_velocity": _NUM,
               "attachment": ENTITY, "attach_offset": _COORD, "attach_heading": _COORD, "slide_target": _COORD,
               "sliding": BOOL, "slide_heading": _COORD, "slide_left": _int(0, 1 << 20)},
    "combats": {"health": _float(-MAX_HEALTH * 1e3, MAX_HEALTH), "max_health": _float(0.0, MAX_HEALTH),
                "partner": ENTITY, "role": _int(0, "texts"), "partner_place": _COORD,
                "place_len": _set((0, 2, 3), "0, 2 or 3"), "state": _int(0, "texts"),
                "damage_taken": _float(-1e12, 1e12), "hits": _int(0, 1 << 40), "move_id": _int(-1, _I31),
                "struck": BOOL, "move_dir": _COORD, "move_speed": _float(0.0, 1e6), "impulse": _COORD,
                "down_left": _int(0, 1 << 40), "serial": _int(0, 1 << 40)},
}
_FRAME = ("live", "gen", "free_rows", "n_free")


def clip_facts(protos: Sequence[tuple]) -> ClipFacts:
    """``ClipFacts`` of the bank's clips from their cursor prototypes (anim.playback.cursor.cursor_proto)."""
    nev = np.array([len(p[PROTO_FRAMES]) for p in protos], np.int64)
    first = np.concatenate(([0], np.cumsum(nev)[:-1])).astype(np.int64) if len(protos) else np.zeros(0, np.int64)
    frames = np.array([int(f) for p in protos for f in p[PROTO_FRAMES]], np.int64)
    return ClipFacts(np.array([p[PROTO_END] for p in protos], np.int64),
                     np.array([p[PROTO_LIMIT32] for p in protos], np.float32),
                     np.array([p[PROTO_DUR32] for p in protos], np.float32),
                     np.array([p[PROTO_EVF0] for p in protos], np.int64), nev, first, frames)




class Saved(NamedTuple):
    """A saved table for ``check_saved``: its columns ({name: dtype}, with ``live``,
    ``gen`` and ``free_rows`` for a table with a free list), its rows, its packed bytes
    (``pack``) and its blank block (every row as a free row of this Game's table holds it)."""

    columns: dict
    capacity: int
    packed: Any
    blank: Any


# ---------------------------------------------------------------- packed rows
class Packing(NamedTuple):
    """Where a table's packed bytes come from in its block (``packing``)."""

    size: int               # the block's size
    frames: np.ndarray      # the frame's arrays: (byte offset, size) each, in the block
    cols: np.ndarray        # the other columns: (byte offset, bytes per row) each
    live_at: int            # ``live``'s byte offset in the block
    live_pos: int           # ``live``'s position in the packed bytes
    frame_bytes: int
    row_bytes: int          # the packed bytes of one row in use


def packing(columns: dict, cap: int) -> Packing:
    """The Packing of a table of ``columns`` and ``cap`` rows (kept per columns object)."""
    key = (id(columns), cap)
    got = _PACKINGS.get(key)
    if got is not None and got[0] is columns:
        return got[1]
    lay, size = _layout(columns, cap)
    frames, cols, pos, live_pos = [], [], 0, -1
    for name in ("n_free", *[n for n in lay if n in _FRAME and n != "n_free"]):
        o, dt, shape = lay[name]
        n = int(np.prod(shape)) * dt.itemsize
        if name == "live":
            live_pos = pos
        frames.append((o, n))
        pos += n
    for name, (o, dt, shape) in lay.items():
        if name not in _FRAME:
            cols.append((o, int(np.prod(shape[1:])) * dt.itemsize if len(shape) > 1 else dt.itemsize))
    pk = Packing(size, np.array(frames, np.int64).reshape(-1, 2), np.array(cols, np.int64).reshape(-1, 2),
                 lay["live"][0], live_pos, pos, sum(c[1] for c in cols))
    if len(_PACKINGS) > 256:
        _PACKINGS.clear()
    _PACKINGS[key] = (columns, pk)
    return pk


_PACKINGS: dict = {}


def pack(columns: dict, cap: int, block: np.ndarray) -> np.ndarray:
    """A table's block packed (uint8): its frame's arrays whole, then each other column's
    rows in use (those whose ``live`` byte is not 0), in row order."""
    pk = packing(columns, cap)
    out = np.empty(pk.frame_bytes + cap * pk.row_bytes, np.uint8)      # room for every row: cut after
    return out[:kcall(K.pack_rows, block, out, pk.frames, pk.cols, pk.live_at, cap)]


def pack_all(tables: Sequence[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """``pack`` of each (columns, capacity, block) of ``tables`` in one compiled call:
    (the packed bytes one after another, where each table's end)."""
    return pack_with(pack_plan([(c, cap) for c, cap, _ in tables]), [b for _, _, b in tables])


def pack_plan(layouts: Sequence[tuple]) -> tuple:
    """The compiled pack's plan of tables of these (columns, capacity) (``pack_with``'s;
    kept per layouts)."""
    key = tuple((id(c), cap) for c, cap in layouts)
    got = _PACK_ALL.get(key)
    if got is None or any(a is not c for a, (c, _) in zip(got[0], layouts)):
        if len(_PACK_ALL) > 32:
            _PACK_ALL.clear()
        frames: list[int] = []
        cols: list[int] = []
        most = 0
        tinfo = np.zeros((len(layouts), 6), np.int64)
        for t, (c, cap) in enumerate(layouts):
            pk = packing(c, cap)
            tinfo[t] = (cap, pk.live_at, len(frames), len(frames) + len(pk.frames), len(cols), len(cols) + len(pk.cols))
            frames += pk.frames.tolist()
            cols += pk.cols.tolist()
            most += pk.frame_bytes + cap * pk.row_bytes
        got = _PACK_ALL[key] = (tuple(c for c, _ in layouts), tinfo, np.array(frames, np.int64).reshape(-1, 2),
                                np.array(cols, np.int64).reshape(-1, 2), most, max(cap for _, cap in layouts))
    return got


def pack_with(plan: tuple, blocks: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``pack_all`` of ``blocks`` laid out as ``plan`` (``pack_plan``) gives."""
    _, tinfo, frame_rows, col_rows, most, cap = plan
    out = np.empty(most, np.uint8)
    ends = np.empty(len(tinfo), np.int64)
    kcall(K.pack_tables, tuple(blocks), out, tinfo, frame_rows, col_rows, ends, _lrows(cap))
    return out, ends


_PACK_ALL: dict = {}


def unpack(columns: dict, cap: int, packed: Any, name: str = "table") -> np.ndarray:
    """A table's block from its packed bytes (``pack``), its free rows' columns 0 (the
    rows in use, the free list and the generations as saved). Raises StateError (naming
    ``name``) when the packed bytes are not the size its frame and rows in use give."""
    size = _layout(columns, cap)[1]
    if size > MAX_UNPACKED:
        raise StateError(f"{name}.block: a layout of {size} bytes, more than the {MAX_UNPACKED}-byte budget")
    plan = _plan([Saved(columns, cap, None, None)], single=True)
    buf = np.zeros(plan.size, np.uint8)
    _unpack(plan, buf, [packed], [name])
    return buf[:packing(columns, cap).size]


def _unpack(plan, buf: np.ndarray, packed: Sequence, names: Sequence[str] | None = None) -> None:
    """Each table's packed bytes into ``buf`` (unpack_rows). Raises StateError naming the
    first table whose bytes are not the size they must be (``names``: the tables' own,
    default ``table.<name>``)."""
    at = np.fromiter(accumulate(map(len, packed), initial=0), np.int64, len(packed) + 1)
    src = np.frombuffer(b"".join(packed), np.uint8) if at[-1] else np.zeros(1, np.uint8)
    out = np.zeros(1, np.int64)
    t = kcall(K.unpack_rows, buf, src, at, plan.tinfo, plan.frames, plan.ucols, out, _lrows(plan.most))
    if t >= 0:
        name = names[t] if names is not None else f"table.{plan.tnames[t]}"
        raise StateError(f"{name}.block: {len(packed[t])} bytes, where its layout of {int(plan.tinfo[t, 0])} rows "
                         f"and the rows its live column marks in use give {int(out[0])}")


class _Plan(NamedTuple):
    """The compiled pass's arguments for one set of layouts (made once per layout)."""

    bases: tuple            # each table's byte offset in the buffer
    size: int               # the buffer's size
    lays: tuple             # each table's layout (store._layout)
    tabs: np.ndarray
    spec: np.ndarray
    fspec: np.ndarray
    bounds: tuple           # (spec row, field, bound's name) to fill in
    at: np.ndarray
    names: tuple            # each spec row's "table.column" and rule
    must: np.ndarray
    nxt_mask: int
    most: int               # the largest capacity
    filled: dict            # the spec with the Game's bounds, by bounds (_bounded)
    tinfo: np.ndarray       # per table: unpack_rows' capacity, live position, frame size, row size, ranges
    frames: np.ndarray      # the frames' arrays: (buffer offset, size)
    ucols: np.ndarray       # the other columns: (buffer offset, bytes per row)
    tnames: tuple           # the tables' names (K.TABLE_ORDER, then the game's)
    lrows: int              # check_rows' scratch of rows in use: every capacity, plus one per table


_PLANS: dict = {}


def _plan(tables: Sequence[Saved], single: bool = False, names: Sequence[str] = K.TABLE_ORDER,
          rules: dict | None = None) -> _Plan:
    key = (single, *((id(t.columns), t.capacity) for t in tables), *names[len(K.TABLE_ORDER):])
    got = _PLANS.get(key)
    if got is not None and all(a is b.columns for a, b in zip(got[0], tables)):
        return got[1]
    if len(_PLANS) > 32:
        _PLANS.clear()
    plan = _make_plan(tables, single, names, rules)
    _PLANS[key] = ([t.columns for t in tables], plan)
    return plan


def _make_plan(tables: Sequence[Saved], single: bool = False, names_: Sequence[str] = K.TABLE_ORDER,
               rules_: dict | None = None) -> _Plan:
    bases, lays, off = [], [], 0
    tabs = np.full((len(tables), 5), -1, np.int64)
    spec: list[Any] = []
    fspec: list[Any] = []
    bounds: list[Any] = []
    names: list[Any] = []
    tinfo = np.zeros((len(tables), 8), np.int64)
    frames: list[Any] = []
    ucols: list[Any] = []
    for ti, (tname, t) in enumerate(zip(names_, tables)):
        lay, size = _layout(t.columns, t.capacity)
        pk = packing(t.columns, t.capacity)
        tinfo[ti, :4] = (t.capacity, pk.live_pos, pk.frame_bytes, pk.row_bytes)
        tinfo[ti, 4] = len(frames)
        frames += [(off + o, n) for o, n in pk.frames.tolist()]
        tinfo[ti, 5] = len(frames)
        tinfo[ti, 6] = len(ucols)
        ucols += [(off + o, n) for o, n in pk.cols.tolist()]
        tinfo[ti, 7] = len(ucols)
        bases.append(off)
        lays.append(lay)
        if single:
            off += size
            continue
        tabs[ti, 0] = t.capacity
        tabs[ti, 1] = off + lay["live"][0]
        if "gen" in lay and "free_rows" in lay:
            tabs[ti, 2] = (off + lay["gen"][0]) // lay["gen"][1].itemsize
            tabs[ti, 3] = (off + lay["free_rows"][0]) // lay["free_rows"][1].itemsize
            tabs[ti, 4] = (off + lay["n_free"][0]) // 8
        rules = RANGES[tname] if tname in RANGES else (rules_ or {})[tname]
        for col, (o, dt, shape) in lay.items():
            if col in _FRAME:
                continue
            if col not in rules:
                raise TypeError(f"snapcheck.RANGES: no rule for column {tname}.{col} (declare what a row may hold)")
            rule = rules[col]
            code = K.CODES.get(np.dtype(dt))
            if code is None:
                raise TypeError(f"snapcheck: column {tname}.{col} of dtype {dt} has no reader in anim.engine.snapkernel")
            width = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            lo, hi, flo, fhi = 0, 0, 0.0, 0.0
            kind = rule[0]
            if kind == K.Kind.INT:
                for f, b in ((5, rule[1]), (6, rule[2])):
                    if isinstance(b, str):
                        bounds.append((len(spec), f, b))
                lo, hi = (rule[1] if isinstance(rule[1], int) else 0), (rule[2] if isinstance(rule[2], int) else 0)
            elif kind == K.Kind.FLOAT:
                flo, fhi = rule[1], rule[2]
            elif kind == K.Kind.SET:
                lo = rule[1]
            spec.append((ti, (off + o) // dt.itemsize, int(code), width, int(kind), lo, hi))
            fspec.append((flo, fhi))
            names.append((f"table.{tname}.{col}", rule))
        off += size
    at = np.zeros((len(K.AT), 3), np.int64)
    for i, name in enumerate(K.AT if not single else ()):
        tname, col = name.split(".")
        ti = K.TABLE_ORDER.index(tname)
        o, dt, shape = lays[ti][col]
        at[i] = ((bases[ti] + o) // dt.itemsize, int(K.CODES[np.dtype(dt)]), shape[1] if len(shape) > 1 else 1)
        if K.CODES[np.dtype(dt)] in (K.Code.F32, K.Code.F64) and col not in ("t", "limit", "dur"):
            raise TypeError(f"snapcheck: {name} is read as an int")
    must = np.full(64, -1, np.int64)
    for ty, cols in _CURSORS.items():
        must[ty] = sum(1 << int(c[1]) for c in cols)
    return _Plan(tuple(bases), -(-off // 64) * 64, tuple(lays), tabs, np.array(spec, np.int64).reshape(-1, 7),
                 np.array(fspec, np.float64).reshape(-1, 2), tuple(bounds), at, tuple(names), must,
                 sum(1 << t for t in _NEXT_TYPES), max(t.capacity for t in tables), {}, tinfo,
                 np.array(frames, np.int64).reshape(-1, 2), np.array(ucols, np.int64).reshape(-1, 2),
                 tuple(names_[:len(tables)]), sum(t.capacity + 1 for t in tables))


_TABLE_WORD = {0: "cursor", 1: "fade", 2: "gait", 3: "task", 4: "human", 5: "body", 6: "combat"}


def check_saved(tables: Sequence[Saved], *, hgen: np.ndarray, hfree: np.ndarray, pool_out: np.ndarray,
                n_out: int, pool_capacity: int, facts: ClipFacts, dirty: Sequence[np.ndarray],
                dirty_where: Sequence[str], entities: np.ndarray, texts: int, names: Sequence[str] = K.TABLE_ORDER,
                rules: dict | None = None, keep: dict | None = None,
                layouts: Any = None) -> tuple[np.ndarray, list]:
    """Check the saved tables (``Saved`` each, in anim.engine.snapkernel.TABLE_ORDER) in one
    compiled pass, on a scratch copy.

    In: the human table's generations and free list (int64 arrays); the pool's flags and
    count and the pool's size (the Game's option); ``facts`` the bank's clips' numbers
    (``clip_facts``); ``dirty`` each table's rows freed since its last take (int64
    arrays) and where they were read (for the message); the humans' ``entities``; the
    number of combat ``texts``; ``names`` the tables' (K.TABLE_ORDER's, then a game's
    own tables, whose columns' rules are ``rules[name]``, RANGES' form); ``keep``: a dict
    the caller keeps (one per Game), in which the scratch buffer and its blocks are kept
    and written over by its next check of the same layouts (the same objects then: the
    caller is done with a check's blocks before its next); ``layouts``: an object the
    caller gives again only for the same tables' columns, capacities and blanks (then not
    compared one by one; None: always compared). Out: the scratch buffer and each table's block in it (a
    uint8 view: the checked rows). Raises StateError naming the first fault (the table,
    the column, the row)."""
    # the last check's plan, blanks and scratch (``keep``) while the tables' layouts and
    # blanks are the same objects (each is kept per layout)
    kept = keep.get("scratch") if keep is not None else None
    if kept is not None and len(kept[4]) == len(tables) and kept[6] == names and (
            (layouts is not None and kept[7] is layouts) or
            all(t.capacity == cap and t.columns is c and t.blank is b for t, (c, cap, b) in zip(tables, kept[4]))):
        plan, buf, blocks, views = kept[0], kept[1], kept[2], kept[5]
        if keep is not None and layouts is not None and kept[7] is not layouts:   # (found equal: known by this object from now)
            keep["scratch"] = (*kept[:7], layouts)
        np.copyto(buf, kept[3])
    else:
        plan = _plan(tables, names=names, rules=rules)
        blank = _blanks(plan, tables)
        buf = blank.copy()
        blocks = [buf[base:base + len(t.blank)] for t, base in zip(tables, plan.bases)]
        views = SnapViews(buf.view(np.int8), buf.view(np.int32), buf.view(np.int64), buf.view(np.float32),
                          buf.view(np.float64))
        if keep is not None:
            keep["scratch"] = (plan, buf, blocks, blank, [(t.columns, t.capacity, t.blank) for t in tables], views,
                               tuple(names), layouts)
    hcap = tables[4].capacity
    if len(hgen) != hcap:
        raise StateError(f"table.humans.gen: not {hcap} generations >= 0")
    if pool_out.dtype.char != "?" or pool_out.ndim != 1:
        raise StateError("table.pool.out: not one bool per task row")
    _unpack(plan, buf, [t.packed for t in tables])
    spec = _bounded(plan, len(facts.end) - 1, texts - 1)
    seen = _seen(max(plan.most, len(pool_out)))
    if any(len(d) for d in dirty):
        at = np.zeros(len(dirty) + 1, np.int64)
        n = 0
        for i, d in enumerate(dirty):
            n += len(d)
            at[i + 1] = n
        dirty_all = np.concatenate(dirty)
    else:                                    # (a file's tables: no table has rows waiting for a reset)
        at, dirty_all = _no_dirty(len(dirty)), _EMPTY
    out = np.zeros(8, np.int64)
    fout = np.zeros(2, np.float64)
    code = kcall(K.check_rows, views,
                 SnapPlan(plan.tabs, spec, plan.fspec, plan.at, plan.must, plan.nxt_mask, _FADE, _GAIT),
                 _bits(facts), SnapLists(hgen, hfree, pool_out.view(np.uint8), dirty_all, at, entities),
                 SnapScratch(seen, _lrows(plan.lrows), out, fout))
    if code:
        raise StateError(_message(plan, spec, code, out, fout, dirty_where))
    if not (n_out.__class__ is int and n_out == int(out[1]) and n_out <= pool_capacity):
        raise StateError(f"table.pool.n_out = {n_out!r}: not the {int(out[1])} flags set (at most {pool_capacity})")
    return buf, blocks


def check_deferred(tr: np.ndarray, hum: Any, tt: Any) -> None:
    """Refuse deferred task rows ``tr`` (each checked in use) that the flush could not give
    back safely: a row listed twice, a task not released, or a task the flush frees (a
    listed task and the next tasks it owns) that still has a place outside what is freed
    (a human's stack or queue, the next task of a task kept). In: the checked humans and
    tasks tables (their columns by name). Raises StateError naming counts.deferred.
    Original: 0x00105570 AnimTask_FlushDeferred (what it frees)."""
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise StateError(f"counts.deferred: {what}")
    need(len(np.unique(tr)) == len(tr), "a task row listed twice")
    need(bool(tt.released[tr].all()), "a task not released")
    freed = np.zeros(tt.capacity, np.bool_)
    ty, nxt, handed, live = tt.type, tt.nxt, tt.handed_over, tt.live
    for r in tr.tolist():                     # the flush's owned chain (the table has no cycles)
        x = r
        while not freed[x]:
            freed[x] = True
            nx = int(nxt[x])
            if int(ty[x]) not in _NEXT_TYPES or nx < 0 or handed[x] or not live[nx]:
                break
            x = nx
    hl = np.flatnonzero(hum.live)
    for col, n_col in (("stack", "depth"), ("queue", "queued")):
        rows = getattr(hum, col)[hl]
        n = getattr(hum, n_col)[hl].astype(np.int64)
        held = rows[np.arange(rows.shape[1]) < n[:, None]]
        need(not bool(freed[held].any()), f"a task still on a human's {col}")
    kept = np.flatnonzero(live.astype(np.bool_) & ~freed)
    nx_kept = nxt[kept].astype(np.int64)
    need(not bool(freed[nx_kept[nx_kept >= 0]].any()), "a task still the next task of a task kept")


def _blanks(plan: _Plan, tables: Sequence[Saved]) -> np.ndarray:
    """The plan's buffer with each table's blank block in place (kept while the tables'
    blanks are the same objects: each is kept per layout)."""
    got = _BLANK_ALL.get(id(plan))
    if got is None or got[0] is not plan or any(a is not t.blank for a, t in zip(got[1], tables)):
        buf = np.zeros(plan.size, np.uint8)
        for t, base in zip(tables, plan.bases):
            buf[base:base + len(t.blank)] = t.blank
        if len(_BLANK_ALL) > 8:
            _BLANK_ALL.clear()
        got = _BLANK_ALL[id(plan)] = (plan, [t.blank for t in tables], buf)
    return got[2]


_BLANK_ALL: dict = {}
_EMPTY = np.zeros(0, np.int64)
_NO_DIRTY: dict[int, np.ndarray] = {}


def _no_dirty(n: int) -> np.ndarray:
    """check_rows' dirty offsets of ``n`` tables with no dirty row (kept per count; the
    kernel only reads them)."""
    got = _NO_DIRTY.get(n)
    if got is None:
        got = _NO_DIRTY[n] = np.zeros(n + 1, np.int64)
    return got
_FADE, _GAIT = int(TaskType.FADE), int(TaskType.GAIT)


def _bounded(plan: _Plan, last_clip: int, last_text: int) -> np.ndarray:
    """The plan's declared checks with the Game's bounds filled in (kept per bounds)."""
    if not plan.bounds:
        return plan.spec
    key = (last_clip, last_text)
    spec = plan.filled.get(key)
    if spec is None:
        spec = plan.spec.copy()
        vals = {"bank": last_clip, "texts": last_text, "stack": int(plan.at[K.A_STACK, 2]),
                "queue": int(plan.at[K.A_QUEUE, 2])}
        for row, f, name in plan.bounds:
            spec[row, f] = vals[name]
        if len(plan.filled) > 16:
            plan.filled.clear()
        plan.filled[key] = spec
    return spec


_SEEN = [np.zeros(64, np.int64)]


_LROWS = [np.zeros(64, np.int64)]


def _bits(facts: ClipFacts) -> ClipFacts:
    """``facts`` as check_rows reads them: the clips' limit and duration as their float32
    bits (int32 views of the same memory; kept per ClipFacts, so that numba compiles no
    view of its own)."""
    got = _BITS.get(id(facts))
    if got is None or got[0] is not facts:
        _BITS.clear()
        got = _BITS[id(facts)] = (facts, facts._replace(limit=facts.limit.view(np.int32),
                                                        dur=facts.dur.view(np.int32)))
    return got[1]


_BITS: dict = {}


def _lrows(n: int) -> np.ndarray:
    """check_rows' scratch of rows in use (kept: grown, never shrunk)."""
    if len(_LROWS[0]) < n:
        _LROWS[0] = np.zeros(max(n, 2 * len(_LROWS[0])), np.int64)
    return _LROWS[0]


def _seen(n: int) -> np.ndarray:
    """The kernel's scratch (kept: grown, never shrunk)."""
    if len(_SEEN[0]) < n:
        _SEEN[0] = np.zeros(max(n, 2 * len(_SEEN[0])), np.int64)
    return _SEEN[0]


def _message(plan: _Plan, spec: np.ndarray, code: int, out: np.ndarray, fout: np.ndarray,
             dirty_where: Sequence[str]) -> str:
    """The one line of a fault check_rows found."""
    F = K.Fault
    a, b, c, d = (int(x) for x in out[1:5])
    table = plan.tnames[a] if 0 <= a < len(plan.tnames) else ""
    if code == F.LIVE_BYTE:
        return f"table.{table}.live[{b}]: byte {c} is not a bool (0 or 1)"
    if code == F.N_FREE:
        cap = int(plan.tabs[a, 0])
        return f"table.{table}.n_free = {b}: the table has {c} rows not in use of {cap}"
    if code == F.FREE_RANGE:
        return f"table.{table}.free_rows[{b}] = {c}: not a row of the table ({int(plan.tabs[a, 0])})"
    if code == F.FREE_SET:
        return f"table.{table}.free_rows: not the {b} rows not in use, each once"
    if code == F.GEN:
        return f"table.{table}.gen[{b}] = {c}: a generation below 0"
    if code == F.HUMAN_GEN:
        return f"table.humans.gen: not {int(plan.tabs[4, 0])} generations >= 0"
    if code == F.HUMAN_FREE:
        return f"table.humans.free: not the {b} rows not in use, each once"
    if code == F.COLUMN:
        if a < 0:
            return f"table: row {b} holds {c}, out of its column's range"
        name, rule = plan.names[a]
        kind = rule[0]
        item = f"[{b}]" if spec[a, 3] == 1 else f"[{b}, {d}]"
        if kind == K.Kind.FLOAT:
            return f"{name}{item} = {float(fout[0])!r}: not a finite number in [{rule[1]}, {rule[2]}]"
        if kind == K.Kind.BOOL:
            return f"{name}{item}: byte {c} is not a bool (0 or 1)"
        if kind == K.Kind.SET:
            return f"{name}{item} = {c}: not {rule[2]}"
        if kind == K.Kind.ENTITY:
            return f"{name}{item} = {c}: not -1 or a human's entity"
        return f"{name}{item} = {c}: not in {int(spec[a, 5])}-{int(spec[a, 6])}"
    col = f"table.{K.AT[a]}" if 0 <= a < len(K.AT) else ""
    if code == F.CLIP_NUMBER:
        return f"{col}[{b}] is not its clip's (bank clip {c})"
    if code == F.PAST_END:
        return f"table.cursors.t[{b}]: past its clip's duration"
    if code == F.FRAME:
        return f"table.cursors.frame[{b}]: {c} frames past its clip's end frame"
    if code == F.EV:
        return f"table.cursors.ev[{b}] = {c}: past its clip's events"
    if code == F.EVF:
        return f"table.cursors.evf[{b}] = {c}: not the frame of its next event ({d})"
    if code == F.NO_CURSOR:
        return f"{col}[{b}]: a task of type {c} has no such cursor"
    if code == F.LINK:
        return f"{col}[{b}] = {c}: not a row in use of the {_TABLE_WORD.get(d, '?')} table"
    if code == F.OWNERS:
        what = "tasks.c0-c3" if a == K.A_C0 else "tasks.aux"
        return f"table.{what}: {_TABLE_WORD.get(c, '?')} row {b} has two owners"
    if code == F.NO_AUX:
        return f"table.tasks.aux[{b}]: a task of its type has no aux row"
    if code == F.NO_NEXT:
        return f"table.tasks.nxt[{b}]: a task of its type has no next task"
    if code == F.NO_INCOMING:
        return f"table.tasks.incoming[{b}]: only a fade has an incoming task"
    if code == F.PLACES:
        return f"table.tasks (stacks, queues and next tasks): task row {b} has two owners"
    if code == F.CHAIN:
        return f"table.tasks.nxt[{b}]: a chain of next tasks that never ends"
    if code == F.POOL_BYTE:
        return f"table.pool.out[{b}]: byte {c} is not a bool (0 or 1)"
    if code == F.POOL_ROW:
        return "table.pool.out: a task counted out that is not a task row in use"
    if code == F.NOT_PLACED:
        return f"table.tasks.placed[{b}]: a task on a stack, in a queue or a next task, not marked placed"
    if code == F.DIRTY:
        return f"{dirty_where[a]}: not rows not in use, each once"
    return f"table: fault {code}"


# The task types whose row names a partner (PairedClipTask, PairedHoldTask) and the one whose
# row holds eight clips (DirectionTask).
_PAIRED = (int(TaskType.PAIRED_CLIP), int(TaskType.PAIRED_HOLD))
_WRAPS = (int(TaskType.LOOP), int(TaskType.GAIT))


def check_ids(tsk: Any, humans: Any, values: list, uses: list, free: list, n_banks: int,
              kinds: tuple | None = None) -> None:
    """Check the id columns of saved task and human tables against the saved callbacks
    table (CallbackTable: ``values`` (None for a free id, a Callback, or a str: a
    partner's name), ``uses``, ``free``) and the bank's ``n_banks`` clips.

    Checked, over the rows in use: ``tasks.on_end``, ``tasks.on_wrap`` and
    ``humans.on_report`` are NO_CALLBACK or the id of a callback; ``tasks.partner_name``
    NO_CALLBACK or the id of a name; a wrap callback only on a loop or a gait, and the
    ``callback`` column set exactly where one is; ``tasks.partner`` -1 or a handle >= 0
    (and not both a handle and a name), on a paired task only; ``tasks.dir_banks`` eight
    clips of the bank on a direction task, -1 on any other; each id's uses the number of
    rows naming it, the free ids each once with no value and no use.
    ``kinds``: ``id_kinds(values)`` when the caller keeps it.
    Raises StateError naming the first fault."""
    n = len(values)
    if len(uses) != n:
        raise StateError(f"calls.uses: not {n} counts >= 0")
    is_name, is_call = kinds if kinds is not None else id_kinds(values)
    out = np.zeros(5, np.int64)
    code = kcall(K.check_ids_rows,
                 IdTasks(tsk.live.view(np.int8), tsk.type, tsk.on_end, tsk.on_wrap, tsk.partner_name,
                         tsk.callback.view(np.int8), tsk.partner, tsk.dir_banks),
                 IdHumans(humans.live.view(np.int8), humans.on_report),
                 IdCalls(is_name, is_call, _ids(uses), _ids(free)),
                 IdRules(_WRAP_MASK, _PAIRED_MASK, _DIRECTION, int(n_banks)), _seen(n), out)
    if code:
        raise StateError(_ids_message(code, out, n, uses, n_banks))


def id_kinds(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Which ids of a callbacks table's ``values`` are names, which callbacks (int8 flags
    each: check_ids')."""
    n = len(values)
    return (np.fromiter((v.__class__ is str for v in values), np.int8, n),
            np.fromiter((v is not None and v.__class__ is not str for v in values), np.int8, n))


def _ids(a: Any) -> np.ndarray:
    """A list of ints (or an int64 array) as an int64 array (a number past int64: StateError)."""
    if a.__class__ is np.ndarray and a.dtype == np.int64:
        return a
    try:
        return np.array(a, np.int64).reshape(-1)
    except (OverflowError, TypeError, ValueError):
        raise StateError("calls: not lists of whole numbers") from None


def _ids_message(code: int, out: np.ndarray, n: int, uses: Any, n_banks: int) -> str:
    """The one line of a fault check_ids_rows found."""
    F = K.IdFault
    c, r, v = (int(x) for x in out[1:4])
    if code == F.USES:
        return f"calls.uses: not {n} counts >= 0"
    if code == F.FREE:
        return "calls.free: not free ids (no value, no use), each once"
    name = K.ID_COLUMNS[c]
    if code == F.RANGE:
        return f"{name}[{r}] = {v}: not in -1-{n - 1}"
    if code == F.KIND:
        return f"{name}[{r}]: not the id of {'a name' if c == 2 else 'a callback'}"
    if code == F.WRAP_TYPE:
        return f"tasks.on_wrap[{r}]: a task of its type has no wrap callback"
    if code == F.WRAP_FLAG:
        return f"tasks.on_wrap[{r}]: a wrap callback where tasks.callback says none, or the reverse"
    if code == F.PARTNER_RANGE:
        return f"tasks.partner[{r}] = {v}: not in -1-{(1 << 63) - 1}"
    if code == F.NO_PARTNER:
        return f"tasks.partner[{r}]: a task of its type has no partner"
    if code == F.BOTH:
        return f"tasks.partner[{r}]: both a handle and a name"
    if code == F.DIR_BANKS:
        return (f"tasks.dir_banks[{r}]: not its type's clips (a direction task: eight clips of the bank, {n_banks} "
                "known; any other: none)")
    return f"calls.uses[{c}] = {int(uses[c])}: {r} rows name it"


_WRAP_MASK = sum(1 << t for t in _WRAPS)
_PAIRED_MASK = sum(1 << t for t in _PAIRED)
# the task type whose rows hold eight clips (the one type anim.engine.rules.dir_banks_misfit
# takes eight clips of a bank for; the kernel is given it, the rule stays written once)
_DIRECTION = next(t for t in range(64) if not dir_banks_misfit(np.array([t]), np.zeros((1, 8), np.int64), 1)[0])
EIGHT_CLIPS_TYPE = _DIRECTION          # (that type's code, for a search of a task table's type bytes)


# ---------------------------------------------------------------- the warm-up
# The game's own tables a snapshot file holds after the seven of TABLE_ORDER (the fight
# rules': game.runtime.snapfile.FIGHT_TABLES): pack_tables is compiled for their count.
GAME_TABLES = 4


def compile_kernels() -> None:
    """Compile (or load from numba's cache) the snapshot file's kernels (snapkernel:
    pack_tables, pack_rows, unpack_rows, check_rows, check_ids_rows, check_tagged_rows)
    with the argument types a file's write and read pass them: a blank state of one row
    per table (the engine's tables, the body and combat tables' declared columns, and
    GAME_TABLES tables of a live column) packed, unpacked, checked, and a ring of tagged
    rows checked (anim.playback.warmup calls it; ``scuffle warm`` through it)."""
    from scuffle.anim.engine.store import HumanTable, cursor_table, fade_table, gait_table, task_table

    live = [cursor_table(1), fade_table(1), gait_table(1), task_table(1)]
    cols = [t._all for t in live] + [HumanTable.COLUMNS]
    for name in ("bodies", "combats"):                # (their tables are the components'; the rules say the columns)
        cols.append({**FRAME_COLUMNS,
                     **{c: np.float64 if r[0] == K.Kind.FLOAT else np.int8 if r[0] == K.Kind.BOOL else np.int64
                        for c, r in RANGES[name].items()}})
    blocks = [np.zeros(_layout(c, 1)[1], np.uint8) for c in cols]
    game: dict[str, Any] = {"live": np.bool_}
    packed, ends = pack_all([(c, 1, b) for c, b in zip(cols + [game] * GAME_TABLES,
                                                       blocks + [np.zeros(_layout(game, 1)[1], np.uint8)] * GAME_TABLES)])
    pack(cols[0], 1, blocks[0])
    parts = np.split(packed[:int(ends[len(cols) - 1])], ends[:len(cols) - 1].tolist())
    saved = [Saved(c, 1, p.tobytes(), b) for c, p, b in zip(cols, parts, blocks)]
    one = np.zeros(1, np.int64)
    facts = ClipFacts(one, np.zeros(1, np.float32), np.zeros(1, np.float32), one, one, one, one)
    try:
        check_saved(saved, hgen=np.zeros(1, np.int64), hfree=np.zeros(0, np.int64), pool_out=np.zeros(1, np.bool_),
                    n_out=0, pool_capacity=1, facts=facts, dirty=[_EMPTY] * len(saved),
                    dirty_where=[""] * len(saved), entities=np.zeros(0, np.int64), texts=1)
    except StateError:
        pass                                         # (a blank row is no human's: the types are what count)
    rows = lambda c, b: {n: np.ndarray(shape, dt, b, off) for n, (off, dt, shape) in _layout(c, 1)[0].items()}  # noqa: E731
    tsk, hum = (type("Rows", (), rows(c, b)) for c, b in ((cols[3], blocks[3]), (cols[4], blocks[4])))
    check_ids(tsk, hum, [None], [0], [], 1)
    lay = _layout({"live": np.bool_, "n": np.int8, "kind": (np.int8, (2,)), "value": (np.int64, (2,)),
                   "a": np.int32}, 1)
    ring = np.zeros(lay[1], np.uint8)
    c = {n: np.ndarray(shape, dt, ring, off) for n, (off, dt, shape) in lay[0].items()}
    kcall(K.check_tagged_rows, c["live"].view(np.int8), 0, 0, c["n"], c["kind"], c["value"], c["a"], c["a"], 1,
          np.zeros(5, np.int64))
