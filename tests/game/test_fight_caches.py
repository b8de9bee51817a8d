"""The fight rules' caches (the 2 fighters' commands made cheap) and
their invalidation: the gait speeds and np.interp axes kept per set (Fight._pace_scale,
Player.gait_speeds), the look-ups and prepared commands filled when a human joins
(Fight._warm, Player.learn), the fast paths of check_float / check_vec.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from scuffle.anim.base.limits import RangeError, check_float, check_vec
from scuffle.anim.data.rates import CfgAnimSpeeds, gait_speed
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.tasks import ClipTask, task_at
from scuffle.game.fighters.combat import Fight, FightFlags, FightState
from scuffle.game.fighters.fightcore import CLIP_LOOP_KEYS
from scuffle.game.fighters.moves import GAIT_IDS, Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _expected_speeds(s, speeds: CfgAnimSpeeds) -> tuple[float, ...]:
    """Each gait clip's displacement over its duration, divided by its rate (computed here
    from the clip and the rate table, no cache)."""
    return tuple(gait_speed(s.clip(m), speeds.rate_for(int(s.range(m).flags))) for m in GAIT_IDS[:4])


def _faster(s, factor: float):
    c = s.clip(Move.WALK)
    dx, dy = c.displacement
    return s.with_clip(Move.WALK, dataclasses.replace(c, displacement=(dx * factor, dy * factor)))


def test_the_gait_speeds_kept_per_set_follow_a_new_set_and_new_rates():
    """A human's set replaced (AnimSet.with_clip makes a new set) or the player's rate
    table replaced: the speeds (and the gait value a move picks) are found again; the
    same set and rates: the kept tuple itself."""
    game = Game()
    s = demo_set()
    game.add_human("a", s)
    fight = Fight(game)
    first = fight.gait_speeds("a")
    assert first == pytest.approx(_expected_speeds(s, game.player.options.speeds), abs=0)
    assert fight.gait_speeds("a") is first                       # kept
    faster = _faster(s, 2.0)
    game.instance("a").anim_set = faster
    again = fight.gait_speeds("a")
    assert again[0] == pytest.approx(first[0] * 2.0, rel=1e-6) and again[1:] == first[1:]
    rates = CfgAnimSpeeds(0.5, 0.4, 2.0, 1.5)
    game.player.options = dataclasses.replace(game.player.options, speeds=rates)
    new = fight.gait_speeds("a")
    assert new == _expected_speeds(faster, rates) and new != again
    assert game.player.gait_speeds(faster, GAIT_IDS[:4]) == new  # the player's own cache too
    game.close()


def test_a_move_after_the_rates_change_picks_the_gait_value_on_the_new_scale():
    """The np.interp axes are kept with the speeds: a move at a speed after new rates
    targets the value the new scale gives (np.interp over the new speeds)."""
    game = Game()
    game.add_human("a", demo_set())
    fight = Fight(game)
    game.change("a", game.player.loop(game.instance("a"), Move.IDLE))
    game.step()
    fight.gait_speeds("a")                                        # the old scale kept
    rates = CfgAnimSpeeds(0.5, 0.4, 2.0, 1.5)
    game.player.options = dataclasses.replace(game.player.options, speeds=rates)
    speeds = fight.gait_speeds("a")
    speed = (speeds[0] + speeds[1]) / 2.0
    assert fight.move("a", (0.0, 1.0), speed)
    gait = fight._gait(game.entity("a"))
    want = float(np.interp(speed, np.array(speeds), np.arange(4.0)))
    assert gait.target == pytest.approx(want, abs=1e-6) and 0.0 < gait.target < 1.0
    game.close()


def test_a_joining_human_has_its_set_looked_up_and_its_commands_learnt():
    """Fight._warm when a human joins: every Move of its set found (clip, rate, bank index,
    cursor proto) and the fight's prepared commands ready for the set, so the first strike
    and the first walk start take the direct path (no handle call); a set given later is
    learnt by its first command (the handle calls), the rows those calls leave."""
    game = Game()
    game.add_human("a", demo_set())
    game.add_human("b", demo_set(), position=(5.0, 0.0, 0.0), heading=180.0)
    fight = Fight(game)
    p = game.player
    s = game.instance("a").anim_set
    per = p.lookup._known_ids[id(s)]
    for m in Move:
        if m in s:
            e = per[2][m]
            assert e[1] is not None and e[2] >= 0 and e[3] is not None, m
    inst = game.instance("a")
    for key in CLIP_LOOP_KEYS:
        cmd = fight._clip_loop_command(*key)
        assert p.knows(inst, cmd, Move.JAB, Move.FIGHT_IDLE, None, None)
        assert p.knows(inst, cmd, Move.FIGHT_IDLE, Move.JAB, None, None)
        assert not p.knows(inst, cmd, Move.JAB, 99999, None, None)        # an id the set has not
    assert p.knows(inst, fight._walk_start_command(), 1.0, None)
    game.step()
    calls = []
    for name in ("clip", "loop", "gait", "change"):
        orig = getattr(p, name)
        setattr(p, name, lambda *a, _o=orig, _n=name, **k: calls.append(_n) or _o(*a, **k))
    assert fight.strike("a") and fight.move("b", (0.0, -1.0))
    assert calls == []                                            # the direct path, both
    for name in ("clip", "loop", "gait", "change"):
        delattr(p, name)
    a = game.instance("a").stack
    assert isinstance(a[0], ClipTask) and a[0].anim_id() == Move.JAB and a[0].next.anim_id() == Move.FIGHT_IDLE
    assert a[0].on_end.args == (game.entity("a"), "attack", fight.combat("a").serial)
    assert a[0].next.on_end == fight._kept() and fight.combat("a").state == FightState.ATTACKING
    game.close()


def test_warming_changes_nothing_a_trace_or_a_checksum_sees():
    """Two duels, one whose Fight warmed its caches at the join and one whose caches were
    emptied after: the same state digest after the same updates (the caches only keep
    what a command would find itself)."""
    from scuffle.game.fighters.ai import FighterAI

    digests = []
    for cold in (False, True):
        game = Game()
        game.add_human("a", demo_set())
        game.add_human("b", demo_set(), position=(4.0, 0.0, 0.0), heading=180.0)
        fight = Fight(game)
        if cold:
            p = game.player
            p.lookup._known_ids.clear()
            p.lookup._gait_speeds.clear()
            p.lookup._gait_clips = None
            fight.__dict__.pop("_pace_scales", None)
            p.__dict__.pop("_fight_commands", None)
        fight.controllers.append(FighterAI("a", "b", seed=5))
        fight.controllers.append(FighterAI("b", "a", seed=6))
        for _ in range(240):
            game.step()
        digests.append((game.checksum(), fight.stats.strikes, fight.stats.grabs))
        game.close()
    assert digests[0] == digests[1] and digests[0][1] > 0


def test_learn_refuses_as_a_run_and_adds_nothing():
    """Player.learn: the wrong number of params (RecipeError), an id the set has no clip
    for (the look-up's error); nothing written to the tables, nothing added to the bank."""
    from scuffle.anim.playback.lookup import UnknownClip
    from scuffle.anim.playback.recipe import RecipeError

    game = Game()
    game.add_human("a", demo_set())
    p = game.player
    inst = game.instance("a")
    cmd = Fight(game)._clip_loop_command(0, 0, 0.1)
    with pytest.raises(RecipeError, match="4 params"):
        p.learn(inst, cmd, Move.JAB)
    missing = next(i for i in range(inst.anim_set.num_ids) if i not in inst.anim_set)
    with pytest.raises(UnknownClip):
        p.learn(inst, cmd, missing, Move.IDLE, None, None)
    bank, n_out = len(p._clips), p.pool.n_out
    p.learn(inst, cmd, Move.KICK, Move.IDLE, None, None)
    assert len(p._clips) == bank and p.pool.n_out == n_out
    game.close()


def test_task_at_keeps_a_plain_int_row():
    """A handle made on its first read from a numpy int row keeps a plain int (its row is
    part of the snapshot's digest)."""
    game = Game()
    game.add_human("a", demo_set())
    fight = Fight(game)
    game.step()
    fight._clip_loop(game.entity("a"), Move.JAB, Move.FIGHT_IDLE)
    h = game.player.batch.humans
    r = np.asarray(h.m_stack)[game.instance("a").slot * h.stack_width]
    ts = game.player.stores.tasks
    ts.views[int(r)] = None                                       # as the direct path leaves it
    t = task_at(ts, r)
    assert t.trow.__class__ is int and t.trow == int(r)
    game.close()


@pytest.mark.parametrize("value", [0.5, -0.0, 1e9, -1e9, 3, True, "1", None, math.nan, math.inf, -math.inf,
                                   1e9 + 1.0, np.float32(0.25), np.float64(2.0), 10 ** 400])
def test_check_float_fast_path_answers_as_the_checked_path(value):
    """check_float on a plain float takes a short path: the same value or the same error
    as the full checks for every kind of input."""
    for lo, hi, lo_open in ((-1e9, 1e9, False), (0.0, 1.0, True), (None, 50.0, False), (None, None, False)):
        try:
            got = ("ok", check_float("x", value, lo, hi, lo_open=lo_open))
        except RangeError as e:
            got = ("err", str(e))
        # the reference answer: the rules written out
        if isinstance(value, bool) or not hasattr(value, "__float__"):
            assert got[0] == "err" and "expected a number" in got[1]
            continue
        try:
            f = float(value)
        except OverflowError:
            assert got[0] == "err"
            continue
        ok = math.isfinite(f) and (hi is None or f <= hi) and (lo is None or (f > lo if lo_open else f >= lo))
        assert got[0] == ("ok" if ok else "err"), (value, lo, hi)
        if ok:
            assert got[1] == f and math.copysign(1.0, got[1]) == math.copysign(1.0, f) and got[1].__class__ is float


@pytest.mark.parametrize("value", [(1.0, 2.0), (1.0, -0.0), [1.0, 2.0], (1, 2.0), (1.0,), (1.0, 2.0, 3.0),
                                   (math.nan, 1.0), (1.0, math.inf), (2e9, 0.0), (True, 1.0), 5, "ab"])
def test_check_vec_fast_path_answers_as_the_checked_path(value):
    """check_vec on a tuple of plain floats takes a short path: the same tuple of floats
    or the same RangeError (naming the index) as the full checks."""
    try:
        got = ("ok", check_vec("move: direction", value, 2))
    except RangeError as e:
        got = ("err", str(e))
    try:
        items = list(value)
    except TypeError:
        assert got[0] == "err" and "expected 2 numbers" in got[1]
        return
    if len(items) != 2:
        assert got == ("err", f"move: direction: expected 2 numbers, got {len(items)}")
        return
    want = []
    for i, v in enumerate(items):
        try:
            want.append(check_float(f"move: direction[{i}]", v, -1e9, 1e9))
        except RangeError as e:
            assert got == ("err", str(e))
            return
    assert got == ("ok", tuple(want)) and all(x.__class__ is float for x in got[1])
    assert [math.copysign(1.0, x) for x in got[1]] == [math.copysign(1.0, x) for x in want]


def test_a_reference_game_fights_without_the_compiled_caches():
    """The reference engine (no look-up cache, no direct path): the fight joins, warms
    what it can (the gait speeds) and its commands run as the handle calls."""
    game = Game(engine="reference")
    game.add_human("a", demo_set())
    game.add_human("b", demo_set(), position=(1.2, 0.0, 0.0), heading=90.0)
    fight = Fight(game)
    assert not isinstance(game.instance("a"), CharacterInstance)
    game.step()
    assert fight.gait_speeds("a") == _expected_speeds(demo_set(), game.player.options.speeds)
    assert fight.strike("a") and fight.move("b", (1.0, 0.0), pace="walk")
    game.step()
    assert game.record("a").anim_id == Move.JAB
    game.close()


@pytest.mark.parametrize("hit_code, state", [(0x00, FightState.REACTING), (0x20, FightState.DOWN)])
def test_a_reaction_whose_change_refuses_leaves_the_state_set_as_before(hit_code, state):
    """A hit reaction as one prepared command keeps the rule's order: its state is set
    once the tasks are made, before the change; a change that refuses (a full stack,
    StackFull) leaves that state, the stack as it was and the tasks given back."""
    from scuffle.anim.playback.player import PlayerOptions
    from scuffle.anim.engine.stack import StackFull

    game = Game(PlayerOptions(early_finish_above=40))
    game.add_human("v", demo_set())
    fight = Fight(game)
    game.step()
    p, inst = game.player, game.instance("v")
    while len(inst.stack) < 18:                  # full (the fight idle it was given at the bottom)
        p.push(inst, p.loop(inst, Move.IDLE))
    n_out, depth = p.pool.n_out, len(inst.stack)
    with pytest.raises(StackFull):
        fight._react(game.entity("v"), hit_code, False)
    assert fight.combat("v").state == state and len(inst.stack) == depth and p.pool.n_out == n_out
    game.close()


def test_a_prepared_fight_change_gives_the_handle_calls_digest_with_no_handle_made():
    """A fight change run as a prepared command leaves the state digest of the handle calls
    (Game.checksum digests rows, not which handles exist), though it makes no handle: the
    handle calls make three (the loop, the clip, the fade)."""
    digests = []
    for prepared in (True, False):
        game = Game()
        game.add_human("a", demo_set())
        fight = Fight(game)
        game.step()
        e = game.entity("a")
        ts = game.player.stores.tasks
        before = sum(v is not None for v in ts.views)
        if prepared:
            fight._clip_loop(e, Move.JAB, Move.FIGHT_IDLE, held=int(FightFlags.WINDUP), on_end=fight._ended(e, "x"))
        else:
            fight._change(e, fight._clip(e, Move.JAB, fight._loop(e, Move.FIGHT_IDLE), held=FightFlags.WINDUP,
                                         on_end=fight._ended(e, "x")))
        digests.append((game.checksum(), sum(v is not None for v in ts.views) - before))
        game.close()
    assert digests[0][0] == digests[1][0]
    assert (digests[0][1], digests[1][1]) == (0, 3)


def test_a_closed_game_is_not_kept_alive_by_the_fights_commands():
    """The fight's prepared commands are kept on the Player (a Command keeps the Player it
    learnt a set with: a cycle): once the Game is closed and dropped, its Player is
    collected."""
    import gc
    import weakref

    game = Game()
    game.add_human("a", demo_set())
    game.add_human("b", demo_set(), position=(1.0, 0.0, 0.0))
    fight = Fight(game)
    game.step()
    assert fight.strike("a") and fight.move("b", (1.0, 0.0))
    game.step()
    gone = weakref.ref(game.player)
    game.close()
    del game, fight
    gc.collect()
    assert gone() is None


def test_the_fight_rules_keep_their_prepared_commands_on_the_player():
    """The Fight's Commands are kept on its Game's Player (fightcore.fight_commands): one
    set of templates per anim set, whatever the number of fighters (the bench's pairs,
    each a Fight on a view of one Game, share them)."""
    from scuffle.game.fighters.fightcore import fight_commands

    game = Game()
    for i, name in enumerate(("a", "b", "c", "d")):
        game.add_human(name, demo_set(), position=(3.0 * i, 0.0, 0.0))
    f1 = Fight(game)
    key = CLIP_LOOP_KEYS[0]
    cmds = fight_commands(game.player)
    assert f1._clip_loop_command(*key) is f1._clip_loop_command(*key)
    assert f1._clip_loop_command(*key) in cmds.values() and f1._walk_start_command() in cmds.values()
    assert len(cmds) == len(CLIP_LOOP_KEYS) + 1 and all(len(c._sets) == 1 for c in cmds.values())
    game.close()


def test_the_per_update_loops_read_the_humans_once_per_configuration():
    """Fight._parts (the humans and their components the per-update loops walk): the same
    tuple from update to update while nothing changes; made again, as game.humans() lists
    them, after a join and a leave; the same tuple again after a change made in esper
    behind the Game's back that leaves the same humans (their components' dicts are
    esper's own, read live: the swapped Body is read through it)."""
    import esper

    from scuffle.components import Body

    g = Game()
    s = demo_set()
    g.add_human("a", s, (0.0, 0.0, 0.0))
    g.add_human("b", s, (1.0, 0.0, 0.0))
    fight = Fight(g)

    def listed():
        return tuple((e, g._entities[e]) for _, e in g.humans())

    try:
        g.step()
        first = fight._parts()
        g.step()
        assert fight._parts() is first and first == listed()
        g.add_human("c", s, (3.0, 0.0, 0.0))
        assert fight._parts() == listed() and len(fight._parts()) == 3
        g.remove_human("a")
        assert fight._parts() == listed() and len(fight._parts()) == 2
        kept = fight._parts()
        with g.active():                                  # a Body swapped behind the Game's back
            esper.add_component(g.names["b"], Body(position=(5.0, 5.0, 0.0)))
        now = fight._parts()
        assert now is kept and now == listed() and now[0][1][Body].position[0] == 5.0
        for _ in range(5):                                # the rules run on the world as it is
            g.step()
    finally:
        g.close()
