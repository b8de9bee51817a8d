"""The README is a front door: short, for users, with the set-up commands CI and the hooks
look for, and links that lead somewhere. Its code blocks run in test_code_blocks.py."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

DEMO = "pip install -e '.[demo]' && scuffle demo"
TESTS = "pip install -e '.[test]' && pytest"


def test_the_readme_reads_in_five_minutes():
    lines = README.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: depth goes to docs/"
    assert len(README.split()) <= 2000


def test_the_set_up_commands_are_there_verbatim():
    assert "python -m venv .venv" in README
    assert DEMO in README and TESTS in README
    # .ci/run installs and tests with the README's command
    assert TESTS in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_first_screen_says_what_scuffle_is_and_points_at_nothing_missing():
    first = "\n".join(README.splitlines()[:15])
    assert "scuffle" in first and "embed" in first
    for path in re.findall(r"`([\w./-]+\.(?:txt|md|py|png|gif))`", first):
        assert (ROOT / path).exists(), path
    assert "shared/spec" not in README


def test_every_file_the_readme_names_exists():
    named = set(re.findall(r"\b((?:docs/[\w./-]*\w)|LICENSE|CHANGELOG\.md)", README))
    assert {"docs/api.md", "docs/performance.md", "docs/testing.md", "LICENSE", "CHANGELOG.md"} <= named
    missing = sorted(n for n in named if not (ROOT / n).exists())
    assert not missing, f"README.md names files that do not exist: {missing}"


def test_the_demo_keys_match_the_demo():
    from scuffle.demo.render import HELP_LINES

    table = {m.group(1) for m in re.finditer(r"^\| ([^|]+?) \| [^|]+ \|$", README, re.MULTILINE)}
    for key, _ in HELP_LINES:
        parts = {p.strip() for p in key.split("/")} if key not in table else {key}
        assert key in table or any(p in t for t in table for p in parts), f"the demo's key {key!r} is not in README"
