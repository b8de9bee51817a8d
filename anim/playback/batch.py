"""The compiled engine's driver: every human's task stack stepped and posed as table rows.

The state lives in the world's tables (anim.engine.store), and only there: each task is a row
of the task table (the Task object is a handle onto it: a row and a generation), each
human a row of the human table (its record's flags, its stack and queue as task rows);
cursors, fades and gait blends have their own. The stack rules (anim.playback.stackrules) write
the rows; ``CharacterInstance.stack`` and ``.queue``, ``ClipTask.next`` and
``FadeTask.incoming`` read them. ``BatchEngine`` runs the kernels of anim.engine.kernels over
the whole crowd:

1. ``step``: each stepped human's queue starts (Python: a start is a change), then one
   kernel call steps every human: cursors, the end and loop rules, hand-overs, blend
   windows, fades' ends and clean-up, the gait rules (a change of pair takes and gives
   its cursors from the cursor table's free list), types 10, 11 and 13, held-flag
   events; it writes the fired events, the deferred tasks and the wraps of tasks with a
   wrap callback as rows of preallocated buffers. Python then only visits the humans
   the kernel reports: their events stay rows until ``CharacterInstance.events`` is
   read, their deferred tasks join the Player's deferred list, the wrap callbacks run
   after the step (Player._run_wraps).
2. ``pose``: one kernel call samples, blends and builds the bone transforms of every human.

No human takes another path: the plain-Python model of the spec is the reference engine
(anim.reference), which tests/anim/test_reference.py ties to this one bit for bit.

Spec: "The task stack", "When a clip ends", "Fades", "Gait blend", "Events".
"""
from __future__ import annotations

import itertools
import os
import threading
from time import get_clock_info
from time import thread_time as _thread_time
from collections import deque
from itertools import repeat
from operator import attrgetter, is_, itemgetter, methodcaller
from operator import is_ as _is
from typing import Any, Callable, Iterable

import numpy as np

from scuffle.anim.engine import kernels as K
from scuffle.anim.engine.coldstart import (ASIDE, POSE_KERNEL, STEP_KERNEL, WHOLE_OF, await_kernel, compile_aside,
                                           compile_rest, lean_first_pose, lean_first_step, note_cold_compile,
                                           rest_installed)
from scuffle.anim.engine import crowd
from scuffle.anim.playback.cursor import FiredEvent
from scuffle.anim.engine.plan import Bones, pose_tables, scratch_poses
from scuffle.anim.maths.pose import DTYPE, NUM_BONES, NUM_TAGS, PoseBatch
from scuffle.anim.engine.stack import CharacterInstance, check_human, seated, serial_of
from scuffle.anim.engine.store import HumanTable, TableCorrupt, check_rows
from scuffle.anim.playback.tasks import TASK_CURSORS, EventRule, MotionEntry, PlaceEvents, TagBits, TaskType, task_at
from scuffle.anim.engine.jobs import AnimIdJob, FlushJob, PoseInputs, PoseJob, StepInputs, StepJob
from scuffle.anim.engine import interpret
from scuffle.anim.engine.trusted import TrustedKernel
from scuffle.anim.engine.writefirst import write_first_for


_TIER = interpret.STATE          # the interpreted tier (anim.engine.interpret)
_COLD: list[bool] = [False]      # the cold-cache check done in this process (anim.engine.coldstart)
_STEPS = [0]                     # the process's steps, counted to 2 (the rest compile then: compile_rest)


def _note_cold(engine: "BatchEngine", kernel: str, humans: int) -> None:
    """The first kernel call of the process (``kernel``, over ``humans``): on a cold cache
    with a few humans, the kernels run as Python while the background compiles them
    (anim.engine.interpret); else announce a cold compile, and compile the other big
    kernel in a child process meanwhile (anim.engine.coldstart): the lean forms where the
    first steps run them."""
    _COLD[0] = True
    if interpret.engage(humans):
        return
    if lean_first_step():
        STEP_KERNEL[0] = "step_lean"
    if lean_first_pose():
        POSE_KERNEL[0] = "pose_lean"
    note_cold_compile()
    other = POSE_KERNEL[0] if kernel == "step_stacks" else STEP_KERNEL[0]
    compile_aside(other, lambda: engine.kernel_args(other))

__all__ = ["BatchEngine", "KERNEL_TYPES"]

# Each arrangement of instances on an engine's human rows gets an id never given twice,
# so that a restore of the arrangement the engine has now does nothing per human.
_SEATINGS = itertools.count(1)



# The task types the kernels run: every type (a fade as a next task excepted).
KERNEL_TYPES = frozenset(TaskType(t) for t in TASK_CURSORS)
_WALK = 64
_PAIR_CURSORS = 2            # the cursors a gait's change of pair can bring in (both clips of the pair)
# Up to this many humans the Python around the kernels reads their rows one by one (a
# memoryview or a list: no numpy call, whose fixed cost is most of a 2-fighter update).
_FEW = 16
# A thread's CPU clock fine enough to time a chunk (crowd.Balance); where it counts in
# scheduler ticks (about 16 ms on Windows) the chunks stay cut by count.
_CHUNK_CLOCK = get_clock_info("thread_time").resolution <= 1e-5
# the kernel's count slots and status bits, read per update (module constants: no attribute look-ups)
_COUNT_GAITS, _COUNT_DEFERRED, _COUNT_WRAPS, _COUNT_STOPPED = K.COUNT_GAITS, K.COUNT_DEFERRED, K.COUNT_WRAPS, \
    K.COUNT_STOPPED
_STATUS_BAD, _STATUS_EVENTS, _STATUS_CHANGED = K.STATUS_BAD, K.STATUS_EVENTS, K.STATUS_TOP | K.STATUS_STACK
_STATUS_SKIPPED = K.STATUS_SKIPPED
_STATUS_LEAN = K.STATUS_LEAN
_MAX_ROWS = 1 << 26          # the step's buffers never grow past this (a corrupt table, not a crowd)
# Bones' buffers per human, flat (BatchEngine._bones_of): velocity, root, pose rotations,
# tags, bone positions, bone rotations.
_BONES_FLAT = ((3, DTYPE), (3, DTYPE), (4 * NUM_BONES, DTYPE), (NUM_TAGS, np.bool_), (3 * NUM_BONES, DTYPE),
               (4 * NUM_BONES, DTYPE))
# runs an iterator to its end, keeping nothing: a map of a setter applied over a crowd in C
_drain: Callable[[Iterable[Any]], None] = deque(maxlen=0).extend
_SLOT_OF, _EVENTS_OF, _RELEASED_OF = attrgetter("slot"), attrgetter("_events"), attrgetter("_released")
_CLEAR = methodcaller("clear")
_SCRATCH_POSES = K.QUEUED_POSE + 1   # pose scratch: the seven of the pose stack, the default, the queued pose


