"""numba's on-disk cache of the kernels: whether there is one, and that it is whole.

Each kernel module (anim/kernels_*.py, anim/engine/cmdkernel.py) asks ``cache_setting()`` once,
before it compiles anything, for the ``cache=`` of its ``@njit`` kernels:

- no folder numba can write (NUMBA_CACHE_DIR, the install's __pycache__, the user's
  ~/.cache: a read-only install run with no usable home): False, the kernels compile for
  the process only (``NO_CACHE`` says why; the command line says so once);
- a folder that is not this user's own (``folder_not_ours``: a symbolic link, owned by
  another user, writable by others; or an ancestor up to NUMBA_CACHE_DIR that others can
  rename it through): numba's cache files are pickles that numba unpickles as it loads
  them, so whoever can write there runs code in this process. The kernels are cached in a
  private folder instead (``PRIVATE``: ``$XDG_CACHE_HOME/scuffle/numba``, made 0700;
  numba's usual folder is not read), said once on the ``scuffle`` logger; with no such
  folder either, they compile for the process only;
- a cache holding files that cannot be whole (an empty or cut ``.nbi`` index or ``.nbc``
  data file: numba would raise on loading them, every run until someone deletes them):
  those of the function are moved aside into ``set-aside/`` in the cache folder, and
  numba rebuilds them (``SET_ASIDE`` names them; one line on the ``scuffle`` logger says so, which an
  unconfigured host sees on stderr);
- else True.

The check reads every index (small pickles) and every data file's pickle stream as
opcodes only (``_strings``: nothing looked up, built or run), in some tens of milliseconds. numba's own file
layout (numba/core/caching.py, IndexDataCacheFile): an index holds the pickled numba
version, then the pickled (source stamp, {key: data file name}).
"""
from __future__ import annotations

import glob
import io
import os
import time

__all__ = ["cache_setting", "NO_CACHE", "SET_ASIDE", "check_cache_folder", "SET_ASIDE_FOLDER", "linked_modules",
           "linked_sha256", "PRIVATE", "folder_not_ours", "private_folder", "NOT_OURS_MESSAGE"]

NO_CACHE: list[str] = []          # why the kernels are not cached (empty: they are)
SET_ASIDE: list[str] = []         # cache files found corrupt and moved aside this process
SET_ASIDE_FOLDER = "set-aside"
# numba's usual folder, why it is not this user's own, and the private folder used instead
# (once per process: every kernel module of a floor shares the folder)
PRIVATE: list[tuple[str, str, str]] = []
NOT_OURS_MESSAGE = ("numba's cache folder {folder} {why}: its files are pickles numba would load; "
                    "the kernels are cached in {private} instead")
_PRIVATE_FOR: dict[str, str] = {}   # a kernel module's folder -> the private cache folder of its kernels


def linked_modules(module_file: str) -> list[str]:
    """The modules whose numba functions ``module_file``'s kernels link: anim's detmath,
    its rules (the task rules Python runs too) and the kernels_* modules it imports, with
    theirs; sorted stems (anim's floors hold each stem once)."""
    import re

    anim = os.path.dirname(os.path.dirname(os.path.abspath(module_file)))
    files = {os.path.splitext(os.path.basename(p))[0]: p
             for p in glob.glob(os.path.join(anim, "*", "*.py"))}
    seen: set[str] = set()
    todo = [os.path.splitext(os.path.basename(module_file))[0]]
    while todo:
        with open(files[todo.pop()], encoding="utf-8") as f:
            src = f.read()
        for a, b in re.findall(r"^from scuffle\.anim\.\w+\.(kernels_\w+|detmath|rules) import"
                               r"|^from scuffle\.anim\.\w+ import (detmath|rules)\b", src, re.M):
            if (a or b) not in seen:
                seen.add(a or b)
                todo.append(a or b)
    return sorted(seen)

