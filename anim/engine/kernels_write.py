"""The compiled row writers: one per row kind (a task's own row, a cursor, a fade, a gait).

Every compiled path that makes a row calls these: a prepared command's rows
(anim.engine.cmdkernel ``run_rows``), the command buffer's rows (``apply_commands``, the
same module) and the step's new cursor when a gait's pair changes (anim.engine.kernels_step).
Python's writers (anim.playback.tasks ``write_task_row``, ``write_fade_row``,
``write_gait_row``; anim.playback.cursor ``cursor_row``) write the same columns with the
same rules (anim.engine.rules) for the handle API.

Each writer takes its table as a named tuple of columns (anim.engine.kernel_types'
``CursorCols``, or any named tuple with the fields it reads: numba compiles a helper once
per tuple type, so a kernel holding a table as one memory block passes views of it),
the row and the row's numbers; it writes every column the kind's constructor writes and
leaves the rest at the table's defaults (a free row is at them: Table.settle).
Link-only helpers: nothing here is called from Python.

Spec: "Animation tasks", "Fades", "Gait blend". Original: 0x001054c8 (take a task from
the free list), 0x001041f8 AnimCursor_Init, 0x00106c80 (the fade's constructor),
0x0010a310 (the gait's constructor), 0x0010b090, 0x00106f50, 0x00109210 (the mix's, the
pick's and the direction's).
"""
from __future__ import annotations

import math

import numpy as np

from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.kernels_maths import jit_kinds
from scuffle.anim.engine.rules import (GAIT_SPEED, direction_centre, direction_value, gait_clamp, gait_first_leader,
                                       gait_pair, gait_rounded_target, mix_leader, mix_weight, near_free_row,
                                       pick_chosen, pick_value)

CACHE = cache_setting(__file__)
_helper, _kernel, _inline = jit_kinds(CACHE)

__all__: list[str] = []
# the writers, by name (each compiles once per module that calls it: its table's tuple type)
WRITERS = ("take_row", "cursor_init", "task_init", "fade_init", "gait_values", "gait_init", "mix_values", "mix_init",
           "pick_values", "pick_init", "direction_values", "direction_init")
# numba's cache is keyed on each function's own file: the sha256 of the sources this one
# links (anim.engine.rules, anim.maths.detmath, kernels_maths), so an edit there changes this
# file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "f9a78fd236f569cde787ada649c314cecec842df22555bdebf9e9f59f9a2b0ba"

_GAIT_SPEED = float(GAIT_SPEED)
_clamp = _helper(gait_clamp)
_pair = _helper(gait_pair)
_first_leader = _helper(gait_first_leader)
_rounded = _helper(gait_rounded_target)
_mix_weight = _helper(mix_weight)
_mix_leader = _helper(mix_leader)
_pick_value = _helper(pick_value)
_pick_chosen = _helper(pick_chosen)
_direction_value = _helper(direction_value)
_direction_centre = _helper(direction_centre)
_near_free_row = _helper(near_free_row)


@_helper
def take_row(live, free_rows, n_free, at, hint):
    """Table.take_near in a kernel: the free row nearest row ``hint`` (anim.engine.rules
    .near_free_row over the table's ``at``.shape[0] rows), taken out of the middle of the
    free list (the list's top moved into its place, found through the list's index
    ``at``: checked, and made again from the list when wrong; the row taken left where
    the top was, so the slots just past the list hold the rows taken, in order), else
    (none near, or ``hint`` < 0) the row on top of the list; marked live. The caller has checked that
    the list holds one. Original: 0x001054c8."""
    n = n_free[0] - 1
    r = _near_free_row(live, at.shape[0], hint)
    if r < 0:
        r = free_rows[n]
    else:
        p = np.int64(at[r])
        if p < 0 or p > n or free_rows[p] != r:
            for i in range(n + 1):
                at[free_rows[i]] = i
            p = np.int64(at[r])
        last = free_rows[n]
        free_rows[p] = last
        free_rows[n] = r                           # (past the list: the rows taken, in order)
        at[last] = p
    n_free[0] = n
    live[r] = True
    return r


@_helper
def cursor_init(cursors, c, end, limit, dur, bank, anim, flags, evf0):
    """The one compiled writer of a cursor row (anim.playback.cursor.cursor_row's columns):
    row ``c`` restarted (time 0, frame 0, no event passed, not at its end) on the clip of
    bank index ``bank`` for id ``anim``: its end test ``end``, ``limit``, duration ``dur``,
    first event frame ``evf0`` (the next event's too), cursor ``flags``.
    Original: 0x001041f8 AnimCursor_Init."""
    cursors.end[c] = end
    cursors.limit[c] = limit
    cursors.dur[c] = dur
    cursors.bank[c] = bank
    cursors.anim[c] = anim
    cursors.flags[c] = flags
    cursors.evf0[c] = evf0
    cursors.evf[c] = evf0
    cursors.t[c] = 0.0
    cursors.frame[c] = 0
    cursors.ev[c] = 0
    cursors.at_end[c] = False


@_helper
def task_init(tasks, r, ttype, rate, flags, held):
    """The one compiled writer of a task's own row (anim.playback.tasks.write_task_row's
    columns): type ``ttype``, ``rate``, then the flags and held bits where not 0 (a free
    row holds 0). Original: 0x001054c8 (take a task from the free list)."""
    tasks.type[r] = ttype
    tasks.rate[r] = rate
    if flags != 0:
        tasks.flags[r] = flags
    if held != 0:
        tasks.held[r] = held


