"""The task rows' rules the step, the pose and the flush share (link-only helpers).

The task-type and flag constants as plain ints (numba freezes module globals), the
cursor's time set and its next event (``_set_time``, ``_skip``, ``_set_next_event``), a
task's lead cursor and clip duration (``_lead``, ``_lead_of``, ``_cursor_k``,
``_duration``), type 3 / 6's blend window (``_window``), the gait's value and pair rule
(``_gait_value``; ``_pair_index``, ``_gait_lead``, ``_gait_sampled``), the fade weight
(``_fade_weight``), walks over a stack (``_seed_walk``, ``_find``) and the pool's row
return (``_give_row``). Each is one rule of the spec, written once: the stage modules call
these; the gait's and the fade's are anim.engine.rules' own (Python runs the same text).

Spec: "Fades", "Gait blend", "Animation tasks", "The task stack". Original: 0x00106cc8
(fade), 0x0010a5b8 (gait), 0x00105af0 (type 3's hand-over window).
"""
from __future__ import annotations

import numpy as np
from scuffle.anim.data.clip import EventType
from scuffle.anim.engine.sampler import CursorFlags
from scuffle.anim.engine.store import MAX_ROWS, NO_EVENT, NO_ROW
from scuffle.anim.maths.pose import POSE_STACK_SIZE
from scuffle.anim.base.enums import BlendWindow, HeldFlags, PickSampling, TaskType
from scuffle.anim.engine.rules import HELD_EVENTS, PICK_SAMPLINGS, TASK_CURSORS, WINDOW_RULES
from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine import rules as R
from scuffle.anim.engine.kernels_maths import (jit_kinds, _add, _frame_of, _mul, _sub)

# numba's on-disk cache of this module's kernels: True, or False with no writable cache
# folder (they then compile for the process only); a corrupt cache is set aside first.
CACHE = cache_setting(__file__)
_helper, _kernel, _inline = jit_kinds(CACHE)

# link-only helpers for the other kernel modules: nothing here is called from Python
__all__: list[str] = []
# numba's cache is keyed on each function's own file: the sha256 of the kernel modules
# this one links (anim.maths.detmath's scalar forms and the kernels_* modules it imports), so an
# edit there changes this file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "f9a78fd236f569cde787ada649c314cecec842df22555bdebf9e9f59f9a2b0ba"



# The spec's gait and fade rules, as anim.engine.rules writes them once for Python and the kernels:
# compiled here link-only (no machine code or cache entry of their own).
_fade_weight = _helper(R.fade_weight)
_pair_index = _helper(R.gait_pair)
_gait_lead = _helper(R.gait_leader)
_gait_sampled = _helper(R.gait_sampled)
_cursor_flags_of = _helper(R.cursor_flags_of)


# ---------------------------------------------------------------- task stacks
#
# The task stacks as table rows (anim.engine.store): the step and the pose of every human's
# whole stack (see step_stacks and pose_stacks; anim.playback.batch drives them).

# Numba freezes module globals as constants: the enums as plain ints.
_MAX_GEN = MAX_ROWS            # a row's generation wraps to 0 past it (store.FRAME_COLUMNS)
_LOOP = int(TaskType.LOOP)
_CLIP = int(TaskType.CLIP)
_PAIRED_HOLD = int(TaskType.PAIRED_HOLD)
_HOLD = int(TaskType.HOLD)
_PAIRED_CLIP = int(TaskType.PAIRED_CLIP)
_SCENE = int(TaskType.SCENE)
_FADE = int(TaskType.FADE)
_GAIT = int(TaskType.GAIT)
_MIX = int(TaskType.MIX)
_PICK = int(TaskType.PICK)
_DIRECTION = int(TaskType.DIRECTION)
# each type's cursor links by type number (anim.playback.tasks.TASK_CURSORS; -1: no such type)
_N_CURSORS = tuple(int(TASK_CURSORS.get(t, -1)) for t in range(int(max(TaskType)) + 1))
_MUTED = int(CursorFlags.MUTED)
_CURSOR_BITS = int(CursorFlags.NO_VELOCITY | CursorFlags.NO_TURN | CursorFlags.MUTED)
_HELD_OPEN = int(EventType.HELD_OPEN)
_HELD_CLOSE = int(EventType.HELD_CLOSE)
_HELD_REPLACE = int(EventType.HELD_REPLACE)
_REPLACED = int(HeldFlags.REPLACED)
_NO_EVENT = int(NO_EVENT)
_NO_ROW = int(NO_ROW)
_PICK_ALL = PICK_SAMPLINGS.index(PickSampling.ALL)   # the task table's sampling column
_KEPT = WINDOW_RULES.index(BlendWindow.KEPT)     # the task table's window column
_POSES = POSE_STACK_SIZE        # the pose stack (0x00104ce0 refuses an eighth)
_OPEN_NEED, _OPEN_CLEAR, _OPEN_SET = HELD_EVENTS[EventType.HELD_OPEN]
_CLOSE_NEED, _CLOSE_CLEAR, _CLOSE_SET = HELD_EVENTS[EventType.HELD_CLOSE]
_WALK = 64                      # scratch rows for walks over a stack and its next tasks


# ---------------------------------------------------------------- cursors


@_helper
def _set_next_event(c, i, cursors, events):
    c_bank, c_ev, c_evf = cursors.bank, cursors.ev, cursors.evf
    e_first, e_count, e_frame = events.first, events.n, events.frame
    c_ev[c] = i
    b = c_bank[c]
    if i < e_count[b]:
        c_evf[c] = e_frame[e_first[b] + i]
    else:
        c_evf[c] = _NO_EVENT


