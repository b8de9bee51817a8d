"""The gait blend (type 12) with the real Player on synthetic clips of different lengths.

Spec: "Gait blend" (the value easing at rate x dt x 10, the pair steps 0.995 / 1.995 /
2.995, the clip that comes in joining at the same normalised time, the leader rule,
the leader's events only, the sampling by fraction), "Task flags" (0x200: the target
is not rounded), "Playback rate" (blends at the human's speed multiplier; a cycle
lasts its clip's length whatever the speed).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.engine.plan import SamplePlan
from scuffle.anim.playback.player import Player
from scuffle.anim.maths.pose import DTYPE, blend
from scuffle.anim.reference import Reference, RefInstance
from scuffle.anim.engine.sampler import CursorFlags
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.tasks import GAIT_STEPS, GaitTask, LOCOMOTION_FLAGS, TaskType

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

IDS = (10, 11, 12, 13, 14)
FRAMES = {10: 35, 11: 28, 12: 22, 13: 18, 14: 16}
CONTINUOUS = int(LOCOMOTION_FLAGS)      # 0x2c1, has 0x200
ROUNDED = 0x1


def gait_set() -> AnimSet:
    clips = {}
    for i, gid in enumerate(IDS):
        f = FRAMES[gid]
        h = 0.2 * (i + 1)
        clips[gid] = author_clip(f"gait{gid}", f,
                                 rotations={3: [(0, (0, 0, 0, 1)), (f, (math.sin(h), 0, 0, math.cos(h)))],
                                            20: [(0, (0, math.sin(h), 0, math.cos(h))), (f, (0, 0, 0, 1))]},
                                 events=[make_event(k, 11, word=gid) for k in range(f)])
    return AnimSet.build(clips, name="gaits")


def gait(value: float, target: float | None = None, flags: int = CONTINUOUS, speed: float = 1.0, settle: int = 0):
    p = Player()
    h = CharacterInstance(gait_set(), "g", speed=speed)
    g = p.gait(h, IDS, value=value, target=value, flags=flags, on_wrap=None)
    p.insert_bottom(h, g)
    for _ in range(settle):
        p.update([h])
    if target is not None:
        g.set_target(target)
    return p, h, g


def ids_of(g: GaitTask):
    return g.lower_cursor.anim_id, g.upper_cursor.anim_id, g.leading_cursor().anim_id


def plan_clips(p: Player, h: CharacterInstance):
    """The clips the human's stack samples, in order: its tasks' sample plan (``Task.emit``,
    the plan the Player samples queued tasks with)."""
    plan = SamplePlan()
    plan.begin(h.name, h)
    for task in h.stack:
        task.emit(plan)
    plan.end()
    return [p.bank.clips[i].name for i in plan.s_clip]


def ref_gait(value: float, target: float | None = None, flags: int = CONTINUOUS, updates: int = 1):
    """``gait`` on the reference model (anim.reference), then ``updates`` updates: the
    last pose (vel, root, rot (34, 4), tag, float32 as uint32 bits) and the gait."""
    r = Reference()
    h = RefInstance(gait_set(), "g")
    g = r.gait(h, IDS, value=value, target=value, flags=flags)
    r.insert_bottom(h, g)
    if target is not None:
        g.set_target(target)
    for _ in range(updates):
        (pose,) = r.update([h])
    return [a.view(np.uint32) if a.dtype == np.float32 else a for a in pose.arrays()], g


def engine_bits(pose) -> list:
    """The first human of a PoseBatch as ``ref_gait``'s pose: (vel, root, rot, tag) bits."""
    return [pose.vel[:, 0].view(np.uint32), pose.root[:, 0].view(np.uint32),
            pose.rot[:, :, 0].T.view(np.uint32), pose.tag[:, 0]]


def same_bits(a: list, b: list) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def alone(p: Player, cursor):
    """One cursor's pose, sampled alone by the clip bank (float32, as the gait's leader)."""
    return p.bank.sample(np.array([p.bank_index(cursor.clip)]), np.array([cursor.time], DTYPE),
                         np.array([1.0], DTYPE), np.array([cursor.flags]))


# ---------------------------------------------------------------- the value

def test_value_moves_by_at_most_a_third_of_a_unit_per_update():
    p, h, g = gait(0.0, 4.0)
    assert g.type == TaskType.GAIT and g.rate == 1.0 and g.speed == 10.0
    limit = F.mul(F.mul(1.0, F.DT), 10.0)
    assert limit == pytest.approx(1 / 3, rel=1e-6)
    values, expect = [g.value], [0.0]
    for _ in range(14):
        p.update([h])
        values.append(g.value)
        expect.append(min(F.add(expect[-1], limit), 4.0))       # float32, toward zero
    assert values == expect
    steps = np.diff(values)
    assert np.all(steps <= limit + 1e-12)
    assert steps[:11] == pytest.approx([limit] * 11, rel=1e-5)
    assert values[-1] == 4.0 and values.index(4.0) in (12, 13)
    g.set_target(0.0)
    p.update([h])
    assert g.value == pytest.approx(4.0 - limit, rel=1e-6)


