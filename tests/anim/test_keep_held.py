"""An end callback the compiled flush runs itself: a kind registered with
``CallbackAction.KEEP_HELD`` (its handler, given no arguments, only sets again the held
bits the unreleased tasks on the human's stack hold: the fight rules' keep_held).

The state after every update equals that of the same kind registered without the action
(the handler called at each release) and the reference's, bit for bit; the handler is
not called for a callback with no arguments, and is for one with arguments, for a kind
registered without the action, and while a command waits to be written.
"""
from __future__ import annotations

import pytest

from scuffle.anim.base.enums import HeldFlags
from scuffle.anim.engine.callbacks import (Callback, CallbackAction, CallbackError, Callbacks, CallbackTable,
                                           EndWork, UnknownCallback)
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.reference import RefInstance, Reference
from scuffle.game.fighters.moveset import demo_set

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

IDLE = 388
CLIPS = (15, 12, 69)
LOOP_HELD = int(HeldFlags.WINDUP | HeldFlags.STILL_80)
CLIP_HELD = int(HeldFlags.WINDUP | HeldFlags.RECOVERY | HeldFlags.STILL_80)


def _run(world, cls, action, updates: int = 90, with_args: int = 2, on_args=None, keeps: bool = True):
    """Three humans, each a clip handing over to a loop that holds some of the clip's held
    bits, again and again; the end callbacks with no arguments but human ``with_args``'s
    (whose handler also calls ``on_args(world, humans)``; ``keeps`` False: a handler that
    keeps nothing). Out: the held flags and stacks of every human after each update, and
    the handler's calls."""
    calls: list[tuple] = []
    hs: list = []

    def keep(inst, *args):
        calls.append(args)
        if args and on_args is not None:
            on_args(world, hs)
        held = Player.held_on_stack(inst) if keeps else 0
        if held:
            inst.record.flags |= held

    world.callbacks.register("keep", keep, action=action)
    aset = demo_set()
    hs.extend(cls(aset, f"h{i}") for i in range(3))
    return _drive(world, hs, lambda i, rnd: CLIPS[i],
                  lambda i, rnd: Callback("keep", (i,)) if i == with_args else Callback("keep"), updates), calls