def linked_sha256(module_file: str) -> str:
    """The sha256 a kernel module pins as its ``LINKED_SHA256``: over the stems and the
    sha256 of the sources of ``linked_modules(module_file)``. numba's on-disk cache is
    keyed on each function's own file, so a kernel linking a helper of another module
    would keep stale machine code after an edit there; the pin makes that edit change
    the kernel's file too (tests/anim/test_kernels.py)."""
    import hashlib

    anim = os.path.dirname(os.path.dirname(os.path.abspath(module_file)))
    files = {os.path.splitext(os.path.basename(p))[0]: p
             for p in glob.glob(os.path.join(anim, "*", "*.py"))}
    h = hashlib.sha256()
    for stem in linked_modules(module_file):
        with open(files[stem], "rb") as f:
            h.update(stem.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def _probe():                     # the function whose cache folder is the kernels' (same file)
    return 0


def cache_setting(module_file: str) -> bool:
    """The ``cache=`` for the njit kernels defined in ``module_file`` (see the module
    docstring); a folder not this user's own is replaced by a private one and a corrupt
    cache is set aside first, each with one line on stderr."""
    import logging

    from numba import njit
    from numba.core import config

    if getattr(config, "DISABLE_JIT", False):
        return False
    # before numba's first compile or cache load (the probe below is one): its BLAS check
    # answered without importing scipy.linalg (anim/engine/numbastart.py)
    from scuffle.anim.engine.numbastart import defer_blas_check
    defer_blas_check()
    try:
        probe = njit(cache=True)(_probe)
    except RuntimeError:                    # numba: "cannot cache function ...: no locator available"
        where = os.path.join(os.path.dirname(os.path.abspath(module_file)), "__pycache__")
        NO_CACHE.append(f"numba has no writable cache folder (not NUMBA_CACHE_DIR, {where} nor ~/.cache)")
        return False
    path = getattr(getattr(probe, "_cache", None), "_cache_path", None)
    if not path:
        return True
    here = os.path.dirname(os.path.abspath(module_file))
    if here not in _PRIVATE_FOR:
        why = folder_not_ours(path, _cache_root(path))
        if why:
            private = private_folder(module_file)
            if private is None or getattr(config, "CACHE_LOCATOR_CLASSES", None):
                NO_CACHE.append(f"numba's cache folder {path} {why}, and no private folder of this user's own "
                                "could take its place")
                return False
            _use_private(here, private)
            if not PRIVATE:
                logging.getLogger("scuffle").warning(NOT_OURS_MESSAGE.format(folder=path, why=why, private=private))
            PRIVATE.append((path, why, private))
            path = private
    else:
        path = _PRIVATE_FOR[here]
    stem = os.path.splitext(os.path.basename(module_file))[0]
    try:
        moved = check_cache_folder(path, stem)
    except OSError as exc:                  # a corrupt cache that cannot be moved: do without it
        NO_CACHE.append(f"numba's cache in {path} is corrupt and cannot be set aside ({exc.strerror or exc})")
        return False
    if moved:
        SET_ASIDE.extend(moved)
        logging.getLogger("scuffle").warning(
            f"numba's cache of the kernels was corrupt: {len(moved)} file(s) set aside in "
            f"{os.path.join(path, SET_ASIDE_FOLDER)}; rebuilding them")
    return True


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _own_group_only(gid: int) -> bool:
    """Whether group ``gid`` is this user's private group (the user-private-group scheme,
    where the default umask 002 makes every new folder group-writable): the user's own
    primary group, named after the user, with no other member."""
    try:
        import grp
        import pwd

        me = pwd.getpwuid(os.getuid())
        group = grp.getgrgid(gid)
    except (ImportError, KeyError, OSError):
        return False
    if gid != me.pw_gid or group.gr_name != me.pw_name or set(group.gr_mem) - {me.pw_name}:
        return False
    return not any(u.pw_gid == gid and u.pw_uid != me.pw_uid for u in pwd.getpwall())


def _why_not(path: str, leaf: bool) -> str | None:
    """Why folder or file ``path`` is not this user's own (None: it is). The folder the
    cache files lie in (``leaf``) and the files: no symbolic link, this user's, writable
    by no one else (a sticky bit does not help there: another user could still create a
    file under a name numba has yet to write). An ancestor: no symbolic link, this
    user's or root's, and writable by no one else unless sticky (no one else can then
    rename what lies in it)."""
    import stat

    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    uid = _uid()
    if uid is not None and st.st_uid != uid and (leaf or st.st_uid != 0):
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o002 or (st.st_mode & 0o020 and not _own_group_only(st.st_gid)):
        if leaf or not st.st_mode & stat.S_ISVTX:
            return "is writable by other users"
    return None


def folder_not_ours(path: str, root: str | None = None) -> str | None:
    """Why numba's cache folder ``path`` is not this user's own (None: it is): the folder
    (``_why_not``), its numba cache files (``*.nbi``, ``*.nbc``), and each folder from
    ``path``'s parent up to ``root`` (NUMBA_CACHE_DIR when ``path`` lies in it), through
    which another user could swap the folder. A missing folder is not ours either. Off
    POSIX (no owners or mode bits to read) every folder passes."""
    if os.name != "posix":
        return None
    why = _why_not(path, leaf=True)
    if why:
        return why
    for f in sorted(glob.glob(os.path.join(glob.escape(path), "*.nb[ic]"))):
        why = _why_not(f, leaf=True)
        if why:
            return f"holds {os.path.basename(f)}, which {why}"
    if root:
        root = os.path.abspath(root)
        up = os.path.dirname(os.path.abspath(path))
        while up.startswith(root) and len(up) >= len(root):
            why = _why_not(up, leaf=False)
            if why:
                return f"lies in {up}, which {why}"
            if up == root:
                break
            up = os.path.dirname(up)
    return None


def _cache_root(path: str) -> str | None:
    """The folder the user named for numba's caches (NUMBA_CACHE_DIR) when ``path`` lies
    in it, else None (the install's __pycache__ or numba's folder in ~/.cache: the
    folder itself is checked)."""
    from numba.core import config

    root = getattr(config, "CACHE_DIR", "") or ""
    if root and os.path.abspath(path).startswith(os.path.join(os.path.abspath(root), "")):
        return root
    return None


def private_folder(module_file: str) -> str | None:
    """This user's private cache folder for the kernels of ``module_file``'s folder:
    ``$XDG_CACHE_HOME/scuffle/numba/<numba's sub-folder name for it>`` (``~/.cache``
    without XDG_CACHE_HOME), the folders scuffle makes there 0700, and the whole path
    from the cache home down checked as ``folder_not_ours`` does. None: there is none
    (no home, or not this user's own)."""
    from numba.core.caching import _CacheLocator

    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(home):
        return None
    sub = _CacheLocator.get_suitable_cache_subpath(module_file)
    path = os.path.join(home, "scuffle", "numba", sub)
    try:
        os.makedirs(home, mode=0o700, exist_ok=True)
        for part in (os.path.join(home, "scuffle"), os.path.join(home, "scuffle", "numba"), path):
            try:
                os.mkdir(part, 0o700)
            except FileExistsError:
                pass
    except OSError:
        return None
    if folder_not_ours(path, home) or _why_not(home, leaf=False):
        return None
    return path


def _use_private(folder: str, private: str) -> None:
    """numba caches the functions defined in ``folder`` (a kernel floor) in ``private``:
    a locator ahead of numba's own that answers for that folder only (every other
    function, a host's included, is cached where numba always puts it)."""
    from numba.core import caching

    _PRIVATE_FOR[folder] = private
    if not _LOCATOR:
        _LOCATOR.append(_private_locator_class())
    if _LOCATOR[0] not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, _LOCATOR[0])


