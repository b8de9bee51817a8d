"""The original's limits, each refused without corrupting anything, and the human plays on.

Spec: "Animation tasks" (the free list of 360), "The task stack" (18 tasks, a queue of
10, an early fade finish when a stack holds more than 6, the pose stack of 7), "Fades"
(the clean-up above 12), "Root motion" (the 50 m/s cap, 0x0023f238). The original has
no checks (it would write past its arrays); refusing is ours (docs/original.md, "The
stack, the queue and the pool"). Every refusal here is checked against a snapshot of
the pool, the stores' tables, the deferred list, the stacks, queues, held flags, anim
ids and task times (support.snapshot), and then the human keeps playing. Most run on the
engine and on the reference model (anim.reference, the same commands; its dump stands in
for the snapshot).

tests/anim/test_stack.py covers the pool, stack and queue rules themselves; these tests
add the "nothing changed" half, the refusals inside a step, and the routes through the
ECS and the scenario runner.
"""
from __future__ import annotations

import io
import math

import numpy as np
import pytest

from scuffle.anim.engine.plan import SamplePlan
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.maths.pose import POSE_STACK_SIZE, PoseStackOverflow
from scuffle.anim.data.rates import CfgAnimSpeeds
from scuffle.anim.reference import Reference, RefInstance, engine_state, reference_state
from scuffle.anim.engine.stack import POOL_SIZE, QUEUE_SIZE, STACK_SIZE, CharacterInstance, QueueFull, StackFull, TaskPoolExhausted
from scuffle.anim.playback.tasks import TaskType
from scuffle import ScenarioError, parse_scenario, run_scenario
from scuffle.game.runtime.world import Game

from .support import A, B, GAIT, IDLE, LONG, SHORT, keeps_playing, snapshot, synthetic_set

SET = synthetic_set()


def _player(**kw) -> Player:
    p = Player(PlayerOptions(**kw))
    p.register(SET)
    return p


# Most limits run on the engine and on the reference model (anim.reference), which has the
# same command surface; the helpers below take either world.
ENGINES = pytest.mark.parametrize("engine", [True, False], ids=["engine", "reference"])


def _new(engine: bool, **kw):
    """A Player (``engine``) or a Reference with options ``kw``."""
    return _player(**kw) if engine else Reference(PlayerOptions(**kw))


def _human(p, name: str = "h"):
    return (CharacterInstance if isinstance(p, Player) else RefInstance)(SET, name)


def _free(p) -> int:
    return p.pool.free if isinstance(p, Player) else p.pool.capacity - p.pool.in_use


def _holds(p, task) -> bool:
    return p.pool.holds(task) if isinstance(p, Player) else any(t is task for t in p.pool.out)


def _snap(p, hs):
    """What a refused call must leave as it was: support.snapshot for the engine (its tables
    too); for the reference its dump (anim.reference.dump: pool, stacks, queues, records,
    every cursor's time bits), the deferred list and the stacks' and queues' identities."""
    if isinstance(p, Player):
        return snapshot(p, hs)
    return (reference_state(p, hs), [(id(t), id(i)) for t, i in p.deferred],
            [([id(t) for t in h.stack], [id(t) for t in h.queue]) for h in hs])


def _plays_on(p, h, others=()) -> None:
    """support.keeps_playing on either world: a change to A then the idle runs A to its end
    and hands over, every pose finite, the pool holding exactly the tasks in play."""
    if isinstance(p, Player):
        keeps_playing(p, h, others)
        return
    everyone = [h, *others]
    p.change(h, p.chain(h, [A, IDLE], held=0x1), 0.1)
    seen = []
    for _ in range(40):
        poses = p.update(everyone)
        assert all(np.isfinite(a).all() for pose in poses for a in pose.arrays()[:3])
        seen.append(h.record.anim_id)
        assert p.pool.in_use == p.tasks_out(everyone)
    assert seen[0] == A and seen[-1] == IDLE, seen
    assert h.record.flags & 0x7 == 0


