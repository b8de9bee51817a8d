"""A prepared command's rows in compiled code: one command at once (``run_rows``), a
command buffer's rows in order (``apply_commands``), and a batch of commands checked and
made buffer rows (``buffer_commands``: anim.playback.batched), and running gaits' new
targets as columns (``gait_targets``); and the handle calls' commonest rows, each in one
call: a constructor's single-clip task (``clip_rows``) or gait (``gait_rows``:
anim.playback.construct) and a change (``change_rows``: its fade and the stack's slots, anim.playback.stackrules).

Both write what anim.playback.prepared's direct path writes (the task, cursor, fade and
gait rows, their free lists, the pool's flags, the human's stack or queue row, its held
bits and anim id), in the same order, from the command's template rows (``TI_*`` /
``TF_*`` columns, learnt per command and anim set) through the one compiled writer of each
row kind (anim.engine.kernels_write: ``task_init``, ``cursor_init``, ``fade_init``,
``gait_init``, the gait's rules from anim.engine.rules). The tables come as their memory
blocks (anim.engine.store: every array of a table is a view into its ``block``), each
block seen as one array per type its columns have (``BLOCK_VIEWS``: a bool column through
the int8 view; made by the caller once per layout, so that numba compiles no view of its
own), each column found at ``lay``'s offset (the array's offset in its block in its own
items, ``COLUMNS``' order; then the stack's and the queue's row widths): one named tuple
of 19 views (anim.engine.kernel_types.CmdBlocks) instead of seventy one-row writes; the
command's numbers come as one more (CmdArgs), a batch's as a few (BufTables, CmdBuffer,
CmdPlans, CmdBatch).
A command first checks what the Python side leaves to it (the free lists long enough,
the pool's flags reaching the rows taken) and refuses (-1) with nothing written; the
checks that raise at the call (a full stack or queue, the pool exhausted) stay in Python.

A module of its own (numba's on-disk cache is keyed on each function's source file: this
one, anim.engine.jitcache); it calls nothing of anim.engine.kernels. What it links
(kernels_write, anim.engine.rules) is pinned by ``LINKED_SHA256``, as the cache does not see it.

Spec: "Animation tasks", "The task stack", "Fades", "Gait blend".
Original: 0x001054c8 (take a task from the free list), 0x001041f8 AnimCursor_Init,
0x00105678, 0x00105990, 0x0010a310, 0x00106c80 (the constructors), 0x001754e8
TaskStack_InsertBottom, 0x001753d8 TaskStack_Push.
"""
from __future__ import annotations


import numpy as np
from numba import njit

from scuffle.anim.engine.jitcache import cache_setting
# (imported before numba's cache is read: its index names the named tuples the kernels take)
from scuffle.anim.engine import kernel_types  # noqa: F401
from collections import namedtuple

from scuffle.anim.engine.kernels_write import (cursor_init, direction_init, direction_values, fade_init, gait_init,
                                               gait_values, mix_init, mix_values, pick_init, pick_values, take_row,
                                               task_init)
from scuffle.anim.engine.jitpipe import prefetch as _prefetch
from scuffle.anim.engine.rules import NEAR_ROWS, cursor_flags_of, gait_clamp, near_scaled
from scuffle.anim.base.enums import TaskFlags, TaskType

__all__ = ["run_rows", "apply_commands", "buffer_commands", "gait_targets", "clip_rows", "gait_rows", "change_rows", "HANDLE_KERNELS", "rows_written", "COLUMNS", "TI_WIDTH", "TF_WIDTH", "PLACE_CHANGE", "PLACE_PUSH",
           "PLACE_ENQUEUE", "LAY_SIZE", "BLOCK_VIEWS", "B_WIDTH", "B_MAX_STEPS"]

