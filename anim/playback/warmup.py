"""Loading the compiled engine's kernels: from numba's on-disk cache, or compiling them
on an install's first run (about 10 s on 2 idle cores, up to 30 s on a busy machine; ``cache=True`` keeps the
machine code next to anim/kernels_*.py, in __pycache__, or in NUMBA_CACHE_DIR: once per
install, not once per machine).

The library announces a cold compile itself, once per process, through ``logging``
(the logger ``scuffle``, level WARNING, so an unconfigured host sees it on stderr): the
first step or sample that finds the kernels it needs not cached logs ``COMPILE_MESSAGE``
before they compile (``note_cold_compile``); it compiles only what it runs, and the other
kernels compile in a background process (anim.engine.coldstart.compile_rest), so the next run
finds them all and says nothing. A few humans' first steps run the kernels as Python
while that background process compiles them all (anim.engine.interpret, its own
notice). ``compile_kernels`` runs a tiny crowd through every kernel; ``warm``
(``scuffle.warm()``, ``scuffle warm``) compiles them all ahead, for a loading screen;
``announce_compile`` is the command line's notice (the bench's compiles them all ahead),
through the same logger. A host that wants silence:
``logging.getLogger("scuffle").setLevel(logging.ERROR)``. With no folder numba can
write, the notice says the kernels compile for the run only
(``NO_CACHE_MESSAGE``); under NUMBA_DISABLE_JIT=1 nothing compiles and nothing is said.
A corrupt cache is set aside when a kernel module (anim/kernels_*.py) is imported (anim/engine/jitcache.py).
"""
from __future__ import annotations

import numpy as np

from scuffle.anim.engine import kernels as K, snapcheck
from scuffle.anim.engine.coldstart import ANNOUNCED as _ANNOUNCED
from scuffle.anim.engine.coldstart import (COMPILE_MESSAGE, COMPILED_MESSAGE, LOGGER, NO_CACHE_MESSAGE, SNAPSHOT_KERNELS,
                        WARM_MESSAGE, all_cached, cold_notice, kernel_cached, kernels_cached, note_cold_compile)
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.playback.player import Player
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.playback.recipe import Arg, ClipStep, GaitStep, LoopStep, Place, Recipe
from scuffle.anim.engine.stack import CharacterInstance

__all__ = ["warm", "compile_rest_child", "compile_kernels", "compile_digests", "CHECKSUM_TABLES", "kernels_cached", "all_cached", "announce_compile", "note_cold_compile",
           "COMPILE_MESSAGE", "WARM_MESSAGE", "LOGGER"]


def warm(progress=None) -> bool:
    """Compile every animation kernel now (or load them from numba's on-disk cache), so
    that no later step or command of this process, nor of any later run, compiles: a
    game's loading screen calls it. ``progress(message)`` (optional) is told the line
    "compiling the animation kernels ..." when they compile (a cold cache), before
    they do; the ``scuffle`` logger says nothing here. Returns whether they compiled
    (False: all were cached, and only loaded, in well under a second). Under
    NUMBA_DISABLE_JIT=1 nothing compiles (the kernels run as Python) and it returns False.

    The snapshot file's kernels (anim.engine.snapkernel) are compiled into the cache when
    they are missing from it, but a cached one is left there: a game that never writes or
    reads a snapshot file does not hold them (about 2 MB), and its first file loads them
    (about 50 ms)."""
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False):
        return False
    cold = not all_cached()
    if cold and progress is not None:
        progress(WARM_MESSAGE if K.CACHE else NO_CACHE_MESSAGE.format(why="numba has no writable cache folder"))
    _ANNOUNCED.append(True)            # this process has said what there is to say
    compile_kernels(files=not all(kernel_cached(n, "snapkernel") for n in SNAPSHOT_KERNELS))
    return cold


