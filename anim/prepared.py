"""The Player's prepared commands: a Recipe's rows written directly (anim.recipe).

``RecipeRules`` is the part of ``scuffle.anim.player.Player`` that runs a prepared
command (``prepare``, ``run``): when nothing can refuse or grow it writes the task,
cursor, fade and gait rows, the pool's accounting and the human's stack or queue row
itself, from templates kept per command and anim set (``_learn_rows``), with no handle
object (anim.tasks.task_at makes a row's handle on its first read); otherwise it runs the
command through the handle calls (anim.recipe.expand), whose rows these are, bit for bit.
A mixin on the stack rules; reads ``options``, ``pool``, ``stores`` and ``batch``.

Spec: "Animation tasks", "The task stack", "Fades", "Gait blend".
Original: 0x001054c8 (take a task from the free list), 0x001041f8 AnimCursor_Init,
0x00105678, 0x00105990, 0x0010a310, 0x00106c80 (the constructors), 0x001754e8
TaskStack_InsertBottom, 0x001753d8 TaskStack_Push.
"""
from __future__ import annotations

import math
import struct
from typing import Any

from . import f32 as F
from .callbacks import Callback, check_callback
from .recipe import _CHANGE, _CLIP, _GAIT, _PUSH, Arg, Command, Recipe, _value, check_params, expand
from .sampler import CursorFlags
from .stack import QUEUE_SIZE, STACK_SIZE, CharacterInstance
from .stackrules import StackRules
from .store import LAYOUT_EPOCH
from .tasks import GAIT_ALONE_HIGH, GAIT_SPEED, GAIT_STEPS, WINDOW_RULES, TaskFlags, TaskType

__all__ = ["RecipeRules"]

_CURSOR_INT = int(TaskFlags.NO_VELOCITY | TaskFlags.NO_TURN | TaskFlags.MUTED)
_MUTED_INT = int(CursorFlags.MUTED)
_CONTINUOUS_INT = int(TaskFlags.CONTINUOUS)
_F32_MAX = F.FLT_MAX
_STEP0, _STEP1, _STEP2 = GAIT_STEPS
_FADE_INT = int(TaskType.FADE)
_WINDOW_INDEX: dict[str, int] = {rule: i for i, rule in enumerate(WINDOW_RULES)}



_F32 = struct.Struct("<f")           # anim.f32.f32's rounding (to nearest), without its overflow case
_PACK, _UNPACK = _F32.pack, _F32.unpack


def _f32_04(v: float) -> float:
    """GaitTask._clamp of a finite float: clamped to 0-4, as a float32 value."""
    if not 0.0 <= v <= 4.0:
        v = min(max(v, 0.0), 4.0)
    return _UNPACK(_PACK(v))[0]


