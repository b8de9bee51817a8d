"""The animation player of one world: the pool, the deferred list, the step and the flush.

``Player`` builds tasks (finding clips in anim sets, taking rates from the Anim Range
List and CfgAnimSpeeds), changes animations the original's way, advances every
character's stack, samples them all in one batched plan, and flushes the deferred
list. It holds no global state: several players can live side by side.

It owns its parts, one concern each, each a module a person can read alone, each over
the world's stores (``stores``), the pool and the options the Player gives it:

- ``lookup`` (``anim.playback.lookup.ClipLookup``): clips, cursors and rates by anim id or clip
  name, the bank;
- ``builders`` (``anim.playback.construct.TaskBuilder``): one constructor per task type (clips
  found through the look-up), and whether a chain fits the pose stack;
- ``rules`` (``anim.playback.stackrules.StackRules``): insert, push, change, the queue, fades
  completing, cutting, deferring and giving back; the top task and the playing anim id
  (a change makes its fade with the builders);
- ``prepared`` (``anim.playback.prepared.RecipeRules``): prepared commands (``prepare``, ``run``:
  a Recipe's rows written directly, anim.playback.recipe; the rest through the Player's handle
  calls);
- ``columns`` (``anim.playback.batched.CommandColumns``): prepared commands many at once as
  columns (``commands``: checked in one compiled call, each row as ``run`` would);
- here: the state they share (``__init__``), the step, the sample and pose, the flush
  and its releases (with the engine, anim.playback.batch, and its kernels);
- ``anim.data.options``: ``PlayerOptions`` and ``PlayerStats`` (re-exported here).

The Player's public methods are its parts' (``Player.loop`` is ``builders.loop``, bound
once per Player: no call in between); setting ``options`` gives the new options to every
part.

Per update, in the original's order (Humans_Update):
    player.step(instances)      run queues, advance stacks, hand over, fire events
    poses = player.sample(instances)
    player.flush()              release what ended, refresh the playing anim ids

Spec: "The task stack", "Fades", "When a clip ends", "Paired tasks", "Playback rate".
"""
from __future__ import annotations

from sys import getrefcount as _refs
from operator import is_not as _is_not
from operator import itemgetter as _itemgetter
from typing import Any, Callable, Collection, Iterable, Sequence, cast
from weakref import getweakrefcount as _weakrefs

import numpy as np

from scuffle.anim.maths import f32 as F
from scuffle.anim.engine import kernels as K
from scuffle.anim.playback.batch import BatchEngine
from scuffle.anim.engine.callbacks import Callbacks
from scuffle.anim.data.clip import Clip
from scuffle.anim.engine.coldstart import kernel_ready
from scuffle.anim.playback.construct import chain_blend_depth, task_pose_depth
from scuffle.anim.playback.deferred import NO_ENTRIES, DeferredRows
from scuffle.anim.engine.jobs import AnimIdInputs, FlushInputs
from scuffle.anim.engine.kernel_types import FlushBuffers, RowState
from scuffle.anim.base.limits import MAX_DT, check_float
from scuffle.anim.playback.lookup import UnknownClip
from scuffle.anim.data.options import PlayerOptions, PlayerStats
from scuffle.anim.playback.orphans import give_back_unplaced
from scuffle.anim.engine.plan import Bones
from scuffle.anim.maths.pose import PoseBatch
from scuffle.anim.engine.sampler import BANK_KEY_BYTES, NUM_SLOTS, ClipBank
from scuffle.anim.maths.skeleton import HUMANOID, Skeleton
from scuffle.anim.engine.stack import AnimLimitError, CharacterInstance, TaskPool
from scuffle.anim.playback.construct import TaskBuilder
from scuffle.anim.playback.lookup import ClipLookup
from scuffle.anim.playback.prepared import RecipeRules
from scuffle.anim.playback.batched import CommandColumns
from scuffle.anim.playback.stackrules import StackRules
from scuffle.anim.engine.store import Stores, Table
from scuffle.anim.engine.writefirst import write_first
from scuffle.anim.playback.tasks import (ClipTask, FadeTask, GaitTask, HeldFlags, HeldRelease, LoopTask, PlaceEvents,
                                        Task, task_at, viewed_rows)

__all__ = ["Player", "PlayerOptions", "PlayerStats", "UnknownClip", "chain_blend_depth", "task_pose_depth"]


# The hot paths compare plain ints; the values come from the enums.
_ANIM_STATE = int(HeldFlags.ANIM_STATE)
_REPORT = int(HeldFlags.REPORT)
_TOP_OR_STACK = K.STATUS_TOP | K.STATUS_STACK     # a step's status bits: the top task may have changed




# The task classes whose handles the flush keeps for reuse (Table.spare: the Player's
# constructors take them, anim.playback.tasks.new_handle), at most _SPARE_MAX of each.
_RECYCLED = (ClipTask, LoopTask, FadeTask, GaitTask)
_SPARE_MAX = 4096
# A state's step lists when nothing is pending (between two updates, as a rule): shared by
# every save, never written to (a load copies what it is given)
_NO_LISTS: tuple = ((), (), ())
_NO_ROWS: tuple = ()
_FEW_ROWS = 32          # _rows_back reads these many rows given back one by one (more: numpy)


class _Part:
    """A Player method that is one of its parts' (``part``: the attribute holding it):
    read on the class, the part's own function (its signature and docstring, for help
    and the API docs); on a Player, the part's bound method, which ``Player.__init__``
    also binds as an instance attribute (``_bind_parts``: no call in between on the
    command path; a subclass's override of the name is kept)."""

    __slots__ = ("part", "func", "name")

    def __init__(self, part: str, func: Any):
        self.part = part
        self.func = func
        self.name = getattr(func, "__name__", "")

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.func
        return getattr(getattr(obj, self.part), self.name)


