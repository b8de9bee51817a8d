"""The cold start installs numba's cache files without unpickling them (anim.engine.coldstart's
install_cached, anim.engine.cacheindex): an index is read and merged as pickle opcodes.

Checked here: index files crafted to run code when unpickled (in the version's pickle, in a
key, dressed as numba's own type rebuild, a global numba's keys never name, a data file name
out of the function's) are refused by the reader, install nothing from the source folder and
are replaced, never merged, in the target folder, with the process checked for the side
effect; every index numba writes for the engine's kernels reads back whole; and (slow) two
signatures of one function compiled by numba into two folders merge into one index from
which a fresh process loads both without compiling.
"""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import pytest
from numba.core.serialize import dumps

from scuffle.anim.engine import cacheindex, coldstart

BASE = "kernels_pose.pose_stacks-955.py311"


class _MakesFolder:
    """Unpickled, it makes a folder: the proof that a pickle was loaded (os.mkdir is called)."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


class _DressedAsNumba:
    """Unpickled, numba's type rebuild would call os.mkdir (its first argument is the callable)."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        from numba.core.types.abstract import _type_reconstructor
        return (_type_reconstructor, (os.mkdir, (self.path,), None))


class _NumbaUnpickle:
    """A global of numba that unpickles bytes (cloudpickle's by-value functions use it)."""

    def __reduce__(self):
        from numba.core import serialize
        return (serialize._numba_unpickle, (0, pickle.dumps(1), 0))


def _index(stamp, overloads: dict, version=None) -> bytes:
    """An index in numba's layout (numba/core/caching.py): the version, then (stamp, overloads)."""
    return pickle.dumps(numba.__version__ if version is None else version, protocol=-1) + dumps((stamp, overloads))


def _crafted(marker: Path) -> dict[str, bytes]:
    """Indexes that make ``marker`` when unpickled, each in another place."""
    m = str(marker)
    return {
        "in the version": _index("now", {"k": f"{BASE}.1.nbc"}, version=_MakesFolder(m)),
        "in a key": _index("now", {("sig", _MakesFolder(m)): f"{BASE}.1.nbc"}),
        "in the stamp": _index(_MakesFolder(m), {"k": f"{BASE}.1.nbc"}),
        "dressed as numba's type rebuild": _index("now", {_DressedAsNumba(m): f"{BASE}.1.nbc"}),
        "numba's unpickler": _index("now", {_NumbaUnpickle(): f"{BASE}.1.nbc"}),
        "after the index": _index("now", {"k": f"{BASE}.1.nbc"}) + pickle.dumps(_MakesFolder(m)),
    }


