"""The fights' per-update actions as one (game.fighters.fightupdates): the quiet fights
found over their fighters' rows at once and only their AIs' ticks counted, the bits of
each fight's own action run one after the other."""
from __future__ import annotations

import io
import random

import esper
import pytest

from scuffle import HandlerError
from scuffle.components import Combat
from scuffle.game.fighters import fightupdates
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import Fight
from scuffle.game.fighters.fightdata import FightEventKind, FightState
from scuffle.game.fighters.fightupdates import FightUpdates
from scuffle.game.runtime.snapfile import stateful
from scuffle.game.runtime.trace import iter_trace_records, write_records
from scuffle.game.tools.bench import FIGHT_EVERY, build_crowd, crowd_set


def _apart(game) -> None:
    """Each fight's own action in the group's place: the rules as they run one by one."""
    acts = game.ctx.actions
    k = next(i for i, a in enumerate(acts) if a.__class__ is FightUpdates)
    acts[k:k + 1] = [f._update for f in acts[k].fights]


def _run(game, updates: int, at=None, errors: list | None = None) -> tuple[str, list[str]]:
    """Step ``updates`` times: the trace's bytes and each update's checksum; ``at(u)`` is
    called before update u; with ``errors``, an update that raises a HandlerError (the
    update complete) has (u, its errors as text) appended there and the run goes on."""
    out, sums = io.StringIO(), []
    for u in range(updates):
        if at is not None:
            at(game, u)
        try:
            game.step()
        except HandlerError as e:
            if errors is None:
                raise
            errors.append((u, [f"{type(x).__name__}: {x}" for x in e.errors]))
        write_records(out, iter_trace_records(game))
        sums.append(game.checksum())
    return out.getvalue(), sums


def _both(seed: int, updates: int, at=None, n: int = 3 * FIGHT_EVERY + 2):
    """The same crowd run with the fights' actions as one group and each on its own."""
    runs = []
    for grouped in (True, False):
        game = build_crowd(n, "realistic", seed=seed)
        try:
            if not grouped:
                _apart(game)
            runs.append((_run(game, updates, at), [(f.stats.strikes, f.stats.grabs, f.stats.throws)
                                                   for f in game.crowd.fights]))
        finally:
            game.close()
    return runs


def test_the_fights_actions_are_one_group_in_their_place():
    """Every pair's Fight joins the one group, which stands in the actions where their own
    actions stood (the crowd's commands after it) and is saved as they are, each fight in
    its place; a lone Fight keeps its own action."""
    game = build_crowd(302, "realistic", seed=2)
    try:
        acts = game.ctx.actions
        assert [a.__class__ for a in acts] == [FightUpdates, type(game.crowd)]
        assert acts[0].fights == game.crowd.fights and len(game.crowd.fights) == 4
        assert stateful(game)[:4] == game.crowd.fights
    finally:
        game.close()
    game = build_crowd(2, "realistic")
    try:
        assert game.ctx.actions[0] == game.fight._update
    finally:
        game.close()


def test_a_fight_after_another_action_starts_its_own_place():
    """A fight joins the group only when the group (or another fight's own action) is the
    last action: after an action of the host's it stands alone, after that action."""
    class Ctx:
        actions: list

    class Lone(Fight):
        def __init__(self):                          # (no Game: only what join reads)
            pass

    ctx = Ctx()
    ctx.actions = []
    a, b, c, d = (Fight.__new__(Fight) for _ in range(4))
    fightupdates.join(ctx, a)
    assert ctx.actions == [a._update]
    fightupdates.join(ctx, b)
    assert [x.__class__ for x in ctx.actions] == [FightUpdates] and ctx.actions[0].fights == [a, b]
    fightupdates.join(ctx, c)
    assert ctx.actions[0].fights == [a, b, c]
    host = object()
    ctx.actions.append(host)
    fightupdates.join(ctx, d)
    assert ctx.actions[1:] == [host, d._update]
    e = Lone()                                        # a subclass: its own action, never grouped
    fightupdates.join(ctx, e)
    assert ctx.actions[-1] == e._update and ctx.actions[-2] == d._update


