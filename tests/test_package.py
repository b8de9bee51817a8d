"""One package, scuffle: the wheel holds one top-level package, scuffle runs
from a directory full of a host's own ``game``/``components``/``systems``/``anim``, and
nothing but scuffle.demo imports pygame."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("anim", "components", "systems", "game")


def _run(args, cwd, timeout=300, **env):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", **env})


def _scuffle_command() -> list[str]:
    """The installed console script beside this interpreter, else ``python -m scuffle``."""
    script = Path(sys.executable).parent / "scuffle"
    return [str(script)] if script.exists() else [sys.executable, "-m", "scuffle"]


def _every_module_but_the_demo() -> list[str]:
    mods = ["scuffle"]
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods.append(".".join(["scuffle", *parts]))
    return mods


@pytest.fixture
def host_dir(tmp_path: Path) -> Path:
    """A host project's directory: its own game/, components.py, systems/ and anim/ that
    would break scuffle if scuffle imported bare names."""
    (tmp_path / "game").mkdir()
    (tmp_path / "game" / "__init__.py").write_text("raise ImportError('the host game package was imported')\n")
    (tmp_path / "game" / "world.py").write_text("raise ImportError('host game.world')\n")
    (tmp_path / "components.py").write_text("raise ImportError('the host components module was imported')\n")
    for pkg in ("systems", "anim"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(f"raise ImportError('the host {pkg} package was imported')\n")
    scen = tmp_path / "s.toml"
    scen.write_text(textwrap.dedent("""\
        updates = 20
        [sets.fighters]
        library = "demo"
        [[humans]]
        name = "a"
        set = "fighters"
        [[humans]]
        name = "b"
        set = "fighters"
        position = [0.0, 1.0, 0.0]
        heading = 180.0
        [[commands]]
        update = 0
        human = "a"
        loop = 358
        [[commands]]
        update = 2
        human = "a"
        action = "strike"
        """))
    return tmp_path


@pytest.mark.slow
def test_scuffle_works_from_a_directory_holding_a_hosts_packages(host_dir):
    code = textwrap.dedent("""\
        import esper
        from scuffle import Game, demo_set
        with Game() as g:
            s = demo_set()
            g.add_human("a", s)
            g.add_human("b", s, position=(0, 1, 0), heading=180)
            g.change("a", g.player.loop(g.instance("a"), 358))
            g.step()
            with g.active():
                esper.process(1 / 30)
            print("updates", g.update, g.record("a").anim_id, g.bones_world("b")[0].shape)
        """)
    r = _run([sys.executable, "-c", code], host_dir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["updates", "2", "358", "(34,", "3)"]
    r = _run([*_scuffle_command(), "--help"], host_dir)
    assert r.returncode == 0, r.stderr
    for sub in ("demo", "view", "run", "clip", "lint", "diff", "survey", "bench", "csv2trace"):
        assert sub in r.stdout
    r = _run([*_scuffle_command(), "run", "s.toml", "--trace", "t.jsonl"], host_dir)
    assert r.returncode == 0, r.stderr
    lines = (host_dir / "t.jsonl").read_text().splitlines()
    assert len(lines) == 40 and '"human":"a"' in lines[0]


@pytest.mark.slow
def test_version_and_python_m_scuffle(tmp_path):
    from scuffle import __version__
    r = _run([sys.executable, "-m", "scuffle", "--version"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"scuffle {__version__}"
    r = _run([sys.executable, "-m", "scuffle", "bench", "--help"], tmp_path)
    assert r.returncode == 0 and "--humans" in r.stdout


@pytest.mark.slow
def test_python_m_scuffle_from_the_repository_root(tmp_path):
    """Run in the repository's root, Python finds the face folder scuffle/ first (the
    current directory leads sys.path); the card's folders beside it still load."""
    from scuffle import __version__
    r = _run([sys.executable, "-m", "scuffle", "--version"], ROOT)
    assert r.returncode == 0 and r.stdout.strip() == f"scuffle {__version__}", r.stderr
    code = "import scuffle, scuffle.game.runtime.world as w; print(scuffle.__file__, w.__name__)"
    r = _run([sys.executable, "-c", code], ROOT)
    assert r.returncode == 0, r.stderr
    face, name = r.stdout.split()
    assert Path(face) == ROOT / "scuffle" / "__init__.py" and name == "scuffle.game.runtime.world"


@pytest.mark.slow
def test_nothing_but_the_demo_imports_pygame(tmp_path):
    mods = _every_module_but_the_demo()
    assert "scuffle.game.runtime.world" in mods and "scuffle.game.tools.survey" in mods
    code = ("import importlib, sys\n"
            f"for m in {mods!r}:\n    importlib.import_module(m)\n"
            "import scuffle\n"
            "for n in scuffle.__all__:\n    getattr(scuffle, n)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pygame'))\n")
    r = _run([sys.executable, "-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.slow
def test_scuffle_demo_without_pygame_says_how_to_install_it(tmp_path):
    code = ("import sys\nsys.modules['pygame'] = None\n"     # as if pygame were not installed
            "from scuffle.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    for sub in ("demo", "view"):
        r = _run([sys.executable, "-c", code, sub, "--headless"], tmp_path)
        assert r.returncode == 2
        assert r.stderr.count("\n") == 1 and "pip install 'scuffle[demo]'" in r.stderr, r.stderr
        assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_wheel_holds_one_package_scuffle(tmp_path):
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)], tmp_path,
             timeout=600)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("scuffle-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"scuffle"}
    for needed in ("scuffle/__init__.py", "scuffle/__main__.py", "scuffle/py.typed", "scuffle/anim/data/clip.py",
                   "scuffle/game/runtime/world.py", "scuffle/game/fighters/combat.py", "scuffle/demo/app.py",
                   "scuffle/components/__init__.py", "scuffle/systems/animation.py"):
        assert needed in names
    assert not any(n.startswith("scuffle/tests") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    entries = zipfile.ZipFile(wheel).read(entry).decode()
    assert "scuffle = scuffle.cli:main" in entries
    assert "[pytest11]\nscuffle = scuffle.testing" in entries and "scuffle/testing.py" in names
    # the build backend ships only inside the package, never as a top-level module
    assert "scuffle/_build_backend.py" in names and not any(n.startswith("_build_backend") for n in names)


def test_one_version_everywhere():
    """pyproject.toml's version is the one the game layer reads (game.runtime.version:
    snapshot headers, the netplay greeting, --version) and the face re-exports."""
    import tomllib

    import scuffle
    from scuffle.game.runtime.version import __version__
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["version"] == __version__ == scuffle.__version__
