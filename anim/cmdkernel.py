"""A prepared command's rows in one compiled call (issue 19, items 1 and 7).

``run_rows`` writes what anim.prepared's direct path writes (the task, cursor, fade and
gait rows, their free lists, the pool's flags, the human's stack or queue row, its held
bits and anim id), in the same order, from the command's templates (small arrays made
when the command learns a set: ``TI_*`` / ``TF_*`` columns) and the tables' memory
blocks (anim.store: every array of a table is a view into its ``block``), which it
slices into typed arrays itself from ``lay`` (each array's byte offset and size in its
block, ``COLUMNS``' order): nine array arguments instead of seventy.
It first checks what the Python side leaves to it (the free lists long enough, the
pool's flags reaching the rows taken) and refuses (-1) with nothing written; the checks
that raise at the call (a full stack or queue, the pool exhausted) stay in Python.

A module of its own (numba's on-disk cache is keyed on each function's source file: this
one, anim.jitcache); it calls nothing of anim.kernels.

Spec: "Animation tasks", "The task stack", "Fades", "Gait blend".
Original: 0x001054c8 (take a task from the free list), 0x001041f8 AnimCursor_Init,
0x00105678, 0x00105990, 0x0010a310, 0x00106c80 (the constructors), 0x001754e8
TaskStack_InsertBottom, 0x001753d8 TaskStack_Push.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .jitcache import cache_setting
from .sampler import CursorFlags
from .tasks import GAIT_ALONE_HIGH, GAIT_SPEED, GAIT_STEPS, TaskFlags, TaskType

__all__ = ["run_rows", "COLUMNS", "TI_WIDTH", "TF_WIDTH", "PLACE_CHANGE", "PLACE_PUSH", "PLACE_ENQUEUE", "LAY_SIZE"]

CACHE = cache_setting(__file__)
_kernel = njit(cache=CACHE, _nrt=False, no_cfunc_wrapper=True)  # type: ignore[call-overload]

# The arrays the kernel writes: (table, name, dtype), in ``lay``'s order (two entries each:
# byte offset and size in the table's block). Tables: 0 tasks, 1 cursors, 2 fades, 3 gaits, 4 humans.
COLUMNS = (
    (0, "n_free", np.int64), (0, "free_rows", np.int64), (0, "live", np.bool_), (0, "type", np.int8),
    (0, "rate", np.float32), (0, "flags", np.int32), (0, "held", np.int64), (0, "c0", np.int64),
    (0, "c1", np.int64), (0, "aux", np.int64), (0, "nxt", np.int64), (0, "blend", np.float32),
    (0, "window", np.int8), (0, "placed", np.bool_), (0, "incoming", np.int64), (0, "speed", np.float32),
    (1, "n_free", np.int64), (1, "free_rows", np.int64), (1, "live", np.bool_), (1, "end", np.int32),
    (1, "limit", np.float32), (1, "dur", np.float32), (1, "bank", np.int32), (1, "anim", np.int32),
    (1, "flags", np.int32), (1, "evf0", np.int32), (1, "evf", np.int32), (1, "t", np.float32),
    (1, "frame", np.int32), (1, "ev", np.int32), (1, "at_end", np.bool_),
    (2, "n_free", np.int64), (2, "free_rows", np.int64), (2, "live", np.bool_), (2, "el", np.float32),
    (2, "dur", np.float32),
    (3, "n_free", np.int64), (3, "free_rows", np.int64), (3, "live", np.bool_), (3, "id0", np.int32),
    (3, "id1", np.int32), (3, "id2", np.int32), (3, "id3", np.int32), (3, "id4", np.int32), (3, "b0", np.int32),
    (3, "b1", np.int32), (3, "b2", np.int32), (3, "b3", np.int32), (3, "b4", np.int32), (3, "value", np.float32),
    (3, "target", np.float32), (3, "lower", np.int32), (3, "leader", np.int8),
    (4, "depth", np.int64), (4, "queued", np.int64), (4, "stack", np.int64), (4, "queue", np.int64),
    (4, "flags", np.int64), (4, "anim", np.int64), (4, "speed", np.float64),
)
_IX = {(t, n): i for i, (t, n, _) in enumerate(COLUMNS)}

PLACE_CHANGE, PLACE_PUSH, PLACE_ENQUEUE = 0, 1, 2

# A step's template row: the int64 part (``ti``) and the float64 part (``tf``). A clip's:
TI_OP, TI_FLAGS, TI_HELD, TI_END, TI_BANK, TI_AID, TI_CFLAGS, TI_EVF0 = range(8)
TF_BLEND, TF_LIMIT, TF_DUR, TF_RATE = range(4)
# a gait's: its five ids, banks, cursor ends and first event frames; limits and durations
TI_IDS, TI_BANKS, TI_ENDS, TI_EVF0S = 3, 8, 13, 18
TF_LIMITS, TF_DURS = 1, 6
TI_WIDTH, TF_WIDTH = 23, 11

_CLIP = 3
_GAIT = int(TaskType.GAIT)
_FADE = int(TaskType.FADE)
_CURSOR_INT = int(TaskFlags.NO_VELOCITY | TaskFlags.NO_TURN | TaskFlags.MUTED)
_MUTED_INT = int(CursorFlags.MUTED)
_CONTINUOUS_INT = int(TaskFlags.CONTINUOUS)
_STEP0, _STEP1, _STEP2 = GAIT_STEPS
_ALONE_HIGH = float(GAIT_ALONE_HIGH)
_GAIT_SPEED = float(GAIT_SPEED)

# the columns' indices in COLUMNS (numba freezes these globals as constants)
(T_NF, T_FREE, T_LIVE, T_TYPE, T_RATE, T_FLAGS, T_HELD, T_C0, T_C1, T_AUX, T_NXT, T_BLEND, T_WINDOW, T_PLACED,
 T_INCOMING, T_SPEED) = range(16)
(C_NF, C_FREE, C_LIVE, C_END, C_LIMIT, C_DUR, C_BANK, C_ANIM, C_FLAGS, C_EVF0, C_EVF, C_T, C_FRAME, C_EV,
 C_AT_END) = range(16, 31)
F_NF, F_FREE, F_LIVE, F_EL, F_DUR = range(31, 36)
(G_NF, G_FREE, G_LIVE, G_ID0, G_ID1, G_ID2, G_ID3, G_ID4, G_B0, G_B1, G_B2, G_B3, G_B4, G_VALUE, G_TARGET,
 G_LOWER, G_LEADER) = range(36, 53)
H_DEPTH, H_QUEUED, H_STACK, H_QUEUE, H_FLAGS, H_ANIM, H_SPEED = range(53, 60)
_WIDTHS = 2 * len(COLUMNS)      # lay[_WIDTHS], lay[_WIDTHS + 1]: the stack's and the queue's row widths
LAY_SIZE = _WIDTHS + 2
assert len(COLUMNS) == 60 and _IX[(4, "speed")] == H_SPEED and _IX[(3, "leader")] == G_LEADER


def _clamp04(v: float) -> float:
    """GaitTask._clamp of a finite float: clamped to 0-4 (comparisons), as a float32 value."""
    if v < 0.0:
        v = 0.0
    elif v > 4.0:
        v = 4.0
    return float(np.float32(v))


_clamp04_jit = njit(cache=CACHE, inline="always")(_clamp04)


@_kernel
def run_rows(tb, cb, fb, gb, hb, out, lay, ti, tf, sel, slot, n, place, window, speed, fade, target, value,
             vnone, n_cursors, n_gaits):
    """Write a prepared command's rows (the module docstring). In: the task, cursor, fade,
    gait and human tables' blocks (uint8), the pool's flags, ``lay``, the command's
    template rows and the row of each step (``sel``, last task first), the human's slot and
    depth, the place (PLACE_*), the blend window's index, the human's speed, the fade's
    time, a gait's target and value (``vnone``: no value, the target's), the cursors and
    gaits the command takes. Out: the pool's flags newly set (the pool's count grows by
    that), or -1 with nothing written (a free list too short, the pool's flags short of a
    row taken).
    Original: 0x001054c8 (take a task), 0x001041f8 AnimCursor_Init, 0x001754e8 /
    0x001753d8 (insert, push)."""
    t_nf = tb[lay[2 * T_NF]:lay[2 * T_NF] + lay[2 * T_NF + 1]].view(np.int64)
    t_free = tb[lay[2 * T_FREE]:lay[2 * T_FREE] + lay[2 * T_FREE + 1]].view(np.int64)
    c_nf = cb[lay[2 * C_NF]:lay[2 * C_NF] + lay[2 * C_NF + 1]].view(np.int64)
    f_nf = fb[lay[2 * F_NF]:lay[2 * F_NF] + lay[2 * F_NF + 1]].view(np.int64)
    g_nf = gb[lay[2 * G_NF]:lay[2 * G_NF] + lay[2 * G_NF + 1]].view(np.int64)
    k_steps = sel.shape[0]
    k_tasks = k_steps + 1 if place == PLACE_CHANGE else k_steps
    tn = t_nf[0]
    if tn < k_tasks or c_nf[0] < n_cursors or g_nf[0] < n_gaits:
        return -1
    if place == PLACE_CHANGE and f_nf[0] < 1:
        return -1
    n_pool = out.shape[0]
    for i in range(tn - k_tasks, tn):              # the pool's flags must reach the rows taken
        if t_free[i] >= n_pool or t_free[i] < 0:
            return -1
    # ---- nothing can refuse now: the rows, in the order the handle calls write them
    t_live = tb[lay[2 * T_LIVE]:lay[2 * T_LIVE] + lay[2 * T_LIVE + 1]].view(np.bool_)
    t_type = tb[lay[2 * T_TYPE]:lay[2 * T_TYPE] + lay[2 * T_TYPE + 1]].view(np.int8)
    t_rate = tb[lay[2 * T_RATE]:lay[2 * T_RATE] + lay[2 * T_RATE + 1]].view(np.float32)
    t_flags = tb[lay[2 * T_FLAGS]:lay[2 * T_FLAGS] + lay[2 * T_FLAGS + 1]].view(np.int32)
    t_held = tb[lay[2 * T_HELD]:lay[2 * T_HELD] + lay[2 * T_HELD + 1]].view(np.int64)
    t_c0 = tb[lay[2 * T_C0]:lay[2 * T_C0] + lay[2 * T_C0 + 1]].view(np.int64)
    t_c1 = tb[lay[2 * T_C1]:lay[2 * T_C1] + lay[2 * T_C1 + 1]].view(np.int64)
    t_aux = tb[lay[2 * T_AUX]:lay[2 * T_AUX] + lay[2 * T_AUX + 1]].view(np.int64)
    t_nxt = tb[lay[2 * T_NXT]:lay[2 * T_NXT] + lay[2 * T_NXT + 1]].view(np.int64)
    t_blend = tb[lay[2 * T_BLEND]:lay[2 * T_BLEND] + lay[2 * T_BLEND + 1]].view(np.float32)
    t_window = tb[lay[2 * T_WINDOW]:lay[2 * T_WINDOW] + lay[2 * T_WINDOW + 1]].view(np.int8)
    t_placed = tb[lay[2 * T_PLACED]:lay[2 * T_PLACED] + lay[2 * T_PLACED + 1]].view(np.bool_)
    t_incoming = tb[lay[2 * T_INCOMING]:lay[2 * T_INCOMING] + lay[2 * T_INCOMING + 1]].view(np.int64)
    t_speed = tb[lay[2 * T_SPEED]:lay[2 * T_SPEED] + lay[2 * T_SPEED + 1]].view(np.float32)
    c_free = cb[lay[2 * C_FREE]:lay[2 * C_FREE] + lay[2 * C_FREE + 1]].view(np.int64)
    c_live = cb[lay[2 * C_LIVE]:lay[2 * C_LIVE] + lay[2 * C_LIVE + 1]].view(np.bool_)
    c_end = cb[lay[2 * C_END]:lay[2 * C_END] + lay[2 * C_END + 1]].view(np.int32)
    c_limit = cb[lay[2 * C_LIMIT]:lay[2 * C_LIMIT] + lay[2 * C_LIMIT + 1]].view(np.float32)
    c_dur = cb[lay[2 * C_DUR]:lay[2 * C_DUR] + lay[2 * C_DUR + 1]].view(np.float32)
    c_bank = cb[lay[2 * C_BANK]:lay[2 * C_BANK] + lay[2 * C_BANK + 1]].view(np.int32)
    c_anim = cb[lay[2 * C_ANIM]:lay[2 * C_ANIM] + lay[2 * C_ANIM + 1]].view(np.int32)
    c_flags = cb[lay[2 * C_FLAGS]:lay[2 * C_FLAGS] + lay[2 * C_FLAGS + 1]].view(np.int32)
    c_evf0 = cb[lay[2 * C_EVF0]:lay[2 * C_EVF0] + lay[2 * C_EVF0 + 1]].view(np.int32)
    c_evf = cb[lay[2 * C_EVF]:lay[2 * C_EVF] + lay[2 * C_EVF + 1]].view(np.int32)
    c_t = cb[lay[2 * C_T]:lay[2 * C_T] + lay[2 * C_T + 1]].view(np.float32)
    c_frame = cb[lay[2 * C_FRAME]:lay[2 * C_FRAME] + lay[2 * C_FRAME + 1]].view(np.int32)
    c_ev = cb[lay[2 * C_EV]:lay[2 * C_EV] + lay[2 * C_EV + 1]].view(np.int32)
    c_at_end = cb[lay[2 * C_AT_END]:lay[2 * C_AT_END] + lay[2 * C_AT_END + 1]].view(np.bool_)
    cn = c_nf[0]
    prev = -1                                      # the task made last (the next of the one made now)
    aid = -1
    added = 0
    for k in range(k_steps):
        row = sel[k]
        op = ti[row, TI_OP]
        flags = ti[row, TI_FLAGS]
        held = ti[row, TI_HELD]
        tn -= 1
        tr = t_free[tn]
        t_live[tr] = True
        if flags != 0:
            t_flags[tr] = flags
        if held != 0:
            t_held[tr] = held
        if op != _GAIT:
            # the cursor (cursor_row: every column), then the task row (new_task_row)
            cn -= 1
            cr = c_free[cn]
            c_live[cr] = True
            c_end[cr] = ti[row, TI_END]
            c_limit[cr] = tf[row, TF_LIMIT]
            c_dur[cr] = tf[row, TF_DUR]
            c_bank[cr] = ti[row, TI_BANK]
            aid = ti[row, TI_AID]
            c_anim[cr] = aid
            c_flags[cr] = ti[row, TI_CFLAGS]
            c_evf0[cr] = ti[row, TI_EVF0]
            c_evf[cr] = ti[row, TI_EVF0]
            c_t[cr] = 0.0
            c_frame[cr] = 0
            c_ev[cr] = 0
            c_at_end[cr] = False
            t_type[tr] = op
            t_rate[tr] = tf[row, TF_RATE]
            t_c0[tr] = cr
            if op == _CLIP:                        # _next_row
                if prev >= 0:
                    t_nxt[tr] = prev
                    t_placed[prev] = True
                if tf[row, TF_BLEND] != 0.0:
                    t_blend[tr] = tf[row, TF_BLEND]
                if window != 0:
                    t_window[tr] = window
        else:                                      # GaitTask._made: the task row, the gait row, the pair
            v = _clamp04_jit(target if vnone else value)
            lower = 0 if v < _STEP0 else 1 if v < _STEP1 else 2 if v < _STEP2 else 3
            leader = 1 if v - lower >= _ALONE_HIGH else 0
            tg = v if vnone else _clamp04_jit(target)
            if not flags & _CONTINUOUS_INT:
                tg = float(math.floor(tg + 0.5))
            t_type[tr] = _GAIT
            t_rate[tr] = speed
            g_free = gb[lay[2 * G_FREE]:lay[2 * G_FREE] + lay[2 * G_FREE + 1]].view(np.int64)
            g_live = gb[lay[2 * G_LIVE]:lay[2 * G_LIVE] + lay[2 * G_LIVE + 1]].view(np.bool_)
            gn = g_nf[0] - 1
            gr = g_free[gn]
            g_nf[0] = gn
            g_live[gr] = True
            t_aux[tr] = gr
            for j in range(5):                     # id0-id4, then b0-b4
                g_ids = gb[lay[2 * (G_ID0 + j)]:lay[2 * (G_ID0 + j)] + lay[2 * (G_ID0 + j) + 1]].view(np.int32)
                g_ids[gr] = ti[row, TI_IDS + j]
            for j in range(5):
                g_bs = gb[lay[2 * (G_B0 + j)]:lay[2 * (G_B0 + j)] + lay[2 * (G_B0 + j) + 1]].view(np.int32)
                g_bs[gr] = ti[row, TI_BANKS + j]
            t_speed[tr] = _GAIT_SPEED
            base = flags & _CURSOR_INT
            for j in range(2):                     # the pair's two cursors (cursor_row)
                i = lower + j
                cn -= 1
                cr = c_free[cn]
                c_live[cr] = True
                c_end[cr] = ti[row, TI_ENDS + i]
                c_limit[cr] = tf[row, TF_LIMITS + i]
                c_dur[cr] = tf[row, TF_DURS + i]
                c_bank[cr] = ti[row, TI_BANKS + i]
                c_anim[cr] = ti[row, TI_IDS + i]
                c_flags[cr] = base if leader == j else base | _MUTED_INT
                c_evf0[cr] = ti[row, TI_EVF0S + i]
                c_evf[cr] = ti[row, TI_EVF0S + i]
                c_t[cr] = 0.0
                c_frame[cr] = 0
                c_ev[cr] = 0
                c_at_end[cr] = False
                if j:
                    t_c1[tr] = cr
                else:
                    t_c0[tr] = cr
            g_value = gb[lay[2 * G_VALUE]:lay[2 * G_VALUE] + lay[2 * G_VALUE + 1]].view(np.float32)
            g_target = gb[lay[2 * G_TARGET]:lay[2 * G_TARGET] + lay[2 * G_TARGET + 1]].view(np.float32)
            g_lower = gb[lay[2 * G_LOWER]:lay[2 * G_LOWER] + lay[2 * G_LOWER + 1]].view(np.int32)
            g_leader = gb[lay[2 * G_LEADER]:lay[2 * G_LEADER] + lay[2 * G_LEADER + 1]].view(np.int8)
            g_value[gr] = v
            g_target[gr] = tg
            g_lower[gr] = lower
            g_leader[gr] = leader
            aid = ti[row, TI_IDS + lower + leader]
        if not out[tr]:                            # the pool's take_row
            out[tr] = True
            added += 1
        prev = tr
    t_nf[0] = tn
    c_nf[0] = cn
    held = ti[sel[k_steps - 1], TI_HELD]           # the first task's held bits
    h_depth = hb[lay[2 * H_DEPTH]:lay[2 * H_DEPTH] + lay[2 * H_DEPTH + 1]].view(np.int64)
    h_stack = hb[lay[2 * H_STACK]:lay[2 * H_STACK] + lay[2 * H_STACK + 1]].view(np.int64)
    stack_width = lay[_WIDTHS]
    if place == PLACE_CHANGE:                      # change's straight path: the fade, then both slots
        tn -= 1
        fr = t_free[tn]
        t_nf[0] = tn
        t_live[fr] = True
        t_type[fr] = _FADE
        t_rate[fr] = speed
        f_free = fb[lay[2 * F_FREE]:lay[2 * F_FREE] + lay[2 * F_FREE + 1]].view(np.int64)
        f_live = fb[lay[2 * F_LIVE]:lay[2 * F_LIVE] + lay[2 * F_LIVE + 1]].view(np.bool_)
        f_el = fb[lay[2 * F_EL]:lay[2 * F_EL] + lay[2 * F_EL + 1]].view(np.float32)
        f_dur = fb[lay[2 * F_DUR]:lay[2 * F_DUR] + lay[2 * F_DUR + 1]].view(np.float32)
        fn = f_nf[0] - 1
        frow = f_free[fn]
        f_nf[0] = fn
        f_live[frow] = True
        f_el[frow] = 0.0
        f_dur[frow] = fade
        t_aux[fr] = frow
        if not out[fr]:
            out[fr] = True
            added += 1
        t_incoming[fr] = prev
        b = slot * stack_width
        for i in range(b + n, b, -1):
            h_stack[i] = h_stack[i - 1]
        h_stack[b] = prev
        h_stack[b + n + 1] = fr
        h_depth[slot] = n + 2
        t_placed[prev] = True
        t_placed[fr] = True
    elif place == PLACE_PUSH:
        h_stack[slot * stack_width + n] = prev
        h_depth[slot] = n + 1
        t_placed[prev] = True
    else:
        h_queued = hb[lay[2 * H_QUEUED]:lay[2 * H_QUEUED] + lay[2 * H_QUEUED + 1]].view(np.int64)
        h_queue = hb[lay[2 * H_QUEUE]:lay[2 * H_QUEUE] + lay[2 * H_QUEUE + 1]].view(np.int64)
        q = h_queued[slot]
        t_placed[prev] = True
        h_queue[slot * lay[_WIDTHS + 1] + q] = prev
        h_queued[slot] = q + 1
        return added
    if held != 0:
        h_flags = hb[lay[2 * H_FLAGS]:lay[2 * H_FLAGS] + lay[2 * H_FLAGS + 1]].view(np.int64)
        h_flags[slot] = h_flags[slot] | held
    h_anim = hb[lay[2 * H_ANIM]:lay[2 * H_ANIM] + lay[2 * H_ANIM + 1]].view(np.int64)
    h_anim[slot] = aid                             # the top is the fade or the task: the task's id
    return added
