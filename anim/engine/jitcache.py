"""numba's on-disk cache of the kernels: whether there is one, and that it is whole.

Each kernel module (anim/kernels_*.py, anim/engine/cmdkernel.py) asks ``cache_setting()`` once,
before it compiles anything, for the ``cache=`` of its ``@njit`` kernels:

- no folder numba can write (NUMBA_CACHE_DIR, the install's __pycache__, the user's
  ~/.cache: a read-only install run with no usable home): False, the kernels compile for
  the process only (``NO_CACHE`` says why; the command line says so once);
- a cache holding files that cannot be whole (an empty or cut ``.nbi`` index or ``.nbc``
  data file: numba would raise on loading them, every run until someone deletes them):
  those of the function are moved aside into ``set-aside/`` in the cache folder, and
  numba rebuilds them (``SET_ASIDE`` names them; one line on the ``scuffle`` logger says so, which an
  unconfigured host sees on stderr);
- else True.

The check reads every index (small pickles) and walks every data file's pickle stream
without building its objects (``_Skim``), in some tens of milliseconds. numba's own file
layout (numba/core/caching.py, IndexDataCacheFile): an index holds the pickled numba
version, then the pickled (source stamp, {key: data file name}).
"""
from __future__ import annotations

import glob
import io
import os
import pickle
import time

__all__ = ["cache_setting", "NO_CACHE", "SET_ASIDE", "check_cache_folder", "SET_ASIDE_FOLDER", "linked_modules",
           "linked_sha256"]

NO_CACHE: list[str] = []          # why the kernels are not cached (empty: they are)
SET_ASIDE: list[str] = []         # cache files found corrupt and moved aside this process
SET_ASIDE_FOLDER = "set-aside"


def linked_modules(module_file: str) -> list[str]:
    """The modules whose numba functions ``module_file``'s kernels link: anim's detmath,
    its rules (the task rules Python runs too) and the kernels_* modules it imports, with
    theirs; sorted stems (anim's floors hold each stem once)."""
    import re

    anim = os.path.dirname(os.path.dirname(os.path.abspath(module_file)))
    files = {os.path.splitext(os.path.basename(p))[0]: p
             for p in glob.glob(os.path.join(anim, "*", "*.py"))}
    seen: set[str] = set()
    todo = [os.path.splitext(os.path.basename(module_file))[0]]
    while todo:
        with open(files[todo.pop()], encoding="utf-8") as f:
            src = f.read()
        for a, b in re.findall(r"^from scuffle\.anim\.\w+\.(kernels_\w+|detmath|rules) import"
                               r"|^from scuffle\.anim\.\w+ import (detmath|rules)\b", src, re.M):
            if (a or b) not in seen:
                seen.add(a or b)
                todo.append(a or b)
    return sorted(seen)

def linked_sha256(module_file: str) -> str:
    """The sha256 a kernel module pins as its ``LINKED_SHA256``: over the stems and the
    sha256 of the sources of ``linked_modules(module_file)``. numba's on-disk cache is
    keyed on each function's own file, so a kernel linking a helper of another module
    would keep stale machine code after an edit there; the pin makes that edit change
    the kernel's file too (tests/anim/test_kernels.py)."""
    import hashlib

    anim = os.path.dirname(os.path.dirname(os.path.abspath(module_file)))
    files = {os.path.splitext(os.path.basename(p))[0]: p
             for p in glob.glob(os.path.join(anim, "*", "*.py"))}
    h = hashlib.sha256()
    for stem in linked_modules(module_file):
        with open(files[stem], "rb") as f:
            h.update(stem.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def _probe():                     # the function whose cache folder is the kernels' (same file)
    return 0


def cache_setting(module_file: str) -> bool:
    """The ``cache=`` for the njit kernels defined in ``module_file`` (see the module
    docstring); a corrupt cache is set aside first, with one line on stderr."""
    from numba import njit
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False):
        return False
    # before numba's first compile or cache load (the probe below is one): its BLAS check
    # answered without importing scipy.linalg (anim/engine/numbastart.py)
    from scuffle.anim.engine.numbastart import defer_blas_check
    defer_blas_check()
    try:
        probe = njit(cache=True)(_probe)
    except RuntimeError:                    # numba: "cannot cache function ...: no locator available"
        where = os.path.join(os.path.dirname(os.path.abspath(module_file)), "__pycache__")
        NO_CACHE.append(f"numba has no writable cache folder (not NUMBA_CACHE_DIR, {where} nor ~/.cache)")
        return False
    path = getattr(getattr(probe, "_cache", None), "_cache_path", None)
    if not path:
        return True
    stem = os.path.splitext(os.path.basename(module_file))[0]
    try:
        moved = check_cache_folder(path, stem)
    except OSError as exc:                  # a corrupt cache that cannot be moved: do without it
        NO_CACHE.append(f"numba's cache in {path} is corrupt and cannot be set aside ({exc.strerror or exc})")
        return False
    if moved:
        SET_ASIDE.extend(moved)
        import logging
        logging.getLogger("scuffle").warning(
            f"numba's cache of the kernels was corrupt: {len(moved)} file(s) set aside in "
            f"{os.path.join(path, SET_ASIDE_FOLDER)}; rebuilding them")
    return True


