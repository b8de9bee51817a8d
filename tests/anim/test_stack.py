"""The task pool, the stack and the queue, leaks, the pose stack, and the engine's poses
against the reference model's (anim.reference), bit for bit.

Spec: "Animation tasks" (the free list of 360), "The task stack" (18 tasks, a queue of
10 run once, the top task, the anim id refresh, the pose stack of seven), "When a
clip ends" (the release on a cut-off), "Fades" (the clean-up).
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.engine.callbacks import Callback, CallbackError
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.engine.plan import SamplePlan
from scuffle.anim.playback.player import Player, PlayerOptions, UnknownClip
from scuffle.anim.maths.pose import POSE_STACK_SIZE
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.reference import Reference, RefInstance, engine_state, reference_state
from scuffle.anim.base.limits import RangeError
from scuffle.anim.engine.stack import (POOL_SIZE, QUEUE_SIZE, STACK_SIZE, CharacterInstance, HumanRecord, QueueFull,
                                StackFull, TaskPool, TaskPoolExhausted)
from scuffle.anim.engine.store import StaleHandle
from scuffle.anim.playback.tasks import TaskType

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

A, B, IDLE = 19, 20, 388
GAIT = (404, 405, 406, 407, 407)


def clip(name, frames, angle, events=(), velocity=None):
    h = angle / 2
    return author_clip(name, frames,
                       rotations={2: [(0, (0, 0, 0, 1)), (frames, (0, math.sin(h), 0, math.cos(h)))],
                                  7: [(0, (math.sin(h), 0, 0, math.cos(h))), (frames // 2, (0, 0, 0, 1))],
                                  0: [(0, (0, 0, 0, 1)), (frames // 3 + 1, (0, 0, math.sin(h / 9), math.cos(h / 9)))]},
                       translation=[(0, (0, 0, 0.05)), (frames, (0.1, 0.0, -0.05))],
                       velocity=velocity, events=list(events))


def world_set() -> AnimSet:
    clips = {A: clip("A", 21, 0.9, [make_event(3, 0x2C), make_event(9, 0x2D)]),
             B: clip("B", 12, -0.7, [make_event(2, 11, word=5)], velocity=[(0, (0, 0, 0)), (6, (0, 1.0, 0))]),
             IDLE: clip("idle", 60, 0.2, [make_event(0, 11, word=1)])}
    for i, gid in enumerate(sorted(set(GAIT))):
        clips[gid] = clip(f"gait{i}", 30 + 7 * i, 0.3 * (i + 1), [make_event(5, 11, word=gid)])
    for d in range(8):
        clips[100 + d] = clip(f"dir{d}", 25 + d, 0.1 * d)
    for k in range(4):
        clips[200 + k] = clip(f"pick{k}", 20 + k, -0.2 * k)
    return AnimSet.build(clips, {A: author_range(flags=0x800), B: author_range(flags=0x2000),
                                 **{g: author_range(flags=0x1000) for g in GAIT}}, name="world")


# ---------------------------------------------------------------- the pool

def test_pool_of_360():
    assert POOL_SIZE == 360 and STACK_SIZE == 18 and QUEUE_SIZE == 10
    p = Player()
    assert p.pool.capacity == 360
    h = CharacterInstance(world_set(), "h")
    tasks = [p.loop(h, IDLE) for _ in range(360)]
    assert p.pool.in_use == 360 and p.pool.free == 0
    with pytest.raises(TaskPoolExhausted):
        p.loop(h, IDLE)
    with pytest.raises(TaskPoolExhausted):
        p.fade(h, 0.1)
    assert p.pool.in_use == 360 and h.stack == []
    p.pool.give_back(tasks[0])
    with pytest.raises(ValueError):
        p.pool.give_back(tasks[0])                           # a double release
    assert p.pool.in_use == 359


def test_exhausted_change_leaves_the_stack_unchanged():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    first = p.loop(h, IDLE)
    p.insert_bottom(h, first)
    spare = [p.loop(h, IDLE) for _ in range(358)]
    assert p.pool.free == 1
    new = p.chain(h, [A])                                    # the last task: no room for the fade
    flags, anim_id = h.record.flags, h.record.anim_id
    with pytest.raises(TaskPoolExhausted):
        p.change(h, new, 0.2)
    assert h.stack == [first] and h.record.flags == flags and h.record.anim_id == anim_id
    assert p.pool.in_use == 359 and not p.pool.holds(new)    # the new task was given back


def test_exhausted_chain_takes_nothing():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    first = p.loop(h, IDLE)
    p.insert_bottom(h, first)
    spare = [p.loop(h, IDLE) for _ in range(357)]
    assert p.pool.free == 2
    with pytest.raises(TaskPoolExhausted):
        p.chain(h, [A, B, IDLE])
    assert p.pool.in_use == 358 and h.stack == [first]
    head = p.chain(h, [A, IDLE])                             # two fit
    assert p.pool.free == 0
    with pytest.raises(TaskPoolExhausted):
        p.change(h, head)
    assert h.stack == [first] and p.pool.free == 2


def test_unknown_clip_takes_nothing():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    with pytest.raises(UnknownClip):
        p.chain(h, [A, 77, IDLE])
    with pytest.raises(UnknownClip):
        p.gait(h, (404, 405, 406, 407, 9))
    assert p.pool.in_use == 0


def test_pool_capacity_option():
    p = Player(PlayerOptions(pool_size=3))
    h = CharacterInstance(world_set(), "h")
    p.change(h, p.chain(h, [A, IDLE]))
    assert p.pool.free == 0
    with pytest.raises(ValueError):
        TaskPool(0)


# ---------------------------------------------------------------- the stack and the queue

def test_stack_of_18():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    for _ in range(18):
        p.push(h, p.loop(h, IDLE))
    before = list(h.stack)
    extra = p.loop(h, A)
    with pytest.raises(StackFull):
        p.push(h, extra)
    with pytest.raises(StackFull):
        p.insert_bottom(h, extra)
    assert h.stack == before
    with pytest.raises(StackFull):
        p.change(h, extra, 0.1)
    assert h.stack == before and not p.pool.holds(extra)
    assert p.pool.in_use == 18


def test_change_needs_room_for_two():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    for _ in range(17):
        p.push(h, p.loop(h, IDLE))
    before = list(h.stack)
    with pytest.raises(StackFull):
        p.change(h, p.loop(h, A))
    assert h.stack == before and p.pool.in_use == 17


def test_queue_of_10_runs_once_and_empties():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    for _ in range(QUEUE_SIZE):
        p.enqueue(h, p.loop(h, IDLE))
    with pytest.raises(QueueFull):
        p.enqueue(h, p.loop(h, IDLE))
    assert len(h.queue) == 10
    p.cut(h)                                                 # the queue's tasks are given back
    p.flush()
    assert h.queue == [] and p.pool.in_use == 1              # only the refused one is still out
    q = p.loop(h, A)
    p.enqueue(h, q)
    p.update([h])
    assert h.queue == [] and h.stack == [q] and h.record.anim_id == A
    times = [q.cursor.time]
    for _ in range(3):
        p.update([h])
        times.append(q.cursor.time)
        assert h.stack == [q]                                # not started again (no new fade)
    assert all(b > a for a, b in zip(times, times[1:]))
    assert p.pool.in_use == 1            # q: the refused one, never placed, went back as the update began


def test_top_is_the_bottom_when_the_top_is_a_fade():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    assert Player.top(h) is None
    p.refresh_anim_id(h)
    assert h.record.anim_id == -1
    old = p.loop(h, IDLE)
    p.insert_bottom(h, old)
    assert Player.top(h) is old and h.record.anim_id == IDLE
    new = p.loop(h, A)
    fade = p.change(h, new, 0.5)
    assert h.stack == [new, old, fade] and fade.type == TaskType.FADE
    assert Player.top(h) is new and h.record.anim_id == A
    extra = p.loop(h, B)
    p.push(h, extra)                                         # a non-fade on top is the top
    assert Player.top(h) is extra and h.record.anim_id == B


def test_anim_id_refresh_after_each_step():
    """0x00105570 refreshes the id after every step: a gait's new leader shows without a release."""
    p = Player()
    h = CharacterInstance(world_set(), "h")
    g = p.gait(h, GAIT, target=0.0)
    p.insert_bottom(h, g)
    assert h.record.anim_id == 404
    g.set_target(2.0)
    seen = []
    for _ in range(8):
        p.update([h])
        assert h.record.anim_id == g.anim_id()
        seen.append(h.record.anim_id)
    assert seen == [404, 404, 405, 405, 405, 406, 406, 406]    # v = 1/3, 2/3, 1, ... 2
    assert h.released == []                                  # no release refreshed it


