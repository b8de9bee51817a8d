"""Event handlers and the host's reactions to hits and K.O.s.

- An animation event handler is registered per event type with ``g.ctx.on(type,
  handler)``; it is called as ``handler(ctx, entity, fired)`` in the event dispatch, the
  second system of every update (systems/events.py), after every human has stepped and
  before anything is released. ``fired.event`` is the clip's event (``type``, ``frame``,
  ``args``, ``position``...; ``scuffle.anim.clip.EventType`` names the types the spec
  knows), ``fired.anim_id`` the clip that fired it. ``ctx.update`` is the update's number.
- Hits and K.O.s are the fight rules' own: today they reach the host through the fight
  log, ``fight.stats.log``: entries ``(update, human, what, ...)``, e.g.
  ``(31, "p1", "hit", "p2", 5.0)`` and ``(64, "p2", "ko", "p1")``; ``fight.stats.logged``
  counts every entry ever logged. The FightLog class below turns new entries into the
  host's callbacks once per update.

Run: ``python docs/examples/events.py`` (no window).
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from scuffle import Fight, Game, demo_set
from scuffle.anim.clip import EventType
from scuffle.game.fighters.moves import Move

fired_types: Counter[str] = Counter()


def on_window(ctx: Any, entity: int, fired: Any) -> None:
    """EventType.HELD_OPEN (0x2c): a strike's hit window opens."""
    print(f"update {ctx.update}: entity {entity}'s clip {fired.anim_id} opens its hit window "
          f"(frame {fired.event.frame})")


def count(ctx: Any, entity: int, fired: Any) -> None:
    """A default handler sees every event."""
    t = fired.event.type
    fired_types[EventType(t).name if t in EventType._value2member_map_ else hex(t)] += 1


class FightLog:
    """Calls ``on(what, entry)`` for each new fight log entry; ``poll()`` once per update."""

    def __init__(self, fight: Fight, on: dict[str, Callable[[tuple[Any, ...]], None]]) -> None:
        self.fight, self.on, self.seen = fight, on, fight.stats.logged

    def poll(self) -> None:
        new = self.fight.stats.logged - self.seen
        self.seen = self.fight.stats.logged
        for entry in list(self.fight.stats.log)[len(self.fight.stats.log) - new:] if new else ():
            callback = self.on.get(entry[2])
            if callback is not None:
                callback(entry)


def on_hit(entry: tuple[Any, ...]) -> None:
    update, attacker, _, victim, taken = entry
    print(f"update {update}: {attacker} hits {victim} for {taken:.0f}")


def on_ko(entry: tuple[Any, ...]) -> None:
    update, loser, _, winner = entry
    print(f"update {update}: K.O.! {loser} is down, {winner} wins")


with Game() as g:
    moves = demo_set()
    g.add_human("p1", moves, position=(0.0, 0.0, 0.0), heading=0.0)
    g.add_human("p2", moves, position=(0.0, 0.9, 0.0), heading=180.0, health=10.0)
    fight = Fight(g, ko=True)                       # K.O. at 0 health ends the round
    for name in ("p1", "p2"):
        g.change(name, g.player.loop(g.instance(name), Move.FIGHT_IDLE))
    g.ctx.on(EventType.HELD_OPEN, on_window)       # one type
    g.ctx.default_handlers.append(count)           # every type
    log = FightLog(fight, {"hit": on_hit, "ko": on_ko})

    for _ in range(120):
        if fight.free("p1") and not fight.round_over:
            fight.strike("p1", Move.JAB)
        g.step()
        log.poll()

    print("events fired:", dict(sorted(fired_types.items())))
    print(f"p2 health {fight.combat('p2').health:.0f}, state {fight.combat('p2').state}; rounds {fight.stats.rounds}")
