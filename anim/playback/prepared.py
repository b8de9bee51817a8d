"""The Player's prepared commands: a Recipe's rows written directly (anim.playback.recipe).

``RecipeRules`` is the part of ``scuffle.anim.playback.player.Player`` that runs a prepared
command (``prepare``, ``run``): when nothing can refuse or grow, the command becomes a row
of the command buffer (``commands``, anim.playback.cmdbuffer), which one compiled call
(anim.engine.cmdkernel.apply_commands; a command too long for a row: run_rows, at once)
writes before anything reads its rows: the task, cursor, fade and gait rows, the pool's
flags and the human's stack or queue row, from templates kept per command and anim set as
rows of the Player's template arrays (``_Templates`` over ``_TemplateRows``, made by
``_learn_rows``) and the tables' memory blocks, with no handle object
(anim.playback.tasks.task_at makes a row's handle on its first read); otherwise it
runs the command through the handle calls (anim.playback.recipe.expand), whose rows these are,
bit for bit. The checks that raise at the call stay here, before anything is taken.
A part the Player owns (``Player.prepared``), over the world's stores, the pool and the
batch engine's human rows; it finds clips through the Player's look-up and runs a command
it cannot write directly through the Player's own handle calls (its ``host``).

Spec: "Animation tasks", "The task stack", "Fades", "Gait blend".
Original: 0x001054c8 (take a task from the free list), 0x001041f8 AnimCursor_Init,
0x00105678, 0x00105990, 0x0010a310, 0x00106c80 (the constructors), 0x001754e8
TaskStack_InsertBottom, 0x001753d8 TaskStack_Push.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scuffle.anim.engine import cmdkernel as CK
from scuffle.anim.engine.kernel_types import ClipRow, CmdArgs, CmdBlocks, GaitRow
from scuffle.anim.playback.cmdbuffer import CommandBuffer
from scuffle.anim.maths import f32 as F
from scuffle.anim.engine.callbacks import Callback, check_callback
from scuffle.anim.engine.coldstart import kernel_ready
from scuffle.anim.playback.lookup import ClipLookup
from scuffle.anim.data.options import PlayerOptions
from scuffle.anim.playback.recipe import (_BLENDS, _CHANGE, _DIRECTION, _GAIT, _PICK, _PUSH, Arg, Command, Recipe,
                                          _value, check_params, expand)
from scuffle.anim.engine.rules import NEAR_ROWS, change_room
from scuffle.anim.engine.stack import QUEUE_SIZE, STACK_SIZE, CharacterInstance, TaskPool
from scuffle.anim.engine.store import (PROTO_DUR32, PROTO_END, PROTO_EVF0, PROTO_LIMIT32, Stores, _fast_view)
from scuffle.anim.playback.tasks import PICK_SAMPLINGS, WINDOW_RULES, TaskFlags, set_call, viewed_rows
from scuffle.anim.engine.trusted import entry_point, first_call

if TYPE_CHECKING:  # pragma: no cover
    from scuffle.anim.playback.batch import BatchEngine

__all__ = ["RecipeRules", "blend_row", "GAIT_TEMPLATES_KEPT"]

# the handle calls' gait template rows kept (one per set of five clips; forgotten all at once past it)
GAIT_TEMPLATES_KEPT = 64

_CURSOR_INT = int(TaskFlags.NO_VELOCITY | TaskFlags.NO_TURN | TaskFlags.MUTED)
_FEW_TAKEN = 128            # rows taken in one write up to which their handles are let go one by one (no numpy call)
_F32_MAX = F.FLT_MAX
_INT32 = 1 << 31
_WINDOW_INDEX: dict[str, int] = {rule: i for i, rule in enumerate(WINDOW_RULES)}
_PICK_INDEX: dict[str, int] = {rule: i for i, rule in enumerate(PICK_SAMPLINGS)}


class RecipeRules:
    """``prepare`` and ``run`` (see the module docstring): the Player's prepared commands.

    In: the host whose handle calls run what the direct path does not (the Player: its
    ``loop``, ``clip``, ``gait``, ``change``, ``push``, ``enqueue``, ``discard``, ``pool``),
    its look-up, the batch engine (the human rows), the task pool, the world's stores and
    the Player's options (set again when the Player's are)."""

    def __init__(self, host: Any, lookup: ClipLookup, batch: BatchEngine, pool: TaskPool, stores: Stores,
                 options: PlayerOptions):
        self.host = host
        self.lookup = lookup
        self.batch = batch
        self.pool = pool
        self.stores = stores
        self.options = options
        self._cmd_views: tuple | None = None
        self._cmd_entry: Any = None
        self._apply_entry: Any = None
        self._direct_entry: dict[str, Any] = {}  # the handle calls' writers' entry points, by kernel
        self._direct_ok: dict[str, bool] = {}   # _direct_ready's answers, by kernel
        self._gait_kept: dict = {}        # id(protos) -> (protos, ti, tf): _gait_template
        self.cmd_kernel_runs = 0      # commands the compiled writers write (at once, or buffered) (tests)
        self.learnt = 0               # counted up whenever templates are learnt (Player.commands' plans follow it)
        self.templates = _TemplateRows()                 # every command's template rows, one array each
        self.commands = CommandBuffer(self._apply)       # commands as rows, applied in one call (cmdbuffer)
        for t in (stores.tasks, stores.cursors, stores.fades, stores.gaits, batch.humans):
            t.commands = self.commands
        pool.commands = self.commands

    def prepare(self, recipe: Recipe) -> Command:
        """A recipe checked once and made ready to run (``run``). In: a Recipe. Out: a
        Command. Rejected (RecipeError naming the field): an unknown place, no task, a task
        other than a ClipStep before the last, a flags / held field that is not an int in range,
        an anim id that is neither an int nor an Arg, a blend or fade time that is not a
        finite number >= 0, a gait without five ids."""
        return Command(recipe)

    def run(self, inst: CharacterInstance, command: Command, *params) -> None:
        """Run a prepared command on ``inst`` with ``params`` (the recipe's Args): the rows
        its handle calls would leave, written directly when nothing can refuse or grow
        (module docstring), else through the handle calls. Rejected: the wrong number of
        params (RecipeError); then whatever the handle calls reject (TaskPoolExhausted,
        StackFull, QueueFull, PoseStackOverflow, UnknownClip, ValueError), nothing taken.
        A command the direct path can write becomes a row of the command buffer
        (``commands``: anim.playback.cmdbuffer), written in order with the others before
        anything reads what it changes (one with end callbacks at once, its ends after);
        any other goes after them. A steering command (Recipe.steer) on a human with a
        running gait gives that gait its target (its ``set_target``: ValueError for one
        that is not finite) and makes nothing."""
        if command.__class__ is not Command or len(params) != command.n_params:
            check_params(command, params)
        if command.steer is not None:                # a running gait takes the target instead (Recipe.steer)
            g = self.host.running(inst, _GAIT)
            if g is not None:
                g.set_target(_value(command.steer, params))
                return
        tp = self._templates(command, inst.anim_set)
        ends = command.ends
        if tp is not None and (ends is None or _ends_are_data(ends, params)) \
                and self._buffer_rows(inst, command, params, tp):
            if ends is not None:                     # the ends go on its rows: written now
                self.commands.apply()
                self._write_ends(inst, command, params)
            return
        self.commands.apply()                        # what the buffer holds first: the rows in the calls' order
        if tp is None or (ends is not None and not _ends_are_data(ends, params)) \
                or not self._run_rows(inst, command, params, tp):
            expand(self.host, inst, command, params)
            self._learn_rows(inst, command, params)
        elif ends is not None:
            self._write_ends(inst, command, params)

    def _write_ends(self, inst: CharacterInstance, command: Command, params: tuple) -> None:
        """After the direct path (``_run_rows``, which writes no end callback): the task
        table's ``on_end`` of the command's tasks, in the order the handle calls set them
        (the task made first, i.e. the recipe's last, first). The recipe's first task is
        the bottom of the stack after a change, its top after a push, the queue's last
        after an enqueue; each ClipStep's next is its ``nxt``. In: the human, the command,
        its params (its Arg ends checked by ``_ends_are_data``)."""
        h, ts = self.batch.humans, self.stores.tasks
        s = inst.slot
        place = command.place
        if place is _CHANGE:
            r = h.m_stack[s * h.stack_width]
        elif place is _PUSH:
            r = h.m_stack[s * h.stack_width + h.m_depth[s] - 1]
        else:
            r = h.m_queue[s * h.queue_width + h.m_queued[s] - 1]
        rows = [r]                                   # the recipe's tasks, first first
        nxt = ts.m_nxt
        for _ in range(len(command.steps) - 1):
            r = nxt[r]
            rows.append(r)
        for r, end in zip(reversed(rows), command.ends or ()):      # steps: the last task first
            if end.__class__ is Arg:
                end = params[end.pos]
            if end is not None:                      # (None: none, as the handle call leaves)
                set_call(ts, "on_end", r, end)

    def learn(self, inst: CharacterInstance, command: Command, *params) -> None:
        """Make ``command`` ready for the direct path on the human's set with these params,
        without running it: what a run through the handle calls would learn (``_learn_rows``),
        the clips of its ids (and a gait's) found first. A game calls it at a load (a
        fighter joining) so that no first command of a kind takes the handle calls.
        Nothing is written, nothing added to the bank (the set's clips are there from
        Game.add_human / ``register``; an id whose clip is not is left to the run). In: as
        ``run``. Rejected: the wrong number of params (RecipeError); an id the set has no
        clip for (UnknownClip, UnknownAnimId), as a run would raise it."""
        if command.__class__ is not Command or len(params) != command.n_params:
            check_params(command, params)
        s = inst.anim_set
        banked = self.lookup._clip_index
        for op, anim, _, _, _ in command.steps:
            if op == _GAIT:
                if self.lookup._entries_known(s, anim) is None:
                    self.lookup._check_ids(s, anim)         # the look-up's errors, as the run's
                    if all(id(self.lookup._entry(s, i)[0]) in banked for i in anim):
                        self.lookup._entries_of(s, anim)    # (each clip's bank index found, none added)
                continue
            if op in _BLENDS:                        # a mix's, a pick's, a direction's clips
                ids = _blend_ids(op, anim)
                self.lookup._check_ids(s, ids)              # the look-up's errors, as the run's
                for i in ids:
                    entry = self.lookup._entry(s, i)
                    if entry[2] < 0:
                        b = banked.get(id(entry[0]))
                        if b is None:
                            continue
                        entry[2] = b
                    self.lookup._proto_of(entry)
                continue
            aid = _value(anim, params)
            hit = self.lookup._known(s, aid)
            if hit is not None and hit[1] is not None and hit[2] >= 0 and hit[3] is not None:
                continue                             # found before: banked, its proto and rate kept
            entry = self.lookup._entry(s, aid)              # UnknownClip / UnknownAnimId as the run's
            if entry[2] < 0:
                i = banked.get(id(entry[0]))
                if i is None:                        # not in the bank: left to the run
                    continue
                entry[2] = i                         # the index _bank_of finds (bank_index: no clip added)
            self.lookup._proto_of(entry)
            self.lookup.rate_of(s, aid)
        self._learn_rows(inst, command, params)
        self._ready_buffer()

    def _ready_buffer(self) -> None:
        """The command buffer's compiled call made ready at a load (``learn``), not at the
        first buffered command: the tables' views it reads and the kernel's typed entry
        point (about 1 ms once, which would otherwise fall on the update of a game's first
        move), by a call on no row (nothing written, nothing counted). Only when this process
        holds the kernel or numba's cache does (coldstart.kernel_ready): a cold one compiles at
        its first use, beside the step's."""
        if self._apply_entry is not None or not kernel_ready("apply_commands", "cmdkernel"):
            return
        kv = self._views_now()
        if kv is None:
            return
        reg, buf = self.templates, self.commands
        args = (kv[5], kv[3], kv[6], kv[15], reg.ti, reg.tf, buf.bi, buf.bf, 0)
        CK.apply_commands(*args)
        self._apply_entry = entry_point(CK.apply_commands, args) or CK.apply_commands

    def knows(self, inst: CharacterInstance, command: Command, *params) -> bool:
        """Whether ``command`` run on ``inst`` with ``params`` finds its templates (learnt
        for the human's set, this Player and options, every id the params give): then only
        a limit near or a number that is not a plain float sends it through the handle
        calls. In: as ``run``. Rejected: the wrong number of params (RecipeError)."""
        if command.__class__ is not Command or len(params) != command.n_params:
            check_params(command, params)
        tp = self._templates(command, inst.anim_set)
        if tp is None or tp.plan is None:
            return False
        by_id = tp.by_id
        return all(op in _BLENDS or (k, params[anim.pos]) in by_id for k, op, anim, _ in command.arg_steps)

    def _templates(self, command: Command, s) -> "_Templates | None":
        """The command's templates for anim set ``s``, when they were learnt by this Player
        under its present options (the options are frozen: kept with them), else None."""
        per = command._sets.get(id(s))
        if per is None or per[0] is not s or per[1] is not self or per[2] is not self.options:
            return None
        return per[3]

    def _learn_rows(self, inst: CharacterInstance, command: Command, params: tuple) -> None:
        """After a run through the handle calls, keep what the direct path needs for the
        human's set (all found by that run: nothing is added to the bank here), as rows of
        the command's template arrays (_Templates; anim.engine.cmdkernel's TI_* / TF_* columns):
        per step, a clip's cursor template (its proto's end, limit, duration and first event
        frame, its bank index, the id as an int, the cursor flags) and rate, an Arg id's
        by id; a gait's five ids, banks and cursor templates. The options are frozen: kept
        with them."""
        s = inst.anim_set
        tp = self._templates(command, s)
        rows_before = self.templates.n
        if tp is None:
            tp = _Templates(command.steps, self.templates)
            command._sets[id(s)] = (s, self, self.options, tp)
        ready_before = tp.plan is not None
        for k, (op, anim, flags, held, extra) in enumerate(command.steps):
            if op == _GAIT:
                if not tp.known[k]:
                    known = self.lookup._entries_known(s, anim)
                    if known is not None:
                        tp.set_blend(k, op, flags, held, known[2], known[1], known[3])
                continue
            if op in _BLENDS:                        # a mix's, a pick's, a direction's clips, as the run found them
                if not tp.known[k]:
                    ids = _blend_ids(op, anim)
                    hits: list[Any] = [self.lookup._known(s, i) if i.__class__ in self.lookup._id_types else None
                                       for i in ids]
                    if all(h is not None and h[2] >= 0 and h[3] is not None for h in hits) \
                            and all(-_INT32 <= int(i) < _INT32 for i in ids):
                        if op == _PICK:
                            rate = extra[1]
                            tp.set_blend(k, op, flags, held, [int(i) for i in ids], [h[2] for h in hits],
                                         [h[3] for h in hits], _PICK_INDEX[self.options.pick], rate)
                        else:
                            tp.set_blend(k, op, flags, held, [int(i) for i in ids], [h[2] for h in hits],
                                         [h[3] for h in hits])
                continue
            aid: Any = _value(anim, params)
            kind = aid.__class__
            if kind not in self.lookup._id_types:
                continue
            hit = self.lookup._known(s, aid)
            if hit is None or hit[2] < 0 or hit[3] is None:
                continue
            rate = hit[1]                            # (rate_of's, kept with the id once found)
            if rate is None:
                rate = self.lookup.rate_of(s, aid)
            if not (rate.__class__ is float and -_F32_MAX <= rate <= _F32_MAX):
                continue                             # numpy's casts: the handle calls, always
            aid = int(aid)
            if not -_INT32 <= aid < _INT32:
                continue
            if anim.__class__ is Arg:                # a row per step and id: a row holds the step's op,
                key = (k, _value(anim, params))      # flags, held and blend beside the clip's
                row = tp.by_id.get(key)
                if row is None:
                    row = tp.by_id[key] = tp.new_row()
            else:
                row = tp.base[k]
                tp.known[k] = True
            tp.set_clip(row, op, flags, held, extra, hit[3], hit[2], aid, rate)
        tp.ready = all(tp.known)
        if not tp.ready:
            tp.plan = None
        elif tp.plan is None:                        # (once: the command and the options are frozen)
            tp.plan = _plan(command, self.options)
        if self.templates.n != rows_before or (tp.plan is not None) != ready_before:
            self.learnt += 1                         # a row or a plan new: Player.commands' plans made again

    # ---------------------------------------------------------------- the rows, directly
    def _views_now(self) -> tuple | None:
        """``_views``, kept while no table's arrays were replaced (the world's layout signal),
        the human table is the same and the pool's flags are the same array; None when an
        array is not a plain view into its table's block."""
        kv = self._cmd_views
        if kv is None or kv[0] != self.stores.signal.now or kv[2] is not self.batch.humans or kv[3] is not self.pool._out:
            kv = self._views()
        return kv

    def _views(self) -> tuple | None:
        """What the direct path reads and passes to anim.engine.cmdkernel.run_rows: the five
        tables' blocks as its BLOCK_VIEWS, ``lay`` (each array's offset in its block, in
        its own items) and the fast views the Python checks read; kept while no table's arrays were replaced
        (the world's layout signal, store.LayoutSignal) and the pool's flags are the same array. None when an array
        is not a plain view into its table's block (the handle calls then)."""
        st = self.stores
        h = self.batch.humans
        tables = (st.tasks, st.cursors, st.fades, st.gaits, h)
        lay = np.zeros(CK.LAY_SIZE, np.int64)
        blocks, bases = [], []
        for t in tables:
            blk = getattr(t, "block", None)
            if not (isinstance(blk, np.ndarray) and blk.dtype == np.uint8 and blk.ndim == 1 and blk.nbytes % 8 == 0):
                return None
            fl, base = blk.flags, blk.ctypes.data            # (each address read once: about 1 µs a read)
            if not (fl.c_contiguous and fl.writeable and fl.aligned and base % 8 == 0):
                return None
            blocks.append(blk)
            bases.append(base)
        for i, (ti, name, dt) in enumerate(CK.COLUMNS):
            t, blk = tables[ti], blocks[ti]
            arr = getattr(t, name, None)
            if not (isinstance(arr, np.ndarray) and arr.dtype == dt and arr.flags.c_contiguous
                    and arr.dtype.isnative):
                return None
            off = arr.ctypes.data - bases[ti]
            if off < 0 or off + arr.nbytes > blk.nbytes or off % arr.itemsize:
                return None
            lay[i] = off // arr.itemsize
        if h.stack.ndim != 2 or h.queue.ndim != 2:
            return None
        lay[CK.LAY_SIZE - 2], lay[CK.LAY_SIZE - 1] = h.stack.shape[1], h.queue.shape[1]
        out = self.pool.out
        if not (isinstance(out, np.ndarray) and out.dtype == np.bool_ and out.ndim == 1 and out.flags.c_contiguous
                and out.flags.writeable and out.flags.aligned):
            return None
        ts = st.tasks
        for t in tables:                             # a table the world replaced: the buffer's hooks on it too
            t.commands = self.commands
        typed = CmdBlocks(*(blocks[ti].view(dt) for ti, dt in CK.BLOCK_VIEWS))
        # (the other tables whose freed rows wait to be reset: those with defaults to reset to)
        kv = self._cmd_views = (st.signal.now, st, h, out, ts, typed, lay, h.m_depth, h.m_queued, h.gen,
                                h.m_speed, ts.m_n_free, ts.m_free_rows,
                                tuple(t for t in (st.cursors, st.fades, st.gaits) if t.resets),
                                (st.cursors.m_n_free, st.fades.m_n_free, st.gaits.m_n_free),
                                (ts.free_at, st.cursors.free_at, st.fades.free_at, st.gaits.free_at))
        # the entry point (_cmd_entry) is kept: every argument types as before (the arrays
        # checked above: their dtype, one dimension, C order, writable and aligned; the
        # templates' own; the scalars a Python int or float, as _run_rows makes them)
        return kv

    def _checks(self, inst: CharacterInstance, command: Command, params: tuple, tp: "_Templates",
                extra_tasks: int) -> tuple | None:
        """What the direct path writes ``command`` with (the views, the human's slot and
        depth, the speed, the fade, a gait's target and value, ``vnone``), or None when it
        cannot be sure the rows are the handle calls' (the module docstring's cases): the
        checks that raise at the call (a full stack or queue, the pool exhausted with
        ``extra_tasks`` more taken) fall to the handle calls, which raise them. What the
        options and the command decide is ``tp.plan`` (``_plan``).
        Original: 0x001754e8 / 0x001753d8 (insert, push: their room)."""
        plan = tp.plan
        if plan is None or inst.engine is not self.batch:
            return None
        pool = self.pool
        kv = self._views_now()
        if kv is None:
            return None
        s = inst.slot
        rec = inst.record
        if rec.row != s or kv[9][s] != rec.gen or rec.table is not kv[2] or s.__class__ is not int:
            return None
        code, room, n_tasks, fade = plan[0], plan[1], plan[2], plan[7]
        n = kv[7][s]
        if (kv[8][s] if code == CK.PLACE_ENQUEUE else n) > room:
            return None                              # an early finish could act, or no room: the handle calls
        if fade.__class__ is Arg:
            fade = params[fade.pos]
            if not (fade.__class__ is float and 0.0 <= fade <= _F32_MAX):
                return None
        if pool._n_out + extra_tasks + n_tasks > pool.capacity:
            return None
        speed = kv[10][s]
        if not -_F32_MAX <= speed <= _F32_MAX:
            return None
        # the run's Arg ids' template rows, a gait's target and value
        target = value = 0.0
        vnone = 0
        if command.arg_steps:
            sel, sel4 = tp.sel_mv, tp.sel4
            for k, op, anim, extra in command.arg_steps:
                if op in _BLENDS and op != _GAIT:   # a mix's weight, a pick's value, a direction
                    target = extra[0]
                    if target.__class__ is Arg:
                        target = params[target.pos]
                        if not (target.__class__ is float and -_F32_MAX <= target <= _F32_MAX):
                            return None
                    target = float(target)
                elif op == _GAIT:
                    target, value = extra
                    if target.__class__ is Arg:
                        target = params[target.pos]
                        if not (target.__class__ is float and -_F32_MAX <= target <= _F32_MAX):
                            return None
                    if value is None:
                        vnone, value = 1, 0.0
                    elif value.__class__ is Arg:
                        value = params[value.pos]
                        if not (value.__class__ is float and -_F32_MAX <= value <= _F32_MAX):
                            return None
                    target, value = float(target), float(value)
                else:
                    row = tp.by_id.get((k, params[anim.pos]))
                    if row is None:
                        return None
                    sel[k] = row
                    if sel4 is not None:
                        sel4[k] = row
        return kv, s, n, speed, fade, target, value, vnone

    def _settle(self, kv: tuple) -> None:
        """Rows the flush gave back and has not reset yet (a callback's command in the middle
        of it) reset before a kernel takes them (Table.settle)."""
        ts = kv[4]
        if ts.unsettled:
            ts.settle()
        for t in kv[13]:
            if t.unsettled:
                t.settle()

    def _run_rows(self, inst: CharacterInstance, command: Command, params: tuple, tp: "_Templates") -> bool:
        """The command's rows written at once (anim.engine.cmdkernel.run_rows, one call), or
        False (nothing written) when the direct path cannot be sure they are the handle
        calls' (``_checks``). Original: 0x001054c8 (take a task), 0x001041f8
        AnimCursor_Init, 0x001754e8 / 0x001753d8 (insert, push)."""
        got = self._checks(inst, command, params, tp, 0)
        if got is None:
            return False
        kv, s, n, speed, fade, target, value, vnone = got
        self._settle(kv)
        typed, lay, t_nf = kv[5], kv[6], kv[11]
        tn = t_nf[0]
        reg = self.templates
        plan = tp.plan
        assert plan is not None                      # a command runs once its template is ready
        args = (typed, kv[3], lay, kv[15], reg.ti, reg.tf, tp.sel,
                CmdArgs(s, n, plan[0], plan[6], speed, fade, target, value, vnone))
        call = self._cmd_entry
        if call is None:
            added, self._cmd_entry = first_call(CK.run_rows, args, self.batch.humans.in_use)
        else:
            added = call(*args)
        if added < 0:
            return False
        self.pool._n_out += added
        self.cmd_kernel_runs += 1
        self._forget_handles(kv, t_nf[0], tn)
        return True

    def _buffer_rows(self, inst: CharacterInstance, command: Command, params: tuple, tp: "_Templates") -> bool:
        """The command as a row of the command buffer (``commands``), or False (nothing
        buffered) when the direct path cannot write it (``_checks``: the handle calls then
        raise what they raise), it has more steps than a row holds, or the free lists with
        what the buffer will take leave no room (the handle calls grow the tables). A human
        with a command waiting has the buffer written first (its rows read as they are)."""
        buf = self.commands
        if buf.n and inst.slot in buf.due:
            buf.apply()
        got = self._checks(inst, command, params, tp, buf.tasks)
        if got is None or tp.sel4 is None:
            return False
        kv, s, n, speed, fade, target, value, vnone = got
        plan = tp.plan
        assert plan is not None                      # a command runs once its template is ready
        code, _, n_tasks, n_cursors, n_fades, n_gaits, window, _ = plan
        top = kv[11][0] - buf.tasks                  # the task free list's top when this command runs
        nf = kv[14]                                  # the cursor, fade and gait tables' free counts
        if top < n_tasks or nf[0][0] - buf.cursors < n_cursors or nf[1][0] - buf.fades < n_fades \
                or nf[2][0] - buf.gaits < n_gaits:
            return False
        # a row past the pool's flags (one the list's top gives, or one near the human's
        # stack bottom: cmdkernel._fits): the handle calls grow them
        ts = kv[4]
        if ts.capacity > len(kv[3]) and (max(kv[12][top - n_tasks:top]) >= len(kv[3])
                                         or (n > 0 and min(kv[2].m_stack[s * kv[2].stack_width] + NEAR_ROWS,
                                                           ts.capacity - 1) >= len(kv[3]))):
            return False
        buf.append(code, s, len(tp.base), window, vnone, tp.sel4, speed, fade, target, value, n_tasks, n_cursors,
                   n_fades, n_gaits)
        self.cmd_kernel_runs += 1
        return True

    def _apply(self, buf: CommandBuffer) -> None:
        """Write the command buffer's rows, in order, in one call (anim.engine.cmdkernel
        .apply_commands), and empty it. A row the kernel cannot write is an engine bug (the
        call checked its room): RuntimeError, the rows before it written."""
        n = buf.n
        kv = self._views_now()
        if kv is None:
            buf.clear()
            raise RuntimeError("command buffer: the tables are no longer plain blocks; its commands are lost")
        self._settle(kv)
        t_nf = kv[11]
        tn = t_nf[0]
        reg = self.templates
        args = (kv[5], kv[3], kv[6], kv[15], reg.ti, reg.tf, buf.bi, buf.bf, n)
        call = self._apply_entry
        try:
            if call is None:
                added, self._apply_entry = first_call(CK.apply_commands, args, self.batch.humans.in_use)
            else:
                added = call(*args)
        finally:
            buf.clear()
        if added < 0:
            raise RuntimeError(f"command buffer: row {-added - 1} of {n} found no room (the call's checks missed it)")
        self.pool._n_out += added
        buf.applied += n
        buf.calls += 1
        self._forget_handles(kv, t_nf[0], tn)

    def clip_rows(self, t_hint: int, c_hint: int, ttype: int, rate: float, flags: int, held: int, proto: tuple,
                  bank: int, anim: int, cflags: int) -> int:
        """A handle constructor's single-clip task written in one compiled call
        (anim.engine.cmdkernel.clip_rows: the cursor row near ``c_hint``, the task row near
        ``t_hint``, their columns and the task's pool flag), the command buffer written
        first: the task row << 32 | the cursor row << 1 | 1 when the pool's flag was newly
        set (the pool's count and ``made`` are the caller's), or -1 with nothing written
        (the tables are not plain blocks, a free list is empty, the pool's flags fall
        short: the Python writers then, which grow them). In: plain ints and floats, the
        clip's ``cursor_proto``. Original: 0x001054c8 (take a task), 0x001041f8
        AnimCursor_Init."""
        kv = self._kernel_views()
        if kv is None:
            return -1
        args = (kv[5], kv[3], kv[6], kv[15], t_hint, c_hint,
                ClipRow(ttype, rate, flags, held, proto[PROTO_END], proto[PROTO_LIMIT32], proto[PROTO_DUR32], bank, anim,
                        cflags, proto[PROTO_EVF0]))
        return self._direct("clip_rows", args)

    def gait_rows(self, t_hint: int, c_hint: int, ids, banks, protos, gait: GaitRow) -> int:
        """A handle constructor's gait written in one compiled call (anim.engine.cmdkernel
        .gait_rows: its task row near ``t_hint``, its gait row, the pair's two cursor rows
        near ``c_hint``, their columns and the task's pool flag), as ``clip_rows`` writes a
        clip: the task row << 32 | the gait row << 1 | 1 when the pool's flag was newly set,
        or -1 with nothing written (the Python writers then). In: the five clips' ids, bank
        indices and cursor_protos (the look-up's entry), written once per entry as a
        prepared gait step's template row (``_gait_template``). Original: 0x0010a310."""
        kv = self._kernel_views()
        if kv is None:
            return -1
        ti, tf = self._gait_template(ids, banks, protos)
        args = (kv[5], kv[3], kv[6], kv[15], t_hint, c_hint, ti, tf, gait)
        return self._direct("gait_rows", args)

    def _gait_template(self, ids, banks, protos) -> tuple[np.ndarray, np.ndarray]:
        """A gait's five clips as one template row (``ti``, ``tf``: a prepared gait step's,
        ``blend_row``; its flags and held bits are the call's), made once per look-up entry
        (kept while ``protos`` is the look-up's same list)."""
        got = self._gait_kept.get(id(protos))
        if got is None or got[0] is not protos:
            ti, tf = np.zeros((1, CK.TI_WIDTH), np.int64), np.zeros((1, CK.TF_WIDTH), np.float64)
            blend_row(ti[0], tf[0], _GAIT, 0, 0, ids, banks, protos)
            if len(self._gait_kept) >= GAIT_TEMPLATES_KEPT:
                self._gait_kept.clear()
            got = self._gait_kept[id(protos)] = (protos, ti, tf)
        return got[1], got[2]

    def change_rows(self, slot: int, n: int, speed: float, duration: float, tr: int, aid: int) -> int:
        """A change's common path written in one compiled call (anim.engine.cmdkernel
        .change_rows: the fade's task and fade rows, their columns and pool flag, the link
        to task row ``tr``, the two stack slots of human row ``slot`` over its ``n`` tasks,
        the placed flags and the anim id ``aid`` when >= -1), as ``clip_rows`` writes a
        clip: the fade's task row << 32 | its fade row << 1 | 1 when the pool's flag was
        newly set, or -1 with nothing written (the Python writers then).
        Original: 0x00106c80, 0x001754e8, 0x001753d8."""
        kv = self._kernel_views()
        if kv is None:
            return -1
        args = (kv[5], kv[3], kv[6], kv[15], slot, n, speed, duration, tr, aid)
        return self._direct("change_rows", args)

    def _direct(self, name: str, args: tuple) -> int:
        """A handle call's compiled writer ``name`` (anim.engine.cmdkernel) called on
        ``args``: through its kept entry point; the first time -1 (nothing written) when it
        is not ready (``_direct_ready``), else its answer, and its entry point kept for the
        next calls (none while a cold start runs the kernels as Python: trusted.first_call)."""
        call = self._direct_entry.get(name)
        if call is not None:
            return call(*args)
        if not self._direct_ready(name):
            return -1
        got, entry = first_call(getattr(CK, name), args, self.batch.humans.in_use)
        if entry is not None:
            self._direct_entry[name] = entry
        return got

    def _direct_ready(self, name: str) -> bool:
        """Whether the handle calls' compiled writer ``name`` (anim.engine.cmdkernel) runs
        without compiling: loaded, compiled or in numba's cache (coldstart.kernel_ready),
        asked once per Player. On a cold install those rows are the Python writers' (the
        same rows) rather than a compile of seconds at a game's command; the background
        compile caches the writers for the next run."""
        ok = self._direct_ok.get(name)
        if ok is None:
            ok = self._direct_ok[name] = kernel_ready(name, "cmdkernel")
        return ok

    def compile_direct(self) -> None:
        """The handle calls' compiled writers taken from now on, compiled at their first
        call when no cache holds them (the warm-up's Player: anim.playback.warmup compiles
        every kernel a game may call)."""
        self._direct_ok.update({name: True for name in CK.HANDLE_KERNELS})

    def _kernel_views(self) -> tuple | None:
        """The views a handle call's compiled writer takes (``_views``, kept while valid),
        the command buffer written and the rows the flush gave back reset first; None
        when the tables are not plain blocks."""
        buf = self.commands
        if buf.n:
            buf.apply()
        kv = self._views_now()
        if kv is not None:
            self._settle(kv)
        return kv

    def _forget_handles(self, kv: tuple, lo: int, hi: int) -> None:
        """The task rows the compiled writers took (the free list's ``lo``..``hi``) hold no
        handle (``views``: a handle is made on its first read, anim.playback.tasks.task_at).
        Of many rows, only those flagged as maybe holding one (``viewed_rows``: as a rule
        none, a row's handle is let go as its row goes back) are read."""
        ts = kv[4]
        views = ts.views
        if hi - lo <= _FEW_TAKEN:
            taken = kv[12][lo:hi].tolist()                       # (Python ints: the list's own index)
            top = max(taken) + 1 if taken else 0
        else:
            rows = np.asarray(kv[12][lo:hi])                     # (the same memory, as an array)
            top = int(rows.max()) + 1
            flagged = viewed_rows(ts, rows)
            taken = (rows if flagged is None else flagged).tolist()
        if top > len(views):                                     # grown to the rows taken (as write_task_row grows it)
            views.extend([None] * (top - len(views)))
        for tr in taken:
            views[tr] = None


def blend_row(ti: np.ndarray, tf: np.ndarray, op: int, flags: int, held: int, ids, banks, protos,
              sampling: int = 0, rate: float = 0.0) -> None:
    """One template row (``ti``, ``tf``: a row of the int64 and float64 parts) of a step
    over several clips (a gait's five, a mix's two, a pick's four, a direction's eight):
    the task type ``op``, flags and held bits, the clips' ids and bank indices, each
    clip's cursor template (cursor_proto: end test, first event frame, limit, duration),
    a pick's sampling rule's index and rate (anim.engine.cmdkernel's TI_* / TF_*)."""
    ti[CK.TI_OP], ti[CK.TI_FLAGS], ti[CK.TI_HELD] = op, flags, held
    for j in range(len(ids)):
        ti[CK.TI_IDS + j], ti[CK.TI_BANKS + j] = int(ids[j]), banks[j]
        p = protos[j]
        ti[CK.TI_ENDS + j], ti[CK.TI_EVF0S + j] = p[PROTO_END], p[PROTO_EVF0]
        tf[CK.TF_LIMITS + j], tf[CK.TF_DURS + j] = p[PROTO_LIMIT32], p[PROTO_DUR32]
    ti[CK.TI_SAMPLING] = sampling
    tf[CK.TF_PICK_RATE] = rate


def _plan(command: Command, opts: PlayerOptions) -> tuple | None:
    """What the direct path's checks take from the command and the options, once: the place
    (cmdkernel's PLACE_*), the deepest stack (a change, a push) or the longest queue (an
    enqueue) it is written on directly (no early finish can act, the rows fit: a change by
    anim.engine.rules.change_room), the task, cursor, fade and gait rows it takes, the
    blend window's index and the fade (a float, or its Arg). None: never directly
    (``refuse_deep_chains``: the handle calls' dry run decides)."""
    if opts.refuse_deep_chains:
        return None
    fade: Any = 0.0
    if command.place is _CHANGE:
        code = CK.PLACE_CHANGE
        room = max((n for n in range(STACK_SIZE + 1) if change_room(n, opts.early_finish_above)), default=-1)
        fade = command.fade if command.fade.__class__ is Arg else float(command.fade)
    elif command.place is _PUSH:
        code = CK.PLACE_PUSH
        room = min(opts.early_finish_above, STACK_SIZE - 1)
    else:
        code = CK.PLACE_ENQUEUE
        room = QUEUE_SIZE - 1
    return (code, room, command.n_tasks, command.n_cursors, 1 if code == CK.PLACE_CHANGE else 0, command.n_gaits,
            _WINDOW_INDEX[opts.blend_window], fade)


def _blend_ids(op: int, anim: Any) -> list:
    """The anim ids a blend step's clips play (its template's order): a direction's
    base .. base + 7, the others' own."""
    if op == _DIRECTION:
        return [anim + d for d in range(8)]
    return list(anim)


def _ends_are_data(ends: tuple, params: tuple) -> bool:
    """Every Arg end callback of a run is None or a Callback as check_callback keeps it
    (data, a str kind, plain arguments), so the direct path may write it; anything else
    (a callable, a tuple to convert, bad data) goes through the handle calls and their
    checks."""
    for e in ends:
        if e.__class__ is Arg:
            v = params[e.pos]
            if v is None:
                continue
            if v.__class__ is not Callback:
                return False
            try:
                if check_callback(v, "on_end") is not v:
                    return False
            except ValueError:                       # CallbackError: the handle call raises it
                return False
    return True


class _TemplateRows:
    """Every prepared command's template rows of one Player (anim.engine.cmdkernel's TI_* /
    TF_* columns), in two arrays (``ti``, ``tf``), so that one compiled call writes the
    commands of any recipe (the command buffer's rows name them by row). Grown by doubling
    (at learn time, not per run: the rows keep their numbers)."""

    __slots__ = ("ti", "tf", "n")

    def __init__(self, capacity: int = 64):
        self.ti = np.zeros((capacity, CK.TI_WIDTH), np.int64)
        self.tf = np.zeros((capacity, CK.TF_WIDTH), np.float64)
        self.n = 0

    def new_row(self) -> int:
        """A new row (at zeros)."""
        r = self.n
        if r == self.ti.shape[0]:
            self.ti = np.concatenate([self.ti, np.zeros_like(self.ti)])
            self.tf = np.concatenate([self.tf, np.zeros_like(self.tf)])
        self.n = r + 1
        return r


class _Templates:
    """A command's template rows for one anim set, rows of the Player's ``_TemplateRows``:
    one per step (``base``: a fixed id's, a gait's), then one per Arg step and id met
    (``by_id``: (step, id) -> row: a row holds its step's op, flags, held and blend);
    ``sel`` the row each step runs with (an Arg step's set per run, through ``sel_mv``; and
    in ``sel4``, padded as a command buffer's row holds them);
    ``known`` per step, ``ready`` when every fixed step is."""

    __slots__ = ("reg", "base", "sel", "sel_mv", "sel4", "by_id", "known", "ready", "plan")

    def __init__(self, steps: tuple, reg: _TemplateRows):
        self.reg = reg
        self.base = [reg.new_row() for _ in steps]
        self.sel = np.array(self.base, dtype=np.int64)
        self.sel_mv = _fast_view(self.sel)              # a memoryview: one write per Arg step
        # the same rows as a command buffer's row holds them (None: too many steps to buffer)
        self.sel4 = (self.base + [0] * (CK.B_MAX_STEPS - len(steps))) if len(steps) <= CK.B_MAX_STEPS else None
        self.by_id: dict = {}
        self.known = [st[1].__class__ is Arg for st in steps]
        self.ready = all(self.known)
        self.plan: tuple | None = None                  # _plan's, once ready (RecipeRules._learn_rows)

    def new_row(self) -> int:
        """A new row for an Arg id."""
        return self.reg.new_row()

    def set_clip(self, row: int, op: int, flags: int, held: int, blend: float, proto: tuple, bank: int, aid: int,
                 rate: float) -> None:
        """A clip's row: what cursor_row writes from ``proto`` (cursor_proto: end, limit,
        duration, first event frame), its bank index, id, cursor flags; the task's rate."""
        ti, tf = self.reg.ti[row], self.reg.tf[row]
        ti[CK.TI_OP], ti[CK.TI_FLAGS], ti[CK.TI_HELD] = op, flags, held
        ti[CK.TI_END], ti[CK.TI_BANK], ti[CK.TI_AID] = proto[PROTO_END], bank, aid
        ti[CK.TI_CFLAGS], ti[CK.TI_EVF0] = flags & _CURSOR_INT, proto[PROTO_EVF0]
        tf[CK.TF_BLEND], tf[CK.TF_LIMIT], tf[CK.TF_DUR], tf[CK.TF_RATE] = (blend, proto[PROTO_LIMIT32],
                                                                           proto[PROTO_DUR32], rate)

    def set_blend(self, k: int, op: int, flags: int, held: int, ids, banks, protos, sampling: int = 0,
                  rate: float = 0.0) -> None:
        """Step ``k``'s row of a step over several clips (a gait's five, a mix's two, a
        pick's four, a direction's eight): their ids, banks, and each clip's cursor
        template; a pick's sampling rule's index and rate."""
        row = self.base[k]
        blend_row(self.reg.ti[row], self.reg.tf[row], op, flags, held, ids, banks, protos, sampling, rate)
        self.known[k] = True