def test_cut_runs_the_end_callback_and_gives_back_the_next_task():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    ends, next_ends = [], []
    nxt = p.loop(h, IDLE, on_end=next_ends.append)
    head = p.clip(h, A, nxt, held=0x1 | 0x2, on_end=ends.append)
    p.change(h, head)
    for _ in range(5):
        p.update([h])
    assert h.record.flags == 0x2
    p.cut(h)
    assert ends == []                                        # deferred to the flush
    p.flush()
    assert ends == [h] and next_ends == []                   # the next task: given back, not released
    assert h.record.flags == 0 and h.record.anim_id == -1 and h.released == [A]
    assert p.pool.in_use == 0


def test_deferred_tasks_count_until_the_flush():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    p.change(h, p.chain(h, [A, B, IDLE]), 0.0)
    p.step([h])
    assert p.pool.in_use == p.tasks_out([h]) == 4            # the fade is deferred, not yet given back
    p.flush()
    assert p.pool.in_use == p.tasks_out([h]) == 3


# ---------------------------------------------------------------- leaks and the plan

def _random_change(p: Player, h: CharacterInstance, rng: random.Random) -> None:
    kind = rng.randrange(9)
    fade = rng.choice([0.0, 0.0, 0.1, 0.25, 0.5])
    ids = [A, B, IDLE]
    if kind == 0:
        task = p.chain(h, [rng.choice(ids) for _ in range(rng.randrange(1, 4))] + [IDLE],
                       blend=rng.choice([0.0, 0.1, 0.3]), held=rng.choice([0, 0x1, 0x3]),
                       on_end=lambda inst: None)
    elif kind == 1:
        task = p.gait(h, GAIT, target=rng.uniform(0, 4), value=rng.uniform(0, 4),
                      flags=rng.choice([0x2C1, 0x1]))
    elif kind == 2:
        task = p.mix(h, A, B, weight=rng.random())
    elif kind == 3:
        task = p.direction(h, 100, direction=rng.uniform(0, 8))
    elif kind == 4:
        task = p.pick(h, [200, 201, 202, 203], 0.75, value=rng.uniform(0, 3))
    elif kind == 5:
        task = p.hold(h, rng.choice(ids))
    elif kind == 6:
        task = p.loop(h, rng.choice(ids), flags=rng.choice([0, 0x10, 0x3]))
    elif kind == 7:
        p.enqueue(h, p.loop(h, rng.choice(ids)))
        return
    else:
        p.cut(h)
        return
    p.change(h, task, fade)


