"""A prepared command's rows in one compiled call (the cheap path of a repeated command).

``run_rows`` writes what anim.playback.prepared's direct path writes (the task, cursor, fade and
gait rows, their free lists, the pool's flags, the human's stack or queue row, its held
bits and anim id), in the same order, from the command's templates (small arrays made
when the command learns a set: ``TI_*`` / ``TF_*`` columns) and the tables' memory
blocks (anim.engine.store: every array of a table is a view into its ``block``), each block
seen as one array per type its columns have (``BLOCK_VIEWS``: a bool column through the
int8 view; made by the caller once per layout, so that numba compiles no view of its
own), each column found at ``lay``'s offset (the array's offset in its block in its own
items, ``COLUMNS``' order; then the stack's and the queue's row widths): 21 array
arguments instead of seventy one-row writes.
It first checks what the Python side leaves to it (the free lists long enough, the
pool's flags reaching the rows taken) and refuses (-1) with nothing written; the checks
that raise at the call (a full stack or queue, the pool exhausted) stay in Python.

A module of its own (numba's on-disk cache is keyed on each function's source file: this
one, anim.engine.jitcache); it calls nothing of anim.engine.kernels. The gait's rules are anim.engine.rules'
(compiled in: ``LINKED_SHA256`` pins that file's source, as the cache does not see it).

Spec: "Animation tasks", "The task stack", "Fades", "Gait blend".
Original: 0x001054c8 (take a task from the free list), 0x001041f8 AnimCursor_Init,
0x00105678, 0x00105990, 0x0010a310, 0x00106c80 (the constructors), 0x001754e8
TaskStack_InsertBottom, 0x001753d8 TaskStack_Push.
"""
from __future__ import annotations


import numpy as np
from numba import njit

from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.rules import GAIT_SPEED, cursor_flags_of, gait_clamp, gait_first_leader, gait_pair, gait_rounded_target
from scuffle.anim.base.enums import TaskFlags, TaskType

__all__ = ["run_rows", "COLUMNS", "TI_WIDTH", "TF_WIDTH", "PLACE_CHANGE", "PLACE_PUSH", "PLACE_ENQUEUE", "LAY_SIZE",
           "BLOCK_VIEWS"]

CACHE = cache_setting(__file__)
_kernel = njit(cache=CACHE, _nrt=False, no_cfunc_wrapper=True)  # type: ignore[call-overload]

# The arrays the kernel writes: (table, name, dtype), in ``lay``'s order (each array's offset
# in its table's block, counted in its own items). Tables: 0 tasks, 1 cursors, 2 fades, 3 gaits, 4 humans.
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
# numba's cache is keyed on this file only: the sha256 of the sources run_rows links
# (anim.engine.rules, anim.maths.detmath: anim.engine.jitcache.linked_sha256), so an edit there changes this
# file too (tests/anim/test_rules.py checks it).
LINKED_SHA256 = "1397bef0633ee19f83dd87cec9df23b55411b0d8aae95fec791a8a80f4273df1"
_IX = {(t, n): i for i, (t, n, _) in enumerate(COLUMNS)}

PLACE_CHANGE, PLACE_PUSH, PLACE_ENQUEUE = 0, 1, 2

# run_rows' first arguments: (table, dtype) of each block view, in order (a bool column is
# read and written through its table's int8 view: numpy's bool is one byte, 0 or 1)
BLOCK_VIEWS = ((0, np.int64), (0, np.int32), (0, np.float32), (0, np.int8), (1, np.int64), (1, np.int32),
               (1, np.float32), (1, np.int8), (2, np.int64), (2, np.float32), (2, np.int8), (3, np.int64),
               (3, np.int32), (3, np.float32), (3, np.int8), (4, np.int64))

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
_CONTINUOUS_INT = int(TaskFlags.CONTINUOUS)
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
_WIDTHS = len(COLUMNS)          # lay[_WIDTHS], lay[_WIDTHS + 1]: the stack's and the queue's row widths
LAY_SIZE = _WIDTHS + 2
assert len(COLUMNS) == 60 and _IX[(4, "speed")] == H_SPEED and _IX[(3, "leader")] == G_LEADER


