"""Prepared commands (anim.playback.recipe: commands write rows, no
per-task Python object on the hot path): a recipe run writes the very rows, pool
accounting, stack, queue and held flags the equivalent handle calls leave, refuses what
they refuse with nothing taken, finds its clips again when a human's set changes, and runs
on the reference engine as that engine's own handle calls.

The speed is measured by ``scuffle bench --crowd realistic`` (``command_cpu_us`` against
``command_cpu_us_handles``), never here.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from scuffle.anim.engine.callbacks import Callback
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.maths.pose import PoseStackOverflow
from scuffle.anim.playback.recipe import (Arg, ClipStep, Command, DirectionStep, GaitStep, LoopStep, MixStep, PickStep,
                                          Place, Recipe, RecipeError)
from scuffle.anim.reference import Reference, RefInstance, engine_state, reference_state
from scuffle.anim.engine.stack import AnimLimitError, CharacterInstance, QueueFull, StackFull, TaskPoolExhausted
from scuffle.anim.playback.tasks import (LOCOMOTION_FLAGS, ClipTask, FadeTask, GaitTask, HeldFlags, TaskFlags,
                                TaskType)
from scuffle.game.fighters.moves import GAIT_IDS, Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.tools.bench import DIRECTION_BASE, crowd_set

from budget import examples

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

W = int(HeldFlags.WINDUP)
WALK = int(LOCOMOTION_FLAGS | TaskFlags.CONTINUOUS)
ATTACKS = (Move.JAB, Move.KICK, Move.CROSS, Move.HOOK)
PACES = (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT)

END = "test.recipes.end"            # the end callbacks' kind (registered by _world; its handler notes the call)
KEPT = Callback(END, ())

def _steer_walk(p, i, x, k, fade):
    """A steering walk start's handle calls: the running gait's set_target, else the walk
    start (its clip handing over to a gait) under the fade."""
    g = p.running(i, TaskType.GAIT)
    if g is not None:
        g.set_target(x)
        return
    p.change(i, p.clip(i, Move.WALK_START, p.gait(i, GAIT_IDS, target=x, value=0.0, flags=WALK)), fade)


# every recipe shape: (recipe, params maker, the equivalent handle calls)
SHAPES = {
    # the walk started, or the walk already running steered (Recipe.steer)
    "steer": (Recipe(Place.CHANGE, (ClipStep(Move.WALK_START),
                                    GaitStep(GAIT_IDS, target=Arg(1), value=0.0, flags=WALK)), fade=Arg(0), steer=True),
              lambda x, k, fade: (fade, x),
              _steer_walk),
    "walk_start": (Recipe(Place.CHANGE, (ClipStep(Move.WALK_START),
                                         GaitStep(GAIT_IDS, target=Arg(1), value=0.0, flags=WALK)), fade=Arg(0)),
                   lambda x, k, fade: (fade, x),
                   lambda p, i, x, k, fade: p.change(i, p.clip(i, Move.WALK_START, p.gait(
                       i, GAIT_IDS, target=x, value=0.0, flags=WALK)), fade)),
    "gait_value": (Recipe(Place.CHANGE, (GaitStep(GAIT_IDS, target=Arg(0), value=Arg(1)),), fade=0.3),
                   lambda x, k, fade: (x, 4.0 - x),
                   lambda p, i, x, k, fade: p.change(i, p.gait(i, GAIT_IDS, target=x, value=4.0 - x), 0.3)),
    "gait_alone": (Recipe(Place.PUSH, (GaitStep(GAIT_IDS, target=Arg(0), flags=0),)),
                   lambda x, k, fade: (x * 1.1 - 0.2,),
                   lambda p, i, x, k, fade: p.push(i, p.gait(i, GAIT_IDS, target=x * 1.1 - 0.2, flags=0))),
    "attack": (Recipe(Place.CHANGE, (ClipStep(Arg(1), blend=0.1, held=W), LoopStep(Move.FIGHT_IDLE)), fade=Arg(0)),
               lambda x, k, fade: (fade, ATTACKS[k % 4]),
               lambda p, i, x, k, fade: p.change(i, p.clip(i, ATTACKS[k % 4], p.loop(i, Move.FIGHT_IDLE), blend=0.1,
                                                            held=W), fade)),
    "combo": (Recipe(Place.CHANGE, (ClipStep(Move.JAB, blend=0.1, held=W), ClipStep(Move.CROSS, blend=0.1),
                                    LoopStep(Move.FIGHT_IDLE)), fade=Arg(0)),
              lambda x, k, fade: (fade,),
              lambda p, i, x, k, fade: p.change(i, p.chain(i, [Move.JAB, Move.CROSS, Move.FIGHT_IDLE], blend=0.1,
                                                          held=W), fade)),
    "flags": (Recipe(Place.CHANGE, (ClipStep(int(Move.HIT_FRONT), flags=0x13, held=0x400000),
                                    LoopStep(Move.IDLE, flags=0x1)), fade=0.2),
              lambda x, k, fade: (),
              lambda p, i, x, k, fade: p.change(i, p.clip(i, int(Move.HIT_FRONT), p.loop(i, Move.IDLE, flags=0x1),
                                                          flags=0x13, held=0x400000), 0.2)),
    "clip_alone": (Recipe(Place.CHANGE, (ClipStep(Arg(0)),), fade=Arg(1)),
                   lambda x, k, fade: (ATTACKS[k % 4], fade),
                   lambda p, i, x, k, fade: p.change(i, p.clip(i, ATTACKS[k % 4]), fade)),
    "push": (Recipe(Place.PUSH, (ClipStep(Move.HIT_BACK, held=W), LoopStep(Move.IDLE))),
             lambda x, k, fade: (),
             lambda p, i, x, k, fade: p.push(i, p.clip(i, Move.HIT_BACK, p.loop(i, Move.IDLE), held=W))),
    "queued": (Recipe(Place.ENQUEUE, (ClipStep(Arg(0), blend=0.1), LoopStep(Move.FIGHT_IDLE))),
               lambda x, k, fade: (ATTACKS[k % 4],),
               lambda p, i, x, k, fade: p.enqueue(i, p.clip(i, ATTACKS[k % 4], p.loop(i, Move.FIGHT_IDLE), blend=0.1))),
    # two steps whose ids are both given at run time, from the same few ids (the fight rules'
    # clip-to-loop: an id met as the clip in one run is the loop in another, or both at once)
    "two_args": (Recipe(Place.CHANGE, (ClipStep(Arg(1), blend=0.1, held=W), LoopStep(Arg(2), flags=0x1)),
                        fade=Arg(0)),
                 lambda x, k, fade: (fade, ATTACKS[k % 4], ATTACKS[(k // 4) % 4]),
                 lambda p, i, x, k, fade: p.change(i, p.clip(i, ATTACKS[k % 4], p.loop(i, ATTACKS[(k // 4) % 4],
                                                                                       flags=0x1),
                                                             blend=0.1, held=W), fade)),
    # end callbacks as data: a constant one and one given at run time (the fight rules' shapes)
    "ends": (Recipe(Place.CHANGE, (ClipStep(Arg(1), held=W, on_end=Arg(2)), LoopStep(Move.FIGHT_IDLE, on_end=KEPT)),
                    fade=Arg(0)),
             lambda x, k, fade: (fade, ATTACKS[k % 4], Callback(END, (k, "attack"))),
             lambda p, i, x, k, fade: p.change(i, p.clip(i, ATTACKS[k % 4], p.loop(i, Move.FIGHT_IDLE, on_end=KEPT),
                                                         held=W, on_end=Callback(END, (k, "attack"))), fade)),
    "ends_walk": (Recipe(Place.CHANGE, (ClipStep(Move.WALK_START, on_end=KEPT),
                                        GaitStep(GAIT_IDS, target=Arg(0), value=0.0, flags=WALK)), fade=0.1),
                  lambda x, k, fade: (x,),
                  lambda p, i, x, k, fade: p.change(i, p.clip(i, Move.WALK_START, p.gait(
                      i, GAIT_IDS, target=x, value=0.0, flags=WALK), on_end=KEPT), 0.1)),
    "ends_push": (Recipe(Place.PUSH, (ClipStep(Move.HIT_BACK, on_end=KEPT), LoopStep(Move.IDLE, on_end=Arg(0)))),
                  lambda x, k, fade: (Callback(END, (k,)) if k % 2 else None,),
                  lambda p, i, x, k, fade: p.push(i, p.clip(i, Move.HIT_BACK, p.loop(
                      i, Move.IDLE, on_end=Callback(END, (k,)) if k % 2 else None), on_end=KEPT))),
    "ends_queued": (Recipe(Place.ENQUEUE, (ClipStep(Arg(0), blend=0.1, on_end=KEPT), LoopStep(Move.FIGHT_IDLE))),
                    lambda x, k, fade: (ATTACKS[k % 4],),
                    lambda p, i, x, k, fade: p.enqueue(i, p.clip(i, ATTACKS[k % 4], p.loop(i, Move.FIGHT_IDLE),
                                                                 blend=0.1, on_end=KEPT))),
    # types 10, 11 and 13: their numbers given at run time (clamped, wrapped: out of range too) or fixed
    "mix": (Recipe(Place.CHANGE, (MixStep(Move.WALK, Move.JOG, weight=Arg(1)),), fade=Arg(0)),
            lambda x, k, fade: (fade, x / 4.0 - 0.1),
            lambda p, i, x, k, fade: p.change(i, p.mix(i, Move.WALK, Move.JOG, weight=x / 4.0 - 0.1), fade)),
    "mix_push": (Recipe(Place.PUSH, (MixStep(Move.IDLE, Move.FIGHT_IDLE, weight=0.7, flags=0x1),)),
                 lambda x, k, fade: (),
                 lambda p, i, x, k, fade: p.push(i, p.mix(i, Move.IDLE, Move.FIGHT_IDLE, weight=0.7, flags=0x1))),
    "pick": (Recipe(Place.CHANGE, (PickStep(PACES, 1.0, value=Arg(1)),), fade=Arg(0)),
             lambda x, k, fade: (fade, x * 0.75),
             lambda p, i, x, k, fade: p.change(i, p.pick(i, list(PACES), 1.0, value=x * 0.75), fade)),
    "pick_queued": (Recipe(Place.ENQUEUE, (PickStep(PACES, 1.3, value=Arg(0), flags=0x13),)),
                    lambda x, k, fade: (x - 0.5,),
                    lambda p, i, x, k, fade: p.enqueue(i, p.pick(i, list(PACES), 1.3, value=x - 0.5, flags=0x13))),
    "direction": (Recipe(Place.CHANGE, (DirectionStep(DIRECTION_BASE, direction=Arg(1)),), fade=Arg(0)),
                  lambda x, k, fade: (fade, x * 2.0 - 1.0),
                  lambda p, i, x, k, fade: p.change(i, p.direction(i, DIRECTION_BASE, direction=x * 2.0 - 1.0), fade)),
    "direction_push": (Recipe(Place.PUSH, (DirectionStep(DIRECTION_BASE, direction=7.6, flags=0x1),)),
                       lambda x, k, fade: (),
                       lambda p, i, x, k, fade: p.push(i, p.direction(i, DIRECTION_BASE, direction=7.6, flags=0x1))),
}


def handle_calls(p, inst, kind: str, x: float, k: int, fade) -> None:
    """The handle calls of a recipe shape, with the recipe's refusal rule: the pool checked
    for every task first, the tasks made before a refusal given back."""
    recipe, _, calls = SHAPES[kind]
    # a steering command on a human whose gait runs makes no task, so a full pool refuses
    # nothing (PreparedCommands.run checks the running gait before anything else)
    if not (recipe.steer and p.running(inst, TaskType.GAIT) is not None):
        p.pool.require(Command(recipe).n_tasks)
    made: list = []

    class Recording:
        def __getattr__(self, name):
            f = getattr(p, name)
            if name in ("loop", "clip", "gait", "chain", "mix", "pick", "direction"):
                def make(*a, **kw):
                    t = f(*a, **kw)
                    made.append(t)
                    return t
                return make
            return f
    try:
        calls(Recording(), inst, x, k, fade)
    except BaseException:
        t = made[-1] if made else None
        if t is not None and t.alive() and not t.tstore.placed[t.trow]:
            p.discard(t)
        raise


def tables(p: Player) -> dict:
    """Every row the commands write, as plain values: the task, cursor, fade and gait tables
    (every column, live, gen, the free list, the keyed columns, the rows to reset), the
    human table, the pool's accounting and the deferred list (not ``views``: handles). Read
    raw, so the command buffer is written first (every engine reader does it)."""
    p.prepared.commands.apply()
    st = p.stores
    out: dict = {}
    for name in ("tasks", "cursors", "fades", "gaits"):
        t = getattr(st, name)
        for c in (*t._columns, "live", "gen"):
            a = np.asarray(getattr(t, c))
            out[f"{name}.{c}"] = a.view(np.uint8).tobytes() if a.dtype.kind == "f" else a.tolist()
        out[f"{name}.free"] = t.free_rows[:int(t.n_free[0])].tolist()
        out[f"{name}.calls"] = [(c, t.calls.get(int(i))) for c in t.ids for i in getattr(t, c)]
    h = p.batch.humans
    for c in h.COLUMNS:
        a = np.asarray(getattr(h, c))
        out[f"humans.{c}"] = a.view(np.uint8).tobytes() if a.dtype.kind == "f" else a.tolist()
    out["pool"] = (p.pool.out.tolist(), p.pool.n_out)
    out["deferred"] = p.deferred_rows.rows[:p.deferred_rows.n].tolist()
    return out


def _world(n: int, pool: int, **opts):
    p = Player(PlayerOptions(pool_size=pool, **opts))
    p.ended = []                                     # type: ignore[attr-defined]
    p.callbacks.register(END, lambda inst, *args: p.ended.append((inst.name, args)))   # type: ignore[attr-defined]
    s = crowd_set()                                  # (the demo set and a direction task's eight clips)
    hs = [CharacterInstance(s, f"h{i}") for i in range(n)]
    return p, hs


def _same(a: Player, b: Player, where: str) -> None:
    ta, tb = tables(a), tables(b)
    bad = [k for k in ta if ta[k] != tb[k]]
    assert not bad, f"{where}: {bad}"


def _refused(call, *args):
    """The type of the limit or number error ``call(*args)`` raises, or None."""
    try:
        call(*args)
    except (AnimLimitError, ValueError) as e:
        return type(e)
    return None


_command = st.tuples(st.sampled_from(sorted(SHAPES)), st.integers(0, 3), st.floats(-0.5, 4.5),
                     st.integers(0, 11), st.sampled_from([0.0, 0.2, 0.45, 0]), st.booleans())


def _plain(kind: str) -> tuple:
    return (kind, 0, 0.0, 0, 0.0, False)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cmds=st.lists(_command, min_size=1, max_size=40), pool=st.sampled_from([12, 30, 360]),
       deep=st.booleans())
# the pool all but full when a gait starts, then a steer of that gait: it makes no task, so
# neither path refuses it
@example(cmds=[_plain(k) for k in ["attack"] * 3 + ["clip_alone"] + ["attack"] * 11 + ["gait_alone", "steer"]],
         pool=12, deep=False)
def test_a_recipe_leaves_the_rows_the_handle_calls_leave(cmds, pool, deep):
    """Random recipes of every shape, params and stack states (a step between some; a small
    pool, full stacks and queues, refuse_deep_chains): after every command the two worlds'
    tables are equal, bit for bit, and a refusal is the same error in both."""
    a, ha = _world(4, pool, refuse_deep_chains=deep)
    b, hb = _world(4, pool, refuse_deep_chains=deep)
    prepared = {k: b.prepare(r) for k, (r, _, _) in SHAPES.items()}
    for j, (kind, i, x, k, fade, step) in enumerate(cmds):
        ea = _refused(handle_calls, a, ha[i], kind, x, k, fade)
        eb = _refused(b.run, hb[i], prepared[kind], *SHAPES[kind][1](x, k, fade))
        assert ea == eb, (j, kind)
        _same(a, b, f"command {j} {kind}")
        if step:
            a.step(ha)
            b.step(hb)
            a.flush()
            b.flush()
            _same(a, b, f"step after {j}")
    assert engine_state(a, ha) == engine_state(b, hb)
    assert a.ended == b.ended                        # the end callbacks ran alike (type: ignore)


def _python_writers(p: Player) -> Player:
    """``p`` with the handle calls' compiled rows turned off (a constructor's clip or gait,
    a change): the Python writers alone."""
    p.builders.direct = None
    p.builders.direct_gait = None
    p.rules.direct_change = None
    return p


def _counted(p: Player) -> dict:
    """The compiled writers' answers on ``p`` counted: rows written (``ok``) or refused (``no``)."""
    seen = {"ok": 0, "no": 0}

    def count(f):
        def call(*args):
            got = f(*args)
            seen["ok" if got >= 0 else "no"] += 1
            return got
        return call
    p.builders.direct = count(p.builders.direct)
    p.builders.direct_gait = count(p.builders.direct_gait)
    p.rules.direct_change = count(p.rules.direct_change)
    return seen


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cmds=st.lists(_command, min_size=1, max_size=40), pool=st.sampled_from([12, 30, 360]))
def test_the_handle_calls_compiled_rows_are_the_python_writers_rows(cmds, pool):
    """The handle calls' rows written by one compiled call each (cmdkernel.clip_rows for a
    constructor's clip, gait_rows for its gait, change_rows for a change) are the Python
    writers' rows, bit for bit, after every command of every shape (small pools, a step
    between some), with the same refusals and end callbacks; a table too small for the
    call (it refuses: -1) takes the Python writers, which grow it."""
    a, ha = _world(4, pool)
    b, hb = _world(4, pool)
    _python_writers(a)
    for j, (kind, i, x, k, fade, step) in enumerate(cmds):
        ea = _refused(handle_calls, a, ha[i], kind, x, k, fade)
        eb = _refused(handle_calls, b, hb[i], kind, x, k, fade)
        assert ea == eb, (j, kind)
        _same(a, b, f"command {j} {kind}")
        if step:
            for p, hs in ((a, ha), (b, hb)):
                p.step(hs)
                p.flush()
            _same(a, b, f"step after {j}")
    assert engine_state(a, ha) == engine_state(b, hb)
    assert a.ended == b.ended                        # type: ignore[attr-defined]
    assert a.pool.made == b.pool.made