def _scenario(seed: int, updates: int, humans: int = 3):
    rng = random.Random(seed)
    s = world_set()
    p = Player()
    hs = [CharacterInstance(s, f"h{i}") for i in range(humans)]
    for h in hs:
        p.change(h, p.loop(h, IDLE))
    for u in range(updates):
        for h in hs:
            if rng.random() < 0.15:
                try:
                    _random_change(p, h, rng)
                except (StackFull, TaskPoolExhausted):
                    pass
            g = next((t for t in h.stack if t.type == TaskType.GAIT), None)
            if g is not None and rng.random() < 0.2:
                g.set_target(rng.uniform(0, 4))
        p.step(hs)
        p.sample(hs)
        p.flush()
        assert p.pool.in_use == p.tasks_out(hs), (seed, u)
        for h in hs:
            assert len(h.stack) <= STACK_SIZE
            assert h.record.anim_id == (Player.top(h).anim_id() if h.stack else -1)
    return p, hs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_leaks_in_long_random_scenarios(seed):
    p, hs = _scenario(seed, 400)
    assert p.pool.in_use > 0
    for h in hs:
        p.cut(h)
    p.flush()
    assert p.pool.in_use == 0
    assert all(h.stack == [] and h.queue == [] and h.record.flags == 0 for h in hs)


