"""Reading input files with limits: regular files only, never more than a documented size.

``read_limited(path, limit)`` opens without blocking (a FIFO never hangs the reader),
refuses anything that is not a regular file (FIFOs, devices such as /dev/zero and
/dev/urandom, directories, sockets) and any file over ``limit`` bytes, then reads at
most ``limit`` bytes. Every loader of the CLI and of scenarios reads through it and
turns its ``FileLimitError`` into its own one-line error. Limits: docs/tools.md.

Writing outputs (``OutputFile``, ``output_path``, ``check_outputs``): every output of a
command goes to a temporary file in the same folder and is renamed onto its name only
when it is complete, so a failed run leaves an existing file whole; a device or FIFO
(``/dev/null``, ``/dev/stdout``) is written in place. ``check_outputs`` refuses, before
anything runs, an output that names an input of the same run or another output (the
same file by any path, hard links included), a symbolic link, or a directory. Write
errors (a full disk, ``/dev/full``) are an ``OutputError`` naming the file.

Confinement (``check_inside``): a scenario reads only files below its own folder, or
below a folder the user allows (``--data DIR``, or ``SCUFFLE_DATA``: folders separated
by the OS's path separator); symbolic links are resolved first, so a link in the
folder that points out of it is refused too. Errors never quote a refused file's bytes.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Mapping, TextIO, cast

__all__ = ["write_bytes", "FileLimitError", "read_limited", "MAX_BINARY_BYTES", "MAX_TEXT_BYTES", "MAX_TRACE_BYTES",
           "OutputError", "OutputFile", "output_path", "check_outputs", "same_file", "OutsideError",
           "check_inside", "data_dirs", "DATA_ENV"]

DATA_ENV = "SCUFFLE_DATA"        # folders a scenario may read besides its own (os.pathsep-separated)

MAX_BINARY_BYTES = 64 << 20      # a resource file, a descriptor or keyframes file: 64 MiB
MAX_TEXT_BYTES = 16 << 20        # a scenario (TOML) or a CSV: 16 MiB
MAX_TRACE_BYTES = 256 << 20      # a trace (JSONL) for diff: 256 MiB


class FileLimitError(ValueError):
    """A file that cannot be read within the limits; ``path`` and ``problem`` say why."""

    def __init__(self, path: str, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_limited(path: str | os.PathLike, limit: int = MAX_BINARY_BYTES) -> bytes:
    """A regular file's bytes, at most ``limit`` of them.

    In: a path and the size limit in bytes. Out: the file's bytes. Rejected with
    FileLimitError (naming the path): a file that does not exist or cannot be opened
    (the OS's reason), anything that is not a regular file (a directory, a FIFO, a
    device, a socket), a file larger than ``limit`` bytes (or one that grows past it
    while it is read). Opened with O_NONBLOCK, so a FIFO without a writer never blocks.
    """
    p = str(Path(path))
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileLimitError(p, f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileLimitError(p, f"cannot read: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise FileLimitError(p, f"cannot read: {st.st_size} bytes, over the limit of {limit} bytes")
        chunks, total = [], 0
        while True:
            block = os.read(fd, min(1 << 20, limit + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
            if total > limit:
                raise FileLimitError(p, f"over the limit of {limit} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise FileLimitError(p, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text_limited(path: str | os.PathLike, limit: int = MAX_TEXT_BYTES, encoding: str = "utf-8") -> str:
    """A regular file's text (read_limited, then decoded; UnicodeDecodeError passes through)."""
    return read_limited(path, limit).decode(encoding)


# ---------------------------------------------------------------- outputs


class OutputError(ValueError):
    """An output that cannot be written, or would clobber an input or another output:
    ``cannot write WHAT 'PATH': PROBLEM`` (``path``, ``what``, ``problem``)."""

    def __init__(self, path: str, what: str, problem: str):
        self.path, self.what, self.problem = str(path), what, problem
        shown = self.path if len(self.path) <= 80 else self.path[:77] + "..."     # one readable line
        super().__init__(f"cannot write {what} {shown!r}: {problem}")


