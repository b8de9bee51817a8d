"""scuffle.warm() and ``scuffle warm``: every animation kernel compiled ahead (a loading screen).

With the test session's cache warm (tests/conftest.py compiles the kernels), warm() only
loads them, says nothing and returns False; the command says where they are cached. In a
fresh process with an empty NUMBA_CACHE_DIR (slow), ``scuffle warm`` compiles them all with
one progress line, each kernel and helper once, and a Game's first step in the next process
compiles nothing, says nothing and starts no background compile (the session's one cold
warm-up: tests/coldcache.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import scuffle
from scuffle.anim.engine import coldstart
from scuffle.anim.engine.coldstart import WARM_MESSAGE

from coldcache import cold_warm, copy_cache

ENV = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}


def test_warm_is_public_and_only_loads_a_warm_cache():
    assert "warm" in scuffle.__all__
    scuffle.warm()                      # (another test process may have just edited the cache)
    told: list = []
    assert scuffle.warm(progress=told.append) is False
    assert told == []
    assert coldstart.all_cached()


@pytest.mark.slow
def test_the_warm_command_says_where_the_kernels_are():
    scuffle.warm()
    r = subprocess.run([sys.executable, "-m", "scuffle", "warm"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **ENV))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("kernels already cached in ")
    assert "compiling" not in r.stderr
    check = subprocess.run([sys.executable, "-m", "scuffle", "warm", "--check"], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, **ENV))
    assert check.returncode == 0 and check.stdout.startswith("every kernel cached in "), check.stderr


LEFT_IN_CACHE = """
import json, scuffle
from scuffle.anim.engine import coldstart, kernels, snapkernel
scuffle.warm()
print(json.dumps([coldstart.all_cached(), {n: len(getattr(snapkernel, n).signatures) for n in coldstart.SNAPSHOT_KERNELS},
                  len(kernels.step_stacks.signatures), len(kernels.pose_stacks.signatures)]))
"""


@pytest.mark.slow
def test_warm_leaves_the_snapshot_files_kernels_in_the_cache_when_they_are_there():
    """With every kernel cached, warm() loads those of the update and the commands, and
    leaves the snapshot file's in the cache (a game that writes no file does not hold
    them; its first file loads them)."""
    scuffle.warm()
    r = subprocess.run([sys.executable, "-c", LEFT_IN_CACHE], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **ENV))
    assert r.returncode == 0, r.stderr[-3000:]
    cached, files, step, pose = json.loads(r.stdout.strip().splitlines()[-1])
    assert cached and files == {n: 0 for n in coldstart.SNAPSHOT_KERNELS} and step >= 1 and pose >= 1


AFTER_WARM = """
import json
from numba.core import event as ev
from scuffle import Game, demo_set
from scuffle.anim.engine import coldstart
g = Game(); g.add_human('a', demo_set()); g.add_human('b', demo_set())
g.change('a', g.player.loop(g.instance('a'), 'FIGHT_IDLE'))
with ev.install_recorder("numba:compile") as rec:
    for _ in range(3):
        g.step()
    # a rollback's calls: the checksum (the tables' digests), a snapshot's, a restore
    c = g.checksum()
    s = g.snapshot()
    assert s.checksum() == c
    g.step()
    g.restore(s)
    assert g.checksum() == c
print(json.dumps({"compiled": sum(1 for _, e in rec.buffer if e.is_start), "background": coldstart.BACKGROUND,
                  "all_cached": coldstart.all_cached()}, default=str))
