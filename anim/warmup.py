"""Loading the compiled engine's kernels: from numba's on-disk cache, or compiling them
on a machine's first run (about 15-30 s on a busy 2-core machine; ``cache=True`` keeps the
machine code next to anim/kernels.py, in __pycache__, or in NUMBA_CACHE_DIR).

``compile_kernels`` runs a tiny crowd through every kernel; ``announce_compile`` does it
once per process with a progress line when the cache is cold (the command line calls it
before the commands that step humans; the library itself prints nothing), says once that
the kernels compile for the run only when numba has no writable cache folder, and says
nothing under NUMBA_DISABLE_JIT=1 (nothing compiles). A corrupt cache is set aside when
anim/kernels.py is imported (anim/jitcache.py).
"""
from __future__ import annotations

import numpy as np

from . import kernels as K
from .animset import AnimSet
from .clip import author_clip, make_event
from .player import Player
from .rangelist import author_range
from .stack import CharacterInstance

__all__ = ["compile_kernels", "kernels_cached", "announce_compile"]


_ANNOUNCED: list[bool] = []


def kernels_cached() -> bool:
    """Whether numba's on-disk cache holds the engine's kernels (False: the first step will
    compile them, ~15-30 s on a busy 2-core machine)."""
    import glob
    import os

    if not K.CACHE:
        return False
    path = getattr(getattr(K.step_stacks, "_cache", None), "_cache_path", None)
    if not path:
        return False
    try:
        source = os.path.getmtime(K.__file__)
    except OSError:
        return False
    for name in ("step_stacks", "pose_stacks", "pose_plan", "root_motion_step"):
        index = glob.glob(os.path.join(path, f"kernels.{name}-*.nbi"))
        # an index older than the source is stale: numba recompiles (and rewrites it)
        if not index or max(os.path.getmtime(f) for f in index) < source:
            return False
    return True


def announce_compile() -> None:
    """Once per process: if the kernels are not cached yet, compile them now, with a
    progress line on stderr (a fresh clone's first run, instead of a silent pause). The
    command line calls it before the commands that step humans; the library itself
    prints nothing (a first use then compiles silently)."""
    if _ANNOUNCED:
        return
    _ANNOUNCED.append(True)
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False):    # NUMBA_DISABLE_JIT=1: plain Python, nothing to compile
        return
    import sys

    if not K.CACHE:                      # no writable cache folder: say so once, compile for this run
        from .jitcache import NO_CACHE
        why = NO_CACHE[0] if NO_CACHE else "numba's cache is off"
        print(f"scuffle: {why}; compiling the animation kernels for this run only "
              "(set NUMBA_CACHE_DIR to a writable folder to keep them)...", file=sys.stderr, flush=True)
        compile_kernels()
        return
    if not kernels_cached():
        compile_kernels(lambda msg: print(msg, file=sys.stderr, flush=True))
        print("scuffle: kernels compiled (cached for the next runs)", file=sys.stderr, flush=True)


def compile_kernels(progress=None) -> None:
    """Compile (or load from numba's on-disk cache) every kernel the compiled engine calls,
    by running a tiny crowd through it: a loop, a gait under a fade, a clip in its blend
    window, a type 10 mix (a plan), then root motion. ``progress(msg)`` is told first (callers time it:
    the simulation reads no clock).

    The first run on a machine compiles (cache=True keeps the machine code next to
    anim/kernels.py, in __pycache__); later processes only load it.
    """
    if progress is not None:
        progress("scuffle: compiling the animation kernels (once per machine)...")
    rot = {1: [(0, (0.0, 0.0, 0.0, 1.0)), (8, (0.1, 0.0, 0.0, 0.995))]}
    clips = {i: author_clip(f"k{i}", 8 + 2 * i, rotations=rot, events=[make_event(2, 11, word=1)])
             for i in range(5)}
    aset = AnimSet.build(clips, {i: author_range() for i in range(5)}, name="kernels")
    p = Player()
    hs = [CharacterInstance(aset, f"k{i}") for i in range(4)]
    p.change(hs[0], p.loop(hs[0], 0), 0.0)
    p.change(hs[1], p.gait(hs[1], [0, 1, 2, 3, 3], target=1.5, value=1.0), 0.2)
    p.change(hs[2], p.clip(hs[2], 1, p.loop(hs[2], 2), blend=0.3), 0.0)
    p.change(hs[3], p.mix(hs[3], 3, 4, weight=0.5), 0.0)           # a type 10: the plan kernel
    p.flush()
    for _ in range(12):
        p.step(hs)
        b = p.pose(hs)
        p.flush()
    p.sample(hs)
    n = len(hs)
    K.root_motion_step(np.arange(n, dtype=np.int64), b.poses.vel, b.poses.tag, b.poses.rot, np.zeros(n),
                       np.zeros(n, np.bool_), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n), 1.0 / 30.0, 50.0,
                       np.empty((n, 3)))
