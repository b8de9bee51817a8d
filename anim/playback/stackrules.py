"""The player's stack rules: how tasks go on and off a character's task stack.

``StackRules`` is the part of ``scuffle.anim.playback.player.Player`` that keeps the stack of 18
and the queue of 10: insert at the bottom and push on top (first finishing the newest
fade early above 6 tasks), a change of animation (fade, new task under it), the queue,
``replace``, completing a fade (giving back everything below the new task), cutting a
stack, the deferred list and giving tasks back; the top task and the playing anim id
(record +0x20); and whether a task fits the pose stack of seven. A part the Player owns
(``Player.rules``), over the world's stores, pool, deferred list and the batch engine's
human rows; a change makes its fade with the Player's builders.

Spec: "The task stack", "Fades", "When a clip ends".
Original: 0x001754e8 TaskStack_InsertBottom, 0x001753d8 TaskStack_Push, 0x00175210
TaskStack_Top, 0x001752c8 / 0x00105570 (the playing anim id), 0x00177eb8 (the newest
fade), 0x00106cc8 (the fade's clean-up), 0x00105640 AnimTask_DeferGive.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from scuffle.anim.playback.construct import TaskBuilder, _check_number, task_pose_depth
from scuffle.anim.playback.deferred import DeferredRows
from scuffle.anim.data.options import PlayerOptions
from scuffle.anim.maths.f32 import FLT_MAX as _F32_MAX
from scuffle.anim.maths.pose import POSE_STACK_SIZE, PoseStackOverflow
from scuffle.anim.engine.stack import (QUEUE_SIZE, STACK_SIZE, CharacterInstance, QueueFull, StackFull, TaskPool,
                                      check_human)
from scuffle.anim.engine.cmdkernel import rows_written
from scuffle.anim.engine.store import Stores, Table, near_hints
from scuffle.anim.engine.writefirst import write_first, write_first_for
from scuffle.anim.playback.tasks import (ClipTask, DirectionTask, FadeTask, ForeignTask, GaitTask, HoldTask, LoopTask, MixTask,
                    PairedClipTask, PairedHoldTask, PickTask, SceneTask, Task, TaskType, not_a_task, take_place,
                    _MADE_ON_READ, bind_own, bind_row, task_at, write_fade_row, write_task_row)
from scuffle.anim.engine.rules import change_room

if TYPE_CHECKING:  # pragma: no cover
    from scuffle.anim.playback.batch import BatchEngine


__all__ = ["StackRules"]


# The task classes whose rows and cursor _check_own reads directly (their following() is
# the row's next task, for the two that have one).
_CLIP_CLASSES = frozenset({LoopTask, ClipTask, HoldTask, SceneTask, PairedClipTask, PairedHoldTask})
_NEXT_CLASSES = frozenset({ClipTask, PairedClipTask})
# The classes a row no handle names is read as (anim.playback.tasks.task_at) whose rows,
# cursor rows, fade and gait rows are then the world's by construction, owning no next task.
_ROW_OWN_CLASSES = frozenset({GaitTask, FadeTask, DirectionTask, MixTask, PickTask})

_FadeTask = FadeTask

# The hot paths compare plain ints; the values come from the enums.
_FADE = int(TaskType.FADE)
_GAIT = int(TaskType.GAIT)


def _task_type(call: str, ttype) -> int:
    """``ttype`` as a task type's number. Rejected: not one of TaskType (ValueError naming
    the call)."""
    try:
        return int(TaskType(ttype))
    except (TypeError, ValueError):
        raise ValueError(f"{call}: {ttype!r} is not a task type (TaskType)") from None


class StackRules:
    """The stack rules (see the module docstring): the Player's.

    In: the Player's builders (a change makes its fade), the batch engine (the human
    rows), the task pool, the world's stores, the Player's options (set again when the
    Player's are) and the deferred list's rows."""

    def __init__(self, builders: TaskBuilder, batch: BatchEngine, pool: TaskPool, stores: Stores,
                 options: PlayerOptions, deferred_rows: DeferredRows):
        self.builders = builders
        self.batch = batch
        self.pool = pool
        self.stores = stores
        self.options = options
        self.deferred_rows = deferred_rows
        # a change's common path (its fade's rows, the two slots, the anim id) written by one
        # compiled call (the Player's prepared commands' ``change_rows``, set by the Player),
        # None: the Python writers alone
        self.direct_change: Callable | None = None

    def _fade_bound(self, ts: Table, f: FadeTask, got: int) -> None:
        """Fade handle ``f`` bound to the rows ``direct_change`` wrote (``got``: cmdkernel
        .rows_written's) as the Python writers bind one (tasks.bind_row, bind_own), its
        pool flag counted when newly set (TaskPool.counted)."""
        fr, r, newly = rows_written(got)
        bind_row(ts, f, fr)
        bind_own(f, self.stores.fades, r)
        if newly:
            self.pool.counted(fr)

    @staticmethod
    def top(inst: CharacterInstance) -> Task | None:
        """The top task, or the bottom one when the top is a fade. Original: 0x00175210."""
        check_human("top", inst)
        eng = inst.engine
        if eng is None:
            return None
        t = eng.top_task(inst)
        return eng.bottom_task(inst) if t is not None and t.type == _FADE else t

    @staticmethod
    def held_on_stack(inst) -> int:
        """The held bits (HeldFlags) of every unreleased task on the human's stack, OR-ed:
        read from its stack row and the task rows' released flags and held bits, as
        ``running`` reads them (no list of the stack); a human this engine does not hold
        (the reference's, or one not added) from its ``stack``. In: a human. Out: an int."""
        eng = inst.engine if inst.__class__ is CharacterInstance else None
        held = 0
        if eng is None:
            for t in inst.stack:
                if not t.released:
                    held |= int(t.held)
            return held
        h, ts, s = eng.humans, eng.player.stores.tasks, inst.slot
        write_first_for(h, s)
        ms, released, bits = h.m_stack, ts.m_released, ts.m_held
        b = s * h.stack_width
        for i in range(b, b + h.m_depth[s]):
            r = ms[i]
            if not released[r]:
                held |= bits[r]
        return held

    @staticmethod
    def running(inst: CharacterInstance, ttype: int) -> Task | None:
        """The newest unreleased task of type ``ttype`` (a TaskType) on the human's stack:
        the one nearest the bottom (a change inserts its new task there), or None. Read from
        the human's stack row and the task rows' types and released flags: one handle made,
        no list of the stack (what ``next(t for t in inst.stack if t.type == ttype and not
        t.released)`` answers, for a game that steers its running gait or mix)."""
        check_human("running", inst)
        eng = inst.engine
        if eng is None:
            return None
        h = eng.humans
        s = inst.slot
        write_first_for(h, s)
        ts = eng.player.stores.tasks
        types, released, ms = ts.m_type, ts.m_released, h.m_stack
        want = int(ttype) if ttype.__class__ is TaskType else _task_type("running", ttype)
        b = s * h.stack_width
        for i in range(b, b + h.m_depth[s]):
            r = ms[i]
            if types[r] == want and not released[r]:
                return ts.views[r] or task_at(ts, r)
        return None

    def refresh_anim_id(self, inst: CharacterInstance) -> None:
        """The top task's id into record +0x20 (-1 with no task), read from the human's
        stack row (no list of the stack). Original: 0x001752c8."""
        eng = inst.engine
        t = eng.top_task(inst) if eng is not None else None
        if t is None:
            inst.record.anim_id = -1
            return
        if t.type == _FADE:
            t = eng.bottom_task(inst)
        inst.record.anim_id = t.anim_id()

    def _early_finish(self, inst: CharacterInstance) -> None:
        """With more than 6 tasks, finish the newest fade by its remaining time (0x00177eb8)."""
        if self.batch.depth_of(inst) > self.options.early_finish_above:
            for t in reversed(inst.stack):
                if t.type == TaskType.FADE and not t.released:
                    t.finish_early(self, inst)
                    break

    def _hold(self, inst: CharacterInstance, task: Task) -> None:
        held = task.held
        if held:
            inst.record.flags |= held

    def _check_fits_poses(self, inst: CharacterInstance, task: Task) -> None:
        """With ``refuse_deep_chains``: PoseStackOverflow when ``task``'s own blend windows
        would nest more clips than the pose stack of seven holds (task_pose_depth), before
        anything changes. Without it (the original) such a task plays, its eighth pose
        skipped when sampled."""
        if not self.options.refuse_deep_chains:
            return
        depth = task_pose_depth(task)
        if depth > POSE_STACK_SIZE:
            raise PoseStackOverflow(
                f"{inst.name or 'human'}: an eighth pose: the task's blend windows nest {depth} clips' poses "
                f"at once; the pose stack holds {POSE_STACK_SIZE}, a limit of the original (refused, nothing changed)")

    def insert_bottom(self, inst: CharacterInstance, task: Task) -> None:
        """Put a task under the stack (index 0); sets its held bits on the human.

        Rejected: a full stack (StackFull; nothing changed), a task whose own blend
        windows could never fit the pose stack (PoseStackOverflow; nothing changed).
        Original: 0x001754e8.
        """
        check_human("insert_bottom", inst)
        self._insert_bottom(inst, task)
        self.refresh_anim_id(inst)

    def _insert_bottom(self, inst: CharacterInstance, task: Task) -> None:
        """``insert_bottom`` without the anim id's refresh (``change`` refreshes once)."""
        self._put(inst, task, 0)

    def _check_own(self, task: Task) -> None:
        """ForeignTask unless ``task``, the next tasks it owns and their cursors, fade and
        gait rows all live in this world's tables (made by this Player)."""
        if not isinstance(task, Task):
            raise not_a_task("", task)
        st = self.stores
        tasks, cursors = st.tasks, st.cursors
        # the common chain (a clip task and the next tasks it owns, made by the constructors:
        # exact classes) read straight from the rows; anything else takes the general walk
        t: Any = task                                # a handle: its class says which fields it has
        while t.tstore is tasks:
            kind = t.__class__
            if kind in _CLIP_CLASSES:                # its cursor is a row of the world's table (c0)
                r = t.trow
                nxt = tasks.m_nxt[r]
                if nxt < 0 or kind not in _NEXT_CLASSES or tasks.m_handed_over[r]:
                    return
                nxt = self._own_rows(nxt)        # rows no handle names: read as rows, none made
                if nxt < 0:
                    return
                t = tasks.views[nxt] or task_at(tasks, nxt)
                continue
            # a gait's and a direction's cursor rows are the world's by construction (their
            # constructors refuse another table's: ForeignTask); neither owns a next task
            if (kind is GaitTask and t.store is st.gaits and t.cstore is cursors) or \
                    (kind is FadeTask and t.store is st.fades) or kind is DirectionTask:
                return
            # a mix's and a pick's cursors are handles it keeps: the world's, or the general
            # walk names the task (neither owns a next task)
            if (kind is MixTask and t.a.store is cursors and t.b.store is cursors) or \
                    (kind is PickTask and all(c.store is cursors for c in t.clips)):
                return
            break
        todo = [t]
        while todo:
            t = todo.pop()
            own = t.tstore is st.tasks
            if own:
                for c in t.cursors():
                    if c.store is not st.cursors:
                        own = False
                        break
            if own and t.type == _FADE:
                own = getattr(t, "store", None) is st.fades
            elif own and t.type == _GAIT:
                own = getattr(t, "store", None) is st.gaits
            if not own:
                raise ForeignTask(f"{type(t).__name__} was not made by this world's Player (its rows are in "
                                  "another table): make it with the Player's constructors; nothing was changed")
            todo.extend(t.following())

    def _own_rows(self, r: int) -> int:
        """``_check_own``'s walk over the next tasks from task row ``r`` while no handle names
        them (a prepared command's rows, a queued start's next tasks): each row read as the
        class ``task_at`` would make of it, whose rows that handle would find the world's
        by construction, so no handle is made to be looked at. Out: -1 when the chain ends
        so, else the row to go on from with its handle (one names it, or a row read otherwise)."""
        st = self.stores
        tasks = st.tasks
        views = tasks.views
        while r < len(views) and views[r] is None and tasks.m_live[r] and tasks.world is st:
            kind = _MADE_ON_READ.get(tasks.m_type[r])
            if kind in _CLIP_CLASSES:
                nxt = tasks.m_nxt[r]
                if nxt < 0 or kind not in _NEXT_CLASSES or tasks.m_handed_over[r]:
                    return -1
                r = nxt
                continue
            if kind in _ROW_OWN_CLASSES:
                return -1
            break
        return r

    def _put(self, inst: CharacterInstance, task: Task, at: int | None) -> None:
        """Put ``task`` at index ``at`` of the stack (None: on top), after the early finish
        and the checks insert_bottom and push share; no anim id refresh."""
        self._check_own(task)
        if task.tstore.placed[task.trow]:
            take_place(task, "stack")                # raises TaskInUse
        self._check_fits_poses(inst, task)
        self._put_checked(inst, task, at)

    def _put_checked(self, inst: CharacterInstance, task: Task, at: int | None) -> None:
        """``_put`` of a task already checked (ours, no place, fits the pose stack): the early
        finish, the stack's room, then one slot of the human's stack row written."""
        self._early_finish(inst)
        batch = self.batch
        if batch.depth_of(inst) >= STACK_SIZE:
            raise StackFull(f"{inst.name or 'human'}: the task stack already holds {STACK_SIZE} tasks")
        batch.put_row(inst, task.trow, -1 if at is None else at)
        task.tstore.m_placed[task.trow] = True       # take_place: it had none (checked)
        held = task.held
        if held:
            inst.record.flags |= held

    def push(self, inst: CharacterInstance, task: Task) -> None:
        """Put a task on top of the stack; sets its held bits on the human.

        Rejected: a full stack (StackFull; nothing changed), a task whose own blend
        windows could never fit the pose stack (PoseStackOverflow; nothing changed).
        Original: 0x001753d8.
        """
        check_human("push", inst)
        self._push(inst, task)
        self.refresh_anim_id(inst)

    def _push(self, inst: CharacterInstance, task: Task) -> None:
        """``push`` without the anim id's refresh (``change`` refreshes once)."""
        self._put(inst, task, None)

    def change(self, inst: CharacterInstance, task: Task, fade: float = 0.0) -> FadeTask:
        """A change of animation, the three moves: make a fade, insert the new task at the
        bottom, push the fade on top (the stack is then new, old..., fade).

        The new task must already be taken from the pool. Rejected before any change:
        no free task for the fade (TaskPoolExhausted), no room for the insert and the
        push after the early finishes they would make (StackFull, from a dry run), a
        fade time that is not finite and >= 0 (ValueError); ``task`` is then given back.
        Original: 0x001754e8 TaskStack_InsertBottom, 0x001753d8 TaskStack_Push, in the
        order of every locomotion builder (0x0025b200, 0x0025f1b8, 0x0025c0e8).
        """
        check_human("change", inst)
        self._check_own(task)            # not ours: not given back to our pool either
        write_first(self.batch.humans)           # buffered commands first: the rows in the calls' order
        ts = task.tstore                             # the world's (checked)
        tr = task.trow
        if ts.m_placed[tr]:
            take_place(task, "change")               # raises TaskInUse (the task is not given back)
        opts = self.options
        batch = self.batch
        pool = self.pool
        if inst.engine is batch and pool.n_out < pool.capacity and not opts.refuse_deep_chains \
                and fade.__class__ is float and 0.0 <= fade <= _F32_MAX:
            # the common case, straight over the human's row: a fade free, a fade time a
            # float32 holds, the human's row live, and room for both with neither early
            # finish acting (n + 1 <= the limit: the insert's own finish cannot act either)
            h = batch.humans
            s = inst.slot
            n = h.m_depth[s]
            rec = inst.record
            speed = h.m_speed[s]                         # the fade's rate (a float32 holds it: checked when set)
            if change_room(n, opts.early_finish_above) and rec.table is h and rec.row == s \
                    and h.gen[s] == rec.gen and -_F32_MAX <= speed <= _F32_MAX:
                # self.builders.fade(inst, fade), inline (FadeTask._made: a checked time, the human's speed)
                kept = ts.spare.get(_FadeTask)           # new_handle, inline: a handle the flush kept
                f = kept.pop() if kept else _FadeTask.__new__(_FadeTask)
                a = task.anim_id()                       # the top will be the fade: the new task's id
                plain = a.__class__ is int and a >= -1   # (a column's value; else the record's checks)
                direct = self.direct_change
                # the fade's rows, the two slots and a plain anim id in one compiled call (the
                # same rows), else in Python
                got = -1 if direct is None or s < 0 else direct(s, n, speed, fade, tr, a if plain else -2)
                if got >= 0:
                    self._fade_bound(ts, f, got)
                else:
                    fr = write_task_row(ts, f, _FADE, speed, 0, 0, None, near_hints(self.stores, inst)[0])
                    fades = self.stores.fades
                    bind_own(f, fades, write_fade_row(ts, fr, fades, fade))
                    pool.take_row(fr)
                    ts.m_incoming[fr] = tr               # f.incoming = task
                    batch.change_rows(inst, tr, fr)      # insert_bottom and push: the two slots
                    placed = ts.m_placed
                    placed[tr] = True
                    placed[fr] = True
                    if plain:
                        h.m_anim[s] = a
                bits = ts.m_held[tr]                     # the fade holds none
                if bits > 0:
                    hf = h.m_flags
                    hf[s] = hf[s] | bits
                elif bits:
                    rec.flags |= bits                    # the record's own check (a negative word)
                if not plain:
                    rec.anim_id = a
                return f
        n = batch.depth_of(inst)
        try:
            if opts.refuse_deep_chains:
                self._check_fits_poses(inst, task)
            self.pool.require(1)
            if not (fade.__class__ is float and 0.0 <= fade <= _F32_MAX):
                _check_number("fade time", fade)
            # the dry run of the early finishes, unless neither can act (n + 1 <= the limit)
            if not (n + 1 < STACK_SIZE if n + 1 <= opts.early_finish_above else self._change_fits(inst, task)):
                raise StackFull(f"{inst.name or 'human'}: no room for a change "
                                f"({len(inst.stack)} of {STACK_SIZE} tasks)")
            f = self.builders.fade(inst, fade)          # its rows near the human's (near_hints)
        except Exception:
            self.discard(task)
            raise
        ts = self.stores.tasks
        ts.m_incoming[f.trow] = task.trow            # f.incoming = task (both ours: checked)
        if change_room(n, opts.early_finish_above):
            # neither early finish acts and both fit: insert_bottom and push write their two
            # slots at once; the top is then the fade, so the playing id is the new task's
            self.batch.change_rows(inst, task.trow, f.trow)
            placed = ts.m_placed
            placed[task.trow] = True
            placed[f.trow] = True
            held = ts.m_held[task.trow] | ts.m_held[f.trow]
            if held:
                inst.record.flags |= held
            inst.record.anim_id = task.anim_id()
            return f
        # insert_bottom, then push: nothing between them reads the anim id, so it is
        # refreshed once, after both (the value the second refresh gave). Both tasks were
        # checked above (the fade is new: ours, no place, one pose).
        self._put_checked(inst, task, 0)
        self._put_checked(inst, f, None)
        self.refresh_anim_id(inst)
        return f

    def _change_fits(self, inst: CharacterInstance, task: Task) -> bool:
        """Whether insert_bottom then push fit, each after its own early finish (a dry run
        on a copy of the stack: the finish can free as little as the fade itself)."""
        n = self.batch.depth_of(inst)
        if n + 1 <= self.options.early_finish_above:
            return n + 1 < STACK_SIZE         # neither early finish acts: no copy needed
        stack = list(inst.stack)

        def finish_newest() -> None:
            if len(stack) <= self.options.early_finish_above:
                return
            fade = next((t for t in reversed(stack) if t.type == TaskType.FADE and not t.released), None)
            if fade is None:
                return
            hi = stack.index(fade)
            lo = stack.index(fade.incoming) + 1 if fade.incoming in stack else 0
            del stack[lo:hi + 1]

        finish_newest()
        if len(stack) >= STACK_SIZE:
            return False
        stack.insert(0, task)
        finish_newest()
        return len(stack) < STACK_SIZE

    def enqueue(self, inst: CharacterInstance, task: Task) -> None:
        """Queue a task to start at the next step. Rejected: a full queue (QueueFull), a task
        made outside this Player (ForeignTask)."""
        check_human("enqueue", inst)
        self._check_own(task)
        batch = self.batch
        if batch.queued_of(inst) >= QUEUE_SIZE:
            raise QueueFull(f"{inst.name or 'human'}: the task queue already holds {QUEUE_SIZE} tasks")
        take_place(task, "queue")
        batch.queue_row(inst, task.trow)             # one slot of the human's queue row

    def replace(self, inst: CharacterInstance, old: Task, new: Task) -> None:
        """A hand-over: ``new`` takes ``old``'s place; ``old`` goes on the deferred list.

        ``old`` is on the stack, or a next task advanced inside its owner's blend window
        (BlendWindow.ADVANCED) that ended there: ``new`` then becomes the owner's next task.
        Rejected: a ``new`` made outside this Player (ForeignTask).
        """
        self._check_own(new)
        stack = inst.stack
        if not any(t is old for t in stack):
            owner = self._owner_of(inst, old)
            new.tstore.placed[new.trow] = False      # moves from old's next to owner's next
            owner.next = new
            self.defer(inst, old)
            return
        stack[stack.index(old)] = new
        self.batch.write_stack(inst, stack)
        for t in stack:
            if t.type == TaskType.FADE and t.incoming is old:
                t.incoming = new
        self.defer(inst, old)

    @staticmethod
    def _owner_of(inst: CharacterInstance, task: Task) -> ClipTask:
        """The clip task (on the stack or following one) whose next task is ``task``."""
        todo = list(inst.stack)
        while todo:
            t = todo.pop()
            if isinstance(t, ClipTask) and t.next is task and not t.handed_over:
                return t
            todo.extend(t.following())
        raise LookupError(f"{inst.name or 'human'}: {task!r} is neither on the stack nor a next task")

    def complete_fade(self, inst: CharacterInstance, fade: FadeTask) -> None:
        """The fade gives back itself and every task between the new one and itself."""
        stack = inst.stack
        if fade.released or fade not in stack:
            return
        hi = stack.index(fade)
        incoming = fade.incoming
        lo = stack.index(incoming) + 1 if incoming in stack else 0
        gone = stack[lo:hi + 1]
        del stack[lo:hi + 1]
        self.batch.write_stack(inst, stack)
        for t in gone:
            self.defer(inst, t)

    def cut(self, inst: CharacterInstance) -> None:
        """Cut every task off the stack (and the queue): all go on the deferred list."""
        gone = inst.stack
        queued = inst.queue
        if not gone and not queued:             # nothing to cut: no row taken for a human the engine
            return                              # does not hold (one already forgotten, say)
        self.batch.write_stack(inst, [])
        self.batch.write_queue(inst, [])
        for t in gone:
            self.defer(inst, t)
        for t in queued:
            self.discard(t)

    def defer(self, inst: CharacterInstance, task: Task) -> None:
        """Put a task on the deferred list (AnimTask_DeferGive, 0x00105640)."""
        if not task.released:
            task.released = True
            self._defer_entry(task, inst)

    def _defer_entry(self, task: Task, inst: CharacterInstance) -> None:
        """One entry at the end of the deferred list: a row pair when the kernels can follow
        it (a task of this world's table, a human this engine holds), else as objects."""
        if inst.engine is self.batch and task.tstore is self.stores.tasks:
            self.deferred_rows.append_row(inst.slot, task.trow)
        else:
            self.deferred_rows.append_odd(task, inst)

    def discard(self, task: Task) -> None:
        """Give a task (and the next tasks it owns) back without its release."""
        for t in task.following():
            self.discard(t)
        if self.pool._take_back(task):
            task.dispose()