def announce_compile(ahead: bool = False) -> None:
    """Once per process, for the command line (which shows the ``scuffle`` logger on
    stderr) before the commands that step humans: when the kernels a step needs are not
    cached, say so now (COMPILE_MESSAGE; without a cache folder NO_CACHE_MESSAGE; nothing
    under NUMBA_DISABLE_JIT=1): the first step compiles them, the rest compile in the
    background (anim.engine.coldstart.compile_rest). ``ahead`` (the bench, which times every
    kernel) compiles all of them now instead when any is missing (WARM_MESSAGE, then
    COMPILED_MESSAGE). Where a few humans' first steps may run the kernels as Python while
    they compile (anim.engine.interpret.why_not), nothing is said now: the first step says
    which it does (interpret.MESSAGE, or COMPILE_MESSAGE for a crowd)."""
    if _ANNOUNCED:
        return
    if not ahead:
        from scuffle.anim.engine import interpret

        if interpret.why_not(0) is not None:
            note_cold_compile()
        return
    _ANNOUNCED.append(True)
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False) or all_cached():
        return
    if not K.CACHE:
        cold_notice()
    else:
        LOGGER.warning(WARM_MESSAGE)
    compile_kernels()
    if K.CACHE:
        LOGGER.warning(COMPILED_MESSAGE)


def _no_op(inst) -> None:
    """The warm-up loop's wrap callback (a human with one takes the scalar step and a plan)."""


def compile_kernels(progress=None, files: bool = True) -> None:
    """Compile (or load from numba's on-disk cache) every kernel the compiled engine calls,
    by running a tiny crowd through it: a loop, a gait under a fade, a clip in its blend
    window, types 10, 11 and 13, a loop with a wrap callback (the scalar step: a plan), the
    flush of what they release (flush_release, flush_anim_ids), a prepared command's rows
    (anim.engine.cmdkernel.run_rows, apply_commands), a batch of them and gait targets as
    columns (buffer_commands, gait_targets), then root motion; with ``files``
    the snapshot file's kernels too (anim.engine.snapcheck.compile_kernels). ``progress(msg)``
    is told first (callers time it: the simulation reads no clock).

    The first run of an install compiles (cache=True keeps the machine code next to
    anim/kernels_*.py, in __pycache__); later processes only load it.
    """
    from scuffle.anim.engine import coldstart, interpret

    # compiled now: the kernels no longer run as Python (anim.engine.interpret)
    interpret.force(False)
    # the warm-up's steps run step_stacks whole (a process that has warmed never runs step_lean)
    coldstart.FULL_ONLY.append(True)
    coldstart.STEP_KERNEL[0] = "step_stacks"
    if not coldstart.BACKGROUND:
        # this process compiles every kernel itself: its steps below start no background
        # compile of the rest (anim.engine.coldstart.compile_rest), which would compile them twice
        coldstart.BACKGROUND.append(None)
    if progress is not None:
        progress("scuffle: " + COMPILE_MESSAGE)
    rot = {1: [(0, (0.0, 0.0, 0.0, 1.0)), (8, (0.1, 0.0, 0.0, 0.995))]}
    clips = {i: author_clip(f"k{i}", 8 + 2 * i, rotations=rot, events=[make_event(2, 11, word=1)])
             for i in range(8)}
    aset = AnimSet.build(clips, {i: author_range() for i in range(8)}, name="kernels")
    p = Player()
    p.prepared.compile_direct()                     # the handle calls' writers compiled by the calls below
    hs = [CharacterInstance(aset, f"k{i}") for i in range(7)]
    p.change(hs[0], p.loop(hs[0], 0), 0.0)
    p.change(hs[1], p.gait(hs[1], [0, 1, 2, 3, 3], target=1.5, value=1.0), 0.2)
    p.change(hs[2], p.clip(hs[2], 1, p.loop(hs[2], 2), blend=0.3), 0.0)
    p.change(hs[3], p.mix(hs[3], 3, 4, weight=0.5), 0.0)           # a type 10
    p.change(hs[5], p.pick(hs[5], [0, 1, 2, 3], 1.0, value=1.0), 0.0)   # a type 11
    p.change(hs[6], p.direction(hs[6], 0, direction=2.3), 0.0)      # a type 13 (ids 0-7)
    p.change(hs[4], p.loop(hs[4], 4, on_wrap=_no_op), 0.0)         # a wrap callback: the plan kernel
    p.flush()
    for _ in range(12):
        p.step(hs)
        b = p.pose(hs)
        p.flush()
    # a prepared command: learned by its first run, its rows in one compiled call by the second
    cmd = p.prepare(Recipe(Place.CHANGE, (ClipStep(1, blend=0.1), GaitStep((0, 1, 2, 3, 3), target=Arg(0))),
                           fade=0.1))
    p.run(hs[0], cmd, 1.5)
    p.run(hs[1], cmd, 2.5)                          # a row of the command buffer (apply_commands)
    p.flush()
    # prepared commands as columns (buffer_commands) and gait targets as columns (gait_targets)
    p.commands([cmd, cmd], hs[4:6], [(1.5,), (2.5,)])
    p.set_gait_targets(hs[:2], [1.0, 2.0])
    p.flush()
    # one of more steps than a buffer's row holds: at once (run_rows)
    long = p.prepare(Recipe(Place.PUSH, (ClipStep(1), ClipStep(2), ClipStep(3), ClipStep(4), LoopStep(0))))
    p.run(hs[2], long)
    p.run(hs[3], long)
    p.flush()
    p.sample(hs)
    n = len(hs)
    K.root_motion_step(np.arange(n, dtype=np.int64), b.poses.vel, b.poses.tag, b.poses.rot, np.zeros(n),
                       np.zeros(n, np.bool_), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n), 1.0 / 30.0, 50.0,
                       np.empty((n, 3)))
    compile_digests()                             # a checksum's (Game.checksum, a snapshot's)
    if files:
        snapcheck.compile_kernels()               # a snapshot file's packing and checks


