"""Snapshot files are data: what a stranger's bytes can and cannot do.

A snapshot file holds a header, a directory, raw table blocks with their declared
columns and plain values (game.runtime.snapfile, anim.engine.plaindata). These tests try it as
a hostile peer would: code in the bytes, a forged digest over tampered rows, sizes that
ask for gigabytes, files that are not files, a snapshot of one Game put into another.
Each refusal is one SnapshotError line naming the field, and the Game it was restored
into is unchanged (its checksum before and after).
"""
from __future__ import annotations

import os
import pickle
import struct
import threading

import numpy as np
import pytest

from scuffle.anim.engine import plaindata
from scuffle.anim.engine.store import block_arrays
from scuffle.anim.data.options import PlayerOptions
from scuffle.game.runtime import snapfile as F
from scuffle.game.runtime.snapshot import Snapshot, SnapshotError
from scuffle.game.runtime.world import Game

from gamehelp import ai_fight, traced


_fight, _trace = ai_fight, traced


@pytest.fixture
def pair():
    """Two Games set up alike (fight rules, two AIs), the first 40 updates on."""
    a, b = _fight(), _fight()
    _trace(a, 40)
    yield a, b
    a.close()
    b.close()


def _rebuilt(data: bytes, edit) -> bytes:
    """``data`` with its sections passed through ``edit(name, bytes) -> bytes`` and the
    header's sizes and sha256 recomputed: what an attacker who edits a file sends."""
    version, config, sections = F.sections_of(data)
    return F.assemble([(n, edit(n, b)) for n, b in sections], version, config)


def _values_edit(change):
    def edit(name: str, b: bytes) -> bytes:
        if name != "values":
            return b
        v = F.values_of(b)
        change(v)
        return F.values_section(v)
    return edit


def _counts_edit(change):
    def edit(name: str, b: bytes) -> bytes:
        if name != "counts":
            return b
        c = F.counts_of(b)
        change(c)
        return F.counts_section(c)
    return edit


def _column_edit(table: str, column: str, value, row: int | None = None):
    """An edit that writes ``value`` into ``table.column`` at a live row (the first, or ``row``)."""
    def edit(name: str, b: bytes) -> bytes:
        if name != f"table.{table}":
            return b
        rows, raw, cols, block = F.table_block(b)
        col = block_arrays(cols, rows, block).__getitem__
        live = np.flatnonzero(col("live"))
        assert len(live), f"no row in use in {table}"
        r = int(live[0]) if row is None else row
        c = col(column)
        if c.dtype == np.bool_:
            c.view(np.uint8)[r] = value               # a raw byte, as a forged file holds it
        else:
            c[r] = value
        return F.table_section(rows, raw, cols, block)
    return edit


# ---------------------------------------------------------------- no code, ever
def test_a_pickle_payload_runs_nothing_and_is_refused(tmp_path):
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    payload = pickle.dumps(Boom())
    for data in (payload, b"SCUFSNAP" + struct.pack("<IQ", 1, len(payload)) + bytes(32) + payload):
        with pytest.raises(SnapshotError) as e:
            Snapshot.from_bytes(data)
        assert "\n" not in str(e.value)
    assert not marker.exists()


def test_the_loading_path_holds_no_unpickler_eval_or_import():
    import inspect
    from scuffle.anim.engine import plaindata as P, snapcheck, snapkernel, snapshot as AS
    from scuffle.game.runtime import snapshot as GS
    for mod in (F, P, snapcheck, snapkernel, AS, GS):
        src = inspect.getsource(mod)
        for bad in ("pickle.load", "Unpickler", "marshal", "eval(", "exec(", "allow_pickle=True", "__import__",
                    "importlib"):
            assert bad not in src, (mod.__name__, bad)


def test_plain_data_refuses_what_is_not_plain():
    class Odd:
        pass
    for v in (Odd(), {1, 2}, float("nan"), 1 << 70, np.zeros(2, np.complex128), lambda: 0):
        with pytest.raises(plaindata.PlainDataError):
            plaindata.encode(v)
    v = {"a": [1, 2.5, None, True, b"x", "s", (3, 4)], 7: np.arange(6, dtype=np.int32).reshape(2, 3)}
    back = plaindata.decode(plaindata.encode(v))
    assert back["a"] == v["a"] and back[7].dtype == np.int32 and (back[7] == v[7]).all()


