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

from scuffle.anim.playback.cursor import FiredEvent
from scuffle.anim.playback.tasks import task_at
from scuffle.systems.context import SimContext

__all__ = ["EventDispatch"]


class EventDispatch(esper.Processor):
    """Hand each fired event to the handlers of its type."""

    def __init__(self, ctx: SimContext):
        self.ctx = ctx

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Dispatch this update's fired events to their handlers.

        A human whose events are still the compiled step's rows is looked at by their
        types alone, the buffer read for the whole update in one go (BatchEngine.event_span:
        its rows as lists): its events are made into FiredEvent objects only when one of
        its types has a handler, from those lists (BatchEngine.make_fired)."""
        ctx = self.ctx
        handlers, default = ctx.handlers, ctx.default_handlers
        if ctx.fired is None:                       # no animation step ran: every human's
            ctx.crowd.sync()
            todo = [(ent, fired, None) for ent, _, fired in ctx.crowd.humans()]
        else:
            todo = ctx.fired
        if handlers or default:
            src_of: Any = None                      # the engine whose buffer ``span`` read
            span: tuple = ()
            n_span = 0                              # span's row count
            trs: Any = []                           # span's task rows, cursor rows, event indices
            crs: Any = []
            gs: Any = []
            types: Any = []                         # span's event types
            epoch = -1                              # the engine's ``layout`` when these were read:
            evs: Any = None                         # src_of.fired_maker()
            tasks: Any = None
            anim: Any = None
            ts: Any = None
            fail = ctx.fail
            get = handlers.get
            for ent, fired, inst in todo:
                rows = inst._event_rows if inst is not None and fired.source is inst else None
                if rows is not None:
                    src, lo, hi = rows
                    if src is not src_of:
                        src_of, span = src, src.event_span()
                        n_span, trs, crs, gs, types = span
                        epoch = src.layout
                        evs, tasks, anim, ts = src.fired_maker()
                    if hi > n_span:                 # rows past the span (never, but safe): read alone
                        if not default and not any(t in handlers for t in src.fired_types(lo, hi).tolist()):
                            continue
                        events = fired.events
                    else:
                        if default:
                            pass
                        elif hi - lo == 1:          # one event (most humans): its type alone
                            if types[lo] not in handlers:
                                continue            # no handler for it: left as rows
                        else:
                            for j in range(lo, hi):
                                if types[j] in handlers:
                                    break
                            else:
                                continue            # no type of its events has a handler: left as rows
                        # inst.events made from the span (BatchEngine.make_fired's objects, the
                        # anim id and task read now), with no call per human, and handed to
                        # the handlers of their types as they are made (the span's type)
                        if epoch != src.layout:         # (a handler grew a table: read again)
                            epoch = src.layout
                            evs, tasks, anim, ts = src.fired_maker()
                        inst._event_rows = None
                        events = inst._events
                        if hi - lo == 1:
                            tr = trs[lo]
                            fe = FiredEvent(evs[gs[lo]], anim[crs[lo]], tasks[tr] or task_at(ts, tr))
                            events.append(fe)
                            hs = get(types[lo])
                            if hs is not None:
                                for h in hs:
                                    try:
                                        h(ctx, ent, fe)
                                    except Exception as exc:    # kept: the update goes on (HandlerError)
                                        fail("events", exc)
                            if default:
                                for h in default:
                                    try:
                                        h(ctx, ent, fe)
                                    except Exception as exc:
                                        fail("events", exc)
                            continue
                        for j in range(lo, hi):
                            tr = trs[j]
                            events.append(FiredEvent(evs[gs[j]], anim[crs[j]], tasks[tr] or task_at(ts, tr)))
                else:
                    events = fired.events
                for fe in events:
                    hs = get(fe.event.type)
                    if hs is not None:
                        for h in hs:
                            try:
                                h(ctx, ent, fe)
                            except Exception as exc:    # kept: the update goes on (HandlerError)
                                fail("events", exc)
                    if default:
                        for h in default:
                            try:
                                h(ctx, ent, fe)
                            except Exception as exc:
                                fail("events", exc)
        for p in ctx.probe:
            p(ctx, "events")

    def _call(self, handler, ent: int, fe) -> None:
        """One handler; its exception is kept (ctx.fail) and the update goes on for every
        human: raised as a HandlerError once the update is complete."""
        try:
            handler(self.ctx, ent, fe)
        except Exception as exc:
            self.ctx.fail("events", exc)
