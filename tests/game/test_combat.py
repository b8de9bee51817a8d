"""The fight rules on the demo move set: grab -> strike -> throw, scripted and traced.

Spec: "Paired tasks" (the victim plays the attacker's clips at the attacker's rate; the
bodies are slid together, snapped to the hold's type-8 point, then attached), "Root
motion" (a throw turns the thrower by its whole angle once the rate is applied), "The
Anim Range List" (damage +0x0a, hit code +0x0c, the grab's far range x 1.25).
"""
from __future__ import annotations


import numpy as np
import pytest

from scuffle.anim.data.clip import EventType
from scuffle.anim.playback.tasks import TaskType
from scuffle.components import Combat, NO_ATTACHMENT
from scuffle.game.fighters.combat import Fight, FightFlags, FightState, GRAB_SEARCH_FACTOR, reaction_for
from scuffle.game.fighters.moves import GRAB_STRIKES, THROWS, Move
from scuffle.game.fighters.moveset import demo_set
from scuffle import parse_scenario, run_scenario
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

FIGHT = """
updates = {updates}

[sets.demo]
library = "demo"

[[humans]]
name = "a"
set = "demo"
position = [0, 0, 0]
heading = 0

[[humans]]
name = "b"
set = "demo"
position = [0, {gap}, 0]
heading = 180

[[commands]]
update = 0
human = "a"
loop = 358

[[commands]]
update = 0
human = "b"
loop = 388

[[commands]]
update = 2
human = "a"
action = "grab"

[[commands]]
update = 60
human = "a"
action = "strike"
move = 51

[[commands]]
update = 110
human = "a"
action = "throw"
move = {throw}
"""


def _tasks(inst) -> list[dict]:
    """What a test reads of a stack's tasks, copied now (a task is a handle onto its row:
    once it ends and goes back to the pool, reading it raises StaleHandle)."""
    return [dict(type=t.type, rate=t.rate, anim_id=t.anim_id(), clip=getattr(getattr(t, "cursor", None), "clip", None))
            for t in inst.stack]


def _run(updates=260, gap=1.0, throw=149):
    sc = parse_scenario(FIGHT.format(updates=updates, gap=gap, throw=throw), "fight.toml")
    records = []

    def grab_state(game):
        a, b = game.body("a"), game.body("b")
        records.append(dict(update=game.update - 1, a_anim=game.record("a").anim_id, b_anim=game.record("b").anim_id,
                            a_heading=a.heading, b_heading=b.heading, b_pos=b.position.copy(),
                            a_pos=a.position.copy(), attached=b.attachment, offset=b.attach_offset.copy(),
                            b_health=game.component("b", Combat).health,
                            b_tasks=_tasks(game.instance("b")), a_tasks=_tasks(game.instance("a"))))

    game = run_scenario(sc, on_update=grab_state)
    return game, records


@pytest.fixture(scope="module")
def fight():
    game, records = _run()
    yield game, records
    game.close()


def _first(records, key, value):
    return next(r for r in records if r[key] == value)


def test_grab_connects_and_pairs_the_clips(fight):
    game, rs = fight
    r = _first(rs, "a_anim", Move.GRAB_CONNECT)
    assert r["b_anim"] == Move.GRAB_CONNECT_VICTIM
    vt = next(t for t in r["b_tasks"] if t["type"] == TaskType.PAIRED_CLIP)
    aset = demo_set()
    # The victim plays the attacker's clip (looked up in the attacker's set) at the attacker's rate.
    assert vt["clip"] is aset.clip(Move.GRAB_CONNECT_VICTIM)
    assert vt["rate"] == game.player.rate_of(aset, Move.GRAB_CONNECT_VICTIM)
    assert game.fight.stats.grabs == 1


