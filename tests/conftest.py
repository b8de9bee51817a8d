"""Fixtures for every test: the compiled kernels are loaded (or compiled) once per test
process before any test runs, and esper's worlds are cleaned up after each test."""
from __future__ import annotations

import esper
import pytest


@pytest.fixture(autouse=True)
def esper_clean():
    """Restore esper's current world and delete every world a test created."""
    before = set(esper.list_worlds())
    current = esper.current_world
    yield
    if current not in esper.list_worlds():
        current = "default"
    esper.switch_world(current)
    for w in set(esper.list_worlds()) - before:
        if w != current:
            esper.delete_world(w)


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """Compile (or load from numba's cache) the engine's kernels once, up front: no test
    then pays for it, and none sees the command line's first-run progress line."""
    from scuffle.anim.warmup import compile_kernels
    compile_kernels()
