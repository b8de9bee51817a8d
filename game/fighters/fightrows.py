"""The fight rules' state as table rows: the snapshot file's form of ``Fight.save_state``
and of the fight log.

A snapshot file carries the fight rules' state as four tables, declared as the engine's
are (``TABLES``: columns laid out by anim.engine.store.block_layout, a range rule per
column in ``RANGES``, checked in the same compiled pass as the engine's rows:
anim.engine.snapcheck.check_saved), and a handful of counters and names:

- ``fighters``: a row per human the rules know (its start and its K.O.);
- ``ais``: a row per controller, live where its state is a ``FighterAI``'s (its random
  generator's 625 words, its tick, its hold's strikes, whether it is on);
- ``pending``: the hit windows and move ends due this update;
- ``log``: the log's ring (fightlog.FightLog's rows).

``rows_of`` writes a ``save_state`` into the tables' blocks and gives the counters;
``state_of`` reads checked blocks and counters back into a ``save_state`` for a Game's
Fight, checking what the rows' ranges cannot (the entities, the move ends' kinds, the
log's texts and ring); ``log_of`` does the log's. Rejected: ``RowsRefused`` (a
ValueError) naming the table or value and the field. Original: none (ours).
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import Any

import numpy as np

from scuffle.anim.base.limits import MAX_COORD, MAX_HEALTH
from scuffle.anim.data.rangelist import NUM_ANIM_IDS
from scuffle.anim.engine.interpret import kcall
from scuffle.anim.engine.snapkernel import Kind as K, check_tagged_rows
from scuffle.anim.engine.store import block_layout
from scuffle.game.fighters.airows import AIRow, copy_rows
from scuffle.game.fighters.fightlog import COLUMNS as LOG_COLUMNS, LOG_EXTRAS, MAX_TEXT, MAX_TEXTS

__all__ = ["TABLES", "COLUMNS", "RANGES", "RowsRefused", "rows_of", "state_of", "log_rows", "log_of", "capacity",
           "END_WHATS", "MAX_PENDING", "MAX_ROWS", "Pending", "new_rows_kept", "INT_ONLY"]

_I63 = (1 << 63) - 1
MAX_COUNTER = 1 << 62
MAX_PENDING = 1 << 16
# the most rows a file's fight table may have (the log's is the Fight's ring)
MAX_ROWS = {"fighters": 1 << 16, "ais": 1 << 10, "pending": MAX_PENDING}
# the moves' ends a pending end names, by its ``what`` code (combat.END_WHATS is these)
END_WHATS = ("attack", "connect", "get_up", "grab_attempt", "let_go", "react", "throw")
_WHAT = {w: i for i, w in enumerate(END_WHATS)}


class Pending(IntEnum):
    """What a ``pending`` row is (its ``kind`` column)."""

    WINDOW = 0          # a hit window of ``move`` opens
    END = 1             # a move of ``what`` ends (``serial``: the move's)


_WINDOW, _END = int(Pending.WINDOW), int(Pending.END)

TABLES = ("fighters", "ais", "pending", "log")
COLUMNS: dict[str, dict] = {
    "fighters": {"live": np.bool_, "entity": np.int64, "started": np.bool_, "start": (np.float64, (3,)),
                 "heading": np.float64, "health": np.float64, "ko": np.int64},
    # a FighterAI's random generator: its 625 words (the last its position), as saved
    "ais": {"live": np.bool_, "mt": (np.int32, (625,)), "has_gauss": np.bool_, "gauss": np.float64,
                    "tick": np.int64, "hold": np.int64, "enabled": np.bool_},
    "pending": {"live": np.bool_, "kind": np.int8, "entity": np.int64, "move": np.int64, "what": np.int8,
                "serial": np.int64},
    "log": LOG_COLUMNS,
}
_FINITE = (K.FLOAT, -1.7e308, 1.7e308)
# What a row in use may hold, per column (anim.engine.snapcheck.RANGES' form); the
# entities, the log's texts and the cross-column rules: ``state_of`` / ``log_of``.
RANGES: dict[str, dict] = {
    "fighters": {"entity": (K.INT, 0, MAX_COUNTER), "started": (K.BOOL,), "start": (K.FLOAT, -MAX_COORD, MAX_COORD),
                 "heading": (K.FLOAT, -MAX_COORD, MAX_COORD), "health": (K.FLOAT, 0.0, MAX_HEALTH),
                 "ko": (K.INT, -1, MAX_COUNTER)},
    "ais": {"mt": (K.ANY,), "has_gauss": (K.BOOL,), "gauss": _FINITE, "tick": (K.INT, 0, MAX_COUNTER - 1),
                    "hold": (K.INT, 0, 16), "enabled": (K.BOOL,)},
    "pending": {"kind": (K.SET, 0b11, "a window (0) or an end (1)"), "entity": (K.INT, 0, MAX_COUNTER),
                "move": (K.INT, 0, NUM_ANIM_IDS - 1), "what": (K.INT, -1, len(END_WHATS) - 1),
                "serial": (K.INT, 0, _I63)},
    "log": {"update": (K.INT, 0, MAX_COUNTER), "human": (K.INT, 0, MAX_TEXTS - 1), "what": (K.INT, 0, MAX_TEXTS - 1),
            "n": (K.INT, 0, LOG_EXTRAS), "kind": (K.INT, 0, 4), "value": (K.ANY,)},
}


class RowsRefused(ValueError):
    """The fight's rows or counters do not fit (one line: where, then what)."""


