"""The Python around the kernels: a Game's look-ups read its own esper
world's tables directly (no switch of esper's current world per component), the fight
rules' per-update work reads each human once, the placement picks its few bodies by
their fields, the event dispatch reads the update's event types in one go. Every result
stays the same: these tests compare against the paths they replaced, and check that a
host switching esper worlds between updates, a human leaving mid-fight and a closed Game
behave as before.
"""
from __future__ import annotations

import esper
import numpy as np
import pytest

from scuffle.anim.data.clip import EventType
from scuffle.anim.engine.store import StaleHandle
from scuffle.components import Body, Combat, FiredEvents
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import Fight, FightState
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game, UnknownHuman
from scuffle.systems import placement
from scuffle.systems.context import HandlerError

from gamehelp import event_game


@pytest.fixture(scope="module")
def aset():
    return demo_set()


def _fighters(aset, *, world: str | None = None, seed: int = 3, think_every: int = 3) -> tuple[Game, Fight]:
    """Two AI fighters 2 m apart (they walk in, strike, grab and throw)."""
    g = Game(world=world)
    g.add_human("a", aset, (0.0, -1.0, 0.0), 0.0)
    g.add_human("b", aset, (0.0, 1.0, 0.0), 180.0)
    f = Fight(g)
    for n in "ab":
        g.change(n, g.player.loop(g.instance(n), Move.FIGHT_IDLE))
    f.controllers.append(FighterAI("a", "b", seed=seed, think_every=think_every))
    f.controllers.append(FighterAI("b", "a", seed=seed + 1, think_every=think_every))
    return g, f


def test_look_ups_switch_no_esper_world(aset):
    prev = esper.current_world
    g = Game()
    try:
        ent = g.add_human("a", aset)
        esper.switch_world("lookups-host")             # a host's own world is current
        switched = []
        real = esper.switch_world

        def spy(name):
            switched.append(name)
            real(name)
        esper.switch_world = spy
        try:
            assert g.component("a", Body) is g.body("a")
            assert g.component(ent, Combat) is g.component("a", Combat)
            assert g.entity("a") == ent and g._alive(ent) and g.humans() == [("a", ent)]
            assert g.instance("a").name == "a" and g.record("a").flags == 0
        finally:
            esper.switch_world = real
        assert switched == [] and esper.current_world == "lookups-host"
        with pytest.raises(KeyError):
            g.component(ent + 99, Body)                 # as esper.component_for_entity
    finally:
        g.close()
        esper.switch_world(prev)
        esper.delete_world("lookups-host")


def test_a_host_switching_worlds_between_updates_changes_nothing(aset):
    """The same fight, once stepped plainly and once with a host's world made current
    (and its own entities added) before every update and every command: the same state,
    bit for bit, and the host's world current again after each step."""
    g1, f1 = _fighters(aset)
    prev = esper.current_world
    esper.switch_world("lookups-host-2")
    g2, f2 = _fighters(aset)
    try:
        for u in range(240):
            g1.step()
            esper.switch_world("lookups-host-2")
            esper.create_entity(Body())                  # the host's own entities, in its world
            g2.step()
            assert esper.current_world == "lookups-host-2"
            if u % 37 == 5:                              # a command given from the host's world
                assert bool(f1.strike("a")) == bool(f2.strike("a"))
        assert f1.stats.log == f2.stats.log and f1.stats.log
        assert g1.checksum() == g2.checksum()
        for n in "ab":
            assert np.array_equal(g1.body(n).position, g2.body(n).position)
    finally:
        g1.close()
        g2.close()
        esper.switch_world(prev)
        esper.delete_world("lookups-host-2")


def test_a_deleted_entity_is_gone_at_once_and_a_closed_game_finds_no_one(aset):
    g = Game()
    a = g.add_human("a", aset)
    b = g.add_human("b", aset)
    with g.active():
        esper.delete_entity(b)                          # deferred: esper deletes it at the next process
    assert not g._alive(b) and g._alive(a)
    with pytest.raises(UnknownHuman):
        g.entity("b")
    assert g.humans() == [("a", a)]
    g.close()
    assert not g._alive(a) and g.humans() == []
    with pytest.raises(KeyError):
        g.component(a, Body)
    assert "a" not in g.names


