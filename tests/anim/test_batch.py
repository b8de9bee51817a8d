"""The compiled engine against the reference model, over random scenarios.

The engine (``Player``: anim.playback.batch over anim.engine.kernels, the only engine)
and the plain-Python reference model of the spec (``scuffle.anim.reference``) get the
same characters and the same random command streams. Their dumps (task types, anim ids,
held bits, every cursor's time / frame / flags, fades, gaits, next tasks, record flags and
ids, events, released ids, queues, refused poses, pool accounting: anim.reference.dump)
must be equal after every update, and the poses and bone transforms equal bit for bit
(float32 bits, no tolerance), as tests/anim/test_reference.py compares them.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.reference import Reference, RefInstance, engine_state, reference_state
from scuffle.anim.engine.stack import CharacterInstance, TaskPoolExhausted, StackFull
from scuffle.anim.playback.tasks import TaskType

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

GAIT = [40, 41, 42, 43, 43]


def _clip(rng: random.Random, frames: int, name: str, loopy: bool = False):
    def q():
        v = [rng.gauss(0, 0.15) for _ in range(3)] + [1.0]
        n = math.sqrt(sum(x * x for x in v))
        return tuple(x / n for x in v)

    rots = {b: [(0, q()), (max(1, frames // 2), q()), (frames, q())] for b in (1, 3, 5, 17, 18, 28, 29)}
    if rng.random() < 0.5:
        ang = math.radians(rng.uniform(-4, 4))
        rots[0] = [(0, (0, 0, math.sin(ang / 2), math.cos(ang / 2)))]
    events = []
    for _ in range(rng.randint(0, 4)):
        etype = rng.choice([11, 11, 0x21, 0x2C, 0x2D, 0x48, 9])
        kw = {"word": rng.randint(1, 99)} if etype == 11 else ({"code": "bld"} if etype == 0x21 else {})
        events.append(make_event(rng.randint(0, frames + 1), etype, **kw))
    vel = [(0, (0, 0, 0)), (1, (0, rng.uniform(0.5, 2), 0)), (frames, (0, 1, 0))]
    return author_clip(name, frames, velocity=vel, rotations=rots, events=events)


def _set(seed: int) -> AnimSet:
    rng = random.Random(seed)
    clips, ranges = {}, {}
    for i in range(12):
        frames = rng.choice([2, 3, 4, 8, 11, 16, 21, 26, 30, 45])
        clips[i] = _clip(rng, frames, f"c{i}")
        ranges[i] = author_range(flags=rng.choice([0, 0x800, 0x1000, 0x2000]))
    for k, i in enumerate(GAIT[:4]):
        clips[i] = _clip(rng, [35, 24, 21, 18][k], f"g{k}")
        ranges[i] = author_range(flags=0x1000)
    return AnimSet.build(clips, ranges, name=f"s{seed}")


def _command(p: Player, h: CharacterInstance, others, rng: random.Random) -> None:
    r = rng.random()
    ids = list(range(12))
    fade = rng.choice([0.0, 0.0, 0.1, 0.3, 0.5])
    try:
        if r < 0.25:
            task = p.chain(h, [rng.choice(ids) for _ in range(rng.randint(1, 3))], blend=rng.choice([0.0, 0.0, 0.1, 0.4]),
                           held=rng.choice([0, 0x1, 0x3, 0x100]))
        elif r < 0.4:
            task = p.loop(h, rng.choice(ids), held=rng.choice([0, 0x1]))
        elif r < 0.55:
            task = p.gait(h, GAIT, target=rng.uniform(0, 4), value=rng.uniform(0, 4),
                          flags=rng.choice([0x2C1, 0xC1, 0x81]))
        elif r < 0.65:
            other = rng.choice(others)
            task = p.chain(h, [rng.choice(ids), rng.choice(ids)], paired_with=other, blend=rng.choice([0.0, 0.2]))
        elif r < 0.8:
            gaits = [t for t in h.stack if t.type == TaskType.GAIT]
            if gaits:
                (gaits[0].set_target if rng.random() < 0.8 else gaits[0].set_value)(rng.uniform(0, 4))
            return
        elif r < 0.85:
            p.enqueue(h, p.loop(h, rng.choice(ids)))
            return
        elif r < 0.88:
            task = p.mix(h, rng.choice(ids), rng.choice(ids), weight=rng.random())
        elif r < 0.9:
            task = p.pick(h, [rng.choice(ids) for _ in range(4)], 0.75, value=rng.uniform(0, 3))
        else:
            task = p.hold(h, rng.choice(ids))
        p.change(h, task, fade)
    except (TaskPoolExhausted, StackFull):
        pass


def worlds(**options) -> list:
    """The two worlds to compare, each with its instance class: the engine, then the reference."""
    return [(Player(PlayerOptions(**options)), CharacterInstance), (Reference(PlayerOptions(**options)), RefInstance)]


def _state(w, hs) -> tuple:
    """World ``w``'s dump (pool in use, tasks held, every human's dump: anim.reference.dump)."""
    return engine_state(w, hs) if isinstance(w, Player) else reference_state(w, hs)


def _poses(w, hs, bones: bool = False) -> tuple:
    """Every human's pose (vel, root, rot, tag) in the PoseBatch layout and, with ``bones``,
    the model-space positions and rotations; float32 arrays as their uint32 bits."""
    if bones:
        b = w.pose(hs)
        arrays = (b.poses.vel, b.poses.root, b.poses.rot, b.poses.tag, b.pos, b.rot)
    elif isinstance(w, Player):
        p = w.sample(hs)
        arrays = (p.vel, p.root, p.rot, p.tag)
    else:
        each = [p.arrays() for p in w.sample(hs)]
        arrays = (np.stack([e[0] for e in each], -1), np.stack([e[1] for e in each], -1),
                  np.stack([e[2].T for e in each], -1), np.stack([e[3] for e in each], -1))
    return tuple(a.copy().view(np.uint32) if a.dtype == np.float32 else a.copy() for a in arrays)


def same_poses(pa, pb) -> None:
    """Two runs' poses (lists of ``_poses`` tuples) equal bit for bit."""
    assert len(pa) == len(pb)
    for u, (xa, xb) in enumerate(zip(pa, pb)):
        for j, (a, b) in enumerate(zip(xa, xb)):
            if not np.array_equal(a, b):
                bad = np.argwhere(a != b)[:4].tolist()
                raise AssertionError(f"update {u}, pose part {j}: engine and reference differ at {bad}")