class _PartProperty:
    """A Player property that is one of its parts' (``bank``, ``cmd_kernel_runs``): read
    through the part every time (a value the part may replace)."""

    def __init__(self, part: str, name: str, doc: str):
        self.part, self.name, self.__doc__ = part, name, doc

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(getattr(obj, self.part), self.name)


def _bind_parts(player: "Player") -> None:
    """Bind each part method (_Part) of ``player``'s class as an instance attribute, unless
    a subclass overrides the name."""
    cls = type(player)
    d = player.__dict__
    for name, (part, func) in _PART_METHODS.items():
        if getattr(cls, name, None) is func:
            d[name] = getattr(getattr(player, part), name)


def _row_state(table: Table) -> RowState:
    """A table's row state and free list as the flush kernel takes them."""
    return RowState(table.live, table.gen, table.free_rows, table.n_free, table.free_at)


def _listed(call: str, instances) -> list:
    """``instances`` as a list (a list itself as it is). Rejected: not a collection of
    humans (ValueError naming the call; each human is checked as its row is found)."""
    if isinstance(instances, list):
        return instances
    if isinstance(instances, (str, bytes, CharacterInstance)):
        raise ValueError(f"{call}: {instances!r} is not a list of humans")
    try:
        return list(instances)
    except TypeError:
        raise ValueError(f"{call}: {instances!r} is not a list of humans") from None


