"""System 1: the animation step of every human, then the compiled sample and bone transforms.

Every human's queue is run and its stack advanced (hand-overs, fades, events, the
held-flag events), then all stacks are sampled, blended and turned into model-space
transforms in one compiled call (anim.kernels; the reference engine, anim.reference,
poses one human at a time). Nothing is released here: released tasks wait on the deferred
list for the flush.

Original: Humans_Update's animation pass (0x00175610, the tasks' +0x64 and +0x5c calls,
0x00176d60 CharacterInstance_Sample, 0x00104630 Instance_BuildBoneMatrices).
"""
from __future__ import annotations

from typing import Any

import esper

from scuffle.components import Animator, FiredEvents, PoseRef
from scuffle.systems.context import SimContext, sorted_components

__all__ = ["AnimationStep"]

_SET = object.__setattr__


class AnimationStep(esper.Processor):
    """Advance and sample every human's animation (see the module docstring)."""

    def __init__(self, ctx: SimContext):
        self.ctx = ctx
        self._rows: list | None = None             # the sorted rows the lists below were built from
        self._instances: list = []
        self._fired: list = []
        self._index: dict[int, int] = {}

    def _let_go(self, before: list) -> None:
        """The humans gone from the world since the last update (their entity deleted,
        by ``Game.remove_human`` or directly with ``esper.delete_entity``): every task of
        theirs is cut off onto the deferred list, so this update's flush releases them
        and gives them back to the pool, and their row of the human table goes back, as
        ``remove_human`` does (for which this is a no-op: already cut and forgotten)."""
        if not before:
            return
        now = {id(inst) for inst in self._instances}
        player = self.ctx.player
        for inst in before:
            if id(inst) not in now and not (inst.handle is not None and esper.entity_exists(inst.handle)):
                player.cut(inst)
                player.forget(inst)

    def reset(self) -> None:
        """Forget the lists cached from the crowd (they are made again at the next update):
        a restore (Game.restore) changed the world behind them."""
        self._rows = None

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Open the update (``ctx.update`` = the number of updates run before it), then
        step every human's animation, sample the crowd, build the bone transforms.

        ``esper.process(dt)`` passes ``dt`` here; it is ignored: one process is one
        update of ``ctx.dt`` (the player's ``options.dt``: the original's fixed 1/30 s,
        0x005102cc, by default). A host with a variable frame time calls
        ``esper.process()`` once per update's time it accumulates.
        """
        ctx = self.ctx
        n = ctx.updates_run
        _SET(ctx, "update", n)                    # fields SimContext.__setattr__ does not check: set directly
        _SET(ctx, "updates_run", n + 1)
        ctx.failures.clear()                       # those of an update another error cut short
        rows = sorted_components(ctx, Animator, PoseRef, FiredEvents)
        if rows is not self._rows:                 # the crowd changed: new lists, new pose rows
            self._rows = rows
            before, self._instances = self._instances, [a.instance for _, (a, _, _) in rows]
            self._let_go(before)
            self._fired = [f for _, (_, _, f) in rows]
            for row, (_, (a, pref, fired)) in enumerate(rows):
                pref.row = row
                fired.source = a.instance           # a view onto the instance's events
            ctx.entities = [e for e, _ in rows]
            self._index = {id(inst): k for k, inst in enumerate(self._instances)}
        instances = self._instances
        ctx.player.step(instances, ctx.dt)
        bones = ctx.player.pose(instances)
        _SET(ctx, "poses", bones.poses)            # the fast path reuses these buffers each update
        _SET(ctx, "bone_pos", bones.pos)
        _SET(ctx, "bone_rot", bones.rot)
        # Only the humans that may have fired (the engine knows them) are looked at, and
        # their events are not made into objects here: no per-human loop on a quiet update.
        fired_now: list = []
        eng = getattr(ctx.player, "batch", None)
        places = eng.fired_places(instances) if eng is not None else None
        if places is not None:                     # the compiled step's own list: who fired, in order
            entities, fired_of = ctx.entities, self._fired
            for k in places:
                inst = instances[k]
                fired = fired_of[k]
                if fired.source is not inst:        # unlinked by someone: link again
                    fired.source = inst
                fired_now.append((entities[k], fired, inst))
            _SET(ctx, "fired", fired_now)
            for p in ctx.probe:
                p(ctx, "animation")
            return
        may = ctx.player.may_have_events(instances)
        if not may:
            _SET(ctx, "fired", fired_now)
            for p in ctx.probe:
                p(ctx, "animation")
            return
        index = self._index
        cand = set()
        for inst in may:
            k = index.get(id(inst))
            if k is not None:
                cand.add(k)
        entities = ctx.entities
        for k in sorted(cand):
            inst = instances[k]
            fired = self._fired[k]
            if fired.source is not inst:            # unlinked by someone: link again
                fired.source = inst
            if inst._event_rows is not None or inst._events:
                fired_now.append((entities[k], fired, inst))
        _SET(ctx, "fired", fired_now)
        for p in ctx.probe:
            p(ctx, "animation")
