"""The cold compiles the tests share: each costs about 35 s of CPU, so each runs once per
test session (once across pytest-xdist's workers too) and its output is checked by every
test that needs one.

- ``cold_warm()``: ``scuffle warm --check`` then ``scuffle warm`` in a fresh process on an
  empty NUMBA_CACHE_DIR, every kernel compiled in that one process (no child compiles one
  aside) with numba's compile events recorded: the warm command's own output, how many
  versions of each function it compiled, and the cache folder it filled (a template: a
  test that changes a cache takes a copy, ``copy_cache``).
- ``cold_first_step()``: a Game's first steps in a fresh process on an empty cache, as a
  host of a crowd runs them (the kernels compiled, not run as Python meanwhile: the
  pose kernel compiled aside in a child, the rest in the background),
  then the same steps in a second process on the cache the first left.

``shared`` serves any other costly product a session makes once (tests/test_typing.py's
mypy cache).

A product can be made ahead, outside pytest, by the same function: ``python
tests/coldcache.py FOLDER cold-warm`` (from the folder pytest runs in) makes it in FOLDER,
and a session run with ``SCUFFLE_TEST_SHARED=FOLDER`` reads it there. .ci/run does so
with the cold warm-up, whose cache it then installs as the one the test sessions load
(``--install``): the one whole compile of the kernels serves both.

Every process runs from the test session's working folder, as the tests' own children
do: numba names a cache's sub-folder after the path the sources were imported from.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["shared", "make", "cold_warm", "cold_first_step", "copy_cache", "ENV", "run_python", "COLD_LIMIT_S",
           "MADE_AHEAD"]

ENV = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
# The most a cold compile may take (a guard against a hang, not a speed check): on a
# 2-core machine shared with many other jobs a cold compile has taken over 10 minutes.
COLD_LIMIT_S = 1800


def run_python(code: str, env: dict, timeout: float = COLD_LIMIT_S, args: tuple = ()) -> dict:
    """``python -c code`` with ``env`` over this process's environment: its exit code,
    stdout and stderr."""
    r = subprocess.run([sys.executable, "-c", code, *args], env=dict(os.environ, **ENV, **env), capture_output=True,
                       text=True, timeout=timeout)
    return {"code": r.returncode, "stdout": r.stdout, "stderr": r.stderr}


# the folder of the products made ahead (see the module docstring)
MADE_AHEAD = "SCUFFLE_TEST_SHARED"


def make(base: Path, name: str, maker) -> None:
    """Make ``maker(folder)``'s result (a JSON-able dict) as the product ``name`` in
    ``base``: its files in ``base/shared-<name>``, the result in ``base/shared-<name>.json``
    (a failure is recorded as ``{"failed": why}``, for every test that asks to say)."""
    folder = base / f"shared-{name}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    try:
        result = maker(folder)
    except Exception as exc:
        result = {"failed": f"{type(exc).__name__}: {exc}"[-3000:]}
    result["folder"] = str(folder)
    (base / f"shared-{name}.json").write_text(json.dumps(result))


def _read(done: Path, name: str) -> dict:
    result = json.loads(done.read_text())
    if "failed" in result:
        raise RuntimeError(f"the shared cold compile {name!r} failed: {result['failed']}")
    return result


def shared(tmp_path_factory, name: str, maker) -> dict:
    """The result of ``maker(folder)`` (a JSON-able dict), made once per test session in
    ``folder``: under pytest-xdist the first worker to ask makes it while the others
    wait on a lock, then all read it. One made ahead (``MADE_AHEAD``) is read instead."""
    ahead = os.environ.get(MADE_AHEAD)
    if ahead and (Path(ahead) / f"shared-{name}.json").is_file():
        return _read(Path(ahead) / f"shared-{name}.json", name)
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent                          # the session's folder, shared by its workers
    done = base / f"shared-{name}.json"
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                make(base, name, maker)
            return _read(done, name)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def copy_cache(template: str | Path, dst: Path, leave_out: str | None = None) -> Path:
    """A copy of the cache folder ``template`` at ``dst`` (without the files whose names
    start with ``leave_out``)."""
    ignore = (lambda d, names: [n for n in names if n.startswith(leave_out)]) if leave_out else None
    shutil.copytree(template, dst, ignore=ignore)
    return dst


# ``scuffle warm`` in-process, numba's compile events recorded around it. The events'
# counts: a function compiled more than once (a literal or an int32 where another call
# passes an int64 makes numba compile it again); register_jitable functions (the task
# rules, detmath's scalar forms) compile into each kernel module that calls them, once a
# module; the row writers (anim.engine.kernels_write) once per module that calls them; the
# flush's reset of a freed task row once per column dtype it zeroes.
WARM = """
import json, sys
from numba.core import event as ev
with ev.install_recorder('numba:compile') as rec:
    from scuffle.cli import main
    code = main(['warm'])
