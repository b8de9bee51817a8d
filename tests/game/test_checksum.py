"""Game.checksum(): one digest of the whole state, equal for equal states, different for any field.

The checksum (game.runtime.snapfile: the counts, the names, the saved tables' digests and
the rest of the values in one canonical form) is read three ways: from a Game's own
tables and lists (``Game.checksum``), from a snapshot (``Snapshot.checksum``) and from a
file read back. These tests hold the three equal, and change one field at a time (each
column of each saved table, each field of the counts, the fight rules' counters and
rows, a stateful action's state) to see the digest change.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.engine import plaindata
from scuffle.anim.engine.store import block_arrays
from scuffle.game.runtime import snapfile as F
from scuffle.game.runtime import snapshot as SN
from scuffle.game.runtime.snapshot import Snapshot

from gamehelp import ai_fight, traced


def _busy_fight():
    """A fight of two AIs at an update with rows in use in the fade and gait tables."""
    g = ai_fight()
    st = g.player.stores
    for _ in range(300):
        traced(g, 1)
        if g.update > 20 and st.fades.live.any() and st.gaits.live.any():
            break
    assert st.fades.live.any() and st.gaits.live.any()
    return g


@pytest.fixture(scope="module")
def fight():
    """``_busy_fight`` (its state is read, never changed, by the tests that share it)."""
    g = _busy_fight()
    yield g
    g.close()


def _rebuilt(data: bytes, edit) -> bytes:
    version, config, sections = F.sections_of(data)
    return F.assemble([(n, edit(n, b)) for n, b in sections], version, config)


def _flipped(a: np.ndarray, i: tuple) -> None:
    """Change item ``i`` of ``a`` to another value of its dtype."""
    if a.dtype == np.bool_:
        a[i] = not a[i]
    elif a.dtype.kind == "f":
        a[i] = a[i] + 0.5 if np.isfinite(a[i]) else 1.0
    else:
        a[i] = a[i] + 1 if a[i] < 0 else a[i] ^ 1       # (-1, "none", made 0)


def _table_columns(data: bytes, table: str) -> list[str]:
    sec = dict(F.sections_of(data)[2])[f"table.{table}"]
    return list(F.table_block(sec)[2])


# A row of these tables holds some columns only for one kind of row (the checks refuse
# the others): the row the test changes is made so, in the file it starts from.
_BASE = {
    "ais": {"has_gauss": True},                               # (gauss is read where has_gauss)
    "pending": {"live": True, "kind": 1, "what": 2, "serial": 5, "move": 0},      # an end
    "pending.window": {"live": True, "kind": 0, "what": -1, "serial": 0, "move": 30},
}
# the columns each such row reads (the others are refused when not their fixed value)
_READ = {"pending": ("live", "kind", "entity", "what", "serial"), "pending.window": ("live", "kind", "entity", "move")}


def _column_flip(table: str, column: str | None, base: dict | None = None):
    """An edit of a file's ``table`` section: the first row in use (row 0 with ``base``)
    given ``base``'s values, then one item of ``column`` changed (None: none; the free
    list's arrays: their first item)."""
    def edit(name: str, b: bytes) -> bytes:
        if name != f"table.{table}":
            return b
        rows, raw, cols, block = F.table_block(b)
        col = block_arrays(cols, rows, block).__getitem__
        live = np.flatnonzero(col("live"))
        r = int(live[0]) if len(live) and base is None else 0
        for n, x in (base or {}).items():
            col(n)[r] = x
        if column is not None:
            a = col(column)
            i = (0 if column in ("n_free", "free_rows") else r,) + (0,) * (a.ndim - 1)
            if table == "pending" and column == "kind":
                a[i] ^= 1                     # (a window made an end, or the reverse: the kinds there are)
            else:
                _flipped(a, i)
        return F.table_section(rows, raw, cols, block)
    return edit


# the tables a checksum covers (the fight log is a record for the host: out of it)
_HASHED = [t for t in F.TABLES if t != "log"]


def test_a_game_its_snapshot_and_its_bytes_give_one_checksum_update_after_update(fight):
    g = ai_fight()
    try:
        for _ in range(30):
            traced(g, 1)
            snap = g.snapshot()
            live = SN.checksum(g)
            # the Game's own tables and lists are read (not a snapshot's view)
            assert F.checksum_game(g, SN._entity_next(g.world), SN._stateful(g, SN._plan(g)),
                                   SN._plan(g).arena) == live
            assert live == snap.checksum() == Snapshot.from_bytes(snap.to_bytes()).checksum()
            assert live == F.checksum(g, SN.take(g, view=True)._state)
    finally:
        g.close()


