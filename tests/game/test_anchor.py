"""The bench's C++ anchor: the pose pipeline's maths in scalar C++ (game/tools/anchor).

Built with the machine's compiler into a cache folder (never the source tree), run on a
small crowd, its poses equal the kernel's (pose_plan) to a tolerance: the angles come
from libm there and from scuffle.anim.maths.detmath here. Without a compiler the bench says
why and goes on. No timing is asserted (speed is the bench's).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scuffle.game.tools import bench

needs_cxx = pytest.mark.skipif(bench._compiler() is None, reason="no C++ compiler here")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One build folder for the module's tests (the compiler runs once)."""
    return tmp_path_factory.mktemp("anchor-cache")


@needs_cxx
@pytest.mark.slow
def test_the_anchor_builds_into_the_cache_and_poses_as_the_kernel(cache):
    src_dir = Path(bench.__file__).with_name("anchor")
    before = sorted(p.name for p in src_dir.iterdir())
    r = bench.run_anchor(37, repeats=2, cache_dir=str(cache))
    assert r["built"] is True and r["humans"] == 37, r
    assert r["cpp_ns_per_human"] > 0 and r["kernel_ns_per_human"] > 0 and r["ratio"] > 0
    assert r["max_pos_diff"] <= 1e-5 and r["max_rot_diff"] <= 1e-5, r
    built = list(cache.iterdir())
    assert len(built) == 1 and built[0].name.startswith("pose_anchor-")
    assert sorted(p.name for p in src_dir.iterdir()) == before            # nothing written beside the source
    again, _ = bench.build_anchor(str(cache))                              # built once per source and compiler
    assert again == str(built[0])


def test_without_a_compiler_the_anchor_says_why(tmp_path, monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))                               # a PATH with no compiler on it
    exe, why = bench.build_anchor(str(tmp_path / "cache"))
    assert exe is None and "no C++ compiler" in why
    r = bench.run_anchor(5, repeats=1, cache_dir=str(tmp_path / "cache"))
    assert r == {"built": False, "reason": why}


@needs_cxx
def test_the_anchor_refuses_an_input_that_is_not_its_own(tmp_path, cache):
    import subprocess

    exe, _ = bench.build_anchor(str(cache))
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"not an anchor input")
    p = subprocess.run([exe, str(bad), str(tmp_path / "out.bin"), "1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "not a pose anchor input" in p.stderr
    assert shutil.which(exe)