sys.stdout.flush()
from scuffle.anim.engine import coldstart, kernels as K, kernels_write as W, rules
from scuffle.anim.maths import detmath
many = {n: len(getattr(K, n).signatures) for n in dir(K) if len(getattr(getattr(K, n), 'signatures', ())) > 1}
seen = {}
for _, e in rec.buffer:
    if e.is_start:
        q = e.data['dispatcher'].py_func.__qualname__
        seen[q] = seen.get(q, 0) + 1
shared = {f.__name__ for f in detmath.JITABLE} | {n for n in dir(rules) if callable(getattr(rules, n))}
modules = len(set(K.MODULE_OF.values())) + 1
writers = set(W.WRITERS)
from scuffle.anim.engine import kernels_flush as KF
# numba's own view and np.empty, once per dtype asked for: the checksum's digest reads its
# bytes as 32- and 64-bit words (anim.engine.digest.WORD_DTYPES) and its sums into uint64
# where the kernels' scratch is int64
from scuffle.anim.engine import digest as D
# and the snapshot file's byte copy (anim.engine.snapkernel._copy) from a read-only block
# (a file's bytes) and from a writable one (the tables')
per_dtype = {'_to_zero': len(KF.RESET_DTYPES), '_to_no_row': len(KF.NO_ROW_DTYPES),
             'ol_compatible_view.<locals>.impl': len(D.WORD_DTYPES), 'ol_np_empty.<locals>.impl': 2, '_copy': 2}
many.update({q: n for q, n in seen.items()
             if n > (2 if q in writers else modules if q in shared else per_dtype.get(q, 1))})
print(json.dumps({"code": code, "many": many, "seen": sorted(seen), "background": coldstart.BACKGROUND,
                  "link_only": K.LINK_ONLY, "where": coldstart.cache_folder()}, default=str))
