"""The locomotion's mask, the attached human's velocity and the one dt of a Game, from the
spec's own lines and figures, on both engines (the compiled one and the reference), bit
for bit.

Spec "Root motion": L349 (the velocity rule: the root velocity, turned into world axes and
capped at 50 m/s, "is added to the velocity the state function set"), L350 (a human with an
attachment "instead takes the pose's quaternion once per update as it is"), L376 ("The
locomotion sets no horizontal velocity of its own while a start or stop clip plays (human
flags 0x10000000 or 0x80000, mask 0x110c0880 tested at 0x00241a88 ...) ... At runtime the
walk start moved Rembrandt at a steady 0.76 m/s, and section A of that clip is about
1.05 m/s x 0.75 ~ 0.79 m/s"), "Gait blend" (the walk at 1.63 m/s), L350 again for dt
(0x005102cc, 1/30 s). docs/original.md, "The locomotion's velocity", "The attached
human", "One dt".
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from scuffle import Game, demo_set
from scuffle.anim.maths import f32 as F
from scuffle.anim.data.clip import EventType, author_clip, make_event
from scuffle.anim.playback.player import PlayerOptions
from scuffle.anim.playback.tasks import LOCOMOTION_FLAGS, LOCOMOTION_STILL, HeldFlags
from scuffle.components import NO_ATTACHMENT
from scuffle.game.fighters.combat import Fight, LocomotionStop
from scuffle.game.fighters.moves import GAIT_IDS, Move
from scuffle.game.runtime.trace import f32_json, trace_records

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

ENGINES = ["compiled", "reference"]
STOPS = ["mask", "top_task"]
WALK = 1.63                                   # the demo's walk speed ("Gait blend": 1.63 m/s)
START = 1.048 * 0.75                          # the walk start's section A x its rate 0.75 (L376)


def _row(g: Game, name: str = "a") -> tuple:
    """The state a test compares across engines: held, anim id, the body's numbers as bits."""
    b, rec = g.body(name), g.record(name)
    return (rec.held, rec.anim_id, b.state_velocity.tobytes(), b.velocity.tobytes(), b.position.tobytes(),
            float(b.heading).hex(), float(b.attach_heading).hex())


def _speed(v) -> float:
    return float(math.hypot(float(v[0]), float(v[1])))


# ---------------------------------------------------------------- the mask (L376)


def test_the_mask_is_the_spec_constant_of_named_bits():
    """0x110c0880, tested at 0x00241a88: the two human flags of the start and stop clips,
    event 0x48's 0x40000 and three bits the spec names no holder for."""
    assert int(LOCOMOTION_STILL) == 0x110C0880
    assert HeldFlags.START_CLIP in LOCOMOTION_STILL and HeldFlags.START_CLIP_2 in LOCOMOTION_STILL
    assert HeldFlags.REPLACED in LOCOMOTION_STILL and int(HeldFlags.REPLACED) == 0x40000
    for free in (HeldFlags.WINDUP, HeldFlags.HIT_WINDOW, HeldFlags.RECOVERY, HeldFlags.REPORT, HeldFlags.ANIM_STATE):
        assert not free & LOCOMOTION_STILL


def _walk(engine: str, stop: str, updates: int = 30):
    """The demo's walk from a standstill (Fight.move at the walk speed): per update after the
    command, (state speed, speed, held, anim id) and the rows compared across engines."""
    with Game(engine=engine) as g:
        g.add_human("a", demo_set())
        f = Fight(g, locomotion_stop=stop)
        for _ in range(3):
            g.step()
        assert f.move("a", (0.0, 1.0), WALK)
        out, rows = [], []
        for _ in range(updates):
            g.step()
            b = g.body("a")
            out.append((_speed(b.state_velocity), _speed(b.velocity), g.record("a").held, g.record("a").anim_id))
            rows.append(_row(g))
        return out, rows


