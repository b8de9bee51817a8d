"""The command buffer: prepared commands as rows, applied by one compiled call.

A prepared command (``Player.run``) that passes its checks at the call is not written
there: it becomes a row of this preallocated structure-of-arrays table (its kind, the
human's row, its steps' template rows, the speed, fade, gait target and value it was
given), and ``apply`` writes every row, in order, in one call of
anim.engine.cmdkernel.apply_commands (the same row writers as a command written at once).
The rows are applied before anything can see the tables they change:

- the next update (``Player.step``, ``sample``, ``pose``, ``flush``), a snapshot, a
  restore (which drops them: they were issued after the state it brings back), a human
  leaving, new options;
- any row taken or given back from Python (``Table.alloc_default``, ``Table.free``, the
  pool's counts): the handle API takes its rows after the buffered ones, as it did when
  each command was written at its call;
- a read or write of a human's stack, queue, held flags or anim id while that human has
  a command waiting (``due``: the engine's ``stack_of``, ``queue_of``, ``top_task``...,
  the stack rules, HumanRecord's fields).

So every reader sees the tables as if each command had been written at its call, bit
for bit. A human with a command waiting sends its next command through the immediate
path (after ``apply``): the checks at the call read that human's rows as they are.
The buffer is never in a snapshot: a snapshot applies it first, a restore empties it.

May import: numpy, anim.engine (cmdkernel's column indices).

Spec: "Animation tasks", "The task stack". Original: none (ours: the original runs each
command at its call; the rows and their order are the same).
"""
from __future__ import annotations

from enum import IntEnum
from typing import Any, Callable

import numpy as np

from scuffle.anim.engine import cmdkernel as CK
from scuffle.anim.engine.store import _fast_view

__all__ = ["CommandKind", "CommandBuffer"]


class CommandKind(IntEnum):
    """Where a buffered command puts its first task (the buffer's ``B_PLACE`` column):
    a change (under a new fade, the old stack kept below), a push, a queued start."""
    CHANGE = CK.PLACE_CHANGE
    PUSH = CK.PLACE_PUSH
    ENQUEUE = CK.PLACE_ENQUEUE


class CommandBuffer:
    """The buffered commands (module docstring). ``bi`` (rows, cmdkernel.B_WIDTH) int64:
    the kind, the human's row, the first of its steps' template rows in ``sel``, their
    count, the blend window's index, whether a gait takes its target as value; ``bf``
    (rows, BF_WIDTH) float64: the human's speed, the fade, a gait's target and value. ``n``
    rows are waiting; ``due`` the human rows with one waiting; ``tasks``, ``cursors``,
    ``fades``, ``gaits`` the rows they will take (the call checks the free lists and the
    pool against them). ``apply`` hands the buffer to ``writer`` (the Player's prepared
    commands: anim.playback.prepared.RecipeRules), which writes and empties it.
    In: the writer, the capacity in rows (full: applied, then filled again)."""

    __slots__ = ("bi", "bf", "sel", "m_bi", "m_bf", "m_sel", "capacity", "n", "n_sel", "due", "tasks", "cursors",
                 "fades", "gaits", "_writer", "applied")

    def __init__(self, writer: Callable[["CommandBuffer"], None], capacity: int = 256):
        if capacity < 1:
            raise ValueError(f"command buffer capacity {capacity} must be >= 1")
        self.capacity = int(capacity)
        self.bi = np.zeros((self.capacity, CK.B_WIDTH), np.int64)
        self.bf = np.zeros((self.capacity, CK.BF_WIDTH), np.float64)
        self.sel = np.zeros(4 * self.capacity, np.int64)
        # one-item writes through memoryviews of the same memory (a numpy item write costs
        # several times more), flat: row i's column j at i * width + j
        self.m_bi = _fast_view(self.bi.reshape(-1))
        self.m_bf = _fast_view(self.bf.reshape(-1))
        self.m_sel = _fast_view(self.sel)
        self._writer = writer
        self.applied = 0          # buffered commands applied so far (tests, the bench)
        self.clear()

    def clear(self) -> None:
        """Drop every waiting row (a restore: they belong to the state it replaces)."""
        self.n = self.n_sel = 0
        self.due: set[int] = set()
        self.tasks = self.cursors = self.fades = self.gaits = 0

    def apply(self) -> None:
        """Write every waiting row, in order, and empty the buffer (nothing waiting: nothing)."""
        if self.n:
            self._writer(self)

    def apply_for(self, slot: int) -> None:
        """``apply`` when human row ``slot`` has a command waiting (a read of its rows)."""
        if self.n and slot in self.due:
            self._writer(self)

    def append(self, kind: int, slot: int, steps: Any, k: int, window: int, vnone: int, speed: float, fade: float,
               target: float, value: float, need: tuple[int, int, int, int]) -> None:
        """One command's row: ``kind`` (CommandKind), the human's row ``slot``, its ``k``
        steps' template rows (``steps``: a sequence, last task first), the blend window's
        index, ``vnone``, the numbers, and ``need`` (tasks, cursors, fades, gaits) it
        takes. The caller checked it fits (``room``)."""
        if self.n == self.capacity or self.n_sel + k > len(self.sel):
            self._writer(self)
        i = self.n
        at = self.n_sel
        mi = self.m_bi
        b = i * CK.B_WIDTH
        mi[b + CK.B_PLACE] = kind
        mi[b + CK.B_SLOT] = slot
        mi[b + CK.B_SEL] = at
        mi[b + CK.B_STEPS] = k
        mi[b + CK.B_WINDOW] = window
        mi[b + CK.B_VNONE] = vnone
        mf = self.m_bf
        b = i * CK.BF_WIDTH
        mf[b + CK.BF_SPEED] = speed
        mf[b + CK.BF_FADE] = fade
        mf[b + CK.BF_TARGET] = target
        mf[b + CK.BF_VALUE] = value
        ms = self.m_sel
        for j in range(k):
            ms[at + j] = steps[j]
        self.n = i + 1
        self.n_sel = at + k
        self.due.add(slot)
        self.tasks += need[0]
        self.cursors += need[1]
        self.fades += need[2]
        self.gaits += need[3]
