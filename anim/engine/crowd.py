"""Threads for a crowd: the step and the pose of chunks of humans run side by side.

The kernels release the GIL (``nogil``), so Python threads calling them on chunks of
the crowd's rows use every core. ``Workers`` is a small persistent pool (a thread per
extra chunk, started once, asleep between updates): the calling thread runs the first
chunk itself, the others run theirs, and the call returns when every chunk is done,
re-raising the first chunk's exception in chunk order. ``chunks`` cuts ``n`` humans into
contiguous ranges. What each chunk writes is its own (its scratch, its output rows); the
engine (anim.playback.batch) merges the chunks' outputs in human order, so results do not depend
on the number of threads.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Callable

__all__ = ["Workers", "chunks", "default_threads", "MIN_CHUNK"]

# The fewest humans a chunk gets: below it the threads' hand-off (tens of microseconds)
# costs more than the chunk's kernels save (a 2-fighter update stays on one thread).
MIN_CHUNK = 256


def default_threads() -> int:
    """The cores this process may run on (its CPU affinity; os.cpu_count() where the
    platform has none), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def chunks(n: int, threads: int, min_chunk: int | None = None) -> list[tuple[int, int]]:
    """``n`` humans cut into at most ``threads`` contiguous ranges (lo, hi) of nearly equal
    size, none smaller than ``min_chunk`` (MIN_CHUNK by default) unless there is only one."""
    least = MIN_CHUNK if min_chunk is None else max(1, min_chunk)
    parts = max(1, min(threads, n // least if n >= least else 1))
    step, extra = divmod(n, parts)
    out = []
    lo = 0
    for j in range(parts):
        hi = lo + step + (1 if j < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


class _Worker:
    """One worker thread: waits for a job, runs it, signals done."""

    __slots__ = ("go", "done", "job", "error", "thread", "stop")

    def __init__(self, name: str):
        self.go = threading.Event()
        self.done = threading.Event()
        self.job: Callable[[], None] | None = None
        self.error: BaseException | None = None
        self.stop = False
        self.thread = threading.Thread(target=_serve, args=(self,), name=name, daemon=True)
        self.thread.start()


def _serve(w: _Worker) -> None:
    while True:
        w.go.wait()
        w.go.clear()
        if w.stop:
            return
        try:
            job = w.job
            if job is not None:
                job()
        except BaseException as e:       # handed to the caller, which re-raises it
            w.error = e
        w.job = None
        w.done.set()


def _stop_all(workers: list) -> None:
    for w in workers:
        w.stop = True
        w.go.set()


class Workers:
    """A pool of ``threads - 1`` worker threads (the caller is the first); ``run(jobs)``
    runs ``jobs[0]`` on the caller and ``jobs[j]`` on worker j - 1, and returns when all
    are done. The first exception, in job order, is re-raised after every job ended.
    The threads are daemons, stopped when the pool is collected or ``close``d."""

    def __init__(self, threads: int):
        self.threads = max(1, int(threads))
        self._workers = [_Worker(f"scuffle-crowd-{j}") for j in range(1, self.threads)]
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    def close(self) -> None:
        """Stop the worker threads (the pool then runs every job on the caller)."""
        self._finalizer()
        self._workers = []
        self.threads = 1

    def run(self, jobs: list) -> None:
        """Run ``jobs`` (callables without arguments, at most ``threads``) side by side."""
        workers = self._workers
        if len(jobs) - 1 > len(workers):
            raise ValueError(f"Workers.run: {len(jobs)} jobs for {len(workers) + 1} threads")
        used = workers[:len(jobs) - 1]
        for w, job in zip(used, jobs[1:]):
            w.error = None
            w.done.clear()
            w.job = job
            w.go.set()
        first: BaseException | None = None
        try:
            if jobs:
                jobs[0]()
        except BaseException as e:
            first = e
        for w in used:
            w.done.wait()
        if first is not None:
            raise first
        for w in used:
            if w.error is not None:
                err, w.error = w.error, None
                raise err
