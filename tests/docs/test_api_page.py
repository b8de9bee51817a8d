"""docs/api.md lists exactly the names of ``scuffle.__all__``, each once with its line,
under a heading, and states the versioning and deprecation policy."""
from __future__ import annotations

import re
from pathlib import Path

import scuffle

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"
# a name's entry: a list item that starts with the name in backticks and a colon
ENTRY = re.compile(r"^- `([A-Za-z_][A-Za-z0-9_]*)`: (\S.*)$")


def entries() -> list[tuple[str, str, str]]:
    """(name, its line, the heading it sits under) for every entry of docs/api.md."""
    out, heading = [], ""
    for line in API.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        m = ENTRY.match(line)
        if m:
            out.append((m.group(1), m.group(2), heading))
    return out


def test_the_page_lists_every_public_name():
    listed = {name for name, _, _ in entries()}
    missing = sorted(set(scuffle.__all__) - listed)
    assert not missing, f"in scuffle.__all__ but not in docs/api.md: {missing}"


def test_the_page_lists_no_name_the_package_does_not_export():
    extra = sorted({name for name, _, _ in entries()} - set(scuffle.__all__))
    assert not extra, f"in docs/api.md but not in scuffle.__all__: {extra}"


def test_each_name_once_with_a_line_under_a_heading():
    names = [name for name, _, _ in entries()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for name, line, heading in entries():
        assert len(line) >= 12 and heading, name
    assert len({h for _, _, h in entries()}) >= 6          # grouped


def test_every_name_is_importable_from_scuffle():
    for name in scuffle.__all__:
        assert getattr(scuffle, name) is not None, name


def test_the_versioning_and_deprecation_policy():
    text = API.read_text(encoding="utf-8")
    assert "## Versions and deprecations" in text
    assert "semantic versions" in text and "DeprecationWarning" in text
    assert "at least one MINOR release" in text


def test_the_exceptions_and_priority_of_are_exported():
    from scuffle.anim.data.animset import UnknownAnimName
    from scuffle.anim.playback.lookup import UnknownClip
    from scuffle.anim.engine.store import StaleHandle
    from scuffle.game.runtime.schedule import priority_of
    from scuffle.game.runtime.world import GameClosed, WorldInUse

    for obj in (UnknownAnimName, UnknownClip, StaleHandle, priority_of, GameClosed, WorldInUse):
        assert getattr(scuffle, obj.__name__) is obj
        assert obj.__name__ in scuffle.__all__
