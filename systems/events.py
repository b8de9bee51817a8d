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

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import esper
import numpy as np

from scuffle.anim.playback.cursor import FiredEvent
from scuffle.anim.playback.tasks import task_at
from scuffle.systems.context import SimContext
from scuffle.systems.crowd import FiredList

__all__ = ["EventDispatch", "EventRows"]


_FIRST = itemgetter(0)
_FEW = 16                           # fired humans up to this many are visited one by one


_FEW_TYPES = 8                      # wanted types picked by one comparison each (more: np.isin)


class _Lazy(Sequence):
    """The clip events of an update's event rows (indices ``g`` into ``evs``), each read
    when asked for: a rows handler that reads the columns alone makes no list of them."""

    __slots__ = ("_evs", "_g", "_list")

    def __init__(self, evs: list, g: np.ndarray):
        self._evs, self._g = evs, g
        self._list: tuple | None = None

    def _all(self) -> tuple:
        got = self._list
        if got is None:
            g = self._g.tolist()
            got = self._list = itemgetter(*g)(self._evs) if len(g) > 1 else tuple(self._evs[i] for i in g)
        return got

    def __len__(self) -> int:
        return len(self._g)

    def __getitem__(self, i):
        return self._all()[i]

    def take(self, mask: np.ndarray) -> "_Lazy":
        """The events where ``mask`` is True, as another lazy sequence."""
        return _Lazy(self._evs, self._g[mask])


class EventRows:
    """One update's animation events as columns, handed to a rows handler
    (``Game.on_rows``, ``SimContext.on_rows``) once per update: event j was fired by
    the human ``entities[j]``, is of type ``types[j]``, from the clip of anim id
    ``anim_ids[j]``, and ``events[j]`` is the clip's Event (its ``frame``, ``args``,
    ``fields()``). In dispatch order: the humans in entity order, each one's events in
    firing order, as the per-event handlers see them. The arrays are the handler's own
    (int64) for this call; the Event objects are the clips' own (read-only)."""

    __slots__ = ("entities", "types", "anim_ids", "events")

    def __init__(self, entities: np.ndarray, types: np.ndarray, anim_ids: np.ndarray, events: Sequence):
        self.entities, self.types, self.anim_ids, self.events = entities, types, anim_ids, events

    def __len__(self) -> int:
        return len(self.types)

    def of_types(self, wanted: tuple[int, ...] | None) -> "EventRows":
        """The events of the types ``wanted`` (None: all), in the same order."""
        if wanted is None or not len(self.types):
            return self
        types = self.types
        if 0 < len(wanted) <= _FEW_TYPES:           # a comparison a type: far cheaper than isin on few rows
            mask = types == wanted[0]
            for w in wanted[1:]:
                mask |= types == w
        else:
            mask = np.isin(types, np.array(wanted, np.int64))
        if mask.all():
            return self
        ev = self.events
        picked = ev.take(mask) if isinstance(ev, _Lazy) else tuple(e for e, m in zip(ev, mask.tolist()) if m)
        return EventRows(self.entities[mask], self.types[mask], self.anim_ids[mask], picked)


