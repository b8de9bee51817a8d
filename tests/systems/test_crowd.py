"""The crowd kept by joins and leaves (systems.crowd): a human joining or leaving costs work
for that human only, and the systems' order of work is the entity order the original's
per-update order asks for.

- behaviour: a crowd that humans join and leave mid-run gives the same trace bytes, poses
  and state as the same run with the crowd read again from esper before every update (a
  world built with that crowd), on both engines; the systems visit, dispatch and place in
  entity order through joins, leaves and deletions behind the Game's back;
- structure: after a join and a leave, no esper query is made, the crowd is not read
  again and the engine looks up the newcomer's row alone; no module of the package reads
  an esper private attribute (AST), the systems query esper only through the crowd, and
  no processor keeps a crowd list or a reset.
"""
from __future__ import annotations

import ast
import hashlib
import io
from pathlib import Path

import esper
import numpy as np
import pytest

from scuffle.anim.data.clip import EventType
from scuffle.components import Body, PoseRef
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.trace import iter_trace_records, write_records
from scuffle.game.runtime.world import Game
from scuffle.systems import crowd as crowd_mod
from scuffle.game.runtime import schedule
from sources import nodes

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("anim", "components", "systems", "game", "demo", "scuffle")
# esper 3 has no public way to set the id its next entity gets: a restore puts the
# counter back through esper's own globals, in this one module; nor to read an entity's
# dict of components: the crowd shares it (systems.crowd.entity_parts) rather than keep a
# second one a human
ESPER_PRIVATE_ALLOWED = {"game/runtime/snapshot.py", "systems/crowd.py"}

SET = demo_set()
LOOPS = (Move.FIGHT_IDLE, Move.WALK, Move.COMBO, Move.JOG)


def _command(g: Game, name: str, k: int) -> None:
    """A change on ``name``: a loop of one of the demo set's moving clips, under a fade."""
    g.change(name, g.player.loop(g.instance(name), LOOPS[k % len(LOOPS)]), fade=0.1 * (k % 3))


def _run(engine: str, read_again: bool, digest) -> str:
    """Humans join and leave between updates and inside one (an action), some given
    commands, one grabbed by another (attached); every update's trace, poses and bones into
    ``digest``; ``read_again``: the crowd read from esper before every update."""
    g = Game(engine=engine)
    try:
        for i in range(6):
            g.add_human(f"h{i}", SET, (2.0 * i, 0.0, 0.0), 30.0 * i)
            _command(g, f"h{i}", i)
        events: list = []
        g.on(EventType.SOUND, lambda ctx, ent, fe: events.append((ctx.update, ent)))
        joins = iter(range(100, 200))

        def act(ctx) -> None:                   # a join and a leave inside the actions phase
            if ctx.update in (7, 19):
                n = f"a{next(joins)}"
                g.add_human(n, SET, (-3.0, float(ctx.update), 0.0), 90.0)
                _command(g, n, ctx.update)
            if ctx.update == 13:
                g.remove_human("h4")

        g.ctx.actions.append(act)
        for u in range(36):
            if u == 4:
                g.remove_human("h1")                          # a leave in the middle of the order
                g.add_human("j0", SET, (5.0, 5.0, 0.0), 0.0)  # a join at the end
                _command(g, "j0", 2)
            if u == 9:
                g.body("h3").attachment = g.entity("h2")      # held: placed at its holder
                g.body("h3").attach_offset = (0.0, 1.0, 0.0)
            if u == 11:
                for k in range(3):                            # several joins, then a leave
                    g.add_human(f"m{k}", SET, (float(k), -4.0, 0.0), 45.0)
                    _command(g, f"m{k}", k)
                g.remove_human("m1")
            if u == 17:
                g.remove_human("h0")                          # the first leaves
                g.remove_human("j0")                          # and the last
            if u % 5 == 3:
                _command(g, "h5", u)
            if read_again:
                g.ctx.crowd.invalidate()
            g.step()
            out = io.StringIO()
            write_records(out, iter_trace_records(g, pose=True))
            digest.update(out.getvalue().encode())
            for a in (g.ctx.bone_pos, g.ctx.bone_rot):
                digest.update(np.ascontiguousarray(a).tobytes())
            digest.update(repr([(n, g.pose_row(n)) for n, _ in g.humans()]).encode())
        digest.update(repr(events).encode())
        return g.checksum()
    finally:
        g.close()


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_joins_and_leaves_mid_run_give_the_trace_of_the_crowd_read_from_esper(engine):
    kept, read = hashlib.sha256(), hashlib.sha256()
    a = _run(engine, False, kept)
    b = _run(engine, True, read)
    assert kept.hexdigest() == read.hexdigest()
    assert a == b