def _same_poses(pose, refs) -> None:
    """The engine's PoseBatch equals the reference model's poses (a list of RefPose), bit for
    bit: velocity, root, the 34 rotations and the tags of every human."""
    assert pose.is_finite() and len(pose) == len(refs)
    for i, ref in enumerate(refs):
        vel, root, rot, tag = ref.arrays()
        assert np.array_equal(pose.vel[:, i].view(np.uint32), vel.view(np.uint32)), i
        assert np.array_equal(pose.root[:, i].view(np.uint32), root.view(np.uint32)), i
        assert np.array_equal(pose.rot[:, :, i].T.view(np.uint32), rot.view(np.uint32)), i
        assert np.array_equal(pose.tag[:, i], tag), i


def _outcome(fn) -> str:
    try:
        fn()
    except (StackFull, TaskPoolExhausted) as exc:
        return type(exc).__name__
    return "ok"


@pytest.mark.parametrize("seed", [pytest.param(11, marks=[pytest.mark.slow, pytest.mark.bits]), 12])
def test_the_engine_samples_the_reference_models_poses(seed):
    """``_scenario``'s random changes (chains with blend windows, gaits and their targets,
    mixes, directions, picks, holds, loops, queued tasks, cuts, fades) given to the engine
    and to the reference model alike (one generator each, from the same seed: while the
    worlds agree they draw the same numbers): after every update the poses are equal bit
    for bit, and so are the worlds' dumps (stacks, cursors, records, events, pool).
    Spec: "The task stack" (sampled bottom-up, L257), "Fades", "Gait blend"."""
    s = world_set()
    worlds = [(Player(), [CharacterInstance(s, f"h{i}") for i in range(4)], random.Random(seed)),
              (Reference(), [RefInstance(s, f"h{i}") for i in range(4)], random.Random(seed))]
    for w, hs, _ in worlds:
        for h in hs:
            w.change(h, w.loop(h, IDLE))
    depths = []
    for u in range(150):
        outcomes = []
        for w, hs, rng in worlds:
            did = []
            for h in hs:
                if rng.random() < 0.15:
                    did.append(_outcome(lambda: _random_change(w, h, rng)))
                g = next((t for t in h.stack if t.type == TaskType.GAIT), None)
                if g is not None and rng.random() < 0.2:
                    g.set_target(rng.uniform(0, 4))
            outcomes.append(did)
            w.step(hs)
        assert outcomes[0] == outcomes[1], u
        (p, hs, _), (r, rhs, _) = worlds
        _same_poses(p.sample(hs), r.sample(rhs))
        assert [h.poses_refused for h in hs] == [h.poses_refused for h in rhs], u
        p.flush()
        r.flush()
        assert engine_state(p, hs) == reference_state(r, rhs), u
        assert p.pool.in_use == p.tasks_out(hs), u
        depths.append(max(len(h.stack) for h in hs))
    assert max(depths) >= 3                                  # fades and blends were on the stacks


def test_an_empty_stack_samples_the_default_pose():
    """No task: the pose is the default pose, every value tagged (L102), the reference
    model's bit for bit."""
    p = Player()
    h = CharacterInstance(world_set(), "h")
    p.register(h.anim_set)
    pose = p.sample([h])
    assert pose.tag.all()
    _same_poses(pose, Reference().sample([RefInstance(h.anim_set, "h")]))


# ---------------------------------------------------------------- the pose stack

