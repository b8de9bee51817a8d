"""Threads for a crowd: the step and the pose of chunks of humans run side by side.

The kernels release the GIL (``nogil``), so Python threads calling them on chunks of
the crowd's rows use every core. ``Workers`` is a small persistent pool (a thread per
extra chunk, started once, asleep between updates): the calling thread runs the first
chunk itself, the others run theirs, and the call returns when every chunk is done,
re-raising the first chunk's exception in chunk order. ``chunks`` cuts ``n`` humans into
contiguous ranges of nearly equal size; ``Balance`` moves the cuts so that each chunk
takes about as long as the others. What each chunk writes is its own (its scratch, its output rows); the
engine (anim.playback.batch) merges the chunks' outputs in human order, so results do not depend
on the number of threads.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Callable

__all__ = ["Balance", "Workers", "chunks", "default_threads", "MIN_CHUNK"]

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
        self._busy: list = []                   # the workers given jobs by begin, not waited for
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    def close(self) -> None:
        """Stop the worker threads (the pool then runs every job on the caller), once the
        jobs begun are done."""
        if self._busy:
            self.wait()
        self._finalizer()
        self._workers = []
        self.threads = 1

    def run(self, jobs: list) -> None:
        """Run ``jobs`` (callables without arguments, at most ``threads``) side by side."""
        self.begin(jobs)
        first: BaseException | None = None
        try:
            if jobs:
                jobs[0]()
        except BaseException as e:
            first = e
        self.wait(first)

    def begin(self, jobs: list) -> None:
        """Hand ``jobs[1:]`` to the worker threads and return at once: the caller runs
        ``jobs[0]`` (or other work) itself, then ``wait``s. Rejected: more jobs than
        threads (ValueError), a begin while the last one is not waited for (RuntimeError)."""
        workers = self._workers
        if len(jobs) - 1 > len(workers):
            raise ValueError(f"Workers.run: {len(jobs)} jobs for {len(workers) + 1} threads")
        if self._busy:
            raise RuntimeError("Workers.begin: the jobs begun last are not waited for")
        used = workers[:max(0, len(jobs) - 1)]
        for w, job in zip(used, jobs[1:]):
            w.error = None
            w.done.clear()
            w.job = job
            w.go.set()
        self._busy = used

    @property
    def busy(self) -> bool:
        """Whether jobs begun are not waited for yet."""
        return bool(self._busy)

    def wait(self, first: BaseException | None = None) -> None:
        """Wait for the jobs ``begin`` handed out; then raise ``first`` (the caller's own
        job's exception) if given, else the first worker's exception in job order."""
        used, self._busy = self._busy, []
        for w in used:
            w.done.wait()
        if first is not None:
            raise first
        for w in used:
            if w.error is not None:
                err, w.error = w.error, None
                raise err


class Balance:
    """Where a crowd's chunks are cut, moved so that each chunk takes about the same time.

    Cut by count (``chunks``), the chunks of a real crowd differ: its humans' stacks are
    not alike along the crowd, and the calling thread, which then goes on alone, must not
    wait for the others. ``note`` takes each run's time per chunk (each thread's CPU
    clock) and, every ``window`` runs, reads the crowd as a cost per human that is flat
    within each chunk and cuts it again at equal shares of the whole, in steps of
    ``quantum`` humans, none under MIN_CHUNK (or the fair share, when smaller). The cuts
    move only when the slowest chunk would save at least ``gain`` of its time: each new
    cut makes new views of the rows, which the kernels' jobs check once again. Where the
    cuts fall changes no result (the engine merges the chunks in human order); only the
    time a chunk takes. In: nothing; ``spans(n, parts)`` the chunks to run now."""

    __slots__ = ("window", "quantum", "gain", "n", "parts", "cuts", "spans_now", "acc", "runs", "moves")

    def __init__(self, window: int = 8, quantum: int = 32, gain: float = 0.03):
        self.window, self.quantum, self.gain = max(1, window), max(1, quantum), gain
        self.n = -1
        self.parts = 0
        self.cuts: list[int] = []
        self.spans_now: list[tuple[int, int]] = []
        self.acc: list[float] = []
        self.runs = 0
        self.moves = 0                          # the cuts moved, in all (read by tests and the bench)

    def spans(self, n: int, parts: int) -> list[tuple[int, int]]:
        """The chunks (lo, hi) of ``n`` humans in ``parts`` parts: those by count
        (``chunks``) for a new size or number of parts, else the balanced ones."""
        if n != self.n or parts != self.parts:
            base = chunks(n, parts)
            self.n, self.parts = n, len(base)
            self.cuts = [hi for _, hi in base[:-1]]
            self.spans_now = base
            self.acc = [0.0] * len(base)
            self.runs = 0
        return self.spans_now

    def set_cuts(self, cuts: list[int]) -> None:
        """Cut the crowd of the last ``spans`` call at ``cuts`` (increasing, inside it):
        what ``note`` would do; tests use it to place the cuts anywhere."""
        cuts = [int(c) for c in cuts]
        if len(cuts) != self.parts - 1 or any(not 0 < c < self.n for c in cuts) or cuts != sorted(set(cuts)):
            raise ValueError(f"Balance.set_cuts: {cuts} is not {self.parts - 1} increasing cuts inside 0-{self.n}")
        self.cuts = cuts
        bounds = [0, *cuts, self.n]
        self.spans_now = list(zip(bounds[:-1], bounds[1:]))
        self.acc = [0.0] * self.parts
        self.runs = 0

    def note(self, spans: list[tuple[int, int]], times: list[float]) -> None:
        """A run of ``spans`` took ``times`` (one per chunk, any unit); the cuts move when
        ``window`` runs say they should."""
        if spans is not self.spans_now or len(times) != len(spans):
            return
        acc = self.acc
        for j, t in enumerate(times):
            acc[j] += max(0.0, t)
        self.runs += 1
        if self.runs < self.window:
            return
        self.runs = 0
        slowest = max(acc)
        total = sum(acc)
        if total <= 0.0:
            return
        cuts = self._cut(spans, acc, total)
        self.acc = [0.0] * len(spans)
        if cuts == self.cuts:
            return
        bounds = [0, *cuts, self.n]
        new = max(self._cost(spans, acc, a, b) for a, b in zip(bounds[:-1], bounds[1:]))
        if slowest - new >= self.gain * slowest:
            self.cuts = cuts
            self.spans_now = list(zip(bounds[:-1], bounds[1:]))
            self.moves += 1

    @staticmethod
    def _cost(spans: list, acc: list, a: int, b: int) -> float:
        """The time humans ``a``-``b`` would take at each chunk's cost per human."""
        out = 0.0
        for (lo, hi), t in zip(spans, acc):
            if hi > lo:
                out += t * max(0, min(b, hi) - max(a, lo)) / (hi - lo)
        return out

    def _cut(self, spans: list, acc: list, total: float) -> list[int]:
        """Cuts at equal shares of ``total`` under the cost per human each chunk measured,
        rounded to ``quantum``, each chunk at least MIN_CHUNK (or n / parts when less)."""
        n, parts, q = self.n, self.parts, self.quantum
        least = min(MIN_CHUNK, n // parts)
        cuts: list[int] = []
        j = 0
        done = 0.0                              # the cost of spans[:j]
        for k in range(1, parts):
            want = total * k / parts
            while j < len(spans) - 1 and done + acc[j] < want:
                done += acc[j]
                j += 1
            lo, hi = spans[j]
            x = lo + (want - done) / acc[j] * (hi - lo) if acc[j] > 0.0 else float(hi)
            c = int(round(x / q)) * q
            low = (cuts[-1] if cuts else 0) + least
            high = n - (parts - k) * least
            cuts.append(min(max(c, low), high))
        return cuts