@pytest.mark.slow
def test_the_quiet_fights_give_each_fights_own_bits(monkeypatch):
    """A crowd of four fight pairs striking, grabbing, throwing and knocking down: the
    trace bytes and checksums of 240 updates with the fights' actions as one are those of
    each fight's own action run in turn; quiet fights were found and skipped, busy ones
    (a human down, a window pending, an AI deciding) ran whole."""
    seen = {"quiet": 0, "whole": 0, "down": 0}
    real_quiet, real_busy = fightupdates._quiet, FightUpdates.busy

    def quiet(f, ctx):
        got = real_quiet(f, ctx)
        seen["quiet" if got else "whole"] += 1
        return got

    def busy(self):
        got = real_busy(self)
        seen["down"] += sum(got or ())
        return got

    monkeypatch.setattr(fightupdates, "_quiet", quiet)
    monkeypatch.setattr(FightUpdates, "busy", busy)
    grouped, apart = _both(5, 240)
    assert grouped == apart
    assert seen["quiet"] > seen["whole"] > 0 and seen["down"] > 0, seen
    assert all(s[0] > 0 for s in grouped[1]) and sum(s[2] for s in grouped[1]) > 0


@pytest.mark.slow
def test_a_partner_gone_and_a_host_listener_give_each_fights_own_bits():
    """A host listener of the first fight that knocks a fighter of the third one down on
    each blow (a host's code: the fights after it run whole, the third one counting its
    human's time down) and a fighter given a partner that is no human of the world (freed
    as the fight's own update frees one whose partner left): the same trace bytes and checksums as each fight's
    own action run in turn."""
    def at(game, u):
        fights = game.crowd.fights
        if u == 5:
            other = next(iter(fights[2].game.names.values()))

            def knock(ev, game=game, other=other):
                c = game.component(other, Combat)
                if c.state == FightState.FREE:
                    c.state = FightState.DOWN
                    c.down_left = 3

            fights[0].on(FightEventKind.HIT, knock)
            fights[0].on(FightEventKind.MISS, knock)
        if u == 40:                                   # a partner no human of the world is
            ent = next(iter(fights[1].game.names.values()))
            game.component(ent, Combat).partner = 1 << 30

    grouped, apart = _both(3, 120, at)
    assert grouped == apart


def test_a_fight_that_raises_keeps_no_other_fight_from_its_update(monkeypatch):
    """One fight's update raising is kept for the update's end (HandlerError); every
    other fight's update ran: its AIs counted the update."""
    game = build_crowd(302, "realistic", seed=4)
    try:
        game.step()
        fights = game.crowd.fights
        ticks = [[ai.tick for ai in f.controllers] for f in fights]

        def broken(ctx):
            raise RuntimeError("a rule broke")

        fights[1]._update = broken                   # (its own action: run whole, in its place)
        with pytest.raises(HandlerError) as got:
            game.step()
        assert any("a rule broke" in str(e) for e in got.value.errors)
        after = [[ai.tick for ai in f.controllers] for f in fights]
        for k, (was, now) in enumerate(zip(ticks, after)):
            if k != 1:
                assert now == [t + 1 for t in was], (k, was, now)
    finally:
        game.close()


def test_a_controller_of_the_hosts_runs_in_its_update():
    """A fight with a controller that is no FighterAI is never taken as quiet: the
    controller is called every update, in its fight's turn."""
    game = build_crowd(302, "realistic", seed=6)
    try:
        calls = []
        fights = game.crowd.fights
        fights[2].controllers.append(lambda fight: calls.append(fight))
        for _ in range(12):
            game.step()
        assert calls == [fights[2]] * 12
        assert all(isinstance(c, FighterAI) for f in fights[:2] for c in f.controllers)
    finally:
        game.close()


def test_an_ais_human_not_found_raises_on_every_update():
    """An AI whose opponent is no human of the world raises on every update, decision or
    not, as its ``decide`` looks both up each time: its fight is never taken as quiet."""
    game = build_crowd(302, "realistic", seed=7)
    try:
        game.step()
        game.crowd.fights[2].controllers[0].opponent = "nobody"
        for _ in range(8):
            with pytest.raises(HandlerError) as got:
                game.step()
            assert "nobody" in str(got.value.errors[0])
    finally:
        game.close()


def test_a_restore_replays_the_grouped_fights_to_the_same_bits():
    """A snapshot of a crowd of four fights, restored: the next updates give the same
    checksums as the first time (each fight saved and put back in its place, the
    group's kept rows read again)."""
    game = build_crowd(302, "realistic", seed=8)
    try:
        for _ in range(20):
            game.step()
        snap = game.snapshot()
        first = _run(game, 40)[1]
        game.restore(snap)
        assert _run(game, 40)[1] == first
    finally:
        game.close()