@pytest.mark.parametrize("data, what", [
    (b"\x08" + struct.pack("<I", 0xFFFFFFFF), "count"),                          # 4 billion items, 5 bytes
    (b"\x0b\x0a\x02" + struct.pack("<QQ", 1 << 40, 1 << 40), "dimension"),     # a 10^24-element array
    (b"\x07" + struct.pack("<I", 1 << 31), "truncated"),                         # 2 GB of bytes promised
    (b"\x08\x01\x00\x00\x00" * 40 + b"\x00", "deep"),                            # nesting
    (b"\x05" + struct.pack("<d", float("inf")), "finite"),
    (b"\x0c", "unknown tag"),
    (b"\x00\x00", "after the value"),
])
def test_plain_data_refuses_crafted_sizes_before_allocating(data, what):
    import tracemalloc
    tracemalloc.start()
    with pytest.raises(plaindata.PlainDataError, match=what):
        plaindata.decode(data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20


# ---------------------------------------------------------------- round trip and checksum
def test_bytes_round_trip_keeps_the_checksum_and_replays(pair):
    a, b = pair
    snap = a.snapshot()
    data = snap.to_bytes()
    back = Snapshot.from_bytes(data)
    assert back.checksum() == snap.checksum() == a.checksum()
    expected = _trace(a, 30)
    b.restore(back)
    assert b.checksum() == back.checksum()
    assert _trace(b, 30) == expected and b.checksum() == a.checksum()


class _Counts:
    """A stateful action whose state holds arrays: a count per update and a few floats."""

    def __init__(self):
        self.n = np.zeros(3, np.int64)
        self.w = np.array([0.5, 0.25], np.float32)

    def __call__(self, ctx) -> None:
        self.n[ctx.update % 3] += 1
        self.w *= np.float32(1.5)

    def save_state(self):
        return {"n": self.n.copy(), "w": self.w.copy(), "tag": ("counts", 1)}

    def load_state(self, state) -> None:
        self.n, self.w = state["n"].copy(), state["w"].copy()

    def state_fits(self, state):
        ok = isinstance(state, dict) and set(state) == {"n", "w", "tag"} and \
            getattr(state["n"], "shape", None) == (3,) and getattr(state["w"], "shape", None) == (2,)
        return None if ok else "not the counts"


def test_a_stateful_actions_arrays_give_one_checksum_live_and_read_back():
    """The checksum hashes a stateful action's arrays as a file holds them: the Game's,
    its snapshot's and the bytes read back agree, and a change of one array's value
    changes it."""
    g, h = _fight(), _fight()
    try:
        for game in (g, h):
            game.ctx.actions.append(_Counts())
        _trace(g, 12)
        snap = g.snapshot()
        back = Snapshot.from_bytes(snap.to_bytes())
        assert back.checksum() == snap.checksum() == g.checksum()
        h.restore(back)
        assert h.checksum() == g.checksum()
        before = g.checksum()
        g.ctx.actions[-1].w[0] += np.float32(1.0)
        assert g.checksum() != before
    finally:
        g.close()
        h.close()


def test_config_digest_is_equal_for_games_set_up_alike_and_names_what_differs(pair):
    a, b = pair
    assert a.config_digest() == b.config_digest()
    other = Game(PlayerOptions(early_finish_above=5))
    try:
        with pytest.raises(SnapshotError, match="differs in: options"):
            other.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
    finally:
        other.close()


def test_config_digest_is_kept_per_game_and_follows_every_change_of_its_configuration():
    """The configuration's digest is computed once per Game; each change of what it is set
    up with (a callback kind, a fight setting, a controller's) gives
    the digest of the parts as they are now, and a file taken before is refused."""
    from scuffle.game.fighters.moveset import demo_set
    g = _fight()
    try:
        def fresh() -> str:
            import hashlib
            return hashlib.sha256(plaindata.encode(F.config_parts(g))).hexdigest()

        seen = {g.config_digest()}
        assert g.config_digest() == fresh()
        old = g.snapshot().to_bytes()
        changes = [lambda: g.callback("test.kind", lambda inst: None),
                   lambda: setattr(g.fight, "round_pause", 11),
                   lambda: setattr(g.fight.controllers[0], "aggression", 0.25),
                   lambda: setattr(g.fight.controllers[0], "think_every", 3),
                   lambda: setattr(g.fight, "separate", not g.fight.separate)]
        for change in changes:
            change()
            now = g.config_digest()
            assert now == fresh() and now not in seen
            seen.add(now)
        # the same anim set, an action that keeps no state: the same parts
        g.add_human("p3", demo_set(), position=(3.0, 0.0, 0.0))
        g.ctx.actions.append(lambda ctx: None)
        assert g.config_digest() == fresh()
        with pytest.raises(SnapshotError, match="set up otherwise"):
            g.restore(Snapshot.from_bytes(old))
    finally:
        g.close()


def test_a_snapshot_object_restores_only_into_its_own_game(pair):
    a, b = pair
    before = b.checksum()
    with pytest.raises(SnapshotError, match="another Game"):
        b.restore(a.snapshot())
    assert b.checksum() == before
    a.record("p1")                                     # a's handles are still its own


def test_the_reference_engine_has_no_byte_form():
    g = _fight(engine="reference")
    try:
        _trace(g, 3)
        with pytest.raises(SnapshotError, match="reference engine"):
            g.snapshot().to_bytes()
    finally:
        g.close()


# ---------------------------------------------------------------- tampered rows and values
TAMPER = [
    (_column_edit("tasks", "type", 0), "tasks.type"),
    (_column_edit("tasks", "type", 2), "tasks.type"),
    (_column_edit("tasks", "c0", 10 ** 9), "tasks.c0"),
    (_column_edit("tasks", "nxt", -7), "tasks.nxt"),
    (_column_edit("tasks", "rate", np.float32(np.nan)), "tasks.rate"),
    (_column_edit("tasks", "placed", 7), "tasks.placed"),
    (_column_edit("cursors", "bank", 99_999), "cursors.bank"),
    (_column_edit("cursors", "t", np.float32(-1.0)), "cursors.t"),
    (_column_edit("cursors", "end", 3), "cursors.end"),
    (_column_edit("cursors", "ev", 10 ** 6), "cursors.ev"),
    (_column_edit("cursors", "n_free", 10 ** 6, row=0), "n_free"),
    (_column_edit("cursors", "gen", -1), "cursors.gen"),
    (_column_edit("humans", "depth", 19), "humans.depth"),
    (_column_edit("humans", "speed", np.inf), "humans.speed"),
    (_column_edit("bodies", "position", np.array([np.nan, 0.0, 0.0])), "bodies.position"),
    (_column_edit("bodies", "attachment", 12345), "bodies.attachment"),
    (_column_edit("combats", "state", 999), "combats.state"),
    (_column_edit("combats", "partner", 4242), "combats.partner"),
    (_column_edit("combats", "health", np.inf), "combats.health"),
    (_counts_edit(lambda c: c.update({"humans.gen": np.append(c["humans.gen"], 0)})), "humans.gen"),
    (_counts_edit(lambda c: c.update({"humans.free": np.append(c["humans.free"], 0)})), "humans"),
    (_counts_edit(lambda c: c.update({"pool.n_out": c["pool.n_out"] + 1})), "pool.n_out"),
    (_counts_edit(lambda c: c.update({"pool.out": np.append(c["pool.out"], True)})), "pool"),
    (_counts_edit(lambda c: c.update({"stats[1]": -1})), "counts.stats[1]"),
    (_counts_edit(lambda c: c.update({"batch.kernel_humans": 10 ** 6})), "counts.batch.kernel_humans"),
    (_counts_edit(lambda c: c.update({"batch.pair_changes": -3})), "counts.batch.pair_changes"),
    (lambda n, b: b[:-1] if n == "counts" else b, "section counts: lengths"),
    (lambda n, b: b[:20] if n == "counts" else b, "section counts: 20 bytes"),
    (_counts_edit(lambda c: c.update({"deferred": np.array([[0, 10 ** 6]])})), "counts.deferred"),
    (_counts_edit(lambda c: c.update({"deferred": np.array([[7, 0]])})), "counts.deferred"),
    (_counts_edit(lambda c: c.update({"update": -1})), "counts.update"),
    (lambda n, b: plaindata.encode({**plaindata.decode(b), "update": 3}) if n == "meta" else b, "meta: update counters"),
    (lambda n, b: b[:-1] + b"\x02" if n == "counts" else b, "counts.pool.out["),
    (_values_edit(lambda v: v.update(fight=(1, 2))), "values.fight"),
    (_values_edit(lambda v: v["engine"]["calls"]["values"].append(("os.system", ("rm -rf /",)))), "calls"),
    (_column_edit("tasks", "on_end", 10 ** 6), "tasks.on_end"),
    (_column_edit("tasks", "on_wrap", 0), "tasks.on_wrap"),
    (_column_edit("tasks", "partner", 3), "tasks.partner"),
    (_column_edit("tasks", "dir_banks", np.arange(8, dtype=np.int32)), "tasks.dir_banks"),
    (_column_edit("humans", "on_report", -5), "humans.on_report"),
    (_counts_edit(lambda c: c.update({"calls.uses": c["calls.uses"] + 1})), "calls.uses"),
    (_counts_edit(lambda c: c.update({"calls.free": np.append(c["calls.free"], 7)})), "calls"),
    (_values_edit(lambda v: v["engine"]["leaving"].append((10 ** 6, 0))), "values.engine.leaving[0]"),
    (_values_edit(lambda v: v["engine"]["calls"].update(uses=[1])), "values.engine.calls"),
    (_values_edit(lambda v: v["combats"].update(texts=["", "free"] * 3)), "texts"),
    (_values_edit(lambda v: v["extras"].append(1)), "extras"),
    (_values_edit(lambda v: v["engine"].update(instances=["p1", "p1"])), "instances"),
    (_values_edit(lambda v: v["engine"]["instances"].__setitem__(1, None)), "values.engine.instances"),
    (_values_edit(lambda v: v["engine"]["leaving"].append((0, 0))), "values.engine.leaving[0]: a row held twice"),
    (lambda n, b: plaindata.encode({**plaindata.decode(b), "bodies": plaindata.encode(None)}) if n == "values" else b,
     "section values: not a map of"),
    (lambda n, b: plaindata.encode({**plaindata.decode(b), "fight": None}) if n == "values" else b,
     "section values: not a map of"),
    (lambda n, b: plaindata.encode({**plaindata.decode(b), "fight": b"\x0c"}) if n == "values" else b,
     "values.fight: "),
    (_values_edit(lambda v: v["engine"].update(instances=[[1], None])), "values.engine.instances[0]"),
    (_values_edit(lambda v: v["engine"].update(loose=[([1], (0, 0, 0, 0.0, None))])), "values.engine.loose[0]"),
    (_values_edit(lambda v: v["combats"].update(owners={0: "p1"})), "values.combats.texts"),
    # the body and combat rows' owners: an entity column each in the counts section
    (_counts_edit(lambda c: _owner(c, "bodies", 0, -1)), "counts.bodies.owner[0]: a row in use owned by no human"),
    (_counts_edit(lambda c: _owner(c, "bodies", 0, -7)), "counts.bodies.owner[0]: an entity below -1"),
    (_counts_edit(lambda c: _owner(c, "bodies", 5, 1)), "counts.bodies.owner[5]: an owner for a row not in use"),
    (_counts_edit(lambda c: _owner(c, "bodies", 1, c["bodies.owner"][0])), "counts.bodies.owner: a human owns two"),
    (_counts_edit(lambda c: _owner(c, "bodies", 0, 999)), "counts.bodies.owner[0]: entity 999 is not a human"),
    (_counts_edit(lambda c: c.update({"bodies.owner": c["bodies.owner"][:-1]})), "counts.bodies.owner: 7 entries"),
    (_counts_edit(lambda c: _owner(c, "combats", 1, -1)), "counts.combats.owner[1]: a row in use owned by no human"),
    (_counts_edit(lambda c: _owner(c, "combats", 6, 2)), "counts.combats.owner[6]: an owner for a row not in use"),
    (_counts_edit(lambda c: _owner(c, "combats", 0, c["combats.owner"][1])), "counts.combats.owner: a human owns"),
    (_counts_edit(lambda c: _owner(c, "combats", 0, 10 ** 12)), "counts.combats.owner[0]: entity 1000000000000"),
]


def _owner(c: dict, table: str, row: int, entity: int) -> None:
    """The counts' owner column of ``table`` with ``entity`` at ``row``."""
    col = c[f"{table}.owner"].copy()
    col[row] = entity
    c[f"{table}.owner"] = col


@pytest.fixture(scope="module")
def tamper_target():
    """The bytes of the first Game of ``pair`` (40 updates on) and the second Game with its
    own snapshot, for the tampered files: built once for the module, each case puts the
    second Game back to that snapshot first (a refused file leaves it unchanged, which the
    case checks; an accepted one steps it on)."""
    a, b = _fight(), _fight()
    _trace(a, 40)
    data = a.snapshot().to_bytes()
    a.close()
    yield data, b, b.snapshot()
    b.close()


@pytest.mark.parametrize("edit, field", TAMPER)
def test_tampered_but_well_framed_files_are_refused_naming_the_field(tamper_target, edit, field):
    original, b, fresh = tamper_target
    b.restore(fresh)
    data = _rebuilt(original, edit)
    before = b.checksum()
    try:
        snap = Snapshot.from_bytes(data)
        b.restore(snap)
    except SnapshotError as e:
        assert "\n" not in str(e) and len(str(e)) < 400
        if field is not None:
            assert field in str(e), str(e)
        assert b.checksum() == before
        return
    assert field is None, "a tampered file was accepted"
    _trace(b, 30)                                     # an edit that changes nothing steps on


def test_a_crafted_end_callback_that_names_no_move_end_is_refused(pair):
    a, b = pair
    _trace(a, 20)

    def forge(v):
        calls = v["engine"]["calls"]["values"]
        i, kind = next((i, cb[0]) for i, cb in enumerate(calls) if cb is not None and cb[0])
        calls[i] = (kind, (ent, "explode", 0))
    ent = a.entity("p1")
    data = _rebuilt(a.snapshot().to_bytes(), _values_edit(forge))
    with pytest.raises(SnapshotError, match="not a fight end"):
        b.restore(Snapshot.from_bytes(data))


# ---------------------------------------------------------------- files that are not files
def test_read_refuses_what_is_not_a_regular_file_without_reading_it(tmp_path):
    with pytest.raises(SnapshotError, match="not a regular file"):
        Snapshot.read("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()
    err: list = []

    def read():
        try:
            Snapshot.read(str(fifo))
        except SnapshotError as e:
            err.append(e)
        done.set()
    threading.Thread(target=read, daemon=True).start()
    assert done.wait(10), "a FIFO hung the reader"
    assert err and "not a regular file" in str(err[0])


def test_read_refuses_a_file_over_the_budget_before_reading_it(tmp_path):
    big = tmp_path / "big.snap"
    with open(big, "wb") as f:
        f.truncate(F.MAX_BYTES + 1)                   # sparse: no disk, no memory
    import tracemalloc
    tracemalloc.start()
    with pytest.raises(SnapshotError, match="over the limit"):
        Snapshot.read(str(big))
    assert tracemalloc.get_traced_memory()[1] < 1 << 20
    tracemalloc.stop()


def test_a_snapshot_file_round_trips_through_read(pair, tmp_path):
    a, b = pair
    path = tmp_path / "s.snap"
    path.write_bytes(a.snapshot().to_bytes())
    b.restore(Snapshot.read(str(path)))
    assert b.checksum() == a.checksum()


@pytest.mark.parametrize("edit, field", [
    (_column_edit("gaits", "value", np.float32(9.0)), "gaits.value"),
    (_column_edit("gaits", "b3", -1), "gaits.b3"),
    (_column_edit("fades", "dur", np.float32(np.inf)), "fades.dur"),
    (_column_edit("tasks", "centre", 9, row=None), None),
])
def test_a_crowds_tampered_rows_are_refused(edit, field):
    from scuffle.game.tools.bench import build_crowd
    a, b = build_crowd(12, "realistic"), build_crowd(12, "realistic")
    try:
        for _ in range(20):
            a.step()
        data = _rebuilt(a.snapshot().to_bytes(), edit)
        before = b.checksum()
        try:
            b.restore(Snapshot.from_bytes(data))
        except SnapshotError as e:
            if field is not None:
                assert field in str(e), str(e)
            assert b.checksum() == before
            return
        assert field is None, "a tampered file was accepted"
        for _ in range(20):
            b.step()
    finally:
        a.close()
        b.close()


def test_a_crowds_bytes_restore_into_a_crowd_set_up_alike():
    from scuffle.game.tools.bench import build_crowd
    a, b = build_crowd(12, "realistic"), build_crowd(12, "realistic")
    try:
        for _ in range(30):
            a.step()
        snap = Snapshot.from_bytes(a.snapshot().to_bytes())
        b.restore(snap)
        assert b.checksum() == a.checksum() == snap.checksum()
        for _ in range(30):
            a.step()
            b.step()
        assert b.checksum() == a.checksum()
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("crowd, n, every", [("realistic", 40, 7), ("light", 30, 9)])
def test_every_state_of_a_long_run_restores_from_its_bytes(crowd, n, every):
    """The checks refuse nothing the engine makes: a crowd's states, every few updates,
    written, read back into a twin set up alike, give the same checksum and run on alike."""
    from scuffle.game.tools.bench import build_crowd
    a, b = build_crowd(n, crowd), build_crowd(n, crowd)
    try:
        for u in range(120):
            a.step()
            if u % every == 0:
                b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
                assert b.checksum() == a.checksum()
        b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
        for _ in range(10):
            a.step()
            b.step()
        assert b.checksum() == a.checksum()
    finally:
        a.close()
        b.close()


def test_every_state_of_a_long_fight_restores_from_its_bytes():
    a, b = _fight(seed=11), _fight(seed=11)
    try:
        for u in range(400):
            a.step()
            if u % 5 == 0:
                b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
                assert b.checksum() == a.checksum()
    finally:
        a.close()
        b.close()


def test_a_gait_without_its_upper_cursor_is_refused():
    """Found by the loader's fuzz: a gait's pair is two cursors, both always there (the
    kernel steps no gait without them), so a file with one of them gone is refused."""
    from scuffle.game.tools.bench import build_crowd
    a, b = build_crowd(12, "realistic"), build_crowd(12, "realistic")
    try:
        for _ in range(20):
            a.step()
        snap = a.snapshot()
        ts = a.player.stores.tasks
        gaits = [int(r) for r in np.flatnonzero(ts.live) if int(ts.type[r]) == 12]
        assert gaits
        data = _rebuilt(snap.to_bytes(), _column_edit("tasks", "c1", -1, row=gaits[0]))
        before = b.checksum()
        with pytest.raises(SnapshotError, match="tasks.c1"):
            b.restore(Snapshot.from_bytes(data))
        assert b.checksum() == before
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------- the packed rows
def test_a_table_section_holds_its_rows_in_use_and_its_free_list_only(pair):
    """A free row's columns are not in the file (only the free list, the generations and
    the rows in use are state): writing into one changes no byte; writing into a row in
    use does."""
    a, _ = pair
    data = a.snapshot().to_bytes()
    tasks = a.player.stores.tasks
    free = int(np.flatnonzero(~tasks.live)[0])
    used = int(np.flatnonzero(tasks.live)[0])
    old = float(tasks.rate[free])
    tasks.rate[free] = 123.0
    try:
        assert a.snapshot().to_bytes() == data
    finally:
        tasks.rate[free] = old
    old = float(tasks.rate[used])
    tasks.rate[used] = old + 1.0
    try:
        assert a.snapshot().to_bytes() != data
    finally:
        tasks.rate[used] = old
    _, sections = F.sections_of(data)[1:]
    sizes = {n: len(b) for n, b in sections}
    full = sum(F._block_size(F._columns_of(F._table_of(a, n)), F._table_of(a, n).capacity) for n in F.ROW_TABLES)
    assert sum(sizes[f"table.{n}"] for n in F.ROW_TABLES) < full / 2


def test_a_file_of_an_older_format_is_refused_saying_so(pair):
    a, b = pair
    data = bytearray(a.snapshot().to_bytes())
    struct.pack_into("<I", data, 8, F.FORMAT - 1)
    before = b.checksum()
    with pytest.raises(SnapshotError, match=rf"header\.format: format {F.FORMAT - 1} .*older scuffle"):
        b.restore(Snapshot.from_bytes(bytes(data)))
    assert b.checksum() == before


def test_a_format_7_file_with_its_sha256_header_is_refused_in_one_line(pair):
    """Format 7's header was 112 bytes, its payload digest a SHA-256: such a file, framed
    as that format framed it, is refused by its format field, in one line."""
    import hashlib
    a, b = pair
    data = a.snapshot().to_bytes()
    payload = data[F.HEADER.size:]
    old = struct.Struct("<8sII16s32sIIQ32s")
    _, _, _, version, config, count, flags, _, _ = F.HEADER.unpack_from(data)
    head = old.pack(F.MAGIC, 7, old.size, version, config, count, flags, len(payload),
                    hashlib.sha256(payload).digest())
    before = b.checksum()
    with pytest.raises(SnapshotError, match=r"header\.format: format 7 .*older scuffle") as e:
        b.restore(Snapshot.from_bytes(head + payload))
    assert "\n" not in str(e.value)
    assert b.checksum() == before


def test_a_payload_damaged_in_transfer_is_refused_by_the_header_digest(pair):
    a, _ = pair
    data = bytearray(a.snapshot().to_bytes())
    data[F.HEADER.size + len(data[F.HEADER.size:]) // 2] ^= 0x10
    with pytest.raises(SnapshotError, match=r"header\.crc32: .*corrupted"):
        Snapshot.from_bytes(bytes(data))
    data[-1] ^= 0x10                                  # (two bytes damaged: still refused)
    with pytest.raises(SnapshotError, match=r"header\.crc32"):
        Snapshot.from_bytes(bytes(data))


def test_a_restored_file_runs_on_as_the_game_it_was_taken_of_update_by_update(pair):
    """Its free rows hold what the engine's free rows hold (the tables' defaults), so a
    file's state and the Game's own run on alike, update after update."""
    a, b = pair
    b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
    for _ in range(80):
        a.step()
        b.step()
        assert b.checksum() == a.checksum()


@pytest.mark.parametrize("field", ["updates_run", "update", "entity_next"])
def test_a_counter_with_no_room_to_count_on_is_refused(pair, field):
    """Found by the loader's long fuzz: an update counter at the top of int64 was taken,
    and the first update after it overflowed the checksum's counter."""
    a, b = pair

    edit = _counts_edit(lambda c: c.update({field: (1 << 63) - 1}))
    before = b.checksum()
    with pytest.raises(SnapshotError, match=f"counts.{field}"):
        b.restore(Snapshot.from_bytes(_rebuilt(a.snapshot().to_bytes(), edit)))
    assert b.checksum() == before


def _both(*edits):
    def edit(name: str, b: bytes) -> bytes:
        for e in edits:
            b = e(name, b)
        return b
    return edit


@pytest.mark.parametrize("released, entries, why", [
    (False, lambda h, t: [[h, t]], "a task not released"),
    (True, lambda h, t: [[h, t]], "a task still on a human's stack"),
    (True, lambda h, t: [[h, t], [h, t]], "a task row listed twice"),
])
def test_a_deferred_entry_the_flush_cannot_give_back_is_refused(pair, released, entries, why):
    """The flush frees each deferred task and the next tasks it owns: an entry naming a task
    on a stack (released or not), or one listed twice, would leave a stack pointing at a
    freed row, so the file is refused naming counts.deferred and the Game is unchanged."""
    a, b = pair
    inst = a.instance("p1")
    top = inst.stack[-1]
    h, t = int(inst.slot), int(top.trow)
    deferred = np.array(entries(h, t), np.int64)
    edit = _counts_edit(lambda c: c.update({"deferred": deferred}))
    if released:
        edit = _both(edit, _column_edit("tasks", "released", 1, row=t))
    data = _rebuilt(a.snapshot().to_bytes(), edit)
    before = b.checksum()
    with pytest.raises(SnapshotError, match=f"counts.deferred.*{why}"):
        b.restore(Snapshot.from_bytes(data))
    assert b.checksum() == before


def test_the_values_section_reads_back_its_values_and_a_tools_edit_touches_no_later_read(pair):
    """values_of / values_section undo each other; a tool's values are its own: editing
    them changes nothing a later read of the same bytes gives (the reader keeps the last
    values it decoded with their bytes)."""
    a, b = pair
    data = a.snapshot().to_bytes()
    _, _, sections = F.sections_of(data)
    sec = dict(sections)["values"]
    v = F.values_of(sec)
    assert list(v) == list(F.VALUES) and F.values_section(v) == sec
    before = Snapshot.from_bytes(data).checksum()
    v["combats"]["texts"].append("edited")
    v["engine"]["instances"].reverse()
    assert Snapshot.from_bytes(data).checksum() == before
    b.restore(Snapshot.from_bytes(data))
    assert b.checksum() == a.checksum()


def test_the_kept_plain_forms_of_the_fights_and_logs_counters_are_their_own_bytes():
    """The fight's and the log's counters kept per Game are written as plaindata writes
    them, whatever changed since the last: a count, the damage's sign bit, the kinds'
    order, a finished round, a controller's plain state, the log's texts."""
    cache = F.SnapCache()
    base = {"ko_at": None, "counts": [1, 5, 1, 3, 21, 1], "damage": 0.0, "kinds": {"strike": 7, "hit": 5},
            "rounds": [], "controllers": [None, None]}
    variants = [base, {**base, "counts": [1, 5, 1, 3, 22, 1]}, {**base, "damage": -0.0}, {**base, "ko_at": 40},
                {**base, "kinds": {"hit": 5, "strike": 7}}, {**base, "kinds": {"hit": 5, "strike": 7.0}},
                {**base, "rounds": [{"winner": "p1"}]}, {**base, "controllers": [None, (1, 2)]}, base]
    for c in variants + variants[::-1]:
        assert F._fight_bytes(cache, c) == plaindata.encode(c)
    for c in ([0, 3, ["p1", "hit"]], [1, 3, ["p1", "hit"]], [1, 3, ["p1", "hit", "p2"]], [1, 3, ["p1", "hit"]]):
        assert F._log_bytes(cache, c) == plaindata.encode(c)


def test_a_files_tables_load_in_one_copy_into_the_arena_and_one_by_one_where_they_lie_otherwise(pair):
    """A file's seven checked tables go into the Game's arena in one copy when its tables
    lie there as the file's do, and one table at a time when they do not (no arena laid
    out yet, a table grown out of it): the same state either way, running on alike."""
    a, b = pair
    data = a.snapshot().to_bytes()
    b.restore(Snapshot.from_bytes(data))             # (no snapshot of b yet: no arena laid out)
    assert b.checksum() == a.checksum()
    b.snapshot()                                     # b's tables laid out side by side
    arena = b._snapshot_plan.arena
    assert arena.whole()
    for _ in range(5):
        b.step()
    assert b.checksum() != a.checksum()
    b.restore(Snapshot.from_bytes(data))
    assert arena.whole() and all(t.block is blk for t, blk in zip(arena.tables, arena.blocks))
    assert b.checksum() == a.checksum()
    tasks = b.player.stores.tasks
    tasks.reserve(tasks.capacity + 1)                # grown: its block leaves the arena
    assert not arena.whole()
    b.restore(Snapshot.from_bytes(data))
    assert tasks.capacity == a.player.stores.tasks.capacity and b.checksum() == a.checksum()
    for _ in range(30):
        a.step()
        b.step()
        assert b.checksum() == a.checksum()