def test_bodies_slide_then_snap_to_the_holds_type8_point_and_attach(fight):
    game, rs = fight
    aset = demo_set()
    rec = aset.range(Move.GRAB_CONNECT)
    target = np.array([rec.direction[0] * rec.reach, rec.direction[1] * rec.reach])
    start = _first(rs, "a_anim", Move.GRAB_CONNECT)
    k = rs.index(start)
    # slid together over a few updates toward the connecting clip's range point, turned to face
    slid = rs[k + 3]
    assert np.allclose(slid["b_pos"][:2], target, atol=1e-6)
    assert slid["b_heading"] == pytest.approx(180.0)
    assert slid["attached"] == NO_ATTACHMENT
    hold = _first(rs, "a_anim", Move.HOLD)
    place = next(e for e in aset.clip(Move.HOLD).decoded_events() if e.type == EventType.PARTNER_PLACE)
    assert hold["attached"] == game.entity("a")
    assert np.allclose(hold["offset"][:2], place.position[:2])
    assert np.allclose(hold["b_pos"][:2], np.array(place.position[:2]) + hold["a_pos"][:2], atol=1e-9)
    # the record holds the same point as a direction and a reach (hold 82: spec's numbers)
    r82 = aset.range(Move.HOLD)
    assert np.allclose(np.array(r82.direction) * r82.reach, place.position[:2], atol=0.05)


def test_grab_strike_deals_its_range_records_damage(fight):
    game, rs = fight
    dmg = demo_set().range(Move.GRAB_KNEE).damage
    assert dmg > 0
    healths = [r["b_health"] for r in rs]
    drops = [a - b for a, b in zip(healths, healths[1:]) if a != b]
    assert drops == [dmg]
    strike = _first(rs, "a_anim", Move.GRAB_KNEE)
    assert strike["b_anim"] == GRAB_STRIKES[Move.GRAB_KNEE]
    assert game.fight.stats.strikes == 1 and game.fight.stats.damage == dmg


@pytest.mark.parametrize("throw", sorted(THROWS))
def test_throw_turns_the_thrower_by_its_authored_angle_and_releases(throw):
    game, rs = _run(throw=int(throw))
    try:
        authored = THROWS[throw][1]
        before = _first(rs, "a_anim", throw)
        k = rs.index(before)
        h0 = rs[k - 1]["a_heading"]
        end = next(r for r in rs[k:] if r["a_anim"] != throw)
        turned = end["a_heading"] - h0
        assert abs((turned - authored + 540.0) % 360.0 - 180.0) < 1.0, (turned, authored)
        # The victim was carried by the thrower's turn, then released and knocked down.
        assert end["attached"] == NO_ATTACHMENT
        assert game.fight.stats.throws == 1
        c = game.component("b", Combat)
        assert c.state in (FightState.DOWN, FightState.FREE)
        # The throw plays at 0.75 on both sides (no rate flag); the victim at the attacker's rate.
        aset = demo_set()
        assert game.player.rate_of(aset, throw) == pytest.approx(0.75)
        vt = next(t for t in before["b_tasks"] if t["type"] == TaskType.PAIRED_CLIP)
        assert vt["anim_id"] == THROWS[throw][0] and vt["rate"] == pytest.approx(0.75)
    finally:
        game.close()


def test_victim_gets_up_and_nothing_leaks(fight):
    game, rs = fight
    assert rs[-1]["b_anim"] == Move.FIGHT_IDLE
    assert game.component("b", Combat).state == FightState.FREE
    insts = [game.instance(n) for n, _ in game.humans()]
    assert game.player.pool.in_use == game.player.tasks_out(insts)


def test_grab_misses_out_of_range():
    far = demo_set().range(Move.GRAB_ATTEMPT).far * GRAB_SEARCH_FACTOR
    game, rs = _run(updates=120, gap=far + 0.3)
    try:
        assert game.fight.stats.grabs == 0
        assert all(r["a_anim"] != Move.GRAB_CONNECT for r in rs)
    finally:
        game.close()
    game, rs = _run(updates=120, gap=far - 0.1)
    try:
        assert game.fight.stats.grabs == 1
    finally:
        game.close()


