"""The compiled kernels as jobs: named inputs, a cheap ``validate()`` at the boundary, a run of named passes.

In the manner of ozz-animation's SamplingJob and BlendingJob: a job names what its kernel
reads and writes (``StepInputs``, ``PoseInputs``, ``FlushInputs``, ``AnimIdInputs``,
``MotionInputs``: the tables and buffers as anim.engine.kernel_types' named tuples), checks them
before every run (``validate``: types, dtypes, dimensions, lengths and row ranges;
``KernelInputError``, one line naming the field, on the first that is wrong) and runs its
kernel, whose body is the passes its ``PASSES`` name, in order (each a named step of the
kernel module: tests/anim/test_jobs.py ties the two).

The check stays cheap: the tables' tuples are checked whole once per tuple object (the
engine builds them once per growth of a table, so a run checks them by identity); the
per-call inputs (the rows, their range, the buffers' lengths, dt) whenever one of them
is not the very object found good last time (a few microseconds); inputs that are all
those very objects again, as the engine's usual update passes them, cost one identity
test each; a job whose only new inputs are its ``VARYING`` ones (the flush's entry range,
the anim id refresh's rows) checks those alone. anim.playback.batch and anim.playback.player run the engine's kernels through these jobs;
a host may run one on tables of its own (``StepJob().run(StepInputs(...))``).
Malformed tables never reach the compiled code, where nothing is bounds-checked.
"""
from __future__ import annotations

import abc
import math
from operator import is_ as _is, itemgetter
from typing import Any, NamedTuple

import numpy as np

from scuffle.anim.engine.kernel_types import (BankTables, CursorCols, EventIndex, FadeCols, FlushBuffers, GaitCols, HumanCols,
                           PoseBuffers, PoseOut, RowState, Scratch, StepBuffers, StepRules, TaskCols)
from scuffle.anim.maths.pose import POSE_STACK_SIZE
from scuffle.anim.engine.sampler import KEY_ROW_FIELDS
from scuffle.anim.maths.skeleton import NUM_BONES
from scuffle.anim.engine import interpret
from scuffle.anim.engine.trusted import TrustedKernel
_TIER = interpret.STATE          # the interpreted tier (anim.engine.interpret)

__all__ = ["KernelInputError", "StepInputs", "PoseInputs", "FlushInputs", "AnimIdInputs", "MotionInputs", "StepJob",
           "PoseJob", "FlushJob", "AnimIdJob", "MotionJob", "COLUMN_TYPES"]


class KernelInputError(ValueError):
    """A kernel job's input is not what its kernel reads (the message names the field)."""


