"""Events as rows: the compiled step writes the fired events into a
buffer; FiredEvent objects are made only for a human whose events someone reads (its
``CharacterInstance.events``, its ``FiredEvents`` view, a handler of one of its types).
"""
from __future__ import annotations

from scuffle.anim.data.clip import EventType
from scuffle.components import FiredEvents

from gamehelp import event_game


def test_a_crowd_nobody_listens_to_makes_no_event_objects():
    with event_game() as g:
        fired_rows = listed = 0
        for _ in range(20):
            g.step()
            insts = [g.instance(f"h{i}") for i in range(6)]
            fired_rows += sum(inst._event_rows is not None for inst in insts)
            assert all(not inst._events for inst in insts)          # no FiredEvent made
            listed += len(g.ctx.fired)
            assert all(isinstance(f, FiredEvents) and i._event_rows is not None for _, f, i in g.ctx.fired)
        assert fired_rows > 10 and listed == fired_rows


def test_reading_the_events_makes_them_and_the_component_is_a_view():
    with event_game() as g:
        seen = []
        for _ in range(20):
            g.step()
            for ent, fired, inst in g.ctx.fired:
                assert fired.source is inst and g.component(ent, FiredEvents) is fired
                evs = fired.events                          # made now, from the rows
                assert evs and evs is inst.events and inst._event_rows is None
                seen.extend((fe.anim_id, fe.event.frame, int(fe.event.type)) for fe in evs)
        assert (1, 2, EventType.SOUND) in seen and (2, 1, EventType.CAMERA_SHAKE) in seen


def test_a_handler_makes_only_the_events_of_the_humans_with_its_type():
    with event_game() as g:
        got, kept, made = [], 0, 0
        g.ctx.on(EventType.CAMERA_SHAKE, lambda ctx, ent, fe: got.append(int(fe.event.type)))
        for _ in range(20):
            g.step()                                        # the dispatch has run
            for ent, fired, inst in g.ctx.fired:
                if inst.anim_set.clip(2) is not None and inst.stack[0].anim_id() == 2:
                    assert inst._event_rows is None         # clip 2 shakes the camera: made
                    made += 1
                else:
                    assert inst._event_rows is not None     # clip 1's events: still rows
                    kept += 1
        assert made and kept and got == [EventType.CAMERA_SHAKE] * made


def test_a_fired_events_component_given_a_list_holds_it():
    f = FiredEvents([1, 2])
    assert f.events == [1, 2] and f.source is None
    with event_game(1) as g:
        g.step()
        ent = g.entity("h0")
        comp = g.component(ent, FiredEvents)
        assert comp.source is g.instance("h0")
        comp.events = []                                    # unlinked: holds what it was given
        assert comp.source is None and comp.events == []
        for _ in range(30):
            g.step()
            if g.instance("h0")._event_rows is not None:
                break
        assert comp.source is g.instance("h0")              # it fired: the animation step links it again
        assert comp.events and comp.events is g.instance("h0").events


def _fired_by_scan(g) -> list:
    """The humans with events this update, found by looking at every one (entity order)."""
    out = []
    for name, ent in g.humans():
        inst = g.instance(name)
        if inst._event_rows is not None or inst._events:
            out.append((ent, inst))
    return out


def test_the_fired_list_is_the_steps_own_few_and_crowd():
    """ctx.fired comes from the compiled step's own list of who fired (BatchEngine.fired_places),
    for a few humans and for a crowd (its column path): the same humans, in entity order,
    as a look at every human."""
    for n in (6, 40):
        with event_game(n) as g:
            listed = 0
            for _ in range(25):
                g.step()
                assert [(e, i) for e, _, i in g.ctx.fired] == _fired_by_scan(g)
                listed += len(g.ctx.fired)
            assert listed > n                            # the clips' events fired, many times


def test_fired_places_is_known_only_for_the_list_just_stepped():
    """fired_places answers for the very list the last step went over, and not for another
    list, a step with a human listed twice, or after the next step began."""
    with event_game(20) as g:
        p = g.player
        insts = [g.instance(f"h{i}") for i in range(20)]
        seen = 0
        for _ in range(12):
            p.step(insts)
            ks = p.batch.fired_places(insts)
            assert ks == [k for k, inst in enumerate(insts) if inst._event_rows is not None]
            assert p.batch.fired_places(list(insts)) is None
            seen += len(ks)
        assert seen > 0
        twice = insts + insts[:1]
        p.step(twice)
        assert p.batch.fired_places(twice) is None and p.batch.fired_places(insts) is None


