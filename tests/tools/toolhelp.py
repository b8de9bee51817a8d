"""Helpers for the tools' tests (viewer, trace diff, survey, CSV converter); the fixtures
are in conftest.py.

Every clip is authored (anim.data.clip.author_clip); nothing comes from the disc. This file
never imports pygame (the demo package is the only one that does).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scuffle.anim.data.clip import author_clip, encode_clip

REPO = Path(__file__).resolve().parents[2]
WALK_START, IDLE = 412, 388


def _env() -> dict:
    return dict(os.environ, SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")


def run_module(module: str, *args, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS``, text output captured: in this process for scuffle's own
    command (tests/scuffle_cli.py), else in a subprocess."""
    if module == "scuffle":
        from scuffle_cli import run_scuffle
        return run_scuffle(*args, cwd=cwd or REPO, env=_env())
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd or REPO, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def run_script(path, *args, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python PATH ARGS`` in a subprocess."""
    return subprocess.run([sys.executable, str(path), *map(str, args)], cwd=cwd or REPO, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def walk_clips():
    """The worked example's clips (docs/scenarios.md): a 10-frame walk start with a root
    velocity of 1.048 m/s forward and a sound at frame 3, and a 60-frame idle."""
    start = author_clip("walk_start", 10, velocity=[(0, (0, 0, 0)), (1, (0, 1.048, 0))],
                        events=[{"frame": 3, "type": 11, "word": 42}])
    return start, author_clip("idle", 60)


def walk_scenario(path: Path, updates: int = 16) -> Path:
    """The worked example as a scenario file: a human facing -x plays 412 then 388."""
    start, idle = walk_clips()
    out = f"updates = {updates}\n[sets.street]\n"
    for anim_id, c in ((WALK_START, start), (IDLE, idle)):
        d, k = encode_clip(c)
        out += f'[[sets.street.clips]]\nid = {anim_id}\ndescriptor = "{d.hex()}"\nkeyframes = "{k.hex()}"\n'
    out += ('[[humans]]\nname = "hero"\nset = "street"\nheading = 90.0\n'
            '[[commands]]\nupdate = 1\nhuman = "hero"\nplay = [412, 388]\nheld = 1\n')
    path.write_text(out, encoding="utf-8")
    return path


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path, records) -> Path:
    Path(path).write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records), encoding="utf-8")
    return Path(path)
