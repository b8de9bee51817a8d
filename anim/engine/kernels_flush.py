"""The flush kernels: the deferred tasks' release and the playing anim ids' refresh, as table rows.

``flush_release`` releases the deferred list's entries (their held flags, their owned
next tasks, their cursors, fades and gaits back to the pools) and stops at each entry
whose callbacks Python runs; ``flush_anim_ids`` refreshes the playing anim id of every
human listed. anim.playback.player.Player.flush drives them; the callbacks stay in Python.

Spec: "The task stack" (the deferred flush). Original: 0x00175610 (the stack's calls).
"""
from __future__ import annotations

import numpy as np
from scuffle.anim.base.callbackdata import EndWork
from scuffle.anim.base.enums import HeldFlags
from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.jitpipe import prefetch as _prefetch
from scuffle.anim.engine.kernels_maths import jit_kinds
from scuffle.anim.engine.kernels_rows import (_CLIP, _FADE, _GAIT, _N_CURSORS, _NO_ROW, _PAIRED_CLIP, _give_row,
                                              _lead_of)

# numba's on-disk cache of this module's kernels: True, or False with no writable cache
# folder (they then compile for the process only); a corrupt cache is set aside first.
CACHE = cache_setting(__file__)
_helper, _kernel, _inline = jit_kinds(CACHE)

__all__ = ["FLUSH_FREED", "FLUSH_IN", "FLUSH_STOP", "FLUSH_HELD", "FLUSH_GEN", "FLUSH_RESUME", "FLUSH_KEYED",
           "FLUSH_KEEP", "FLUSH_NOTED", "flush_release", "flush_anim_ids"]
# numba's cache is keyed on each function's own file: the sha256 of the kernel modules
# this one links (anim.maths.detmath's scalar forms and the kernels_* modules it imports), so an
# edit there changes this file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "be2ed67c00d687764513028fce47fa792348d025ca8e42e16acad9e32cf9cf12"

_AGAIN = -(1 << 62)          # flush_anim_ids: a human listed again (done at its first place)

_ANIM_STATE = int(HeldFlags.ANIM_STATE)
_REPORT = int(HeldFlags.REPORT)
_KEEP = int(EndWork.KEEP_HELD)
_NOTE = int(EndWork.NOTE)
FLUSH_FREED = 0                 # flush_release's counts: task rows written to ``freed``
FLUSH_IN = 1                    # tasks counted back into the pool
FLUSH_STOP = 2                  # the entry it stopped at (Python runs its callbacks), or ``hi``
FLUSH_HELD = 3                  # the held bits that entry's task held before its release
FLUSH_GEN = 4                   # that task row's generation at its release
FLUSH_RESUME = 5                # in: 1 when entry ``lo`` is released already (its callbacks ran): discard it
FLUSH_KEYED = 6                 # task rows given back holding a callback id (written to ``freed`` as ~row)
FLUSH_KEEP = 7                  # in: 1 when the kernel may do an end callback's EndWork itself (no command waiting)
FLUSH_NOTED = 8                 # callback ids listed in ``buf.notes`` (EndWork.NOTE)


@_helper
def _anim_of(r, tasks, gaits, cursors):
    """Task.anim_id (+0x104) of task row ``r``: its leading cursor's anim id, -1 for a fade.
    Original: 0x001752c8 (its reader)."""
    t_type = tasks.type
    c_anim = cursors.anim
    if t_type[r] == _FADE:
        return np.int64(-1)
    return np.int64(c_anim[_lead_of(r, tasks, gaits)])


@_helper
def _held_by_others(hi, r, humans, tasks):
    """The held bits of the tasks on human ``hi``'s stack but task ``r`` that are not
    released (Player._clear_flags: HeldRelease.CONEY, "Coney's implementation" L402)."""
    h_depth, h_stack = humans.depth, humans.stack
    t_held, t_released = tasks.held, tasks.released
    others = np.int64(0)
    for i in range(h_depth[hi]):
        s = np.int64(h_stack[hi, i])
        if s != r and not t_released[s]:
            others |= t_held[s]
    return others