# Each table tuple's columns: (dtype, dimensions), and the group of columns that share
# their first length (a table's capacity; EventIndex: per clip, per event).
COLUMN_TYPES: dict[type, dict[str, tuple[str, int, str]]] = {
    HumanCols: {"flags": ("int64", 1, "rows"), "depth": ("int32", 1, "rows"), "stack": ("int32", 2, "rows"),
                "queued": ("int32", 1, "rows"), "queue": ("int32", 2, "rows")},
    TaskCols: {**{f: ("int64", 1, "rows") for f in ("held", "wraps")},
               **{f: ("int32", 1, "rows") for f in ("c0", "c1", "aux", "nxt", "incoming", "c2", "c3", "base")},
               **{f: ("int8", 1, "rows") for f in ("type", "window", "centre", "sampling")},
               **{f: ("float32", 1, "rows") for f in ("rate", "blend", "speed")},
               **{f: ("bool", 1, "rows") for f in ("released", "handed_over", "callback", "placed")},
               "flags": ("int32", 1, "rows"), "value": ("float64", 1, "rows"), "target": ("float64", 1, "rows"),
               **{f: ("int32", 1, "rows") for f in ("on_end", "on_wrap", "partner_name")},
               "partner": ("int64", 1, "rows"), "dir_banks": ("int32", 2, "rows")},
    CursorCols: {**{f: ("int32", 1, "rows") for f in ("frame", "end", "flags", "bank", "ev", "evf", "evf0", "anim")},
                 **{f: ("float32", 1, "rows") for f in ("t", "limit", "dur")},
                 "at_end": ("bool", 1, "rows"), "live": ("bool", 1, "rows"), "gen": ("int32", 1, "rows"),
                 "free_rows": ("int32", 1, "rows"), "n_free": ("int64", 1, "one"), "free_at": ("int32", 1, "rows")},
    FadeCols: {"el": ("float32", 1, "rows"), "dur": ("float32", 1, "rows")},
    GaitCols: {**{f: ("int32", 1, "rows") for f in ("lower", "id0", "id1", "id2", "id3", "id4", "b0", "b1", "b2",
                                                    "b3", "b4")},
               "value": ("float32", 1, "rows"), "target": ("float32", 1, "rows"), "leader": ("int8", 1, "rows")},
    EventIndex: {"first": ("int64", 1, "clips"), "n": ("int64", 1, "clips"), "frame": ("int64", 1, "events"),
                 "type": ("int64", 1, "events"), "end": ("int32", 1, "clips"), "limit": ("float32", 1, "clips"),
                 "dur": ("float32", 1, "clips")},
    RowState: {"live": ("bool", 1, "rows"), "gen": ("int32", 1, "rows"), "free_rows": ("int32", 1, "rows"),
               "n_free": ("int64", 1, "one"), "free_at": ("int32", 1, "rows")},
    BankTables: {"row0": ("int64", 1, "clips"), "rows": ("int64", 1, "clips"), "ftab": ("int64", 2, "frames"),
                 "kval": ("float32", 2, "keys"), "kslope": ("float32", 2, "keys"), "kstart": ("float32", 1, "keys"),
                 "ktag": ("bool", 1, "keys"), "animated": ("bool", 1, "slots"), "ref_rot": ("float32", 2, "bones"),
                 "ref_lanes": ("float32", 2, "components"), "parents": ("int64", 1, "bones"),
                 "offsets": ("float32", 2, "bones"), "submask": ("bool", 2, "bones"),
                 "frow": ("int64", 1, "frames"), "fkeys": ("float32", 2, "key rows"),
                 "ftag": ("bool", 2, "key rows")},
    Scratch: {**{f: ("float32", 2, "poses") for f in ("vel", "root")}, "rot": ("float32", 3, "poses"),
              "tag": ("bool", 2, "poses"), "vel_i": ("int32", 2, "poses"), "root_i": ("int32", 2, "poses"),
              "rot_i": ("int32", 3, "poses"), "dflt": ("int64", 1, "one"),
              "lanes": ("float32", 1, "lanes"), "lane_tag": ("bool", 1, "slots"),
              "lane_idx": ("int64", 1, "bones")},
}
_WALK = 64                      # kernels_step's walk scratch (rows a stack and its next tasks span)
_COUNTS = 5                     # step_stacks' counts (COUNT_EVENTS ... COUNT_WRAPS)
_FLUSH_COUNTS = 9               # flush_release's counts (FLUSH_FREED ... FLUSH_NOTED)
_FEW = 16                       # rows checked one by one below this (numpy's min and max cost more)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    return isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, (bool, np.bool_))


def _fail(kernel: str, field: str, why: str) -> KernelInputError:
    return KernelInputError(f"{kernel}: {field}: {why}")


_DTYPES = {name: np.dtype(name) for name in ("int8", "int32", "int64", "float32", "float64", "bool")}


def _array(kernel: str, field: str, a: Any, dtype: str, ndim: int) -> np.ndarray:
    """``a`` as the kernel reads it: an ndarray of ``dtype`` and ``ndim`` dimensions, C-contiguous."""
    if a.__class__ is not np.ndarray:
        raise _fail(kernel, field, f"{type(a).__name__}, expected a numpy array of {dtype}")
    if a.dtype is not _DTYPES[dtype] and a.dtype != _DTYPES[dtype] or a.ndim != ndim:
        raise _fail(kernel, field, f"{a.dtype.name} of {a.ndim} dimension(s), expected {dtype} of {ndim}")
    if not a.flags.c_contiguous:
        raise _fail(kernel, field, "not C-contiguous")
    return a