def test_the_systems_work_in_entity_order_through_joins_and_leaves():
    g = Game()
    try:
        for i in range(5):
            g.add_human(f"h{i}", SET, (2.0 * i, 0.0, 0.0), 0.0)
            g.change(f"h{i}", g.player.loop(g.instance(f"h{i}"), Move.WALK))
        order: list = []
        dispatched: list = []
        g.on(EventType.SOUND, lambda ctx, ent, fe: dispatched.append(ent))

        def probe(ctx, system: str) -> None:
            if system == "animation":
                ents = [e for _, e in g.humans()]
                order.append(list(ctx.entities))
                assert list(ctx.entities) == sorted(ctx.entities) == ents
                assert [ctx.crowd.pose_place(e) for e in ents] == list(range(len(ents)))
                assert [g.component(e, PoseRef).row for e in ents] == list(range(len(ents)))
                assert [e for e, _, _ in ctx.fired] == sorted(e for e, _, _ in ctx.fired)
                crowd = ctx.crowd
                assert crowd.body_entities == sorted(crowd.body_entities)
                assert crowd.body_rows[:len(crowd.bodies)].tolist() == [b.row for b in crowd.bodies]
                for k, e in enumerate(crowd.entities):
                    r = crowd.human_rows[k]
                    assert crowd.pose_col[r] == k and not crowd.idle[r]
            if system == "events":
                assert dispatched == sorted(dispatched)
                dispatched.clear()

        g.ctx.probe.append(probe)
        for u in range(30):
            if u == 5:
                g.remove_human("h2")
            if u == 8:
                g.add_human("n0", SET, (9.0, 9.0, 0.0), 0.0)
                g.change("n0", g.player.loop(g.instance("n0"), Move.WALK))
            if u == 12:
                with g.active():
                    esper.delete_entity(g.entity("h0"), immediate=True)   # behind the Game's back
            if u == 15:
                with g.active():
                    esper.delete_entity(g.entity("h3"))                   # deferred
                assert [n for n, _ in g.humans()] == ["h1", "h4", "n0"]
            g.step()
        assert len(order) == 30 and order[-1] == [g.entity(n) for n in ("h1", "h4", "n0")]
    finally:
        g.close()


