"""The flush's callback columns and kept handles (the flush <= 1 ms at 10,000).

The callback id columns (``tasks.on_end``, ``humans.on_report``: ids of the world's
CallbackTable, -1 for none) follow every write, and the flush kernel reads them to stop
at an entry with a callback to run (anim.engine.kernels.flush_release), so no set of callbacks
is compared at each stop. The flush keeps the handles of the rows it
gives back that nothing else holds (Table.spare) and the Player's constructors take them
(anim.playback.tasks.new_handle): a handle anyone still holds (a variable, a weak reference, a
snapshot) is never reused, and raises StaleHandle as before; the runs are the same with
and without the kept handles.
"""
from __future__ import annotations

import copy
import gc
import pickle
import weakref

import numpy as np
import pytest

from scuffle.anim.engine.callbacks import Callback
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.reference import engine_state
from scuffle.anim.engine.snapshot import load_engine, save_engine
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.engine.store import StaleHandle, task_table
from scuffle.anim.playback.tasks import ClipTask, FadeTask, LoopTask
from scuffle.game.fighters.moveset import demo_set

from flushhelp import CLIP, IDLE


def _marked(table, name: str) -> list[int]:
    """The rows whose callback id column ``name`` names a callback."""
    return np.flatnonzero(getattr(table, name) >= 0).tolist()


def test_the_end_and_report_marks_follow_the_tasks_and_humans():
    """tasks.on_end's mark follows a constructor's on_end, the end callback set and
    cleared, a task given back in Python and one the flush gives back; humans.on_report's
    follows the instance's report callback and the human leaving."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(2)]
    ends = p.stores.tasks
    a = p.clip(hs[0], CLIP, p.loop(hs[0], IDLE), on_end=Callback("noop", ()))
    p.callbacks.register("noop", lambda inst: None)
    assert _marked(ends, "on_end") == [a.trow]
    b = p.loop(hs[1], IDLE)
    b.on_end = Callback("noop", ())
    assert _marked(ends, "on_end") == sorted([a.trow, b.trow])
    b.on_end = None
    assert _marked(ends, "on_end") == [a.trow]
    b.on_end = Callback("noop", ())
    p.discard(b)                                       # given back in Python: Table.free
    assert _marked(ends, "on_end") == [a.trow]
    p.change(hs[0], a, 0.0)
    p.change(hs[1], p.loop(hs[1], IDLE), 0.0)
    row = a.trow
    for _ in range(60):
        p.update(hs)
        if not p.stores.tasks.live[row]:
            break
    assert not p.stores.tasks.live[row] and _marked(ends, "on_end") == []       # the flush gave it back
    reports = p.stores.humans
    hs[1].on_report = Callback("noop", ())
    r1 = hs[1].slot
    assert _marked(reports, "on_report") == [r1]
    hs[1].on_report = None
    assert _marked(reports, "on_report") == []
    hs[1].on_report = Callback("noop", ())
    p.cut(hs[1])
    p.forget(hs[1])
    p.flush()
    assert _marked(reports, "on_report") == []


def test_the_marks_come_back_with_a_snapshot():
    """A snapshot restores the end and report callbacks and their marks with them: an end
    callback cleared after the snapshot runs again after the restore (the kernel stops at
    it), one set after it does not."""
    aset = demo_set()
    p = Player()
    log: list = []
    p.callbacks.register("log", lambda inst, tag: log.append((tag, inst.name)))
    hs = [CharacterInstance(aset, f"h{i}") for i in range(3)]
    tasks = []
    for h in hs:
        t = p.clip(h, CLIP, p.loop(h, IDLE), on_end=Callback("log", ("end",)) if h.name == "h1" else None)
        tasks.append(t)
        p.change(h, t, 0.0)
    hs[2].on_report = Callback("log", ("report",))
    p.update(hs)
    snap = save_engine(p, hs)
    tasks[1].on_end = None
    tasks[0].on_end = Callback("log", ("late",))
    hs[2].on_report = None
    load_engine(p, snap)
    ends, reports = p.stores.tasks, p.stores.humans
    assert _marked(ends, "on_end") == [tasks[1].trow] and _marked(reports, "on_report") == [hs[2].slot]
    for _ in range(60):
        p.update(hs)
        if log:
            break
    assert log == [("end", "h1")]


def _crowd_run(p: Player, n: int = 12, updates: int = 90) -> list:
    """Humans changing chains (with end callbacks) every few updates: each update's state."""
    aset = demo_set()
    p.callbacks.register("noop", lambda inst: None)
    hs = [CharacterInstance(aset, f"h{i}") for i in range(n)]
    out = []
    for u in range(updates):
        for i, h in enumerate(hs):
            if (u + i) % 7 == 0:
                chain = p.chain(h, [CLIP, 12, IDLE][i % 2:], held=0x1 << (i % 4), blend=0.1 * (i % 3),
                                on_end=Callback("noop", ()) if i % 3 == 0 else None)
                p.change(h, chain, 0.1 * (i % 2))
        p.update(hs)
        out.append((engine_state(p, hs), [list(h.released) for h in hs], p.pool.in_use,
                    [[(type(t).__name__, t.anim_id(), t.rate, int(t.flags), t.held, t.on_end) for t in h.stack]
                     for h in hs]))
    return out