@_helper
def _skip(c, cursors, events):
    """Cursor._skip: every event up to the frame counts as passed."""
    c_frame, c_bank = cursors.frame, cursors.bank
    e_first, e_count, e_frame = events.first, events.n, events.frame
    b = c_bank[c]
    first = e_first[b]
    n = e_count[b]
    frame = c_frame[c]
    i = 0
    while i < n and e_frame[first + i] <= frame:
        i += 1
    _set_next_event(c, i, cursors, events)


@_helper
def _set_time(c, t, cursors, events):
    """Cursor.set_time: the time without a step, the frame capped at F - 1."""
    c_t, c_frame, c_end, c_ev, c_evf = cursors.t, cursors.frame, cursors.end, cursors.ev, cursors.evf
    c_t[c] = t
    f = _frame_of(t)
    cap = np.int64(c_end[c]) - 1
    cap = 0 if 0 > cap else cap          # max(end - 1, 0)
    if f > cap:
        f = cap
    c_frame[c] = f
    if f >= c_evf[c] or c_ev[c] > 0:
        _skip(c, cursors, events)


# ---------------------------------------------------------------- task helpers


@_helper
def _lead(r, tasks, gaits):
    """A gait's leading cursor row (the lower when leader is 0)."""
    t_c0, t_c1, t_aux = tasks.c0, tasks.c1, tasks.aux
    g_leader = gaits.leader
    if g_leader[t_aux[r]] == 0:
        return np.int64(t_c0[r])
    return np.int64(t_c1[r])


# PickTask.chosen: the audible clip of a value (the rule's one form, anim.engine.rules).
_pick_chosen = _helper(R.pick_chosen)


@_helper
def _cursor_k(r, k, tasks):
    """Task ``r``'s cursor row ``k`` (0-3: columns c0-c3)."""
    t_c0, t_c1, t_c2, t_c3 = tasks.c0, tasks.c1, tasks.c2, tasks.c3
    if k == 0:
        return np.int64(t_c0[r])
    if k == 1:
        return np.int64(t_c1[r])
    if k == 2:
        return np.int64(t_c2[r])
    return np.int64(t_c3[r])


@_helper
def _lead_of(r, tasks, gaits):
    """Task.leading_cursor's row: a gait's leader, a mix's heavier clip (the second from
    a weight of 0.5), a pick's chosen clip, a direction's centre (c1), a clip's cursor."""
    t_type, t_c0, t_c1, t_value = tasks.type, tasks.c0, tasks.c1, tasks.value
    tt = t_type[r]
    if tt == _GAIT:
        return _lead(r, tasks, gaits)
    if tt == _MIX:
        return np.int64(t_c1[r]) if t_value[r] >= 0.5 else np.int64(t_c0[r])
    if tt == _PICK:
        return _cursor_k(r, _pick_chosen(t_value[r]), tasks)
    if tt == _DIRECTION:
        return np.int64(t_c1[r])
    return np.int64(t_c0[r])


@_helper
def _duration(r, tasks, cursors, fades, gaits):
    """Task.duration (+0xd4): the leading clip's, a fade's time."""
    t_type, t_aux = tasks.type, tasks.aux
    c_dur = cursors.dur
    f_dur = fades.dur
    if t_type[r] == _FADE:
        return np.float64(f_dur[t_aux[r]])
    return np.float64(c_dur[_lead_of(r, tasks, gaits)])


@_helper
def _window(r, tasks, cursors, fades, gaits):
    """ClipTask.window: b, at most the next task's duration (0 without a next task)."""
    t_nxt, t_blend = tasks.nxt, tasks.blend
    nx = np.int64(t_nxt[r])
    b = np.float64(t_blend[r])
    if nx < 0 or b <= 0.0:
        return 0.0
    d = _duration(nx, tasks, cursors, fades, gaits)
    return d if d < b else b              # min(b, d)


@_helper
def _gait_value(r, dt, tasks, gaits):
    """The gait's value after this update's move toward the target (GaitTask.advance)."""
    t_rate, t_speed, t_aux = tasks.rate, tasks.speed, tasks.aux
    g_value, g_target = gaits.value, gaits.target
    g = np.int64(t_aux[r])
    old = np.float64(g_value[g])
    tgt = np.float64(g_target[g])
    limit = _mul(_mul(np.float64(t_rate[r]), dt), np.float64(t_speed[r]))
    if tgt > old:
        v = _add(old, limit)
        return tgt if tgt < v else v      # min(old + limit, tgt)
    if tgt < old:
        v = _sub(old, limit)
        return tgt if tgt > v else v      # max(old - limit, tgt)
    return old


@_helper
def _seed_walk(hi, humans, walk):
    """Put the human's stack rows on the walk's scratch (a walk then pops them and pushes
    next tasks); returns how many are on it."""
    h_depth, h_stack = humans.depth, humans.stack
    n = h_depth[hi]
    for i in range(n):
        walk[i] = h_stack[hi, i]
    return n


@_helper
def _find(hi, r, humans):
    h_depth, h_stack = humans.depth, humans.stack
    for i in range(h_depth[hi]):
        if h_stack[hi, i] == r:
            return i
    return -1


@_helper
def _give_row(r, live, gen, free_rows, n_free, at):
    """Table.give_back of row ``r``: a row in use goes back (its generation counts up, the
    row on top of the free list, its place in the list's index ``at``: the cache
    kernels_write.take_row checks); a free row (or NO_ROW) is left alone. True when given."""
    if r < 0 or not live[r]:
        return False
    live[r] = False
    gen[r] = (gen[r] + 1) & _MAX_GEN               # int32: wraps to 0, never below (store.FRAME_COLUMNS)
    n = n_free[0]
    free_rows[n] = r
    at[r] = n
    n_free[0] = n + 1
    return True
