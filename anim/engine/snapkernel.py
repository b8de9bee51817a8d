"""A snapshot file's rows checked in one compiled pass (anim.engine.snapcheck's checks, compiled).

The saved tables' blocks are copied into one scratch buffer (each at a 64-byte boundary)
and read here through one view per item type (``VIEWS``: a bool column through the int8
view), each column found by its element index in its view. Two kinds of check run:

- the declared ones, generic over tables and columns: a ``spec`` row per column of
  anim.engine.snapcheck.RANGES (an int in a range, a finite float in a range, a bool byte, an
  int in a small set, an entity id or -1), for every row in use;
- the structural ones, which name their columns (``AT``): each table's free list and
  generations, each cursor's clip numbers against the bank's (ClipFacts), each task's
  links by its type, one owner per cursor, fade and gait row, one place per task, chains
  of next tasks that end, the humans' stacks and queues, the pool's flags, the rows
  freed since the last take.

``check_rows`` stops at the first fault and writes its code (``Fault``) and its table,
column, row and values into ``out`` / ``fout``; anim.engine.snapcheck turns them into the same
one-line message the checks give in Python. Nothing is allocated but what the caller
passes (``seen``: a scratch of at least the largest capacity, zeroed here as needed).

A module of its own (numba's on-disk cache is keyed on each function's source file,
anim.engine.jitcache); it calls nothing of anim.engine.kernels. Original: none (ours).
"""
from __future__ import annotations

import math
from enum import IntEnum

import numpy as np
from numba import njit
from numba.extending import register_jitable

from scuffle.anim.engine.jitcache import cache_setting
# (imported before numba's cache is read: its index names the named tuples the kernels take)
from scuffle.anim.engine import kernel_types  # noqa: F401

__all__ = ["check_rows", "pack_rows", "pack_tables", "unpack_rows", "check_ids_rows", "check_tagged_rows", "IdFault", "ID_COLUMNS", "Fault", "Kind", "Code", "AT", "TABLE_ORDER", "CODES", "VIEWS", "SPEC_WIDTH"]

CACHE = cache_setting(__file__)
_kernel = njit(cache=CACHE, _nrt=False, no_cfunc_wrapper=True)  # type: ignore[call-overload]

# The tables in the buffer, in this order (snapfile.TABLES).
TABLE_ORDER = ("cursors", "fades", "gaits", "tasks", "humans", "bodies", "combats")
_CUR, _FADE, _GAIT, _TASK, _HUM, _BODY, _COMB = range(7)


class Code(IntEnum):
    """How a column's items are read: through which view, as what."""

    BOOL = 0        # the int8 view, a byte that must be 0 or 1
    I8 = 1
    I32 = 2
    I64 = 3
    F32 = 4
    F64 = 5


# the views of the buffer the kernel reads through, by item type (a bool through int8)
VIEWS = (np.int8, np.int32, np.int64, np.float32, np.float64)
CODES = {np.dtype(np.bool_): Code.BOOL, np.dtype(np.int8): Code.I8, np.dtype(np.int32): Code.I32,
         np.dtype(np.int64): Code.I64, np.dtype(np.float32): Code.F32, np.dtype(np.float64): Code.F64}


class Kind(IntEnum):
    """A declared check of a column (anim.engine.snapcheck.RANGES)."""

    INT = 0         # lo <= v <= hi
    FLOAT = 1       # finite, flo <= v <= fhi
    BOOL = 2        # a byte of 0 or 1
    SET = 3         # 0 <= v < 63 and bit v of lo set
    ENTITY = 4      # -1 or one of the entities given
    ANY = 5         # no check (every value is one the engine handles)


# a spec row: table, element index of row 0, code, width (items per row), kind, lo, hi
SPEC_WIDTH = 7