def _table(kernel: str, field: str, t: Any, cls: type) -> None:
    """A table tuple whole: its class, each column's dtype and dimensions, the columns of a
    group one length (a column shorter than its table would be read past its end)."""
    if type(t) is not cls:
        raise _fail(kernel, field, f"{type(t).__name__}, expected {cls.__name__}")
    lengths: dict[str, tuple[str, int]] = {}
    for name, (dtype, ndim, group) in COLUMN_TYPES[cls].items():
        a = _array(kernel, f"{field}.{name}", getattr(t, name), dtype, ndim)
        if group == "one":
            if a.shape[0] < 1:
                raise _fail(kernel, f"{field}.{name}", "empty, expected one value")
            continue
        seen = lengths.setdefault(group, (name, a.shape[0]))
        if a.shape[0] != seen[1]:
            raise _fail(kernel, f"{field}.{name}", f"{a.shape[0]} rows, but {field}.{seen[0]} has {seen[1]}")


def _rows(kernel: str, field: str, rows: Any, n: int) -> int:
    """Human rows: int64, one dimension, each in [0, n). Returns how many."""
    _array(kernel, field, rows, "int64", 1)
    m = rows.shape[0]
    if m:
        if m <= _FEW:
            lst = rows.tolist()
            lo, hi = min(lst), max(lst)
        else:
            lo, hi = int(rows.min()), int(rows.max())
        if lo < 0 or hi >= n:
            raise _fail(kernel, field, f"row {lo if lo < 0 else hi} outside the human table's {n} rows")
    return m


def _at_least(kernel: str, field: str, a: np.ndarray, n: int, what: str = "rows") -> None:
    if a.shape[0] < n:
        raise _fail(kernel, field, f"{a.shape[0]} {what}, needs at least {n}")


class _Job(abc.ABC):
    """What every job shares: its kernel (looked up in anim.engine.kernels at each run, so a timer
    may wrap it), the table tuples last found whole (checked again when replaced) and the
    inputs last found good: inputs that are those very objects (the engine passes the
    same ones from one update to the next while nothing grew) are not checked again."""

    KERNEL = ""
    Inputs: Any = None
    PASSES: tuple = ()
    TABLES: tuple = ()          # the inputs that are table tuples, checked by identity
    # the inputs that change from one run to the next while the rest stays the very same
    # objects (a flush's entry range, a refresh's rows): only these are checked then
    # (``_check_varying``); FIXED, the others, is made from it per subclass
    VARYING: tuple = ()
    FIXED: Any = None

    __slots__ = ("kernel", "_whole", "_last")

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.VARYING:
            n = len(cls.Inputs._fields)
            cls.FIXED = itemgetter(*[i for i in range(n) if i not in cls.VARYING])

    def __init__(self, debug: bool = False):
        self.kernel = TrustedKernel(self.KERNEL, debug)
        self._whole: list = []
        self._last: Any = None

    def validate(self, inputs) -> None:
        """Raise KernelInputError on the first input the kernel cannot run on (see the module)."""
        last = self._last
        if type(inputs) is not self.Inputs:
            raise _fail(self.KERNEL, "inputs", f"{type(inputs).__name__}, expected {self.Inputs.__name__}")
        if last is not None:
            if all(map(_is, inputs, last)):
                return              # the very objects found good last time (the engine's usual run)
            fixed = self.FIXED
            if fixed is not None and all(map(_is, fixed(inputs), fixed(last))):
                self._last = None
                self._check_varying(inputs)     # the rest found good last time: these alone
                self._last = inputs
                return
        self._last = None
        if self.TABLES:
            whole = self._whole
            tables = [inputs[i] for i in self.TABLES]
            if len(whole) != len(tables) or not all(map(_is, tables, whole)):
                self._check_tables(inputs)
                self._whole = tables
        self._check_call(inputs)
        self._last = inputs

    def run(self, inputs, kernel=None):
        """Validate ``inputs`` then run the kernel on them (``kernel``: the callable to run
        it through, the engine's own trusted call; else this job's). Returns what the
        kernel returns (the pose kernels: the index they stopped at)."""
        self.validate(inputs)
        k = kernel or self.kernel
        if _TIER["on"] and k.__class__ is not TrustedKernel and interpret.on():
            return interpret.call(k, *inputs)       # a cold start's first steps: the kernel as Python
        return k(*inputs)

    @abc.abstractmethod
    def _check_tables(self, inputs) -> None:
        """The tables of ``inputs`` (run when any of them is another object than last time)."""

    @abc.abstractmethod
    def _check_call(self, inputs) -> None:
        """Everything of ``inputs`` but the tables (every run)."""

    def _check_varying(self, inputs) -> None:
        """The VARYING inputs alone (the others the very objects ``_check_call`` found good);
        a job that names no cheaper check checks the whole call."""
        self._check_call(inputs)


