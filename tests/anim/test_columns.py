"""All state the next update reads lives in typed columns.

The callbacks are ids of one registry table (anim.engine.callbacks.CallbackTable) in int columns
(``tasks.on_end``, ``tasks.on_wrap``, ``humans.on_report``); a paired task's partner and a
direction's clips are int columns; no table holds a dict keyed by row; the layout signal
is the tables' own, read above anim/ only through the public ``layout`` of a table, the
Player or its engine; a snapshot is the tables' blocks and a few counters, and a restore
goes through each part's own ``load``.
"""
from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

from scuffle.anim.engine.callbacks import Callback, CallbackTable
from scuffle.anim.playback.player import Player
from scuffle.anim.engine.snapcheck import check_ids
from scuffle.anim.engine.snapshot import EngineState, TableState, load_engine, save_engine
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.engine.store import NO_ROW, HumanTable, LayoutSignal, Stores, Table
from scuffle.anim.playback.tasks import Task
from scuffle.game.fighters.moveset import demo_set

from flushhelp import CLIP, IDLE
from sources import nodes

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- the callbacks table
def test_a_callback_is_one_id_however_many_rows_name_it_and_goes_with_the_last():
    t = CallbackTable()
    a = t.take(Callback("end", (1, "x")))
    assert t.take(Callback("end", (1, "x"))) == a and t.uses[a] == 2
    b = t.take(Callback("end", (2,)))
    assert b != a and len(t) == 2 and t.get(a) == Callback("end", (1, "x")) and t.get(-1) is None
    t.drop(a)
    assert len(t) == 2 and t.uses[a] == 1
    t.drop(a)
    assert len(t) == 1 and t.values[a] is None and t.free == [a]
    assert t.take(Callback("other", ())) == a            # a free id is taken again
    with pytest.raises(ValueError, match="not taken"):
        t.drop(len(t.values) + 3)


def test_arguments_that_compare_equal_but_differ_in_type_or_sign_are_two_ids():
    t = CallbackTable()
    ids = {t.take(Callback("k", (v,))) for v in (1, True, 1.0)}
    assert len(ids) == 3
    assert t.take(Callback("k", (0.0,))) != t.take(Callback("k", (-0.0,)))
    assert t.take(Callback("k", ((1,),))) != t.take(Callback("k", ((True,),)))
    for i in ids:
        assert type(t.get(i).args[0]) in (int, bool, float)


def test_the_table_saves_and_loads_its_lists_and_refuses_lists_that_disagree():
    t = CallbackTable()
    a = t.take(Callback("a", ()))
    t.take(Callback("b", ("x",)))
    saved = t.save()
    t.drop(a)
    t.take(Callback("c", ()))
    t.load(saved)
    assert t.save() == saved and t.take(Callback("a", ())) == a and t.uses[a] == 2
    with pytest.raises(ValueError, match="do not agree"):
        t.load(([None], [1], [0]))
    with pytest.raises(ValueError, match="also id"):
        t.load(([Callback("a", ()), Callback("a", ())], [1, 1], []))


# ---------------------------------------------------------------- the columns
def _world():
    p = Player()
    p.callbacks.register("noop", lambda inst, *a: None)
    hs = [CharacterInstance(demo_set(), f"h{i}") for i in range(3)]
    return p, hs


def test_callbacks_partners_and_banks_are_int_columns_and_their_ids_go_with_their_rows():
    p, hs = _world()
    st = p.stores
    for u in range(120):
        for i, h in enumerate(hs):
            if (u + i) % 9 == 0:
                t = p.clip(h, CLIP, p.loop(h, IDLE, on_wrap=Callback("noop", ("w",))),
                           on_end=Callback("noop", (u % 3,)))
                p.change(h, t, 0.1)
        if u % 10 == 0:
            hs[u % 3].on_report = Callback("noop", ("r",)) if u % 20 == 0 else None
        p.update(hs)
        assert st.tasks.unsettled == []                # every row given back is at its defaults
    for name in ("on_end", "on_wrap", "partner_name", "partner"):
        assert getattr(st.tasks, name).dtype.kind == "i"
    assert st.tasks.dir_banks.dtype == np.int32 and st.tasks.dir_banks.shape == (st.tasks.capacity, 8)
    assert st.humans.on_report.dtype == np.int64
    # the table's uses are exactly the rows naming each id: nothing leaks over 120 updates
    check_ids(st.tasks, st.humans, *st.calls.save(), len(p._clips))
    live = st.tasks.live
    named = int((st.tasks.on_end[live] >= 0).sum() + (st.tasks.on_wrap[live] >= 0).sum())
    named += int((st.humans.on_report[st.humans.live] >= 0).sum())
    assert sum(st.calls.uses) == named and len(st.calls) <= 6


