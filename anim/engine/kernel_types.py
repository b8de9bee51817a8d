"""The compiled kernels' interfaces: the tables and buffers as named tuples of arrays.

The entry points of anim.engine.kernels take the tables as named tuples of their columns (numba
passes a named tuple of arrays as one argument; the kernels unpack it in their first
lines, so the bodies read the columns by their old names). The fields of the table
tuples are the tables' own columns, in the tables' order (anim.engine.store;
tests/anim/test_kernels.py checks it); anim.playback.batch builds them once per growth of a
table, not per update.

A module of its own, imported by the kernel modules before numba's cache is checked
(anim.engine.jitcache): the cache's index names these classes in its kernels' signatures, and
reading it must be able to import them.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["HumanCols", "TaskCols", "CursorCols", "FadeCols", "GaitCols", "EventIndex", "StepRules", "StepBuffers",
           "BankTables", "Scratch", "PoseOut", "PlanArrays", "PoseBuffers", "RowState", "FlushBuffers",
           "SnapViews", "SnapPlan", "ClipFacts", "SnapLists", "SnapScratch", "IdTasks", "IdHumans", "IdCalls",
           "IdRules", "CmdBlocks", "CmdArgs", "ClipRow", "GaitRow", "BufTables", "CmdBuffer", "CmdPlans", "CmdBatch"]


class HumanCols(NamedTuple):
    """The human table's columns (anim.engine.store.HumanTable) the step and the pose read (the
    queue: the pose's queued_default)."""
    flags: np.ndarray
    depth: np.ndarray
    stack: np.ndarray
    queued: np.ndarray
    queue: np.ndarray


class TaskCols(NamedTuple):
    """The task table's columns (anim.engine.store.task_table)."""
    type: np.ndarray
    rate: np.ndarray
    flags: np.ndarray
    held: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    aux: np.ndarray
    nxt: np.ndarray
    blend: np.ndarray
    window: np.ndarray
    incoming: np.ndarray
    released: np.ndarray
    handed_over: np.ndarray
    wraps: np.ndarray
    speed: np.ndarray
    callback: np.ndarray
    placed: np.ndarray
    c2: np.ndarray
    c3: np.ndarray
    value: np.ndarray
    target: np.ndarray
    base: np.ndarray
    centre: np.ndarray
    sampling: np.ndarray
    on_end: np.ndarray          # callback ids of the world's CallbackTable (-1: none)
    on_wrap: np.ndarray
    partner: np.ndarray         # a paired task's partner's handle (-1: none, or a name)
    partner_name: np.ndarray    # its name's id (-1: none)
    dir_banks: np.ndarray       # (rows, 8): a direction task's clips' bank indices (-1: another type)


class CursorCols(NamedTuple):
    """The cursor table's columns (anim.engine.store.cursor_table), then its row state and free
    list (``live``, ``gen``, ``free_rows[:n_free[0]]``) and the list's index (``free_at``,
    a cache: kernels_write.take_row): the step takes and gives the cursors a gait's change
    of pair brings in and drops."""
    t: np.ndarray
    frame: np.ndarray
    end: np.ndarray
    limit: np.ndarray
    dur: np.ndarray
    flags: np.ndarray
    bank: np.ndarray
    ev: np.ndarray
    evf: np.ndarray
    evf0: np.ndarray
    at_end: np.ndarray
    anim: np.ndarray
    live: np.ndarray
    gen: np.ndarray
    free_rows: np.ndarray
    n_free: np.ndarray
    free_at: np.ndarray


class FadeCols(NamedTuple):
    """The fade table's columns (anim.engine.store.fade_table)."""
    el: np.ndarray
    dur: np.ndarray


class GaitCols(NamedTuple):
    """The gait table's columns (anim.engine.store.gait_table)."""
    value: np.ndarray
    target: np.ndarray
    lower: np.ndarray
    leader: np.ndarray
    id0: np.ndarray
    id1: np.ndarray
    id2: np.ndarray
    id3: np.ndarray
    id4: np.ndarray
    b0: np.ndarray
    b1: np.ndarray
    b2: np.ndarray
    b3: np.ndarray
    b4: np.ndarray