def _mid_change(p, name: str = "h"):
    """A human in the middle of a fade from the idle into A (holding 0x1), a few updates in."""
    h = _human(p, name)
    p.change(h, p.loop(h, IDLE))
    p.update([h])
    p.change(h, p.chain(h, [A, IDLE], held=0x1), 0.5)
    for _ in range(3):
        p.update([h])
    assert [t.type for t in h.stack] == [TaskType.CLIP, TaskType.LOOP, TaskType.FADE]
    return h


# ---------------------------------------------------------------- the pool of 360

@ENGINES
def test_the_pool_of_360_refuses_every_constructor_and_changes_nothing(engine):
    assert POOL_SIZE == 360
    p = _new(engine)
    h = _mid_change(p)
    spares = [p.loop(h, IDLE) for _ in range(_free(p))]
    assert p.pool.in_use == 360 and _free(p) == 0
    before = _snap(p, [h])
    refusals = [
        lambda: p.loop(h, IDLE), lambda: p.clip(h, A), lambda: p.hold(h, A), lambda: p.fade(h, 0.2),
        lambda: p.chain(h, [A, B, IDLE]), lambda: p.gait(h, GAIT, target=1.0), lambda: p.mix(h, A, B),
        lambda: p.pick(h, [A, B, IDLE, LONG], 1.0), lambda: p.scene(h, A, 1.0),
        lambda: p.paired(h, h, A), lambda: p.paired_hold(h, h, A),
    ]
    for make in refusals:
        with pytest.raises(TaskPoolExhausted, match="task pool exhausted"):
            make()
        assert _snap(p, [h]) == before
    for t in spares:
        p.discard(t)
    _plays_on(p, h)


@ENGINES
def test_a_change_without_a_task_for_its_fade_gives_the_new_task_back(engine):
    p = _new(engine)
    h = _mid_change(p)
    spares = [p.loop(h, IDLE) for _ in range(_free(p) - 2)]
    before = _snap(p, [h])
    new = p.chain(h, [B, IDLE])                   # the last two tasks: none left for the fade
    assert _free(p) == 0
    with pytest.raises(TaskPoolExhausted):
        p.change(h, new, 0.2)
    assert _snap(p, [h]) == before                # the chain went back, nothing moved
    for t in spares:
        p.discard(t)
    _plays_on(p, h)


@ENGINES
def test_a_queued_start_refused_by_the_pool_is_listed_and_the_step_goes_on(engine):
    """The queue runs inside the step: a start that cannot take its fade goes back to the
    pool, the other humans still step, and Player.refused names it (nothing leaks)."""
    p = _new(engine)
    h, other = _human(p, "h"), _human(p, "other")
    for x in (h, other):
        p.change(x, p.loop(x, IDLE))
    p.update([h, other])
    p.enqueue(h, p.loop(h, A))
    # the rest of the pool held by a placed chain (a task never placed would go back as
    # the update begins) on a human that is not stepped
    holder = _human(p, "holder")
    p.push(holder, p.chain(holder, [IDLE] * _free(p)))
    assert _free(p) == 0
    stack_before = [id(t) for t in h.stack]
    t_other = other.stack[0].cursor.time
    p.update([h, other])
    assert len(p.refused) == 1 and p.refused[0][0] is h
    assert isinstance(p.refused[0][1], TaskPoolExhausted)
    assert [id(t) for t in h.stack] == stack_before and h.queue == []
    assert other.stack[0].cursor.time > t_other                 # the step went on
    assert p.pool.in_use == p.tasks_out([h, other, holder])
    p.update([h, other])
    assert p.refused == []                                      # emptied at each step
    p.cut(holder)
    p.flush()
    _plays_on(p, h, [other])


