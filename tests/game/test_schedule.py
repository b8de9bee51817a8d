"""The systems' per-update order (game/schedule.py) and what it makes observable.

Spec: "When a clip ends" (Humans_Update: every animation step, the deferred flush, then
the state updates and the actions), "Data" (L86: Anim_FireFrameEvents handles each
event in place during the step, so before the flush), "Root motion" (applied by the
state update before the move), "Paired tasks" (the bodies placed by the combat code).
"""
from __future__ import annotations

import math

import esper
import numpy as np
import pytest

from scuffle.anim.data.clip import make_event
from scuffle.anim.playback.player import Player
from scuffle.game.runtime import schedule
from scuffle.game.runtime.schedule import SCHEDULE, install, priority_of
from scuffle.systems.actions import Actions
from scuffle.systems.animation import AnimationStep
from scuffle.systems.context import SimContext
from scuffle.systems.events import EventDispatch
from scuffle.systems.flush import DeferredFlush
from scuffle.systems.motion import StateUpdate
from scuffle.systems.placement import PairedPlacement

from gamehelp import IDLE, clip, make_set, still

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

NAMES = ["animation", "events", "flush", "state", "actions", "placement"]


def test_schedule_is_the_originals_order():
    assert SCHEDULE == (AnimationStep, EventDispatch, DeferredFlush, StateUpdate, Actions, PairedPlacement)


def test_install_gives_explicit_decreasing_priorities(esper_clean):
    esper.switch_world("test-sched-prio")
    procs = install(SimContext(Player()))
    assert [type(p) for p in procs] == list(SCHEDULE)
    prios = [p.priority for p in procs]
    assert prios == [priority_of(s) for s in SCHEDULE]
    assert all(a > b for a, b in zip(prios, prios[1:]))
    assert min(prios) > 0            # above a host's default-priority (0) processors


def test_probes_see_the_systems_in_order_every_update(new_game):
    g = new_game()
    g.add_human("a", make_set({IDLE: still()}))
    g.change("a", g.player.loop(g.instance("a"), IDLE))
    log = []
    g.ctx.probe.append(lambda ctx, name: log.append((ctx.update, name)))
    for _ in range(4):
        g.step()
    assert log == [(u, n) for u in range(4) for n in NAMES]


class _HostSystem(esper.Processor):
    """A host's own processor, added with esper's default priority."""

    def __init__(self, log):
        self.log = log

    def process(self):
        self.log.append("host")


def test_priorities_survive_add_processor_and_insertion_order(esper_clean):
    # A host world that already has a processor of priority 0: install's explicit
    # priorities put the six systems before it, whatever the insertion order.
    esper.switch_world("test-sched-host")
    log = []
    esper.add_processor(_HostSystem(log))
    ctx = SimContext(Player())
    ctx.probe.append(lambda c, name: log.append(name))
    install(ctx)
    esper.process()
    esper.process()
    assert log == (NAMES + ["host"]) * 2

    # Added in reverse with the schedule's priorities: still the schedule's order.
    esper.switch_world("test-sched-reverse")
    log.clear()
    ctx2 = SimContext(Player())
    ctx2.probe.append(lambda c, name: log.append(name))
    for system in reversed(SCHEDULE):
        esper.add_processor(system(ctx2), priority=priority_of(system))
    esper.process()
    assert log == NAMES


# ---------------------------------------------------------------- observable consequences

def _hand_over_game(new_game, frames=12, held=0x3):
    """A human playing [1, IDLE] with held bits and an end callback, logging what each phase sees."""
    g = new_game()
    g.add_human("a", make_set({1: clip(frames), IDLE: still()}))
    inst = g.instance("a")
    log = []
    task = g.player.chain(inst, [1, IDLE], held=held,
                          on_end=lambda i: log.append(("end", g.ctx.update)))
    g.change("a", task)
    rec = g.record("a")

    def probe(ctx, name):
        if name == "animation":
            top = [t for t in inst.stack if t.type != 9]
            log.append(("stepped", ctx.update, top[0].anim_id() if top else -1, rec.flags))

    def action(ctx):
        log.append(("action", ctx.update, rec.anim_id, rec.flags))

    g.ctx.probe.append(probe)
    g.ctx.actions.append(action)
    return g, log


def test_actions_see_the_move_over_on_the_end_update(new_game):
    g, log = _hand_over_game(new_game)
    for _ in range(25):
        g.step()
    # The update whose animation step handed over to the idle.
    hand = next(e[1] for e in log if e[0] == "stepped" and e[2] == IDLE)
    assert hand > 1
    at = [e for e in log if len(e) > 1 and e[1] == hand]
    # The step left the held bits on; the flush cleared them and ran the callback,
    # all before the actions of the same update, which see the next clip's id.
    assert at[0] == ("stepped", hand, IDLE, 0x3)
    assert at[1] == ("end", hand)
    assert at[2] == ("action", hand, IDLE, 0)
    # One update earlier the move was still on.
    before = [e for e in log if e[0] == "action" and e[1] == hand - 1]
    assert before == [("action", hand - 1, 1, 0x3)]
    assert [e for e in log if e[0] == "end"] == [("end", hand)]