def _drive(world, hs, clip_of, end_of, updates: int) -> list:
    """Each human ``i`` a clip ``clip_of(i, round)`` handing over to the idle loop (which
    holds some of the clip's held bits) with the end callback ``end_of(i, round)``, started
    again every 30 updates (a new round); ``updates`` updates stepped and flushed. Out: the
    held flags and stacks of every human after each update."""
    def start(rnd):
        for i, h in enumerate(hs):
            world.change(h, world.clip(h, clip_of(i, rnd), world.loop(h, IDLE, held=LOOP_HELD), blend=0.1,
                                       held=CLIP_HELD, on_end=end_of(i, rnd)), 0.05)

    start(0)
    world.flush()
    trace = []
    for u in range(updates):
        if u % 30 == 29:
            start(u // 30 + 1)
        world.step(hs)
        world.flush()
        trace.append([(int(h.record.flags), [(int(t.type), t.anim_id()) for t in h.stack]) for h in hs])
    return trace


def test_the_kernels_keep_held_gives_the_handlers_state_and_calls_it_only_with_arguments():
    kernel, k_calls = _run(Player(PlayerOptions()), CharacterInstance, CallbackAction.KEEP_HELD)
    python, p_calls = _run(Player(PlayerOptions()), CharacterInstance, CallbackAction.NONE)
    ref, r_calls = _run(Reference(PlayerOptions()), RefInstance, CallbackAction.KEEP_HELD)
    assert kernel == python == ref
    # the loop's bits are set again after each clip's release (the original's release
    # clears them all): a handler that keeps nothing leaves other flags
    nothing, _ = _run(Player(PlayerOptions()), CharacterInstance, CallbackAction.NONE, keeps=False)
    assert nothing != kernel
    assert p_calls.count(()) >= 6 and r_calls == p_calls
    assert () not in k_calls and k_calls == [a for a in p_calls if a]


def test_a_command_waiting_has_the_handler_run_in_python():
    """A callback run in Python (one with arguments, human 0's) buffers a prepared command
    for human 1, whose clip ends in the same flush after it: the kernel leaves human 1's
    callback to Python, where the handler's read of the stack writes the command first,
    and the state is the handler's everywhere."""
    from scuffle.anim.base.recipedata import ClipStep, LoopStep, Place, Recipe

    made: dict = {}

    def buffer_one(world, hs):
        # one prepared command a world: its first run learns its rows (run at once), the
        # later ones are buffered rows, written when a read of the human's rows needs them
        cmd = made.get(id(world))
        if cmd is None:
            cmd = made[id(world)] = world.prepare(Recipe(Place.PUSH, (ClipStep(CLIPS[2]), LoopStep(IDLE))))
        world.run(hs[1], cmd)

    runs = [_run(w, cls, action, with_args=0, on_args=buffer_one)
            for w, cls, action in ((Player(PlayerOptions()), CharacterInstance, CallbackAction.KEEP_HELD),
                                   (Player(PlayerOptions()), CharacterInstance, CallbackAction.NONE),
                                   (Reference(PlayerOptions()), RefInstance, CallbackAction.KEEP_HELD))]
    (kernel, k_calls), (python, p_calls), (ref, _) = runs
    assert kernel == python == ref
    # human 1's callbacks after human 0's buffered command ran in Python (not the first:
    # the command's first run is not buffered); human 2's (alone in its flush) in the kernel
    assert 0 < k_calls.count(()) < p_calls.count(())


def test_a_kind_unregistered_after_its_ids_were_taken_is_unknown_again():
    """The ids' actions follow the registry: a KEEP_HELD kind unregistered is not run in
    the kernel any more, and its callbacks raise UnknownCallback as any other's."""
    p = Player()
    p.callbacks.register("keep", lambda inst, *a: None, action=CallbackAction.KEEP_HELD)
    aset = demo_set()
    h = CharacterInstance(aset, "h")
    p.change(h, p.clip(h, CLIPS[0], p.loop(h, IDLE, held=LOOP_HELD), held=CLIP_HELD, on_end=Callback("keep")), 0.0)
    p.flush()
    p.callbacks.unregister("keep")
    with pytest.raises(UnknownCallback, match="'keep'"):
        for _ in range(200):
            p.step([h])
            p.flush()


def test_the_registry_and_the_table_keep_each_ids_action():
    reg = Callbacks()
    with pytest.raises(CallbackError, match="not a CallbackAction"):
        reg.register("k", lambda inst: None, action=1)
    v0 = reg.version
    reg.register("k", print, action=CallbackAction.KEEP_HELD)
    assert reg.version == v0 + 1
    reg.register("k", print, action=CallbackAction.KEEP_HELD)     # the same: no change
    assert reg.version == v0 + 1
    assert reg.action_of(Callback("k")) == CallbackAction.KEEP_HELD
    assert reg.action_of(Callback("k", (1,))) == 0 and reg.action_of(Callback("other")) == 0
    assert reg.action_of(print) == 0
    t = CallbackTable()
    t.reclassify(reg.action_of, reg.version)
    a, b = t.take(Callback("k")), t.take(Callback("k", (2,)))
    assert t.actions[a] == 1 and t.actions[b] == 0
    saved = t.save()
    t.drop(a)
    assert t.actions[a] == 0
    c = t.take(Callback("other"))                  # the freed id taken again, by another
    assert c == a and t.actions[c] == 0
    t.load(saved, trusted=True)
    assert t.actions[a] == 1 and t.actions[b] == 0
    many = [t.take(Callback("k", (i,))) for i in range(40)] + [t.take(Callback("k"))]
    assert len(t.actions) > max(many) and list(t.actions[many[:-1]]) == [0] * 40 and t.actions[many[-1]] == 1
    reg.unregister("k")
    assert reg.version == v0 + 2 and reg.action_of(Callback("k")) == 0


def _run_noted(world, cls, noted: bool, updates: int = 120, fail: bool = False, same: bool = False):
    """Three humans whose clips end again and again (``same``: one clip, so their three
    releases fall in one flush, in the humans' order): human 1's end callback a kind with
    no action (always run in Python), humans 0's and 2's a KEEP_HELD kind's, with their
    number as argument on even rounds and none on odd ones; ``noted``: that kind has a
    ``note`` (the compiled flush keeps the bits and lists it). Every handler and note
    records into one list, so the order of the Python stops and the notes is compared;
    ``fail``: the kind's handler and note raise for human 2. Out: the held flags and
    stacks after each update, the records, the errors (phase, message) seen."""
    seen: list = []
    errors: list = []

    def plain(inst, *args):
        seen.append(("plain", args))

    def note(*args):
        if fail and args == (2,):
            raise ValueError("note of 2")
        seen.append(("keep", args))

    def keep(inst, *args):
        held = Player.held_on_stack(inst)
        if held:
            inst.record.flags |= held
        if args:
            note(*args)

    world.callbacks.register("plain", plain)
    world.callbacks.register("keep", keep, action=CallbackAction.KEEP_HELD, note=note if noted else None)
    world.on_callback_error = lambda phase, exc: errors.append((phase, str(exc)))
    aset = demo_set()
    hs = [cls(aset, f"h{i}") for i in range(3)]

    def end_of(i, rnd):
        return Callback("plain", (i,)) if i == 1 else Callback("keep", (i,)) if rnd % 2 == 0 else Callback("keep")

    return _drive(world, hs, lambda i, rnd: CLIPS[0 if same else i], end_of, updates), seen, errors


@pytest.mark.parametrize("same", [False, True])
def test_a_noted_kind_gives_the_handlers_state_and_order_without_stopping_for_it(same):
    """The compiled flush keeps the held bits of a noted kind's callback with arguments and
    lists it; its note runs in release order, before the next Python stop as the handler
    would have run (``same``: a note, a stop and a note in each flush): the state, the
    records and their order are those of the handler called at each release, and the
    reference's."""
    kernel, k_seen, _ = _run_noted(Player(PlayerOptions()), CharacterInstance, True, same=same)
    python, p_seen, _ = _run_noted(Player(PlayerOptions()), CharacterInstance, False, same=same)
    ref, r_seen, _ = _run_noted(Reference(PlayerOptions()), RefInstance, True, same=same)
    assert kernel == python == ref
    assert k_seen == p_seen == r_seen
    assert {("keep", (0,)), ("keep", (2,)), ("plain", (1,))} <= set(k_seen)
    if same:
        assert k_seen[:3] == [("keep", (0,)), ("plain", (1,)), ("keep", (2,))]


def test_the_kernel_lists_the_noted_callbacks_and_stops_for_the_others(monkeypatch):
    """The noted callbacks are run as notes, not through the handler (the kernel did not
    stop for them); the kind without a note still stops at each of its releases."""
    p = Player(PlayerOptions())
    stops: list = []
    real = Player._run_release_callbacks

    def counted(self, hrow, trow):
        stops.append(self.stores.calls.values[self.stores.tasks.m_on_end[trow]])
        return real(self, hrow, trow)

    monkeypatch.setattr(Player, "_run_release_callbacks", counted)
    _, seen, _ = _run_noted(p, CharacterInstance, True)
    assert stops and all(cb.kind == "plain" for cb in stops)
    assert len(stops) == sum(1 for s in seen if s[0] == "plain")


def test_a_notes_exception_goes_where_the_handlers_would():
    """A note that raises: on_callback_error("flush", exc), as the handler's exception in
    the same place; the flush goes on for the other humans."""
    kernel, k_seen, k_err = _run_noted(Player(PlayerOptions()), CharacterInstance, True, fail=True)
    python, p_seen, p_err = _run_noted(Player(PlayerOptions()), CharacterInstance, False, fail=True)
    assert kernel == python and k_seen == p_seen
    assert k_err == p_err and k_err and all(e == ("flush", "note of 2") for e in k_err)


def test_the_registry_notes_callbacks_with_arguments_of_a_kind_with_a_note():
    reg = Callbacks()
    with pytest.raises(CallbackError, match="note for 'k' is not callable"):
        reg.register("k", print, note=3)
    got: list = []
    v0 = reg.version
    reg.register("k", print, action=CallbackAction.KEEP_HELD, note=got.append)
    assert reg.version == v0 + 1
    reg.register("k", print, action=CallbackAction.KEEP_HELD, note=got.append)    # the same: no change
    assert reg.version == v0 + 1
    assert reg.action_of(Callback("k")) == EndWork.KEEP_HELD
    assert reg.action_of(Callback("k", (1,))) == EndWork.KEEP_HELD | EndWork.NOTE
    reg.note(Callback("k", (7,)))
    assert got == [7]
    reg.register("n", print, note=got.append)                    # a note alone: no action
    assert reg.action_of(Callback("n", (1,))) == EndWork.NOTE and reg.action_of(Callback("n")) == 0
    reg.register("k", print, action=CallbackAction.KEEP_HELD)     # the note taken away: a change
    assert reg.version == v0 + 3 and reg.action_of(Callback("k", (1,))) == 0
    with pytest.raises(UnknownCallback, match="no note"):
        reg.note(Callback("k", (1,)))
    reg.unregister("n")
    assert reg.action_of(Callback("n", (1,))) == 0


class _Interrupt(BaseException):
    """Not an Exception: run_callback does not keep it, it leaves the flush."""


def test_a_note_that_interrupts_the_flush_leaves_the_engines_books_whole():
    """A note raising a BaseException (an interrupt) leaves the flush after the kernel's
    releases are booked: the pool's count is its flags', the tables check whole, and the
    next updates run."""
    p = Player(PlayerOptions())
    fired: list = []

    def note(*args):
        fired.append(args)
        if len(fired) == 1:
            raise _Interrupt()

    p.callbacks.register("keep", lambda inst, *a: None, action=CallbackAction.KEEP_HELD, note=note)
    aset = demo_set()
    hs = [CharacterInstance(aset, f"h{i}") for i in range(3)]
    for i, h in enumerate(hs):
        p.change(h, p.clip(h, CLIPS[0], p.loop(h, IDLE, held=LOOP_HELD), held=CLIP_HELD,
                           on_end=Callback("keep", (i,))), 0.0)
    p.flush()
    with pytest.raises(_Interrupt):
        for _ in range(200):
            p.step(hs)
            p.flush()
    pool = p.pool
    assert pool.n_out == int(pool.out.sum())
    p.batch.validate()
    for _ in range(30):
        p.step(hs)
        p.flush()
    assert pool.n_out == int(pool.out.sum()) and len(fired) == 1
