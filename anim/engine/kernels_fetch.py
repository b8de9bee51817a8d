"""The rows of the humans ahead, fetched while a kernel works on the one before (link-only helpers).

``step_stacks`` and ``pose_stacks`` walk a crowd whose rows lie scattered over tables of
tens of thousands of rows: each human's rows miss the cache in three dependent waves (its
stack, its tasks, their cursors, fades and gaits). Both kernels call the same two helpers
for the humans ahead: ``fetch_tasks`` the task rows of the human ``PREFETCH_TASKS`` ahead,
``fetch_rows`` the rows those tasks link of the human ``PREFETCH_ROWS`` ahead (read from
the task rows fetched earlier), so the misses of several humans overlap. One list of
columns for both: what both read, and what only the step reads (``step``: the events'
and the end test's columns, a gait's move, a clip's blend time) or only the pose (a
cursor's clip). A prefetch changes no value: the same bits.
"""
from __future__ import annotations

from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.jitpipe import prefetch as _prefetch
from scuffle.anim.engine.kernels_maths import jit_kinds
from scuffle.anim.engine.kernels_rows import _CLIP, _FADE, _GAIT, _PAIRED_CLIP

# numba's on-disk cache of this module's kernels: True, or False with no writable cache
# folder (they then compile for the process only); a corrupt cache is set aside first.
CACHE = cache_setting(__file__)
_helper, _kernel, _inline = jit_kinds(CACHE)

__all__ = ["PREFETCH_TASKS", "PREFETCH_ROWS", "fetch_tasks", "fetch_rows"]
# numba's cache is keyed on each function's own file: the sha256 of the kernel modules
# this one links (anim.maths.detmath's scalar forms and the kernels_* modules it imports), so an
# edit there changes this file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "be2ed67c00d687764513028fce47fa792348d025ca8e42e16acad9e32cf9cf12"

# How many humans ahead of the one a kernel works on it fetches: the task rows of the
# human PREFETCH_TASKS ahead, the rows they link of the human PREFETCH_ROWS ahead (found
# through the task rows fetched earlier). Longer distances (16 and 8) were no faster.
PREFETCH_TASKS = 8
PREFETCH_ROWS = 4


@_helper
def fetch_tasks(hi, step, humans, tasks):
    """Prefetch the task rows of human ``hi``'s stack: the columns the step and the pose
    read of every task (its type, rate, first two cursor links, own row, next task,
    window), with ``step`` the step's too (released, flags, the other two cursor links)."""
    h_depth, h_stack = humans.depth, humans.stack
    for i in range(h_depth[hi]):
        r = h_stack[hi, i]
        if r < 0:
            continue
        _prefetch(tasks.type, r)
        _prefetch(tasks.rate, r)
        _prefetch(tasks.c0, r)
        _prefetch(tasks.c1, r)
        _prefetch(tasks.aux, r)
        _prefetch(tasks.nxt, r)
        _prefetch(tasks.window, r)
        if step:
            _prefetch(tasks.released, r)
            _prefetch(tasks.flags, r)
            _prefetch(tasks.c2, r)
            _prefetch(tasks.c3, r)


@_helper
def fetch_cursor(c, step, cursors):
    """Prefetch cursor row ``c`` (none below 0): its time and flags, with ``step`` the
    advance's and the time set's columns, else the pose's clip."""
    if c < 0:
        return
    _prefetch(cursors.t, c)
    _prefetch(cursors.flags, c)
    if step:
        _prefetch(cursors.frame, c)
        _prefetch(cursors.end, c)
        _prefetch(cursors.evf, c)
        _prefetch(cursors.at_end, c)
        _prefetch(cursors.dur, c)
    else:
        _prefetch(cursors.bank, c)


@_helper
def fetch_rows(hi, step, humans, tasks, cursors, fades, gaits):
    """Prefetch the rows human ``hi``'s tasks link (read from their task rows, fetched
    earlier by ``fetch_tasks``): the cursors of its clips and gaits (``fetch_cursor``), a
    fade's or a gait's own row; with ``step`` a gait's speed, wrap callback, target and
    leader and a clip's blend time too."""
    h_depth, h_stack = humans.depth, humans.stack
    t_type, t_c0, t_c1, t_aux = tasks.type, tasks.c0, tasks.c1, tasks.aux
    for i in range(h_depth[hi]):
        r = h_stack[hi, i]
        if r < 0:
            continue
        tt = t_type[r]
        fetch_cursor(t_c0[r], step, cursors)
        fetch_cursor(t_c1[r], step, cursors)
        a = t_aux[r]
        if tt == _FADE and a >= 0:
            _prefetch(fades.el, a)
            _prefetch(fades.dur, a)
        elif tt == _GAIT:
            if a >= 0:
                _prefetch(gaits.value, a)
                _prefetch(gaits.lower, a)
            if step:
                _prefetch(tasks.speed, r)
                _prefetch(tasks.callback, r)
                if a >= 0:
                    _prefetch(gaits.target, a)
                    _prefetch(gaits.leader, a)
        elif step and (tt == _CLIP or tt == _PAIRED_CLIP):
            _prefetch(tasks.blend, r)