def capacity(name: str, n: int) -> int:
    """A fight table's rows for ``n`` entries: at least one, and the pending hits' a power
    of two (a file's layout then rarely changes between two snapshots)."""
    if name == "pending":
        cap = 16
        while cap < n:
            cap *= 2
        return cap
    return max(1, n)


def _scratch(name: str, cap: int, kept: list | None) -> tuple[np.ndarray, dict]:
    """A zeroed block of table ``name`` at ``cap`` rows and its columns' views, kept in the
    calling Fight's own ``kept`` (``new_rows_kept``; None: a new one), never another's:
    the caller packs it at once, and another Game may be writing its own meanwhile."""
    blocks = kept[2] if kept is not None else {}
    got = blocks.get((name, cap))
    if got is None:
        if len(blocks) > 8:
            blocks.clear()
        lay, size = block_layout(COLUMNS[name], cap)
        block = np.zeros(size, np.uint8)
        views = {c: block[o:o + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)
                 for c, (o, dt, shape) in lay.items() if c != "n_free"}
        got = blocks[(name, cap)] = (block, views)
    else:
        got[0][:] = 0
    return got


def rows_of(state: tuple, controllers: list, kept: list | None = None) -> tuple[dict, dict]:
    """A ``Fight.save_state`` as the file's tables ({name: (rows, block)}, ``log`` left
    out: ``log_rows``; the blocks are scratch, written over by the next call: pack or
    hash them at once) and counters (plain data). ``controllers``: the Fight's; a state
    kept as a FighterAI keeps it goes in its row (whatever the controller: a Game's
    checksum is its state's, not its controllers' kinds), another (plain) in the counters.
    ``kept``: the calling Fight's own ``[counters, fighters]`` made last (its
    ``_rows_kept``; None: nothing kept), given again while the same: the fighters' rows
    while the K.O.s and the starts are the same objects (a state's values are never
    written to), the counters while the counts and their objects are the same."""
    ko, ko_at, starts, stats, pending, ctl = state
    out = {"fighters": _fighters_rows(ko, starts, kept)}
    cap = capacity("ais", len(ctl))
    block, c = _scratch("ais", cap, kept)
    plain: list = []
    first = ctl[0] if ctl else None
    if first.__class__ is AIRow and all(s.__class__ is AIRow and s.table is first.table for s in ctl):
        # a Game's own snapshot: the AIs' rows of its saved table, copied as they lie
        copy_rows(first.table, [s.row for s in ctl], block, COLUMNS["ais"], cap)
        plain = [None] * len(ctl)
    else:
        for r, s in enumerate(ctl):
            if s.__class__ is AIRow:           # the AI's row of a saved table, copied
                copy_rows(s.table, [s.row], block, COLUMNS["ais"], cap, at=r)
                plain.append(None)
            elif _ai_state(s):                   # a FighterAI's, or one kept as a FighterAI keeps it
                (_, words, gauss), tick, hold, on = s
                c["live"][r] = True
                c["mt"][r] = np.frombuffer(words, np.int32)
                if gauss is not None:
                    c["has_gauss"][r], c["gauss"][r] = True, gauss
                c["tick"][r], c["hold"][r], c["enabled"][r] = tick, hold, on
                plain.append(None)
            else:
                plain.append(s)
    out["ais"] = (cap, block)
    cap = capacity("pending", len(pending))
    block, c = _scratch("pending", cap, kept)
    for r, item in enumerate(pending):
        c["live"][r] = True
        c["entity"][r] = item[1]
        if item[0] == "window":
            c["kind"][r], c["move"][r], c["what"][r] = _WINDOW, item[2], -1
        else:
            c["kind"][r], c["what"][r], c["serial"][r] = _END, _WHAT[item[2]], item[3]
    out["pending"] = (cap, block)
    grabs, strikes, throws, damage, refused, kinds, logged, round_, rounds = stats
    damage = float(damage)
    # (the same counts, damage to the bit, counts by kind and rounds objects and no plain
    # controller state as the last call's: its counters again, which no reader writes to)
    key = (ko_at, grabs, strikes, throws, refused, logged, round_, damage, math.copysign(1.0, damage), len(plain))
    whole = {grabs.__class__, strikes.__class__, throws.__class__, refused.__class__, logged.__class__,
             round_.__class__, int if ko_at is None else ko_at.__class__}
    keep = whole == INT_ONLY and plain.count(None) == len(plain)
    last = kept[0] if kept is not None else None
    if keep and last is not None and last[1] is kinds and last[2] is rounds and last[0] == key:
        return out, last[3]
    counters = {"ko_at": ko_at, "counts": [grabs, strikes, throws, refused, logged, round_], "damage": damage,
                "kinds": dict(kinds), "rounds": [dict(x) for x in rounds], "controllers": plain}
    if kept is not None:
        kept[0] = (key, kinds, rounds, counters) if keep else None
    return out, counters