def _duel():
    game = Game()
    s = demo_set()
    game.add_human("a", s, (0, 0, 0), 0.0)
    game.add_human("b", s, (0, 0.9, 0), 180.0)
    fight = Fight(game)
    for n, i in (("a", Move.FIGHT_IDLE), ("b", Move.FIGHT_IDLE)):
        game.change(n, game.player.loop(game.instance(n), i))
    game.step()
    return game, fight


def test_input_is_gated_by_held_flags():
    game, fight = _duel()
    try:
        assert fight.strike("a")
        assert game.record("a").flags & FightFlags.WINDUP
        assert not fight.grab("a") and not fight.move("a", (1, 0), 1.0) and not fight.strike("a")
        # step into the recovery (0x2d cleared 0x7 and set 0x4): a chained strike is allowed
        for _ in range(40):
            game.step()
            if game.record("a").flags & FightFlags.RECOVERY:
                break
        assert game.record("a").flags & FightFlags.RECOVERY
        assert not fight.grab("a")
        assert fight.strike("a")
        assert game.record("a").anim_id == Move.CROSS
        # a grab victim cannot act
        for _ in range(60):
            game.step()
        assert fight.free("a")
    finally:
        game.close()


def test_free_strike_damage_and_reaction_by_hit_code():
    game, fight = _duel()
    try:
        s = demo_set()
        fight.strike("a", Move.FINISHER)
        health = []
        for _ in range(50):
            game.step()
            health.append(game.component("b", Combat).health)
        dmg = s.range(Move.FINISHER).damage
        assert 100.0 - health[-1] == dmg
        clip, down = reaction_for(s.range(Move.FINISHER).hit, False)
        assert down and clip == Move.KNOCKDOWN
        assert game.component("b", Combat).state == FightState.DOWN
        ids = {t.anim_id() for t in game.instance("b").stack}
        assert ids & {Move.KNOCKDOWN, Move.GROUNDED}
    finally:
        game.close()


def test_reaction_table():
    assert reaction_for(0x00, False) == (Move.HIT_FRONT, False)
    assert reaction_for(0x00, True) == (Move.HIT_BACK, False)
    assert reaction_for(0x10, False) == (Move.HIT_HEAVY, False)
    assert reaction_for(0x20, False) == (Move.KNOCKDOWN, True)
    assert reaction_for(10, False) == (Move.HIT_FRONT, False)


def test_move_walks_with_start_clip_then_gait_state_velocity():
    game = Game()
    game.add_human("a", demo_set())
    fight = Fight(game)
    game.change("a", game.player.loop(game.instance("a"), Move.IDLE))
    game.step()
    assert fight.move("a", (1.0, 0.0), 1.63)
    assert game.body("a").heading == pytest.approx(-90.0)
    ids, speeds = [], []
    for _ in range(30):
        p0 = game.body("a").position.copy()
        game.step()
        ids.append(game.record("a").anim_id)
        speeds.append(float(np.linalg.norm(game.body("a").position - p0)) * 30.0)
    assert ids[0] == Move.WALK_START
    # the start clip moves the body by its root velocity x rate (0.786 m/s), the gait by state velocity
    assert speeds[1] == pytest.approx(1.048 * 0.75, abs=0.01)
    assert Move.WALK in ids and speeds[-1] == pytest.approx(1.63, abs=1e-6)
    fight.move("a", (1.0, 0.0), 0.0)
    for _ in range(40):
        game.step()
    assert game.record("a").anim_id == Move.IDLE and game.body("a").state_velocity.sum() == 0
    game.close()


def test_scenario_actions_validate_their_keys():
    from scuffle.game.runtime.scenario import ScenarioError
    bad = FIGHT.format(updates=200, gap=1.0, throw=149).replace('move = 51', 'move = "knee"')
    with pytest.raises(ScenarioError, match=r"commands\[3\]\.move"):
        parse_scenario(bad, "x.toml")
    bad = FIGHT.format(updates=200, gap=1.0, throw=149).replace('action = "grab"', 'action = "fly"')
    with pytest.raises(ScenarioError, match="unknown action 'fly'"):
        parse_scenario(bad, "x.toml")
