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
opcodes only (``_scan``: nothing looked up, built or run), about 0.1 s for the whole cache,
and lists the files it found whole (``CHECKED_SUFFIX``): a later process that finds the
very same files reads none of them again. numba's own file
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

    listing = _listing(path, stem)
    if listing is not None and listing == _read_checked(path, stem):
        return []                           # the very files found whole before, under this numba and these types
    bad: set[str] = set()                   # the functions' file prefixes ("kernels.step_stacks-1001.py311")
    for index in glob.glob(os.path.join(glob.escape(path), f"{stem}.*.nbi")):
        prefix = os.path.basename(index)[:-len(".nbi")]
        read = _read_index(index, numba.__version__)
        if read is None or any(not _data_whole(os.path.join(path, n)) for n in read[0]) or read[1]:
            bad.add(prefix)
    for data in glob.glob(os.path.join(glob.escape(path), f"{stem}.*.nbc")):
        if os.path.getsize(data) == 0:      # an empty data file, listed or not
            bad.add(os.path.basename(data).rsplit(".", 2)[0])
    moved: list[str] = []
    if not bad:
        if listing is not None:
            _write_checked(path, stem, listing)
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


# A module's cache files found whole are listed in ``<stem>.scuffle-checked`` (numba's
# version, the named tuples module's file, then each file's name, size, modification time
# in ns and inode): a process that finds the same listing reads none of them again. numba
# writes each file anew under a temporary name and renames it (a new inode), a cut file has
# a new size and time, and a new numba or a changed kernel_types changes the listing's head.
CHECKED_SUFFIX = ".scuffle-checked"
_CHECKED_MAX = 1 << 16                      # bytes read of a listing: a longer one is not ours


def _listing(path: str, stem: str) -> str | None:
    """The listing of ``stem``'s cache files in ``path`` (see CHECKED_SUFFIX), or None when
    a file changed under the walk."""
    import numba

    from scuffle.anim.engine import kernel_types

    try:
        types = os.stat(kernel_types.__file__)
        lines = [numba.__version__, f"kernel_types {types.st_size} {types.st_mtime_ns} {types.st_ino}"]
        for f in sorted(glob.glob(os.path.join(glob.escape(path), f"{stem}.*.nb[ic]"))):
            st = os.stat(f)
            lines.append(f"{os.path.basename(f)} {st.st_size} {st.st_mtime_ns} {st.st_ino}")
    except OSError:
        return None
    return "\n".join(lines) + "\n"


def _read_checked(path: str, stem: str) -> str | None:
    """The listing last written for ``stem`` in ``path``, or None (none, unreadable, too long)."""
    try:
        with open(os.path.join(path, stem + CHECKED_SUFFIX), "rb") as f:
            data = f.read(_CHECKED_MAX + 1)
        return data.decode("utf-8") if len(data) <= _CHECKED_MAX else None
    except (OSError, UnicodeDecodeError):
        return None


def _write_checked(path: str, stem: str, listing: str) -> None:
    """Write ``listing`` for ``stem`` in ``path`` whole or not at all (a read-only folder:
    not at all, and every process reads the files again)."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=path, prefix=f".{stem}-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(listing.encode("utf-8"))
        os.replace(tmp, os.path.join(path, stem + CHECKED_SUFFIX))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# The module whose named tuples the kernels' signatures name (numba pickles each by its
# module and name in the index): a name it no longer has makes numba's load of the index
# raise (a class renamed or removed since the cache was written, an older install's cache)
_TYPES_MODULE = "scuffle.anim.engine.kernel_types"


def _read_index(index: str, version: str) -> tuple[list[str], bool] | None:
    """The data file names an index lists ([] for another numba version's, which numba
    ignores) and whether it names a class of the kernels' named tuples module
    (anim.engine.kernel_types) that the module does not have; None when the index cannot be
    read whole. numba's layout: its version pickled, then (source stamp, {key: data file
    name}) pickled; both read as opcodes only (``_scan``), no module imported by a name the
    file gives."""
    from scuffle.anim.engine import kernel_types as mod

    try:
        with open(index, "rb") as f:
            stream = io.BytesIO(f.read())
        if _scan(stream)[0][:1] != [version]:
            return [], False
        strings, named = _scan(stream)
    except (OSError, ValueError, EOFError):  # unreadable, empty, cut, or not a pickle: corrupt
        return None
    return ([n for n in strings if n.endswith(".nbc")],
            any(m == _TYPES_MODULE and not hasattr(mod, n) for m, n in named))


def _scan(stream: io.BytesIO) -> tuple[list[str], list[tuple[str, str]]]:
    """The strings of the one pickle stream at ``stream``'s position, in order, and the
    (module, name) of each class or function it names (GLOBAL, or STACK_GLOBAL after its
    two strings, given or recalled from the memo), read as opcodes by ``pickletools.genops``:
    no class is looked up, no object built and no code run, whatever the bytes (numba's own
    cache files, checked before numba loads them). Every process that loads the kernels
    reads every index so: a walk of the opcodes, not anim.engine.cacheindex's evaluation of
    the keys, which costs ten times as much. ValueError: the stream is cut or not a pickle."""
    import pickletools

    strings: list[str] = []
    named: list[tuple[str, str]] = []
    memo: dict[int, object] = {}
    last: list[object] = []                # the values the last string and memo ops pushed
    for op, arg, _pos in pickletools.genops(stream):
        name = op.name
        if "UNICODE" in name:
            strings.append(arg)            # type: ignore[arg-type]
            last = [*last[-1:], arg]
        elif name == "MEMOIZE":
            memo[len(memo)] = last[-1] if last else None
        elif name in ("BINGET", "LONG_BINGET", "GET"):
            last = [*last[-1:], memo.get(arg) if isinstance(arg, int) else None]
        elif name == "GLOBAL" and isinstance(arg, str) and " " in arg:
            m, n = arg.split(" ", 1)
            named.append((m, n))
            last = []
        elif name == "STACK_GLOBAL":
            if len(last) == 2 and all(isinstance(x, str) for x in last):
                named.append((str(last[0]), str(last[1])))
            last = []
        elif name == "STOP":
            return strings, named
        elif name not in ("PROTO", "FRAME"):
            last = []
    raise ValueError("no STOP opcode")


def _data_whole(path: str) -> bool:
    """Whether a data file's pickle stream is whole (a missing file counts as whole:
    numba then recompiles by itself), read as opcodes only (``_scan``)."""
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
        _scan(io.BytesIO(data))
    except (ValueError, EOFError):
        return False
    return True
