"""The command line's start: ``scuffle --version``, ``--help`` and a usage error set up no
command's arguments but the one named, so they load neither numba nor the engine; a named
command's own help still lists its options."""
from __future__ import annotations

import json
import subprocess
import sys

from scuffle_cli import run_scuffle

HEAVY = ("numba", "scuffle.anim.engine.kernels", "scuffle.anim.playback.player", "scuffle.game.runtime.scenario")
CODE = """
import contextlib, io, json, sys
from scuffle.cli import main
codes = []
for args in (["--version"], ["--help"], ["clip"], ["nothing-such"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(main(args))
print(json.dumps({"codes": codes, "loaded": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def test_version_help_and_a_usage_error_load_no_engine():
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"codes": [0, 0, 2, 2], "loaded": []}


def test_a_named_commands_help_lists_its_options():
    r = run_scuffle("run", "--help")
    assert r.returncode == 0 and "--trace" in r.stdout and "--engine" in r.stdout, r.stdout
    r = run_scuffle("--help")
    assert r.returncode == 0 and all(name in r.stdout for name in ("run", "bench", "clip", "demo")), r.stdout
