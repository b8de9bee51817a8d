"""The demo move set (game/moveset.py): authored in code, encoded, loaded back.

Spec: "Data", "The reference pose" (bone 2), "Root motion" (the throws' turns, the walk
start), "Paired tasks" (the type-8 event and the range record), "The Anim Range List",
"Gait blend", "Playback rate", "When a clip ends". The set itself: docs/moveset.md.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import EventType, decode_positions, decode_rotations
from scuffle.anim.data.rangelist import RangeFlags
from scuffle.anim.data.rates import RUNTIME_SPEEDS
from scuffle.anim.data.resource import load_resource
from scuffle.anim.engine.sampler import ClipBank
from scuffle.anim.maths.skeleton import HUMANOID, REFERENCE_ROTATIONS
from scuffle.game.fighters.moves import GAIT_IDS, GRAB_STRIKES, PAIRED_MOVES, THROWS, Move
from scuffle.game.fighters.moveset import (GAIT_SPEEDS, HOLD_PLACE, MOVE_TABLE, NO_BONE2, REFERENCE_BONE2,
                          demo_resource_bytes, demo_set)
from scuffle.game.runtime.world import Game

REPO = Path(__file__).resolve().parents[2]
GRAB_CLIPS = (69, 71, 72, 73, 74, 75, 82, 83, 84, 85)
RATE_FLAGS = int(RangeFlags.RATE_800 | RangeFlags.RATE_1000 | RangeFlags.RATE_2000)


@pytest.fixture(scope="module")
def s() -> AnimSet:
    return demo_set()


@pytest.fixture(scope="module")
def bank(s):
    ids = s.ids()
    return ids, ClipBank([s.clip(i) for i in ids])


def sample(bank, anim_id, frames, rate=1.0, flags=0):
    """Pose batch and model-space positions / rotations of ``anim_id`` at ``frames``."""
    ids, b = bank
    n = len(frames)
    t = (np.asarray(frames, np.float64) / 30.0).astype(np.float32)
    pb = b.sample(np.full(n, ids.index(anim_id)), t, np.full(n, rate, np.float32), np.full(n, flags))
    pos, rot = HUMANOID.model_space(pb.rot.astype(np.float64), pb.root.astype(np.float64))
    return pb, pos, rot


def rate_of(s, anim_id) -> float:
    return RUNTIME_SPEEDS.rate_for(int(s.range(anim_id).flags))


def events(s, anim_id, etype=None):
    evs = s.clip(anim_id).decoded_events()
    return [e for e in evs if etype is None or e.type == etype]


# ---------------------------------------------------------------- loading


def test_the_kept_demo_resource_is_what_authoring_gives():
    """game/fighters/demo.res (read at start instead of solving every pose) matches the
    moves as authored now; after a change to the moves, write it again with
    scuffle.game.fighters.moveset.write_demo_resource()."""
    from scuffle.game.fighters.moveset import DEMO_RESOURCE, author_demo_resource_bytes

    assert DEMO_RESOURCE.read_bytes() == author_demo_resource_bytes(), \
        "demo.res is stale: run scuffle.game.fighters.moveset.write_demo_resource()"
    assert demo_resource_bytes() == DEMO_RESOURCE.read_bytes()


def test_set_loads_through_the_resource_loader(s):
    data = demo_resource_bytes()
    res = load_resource(data)
    again = AnimSet.from_resource(res, name="demo")
    assert again.equals(s)
    assert s.name == "demo" and demo_set() is s          # cached, shared


def test_every_move_has_a_clip_and_the_table_lists_it(s):
    missing = [m for m in Move if not s.has(m)]
    assert not missing
    rows = {r[0]: r for r in MOVE_TABLE}
    assert set(rows) == {int(m) for m in Move}
    for anim_id, name, frames, flag, bone2, turn, ev in rows.values():
        assert s.clip(anim_id).frames == frames and Move(anim_id).name == name
        assert bone2 == (2 in s.clip(anim_id).rotations)


def test_library_is_registered_explicitly():
    from scuffle.game.fighters import registry
    from scuffle.game.runtime.registry import Registry
    assert registry().libraries["demo"] is demo_set
    assert "demo" not in Registry().libraries          # nothing registers on import


def test_docs_list_every_move():
    text = (REPO / "docs" / "moveset.md").read_text(encoding="utf-8")
    for m in Move:
        assert f"| {int(m)} " in text and m.name in text


# ---------------------------------------------------------------- bone 2 and the reference pose


def test_bone2_channels(s):
    for anim_id in NO_BONE2:
        assert 2 not in s.clip(anim_id).rotations, anim_id
    assert set(NO_BONE2) >= {69, 71, 72, 73, 74, 75, 82, 83, 84, 85, 51, 52, 53, 54, 55, 56, 94, 95, 196}
    for anim_id in (11, 12, 358):
        keys = s.clip(anim_id).rotations[2]
        q = decode_rotations(keys)
        np.testing.assert_allclose(q, np.tile(REFERENCE_BONE2, (len(q), 1)), atol=1e-3)
        np.testing.assert_allclose(q[0], REFERENCE_ROTATIONS[2], atol=1e-3)


def _upright(pos, tips):
    z = pos[2]
    head = tips[2, 15]
    feet = np.maximum(z[30], z[33])
    return z, head, feet


@pytest.mark.parametrize("anim_id", GRAB_CLIPS)
def test_grab_clips_stand_upright_through_the_reference_pose(s, bank, anim_id):
    F_ = s.clip(anim_id).frames
    frames = sorted({0, F_ // 3, F_ // 2, 2 * F_ // 3, F_ - 1})
    pb, pos, rot = sample(bank, anim_id, frames)
    assert pb.tag[2 + 2].all()                          # bone 2 came from the reference pose
    z, head, feet = _upright(pos, HUMANOID.tip_positions(pos, rot))
    assert (z[1] > feet + 0.5).all() and (head > feet + 1.2).all()
    body = np.delete(z, [0, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], axis=0)
    assert (head > body.max(axis=0)).all()              # the head is the highest point
    # The same clip with bone 2 filled from anything else (the identity) is not upright.
    bad = pb.rot.astype(np.float64).copy()
    bad[:, 2] = np.array([0.0, 0.0, 0.0, 1.0])[:, None]
    pos2, _ = HUMANOID.model_space(bad, pb.root.astype(np.float64))
    assert not (pos2[2, 30] < pos2[2, 1] - 0.5).all()


@pytest.mark.parametrize("anim_id", (51, 52, 53, 54, 55, 56, 94, 95))
def test_grab_strikes_and_let_go_stand_on_their_feet(s, bank, anim_id):
    F_ = s.clip(anim_id).frames
    pb, pos, rot = sample(bank, anim_id, range(0, F_, 2))
    z, head, feet = _upright(pos, HUMANOID.tip_positions(pos, rot))
    low = np.minimum(z[30], z[33])
    assert (z[1] > feet).all() and (head > z[1] + 0.3).all() and (low < 0.15).all()


def test_grounded_lies_and_knockdown_falls(s, bank):
    pb, pos, _ = sample(bank, Move.GROUNDED, range(0, 40, 4))
    assert (pos[2, 1] < 0.3).all() and (pos[2, 6] < 0.4).all()           # pelvis and head down
    F_ = s.clip(Move.KNOCKDOWN).frames
    pb, pos, _ = sample(bank, Move.KNOCKDOWN, [0, F_ - 1])
    assert pos[2, 1, 0] > 0.9 and pos[2, 1, 1] < 0.3
    pb, pos, _ = sample(bank, Move.GET_UP, [0, s.clip(Move.GET_UP).frames - 1])
    assert pos[2, 1, 0] < 0.3 and pos[2, 1, 1] > 0.9


# ---------------------------------------------------------------- paired clips


def test_paired_attacker_clips_carry_the_partner_place(s):
    for att, vic in PAIRED_MOVES.items():
        place = events(s, att, EventType.PARTNER_PLACE)
        assert len(place) == 1 and place[0].frame == 0, att
        x, y, _ = place[0].position
        rec = s.range(att)
        dx, dy = rec.direction
        assert math.hypot(dx * rec.reach - x, dy * rec.reach - y) < 0.05, att
        assert abs(math.hypot(dx, dy) - 1.0) < 0.002
        # The victim's id has a record in the same set with the attacker's rate flag.
        assert int(s.range(vic).flags) & RATE_FLAGS == int(rec.flags) & RATE_FLAGS, (att, vic)
        assert s.clip(vic).frames == s.clip(att).frames
        assert not events(s, vic, EventType.PARTNER_PLACE)


def test_hold_82_uses_the_spec_numbers(s):
    (place,) = events(s, Move.HOLD, EventType.PARTNER_PLACE)
    assert place.position[:2] == pytest.approx(HOLD_PLACE, abs=1e-3)
    assert place.position[:2] == pytest.approx((0.380, 1.012), abs=1e-3)
    rec = s.range(Move.HOLD)
    assert rec.direction == pytest.approx((0.351, 0.936), abs=1e-6)
    assert rec.reach == pytest.approx(1.081, abs=5e-4)


def test_grab_attempt_range_and_window(s):
    rec = s.range(Move.GRAB_ATTEMPT)
    assert rec.reach == pytest.approx(1.0) and rec.far == pytest.approx(1.25)
    assert rec.direction == pytest.approx((0.0, 1.0))
    assert rate_of(s, Move.GRAB_ATTEMPT) == pytest.approx(0.8)
    assert 16 <= s.clip(Move.GRAB_ATTEMPT).frames <= 20
    (op,) = events(s, Move.GRAB_ATTEMPT, EventType.HELD_OPEN)
    (cl,) = events(s, Move.GRAB_ATTEMPT, EventType.HELD_CLOSE)
    assert 0 < op.frame < cl.frame < s.clip(Move.GRAB_ATTEMPT).frames


def end_update(clip, rate) -> tuple[int, float]:
    """The update k (first step k = 1) whose step would reach frame F, and its overshoot:
    the cursor's arithmetic in float32 rounded toward zero ("When a clip ends")."""
    r = F.f32(rate)
    step, end, limit = F.mul(F.DT, r), F.end_frame(clip.duration), F.sub(clip.duration, F.HALF_FRAME)
    t, k = 0.0, 0
    while True:
        nt = F.add(t, step)
        k += 1
        if F.frame_of(nt) >= end:
            return k, F.sub(nt, limit)
        t = nt


