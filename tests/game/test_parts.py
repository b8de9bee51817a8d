"""The Game's look-ups of its humans' components (``Game._entities``, the crowd's ``parts``)
share esper's own dict of each entity (systems.crowd.entity_parts): no second dict a human
(3.5 MB at 10,000, docs/performance.md "Where the memory goes").

Checked here: after add_human and after the crowd is read again from esper (a change behind
the Game's back), each human's parts is the very dict esper keeps for the entity, holding
its nine components; the look-ups give those components; a dict esper does not keep as
expected (another esper's layout, or one not holding the Game's components) gives a dict
of the crowd's own with the same entries.
"""
from __future__ import annotations

import esper

from scuffle.components import Body, Combat, HumanRecord
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game
from scuffle.systems import crowd as crowd_mod


def _game(n: int = 3) -> Game:
    g = Game()
    for k in range(n):
        g.add_human(f"h{k}", demo_set(), position=(float(k), 0.0, 0.0))
    return g


def _esper_dicts(g: Game) -> dict:
    prev = esper.current_world
    esper.switch_world(g.world)
    try:
        return {e: esper._entities[e] for e in g._entities}
    finally:
        esper.switch_world(prev)


def test_the_games_parts_are_esper_own_dicts_and_look_ups_read_them():
    g = _game()
    try:
        theirs = _esper_dicts(g)
        assert len(theirs) == 3
        for ent, parts in g._entities.items():
            assert parts is theirs[ent] and len(parts) == 9
        for k in range(3):
            ent = g.names[f"h{k}"]
            assert g.body(f"h{k}") is g._entities[ent][Body]
            assert g._entities[ent][Combat].health > 0
        g.step()
        # a change behind the Game's back: the crowd is read again from esper, still shared
        prev = esper.current_world
        esper.switch_world(g.world)
        try:
            esper.create_entity(Body())
        finally:
            esper.switch_world(prev)
        g.step()
        theirs = _esper_dicts(g)
        assert all(parts is theirs[ent] for ent, parts in g._entities.items())
    finally:
        g.close()


def test_a_dict_esper_does_not_keep_as_expected_gives_one_of_the_crowds_own(monkeypatch):
    prev = esper.current_world
    esper.switch_world("parts-own")
    try:
        comps = (Body(), HumanRecord())
        ent = esper.create_entity(*comps)
        shared = crowd_mod.entity_parts(ent, comps)
        assert shared is esper._entities[ent]
        # not the Game's components: a dict of its own, the same entries as given
        other = crowd_mod.entity_parts(ent, (Body(), comps[1]))
        assert other is not esper._entities[ent] and other[HumanRecord] is comps[1]
        # an esper that keeps no dict of dicts there
        monkeypatch.setattr(esper, "_entities", None)
        own = crowd_mod.entity_parts(ent, comps)
        assert type(own) is dict and own == {Body: comps[0], HumanRecord: comps[1]}
    finally:
        monkeypatch.undo()
        esper.switch_world(prev)
        esper.delete_world("parts-own")
