"""The saved rows' declared checks (anim.engine.snapcheck.RANGES), compiled (anim.engine.snapkernel).

Every column of every saved table has a rule; pushed past it at a row in use, a file is
refused with one SnapshotError line naming the table and the column, and the Game it was
restored into is unchanged. A table's packed rows (format 3) unpack to the block they
were packed from.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.engine import snapcheck as C, snapkernel as K
from scuffle.anim.engine.store import _layout
from scuffle.game.runtime import snapfile as F
from scuffle.game.runtime.snapshot import Snapshot, SnapshotError

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


@pytest.fixture(scope="module")
def crowd():
    """A realistic crowd of 12 (gaits, fades, clips, pairs) 20 updates on, its file, and a
    twin set up alike."""
    from scuffle.game.tools.bench import build_crowd
    a, b = build_crowd(12, "realistic"), build_crowd(12, "realistic")
    for _ in range(20):
        a.step()
    yield a, b, a.snapshot().to_bytes()
    a.close()
    b.close()


def test_every_saved_column_has_a_declared_rule(crowd):
    a, _, _ = crowd
    for name in F.ROW_TABLES:
        cols = F._columns_of(F._table_of(a, name))
        undeclared = [c for c in cols if c not in C.RANGES[name] and c not in ("live", "gen", "free_rows")]
        assert not undeclared, f"{name}: no rule for {undeclared}"
        assert all(np.dtype(d).base in K.CODES for d in cols.values()), name


def _outside(rule: tuple, dt: np.dtype, spec_hi: int | None):
    """A value of dtype ``dt`` that breaks ``rule``, or None when the dtype holds none."""
    kind = rule[0]
    if kind == K.Kind.FLOAT:
        return np.nan
    if kind == K.Kind.BOOL:
        return "byte"
    info = np.iinfo(dt)
    if kind == K.Kind.ENTITY:
        return min(info.max, 10 ** 6)
    if kind == K.Kind.SET:
        return next(v for v in range(info.max + 1) if v > 62 or not (rule[1] >> v) & 1)
    lo, hi = rule[1], rule[2]
    if isinstance(hi, str):
        return info.max
    if hi < info.max:
        return hi + 1
    if isinstance(lo, int) and lo > info.min:
        return lo - 1
    return None


def _cases():
    out = []
    for table, rules in C.RANGES.items():
        for col, rule in rules.items():
            if rule[0] != K.Kind.ANY:
                out.append((table, col))
    return out


@pytest.mark.parametrize("table, col", _cases())
def test_a_column_pushed_past_its_rule_is_refused_naming_it(crowd, table, col):
    _, b, data = crowd
    rule = C.RANGES[table][col]
    edited = []

    def edit(name: str, sec: bytes) -> bytes:
        if name != f"table.{table}":
            return sec
        rows, raw, cols, block = F.table_block(sec)
        lay = _layout(cols, rows)[0]
        off, dt, shape = lay[col]
        live_off = lay["live"][0]
        live = np.flatnonzero(block[live_off:live_off + rows])
        if not len(live):
            return sec
        a_ = block[off:off + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)
        v = _outside(rule, dt, None)
        if v is None:
            return sec
        r = int(live[-1])
        if v == "byte":
            a_.view(np.uint8)[r] = 2
        else:
            a_[r] = v
        edited.append(r)
        return F.table_section(rows, raw, cols, block)

    version, config, sections = F.sections_of(data)
    forged = F.assemble([(n, edit(n, s)) for n, s in sections], version, config)
    if not edited:
        pytest.skip(f"no row in use of {table} in this crowd, or no value of its dtype outside the rule")
    before = b.checksum()
    with pytest.raises(SnapshotError) as e:
        b.restore(Snapshot.from_bytes(forged))
    assert f"{table}.{col}" in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert b.checksum() == before


def test_packed_rows_unpack_to_the_rows_in_use_and_the_free_list(crowd):
    a, _, _ = crowd
    for name in F.ROW_TABLES:
        t = F._table_of(a, name)
        cols = F._columns_of(t)
        packed = C.pack(cols, t.capacity, t.block)
        back = C.unpack(cols, t.capacity, packed.tobytes())
        lay = _layout(cols, t.capacity)[0]
        live = np.asarray(t.live)
        for col, (off, dt, shape) in lay.items():
            n = int(np.prod(shape)) * dt.itemsize
            want = t.block[off:off + n].view(dt).reshape(shape)
            got = back[off:off + n].view(dt).reshape(shape)
            if col in ("n_free", "live", "gen", "free_rows"):
                assert np.array_equal(got, want), (name, col)
            else:
                assert np.array_equal(got[live], want[live]), (name, col)
                assert not got[~live].any(), (name, col)
        with pytest.raises(C.StateError, match=rf"table\.{name}\.block"):
            C.unpack(cols, t.capacity, packed.tobytes()[:-1], f"table.{name}")


def test_a_declaration_of_object_columns_is_refused_before_any_block_is_read(crowd):
    """Read without a Game (its checksum), a table's declared columns are numbers only: an
    object dtype would make pointers of a stranger's bytes."""
    from scuffle.anim.engine import plaindata

    _, _, data = crowd

    def edit(name: str, sec: bytes) -> bytes:
        if name != "table.bodies":
            return sec
        rows, raw, cols, block = F.table_block(sec)
        declared = [(c, "|O" if c == "position" else d, s) for c, d, s in plaindata.decode(raw)]
        new = plaindata.encode(declared)
        return F._TABLE_HEAD.pack(rows, len(new)) + new + sec[F._TABLE_HEAD.size + len(raw):]

    version, config, sections = F.sections_of(data)
    snap = Snapshot.from_bytes(F.assemble([(n, edit(n, s)) for n, s in sections], version, config))
    with pytest.raises(SnapshotError):
        snap.checksum()


