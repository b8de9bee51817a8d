"""A typed package (issue 11): scuffle ships py.typed, and the public face
(scuffle/__init__.py and what it exports) type-checks with plain mypy.

mypy reads the package as it is installed: a scuffle/ folder holding the face and the
card's folders under their package names (the wheel's layout), built here from links."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _installed_layout(tmp: Path) -> Path:
    pkg = tmp / "scuffle"
    pkg.mkdir()
    for f in (ROOT / "scuffle").iterdir():
        if f.suffix in (".py", ".typed"):
            shutil.copy(f, pkg / f.name)
    for folder in ("anim", "components", "systems", "game", "demo"):
        os.symlink(ROOT / folder, pkg / folder, target_is_directory=True)
    return pkg


def test_the_package_ships_py_typed():
    assert (ROOT / "scuffle" / "py.typed").exists()
    assert 'scuffle = ["py.typed"]' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_public_face_type_checks_with_mypy(tmp_path):
    pytest.importorskip("mypy")
    _installed_layout(tmp_path)
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / ".mypy"),
                        "--no-error-summary", "scuffle/__init__.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