def check_cache_folder(path: str, stem: str) -> list[str]:
    """Move aside every cache file of a function of ``stem`` (the module's name) whose
    index or data cannot be whole; returns the moved files' names. OSError: the folder
    cannot be changed."""
    import numba

    bad: set[str] = set()                   # the functions' file prefixes ("kernels.step_stacks-1001.py311")
    for index in glob.glob(os.path.join(glob.escape(path), f"{stem}.*.nbi")):
        prefix = os.path.basename(index)[:-len(".nbi")]
        names = _index_names(index, numba.__version__)
        if names is None or any(not _data_whole(os.path.join(path, n)) for n in names):
            bad.add(prefix)
    for data in glob.glob(os.path.join(glob.escape(path), f"{stem}.*.nbc")):
        if os.path.getsize(data) == 0:      # an empty data file, listed or not
            bad.add(os.path.basename(data).rsplit(".", 2)[0])
    moved: list[str] = []
    if not bad:
        return moved
    aside = os.path.join(path, SET_ASIDE_FOLDER)
    os.makedirs(aside, exist_ok=True)
    tag = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    for prefix in sorted(bad):
        files = [prefix + ".nbi"] + [os.path.basename(f) for f in
                                     glob.glob(os.path.join(glob.escape(path), glob.escape(prefix) + ".*.nbc"))]
        for name in files:
            try:
                os.replace(os.path.join(path, name), os.path.join(aside, f"{name}.{tag}"))
            except FileNotFoundError:       # another process set it aside first
                continue
            moved.append(name)
    return moved


def _index_names(index: str, version: str) -> list[str] | None:
    """The data file names an index lists ([] for another numba version's, which numba
    ignores), or None when it cannot be read whole."""
    try:
        with open(index, "rb") as f:        # read with _Skim: no class is imported or built
            found = _Skim(f).load()
            rest = f.read()
        if found != version:
            return []
        _stamp, overloads = _Skim(io.BytesIO(rest)).load()
        return [str(n) for n in dict(overloads).values()]
    except (ImportError, AttributeError):   # whole, but naming a class not importable here
        return []                           # (numba checks it as it loads): not corrupt
    except Exception:                       # empty, cut, or not numba's: corrupt
        return None


class _Any:
    """Whatever a data file's pickle builds: accepts every argument, state and item."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, item):
        pass

    def extend(self, items):
        pass


class _Skim(pickle.Unpickler):
    """Walks a pickle stream to its end without importing or building its classes."""

    def find_class(self, module, name):
        return _Any


def _data_whole(path: str) -> bool:
    """Whether a data file's pickle stream is whole (a missing file counts as whole:
    numba then recompiles by itself)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if len(data) < 2 or data[-1:] != b"." or data[:1] != b"\x80":
        return False
    try:
        _Skim(io.BytesIO(data)).load()
    except (EOFError, pickle.UnpicklingError):
        return False
    except Exception:                       # a construct the skim cannot mimic: not a cut
        return True
    return True
