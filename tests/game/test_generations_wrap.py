"""A row's generation wraps to 0 in the engine's own kernels too (int32 generations,
anim.engine.store.FRAME_COLUMNS), and a snapshot of such rows round-trips."""
from __future__ import annotations

import numpy as np

from scuffle.anim.engine.store import MAX_ROWS
from scuffle.game.runtime.snapshot import Snapshot

from gamehelp import ai_fight, traced


def test_generations_at_the_limit_wrap_to_zero_in_a_fight():
    """Every free row of the engine's tables set to the largest generation before a fight
    with two AIs: the rows the fight takes and gives back (by the flush's and the step's
    kernels and by Python) come back at generation 0, never below, and a snapshot file of
    that state passes its checks and replays the same updates."""
    a, b = ai_fight(), ai_fight()
    try:
        st = a.player.stores
        tables = (st.tasks, st.cursors, st.fades, st.gaits)
        at_limit = []
        for t in tables:
            rows = t.free_rows[:int(t.n_free[0])].copy()
            t.gen[rows] = MAX_ROWS
            at_limit.append(rows)
        traced(a, 60)
        wrapped = 0
        for t, rows in zip(tables, at_limit):
            assert int(t.gen.min()) >= 0
            moved = rows[t.gen[rows] != MAX_ROWS]          # taken and given back since
            assert (t.gen[moved] < 1000).all()              # from the limit through 0, counting up again
            wrapped += len(moved)
        assert wrapped > 0
        back = Snapshot.from_bytes(a.snapshot().to_bytes())
        expected = traced(a, 20)
        b.restore(back)
        assert traced(b, 20) == expected and b.checksum() == a.checksum()
    finally:
        a.close()
        b.close()
