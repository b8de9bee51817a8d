"""The per-update order of the systems, in one place: ``SCHEDULE``.

1. AnimationStep: the animation step of *every* human (advance, hand over, fire
   events, sample). The original steps every character's animation before anything
   else in Humans_Update, so the flush sees every ended task ("When a clip ends":
   AnimTask_FlushDeferred runs "once every human's animation has stepped").
2. EventDispatch: the fired events reach the game's handlers, in human (entity) order
   and then firing order. The original handles each type in place during the step
   (Anim_FireFrameEvents "handles each type in place", "Data", L86), so a handler sees
   the humans stepped and nothing released: another human's held flags still set on
   its clip's end update, its playing id still the old clip's. Dispatching after the
   step rather than inside it is ours (a handler then sees *every* human stepped, not
   only those before it); docs/original.md, "Per-update order".
3. DeferredFlush: releases what ended, clears held flags, runs end callbacks and
   refreshes record +0x20, "before the state updates and the actions of the same
   update" ("When a clip ends").
4. StateUpdate: the state function's velocity (the locomotion intent turned into
   ``state_velocity``), then root motion, then the move (the state update 0x0023fea8
   sets the velocity, then Human_ApplyRootMotion adds the root velocity, "before the
   move"; "Root motion", L347-349).
5. Actions: input, AI, scripted commands and combat, which "already see the move as
   over" on a clip's end update ("When a clip ends"). They set intents; the velocity
   an intent gives arrives in the next update's state update.
6. PairedPlacement: the combat code puts paired bodies in place ("Paired tasks"), after
   the actions that grabbed, so the next update's animation starts from there.

esper runs processors by priority, highest first, and ``add_processor`` overwrites a
processor's ``priority``; ``install`` therefore passes each priority explicitly.
"""
from __future__ import annotations

from typing import Callable, cast

import esper

from scuffle.systems.actions import Actions
from scuffle.systems.animation import AnimationStep
from scuffle.systems.context import SimContext
from scuffle.systems.events import EventDispatch
from scuffle.systems.flush import DeferredFlush
from scuffle.systems.motion import StateUpdate
from scuffle.systems.placement import PairedPlacement

__all__ = ["SCHEDULE", "PRIORITY_STEP", "install", "priority_of"]

SCHEDULE: tuple[type[esper.Processor], ...] = (
    AnimationStep,
    EventDispatch,
    DeferredFlush,
    StateUpdate,
    Actions,
    PairedPlacement,
)


# Priorities are multiples of PRIORITY_STEP, so a host can run its own system between two
# of ours (esper runs the highest priority first): priority_of(StateUpdate) - 5 runs just
# after the state update, before the actions.
PRIORITY_STEP = 10


def priority_of(system: type[esper.Processor]) -> int:
    """The explicit esper priority of a system: the first in SCHEDULE runs first, the
    last has PRIORITY_STEP, each earlier one PRIORITY_STEP more."""
    return PRIORITY_STEP * (len(SCHEDULE) - SCHEDULE.index(system))


def install(ctx: SimContext) -> list[esper.Processor]:
    """Add every system, with its priority, to the *current* esper world; returns them.
    A task callback's exception is kept on the context (``ctx.fail``) and raised once the
    update is complete (HandlerError), like an event handler's."""
    ctx.player.on_callback_error = ctx.fail
    procs = []
    for system in SCHEDULE:
        make = cast(Callable[[SimContext], esper.Processor], system)    # each takes the context
        proc = make(ctx)
        esper.add_processor(proc, priority=priority_of(system))
        procs.append(proc)
    return procs