def test_events_are_dispatched_before_the_actions(new_game):
    g = new_game()
    c = clip(30, events=[make_event(3, 11, word=77)])
    g.add_human("a", make_set({1: c}, {1: 0x1000}))
    g.change("a", g.player.loop(g.instance("a"), 1))
    log = []
    g.ctx.on(11, lambda ctx, ent, fe: log.append(("event", ctx.update, fe.event.word)))
    g.ctx.actions.append(lambda ctx: log.append(("action", ctx.update)))
    for _ in range(6):
        g.step()
    i = next(k for k, e in enumerate(log) if e[0] == "event")
    u = log[i][1]
    assert u == 2              # pushed before update 0: update k reaches frame k + 1 at rate 1
    assert log[i] == ("event", 2, 77)
    assert log[i + 1] == ("action", 2)
    assert ("action", u) not in log[:i]


def test_root_motion_is_applied_before_the_actions(new_game):
    g = new_game()
    c = clip(30, velocity=[(0, (0.0, 1.5, 0.0))])
    g.add_human("a", make_set({1: c}, {1: 0x1000}))
    g.change("a", g.player.loop(g.instance("a"), 1, flags=0))
    body = g.body("a")
    seen = []
    g.ctx.actions.append(lambda ctx: seen.append(body.position.copy()))
    after = []
    for _ in range(5):
        g.step()
        after.append(body.position.copy())
    # What the action saw is where the body ended the update: it had already moved.
    np.testing.assert_array_equal(np.array(seen), np.array(after))
    assert after[-1][1] > after[-2][1] > after[-3][1] > 0


def test_paired_placement_runs_after_the_actions(new_game):
    g = new_game()
    s = make_set({IDLE: still()})
    a = g.add_human("a", s, position=(1.0, 2.0, 0.0), heading=30.0)
    g.add_human("b", s, position=(9.0, 9.0, 0.0))
    bb = g.body("b")
    offset = np.array([0.5, 1.0, 0.0])

    def grab(ctx):
        if ctx.update == 3:
            bb.attachment = a
            bb.attach_offset = offset.copy()
            bb.attach_heading = 180.0

    g.ctx.actions.append(grab)
    for _ in range(3):
        g.step()
    np.testing.assert_array_equal(bb.position, [9.0, 9.0, 0.0])
    g.step()                                           # update 3: attached in the actions
    h = math.radians(30.0)
    expect = np.array([1.0, 2.0, 0.0]) + np.array([0.5 * math.cos(h) - 1.0 * math.sin(h),
                                                   0.5 * math.sin(h) + 1.0 * math.cos(h), 0.0])
    np.testing.assert_allclose(bb.position, expect, atol=1e-12)
    assert bb.heading == pytest.approx(-150.0)


def test_schedule_module_names_its_reasons():
    doc = schedule.__doc__
    for phrase in ("When a clip ends", "Root motion", "Paired tasks", "add_processor"):
        assert phrase in doc


def test_a_handler_sees_another_humans_held_flags_on_its_end_update(new_game):
    """A handler of a's event on the update b's clip ends sees b
    stepped and not yet released: b's held flags still set and record +0x20 still naming
    the ending clip; the actions of the same update see both cleared."""
    g = new_game()
    every = clip(30, events=[make_event(f, 11, word=f) for f in range(1, 30)])
    g.add_human("a", make_set({5: every}, {5: 0x1000}, name="sa"))
    g.add_human("b", make_set({1: clip(12), IDLE: still()}, name="sb"))
    g.change("a", g.player.loop(g.instance("a"), 5))
    g.change("b", g.player.chain(g.instance("b"), [1, IDLE], held=0x3))
    rec_b = g.record("b")
    ib = g.instance("b")
    seen, acted, stepped_to_idle = {}, {}, []
    g.ctx.on(11, lambda ctx, ent, fe: seen.setdefault(ctx.update, (rec_b.flags, rec_b.anim_id)))
    g.ctx.actions.append(lambda ctx: acted.__setitem__(ctx.update, (rec_b.flags, rec_b.anim_id)))
    g.ctx.probe.append(lambda ctx, name: name == "animation" and not stepped_to_idle and any(
        t.anim_id() == IDLE for t in ib.stack) and stepped_to_idle.append(ctx.update))
    for _ in range(25):
        g.step()
    end = stepped_to_idle[0]
    assert end > 2
    assert seen[end] == (0x3, 1)                  # the handler: b stepped, nothing released
    assert acted[end] == (0, IDLE)                # the actions: after the flush
    assert seen[end - 1] == (0x3, 1) and seen[end + 1] == (0, IDLE)


def test_handlers_run_in_human_order_then_firing_order(new_game):
    g = new_game()
    two = clip(30, events=[make_event(2, 11, word=1), make_event(2, 11, word=2)])
    s = make_set({5: two}, {5: 0x1000})
    for name in ("a", "b"):
        g.add_human(name, s)
        g.change(name, g.player.loop(g.instance(name), 5))
    log = []
    g.ctx.on(11, lambda ctx, ent, fe: log.append((ent, fe.event.word)))
    for _ in range(4):
        g.step()
    ea, eb = g.entity("a"), g.entity("b")
    assert log == [(ea, 1), (ea, 2), (eb, 1), (eb, 2)]