def _streamed(path: str) -> bool:
    """A device or FIFO, or any path in /dev or /proc (/dev/stdout, /dev/fd/N: links to the
    process's streams): written in place, never renamed over."""
    ab = os.path.abspath(path)
    if ab.startswith(("/dev/", "/proc/")):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: the same path once symbolic links and ``..`` are
    resolved, or (both existing) the same inode (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(outputs: Mapping[str, str | os.PathLike | None],
                  inputs: Mapping[str, str | os.PathLike | None] | None = None) -> None:
    """Refuse, before a run, outputs that would clobber something.

    In: ``outputs`` what -> path (e.g. {"trace": "t.jsonl", "record": "s.toml"}; None and
    "-" (stdout) are skipped), ``inputs`` what -> path of the files the run reads.
    Rejected (OutputError naming the output): an output that is an input of the run or
    another output (by any path), a symbolic link (it would be replaced, not followed;
    one to a device such as /dev/stdout is written through), an existing directory.
    """
    outs = [(w, str(p)) for w, p in outputs.items() if p is not None and str(p) not in ("", "-")]
    ins = [(w, str(p)) for w, p in (inputs or {}).items() if p is not None and str(p) not in ("", "-")]
    for i, (what, path) in enumerate(outs):
        if _streamed(path):                 # a device or FIFO (/dev/null, /dev/stdout's link): in place
            continue
        if os.path.islink(path):
            raise OutputError(path, what, "a symbolic link; name the file itself (an output never follows a link)")
        if os.path.isdir(path):
            raise OutputError(path, what, "a directory")
        for iw, ip in ins:
            if same_file(path, ip):
                raise OutputError(path, what, f"it is the {iw} {ip!r} this run reads; an output never overwrites an input")
        for ow, op in outs[:i]:
            if same_file(path, op):
                raise OutputError(path, what, f"the {ow} is written there too; give each output its own file")


class _Writer:
    """A text file whose write errors name the output (OutputError)."""

    def __init__(self, fp, path: str, what: str):
        self._fp, self._path, self._what = fp, path, what

    def write(self, text: str) -> int:
        try:
            return self._fp.write(text)
        except OSError as exc:
            raise OutputError(self._path, self._what, exc.strerror or str(exc)) from None

    def flush(self) -> None:
        try:
            self._fp.flush()
        except OSError as exc:
            raise OutputError(self._path, self._what, exc.strerror or str(exc)) from None


def _temp_beside(path: str) -> str:
    """A new empty temporary file in ``path``'s folder, ending like ``path`` (image writers
    choose the format by the name's end); OutputError when the folder is not writable."""
    folder, name = os.path.split(os.path.abspath(path))
    suffix = "".join(Path(name).suffixes[-1:])
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=f".part{suffix}", dir=folder)
    except OSError as exc:
        raise OutputError(path, "file", exc.strerror or str(exc)) from None
    os.close(fd)
    return tmp


def _publish(tmp: str, path: str, what: str) -> None:
    """Rename the complete temporary file onto ``path`` (the mode of the file it
    replaces, else the usual 0666 less the umask)."""
    try:
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            _discard(tmp)
            raise OutputError(path, what, f"{_kind(st.st_mode)} is there; an output replaces only a regular file")
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise OutputError(path, what, exc.strerror or str(exc)) from None


def _discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _open_stream(path: str):
    """A device or FIFO opened for writing in place; a FIFO with no reader is refused
    (ENXIO) instead of blocking, then the descriptor blocks again for the writes."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o666)      # O_TRUNC: a file behind /dev/stdout, as open("w") would
    try:
        os.set_blocking(fd, True)
        return open(fd, "w", encoding="utf-8", newline="\n")
    except BaseException:
        os.close(fd)
        raise


def write_bytes(path: str | os.PathLike, data: bytes, what: str = "output") -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file beside it,
    renamed; an interrupt during the write deletes it and leaves an old ``path`` whole).
    A device or FIFO (``/dev/null``, ``/dev/stdout``) is written in place, never renamed
    over. Rejected: OutputError naming the file (a directory there, a folder not
    writable, a full disk, a FIFO with no reader)."""
    path = str(path)
    if os.path.isdir(path):
        raise OutputError(path, what, "a directory")
    if _streamed(path):
        _write_in_place(path, data, what)
        return
    try:
        tmp = _temp_beside(path)
    except OutputError as exc:
        raise OutputError(path, what, exc.problem) from None
    except OSError as exc:
        raise OutputError(path, what, exc.strerror or str(exc)) from None
    try:
        with open(tmp, "wb") as f:
            f.write(data)
    except OSError as exc:
        _discard(tmp)
        raise OutputError(path, what, exc.strerror or str(exc)) from None
    except BaseException:                   # an interrupt (SIGINT, SIGTERM): no part file left
        _discard(tmp)
        raise
    _publish(tmp, path, what)