def _loads_in_a_child(path: Path) -> subprocess.CompletedProcess:
    """numba's own read of an index (pickle.load, then pickle.loads of the rest), in a child."""
    code = ("import pickle, sys\nwith open(sys.argv[1], 'rb') as f:\n    pickle.load(f)\n    pickle.loads(f.read())\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)


def test_crafted_indexes_run_code_when_unpickled(tmp_path):
    """The control: each crafted index would make its folder in a process that unpickled it."""
    for i, where in enumerate(_crafted(tmp_path / "made")):
        if where in ("numba's unpickler", "after the index"):
            continue                        # refused for what it names / where it lies, not for a side effect
        marker = tmp_path / f"made-{i}"
        path = tmp_path / f"{i}.nbi"
        path.write_bytes(_crafted(marker)[where])
        _loads_in_a_child(path)
        assert marker.is_dir(), where


def test_the_reader_refuses_a_crafted_index_and_runs_nothing(tmp_path):
    marker = tmp_path / "made"
    for where, data in _crafted(marker).items():
        with pytest.raises(cacheindex.BadIndex):
            cacheindex.read_index(data, BASE)
        assert not marker.exists(), where
    bad_names = ["../../escape.1.nbc", f"{BASE}.0.nbc", f"other.{BASE}.1.nbc", f"{BASE}.1.nbc/x", f"{BASE}.1.nbi"]
    for name in bad_names:
        with pytest.raises(cacheindex.BadIndex, match="data file name"):
            cacheindex.read_index(_index("now", {"k": name}), BASE)
    # a module numba's keys never name, though under an allowed package: refused by its name
    main = _index("now", {"k": f"{BASE}.1.nbc"}).replace(b"\x8c\x01k", b"\x8c\x10scuffle.__main__\x8c\x04main\x93")
    with pytest.raises(cacheindex.BadIndex, match="never name"):
        cacheindex.read_index(main, BASE)
    for cut in (b"", b"\x80\x04", _index("now", {"k": f"{BASE}.1.nbc"})[:-1]):
        with pytest.raises(cacheindex.BadIndex):
            cacheindex.read_index(cut, BASE)


def test_install_takes_nothing_from_a_crafted_source_index(tmp_path):
    marker = tmp_path / "made"
    dst = tmp_path / "dst"
    for i, data in enumerate(_crafted(marker).values()):
        src = tmp_path / f"src{i}"
        src.mkdir(mode=0o700)
        (src / f"{BASE}.1.nbc").write_bytes(b"data")
        (src / f"{BASE}.nbi").write_bytes(data)
        assert coldstart.install_cached(str(src), str(dst), "kernels_pose.pose_stacks-") == []
    assert not marker.exists()
    assert not dst.exists() or list(dst.iterdir()) == []


def test_install_replaces_a_crafted_target_index_without_loading_it(tmp_path):
    """A crafted index in the target folder (this user's own: it would be merged if it
    were numba's) is replaced by the source's, its code never run, nothing of it kept."""
    marker = tmp_path / "made"
    src = tmp_path / "src"
    src.mkdir(mode=0o700)
    (src / f"{BASE}.1.nbc").write_bytes(b"new")
    (src / f"{BASE}.nbi").write_bytes(_index("now", {"k-new": f"{BASE}.1.nbc"}))
    for i, data in enumerate(_crafted(marker).values()):
        dst = tmp_path / f"dst{i}"
        dst.mkdir()
        (dst / f"{BASE}.nbi").write_bytes(data)
        assert coldstart.install_cached(str(src), str(dst), "kernels_pose.pose_stacks-") == [f"{BASE}.1.nbc",
                                                                                            f"{BASE}.nbi"]
        assert (dst / f"{BASE}.nbi").read_bytes() == (src / f"{BASE}.nbi").read_bytes()
        assert (dst / f"{BASE}.1.nbc").read_bytes() == b"new"
    assert not marker.exists()


def test_a_merge_keeps_the_target_entries_and_reads_back_as_numba_reads_it(tmp_path):
    """Keys of numba's shapes (numba types, nested tuples) merged as opcodes: the index
    numba would read holds both files' entries, a key both hold keeping its old file."""
    from numba import types

    sig_a = ((types.int64[:], types.float32[:, ::1]), ("x86_64", "cpu", "+avx"), ("h1", "h2"))
    sig_b = ((types.float64[::1], types.int32[:]), ("x86_64", "cpu", "+avx"), ("h1", "h2"))
    sig_c = ((types.boolean[:],), ("x86_64", "cpu", "+avx"), ("h1", "h2"))
    old = cacheindex.read_index(_index(b"stamp", {sig_a: f"{BASE}.1.nbc", sig_c: f"{BASE}.3.nbc"}), BASE)
    new = cacheindex.read_index(_index(b"stamp", {sig_b: f"{BASE}.1.nbc", sig_c: f"{BASE}.2.nbc"}), BASE)
    data, renamed = cacheindex.merge_index(old, new, BASE)
    assert renamed == {f"{BASE}.1.nbc": f"{BASE}.2.nbc", f"{BASE}.2.nbc": f"{BASE}.3.nbc"}
    stream = io.BytesIO(data)
    assert pickle.load(stream) == numba.__version__
    stamp, overloads = pickle.loads(stream.read())          # this test's own bytes, merged: numba's read
    assert stamp == b"stamp"
    assert overloads == {sig_a: f"{BASE}.1.nbc", sig_b: f"{BASE}.2.nbc", sig_c: f"{BASE}.3.nbc"}
    # each key written once (sig_c, which both hold, not again): the opcodes hold what numba reads
    merged = cacheindex.read_index(data, BASE)
    assert sorted(e.name for e in merged.entries) == sorted(overloads.values())
    again, renamed = cacheindex.merge_index(merged, new, BASE)    # merged once more: nothing added
    assert again == data and renamed == {f"{BASE}.1.nbc": f"{BASE}.2.nbc", f"{BASE}.2.nbc": f"{BASE}.3.nbc"}
    with pytest.raises(ValueError, match="stamp"):
        cacheindex.merge_index(old, cacheindex.read_index(_index(b"other", {sig_b: f"{BASE}.1.nbc"}), BASE), BASE)


@pytest.mark.slow
def test_every_index_numba_wrote_for_the_kernels_reads_whole():
    """The engine's kernels' own indexes (this run's cache) read as opcodes, entry for entry."""
    from scuffle.anim.playback.warmup import compile_kernels

    compile_kernels()
    folder = coldstart.cache_folder()
    if not folder:
        pytest.skip("no cache folder")
    indexes = sorted(Path(folder).glob("*.nbi"))
    assert indexes
    for path in indexes:
        data = path.read_bytes()
        base = path.name[:-len(".nbi")]
        index = cacheindex.read_index(data, base)
        stream = io.BytesIO(data)
        assert pickle.load(stream) == index.version
        _stamp, overloads = pickle.loads(stream.read())     # numba's own file of this run
        assert sorted(overloads.values()) == sorted(e.name for e in index.entries)
        merged, renamed = cacheindex.merge_index(index, index, base)
        assert cacheindex.read_index(merged, base).entries == index.entries or \
            [e.name for e in cacheindex.read_index(merged, base).entries] == [e.name for e in index.entries]
        assert set(renamed) == set(renamed.values())


def test_a_key_written_twice_reads_as_numba_reads_it():
    """An index whose pickle sets one key twice (numba's dict keeps the last): read as one
    entry, the last one's file, and merged into one."""
    key = (("int64", 1), "x86_64")                     # a key whose opcodes refer to no memo entry
    one = _index(b"stamp", {key: f"{BASE}.1.nbc"})
    head = io.BytesIO(one)
    pickle.load(head)
    start = head.tell()
    name = f"{BASE}.2.nbc".encode()
    # the pair set again just before the (stamp, overloads) tuple is made: key, name, SETITEM
    ops = pickle.dumps(key, protocol=4)[2:-1]          # (no PROTO, no STOP)
    ops = ops[9:] if ops[:1] == b"\x95" else ops        # (no FRAME)
    extra = ops + b"\x8c" + bytes([len(name)]) + name + b"s"
    at = one.rindex(b"\x86")                          # TUPLE2
    data = one[:at] + extra + one[at:]
    stream = io.BytesIO(data)
    pickle.load(stream)
    assert pickle.loads(stream.read())[1] == {key: f"{BASE}.2.nbc"}     # numba's read: the last one
    index = cacheindex.read_index(data, BASE)
    assert [e.name for e in index.entries] == [f"{BASE}.2.nbc"]
    merged, _ = cacheindex.merge_index(index, index, BASE)
    assert [e.name for e in cacheindex.read_index(merged, BASE).entries] == [f"{BASE}.2.nbc"]


class _OtherProcess:
    """A numba type as another process pickles it: the same state, but the ``_code`` that
    process gave the type (an interning counter; numba compares types without it)."""

    def __init__(self, t, code: int):
        self.t, self.code = t, code

    def __reduce__(self):
        fn, (rebuild, cls_args, state) = self.t.__reduce__()
        return fn, (rebuild, cls_args, {**state, "_code": self.code})


def test_a_key_two_processes_pickled_is_one_key():
    """The same signature compiled by two processes (the parent and a child compiling a
    kernel aside): its types' ``_code`` differ, and numba unpickles the two keys as one.
    Read as one entry (the last one's file), and a merge of the two indexes keeps one."""
    from numba import types

    t = types.Array(types.int32, 1, "C")
    here = ((t, types.int64), ("x86_64", "cpu", "+avx"), ("h1", "h2"))
    there = ((_OtherProcess(t, t._code + 1000), types.int64), ("x86_64", "cpu", "+avx"), ("h1", "h2"))
    assert pickle.dumps(here) != pickle.dumps(there) and pickle.loads(pickle.dumps(there)) == here
    both = _index(b"stamp", {here: f"{BASE}.1.nbc", there: f"{BASE}.2.nbc"})
    stream = io.BytesIO(both)
    pickle.load(stream)
    assert pickle.loads(stream.read())[1] == {here: f"{BASE}.2.nbc"}      # numba's read: one key, the last
    assert [e.name for e in cacheindex.read_index(both, BASE).entries] == [f"{BASE}.2.nbc"]
    old = cacheindex.read_index(_index(b"stamp", {here: f"{BASE}.1.nbc"}), BASE)
    new = cacheindex.read_index(_index(b"stamp", {there: f"{BASE}.1.nbc"}), BASE)
    assert old.entries[0].key == new.entries[0].key
    merged, renamed = cacheindex.merge_index(old, new, BASE)
    assert [e.name for e in cacheindex.read_index(merged, BASE).entries] == [f"{BASE}.1.nbc"]
    assert renamed == {f"{BASE}.1.nbc": f"{BASE}.1.nbc"}


SOURCE = '''
from numba import njit

@njit(cache=True)
def twice(x):
    return x + x
'''

COMPILE = '''
import sys
sys.path.insert(0, sys.argv[1])
import probe_mod
probe_mod.twice({arg})
'''

LOAD = '''
import json, sys
sys.path.insert(0, sys.argv[1])
import probe_mod
probe_mod.twice(2)
probe_mod.twice(2.5)
s = probe_mod.twice.stats
print(json.dumps({"hits": sum(s.cache_hits.values()), "misses": sum(s.cache_misses.values()),
                  "sigs": len(probe_mod.twice.signatures)}))
'''


@pytest.mark.slow
def test_two_signatures_compiled_apart_merge_and_load_without_compiling(tmp_path):
    """numba compiles ``twice`` for an int in one cache folder and for a float in
    another; install_cached merges the second into the first; a fresh process then
    loads both from the first without compiling either."""
    import json

    code = tmp_path / "code"
    code.mkdir()
    (code / "probe_mod.py").write_text(textwrap.dedent(SOURCE))
    caches = {arg: tmp_path / f"cache-{arg}" for arg in ("1", "1.5")}
    runs = []
    for arg, cache in caches.items():
        cache.mkdir(mode=0o700)
        runs.append(subprocess.Popen([sys.executable, "-c", COMPILE.format(arg=arg), str(code)],
                                     env=dict(os.environ, NUMBA_CACHE_DIR=str(cache)), stderr=subprocess.PIPE))
    for r in runs:
        assert r.wait(timeout=300) == 0, r.stderr.read() if r.stderr else ""
    folders = {arg: next(p.parent for p in cache.rglob("probe_mod.twice-*.nbi")) for arg, cache in caches.items()}
    prefix = "probe_mod.twice-"
    written = coldstart.install_cached(str(folders["1.5"]), str(folders["1"]), prefix)
    assert [w for w in written if w.endswith(".nbc")] and written[-1].endswith(".nbi")
    index = next(folders["1"].glob("*.nbi"))
    assert len(cacheindex.read_index(index.read_bytes(), index.name[:-4]).entries) == 2
    r = subprocess.run([sys.executable, "-c", LOAD, str(code)], env=dict(os.environ, NUMBA_CACHE_DIR=str(caches["1"])),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"hits": 2, "misses": 0, "sigs": 2}
