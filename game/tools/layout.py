"""The kernels' walk over a crowd's rows: how scattered it is, and what the same rows in walk order cost.

``step_stacks`` and ``pose_stacks`` walk the humans in the crowd's order and follow each
one's stack into the task, cursor, fade and gait tables. Where those rows lie decides how
many cache lines a human costs the walk: rows of successive humans that lie side by side
share lines, rows scattered over tables larger than the core's cache each miss it. This
module measures that for the bench (``scuffle bench --layout``):

- ``walk_rows``: the rows the walk reads, in its order (a human's stack bottom first,
  each task's next and incoming task after it, then its queue; the cursors, fades and
  gaits those tasks link, in the same order);
- ``walk_scatter``: how far apart successive reads lie (mean distance in rows, the share
  within 8 rows), the cache lines and 4 KiB pages the walk touches per human, and the
  tables' bytes against the caches the operating system reports;
- ``renumber``: the tables' rows renumbered into walk order (every link rewritten, each
  moved row's generation as if taken anew and the row it left given back, the free lists
  remapped): a table-level change only, for measuring. No handle is re-pointed, so a
  running Game must not go on from it: ``layout_pass`` puts every byte back;
- ``layout_pass``: one update's kernel calls captured, then timed on the tables as they
  lie and renumbered, in turns in the same minutes; the step's status and counts and the
  pose's output compared bit for bit (the walk order changes no result), every array put
  back after.
"""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from scuffle.anim.engine.crowd import default_threads
from scuffle.anim.base.enums import TaskType
from scuffle.anim.engine.store import NO_ROW, Stores

__all__ = ["walk_rows", "walk_scatter", "renumber", "layout_pass", "cpu_caches", "NEAR_ROWS"]

_FADE = int(TaskType.FADE)
_GAIT = int(TaskType.GAIT)
# Two successive reads this many rows apart or fewer count as near: 8 int32 rows are half
# a cache line, so the second read finds the first one's line in most columns.
NEAR_ROWS = 8
_LINE = 64
_PAGE = 4096
# The task and cursor columns the two kernels read for every task and cursor they walk
# (anim.engine.kernels_fetch's lists): what the walk's cache lines are counted over.
_TASK_COLUMNS = ("type", "rate", "flags", "held", "c0", "c1", "c2", "c3", "aux", "nxt", "blend", "window",
                 "released", "handed_over", "speed", "callback", "value", "target")
_CURSOR_COLUMNS = ("t", "frame", "end", "limit", "dur", "flags", "bank", "ev", "evf", "at_end")


def _first_seen(a: np.ndarray) -> np.ndarray:
    """``a``'s values (>= 0) each once, in the order they first appear."""
    a = a[a >= 0]
    if not len(a):
        return a.astype(np.int64)
    _, first = np.unique(a, return_index=True)
    return a[np.sort(first)].astype(np.int64)


def walk_rows(stores: Stores, rows) -> dict[str, np.ndarray]:
    """The rows of each table the walk over human rows ``rows`` reads, in its order, each
    once: ``tasks`` (per human its stack bottom first, each stack task's next task and a
    fade's incoming task after the stack, then its queue), ``cursors`` (c0-c3 of those
    tasks in that order), ``fades`` and ``gaits`` (the aux rows of those types)."""
    hum, tsk = stores.humans, stores.tasks
    rows = np.asarray(rows, np.int64)
    depth = hum.depth[rows].astype(np.int64)
    queued = hum.queued[rows].astype(np.int64)
    stack = np.where(np.arange(hum.stack.shape[1])[None, :] < depth[:, None], hum.stack[rows], NO_ROW)
    safe = np.maximum(stack, 0)
    nxt = np.where(stack >= 0, tsk.nxt[safe], NO_ROW)
    inc = np.where(stack >= 0, tsk.incoming[safe], NO_ROW)
    queue = np.where(np.arange(hum.queue.shape[1])[None, :] < queued[:, None], hum.queue[rows], NO_ROW)
    tasks = _first_seen(np.concatenate([stack, nxt, inc, queue], axis=1).reshape(-1))
    cursors = _first_seen(np.stack([tsk.c0[tasks], tsk.c1[tasks], tsk.c2[tasks], tsk.c3[tasks]], 1).reshape(-1))
    ty, aux = tsk.type[tasks], tsk.aux[tasks]
    return {"tasks": tasks, "cursors": cursors, "fades": _first_seen(aux[ty == _FADE]),
            "gaits": _first_seen(aux[ty == _GAIT])}


