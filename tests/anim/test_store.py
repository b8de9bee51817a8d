"""The tables the state lives in (anim.engine.store): rows, growth, released rows, the views onto them.

The state lives in arrays: tasks and records are views onto table rows, and they are
handles (a row and a generation): one whose row went back is stale.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.data.clip import author_clip
from scuffle.anim.playback.cursor import Cursor
from scuffle.anim.engine.stack import HumanRecord
from scuffle.anim.engine.store import HumanTable, StaleHandle, Stores, cursor_table, task_table
from scuffle.anim.playback.tasks import BlendWindow, ClipTask, FadeTask, LoopTask, TaskFlags, TaskType


def _cursor(table, frames: int = 10) -> Cursor:
    return Cursor(author_clip("c", frames), 0, 7, 0, table)


def test_a_released_row_makes_its_handle_stale():
    """A cursor is a handle (a row and the generation it got); once its
    row goes back, reading or writing it raises StaleHandle (a ValueError), before and
    after the row is taken again, and the new owner's numbers are never touched."""
    table = cursor_table(2)
    c = _cursor(table)
    c.set_time(0.2)
    row, gen = c.row, c.gen
    c.dispose()
    assert not table.live[row] and table.gen[row] == gen + 1 and not c.alive()
    with pytest.raises(StaleHandle, match="Cursor: its row 0 went back"):
        c.time
    other = _cursor(table)                                    # the free list is a stack: the row again
    assert other.row == row and table.live[row] and other.gen == gen + 1
    with pytest.raises(StaleHandle):
        c.time = 0.5
    assert other.time == 0.0
    assert issubclass(StaleHandle, ValueError)


def test_a_second_dispose_is_harmless_and_frees_no_one_else():
    table = cursor_table(2)
    c = _cursor(table)
    row = c.row
    c.dispose()
    c.dispose()                                               # no double free
    assert table.in_use == 0
    again = _cursor(table)
    c.dispose()                                               # the row is another's now: left alone
    assert again.row == row and table.in_use == 1 and again.alive()


def test_the_free_list_is_a_stack_of_rows_and_growth_keeps_it():
    table = cursor_table(2)
    a, b = _cursor(table), _cursor(table)
    assert (a.row, b.row) == (0, 1) and int(table.n_free[0]) == 0
    c = _cursor(table)                                        # grown to 4
    assert table.capacity == 4 and c.row == 2 and int(table.n_free[0]) == 1
    a.dispose()
    assert table.free_rows[:int(table.n_free[0])].tolist() == [3, 0]    # the row given back on top
    assert _cursor(table).row == 0
    assert table.reserve(3) and table.capacity == 8 and int(table.n_free[0]) >= 3
    assert not table.reserve(3)


def test_tasks_are_views_onto_the_task_table():
    st = Stores(8)
    tasks, cursors = st.tasks, st.cursors
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
    assert tasks.incoming[fade.trow] == r and fade.incoming is clip and tasks.views[r] is clip
    assert fade.store is st.fades and tasks.aux[fade.trow] == fade.row


def test_a_task_is_made_in_a_worlds_tables_only():
    """The rows are the only truth, so there are no tasks made alone (private
    one-row tables, links kept as Python objects): a task needs a world's task table
    (Stores), and its cursor must be a row of that world's cursor table."""
    from scuffle.anim.playback.tasks import ForeignTask

    with pytest.raises(ValueError, match="LoopTask: a task is made by a world's Player"):
        LoopTask(_cursor(cursor_table(1)), 1.0)
    with pytest.raises(ValueError, match="FadeTask: a task is made by a world's Player"):
        FadeTask(0.5, tstore=task_table(4))
    st = Stores(4)
    with pytest.raises(ForeignTask, match="Cursor .anim id 7. was not made by this world's Player"):
        LoopTask(_cursor(cursor_table(1)), 1.0, tstore=st.tasks)
    assert st.tasks.in_use == 0
    loop = LoopTask(_cursor(st.cursors), 1.0, tstore=st.tasks)
    clip = ClipTask(_cursor(st.cursors), 1.0, next=loop, tstore=st.tasks)
    assert clip.next is loop and st.tasks.nxt[clip.trow] == loop.trow
    loop.dispose()
    assert st.tasks.views[loop.trow] is None and not loop.alive()


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
    assert rec == HumanRecord(0x40004)
    with pytest.raises(ValueError, match="HumanRecord.flags"):
        rec.flags = 1 << 63
    table.free(row)                                           # the human left: the record is stale
    assert not rec.alive() and "stale" in repr(rec)
    for field in ("flags", "held", "anim_id"):
        with pytest.raises(StaleHandle, match=f"HumanRecord.{field}: its row {row} went back"):
            getattr(rec, field)
    with pytest.raises(StaleHandle, match="HumanRecord.flags"):
        rec.flags = 0x1
    assert table.alloc() == row and table.flags[row] == 0      # the row, another human's now ...
    table.flags[row] = 0x2
    with pytest.raises(StaleHandle):                          # ... never read through the old handle
        rec.held


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


def test_a_take_that_grows_a_table_gives_a_new_row_not_a_live_one():
    """The block of a grown table is new memory: the free count is read again after the
    growth (a take that filled the table and grew it once handed back row 0, in use)."""
    from scuffle.anim.engine.store import task_table

    t = task_table(4)
    rows = [t.alloc_default() for _ in range(4)]
    grown = t.alloc_default()
    assert grown not in rows and t.capacity == 8 and t.in_use == 5
    assert len({t.alloc(zero=False) for _ in range(3)} | set(rows) | {grown}) == 8


def test_freed_rows_come_back_at_the_defaults_few_or_many_and_after_growth():
    """Table.free / Table.settle: rows given back are at the task table's defaults when
    taken again, whether a few (one by one, through the fast views it keeps) or many
    given back by a kernel (a write per column at ``settle``), and after the table grew
    (new arrays: the kept views are made again)."""
    from scuffle.anim.engine.store import Table

    t = Table({"nxt": np.int64, "rate": np.float32, "on": np.bool_}, capacity=4,
              defaults={"nxt": -1, "rate": 0.0, "on": False})
    for count in (1, 3, 6, 7, 20):
        before = t.signal.now
        rows = [t.alloc_default() for _ in range(count)]
        grew = t.signal.now != before
        for r in rows:
            t.nxt[r], t.rate[r], t.on[r] = 5, 2.5, True
        for r in rows:
            t.free(r)
        again = [t.alloc_default() for _ in range(count)]
        assert sorted(again) == sorted(rows), (count, grew)
        assert (t.nxt[again] == -1).all() and (t.rate[again] == 0.0).all() and not t.on[again].any(), count
        for r in again:
            t.free(r)
    # the few-rows path's kept views follow the arrays: grow, then free and take a few
    r = t.alloc_default()
    t.nxt[r] = 9
    t.free(r)
    old = t.nxt
    t._grow(t.capacity * 2)
    assert t.nxt is not old
    r2 = t.alloc_default()
    while r2 != r:                                    # the grown rows come first: take down to r
        r2 = t.alloc_default()
    assert t.nxt[r] == -1 and old[r] == -1            # reset when freed; grown at the defaults