@_kernel
def run_rows(t64, t32, tf32, t8, c64, c32, cf32, c8, fi64, ff32, f8, g64, g32, gf32, g8, h64, out, lay, ti, tf, sel,
             slot, n, place, window, speed, fade, target, value, vnone):
    """Write a prepared command's rows (the module docstring). In: the task, cursor, fade,
    gait and human tables' blocks as BLOCK_VIEWS, the pool's flags, ``lay``, the command's
    template rows and the row of each step (``sel``, last task first), the human's slot and
    depth, the place (PLACE_*), the blend window's index, the human's speed, the fade's
    time, a gait's target and value (``vnone``: no value, the target's). Out: the pool's
    flags newly set (the pool's count grows by that), or -1 with nothing written (a free
    list too short, the pool's flags short of a row taken).
    Original: 0x001054c8 (take a task), 0x001041f8 AnimCursor_Init, 0x001754e8 /
    0x001753d8 (insert, push)."""
    o_t_nf = lay[T_NF]
    o_t_free = lay[T_FREE]
    o_c_nf = lay[C_NF]
    o_f_nf = lay[F_NF]
    o_g_nf = lay[G_NF]
    k_steps = sel.shape[0]
    n_cursors = 0
    n_gaits = 0
    for k in range(k_steps):
        if ti[sel[k], TI_OP] == _GAIT:
            n_cursors += 2
            n_gaits += 1
        else:
            n_cursors += 1
    k_tasks = k_steps + 1 if place == PLACE_CHANGE else k_steps
    tn = t64[o_t_nf]
    if tn < k_tasks or c64[o_c_nf] < n_cursors or g64[o_g_nf] < n_gaits:
        return -1
    if place == PLACE_CHANGE and fi64[o_f_nf] < 1:
        return -1
    n_pool = out.shape[0]
    for i in range(tn - k_tasks, tn):              # the pool's flags must reach the rows taken
        if t64[o_t_free + i] >= n_pool or t64[o_t_free + i] < 0:
            return -1
    # ---- nothing can refuse now: the rows, in the order the handle calls write them
    o_t_live = lay[T_LIVE]
    o_t_type = lay[T_TYPE]
    o_t_rate = lay[T_RATE]
    o_t_flags = lay[T_FLAGS]
    o_t_held = lay[T_HELD]
    o_t_c0 = lay[T_C0]
    o_t_c1 = lay[T_C1]
    o_t_aux = lay[T_AUX]
    o_t_nxt = lay[T_NXT]
    o_t_blend = lay[T_BLEND]
    o_t_window = lay[T_WINDOW]
    o_t_placed = lay[T_PLACED]
    o_t_incoming = lay[T_INCOMING]
    o_t_speed = lay[T_SPEED]
    o_c_free = lay[C_FREE]
    o_c_live = lay[C_LIVE]
    o_c_end = lay[C_END]
    o_c_limit = lay[C_LIMIT]
    o_c_dur = lay[C_DUR]
    o_c_bank = lay[C_BANK]
    o_c_anim = lay[C_ANIM]
    o_c_flags = lay[C_FLAGS]
    o_c_evf0 = lay[C_EVF0]
    o_c_evf = lay[C_EVF]
    o_c_t = lay[C_T]
    o_c_frame = lay[C_FRAME]
    o_c_ev = lay[C_EV]
    o_c_at_end = lay[C_AT_END]
    cn = c64[o_c_nf]
    prev = -1                                      # the task made last (the next of the one made now)
    aid = -1
    added = 0
    for k in range(k_steps):
        row = sel[k]
        op = ti[row, TI_OP]
        flags = ti[row, TI_FLAGS]
        held = ti[row, TI_HELD]
        tn -= 1
        tr = t64[o_t_free + tn]
        t8[o_t_live + tr] = 1
        if flags != 0:
            t32[o_t_flags + tr] = flags
        if held != 0:
            t64[o_t_held + tr] = held
        if op != _GAIT:
            # the cursor (cursor_row: every column), then the task row (write_task_row)
            cn -= 1
            cr = c64[o_c_free + cn]
            c8[o_c_live + cr] = 1
            c32[o_c_end + cr] = ti[row, TI_END]
            cf32[o_c_limit + cr] = tf[row, TF_LIMIT]
            cf32[o_c_dur + cr] = tf[row, TF_DUR]
            c32[o_c_bank + cr] = ti[row, TI_BANK]
            aid = ti[row, TI_AID]
            c32[o_c_anim + cr] = aid
            c32[o_c_flags + cr] = ti[row, TI_CFLAGS]
            c32[o_c_evf0 + cr] = ti[row, TI_EVF0]
            c32[o_c_evf + cr] = ti[row, TI_EVF0]
            cf32[o_c_t + cr] = 0.0
            c32[o_c_frame + cr] = 0
            c32[o_c_ev + cr] = 0
            c8[o_c_at_end + cr] = 0
            t8[o_t_type + tr] = op
            tf32[o_t_rate + tr] = tf[row, TF_RATE]
            t64[o_t_c0 + tr] = cr
            if op == _CLIP:                        # _next_row
                if prev >= 0:
                    t64[o_t_nxt + tr] = prev
                    t8[o_t_placed + prev] = 1
                if tf[row, TF_BLEND] != 0.0:
                    tf32[o_t_blend + tr] = tf[row, TF_BLEND]
                if window != 0:
                    t8[o_t_window + tr] = window
        else:                                      # GaitTask._made: the task row, the gait row, the pair
            # the gait's rules (anim.engine.rules): the value and target clamped and held as float32s,
            # the pair, its first leader, the target rounded unless CONTINUOUS
            v = float(np.float32(gait_clamp(target if vnone else value)))
            lower = gait_pair(v)
            leader = gait_first_leader(v, lower)
            tg = v if vnone else float(np.float32(gait_clamp(target)))
            tg = gait_rounded_target(tg, flags & _CONTINUOUS_INT)
            t8[o_t_type + tr] = _GAIT
            tf32[o_t_rate + tr] = speed
            o_g_free = lay[G_FREE]
            o_g_live = lay[G_LIVE]
            gn = g64[o_g_nf] - 1
            gr = g64[o_g_free + gn]
            g64[o_g_nf] = gn
            g8[o_g_live + gr] = 1
            t64[o_t_aux + tr] = gr
            for j in range(5):                     # id0-id4, then b0-b4
                g32[lay[G_ID0 + j] + gr] = ti[row, TI_IDS + j]
            for j in range(5):
                g32[lay[G_B0 + j] + gr] = ti[row, TI_BANKS + j]
            tf32[o_t_speed + tr] = _GAIT_SPEED
            base = flags & _CURSOR_INT
            for j in range(2):                     # the pair's two cursors (cursor_row)
                i = lower + j
                cn -= 1
                cr = c64[o_c_free + cn]
                c8[o_c_live + cr] = 1
                c32[o_c_end + cr] = ti[row, TI_ENDS + i]
                cf32[o_c_limit + cr] = tf[row, TF_LIMITS + i]
                cf32[o_c_dur + cr] = tf[row, TF_DURS + i]
                c32[o_c_bank + cr] = ti[row, TI_BANKS + i]
                c32[o_c_anim + cr] = ti[row, TI_IDS + i]
                c32[o_c_flags + cr] = cursor_flags_of(base, leader == j)      # the follower muted
                c32[o_c_evf0 + cr] = ti[row, TI_EVF0S + i]
                c32[o_c_evf + cr] = ti[row, TI_EVF0S + i]
                cf32[o_c_t + cr] = 0.0
                c32[o_c_frame + cr] = 0
                c32[o_c_ev + cr] = 0
                c8[o_c_at_end + cr] = 0
                if j:
                    t64[o_t_c1 + tr] = cr
                else:
                    t64[o_t_c0 + tr] = cr
            o_g_value = lay[G_VALUE]
            o_g_target = lay[G_TARGET]
            o_g_lower = lay[G_LOWER]
            o_g_leader = lay[G_LEADER]
            gf32[o_g_value + gr] = v
            gf32[o_g_target + gr] = tg
            g32[o_g_lower + gr] = lower
            g8[o_g_leader + gr] = leader
            aid = ti[row, TI_IDS + lower + leader]
        if not out[tr]:                            # the pool's take_row
            out[tr] = True
            added += 1
        prev = tr
    t64[o_t_nf] = tn
    c64[o_c_nf] = cn
    held = ti[sel[k_steps - 1], TI_HELD]           # the first task's held bits
    o_h_depth = lay[H_DEPTH]
    o_h_stack = lay[H_STACK]
    stack_width = lay[_WIDTHS]
    if place == PLACE_CHANGE:                      # change's straight path: the fade, then both slots
        tn -= 1
        fr = t64[o_t_free + tn]
        t64[o_t_nf] = tn
        t8[o_t_live + fr] = 1
        t8[o_t_type + fr] = _FADE
        tf32[o_t_rate + fr] = speed
        o_f_free = lay[F_FREE]
        o_f_live = lay[F_LIVE]
        o_f_el = lay[F_EL]
        o_f_dur = lay[F_DUR]
        fn = fi64[o_f_nf] - 1
        frow = fi64[o_f_free + fn]
        fi64[o_f_nf] = fn
        f8[o_f_live + frow] = 1
        ff32[o_f_el + frow] = 0.0
        ff32[o_f_dur + frow] = fade
        t64[o_t_aux + fr] = frow
        if not out[fr]:
            out[fr] = True
            added += 1
        t64[o_t_incoming + fr] = prev
        b = slot * stack_width
        for i in range(b + n, b, -1):
            h64[o_h_stack + i] = h64[o_h_stack + i - 1]
        h64[o_h_stack + b] = prev
        h64[o_h_stack + b + n + 1] = fr
        h64[o_h_depth + slot] = n + 2
        t8[o_t_placed + prev] = 1
        t8[o_t_placed + fr] = 1
    elif place == PLACE_PUSH:
        h64[o_h_stack + slot * stack_width + n] = prev
        h64[o_h_depth + slot] = n + 1
        t8[o_t_placed + prev] = 1
    else:
        o_h_queued = lay[H_QUEUED]
        o_h_queue = lay[H_QUEUE]
        q = h64[o_h_queued + slot]
        t8[o_t_placed + prev] = 1
        h64[o_h_queue + slot * lay[_WIDTHS + 1] + q] = prev
        h64[o_h_queued + slot] = q + 1
        return added
    if held != 0:
        o_h_flags = lay[H_FLAGS]
        h64[o_h_flags + slot] = h64[o_h_flags + slot] | held
    o_h_anim = lay[H_ANIM]
    h64[o_h_anim + slot] = aid                     # the top is the fade or the task: the task's id
    return added
