"""The crowd of one world: its humans and bodies in entity order, kept by joins and leaves.

The systems visit the humans in entity order (the original's per-update order: every
human's animation step, then the dispatch and the flush in that order; docs/architecture.md,
"One update, in the schedule's order"). A ``Crowd`` holds that order and the row-indexed
arrays the systems read (each body row's pose column, the rows no human moves, the bodies'
rows in entity order), and ``Game.add_human`` / ``Game.remove_human`` keep them by
``join`` and ``leave``: a human coming or going costs work for that human only (a few
list and array entries; the arrays' tails shift by one in memory, no Python loop over the
crowd). No esper query is made again when the crowd changes this way.

What a host does in esper behind the Game's back (an entity deleted, a human made of
components, a Body swapped) is seen by one cheap test per system: esper hands out a new
query list after any change of the world, so the list of a component type no entity has
(``_WorldProbe``) is a new object exactly when something changed since it was last asked
for. The Game asks for it around its own joins and leaves; any other change makes the crowd
read the world again from esper's queries (``rebuild``: work over the whole crowd, once).
"""
from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Iterator, cast

import esper
import numpy as np

from scuffle.components import Animator, Body, Combat, FiredEvents, PoseRef

__all__ = ["Crowd", "FiredList", "entity_parts"]


def _picked(seq: Sequence[Any], places: Sequence[int]) -> tuple:
    """The entries of ``seq`` at ``places``, as a tuple (picked in C by itemgetter)."""
    return itemgetter(*places)(seq) if len(places) > 1 else (seq[places[0]],)


class FiredList(Sequence):
    """The humans that fired this update (``SimContext.fired``): (entity, FiredEvents,
    instance) in entity order, for the crowd's ``places`` (ascending places in its lists).

    A list whose entries are made when first read (each FiredEvents linked to its
    instance again if someone unlinked it): a reader of the update's events as columns
    (systems.events: the engine's event rows, ``entities_at``) reads no human's objects.
    The crowd makes the entries before a join or a leave moves its lists (``freeze``)."""

    __slots__ = ("places", "_crowd", "_entities", "_instances", "_fired", "_ids", "_list", "__weakref__")

    def __init__(self, crowd: "Crowd", places: Sequence[int]):
        self.places = places                    # a list, or the step's int64 array (a crowd)
        self._crowd = crowd
        self._entities, self._instances, self._fired = crowd.entities, crowd.instances, crowd.fired
        self._ids = crowd.entity_ids            # (a join or a leave makes a new array: this one stays)
        self._list: list | None = None
        crowd.note_lazy(self)

    def _all(self) -> list:
        got = self._list
        if got is None:
            places = self._place_list()
            if not places:
                got = []
            else:
                insts, fireds = _picked(self._instances, places), _picked(self._fired, places)
                for fired, inst in zip(fireds, insts):
                    if fired.source is not inst:    # unlinked by someone: link again
                        fired.source = inst
                got = list(zip(_picked(self._entities, places), fireds, insts))
            self._list = got
        return got

    freeze = _all

    def pick(self, ks: list) -> list:
        """Entries ``ks`` (indices into this list, ascending), made now (the others are not)."""
        if self._list is not None or not ks:
            return [self._all()[k] for k in ks]
        places = _picked(self._place_list(), ks)
        insts, fireds = _picked(self._instances, places), _picked(self._fired, places)
        for fired, inst in zip(fireds, insts):
            if fired.source is not inst:        # (unlinked and not linked again: the step's relink)
                fired.source = inst
        return list(zip(_picked(self._entities, places), fireds, insts))

    def _place_list(self) -> list:
        """``places`` as a list of ints (the step's array made into one when entries are made)."""
        places = self.places
        if not isinstance(places, list):
            places = self.places = cast(np.ndarray, places).tolist()
        return places

    def entities_at(self) -> np.ndarray:
        """The entity of each entry, as an int64 array (no entry made)."""
        ids = self._ids
        if len(ids) == len(self._entities):
            return ids[np.asarray(self.places, np.int64)]
        got = self._all()                       # (the crowd's lists were read without its array)
        return np.fromiter((e for e, _, _ in got), np.int64, len(got))

    def __len__(self) -> int:
        return len(self.places) if self._list is None else len(self._list)

    def __getitem__(self, i):
        return self._all()[i]

    def __iter__(self) -> Iterator:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FiredList):
            other = other._all()
        return self._all() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FiredList({self._all()!r})"


class _WorldProbe:
    """A component type no entity has: ``esper.get_component(_WorldProbe)`` is a new (empty)
    list after any change of the world, the same list while nothing changed."""

    __slots__ = ()