def _check_steps_tables(kernel: str, humans, tasks, cursors, fades, gaits, events) -> None:
    _table(kernel, "humans", humans, HumanCols)
    _table(kernel, "tasks", tasks, TaskCols)
    _table(kernel, "cursors", cursors, CursorCols)
    if fades is not None:
        _table(kernel, "fades", fades, FadeCols)
    _table(kernel, "gaits", gaits, GaitCols)
    if events is not None:
        _table(kernel, "events", events, EventIndex)


class StepInputs(NamedTuple):
    """step_stacks' inputs: the human ``rows`` (from ``start``), ``dt`` (seconds, a float32
    value), the StepRules, the tables and the StepBuffers (outputs and scratch)."""
    rows: np.ndarray
    start: int
    dt: float
    rules: StepRules
    humans: HumanCols
    tasks: TaskCols
    cursors: CursorCols
    fades: FadeCols
    gaits: GaitCols
    events: EventIndex
    out: StepBuffers


class StepJob(_Job):
    """The animation step of the humans ``rows[start:]`` (anim.engine.kernels_step.step_stacks).

    Rejected: a table tuple of another class, a column of another dtype or dimension or
    shorter than its table; a human row outside the human table; ``start`` outside the
    rows; a dt that is not finite or below 0; output buffers shorter than the rows, or
    scratch shorter than a stack.
    """

    KERNEL = "step_stacks"
    Inputs = StepInputs
    # the passes of one human, in order: (name, the named steps of kernels_step it runs)
    PASSES = (("rows ahead", ("fetch_tasks", "fetch_rows")), ("room and pairs ahead", ("_room",)),
              ("newest", ("_newest",)),
              ("tasks bottom-up", ("_step_loop", "_step_clip", "_hand_over", "_in_window", "_step_fade",
                                   "_gait_move", "_change_pair", "_gait_leader", "_gait_advance", "_step_mix",
                                   "_step_pick", "_step_direction")),
              ("held events", ("_held_events",)))
    TABLES = (4, 5, 6, 7, 8, 9, 10)
    __slots__ = ()

    def _check_tables(self, inputs: StepInputs) -> None:
        k = self.KERNEL
        _check_steps_tables(k, *inputs[4:10])
        out = inputs.out
        if type(out) is not StepBuffers:
            raise _fail(k, "out", f"{type(out).__name__}, expected StepBuffers")
        for name in ("status", "ev_lo", "ev_hi"):
            _array(k, f"out.{name}", getattr(out, name), "int64", 1)
        for name, width, dt in (("ev_out", 4, "int32"), ("def_out", 2, "int64"), ("wrap_out", 2, "int32")):
            a = _array(k, f"out.{name}", getattr(out, name), dt, 2)
            if a.shape[1] != width:
                raise _fail(k, f"out.{name}", f"{a.shape[1]} columns, expected {width}")
        _at_least(k, "out.counts", _array(k, "out.counts", out.counts, "int64", 1), _COUNTS, "entries")
        _at_least(k, "out.snap", _array(k, "out.snap", out.snap, "int64", 1), inputs.humans.stack.shape[1],
                  "entries (the stack's size)")
        _at_least(k, "out.walk", _array(k, "out.walk", out.walk, "int64", 1), _WALK, "entries")
        _at_least(k, "out.pair4", _array(k, "out.pair4", out.pair4, "int64", 1), 4, "entries")

    def _check_call(self, inputs: StepInputs) -> None:
        k = self.KERNEL
        n = _rows(k, "rows", inputs.rows, inputs.humans.depth.shape[0])
        start = inputs.start
        if not _is_int(start) or not 0 <= start <= n:
            raise _fail(k, "start", f"{start!r}, expected an int in [0, {n}]")
        dt = inputs.dt
        if not _is_real(dt) or not (math.isfinite(dt) and dt >= 0.0):
            raise _fail(k, "dt", f"{dt!r}, expected a finite float >= 0")
        if type(inputs.rules) is not StepRules:
            raise _fail(k, "rules", f"{type(inputs.rules).__name__}, expected StepRules")
        out = inputs.out
        for name in ("status", "ev_lo", "ev_hi"):
            _at_least(k, f"out.{name}", getattr(out, name), n)


