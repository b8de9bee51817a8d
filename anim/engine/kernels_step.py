"""The step kernel: every human's task stack advanced one update, as table rows.

``step_stacks`` steps every human it is given, task by task bottom-up: the toward-zero
cursor, the end test and the zero-overshoot reading, the loop's wrap, type 3 / 6's
hand-over and blend window (its next task advanced too, or kept), the fade's end and
clean-up, the gait blend's value, pair (its new cursors taken from the cursor table's
free list), leader and follower, type 10's weight, leader and follower, type 11's four
clips in step, type 13's centre and followers, the held-flag events; fired events,
deferred tasks and wraps are written as rows of preallocated buffers (anim.playback.batch drives
it). One read-only walk of a human's rows before its step (``_room``) finds the room it
needs, whether its rows can be followed and whether a gait of it changes pair; the rows
of the humans a few places ahead are prefetched meanwhile (anim.engine.kernels_fetch,
shared with the pose). Tables: anim.engine.store (the task table with type, rate, flags, held bits, cursor rows,
the fade's or gait's row, next and incoming links, blend time and window rule, released,
handed over, wraps; the human table with the record's flags and the stack as task rows).

Spec: "The cursor", "When a clip ends", "Fades", "Gait blend", "Animation tasks", "The
task stack". Original: 0x001044a0 AnimCursor_Advance, 0x00175610 (the stack's +0x64
calls), 0x00105770 (loop), 0x00105af0 (type 3's hand-over), 0x00106cc8 (fade),
0x0010a5b8 (gait), 0x0010b090 / 0x0010b448 (type 10), 0x00106f50 / 0x00107f60 (type 11),
0x00109210 / 0x0010a008 (type 13).
"""
from __future__ import annotations

import numpy as np
from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.kernels_maths import (jit_kinds, _add, _div, _frame_of, _mul, _sub)
from scuffle.anim.engine.kernels_write import cursor_init, take_row
from scuffle.anim.engine.kernels_fetch import PREFETCH_ROWS, PREFETCH_TASKS, fetch_rows, fetch_tasks
from scuffle.anim.engine.kernels_rows import (_CLIP, _CLOSE_CLEAR, _CLOSE_NEED, _CLOSE_SET, _CURSOR_BITS,
                           _DIRECTION, _FADE, _GAIT, _HELD_CLOSE, _HELD_OPEN, _HELD_REPLACE, _HOLD, _KEPT,
                           _LOOP, _MIX, _MUTED, _NO_EVENT, _NO_ROW, _OPEN_CLEAR, _OPEN_NEED, _OPEN_SET,
                           _PAIRED_CLIP, _PAIRED_HOLD, _PICK, _REPLACED, _SCENE, _cursor_k, _find, _gait_value,
                           _cursor_flags_of, _gait_lead, _give_row, _lead, _pair_index, _seed_walk, _set_next_event,
                           _set_time, _window)

# numba's on-disk cache of this module's kernels: True, or False with no writable cache
# folder (they then compile for the process only); a corrupt cache is set aside first.
CACHE = cache_setting(__file__)
_helper, _kernel, _inline = jit_kinds(CACHE)

__all__ = ["STATUS_BAD", "STATUS_STACK", "STATUS_EVENTS", "STATUS_TOP", "STATUS_DEFERRED", "STATUS_SKIPPED",
           "STATUS_LEAN", "COUNT_EVENTS", "COUNT_DEFERRED", "COUNT_STOPPED", "COUNT_GAITS", "COUNT_WRAPS",
           "step_stacks", "step_lean"]
# numba's cache is keyed on each function's own file: the sha256 of the kernel modules
# this one links (anim.maths.detmath's scalar forms and the kernels_* modules it imports), so an
# edit there changes this file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "43f2525a71b6307ee381baaaf7c50559d967b4b447edd30684a735e1947e0fea"


# status bits per human (step_stacks' ``status``)
STATUS_BAD = 1                  # not stepped: a task without the rows the kernel follows
STATUS_STACK = 2                # its stack rows (or a next / incoming link) changed
STATUS_EVENTS = 4               # it fired events (rows in ev_out)
STATUS_TOP = 8                  # the playing anim id may have changed (refresh at the flush)
STATUS_DEFERRED = 16            # it put tasks on the deferred list
STATUS_SKIPPED = 32             # not stepped: its gait changes pair (StepRules.skip_pairs)
STATUS_LEAN = 64                # step_lean stopped before it: its step needs step_stacks (a rare path)
# counts (step_stacks' ``counts``)
COUNT_EVENTS = 0
COUNT_DEFERRED = 1
COUNT_STOPPED = 2               # the index it stopped at (== len(rows) when done)
COUNT_GAITS = 3                 # gaits whose pair changed
COUNT_WRAPS = 4                 # wraps of tasks with a wrap callback (wrap_out rows)


@_helper
def _fire(hi, c, tr, sink_on, cursors, events, out, n_ev):
    """Cursor._fire: the events up to the cursor's frame, as rows (none when muted)."""
    c_frame, c_flags, c_bank, c_ev = cursors.frame, cursors.flags, cursors.bank, cursors.ev
    e_first, e_count, e_frame = events.first, events.n, events.frame
    ev_out = out.ev_out
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
    _set_next_event(c, i, cursors, events)
    return n_ev


