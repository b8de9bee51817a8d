"""The demo checks the video driver it actually got.

With DISPLAY naming a display that does not exist, SDL falls back to its offscreen
driver: the window "opens" invisibly, and ``scuffle demo --seconds 2`` would run
forever. The demo (and the viewer) ask SDL which driver it opened
(``pygame.display.get_driver()``) and run headless on ``offscreen`` / ``dummy``, as the
README promises. Each probe is a subprocess with a time limit: a hang fails the test.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


LIMIT = 240          # seconds: a cold numba cache compiles first (20-60 s on a busy machine)
DISPLAY = ":99"


def _scuffle(args, tmp_path: Path, **env) -> subprocess.CompletedProcess:
    """``python -m scuffle ARGS`` with no display but DISPLAY set (a hang: TimeoutExpired)."""
    if os.path.exists(f"/tmp/.X11-unix/X{DISPLAY[1:]}"):
        pytest.skip(f"an X server answers on {DISPLAY} here")
    e = {k: v for k, v in os.environ.items() if k not in ("SDL_VIDEODRIVER", "WAYLAND_DISPLAY", "DISPLAY")}
    e.update({"DISPLAY": DISPLAY, "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}, **env)
    return subprocess.run([sys.executable, "-m", "scuffle", *args], cwd=tmp_path, env=e, capture_output=True,
                          text=True, timeout=LIMIT)


def _ran_headless(r, out: Path, why: str) -> None:
    assert r.returncode == 0, r.stderr
    assert why in r.stderr and "running headless" in r.stderr, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["updates"] == 60 and summary["seconds"] == 2.0


@pytest.mark.slow
def test_an_unreachable_display_runs_the_demo_headless_and_it_ends(tmp_path):
    """DISPLAY=:99 (nothing there), no SDL_VIDEODRIVER: SDL falls back to offscreen; the
    demo says so, runs 2 s of game time headless, writes its summary and exits 0."""
    r = _scuffle(["demo", "--seconds", "2", "--out", "out"], tmp_path)
    _ran_headless(r, tmp_path / "out", "offscreen")


@pytest.mark.slow
@pytest.mark.parametrize("driver, why", [("offscreen", "SDL_VIDEODRIVER=offscreen"),
                                         ("x11,offscreen", "SDL gave the 'offscreen' video driver")])
def test_an_offscreen_driver_by_name_or_by_fallback_is_headless(tmp_path, driver, why):
    """SDL_VIDEODRIVER=offscreen, or a list whose first driver fails (x11 on :99) and
    whose fallback shows nothing: headless every time, with the reason."""
    r = _scuffle(["demo", "--seconds", "2", "--out", "out"], tmp_path, SDL_VIDEODRIVER=driver)
    _ran_headless(r, tmp_path / "out", why)


@pytest.mark.slow
def test_the_viewer_writes_pictures_on_an_unreachable_display(tmp_path):
    """``scuffle view`` on DISPLAY=:99: pictures instead of an invisible window, and it ends."""
    r = _scuffle(["view", "demo", "--id", "358", "--out", "view"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "offscreen" in r.stderr and "writing pictures instead" in r.stderr
    assert any(p.suffix == ".png" for p in (tmp_path / "view").iterdir())
