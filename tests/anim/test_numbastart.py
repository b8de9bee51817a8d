"""What a game's process loads: numba's start without scipy's linear algebra
(anim/engine/numbastart.py), numba left as it would be without scuffle, and none of the
modules a game must never carry (the reference, pygame, test tools).

Each check runs in a fresh process: what is imported is process-wide."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Never in a game's process: the demo's drawing, the reference engine (a test oracle),
# the tools, test frameworks, and what scipy.linalg would bring through numba's start
# (numpy's f2py and testing, unittest, pydoc).
FORBIDDEN = ("pygame", "hypothesis", "pytest", "_pytest", "unittest", "doctest", "pydoc", "numpy.f2py",
             "numpy.testing", "scipy.linalg", "scuffle.anim.reference", "scuffle.demo", "scuffle.game.tools",
             "scuffle.game.cli")

_GAME = """
import json, sys
from scuffle import Fight, Game, Snapshot, demo_set, settle, warm
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.moves import Move
warm()                                                  # a loading screen: every kernel
with Game() as g:
    aset = demo_set()
    g.add_human("p1", aset, position=(0.0, -1.5, 0.0), heading=0.0)
    g.add_human("p2", aset, position=(0.0, 1.5, 0.0), heading=180.0)
    fight = Fight(g, separate=True)
    fight.controllers.append(FighterAI("p1", "p2", seed=3))
    fight.controllers.append(FighterAI("p2", "p1", seed=4))
    for i in range(40):
        g.add_human(f"c{i}", aset, position=(3.0 + i, 0.0, 0.0))
        g.change(f"c{i}", g.player.loop(g.instance(f"c{i}"), int(Move.IDLE)))
    settle()
    for _ in range(30):
        g.step()
    data = g.snapshot().to_bytes()
    g.restore(Snapshot.from_bytes(data))
    g.checksum()
    g.step()
print(json.dumps(sorted(sys.modules)))
"""


def _run(code: str, *args: str) -> str:
    r = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.slow
def test_a_games_process_never_loads_the_reference_pygame_test_tools_or_scipy_linalg():
    modules = json.loads(_run(_GAME))
    assert "scuffle.anim.engine.kernels" in modules and "numba.np.arraymath" in modules   # it ran the engine
    assert _loaded(modules, FORBIDDEN) == []


# numba's own answer, in a process without scuffle (its first compiled call imports
# numba.np.arraymath, which runs the BLAS check).
_NUMBA_ALONE = """
import json, sys
{block}
import numba
numba.njit(lambda x: x + 1)(1)
from numba.np import arraymath
print(json.dumps([arraymath._HAVE_BLAS, "scipy.linalg" in sys.modules]))
"""
# The same after scuffle's start, and numba's functions back as they were.
_WITH_SCUFFLE = """
import json, sys
{block}
from scuffle.anim.engine.numbastart import defer_blas_check
defer_blas_check()
import numba
numba.njit(lambda x: x + 1)(1)
from numba.np import arraymath, linalg
restored = (linalg.ensure_blas.__module__ == "numba.np.linalg" and linalg.ensure_blas.__name__ == "ensure_blas"
            and arraymath.ensure_blas is linalg.ensure_blas)
print(json.dumps([arraymath._HAVE_BLAS, "scipy.linalg" in sys.modules, restored]))
"""
_BLOCK_SCIPY = "sys.modules['scipy'] = None   # as if scipy were not installed"


@pytest.mark.slow
def test_numbas_blas_check_is_answered_as_numba_answers_it_without_loading_scipy_linalg():
    have, linalg_loaded = json.loads(_run(_NUMBA_ALONE.format(block="")))
    ours, ours_loaded, restored = json.loads(_run(_WITH_SCUFFLE.format(block="")))
    assert ours == have and restored
    assert ours_loaded is False
    try:
        import scipy  # noqa: F401
    except ImportError:
        return
    assert have is True and linalg_loaded is True     # where scipy is installed numba's own start loads it


@pytest.mark.slow
def test_without_scipy_numbas_answer_is_the_same():
    have, _ = json.loads(_run(_NUMBA_ALONE.format(block=_BLOCK_SCIPY)))
    ours, loaded, restored = json.loads(_run(_WITH_SCUFFLE.format(block=_BLOCK_SCIPY)))
    assert (ours, loaded, restored) == (have, False, True) == (False, False, True)


@pytest.mark.slow
def test_a_program_that_uses_scipy_and_numbas_linear_algebra_after_scuffle_gets_them_whole():
    pytest.importorskip("scipy.linalg")
    code = """
import json, sys
import numpy as np
from scuffle.anim.engine.numbastart import defer_blas_check
defer_blas_check()
import numba
assert "scipy.linalg" not in sys.modules
import scipy.linalg
from scipy.linalg import cython_blas
a = np.arange(9.0).reshape(3, 3) + np.eye(3)
inv = numba.njit(lambda m: np.linalg.inv(m))(a)           # numba's LAPACK through scipy
dot = numba.njit(lambda x, y: np.dot(x, y))(a, a)          # numba's BLAS
conv = numba.njit(lambda x, y: np.convolve(x, y))(a[0], a[1])
print(json.dumps([bool(np.allclose(inv, scipy.linalg.inv(a))), bool(np.array_equal(dot, a @ a)),
                  bool(np.allclose(conv, np.convolve(a[0], a[1]))), hasattr(scipy.linalg, "lu_factor")]))
"""
    assert json.loads(_run(code)) == [True, True, True, True]


@pytest.mark.slow
def test_defer_blas_check_does_nothing_once_numba_has_started():
    code = """
import json, sys
import numba
numba.njit(lambda x: x + 1)(1)                  # numba's own start: scipy.linalg where installed
before = "scipy.linalg" in sys.modules
from scuffle.anim.engine.numbastart import defer_blas_check
from numba.np import linalg
real = linalg.ensure_blas
defer_blas_check()
print(json.dumps([before == ("scipy.linalg" in sys.modules), linalg.ensure_blas is real]))
"""
    assert json.loads(_run(code)) == [True, True]


def test_the_probe_finds_scipys_blas_where_the_import_system_does():
    code = """
import importlib.util, json
from scuffle.anim.engine.numbastart import blas_file_present
found = blas_file_present()
try:
    spec = importlib.util.find_spec("scipy.linalg.cython_blas")
except ImportError:
    spec = None
print(json.dumps([found, spec is not None]))
"""
    found, spec = json.loads(_run(code))
    assert found == spec