def test_an_eighth_pose_is_refused_and_counted():
    """"The task stack" (L257): 0x00104ce0 refuses an eighth pose; the sample goes on
    (the reference model refuses the same two and gives the same pose)."""
    assert POSE_STACK_SIZE == 7
    r, rh = Reference(), RefInstance(world_set(), "h")
    for _ in range(9):
        r.push(rh, r.loop(rh, IDLE))
    refs = r.sample([rh])
    assert rh.poses_refused == 2
    p = Player(PlayerOptions())
    h = CharacterInstance(world_set(), "h")
    for _ in range(7):
        p.push(h, p.loop(h, IDLE))
    assert len(p.sample([h])) == 1 and h.poses_refused == 0
    p.push(h, p.loop(h, IDLE))
    p.push(h, p.loop(h, IDLE))
    poses = p.sample([h])
    assert len(poses) == 1 and poses.is_finite()
    assert h.poses_refused == 2 and p.stats.poses_refused == 2
    _same_poses(poses, refs)
    p.sample([h])
    assert h.poses_refused == 2 and p.stats.poses_refused == 4 and p.stats.samples == 3
    plan = SamplePlan()
    plan.begin("x")
    for i in range(7):
        plan.sample(0, 0.0, 1.0, 0)
    assert plan.depth == 7
    assert plan.sample(0, 0.0, 1.0, 0) is None and plan.depth == 7


def test_change_refused_when_the_early_finish_frees_too_little():
    """18 tasks whose newest fade sits right on its new task: finishing it frees one slot,
    not the two a change needs; the change is refused before anything moves."""
    p = Player()
    h = CharacterInstance(world_set(), "h")
    for _ in range(17):
        p.push(h, p.loop(h, IDLE))
    f = p.fade(h, 1.0)
    f.incoming = h.stack[-1]
    p.push(h, f)
    before = list(h.stack)
    new = p.loop(h, A)
    with pytest.raises(StackFull):
        p.change(h, new, 0.1)
    assert h.stack == before and not f.released and not p.pool.holds(new)
    p.cut(h)
    p.flush()
    assert p.pool.in_use == 0


def test_change_that_fits_after_the_early_finish():
    p = Player()
    h = CharacterInstance(world_set(), "h")
    for _ in range(16):
        p.push(h, p.loop(h, IDLE))
    f = p.fade(h, 1.0)
    f.incoming = h.stack[0]                                  # finishing it frees 16 slots
    p.push(h, f)
    new = p.loop(h, A)
    g = p.change(h, new, 0.1)
    assert f.released and h.stack[0] is new and h.stack[-1] is g and len(h.stack) == 3


# ---------------------------------------------------------------- the look-ups' cache

def test_cached_lookups_keep_the_checks_and_the_errors():
    """The player caches what it found per set and id (a set is immutable): an id of
    another type that equals a cached one (19.0, True) is still refused as before, a
    numpy integer still finds the clip, and another set with the same id its own clip."""
    from scuffle.anim.data.rangelist import UnknownAnimId
    p = Player()
    s = world_set()
    h = CharacterInstance(s, "h")
    first = p.find(s, A)
    assert p.find(s, A) is first and p.find(s, np.int64(A)) is first
    assert p.rate_of(s, A) == p.options.speeds.f800
    with pytest.raises(UnknownAnimId):
        p.find(s, float(A))
    with pytest.raises(UnknownAnimId):
        p.clip(h, float(A), rate=1.0)
    with pytest.raises(UnknownAnimId):
        p.gait(h, (GAIT[0], GAIT[1], float(GAIT[2]), GAIT[3], GAIT[4]))
    one = s.with_clip(1, s.clip(A))
    assert p.find(one, 1) is first
    with pytest.raises(UnknownAnimId):
        p.find(one, True)
    with pytest.raises(UnknownClip):
        p.clip(h, 1)
    other = s.with_clip(A, s.clip(B), author_range())
    assert p.find(other, A) is s.clip(B) and p.find(s, A) is first
    assert p.rate_of(other, A) == p.options.speeds.default and p.rate_of(s, A) == p.options.speeds.f800
    assert p.pool.in_use == 0


def test_finding_an_id_adds_no_clip_to_the_bank():
    """Only a cursor puts a clip in the bank (in first-use order), cached or not."""
    p = Player()
    s = world_set()
    h = CharacterInstance(s, "h")
    p.find(s, B)
    p.rate_of(s, B)
    assert len(p.bank) == 0
    p.discard(p.loop(h, A))
    p.discard(p.loop(h, B))
    assert [p.bank_index(s.clip(i)) for i in (A, B)] == [0, 1] and len(p.bank) == 2