def _hand(ctx, ent, fe, handlers, default, fail) -> None:
    """One fired event to its type's handlers (``handlers``, None: none), then to the
    handlers of every type (``default``); a handler that raises is reported through
    ``fail`` and the rest still run (the update goes on: HandlerError at its end)."""
    if handlers is not None:
        for h in handlers:
            try:
                h(ctx, ent, fe)
            except Exception as exc:
                fail("events", exc)
    if default:
        for h in default:
            try:
                h(ctx, ent, fe)
            except Exception as exc:
                fail("events", exc)


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
        todo: Sequence[Any]
        if ctx.fired is None:                       # no animation step ran: every human's
            ctx.crowd.sync()
            todo = [(ent, fired, None) for ent, _, fired in ctx.crowd.humans()]
        else:
            todo = ctx.fired
        if not todo:                                # no one fired: no handler of either kind is called
            for p in ctx.probe:
                p(ctx, "events")
            return
        # a crowd's events read as columns (a few humans: one by one, no numpy call)
        cols = self._columns(ctx, todo) if len(todo) > _FEW and ((handlers and not default) or ctx.row_handlers) \
            else None
        if handlers or default:
            visit = todo
            if cols is not None and not default:
                # only the humans with an event of a type that has a handler are visited:
                # picked from the event columns, in order (the others' events stay rows)
                hit = np.isin(cols[1], np.array([t for t, hs in handlers.items() if hs], np.int64))
                places = np.unique(cols[0][hit]).tolist()
                visit = todo.pick(places) if isinstance(todo, FiredList) else [todo[k] for k in places]
            src_of: Any = None                      # the engine whose buffer ``span`` read
            span: tuple = ()
            n_span = 0                              # span's row count
            trs: Any = []                           # span's task rows, cursor rows, event indices
            crs: Any = []
            gs: Any = []
            types: Any = []                         # span's event types
            fail = ctx.fail
            get = handlers.get
            for ent, fired, inst in visit:
                rows = inst._event_rows if inst is not None and fired.source is inst else None
                if rows is not None:
                    src, lo, hi = rows
                    if src is not src_of:
                        src_of, span = src, src.event_span()
                        n_span, trs, crs, gs, types = span
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
                        # the handlers of their types as they are made (the span's type); the
                        # engine's lists read for each human (a handler may have grown a table)
                        evs, tasks, anim, ts = src.fired_maker()
                        inst._event_rows = None
                        events = inst._events
                        if hi - lo == 1:
                            tr = trs[lo]
                            fe = FiredEvent(evs[gs[lo]], anim[crs[lo]], tasks[tr] or task_at(ts, tr))
                            events.append(fe)
                            _hand(ctx, ent, fe, get(types[lo]), default, fail)
                            continue
                        for j in range(lo, hi):
                            tr = trs[j]
                            events.append(FiredEvent(evs[gs[j]], anim[crs[j]], tasks[tr] or task_at(ts, tr)))
                else:
                    events = fired.events
                for fe in events:
                    _hand(ctx, ent, fe, get(fe.event.type), default, fail)
        if ctx.row_handlers:
            self._rows(ctx, todo, cols)
        for p in ctx.probe:
            p(ctx, "events")

    @staticmethod
    def _columns(ctx: SimContext, todo: Sequence[Any]) -> tuple | None:
        """This update's events as columns (BatchEngine.fired_columns: each event's place
        in ``todo``, its type, its anim id, its index among the engine's clip events, and
        the engine), when ``todo`` is the compiled step's own list of who fired (made from
        its places, one entry each, in order); else None (the reference engine, a
        dispatch with no step before it, a list made otherwise)."""
        eng = getattr(ctx.player, "batch", None)
        if eng is None or todo is not ctx.fired:
            return None
        ks = eng.fired_at(ctx.crowd.instances)
        if ks is None or len(ks) != len(todo):
            return None
        cols = eng.fired_columns(ctx.crowd.instances)
        return None if cols is None else (*cols, eng)

    def _rows(self, ctx: SimContext, todo: Sequence[Any], cols: tuple | None) -> None:
        """The rows handlers (``SimContext.on_rows``): this update's events as columns,
        each handler once with those of its types (none: not called). From the compiled
        step's event buffer (``_columns``) in a few array operations, else from each
        human's events one by one (``_few_rows``: a few humans, the reference engine, a
        dispatch with no step before it)."""
        if cols is None:
            self._few_rows(ctx, todo)
            return
        owner, types, anim_ids, g, eng = cols
        if not len(owner):                           # no event this update: no handler is called
            return
        if isinstance(todo, FiredList):              # (its entries not made for this)
            ents = todo.entities_at()[owner]
        else:
            ents = np.fromiter(map(_FIRST, todo), np.int64, len(todo))[owner]
        every = EventRows(ents, types, anim_ids, _Lazy(eng.fired_maker()[0], g))
        for wanted, handler in ctx.row_handlers:
            mine = every.of_types(wanted)
            if not len(mine):
                continue
            try:
                handler(ctx, mine)
            except Exception as exc:                # kept: the update goes on (HandlerError)
                ctx.fail("events", exc)

    @staticmethod
    def _few_rows(ctx: SimContext, todo: Sequence[Any]) -> None:
        """The rows handlers' call from each human's events one by one (``_rows`` when the
        update's events are not the crowd's columns): (entity, type, anim id, Event) per
        event in dispatch order, from the engine's event rows while they are rows
        (BatchEngine.fired_values) or the human's FiredEvent objects; each handler's
        columns made only when one of its types fired."""
        got: list = []
        for ent, fired, inst in todo:
            rows = inst._event_rows if inst is not None and fired.source is inst else None
            if rows is None:
                for fe in fired.events:
                    got.append((ent, int(fe.event.type), int(fe.anim_id), fe.event))
                continue
            for fe in inst._events:                  # (made before the rows: none in a step's usual course)
                got.append((ent, int(fe.event.type), int(fe.anim_id), fe.event))
            for t, a, ev in rows[0].fired_values(rows[1], rows[2]):
                got.append((ent, t, a, ev))
        if not got:                                  # no event this update: no handler is called
            return
        for wanted, handler in ctx.row_handlers:
            mine = got if wanted is None else [e for e in got if e[1] in wanted]
            if not mine:
                continue
            ents, types, ids, events = zip(*mine)
            rows_of = EventRows(np.array(ents, np.int64), np.array(types, np.int64), np.array(ids, np.int64),
                                events)
            try:
                handler(ctx, rows_of)
            except Exception as exc:                # kept: the update goes on (HandlerError)
                ctx.fail("events", exc)

    def _call(self, handler, ent: int, fe) -> None:
        """One handler; its exception is kept (ctx.fail) and the update goes on for every
        human: raised as a HandlerError once the update is complete."""
        try:
            handler(self.ctx, ent, fe)
        except Exception as exc:
            self.ctx.fail("events", exc)
