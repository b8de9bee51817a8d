"""An update is never half done.

A game's event handler, a task's end / wrap / report callback, or an action that
raises does not stop the update: the other handlers, the flush, the state update, root motion, the
actions and the placement run for every human, then ``Game.step()`` raises one
``HandlerError`` carrying the originals. Each probe runs two worlds side by side, the
same in everything but the callback (one raises, one returns), and compares their
whole trace (positions, headings, held flags, anim ids, stacks, health) after every
update: they must be equal, update for update.

``esper.delete_entity`` on a human (instead of ``Game.remove_human``) gives its tasks
back to the pool at the next update: 400 add / step / delete cycles on a pool of 360.
"""
from __future__ import annotations

import esper
import numpy as np
import pytest

from scuffle import Game, HandlerError, demo_set
from scuffle.anim.data.clip import EventType
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import Fight
from scuffle.game.fighters.moves import Move
from scuffle.game.runtime.trace import trace_records

UPDATES = 240
SET = demo_set()


class Boom(Exception):
    """The callback's own exception (never one of scuffle's)."""


def _fight_world(seed: int = 3) -> tuple[Game, Fight]:
    """Two AI fighters 1.2 m apart with the fight rules (separation, rounds): windows,
    grabs, throws and every event type of the demo set fire in a few seconds."""
    g = Game()
    g.add_human("p1", SET, position=(0.0, -0.6, 0.0), heading=0.0)
    g.add_human("p2", SET, position=(0.0, 0.6, 0.0), heading=180.0)
    f = Fight(g, separate=True, rounds=True)
    f.controllers.append(FighterAI("p1", "p2", seed=seed, aggression=0.9, think_every=2))
    f.controllers.append(FighterAI("p2", "p1", seed=seed + 1, aggression=0.9, think_every=2))

    def idle(ctx):
        if ctx.update == 0:
            for n in ("p1", "p2"):
                g.change(n, g.player.loop(g.instance(n), int(Move.FIGHT_IDLE)))
    g.ctx.actions.insert(0, idle)
    return g, f


def _state(g: Game) -> list:
    """Everything the trace holds, plus the bones and the pool: one comparable value."""
    return [trace_records(g), g.player.pool.in_use, np.asarray(g.ctx.bone_pos).tobytes()]


def _run_pair(make, rigged, calm, updates=UPDATES):
    """Step a rigged world (whose callback raises) and a calm one side by side; every
    update's state must be equal. Returns the HandlerErrors the rigged one raised."""
    a, b = make(), make()
    rigged(a)
    calm(b)
    raised = []
    try:
        for u in range(updates):
            try:
                a.step()
            except HandlerError as exc:
                assert exc.update == u
                raised.append(exc)
            b.step()
            assert a.update == b.update == u + 1
            assert _state(a) == _state(b), f"the worlds part at update {u}"
    finally:
        a.close()
        b.close()
    return raised


def test_an_event_handler_that_raises_leaves_the_update_whole():
    """Every fired event's handler raises in one world, returns in the other: the
    fight (its own handler for 0x2c windows first), root motion, flush and actions run
    alike; each failing update ends with one HandlerError carrying every exception."""
    calls = {"a": 0, "b": 0}

    def make():
        return _fight_world()[0]

    def rig(g):
        def boom(ctx, ent, fe):
            calls["a"] += 1
            raise Boom(f"handler at update {ctx.update}")
        g.ctx.default_handlers.append(boom)

    def calm(g):
        def quiet(ctx, ent, fe):
            calls["b"] += 1
        g.ctx.default_handlers.append(quiet)

    raised = _run_pair(make, rig, calm)
    assert calls["a"] == calls["b"] > 20                     # the events fired alike
    assert sum(len(e.errors) for e in raised) == calls["a"]  # none lost, none doubled
    assert all(phase == "events" and isinstance(exc, Boom) for e in raised for phase, exc in e.errors)
    assert isinstance(raised[0].__cause__, Boom)
    assert "update" in str(raised[0]) and "Boom" in str(raised[0])


def test_a_typed_handler_that_raises_does_not_stop_the_handlers_after_it():
    """Two handlers of the window-open type (0x2c): the first raises, the second still
    sees every event (it counts them as in the calm world)."""
    seen = {"a": [], "b": []}

    def make():
        return _fight_world(seed=5)[0]

    def rig(g):
        g.ctx.on(EventType.HELD_OPEN, lambda ctx, ent, fe: (_ for _ in ()).throw(Boom("first")))
        g.ctx.on(EventType.HELD_OPEN, lambda ctx, ent, fe: seen["a"].append((ctx.update, ent)))

    def calm(g):
        g.ctx.on(EventType.HELD_OPEN, lambda ctx, ent, fe: None)
        g.ctx.on(EventType.HELD_OPEN, lambda ctx, ent, fe: seen["b"].append((ctx.update, ent)))

    raised = _run_pair(make, rig, calm)
    assert seen["a"] == seen["b"] and len(seen["a"]) > 0
    assert len(raised) == len({u for u, _ in seen["a"]})


