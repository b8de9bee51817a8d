"""The embeddable runtime: an esper world, its animation player and its systems.

    with Game() as g:                           # its own esper world; no pygame
        g.add_human("a", anim_set, position=(0, 0, 0), heading=0)
        g.change("a", g.player.loop(g.instance("a"), 388))
        g.step()                                # one 30 Hz update, the SCHEDULE order

Several Games live side by side (each switches to its own esper world while it
steps). A host that keeps its own esper world and drives it with ``esper.process()``
attaches a Game to it instead:

    esper.switch_world("level")                 # the host's world, its own systems in it
    g = Game.attach()                           # scuffle's systems into the current world
    g.add_human("a", anim_set)
    esper.process(1 / 30)                       # the host's loop; g.update counts it

The Game then owns its systems and humans but not the world: ``close()`` removes them
and leaves the world to the host.
"""
from __future__ import annotations

import itertools
from bisect import bisect_left
from types import TracebackType
from collections.abc import Iterable
from typing import Any, Callable, Protocol, Sequence, TypeAlias, TypeVar

import esper
import numpy as np
import numpy.typing as npt

from scuffle.anim.maths import detmath, quat
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import EventType
from scuffle.anim.playback.cursor import FiredEvent
from scuffle.anim.maths.skeleton import Bone
from scuffle.anim.base.limits import MAX_COORD, MAX_HEALTH, check_float, check_vec
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.engine.stack import CharacterInstance, HumanRecord
from scuffle.anim.playback.tasks import Task
from scuffle.components import (Animator, AnimSetRef, Body, Combat, FiredEvents, Name, PoseRef,
                                RangeRecords)
from scuffle.game.runtime import schedule
from scuffle.game.runtime import snapfile as _snapfile
from scuffle.game.runtime import snapshot as _snap
from scuffle.game.runtime.snapshot import Snapshot, SnapshotError
from scuffle.systems.crowd import entity_parts
from scuffle.systems.context import HandlerError, SimContext
from scuffle.systems.motion import to_world

__all__ = ["Game", "Snapshot", "SnapshotError", "UnknownHuman", "GameClosed", "WorldInUse", "Vec3", "BoneArray", "NameOrEntity", "EventHandler",
           "Bone", "HandlerError", "ENGINES"]

# The public API's argument and result types: a host's mypy --strict checks
# its calls against them.
Vec3: TypeAlias = Sequence[float] | npt.NDArray[np.floating[Any]]
"""A point or direction in metres: (x, y, z), a list of three numbers or a numpy array."""
BoneArray: TypeAlias = npt.NDArray[np.float64]
"""One human's bones: positions (34, 3) or rotations (34, 4) as (x, y, z, w)."""
NameOrEntity: TypeAlias = str | int
"""A human by its name or by its esper entity id."""
C = TypeVar("C")

_ids = itertools.count(1)
# The engines a Game can run on: the compiled engine (Player) and the reference
# (scuffle.anim.reference, the plain-Python model of the spec).
ENGINES = ("compiled", "reference")


# An animation event handler (Game.on): ``handler(ctx, entity, fired) -> None`` with the
# SimContext (``ctx.update`` the update being run), the human's entity and the FiredEvent.
EventHandler = Callable[[SimContext, int, FiredEvent], None]


class FightRules(Protocol):
    """What the Game asks of the fight rules attached to it (``Game.fight``; the demo's are
    scuffle.game.fighters.combat.Fight): told when a human joins and before one leaves."""

    def human_joined(self, ent: int) -> None: ...

    def human_leaving(self, ent: int) -> None: ...


class UnknownHuman(KeyError):
    """A human name (or entity) that is not in the world: ``args[0]``; ``known`` the
    Game's names then. Its message lists them ("did you mean" the close ones first)."""

    SHOWN = 8                          # names listed at most

    def __init__(self, name: object, known: Sequence[str] = ()) -> None:
        super().__init__(name)
        self.known = list(known)

    def __str__(self) -> str:
        name, known = self.args[0], self.known
        what = f"no human named {name!r}" if isinstance(name, str) else f"no human has entity {name!r}"
        if not known:
            return what + " (the Game has no humans)"
        near: list[str] = []
        if isinstance(name, str):
            import difflib
            near = difflib.get_close_matches(name, known, n=3, cutoff=0.6) or \
                [k for k in known if k.casefold() == name.casefold()]
        hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
        shown = ", ".join(repr(n) for n in known[:self.SHOWN])
        more = f" and {len(known) - self.SHOWN} more" if len(known) > self.SHOWN else ""
        return f"{what}{hint} (the humans: {shown}{more})"


