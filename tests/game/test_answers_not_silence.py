"""Every mistake a newcomer makes gets an answer: one Fight per Game, the fighters already
there adopted, a bare clip given to Game.change, an unknown human, a Game's world left
unstepped while the host processes its own, a trace given to ``scuffle run``, refusals
as sentences, range flag 0x400 documented for what it is.

Spec: "The Anim Range List" (L176: the 0x400 flag); the fight rules are ours.
"""
from __future__ import annotations

import json
import warnings

import esper
import pytest

from scuffle.game.fighters.combat import Fight, FightAttached, FightEventKind, FightFlags
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.watch import CALLS, UnsteppedGame
from scuffle.game.runtime.world import Game, UnknownHuman

from gamehelp import REPO, run_cli


def _two(g: Game) -> None:
    g.add_human("p1", demo_set(), (0, 0, 0), 0.0)
    g.add_human("p2", demo_set(), (0, 0.9, 0), 180.0)


# ---------------------------------------------------------------- one Fight per Game


def test_a_second_fight_on_a_game_is_refused_and_says_how_to_reach_the_first(new_game):
    g = new_game()
    _two(g)
    first = Fight(g)
    with pytest.raises(FightAttached, match=r"use game\.fight") as err:
        Fight(g, ko=True)
    assert isinstance(err.value, ValueError)
    assert g.fight is first and first.ko_rule is False            # nothing of the second stayed
    hits = []
    first.on(FightEventKind.HIT, hits.append)
    g.step()
    assert first.strike("p1")
    for _ in range(30):
        g.step()
    assert hits and hits[0].victim == "p2"                         # the first one's handlers hear it


def test_a_fight_made_after_add_human_adopts_the_fighters_they_idle(new_game):
    g = new_game()
    _two(g)
    g.add_human("busy", demo_set(), (4, 0, 0), 0.0)
    g.change("busy", g.player.loop(g.instance("busy"), Move.IDLE))
    fight = Fight(g)
    g.step()
    assert g.record("p1").anim_id == g.record("p2").anim_id == Move.FIGHT_IDLE
    assert g.record("busy").anim_id == Move.IDLE                  # playing something: left so
    assert fight.free("p1") and fight.strike("p1")                 # ready to fight at once