INT_ONLY = frozenset({int})  # (whole numbers only: True == 1 would pass for 1, 1.0 too)


def new_rows_kept() -> list:
    """A Fight's own ``kept`` for ``rows_of`` and ``state_of``: [the counters made last
    (their key, the counts by kind and rounds objects, the counters), the fighters' rows
    written last (the K.O.s, the starts, their sizes, (rows, block)), the AIs' and pending
    tables' scratch blocks by (name, rows), the file's counters checked last]."""
    return [None, None, {}, None]


def _fighters_rows(ko: dict, starts: dict, kept: list | None) -> tuple[int, np.ndarray]:
    """The ``fighters`` table's (rows, block) of a state's K.O.s and starts (a block of its
    own, kept in ``kept[1]`` while they are the same objects of the same sizes)."""
    last = kept[1] if kept is not None else None
    if last is not None and last[0] is ko and last[1] is starts and last[2] == (len(ko), len(starts)):
        return last[3]
    ents = sorted(set(starts) | set(ko))
    cap = capacity("fighters", len(ents))
    lay, size = block_layout(COLUMNS["fighters"], cap)
    block = np.zeros(size, np.uint8)
    c = {n: np.ndarray(shape, dt, block, o) for n, (o, dt, shape) in lay.items() if n != "n_free"}
    for r, e in enumerate(ents):
        c["live"][r] = True
        c["entity"][r] = e
        s = starts.get(e)
        if s is not None:
            c["started"][r] = True
            c["start"][r] = s[0]
            c["heading"][r] = s[1]
            c["health"][r] = s[2]
        c["ko"][r] = ko.get(e, -1)
    if kept is not None:
        kept[1] = (ko, starts, (len(ko), len(starts)), (cap, block))
    return cap, block