g.close()
"""


@pytest.mark.slow
def test_scuffle_warm_on_a_cold_cache_compiles_everything_once(tmp_path, tmp_path_factory):
    """``scuffle warm --check`` then ``scuffle warm`` on an empty cache (the session's one
    cold warm-up, tests/coldcache.py), then runs on copies of the cache it filled."""
    run = cold_warm(tmp_path_factory)
    check, r = run["check"], run["warm"]
    assert check["code"] == 1 and check["stdout"].startswith("not cached: kernels_step.step_stacks"), check["stderr"]
    assert r["code"] == 0, r["stderr"][-3000:]
    assert r["stderr"].splitlines() == [f"scuffle: {WARM_MESSAGE}"]
    assert r["stdout"].startswith("kernels compiled in ") and run["cache"] in r["stdout"]
    assert run["compiled"]["background"] == [None]         # it compiled them all itself: no background child
    env = dict(os.environ, **ENV, **run["env"])
    env["NUMBA_CACHE_DIR"] = str(copy_cache(run["cache"], tmp_path / "numba"))
    after = subprocess.run([sys.executable, "-c", AFTER_WARM], capture_output=True, text=True, timeout=300, env=env)
    assert after.returncode == 0, after.stderr[-3000:]
    out = json.loads(after.stdout.strip().splitlines()[-1])
    assert out == {"compiled": 0, "background": [None], "all_cached": True}
    assert "compiling" not in after.stderr
    # The command line shows the library's notice: with one kernel gone from the cache, the
    # bench (which compiles every kernel ahead) says so once, first, and says when it is done.
    gone = list((tmp_path / "numba").rglob("*root_motion_step*.nbi"))
    assert gone
    for f in gone:
        f.unlink()
    start = time.time()
    # (from the working folder the cache was filled from: numba names the cache's
    # sub-folder after the path the sources were imported from)
    bench = subprocess.run([sys.executable, "-m", "scuffle", "bench", "--humans", "2", "--updates", "2",
                            "--scalar-updates", "1", "--no-compile-time"], capture_output=True, text=True,
                           timeout=600, env=env)
    assert bench.returncode == 0, bench.stderr[-3000:]
    lines = bench.stderr.splitlines()
    assert lines[0] == f"scuffle: {WARM_MESSAGE}", bench.stderr
    assert "scuffle: kernels compiled (cached for the next runs)" in lines
    assert bench.stderr.count("compiling the animation kernels") == 1
    # of the kernels the warm-up compiled, only the one taken away was compiled again (the
    # bench's own, pose_plan, it compiles as it needs it)
    warmed = {f"{mod}.{name}-" for mod, name in coldstart.ALL_KERNELS if name != "root_motion_step"}
    assert not [f for f in (tmp_path / "numba").rglob("*.nbi") if f.stat().st_mtime > start
                and any(f.name.startswith(w) for w in warmed)]


@pytest.mark.slow
def test_each_kernel_compiles_once(tmp_path_factory):
    """A cold compile (a fresh process and cache: the session's one cold ``scuffle warm``,
    tests/coldcache.py, every kernel compiled in that one process) makes one version of
    every kernel and helper, and of every numba function it compiles inside them (min
    and max were one per type pair); the helpers leave nothing in numba's cache folder
    (link-only, anim/engine/jitpipe.py) and the kernels are there: a literal or an int32
    where another call passes an int64 would make numba compile it again (the first
    step's compile time). The register_jitable rules and detmath's scalar forms compile
    into each kernel module that calls them, at most once a module; the row writers
    (anim.engine.kernels_write) once per module that calls them (cmdkernel's and the step's);
    the flush's reset of a freed task row once per column dtype it zeroes."""
    from pathlib import Path

    from scuffle.anim.engine import kernels as K

    run = cold_warm(tmp_path_factory)
    assert run["warm"]["code"] == 0 and run["compiled"], run["warm"]["stderr"][-2000:]
    assert run["env"]["SCUFFLE_COMPILE_ASIDE"] == "0"      # none compiled aside in a child: all counted
    many, seen = run["compiled"]["many"], run["compiled"]["seen"]
    assert many == {}, many                 # numba's min/max overloads were 13 (one per type pair)
    # the helpers compiled (link-only: anim.engine.jitpipe) and none of them in the cache folder
    assert "_blend" in seen and "_room" in seen
    cached = {p.name.split("-")[0] for p in Path(run["cache"]).rglob("*.nbi")}
    assert {"kernels_step.step_stacks", "kernels_pose.pose_stacks", "kernels_motion.root_motion_step"} <= cached, cached
    # a prepared command's rows (anim.engine.cmdkernel, a module of its own): compiled once, cached
    assert "run_rows" in seen and "cmdkernel.run_rows" in cached, (seen, cached)
    assert "apply_commands" in seen and "cmdkernel.apply_commands" in cached, (seen, cached)
    # a batch of them and gait targets as columns (Player.commands, set_gait_targets)
    assert "buffer_commands" in seen and "cmdkernel.buffer_commands" in cached, (seen, cached)
    assert "gait_targets" in seen and "cmdkernel.gait_targets" in cached, (seen, cached)
    assert run["compiled"]["link_only"] == K.LINK_ONLY
    if K.LINK_ONLY:                         # numba's usual way under an untested numba (anim.engine.jitpipe)
        assert not {"kernels_pose._blend", "kernels_step._room", "kernels_maths._add", "kernels_pose._sample"} & cached, cached


def test_no_background_compile_when_turned_off_or_nothing_is_missing(monkeypatch):
    """compile_rest starts no child under SCUFFLE_COMPILE_REST=0, nor when every kernel is
    cached (this session's cache), and asks once per process."""
    monkeypatch.setattr(coldstart, "BACKGROUND", [])
    monkeypatch.setenv(coldstart.REST_ENV, "0")
    assert coldstart.compile_rest() is False and coldstart.BACKGROUND == [None]
    scuffle.warm()
    monkeypatch.setattr(coldstart, "BACKGROUND", [])
    monkeypatch.setenv(coldstart.REST_ENV, "1")
    assert coldstart.compile_rest() is False and coldstart.BACKGROUND == [None]
    assert coldstart.compile_rest() is False                     # once per process



def test_a_kernel_this_process_holds_is_ready_without_a_look_at_the_cache(monkeypatch):
    """kernel_ready: a kernel whose dispatcher holds a signature (loaded or compiled in this
    process) runs without compiling, so its cache folder is not listed (a new Player's
    first flush and a fight's warm-up ask it); one it does not hold is what the cache says."""
    from scuffle.anim.engine import cmdkernel, kernels as K

    asked: list = []

    def listed(name, mod=None):
        asked.append(name)
        return False

    scuffle.warm()                                        # (every kernel held by this process now)
    monkeypatch.setattr(coldstart, "kernel_cached", listed)
    assert K.flush_release.signatures and cmdkernel.apply_commands.signatures
    assert coldstart.kernel_ready("flush_release") and coldstart.kernel_ready("apply_commands", "cmdkernel")
    assert asked == []
    home = coldstart._module(K.MODULE_OF["flush_anim_ids"])
    held = home.flush_anim_ids
    monkeypatch.setattr(home, "flush_anim_ids", lambda *a: held(*a))   # (not a dispatcher: no signature)
    assert coldstart.kernel_ready("flush_anim_ids") is False and asked == ["flush_anim_ids"]

@pytest.mark.slow
def test_the_snapshot_files_kernels_are_warmed_with_a_files_own_argument_types():
    """``scuffle warm`` compiles the snapshot file's kernels (anim.engine.snapkernel, listed in
    ALL_KERNELS) for the very types a file's write and read pass: after the warm-up, a
    fight's file written, read and restored compiles no kernel of its own."""
    from scuffle.anim.engine import snapcheck
    from scuffle.game.runtime import snapfile

    assert {("snapkernel", n) for n in coldstart.SNAPSHOT_KERNELS} <= set(coldstart.ALL_KERNELS)
    assert snapcheck.GAME_TABLES == len(snapfile.FIGHT_TABLES)
    code = (
        "import sys, json\n"
        "from scuffle.anim.engine import snapcheck, coldstart, snapkernel as K\n"
        "snapcheck.compile_kernels()\n"
        "warm = {n: len(getattr(K, n).signatures) for n in coldstart.SNAPSHOT_KERNELS}\n"
        f"sys.path.insert(0, {os.path.join(os.path.dirname(os.path.dirname(__file__)), 'game')!r})\n"
        "from gamehelp import ai_fight\n"
        "from scuffle.game.runtime.snapshot import Snapshot\n"
        "a, b = ai_fight(), ai_fight()\n"
        "for _ in range(40):\n"
        "    a.step()\n"
        "b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))\n"
        "print(json.dumps([warm, {n: len(getattr(K, n).signatures) for n in coldstart.SNAPSHOT_KERNELS}]))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **ENV))
    assert r.returncode == 0, r.stderr[-3000:]
    warm, after = json.loads(r.stdout.strip().splitlines()[-1])
    assert warm == after == {n: 1 for n in coldstart.SNAPSHOT_KERNELS}


def _dispatchers() -> dict:
    """Every numba dispatcher defined in a module of scuffle's core (scuffle.anim: the
    only package that compiles, ``test_only_the_core_compiles``), by (module's last name,
    function name)."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    import scuffle.anim

    found = {}
    for m in pkgutil.walk_packages(scuffle.anim.__path__, "scuffle.anim."):
        mod = importlib.import_module(m.name)
        for v in vars(mod).values():
            if isinstance(v, Dispatcher) and v.py_func.__module__ == mod.__name__:
                found[(mod.__name__.rsplit(".", 1)[1], v.py_func.__name__)] = v
    return found


def _reached(roots: list) -> set:
    """The dispatchers the functions ``roots`` call, and those they call, ...: each
    function's global names (its nested code's too) and its closure's cells (a kernel
    built by a factory: the lean forms) that name a dispatcher, or a plain scuffle
    function (a register_jitable rule) whose own names are followed in turn."""
    import types

    from numba.core.dispatcher import Dispatcher

    seen: set = set()
    todo = list(roots)
    while todo:
        fn = todo.pop()
        py = fn.py_func if isinstance(fn, Dispatcher) else fn
        if id(py) in seen:
            continue
        seen.add(id(py))
        codes, names = [py.__code__], set()
        while codes:
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        values = [py.__globals__.get(n) for n in names] + [c.cell_contents for c in py.__closure__ or ()]
        for v in values:
            if isinstance(v, Dispatcher) or (isinstance(v, types.FunctionType)
                                             and (v.__module__ or "").startswith("scuffle.")):
                todo.append(v)
    return seen


def test_every_compiled_function_is_warmed_or_set_aside():
    """Every @njit function of scuffle is a kernel the warm-up compiles (ALL_KERNELS), one
    the first step of a fresh install alone runs (COLD_START_ONLY), one no game calls
    (COMPILED_ASIDE, with why), or compiled inside one of those (a helper, a rule, one
    numba inlines): none a game may run compiles after ``scuffle.warm()``. The checksum's
    kernels (anim.engine.digest) are among the warmed ones."""
    found = _dispatchers()
    listed = set(coldstart.ALL_KERNELS) | set(coldstart.COLD_START_ONLY) | set(coldstart.COMPILED_ASIDE)
    assert listed <= set(found), listed - set(found)
    assert {("digest", n) for n in coldstart.DIGEST_KERNELS} <= set(coldstart.ALL_KERNELS)
    assert all(why.strip() for why in coldstart.COMPILED_ASIDE.values())
    inside = _reached([found[k] for k in listed])
    loose = sorted(k for k, d in found.items() if k not in listed and id(d.py_func) not in inside)
    assert not loose, f"compiled functions neither warmed, set aside nor called by one: {loose}"
    # the ones listed are entry points (Python calls them: a CPython wrapper), none a helper
    for k in listed:
        assert not found[k].targetoptions.get("no_cpython_wrapper"), k


def test_the_warm_up_compiles_the_checksums_kernels_for_a_games_types():
    """After the warm-up's digest calls (compile_digests), a Game's checksum, a snapshot's
    and one after a restore add no version of the checksum's kernels."""
    from scuffle import Game, demo_set
    from scuffle.anim.engine import digest
    from scuffle.anim.playback.warmup import compile_digests

    compile_digests()
    before = {n: list(getattr(digest, n).signatures) for n in coldstart.DIGEST_KERNELS}
    assert all(len(v) == 1 for v in before.values()), before
    g = Game()
    g.add_human("a", demo_set())
    g.add_human("b", demo_set())
    g.change("a", g.player.loop(g.instance("a"), "FIGHT_IDLE"))
    g.step()
    c = g.checksum()
    s = g.snapshot()
    g.step()
    g.restore(s)
    assert g.checksum() == c == s.checksum()
    g.close()
    assert {n: list(getattr(digest, n).signatures) for n in coldstart.DIGEST_KERNELS} == before


def test_only_the_core_compiles():
    """No package but anim/ (the core: numpy and numba) defines a compiled function, so
    ``_dispatchers`` finds them all."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    jit = re.compile(r"@(numba\.)?(n?jit|cfunc|vectorize|guvectorize|generated_jit)\b|\bn?jit\(")
    found = [str(f.relative_to(root)) for pkg in ("game", "systems", "components", "demo", "scuffle")
             for f in (root / pkg).rglob("*.py") if jit.search(f.read_text(encoding="utf-8"))]
    assert not found, found
