"""Fixtures for every test: the compiled kernels are loaded (or compiled) once per test
process before any test runs, and esper's worlds are cleaned up after each test.

The shared fixtures live in scuffle's own pytest plugin (``scuffle.testing``, loaded
through its ``pytest11`` entry point): ``scuffle_worlds`` (used here by ``esper_clean``),
``scuffle_new_game``, ``scuffle_game``, ``scuffle_fight`` and ``record_updates``."""
from __future__ import annotations

import os
import sys

import pytest

# No test process, nor any process a test starts, compiles the rest of the kernels in the
# background (anim.engine.coldstart.compile_rest): a cold cache in a test's subprocess would leave
# a low-priority compile running past the test; the tests of that compile ask for it.
os.environ.setdefault("SCUFFLE_COMPILE_REST", "0")

# The test modules' rewritten bytecode (pytest's assertion rewriting) and the package's
# bytecode are kept in __pycache__ even where the caller's environment sets
# PYTHONDONTWRITEBYTECODE: otherwise every run re-parses, rewrites and compiles every test
# module in each pytest-xdist worker (about 6 s of CPU a worker), and every process a test
# starts compiles the package's sources again. This conftest loads before the test modules
# are collected and before the workers start, so both the workers (whose environment
# comes from this process) and the tests' children keep their bytecode.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


# The long tests start first: pytest-xdist's worksteal hands each worker a half of the list
# and lets an idle worker take the unstarted tail of the other's, so a long test left near
# the end would run alone while the other core idles. Slow and fuzz tests (the cold
# compiles, subprocess runs, the soak, mypy, the long properties) go first, in their
# collection order (a module's tests stay together, sharing its fixtures).
LONG_MARKS = ("slow", "fuzz")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Move the tests marked slow or fuzz to the front (a stable sort: each group keeps
    its collection order)."""
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in LONG_MARKS))


@pytest.fixture(autouse=True)
def esper_clean(scuffle_worlds):
    """Restore esper's current world and delete every world a test created
    (``scuffle.testing``'s ``scuffle_worlds``, for every test)."""
    yield


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """Compile (or load from numba's cache) the engine's kernels once, up front: no test
    then pays for it, and none sees the command line's first-run progress line."""
    from scuffle.anim.playback.warmup import compile_kernels
    compile_kernels()
