"""numba's on-disk cache.

- A corrupt cache (an empty or cut ``.nbi`` index or ``.nbc`` data file) would break
  every run until deleted by hand: it is found when anim/engine/kernels.py is imported, set
  aside (``set-aside/`` in the cache folder) and rebuilt, with one line on stderr.
- An install numba cannot write to, run with no usable home, would crash on import
  (even ``scuffle clip``): the kernels compile for the process only, said once.
- ``NUMBA_DISABLE_JIT=1`` runs without the "compiling" announcement.

The runs are subprocesses with their own NUMBA_CACHE_DIR, seeded from this session's
compiled cache (a copy: nothing here compiles the whole engine cold); the few that
compile or run several processes are marked slow. The detection itself is checked in
this process on copies of the live cache, healthy ones included (no false alarm, which
would recompile on every run).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scuffle.anim.engine import jitcache
from scuffle.anim.engine import kernels as K
from scuffle.anim.data.clip import encode_clip
from scuffle.anim.playback.warmup import compile_kernels

from .support import IDLE, synthetic_set

LIMIT = 300
VICTIM = "root_motion_step"           # the kernel whose cache files a probe breaks (quick to rebuild)
SCENARIO = ('updates = 3\n[sets.d]\nlibrary = "demo"\n[[humans]]\nname = "a"\nset = "d"\n'
            '[[commands]]\nupdate = 0\nhuman = "a"\nloop = 358\n')


def _env(**extra) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    e.update({"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"})
    e.update({k: str(v) for k, v in extra.items() if v is not None})
    for k, v in extra.items():
        if v is None:
            e.pop(k, None)
    return e


def _scuffle(args, cwd, timeout=LIMIT, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scuffle", *args], cwd=cwd, env=_env(**env), capture_output=True,
                          text=True, timeout=timeout)


def _breaks(kind: str, folder: Path) -> list[Path]:
    """Break the victim kernel's files in ``folder``: an empty or cut index or data file."""
    ext = "nbi" if kind.endswith("nbi") else "nbc"
    files = [Path(f) for f in glob.glob(str(folder / f"kernels_motion.{VICTIM}-*.{ext}"))]
    assert files, f"no {ext} file of {VICTIM} in {folder}"
    for f in files:
        data = f.read_bytes()
        f.write_bytes(b"" if kind.startswith("empty") else data[:len(data) // 2])
    return files


@pytest.fixture(scope="module")
def live_cache() -> Path:
    """This session's compiled kernels' cache folder (compiled here if cold)."""
    if not K.CACHE:
        pytest.skip("numba has no cache folder in this session")
    compile_kernels()
    return Path(K.step_stacks._cache._cache_path)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, live_cache) -> Path:
    """A NUMBA_CACHE_DIR template holding a copy of the live cache, where numba looks for it."""
    root = tmp_path_factory.mktemp("numba_template")
    r = subprocess.run([sys.executable, "-c", "from scuffle.anim.engine import kernels as K; "
                        "print(K.step_stacks._cache._cache_path)"], env=_env(NUMBA_CACHE_DIR=root),
                       capture_output=True, text=True, timeout=LIMIT, cwd=root)
    # cwd: imported as the runs below import it (numba names the cache's sub-folder after the
    # source's path; run from the repository's root, scuffle would come from its folders)
    assert r.returncode == 0, r.stderr
    sub = Path(r.stdout.strip())
    sub.mkdir(parents=True, exist_ok=True)
    for f in glob.glob(str(live_cache / "kernels_*.nb*")):
        shutil.copy2(f, sub)
    return root


def _copy(seeded: Path, tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "numba"
    shutil.copytree(seeded, root)
    (sub,) = [p for p in root.iterdir() if p.is_dir()]
    (tmp_path / "ok.toml").write_text(SCENARIO)
    return root, sub


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["empty nbi", "cut nbi", "empty nbc", "cut nbc", "healthy"])
def test_the_check_finds_every_broken_file_and_only_those(tmp_path, live_cache, kind):
    """check_cache_folder on a copy of the live cache: the broken kernel's files (and
    only its) move to set-aside/; a healthy copy is left exactly as it was."""
    folder = tmp_path / "cache"
    folder.mkdir()
    for f in glob.glob(str(live_cache / "kernels_*.nb*")):
        shutil.copy2(f, folder)
    before = sorted(p.name for p in folder.iterdir())
    if kind != "healthy":
        _breaks(kind, folder)
    moved = jitcache.check_cache_folder(str(folder), "kernels_motion")
    listing = "kernels_motion" + jitcache.CHECKED_SUFFIX
    if kind == "healthy":
        assert moved == [] and sorted(p.name for p in folder.iterdir()) == sorted([*before, listing])
        return
    assert not (folder / listing).exists()          # nothing listed as whole while a file was not
    assert moved and all(n.startswith(f"kernels_motion.{VICTIM}-") for n in moved)
    left = sorted(p.name for p in folder.iterdir() if p.is_file())
    assert left == [n for n in before if n not in moved]
    assert len(list((folder / jitcache.SET_ASIDE_FOLDER).iterdir())) == len(moved)
    assert jitcache.check_cache_folder(str(folder), "kernels_motion") == []      # once set aside, quiet


def test_files_found_whole_are_not_read_again_until_one_changes(tmp_path, live_cache, monkeypatch):
    """Every process checks the cache as it loads the kernels: files found whole are listed
    (name, size, time, inode, under numba's version and the named tuples module's file), and
    a check that finds the same listing reads none of them. A file rewritten, touched, cut or
    added, another kernel_types, or a listing that is not one has them all read again."""
    from scuffle.anim.engine import kernel_types

    folder = tmp_path / "cache"
    folder.mkdir()
    for f in glob.glob(str(live_cache / "kernels_motion.*.nb*")):
        shutil.copy2(f, folder)
    listing = folder / ("kernels_motion" + jitcache.CHECKED_SUFFIX)
    assert jitcache.check_cache_folder(str(folder), "kernels_motion") == [] and listing.is_file()
    reads: list[int] = []
    scan = jitcache._scan
    monkeypatch.setattr(jitcache, "_scan", lambda stream: reads.append(1) or scan(stream))

    def check() -> tuple[list[str], int]:
        reads.clear()
        return jitcache.check_cache_folder(str(folder), "kernels_motion"), len(reads)

    assert check() == ([], 0)
    data = sorted(folder.glob(f"kernels_motion.{VICTIM}-*.nbc"))[0]
    st = data.stat()
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 1))            # the same bytes, touched
    moved, read = check()
    assert moved == [] and read > 0
    assert check() == ([], 0)                                          # listed again
    renamed = folder / "copy"
    shutil.copy2(data, renamed)
    os.replace(renamed, data)                                          # rewritten as numba does: a new inode
    assert check()[1] > 0
    shutil.copy2(data, folder / data.name.replace(".nbc", "9.nbc"))    # a file more
    assert check()[1] > 0
    for bad in (b"\xff\xfe not a listing", b"x" * (jitcache._CHECKED_MAX + 1)):
        listing.write_bytes(bad)
        assert check()[1] > 0
    assert check() == ([], 0)
    with monkeypatch.context() as m:
        m.setattr(kernel_types, "__file__", str(data))                 # another named tuples module
        assert check()[1] > 0
    assert check()[1] > 0 and check() == ([], 0)
    _breaks("cut nbc", folder)                                         # cut after it was listed
    moved, _ = check()
    assert moved and all(n.startswith(f"kernels_motion.{VICTIM}-") for n in moved)