@pytest.mark.parametrize("table", [*_HASHED, "pending.window"])
def test_each_column_of_each_saved_table_changes_the_checksum(fight, table):
    data = fight.snapshot().to_bytes()
    name = table.split(".")[0]
    given = _BASE.get(table)
    if given is not None:                    # the row changed made of the kind that reads the column
        data = _rebuilt(data, _column_flip(name, None, given))
    base = Snapshot.from_bytes(data).checksum()
    columns = [c for c in _table_columns(data, name) if c in _READ.get(table, (c,))]
    assert "live" in columns
    for column in columns:
        changed = Snapshot.from_bytes(_rebuilt(data, _column_flip(name, column, given and {}))).checksum()
        assert changed != base, f"table.{name}.{column}"


def test_the_fight_log_is_out_of_the_checksum(fight):
    data = fight.snapshot().to_bytes()
    base = Snapshot.from_bytes(data).checksum()
    assert Snapshot.from_bytes(_rebuilt(data, _column_flip("log", "update"))).checksum() == base


def _counts_change(field: str):
    def edit(name: str, b: bytes) -> bytes:
        if name != "counts":
            return b
        c = F.counts_of(b)
        if field in F.COUNTERS:
            c[field] += 1
        elif field == "pool.out":
            c[field] = c[field].copy()
            c[field][0] = not c[field][0]
        elif len(c[field]):
            c[field] = c[field].copy()
            c[field].reshape(-1)[0] += 1
        else:                                    # an empty list: one more entry
            c[field] = np.zeros((1, 2) if field == "deferred" else 1, np.int64)
        return F.counts_section(c)
    return edit


@pytest.mark.parametrize("field", [*F.COUNTERS, *F.COUNT_LISTS, "pool.out"])
def test_each_field_of_the_counts_changes_the_checksum(fight, field):
    data = fight.snapshot().to_bytes()
    base = Snapshot.from_bytes(data).checksum()
    assert Snapshot.from_bytes(_rebuilt(data, _counts_edit_checked(field))).checksum() != base


def _counts_edit_checked(field: str):
    edit = _counts_change(field)

    def checked(name: str, b: bytes) -> bytes:
        out = edit(name, b)
        assert name != "counts" or out != b
        return out
    return checked


@pytest.mark.parametrize("path, value", [
    (("fight", "damage"), 1234.5),
    (("fight", "ko_at"), 7),
    (("fight", "counts"), [9, 0, 0, 0, 1, 1]),
    (("fight", "kinds"), {"strike": 99}),
    (("combats", "texts"), ["", "free", "other"]),
    (("engine", "instances"), ["h1", "h0"]),
])
def test_the_plain_values_change_the_checksum(fight, path, value):
    data = fight.snapshot().to_bytes()
    base = Snapshot.from_bytes(data).checksum()

    def edit(name: str, b: bytes) -> bytes:
        if name != "values":
            return b
        v = F.values_of(b)
        v[path[0]][path[1]] = value
        return F.values_section(v)
    assert Snapshot.from_bytes(_rebuilt(data, edit)).checksum() != base


def _live_tables(g) -> dict:
    st, ctx = g.player.stores, g.ctx
    return {"cursors": st.cursors, "fades": st.fades, "gaits": st.gaits, "tasks": st.tasks, "humans": st.humans,
            "bodies": ctx.bodies, "combats": ctx.combats}


@pytest.mark.parametrize("table", ["cursors", "fades", "gaits", "tasks", "humans", "bodies", "combats"])
def test_a_games_checksum_follows_each_column_of_its_tables(table):
    """Game.checksum reads the Game's own tables: one item of any column of a row in use
    changed gives another digest, put back gives the same; a free row's columns (not
    state: a row is reset when taken) are not read."""
    g = _busy_fight()
    try:
        base = g.checksum()
        t = _live_tables(g)[table]
        arrays = block_arrays(F._columns_of(t), t.capacity, t.block)
        live = np.flatnonzero(t.live)
        free = np.flatnonzero(~t.live.astype(bool))
        assert len(live)
        for name, a in arrays.items():
            if name in ("live", "n_free", "free_rows", "gen"):
                continue
            i = (int(live[0]),) + (0,) * (a.ndim - 1)
            old = a[i].copy()
            _flipped(a, i)
            assert g.checksum() != base, f"{table}.{name}"
            a[i] = old
            assert g.checksum() == base, f"{table}.{name} put back"
            if len(free):
                j = (int(free[0]),) + (0,) * (a.ndim - 1)
                old = a[j].copy()
                _flipped(a, j)
                assert g.checksum() == base, f"{table}.{name} of a free row"
                a[j] = old
    finally:
        g.close()


def test_a_games_checksum_follows_the_fight_rules_and_the_ais():
    g = ai_fight()
    try:
        traced(g, 20)
        base = g.checksum()
        ai = g.fight.controllers[0]
        ai.rng.random()                       # a number drawn: the generator's words move on
        assert g.checksum() != base
        g2 = ai_fight()
        try:
            traced(g2, 20)
            assert g2.checksum() == base
            g2.fight.stats.damage += 1.0
            assert g2.checksum() != base
            g2.fight.stats.damage -= 1.0
            assert g2.checksum() == base
        finally:
            g2.close()
    finally:
        g.close()