def entity_parts(ent: int, comps: Sequence[Any] | None = None) -> dict[type, Any]:
    """Entity ``ent``'s {component type: component} in the current esper world, for the
    crowd's ``parts``: esper's own dict of the entity where esper keeps one (its
    ``_entities``, read only here), so that a crowd keeps no second dict of nine entries a
    human (3.5 MB at 10,000); else a dict of its own. ``comps``: the components the Game
    has just added (esper's dict is taken only when it holds exactly those); None: all of
    the entity's. A host's ``esper.add_component`` / ``remove_component`` on a human
    is then seen by the Game's look-ups at once (a world change the crowd reads again
    anyway); nothing here writes into esper's dict."""
    # esper 3 has no public read of an entity's dict (components_for_entity makes a tuple);
    # its module global is checked to be the dict of dicts it has been in every esper 3
    own = esper._entities
    d = own.get(ent) if type(own) is dict else None
    if comps is None:
        comps = esper.components_for_entity(ent)
    if type(d) is dict and len(d) == len(comps) and all(d.get(type(c)) is c for c in comps):
        return d
    return {type(c): c for c in comps}


def _grow(a: np.ndarray, n: int, fill: Any) -> np.ndarray:
    """``a`` with room for at least ``n`` entries (doubled), the new ones ``fill``."""
    if len(a) >= n:
        return a
    out = np.full(max(n, 2 * len(a), 16), fill, a.dtype)
    out[:len(a)] = a
    return out