@_helper
def _restart(c, cursors, events):
    """Cursor.restart: time 0, frame 0, no event passed. Original: AnimCursor_Restart."""
    c_t, c_frame, c_at_end = cursors.t, cursors.frame, cursors.at_end
    c_t[c] = 0.0
    c_frame[c] = 0
    c_at_end[c] = False
    _set_next_event(c, np.int64(0), cursors, events)


@_helper
def _advance(hi, c, r, step, sink_on, cursors, events, out, n_ev):
    """Cursor.advance: by ``step``; the events reached go to ``ev_out`` as task ``r``'s
    (muted: none). Returns (the overshoot or 0.0, the events' new count).
    Original: 0x001044a0 AnimCursor_Advance."""
    c_t, c_frame, c_end, c_limit, c_evf = cursors.t, cursors.frame, cursors.end, cursors.limit, cursors.evf
    c_at_end = cursors.at_end
    t = _add(np.float64(c_t[c]), step)
    f = _frame_of(t)
    if f >= c_end[c]:
        c_at_end[c] = True
        return _sub(t, np.float64(c_limit[c])), n_ev
    c_at_end[c] = False
    c_t[c] = t
    c_frame[c] = f
    if f >= c_evf[c]:
        n_ev = _fire(hi, c, r, sink_on, cursors, events, out, n_ev)
    return 0.0, n_ev


@_helper
def _advance_looping(hi, c, r, step, sink_on, zero_overshoot, cursors, events, out, n_ev):
    """tasks._advance_looping: advance; when the clip ended, restart and advance by the
    overshoot (period D - 1/60). Returns (wrapped, the events' new count)."""
    c_at_end = cursors.at_end
    over, n_ev = _advance(hi, c, r, step, sink_on, cursors, events, out, n_ev)
    if over != 0.0 or (zero_overshoot and c_at_end[c]):
        _restart(c, cursors, events)
        _, n_ev = _advance(hi, c, r, over, sink_on, cursors, events, out, n_ev)
        return True, n_ev
    return False, n_ev


@_helper
def _runnable(r, tasks):
    """Whether the kernel runs task ``r``: a type it knows (1, 3-7, 9-13) with its rows."""
    t_type, t_c0, t_c1, t_c2, t_c3, t_aux = tasks.type, tasks.c0, tasks.c1, tasks.c2, tasks.c3, tasks.aux
    tt = t_type[r]
    if tt == _LOOP or tt == _CLIP or tt == _PAIRED_HOLD or tt == _HOLD or tt == _PAIRED_CLIP or tt == _SCENE:
        return t_c0[r] >= 0
    if tt == _FADE:
        return t_aux[r] >= 0
    if tt == _GAIT:
        return t_aux[r] >= 0 and t_c0[r] >= 0 and t_c1[r] >= 0
    if tt == _MIX:
        return t_c0[r] >= 0 and t_c1[r] >= 0
    if tt == _PICK:
        return t_c0[r] >= 0 and t_c1[r] >= 0 and t_c2[r] >= 0 and t_c3[r] >= 0
    if tt == _DIRECTION:
        return t_c0[r] >= 0 and t_c1[r] >= 0 and t_c2[r] >= 0
    return False


@_helper
def _of_five(g, idx, c0, c1, c2, c3, c4):
    """Row ``g`` of the ``idx``-th (0-4) of a gait's five columns (its ids ``id0``-``id4``
    or their clips' bank indices ``b0``-``b4``)."""
    if idx == 0:
        return c0[g]
    if idx == 1:
        return c1[g]
    if idx == 2:
        return c2[g]
    if idx == 3:
        return c3[g]
    return c4[g]


@_helper
def _take_cursor(bank, anim, cursors, events, hint):
    """Cursor.__init__ in the kernel: a row from the cursor table's free list (the caller
    reserved enough), the free row nearest row ``hint`` (kernels_write.take_row), restarted on clip ``bank`` (its end test, duration and first event)
    for ``anim``, flags 0, by the one compiled cursor writer (anim.engine.kernels_write).
    Returns the row. Original: 0x001041f8 AnimCursor_Init."""
    c = take_row(cursors.live, cursors.free_rows, cursors.n_free, cursors.free_at, hint)
    f0 = events.frame[events.first[bank]] if events.n[bank] > 0 else _NO_EVENT
    cursor_init(cursors, c, events.end[bank], events.limit[bank], events.dur[bank], bank, anim, 0, f0)
    return c


@_helper
def _give_cursor(c, cursors):
    """Cursor.dispose in the kernel: the row back on the free list, its generation up."""
    _give_row(c, cursors.live, cursors.gen, cursors.free_rows, cursors.n_free, cursors.free_at)