def test_a_fighter_removed_mid_fight_leaves_stale_handles_and_its_ai_raises_every_update(aset):
    g, f = _fighters(aset, think_every=6)
    try:
        for _ in range(400):
            g.step()
            if f.combat("a").state == FightState.HOLDING:
                break
        assert f.combat("a").state == FightState.HOLDING
        body, combat = g.body("b"), f.combat("b")
        g.remove_human("b")
        with pytest.raises(StaleHandle):
            _ = body.position
        with pytest.raises(StaleHandle):
            _ = combat.state
        with pytest.raises(UnknownHuman):
            f.combat("b")
        assert g.body("a").attachment == -1 and f.combat("a").partner == -1
        # the AIs look "b" up on every update, a decision or not: each update raises (the
        # first AI's error ends the fight rules' action: one error per update)
        for _ in range(7):
            with pytest.raises(HandlerError) as err:
                g.step()
            assert [(phase, type(e)) for phase, e in err.value.errors] == [("actions", UnknownHuman)]
    finally:
        g.close()


def test_placement_of_a_few_bodies_equals_the_column_path(aset, monkeypatch):
    """The placement's field-by-field pick (up to _FEW bodies) and its column operations
    place the same bodies the same way: a fight with grabs and throws, bit for bit."""
    runs = []
    for few in (placement._FEW, 0):
        monkeypatch.setattr(placement, "_FEW", few)
        g, f = _fighters(aset, seed=11)
        try:
            attached = 0
            for _ in range(600):
                g.step()
                attached += g.body("b").attachment != -1 or g.body("a").attachment != -1
            runs.append((g.checksum(), f.stats.grabs, attached))
        finally:
            g.close()
    assert runs[0] == runs[1]
    assert runs[0][1] > 0 and runs[0][2] > 0          # the run held someone: the placement worked


def test_dispatch_reads_the_types_once_and_hands_each_event_as_before():
    """A handler of one type sees exactly the events of that type each human fired, in
    entity order; a human whose rows another handler made into objects mid-dispatch is
    dispatched from its objects; humans without the type are not made into objects."""
    with event_game() as g:
        got: list = []
        g.on(EventType.SOUND, lambda ctx, ent, fe: got.append((ent, fe.anim_id, fe.event.frame)))

        def shake(ctx, ent, fe):                        # reads every human's events (makes them)
            for e in sorted(g.names.values()):
                g.component(e, FiredEvents).events
        g.on(EventType.CAMERA_SHAKE, shake)
        want: list = []
        shaken = 0
        for u in range(30):
            before = len(got)
            g.step()
            rows = [(ent, inst) for ent, _, inst in g.ctx.fired]
            for ent, inst in rows:
                want.extend((ent, fe.anim_id, fe.event.frame) for fe in inst.events
                            if fe.event.type == EventType.SOUND)
            shaken += any(int(fe.event.type) == EventType.CAMERA_SHAKE for _, i in rows for fe in i.events)
            assert got[before:] == want[before:] == sorted(want[before:], key=lambda t: t[0])
        assert got and shaken


def test_dispatch_without_handled_types_makes_no_objects():
    with event_game() as g:
        g.on(EventType.CAMERA_SHAKE, lambda ctx, ent, fe: None)
        for _ in range(20):
            g.step()
            for ent, fired, inst in g.ctx.fired:
                if inst.stack[0].anim_id() == 1:        # clip 1 fires SOUND and EFFECT_9 only
                    assert inst._event_rows is not None and not inst._events


def test_a_world_deleted_behind_the_game_is_read_anew_at_the_next_step(aset):
    prev = esper.current_world
    g = Game(world="lookups-gone")
    try:
        g.add_human("a", aset)
        esper.switch_world("default")
        esper.delete_world("lookups-gone")              # the host deletes the Game's world
        g.step()                                        # esper makes an empty one of that name
        assert g.humans() == [] and "lookups-gone" in esper.list_worlds()
        ent = g.add_human("a", aset)                    # the name is free again, in the new world
        with g.active():
            assert esper.component_for_entity(ent, Body) is g.body("a")
    finally:
        g.close()
        esper.switch_world(prev)
        if "lookups-gone" in esper.list_worlds():
            esper.delete_world("lookups-gone")


def test_answers_and_the_log_name_the_human_given_by_name_or_entity(aset):
    g, f = _fighters(aset)
    try:
        f.controllers.clear()
        a = g.entity("a")
        g.step()
        by_ent, by_name = f.strike(a), f.strike("b")
        assert (by_ent.who, by_name.who) == ("a", "b") and by_ent and by_name
        refused = f.grab(a)                             # a strike holds WINDUP: refused, named
        assert not refused and refused.who == "a"
        assert [e[1:3] for e in f.stats.log] == [("a", "strike"), ("b", "strike"), ("a", "refused")]
        with pytest.raises(UnknownHuman):
            f.strike("nobody")
    finally:
        g.close()
