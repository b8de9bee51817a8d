"""The deferred list as rows (anim.playback.deferred.DeferredRows).

The step kernel writes the tasks it defers straight into the list's rows, Python's own
defer (a cut, a queued start's change) appends a row pair, the flush's kernel reads them
(anim.engine.kernels.flush_release) and stops at each entry Python releases. Each case runs on
the engine and on the plain-Python reference (anim.reference), whose deferred list is
(task, instance) pairs: the lists agree entry by entry (each task's anim id, type and
human), in the order "When a clip ends" L314 and docs/original.md ("The per-update
order") give. The released ids are made into the humans' lists when read
(Player.make_released), and a step empties them as before.
"""
from __future__ import annotations

import numpy as np

from scuffle.anim.engine.callbacks import Callback
from scuffle.anim.playback.deferred import DeferredRows
from scuffle.anim.playback.player import Player
from scuffle.anim.engine.snapshot import load_engine, save_engine
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.game.fighters.moveset import demo_set

from flushhelp import CLIP, IDLE, flush_until, three_handing_over
from flushhelp import state as _state
from flushhelp import worlds as _worlds


def _entries(w) -> list:
    """The deferred list as (human, anim id, type) per entry."""
    return [(inst.name, t.anim_id(), int(t.type)) for t, inst in w.deferred]


def test_the_rows_read_as_the_references_list_after_each_step():
    """Chains handing over, fades ending, queued starts (a start is a change: it defers)
    and a human listed twice, over 40 updates: after each step the engine's rows, read as
    pairs, are the reference's deferred list entry by entry, in step order; each row pair
    is the task's row and its human's; then both flush to the same state."""
    aset = demo_set()
    runs = []
    for w, cls in _worlds():
        hs = [cls(aset, f"h{i}") for i in range(5)]
        for i, h in enumerate(hs):
            w.change(h, w.chain(h, [CLIP, 12, IDLE][i % 2:], held=0x1 << i, blend=0.1 * (i % 3)), 0.2)
        seen = []
        for u in range(40):
            if u % 7 == 3:
                w.enqueue(hs[u % 5], w.clip(hs[u % 5], 12, w.loop(hs[u % 5], IDLE)))
            if u % 11 == 5:
                w.change(hs[(u + 1) % 5], w.clip(hs[(u + 1) % 5], CLIP, w.loop(hs[(u + 1) % 5], IDLE)), 0.1)
            order = hs + [hs[1]] if u % 9 == 4 else hs
            w.step(order)
            seen.append(_entries(w))
            if isinstance(w, Player):
                dl = w.deferred_rows
                assert dl.n == len(w.deferred) and not dl.odd
                for (t, inst), (hr, tr) in zip(w.deferred, dl.rows[:dl.n].tolist()):
                    assert (inst.slot, t.trow) == (hr, tr) and t.released
            w.flush()
            seen.append([sorted(h.released) for h in hs])
        assert sum(len(s) for s in seen[::2]) >= 20
        runs.append((seen, _state(w, hs)))
    assert runs[0] == runs[1]


def test_a_forgotten_humans_entries_are_held_as_objects_and_saved():
    """A human cut and forgotten before the flush: its entries become entries held as
    objects (its row no longer the engine's), in their place in the list; a snapshot
    taken then restores them, and the flush releases them on its record, in order,
    both times to the same state; the pool and every row come back."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, n) for n in "abc"]
    for h in hs:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE), held=0x5), 0.0)
    for _ in range(2):
        p.step(hs)
        p.flush()
    for h in hs:
        p.cut(h)
    p.forget(hs[1])
    dl = p.deferred_rows
    assert dl.n == 3 and sorted(dl.odd) == [1]
    assert [i.name for _, i in p.deferred] == ["a", "b", "c"]
    snap = save_engine(p, [hs[0], hs[2]])

    def run() -> tuple:
        touched = p.flush()
        return ([i.name for i in touched], [list(h.released) for h in hs], hs[0].record.flags, p.pool.in_use,
                p.stores.tasks.in_use, p.stores.cursors.in_use, p.stores.humans.in_use)

    first = run()
    assert first[0] == ["a", "b", "c"] and first[1] == [[CLIP]] * 3
    assert first[3:6] == (0, 0, 0)
    load_engine(p, snap)
    assert p.deferred_rows.n == 3 and sorted(p.deferred_rows.odd) == [1]
    for h in hs:
        h.released = []
    assert run() == first


def test_released_ids_are_made_when_read_and_emptied_by_the_step():
    """The flush leaves the released ids as rows (``released_log``); reading one human's
    ``released`` makes every human's list, in release order; a human not stepped keeps
    its ids through another human's step, a stepped one starts empty (as the reference)."""
    aset = demo_set()
    out = []
    for w, cls in _worlds():
        hs = [cls(aset, f"h{i}") for i in range(3)]
        for h in hs:
            w.change(h, w.clip(h, CLIP, w.loop(h, IDLE)), 0.0)
        w.step(hs)
        w.flush()
        if isinstance(w, Player):
            assert w.released_log and not w.batch._noisy
        got = [list(h.released) for h in hs]
        if isinstance(w, Player):
            assert not w.released_log
        w.step(hs[:1])                      # h1 and h2 keep theirs
        kept = [list(h.released) for h in hs]
        w.flush()
        w.step(hs[:1])
        w.flush()
        w.step(hs)
        w.flush()
        out.append((got, kept, [list(h.released) for h in hs]))
    assert out[0] == out[1]
    assert out[0][0] == [[-1]] * 3 and out[0][1] == [[], [-1], [-1]]