def _ai_state(s: Any) -> bool:
    """``s`` a state as FighterAI.save_state gives it: ((3, 2,500 bytes, None or a float),
    tick, hold's strikes, enabled)."""
    return s.__class__ is tuple and len(s) == 4 and s[0].__class__ is tuple and len(s[0]) == 3 and \
        s[0][0] == 3 and s[0][1].__class__ is bytes and len(s[0][1]) == 2500 and \
        (s[0][2] is None or s[0][2].__class__ is float) and s[1].__class__ is int and \
        s[2].__class__ is int and s[3].__class__ is bool


def log_rows(saved: Any) -> tuple[np.ndarray, list]:
    """The log's block and counters ([head, count, texts]) of a ``Fight.save_log``."""
    _, block, head, count, texts, cap = saved
    return block, [head, count, list(texts)]


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise RowsRefused(f"{where}: {what}")


def _whole(v: Any, where: str, lo: int, hi: int) -> int:
    if not (v.__class__ is int and lo <= v <= hi):
        r = repr(v)                        # (a stranger's value: quoted, cut short)
        raise RowsRefused(f"{where}: {r if len(r) <= 40 else r[:37] + '...'} is not a whole number {lo} to {hi}")
    return v


def _check_counters(counters: Any) -> None:
    """The fight's counters' schema (``state_of``'s; the controllers' states are checked
    there, against the Fight's controllers). Rejected: RowsRefused naming the field."""
    w = "values.fight"
    _need(isinstance(counters, dict) and set(counters) == {"ko_at", "counts", "damage", "kinds", "rounds",
                                                            "controllers"}, w, "not the fight's counters")
    ko_at = counters["ko_at"]
    _need(ko_at is None or (ko_at.__class__ is int and 0 <= ko_at <= MAX_COUNTER), f"{w}.ko_at", "not an update")
    counts = counters["counts"]
    _need(isinstance(counts, list) and len(counts) == 6, f"{w}.counts", "not the fight's six counts")
    for i, x in enumerate(counts):
        _whole(x, f"{w}.counts[{i}]", 0, MAX_COUNTER)
    damage = counters["damage"]
    _need(damage.__class__ is float and math.isfinite(damage) and abs(damage) <= 1e15, f"{w}.damage",
          "not a finite number")
    kinds = counters["kinds"]
    _need(isinstance(kinds, dict) and len(kinds) <= MAX_TEXTS and all(
        k.__class__ is str and len(k) <= MAX_TEXT and n.__class__ is int and 0 <= n <= MAX_COUNTER
        for k, n in kinds.items()), f"{w}.kinds", "not counts by kind")
    rounds = counters["rounds"]
    _need(isinstance(rounds, list) and len(rounds) <= 1 << 20 and all(
        isinstance(r, dict) and all(k.__class__ is str for k in r) for r in rounds), f"{w}.rounds",
          "not the finished rounds")


