"""The first step on a fresh install: the two big kernels compile side by
side, the other one in a child process that installs it into numba's cache (anim.engine.coldstart).

Checked here: the argument types the child compiles for are those the engine calls the
kernels with (else the child's work is lost and the kernel compiles twice); the cache
files are installed whole, merged into an index that is there, never half-written; no
child on one core, under SCUFFLE_COMPILE_ASIDE=0, or for a kernel already compiled; root
motion compiled while the child runs for StateUpdate's own types; and,
in a fresh process with an empty cache (slow), a Game's first step takes the kernel from
the child, leaves no scratch folder or temporary file, and the next process finds every
kernel cached (no notice) and gets the same poses.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numba
import pytest
from numba.core.serialize import dumps

from scuffle.anim.engine import coldstart
from scuffle.anim.engine import kernels as K
from scuffle.anim.playback.player import Player
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.warmup import compile_kernels

from coldcache import cold_first_step, cold_warm, copy_cache

from .support import IDLE, synthetic_set

ENV = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}


def _engine():
    """A Player whose engine stepped and posed one human (the kernels compiled or loaded)."""
    p = Player()
    h = CharacterInstance(synthetic_set(), "a")
    p.change(h, p.loop(h, IDLE), 0.0)
    p.flush()
    p.step([h])
    p.pose([h])
    return p.batch


@pytest.mark.parametrize("name", ["step_stacks", "pose_stacks"])
def test_the_child_compiles_for_the_types_the_engine_calls_the_kernel_with(name):
    compile_kernels()
    engine = _engine()
    disp = getattr(K, name)
    sig = tuple(disp.typeof_pyval(a) for a in engine.kernel_args(name))
    assert sig in disp.signatures, (sig, disp.signatures)
    # the types travel to the child as plain JSON, never pickled
    assert coldstart.sig_from_plain(json.loads(json.dumps(coldstart.sig_plain(sig)))) == sig


@pytest.mark.parametrize("bad", [
    {"a": 1}, [["scalar", "object"]], [["array", "object", 1, "C", True, True]], [["array", "int64", 99, "C", True, True]],
    [["named", "Path", []]], [["named", "_private", []]], [["named", "StepRules", [["scalar", "int64"]]]],
    [["tuple", [["tuple", [["tuple", [["tuple", [["tuple", [["tuple", []]]]]]]]]]]]], [["scalar", "int64"]] * 65,
    [["call", "os.system", "true"]], [[]], ["int64"]])
def test_a_signature_not_of_the_plain_shapes_is_refused(bad):
    """What reaches the child is only numba scalars, arrays of listed dtypes, tuples, and
    anim.engine.kernel_types' named tuples with their own number of fields."""
    with pytest.raises(ValueError, match="sig_from_plain"):
        coldstart.sig_from_plain(bad)


def test_the_child_refuses_a_blob_that_is_not_a_plain_signature(tmp_path):
    """A pickle that would run code, or JSON of another shape, on the child's stdin: exit
    code 5, nothing compiled, nothing run."""
    if not K.CACHE:
        pytest.skip("no numba cache here")
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    cfg = {"kernel": "pose_stacks", "source": os.path.realpath(K.__file__), "target": str(tmp_path),
           "scratch": str(tmp_path / "scratch")}
    for blob in (pickle.dumps(Boom()), b'[["named", "os", []]]', b"\xff\xfe"):
        assert coldstart.compile_child(cfg, blob) == 5
    assert not marker.exists()


def test_root_motion_compiled_meanwhile_for_the_types_state_update_calls_it_with():
    """coldstart.meanwhile compiles root_motion_step while the child runs: for the very
    types a Game's StateUpdate (systems/motion.py) calls it with, else it compiles twice;
    it stops once the child has ended and skips a kernel that has a version already."""
    from scuffle import Game, demo_set

    g = Game()
    g.add_human("a", demo_set())
    g.change("a", g.player.loop(g.instance("a"), "FIGHT_IDLE"))
    g.step()
    g.close()
    disp = K.root_motion_step
    sig = tuple(disp.typeof_pyval(a) for a in coldstart.root_motion_args())
    assert disp.signatures == [sig], disp.signatures
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    assert coldstart.meanwhile(ended) == []
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert coldstart.meanwhile(running) == []               # compiled already: nothing to do
    finally:
        running.kill()
        running.wait()
    assert disp.signatures == [sig]


