"""The fighter AIs' state as rows of a table, and a Mersenne Twister whose state is its row.

A FighterAI's state (its random generator's 625 words, its tick, its hold's strikes left,
whether it is on) is one row of a Table (anim.engine.store) with the columns ``COLUMNS``:
a private one-row table while the AI stands alone, then a row of its Fight's ``ai_rows``
table once the Fight runs it (``seat``). The Fight's table lies in the Game's snapshot
arena with the engine's tables (game.runtime.snapshot), so the Game's own snapshot and
restore carry the AIs' state in their one copy of the arena, with no Python per AI.

``RowRandom`` is MT19937 as CPython's ``random.Random`` runs it (the same seeding, the
same words, the same ``random()``, ``getrandbits``, ``randint`` and ``choice``: every
number equal), its 624 words and position kept in its row's ``mt`` column (the position
last, as ``getstate`` gives it). Drawing is Python over the row's words: a few
microseconds a number, and the AIs draw a few numbers every few updates. Original:
none (ours).
"""
from __future__ import annotations

import itertools
import random
from typing import Any, NamedTuple, Sequence, cast

import numpy as np

from scuffle.anim.engine.store import FRAME_COLUMNS, Table, block_layout

__all__ = ["COLUMNS", "RowRandom", "RowField", "AIRow", "ai_table", "row_state", "copy_rows", "MT_WORDS", "new_sid"]

MT_WORDS = 624                 # MT19937's state words (the row's ``mt`` has one more: the position)
_M = 397
_UPPER, _LOWER, _MATRIX_A = 0x80000000, 0x7FFFFFFF, 0x9908B0DF

# A row's columns: as the snapshot file's ``ais`` table has them (game.fighters.fightrows),
# without ``live`` (the Table's own), and ``sid``: an id of the 624 words, a new one
# (``new_sid``) whenever they change (a regeneration, a seed, a state put back), so that
# what is made of the words (their tempered values; FighterAI.save_state's copy, with the
# position and the gauss value) stands for every row with the same id (not in a file).
COLUMNS: dict[str, Any] = {"mt": (np.int32, (MT_WORDS + 1,)), "has_gauss": np.bool_, "gauss": np.float64, "tick": np.int64,
           "hold": np.int64, "enabled": np.bool_, "sid": np.int64}

_SIDS = itertools.count(1)
new_sid = _SIDS.__next__          # a state id never given before in this process


def ai_table(capacity: int = 2) -> Table:
    """A table of AI rows (``COLUMNS``), ``capacity`` rows to start with."""
    return Table(COLUMNS, capacity)


class RowField:
    """A number of an object's state kept in one column of its row: the owner has
    ``state_table`` (a Table with the column) and ``state_row``. A read gives the column's
    Python value (its fast view ``m_<column>``); a write stores ``convert(value)`` (None:
    the value as given, which the column's memoryview checks: a float for an int column
    raises TypeError). Rejected: as the column's memoryview rejects the value."""

    def __init__(self, column: str, doc: str, convert: Any = None) -> None:
        self.view = "m_" + column
        self.convert = convert
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj.state_table, self.view)[obj.state_row]

    def __set__(self, obj: Any, value: Any) -> None:
        conv = self.convert
        getattr(obj.state_table, self.view)[obj.state_row] = value if conv is None else conv(value)


def _twist(mt: np.ndarray) -> None:
    """MT19937's regeneration of the 624 words ``mt`` (uint32) in place, as CPython's
    genrand_uint32 runs it word by word: each word reads the next (not yet regenerated)
    and the one 397 on (regenerated already past the end), so four slices do it in order."""
    n, m = MT_WORDS, _M
    cut = n - m                                             # 227

    def part(lo: int, hi: int, far: np.ndarray) -> None:
        y = (mt[lo:hi] & _UPPER) | (mt[lo + 1:hi + 1] & _LOWER)
        mt[lo:hi] = far ^ (y >> 1) ^ ((y & 1) * _MATRIX_A).astype(np.uint32)

    part(0, cut, mt[m:n].copy())                            # the far words not regenerated yet
    part(cut, 2 * cut, mt[0:cut].copy())                    # the far words of the first slice
    part(2 * cut, n - 1, mt[cut:n - 1 - cut].copy())        # the second slice's
    y = (int(mt[n - 1]) & _UPPER) | (int(mt[0]) & _LOWER)
    mt[n - 1] = int(mt[m - 1]) ^ (y >> 1) ^ (_MATRIX_A if y & 1 else 0)