@_helper
def _new_pair(r, nl, tasks, gaits, cursors, events, out):
    """GaitTask.advance's change of pair to ``nl``: each of the two cursors is kept once, by
    id (a pair of one id twice keeps the upper); a clip that comes in gets a new cursor
    (``_take_cursor``, near the gait's old cursor of its place); the cursors not kept go
    back (``_give_cursor``), after. Writes the
    new (lower, upper) rows into ``out[0:2]`` and, for a clip that comes in, 1 into
    ``out[2 + j]``."""
    t_c0, t_c1, t_aux = tasks.c0, tasks.c1, tasks.aux
    g = np.int64(t_aux[r])
    lower = np.int64(gaits.lower[g])
    k_id0 = _of_five(g, lower, gaits.id0, gaits.id1, gaits.id2, gaits.id3, gaits.id4)
    k_id1 = _of_five(g, lower + 1, gaits.id0, gaits.id1, gaits.id2, gaits.id3, gaits.id4)
    k_alive0 = k_id0 != k_id1                # one id twice: the dict keeps the upper
    k_alive1 = True
    old0 = np.int64(t_c0[r])
    old1 = np.int64(t_c1[r])
    for j in range(2):
        cid = _of_five(g, nl + j, gaits.id0, gaits.id1, gaits.id2, gaits.id3, gaits.id4)
        out[2 + j] = 0
        if k_alive0 and k_id0 == cid:
            out[j] = old0
            k_alive0 = False
        elif k_alive1 and k_id1 == cid:
            out[j] = old1
            k_alive1 = False
        else:
            bank = _of_five(g, nl + j, gaits.b0, gaits.b1, gaits.b2, gaits.b3, gaits.b4)
            out[j] = _take_cursor(bank, cid, cursors, events, old1 if j else old0)   # near the one it follows
            out[2 + j] = 1
    # the cursors not kept go back, then the lower of a pair of one id twice (the order of
    # GaitTask.advance: the dict's values left, then the dropped one)
    if k_alive0:
        _give_cursor(old0, cursors)
    if k_alive1:
        _give_cursor(old1, cursors)
    if k_id0 == k_id1:
        _give_cursor(old0, cursors)


@_helper
def _defer(hi, r, t_released, def_out, n_def):
    """Player.defer: on the deferred list once. Original: 0x00105640 AnimTask_DeferGive."""
    if not t_released[r]:
        t_released[r] = True
        def_out[n_def, 0] = hi
        def_out[n_def, 1] = r
        n_def += 1
    return n_def


@_helper
def _owner_of(hi, task, humans, tasks, out):
    """Player._owner_of: the clip task (on the stack or following one) whose next is ``task``."""
    t_type, t_nxt, t_handed = tasks.type, tasks.nxt, tasks.handed_over
    walk = out.walk
    n = _seed_walk(hi, humans, walk)
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


@_helper
def _clear_flags(hi, bits, task, humans, tasks):
    """Player._clear_flags: clear ``bits`` from the human but those another task holds."""
    h_depth, h_stack, h_flags = humans.depth, humans.stack, humans.flags
    t_held, t_released = tasks.held, tasks.released
    others = np.int64(0)
    for i in range(h_depth[hi]):
        t = np.int64(h_stack[hi, i])
        if t != task and not t_released[t]:
            others |= t_held[t]
    h_flags[hi] &= ~(bits & ~others)


@_helper
def _lean_refuses(hi, humans, tasks, out):
    """Whether human ``hi``'s stack (its clips' chains of next tasks included) holds a
    type 10, 11 or 13, whose steps ``step_lean`` leaves to ``step_stacks`` (a chain
    longer than the walk's scratch counts as one). Read only."""
    t_type, t_nxt = tasks.type, tasks.nxt
    walk = out.walk
    n = _seed_walk(hi, humans, walk)
    while n > 0:
        n -= 1
        r = walk[n]
        tt = t_type[r]
        if tt == _MIX or tt == _PICK or tt == _DIRECTION:
            return True
        if (tt == _CLIP or tt == _PAIRED_CLIP) and t_nxt[r] >= 0:
            if n >= walk.shape[0]:
                return True
            walk[n] = t_nxt[r]
            n += 1
    return False


# ---------------------------------------------------------------- the step
#
# step_stacks and its named steps, one per rule of the spec's per-update order. The steps
# take plain columns (arrays and scalars): steps taking the tables' named tuples make
# step_stacks several times slower, inlined or not. They allocate nothing and
# are compiled with ``_nrt=False``: with numba's reference counting every array argument
# costs an atomic increment and decrement per call (a large share of the split step); without it
# LLVM inlines the small ones. Each returns the buffers' fill counts it moved. (Numba's
# ``inline='always'`` is no way out: CPython 3.11 passes a call of more than 30 arguments
# as *args, which numba's inliner refuses.)


@_helper
def _step_mix(hi, r, dt, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev):
    """MixTask.advance: the weight (a double) moves toward its target by at most
    rate x dt x speed; the heavier clip leads (unmuted), advancing and looping, the other
    follows at its normalised time, muted. Returns the events' new count.
    Original: 0x0010b090 (type 10; its details ours)."""
    t_rate, t_flags, t_speed, t_c0, t_c1 = tasks.rate, tasks.flags, tasks.speed, tasks.c0, tasks.c1
    t_value, t_target = tasks.value, tasks.target
    c_t, c_dur, c_flags = cursors.t, cursors.dur, cursors.flags
    v = t_value[r]
    tgt = t_target[r]
    limit = _mul(_mul(np.float64(t_rate[r]), dt), np.float64(t_speed[r]))
    if tgt > v:
        nv = v + limit
        if tgt < nv:                        # min(v + limit, target): the first unless the second is less
            nv = tgt
    elif tgt < v:
        nv = v - limit
        if tgt > nv:                        # max(v - limit, target)
            nv = tgt
    else:
        nv = v
    t_value[r] = nv
    if nv >= 0.5:
        lc = np.int64(t_c1[r])
        fc = np.int64(t_c0[r])
    else:
        lc = np.int64(t_c0[r])
        fc = np.int64(t_c1[r])
    base = t_flags[r] & _CURSOR_BITS
    c_flags[lc] = _cursor_flags_of(base, True)          # anim.engine.rules: the leader plays, the other muted
    c_flags[fc] = _cursor_flags_of(base, False)
    _, n_ev = _advance_looping(hi, lc, r, step, sink_on, zero_overshoot, cursors, events, out, n_ev)
    tf = _mul(_div(np.float64(c_t[lc]), np.float64(c_dur[lc])), np.float64(c_dur[fc]))
    _set_time(fc, tf, cursors, events)
    return n_ev


