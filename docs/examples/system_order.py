"""A system-order test: the host's own systems run where the host put them among
scuffle's six, every update, with scuffle's own order kept (SCHEDULE).

A pytest test file using scuffle's pytest plugin (``scuffle.testing``: the
``scuffle_game`` fixture, ``record_updates``, ``assert_order``, ``assert_runs_between``;
docs/testing.md). Run it with ``pytest docs/examples/system_order.py``, or as a program:
``python docs/examples/system_order.py`` runs pytest on itself.
"""
from __future__ import annotations

import sys

import esper
import pytest

from scuffle import SCHEDULE, Game, demo_set, priority_of
from scuffle.game.runtime.schedule import PRIORITY_STEP
from scuffle.systems.actions import Actions
from scuffle.systems.motion import StateUpdate
from scuffle.testing import assert_order, assert_runs_between, record_updates, schedule_names


class Steering(esper.Processor):
    """The host's steering: after the state update moved the bodies, before the actions."""

    def process(self, *args: object) -> None:
        pass


class Camera(esper.Processor):
    """The host's camera: after everything (esper's default priority, 0)."""

    def process(self, *args: object) -> None:
        pass


def add_host_systems(game: Game) -> None:
    with game.active():                              # the Game's esper world
        esper.add_processor(Steering(), priority=priority_of(StateUpdate) - PRIORITY_STEP // 2)
        esper.add_processor(Camera())


def test_the_host_systems_run_where_they_were_put(scuffle_game: Game) -> None:
    scuffle_game.add_human("a", demo_set())
    add_host_systems(scuffle_game)
    log = record_updates(scuffle_game, extra=[Steering, Camera])
    for _ in range(3):
        scuffle_game.step()
    for u in log.updates():
        order = log.order(u)
        assert_runs_between(order, "Steering", after="StateUpdate", before=Actions.__name__)
        assert order[-1] == "Camera"
        assert_order([n for n in order if n not in ("Steering", "Camera")])     # scuffle's six
    assert log.updates() == [0, 1, 2]


def test_the_schedule_is_one_tuple_in_the_original_order() -> None:
    assert schedule_names() == ["AnimationStep", "EventDispatch", "DeferredFlush", "StateUpdate",
                                "Actions", "PairedPlacement"]
    assert [priority_of(s) for s in SCHEDULE] == sorted((priority_of(s) for s in SCHEDULE), reverse=True)


if __name__ == "__main__":
    # pytest in a process of its own: this one has imported scuffle already, too late for
    # pytest to rewrite the asserts of its plugin (it would warn PytestAssertRewriteWarning).
    import subprocess
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", __file__, "-q", "-o", "addopts=",
                              "-p", "no:cacheprovider"]))
