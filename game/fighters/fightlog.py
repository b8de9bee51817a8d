"""The fight log as table rows: a ring of the most recent entries, one row each.

An entry is ``(update, human, what, v1, ..., vk)``: the update, the human's name, what
happened, then at most ``LOG_EXTRAS`` plain values (None, a bool, an int, a float or a
text). ``FightLog`` keeps them in columns (``COLUMNS``, laid out as the engine's tables
are: anim.engine.store.block_layout; FIRST_ROWS rows at first, twice as many each time
they are full, up to ``maxlen``: a short log is a small block, and entries are rare next
to updates) so that a snapshot saves the log as one block and a snapshot file carries it as a table section, checked like the engine's
rows; a text is kept once in ``texts`` and a row holds its index. Reading the log
(iterating, indexing, comparing) gives the entries back as tuples, oldest first, as a
``collections.deque(maxlen=LOG_SIZE)`` would. Original: none (ours).
"""
from __future__ import annotations

from enum import IntEnum
from typing import Any, Iterable, Iterator

import numpy as np

from scuffle.anim.engine.store import block_layout

__all__ = ["FightLog", "LOG_EXTRAS", "COLUMNS", "Kind", "MAX_TEXTS", "MAX_TEXT"]

LOG_EXTRAS = 5          # the values an entry may hold after (update, human, what)
MAX_TEXTS = 4096        # the distinct texts a log may name (names, whats, text values)
MAX_TEXT = 256          # a text's length
FIRST_ROWS = 16         # the rows a log starts with: twice as many each time they are full, up to its maxlen


class Kind(IntEnum):
    """What an extra value of a row is (the ``kind`` column): its ``value`` holds 0, the
    bool as 0 or 1, the int, the float's bits (float64), or the text's index
    (anim.engine.snapkernel.check_tagged_rows checks a file's by these numbers)."""

    NONE = 0
    BOOL = 1
    INT = 2
    FLOAT = 3
    TEXT = 4


# A row's columns: the update, the human's and the what's text indexes, the count of extra
# values, each value's kind and its 64 bits.
COLUMNS: dict = {"live": np.bool_, "update": np.int64, "human": np.int32, "what": np.int32, "n": np.int8,
                 "kind": (np.int8, (LOG_EXTRAS,)), "value": (np.int64, (LOG_EXTRAS,))}
_F64 = np.dtype(np.float64)