def test_a_cycle_of_next_tasks_is_refused():
    """A clip task taken off its stack and made its own next task is in one place only (a
    next task), but its chain never ends: refused, naming tasks.nxt."""
    from gamehelp import ai_fight
    a, b = ai_fight(), ai_fight()
    try:
        hum, tasks = a.player.stores.humans, a.player.stores.tasks
        found = None
        for _ in range(300):
            a.step()
            for h in np.flatnonzero(hum.live):
                for s in range(int(hum.depth[h])):
                    if int(tasks.type[hum.stack[h, s]]) in (3, 6):
                        found = (int(h), s, int(hum.stack[h, s]))
            if found:
                break
        assert found, "no clip task on a stack in 300 updates"
        h, s, x = found

        def edit(name: str, sec: bytes) -> bytes:
            if name not in ("table.humans", "table.tasks"):
                return sec
            rows, raw, cols, block = F.table_block(sec)
            lay = _layout(cols, rows)[0]

            def col(n):
                off, dt, shape = lay[n]
                return block[off:off + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)
            if name == "table.humans":
                stack, depth = col("stack"), col("depth")
                d = int(depth[h])
                stack[h, s:d - 1] = stack[h, s + 1:d].copy()
                stack[h, d - 1] = -1
                depth[h] = d - 1
            else:
                col("nxt")[x] = x
            return F.table_section(rows, raw, cols, block)

        version, config, sections = F.sections_of(a.snapshot().to_bytes())
        forged = F.assemble([(n, edit(n, sec)) for n, sec in sections], version, config)
        before = b.checksum()
        with pytest.raises(SnapshotError, match=rf"tasks\.nxt\[{x}\]: a chain of next tasks that never ends"):
            b.restore(Snapshot.from_bytes(forged))
        assert b.checksum() == before
    finally:
        a.close()
        b.close()


def test_a_task_in_a_place_not_marked_placed_is_refused():
    """A task on a stack (or in a queue, or a next task) is marked placed: a file whose
    stack task is not would have the engine free it as an orphan while the stack still
    names it. Refused naming tasks.placed; a callback twice in the callbacks table is
    refused naming the calls."""
    from gamehelp import ai_fight
    from scuffle.anim.engine import plaindata
    a, b = ai_fight(), ai_fight()
    try:
        for _ in range(40):
            a.step()
        hum = a.player.stores.humans
        h = int(np.flatnonzero(hum.live)[0])
        x = int(hum.stack[h, 0])

        def edit(name: str, sec: bytes) -> bytes:
            if name != "table.tasks":
                return sec
            rows, raw, cols, block = F.table_block(sec)
            off, dt, shape = _layout(cols, rows)[0]["placed"]
            block[off:off + int(np.prod(shape)) * dt.itemsize].view(dt)[x] = False
            return F.table_section(rows, raw, cols, block)

        data = a.snapshot().to_bytes()
        version, config, sections = F.sections_of(data)
        before = b.checksum()
        with pytest.raises(SnapshotError, match=rf"tasks\.placed\[{x}\]"):
            b.restore(Snapshot.from_bytes(F.assemble([(n, edit(n, s)) for n, s in sections], version, config)))

        def twice(name: str, sec: bytes) -> bytes:
            if name != "values":
                return sec
            v = F.values_of(sec)
            calls = v["engine"]["calls"]["values"]
            first = next(c for c in calls if c is not None and c[0])
            calls.append(first)
            return F.values_section(v)
        with pytest.raises(SnapshotError, match=r"values\.engine\.calls\.values\[\d+\]: the callback of"):
            b.restore(Snapshot.from_bytes(F.assemble([(n, twice(n, s)) for n, s in sections], version, config)))
        assert b.checksum() == before
    finally:
        a.close()
        b.close()
