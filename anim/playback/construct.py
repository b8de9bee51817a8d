"""The player's task construction: one constructor per task type.

``TaskBuilder`` is the part of ``scuffle.anim.playback.player.Player`` that makes tasks, each
checked before anything is taken (a refused task leaves the pool, the tables and the
stack as they were), taken from the pool of 360 and registered with the engine: the
loop (type 1), the clip that hands over (3) and its chains, the hold (5), the scene
clip (7), the paired clip and hold (6, 4: the attacker's clip and rate), the fade (9),
the mix (10), the pick (11), the gait blend (12) and the eight-direction blend (13). A
part the Player owns (``Player.builders``), over the world's stores and pool: it finds
clips through the Player's look-up (``ClipLookup``).

Spec: "Animation tasks", "Paired tasks", "Gait blend", "Fades", "Playback rate".
Original: 0x00105678, 0x00105990, 0x00106140, 0x001069c0, 0x00108a78, 0x00108450,
0x00106c80, 0x0010b090, 0x00106f50, 0x0010a310, 0x00109210 (the constructors),
0x001054c8 (take a task from the free list).
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Sequence, TypeVar

import numpy as np

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimRef, AnimSet
from scuffle.anim.engine.callbacks import check_callback
from scuffle.anim.playback.cursor import cursor_row
from scuffle.anim.playback.lookup import ClipLookup, _ref, _refs
from scuffle.anim.maths.pose import POSE_STACK_SIZE, PoseStackOverflow
from scuffle.anim.data.options import PlayerOptions
from scuffle.anim.engine.stack import CharacterInstance, TaskPool, check_human, not_a_human
from scuffle.anim.engine.cmdkernel import rows_written
from scuffle.anim.engine.kernel_types import GaitRow
from scuffle.anim.engine.store import Stores, near_hints
from scuffle.anim.playback.tasks import (bind_row, new_handle, set_call, ClipTask, DirectionTask, FadeTask, GaitTask, HoldTask, LoopTask, MixTask, PairedClipTask,
                    PairedHoldTask, PickTask, SceneTask, Task, LOCOMOTION_FLAGS, PICK_SAMPLINGS, WINDOW_RULES,
                    TaskFlags, TaskType, write_task_row)

__all__ = ["TaskBuilder", "chain_blend_depth", "task_pose_depth"]


_T = TypeVar("_T", bound=Task)
_FADE_TYPE = TaskType.FADE
_FADE_INT = int(TaskType.FADE)
# A blend window rule's index in WINDOW_RULES (the task table's ``window`` column), a pick's
# sampling rule's in PICK_SAMPLINGS (its ``sampling`` column).
_WINDOW_INDEX: dict[str, int] = {rule: i for i, rule in enumerate(WINDOW_RULES)}
_PICK_INDEX: dict[str, int] = {rule: i for i, rule in enumerate(PICK_SAMPLINGS)}
# The task flags a clip task gives its cursor (0x1 no velocity, 0x2 no turn, 0x10 muted).
_CURSOR_INT = int(TaskFlags.NO_VELOCITY | TaskFlags.NO_TURN | TaskFlags.MUTED)
_F32_MAX = F.FLT_MAX
_I32_LO, _I32_HI = -(1 << 31), 1 << 31        # an int32 column's range (the compiled call's flags and id)


def task_pose_depth(task: Task) -> int:
    """The most clips a type 3 / 6 task and the next tasks it owns sample at once
    (chain_blend_depth over the task's own chain, each with its own blend window)."""
    seq = [task]
    while isinstance(seq[-1], ClipTask) and seq[-1].next is not None and len(seq) <= POSE_STACK_SIZE + 1:
        seq.append(seq[-1].next)
    if len(seq) < 2:
        return 1
    durations = [t.duration() for t in seq]
    window = [t.window() if isinstance(t, ClipTask) else 0.0 for t in seq[:-1]] + [0.0]
    return _nest_depth(durations, window)


def chain_blend_depth(durations: Sequence[float], blend: float) -> int:
    """The most clips of a chain sampled at once under its hand-over blends (1 without).

    A type 3 task in its blend window samples its clip, then its next task kept at the
    time into the window, and so on while that time is past the next one's own window
    start (ClipTask.emit): from clip i, the next gets at most w_i = min(b, D_(i+1)); a
    clip j given time T nests on iff w_j > 0 and T > D_j - w_j, passing T - (D_j - w_j).
    The last id loops (no window). In: the clips' durations in chain order and the
    blend time b. Out: the deepest nesting over every start, an upper bound of the poses
    the chain pushes at once (its peak is approached just before each hand-over).
    Original: 0x00104ce0 (the pose stack of seven it must fit), "When a clip ends".
    """
    n = len(durations)
    if n < 2 or not blend > 0.0:
        return 1
    return _nest_depth(durations, [min(blend, durations[i + 1]) for i in range(n - 1)] + [0.0])


def _nest_depth(durations: Sequence[float], window: Sequence[float]) -> int:
    """chain_blend_depth's count for explicit windows (0 where a task has none)."""
    n = len(durations)
    best = 1
    for i in range(n - 1):
        depth, t, j = 1, window[i], i + 1
        if t <= 0.0:
            continue
        depth += 1                                 # the next task, sampled in i's window
        while window[j] > 0.0 and t > durations[j] - window[j]:
            t -= durations[j] - window[j]
            j += 1
            depth += 1
        best = max(best, depth)
    return best


def _check_number(what: str, value, low: float = 0.0) -> float:
    """A constructor's number: finite as the float32 it is kept in, and >= ``low``, else
    ValueError naming it.

    Checked before any cursor or table row is taken, so a refused task leaves nothing
    behind (the pool, the stores and the stack are as they were).
    """
    if value.__class__ is float and -F.FLT_MAX <= value <= F.FLT_MAX and value >= low:
        return value                               # the common case: a finite float32-range float
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {value!r} must be a number") from None
    if not (math.isfinite(F.f32(v)) and v >= low):
        raise ValueError(f"{what} {value!r} must be finite (a float32) and >= {low:g}")
    return v


def _next_row(ts, r: int, next: Task | None, blend: float, window: int) -> None:
    """A new type 3 task's row ``r``: its next task (placed: it has its one place now), its
    blend time (a checked number; float32) and window rule (its index in WINDOW_RULES),
    each written only when it differs from the task table's defaults (what ClipTask's own
    constructor writes)."""
    if next is not None:
        ts.m_nxt[r] = next.trow
        ts.m_placed[next.trow] = True
    if blend:
        if blend.__class__ is float:                 # checked: within a float32's range
            ts.m_blend[r] = blend
        else:
            ts.blend[r] = F.f32(float(blend))
    if window:
        ts.m_window[r] = window


# the constructors' bit fields: the range of the task table's column each goes to (int32, int64)
_BITS = {"flags": (-(1 << 31), (1 << 31) - 1), "held": (-(1 << 63), (1 << 63) - 1)}
# the narrower of the two ranges: a plain int in it needs no other check
_FLAGS_LO, _FLAGS_HI = _BITS["flags"]


def _check_bits(call: str, what: str, value) -> int:
    """A constructor's ``flags`` or ``held`` as an int: a whole number its column holds (an
    IntFlag's value among them), else ValueError naming it."""
    lo, hi = _BITS[what]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= int(value) <= hi:
        raise ValueError(f"{call}: {what} {value!r} must be a whole number from {lo} to {hi}")
    return int(value)


_set = object.__setattr__


def _near_human(make: Callable) -> Callable:
    """A constructor whose rows are taken near its human's (anim.engine.store.near_hints:
    the task and cursor tables' ``near`` set while it runs, the hints before it put back
    after, so a constructor calling another keeps them). Rejected: a human that is not
    one, a ``flags`` or ``held`` that is not a whole number its column holds (ValueError
    naming it); an ``anim_set`` that is not an AnimSet, a ``paired_with`` that is not a
    human."""
    name = make.__name__

    def made(self, inst, *args, **kwargs):
        if kwargs:
            for key in ("flags", "held"):
                if key in kwargs:
                    v = kwargs[key]
                    if v.__class__ is not int or not _FLAGS_LO <= v <= _FLAGS_HI:
                        kwargs[key] = _check_bits(name, key, v)
            s = kwargs.get("anim_set")
            if s is not None and not isinstance(s, AnimSet):
                raise ValueError(f"{name}: anim_set {s!r} is not an AnimSet")
            w = kwargs.get("paired_with")
            if w is not None:
                check_human(f"{name}: paired_with", w)
        st = self.stores
        ts, cs = st.tasks, st.cursors
        old_t, old_c = ts.near, cs.near
        try:
            t_hint, c_hint = near_hints(st, inst)
        except AttributeError:
            raise not_a_human(name, inst) from None
        # (``near`` is no column: set past Table.__setattr__, whose column bookkeeping it
        # does not need)
        _set(ts, "near", t_hint)
        _set(cs, "near", c_hint)
        try:
            return make(self, inst, *args, **kwargs)
        finally:
            _set(ts, "near", old_t)
            _set(cs, "near", old_c)
    return functools.wraps(make)(made)


class TaskBuilder:
    """The task constructors (see the module docstring): the Player's builders.

    In: the Player's look-up, the task pool, the world's stores and the Player's options
    (set again when the Player's are)."""

    def __init__(self, lookup: ClipLookup, pool: TaskPool, stores: Stores, options: PlayerOptions):
        self.lookup = lookup
        self.pool = pool
        self.stores = stores
        self.options = options
        # a single-clip task's rows written by one compiled call (the Player's prepared
        # commands' ``clip_rows``, set by the Player), None: the Python writers alone
        self.direct: Callable | None = None
        self.direct_gait: Callable | None = None     # a gait's rows likewise (``gait_rows``)

    def _cursor_and_rate(self, s, anim_id: int, rate: float | None, flags: int = 0) -> tuple[int, float]:
        """A single clip's new cursor, as its row of the world's cursor table (cursor flags
        ``flags``; no handle: the task's ``c0`` links it), and its rate: ``rate``, checked,
        or the id's own (CfgAnimSpeeds by its range flags), the id found once (the look-up's
        cache)."""
        hit = None
        if anim_id.__class__ in self.lookup._id_types:      # _known, inline
            per = self.lookup._known_ids.get(id(s))
            if per is not None and per[0] is s and per[1] is self.options.speeds:
                hit = per[2].get(anim_id)
        if hit is None:
            r = self.lookup.rate_of(s, anim_id) if rate is None else _check_number("rate", rate)
            if isinstance(anim_id, str):             # as self.lookup.cursor takes it
                anim_id = _ref(s, anim_id)
            return self.lookup._cursor_row_of(self.lookup._entry(s, anim_id), anim_id, flags), r
        if rate is not None:
            r = _check_number("rate", rate)
        else:
            r = hit[1]
            if r is None:
                r = hit[1] = self.lookup._rate_checked(s, anim_id)
        proto = hit[3]
        if proto is None:
            return self.lookup._cursor_row_of(hit, anim_id, flags), r
        return cursor_row(self.stores.cursors, hit[2], anim_id, flags, proto), r

    def _clip_made(self, cls, s, anim_id: int, rate: float | None, flags, held, on_end):
        """A new single-clip task of class ``cls`` (LoopTask, ClipTask) on ``anim_id`` of set
        ``s``: its cursor row and task row written and counted out of the pool, in one
        function (the look-up's cache hit read inline, only the columns that differ from
        the task table's defaults written). The caller checked the pool has a task and
        ``on_end``; ``rate`` (None: the id's own), ``flags`` and ``held`` are checked here,
        before any row is taken. The rows _ClipBase's own constructor writes, the same bits.
        Original: 0x00105678 / 0x00105990 (the constructors), 0x001041f8 AnimCursor_Init."""
        fl = flags if flags.__class__ is int else int(flags)
        hl = held if held.__class__ is int else int(held)
        hit = None
        if anim_id.__class__ in self.lookup._id_types:      # _known, inline
            per = self.lookup._known_ids.get(id(s))
            if per is not None and per[0] is s and per[1] is self.options.speeds:
                hit = per[2].get(anim_id)
        st = self.stores
        ts = st.tasks
        if hit is not None and rate is None and hit[1] is not None and hit[3] is not None:
            r = hit[1]                               # the id's own rate and cursor proto, cached
            direct = self.direct
            if direct is not None and hit[2] >= 0 and -_F32_MAX <= r <= _F32_MAX and _I32_LO <= anim_id < _I32_HI \
                    and _I32_LO <= fl < _I32_HI:
                # the cursor and task rows in one compiled call (the same rows and columns)
                got = direct(ts.near, st.cursors.near, cls._TYPE, r, fl, hl, hit[3], hit[2],
                             anim_id if anim_id.__class__ is int else int(anim_id), fl & _CURSOR_INT)
                if got >= 0:
                    return self._handle(cls, ts, *rows_written(got), on_end)
            crow = cursor_row(st.cursors, hit[2], anim_id, fl & _CURSOR_INT, hit[3])
        else:
            crow, r = self._cursor_and_rate(s, anim_id, rate, fl & _CURSOR_INT)
        kept = ts.spare.get(cls)                     # new_handle, inline: a handle the flush kept
        t = kept.pop() if kept else cls.__new__(cls)
        tr = write_task_row(ts, t, cls._TYPE, r, fl, hl, on_end)
        ts.m_c0[tr] = crow
        t._aid = st.cursors.m_anim[crow]
        t._c = None
        self.pool.take_row(tr)
        return t

    def _gait_handle(self, ts, tr: int, gr: int, newly: int, on_wrap):
        """The GaitTask handle of the rows gait_rows wrote (task row ``tr``, gait row ``gr``),
        bound as GaitTask._made binds one (GaitTask._bind_rows), its wrap callback set, its
        pool flag counted when newly set (TaskPool.counted)."""
        t = new_handle(ts, GaitTask)
        bind_row(ts, t, tr)
        GaitTask._bind_rows(t, self.stores.gaits, gr, self.stores.cursors)
        if on_wrap is not None:
            t.on_wrap = on_wrap
        if newly:
            self.pool.counted(tr)
        return t

    def _handle(self, cls, ts, tr: int, crow: int, newly: int, on_end):
        """The handle of a single-clip task whose rows the compiled call wrote (``direct``):
        made (or one the flush kept), bound to row ``tr`` (tasks.bind_row), its end
        callback set, its pool flag counted when newly set (TaskPool.counted)."""
        t = new_handle(ts, cls)
        bind_row(ts, t, tr)
        if on_end is not None:
            set_call(ts, "on_end", tr, on_end)
        t._aid = self.stores.cursors.m_anim[crow]
        t._c = None
        if newly:
            self.pool.counted(tr)
        return t

    def _take(self, task: _T) -> _T:
        self.pool.take(task)
        return task

    @_near_human
    def loop(self, inst: CharacterInstance, anim_id: AnimRef, *, flags: int = 0, held: int = 0,
             rate: float | None = None, on_wrap: Callable | None = None, on_end: Callable | None = None,
             anim_set=None) -> LoopTask:
        """A type 1 task on ``anim_id`` (rate from its range flags unless given).
        Original: 0x00105678."""
        s = anim_set or inst.anim_set
        if isinstance(anim_id, str):
            anim_id = _ref(s, anim_id)
        if on_end is not None:
            on_end = check_callback(on_end, "on_end")
        if on_wrap is not None:
            on_wrap = check_callback(on_wrap, "on_wrap")
        pool = self.pool
        if pool.n_out >= pool.capacity:
            pool.require(1)                          # raises
        task = self._clip_made(LoopTask, s, anim_id, rate, flags, held, on_end)
        if on_wrap is not None:
            task.on_wrap = on_wrap
        return task

    @_near_human
    def clip(self, inst: CharacterInstance, anim_id: AnimRef, next: Task | None = None, *, blend: float = 0.0,
             flags: int = 0, held: int = 0, rate: float | None = None, on_end: Callable | None = None,
             anim_set=None) -> ClipTask:
        """A type 3 task: ``anim_id``, then ``next`` (blend time ``blend``). Original: 0x00105990."""
        s = anim_set or inst.anim_set
        if isinstance(anim_id, str):
            anim_id = _ref(s, anim_id)
        if on_end is not None:
            on_end = check_callback(on_end, "on_end")
        pool = self.pool
        if pool.n_out >= pool.capacity:
            pool.require(1)                          # raises
        if not (blend.__class__ is float and 0.0 <= blend <= F.FLT_MAX):
            _check_number("blend time", blend)
        ts = self.stores.tasks
        if next is not None and not (getattr(next, "tstore", None) is ts and not ts.m_placed[next.trow]
                                     and next._TYPE != _FADE_INT):
            ClipTask.check_next(ts, next)            # raises (before anything is taken)
        window = _WINDOW_INDEX[self.options.blend_window]
        task = self._clip_made(ClipTask, s, anim_id, rate, flags, held, on_end)
        _next_row(ts, task.trow, next, blend, window)
        return task

    @_near_human
    def hold(self, inst: CharacterInstance, anim_id: AnimRef, *, flags: int = 0, held: int = 0,
             on_end: Callable | None = None) -> HoldTask:
        """A type 5 task (ours: plays once, holds the last frame). Original: 0x00106140."""
        anim_id = _ref(inst.anim_set, anim_id)
        on_end = check_callback(on_end, "on_end")
        self.pool.require(1)
        c = self.lookup.cursor(inst.anim_set, anim_id)
        return self._take(HoldTask(c, self.lookup.rate_of(inst.anim_set, anim_id), flags, held, on_end, tstore=self.stores.tasks))

    @_near_human
    def scene(self, inst: CharacterInstance, anim_id: AnimRef, rate: float, *, flags: int = 0,
              anim_set=None) -> SceneTask:
        """A type 7 scene clip at the scene's rate. Original: 0x001069c0."""
        anim_id = _ref(anim_set or inst.anim_set, anim_id)
        self.pool.require(1)
        _check_number("rate", rate)
        c = self.lookup.cursor(anim_set or inst.anim_set, anim_id)
        return self._take(SceneTask(c, rate, flags, tstore=self.stores.tasks))

    @_near_human
    def paired(self, inst: CharacterInstance, attacker: CharacterInstance, anim_id: AnimRef,
               next: Task | None = None, *, blend: float = 0.0, flags: int = 0, held: int = 0,
               on_end: Callable | None = None) -> PairedClipTask:
        """A type 6 task: ``anim_id`` looked up in the attacker's set, at the attacker's rate
        (its range flags there); the cursor plays on ``inst``. Original: 0x00108a78."""
        check_human("paired: attacker", attacker)
        s = attacker.anim_set
        anim_id = _ref(s, anim_id)
        on_end = check_callback(on_end, "on_end")
        self.pool.require(1)
        _check_number("blend time", blend)
        if next is not None:
            PairedClipTask.check_next(self.stores.tasks, next)   # (before the cursor is taken)
        c = self.lookup.cursor(s, anim_id)
        return self._take(PairedClipTask(c, self.lookup.rate_of(s, anim_id), attacker.handle or attacker.name,
                                         next, blend, flags, held, on_end, self.options.blend_window, tstore=self.stores.tasks))

    @_near_human
    def paired_hold(self, inst: CharacterInstance, attacker: CharacterInstance, anim_id: AnimRef, *,
                    flags: int = 0, held: int = 0, on_end: Callable | None = None) -> PairedHoldTask:
        """A type 4 task: a paired type 5. Original: 0x00108450."""
        s = attacker.anim_set
        anim_id = _ref(s, anim_id)
        on_end = check_callback(on_end, "on_end")
        self.pool.require(1)
        c = self.lookup.cursor(s, anim_id)
        return self._take(PairedHoldTask(c, self.lookup.rate_of(s, anim_id), attacker.handle or attacker.name,
                                         flags, held, on_end, tstore=self.stores.tasks))

    @_near_human
    def fade(self, inst: CharacterInstance, duration: float, *, held: int = 0) -> FadeTask:
        """A type 9 fade over ``duration`` s at the human's speed multiplier. Original: 0x00106c80."""
        self.pool.require(1)
        st = self.stores
        return self._take(FadeTask._made(st.tasks, st.fades, duration, inst.speed, held))

    @_near_human
    def gait(self, inst: CharacterInstance, ids: Sequence[AnimRef], *, target: float = 0.0,
             value: float | None = None, flags: int = int(LOCOMOTION_FLAGS),
             on_wrap: Callable | None = None, held: int = 0) -> GaitTask:
        """A type 12 gait blend over five ids, at the human's speed multiplier. Original: 0x0010a310."""
        if on_wrap is not None:
            on_wrap = check_callback(on_wrap, "on_wrap")
        pool = self.pool
        if pool.n_out >= pool.capacity:
            pool.require(1)                          # raises
        if not hasattr(ids, "__len__") or isinstance(ids, (str, bytes)) or len(ids) != 5:
            raise ValueError(f"gait blend: 5 anim ids, got {ids!r}")
        s = inst.anim_set
        known = self.lookup._entries_known(s, ids)          # ids found before (no name among them)
        if known is None:
            ids = _refs(s, ids)
            known = self.lookup._entries_known(s, ids)
            if known is None:
                self.lookup._check_ids(s, ids)              # the look-up's errors first, as before
        if not (target.__class__ is float and -F.FLT_MAX <= target <= F.FLT_MAX):
            _check_number("gait target", target, -math.inf)
        if value is not None and not (value.__class__ is float and -F.FLT_MAX <= value <= F.FLT_MAX):
            _check_number("gait value", value, -math.inf)
        entries, banks, ids, protos = known if known is not None else self.lookup._entries_of(s, ids)
        st = self.stores
        direct = self.direct_gait
        rate = inst.speed
        fl = flags if flags.__class__ is int else int(flags)
        hl = held if held.__class__ is int else int(held)
        if direct is not None and rate.__class__ is float and -_F32_MAX <= rate <= _F32_MAX \
                and _I32_LO <= fl < _I32_HI:
            # the task, gait and cursor rows in one compiled call (the same rows and columns)
            ts = st.tasks
            tg = target if target.__class__ is float else float(target)     # (checked: finite)
            v = 0.0 if value is None else value if value.__class__ is float else float(value)
            got = direct(ts.near, st.cursors.near, ids, banks, protos, GaitRow(rate, fl, hl, tg, v, int(value is None)))
            if got >= 0:
                return self._gait_handle(ts, *rows_written(got), on_wrap)
        task = GaitTask._made(st.tasks, st.gaits, ids, banks, protos, rate,
                              target if value is None else value, target, flags, held)
        if on_wrap is not None:
            task.on_wrap = on_wrap
        pool.take_row(task.trow)
        return task

    @_near_human
    def mix(self, inst: CharacterInstance, a: AnimRef, b: AnimRef, *, weight: float = 0.0,
            flags: int = 0) -> MixTask:
        """A type 10 two-clip mix at the human's speed multiplier. Original: 0x0010b090."""
        self.pool.require(1)
        s = inst.anim_set
        a, b = _ref(s, a), _ref(s, b)
        ea, eb = self.lookup._entry(s, a), self.lookup._entry(s, b)         # find: UnknownClip
        _check_number("mix weight", weight, -math.inf)
        ab = ((ea, a), (eb, b))
        cursor_of = self.lookup._cursor_of
        return self._take(MixTask._made(self.stores.tasks, lambda k, fl: cursor_of(ab[k][0], ab[k][1], fl),
                                        inst.speed, weight, flags))

    @_near_human
    def pick(self, inst: CharacterInstance, ids: Sequence[AnimRef], rate: float, *, value: float = 0.0,
             flags: int = 0) -> PickTask:
        """A type 11 four-clip task at a given rate. Original: 0x00106f50."""
        self.pool.require(1)
        s = inst.anim_set
        ids = _refs(s, ids, "type 11")
        if len(ids) != 4:
            raise ValueError(f"type 11: 4 clips, got {len(ids)}")
        entries = [self.lookup._entry(s, i) for i in ids]            # find: UnknownClip
        _check_number("rate", rate)
        _check_number("pick value", value, -math.inf)
        cursor_of = self.lookup._cursor_of
        return self._take(PickTask._made(self.stores.tasks, lambda k, fl: cursor_of(entries[k], ids[k], fl),
                                         rate, value, flags, _PICK_INDEX[self.options.pick]))

    @_near_human
    def direction(self, inst: CharacterInstance, base: AnimRef, *, direction: float = 0.0,
                  flags: int = 0) -> DirectionTask:
        """A type 13 eight-direction blend over ids base..base+7. Original: 0x00109210."""
        self.pool.require(1)
        s = inst.anim_set
        base = _ref(s, base)
        dir_ids = [base + d for d in range(8)]
        known = self.lookup._entries_known(s, dir_ids)
        if known is None:
            self.lookup._check_ids(s, dir_ids)              # the look-up's errors first, as before
        _check_number("direction", direction, -math.inf)
        entries, banks, dir_ids, protos = known if known is not None else self.lookup._entries_of(s, dir_ids)
        cs = self.stores.cursors
        return self._take(DirectionTask._made(self.stores.tasks, base, banks,
                                              lambda d, fl: cursor_row(cs, banks[d], dir_ids[d], fl, protos[d]),
                                              inst.speed, direction, flags))

    @_near_human
    def chain(self, inst: CharacterInstance, ids: Sequence[AnimRef], *, blend: float = 0.0, flags: int = 0,
              held: int = 0, paired_with: CharacterInstance | None = None,
              on_end: Callable | None = None) -> Task:
        """``play = [A, ..., Z]``: A ... Y hand over in order (type 3, or 6 when paired), Z loops.

        ``held`` goes to the first task only. All tasks are taken from the pool at once or
        none (TaskPoolExhausted leaves everything unchanged). A chain whose blend windows
        would nest more clips' poses than the pose stack holds (chain_blend_depth > 7, e.g.
        eight clips under blend=100.0) plays as the original plays it, the eighth pose
        skipped and counted when sampled (0x00104ce0); with ``refuse_deep_chains`` it is
        refused here with PoseStackOverflow instead, before any task is built.
        """
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__len__") or len(ids) == 0:
            raise ValueError(f"chain: at least one anim id, in a list (got {ids!r})")
        _check_number("blend time", blend)
        on_end = check_callback(on_end, "on_end")
        self.pool.require(len(ids))
        src = paired_with.anim_set if paired_with is not None else inst.anim_set
        ids = _refs(src, ids)
        clips = [self.lookup.find(src, i) for i in ids]             # find: UnknownClip before anything is taken
        if self.options.refuse_deep_chains and \
                (depth := chain_blend_depth([c.duration for c in clips], F.f32(float(blend)))) > POSE_STACK_SIZE:
            raise PoseStackOverflow(
                f"{inst.name}: an eighth pose: chain {list(ids)} with blend time {blend:g} s nests {depth} "
                f"clips' poses at once; the pose stack holds {POSE_STACK_SIZE}, a limit of the original "
                f"(refused, nothing changed)")
        task: Task = self.loop(inst, ids[-1], flags=flags, anim_set=src)
        if paired_with is None:
            # each clip straight from _clip_made: its next task is the one just made (ours,
            # no place, not a fade) and the blend time was checked above (Player.clip's checks)
            ts = self.stores.tasks
            window = _WINDOW_INDEX[self.options.blend_window]
            last = len(ids) - 2
            for k, anim_id in enumerate(reversed(ids[:-1])):
                first = k == last
                t = self._clip_made(ClipTask, src, anim_id, None, flags, held if first else 0,
                                    on_end if first else None)
                _next_row(ts, t.trow, task, blend, window)
                task = t
        else:
            for k, anim_id in enumerate(reversed(ids[:-1])):
                first = k == len(ids) - 2
                task = self.paired(inst, paired_with, anim_id, task, blend=blend, flags=flags,
                                   held=held if first else 0, on_end=on_end if first else None)
        if len(ids) == 1:
            task.held = int(held)
            task.on_end = on_end
        return task

