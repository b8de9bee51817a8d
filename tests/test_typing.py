"""A typed package: scuffle ships py.typed, and the public face
(scuffle/__init__.py and what it exports) type-checks with plain mypy.

mypy reads the package as it is installed: a scuffle/ folder holding the face and the
card's folders under their package names (the wheel's layout), built here from links."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coldcache import shared

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


@pytest.mark.slow
def test_the_typed_api_modules_pass_strict(tmp_path):
    """The face, Game (game/runtime/world.py) and the pytest plugin pass mypy --strict
    (the modules they import are read, not reported: --follow-imports=silent)."""
    pytest.importorskip("mypy")
    _installed_layout(tmp_path)
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir",
                        str(tmp_path / ".mypy"), "--no-error-summary", "scuffle/__init__.py",
                        "scuffle/testing.py", "scuffle/game/runtime/world.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


# ---------------------------------------------------------------- a host's mypy --strict

GOOD_HOST = '''\
import numpy as np

from scuffle import Body, BoneArray, Fight, Game, Vec3, demo_set


def main() -> float:
    start: Vec3 = (0.0, 1.0, 0.0)
    with Game() as g:
        s = demo_set()
        g.add_human("a", s, position=start, heading=90.0)
        g.add_human("b", s, position=np.zeros(3), health=50.0)
        g.add_human("c", s, position=[1, 2, 0])
        fight = Fight(g)
        g.change("a", g.player.loop(g.instance("a"), 358), fade=0.1)
        g.step()
        pos, rot = g.bones_world("a")
        head: BoneArray = pos
        body: Body = g.component("a", Body)
        return float(head[6, 2]) + float(body.heading) + g.update + (1.0 if fight else 0.0)
'''

BAD_HOST = '''\
from scuffle import Game, demo_set

with Game() as g:
    g.add_human("a", demo_set(), position="oops")
    g.add_human("b", demo_set(), heading="north")
    body: int = g.body("a")
'''


def _editable_pth() -> list[str] | None:
    """The lines of the installed scuffle's editable .pth, None when not installed editable."""
    import importlib.metadata as md
    import json
    # The installed one: a scuffle.egg-info left in the repository's root has no direct_url.json.
    dist = next((d for d in md.distributions(name="scuffle") if d.read_text("direct_url.json")), None)
    if dist is None or not json.loads(dist.read_text("direct_url.json") or "{}").get("dir_info", {}).get("editable"):
        return None
    pths = [f for f in dist.files or () if str(f).endswith(".pth") and "scuffle" in str(f)]
    assert pths, "an editable scuffle without its .pth"
    return [ln.strip() for p in pths for ln in Path(p.locate()).read_text(encoding="utf-8").splitlines()]


def test_the_editable_install_is_a_path_mypy_can_follow():
    """The README's ``pip install -e`` puts a plain folder on sys.path (mypy reads .pth
    path lines but never runs their ``import`` hooks): a link tree whose scuffle/ holds
    the card's folders (scuffle/_build_backend.py)."""
    lines = _editable_pth()
    if lines is None:
        pytest.skip("scuffle is not installed editable here")
    paths = [Path(ln) for ln in lines if ln and not ln.startswith(("#", "import "))]
    assert paths, f"the editable .pth is only an import hook: {lines}"
    pkg = paths[0] / "scuffle"
    for folder in ("anim", "components", "systems", "game", "demo"):
        assert (pkg / folder / "__init__.py").is_file(), folder
    assert (pkg / "py.typed").is_file() and (pkg / "__init__.py").is_file()


def _fill_strict_cache(folder: Path) -> dict:
    """mypy --strict over a host program that imports the installed scuffle and numpy's
    typing, into ``folder``'s cache (whatever it reports: the tests judge their own runs)."""
    (folder / "host.py").write_text(GOOD_HOST, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(folder / ".mypy"),
                        "--no-error-summary", "host.py"], cwd=folder, capture_output=True, text=True, timeout=900)
    return {"code": r.returncode}


