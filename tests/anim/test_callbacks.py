"""Callbacks as data (anim.engine.callbacks) and the wrap callbacks' place in an
update: the compiled step (the one engine, which steps every human)
reports a wrap as a row, and every wrap callback runs once all humans stepped, in step
order, on the engine and the reference alike.

The idle 388 wraps at update 80 from time 0 ("When a clip ends" L332; the runtime's wraps).
"""
from __future__ import annotations

import re

import pytest

from scuffle.anim.engine.callbacks import Callback, CallbackError, Callbacks, UnknownCallback, callback
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.reference import Reference, RefInstance
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.game.fighters.moveset import demo_set

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

IDLE = 388
FIRST_WRAP = 80


def _worlds():
    return [(Player(PlayerOptions()), CharacterInstance), (Reference(PlayerOptions()), RefInstance)]


@pytest.mark.parametrize("bad, field", [
    (Callback("", ()), "on_end.kind"),
    (Callback("k", [1]), "on_end.args"),              # a list, not a tuple
    (Callback("k", (object(),)), "on_end.args[0]"),
    (Callback("k", ((1, float("nan")),)), "on_end.args[0][1]"),
    ("k", "on_end"),
    (("k", 1), "on_end"),
])
def test_a_callback_that_is_not_data_or_code_is_refused_naming_the_field(bad, field):
    aset = demo_set()
    p = Player()
    h = CharacterInstance(aset, "h")
    before = (p.pool.in_use, p.stores.tasks.in_use, p.stores.cursors.in_use)
    with pytest.raises(CallbackError, match="^" + re.escape(field) + ":"):
        p.loop(h, IDLE, on_end=bad)
    with pytest.raises(CallbackError, match="^" + re.escape(field.replace("on_end", "on_wrap")) + ":"):
        p.loop(h, IDLE, on_wrap=bad)
    assert issubclass(CallbackError, ValueError)
    # nothing half made: no task counted out, no row of the task or cursor table taken
    assert (p.pool.in_use, p.stores.tasks.in_use, p.stores.cursors.in_use) == before


def test_callback_helper_and_registry_rules():
    cb = callback("hit", 3, "jab", (1.5, None))
    assert cb == Callback("hit", (3, "jab", (1.5, None)))
    reg = Callbacks()
    seen = []

    def handler(inst, *args):
        seen.append((inst, args))
    reg.register("hit", handler)
    reg.register("hit", handler)                     # the same handler again: no-op
    with pytest.raises(CallbackError, match="already names"):
        reg.register("hit", lambda inst: None)
    with pytest.raises(CallbackError, match="not callable"):
        reg.register("other", 3)
    reg.call(cb, "h")
    assert seen == [("h", (3, "jab", (1.5, None)))]
    with pytest.raises(UnknownCallback, match="'miss'.*known: hit"):
        reg.call(Callback("miss"), "h")
    assert Callbacks.is_data(cb) and Callbacks.is_data(None) and not Callbacks.is_data(handler)


def _two_idles(w, cls, aset, on_wrap_of):
    hs = [cls(aset, f"h{i}") for i in range(2)]
    for i, h in enumerate(hs):
        w.change(h, w.loop(h, IDLE, on_wrap=on_wrap_of(i)), 0.0)
    w.flush()
    return hs


def test_a_wrap_callback_runs_after_every_human_stepped_on_both_engines():
    """Two idles wrap in the same update (80): human 0's callback sees human 1 already
    stepped past its wrap (its time restarted, 0.0249 s... far below the 1.97 s before),
    on the engine (the kernel's wrap rows, both humans in the one kernel call) and the
    reference alike."""
    aset = demo_set()
    seen_by_world = []
    for w, cls in _worlds():
        seen: list = []
        hs: list = []

        def on_wrap(inst, who, seen=seen, hs=hs):
            seen.append((who, [h.stack[0].cursors()[0].time for h in hs]))
        w.callbacks.register("wrapped", on_wrap)
        hs.extend(_two_idles(w, cls, aset, lambda i: Callback("wrapped", (i,))))
        for u in range(1, FIRST_WRAP + 1):
            w.step(hs)
            if isinstance(w, Player):
                assert w.batch.kernel_humans == 2, u
            w.flush()
            if u < FIRST_WRAP:
                assert seen == [], u
        assert [who for who, _ in seen] == [0, 1]
        for _, times in seen:
            assert all(t < 0.05 for t in times), times      # both already restarted
        seen_by_world.append(seen)
    assert seen_by_world[0] == seen_by_world[1]


def test_a_wrap_callback_that_changes_the_animation_acts_after_the_step():
    """A wrap callback given as data that changes the human's animation (a clip 15 into
    the idle): the change happens after the step, on both engines, with the same stacks."""
    aset = demo_set()
    out = []
    for w, cls in _worlds():
        def to_clip(inst, w=w):
            w.change(inst, w.clip(inst, 15, w.loop(inst, IDLE)), 0.1)
        w.callbacks.register("to_clip", to_clip)
        hs = _two_idles(w, cls, aset, lambda i: Callback("to_clip") if i == 0 else None)
        trace = []
        for _ in range(FIRST_WRAP + 20):
            w.step(hs)
            w.flush()
            trace.append([[(int(t.type), t.anim_id()) for t in h.stack] for h in hs])
        out.append(trace)
        assert trace[FIRST_WRAP - 1][0][0] == (3, 15), trace[FIRST_WRAP - 1]
    assert out[0] == out[1]