def same_states(sa, sb) -> None:
    """Two runs' dumps (one per update) equal."""
    assert len(sa) == len(sb)
    for u, (a, b) in enumerate(zip(sa, sb)):
        if a != b:
            for i, (x, y) in enumerate(zip(a[2], b[2])):
                assert x == y, f"update {u}, human {i}:\nengine    {x}\nreference {y}"
            assert a == b, f"update {u}: pool {a[:2]} != {b[:2]}"


def _run_pair(seed: int, humans: int, updates: int, rate_of_commands: float, bones: bool = False,
              engine_only: bool = False, **options):
    """The engine then the reference (``engine_only``: the engine alone, None for the
    reference) through ``updates`` updates of random commands; each run's (dumps, poses,
    world, humans)."""
    aset = _set(seed)
    results = []
    for w, cls in worlds(pool_size=4000, **options)[:1 if engine_only else 2]:
        hs = [cls(aset, f"h{i}", speed=1.0) for i in range(humans)]
        rng = random.Random(seed * 7 + 1)
        states, poses = [], []
        for u in range(updates):
            w.step(hs)
            poses.append(_poses(w, hs, bones))
            w.flush()
            states.append(_state(w, hs))
            for h in hs:
                if rng.random() < rate_of_commands:
                    _command(w, h, hs, rng)
            w.flush()
        results.append((states, poses, w, hs))
    return results if not engine_only else results + [None]


@pytest.mark.parametrize("seed,updates,rate", [(1, 150, 0.08), pytest.param(2, 150, 0.08, marks=[pytest.mark.slow, pytest.mark.bits]),
                                               pytest.param(3, 150, 0.08, marks=pytest.mark.slow),
                                               pytest.param(4, 150, 0.08, marks=pytest.mark.slow),
                                               pytest.param(5, 400, 0.01, marks=[pytest.mark.slow, pytest.mark.bits]),
                                               pytest.param(6, 400, 0.015, marks=[pytest.mark.slow, pytest.mark.bits])])
