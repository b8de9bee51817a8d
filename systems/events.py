"""System 2: dispatch the events the animation fired to the game's handlers.

Handlers are registered per event type on the SimContext (sound, effects, camera,
slow motion...; never type 8, the partner's place, which the original does not
dispatch, "Paired tasks" L249, unless PlayerOptions.place_events is "fired");
``default_handlers`` see every event. Events fire
during the animation step and are dispatched here, after every human has stepped and
before the flush, in entity order and then firing order: a handler sees every human
stepped and nothing released (held flags still set on a clip's end update, record
+0x20 still the old clip's), as the original's handlers, run in place during the step,
see the humans they run among. A handler that raises does not stop the update: the
other handlers, the flush, the state update, the actions and the placement run for
every human, then the update ends with one HandlerError (systems/context.py).
Original: 0x00101dd8 Anim_FireFrameEvents (which handles each type in place).
"""
from __future__ import annotations

from typing import Any

import esper

from scuffle.components import FiredEvents
from scuffle.systems.context import SimContext, sorted_components

__all__ = ["EventDispatch"]


class EventDispatch(esper.Processor):
    """Hand each fired event to the handlers of its type."""

    def __init__(self, ctx: SimContext):
        self.ctx = ctx

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Dispatch this update's fired events to their handlers."""
        ctx = self.ctx
        handlers, default = ctx.handlers, ctx.default_handlers
        if ctx.fired is None:                       # no animation step ran: every component
            todo = [(ent, fired, None) for ent, fired in sorted_components(ctx, FiredEvents)]
        else:
            todo = ctx.fired
        if handlers or default:
            for ent, fired, inst in todo:
                rows = inst._event_rows if inst is not None and fired.source is inst else None
                if rows is not None and not default:
                    # still rows: made into objects only when one of their types has a handler
                    if not any(int(t) in handlers for t in rows[0].fired_types(rows[1], rows[2])):
                        continue
                for fe in fired.events:
                    for h in handlers.get(fe.event.type, ()):
                        self._call(h, ent, fe)
                    for h in default:
                        self._call(h, ent, fe)
        for p in ctx.probe:
            p(ctx, "events")

    def _call(self, handler, ent: int, fe) -> None:
        """One handler; its exception is kept (ctx.fail) and the update goes on for every
        human: raised as a HandlerError once the update is complete."""
        try:
            handler(self.ctx, ent, fe)
        except Exception as exc:
            self.ctx.fail("events", exc)