def test_the_compiled_rows_run_and_a_full_table_falls_to_the_python_writers():
    """A stream of handle calls on one world runs both compiled writers, and, on tables
    grown past their first size by it, both paths' answers (rows, and a refusal taken by
    the Python writers) leave the rows the Python writers alone leave."""
    a, ha = _world(6, 360)
    b, hb = _world(6, 360)
    _python_writers(a)
    seen = _counted(b)
    for j in range(200):
        for p, hs in ((a, ha), (b, hb)):
            inst = hs[j % 6]
            if j % 3 == 2:                            # a walk start: a gait under its start clip
                p.change(inst, p.clip(inst, Move.WALK_START, p.gait(inst, GAIT_IDS, target=(j % 9) * 0.5,
                                                                    value=None if j % 2 else 0.0,
                                                                    held=j % 4)), 0.3)
            else:
                p.change(inst, p.clip(inst, Move.JAB, p.loop(inst, Move.FIGHT_IDLE, held=int(HeldFlags.WINDUP)),
                                      blend=0.1, flags=int(TaskFlags.MUTED)), 0.2)
            if j % 7 == 6:
                p.step(hs)
                p.flush()
        _same(a, b, f"change {j}")
    assert seen["ok"] > 300 and seen["no"] > 0, seen
    assert b.stores.tasks.capacity > 64 and b.stores.tasks.capacity == a.stores.tasks.capacity