def test_a_listing_is_written_whole_or_not_at_all(tmp_path, live_cache):
    """A listing that cannot be written (its name taken by a folder): the files are read
    on each check, nothing fails, and no temporary file is left."""
    folder = tmp_path / "cache"
    folder.mkdir()
    for f in glob.glob(str(live_cache / "kernels_motion.*.nb*")):
        shutil.copy2(f, folder)
    (folder / ("kernels_motion" + jitcache.CHECKED_SUFFIX)).mkdir()
    before = sorted(p.name for p in folder.iterdir())
    for _ in range(2):
        assert jitcache.check_cache_folder(str(folder), "kernels_motion") == []
        assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["empty nbi", "cut nbi", "empty nbc", "cut nbc"])
def test_a_corrupt_cache_is_set_aside_and_rebuilt_with_one_line(tmp_path, seeded, kind):
    """A run on a cache with the victim's files broken: status 0, one line saying what
    was set aside; the next run neither sets aside nor compiles."""
    root, sub = _copy(seeded, tmp_path)
    _breaks(kind, sub)
    r = _scuffle(["run", "ok.toml"], tmp_path, NUMBA_CACHE_DIR=root)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert sum("set aside" in line for line in r.stderr.splitlines()) == 1, r.stderr
    again = _scuffle(["run", "ok.toml"], tmp_path, NUMBA_CACHE_DIR=root)
    assert again.returncode == 0, again.stderr
    assert "set aside" not in again.stderr and "compiling" not in again.stderr, again.stderr


