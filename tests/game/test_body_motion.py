"""The world's bodies live in its body table: every Body is a view onto a row
of ``ctx.bodies``, removing a human gives its row back, and the state update moves the
table's columns in one compiled call with the same results as the readable oracle
(systems.motion.root_motion through the views, ``ctx.reference``).
Spec: "Root motion", "Paired tasks".
"""
from __future__ import annotations

import esper
import numpy as np
import pytest

from scuffle.anim.playback.player import PlayerOptions
from scuffle.anim.data.rates import CfgAnimSpeeds
from scuffle.anim.engine.store import StaleHandle
from scuffle.components import NO_ATTACHMENT, Body
from scuffle.components.bodies import BODY_COLUMNS
from scuffle.systems.motion import StateUpdate

from gamehelp import IDLE, clip, make_set, still, turn_quat

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _set():
    fast = clip(40, velocity=[(0, (30.0, 30.0, 0.0)), (20, (5.0, 20.0, 0.3))],
                rotations={0: [(0, turn_quat(9.0)), (39, turn_quat(-4.0))]})
    walk = clip(30, velocity=[(0, (0.3, 1.2, 0.0))], rotations={0: [(0, turn_quat(2.5))]})
    back = clip(30, velocity=[(0, (0.0, -2.0, 0.0))], rotations={0: [(0, turn_quat(-7.0))]})
    return make_set({1: fast, 2: walk, 3: back, IDLE: still()}, {1: 0x1000, 2: 0x1000, 3: 0x1000})


def test_a_humans_body_is_a_view_onto_the_worlds_table(new_game):
    g = new_game()
    g.add_human("a", _set(), position=(1.0, 2.0, 0.0), heading=30.0)
    b = g.body("a")
    with g.active():
        assert esper.component_for_entity(g.entity("a"), Body) is b
    assert b.table is g.ctx.bodies and g.ctx.bodies.owners[b.row] is b
    np.testing.assert_array_equal(g.ctx.bodies.position[b.row], [1.0, 2.0, 0.0])
    assert g.ctx.bodies.heading[b.row] == 30.0


def test_remove_human_gives_the_row_back(new_game):
    g = new_game()
    s = _set()
    for n in ("a", "b", "c"):
        g.add_human(n, s, position=(0.0, 1.0, 0.0))
    g.change("b", g.player.loop(g.instance("b"), 2))
    for _ in range(3):
        g.step()
    b = g.body("b")
    row, last = b.row, b.position.copy()
    assert g.ctx.bodies.in_use == 3
    g.remove_human("b")
    assert g.ctx.bodies.in_use == 2 and not g.ctx.bodies.live[row]
    assert not b.alive()                                         # the old handle is stale
    with pytest.raises(StaleHandle, match="Body.position"):
        b.position
    g.add_human("d", s, position=(9.0, 9.0, 0.0))
    assert g.body("d").row == row                                # the row is reused ...
    g.step()
    with pytest.raises(StaleHandle, match="Body.heading"):       # ... never through the old handle
        b.heading
    np.testing.assert_array_equal(g.body("d").position[:2], [9.0, 9.0])
    assert g.ctx.bodies.in_use == 3 and not np.array_equal(last[:2], [9.0, 9.0])


def test_a_deleted_entity_gives_its_row_back_at_the_next_update(new_game):
    g = new_game()
    s = _set()
    g.add_human("a", s)
    g.add_human("b", s, position=(2.0, 0.0, 0.0))
    g.step()
    b = g.body("b")
    with g.active():
        esper.delete_entity(g.entity("b"), immediate=True)
    g.step()
    assert g.ctx.bodies.in_use == 1 and not b.alive()
    assert list(g.ctx.bodies.owners.values()) == [g.body("a")]
    with pytest.raises(StaleHandle, match="Body.position"):
        b.position