def test_a_cold_install_writes_the_handle_calls_rows_in_python(monkeypatch):
    """With a compiled writer neither loaded nor cached (coldstart.kernel_ready, asked once
    per Player), the handle calls write their rows in Python, the same rows, and compile
    nothing at a command."""
    import scuffle.anim.playback.prepared as prepared_mod

    asked = []

    def cold(name, mod=None):
        asked.append(name)
        return False
    monkeypatch.setattr(prepared_mod, "kernel_ready", cold)
    a, ha = _world(3, 360)
    b, hb = _world(3, 360)
    a.prepared._direct_ok.update(clip_rows=True, change_rows=True, gait_rows=True)   # a: the compiled writers
    for j in range(12):
        for p, hs in ((a, ha), (b, hb)):
            inst = hs[j % 3]
            gait = p.gait(inst, GAIT_IDS, target=1.5) if j % 2 else p.loop(inst, Move.FIGHT_IDLE)
            p.change(inst, p.clip(inst, Move.JAB, gait, blend=0.1), 0.2)
    _same(a, b, "the handle calls")
    assert sorted(asked) == ["change_rows", "clip_rows", "gait_rows"]        # b's, once each
    assert set(a.prepared._direct_entry) == {"clip_rows", "gait_rows", "change_rows"}
    rules = b.prepared
    assert rules._direct_entry == {}
    assert rules._direct_ok == {"clip_rows": False, "change_rows": False, "gait_rows": False}