@pytest.mark.parametrize("stop", STOPS)
def test_the_demo_walk_start_moves_by_its_root_velocity_then_at_the_walk_speed(stop):
    """L376: while the start clip plays (it holds 0x80000) the locomotion sets no velocity of
    its own and the clip's section A alone moves the body, 1.048 x 0.75 = 0.786 m/s (the
    spec's 0.76 measured, 0.79 inferred); on the hand-over update the start clip is released
    (its bit cleared by the flush, before the state update) and the gait moves the body at
    1.63 m/s. Both readings give these figures, on both engines, bit for bit."""
    runs = {e: _walk(e, stop) for e in ENGINES}
    assert runs["compiled"][1] == runs["reference"][1]
    out = runs["compiled"][0]
    hand = next(k for k, (_, _, _, anim) in enumerate(out) if anim == Move.WALK)
    assert hand == 12
    for state, speed, held, anim in out[:hand]:
        assert anim == Move.WALK_START and held == HeldFlags.START_CLIP
        assert state == 0.0 and speed == pytest.approx(START, abs=0.01)
        assert abs(speed - 0.76) < 0.05                      # the runtime figure
    for state, speed, held, anim in out[hand:]:
        assert anim == Move.WALK and held == 0
        assert state == pytest.approx(WALK, abs=1e-12) and speed == pytest.approx(WALK, abs=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_walk_stop_holds_the_other_human_flag(engine):
    """The stop clip is the other clip L376 names: it holds 0x10000000 while it plays (the
    intent is 0 then, so no state velocity either way), cleared when it hands over to the idle."""
    with Game(engine=engine) as g:
        g.add_human("a", demo_set())
        f = Fight(g)
        f.move("a", (0.0, 1.0), WALK)
        for _ in range(20):
            g.step()
        f.move("a", (0.0, 1.0), 0.0)
        seen = []
        for _ in range(60):
            g.step()
            seen.append((g.record("a").anim_id, g.record("a").held, _speed(g.body("a").state_velocity)))
    stop = [h for a, h, _ in seen if a == Move.WALK_STOP]
    assert stop and all(h == HeldFlags.START_CLIP_2 for h in stop)
    assert seen[-1][0] == Move.IDLE and seen[-1][1] == 0
    assert all(s == 0.0 for _, _, s in seen)


def _held_while_walking(engine: str, stop: str, bit: int) -> list:
    """The demo's walk up to the gait leading, then ``bit`` set on the held flags (as a task
    of the game would): the state speeds of the next updates, and the rows."""
    with Game(engine=engine) as g:
        g.add_human("a", demo_set())
        f = Fight(g, locomotion_stop=stop)
        f.move("a", (0.0, 1.0), WALK)
        for _ in range(20):
            g.step()
        assert g.record("a").anim_id == Move.WALK and _speed(g.body("a").velocity) == pytest.approx(WALK)
        g.record("a").held |= bit
        out = []
        for _ in range(5):
            g.step()
            b = g.body("a")
            out.append((_speed(b.state_velocity), _speed(b.velocity), _row(g)))
        return out


@pytest.mark.parametrize("stop", STOPS)
def test_a_mask_bit_set_while_the_gait_leads_stops_the_locomotion(stop):
    """L376: the mask is tested on the held flags, not on the newest task: 0x80000 set while
    the gait leads gives a state velocity of 0 (and, the gait's own root velocity being off,
    flags 0x2c1, a body at rest), where the top-task reading keeps 1.63 m/s. A bit outside
    the mask (0x4, RECOVERY) stops nothing either way. Both engines, bit for bit."""
    for bit, stops in ((int(HeldFlags.START_CLIP), stop == "mask"), (int(HeldFlags.RECOVERY), False)):
        runs = {e: _held_while_walking(e, stop, bit) for e in ENGINES}
        assert [r[2] for r in runs["compiled"]] == [r[2] for r in runs["reference"]]
        for state, speed, _ in runs["compiled"]:
            want = 0.0 if stops else WALK
            assert state == pytest.approx(want, abs=1e-12) and speed == pytest.approx(want, abs=1e-12)


def _walk_with_event_48(engine: str, stop: str):
    """A gait holding 0x4 (RECOVERY, outside the mask) whose walk clip (35 frames, 1.63 m/s)
    carries event 0x48 at frame 10: the intent set by Fight.move (from a standstill),
    then the gait put in the walk start's place, then per update (held, state speed) and
    the rows."""
    walk = author_clip("walk_48", 35, displacement=(0.0, WALK * 35 / 30),
                       rotations={5: [(0, (0.0, 0.0, 0.0, 1.0)), (35, (0.1, 0.0, 0.0, math.sqrt(0.99)))]},
                       events=[make_event(10, int(EventType.HELD_REPLACE))])
    aset = demo_set().with_clip(Move.WALK, walk)
    with Game(engine=engine) as g:
        g.add_human("a", aset)
        f = Fight(g, locomotion_stop=stop)
        assert f.move("a", (0.0, 1.0), WALK)            # the intent (and the walk start, replaced next)
        inst = g.instance("a")
        g.change("a", g.player.gait(inst, GAIT_IDS, target=0.0, value=0.0, flags=int(LOCOMOTION_FLAGS),
                                     held=int(HeldFlags.RECOVERY)))
        out, rows = [], []
        for _ in range(14):
            g.step()
            out.append((g.record("a").held, _speed(g.body("a").state_velocity)))
            rows.append(_row(g))
        return out, rows


@pytest.mark.parametrize("stop", STOPS)
def test_event_0x48_leaves_0x40000_which_stops_the_locomotion(stop):
    """L402: event 0x48 replaces every bit its task holds by 0x40000; 0x40000 is in the mask
    (L376), so the walk (value 0: the walk clip leads alone, rate 1.0, the event on the
    update whose frame reaches 10) stops the locomotion's own velocity from that update on;
    the top-task reading keeps walking (the gait still leads). Both engines, bit for bit."""
    runs = {e: _walk_with_event_48(e, stop) for e in ENGINES}
    assert runs["compiled"][1] == runs["reference"][1]
    out = runs["compiled"][0]
    fired = next(k for k, (held, _) in enumerate(out) if held == HeldFlags.REPLACED)
    assert fired == 9                                       # the 10th step (k = 10): frame 10 at rate 1.0
    for k, (held, state) in enumerate(out):
        assert held == (HeldFlags.RECOVERY if k < fired else HeldFlags.REPLACED)
        moving = k < fired or stop == "top_task"
        assert state == pytest.approx(WALK if moving else 0.0, abs=1e-12)


def test_fight_refuses_an_unknown_locomotion_stop(new_game):
    g = new_game()
    with pytest.raises(ValueError, match="Fight.locomotion_stop"):
        Fight(g, locomotion_stop="gait")
    assert Fight(g, locomotion_stop=LocomotionStop.TOP_TASK).locomotion_stop == LocomotionStop.TOP_TASK


# ---------------------------------------------------------------- the attached human (L349-350)


def _pair(engine: str, rule: str, updates: int = 6):
    """A still holder, a human attached to it and a free human at the same heading, the two
    playing the same clip (3 m/s forward and 0.5 m/s right at rate 0.75, no turn): per update
    (attached velocity, free velocity) and the rows of the two."""
    clip = author_clip("push", 40, velocity=[(0, (0.5, 3.0, 0.0))],
                       rotations={5: [(0, (0.0, 0.0, 0.0, 1.0))]})
    still = author_clip("still", 40, rotations={5: [(0, (0.0, 0.0, 0.0, 1.0))]})
    aset = demo_set().with_clip(700, clip).with_clip(701, still)
    with Game(PlayerOptions(attached_velocity=rule), engine=engine) as g:
        holder = g.add_human("h", aset, position=(2.0, 3.0, 0.0), heading=30.0)
        g.add_human("v", aset, position=(9.0, 9.0, 0.0))
        g.add_human("f", aset, position=(-5.0, 0.0, 0.0), heading=30.0 + 180.0 - 360.0)
        for n, a in (("h", 701), ("v", 700), ("f", 700)):
            g.change(n, g.player.loop(g.instance(n), a))
        vb = g.body("v")
        vb.attachment, vb.attach_offset, vb.attach_heading = holder, (0.4, 1.0, 0.0), 180.0
        vb.heading = -150.0                     # where the placement puts it (30 + 180)
        out, rows = [], []
        for _ in range(updates):
            g.step()
            out.append((g.body("v").velocity.copy(), g.body("f").velocity.copy(), g.body("v").position.copy(),
                        g.body("h").position.copy()))
            rows.append((_row(g, "v"), _row(g, "f"), _row(g, "h")))
        return out, rows


@pytest.mark.parametrize("rule", ["root", "zero"])
def test_an_attached_humans_velocity_is_the_rule_or_zero(rule):
    """L349: the root velocity, turned by the human's rotation and capped, "is added to the
    velocity the state function set", with no exception for an attached human; L350 gives it
    one for the turn only. By default ("root") its velocity is the free human's on the same
    clip and heading, bit for bit (0.75 x (0.5, 3.0) turned by -150 degrees); with
    ``attached_velocity="zero"`` it is 0. Either way it stands at its holder's offset
    (system 6 places it, not its velocity). Both engines, bit for bit."""
    runs = {e: _pair(e, rule) for e in ENGINES}
    assert runs["compiled"][1] == runs["reference"][1]
    h = math.radians(-150.0)
    lx, ly = 0.5 * 0.75, 3.0 * 0.75
    want = np.array([lx * math.cos(h) - ly * math.sin(h), lx * math.sin(h) + ly * math.cos(h), 0.0])
    for v_att, v_free, pos, hold in runs["compiled"][0]:
        np.testing.assert_allclose(v_free, want, atol=2e-3)
        if rule == "root":
            assert v_att.tobytes() == v_free.tobytes()
        else:
            assert v_att.tolist() == [0.0, 0.0, 0.0]
        s, c = math.sin(math.radians(30.0)), math.cos(math.radians(30.0))
        np.testing.assert_allclose(pos, hold + [0.4 * c - 1.0 * s, 0.4 * s + 1.0 * c, 0.0], atol=1e-12)


def test_the_attached_velocity_option_is_a_scenario_reading():
    from scuffle import parse_scenario

    sc = parse_scenario('updates = 1\n[options]\nattached_velocity = "zero"\n', "x.toml")
    assert sc.options.attached_velocity == "zero"
    with pytest.raises(ValueError, match="attached_velocity"):
        PlayerOptions(attached_velocity="frozen")


# ---------------------------------------------------------------- one dt


@pytest.mark.parametrize("engine", ENGINES)
def test_a_game_steps_by_the_dt_of_its_options(engine):
    """A Game takes its step from one place: ``PlayerOptions(dt=1/60)`` is ``ctx.dt``, the
    animation step's dt (a clip at 0.75 advances by f32(1/60) x 0.75 a step, summed toward
    zero) and the state update's (the body moves by its velocity x 1/60)."""
    dt = 1.0 / 60.0
    clip = author_clip("push", 40, velocity=[(0, (0.0, 3.0, 0.0))])
    aset = demo_set().with_clip(700, clip)
    with Game(PlayerOptions(dt=dt), engine=engine) as g:
        assert g.ctx.dt == dt == g.player.options.dt
        g.add_human("a", aset)
        g.change("a", g.player.loop(g.instance("a"), 700))
        t = 0.0
        step = F.mul(F.f32(dt), F.f32(0.75))
        for _ in range(5):
            before = g.body("a").position.copy()
            g.step()
            t = F.add(t, step)
            assert trace_records(g)[0]["tasks"][0]["time"] == f32_json(t)
            moved = g.body("a").position - before
            np.testing.assert_allclose(moved, g.body("a").velocity * dt, rtol=0, atol=1e-15)
            assert moved[1] == pytest.approx(3.0 * 0.75 * dt, abs=1e-3)


@pytest.mark.parametrize("engine", ENGINES)
def test_ctx_dt_and_the_options_dt_are_one_value(engine):
    """Setting ``ctx.dt`` sets the player's ``options.dt`` (a copy of the options with it),
    and options replaced on the player give ``ctx.dt``: never two values. A dt outside
    0-1 s is refused by either with its field named, nothing changed."""
    import dataclasses

    with Game(engine=engine) as g:
        assert g.ctx.dt == F.DT == g.player.options.dt
        g.ctx.dt = 0.05
        assert g.player.options.dt == 0.05 == g.ctx.dt
        g.player.options = dataclasses.replace(g.player.options, dt=0.02)
        assert g.ctx.dt == 0.02
        with pytest.raises(ValueError, match="ctx.dt"):
            g.ctx.dt = 2.0
        with pytest.raises(ValueError, match="PlayerOptions.dt"):
            PlayerOptions(dt=-1.0)
        assert g.ctx.dt == 0.02 == g.player.options.dt


def test_a_dt_given_by_the_options_or_by_ctx_gives_the_same_world():
    """The two ways of giving a Game its step give the same bytes (one value, one path)."""
    traces = []
    for how in ("options", "ctx"):
        with Game(PlayerOptions(dt=1.0 / 60.0) if how == "options" else None) as g:
            if how == "ctx":
                g.ctx.dt = 1.0 / 60.0
            g.add_human("a", demo_set())
            f = Fight(g)
            f.move("a", (1.0, 1.0), WALK)
            recs = []
            for _ in range(40):
                g.step()
                recs += trace_records(g)
            traces.append(recs)
    assert traces[0] == traces[1]
    assert traces[0][-1]["anim"] == Move.WALK


def test_no_attachment_constant_is_minus_one():
    assert NO_ATTACHMENT == -1                 # +0x280 "not -1" (L350)


_SCENARIO = """updates = 26
%s[sets.demo]
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
[[commands]]
update = 20
human = "a"
loop = 388
"""


@pytest.mark.parametrize("fight", ["", '[fight]\nlocomotion_stop = "mask"\n',
                                   '[fight]\nlocomotion_stop = "top_task"\n'])
def test_the_fight_table_takes_the_locomotion_stop(fight):
    """The scenario's ``[fight]`` table takes ``locomotion_stop``: a loop put over the walk at
    update 20 (holding no bit) leaves the intent's 1.63 m/s under the mask (the default: the
    held flags decide, not the task) and stops it under the top-task reading; the walk start
    holds 0x80000 (the trace's ``held``) either way. A bad value is refused naming the key."""
    import io
    import json

    from scuffle import parse_scenario, run_scenario
    from scuffle.game.runtime.scenario import ScenarioError

    out = io.StringIO()
    run_scenario(parse_scenario(_SCENARIO % fight, "walk.toml"), out)
    recs = [json.loads(line) for line in out.getvalue().splitlines()]
    # updates 2-14: ceil(9.5 / 0.75) = 13
    assert [r["held"] for r in recs if r["anim"] == Move.WALK_START] == [int(HeldFlags.START_CLIP)] * 13
    assert recs[19]["anim"] == Move.WALK and recs[19]["vel"][1] == pytest.approx(WALK, abs=1e-12)
    top = "top_task" in fight
    for r in recs[21:]:
        assert r["anim"] == Move.IDLE
        assert r["vel"][1] == pytest.approx(0.0 if top else WALK, abs=1e-12)
    with pytest.raises(ScenarioError, match="fight.locomotion_stop"):
        parse_scenario(_SCENARIO % '[fight]\nlocomotion_stop = "gait"\n', "walk.toml")


def test_the_readings_are_in_the_configuration_digest():
    """A Game with another locomotion stop or attached velocity is set up otherwise: its
    configuration digest differs (netplay peers and snapshot files compare it)."""
    digests = set()
    for stop, av in (("mask", "root"), ("top_task", "root"), ("mask", "zero")):
        with Game(PlayerOptions(attached_velocity=av)) as g:
            Fight(g, locomotion_stop=stop)
            digests.add(g.config_digest())
    assert len(digests) == 3
