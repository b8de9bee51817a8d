"""The compiled step and pose of whole task stacks: every human's tasks as table rows.

The state is rows of preallocated tables (anim.store): the task table (type, rate,
flags, held bits, cursor rows, the fade's or gait's row, the next and incoming links,
blend time and window rule, released, handed over, wraps), the human table (the
record's flags, the stack as task rows, its depth), the cursors, fades and gait blends.
Two kernels, ``@njit(cache=True)`` with fastmath off, read and write them in place:

- ``step_stacks`` runs Player.step_one for every human it is given, task by task
  bottom-up: the float32 toward-zero cursor (anim.kernels), the end test and the
  zero-overshoot reading, the loop's wrap, type 3 / 6's hand-over and blend window
  (its next task advanced too, or kept), the fade's end and clean-up, the gait blend's
  value, leader and follower, the held-flag events, and the events written as rows
  (human, task row, cursor row, event) into a preallocated buffer, the deferred tasks
  likewise. A human whose gait would change its clip pair this update (a new cursor:
  Python builds it) is left untouched and reported, for the scalar step.
- ``pose_stacks`` samples every human's stack onto its pose stack of seven (an eighth
  pose refused and counted, 0x00104ce0), blends and builds the bone transforms.

The scalar Python step (anim.player.Player.step_one and the task classes) is the
reference; tests/anim/test_batch.py ties the two over random crowds.

Spec: "Animation tasks", "The task stack", "When a clip ends", "Fades", "Gait blend",
"Events". Original: 0x00175610 (the stack's +0x64 calls), 0x001044a0
AnimCursor_Advance, 0x00105770 (loop), 0x00105af0 (type 3's hand-over), 0x00106cc8
(fade), 0x0010a5b8 (gait), 0x00176d60 CharacterInstance_Sample.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import _blend, _emit, _fade_weight, _reference, _sample, add, div, frame_of, mul, sub
from .sampler import CursorFlags
from .store import NO_EVENT, NO_ROW
from .tasks import GAIT_ALONE_HIGH, GAIT_ALONE_LOW, GAIT_FALL_FRACTION, GAIT_STEPS, HeldFlags, TaskType
from .clip import EventType

__all__ = ["step_stacks", "pose_stacks", "STATUS_SLOW", "STATUS_STACK", "STATUS_EVENTS", "STATUS_TOP",
           "STATUS_DEFERRED", "STATUS_PAIR", "COUNT_EVENTS", "COUNT_DEFERRED", "COUNT_STOPPED", "COUNT_PAIRS",
           "COUNT_GAITS"]

# Numba freezes module globals as constants: the enums as plain ints.
_LOOP = int(TaskType.LOOP)
_CLIP = int(TaskType.CLIP)
_PAIRED_HOLD = int(TaskType.PAIRED_HOLD)
_HOLD = int(TaskType.HOLD)
_PAIRED_CLIP = int(TaskType.PAIRED_CLIP)
_SCENE = int(TaskType.SCENE)
_FADE = int(TaskType.FADE)
_GAIT = int(TaskType.GAIT)
_MUTED = int(CursorFlags.MUTED)
_CURSOR_BITS = int(CursorFlags.NO_VELOCITY | CursorFlags.NO_TURN | CursorFlags.MUTED)
_HELD_OPEN = int(EventType.HELD_OPEN)
_HELD_CLOSE = int(EventType.HELD_CLOSE)
_HELD_REPLACE = int(EventType.HELD_REPLACE)
_REPLACED = int(HeldFlags.REPLACED)
_NO_EVENT = int(NO_EVENT)
_NO_ROW = int(NO_ROW)
_STEP0 = float(GAIT_STEPS[0])
_STEP1 = float(GAIT_STEPS[1])
_STEP2 = float(GAIT_STEPS[2])
_ALONE_LOW = float(GAIT_ALONE_LOW)
_ALONE_HIGH = float(GAIT_ALONE_HIGH)
_FALL = float(GAIT_FALL_FRACTION)
_KEPT = 1                       # the task table's window column: 0 advanced, 1 kept
_POSES = 7                      # the pose stack (0x00104ce0 refuses an eighth)
_WALK = 64                      # scratch rows for walks over a stack and its next tasks

# status bits per human (step_stacks' ``status``)
STATUS_SLOW = 1                 # not stepped: the scalar step takes it
STATUS_STACK = 2                # its stack rows (or a next / incoming link) changed
STATUS_EVENTS = 4               # it fired events (rows in ev_out)
STATUS_TOP = 8                  # the playing anim id may have changed (refresh at the flush)
STATUS_DEFERRED = 16            # it put tasks on the deferred list
STATUS_PAIR = 32                # (with SLOW) a gait's pair change needs spare cursors made first
# counts (step_stacks' ``counts``)
COUNT_EVENTS = 0
COUNT_DEFERRED = 1
COUNT_STOPPED = 2               # the index it stopped at (== len(rows) when done)
COUNT_PAIRS = 3                 # spare cursor requests (pair_out rows)
COUNT_GAITS = 4                 # gaits whose pair changed (gait_out rows)


# ---------------------------------------------------------------- cursors


@njit(cache=True)
def _set_next_event(c, i, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    c_ev[c] = i
    b = c_bank[c]
    if i < e_count[b]:
        c_evf[c] = e_frame[e_first[b] + i]
    else:
        c_evf[c] = _NO_EVENT


@njit(cache=True)
def _fire(hi, c, tr, sink_on, c_frame, c_flags, c_bank, c_ev, c_evf, e_first, e_count, e_frame, ev_out, n_ev):
    """Cursor._fire: the events up to the cursor's frame, as rows (none when muted)."""
    b = c_bank[c]
    first = e_first[b]
    n = e_count[b]
    i = np.int64(c_ev[c])
    frame = c_frame[c]
    muted = (not sink_on) or (c_flags[c] & _MUTED) != 0
    while i < n and e_frame[first + i] <= frame:
        if not muted:
            ev_out[n_ev, 0] = hi
            ev_out[n_ev, 1] = tr
            ev_out[n_ev, 2] = c
            ev_out[n_ev, 3] = first + i
            n_ev += 1
        i += 1
    _set_next_event(c, i, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
    return n_ev


@njit(cache=True)
def _skip(c, c_frame, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    """Cursor._skip: every event up to the frame counts as passed."""
    b = c_bank[c]
    first = e_first[b]
    n = e_count[b]
    frame = c_frame[c]
    i = 0
    while i < n and e_frame[first + i] <= frame:
        i += 1
    _set_next_event(c, i, c_bank, c_ev, c_evf, e_first, e_count, e_frame)


@njit(cache=True)
def _set_time(c, t, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    """Cursor.set_time: the time without a step, the frame capped at F - 1."""
    c_t[c] = t
    f = frame_of(t)
    cap = max(np.int64(c_end[c]) - 1, 0)
    if f > cap:
        f = cap
    c_frame[c] = f
    if f >= c_evf[c] or c_ev[c] > 0:
        _skip(c, c_frame, c_bank, c_ev, c_evf, e_first, e_count, e_frame)


@njit(cache=True)
def _restart(c, c_t, c_frame, c_at_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame):
    """Cursor.restart: time 0, frame 0, no event passed."""
    c_t[c] = 0.0
    c_frame[c] = 0
    c_at_end[c] = False
    _set_next_event(c, 0, c_bank, c_ev, c_evf, e_first, e_count, e_frame)


# ---------------------------------------------------------------- task helpers


@njit(cache=True)
def _lead(r, t_c0, t_c1, t_aux, g_leader):
    """A gait's leading cursor row (the lower when leader is 0)."""
    if g_leader[t_aux[r]] == 0:
        return t_c0[r]
    return t_c1[r]


@njit(cache=True)
def _duration(r, t_type, t_c0, t_c1, t_aux, c_dur, f_dur, g_leader):
    """Task.duration (+0xd4): the leading clip's, a fade's time."""
    tt = t_type[r]
    if tt == _FADE:
        return np.float64(f_dur[t_aux[r]])
    if tt == _GAIT:
        return np.float64(c_dur[_lead(r, t_c0, t_c1, t_aux, g_leader)])
    return np.float64(c_dur[t_c0[r]])


@njit(cache=True)
def _window(r, t_type, t_c0, t_c1, t_aux, t_nxt, t_blend, c_dur, f_dur, g_leader):
    """ClipTask.window: b, at most the next task's duration (0 without a next task)."""
    nx = t_nxt[r]
    b = np.float64(t_blend[r])
    if nx < 0 or b <= 0.0:
        return 0.0
    d = _duration(nx, t_type, t_c0, t_c1, t_aux, c_dur, f_dur, g_leader)
    return min(b, d)


@njit(cache=True)
def _pair_index(v):
    if v < _STEP0:
        return 0
    if v < _STEP1:
        return 1
    if v < _STEP2:
        return 2
    return 3


@njit(cache=True)
def _gait_value(r, dt, t_rate, t_speed, t_aux, g_value, g_target):
    """The gait's value after this update's move toward the target (GaitTask.advance)."""
    g = t_aux[r]
    old = np.float64(g_value[g])
    tgt = np.float64(g_target[g])
    limit = mul(mul(np.float64(t_rate[r]), dt), np.float64(t_speed[r]))
    if tgt > old:
        return min(add(old, limit), tgt)
    if tgt < old:
        return max(sub(old, limit), tgt)
    return old


@njit(cache=True)
def _find(hi, r, h_depth, h_stack):
    for i in range(h_depth[hi]):
        if h_stack[hi, i] == r:
            return i
    return -1


@njit(cache=True)
def _gait_id(g, idx, g_id0, g_id1, g_id2, g_id3, g_id4):
    if idx == 0:
        return g_id0[g]
    if idx == 1:
        return g_id1[g]
    if idx == 2:
        return g_id2[g]
    if idx == 3:
        return g_id3[g]
    return g_id4[g]


@njit(cache=True)
def _new_pair(r, nl, t_c0, t_c1, t_aux, g_lower, g_id0, g_id1, g_id2, g_id3, g_id4, g_s0, g_s1, c_anim, take,
              out):
    """GaitTask.advance's change of pair to ``nl``: each of the two cursors is kept once, by
    id (a pair of one id twice keeps the upper); a clip that comes in takes a spare cursor
    of its id (``g_s0`` / ``g_s1``). Writes the new (lower, upper) rows into ``out[0:2]``
    and, for a clip that comes in, 1 into ``out[2 + j]``; returns False when a spare is
    missing. ``take``: consume the spares (else only check)."""
    g = t_aux[r]
    lower = g_lower[g]
    k_id0 = _gait_id(g, lower, g_id0, g_id1, g_id2, g_id3, g_id4)
    k_id1 = _gait_id(g, lower + 1, g_id0, g_id1, g_id2, g_id3, g_id4)
    k_alive0 = k_id0 != k_id1                # one id twice: the dict keeps the upper
    k_alive1 = True
    sp0 = g_s0[g]
    sp1 = g_s1[g]
    for j in range(2):
        cid = _gait_id(g, nl + j, g_id0, g_id1, g_id2, g_id3, g_id4)
        out[2 + j] = 0
        if k_alive0 and k_id0 == cid:
            out[j] = t_c0[r]
            k_alive0 = False
        elif k_alive1 and k_id1 == cid:
            out[j] = t_c1[r]
            k_alive1 = False
        elif sp0 >= 0 and c_anim[sp0] == cid:
            out[j] = sp0
            out[2 + j] = 1
            sp0 = -1
        elif sp1 >= 0 and c_anim[sp1] == cid:
            out[j] = sp1
            out[2 + j] = 1
            sp1 = -1
        else:
            return False
    if take:
        g_s0[g] = sp0
        g_s1[g] = sp1
    return True


@njit(cache=True)
def _pair_ready(hi, dt, h_depth, h_stack, t_type, t_rate, t_speed, t_c0, t_c1, t_aux, t_nxt, t_handed, g_value,
                g_target, g_lower, g_id0, g_id1, g_id2, g_id3, g_id4, g_s0, g_s1, c_anim, walk, pair4,
                pair_out, n_pair):
    """Every gait on the stack or among the next tasks that changes its clip pair this
    update has the spare cursors it needs; for those without, (human, task, new lower)
    rows go to ``pair_out``. Returns (ready, n_pair)."""
    ready = True
    n = 0
    for i in range(h_depth[hi]):
        walk[n] = h_stack[hi, i]
        n += 1
    while n > 0:
        n -= 1
        r = walk[n]
        tt = t_type[r]
        if tt == _GAIT:
            v = _gait_value(r, dt, t_rate, t_speed, t_aux, g_value, g_target)
            nl = _pair_index(v)
            if nl != g_lower[t_aux[r]] and not _new_pair(r, nl, t_c0, t_c1, t_aux, g_lower, g_id0, g_id1, g_id2,
                                                          g_id3, g_id4, g_s0, g_s1, c_anim, False, pair4):
                ready = False
                pair_out[n_pair, 0] = hi
                pair_out[n_pair, 1] = r
                pair_out[n_pair, 2] = nl
                n_pair += 1
        elif (tt == _CLIP or tt == _PAIRED_CLIP) and t_nxt[r] >= 0 and not t_handed[r] and n < walk.shape[0]:
            walk[n] = t_nxt[r]
            n += 1
    return ready, n_pair


@njit(cache=True)
def _defer(hi, r, t_released, def_out, n_def):
    """Player.defer: on the deferred list once."""
    if not t_released[r]:
        t_released[r] = True
        def_out[n_def, 0] = hi
        def_out[n_def, 1] = r
        n_def += 1
    return n_def


@njit(cache=True)
def _owner_of(hi, task, h_depth, h_stack, t_type, t_nxt, t_handed, walk):
    """Player._owner_of: the clip task (on the stack or following one) whose next is ``task``."""
    n = 0
    for i in range(h_depth[hi]):
        walk[n] = h_stack[hi, i]
        n += 1
    while n > 0:
        n -= 1
        t = walk[n]
        tt = t_type[t]
        if (tt == _CLIP or tt == _PAIRED_CLIP) and not t_handed[t]:
            if t_nxt[t] == task:
                return t
            if t_nxt[t] >= 0 and n < walk.shape[0]:
                walk[n] = t_nxt[t]
                n += 1
    return -1


@njit(cache=True)
def _clear_flags(hi, bits, task, h_depth, h_stack, h_flags, t_held, t_released):
    """Player._clear_flags: clear ``bits`` from the human but those another task holds."""
    others = np.int64(0)
    for i in range(h_depth[hi]):
        t = h_stack[hi, i]
        if t != task and not t_released[t]:
            others |= t_held[t]
    h_flags[hi] &= ~(bits & ~others)


# ---------------------------------------------------------------- the step


@njit(cache=True)
def step_stacks(rows, start, dt, zero_overshoot, newest_only, cleanup_above,
                h_depth, h_stack, h_flags,
                t_type, t_rate, t_flags, t_held, t_c0, t_c1, t_aux, t_nxt, t_blend, t_window, t_incoming,
                t_released, t_handed, t_wraps, t_speed,
                c_t, c_frame, c_end, c_limit, c_dur, c_flags, c_bank, c_ev, c_evf, c_at_end, c_anim,
                f_el, f_dur, g_value, g_target, g_lower, g_leader, g_id0, g_id1, g_id2, g_id3, g_id4, g_s0, g_s1,
                e_first, e_count, e_frame, e_type,
                status, ev_out, def_out, pair_out, gait_out, counts, snap, walk, pair4):
    """One animation step of the humans ``rows[start:]`` (rows of the human table), as
    Player.step_one does it (see the module docstring).

    Out: ``status[k]`` (STATUS_* bits) for rows[k]; ``ev_out[:counts[0]]`` the fired
    events (human row, task row, cursor row, event index into e_*), in firing order;
    ``def_out[:counts[1]]`` the deferred tasks (human row, task row), in order;
    ``counts[2]`` the index it stopped at: a human whose events or deferred tasks might
    not fit the buffers is not begun (the caller grows them and calls again from there).
    A human with a gait changing its clip pair without the spare cursors it needs is not
    stepped (STATUS_SLOW | STATUS_PAIR): ``pair_out[:counts[3]]`` (human, gait task row,
    new lower) ask the caller to make them (GaitTask.prepare_pair) and call again for it;
    ``gait_out[:counts[4]]`` (human, gait task row) the gaits whose pair changed (their
    cursor objects follow the rows: GaitTask.rebind). ``counts`` are read as the fill
    so far (the caller zeroes them first). ``snap`` (>= 18), ``walk`` (>= 64) and
    ``pair4`` (4) are scratch. Nothing is allocated.
    """
    n_ev = counts[COUNT_EVENTS]
    n_def = counts[COUNT_DEFERRED]
    n_pair = counts[COUNT_PAIRS]
    n_gait = counts[COUNT_GAITS]
    cap_ev = ev_out.shape[0]
    cap_def = min(def_out.shape[0], pair_out.shape[0], gait_out.shape[0])
    for k in range(start, rows.shape[0]):
        hi = rows[k]
        depth = h_depth[hi]
        # room: each cursor passes at most its clip's events twice (a wrap), each task
        # is deferred at most once
        need_ev = 0
        need_def = 0
        n = 0
        for i in range(depth):
            walk[n] = h_stack[hi, i]
            n += 1
        while n > 0:
            n -= 1
            r = walk[n]
            need_def += 1
            if t_c0[r] >= 0:
                need_ev += 2 * e_count[c_bank[t_c0[r]]]
            if t_c1[r] >= 0:
                need_ev += 2 * e_count[c_bank[t_c1[r]]]
            if t_type[r] == _GAIT:
                for sp in (g_s0[t_aux[r]], g_s1[t_aux[r]]):
                    if sp >= 0:
                        need_ev += 2 * e_count[c_bank[sp]]
            if (t_type[r] == _CLIP or t_type[r] == _PAIRED_CLIP) and t_nxt[r] >= 0 and n < walk.shape[0]:
                walk[n] = t_nxt[r]
                n += 1
        if n_ev + need_ev > cap_ev or max(n_def, n_pair, n_gait) + need_def > cap_def:
            counts[COUNT_EVENTS] = n_ev
            counts[COUNT_DEFERRED] = n_def
            counts[COUNT_PAIRS] = n_pair
            counts[COUNT_GAITS] = n_gait
            counts[COUNT_STOPPED] = k
            return
        ready, n_pair = _pair_ready(hi, dt, h_depth, h_stack, t_type, t_rate, t_speed, t_c0, t_c1, t_aux, t_nxt,
                                    t_handed, g_value, g_target, g_lower, g_id0, g_id1, g_id2, g_id3, g_id4, g_s0,
                                    g_s1, c_anim, walk, pair4, pair_out, n_pair)
        if not ready:
            status[k] = STATUS_SLOW | STATUS_PAIR
            continue
        st = 0
        ev0 = n_ev
        def0 = n_def
        # the newest task (Player.top) when only its events fire
        newest = -1
        if newest_only and depth > 0:
            newest = h_stack[hi, depth - 1]
            if t_type[newest] == _FADE:
                newest = h_stack[hi, 0]
        for i in range(depth):
            snap[i] = h_stack[hi, i]
        for si in range(depth):
            task = snap[si]
            if t_released[task]:
                continue
            sink_on = newest < 0 or task == newest
            n0 = n_ev
            r = task
            while True:                     # a task, then the next tasks it advances too
                tt = t_type[r]
                step = mul(dt, np.float64(t_rate[r]))
                if tt == _LOOP or tt == _HOLD or tt == _SCENE or tt == _PAIRED_HOLD or tt == _CLIP \
                        or tt == _PAIRED_CLIP:
                    c = t_c0[r]
                    # AnimCursor_Advance
                    t = add(np.float64(c_t[c]), step)
                    f = frame_of(t)
                    over = 0.0
                    if f >= c_end[c]:
                        c_at_end[c] = True
                        over = sub(t, np.float64(c_limit[c]))
                    else:
                        c_at_end[c] = False
                        c_t[c] = t
                        c_frame[c] = f
                        if f >= c_evf[c]:
                            n_ev = _fire(hi, c, r, sink_on, c_frame, c_flags, c_bank, c_ev, c_evf, e_first,
                                         e_count, e_frame, ev_out, n_ev)
                    ended = over != 0.0 or (zero_overshoot and c_at_end[c])
                    if tt == _LOOP:
                        if ended:
                            _restart(c, c_t, c_frame, c_at_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
                            t = add(0.0, over)
                            f = frame_of(t)
                            if f >= c_end[c]:
                                c_at_end[c] = True
                            else:
                                c_at_end[c] = False
                                c_t[c] = t
                                c_frame[c] = f
                                if f >= c_evf[c]:
                                    n_ev = _fire(hi, c, r, sink_on, c_frame, c_flags, c_bank, c_ev, c_evf,
                                                 e_first, e_count, e_frame, ev_out, n_ev)
                            t_wraps[r] += 1
                        break
                    if tt != _CLIP and tt != _PAIRED_CLIP:
                        break
                    nx = t_nxt[r]
                    if nx >= 0 and ended:
                        # the hand-over: the next task takes this one's place
                        t_handed[r] = True
                        pos = _find(hi, r, h_depth, h_stack)
                        if pos < 0:
                            owner = _owner_of(hi, r, h_depth, h_stack, t_type, t_nxt, t_handed, walk)
                            t_nxt[owner] = nx
                        else:
                            h_stack[hi, pos] = nx
                            for j in range(h_depth[hi]):
                                fj = h_stack[hi, j]
                                if t_type[fj] == _FADE and t_incoming[fj] == r:
                                    t_incoming[fj] = nx
                        n_def = _defer(hi, r, t_released, def_out, n_def)
                        st |= STATUS_STACK | STATUS_TOP
                        if _window(r, t_type, t_c0, t_c1, t_aux, t_nxt, t_blend, c_dur, f_dur, g_leader) > 0.0:
                            r = nx
                            continue
                        break
                    if t_window[r] != _KEPT:
                        b = _window(r, t_type, t_c0, t_c1, t_aux, t_nxt, t_blend, c_dur, f_dur, g_leader)
                        if b > 0.0 and sub(np.float64(c_t[c]), sub(np.float64(c_dur[c]), b)) > 0.0:
                            r = nx          # "the next task is advanced too" (L215)
                            continue
                    break
                elif tt == _FADE:
                    a = t_aux[r]
                    el = add(np.float64(f_el[a]), step)
                    f_el[a] = el
                    if el >= f_dur[a] or h_depth[hi] > cleanup_above:
                        # Player.complete_fade: itself and every task between the new one and it
                        hpos = _find(hi, r, h_depth, h_stack)
                        if not t_released[r] and hpos >= 0:
                            inc = t_incoming[r]
                            lo = 0
                            if inc >= 0:
                                ipos = _find(hi, inc, h_depth, h_stack)
                                if ipos >= 0:
                                    lo = ipos + 1
                            d = h_depth[hi]
                            for j in range(lo, hpos + 1):
                                n_def = _defer(hi, h_stack[hi, j], t_released, def_out, n_def)
                            gone = hpos + 1 - lo
                            for j in range(hpos + 1, d):
                                h_stack[hi, j - gone] = h_stack[hi, j]
                            for j in range(d - gone, d):
                                h_stack[hi, j] = _NO_ROW
                            h_depth[hi] = d - gone
                            st |= STATUS_STACK | STATUS_TOP
                    break
                elif tt == _GAIT:
                    a = t_aux[r]
                    old = np.float64(g_value[a])
                    lower = g_lower[a]
                    old_frac = old - lower
                    old_lead = _lead(r, t_c0, t_c1, t_aux, g_leader)
                    v = _gait_value(r, dt, t_rate, t_speed, t_aux, g_value, g_target)
                    g_value[a] = v
                    nl = _pair_index(v)
                    if nl != lower:
                        # the clips that come in join at the old leader's normalised time
                        _new_pair(r, nl, t_c0, t_c1, t_aux, g_lower, g_id0, g_id1, g_id2, g_id3, g_id4, g_s0, g_s1,
                                  c_anim, True, pair4)
                        for j in range(2):
                            if pair4[2 + j] == 1:
                                cn = pair4[j]
                                tn = mul(div(np.float64(c_t[old_lead]), np.float64(c_dur[old_lead])),
                                         np.float64(c_dur[cn]))
                                _set_time(cn, tn, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count,
                                          e_frame)
                        t_c0[r] = pair4[0]
                        t_c1[r] = pair4[1]
                        g_lower[a] = nl
                        lower = nl
                        gait_out[n_gait, 0] = hi
                        gait_out[n_gait, 1] = r
                        n_gait += 1
                        st |= STATUS_TOP
                    tgt = np.float64(g_target[a])
                    frac = v - lower
                    if frac < _ALONE_LOW:
                        lead = 0
                    elif frac >= _ALONE_HIGH:
                        lead = 1
                    elif v > tgt or old_frac > _FALL:
                        lead = 1
                    else:
                        lead = 0
                    if lead != g_leader[a]:
                        st |= STATUS_TOP
                    g_leader[a] = lead
                    base = t_flags[r] & _CURSOR_BITS
                    if lead == 0:
                        lc = t_c0[r]
                        fc = t_c1[r]
                    else:
                        lc = t_c1[r]
                        fc = t_c0[r]
                    c_flags[lc] = base
                    c_flags[fc] = base | _MUTED
                    # the leader advances, looping
                    t = add(np.float64(c_t[lc]), step)
                    f = frame_of(t)
                    over = 0.0
                    if f >= c_end[lc]:
                        c_at_end[lc] = True
                        over = sub(t, np.float64(c_limit[lc]))
                    else:
                        c_at_end[lc] = False
                        c_t[lc] = t
                        c_frame[lc] = f
                        if f >= c_evf[lc]:
                            n_ev = _fire(hi, lc, r, sink_on, c_frame, c_flags, c_bank, c_ev, c_evf, e_first,
                                         e_count, e_frame, ev_out, n_ev)
                    if over != 0.0 or (zero_overshoot and c_at_end[lc]):
                        _restart(lc, c_t, c_frame, c_at_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
                        t = add(0.0, over)
                        f = frame_of(t)
                        if f >= c_end[lc]:
                            c_at_end[lc] = True
                        else:
                            c_at_end[lc] = False
                            c_t[lc] = t
                            c_frame[lc] = f
                            if f >= c_evf[lc]:
                                n_ev = _fire(hi, lc, r, sink_on, c_frame, c_flags, c_bank, c_ev, c_evf,
                                             e_first, e_count, e_frame, ev_out, n_ev)
                    # the follower at the leader's normalised time
                    tf = mul(div(np.float64(c_t[lc]), np.float64(c_dur[lc])), np.float64(c_dur[fc]))
                    _set_time(fc, tf, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
                    break
                else:
                    break                   # not a type this kernel is given
            # the held-flag events of what this task fired (Player._held_events)
            for j in range(n0, n_ev):
                et = e_type[ev_out[j, 3]]
                tr = ev_out[j, 1]
                if et == _HELD_OPEN or et == _HELD_CLOSE:
                    if et == _HELD_OPEN:
                        need = 0x3
                        clear = 0x1
                        setb = 0x2
                    else:
                        need = 0x7
                        clear = 0x7
                        setb = 0x4
                    if t_held[tr] & need:
                        t_held[tr] = (t_held[tr] & ~clear) | setb
                        _clear_flags(hi, np.int64(clear), tr, h_depth, h_stack, h_flags, t_held, t_released)
                        h_flags[hi] |= setb
                elif et == _HELD_REPLACE and t_held[tr] != 0:
                    oldh = t_held[tr]
                    t_held[tr] = _REPLACED
                    _clear_flags(hi, oldh, tr, h_depth, h_stack, h_flags, t_held, t_released)
                    h_flags[hi] |= _REPLACED
        if n_ev > ev0:
            st |= STATUS_EVENTS
        if n_def > def0:
            st |= STATUS_DEFERRED
        status[k] = st
    counts[COUNT_EVENTS] = n_ev
    counts[COUNT_DEFERRED] = n_def
    counts[COUNT_PAIRS] = n_pair
    counts[COUNT_GAITS] = n_gait
    counts[COUNT_STOPPED] = rows.shape[0]


# ---------------------------------------------------------------- the pose


@njit(cache=True)
def pose_stacks(rows, cols, t_type, t_rate, t_c0, t_c1, t_aux, t_nxt, t_blend, t_window,
                h_depth, h_stack, c_t, c_frame, c_end, c_dur, c_flags, c_bank, c_ev, c_evf,
                f_el, f_dur, g_value, g_lower, g_leader, e_first, e_count, e_frame,
                row0, rows_, ftab, kval, kslope, kstart, ktag, sent_vel, sent_bone, animated,
                ref_rot, ref_bone_rot, bind_height, parents, offsets, submask,
                s_vel, s_root, s_rot, s_tag, o_vel, o_root, o_rot, o_tag, o_pos, o_mrot, refused, weights):
    """Every human's pose (rows of the human table) into output column ``cols[k]``, its
    stack sampled bottom-up onto a pose stack of seven (Task.emit, SamplePlan): a clip
    pushes its pose; type 3 / 6 in its blend window then its next task (kept at the time
    into the window under the kept rule, which moves its cursors) and blends by the share
    of b elapsed; a fade blends the top two by its outgoing weight; a gait its pair by the
    fraction (one clip alone near the steps). An eighth pose is skipped and counted in
    ``refused[k]``; a blend with fewer than two poses does nothing. The scratch holds 8
    poses (slot 7: the default). ``weights`` (>= 64) is scratch.
    """
    for k in range(rows.shape[0]):
        hi = rows[k]
        sp = 0
        nref = 0
        for si in range(h_depth[hi]):
            r = h_stack[hi, si]
            nw = 0
            while True:
                tt = t_type[r]
                if tt == _FADE:
                    a = t_aux[r]
                    w = np.float32(_fade_weight(np.float64(f_el[a]), np.float64(f_dur[a])))
                    if sp >= 2:
                        _blend(sp - 2, sp - 1, sp - 2, w, -1, submask, s_vel, s_root, s_rot, s_tag)
                        sp -= 1
                    break
                if tt == _GAIT:
                    a = t_aux[r]
                    frac = np.float64(g_value[a]) - g_lower[a]
                    rate = t_rate[r]
                    if frac < _ALONE_LOW or frac > _ALONE_HIGH:
                        c = t_c0[r] if frac < _ALONE_LOW else t_c1[r]
                        if sp >= _POSES:
                            nref += 1
                        else:
                            _sample(sp, c_bank[c], c_t[c], rate, c_flags[c], row0, rows_, ftab, kval, kslope,
                                    kstart, ktag, sent_vel, sent_bone, animated, ref_bone_rot, bind_height,
                                    s_vel, s_root, s_rot, s_tag)
                            sp += 1
                    else:
                        for c in (t_c0[r], t_c1[r]):
                            if sp >= _POSES:
                                nref += 1
                            else:
                                _sample(sp, c_bank[c], c_t[c], rate, c_flags[c], row0, rows_, ftab, kval,
                                        kslope, kstart, ktag, sent_vel, sent_bone, animated, ref_bone_rot,
                                        bind_height, s_vel, s_root, s_rot, s_tag)
                                sp += 1
                        if sp >= 2:
                            _blend(sp - 2, sp - 1, sp - 2, np.float32(frac), -1, submask, s_vel, s_root, s_rot,
                                   s_tag)
                            sp -= 1
                    break
                # a clip
                c = t_c0[r]
                if sp >= _POSES:
                    nref += 1
                else:
                    _sample(sp, c_bank[c], c_t[c], t_rate[r], c_flags[c], row0, rows_, ftab, kval, kslope,
                            kstart, ktag, sent_vel, sent_bone, animated, ref_bone_rot, bind_height,
                            s_vel, s_root, s_rot, s_tag)
                    sp += 1
                if tt != _CLIP and tt != _PAIRED_CLIP:
                    break
                b = _window(r, t_type, t_c0, t_c1, t_aux, t_nxt, t_blend, c_dur, f_dur, g_leader)
                if b <= 0.0:
                    break
                into = sub(np.float64(c_t[c]), sub(np.float64(c_dur[c]), b))
                if into <= 0.0:
                    break
                nx = t_nxt[r]
                if t_window[r] == _KEPT:
                    # Task.set_window_time: the next task kept at the time into the window
                    d = _duration(nx, t_type, t_c0, t_c1, t_aux, c_dur, f_dur, g_leader)
                    lead = t_c0[nx]
                    if t_type[nx] == _GAIT:
                        lead = _lead(nx, t_c0, t_c1, t_aux, g_leader)
                    for cc in (t_c0[nx], t_c1[nx]):
                        if cc < 0:
                            continue
                        tt2 = into if cc == lead else mul(div(into, d), np.float64(c_dur[cc]))
                        _set_time(cc, tt2, c_t, c_frame, c_end, c_bank, c_ev, c_evf, e_first, e_count, e_frame)
                if nw < weights.shape[0]:
                    weights[nw] = np.float32(min(into / b, 1.0))
                    nw += 1
                r = nx
            # the windows' blends, innermost first
            while nw > 0:
                nw -= 1
                if sp >= 2:
                    _blend(sp - 2, sp - 1, sp - 2, weights[nw], -1, submask, s_vel, s_root, s_rot, s_tag)
                    sp -= 1
        refused[k] = nref
        if sp == 0:
            _reference(_POSES, ref_rot, bind_height, s_vel, s_root, s_rot, s_tag)
            top = _POSES
        else:
            top = sp - 1
        _emit(top, cols[k], parents, offsets, s_vel, s_root, s_rot, s_tag, o_vel, o_root, o_rot, o_tag, o_pos,
              o_mrot)