def test_value_moves_at_the_human_speed_multiplier():
    p, h, g = gait(0.0, 4.0, speed=0.5)
    assert g.rate == 0.5
    p.update([h])
    assert g.value == F.mul(F.mul(0.5, F.DT), 10.0)
    assert g.leading_cursor().time == F.mul(F.DT, 0.5)


def test_target_rounded_unless_0x200():
    p, h, g = gait(0.0, flags=ROUNDED)
    for t, r in [(1.4, 1.0), (1.6, 2.0), (2.5, 3.0), (0.49, 0.0), (-3.0, 0.0), (7.0, 4.0)]:
        g.set_target(t)
        assert g.target == r, t
    p, h, g = gait(0.0, flags=CONTINUOUS)
    for t, r in [(1.4, F.f32(1.4)), (2.5, 2.5), (-3.0, 0.0), (7.0, 4.0)]:
        g.set_target(t)
        assert g.target == r, t
    with pytest.raises(ValueError):
        g.set_target(float("nan"))


def test_rounded_target_stops_on_a_whole_clip():
    p, h, g = gait(0.0, 1.4, flags=ROUNDED)
    for _ in range(6):
        pose = p.update([h])
    assert g.value == 1.0 and ids_of(g) == (11, 12, 11)
    assert plan_clips(p, h) == ["gait11"]
    assert np.allclose(pose.rot, alone(p, g.lower_cursor).rot, atol=1e-6)     # the engine samples 11 alone
    ref, rg = ref_gait(0.0, 1.4, flags=ROUNDED, updates=6)
    assert rg.value == 1.0 and same_bits(engine_bits(pose), ref)


# ---------------------------------------------------------------- the pair

@pytest.mark.parametrize("v,lower", [(0.0, 0), (0.994, 0), (0.995, 1), (1.5, 1), (1.994, 1), (1.995, 2),
                                     (2.994, 2), (2.995, 3), (3.5, 3), (4.0, 3)])
def test_pair_steps(v, lower):
    """floor(v) with the steps; 2.995 is the float32 constant 2.99499988..., so the float32
    value nearest 2.995 is already in the upper pair."""
    assert GAIT_STEPS == tuple(F.f32(x) for x in (0.995, 1.995, 2.995))   # float32 constants
    assert GaitTask.pair_index(F.f32(v)) == lower
    p, h, g = gait(v)
    p.update([h])
    assert (g.lower_cursor.anim_id, g.upper_cursor.anim_id) == (IDS[lower], IDS[lower + 1])


def test_clip_that_comes_in_joins_at_the_same_normalised_time():
    """2.0 -> 1.91 (the spec's example): the pair changes downward, the new lower joins at
    the old leader's normalised time, leads (the old fraction was 0) and advances."""
    p, h, g = gait(2.0, settle=9)
    assert ids_of(g) == (12, 13, 12)
    old = g.leading_cursor()
    t_old = old.time
    g.set_target(1.91)
    p.update([h])
    assert g.value == F.f32(1.91)
    assert ids_of(g) == (11, 12, 11)                          # the new lower leads
    lead = g.leading_cursor()
    joined = F.mul(F.div(t_old, old.duration), lead.duration)
    assert lead.time == F.add(joined, F.mul(F.DT, 1.0))
    follow = g.upper_cursor
    assert follow == old                                      # clip 12 stays (its row), now the follower
    assert follow.time == F.mul(F.div(lead.time, lead.duration), follow.duration)
    assert follow.flags & CursorFlags.MUTED and not lead.flags & CursorFlags.MUTED


def test_upward_pair_change_with_a_high_old_fraction():
    """0.9 -> 1.2: the old fraction 0.9 > 0.875, so the upper clip leads, and it is the one
    that came in, joined at the old leader's normalised time."""
    p, h, g = gait(0.9, settle=7)
    old = g.leading_cursor()
    assert old.anim_id == 11                                  # steady at 0.9: the upper leads (0.9 > 0.875)
    t_old = old.time
    g.set_target(1.2)
    p.update([h])
    assert ids_of(g) == (11, 12, 12)
    lead = g.leading_cursor()
    assert lead.time == F.add(F.mul(F.div(t_old, old.duration), lead.duration), F.DT)


# ---------------------------------------------------------------- the leader

