"""Event handlers and the host's reactions to hits and K.O.s.

- An animation event handler is registered per event type with ``g.on(type, handler)``
  (``g.ctx.on`` underneath); it is called as ``handler(ctx, entity, fired)`` in the event
  dispatch, the second system of every update (systems/events.py), after every human has
  stepped and before anything is released. ``fired.event`` is the clip's event (``type``,
  ``frame``, ``args``, ``position``...; ``scuffle.EventType`` names the types
  the spec knows), ``fired.anim_id`` the clip that fired it. ``ctx.update`` is the
  update's number; ``g.name_of(entity)`` the human's name.
- Hits and K.O.s are the fight rules' own: ``fight.on_hit(handler)``, ``fight.on_ko``,
  ``fight.on_round`` (or ``fight.on(kind, handler)`` for "miss", "grab", "throw",
  "fall"...) call ``handler(event)`` with a ``FightEvent`` (kind, update, attacker,
  victim, move, damage, health, round, winner: data only) in the update it happens in.
- Every fight command answers: an ``ActionResult``, truthy when accepted, falsy with its
  ``refusal`` and a sentence when not.

Run: ``python docs/examples/events.py`` (no window).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from scuffle import EventType, Fight, FightEvent, Game, demo_set

fired_types: Counter[str] = Counter()


def on_window(ctx: Any, entity: int, fired: Any) -> None:
    """EventType.HELD_OPEN (0x2c): a strike's hit window opens."""
    print(f"update {ctx.update}: entity {entity}'s clip {fired.anim_id} opens its hit window "
          f"(frame {fired.event.frame})")


def count(ctx: Any, entity: int, fired: Any) -> None:
    """A default handler sees every event."""
    t = fired.event.type
    fired_types[EventType(t).name if t in EventType._value2member_map_ else hex(t)] += 1


def on_hit(e: FightEvent) -> None:
    print(f"update {e.update}: {e.attacker} hits {e.victim} for {e.damage:.0f}")


def on_ko(e: FightEvent) -> None:
    print(f"update {e.update}: K.O.! {e.victim} is down, {e.attacker} wins")


with Game() as g:
    moves = demo_set()
    fight = Fight(g, ko=True)                       # K.O. at 0 health ends the round
    g.add_human("p1", moves, position=(0.0, 0.0, 0.0), heading=0.0)      # both idle (FIGHT_IDLE)
    g.add_human("p2", moves, position=(0.0, 0.9, 0.0), heading=180.0, health=10.0)
    g.on(EventType.HELD_OPEN, on_window)           # one type
    g.ctx.default_handlers.append(count)           # every type
    fight.on_hit(on_hit)
    fight.on_ko(on_ko)

    refused = fight.throw("p1")                    # nobody held: refused, and why
    print(f"throw: {bool(refused)} ({refused.refusal})")
    for _ in range(120):
        if fight.free("p1") and not fight.round_over:
            fight.strike("p1", "JAB")              # the clip's name in the set (id 11)
        g.step()

    print("events fired:", dict(sorted(fired_types.items())))
    print(f"p2 health {fight.combat('p2').health:.0f}, state {fight.combat('p2').state}; rounds {fight.stats.rounds}")