def test_the_kept_handles_change_nothing():
    """The same crowd with and without the kept handles (an empty Table.spare keeps none):
    every update's state, released ids, pool and the stacks read through the handles are
    the same; with them, the constructors took kept handles."""
    p = Player(PlayerOptions(pool_size=400))
    taken = []
    spare = p.stores.tasks.spare

    class Spy(list):
        def pop(self, *a):
            h = list.pop(self, *a)
            taken.append(h)
            return h

    for cls in list(spare):
        spare[cls] = Spy(spare[cls])
    with_kept = _crowd_run(p)
    q = Player(PlayerOptions(pool_size=400))
    q.stores.tasks.spare.clear()
    without = _crowd_run(q)
    assert with_kept == without
    assert len(taken) > 50 and not q.stores.tasks.spare


def test_a_handle_still_held_is_never_reused():
    """A task handle kept by its caller, one named by a weak reference only and those a
    snapshot holds are not kept for reuse: the kept one raises StaleHandle once its row
    went back (and no new task is it), the weakly named one is gone, and the snapshot's
    restore reads its own."""
    aset = demo_set()
    p = Player()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(4)]
    held = p.clip(hs[0], CLIP, p.loop(hs[0], IDLE))
    p.change(hs[0], held, 0.0)
    weak = p.clip(hs[1], CLIP, p.loop(hs[1], IDLE))
    p.change(hs[1], weak, 0.0)
    wref = weakref.ref(weak)
    wrow = weak.trow
    del weak
    for h in hs[2:]:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE)), 0.0)
    for _ in range(60):
        p.update(hs)
        if not held.alive():
            break
    assert not held.alive()
    assert not p.stores.tasks.live[wrow]
    gc.collect()
    assert wref() is None                              # not kept: nothing reads it again
    kept = [h for lst in p.stores.tasks.spare.values() for h in lst]
    assert all(h is not held for h in kept) and kept   # others were kept
    made = [p.clip(h, CLIP, p.loop(h, IDLE)) for h in hs for _ in range(3)]
    assert all(t is not held for t in made)
    with pytest.raises(StaleHandle):
        held.rate                                      # noqa: B018
    for t in made:
        p.discard(t)
    # a snapshot's handles: restored, the stacks read the rows they had
    for h in hs:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE)), 0.0)
    p.update(hs)
    snap = save_engine(p, hs, outputs=True)
    before = [[(type(t).__name__, t.anim_id(), t.alive()) for t in h.stack] for h in hs]
    state = engine_state(p, hs)
    for _ in range(40):
        p.update(hs)
        for h in hs:
            if len(h.stack) == 1:
                p.change(h, p.clip(h, CLIP, p.loop(h, IDLE)), 0.0)
    load_engine(p, snap)
    assert [[(type(t).__name__, t.anim_id(), t.alive()) for t in h.stack] for h in hs] == before
    assert engine_state(p, hs) == state


def test_the_kept_handles_are_of_the_constructors_classes_and_bounded():
    """Only the classes the Player's constructors take back are kept, at most _SPARE_MAX each."""
    from scuffle.anim.playback import player as P
    p = Player()
    assert set(p.stores.tasks.spare) == {ClipTask, LoopTask, FadeTask, P.GaitTask}
    aset = demo_set()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(5)]
    for h in hs:
        p.change(h, p.clip(h, CLIP, p.loop(h, IDLE)), 0.2)
    for _ in range(40):
        p.update(hs)
    assert all(len(v) <= P._SPARE_MAX for v in p.stores.tasks.spare.values())
    assert sum(len(v) for v in p.stores.tasks.spare.values()) > 0