@_helper
def _step_fade(hi, r, step, cleanup_above, humans, tasks, fades, out, n_def):
    """Type 9 advances ("Fades" L261-267): its clock by ``step``; at its end, or with more
    than ``cleanup_above`` tasks on the stack, it goes with every task between its new
    task and itself (StackRules.complete_fade). Returns (the deferred count, whether the
    stack changed). Original: 0x00106cc8."""
    h_depth, h_stack = humans.depth, humans.stack
    t_aux, t_incoming, t_released = tasks.aux, tasks.incoming, tasks.released
    f_el, f_dur = fades.el, fades.dur
    def_out = out.def_out
    a = np.int64(t_aux[r])
    el = _add(np.float64(f_el[a]), step)
    f_el[a] = el
    if not (el >= f_dur[a] or h_depth[hi] > cleanup_above):
        return n_def, False
    hpos = _find(hi, r, humans)
    if t_released[r] or hpos < 0:
        return n_def, False
    inc = np.int64(t_incoming[r])
    lo = 0
    if inc >= 0:
        ipos = _find(hi, inc, humans)
        if ipos >= 0:
            lo = ipos + 1
    d = h_depth[hi]
    for j in range(lo, hpos + 1):
        n_def = _defer(hi, np.int64(h_stack[hi, j]), t_released, def_out, n_def)
    gone = hpos + 1 - lo
    for j in range(hpos + 1, d):
        h_stack[hi, j - gone] = h_stack[hi, j]
    for j in range(d - gone, d):
        h_stack[hi, j] = _NO_ROW
    h_depth[hi] = d - gone
    return n_def, True


@_helper
def _held_events(hi, n0, n_ev, events, out, humans, tasks):
    """Events 0x2c, 0x2d and 0x48 among the rows ``n0``-``n_ev`` act on the task that fired
    them if it holds the bits ("Animation tasks" L231-237). Original: 0x00101dd8."""
    h_flags = humans.flags
    t_held = tasks.held
    e_type = events.type
    ev_out = out.ev_out
    for j in range(n0, n_ev):
        et = e_type[ev_out[j, 3]]
        tr = ev_out[j, 1]
        if et == _HELD_OPEN or et == _HELD_CLOSE:
            if et == _HELD_OPEN:
                need, clear, setb = _OPEN_NEED, _OPEN_CLEAR, _OPEN_SET
            else:
                need, clear, setb = _CLOSE_NEED, _CLOSE_CLEAR, _CLOSE_SET
            if t_held[tr] & need:
                t_held[tr] = (t_held[tr] & ~clear) | setb
                _clear_flags(hi, np.int64(clear), tr, humans, tasks)
                h_flags[hi] |= setb
        elif et == _HELD_REPLACE and t_held[tr] != 0:
            oldh = t_held[tr]
            t_held[tr] = _REPLACED
            _clear_flags(hi, oldh, tr, humans, tasks)
            h_flags[hi] |= _REPLACED


@_helper
def _most_events(events):
    """The most events any clip of the bank has: the bound ``_room`` counts per cursor."""
    e_count = events.n
    most = np.int64(0)
    for b in range(e_count.shape[0]):
        if e_count[b] > most:
            most = e_count[b]
    return most


@_helper
def _room(hi, dt, most, skip_pairs, humans, tasks, gaits, out):
    """The buffer room human ``hi``'s step may need, whether the kernel can follow its
    rows and (``skip_pairs``) whether its step changes a gait's pair, in one walk over its
    stack and its clips' chains of next tasks, reading only the task rows the step reads
    next: each cursor passes at most its clip's events twice (a wrap), counted as
    ``most``, the most events any clip of the bank has (so no cursor's clip is looked
    up), and a gait's change of pair may bring in a clip that leads; each task (a clip's
    next tasks included) is deferred at most once. Not runnable: a task ``_runnable``
    refuses or a fade as a clip's next task (rows written behind the engine's back).
    A gait changes its pair when its value after this update's move (``_gait_value``,
    the move ``_gait_move`` makes: each task steps once an update) falls in another pair;
    a chain longer than the walk's scratch counts as a change. Read only. Returns
    (events, deferred, runnable, pair ahead)."""
    t_type, t_c0, t_c1, t_c2, t_c3, t_aux = tasks.type, tasks.c0, tasks.c1, tasks.c2, tasks.c3, tasks.aux
    t_nxt = tasks.nxt
    g_lower = gaits.lower
    walk = out.walk
    links = 0
    need_def = 0
    runnable = True
    ahead = False
    n = _seed_walk(hi, humans, walk)
    while n > 0:
        n -= 1
        r = walk[n]
        need_def += 1
        if not _runnable(r, tasks):
            runnable = False
        tt = t_type[r]
        links += (t_c0[r] >= 0) + (t_c1[r] >= 0)
        if t_c2[r] >= 0:                # types 11 and 13
            links += 1 + (t_c3[r] >= 0)     # type 11
        if tt == _GAIT:                 # a clip a change of pair brings in may lead
            links += 1
            if skip_pairs and not ahead and t_aux[r] >= 0:
                ahead = _pair_index(_gait_value(r, dt, tasks, gaits)) != g_lower[t_aux[r]]
        elif (tt == _CLIP or tt == _PAIRED_CLIP) and t_nxt[r] >= 0:
            if n < walk.shape[0]:
                if t_type[t_nxt[r]] == _FADE:
                    runnable = False
                walk[n] = t_nxt[r]
                n += 1
            else:
                ahead = True
    return 2 * most * links, need_def, runnable, ahead