class PoseInputs(NamedTuple):
    """pose_stacks' inputs: the human ``rows``, each one's output column ``cols``, the
    tables, the bank's BankTables, the Scratch poses, the PoseOut and the PoseBuffers."""
    rows: np.ndarray
    cols: np.ndarray
    humans: HumanCols
    tasks: TaskCols
    cursors: CursorCols
    fades: FadeCols
    gaits: GaitCols
    events: EventIndex
    bank: BankTables
    scratch: Scratch
    out: PoseOut
    buffers: PoseBuffers


class PoseJob(_Job):
    """Every listed human's pose and bone transforms (anim.engine.kernels_pose.pose_stacks).

    Rejected: as StepJob's tables, and the bank's; a human row outside the human table; an
    output column outside the PoseOut; fewer output columns, refusal counts or
    queued-default flags than rows; scratch of fewer than nine poses; a skeleton whose
    bone count differs between the bank, the scratch and the output.
    """

    KERNEL = "pose_stacks"
    Inputs = PoseInputs
    # one human's passes, in order: the queued tasks' pose (queued_default), then the stack's
    # walk (each task by its type's named step), the blend windows, the top emitted; then,
    # for every human of the run at once, the bones to model space
    PASSES = (("queue and stack walk", ("_sample", "_pose_fade", "_pose_gait", "_pose_blend_task", "_pose_window",
                                        "_keep_queued_pose")),
              ("blend windows", ("_pose_windows",)), ("top", ("_pose_top",)),
              ("local to model, SIMD across humans", ("_emit_model",)))
    TABLES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    __slots__ = ()

    def _check_tables(self, inputs: PoseInputs) -> None:
        k = self.KERNEL
        _check_steps_tables(k, *inputs[2:8])
        _table(k, "bank", inputs.bank, BankTables)
        _table(k, "scratch", inputs.scratch, Scratch)
        bones = inputs.bank.ref_rot.shape[0]
        if inputs.scratch.rot.shape[0] < POSE_STACK_SIZE + 2:
            raise _fail(k, "scratch.rot", f"{inputs.scratch.rot.shape[0]} poses, needs at least {POSE_STACK_SIZE + 2}")
        from scuffle.anim.engine.kernels_pose import LANE_ROWS, LANES      # (loaded: a kernel runs)
        sc = inputs.scratch
        if (sc.rot.shape[1:] != (4, LANES) or sc.lanes.shape[0] != LANE_ROWS * LANES or bones > LANES
                or sc.lane_idx.shape[0] < bones):
            raise _fail(k, "scratch.rot", f"{sc.rot.shape[1:]} components and lanes (scratch.lanes {sc.lanes.shape}), "
                        f"expected (4, {LANES}) for the bank's skeleton of {bones} bones")
        if inputs.bank.ref_lanes.shape != (4, LANES) or sc.lane_tag.shape[0] != bones + 2:
            raise _fail(k, "bank.ref_lanes", f"{inputs.bank.ref_lanes.shape} (scratch.lane_tag {sc.lane_tag.shape}), "
                        f"expected (4, {LANES}) for the bank's skeleton of {bones} bones")
        bank = inputs.bank
        if bones != NUM_BONES or bank.fkeys.shape[1] != KEY_ROW_FIELDS * bones or bank.ftag.shape[1] != bones:
            raise _fail(k, "bank.fkeys", f"key rows of {bank.fkeys.shape[1]} (bank.ftag {bank.ftag.shape[1]}) for "
                        f"{bones} bones, expected {KEY_ROW_FIELDS} x {NUM_BONES} ({NUM_BONES})")
        out = inputs.out
        if type(out) is not PoseOut:
            raise _fail(k, "out", f"{type(out).__name__}, expected PoseOut")
        width = out.pos.shape[-1] if isinstance(out.pos, np.ndarray) and out.pos.ndim == 3 else -1
        for name, ndim in (("vel", 2), ("root", 2), ("rot", 3), ("tag", 2), ("pos", 3), ("mrot", 3)):
            a = _array(k, f"out.{name}", getattr(out, name), "bool" if name == "tag" else "float32", ndim)
            if a.shape[-1] != width:
                raise _fail(k, f"out.{name}", f"{a.shape[-1]} columns, but out.pos has {width}")
        if out.rot.shape[1] != bones:
            raise _fail(k, "out.rot", f"{out.rot.shape[1]} bones, the bank's skeleton has {bones}")
        b = inputs.buffers
        if type(b) is not PoseBuffers:
            raise _fail(k, "buffers", f"{type(b).__name__}, expected PoseBuffers")
        _array(k, "buffers.refused", b.refused, "int64", 1)
        _at_least(k, "buffers.weights", _array(k, "buffers.weights", b.weights, "float32", 1), _WALK, "entries")
        _array(k, "buffers.queued_default", b.queued_default, "bool", 1)

    def _check_call(self, inputs: PoseInputs) -> None:
        k = self.KERNEL
        n = _rows(k, "rows", inputs.rows, inputs.humans.depth.shape[0])
        width = inputs.out.pos.shape[-1]
        cols = _array(k, "cols", inputs.cols, "int64", 1)
        _at_least(k, "cols", cols, n)
        if n:
            c = cols[:n]
            lo, hi = (min(c.tolist()), max(c.tolist())) if n <= _FEW else (int(c.min()), int(c.max()))
            if lo < 0 or hi >= width:
                raise _fail(k, "cols", f"column {lo if lo < 0 else hi} outside the output's {width}")
        b = inputs.buffers
        _at_least(k, "buffers.refused", b.refused, n)
        _at_least(k, "buffers.queued_default", b.queued_default, n)


