"""docs/original-bugs.md stays true: every entry has its evidence, default, option and
tests, every test it names exists, and every option it names is a PlayerOptions field
whose default is the original's.
"""
from __future__ import annotations

import ast
import dataclasses
import re

import pytest

from scuffle.anim.playback.player import PlayerOptions

from .support import REPO
from sources import nodes

DOC = REPO / "docs" / "original-bugs.md"


def _entries() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^## (\d+\. .+)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def _test_names() -> set[str]:
    names = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        names.add(path.stem)                                     # a file the catalogue names
        for node in nodes(path):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                names.add(node.name)
            elif isinstance(node, ast.Assign):                   # fuzz_pair's module-level tests
                for t in node.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id.startswith("test_"):
                            names.add(n.id)
    return names


def test_every_entry_has_evidence_default_option_and_tests():
    entries = _entries()
    assert len(entries) >= 13
    for title, body in entries:
        for part in ("**Evidence.**", "**Default", "**Option.**", "**Tests.**"):
            assert part in body, (title, part)
        assert "Spec " in body or "spec" in body, title


@pytest.mark.slow
def test_every_test_the_catalogue_names_exists():
    names = _test_names()
    cited = set(re.findall(r"\b(test_[a-z0-9_]+)", DOC.read_text(encoding="utf-8")))
    missing = sorted(n for n in cited if n not in names)
    assert missing == [], missing


def test_every_option_named_is_a_player_option_whose_default_is_the_originals():
    fields = {f.name: f for f in dataclasses.fields(PlayerOptions)}
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"PlayerOptions\.(\w+)", text))
    assert {"end_zero_overshoot", "early_finish_above", "cleanup_above"} <= named
    assert named <= set(fields)
    defaults = PlayerOptions()
    assert (defaults.end_zero_overshoot, defaults.early_finish_above, defaults.cleanup_above) == (False, 6, 12)