class EventIndex(NamedTuple):
    """The clips by bank index: the first event's index and the number (``n``) per clip,
    each event's frame and type, and each clip's end test (``end`` F, ``limit`` D - 1/60)
    and duration, as a new cursor gets them (anim.playback.batch, _clip_events)."""
    first: np.ndarray
    n: np.ndarray
    frame: np.ndarray
    type: np.ndarray
    end: np.ndarray
    limit: np.ndarray
    dur: np.ndarray


class StepRules(NamedTuple):
    """The step's switches (PlayerOptions): end a zero-overshoot clip, only the newest
    task's events (EventRule.NEWEST), the fade clean-up's stack size; ``skip_pairs``
    (a chunk of the crowd stepped beside others on another thread) leaves out, with
    STATUS_SKIPPED, each human whose gait changes its pair this update (that takes
    cursors from the shared free list: the caller steps those humans after, in order)."""
    zero_overshoot: bool
    newest_only: bool
    cleanup_above: int
    skip_pairs: bool = False


class StepBuffers(NamedTuple):
    """The step's outputs and scratch (see step_stacks)."""
    status: np.ndarray
    ev_lo: np.ndarray
    ev_hi: np.ndarray
    ev_out: np.ndarray
    def_out: np.ndarray
    counts: np.ndarray
    wrap_out: np.ndarray
    snap: np.ndarray
    walk: np.ndarray
    pair4: np.ndarray


class BankTables(NamedTuple):
    """A ClipBank and its skeleton in the pose kernels' layout (anim.engine.plan.PoseTables):
    the frame -> key table and the keys key-major, the sentinels, the animated slots, the
    reference rotations (``ref_rot`` bone-major (34, 4); ``ref_lanes`` the same values
    component-major (4, LANES), bones in SIMD lanes as the scratch poses hold them, the
    padding lanes the identity), the
    bind height, the parent table, the bone offsets and every bone's subtree mask; bones
    0-33's keys frame-major (the ClipBank's ``frow``, ``fkeys``, ``ftag``: a frame's key
    row, each key row's values, slopes and start frames (9 x 34,), its tags (34,))."""
    row0: np.ndarray
    rows: np.ndarray
    ftab: np.ndarray
    kval: np.ndarray
    kslope: np.ndarray
    kstart: np.ndarray
    ktag: np.ndarray
    sent_vel: np.int64
    sent_bone: np.int64
    animated: np.ndarray
    ref_rot: np.ndarray
    ref_lanes: np.ndarray
    bind_height: np.float32
    parents: np.ndarray
    offsets: np.ndarray
    submask: np.ndarray
    frow: np.ndarray
    fkeys: np.ndarray
    ftag: np.ndarray


class Scratch(NamedTuple):
    """Human-major scratch poses: vel (P, 3), root (P, 3), rot (P, 4, LANES) (each pose's
    rotations component-major, bones in SIMD lanes, kernels_pose.LANES of them: the
    padding lanes past the last bone the identity), tag (P, 36);
    ``vel_i``, ``root_i``, ``rot_i`` the same memory as int32 (the y words' tag bit),
    ``tag_bits`` whether the tags go into the y words (PlayerOptions.tag_bits) and
    ``motion_entry`` whether bone-transform entry 0 holds the motion channels
    (PlayerOptions.motion_entry); ``dflt`` (int64, one value) the scratch pose whose
    rotations a sample's bones 1-33 take from the default pose (-1: the reference pose's;
    pose_stacks sets it for queued_default); ``lanes`` (float32 (LANE_ROWS x LANES,): x, y,
    z, w, then the lanes' flags, dots and weights), ``lane_tag`` (bool (36,)) and
    ``lane_idx`` (int64 (LANES,): the bones that slerp) a blend's bones before they go to
    its pose (its SIMD loops then never read and write one pose, which would keep them
    scalar)."""
    vel: np.ndarray
    root: np.ndarray
    rot: np.ndarray
    tag: np.ndarray
    vel_i: np.ndarray
    root_i: np.ndarray
    rot_i: np.ndarray
    tag_bits: np.bool_
    motion_entry: np.bool_
    dflt: np.ndarray
    lanes: np.ndarray
    lane_tag: np.ndarray
    lane_idx: np.ndarray