@_helper
def _save_counts(counts, n_ev, n_def, n_gait, n_wrap, stopped):
    """The buffers' fill counts and the index the step stopped at, into ``counts``."""
    counts[COUNT_EVENTS] = n_ev
    counts[COUNT_DEFERRED] = n_def
    counts[COUNT_GAITS] = n_gait
    counts[COUNT_WRAPS] = n_wrap
    counts[COUNT_STOPPED] = stopped


@_helper
def _newest(hi, newest_only, humans, tasks):
    """The task whose events alone fire under EventRule.NEWEST (Player.top: the top task, or
    the bottom one when the top is a fade), -1 when every task's fire ("The task stack"
    L256). Original: 0x00175210."""
    h_depth, h_stack = humans.depth, humans.stack
    t_type = tasks.type
    depth = h_depth[hi]
    if not newest_only or depth == 0:
        return -1
    newest = np.int64(h_stack[hi, depth - 1])
    if t_type[newest] == _FADE:
        newest = np.int64(h_stack[hi, 0])
    return newest


@_helper
def _note_wrap(hi, r, wrap_out, n_wrap):
    """A wrap of task ``r``, which has a wrap callback, as a row of ``wrap_out`` (the caller
    runs the callback after the step). Returns the wraps' new count."""
    wrap_out[n_wrap, 0] = hi
    wrap_out[n_wrap, 1] = r
    return n_wrap + 1


@_helper
def _step_loop(hi, r, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev, n_wrap):
    """Type 1 advances ("When a clip ends" L318): its cursor by ``step``; at the clip's end
    it restarts and advances by the overshoot (period D - 1/60), the wrap is counted and,
    with a wrap callback, noted. Returns (the events' count, the wraps' count).
    Original: 0x00105770."""
    t_c0, t_wraps, t_callback = tasks.c0, tasks.wraps, tasks.callback
    wrap_out = out.wrap_out
    wrapped, n_ev = _advance_looping(hi, np.int64(t_c0[r]), r, step, sink_on, zero_overshoot, cursors, events, out, n_ev)
    if wrapped:
        t_wraps[r] += 1
        if t_callback[r]:
            n_wrap = _note_wrap(hi, r, wrap_out, n_wrap)
    return n_ev, n_wrap


@_helper
def _step_clip(hi, c, r, step, sink_on, zero_overshoot, cursors, events, out, n_ev):
    """Types 3-7 advance their clip's cursor ``c`` by ``step`` ("When a clip ends"
    L299-308): whether the clip ended, an overshoot of exactly 0.0 taken as "not ended"
    (L320) unless ``zero_overshoot``. Returns (ended, the events' count).
    Original: 0x00105af0 (type 3), 0x00108bd0 (type 6)."""
    c_at_end = cursors.at_end
    over, n_ev = _advance(hi, c, r, step, sink_on, cursors, events, out, n_ev)
    return over != 0.0 or (zero_overshoot and c_at_end[c]), n_ev


@_helper
def _hand_over(hi, r, nx, humans, tasks, out, n_def):
    """A type 3 / 6 at its clip's end ("When a clip ends" L313-314): its next task ``nx``
    takes its place in the same update (on the stack, a fade's incoming link following
    it; or as the next task of the clip it follows) and it goes on the deferred list.
    Returns the deferred count. Original: 0x00105af0, 0x00105640 AnimTask_DeferGive."""
    h_depth, h_stack = humans.depth, humans.stack
    t_type, t_nxt, t_handed, t_incoming = tasks.type, tasks.nxt, tasks.handed_over, tasks.incoming
    t_released = tasks.released
    def_out = out.def_out
    t_handed[r] = True
    pos = _find(hi, r, humans)
    if pos < 0:
        owner = _owner_of(hi, r, humans, tasks, out)
        t_nxt[owner] = nx
    else:
        h_stack[hi, pos] = nx
        for j in range(h_depth[hi]):
            fj = np.int64(h_stack[hi, j])
            if t_type[fj] == _FADE and t_incoming[fj] == r:
                t_incoming[fj] = nx
    return _defer(hi, r, t_released, def_out, n_def)


@_helper
def _in_window(r, c, tasks, cursors, fades, gaits):
    """Whether a type 3 / 6 that did not hand over advances its next task too: inside its
    clip's last b seconds (t - (D - b) > 0, b the window) under BlendWindow.ADVANCED
    ("Animation tasks" L215: "the next task is advanced too"). Original: 0x00105af0."""
    t_window = tasks.window
    c_t, c_dur = cursors.t, cursors.dur
    if t_window[r] == _KEPT:
        return False
    b = _window(r, tasks, cursors, fades, gaits)
    return b > 0.0 and _sub(np.float64(c_t[c]), _sub(np.float64(c_dur[c]), b)) > 0.0


