"""Reading input files with limits: regular files only, never more than a documented size.

``read_limited(path, limit)`` opens without blocking (a FIFO never hangs the reader),
refuses anything that is not a regular file (FIFOs, devices such as /dev/zero and
/dev/urandom, directories, sockets) and any file over ``limit`` bytes, then reads at
most ``limit`` bytes. Every loader of the CLI and of scenarios reads through it and
turns its ``FileLimitError`` into its own one-line error. Limits: docs/tools.md.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["FileLimitError", "read_limited", "MAX_BINARY_BYTES", "MAX_TEXT_BYTES", "MAX_TRACE_BYTES"]

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
