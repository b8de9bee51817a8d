"""numba's cache folder is trusted only when it is this user's own (anim/engine/jitcache.py).

numba's cache index and data files are pickles that numba unpickles as it loads them:
whoever can write the folder runs code in every process that loads the kernels. A
folder that is a symbolic link, owned by another user or writable by others (or that
lies in a NUMBA_CACHE_DIR others can write without the sticky bit) is not read: the
kernels are cached in a private folder instead, said once on stderr.

Checked on real folders: the check itself in this process (chmod, a symbolic link, and
chown to another uid where this process may), then child processes given such a folder
as NUMBA_CACHE_DIR, holding an index planted to run code when unpickled: the same index
in a folder of this user's own runs (numba loads it: the threat is real), in the others
it is never read.
"""
from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scuffle.anim.engine import jitcache

ENV = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "SCUFFLE_COMPILE_ASIDE": "0"}
NOBODY = 65534


def _can_chown() -> bool:
    return hasattr(os, "chown") and hasattr(os, "geteuid") and os.geteuid() == 0


def _folder(tmp_path: Path, name: str, mode: int) -> Path:
    p = tmp_path / name
    p.mkdir()
    p.chmod(mode)
    return p


def test_a_folder_of_this_users_own_is_trusted(tmp_path):
    own = _folder(tmp_path, "own", 0o700)
    (own / "k.nbi").write_bytes(b"x")
    (own / "k.nbi").chmod(0o644)
    assert jitcache.folder_not_ours(str(own)) is None
    sub = _folder(own, "sub", 0o755)
    assert jitcache.folder_not_ours(str(sub), str(own)) is None
    # an ancestor with the sticky bit (as /tmp): no one else can rename what lies in it
    sticky = _folder(tmp_path, "sticky", 0o1777)
    inside = _folder(sticky, "cache", 0o755)
    assert jitcache.folder_not_ours(str(inside), str(sticky)) is None


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777, 0o757])
def test_a_cache_folder_others_can_write_is_not_ours(tmp_path, mode):
    folder = _folder(tmp_path, "cache", mode)
    why = jitcache.folder_not_ours(str(folder))
    if mode & 0o020 and not mode & 0o002 and jitcache._own_group_only(folder.stat().st_gid):
        assert why is None          # group-writable, the group this user's private one (umask 002)
    else:
        assert why == "is writable by other users"


def test_a_numba_cache_dir_others_can_write_is_not_ours(tmp_path):
    root = _folder(tmp_path, "root", 0o777)
    sub = _folder(root, "engine_x", 0o700)
    assert jitcache.folder_not_ours(str(sub), str(root)) == f"lies in {root}, which is writable by other users"
    assert jitcache.folder_not_ours(str(sub)) is None       # not in a folder the user named: itself only