class GameClosed(RuntimeError):
    """A closed Game was asked to step or to add a human."""


class WorldInUse(ValueError):
    """An esper world that already runs scuffle's systems (another Game's)."""


def _not_a_task(name: str, task: object) -> str:
    """Game.change's TypeError for what is not a Task: the constructors that make one."""
    shown = repr(task)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    inst = f"g.instance({name!r})"
    if isinstance(task, (int, str)) and not isinstance(task, bool):
        return (f"Game.change: {shown} is a clip, not a task: make the task with g.player.loop({inst}, "
                f"{shown}) (loop it), g.player.clip({inst}, {shown}) (play it once) or "
                f"g.player.chain({inst}, [{shown}, ...]) (clips in turn), then g.change({name!r}, task)")
    return (f"Game.change: expected a Task (g.player.loop, .clip, .chain or .gait of {inst}), "
            f"got {type(task).__name__} {shown}")


def _by_entity(kv: tuple[str, int]) -> int:
    return kv[1]


class _Names(dict[str, int]):
    """``Game.names`` (name -> entity): a dict that counts its changes (``version``), so
    ``humans()`` knows its kept list still holds with one comparison.

    A name given (``names[n] = entity``) also gets a join number (``joins``), and the set of
    humans a ``lineage``: both from a count of joins and leaves that only grows, never
    restored, so a human that left and joined again under its name and entity (esper's
    counter restored by a rollback) is told from the one a snapshot holds."""

    version = 0

    def __init__(self) -> None:
        super().__init__()
        self.joins: dict[str, int] = {}
        self.lineage = 0
        self._count = 0

    def __setitem__(self, key: str, value: int) -> None:
        super().__setitem__(key, value)
        self.version += 1
        self._count += 1
        self.joins[key] = self.lineage = self._count

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.version += 1
        self.joins.pop(key, None)
        self._count += 1
        self.lineage = self._count

    def restore_joins(self, joins: dict[str, int] | None, lineage: int) -> None:
        """After a restore: the saved humans' join numbers and lineage (a Game's own
        snapshot), or (``joins`` None: a file, whose humans are this Game's) the join numbers
        of the names kept and a new lineage when the set changed."""
        if joins is not None:
            if lineage != self.lineage:
                self.joins, self.lineage = dict(joins), lineage
            return
        kept = {n: j for n, j in self.joins.items() if n in self}
        if kept != self.joins:
            self.joins = kept
            self._count += 1
            self.lineage = self._count

    def pop(self, *args: Any) -> Any:
        out = super().pop(*args)
        self.version += 1
        return out

    def popitem(self) -> tuple[str, int]:
        out = super().popitem()
        self.version += 1
        return out

    def clear(self) -> None:
        super().clear()
        self.version += 1

    def update(self, *args: Any, **kwargs: int) -> None:
        super().update(*args, **kwargs)
        self.version += 1

    def setdefault(self, key: str, default: Any = None) -> Any:
        out = super().setdefault(key, default)
        self.version += 1
        return out

    def __ior__(self, other: Any) -> "_Names":  # type: ignore[override,misc]
        super().__ior__(other)
        self.version += 1
        return self


class _Active:
    """``Game.active()``: a world made current for a ``with`` block, the one current
    before made current again after it (when it still exists). Switches nothing when the
    world is current already."""

    __slots__ = ("world", "prev", "crowd")

    def __init__(self, world: str, crowd: Any = None):
        self.world = world
        self.prev: str | None = None
        self.crowd = crowd

    def __enter__(self) -> None:
        prev = self.prev = esper.current_world
        if prev != self.world:
            esper.switch_world(self.world)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        prev = self.prev
        if self.crowd is not None and esper.current_world == self.world:
            self.crowd.sync()               # what the block did in esper behind the Game's back
            self.crowd.drop_deleted()
        if prev != self.world and prev in esper.list_worlds():
            esper.switch_world(prev)