class PoseOut(NamedTuple):
    """The poses and bone transforms out, component first, human last (anim.engine.plan.Bones)."""
    vel: np.ndarray
    root: np.ndarray
    rot: np.ndarray
    tag: np.ndarray
    pos: np.ndarray
    mrot: np.ndarray


class PoseBuffers(NamedTuple):
    """pose_stacks' per-human buffers (k: the human's place in the call's rows):
    ``refused`` (int64, out) the poses its pose stack refused, ``weights`` (float32, >= 64)
    scratch for the blend windows' weights, ``queued_default`` (bool, in) whether its
    queued tasks' pose is its default pose for this sample (PlayerOptions.queued_default)."""
    refused: np.ndarray
    weights: np.ndarray
    queued_default: np.ndarray


class PlanArrays(NamedTuple):
    """A SamplePlan's arrays (anim.engine.plan): per human its first sample and blend, the
    samples (clip, time, rate, flags), the blends (poses a and b, weight, bone mask) and
    each human's final handle."""
    first_s: np.ndarray
    first_b: np.ndarray
    s_clip: np.ndarray
    s_time: np.ndarray
    s_rate: np.ndarray
    s_flags: np.ndarray
    b_a: np.ndarray
    b_b: np.ndarray
    b_w: np.ndarray
    b_mask: np.ndarray
    finals: np.ndarray


class RowState(NamedTuple):
    """A table's row state and free list (anim.engine.store.Table: ``live``, ``gen``,
    ``free_rows[:n_free[0]]``, the list's index ``free_at``): the flush's release gives
    rows back through them, as ``Table.free`` does (the task, fade and gait tables; the
    cursors' are in CursorCols)."""
    live: np.ndarray
    gen: np.ndarray
    free_rows: np.ndarray
    n_free: np.ndarray
    free_at: np.ndarray


class FlushBuffers(NamedTuple):
    """flush_release's entries, outputs and scratch (see anim.engine.kernels.flush_release):
    ``entries`` (int64 (n, 2), in) the deferred list's entries (human row, task row), in
    its order (anim.playback.deferred: the step kernel wrote them; -1 for an entry Python holds as
    objects); ``ids`` (int64, out) the anim id each released task reports; ``freed``
    (int32, out) the task rows given back, in order, ~row for a row holding a callback id
    (the Python side clears their handles, lets their callback ids go and resets them to
    the defaults); ``counts`` (int64, out: FLUSH_FREED the rows in ``freed``, FLUSH_IN the
    tasks counted back into the pool, FLUSH_STOP the entry it stopped at, FLUSH_KEYED the
    rows written as ~row); ``chain`` (int32, scratch: a task and the next
    tasks it owns); ``pool_out`` (bool, the TaskPool's ``out``: one flag per task row,
    maybe shorter than the task table); ``end_mark`` (the task table's ``on_end``: a
    callback id per row, >= 0 when it has an end callback, which Python runs) and
    ``report_mark`` (the human table's ``on_report``: >= 0 when the human has a report
    callback, so a task of it holding 0x400000 stops for Python); ``end_keep`` (int8, one
    per callback id: the EndWork the kernel does itself instead of stopping, 0 for none:
    anim.engine.callbacks.Callbacks.action_of); ``notes`` (int32, out, at least as long as
    ``entries``: the ids of the EndWork.NOTE callbacks released, in order, the first
    ``counts[FLUSH_NOTED]``)."""
    entries: np.ndarray
    ids: np.ndarray
    freed: np.ndarray
    counts: np.ndarray
    chain: np.ndarray
    pool_out: np.ndarray
    end_mark: np.ndarray
    report_mark: np.ndarray
    end_keep: np.ndarray
    notes: np.ndarray


