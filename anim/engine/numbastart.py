"""numba's start without scipy's linear algebra: the BLAS check numba makes when it
first compiles or loads a function, answered without importing ``scipy.linalg``.

What goes in: nothing; ``defer_blas_check()`` is called by anim.engine.jitcache's
``cache_setting``, which every kernel module asks before it compiles anything. What comes
out: ``numba.np.arraymath`` imported, its ``_HAVE_BLAS`` what numba's own check would
have found, and ``scipy.linalg`` not imported (about 17 MB of a game's resident set).

Why: the first compile or cache load of any numba function runs numba's
``CPUContext.refresh``, which imports ``numba.np.arraymath``; at its import that module
sets ``_HAVE_BLAS`` by calling ``numba.np.linalg.ensure_blas()``, which imports
``scipy.linalg.cython_blas`` wherever scipy is installed. scipy.linalg brings its array-API
layer, which runs ``from numpy import *`` and so loads numpy's lazy submodules (numpy.f2py
with every text codec, numpy.testing with unittest, numpy.ma) and pydoc. No kernel of ours
uses BLAS or LAPACK; the flag only picks the inner product of numba's ``np.convolve`` and
``np.correlate`` (BLAS's ``np.dot`` where it is there, a loop otherwise).

How: while ``numba.np.arraymath`` is imported here, its check is handed a probe that
looks for scipy's compiled ``linalg/cython_blas`` module in scipy's own package folder (the import system's answer, from the spec of the ``scipy``
numba's start has already imported) and, when it is there, runs numba's own ABI check of
it (``_check_lapack_int_width``, which reads only ``scipy.__config__``); where no such file
is found (scipy laid out otherwise, or absent) the probe is numba's own ``ensure_blas``, as
without scuffle. Then ``numba.np.linalg.ensure_blas`` and ``arraymath.ensure_blas`` are
numba's own again, so a later ``np.dot`` or ``np.linalg`` call in anyone's ``@njit`` code
imports ``scipy.linalg.cython_blas`` when it compiles, as numba does for every other user
of it. No entry of ``sys.modules`` is set or removed by hand: a program that imports
scipy later gets it whole. Another thread calling ``ensure_blas`` meanwhile gets numba's own (the probe
answers only the importing thread), and one importing ``numba.np.arraymath`` at the same
time is held by Python's import lock until this import is done, then finds it whole.
No lock of numba's is taken (a kernel module's import holding numba's compiler lock
could wait on a thread compiling under it that imports the same module).

What it does not change: nothing where ``numba.np.arraymath`` is already imported (numba
already compiled something in this process), where ``scipy.linalg.cython_blas`` is already
imported, or under a numba release whose ``numba.np.linalg`` has no ``ensure_blas`` or
``_check_lapack_int_width`` (numba's own start then runs, scipy and all). The one case
it answers otherwise than numba: a scipy whose ``cython_blas`` file is there but fails to
import (a broken install), where numba would fall back to the loop and a later
``np.convolve`` in ``@njit`` code raises numba's "scipy 0.16+ is required" instead.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import threading

__all__ = ["defer_blas_check", "blas_file_present"]

_DONE = False


def blas_file_present() -> bool:
    """Whether scipy's compiled ``linalg/cython_blas`` extension sits in the folder the
    import system would load ``scipy.linalg`` from; imports nothing beyond ``scipy``'s
    spec (numba's start imports ``scipy`` itself where it is installed)."""
    try:
        spec = importlib.util.find_spec("scipy")
    except (ImportError, ValueError):           # scipy blocked (None in sys.modules) or broken
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            if os.path.isfile(os.path.join(folder, "linalg", "cython_blas" + suffix)):
                return True
    return False


def defer_blas_check() -> None:
    """Import ``numba.np.arraymath`` with its BLAS check answered without importing
    ``scipy.linalg`` (module docstring); does nothing after its first call or where there
    is nothing to gain. Raises what numba's own check raises (its RuntimeError on a
    scipy built for another BLAS integer width than numba)."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    if "numba.np.arraymath" in sys.modules or "scipy.linalg.cython_blas" in sys.modules:
        return
    from numba.np import linalg

    real = getattr(linalg, "ensure_blas", None)
    width_check = getattr(linalg, "_check_lapack_int_width", None)
    if real is None or width_check is None:
        return
    me = threading.get_ident()

    def probe() -> None:
        if threading.get_ident() != me or not blas_file_present():
            real()
            return
        width_check()

    linalg.ensure_blas = probe
    try:
        from numba.np import arraymath
    finally:
        linalg.ensure_blas = real
    if getattr(arraymath, "ensure_blas", None) is probe:
        arraymath.ensure_blas = real
