"""Game.remove_human (humans leave cleanly): mid-connect, mid-hold and
mid-throw, from both sides. The leaving human's tasks are cut off (released by the next
flush, end callbacks run) and every pool task comes back; the partner is detached and
freed and plays the let-go, or the fall when its thrower leaves mid-throw (the fight
rules' choice, Fight.human_leaving). esper.delete_entity behind the Game's back leads to
no KeyError later: the fight rules free the partner.
"""
from __future__ import annotations

import esper
import pytest

from scuffle.anim.engine.store import StaleHandle
from scuffle.components import NO_ATTACHMENT
from scuffle.game.fighters.combat import Fight, FightFlags, FightState
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game, UnknownHuman


def _pair(stage: str):
    """a grabs b (c stands by); stepped until ``stage``: connect, hold or throw."""
    g = Game()
    s = demo_set()
    g.add_human("a", s, (0, 0, 0), 0.0)
    g.add_human("b", s, (0, 0.9, 0), 180.0)
    g.add_human("c", s, (4.0, 0, 0), 0.0)
    f = Fight(g)
    for n in "abc":
        g.change(n, g.player.loop(g.instance(n), Move.FIGHT_IDLE))
    g.step()
    assert f.grab("a")
    want = FightState.CONNECTING if stage == "connect" else FightState.HOLDING
    for _ in range(200):
        g.step()
        if f.combat("a").state == want:
            break
    assert f.combat("a").state == want
    if stage == "throw":
        assert f.throw("a")
        g.step()
        assert f.combat("a").state == FightState.THROWING
    return g, f


def _settle(g: Game, f: Fight, left: list[str], updates: int = 150) -> None:
    """Step on; the tasks out equal what the remaining humans hold (nothing leaks)."""
    for _ in range(updates):
        g.step()
    insts = [g.instance(n) for n in left]
    assert g.player.pool.in_use == g.player.tasks_out(insts)


@pytest.mark.parametrize("stage", ["connect", "hold", "throw"])
@pytest.mark.parametrize("leaving, staying", [("a", "b"), ("b", "a")])
def test_remove_human_frees_the_partner_and_returns_every_task(stage, leaving, staying):
    g, f = _pair(stage)
    try:
        g.remove_human(leaving)
        with pytest.raises(UnknownHuman):
            g.entity(leaving)
        assert [n for n, _ in g.humans()] == [n for n in "abc" if n != leaving]
        c = f.combat(staying)
        assert c.partner == -1 and g.body(staying).attachment == NO_ATTACHMENT
        if stage == "throw" and leaving == "a":                 # the victim's thrower left: it falls
            assert c.state == FightState.DOWN
            assert g.instance(staying).stack[0].anim_id() == Move.KNOCKDOWN
        else:
            assert c.state == FightState.LETTING_GO
        g.step()                                                 # the flush releases the cut-off tasks
        assert not g.player.deferred
        _settle(g, f, [n for n in "abc" if n != leaving])
        assert f.free(staying) and f.combat(staying).state == FightState.FREE
        assert not g.record(staying).flags & FightFlags.PAIRED
        assert f.strike(staying)                                 # it acts again
        _settle(g, f, [n for n in "abc" if n != leaving], 60)
    finally:
        g.close()


def test_removing_every_human_returns_the_pool_to_empty_and_end_callbacks_run():
    g, f = _pair("hold")
    try:
        ended = []
        inst = g.instance("c")
        g.change("c", g.player.chain(inst, [Move.JAB, Move.FIGHT_IDLE],
                                     on_end=lambda i: ended.append((i.name, i.record.flags & 0x100))))
        g.player.flush()                                         # the old loop and the fade go back
        g.record("c").flags |= 0x100
        g.instance("c").stack[0].held = 0x100
        for n in ("a", "b", "c"):
            g.remove_human(n)
        assert ended == [] and g.player.pool.in_use > 0          # deferred: released by the next flush
        g.step()
        assert ended == [("c", 0)]             # a cut-off release clears the held flags, runs the end callback
        assert not inst.record.alive()                           # then the record's row goes back
        assert g.player.pool.in_use == 0 and g.humans() == []
    finally:
        g.close()


def test_remove_human_of_an_unknown_name_changes_nothing():
    g, f = _pair("hold")
    try:
        with pytest.raises(UnknownHuman):
            g.remove_human("zed")
        assert [n for n, _ in g.humans()] == ["a", "b", "c"]
    finally:
        g.close()


@pytest.mark.parametrize("leaving, staying", [("a", "b"), ("b", "a")])
def test_esper_delete_entity_mid_grab_leads_to_no_key_error(leaving, staying):
    g, f = _pair("hold")
    try:
        with g.active():
            esper.delete_entity(g.entity(leaving), immediate=True)
        for _ in range(150):                                     # no KeyError; the partner is freed
            g.step()
        assert [n for n, _ in g.humans()] == [n for n in "abc" if n != leaving]
        assert f.combat(staying).partner == -1 and g.body(staying).attachment == NO_ATTACHMENT
        assert f.free(staying)
    finally:
        g.close()


@pytest.mark.parametrize("engine", ["compiled", "reference"])
@pytest.mark.parametrize("how", ["remove_human", "delete_entity"])
def test_a_removed_humans_handles_are_stale_and_never_alias_a_newcomer(engine, how):
    """The leaving human's Body, HumanRecord and CharacterInstance are handles onto rows:
    once it is gone (its body's row at once; its record's row after the flush that releases
    its cut tasks) any read or write raises StaleHandle naming the class and the field, and
    a human added later, taking the rows, never shows through them."""
    g = Game(engine=engine)
    try:
        s = demo_set()
        g.add_human("a", s, (0, 0, 0), 0.0)
        g.add_human("b", s, (2.0, 0, 0), 90.0)
        g.change("b", g.player.loop(g.instance("b"), Move.FIGHT_IDLE))
        for _ in range(3):
            g.step()
        body, rec, inst = g.body("b"), g.record("b"), g.instance("b")
        if how == "remove_human":
            g.remove_human("b")
            with pytest.raises(StaleHandle, match="Body.position: its row"):
                body.position
        else:
            with g.active():
                esper.delete_entity(g.entity("b"), immediate=True)
        g.step()                                         # the flush releases b's cut tasks
        assert not body.alive() and not rec.alive()
        handles = [(body, "Body", "heading"), (rec, "HumanRecord", "held"), (rec, "HumanRecord", "anim_id")]
        if engine == "compiled":                         # (the reference's RefInstance is a plain object)
            handles.append((inst, "CharacterInstance", "speed"))
        for obj, name, field in handles:
            with pytest.raises(StaleHandle, match=f"{name}.{field}: its row"):
                getattr(obj, field)
        with pytest.raises(StaleHandle, match="HumanRecord.flags"):
            rec.flags = 0
        g.add_human("d", s, (5.0, 5.0, 0), 0.0)
        g.change("d", g.player.loop(g.instance("d"), Move.FIGHT_IDLE))
        g.record("d").held = 0x40
        g.step()
        assert g.body("d").position[0] == 5.0 and g.record("d").held == 0x40
        with pytest.raises(StaleHandle):
            body.position
        with pytest.raises(StaleHandle):
            rec.held
        assert g.player.pool.in_use == g.player.tasks_out([g.instance(n) for n in ("a", "d")])
    finally:
        g.close()