@_helper
def fade_init(fades, tasks, tr, fr, duration):
    """The one compiled writer of a type 9's own row (anim.playback.tasks.write_fade_row's
    columns): fade row ``fr``, linked from task row ``tr`` (``aux``), nothing elapsed,
    ``duration``. Original: 0x00106c80."""
    fades.el[fr] = 0.0
    fades.dur[fr] = duration
    tasks.aux[tr] = fr


@_helper
def gait_values(target, value, vnone, continuous):
    """A new gait's value, target, pair and first leader by the spec's rules
    (anim.engine.rules; anim.playback.construct's ``gait`` in Python): the value (the target
    when ``vnone``) and the target clamped to 0-4 and held as float32s, the target rounded
    unless ``continuous``. Out: (value, target, lower, leader). Original: 0x0010a310,
    0x0010a500, 0x0010a558."""
    v = float(np.float32(_clamp(target if vnone else value)))
    lower = _pair(v)
    leader = _first_leader(v, lower)
    tg = v if vnone else float(np.float32(_clamp(target)))
    return v, _rounded(tg, continuous), lower, leader


@_helper
def gait_init(gaits, tasks, tr, gr, ids, banks, v, tg, lower, leader):
    """The one compiled writer of a type 12's own row (anim.playback.tasks.write_gait_row's
    columns): gait row ``gr`` linked from task row ``tr`` (``aux``), its five ids and bank
    indices (``ids``, ``banks``: five each), the value ``v``, target ``tg``, pair ``lower``
    and first leader (``gait_values``), the gait's speed on the task row.
    Original: 0x0010a310."""
    tasks.aux[tr] = gr
    gaits.id0[gr] = ids[0]
    gaits.id1[gr] = ids[1]
    gaits.id2[gr] = ids[2]
    gaits.id3[gr] = ids[3]
    gaits.id4[gr] = ids[4]
    gaits.b0[gr] = banks[0]
    gaits.b1[gr] = banks[1]
    gaits.b2[gr] = banks[2]
    gaits.b3[gr] = banks[3]
    gaits.b4[gr] = banks[4]
    tasks.speed[tr] = _GAIT_SPEED
    gaits.value[gr] = v
    gaits.target[gr] = tg
    gaits.lower[gr] = lower
    gaits.leader[gr] = leader


@_helper
def mix_values(weight):
    """A new mix's weight by the rules (anim.engine.rules.mix_weight; anim.playback.tasks
    MixTask._made in Python): clamped to 0-1, a double, and the clip that leads (0 the
    first, 1 the second). Out: (weight, leader). Original: 0x0010b090."""
    w = _mix_weight(weight)
    if w == 0.0:                                 # a -0.0 given stays -0.0 (as pick_values keeps it)
        w = math.copysign(0.0, weight) if weight == 0.0 else 0.0
    return w, _mix_leader(w)


@_helper
def mix_init(tasks, tr, c0, c1, w):
    """The one compiled writer of a type 10's own columns (MixTask._made's): its two
    cursor rows, the weight and its target ``w`` (mix_values), the weight's speed.
    Original: 0x0010b090."""
    tasks.c0[tr] = c0
    tasks.c1[tr] = c1
    tasks.value[tr] = w
    tasks.target[tr] = w
    tasks.speed[tr] = _GAIT_SPEED


@_helper
def pick_values(value):
    """A new pick's value by the rules (anim.engine.rules.pick_value, pick_chosen;
    PickTask._made in Python): clamped to 0-3 and held as a float32, and the audible clip.
    Out: (value, chosen). Original: 0x00106f50."""
    v = float(np.float32(_pick_value(value)))
    if v == 0.0:
        # the clamp keeps a -0.0 given (Python's max picks it), and only that: the
        # compiled clamp and rounding, inlined into a writer, were seen to give +0.0 there
        v = math.copysign(0.0, value) if value == 0.0 else 0.0
    return v, _pick_chosen(v)


@_helper
def pick_init(tasks, tr, c0, c1, c2, c3, v, sampling):
    """The one compiled writer of a type 11's own columns (PickTask._made's): its four
    cursor rows, the value ``v`` (pick_values) and the sampling rule's index where not 0
    (a free row holds 0). Original: 0x00106f50."""
    tasks.c0[tr] = c0
    tasks.c1[tr] = c1
    tasks.c2[tr] = c2
    tasks.c3[tr] = c3
    tasks.value[tr] = v
    if sampling != 0:
        tasks.sampling[tr] = sampling


@_helper
def direction_values(direction):
    """A new direction task's value and centre by the rules (anim.engine.rules
    .direction_value, direction_centre; DirectionTask._made in Python).
    Out: (value, centre). Original: 0x00109210."""
    v = _direction_value(direction)
    return v, _direction_centre(v)


@_helper
def direction_init(tasks, tr, base, banks, v, centre, c0, c1, c2):
    """The one compiled writer of a type 13's own columns (DirectionTask._made's): the
    first id ``base``, the eight clips' bank indices (``banks``, eight; the table's
    ``dir_banks`` row, seen flat: eight a row), the value and centre (direction_values),
    the cursor rows of the lower neighbour, the centre and the upper. Original: 0x00109210."""
    tasks.base[tr] = base
    b = tr * 8
    for d in range(8):
        tasks.dir_banks[b + d] = banks[d]
    tasks.value[tr] = v
    tasks.centre[tr] = centre
    tasks.c0[tr] = c0
    tasks.c1[tr] = c1
    tasks.c2[tr] = c2
