"""Rows taken near the human's own (anim.engine.rules.near_free_row, Table.take_near,
anim.engine.kernels_write.take_row): the free row nearest a hint, the lower first at equal
distance, the top of the free list when none is near; the free list stays the one truth
(its index a cache, checked and made again), so the compiled take and Python's leave the
same bytes, a restored snapshot takes the rows the original took, every thread count
leaves the same tables, and the realistic crowd's walk reads its task rows side by side.
The speed is measured by ``scuffle bench --layout`` and ``--crowd realistic``, never here.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
from numba import njit

from scuffle.anim.engine import crowd as crowd_mod
from scuffle.anim.engine.kernels_write import take_row
from scuffle.anim.engine.rules import NEAR_ROWS, near_free_row, near_scaled
from scuffle.anim.engine.store import Table, cursor_table
from scuffle.game.runtime.snapshot import Snapshot
from scuffle.game.tools.bench import build_crowd
from scuffle.game.tools.layout import walk_scatter

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


@njit
def _compiled_take(live, free_rows, n_free, at, hint):
    return take_row(live, free_rows, n_free, at, hint)


def _table(cap: int, live_rows) -> "object":
    """A cursor table of ``cap`` rows with ``live_rows`` taken (from the top of the list,
    each then taken out by hint so that the list is shuffled as a game leaves it)."""
    t = cursor_table(cap)
    for r in live_rows:
        got = t.take_near(r)
        assert got == r
    return t


def _free_ok(t) -> None:
    """The free list holds every row not live, each once."""
    n = int(t.n_free[0])
    free = t.free_rows[:n]
    assert sorted(free.tolist()) == np.flatnonzero(~t.live).tolist()


def test_the_nearest_free_row_is_taken_the_lower_first():
    t = _table(64, [10, 11, 12, 14, 20])
    assert t.take_near(12) == 13                       # one away, below taken: above
    assert t.take_near(11) == 9                        # 9 and 15 both two away: the lower
    assert t.take_near(11) == 8                        # 9, 10, 12, 13 taken: three away, the lower
    assert t.take_near(40) == 40                       # the hint itself when free
    _free_ok(t)


def test_no_free_row_near_the_hint_takes_the_top_of_the_list():
    t = _table(128, list(range(30, 30 + 2 * NEAR_ROWS + 1)))
    n = int(t.n_free[0])
    top = int(t.free_rows[n - 1])
    assert t.take_near(30 + NEAR_ROWS) == top          # every row within NEAR_ROWS is live
    assert t.take_near(-1) == int(t.free_rows[n - 2])  # no hint: the top too
    _free_ok(t)
    assert near_free_row(t.live, t.capacity, 5) == 5
    assert near_free_row(t.live, t.capacity, -1) == -1
    assert near_scaled(-1, 64, 128) == -1 and near_scaled(100, 64, 128) == 50


def _takes_and_frees(rng, a, b, steps, share, hints, take_a, take_b, before_take=None) -> None:
    """``steps`` random turns on the tables ``a`` and ``b``: a take near a random hint in
    ``range(*hints)`` (``share`` of the turns, while a row is free), the two takes giving
    the same row, or the free of a random live row in both; the blocks equal after each."""
    for step in range(steps):
        if rng.random() < share and a.n_free[0] > 0:
            hint = rng.randrange(*hints)
            if before_take is not None:
                before_take(step)
            assert take_a(a, hint) == take_b(b, hint)
        else:
            live = np.flatnonzero(a.live)
            if len(live):
                r = int(live[rng.randrange(len(live))])
                a.free(r)
                b.free(r)
        assert a.block.tobytes() == b.block.tobytes()


def test_a_row_taken_from_the_middle_leaves_the_list_a_function_of_the_list():
    """The index is a cache: wrong or stale, the take gives the same row and list."""
    rng = random.Random(3)
    a, b = cursor_table(256), cursor_table(256)

    def spoil(step):
        if step % 7 == 0:
            b.free_at[:] = rng.randrange(-5, 300)   # a wrong index: made again at use

    take = Table.take_near
    _takes_and_frees(rng, a, b, 600, 0.55, (-1, 256), take, take, spoil)
    _free_ok(a)


def test_the_compiled_take_is_pythons():
    rng = random.Random(9)
    py, kc = cursor_table(512), cursor_table(512)
    _takes_and_frees(rng, py, kc, 1500, 0.6, (-1, 530), Table.take_near,
                     lambda t, hint: _compiled_take(t.live, t.free_rows, t.n_free, t.free_at, np.int64(hint)))


def _walk_near_share(game) -> float:
    st = game.player.stores
    return walk_scatter(st, np.flatnonzero(st.humans.live))["tasks"]["near_share"]


def test_the_realistic_crowds_walk_reads_its_task_rows_side_by_side():
    """After 40 updates most successive task and cursor rows of the walk lie within 8
    rows of the last (rows taken from the top of the free list the flush fills would lie
    anywhere: fewer than 1% within 8)."""
    game = build_crowd(300, "realistic", "compiled", 1, 1)
    try:
        for _ in range(40):
            game.step()
        share = _walk_near_share(game)
        assert share >= 0.7, share
        cur = walk_scatter(game.player.stores, np.flatnonzero(game.player.stores.humans.live))["cursors"]
        assert cur["near_share"] >= 0.7, cur
    finally:
        game.close()


def _blocks(game) -> bytes:
    st = game.player.stores
    return b"".join(getattr(st, t).block.tobytes() for t in ("tasks", "cursors", "fades", "gaits", "humans"))


def _rows(game) -> dict:
    """Every table's free list, live flags, generations and the columns of its rows in
    use (a snapshot file keeps the rows in use, not a free row's old numbers)."""
    st = game.player.stores
    out = {}
    for name in ("tasks", "cursors", "fades", "gaits"):
        t = getattr(st, name)
        out[name + ".free"] = t.free_rows[:int(t.n_free[0])].tolist()
        out[name + ".live"] = t.live.tobytes()
        out[name + ".gen"] = t.gen.tobytes()
        for c in t._columns:
            out[f"{name}.{c}"] = np.asarray(getattr(t, c))[t.live].tobytes()
    return out


def test_a_restore_takes_the_rows_the_original_took():
    """After takes from the middle of the free lists, a snapshot restored in place replays
    the same bytes, and a twin given the snapshot's file (its indexes stale) takes the same
    rows."""
    a = build_crowd(40, "realistic", "compiled", 4, 1)
    b = build_crowd(40, "realistic", "compiled", 4, 1)
    try:
        for _ in range(40):                            # (every command kind learnt: none made twice)
            a.step()
            b.step()
        snap = a.snapshot()
        data = snap.to_bytes()
        want, want_rows = [], []
        for _ in range(25):
            a.step()
            want.append(_blocks(a))
            want_rows.append(_rows(a))
        assert np.any(a.player.stores.tasks.free_at != -1)  # the index was used
        a.restore(snap)
        b.restore(Snapshot.from_bytes(data))
        for g in (a, b):
            for t in ("tasks", "cursors", "fades", "gaits"):
                getattr(g.player.stores, t).free_at[:] = 0   # stale: checked and made again
        for k in range(25):
            a.step()
            b.step()
            assert _blocks(a) == want[k], k
            got = _rows(b)
            assert got == want_rows[k], (k, [x for x in got if got[x] != want_rows[k][x]])
    finally:
        a.close()
        b.close()


def test_every_thread_count_leaves_the_same_tables(monkeypatch):
    """The realistic crowd on 1, 2 and 3 threads (chunks of one human allowed): every
    table's bytes the same after each update (the change of pair's cursor rows taken in
    human order on the calling thread)."""
    monkeypatch.setattr(crowd_mod, "MIN_CHUNK", 1)
    games = [build_crowd(37, "realistic", "compiled", 6, n) for n in (1, 2, 3)]
    try:
        for u in range(40):
            for g in games:
                g.step()
            ref = _blocks(games[0])
            for g, n in zip(games[1:], (2, 3)):
                assert _blocks(g) == ref, f"update {u}, {n} threads"
        assert games[0].player.batch.pair_changes > 0
    finally:
        for g in games:
            g.close()