def test_grab_connect_lasts_16_updates_at_075(s):
    clip = s.clip(Move.GRAB_CONNECT)
    assert clip.frames == 12 and rate_of(s, Move.GRAB_CONNECT) == pytest.approx(0.75)
    assert end_update(clip, rate_of(s, Move.GRAB_CONNECT))[0] == 16


def test_grab_strikes_damage_and_hit_codes(s):
    damage = {Move.GRAB_KNEE: 6, Move.GRAB_PUNCH: 5, Move.GRAB_HEADBUTT: 9}
    raw = s.range_list.to_bytes()
    for att, vic in GRAB_STRIKES.items():
        rec = s.range(att)
        assert rec.damage == damage[att]
        off = 4 + 16 * int(att) + 0x0A                    # the record's +0x0a, in the chunk's bytes
        assert int.from_bytes(raw[off:off + 2], "little", signed=True) == damage[att]
        assert rec.hit != 10 or att == Move.GRAB_PUNCH
        assert rate_of(s, att) == pytest.approx(0.8) and rate_of(s, vic) == pytest.approx(0.8)
        opens = events(s, att, EventType.HELD_OPEN)
        closes = events(s, att, EventType.HELD_CLOSE)
        assert len(opens) == len(closes) == 1 and opens[0].frame < closes[0].frame
    assert s.range(Move.GRAB_HEADBUTT).hit_strength == 2


