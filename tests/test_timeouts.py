"""The test run's guard against a hang (pyproject.toml: pytest-timeout, signal method): a
test that hangs fails on its own, named, and the run goes on to the next test in the
same pytest-xdist worker, with no worker replaced."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HANGS = '''
import threading, time

def test_a_hanging_wait():
    threading.Event().wait()          # never set: only the timeout ends it

def test_a_busy_loop():
    while True:
        time.sleep(0.01)

def test_the_next_one_runs():
    assert True
'''


def test_the_guard_is_configured():
    """pytest-timeout is a test dependency, set to fail a test (not kill its worker)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(d.startswith("pytest-timeout") for d in project["project"]["optional-dependencies"]["test"])
    ini = project["tool"]["pytest"]["ini_options"]
    assert ini["timeout_method"] == "signal" and 60 <= ini["timeout"] < ini["faulthandler_timeout"]


@pytest.mark.slow
def test_a_hanging_test_fails_named_and_the_run_goes_on(tmp_path):
    """Under the project's own settings (two workers), with the timeout cut to 2 s: the two
    hanging tests fail with pytest-timeout's message and the third passes."""
    pytest.importorskip("pytest_timeout")
    (tmp_path / "test_hangs.py").write_text(HANGS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir",
                        str(tmp_path), "-o", "timeout=2", "-p", "no:cacheprovider", "-m", "", "-rf",
                        str(tmp_path / "test_hangs.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "2 failed, 1 passed" in out, out
    assert out.count("Timeout (>2.0s)") >= 2 and "test_a_hanging_wait" in out and "test_a_busy_loop" in out, out
    assert "crashed" not in out and "replacing" not in out, out
