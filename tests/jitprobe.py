"""Small numba wrappers that tests compile around the engine's inlined helpers (a lane of
the slerp, the blend, detmath's scalar forms), kept in numba's on-disk cache from one run
to the next: each costs seconds of CPU to compile and a few milliseconds to load.

numba's own cache checks only the stamp of the file that defines a function, not of the
files whose helpers it inlines, so a wrapper cached next to a test would outlive a change
of the engine. ``probe`` therefore writes each wrapper's module under a name made of the
sha256 of its source, of every source file of the package's ``anim`` folder (where every
inlined helper lives: anim imports only numpy and numba), of numba's and Python's versions
and of the numba settings that change the machine code (bounds checks, the target CPU and
its features). A change to any of them compiles afresh; an unchanged tree loads the
machine code. The modules live in tests/__pycache__/jitprobes (numba keeps the machine code
in their __pycache__, or under NUMBA_CACHE_DIR's mirror of that path). ``machine_code``
keeps a wrapper's assembly text there the same way, for the tests that read the packed
instructions.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

__all__ = ["probe", "machine_code"]

FOLDER = Path(__file__).resolve().parent / "__pycache__" / "jitprobes"


@functools.cache
def _tree_digest() -> str:
    """The sha256 of every anim source file (its path and bytes) and of the settings and
    versions that change the machine code numba makes of them."""
    import numba
    from llvmlite import binding
    from numba.core import config

    from scuffle import anim

    root = Path(anim.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    settings = (numba.__version__, sys.version, config.BOUNDSCHECK, config.CPU_NAME, config.CPU_FEATURES,
                config.ENABLE_AVX, config.OPT, config.DISABLE_JIT, binding.get_host_cpu_name(),
                binding.get_host_cpu_features().flatten())
    h.update(repr(settings).encode())
    return h.hexdigest()


def _key(source: str) -> str:
    """The tree's digest, then the source's: files of an older tree are told by their prefix."""
    return _tree_digest()[:16] + "_" + hashlib.sha256(source.encode()).hexdigest()[:16]


def _write(path: Path, text: str) -> None:
    """``text`` into ``path``, written whole then renamed: xdist workers race here. The
    probes of other trees are removed first (each change of anim/ would leave its own)."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    tree = _tree_digest()[:16]
    for old in [*FOLDER.glob("*_*"), *FOLDER.glob("__pycache__/*_*")]:
        if old.name.startswith(("probe_", "asm_")) and old.name.split("_")[1] != tree:
            old.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=FOLDER, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


@functools.cache
def _module(source: str) -> ModuleType:
    key = _key(source)
    path = FOLDER / f"probe_{key}.py"
    if not path.exists():
        _write(path, source)
    spec = importlib.util.spec_from_file_location(f"_jitprobe_{key}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def probe(source: str, name: str):
    """The function ``name`` of the module ``source`` (a wrapper decorated with
    ``@njit(cache=True)``), its machine code cached for this tree (see the module's
    docstring). Rejected: a source that does not cache its wrapper (ValueError)."""
    if "cache=True" not in source:
        raise ValueError("a probe's wrapper is njit(cache=True): else it compiles every run")
    return getattr(_module(source), name)


def machine_code(source: str, name: str, call: Callable[[Any], None]) -> str:
    """The assembly numba makes of the wrapper ``name`` of the module ``source`` (decorated
    ``@njit(cache=False)``: numba gives no machine code for a function loaded from its
    cache) for the arguments ``call(wrapper)`` passes it, lower-cased. Compiled once for
    this tree (the key of ``probe``, the host CPU's name and features in it) and the text
    kept beside the probes' modules; later runs read the text."""
    if "cache=False" not in source:
        raise ValueError("a machine-code probe's wrapper is njit(cache=False): numba keeps no assembly in its cache")
    path = FOLDER / f"asm_{_key(source)}_{name}.s"
    if path.exists():
        return path.read_text(encoding="utf-8")
    fn = getattr(_module(source), name)
    call(fn)
    text = fn.inspect_asm(fn.signatures[0]).lower()
    _write(path, text)
    return text
