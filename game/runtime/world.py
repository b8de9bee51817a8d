"""The embeddable runtime: one esper world, its animation player and its systems.

    g = Game()                                  # its own esper world; no pygame
    e = g.add_human("a", anim_set, position=(0, 0, 0), heading=0)
    g.change("a", g.player.loop(g.instance("a"), 388))
    g.step()                                    # one 30 Hz update, the SCHEDULE order

Several Games live side by side (each switches to its own esper world while it
steps). A host that keeps its own esper world can instead call
``game.schedule.install(SimContext(Player()))`` there.
"""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import Iterator

import esper
import numpy as np

from scuffle.anim.animset import AnimSet
from scuffle.anim.player import Player, PlayerOptions
from scuffle.anim.stack import CharacterInstance, HumanRecord
from scuffle.anim.tasks import Task
from scuffle.components import (Animator, AnimSetRef, Body, Combat, FiredEvents, Name, PoseRef,
                        RangeRecords)
from scuffle.game.runtime import schedule
from scuffle.systems.context import SimContext

__all__ = ["Game", "UnknownHuman"]

_ids = itertools.count(1)


class UnknownHuman(KeyError):
    """A human name that is not in the world."""

    def __str__(self) -> str:
        return f"no human named {self.args[0]!r}"


class Game:
    """One simulated world (see the module docstring).

    In: PlayerOptions (rates, the original-bug switches, the pool size), ``reference``
    to sample through the scalar path. ``step()`` runs one update; ``update`` counts
    the updates run. ``close()`` deletes the esper world.
    """

    def __init__(self, options: PlayerOptions | None = None, *, reference: bool = False,
                 world: str | None = None):
        self.world = world or f"scuffle-{next(_ids)}"
        self.player = Player(options)
        self.ctx = SimContext(self.player, reference=reference)
        self.names: dict[str, int] = {}
        self.fight = None          # the fight rules, when attached (game.combat.Fight)
        with self.active():
            schedule.install(self.ctx)

    @contextmanager
    def active(self) -> Iterator[None]:
        """Make this game's esper world current for the block."""
        prev = esper.current_world
        esper.switch_world(self.world)
        try:
            yield
        finally:
            if prev != self.world and prev in esper.list_worlds():
                esper.switch_world(prev)

    def close(self) -> None:
        """Delete this game's esper world."""
        if self.world in esper.list_worlds():
            if esper.current_world == self.world:
                esper.switch_world("default")
            esper.delete_world(self.world)

    # ---------------------------------------------------------------- humans
    def add_human(self, name: str, anim_set: AnimSet, position=(0.0, 0.0, 0.0), heading: float = 0.0,
                  health: float = 100.0) -> int:
        """Create a human entity with every component; returns the entity id.

        Rejected: a name already used (ValueError).
        """
        if name in self.names and self._alive(self.names[name]):
            raise ValueError(f"human {name!r} already exists")
        self.player.register(anim_set)
        record = HumanRecord()
        with self.active():
            ent = esper.create_entity()
            inst = CharacterInstance(anim_set, name, record, handle=ent)
            esper.add_component(ent, Name(name))
            esper.add_component(ent, Animator(inst))
            esper.add_component(ent, record)
            esper.add_component(ent, PoseRef())
            esper.add_component(ent, RangeRecords(anim_set.range_list))
            esper.add_component(ent, AnimSetRef(anim_set))
            esper.add_component(ent, Body(position=np.array(position, dtype=np.float64), heading=float(heading)))
            esper.add_component(ent, Combat(health=health, max_health=health))
            esper.add_component(ent, FiredEvents())
        self.names[name] = ent
        return ent

    def remove_human(self, name: str) -> None:
        """Take a human out of the world between two updates, leaving nothing behind.

        The fight rules (when attached) act first: any partner is detached and freed and
        plays the let-go or the fall they choose (``Fight.human_leaving``). Then every
        task of the human is cut off its stack and queue onto the deferred list: the next
        update's flush releases them as a cut-off release (held flags cleared, end
        callbacks run) and gives them back to the pool. The entity is deleted and the
        name freed at once. Rejected: an unknown name (UnknownHuman; nothing changed).
        Removing a human by ``esper.delete_entity`` instead leaves its tasks out of the
        pool (the systems and the fight rules go on without a KeyError: a partner is
        freed, ``humans()`` forgets the name), so remove_human is the way.
        """
        ent = self.entity(name)
        inst = self.instance(name)
        if self.fight is not None:
            self.fight.human_leaving(ent)
        self.player.cut(inst)
        with self.active():
            esper.delete_entity(ent, immediate=True)
        del self.names[name]

    def _alive(self, ent: int) -> bool:
        with self.active():
            return esper.entity_exists(ent)

    def entity(self, name: str) -> int:
        """The entity of a human by name; UnknownHuman when there is none (or when its
        entity was deleted behind the Game's back)."""
        ent = self.names.get(name)
        if ent is None or not self._alive(ent):
            raise UnknownHuman(name)
        return ent

    def component(self, name_or_entity, ctype):
        """One component of a human (by name or entity)."""
        ent = self.entity(name_or_entity) if isinstance(name_or_entity, str) else name_or_entity
        with self.active():
            return esper.component_for_entity(ent, ctype)

    def instance(self, name: str) -> CharacterInstance:
        """The human's CharacterInstance (stack, queue, record)."""
        return self.component(name, Animator).instance

    def body(self, name: str) -> Body:
        """The human's Body component."""
        return self.component(name, Body)

    def record(self, name: str) -> HumanRecord:
        """The human's record (+0x08 held flags, +0x20 playing anim id)."""
        return self.component(name, HumanRecord)

    def humans(self) -> list[tuple[str, int]]:
        """(name, entity) in entity order; a human whose entity was deleted directly
        (esper.delete_entity) is forgotten here."""
        with self.active():
            gone = [n for n, e in self.names.items() if not esper.entity_exists(e)]
        for n in gone:
            del self.names[n]
        return sorted(self.names.items(), key=lambda kv: kv[1])

    # ---------------------------------------------------------------- commands
    def change(self, name: str, task: Task, fade: float = 0.0) -> None:
        """A change of animation on a human: fade, the new task under it (anim.player)."""
        self.player.change(self.instance(name), task, fade)

    # ---------------------------------------------------------------- running
    def step(self) -> None:
        """Run one 30 Hz update: every system once, in SCHEDULE order."""
        with self.active():
            esper.process()

    @property
    def update(self) -> int:
        """The number of updates run (the next update's number); it advances with every
        ``esper.process()`` of this world, whoever calls it."""
        return self.ctx.updates_run

    def pose_row(self, name: str) -> int:
        """The human's row in ctx.poses / ctx.bone_pos (-1 before its first sample)."""
        return self.component(name, PoseRef).row