def test_the_fight_rules_running_out_of_tasks_end_the_scenario_with_one_error():
    """A grab that connects needs six tasks: with a pool of 5 the fight rules' own change
    runs out inside the update; the run stops with a ScenarioError, not a traceback."""
    text = """updates = 40
[options]
pool_size = 5
[sets.demo]
library = "demo"
[[humans]]
name = "a"
set = "demo"
[[humans]]
name = "b"
set = "demo"
position = [0, 1.0, 0]
heading = 180
[[commands]]
update = 0
human = "a"
loop = 358
[[commands]]
update = 2
human = "a"
action = "grab"
"""
    sc = parse_scenario(text, "pool.toml")
    out = io.StringIO()
    with pytest.raises(ScenarioError) as ei:
        run_scenario(sc, out)
    e = ei.value
    # The rule that runs out is refused whole (no slide, no state change), the
    # update finishes for everyone, and the error names the grab command that led to it.
    assert e.field == "commands[1]" and e.line == text.splitlines().index('action = "grab"') - 2
    assert "task pool exhausted" in e.problem and e.problem.startswith("update ")
    n = int(e.problem.split()[1].rstrip(":"))
    assert len(out.getvalue().splitlines()) == 2 * n            # the updates before it


@ENGINES
def test_a_refused_constructor_or_change_leaves_no_row_and_no_task(engine):
    """Bad arguments are refused (ValueError naming them, UnknownClip) before any cursor,
    fade or gait row is taken from the world's tables; a change refused for its fade time
    gives its new task back. (Before, a bad blend time, a mix or pick with an unknown
    second id, a gait with a NaN target, and a change with a NaN fade each leaked rows or
    a task.) The reference model refuses the same calls alike."""
    from scuffle.anim.playback.player import UnknownClip

    p = _new(engine)
    h = _mid_change(p)
    nxt = p.loop(h, IDLE)                         # a next task the caller holds
    before = _snap(p, [h])
    bad = [
        (ValueError, "blend time", lambda: p.clip(h, A, nxt, blend=float("nan"))),
        (ValueError, "blend time", lambda: p.paired(h, h, A, nxt, blend=-1.0)),
        (ValueError, "blend time", lambda: p.chain(h, [A, B, IDLE], blend=-1.0)),
        (ValueError, "rate", lambda: p.loop(h, A, rate=float("inf"))),
        (ValueError, "rate", lambda: p.scene(h, A, -0.5)),
        (UnknownClip, "77", lambda: p.mix(h, A, 77)),
        (UnknownClip, "77", lambda: p.pick(h, [A, B, 77, IDLE], 1.0)),
        (ValueError, "4 clips", lambda: p.pick(h, [A, B, IDLE], 1.0)),
        (ValueError, "gait target", lambda: p.gait(h, GAIT, target=float("nan"))),
        (ValueError, "gait value", lambda: p.gait(h, GAIT, target=1.0, value=float("inf"))),
        (ValueError, "5 anim ids", lambda: p.gait(h, GAIT[:4])),
        (ValueError, "fade time", lambda: p.change(h, p.loop(h, B), float("nan"))),
        (ValueError, "fade time", lambda: p.change(h, p.chain(h, [B, IDLE]), 1e39)),
    ]
    for exc, text, make in bad:
        with pytest.raises(exc, match=text):
            make()
        assert _snap(p, [h]) == before, text
    p.discard(nxt)
    _plays_on(p, h)


# ---------------------------------------------------------------- the stack of 18

def _step(p: Player, hs) -> None:
    """An update without the sample: a stack of more than 7 loops cannot be sampled (the
    pose stack of 7), so the stack limits are driven through the step and the flush."""
    p.step(hs)
    p.flush()


def _full_stack(p):
    h = _human(p, "h")
    for i in range(STACK_SIZE):
        p.push(h, p.loop(h, (IDLE, A, B)[i % 3], held=0x10 << (i % 3)))
    _step(p, [h])
    return h