class FightLog:
    """The ring of the ``maxlen`` most recent fight entries (see the module docstring).

    ``append(entry)`` logs one (the oldest is dropped when full). Rejected (TypeError): an
    entry that is not (int update, str human, str what, at most LOG_EXTRAS values of None,
    bool, int (int64), float or str); a text longer than MAX_TEXT or past MAX_TEXTS distinct
    ones (ValueError). ``save()`` / ``load(saved)`` give and put back the rows, the ring's
    place and the texts (a snapshot's), ``block`` / ``head`` / ``count`` / ``texts`` are
    the rows as they are (a file's table section)."""

    __slots__ = ("maxlen", "cap", "block", "cols", "head", "count", "texts", "_codes", "_stamp", "_next", "_saved")

    def __init__(self, maxlen: int) -> None:
        if not (isinstance(maxlen, int) and maxlen >= 1):
            raise ValueError(f"FightLog: maxlen {maxlen!r} is not a whole number >= 1")
        self.maxlen = int(maxlen)
        self._alloc(min(FIRST_ROWS, self.maxlen))
        self.head = 0                 # the physical row of the oldest entry
        self.count = 0
        self.texts: list[str] = []
        self._codes: dict[str, int] = {}
        # the content's stamp: a fresh one at each change, a saved one put back with its rows
        # (``load`` of the state saved at that stamp is then nothing to do)
        self._stamp = 0
        self._next = 1
        self._saved: Any = None

    def _alloc(self, cap: int, block: np.ndarray | None = None) -> None:
        """Rows for ``cap`` entries (``block``'s bytes in them, else zeros)."""
        lay, size = block_layout(COLUMNS, cap)
        self.cap = cap
        self.block = np.zeros(size, np.uint8) if block is None else block.copy()
        self.cols = {name: np.ndarray(shape, dt, self.block, o) for name, (o, dt, shape) in lay.items()
                     if name != "n_free"}

    def _grow(self) -> None:
        """Twice the rows (at most ``maxlen``), the entries first, oldest at row 0."""
        old, order = self.cols, (self.head + np.arange(self.count)) % self.cap
        self._alloc(min(2 * self.cap, self.maxlen))
        for name, a in self.cols.items():
            a[:self.count] = old[name][order]
        self.head = 0

    # ---------------------------------------------------------------- writing
    def _text(self, t: str) -> int:
        code = self._codes.get(t)
        if code is None:
            if len(t) > MAX_TEXT or len(self.texts) >= MAX_TEXTS:
                raise ValueError(f"FightLog: a text of {len(t)} characters, or past {MAX_TEXTS} distinct texts")
            code = self._codes[t] = len(self.texts)
            self.texts.append(t)
        return code

    def append(self, entry: tuple) -> None:
        """Log ``entry`` (see the class docstring)."""
        if not (entry.__class__ is tuple and 3 <= len(entry) <= 3 + LOG_EXTRAS and entry[0].__class__ is int
                and entry[1].__class__ is str and entry[2].__class__ is str):
            raise TypeError(f"FightLog: {entry!r} is not (update, human, what, at most {LOG_EXTRAS} values)")
        kinds, values = [0] * LOG_EXTRAS, [0] * LOG_EXTRAS
        for i, v in enumerate(entry[3:]):
            t = v.__class__
            if v is None:
                continue
            if t is bool:
                kinds[i], values[i] = Kind.BOOL, int(v)
            elif t is int and -(1 << 63) <= v < 1 << 63:
                kinds[i], values[i] = Kind.INT, v
            elif t is float:
                kinds[i], values[i] = Kind.FLOAT, int(np.float64(v).view(np.int64))
            elif t is str:
                kinds[i], values[i] = Kind.TEXT, self._text(v)
            else:
                raise TypeError(f"FightLog: {v!r} in {entry!r} is not None, a bool, an int, a float or a text")
        human, what = self._text(entry[1]), self._text(entry[2])
        if self.count == self.cap < self.maxlen:
            self._grow()
        if self.count == self.cap:
            r = self.head
            self.head = (self.head + 1) % self.cap
        else:
            r = (self.head + self.count) % self.cap
            self.count += 1
        c = self.cols
        c["live"][r] = True
        c["update"][r] = entry[0]
        c["human"][r] = human
        c["what"][r] = what
        c["n"][r] = len(entry) - 3
        c["kind"][r] = kinds
        c["value"][r] = values
        self._changed()

    def _changed(self) -> None:
        self._stamp = self._next
        self._next += 1

    def extend(self, entries: Iterable[tuple]) -> None:
        for e in entries:
            self.append(e)

    def clear(self) -> None:
        self.cols["live"][:] = False
        self.head = self.count = 0
        for a in self.cols.values():
            a[...] = 0
        self._changed()

    # ---------------------------------------------------------------- reading
    def _entry(self, r: int) -> tuple:
        c, texts = self.cols, self.texts
        out: list[Any] = [int(c["update"][r]), texts[c["human"][r]], texts[c["what"][r]]]
        kinds, values = c["kind"][r].tolist(), c["value"][r].tolist()
        for i in range(int(c["n"][r])):
            k, v = kinds[i], values[i]
            if k == Kind.NONE:
                out.append(None)
            elif k == Kind.BOOL:
                out.append(bool(v))
            elif k == Kind.INT:
                out.append(v)
            elif k == Kind.FLOAT:
                out.append(float(np.int64(v).view(np.float64)))
            else:
                out.append(texts[v])
        return tuple(out)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple]:
        for i in range(self.count):
            yield self._entry((self.head + i) % self.cap)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._entry((self.head + k) % self.cap) for k in range(*i.indices(self.count))]
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError("FightLog index out of range")
        return self._entry((self.head + i) % self.cap)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FightLog):
            return list(self) == list(other)
        try:
            return list(self) == list(other)  # type: ignore[call-overload]
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FightLog({list(self)!r}, maxlen={self.maxlen})"

    # ---------------------------------------------------------------- snapshots
    def save(self) -> tuple:
        """The log as a snapshot keeps it: (stamp, block copy, head, count, texts, rows).
        The same object while nothing was logged since (entries are rare next to updates)."""
        s = self._saved
        if s is None or s[0] != self._stamp:
            s = self._saved = (self._stamp, self.block.copy(), self.head, self.count, tuple(self.texts), self.cap)
        return s

    def load(self, saved: tuple) -> None:
        """Put back a ``save()`` of this log."""
        stamp, block, head, count, texts, cap = saved
        if stamp == self._stamp:
            return
        n = len(texts)
        if len(self.texts) < n or tuple(self.texts[:n]) != texts:      # (a file's texts came between)
            self.texts[:] = texts
            self._codes = {t: i for i, t in enumerate(texts)}
        if cap != self.cap:
            self._alloc(cap, block)
        else:
            np.copyto(self.block, block)
        self.head, self.count, self._stamp, self._saved = head, count, stamp, saved

    def load_rows(self, block: np.ndarray, head: int, count: int, texts: list[str], cap: int) -> None:
        """Put back a snapshot file's ``cap`` rows (checked: fightrows.log_of), their texts
        in place of this log's."""
        if cap != self.cap:
            self._alloc(cap, block)
        else:
            np.copyto(self.block, block)
        self.head, self.count = head, count
        self.texts[:] = texts
        self._codes = {t: i for i, t in enumerate(texts)}
        self._changed()
