"""What users read carries no development history: no issue numbers, commit hashes or
dated runs in the README, docs/, the package's source (docstrings, comments, CLI help and
tool output all live there), the CI script or pyproject.toml. The tests keep the same rule
(their docstrings and comments name the capability, the contract or the spec's section),
all but this file, whose examples carry the patterns on purpose. History belongs in
CHANGELOG.md, which is not checked. A failure names every offending file:line."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
PACKAGES = ("anim", "components", "systems", "game", "demo", "scuffle")

# (what it is, the pattern)
HISTORY = (
    ("an issue number", re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)),
    ("an issue number", re.compile(r"\bissue-\d+", re.IGNORECASE)),
    # not a quoted literal: a test may look for "#36" (an update number) in the demo's text
    ("a ticket reference", re.compile(r"(?<![\w&/\"'])#\d{1,5}\b")),
    ("a commit hash", re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{40}(?![0-9A-Za-z_])")),
    ("a commit hash", re.compile(r"\bcommit\s+[0-9a-f]{7,40}\b", re.IGNORECASE)),
    # a short hash: 7-12 hex digits with a letter and a digit, not an address (0x...) nor a
    # binary literal (0b...)
    ("a commit hash", re.compile(r"(?<![0-9A-Za-z_.])(?!0b[01]+\b)(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}"
                                 r"(?![0-9A-Za-z_])")),
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


def suite_files() -> list[Path]:
    """Every .py under tests/ (tests, helpers, conftest.py files, data written as Python)
    but this file, whose examples must carry the patterns they show."""
    return sorted(p for p in (ROOT / "tests").rglob("*.py")
                  if "__pycache__" not in p.parts and p.resolve() != HERE)


def history_in(text: str, name: str) -> list[str]:
    """Every line of ``text`` that carries development history, as ``name:line: what: text``."""
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        for what, pattern in HISTORY:
            if pattern.search(line):
                found.append(f"{name}:{i}: {what}: {line.strip()[:120]}")
                break
    return found


def _names(files: list[Path]) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in files}


def test_the_checked_files_are_the_users():
    """Two lists under the same rule: what users read (never a test) and the tests (every
    .py under tests/ but this one file)."""
    names = _names(user_files())
    assert {"README.md", "docs/architecture.md", "game/tools/bench.py", "scuffle/__init__.py",
            "demo/app.py", "anim/engine/kernels.py"} <= names
    assert "CHANGELOG.md" not in names and not any(n.startswith("tests/") for n in names)
    suite = _names(suite_files())
    assert {"tests/conftest.py", "tests/anim/test_batch.py", "tests/hardening/__init__.py",
            "tests/hardening/fuzz_chunks.py", "tests/docs/test_code_blocks.py"} <= suite
    assert all(n.startswith("tests/") for n in suite) and not names & suite
    every_test_py = _names([p for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts])
    assert every_test_py - suite == {"tests/docs/test_history.py"}


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
    ('assert "REWIND -0.8 s" in left and "#36" in left', False),
    ("assert clip.bones == [1, 5] and clip.mask == 0b100010", False),
    ("merged at 0b1c2d3e", True),
])
def test_the_patterns(line, bad):
    assert bool(history_in(line, "x")) is bad, line


def _history_of(files: list[Path]) -> list[str]:
    found = []
    for p in files:
        found += history_in(p.read_text(encoding="utf-8", errors="replace"), p.relative_to(ROOT).as_posix())
    return found


def test_no_development_history_in_what_users_read():
    found = _history_of(user_files())
    assert not found, ("development history belongs in CHANGELOG.md; say what and why instead:\n"
                       + "\n".join(found))


def test_no_development_history_in_the_tests():
    found = _history_of(suite_files())
    assert not found, ("development history belongs in CHANGELOG.md; a test's docstring or comment names "
                       "the capability, the contract or the spec's section instead:\n" + "\n".join(found))