def test_a_join_and_a_leave_make_no_esper_query_and_read_no_crowd_again(monkeypatch):
    g = Game()
    try:
        for i in range(40):
            g.add_human(f"h{i}", SET, (float(i), 0.0, 0.0), 0.0)
            g.change(f"h{i}", g.player.loop(g.instance(f"h{i}"), LOOPS[i % 4]))
        for _ in range(3):
            g.step()
        calls = {"queries": 0, "rebuilds": 0, "rows": 0}
        real_q, real_qs = esper.get_component, esper.get_components
        real_rebuild = crowd_mod.Crowd.rebuild
        batch = g.player.batch
        real_row = type(batch)._row

        def q(*types):
            if types[0] is not crowd_mod._WorldProbe:
                calls["queries"] += 1
            return real_q(*types)

        def qs(*types):
            calls["queries"] += 1
            return real_qs(*types)

        def rebuild(self):
            calls["rebuilds"] += 1
            return real_rebuild(self)

        def row(self, inst):
            calls["rows"] += 1
            return real_row(self, inst)

        monkeypatch.setattr(esper, "get_component", q)
        monkeypatch.setattr(esper, "get_components", qs)
        monkeypatch.setattr(crowd_mod.Crowd, "rebuild", rebuild)
        monkeypatch.setattr(type(batch), "_row", row)
        for k in range(5):
            g.add_human(f"n{k}", SET, (float(k), 5.0, 0.0), 0.0)
            g.change(f"n{k}", g.player.loop(g.instance(f"n{k}"), Move.WALK))
            g.remove_human(f"h{3 * k + 1}")
            g.step()
        # a few row look-ups per pair (the newcomer's command and first step, the leaver's
        # cut), never one per human of the crowd (40 a step); no esper query, the crowd
        # never read again
        assert calls["queries"] == 0 and calls["rebuilds"] == 0
        assert calls["rows"] <= 4 * 5
        monkeypatch.undo()
        g.ctx.crowd.invalidate()                           # the same crowd read from esper
        before = (list(g.ctx.crowd.entities), g.ctx.crowd.pose_col.copy(), g.ctx.crowd.idle.copy())
        g.step()
        after = (list(g.ctx.crowd.entities), g.ctx.crowd.pose_col, g.ctx.crowd.idle)
        assert before[0] == after[0]
        assert np.array_equal(before[1], after[1]) and np.array_equal(before[2], after[2])
    finally:
        g.close()


def test_a_change_behind_the_games_back_is_read_from_esper_once():
    g = Game()
    try:
        for i in range(4):
            g.add_human(f"h{i}", SET)
        g.step()
        crowd = g.ctx.crowd
        v = crowd.version
        g.step()
        assert crowd.version == v                          # nothing changed: nothing read
        with g.active():
            own = esper.create_entity()                    # a host's entity with a body of its own
            esper.add_component(own, Body(position=(1.0, 2.0, 0.0)))
        assert crowd.version == v + 1 and own in crowd.body_entities and own not in crowd.entities
        g.step()
        assert crowd.version == v + 1
        row = crowd.body_rows[crowd.body_entities.index(own)]
        assert crowd.idle[row] and row in crowd.strays.tolist()
    finally:
        g.close()


# ---------------------------------------------------------------- structure
def _modules():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path


def test_no_module_reads_an_esper_private_attribute():
    found = []
    for rel, path in _modules():
        if rel in ESPER_PRIVATE_ALLOWED:
            continue
        for node in nodes(path):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "esper"
                    and node.attr.startswith("_")):
                found.append(f"{rel}:{node.lineno} esper.{node.attr}")
    assert found == []


def test_the_systems_query_esper_only_through_the_crowd():
    """Only the crowd asks esper for components (its probe, and its rebuild when the world
    changed behind the Game's back); no processor keeps a list of the crowd or a reset."""
    queries = {"get_component", "get_components", "try_components"}
    procs = {cls.__name__ for cls in schedule.SCHEDULE}
    for path in sorted((ROOT / "systems").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if path.name != "crowd.py" and isinstance(node, ast.Attribute) and node.attr in queries:
                raise AssertionError(f"systems/{path.name}:{node.lineno} calls esper.{node.attr}")
            if isinstance(node, ast.ClassDef) and node.name in procs:
                methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
                assert "reset" not in methods, f"{node.name} keeps a reset"
                for f in node.body:
                    if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                        for a in ast.walk(f):
                            if isinstance(a, ast.Assign) and isinstance(a.value, (ast.List, ast.Dict, ast.Set)):
                                raise AssertionError(f"{node.name}.__init__ keeps a list: line {a.lineno}")
    from scuffle.systems.context import SimContext
    assert "sorted_cache" not in SimContext.__dataclass_fields__
