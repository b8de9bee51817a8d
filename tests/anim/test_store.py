"""The tables the state lives in (anim.store): rows, growth, released rows, the views onto them.

Issue 14, "The state lives in arrays": tasks and records are views onto table rows; a
task or cursor that is gone keeps its last numbers while its row is reused.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

from scuffle.anim.clip import author_clip
from scuffle.anim.cursor import Cursor
from scuffle.anim.stack import HumanRecord
from scuffle.anim.store import HumanTable, cursor_table, task_table
from scuffle.anim.tasks import BlendWindow, ClipTask, FadeTask, LoopTask, TaskFlags, TaskType


def _cursor(table, frames: int = 10) -> Cursor:
    return Cursor(author_clip("c", frames), 0, 7, 0, table)


def test_a_released_row_is_read_by_its_owner_until_taken_again_then_copied():
    table = cursor_table(2)
    c = _cursor(table)
    c.set_time(0.2)
    row = c.row
    c.dispose()
    assert not table.live[row] and c.store is table          # given back, not copied yet
    assert c.time == pytest.approx(0.2, abs=1e-6)
    first = _cursor(table)                                    # a released row is taken last
    assert first.row != row and c.store is table
    other = _cursor(table)
    assert other.row == row and table.live[row]
    assert c.store is not table and c.store.capacity == 1 and c.row == 0
    assert c.time == pytest.approx(0.2, abs=1e-6) and other.time == 0.0
    other.set_time(0.1)
    assert c.time == pytest.approx(0.2, abs=1e-6)             # no longer shares the row


def test_a_dead_owner_is_not_copied_and_a_second_dispose_is_harmless():
    table = cursor_table(2)
    c = _cursor(table)
    row = c.row
    c.dispose()
    c.dispose()                                               # no double free
    assert table.in_use == 0
    del c
    gc.collect()
    _cursor(table)
    again = _cursor(table)
    assert again.row == row and table.in_use == 2 and not table._ghosts


def test_tasks_are_views_onto_the_task_table():
    tasks, cursors = task_table(8), cursor_table(8)
    loop = LoopTask(_cursor(cursors), 0.75, flags=TaskFlags.NO_TURN, held=0x3, tstore=tasks)
    clip = ClipTask(_cursor(cursors), 1.0, next=loop, blend=0.2, window_rule=BlendWindow.KEPT, tstore=tasks)
    r, n = clip.trow, loop.trow
    assert tasks.type[r] == TaskType.CLIP and tasks.type[n] == TaskType.LOOP
    assert tasks.nxt[r] == n and tasks.c0[r] == clip.cursor.row and tasks.c0[n] == loop.cursor.row
    assert tasks.rate[n] == np.float32(0.75) and tasks.held[n] == 0x3 and tasks.flags[n] == 0x2
    assert tasks.window[r] == 1 and clip.window_rule == BlendWindow.KEPT
    tasks.held[n] = 0x4                                       # what the compiled step writes
    tasks.wraps[n] = 3
    assert loop.held == 0x4 and loop.wraps == 3
    clip.next = None
    assert tasks.nxt[r] == -1
    loop.on_wrap = print
    assert tasks.callback[n]
    fade = FadeTask(0.5, tstore=tasks)
    fade.incoming = clip
    assert tasks.incoming[fade.trow] == r


def test_a_task_made_alone_has_a_private_row_and_no_links_into_other_tables():
    loop = LoopTask(_cursor(cursor_table(1)), 1.0)
    clip = ClipTask(_cursor(cursor_table(1)), 1.0, next=loop)
    assert loop.tstore.capacity == 1 and loop.tstore.c0[0] == -1      # a private cursor: no row link
    assert clip.tstore.nxt[0] == -1 and clip.next is loop             # another table: no row link


def test_records_move_into_the_human_table_and_back():
    rec = HumanRecord(flags=0x5)
    table = HumanTable(2)
    row = table.alloc()
    rec.attach(table, row)
    assert table.flags[row] == 0x5
    table.flags[row] |= 0x40000
    assert rec.flags == 0x40005
    rec.flags &= ~0x1
    assert table.flags[row] == 0x40004
    for _ in range(5):                                        # growth keeps the record's row
        table.alloc()
    assert rec.flags == 0x40004 and table.capacity >= 6
    rec.detach()
    table.flags[row] = 0
    assert rec.flags == 0x40004 and rec == HumanRecord(0x40004)
    with pytest.raises(ValueError, match="HumanRecord.flags"):
        rec.flags = 1 << 63


def test_human_rows_are_reused_and_a_double_free_is_refused():
    table = HumanTable(1)
    a = table.alloc()
    table.stack[a, :2] = (4, 5)
    table.free(a)
    b = table.alloc()
    assert b == a and (table.stack[b] == -1).all() and table.depth[b] == 0
    table.free(b)
    with pytest.raises(ValueError, match="freed twice"):
        table.free(b)