def _loop_world() -> Game:
    """Three humans on looping clips (wraps every ~1 s) and one on the gait blend."""
    g = Game()
    for i, n in enumerate(("a", "b", "c", "w")):
        g.add_human(n, SET, position=(2.0 * i, 0.0, 0.0))
    return g


def test_wrap_callbacks_that_raise_leave_the_update_whole():
    """A loop's and a gait's wrap callback raise (animation phase): every human still
    steps, samples, moves; the HandlerError says "animation"."""
    wraps = {"a": 0, "b": 0}

    def start(g, cb):
        for n in ("a", "b", "c"):
            g.change(n, g.player.loop(g.instance(n), int(Move.FIGHT_IDLE), on_wrap=cb))
        w = g.instance("w")
        ids = [int(Move.WALK), int(Move.JOG), int(Move.RUN), int(Move.SPRINT), int(Move.SPRINT)]
        gait = [t for t in (g.player.gait(w, ids, target=1.5, value=1.0, on_wrap=cb),)][0]
        g.change("w", gait)

    def rig(g):
        def boom(inst):
            wraps["a"] += 1
            raise Boom(inst.name)
        start(g, boom)

    def calm(g):
        def quiet(inst):
            wraps["b"] += 1
        start(g, quiet)

    raised = _run_pair(_loop_world, rig, calm, updates=150)
    assert wraps["a"] == wraps["b"] >= 4
    assert {p for e in raised for p, _ in e.errors} == {"animation"}
    assert sum(len(e.errors) for e in raised) == wraps["a"]


def test_end_callbacks_that_raise_leave_the_flush_and_the_update_whole():
    """Clips whose end callback raises (flush phase), chained every 40 updates by an
    action: the flush releases every task, the state update and the later actions run."""
    ends = {"a": 0, "b": 0}

    def start(g, cb, key):
        def act(ctx):
            if ctx.update % 40 == 0:
                for n in ("a", "b", "c"):
                    inst = g.instance(n)
                    nxt = g.player.loop(inst, int(Move.FIGHT_IDLE))
                    g.change(n, g.player.clip(inst, int(Move.JAB), nxt, on_end=cb), 0.1)
        g.ctx.actions.append(act)
        g.ctx.actions.append(lambda ctx: g.body("a").position.__setitem__(0, float(ctx.update)))

    def rig(g):
        def boom(inst):
            ends["a"] += 1
            raise Boom(inst.name)
        start(g, boom, "a")

    def calm(g):
        def quiet(inst):
            ends["b"] += 1
        start(g, quiet, "b")

    raised = _run_pair(_loop_world, rig, calm, updates=170)
    assert ends["a"] == ends["b"] >= 6
    assert {p for e in raised for p, _ in e.errors} == {"flush"}


def test_a_raising_report_callback_keeps_the_end_callback_of_the_same_release():
    """A task holding 0x400000 (report) whose human's on_report raises: its own end
    callback, run right after in the same release, still runs, and the update goes on."""
    from scuffle.anim.playback.tasks import HeldFlags

    ends = {"a": [], "b": []}
    reports = {"a": 0, "b": 0}

    def start(g, key, report):
        for n in ("a", "b", "c"):
            g.instance(n).on_report = report

        def act(ctx):
            if ctx.update % 30 == 0:
                for n in ("a", "b", "c"):
                    inst = g.instance(n)
                    nxt = g.player.loop(inst, int(Move.FIGHT_IDLE))
                    g.change(n, g.player.clip(inst, int(Move.JAB), nxt, held=int(HeldFlags.REPORT),
                                              on_end=lambda i: ends[key].append((g.update, i.name))))
        g.ctx.actions.append(act)

    def rig(g):
        def boom(inst):
            reports["a"] += 1
            raise Boom("report")
        start(g, "a", boom)

    def calm(g):
        def quiet(inst):
            reports["b"] += 1
        start(g, "b", quiet)

    raised = _run_pair(_loop_world, rig, calm, updates=120)
    assert reports["a"] == reports["b"] >= 6 and ends["a"] == ends["b"] and len(ends["a"]) >= 6
    assert {p for e in raised for p, _ in e.errors} == {"flush"}