def test_batched_equals_reference(seed, updates, rate):
    """Busy crowds (many changes) and calm ones (long gaits and loops that wrap)."""
    _check_pair(_run_pair(seed, humans=12, updates=updates, rate_of_commands=rate))


# one reading at a time: slow (test_reference.py's test_player_options_bit_for_bit runs each in
# the default suite on the reference's own cases); the three together in the default suite
@pytest.mark.parametrize("options", [pytest.param({"events": "newest"}, marks=pytest.mark.slow),
                                     pytest.param({"blend_window": "kept"}, marks=pytest.mark.slow),
                                     pytest.param({"pick": "all"}, marks=pytest.mark.slow),
                                     {"events": "newest", "blend_window": "kept", "pick": "all"}],
                         ids=["newest", "kept", "pick-all", "all-three"])
def test_batched_equals_reference_with_the_other_readings(options):
    """The readings' options (PlayerOptions' events, blend_window, pick) keep the engine equal to the reference."""
    _check_pair(_run_pair(7, humans=10, updates=150, rate_of_commands=0.08, **options))


def _check_pair(pair):
    (sa, pa, pla, ha), (sb, pb, plb, hb) = pair
    same_states(sa, sb)
    same_poses(pa, pb)
    # Nothing leaks: every task out of the pool is on a stack, a queue, or a next task.
    assert pla.pool.in_use == pla.tasks_out(ha)
    assert plb.pool.in_use == plb.tasks_out(hb)
    # the scenario did something: tasks changed hands and events fired
    assert sum(len(h[4]) for st in sa for h in st[2]) > 0
    assert sum(len(h[3]) for st in sa for h in st[2]) > 0


@pytest.mark.parametrize("seed,zero", [(11, False), (12, True)])
def test_compiled_bones_and_the_zero_overshoot_option_equal_reference(seed, zero):
    """The bone transforms of the compiled pose kernel against the reference's (bit for
    bit), with and without ``end_zero_overshoot`` (When a clip ends)."""
    _check_pair(_run_pair(seed, humans=8, updates=90, rate_of_commands=0.06, bones=True,
                          end_zero_overshoot=zero))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20, 32))
def test_compiled_equals_reference_many_seeds(seed):
    """A longer sweep over random crowds (CI runs it)."""
    _check_pair(_run_pair(seed, humans=16, updates=240, rate_of_commands=0.03 + 0.01 * (seed % 5), bones=True,
                          end_zero_overshoot=bool(seed % 2)))


def _plan_reference(world, plan, bank, submasks) -> list:
    """Each human of ``plan`` (anim.engine.plan.SamplePlan) run on the reference model's pose
    (anim.reference.pose): its samples, its blends (a subtree blend: the whole-body blend
    on the bones of the subtree, the lower pose elsewhere, Pose_BlendPartial), its final
    pose or the reference pose, and the bone transforms; as (vel, root, rot, tag, pos,
    mrot) bit arrays."""
    from types import SimpleNamespace

    from scuffle.anim.reference.pose import RefPose, blend, bones_of, reference_pose, sample_cursor

    bits = bank.tag_bits
    poses: dict = {}
    for j, ci in enumerate(plan.s_clip):
        # the time a Python float, as the reference's cursors hold it (a numpy float32 would
        # multiply in float32 under NEP 50, not as the FPU's toward-zero product)
        cur = SimpleNamespace(clip=bank.clips[ci], time=float(np.float32(plan.s_time[j])), flags=plan.s_flags[j])
        poses[j] = sample_cursor(world, cur, plan.s_rate[j])
    for j, (a, b) in enumerate(zip(plan.b_a, plan.b_b)):
        lo, up, m = poses[a], poses[b], plan.b_mask[j]
        whole = blend(lo, up, plan.b_w[j], bits)
        if m >= 0:
            inside = submasks[m]
            whole = RefPose(whole.vel if inside[0] else lo.vel, whole.root if inside[1] else lo.root,
                            [whole.rot[k] if inside[k] else lo.rot[k] for k in range(len(inside))],
                            [whole.tag[0] if inside[0] else lo.tag[0], whole.tag[1] if inside[1] else lo.tag[1]]
                            + [whole.tag[2 + k] if inside[k] else lo.tag[2 + k] for k in range(len(inside))])
        poses[-(j + 1)] = whole
    out = []
    for h in plan.finals:
        p = reference_pose(bank.skeleton.bind_height, bits) if h is None else poses[h]
        pos, mrot = bones_of(bank.skeleton, p, bank.motion_entry)
        vel, root, rot, tag = p.arrays()
        out.append([x.view(np.uint32) if x.dtype == np.float32 else x for x in (vel, root, rot, tag, pos, mrot)])
    return out


