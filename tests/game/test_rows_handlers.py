"""Rows handlers (Game.on_rows): an update's animation events as columns, the same events a
per-event handler (Game.on) sees, in the same order, on both engines and for a crowd or
a few humans; a rows handler that raises stops nothing; bad registrations are refused."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.data.clip import EventType
from scuffle.game.tools.bench import build_crowd
from scuffle.systems.context import HandlerError
from scuffle.systems.events import EventRows

TYPES = (EventType.SOUND, EventType.NAMED_EFFECT, EventType.HELD_OPEN)


def _both(game, types, updates: int) -> tuple[list, list, int]:
    """Run ``updates`` with a per-event handler and a rows handler of ``types`` (None: every
    type); returns what each saw as (update, entity, type, anim id, frame) and the
    number of rows handler calls."""
    per_event, rows_seen, calls = [], [], [0]

    def one(ctx, ent, fe):
        per_event.append((ctx.update, ent, int(fe.event.type), fe.anim_id, fe.event.frame))

    def rows(ctx, r):
        assert isinstance(r, EventRows) and len(r) > 0
        assert all(a.dtype == np.int64 for a in (r.entities, r.types, r.anim_ids))
        calls[0] += 1
        rows_seen.extend((ctx.update, e, t, a, ev.frame) for e, t, a, ev in
                         zip(r.entities.tolist(), r.types.tolist(), r.anim_ids.tolist(), r.events))

    if types is None:
        game.ctx.default_handlers.append(one)
    else:
        for t in types:
            game.on(t, one)
    game.on_rows(types, rows)
    for _ in range(updates):
        game.step()
    return per_event, rows_seen, calls[0]


@pytest.mark.parametrize("n", [2, 400])
def test_a_rows_handler_sees_what_the_per_event_handlers_see(n, monkeypatch):
    """A crowd (its events read as columns from the compiled step's buffer) and two
    fighters (a few humans: from their event objects): the same events, in order."""
    from scuffle.anim.playback.batch import BatchEngine
    as_columns = []
    real = BatchEngine.fired_columns
    monkeypatch.setattr(BatchEngine, "fired_columns", lambda self, i: as_columns.append(1) or real(self, i))
    game = build_crowd(n, "realistic", "compiled", 3)
    try:
        per_event, rows_seen, calls = _both(game, TYPES, 40 if n > 2 else 150)
    finally:
        game.close()
    assert per_event and rows_seen == per_event
    assert (len(as_columns) > 20) == (n > 2)                 # the crowd's path, the few humans' path
    assert calls == len({u for u, *_ in per_event})      # once per update that has events of its types
    assert {t for _, _, t, _, _ in rows_seen} <= {int(t) for t in TYPES}


def test_every_type_and_the_reference_engine():
    """None takes every type (as a default handler sees them); the reference engine hands
    the rows handlers the same events from its objects."""
    for engine in ("compiled", "reference"):
        game = build_crowd(24, "light", engine, 1)
        try:
            per_event, rows_seen, _ = _both(game, None, 40)
        finally:
            game.close()
        assert len(per_event) > 20 and rows_seen == per_event, engine


def test_a_rows_handler_that_raises_stops_nothing():
    game = build_crowd(400, "realistic", "compiled", 2)
    seen = []
    try:
        def bad(ctx, rows):
            raise RuntimeError("boom")

        game.on_rows(EventType.SOUND, bad)
        game.on_rows([EventType.SOUND], lambda ctx, rows: seen.append(len(rows)))
        raised = 0
        for _ in range(30):
            try:
                game.step()
            except HandlerError as e:
                raised += 1
                assert e.errors[0][0] == "events" and isinstance(e.errors[0][1], RuntimeError)
        assert raised == len(seen) > 0                        # each update with sounds: one error
        assert game.update == 30                              # and every update completed
    finally:
        game.close()


def test_bad_registrations_are_refused():
    game = build_crowd(2, "realistic", "compiled", 1)
    try:
        for bad in (300, -1, True, "sound", [EventType.SOUND, 999], 1.5):
            with pytest.raises(ValueError, match="on_rows: event type"):
                game.on_rows(bad, lambda ctx, rows: None)
        with pytest.raises(ValueError, match="not callable"):
            game.on_rows(EventType.SOUND, 5)
        assert game.on_rows(EventType.SOUND, print) is print
    finally:
        game.close()


def test_of_types_keeps_the_order_and_the_columns_together():
    rows = EventRows(np.array([5, 5, 7, 9], np.int64), np.array([11, 44, 11, 33], np.int64),
                     np.array([1, 2, 3, 4], np.int64), ("a", "b", "c", "d"))
    part = rows.of_types((11, 33))
    assert part.entities.tolist() == [5, 7, 9] and part.types.tolist() == [11, 11, 33]
    assert part.anim_ids.tolist() == [1, 3, 4] and tuple(part.events) == ("a", "c", "d")
    assert rows.of_types(None) is rows and rows.of_types((11, 33, 44)) is rows
    assert len(rows.of_types((99,))) == 0


def test_a_few_humans_rows_handler_makes_no_fired_event_and_no_array_without_its_types(monkeypatch):
    """Two fighters (a few humans): the rows handler's columns come from the step's rows as
    Python values (no FiredEvent made for it: the humans' events stay rows), and on an
    update with no event of its types no array is made for it (the handler not called)."""
    import scuffle.systems.events as E

    made = []
    real = E.EventRows.__init__

    def counted(self, *a):
        made.append(1)
        real(self, *a)

    monkeypatch.setattr(E.EventRows, "__init__", counted)
    game = build_crowd(2, "realistic", "compiled", 1)
    calls, served_as_rows = [0], [0]
    try:
        def rows(ctx, r):
            calls[0] += 1
            served_as_rows[0] += any(i._event_rows is not None for i in ctx.crowd.instances)
            assert set(r.types.tolist()) == {int(EventType.SOUND)}

        game.ctx.row_handlers[:] = []                     # (the crowd's listener out: this handler alone)
        game.on_rows([EventType.SOUND], rows)
        for _ in range(150):
            game.step()
    finally:
        game.close()
    assert calls[0] > 0 and served_as_rows[0] > 0          # called with the rows left as rows
    assert len(made) == calls[0]                           # columns made only for a call: none on the others