def _write_in_place(path: str, data: bytes, what: str) -> None:
    """``data`` written to a device or FIFO as it is (never replaced by a file)."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        problem = "a FIFO with no reader" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise OutputError(path, what, problem) from None
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError as exc:
        raise OutputError(path, what, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


class OutputFile:
    """A text output written whole or not at all.

    ``OutputFile(path, what)`` opens a temporary file beside ``path`` (UTF-8, "\n" line
    ends); ``fp`` is the file to write (write errors: OutputError naming ``path``);
    ``close()`` renames it onto ``path``, ``close(keep=False)`` (or an exception out of a
    ``with`` block) deletes it and leaves any old ``path`` whole. A device or FIFO path
    is written in place. Rejected: OutputError (a folder that is not writable, a
    directory at ``path``).
    """

    def __init__(self, path: str | os.PathLike, what: str = "output"):
        self.path, self.what = str(path), what
        if os.path.isdir(self.path):
            raise OutputError(self.path, what, "a directory")
        self._tmp: str | None = None
        try:
            if _streamed(self.path):
                fp = _open_stream(self.path)
            else:
                self._tmp = _temp_beside(self.path)
                fp = open(self._tmp, "w", encoding="utf-8", newline="\n")
        except OutputError as exc:
            raise OutputError(self.path, what, exc.problem) from None
        except OSError as exc:
            if self._tmp is not None:
                _discard(self._tmp)
            problem = "a FIFO with no reader" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
            raise OutputError(self.path, what, problem) from None
        self._raw = fp
        self.fp: TextIO = cast(TextIO, _Writer(fp, self.path, what))
        self.closed = False

    def write(self, text: str) -> int:
        return self.fp.write(text)

    def close(self, keep: bool = True) -> None:
        """Finish: publish the file (``keep``) or delete it. Closing twice does nothing."""
        if self.closed:
            return
        self.closed = True
        try:
            try:
                self._raw.close()
            except OSError as exc:
                if keep:
                    raise OutputError(self.path, self.what, exc.strerror or str(exc)) from None
        except BaseException:
            if self._tmp is not None:
                _discard(self._tmp)
            raise
        if self._tmp is None:
            return
        if keep:
            _publish(self._tmp, self.path, self.what)
        else:
            _discard(self._tmp)

    def __enter__(self) -> "OutputFile":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(keep=exc_type is None)


@contextmanager
def output_path(path: str | os.PathLike, what: str = "output") -> Iterator[str]:
    """A temporary path beside ``path`` (same ending) for a writer that takes a file name
    (pygame.image.save, Pillow): renamed onto ``path`` when the block ends normally,
    deleted when it raises (an old ``path`` stays whole). A device path is yielded as is.
    Rejected: OutputError (the folder not writable, a directory at ``path``)."""
    path = str(path)
    if os.path.isdir(path):
        raise OutputError(path, what, "a directory")
    if _streamed(path):
        yield path
        return
    try:
        tmp = _temp_beside(path)
    except OutputError as exc:
        raise OutputError(path, what, exc.problem) from None
    try:
        yield tmp
    except BaseException:
        _discard(tmp)
        raise
    _publish(tmp, path, what)


# ---------------------------------------------------------------- confinement


class OutsideError(ValueError):
    """A file a scenario names outside the folders it may read (``path``, ``problem``)."""

    def __init__(self, path: str, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")


def data_dirs(extra: Iterable[str | os.PathLike] | None = None) -> list[str]:
    """The folders the user allows scenarios to read besides their own: ``extra`` (the
    ``--data`` options) and those of the SCUFFLE_DATA environment variable."""
    out = [str(d) for d in (extra or ())]
    env = os.environ.get(DATA_ENV, "")
    out += [d for d in env.split(os.pathsep) if d]
    return out


def _below(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_inside(path: str | os.PathLike, base: str | os.PathLike, allowed: Iterable[str | os.PathLike] = ()) -> str:
    """The real path of a file a scenario names, if it lies below ``base`` (the
    scenario's folder) or one of ``allowed``; symbolic links are resolved first.
    Rejected: OutsideError (naming the path as given, never its contents)."""
    if "\x00" in str(path):
        raise OutsideError(repr(str(path)), "a file name with a NUL character")
    real = os.path.realpath(os.path.join(str(base), str(path)))
    folders = [str(base), *map(str, allowed)]
    if any(_below(real, f) for f in folders):
        return real
    return _refuse(path, base)


def _refuse(path, base) -> str:
    raise OutsideError(str(path), f"outside the scenario's folder {os.path.realpath(str(base))!r}; "
                                  f"allow another folder with --data DIR or {DATA_ENV}")
