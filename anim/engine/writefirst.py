"""Commands waiting in the tables: the one rule of which reads write them first.

A prepared command that passes its checks at the call (anim.playback.prepared) is not
written there: it becomes a row of the Player's command buffer
(anim.playback.cmdbuffer), which one compiled call writes later. Every table of a world
(tasks, cursors, fades, gaits, humans) and the task pool name that buffer as
``commands`` (None: nothing can wait there, as a standalone record's private row). Every
reader must see the tables as if each command had been written at its call, bit for bit,
so a read writes the waiting commands first when it could see what they change. What a
buffered command changes: its human's stack or queue row, depth or queue length, held
flags and anim id; the rows it takes (task, cursor, fade, gait: their free lists and
columns) and the pool's flags and count. Two kinds of read, one function each:

- ``write_first_for(holder, row)``, a read or write of ONE HUMAN's rows: its stack,
  queue, depth, held flags (``HumanRecord.flags``, ``held``), anim id, a task found from
  its stack (``Player.running``, ``held_on_stack``, ``top``, ``stack_of``, ``queue_of``...).
  Written only when that human has a command waiting (the buffer's ``due``): another
  human's reads leave the buffer as it is. A human with a command waiting that is
  commanded again has the buffer written first too, so the new command's checks read its
  rows as they are.
- ``write_first(holder)``, ANY ROW or COUNT: a row taken or given back from Python
  (``Table.alloc_default``, ``Table.free``, ``HumanTable.alloc``, ``free``,
  ``write_task_row``), the pool's count (``TaskPool.n_out``, ``in_use``, ``free``), a
  stack rule that moves rows (``change``), the update (``Player.step``, ``sample``,
  ``pose``, ``flush``), new options, a snapshot, a human leaving, a command the buffer
  cannot take: written whenever anything waits (the buffered commands take their rows
  first, in the calls' order). A restore drops the waiting commands instead (they were
  issued after the state it brings back).

Nothing else reads the tables from Python between two updates. The kernels read them only
inside the update, after ``write_first``. tests/anim/test_cmdbuffer.py reads every kind
above after a buffered command and compares it with the command written at its call.

``holder``: anything with a ``commands`` attribute (a Table, the HumanTable, the
TaskPool, a PrivateRow, the Player's prepared commands). The buffer's side of it: ``n``
(the rows waiting), ``due`` (the human rows with one waiting) and ``apply()`` (write them
all, in order, and empty the buffer).

May import: nothing of scuffle (the buffer is reached through its holder).

Spec: "Animation tasks", "The task stack". Original: none (ours: the original runs each
command at its call).
"""
from __future__ import annotations

from typing import Any

__all__ = ["write_first", "write_first_for"]


def write_first(holder: Any) -> None:
    """Before a row is taken or given back, a count of rows read, or the update: every
    command waiting in ``holder.commands`` written, in order (none waiting: nothing)."""
    c = holder.commands
    if c is not None and c.n:
        c.apply()


def write_first_for(holder: Any, row: int) -> None:
    """Before a read or write of human row ``row``'s rows: the commands waiting written
    when one of them is that human's (``row`` in the buffer's ``due``), else nothing."""
    c = holder.commands
    if c is not None and c.n and row in c.due:
        c.apply()