def test_a_crowds_fired_places_stay_the_steps_array_until_entries_are_read():
    """In a crowd (its column path) the step keeps who fired as the int64 array its status
    gave (BatchEngine.fired_at: no Python int per human that fired), equal to
    fired_places' list; ctx.fired holds that array until its entries are read, and a
    rows handler's entities come from it without any entry made."""
    import numpy as np

    with event_game(40) as g:
        got: list = []
        g.on_rows(None, lambda ctx, rows: got.append(rows.entities.tolist()))
        arrays = 0
        for _ in range(25):
            g.step()
            insts = g.ctx.crowd.instances
            ks = g.player.batch.fired_at(insts)
            assert ks is not None and list(ks) == g.player.batch.fired_places(insts)
            fired = g.ctx.fired
            if len(ks):
                assert isinstance(ks, np.ndarray) and ks.dtype == np.int64
                assert fired.places is ks and fired._list is None     # no entry made by the systems
                assert set(got[-1]) == {g.ctx.crowd.entities[k] for k in ks.tolist()}
                arrays += 1
                assert [(e, i) for e, _, i in fired] == _fired_by_scan(g)    # entries made now, the same
                assert isinstance(fired.places, list)
        assert arrays > 5


def _events_of(insts) -> list:
    return [[(fe.anim_id, fe.event.frame, int(fe.event.type)) for fe in inst.events] for inst in insts]


def test_a_crowds_event_rows_are_found_by_human_row_and_kept_through_a_partial_step():
    """A crowd's step writes nothing on the humans that fired: their event rows are found
    by human row (BatchEngine.staged_rows); a step over some of them (the stamp does not
    move, the buffer is reused) first makes the others' rows their own, so each reads the
    events of its last step, the same as two worlds stepped the same way and read at once."""
    n = 40
    with event_game(n) as a, event_game(n) as b:
        ia = [a.instance(f"h{i}") for i in range(n)]
        ib = [b.instance(f"h{i}") for i in range(n)]
        checked = 0
        for u in range(12):
            a.player.step(ia)
            b.player.step(ib)
            assert a.player.batch.staged is not None or not a.player.batch.fired_places(ia)
            assert all(i._rows is None or i._rows[3] != a.player.batch.stamp for i in ia)      # nothing written on them
            half_a, half_b = ia[: n // 2], ib[: n // 2]
            want = _events_of(ib)                       # b read at once, before its partial step
            a.player.step(half_a)                       # a: half stepped again, the rest kept
            b.player.step(half_b)
            got_rest = _events_of(ia[n // 2:])
            assert got_rest == want[n // 2:]
            assert _events_of(ia[: n // 2]) == _events_of(half_b)
            checked += sum(map(len, got_rest))
        assert checked > 0


def test_an_unlinked_component_of_a_crowd_is_linked_again_when_its_human_fires():
    with event_game(40) as g:
        g.step()
        ent = g.entity("h3")
        comp = g.component(ent, FiredEvents)
        comp.events = [7]                                   # unlinked: holds what it was given
        assert comp.source is None and comp.events == [7]
        for _ in range(30):
            g.step()
            if g.instance("h3")._event_rows is not None:
                break
        assert comp.source is g.instance("h3")               # it fired: linked again, ctx.fired unread
        assert comp.events and comp.events is g.instance("h3").events


def test_a_fired_list_kept_from_an_earlier_update_survives_joins_and_leaves():
    """ctx.fired's entries are made when first read (systems.crowd.FiredList); one kept
    from an earlier update, unread, still lists that update's humans after humans joined
    and left since (the crowd makes every such list before its lists move)."""
    with event_game(40) as g:
        g.step()
        kept, want = None, None
        for _ in range(20):
            g.step()
            if len(g.ctx.fired):
                kept = g.ctx.fired
                want = [(e, i) for e, i in _fired_by_scan(g)]
                break
        assert kept is not None and kept._list is None          # unread so far
        g.step()
        first = g.humans()[0][0]
        g.remove_human(first)
        g.add_human("newcomer", g.instance(g.humans()[0][0]).anim_set, (50.0, 50.0, 0.0), 0.0)
        assert [(e, i) for e, _, i in kept] == want
