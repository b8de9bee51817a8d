"""Embedding: esper's own conventions, a host's esper world, the Game's life
cycle, and one human's bones in the shapes users expect."""
from __future__ import annotations

import esper
import numpy as np
import pytest

from scuffle import Fight, Game, demo_set
from scuffle.anim.maths.skeleton import HUMANOID
from scuffle.game.fighters.moves import Move
from scuffle.game.runtime.schedule import PRIORITY_STEP, SCHEDULE, priority_of
from scuffle.game.runtime.world import GameClosed, WorldInUse


@pytest.fixture(scope="module")
def aset():
    return demo_set()


def _two(g: Game, aset) -> None:
    g.add_human("a", aset, position=(0, 0, 0), heading=0)
    g.add_human("b", aset, position=(0, 1.0, 0), heading=180)
    for name in ("a", "b"):
        g.change(name, g.player.loop(g.instance(name), Move.FIGHT_IDLE))


def test_esper_process_with_a_dt_runs_one_fixed_update(aset):
    with Game() as g:
        _two(g, aset)
        with g.active():
            esper.process(1 / 30)
            esper.process(0.5, extra="ignored")        # dt is ignored: one process, one update
        assert g.update == 2
        t = g.instance("a").stack[-1].current_time() if g.instance("a").stack else None
    with Game() as ref:
        _two(ref, aset)
        ref.step()
        ref.step()
        assert ref.instance("a").stack[-1].current_time() == t


