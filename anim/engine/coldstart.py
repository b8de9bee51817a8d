"""The cold compile's notice: whether numba's on-disk cache holds the engine's kernels,
and the one line the library logs (logger ``scuffle``) before the first step compiles
them (once per install: ``cache=True`` keeps the machine code next to anim/kernels_*.py).

A module of its own so that the batch driver (anim/playback/batch.py) can call it on its first
kernel call without importing the warm-up (anim/playback/warmup.py imports the player).

The two big kernels compile side by side on a cold cache (a shorter first step on a
fresh install): numba compiles one function at a time, so on its first kernel
call the batch driver asks ``compile_aside`` to compile the other big kernel in a child
process (for the very argument types it will be called with) while this process
compiles the one it calls; before it calls the other one, ``await_kernel`` waits for the
child, and numba then loads the kernel from its on-disk cache instead of compiling it;
while the child is still at it, this process compiles the small kernels a first step
calls next (``MEANWHILE``: root_motion_step), which would otherwise follow the wait.
Only when it can help and cannot harm: a writable cache (not under NUMBA_DISABLE_JIT=1,
nor with no cache folder), the kernel not cached yet, two cores or more for this
process, and ``SCUFFLE_COMPILE_ASIDE`` not ``0``. The child compiles into a folder of its
own (a private NUMBA_CACHE_DIR: two processes writing one function's index at once can
pair an index entry with the other's data file) and then installs that kernel's files
into this process's cache folder, each data file then the index, every file written
under a temporary name and renamed (``install_cached``): a reader never sees a cut file
or an index naming a missing one. The indexes are read and merged as pickle opcodes
(anim.engine.cacheindex), never unpickled here. A child that fails or is slow changes nothing but the
time: numba compiles the kernel here as it always did. A process that ends before it
calls the other kernel does not wait: its child finishes on its own, installs the
kernel for the next run and removes its folder.

The rest compiles in the background (``compile_rest``): at its second step a process
whose cache lacks some kernel (the prepared commands' ``run_rows``, a flush kernel
its first update did not call) starts one detached child at low priority
that loads what is cached, compiles the rest through the warm-up crowd
(anim.playback.warmup.compile_kernels) in a private folder and installs the kernels that were
missing, so the next run finds every kernel and says nothing. ``anim.playback.warmup.warm``
(``scuffle.warm()``, ``scuffle warm``) compiles all of them ahead instead, for a game's
loading screen.
"""
from __future__ import annotations

import glob
import json
import logging
import os
import sys
import time

from scuffle.anim.engine import kernels as K
from scuffle.anim.engine.cmdkernel import HANDLE_KERNELS

__all__ = ["sig_plain", "sig_from_plain", "DIGEST_KERNELS", "COMPILED_ASIDE", "LOGGER", "COMPILE_MESSAGE", "WARM_MESSAGE", "COMPILED_MESSAGE", "NO_CACHE_MESSAGE", "ANNOUNCED",
           "kernels_cached", "kernel_ready", "ALL_KERNELS", "SNAPSHOT_KERNELS", "all_cached", "cache_folder", "compile_rest", "BACKGROUND",
           "cold_notice", "note_cold_compile", "REST_ENV", "ENGINE_KERNELS", "kernel_cached", "aside_allowed", "compile_aside", "await_kernel",
           "ASIDE", "ASIDE_LOG", "ASIDE_ENV", "ASIDE_TIMEOUT_S", "install_cached", "compile_child", "MEANWHILE",
           "meanwhile", "root_motion_args", "STEP_KERNEL", "POSE_KERNEL", "LEAN_OF", "WHOLE_OF", "LEAN_ENV",
           "lean_first_step", "lean_first_pose", "first_step_cached",
           "rest_installed", "COLD_START_ONLY"]

LOGGER = logging.getLogger("scuffle")
COMPILE_MESSAGE = ("compiling the animation kernels (once per install: numba caches them for later runs; "
                   "the ones a step needs now, about 5-20 s, the others in the background)...")
