"""Root motion (systems/motion.py, systems/placement.py): Human_ApplyRootMotion and attachments.

Spec: "Root motion" (the velocity turned by the heading, capped at 50 m/s, added to the
state's; the turn 2 acos(w) signed by z, x 30 x dt; an attached human takes the
pose's quaternion as it is), "Playback rate", "When a clip ends". Conventions (pinned, the
public contract): metres, z up, heading degrees counter-clockwise from above, 0 facing +y, the
human's frame x right, y forward.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from scuffle.anim.playback.player import PlayerOptions
from scuffle.anim.data.rates import CfgAnimSpeeds
from scuffle.components import NO_ATTACHMENT

from gamehelp import IDLE, clip, make_set, still, turn_quat

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

DT = 1.0 / 30.0


def _play(new_game, c, flag=0, updates=60, heading=0.0, task_flags=0, options=None, state_velocity=None):
    """One human plays [1, IDLE] (clip 1 with range flags ``flag``); returns the game and the
    body's (position, heading, velocity) after each update."""
    g = new_game(options)
    g.add_human("a", make_set({1: c, IDLE: still()}, {1: flag}), heading=heading)
    g.change("a", g.player.chain(g.instance("a"), [1, IDLE], flags=task_flags))
    body = g.body("a")
    if state_velocity is not None:
        body.state_velocity = np.array(state_velocity, dtype=np.float64)
    pos, head, vel = [], [], []
    for _ in range(updates):
        g.step()
        pos.append(body.position.copy())
        head.append(body.heading)
        vel.append(body.velocity.copy())
    return g, np.array(pos), np.array(head), np.array(vel)


# ---------------------------------------------------------------- the turn

@pytest.mark.parametrize("flag, rate", [(0, 0.75), (0x1000, 1.0)])
def test_a_clip_of_3_degrees_a_frame_for_30_frames_turns_about_90(new_game, flag, rate):
    c = clip(30, rotations={0: [(0, turn_quat(3.0))]})
    _, _, head, _ = _play(new_game, c, flag)
    steps = np.diff(np.concatenate([[0.0], head]))
    turning = steps[steps != 0]
    # Each update turns by the key's angle x the rate, while the clip plays.
    np.testing.assert_allclose(turning, 3.0 * rate, atol=0.01)
    total = head[-1]
    assert abs(total - 90.0) < 3.0
    assert abs(total - 120.0) > 25.0                  # not the unscaled 4/3 turn


def test_the_total_turn_does_not_depend_on_the_rate(new_game):
    c = clip(30, rotations={0: [(0, turn_quat(3.0))]})
    totals = [_play(new_game, c, flag)[2][-1] for flag in (0, 0x800, 0x1000)]
    assert max(totals) - min(totals) < 3.0


def test_the_sign_of_the_turn_follows_the_quaternions_z(new_game):
    left = _play(new_game, clip(30, rotations={0: [(0, turn_quat(3.0))]}), 0x1000, updates=5)[2]
    right = _play(new_game, clip(30, rotations={0: [(0, turn_quat(-3.0))]}), 0x1000, updates=5)[2]
    assert np.all(np.diff(left) > 0) and left[-1] > 0          # counter-clockwise
    assert np.all(np.diff(right) < 0) and right[-1] < 0        # z < 0: clockwise
    np.testing.assert_allclose(right, -left)


# ---------------------------------------------------------------- the velocity

@pytest.mark.parametrize("frames", [10, 30])
def test_walk_start_moves_at_the_key_times_the_rate(new_game, frames):
    c = clip(frames, velocity=[(0, (0.0, 1.048, 0.0))])
    _, pos, _, vel = _play(new_game, c, 0)
    speed = np.diff(np.concatenate([[[0, 0, 0]], pos]), axis=0)[:, 1] / DT
    moving = speed[speed > 0]
    np.testing.assert_allclose(moving, 0.786, atol=1e-3)       # 1.048 x 0.75
    np.testing.assert_allclose(vel[0], [0.0, moving[0], 0.0])
    # It moves on every update the clip is sampled: ceil((F - 0.5) / 0.75) - 1 of them
    # (the end update samples the next task).
    assert len(moving) == math.ceil((frames - 0.5) / 0.75) - 1