def _read_only_install(tmp_path: Path) -> Path:
    """A copy of the package whose anim floors' __pycache__ cannot be folders (a file
    stands there: no in-tree cache even for root), the files made read-only."""
    src = Path(K.__file__).resolve().parents[2]
    pkg = tmp_path / "site" / "scuffle"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(src / "scuffle", pkg, ignore=ignore)
    for name in ("anim", "components", "systems", "game", "demo"):
        shutil.copytree(src / name, pkg / name, ignore=ignore)
    for floor in [pkg / "anim", *(d for d in (pkg / "anim").iterdir() if d.is_dir())]:
        (floor / "__pycache__").write_text("not a folder\n")
    for p in sorted(pkg.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    return tmp_path / "site"


def _no_home(site: Path) -> dict:
    return dict(PYTHONPATH=site, HOME="/dev/null", XDG_CACHE_HOME=None, NUMBA_CACHE_DIR=None,
                PYTHONDONTWRITEBYTECODE="1")


@pytest.mark.slow
def test_an_install_with_no_writable_cache_folder_imports_and_decodes(tmp_path):
    """Read-only install, HOME unusable, no NUMBA_CACHE_DIR: ``scuffle clip`` runs (no
    crash on import), and the kernels module reports it compiles without a cache."""
    site = _read_only_install(tmp_path)
    s = synthetic_set()
    desc, keys = encode_clip(s.clip(IDLE))
    (tmp_path / "a.desc").write_bytes(desc)
    (tmp_path / "a.keys").write_bytes(keys)
    r = _scuffle(["clip", "a.desc", "a.keys"], tmp_path, **_no_home(site))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.startswith("clip ")
    probe = subprocess.run([sys.executable, "-c", "import scuffle.anim.engine.kernels as K, scuffle.anim.engine.jitcache as J; "
                            "print(K.__file__); print(K.CACHE); print(J.NO_CACHE[0])"],
                           cwd=tmp_path, env=_env(**_no_home(site)), capture_output=True, text=True, timeout=LIMIT)
    path, cache, why = probe.stdout.splitlines()
    assert path.startswith(str(site)) and cache == "False" and "no writable cache folder" in why


@pytest.mark.slow
def test_an_install_with_no_writable_cache_folder_runs_and_says_so_once(tmp_path):
    """The same install runs a scenario: the kernels compile for the run only, said in
    one line, and nothing is written into the install."""
    site = _read_only_install(tmp_path)
    (tmp_path / "ok.toml").write_text(SCENARIO)
    before = sorted(str(p) for p in site.rglob("*"))
    r = _scuffle(["run", "ok.toml"], tmp_path, **_no_home(site))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert sum("no writable cache folder" in line for line in lines) == 1, r.stderr
    assert not any("cached for the next runs" in line for line in lines), r.stderr
    assert sorted(str(p) for p in site.rglob("*")) == before


@pytest.mark.slow
def test_numba_disable_jit_runs_without_the_announcement(tmp_path):
    """NUMBA_DISABLE_JIT=1 with an empty cache folder: nothing compiles, nothing is said
    about compiling, the run succeeds and the cache folder stays empty."""
    root = tmp_path / "numba"
    root.mkdir()
    (tmp_path / "ok.toml").write_text(SCENARIO)
    r = _scuffle(["run", "ok.toml"], tmp_path, NUMBA_DISABLE_JIT=1, NUMBA_CACHE_DIR=root)
    assert r.returncode == 0, r.stderr
    assert "compil" not in r.stderr and r.stderr.strip().startswith("ok.toml: 3 updates, 1 humans"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr            # the run's summary line only
    assert list(root.iterdir()) == []


def test_a_warm_cache_is_never_set_aside_on_import(live_cache):
    """A fresh process importing the kernels over this session's whole cache sets nothing
    aside: the check reads the index (whose signatures name the kernels' interface
    classes) while anim.engine.kernels is still importing, and must not take a class it cannot
    import yet for a cut file (once, every warm start rebuilt the kernels)."""
    r = subprocess.run([sys.executable, "-c", "from scuffle.anim.engine import jitcache, kernels\n"
                        "print(jitcache.SET_ASIDE, kernels.CACHE)"],
                       capture_output=True, text=True, timeout=LIMIT, cwd=live_cache)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[]", "True"], (r.stdout, r.stderr)
    assert "set aside" not in r.stderr


@pytest.mark.parametrize("gone", [True, False])
def test_an_index_naming_a_named_tuple_the_kernels_no_longer_have_is_set_aside(tmp_path, gone):
    """A cache written by an install whose kernels took a named tuple since renamed or
    removed: numba's load of its index would raise (the class is looked up as the index
    is unpickled), so the check sets it aside; an index naming classes that exist stays."""
    import pickle
    from typing import NamedTuple

    import numba

    from scuffle.anim.engine import kernel_types

    class Gone(NamedTuple):
        x: int
    name = "GoneSinceTheCacheWasWritten" if gone else "CmdArgs"
    Gone.__module__, Gone.__qualname__ = kernel_types.__name__, name
    had = getattr(kernel_types, name, None)
    setattr(kernel_types, name, Gone)
    try:
        overloads = pickle.dumps(("stamp", {((Gone, "int64"), "cpu"): "kernels_motion.f-1.py311.1.nbc"}))
    finally:
        if had is None:
            delattr(kernel_types, name)
        else:
            setattr(kernel_types, name, had)
    (tmp_path / "kernels_motion.f-1.py311.nbi").write_bytes(pickle.dumps(numba.__version__) + overloads)
    (tmp_path / "kernels_motion.f-1.py311.1.nbc").write_bytes(pickle.dumps(b"machine code"))
    moved = jitcache.check_cache_folder(str(tmp_path), "kernels_motion")
    if gone:
        assert sorted(moved) == ["kernels_motion.f-1.py311.1.nbc", "kernels_motion.f-1.py311.nbi"]
    else:
        assert moved == []