def test_every_shape_runs_in_the_compiled_call_with_the_handle_calls_rows():
    """Every recipe shape, once its set is learned, writes its rows in one compiled call
    (anim.engine.cmdkernel.run_rows: ``cmd_kernel_runs`` counts it) and leaves the handle calls'
    rows, bit for bit: gait values over the pairs and clamps, a step between the rounds."""
    a, ha = _world(4, 360)
    b, hb = _world(4, 360)
    prepared = {k: b.prepare(r) for k, (r, _, _) in SHAPES.items()}
    a.step(ha)
    b.step(hb)
    rounds = [(0.3, 0, 0.2), (1.2, 1, 0.0), (2.5, 2, 0.45), (3.99, 3, 0.2),     # each attack's id learned
              (-0.4, 1, 0.2), (4.4, 2, 0.3), (0.995, 0, 0.1), (2.0, 3, 0.2), (1.995, 1, 0.0), (2.9951, 2, 0.2)]
    for j, (x, k, fade) in enumerate(rounds):
        for kind in SHAPES:
            i = (j + len(kind)) % 4
            handle_calls(a, ha[i], kind, x, k, fade)
            before = b.cmd_kernel_runs
            place, depth = prepared[kind].place, len(hb[i].stack)
            # the early finish (a deeper stack than early_finish_above): the handle calls
            direct = depth + (1 if place == Place.CHANGE else 0) <= b.options.early_finish_above
            b.run(hb[i], prepared[kind], *SHAPES[kind][1](x, k, fade))
            if j >= 4 and direct:
                assert b.cmd_kernel_runs == before + 1, (j, kind)
            _same(a, b, f"round {j} {kind}")
        a.step(ha)
        b.step(hb)
        a.flush()
        b.flush()
        _same(a, b, f"step after round {j}")
    assert engine_state(a, ha) == engine_state(b, hb)
    assert b.cmd_kernel_runs >= 40