def test_a_host_world_runs_scuffle_beside_its_own_system(aset):
    seen = []

    class HostSystem(esper.Processor):
        def process(self, dt):
            seen.append((dt, g.ctx.update, g.record("a").anim_id))

    prev = esper.current_world
    esper.switch_world("host-level")
    try:
        g = Game.attach()
        assert g.world == "host-level" and not g.owns_world
        # between the state update and the actions, where the priorities leave room
        esper.add_processor(HostSystem(), priority=priority_of(SCHEDULE[3]) - PRIORITY_STEP // 2)
        _two(g, aset)
        fight = Fight(g)
        for _ in range(5):
            esper.process(1 / 30)                     # the host drives the loop
        assert g.update == 5
        assert [u for _, u, _ in seen] == [0, 1, 2, 3, 4]
        assert all(dt == pytest.approx(1 / 30) for dt, _, _ in seen)
        assert seen[-1][2] == Move.FIGHT_IDLE
        fight.strike("a")                             # the fight rules work in the host's world
        for _ in range(3):
            esper.process(1 / 30)
        assert [e[1:3] for e in fight.stats.log] == [("a", "strike")]
        assert g.record("a").anim_id != Move.FIGHT_IDLE
        g.close()
        assert "host-level" in esper.list_worlds()    # the world stays the host's
        assert all(esper.get_processor(s) is None for s in SCHEDULE)
        assert esper.get_processor(HostSystem) is not None
    finally:
        esper.switch_world(prev)
        if "host-level" in esper.list_worlds():
            esper.delete_world("host-level")


def test_host_world_close_removes_the_humans(aset):
    prev = esper.current_world
    esper.switch_world("host-2")
    try:
        own = esper.create_entity()
        g = Game.attach()
        _two(g, aset)
        esper.process()
        g.close()
        assert esper.entity_exists(own)
        assert not any(esper.entity_exists(e) for e in g.names.values())
    finally:
        esper.switch_world(prev)
        esper.delete_world("host-2")


def test_one_game_per_world():
    with Game(world="shared-x"):
        with pytest.raises(WorldInUse, match="shared-x"):
            Game(world="shared-x")
    assert "shared-x" not in esper.list_worlds()


def test_a_closed_game_refuses_to_step(aset):
    with Game() as g:
        g.add_human("a", aset)
        g.step()
    with pytest.raises(GameClosed):
        g.step()
    with pytest.raises(GameClosed):
        g.add_human("b", aset)
    g.close()                                         # closing twice does nothing


def test_a_game_in_the_default_world_closes_without_raising(aset):
    prev = esper.current_world
    esper.switch_world("default")
    try:
        g = Game(world="default")
        g.add_human("a", aset)
        g.step()
        g.close()
        assert "default" in esper.list_worlds()
        assert esper.get_processor(SCHEDULE[0]) is None
    finally:
        esper.switch_world(prev)


def test_priorities_leave_room_between_systems():
    prios = [priority_of(s) for s in SCHEDULE]
    assert prios == sorted(prios, reverse=True)
    assert all(a - b == PRIORITY_STEP for a, b in zip(prios, prios[1:])) and PRIORITY_STEP >= 10


def test_bones_of_one_human_in_model_and_world_space(aset):
    with Game() as g:
        g.add_human("a", aset, position=(2.0, -1.0, 0.0), heading=90.0)
        g.add_human("b", aset, position=(0.0, 0.0, 0.0), heading=0.0)
        pos0, rot0 = g.bones_model("a")                    # before the first update: reference
        ref_pos, ref_rot = HUMANOID.reference_model_space()
        np.testing.assert_allclose(pos0, ref_pos)
        g.change("a", g.player.loop(g.instance("a"), Move.FIGHT_IDLE))
        g.change("b", g.player.loop(g.instance("b"), Move.WALK_START))
        g.step()
        pos, rot = g.bones_model("a")
        assert pos.shape == (34, 3) and rot.shape == (34, 4)
        row = g.pose_row("a")
        np.testing.assert_allclose(pos, g.ctx.bone_pos[:, :, row].T)
        assert not np.allclose(pos, g.bones_model("b")[0])   # another human's, not a mix
        np.testing.assert_allclose(np.linalg.norm(rot, axis=1), 1.0, atol=1e-5)
        wpos, wrot = g.bones_world("a")
        # heading 90 degrees: model +y (forward) is world -x
        np.testing.assert_allclose(wpos[1], [2.0 - pos[1, 1], -1.0 + pos[1, 0], pos[1, 2]], atol=1e-6)
        # world rotations place each child at parent + rotation . offset, as model space does
        for b in range(2, 34):
            p = HUMANOID.parents[b]
            x, y, z, w = wrot[p]
            v = np.asarray(HUMANOID.offsets[b], dtype=np.float64)
            u = np.array([x, y, z])
            rv = v + 2 * w * np.cross(u, v) + 2 * np.cross(u, np.cross(u, v))
            np.testing.assert_allclose(wpos[b], wpos[p] + rv, atol=1e-5)


def test_two_games_stepped_in_turns_keep_their_own_pose_tables(aset):
    """Each Game's clip bank keeps its pose kernels' tables (anim.engine.plan.pose_tables): two
    Games stepped in turns never rebuild each other's. A module-wide single slot once
    rebuilt them on every update (a 2-fighter update 0.04 -> 0.44 ms beside a second Game)."""
    import copy
    import gc
    import weakref

    from scuffle.anim.engine.plan import pose_tables

    with Game() as ga, Game() as gb:
        _two(ga, aset)
        _two(gb, aset)
        ga.step()
        gb.step()
        ta, tb = ga.player.bank.pose_tables, gb.player.bank.pose_tables
        assert ta is not None and tb is not None and ta is not tb
        for _ in range(4):
            ga.step()
            gb.step()
        assert ga.player.bank.pose_tables is ta and gb.player.bank.pose_tables is tb
        assert pose_tables(ga.player.bank) is ta
        # a bank the player replaces (a new clip) goes at once with its tables: no cycle
        # keeps them for the collector (which a host may have frozen)
        gone = weakref.ref(ta)
        del ta
        gc.disable()
        try:
            ga.player.bank_index(copy.copy(aset.clip(Move.FIGHT_IDLE)))
            assert ga.player.bank.pose_tables is None              # the new bank: built on use
            assert gone() is None
        finally:
            gc.enable()
        ga.step()
        assert ga.player.bank.pose_tables is not None and gb.player.bank.pose_tables is tb
