"""Each world's tables own their "layout changed" signal (anim.engine.store.LayoutSignal):
one Game's tables growing leaves another Game's kept views (the prepared commands' views
of the tables, the kernels' column tuples) in place; its own tables growing makes them
again; a snapshot arena over tables of several signals sees any of them grow."""
from __future__ import annotations

import numpy as np

from scuffle.anim.engine.store import LayoutSignal, Table, TableArena
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.tools.bench import build_crowd


def _fight(updates: int = 8):
    g = build_crowd(2, "realistic")
    for _ in range(updates):
        g.step()
    return g


def _run_until_a_command(g, limit: int = 60) -> None:
    """Step ``g`` until its prepared commands' compiled writers ran again (the AIs' moves)."""
    runs = g.player.cmd_kernel_runs
    for _ in range(limit):
        g.step()
        if g.player.cmd_kernel_runs != runs:
            return
    raise AssertionError("no prepared command in the fight's updates")


def test_one_games_tables_growing_leaves_another_games_views():
    a, b = _fight(), _fight()
    _run_until_a_command(b)
    views, cols, stamp = b.player.prepared._cmd_views, b.player.batch._cols, b.player.layout
    assert views is not None and views[0] == stamp
    a_stamp = a.player.layout
    s = demo_set()
    for i in range(80):                                  # a's tables grow (humans, bodies, tasks)
        a.add_human(f"x{i}", s, (float(i), 5.0, 0.0))
        a.change(f"x{i}", a.player.loop(a.instance(f"x{i}"), Move.IDLE))
    a.step()
    Table({"x": np.int64}, capacity=2).reserve(64)      # and a table of no world
    assert a.player.layout != a_stamp
    assert b.player.layout == stamp
    _run_until_a_command(b)                              # b's next commands and steps: its views kept
    assert b.player.prepared._cmd_views is views and b.player.batch._cols is cols


def test_a_games_own_tables_growing_makes_its_views_again():
    g = _fight()
    _run_until_a_command(g)
    views, stamp = g.player.prepared._cmd_views, g.player.layout
    st = g.player.stores
    st.tasks.reserve(st.tasks.capacity + 1)              # new arrays for the task table
    assert g.player.layout != stamp
    _run_until_a_command(g)
    fresh = g.player.prepared._cmd_views
    assert fresh is not views and fresh[0] == g.player.layout and fresh[4].block is st.tasks.block


def test_an_arena_over_several_signals_sees_any_of_its_tables_grow():
    t1, t2 = Table({"x": np.int64}, capacity=2), Table({"y": np.float64}, capacity=2)
    arena = TableArena((t1, t2))
    assert arena.gather() and arena.whole() and arena.whole()
    t2.reserve(t2.capacity + 1)                           # t2's own signal moves
    assert not arena.whole()
    assert arena.gather() and arena.whole()
    sig = LayoutSignal()
    sig.join(t1)                                          # t1 reports elsewhere from now on
    assert arena.whole()                                  # (its block stayed)
    t1.reserve(t1.capacity + 1)
    assert not arena.whole()
