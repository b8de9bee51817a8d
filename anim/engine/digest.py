"""A table's state as one 64-bit number, for checksums that peers compare every few updates.

``blocks_digests(tables)`` hashes what the next update reads of each table: the free list
(its order is which row the next take gets), every row's generation and live flag, and
the columns of the rows in use. A free row's columns are not read before its next take resets
them (anim.engine.store: ``alloc`` zeroes a row, ``alloc_default`` puts the defaults back, a
kernel writes every column of a row it takes), so they are left out: the cost follows the
crowd, not the tables' capacity (about a microsecond for the two fighters' tables).

Integers only (a multiply and a fold per 1, 4 or 8-byte item, column by column over
the rows in use, and a final avalanche of the 64 bits), so the same state gives the same
number on every CPU. Not a cryptographic hash: a snapshot
file's integrity is checked by its CRC-32 (game.runtime.snapfile); this number finds
desyncs, as GGPO's Fletcher checksum does. Original: none (ours).
"""
from __future__ import annotations

import marshal
from typing import Any

import numpy as np
from numba import njit, uint64

from scuffle.anim.engine.interpret import kcall
from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.store import _layout

__all__ = ["blocks_digests", "digests_plan", "digests_with", "arena_plan", "digests_in", "layout_plan", "array_form",
           "values_bytes", "digest_form"]

# numba's disk cache where it can write one (anim.engine.jitcache: a read-only install compiles per run)
CACHE = cache_setting(__file__)


@njit(cache=CACHE, nogil=True)
def _mix(h, x):
    """One item into the running digest: a multiply and a fold (a short chain, so a
    table's bytes hash at memory speed; ``_final`` spreads the last state's bits)."""
    h = (h ^ x) * uint64(0x9E3779B97F4A7C15)
    return h ^ (h >> uint64(29))


@njit(cache=CACHE, nogil=True)
def _final(h):
    h ^= h >> uint64(30)
    h *= uint64(0xBF58476D1CE4E5B9)
    h ^= h >> uint64(27)
    h *= uint64(0x94D049BB133111EB)
    return h ^ (h >> uint64(31))