WARM_MESSAGE = ("compiling the animation kernels (once per install: numba caches them for later runs; "
                "all of them now, about 15-40 s)...")
COMPILED_MESSAGE = "kernels compiled (cached for the next runs)"
NO_CACHE_MESSAGE = ("{why}; compiling the animation kernels for this run only "
                    "(set NUMBA_CACHE_DIR to a writable folder to keep them)...")

ANNOUNCED: list[bool] = []        # the notice's once-per-process flag (shared with anim.playback.warmup)
# the kernels a Game's step calls (pose_plan, anim.engine.plan's, is not one: a step never compiles it)
ENGINE_KERNELS = ("step_stacks", "pose_stacks", "flush_release", "flush_anim_ids", "root_motion_step")
# the snapshot file's packing and checks (anim.engine.snapkernel: every file written or read)
SNAPSHOT_KERNELS = ("pack_tables", "pack_rows", "unpack_rows", "check_rows", "check_ids_rows", "check_tagged_rows")
# a state's checksum (anim.engine.digest: Game.checksum, a snapshot's, a file's): the tables'
# blocks one by one, or where they lie side by side in one buffer
DIGEST_KERNELS = ("_many_digest", "_arena_digest")
# every kernel a game may call, as (module of scuffle.anim.engine, name): the engine's, the
# prepared commands' (anim.engine.cmdkernel: one at once, the command buffer, a batch as columns,
# gait targets as columns) and the handle calls' (HANDLE_KERNELS: a constructor's clip or gait, a
# change), the checksum's (anim.engine.digest) and the snapshot
# file's (anim.engine.snapkernel); not those of COMPILED_ASIDE nor COLD_START_ONLY
ALL_KERNELS = tuple((K.MODULE_OF[n], n) for n in ENGINE_KERNELS) + (("cmdkernel", "run_rows"),
                                                                     ("cmdkernel", "apply_commands"),
                                                                     ("cmdkernel", "buffer_commands"),
                                                                     ("cmdkernel", "gait_targets")) + tuple(
    ("cmdkernel", n) for n in HANDLE_KERNELS) + tuple(
    ("digest", n) for n in DIGEST_KERNELS) + tuple(("snapkernel", n) for n in SNAPSHOT_KERNELS)
# the compiled functions Python may call that no game calls, so the warm-up leaves them out,
# as (module of scuffle.anim.engine, name): why
COMPILED_ASIDE = {("kernels_pose", "pose_plan"): "the pose pipeline alone: tests, tools and the bench"}
BACKGROUND: list = []             # the child compiling the rest (compile_rest), once per process
LEAN_ENV = "SCUFFLE_COMPILE_LEAN"  # "0": the first step compiles step_stacks and pose_stacks whole
# the step kernel a single-threaded step calls (anim.playback.batch): "step_stacks", or
# "step_lean" from a fresh install's first step (``lean_first_step``) until a human needs
# what only step_stacks runs or the background compile has installed step_stacks
STEP_KERNEL: list[str] = ["step_stacks"]
# the pose kernel a single-threaded pose calls: "pose_stacks", or "pose_lean" likewise
# (``lean_first_pose``; the pose runs on one thread while it is lean)
POSE_KERNEL: list[str] = ["pose_stacks"]
# the kernels compiled only on a cold start, never by the warm-up (not in ALL_KERNELS):
# the first step's step_lean and pose_lean, which a process with the whole kernels cached
# never calls
COLD_START_ONLY = (("kernels_step", "step_lean"), ("kernels_pose", "pose_lean"))
# each whole kernel's lean form, and each lean kernel's whole one
LEAN_OF = {"step_stacks": "step_lean", "pose_stacks": "pose_lean"}
WHOLE_OF = {lean: whole for whole, lean in LEAN_OF.items()}