def _temper(words: np.ndarray) -> memoryview:
    """The tempered values (genrand_uint32's outputs) of 624 uint32 words, read as ints
    (a memoryview of uint32: 2.5 kB an AI where a list of ints takes 22 kB; at 10,000
    humans, 200 AIs, 4 MB of the crowd's memory)."""
    y = words.astype(np.uint32)
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y.data


class RowRandom(random.Random):
    """A ``random.Random`` (MT19937, the same numbers for the same seed or state) whose
    state is row ``row`` of ``table`` (``COLUMNS``'s ``mt``, ``has_gauss``, ``gauss``),
    so a copy of the table's block is a copy of the generator. ``rebind(table, row)``
    moves it onto another row (the row's words are its state from then on). In: a seed as
    ``random.Random`` takes it (None: from the system's randomness)."""

    def __init__(self, seed: Any = None, table: Table | None = None, row: int = -1) -> None:
        if table is None:
            table = ai_table(1)
            row = table.alloc()
        self._table, self._row = table, row
        self._kept: tuple | None = None
        self._out: tuple = (-1, None)           # (a words' id, their tempered values): _tempered
        # (a words' id, the words their regeneration gives, those words' tempered values):
        # made when a seed or a state put back stands at the end of its words, so that the
        # first draw, which regenerates them, copies them in (``_words``)
        self._ahead: tuple = (-1, None, None)
        super().__init__(seed)

    def rebind(self, table: Table, row: int) -> None:
        """Read the state from row ``row`` of ``table`` from now on (the caller copied it there)."""
        self._table, self._row = table, row
        self._kept = None

    # -- the state: the row's words
    def seed(self, a: Any = None, version: int = 2) -> None:
        """Seed as ``random.Random.seed`` does (its own seeding, then its state copied into the row)."""
        r = random.Random(a) if version == 2 else random.Random(0)
        if version != 2:
            r.seed(a, version)
        self.setstate(r.getstate())

    def getstate(self) -> tuple:
        """(3, the 625 words as ints, the gauss value): ``random.Random.getstate``'s form."""
        t, r = self._table, self._row
        words = tuple(t.mt[r].view(np.uint32).tolist())
        return (3, words, float(t.gauss[r]) if t.has_gauss[r] else None)

    def setstate(self, state: tuple) -> None:
        """Put back a ``getstate`` (``random.Random``'s form, version 3). Rejected
        (ValueError): another version, not 625 words, a position past 624."""
        version, words, gauss = state
        if version != 3 or len(words) != MT_WORDS + 1 or not 0 <= words[-1] <= MT_WORDS:
            raise ValueError("RowRandom.setstate: not a version 3 state of 625 words with a position <= 624")
        t, r = self._table, self._row
        t.mt[r].view(np.uint32)[:] = words
        t.has_gauss[r] = gauss is not None
        t.gauss[r] = 0.0 if gauss is None else gauss
        sid = t.sid[r] = new_sid()
        if words[-1] == MT_WORDS:               # the next draw regenerates: its words made now
            self.look_ahead(t.mt[r].view(np.uint32)[:MT_WORDS], sid)

    def look_ahead(self, words: np.ndarray, sid: int) -> None:
        """Make the regeneration of ``words`` (624 uint32, the state ``sid``) and its
        tempered values now, for the draw that will need them (``_words``): the same
        ``_twist`` on a copy, so the same words. A seed's state stands at its words' end,
        so the first draw of a generator seeded at its owner's making costs a copy."""
        nxt = words.copy()
        _twist(nxt)
        self._ahead = (sid, nxt, _temper(nxt))

    @property
    def gauss_next(self) -> float | None:           # random.Random.gauss keeps its second value here
        t, r = self._table, self._row
        return float(t.gauss[r]) if t.has_gauss[r] else None

    @gauss_next.setter
    def gauss_next(self, v: float | None) -> None:
        t, r = self._table, self._row
        t.has_gauss[r] = v is not None
        t.gauss[r] = 0.0 if v is None else v

    # -- the numbers
    def _view(self) -> tuple:
        """(the row's 625 words as a uint32 memoryview, its ``sid`` column's memoryview),
        kept while the table keeps the arrays they view (a grown table's are new)."""
        t = self._table
        kept = self._kept
        if kept is None or kept[0] is not t.mt or kept[1] is not t.m_sid or kept[2] != self._row:
            kept = self._kept = (t.mt, t.m_sid, self._row, (memoryview(t.mt[self._row].view(np.uint32)), t.m_sid))
        return kept[3]

    def state_key(self) -> tuple:
        """What identifies the generator's state now: (its words' id, its position, whether
        it holds a gauss value, the value); equal keys, equal states."""
        words, sids = self._view()
        t, r = self._table, self._row
        return (sids[r], words[MT_WORDS], t.m_has_gauss[r], t.m_gauss[r])

    def _tempered(self, words: memoryview, sid: int) -> memoryview:
        """The 624 words' tempered values (genrand_uint32's outputs), made once per ``sid``
        (after a regeneration, or when a restore brought other words back)."""
        got = self._out
        if got[0] != sid:
            got = self._out = (sid, _temper(np.frombuffer(words, np.uint32)[:MT_WORDS]))
        return got[1]

    def _words(self, k: int) -> Sequence[int]:
        """The next ``k`` (1 or 2) tempered 32-bit words (genrand_uint32)."""
        words, sids = self._view()
        r = self._row
        pos = words[MT_WORDS]
        out = self._tempered(words, sids[r]) if pos + k <= MT_WORDS else None
        if out is not None:                         # (no regeneration on the way: the usual case)
            words[MT_WORDS] = pos + k
            return out[pos:pos + k]
        got = []
        for _ in range(k):
            if pos >= MT_WORDS:
                mt = self._table.mt[r].view(np.uint32)[:MT_WORDS]
                ahead = self._ahead
                if ahead[0] == sids[r]:             # made ahead (look_ahead): the same words
                    mt[:] = ahead[1]
                    sid = sids[r] = new_sid()
                    self._out = (sid, ahead[2])
                else:
                    _twist(mt)
                    sids[r] = new_sid()
                pos = 0
            got.append(self._tempered(words, sids[r])[pos])
            pos += 1
        words[MT_WORDS] = pos
        return got

    def random(self) -> float:
        """A float in [0, 1), as random.Random's (53 bits from two words)."""
        a, b = self._words(2)
        return ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)

    def getrandbits(self, k: int) -> int:
        """``k`` random bits, as random.Random's (whole words, the last one's top bits).
        Rejected (ValueError): ``k`` < 0."""
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        if k == 0:
            return 0
        if k <= 32:
            return self._words(1)[0] >> (32 - k)
        out, shift = 0, 0
        while k > 0:
            w = self._words(1)[0]
            if k < 32:
                w >>= 32 - k
            out |= w << shift
            shift += 32
            k -= 32
        return out

    def randbytes(self, n: int) -> bytes:
        return self.getrandbits(n * 8).to_bytes(n, "little")