@_helper
def _release_flags(hi, r, release_all, humans, tasks):
    """The release's record bits: a type 3 / 6 clears state flag 0x4000000000 (0x00105f78,
    0x00108f10; not the fade's 0x00106ee8), then the held bits the task still holds go
    (every one, the original's, or not those another live task on the stack holds:
    ``release_all`` False, HeldRelease.CONEY) and the task holds none."""
    h_flags = humans.flags
    t_type, t_held = tasks.type, tasks.held
    flags = h_flags[hi]
    tt = t_type[r]
    if tt == _CLIP or tt == _PAIRED_CLIP:
        flags &= ~np.int64(_ANIM_STATE)
    held = t_held[r]
    if held:
        if release_all:                   # 0x00105f78: no test of other tasks ("When a clip ends" L314)
            flags &= ~held
        else:
            flags &= ~(held & ~_held_by_others(hi, r, humans, tasks))
        t_held[r] = 0
    h_flags[hi] = flags


@_helper
def _owned_chain(r, tasks, t_live, chain):
    """Task ``r`` and the next tasks it owns (Task.following, followed: a type 3 / 6's next
    task until it handed over), into ``chain``; returns their number."""
    t_type, t_nxt, t_handed = tasks.type, tasks.nxt, tasks.handed_over
    chain[0] = r
    n = 1
    x = r
    while n < chain.shape[0]:
        tx = t_type[x]
        if tx != _CLIP and tx != _PAIRED_CLIP:
            break
        nx = np.int64(t_nxt[x])
        if nx < 0 or t_handed[x] or not t_live[nx]:
            break
        chain[n] = nx
        n += 1
        x = nx
    return n


@_helper
def _give_cursors(r, tt, tasks, cursors):
    """The cursor rows of task ``r`` (type ``tt``) back to the cursor table, in the order
    of its ``cursors()``: its links c0, c1, ... as many as its type has
    (anim.playback.tasks.TASK_CURSORS: one clip's, a gait's or a mix's two, a direction's three, a
    pick's four, a fade's none)."""
    t_c0, t_c1, t_c2, t_c3 = tasks.c0, tasks.c1, tasks.c2, tasks.c3
    c_live, c_gen, c_free, c_nfree, c_at = cursors.live, cursors.gen, cursors.free_rows, cursors.n_free, cursors.free_at
    n = _N_CURSORS[tt]
    if n > 0:
        _give_row(np.int64(t_c0[r]), c_live, c_gen, c_free, c_nfree, c_at)
    if n > 1:
        _give_row(np.int64(t_c1[r]), c_live, c_gen, c_free, c_nfree, c_at)
    if n > 2:
        _give_row(np.int64(t_c2[r]), c_live, c_gen, c_free, c_nfree, c_at)
    if n > 3:
        _give_row(np.int64(t_c3[r]), c_live, c_gen, c_free, c_nfree, c_at)


# The dtypes of the task columns ``_reset_task`` sets to 0: ``_to_zero`` compiles once
# for each (tests/anim/test_kernels.py counts its versions).
RESET_DTYPES = ("int8", "float32", "int32", "int64", "bool", "float64")
# The dtypes of the task columns ``_reset_task`` sets to NO_ROW: the row links (int32) and
# the partner's entity (int64); ``_to_no_row`` compiles once for each.
NO_ROW_DTYPES = ("int32", "int64")


@_helper
def _to_zero(col, x):
    """Row ``x`` of ``col`` at 0, written only where it holds another value (a cache
    line only read stays clean, so it is not written back to memory)."""
    if col[x] != 0:
        col[x] = 0


@_helper
def _to_no_row(col, x):
    """Row ``x`` of the link column ``col`` at NO_ROW, written only where it holds another."""
    if col[x] != _NO_ROW:
        col[x] = _NO_ROW


@_helper
def _reset_task(x, tasks):
    """Task row ``x``, just given back, at the table's defaults (anim.engine.store's
    TASK_DEFAULTS: the links NO_ROW, every other column 0) while the release has the row
    at hand, so the flush makes no second pass over the rows it freed (Table.settle). A
    column is written only where it holds another value: most of a row's 29 columns are
    at their default already (a clip's task holds no gait, fade, pick or direction
    value), and a cache line only read stays clean, so it is not written back to memory.
    Its callback ids are left: a row holding one is marked for Python, which lets each go
    and writes NO_CALLBACK (Table.freed); the others hold NO_CALLBACK already."""
    _to_zero(tasks.type, x)
    _to_zero(tasks.rate, x)
    _to_zero(tasks.flags, x)
    _to_zero(tasks.held, x)
    _to_zero(tasks.blend, x)
    _to_zero(tasks.window, x)
    _to_zero(tasks.released, x)
    _to_zero(tasks.handed_over, x)
    _to_zero(tasks.wraps, x)
    _to_zero(tasks.speed, x)
    _to_zero(tasks.callback, x)
    _to_zero(tasks.placed, x)
    _to_zero(tasks.value, x)
    _to_zero(tasks.target, x)
    _to_zero(tasks.base, x)
    _to_zero(tasks.centre, x)
    _to_zero(tasks.sampling, x)
    _to_no_row(tasks.c0, x)
    _to_no_row(tasks.c1, x)
    _to_no_row(tasks.c2, x)
    _to_no_row(tasks.c3, x)
    _to_no_row(tasks.aux, x)
    _to_no_row(tasks.nxt, x)
    _to_no_row(tasks.incoming, x)
    _to_no_row(tasks.partner, x)
    banks = tasks.dir_banks
    if banks[x, 0] != _NO_ROW:
        for j in range(banks.shape[1]):
            banks[x, j] = _NO_ROW