def _lean_first(whole: str) -> bool:
    """Whether this process's first steps run the lean form of kernel ``whole``: numba
    compiles (not NUMBA_DISABLE_JIT=1), ``whole`` is neither compiled in this process nor
    in the on-disk cache, no warm-up has run here and ``SCUFFLE_COMPILE_LEAN`` is not ``0``."""
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False) or os.environ.get(LEAN_ENV, "") == "0" or FULL_ONLY:
        return False
    return not kernel_ready(whole)


def lean_first_step() -> bool:
    """Whether this process's first steps run ``step_lean`` (anim.engine.kernels_step): numba
    compiles (not NUMBA_DISABLE_JIT=1), ``step_stacks`` is neither compiled in this process
    nor in the on-disk cache, no warm-up has run here (``STEP_KERNEL``) and
    ``SCUFFLE_COMPILE_LEAN`` is not ``0``. ``step_stacks`` compiles in the background then
    (``compile_rest``), or here when a human first needs it."""
    return _lean_first("step_stacks")


def lean_first_pose() -> bool:
    """Whether this process's first poses run ``pose_lean`` (anim.engine.kernels_pose): as
    ``lean_first_step``, for ``pose_stacks``."""
    return _lean_first("pose_stacks")


FULL_ONLY: list = []              # set by the warm-up (anim.playback.warmup.compile_kernels): never lean


def rest_installed() -> bool:
    """Whether this process's background compile (``compile_rest``) has ended and
    installed what was missing (exit code 0): a lean step or pose may then load the whole
    kernel."""
    child = BACKGROUND[0] if BACKGROUND else None
    return child is not None and child.poll() == 0


def first_step_cached() -> bool:
    """Whether numba's on-disk cache holds the kernels a first step calls: the engine's
    (``kernels_cached``), with step_lean for step_stacks and pose_lean for pose_stacks
    where the first steps run them."""
    lean = {"step_stacks": STEP_KERNEL[0] == "step_lean" or lean_first_step(),
            "pose_stacks": POSE_KERNEL[0] == "pose_lean" or lean_first_pose()}
    return all(kernel_cached(LEAN_OF[name] if lean.get(name) else name) for name in ENGINE_KERNELS)


def kernels_cached() -> bool:
    """Whether numba's on-disk cache holds the engine's kernels (False: the first step will
    compile them, ~10-30 s on a busy 2-core machine)."""
    return all(kernel_cached(name) for name in ENGINE_KERNELS)


def _module(mod: str):
    """scuffle.anim.<mod> (a kernel module: kernels_step, kernels_pose, ..., or cmdkernel)."""
    import importlib
    return importlib.import_module(f"{__package__}.{mod}")


def _cache_path(name: str, mod: str | None = None) -> str | None:
    """The folder numba's on-disk cache keeps kernel ``name`` of anim.<mod> in (None: no cache)."""
    if not K.CACHE:                       # no writable cache folder (anim/engine/jitcache.py)
        return None
    mod = mod or K.MODULE_OF[name]
    return getattr(getattr(getattr(_module(mod), name), "_cache", None), "_cache_path", None) or None


def cache_folder() -> str | None:
    """The folder numba's on-disk cache keeps the engine's kernels in (None: no cache)."""
    return _cache_path("step_stacks")


def kernel_cached(name: str, mod: str | None = None) -> bool:
    """Whether numba's on-disk cache holds an index of kernel ``name`` (of anim.<mod>)
    no older than its source file (an older one is stale: numba recompiles and rewrites it)."""
    mod = mod or K.MODULE_OF[name]
    path = _cache_path(name, mod)
    if not path:
        return False
    try:
        source = os.path.getmtime(_module(mod).__file__)
    except OSError:
        return False
    index = glob.glob(os.path.join(glob.escape(path), f"{mod}.{name}-*.nbi"))
    return bool(index) and max(os.path.getmtime(f) for f in index) >= source