def test_an_action_that_raises_does_not_skip_the_actions_after_it():
    """A host's action, first in the actions phase, raising every 7th update: the fight
    rules and their AI (after it), and the placement, run alike in both worlds."""
    def make():
        return _fight_world(seed=13)[0]

    def rig(g):
        def boom(ctx):
            if ctx.update % 7 == 3:
                raise Boom(f"action at {ctx.update}")
        g.ctx.actions.insert(0, boom)

    def calm(g):
        g.ctx.actions.insert(0, lambda ctx: None)

    raised = _run_pair(make, rig, calm, updates=120)
    assert [e.update for e in raised] == [u for u in range(120) if u % 7 == 3]
    assert all(p == "actions" for e in raised for p, _ in e.errors)


def test_a_state_function_that_raises_does_not_skip_root_motion():
    """A host's state function, first in the state update, raising every 5th update: the
    fight rules' locomotion after it, root motion and the move run alike."""
    def make():
        return _fight_world(seed=17)[0]

    def rig(g):
        def boom(ctx):
            if ctx.update % 5 == 1:
                raise Boom("state")
        g.ctx.state_functions.insert(0, boom)

    def calm(g):
        g.ctx.state_functions.insert(0, lambda ctx: None)

    raised = _run_pair(make, rig, calm, updates=90)
    assert len(raised) == 18 and all(p == "state" for e in raised for p, _ in e.errors)


def test_a_host_driven_world_gets_the_error_after_every_scuffle_system():
    """esper.process() of a host's world (Game.attach): the HandlerError reaches the host
    once scuffle's last system ran; the next process goes on."""
    world = "half-update-host"
    esper.switch_world(world)
    try:
        g = Game.attach(world)
        g.add_human("a", SET)
        g.change("a", g.player.loop(g.instance("a"), int(Move.FIGHT_IDLE),
                                    on_wrap=lambda inst: (_ for _ in ()).throw(Boom("wrap"))))
        placed = []
        g.ctx.probe.append(lambda ctx, name: placed.append(ctx.update) if name == "placement" else None)
        errors = 0
        for u in range(100):
            try:
                esper.process()
            except HandlerError:
                errors += 1
            assert placed[-1] == u                                # the placement ran every update
        assert errors >= 1 and g.update == 100
        g.close()
    finally:
        esper.switch_world("default")
        esper.delete_world(world)


def test_esper_delete_entity_gives_the_tasks_back_at_the_next_update():
    """400 cycles of add a human, start a fade into a chain, step, delete its entity
    with esper.delete_entity: a pool of 360 never runs out, and once the last deletion
    is flushed every task is back. A human removed by remove_human is not cut twice."""
    g = Game()
    ended = []
    try:
        for i in range(400):
            name = f"h{i}"
            g.add_human(name, SET)
            inst = g.instance(name)
            nxt = g.player.loop(inst, int(Move.FIGHT_IDLE))
            g.change(name, g.player.clip(inst, int(Move.JAB), nxt, on_end=lambda i: ended.append(i.name)))
            g.step()
            if i % 50 == 49:
                g.remove_human(name)
            else:
                with g.active():
                    esper.delete_entity(g.entity(name), immediate=i % 2 == 0)
            assert g.player.pool.in_use <= 8
        g.step()
        assert g.player.pool.in_use == 0 and g.humans() == []
        assert len(ended) == 400                                 # each end callback ran once
    finally:
        g.close()


@pytest.mark.parametrize("standalone", ["flush", "step"])
def test_a_bare_player_finishes_then_raises_the_first(standalone):
    """Without a Game (no on_callback_error), Player.step and Player.flush still finish
    for every character and then raise the first callback exception."""
    from scuffle.anim.playback.player import Player
    from scuffle.anim.engine.stack import CharacterInstance

    p = Player()
    hs = [CharacterInstance(SET, f"h{i}") for i in range(3)]
    for h in hs:
        if standalone == "flush":
            t = p.clip(h, int(Move.JAB), p.loop(h, int(Move.FIGHT_IDLE)),
                       on_end=lambda inst: (_ for _ in ()).throw(Boom(inst.name)))
        else:
            t = p.loop(h, int(Move.FIGHT_IDLE), on_wrap=lambda inst: (_ for _ in ()).throw(Boom(inst.name)))
        p.change(h, t, 0.0)
    p.flush()
    raised = []
    for _ in range(120):
        try:
            p.step(hs)
        except Boom as exc:
            raised.append(("step", str(exc)))
        try:
            p.flush()
        except Boom as exc:
            raised.append(("flush", str(exc)))
    assert raised and all(where == standalone and name == "h0" for where, name in raised)
    assert p.tasks_out(hs) == p.pool.in_use