# How many deferred entries ahead ``flush_release`` fetches the task rows it reads (and
# the human's), and the cursor rows those link (read from the task rows fetched before).
FETCH_ENTRIES = 4
FETCH_CURSORS = 2


@_helper
def _fetch_release(h, r, humans, tasks, task_rows, buf):
    """Prefetch what the release of task row ``r`` of human row ``h`` reads: the human's
    held flags, depth and report mark, the task's columns (the release's and
    ``_reset_task``'s; ``on_end`` is ``buf.end_mark``), its free list entry and pool flag.
    A hint: no value changes."""
    if h < 0 or r < 0:
        return
    _prefetch(humans.flags, h)
    _prefetch(humans.depth, h)
    _prefetch(buf.report_mark, h)
    if r < buf.pool_out.shape[0]:
        _prefetch(buf.pool_out, r)
    _prefetch(task_rows.live, r)
    _prefetch(task_rows.gen, r)
    _prefetch(task_rows.free_at, r)
    _prefetch(tasks.type, r)
    _prefetch(tasks.rate, r)
    _prefetch(tasks.flags, r)
    _prefetch(tasks.held, r)
    _prefetch(tasks.blend, r)
    _prefetch(tasks.window, r)
    _prefetch(tasks.released, r)
    _prefetch(tasks.handed_over, r)
    _prefetch(tasks.wraps, r)
    _prefetch(tasks.speed, r)
    _prefetch(tasks.callback, r)
    _prefetch(tasks.placed, r)
    _prefetch(tasks.value, r)
    _prefetch(tasks.target, r)
    _prefetch(tasks.base, r)
    _prefetch(tasks.centre, r)
    _prefetch(tasks.sampling, r)
    _prefetch(tasks.c0, r)
    _prefetch(tasks.c1, r)
    _prefetch(tasks.c2, r)
    _prefetch(tasks.c3, r)
    _prefetch(tasks.aux, r)
    _prefetch(tasks.nxt, r)
    _prefetch(tasks.incoming, r)
    _prefetch(tasks.partner, r)
    _prefetch(tasks.on_end, r)
    _prefetch(tasks.on_wrap, r)
    _prefetch(tasks.partner_name, r)


@_helper
def _fetch_released_cursor(c, cursors):
    """Prefetch cursor row ``c`` as its release reads it (none below 0): its anim id and
    what its give-back writes."""
    if c < 0:
        return
    _prefetch(cursors.anim, c)
    _prefetch(cursors.live, c)
    _prefetch(cursors.gen, c)
    _prefetch(cursors.free_at, c)