def kernel_ready(name: str, mod: str | None = None) -> bool:
    """Whether kernel ``name`` (of anim.<mod>) runs without compiling: this process has
    loaded or compiled it already (its dispatcher holds a signature: no look at the cache
    folder, whose listing costs about a millisecond a kernel), or numba's on-disk cache
    holds it (``kernel_cached``)."""
    mod = mod or K.MODULE_OF[name]
    if getattr(getattr(_module(mod), name, None), "signatures", None):
        return True
    return kernel_cached(name, mod)


def all_cached() -> bool:
    """Whether numba's on-disk cache holds every kernel a process may call (ALL_KERNELS)."""
    return all(kernel_cached(name, mod) for mod, name in ALL_KERNELS)


def cold_notice() -> bool:
    """Log why the kernels are about to compile, if they are (WARNING on the ``scuffle``
    logger): COMPILE_MESSAGE when the cache is cold, NO_CACHE_MESSAGE when numba has no
    writable cache folder, nothing under NUMBA_DISABLE_JIT=1 (nothing compiles) or when
    the cache holds them. Returns whether they will compile."""
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False):
        return False
    if not K.CACHE:
        from scuffle.anim.engine.jitcache import NO_CACHE
        LOGGER.warning(NO_CACHE_MESSAGE.format(why=NO_CACHE[0] if NO_CACHE else "numba's cache is off"))
        return True
    if first_step_cached():
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




# ---------------------------------------------------------------- the other kernel, compiled aside

ASIDE_ENV = "SCUFFLE_COMPILE_ASIDE"     # "0": never compile a kernel in a child process
REST_ENV = "SCUFFLE_COMPILE_REST"       # "0": never compile the rest in the background (compile_rest)
ASIDE_TIMEOUT_S = 600.0                 # the longest await_kernel waits for a child (then compiles here)
ASIDE: dict[str, tuple] = {}            # kernel name -> (child process, its private cache folder)
ASIDE_LOG: list[dict] = []              # per kernel compiled aside: its name, whether the child made it,
                                        # the kernels compiled here meanwhile

# the child ends with os._exit once its files are installed: the parent waits for its exit,
# and an interpreter holding numba and LLVM takes a few tenths of a second to tear down
_CHILD_CODE = ("import json, os, sys, time; t = time.perf_counter(); cfg = json.loads(sys.argv[1]); "
               "sys.path[:0] = cfg['path']; cfg['launched'] = t; "
               "from scuffle.anim.engine.coldstart import compile_child; code = compile_child(cfg, sys.stdin.buffer.read()); "
               "sys.stderr.flush(); os._exit(code)")


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def aside_allowed() -> bool:
    """Whether a kernel may compile in a child process: numba compiles (not
    NUMBA_DISABLE_JIT=1) into a writable cache, two cores or more, ``SCUFFLE_COMPILE_ASIDE``
    is not ``0``, and ``sys.executable`` is a Python interpreter (a host that embeds
    Python may name its own program there)."""
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False) or not K.CACHE:
        return False
    if os.environ.get(ASIDE_ENV, "") == "0":
        return False
    exe = os.path.basename(sys.executable or "").lower()
    if not exe.startswith(("python", "pypy")):
        return False
    return _cores() >= 2


def compile_aside(name: str, args_of) -> bool:
    """Start compiling kernel ``name`` (anim.engine.kernels names it) in a child process, for the types of
    the arguments ``args_of()`` returns (called only when the child is started), into
    numba's on-disk cache: when ``aside_allowed()``, the kernel is not compiled in this
    process and its cache is cold. Returns whether a child was started (an OSError
    starting it: False, and numba compiles the kernel here as usual)."""
    import subprocess
    import tempfile

    if name in ASIDE or not aside_allowed():
        return False
    disp = getattr(K, name)
    target = _cache_path(name)
    if not target or kernel_ready(name):
        return False
    try:
        sig = sig_plain(tuple(disp.typeof_pyval(a) for a in args_of()))
    except ValueError:                      # a type the plain form does not name: compiled here
        return False
    scratch = tempfile.mkdtemp(prefix="scuffle-kernel-")
    cfg = {"kernel": name, "target": target, "source": os.path.realpath(K.__file__), "scratch": scratch,
           "path": [p for p in sys.path if isinstance(p, str)]}
    env = dict(os.environ, NUMBA_CACHE_DIR=scratch)
    try:
        with open(os.path.join(scratch, "child.log"), "wb") as log:
            spawned = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-c", _CHILD_CODE, json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, env=env)
        assert child.stdin is not None
        child.stdin.write(json.dumps(sig).encode())
        child.stdin.close()
    except OSError:
        import shutil
        shutil.rmtree(scratch, ignore_errors=True)
        return False
    ASIDE[name] = (child, scratch, spawned)
    return True


