"""The fight rules answer: a new fighter idles, every action says
whether it was accepted and why not, hits, K.O.s and rounds reach the host, and
``scuffle run`` prints the answers (``--strict`` fails on a refusal).

Spec: "Animation tasks" and "When a clip ends" (the held flags gate the commands: the
attack phases 0x1, 0x2, 0x4), "The Anim Range List" (damage +0x0a).
"""
from __future__ import annotations

import warnings

import pytest

from scuffle.components import Combat
from scuffle.game.fighters.combat import (ActionResult, Fight, FightEvent, FightEventKind, FightFlags, FightState,
                                          Refusal)
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set

from gamehelp import run_cli


def _duel(new_game, **options):
    g = new_game()
    fight = Fight(g, **options)
    g.add_human("a", demo_set(), (0, 0, 0), 0.0)
    g.add_human("b", demo_set(), (0, 0.9, 0), 180.0)
    return g, fight


def _step_until(g, cond, limit: int = 200) -> int:
    for n in range(limit):
        if cond():
            return n
        g.step()
    raise AssertionError("never happened")


# ---------------------------------------------------------------- a new fighter idles


def test_a_fighter_added_under_the_fight_rules_idles(new_game):
    g, fight = _duel(new_game)
    assert [t.trace()["id"] for t in g.instance("a").stack] == [Move.FIGHT_IDLE, -1]   # under a 0 s fade
    g.step()
    assert g.record("a").anim_id == g.record("b").anim_id == Move.FIGHT_IDLE
    assert fight.combat("a").state is FightState.FREE             # a FightState, not the plain 'free'


def test_without_the_fight_rules_a_new_human_still_plays_nothing(new_game):
    g = new_game()
    g.add_human("a", demo_set())
    g.step()
    assert g.record("a").anim_id == -1                             # the original's empty stack
    Fight(g)                                                       # attached later: adopts it
    g.step()
    assert g.record("a").anim_id == Move.FIGHT_IDLE
    assert g.component("a", Combat).state is FightState.FREE


# ---------------------------------------------------------------- answers


def test_an_accepted_action_is_truthy_and_names_its_move(new_game):
    g, fight = _duel(new_game)
    g.step()
    r = fight.strike("a")
    assert isinstance(r, ActionResult) and r and r.accepted
    assert (r.action, r.who, r.move, r.refusal, r.update) == ("strike", "a", 11, None, g.ctx.update)
    assert str(r) == f"update {g.ctx.update}: a strike 11 was accepted"


def test_a_busy_fighter_is_refused_with_the_flags_that_forbid_it(new_game):
    g, fight = _duel(new_game)
    g.step()
    assert fight.strike("a", "KICK")
    for action in (lambda: fight.grab("a"), lambda: fight.move("a", (1, 0), 1.0), lambda: fight.face("a", 90.0)):
        r = action()
        assert not r and r.refusal is Refusal.BUSY and "WINDUP" in r.detail
    assert fight.held("a") & FightFlags.WINDUP and fight.held("a") == g.record("a").held == g.record("a").flags
    assert fight.stats.refused == 3
    assert list(fight.stats.log)[-1][2:] == ("refused", "face", "busy")


def test_throw_and_let_go_without_a_hold_say_so(new_game):
    g, fight = _duel(new_game)
    g.step()
    r = fight.throw("a")
    assert not r and r.refusal is Refusal.NOT_HOLDING and r.move == -1
    r = fight.let_go("a", )
    assert not r and r.refusal is Refusal.NOT_HOLDING
    assert fight.combat("a").state is FightState.FREE             # nothing changed