# ---------------------------------------------------------------- attacks


ATTACKS = {Move.JAB: 24, Move.KICK: 16, Move.CROSS: 24, Move.HOOK: 16, Move.COMBO: 21,
           Move.COMBO_HOLD: 26, Move.FINISHER: 27}


def test_attacks_frames_rates_windows_and_records(s):
    for move, frames in ATTACKS.items():
        clip = s.clip(move)
        assert clip.frames == frames and 2 in clip.rotations
        assert rate_of(s, move) == pytest.approx(0.8)
        (op,) = events(s, move, EventType.HELD_OPEN)
        (cl,) = events(s, move, EventType.HELD_CLOSE)
        (fx,) = events(s, move, EventType.NAMED_EFFECT)
        assert 0 < op.frame < cl.frame < frames and cl.frame - op.frame <= 5
        assert fx.frame == op.frame and fx.code in ("pch", "bld")
        rec = s.range(move)
        assert rec.direction == pytest.approx((0.0, 1.0))
        assert 0.9 - 1e-6 <= rec.reach <= 1.3 + 1e-6 and 5 <= rec.damage <= 14
        assert rec.hit_strength < 2 or move in (Move.KICK, Move.FINISHER)
    assert s.range(Move.KICK).hit_strength == 2 and s.range(Move.FINISHER).hit_strength == 2
    end = s.clip(Move.ATTACK_END)
    assert end.frames == 19 and rate_of(s, Move.ATTACK_END) == pytest.approx(0.75)