def test_a_paired_task_names_its_partner_by_handle_or_by_name():
    p, hs = _world()
    st = p.stores
    t = p.paired(hs[0], hs[1], CLIP)                  # a standalone instance: no handle, its name
    r = t.trow
    assert st.tasks.partner[r] == NO_ROW and st.calls.get(int(st.tasks.partner_name[r])) == "h1"
    assert t.partner == "h1"
    t.partner = 7
    assert t.partner == 7 and st.tasks.partner[r] == 7 and st.tasks.partner_name[r] == NO_ROW and len(st.calls) == 0
    with pytest.raises(ValueError, match="partner"):
        t.partner = 1.5
    t.partner = "h2"
    t.dispose()
    assert len(st.calls) == 0                            # the name's id went with the row


def test_no_table_holds_a_dict_keyed_by_row():
    p, hs = _world()
    for h in hs:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), on_end=Callback("noop", ())), 0.0)
        h.on_report = Callback("noop", ())
    for _ in range(5):
        p.update(hs)
    st = p.stores
    for table in (st.cursors, st.fades, st.gaits, st.tasks, st.humans):
        for name, v in vars(table).items():
            if isinstance(v, dict):
                assert not any(isinstance(k, (int, np.integer)) for k in v), (type(table).__name__, name)
    assert not hasattr(Stores, "KeyedColumn") and "KeyedColumn" not in vars(__import__("scuffle.anim.engine.store",
                                                                                       fromlist=["x"]))


# ---------------------------------------------------------------- the layout signal
_ABOVE = ("components", "systems", "game", "demo")


_SIGNAL_NAMES = ("LAYOUT_EPOCH", "layout_epoch", "LayoutSignal")


@pytest.mark.slow
def test_the_layout_signal_is_not_read_above_anim():
    """No file above anim/ names the layout signal, nor reads a ``layout`` stamp or a
    ``signal`` off a table, a Player or an engine (components, systems, game: their caches
    are kept by the arrays they view; demo/ has a layout of its own, its timeline's)."""
    found = []
    for top in _ABOVE:
        for path in (ROOT / top).rglob("*.py"):
            for node in nodes(path):
                name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) \
                    else None
                if name in _SIGNAL_NAMES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if isinstance(node, ast.ImportFrom) and any(a.name in _SIGNAL_NAMES for a in node.names):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if top != "demo" and isinstance(node, ast.Attribute) and (
                        node.attr == "layout" or
                        node.attr == "signal" and not (isinstance(node.value, ast.Name) and node.value.id == "signal")):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert found == []


def test_each_table_and_the_player_tell_when_the_layout_moved():
    p, hs = _world()
    st = p.stores
    before, tasks_before = p.layout, st.tasks.layout
    assert p.batch.layout == p.layout == st.signal.now
    assert all(t.signal is st.signal for t in (st.cursors, st.fades, st.gaits, st.tasks, st.humans))
    cursors = st.cursors.layout
    st.tasks.reserve(st.tasks.capacity + 1)                    # the task table grows: new arrays
    assert st.tasks.layout != tasks_before and p.layout != before
    assert p.layout == st.tasks.layout                         # the world's signal: the latest stamp
    assert st.cursors.layout == cursors                        # another table's arrays stayed


def test_each_world_has_its_own_layout_signal():
    """A table made or grown elsewhere (another Player's, a table of no world) leaves a
    world's signal where it was; a stamp is never given twice, so a reading kept from one
    world never equals another's."""
    p, hs = _world()
    q, _ = _world()
    assert p.stores.signal is not q.stores.signal and p.layout != q.layout
    before = p.layout
    q.stores.tasks.reserve(q.stores.tasks.capacity + 1)
    Table({"x": np.int64}, capacity=4).reserve(100)
    h = HumanTable(2)
    for _ in range(5):
        h.alloc()                                              # grows twice
    assert p.layout == before and q.layout > before
    p.stores.gaits.reserve(p.stores.gaits.capacity + 1)
    assert p.layout != before and p.layout > q.layout


def test_a_table_that_joins_another_signal_moves_the_one_it_left():
    t = Table({"x": np.int64}, capacity=2)
    own = t.signal
    was = own.now
    sig = LayoutSignal()
    sig.join(t)
    assert t.signal is sig and own.now != was and t.layout == sig.now
    at = sig.now
    t.reserve(t.capacity + 1)
    assert sig.now != at and t.layout == sig.now