class Game:
    """One simulated world (see the module docstring).

    In: PlayerOptions (rates, the original-bug switches, the pool size, ``dt``: the Game's
    one step, which ``ctx.dt`` reads and sets, for the animation and the move alike), ``engine``
    "compiled" (the default: ``Player``), or "reference" (``scuffle.anim.reference``:
    the plain-Python model of the spec, slow, to debug a scenario; the bodies move by
    the readable root motion, systems.motion.root_motion, bit for bit the kernel's),
    ``reference`` to move the bodies by the readable root motion (systems.motion.root_motion,
    the kernel's bits; the poses come from the engine all the same), ``world`` the esper world's name (None: a new one of
    its own). Rejected: another engine name (ValueError naming the field). ``step()`` runs one update; ``update`` counts the updates run,
    whoever drives them. A context manager: ``with Game() as g:`` closes it.
    ``close()`` deletes a world the Game created and, in a world it did not create,
    removes its systems and humans; a closed Game refuses ``step()`` (GameClosed).
    Rejected: a world that already runs scuffle's systems (WorldInUse).
    """

    def __init__(self, options: PlayerOptions | None = None, *, reference: bool = False,
                 world: str | None = None, engine: str = "compiled"):
        if engine not in ENGINES:
            raise ValueError(f"Game engine: {engine!r} is not one of {', '.join(map(repr, ENGINES))}")
        name = world or f"scuffle-{next(_ids)}"
        self.world = name
        self.owns_world = name not in esper.list_worlds()
        self.engine = engine
        # the engine: a Player, or a Reference (the same command surface, duck-typed)
        self.player: Any
        if engine == "reference":
            from scuffle.anim.reference import Reference
            self.player = Reference(options)
        else:
            self.player = Player(options)
        # the reference engine moves the bodies by the readable root motion (systems.motion:
        # numpy on anim.maths.detmath, the kernel's bits on every CPU), as reference=True does
        self.ctx = SimContext(self.player, reference=reference or engine == "reference")
        self.names: _Names = _Names()
        # humans()' list in entity order, kept by add_human and remove_human, and the
        # (crowd version, names version) it matches; made again when either moved otherwise
        # (a rename, a change behind the Game's back in esper, a restore)
        self._order: list[tuple[str, int]] = []
        self._order_of: tuple[int, int] = (-1, -1)
        self._sets: dict[int, AnimSet] = {}        # the anim sets registered with the player (read-only)
        # The fight rules when attached (scuffle.game.fighters.combat.Fight sets it), typed by
        # the FightRules protocol: the runtime layer never imports the fighters (tests/test_layers.py).
        self.fight: FightRules | None = None
        # the snapshot file's caches of this Game (game.runtime.snapfile.SnapCache): cleared
        # when its configuration changes
        self.snapcache = _snapfile.SnapCache()
        self.closed = False
        # entity -> {type: component} of this world's humans: the crowd's own (kept by the
        # joins and leaves), so a look-up needs no switch of esper's current world
        self._entities: dict[int, dict[type, Any]] = self.ctx.crowd.parts
        with _Active(self.world):
            taken = [s.__name__ for s in schedule.SCHEDULE if esper.get_processor(s) is not None]
            if taken:
                if self.owns_world:
                    esper.switch_world("default")
                    esper.delete_world(name)
                raise WorldInUse(f"esper world {name!r} already runs scuffle's systems "
                                 f"({', '.join(taken)}): one Game per world")
            self.processors: list[esper.Processor] = schedule.install(self.ctx)
            if self.owns_world:
                self.ctx.crowd.start_empty()          # a new world: nothing in it to read
        if self.owns_world:
            # the world current now is the host's: processing it steps nothing of this Game
            # (a warning once if it is processed while this Game is never stepped)
            from scuffle.game.runtime.watch import watch_host_world
            watch_host_world(self, esper.current_world)

    @classmethod
    def attach(cls, world: str | None = None, options: PlayerOptions | None = None, *,
               reference: bool = False, engine: str = "compiled") -> "Game":
        """A Game in a host's esper world (None: the current one): scuffle's systems are
        added there with their SCHEDULE priorities, and the host's ``esper.process()``
        runs them. Rejected: a world that already runs them (WorldInUse)."""
        return cls(options, reference=reference, world=world or esper.current_world, engine=engine)

    def __enter__(self) -> "Game":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def active(self) -> "_Active":
        """Make this game's esper world current for the block (``with game.active():``);
        the world current before is current again after it. Nothing is switched when
        this world is current already (inside ``step()``, or a host's ``esper.process()``).
        What the block changed in esper behind the Game's back (an entity deleted, a Body
        swapped) is seen as it ends (the crowd read again, systems.crowd; a human whose
        entity waits for esper's deferred deletion is gone from the Game's look-ups then)."""
        return _Active(self.world, None if self.closed else self.ctx.crowd)

    def close(self) -> None:
        """Delete the esper world this Game created; in a host's world, remove only its
        systems and its humans. Closing twice does nothing."""
        if self.closed:
            return
        self.closed = True
        self._entities = {}                         # no look-up finds a human of this Game now
        self.snapcache.clear()
        self._order_of = (-1, -1)
        if self.world not in esper.list_worlds():
            return
        if self.owns_world and self.world != "default":
            if esper.current_world == self.world:
                esper.switch_world("default")
            esper.delete_world(self.world)
            return
        with _Active(self.world):
            for system in schedule.SCHEDULE:
                esper.remove_processor(system)
            for ent in self.names.values():
                if esper.entity_exists(ent):
                    esper.delete_entity(ent, immediate=True)

    def _open(self) -> None:
        if self.closed:
            raise GameClosed(f"Game {self.world!r} is closed")

    # ---------------------------------------------------------------- humans
    def add_human(self, name: str, anim_set: AnimSet, position: Vec3 = (0.0, 0.0, 0.0), heading: float = 0.0,
                  health: float = 100.0) -> int:
        """Create a human entity with every component; returns the entity id.

        Rejected (nothing changed): a name that is not a string or is already used, a set
        that is not an AnimSet (ValueError); a position that is not three finite numbers
        within +-1e9 m, a heading that is not a finite number
        within +-1e9 degrees, a health that is not a finite number > 0 and <= 1e6
        (RangeError, a ValueError naming the argument); a set whose clips would take the
        world's clip bank past its memory budget (BankBudgetError, a ValueError).
        """
        if not isinstance(name, str):
            raise ValueError(f"add_human: name {name!r} is not a string")
        if not isinstance(anim_set, AnimSet):
            raise ValueError(f"add_human: anim_set {anim_set!r} is not an AnimSet (demo_set(), load_resource(...))")
        position = check_vec("add_human: position", position, 3)
        heading = check_float("add_human: heading", heading, -MAX_COORD, MAX_COORD)
        health = check_float("add_human: health", health, 0.0, MAX_HEALTH, lo_open=True)
        self._open()
        if name in self.names and self._alive(self.names[name]):
            raise ValueError(f"human {name!r} already exists")
        if self._sets.get(id(anim_set)) is not anim_set:    # a set's clips go into the bank once
            self.player.register(anim_set)
            self._sets[id(anim_set)] = anim_set
        record = HumanRecord()
        crowd = self.ctx.crowd
        with _Active(self.world):
            crowd.sync()                      # a change behind the Game's back: read first
            fresh = self._order_of == (crowd.version, self.names.version)
            ent = esper.create_entity()
            inst: Any                       # a CharacterInstance, or the reference's RefInstance
            if self.engine == "reference":
                from scuffle.anim.reference import RefInstance
                inst = RefInstance(anim_set, name, handle=ent, record=record)
            else:
                inst = CharacterInstance(anim_set, name, record, handle=ent)
            comps = (Name(name), Animator(inst), record, PoseRef(), RangeRecords(anim_set.range_list),
                     AnimSetRef(anim_set),
                     Body(position=np.array(position, dtype=np.float64), heading=float(heading),
                          table=self.ctx.bodies),
                     Combat(health=health, max_health=health, table=self.ctx.combats), FiredEvents())
            for comp in comps:
                esper.add_component(ent, comp)
            # the Game's look-ups read esper's own dict of the entity (no second one a human)
            crowd.join(ent, entity_parts(ent, comps))
            crowd.absorb()                    # the world's changes so far: this join's
        self.names[name] = ent
        if fresh:                             # humans()' list follows: the newcomer in its place
            self._order.insert(bisect_left(self._order, ent, key=_by_entity), (name, ent))
            self._order_of = (crowd.version, self.names.version)
        if self.fight is not None:             # the fight rules attached: it starts in the fight idle
            self.fight.human_joined(ent)
        return ent

    def remove_human(self, name: str) -> None:
        """Take a human out of the world between two updates, leaving nothing behind.

        The fight rules (when attached) act first: any partner is detached and freed and
        plays the let-go or the fall they choose (``Fight.human_leaving``). Then every
        task of the human is cut off its stack and queue onto the deferred list: the next
        update's flush releases them as a cut-off release (held flags cleared, end
        callbacks run) and gives them back to the pool. The entity is deleted, its body's
        row given back to the body table and the name freed at once. The human's Body,
        HumanRecord and CharacterInstance are handles onto rows: the body's row goes back
        at once, the record's when its tasks are released (at once when it had none, else
        at the end of that flush); from then on any read or write of them raises
        StaleHandle (a ValueError naming the field), and a human added later never shows
        through them. Rejected: an unknown name (UnknownHuman; nothing changed).
        Removing a human by ``esper.delete_entity`` instead works too, one update later:
        the next update's animation step cuts its tasks off (its flush gives them back to
        the pool, end callbacks run), the fight rules free a partner, ``humans()`` forgets
        the name and the state update gives the body's row back; remove_human does it at
        once and lets the fight rules choose the partner's let-go.
        """
        ent = self.entity(name)
        inst = self.instance(name)
        if self.fight is not None:
            self.fight.human_leaving(ent)
        self.player.cut(inst)
        self.player.forget(inst)
        crowd = self.ctx.crowd
        with _Active(self.world):
            crowd.sync()
            body = esper.try_component(ent, Body)
            combat = esper.try_component(ent, Combat)
            esper.delete_entity(ent, immediate=True)
            fresh = self._order_of == (crowd.version, self.names.version)
            crowd.leave(ent)
            crowd.absorb()                    # the world's changes so far: this leave's
        if body is not None and body.table is self.ctx.bodies:
            body.release()                     # its row back to the table: the Body is stale
        if combat is not None and combat.table is self.ctx.combats:
            combat.release()                   # its row back: the Combat is stale
        del self.names[name]
        if fresh:                              # humans()' list follows: the leaver out of it
            order = self._order
            k = bisect_left(order, ent, key=_by_entity)
            if k < len(order) and order[k][1] == ent:
                del order[k]
                self._order_of = (crowd.version, self.names.version)

    def _alive(self, ent: int) -> bool:
        """The entity is a human of this world (the crowd's parts: no switch of worlds). An
        entity deleted in esper behind the Game's back is seen at the next update, or at
        once by ``humans()``."""
        return ent in self._entities

    def _unknown_human(self, who: object) -> UnknownHuman:
        """The error of a look-up of ``who`` (a name or an entity) that is no human's: an
        UnknownHuman naming the Game's humans."""
        return UnknownHuman(who, [n for n, _ in self.humans()])

    def entity(self, name: str) -> int:
        """The entity of a human by name; UnknownHuman when there is none (or when its
        entity was deleted behind the Game's back)."""
        try:
            ent = self.names.get(name)
        except TypeError:                                 # not a name (unhashable)
            ent = None
        if ent is None or ent not in self._entities:     # _alive, inlined
            raise self._unknown_human(name)
        return ent

    def component(self, name_or_entity: NameOrEntity, ctype: type[C]) -> C:
        """One component of a human (by name or entity), of the type asked for. Rejected:
        UnknownHuman for a name or entity that is no human's; KeyError naming the type for
        a component the human does not have."""
        ent = self.entity(name_or_entity) if isinstance(name_or_entity, str) else name_or_entity
        try:
            comps = self._entities[ent]                   # esper.component_for_entity, in this world
        except (KeyError, TypeError):
            raise self._unknown_human(name_or_entity) from None
        try:
            comp: C = comps[ctype]
        except (KeyError, TypeError):
            raise KeyError(f"human {name_or_entity!r} has no {getattr(ctype, '__name__', ctype)!r} component") \
                from None
        return comp

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
        """(name, entity) in entity order, a new list each call; a human whose entity was
        deleted directly in esper is forgotten here, once the Game has seen it: at once in
        its world or after a ``with game.active():`` block, else at the next update (a
        deferred ``esper.delete_entity`` once esper has carried it out: at that update's
        start).

        The list is kept in entity order by ``add_human`` and ``remove_human`` (the
        newcomer put in its place, the leaver taken out) and made again only when the
        names were changed otherwise (a rename, a restore) or the crowd was read again
        from esper (a change behind the Game's back)."""
        self._see()
        names, crowd = self.names, self.ctx.crowd
        if self._order_of == (crowd.version, names.version):
            return list(self._order)
        ents = self._entities
        gone = [n for n, e in names.items() if e not in ents]
        for n in gone:                                 # someone deleted it: forget the name
            del names[n]
        self._order = sorted(names.items(), key=_by_entity)
        self._order_of = (crowd.version, names.version)
        return list(self._order)

    def _see(self) -> None:
        """The crowd told of what changed in esper behind the Game's back, when this world
        is current (one identity test when nothing did). Another world current: no switch;
        a change made in a ``with game.active():`` block was seen as the block ended, one
        made otherwise is seen at the next update."""
        if not self.closed and esper.current_world == self.world:
            self.ctx.crowd.sync()

    # ---------------------------------------------------------------- commands
    def change(self, name: str, task: Task, fade: float = 0.0) -> None:
        """A change of animation on a human: fade, the new task under it (anim.playback.player).
        Rejected: a ``task`` that is not a Task, a bare clip id or name included
        (TypeError naming the constructors: a clip id alone does not say whether to loop
        it, play it once or chain it); an unknown human (UnknownHuman)."""
        if task is None or isinstance(task, (int, str, float, list, tuple, dict)):   # a Task or the reference's
            raise TypeError(_not_a_task(name, task))
        self.player.change(self.instance(name), task, fade)

    # ---------------------------------------------------------------- running
    def step(self) -> None:
        """Run one 30 Hz update: every system once, in SCHEDULE order.

        A game's event handler, task callback (end, wrap, report) or action that raises
        does not stop the update: it completes for every human (flush, state update, root motion,
        actions, placement), then one HandlerError carrying every such exception is
        raised (``errors``; the first is its ``__cause__``). The world is then as after
        the same update with handlers that did not raise, less what they would have done;
        the next ``step()`` goes on from there. Rejected: a closed Game (GameClosed).
        """
        if self.closed:
            self._open()                                   # raises GameClosed
        prev, world = esper.current_world, self.world      # self.active(), without its object
        if prev != world:
            esper.switch_world(world)
        try:
            esper.process()
            self.ctx.crowd.sync()           # (one identity test; a world made anew: read, empty)
        finally:
            if prev != world and prev in esper.list_worlds():
                esper.switch_world(prev)

    @property
    def update(self) -> int:
        """The number of updates run (the next update's number); it advances with every
        ``esper.process()`` of this world, whoever calls it. Inside an update (event
        handlers, actions, fight events) the update being run is ``ctx.update``, the
        number the trace and the fight log write; after ``step()`` that number is
        ``last_update`` (``update - 1``)."""
        return self.ctx.updates_run

    @property
    def last_update(self) -> int:
        """The number of the update just run (-1 before the first): the ``update`` the
        trace and the fight log give it (``update - 1``)."""
        return self.ctx.updates_run - 1

    # ---------------------------------------------------------------- snapshots
    def snapshot(self, outputs: bool = False, reuse: Snapshot | None = None) -> Snapshot:
        """Everything the next updates read, copied (between two updates): restore it any
        number of times (``restore``); ``to_bytes()`` gives its byte form. ``outputs``:
        also keep the last update's outputs, which no later update reads (poses, bone
        transforms, events, released ids), so a viewer shows the restored update as it
        was; without them a restore leaves them empty until the next step. ``reuse``: an
        older snapshot of this Game to give up (a rollback ring): its arrays are written
        over, so no new memory is taken per snapshot (it must not be restored after). See
        scuffle.game.runtime.snapshot. Rejected: a closed Game (GameClosed)."""
        return _snap.take(self, outputs, reuse)

    def restore(self, snapshot: Snapshot) -> None:
        """Put the whole Game back as it was when ``snapshot`` was taken: stepping on gives
        the same trace bytes as never having left. Humans added since are removed.
        Rejected (SnapshotError, a ValueError; nothing changed): a snapshot of another
        engine, of humans not all still here under the same entity, with fight rules on a
        Game without them (or the reverse), or bytes read on a Game set up otherwise."""
        _snap.restore(self, snapshot)

    def config(self) -> dict[str, Any]:
        """What this Game is set up with, as plain data (game.runtime.snapfile.config_parts:
        the version, the snapshot format, the engine, the options, the step, the humans'
        anim sets, the callback kinds, the fight rules' settings, the stateful actions)."""
        self._open()
        return _snapfile.config_parts(self)

    def config_digest(self) -> str:
        """A sha256 (hex) of ``config()``: two Games with the same digest run the same
        inputs to the same states. Netplay peers compare it before the first update, and a
        snapshot file restores only into a Game whose digest is the one it was written with."""
        self._open()
        return _snapfile.config_digest(self)

    def checksum(self) -> str:
        """A sha256 (hex) of the Game's whole state: two Games (two peers, or a run and its
        rollback replay) in the same state give the same digest on any machine."""
        return _snap.checksum(self)

    # ---------------------------------------------------------------- events and bones
    def callback(self, kind: str, handler: Callable[..., None]) -> Callable[..., None]:
        """Register ``handler(instance, *args)`` for the callbacks of ``kind``: an end or
        wrap callback given as data, ``Callback(kind, args)`` (scuffle.anim.engine.callbacks),
        calls it when its task is released or wraps, so the world's state holds no code.
        Returns the handler. Rejected (CallbackError, a ValueError): a kind that is not a
        non-empty str, a handler that is not callable, a kind another handler has."""
        self.player.callbacks.register(kind, handler)
        return handler

    def on(self, event_type: EventType | int, handler: EventHandler) -> EventHandler:
        """Call ``handler(ctx, entity, fired)`` for every animation event of
        ``event_type`` (an EventType, e.g. ``EventType.SOUND``, or its number) that a
        human's clip fires: ``ctx`` the SimContext (``ctx.update`` the update being
        run), ``entity`` the human's entity (``Game.name_of`` gives its name), ``fired``
        the FiredEvent (``.event`` the clip's Event with ``.type``, ``.frame``,
        ``.args``, ``.fields()``; ``.anim_id`` the clip's id). Handlers run in the event
        dispatch, after every human stepped and before the flush releases anything, in
        entity order then firing order. Returns the handler.
        Rejected: a type outside 0-255 or a handler that is not callable (ValueError).
        Original: 0x00101dd8 Anim_FireFrameEvents."""
        if isinstance(event_type, bool) or not isinstance(event_type, int) or not 0 <= int(event_type) <= 0xFF:
            raise ValueError(f"Game.on: event type {event_type!r}: expected an EventType or 0-255")
        if not callable(handler):
            raise ValueError(f"Game.on: handler {handler!r} is not callable")
        self.ctx.on(int(event_type), handler)
        return handler

    def on_rows(self, event_types: Iterable[EventType | int] | EventType | int | None,
                handler: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
        """Call ``handler(ctx, rows)`` once per update with that update's animation events
        of ``event_types`` (EventTypes or numbers; None: every type) as columns, for a
        game that reads a crowd's events in bulk (sounds, effects, counts): ``rows`` a
        systems.events.EventRows (``entities``, ``types``, ``anim_ids`` as int64 arrays,
        ``events`` the clips' Event objects), in the order the per-event handlers
        (``on``) see them: entity order, then firing order. ``event_types`` may be one type. It runs in the event
        dispatch after every per-event handler and before the flush; an update with no
        event of its types does not call it. No FiredEvent is made for it: a crowd
        whose events only rows handlers read makes none. Returns the handler.
        Rejected: a type outside 0-255 or a handler that is not callable (ValueError)."""
        types = None
        if event_types is not None:
            if isinstance(event_types, int) or not isinstance(event_types, Iterable) or \
                    isinstance(event_types, (str, bytes)):
                types = [event_types]                   # one type (or a wrong value: named below)
            else:
                types = list(event_types)
            for t in types:
                if isinstance(t, bool) or not isinstance(t, int) or not 0 <= int(t) <= 0xFF:
                    raise ValueError(f"Game.on_rows: event type {t!r}: expected an EventType or 0-255")
        if not callable(handler):
            raise ValueError(f"Game.on_rows: handler {handler!r} is not callable")
        self.ctx.on_rows(None if types is None else [int(t) for t in types], handler)
        return handler

    def name_of(self, entity: int) -> str:
        """The name of a human's entity (UnknownHuman when no human has it)."""
        for n, e in self.names.items():
            if e == entity:
                return n
        raise self._unknown_human(entity)

    def bone(self, name: str, bone: Bone | int | str, *, space: str = "world") -> tuple[np.ndarray, np.ndarray]:
        """One bone of a human by name or number (``Bone.HEAD``, ``"l_hand"``, 6): its
        position (3,) in metres and rotation (4,) (x, y, z, w), in ``space`` "world"
        (``bones_world``) or "model" (``bones_model``). Rejected: an unknown bone (ValueError,
        with "did you mean"), another space (ValueError), an unknown human (UnknownHuman)."""
        b = Bone.of(bone)
        if space == "world":
            pos, rot = self.bones_world(name)
        elif space == "model":
            pos, rot = self.bones_model(name)
        else:
            raise ValueError(f"Game.bone: space {space!r}: expected 'world' or 'model'")
        return pos[b].copy(), rot[b].copy()

    def pose_row(self, name: str) -> int:
        """The human's column in the crowd's batch arrays (-1 before its first sample).

        The batch layout, components first and humans last: ``ctx.bone_pos`` is
        (3, 34, N) and ``ctx.bone_rot`` (4, 34, N) (x, y, z, w), ``ctx.poses.rot``
        (4, 34, N); one human is ``ctx.bone_pos[:, :, row]``. ``bones_model`` and
        ``bones_world`` give one human's bones in the usual shapes instead.
        """
        return self.component(name, PoseRef).row

    def bones_model(self, name: str) -> tuple[BoneArray, BoneArray]:
        """One human's bones in model space (x right, y forward, z up from the feet):
        positions (34, 3) in metres and rotations (34, 4) as (x, y, z, w), float64 copies.

        Entry 0 is motion, not a bone: the root velocity (m/s) and bone 0's turn per
        1/30 s, each zero / the identity when tagged as a default (or always, with
        ``PlayerOptions.motion_entry="identity"``); entry 1 is the pelvis; before the
        human's first update, the reference pose. Original: 0x00104630
        Instance_BuildBoneMatrices (Bone transforms, L116).
        """
        row = self.pose_row(name)
        if self.ctx.bone_pos is None or self.ctx.bone_rot is None or row < 0:
            pos, rot = self.player.skeleton.reference_model_space()
            return np.array(pos, dtype=np.float64), np.array(rot, dtype=np.float64)
        pos = np.array(self.ctx.bone_pos[:, :, row].T, dtype=np.float64)
        rot = np.array(self.ctx.bone_rot[:, :, row].T, dtype=np.float64)
        return pos, rot

    def bones_world(self, name: str) -> tuple[BoneArray, BoneArray]:
        """One human's bones in world space: the model-space bones turned by the body's
        heading about z and placed at its position. Positions (34, 3), rotations (34, 4)
        (x, y, z, w). Entry 0 is the body itself: its position and heading."""
        pos, rot = self.bones_model(name)
        body = self.body(name)
        s, c = detmath.sin_cos_deg_s(float(body.heading) / 2.0)
        wpos = to_world(pos, body.position, float(body.heading))
        hq = np.array([0.0, 0.0, s, c])      # the heading about z
        wrot = quat.mul(hq[:, None], rot.T).T
        wpos[0] = np.asarray(body.position, dtype=np.float64)   # entry 0 (motion in model space): the body
        wrot[0] = hq
        return wpos, wrot