class Fault(IntEnum):
    """What check_rows found (out[0]); the other fields of out by fault in snapcheck."""

    NONE = 0
    LIVE_BYTE = 1       # table, row, byte
    N_FREE = 2          # table, n_free, rows not in use
    FREE_RANGE = 3      # table, index, value
    FREE_SET = 4        # table, rows not in use
    GEN = 5             # table, row, generation
    COLUMN = 6          # spec index, row, int value (fout: float value), item
    CLIP_NUMBER = 7     # column (AT index), row, bank clip
    PAST_END = 8        # row
    EV = 9              # row, ev
    EVF = 10            # row, evf, the frame wanted
    FRAME = 11          # row, frame - end
    NO_CURSOR = 12      # column (AT index), row, task type
    LINK = 13           # column (AT index), row, value, target table
    OWNERS = 14         # column (AT index: c0 for c0-c3), target row, target table
    NO_AUX = 15         # row
    NO_NEXT = 16        # row
    NO_INCOMING = 17    # row
    HUMAN_GEN = 18      # (a generation below 0)
    HUMAN_FREE = 19     # rows not in use
    PLACES = 20         # task row
    CHAIN = 21          # task row
    POOL_BYTE = 22      # index, byte
    POOL_ROW = 23       # index
    DIRTY = 24          # table
    POOL_COUNT = 25     # the flags set
    NOT_PLACED = 26     # task row: on a stack, in a queue or a next task, and not marked placed


# The columns the structural checks name, in ``at``'s order (element index, code, width).
AT = ("cursors.bank", "cursors.end", "cursors.evf0", "cursors.limit", "cursors.dur", "cursors.t", "cursors.frame",
      "cursors.ev", "cursors.evf", "tasks.type", "tasks.c0", "tasks.c1", "tasks.c2", "tasks.c3", "tasks.aux",
      "tasks.nxt", "tasks.incoming", "humans.depth", "humans.queued", "humans.stack", "humans.queue", "tasks.placed")
(A_BANK, A_END, A_EVF0, A_LIMIT, A_DUR, A_T, A_FRAME, A_EV, A_EVF, A_TYPE, A_C0, A_C1, A_C2, A_C3, A_AUX, A_NXT,
 A_INCOMING, A_DEPTH, A_QUEUED, A_STACK, A_QUEUE, A_PLACED) = range(len(AT))
NO_ROW = -1
NO_EVENT = np.iinfo(np.int32).max


# The helpers are register_jitable: typed once per argument types and inlined by LLVM.
# numba's inline='always' typed each again at every call site (some fifty in check_rows),
# and a plain njit helper compiles once per literal argument a call gives (``_fail``'s
# codes): either way about a third of this module's compile time.
@register_jitable
def _int(i8, i32, i64, code, k):
    if code == 3:
        return i64[k]
    if code == 2:
        return np.int64(i32[k])
    return np.int64(i8[k])


@register_jitable
def _flt(f32, f64, code, k):
    if code == 4:
        return np.float64(f32[k])
    return f64[k]