class AIRow(NamedTuple):
    """A FighterAI's state in a snapshot of its Fight's table: the table's saved state
    (anim.engine.snapshot.TableState, its block a copy) and the AI's row in it."""

    table: Any
    row: int

    def state(self) -> tuple:
        """The AI's ``save_state`` form of this row (``row_state``)."""
        return row_state(self.table, self.row)


def row_state(table_state: Any, row: int) -> tuple:
    """A FighterAI's ``save_state`` form of row ``row`` of a saved AI table
    (``table_state``: its capacity and block): ((3, the 625 words as 2,500 bytes, the
    gauss value or None), tick, hold's strikes, enabled)."""
    lay = _ROW_LAYOUTS.get(table_state.capacity)
    if lay is None:                        # (kept per capacity: derived only)
        lay = _ROW_LAYOUTS[table_state.capacity] = block_layout(
            {**COLUMNS, **FRAME_COLUMNS}, table_state.capacity)[0]
    block = table_state.block

    def col(name: str) -> np.ndarray:
        off, dt, shape = lay[name]
        return np.ndarray(shape, dt, block, off)

    gauss = float(col("gauss")[row]) if col("has_gauss")[row] else None
    return ((3, col("mt")[row].tobytes(), gauss), int(col("tick")[row]), int(col("hold")[row]),
            bool(col("enabled")[row]))


