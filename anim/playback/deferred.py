"""The deferred list as rows: each entry a human row and a task row, in the list's order.

The compiled step writes the tasks it defers straight into ``rows`` (its ``def_out``
buffer: anim.engine.kernels.step_stacks appends after the entries already there) and the
flush's kernel reads them from there (anim.engine.kernels.flush_release), so no Python object
is made per deferred task on the hot path. Python's own ``defer`` (a cut, a change
completing a fade) appends a row pair too. An entry the kernels cannot follow (a task
of another table, a human this engine no longer holds: one forgotten before the flush)
is kept as objects in ``odd`` (index -> (task, instance)), its row pair (-1, -1); the
flush releases those in Python, in their place in the list.

``Player.deferred`` reads the list as (task, instance) pairs (a new list each time).
Original: 0x00105640 AnimTask_DeferGive, 0x00105570 AnimTask_FlushDeferred.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from scuffle.anim.playback.tasks import task_at

__all__ = ["DeferredRows", "HROW", "TROW"]

HROW = 0            # column of the human row (the step kernel's def_out layout)
TROW = 1            # column of the task row
# The rows of an empty list as saved (read-only: every empty save shares it).
_NO_ROWS = np.zeros((0, 2), np.int64)
_NO_ROWS.flags.writeable = False
# The state of an empty list (between two updates, as a rule): one object every save gives
# (a state is never written to; a load copies its entries)
NO_ENTRIES: tuple = (_NO_ROWS, {})


class DeferredRows:
    """The deferred list of one Player (see the module docstring).

    ``rows[:n]`` the entries (human row, task row), ``odd`` the entries held as objects.
    In: the initial capacity. Nothing here is checked: the Player writes it."""

    __slots__ = ("rows", "n", "odd")

    def __init__(self, capacity: int = 256):
        self.rows = np.zeros((max(1, capacity), 2), np.int64)
        self.n = 0
        self.odd: dict[int, tuple] = {}

    def __len__(self) -> int:
        return self.n

    def _room(self, more: int) -> None:
        if self.n + more > self.rows.shape[0]:
            cap = self.rows.shape[0]
            while cap < self.n + more:
                cap *= 2
            rows = np.zeros((cap, 2), np.int64)
            rows[:self.n] = self.rows[:self.n]
            self.rows = rows

    def append_row(self, hrow: int, trow: int) -> None:
        """An entry the kernels follow: human row ``hrow``, task row ``trow``."""
        n = self.n
        if n >= self.rows.shape[0]:
            self._room(1)
        r = self.rows[n]
        r[0] = hrow
        r[1] = trow
        self.n = n + 1

    def append_odd(self, task: Any, inst: Any) -> None:
        """An entry kept as objects (the flush releases it in Python)."""
        self.odd[self.n] = (task, inst)
        self.append_row(-1, -1)

    def take(self, out: np.ndarray) -> tuple[np.ndarray, int, dict]:
        """Empty the list into ``out`` (grown, a new array, when too short): returns (the
        array holding the entries, their number, the odd entries by index)."""
        n = self.n
        if out.shape[0] < n:
            out = np.zeros((max(n, 2 * out.shape[0]), 2), np.int64)
        out[:n] = self.rows[:n]
        odd = self.odd
        self.n = 0
        self.odd = {}
        return out, n, odd

    def holds_human(self, hrow: int, inst: Any) -> bool:
        """Whether an entry is of human row ``hrow`` (or, held as objects, of ``inst``)."""
        if self.n and bool((self.rows[:self.n, HROW] == hrow).any()):
            return True
        return any(i is inst for _, i in self.odd.values())

    def detach(self, hrow: int, inst: Any, views: Any, tasks: Any = None) -> None:
        """The entries of human row ``hrow`` become entries held as objects (``inst``, the
        task of each row from ``views``; with the task table ``tasks``, a row a prepared
        command wrote gets its handle made: anim.playback.tasks.task_at): the human leaves the
        engine before the flush."""
        if not self.n:
            return
        ks = np.flatnonzero(self.rows[:self.n, HROW] == hrow).tolist()
        for k in ks:
            tr = int(self.rows[k, TROW])
            t = views[tr]
            if t is None and tasks is not None:
                t = task_at(tasks, tr)
            self.odd[k] = (t, inst)
            self.rows[k] = -1

    def reorder(self, first: int, order: np.ndarray) -> None:
        """Entries ``first:`` put in ``order`` (indices relative to ``first``), the odd
        entries among them moved along."""
        n = self.n
        self.rows[first:n] = self.rows[first:n][order]
        if self.odd:
            moved = {k: v for k, v in self.odd.items() if k >= first}
            if moved:
                for k in moved:
                    del self.odd[k]
                new_at = np.empty(n - first, np.int64)
                new_at[order] = np.arange(n - first)
                for k, v in moved.items():
                    self.odd[first + int(new_at[k - first])] = v

    def pairs(self, tasks: Any, instances: list, table: Any = None) -> list:
        """The entries as (task, instance) pairs: ``tasks`` maps a task row to its handle
        (with the task table ``table``, a row a prepared command wrote gets its handle
        made: anim.playback.tasks.task_at), ``instances`` a human row to its instance."""
        odd = self.odd
        out = []
        for k, (hr, tr) in enumerate(self.rows[:self.n].tolist()):
            if hr < 0:
                out.append(odd[k])
                continue
            t = tasks[tr]
            if t is None and table is not None:
                t = task_at(table, tr)
            out.append((t, instances[hr]))
        return out

    def save(self, view: bool = False) -> tuple:
        """The list's state: (the entries' rows, a copy; the odd entries); ``view``: the
        rows and the dict themselves, for a state read at once."""
        if view:
            return (self.rows[:self.n], self.odd)
        if not self.n and not self.odd:                 # (between two updates, as a rule)
            return NO_ENTRIES
        return (self.rows[:self.n].copy(), dict(self.odd))

    def load(self, state: tuple) -> None:
        """Write ``save``'s state back (into the same array while it is long enough)."""
        rows, odd = state
        n = rows.shape[0]
        self.n = 0
        if n:
            self._room(n)
            self.rows[:n] = rows
        self.n = n
        self.odd = dict(odd) if odd or self.odd else self.odd
