"""Check a saved engine state row by row before the engine sees it.

A snapshot file comes from anyone: its tables are read into scratch tables first and
checked here, all of it, before a single row of the world changes. A state that passes
is one the engine could have made: every row link points at a row in use of the right
table, each task has one place, every free list holds each free row once, every number
the kernels index with is in range, every float the rules compute with is finite, and
every cursor's clip numbers are those of its clip. So the kernels never read out of
bounds, never loop on a chain, and never compute a NaN from a stranger's bytes.

``check_engine`` raises ``StateError`` (a ValueError) naming the table, the column and
the first bad row. Original: none (ours).
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

from .store import NO_EVENT, NO_ROW, HumanTable, Table
from .tasks import TaskType

__all__ = ["StateError", "check_engine", "check_table_frame", "check_finite", "ClipFacts", "clip_facts",
           "check_ids"]

# What a task of each type links to: its cursor columns that must hold a cursor row, those
# that may, and its own row in the fade or gait table (aux).
_CLIP_TYPES = (TaskType.LOOP, TaskType.CLIP, TaskType.PAIRED_HOLD, TaskType.HOLD, TaskType.PAIRED_CLIP,
               TaskType.SCENE)
_CURSORS: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **{int(t): (("c0",), ()) for t in _CLIP_TYPES},
    int(TaskType.FADE): ((), ()),
    int(TaskType.MIX): (("c0", "c1"), ()),
    int(TaskType.PICK): (("c0", "c1", "c2", "c3"), ()),
    int(TaskType.GAIT): (("c0", "c1"), ()),            # its pair, both always there (kernels._runnable)
    int(TaskType.DIRECTION): (("c0", "c1", "c2"), ()),
}
_NEXT_TYPES = (int(TaskType.CLIP), int(TaskType.PAIRED_CLIP))
MAX_RATE = 1e6                 # a rate or speed beyond this is not one any constructor takes
MAX_SECONDS = 1e9              # a fade's time or a blend time, far past any clip
MAX_VALUE = 1e9                # a mix's weight or a pick's or direction's value, far past their ranges
MAX_COUNT = 1 << 62            # a loop's wrap count: an int64 with room to count on


class StateError(ValueError):
    """A saved state that the engine could not have made (one line naming the field)."""


def _first(mask: np.ndarray, rows: np.ndarray) -> int:
    return int(rows[int(np.flatnonzero(mask)[0])])


def check_finite(name: str, a: np.ndarray, rows: np.ndarray, lo: float = -math.inf, hi: float = math.inf) -> None:
    """Every value of ``a`` (the live ``rows``' values) finite and within [lo, hi]."""
    v = a if a.ndim == 1 else a.reshape(len(a), -1)
    bad = ~np.isfinite(v) | (v < lo) | (v > hi)
    if bad.ndim > 1:
        bad = bad.any(axis=1)
    if bad.any():
        r = _first(bad, rows)
        raise StateError(f"{name}[{r}] = {a[int(np.flatnonzero(bad)[0])]!r}: not a finite number in [{lo}, {hi}]")


def _ints_in(name: str, a: np.ndarray, rows: np.ndarray, lo: int, hi: int) -> None:
    bad = (a < lo) | (a > hi)
    if bad.any():
        r = _first(bad, rows)
        raise StateError(f"{name}[{r}] = {int(a[int(np.flatnonzero(bad)[0])])}: not in {lo}-{hi}")


def _bools(name: str, a: np.ndarray, rows: np.ndarray | None = None) -> None:
    raw = a.view(np.uint8)
    bad = raw > 1
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        r = i if rows is None else int(rows[i])
        raise StateError(f"{name}[{r}]: byte {int(raw[i])} is not a bool (0 or 1)")


def check_table_frame(name: str, t: Table) -> np.ndarray:
    """The free list and the generations of table ``t``: ``live`` bools, ``n_free`` within
    the capacity, ``free_rows[:n_free]`` the rows not in use, each once, generations >= 0.
    Returns the rows in use."""
    cap = t.capacity
    _bools(f"{name}.live", t.live)
    live = np.flatnonzero(t.live)
    nf = int(t.n_free[0])
    if not 0 <= nf <= cap or nf + len(live) != cap:
        raise StateError(f"{name}.n_free = {nf}: the table has {cap - len(live)} rows not in use of {cap}")
    free = t.free_rows[:nf]
    if ((free < 0) | (free >= cap)).any():
        i = int(np.flatnonzero((free < 0) | (free >= cap))[0])
        raise StateError(f"{name}.free_rows[{i}] = {int(free[i])}: not a row of the table ({cap})")
    if t.live[free].any() or len(np.unique(free)) != nf:
        raise StateError(f"{name}.free_rows: not the {cap - len(live)} rows not in use, each once")
    if (t.gen < 0).any():
        i = int(np.flatnonzero(t.gen < 0)[0])
        raise StateError(f"{name}.gen[{i}] = {int(t.gen[i])}: a generation below 0")
    return live


def _links(name: str, values: np.ndarray, rows: np.ndarray, target_live: np.ndarray, target: str,
           allow_none: bool) -> None:
    """``values`` (of ``rows``) are rows in use of the target table (or NO_ROW when allowed)."""
    cap = len(target_live)
    none = values == NO_ROW
    inside = (values >= 0) & (values < cap)
    ok = inside.copy()
    ok[inside] = target_live[values[inside]]
    if allow_none:
        ok |= none
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise StateError(f"{name}[{int(rows[i])}] = {int(values[i])}: not a row in use of the {target} table")


def _once(name: str, values: np.ndarray, what: str) -> None:
    """No row appears twice in ``values`` (one owner / one place each)."""
    u, counts = np.unique(values, return_counts=True)
    if (counts > 1).any():
        raise StateError(f"{name}: {what} row {int(u[int(np.flatnonzero(counts > 1)[0])])} has two owners")


class ClipFacts(NamedTuple):
    """What a cursor on each clip of the bank must hold, by bank index (``clip_facts``):
    F, D - 1/60 and D as float32, the first event's frame, the events' count, where each
    clip's event frames start in ``frames``."""

    end: np.ndarray
    limit: np.ndarray
    dur: np.ndarray
    evf0: np.ndarray
    nev: np.ndarray
    first: np.ndarray
    frames: np.ndarray


def clip_facts(protos: Sequence[tuple]) -> ClipFacts:
    """``ClipFacts`` of the bank's clips from their cursor prototypes (anim.cursor.cursor_proto)."""
    nev = np.array([len(p[4]) for p in protos], np.int64)
    first = np.concatenate(([0], np.cumsum(nev)[:-1])).astype(np.int64) if len(protos) else np.zeros(0, np.int64)
    frames = np.array([int(f) for p in protos for f in p[4]], np.int64)
    return ClipFacts(np.array([p[1] for p in protos], np.int64), np.array([p[7] for p in protos], np.float32),
                     np.array([p[6] for p in protos], np.float32), np.array([p[5] for p in protos], np.int64),
                     nev, first, frames)


def check_engine(tables: dict[str, Any], humans: Any, *, pool_out: np.ndarray, n_out: int,
                 pool_capacity: int, facts: ClipFacts) -> dict[str, np.ndarray]:
    """Check the compiled engine's saved tables (scratch copies, never the world's).

    In: ``tables`` the cursor, fade, gait and task Tables; ``humans`` the HumanTable
    (with its ``gen`` and ``_free`` lists); the pool's flags and count and the pool's size
    (the Game's option); ``facts`` the bank's clips' numbers (``clip_facts``). Out: the
    rows in use of each table, by name.
    Raises StateError naming the first fault (see the module docstring)."""
    cur, fad, gai, tsk = (tables[n] for n in ("cursors", "fades", "gaits", "tasks"))
    live = {n: check_table_frame(n, t) for n, t in tables.items()}
    nb = len(facts.end)
    # -- cursors: the clip's own numbers, a time within the clip, the next event in its list
    crows = live["cursors"]
    bank = cur.bank[crows].astype(np.int64)
    _ints_in("cursors.bank", bank, crows, 0, nb - 1)
    _bools("cursors.at_end", cur.at_end[crows], crows)
    if len(crows):
        end, limit, dur, evf0, nev = (facts.end[bank], facts.limit[bank], facts.dur[bank], facts.evf0[bank],
                                      facts.nev[bank])
        for col, want in (("end", end), ("evf0", evf0)):
            got = getattr(cur, col)[crows].astype(np.int64)
            if (got != want).any():
                r = _first(got != want, crows)
                raise StateError(f"cursors.{col}[{r}] is not its clip's ({col} of bank clip "
                                 f"{int(bank[int(np.flatnonzero(got != want)[0])])})")
        for col, want in (("limit", limit), ("dur", dur)):
            got = getattr(cur, col)[crows]
            if (got.view(np.int32) != want.view(np.int32)).any():
                r = _first(got.view(np.int32) != want.view(np.int32), crows)
                raise StateError(f"cursors.{col}[{r}] is not its clip's")
        check_finite("cursors.t", cur.t[crows], crows, 0.0, float(dur.max()) if len(dur) else 0.0)
        over = cur.t[crows] > dur
        if over.any():
            raise StateError(f"cursors.t[{_first(over, crows)}]: past its clip's duration")
        _ints_in("cursors.frame", cur.frame[crows].astype(np.int64) - end, crows, -(1 << 31), 0)
        _ints_in("cursors.frame", cur.frame[crows].astype(np.int64), crows, 0, 1 << 30)
        ev = cur.ev[crows].astype(np.int64)
        bad = (ev < 0) | (ev > nev)
        if bad.any():
            raise StateError(f"cursors.ev[{_first(bad, crows)}] = {int(ev[int(np.flatnonzero(bad)[0])])}: past "
                             "its clip's events")
        evf = cur.evf[crows].astype(np.int64)
        more = ev < nev
        want_f = np.full(len(crows), int(NO_EVENT), np.int64)
        want_f[more] = facts.frames[facts.first[bank[more]] + ev[more]]
        bad = evf != want_f
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise StateError(f"cursors.evf[{int(crows[i])}] = {int(evf[i])}: not the frame of its next event "
                             f"({int(want_f[i])})")
    # -- fades and gaits: finite numbers, a gait's pair and clips in range
    frows = live["fades"]
    check_finite("fades.el", fad.el[frows], frows, 0.0, MAX_SECONDS)
    check_finite("fades.dur", fad.dur[frows], frows, 0.0, MAX_SECONDS)
    grows = live["gaits"]
    check_finite("gaits.value", gai.value[grows], grows, 0.0, 4.0)
    check_finite("gaits.target", gai.target[grows], grows, 0.0, 4.0)
    _ints_in("gaits.lower", gai.lower[grows].astype(np.int64), grows, 0, 3)
    _ints_in("gaits.leader", gai.leader[grows].astype(np.int64), grows, 0, 1)
    for col in ("b0", "b1", "b2", "b3", "b4"):
        _ints_in(f"gaits.{col}", getattr(gai, col)[grows].astype(np.int64), grows, 0, nb - 1)
    # -- tasks: a known type, finite numbers, links by type, one owner per cursor / fade / gait row
    trows = live["tasks"]
    ty = tsk.type[trows].astype(np.int64)
    known = np.isin(ty, np.array(sorted(_CURSORS), np.int64))
    if not known.all():
        raise StateError(f"tasks.type[{_first(~known, trows)}] = {int(ty[int(np.flatnonzero(~known)[0])])}: "
                         "not a task type")
    for col in ("released", "handed_over", "callback", "placed"):
        _bools(f"tasks.{col}", getattr(tsk, col)[trows], trows)
    check_finite("tasks.rate", tsk.rate[trows], trows, 0.0, MAX_RATE)
    check_finite("tasks.speed", tsk.speed[trows], trows, 0.0, MAX_RATE)
    check_finite("tasks.blend", tsk.blend[trows], trows, 0.0, MAX_SECONDS)
    check_finite("tasks.value", tsk.value[trows], trows, -MAX_VALUE, MAX_VALUE)
    check_finite("tasks.target", tsk.target[trows], trows, -MAX_VALUE, MAX_VALUE)
    _ints_in("tasks.window", tsk.window[trows].astype(np.int64), trows, 0, 1)
    _ints_in("tasks.centre", tsk.centre[trows].astype(np.int64), trows, 0, 7)
    _ints_in("tasks.sampling", tsk.sampling[trows].astype(np.int64), trows, 0, 1)
    _ints_in("tasks.wraps", tsk.wraps[trows], trows, 0, MAX_COUNT)
    _ints_in("tasks.held", tsk.held[trows], trows, 0, (1 << 63) - 1)      # record +0x08's bits: 0 to 2^63 - 1
    owned = []
    clive = cur.live
    for t_, (must, may) in _CURSORS.items():
        sel = trows[ty == t_]
        for col in ("c0", "c1", "c2", "c3"):
            vals = getattr(tsk, col)[sel]
            if col in must:
                _links(f"tasks.{col}", vals, sel, clive, "cursor", allow_none=False)
            elif col in may:
                _links(f"tasks.{col}", vals, sel, clive, "cursor", allow_none=True)
            else:
                bad = vals != NO_ROW
                if bad.any():
                    raise StateError(f"tasks.{col}[{_first(bad, sel)}]: a task of type {t_} has no such cursor")
            owned.append(vals[vals != NO_ROW])
    _once("tasks.c0-c3", np.concatenate(owned) if owned else np.zeros(0, np.int64), "cursor")
    for t_, table, what in ((int(TaskType.FADE), fad, "fade"), (int(TaskType.GAIT), gai, "gait")):
        sel = trows[ty == t_]
        aux = tsk.aux[sel]
        _links("tasks.aux", aux, sel, table.live, what, allow_none=False)
        _once("tasks.aux", aux, what)
    other = trows[(ty != int(TaskType.FADE)) & (ty != int(TaskType.GAIT))]
    if (tsk.aux[other] != NO_ROW).any():
        raise StateError(f"tasks.aux[{_first(tsk.aux[other] != NO_ROW, other)}]: a task of its type has no aux row")
    tlive = tsk.live
    nxt = tsk.nxt[trows]
    is_next = np.isin(ty, np.array(_NEXT_TYPES, np.int64))
    _links("tasks.nxt", nxt[is_next], trows[is_next], tlive, "task", allow_none=True)
    if (nxt[~is_next] != NO_ROW).any():
        raise StateError(f"tasks.nxt[{_first(nxt[~is_next] != NO_ROW, trows[~is_next])}]: a task of its type "
                         "has no next task")
    inc = tsk.incoming[trows]
    is_fade = ty == int(TaskType.FADE)
    _links("tasks.incoming", inc[is_fade], trows[is_fade], tlive, "task", allow_none=True)
    if (inc[~is_fade] != NO_ROW).any():
        raise StateError(f"tasks.incoming[{_first(inc[~is_fade] != NO_ROW, trows[~is_fade])}]: only a fade "
                         "has an incoming task")
    # -- humans: depth and queue within their rows, each task in one place
    hcap = humans.capacity
    _bools("humans.live", humans.live)
    hrows = np.flatnonzero(humans.live)
    free = list(humans._free)
    if len(humans.gen) != hcap or any(g.__class__ is not int or g < 0 for g in humans.gen):
        raise StateError(f"humans.gen: not {hcap} generations >= 0")
    if sorted(free) != sorted(set(free)) or len(free) + len(hrows) != hcap or \
            any(r.__class__ is not int or not 0 <= r < hcap or humans.live[r] for r in free):
        raise StateError(f"humans.free: not the {hcap - len(hrows)} rows not in use, each once")
    depth = humans.depth[hrows]
    _ints_in("humans.depth", depth, hrows, 0, HumanTable.STACK_ROWS)
    queued = humans.queued[hrows]
    _ints_in("humans.queued", queued, hrows, 0, HumanTable.QUEUE_ROWS)
    check_finite("humans.speed", humans.speed[hrows], hrows, 0.0, MAX_RATE)
    _ints_in("humans.anim", humans.anim[hrows], hrows, -1, (1 << 31) - 1)
    _ints_in("humans.flags", humans.flags[hrows], hrows, 0, (1 << 63) - 1)
    on = np.arange(HumanTable.STACK_ROWS)[None, :] < depth[:, None]
    stack = humans.stack[hrows][on]
    _links("humans.stack", stack, np.repeat(hrows, depth), tlive, "task", allow_none=False)
    on = np.arange(HumanTable.QUEUE_ROWS)[None, :] < queued[:, None]
    queue = humans.queue[hrows][on]
    _links("humans.queue", queue, np.repeat(hrows, queued), tlive, "task", allow_none=False)
    # a place each: a stack slot, a queue slot or a clip's next task (a fade's incoming task
    # is a reference to a task on the same stack, not a place)
    placed = np.concatenate([stack, queue, nxt[is_next & (nxt != NO_ROW)]])
    _once("tasks (stacks, queues and next tasks)", placed, "task")
    _chains_end(tsk, trows, ty)
    # -- the pool: one flag per task row, every task in use counted out
    if pool_out.dtype != np.bool_ or pool_out.ndim != 1:
        raise StateError("pool.out: not one bool per task row")
    _bools("pool.out", pool_out)
    if not (isinstance(n_out, int) and n_out == int(pool_out.sum()) and n_out <= pool_capacity):
        raise StateError(f"pool.n_out = {n_out!r}: not the {int(pool_out.sum())} flags set (at most {pool_capacity})")
    out_rows = np.flatnonzero(pool_out)
    if len(out_rows) and (out_rows[-1] >= tsk.capacity or not tlive[out_rows].all()):
        raise StateError("pool.out: a task counted out that is not a task row in use")
    return live


# The task types whose row names a partner (PairedClipTask, PairedHoldTask) and the one whose
# row holds eight clips (DirectionTask).
_PAIRED = (int(TaskType.PAIRED_CLIP), int(TaskType.PAIRED_HOLD))
_WRAPS = (int(TaskType.LOOP), int(TaskType.GAIT))


def check_ids(tsk: Any, humans: Any, values: list, uses: list, free: list, n_banks: int) -> None:
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
    Raises StateError naming the first fault."""
    n = len(values)
    if len(uses) != n or any(u.__class__ is not int or u < 0 for u in uses):
        raise StateError(f"calls.uses: not {n} counts >= 0")
    if len(set(free)) != len(free) or any(i.__class__ is not int or not 0 <= i < n or values[i] is not None
                                          or uses[i] for i in free):
        raise StateError("calls.free: not free ids (no value, no use), each once")
    is_name = np.array([v.__class__ is str for v in values], np.bool_)
    is_call = np.array([v is not None and v.__class__ is not str for v in values], np.bool_)
    counts = np.zeros(n, np.int64)
    trows = np.flatnonzero(tsk.live)
    ty = tsk.type[trows].astype(np.int64)
    hrows = np.flatnonzero(humans.live)
    for name, a, rows, kind in (("tasks.on_end", tsk.on_end, trows, is_call),
                                ("tasks.on_wrap", tsk.on_wrap, trows, is_call),
                                ("tasks.partner_name", tsk.partner_name, trows, is_name),
                                ("humans.on_report", humans.on_report, hrows, is_call)):
        ids = a[rows].astype(np.int64)
        _ints_in(name, ids, rows, -1, n - 1)
        has = ids >= 0
        bad = np.zeros(len(ids), np.bool_)
        bad[has] = ~kind[ids[has]]
        if bad.any():
            what = "a name" if kind is is_name else "a callback"
            raise StateError(f"{name}[{_first(bad, rows)}]: not the id of {what}")
        np.add.at(counts, ids[has], 1)
    wrap = tsk.on_wrap[trows] >= 0
    bad = wrap & ~np.isin(ty, np.array(_WRAPS, np.int64))
    if bad.any():
        raise StateError(f"tasks.on_wrap[{_first(bad, trows)}]: a task of its type has no wrap callback")
    bad = wrap != tsk.callback[trows].astype(np.bool_)
    if bad.any():
        raise StateError(f"tasks.on_wrap[{_first(bad, trows)}]: a wrap callback where tasks.callback says none, "
                         "or the reverse")
    partner = tsk.partner[trows].astype(np.int64)
    _ints_in("tasks.partner", partner, trows, -1, (1 << 63) - 1)
    named = tsk.partner_name[trows] >= 0
    paired = np.isin(ty, np.array(_PAIRED, np.int64))
    bad = ((partner >= 0) | named) & ~paired
    if bad.any():
        raise StateError(f"tasks.partner[{_first(bad, trows)}]: a task of its type has no partner")
    bad = (partner >= 0) & named
    if bad.any():
        raise StateError(f"tasks.partner[{_first(bad, trows)}]: both a handle and a name")
    banks = tsk.dir_banks[trows].astype(np.int64)
    is_dir = ty == int(TaskType.DIRECTION)
    bad = is_dir & ((banks < 0) | (banks >= n_banks)).any(axis=1)
    if bad.any():
        raise StateError(f"tasks.dir_banks[{_first(bad, trows)}]: not a direction task's eight clips of the bank "
                         f"({n_banks} known)")
    bad = ~is_dir & (banks != NO_ROW).any(axis=1)
    if bad.any():
        raise StateError(f"tasks.dir_banks[{_first(bad, trows)}]: a task of its type has no clips there")
    if (counts != np.array(uses, np.int64)).any():
        i = int(np.flatnonzero(counts != np.array(uses, np.int64))[0])
        raise StateError(f"calls.uses[{i}] = {uses[i]}: {int(counts[i])} rows name it")


def _chains_end(tsk: Table, trows: np.ndarray, ty: np.ndarray) -> None:
    """Every chain of next tasks ends (no task is its own later next task)."""
    nxt = tsk.nxt
    steps = np.zeros(len(trows), np.int64)
    cur = trows.copy()
    for _ in range(len(trows) + 1):
        nx = nxt[cur]
        going = nx != NO_ROW
        if not going.any():
            return
        cur = np.where(going, nx, cur)
        steps += going
    raise StateError(f"tasks.nxt[{int(trows[int(np.argmax(steps))])}]: a chain of next tasks that never ends")
