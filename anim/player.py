"""The animation player of one world: the pool, the deferred list, the step and the flush.

``Player`` builds tasks (finding clips in anim sets, taking rates from the Anim Range
List and CfgAnimSpeeds), changes animations the original's way, advances every
character's stack, samples them all in one batched plan, and flushes the deferred
list. It holds no global state: several players can live side by side.

It is made of parts along the lines the code already had (issue 19, item 8), each a
module a person can read alone:

- ``anim.lookup.ClipLookup``: clips, cursors and rates by anim id or clip name, the bank;
- ``anim.construct.TaskBuilder``: one constructor per task type (on ClipLookup), and
  whether a chain fits the pose stack;
- ``anim.stackrules.StackRules``: insert, push, change, the queue, fades completing,
  cutting, deferring and giving back; the top task and the playing anim id (on
  TaskBuilder: a change makes its fade);
- here: the state they share (``__init__``), the step, the sample and pose, the flush
  and its releases (with the engine, anim.batch, and its kernels);
- ``anim.options``: ``PlayerOptions`` and ``PlayerStats`` (re-exported here).

Per update, in the original's order (Humans_Update):
    player.step(instances)      run queues, advance stacks, hand over, fire events
    poses = player.sample(instances)
    player.flush()              release what ended, refresh the playing anim ids

Spec: "The task stack", "Fades", "When a clip ends", "Paired tasks", "Playback rate".
"""
from __future__ import annotations

from operator import attrgetter
from typing import Callable, Iterable, Sequence

import numpy as np

from . import f32 as F
from . import kernels as K
from .batch import BatchEngine
from .callbacks import Callbacks
from .clip import Clip
from .construct import chain_blend_depth, task_pose_depth
from .kernel_types import FlushBuffers, RowState
from .limits import MAX_DT, check_float
from .lookup import UnknownClip
from .options import PlayerOptions, PlayerStats
from .plan import Bones
from .pose import PoseBatch
from .sampler import BANK_KEY_BYTES, NUM_SLOTS, ClipBank
from .skeleton import HUMANOID, Skeleton
from .stack import AnimLimitError, CharacterInstance, TaskPool
from .stackrules import StackRules
from .store import Stores, Table
from .tasks import ClipTask, HeldFlags, HeldRelease, PlaceEvents, Task

__all__ = ["Player", "PlayerOptions", "PlayerStats", "UnknownClip", "chain_blend_depth", "task_pose_depth"]


# The hot paths compare plain ints; the values come from the enums.
_ANIM_STATE = int(HeldFlags.ANIM_STATE)
_REPORT = int(HeldFlags.REPORT)


# the flush's per-entry reads, done in C (map) rather than in a Python loop
_TROW = attrgetter("trow")
_TSTORE = attrgetter("tstore")
_SLOT = attrgetter("slot")
_ENGINE = attrgetter("engine")
_EVENT_ROWS = attrgetter("_event_rows")


def _slow_mask(ks: set[int], n: int) -> np.ndarray:
    """A mask of ``n`` entries, True at ``ks``."""
    m = np.zeros(n, np.bool_)
    if ks:
        m[sorted(ks)] = True
    return m


def _row_state(table: Table) -> RowState:
    """A table's row state and free list as the flush kernel takes them."""
    return RowState(table.live, table.gen, table.free_rows, table.n_free)