def test_plan_with_subtree_masks_and_default_poses_matches_reference():
    """The compiled plan kernel (pose_plan) against the reference model's pose, bit for
    bit (no tolerance): partial blends (Pose_BlendPartial's subtree masks), stacks of
    several blends, empty stacks (the default pose), flags 0x1 / 0x2 (tagged defaults),
    several rates; the poses and the bone transforms."""
    from scuffle.anim.engine.plan import Bones, SamplePlan
    from scuffle.anim.maths.skeleton import NUM_BONES, subtree_mask

    aset = _set(3)
    p = Player()
    for i in range(12):
        p.bank_index(aset.clip(i))
    bank = p.bank
    rng = random.Random(4)
    plan = SamplePlan()
    for h in range(40):
        plan.begin(f"h{h}")
        for _ in range(rng.randint(0, 5)):
            ci = rng.randrange(len(bank))
            plan.sample(ci, float(np.float32(rng.uniform(0, float(bank.durations[ci])))),
                        rng.choice([1.0, 0.75, 0.9, 1.3, 0.4]), rng.choice([0, 0, 1, 2, 3, 0x10]))
            if rng.random() < 0.7:
                plan.blend_top(rng.random(), rng.choice([-1, -1, 0, 1, 3, 5, 17, 28]))
        plan.end()
    out = Bones(len(plan.finals))
    plan.run(bank, np.arange(len(plan.finals), dtype=np.int64), out)
    want = _plan_reference(Reference(PlayerOptions()), plan, bank,
                           {b: subtree_mask(b, bank.skeleton.parents) for b in range(NUM_BONES)})
    assert any(m >= 0 for m in plan.b_mask) and any(h is None for h in plan.finals)
    pb = out.poses
    for i, w in enumerate(want):
        got = [pb.vel[:, i], pb.root[:, i], pb.rot[:, :, i].T, pb.tag[:, i], out.pos[:, :, i].T, out.rot[:, :, i].T]
        for k, (g, x) in enumerate(zip(got, w)):
            g = g.view(np.uint32) if g.dtype == np.float32 else g
            assert np.array_equal(g, x), f"human {i}, part {k}: {np.argwhere(g != x)[:4].tolist()}"


def test_batched_mostly_takes_the_fast_path():
    """An uneventful crowd (loops and gaits): one step runs every human in the kernels."""
    aset = _set(9)
    p = Player(PlayerOptions(pool_size=2000))
    hs = [CharacterInstance(aset, f"h{i}") for i in range(50)]
    for i, h in enumerate(hs):
        task = p.gait(h, GAIT, target=1.5, value=1.5) if i % 2 else p.loop(h, 9)
        p.change(h, task, 0.0)
    p.flush()
    for _ in range(5):
        p.update(hs)
    p.batch.step(hs[:30], p.options.dt)
    assert p.batch.kernel_humans == 30
    p.batch.step(hs, p.options.dt)
    assert p.batch.kernel_humans == len(hs)


BLENDS = (TaskType.MIX, TaskType.PICK, TaskType.DIRECTION)