def test_the_direct_path_runs_and_refusals_take_nothing():
    """Once a human is in the engine the direct path writes the rows (the handle calls are
    not called); a full pool, stack or queue refuses with nothing taken and nothing changed."""
    p, hs = _world(2, 360)
    cmd = p.prepare(SHAPES["attack"][0])
    p.step(hs)
    p.run(hs[0], cmd, 0.2, Move.JAB)                 # learns the set (the handle calls)
    calls = []
    orig = p.clip
    p.clip = lambda *a, **kw: calls.append(a) or orig(*a, **kw)     # type: ignore[method-assign]
    runs = p.cmd_kernel_runs
    p.run(hs[1], cmd, 0.2, Move.JAB)
    assert calls == [] and p.cmd_kernel_runs == runs + 1      # one compiled call (anim.engine.cmdkernel)
    stack = hs[1].stack
    assert [type(t) for t in stack] == [ClipTask, FadeTask]
    assert stack[0].anim_id() == Move.JAB and stack[0].next.anim_id() == Move.FIGHT_IDLE
    assert stack[1].incoming is stack[0] and hs[1].record.anim_id == Move.JAB
    assert hs[1].record.flags & W
    # a task's handle is made on its first read and kept: the same object every time
    assert hs[1].stack[0] is stack[0] and p.running(hs[1], TaskType.CLIP) is stack[0]
    del p.clip
    # rows no one read yet get their handles on the deferred list too; the flush gives them back
    p.run(hs[0], cmd, 0.3, Move.KICK)
    p.cut(hs[0])
    pairs = p.deferred
    assert len(pairs) == 4 and all(t is not None and i is hs[0] for t, i in pairs)
    assert [type(t) for t, _ in pairs] == [ClipTask, ClipTask, FadeTask, FadeTask]
    n_out = p.pool.n_out
    p.flush()
    assert p.pool.n_out == n_out - 6 and hs[0].stack == []
    # refusals: nothing taken, the tables as they were
    tight, th = _world(1, 4)
    tight.step(th)
    c = tight.prepare(SHAPES["combo"][0])            # four tasks: the pool has four
    tight.run(th[0], c, 0.2)
    before = tables(tight)
    with pytest.raises(TaskPoolExhausted):
        tight.run(th[0], c, 0.2)
    assert tables(tight) == before
    q, qh = _world(1, 360)
    q.step(qh)
    cq = q.prepare(SHAPES["queued"][0])
    for _ in range(10):
        q.run(qh[0], cq, Move.JAB)
    before = tables(q)
    with pytest.raises(QueueFull):
        q.run(qh[0], cq, Move.JAB)
    assert tables(q)["pool"] == before["pool"] and len(qh[0].queue) == 10
    s, sh = _world(1, 360, early_finish_above=40)
    s.step(sh)
    cp = s.prepare(SHAPES["push"][0])
    for _ in range(18):
        s.run(sh[0], cp)
    n_out = s.pool.n_out
    with pytest.raises(StackFull):
        s.run(sh[0], cp)
    assert s.pool.n_out == n_out


def test_a_deep_chain_is_refused_with_refuse_deep_chains():
    """A recipe whose hand-over windows nest more than seven poses: PoseStackOverflow from
    the change, nothing left taken (the option on), played as the original without it."""
    p, hs = _world(1, 360, refuse_deep_chains=True)
    p.step(hs)
    chain = tuple(ClipStep(Move.JAB, blend=100.0) for _ in range(8)) + (LoopStep(Move.IDLE),)
    deep = p.prepare(Recipe(Place.CHANGE, chain))
    with pytest.raises(PoseStackOverflow):
        p.run(hs[0], deep)
    assert p.pool.n_out == 0 and hs[0].stack == []


def test_a_new_set_or_a_replaced_clip_is_found_again():
    """The per-set cache: a human given another set (a clip replaced with with_clip) gets
    that set's clip, rate and cursor, the same rows as the handle calls on it."""
    s = demo_set()
    kick = s.clip(Move.KICK)
    assert kick.duration != s.clip(Move.JAB).duration
    other = s.with_clip(Move.JAB, kick, s.range(Move.JAB))
    worlds = []
    for use in (False, True):
        p = Player(PlayerOptions())
        h = CharacterInstance(s, "h")
        p.step([h])
        cmd = p.prepare(SHAPES["attack"][0])
        for aset in (s, other, s, other):
            h.anim_set = aset
            if use:
                p.run(h, cmd, 0.2, Move.JAB)
            else:
                handle_calls(p, h, "attack", 0.0, 0, 0.2)
            p.step([h])
            p.flush()
        worlds.append((p, h))
    _same(worlds[0][0], worlds[1][0], "after the set changes")
    p, h = worlds[1]
    assert h.stack[0].cursor.clip is kick and h.stack[0].anim_id() == Move.JAB