@pytest.mark.parametrize("above", [6, 16, 100])
@pytest.mark.parametrize("size", [15, 16, 17])
def test_change_room_with_and_without_the_early_finish(above, size):
    """A stack of loops (no fade to finish): a change fits iff the new task and the fade
    fit, whatever the early finish threshold (the dry run and its shortcut agree)."""
    p = Player(PlayerOptions(early_finish_above=above))
    h = CharacterInstance(world_set(), "h")
    for _ in range(size):
        p.push(h, p.loop(h, IDLE))
    new = p.loop(h, A)
    if size + 2 <= STACK_SIZE:
        f = p.change(h, new, 0.2)
        assert h.stack[0] is new and h.stack[-1] is f and h.record.anim_id == A
    else:
        with pytest.raises(StackFull):
            p.change(h, new, 0.2)
        assert len(h.stack) == size and not p.pool.holds(new)


# ---------------------------------------------------------------- the human's row: record and instance as handles


def test_a_standalone_record_waits_on_a_few_plain_values():
    """A record no world holds yet keeps its row in a PrivateRow (not a one-row human
    table: a crowd's records wait for their rows as a few hundred bytes each); the row
    reads and writes as a table's row 0, refuses a second free and a take while in use,
    and once given back every read through the record raises StaleHandle."""
    import tracemalloc

    from scuffle.anim.engine.stack import PrivateRow

    rec = HumanRecord(flags=0x11, anim_id=3)
    row = rec.table
    assert type(row) is PrivateRow and row.world is None and row.capacity == 1 and rec.row == 0
    assert (row.flags.item(0), row.anim[0], row.speed.item(0), row.report(0)) == (0x11, 3, 1.0, None)
    h = CharacterInstance(world_set(), "a", rec, speed=0.25)
    h.on_report = Callback("report", (2,))
    assert (h.speed, h.on_report, row.in_use) == (0.25, Callback("report", (2,)), 1)
    with pytest.raises(ValueError, match="in use"):
        row.alloc()
    rec.release()
    assert not rec.alive() and row.in_use == 0 and row.report(0) is None
    with pytest.raises(StaleHandle):
        rec.flags
    with pytest.raises(StaleHandle):
        h.speed
    with pytest.raises(ValueError, match="freed twice"):
        row.free(0)
    assert row.alloc() == 0 and (row.flags[0], row.anim[0], row.speed[0]) == (0, -1, 1.0) and row.gen[0] == 1
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        records = [HumanRecord() for _ in range(1000)]
        each = (tracemalloc.get_traced_memory()[0] - before) / len(records)
    finally:
        tracemalloc.stop()
    assert each < 1000, f"{each:.0f} bytes a standalone record"


def test_a_standalone_record_and_instance_move_into_the_world():
    """A record and an instance made before any world keep their numbers on a private row;
    the engine's first sight moves flags, anim id, speed and report callback into the
    world's human table (the one copy), and the private row goes back."""
    s = world_set()
    rec = HumanRecord(flags=0x5, anim_id=7)
    h = CharacterInstance(s, "a", rec, speed=0.7)
    h.on_report = Callback("report", (1,))
    private = rec.table
    assert private.capacity == 1 and rec.alive()
    assert (rec.flags, rec.anim_id, h.speed, h.on_report) == (0x5, 7, 0.7, Callback("report", (1,)))
    h.speed = 0.3                                      # on the private row, before the world
    p = Player()
    p.change(h, p.loop(h, IDLE), 0.0)
    humans = p.stores.humans
    assert rec.table is humans and rec.row == h.slot and not private.live[0]
    assert humans.flags[h.slot] == 0x5 and humans.speed[h.slot] == 0.3
    assert humans.report(h.slot) == Callback("report", (1,)) and h.on_report == Callback("report", (1,))
    assert rec.anim_id == IDLE and humans.anim[h.slot] == IDLE
    h.speed, h.on_report = 1.25, None                  # the row is what the properties write
    assert humans.speed[h.slot] == 1.25 and humans.on_report[h.slot] == -1