class Crowd:
    """The humans and bodies of one world, in entity order (see the module docstring).

    Humans (entities with Animator, PoseRef and FiredEvents): ``entities``, ``instances``,
    ``fired`` (their FiredEvents), ``human_rows`` (each one's body row, -1 without a Body),
    ``parts`` (entity -> {component type: component}: ``Game._entities``). A human's place
    in these lists is its pose column. Bodies (every entity with a Body, humans' and
    others'): ``body_entities``, ``bodies``, ``body_rows`` (their rows in entity order,
    the first ``len(bodies)``). Sized to the body table: ``pose_col`` (body row -> pose
    column, -1: none), ``idle`` (rows no human of this world moves: free rows and bodies
    without a pose), ``strays`` (the rows of bodies without a pose). ``posed`` the entities
    as the last pose laid them out (PoseRef.row reads it). ``version`` counts the changes,
    ``rebuilds`` the whole reads (``rebuild``: after one a view may hold another row).
    """

    def __init__(self, ctx: Any):
        self.ctx = ctx
        self.entities: list[int] = []
        self.entity_ids = np.zeros(0, np.int64)     # ``entities`` as an array (a new one at each change)
        self.instances: list = []
        self.fired: list = []
        self.human_rows: list[int] = []
        self.parts: dict[int, dict[type, Any]] = {}
        self.body_entities: list[int] = []
        self.bodies: list[Body] = []
        self.body_rows = np.zeros(16, np.int64)
        self.pose_col = np.zeros(0, np.int64)
        self.idle = np.zeros(0, np.bool_)
        self.strays = np.zeros(0, np.int64)
        self.posed: list[int] = self.entities
        self.version = 0
        self.rebuilds = 0                       # the times the crowd was read again whole (rebuild)
        self._seen: list | None = None          # the probe's list when the crowd last matched the world
        # the FiredLists over these lists whose entries are not made yet (weak: a list no
        # one holds is not kept), made before a join or a leave moves the lists
        self._lazy: list[weakref.ref] = []
        # its humans' FiredEvents given a list, by entity (linked again when they fire: relink)
        self.unlinked: dict[int, FiredEvents] = {}
        self._stale = True                      # read the world again at the next sync

    def __len__(self) -> int:
        return len(self.entities)

    # ---------------------------------------------------------------- the world's changes
    def _probe(self) -> list:
        return esper.get_component(_WorldProbe)

    def absorb(self) -> None:
        """After a join or a leave: the world's changes so far are the crowd's own."""
        self._seen = self._probe()

    def start_empty(self) -> None:
        """The world is new and empty (the world current): nothing in it to read."""
        self._seen = self._probe()
        self._stale = False

    def drop_deleted(self) -> None:
        """The humans esper deletes at its next process (a deferred ``esper.delete_entity``)
        gone from ``parts`` now, so the Game's look-ups no longer find them (the world
        current; a test of every human: a host's block, not the update's path). Their
        places and rows go when esper has deleted them (``rebuild``)."""
        exists = esper.entity_exists
        gone = [e for e in self.parts if not exists(e)]
        for e in gone:
            del self.parts[e]
        if gone:
            self.version += 1

    def invalidate(self) -> None:
        """Read the world again at the next sync (a restore moved the views)."""
        self._stale = True

    def sync(self) -> None:
        """At the start of each system (the world current): read the world again when
        something changed in it behind the crowd's back (one identity test otherwise)."""
        probe = esper.get_component(_WorldProbe)        # (``_probe``, inline: several calls an update)
        if probe is not self._seen or self._stale:
            self.rebuild()
            self._seen = self._probe()
        elif len(self.idle) != self.ctx.bodies.capacity:
            self._fit()

    def _fit(self) -> None:
        """The row-indexed arrays sized to the body table (it grew)."""
        cap = self.ctx.bodies.capacity
        if len(self.idle) < cap:
            n = len(self.idle)
            pc = np.full(cap, -1, np.int64)
            pc[:n] = self.pose_col
            idle = np.ones(cap, np.bool_)
            idle[:n] = self.idle
            self.pose_col, self.idle = pc, idle
            self.version += 1

    def note_lazy(self, fl: FiredList) -> None:
        """``fl`` reads these lists when its entries are first read: kept (weakly) to be
        made before they move; those made already or no longer held are let go."""
        lazy = self._lazy
        if lazy:                                # (the same list kept: nothing left per update)
            lazy[:] = [r for r in lazy if (o := r()) is not None and o._list is None]
        lazy.append(weakref.ref(fl))

    # ---------------------------------------------------------------- joins and leaves
    def _unposed(self) -> None:
        """Before the lists change: the last pose's layout kept apart from them, the
        update's FiredList made from them."""
        if self._lazy:
            lazy, self._lazy = self._lazy, []
            for ref in lazy:
                fl = ref()
                if fl is not None:
                    fl.freeze()
        if self.posed is self.entities:
            self.posed = list(self.entities)

    def join(self, ent: int, parts: dict[type, Any]) -> None:
        """A human made by the Game (its components ``parts``, added to the world) joins:
        its place in entity order (the end, for a new entity), its body's row indexed."""
        self._unposed()
        inst, fired, pref = parts[Animator].instance, parts[FiredEvents], parts[PoseRef]
        body: Body | None = parts.get(Body)
        self.parts[ent] = parts
        k = bisect_left(self.entities, ent)
        self.entities.insert(k, ent)
        self.entity_ids = np.insert(self.entity_ids, k, ent)
        self.instances.insert(k, inst)
        self.fired.insert(k, fired)
        fired.source = inst
        fired.link(self, ent)
        pref.link(self, ent)
        row = -1
        if body is not None:
            self._fit()
            row = body._row
            n = len(self.entities)
            if k < n - 1:                         # not last: the later columns move up one
                pc = self.pose_col
                pc[pc >= k] += 1
            self.pose_col[row] = k
            self.idle[row] = False
            self._body_in(ent, body)
        self.human_rows.insert(k, row)
        self.version += 1

    def leave(self, ent: int) -> None:
        """A human leaves (the Game's remove_human, before its body's row goes back): its
        entries out of the lists, the later pose columns down one."""
        self._unposed()
        k = bisect_left(self.entities, ent)
        if k == len(self.entities) or self.entities[k] != ent:
            self.parts.pop(ent, None)
            return
        del self.entities[k], self.instances[k], self.fired[k]
        self.entity_ids = np.delete(self.entity_ids, k)
        row = self.human_rows.pop(k)
        self.parts.pop(ent, None)
        if row >= 0:
            pc = self.pose_col
            pc[row] = -1
            self.idle[row] = True
            if k < len(self.entities):            # not last: the later columns move down one
                pc[pc > k] -= 1
        self._body_out(ent)
        self.version += 1

    def _body_in(self, ent: int, body: Body) -> None:
        j = bisect_left(self.body_entities, ent)
        self.body_entities.insert(j, ent)
        self.bodies.insert(j, body)
        n = len(self.bodies)
        self.body_rows = _grow(self.body_rows, n, -1)
        br = self.body_rows
        br[j + 1:n] = br[j:n - 1].copy()
        br[j] = body._row

    def _body_out(self, ent: int) -> None:
        j = bisect_left(self.body_entities, ent)
        if j == len(self.body_entities) or self.body_entities[j] != ent:
            return
        del self.body_entities[j], self.bodies[j]
        n = len(self.bodies)
        br = self.body_rows
        br[j:n] = br[j + 1:n + 1].copy()

    # ---------------------------------------------------------------- reads
    def pose_place(self, ent: int) -> int:
        """The human's column in the last pose (-1: not in it)."""
        posed = self.posed
        k = bisect_left(posed, ent)
        return k if k < len(posed) and posed[k] == ent else -1

    def place_of(self, inst: Any) -> int:
        """The place of an instance in ``instances`` (-1: none)."""
        ent = getattr(inst, "handle", None)
        if ent is not None:
            k = bisect_left(self.entities, ent)
            if k < len(self.entities) and self.instances[k] is inst:
                return k
        for k, other in enumerate(self.instances):      # an instance with another handle: looked for
            if other is inst:
                return k
        return -1

    def relink(self, places: list) -> None:
        """After a step (``places``: the places of the humans that fired, ascending): each
        FiredEvents of ``unlinked`` whose human fired is linked to its instance again; the
        others wait (those no longer in the crowd are let go)."""
        unlinked, self.unlinked = self.unlinked, {}
        entities, fired_of = self.entities, self.fired
        for ent, f in unlinked.items():
            k = bisect_left(entities, ent)
            if k == len(entities) or entities[k] != ent or fired_of[k] is not f or f.source is not None:
                continue                                # gone, replaced, or linked again meanwhile
            j = bisect_left(places, k)
            if j < len(places) and places[j] == k:
                f.source = self.instances[k]
            else:
                self.unlinked[ent] = f

    def posed_now(self) -> None:
        """The pose just made follows the crowd's order (PoseRef.row reads it)."""
        self.posed = self.entities

    def humans(self) -> Iterator[tuple[int, Any, Any]]:
        """(entity, instance, FiredEvents) in entity order."""
        return zip(self.entities, self.instances, self.fired)

    # ---------------------------------------------------------------- the world read again
    def rebuild(self) -> None:
        """Read the crowd from the world's esper queries (a change made behind the Game's
        back, a restore, the first update): the body and combat tables made to hold exactly
        the world's views (their ``rehome``), every list and array made again, and the
        humans gone from the world let go (their tasks cut onto the deferred list, their
        human row given back, as ``Game.remove_human`` does)."""
        ctx = self.ctx
        self._stale = False
        self.rebuilds += 1                      # (views may hold other rows now: a restore's, a rehome's)
        self._unposed()
        humans = sorted(esper.get_components(Animator, PoseRef, FiredEvents))
        bodies = sorted(esper.get_component(Body))
        table = ctx.bodies
        table.rehome(b for _, b in bodies)
        ctx.combats.rehome(c for _, c in sorted(esper.get_component(Combat)))
        before = self.instances
        self.entities = [e for e, _ in humans]
        self.entity_ids = np.array(self.entities, np.int64)
        self.instances = [a.instance for _, (a, _, _) in humans]
        self.fired = [f for _, (_, _, f) in humans]
        for e, (a, pref, fired) in humans:
            pref.link(self, e)
            fired.source = a.instance              # a view onto the instance's events
            fired.link(self, e)
        self.unlinked = {}
        parts = self.parts                         # the same dict (Game._entities holds it)
        parts.clear()
        for e in self.entities:
            parts[e] = entity_parts(e)
        self.body_entities = [e for e, _ in bodies]
        self.bodies = [b for _, b in bodies]
        n = len(bodies)
        self.body_rows = _grow(np.zeros(0, np.int64), n, -1)
        self.body_rows[:n] = [b._row for b in self.bodies]
        cap = table.capacity
        self.pose_col = np.full(cap, -1, np.int64)
        self.idle = np.ones(cap, np.bool_)
        rows = []
        for k, e in enumerate(self.entities):
            b = parts[e].get(Body)
            r = b._row if b is not None else -1
            rows.append(r)
            if r >= 0:
                self.pose_col[r] = k
                self.idle[r] = False
        self.human_rows = rows
        every = self.body_rows[:n]
        self.strays = every[self.idle[every]]
        self.version += 1
        self._let_go(before)

    def _let_go(self, before: list) -> None:
        """The humans gone from the world since the crowd was last read (their entity
        deleted directly with ``esper.delete_entity``): every task of theirs is cut off
        onto the deferred list, so the next flush releases them and gives them back to the
        pool, and their row of the human table goes back, as ``remove_human`` does (for
        which this is a no-op: already cut and forgotten)."""
        if not before:
            return
        now = {id(inst) for inst in self.instances}
        player = self.ctx.player
        for inst in before:
            if id(inst) not in now and not (inst.handle is not None and esper.entity_exists(inst.handle)):
                player.cut(inst)
                player.forget(inst)
