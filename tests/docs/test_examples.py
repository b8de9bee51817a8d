"""docs/examples: every example runs headless and says what it should.

The default run executes each program in this process (runpy; the esper worlds are
cleaned up after each test) and calls the system-order example's tests; the slow test
runs each one as a user would, ``python docs/examples/NAME.py`` in a subprocess."""
from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys

import pytest

from docblocks import ROOT

EXAMPLES = ROOT / "docs" / "examples"


def _floats(pattern: str, out: str) -> list[float]:
    m = re.search(pattern, out)
    assert m, f"{pattern!r} not in the output:\n{out}"
    return [float(g) for g in m.groups()]


def check_host_game(out: str) -> None:
    (y, stamina) = _floats(r"hero: walked to y = (-?[\d.]+) m, stamina ([\d.]+)", out)
    assert 1.5 < y < 6.0 and 0.0 < stamina < 10.0           # walked 2 s at 1.6 m/s, tired a bit
    (z,) = _floats(r"torch over the head at z = ([\d.]+) m, 90 updates", out)
    assert 1.7 < z < 2.1                                      # the head (about 1.55 m) + 0.3
    assert "after close: host world kept: True | host systems kept: True | scuffle's humans gone: True" in out


def check_two_fighters(out: str) -> None:
    assert len(re.findall(r"update \d+: p1 strikes at 0\.\d+ m", out)) >= 2
    reads = re.findall(r"p1's head z=([\d.]+), right hand z=([\d.]+), left foot z=([\d.]+)", out)
    assert len(reads) == 3
    for head, hand, foot in reads:
        assert 1.4 < float(head) < 1.7 and float(foot) < 0.3 and float(hand) > float(foot)
    (damage, hits) = _floats(r"p2 took (\d+) damage in (\d+) hits", out)
    assert hits >= 2 and damage > 0


def check_events(out: str) -> None:
    windows = re.findall(r"update (\d+): entity \d+'s clip 11 opens its hit window \(frame \d+\)", out)
    hits = re.findall(r"update (\d+): p1 hits p2 for 5", out)
    assert len(hits) == 2 and windows == hits                 # the damage lands as the window opens
    (ko,) = _floats(r"update (\d+): K\.O\.! p2 is down, p1 wins", out)
    assert ko == float(hits[-1])
    assert "'HELD_OPEN': 2" in out and "p2 health 0, state down" in out
    assert "throw: False (not_holding)" in out                  # a refused command says why


def check_scenario(out: str) -> None:
    assert "180 trace records over 90 updates" in out
    (y,) = _floats(r"p1 ends at y = (-?[\d.]+) m playing 358", out)
    assert -1.0 < y < 0.5                                     # walked toward p2 from -1.0
    assert re.search(r"hits landed at updates \[\d+\]", out)
    assert "fight log: ['strike', 'hit']" in out
    assert "refused: typo.toml:16: humans[1].heading:" in out


def check_crowd(out: str) -> None:
    assert "400 humans, 60 updates; batch bone_pos (3, 34, 400)" in out
    (lo, hi) = _floats(r"head heights ([\d.]+)-([\d.]+) m", out)
    assert 1.4 < lo <= hi < 1.7
    (w_lo, w_hi, idle) = _floats(r"walkers covered ([\d.]+)-([\d.]+) m; idlers ([\d.]+) m", out)
    assert 1.0 < w_lo <= w_hi and idle == 0.0
    assert "anim ids playing: [358, 388, 408]" in out        # the fight idle, the idle, the walk


def check_system_order(out: str) -> None:
    assert re.search(r"\b2 passed\b", out)


CHECKS = {
    "host_game": check_host_game,
    "two_fighters": check_two_fighters,
    "events": check_events,
    "scenario": check_scenario,
    "crowd": check_crowd,
    "system_order": check_system_order,
}


def test_every_example_is_checked_and_the_readme_names_the_folder():
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == sorted(CHECKS)
    assert "docs/examples/" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", [n for n in CHECKS if n != "system_order"])
def test_the_example_runs_in_process(name, capsys):
    runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    CHECKS[name](capsys.readouterr().out)


def test_the_system_order_example_passes(scuffle_new_game):
    mod = runpy.run_path(str(EXAMPLES / "system_order.py"), run_name="example")
    mod["test_the_host_systems_run_where_they_were_put"](scuffle_new_game())
    mod["test_the_schedule_is_one_tuple_in_the_original_order"]()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CHECKS))
def test_the_example_runs_as_a_program(name, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update(SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    r = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    CHECKS[name](r.stdout)
    assert "pygame" not in r.stderr.lower()
    assert "PytestAssertRewriteWarning" not in r.stdout + r.stderr      # system_order.py runs pytest apart