@pytest.mark.parametrize("flag", [0, 0x800, 0x1000])
def test_over_the_whole_clip_the_distance_is_the_displacement(new_game, flag):
    c = clip(30, velocity=[(0, (0.0, 1.048, 0.0))])
    _, pos, _, _ = _play(new_game, c, flag)
    assert c.displacement[1] == pytest.approx(1.048, abs=1e-3)
    assert pos[-1][1] == pytest.approx(c.displacement[1], rel=0.05)
    assert pos[-1][0] == 0.0


@pytest.mark.parametrize("heading, key, direction", [
    (0.0, (0.0, 1.0, 0.0), (0.0, 1.0)),       # forward at heading 0: +y
    (90.0, (0.0, 1.0, 0.0), (-1.0, 0.0)),     # forward at heading 90: -x
    (0.0, (1.0, 0.0, 0.0), (1.0, 0.0)),       # right at heading 0: +x
    (90.0, (1.0, 0.0, 0.0), (0.0, 1.0)),      # right at heading 90: +y
    (-45.0, (0.0, 1.0, 0.0), (math.sqrt(0.5), math.sqrt(0.5))),
])
def test_the_velocity_is_turned_into_world_axes_by_the_heading(new_game, heading, key, direction):
    _, pos, head, vel = _play(new_game, clip(30, velocity=[(0, key)]), 0x1000, updates=3, heading=heading)
    assert head[-1] == heading
    v = vel[0] / np.linalg.norm(vel[0])
    np.testing.assert_allclose(v[:2], direction, atol=1e-6)
    np.testing.assert_allclose(pos[-1], vel[0] * 3 * DT, atol=1e-9)


def test_the_root_velocity_is_capped_at_50_before_the_state_velocity_is_added(new_game):
    fast = clip(30, velocity=[(0, (30.0, 30.0, 0.0))])
    # At 1.0, 42.4 m/s: under the cap.
    _, _, _, vel = _play(new_game, fast, 0x1000, updates=2)
    assert np.linalg.norm(vel[0]) == pytest.approx(30.0 * math.sqrt(2), rel=1e-3)
    # At a rate of 2.0 (CfgAnimSpeeds f1000 = 2), 84.9 m/s: capped to 50, direction kept.
    opts = PlayerOptions(speeds=CfgAnimSpeeds(0.75, 0.8, 2.0, 0.9))
    _, _, _, vel = _play(new_game, fast, 0x1000, updates=2, options=opts, heading=90.0)
    assert np.linalg.norm(vel[0]) == pytest.approx(50.0, rel=1e-9)
    np.testing.assert_allclose(vel[0][:2] / 50.0, [-math.sqrt(0.5), math.sqrt(0.5)], atol=1e-4)
    # The state's own velocity is added after the cap.
    _, _, _, vel = _play(new_game, fast, 0x1000, updates=2, options=opts, state_velocity=(0.0, 0.0, 3.0))
    assert vel[0][2] == 3.0
    assert np.linalg.norm(vel[0][:2]) == pytest.approx(50.0, rel=1e-9)


def test_the_state_velocity_is_added(new_game):
    c = clip(30, velocity=[(0, (0.0, 1.0, 0.0))])
    _, pos, _, vel = _play(new_game, c, 0x1000, updates=4, state_velocity=(0.5, 0.0, 0.0))
    np.testing.assert_allclose(vel[1], [0.5, 1.0, 0.0], atol=1e-3)
    np.testing.assert_allclose(pos[-1], 4 * DT * vel[1], atol=1e-9)


@pytest.mark.parametrize("task_flags, moves, turns", [(0, True, True), (0x1, False, True),
                                                      (0x2, True, False), (0x3, False, False)])
