"""Fixtures for the tools' tests: the worked example's trace, esper clean-up.

Helpers (subprocess runners, the worked example's clips and scenario) are in toolhelp.py;
this file never imports pygame.
"""
from __future__ import annotations

import pytest

from toolhelp import run_module, walk_scenario


@pytest.fixture(scope="session")
def walk_trace(tmp_path_factory) -> Path:
    """The worked example's trace, written by ``scuffle run``."""
    d = tmp_path_factory.mktemp("walk")
    sc = walk_scenario(d / "walk.toml")
    r = run_module("scuffle", "run", sc, "--trace", d / "walk.jsonl")
    assert r.returncode == 0, r.stderr
    return d / "walk.jsonl"