def test_jab_reaches_forward(s, bank):
    (op,) = events(s, Move.JAB, EventType.HELD_OPEN)
    _, pos, _ = sample(bank, Move.JAB, [0, op.frame])
    gain = max(pos[1, 19, 1] - pos[1, 19, 0], pos[1, 25, 1] - pos[1, 25, 0])
    assert gain > 0.3
    (op,) = events(s, Move.KICK, EventType.HELD_OPEN)
    _, pos, _ = sample(bank, Move.KICK, [0, op.frame])
    assert pos[1, 33, 1] - pos[1, 33, 0] > 0.5 and pos[2, 33, 1] > 0.6     # the foot goes out and up


# ---------------------------------------------------------------- locomotion


def test_idles(s):
    idle, fight = s.clip(Move.IDLE), s.clip(Move.FIGHT_IDLE)
    assert idle.frames == 60 and idle.duration == pytest.approx(2.0)
    assert rate_of(s, Move.IDLE) == pytest.approx(0.75) and rate_of(s, Move.FIGHT_IDLE) == pytest.approx(0.75)
    assert 2 in fight.rotations


def test_gait_loops(s, bank):
    for move in GAIT_IDS:
        clip = s.clip(move)
        speed, frames = GAIT_SPEEDS[move]
        assert int(s.range(move).flags) & RATE_FLAGS == 0x1000 and rate_of(s, move) == 1.0
        assert clip.frames == frames
        v = decode_positions(clip.velocity)
        assert np.allclose(v[:, 1], speed, atol=2e-3) and np.allclose(v[:, [0, 2]], 0)
        assert clip.displacement[1] == pytest.approx(speed * clip.duration, rel=1e-4)
        steps = events(s, move, EventType.SOUND)
        assert len(steps) == 2 and all(e.word in (101, 102) for e in steps)
    assert s.clip(Move.WALK).duration == pytest.approx(35 / 30)
    speeds = [GAIT_SPEEDS[m][0] for m in (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT)]
    periods = [GAIT_SPEEDS[m][1] for m in (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT)]
    assert speeds == sorted(speeds) and periods == sorted(periods, reverse=True)


def test_walk_legs_swing(bank):
    _, pos, _ = sample(bank, Move.WALK, range(35))
    assert np.ptp(pos[1, 30]) > 0.3 and np.ptp(pos[1, 33]) > 0.3
    assert np.ptp(pos[1, 19]) > 0.1                      # the arms swing too
    # Opposite phases: the left foot leads where the right trails.
    assert np.corrcoef(pos[1, 30], pos[1, 33])[0, 1] < -0.8
    assert np.corrcoef(pos[1, 30], pos[1, 19])[0, 1] < -0.5   # the left arm swings against the left leg
    _, run, _ = sample(bank, Move.SPRINT, range(18))
    assert np.ptp(run[1, 30]) > np.ptp(pos[1, 30])