@pytest.mark.parametrize("value,target,leader,why", [
    (1.005, 1.005, 11, "fraction < 0.01: the lower"),
    (4.0, 4.0, 14, "fraction >= 0.995: the upper"),
    (1.6, 1.1, 12, "falling: v still above the target after the move"),
    (1.9, 1.95, 12, "old fraction 0.9 > 0.875"),
    (1.8, 1.85, 11, "old fraction 0.8: the lower"),
    (1.2, 1.5, 11, "rising: the lower"),
    (1.5, 1.5, 11, "steady: the lower"),
    (2.0, 1.91, 11, "2.0 -> 1.91: the new lower"),
])
def test_leader_rule(value, target, leader, why):
    p, h, g = gait(value, settle=3)
    g.set_target(target)
    p.update([h])
    assert g.leading_cursor().anim_id == leader, why
    assert h.record.anim_id == leader
    lead = g.leading_cursor()
    other = g.upper_cursor if lead == g.lower_cursor else g.lower_cursor
    assert other.time == F.mul(F.div(lead.time, lead.duration), other.duration)


def test_alone_and_blended_sampling():
    p, h, g = gait(1.005)
    pose = p.update([h])
    assert plan_clips(p, h) == ["gait11"]                     # the lower plays alone
    assert np.allclose(pose.rot, alone(p, g.lower_cursor).rot, atol=1e-6)
    assert not np.allclose(pose.rot, alone(p, g.upper_cursor).rot, atol=1e-3)
    assert same_bits(engine_bits(pose), ref_gait(1.005)[0])
    p, h, g = gait(4.0)
    pose = p.update([h])
    assert plan_clips(p, h) == ["gait14"]                     # the upper alone
    assert np.allclose(pose.rot, alone(p, g.upper_cursor).rot, atol=1e-6)
    assert same_bits(engine_bits(pose), ref_gait(4.0)[0])
    p, h, g = gait(1.4)
    pose = p.update([h])
    assert plan_clips(p, h) == ["gait11", "gait12"]
    assert same_bits(engine_bits(pose), ref_gait(1.4)[0])     # the reference's blend, bit for bit
    lo, up = g.lower_cursor, g.upper_cursor
    s = p.bank.sample(np.array([p.bank_index(lo.clip), p.bank_index(up.clip)]),
                      np.array([lo.time, up.time], DTYPE), np.array([1.0, 1.0], DTYPE), np.array([lo.flags, up.flags]))
    manual = blend(s.take(np.array([0])), s.take(np.array([1])), np.array([g.fraction()], DTYPE))
    assert g.fraction() == pytest.approx(0.4, abs=1e-6)
    assert np.allclose(pose.rot, manual.rot, atol=1e-6)


def test_only_the_leaders_events_fire():
    p, h, g = gait(1.7)
    words = set()
    for _ in range(30):
        p.update([h])
        words |= {fe.event.word for fe in h.events}
        assert all(fe.task is g for fe in h.events)
    assert words == {11}
    g.set_target(1.2)                                         # falling: the upper leads
    words = set()
    for _ in range(3):
        p.update([h])
        words |= {fe.event.word for fe in h.events}
        assert {fe.event.word for fe in h.events} <= {g.leading_cursor().anim_id}
    assert g.value == F.f32(1.2)
    assert 12 in words                                        # the upper fired while it led


# ---------------------------------------------------------------- the cycle

def _wraps(value, updates=80, speed=1.0):
    p = Player()
    h = CharacterInstance(gait_set(), "g", speed=speed)
    got = []
    g = p.gait(h, IDS, value=value, target=value, on_wrap=got.append)
    p.insert_bottom(h, g)
    when = []
    for k in range(1, updates + 1):
        n = len(got)
        p.update([h])
        if len(got) != n:
            when.append(k)
    assert all(x is h for x in got)
    return when, g


def test_cycle_length_is_the_leading_clips():
    when, g = _wraps(0.0)
    assert when[0] == 35                                      # clip 10: 35 frames at 1.0
    when, g = _wraps(3.0)
    assert when[0] == 18                                      # clip 13: 18 frames
    when, g = _wraps(1.3)
    assert g.leading_cursor().anim_id == 11 and when[0] == 28
    # one update's step is dt x rate whatever the value: the speed does not scale the rate
    for v in (0.0, 1.3, 2.6, 4.0):
        p, h, g = gait(v)
        p.update([h])
        assert g.leading_cursor().time == F.DT


def test_gait_flags_mute_the_follower_and_strip_the_velocity():
    p, h, g = gait(1.5)
    lead, follow = g.leading_cursor(), (g.upper_cursor if g.leading_cursor() == g.lower_cursor else g.lower_cursor)
    assert lead.flags == CursorFlags.NO_VELOCITY
    assert follow.flags == CursorFlags.NO_VELOCITY | CursorFlags.MUTED
    g.set_flags(0x200)
    assert lead.flags == CursorFlags.NONE


def test_gait_needs_five_ids():
    p = Player()
    h = CharacterInstance(gait_set(), "g")
    with pytest.raises(ValueError):
        GaitTask((10, 11, 12), lambda i: p.cursor(h.anim_set, i))