def test_adopting_is_an_option_and_the_scenario_runner_leaves_its_humans_to_their_commands(new_game, tmp_path):
    g = new_game()
    _two(g)
    Fight(g, idle_existing=False)
    g.step()
    assert g.record("p1").anim_id == -1
    (tmp_path / "s.toml").write_text(
        'updates = 4\n[fight]\nseparate = true\n[sets.demo]\nlibrary = "demo"\n'
        '[[humans]]\nname = "a"\nset = "demo"\n[[humans]]\nname = "b"\nset = "demo"\nposition = [0, 2, 0]\n'
        '[[commands]]\nupdate = 2\nhuman = "a"\nloop = 358\n')
    r = run_cli("run", "s.toml", "--trace", "t.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    anims = [(rec["update"], rec["human"], rec["anim"]) for rec in map(json.loads, open(tmp_path / "t.jsonl"))]
    assert (0, "a", -1) in anims and (1, "b", -1) in anims and (2, "a", 358) in anims


# ---------------------------------------------------------------- Game.change and unknown humans


@pytest.mark.parametrize("bare", [358, "FIGHT_IDLE"])
def test_a_bare_clip_given_to_change_is_a_type_error_naming_the_constructors(new_game, bare):
    g = new_game()
    _two(g)
    with pytest.raises(TypeError) as err:
        g.change("p1", bare)                                      # type: ignore[arg-type]
    text = str(err.value)
    assert "g.player.loop(g.instance('p1'), " in text and "g.player.clip(" in text and "g.player.chain(" in text
    assert "tstore" not in text and g.instance("p1").stack == []   # nothing changed
    g.change("p1", g.player.loop(g.instance("p1"), bare))          # the way the message shows works
    g.step()
    assert g.record("p1").anim_id == Move.FIGHT_IDLE


def test_an_unknown_human_lists_the_names_with_did_you_mean(new_game):
    g = new_game()
    _two(g)
    with pytest.raises(UnknownHuman) as err:
        g.entity("p3")
    assert str(err.value) == "no human named 'p3' (the humans: 'p1', 'p2')"
    with pytest.raises(UnknownHuman, match=r"no human named 'P2'; did you mean 'p2'\? \(the humans: 'p1', 'p2'\)"):
        g.body("P2")
    fight = Fight(g)
    with pytest.raises(UnknownHuman, match="the humans: 'p1', 'p2'"):
        fight.grab("player1")
    for i in range(20):
        g.add_human(f"extra{i}", demo_set(), (10.0 + i, 0, 0), 0.0)
    with pytest.raises(UnknownHuman, match=r"did you mean 'extra1'.*and 14 more\)$"):
        g.entity("extra1x")
    empty = new_game()
    with pytest.raises(UnknownHuman, match=r"\(the Game has no humans\)"):
        empty.entity("a")


# ---------------------------------------------------------------- a world processed, the Game never stepped


def test_processing_the_host_world_while_the_game_is_never_stepped_warns_once(esper_clean):
    prev = esper.current_world
    esper.switch_world("host-unstepped")
    try:
        g = Game()                                    # its own world: the host's esper.process misses it
        try:
            g.add_human("a", demo_set())
            with pytest.warns(UnsteppedGame, match=r"world 'host-unstepped'.*'a'.*call game\.step\(\)") as seen:
                for _ in range(CALLS + 5):
                    esper.process()
            assert len([w for w in seen if issubclass(w.category, UnsteppedGame)]) == 1
            assert g.update == 0
        finally:
            g.close()
    finally:
        esper.switch_world(prev)
        esper.delete_world("host-unstepped")


def test_a_host_that_steps_its_game_or_attaches_it_hears_nothing(esper_clean):
    prev = esper.current_world
    esper.switch_world("host-stepping")
    try:
        stepped = Game()
        attached = Game.attach()
        try:
            stepped.add_human("a", demo_set())
            attached.add_human("b", demo_set())
            with warnings.catch_warnings():
                warnings.simplefilter("error", UnsteppedGame)
                for _ in range(CALLS + 5):
                    esper.process()                  # the attached Game's systems run here
                    stepped.step()
            assert stepped.update == attached.update == CALLS + 5
        finally:
            stepped.close()
            attached.close()
    finally:
        esper.switch_world(prev)
        esper.delete_world("host-stepping")


# ---------------------------------------------------------------- scuffle run of a trace


def test_scuffle_run_of_a_trace_says_it_takes_a_scenario_and_how_to_diff(tmp_path):
    (tmp_path / "ours.jsonl").write_text('{"update": 0, "human": "a", "anim": -1}\n')
    (tmp_path / "odd.txt").write_text('  {"update": 0}\n')
    for name in ("ours.jsonl", "odd.txt"):
        r = run_cli("run", name, cwd=tmp_path)
        assert r.returncode == 2 and r.stdout == ""
        lines = r.stderr.splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith(f"scuffle run: error: {name} is a trace (JSON lines), not a scenario")
        assert "scuffle diff A.jsonl B.jsonl" in lines[0]
    long = "t" * 200 + ".jsonl"
    (tmp_path / long).write_text("{}\n")
    r = run_cli("run", long, cwd=tmp_path)
    assert r.returncode == 2 and "t" * 100 not in r.stderr and "..." in r.stderr


# ---------------------------------------------------------------- refusals as sentences


def test_a_refusal_reads_as_a_sentence_with_its_reason_at_the_end(new_game):
    g = new_game()
    _two(g)
    fight = Fight(g)
    g.step()
    r = fight.throw("p1", 149)
    assert str(r) == f"update {g.ctx.update}: p1 throw 149 was refused: p1 holds no one; grab first [not_holding]"
    assert fight.strike("p1", "KICK")
    r = fight.grab("p1")
    assert str(r).startswith(f"update {g.ctx.update}: p1 grab was refused: p1 is in a move that holds WINDUP")
    g.record("p2").flags |= FightFlags.DOWN                       # as a knockdown holds it
    r = fight.grab("p2")
    assert str(r).endswith("p2 grab was refused: p2 is down (knocked down, grounded or getting up) [down]")
    assert "down: down" not in str(r)


# ---------------------------------------------------------------- range flag 0x400


def test_range_flag_0x400_is_documented_as_carried_and_unused():
    original = (REPO / "docs" / "original.md").read_text(encoding="utf-8")
    section = original.split("## Range flag 0x400", 1)[1].split("\n## ", 1)[0]
    assert "L176" in section and "0x0026a6d0" in section and "carried and unused" in section
    scenarios = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert "0x400 stuns" not in scenarios and "no rule reads it" in scenarios
    import inspect

    from scuffle.game.fighters import combat, fightcore, hits, locomotion, pairs, rounds
    for module in (combat, fightcore, hits, locomotion, pairs, rounds):      # no rule reads it
        src = inspect.getsource(module)
        assert "STUNS" not in src and ".stuns" not in src and "0x400 " not in src, module.__name__
