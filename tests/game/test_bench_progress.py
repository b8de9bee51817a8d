"""scuffle bench is never silent for long: the first step's fresh compile and each size of
a sweep say so on stderr first, with a dot every PROGRESS_EVERY seconds while they run."""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from scuffle.game.tools.bench import FIRST_STEP_NOTICE, wait_with_progress


def _child(seconds: float, out: str = "{}", code: int = 0) -> subprocess.Popen:
    script = f"import sys, time; time.sleep({seconds}); print({out!r}); sys.exit({code})"
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow
def test_a_long_child_gets_dots_then_its_time():
    progress = io.StringIO()
    p = _child(1.0, out='{"ok": 1}')
    out, err = wait_with_progress(p, progress, every=0.1)
    assert json.loads(out) == {"ok": 1} and p.returncode == 0
    text = progress.getvalue()
    dots, _, tail = text.partition(" ")
    assert set(dots) == {"."} and len(dots) >= 3, text        # about ten: a dot per 0.1 s of the second
    assert tail.endswith(" s\n") and float(tail.split()[0]) >= 1.0, text


def test_a_quick_child_gets_no_dots_and_no_stream_no_output():
    progress = io.StringIO()
    p = _child(0.0)
    wait_with_progress(p, progress, every=30.0)
    assert re.fullmatch(r" \d+\.\d s\n", progress.getvalue()), progress.getvalue()   # its time, no dot
    wait_with_progress(_child(0.0), None, every=30.0)          # no stream: nothing to write to


def test_a_child_past_its_limit_is_killed():
    p = _child(30.0)
    with pytest.raises(RuntimeError, match="more than"):
        wait_with_progress(p, io.StringIO(), every=0.1, limit=0.3)
    assert p.returncode is not None                           # killed and reaped, not left running


@pytest.mark.slow
def test_bench_says_what_it_compiles_on_stderr():
    """A tiny crowd with the first step on a fresh install (a fresh process compiling into an
    empty cache: 10-20 s, hence slow)."""
    p = subprocess.run([sys.executable, "-m", "scuffle", "bench", "--humans", "2", "--updates", "2",
                        "--scalar-updates", "1", "--json"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    assert "first_step" in json.loads(p.stdout)
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith(FIRST_STEP_NOTICE))
    rest = line[len(FIRST_STEP_NOTICE):].split()
    assert set(rest[0]) == {"."} and rest[-1] == "s", line    # dots while it compiled, then its time
