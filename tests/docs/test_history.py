"""What users read carries no development history: no issue numbers, commit hashes or
dated runs in the README, docs/, the package's source (docstrings, comments, CLI help and
tool output all live there), the CI script or pyproject.toml. History belongs in
CHANGELOG.md, which is not checked. A failure names every offending file:line."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("anim", "components", "systems", "game", "demo", "scuffle")

# (what it is, the pattern)
HISTORY = (
    ("an issue number", re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)),
    ("an issue number", re.compile(r"\bissue-\d+", re.IGNORECASE)),
    ("a ticket reference", re.compile(r"(?<![\w&/])#\d{1,5}\b")),
    ("a commit hash", re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{40}(?![0-9A-Za-z_])")),
    ("a commit hash", re.compile(r"\bcommit\s+[0-9a-f]{7,40}\b", re.IGNORECASE)),
    # a short hash: 7-12 hex digits with a letter and a digit, not an address (0x...)
    ("a commit hash", re.compile(r"(?<![0-9A-Za-z_.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}(?![0-9A-Za-z_])")),
    ("a dated run", re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")),
    ("a timing against an older tree", re.compile(r"\b(A/B|farm-bench|the tree before)\b")),
)


def user_files() -> list[Path]:
    """README.md, docs/ (text and examples), every .py of the package's folders, the CI
    script and pyproject.toml."""
    files = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / ".ci" / "run"]
    files += sorted(p for p in (ROOT / "docs").rglob("*") if p.suffix in (".md", ".py", ".toml", ".txt"))
    for pkg in PACKAGES:
        files += sorted((ROOT / pkg).rglob("*.py"))
    return [p for p in files if p.is_file() and "__pycache__" not in p.parts]


def history_in(text: str, name: str) -> list[str]:
    """Every line of ``text`` that carries development history, as ``name:line: what: text``."""
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        for what, pattern in HISTORY:
            if pattern.search(line):
                found.append(f"{name}:{i}: {what}: {line.strip()[:120]}")
                break
    return found


def test_the_checked_files_are_the_users():
    names = {p.relative_to(ROOT).as_posix() for p in user_files()}
    assert {"README.md", "docs/architecture.md", "game/tools/bench.py", "scuffle/__init__.py",
            "demo/app.py", "anim/engine/kernels.py"} <= names
    assert "CHANGELOG.md" not in names and not any(n.startswith("tests/") for n in names)


@pytest.mark.parametrize("line, bad", [
    ("the goals (issues 19 and 20; set for the realistic crowd)", True),
    ("light: the issue-14 representative stack", True),
    ("a map of the code (issue 19, item 8)", True),
    ("Fixed in #263.", True),
    ("merged at commit 0f8755a", True),
    ("see 0f8755a1b2c3d4e5f60718293a4b5c6d7e8f9012", True),
    ("the session's start (5101340) against fe7c979", True),
    ("Original: 0x0023f238 and 0x005fd040", False),
    ("medians of 3 runs on 2026-12-02", True),
    ("three A/B sets of 3 runs", True),
    ("Original: 0x001044a0 AnimCursor_Advance", False),
    ("range flag 0x400; bits &0x40, color #ff00aa", False),
    ("a game issues the same few commands over and over", False),
    ("no issue with 34 bones", False),
])
def test_the_patterns(line, bad):
    assert bool(history_in(line, "x")) is bad, line


def test_no_development_history_in_what_users_read():
    found = []
    for p in user_files():
        found += history_in(p.read_text(encoding="utf-8", errors="replace"), p.relative_to(ROOT).as_posix())
    assert not found, ("development history belongs in CHANGELOG.md; say what and why instead:\n"
                       + "\n".join(found))