# ---------------------------------------------------------------- a snapshot file's checks
# (anim.engine.snapkernel.check_rows and check_ids_rows; anim.engine.snapcheck builds them)

class SnapViews(NamedTuple):
    """The scratch buffer holding a file's tables, one view per item type
    (anim.engine.snapkernel.VIEWS' order: a bool column is read through ``i8``)."""
    i8: np.ndarray
    i32: np.ndarray
    i64: np.ndarray
    f32: np.ndarray
    f64: np.ndarray


class SnapPlan(NamedTuple):
    """check_rows' plan for one set of layouts: ``tabs`` per table (capacity, live's byte
    index, gen's, free_rows' and n_free's int64 element indexes), the declared checks
    (``spec`` SPEC_WIDTH ints a row, ``fspec`` 2 floats a row), the structural checks'
    columns (``at``: AT's order), ``must`` the cursor columns each task type links (-1:
    not a type), ``nxt_mask`` the types with a next task, the fade and gait types."""
    tabs: np.ndarray
    spec: np.ndarray
    fspec: np.ndarray
    at: np.ndarray
    must: np.ndarray
    nxt_mask: int
    fade_type: int
    gait_type: int


class ClipFacts(NamedTuple):
    """What a cursor on each clip of the bank must hold, by bank index
    (anim.engine.snapcheck.clip_facts): F, D - 1/60 and D as float32, the first event's
    frame, the events' count, where each clip's event frames start in ``frames``
    (anim.engine.snapkernel.check_rows reads limit and dur as their bits: int32 views)."""
    end: np.ndarray
    limit: np.ndarray
    dur: np.ndarray
    evf0: np.ndarray
    nev: np.ndarray
    first: np.ndarray
    frames: np.ndarray


class SnapLists(NamedTuple):
    """The engine's lists beside the tables: the human table's generations and free list,
    the pool's flags as bytes, the rows freed since each table's last take (table t's at
    ``dirty[dirty_at[t]:dirty_at[t + 1]]``), the humans' entities, sorted."""
    hgen: np.ndarray
    hfree: np.ndarray
    pool: np.ndarray
    dirty: np.ndarray
    dirty_at: np.ndarray
    ents: np.ndarray


class SnapScratch(NamedTuple):
    """check_rows' scratch and outputs: ``seen`` (int64, at least every capacity),
    ``lrows`` (int64, every capacity and one more a table), ``out`` (int64) and ``fout``
    (float64): the fault's fields."""
    seen: np.ndarray
    lrows: np.ndarray
    out: np.ndarray
    fout: np.ndarray


class IdTasks(NamedTuple):
    """The task table's columns check_ids_rows reads (``live`` and ``callback`` as int8)."""
    live: np.ndarray
    type: np.ndarray
    on_end: np.ndarray
    on_wrap: np.ndarray
    partner_name: np.ndarray
    callback: np.ndarray
    partner: np.ndarray
    dir_banks: np.ndarray


class IdHumans(NamedTuple):
    """The human table's columns check_ids_rows reads (``live`` as int8)."""
    live: np.ndarray
    on_report: np.ndarray


class IdCalls(NamedTuple):
    """The callbacks table as check_ids_rows reads it: per id whether it is a name and
    whether a callback (int8 each), its uses; the free ids."""
    is_name: np.ndarray
    is_call: np.ndarray
    uses: np.ndarray
    free: np.ndarray


class IdRules(NamedTuple):
    """The rules the ids are checked by: the types that take a wrap callback and those that
    take a partner (bit t: type t), the direction type, and the bank's clip count."""
    wrap_mask: int
    paired_mask: int
    dir_type: int
    n_banks: int


