"""The embeddable runtime (game/world.py) and paired tasks.

Spec: "Paired tasks" (the clip and the rate come from the attacker's character),
"Playback rate". Also: several worlds side by side, no pygame, the
systems in a host's own esper world.
"""
from __future__ import annotations

import subprocess
import sys

import esper
import numpy as np
import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.playback.player import Player
from scuffle.anim.engine.stack import CharacterInstance, HumanRecord
from scuffle.anim.playback.tasks import TaskType
from scuffle.components import (Animator, AnimSetRef, Body, Combat, FiredEvents, Name, PoseRef,
                        RangeRecords)
from scuffle.game.runtime.schedule import install
from scuffle.game.runtime.world import Game, UnknownHuman
from scuffle.systems.context import SimContext

from gamehelp import IDLE, REPO, clip, make_set, still

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

X = 73                        # the reaction id both sets hold, with different clips


def _sets():
    """Set A (the attacker's): X is a 20-frame clip bending bone 5, flags 0x800 (0.8).
    Set B: X is a 40-frame clip bending bone 5 the other way, no flag (0.75)."""
    qa, qb = (0.6, 0.0, 0.0, 0.8), (0.0, 0.6, 0.0, 0.8)
    ca = clip(20, "a_73", rotations={5: [(0, qa)]})
    cb = clip(40, "b_73", rotations={5: [(0, qb)]})
    sa = make_set({X: ca, IDLE: still()}, {X: 0x800}, name="A")
    sb = make_set({X: cb, IDLE: still(80)}, {X: 0}, name="B")
    return sa, sb, ca, cb, qa, qb


def test_a_paired_task_plays_the_attackers_clip_at_the_attackers_rate(new_game):
    sa, sb, ca, cb, qa, qb = _sets()
    g = new_game()
    g.add_human("a", sa)
    g.add_human("b", sb)
    ia, ib = g.instance("a"), g.instance("b")
    task = g.player.paired(ib, ia, X)
    assert task.type == TaskType.PAIRED_CLIP
    assert task.cursor.clip is ca
    assert task.rate == F.f32(0.8)                     # A's 0x800, not B's own 0.75
    assert g.player.rate_of(sb, X) == F.f32(0.75)
    g.change("b", task)
    g.step()
    # The cursor is bound to b (its stack) and advanced at A's rate.
    assert ib.stack[0] is task and not ia.stack
    assert task.cursor.time == F.mul(F.DT, F.f32(0.8))
    # b's sampled pose is A's clip.
    row = g.pose_row("b")
    np.testing.assert_allclose(g.ctx.poses.rot[:, 5, row], qa, atol=1e-3)


def test_the_victim_plays_the_attackers_clip_for_its_length_at_its_rate(new_game):
    sa, sb, *_ = _sets()
    g = new_game()
    g.add_human("a", sa)
    g.add_human("b", sb)
    ib = g.instance("b")
    g.change("b", g.player.chain(ib, [X, IDLE], paired_with=g.instance("a")))
    ids = []
    for _ in range(60):
        g.step()
        ids.append(g.record("b").anim_id)
    # A's 20 frames at 0.8 end on step ceil(19.5 / 0.8) = 25 (B's own 40 at 0.75: 53);
    # changed before update 0, step k runs in update k - 1.
    assert ids.index(IDLE) == 25 - 1
    # The loop after it comes from A's set too.
    assert ib.stack[0].cursor.clip is sa.clip(IDLE)


def test_an_unpaired_task_uses_the_humans_own_set(new_game):
    sa, sb, ca, cb, qa, qb = _sets()
    g = new_game()
    g.add_human("b", sb)
    task = g.player.clip(g.instance("b"), X)
    assert task.cursor.clip is cb and task.rate == F.f32(0.75)
    g.change("b", task)
    g.step()
    np.testing.assert_allclose(g.ctx.poses.rot[:, 5, g.pose_row("b")], qb, atol=1e-3)


# ---------------------------------------------------------------- embedding