_ROW_LAYOUTS: dict[int, dict] = {}       # a saved AI table's capacity -> its block's layout


# the columns ``copy_rows`` copies as they lie (the gauss value apart: only where kept)
_COPIED = ("mt", "has_gauss", "tick", "hold", "enabled")
_COPY_PLANS: dict = {}       # (saved capacity, id of the file's columns, its capacity) -> copy_rows' plan


def _copy_plan(cap: int, columns: dict, dst_cap: int) -> tuple:
    """``copy_rows``' byte offsets: ((source offset, destination offset, bytes a row) of
    each of _COPIED, the destination's live column, (the gauss column's source and
    destination offsets, has_gauss's source offset)); kept per layouts (derived only)."""
    key = (cap, id(columns), dst_cap)
    got = _COPY_PLANS.get(key)
    if got is None or got[0] is not columns:
        src = _ROW_LAYOUTS.get(cap)
        if src is None:
            src = _ROW_LAYOUTS[cap] = block_layout({**COLUMNS, **FRAME_COLUMNS}, cap)[0]
        dst = block_layout(columns, dst_cap)[0]

        def width(lay: dict, name: str) -> int:
            _, dt, shape = lay[name]
            return dt.itemsize * int(np.prod(shape[1:], dtype=np.int64))

        for name in (*_COPIED, "gauss"):
            if src[name][1] != dst[name][1] or width(src, name) != width(dst, name):
                raise TypeError(f"airows.copy_rows: the file's column {name} is not the AI table's")
        cols = tuple((src[n][0], dst[n][0], width(src, n)) for n in _COPIED)
        if len(_COPY_PLANS) >= 16:
            _COPY_PLANS.clear()
        got = _COPY_PLANS[key] = (columns, cols, dst["live"][0], (src["gauss"][0], dst["gauss"][0],
                                                                  src["has_gauss"][0]))
    return got


def copy_rows(table_state: Any, rows: list, dst: np.ndarray, columns: dict, dst_cap: int, at: int = 0) -> None:
    """Rows ``rows`` of a saved AI table (``row_state``'s ``table_state``) written into rows
    ``at``, ``at`` + 1, ... of ``dst``, a zeroed uint8 block of ``columns`` (the file's
    ``ais`` table: live, mt, has_gauss, gauss, tick, hold, enabled) at ``dst_cap`` rows, as
    ``row_state``'s form says them with no plain form in between: each column's rows
    copied as they lie (one slice a column when the rows follow one another), live set,
    the gauss value only where it is kept (else left zero). Rejected (TypeError): columns
    that are not the AI table's."""
    src = memoryview(table_state.block).cast("B")
    out = memoryview(cast(Any, dst)).cast("B")       # (numpy's stubs name no buffer protocol)
    _, cols, live_at, (g_src, g_dst, hg_src) = _copy_plan(table_state.capacity, columns, dst_cap)
    n = len(rows)
    if at:                                         # (each column's rows from row ``at`` on)
        cols = tuple((s, d + at * w, w) for s, d, w in cols)
        live_at, g_dst = live_at + at, g_dst + 8 * at
    r0 = rows[0] if n else 0
    if rows == list(range(r0, r0 + n)):            # (the AIs seated in order: a slice a column)
        for s, d, w in cols:
            out[d:d + n * w] = src[s + r0 * w:s + (r0 + n) * w]
        kept = src[hg_src + r0:hg_src + r0 + n].tobytes()
        if kept.count(0) == 0:
            out[g_dst:g_dst + 8 * n] = src[g_src + 8 * r0:g_src + 8 * (r0 + n)]
            kept = b""
    else:
        for i, row in enumerate(rows):
            for s, d, w in cols:
                out[d + i * w:d + (i + 1) * w] = src[s + row * w:s + (row + 1) * w]
        kept = bytes(src[hg_src + row] for row in rows)
    for i, on in enumerate(kept):
        if on:
            row = rows[i]
            out[g_dst + 8 * i:g_dst + 8 * (i + 1)] = src[g_src + 8 * row:g_src + 8 * (row + 1)]
    out[live_at:live_at + n] = b"\1" * n