def test_walk_start_and_stop_velocity(s, bank):
    clip = s.clip(Move.WALK_START)
    assert clip.frames == 10 and rate_of(s, Move.WALK_START) == pytest.approx(0.75)
    assert clip.displacement[1] == pytest.approx(0.349, abs=1e-3)
    pb, _, _ = sample(bank, Move.WALK_START, [0], rate=1.0)
    assert pb.vel[1, 0] == 0.0
    pb, _, _ = sample(bank, Move.WALK_START, [1, 3, 5, 8], rate=1.0)
    assert pb.vel[1] == pytest.approx(1.048, abs=1e-3)
    pb, _, _ = sample(bank, Move.WALK_START, [0.75, 1.5, 3.0, 6.0], rate=0.75)
    assert pb.vel[1] == pytest.approx(0.786, abs=1e-3)
    # Through the runtime: the body moves at 0.786 m/s on every update of the clip.
    g = Game()
    try:
        g.add_human("a", s)
        g.change("a", g.player.chain(g.instance("a"), [Move.WALK_START, Move.IDLE]))
        speeds = []
        for _ in range(11):
            g.step()
            speeds.append(g.body("a").velocity[1])
        assert speeds == pytest.approx([0.786] * 11, abs=1e-3)
    finally:
        g.close()
    stop = decode_positions(s.clip(Move.WALK_STOP).velocity)[:, 1]
    assert stop[-1] == 0.0 and stop.max() > 1.0 and np.all(np.diff(stop[1:]) <= 0)


# ---------------------------------------------------------------- throws


def runtime_turn(s, anim_id, updates=80) -> float:
    """The heading change of a human playing ``anim_id`` then the idle, summed per update."""
    g = Game()
    try:
        g.add_human("a", s)
        g.change("a", g.player.chain(g.instance("a"), [anim_id, Move.IDLE]))
        total, prev = 0.0, g.body("a").heading
        for _ in range(updates):
            g.step()
            h = g.body("a").heading
            total += (h - prev + 180.0) % 360.0 - 180.0
            prev = h
        assert g.instance("a").stack[0].anim_id() == Move.IDLE
        return total
    finally:
        g.close()


@pytest.mark.parametrize("anim_id, angle", [(Move.THROW_SIDE, -90.0), (Move.THROW_BACK, -180.0),
                                            (Move.THROW_HIP, 86.4), (Move.THROW_SIDE_VICTIM, -90.0),
                                            (Move.THROW_SPIN_VICTIM, -269.4)])
def test_throw_turns_at_runtime(s, anim_id, angle):
    assert int(s.range(anim_id).flags) & RATE_FLAGS == 0 and rate_of(s, anim_id) == pytest.approx(0.75)
    assert 0 in s.clip(anim_id).rotations
    assert runtime_turn(s, anim_id) == pytest.approx(angle, abs=0.5)


def test_throws_table_matches(s):
    for att, (vic, angle) in THROWS.items():
        assert dict((r[0], r[5]) for r in MOVE_TABLE)[int(att)] == pytest.approx(angle)
        assert rate_of(s, vic) == pytest.approx(0.75)


# ---------------------------------------------------------------- every clip


def test_every_clip_is_finite_at_every_frame(s, bank):
    for anim_id in s.ids():
        F_ = s.clip(anim_id).frames
        frames = np.arange(0, F_ + 0.5, 0.5)
        pb, pos, rot = sample(bank, anim_id, frames, rate=rate_of(s, anim_id))
        assert np.isfinite(pb.rot).all() and np.isfinite(pb.root).all() and np.isfinite(pb.vel).all()
        assert np.isfinite(pos).all() and np.isfinite(rot).all(), anim_id
        assert np.abs(pos).max() < 5.0, anim_id


def test_no_clip_never_ends(s, tmp_path):
    from scuffle.anim.data.lint import lint_set
    from scuffle.game.cli.commands import main
    from scuffle.game.fighters.moveset import demo_resource_bytes

    assert lint_set(s, RUNTIME_SPEEDS) == []
    res = tmp_path / "demo.res"
    res.write_bytes(demo_resource_bytes())
    assert main(["lint", str(res)]) == 0          # scuffle lint finds none
    for anim_id in s.ids():      # and directly: the end step's overshoot is never exactly 0.0
        clip = s.clip(anim_id)
        rate = rate_of(s, anim_id)
        assert end_update(clip, rate)[1] != 0.0, anim_id
        assert not (clip.frames == 2 and F.f32(rate) == F.f32(0.75))