@ENGINES
def test_the_stack_of_18_refuses_push_insert_and_change_and_changes_nothing(engine):
    assert STACK_SIZE == 18
    p = _new(engine)
    h = _full_stack(p)
    extra = p.loop(h, B, held=0x1000)
    before = _snap(p, [h])
    in_use = p.pool.in_use
    with pytest.raises(StackFull, match="18 tasks"):
        p.push(h, extra)
    with pytest.raises(StackFull):
        p.insert_bottom(h, extra)
    assert _snap(p, [h]) == before and h.record.flags & 0x1000 == 0   # its held bits were not set
    if engine:
        with pytest.raises(StackFull):
            p.change(h, extra, 0.2)
        after = snapshot(p, [h])
        assert after["humans"] == before["humans"]
    else:
        stacks = reference_state(p, [h])[2]
        with pytest.raises(StackFull):
            p.change(h, extra, 0.2)
        assert reference_state(p, [h])[2] == stacks
    assert not _holds(p, extra)                                   # the change gave it back
    assert p.pool.in_use == in_use - 1
    p.cut(h)
    p.flush()
    assert p.pool.in_use == 0 and h.record.flags == 0
    _plays_on(p, h)


@ENGINES
def test_queued_starts_refused_by_a_full_stack_leak_nothing(engine):
    """Two queued tasks on a full stack: both refused inside the step (both given back),
    the other human steps, nothing is lost (the second one does not leak, the step does not stop
    half-way)."""
    p = _new(engine)
    h = _full_stack(p)
    other = _human(p, "other")
    p.change(other, p.loop(other, IDLE))
    _step(p, [h, other])
    p.enqueue(h, p.loop(h, A))
    p.enqueue(h, p.loop(h, B))
    t_other = other.stack[0].cursor.time
    stack_before = [id(t) for t in h.stack]
    _step(p, [h, other])
    assert [type(e) for _, e in p.refused] == [StackFull, StackFull]
    assert [id(t) for t in h.stack] == stack_before and h.queue == []
    assert other.stack[0].cursor.time > t_other
    assert p.pool.in_use == p.tasks_out([h, other]) == STACK_SIZE + 1
    p.cut(h)
    p.flush()
    _plays_on(p, h, [other])


# ---------------------------------------------------------------- the queue of 10

@ENGINES
def test_the_queue_of_10_refuses_an_eleventh_and_changes_nothing(engine):
    assert QUEUE_SIZE == 10
    p = _new(engine)
    h = _mid_change(p)
    for _ in range(QUEUE_SIZE):
        p.enqueue(h, p.loop(h, IDLE))
    extra = p.loop(h, B)
    before = _snap(p, [h])
    with pytest.raises(QueueFull, match="10 tasks"):
        p.enqueue(h, extra)
    assert _snap(p, [h]) == before
    p.discard(extra)
    p.cut(h)                       # the queued tasks go back without a release
    p.flush()
    assert p.pool.in_use == 0 and h.queue == []
    _plays_on(p, h)


# ---------------------------------------------------------------- the pose stack of 7

def test_the_plan_refuses_an_eighth_pose_and_keeps_its_seven():
    """0x00104ce0 refuses an eighth pose ("The task stack", L257): the push is skipped and
    counted, the build carries on, and the blends after it take the poses then on top."""
    assert POSE_STACK_SIZE == 7
    plan = SamplePlan()
    plan.begin("x")
    for i in range(7):
        assert plan.sample(i, 0.0, 1.0, 0) == i
    before = (list(plan.s_clip), plan.depth)
    assert plan.sample(7, 0.0, 1.0, 0) is None
    assert plan.sample(8, 0.0, 1.0, 0) is None
    assert (list(plan.s_clip), plan.depth) == before
    for _ in range(6):
        plan.blend_top(0.5)
    plan.end()
    plan.begin("y")
    plan.sample(0, 0.0, 1.0, 0)
    plan.end()
    assert plan.finals == [-6, 7]
    assert plan.refusals == [("x", 2)]