# the tables a state's checksum hashes (game.runtime.snapfile's saved tables: the engine's
# four, the humans, the bodies and the combats); tests/anim/test_warm.py checks a Game's
# checksum compiles nothing after the warm-up
CHECKSUM_TABLES = 7


def compile_digests() -> None:
    """Compile (or load) the checksum's kernels (anim.engine.digest ``_many_digest``, the
    tables' blocks one by one, and ``_arena_digest``, the tables side by side in one
    buffer) for the argument types a Game's checksum gives them: CHECKSUM_TABLES blocks
    of bytes, int64 plans, an int seed; on empty tables."""
    from scuffle.anim.engine import digest

    n = CHECKSUM_TABLES
    plan, at, whole = np.zeros((0, 3), np.int64), np.zeros(n + 1, np.int64), np.zeros((0, 3), np.int64)
    offs, caps = np.zeros(n, np.int64), np.zeros(n, np.int64)
    digest.digests_with((None, plan, at, whole, at, offs, caps), tuple(np.zeros(8, np.uint8) for _ in range(n)))
    digest.digests_in((plan, at, whole, at, offs, caps), np.zeros(8, np.uint8))


def compile_rest_child(cfg: dict) -> int:
    """The child of anim.engine.coldstart.compile_rest: at low priority, copy the cached kernels' files from
    the cache (``cfg["targets"]``) into its private one (so the warm-up loads them), run
    the warm-up crowd (anim.playback.warmup.compile_kernels, which compiles the others), then
    install the kernels of ``cfg["missing"]`` into the cache (``install_cached``); its
    private folder ``cfg["scratch"]`` is removed however it ends. Returns the exit code:
    0 done, 2 another anim/engine/kernels.py than the parent's, 3 no cache here."""
    import shutil

    try:
        return _compile_rest(cfg)
    finally:
        shutil.rmtree(cfg["scratch"], ignore_errors=True)


def _compile_rest(cfg: dict) -> int:
    """compile_rest_child's work (its folder removed by the caller)."""
    import glob
    import os
    import shutil

    from scuffle.anim.engine.coldstart import _cache_path, install_cached

    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
    if os.path.realpath(K.__file__) != cfg["source"]:
        return 2
    if not K.CACHE:
        return 3
    missing = set(cfg["missing"])
    for key, target in cfg["targets"].items():
        mod, name = key.split(".")
        here = _cache_path(name, mod)
        if not here:
            return 3
        if key in missing or not target or not os.path.isdir(target):
            continue
        os.makedirs(here, exist_ok=True)
        for f in glob.glob(os.path.join(glob.escape(target), glob.escape(f"{mod}.{name}-") + "*")):
            if f.endswith((".nbi", ".nbc")):
                shutil.copyfile(f, os.path.join(here, os.path.basename(f)))
    compile_kernels()
    for key in sorted(missing):
        mod, name = key.split(".")
        here = _cache_path(name, mod)
        if here:
            install_cached(here, cfg["targets"][key], f"{mod}.{name}-")
    return 0