def await_kernel(name: str) -> None:
    """Before kernel ``name`` is called: wait for the child compiling it (if one is), at
    most ASIDE_TIMEOUT_S (then it is stopped), compiling the MEANWHILE kernels here while
    it runs (``meanwhile``); numba then loads the kernel from its cache, or compiles it
    here if the child failed (its stderr is logged at DEBUG level)."""
    import shutil
    import subprocess

    entry = ASIDE.pop(name, None)
    if entry is None:
        return
    child, scratch, spawned = entry
    also = meanwhile(child)
    waits = time.perf_counter()
    try:
        code = child.wait(timeout=ASIDE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait()
    ended = time.perf_counter()
    out = b""
    if child.stdout is not None:            # one short line, written before it exited
        try:
            out = child.stdout.read(4096)
            child.stdout.close()
        except OSError:
            pass
    ok = code == 0
    if not ok:
        try:
            with open(os.path.join(scratch, "child.log"), "rb") as f:
                tail = f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            tail = ""
        LOGGER.debug("compiling %s in a child process failed (exit %s); compiling it here. %s", name, code, tail)
    shutil.rmtree(scratch, ignore_errors=True)
    ASIDE_LOG.append({"kernel": name, "ok": ok, "meanwhile": also, "waited_s": round(ended - waits, 3),
                      "child_s": round(ended - spawned, 3), "child_stages_s": _stages(out, spawned)})


def _stages(out: bytes | None, spawned: float) -> dict:
    """The child's own time stamps (one JSON line on its stdout: perf_counter, the one
    monotonic clock of every process on Linux) as seconds from its spawn: ``started``
    (its interpreter up), ``imported`` (numba and the kernels imported), ``compiled``,
    ``installed``; {} when it wrote none (it failed, or another clock)."""

    try:
        stamps = json.loads((out or b"").decode("ascii", "replace").strip().splitlines()[-1])
        return {k: round(float(v) - spawned, 3) for k, v in stamps.items()
                if k in ("started", "imported", "compiled", "installed") and 0 <= float(v) - spawned < 1e5}
    except (ValueError, IndexError, TypeError, AttributeError):
        return {}


_REST_CODE = ("import json, sys; cfg = json.loads(sys.argv[1]); sys.path[:0] = cfg['path']; "
              "from scuffle.anim.playback.warmup import compile_rest_child; sys.exit(compile_rest_child(cfg))")


def compile_rest() -> bool:
    """Once per process: when some kernel of ALL_KERNELS is not cached, a child may
    compile (``aside_allowed``) and ``SCUFFLE_COMPILE_REST`` is not ``0``, start a detached child at low priority that compiles the
    missing ones into numba's cache (anim.playback.warmup.compile_rest_child); this process goes on (it
    never waits for it; a kernel it needs before the child is done it compiles itself, as
    numba always does, and loads it from the cache once the child has installed it).
    Returns whether a child was started."""
    import subprocess
    import tempfile

    if BACKGROUND:
        return False
    BACKGROUND.append(None)
    if not aside_allowed() or os.environ.get(REST_ENV, "") == "0":
        return False
    missing = [(mod, name) for mod, name in ALL_KERNELS if not kernel_cached(name, mod)]
    if not missing:
        return False
    targets = {f"{mod}.{name}": _cache_path(name, mod) for mod, name in ALL_KERNELS}
    if not all(targets.values()):
        return False
    scratch = tempfile.mkdtemp(prefix="scuffle-kernels-")
    cfg = {"missing": [f"{mod}.{name}" for mod, name in missing], "targets": targets, "scratch": scratch,
           "source": os.path.realpath(K.__file__), "path": [p for p in sys.path if isinstance(p, str)]}
    # the child compiles alone: its own steps start no child (ASIDE_ENV), or each would
    env = dict(os.environ, NUMBA_CACHE_DIR=scratch, **{ASIDE_ENV: "0"})
    try:
        with open(os.path.join(scratch, "child.log"), "wb") as log:
            child = subprocess.Popen([sys.executable, "-c", _REST_CODE, json.dumps(cfg)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
    except OSError:
        import shutil
        shutil.rmtree(scratch, ignore_errors=True)
        return False
    BACKGROUND[0] = child
    return True


def root_motion_args() -> tuple:
    """Arguments of the types StateUpdate calls ``root_motion_step`` with (systems/motion.py;
    anim/playback/warmup.py's call), on one human."""
    import numpy as np

    from scuffle.anim.engine.plan import Bones

    p = Bones(1).poses
    return (np.arange(1, dtype=np.int64), p.vel, p.tag, p.rot, np.zeros(1), np.zeros(1, np.bool_), np.zeros((1, 3)),
            np.zeros((1, 3)), np.zeros(1), 1.0 / 30.0, 50.0, np.empty((1, 3)))


# the kernels this process compiles while it waits for a child (await_kernel): the ones a
# first step calls after the two big ones (root_motion_step: StateUpdate, after the pose)
MEANWHILE: list[tuple] = [("root_motion_step", root_motion_args)]


def meanwhile(child) -> list[str]:
    """While ``child`` still compiles the big kernel this process is about to wait for,
    compile the MEANWHILE kernels here (each for the argument types its function gives,
    unless it has a version already): on two cores they then cost the first step no wall
    time (root_motion_step alone costs about half a second after the wait). Stops as soon
    as the child has ended. Returns the kernels it compiled."""
    done: list[str] = []
    for name, args_of in MEANWHILE:
        if child.poll() is not None:
            break
        disp = getattr(K, name)
        if disp.signatures:
            continue
        disp.compile(tuple(disp.typeof_pyval(a) for a in args_of()))
        done.append(name)
    return done


# What a signature sent to the child may hold: numba's scalar types by name, arrays of
# these dtypes, tuples, and the kernels' named tuples (anim.engine.kernel_types' classes).
_SCALARS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64")
_LAYOUTS = ("C", "F", "A")
_MAX_ARGS = 64                              # items of one tuple or signature
_MAX_DEPTH = 4                              # tuples within tuples


def sig_plain(sig: tuple) -> list:
    """Argument types (numba types, as ``typeof_pyval`` gives them) as plain data (lists,
    strings, numbers, bools) that ``sig_from_plain`` turns back into equal types.
    Rejected (ValueError): any other kind of type, a named tuple not of
    anim.engine.kernel_types."""
    return [_type_plain(t, 0) for t in sig]


def _type_plain(t, depth: int) -> list:
    from numba.core import types

    from scuffle.anim.engine import kernel_types

    if depth > _MAX_DEPTH:
        raise ValueError("sig_plain: tuples nested too deep")
    if isinstance(t, types.Array):
        return ["array", str(t.dtype), int(t.ndim), t.layout, bool(t.mutable), bool(t.aligned)]
    if isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return ["scalar", t.name]
    # (numba's tuple types hold their items in ``types`` and a named one its class in
    # ``instance_class``; its stubs do not declare them)
    if isinstance(t, types.BaseNamedTuple):
        cls: type = getattr(t, "instance_class")
        if getattr(kernel_types, cls.__name__, None) is not cls:
            raise ValueError(f"sig_plain: {cls.__qualname__} is not a named tuple of anim.engine.kernel_types")
        return ["named", cls.__name__, [_type_plain(x, depth + 1) for x in getattr(t, "types")]]
    if isinstance(t, types.BaseTuple):
        return ["tuple", [_type_plain(x, depth + 1) for x in getattr(t, "types")]]
    raise ValueError(f"sig_plain: a {type(t).__name__} argument is not sent to a child")


def sig_from_plain(data) -> tuple:
    """The numba types ``sig_plain`` gave ``data`` as. Nothing is imported or called by
    name beyond numba's scalar types listed in _SCALARS and anim.engine.kernel_types'
    named tuples. Rejected (ValueError): anything else, over _MAX_ARGS items a tuple or
    _MAX_DEPTH deep."""
    if not isinstance(data, list) or len(data) > _MAX_ARGS:
        raise ValueError("sig_from_plain: not a list of at most 64 argument types")
    return tuple(_type_from_plain(x, 0) for x in data)


def _type_from_plain(x, depth: int):
    import numpy as np
    from numba.core import types

    from scuffle.anim.engine import kernel_types

    if depth > _MAX_DEPTH or not isinstance(x, list) or not x or not isinstance(x[0], str):
        raise ValueError("sig_from_plain: not a type")
    kind = x[0]
    if kind == "scalar" and len(x) == 2 and x[1] in _SCALARS:
        return types.boolean if x[1] == "bool" else getattr(types, x[1])
    if kind == "array" and len(x) == 6 and x[1] in _SCALARS and type(x[2]) is int and 0 <= x[2] <= 8 \
            and x[3] in _LAYOUTS and type(x[4]) is bool and type(x[5]) is bool:
        dtype = types.boolean if x[1] == "bool" else getattr(types, x[1])
        return types.Array(dtype, x[2], x[3], readonly=not x[4], aligned=x[5])
    if kind in ("named", "tuple"):
        parts = x[-1]
        if len(x) != (3 if kind == "named" else 2) or not isinstance(parts, list) or len(parts) > _MAX_ARGS:
            raise ValueError("sig_from_plain: not a tuple type")
        items = [_type_from_plain(p, depth + 1) for p in parts]
        if kind == "tuple":
            return types.Tuple(items) if items else types.Tuple(())
        cls = getattr(kernel_types, x[1], None) if isinstance(x[1], str) and not x[1].startswith("_") else None
        if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")) \
                or len(cls._fields) != len(items):
            raise ValueError(f"sig_from_plain: {str(x[1])[:40]!r} is not a named tuple of anim.engine.kernel_types")
        if items and all(i == items[0] for i in items):
            return types.NamedUniTuple(items[0], len(items), cls)
        return types.NamedTuple(items, cls)
    raise ValueError(f"sig_from_plain: {kind[:20]!r} is not a type this signature may hold")


def compile_child(cfg: dict, blob: bytes) -> int:
    """The child process of ``compile_aside``: compile kernel ``cfg["kernel"]`` for the
    argument types ``blob`` names (``sig_plain``'s JSON) into this process's
    NUMBA_CACHE_DIR (a private folder no other process writes), then install its cache
    files into ``cfg["target"]`` (``install_cached``: indexes read and merged as opcodes)
    and remove its private cache folder ``cfg["scratch"]``. Returns the exit code: 0
    installed, 2 another anim/engine/kernels.py than the parent's, 3 no cache here, 4
    nothing to install, 5 ``blob`` is not a signature ``sig_from_plain`` accepts."""
    if os.path.realpath(K.__file__) != cfg["source"]:
        return 2
    if not K.CACHE:
        return 3
    stamps = {"started": cfg.get("launched", 0.0), "imported": time.perf_counter()}
    disp = getattr(K, cfg["kernel"])
    try:
        sig = sig_from_plain(json.loads(blob.decode()))
    except (ValueError, UnicodeDecodeError):
        return 5
    disp.compile(sig)
    stamps["compiled"] = time.perf_counter()
    here = _cache_path(cfg["kernel"])
    if not here:
        return 3
    if not install_cached(here, cfg["target"], f"{K.MODULE_OF[cfg['kernel']]}.{cfg['kernel']}-"):
        return 4
    stamps["installed"] = time.perf_counter()
    # installed: the private folder goes now (the parent removes it too, unless it has died)
    if os.environ.get("NUMBA_CACHE_DIR") == cfg["scratch"]:
        import shutil
        shutil.rmtree(cfg["scratch"], ignore_errors=True)
    try:                                    # the stages, for the parent's ASIDE_LOG (gone if it died)
        sys.stdout.write(json.dumps(stamps) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    return 0


def _ours(path: str) -> bool:
    """Whether ``path`` is no symbolic link, owned by this process's user and writable by
    no one else: a file only this user (numba, or this module's own child) can have
    written, the only kind ``install_cached`` takes an index from (read as opcodes, never
    unpickled) or merges into. numba loads what lies in its cache folder (anim.engine.jitcache
    keeps that folder this user's own); a snapshot, scenario, trace or resource never
    goes through here."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode) or st.st_mode & 0o022:
        return False
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()


def install_cached(src: str, dst: str, prefix: str) -> list[str]:
    """Copy numba's cache files of the functions whose file names start with ``prefix``
    from folder ``src`` into folder ``dst``, merged into ``dst``'s index of the function
    when that one is of the same numba version and source stamp (its other entries
    kept), else replacing it: each data file first, then the index, each written under a
    temporary name and renamed over the old one, so that no reader sees a cut file or an
    index naming a file not yet there. Returns the names written.

    Nothing is unpickled: both indexes are read and merged as pickle opcodes
    (anim.engine.cacheindex: numba's layout, its keys' shapes, data file names of the
    function only), the data files copied as bytes. Skipped: a ``src`` folder or index
    another user could have written (``_ours``), or one not of numba's layout and shapes;
    a ``dst`` index of the kind (another user's, or not numba's) is replaced, never merged."""
    import numba

    from scuffle.anim.engine import cacheindex

    written: list[str] = []
    if not _ours(src):
        return written
    os.makedirs(dst, exist_ok=True)
    for index in sorted(glob.glob(os.path.join(glob.escape(src), glob.escape(prefix) + "*.nbi"))):
        base = os.path.basename(index)[:-len(".nbi")]
        if not _ours(index):
            continue
        try:
            with open(index, "rb") as f:
                data = f.read()
            new = cacheindex.read_index(data, base)
        except (OSError, cacheindex.BadIndex):
            continue
        if new.version != numba.__version__:
            continue
        target = os.path.join(dst, base + ".nbi")
        renamed = {e.name: e.name for e in new.entries}
        try:
            if not (_ours(dst) and _ours(target)):
                raise OSError("none, or not this user's own index")
            with open(target, "rb") as f:
                old = cacheindex.read_index(f.read(), base)
            if old.version == new.version and old.stamp == new.stamp:
                data, renamed = cacheindex.merge_index(old, new, base)
        except (OSError, cacheindex.BadIndex, cacheindex.Unlinkable):
            pass                            # none, not whole, not numba's or not mergeable: replaced
        try:
            blobs = []
            for e in new.entries:
                with open(os.path.join(src, e.name), "rb") as f:
                    blobs.append((renamed[e.name], f.read()))
        except OSError:                     # a data file gone: the function is not installed
            continue
        for name, blob in blobs:
            _write(os.path.join(dst, name), blob)
            written.append(name)
        _write(target, data)
        written.append(base + ".nbi")
    return written


def _write(path: str, data: bytes) -> None:
    """``data`` into ``path`` whole or not at all: a temporary file in the same folder,
    renamed over it."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".tmp.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
