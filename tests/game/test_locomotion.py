"""Locomotion: the state function's velocity arrives in the same update, and the gait
speeds come from the set's looping gait clips.

Spec: "Root motion" (L347-349: the state update 0x0023fea8 sets the velocity, then
Human_ApplyRootMotion adds the root velocity, then the human moves), "Playback rate"
(L297: the walking speeds, 0x00254078, "divide by the same rate"), "Notes for
implementers" (L413: a looping gait's speed is the descriptor's displacement over the
duration, Anim_RootDisplacementLength 0x00101950).
"""
from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest

from scuffle import parse_scenario, run_scenario
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.data.rates import RUNTIME_SPEEDS, gait_speed, root_displacement_length
from scuffle.anim.data.rangelist import author_range
from scuffle.game.fighters.combat import GAITS, PACES, Fight
from scuffle.game.fighters.moves import GAIT_IDS, Move
from scuffle.game.fighters.moveset import GAIT_SPEEDS as AUTHORED, demo_set
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

WALK_START = """updates = 40
[sets.demo]
library = "demo"
[[humans]]
name = "a"
set = "demo"
[[commands]]
update = 0
human = "a"
loop = 358
[[commands]]
update = 2
human = "a"
action = "move"
direction = [0, 1]
speed = 1.63
"""