def test_two_games_side_by_side_stay_independent(new_game):
    s = make_set({1: clip(30, velocity=[(0, (0.0, 1.0, 0.0))])}, {1: 0x1000})
    g1, g2 = new_game(), new_game()
    assert g1.world != g2.world
    e1 = g1.add_human("a", s)
    e2 = g2.add_human("a", s)
    g1.change("a", g1.player.loop(g1.instance("a"), 1))
    g2.change("a", g2.player.loop(g2.instance("a"), 1))
    esper.switch_world("default")
    for _ in range(5):
        g1.step()
    assert esper.current_world == "default"            # switched back after each step
    assert g1.update == 5 and g2.update == 0
    assert g1.instance("a").stack[0].cursor.time > 0
    assert g2.instance("a").stack[0].cursor.time == 0.0
    assert g1.body("a").position[1] > 0
    np.testing.assert_array_equal(g2.body("a").position, [0.0, 0.0, 0.0])
    assert g1.body("a") is not g2.body("a")
    g2.step()
    assert g2.body("a").position[1] == pytest.approx(1.0 / 30, rel=1e-3)
    assert e1 == e2 == 1                               # each world numbers its own entities
    # Nothing leaked into the default world.
    assert not esper.get_component(Body)


def test_close_deletes_the_world_and_keeps_the_current_one(esper_clean):
    esper.switch_world("test-world-host")
    g = Game()
    assert g.world in esper.list_worlds()
    assert esper.current_world == "test-world-host"
    g.step()
    assert esper.current_world == "test-world-host"
    g.close()
    assert g.world not in esper.list_worlds()
    assert esper.current_world == "test-world-host"


def test_human_names_are_checked(new_game):
    g = new_game()
    g.add_human("a", make_set({IDLE: still()}))
    with pytest.raises(ValueError):
        g.add_human("a", make_set({IDLE: still()}))
    with pytest.raises(UnknownHuman, match="no human named 'zed'"):
        g.body("zed")


@pytest.mark.slow
def test_game_steps_without_pygame():
    code = """
import sys
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip
from scuffle.game.runtime.world import Game
s = AnimSet.build({388: author_clip("idle", 60)})
g = Game()
g.add_human("a", s)
g.change("a", g.player.loop(g.instance("a"), 388))
for _ in range(10):
    g.step()
assert g.record("a").anim_id == 388
assert "pygame" not in sys.modules, "pygame was imported"
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_the_systems_run_in_a_hosts_own_esper_world(esper_clean):
    esper.switch_world("test-world-own")
    player = Player()
    ctx = SimContext(player)
    procs = install(ctx)
    assert len(procs) == 6
    s = make_set({1: clip(30, velocity=[(0, (0.0, 2.0, 0.0))])}, {1: 0x1000})
    player.register(s)
    ent = esper.create_entity()
    record = HumanRecord()
    inst = CharacterInstance(s, "hero", record, handle=ent)
    for comp in (Name("hero"), Animator(inst), record, PoseRef(), RangeRecords(s.range_list),
                 AnimSetRef(s), Body(), Combat(), FiredEvents()):
        esper.add_component(ent, comp)
    player.change(inst, player.loop(inst, 1))
    for _ in range(3):
        esper.process()
    assert record.anim_id == 1
    assert inst.stack[0].cursor.frame == 3
    assert esper.component_for_entity(ent, PoseRef).row == 0
    assert esper.component_for_entity(ent, Body).position[1] == pytest.approx(3 * 2.0 / 30, rel=1e-3)


def test_a_crowd_stepped_in_turns_with_another_game_gives_the_state_it_gives_alone():
    """No state crosses between two Games in one process (module-wide caches included:
    the pose kernels' bank tables once lived in one slot both used): a realistic crowd
    under the fight rules, stepped in turns with another crowd of other sets, seeds and
    size, goes through the very states (Game.checksum) it goes through alone."""
    from scuffle.game.tools.bench import build_crowd

    def run(*games, updates=25):
        out = [[] for _ in games]
        for _ in range(updates):
            for k, g in enumerate(games):
                g.step()
                out[k].append(g.checksum())
        for g in games:
            g.close()
        return out

    (alone,) = run(build_crowd(24, "realistic", seed=5))
    beside, other = run(build_crowd(24, "realistic", seed=5), build_crowd(16, "realistic", seed=9))
    assert beside == alone
    assert other != alone[:len(other)]