@_kernel
def flush_release(lo, hi, release_all, humans, tasks, task_rows, cursors, gaits, gait_rows, fade_rows, buf):
    """Release the deferred tasks ``buf.entries[lo:hi]`` (rows of (human row, task row): the
    deferred list as the step wrote it, anim.playback.deferred), in order, as Player._release does,
    up to the first entry with a callback to run: a task with an end callback
    (``buf.end_mark[task row]`` >= 0: its callback id) or one holding 0x400000 whose human
    has a report callback (``buf.report_mark[human row]`` >= 0), released up to its callbacks (its held bits before
    into ``counts[FLUSH_HELD]``, its row's generation into ``counts[FLUSH_GEN]``: Python runs
    the callbacks, then calls again with ``counts[FLUSH_RESUME]`` 1 to discard it first,
    unless its row went back meanwhile), or an entry held as objects (human row -1, not
    begun); its index goes to ``counts[FLUSH_STOP]`` (``hi`` when none). An end callback
    whose id has work in ``buf.end_keep`` (EndWork: KEEP_HELD, its handler only sets again
    the held bits the live tasks on the stack hold; NOTE, it then only records its
    arguments: the id goes to ``buf.notes``, ``counts[FLUSH_NOTED]`` so far, for Python to
    call the kind's note in order) with no report to make is done here instead, when
    ``counts[FLUSH_KEEP]`` is 1 (no command waiting to be written first, as the handler's
    read of the stack would write it). Each release: the
    record's state flag and held bits (``release_all``: HeldRelease.ORIGINAL), the anim id
    it reports into ``buf.ids[k]``, then its discard: the task and the next tasks it owns (deepest first),
    each counted back into the pool (``buf.pool_out``) when it is out, its rows then given
    back to their tables (its cursors, its task row, its fade or gait row), the task row
    then at the table's defaults but its callback ids (``_reset_task``). The task rows
    given back go to ``buf.freed`` (``counts[FLUSH_FREED]`` so far), a row holding a
    callback id (``on_end``, ``on_wrap``, ``partner_name``) as ~row (``counts[FLUSH_KEYED]``
    of them: Python lets the ids go without reading the other rows' columns), the tasks
    counted in to ``counts[FLUSH_IN]`` (the caller zeroes the counts first and finishes
    what Python holds: the handles, the callback ids, TaskPool.n_out).
    Nothing is allocated. In: the HumanCols, TaskCols, the task table's RowState, the CursorCols,
    GaitCols, the gait and fade tables' RowStates, the FlushBuffers.
    Original: 0x00105570 AnimTask_FlushDeferred, 0x00105f78 (type 3's release), 0x00108f10
    (type 6's), 0x00106ee8 (the fade's), 0x00105510 (the pool's give-back). The rows of
    the entries ahead are prefetched meanwhile (``_fetch_release``, ``_fetch_released_cursor``:
    a hint, no value changes).
    """
    h_flags, h_depth, h_stack = humans.flags, humans.depth, humans.stack
    t_type, t_held, t_c0, t_c1, t_c2, t_c3 = tasks.type, tasks.held, tasks.c0, tasks.c1, tasks.c2, tasks.c3
    t_aux, t_nxt, t_value, t_released, t_handed = tasks.aux, tasks.nxt, tasks.value, tasks.released, tasks.handed_over
    t_live, t_gen, t_free, t_nfree = task_rows.live, task_rows.gen, task_rows.free_rows, task_rows.n_free
    t_at = task_rows.free_at
    c_anim, c_live, c_gen, c_free, c_nfree = cursors.anim, cursors.live, cursors.gen, cursors.free_rows, cursors.n_free
    g_leader = gaits.leader
    entries, ids, freed, counts, chain, pool_out = buf.entries, buf.ids, buf.freed, buf.counts, buf.chain, buf.pool_out
    end_mark, report_mark, end_keep, notes = buf.end_mark, buf.report_mark, buf.end_keep, buf.notes
    n_pool = pool_out.shape[0]
    t_on_end, t_on_wrap, t_partner = tasks.on_end, tasks.on_wrap, tasks.partner_name
    nf = counts[FLUSH_FREED]
    n_in = counts[FLUSH_IN]
    n_keyed = counts[FLUSH_KEYED]
    n_noted = counts[FLUSH_NOTED]
    stop = hi
    for k in range(lo, hi):
        if k + FETCH_ENTRIES < hi:          # the entries ahead, on their way meanwhile
            _fetch_release(entries[k + FETCH_ENTRIES, 0], entries[k + FETCH_ENTRIES, 1], humans, tasks, task_rows,
                           buf)
        if k + FETCH_CURSORS < hi:
            rc = entries[k + FETCH_CURSORS, 1]
            if entries[k + FETCH_CURSORS, 0] >= 0 and rc >= 0:
                _fetch_released_cursor(np.int64(t_c0[rc]), cursors)
                _fetch_released_cursor(np.int64(t_c1[rc]), cursors)
        h = entries[k, 0]
        r = entries[k, 1]
        if k == lo and counts[FLUSH_RESUME]:
            if t_gen[r] != counts[FLUSH_GEN]:
                continue                      # a callback gave it back already: its row is another's
        else:
            if h < 0:
                stop = k                      # held as objects: Python releases it
                break
            held = t_held[r]
            _release_flags(h, r, release_all, humans, tasks)
            ids[k] = _anim_of(r, tasks, gaits, cursors)
            report = (held & _REPORT) != 0 and report_mark[h] >= 0
            cb = end_mark[r]
            work = end_keep[cb] if 0 <= cb < end_keep.shape[0] and counts[FLUSH_KEEP] and not report else 0
            if work:
                # its end callback's handler sets again the held bits the live tasks on the
                # stack hold (EndWork.KEEP_HELD), then records its arguments (NOTE, in
                # order), and nothing else: done here
                if work & _KEEP:
                    h_flags[h] |= _held_by_others(h, r, humans, tasks)
                if work & _NOTE:
                    notes[n_noted] = cb
                    n_noted += 1
            elif cb >= 0 or report:
                counts[FLUSH_HELD] = held     # Python runs its callbacks, then resumes with its discard
                counts[FLUSH_GEN] = t_gen[r]
                stop = k
                break
        n = _owned_chain(r, tasks, t_live, chain)
        for j in range(n - 1, -1, -1):        # StackRules.discard: the next tasks first
            x = np.int64(chain[j])
            if x >= n_pool or not pool_out[x]:
                continue                      # not out of the pool: not given back (TaskPool._take_back)
            pool_out[x] = False
            n_in += 1
            tt = t_type[x]
            _give_cursors(x, tt, tasks, cursors)
            given = _give_row(x, t_live, t_gen, t_free, t_nfree, t_at)
            if given:
                if t_on_end[x] >= 0 or t_on_wrap[x] >= 0 or t_partner[x] >= 0:
                    freed[nf] = ~x            # its callback ids Python lets go (Table.freed)
                    n_keyed += 1
                else:
                    freed[nf] = x
                nf += 1
            if tt == _FADE:
                _give_row(np.int64(t_aux[x]), fade_rows.live, fade_rows.gen, fade_rows.free_rows, fade_rows.n_free,
                          fade_rows.free_at)
            elif tt == _GAIT:
                _give_row(np.int64(t_aux[x]), gait_rows.live, gait_rows.gen, gait_rows.free_rows, gait_rows.n_free,
                          gait_rows.free_at)
            if given:
                _reset_task(x, tasks)
    counts[FLUSH_FREED] = nf
    counts[FLUSH_IN] = n_in
    counts[FLUSH_KEYED] = n_keyed
    counts[FLUSH_NOTED] = n_noted
    counts[FLUSH_STOP] = stop


