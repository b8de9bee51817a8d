"""scuffle.testing, the pytest plugin: registered through pytest11,
light to load, its fixtures and update records, and docs/testing.md's tests run under
pytest as a user would run them."""
from __future__ import annotations

import os
import subprocess
import sys

import esper
import pytest

from docblocks import ROOT, python_blocks
from scuffle.anim.data.clip import EventType
from scuffle.game.fighters.moves import Move
from scuffle.game.runtime.schedule import SCHEDULE, priority_of
from scuffle.systems.motion import StateUpdate
from scuffle.testing import (FIGHTERS, assert_order, assert_runs_between, record_updates,
                             schedule_names)
import scuffle.testing


def test_the_plugin_is_registered_through_its_entry_point(request):
    assert request.config.pluginmanager.get_plugin("scuffle") is scuffle.testing
    assert '[project.entry-points.pytest11]\nscuffle = "scuffle.testing"' in \
        (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_the_plugin_loads_nothing_but_pytest():
    code = ("import sys, scuffle.testing\n"
            "heavy = [m for m in ('pygame', 'numba', 'esper', 'numpy', 'scuffle.game') if m in sys.modules]\n"
            "print(heavy)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_the_order_of_every_update_is_the_schedule(scuffle_fight):
    g = scuffle_fight.game
    log = record_updates(g)
    for _ in range(3):
        g.step()
    assert log.updates() == [0, 1, 2]
    for u in log.updates():
        assert_order(log.order(u))
    assert schedule_names() == [s.__name__ for s in SCHEDULE]


class _Host(esper.Processor):
    def __init__(self) -> None:
        self.runs = 0

    def process(self, *args: object) -> None:
        self.runs += 1


def test_a_host_system_is_recorded_where_its_priority_runs_it(scuffle_game):
    host = _Host()
    with scuffle_game.active():
        esper.add_processor(host, priority=priority_of(StateUpdate) - 5)
    log = record_updates(scuffle_game, extra=[_Host])
    scuffle_game.step()
    scuffle_game.step()
    assert host.runs == 2
    want = ["AnimationStep", "EventDispatch", "DeferredFlush", "StateUpdate", "_Host", "Actions",
            "PairedPlacement"]
    assert log.order(0) == want and log.order() == want
    assert_runs_between(log.order(), "_Host", after="StateUpdate", before="Actions")
    with pytest.raises(AssertionError, match="ran before Actions, expected after it"):
        assert_runs_between(log.order(), "_Host", after="Actions")
    with pytest.raises(AssertionError, match="differs at position 4"):
        assert_order(log.order())
    log.detach()
    scuffle_game.step()
    assert host.runs == 3 and log.updates() == [0, 1]
    assert "process" not in vars(host)


def test_a_host_system_not_in_the_world_is_refused(scuffle_game):
    with pytest.raises(LookupError, match="_Host"):
        record_updates(scuffle_game, extra=[_Host])


def test_an_update_not_recorded_is_refused(scuffle_game):
    log = record_updates(scuffle_game)
    with pytest.raises(KeyError, match="no update"):
        log.order()
    scuffle_game.step()
    with pytest.raises(KeyError, match="update 5 was not recorded"):
        log.order(5)


def test_the_fight_fixture_and_the_event_record(scuffle_fight):
    g = scuffle_fight.game
    assert [n for n, _ in g.humans()] == list(FIGHTERS)
    for name, (pos, heading) in FIGHTERS.items():
        assert tuple(g.body(name).position) == pos and g.body(name).heading == heading
    log = record_updates(g)
    g.step()
    assert g.record("p1").anim_id == Move.FIGHT_IDLE == g.record("p2").anim_id
    assert scuffle_fight.strike("p1", Move.JAB)
    for _ in range(20):
        g.step()
    opened = log.events(human="p1", type=EventType.HELD_OPEN)
    assert len(opened) == 1
    ev = opened[0]
    assert ev.anim_id == Move.JAB and ev.type is EventType.HELD_OPEN and 1 <= ev.update <= 20
    assert log.events(ev.update, human="p1") and not log.events(human="p2", type=EventType.HELD_OPEN)


@pytest.mark.slow
def test_the_testing_doc_runs_under_pytest(tmp_path):
    blocks = [b for b in python_blocks(ROOT / "docs" / "testing.md") if b.is_pytest]
    assert len(blocks) == 2
    for i, b in enumerate(blocks):
        (tmp_path / f"test_doc_{i}.py").write_text(b.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 passed" in r.stdout
