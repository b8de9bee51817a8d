"""The spec's task rules, each written once, for Python and the compiled engine alike.

Every function here is ``register_jitable``: Python calls it as the plain function it is
(the handle API's constructors, the stack rules, the task handles), and numba compiles
the same source into whatever kernel calls it (the step, the pose, a prepared command's
rows). So a rule has one text: the gait's pair and its first leader, the gait target's
rounding, the fade's weight, the room a change needs. Plain numbers in, plain numbers out;
nothing here reads or writes a table (the writers do: anim.playback.tasks, anim.engine.cmdkernel).

numba's disk cache is keyed on each kernel's own file, not on this one: a kernel module
that compiles these rules (``from .rules import``) pins this file's sha256 in its
``LINKED_SHA256`` (anim.engine.jitcache.linked_sha256), and the tests fail until the pins follow
an edit here.

May import: anim.maths.detmath, anim.maths.f32 (the numbers), anim.base.errors (the limits), the enums'
values (anim.engine.sampler's CursorFlags), numba's ``register_jitable``; not anim.engine.store
(which imports this module for the rows' take).

Spec: "Gait blend" (L269-288), "Fades" (L261-267), "The task stack" (a change's room).
"""
from __future__ import annotations

import math

from numba.extending import register_jitable

from scuffle.anim.maths import detmath, f32 as F
from scuffle.anim.base.errors import STACK_SIZE
from scuffle.anim.engine.sampler import CursorFlags
import numpy as np
from scuffle.anim.data.clip import EventType
from scuffle.anim.base.enums import BlendWindow, HeldFlags, PickSampling, TaskType

# A row link to nothing (no next task, no incoming task, no cursor): named here, where the
# rows' take is (near_free_row), and read by the tables as anim.engine.store.NO_ROW.
NO_ROW = -1

__all__ = ["NO_ROW", "GAIT_STEPS", "GAIT_ALONE_LOW", "GAIT_ALONE_HIGH", "GAIT_FALL_FRACTION", "GAIT_SPEED", "GAIT_MAX",
           "gait_clamp", "gait_pair", "cursor_flags_of", "gait_leader", "gait_sampled", "gait_first_leader", "gait_rounded_target", "fade_weight", "change_room",
           "mix_weight", "mix_leader", "pick_value", "pick_chosen", "direction_value", "direction_centre",
           "STACK_SIZE", "NEAR_ROWS", "near_free_row", "near_scaled"]

# The gait blend's pair steps (floor with 0.995, 1.995, 2.995) and thresholds. Like every
# constant the FPU compares with, they are float32 (f32(2.995) is 2.99499988...).
GAIT_STEPS = tuple(F.f32(x) for x in (0.995, 1.995, 2.995))
GAIT_ALONE_LOW = F.f32(0.01)
GAIT_ALONE_HIGH = F.f32(0.995)
GAIT_FALL_FRACTION = 0.875
GAIT_SPEED = 10.0
GAIT_MAX = 4.0                    # the value and the target run 0-4 (five clips)
_STEP0, _STEP1, _STEP2 = GAIT_STEPS
_ALONE_HIGH = float(GAIT_ALONE_HIGH)
_ALONE_LOW = float(GAIT_ALONE_LOW)
_FALL = float(GAIT_FALL_FRACTION)
_MUTED = int(CursorFlags.MUTED)



@register_jitable
def gait_clamp(v):
    """A gait value or target clamped to 0-4 (+0xac / +0xbc), not yet rounded to float32
    (the caller rounds: F.f32 in Python, np.float32 in a kernel, the same bits). NaN stays
    NaN (the caller rejects it). Original: 0x0010a500, 0x0010a558."""
    if v < 0.0:
        return 0.0
    if v > GAIT_MAX:
        return GAIT_MAX
    return v


@register_jitable
def gait_pair(v):
    """The pair's lower index for gait value ``v`` (a float32 value): floor(v) with the
    steps 0.995, 1.995, 2.995, so 0-3; the pair is clips lower and lower + 1.
    Original: 0x0010a5b8 (the advance's pair)."""
    if v < _STEP0:
        return 0
    if v < _STEP1:
        return 1
    if v < _STEP2:
        return 2
    return 3


@register_jitable
def gait_first_leader(v, lower):
    """The leader of a new gait at value ``v`` on pair ``lower``: 1 (the upper clip) when
    the fraction v - lower reaches 0.995, else 0 (the lower). Original: 0x0010a310."""
    if v - lower >= _ALONE_HIGH:
        return 1
    return 0


