"""Fixtures for every test: esper's worlds are cleaned up after each one."""
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