def state_of(fight: Any, cols: dict, counters: Any) -> tuple:
    """The ``save_state`` of checked rows (``cols``: table name -> an object whose
    attributes are its columns, e.g. snapfile's scratch rows) and counters, for ``fight``
    (a Fight). Rejected (RowsRefused naming the field): counters that are not the
    fight's, an entity that is not a fighter of the Game, a controller's state where the
    Game's controller keeps none or another kind, what the rows' ranges cannot say."""
    w = "values.fight"
    # (the counters the Fight checked last: a file's values, which no reader writes to, so
    # the same object read again is the same bytes read again)
    kept = getattr(fight, "_rows_kept", None)
    if kept is None or counters is not kept[3]:
        _check_counters(counters)
        if kept is not None:
            kept[3] = counters
    ko_at, counts, damage, kinds, rounds = (counters["ko_at"], counters["counts"], counters["damage"],
                                            counters["kinds"], counters["rounds"])
    is_fighter = fight._is_fighter
    # -- the fighters: a row each, one per entity
    t = cols["fighters"]
    ko, starts = _fighters_of(t, is_fighter, getattr(fight, "_fighters_read", None))
    # -- the controllers: a FighterAI's state in its row, another's in the counters
    mine = fight.controllers
    plain = counters["controllers"]
    if not (isinstance(plain, list) and len(plain) == len(mine)):
        raise RowsRefused(f"{w}.controllers: not the {len(mine)} controllers of this Game")
    t = cols["ais"]
    live = t.live.tolist()
    if len(live) < len(mine) or any(live[len(mine):]):
        raise RowsRefused(f"table.ais.live: rows past the {len(mine)} controllers of this Game")
    ctl: list = []
    # the Fight's ais rows read last: [(their block's bytes, each live row's state by row)],
    # given again for the same bytes (a state's values are never written to: an AI handed
    # its state again knows it by identity)
    ais_read = getattr(fight, "_ais_read", None)
    known: Any = None                  # the rows' states made of the same bytes before (by row)
    made: dict = {}
    raw = None
    if any(live):
        block = getattr(t, "block", None)
        raw = block.tobytes() if block is not None else None
        got = ais_read[0] if ais_read is not None else None
        if raw is not None and got is not None and got[0] == raw:
            known = got[1]
        else:
            has_gauss, gauss, tick, hold, enabled = (t.has_gauss.tolist(), t.gauss.tolist(), t.tick.tolist(),
                                                     t.hold.tolist(), t.enabled.tolist())
            mt = t.mt
    for r, obj in enumerate(mine):
        is_ai = getattr(obj, "ROW_STATE", False)          # a FighterAI: its state is always a row
        if live[r]:
            if plain[r] is not None:
                raise RowsRefused(f"table.ais[{r}]: a row and a plain state for one controller")
            st: Any
            if known is not None:
                st = known[r]
            else:
                words = mt[r].tobytes()
                if int.from_bytes(words[-4:], "little") > 624:
                    raise RowsRefused(f"table.ais.mt[{r}]: a position past 624")
                st = made[r] = ((3, words, gauss[r] if has_gauss[r] else None), tick[r], hold[r], enabled[r])
            if is_ai:
                ctl.append(st)
                continue
        elif is_ai:
            raise RowsRefused(f"table.ais[{r}]: no FighterAI state for this Game's FighterAI")
        else:
            st = plain[r]
        fits = getattr(obj, "state_fits", None)
        why = fits(st) if fits is not None else (None if st is None else "a state for a controller without one")
        if why is not None:
            raise RowsRefused(f"{w}.controllers[{r}]: {why}")
        ctl.append(st)
    if raw is not None and known is None and ais_read is not None:
        ais_read[0] = (raw, made)
    # -- the pending windows and ends: the first rows
    t = cols["pending"]
    live = t.live.tolist()
    n = sum(live)
    if n > MAX_PENDING or not all(live[:n]):
        raise RowsRefused("table.pending.live: not the first rows in use")
    pending: list[tuple[Any, ...]] = []
    if n:
        kind, ent, move, what, serial = (t.kind[:n].tolist(), t.entity[:n].tolist(), t.move[:n].tolist(),
                                         t.what[:n].tolist(), t.serial[:n].tolist())
        for r in range(n):
            if not is_fighter(ent[r]):
                raise RowsRefused(f"table.pending.entity[{r}] = {ent[r]}: not a human of the Game")
            if kind[r] == _WINDOW:
                if not (what[r] == -1 and serial[r] == 0):
                    raise RowsRefused(f"table.pending[{r}]: a hit window with a move end's fields")
                pending.append(("window", ent[r], move[r]))
            else:
                if not (what[r] >= 0 and move[r] == 0):
                    raise RowsRefused(f"table.pending.what[{r}]: not a move's end")
                pending.append(("end", ent[r], END_WHATS[what[r]], serial[r]))
    stats = (counts[0], counts[1], counts[2], damage, counts[3], dict(kinds), counts[4], counts[5],
             tuple(dict(x) for x in rounds))
    return (ko, ko_at, starts, stats, tuple(pending), tuple(ctl))