@register_jitable
def _holds(ents, v):
    """Whether the sorted array ``ents`` holds ``v`` (a binary search: numba's
    np.searchsorted compiles its generic comparisons for each call's types)."""
    lo, hi = 0, len(ents)
    while lo < hi:
        mid = (lo + hi) >> 1
        if ents[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo < len(ents) and ents[lo] == v


@register_jitable
def _fail(out, code, a, b, c, d):
    out[0] = code
    out[1] = a
    out[2] = b
    out[3] = c
    out[4] = d
    return code


@register_jitable
def _live(i8, tabs, t, r):
    return i8[tabs[t, 1] + r] != 0


@register_jitable
def _linked(i8, tabs, t, v):
    """``v`` a row in use of table ``t``."""
    return 0 <= v < tabs[t, 0] and i8[tabs[t, 1] + v] != 0


@register_jitable
def _copy(dst, d, src, a, n):
    """``dst[d:d + n] = src[a:a + n]`` (no slices without numba's runtime): indexed unsigned,
    so that no negative index is wrapped and the loop is vectorised."""
    du = np.uint64(d)
    au = np.uint64(a)
    for i in range(np.uint64(n)):
        dst[du + i] = src[au + i]


@_kernel
def check_rows(views, plan, facts, lists, scratch):
    """The first fault of the saved rows (a Fault; 0: none), its fields in ``scratch.out`` /
    ``scratch.fout``.

    In (anim.engine.kernel_types): ``views`` the buffer's views (SnapViews, ``VIEWS``'
    order); ``plan`` (SnapPlan): ``tabs`` per table (TABLE_ORDER): its capacity, the byte
    index of ``live``, the int64 element indexes of ``gen``, ``free_rows`` and ``n_free``
    (-1: none, the humans' lists are ``lists.hgen`` / ``lists.hfree``); ``spec`` / ``fspec``
    the declared checks (SPEC_WIDTH ints, 2 floats each); ``at`` the structural checks'
    columns (AT order: element index, code, width); ``must`` per task type the cursor
    columns it links (bit i: c<i>; -1: not a task type), ``nxt_mask`` the types with a next
    task, the fade and gait types; ``facts`` the bank's ClipFacts (limit and dur
    as their float32 bits: int32 views, ``snapcheck``'s ``_bits``); ``lists`` (SnapLists): the pool's flags as bytes, the rows freed since
    each table's last take, the humans' entities, sorted; ``scratch`` (SnapScratch):
    ``seen`` int64 (>= every capacity), ``lrows`` int64 of at least every table's capacity
    and one more per table (the rows in use, table by table, each table's count first: the
    declared checks read those rows only)."""
    i8, i32, i64, f32, f64 = views
    tabs, spec, fspec, at, must, nxt_mask, fade_type, gait_type = plan
    f_end, f_limit, f_dur, f_evf0, f_nev, f_first, f_frames = facts
    hgen, hfree, pool, dirty, dirty_at, ents = lists
    seen, lrows, out, fout = scratch
    out[0] = 0
    ntab = tabs.shape[0]
    # -- the free lists and generations
    lp = 0
    for t in range(ntab):
        cap = tabs[t, 0]
        lv = tabs[t, 1]
        nlive = 0
        for r in range(cap):
            b = i8[lv + r]
            if b != 0 and b != 1:
                return _fail(out, 1, t, r, np.int64(b) & 0xFF, 0)
            if b:
                lrows[lp + 1 + nlive] = r
            nlive += np.int64(b)           # (an int64 count: as Python runs it too, anim.engine.interpret)
        lrows[lp] = nlive
        lp += 1 + nlive
        if tabs[t, 4] < 0:
            continue
        nf = i64[tabs[t, 4]]
        if nf < 0 or nf > cap or nf + nlive != cap:
            return _fail(out, 2, t, nf, cap - nlive, 0)
        fr = tabs[t, 3]
        for r in range(cap):
            seen[r] = 0
        for i in range(nf):
            v = np.int64(i32[fr + i])
            if v < 0 or v >= cap:
                return _fail(out, 3, t, i, v, 0)
            if i8[lv + v] != 0 or seen[v] != 0:
                return _fail(out, 4, t, cap - nlive, 0, 0)
            seen[v] = 1
        g = tabs[t, 2]
        for r in range(cap):
            if i32[g + r] < 0:
                return _fail(out, 5, t, r, np.int64(i32[g + r]), 0)
    # -- the humans' generations and free list (lists of the values section)
    hcap = tabs[_HUM, 0]
    hlive = 0
    for r in range(hcap):
        hlive += i8[tabs[_HUM, 1] + r] != 0
    for r in range(len(hgen)):
        if hgen[r] < 0:
            return _fail(out, 18, _HUM, 0, 0, 0)
    if len(hfree) + hlive != hcap:
        return _fail(out, 19, _HUM, hcap - hlive, 0, 0)
    for r in range(hcap):
        seen[r] = 0
    for i in range(len(hfree)):
        v = hfree[i]
        if v < 0 or v >= hcap or seen[v] != 0 or i8[tabs[_HUM, 1] + v] != 0:
            return _fail(out, 19, _HUM, hcap - hlive, 0, 0)
        seen[v] = 1
    # -- the declared checks, column by column, over the rows in use
    for c in range(spec.shape[0]):
        t = spec[c, 0]
        lp = 0
        for u in range(t):
            lp += 1 + lrows[lp]
        base = spec[c, 1]
        code = spec[c, 2]
        w = spec[c, 3]
        kind = spec[c, 4]
        lo = spec[c, 5]
        hi = spec[c, 6]
        if kind == 5:
            continue
        flo = fspec[c, 0]
        fhi = fspec[c, 1]
        for q in range(lrows[lp]):
            r = lrows[lp + 1 + q]
            for j in range(w):
                k = base + r * w + j
                if kind == 1:
                    x = _flt(f32, f64, code, k)
                    if not (x >= flo and x <= fhi and math.isfinite(x)):
                        fout[0] = x
                        return _fail(out, 6, c, r, 0, j)
                else:
                    v = _int(i8, i32, i64, code, k)
                    bad = False
                    if kind == 0:
                        bad = v < lo or v > hi
                    elif kind == 2:
                        bad = v != 0 and v != 1
                        if bad:
                            v = v & 0xFF
                    elif kind == 3:
                        bad = v < 0 or v > 62 or ((lo >> v) & 1) == 0
                    elif kind == 4 and v != -1:
                        bad = not _holds(ents, v)
                    if bad:
                        return _fail(out, 6, c, r, v, j)
    # -- cursors: their clip's numbers
    nb = len(f_end)
    for r in range(tabs[_CUR, 0]):
        if not _live(i8, tabs, _CUR, r):
            continue
        b = _int(i8, i32, i64, at[A_BANK, 1], at[A_BANK, 0] + r)
        if b < 0 or b >= nb:                       # (declared too: a bank of no clips)
            return _fail(out, 7, A_BANK, r, b, 0)
        if _int(i8, i32, i64, at[A_END, 1], at[A_END, 0] + r) != f_end[b]:
            return _fail(out, 7, A_END, r, b, 0)
        if _int(i8, i32, i64, at[A_EVF0, 1], at[A_EVF0, 0] + r) != f_evf0[b]:
            return _fail(out, 7, A_EVF0, r, b, 0)
        if i32[at[A_LIMIT, 0] + r] != f_limit[b]:
            return _fail(out, 7, A_LIMIT, r, b, 0)
        if i32[at[A_DUR, 0] + r] != f_dur[b]:
            return _fail(out, 7, A_DUR, r, b, 0)
        if f32[at[A_T, 0] + r] > f32[at[A_DUR, 0] + r]:
            return _fail(out, 8, A_T, r, 0, 0)
        end = _int(i8, i32, i64, at[A_END, 1], at[A_END, 0] + r)
        fr = _int(i8, i32, i64, at[A_FRAME, 1], at[A_FRAME, 0] + r)
        if fr - end > 0:
            return _fail(out, 11, A_FRAME, r, fr - end, 0)
        ev = _int(i8, i32, i64, at[A_EV, 1], at[A_EV, 0] + r)
        if ev < 0 or ev > f_nev[b]:
            return _fail(out, 9, A_EV, r, ev, 0)
        want = np.int64(NO_EVENT)
        if ev < f_nev[b]:
            want = f_frames[f_first[b] + ev]
        evf = _int(i8, i32, i64, at[A_EVF, 1], at[A_EVF, 0] + r)
        if evf != want:
            return _fail(out, 10, A_EVF, r, evf, want)
    # -- tasks: links by type, one owner per cursor, fade and gait row
    tcap = tabs[_TASK, 0]
    for t in (_CUR, _FADE, _GAIT):
        for r in range(tabs[t, 0]):
            seen[r] = 0
    for r in range(tcap):
        if not _live(i8, tabs, _TASK, r):
            continue
        ty = _int(i8, i32, i64, at[A_TYPE, 1], at[A_TYPE, 0] + r)
        if ty < 0 or ty >= len(must) or must[ty] < 0:       # (declared too)
            return _fail(out, 6, -1, r, ty, 0)
        for i in range(4):
            a = A_C0 + i
            v = _int(i8, i32, i64, at[a, 1], at[a, 0] + r)
            if (must[ty] >> i) & 1:
                if not _linked(i8, tabs, _CUR, v):
                    return _fail(out, 13, a, r, v, _CUR)
                if seen[v] & 1:
                    return _fail(out, 14, A_C0, v, _CUR, 0)
                seen[v] |= 1
            elif v != NO_ROW:
                return _fail(out, 12, a, r, ty, 0)
        aux = _int(i8, i32, i64, at[A_AUX, 1], at[A_AUX, 0] + r)
        if ty == fade_type or ty == gait_type:
            tt = _FADE if ty == fade_type else _GAIT
            bit = 2 if ty == fade_type else 4
            if not _linked(i8, tabs, tt, aux):
                return _fail(out, 13, A_AUX, r, aux, tt)
            if seen[aux] & bit:
                return _fail(out, 14, A_AUX, aux, tt, 0)
            seen[aux] |= bit
        elif aux != NO_ROW:
            return _fail(out, 15, A_AUX, r, 0, 0)
        nx = _int(i8, i32, i64, at[A_NXT, 1], at[A_NXT, 0] + r)
        if (nxt_mask >> ty) & 1:
            if nx != NO_ROW and not _linked(i8, tabs, _TASK, nx):
                return _fail(out, 13, A_NXT, r, nx, _TASK)
        elif nx != NO_ROW:
            return _fail(out, 16, A_NXT, r, 0, 0)
        inc = _int(i8, i32, i64, at[A_INCOMING, 1], at[A_INCOMING, 0] + r)
        if ty == fade_type:
            if inc != NO_ROW and not _linked(i8, tabs, _TASK, inc):
                return _fail(out, 13, A_INCOMING, r, inc, _TASK)
        elif inc != NO_ROW:
            return _fail(out, 17, A_INCOMING, r, 0, 0)
    # -- humans: stacks and queues of tasks in use; a place per task
    for r in range(tcap):
        seen[r] = 0
    for h in range(hcap):
        if not _live(i8, tabs, _HUM, h):
            continue
        for a, n_at in ((A_STACK, A_DEPTH), (A_QUEUE, A_QUEUED)):
            n = _int(i8, i32, i64, at[n_at, 1], at[n_at, 0] + h)
            w = at[a, 2]
            if n < 0 or n > w:                       # (declared too)
                return _fail(out, 6, -1, h, n, 0)
            for s in range(n):
                v = _int(i8, i32, i64, at[a, 1], at[a, 0] + h * w + s)
                if not _linked(i8, tabs, _TASK, v):
                    return _fail(out, 13, a, h, v, _TASK)
                if seen[v]:
                    return _fail(out, 20, 0, v, 0, 0)
                seen[v] = 1
                if i8[at[A_PLACED, 0] + v] == 0:
                    return _fail(out, 26, A_PLACED, v, 0, 0)
    for r in range(tcap):
        if not _live(i8, tabs, _TASK, r):
            continue
        ty = _int(i8, i32, i64, at[A_TYPE, 1], at[A_TYPE, 0] + r)
        nx = _int(i8, i32, i64, at[A_NXT, 1], at[A_NXT, 0] + r)
        if (nxt_mask >> ty) & 1 and nx != NO_ROW:
            if seen[nx]:
                return _fail(out, 20, 0, nx, 0, 0)
            seen[nx] = 1
            if i8[at[A_PLACED, 0] + nx] == 0:
                return _fail(out, 26, A_PLACED, nx, 0, 0)
    # every chain of next tasks ends: each task has at most one before it (a place each),
    # so a chain that does not end is a cycle; walked once, marking (2: on this walk, 3: done)
    for r in range(tcap):
        if seen[r] < 2:
            seen[r] = 0
    for r in range(tcap):
        if not _live(i8, tabs, _TASK, r) or seen[r] == 3:
            continue
        cur = r
        while True:
            if seen[cur] == 2:
                return _fail(out, 21, 0, r, 0, 0)
            if seen[cur] == 3:
                break
            seen[cur] = 2
            ty = _int(i8, i32, i64, at[A_TYPE, 1], at[A_TYPE, 0] + cur)
            nx = _int(i8, i32, i64, at[A_NXT, 1], at[A_NXT, 0] + cur)
            if not ((nxt_mask >> ty) & 1) or nx == NO_ROW:
                break
            cur = nx
        cur = r
        while seen[cur] == 2:
            seen[cur] = 3
            ty = _int(i8, i32, i64, at[A_TYPE, 1], at[A_TYPE, 0] + cur)
            nx = _int(i8, i32, i64, at[A_NXT, 1], at[A_NXT, 0] + cur)
            if not ((nxt_mask >> ty) & 1) or nx == NO_ROW:
                break
            cur = nx
    # -- the pool: a flag per task row, each one set on a task in use
    n_set = 0
    for i in range(len(pool)):
        b = pool[i]
        if b != 0 and b != 1:
            return _fail(out, 22, 0, i, np.int64(b) & 0xFF, 0)
        if b == 1:
            n_set += 1
            if i >= tcap or not _live(i8, tabs, _TASK, i):
                return _fail(out, 23, 0, i, 0, 0)
    # -- the rows freed since each table's last take: rows not in use, each once
    for t in range(ntab):
        cap = tabs[t, 0]
        for r in range(cap):
            seen[r] = 0
        for i in range(dirty_at[t], dirty_at[t + 1]):
            v = dirty[i]
            if v < 0 or v >= cap or i8[tabs[t, 1] + v] != 0 or seen[v] != 0:
                return _fail(out, 24, t, i - dirty_at[t], v, 0)
            seen[v] = 1
    out[1] = n_set
    return 0


# ---------------------------------------------------------------- a table's rows in use, packed
# A saved table in a file holds its free list's arrays whole (the frame: ``n_free``,
# ``live``, ``gen``, ``free_rows``, those the table has, in its layout's order) and of every
# other column only the rows in use, in row order (anim.engine.snapcheck.packing).

@_kernel
def pack_rows(block, out, frames, cols, live_at, cap):
    """Write ``block``'s frame arrays (``frames``: byte offset, size each) and its
    columns' rows in use (``cols``: byte offset, bytes per row each; a row is in use where
    its byte at ``live_at`` is not 0) into ``out``, one after another. Returns the bytes
    written."""
    p = 0
    for f in range(frames.shape[0]):
        _copy(out, p, block, frames[f, 0], frames[f, 1])
        p += frames[f, 1]
    for c in range(cols.shape[0]):
        o = cols[c, 0]
        rb = cols[c, 1]
        for r in range(cap):
            if block[live_at + r] != 0:
                _copy(out, p, block, o + r * rb, rb)
                p += rb
    return p


@_kernel
def unpack_rows(buf, src, src_at, tinfo, frames, cols, out, rows):
    """``pack_rows`` undone for each table t into ``buf`` (its blank rows already there):
    the packed bytes ``src[src_at[t]:src_at[t + 1]]``, ``tinfo[t]`` its capacity, the
    position of ``live`` in its packed bytes, its frame's size, its bytes per row in use,
    and its ranges of ``frames`` (buffer offset, size) and ``cols`` (buffer offset, bytes
    per row). Returns -1, or the first table whose packed bytes are not the size its
    frame and rows in use give (out[0]: that size). ``rows``: int64 scratch of at least
    every capacity."""
    for t in range(tinfo.shape[0]):
        s = src_at[t]
        n = src_at[t + 1] - s
        cap = tinfo[t, 0]
        lp = s + tinfo[t, 1]
        if n < tinfo[t, 2]:
            out[0] = tinfo[t, 2]
            return t
        nlive = 0
        for r in range(cap):
            if src[lp + r] != 0:
                nlive += 1
        want = tinfo[t, 2] + nlive * tinfo[t, 3]
        if n != want:
            out[0] = want
            return t
        k = 0
        for r in range(cap):
            if src[lp + r] != 0:
                rows[k] = r
                k += 1
        p = s
        for f in range(tinfo[t, 4], tinfo[t, 5]):
            _copy(buf, frames[f, 0], src, p, frames[f, 1])
            p += frames[f, 1]
        for c in range(tinfo[t, 6], tinfo[t, 7]):
            o = cols[c, 0]
            rb = cols[c, 1]
            for q in range(nlive):
                _copy(buf, o + rows[q] * rb, src, p, rb)
                p += rb
    return -1


# ---------------------------------------------------------------- the callback ids
class IdFault(IntEnum):
    """What check_ids_rows found (out[0]); out[1] the id column (``ID_COLUMNS``) or the
    callbacks table's index, out[2] the row, out[3] a value."""

    NONE = 0
    USES = 1            # a use count below 0
    FREE = 2            # a free id out of range, twice, with a value or a use
    RANGE = 3           # column, row, id: not -1 to the last id
    KIND = 4            # column, row: the id of a name where a callback must be, or the reverse
    WRAP_TYPE = 5       # row: a wrap callback on a task of another type than loop or gait
    WRAP_FLAG = 6       # row: the callback column not set exactly where a wrap callback is
    PARTNER_RANGE = 7   # row, value: a partner handle below -1
    NO_PARTNER = 8      # row: a partner on a task of an unpaired type
    BOTH = 9            # row: a partner handle and a partner's name
    DIR_BANKS = 10      # row: not its type's clips
    COUNT = 11          # id, the rows naming it


# The id columns check_ids_rows reads, in out[1]'s numbering.
ID_COLUMNS = ("tasks.on_end", "tasks.on_wrap", "tasks.partner_name", "humans.on_report")


@register_jitable
def _bit(mask, t):
    """Bit ``t`` of ``mask`` (a type outside 0-62: no bit)."""
    return 0 <= t < 63 and ((mask >> np.int64(t)) & 1) != 0


@_kernel
def check_ids_rows(tasks, humans, calls, rules, counts, out):
    """The first fault (an IdFault; 0: none) of the task and human tables' callback ids
    (``tasks``: IdTasks, ``humans``: IdHumans) against the callbacks table (``calls``:
    IdCalls, ``is_name`` / ``is_call`` per id as bytes, ``uses`` per id, the ``free``
    ids), in anim.engine.snapcheck.check_ids' order; its fields in ``out``. ``rules``
    (IdRules): ``wrap_mask`` / ``paired_mask`` bit t: type t takes a wrap callback / a
    partner; a task of ``dir_type`` holds eight clips of a bank of ``n_banks`` in its
    ``dir_banks``, any other type -1 there (anim.engine.rules.dir_banks_misfit's rule).
    ``counts``: int64 scratch of at least one per id."""
    t_live, ty, on_end, on_wrap, p_name, cb, partner, dbanks = tasks
    h_live, on_report = humans
    is_name, is_call, uses, free = calls
    wrap_mask, paired_mask, dir_type, n_banks = rules
    out[0] = 0
    n = len(is_name)
    for i in range(n):
        counts[i] = 0
        if uses[i] < 0:
            return _fail(out, 1, 0, 0, 0, 0)
    for k in range(len(free)):
        i = free[k]
        if i < 0 or i >= n or is_name[i] != 0 or is_call[i] != 0 or uses[i] != 0 or counts[i] != 0:
            return _fail(out, 2, 0, 0, 0, 0)
        counts[i] = 1                                  # marks it seen (the counts start at 0 below)
    for k in range(len(free)):
        counts[free[k]] = 0
    tcap = len(t_live)
    for c in range(4):
        live = h_live if c == 3 else t_live
        for r in range(len(live)):
            if live[r] == 0:
                continue
            v = np.int64(on_report[r]) if c == 3 else np.int64(on_end[r] if c == 0 else (on_wrap[r] if c == 1
                                                                                          else p_name[r]))
            if v < -1 or v > n - 1:
                return _fail(out, 3, c, r, v, 0)
        for r in range(len(live)):
            if live[r] == 0:
                continue
            v = np.int64(on_report[r]) if c == 3 else np.int64(on_end[r] if c == 0 else (on_wrap[r] if c == 1
                                                                                          else p_name[r]))
            if v >= 0:
                ok = is_name[v] != 0 if c == 2 else is_call[v] != 0
                if not ok:
                    return _fail(out, 4, c, r, v, 0)
                counts[v] += 1
    for r in range(tcap):
        if t_live[r] != 0 and on_wrap[r] >= 0 and not _bit(wrap_mask, ty[r]):
            return _fail(out, 5, 1, r, 0, 0)
    for r in range(tcap):
        if t_live[r] != 0 and (on_wrap[r] >= 0) != (cb[r] != 0):
            return _fail(out, 6, 1, r, 0, 0)
    for r in range(tcap):
        if t_live[r] != 0 and partner[r] < -1:
            return _fail(out, 7, 0, r, partner[r], 0)
    for r in range(tcap):
        if t_live[r] != 0 and (partner[r] >= 0 or p_name[r] >= 0) and not _bit(paired_mask, ty[r]):
            return _fail(out, 8, 0, r, 0, 0)
    for r in range(tcap):
        if t_live[r] != 0 and partner[r] >= 0 and p_name[r] >= 0:
            return _fail(out, 9, 0, r, 0, 0)
    for r in range(tcap):
        if t_live[r] == 0:
            continue
        is_dir = ty[r] == dir_type
        for j in range(dbanks.shape[1]):
            b = dbanks[r, j]
            if (is_dir and (b < 0 or b >= n_banks)) or (not is_dir and b != -1):
                return _fail(out, 10, 0, r, 0, 0)
    for i in range(n):
        if counts[i] != uses[i]:
            return _fail(out, 11, i, counts[i], 0, 0)
    return 0


# ---------------------------------------------------------------- rows of tagged values
@_kernel
def check_tagged_rows(live, head, count, n, kind, value, texts_a, texts_b, n_texts, out):
    """The first fault (0: none) of a ring of rows of tagged values (a game's log): the
    rows in use exactly the ``count`` from row ``head`` on (1: out[1] the row); each row's
    two text columns (``texts_a``, ``texts_b``) below ``n_texts`` (2); each item j of
    ``kind`` / ``value`` (kinds 0 none, 1 bool, 2 int, 3 float (its 64 bits), 4 text):
    past the row's ``n`` kind 0 and value 0, else its kind's (none: 0; bool: 0 or 1; a
    finite float; a text index below ``n_texts``) (3: out[1] the row, out[2] the item)."""
    out[0] = 0
    cap = len(live)
    for r in range(cap):
        want = ((r - head) % cap) < count if cap else False
        if (live[r] != 0) != want:
            return _fail(out, 1, r, 0, 0, 0)
    for r in range(cap):
        if live[r] == 0:
            continue
        if texts_a[r] < 0 or texts_a[r] >= n_texts or texts_b[r] < 0 or texts_b[r] >= n_texts:
            return _fail(out, 2, r, 0, 0, 0)
        for j in range(kind.shape[1]):
            k = kind[r, j]
            v = value[r, j]
            if j >= n[r]:
                bad = k != 0 or v != 0
            elif k == 0:
                bad = v != 0
            elif k == 1:
                bad = v != 0 and v != 1
            elif k == 2:
                bad = False
            elif k == 3:
                e = (v >> 52) & 0x7FF                 # the exponent's bits: all set is an inf or a NaN
                bad = e == 0x7FF
            elif k == 4:
                bad = v < 0 or v >= n_texts
            else:
                bad = True
            if bad:
                return _fail(out, 3, r, j, 0, 0)
    return 0


@_kernel
def pack_tables(blocks, out, tinfo, frames, cols, ends, rows):
    """``pack_rows`` of each table t of ``blocks`` (a tuple of uint8 blocks) one after
    another into ``out``: ``tinfo[t]`` its capacity, ``live``'s byte offset and its ranges
    of ``frames`` and ``cols`` (byte offsets in its block). ``ends[t]``: where table t's
    packed bytes end in ``out``. ``rows``: int64 scratch of at least every capacity."""
    p = 0
    for t in range(len(blocks)):
        block = blocks[t]
        cap = tinfo[t, 0]
        live_at = tinfo[t, 1]
        n = 0
        for r in range(cap):
            if block[live_at + r] != 0:
                rows[n] = r
                n += 1
        for f in range(tinfo[t, 2], tinfo[t, 3]):
            _copy(out, p, block, frames[f, 0], frames[f, 1])
            p += frames[f, 1]
        for c in range(tinfo[t, 4], tinfo[t, 5]):
            o = cols[c, 0]
            rb = cols[c, 1]
            for k in range(n):
                _copy(out, p, block, o + rows[k] * rb, rb)
                p += rb
        ends[t] = p
    return p
