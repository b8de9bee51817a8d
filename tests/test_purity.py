"""The animation core stays pure: anim/ imports neither esper nor pygame, and the game
model (components/, systems/, game/) does not import pygame (only the demo draws)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sources import nodes

ROOT = Path(__file__).resolve().parents[1]


def imported_roots(path: Path) -> set[str]:
    """Top-level package names a module imports (import x.y, from x import y,
    __import__("x"), importlib.import_module("x"))."""
    roots = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if name in ("__import__", "import_module"):
                roots.add(node.args[0].value.split(".")[0])
    return roots


def offenders(package: str, banned: set[str]) -> list[str]:
    base = ROOT / package
    if not base.is_dir():
        pytest.skip(f"{package}/ not present")
    bad = []
    for path in sorted(base.rglob("*.py")):
        hit = imported_roots(path) & banned
        if hit:
            bad.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(hit))}")
    return bad


def test_the_checker_sees_every_import_form(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\nimport pygame.display\nfrom esper import World\nfrom . import x\n"
                 "import importlib\nimportlib.import_module('pygame')\n__import__('esper.x')\n"
                 "def g():\n    import numpy as np\n")
    assert imported_roots(f) == {"os", "pygame", "esper", "importlib", "numpy"}


def test_anim_imports_neither_esper_nor_pygame():
    assert offenders("anim", {"esper", "pygame"}) == []


@pytest.mark.parametrize("package", ["components", "systems", "game"])
def test_model_packages_do_not_import_pygame(package):
    assert offenders(package, {"pygame"}) == []


@pytest.mark.slow
def test_importing_anim_loads_neither_esper_nor_pygame():
    modules = sorted("scuffle.anim." + ".".join(p.relative_to(ROOT / "anim").with_suffix("").parts)
                     for p in (ROOT / "anim").rglob("*.py") if p.stem != "__init__")
    assert "scuffle.anim.engine.sampler" in modules and "scuffle.anim.data.clip" in modules
    code = ("import sys\n"
            + "".join(f"import {m}\n" for m in modules)
            + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('esper', 'pygame')))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


# Transcendental functions whose last bit depends on the CPU (numpy's SIMD kernels) or the
# libm build: none of them may feed a trace, a pose or a bit-for-bit comparison; anim.maths.detmath
# has the deterministic forms. Authoring (the demo set's keys, quantised to 16 bits and kept
# in game/fighters/demo.res) and the tools and demo (drawing, reports) may use them.
_TRANSCENDENTAL = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "asin", "acos", "atan",
                   "atan2", "sinh", "cosh", "tanh", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10",
                   "hypot", "degrees", "radians", "deg2rad", "rad2deg", "power", "pow", "cbrt"}
_BIT_DEFINED = ["anim", "components", "systems", "game/runtime", "game/fighters"]
_AUTHORING = {"game/fighters/moveset.py"}


def transcendental_calls(path: Path, root: Path = ROOT) -> list[str]:
    """``np.sin(...)``, ``numpy.arccos``, ``math.atan2(...)``... referenced in a module."""
    hits = []
    for node in nodes(path):
        if isinstance(node, ast.Attribute) and node.attr in _TRANSCENDENTAL \
                and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy", "math"):
            hits.append(f"{path.relative_to(root)}:{node.lineno} {node.value.id}.{node.attr}")
    return hits


def test_the_transcendental_checker_sees_them(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import math\nimport numpy as np\nx = np.arccos(1)\ny = math.atan2(1, 2)\nf = np.sin\n"
                 "z = np.sqrt(2) + math.floor(2.5)\n")
    hits = sorted(h.split(" ")[1] for h in transcendental_calls(f, tmp_path))
    assert hits == ["math.atan2", "np.arccos", "np.sin"]


def test_no_cpu_dependent_transcendental_in_a_bit_defined_path():
    """Same bits on every machine: the simulation's angles come from anim.maths.detmath."""
    bad = []
    for folder in _BIT_DEFINED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if str(path.relative_to(ROOT)) not in _AUTHORING:
                bad += transcendental_calls(path)
    assert bad == []