def _touched(table, columns, rows: np.ndarray) -> tuple[set, set]:
    """The cache lines and pages (by address) that reading ``columns`` of ``rows`` touches."""
    lines: set = set()
    pages: set = set()
    for name in columns:
        a = getattr(table, name)
        addr = a.__array_interface__["data"][0] + rows * a.strides[0]
        lines.update(np.unique(addr // _LINE).tolist())
        pages.update(np.unique(addr // _PAGE).tolist())
    return lines, pages


def walk_scatter(stores: Stores, rows) -> dict[str, Any]:
    """How the walk over human rows ``rows`` lies in the tables: per table (tasks,
    cursors) its reads per human, the mean distance in rows between successive reads and
    the share of them within NEAR_ROWS, the rows in use and the capacity; the cache lines
    and pages the kernels' columns of those rows touch, per human; the bytes of the
    tables the walk reads (their whole blocks)."""
    n = max(1, len(rows))
    got = walk_rows(stores, rows)
    out: dict[str, Any] = {"humans": len(rows)}
    for name in ("tasks", "cursors"):
        a, table = got[name], getattr(stores, name)
        d = np.abs(np.diff(a))
        out[name] = {"reads_per_human": round(len(a) / n, 3),
                     "mean_distance": round(float(d.mean()), 1) if len(d) else 0.0,
                     "near_share": round(float((d <= NEAR_ROWS).mean()), 4) if len(d) else 1.0,
                     "in_use": int(table.in_use), "capacity": int(table.capacity)}
    tl, tp = _touched(stores.tasks, _TASK_COLUMNS, got["tasks"])
    cl, cp = _touched(stores.cursors, _CURSOR_COLUMNS, got["cursors"])
    out["lines_per_human"] = round((len(tl) + len(cl)) / n, 2)
    out["pages_per_human"] = round((len(tp) + len(cp)) / n, 3)
    out["touched_mb"] = round((len(tl) + len(cl)) * _LINE / 1e6, 3)
    out["tables_mb"] = round(sum(getattr(stores, t).block.nbytes for t in ("tasks", "cursors", "fades", "gaits",
                                                                          "humans")) / 1e6, 3)
    return out


def cpu_caches() -> dict[str, int]:
    """The data caches the operating system reports for CPU 0 (``L1``, ``L2``, ``L3``:
    bytes; what it does not report is left out)."""
    out: dict[str, int] = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return out
    for d in names:
        try:
            with open(os.path.join(base, d, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, d, "level")) as f:
                level = int(f.read().strip())
            with open(os.path.join(base, d, "size")) as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not size:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1], 1)
        try:
            out[f"L{level}"] = int(size.rstrip("KMG")) * mult
        except ValueError:
            continue
    return out


def _order(first: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A table's new order: new row -> old row (``first`` in its order, then the other
    rows in use, then the free ones, each in row order), and its inverse."""
    cap = len(live)
    moved = np.zeros(cap, np.bool_)
    moved[first] = True
    new_to_old = np.concatenate([first, np.flatnonzero(live & ~moved), np.flatnonzero(~live & ~moved)])
    old_to_new = np.empty(cap, np.int64)
    old_to_new[new_to_old] = np.arange(cap)
    return new_to_old, old_to_new


def _move(table, new_to_old: np.ndarray, old_to_new: np.ndarray) -> None:
    """Table ``table``'s rows put in their new order: every column, ``live`` and ``gen``
    (a row whose occupant moved away counts its generation up, as if given back; the row
    taken keeps its own, as a take does), the free list's rows renamed in place."""
    was_live = table.live.copy()
    gen = table.gen.copy()
    for name in table._columns:
        a = getattr(table, name)
        a[...] = a[new_to_old]
    live = table.live
    live[...] = was_live[new_to_old]
    rows = np.arange(len(live))
    left = was_live & (new_to_old != rows)                # a row whose occupant moved
    gen[left] = (gen[left] + 1) & np.iinfo(gen.dtype).max
    table.gen[...] = gen
    n = int(table.n_free[0])
    table.free_rows[:n] = old_to_new[table.free_rows[:n]]


def _rename(a: np.ndarray, old_to_new: np.ndarray, where=None) -> None:
    """The links in ``a`` (NO_ROW: none) renamed by ``old_to_new`` (only where ``where``)."""
    m = a >= 0 if where is None else (a >= 0) & where
    a[m] = old_to_new[a[m]]


def renumber(stores: Stores, rows) -> dict[str, int]:
    """Renumber the task, cursor, fade and gait tables' rows into the order the walk over
    human rows ``rows`` reads them (walk_rows; the other rows in use after, then the free
    ones), every link rewritten: the humans' stacks and queues, the tasks' cursor rows,
    aux rows, next and incoming tasks. For measuring only: no handle, deferred list or
    pool flag follows (layout_pass puts the bytes back). Returns the rows moved per table."""
    hum, tsk = stores.humans, stores.tasks
    got = walk_rows(stores, rows)
    orders = {name: _order(got[name], getattr(stores, name).live.copy())
              for name in ("tasks", "cursors", "fades", "gaits")}
    ty = tsk.type
    for col in ("c0", "c1", "c2", "c3"):
        _rename(getattr(tsk, col), orders["cursors"][1])
    _rename(tsk.aux, orders["fades"][1], ty == _FADE)
    _rename(tsk.aux, orders["gaits"][1], ty == _GAIT)
    _rename(tsk.nxt, orders["tasks"][1])
    _rename(tsk.incoming, orders["tasks"][1])
    live = hum.live
    for col in ("stack", "queue"):
        a = getattr(hum, col)
        sub = a[live]
        _rename(sub, orders["tasks"][1])
        a[live] = sub
    moved = {}
    for name, (new_to_old, old_to_new) in orders.items():
        _move(getattr(stores, name), new_to_old, old_to_new)
        moved[name] = int((new_to_old != np.arange(len(new_to_old))).sum())
    return moved


def _arrays(obj) -> list[np.ndarray]:
    """The arrays a kernel argument holds: itself, or a named tuple's fields."""
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, tuple):
        return [a for x in obj for a in _arrays(x)]
    return []


def _buffers(args, tables) -> list[np.ndarray]:
    """The writable arrays of a kernel call's arguments that are not views of a table's
    block (its buffers and scratch: the tables are kept as their blocks)."""
    blocks = [t.block for t in tables]
    out, seen = [], set()
    for a in _arrays(args):
        if a.flags.writeable and id(a) not in seen and not any(np.may_share_memory(a, b) for b in blocks):
            seen.add(id(a))
            out.append(a)
    return out


def layout_pass(game, repeats: int = 10, turns: int = 3) -> dict[str, Any] | None:
    """``step_stacks`` and ``pose_stacks`` of one update of ``game`` (a Game on the compiled
    engine, one thread) captured with the state each began from, then each timed
    ``repeats`` times from that state as it lies (A) and renumbered into walk order (B),
    A and B in ``turns`` turns; the step's status and counts and the pose's output
    compared bit for bit. Every array is put back after: the game goes on from the
    update it stepped. Out: CPU µs per human of each kernel for A and B (medians),
    ``same_bits``, the walk's scatter for A and B, the caches; None where it cannot run
    (another engine, the kernels on threads)."""
    player = game.player
    batch = getattr(player, "batch", None)
    if batch is None or (player.options.threads or default_threads()) > 1:
        return None
    stores = player.stores
    tables = (stores.tasks, stores.cursors, stores.fades, stores.gaits, stores.humans)
    box: dict[str, tuple] = {}
    saved = []
    for name in ("_step_kernel", "_pose_kernel"):
        fn = getattr(batch, name)
        saved.append((name, fn))

        def call(*a, _fn=fn, _name=name, **k):
            if _name not in box:                   # the state this call begins from
                bufs = _buffers(a, tables)
                box[_name] = (_fn, a, k, [t.block.copy() for t in tables], bufs, [b.copy() for b in bufs])
            return _fn(*a, **k)
        setattr(batch, name, call)
    try:
        game.step()
    finally:
        for name, fn in saved:
            setattr(batch, name, fn)
    if "_step_kernel" not in box or "_pose_kernel" not in box:
        return None
    after = [t.block.copy() for t in tables]
    after_bufs = {id(b): (b, b.copy()) for k in box.values() for b in k[4]}
    rows = np.asarray(box["_step_kernel"][1][0][box["_step_kernel"][1][1]:], np.int64)
    n = max(1, len(rows))

    def put(blocks, bufs, kept):
        for t, b in zip(tables, blocks):
            np.copyto(t.block, b)
        for a, b in zip(bufs, kept):
            np.copyto(a, b)

    times: dict[str, dict[str, list]] = {"A": {"step": [], "pose": []}, "B": {"step": [], "pose": []}}
    seen: dict[str, list] = {"A": [], "B": []}
    scatter: dict[str, Any] = {}
    try:
        states = {}
        for name, (fn, args, kw, blocks, bufs, kept) in box.items():
            put(blocks, bufs, kept)
            if name == "_step_kernel":
                scatter["A"] = walk_scatter(stores, rows)
            renumber(stores, rows)
            if name == "_step_kernel":
                scatter["B"] = walk_scatter(stores, rows)
            states[name] = {"A": blocks, "B": [t.block.copy() for t in tables]}
        for turn in range(turns):
            for tag in ("A", "B"):
                for name, key in (("_step_kernel", "step"), ("_pose_kernel", "pose")):
                    fn, args, kw, _, bufs, kept = box[name]
                    spent = []
                    for _ in range(repeats):
                        put(states[name][tag], bufs, kept)
                        c0 = time.process_time()
                        fn(*args, **kw)
                        spent.append(time.process_time() - c0)
                    times[tag][key].append(float(np.median(spent)))
                    if turn == 0:
                        out = args[-1] if name == "_step_kernel" else args[-2]
                        got = [out.status.copy(), out.counts.copy()] if name == "_step_kernel" else \
                            [a.copy() for a in _arrays(out)]
                        seen[tag].extend(got)
        same = len(seen["A"]) == len(seen["B"]) and all(x.tobytes() == y.tobytes()
                                                        for x, y in zip(seen["A"], seen["B"]))
    finally:
        put(after, [], [])
        for b, kept in after_bufs.values():
            np.copyto(b, kept)
    us = {tag: {k: round(float(np.median(v)) * 1e6 / n, 4) for k, v in d.items()} for tag, d in times.items()}
    return {"humans": len(rows), "as_they_lie_us": us["A"], "walk_order_us": us["B"], "same_bits": bool(same),
            "scatter": scatter["A"], "scatter_walk_order": scatter["B"], "caches": cpu_caches(),
            "repeats": repeats, "turns": turns}