@register_jitable
def gait_leader(v, lower, target, old_frac):
    """Which clip of the pair leads after a move ("Gait blend" L285), 0 the lower, 1 the
    upper: the lower below a fraction v - lower of 0.01, the upper from 0.995; between,
    the upper when the value ``v`` is still above the ``target`` (falling) or the
    fraction before the move, ``old_frac``, was over 0.875, else the lower.
    Original: 0x0010a5b8."""
    frac = v - lower
    if frac < _ALONE_LOW:
        return 0
    if frac >= _ALONE_HIGH:
        return 1
    if v > target or old_frac > _FALL:
        return 1
    return 0


@register_jitable
def gait_sampled(frac):
    """What a gait samples at fraction ``frac`` (v - lower): 0 the lower clip alone (below
    0.01), 1 the upper alone (above 0.995), -1 both, blended by the fraction.
    Original: 0x0010adf8."""
    if frac < _ALONE_LOW:
        return 0
    if frac > _ALONE_HIGH:
        return 1
    return -1


@register_jitable
def cursor_flags_of(base, leads):
    """A blend's cursor flags: the task's cursor bits ``base`` for the cursor that leads
    (its events fire), with MUTED for every other (it follows, silent). Gait, mix, pick
    and direction alike. Original: 0x0010a5b8 (the gait's follower), 0x0010adf8."""
    if leads:
        return base
    return base | _MUTED


@register_jitable
def gait_rounded_target(t, continuous):
    """A clamped target as the gait keeps it: rounded to the nearest integer unless the
    task's CONTINUOUS flag (0x200) is set. Original: 0x0010a500."""
    if continuous:
        return t
    return float(math.floor(t + 0.5))


@register_jitable
def fade_weight(elapsed, duration):
    """The outgoing pose's weight w_old = (1 + cos(pi t / d)) / 2, t clamped to 0-d;
    d <= 0 gives 0 at once. The cosine is anim.maths.detmath's (the same bits on every CPU).
    Original: 0x00106e50 (1 - (sin(pi t/d - pi/2) + 1) / 2, the same curve)."""
    if duration <= 0.0:
        return 0.0
    q = elapsed / duration
    x = 0.0 if 0.0 > q else q             # min(max(q, 0), 1), written out (NaN stays NaN)
    x = 1.0 if 1.0 < x else x
    return (1.0 + detmath.cos_pi_s(x)) / 2.0


@register_jitable
def change_room(depth, early_finish_above):
    """Whether a change on a stack ``depth`` deep takes the plain path: the insert and the
    push both fit (depth + 2 <= 18) and neither early finish can act (depth + 1 <= the
    limit). Otherwise the change's dry run decides (StackRules.change_fits).
    Original: 0x001754e8 TaskStack_InsertBottom, 0x001753d8 TaskStack_Push."""
    return depth + 1 <= early_finish_above and depth + 2 <= STACK_SIZE


# The task rows' fixed tables: what each type links, the held bits events change, the
# columns' coded rules (read by the Python paths, the kernels and the snapshot checks).

# Each type's cursor links, in the order of its ``cursors()`` (task columns c0-c3): one
# clip's, a fade's none, a mix's two, a pick's four, a gait's pair, a direction's lower
# neighbour, centre and upper. What the flush gives back, the engine's type set
# (anim.playback.batch.KERNEL_TYPES) and the snapshot checks read here, not by type.
TASK_CURSORS: dict[int, int] = {
    TaskType.LOOP: 1, TaskType.CLIP: 1, TaskType.PAIRED_HOLD: 1, TaskType.HOLD: 1, TaskType.PAIRED_CLIP: 1,
    TaskType.SCENE: 1, TaskType.FADE: 0, TaskType.MIX: 2, TaskType.PICK: 4, TaskType.GAIT: 2, TaskType.DIRECTION: 3,
}


def dir_banks_misfit(types: np.ndarray, banks: np.ndarray, n_banks: int) -> np.ndarray:
    """Per row (``types`` its task types, ``banks`` its (rows, 8) ``dir_banks``): True where
    the row's clips do not fit its type: a direction task's must be eight clips of a bank
    of ``n_banks``, every other type's -1 (anim.engine.snapcheck.check_ids)."""
    is_dir = types == int(TaskType.DIRECTION)
    bad_dir = is_dir & ((banks < 0) | (banks >= n_banks)).any(axis=1)
    return bad_dir | (~is_dir & (banks != NO_ROW).any(axis=1))