@_kernel
def flush_anim_ids(rows, humans, h_anim, tasks, cursors, gaits, seen):
    """The playing anim id (record +0x20) of each human row in ``rows`` into ``h_anim``:
    its top task's, the bottom task's when the top is a fade, -1 with an empty stack
    (StackRules.refresh_anim_id, every human at once; a human listed twice is done once:
    ``seen``, a flag per human row, all False before and after). In passes over all the
    humans, each a short loop whose cache misses (task rows, cursor rows) overlap: the top
    task row, the bottom one under a fade, the leading cursor row, its anim id, each kept
    in ``h_anim`` meanwhile; ``rows`` is the caller's scratch (overwritten: a human done
    or listed again is marked there). In: the HumanCols, the human table's ``anim``
    column, the TaskCols, CursorCols, GaitCols.
    Original: 0x001752c8, 0x00175210 TaskStack_Top."""
    h_depth, h_stack = humans.depth, humans.stack
    t_type, t_c0, t_c1, t_c2, t_c3 = tasks.type, tasks.c0, tasks.c1, tasks.c2, tasks.c3
    t_aux, t_value = tasks.aux, tasks.value
    c_anim, g_leader = cursors.anim, gaits.leader
    n = rows.shape[0]
    for k in range(n):                    # each human once: its top task row (or -1: done)
        hi = rows[k]
        if seen[hi]:
            rows[k] = _AGAIN
            continue
        seen[hi] = True
        d = h_depth[hi]
        if d == 0:
            h_anim[hi] = -1
            rows[k] = ~hi
            continue
        h_anim[hi] = h_stack[hi, d - 1]
    for k in range(n):                    # a fade on top: the bottom task
        hi = rows[k]
        if hi >= 0 and t_type[h_anim[hi]] == _FADE:
            h_anim[hi] = h_stack[hi, 0]
    for k in range(n):                    # the leading cursor row (a fade: -1, done)
        hi = rows[k]
        if hi >= 0:
            t = h_anim[hi]
            if t_type[t] == _FADE:
                h_anim[hi] = -1
                rows[k] = ~hi
            else:
                h_anim[hi] = _lead_of(t, tasks, gaits)
    for k in range(n):                    # its anim id (Task.anim_id)
        hi = rows[k]
        if hi >= 0:
            h_anim[hi] = np.int64(c_anim[h_anim[hi]])
    for k in range(n):
        hi = rows[k]
        if hi >= 0:
            seen[hi] = False
        elif hi != _AGAIN:
            seen[~hi] = False