@njit(cache=CACHE, nogil=True)
def _span(h, b8, b32, b64, off, n, size):
    """Mix ``n`` items of ``size`` bytes (1, 4 or 8) from byte offset ``off`` (aligned to ``size``)."""
    if size == 8:
        s = off // 8
        for i in range(n):
            h = _mix(h, b64[s + i])
    elif size == 4:
        s = off // 4
        for i in range(n):
            h = _mix(h, uint64(b32[s + i]))
    elif off % 8 == 0 and n % 8 == 0:              # bytes (a bool column): eight a word
        s = off // 8
        for i in range(n // 8):
            h = _mix(h, b64[s + i])
    else:
        for i in range(n * size):
            h = _mix(h, uint64(b8[off + i]))
    return h


# The words the digest reads a block's bytes as (numba compiles its view once for each).
WORD_DTYPES = (np.uint32, np.uint64)


@njit(cache=CACHE, nogil=True)
def _rows_digest(b8, plan, whole, live_off, cap, seed):
    """``plan`` rows (byte offset, item size, items per row) are the columns of the rows in
    use (the bool array of ``cap`` at byte ``live_off``), hashed column by column over those
    rows; ``whole`` rows (byte offset, item size, items) are arrays hashed whole."""
    b32 = b8.view(np.uint32)
    b64 = b8.view(np.uint64)
    h = uint64(seed)
    for k in range(whole.shape[0]):
        h = _span(h, b8, b32, b64, whole[k, 0], whole[k, 2], whole[k, 1])
    rows = np.empty(cap, np.int64)
    n = 0
    for r in range(cap):
        if b8[live_off + r] != 0:
            rows[n] = r
            n += 1
    h = _mix(h, uint64(n))
    for c in range(plan.shape[0]):
        off, size, items = plan[c, 0], plan[c, 1], plan[c, 2]
        per = size * items
        if size == 8:
            for j in range(n):
                s = (off + rows[j] * per) // 8
                for i in range(items):
                    h = _mix(h, b64[s + i])
        elif size == 4:
            for j in range(n):
                s = (off + rows[j] * per) // 4
                for i in range(items):
                    h = _mix(h, uint64(b32[s + i]))
        else:
            for j in range(n):
                s = off + rows[j] * per
                for i in range(per):
                    h = _mix(h, uint64(b8[s + i]))
    return _final(h)


@njit(cache=CACHE, nogil=True)
def _many_digest(blocks, plan, plan_at, whole, whole_at, live_offs, caps, seed):
    """``_rows_digest`` of each block of the tuple ``blocks``: table t's plan rows are
    ``plan[plan_at[t]:plan_at[t + 1]]``, its whole arrays ``whole[whole_at[t]:whole_at[t + 1]]``."""
    out = np.empty(len(blocks), np.uint64)
    for t in range(len(blocks)):
        out[t] = _rows_digest(blocks[t], plan[plan_at[t]:plan_at[t + 1]], whole[whole_at[t]:whole_at[t + 1]],
                              live_offs[t], caps[t], seed)
    return out


@njit(cache=CACHE, nogil=True)
def _arena_digest(buf, plan, plan_at, whole, whole_at, live_offs, caps, seed):
    """``_many_digest`` of tables lying side by side in one buffer ``buf`` (a TableArena's),
    their plans' offsets made absolute (``arena_plan``): one array to pass, not one a table."""
    out = np.empty(len(caps), np.uint64)
    for t in range(len(caps)):
        out[t] = _rows_digest(buf, plan[plan_at[t]:plan_at[t + 1]], whole[whole_at[t]:whole_at[t + 1]],
                              live_offs[t], caps[t], seed)
    return out


_WHOLE = ("n_free", "live", "gen", "free_rows")


def layout_plan(columns: dict, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(plan, whole) for ``_rows_digest`` of a block laid out by store._layout(columns, cap):
    the columns other than the whole arrays, and the whole arrays (those of _WHOLE present)."""
    lay = _layout(columns, cap)[0]
    plan, whole = [], []
    for name, (off, dt, shape) in lay.items():
        size = dt.itemsize
        per = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        if name in _WHOLE:
            whole.append((off, size, int(np.prod(shape))))
        else:
            plan.append((off, size, per))
    return np.array(plan, np.int64).reshape(-1, 3), np.array(whole, np.int64).reshape(-1, 3)


def blocks_digests(tables: list, seed: int = 0) -> np.ndarray:
    """``block_digest`` of each (columns, capacity, block) of ``tables``, in one compiled
    call (a checksum hashes seven tables: one call, not seven). Out: uint64 per table."""
    key = tuple((id(c), cap) for c, cap, _ in tables)
    got = _MANY.get(key)
    if got is None or any(a is not c for a, (c, _, _) in zip(got[0], tables)):
        got = digests_plan([(c, cap) for c, cap, _ in tables])
    return digests_with(got, tuple(b for _, _, b in tables), seed)


def digests_plan(layouts: list) -> tuple:
    """What ``digests_with`` takes for the tables of ``layouts`` ((columns, capacity)
    each): made once per layout and kept by the caller (or by ``blocks_digests``)."""
    key = tuple((id(c), cap) for c, cap in layouts)
    got = _MANY.get(key)
    if got is None or any(a is not c for a, (c, _) in zip(got[0], layouts)):
        if len(_MANY) > 64:
            _MANY.clear()
        plans, wholes, offs = [], [], []
        for cols, cap in layouts:
            p, w = layout_plan(cols, cap)
            plans.append(p)
            wholes.append(w)
            offs.append(_layout(cols, cap)[0]["live"][0])
        at = lambda xs: np.concatenate(([0], np.cumsum([len(x) for x in xs]))).astype(np.int64)  # noqa: E731
        got = _MANY[key] = (tuple(c for c, _ in layouts), np.concatenate(plans), at(plans), np.concatenate(wholes),
                            at(wholes), np.array(offs, np.int64), np.array([cap for _, cap in layouts], np.int64))
    return got


def digests_with(plan: tuple, blocks: tuple, seed: int = 0) -> np.ndarray:
    """``blocks_digests`` of ``blocks`` laid out as ``plan`` (``digests_plan``) says."""
    _, plan_all, plan_at, whole_all, whole_at, live_offs, caps = plan
    return kcall(_many_digest, blocks, plan_all, plan_at, whole_all, whole_at, live_offs, caps, seed)


_MANY: dict = {}


def arena_plan(plan: tuple, bases: list) -> tuple:
    """``plan`` (``digests_plan``) for tables whose blocks start at byte ``bases`` of one
    buffer (each a multiple of 8): the offsets made absolute, for ``digests_in``."""
    _, plan_all, plan_at, whole_all, whole_at, live_offs, caps = plan
    p, w = plan_all.copy(), whole_all.copy()
    for t, base in enumerate(bases):
        p[plan_at[t]:plan_at[t + 1], 0] += base
        w[whole_at[t]:whole_at[t + 1], 0] += base
    return (p, plan_at, w, whole_at, live_offs + np.asarray(bases, np.int64), caps)


def digests_in(aplan: tuple, buf: np.ndarray, seed: int = 0) -> np.ndarray:
    """``digests_with`` of the tables laid out in ``buf`` as ``aplan`` (``arena_plan``) says:
    the same digests as of each table's block on its own."""
    p, plan_at, w, whole_at, live_offs, caps = aplan
    return kcall(_arena_digest, buf, p, plan_at, w, whole_at, live_offs, caps, seed)


def array_form(a: np.ndarray) -> tuple:
    """An array as a checksum writes it: (dtype, shape, little-endian bytes)."""
    return (a.dtype.str, a.shape, a.tobytes())


def digest_form(v: Any) -> Any:
    """``v`` (plain data: anim.engine.plaindata's values) with every array in ``array_form`` (the
    form a file's values take for its checksum; a live Game's are made so directly)."""
    t = v.__class__
    if t is np.ndarray:
        return array_form(v)
    if t is dict:
        return {k: digest_form(x) for k, x in v.items()}
    if t is list:
        return [digest_form(x) for x in v]
    if t is tuple:
        return tuple(digest_form(x) for x in v)
    return v


def values_bytes(v: Any) -> bytes:
    """Canonical bytes of plain values in ``digest_form`` (None, bool, int, float, str,
    bytes, lists, tuples and dicts of them, no arrays and no sets), for a checksum:
    ``marshal`` version 2, which writes those types by value, in order (dicts in their
    order), with no back-references, the same on every machine. Only ever written here:
    nothing is read back with marshal. A value of another type raises ValueError."""
    return marshal.dumps(v, 2)
