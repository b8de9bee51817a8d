"""The cold compile's notice: whether numba's on-disk cache holds the engine's kernels,
and the one line the library logs (logger ``scuffle``) before the first step compiles
them (once per install: ``cache=True`` keeps the machine code next to anim/kernels.py).

A module of its own so that the batch driver (anim/batch.py) can call it on its first
kernel call without importing the warm-up (anim/warmup.py imports the player).
"""
from __future__ import annotations

import logging

from . import kernels as K

__all__ = ["LOGGER", "COMPILE_MESSAGE", "COMPILED_MESSAGE", "NO_CACHE_MESSAGE", "ANNOUNCED", "kernels_cached",
           "cold_notice", "note_cold_compile"]

LOGGER = logging.getLogger("scuffle")
COMPILE_MESSAGE = ("compiling the animation kernels (once per install: numba caches them for later runs; "
                   "about 15-30 s)...")
COMPILED_MESSAGE = "kernels compiled (cached for the next runs)"
NO_CACHE_MESSAGE = ("{why}; compiling the animation kernels for this run only "
                    "(set NUMBA_CACHE_DIR to a writable folder to keep them)...")

ANNOUNCED: list[bool] = []        # the notice's once-per-process flag (shared with anim.warmup)


def kernels_cached() -> bool:
    """Whether numba's on-disk cache holds the engine's kernels (False: the first step will
    compile them, ~15-30 s on a busy 2-core machine)."""
    import glob
    import os

    if not K.CACHE:                       # no writable cache folder (anim/jitcache.py)
        return False
    path = getattr(getattr(K.step_stacks, "_cache", None), "_cache_path", None)
    if not path:
        return False
    try:
        source = os.path.getmtime(K.__file__)
    except OSError:
        return False
    for name in ("step_stacks", "pose_stacks", "pose_plan", "flush_release", "flush_anim_ids", "root_motion_step"):
        index = glob.glob(os.path.join(path, f"kernels.{name}-*.nbi"))
        # an index older than the source is stale: numba recompiles (and rewrites it)
        if not index or max(os.path.getmtime(f) for f in index) < source:
            return False
    return True


def cold_notice() -> bool:
    """Log why the kernels are about to compile, if they are (WARNING on the ``scuffle``
    logger): COMPILE_MESSAGE when the cache is cold, NO_CACHE_MESSAGE when numba has no
    writable cache folder, nothing under NUMBA_DISABLE_JIT=1 (nothing compiles) or when
    the cache holds them. Returns whether they will compile."""
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False):
        return False
    if not K.CACHE:
        from .jitcache import NO_CACHE
        LOGGER.warning(NO_CACHE_MESSAGE.format(why=NO_CACHE[0] if NO_CACHE else "numba's cache is off"))
        return True
    if kernels_cached():
        return False
    LOGGER.warning(COMPILE_MESSAGE)
    return True


def note_cold_compile() -> bool:
    """Once per process (the library's first step or sample calls it): ``cold_notice``
    before the kernels compile. Returns whether it logged."""
    if ANNOUNCED:
        return False
    ANNOUNCED.append(True)
    return cold_notice()