def _eighth(p):
    """``p`` a Player or a Reference: h plays the chain that needs an eighth pose, other the idle."""
    cls = CharacterInstance if isinstance(p, Player) else RefInstance
    h, other = cls(SET, "h"), cls(SET, "other")
    p.change(other, p.loop(other, IDLE))
    p.change(h, p.chain(h, [LONG, *SHORT[:6], IDLE], blend=1.0))
    return h, other


def test_an_eighth_pose_through_a_player_is_refused_counted_and_the_update_goes_on():
    """One chain of a long clip and six 2-frame clips (each always inside its blend window
    into the next) then a loop: while the long clip is inside its own window the stack
    needs 8 poses at once. That update's sample skips the eighth (the loop's), counts it
    on the human and in the player's statistics, and returns every pose; later updates
    (the long clip handed over: 7 poses) refuse nothing."""
    p = _player()
    h, other = _eighth(p)
    refused = []
    for u in range(30):
        p.step([h, other])
        poses = p.sample([h, other])
        assert poses.is_finite() and len(poses) == 2
        assert other.poses_refused == 0
        if h.poses_refused:
            refused.append((u, h.poses_refused))
        p.flush()
    assert refused and all(n == 1 for _, n in refused)
    assert p.stats.poses_refused == len(refused) and p.stats.samples == 30
    assert h.poses_refused == 0 and refused[-1][0] < 29
    assert h.record.anim_id != LONG


@ENGINES
def test_with_refuse_deep_chains_an_eighth_pose_chain_is_refused_when_given(engine):
    """One chain of a long clip and six 2-frame clips (each always inside its blend window
    into the next) then a loop: inside the long clip's window it would need 8 poses at
    once. With the option the chain is refused when it is given, naming the human,
    before any task is built; the human plays on."""
    p = _new(engine, refuse_deep_chains=True)
    h, other = _human(p, "h"), _human(p, "other")
    p.change(other, p.loop(other, IDLE))
    p.change(h, p.loop(h, IDLE))
    p.step([h, other])
    before = _snap(p, [h, other])
    in_use = p.pool.in_use
    with pytest.raises(PoseStackOverflow) as ei:
        p.chain(h, [LONG, *SHORT[:6], IDLE], blend=1.0)
    assert str(ei.value).startswith("h: an eighth pose")
    assert _snap(p, [h, other]) == before and p.pool.in_use == in_use
    p.change(h, p.chain(h, [LONG, *SHORT[:5], IDLE], blend=1.0))   # seven fit
    for _ in range(30):
        p.step([h, other])
        poses = p.sample([h, other])
        assert h.poses_refused == 0 and (not engine or poses.is_finite())
        p.flush()
    assert p.pool.in_use == p.tasks_out([h, other])
    _plays_on(p, h, [other])


def test_the_refused_pose_is_the_same_in_the_engine_and_the_reference():
    """The engine and the reference model (anim.reference) refuse the same pose on the
    same updates and show the same poses then, bit for bit (0x00104ce0, L257)."""
    p, r = _player(), Reference()
    (h, other), (rh, rother) = _eighth(p), _eighth(r)
    refused = 0
    for u in range(30):
        p.step([h, other])
        r.step([rh, rother])
        poses, refs = p.sample([h, other]), r.sample([rh, rother])
        assert (h.poses_refused, other.poses_refused) == (rh.poses_refused, rother.poses_refused), u
        refused += h.poses_refused
        for i, ref in enumerate(refs):
            vel, root, rot, tag = ref.arrays()
            assert np.array_equal(poses.rot[:, :, i].T.view(np.uint32), rot.view(np.uint32)), (u, i)
            assert np.array_equal(poses.vel[:, i].view(np.uint32), vel.view(np.uint32)), (u, i)
            assert np.array_equal(poses.root[:, i].view(np.uint32), root.view(np.uint32)), (u, i)
            assert np.array_equal(poses.tag[:, i], tag), (u, i)
        p.flush()
        r.flush()
        assert engine_state(p, [h, other]) == reference_state(r, [rh, rother]), u
    assert p.stats.poses_refused == refused > 0