def _trace(text: str) -> list[dict]:
    out = io.StringIO()
    run_scenario(parse_scenario(text, "walk.toml"), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_gait_speed_arrives_on_the_hand_over_update():
    recs = _trace(WALK_START)
    anim = [r["anim"] for r in recs]
    vel = [r["vel"] for r in recs]
    hand = anim.index(Move.WALK)
    assert hand == 15 and anim[14] == Move.WALK_START         # the update 15
    assert vel[15] == pytest.approx([0.0, 1.63, 0.0], abs=1e-9)
    # From the first step of the start clip (update 3) to the steady gait: never 0.
    speeds = [float(np.hypot(*v[:2])) for v in vel]
    assert all(s > 0.5 for s in speeds[3:])
    assert speeds[3:15] == pytest.approx([1.048 * 0.75] * 12, abs=0.01)   # the start clip's root velocity
    assert speeds[15:] == pytest.approx([1.63] * (len(speeds) - 15), abs=1e-9)
    # Position: each update moves by that update's velocity (the move follows the velocity).
    for k in range(1, len(recs)):
        step = np.subtract(recs[k]["pos"], recs[k - 1]["pos"]) * 30.0
        assert step == pytest.approx(vel[k], abs=1e-6)


def test_the_state_functions_run_before_root_motion_in_the_state_update(new_game):
    g = new_game()
    g.add_human("a", demo_set())
    body = g.body("a")
    order = []
    g.ctx.state_functions.append(lambda ctx: (order.append(ctx.update),
                                              setattr(body, "state_velocity", np.array([0.0, 2.0, 0.0]))))
    g.change("a", g.player.loop(g.instance("a"), Move.IDLE))
    g.step()
    assert order == [0]
    assert body.velocity == pytest.approx([0.0, 2.0, 0.0])       # applied in the same update
    assert body.position == pytest.approx([0.0, 2.0 / 30.0, 0.0])


def test_root_displacement_length_and_the_rate_rule():
    s = demo_set()
    walk = s.clip(Move.WALK)
    assert root_displacement_length(walk) == pytest.approx(float(np.hypot(*walk.displacement)))
    assert gait_speed(walk, 1.0) == pytest.approx(1.63, abs=1e-6)
    assert gait_speed(walk, 0.8) == pytest.approx(1.63 / 0.8, abs=1e-6)    # L297: divided by the rate
    with pytest.raises(ValueError, match="rate"):
        gait_speed(walk, 0.0)


def test_the_demo_sets_speeds_come_from_its_clips():
    p = Player()
    speeds = p.gait_speeds(demo_set(), GAIT_IDS[:4])
    want = [AUTHORED[m][0] for m in (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT)]
    assert speeds == pytest.approx(want, abs=1e-5)


def _faster_set(factor: float, flags: int | None = None):
    """The demo set with its walk and jog clips' displacement scaled by ``factor``."""
    s = demo_set()
    for m in (Move.WALK, Move.JOG):
        c = s.clip(m)
        dx, dy = c.displacement
        s = s.with_clip(m, dataclasses.replace(c, displacement=(dx * factor, dy * factor)),
                        None if flags is None else author_range(flags=flags))
    return s


def test_a_set_with_other_gait_clips_moves_at_its_own_speeds():
    game = Game()
    game.add_human("a", demo_set())
    game.add_human("b", _faster_set(1.5), position=(5.0, 0.0, 0.0))
    fight = Fight(game)
    for h in ("a", "b"):
        game.change(h, game.player.loop(game.instance(h), Move.IDLE))
    game.step()
    assert fight.gait_speeds("b")[:2] == pytest.approx([1.63 * 1.5, 3.5 * 1.5], abs=1e-5)
    assert fight.gait_speeds("b")[2:] == pytest.approx(fight.gait_speeds("a")[2:])
    assert fight.move("a", (0.0, 1.0)) and fight.move("b", (0.0, 1.0))      # the set's walk speed
    for _ in range(30):
        game.step()
    assert game.body("a").velocity[1] == pytest.approx(1.63, abs=1e-5)
    assert game.body("b").velocity[1] == pytest.approx(1.63 * 1.5, abs=1e-5)
    assert fight.move("b", (0.0, 1.0), pace="jog")
    for _ in range(5):
        game.step()
    assert game.body("b").velocity[1] == pytest.approx(3.5 * 1.5, abs=1e-5)
    game.close()


def test_a_gait_clip_at_another_rate_divides_its_speed():
    game = Game()
    game.add_human("a", _faster_set(1.0, flags=0x800))      # rate 0.8 at runtime
    fight = Fight(game)
    assert RUNTIME_SPEEDS.rate_for(0x800) == pytest.approx(0.8)
    assert fight.gait_speeds("a")[0] == pytest.approx(1.63 / 0.8, abs=1e-5)
    game.close()


def test_move_rejects_an_unknown_pace():
    game = Game()
    game.add_human("a", demo_set())
    fight = Fight(game)
    with pytest.raises(ValueError, match="pace 'amble'"):
        fight.move("a", (0.0, 1.0), pace="amble")
    for bad in (True, 4, -1, 1.0):
        with pytest.raises(ValueError, match="move: pace"):
            fight.move("a", (0.0, 1.0), pace=bad)
    assert fight.move("a", (0.0, 1.0), pace=2) and fight.combat("a").move_speed == pytest.approx(5.5, abs=1e-5)
    assert GAITS == PACES == ("walk", "jog", "run", "sprint")
    game.close()


def test_the_older_gait_keyword_still_moves_with_a_deprecation_warning():
    game = Game()
    game.add_human("a", demo_set())
    fight = Fight(game)
    with pytest.warns(DeprecationWarning, match="pace="):
        assert fight.move("a", (0.0, 1.0), gait="run")
    assert fight.combat("a").move_speed == pytest.approx(5.5, abs=1e-5)
    game.close()


def test_the_move_action_takes_a_gait():
    recs = _trace(WALK_START.replace("speed = 1.63", 'pace = "jog"'))
    assert recs[-1]["vel"][1] == pytest.approx(3.5, abs=1e-5)


def test_the_scenario_options_take_the_readings():
    from scuffle.game.runtime.scenario import ScenarioError

    base = WALK_START.replace("updates = 40\n", "updates = 3\n[options]\nevents = \"newest\"\n"
                              "blend_window = \"kept\"\npick = \"all\"\n")
    sc = parse_scenario(base, "o.toml")
    assert (sc.options.events, sc.options.blend_window, sc.options.pick) == ("newest", "kept", "all")
    default = parse_scenario(WALK_START, "d.toml").options
    assert (default.events, default.blend_window, default.pick) == ("cursor", "advanced", "chosen")
    with pytest.raises(ScenarioError, match=r"options\.events: expected one of 'cursor', 'newest'"):
        parse_scenario(base.replace('events = "newest"', 'events = "all"'), "o.toml")


def test_the_scenario_options_take_the_round_3_readings():
    """The fidelity options (tests/anim/test_fidelity.py) reach the scenario's [options] like
    the other readings: each enum's values, the original's by default, a bad value refused
    naming the field."""
    from scuffle.game.runtime.scenario import ScenarioError

    base = WALK_START.replace("updates = 40\n", "updates = 3\n[options]\nplace_events = \"fired\"\n"
                              "held_release = \"coney\"\nmotion_entry = \"identity\"\ntag_bits = \"mark\"\n")
    sc = parse_scenario(base, "o.toml").options
    assert (sc.place_events, sc.held_release, sc.motion_entry, sc.tag_bits) == ("fired", "coney", "identity", "mark")
    default = parse_scenario(WALK_START, "d.toml").options
    assert (default.place_events, default.held_release, default.motion_entry, default.tag_bits) == \
        ("silent", "original", "motion", "y_bit")
    with pytest.raises(ScenarioError, match=r"options\.held_release: expected one of 'original', 'coney'"):
        parse_scenario(base.replace('held_release = "coney"', 'held_release = "both"'), "o.toml")
    with pytest.raises(ValueError, match=r"PlayerOptions\.tag_bits: 'bit' is not one of 'y_bit', 'mark'"):
        PlayerOptions(tag_bits="bit")