@_helper
def _gait_move(r, dt, tasks, gaits):
    """The gait's value moves toward its target by at most rate x dt x speed ("Gait blend"
    L283). Returns (the new value, the old value's fraction over the old pair's index, the
    old leading cursor), for the change of pair and the leader rule.
    Original: 0x0010a5b8."""
    t_aux = tasks.aux
    g_value, g_lower = gaits.value, gaits.lower
    a = np.int64(t_aux[r])
    old_frac = np.float64(g_value[a]) - g_lower[a]
    old_lead = _lead(r, tasks, gaits)
    v = _gait_value(r, dt, tasks, gaits)
    g_value[a] = v
    return v, old_frac, old_lead


@_helper
def _change_pair(r, nl, old_lead, tasks, gaits, cursors, events, out):
    """The gait's pair becomes clips ``nl`` and ``nl`` + 1 ("Gait blend" L284): the
    clips that come in get cursors (``_new_pair``) at the old leader's normalised time.
    Called on a change of pair only (so it may take the tables' tuples).
    Original: 0x0010a5b8."""
    t_c0, t_c1, t_aux = tasks.c0, tasks.c1, tasks.aux
    pair4 = out.pair4
    _new_pair(r, nl, tasks, gaits, cursors, events, pair4)
    c_t, c_dur = cursors.t, cursors.dur
    for j in range(2):
        if pair4[2 + j] == 1:
            cn = pair4[j]
            tn = _mul(_div(np.float64(c_t[old_lead]), np.float64(c_dur[old_lead])), np.float64(c_dur[cn]))
            _set_time(cn, tn, cursors, events)
    t_c0[r] = pair4[0]
    t_c1[r] = pair4[1]
    gaits.lower[t_aux[r]] = nl


@_helper
def _gait_leader(r, v, old_frac, tasks, gaits):
    """Which cursor leads, 0 the lower, 1 the upper ("Gait blend" L285), into the leader
    column: the lower below a new fraction of 0.01, the upper from 0.995; else the upper
    when the value ``v`` is still above the target (falling) or the old fraction was over
    0.875. Returns whether the leader changed. Original: 0x0010a5b8."""
    t_aux = tasks.aux
    g_target, g_lower, g_leader = gaits.target, gaits.lower, gaits.leader
    a = np.int64(t_aux[r])
    lead = _gait_lead(v, g_lower[a], np.float64(g_target[a]), old_frac)     # anim.engine.rules.gait_leader
    changed = lead != g_leader[a]
    g_leader[a] = lead
    return changed


@_helper
def _gait_advance(hi, r, step, sink_on, zero_overshoot, tasks, gaits, cursors, events, out, n_ev, n_wrap):
    """One cursor leads ("Gait blend" L285): the leader, unmuted, advances by ``step``,
    looping (a wrap noted with a wrap callback); the follower, muted, is set to its
    normalised time. Returns (the events' count, the wraps' count).
    Original: 0x0010a5b8."""
    t_flags, t_c0, t_c1, t_aux, t_callback = tasks.flags, tasks.c0, tasks.c1, tasks.aux, tasks.callback
    c_t, c_dur, c_flags = cursors.t, cursors.dur, cursors.flags
    g_leader = gaits.leader
    wrap_out = out.wrap_out
    base = t_flags[r] & _CURSOR_BITS
    if g_leader[t_aux[r]] == 0:
        lc = np.int64(t_c0[r])
        fc = np.int64(t_c1[r])
    else:
        lc = np.int64(t_c1[r])
        fc = np.int64(t_c0[r])
    c_flags[lc] = _cursor_flags_of(base, True)          # anim.engine.rules: the leader plays, the other muted
    c_flags[fc] = _cursor_flags_of(base, False)
    wrapped, n_ev = _advance_looping(hi, lc, r, step, sink_on, zero_overshoot, cursors, events, out, n_ev)
    if wrapped and t_callback[r]:
        n_wrap = _note_wrap(hi, r, wrap_out, n_wrap)
    tf = _mul(_div(np.float64(c_t[lc]), np.float64(c_dur[lc])), np.float64(c_dur[fc]))
    _set_time(fc, tf, cursors, events)
    return n_ev, n_wrap


@_helper
def _step_pick(hi, r, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev):
    """Type 11 advances ("Animation tasks" L218; its advance ours, PickTask.advance): its
    four clips in step by ``step``, each looping (the muted ones fire nothing). Returns
    the events' count. Original: 0x00106f50 (type 11's constructor)."""
    for j in range(4):
        c = _cursor_k(r, j, tasks)
        _, n_ev = _advance_looping(hi, c, r, step, sink_on, zero_overshoot, cursors, events, out, n_ev)
    return n_ev


@_helper
def _step_direction(hi, r, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev):
    """Type 13 advances ("Animation tasks" L220; its advance ours, DirectionTask.advance):
    the centre clip (c1) leads by ``step``, looping; its two neighbours (c0, c2) follow at
    its normalised time. Returns the events' count. Original: 0x00109210 (type 13's
    constructor)."""
    t_c0, t_c1, t_c2 = tasks.c0, tasks.c1, tasks.c2
    c_t, c_dur = cursors.t, cursors.dur
    lc = np.int64(t_c1[r])
    _, n_ev = _advance_looping(hi, lc, r, step, sink_on, zero_overshoot, cursors, events, out, n_ev)
    for fc in (np.int64(t_c0[r]), np.int64(t_c2[r])):
        tf = _mul(_div(np.float64(c_t[lc]), np.float64(c_dur[lc])), np.float64(c_dur[fc]))
        _set_time(fc, tf, cursors, events)
    return n_ev