class Player:
    """The animation system of one world (see the module docstring).

    In: options and the skeleton the sampler works for. Rejected: a pool size below 1.
    """

    # the parts' public methods, the Player's (see _Part)
    bank_index = _Part("lookup", ClipLookup.bank_index)
    check_budget = _Part("lookup", ClipLookup.check_budget)
    register = _Part("lookup", ClipLookup.register)
    find = _Part("lookup", ClipLookup.find)
    cursor = _Part("lookup", ClipLookup.cursor)
    rate_of = _Part("lookup", ClipLookup.rate_of)
    gait_speeds = _Part("lookup", ClipLookup.gait_speeds)
    loop = _Part("builders", TaskBuilder.loop)
    clip = _Part("builders", TaskBuilder.clip)
    hold = _Part("builders", TaskBuilder.hold)
    scene = _Part("builders", TaskBuilder.scene)
    paired = _Part("builders", TaskBuilder.paired)
    paired_hold = _Part("builders", TaskBuilder.paired_hold)
    fade = _Part("builders", TaskBuilder.fade)
    gait = _Part("builders", TaskBuilder.gait)
    mix = _Part("builders", TaskBuilder.mix)
    pick = _Part("builders", TaskBuilder.pick)
    direction = _Part("builders", TaskBuilder.direction)
    chain = _Part("builders", TaskBuilder.chain)
    top = _Part("rules", StackRules.top)
    held_on_stack = _Part("rules", StackRules.held_on_stack)
    running = _Part("rules", StackRules.running)
    refresh_anim_id = _Part("rules", StackRules.refresh_anim_id)
    insert_bottom = _Part("rules", StackRules.insert_bottom)
    push = _Part("rules", StackRules.push)
    change = _Part("rules", StackRules.change)
    enqueue = _Part("rules", StackRules.enqueue)
    replace = _Part("rules", StackRules.replace)
    complete_fade = _Part("rules", StackRules.complete_fade)
    cut = _Part("rules", StackRules.cut)
    defer = _Part("rules", StackRules.defer)
    discard = _Part("rules", StackRules.discard)
    prepare = _Part("prepared", RecipeRules.prepare)
    run = _Part("prepared", RecipeRules.run)
    learn = _Part("prepared", RecipeRules.learn)
    knows = _Part("prepared", RecipeRules.knows)
    commands = _Part("columns", CommandColumns.commands)
    set_gait_targets = _Part("columns", CommandColumns.set_gait_targets)
    set_gait_targets_at = _Part("columns", CommandColumns.set_gait_targets_at)
    commands_at = _Part("columns", CommandColumns.commands_at)
    rows_of = _Part("columns", CommandColumns.rows_of)
    bank = _PartProperty("lookup", "bank", "The ClipBank of every clip this player has seen (ClipLookup.bank).")
    _bank = _PartProperty("lookup", "_bank", "The look-up's bank as it is (None until built): anim.playback.batch reads it.")
    _clips = _PartProperty("lookup", "clips", "Every clip seen, by bank index (ClipLookup.clips).")
    cmd_kernel_runs = _PartProperty("prepared", "cmd_kernel_runs",
                                    "Commands whose rows anim.engine.cmdkernel's compiled writers write, at once "
                                    "or buffered (RecipeRules).")

    def __init__(self, options: PlayerOptions | None = None, skeleton: Skeleton = HUMANOID):
        self._options = options or PlayerOptions()
        self.skeleton = skeleton
        self.pool = TaskPool(self.options.pool_size)
        self.stores = Stores()
        for cls in _RECYCLED:                   # the flush keeps these handles for reuse (new_handle)
            self.stores.tasks.spare[cls] = []
        # the deferred list as rows (human row, task row): the step kernel appends to it, the
        # flush's kernel releases from it (``deferred`` reads it as (task, instance) pairs)
        self.deferred_rows = DeferredRows()
        self._gone: dict[int, CharacterInstance] = {}   # human row -> instance forgotten since the last flush
        # the released ids of the last flush not yet in the instances' ``released`` lists:
        # chunks of (human rows, ids), in release order (make_released makes the lists)
        self.released_log: list[tuple[np.ndarray, np.ndarray]] = []
        self._settle_mark = np.zeros(0, np.bool_)     # settle_released's scratch: a flag per human row
        self.batch = BatchEngine(self)
        # the parts (each over the stores; the options given again when they change)
        opts = self._options
        self.lookup = ClipLookup(opts, skeleton, self.stores)
        self.stores.cursors.all_events = opts.place_events == PlaceEvents.FIRED
        self.builders = TaskBuilder(self.lookup, self.pool, self.stores, opts)
        self.rules = StackRules(self.builders, self.batch, self.pool, self.stores, opts, self.deferred_rows)
        self.prepared = RecipeRules(self, self.lookup, self.batch, self.pool, self.stores, opts)
        self.builders.direct = self.prepared.clip_rows    # a single-clip task's rows in one compiled call
        self.builders.direct_gait = self.prepared.gait_rows
        self.rules.direct_change = self.prepared.change_rows  # a change's common path likewise
        self.columns = CommandColumns(self.prepared, self)
        _bind_parts(self)
        # the human rows whose top task may have changed in the steps since the last flush
        # (one array per step; the flush refreshes their playing ids)
        self._stepped: list[np.ndarray] = []
        # Queued tasks the last step could not start (a limit): (instance, the error).
        self.refused: list[tuple[CharacterInstance, AnimLimitError]] = []
        # A callback's exception (wrap, end, report): handed to on_callback_error(phase, exc)
        # when set (the Game's: raised after the whole update), else raised by step / flush
        # once they are done for every character.
        self.on_callback_error: Callable[[str, BaseException], None] | None = None
        # the handlers the callbacks (data: anim.engine.callbacks.Callback) name
        self.callbacks = Callbacks()
        self._wraps: list[tuple[CharacterInstance, Task]] = []   # this step's wraps with a callback
        self._dt_raw: object = None                # the dt (a float object) the step last rounded, and its f32
        self._dt_f32 = 0.0
        self._failed: list[BaseException] = []
        self.stats = PlayerStats()
        self._pose_refused: list[CharacterInstance] = []   # humans whose poses_refused is set
        self._release_all = self.options.held_release == HeldRelease.ORIGINAL
        # the flush kernel's scratch, sized on the task table: the task rows it gives back,
        # a task and the next tasks it owns (anim.engine.kernels.flush_release)
        # the flush's freed rows and chain walk: task rows, int32 as the table's links (store.ROW_LINK)
        self._flush_scratch = (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(K.FLUSH_NOTED + 1, np.int64))
        # its counts read and written through a memoryview (no numpy call: after the step's
        # kernels, each kind of numpy call's first use in an update costs 10-20 us)
        self._flush_counts: Any = memoryview(cast(Any, self._flush_scratch[2]))
        self._flush_ents = np.zeros((256, 2), np.int64)   # the entries a flush takes from the list
        self._flush_loaded = False                  # the flush's kernels called once (_load_flush_kernels)
        self._flush_ids = np.zeros(256, np.int64)         # the anim id each entry released
        self._flush_notes = np.zeros(256, np.int32)       # the noted callbacks' ids (EndWork.NOTE), in order
        self._flush_args: tuple | None = None             # the kernel's RowStates and FlushBuffers, kept
        self._flush_last: tuple | None = None             # the last call's FlushInputs and the layout signal then
        self._log_open: tuple | None = None               # this round's last released_log entry (views), its range
        self._fired_mark = np.zeros(0, np.bool_)          # scratch: task rows that fired this update
        self._flush_seen = np.zeros(0, np.bool_)      # flush_anim_ids' scratch: a flag per human row


    @property
    def options(self) -> PlayerOptions:
        """The options (frozen); setting new ones gives them to every part."""
        return self._options

    @options.setter
    def options(self, options: PlayerOptions) -> None:
        write_first(self.prepared)          # buffered commands under the options they were issued with
        self._options = options
        for part in (self.lookup, self.builders, self.rules, self.prepared, self.columns):
            part.options = options

    @property
    def deferred(self) -> list[tuple[Task, CharacterInstance]]:
        """The deferred list as (task, instance) pairs, in its order: a new list read from
        ``deferred_rows`` (changing it changes nothing; ``defer`` adds to the list)."""
        dl = self.deferred_rows
        if not dl.n:
            return []
        return dl.pairs(self.stores.tasks.views, self.batch._instances, self.stores.tasks)

    @deferred.setter
    def deferred(self, pairs: list) -> None:
        """Make ``pairs`` ((task, instance), in order) the deferred list."""
        dl = self.deferred_rows
        dl.n = 0
        dl.odd = {}
        for task, inst in pairs:
            self.rules._defer_entry(task, inst)

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
        First the prepared commands buffered since the last step are written, in the
        order of their calls (anim.playback.cmdbuffer), then the tasks made since the last
        step and never placed go back to the pool (anim.playback.orphans: the end of the
        update that made them).
        """
        # one float32 dt (the compiled step reads it as a float32)
        raw = self.options.dt if dt is None else dt
        if raw is not self._dt_raw or raw.__class__ is not float:     # the same float object: the same f32
            self._dt_f32 = F.f32(raw if dt is None else check_float("step: dt", dt, 0.0, MAX_DT))
            self._dt_raw = raw
        dt = self._dt_f32
        if instances.__class__ is not list:
            instances = _listed("step", instances)      # (refused before anything changes)
        write_first(self.prepared)          # the commands buffered since the last step, in order
        made = self.pool.made
        if made or made is None:                # the handle API made tasks since the last step:
            give_back_unplaced(self)            # those never placed go back (anim.playback.orphans)
        if self.refused:                        # emptied (a new list: one handed out keeps its items)
            self.refused = []
        if self._wraps:
            self._wraps = []
        # Only the characters whose stack or gait leader changed can have a new top task:
        # their rows (the status the kernel wrote for each row of this step)
        eng = self.batch
        if eng.step(instances, dt, listed=False):
            n = eng.kernel_humans
            self._stepped.append(eng._last_rows[:n][(eng._status[:n] & _TOP_OR_STACK) != 0])
        if self._wraps:
            self._run_wraps()
        if self._failed:
            self._raise_failed()

    def step_and_pose(self, instances: list, dt: float | None = None) -> Bones:
        """``step`` then ``pose`` of ``instances`` (a list), the same results, with the
        pose's other chunks begun on the worker threads as soon as the step's kernels are
        through, beside the step's own Python (PlayerOptions.threads; BatchEngine.pose_next).
        The pose is complete when this returns; nothing outside the engine runs while it is
        under way: not when a wrap callback waits (it runs between the two and may command),
        nor when ``step`` is overridden or wrapped (a subclass's or a timer's code runs after
        the engine's). The animation system's call (systems.animation.AnimationStep)."""
        eng = self.batch
        if type(self).step is not Player.step or "step" in self.__dict__ or not isinstance(instances, list):
            self.step(instances, dt)                # code of the caller's own around the step
            return self.pose(instances)
        eng.pose_next = instances
        try:
            self.step(instances, dt)
        except BaseException:
            try:                                    # the begun chunks finished: no thread left writing
                eng.finish_begun()
            except BaseException:                   # (the step's own exception is the one to see)
                pass
            raise
        finally:
            eng.pose_next = None
        return self.pose(instances)

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
            self._callback_failed(phase, exc)

    def _callback_failed(self, phase: str, exc: Exception) -> None:
        """A callback's exception: to ``on_callback_error(phase, exc)`` when set, else kept
        to be raised once the step or flush is done (``_raise_failed``)."""
        if self.on_callback_error is not None:
            self.on_callback_error(phase, exc)
        else:
            self._failed.append(exc)

    def _noted(self, notes: np.ndarray, n: int) -> list:
        """The callbacks of the first ``n`` ids in ``notes`` (the flush kernel's EndWork.NOTE
        list), in release order."""
        values = self.stores.calls.values
        return [values[i] for i in notes[:n].tolist()]

    def _run_notes(self, noted: list) -> None:
        """The notes of the callbacks ``noted`` (``_noted``), in order (Callbacks.note); an
        exception as ``run_callback``'s."""
        note = self.callbacks.note
        for cb in noted:
            try:
                note(cb)
            except Exception as exc:
                self._callback_failed("flush", exc)

    def _raise_failed(self) -> None:
        if self._failed:
            failed, self._failed = self._failed, []
            raise failed[0]

    def start_queue(self, inst: CharacterInstance) -> None:
        """Run the human's queue once (each task's start, +0x54: a change to it, no fade),
        emptying it; a start a limit refuses goes back to the pool and is listed in
        ``refused``. Original: 0x00175610."""
        queued = inst.queue
        self.batch.clear_queue(inst)
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
        tasks is sampled over their pose (the engine's pose kernel does it, anim.playback.batch).
        Original: 0x00176d60 CharacterInstance_Sample.
        """
        write_first(self.prepared)
        refusals: list = []
        out = self.batch.sample(instances if instances.__class__ is list else _listed("sample", instances), refusals)
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
        c = self.prepared.commands
        if c is not None and c.n:               # rows to write: no pose may be under way meanwhile
            self.batch.finish_begun()
            write_first(self.prepared)
        refusals: list = []
        bones = self.batch.pose(instances if instances.__class__ is list else _listed("pose", instances),
                                refusals=refusals)
        self._count_refusals(refusals)
        return bones

    def write_commands(self) -> None:
        """Write the prepared commands waiting in the command buffer now, in the calls'
        order (anim.playback.cmdbuffer: one compiled call). Never needed for the results:
        whatever reads what they change writes them first (anim.engine.writefirst); a
        host that times its commands calls it to count their rows' write with them
        (scuffle bench does). Original: none (ours: the original writes each command at its
        call)."""
        write_first(self.prepared)

    def flush(self, listed: bool = True) -> list[CharacterInstance]:
        """Empty the deferred list: release each task, then refresh the playing anim ids.

        The release clears the held bits the task still holds (every one, the original's,
        or not those another task on the stack holds: ``options.held_release``), reports
        0x400000, runs the end callback (also on a cut-off) and gives back a cut-off
        task's next task; a clip that hands over (types 3 and 6) also
        clears state flag 0x4000000000. The ids are refreshed for every instance with a
        released task and every instance stepped since the last flush (a gait's leader
        changes the id without any release). Out: the instances with a released task, in
        the order of their first release (``listed=False``: an empty list, none made; the
        systems' flush). The ids each human released are its ``released`` (made when read:
        ``make_released``).
        An exception from a callback (``on_end``, ``on_report``) does not stop the flush:
        every deferred task is still released and given back, the ids are refreshed, and
        then the first such exception is raised (with ``on_callback_error`` set, every
        one goes there instead and nothing is raised). The deferred list is rows
        (anim.playback.deferred: the step kernel wrote them); the compiled engine releases them
        (anim.engine.kernels.flush_release) up to each task with a callback to run, which Python
        releases in its place (``_release``); the ids are refreshed in one kernel call
        (anim.engine.kernels.flush_anim_ids).
        Original: 0x00105570 AnimTask_FlushDeferred, 0x00105f78 (type 3's release),
        0x00108f10 (type 6's), 0x00106ee8 (the fade's).
        """
        write_first(self.prepared)
        dl = self.deferred_rows
        if not (dl.n or self._stepped or self._gone or self._failed or self.batch._leaving) and self._flush_loaded:
            return []                                     # nothing deferred, no id to refresh (a quiet update)
        if not self._flush_loaded:
            self._load_flush_kernels()
        stepped, self._stepped = self._stepped, []        # human rows (repeats: refreshed once)
        done: list[tuple[np.ndarray, dict]] = []          # each round's human rows and odd entries
        while dl.n:
            # a callback's defer starts the next round (on an array of its own: this one's rows are kept)
            ents, n, odd = dl.take(self._flush_ents if not done else np.zeros((0, 2), np.int64))
            if not done:
                self._flush_ents = ents
            try:
                self._release_entries(ents, n, odd)
            finally:
                self._close_log()                 # before the next round writes the released ids again
                self.stores.tasks.settle()        # the rows given back at their defaults: none waits
            done.append((ents[:n, 0], odd))
        self._refresh_ids(done, stepped)
        if self.batch._leaving:                 # humans forgotten with tasks to release: rows back now
            self.batch.release_leaving()
        touched = self._touched(done) if done and listed else []
        if self._gone:
            if self.released_log:                   # a human forgotten mid-flush: its ids made now
                self.make_released(self._gone)
            self._gone.clear()
        self._raise_failed()
        return touched

    def _load_flush_kernels(self) -> None:
        """The flush's two kernels called once on no entry and no human (nothing changes),
        when this process holds them or numba's cache does (coldstart.kernel_ready): numba
        loads a kernel at its first call, 15-30 ms from the cache, which would otherwise
        fall on the first update whose flush has a task to release or a human to refresh
        (a hitch at a fight's first strike) instead of the first flush, beside the step's
        own loads. On a cold cache they are left to compile at their first use (their 2 s
        of compile would otherwise join the first step's, anim.engine.coldstart)."""
        self._flush_loaded = True
        if not (kernel_ready("flush_release") and kernel_ready("flush_anim_ids")):
            return
        self._kernel_release(self._flush_ents, 0, 0, False, {})
        eng = self.batch
        eng._clip_events()
        eng._guard()
        H, T, C, _, G, _ = eng._tables()
        humans = self.stores.humans
        if len(self._flush_seen) < humans.capacity:
            self._flush_seen = np.zeros(humans.capacity, np.bool_)
        eng._anim_id_job.run(AnimIdInputs(np.zeros(0, np.int64), H, humans.anim, T, C, G, self._flush_seen),
                             eng._flush_anim_ids)

    def _inst_at(self, hrow: int) -> CharacterInstance:
        """The instance of human row ``hrow`` (one forgotten in this flush: as it was)."""
        inst = self.batch._instances[hrow]
        return inst if inst is not None else self._gone[hrow]

    def _touched(self, done: list) -> list[CharacterInstance]:
        """The instances of the flush's entries (``done``: each round's human rows and odd
        entries), each once, in the order of their first entry."""
        out: dict[CharacterInstance, None] = {}
        for hrows, odd in done:
            if len(hrows) == 0:
                continue
            _, first = np.unique(hrows, return_index=True)
            first.sort()
            if odd:
                first = np.union1d(first, np.fromiter(odd, np.int64, len(odd)))
            hl = hrows.tolist()
            for k in first.tolist():
                hr = hl[k]
                out[odd[k][1] if hr < 0 else self._inst_at(hr)] = None
        return list(out)

    def _release_entries(self, ents: np.ndarray, n: int, odd: dict) -> None:
        """Release the deferred entries ``ents[:n]`` (human row, task row; ``odd`` those
        held as objects), in order: the compiled engine's runs (anim.engine.kernels.flush_release:
        the record's bits, the anim id, the discard, the pool's count and the rows given
        back, all as rows) stop at each entry with a callback to run (an end callback, a
        report to make: it holds 0x400000 and its human has a report callback; the kernel
        reads the callback id columns, ``tasks.on_end`` and ``humans.on_report``),
        released but for its callbacks, which Python runs
        (``_run_release_callbacks``) before the next run discards it, and at each entry
        held as objects (a human this engine no longer holds, a task of another table),
        which ``_release`` releases in Python; so every callback sees what it saw when
        each release was Python, and a callback that gives a later entry a callback to
        run has it run. The lazy events a task fired are made first (their rows go back
        with it: BatchEngine.fired_by)."""
        self._make_fired_events(ents, n, odd)
        k = 0
        resume = False
        while True:
            stop = self._kernel_release(ents, k, n, resume, odd) if k < n else n
            if stop >= n:
                return
            hr, tr = ents[stop].tolist()
            if hr < 0:
                task, inst = odd[stop]
                self._release(inst, task)       # a callback's exception is kept (run_callback)
                k, resume = stop + 1, False
            else:
                try:
                    self._run_release_callbacks(hr, tr)
                except BaseException:           # not an Exception (run_callback keeps those): discarded
                    self._kernel_release(ents, stop, stop + 1, True, odd)
                    raise
                k, resume = stop, True          # the kernel discards it first

    def _run_release_callbacks(self, hrow: int, trow: int) -> None:
        """An entry's release after the kernel's part (its bits, its anim id, which
        ``_kernel_release`` put into the released ids): the report callback (it held
        0x400000 and its human has one) and the end callback run, as in ``_release``; the
        kernel discards it next."""
        inst = self._inst_at(hrow)
        held = self._flush_counts[K.FLUSH_HELD]
        if held & _REPORT and inst.on_report is not None:
            self.run_callback(inst.on_report, inst, "flush")
        ts = self.stores.tasks
        fn = ts.calls.get(ts.m_on_end[trow])
        if fn is not None:
            self.run_callback(fn, inst, "flush")

    def _make_fired_events(self, ents: np.ndarray, n: int, odd: dict) -> None:
        """The lazy events (CharacterInstance.events) of the humans whose entry's task fired
        one of them this update, made before the task's rows go back: the candidates found
        in one vector test (the entries' task rows among the step's event rows)."""
        eng = self.batch
        n_ev = eng._m_counts[K.COUNT_EVENTS]
        if n_ev and n:
            ev = eng._ev_out[:n_ev, 1]
            mark = self._fired_mark
            cap = self.stores.tasks.capacity
            if len(mark) < cap:
                mark = self._fired_mark = np.zeros(max(cap, 2 * len(mark)), np.bool_)
            mark[ev] = True
            cand = np.flatnonzero(mark[ents[:n, 1]]).tolist()     # an odd entry's -1 may be a candidate
            mark[ev] = False
            for k in cand:
                hr, tr = ents[k].tolist()
                if hr < 0:
                    continue                        # held as objects: below
                inst = self._inst_at(hr)
                rows = inst._event_rows
                if rows is not None and rows[0].fired_row(tr, rows[1], rows[2]):
                    inst.events                     # noqa: B018
        for task, inst in odd.values():
            rows = inst._event_rows
            if rows is not None and rows[0].fired_by(task, rows[1], rows[2]):
                inst.events                         # noqa: B018

    def _kernel_release(self, ents: np.ndarray, lo: int, hi: int, resume: bool, odd: dict) -> int:
        """Entries ``lo``-``hi`` of ``ents`` released by the kernel up to the first one with
        a callback to run (released but for its callbacks and discard) or held as objects
        (returned: ``hi`` when none; ``resume``: entry ``lo``'s callbacks ran, the kernel
        discards it first; ``odd`` the entries held as objects), then what Python holds:
        the released ids into ``released_log`` (in order; an entry stopped at for its
        callbacks included, so they see it), the pool's count, the handles and keyed values
        of the task rows given back (the handles nothing else holds kept for reuse:
        Table.spare; the values found by the keyed columns' marks), and their reset to the
        table's defaults before the next take (Table.free's). A resume whose inputs are the
        last call's but for the range (no table grown, no clip or buffer new since) runs
        on them unchecked: the round's first call checked them (FlushJob.resumes)."""
        eng = self.batch
        tasks = self.stores.tasks
        cv = self._flush_counts
        last = self._flush_last
        if (resume and last is not None and last[1] == self.stores.signal.now and not eng.debug
                and len(self._clips) == eng._n_clips and (buf := last[0].buf).entries is ents
                and buf.pool_out is self.pool.out and buf.end_keep is self._end_work()):
            inputs = FlushInputs(lo, hi, *last[0][2:])
        else:
            inputs = self._flush_inputs(ents, lo, hi)
            buf = inputs.buf
        freed, ids = buf.freed, buf.ids
        cv[K.FLUSH_FREED] = cv[K.FLUSH_IN] = cv[K.FLUSH_STOP] = cv[K.FLUSH_KEYED] = cv[K.FLUSH_NOTED] = 0
        cv[K.FLUSH_RESUME] = 1 if resume else 0
        # the kernel does an end callback's EndWork itself unless a command waits to be
        # written (the handler's read of the stack writes the human's first: write_first_for)
        waiting = self.prepared.commands
        cv[K.FLUSH_KEEP] = 0 if waiting is not None and waiting.n else 1
        job = eng._flush_job
        if resume and job.resumes(inputs):
            eng._flush_release(*inputs)
        else:
            job.run(inputs, eng._flush_release)
        self._flush_last = (inputs, self.stores.signal.now)
        # the noted callbacks read before their ids can go with their rows; their notes run
        # once the engine's own books are kept (one that raises leaves them whole)
        noted = self._noted(buf.notes, cv[K.FLUSH_NOTED]) if cv[K.FLUSH_NOTED] else None
        stop = cv[K.FLUSH_STOP]
        if stop != lo:
            self.pool.n_out -= cv[K.FLUSH_IN]
            nf = cv[K.FLUSH_FREED]
            if nf:
                self._rows_back(tasks, freed, nf, cv[K.FLUSH_KEYED])
        first = lo + 1 if resume else lo            # a resumed entry's id is in the log already
        end = stop + 1 if stop < hi and stop not in odd else stop
        if end > first:
            self._log_released(ents, ids, first, end)
        if noted:
            self._run_notes(noted)
        return stop

    def _flush_inputs(self, ents: np.ndarray, lo: int, hi: int) -> FlushInputs:
        """flush_release's inputs for entries ``lo``-``hi`` of ``ents``: the tables as the
        kernels take them (the clips' events brought up to date, the tables checked when
        one grew), the scratch sized on the task table, the RowStates and FlushBuffers kept
        while they hold the very arrays."""
        eng = self.batch
        st = self.stores
        tasks = st.tasks
        eng._clip_events()                          # a table grown since the step (new clips): rows checked
        eng._guard()
        H, T, C, _, G, _ = eng._tables()
        cap = tasks.capacity
        freed, chain, counts = self._flush_scratch
        if len(freed) < cap:
            freed, chain = np.zeros(cap, np.int32), np.zeros(cap, np.int32)
            self._flush_scratch = (freed, chain, counts)
        ids, notes = self._flush_ids, self._flush_notes
        if len(ids) < len(ents):
            ids = self._flush_ids = np.zeros(len(ents), np.int64)
        if len(notes) < len(ents):
            notes = self._flush_notes = np.zeros(len(ents), np.int32)
        em = tasks.on_end                           # the callback ids (NO_CALLBACK: none)
        rm = st.humans.on_report
        work = self._end_work()
        key = (self.stores.signal.now, ents, ids, freed, self.pool.out, em, rm, work, notes)
        args = self._flush_args
        if args is None or any(map(_is_not, key, args[0])):     # the very objects: kept, else made again
            args = self._flush_args = (key, _row_state(tasks), _row_state(st.gaits), _row_state(st.fades),
                                       FlushBuffers(ents, ids, freed, counts, chain, self.pool.out, em, rm, work,
                                                    notes))
        return FlushInputs(lo, hi, self._release_all, H, T, args[1], C, G, args[2], args[3], args[4])

    def _end_work(self) -> np.ndarray:
        """What the flush kernel does itself for each callback id instead of stopping (an
        int8 per id: anim.engine.callbacks.EndWork, 0 for none), made again when the
        registry changed."""
        calls, reg = self.stores.calls, self.callbacks
        if calls.classify is None or calls.classified != reg.version:
            calls.reclassify(reg.action_of, reg.version)
        return calls.actions

    @staticmethod
    def _rows_back(tasks: Table, freed: np.ndarray, nf: int, keyed: int) -> None:
        """The ``nf`` task rows a flush_release call gave back (``freed``; ``keyed`` of them
        written as ~row: they hold a callback id), in Python: their handles (found by one
        look-up in C) dropped from ``views`` (a handle's ``trow`` is its row there), each one
        nothing else holds kept for the next constructor of its class (Table.spare: the
        list, the loop and getrefcount's own hold it, 3, and no weak reference names it), the callback ids of the keyed rows let
        go (Table.freed; the kernel reset their other columns to the defaults)."""
        if nf <= _FEW_ROWS:                         # a few rows (a callback's stop): one by one
            Player._few_rows_back(tasks, freed[:nf].tolist(), keyed)
            return
        fr = freed[:nf]
        if keyed:
            neg = fr < 0
            fr[neg] = ~fr[neg]                      # the scratch's own rows, back to rows
            held = fr[neg].tolist()
        else:
            held = []
        # only the rows flagged as holding a handle (anim.playback.tasks.note_view): no
        # read of ``views`` per row given back
        flagged = viewed_rows(tasks, fr)
        looked = flagged.tolist() if flagged is not None else fr.tolist()
        views = tasks.views
        n = len(looked)
        got = _itemgetter(*looked)(views) if n > 1 else (views[looked[0]],) if n else ()
        hs = [*filter(None, got)]                   # the rows with a handle (no Task is falsy)
        got = None
        keep_of = tasks.spare.get
        for h in hs:                                # (most rows have none: their slot holds None already)
            views[h.trow] = None
            keep = keep_of(h.__class__)
            if keep is not None and _refs(h) == 3 and not _weakrefs(h):
                keep.append(h)
        del hs                                      # (its references dropped before the next rows)
        for keep in tasks.spare.values():
            if len(keep) > _SPARE_MAX:
                del keep[_SPARE_MAX:]
        tasks.freed(cast(Any, fr), held, reset=True)    # (flush_release reset them: _reset_task)

    @staticmethod
    def _few_rows_back(tasks: Table, marked: list, keyed: int) -> None:
        """``_rows_back`` of a few rows (``marked``: as the kernel wrote them, ~row for a
        keyed one), each read once: the rows of a callback's stop, one to three as a rule,
        where a numpy call costs more than the loop."""
        views = tasks.views
        spare = tasks.spare
        held: list = []
        for r in marked:
            if r < 0:
                r = ~r
                held.append(r)
            h = views[r]
            if h is None:
                continue
            views[r] = None                         # (a handle's ``trow`` is r: the row it names)
            keep = spare.get(h.__class__)
            # the name ``h`` and getrefcount's argument: 2, nothing else holds it
            if keep is not None and _refs(h) == 2 and not _weakrefs(h):
                keep.append(h)
                if len(keep) > _SPARE_MAX:
                    del keep[_SPARE_MAX:]
            h = None
        if held:                                    # (the other rows hold no callback id to let go)
            tasks.freed(held, held, reset=True)

    def _log_released(self, ents: np.ndarray, ids: np.ndarray, first: int, end: int) -> None:
        """Entries ``first``-``end`` released: their human rows and ids into ``released_log``,
        as views of the round's arrays, the range joined to this round's last entry when it
        goes on from it (a resume after a callback's stop); ``_close_log`` copies them when
        the round ends (the next round writes the ids again)."""
        log = self.released_log
        op = self._log_open
        if op is not None and log and log[-1] is op[0] and op[1] is ents and op[3] == first:
            first = op[2]
            entry = (ents[first:end, 0], ids[first:end])
            log[-1] = entry
        else:
            self._close_log()                       # the round's entry before it: copied now
            entry = (ents[first:end, 0], ids[first:end])
            log.append(entry)
        self._log_open = (entry, ents, first, end)

    def _close_log(self) -> None:
        """The round's released ids in ``released_log`` copied out of the round's arrays."""
        op = self._log_open
        if op is None:
            return
        self._log_open = None
        log = self.released_log
        if log and log[-1] is op[0]:
            log[-1] = (op[0][0].copy(), op[0][1].copy())

    def make_released(self, rows: Collection[int] | None = None) -> None:
        """Append the released ids of ``released_log`` to each human's ``released`` list
        (in release order), all at once: CharacterInstance.released calls it when read.
        ``rows`` (human rows: of humans forgotten, whose rows a newcomer may take): theirs
        alone, the others' left in the log, in order, to be made when read."""
        log, self.released_log = self.released_log, []
        if not log:
            return
        h = np.concatenate([c[0] for c in log]) if len(log) > 1 else log[0][0]
        a = np.concatenate([c[1] for c in log]) if len(log) > 1 else log[0][1]
        if rows is not None:
            mine = h == next(iter(rows)) if len(rows) == 1 else np.isin(h, np.fromiter(rows, np.int64, len(rows)))
            if not mine.all():
                rest = ~mine
                self.released_log = [(h[rest], a[rest])]
                h, a = h[mine], a[mine]
                if not len(h):
                    return
        order = np.argsort(h, kind="stable")
        hs, al = h[order], a[order].tolist()
        cuts = (np.flatnonzero(hs[1:] != hs[:-1]) + 1).tolist()
        noisy = self.batch._noisy
        by_row = self.batch._instances
        lo = 0
        for hr, hi in zip(hs[[0] + cuts].tolist(), cuts + [len(al)]):
            inst = by_row[hr]
            if inst is None:
                inst = self._gone[hr]
            rel = inst._released
            if not rel:
                noisy.append(inst)                  # BatchEngine.released_by_flush
            rel.extend(al[lo:hi])
            lo = hi

    def settle_released(self, rows: np.ndarray) -> None:
        """At a step's start (``rows``: the human rows it steps): the released ids still in
        ``released_log`` go when every one of their humans steps now (each step begins with
        none), else they are made into the lists (those not stepped keep theirs)."""
        h = np.concatenate([c[0] for c in self.released_log])
        mark = self._settle_mark
        if len(mark) < self.stores.humans.capacity:
            mark = self._settle_mark = np.zeros(self.stores.humans.capacity, np.bool_)
        mark[rows] = True
        every = bool(mark[h].all())
        mark[rows] = False
        if every:
            self.released_log = []
        else:
            self.make_released()

    def _refresh_ids(self, done: list, stepped: list) -> None:
        """The playing anim ids (record +0x20) of the humans with a released task (``done``:
        each round's human rows and odd entries) and of those stepped since the last flush,
        in one kernel call (anim.engine.kernels.flush_anim_ids: each one's top task, the bottom one
        under a fade, -1 with none; each once); a human this engine no longer holds by
        ``refresh_anim_id`` (-1)."""
        eng = self.batch
        parts = []
        for hrows, odd in done:
            if odd:
                for _, inst in odd.values():
                    if inst.engine is not eng:
                        self.refresh_anim_id(inst)
                    else:
                        parts.append(np.array([inst.slot], np.int64))
                hrows = hrows[hrows >= 0]
            parts.append(hrows)
        parts += stepped                            # all this engine's (Player.forget takes a human out)
        if not parts:
            return
        humans = self.stores.humans
        seen = self._flush_seen
        if len(seen) < humans.capacity:
            seen = self._flush_seen = np.zeros(humans.capacity, np.bool_)
        for p in parts:                             # each row once, in the human table's order (fewer
            seen[p] = True                          # cache misses): a flag per row, not a sort
        rows = np.flatnonzero(seen)
        if not len(rows):
            return
        seen[rows] = False
        eng._clip_events()
        eng._guard()
        H, T, C, _, G, _ = eng._tables()
        eng._anim_id_job.run(AnimIdInputs(rows, H, humans.anim, T, C, G, seen), eng._flush_anim_ids)

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
        if inst.engine is self.batch:               # in release order with the kernel's (make_released)
            self.released_log.append((np.array([inst.slot], np.int64), np.array([task.anim_id()], np.int64)))
        else:
            if not inst._released:
                self.batch.released_by_flush(inst)
            inst._released.append(task.anim_id())
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
        self.flush(listed=False)
        return poses

    def forget(self, inst: CharacterInstance) -> None:
        """The human leaves the world: its row in the human table goes back, and its record
        (and the instance's speed and report callback, kept in that row) raise StaleHandle
        from then on; a human coming back is a new instance with a new record. Cut its
        tasks first (``cut``); if they are not flushed yet, the row goes back at the end of
        the flush that releases them (``BatchEngine.forget``)."""
        if self._stepped and inst.engine is self.batch:     # no id refresh for it at the flush
            s = inst.slot
            self._stepped = [rows[rows != s] for rows in self._stepped]
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


    # -- the state beside the tables (anim.engine.snapshot)
    @property
    def layout(self) -> int:
        """The stamp of this Player's layout signal (its Stores', anim.engine.store.LayoutSignal):
        equal to an earlier reading while no array of its tables was replaced since (a
        table grew, a restore gave it another size, new clips' events); another world's
        tables leave it alone."""
        return self.stores.signal.now

    def save_state(self, into: tuple | None = None, view: bool = False) -> tuple:
        """The Player's values the next update reads beside the tables: the pool's flags
        (into ``into``'s array, an older state given up, when it fits), the deferred list's
        rows, the step's pending lists and row lists, the stats, and the callbacks table.
        ``view``: its own arrays and lists, not copies (a state read at once). Buffered
        commands are written first (a snapshot holds no command buffer)."""
        write_first(self.prepared)
        if view:
            return ((self.pool.out, self.pool.n_out), self.deferred_rows.save(view=True),
                    (self.refused, self._wraps, self._failed), self._stepped,
                    (self.stats.poses_refused, self.stats.samples),
                    (self.stores.calls.values, self.stores.calls.uses, self.stores.calls.free))
        refused, wraps, failed, stepped, stats = self.refused, self._wraps, self._failed, self._stepped, self.stats
        return (self.pool.save(into[0] if into is not None else None), self.deferred_rows.save(),
                (list(refused), list(wraps), list(failed)) if refused or wraps or failed else _NO_LISTS,
                [rows.copy() for rows in stepped] if stepped else _NO_ROWS, (stats.poses_refused, stats.samples),
                self.stores.calls.save())

    def load_state(self, state: tuple, trusted: bool = False) -> None:
        """Write a ``save_state`` back (copied: it restores again); the last update's
        outputs (released ids not yet made, refused poses) and the commands buffered since
        it was saved are forgotten. ``trusted``: a ``save_state`` of this Player (its
        callbacks table's lists are not checked)."""
        buffered = self.prepared.commands
        if buffered.n or buffered.due:
            buffered.clear()
        pool, deferred, lists, stepped, stats, calls = state
        self.pool.load(pool)
        dl = self.deferred_rows
        if deferred is not NO_ENTRIES or dl.n or dl.odd:     # (both empty, as a rule: nothing to write)
            dl.load(deferred)
        if lists is _NO_LISTS:                  # (between two updates, as a rule: nothing pending)
            if self.refused:
                self.refused = []
            if self._wraps:
                self._wraps = []
            if self._failed:
                self._failed = []
        else:
            refused, wraps, failed = lists
            self.refused, self._wraps, self._failed = list(refused), list(wraps), list(failed)
        self._stepped = [rows.copy() for rows in stepped] if stepped else []
        self.stats.poses_refused, self.stats.samples = stats
        self.stores.calls.load(calls, trusted)
        if self.released_log:
            self.released_log = []
        if self._pose_refused:
            for inst in self._pose_refused:
                inst.clear_outputs()
            self._pose_refused = []

    def note_refused(self, inst: CharacterInstance) -> None:
        """``inst`` has refused poses of the last update (a restored state's): cleared at the next."""
        self._pose_refused.append(inst)


# name -> (part, the part's function): what _bind_parts binds on each Player
_PART_METHODS = {name: (v.part, v.func) for name, v in vars(Player).items() if isinstance(v, _Part)}
