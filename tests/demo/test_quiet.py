"""SDL's start-up noise (``XDG_RUNTIME_DIR is invalid``, ALSA's lines) stays off the
demo's stderr; anything else SDL writes there still shows."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

NOISY = r'''
import os, sys
from scuffle.demo.quiet import sdl_quiet
with sdl_quiet():
    os.write(2, b"error: XDG_RUNTIME_DIR is invalid or not set in the environment.\n")
    os.write(2, b"ALSA lib confmisc.c:855:(parse_card) cannot find card '0'\n")
    os.write(2, b"a real problem\n")
print("after", file=sys.stderr)
'''


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "SDL_VIDEODRIVER", "DISPLAY", "XDG_RUNTIME_DIR")}
    env.update(extra)
    return env


def test_sdl_quiet_drops_the_noise_and_keeps_the_rest():
    r = subprocess.run([sys.executable, "-c", NOISY], capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == ["a real problem", "after"]


@pytest.mark.slow
def test_a_demo_that_falls_back_to_headless_prints_no_sdl_noise(tmp_path):
    """Wayland named but no runtime folder: SDL complains while it looks for a driver,
    then falls back; the demo says so in its own one line and runs headless."""
    r = subprocess.run([sys.executable, "-m", "scuffle", "demo", "--seconds", "0.2", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env=_env(WAYLAND_DISPLAY="wayland-0", SDL_AUDIODRIVER="dummy"))
    assert r.returncode == 0, r.stderr
    assert "XDG_RUNTIME_DIR" not in r.stderr and "ALSA" not in r.stderr
    assert "running headless" in r.stderr
