"""The tables' row links are int32 (anim.engine.store.ROW_LINK): what that promises.

A task's cursors, fade or gait row, next and incoming task, a human's stack and queue,
every free list and every row's generation are int32, half the bytes of an int64 in the
largest tables. So no table may grow past what an int32 names, and a generation wraps to
0, never below (the snapshot's checks refuse a negative one).
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.base.limits import BudgetError
from scuffle.anim.engine.store import (MAX_ROWS, ROW_LINK, HumanTable, cursor_table, fade_table, gait_table,
                                       task_table)
from scuffle.components import FiredEvents

LINKS = ("c0", "c1", "c2", "c3", "aux", "nxt", "incoming")


def test_the_row_links_and_free_lists_are_int32():
    """The task table's links, the human table's stack, queue, depth and queued count and
    every table's generations and free list hold int32; the columns the original or a
    counter needs wider stay int64 (held bits, a loop's wraps, a partner's entity)."""
    tasks = task_table(4)
    for col in LINKS:
        assert getattr(tasks, col).dtype == np.int32, col
    for col in ("held", "wraps", "partner"):
        assert getattr(tasks, col).dtype == np.int64, col
    humans = HumanTable(4)
    for col in ("stack", "queue", "depth", "queued"):
        assert getattr(humans, col).dtype == np.int32, col
    assert humans.flags.dtype == np.int64
    for t in (tasks, cursor_table(4), fade_table(4), gait_table(4)):
        assert t.gen.dtype == ROW_LINK and t.free_rows.dtype == ROW_LINK
        assert t.n_free.dtype == np.int64


def test_a_table_refuses_to_grow_past_what_a_link_names():
    """Asking for more rows than an int32 names is refused before anything is allocated
    (BudgetError, a ValueError naming the limit); the table is as it was."""
    t = cursor_table(4)
    r = t.alloc()
    with pytest.raises(BudgetError, match=f"{MAX_ROWS:,} rows"):
        t.reserve(MAX_ROWS + 1)
    assert t.capacity == 4 and t.live[r] and t.in_use == 1
    assert t.reserve(8) and t.capacity == 16                       # an ordinary growth still doubles


def test_a_generation_wraps_to_zero_never_below():
    """Freeing a row at the largest generation gives it generation 0: a handle of the
    old row is stale (its generation differs), and no generation is ever negative."""
    t = cursor_table(2)
    r = t.alloc()
    t.gen[r] = MAX_ROWS
    t.free(r)
    assert t.gen[r] == 0 and not t.live[r]
    r2 = t.alloc()
    assert r2 == r
    t.free(r2)
    assert t.gen[r] == 1


def test_fired_events_make_their_own_list_only_when_read_unlinked():
    """A human's FiredEvents holds no list of its own until one is read while it is not
    linked to its instance (a crowd's are linked): the list read is kept, and one
    assigned is the one read back."""
    fe = FiredEvents()
    assert fe._own is None
    got = fe.events
    assert got == [] and fe.events is got
    mine = ["x"]
    fe.events = mine
    assert fe.events is mine
    assert FiredEvents(["a"]).events == ["a"]
