"""A host esper game that embeds scuffle: the host's own components and processors in its
own esper world, scuffle's six systems attached to it with ``Game.attach()``.

The host keeps a Torch (a light that follows a human) and a Stamina component; its
processors move each torch to its human's head and drain stamina while a human walks.
scuffle's humans are ordinary esper entities, so a host processor reads their Body
components like its own. Run: ``python docs/examples/host_game.py`` (no window).
"""
from __future__ import annotations

from dataclasses import dataclass

import esper

from scuffle import Body, Bone, Fight, Game, Name, demo_set


@dataclass(slots=True)
class Torch:                      # the host's component: a light that follows a human
    follows: str
    at: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(slots=True)
class Stamina:                    # another: spent while walking, back while standing
    value: float = 10.0


class FollowHead(esper.Processor):
    """The host's processor: each torch goes to its human's head (world space)."""

    def __init__(self, game: Game) -> None:
        self.game = game

    def process(self, *args: object) -> None:
        for _, torch in esper.get_component(Torch):
            pos, _rot = self.game.bones_world(torch.follows)
            x, y, z = (float(v) for v in pos[Bone.HEAD])
            torch.at = (x, y, z + 0.3)


class Tire(esper.Processor):
    """The host's processor over scuffle's entities: Body (scuffle's) and Stamina (ours)."""

    def process(self, *args: object) -> None:
        for _, (body, stamina) in esper.get_components(Body, Stamina):
            speed = float((body.velocity[0] ** 2 + body.velocity[1] ** 2) ** 0.5)
            stamina.value = max(0.0, stamina.value - speed / 30) if speed > 0.1 else min(10.0, stamina.value + 0.05)


esper.switch_world("level")                      # the host's world
esper.add_processor(Tire())                      # priority 0: after scuffle's six
g = Game.attach()                                # scuffle's systems join the world
esper.add_processor(FollowHead(g))
fight = Fight(g)                                 # the fight rules, to walk with
hero = g.add_human("hero", demo_set(), position=(0, 0, 0), heading=0)
esper.add_component(hero, Stamina())             # a host component on scuffle's entity
esper.create_entity(Torch(follows="hero"))       # and an entity of the host's own

fight.move("hero", direction=(0.0, 1.0), pace="walk")
for update in range(90):                         # the host's loop: 3 s at 30 Hz
    esper.process(1 / 30)                        # one update of scuffle (whatever dt says)
    if update == 60:
        fight.move("hero", speed=0.0)            # stop

for ent, (name, body, stamina) in esper.get_components(Name, Body, Stamina):
    print(f"{name.value}: walked to y = {body.position[1]:.2f} m, stamina {stamina.value:.2f}")
(torch,) = [t for _, t in esper.get_component(Torch)]
print(f"torch over the head at z = {torch.at[2]:.2f} m, {g.update} updates")
g.close()                                        # scuffle's systems and humans leave
print("after close: host world kept:", "level" in esper.list_worlds(),
      "| host systems kept:", esper.get_processor(Tire) is not None and esper.get_processor(FollowHead) is not None,
      "| scuffle's humans gone:", not esper.get_components(Name, Body))