class FlushInputs(NamedTuple):
    """flush_release's inputs: the deferred entries ``lo`` to ``hi`` of ``buf.entries``,
    ``release_all``, the tables, the task, gait and fade tables' row state, the FlushBuffers."""
    lo: int
    hi: int
    release_all: bool
    humans: HumanCols
    tasks: TaskCols
    task_rows: RowState
    cursors: CursorCols
    gaits: GaitCols
    gait_rows: RowState
    fade_rows: RowState
    buf: FlushBuffers


class FlushJob(_Job):
    """The deferred tasks' release (anim.engine.kernels_flush.flush_release).

    Rejected: as StepJob's tables, and the row states (each as long as its table); entries
    ``lo`` to ``hi`` outside ``buf.entries``; a human or task row of an entry outside its
    table; output buffers shorter than the task table.
    """

    KERNEL = "flush_release"
    Inputs = FlushInputs
    PASSES = (("release flags", ("_release_flags",)), ("owned chain", ("_owned_chain",)),
              ("rows back", ("_give_row", "_give_cursors")))
    TABLES = (3, 4, 5, 6, 7, 8, 9)
    VARYING = (0, 1)
    __slots__ = ()

    def resumes(self, inputs: FlushInputs) -> bool:
        """Whether ``inputs`` may run without a check: every input but the entry range the
        very object of the inputs this job last found good, and the range within the one
        checked then (a resume after a callback's stop, whose entries the round's first
        call checked; the entries array is written only by the round's take)."""
        last = self._last
        return (last is not None and last.lo <= inputs.lo and inputs.hi <= last.hi
                and all(map(_is, inputs[2:], last[2:])))

    def _check_tables(self, inputs: FlushInputs) -> None:
        k = self.KERNEL
        _check_steps_tables(k, inputs.humans, inputs.tasks, inputs.cursors, None, inputs.gaits, None)
        for name, rs in (("task_rows", inputs.task_rows), ("gait_rows", inputs.gait_rows),
                         ("fade_rows", inputs.fade_rows)):
            _table(k, name, rs, RowState)
        if inputs.task_rows.live.shape[0] != inputs.tasks.type.shape[0]:
            raise _fail(k, "task_rows.live", f"{inputs.task_rows.live.shape[0]} rows, the task table has "
                                             f"{inputs.tasks.type.shape[0]}")
        if inputs.gait_rows.live.shape[0] != inputs.gaits.value.shape[0]:
            raise _fail(k, "gait_rows.live", f"{inputs.gait_rows.live.shape[0]} rows, the gait table has "
                                             f"{inputs.gaits.value.shape[0]}")

    def _check_call(self, inputs: FlushInputs) -> None:
        k = self.KERNEL
        buf = inputs.buf
        if type(buf) is not FlushBuffers:
            raise _fail(k, "buf", f"{type(buf).__name__}, expected FlushBuffers")
        entries = _array(k, "buf.entries", buf.entries, "int64", 2)
        if entries.shape[1] != 2:
            raise _fail(k, "buf.entries", f"{entries.shape[1]} columns, expected 2")
        _array(k, "buf.ids", buf.ids, "int64", 1)
        self._check_varying(inputs)
        n_t = inputs.tasks.type.shape[0]
        _at_least(k, "buf.freed", _array(k, "buf.freed", buf.freed, "int32", 1), n_t)
        _at_least(k, "buf.counts", _array(k, "buf.counts", buf.counts, "int64", 1), _FLUSH_COUNTS, "entries")
        _at_least(k, "buf.chain", _array(k, "buf.chain", buf.chain, "int32", 1), _WALK, "entries")
        _array(k, "buf.pool_out", buf.pool_out, "bool", 1)
        _at_least(k, "buf.end_mark", _array(k, "buf.end_mark", buf.end_mark, "int32", 1), n_t)
        _at_least(k, "buf.report_mark", _array(k, "buf.report_mark", buf.report_mark, "int64", 1),
                  inputs.humans.depth.shape[0])
        _array(k, "buf.end_keep", buf.end_keep, "int8", 1)      # (any length: an id past it runs in Python)
        _at_least(k, "buf.notes", _array(k, "buf.notes", buf.notes, "int32", 1), entries.shape[0])

    def _check_varying(self, inputs: FlushInputs) -> None:
        """The entry range ``lo``-``hi`` (within ``buf.entries`` and ``buf.ids``) and those entries' rows."""
        k = self.KERNEL
        buf = inputs.buf
        entries = buf.entries
        lo, hi = inputs.lo, inputs.hi
        if not _is_int(lo) or not _is_int(hi) or not 0 <= lo <= hi <= entries.shape[0]:
            raise _fail(k, "lo, hi", f"{lo!r}, {hi!r}: expected ints with 0 <= lo <= hi <= {entries.shape[0]}")
        if buf.ids.shape[0] < hi:
            raise _fail(k, "buf.ids", f"{buf.ids.shape[0]} rows, needs at least {hi}")
        if hi > lo:
            n_h, n_t = inputs.humans.depth.shape[0], inputs.tasks.type.shape[0]
            if hi - lo <= _FEW:                 # a few entries: read one by one (no numpy call)
                pairs = entries[lo:hi].tolist()
                bad = any(not (-1 <= h < n_h and -1 <= t < n_t) for h, t in pairs)
            else:
                part = entries[lo:hi]
                hs, ts = part[:, 0], part[:, 1]
                bad = int(hs.max()) >= n_h or int(ts.max()) >= n_t or int(ts.min()) < -1 or int(hs.min()) < -1
            if bad:
                raise _fail(k, "buf.entries", f"an entry's row outside the tables ({n_h} humans, {n_t} tasks)")