# ---------------------------------------------------------------- the snapshot
def test_a_snapshot_is_the_tables_blocks_and_a_few_counters():
    p, hs = _world()
    for h in hs:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), on_end=Callback("noop", ())), 0.0)
    p.update(hs)
    s = save_engine(p, hs)
    assert isinstance(s, EngineState)
    for ts in s.tables.values():
        assert isinstance(ts, TableState) and set(TableState.__slots__) == {"capacity", "block"}

    def handles(v, depth=0):
        if isinstance(v, Task):
            return 1
        if depth > 6:
            return 0
        if isinstance(v, (list, tuple)):
            return sum(handles(x, depth + 1) for x in v)
        if isinstance(v, dict):
            return sum(handles(x, depth + 1) for x in v.values())
        return 0
    assert handles([s.player, s.batch, s.loose]) == 0          # no task handle is saved


def test_a_restore_keeps_the_handles_of_rows_it_leaves_alone_and_forgets_the_others():
    p, hs = _world()
    for h in hs:
        p.change(h, p.loop(h, IDLE), 0.0)
    p.update(hs)
    kept = hs[0].stack[0]
    s = save_engine(p, hs)
    p.change(hs[1], p.clip(hs[1], CLIP, p.loop(hs[1], IDLE)), 0.0)     # new rows in the abandoned future
    p.update(hs)
    future = hs[1].stack[-1]
    load_engine(p, s)
    assert hs[0].stack[0] is kept                              # its row's life untouched: the same handle
    for h in hs:
        for t in h.stack:
            assert t.alive() and t.tgen == p.stores.tasks.gen[t.trow]
    assert all(v is not future for v in p.stores.tasks.views)
    for _ in range(3):
        p.update(hs)


def _writes_private(fn: ast.FunctionDef) -> list[str]:
    """Assignments in ``fn`` to an underscore attribute of anything but ``self`` (and
    setattr calls naming one)."""
    out = []
    loops: dict[str, list] = {}                        # a loop variable -> the constants it runs over
    for node in ast.walk(fn):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, (ast.Tuple,
                                                                                                    ast.List)):
            loops[node.target.id] = [getattr(e, "value", None) for e in node.iter.elts]
    for node in ast.walk(fn):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Attribute) and sub.attr.startswith("_") and not (
                        isinstance(sub.value, ast.Name) and sub.value.id == "self") and isinstance(sub.ctx, ast.Store):
                    out.append(f"{fn.name}:{sub.lineno} .{sub.attr}")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and len(node.args) > 1:
            a = node.args[1]
            names = [a.value] if isinstance(a, ast.Constant) else loops.get(getattr(a, "id", ""), [None])
            if not all(isinstance(n, str) and not n.startswith("_") for n in names):
                out.append(f"{fn.name}:{node.lineno} setattr")
    return out


def test_a_restore_writes_no_private_attribute_of_another_object():
    checked = {"anim/engine/snapshot.py": ("load_engine", "load_table", "load_humans", "_private_back", "save_engine"),
               "game/runtime/snapshot.py": ("restore",)}
    found = []
    for rel, names in checked.items():
        tree = ast.parse((ROOT / rel).read_text())
        fns = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        for name in names:
            found += [f"{rel} {w}" for w in _writes_private(fns[name])]
    assert found == []


def test_the_parts_load_their_own_state_and_a_restore_replays_the_same_rows():
    p, hs = _world()
    for h in hs:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), on_end=Callback("noop", ())), 0.0)
        h.on_report = Callback("noop", ("r",))
    p.update(hs)
    s = save_engine(p, hs)

    def rows():
        st = p.stores
        return ([getattr(st, n).block.tobytes() for n in ("cursors", "fades", "gaits", "tasks", "humans")],
                st.calls.save(), p.pool.n_out)
    seen = []
    for _ in range(40):
        p.update(hs)
        seen.append(rows())
    for again in range(2):
        load_engine(p, s)
        for k in range(40):
            p.update(hs)
            assert rows() == seen[k], (again, k)


def test_a_standalone_human_table_has_its_own_callbacks_and_the_world_shares_one():
    st = Stores()
    assert st.tasks.calls is st.calls is st.humans.calls
    h = HumanTable(2)
    r = h.alloc()
    h.set_report(r, Callback("x", ()))
    assert h.report(r) == Callback("x", ()) and len(h.calls) == 1
    h.free(r)
    assert len(h.calls) == 0 and isinstance(Table({"a": np.int8}).calls, CallbackTable)