def test_an_ai_seated_twice_or_unable_to_count_runs_its_fight_whole():
    """An AI seated twice on its fight counts two ticks an update (its fight is never
    taken as quiet), and one whose ``think_every`` cannot count raises in its fight's turn
    while the other fights run: the same bits as each fight's own action."""
    def at(game, u):
        fights = game.crowd.fights
        if u == 3:
            ai = fights[1].controllers[0]
            fights[1].controllers.append(ai)
        if u == 9:
            fights[2].controllers[1].think_every = 0

    runs = []
    for grouped in (True, False):
        game = build_crowd(302, "realistic", seed=9)
        try:
            if not grouped:
                _apart(game)
            sums, errors = [], []
            for u in range(30):
                at(game, u)
                try:
                    game.step()
                except HandlerError as e:
                    errors.append((u, [type(x).__name__ for x in e.errors]))
                sums.append(game.checksum())
            ticks = [[ai.tick for ai in f.controllers] for f in game.crowd.fights]
            runs.append((sums, errors, ticks))
        finally:
            game.close()
    assert runs[0] == runs[1]
    assert runs[0][1] and all(u >= 9 for u, _ in runs[0][1])          # the AI that cannot count: every update
    assert runs[0][2][1][0] == runs[0][2][1][2]                       # (the AI seated twice: one object)


def _host_change(game, rng: random.Random, u: int, kept: dict) -> int:
    """One change a host may make between updates, drawn from ``rng``: a fighter knocked
    down or given a partner that is no human, an AI's pace of thought changed, a
    controller of the host's added or one taken away, a listener that knocks a fighter of
    any fight down on a blow (and may add a human there, inside the update), an extra
    joining, leaving or deleted in esper behind the Game's back, a snapshot taken or
    restored (none taken before a human left). Returns which change it drew (0-10)."""
    fights = game.crowd.fights
    f = fights[rng.randrange(len(fights))]
    name = rng.choice(sorted(f.game.names))
    fighters = {n for fi in fights for n in fi.game.names}
    extras = [(n, e) for n, e in game.humans() if n not in fighters]
    kind = rng.randrange(11)
    if kind == 0:
        c = game.component(name, Combat)
        c.state, c.down_left = FightState.DOWN, rng.randrange(1, 6)
    elif kind == 1:
        game.component(name, Combat).partner = rng.choice([1 << 30, -1])
    elif kind == 2:
        for ctl in f.controllers:
            if isinstance(ctl, FighterAI):
                ctl.think_every = rng.randrange(1, 5)
    elif kind == 3:
        f.controllers.append(lambda fight: None)
    elif kind == 4 and f.controllers:
        f.controllers.pop(rng.randrange(len(f.controllers)))
    elif kind == 5:                                   # a fighter of any fight, a later one's too
        other = rng.choice(sorted(fighters))
        joins = rng.random() < 0.3

        def knock(ev, game=game, other=other, joins=joins):
            c = game.component(other, Combat)
            if c.state == FightState.FREE:
                c.state, c.down_left = FightState.DOWN, 2
            if joins:                                 # the world's humans changed inside the update
                game.add_human(f"mid{game.ctx.update}", crowd_set(), (0.0, 0.0, 0.0), 0.0)

        f.on(rng.choice([FightEventKind.HIT, FightEventKind.MISS]), knock)
    elif kind == 6:
        game.add_human(f"new{u}", crowd_set(), (rng.random() * 4.0, rng.random() * 4.0, 0.0), 0.0)
    elif kind == 7 and extras:
        game.remove_human(rng.choice(extras)[0])
        kept.pop("snap", None)                       # (a human removed cannot come back: Game.restore)
    elif kind == 8 and extras:
        with game.active():
            esper.delete_entity(rng.choice(extras)[1], immediate=rng.random() < 0.5)
        kept.pop("snap", None)
    elif kind == 9:
        kept["snap"] = game.snapshot()
    elif kind == 10 and "snap" in kept:
        game.restore(kept["snap"])
    return kind


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12])
def test_a_hosts_random_changes_give_each_fights_own_bits(seed):
    """A host changing the world at random between updates (``_host_change``, before
    about one update in twelve): the trace bytes, the checksums and the errors the updates
    raise with the fights' actions as one group are those of each fight's own action."""
    runs = []
    for grouped in (True, False):
        game = build_crowd(3 * FIGHT_EVERY + 2, "realistic", seed=seed)
        try:
            if not grouped:
                _apart(game)
            rng, kept, kinds, errors = random.Random(seed), {}, set(), []

            def at(game, u, rng=rng, kept=kept, kinds=kinds):
                if rng.random() < 0.08:
                    kinds.add(_host_change(game, rng, u, kept))

            runs.append((*_run(game, 150, at, errors), errors, kinds))
        finally:
            game.close()
    assert runs[0] == runs[1]
    assert len(runs[0][3]) >= 5, runs[0][3]                           # (changes of many kinds drawn)