def test_a_victims_clip_as_a_throw_is_refused_by_name(new_game):
    g, fight = _duel(new_game)
    g.step()
    assert fight.grab("a")
    _step_until(g, lambda: fight.combat("a").state == FightState.HOLDING)
    r = fight.throw("a", "THROW_SIDE_VICTIM")                      # 148: the victim's clip
    assert not r and r.refusal is Refusal.NOT_A_THROW and r.move == 148 and "a victim's clip" in r.detail
    r = fight.strike("a", Move.JAB)                                # in a hold: only the grab strikes
    assert not r and r.refusal is Refusal.NOT_A_GRAB_STRIKE
    r = fight.throw("a", "THROW_BACK")
    assert r and r.move == 151


def test_a_free_strike_that_is_not_an_attack_is_refused(new_game):
    g, fight = _duel(new_game)
    g.step()
    r = fight.strike("a", Move.GET_UP)
    assert not r and r.refusal is Refusal.NOT_A_STRIKE and r.move == Move.GET_UP
    with pytest.raises(ValueError, match="did you mean 'JAB'"):
        fight.strike("a", "JABB")


def test_a_knocked_out_fighter_is_refused_as_knocked_out(new_game):
    g, fight = _duel(new_game, ko=True)
    g.component("b", Combat).health = 1.0
    g.step()
    fight.strike("a")
    _step_until(g, lambda: fight.ko)
    r = fight.grab("b")
    assert not r and r.refusal is Refusal.KNOCKED_OUT


# ---------------------------------------------------------------- events reach the host


def test_hits_reach_the_host_with_the_range_records_damage(new_game):
    g, fight = _duel(new_game)
    hits: list[FightEvent] = []
    misses: list[FightEvent] = []
    assert fight.on_hit(hits.append) == hits.append
    fight.on(FightEventKind.MISS, misses.append)
    g.step()
    fight.strike("a", "FINISHER")
    _step_until(g, lambda: hits)
    (ev,) = hits
    dmg = float(demo_set().range(Move.FINISHER).damage)           # +0x0a
    assert (ev.kind, ev.attacker, ev.victim, ev.move, ev.damage, ev.health) == \
        (FightEventKind.HIT, "a", "b", Move.FINISHER, dmg, 100.0 - dmg)
    assert ev.update == g.ctx.update and misses == []
    # a strike into the air: a miss, not a hit
    g.body("b").position = g.body("b").position + (0.0, 5.0, 0.0)
    _step_until(g, lambda: fight.free("a"))
    fight.strike("a")
    _step_until(g, lambda: misses)
    assert misses[0].attacker == "a" and misses[0].move == Move.JAB and len(hits) == 1


def test_grab_throw_and_fall_reach_the_host(new_game):
    g, fight = _duel(new_game)
    seen: list[tuple[str, str, str, int]] = []
    for kind in ("grab", "throw", "fall"):
        fight.on(kind, lambda e: seen.append((e.kind.value, e.attacker, e.victim, e.move)))
    g.step()
    fight.grab("a")
    _step_until(g, lambda: fight.combat("a").state == FightState.HOLDING)
    fight.throw("a", Move.THROW_SIDE)
    _step_until(g, lambda: len(seen) == 3)
    assert seen == [("grab", "a", "b", Move.GRAB_CONNECT), ("throw", "a", "b", Move.THROW_SIDE),
                    ("fall", "a", "b", Move.THROW_SIDE)]


def test_ko_and_rounds_reach_the_host(new_game):
    g, fight = _duel(new_game, rounds=True, round_pause=10)
    kos: list[FightEvent] = []
    rounds: list[FightEvent] = []
    fight.on_ko(kos.append)
    fight.on_round(rounds.append)
    g.component("b", Combat).health = 1.0
    g.step()
    fight.strike("a")
    _step_until(g, lambda: len(rounds) == 2)
    assert [(e.kind, e.victim, e.attacker) for e in kos] == [(FightEventKind.KO, "b", "a")]
    end, start = rounds
    assert (end.kind, end.round, end.winner, end.victim) == (FightEventKind.ROUND_END, 1, "a", "b")
    assert (start.kind, start.round) == (FightEventKind.ROUND_START, 2)
    assert start.update - end.update == 10
    assert fight.stats.rounds[0]["ko_update"] == end.update