def test_task_flags_switch_the_velocity_and_the_turn_off(new_game, task_flags, moves, turns):
    c = clip(30, velocity=[(0, (0.0, 1.0, 0.0))], rotations={0: [(0, turn_quat(3.0))]})
    _, pos, head, _ = _play(new_game, c, 0x1000, updates=5, task_flags=task_flags)
    assert (np.linalg.norm(pos[-1]) > 0.1) == moves
    assert (head[-1] > 10.0) == turns
    if not turns:
        assert head[-1] == 0.0


# ---------------------------------------------------------------- attachment

@pytest.mark.parametrize("attached_velocity", ["root", "zero"])
def test_an_attached_human_follows_its_holder_and_takes_its_own_turn(new_game, attached_velocity):
    """L350: an attached human "instead takes the pose's quaternion once per update as it
    is" (onto its held heading); its velocity is the rule's sum as any human's (L349, the
    default) or 0 (``attached_velocity="zero"``); either way system 6 places it."""
    g = new_game(PlayerOptions(attached_velocity=attached_velocity))
    holder_clip = clip(60, velocity=[(0, (0.0, 1.0, 0.0))], rotations={0: [(0, turn_quat(2.0))]})
    held_clip = clip(60, velocity=[(0, (0.0, 3.0, 0.0))], rotations={0: [(0, turn_quat(-3.0))]})
    s = make_set({1: holder_clip, 2: held_clip}, {1: 0x1000, 2: 0})
    a = g.add_human("a", s, position=(1.0, 2.0, 0.0), heading=10.0)
    g.add_human("b", s, position=(50.0, 50.0, 0.0))
    g.change("a", g.player.loop(g.instance("a"), 1))
    g.change("b", g.player.loop(g.instance("b"), 2))
    ab, bb = g.body("a"), g.body("b")
    bb.attachment = a
    bb.attach_offset = np.array([0.4, 1.0, 0.0])
    bb.attach_heading = 180.0
    for n in range(1, 11):
        before = bb.heading
        g.step()
        # Its root velocity (3 m/s x 0.75) turned by its heading, or none; its turn (the
        # pose's, already x 0.75) goes onto the held heading, once per update.
        if attached_velocity == "zero":
            np.testing.assert_array_equal(bb.velocity, [0.0, 0.0, 0.0])
        else:
            h = math.radians(before)
            np.testing.assert_allclose(bb.velocity, [-2.25 * math.sin(h), 2.25 * math.cos(h), 0.0], atol=1e-3)
        assert bb.attach_heading == pytest.approx(180.0 - 3.0 * 0.75 * n, abs=0.01)
        # Placed at the holder's offset, turned with the holder.
        h = math.radians(ab.heading)
        expect = ab.position + np.array([0.4 * math.cos(h) - 1.0 * math.sin(h),
                                         0.4 * math.sin(h) + 1.0 * math.cos(h), 0.0])
        np.testing.assert_allclose(bb.position, expect, atol=1e-12)
        assert math.remainder(bb.heading - (ab.heading + bb.attach_heading), 360.0) == pytest.approx(0, abs=1e-9)
    # The holder itself moved and turned by its root motion.
    assert ab.heading == pytest.approx(10.0 + 2.0 * 10, abs=0.05)
    assert np.linalg.norm(ab.position - [1.0, 2.0, 0.0]) == pytest.approx(10 * DT, rel=1e-2)


def test_letting_go_gives_the_body_its_root_motion_back(new_game):
    g = new_game()
    s = make_set({1: clip(60, velocity=[(0, (0.0, 3.0, 0.0))])}, {1: 0x1000})
    a = g.add_human("a", s)
    g.add_human("b", s, position=(5.0, 0.0, 0.0))
    g.change("b", g.player.loop(g.instance("b"), 1))
    bb = g.body("b")
    bb.attachment = a
    bb.attach_offset = np.array([0.0, 1.0, 0.0])
    g.step()
    np.testing.assert_allclose(bb.position, [0.0, 1.0, 0.0])
    bb.attachment = NO_ATTACHMENT
    g.step()
    np.testing.assert_allclose(bb.position, [0.0, 1.0 + 3.0 * DT, 0.0], atol=1e-3)