def test_a_forgotten_human_is_stale_and_its_row_not_aliased():
    """Player.forget gives the human's row back: its record, speed and report callback raise
    StaleHandle naming the field; a new human taking the row is never read through them."""
    s = world_set()
    p = Player()
    h = CharacterInstance(s, "a", speed=0.5)
    h.on_report = Callback("report", ())
    p.change(h, p.loop(h, IDLE, held=0x3), 0.0)
    p.step([h])
    p.flush()
    row, rec = h.slot, h.record
    p.cut(h)
    p.flush()
    p.forget(h)
    assert not rec.alive() and h.slot == -1 and not p.stores.humans.live[row]
    for obj, cls, field in ((rec, "HumanRecord", "flags"), (rec, "HumanRecord", "held"),
                            (rec, "HumanRecord", "anim_id"), (h, "CharacterInstance", "speed"),
                            (h, "CharacterInstance", "on_report")):
        with pytest.raises(StaleHandle, match=f"{cls}.{field}: its row {row} went back to the human table"):
            getattr(obj, field)
    with pytest.raises(StaleHandle, match="CharacterInstance.speed"):
        h.speed = 1.0
    other = CharacterInstance(s, "b", speed=2.0)
    p.change(other, p.loop(other, A, held=0x10), 0.0)
    assert other.slot == row and other.record.flags == 0x10 and other.speed == 2.0
    with pytest.raises(StaleHandle):
        rec.flags
    with pytest.raises(StaleHandle):                  # a forgotten human is not stepped back in
        p.step([h])


def test_a_human_forgotten_with_tasks_waiting_keeps_its_row_until_their_flush():
    """Cut and forgotten before the flush (Game.remove_human's order): the flush still
    releases its tasks against its record (held flags cleared, 0x400000 reported, the end
    callback run with the record readable), then the row goes back."""
    s = world_set()
    p = Player()
    seen = []
    p.callbacks.register("report", lambda inst: seen.append(("report", inst.record.flags)))
    p.callbacks.register("end", lambda inst: seen.append(("end", inst.record.flags)))
    h = CharacterInstance(s, "a")
    h.on_report = Callback("report", ())
    p.change(h, p.hold(h, A, held=0x400003, on_end=Callback("end", ())), 0.0)
    h.record.flags |= 0x100
    p.step([h])
    p.flush()
    rec, row = h.record, h.slot
    p.cut(h)
    p.forget(h)
    assert rec.alive() and p.stores.humans.live[row]          # its tasks wait on the deferred list
    p.flush()
    assert seen == [("report", 0x100), ("end", 0x100)] and h.released[-1] == A
    assert not rec.alive() and not p.stores.humans.live[row] and p.pool.in_use == 0


def test_a_standalone_human_forgotten_gives_its_private_row_back():
    h = CharacterInstance(world_set(), "a")
    rec = h.record
    Player().forget(h)
    assert not rec.alive()
    with pytest.raises(StaleHandle, match="HumanRecord.flags"):
        rec.flags


@pytest.mark.parametrize("value", [math.nan, math.inf, 1e39, "fast", True])
def test_a_speed_no_float32_holds_is_refused(value):
    h = CharacterInstance(world_set(), "a", speed=0.5)
    with pytest.raises(RangeError, match="CharacterInstance.speed"):
        h.speed = value
    assert h.speed == 0.5
    with pytest.raises(RangeError, match="CharacterInstance.speed"):
        CharacterInstance(world_set(), "b", speed=value)


def test_on_report_is_data_or_a_callable():
    h = CharacterInstance(world_set(), "a")
    h.on_report = ("report", (1, "x"))                 # a plain (kind, args) tuple becomes a Callback
    assert h.on_report == Callback("report", (1, "x"))
    with pytest.raises(CallbackError, match="CharacterInstance.on_report"):
        h.on_report = 5
    with pytest.raises(CallbackError, match="CharacterInstance.on_report.args"):
        h.on_report = Callback("report", (object(),))
    assert h.on_report == Callback("report", (1, "x"))