def test_an_eighth_pose_in_a_scenario_is_counted_in_the_trace():
    from scuffle.anim.data.clip import encode_clip
    import json

    text = "updates = 40\n"
    for anim_id in (LONG, *SHORT[:6], IDLE):
        d, k = encode_clip(SET.clip(anim_id))
        text += f'[[sets.s.clips]]\nid = {anim_id}\ndescriptor = "{d.hex()}"\nkeyframes = "{k.hex()}"\n'
        text += "range = { flags = 0x1000 }\n"
    text += '[[humans]]\nname = "a"\nset = "s"\n'
    text += '[[commands]]\nupdate = 0\nhuman = "a"\nloop = 388\n'
    text += f'[[commands]]\nupdate = 1\nhuman = "a"\nplay = {[LONG, *SHORT[:6], IDLE]}\nblend = 1.0\n'
    out = io.StringIO()
    run_scenario(parse_scenario(text, "pose.toml"), out)
    recs = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(recs) == 40                                     # the run went on
    counted = [r["update"] for r in recs if "poses_refused" in r]
    assert counted and all(r["poses_refused"] == 1 for r in recs if "poses_refused" in r)
    assert recs[-1]["anim"] == IDLE and "poses_refused" not in recs[0]


# ---------------------------------------------------------------- the early finish above 6

def _loops(p, h, n: int) -> None:
    for _ in range(n):
        p.push(h, p.loop(h, IDLE))


def _world(engine: bool, **kw):
    """A Player (``engine``) or the reference model (anim.reference) with options ``kw``,
    and a human of SET for it."""
    if engine:
        return _player(**kw), CharacterInstance(SET, "h")
    return Reference(PlayerOptions(**kw)), RefInstance(SET, "h")


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "reference"])
@pytest.mark.parametrize("size, finished", [(6, False), (7, True)])
def test_the_newest_fade_finishes_early_when_a_stack_holds_more_than_6(size, finished, engine):
    """A fade with a long time sits on top of ``size`` tasks; a push finishes it early
    (advanced by its remaining time: it and the tasks it covers go) only above 6; the
    engine and the reference model alike."""
    p, h = _world(engine)
    _loops(p, h, size - 2)
    new = p.loop(h, A, held=0x1)
    p.insert_bottom(h, new)
    f = p.fade(h, 5.0, held=0x20)
    f.incoming = new
    p.push(h, f)
    assert len(h.stack) == size and h.record.flags == 0x21
    p.push(h, p.loop(h, B))
    if finished:
        assert f.released and f.elapsed == f.fade_time
        assert [t.anim_id() for t in h.stack] == [A, B]
        p.flush()
        assert h.record.flags == 0x1                             # the fade's release cleared its 0x20
        assert p.pool.in_use == p.tasks_out([h]) == 2
    else:
        assert not f.released and len(h.stack) == size + 1 and f.elapsed == 0.0


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "reference"])
@pytest.mark.parametrize("above, size, finished", [(6, 7, True), (7, 7, False), (7, 8, True)])
def test_the_early_finish_threshold_is_an_option(above, size, finished, engine):
    p, h = _world(engine, early_finish_above=above)
    _loops(p, h, size - 2)
    new = p.loop(h, A)
    p.insert_bottom(h, new)
    f = p.fade(h, 5.0)
    f.incoming = new
    p.push(h, f)
    p.push(h, p.loop(h, B))
    assert f.released is finished


# ---------------------------------------------------------------- the clean-up above 12