def test_types_10_11_13_take_the_fast_path():
    """Types 10, 11 and 13 run in the kernels: mixes easing toward their
    targets, picks, eight-direction blends, also as a type 3's next task (its blend window,
    then the hand-over), their values and targets moved between updates: the kernels run
    every human, and the dumps (times, events, ids, flags) and poses equal the
    reference's bit for bit."""
    aset = _set(21)
    runs = []
    for w, cls in worlds(pool_size=2000):
        hs = [cls(aset, f"h{i}") for i in range(12)]
        for i, h in enumerate(hs):
            if i % 3 == 0:
                t = w.mix(h, i % 12, (i + 5) % 12, weight=0.2, flags=0x1 if i % 2 else 0)
            elif i % 3 == 1:
                t = w.pick(h, [1, 4, 7, 10], 1.25, value=i % 4)
            else:
                t = w.direction(h, 0, direction=i * 0.7)             # ids 0-7
            if i >= 6:
                t = w.clip(h, i, t, blend=0.3)
            w.change(h, t, 0.2)
        w.flush()
        kernel, states, poses = [], [], []
        for u in range(90):
            if u % 15 == 7:
                for i, h in enumerate(hs):
                    for t in h.stack:
                        if t.type in BLENDS:
                            top = {TaskType.MIX: 1.0, TaskType.PICK: 3.0, TaskType.DIRECTION: 8.0}[t.type]
                            move = t.set_target if (u + i) % 2 and t.type == TaskType.MIX else t.set_value
                            move((u + i) % 9 / 8.0 * top)
            w.step(hs)
            if isinstance(w, Player):
                kernel.append(w.batch.kernel_humans)
            poses.append(_poses(w, hs))
            w.flush()
            states.append(_state(w, hs))
        runs.append((states, poses, w, hs, kernel))
    (sa, pa, pla, ha, kernel), (sb, pb, _, _, _) = runs
    assert kernel == [len(ha)] * 90
    assert {t.type for h in ha for t in h.stack} >= set(BLENDS)
    same_states(sa, sb)
    same_poses(pa, pb)
    assert pla.pool.in_use == pla.tasks_out(ha)


def _ref_cursors(hs) -> int:
    """The cursors the reference's humans hold (their stacks' tasks and next tasks)."""
    n, todo = 0, [t for h in hs for t in h.stack + h.queue]
    while todo:
        t = todo.pop()
        n += len(t.cursors())
        todo.extend(t.following())
    return n