class AnimIdInputs(NamedTuple):
    """flush_anim_ids' inputs: the human ``rows`` to refresh, the tables, the human table's
    anim id column ``h_anim`` (out) and the ``seen`` scratch (one flag per human row)."""
    rows: np.ndarray
    humans: HumanCols
    h_anim: np.ndarray
    tasks: TaskCols
    cursors: CursorCols
    gaits: GaitCols
    seen: np.ndarray


class AnimIdJob(_Job):
    """The playing anim ids' refresh (anim.engine.kernels_flush.flush_anim_ids).

    Rejected: as StepJob's tables; a human row outside the human table; ``h_anim`` or
    ``seen`` shorter than the human table.
    """

    KERNEL = "flush_anim_ids"
    Inputs = AnimIdInputs
    PASSES = (("top task", ("_lead_of",)),)
    TABLES = (1, 3, 4, 5)
    VARYING = (0,)
    __slots__ = ()

    def _check_tables(self, inputs: AnimIdInputs) -> None:
        _check_steps_tables(self.KERNEL, inputs.humans, inputs.tasks, inputs.cursors, None, inputs.gaits, None)

    def _check_call(self, inputs: AnimIdInputs) -> None:
        k = self.KERNEL
        n_h = inputs.humans.depth.shape[0]
        _rows(k, "rows", inputs.rows, n_h)
        _at_least(k, "h_anim", _array(k, "h_anim", inputs.h_anim, "int64", 1), n_h)
        _at_least(k, "seen", _array(k, "seen", inputs.seen, "bool", 1), n_h)

    def _check_varying(self, inputs: AnimIdInputs) -> None:
        """The human ``rows`` (within the human table)."""
        _rows(self.KERNEL, "rows", inputs.rows, inputs.humans.depth.shape[0])


