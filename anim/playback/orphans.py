"""Tasks made and never placed go back to the pool: at the start of the next step, which
is the end of the update that made them (the commands of an update come after its step).

A task made by the handle API (``player.clip(...)``, ``player.loop(...)``...) takes a task
of the pool at once; it gets its one place when it goes on a stack (change, push,
insert_bottom), in a queue (enqueue) or becomes another task's next task. One never
placed (a handle made and dropped; a command refused after its next task was made, as in
``player.change(h, player.clip(h, BAD, player.loop(h, 358)))``) would otherwise hold its
task for good, and a long session would end with the pool full. So the step's start
gives back, without a release (no held flags, no end callback: it never played), every
task counted out since the last step that has no place and is not on the deferred list,
with the next tasks it owns. A task made and placed within the same update is untouched;
a handle kept across a step onto a task it never placed is stale after it. The prepared
commands make and place their tasks in one call, so they leave none.

Ours: the original's constructors take from the free list (0x001054c8) and only a
release gives back (0x00105510 from 0x00105570); its callers place every task they make,
so it has no such sweep (docs/original.md, "The stack, the queue and the pool").
"""
from __future__ import annotations

from typing import Any

import numpy as np

from scuffle.anim.playback.tasks import task_at

__all__ = ["give_back_unplaced"]


def give_back_unplaced(rules: Any) -> int:
    """Every task the pool counted out since the last call (``TaskPool.made``; every row
    when that is unknown) that has no place and is not released, given back to the pool
    with the next tasks it owns (``rules.discard``). In: the stack rules (a Player: its
    ``pool``, ``stores`` and ``discard``). Out: how many tasks were given back."""
    pool = rules.pool
    made = pool.made
    pool.made = []
    ts = rules.stores.tasks
    if made is None:
        out, placed, released = pool.out, ts.placed, ts.released
        n = min(len(out), len(placed))
        rows = np.flatnonzero(out[:n] & ~placed[:n] & ~released[:n]).tolist()
    else:
        rows = made
    # the fast views (plain-int reads); a discard does not replace these arrays
    out, placed, released = pool.m_out, ts.m_placed, ts.m_released
    before = pool.n_out
    for r in rows:
        if r < len(out) and out[r] and not placed[r] and not released[r]:
            task = task_at(ts, r)
            if task is not None:
                rules.discard(task)
    return before - pool.n_out