def test_a_symbolic_link_or_a_file_others_can_write_is_not_ours(tmp_path):
    real = _folder(tmp_path, "real", 0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert jitcache.folder_not_ours(str(link)) == "is a symbolic link"
    index = real / "kernels_step.step_stacks-1.py311.nbi"
    index.write_bytes(b"x")
    index.chmod(0o666)
    assert jitcache.folder_not_ours(str(real)) == f"holds {index.name}, which is writable by other users"
    index.unlink()
    (real / "kernels_step.step_stacks-1.py311.nbi").symlink_to(tmp_path / "elsewhere")
    assert jitcache.folder_not_ours(str(real)) == f"holds {index.name}, which is a symbolic link"
    assert jitcache.folder_not_ours(str(tmp_path / "missing")).startswith("cannot be read")


@pytest.mark.skipif(not _can_chown(), reason="only root can give a folder to another user here")
def test_a_folder_or_file_of_another_user_is_not_ours(tmp_path):
    folder = _folder(tmp_path, "theirs", 0o755)
    os.chown(folder, NOBODY, NOBODY)
    assert jitcache.folder_not_ours(str(folder)) == f"is owned by another user (uid {NOBODY})"
    os.chown(folder, os.getuid(), os.getgid())
    index = folder / "kernels_pose.pose_stacks-1.py311.nbi"
    index.write_bytes(b"x")
    os.chown(index, NOBODY, NOBODY)
    assert jitcache.folder_not_ours(str(folder)) == f"holds {index.name}, which is owned by another user (uid {NOBODY})"
    # an ancestor of another user is not ours either, unless root's (as /tmp, /var/cache)
    root = _folder(tmp_path, "root", 0o755)
    sub = _folder(root, "engine_x", 0o700)
    os.chown(root, NOBODY, NOBODY)
    assert jitcache.folder_not_ours(str(sub), str(root)) == f"lies in {root}, which is owned by another user (uid {NOBODY})"


WHERE = """
import json
from scuffle.anim.engine import coldstart, jitcache, kernels as K
print(json.dumps({"cache": K.CACHE, "folder": coldstart.cache_folder(), "private": jitcache.PRIVATE,
                  "no_cache": jitcache.NO_CACHE}))
"""


def _python(code: str, cache_dir: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(ENV, NUMBA_CACHE_DIR=str(cache_dir), XDG_CACHE_HOME=str(home))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def _last_json(r: subprocess.CompletedProcess) -> dict:
    import json

    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_world_writable_numba_cache_dir_is_replaced_by_a_private_folder_said_once(tmp_path):
    home = _folder(tmp_path, "home", 0o700)
    shared = _folder(tmp_path, "shared", 0o777)
    r = _python(WHERE, shared, home)
    out = _last_json(r)
    private = home / "scuffle" / "numba"
    assert out["cache"] is True and out["no_cache"] == []
    assert out["folder"].startswith(str(private) + os.sep), out
    [(folder, why, instead)] = out["private"]
    assert folder.startswith(str(shared) + os.sep) and why == f"lies in {shared}, which is writable by other users"
    assert instead == out["folder"]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [jitcache.NOT_OURS_MESSAGE.format(folder=folder, why=why, private=instead)], r.stderr
    for p in (private.parent, private, Path(instead)):
        assert p.stat().st_mode & 0o777 == 0o700, p
    # the same folder, this user's own: used as it is, nothing said
    shared.chmod(0o700)
    again = _python(WHERE, shared, home)
    out = _last_json(again)
    assert out["folder"].startswith(str(shared) + os.sep) and out["private"] == [] and again.stderr == ""


def test_no_private_folder_either_compiles_for_the_process_only(tmp_path):
    shared = _folder(tmp_path, "shared", 0o777)
    home = _folder(tmp_path, "home", 0o777)          # the cache home others can write: no private folder there
    r = _python(WHERE, shared, home)
    out = _last_json(r)
    assert out["cache"] is False and out["folder"] is None and out["private"] == []
    assert "writable by other users" in out["no_cache"][0] and "no private folder" in out["no_cache"][0]
    assert not (home / "scuffle" / "numba").exists() or not list((home / "scuffle" / "numba").rglob("*.nb*"))


# A child that runs K.add (a small kernel: compiled in a second or two) and says where
# numba cached it.
ADD = """
import json
from scuffle.anim.engine import coldstart, kernels as K
print(json.dumps({"sum": K.add(1.0, 2.0), "folder": coldstart.cache_folder()}))
"""


class _Planted:
    """An object whose unpickling makes a folder: the proof that a pickle was loaded."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.makedirs, (self.marker, 0o700, True))


def _plant(index: Path, marker: Path) -> None:
    """Replace numba's index ``index`` by one whose first pickle (numba's version) makes
    ``marker`` when loaded."""
    index.write_bytes(pickle.dumps(_Planted(str(marker))) + index.read_bytes())


@pytest.mark.slow
def test_numba_never_loads_an_index_planted_in_a_folder_not_ours(tmp_path):
    home = _folder(tmp_path, "home", 0o700)
    own = _folder(tmp_path, "own", 0o700)
    first = _last_json(_python(ADD, own, home))
    assert first["sum"] == 3.0
    [index] = Path(first["folder"]).glob("kernels_maths._add-*.nbi")
    clean = tmp_path / "clean"
    shutil.copytree(own, clean)
    # the control: planted in this user's own folder, numba unpickles it (the threat is real)
    _plant(index, tmp_path / "ran-own")
    assert _last_json(_python(ADD, own, home))["sum"] == 3.0
    assert (tmp_path / "ran-own").is_dir()
    # the same folder made world-writable, or (where this process may) given to another user
    cases = {"world-writable": 0o777}
    if _can_chown():
        cases["another user's"] = 0o755
    for n, (case, mode) in enumerate(cases.items()):
        folder = tmp_path / f"case{n}"
        shutil.copytree(clean, folder)
        _plant(folder / index.relative_to(own), tmp_path / f"ran-{n}")
        folder.chmod(mode)
        if case == "another user's":
            for p in [folder, *folder.rglob("*")]:
                os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
        r = _python(ADD, folder, home)
        out = _last_json(r)
        assert out["sum"] == 3.0, case
        assert not (tmp_path / f"ran-{n}").exists(), case           # the planted index was never read
        assert out["folder"].startswith(str(home / "scuffle" / "numba")), (case, out)
        assert r.stderr.count("its files are pickles numba would load") == 1, (case, r.stderr)