_LOCATOR: list = []                 # the private locator class, made once (numba imported then)


def _private_locator_class():
    """The class of the private locator (``_use_private``), made once numba is imported."""
    from numba.core.caching import UserProvidedCacheLocator

    class PrivateLocator(UserProvidedCacheLocator):
        """numba's NUMBA_CACHE_DIR locator, rooted in scuffle's private folder of the
        function's source folder (``_use_private``); no answer for any other function."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._cache_path = _PRIVATE_FOR[os.path.dirname(os.path.abspath(py_file))]

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) not in _PRIVATE_FOR:
                return None
            # numba's file-backed locator: the source is there and the folder writable
            return super(UserProvidedCacheLocator, cls).from_function(py_func, py_file)

    return PrivateLocator


def check_cache_folder(path: str, stem: str) -> list[str]:
    """Move aside every cache file of a function of ``stem`` (the module's name) whose
    index or data cannot be whole; returns the moved files' names. OSError: the folder
    cannot be changed."""
    import numba

    bad: set[str] = set()                   # the functions' file prefixes ("kernels.step_stacks-1001.py311")
    for index in glob.glob(os.path.join(glob.escape(path), f"{stem}.*.nbi")):
        prefix = os.path.basename(index)[:-len(".nbi")]
        names = _index_names(index, numba.__version__)
        if names is None or any(not _data_whole(os.path.join(path, n)) for n in names) or _names_gone(index):
            bad.add(prefix)
    for data in glob.glob(os.path.join(glob.escape(path), f"{stem}.*.nbc")):
        if os.path.getsize(data) == 0:      # an empty data file, listed or not
            bad.add(os.path.basename(data).rsplit(".", 2)[0])
    moved: list[str] = []
    if not bad:
        return moved
    aside = os.path.join(path, SET_ASIDE_FOLDER)
    os.makedirs(aside, exist_ok=True)
    tag = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    for prefix in sorted(bad):
        files = [prefix + ".nbi"] + [os.path.basename(f) for f in
                                     glob.glob(os.path.join(glob.escape(path), glob.escape(prefix) + ".*.nbc"))]
        for name in files:
            try:
                os.replace(os.path.join(path, name), os.path.join(aside, f"{name}.{tag}"))
            except FileNotFoundError:       # another process set it aside first
                continue
            moved.append(name)
    return moved


def _index_names(index: str, version: str) -> list[str] | None:
    """The data file names an index lists ([] for another numba version's, which numba
    ignores), or None when it cannot be read whole. numba's layout: its version pickled,
    then (source stamp, {key: data file name}) pickled; both read as opcodes only."""
    try:
        with open(index, "rb") as f:
            stream = io.BytesIO(f.read())
        if _strings(stream)[:1] != [version]:
            return []
        return [n for n in _strings(stream) if n.endswith(".nbc")]
    except (OSError, ValueError, EOFError):  # unreadable, empty, cut, or not a pickle: corrupt
        return None


# The module whose named tuples the kernels' signatures name (numba pickles each by its
# module and name in the index): a name it no longer has makes numba's load of the index
# raise (a class renamed or removed since the cache was written, an older install's cache)
_TYPES_MODULE = "scuffle.anim.engine.kernel_types"


def _names_gone(index: str) -> bool:
    """Whether the index names a class of the kernels' named tuples module
    (anim.engine.kernel_types) that the module does not have. Read as opcodes
    (anim.engine.cacheindex.read_index); no module is imported by a name the file gives."""
    from scuffle.anim.engine import kernel_types as mod
    from scuffle.anim.engine.cacheindex import read_index

    try:
        with open(index, "rb") as f:
            data = f.read()
        entries = read_index(data, os.path.basename(index)[:-len(".nbi")]).entries
    except (OSError, ValueError):
        return False                       # (an unreadable index is _index_names' to find)
    todo: list[object] = [e.key for e in entries]
    while todo:
        node = todo.pop()
        if isinstance(node, tuple):
            if len(node) == 3 and node[0] == "global" and node[1] == _TYPES_MODULE and not hasattr(mod, node[2]):
                return True
            todo.extend(node)
    return False


def _strings(stream: io.BytesIO) -> list[str]:
    """The strings of the one pickle stream at ``stream``'s position, in order, read as
    opcodes by ``pickletools.genops``: no class is looked up, no object built and no code
    run, whatever the bytes (numba's own cache files, checked before numba loads them).
    ValueError: the stream is cut or not a pickle."""
    import pickletools

    out: list[str] = []
    stopped = False
    for op, arg, _pos in pickletools.genops(stream):
        if isinstance(arg, str) and "UNICODE" in op.name:
            out.append(arg)
        stopped = op.name == "STOP"
    if not stopped:
        raise ValueError("no STOP opcode")
    return out


def _data_whole(path: str) -> bool:
    """Whether a data file's pickle stream is whole (a missing file counts as whole:
    numba then recompiles by itself), read as opcodes only (``_strings``)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if len(data) < 2 or data[-1:] != b"." or data[:1] != b"\x80":
        return False
    try:
        _strings(io.BytesIO(data))
    except (ValueError, EOFError):
        return False
    return True