class Player(StackRules):
    """The animation system of one world (see the module docstring).

    In: options and the skeleton the sampler works for. Rejected: a pool size below 1.
    """

    def __init__(self, options: PlayerOptions | None = None, skeleton: Skeleton = HUMANOID):
        self.options = options or PlayerOptions()
        self.skeleton = skeleton
        self.pool = TaskPool(self.options.pool_size)
        self.stores = Stores()
        self.batch = BatchEngine(self)
        self.deferred: list[tuple[Task, CharacterInstance]] = []
        self._clips: list[Clip] = []
        self.stores.cursors.clips = self._clips      # bank index -> clip, for cursors the kernel made
        self.stores.cursors.all_events = self.options.place_events == PlaceEvents.FIRED
        self._clip_index: dict[int, int] = {}
        self._flags: dict[int, tuple] = {}         # id(anim set) -> (set, its range flags column)
        # id(anim set) -> (set, the speeds, {anim id: [clip, rate, bank index or -1]}): the ids
        # found there before (a set is immutable, so its clips and range flags never change)
        self._known_ids: dict[int, tuple] = {}
        self._id_types: set[type] = {int}          # the id types the cache may be asked with
        self._gait_speeds: dict[tuple, tuple] = {}  # (id(anim set), ids) -> (set, speeds)
        self._bank: ClipBank | None = None
        self._bank_cost = BANK_KEY_BYTES * NUM_SLOTS     # bank_bytes of _clips (the sentinels' keys)
        self._stepped: dict[int, CharacterInstance] = {}
        # Queued tasks the last step could not start (a limit): (instance, the error).
        self.refused: list[tuple[CharacterInstance, AnimLimitError]] = []
        # A callback's exception (wrap, end, report): handed to on_callback_error(phase, exc)
        # when set (the Game's: raised after the whole update), else raised by step / flush
        # once they are done for every character.
        self.on_callback_error: Callable[[str, BaseException], None] | None = None
        # the handlers the callbacks (data: anim.callbacks.Callback) name
        self.callbacks = Callbacks()
        self._wraps: list[tuple[CharacterInstance, Task]] = []   # this step's wraps with a callback
        self._dt_raw: object = None                # the dt (a float object) the step last rounded, and its f32
        self._dt_f32 = 0.0
        self._failed: list[BaseException] = []
        self.stats = PlayerStats()
        self._pose_refused: list[CharacterInstance] = []   # humans whose poses_refused is set
        self._release_all = self.options.held_release == HeldRelease.ORIGINAL
        # the flush kernel's scratch, sized on the task table: the task rows it gives back,
        # a task and the next tasks it owns (anim.kernels.flush_release)
        self._flush_scratch = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(2, np.int64))
        self._flush_seen = np.zeros(0, np.bool_)      # flush_anim_ids' scratch: a flag per human row


    # ---------------------------------------------------------------- per update
    def step(self, instances: Iterable[CharacterInstance], dt: float | None = None) -> None:
        """The animation step of every character: run its queue once, then advance its
        stack bottom-up; clips hand over, fades finish, events fire (every cursor not
        muted by flag 0x10, or the newest task's only: ``options.events``) and the
        held-flag events act. Original: 0x00175610, the +0x64 calls.

        A queued task whose start hits a limit (the pool, the stack of 18) is refused:
        it goes back to the pool, the step goes on for every character, and the refusal
        is listed in ``refused`` (emptied at each ``step``) as (instance, error). The
        original has no such check (it would write past the stack). Rejected: a ``dt`` that
        is not a finite number 0 to 1 s (RangeError naming it, before anything changes).
        """
        # one float32 dt (the compiled step reads it as a float32)
        raw = self.options.dt if dt is None else dt
        if raw is not self._dt_raw or raw.__class__ is not float:     # the same float object: the same f32
            self._dt_f32 = F.f32(raw if dt is None else check_float("step: dt", dt, 0.0, MAX_DT))
            self._dt_raw = raw
        dt = self._dt_f32
        if self.refused:                        # emptied (a new list: one handed out keeps its items)
            self.refused = []
        if self._wraps:
            self._wraps = []
        # Only the characters whose stack or gait leader changed can have a new top task.
        changed = self.batch.step(instances if isinstance(instances, list) else list(instances), dt)
        if changed:
            stepped = self._stepped
            for inst in changed:
                stepped[id(inst)] = inst
        if self._wraps:
            self._run_wraps()
        if self._failed:
            self._raise_failed()

    def note_wrap(self, inst: CharacterInstance, task: Task) -> None:
        """A task with a wrap callback wrapped in this step: called once every human stepped."""
        self._wraps.append((inst, task))

    def _run_wraps(self) -> None:
        """The wrap callbacks of this step, after every human's step, in step order (each
        human's in its stack's order): the compiled step reports them as rows, so none runs
        in the middle of another human's step (docs/original.md, "The per-update order").
        Original: 0x00105770 (type 1 calls +0x28 at the wrap), 0x0010a5b8 (the gait's)."""
        wraps, self._wraps = self._wraps, []
        for inst, task in wraps:
            fn = getattr(task, "on_wrap", None)         # LoopTask, GaitTask
            if fn is not None:
                self.run_callback(fn, inst, "animation")

    def run_callback(self, fn, inst: CharacterInstance, phase: str) -> None:
        """Call a callback for ``inst`` (a Callback through ``callbacks``, or ``fn(inst)``);
        its exception (UnknownCallback for a kind with no handler) does not stop the step or
        the flush: it goes to ``on_callback_error(phase, exc)`` when set, else it is raised
        once the step or flush is done for every character (the first one)."""
        try:
            self.callbacks.call(fn, inst)
        except Exception as exc:
            if self.on_callback_error is not None:
                self.on_callback_error(phase, exc)
            else:
                self._failed.append(exc)

    def _raise_failed(self) -> None:
        if self._failed:
            failed, self._failed = self._failed, []
            raise failed[0]

    def start_queue(self, inst: CharacterInstance) -> None:
        """Run the human's queue once (each task's start, +0x54: a change to it, no fade),
        emptying it; a start a limit refuses goes back to the pool and is listed in
        ``refused``. Original: 0x00175610."""
        queued = inst.queue
        self.batch.write_queue(inst, [])
        for t in queued:
            t.tstore.placed[t.trow] = False          # from the queue to the stack (the change puts it)
        for t in queued:
            try:
                t.start(self, inst)
            except AnimLimitError as exc:       # the change gave the task back
                self.refused.append((inst, exc))

    def may_have_events(self, instances: Sequence[CharacterInstance]) -> Sequence[CharacterInstance]:
        """After ``step``: the instances whose ``events`` may be non-empty (a superset; may
        hold repeats): the engine knows them (those that fired), so a caller need not look
        at every human."""
        return self.batch.touched()

    def _clear_flags(self, inst: CharacterInstance, bits: int, task: Task) -> None:
        """Clear ``bits`` from the human, except those another task on the stack holds."""
        others = 0
        for t in inst.stack:
            if t is not task and not t.released:
                others |= t.held
        inst.record.flags &= ~(bits & ~others)

    def sample(self, instances: Sequence[CharacterInstance]) -> PoseBatch:
        """Every character's pose, one per instance, in new arrays: the stacks sampled
        bottom-up by the compiled engine.

        A pose the stack of seven refuses is skipped (0x00104ce0) and counted: the human's
        ``poses_refused`` for this sample and ``stats.poses_refused`` in total; the
        update carries on. With ``options.queued_default``, a human it passes with queued
        tasks is sampled over their pose (the engine's pose kernel does it, anim.batch).
        Original: 0x00176d60 CharacterInstance_Sample.
        """
        refusals: list = []
        out = self.batch.sample(instances, refusals)
        self._count_refusals(refusals)
        return out

    def _count_refusals(self, refusals: list) -> None:
        """Each human's refused poses of this sample ((instance, count) pairs; 0 again for
        those of the last one)."""
        self.stats.samples += 1
        for inst in self._pose_refused:
            inst.poses_refused = 0
        self._pose_refused = []
        for inst, n in refusals:
            inst.poses_refused = n
            self.stats.poses_refused += n
            self._pose_refused.append(inst)

    def pose(self, instances: Sequence[CharacterInstance]) -> Bones:
        """Every character's pose and model-space bone transforms (``Bones``), the same
        poses as ``sample`` (``options.queued_default`` applied alike).

        The compiled engine writes them in one call into buffers it reuses (the next call
        overwrites them). Refused poses are counted as by ``sample``.
        Original: 0x00176d60 CharacterInstance_Sample, 0x00104630 Instance_BuildBoneMatrices.
        """
        refusals: list = []
        bones = self.batch.pose(instances, refusals=refusals)
        self._count_refusals(refusals)
        return bones

    def flush(self) -> list[CharacterInstance]:
        """Empty the deferred list: release each task, then refresh the playing anim ids.

        The release clears the held bits the task still holds (every one, the original's,
        or not those another task on the stack holds: ``options.held_release``), reports
        0x400000, runs the end callback (also on a cut-off) and gives back a cut-off
        task's next task; a clip that hands over (types 3 and 6) also
        clears state flag 0x4000000000. The ids are refreshed for every instance with a
        released task and every instance stepped since the last flush (a gait's leader
        changes the id without any release). Out: the instances with a released task.
        An exception from a callback (``on_end``, ``on_report``) does not stop the flush:
        every deferred task is still released and given back, the ids are refreshed, and
        then the first such exception is raised (with ``on_callback_error`` set, every
        one goes there instead and nothing is raised). The releases run as rows in the
        compiled engine (anim.kernels.flush_release) but for the tasks with a callback to
        run, which Python releases between them, in the list's order; the ids are
        refreshed in one kernel call (anim.kernels.flush_anim_ids).
        Original: 0x00105570 AnimTask_FlushDeferred, 0x00105f78 (type 3's release),
        0x00108f10 (type 6's), 0x00106ee8 (the fade's).
        """
        stepped, self._stepped = self._stepped, {}        # id -> instance: no repeats
        touched: dict[CharacterInstance, None] = {}       # in the order of their first release
        while self.deferred:
            batch = self.deferred
            self.deferred = []
            # the two columns (not zip(*batch): an iterator per entry for the collector to count)
            task_l, inst_l = [e[0] for e in batch], [e[1] for e in batch]
            touched.update(dict.fromkeys(inst_l))
            self._release_batch(batch, task_l, inst_l)
        self._refresh_ids(touched, stepped)
        if self.batch._leaving:                 # humans forgotten with tasks to release: rows back now
            self.batch.release_leaving()
        self._raise_failed()
        return list(touched)

    def _release_batch(self, batch: list, task_l: list, inst_l: list) -> None:
        """Release the tasks of ``batch`` (entries of the deferred list; ``task_l`` and
        ``inst_l`` its two columns), in order: the runs of tasks with no callback to run in
        one kernel call each (anim.kernels.flush_release: the record's bits, the anim id,
        the discard, the pool's count and the rows given back, all as rows); each task with
        an end callback, a report to make (it holds 0x400000 and its human has a report
        callback), or anything the kernel cannot follow (a human this engine no longer
        holds, a task of another table) by ``_release``, between them, so
        every callback sees what it saw when each release was Python. The lazy events a
        task fired are made first (their rows go back with it: BatchEngine.fired_by)."""
        eng = self.batch
        tasks = self.stores.tasks
        n = len(batch)
        trows = np.fromiter(map(_TROW, task_l), np.int64, n)
        hrows = np.fromiter(map(_SLOT, inst_l), np.int64, n)
        # the lazy events a task fired: made now, while the rows are the task's
        for k in [k for k, rows in enumerate(map(_EVENT_ROWS, inst_l)) if rows is not None]:
            task, inst = batch[k]
            rows = inst._event_rows
            if rows is not None and rows[0].fired_by(task, rows[1], rows[2]):
                inst.events                         # noqa: B018
        # the entries Python releases (the checks vectorised: most flushes find none but the callbacks)
        slow: set[int] = set()
        if set(map(_ENGINE, inst_l)) != {eng} or set(map(_TSTORE, task_l)) != {tasks}:
            slow.update(k for k, (t, i) in enumerate(batch) if i.engine is not eng or t.tstore is not tasks)
        on_end: dict = tasks.on_end                 # type: ignore[assignment]  # a keyed column: a dict by row
        if on_end:
            ends = on_end.keys() & set(trows.tolist())
            if ends:
                slow.update(k for k, tr in enumerate(trows.tolist()) if tr in ends)
        on_report = self.stores.humans.on_report
        if on_report:
            live = ~_slow_mask(slow, n)
            for k in np.flatnonzero(live & (tasks.held[np.where(live, trows, 0)] & _REPORT != 0)).tolist():
                if int(hrows[k]) in on_report:
                    slow.add(k)
        ids = np.zeros(n, np.int64)
        pending = sorted(slow)
        trows_l = trows.tolist()
        i = j = 0
        while True:
            k = pending[j] if j < len(pending) else n
            if k > i:
                self._release_rows(inst_l, trows, hrows, ids, i, k)
            if k >= n:
                return
            ends = set(on_end)
            task, inst = batch[k]
            self._release(inst, task)               # a callback's exception is kept (run_callback)
            i = k + 1
            j += 1
            # a callback may have given a later entry a callback to run (an end callback, a
            # report): that entry is released by Python too, as if every release were Python
            new_ends = on_end.keys() - ends
            later = [m for m in range(i, n) if trows_l[m] in new_ends] if new_ends else []
            if on_report:
                for m in np.flatnonzero(tasks.held[trows[i:]] & _REPORT).tolist():
                    if int(hrows[i + m]) in on_report:
                        later.append(i + m)
            if later:
                pending = sorted(set(pending[j:]).union(later))
                j = 0

    def _release_rows(self, inst_l: list, trows: np.ndarray, hrows: np.ndarray, ids: np.ndarray, lo: int,
                      hi: int) -> None:
        """Entries ``lo``-``hi`` of the deferred batch (task rows ``trows``, human rows
        ``hrows``, the instances ``inst_l``) released by the kernel (none of them has a
        callback to run), then what Python holds: the released ids (in order, into ``ids``
        first), the pool's count, the handles and keyed values of the task rows given back,
        and their reset to the table's defaults before the next take (Table.free's)."""
        eng = self.batch
        st = self.stores
        tasks = st.tasks
        eng._clip_events()                          # a table grown since the step (new clips): rows checked
        eng._guard()
        H, T, C, _, G, _ = eng._tables()
        cap = tasks.capacity
        freed, chain, counts = self._flush_scratch
        if len(freed) < cap:
            freed, chain = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
            self._flush_scratch = (freed, chain, counts)
        counts[:] = 0
        eng._flush_release(lo, hi, self._release_all, H, T, _row_state(tasks), C, G, _row_state(st.gaits),
                            _row_state(st.fades), FlushBuffers(trows, hrows, ids, freed, counts, chain, self.pool.out))
        self.pool.n_out -= int(counts[K.FLUSH_IN])
        nf = int(counts[K.FLUSH_FREED])
        if nf:
            rows = freed[:nf].tolist()
            views = tasks.views
            for r in rows:
                views[r] = None
            if tasks._resets:
                tasks._dirty.extend(rows)
            m_live = tasks.m_live
            for name in tasks._keyed:
                keyed = getattr(tasks, name)
                if not keyed:
                    continue
                if len(keyed) < nf:                 # the values of the rows given back (each row had one at most)
                    for r in [r for r in keyed if not m_live[r]]:
                        del keyed[r]
                else:
                    for r in rows:
                        keyed.pop(r, None)
        noisy = eng._noisy
        for inst, aid in zip(inst_l[lo:hi], ids[lo:hi].tolist()):
            rel = inst.released
            if not rel:
                noisy.append(inst)                  # BatchEngine.released_by_flush
            rel.append(aid)

    def _refresh_ids(self, touched: dict, stepped: dict) -> None:
        """The playing anim ids (record +0x20) of the humans with a released task and of
        those stepped since the last flush, in one kernel call (anim.kernels.flush_anim_ids:
        each one's top task, the bottom one under a fade, -1 with none; each once); a human
        this engine no longer holds by ``refresh_anim_id`` (-1)."""
        eng = self.batch
        group = list(touched)
        if group and set(map(_ENGINE, group)) != {eng}:
            for inst in group:
                if inst.engine is not eng:
                    self.refresh_anim_id(inst)
            group = [inst for inst in group if inst.engine is eng]
        group += stepped.values()                   # all this engine's (Player.forget takes a human out)
        if not group:
            return
        eng._clip_events()
        eng._guard()
        H, T, C, _, G, _ = eng._tables()
        humans = self.stores.humans
        seen = self._flush_seen
        if len(seen) < humans.capacity:
            seen = self._flush_seen = np.zeros(humans.capacity, np.bool_)
        rows = np.fromiter(map(_SLOT, group), np.int64, len(group))
        rows.sort()                                 # the human table in order: fewer cache misses
        if rows[0] < 0:                             # a human without a row here (never the kernel's to read)
            for inst in group:
                if inst.engine is not eng:
                    self.refresh_anim_id(inst)
            rows = rows[rows >= 0]
        eng._flush_anim_ids(rows, H, humans.anim, T, C, G, seen)

    def _release(self, inst: CharacterInstance, task: Task) -> None:
        if isinstance(task, ClipTask):      # 0x00105f78 / 0x00108f10; not the fade's 0x00106ee8
            rec = inst.record
            flags = rec.flags
            if flags & _ANIM_STATE or flags < 0:     # else clearing it writes the same value
                rec.flags = flags & ~_ANIM_STATE
        ts, tr = task.tstore, task.trow
        held = int(ts.held[tr])                      # task.held
        if held:
            if self._release_all:                    # 0x00105f78: no test of other tasks (L314)
                inst.record.flags &= ~held
            else:                                    # Coney's (L402): not what another task holds
                self._clear_flags(inst, held, task)
            ts.held[tr] = 0
        if not inst.released:
            self.batch.released_by_flush(inst)
        inst.released.append(task.anim_id())
        try:
            if held & _REPORT and inst.on_report is not None:
                self.run_callback(inst.on_report, inst, "flush")
            if task.on_end is not None:
                self.run_callback(task.on_end, inst, "flush")
        finally:                            # back to the pool even when a callback raises
            self.discard(task)

    def update(self, instances: Sequence[CharacterInstance], dt: float | None = None) -> PoseBatch:
        """step, sample and flush in the original's order; returns the poses."""
        self.step(instances, dt)
        poses = self.sample(instances)
        self.flush()
        return poses

    def forget(self, inst: CharacterInstance) -> None:
        """The human leaves the world: its row in the human table goes back, and its record
        (and the instance's speed and report callback, kept in that row) raise StaleHandle
        from then on; a human coming back is a new instance with a new record. Cut its
        tasks first (``cut``); if they are not flushed yet, the row goes back at the end of
        the flush that releases them (``BatchEngine.forget``)."""
        self._stepped.pop(id(inst), None)        # no id refresh for it at the flush
        self.batch.forget(inst)

    def tasks_out(self, instances: Iterable[CharacterInstance]) -> int:
        """Tasks the instances hold (stacks, queues and the next tasks they own) plus the
        deferred ones: what the pool's ``in_use`` must equal when nothing leaks."""
        seen: set[int] = set()

        def walk(t: Task):
            if id(t) in seen:
                return
            seen.add(id(t))
            for n in t.following():
                walk(n)

        for inst in instances:
            for t in inst.stack + inst.queue:
                walk(t)
        for t, _ in self.deferred:
            walk(t)
        return len(seen)