def test_the_deferred_rows_reorder_and_detach_keep_the_objects_in_place():
    """DeferredRows alone: a stable reorder of the tail moves the entries held as objects
    with their place; detach turns a human's rows into objects; save and load restore."""
    dl = DeferredRows(2)
    views = {10: "t10", 11: "t11", 12: "t12", 13: "t13"}
    dl.append_row(0, 10)
    dl.append_row(1, 11)
    dl.append_odd("tx", "x")
    dl.append_row(0, 12)
    dl.append_row(2, 13)
    assert dl.n == 5 and dl.rows.shape[0] >= 5
    dl.reorder(1, np.array([2, 0, 1, 3]))          # the tail 1..4 as [3, 1, 2, 4]
    assert dl.rows[:5].tolist() == [[0, 10], [0, 12], [1, 11], [-1, -1], [2, 13]]
    assert dl.odd == {3: ("tx", "x")}
    assert dl.holds_human(0, "y") and dl.holds_human(7, "x") and not dl.holds_human(7, "y")
    state = dl.save()
    dl.detach(0, "h0", views)
    assert dl.odd == {0: ("t10", "h0"), 1: ("t12", "h0"), 3: ("tx", "x")}
    assert dl.pairs(views, ["h0", "h1", "h2"])[2] == ("t11", "h1")
    out, n, odd = dl.take(np.zeros((1, 2), np.int64))
    assert n == 5 and dl.n == 0 and not dl.odd and len(odd) == 3 and out[:5].tolist()[2] == [1, 11]
    dl.load(state)
    assert dl.n == 5 and dl.odd == {3: ("tx", "x")} and dl.rows[1].tolist() == [0, 12]


def test_the_events_made_from_the_read_buffer_are_those_made_alone():
    """BatchEngine.make_fired (EventDispatch's: the buffer read once) makes the very
    FiredEvent values ``fired`` makes for each human: the clip's event object, the anim id
    and the task."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(6)]
    for i, h in enumerate(hs):
        p.change(h, p.chain(h, [CLIP, 12, IDLE][i % 2:], blend=0.1), 0.1)
    compared = 0
    for _ in range(30):
        p.step(hs)
        span = p.batch.event_span()
        for h in hs:
            rows = h._event_rows
            if rows is None:
                continue
            alone: list = []
            p.batch.fired(alone, rows[1], rows[2])
            made = p.batch.make_fired(h, span, rows[1], rows[2])
            assert made is h.events and h._event_rows is None
            assert [(e.event, e.anim_id, e.task) for e in made] == [(e.event, e.anim_id, e.task) for e in alone]
            compared += len(made)
        p.flush()
    assert compared >= 10


class _Stop(BaseException):
    """Not an Exception: the flush does not keep it (run_callback keeps Exceptions)."""


def test_a_callback_raising_past_the_flush_leaves_its_task_given_back():
    """An end callback raising a BaseException (not kept as a callback error) mid-flush:
    the task it ended is still given back (the kernel's discard runs before it goes on),
    the releases before it are done, those after it are not, as on the reference (its
    ``finally``); the pool's count matches the tasks held."""
    aset = demo_set()
    out = []
    for w, cls in _worlds():
        def stop(inst):
            raise _Stop(inst.name)

        w.callbacks.register("stop", stop)
        hs = three_handing_over(w, cls, aset, "stop")
        raised = flush_until(w, hs, _Stop, lambda text: text is not None)
        assert raised == "h1"
        out.append(([h.record.flags for h in hs], w.pool.in_use, [list(h.released) for h in hs]))
    assert out[0] == out[1]
    # h2's clip not released: it still holds a held bit (0x4, which its events left of 0x1)
    assert out[0][0][:2] == [0, 0] and out[0][0][2] != 0 and out[0][2] == [[CLIP], [CLIP], []]


def test_an_end_callback_that_gives_its_own_task_back():
    """An end callback that discards its own task and makes a new one on another human
    (which may take the row just given back): the flush does not give the new task back,
    and the pool and rows balance, as on the reference."""
    aset = demo_set()
    out = []
    for w, cls in _worlds():
        hs = [cls(aset, f"h{i}") for i in range(3)]
        made: list = []
        ended: list = []

        def drop(inst, w=w, hs=hs, made=made, ended=ended):
            w.discard(ended[0])                         # its own task, back to the pool now
            made.append(w.loop(hs[2], IDLE))            # may take the row just given back
            w.push(hs[2], made[-1])

        w.callbacks.register("drop", drop)
        for i, h in enumerate(hs):
            t = w.clip(h, CLIP, w.loop(h, IDLE), on_end=Callback("drop", ()) if i == 1 else None)
            if i == 1:
                ended.append(t)
            w.change(h, t, 0.0)
        for _ in range(30):
            w.step(hs)
            w.flush()
        assert made
        if isinstance(w, Player):
            assert made[0].alive()
        out.append((w.pool.in_use, w.tasks_out(hs), [h.record.anim_id for h in hs], [len(h.stack) for h in hs]))
    assert out[0] == out[1]
    assert out[0][0] == out[0][1]