def _step_kernel(lean):
    """The step kernel: ``step_stacks`` (``lean`` False), or ``step_lean`` (True), the same
    code without the rare paths (a gait's change of pair, types 10, 11 and 13), for the
    first step of a fresh install: numba compiles a kernel with every function it calls,
    and the first step of most scenes runs none of those. ``step_lean`` stops before a
    human whose step would take one (STATUS_LEAN in its status, ``counts[2]`` its index,
    nothing of it written): the caller goes on from it with ``step_stacks``, so the two
    write the same bits. ``lean`` is a constant of the closure: numba prunes the branches
    on it before typing, so neither kernel types (nor compiles) the other's paths."""

    def step_stacks(rows, start, dt, rules, humans, tasks, cursors, fades, gaits, events, out):
        """One animation step of the humans ``rows[start:]`` (rows of the human table), each
        in turn (see the module docstring; the rows of the humans a few places ahead
        prefetched meanwhile), in the spec's order: the room, then every task of
        the stack bottom-up, each by its type's named step ("When a clip ends" L299-334,
        "Fades" L261-267, "Gait blend" L269-288), then the held-flag events of what it fired.
        The named steps take the tables' named tuples (anim.engine.kernel_types: linked into this
        kernel, LLVM inlines them and reads only the columns each uses) and run without
        numba's reference counting (``_nrt=False``; with it each call's arrays cost an atomic
        increment and decrement each, which slows the split step markedly); so split it runs
        as fast as in one piece.

        Out: ``status[k]`` (STATUS_* bits) for rows[k]; ``ev_out[:counts[0]]`` the fired
        events (human row, task row, cursor row, event index into e_*), in firing order,
        rows[k]'s from ``ev_lo[k]`` to ``ev_hi[k]``;
        ``def_out[:counts[1]]`` the deferred tasks (human row, task row), in order;
        ``counts[2]`` the index it stopped at: a human whose events or deferred tasks might
        not fit the buffers is not begun (the caller grows them and calls again from there).
        A gait changing its clip pair takes the cursors the clips that come in need from the
        cursor table's free list and gives back those it drops (the caller reserves two free
        rows per gait first); ``counts[3]`` counts the changes. ``wrap_out[:counts[4]]`` (human,
        task row) the wraps of tasks with a wrap callback (the ``callback`` column), in step
        order: the caller runs the callbacks after the step. A human with a task the kernel
        cannot follow (``_runnable``: a fade as a next task, a task without its rows: a
        table written behind the engine's back) is not stepped (STATUS_BAD). ``counts`` are
        read as the fill so far (the caller zeroes them first). ``snap`` (>= 18), ``walk``
        (>= 64) and ``pair4`` (4) are scratch. Nothing is allocated (no numpy array: table
        rows are taken from free lists). In: ``rules`` the StepRules, the tables as
        HumanCols, TaskCols, CursorCols, FadeCols, GaitCols, the EventIndex, and ``out`` the
        StepBuffers (status, ev_lo, ev_hi and the buffers above).
        """
        zero_overshoot, newest_only, cleanup_above = rules.zero_overshoot, rules.newest_only, rules.cleanup_above
        skip_pairs = rules.skip_pairs
        room_pairs = skip_pairs
        if lean:                            # True as skip_pairs types (one _room): stop at a change of pair
            room_pairs = skip_pairs == skip_pairs
        h_depth, h_stack, h_flags = humans.depth, humans.stack, humans.flags
        t_type, t_rate, t_flags, t_held, t_c0, t_c1 = (tasks.type, tasks.rate, tasks.flags, tasks.held, tasks.c0,
                                                       tasks.c1)
        t_aux, t_nxt, t_blend, t_window, t_incoming = tasks.aux, tasks.nxt, tasks.blend, tasks.window, tasks.incoming
        t_released, t_handed, t_wraps, t_speed = tasks.released, tasks.handed_over, tasks.wraps, tasks.speed
        t_callback = tasks.callback
        t_c2, t_c3, t_value, t_target = tasks.c2, tasks.c3, tasks.value, tasks.target
        c_t, c_frame, c_end, c_limit, c_dur, c_flags = (cursors.t, cursors.frame, cursors.end, cursors.limit,
                                                        cursors.dur, cursors.flags)
        c_bank, c_ev, c_evf, c_at_end = cursors.bank, cursors.ev, cursors.evf, cursors.at_end
        f_el, f_dur = fades.el, fades.dur
        g_value, g_target, g_lower, g_leader = gaits.value, gaits.target, gaits.lower, gaits.leader
        g_b0, g_b1, g_b2, g_b3, g_b4 = gaits.b0, gaits.b1, gaits.b2, gaits.b3, gaits.b4
        e_first, e_count, e_frame, e_type = events.first, events.n, events.frame, events.type
        status, ev_lo, ev_hi, ev_out, def_out = out.status, out.ev_lo, out.ev_hi, out.ev_out, out.def_out
        counts, snap, walk, pair4, wrap_out = out.counts, out.snap, out.walk, out.pair4, out.wrap_out
        n_ev = counts[COUNT_EVENTS]
        n_def = counts[COUNT_DEFERRED]
        n_gait = counts[COUNT_GAITS]
        n_wrap = counts[COUNT_WRAPS]
        cap_ev = ev_out.shape[0]
        cap_def = wrap_out.shape[0] if wrap_out.shape[0] < def_out.shape[0] else def_out.shape[0]
        most = _most_events(events)
        n_rows = rows.shape[0]
        for k in range(start, n_rows):
            hi = rows[k]
            if k + PREFETCH_TASKS < n_rows:     # the rows of the humans ahead, on their way meanwhile
                fetch_tasks(rows[k + PREFETCH_TASKS], np.bool_(True), humans, tasks)
            if k + PREFETCH_ROWS < n_rows:
                fetch_rows(rows[k + PREFETCH_ROWS], np.bool_(True), humans, tasks, cursors, fades, gaits)
            need_ev, need_def, runnable, ahead = _room(hi, dt, most, room_pairs, humans, tasks, gaits, out)
            if not runnable:
                status[k] = STATUS_BAD
                ev_lo[k] = ev_hi[k] = n_ev
                continue
            if skip_pairs and ahead:
                status[k] = STATUS_SKIPPED
                ev_lo[k] = ev_hi[k] = n_ev
                continue
            if lean:
                if ahead or _lean_refuses(hi, humans, tasks, out):
                    status[k] = STATUS_LEAN
                    ev_lo[k] = ev_hi[k] = n_ev
                    _save_counts(counts, n_ev, n_def, n_gait, n_wrap, k)
                    return
            if n_ev + need_ev > cap_ev or (n_wrap if n_wrap > n_def else n_def) + need_def > cap_def:
                if lean:
                    status[k] = 0           # (a stop for room, not STATUS_LEAN)
                _save_counts(counts, n_ev, n_def, n_gait, n_wrap, k)
                return
            st = 0
            ev0 = n_ev
            def0 = n_def
            newest = _newest(hi, newest_only, humans, tasks)
            depth = h_depth[hi]
            for i in range(depth):
                snap[i] = h_stack[hi, i]
            for si in range(depth):             # the stack as it was, bottom-up
                task = snap[si]
                if t_released[task]:
                    continue
                sink_on = newest < 0 or task == newest
                n0 = n_ev
                r = task
                while True:                     # a task, then the next tasks it advances too
                    tt = t_type[r]
                    step = _mul(dt, np.float64(t_rate[r]))
                    if tt == _LOOP:
                        n_ev, n_wrap = _step_loop(hi, r, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev,
                                                  n_wrap)
                    elif tt == _CLIP or tt == _PAIRED_CLIP:
                        c = np.int64(t_c0[r])
                        ended, n_ev = _step_clip(hi, c, r, step, sink_on, zero_overshoot, cursors, events, out, n_ev)
                        nx = np.int64(t_nxt[r])
                        if nx >= 0 and ended:
                            n_def = _hand_over(hi, r, nx, humans, tasks, out, n_def)
                            st |= STATUS_STACK | STATUS_TOP
                            if _window(r, tasks, cursors, fades, gaits) > 0.0:
                                r = nx          # with a blend time the next task is advanced by dt (L313)
                                continue
                        elif _in_window(r, c, tasks, cursors, fades, gaits):
                            r = nx              # "the next task is advanced too" (L215)
                            continue
                    elif tt == _HOLD or tt == _SCENE or tt == _PAIRED_HOLD:
                        _, n_ev = _step_clip(hi, np.int64(t_c0[r]), r, step, sink_on, zero_overshoot, cursors, events, out, n_ev)
                    elif tt == _FADE:
                        n_def, done = _step_fade(hi, r, step, cleanup_above, humans, tasks, fades, out, n_def)
                        if done:
                            st |= STATUS_STACK | STATUS_TOP
                    elif tt == _GAIT:
                        v, old_frac, old_lead = _gait_move(r, dt, tasks, gaits)
                        nl = _pair_index(v)
                        if nl != g_lower[t_aux[r]]:
                            if not lean:    # (step_lean stopped before a change of pair)
                                _change_pair(r, nl, old_lead, tasks, gaits, cursors, events, out)
                            n_gait += 1
                            st |= STATUS_TOP
                        if _gait_leader(r, v, old_frac, tasks, gaits):
                            st |= STATUS_TOP
                        n_ev, n_wrap = _gait_advance(hi, r, step, sink_on, zero_overshoot, tasks, gaits, cursors, events,
                                                     out, n_ev, n_wrap)
                    elif lean:
                        pass                # (step_lean stopped before types 10, 11 and 13)
                    elif tt == _MIX:
                        # types 10, 11 and 13: the playing id follows a set_value given since the last step too
                        n_ev = _step_mix(hi, r, dt, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev)
                        st |= STATUS_TOP
                    elif tt == _PICK:
                        n_ev = _step_pick(hi, r, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev)
                        st |= STATUS_TOP
                    elif tt == _DIRECTION:
                        n_ev = _step_direction(hi, r, step, sink_on, zero_overshoot, tasks, cursors, events, out, n_ev)
                        st |= STATUS_TOP
                    break
                # the held-flag events of what this task fired (0x00101dd8: 0x2c, 0x2d, 0x48)
                _held_events(hi, n0, n_ev, events, out, humans, tasks)
            if n_ev > ev0:
                st |= STATUS_EVENTS
            if n_def > def0:
                st |= STATUS_DEFERRED
            status[k] = st
            ev_lo[k] = ev0
            ev_hi[k] = n_ev
        _save_counts(counts, n_ev, n_def, n_gait, n_wrap, rows.shape[0])

    step_stacks.__name__ = step_stacks.__qualname__ = "step_lean" if lean else "step_stacks"
    return _kernel(step_stacks)


step_stacks = _step_kernel(False)
# the first step's kernel on a fresh install (anim.engine.coldstart.lean_first_step)
step_lean = _step_kernel(True)