class BatchEngine:
    """The compiled step and pose of one Player (see the module docstring)."""

    def __init__(self, player):
        self.player = player
        self.humans: HumanTable = player.stores.humans
        self._instances: list = []              # human row -> CharacterInstance (None: free)
        # human row -> its instance's serial (0: free), and the id of that arrangement
        # (_SEATINGS): a snapshot saves the two, not the instances (save_state)
        self._owner = np.zeros(0, np.int64)
        self._seating = next(_SEATINGS)
        self._owner_saved: tuple = (0, None)    # (seating, a copy of _owner): what its snapshots share
        self._tasks: list = player.stores.tasks.views   # task row -> its Task (the handle)
        self._last: list | None = None          # the instance list of the last call
        self._last_rows = np.zeros(0, np.int64)
        self._rows_list: list[int] = []         # the same rows as Python ints (few humans: read one by one)
        self._noisy: list = []                  # instances whose events / released to clear
        # the humans' outputs (events, released ids) are this update's while stamped with
        # ``stamp`` (CharacterInstance._at): a step over every human of the engine moves it
        # on instead of clearing each one's (``_clear_noisy``); ``_n_seated`` its humans
        self.stamp = 1
        self._n_seated = 0
        # the event rows of the humans that fired in the last step, by human row: (the stamp
        # they were written at, first, end) flat, three a row (a stamp of 0: none, or made
        # into objects); the readers find a human's rows here (CharacterInstance._event_rows:
        # ``staged_rows``), so nothing is written on each human that fired. ``staged`` the
        # rows written at this stamp (None: none), made into each human's own rows before
        # a step that does not move the stamp reuses the buffer (``_unstage``)
        self._ev_rows = np.zeros(0, np.int64)
        self._m_ev_rows = memoryview(self._ev_rows)
        self.staged: np.ndarray | None = None
        self._fired_of: list | None = None      # the instances list of the last step (fired_places)
        # the places in it of the humans that fired: a list (a few humans) or, in a crowd,
        # the int64 array the step's status gave (no Python int made per human)
        self._fired_ks: list | np.ndarray = []
        self._leaving: list = []                # (human row, generation): forgotten, freed at the flush
        # the clips' events, by bank index: first, count, frames, types (and the Event objects)
        self._n_clips = 0
        self.e_first = np.zeros(0, np.int64)
        self.e_count = np.zeros(0, np.int64)
        self.e_frame = np.zeros(0, np.int64)
        self.e_type = np.zeros(0, np.int64)
        self.k_end = np.zeros(0, np.int32)
        self.k_limit = np.zeros(0, np.float32)
        self.k_dur = np.zeros(0, np.float32)
        self._events: list = []
        # the step's buffers (grown, never per update)
        self._status = np.zeros(0, np.int64)
        # the step's event and wrap rows: rows of the tables and an event's index, int32 as the links
        self._ev_out = np.zeros((256, 4), np.int32)
        self._def_out = player.deferred_rows.rows     # the deferred list's rows (anim.playback.deferred): the step appends
        self._wrap_out = np.zeros((256, 2), np.int32)
        self._in_call = np.zeros(0, np.bool_)
        self._twice = False                     # a human listed more than once
        self._ev_lo = self._ev_hi = np.zeros(0, np.int64)
        self._pair4 = np.zeros(4, np.int64)
        self._counts = np.zeros(K.COUNT_WRAPS + 1, np.int64)      # step_stacks' COUNT_* slots
        self._m_counts = memoryview(self._counts)                  # the same, read as Python ints
        self._no_counts = memoryview(np.zeros_like(self._counts))   # copied over it before each step
        self._m_status, self._m_lo, self._m_hi = (memoryview(a) for a in (self._status, self._ev_lo, self._ev_hi))
        self._snap = np.zeros(HumanTable.STACK_ROWS, np.int64)
        self._walk = np.zeros(_WALK, np.int64)
        self._weights = np.zeros(_WALK, np.float32)
        self._refused = np.zeros(0, np.int64)
        self._m_refused = memoryview(self._refused)
        self._queued_default = np.zeros(0, np.bool_)  # per place in the pose's rows: its queued pose the default
        self._queued_set = False                # _queued_default may hold a True
        self._cols_n = np.zeros(0, np.int64)        # 0, 1, 2...: the pose's output columns
        opts = player.options
        self._scratch = scratch_poses(_SCRATCH_POSES, opts.tag_bits == TagBits.Y_BIT,
                                      opts.motion_entry == MotionEntry.MOTION)
        self._bones: Bones | None = None
        self._bones_flat: tuple | None = None   # the backing of _bones, with room for joiners
        # check_rows after any table grew (or a new clip's events), before every call in debug mode
        self.debug = os.environ.get("SCUFFLE_DEBUG", "") not in ("", "0")
        # the two kernels, called through their entry points while their arguments are the
        # objects the dispatcher last typed (anim.engine.trusted), and those objects, kept
        self._step_kernel = TrustedKernel("step_stacks", self.debug)
        self._step_name = "step_stacks"      # the kernel _step_kernel calls (anim.engine.coldstart.STEP_KERNEL)
        self._pose_kernel = TrustedKernel("pose_stacks", self.debug)
        self._pose_name = "pose_stacks"      # the kernel _pose_kernel calls (anim.engine.coldstart.POSE_KERNEL)
        self._flush_release = TrustedKernel("flush_release", self.debug)      # the Player's flush calls these
        self._flush_anim_ids = TrustedKernel("flush_anim_ids", self.debug)
        # the kernels as jobs (anim.engine.jobs): their inputs validated before every run
        self._step_job, self._pose_job = StepJob(self.debug), PoseJob(self.debug)
        self._flush_job, self._anim_id_job = FlushJob(self.debug), AnimIdJob(self.debug)
        self._step_out: K.StepBuffers | None = None
        self._pose_args: tuple | None = None
        # the world's layout signal (store.LayoutSignal: its Stores'), its stamp when validate()
        # last ran and when _tables() made the tuples
        self._signal = player.stores.signal
        self._validated: int = -1
        self._table_key: tuple | int = ()
        self._cols: tuple = ()
        self._rules_of = self._rules = None     # the PlayerOptions the step's StepRules were made from, and those
        self._skip_of = self._skip_rules = None  # the StepRules a threaded step's chunks' were made from, and those
        self._dt_of: object = None              # the dt object the step's float32 dt was made from, and that
        self._dt32 = 0.0
        self.kernel_humans = 0                  # the humans the last step ran (every one)
        # threads (PlayerOptions.threads): the pool, and each chunk's own kernels, scratch and buffers
        self._workers: crowd.Workers | None = None
        self._parts: list[_Part] = []
        self._place = np.zeros(0, np.int64)      # human row -> its place in the threaded step's rows
        # where the step's and the pose's chunks are cut (moved toward equal time a chunk)
        self.balance = (crowd.Balance(), crowd.Balance())
        # last update's outputs to clear on the calling thread while the other chunks step
        # (a threaded step: _clear_noisy's usual case, handed to the first chunk's job)
        self._late_clear: list | None = None
        self.chunks_used = 1                    # the chunks the last step and pose ran on
        # the pose begun on the worker threads as soon as the step is through (``pose_next``:
        # the instances the caller will pose right after the step, Player.step_and_pose), and
        # that pose's state until the calling thread runs its own chunk and joins (_begun)
        self.pose_next: list | None = None
        self._pose_of: list | None = None
        self._begun: tuple | None = None
        self.poses_begun = 0                    # poses begun beside the step's Python, in all
        self.pair_changes = 0                   # gait pair changes the kernel made, in all

    # ---------------------------------------------------------------- rows
    def _row(self, inst: CharacterInstance) -> int:
        """The human's row (a new one on first sight: its record moves into the table).
        Rejected (ValueError): a human another world's engine has; anything that is not a
        human."""
        check_human("", inst)
        s = inst.slot
        if inst.engine is self:
            write_first_for(self.humans, s)
            return s
        if inst.engine is not None:
            raise ValueError(f"{inst.name or 'human'}: already in another world's Player (forget it there first)")
        s = self.humans.alloc()
        if s >= len(self._instances):
            self._instances.extend([None] * (s + 1 - len(self._instances)))
        self._instances[s] = inst
        self._n_seated += 1
        self._seat_owner(s, inst.serial)                # 0 until a snapshot names it (save_state)
        inst.slot = s
        inst.engine = self
        inst.record.attach(self.humans, s)
        return s

    def _seat_owner(self, row: int, serial: int) -> None:
        """Row ``row``'s owner is now ``serial`` (0: none, or a human no snapshot has named
        yet: ``save_state`` names it, so a game that takes none keeps no serial map of its
        crowd): a new arrangement."""
        own = self._owner
        if row >= len(own):
            grown = np.zeros(max(row + 1, 2 * len(own), 8), np.int64)
            grown[:len(own)] = own
            own = self._owner = grown
        own[row] = serial
        self._seating = next(_SEATINGS)

    def forget(self, inst: CharacterInstance) -> None:
        """The human leaves the world (its stack and queue must be empty: cut): its row of
        the human table goes back, and with it its record's (the record, the instance's
        speed and report callback then raise StaleHandle). While tasks of the human wait
        on the deferred list (cut, not yet flushed), the row stays until the flush has
        released them (their release clears the record's held flags, may report), and goes
        back at the flush's end (``release_leaving``). A standalone human (never stepped
        nor given a task) gives its private row back. Another world's human: nothing."""
        s = inst.slot
        if inst.engine is self:
            write_first_for(self.humans, s)
            if self.player.released_log:            # its released ids made while its row is its own
                self.player.make_released((s,))
            inst.settle_outputs()                   # its outputs made while this engine stamps them
            self.player._gone[s] = inst             # a flush under way still releases its entries
            self._instances[s] = None
            self._n_seated -= 1
            self._seat_owner(s, 0)
            inst.slot = -1
            inst.engine = None
            self._unlist(s)
            deferred = self.player.deferred_rows
            if deferred.holds_human(s, inst):
                # released in Python at the flush, as objects
                deferred.detach(s, inst, self._tasks, self.player.stores.tasks)
                self._leaving.append((s, self.humans.gen[s]))
            else:
                self.humans.free(s)
        elif inst.engine is None and inst.record.table.world is None:
            inst.record.release()

    def release_leaving(self) -> None:
        """Give back the rows of the humans forgotten with tasks on the deferred list (the
        flush has released those tasks). A row the record moved out of since (its instance
        was stepped again: a new row) is already back."""
        leaving, self._leaving = self._leaving, []
        h = self.humans
        for s, gen in leaving:
            if h.live[s] and h.gen[s] == gen:
                h.free(s)

    def _unlist(self, s: int) -> None:
        """Human row ``s`` leaves: out of the last call's list, the others kept in their
        order (a crowd's leave costs no look-up of every human's row at the next step)."""
        last = self._last
        if last is None:
            return
        at = np.flatnonzero(self._last_rows == s)
        if len(at) != 1:                            # listed twice (or not at all): made again
            self._last = None if len(at) else last
            return
        k = int(at[0])
        del last[k]
        del self._rows_list[k]
        self._last_rows = np.delete(self._last_rows, k)

    def _rows_of(self, instances: list) -> np.ndarray:
        """The rows of ``instances``, reused while the same humans come in the same order;
        humans added at the end (a crowd's joins: the newest entities) cost their own rows
        only."""
        last = self._last
        if last is not None and len(instances) == len(last) and instances == last:
            return self._last_rows
        m = len(last) if last is not None else 0
        if 0 < m < len(instances) and not self._twice and instances[:m] == last:
            added = [self._row(inst) for inst in instances[m:]]
            rows = self._last_rows
            # a newcomer's row among the listed ones: a human listed twice (made again below);
            # a few newcomers compared with the listed rows one by one (a sorting isin costs
            # a crowd's worth at each join)
            if len(added) <= _FEW:
                clash = any(bool((rows == r).any()) for r in added)
            else:
                clash = bool(np.isin(added, rows).any())
            if len(set(added)) == len(added) and not clash:
                last.extend(instances[m:])
                self._rows_list.extend(added)
                self._last_rows = np.concatenate((rows, np.array(added, dtype=np.int64)))
                return self._last_rows
        self._last = list(instances)
        self._rows_list = [self._row(inst) for inst in instances]
        self._last_rows = np.array(self._rows_list, dtype=np.int64)
        self._twice = len(set(self._rows_list)) < len(self._rows_list)
        return self._last_rows

    # ---------------------------------------------------------------- stacks and queues: rows only
    def stack_of(self, inst: CharacterInstance) -> list:
        """The human's stack, bottom first, as the task objects of its row's task rows."""
        s = inst.slot
        write_first_for(self.humans, s)
        tasks = self._tasks
        h = self.humans
        b = s * h.stack_width
        ts = self.player.stores.tasks               # a row a prepared command wrote: its handle made now
        return [tasks[r] or task_at(ts, r) for r in h.m_stack[b:b + h.m_depth[s]].tolist()]

    def queue_of(self, inst: CharacterInstance) -> list:
        """The human's queue, first first, as the task objects of its row's task rows."""
        s = inst.slot
        write_first_for(self.humans, s)
        tasks = self._tasks
        h = self.humans
        b = s * h.queue_width
        ts = self.player.stores.tasks
        return [tasks[r] or task_at(ts, r) for r in h.m_queue[b:b + h.m_queued[s]].tolist()]

    def depth_of(self, inst: CharacterInstance) -> int:
        """The number of tasks on the human's stack (its row's depth; 0 before it has a row)."""
        if inst.engine is not self:
            return 0
        write_first_for(self.humans, inst.slot)
        return self.humans.m_depth[inst.slot]

    def put_row(self, inst: CharacterInstance, trow: int, at: int) -> int:
        """Task row ``trow`` into the human's stack at index ``at`` (0: the bottom, -1: on
        top), the tasks above it moved up one slot; returns the new depth. The caller has
        checked that the stack has room (StackRules._put)."""
        s = self._row(inst)
        h = self.humans
        depth = h.m_depth
        n = depth[s]
        ms, b = h.m_stack, s * h.stack_width
        if 0 <= at < n:
            for i in range(b + n, b + at, -1):      # a few slots: cheaper one by one than a numpy slice
                ms[i] = ms[i - 1]
            ms[b + at] = trow
        else:
            ms[b + n] = trow
        depth[s] = n + 1
        return n + 1

    def queued_of(self, inst: CharacterInstance) -> int:
        """The number of tasks in the human's queue (its row's count; 0 before it has a row)."""
        if inst.engine is not self:
            return 0
        write_first_for(self.humans, inst.slot)
        return self.humans.m_queued[inst.slot]

    def queue_row(self, inst: CharacterInstance, trow: int) -> None:
        """Task row ``trow`` at the end of the human's queue (the caller has checked that
        the queue has room: StackRules.enqueue)."""
        s = self._row(inst)
        h = self.humans
        queued = h.m_queued
        n = queued[s]
        h.m_queue[s * h.queue_width + n] = trow
        queued[s] = n + 1

    def change_rows(self, inst: CharacterInstance, trow: int, frow: int) -> None:
        """A change's two moves at once: task row ``trow`` under the human's stack, fade row
        ``frow`` on top of it (the caller has checked that both fit and that neither early
        finish acts: StackRules.change)."""
        s = self._row(inst)
        h = self.humans
        depth = h.m_depth
        n = depth[s]
        ms, b = h.m_stack, s * h.stack_width
        for i in range(b + n, b, -1):
            ms[i] = ms[i - 1]
        ms[b] = trow
        ms[b + n + 1] = frow
        depth[s] = n + 2

    def top_task(self, inst: CharacterInstance):
        """The task of the human's top stack row (None when its stack is empty), read from
        its row without building the stack's list."""
        if inst.engine is not self:
            return None
        s = inst.slot
        write_first_for(self.humans, s)
        h = self.humans
        n = h.m_depth[s]
        if not n:
            return None
        r = h.m_stack[s * h.stack_width + n - 1]
        return self._tasks[r] or task_at(self.player.stores.tasks, r)

    def bottom_task(self, inst: CharacterInstance):
        """The task of the human's bottom stack row (None when its stack is empty)."""
        if inst.engine is not self:
            return None
        s = inst.slot
        write_first_for(self.humans, s)
        h = self.humans
        if not h.m_depth[s]:
            return None
        r = h.m_stack[s * h.stack_width]
        return self._tasks[r] or task_at(self.player.stores.tasks, r)

    def write_stack(self, inst: CharacterInstance, stack: list) -> None:
        """Make ``stack`` (task objects of this world, at most 18) the human's stack rows."""
        self._write_rows(inst, stack, "stack", "depth")

    def write_queue(self, inst: CharacterInstance, queue: list) -> None:
        """Make ``queue`` (task objects of this world, at most 10) the human's queue rows."""
        self._write_rows(inst, queue, "queue", "queued")

    def clear_queue(self, inst: CharacterInstance) -> None:
        """The human's queue rows emptied (``write_queue(inst, [])``), slot by slot through
        the fast views: a queued start's first write, where two numpy calls on a row of ten
        cost more than the loop."""
        s = self._row(inst)
        h = self.humans
        mq, w = h.m_queue, h.queue_width
        for i in range(s * w, s * w + w):
            mq[i] = -1
        h.m_queued[s] = 0

    def _write_rows(self, inst: CharacterInstance, tasks: list, rows: str, count: str) -> None:
        """The tasks' rows into the human's row of column ``rows`` (-1 after them), their
        number into column ``count`` (names: a new human's row may grow the arrays)."""
        s = self._row(inst)
        h = self.humans
        n = len(tasks)
        row = getattr(h, rows)[s]
        row[:n] = [t.trow for t in tasks]
        row[n:] = -1
        getattr(h, count)[s] = n

    def _start_queues(self, instances: list, rows: np.ndarray) -> None:
        """Each stepped human's queue runs once, before any stack advances, in step order
        (Player.start_queue): a start reads and changes only its own human's stack, record
        and the pool, which no advance takes from, and the deferred tasks it gives go into
        step order with the rest (``_in_step_order``), so this is the original's "its queue,
        then its stack" human by human. Original: 0x00175610 (the queue's +0x54 calls)."""
        if len(rows) <= _FEW:                   # a few humans: their counts read one by one
            mq = self.humans.m_queued
            cols = [k for k, r in enumerate(self._rows_list) if mq[r]]
            if not cols:
                return
        else:
            queued = self.humans.queued
            if not queued.any():                # no queue anywhere: nothing allocated
                return
            cols = np.flatnonzero(queued[rows]).tolist()
        player = self.player
        for c in cols:
            inst = instances[c]
            if self.humans.queued[inst.slot]:
                player.start_queue(inst)

    def _clip_events(self) -> None:
        """The events and timing of the clips the Player has seen (new clips appended):
        each clip's events (first, count, frames, types) and the end test (F, D - 1/60)
        and duration a new cursor on it gets (Cursor.__init__, in the cursor table's dtypes)."""
        clips = self.player._clips
        if len(clips) == self._n_clips:
            return
        first, count = self.e_first.tolist(), self.e_count.tolist()
        frames, types = self.e_frame.tolist()[:len(self._events)], self.e_type.tolist()[:len(self._events)]
        ends, limits, durs = self.k_end.tolist(), self.k_limit.tolist(), self.k_dur.tolist()
        every = self.player.options.place_events == PlaceEvents.FIRED       # else type 8 never fires (L249)
        for clip in clips[self._n_clips:]:
            evs, frs = clip.events_by_frame() if every else clip.dispatched_by_frame()
            first.append(len(frames))
            count.append(len(frs))
            frames.extend(frs)
            types.extend(int(e.type) for e in evs)
            self._events.extend(evs)
            end, limit = clip.timing()
            ends.append(end)
            limits.append(limit)
            durs.append(clip.duration)
        cur = self.player.stores.cursors
        self.e_first = np.array(first, np.int64)
        self.e_count = np.array(count, np.int64)
        self.e_frame = np.array(frames + [0], np.int64)
        self.e_type = np.array(types + [0], np.int64)
        self.k_end = np.array(ends, cur.end.dtype)
        self.k_limit = np.array(limits, cur.limit.dtype)
        self.k_dur = np.array(durs, cur.dur.dtype)
        self._signal.move()                          # the kernels' event index moved
        self._n_clips = len(clips)

    # ---------------------------------------------------------------- checks
    def validate(self) -> None:
        """Every row index, shape and dtype the kernels read is in bounds (store.check_rows);
        TableCorrupt names the first fault. Run by the engine before a kernel call whenever a
        table grew since the last check, and before every call with SCUFFLE_DEBUG=1."""
        check_rows(self.player.stores, self.e_first, self.e_count, self.e_frame,
                   (int(TaskType.FADE), int(TaskType.GAIT), int(max(TaskType))))
        self._validated = self._signal.now

    def _tables(self) -> tuple:
        """The tables as the kernels take them (K.HumanCols, TaskCols, CursorCols, FadeCols,
        GaitCols, EventIndex: named tuples of their columns), made again only when a table's
        arrays were replaced (it grew; new clips' events: the world's layout signal), not every update."""
        key = self._signal.now
        if key != self._table_key:
            st = self.player.stores
            h = self.humans
            self._table_key = key
            self._cols = (K.HumanCols(h.flags, h.depth, h.stack, h.queued, h.queue),
                          K.TaskCols(*(getattr(st.tasks, f) for f in K.TaskCols._fields)),
                          K.CursorCols(*(getattr(st.cursors, f) for f in K.CursorCols._fields)),
                          K.FadeCols(*(getattr(st.fades, f) for f in K.FadeCols._fields)),
                          K.GaitCols(*(getattr(st.gaits, f) for f in K.GaitCols._fields)),
                          K.EventIndex(self.e_first, self.e_count, self.e_frame, self.e_type, self.k_end,
                                       self.k_limit, self.k_dur))
        return self._cols

    def _guard(self) -> None:
        """validate() if a table's arrays were replaced since the last check (it grew, new
        clips' events: the world's layout signal; always in debug mode)."""
        if self.debug or self._validated != self._signal.now:
            self.validate()

    # ---------------------------------------------------------------- the step
    def touched(self) -> list:
        """The instances whose events or released lists were filled since the last step
        began (every one with events this update is here)."""
        staged = self.staged
        if staged is None:
            return self._noisy
        by_row, m, stamp = self._instances, self._m_ev_rows, self.stamp
        return self._noisy + [by_row[r] for r in staged.tolist() if m[3 * r] in (stamp, -stamp)]

    # -- the event rows of the humans that fired, by human row (CharacterInstance reads them)
    def staged_rows(self, slot: int) -> tuple | None:
        """Human row ``slot``'s event rows of the last step not yet made into objects,
        (this engine, first, end) of the step's buffer, or None."""
        m = self._m_ev_rows
        j = 3 * slot
        if 0 <= j < len(m) and m[j] == self.stamp:
            return (self, m[j + 1], m[j + 2])
        return None

    def drop_staged(self, slot: int) -> None:
        """Human row ``slot``'s event rows forgotten here (made into objects, or the
        human's own rows set instead): marked so (the stamp negated), so that a step which
        does not move the stamp still clears what the human holds (``_unstage``)."""
        j = 3 * slot
        m = self._m_ev_rows
        if 0 <= j < len(m) and m[j] == self.stamp:
            m[j] = -self.stamp

    def _stage(self, hrows: np.ndarray, ev: np.ndarray) -> None:
        """The event rows of the humans of rows ``hrows`` (each once), places ``ev`` of the
        step's outputs, written by human row at the current stamp."""
        need = 3 * self.humans.capacity
        if len(self._ev_rows) < need:
            grown = np.zeros(need, np.int64)
            grown[:len(self._ev_rows)] = self._ev_rows
            self._ev_rows = grown
            self._m_ev_rows = memoryview(grown)  # type: ignore[arg-type]
        tab = self._ev_rows.reshape(-1, 3)
        tab[hrows, 0] = self.stamp
        tab[hrows, 1] = self._ev_lo[ev]
        tab[hrows, 2] = self._ev_hi[ev]
        self.staged = hrows

    def _unstage(self) -> None:
        """The staged event rows still unread become their humans' own (``_rows``), and
        those humans and the ones whose rows were made into objects are noted in
        ``_noisy``: the step about to run does not move the stamp and reuses the buffer."""
        staged, self.staged = self.staged, None
        if staged is None or not len(staged):
            return
        tab = self._ev_rows.reshape(-1, 3)
        stamp = self.stamp
        at = tab[staged, 0]
        hit = staged[(at == stamp) | (at == -stamp)]
        by_row, noisy = self._instances, self._noisy
        for r, s, lo, hi in zip(hit.tolist(), tab[hit, 0].tolist(), tab[hit, 1].tolist(), tab[hit, 2].tolist()):
            inst = by_row[r]
            if inst is not None:
                if s == stamp:
                    inst._rows = (self, lo, hi, stamp)
                noisy.append(inst)
        tab[staged, 0] = 0

    def fired_places(self, instances: list) -> list | None:
        """After ``step(instances)`` (this very list, no human listed twice): the places k
        of ``instances`` whose human fired in that step, ascending (each ``instances[k]``
        has this update's events); None when the last step was not over ``instances``
        (the caller then looks at ``touched()``, a superset)."""
        if instances is not self._fired_of:
            return None
        ks = self._fired_ks
        return ks if isinstance(ks, list) else ks.tolist()

    def fired_at(self, instances: list) -> list | np.ndarray | None:
        """``fired_places`` as the step keeps them, for the systems that read them each
        update: a list (a few humans) or an int64 array (a crowd: the step's own, read-only),
        so that a crowd's readers of columns make no Python int per human that fired."""
        return self._fired_ks if instances is self._fired_of else None

    def released_by_flush(self, inst) -> None:
        """The flush filled ``inst.released``: clear it at the next step."""
        self._noisy.append(inst)

    def step(self, instances: list, dt: float, listed: bool = True) -> list | bool:
        """Advance every human one update, all in one kernel call (anim.engine.kernels.step_stacks);
        returns those whose top task may have changed (``listed=False``: only whether any
        may have, a bool, no list made: the Player's step). Rejected: a human whose rows the
        kernel cannot follow (TableCorrupt: a row written behind the engine's back)."""
        player = self.player
        if self._begun is not None:             # a pose begun and never finished: complete first
            self.finish_begun()
        if _STEPS[0] < 2:
            # the second step: the first update has compiled what an update runs; the other
            # kernels compile in the background (anim.engine.coldstart.compile_rest)
            _STEPS[0] += 1
            if _STEPS[0] == 2:
                compile_rest()
        self._fired_of = None                   # fired_places: known again once this step is through
        deferred = player.deferred_rows
        first_deferred = deferred.n
        last = self._last
        rows = self._last_rows if last is not None and instances == last else self._rows_of(instances)
        n = len(rows)
        if self._noisy or player.released_log or self.staged is not None:
            self._clear_noisy(rows, late=n >= 2 * crowd.MIN_CHUNK and not self._twice
                              and (player.options.threads or crowd.default_threads()) > 1)
        if n <= _FEW:                           # a few humans: _start_queues only when one has a queue
            mq = self.humans.m_queued
            for r in self._rows_list:
                if mq[r]:
                    self._start_queues(instances, rows)
                    break
        else:
            self._start_queues(instances, rows)
        queue_deferred = deferred.n
        if len(player.lookup.clips) != self._n_clips:    # (Player._clips, without its property)
            self._clip_events()
        # a gait's change of pair takes at most two cursors from the free list in the kernel
        stores = player.stores
        gaits, cursors = stores.gaits, stores.cursors
        need = _PAIR_CURSORS * (gaits.capacity - gaits.m_n_free[0])
        if cursors.m_n_free[0] < need:
            cursors.reserve(need)
        if self.debug or self._validated != self._signal.now:
            self.validate()
        if len(self._status) < n:
            m = max(n, 2 * len(self._status))
            self._status, self._ev_lo, self._ev_hi = (np.zeros(m, np.int64) for _ in range(3))
            self._m_status, self._m_lo, self._m_hi = (memoryview(a) for a in (self._status, self._ev_lo, self._ev_hi))
        status = self._status
        mc = self._m_counts
        mc[:] = self._no_counts
        mc[_COUNT_DEFERRED] = deferred.n              # the kernel appends its deferred tasks to the list's rows
        self._def_out = deferred.rows
        # the pose of these instances may begin as soon as the threaded step's kernels are through
        self._pose_of = instances if self.pose_next is instances and not self._twice else None
        try:
            self._run_step(rows, status, self._ev_lo, self._ev_hi, dt)
        finally:
            self._pose_of = None
            if self._late_clear is not None:       # not handed to a chunk (one thread, or an error)
                self._clear_late()
        deferred.rows = self._def_out                 # grown, maybe
        deferred.n = mc[_COUNT_DEFERRED]
        self.pair_changes += mc[_COUNT_GAITS]
        changed: list = []
        fired_ks: list = []                     # the places (in ``instances``) of the humans that fired
        tasks = self._tasks
        noisy = self._noisy
        if n <= _FEW:                           # a few humans: their status read one by one
            ms = self._m_status
            ks = [k for k in range(n) if ms[k]]
            mlo, mhi = self._m_lo, self._m_hi
            found = zip(ks, [ms[k] for k in ks], [mlo[k] for k in ks], [mhi[k] for k in ks]) if ks else ()
        else:
            ks_a = np.flatnonzero(status[:n])
            st_a = status[ks_a]
            if not (st_a & _STATUS_BAD).any():
                # a crowd: only the humans that fired are visited one by one (their event
                # rows noted); those whose top may have changed are listed from the column
                ev = ks_a[(st_a & _STATUS_EVENTS) != 0]
                fired_ks = ev                   # (an array: fired_at; fired_places makes the list)
                if len(ev):
                    if not self._twice:
                        # each one's event rows written by its human row (``staged_rows``):
                        # no Python object of a human that fired is read or written
                        self._stage(rows[ev], ev)
                    else:
                        # each one's event rows = (self, lo, hi, the stamp), set by map in C,
                        # and each one noted (its last place's: _last_of_twice)
                        fired_ks = ev.tolist()
                        insts = itemgetter(*fired_ks)(instances) if len(fired_ks) > 1 else (instances[fired_ks[0]],)
                        _drain(map(setattr, insts, repeat("_rows"),
                                   zip(repeat(self), self._ev_lo[ev].tolist(), self._ev_hi[ev].tolist(),
                                       repeat(self.stamp))))
                        noisy.extend(insts)
                if listed:
                    changed = [instances[k] for k in ks_a[(st_a & _STATUS_CHANGED) != 0].tolist()]
                else:
                    changed = bool((st_a & _STATUS_CHANGED).any())     # type: ignore[assignment]
                found = ()
            else:                                   # a table written behind the engine's back: named below
                found = zip(ks_a.tolist(), st_a.tolist(), self._ev_lo[ks_a].tolist(), self._ev_hi[ks_a].tolist())
        for k, st, elo, ehi in found:
            inst = instances[k]
            if st & _STATUS_BAD:
                raise TableCorrupt(f"{inst.name or 'human'} (human row {int(rows[k])}): a task on its stack has "
                                   "no rows the kernel can follow (a table written behind the engine's back)")
            if st & _STATUS_EVENTS:
                # the events stay rows of the buffer until someone reads inst.events
                inst._event_rows = (self, elo, ehi)
                noisy.append(inst)
                fired_ks.append(k)
            if st & _STATUS_CHANGED:
                changed.append(inst)
        if self._twice:
            self._last_of_twice(rows, n)
            self._fired_of = None
        else:
            self._fired_of, self._fired_ks = instances, fired_ks
        n_wrap = mc[_COUNT_WRAPS]
        if n_wrap:
            by_row = self._instances
            note = player.note_wrap
            for hr, tr in self._wrap_out[:n_wrap].tolist():
                note(by_row[hr], tasks[tr] or task_at(player.stores.tasks, tr))
        self.kernel_humans = n
        if (first_deferred < queue_deferred < deferred.n) or (self._twice and deferred.n - first_deferred > 1):
            self._in_step_order(rows, first_deferred)
        return changed if listed else bool(changed)

    def _in_step_order(self, rows: np.ndarray, first: int) -> None:
        """The deferred tasks this step added, in the order the humans step (a stable sort
        by each human's place in ``rows``, the step's human rows): the queued starts (run
        for every human before the kernel) and the kernel each fill the list in a run of
        their own, where the original's list fills as each human steps (its queue, then its
        stack), so the flush (and the end callbacks) go human by human ("When a clip ends",
        L314). Original:
        0x00105640 AnimTask_DeferGive, 0x00105570 AnimTask_FlushDeferred."""
        deferred = self.player.deferred_rows              # places by row: numpy, no dict of the crowd
        place = np.full(self.humans.capacity, -1, np.int64)
        place[rows] = np.arange(len(rows))              # a human listed twice: its last place
        keys = place[deferred.rows[first:deferred.n, 0]]
        for k, (_, inst) in deferred.odd.items():       # an entry held as objects: its instance's row
            if k >= first:
                keys[k - first] = place[inst.slot]
        order = np.argsort(keys, kind="stable")
        deferred.reorder(first, order)

    def fired(self, out: list, lo: int, hi: int) -> None:
        """The events of rows ``lo``-``hi`` of this update's event buffer, as FiredEvent
        objects appended to ``out`` (made when someone reads CharacterInstance.events)."""
        rows = self._ev_out[lo:hi]
        self._append_fired(out, rows[:, 1].tolist(), rows[:, 2].tolist(), rows[:, 3].tolist(), 0, hi - lo)

    def _append_fired(self, out: list, trs: list, crs: list, gs: list, lo: int, hi: int) -> None:
        """FiredEvent objects for entries ``lo``-``hi`` of the event rows' task rows, cursor
        rows and event indices (lists), appended to ``out``: the event, the cursor's anim id
        and the task, read now."""
        events, tasks, anim = self._events, self._tasks, self.player.stores.cursors.m_anim
        ts = self.player.stores.tasks
        for j in range(lo, hi):
            out.append(FiredEvent(events[gs[j]], anim[crs[j]], tasks[trs[j]] or task_at(ts, trs[j])))

    def event_span(self) -> tuple:
        """This update's whole event buffer read in one go, for a reader of many humans'
        events (systems.events.EventDispatch): (the rows' count, their task rows, cursor
        rows, event indices and event types as lists). Rows of every
        human's ``_event_rows`` lie within it."""
        n = int(self._counts[K.COUNT_EVENTS])
        rows = self._ev_out[:n]
        return (n, rows[:, 1].tolist(), rows[:, 2].tolist(), rows[:, 3].tolist(), self.e_type[rows[:, 3]].tolist())

    def fired_columns(self, instances: list) -> tuple | None:
        """After ``step(instances)`` (``fired_places`` gives its places): this update's
        events as columns, in step order then firing order: (each event's index into the
        places list, its event type, the anim id its cursor plays, its index into
        ``fired_maker()``'s events), int64 arrays; None when the last step was not over
        ``instances`` (the caller then reads the humans' events)."""
        ks = self.fired_at(instances)
        if ks is None:
            return None
        if not len(ks):
            empty = np.zeros(0, np.int64)
            return empty, empty, empty, empty
        ka = np.asarray(ks, np.int64)
        lo, hi = self._ev_lo[ka], self._ev_hi[ka]
        lengths = hi - lo
        owner = np.repeat(np.arange(len(ks), dtype=np.int64), lengths)   # the place in ``ks`` of each event
        if len(ka) == 1 or (lo[1:] == hi[:-1]).all():
            # the kernel wrote them one human after the other (the usual step): one run of rows
            rows = self._ev_out[int(lo[0]):int(hi[-1])]
            g = rows[:, 3].copy()
        else:
            total = int(lengths.sum())
            starts = np.cumsum(lengths) - lengths
            rows = self._ev_out[np.arange(total, dtype=np.int64) - starts[owner] + lo[owner]]
            g = rows[:, 3]
        return owner, self.e_type[g], self.player.stores.cursors.anim[rows[:, 2]].astype(np.int64), g

    def make_fired(self, inst, span: tuple, lo: int, hi: int) -> list:
        """``inst.events`` made from rows ``lo``-``hi`` of ``span`` (``event_span``'s) and
        returned: the same FiredEvent objects ``fired`` makes (the anim id and task read
        now), without a read of the buffer per human."""
        inst._event_rows = None
        out = inst._events
        self._append_fired(out, span[1], span[2], span[3], lo, hi)
        return out

    def fired_maker(self) -> tuple:
        """What ``make_fired`` reads of the engine, for a reader of many humans' events
        (systems.events.EventDispatch) to make them itself with no call per human: (the
        clips' events by index, the task handles by row, the cursors' anim ids by row, the
        task table), read now; valid until the engine's tables change (the reader's own
        handlers may change them: it fetches them again for each human). A row whose handle
        is None (a prepared command's row no one read yet) gets it from
        ``anim.playback.tasks.task_at(table, row)``, as make_fired does."""
        return self._events, self._tasks, self.player.stores.cursors.m_anim, self.player.stores.tasks

    def fired_by(self, task, lo: int, hi: int) -> bool:
        """Whether ``task`` fired one of rows ``lo``-``hi`` of this update's event buffer."""
        return task.tstore is self.player.stores.tasks and bool((self._ev_out[lo:hi, 1] == task.trow).any())

    def fired_row(self, trow: int, lo: int, hi: int) -> bool:
        """Whether task row ``trow`` of this engine's task table fired one of rows
        ``lo``-``hi`` of this update's event buffer (``fired_by`` without its handle)."""
        return trow in self._ev_out[lo:hi, 1].tolist()      # (a few rows: no numpy comparison)

    def fired_values(self, lo: int, hi: int) -> list:
        """Rows ``lo``-``hi`` of this update's event buffer as (event type, anim id its
        cursor plays, the clip's Event) Python values, read now: no FiredEvent, no task
        handle and no array made (a rows handler's view of a few humans' events)."""
        events, anim, et = self._events, self.player.stores.cursors.m_anim, self.e_type
        return [(et.item(g), anim[cr], events[g]) for _, _, cr, g in self._ev_out[lo:hi].tolist()]

    def fired_types(self, lo: int, hi: int) -> np.ndarray:
        """The event types of rows ``lo``-``hi`` of this update's event buffer (no objects)."""
        return self.e_type[self._ev_out[lo:hi, 3]]

    def _clear_noisy(self, rows: np.ndarray, late: bool = False) -> None:
        """Clear last update's events and released ids of the humans stepped now (each
        step begins with none); the others keep theirs (their events made now: the buffer is
        about to be overwritten) until they are stepped. A step over every human of the
        engine (the usual update) clears none of them: the stamp moves on, and every
        output stamped before it reads as empty (CharacterInstance._fresh). Otherwise,
        ``late`` (a crowd the step may cut into chunks): when every one of those to clear is
        stepped now, only notes them (``_late_clear``): the first chunk's job clears them
        after its kernel, while the other chunks step (nothing between here and there reads
        a human's events or released ids: the queued starts change stacks and the pool
        only), and the step clears them itself when no chunk did (``_clear_late``)."""
        if not self._twice and len(rows) == self._n_seated:
            # every human of the engine steps now, each once: the released ids still rows
            # go (a human leaving had its own made first: forget), the stamp moves on
            if self.player.released_log:
                self.player.released_log = []
            self.stamp += 1
            self._noisy = []
            self.staged = None
            return
        if self.staged is not None:
            self._unstage()
        if self.player.released_log:
            self.player.settle_released(rows)
        noisy = self._noisy
        if not noisy:
            return
        if len(rows) <= _FEW:                   # a few humans: their rows in a set
            self._noisy = self._cleared(noisy, set(self._rows_list).__contains__)
            return
        if len(self._in_call) < self.humans.capacity:
            self._in_call = np.zeros(self.humans.capacity, np.bool_)
        in_call = self._in_call
        in_call[rows] = True
        if len(noisy) > _FEW and not self.player.released_log and self._all_stepped(noisy, in_call):
            # every one stepped now and this engine's (the usual update): each one's
            # outputs cleared by maps in C, no loop of Python code per human
            self._noisy = []
            self._late_clear = noisy
            if not late:
                self._clear_late()
        else:
            self._noisy = self._cleared(noisy, None, memoryview(in_call))
        in_call[rows] = False

    def _clear_late(self) -> None:
        """The events and released ids of the humans ``_clear_noisy`` noted, cleared (their
        ``_event_rows`` None, their lists emptied) by maps in C."""
        noisy, self._late_clear = self._late_clear, None
        if noisy:
            _drain(map(setattr, noisy, repeat("_event_rows"), repeat(None)))
            _drain(map(_CLEAR, map(_EVENTS_OF, noisy)))
            _drain(map(_CLEAR, map(_RELEASED_OF, noisy)))

    def _all_stepped(self, noisy: list, in_call: np.ndarray) -> bool:
        """Whether every human of ``noisy`` has its row marked in ``in_call`` (stepped now)
        and is this engine's human of that row (``_cleared``'s first case for all of them)."""
        slots = np.fromiter(map(_SLOT_OF, noisy), np.int64, len(noisy))
        if int(slots.min()) < 0 or int(slots.max()) >= len(in_call) or not in_call[slots].all():
            return False
        by_row = self._instances
        return len(by_row) > int(slots.max()) and all(map(is_, map(by_row.__getitem__, slots.tolist()), noisy))

    def _cleared(self, noisy: list, stepped, mark=None) -> list:
        """_clear_noisy's pass: each human of ``noisy`` whose row ``stepped(row)`` says is
        stepped now (``mark``, a memoryview of flags by human row, instead when given: no call
        a human) (and still this engine's at that row) loses last update's events and
        released ids; the others have their events made from the rows before the buffer is
        reused, and are kept (returned) unless forgotten."""
        by_row = self._instances
        keep = []
        settled = not self.player.released_log       # (settle_released ran): ``released`` is the list itself
        cap = len(mark) if mark is not None else 0
        if mark is not None and settled:            # a crowd, its ids settled (the usual update): the same, leaner
            for inst in noisy:
                s = inst.slot
                if 0 <= s < cap and mark[s] and by_row[s] is inst:
                    inst._event_rows = None
                    inst._events.clear()
                    inst._released.clear()
                else:
                    inst.events                     # made from the rows before they are reused
                    if inst.engine is self:
                        keep.append(inst)
            return keep
        for inst in noisy:
            s = inst.slot
            if ((0 <= s < cap and mark[s]) if mark is not None else stepped(s)) and by_row[s] is inst:
                inst._event_rows = None                 # inst.clear_events(), inline
                inst._events.clear()
                if settled:
                    inst._released.clear()
                else:
                    inst.released.clear()
            else:
                inst.events                         # made from the rows before they are reused
                if inst.engine is self:             # a forgotten human is not stepped again here
                    keep.append(inst)
        return keep

    def _last_of_twice(self, rows: np.ndarray, n: int) -> None:
        """A human listed twice (or more) shows the events of its last step only (each
        step begins with no events)."""
        last: dict[int, int] = {}
        seen: set[int] = set()
        twice: set[int] = set()
        for k, hr in enumerate(rows[:n].tolist()):
            if hr in seen:
                twice.add(hr)
            seen.add(hr)
            last[hr] = k
        for hr in sorted(twice):
            k = last[hr]
            inst = self._instances[hr]
            lo, hi = int(self._ev_lo[k]), int(self._ev_hi[k])
            inst._event_rows = (self, lo, hi) if hi > lo else None

    def _run_step(self, rows: np.ndarray, status: np.ndarray, lo: np.ndarray, hi: np.ndarray, dt: float) -> None:
        """step_stacks over ``rows`` (out: ``status``, each one's event rows ``lo``-``hi``),
        growing the output buffers until everything fits."""
        counts = self._counts
        # the rules and the float32 dt: the same objects while the options and dt are (a
        # trusted call then sees every argument as the object it typed: no re-typing)
        opts = self.player.options
        if opts is not self._rules_of:
            self._rules = K.StepRules(bool(opts.end_zero_overshoot), opts.events == EventRule.NEWEST,
                                      int(opts.cleanup_above))
            self._rules_of = opts
        rules = self._rules
        if dt is not self._dt_of:
            self._dt32 = float(np.float32(dt))
            self._dt_of = dt
        dt32 = self._dt32
        H, T, C, F, G, E = self._cols if self._table_key == self._signal.now else self._tables()
        start = 0
        if not _COLD[0]:
            _note_cold(self, "step_stacks", len(rows))
        if _TIER["on"] and len(rows) > interpret.MAX_HUMANS:
            interpret.leave()                   # a crowd: its kernels compiled, not run as Python
        if ASIDE or self._step_name != STEP_KERNEL[0] or self._step_name == "step_lean":
            self._lean_or_whole(STEP_KERNEL, self._step_name, self._use_step)
        kernel = self._step_kernel
        spans = self._spans(len(rows), 0) if not self._twice else None
        self.chunks_used = len(spans) if spans else 1
        if spans and len(spans) > 1:
            self._step_chunks(rows, spans, status, lo, hi, dt32, rules, (H, T, C, F, G, E))
            return
        while True:
            out = self._step_out
            if out is None or not (out.status is status and out.ev_lo is lo and out.ev_out is self._ev_out
                                   and out.def_out is self._def_out and out.wrap_out is self._wrap_out):
                out = self._step_out = K.StepBuffers(status, lo, hi, self._ev_out, self._def_out, counts,
                                                     self._wrap_out, self._snap, self._walk, self._pair4)
            self._step_job.run(StepInputs(rows, start, dt32, rules, H, T, C, F, G, E, out), kernel)
            stopped = self._m_counts[_COUNT_STOPPED]
            if stopped >= len(rows):
                return
            if self._step_name == "step_lean" and status[stopped] & _STATUS_LEAN:
                # a human whose step takes what step_lean leaves out: step_stacks from it on
                STEP_KERNEL[0] = "step_stacks"
                kernel = self._use_step("step_stacks")
                start = stopped
                continue
            if len(self._ev_out) > _MAX_ROWS:
                raise RuntimeError(f"the step's event buffer passed {_MAX_ROWS} rows at human row {rows[stopped]}")
            # a human's events or deferred tasks might not fit: grow (keeping what is
            # written), go on from it
            self._ev_out = _grown(self._ev_out)
            self._def_out = _grown(self._def_out)
            self._wrap_out = _grown(self._wrap_out)
            start = stopped

    @staticmethod
    def _lean_or_whole(current: list, used: str, use: Callable) -> None:
        """The step's or the pose's kernel before a call (``current``: coldstart.STEP_KERNEL or
        POSE_KERNEL, the one the process runs; ``used`` the engine's own; ``use`` its
        ``_use_step`` or ``_use_pose``): the child compiling it awaited, the engine moved to
        the process's kernel (a fresh install's first steps run the lean form, or their
        end), and from the lean form to the whole one once the background compile has
        installed it (loaded from the cache)."""
        if ASIDE:
            await_kernel(current[0])
        if used != current[0]:
            used = current[0]
            use(used)
        if used in WHOLE_OF and rest_installed():
            current[0] = WHOLE_OF[used]
            use(current[0])

    def _use_step(self, name: str) -> TrustedKernel:
        """Step through kernel ``name`` (step_stacks, or step_lean on a fresh install's
        first steps: anim.engine.coldstart.lean_first_step) from now on. Returns its call."""
        self._step_name = name
        self._step_kernel = TrustedKernel(name, self.debug)
        return self._step_kernel

    # ---------------------------------------------------------------- threads
    def _spans(self, n: int, kind: int) -> list | None:
        """The chunks (lo, hi) of ``n`` humans the step (``kind`` 0) or the pose (1) runs on
        (PlayerOptions.threads, anim.engine.crowd.MIN_CHUNK; cut where each chunk took about
        as long as the others lately: ``balance``, crowd.Balance), the worker pool made to
        match; None for one thread."""
        if n < 2 * crowd.MIN_CHUNK:             # too few to cut: the cores not asked for (a system call)
            return None
        want = self.player.options.threads or crowd.default_threads()
        if want <= 1:
            return None
        spans = self.balance[kind].spans(n, min(want, max(1, n // crowd.MIN_CHUNK)))
        if len(spans) > 1 and (self._workers is None or self._workers.threads < len(spans)):
            if self._workers is not None:
                self._workers.close()
            self._workers = crowd.Workers(want)
        return spans

    def row_chunks(self, n: int) -> tuple[list, "crowd.Workers"] | None:
        """For another kernel over ``n`` rows each independent of the others (root motion
        over the body rows): the chunks (lo, hi) by count for PlayerOptions.threads and the
        engine's worker pool, or None for one thread or too few rows to cut (under two
        chunks of crowd.MIN_CHUNK). The pool runs nothing of the engine's then (a pose
        begun beside the step is finished before the step's caller returns)."""
        if n < 2 * crowd.MIN_CHUNK or self._begun is not None:
            return None
        want = self.player.options.threads or crowd.default_threads()
        if want <= 1:
            return None
        spans = crowd.chunks(n, want)
        if len(spans) <= 1:
            return None
        if self._workers is None or self._workers.threads < len(spans):
            if self._workers is not None:
                self._workers.close()
            self._workers = crowd.Workers(want)
        return spans, self._workers

    def _part(self, j: int) -> "_Part":
        """Chunk ``j``'s kernels, scratch and buffers (made on first use)."""
        parts = self._parts
        while len(parts) <= j:
            sc = self._scratch
            parts.append(_Part(self.debug, scratch_poses(_SCRATCH_POSES, bool(sc.tag_bits), bool(sc.motion_entry))))
        return parts[j]

    def _step_chunks(self, rows: np.ndarray, spans: list, status: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     dt32: float, rules, tables: tuple) -> None:
        """step_stacks over chunks of ``rows`` on threads, merged as one call would have
        written it. Each chunk steps into its own buffers and leaves out (STATUS_SKIPPED)
        the humans whose gait changes pair (a change takes cursors from the crowd's shared
        free list); those are then stepped on this thread, in order, so the free list gives
        the rows one call gives. The merge puts the events, deferred tasks and wraps in
        human order (each row names its human) and sets each human's event rows."""
        n = len(rows)
        if self._skip_of is not rules:              # the same object while the rules are (no check again)
            self._skip_rules, self._skip_of = rules._replace(skip_pairs=True), rules
        skip = self._skip_rules
        parts = [self._part(j) for j in range(len(spans))]
        jobs = [_StepJob(p, *p.step_span(rows, status, lo, hi, a, b), dt32, skip, tables)
                for p, (a, b) in zip(parts, spans)]
        if self._late_clear is not None:
            jobs[0].after = self._clear_late       # the calling thread's Python beside the other chunks
        assert self._workers is not None
        self._workers.run(jobs)
        if _CHUNK_CLOCK:
            self.balance[0].note(spans, [job.cpu for job in jobs])
        for p in parts:
            if p.counts[K.COUNT_GAITS]:
                raise RuntimeError("a chunk of the threaded step changed a gait's pair it should have left out")
        skipped = np.flatnonzero(status[:n] & _STATUS_SKIPPED)
        used = list(zip(parts, spans))
        if len(skipped):
            last = self._part(len(spans))
            k = len(skipped)
            s_status, s_lo, s_hi = last.alone_buffers(k)
            _StepJob(last, rows[skipped], s_status, s_lo, s_hi, dt32, rules, tables)()
            status[skipped] = s_status[:k]
            used.append((last, None))
        counts = self._counts
        base_def = int(counts[_COUNT_DEFERRED])
        n_ev = sum(int(p.counts[K.COUNT_EVENTS]) for p, _ in used)
        n_def = sum(int(p.counts[_COUNT_DEFERRED]) for p, _ in used)
        n_wrap = sum(int(p.counts[_COUNT_WRAPS]) for p, _ in used)
        if self._pose_of is not None and not n_wrap and not (status[:n] & _STATUS_BAD).any():
            # every human stepped, no wrap callback to run first, no row the pose could not
            # follow: the pose's other chunks begin beside the merge and the step's Python
            self._begin_pose(self._pose_of)
        while len(self._ev_out) < n_ev:
            self._ev_out = _grown(self._ev_out)
        while len(self._def_out) < base_def + n_def:
            self._def_out = _grown(self._def_out)
        while len(self._wrap_out) < n_wrap:
            self._wrap_out = _grown(self._wrap_out)
        if not len(skipped):
            # the chunks in order are the humans in order: their rows one after another
            e = d = w = 0
            for p, (a, b) in used:
                pe, pd, pw = (int(p.counts[c]) for c in (K.COUNT_EVENTS, _COUNT_DEFERRED, _COUNT_WRAPS))
                self._ev_out[e:e + pe] = p.ev[:pe]
                lo[a:b] += e
                hi[a:b] += e
                self._def_out[base_def + d:base_def + d + pd] = p.def_[:pd]
                self._wrap_out[w:w + pw] = p.wrap[:pw]
                e, d, w = e + pe, d + pd, w + pw
        else:
            if len(self._place) < self.humans.capacity:
                self._place = np.zeros(self.humans.capacity, np.int64)
            place = self._place
            place[rows] = np.arange(n)
            # each human's events lie in order in its chunk's buffer (or, left out, in the
            # buffer of those stepped alone): their places in the merged buffer follow from
            # every human's count, each buffer's rows moved by their human's shift
            k = len(skipped)
            _, s_lo, s_hi = last.alone
            own = hi[:n] - lo[:n]                   # in its chunk's buffer (0 for one left out)
            cnt = own.copy()
            cnt[skipped] = s_hi[:k] - s_lo[:k]
            new_hi = np.cumsum(cnt)
            new_lo = new_hi - cnt
            for p, span in used:
                pe = int(p.counts[K.COUNT_EVENTS])
                if not pe:
                    continue
                if span is None:
                    shift, c = new_lo[skipped] - s_lo[:k], cnt[skipped]
                else:
                    a, b = span
                    shift, c = new_lo[a:b] - lo[a:b], own[a:b]
                self._ev_out[np.repeat(shift, c) + np.arange(pe)] = p.ev[:pe]
            lo[:n] = new_lo
            hi[:n] = new_hi
            for buf, cnt, dst, off in ((lambda p: p.def_, _COUNT_DEFERRED, self._def_out, base_def),
                                       (lambda p: p.wrap, _COUNT_WRAPS, self._wrap_out, 0)):
                rs = np.concatenate([buf(p)[:int(p.counts[cnt])] for p, _ in used])
                if len(rs):
                    rs = rs[np.argsort(place[rs[:, 0]], kind="stable")]
                dst[off:off + len(rs)] = rs
        counts[K.COUNT_EVENTS] = n_ev
        counts[_COUNT_DEFERRED] = base_def + n_def
        counts[_COUNT_WRAPS] = n_wrap
        counts[_COUNT_GAITS] = sum(int(p.counts[_COUNT_GAITS]) for p, _ in used)
        counts[_COUNT_STOPPED] = n

    def _pose_chunks(self, rows: np.ndarray, spans: list, cols: np.ndarray, tables: tuple, out, refused: np.ndarray,
                     queued_default: np.ndarray) -> None:
        """pose_stacks over chunks of ``rows`` on threads, each with its own scratch, into its
        own columns of ``out`` and its own places of ``refused``."""
        jobs = self._pose_jobs(rows, spans, cols, tables, out, refused, queued_default)
        assert self._workers is not None
        self._workers.run(jobs)
        if _CHUNK_CLOCK:
            self.balance[1].note(spans, [job.cpu for job in jobs])

    def _pose_jobs(self, rows: np.ndarray, spans: list, cols: np.ndarray, tables: tuple, out, refused: np.ndarray,
                   queued_default: np.ndarray) -> list:
        """One _PoseJob a chunk of ``spans``."""
        jobs = []
        for j, (a, b) in enumerate(spans):
            p = self._part(j)
            jobs.append(_PoseJob(p, *p.pose_span(rows, cols, refused, queued_default, a, b), tables, out))
        return jobs

    def kernel_args(self, name: str) -> tuple:
        """Arguments of the types kernel ``name`` ("step_stacks" or "pose_stacks", or their
        lean forms) is called with here, on one human and scratch buffers
        (anim.engine.coldstart.compile_aside compiles it for them in a child process).
        Rejected: another name (ValueError)."""
        H, T, C, F, G, E = self._tables()
        rows = np.zeros(1, np.int64)
        if name in ("step_stacks", "step_lean"):
            opts = self.player.options
            rules = K.StepRules(bool(opts.end_zero_overshoot), opts.events == EventRule.NEWEST,
                                int(opts.cleanup_above))
            one = np.zeros(1, np.int64)
            out = K.StepBuffers(one, one, one, self._ev_out, self._def_out, self._counts, self._wrap_out, self._snap,
                                self._walk, self._pair4)
            return (rows, 0, float(np.float32(1.0 / 30.0)), rules, H, T, C, F, G, E, out)
        if name in ("pose_stacks", "pose_lean"):
            return (rows, rows, H, T, C, F, G, E, pose_tables(self.player.bank).tables, self._scratch,
                    Bones(1).outs(), K.PoseBuffers(rows, self._weights, np.zeros(1, np.bool_)))
        raise ValueError(f"kernel: {name!r} is not step_stacks, step_lean, pose_stacks or pose_lean")

    # ---------------------------------------------------------------- the pose
    def sample(self, instances, refusals: list | None = None) -> PoseBatch:
        """Every human's pose (instances order), in new arrays (``pose``)."""
        out = Bones(len(instances))
        self.pose(instances, out, refusals)
        return out.poses

    def _queued_defaults(self, instances: list, rows: np.ndarray, n: int) -> np.ndarray:
        """Per place k of the pose's rows: whether the human's queued tasks' pose is its
        default pose for this sample ("The pose" L102): PlayerOptions.queued_default is
        set, the human has queued tasks, and the test (a Callback through the Player's
        callbacks, or a callable) passes for it. The test is asked only for humans with a
        queue, in instances order; its exception propagates (nothing sampled yet).
        Original: 0x00176d60 (the count at +0x2ae, the human test 0x00223440)."""
        flags = self._queued_default
        if len(flags) < n:
            flags = self._queued_default = np.zeros(max(n, 2 * len(flags)), np.bool_)
        test = self.player.options.queued_default
        if test is None:                        # all False (cleared once if options were swapped)
            if self._queued_set:
                flags[:] = False
                self._queued_set = False
            return flags
        flags[:n] = False
        self._queued_set = True
        queued = self.humans.queued
        if queued.any():
            call = self.player.callbacks.call
            for k in np.flatnonzero(queued[rows]).tolist():
                flags[k] = bool(call(test, instances[k]))
        return flags

    def _bones_of(self, n: int) -> Bones:
        """The engine's own Bones for ``n`` humans: C-contiguous views at the head of flat
        buffers kept with room for a few joiners (``n`` + 1/16), so a join or a leave makes
        no new 15 MB of buffers at 10,000 humans while the old ones are still held (the
        peak memory), and a crowd that grows past the room gets new buffers (the old
        backing let go first). The views' values are whatever was there: the pose kernel
        writes every one."""
        flat = self._bones_flat
        if flat is None or flat[0] < n:
            self._bones_flat = None                # ours let go before the new ones are made
            cap = n + n // 16 + 8
            flat = self._bones_flat = (cap, *(np.empty(k * cap, dt) for k, dt in _BONES_FLAT))
        _, vel, root, prot, tag, pos, rot = flat
        b = Bones.__new__(Bones)
        b.n = n
        b.poses = PoseBatch(vel[:3 * n].reshape(3, n), root[:3 * n].reshape(3, n),
                            prot[:4 * NUM_BONES * n].reshape(4, NUM_BONES, n), tag[:NUM_TAGS * n].reshape(NUM_TAGS, n))
        b.pos = pos[:3 * NUM_BONES * n].reshape(3, NUM_BONES, n)
        b.rot = rot[:4 * NUM_BONES * n].reshape(4, NUM_BONES, n)
        return b

    def pose(self, instances, out: Bones | None = None, refusals: list | None = None) -> Bones:
        """Every human's pose and bone transforms (instances order), in one compiled call
        (anim.engine.kernels.pose_stacks), PlayerOptions.queued_default applied in it. A refused
        eighth pose is counted in ``refusals`` as (instance, count). ``out`` (Bones for
        len(instances)) is written; without it the engine's own buffers are reused
        (overwritten next call). A pose the step began on the worker threads
        (``_begin_pose``) for these very instances is finished here: the calling thread's
        chunk, then the join; any other call first waits for it (``finish_begun``).
        """
        begun = self._begun
        if begun is not None:
            if out is None and begun[0] is instances:
                return self._end_pose(refusals)
            self.finish_begun()
        prep = self._pose_prepare(instances, out)
        n, rows, spans, tables, last, refused, queued_default, out = prep
        if spans and len(spans) > 1:
            self._pose_chunks(rows, spans, last[3], tables, last[4], refused, queued_default)
        else:
            H, T, C, F, G, E, banks = tables
            stopped = self._pose_job.run(PoseInputs(rows, last[3], H, T, C, F, G, E, banks, self._scratch,
                                                    last[4], last[5]), self._pose_kernel)
            if stopped < n:
                # a human whose pose takes what pose_lean leaves out: pose_stacks from it on
                POSE_KERNEL[0] = "pose_stacks"
                self._use_pose("pose_stacks")
                self._pose_job.run(PoseInputs(rows[stopped:], last[3][stopped:], H, T, C, F, G, E, banks,
                                              self._scratch, last[4],
                                              K.PoseBuffers(refused[stopped:n], self._weights,
                                                            queued_default[stopped:n])), self._pose_kernel)
        self._refusals(instances, n, refusals)
        return out

    def _use_pose(self, name: str) -> None:
        """Pose through kernel ``name`` (pose_stacks, or pose_lean on a fresh install's first
        steps: anim.engine.coldstart.lean_first_pose) from now on."""
        self._pose_name = name
        self._pose_kernel = TrustedKernel(name, self.debug)

    def _begin_pose(self, instances: list) -> None:
        """The pose of ``instances`` begun on the worker threads (every chunk but the
        first) right after the step's kernels, while the calling thread runs the step's own
        Python; ``pose`` of the same instances runs the first chunk and joins. Only the
        engine's code runs in between (Player.step_and_pose asks for it when no callback
        waits to run and the step is the Player's own): nothing there writes a row the
        pose reads (each human's pose reads its own rows, as stepped) or reads the pose's
        buffers. The time the calling thread spends before its chunk counts as its chunk's
        (crowd.Balance then hands the other chunks more humans). Nothing is begun for one
        thread, a crowd too small to cut, or with PlayerOptions.queued_default (its test is
        game code, asked when the pose is made)."""
        opts = self.player.options
        if len(instances) < 2 * crowd.MIN_CHUNK or (opts.threads or crowd.default_threads()) <= 1:
            return
        if opts.queued_default is not None:     # its test is game code, asked at the pose
            return
        try:
            prep = self._pose_prepare(instances, None)
        except Exception:                       # not begun: the pose makes them again, and raises there
            return
        n, rows, spans, tables, last, refused, queued_default, out = prep
        if not spans or len(spans) <= 1:
            return
        jobs = self._pose_jobs(rows, spans, last[3], tables, last[4], refused, queued_default)
        assert self._workers is not None
        c0 = _thread_time()
        reached = [threading.Event() for _ in jobs[1:]]
        for job, ev in zip(jobs[1:], reached):
            job.entered = ev
        self._workers.begin(jobs)
        self._begun = (instances, n, spans, jobs, out, c0)     # (an interrupt below: finish_begun waits)
        self.poses_begun += 1
        # the calling thread holds the GIL through the Python that follows: until each
        # worker has reached its kernel (which releases it), the GIL is handed over
        for ev in reached:
            ev.wait()

    def _end_pose(self, refusals: list | None) -> Bones:
        """The begun pose's first chunk on the calling thread, the join, its refusals."""
        instances, n, spans, jobs, out, c0 = self._begun       # type: ignore[misc]
        self._begun = None
        first: BaseException | None = None
        try:
            jobs[0]()
        except BaseException as e:
            first = e
        jobs[0].cpu = _thread_time() - c0                       # the Python before it included
        if self._workers is None or not self._workers.busy:     # (an interrupt before begin returned)
            if first is not None:
                raise first
            return out
        self._workers.wait(first)
        if _CHUNK_CLOCK:
            self.balance[1].note(spans, [job.cpu for job in jobs])
        self._refusals(instances, n, refusals)
        return out

    def finish_begun(self) -> None:
        """Finish a pose begun on the worker threads and not finished (the step's caller
        went another way, or raised): the calling thread's chunk, then the join, so the
        pose's buffers hold one whole pose."""
        if self._begun is not None:
            self._end_pose(None)

    def _refusals(self, instances: list, n: int, refusals: list | None) -> None:
        """The refused eighth poses of the last pose, appended to ``refusals``."""
        if refusals is not None:
            if n <= _FEW:                       # a few humans: their counts read one by one
                mr = self._m_refused
                for k in range(n):
                    if mr[k]:
                        refusals.append((instances[k], mr[k]))
            else:
                for k in np.flatnonzero(self._refused[:n]).tolist():
                    refusals.append((instances[k], int(self._refused[k])))

    def _pose_prepare(self, instances, out: Bones | None) -> tuple:
        """The pose's inputs for ``instances``: (n, rows, spans, tables, the kept call
        arguments, refused, queued_default, out)."""
        player = self.player
        lookup = player.lookup
        clips = lookup.clips
        bank = lookup._bank               # the Player's bank while it holds every clip seen (Player.bank)
        if bank is None or len(bank) != len(clips):
            bank = player.bank
        instances = instances if isinstance(instances, list) else list(instances)
        n = len(instances)
        if out is None:
            if self._bones is None or self._bones.n != n:
                self._bones = self._bones_of(n)
            out = self._bones
        seen = self._last
        rows = self._last_rows if seen is not None and instances == seen else self._rows_of(instances)
        if len(lookup.clips) != self._n_clips:
            self._clip_events()
        if self.debug or self._validated != self._signal.now:
            self.validate()
        if len(self._refused) < n:
            self._refused = np.zeros(max(n, 2 * len(self._refused)), np.int64)
            self._m_refused = memoryview(self._refused)
            self._cols_n = np.arange(len(self._refused), dtype=np.int64)
        refused = self._refused
        queued_default = self._queued_default if self.player.options.queued_default is None \
            and not self._queued_set and len(self._queued_default) >= n else self._queued_defaults(instances, rows, n)
        H, T, C, F, G, E = self._cols if self._table_key == self._signal.now else self._tables()
        if not _COLD[0]:
            _note_cold(self, "pose_stacks", n)
        if ASIDE or self._pose_name != POSE_KERNEL[0] or self._pose_name == "pose_lean":
            self._lean_or_whole(POSE_KERNEL, self._pose_name, self._use_pose)
        # the same objects from one update to the next while nothing grew (a trusted call)
        last = self._pose_args
        if last is None or not (last[0] is out and last[1] is refused and last[2] is queued_default
                                and len(last[3]) == n):
            last = self._pose_args = (out, refused, queued_default, self._cols_n[:n], out.outs(),
                                      K.PoseBuffers(refused, self._weights, queued_default))
        # (a lean pose runs on this thread: the chunks' kernel is pose_stacks)
        spans = self._spans(n, 1) if not self._twice and self._pose_name == "pose_stacks" else None
        return n, rows, spans, (H, T, C, F, G, E, pose_tables(bank).tables), last, refused, queued_default, out


    @property
    def layout(self) -> int:
        """The stamp of the world's layout signal (store.LayoutSignal: moved whenever an
        array of one of its tables or the clips' event index was replaced)."""
        return self._signal.now

    # -- its state beside the tables (anim.engine.snapshot)
    def save_state(self, view: bool = False) -> tuple:
        """The engine's values the next update reads beside the tables: its counts, the
        rows (with generations) of humans forgotten with tasks still deferred, and its
        humans' seats: (the arrangement's id, each row's instance serial: serial_of), a
        copy shared by every save of the same arrangement. ``view``: the instance of each
        row itself (the live list), for a state read at once."""
        if view:
            return (self.kernel_humans, self.pair_changes, self._leaving, self._instances)
        kept = self._owner_saved
        if kept[0] != self._seating:
            by_row = self._instances
            own = self._owner[:len(by_row)]
            for r in np.flatnonzero(own == 0).tolist():    # humans seated before any snapshot named them
                if by_row[r] is not None:
                    own[r] = serial_of(by_row[r])
            own = own.copy()
            own.flags.writeable = False
            kept = self._owner_saved = (self._seating, own)
        return (self.kernel_humans, self.pair_changes, list(self._leaving), kept)

    def load_state(self, state: tuple, rehome: bool = False) -> None:
        """Write a ``save_state`` back: the counts, the humans leaving, and each human's row
        as saved (an instance whose row is another's or none now is seated again; with
        ``rehome`` every one is, its record rebound to its row's saved generation: a state
        read from a file, whose seats are a list of instances). The arrangement the engine
        has now is not looked at per human. The last update's outputs (events, released
        ids, refused poses) are forgotten; what the engine made from the arrays is made
        again when the tables' layout signal moved. Rejected (ValueError, before anything
        changed): seats naming an instance no longer alive."""
        kernel_humans, pair_changes, leaving, seats = state
        same = seats.__class__ is not list and seats[0] == self._seating and not rehome
        rows = None if same else seated(seats)
        self.kernel_humans, self.pair_changes = kernel_humans, pair_changes
        self._leaving = list(leaving)
        self._last = None                               # the rows of the step's humans: found again
        self.staged = None                             # (the stamp moves on below: unread)
        if self._noisy:
            for inst in self._noisy:
                inst.clear_outputs()
            self._noisy = []
        if rows is not None and (rehome or self._instances != rows):  # humans came or went (or a file's rows)
            for r, inst in enumerate(self._instances):
                if inst is not None and (r >= len(rows) or rows[r] is not inst):
                    inst.settle_outputs()
                    inst.seat(None, -1)
            self._instances = list(rows)
            self._n_seated = sum(inst is not None for inst in rows)
            humans = self.humans
            for r, inst in enumerate(rows):
                if inst is not None:
                    inst.seat(self, r)
                    inst.record.rebind(humans, r)       # the row's generation as saved: alive again
        self.stamp += 1                                 # every other output of the last update: gone
        if rows is not None:
            if seats.__class__ is list:                 # a new arrangement: its serials
                own = np.zeros(max(len(rows), 8), np.int64)
                for r, inst in enumerate(rows):
                    if inst is not None:
                        own[r] = serial_of(inst)
                # (the arrangement held already, each row's instance the same, as a file of
                # this Game's own state gives: it keeps its id, and its snapshots' copy)
                if len(own) != len(self._owner) or own.tobytes() != self._owner.tobytes():   # (int64 both)
                    self._owner = own
                    self._seating = next(_SEATINGS)
            else:                                       # the saved arrangement, its id again
                own = np.zeros(max(len(rows), 8), np.int64)
                own[:len(rows)] = seats[1]
                self._owner = own
                self._seating = seats[0]

    def note_output(self, inst) -> None:
        """``inst`` has outputs of the last update (a restored state's): cleared at the next."""
        self._noisy.append(inst)

class _Part:
    """One chunk's kernels (a TrustedKernel each: their typed arguments are the chunk's),
    step buffers and counts, pose scratch and blend weights."""

    __slots__ = ("step", "pose", "step_job", "pose_job", "ev", "def_", "wrap", "counts", "snap", "walk", "pair4",
                 "scratch", "weights", "step_views", "pose_views", "step_out", "alone")

    def __init__(self, debug: bool, scratch):
        self.step = TrustedKernel("step_stacks", debug)
        self.pose = TrustedKernel("pose_stacks", debug)
        self.step_job, self.pose_job = StepJob(debug), PoseJob(debug)
        self.ev = np.zeros((256, 4), np.int32)
        self.def_ = np.zeros((256, 2), np.int64)
        self.wrap = np.zeros((256, 2), np.int32)
        self.counts = np.zeros(K.COUNT_WRAPS + 1, np.int64)
        self.snap = np.zeros(HumanTable.STACK_ROWS, np.int64)
        self.walk = np.zeros(_WALK, np.int64)
        self.pair4 = np.zeros(4, np.int64)
        self.scratch = scratch
        self.weights = np.zeros(_WALK, np.float32)
        # the chunk's views and buffers kept while they are of the very same arrays and span,
        # so its kernel jobs see the objects they checked last time (no check again)
        self.step_views: tuple | None = None
        self.pose_views: tuple | None = None
        self.step_out: Any = None
        # status, event lo and hi of the humans left out of the chunks, stepped after
        self.alone = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))

    def step_span(self, rows: np.ndarray, status: np.ndarray, lo: np.ndarray, hi: np.ndarray, a: int,
                  b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``rows``, ``status``, ``lo`` and ``hi`` from ``a`` to ``b``: the views made last
        time when those are the same arrays and span."""
        v = self.step_views
        if v is None or not (v[0] is rows and v[1] is status and v[2] is lo and v[3] is hi and v[4] == a
                             and v[5] == b):
            v = self.step_views = (rows, status, lo, hi, a, b, rows[a:b], status[a:b], lo[a:b], hi[a:b])
        return v[6:]

    def pose_span(self, rows: np.ndarray, cols: np.ndarray, refused: np.ndarray, queued_default: np.ndarray,
                  a: int, b: int) -> tuple[np.ndarray, np.ndarray, Any]:
        """``rows`` and ``cols`` from ``a`` to ``b`` and the chunk's PoseBuffers: those made
        last time when they are of the same arrays and span."""
        v = self.pose_views
        if v is None or not (v[0] is rows and v[1] is cols and v[2] is refused and v[3] is queued_default
                             and v[4] == a and v[5] == b):
            v = self.pose_views = (rows, cols, refused, queued_default, a, b, rows[a:b], cols[a:b],
                                   K.PoseBuffers(refused[a:b], self.weights, queued_default[a:b]))
        return v[6:]

    def alone_buffers(self, k: int) -> tuple:
        """Status, event lo and hi for ``k`` humans stepped alone (kept, grown to fit: the
        kernel writes the first ``k`` entries of each)."""
        if len(self.alone[0]) < k:
            m = max(k, 2 * len(self.alone[0]))
            self.alone = (np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64))
        return self.alone


class _StepJob:
    """step_stacks over one chunk's rows into its _Part's buffers, grown until they fit;
    then ``after`` (Python of the calling thread's own, run while the other chunks step).
    ``cpu``: the job's time on its thread's CPU clock (crowd.Balance)."""

    __slots__ = ("p", "rows", "status", "lo", "hi", "dt", "rules", "tables", "after", "cpu")

    def __init__(self, p: _Part, rows, status, lo, hi, dt: float, rules, tables: tuple):
        self.p, self.rows, self.status, self.lo, self.hi = p, rows, status, lo, hi
        self.dt, self.rules, self.tables = dt, rules, tables
        self.after: Callable[[], None] | None = None
        self.cpu = 0.0

    def __call__(self) -> None:
        c0 = _thread_time()
        try:
            self._steps()
            if self.after is not None:
                self.after()
        finally:
            self.cpu = _thread_time() - c0

    def _steps(self) -> None:
        p = self.p
        counts = p.counts
        counts[:] = 0
        start = 0
        H, T, C, F, G, E = self.tables
        while True:
            fields = (self.status, self.lo, self.hi, p.ev, p.def_, counts, p.wrap, p.snap, p.walk, p.pair4)
            out = p.step_out
            if out is None or not all(map(_is, out, fields)):
                out = p.step_out = K.StepBuffers(*fields)
            p.step_job.run(StepInputs(self.rows, start, self.dt, self.rules, H, T, C, F, G, E, out), p.step)
            stopped = int(counts[_COUNT_STOPPED])
            if stopped >= len(self.rows):
                return
            if len(p.ev) > _MAX_ROWS:
                raise RuntimeError(f"the step's event buffer passed {_MAX_ROWS} rows at human row {self.rows[stopped]}")
            p.ev, p.def_, p.wrap = _grown(p.ev), _grown(p.def_), _grown(p.wrap)
            start = stopped


class _PoseJob:
    """pose_stacks over one chunk's rows, with its _Part's scratch, into the shared output
    (its own columns)."""

    __slots__ = ("p", "rows", "cols", "tables", "out", "buffers", "cpu", "entered")

    def __init__(self, p: _Part, rows, cols, buffers, tables: tuple, out):
        self.p, self.rows, self.cols, self.tables, self.out, self.buffers = p, rows, cols, tables, out, buffers
        self.cpu = 0.0
        # set as the job reaches its kernel call (a pose begun beside the calling thread's
        # Python: that thread waits for it, so the worker is not left waiting for the GIL)
        self.entered: threading.Event | None = None

    def __call__(self) -> None:
        c0 = _thread_time()
        H, T, C, F, G, E, bank = self.tables
        p = self.p
        if self.entered is not None:
            self.entered.set()
        try:
            p.pose_job.run(PoseInputs(self.rows, self.cols, H, T, C, F, G, E, bank, p.scratch, self.out,
                                      self.buffers), p.pose)
        finally:
            self.cpu = _thread_time() - c0


def _grown(buf: np.ndarray) -> np.ndarray:
    """A buffer twice as long, its rows kept (the step's event and deferred rows)."""
    out = np.zeros((2 * buf.shape[0],) + buf.shape[1:], buf.dtype)
    out[:buf.shape[0]] = buf
    return out