def test_a_body_made_outside_the_game_is_moved_into_its_table(new_game):
    g = new_game()
    g.add_human("a", _set())
    with g.active():
        esper.remove_component(g.entity("a"), Body)
        esper.add_component(g.entity("a"), Body(state_velocity=np.array([0.0, 3.0, 0.0])))
    g.step()
    b = g.body("a")
    assert b.table is g.ctx.bodies and g.ctx.bodies.in_use == 1
    assert b.velocity[1] == 3.0 and b.position[1] == pytest.approx(3.0 / 30.0, rel=1e-6)


def test_a_body_without_a_pose_is_left_alone(new_game):
    g = new_game()
    g.add_human("a", _set())
    g.change("a", g.player.loop(g.instance("a"), 2))
    with g.active():
        ent = esper.create_entity()
        esper.add_component(ent, Body(position=(1.0, 1.0, 0.0), velocity=(0.0, 2.0, 0.0),
                                      state_velocity=(0.0, 2.0, 0.0), attach_heading=400.0,
                                      table=g.ctx.bodies))
        stray = esper.component_for_entity(ent, Body)
    for _ in range(3):
        g.step()
    assert g.body("a").position[1] > 0.0
    assert list(stray.position) == [1.0, 1.0, 0.0] and list(stray.velocity) == [0.0, 2.0, 0.0]
    assert stray.attach_heading == 400.0 and stray.table is g.ctx.bodies


def _crowd(new_game, n):
    """n humans on the three moving clips, headings near +-180, some with a state velocity,
    one in eight held by its neighbour, a few removed (free rows inside the table); clip 1
    at a rate of 2 goes past the 50 m/s cap."""
    g = new_game(PlayerOptions(speeds=CfgAnimSpeeds(0.75, 0.8, 2.0, 0.9), pool_size=4 * n))
    s = _set()
    rng = np.random.default_rng(14)
    for i in range(n):
        g.add_human(f"h{i}", s, position=(float(i % 23), float(i // 23), 0.0),
                    heading=float(rng.choice([179.5, -179.5, 0.0, 90.0, -45.0])) + float(rng.uniform(-1, 1)))
    for i in range(n):
        inst = g.instance(f"h{i}")
        if i % 11 != 5:                                   # some stay on no clip at all
            g.change(f"h{i}", g.player.loop(inst, 1 + i % 3))
        b = g.body(f"h{i}")
        if i % 3 == 0:
            b.state_velocity = rng.normal(size=3)
        if i % 8 == 7:
            b.attachment = g.entity(f"h{i - 1}")
            b.attach_offset = (0.4, 1.0, 0.0)
            b.attach_heading = float(rng.uniform(-180, 180))
    for i in range(3, n, 97):
        g.remove_human(f"h{i}")
    return g


def _columns(table):
    return {name: getattr(table, name).copy() for name in BODY_COLUMNS}


def test_the_compiled_state_update_equals_the_reference_over_a_crowd(new_game):
    g = _crowd(new_game, 520)
    with g.active():
        proc = esper.get_processor(StateUpdate)
    table = g.ctx.bodies
    assert table.in_use == 520 - len(range(3, 520, 97))
    held = sum(1 for n, _ in g.humans() if g.body(n).attachment != NO_ATTACHMENT)
    assert held > 50
    for u in range(45):
        g.step()                                        # animation, the move, placement
        if u % 4:
            continue
        before = _columns(table)
        with g.active():
            proc.process()                              # the compiled path, once more
            compiled = _columns(table)
            for name, col in before.items():
                getattr(table, name)[:] = col
            g.ctx.reference = True
            try:
                proc.process()                          # the oracle on the same numbers
            finally:
                g.ctx.reference = False
        live = table.live
        for name in ("position", "heading", "velocity", "attach_heading"):
            got, want = compiled[name][live], getattr(table, name)[live]
            assert got.tobytes() == want.tobytes(), (u, name)
        assert table.in_use == int(live.sum()) > 500
        assert not np.array_equal(compiled["position"][live], before["position"][live])
        assert not np.array_equal(compiled["heading"][live], before["heading"][live])