def test_prepare_refuses_a_bad_recipe_and_run_the_wrong_params():
    """RecipeError names the field; run checks the number of params."""
    p = Player()
    bad = [
        (Recipe("jump", (LoopStep(1),)), "place"),
        (Recipe(Place.CHANGE, ()), "at least one"),
        (Recipe(Place.CHANGE, (LoopStep(1), LoopStep(2))), "tasks[0]"),
        (Recipe(Place.CHANGE, (ClipStep("JAB"),)), "tasks[0].anim"),
        (Recipe(Place.CHANGE, (ClipStep(1, blend=-1.0),)), "blend"),
        (Recipe(Place.CHANGE, (ClipStep(1, flags=1 << 31),)), "flags"),
        (Recipe(Place.CHANGE, (LoopStep(1),), fade=float("inf")), "fade"),
        (Recipe(Place.CHANGE, (GaitStep((1, 2, 3)),)), "5 anim ids"),
        (Recipe(Place.PUSH, ("loop",)), "a LoopStep, a ClipStep or a GaitStep"),
        (Recipe(Place.CHANGE, (MixStep(1, 2), LoopStep(1))), "tasks[0]: MixStep before the last task"),
        (Recipe(Place.CHANGE, (MixStep(Arg(0), 2),)), "tasks[0].a: an anim id"),
        (Recipe(Place.CHANGE, (MixStep(1, 2, weight=float("nan")),)), "tasks[0].weight"),
        (Recipe(Place.CHANGE, (PickStep((1, 2, 3)),)), "4 anim ids"),
        (Recipe(Place.CHANGE, (PickStep((1, 2, 3, 4), rate=Arg(0)),)), "tasks[0].rate: a number"),
        (Recipe(Place.CHANGE, (PickStep((1, 2, 3, 4), rate=-1.0),)), "tasks[0].rate"),
        (Recipe(Place.CHANGE, (DirectionStep(Arg(0)),)), "tasks[0].base: an anim id"),
        (Recipe(Place.CHANGE, (DirectionStep(600, direction="n"),)), "tasks[0].direction"),
        (Recipe(Place.CHANGE, (DirectionStep(600, flags=-1),)), "tasks[0].flags"),
        (Recipe(Place.CHANGE, (LoopStep(1, on_end=print),)), r"tasks[0].on_end: a callable is not data"),
        (Recipe(Place.CHANGE, (ClipStep(1, on_end=Callback("", ())),)), "tasks[0].on_end.kind"),
        (Recipe(Place.CHANGE, (ClipStep(1, on_end=Callback("k", (object(),))),)), "tasks[0].on_end"),
    ]
    for recipe, field in bad:
        with pytest.raises(RecipeError, match=field.replace("[", r"\[").replace("]", r"\]")):
            p.prepare(recipe)
    cmd = p.prepare(SHAPES["attack"][0])
    h = CharacterInstance(demo_set(), "h")
    with pytest.raises(RecipeError, match="2 params"):
        p.run(h, cmd, 0.2)
    with pytest.raises(RecipeError, match="a Command"):
        p.run(h, SHAPES["attack"][0], 0.2, 1)


def test_a_run_time_end_callback_that_is_not_plain_data_takes_the_handle_calls():
    """An Arg end callback given at run time: a Callback is written by the direct path; a
    tuple ``(kind, args)`` (made a Callback) or a callable goes through the handle calls
    (their checks and conversion); bad data is refused by them (CallbackError, a
    ValueError) with nothing taken."""
    p, hs = _world(2, 360)
    cmd = p.prepare(SHAPES["ends"][0])
    p.step(hs)
    p.run(hs[0], cmd, 0.2, Move.JAB, KEPT)           # learns the set
    calls = []
    orig = p.clip
    p.clip = lambda *a, **kw: calls.append(a) or orig(*a, **kw)     # type: ignore[method-assign]
    p.run(hs[1], cmd, 0.2, Move.JAB, Callback(END, (1, "attack")))
    assert calls == []                               # the direct path
    assert hs[1].stack[0].on_end == Callback(END, (1, "attack")) and hs[1].stack[0].next.on_end == KEPT
    p.run(hs[1], cmd, 0.2, Move.JAB, (END, (2, "attack")))
    assert len(calls) == 1 and hs[1].stack[0].on_end == Callback(END, (2, "attack"))
    n_out = p.pool.n_out
    with pytest.raises(ValueError, match="on_end"):
        p.run(hs[1], cmd, 0.2, Move.JAB, (END, (object(),)))
    assert p.pool.n_out == n_out and len(calls) == 2
    del p.clip


def test_a_recipe_and_a_command_are_plain_data():
    """A Recipe pickles as itself; a Command pickles as its recipe (its per-set finds are
    not state) and runs the same after."""
    r = SHAPES["walk_start"][0]
    assert pickle.loads(pickle.dumps(r)) == r
    p, hs = _world(2, 360)
    cmd = p.prepare(r)
    p.step(hs)
    p.run(hs[0], cmd, 0.3, 2.0)
    again = pickle.loads(pickle.dumps(cmd))
    assert again.recipe == cmd.recipe and again._sets == {}
    p.run(hs[1], again, 0.3, 2.0)
    g = hs[1].stack[0].next                          # the walk start's next task: its handle made now
    assert isinstance(g, GaitTask) and g.target == 2.0 and g.value == 0.0 and g.ids == tuple(GAIT_IDS)
    assert engine_state(p, [hs[0]])[2:] == engine_state(p, [hs[1]])[2:]


def test_the_reference_runs_a_recipe_as_its_own_handle_calls():
    """Reference.run expands a recipe into the reference's constructors and stack rules:
    the engine running recipes and the reference running them dump the same state, update
    after update."""
    s = crowd_set()
    p, ref = Player(), Reference()
    hp = [CharacterInstance(s, f"h{i}") for i in range(3)]
    hr = [RefInstance(s, f"h{i}") for i in range(3)]
    cp = {k: p.prepare(r) for k, (r, _, _) in SHAPES.items()}
    cr = {k: ref.prepare(r) for k, (r, _, _) in SHAPES.items()}
    kinds = ["walk_start", "attack", "mix", "combo", "queued", "pick", "gait_value", "flags", "direction", "push",
             "clip_alone", "mix_push", "gait_alone", "ends", "pick_queued", "ends_walk", "ends_push", "direction_push",
             "ends_queued"]
    for w in (p, ref):
        w.callbacks.register(END, lambda inst, *args: None)
    for u in range(2 * len(kinds)):
        p.step(hp)
        ref.step(hr)
        p.flush()
        ref.flush()
        kind = kinds[u % len(kinds)]
        args = SHAPES[kind][1](u * 0.17, u, 0.2)
        i = u % 3
        for w, hs, c in ((p, hp, cp), (ref, hr, cr)):
            try:
                w.run(hs[i], c[kind], *args)
            except AnimLimitError:
                pass
        p.flush()
        ref.flush()
        assert engine_state(p, hp) == reference_state(ref, hr), (u, kind)