CACHE = cache_setting(__file__)
_kernel = njit(cache=CACHE, _nrt=False, no_cfunc_wrapper=True)  # type: ignore[call-overload]
_helper = njit(cache=CACHE, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
# a helper two kernels share whose IR numba copies into each (no library of its own to load: a
# kernel's loaded machine code stays what the one text inline would give)
_inline = njit(cache=CACHE, inline="always")

# The arrays the kernel writes: (table, name, dtype), in ``lay``'s order (each array's offset
# in its table's block, counted in its own items). Tables: 0 tasks, 1 cursors, 2 fades, 3 gaits, 4 humans.
COLUMNS = (
    (0, "n_free", np.int64), (0, "free_rows", np.int32), (0, "live", np.bool_), (0, "type", np.int8),
    (0, "rate", np.float32), (0, "flags", np.int32), (0, "held", np.int64), (0, "c0", np.int32),
    (0, "c1", np.int32), (0, "aux", np.int32), (0, "nxt", np.int32), (0, "blend", np.float32),
    (0, "window", np.int8), (0, "placed", np.bool_), (0, "incoming", np.int32), (0, "speed", np.float32),
    (1, "n_free", np.int64), (1, "free_rows", np.int32), (1, "live", np.bool_), (1, "end", np.int32),
    (1, "limit", np.float32), (1, "dur", np.float32), (1, "bank", np.int32), (1, "anim", np.int32),
    (1, "flags", np.int32), (1, "evf0", np.int32), (1, "evf", np.int32), (1, "t", np.float32),
    (1, "frame", np.int32), (1, "ev", np.int32), (1, "at_end", np.bool_),
    (2, "n_free", np.int64), (2, "free_rows", np.int32), (2, "live", np.bool_), (2, "el", np.float32),
    (2, "dur", np.float32),
    (3, "n_free", np.int64), (3, "free_rows", np.int32), (3, "live", np.bool_), (3, "id0", np.int32),
    (3, "id1", np.int32), (3, "id2", np.int32), (3, "id3", np.int32), (3, "id4", np.int32), (3, "b0", np.int32),
    (3, "b1", np.int32), (3, "b2", np.int32), (3, "b3", np.int32), (3, "b4", np.int32), (3, "value", np.float32),
    (3, "target", np.float32), (3, "lower", np.int32), (3, "leader", np.int8),
    (4, "depth", np.int32), (4, "queued", np.int32), (4, "stack", np.int32), (4, "queue", np.int32),
    (4, "flags", np.int64), (4, "anim", np.int64), (4, "speed", np.float64),
    (0, "value", np.float64), (0, "target", np.float64), (0, "c2", np.int32), (0, "c3", np.int32),
    (0, "base", np.int32), (0, "centre", np.int8), (0, "sampling", np.int8), (0, "dir_banks", np.int32),
)
# numba's cache is keyed on this file only: the sha256 of the sources its kernels link
# (kernels_write, anim.engine.rules, anim.maths.detmath: anim.engine.jitcache.linked_sha256), so an edit there changes this
# file too (tests/anim/test_rules.py checks it).
LINKED_SHA256 = "f384fe1bf04b585a94a6aa2a3eff0227df8a7469d6c0016b5f09a4cb1c1624fe"
_IX = {(t, n): i for i, (t, n, _) in enumerate(COLUMNS)}

PLACE_CHANGE, PLACE_PUSH, PLACE_ENQUEUE = 0, 1, 2
# the handle calls' compiled writers (a constructor's clip or gait, a change): anim.playback.prepared
HANDLE_KERNELS = ("clip_rows", "gait_rows", "change_rows")


def rows_written(got: int) -> tuple[int, int, int]:
    """A handle call's compiled writer's answer (``got`` >= 0: the task row << 32, its other
    row << 1, 1 when the pool's flag was newly set) as (task row, other row, newly set)."""
    return got >> 32, (got >> 1) & 0x7FFFFFFF, got & 1

# run_rows' first arguments: (table, dtype) of each block view, in order (a bool column is
# read and written through its table's int8 view: numpy's bool is one byte, 0 or 1)
BLOCK_VIEWS = ((0, np.int64), (0, np.int32), (0, np.float32), (0, np.int8), (1, np.int64), (1, np.int32),
               (1, np.float32), (1, np.int8), (2, np.int64), (2, np.int32), (2, np.float32), (2, np.int8), (3, np.int64),
               (3, np.int32), (3, np.float32), (3, np.int8), (4, np.int64), (4, np.int32), (0, np.float64))

# A step's template row: the int64 part (``ti``) and the float64 part (``tf``). A clip's:
TI_OP, TI_FLAGS, TI_HELD, TI_END, TI_BANK, TI_AID, TI_CFLAGS, TI_EVF0 = range(8)
TF_BLEND, TF_LIMIT, TF_DUR, TF_RATE = range(4)
# a blend's (a gait's five clips, a mix's two, a pick's four, a direction's eight: ids base
# .. base + 7): its ids, banks, cursor ends and first event frames; limits and durations;
# a pick's sampling rule's index and rate
MAX_CLIPS = 8
TI_IDS = 3
TI_BANKS = TI_IDS + MAX_CLIPS
TI_ENDS = TI_BANKS + MAX_CLIPS
TI_EVF0S = TI_ENDS + MAX_CLIPS
TI_SAMPLING = TI_EVF0S + MAX_CLIPS
TF_LIMITS = 1
TF_DURS = TF_LIMITS + MAX_CLIPS
TF_PICK_RATE = TF_DURS + MAX_CLIPS
TI_WIDTH, TF_WIDTH = TI_SAMPLING + 1, TF_PICK_RATE + 1

# A command buffer's row (anim.playback.cmdbuffer): B_WIDTH words of 8 bytes, read as int64
# (``bi``) and as float64 (``bf``, the same memory): the place, the human's row, the steps'
# count, the blend window's index, vnone, the steps' template rows (B_MAX_STEPS words, the
# last task first), then the speed, the fade, a gait's target and value.
B_PLACE, B_SLOT, B_STEPS, B_WINDOW, B_VNONE, B_SEL = range(6)
B_MAX_STEPS = 4
BF_SPEED, BF_FADE, BF_TARGET, BF_VALUE = range(B_SEL + B_MAX_STEPS, B_SEL + B_MAX_STEPS + 4)
B_WIDTH = BF_VALUE + 1

_CLIP = 3
_LOOP = int(TaskType.LOOP)
_GAIT = int(TaskType.GAIT)
_FADE = int(TaskType.FADE)
_MIX = int(TaskType.MIX)
_PICK = int(TaskType.PICK)
_DIRECTION = int(TaskType.DIRECTION)
_CURSOR_INT = int(TaskFlags.NO_VELOCITY | TaskFlags.NO_TURN | TaskFlags.MUTED)
_CONTINUOUS_INT = int(TaskFlags.CONTINUOUS)

# the columns' indices in COLUMNS (numba freezes these globals as constants)
(T_NF, T_FREE, T_LIVE, T_TYPE, T_RATE, T_FLAGS, T_HELD, T_C0, T_C1, T_AUX, T_NXT, T_BLEND, T_WINDOW, T_PLACED,
 T_INCOMING, T_SPEED) = range(16)
(C_NF, C_FREE, C_LIVE, C_END, C_LIMIT, C_DUR, C_BANK, C_ANIM, C_FLAGS, C_EVF0, C_EVF, C_T, C_FRAME, C_EV,
 C_AT_END) = range(16, 31)
F_NF, F_FREE, F_LIVE, F_EL, F_DUR = range(31, 36)
(G_NF, G_FREE, G_LIVE, G_ID0, G_ID1, G_ID2, G_ID3, G_ID4, G_B0, G_B1, G_B2, G_B3, G_B4, G_VALUE, G_TARGET,
 G_LOWER, G_LEADER) = range(36, 53)
H_DEPTH, H_QUEUED, H_STACK, H_QUEUE, H_FLAGS, H_ANIM, H_SPEED = range(53, 60)
T_VALUE, T_TARGET, T_C2, T_C3, T_BASE, T_CENTRE, T_SAMPLING, T_DIR_BANKS = range(60, 68)
_WIDTHS = len(COLUMNS)          # lay[_WIDTHS], lay[_WIDTHS + 1]: the stack's and the queue's row widths
LAY_SIZE = _WIDTHS + 2
assert len(COLUMNS) == 68 and _IX[(4, "speed")] == H_SPEED and _IX[(3, "leader")] == G_LEADER \
    and _IX[(0, "dir_banks")] == T_DIR_BANKS


# The tables as the row writers (anim.engine.kernels_write) take them: named tuples of views
# into the blocks (a bool column through its int8 view), made inside the kernel.
_TaskRows = namedtuple("_TaskRows", ("live", "type", "rate", "flags", "held", "c0", "c1", "aux", "nxt", "blend",
                                     "window", "placed", "incoming", "speed", "value", "target", "c2", "c3", "base",
                                     "centre", "sampling", "dir_banks", "free_rows", "n_free", "at"))
_CursorRows = namedtuple("_CursorRows", ("live", "end", "limit", "dur", "bank", "anim", "flags", "evf0", "evf", "t",
                                         "frame", "ev", "at_end", "free_rows", "n_free", "at"))
_FadeRows = namedtuple("_FadeRows", ("live", "el", "dur", "free_rows", "n_free", "at"))
_GaitRows = namedtuple("_GaitRows", ("live", "id0", "id1", "id2", "id3", "id4", "b0", "b1", "b2", "b3", "b4", "value",
                                     "target", "lower", "leader", "free_rows", "n_free", "at"))


@_helper
def _rows_of(blocks, lay, ats):
    """The task, cursor, fade and gait tables as named tuples of views into their blocks
    (``blocks``: CmdBlocks; each column at ``lay``'s offset; the task table's ``dir_banks``
    flat, eight a row), each with its free list's index (``ats``: the four tables'
    ``free_at``, a cache kept beside the block: kernels_write.take_row)."""
    t64, t32, tf32, t8, c64, c32, cf32, c8, fi64, fi32, ff32, f8, g64, g32, gf32, g8, _, _, tf64 = blocks
    tasks = _TaskRows(t8[lay[T_LIVE]:], t8[lay[T_TYPE]:], tf32[lay[T_RATE]:], t32[lay[T_FLAGS]:],
                      t64[lay[T_HELD]:], t32[lay[T_C0]:], t32[lay[T_C1]:], t32[lay[T_AUX]:], t32[lay[T_NXT]:],
                      tf32[lay[T_BLEND]:], t8[lay[T_WINDOW]:], t8[lay[T_PLACED]:], t32[lay[T_INCOMING]:],
                      tf32[lay[T_SPEED]:], tf64[lay[T_VALUE]:], tf64[lay[T_TARGET]:], t32[lay[T_C2]:],
                      t32[lay[T_C3]:], t32[lay[T_BASE]:], t8[lay[T_CENTRE]:], t8[lay[T_SAMPLING]:],
                      t32[lay[T_DIR_BANKS]:], t32[lay[T_FREE]:], t64[lay[T_NF]:], ats[0])
    cursors = _CursorRows(c8[lay[C_LIVE]:], c32[lay[C_END]:], cf32[lay[C_LIMIT]:], cf32[lay[C_DUR]:],
                          c32[lay[C_BANK]:], c32[lay[C_ANIM]:], c32[lay[C_FLAGS]:], c32[lay[C_EVF0]:],
                          c32[lay[C_EVF]:], cf32[lay[C_T]:], c32[lay[C_FRAME]:], c32[lay[C_EV]:],
                          c8[lay[C_AT_END]:], c32[lay[C_FREE]:], c64[lay[C_NF]:], ats[1])
    fades = _FadeRows(f8[lay[F_LIVE]:], ff32[lay[F_EL]:], ff32[lay[F_DUR]:], fi32[lay[F_FREE]:], fi64[lay[F_NF]:],
                      ats[2])
    gaits = _GaitRows(g8[lay[G_LIVE]:], g32[lay[G_ID0]:], g32[lay[G_ID1]:], g32[lay[G_ID2]:], g32[lay[G_ID3]:],
                      g32[lay[G_ID4]:], g32[lay[G_B0]:], g32[lay[G_B1]:], g32[lay[G_B2]:], g32[lay[G_B3]:],
                      g32[lay[G_B4]:], gf32[lay[G_VALUE]:], gf32[lay[G_TARGET]:], g32[lay[G_LOWER]:],
                      g8[lay[G_LEADER]:], g32[lay[G_FREE]:], g64[lay[G_NF]:], ats[3])
    return tasks, cursors, fades, gaits


# The handle calls' writers take only the tables and columns they write (a kernel's
# machine code grows with every view it makes: each of these three is loaded with the rest).
_TaskFew = namedtuple("_TaskFew", ("live", "type", "rate", "flags", "held", "c0", "c1", "aux", "placed", "incoming",
                                   "speed", "free_rows", "n_free", "at"))


@_helper
def _task_few(blocks, lay, ats):
    """The task table's columns a handle call's writer writes, as views into its block."""
    t64, t32, tf32, t8 = blocks.t64, blocks.t32, blocks.tf32, blocks.t8
    return _TaskFew(t8[lay[T_LIVE]:], t8[lay[T_TYPE]:], tf32[lay[T_RATE]:], t32[lay[T_FLAGS]:], t64[lay[T_HELD]:],
                    t32[lay[T_C0]:], t32[lay[T_C1]:], t32[lay[T_AUX]:], t8[lay[T_PLACED]:], t32[lay[T_INCOMING]:],
                    tf32[lay[T_SPEED]:], t32[lay[T_FREE]:], t64[lay[T_NF]:], ats[0])


@_helper
def _task_room(tasks, out, t_hint):
    """Whether a handle call's writer can take a task row near ``t_hint``: the free list
    holds one and the pool's flags reach every row the take can give (the rows within
    NEAR_ROWS of the hint, ``_near_fits``, and the list's top)."""
    tn = tasks.n_free[0]
    if tn < 1:
        return False
    n_pool = out.shape[0]
    if not _near_fits(t_hint, tasks.at.shape[0], n_pool):
        return False
    top = tasks.free_rows[tn - 1]
    return 0 <= top < n_pool


@_helper
def _cursor_rows(blocks, lay, ats):
    """The cursor table as ``_rows_of`` gives it, alone."""
    c64, c32, cf32, c8 = blocks.c64, blocks.c32, blocks.cf32, blocks.c8
    return _CursorRows(c8[lay[C_LIVE]:], c32[lay[C_END]:], cf32[lay[C_LIMIT]:], cf32[lay[C_DUR]:],
                       c32[lay[C_BANK]:], c32[lay[C_ANIM]:], c32[lay[C_FLAGS]:], c32[lay[C_EVF0]:],
                       c32[lay[C_EVF]:], cf32[lay[C_T]:], c32[lay[C_FRAME]:], c32[lay[C_EV]:],
                       c8[lay[C_AT_END]:], c32[lay[C_FREE]:], c64[lay[C_NF]:], ats[1])


@_helper
def _fits(tasks, cursors, fades, gaits, out, ti, sel, place, anchor):
    """Whether the free lists hold the rows a command takes (its steps' tasks, cursors and
    gaits; a change's fade) and the pool's flags reach every task row it can take: the
    rows within NEAR_ROWS of its task rows' hint ``anchor`` (``_near_fits``) and those the
    top of the free list can give (a row taken from the middle moves the top into its
    place: the top's ``k`` rows are those the list's top ``k`` held)."""
    k_steps = sel.shape[0]
    n_cursors = 0
    n_gaits = 0
    for k in range(k_steps):
        op = ti[sel[k], TI_OP]
        if op == _GAIT:
            n_cursors += 2
            n_gaits += 1
        else:
            n_cursors += _cursors_of(op)
    k_tasks = k_steps + 1 if place == PLACE_CHANGE else k_steps
    tn = tasks.n_free[0]
    if tn < k_tasks or cursors.n_free[0] < n_cursors or gaits.n_free[0] < n_gaits:
        return False
    if place == PLACE_CHANGE and fades.n_free[0] < 1:
        return False
    n_pool = out.shape[0]
    if not _near_fits(anchor, tasks.at.shape[0], n_pool):
        return False
    for i in range(tn - k_tasks, tn):
        if tasks.free_rows[i] >= n_pool or tasks.free_rows[i] < 0:
            return False
    return True


@_helper
def _near_fits(anchor, cap, n_pool):
    """Whether every row a take near row ``anchor`` can look at (rules.near_free_row over
    ``cap`` rows) has a flag of the pool's ``n_pool``."""
    if anchor < 0:
        return True
    hi = anchor + NEAR_ROWS                        # (no min(): numba compiles one per type pair)
    if hi > cap - 1:
        hi = cap - 1
    return hi < n_pool


@_helper
def _anchor(h32, lay, slot):
    """The hint of a human's new task rows (anim.engine.store.near_hints): its stack's
    bottom task, or -1 with an empty stack."""
    if h32[lay[H_DEPTH] + slot] > 0:
        return np.int64(h32[lay[H_STACK] + slot * lay[_WIDTHS]])
    return np.int64(-1)


@_helper
def _cursors_of(op):
    """The cursors a task of type ``op`` links (anim.engine.rules.TASK_CURSORS): a mix's two,
    a pick's four, a direction's three, a gait's pair, a clip's one."""
    if op == _PICK:
        return 4
    if op == _DIRECTION:
        return 3
    if op == _MIX or op == _GAIT:
        return 2
    return 1


@_helper
def _blend_cursor(cursors, ti, tf, row, j, flags, near_c):
    """A blend step's clip ``j`` (its template's j-th id) as a new cursor row with ``flags``
    (cursor_row's columns), taken near row ``near_c``: the row."""
    cr = take_row(cursors.live, cursors.free_rows, cursors.n_free, cursors.at, near_c)
    cursor_init(cursors, cr, ti[row, TI_ENDS + j], tf[row, TF_LIMITS + j], tf[row, TF_DURS + j], ti[row, TI_BANKS + j],
                ti[row, TI_IDS + j], flags, ti[row, TI_EVF0S + j])
    return cr


@_helper
def _pool_take(out, tr):
    """The pool's take_row: 1 when row ``tr``'s flag is newly set."""
    if out[tr]:
        return 0
    out[tr] = True
    return 1


@_inline
def _change_place(tasks, fades, h32, lay, out, slot, n, near_t, speed, fade, tr):
    """A change's place for task row ``tr`` on the ``n`` tasks of human row ``slot`` (its
    room checked): the fade's task row taken near row ``near_t``, of type 9 at rate
    ``speed``, its fade row near the same fraction of the fade table, nothing elapsed of
    ``fade``, over ``tr``, its pool flag set; then insert_bottom and push (``tr`` at the
    bottom, the fade on top) and both placed. Out: the fade's task row << 32, its fade
    row << 1, and 1 when the pool's flag was newly set. Original: 0x00106c80 (the fade),
    0x001754e8 TaskStack_InsertBottom, 0x001753d8 TaskStack_Push."""
    fr = take_row(tasks.live, tasks.free_rows, tasks.n_free, tasks.at, near_t)
    task_init(tasks, fr, np.int64(_FADE), speed, np.int64(0), np.int64(0))   # (int64s: one compile)
    frow = take_row(fades.live, fades.free_rows, fades.n_free, fades.at,
                    near_scaled(fr, np.int64(fades.at.shape[0]), np.int64(tasks.at.shape[0])))
    fade_init(fades, tasks, fr, frow, fade)
    newly = _pool_take(out, fr)
    tasks.incoming[fr] = tr
    o_h_stack = lay[H_STACK]
    b = slot * lay[_WIDTHS]
    for i in range(b + n, b, -1):
        h32[o_h_stack + i] = h32[o_h_stack + i - 1]
    h32[o_h_stack + b] = tr
    h32[o_h_stack + b + n + 1] = fr
    h32[lay[H_DEPTH] + slot] = n + 2
    tasks.placed[tr] = True
    tasks.placed[fr] = True
    return (np.int64(fr) << 32) | (np.int64(frow) << 1) | newly


@_inline
def _gait_task(tasks, cursors, gaits, ti, tf, row, tr, speed, flags, held, gv, near_c):
    """A gait's rows on task row ``tr`` (GaitTask._made's): the task's type 12, rate
    ``speed``, ``flags`` and ``held``; its gait row near the same fraction of the gait
    table, the five clips of template row ``row`` (``ti``, ``tf``), its value, target, pair
    and first leader by the rules (``gv``: the target, the value, 1 when there is no value:
    ``gait_values``); the pair's two cursors near row ``near_c``, the follower muted. Out:
    the leading clip's index among the five. Original: 0x0010a310."""
    target, value, vnone = gv
    v, tg, lower, leader = gait_values(target, value, vnone, flags & _CONTINUOUS_INT)
    task_init(tasks, tr, np.int64(_GAIT), speed, flags, held)
    gr = take_row(gaits.live, gaits.free_rows, gaits.n_free, gaits.at,
                  near_scaled(tr, np.int64(gaits.at.shape[0]), np.int64(tasks.at.shape[0])))
    gait_init(gaits, tasks, tr, gr, ti[row, TI_IDS:TI_IDS + 5], ti[row, TI_BANKS:TI_BANKS + 5], v, tg, lower, leader)
    base = flags & _CURSOR_INT
    for j in range(2):                             # the pair's two cursors (cursor_row), the follower muted
        i = lower + j
        cr = take_row(cursors.live, cursors.free_rows, cursors.n_free, cursors.at, near_c)
        cursor_init(cursors, cr, ti[row, TI_ENDS + i], tf[row, TF_LIMITS + i], tf[row, TF_DURS + i],
                    ti[row, TI_BANKS + i], ti[row, TI_IDS + i], cursor_flags_of(base, leader == j),
                    ti[row, TI_EVF0S + i])
        if j:
            tasks.c1[tr] = cr
        else:
            tasks.c0[tr] = cr
    return lower + leader


@_helper
def _command(rows, h64, h32, out, lay, ti, tf, sel, cmd):
    """One prepared command's rows (the module docstring), through the row writers
    (anim.engine.kernels_write), then its place on the stack or queue. In: the task,
    cursor, fade and gait tables' rows (``_rows_of``), the human table's int64 and int32
    views, the pool's flags, ``lay``, the template rows and the row of each step, the
    command's numbers (``cmd``: CmdArgs' fields in order). Out: the pool's flags newly
    set, or -1 with nothing written."""
    tasks, cursors, fades, gaits = rows
    slot, n, place, window, speed, fade, target, value, vnone = cmd
    near_t = _anchor(h32, lay, slot)               # the rows' hints (anim.engine.store.near_hints)
    if not _fits(tasks, cursors, fades, gaits, out, ti, sel, place, near_t):
        return -1
    near_c = np.int64(tasks.c0[near_t]) if near_t >= 0 else np.int64(-1)
    # ---- nothing can refuse now: the rows, in the order the handle calls write them
    k_steps = sel.shape[0]
    prev = -1                                      # the task made last (the next of the one made now)
    aid = -1
    added = 0
    for k in range(k_steps):
        row = sel[k]
        op = ti[row, TI_OP]
        flags = ti[row, TI_FLAGS]
        tr = take_row(tasks.live, tasks.free_rows, tasks.n_free, tasks.at, near_t)
        if op == _CLIP or op == _LOOP:
            # the cursor (cursor_row), then the task row (write_task_row)
            cr = take_row(cursors.live, cursors.free_rows, cursors.n_free, cursors.at, near_c)
            aid = ti[row, TI_AID]
            cursor_init(cursors, cr, ti[row, TI_END], tf[row, TF_LIMIT], tf[row, TF_DUR], ti[row, TI_BANK], aid,
                        ti[row, TI_CFLAGS], ti[row, TI_EVF0])
            task_init(tasks, tr, op, tf[row, TF_RATE], flags, ti[row, TI_HELD])
            tasks.c0[tr] = cr
            if op == _CLIP:                        # _next_row
                if prev >= 0:
                    tasks.nxt[tr] = prev
                    tasks.placed[prev] = True
                if tf[row, TF_BLEND] != 0.0:
                    tasks.blend[tr] = tf[row, TF_BLEND]
                if window != 0:
                    tasks.window[tr] = window
        elif op == _GAIT:                          # GaitTask._made: the task row, the gait row, the pair
            lead = _gait_task(tasks, cursors, gaits, ti, tf, row, tr, speed, flags, ti[row, TI_HELD],
                              (target, value, vnone), near_c)
            aid = ti[row, TI_IDS + lead]
        elif op == _MIX:                           # MixTask._made: the task row, then clips a and b
            w, lead = mix_values(target)
            task_init(tasks, tr, np.int64(_MIX), speed, flags, np.int64(0))
            base = flags & _CURSOR_INT
            ca = _blend_cursor(cursors, ti, tf, row, np.int64(0), cursor_flags_of(base, lead == 0), near_c)
            cb = _blend_cursor(cursors, ti, tf, row, np.int64(1), cursor_flags_of(base, lead == 1), near_c)
            mix_init(tasks, tr, ca, cb, w)
            aid = ti[row, TI_IDS + lead]
        elif op == _PICK:                          # PickTask._made: the task row, then its four clips
            v, chosen = pick_values(target)
            task_init(tasks, tr, np.int64(_PICK), tf[row, TF_PICK_RATE], flags, np.int64(0))
            base = flags & _CURSOR_INT
            p0 = _blend_cursor(cursors, ti, tf, row, np.int64(0), cursor_flags_of(base, chosen == 0), near_c)
            p1 = _blend_cursor(cursors, ti, tf, row, np.int64(1), cursor_flags_of(base, chosen == 1), near_c)
            p2 = _blend_cursor(cursors, ti, tf, row, np.int64(2), cursor_flags_of(base, chosen == 2), near_c)
            p3 = _blend_cursor(cursors, ti, tf, row, np.int64(3), cursor_flags_of(base, chosen == 3), near_c)
            pick_init(tasks, tr, p0, p1, p2, p3, v, ti[row, TI_SAMPLING])
            aid = ti[row, TI_IDS + chosen]
        else:                                      # DirectionTask._made: the task row, then the three clips
            v, centre = direction_values(target)
            task_init(tasks, tr, np.int64(_DIRECTION), speed, flags, np.int64(0))
            base = flags & _CURSOR_INT
            lo = (centre - 1) & 7
            hi = (centre + 1) & 7
            d0 = _blend_cursor(cursors, ti, tf, row, lo, cursor_flags_of(base, False), near_c)
            d1 = _blend_cursor(cursors, ti, tf, row, centre, cursor_flags_of(base, True), near_c)
            d2 = _blend_cursor(cursors, ti, tf, row, hi, cursor_flags_of(base, False), near_c)
            direction_init(tasks, tr, ti[row, TI_IDS], ti[row, TI_BANKS:TI_BANKS + MAX_CLIPS], v, centre, d0, d1, d2)
            aid = ti[row, TI_IDS + centre]
        added += _pool_take(out, tr)
        prev = tr
    held = ti[sel[k_steps - 1], TI_HELD]           # the first task's held bits
    o_h_depth = lay[H_DEPTH]
    o_h_stack = lay[H_STACK]
    stack_width = lay[_WIDTHS]
    if place == PLACE_CHANGE:                      # change's straight path: the fade, then both slots
        added += _change_place(tasks, fades, h32, lay, out, slot, n, near_t, speed, fade, prev) & 1
    elif place == PLACE_PUSH:
        h32[o_h_stack + slot * stack_width + n] = prev
        h32[o_h_depth + slot] = n + 1
        tasks.placed[prev] = True
    else:
        o_h_queued = lay[H_QUEUED]
        o_h_queue = lay[H_QUEUE]
        q = h32[o_h_queued + slot]
        tasks.placed[prev] = True
        h32[o_h_queue + slot * lay[_WIDTHS + 1] + q] = prev
        h32[o_h_queued + slot] = q + 1
        return added
    if held != 0:
        o_h_flags = lay[H_FLAGS]
        h64[o_h_flags + slot] = h64[o_h_flags + slot] | held
    o_h_anim = lay[H_ANIM]
    h64[o_h_anim + slot] = aid                     # the top is the fade or the task: the task's id
    return added


@_kernel
def run_rows(blocks, out, lay, ats, ti, tf, sel, cmd):
    """Write a prepared command's rows at once (the module docstring). In: the task, cursor,
    fade, gait and human tables' blocks (CmdBlocks: BLOCK_VIEWS' order), the pool's flags,
    ``lay``, the task, cursor, fade and gait tables' free list indexes (``ats``: their
    ``free_at``), the template rows (``ti``, ``tf``) and the row of each step (``sel``,
    last task first), the command's numbers (``cmd``, CmdArgs: the human's slot and depth,
    the place (PLACE_*), the blend window's index, the human's speed, the fade's time, a
    gait's target and value, ``vnone``: no value, the target's). Out: the pool's flags newly set (the pool's count grows by that), or -1
    with nothing written (a free list too short, the pool's flags short of a row taken).
    Original: 0x001054c8 (take a task), 0x001041f8 AnimCursor_Init, 0x001754e8 /
    0x001753d8 (insert, push)."""
    # (the numbers as apply_commands gives them from a buffer row: one _command for both)
    c = (np.int64(cmd.slot), np.int64(cmd.n), np.int64(cmd.place), np.int64(cmd.window), np.float64(cmd.speed),
         np.float64(cmd.fade), np.float64(cmd.target), np.float64(cmd.value), np.int64(cmd.vnone))
    return _command(_rows_of(blocks, lay, ats), blocks.h64, blocks.h32, out, lay, ti, tf, sel, c)


# How many commands ahead the compiled calls fetch what they will read: ``apply_commands``
# the human's row of the buffer row FETCH_AHEAD ahead, the task rows near its bottom task
# of the row FETCH_TASKS ahead, the cursor rows those link of the row FETCH_CURSORS ahead
# (each wave read from the lines the one before fetched); ``buffer_commands`` the human's row of the
# command FETCH_AHEAD ahead and, for a steering command FETCH_TASKS ahead, its stack's
# task rows. The cache misses of a few commands overlap.
FETCH_AHEAD = 4
FETCH_TASKS = 2
FETCH_CURSORS = 1


@_helper
def _fetch_human(h64, h32, lay, slot):
    """Prefetch human ``slot``'s row: its stack's depth and bottom task (``_anchor``), its
    held flags and anim id (a command's place writes them)."""
    _prefetch(h32, lay[H_DEPTH] + slot)
    _prefetch(h32, lay[H_STACK] + slot * lay[_WIDTHS])
    _prefetch(h64, lay[H_FLAGS] + slot)
    _prefetch(h64, lay[H_ANIM] + slot)


@_helper
def _fetch_task_rows(rows, out, h32, lay, ti, sel, slot):
    """Prefetch the rows a command of human ``slot`` takes (within NEAR_ROWS of its bottom
    task, ``_anchor``, and near the same fraction of the fade and gait tables): the task
    columns the row writers write there, its pool flags, a change's fade row and a gait's
    row (``sel``: the command's template rows). A hint: no value changes."""
    tasks, _, fades, gaits = rows
    t = _anchor(h32, lay, slot)
    if t < 0:
        return
    n_tasks = np.int64(tasks.at.shape[0])
    f = near_scaled(t, np.int64(fades.at.shape[0]), n_tasks)
    _prefetch(fades.live, f)
    _prefetch(fades.at, f)
    _prefetch(fades.el, f)
    _prefetch(fades.dur, f)
    if t < out.shape[0]:                    # (the pool's flags may be shorter than the table)
        _prefetch(out, t)
    for k in range(sel.shape[0]):
        if ti[sel[k], TI_OP] == _GAIT:
            g = near_scaled(t, np.int64(gaits.at.shape[0]), n_tasks)
            _prefetch(gaits.live, g)
            _prefetch(gaits.at, g)
            _prefetch(gaits.id0, g)
            _prefetch(gaits.id1, g)
            _prefetch(gaits.id2, g)
            _prefetch(gaits.id3, g)
            _prefetch(gaits.id4, g)
            _prefetch(gaits.b0, g)
            _prefetch(gaits.b1, g)
            _prefetch(gaits.b2, g)
            _prefetch(gaits.b3, g)
            _prefetch(gaits.b4, g)
            _prefetch(gaits.value, g)
            _prefetch(gaits.target, g)
            _prefetch(gaits.lower, g)
            _prefetch(gaits.leader, g)
            break                           # (a command's gaits are taken near the same row)
    _prefetch(tasks.live, t)
    _prefetch(tasks.at, t)
    _prefetch(tasks.type, t)
    _prefetch(tasks.rate, t)
    _prefetch(tasks.flags, t)
    _prefetch(tasks.held, t)
    _prefetch(tasks.c0, t)
    _prefetch(tasks.c1, t)
    _prefetch(tasks.aux, t)
    _prefetch(tasks.nxt, t)
    _prefetch(tasks.blend, t)
    _prefetch(tasks.window, t)
    _prefetch(tasks.placed, t)
    _prefetch(tasks.incoming, t)
    _prefetch(tasks.speed, t)


@_helper
def _fetch_cursor_rows(tasks, cursors, h32, lay, slot):
    """Prefetch the cursor rows a command of human ``slot`` takes: the cursor columns the
    row writers write near its bottom task's first cursor (they are taken within NEAR_ROWS
    of it). A hint: no value changes."""
    t = _anchor(h32, lay, slot)
    if t < 0:
        return
    c = np.int64(tasks.c0[t])
    if c < 0:
        return
    _prefetch(cursors.live, c)
    _prefetch(cursors.at, c)
    _prefetch(cursors.end, c)
    _prefetch(cursors.limit, c)
    _prefetch(cursors.dur, c)
    _prefetch(cursors.bank, c)
    _prefetch(cursors.anim, c)
    _prefetch(cursors.flags, c)
    _prefetch(cursors.evf0, c)
    _prefetch(cursors.evf, c)
    _prefetch(cursors.t, c)
    _prefetch(cursors.frame, c)
    _prefetch(cursors.ev, c)
    _prefetch(cursors.at_end, c)


@_kernel
def apply_commands(blocks, out, lay, ats, ti, tf, bi, bf, n_rows):
    """Apply a command buffer's first ``n_rows`` rows in order (anim.playback.cmdbuffer),
    each as ``run_rows`` writes one command (the same writers). In: the blocks, the pool's
    flags, ``lay`` and the template rows as ``run_rows``; the buffer's rows read as int64
    (``bi``, B_* columns: the place, the human's slot, its steps' count and template rows,
    the window, ``vnone``) and as float64 (``bf``, the same memory, BF_* columns: the
    speed, the fade, a gait's target and value). Each human's depth is read here (a command is buffered only while its human
    has no other one waiting). Out: the pool's flags newly set, or -(i + 1) when row ``i``
    could not be written (the rows before it written, nothing of it: the call's checks
    make that an engine bug). The rows are taken near each human's (kernels_write
    .take_row; ``ats`` as ``run_rows``); those of the rows ahead are prefetched meanwhile
    (``_fetch_human``, ``_fetch_task_rows``, ``_fetch_cursor_rows``: a hint, no value
    changes). Original: as ``run_rows``."""
    rows = _rows_of(blocks, lay, ats)
    h64, h32 = blocks.h64, blocks.h32
    o_h_depth = lay[H_DEPTH]
    added = 0
    for i in range(n_rows):
        if i + FETCH_AHEAD < n_rows:        # the rows of the commands ahead, on their way meanwhile
            _fetch_human(h64, h32, lay, bi[i + FETCH_AHEAD, B_SLOT])
        j = i + FETCH_TASKS
        if j < n_rows:
            _fetch_task_rows(rows, out, h32, lay, ti, bi[j, B_SEL:B_SEL + bi[j, B_STEPS]], bi[j, B_SLOT])
        if i + FETCH_CURSORS < n_rows:
            _fetch_cursor_rows(rows[0], rows[1], h32, lay, bi[i + FETCH_CURSORS, B_SLOT])
        slot = bi[i, B_SLOT]
        cmd = (slot, np.int64(h32[o_h_depth + slot]), bi[i, B_PLACE], bi[i, B_WINDOW], bf[i, BF_SPEED],
               bf[i, BF_FADE], bf[i, BF_TARGET], bf[i, BF_VALUE], bi[i, B_VNONE])      # (CmdArgs' fields)
        got = _command(rows, h64, h32, out, lay, ti, tf, bi[i, B_SEL:B_SEL + bi[i, B_STEPS]], cmd)
        if got < 0:
            return -(i + 1)
        added += got
    return added


# A batch entry's plan (one row per prepared command and anim set: anim.playback.batched),
# int64 part (``pi``) and float64 part (``pf``): the place (-1: never buffered, the row goes
# to Player.run), the deepest stack or longest queue written directly, the rows taken, the
# blend window's index, the steps' count, where the fade, a gait's target and value come
# from (an Arg's position in the row's numbers, -1: the plan's own ``pf`` value), vnone, the
# steps' template rows, each step's Arg position of its id (-1: a fixed id) and its
# (id, template row) pairs in ``lut`` (sorted by id: start, count).
(PI_PLACE, PI_ROOM, PI_TASKS, PI_CURSORS, PI_FADES, PI_GAITS, PI_WINDOW, PI_STEPS, PI_FADE_ARG, PI_TARGET_ARG,
 PI_VALUE_ARG, PI_VNONE) = range(12)
PI_SEL = 12
PI_ARG = PI_SEL + B_MAX_STEPS
PI_LUT = PI_ARG + B_MAX_STEPS
PI_LUTN = PI_LUT + B_MAX_STEPS
PI_STEER = PI_LUTN + B_MAX_STEPS       # 1: a steering command (Recipe.steer), its target from PI_TARGET_ARG / PF_TARGET
PI_WIDTH = PI_STEER + 1
PF_FADE, PF_TARGET, PF_VALUE = range(3)
PF_WIDTH = 3
# buffer_commands' counts (``cnt``): the buffer's rows and the rows they take, the mark of
# this call's humans, then why it stopped (STOP_*)
CN_ROWS, CN_TASKS, CN_CURSORS, CN_FADES, CN_GAITS, CN_STAMP, CN_STOP = range(7)
CN_WIDTH = 7
STOP_DONE, STOP_RUN, STOP_DUE, STOP_FULL = range(4)
_F32_MAX = 3.4028234663852886e38
_I32 = 2147483648.0


@_helper
def _lut_row(lut, start, count, aid):
    """The template row of id ``aid`` among ``lut[start:start + count]`` (sorted by id), or -1."""
    lo = start
    hi = start + count
    while lo < hi:
        mid = (lo + hi) >> 1
        v = lut[mid, 0]
        if v < aid:
            lo = mid + 1
        elif v > aid:
            hi = mid
        else:
            return lut[mid, 1]
    return -1


@_helper
def _running_gait(depth, stack, t_type, t_released, s):
    """The task row of human ``s``'s running gait (the newest unreleased type 12 task on
    its stack: the one nearest the bottom, Player.running), or -1."""
    for j in range(depth[s]):
        r = stack[s, j]
        if t_type[r] == _GAIT and not t_released[r]:
            return r
    return -1


@_helper
def _gait_target(v, flags):
    """A gait's new target as GaitTask.set_target keeps it: clamped to 0-4, a float32,
    rounded to the nearest integer unless the task's CONTINUOUS flag."""
    t = np.float64(np.float32(gait_clamp(v)))
    if (flags & _CONTINUOUS_INT) == 0:
        t = np.floor(t + 0.5)
    return t


@_helper
def _fetch_checked(s, mark, depth, queued, speed, stack):
    """Prefetch human row ``s`` as a batch's checks read it: its mark, depth, queue's
    length, speed and stack row. A hint: no value changes."""
    _prefetch(mark, s)
    _prefetch(depth, s)
    _prefetch(queued, s)
    _prefetch(speed, s)
    _prefetch(stack[s], 0)


@_helper
def _fetch_stack_tasks(s, depth, stack, t_type, t_released):
    """Prefetch the task rows on human row ``s``'s stack as a steering command's look for
    its running gait reads them (``_running_gait``)."""
    for j in range(depth[s]):
        r = stack[s, j]
        if r >= 0:
            _prefetch(t_type, r)
            _prefetch(t_released, r)


@_kernel
def buffer_commands(tables, buffer, plans, batch, out_len, grow, pool_room, lo, hi):
    """A batch of prepared commands checked and written as command buffer rows, in order,
    from row ``lo`` until one is not (anim.playback.batched): the direct path's checks of
    anim.playback.prepared (``_checks`` and ``_buffer_rows``) on each human's row, in
    compiled code. In (anim.engine.kernel_types), first what stays while the tables keep
    their arrays (the caller keeps them): ``tables`` (BufTables: the human table's
    ``depth``, ``queued``, ``speed`` and ``stack`` columns; the task table's ``type``,
    ``released``, ``flags`` and ``aux`` and the gait table's ``target``, where a steering
    command's running gait takes its target, as ``gait_targets`` gives it, and no buffer
    row; the task table's free count and list, the cursor, fade and gait tables' free
    counts) and ``buffer`` (CmdBuffer: its rows ``bi``, ``bf`` and counts ``cnt``); then
    ``plans`` (CmdPlans: the batch's plans ``pi``, ``pf``, PI_* / PF_* columns, and id
    look-up ``lut``); ``batch`` (CmdBatch: ``mark``, a human row holding ``cnt[CN_STAMP]``
    has a command waiting; per row the human's slot, its plan, ``ents``: -1 none, and
    numbers, ``args``); the pool's flags' length, whether the task table outgrew them
    (``grow``) and the pool's room. Out: the first row not buffered (``hi``: all), with
    ``cnt[CN_STOP]`` saying why: STOP_RUN (its checks send it to Player.run, which writes
    or refuses it), STOP_DUE (its human has a command waiting: the buffer is written
    first), STOP_FULL (the buffer is full). Nothing of a row not buffered is written.
    Original: 0x001754e8 / 0x001753d8 (insert, push: their room)."""
    depth, queued, speed, stack, t_type, t_released, t_flags, t_aux, g_target, t_nf, t_free, c_nf, f_nf, g_nf = tables
    bi, bf, cnt = buffer
    pi, pf, lut = plans
    mark, slots, ents, args = batch
    cap = bi.shape[0]
    stamp = cnt[CN_STAMP]
    for i in range(lo, hi):
        if i + FETCH_AHEAD < hi:            # the humans of the commands ahead, on their way meanwhile
            _fetch_checked(slots[i + FETCH_AHEAD], mark, depth, queued, speed, stack)
        j = i + FETCH_TASKS
        if j < hi and ents[j] >= 0 and pi[ents[j], PI_STEER] != 0:
            _fetch_stack_tasks(slots[j], depth, stack, t_type, t_released)
        e = ents[i]
        if e < 0 or pi[e, PI_PLACE] < 0:
            cnt[CN_STOP] = STOP_RUN
            return i
        s = slots[i]
        if mark[s] == stamp:
            cnt[CN_STOP] = STOP_DUE
            return i
        if pi[e, PI_STEER] != 0:
            r = _running_gait(depth, stack, t_type, t_released, s)
            if r >= 0:                             # a running gait steered: its target, nothing made
                a = pi[e, PI_TARGET_ARG]
                v = args[i, a] if a >= 0 else pf[e, PF_TARGET]
                if not np.isfinite(v):             # set_target's refusal: Player.run raises it
                    cnt[CN_STOP] = STOP_RUN
                    return i
                g_target[t_aux[r]] = _gait_target(v, t_flags[r])
                continue
        code = pi[e, PI_PLACE]
        n = depth[s]
        if (queued[s] if code == PLACE_ENQUEUE else n) > pi[e, PI_ROOM]:
            cnt[CN_STOP] = STOP_RUN
            return i
        a = pi[e, PI_FADE_ARG]
        fade = pf[e, PF_FADE]
        if a >= 0:
            fade = args[i, a]
            if not (0.0 <= fade <= _F32_MAX):
                cnt[CN_STOP] = STOP_RUN
                return i
        n_tasks = pi[e, PI_TASKS]
        if cnt[CN_TASKS] + n_tasks > pool_room:
            cnt[CN_STOP] = STOP_RUN
            return i
        sp = speed[s]
        if not (-_F32_MAX <= sp <= _F32_MAX):
            cnt[CN_STOP] = STOP_RUN
            return i
        target = pf[e, PF_TARGET]
        value = pf[e, PF_VALUE]
        a = pi[e, PI_TARGET_ARG]
        if a >= 0:
            target = args[i, a]
            if not (-_F32_MAX <= target <= _F32_MAX):
                cnt[CN_STOP] = STOP_RUN
                return i
        a = pi[e, PI_VALUE_ARG]
        if a >= 0:
            value = args[i, a]
            if not (-_F32_MAX <= value <= _F32_MAX):
                cnt[CN_STOP] = STOP_RUN
                return i
        k_steps = pi[e, PI_STEPS]
        ok = True
        for k in range(k_steps):
            a = pi[e, PI_ARG + k]
            if a >= 0:
                v = args[i, a]
                if not (-_I32 <= v < _I32) or v != np.floor(v):
                    ok = False
                    break
                if _lut_row(lut, pi[e, PI_LUT + k], pi[e, PI_LUTN + k], np.int64(v)) < 0:
                    ok = False
                    break
        if not ok:
            cnt[CN_STOP] = STOP_RUN
            return i
        top = t_nf[0] - cnt[CN_TASKS]
        if top < n_tasks or c_nf[0] - cnt[CN_CURSORS] < pi[e, PI_CURSORS] \
                or f_nf[0] - cnt[CN_FADES] < pi[e, PI_FADES] or g_nf[0] - cnt[CN_GAITS] < pi[e, PI_GAITS]:
            cnt[CN_STOP] = STOP_RUN
            return i
        if grow:
            for j in range(top - n_tasks, top):
                if t_free[j] >= out_len:
                    ok = False
            if n > 0 and not _near_fits(np.int64(stack[s, 0]), t_type.shape[0], out_len):
                ok = False                         # a row near the human's past the flags (_fits)
            if not ok:
                cnt[CN_STOP] = STOP_RUN
                return i
        r = cnt[CN_ROWS]
        if r == cap:
            cnt[CN_STOP] = STOP_FULL
            return i
        # ---- the row, as CommandBuffer.append writes it
        bi[r, B_PLACE] = code
        bi[r, B_SLOT] = s
        bi[r, B_STEPS] = k_steps
        bi[r, B_WINDOW] = pi[e, PI_WINDOW]
        bi[r, B_VNONE] = pi[e, PI_VNONE]
        for k in range(B_MAX_STEPS):
            a = pi[e, PI_ARG + k] if k < k_steps else -1
            if a >= 0:
                bi[r, B_SEL + k] = _lut_row(lut, pi[e, PI_LUT + k], pi[e, PI_LUTN + k], np.int64(args[i, a]))
            else:
                bi[r, B_SEL + k] = pi[e, PI_SEL + k]
        bf[r, BF_SPEED] = sp
        bf[r, BF_FADE] = fade
        bf[r, BF_TARGET] = target
        bf[r, BF_VALUE] = value
        cnt[CN_ROWS] = r + 1
        cnt[CN_TASKS] += n_tasks
        cnt[CN_CURSORS] += pi[e, PI_CURSORS]
        cnt[CN_FADES] += pi[e, PI_FADES]
        cnt[CN_GAITS] += pi[e, PI_GAITS]
        mark[s] = stamp
    cnt[CN_STOP] = STOP_DONE
    return hi


@_kernel
def clip_rows(blocks, out, lay, ats, t_hint, c_hint, clip):
    """A handle constructor's single-clip task (anim.playback.construct: ``loop``, ``clip``
    and their kin) in one call: a cursor row taken near row ``c_hint`` and restarted on
    the clip, then a task row taken near row ``t_hint``, linking the cursor, and its pool
    flag set (``clip``: ClipRow, the task's and the cursor's numbers): the rows and columns the constructor's Python
    writers leave (cursor_row, write_task_row), through the same compiled writers as a
    prepared command. In: the blocks, the pool's flags, ``lay`` and ``ats`` as
    ``run_rows``; the hints (-1: the free list's top). Out: the task row << 32, the cursor
    row << 1, and 1 when the pool's flag was newly set; or -1 with nothing written (a free
    list empty, the pool's flags short of a row the take can give).
    Original: 0x001054c8 (take a task), 0x001041f8 AnimCursor_Init."""
    tasks, cursors = _task_few(blocks, lay, ats), _cursor_rows(blocks, lay, ats)
    if cursors.n_free[0] < 1 or not _task_room(tasks, out, t_hint):
        return np.int64(-1)
    cr = take_row(cursors.live, cursors.free_rows, cursors.n_free, cursors.at, c_hint)
    cursor_init(cursors, cr, clip.end, clip.limit, clip.dur, clip.bank, clip.anim, clip.cflags, clip.evf0)
    tr = take_row(tasks.live, tasks.free_rows, tasks.n_free, tasks.at, t_hint)
    task_init(tasks, tr, clip.ttype, clip.rate, clip.flags, clip.held)
    tasks.c0[tr] = cr
    return (np.int64(tr) << 32) | (np.int64(cr) << 1) | _pool_take(out, tr)


@_kernel
def gait_rows(blocks, out, lay, ats, t_hint, c_hint, ti, tf, gait):
    """A handle constructor's gait (anim.playback.construct ``gait``) in one call: a task
    row taken near row ``t_hint`` and the gait's rows on it (``_gait_task``, as a prepared
    gait writes them: its gait row, the pair's two cursors near row ``c_hint``), its pool
    flag set: the rows and columns GaitTask's Python writers leave (write_task_row,
    write_gait_row, cursor_row). In: the blocks, the pool's flags, ``lay`` and ``ats`` as
    ``run_rows``; the five clips as template row 0 of ``ti`` and ``tf`` (a prepared gait
    step's row: RecipeRules.gait_rows); ``gait``: GaitRow. Out: the task row << 32, the
    gait row << 1, and 1 when the pool's flag was newly set; or -1 with nothing written.
    Original: 0x0010a310, 0x001041f8 AnimCursor_Init."""
    tasks, cursors = _task_few(blocks, lay, ats), _cursor_rows(blocks, lay, ats)
    g64, g32, gf32, g8 = blocks.g64, blocks.g32, blocks.gf32, blocks.g8
    gaits = _GaitRows(g8[lay[G_LIVE]:], g32[lay[G_ID0]:], g32[lay[G_ID1]:], g32[lay[G_ID2]:], g32[lay[G_ID3]:],
                      g32[lay[G_ID4]:], g32[lay[G_B0]:], g32[lay[G_B1]:], g32[lay[G_B2]:], g32[lay[G_B3]:],
                      g32[lay[G_B4]:], gf32[lay[G_VALUE]:], gf32[lay[G_TARGET]:], g32[lay[G_LOWER]:],
                      g8[lay[G_LEADER]:], g32[lay[G_FREE]:], g64[lay[G_NF]:], ats[3])
    if cursors.n_free[0] < 2 or gaits.n_free[0] < 1 or not _task_room(tasks, out, t_hint):
        return np.int64(-1)
    tr = take_row(tasks.live, tasks.free_rows, tasks.n_free, tasks.at, t_hint)
    _gait_task(tasks, cursors, gaits, ti, tf, 0, tr, gait.rate, np.int64(gait.flags), np.int64(gait.held),
               (gait.target, gait.value, np.int64(gait.vnone)), c_hint)
    return (np.int64(tr) << 32) | (np.int64(tasks.aux[tr]) << 1) | _pool_take(out, tr)   # (aux: its gait row)


@_kernel
def change_rows(blocks, out, lay, ats, slot, n, speed, duration, tr, aid):
    """A change's common path (anim.playback.stackrules ``change``: neither early finish
    can act, the rows fit) in one call: the fade's task row taken near the human's bottom
    task (store.near_hints), of type 9 at rate ``speed``, its fade row near the same
    fraction of the fade table, nothing elapsed of ``duration``, over task row ``tr``, its
    pool flag set; then insert_bottom and push (``tr`` under the ``n`` tasks of human row
    ``slot``, the fade on top), both placed, and the human's anim id ``aid`` (not written
    when below -1: the caller's). What write_task_row, write_fade_row and the stack rules
    write, through the compiled writers a prepared change calls; the held bits stay the
    caller's. In: the blocks, the pool's flags, ``lay`` and ``ats`` as ``run_rows``. Out:
    the fade's task row << 32, its fade row << 1, and 1 when the pool's flag was newly
    set; or -1 with nothing written (a free list empty, the pool's flags short of a row
    the take can give). Original: 0x00106c80 (the fade), 0x001754e8
    TaskStack_InsertBottom, 0x001753d8 TaskStack_Push."""
    tasks = _task_few(blocks, lay, ats)
    fades = _FadeRows(blocks.f8[lay[F_LIVE]:], blocks.ff32[lay[F_EL]:], blocks.ff32[lay[F_DUR]:],
                      blocks.fi32[lay[F_FREE]:], blocks.fi64[lay[F_NF]:], ats[2])
    h32 = blocks.h32
    t_hint = _anchor(h32, lay, slot)
    if fades.n_free[0] < 1 or not _task_room(tasks, out, t_hint):
        return np.int64(-1)
    got = _change_place(tasks, fades, h32, lay, out, slot, n, t_hint, speed, duration, tr)
    if aid >= -1:
        blocks.h64[lay[H_ANIM] + slot] = aid       # the top is the fade: the new task's id
    return got


@_kernel
def gait_targets(tables, slots, ok, targets, moved, lo, hi):
    """Each row's human's running gait (the newest unreleased type 12 task on its stack:
    the one nearest the bottom, Player.running) given the row's target as GaitTask
    .set_target gives it (clamped to 0-4, a float32, rounded to the nearest integer unless
    the task's CONTINUOUS flag), from row ``lo`` until one it cannot take. In: ``tables``
    (BufTables, of which it reads the human table's ``depth`` and ``stack`` columns, the
    task table's ``type``, ``released``, ``flags`` and ``aux`` (the gait row) columns and
    the gait table's ``target``); per row the
    human's slot, whether the caller checked it (``ok``: 0 sends the row back) and its
    target; ``moved`` (set to 1 where a gait took it, 0 where none runs). Out: the first
    row not done (``hi``: all): one not checked, or a target that is not finite (the
    caller raises set_target's error). Original: 0x0010a500 (+0xac)."""
    depth, stack, t_type, t_released = tables.depth, tables.stack, tables.t_type, tables.t_released
    t_flags, t_aux, g_target = tables.t_flags, tables.t_aux, tables.g_target
    for i in range(lo, hi):
        if ok[i] == 0:
            return i
        v = targets[i]
        if not np.isfinite(v):
            return i
        s = slots[i]
        moved[i] = 0
        r = _running_gait(depth, stack, t_type, t_released, s)
        if r >= 0:
            g_target[t_aux[r]] = _gait_target(v, t_flags[r])
            moved[i] = 1
    return hi