class MotionInputs(NamedTuple):
    """root_motion_step's inputs, per body k: its pose column ``idx[k]`` (-1: none) of the
    poses' ``vel``, ``tag`` and ``rot``, its ``heading``, ``attached`` flag, state velocity,
    ``position`` and attach heading; ``dt``, the speed ``cap``, and ``out_vel`` (out)."""
    idx: np.ndarray
    p_vel: np.ndarray
    p_tag: np.ndarray
    p_rot: np.ndarray
    heading: np.ndarray
    attached: np.ndarray
    state_vel: np.ndarray
    position: np.ndarray
    attach_heading: np.ndarray
    dt: float
    cap: float
    out_vel: np.ndarray


class MotionJob(_Job):
    """Root motion and the move of every body (anim.engine.kernels_motion.root_motion_step).

    Rejected: a column of another dtype or dimension; a body's column list, heading,
    flags, velocities or positions shorter than the bodies; a pose column outside the
    poses; a dt or cap that is not finite.
    """

    KERNEL = "root_motion_step"
    Inputs = MotionInputs
    PASSES = (("root motion and move", ("_turn_deg", "_wrap_deg")),)
    TABLES = ()
    __slots__ = ()

    def _check_tables(self, inputs: MotionInputs) -> None:
        pass

    def _check_call(self, inputs: MotionInputs) -> None:
        k = self.KERNEL
        idx = _array(k, "idx", inputs.idx, "int64", 1)
        n = idx.shape[0]
        p_vel = _array(k, "p_vel", inputs.p_vel, "float32", 2)
        poses = p_vel.shape[1]
        if n:
            lo, hi = (min(idx.tolist()), max(idx.tolist())) if n <= _FEW else (int(idx.min()), int(idx.max()))
            if lo < -1 or hi >= poses:
                raise _fail(k, "idx", f"pose column {lo if lo < -1 else hi} outside the poses' {poses}")
        _array(k, "p_tag", inputs.p_tag, "bool", 2)
        _array(k, "p_rot", inputs.p_rot, "float32", 3)
        for name in ("heading", "attach_heading"):
            _at_least(k, name, _array(k, name, getattr(inputs, name), "float64", 1), n)
        _at_least(k, "attached", _array(k, "attached", inputs.attached, "bool", 1), n)
        for name in ("state_vel", "position", "out_vel"):
            _at_least(k, name, _array(k, name, getattr(inputs, name), "float64", 2), n)
        for name in ("dt", "cap"):
            v = getattr(inputs, name)
            if not _is_real(v) or not math.isfinite(v):
                raise _fail(k, name, f"{v!r}, expected a finite float")
