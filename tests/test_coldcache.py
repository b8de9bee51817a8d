"""The suite's shared cold products (tests/coldcache.py): made once a session, or made
ahead outside pytest (.ci/run) and read from there."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import coldcache


def test_a_product_made_ahead_is_read_not_made_again(tmp_path, tmp_path_factory, monkeypatch):
    """``make`` writes a product where ``shared`` reads it under SCUFFLE_TEST_SHARED; the
    maker is not called again, and a product made ahead that failed fails every test that
    asks, with its reason."""
    calls: list[Path] = []

    def maker(folder: Path) -> dict:
        calls.append(folder)
        (folder / "made").write_text("x")
        return {"n": len(calls)}

    coldcache.make(tmp_path, "probe", maker)
    assert json.loads((tmp_path / "shared-probe.json").read_text())["n"] == 1
    monkeypatch.setenv(coldcache.MADE_AHEAD, str(tmp_path))
    got = coldcache.shared(tmp_path_factory, "probe", maker)
    assert got == {"n": 1, "folder": str(tmp_path / "shared-probe")} and len(calls) == 1
    assert (Path(got["folder"]) / "made").read_text() == "x"

    def broken(folder: Path) -> dict:
        raise OSError("no room")

    coldcache.make(tmp_path, "broken", broken)
    with pytest.raises(RuntimeError, match="'broken' failed: OSError: no room"):
        coldcache.shared(tmp_path_factory, "broken", maker)
    # a product not made ahead is made in the session, once
    made = coldcache.shared(tmp_path_factory, "other", maker)
    assert made["n"] == 2 and coldcache.shared(tmp_path_factory, "other", maker) == made


def test_the_command_line_refuses_what_it_cannot_make(tmp_path):
    """``python tests/coldcache.py FOLDER NAME... [--install]``: unknown names, no name, or
    an install without the warm-up to install are refused with the usage and status 2,
    and nothing is made."""
    script = Path(coldcache.__file__)
    for args in ([], ["nothing-such"], ["cold-first-step", "--install"]):
        r = subprocess.run([sys.executable, str(script), str(tmp_path / "out"), *args], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith("usage: coldcache.py FOLDER"), (args, r.stderr)
    assert not (tmp_path / "out").exists()