@pytest.mark.parametrize("n", [1, 24])
def test_a_handler_gets_the_task_of_a_recipe_row_no_one_read(n):
    """EventDispatch makes a recipe's events with the task that played them, even when that
    row's handle was never made (the direct path makes none): a handler's ``fe.task`` is the
    row's handle, playing ``fe.anim_id`` (a few humans and a crowd: both dispatch paths)."""
    from scuffle.anim.data.clip import EventType
    from scuffle.game.runtime.world import Game

    seen: list = []
    with Game() as g:
        for i in range(n):
            g.add_human(f"h{i}", demo_set(), position=(2.0 * i, 0.0, 0.0))
        p = g.player
        for t in EventType:
            g.ctx.on(t, lambda ctx, ent, fe: seen.append(fe))
        cmd = p.prepare(Recipe(Place.CHANGE, (ClipStep(Arg(1)), LoopStep(Move.FIGHT_IDLE)), fade=Arg(0)))
        insts = [g.instance(f"h{i}") for i in range(n)]
        for inst in insts:                           # the first runs learn the set's ids (handle calls)
            p.run(inst, cmd, 0.0, Move.JAB)
            p.run(inst, cmd, 0.0, Move.KICK)
        g.step()
        calls: list = []
        orig = p.clip
        p.clip = lambda *a, **kw: calls.append(a) or orig(*a, **kw)     # type: ignore[method-assign]
        for _ in range(3):
            for inst in insts:
                p.run(inst, cmd, 0.0, Move.KICK)
            seen.clear()
            for _ in range(30):
                g.step()
            assert seen, "the clips fired no event a handler saw"
            bad = [(fe, fe.task) for fe in seen if fe.task is None or fe.task.anim_id() != fe.anim_id]
            assert not bad, bad[:3]
        assert calls == [], "the direct path did not run"


def test_the_reference_checks_a_recipe_as_the_engine_does():
    """The reference prepares a recipe by its own checks (anim.reference.commands), not the
    engine's: both refuse the same bad recipes with the same RecipeError line, take the
    same good ones with the same number of params, and refuse a run given the wrong
    number of params."""
    bad = [
        ("change", (LoopStep(1),)), Recipe("sideways", (LoopStep(1),)), Recipe(Place.CHANGE, ()),
        Recipe(Place.PUSH, (LoopStep(1), LoopStep(2))), Recipe(Place.PUSH, (ClipStep(1), 7)),
        Recipe(Place.PUSH, (LoopStep(True),)), Recipe(Place.PUSH, (LoopStep(1.5),)),
        Recipe(Place.PUSH, (LoopStep(1, flags=-1),)), Recipe(Place.PUSH, (LoopStep(1, flags=2 ** 31),)),
        Recipe(Place.PUSH, (LoopStep(1, held=2 ** 63),)), Recipe(Place.PUSH, (LoopStep(1, held=True),)),
        Recipe(Place.PUSH, (ClipStep(1, blend=-0.1),)), Recipe(Place.PUSH, (ClipStep(1, blend=Arg(0)),)),
        Recipe(Place.PUSH, (ClipStep(1, blend=float("inf")),)), Recipe(Place.PUSH, (ClipStep(1, blend=1e39),)),
        Recipe(Place.PUSH, (ClipStep(1, on_end=print),)), Recipe(Place.PUSH, (ClipStep(1, on_end=("k", [1])),)),
        Recipe(Place.PUSH, (LoopStep(1, on_end=("k", (object(),))),)),
        Recipe(Place.PUSH, (LoopStep(1, on_end=Callback("", ())),)),
        Recipe(Place.PUSH, (LoopStep(1, on_end=Callback("k", (float("nan"),))),)),
        Recipe(Place.PUSH, (GaitStep((1, 2, 3)),)), Recipe(Place.PUSH, (GaitStep((Arg(0), 1, 2, 3, 4)),)),
        Recipe(Place.PUSH, (GaitStep((1, 2, 3, 4, "5")),)), Recipe(Place.PUSH, (GaitStep(GAIT_IDS, target="x"),)),
        Recipe(Place.PUSH, (GaitStep(GAIT_IDS, value=float("nan")),)),
        Recipe(Place.CHANGE, (LoopStep(1),), fade=-1.0), Recipe(Place.CHANGE, (LoopStep(1),), fade=Arg(-1)),
        Recipe(Place.PUSH, (LoopStep(Arg("a")),)), Recipe(Place.CHANGE, (LoopStep(1),), fade=None),
        Recipe(Place.PUSH, (MixStep(1, 2), LoopStep(1))), Recipe(Place.PUSH, (MixStep(Arg(0), 2),)),
        Recipe(Place.PUSH, (MixStep(1, True),)), Recipe(Place.PUSH, (MixStep(1, 2, weight=float("inf")),)),
        Recipe(Place.PUSH, (MixStep(1, 2, weight=Arg(-1)),)), Recipe(Place.PUSH, (MixStep(1, 2, flags=2 ** 31),)),
        Recipe(Place.PUSH, (PickStep((1, 2, 3)),)), Recipe(Place.PUSH, (PickStep((1, 2, Arg(0), 4)),)),
        Recipe(Place.PUSH, (PickStep((1, 2, 3, 4), rate=Arg(0)),)), Recipe(Place.PUSH, (PickStep((1, 2, 3, 4), -1.0),)),
        Recipe(Place.PUSH, (PickStep((1, 2, 3, 4), value="v"),)), Recipe(Place.PUSH, (DirectionStep(Arg(0)),)),
        Recipe(Place.PUSH, (DirectionStep(1.5),)), Recipe(Place.PUSH, (DirectionStep(600, direction=1e39),)),
        Recipe(Place.PUSH, (DirectionStep(600, flags=True),)),
    ]
    p, ref = Player(), Reference()
    for r in bad:
        with pytest.raises(RecipeError) as engine:
            p.prepare(r)
        with pytest.raises(RecipeError) as reference:
            ref.prepare(r)
        assert str(reference.value) == str(engine.value), r
    s = demo_set()
    h, hr = CharacterInstance(s, "h"), RefInstance(s, "h")
    for name, (r, args, _) in SHAPES.items():
        cmd, rcmd = p.prepare(r), ref.prepare(r)
        assert rcmd.n_params == cmd.n_params and rcmd.n_tasks == cmd.n_tasks, name
        wrong = (0.0,) * (cmd.n_params + 1)
        with pytest.raises(RecipeError) as engine:
            p.run(h, cmd, *wrong)
        with pytest.raises(RecipeError) as reference:
            ref.run(hr, rcmd, *wrong)
        assert str(reference.value) == str(engine.value).replace("Command(", "RefCommand("), name