# ---------------------------------------------------------------- the prepared commands
# (anim.engine.cmdkernel's kernels; anim.playback.prepared and batched build them)

class CmdBlocks(NamedTuple):
    """The task, cursor, fade, gait and human tables' blocks as cmdkernel reads them, one
    view per item type a table's columns have (cmdkernel.BLOCK_VIEWS' order; a bool
    column through its table's int8 view), then the task table's float64 view."""
    t64: np.ndarray
    t32: np.ndarray
    tf32: np.ndarray
    t8: np.ndarray
    c64: np.ndarray
    c32: np.ndarray
    cf32: np.ndarray
    c8: np.ndarray
    fi64: np.ndarray
    fi32: np.ndarray
    ff32: np.ndarray
    f8: np.ndarray
    g64: np.ndarray
    g32: np.ndarray
    gf32: np.ndarray
    g8: np.ndarray
    h64: np.ndarray
    h32: np.ndarray
    tf64: np.ndarray


class CmdArgs(NamedTuple):
    """One prepared command's numbers (cmdkernel.run_rows): the human's slot and depth, the
    place (cmdkernel.PLACE_*), the blend window's index, the human's speed, the fade's
    time, a gait's target and value, ``vnone`` (1: no value, the target's)."""
    slot: int
    n: int
    place: int
    window: int
    speed: float
    fade: float
    target: float
    value: float
    vnone: int


class ClipRow(NamedTuple):
    """A handle constructor's single-clip task (cmdkernel.clip_rows): the task's type,
    rate, flags and held bits; its cursor's end test, limit and duration (the float32
    values), bank index, anim id, cursor flags and first event frame (cursor_proto's)."""
    ttype: int
    rate: float
    flags: int
    held: int
    end: int
    limit: float
    dur: float
    bank: int
    anim: int
    cflags: int
    evf0: int


class GaitRow(NamedTuple):
    """A handle constructor's gait (cmdkernel.gait_rows): the rate (the human's speed), the
    task's flags and held bits, the target and value as given (``vnone`` 1: no value, the
    target's)."""
    rate: float
    flags: int
    held: int
    target: float
    value: float
    vnone: int


class BufTables(NamedTuple):
    """What cmdkernel.buffer_commands and gait_targets read of the tables (kept while they
    keep their arrays): the human table's ``depth``, ``queued``, ``speed`` and ``stack``; the task
    table's ``type``, ``released`` (int8), ``flags`` and ``aux``; the gait table's
    ``target``; the task table's free count and list; the cursor, fade and gait tables'
    free counts."""
    depth: np.ndarray
    queued: np.ndarray
    speed: np.ndarray
    stack: np.ndarray
    t_type: np.ndarray
    t_released: np.ndarray
    t_flags: np.ndarray
    t_aux: np.ndarray
    g_target: np.ndarray
    t_nf: np.ndarray
    t_free: np.ndarray
    c_nf: np.ndarray
    f_nf: np.ndarray
    g_nf: np.ndarray


class CmdBuffer(NamedTuple):
    """A command buffer's rows as int64 (``bi``) and float64 (``bf``, the same memory) and
    its counts (``cnt``: cmdkernel.CN_*)."""
    bi: np.ndarray
    bf: np.ndarray
    cnt: np.ndarray


class CmdPlans(NamedTuple):
    """A batch's plans (``pi``, ``pf``: cmdkernel.PI_* / PF_* columns) and its id look-up
    (``lut``)."""
    pi: np.ndarray
    pf: np.ndarray
    lut: np.ndarray


class CmdBatch(NamedTuple):
    """A batch's rows: ``mark`` (a human row holding the call's stamp has a command
    waiting), per row the human's slot, its plan (``ents``: -1 none) and its numbers
    (``args``)."""
    mark: np.ndarray
    slots: np.ndarray
    ents: np.ndarray
    args: np.ndarray
