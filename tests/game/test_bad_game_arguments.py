"""The Game's and the Fight's look-ups and add_human refuse a bad argument with one clear
error: a name or entity that is no human's (an unhashable one among them) is UnknownHuman,
a component a human lacks a KeyError naming its type, a name that is not a string or a set
that is not an AnimSet a ValueError; the world is as it was."""
from __future__ import annotations

import pytest

from scuffle import Body, Game, UnknownHuman, demo_set

LOOKUPS = {
    "entity": lambda g, v: g.entity(v),
    "instance": lambda g, v: g.instance(v),
    "body": lambda g, v: g.body(v),
    "record": lambda g, v: g.record(v),
    "bone": lambda g, v: g.bone(v, 3),
    "bones_world": lambda g, v: g.bones_world(v),
    "pose_row": lambda g, v: g.pose_row(v),
    "component": lambda g, v: g.component(v, Body),
    "remove_human": lambda g, v: g.remove_human(v),
    "change": lambda g, v: g.change(v, g.player.loop(g.instance("a"), "FIGHT_IDLE")),
}


@pytest.fixture(scope="module")
def game():
    """One Game for the module's refusals (each leaves the world as it was: checked)."""
    g = Game()
    g.add_human("a", demo_set())
    g.step()
    yield g
    g.close()


@pytest.fixture(scope="module")
def fight():
    """One Game of two fighters and its Fight, for the module's refusals."""
    from scuffle import Fight

    g = Game()
    g.add_human("a", demo_set())
    g.add_human("b", demo_set(), position=(1.0, 0.0, 0.0))
    f = Fight(g)
    g.step()
    yield f
    g.close()


@pytest.mark.parametrize("who", [None, "zz", [1], {}, 10**20, -1, 2.5])
@pytest.mark.parametrize("call", sorted(LOOKUPS))
def test_a_name_that_is_no_humans_is_unknown_human(game, call, who):
    with pytest.raises(UnknownHuman) as got:
        LOOKUPS[call](game, who)
    assert "the humans: 'a'" in str(got.value)
    assert [n for n, _ in game.humans()] == ["a"]


def test_a_component_a_human_lacks_is_a_key_error_naming_its_type(game):
    class Missing:
        pass

    with pytest.raises(KeyError, match="human 'a' has no 'Missing' component"):
        game.component("a", Missing)


@pytest.mark.parametrize("name, anim_set, field", [
    (5, "set", "name"), (None, "set", "name"), (["a"], "set", "name"),
    ("c", None, "anim_set"), ("c", "demo", "anim_set"), ("c", 3, "anim_set")])
def test_add_human_refuses_a_bad_name_or_set(game, name, anim_set, field):
    aset = demo_set() if anim_set == "set" else anim_set
    with pytest.raises(ValueError, match=f"add_human: {field}"):
        game.add_human(name, aset)
    assert [n for n, _ in game.humans()] == ["a"]
    game.step()                                         # the world goes on


FIGHT = {
    "body": lambda f, v: f.body(v),
    "combat": lambda f, v: f.combat(v),
    "held": lambda f, v: f.held(v),
    "inst": lambda f, v: f.inst(v),
    "free": lambda f, v: f.free(v),
    "strike": lambda f, v: f.strike(v),
    "grab": lambda f, v: f.grab(v),
    "move": lambda f, v: f.move(v),
    "face toward": lambda f, v: f.face("a", None, v),
}


@pytest.mark.parametrize("who", [None, "zz", [1], -1, 10**20, 2.5, True])
@pytest.mark.parametrize("call", sorted(FIGHT))
def test_the_fight_refuses_one_who_is_no_human_with_unknown_human(fight, call, who):
    if call == "face toward" and who is None:
        pytest.skip("toward=None: no one to face (the heading's own answer)")
    refused = fight.stats.refused
    with pytest.raises(UnknownHuman):
        FIGHT[call](fight, who)
    assert fight.stats.refused == refused           # not a refusal of a human's: nothing logged
    fight.game.step()                               # the fight goes on


def test_a_fight_table_that_is_not_one_is_named(fight):
    assert fight.row_limits("log")[0] == 1
    with pytest.raises(KeyError, match="no fight table 'x' \\(the tables: log, "):
        fight.row_limits("x")
    with pytest.raises(KeyError, match="no fight table"):
        fight.row_limits([1])
