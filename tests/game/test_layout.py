"""game.tools.layout: the walk's rows, their scatter, the renumbering into walk order, and the
bench's layout pass (no timing assertions: speed is measured by the benchmark)."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.base.enums import TaskType
from scuffle.anim.engine.store import MAX_ROWS
from scuffle.game.tools.bench import REAL_CYCLE, build_crowd, crowd_checksum
from scuffle.game.tools.layout import cpu_caches, layout_pass, renumber, walk_rows, walk_scatter

_FADE, _GAIT = int(TaskType.FADE), int(TaskType.GAIT)


def _churned(n: int = 60, updates: int = REAL_CYCLE + 8, seed: int = 2):
    game = build_crowd(n, "realistic", "compiled", seed, 1)
    for _ in range(updates):
        game.step()
    return game


def _rows(game) -> np.ndarray:
    return np.flatnonzero(game.player.stores.humans.live)


def _logical(stores, rows) -> list:
    """Each human's stack, queue and what they link, as values (no row numbers): what a
    renumbering must keep."""
    hum, tsk, cur, fad, gai = stores.humans, stores.tasks, stores.cursors, stores.fades, stores.gaits

    def cursor(c):
        return None if c < 0 else tuple(getattr(cur, k)[c].tobytes() for k in cur._columns)

    def task(r, depth=0):
        if r < 0:
            return None
        own = tuple(getattr(tsk, k)[r].tobytes() for k in tsk._columns
                    if k not in ("c0", "c1", "c2", "c3", "aux", "nxt", "incoming"))
        ty = int(tsk.type[r])
        aux = None
        if ty == _FADE and tsk.aux[r] >= 0:
            aux = (fad.el[tsk.aux[r]], fad.dur[tsk.aux[r]])
        elif ty == _GAIT and tsk.aux[r] >= 0:
            aux = tuple(getattr(gai, k)[tsk.aux[r]].tobytes() for k in gai._columns)
        links = tuple(cursor(getattr(tsk, k)[r]) for k in ("c0", "c1", "c2", "c3"))
        more = (task(tsk.nxt[r], depth + 1), task(tsk.incoming[r], depth + 1)) if depth < 8 else ()
        return own, aux, links, more

    return [([task(int(r)) for r in hum.stack[h, :hum.depth[h]]], [task(int(r)) for r in hum.queue[h, :hum.queued[h]]])
            for h in rows]


def test_walk_rows_are_each_stack_task_and_its_links_once_in_walk_order():
    game = _churned()
    try:
        st = game.player.stores
        rows = _rows(game)
        got = walk_rows(st, rows)
        tasks = got["tasks"]
        assert len(np.unique(tasks)) == len(tasks)
        first = [int(st.humans.stack[h, 0]) for h in rows if st.humans.depth[h]]
        pos = {int(r): i for i, r in enumerate(tasks)}
        assert [pos[r] for r in first] == sorted(pos[r] for r in first)      # the humans in walk order
        stacked = {int(r) for h in rows for r in st.humans.stack[h, :st.humans.depth[h]]}
        assert stacked <= set(pos)
        linked = {int(getattr(st.tasks, k)[r]) for r in tasks for k in ("c0", "c1", "c2", "c3")} - {-1}
        assert set(got["cursors"].tolist()) == linked
        assert all(st.tasks.type[r] == _GAIT for r in tasks if st.tasks.aux[r] in set(got["gaits"].tolist())
                   and st.tasks.type[r] != _FADE)
    finally:
        game.close()


def test_renumbering_keeps_every_human_s_stack_and_puts_the_walk_in_order():
    game = _churned()
    try:
        st = game.player.stores
        rows = _rows(game)
        before = _logical(st, rows)
        scattered = walk_scatter(st, rows)
        gen0 = {name: getattr(st, name).gen.copy() for name in ("tasks", "cursors", "fades", "gaits")}
        live0 = {name: getattr(st, name).live.copy() for name in gen0}
        moved = renumber(st, rows)
        assert moved["tasks"] > 0 and moved["cursors"] > 0
        game.player.batch.validate()                   # every link in bounds, every free list whole
        assert _logical(st, rows) == before            # the same stacks, queues, tasks and cursors
        tidy = walk_scatter(st, rows)
        for t in ("tasks", "cursors"):
            assert tidy[t]["near_share"] == 1.0 and tidy[t]["mean_distance"] == 1.0
            assert tidy[t]["in_use"] == scattered[t]["in_use"]
        assert scattered["tasks"]["near_share"] > 0.5  # taken near each human's own (rules.near_free_row)
        assert tidy["lines_per_human"] < scattered["lines_per_human"]
        for name in gen0:
            t = getattr(st, name)
            n = int(t.n_free[0])
            free = t.free_rows[:n]
            assert sorted(free.tolist()) == np.flatnonzero(~t.live).tolist()
            assert int(t.live.sum()) == int(live0[name].sum())
            # a row whose occupant moved away counts its generation up (no old handle reads a
            # new occupant); none counts down
            grew = (t.gen.astype(np.int64) - gen0[name]) & MAX_ROWS
            assert set(np.unique(grew).tolist()) <= {0, 1}
    finally:
        game.close()


@pytest.mark.slow
@pytest.mark.bits
def test_the_layout_pass_gives_the_same_bits_and_leaves_the_game_as_it_was():
    """The kernels on the rows renumbered into walk order give the same status, counts and
    poses as on the rows as they lie, and the game goes on as one that never ran the pass."""
    game = _churned(48, REAL_CYCLE + 6, seed=4)
    other = _churned(48, REAL_CYCLE + 6, seed=4)
    try:
        got = layout_pass(game, repeats=1, turns=1)
        assert got is not None and got["same_bits"] is True
        assert got["humans"] == 48
        assert got["scatter_walk_order"]["tasks"]["near_share"] == 1.0
        assert got["scatter"]["tasks"]["near_share"] < 1.0
        assert set(got["as_they_lie_us"]) == set(got["walk_order_us"]) == {"step", "pose"}
        other.step()                                   # the pass stepped one update
        for _ in range(REAL_CYCLE):
            game.step()
            other.step()
        assert game.checksum() == other.checksum()
        assert crowd_checksum(game) == crowd_checksum(other)
    finally:
        game.close()
        other.close()


def test_the_layout_pass_declines_the_kernels_on_threads():
    game = build_crowd(8, "realistic", "compiled", 1, 2)
    try:
        game.step()
        assert layout_pass(game, repeats=1, turns=1) is None
    finally:
        game.close()


def test_the_caches_are_read_from_the_operating_system():
    import os

    caches = cpu_caches()
    assert all(isinstance(v, int) and v > 0 for v in caches.values())
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache/index0"):
        assert "L1" in caches and (len(caches) == 1 or caches["L1"] < max(caches.values()))


def test_bench_takes_the_layout_flag():
    import argparse

    from scuffle.game.tools import bench

    p = argparse.ArgumentParser()
    bench.bench_arguments(p)
    assert p.parse_args(["--layout"]).layout is True and p.parse_args([]).layout is False