@pytest.fixture(scope="session")
def strict_cache(tmp_path_factory) -> Path:
    """A mypy --strict cache of the installed scuffle and numpy's stubs, filled once a
    session (once across pytest-xdist's workers: coldcache.shared). Each host test runs
    on its own copy, so it reads what the host imports from the cache instead of checking
    it again each time; the verdicts are the same as on an empty cache (mypy re-checks
    any module whose source or options differ from what its cache recorded)."""
    pytest.importorskip("mypy")
    return Path(shared(tmp_path_factory, "mypy-strict", _fill_strict_cache)["folder"]) / ".mypy"


def _strict_run(tmp: Path, cache: Path, files: list[str]) -> subprocess.CompletedProcess:
    """mypy --strict over ``files`` in the folder ``tmp``, on a copy of the session's cache."""
    shutil.copytree(cache, tmp / ".mypy")
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp / ".mypy"),
                           "--no-error-summary", *files], cwd=tmp, capture_output=True, text=True, timeout=900)


def _strict(tmp: Path, cache: Path, name: str, text: str) -> subprocess.CompletedProcess:
    (tmp / name).write_text(text, encoding="utf-8")
    return _strict_run(tmp, cache, [name])


@pytest.mark.slow
def test_a_host_program_type_checks_strictly_against_the_installed_scuffle(tmp_path, strict_cache):
    """mypy --strict in a host's folder finds scuffle as installed (the README's editable
    install in CI) and accepts a correct program."""
    r = _strict(tmp_path, strict_cache, "host.py", GOOD_HOST)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


@pytest.mark.slow
def test_a_wrong_argument_type_is_an_error_under_strict(tmp_path, strict_cache):
    r = _strict(tmp_path, strict_cache, "bad.py", BAD_HOST)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "Cannot find implementation or library stub" not in out
    assert re.search(r'bad\.py:4: error: Argument "position" to "add_human" of "Game" has incompatible type "str"', out), out
    assert re.search(r'bad\.py:5: error: Argument "heading" to "add_human" of "Game" has incompatible type "str"', out), out
    assert re.search(r'bad\.py:6: error: Incompatible types in assignment \(expression has type "Body"', out), out
    assert len(re.findall(r": error:", out)) == 3, out


@pytest.mark.slow
def test_the_examples_pass_strict(tmp_path, strict_cache):
    """docs/examples are host programs too: they pass mypy --strict against the installed scuffle."""
    examples = sorted(str(p) for p in (ROOT / "docs" / "examples").glob("*.py"))
    assert len(examples) >= 6
    r = _strict_run(tmp_path, strict_cache, examples)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


FIGHT_HOST = '''\
import numpy as np
import numpy.typing as npt

from scuffle import Body, Fight, Game, demo_set

with Game() as g:
    g.add_human("a", demo_set())
    fight = Fight(g)
    fight.strike("a", 1.5)
    fight.grab(3.2)
    body: Body = g.body("a")
    where: npt.NDArray[np.float64] = body.position
    heading: float = body.heading
    attached: int = body.attachment
    body.heading = "north"
    body.position = (0.0, 1.0, 0.0)
'''


@pytest.mark.slow
def test_a_hosts_fight_errors_name_fight_and_bodys_fields_are_typed(tmp_path, strict_cache):
    """A wrong argument to a Fight command names "strike" of "Fight" (not the part of the
    rules that implements it); Body's fields read as numpy arrays, float and int."""
    r = _strict(tmp_path, strict_cache, "fight_host.py", FIGHT_HOST)
    out = r.stdout
    assert re.search(r'fight_host\.py:9: error: Argument 2 to "strike" of "Fight" has incompatible type "float"', out), out
    assert re.search(r'fight_host\.py:10: error: Argument 1 to "grab" of "Fight" has incompatible type "float"', out), out
    assert re.search(r'fight_host\.py:15: error: Incompatible types in assignment \(expression has type "str"', out), out
    assert len(re.findall(r": error:", out)) == 3, out
    for internal in ("FightCore", "Hits", "Pairs", "Locomotion", "Rounds", "Any"):
        assert f'"{internal}"' not in out, out
