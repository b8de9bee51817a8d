"""The command buffer: prepared commands as rows, applied by one compiled call.

A prepared command (``Player.run``) that passes its checks at the call is not written
there: it becomes a row of this preallocated structure-of-arrays table (its kind, the
human's row, its steps' template rows, the speed, fade, gait target and value it was
given), and ``apply`` writes every row, in order, in one call of
anim.engine.cmdkernel.apply_commands (the same row writers as a command written at once).
The rows are written before anything can see the tables they change: which reads write
them first is one rule, stated once in anim.engine.writefirst (a read of one human's rows
when that human has a command waiting, ``due``; any row taken or given back, a count of
rows, the update, a snapshot; a restore drops them). So every reader sees the tables as
if each command had been written at its call, bit for bit. A human with a command
waiting has the buffer written before its next command (that command's checks read its
rows as they are). The buffer is never in a snapshot.

May import: numpy, struct, anim.engine (cmdkernel's column indices).

Spec: "Animation tasks", "The task stack". Original: none (ours: the original runs each
command at its call; the rows and their order are the same).
"""
from __future__ import annotations

import struct
from enum import IntEnum
from typing import Callable

import numpy as np

from scuffle.anim.engine import cmdkernel as CK

__all__ = ["CommandKind", "CommandBuffer"]


class CommandKind(IntEnum):
    """Where a buffered command puts its first task (the buffer's ``B_PLACE`` column):
    a change (under a new fade, the old stack kept below), a push, a queued start."""
    CHANGE = CK.PLACE_CHANGE
    PUSH = CK.PLACE_PUSH
    ENQUEUE = CK.PLACE_ENQUEUE


# One row as written at the call: cmdkernel's B_* words (int64) then its BF_* words (float64).
_ROW = struct.Struct("<" + "q" * CK.BF_SPEED + "d" * (CK.B_WIDTH - CK.BF_SPEED))
assert _ROW.size == 8 * CK.B_WIDTH


class CommandBuffer:
    """The buffered commands (module docstring): ``capacity`` rows of cmdkernel.B_WIDTH words,
    read as int64 (``bi``: the kind, the human's row, the steps' count, the blend window's
    index, whether a gait takes its target as value, the steps' template rows) and as
    float64 (``bf``, the same memory: the human's speed, the fade, a gait's target and
    value). ``n`` rows are waiting; ``due`` the human rows with one waiting; ``tasks``,
    ``cursors``, ``fades``, ``gaits`` the rows they will take (the call checks the free
    lists and the pool against them). ``apply`` hands the buffer to ``writer`` (the
    Player's prepared commands: anim.playback.prepared.RecipeRules), which writes and
    empties it. In: the writer, the capacity in rows (full: applied, then filled again)."""

    __slots__ = ("bi", "bf", "_mem", "capacity", "n", "due", "tasks", "cursors", "fades", "gaits", "_writer",
                 "applied", "calls")

    def __init__(self, writer: Callable[["CommandBuffer"], None], capacity: int = 256):
        if capacity < 1:
            raise ValueError(f"command buffer capacity {capacity} must be >= 1")
        self.capacity = int(capacity)
        block = np.zeros(self.capacity * _ROW.size, np.uint8)
        self.bi = block.view(np.int64).reshape(self.capacity, CK.B_WIDTH)
        self.bf = block.view(np.float64).reshape(self.capacity, CK.B_WIDTH)
        self._mem = block.data                 # a row is one struct write at the call
        self._writer = writer
        self.applied = 0          # buffered commands written so far (tests, the bench)
        self.calls = 0            # the compiled calls that wrote them
        self.clear()

    def clear(self) -> None:
        """Drop every waiting row (a restore: they belong to the state it replaces)."""
        self.n = 0
        self.due: set[int] = set()
        self.tasks = self.cursors = self.fades = self.gaits = 0

    def apply(self) -> None:
        """Write every waiting row, in order, and empty the buffer. With no row waiting no
        human waits either: ``due`` is emptied (a human left named there would stop the
        batch's compiled checks at its next command after every apply, for ever)."""
        if self.n:
            self._writer(self)
        elif self.due:
            self.due.clear()

    def append(self, kind: int, slot: int, k: int, window: int, vnone: int, sel: list, speed: float, fade: float,
               target: float, value: float, tasks: int, cursors: int, fades: int, gaits: int) -> None:
        """One command's row: ``kind`` (CommandKind), the human's row ``slot``, its ``k``
        steps (at most cmdkernel.B_MAX_STEPS), the blend window's index, ``vnone``, the
        steps' template rows (``sel``: B_MAX_STEPS ints, the last task first), the numbers,
        and the rows it takes. The caller checked that it fits."""
        i = self.n
        if i == self.capacity:
            self._writer(self)
            i = 0
        _ROW.pack_into(self._mem, i * _ROW.size, kind, slot, k, window, vnone, *sel, speed, fade, target, value)
        self.n = i + 1
        self.due.add(slot)
        self.tasks += tasks
        self.cursors += cursors
        self.fades += fades
        self.gaits += gaits