def test_an_unknown_callback_kind_does_not_stop_the_update():
    """A Callback whose kind has no handler: the step and flush finish for every human,
    the end callbacks that can run do, then UnknownCallback is raised (naming the kind)."""
    aset = demo_set()
    p = Player()
    calls = []
    p.callbacks.register("known", lambda inst: calls.append(inst.name))
    hs = [CharacterInstance(aset, f"h{i}") for i in range(2)]
    p.change(hs[0], p.clip(hs[0], 15, p.loop(hs[0], IDLE), on_end=Callback("nobody")), 0.0)
    p.change(hs[1], p.clip(hs[1], 15, p.loop(hs[1], IDLE), on_end=Callback("known")), 0.0)
    p.flush()
    with pytest.raises(UnknownCallback, match="'nobody'"):
        for _ in range(200):
            p.step(hs)
            p.flush()
    assert calls == ["h1"]
    assert all(h.stack[0].anim_id() == IDLE for h in hs)


def test_the_fight_rules_end_callbacks_are_data():
    """Every end callback the fight rules give a task is a Callback naming the Fight's
    handler (no closure in the world's state), over a demo fight with both AIs."""
    from scuffle.game.fighters.ai import FighterAI
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.runtime.world import Game
    from scuffle.game.fighters.moveset import demo_set as dset

    g = Game()
    aset = dset()
    g.add_human("a", aset, position=(0.0, 0.0, 0.0))
    g.add_human("b", aset, position=(1.2, 0.0, 0.0), heading=180.0)
    f = Fight(g, ko=True)
    f.controllers.append(FighterAI("a", "b", seed=1, think_every=3))
    f.controllers.append(FighterAI("b", "a", seed=2, think_every=3))
    kinds = set()
    for _ in range(600):
        g.step()
        for name, _ in g.humans():
            inst = g.instance(name)
            for t in inst.stack:
                cb = t.on_end
                assert Callbacks.is_data(cb), cb
                if cb is not None:
                    kinds.add(cb.kind)
    assert kinds == {f.end_kind}
    assert f.stats.strikes + f.stats.grabs > 0


def _queue_run(w, cls, aset, start_at: int, updates: int):
    """h0 plays clip 15 into the idle (its end callback logs "clip 15"); h1 gets three
    changes with 0.5 s fades at ``start_at`` (7 tasks) and a queued loop whose start, in
    the next step, finishes the newest fade early (0x00177eb8) and so defers three loops
    with end callbacks. Returns the log (with an ("update", u) mark after each flush) and
    the humans the engine's kernel stepped per update (empty for the reference)."""
    log: list = []
    w.callbacks.register("log", lambda inst, tag: log.append((tag, inst.name)))
    h0, h1 = cls(aset, "h0"), cls(aset, "h1")
    w.change(h0, w.clip(h0, 15, w.loop(h0, IDLE), on_end=Callback("log", ("clip 15",))), 0.0)
    w.change(h1, w.loop(h1, IDLE), 0.0)
    w.flush()
    stepped = []
    for u in range(1, updates + 1):
        if u == start_at:
            for i, aid in enumerate((389, IDLE, 389)):
                w.change(h1, w.loop(h1, aid, on_end=Callback("log", (f"loop {i}",))), 0.5)
            w.enqueue(h1, w.loop(h1, IDLE))
        w.step([h0, h1])
        if isinstance(w, Player):
            stepped.append(w.batch.kernel_humans)
        w.flush()
        log.append(("update", u))
    return log, stepped


def test_queued_starts_run_in_the_engine_in_step_order():
    """A queued task's human is stepped by the kernel like any other; its start comes
    first in its human's step, and what it defers is released in step order: clip 15
    (h0, ended by the kernel in update 20) before the loops h1's queued start gave back in
    the same update ("When a clip ends" L314: the list fills as each human steps); on
    the engine and the reference alike."""
    aset = demo_set()
    solo, _ = _queue_run(Player(), CharacterInstance, aset, 10_000, 25)
    end = solo.index(("clip 15", "h0"))
    assert solo[end - 1] == ("update", 19)               # released in update 20's flush
    eng, stepped = _queue_run(Player(), CharacterInstance, aset, 20, 22)
    ref, _ = _queue_run(Reference(), RefInstance, aset, 20, 22)
    assert eng == ref
    assert [x for x in eng if x[0] != "update"] == [("clip 15", "h0"), ("loop 1", "h1"), ("loop 0", "h1"),
                                                     ("loop 2", "h1")]
    assert eng.index(("clip 15", "h0")) == eng.index(("update", 20)) - 4
    assert stepped == [2] * 22                           # both humans, the queued start's too, every update


def test_check_callback_passes_plain_callbacks_as_they_are_and_refuses_the_rest():
    """The common Callback (a str kind, ints, strs, bools, bytes and None as arguments) is
    returned as it is; a float is checked finite, a tuple walked, a bad kind or args refused
    (CallbackError naming the field), however the Callback is spelled."""
    from scuffle.anim.engine.callbacks import Callback, CallbackError, check_callback

    cb = Callback("k", (1, "a", None, True, b"x"))
    assert check_callback(cb, "on_end") is cb
    assert check_callback(Callback("k", (1.5, (2, "b"))), "on_end") == Callback("k", (1.5, (2, "b")))
    for bad, field in ((Callback("", ()), "on_end.kind"), (Callback(3, ()), "on_end.kind"),
                       (Callback("k", [1]), "on_end.args"), (Callback("k", (float("nan"),)), "on_end.args[0]"),
                       (Callback("k", (1, (object(),))), "on_end.args[1][0]")):
        with pytest.raises(CallbackError, match=re.escape(field)):
            check_callback(bad, "on_end")
