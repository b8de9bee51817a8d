"""Shared helpers of the netplay tests: the two fighters' Game, a clock the test moves,
and two sessions played against each other in one process over a simulated link."""
from __future__ import annotations

from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import Fight
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game
from scuffle.net import MemoryLink, Session, SimLink

PLAYERS = ("p1", "p2")
DT = 1.0 / 30.0
_SET = []


def build(health: float = 100.0) -> Game:
    """Two fighters 3 m apart, the fight rules (bodies apart, rounds), the fight idle
    started at update 0 by an action of their own (before the session's inputs)."""
    if not _SET:
        _SET.append(demo_set())
    g = Game()
    g.add_human("p1", _SET[0], position=(0.0, -1.5, 0.0), heading=0.0, health=health)
    g.add_human("p2", _SET[0], position=(0.0, 1.5, 0.0), heading=180.0, health=health)
    Fight(g, separate=True, rounds=True, round_pause=60)

    def start(ctx) -> None:
        if ctx.update == 0:
            for n in PLAYERS:
                g.change(n, g.player.loop(g.instance(n), Move.FIGHT_IDLE))
    g.ctx.actions.insert(0, start)
    return g


class Clock:
    """A clock the test moves (seconds)."""

    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def pair(seed: int, *, loss: float = 0.2, delay: int = 6, jitter: int = 1, clock: Clock | None = None,
         spectators=(), **kw):
    """Two sessions (p1 here, p2 there) over an in-memory pair behind simulated links;
    shaken hands. Returns (a, b, clock)."""
    clock = clock or Clock()
    x, y = MemoryLink.pair()
    opts = dict(delay=delay * DT, jitter=jitter * DT, loss=loss, duplicate=0.05, reorder=0.05, clock=clock)
    la, lb = SimLink(x, seed=seed, **opts), SimLink(y, seed=seed + 7919, **opts)
    a = Session(build, PLAYERS, "p1", la, clock=clock, warm=False, spectators=spectators, **kw)
    b = Session(build, PLAYERS, "p2", lb, clock=clock, warm=False, **kw)
    for _ in range(400):
        if a.synchronized and b.synchronized:
            break
        clock.t += 0.01
        a.poll()
        b.poll()
    assert a.synchronized and b.synchronized
    return a, b, clock


def play(a, b, clock: Clock, updates: int, seed: int, others=()) -> None:
    """Both peers' AIs play until ``updates`` is confirmed and compared on both (bounded)."""
    ais = {id(a): FighterAI("p1", "p2", seed=seed + 1000, think_every=3),
           id(b): FighterAI("p2", "p1", seed=seed, think_every=3)}
    a.finish_at(updates)
    b.finish_at(updates)
    for _ in range(updates * 4 + 200):
        if a.finished and b.finished:
            return
        clock.t += DT
        for s, me in ((a, "p1"), (b, "p2")):
            s.poll()
            if s.can_advance():
                s.add_local_input(me, ais[id(s)].decide(s.game))
            s.advance()
        for o in others:
            o()
    raise AssertionError(f"not finished: {a.frame}/{a.confirmed_update}, {b.frame}/{b.confirmed_update}")