@pytest.mark.parametrize("loops, cleaned", [(10, False), (11, True)])
def test_a_fade_on_a_stack_of_more_than_12_gives_back_everything_above_its_new_task(loops, cleaned):
    """``loops`` pushed loops (no fade, so no early finish), then a change with a 1 s
    fade: 12 tasks keep the fade running; 13 make its first advance give back itself and
    every task between the new one and itself, long before its time is up. (Such stacks
    need more than 7 poses, so the updates run without the sample until the fade is gone.)
    The reference model, given the same commands, has the same dump after every update."""
    p = _player()
    h = CharacterInstance(SET, "h")
    _loops(p, h, loops)
    new = p.loop(h, A)
    f = p.change(h, new, 1.0)
    assert len(h.stack) == loops + 2
    r, rh = Reference(), RefInstance(SET, "h")
    _loops(r, rh, loops)
    r.change(rh, r.loop(rh, A), 1.0)
    assert engine_state(p, [h]) == reference_state(r, [rh])
    _step(p, [h])
    _step(r, [rh])
    assert engine_state(p, [h]) == reference_state(r, [rh])
    if cleaned:
        # gone back to the pool after one update, long before its 1 s (a stale handle now)
        assert h.stack == [new] and f.released and not f.alive()
        assert h.record.anim_id == A and h.released.count(IDLE) == loops
    else:
        assert len(h.stack) == loops + 2 and not f.released
    assert p.pool.in_use == p.tasks_out([h])
    for u in range(31):
        _step(p, [h])
        _step(r, [rh])
        assert engine_state(p, [h]) == reference_state(r, [rh]), u
    assert h.stack == [new] and f.released                       # the 1 s fade is over by now
    for _ in range(10):
        assert p.update([h]).is_finite()


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "reference"])
def test_the_cleanup_threshold_is_an_option(engine):
    p, h = _world(engine, cleanup_above=20)
    _loops(p, h, 11)
    f = p.change(h, p.loop(h, A), 1.0)
    _step(p, [h])
    assert not f.released and len(h.stack) == 13


# ---------------------------------------------------------------- the 50 m/s cap

def _racer(g: Game, name: str, key_speed: float, heading: float, x: float) -> None:
    from scuffle.anim.data.animset import AnimSet
    from scuffle.anim.data.clip import author_clip
    from scuffle.anim.data.rangelist import author_range

    c = author_clip(name, 40, velocity=[(0, (0.0, key_speed, 0.0))])
    s = AnimSet.build({1: c}, {1: author_range(flags=0x1000)}, name=name)
    g.add_human(name, s, position=(x, 0.0, 0.0), heading=heading)
    g.change(name, g.player.loop(g.instance(name), 1))


def test_the_root_velocity_is_capped_at_50_per_human_through_the_ecs():
    """Three humans in one batch at rate 2.0 (CfgAnimSpeeds f1000): keys of 24, 25.5 and
    30 m/s give 48 (kept), 51 and 60 (capped to exactly 50, direction kept) m/s; the
    bodies move by that velocity x dt every update."""
    g = Game(PlayerOptions(speeds=CfgAnimSpeeds(0.75, 0.8, 2.0, 0.9)))
    try:
        for name, key, heading, x in (("slow", 24.0, 0.0, 0.0), ("edge", 25.5, 90.0, 10.0),
                                      ("fast", 30.0, -135.0, 20.0)):
            _racer(g, name, key, heading, x)
        pos0 = {n: g.body(n).position.copy() for n in ("slow", "edge", "fast")}
        for _ in range(5):
            g.step()
        speeds = {n: float(np.linalg.norm(g.body(n).velocity)) for n in ("slow", "edge", "fast")}
        assert speeds["slow"] == pytest.approx(48.0, rel=1e-3)
        assert speeds["edge"] == pytest.approx(50.0, abs=1e-9) and speeds["fast"] == pytest.approx(50.0, abs=1e-9)
        h = math.radians(-135.0)
        np.testing.assert_allclose(g.body("fast").velocity[:2] / 50.0, [-math.sin(h), math.cos(h)], atol=1e-6)
        moved = float(np.linalg.norm(g.body("fast").position - pos0["fast"]))
        assert moved == pytest.approx(5 * 50.0 / 30.0, rel=1e-6)      # changed before update 0: 5 steps
        for n in speeds:
            assert np.all(np.isfinite(g.body(n).position))
    finally:
        g.close()
