"""System 1: the animation step of every human, then the compiled sample and bone transforms.

Every human's queue is run and its stack advanced (hand-overs, fades, events, the
held-flag events), then all stacks are sampled, blended and turned into model-space
transforms in one compiled call (anim.engine.kernels; the reference engine, anim.reference,
poses one human at a time). Nothing is released here: released tasks wait on the deferred
list for the flush.

Original: Humans_Update's animation pass (0x00175610, the tasks' +0x64 and +0x5c calls,
0x00176d60 CharacterInstance_Sample, 0x00104630 Instance_BuildBoneMatrices).
"""
from __future__ import annotations

from typing import Any

import esper

from scuffle.systems.context import SimContext
from scuffle.systems.crowd import FiredList

__all__ = ["AnimationStep"]

_SET = object.__setattr__


class AnimationStep(esper.Processor):
    """Advance and sample every human's animation (see the module docstring).

    The humans are the world's crowd (``ctx.crowd``: entity order, kept by the joins and
    leaves); the step reads it as it stands and keeps no list of its own.
    """

    def __init__(self, ctx: SimContext):
        self.ctx = ctx

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
        crowd = ctx.crowd
        crowd.sync()
        instances = crowd.instances
        _SET(ctx, "entities", crowd.entities)
        player = ctx.player
        both = getattr(player, "step_and_pose", None)
        if both is not None:                       # the pose's other chunks begun beside the step's Python
            bones = both(instances, ctx.dt)
        else:
            player.step(instances, ctx.dt)
            bones = player.pose(instances)
        crowd.posed_now()
        _SET(ctx, "poses", bones.poses)            # the fast path reuses these buffers each update
        _SET(ctx, "bone_pos", bones.pos)
        _SET(ctx, "bone_rot", bones.rot)
        # Only the humans that may have fired (the engine knows them) are looked at, and
        # their events are not made into objects here: no per-human loop on a quiet update.
        fired_now: list = []
        eng = getattr(ctx.player, "batch", None)
        places = eng.fired_at(instances) if eng is not None else None
        if places is not None:                     # the compiled step's own list: who fired, in order
            # its entries made when first read (a reader of the columns reads none)
            if crowd.unlinked:
                crowd.relink(places)
            _SET(ctx, "fired", FiredList(crowd, places) if len(places) else fired_now)
            for p in ctx.probe:
                p(ctx, "animation")
            return
        may = ctx.player.may_have_events(instances)
        if not may:
            _SET(ctx, "fired", fired_now)
            for p in ctx.probe:
                p(ctx, "animation")
            return
        cand = set()
        for inst in may:
            k = crowd.place_of(inst)
            if k >= 0:
                cand.add(k)
        entities, fired_of = crowd.entities, crowd.fired
        for k in sorted(cand):
            inst = instances[k]
            fired = fired_of[k]
            if fired.source is not inst:            # unlinked by someone: link again
                fired.source = inst
            if inst._event_rows is not None or inst._events:
                fired_now.append((entities[k], fired, inst))
        _SET(ctx, "fired", fired_now)
        for p in ctx.probe:
            p(ctx, "animation")