def test_fight_on_refuses_an_unknown_kind(new_game):
    g, fight = _duel(new_game)
    with pytest.raises(ValueError, match="unknown event kind 'hits'"):
        fight.on("hits", print)
    with pytest.raises(ValueError, match="not callable"):
        fight.on("hit", 3)  # type: ignore[arg-type]


# ---------------------------------------------------------------- one word: pace


def test_pace_is_the_word_and_gait_still_works_with_a_note(new_game):
    g, fight = _duel(new_game)
    g.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fight.move("a", (1.0, 0.0), pace="jog")
    with pytest.warns(DeprecationWarning, match=r"pace="):
        assert fight.move("b", (1.0, 0.0), gait="jog")
    assert fight.combat("a").move_speed == fight.combat("b").move_speed == fight.gait_speeds("a")[1]


# ---------------------------------------------------------------- scuffle run answers


RUN = """
updates = 60
[sets.demo]
library = "demo"
[[humans]]
name = "p1"
set = "demo"
[[humans]]
name = "p2"
set = "demo"
position = [0, 0.9, 0]
heading = 180
[[commands]]
update = 0
human = "p1"
loop = 358
[[commands]]
update = 0
human = "p2"
loop = 358
[[commands]]
update = 2
human = "p1"
action = "strike"
[[commands]]
update = 3
human = "p2"
action = "throw"
move = "THROW_SIDE"
"""


def test_scuffle_run_prints_each_refusal_and_a_count(tmp_path):
    (tmp_path / "f.toml").write_text(RUN)
    r = run_cli("run", "f.toml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = RUN.splitlines().index('action = "throw"') + 1 - 3          # its [[commands]] header
    assert r.stderr.splitlines() == [
        f"f.toml:{line}: update 3: p2 throw 149 was refused: p2 holds no one; grab first [not_holding]",
        "f.toml: 60 updates, 2 humans; 2 action commands: 1 accepted, 1 refused",
    ]
    r = run_cli("run", "f.toml", "-v", cwd=tmp_path)
    assert "update 2: p1 strike 11 was accepted" in r.stderr and r.returncode == 0


def test_scuffle_run_strict_exits_1_on_a_refusal(tmp_path):
    (tmp_path / "f.toml").write_text(RUN)
    assert run_cli("run", "f.toml", "--strict", cwd=tmp_path).returncode == 1
    (tmp_path / "ok.toml").write_text(RUN.replace('action = "throw"\nmove = "THROW_SIDE"', 'action = "grab"'))
    r = run_cli("run", "ok.toml", "--strict", cwd=tmp_path)
    assert r.returncode == 0 and "0 refused" in r.stderr


# ---------------------------------------------------------------- extreme offsets


@pytest.mark.parametrize("offset", [1e-320, 5e-324, 1e-170, 2.0 ** -501])
def test_facing_a_fighter_a_subnormal_offset_away_turns_toward_it(new_game, offset):
    """The bearing's radius sqrt(x^2 + y^2) underflowed to 0 (x^2 of 1e-320 is 0), and the
    heading divided by it: a ZeroDivisionError out of the actions phase (the scenario fuzz
    found it). anim.maths.detmath now scales such offsets first: the heading is the exact one."""
    g = new_game()
    fight = Fight(g)
    g.add_human("a", demo_set(), (0, 0, 0), 0.0)
    g.add_human("b", demo_set(), (0, offset, 0), 180.0)
    g.step()
    assert fight.face("a", toward="b")
    g.step()
    assert g.body("a").heading == 0.0                      # b is straight ahead, on +y
    g.add_human("c", demo_set(), (-offset, 0, 0), 0.0)
    g.step()
    assert fight.face("a", toward="c")
    g.step()
    assert g.body("a").heading == 90.0                     # c is on -x: a quarter turn left