def test_gait_pair_changes_hand_overs_and_fades_run_in_the_kernel():
    """The kernel runs the harder cases of the step too: gaits easing
    across their clip pairs (spare cursors made ahead, then the pair changed in the
    kernel), hand-overs with blend windows, fades ending: the results equal the
    reference's bit for bit, poses included, and the spares stay at most two a human."""
    aset = _set(13)
    runs = []
    for w, cls in worlds(pool_size=2000):
        hs = [cls(aset, f"h{i}") for i in range(12)]
        for i, h in enumerate(hs):
            g = w.gait(h, GAIT, target=0.0, value=(i % 4) * 1.0, flags=0xC1 | (0x200 if i % 2 else 0))
            w.change(h, w.clip(h, i % 12, g, blend=0.2), 0.3)
        w.flush()
        states, poses = [], []
        for u in range(120):
            if u % 20 == 5:
                for i, h in enumerate(hs):
                    gaits = [t for t in h.stack if t.type == TaskType.GAIT]
                    if gaits:
                        gaits[0].set_target((u // 20 + i) % 5 * 0.9)
            w.step(hs)
            poses.append(_poses(w, hs))
            w.flush()
            states.append(_state(w, hs))
        runs.append((states, poses, w, hs))
    (sa, qa, pa, ha), (sb, qb, pb, hb) = runs
    assert pa.batch.pair_changes > 20
    same_states(sa, sb)
    same_poses(qa, qb)
    lowers = {t.lower for h in ha for t in h.stack if t.type == TaskType.GAIT}
    assert len(lowers) > 1                                   # the pairs did change
    assert pa.pool.in_use == pa.tasks_out(ha)
    assert pa.stores.cursors.in_use <= _ref_cursors(hb) + 2 * len(ha)   # at most two spares each


def test_gait_followers_after_wraps_and_leader_swaps():
    """Gaits whose clips all carry events run long (the leader wraps, the follower's time
    jumps back) and swap leaders by retargets: the engine and the reference agree exactly."""
    clips, ranges = {}, {}
    for k, (i, frames) in enumerate(zip(GAIT[:4], (35, 24, 21, 18))):
        clips[i] = author_clip(f"g{k}", frames, rotations={3: [(0, (0, 0, 0, 1)), (frames, (0.1, 0, 0, 0.995))]},
                               events=[make_event(f, 11, word=100 * k + f) for f in (0, 5, frames // 2, frames - 2)])
        ranges[i] = author_range(flags=0x1000)
    aset = AnimSet.build(clips, ranges)
    runs = []
    for w, cls in worlds():
        hs = [cls(aset, f"h{i}") for i in range(4)]
        for h, v in zip(hs, (0.5, 1.3, 2.7, 3.2)):
            w.change(h, w.gait(h, GAIT, target=v, value=v, flags=0x2C1 | 0x200), 0.0)
        w.flush()
        states = []
        r = random.Random(5)
        for u in range(600):
            w.update(hs)
            states.append(_state(w, hs))
            if u % 37 == 36:
                for h in hs:
                    h.stack[0].set_target(r.uniform(0.2, 3.8))
        runs.append(states)
    a, b = runs
    same_states(a, b)
    fired = sum(len(x[3]) for st in a for x in st[2])
    assert fired > 100          # the events really fired
    leaders = {x[0][0][5][4] for st in a for x in st[2]}
    assert leaders == {0, 1}     # both clips of a pair led at some time


def _crowd_game(n: int, engine: str):
    """bench's crowd (game/tools/bench.py, _build) on ``engine``: gaits, a paired hold per
    ten humans, and every human changing to an attack that hands over into a gait every
    60 updates (in phases), under a fade of 0.6 s."""
    from scuffle.game.fighters.moves import GAIT_IDS, Move
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    CYCLE, FADE, PAIR_EVERY = 60, 0.6, 10

    game = Game(PlayerOptions(pool_size=max(360, 12 * n)), engine=engine)
    s = demo_set()
    for i in range(n):
        game.add_human(f"h{i}", s, ((i % 5) * 2.0, (i // 5) * 2.0, 0.0), 0.0)
    names = [f"h{i}" for i in range(n)]
    player = game.player
    paired: set[str] = set()
    for i, name in enumerate(names):
        inst = game.instance(name)
        if i % PAIR_EVERY == 1 and i + 1 < n:
            paired.update((name, names[i + 1]))
            player.change(inst, player.loop(inst, Move.HOLD), 0.0)
            vi = game.instance(names[i + 1])
            player.change(vi, player.chain(vi, [Move.HOLD_VICTIM], paired_with=inst), 0.0)
        elif name not in paired:
            t = 0.5 + (i % 5) * 0.6
            player.change(inst, player.gait(inst, GAIT_IDS, target=t, value=t), 0.0)
    player.flush()
    attacks = (Move.JAB, Move.KICK, Move.CROSS)

    def drive(ctx):
        u = ctx.update
        for i, name in enumerate(names):
            if name in paired or (u + 7 * i) % CYCLE:
                continue
            inst = game.instance(name)
            target = 0.5 + ((u // CYCLE + i) % 5) * 0.6
            nxt = player.gait(inst, GAIT_IDS, target=target, value=target)
            player.change(inst, player.clip(inst, attacks[(u + i) % 3], nxt, blend=0.1), FADE)

    game.ctx.actions.append(drive)
    return game


@pytest.mark.slow
def test_fired_events_components_match_on_both_paths():
    """AnimationStep copies only the humans that may have fired into their FiredEvents
    (the compiled engine knows them); every human's FiredEvents still equals the
    reference engine's (Game(engine="reference"), which reports every human), update by
    update, and empties again after an update with no event."""
    from scuffle.components import FiredEvents

    logs = []
    for engine in ("compiled", "reference"):
        game = _crowd_game(24, engine)
        try:
            log = []
            for _ in range(70):
                game.step()
                log.append([tuple((fe.anim_id, fe.event.frame, int(fe.event.type))
                                  for fe in game.component(name, FiredEvents).events)
                            for name, _ in game.humans()])
            logs.append(log)
        finally:
            game.close()
    assert logs[0] == logs[1]
    assert sum(len(x) for u in logs[0] for x in u) > 20          # events really fired
    per_human = list(zip(*logs[0]))
    assert any(a and not b for seq in per_human for a, b in zip(seq, seq[1:]))   # and emptied again


def test_a_next_task_relinked_by_the_kernel_before_its_owner_leaves_the_stack_goes_back():
    """Seed 31: a clip in its blend window advances its next task, which hands over to its
    own next (the owner's next is relinked in the rows), and a fade's end takes the owner
    off the stack in the same update: the owner's release must give back the new next
    task, not the old one (the pool would leak one task)."""
    (_, _, pla, ha), _ = _run_pair(31, humans=16, updates=240, rate_of_commands=0.04, end_zero_overshoot=True,
                                   engine_only=True)
    assert pla.pool.in_use == pla.tasks_out(ha)