def test_the_blends_edge_numbers_leave_the_handle_calls_rows():
    """A mix's weight, a pick's value and a direction at their edges (-0.0, a tiny negative
    direction that wraps to 8.0, the thresholds, far out of range) written by the compiled
    writers (``cmd_kernel_runs`` counts them) leave the handle calls' rows, bit for bit."""
    a, ha = _world(4, 360)
    b, hb = _world(4, 360)
    cmds = {k: b.prepare(SHAPES[k][0]) for k in ("mix", "pick", "direction")}
    # a recipe too long for a buffer row: written at once (cmdkernel.run_rows)
    long_mix = b.prepare(Recipe(Place.CHANGE, (ClipStep(Move.JAB), ClipStep(Move.CROSS), ClipStep(Move.JAB),
                                               ClipStep(Move.HOOK), MixStep(Move.WALK, Move.JOG, weight=Arg(1))),
                                fade=Arg(0)))
    for w, hs in ((a, ha), (b, hb)):
        w.step(hs)
    edges = [-0.0, 0.0, -1e-300, 0.5, 0.4999999999, 1.0, 1e30, -1e30, 0.51, 1.51, 2.51, 3.0, 2.5099999, 7.5, 8.0,
             -8.0, 15.999999999]
    learnt = False
    for j, v in enumerate(edges * 2):
        for kind in cmds:
            i = j % 4
            x = {"mix": v, "pick": v, "direction": v}[kind]
            calls = {"mix": lambda p, h: p.change(h, p.mix(h, Move.WALK, Move.JOG, weight=x), 0.2),
                     "pick": lambda p, h: p.change(h, p.pick(h, list(PACES), 1.0, value=x), 0.2),
                     "direction": lambda p, h: p.change(h, p.direction(h, DIRECTION_BASE, direction=x), 0.2)}[kind]
            calls(a, ha[i])
            before = b.cmd_kernel_runs
            b.run(hb[i], cmds[kind], 0.2, x)
            if learnt:
                assert b.cmd_kernel_runs == before + 1, (j, kind)
            _same(a, b, f"{kind} {v!r}")
        i = (j + 1) % 4
        a.change(ha[i], a.clip(ha[i], Move.JAB, a.clip(ha[i], Move.CROSS, a.clip(ha[i], Move.JAB, a.clip(
            ha[i], Move.HOOK, a.mix(ha[i], Move.WALK, Move.JOG, weight=v))))), 0.2)
        before = b.cmd_kernel_runs
        b.run(hb[i], long_mix, 0.2, v)
        if learnt:
            assert b.cmd_kernel_runs == before + 1, (j, "long_mix")
        _same(a, b, f"long mix {v!r}")
        learnt = True
        for _ in range(10):                            # the fades done: shallow stacks
            for w, hs in ((a, ha), (b, hb)):
                w.step(hs)
                w.flush()
        _same(a, b, f"steps after {v!r}")


def test_learning_many_ids_makes_the_plan_once_and_runs_as_before(monkeypatch):
    """A command's plan (what the direct path's checks take from the command and the
    options) is made once per set, however many ids are learnt for it (a fight's warm-up
    learns each of its moves): the plan kept is the one ``_plan`` gives, and a run after
    the learns leaves the rows the handle calls leave."""
    from scuffle.anim.playback import prepared

    made = []
    real = prepared._plan

    def counted(command, opts):
        made.append(command)
        return real(command, opts)

    monkeypatch.setattr(prepared, "_plan", counted)
    worlds = []
    for use in (False, True):
        p, hs = _world(1, 64)
        h = hs[0]
        p.register(h.anim_set)                    # (as Game.add_human: learn adds no clip to the bank)
        p.step([h])
        cmd = p.prepare(SHAPES["attack"][0])
        if use:
            for m in ATTACKS:
                p.learn(h, cmd, 0.2, m)
            assert made == [cmd], made            # once, at the first learn that made it ready
            assert p.knows(h, cmd, 0.2, Move.KICK)
            assert p.prepared._templates(cmd, h.anim_set).plan == real(cmd, p.options)
            p.run(h, cmd, 0.2, Move.KICK)
        else:
            handle_calls(p, h, "attack", 0.0, 1, 0.2)
        p.step([h])
        p.flush()
        worlds.append(p)
    _same(worlds[0], worlds[1], "after the learns and a run")