class RecipeRules(StackRules):
    """``prepare`` and ``run`` (see the module docstring), on the stack rules; Player is made on them."""

    _cmd_views: tuple | None = None

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
        StackFull, QueueFull, PoseStackOverflow, UnknownClip, ValueError), nothing taken."""
        if command.__class__ is not Command or len(params) != command.n_params:
            check_params(command, params)
        s = inst.anim_set
        per = command._sets.get(id(s))
        ends = command.ends
        if per is None or per[0] is not s or per[1] is not self or per[2] is not self.options \
                or (ends is not None and not _ends_are_data(ends, params)) \
                or not self._run_rows(inst, command, params, per[3], per[4]):
            expand(self, inst, command, params)
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
        on_end = ts.on_end
        for r, end in zip(reversed(rows), command.ends):      # steps: the last task first
            if end.__class__ is Arg:
                end = params[end.pos]
            if end is not None:                      # (None: no entry, as the handle call leaves)
                on_end[r] = end

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
        banked = self._clip_index
        for op, anim, _, _, _ in command.steps:
            if op == _GAIT:
                if self._entries_known(s, anim) is None:
                    self._check_ids(s, anim)         # the look-up's errors, as the run's
                    if all(id(self._entry(s, i)[0]) in banked for i in anim):
                        self._entries_of(s, anim)    # (each clip's bank index found, none added)
                continue
            aid = _value(anim, params)
            entry = self._entry(s, aid)              # UnknownClip / UnknownAnimId as the run's
            if entry[2] < 0:
                i = banked.get(id(entry[0]))
                if i is None:                        # not in the bank: left to the run
                    continue
                entry[2] = i                         # the index _bank_of finds (bank_index: no clip added)
            self._proto_of(entry)
            self.rate_of(s, aid)
        self._learn_rows(inst, command, params)

    def _learn_rows(self, inst: CharacterInstance, command: Command, params: tuple) -> None:
        """After a run through the handle calls, keep what the direct path needs for the
        human's set (all found by that run: nothing is added to the bank here): per step, a
        clip's cursor template (its proto's end, limit, duration and first event frame, its
        bank index, the id as an int, the cursor flags) and rate, an Arg id's by id, a
        gait's ids, banks and protos (with a constant value, its two cursor templates and
        its value, pair and leader too). The options are frozen: kept with them."""
        s = inst.anim_set
        opts = self.options
        per = command._sets.get(id(s))
        if per is None or per[0] is not s or per[1] is not self or per[2] is not opts:
            per = (s, self, opts, [None] * len(command.steps), {})
            command._sets[id(s)] = per
        fixed, by_id = per[3], per[4]
        for k, (op, anim, flags, held, extra) in enumerate(command.steps):
            if op == _GAIT:
                if fixed[k] is None:
                    known = self._entries_known(s, anim)
                    if known is not None:
                        fixed[k] = _gait_template(known[2], known[1], known[3], flags, extra)
                continue
            aid: Any = _value(anim, params)
            kind = aid.__class__
            if kind not in self._id_types:
                continue
            hit = self._known(s, aid)
            if hit is None or hit[2] < 0 or hit[3] is None:
                continue
            rate = self.rate_of(s, aid)
            if not (rate.__class__ is float and -_F32_MAX <= rate <= _F32_MAX):
                continue                             # numpy's casts: the handle calls, always
            proto = hit[3]
            tpl = (proto[1], proto[7], proto[6], hit[2], int(aid), flags & _CURSOR_INT, proto[5], rate)
            if anim.__class__ is Arg:
                by_id[aid] = tpl
            else:
                fixed[k] = tpl

    # ---------------------------------------------------------------- the rows, directly
    def _views(self) -> tuple:
        """The fast views the direct path writes, kept while no table's arrays were replaced
        (store.LAYOUT_EPOCH)."""
        st = self.stores
        ts, cs, fd, gs, h = st.tasks, st.cursors, st.fades, st.gaits, self.batch.humans
        tv = (ts.m_n_free, ts.m_free_rows, ts.m_live, ts.m_type, ts.m_rate, ts.m_flags, ts.m_held, ts.m_c0, ts.m_c1,
              ts.m_aux, ts.m_nxt, ts.m_blend, ts.m_window, ts.m_placed, ts.m_incoming, ts.m_speed)
        cv = (cs.m_n_free, cs.m_free_rows, cs.m_live, cs.m_end, cs.m_limit, cs.m_dur, cs.m_bank, cs.m_anim,
              cs.m_flags, cs.m_evf0, cs.m_evf, cs.m_t, cs.m_frame, cs.m_ev, cs.m_at_end)
        fv = (fd.m_n_free, fd.m_free_rows, fd.m_live, fd.m_el, fd.m_dur)
        gv = (gs.m_n_free, gs.m_free_rows, gs.m_live, gs.m_id0, gs.m_id1, gs.m_id2, gs.m_id3, gs.m_id4, gs.m_b0,
              gs.m_b1, gs.m_b2, gs.m_b3, gs.m_b4, gs.m_value, gs.m_target, gs.m_lower, gs.m_leader)
        hv = (h.m_depth, h.m_queued, h.m_stack, h.stack_width, h.m_queue, h.queue_width, h.m_flags, h.m_anim,
              h.m_speed, h.gen)
        kv = self._cmd_views = (LAYOUT_EPOCH[0], st, h, ts, cs, fd, gs, tv, cv, fv, gv, hv)
        return kv

    def _run_rows(self, inst: CharacterInstance, command: Command, params: tuple, fixed: list, by_id: dict) -> bool:
        """The command's rows written directly, or False (nothing written) when the direct
        path cannot be sure they are the handle calls' (the module docstring's cases).
        Original: 0x001054c8 (take a task), 0x001041f8 AnimCursor_Init, 0x001754e8 /
        0x001753d8 (insert, push)."""
        batch = self.batch
        if inst.engine is not batch:
            return False
        kv = self._cmd_views
        if kv is None or kv[0] != LAYOUT_EPOCH[0] or kv[1] is not self.stores or kv[2] is not batch.humans:
            kv = self._views()
        _, _, h, ts, cs, fd, gs, tv, cv, fv, gv, hv = kv
        h_depth, h_queued, h_stack, stack_width, h_queue, queue_width, h_flags, h_anim, h_speed, h_gen = hv
        s = inst.slot
        rec = inst.record
        if rec.table is not h or rec.row != s or h_gen[s] != rec.gen:
            return False
        opts = self.options
        place = command.place
        n = h_depth[s]
        if place is _CHANGE:
            fade = command.fade
            if fade.__class__ is Arg:
                fade = params[fade.pos]
                if not (fade.__class__ is float and 0.0 <= fade <= _F32_MAX):
                    return False
            if not (n + 1 <= opts.early_finish_above and n + 2 <= STACK_SIZE):
                return False
            if not fv[0][0]:
                return False
        elif place is _PUSH:
            if not (n <= opts.early_finish_above and n < STACK_SIZE):
                return False
        elif h_queued[s] >= QUEUE_SIZE:
            return False
        if opts.refuse_deep_chains:
            return False
        pool = self.pool
        k_tasks = command.n_tasks
        n_out = pool.n_out
        if n_out + k_tasks > pool.capacity:
            return False
        (t_nf, t_free, t_live, t_type, t_rate, t_flags, t_held, t_c0, t_c1, t_aux, t_nxt, t_blend, t_window,
         t_placed, t_incoming, t_speed) = tv
        tn = t_nf[0]
        if tn < k_tasks:
            return False
        out = pool.m_out
        n_pool = len(out)
        if n_pool < ts.capacity:                         # the pool's flags may not reach the rows taken
            for i in range(tn - k_tasks, tn):
                if t_free[i] >= n_pool:
                    return False
        c_nf = cv[0]
        cn = c_nf[0]
        if cn < command.n_cursors or (command.n_gaits and gv[0][0] < command.n_gaits):
            return False
        speed = h_speed[s]
        if not -_F32_MAX <= speed <= _F32_MAX:
            return False
        # every step's data found (this set's ids; the run's Arg ids) and its numbers plain
        steps = command.steps
        if command.arg_steps:
            found = fixed.copy()
            for k, op, anim, extra in command.arg_steps:
                if op == _GAIT:
                    target, value = extra
                    if target.__class__ is Arg:
                        target = params[target.pos]
                        if not (target.__class__ is float and -_F32_MAX <= target <= _F32_MAX):
                            return False
                    if value.__class__ is Arg:
                        value = params[value.pos]
                        if not (value.__class__ is float and -_F32_MAX <= value <= _F32_MAX):
                            return False
                    if found[k] is None:
                        return False
                    found[k] = (found[k], target, value)
                else:
                    tpl = by_id.get(params[anim.pos])
                    if tpl is None:
                        return False
                    found[k] = tpl
            if None in found:
                return False
        else:
            if None in fixed:
                return False
            found = fixed
        # ---- nothing can refuse now: the rows, in the order the handle calls write them
        window = _WINDOW_INDEX[opts.blend_window]
        if ts._dirty:
            ts._reset_dirty()
        if cs._dirty:
            cs._reset_dirty()
        views = ts.views
        n_views = len(views)
        if n_views < ts.capacity:                        # grown to the rows taken (as new_task_row grows it)
            top = max(t_free[tn - k_tasks:tn]) + 1
            if top > n_views:
                views.extend([None] * (top - n_views))
        (c_nf, c_free, c_live, c_end, c_limit, c_dur, c_bank, c_anim, c_flags, c_evf0, c_evf, c_t, c_frame, c_ev,
         c_at_end) = cv
        prev = -1                                        # the task made last (the next of the one made now)
        aid = -1
        for (op, anim, flags, held, extra), tpl in zip(steps, found):
            tn -= 1
            tr = t_free[tn]
            t_live[tr] = True
            views[tr] = None
            if flags:
                t_flags[tr] = flags
            if held:
                t_held[tr] = held
            if op != _GAIT:
                # the cursor (cursor_row: every column), then the task row (new_task_row)
                end, limit, dur, bank, aid, cflags, evf0, rate = tpl
                cn -= 1
                cr = c_free[cn]
                c_live[cr] = True
                c_end[cr] = end
                c_limit[cr] = limit
                c_dur[cr] = dur
                c_bank[cr] = bank
                c_anim[cr] = aid
                c_flags[cr] = cflags
                c_evf0[cr] = evf0
                c_evf[cr] = evf0
                c_t[cr] = 0.0
                c_frame[cr] = 0
                c_ev[cr] = 0
                c_at_end[cr] = False
                t_type[tr] = op
                t_rate[tr] = rate
                t_c0[tr] = cr
                if op == _CLIP:                          # _next_row
                    if prev >= 0:
                        t_nxt[tr] = prev
                        t_placed[prev] = True
                    if extra:
                        t_blend[tr] = extra
                    if window:
                        t_window[tr] = window
            else:                                        # GaitTask._made: the task row, the gait row, the pair
                (ids, banks, protos, v, lower, leader, cur), target, value = tpl
                if v is None:                            # the value is the run's (or the target)
                    v = _f32_04(target if value is None else value)
                    lower = 0 if v < _STEP0 else 1 if v < _STEP1 else 2 if v < _STEP2 else 3
                    leader = 1 if v - lower >= GAIT_ALONE_HIGH else 0
                    base = flags & _CURSOR_INT
                    cur = [_cursor_template(protos[lower + j], banks[lower + j], ids[lower + j],
                                            base if leader == j else base | _MUTED_INT) for j in (0, 1)]
                tg = v if value is None else _f32_04(target)
                if not flags & _CONTINUOUS_INT:
                    tg = float(math.floor(tg + 0.5))
                t_type[tr] = _GAIT
                t_rate[tr] = speed
                if gs._dirty:
                    gs._reset_dirty()
                (g_nf, g_free, g_live, g_id0, g_id1, g_id2, g_id3, g_id4, g_b0, g_b1, g_b2, g_b3, g_b4, g_value,
                 g_target, g_lower, g_leader) = gv
                gn = g_nf[0] - 1
                gr = g_free[gn]
                g_nf[0] = gn
                g_live[gr] = True
                t_aux[tr] = gr
                g_id0[gr], g_id1[gr], g_id2[gr], g_id3[gr], g_id4[gr] = ids
                g_b0[gr], g_b1[gr], g_b2[gr], g_b3[gr], g_b4[gr] = banks
                t_speed[tr] = GAIT_SPEED
                for j in (0, 1):                         # the pair's two cursors (cursor_row)
                    end, limit, dur, bank, aid, cflags, evf0 = cur[j]
                    cn -= 1
                    cr = c_free[cn]
                    c_live[cr] = True
                    c_end[cr] = end
                    c_limit[cr] = limit
                    c_dur[cr] = dur
                    c_bank[cr] = bank
                    c_anim[cr] = aid
                    c_flags[cr] = cflags
                    c_evf0[cr] = evf0
                    c_evf[cr] = evf0
                    c_t[cr] = 0.0
                    c_frame[cr] = 0
                    c_ev[cr] = 0
                    c_at_end[cr] = False
                    if j:
                        t_c1[tr] = cr
                    else:
                        t_c0[tr] = cr
                g_value[gr] = v
                g_target[gr] = tg
                g_lower[gr] = lower
                g_leader[gr] = leader
                aid = ids[lower + leader]
            if not out[tr]:                              # the pool's take_row
                out[tr] = True
                n_out += 1
            prev = tr
        t_nf[0] = tn
        c_nf[0] = cn
        held = steps[-1][3]                              # the first task's held bits
        if place is _CHANGE:                             # change's straight path: the fade, then both slots
            if fd._dirty:
                fd._reset_dirty()
            tn -= 1
            fr = t_free[tn]
            t_nf[0] = tn
            t_live[fr] = True
            views[fr] = None
            t_type[fr] = _FADE_INT
            t_rate[fr] = speed
            f_nf, f_free, f_live, f_el, f_dur = fv
            fn = f_nf[0] - 1
            frow = f_free[fn]
            f_nf[0] = fn
            f_live[frow] = True
            f_el[frow] = 0.0
            f_dur[frow] = fade
            t_aux[fr] = frow
            if not out[fr]:
                out[fr] = True
                n_out += 1
            t_incoming[fr] = prev
            b = s * stack_width
            for i in range(b + n, b, -1):
                h_stack[i] = h_stack[i - 1]
            h_stack[b] = prev
            h_stack[b + n + 1] = fr
            h_depth[s] = n + 2
            t_placed[prev] = True
            t_placed[fr] = True
        elif place is _PUSH:
            h_stack[s * stack_width + n] = prev
            h_depth[s] = n + 1
            t_placed[prev] = True
        else:
            q = h_queued[s]
            t_placed[prev] = True
            h_queue[s * queue_width + q] = prev
            h_queued[s] = q + 1
            pool.n_out = n_out
            return True
        pool.n_out = n_out
        if held:
            h_flags[s] = h_flags[s] | held
        h_anim[s] = aid                                  # the top is the fade or the task: the task's id
        return True


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


class _GaitTemplate(tuple):
    """A gait step's template: (ids, banks, protos, value, pair, leader, the two cursor
    templates) for a constant value (else value, pair, leader and cursors None)."""

    __slots__ = ()


def _cursor_template(proto: tuple, bank: int, aid: int, cflags: int) -> tuple:
    """What cursor_row writes from ``proto`` (cursor_proto): end, limit, duration, bank
    index, anim id, flags, first event frame."""
    return (proto[1], proto[7], proto[6], bank, int(aid), cflags, proto[5])


def _gait_template(ids, banks, protos, flags: int, extra: tuple) -> _GaitTemplate:
    """A gait step's _GaitTemplate (RecipeRules._learn_rows)."""
    ids = tuple(int(i) for i in ids)
    target, value = extra
    if value is not None and value.__class__ is not Arg:
        v = _f32_04(value)
        lower = 0 if v < _STEP0 else 1 if v < _STEP1 else 2 if v < _STEP2 else 3
        leader = 1 if v - lower >= GAIT_ALONE_HIGH else 0
        base = flags & _CURSOR_INT
        cur = tuple(_cursor_template(protos[lower + j], banks[lower + j], ids[lower + j],
                                     base if leader == j else base | _MUTED_INT) for j in (0, 1))
        return _GaitTemplate((ids, tuple(banks), tuple(protos), v, lower, leader, cur))
    return _GaitTemplate((ids, tuple(banks), tuple(protos), None, 0, 0, None))