def _fighters_of(t: Any, is_fighter: Any, kept: Any) -> tuple[dict, dict]:
    """The K.O.s and starts ({entity: update}, {entity: (position, heading, health)}) of
    the checked ``fighters`` rows ``t`` (``is_fighter``: the Game's test of an entity).
    ``kept``: the ``_FightersRead`` of the Fight that reads them, which gives again the
    K.O.s and starts it made of the same bytes of rows (a state's values are never written
    to: the Fight then holds them already and writes them back as they are); the entities
    are checked again each time (the Game's fighters may have changed). Rejected
    (RowsRefused naming the field): an entity that is not a fighter of the Game or named
    twice, a start whose health is not above 0, a row neither a start nor a K.O."""
    block = getattr(t, "block", None)
    raw = block.tobytes() if kept is not None and block is not None else None
    if raw is not None and kept.raw == raw:
        for r, e in kept.entities:
            if not is_fighter(e):
                raise RowsRefused(f"table.fighters.entity[{r}] = {e}: not a human of the Game, or named twice")
        return kept.ko, kept.starts
    live = t.live.tolist()
    ents, started, start, heading, health, kos = (t.entity.tolist(), t.started.tolist(), t.start.tolist(),
                                                  t.heading.tolist(), t.health.tolist(), t.ko.tolist())
    ko, starts = {}, {}
    for r, on in enumerate(live):
        if not on:
            continue
        e = ents[r]
        if e in ko or e in starts or not is_fighter(e):
            raise RowsRefused(f"table.fighters.entity[{r}] = {e}: not a human of the Game, or named twice")
        if started[r]:
            if not health[r] > 0.0:
                raise RowsRefused(f"table.fighters.health[{r}]: a start's health must be above 0")
            starts[e] = (tuple(start[r]), heading[r], health[r])
        if kos[r] >= 0:
            ko[e] = kos[r]
        elif not started[r]:
            raise RowsRefused(f"table.fighters[{r}]: neither a start nor a K.O.")
    if raw is not None:
        kept.raw, kept.ko, kept.starts = raw, ko, starts
        kept.entities = [(r, ents[r]) for r, on in enumerate(live) if on]     # (row order: a refusal names its row)
    return ko, starts


class FightersRead:
    """A Fight's last ``fighters`` rows read from a file (``_fighters_of``): their bytes,
    the K.O.s and starts made of them, and the (row, entity) of each row in use."""

    __slots__ = ("raw", "ko", "starts", "entities")

    def __init__(self) -> None:
        self.raw: bytes | None = None
        self.ko: dict = {}
        self.starts: dict = {}
        self.entities: list = []


_TEXTS_CHECKED: list = [None]


def log_of(t: Any, counters: Any) -> tuple:
    """The log's file form ("file", block, head, count, texts, rows) of its checked rows
    (``t``: its columns as attributes, ``t.block`` the rows, kept as they are: a scratch
    of the file's) and counters [head, count,
    texts]. Rejected (RowsRefused naming the field): a ring that is not ``count`` rows in
    use from ``head`` on, a text index past the texts, an extra value that is not its
    kind's (a bool 0 or 1, a finite float, a text), values past an entry's count."""
    w = "values.fight_log"
    _need(isinstance(counters, list) and len(counters) == 3, w, "not [head, count, texts]")
    cap = len(t.live)
    head = _whole(counters[0], f"{w}.head", 0, cap - 1)
    count = _whole(counters[1], f"{w}.count", 0, cap)
    texts = counters[2]
    if texts is not _TEXTS_CHECKED[0]:          # (the texts last checked: see _COUNTERS_CHECKED)
        _need(isinstance(texts, list) and len(texts) <= MAX_TEXTS and all(
            x.__class__ is str and len(x) <= MAX_TEXT for x in texts) and len(set(texts)) == len(texts),
              f"{w}.texts", "not distinct short texts")
        _TEXTS_CHECKED[0] = texts
    out = np.zeros(5, np.int64)
    code = kcall(check_tagged_rows, t.live.view(np.int8), head, count, t.n, t.kind, t.value, t.human, t.what,
                 len(texts), out)
    r = int(out[1])
    _need(code != 1, "table.log.live", f"not the {count} rows in use from row {head} on (row {r})")
    _need(code != 2, f"table.log.human[{r}]", f"a text index past the {len(texts)} texts")
    _need(code != 3, f"table.log.value[{r}, {int(out[2])}]",
          "a value that is not its kind's, or past the entry's count")
    return ("file", t.block, head, count, list(texts), cap)