def test_kernel_args_rejects_another_kernel():
    with pytest.raises(ValueError, match="root_motion_step"):
        _engine().kernel_args("root_motion_step")


def _index(path: Path, stamp, overloads: dict) -> None:
    """An index in numba's layout (numba/core/caching.py): the version, then (stamp, overloads)."""
    path.write_bytes(pickle.dumps(numba.__version__, protocol=-1) + dumps((stamp, overloads)))


def _read_index(path: Path):
    with open(path, "rb") as f:
        version = pickle.load(f)
        return version, pickle.loads(f.read())


def test_install_copies_the_files_into_an_empty_folder(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst" / "deep"
    src.mkdir()
    base = "kernels_pose.pose_stacks-1687.py311"
    (src / f"{base}.1.nbc").write_bytes(b"data one")
    _index(src / f"{base}.nbi", ("stamp", 7), {("sig", 1): f"{base}.1.nbc"})
    (src / "kernels_pose._blend-382.py311.nbi").write_bytes(b"another function: not copied")
    written = coldstart.install_cached(str(src), str(dst), "kernels_pose.pose_stacks-")
    assert written == [f"{base}.1.nbc", f"{base}.nbi"]
    assert sorted(p.name for p in dst.iterdir()) == [f"{base}.1.nbc", f"{base}.nbi"]
    assert (dst / f"{base}.1.nbc").read_bytes() == b"data one"
    assert _read_index(dst / f"{base}.nbi") == (numba.__version__, (("stamp", 7), {("sig", 1): f"{base}.1.nbc"}))


def test_install_reads_only_this_users_own_files(tmp_path):
    """A source folder or index another user could write installs nothing; a target
    index another user could write is replaced, never read (numba's cache files are
    pickles numba loads: only this user's own are taken)."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    base = "kernels_step.step_stacks-1442.py311"
    (src / f"{base}.1.nbc").write_bytes(b"new")
    _index(src / f"{base}.nbi", "now", {"k-new": f"{base}.1.nbc"})
    src.chmod(0o777)
    assert coldstart.install_cached(str(src), str(dst), "kernels_step.step_stacks-") == []
    src.chmod(0o755)
    (src / f"{base}.nbi").chmod(0o666)
    assert coldstart.install_cached(str(src), str(dst), "kernels_step.step_stacks-") == []
    (src / f"{base}.nbi").chmod(0o644)
    (dst / f"{base}.1.nbc").write_bytes(b"other")
    _index(dst / f"{base}.nbi", "now", {"k-other": f"{base}.1.nbc"})
    (dst / f"{base}.nbi").chmod(0o666)
    assert coldstart.install_cached(str(src), str(dst), "kernels_step.step_stacks-") == [f"{base}.1.nbc", f"{base}.nbi"]
    assert _read_index(dst / f"{base}.nbi")[1] == ("now", {"k-new": f"{base}.1.nbc"})


def test_install_merges_into_a_fresh_index_and_replaces_a_stale_one(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    base = "kernels_step.step_stacks-1442.py311"
    (src / f"{base}.1.nbc").write_bytes(b"new")
    _index(src / f"{base}.nbi", "now", {"k-new": f"{base}.1.nbc"})
    # a fresh index (same stamp) with another signature in data file 1: kept, the new one is 2
    (dst / f"{base}.1.nbc").write_bytes(b"other")
    _index(dst / f"{base}.nbi", "now", {"k-other": f"{base}.1.nbc"})
    assert coldstart.install_cached(str(src), str(dst), "kernels_step.step_stacks-") == [f"{base}.2.nbc", f"{base}.nbi"]
    assert _read_index(dst / f"{base}.nbi")[1] == ("now", {"k-other": f"{base}.1.nbc", "k-new": f"{base}.2.nbc"})
    assert (dst / f"{base}.1.nbc").read_bytes() == b"other" and (dst / f"{base}.2.nbc").read_bytes() == b"new"
    # the same signature again: its own data file is overwritten, nothing added
    (src / f"{base}.1.nbc").write_bytes(b"newer")
    coldstart.install_cached(str(src), str(dst), "kernels_step.step_stacks-")
    assert _read_index(dst / f"{base}.nbi")[1] == ("now", {"k-other": f"{base}.1.nbc", "k-new": f"{base}.2.nbc"})
    assert (dst / f"{base}.2.nbc").read_bytes() == b"newer"
    # a stale index (an older source) or a cut one: replaced by the new entry alone
    for old in (lambda p: _index(p, "before", {"k-old": f"{base}.1.nbc"}), lambda p: p.write_bytes(b"\x80\x04")):
        old(dst / f"{base}.nbi")
        coldstart.install_cached(str(src), str(dst), "kernels_step.step_stacks-")
        assert _read_index(dst / f"{base}.nbi")[1] == ("now", {"k-new": f"{base}.1.nbc"})
        assert (dst / f"{base}.1.nbc").read_bytes() == b"newer"
    assert not [p for p in dst.iterdir() if ".tmp." in p.name]


def test_no_child_for_a_kernel_compiled_here_or_when_turned_off(monkeypatch):
    compile_kernels()
    started = dict(coldstart.ASIDE)
    assert not coldstart.compile_aside("pose_stacks", lambda: pytest.fail("asked for arguments"))
    monkeypatch.setenv(coldstart.ASIDE_ENV, "0")
    assert not coldstart.aside_allowed()
    assert coldstart.ASIDE == started


def _python(code: str, env: dict, timeout: float = 60, one_core: bool = False) -> subprocess.CompletedProcess:
    pre = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if one_core else None
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **ENV, **env), capture_output=True,
                          text=True, timeout=timeout, preexec_fn=pre)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
@pytest.mark.slow
def test_no_child_on_one_core_without_a_cache_or_python(tmp_path):
    code = "from scuffle.anim.engine import coldstart; print(coldstart.aside_allowed())"
    cache = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    assert _python(code, cache, one_core=True).stdout.split() == ["False"]
    assert _python(code, dict(cache, NUMBA_DISABLE_JIT="1")).stdout.split() == ["False"]
    # a host embedding Python, whose sys.executable is its own program
    host = "import sys; sys.executable = '/opt/host/bin/game-editor'\n" + code
    assert _python(host, cache).stdout.split() == ["False"]
    if len(os.sched_getaffinity(0)) >= 2:
        assert _python(code, cache).stdout.split() == ["True"]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="one core: no child")
def test_a_first_step_on_a_cold_cache_takes_the_pose_kernel_from_the_child(tmp_path_factory):
    """A Game's first steps on an empty cache (tests/coldcache.py: the session's one cold
    first step, also checked by tests/tools/test_cli_kit.py)."""
    import json

    run = cold_first_step(tmp_path_factory)
    first = run["first"]
    assert first["code"] == 0, first["stderr"][-3000:]
    one = json.loads(first["stdout"].strip().splitlines()[-1])
    # the first poses' kernel (pose_lean) came from the child: loaded from the cache, not compiled here
    assert [(a["kernel"], a["ok"]) for a in one["aside"]] == [("pose_lean", True)]
    assert (one["lean_hits"], one["lean_misses"]) == (1, 0)
    # the background compile installed pose_stacks: the last pose loaded it from the cache
    assert (one["pose_hits"], one["pose_misses"]) == (1, 0) and one["pose_kernel"] == "pose_stacks"
    # where the wall went: the child's stages from its spawn, in order, and the parent's wait
    stages = one["aside"][0]["child_stages_s"]
    assert list(stages) == ["started", "imported", "compiled", "installed"], stages
    assert 0 <= stages["started"] <= stages["imported"] <= stages["compiled"] <= stages["installed"]
    assert stages["installed"] <= one["aside"][0]["child_s"] and one["aside"][0]["waited_s"] >= 0
    assert one["cached"]                                           # every kernel the step calls is cached
    # root motion compiled once: while the child ran (coldstart.meanwhile) for StateUpdate's very types, or after
    assert len(one["motion"]) == 1 and one["aside"][0]["meanwhile"] in ([], ["root_motion_step"]), one["aside"]
    assert run["scratch_left"] == []                               # the child's folder is gone
    assert run["temporary_files"] == []
    assert first["stderr"].count("compiling the animation kernels (once per install") == 1
    # the kernels the steps did not call (the prepared commands') compiled in the background
    assert one["rest"] == 0 and one["all_cached"]
    # the next process: nothing to compile, nothing said, no child, the same poses from the cache
    again = run["again"]
    assert again["code"] == 0, again["stderr"][-3000:]
    two = json.loads(again["stdout"].strip().splitlines()[-1])
    assert two["aside"] == [] and two["cached"] and "compiling" not in again["stderr"]
    assert two["rest"] is None and two["all_cached"]
    assert two["poses"] == one["poses"]


ORPHAN = """
import os
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip
from scuffle.anim.playback.player import Player
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.engine.stack import CharacterInstance
rot = {1: [(0, (0.0, 0.0, 0.0, 1.0)), (8, (0.1, 0.0, 0.0, 0.995))]}
aset = AnimSet.build({0: author_clip("k0", 8, rotations=rot)}, {0: author_range()}, name="k")
p = Player()
h = CharacterInstance(aset, "a")
p.change(h, p.loop(h, 0), 0.0)
p.flush()
p.step([h])                     # step_stacks from the cache; pose_lean compiled in the child
os._exit(0)                     # dies before it poses: no await, no atexit
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="one core: no child")
def test_a_child_whose_parent_died_still_installs_its_kernel_and_cleans_up(tmp_path, tmp_path_factory):
    """A cache holding every kernel but the pose's (a copy of the session's cold-compiled
    cache, tests/coldcache.py): the parent loads the step kernel, starts the child that
    compiles the first poses' kernel (pose_lean, pose_stacks not being cached), and dies
    before it poses."""
    import time

    warm = cold_warm(tmp_path_factory)
    assert warm["warm"]["code"] == 0, warm["warm"]["stderr"][-3000:]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    cache = copy_cache(warm["cache"], tmp_path / "numba", leave_out="kernels_pose.pose_")
    assert not list(cache.rglob("kernels_pose.pose_*")) and list(cache.rglob("kernels_step.step_stacks-*.nbi"))
    env = {"NUMBA_CACHE_DIR": str(cache), "TMPDIR": str(scratch)}
    r = _python(ORPHAN, env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    deadline = time.monotonic() + 600
    while list(scratch.iterdir()) and time.monotonic() < deadline:
        time.sleep(1.0)
    assert list(scratch.iterdir()) == []               # the child removed its folder
    assert list(cache.rglob("kernels_pose.pose_lean-*.nbi")) and list(cache.rglob("kernels_pose.pose_lean-*.nbc"))
    check = "from scuffle.anim.engine import coldstart; print(coldstart.kernel_cached('pose_lean'))"
    assert _python(check, env).stdout.split() == ["True"]


def test_no_module_of_scuffle_unpickles_anything():
    """Nothing scuffle ships loads a pickle (numba loads its own cache; anim.engine.cacheindex
    reads numba's indexes as opcodes): every source file under the package's folders."""
    root = Path(coldstart.__file__).resolve().parents[2]
    found = []
    scanned = 0
    for folder in ("anim", "components", "systems", "game", "demo", "scuffle"):
        for path in (root / folder).rglob("*.py"):
            scanned += 1
            src = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(root)}: {bad}" for bad in
                      ("pickle.load", "Unpickler", "marshal.load", "allow_pickle=True") if bad in src]
    assert scanned > 100 and found == []