"""


def _cold_warm(folder: Path) -> dict:
    cache = folder / "numba"
    env = {"NUMBA_CACHE_DIR": str(cache), "SCUFFLE_COMPILE_REST": "1", "SCUFFLE_COMPILE_ASIDE": "0"}
    check = subprocess.run([sys.executable, "-m", "scuffle", "warm", "--check"], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, **ENV, **env))
    warm = run_python(WARM, env)
    out = warm["stdout"].strip().splitlines()
    return {"check": {"code": check.returncode, "stdout": check.stdout, "stderr": check.stderr},
            "warm": {"code": warm["code"], "stdout": "\n".join(out[:-1]), "stderr": warm["stderr"]},
            "compiled": json.loads(out[-1]) if warm["code"] == 0 and out else None,
            "cache": str(cache), "env": env}


def cold_warm(tmp_path_factory) -> dict:
    """``_cold_warm``'s result, made once per session (see the module docstring):
    ``check`` and ``warm`` (code, stdout, stderr), ``compiled`` (``WARM``'s figures),
    ``cache`` (the filled cache folder: read it, or copy it) and ``env``."""
    return shared(tmp_path_factory, "cold-warm", _cold_warm)


# A host's first steps: a Game of one human, three steps; then the background compile of
# the rest awaited, and what the process saw.
FIRST_STEP = """
import json
from scuffle import Game, demo_set
from scuffle.anim.engine import coldstart, kernels as K
g = Game(); g.add_human('a', demo_set())
g.change('a', g.player.loop(g.instance('a'), 'FIGHT_IDLE'))
for _ in range(3):
    g.step()
rest = coldstart.BACKGROUND[0] if coldstart.BACKGROUND else None
rest = None if rest is None else rest.wait(timeout=1800)    # the rest, compiled in the background
poses = g.player.batch.pose([g.instance('a')]).poses.rot.tolist()     # (the whole pose kernel, once installed)
print(json.dumps({"aside": coldstart.ASIDE_LOG, "cached": coldstart.kernels_cached(),
                  "rest": rest, "all_cached": coldstart.all_cached(),
                  "pose_hits": sum(K.pose_stacks.stats.cache_hits.values()),
                  "pose_misses": sum(K.pose_stacks.stats.cache_misses.values()),
                  "lean_hits": sum(K.pose_lean.stats.cache_hits.values()),
                  "lean_misses": sum(K.pose_lean.stats.cache_misses.values()),
                  "pose_kernel": coldstart.POSE_KERNEL[0],
                  "motion": [str(t) for t in K.root_motion_step.signatures],
                  "poses": poses}))
g.close()
"""


def _cold_first_step(folder: Path) -> dict:
    scratch = folder / "tmp"
    scratch.mkdir()
    cache = folder / "numba"
    # the kernels compiled, not run as Python while they compile (anim.engine.interpret: a
    # crowd's cold start, which tests/anim/test_interpret.py's cold process does not take)
    env = {"NUMBA_CACHE_DIR": str(cache), "TMPDIR": str(scratch), "SCUFFLE_COMPILE_REST": "1",
           "SCUFFLE_INTERPRET": "0"}
    first = run_python(FIRST_STEP, env)
    left = sorted(p.name for p in scratch.iterdir())
    temporary = sorted(str(p) for p in cache.rglob("*") if ".tmp." in p.name)
    again = run_python(FIRST_STEP, env, timeout=300)
    return {"first": first, "again": again, "scratch_left": left, "temporary_files": temporary}


def cold_first_step(tmp_path_factory) -> dict:
    """``_cold_first_step``'s result, made once per session: ``first`` and ``again`` (code,
    stdout, stderr of FIRST_STEP on the empty cache, then on the cache it left),
    ``scratch_left`` (what the first run left in its TMPDIR) and ``temporary_files``
    (files of the cache under a temporary name after the first run)."""
    return shared(tmp_path_factory, "cold-first-step", _cold_first_step)


# The products a folder can be made ahead with (``python tests/coldcache.py FOLDER NAME...``).
MAKERS = {"cold-warm": _cold_warm, "cold-first-step": _cold_first_step}

# Install the kernels of a cold warm-up's cache into the cache numba reads when no
# NUMBA_CACHE_DIR is set (the install's own, beside the sources), then load them all:
# anything the copy did not bring is compiled there.
INSTALL = """
import glob, os, sys
from scuffle.anim.engine import coldstart
from scuffle.anim.playback.warmup import compile_kernels
dst = coldstart.cache_folder()
srcs = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(glob.escape(sys.argv[1]), "**", "*.nbi"),
                                                     recursive=True)})
written = [n for src in srcs for n in coldstart.install_cached(src, dst, "")] if dst and len(srcs) == 1 else []
compile_kernels()
print(len(written), dst)
"""


def _main(argv: list[str]) -> int:
    """``FOLDER NAME... [--install]``: make each named product in FOLDER (see the module
    docstring); with ``--install``, the cold warm-up's kernels then installed (``INSTALL``)."""
    install = "--install" in argv
    args = [a for a in argv if a != "--install"]
    names = args[1:]
    unknown = [n for n in names if n not in MAKERS]
    if unknown or not names or (install and "cold-warm" not in names):
        print(f"usage: coldcache.py FOLDER {'|'.join(MAKERS)}... [--install] (unknown: {unknown})", file=sys.stderr)
        return 2
    base = Path(args[0])
    base.mkdir(parents=True, exist_ok=True)
    for name in names:
        make(base, name, MAKERS[name])
    if install:
        try:
            result = _read(base / "shared-cold-warm.json", "cold-warm")
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 1
        r = subprocess.run([sys.executable, "-c", INSTALL, result["cache"]], env=_no_cache_dir(), text=True,
                           capture_output=True, timeout=COLD_LIMIT_S)
        print(r.stdout.strip() or r.stderr.strip()[-2000:])
        return r.returncode
    return 0


def _no_cache_dir() -> dict:
    return {k: v for k, v in dict(os.environ, **ENV).items() if k != "NUMBA_CACHE_DIR"}


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