# Fired-event types that change the held bits of the task that fired them: (bits that
# must be held, bits cleared, bits set). Original: 0x00101dd8 (types 0x2c, 0x2d).
HELD_EVENTS: dict[int, tuple[int, int, int]] = {
    EventType.HELD_OPEN: (int(HeldFlags.WINDUP | HeldFlags.HIT_WINDOW), int(HeldFlags.WINDUP),
                          int(HeldFlags.HIT_WINDOW)),
    EventType.HELD_CLOSE: (int(HeldFlags.PHASES), int(HeldFlags.PHASES), int(HeldFlags.RECOVERY)),
}


# The blend window rules in the task table's ``window`` column (0 advanced, 1 kept).
WINDOW_RULES = (BlendWindow.ADVANCED, BlendWindow.KEPT)


# Type 11's thresholds on its value 0-3 (float32).
PICK_THRESHOLDS = tuple(F.f32(x) for x in (0.51, 1.51, 2.51))


# The pick's sampling rules in the task table's ``sampling`` column (0 chosen, 1 all).
PICK_SAMPLINGS = (PickSampling.CHOSEN, PickSampling.ALL)
_PICK0, _PICK1, _PICK2 = (float(x) for x in PICK_THRESHOLDS)


# The values of types 10, 11 and 13 as their constructors and setters keep them (the
# handle API's, anim.playback.tasks, and the compiled row writers, anim.engine.kernels_write).
@register_jitable
def mix_weight(w):
    """A mix's weight (or target) clamped to 0-1, kept as a double: min(max(w, 0), 1)
    written out as Python's min and max pick (a -0.0 stays -0.0). Original: 0x0010b090."""
    x = 0.0 if 0.0 > w else w
    return 1.0 if 1.0 < x else x


@register_jitable
def mix_leader(w):
    """The clip of a mix that leads at weight ``w``: 1 (the second) from 0.5, else 0.
    Original: 0x0010b448."""
    if w >= 0.5:
        return 1
    return 0


@register_jitable
def pick_value(v):
    """A pick's value clamped to 0-3, not yet rounded to float32 (the caller rounds: F.f32
    in Python, np.float32 in a kernel, the same bits). Original: 0x00106f50."""
    x = 0.0 if 0.0 > v else v
    return 3.0 if 3.0 < x else x


@register_jitable
def pick_chosen(v):
    """The audible clip of a pick at value ``v`` (its float32): 0 below 0.51, 1 below 1.51,
    2 below 2.51, else 3 (the thresholds float32). Original: 0x00107f60."""
    if v < _PICK0:
        return 0
    if v < _PICK1:
        return 1
    if v < _PICK2:
        return 2
    return 3


@register_jitable
def direction_value(d):
    """A direction task's value: ``d`` modulo 8 as Python takes it (0 <= v < 8 but for a
    tiny negative ``d``, which gives 8.0). Original: 0x00109210."""
    return d % 8.0


@register_jitable
def direction_centre(v):
    """The nearest of the eight directions to value ``v`` (its leading clip), 0-7.
    Original: 0x00109210."""
    return int(math.floor(v + 0.5)) & 7


# Rows taken near the human's own: every take of a task, cursor, fade or gait row names a
# hint (a row of the same human's, "near_hints" in anim.engine.store) and takes the free
# row nearest it, looking this many rows to either side; none free there, the top of the
# free list. So a human's rows, and the next human's, lie side by side in the tables the
# step and the pose walk (docs/performance.md, "The kernels per human"). Not a rule of the
# original (it has 360 tasks, no tables to walk): a row's number changes no result.
NEAR_ROWS = 16


@register_jitable
def near_free_row(live, cap, hint):
    """The free row nearest ``hint`` (``live`` false) among rows 0..``cap`` - 1 within
    NEAR_ROWS of it, the lower first at equal distance; -1 when there is none, or no hint
    (``hint`` < 0). In: the table's ``live`` (bool or int8, at least ``cap`` long), its
    capacity, the hint. Every path that takes a row calls this one text."""
    if hint < 0:
        return -1
    for d in range(NEAR_ROWS + 1):
        lo = hint - d
        if 0 <= lo < cap and not live[lo]:
            return lo
        if d > 0:
            hi = hint + d
            if hi < cap and not live[hi]:
                return hi
    return -1


@register_jitable
def near_scaled(row, cap, row_cap):
    """Row ``row`` of a table of ``row_cap`` rows as a hint into one of ``cap`` rows (a
    fade's or a gait's row near its task's): the same fraction of the table, or -1 for
    NO_ROW."""
    if row < 0:
        return -1
    return row * cap // row_cap
