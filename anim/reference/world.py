"""The reference world: the pool, the deferred list, the stack rules and the update.

``Reference`` mirrors ``scuffle.anim.playback.player.Player``'s command surface (loop, clip, hold,
scene, paired, paired_hold, fade, gait, mix, pick, direction, chain, change, enqueue,
replace, insert_bottom, push, cut, step, flush, sample, pose) on its own instances
(``RefInstance``, ``RefRecord``), so that a test can drive both with one command list.

Per update, in the original's order (Humans_Update, "When a clip ends" L314):
    ref.step(instances)     run the queues, advance the stacks, hand over, fire events
    ref.sample(instances)   every pose (anim.reference.pose)
    ref.flush()             release what ended, refresh the playing anim ids
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.clip import EventType
from scuffle.anim.base.enums import EventRule, HeldFlags, HeldRelease, MotionEntry, PlaceEvents, TaskType
from scuffle.anim.base.errors import (POOL_SIZE, POSE_STACK_SIZE, QUEUE_SIZE, STACK_SIZE, AnimLimitError, PoseStackOverflow, QueueFull,
                      StaleHandle, StackFull, TaskPoolExhausted, UnknownClip)
from scuffle.anim.data.options import PlayerOptions
from scuffle.anim.maths.skeleton import HUMANOID, NUM_BONES
from scuffle.anim.base.recipedata import RecipeError
from scuffle.anim.reference.commands import RefCommand, run_columns, run_command
from scuffle.anim.reference.cursor import RefCursor
from scuffle.anim.reference.handlers import RefCallbacks, plain_callback
from scuffle.anim.reference.tasks import (RefClip, RefDirection, RefFade, RefGait, RefHold, RefLoop, RefMix, RefPairedClip,
                    RefPairedHold, RefPick, RefScene, RefTask)

__all__ = ["Reference", "RefInstance", "RefRecord", "RefPool", "RefBones", "RefPoseArrays"]

# "Tasks" held-flag events (L402): (bits that must be held, bits cleared, bits set).
_HELD_EVENTS = {
    int(EventType.HELD_OPEN): (0x1 | 0x2, 0x1, 0x2),      # 0x2c: clear 0x1, set 0x2
    int(EventType.HELD_CLOSE): (0x7, 0x7, 0x4),           # 0x2d: clear 0x7, set 0x4
}


class RefRecord:
    """The human's record: flags +0x08 (the held / state word) and the playing anim id +0x20."""

    def __init__(self, flags: int = 0, anim_id: int = -1):
        self.flags = int(flags)
        self.anim_id = int(anim_id)


class RefInstance:
    """One character (CharacterInstance, L253): a stack of up to 18 tasks (bottom first), a
    queue of up to 10, its record, its anim set, its speed multiplier (+0x3a4, the
    blends' rate), the events fired this update and the ids the last flush released."""

    # The game's systems test these two of the engine's instance (its events kept as rows
    # until read); the reference keeps its events as a plain list.
    _event_rows = None

    def __init__(self, anim_set, name: str = "", speed: float = 1.0, flags: int = 0, handle=None, record=None):
        self.name = name
        self.anim_set = anim_set
        self.speed = float(speed)
        self.record = record if record is not None else RefRecord(flags)
        self.handle = handle
        self.stack: list[RefTask] = []
        self.queue: list[RefTask] = []
        self.events: list = []
        self.released: list[int] = []
        self.on_report: Callable | None = None
        self.poses_refused = 0

    @property
    def _events(self) -> list:
        return self.events

    def clear_events(self) -> None:
        self.events = []

    def __repr__(self) -> str:
        return f"RefInstance({self.name!r}, stack={[type(t).__name__ for t in self.stack]})"


class RefPool:
    """The free list of 360 tasks (L197, 0x001048a0 / 0x001054c8 / 0x00105510): a count."""

    def __init__(self, capacity: int = POOL_SIZE):
        if capacity < 1:
            raise ValueError(f"task pool capacity {capacity} must be >= 1")
        self.capacity = int(capacity)
        self.out: list[RefTask] = []

    @property
    def in_use(self) -> int:
        return len(self.out)

    def require(self, n: int) -> None:
        if self.capacity - len(self.out) < n:
            raise TaskPoolExhausted(f"task pool exhausted: {n} needed, "
                                    f"{self.capacity - len(self.out)} of {self.capacity} free")

    def take(self, task: RefTask) -> RefTask:
        self.require(1)
        self.out.append(task)
        return task

    def give_back(self, task: RefTask) -> bool:
        for i, t in enumerate(self.out):
            if t is task:
                del self.out[i]
                task.gone = True            # back in the free list: it can have no place now
                return True
        return False


def _live(task, where: str, none: bool = True) -> None:
    """StaleHandle for a task that went back to the pool (it can have no place now);
    ValueError for anything that is not a task (None too, unless ``none``)."""
    if task is None and none:
        return
    if not isinstance(task, RefTask):
        raise ValueError(f"{where}: {task!r} is not a task (make one with the constructors: clip, loop, gait, ...)")
    if getattr(task, "gone", False):
        raise StaleHandle(f"{where}: {type(task).__name__} (anim id {task.anim_id()}) went back to the pool "
                          "(a task made and never placed goes back at the end of its update)")


def _id(anim_set, anim_id):
    """An anim id: a clip name as its id in ``anim_set`` (its own refusal for an unknown one)."""
    return anim_set.id_of(anim_id) if isinstance(anim_id, str) else anim_id


def _id_list(anim_set, ids, what: str) -> list:
    """``ids`` as anim ids (``_id`` of each). ValueError naming ``what`` unless ``ids`` is a
    list of anim ids or clip names (a sequence, not a string)."""
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__len__") or not hasattr(ids, "__getitem__"):
        raise ValueError(f"{what}: {ids!r} is not a list of anim ids or clip names")
    return [_id(anim_set, i) for i in ids]


_BITS = {"flags": (-(1 << 31), (1 << 31) - 1), "held": (-(1 << 63), (1 << 63) - 1)}   # the tables' int32, int64
_MAX_DT = 1.0             # a step's longest dt, seconds (the engine's: anim.base.limits.MAX_DT)


def _human(call: str, inst) -> None:
    """ValueError naming the call unless ``inst`` is a human (a RefInstance)."""
    if not isinstance(inst, RefInstance):
        raise ValueError(f"{call}: {inst!r} is not a human (a CharacterInstance)")


def _humans(call: str, instances) -> list:
    """``instances`` as a list of humans (ValueError naming the call for anything else)."""
    if isinstance(instances, (str, bytes, RefInstance)) or not hasattr(instances, "__iter__"):
        raise ValueError(f"{call}: {instances!r} is not a list of humans")
    listed = list(instances)
    for inst in listed:
        _human(call, inst)
    return listed


def _constructor(make):
    """A constructor's own checks first: its human, its ``flags`` and ``held`` (whole
    numbers the engine's columns hold), an ``anim_set`` (a set of clips), a
    ``paired_with`` (a human); ValueError naming each."""
    name = make.__name__

    def made(self, inst, *args, **kwargs):
        _human(name, inst)
        for key in ("flags", "held"):
            if key in kwargs:
                v = kwargs[key]
                lo, hi = _BITS[key]
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
                    raise ValueError(f"{name}: {key} {v!r} must be a whole number from {lo} to {hi}")
                kwargs[key] = int(v)
        s = kwargs.get("anim_set")
        if s is not None and not (callable(getattr(s, "clip", None)) and callable(getattr(s, "range", None))):
            raise ValueError(f"{name}: anim_set {s!r} is not an AnimSet")
        w = kwargs.get("paired_with")
        if w is not None:
            _human(f"{name}: paired_with", w)
        return make(self, inst, *args, **kwargs)
    made.__name__, made.__qualname__, made.__doc__ = make.__name__, make.__qualname__, make.__doc__
    made.__wrapped__ = make                           # (inspect.signature shows the constructor's own)
    return made


def _number(what: str, value, low: float = 0.0) -> float:
    """A constructor's number: finite as a float32 and >= ``low`` (ValueError naming it)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {value!r} must be a number") from None
    if not (math.isfinite(F.f32(v)) and v >= low):
        raise ValueError(f"{what} {value!r} must be finite (a float32) and >= {low:g}")
    return v


def _nest_depth(durations: Sequence[float], window: Sequence[float]) -> int:
    """The most clips a chain's blend windows sample at once (the pose stack of seven, L257)."""
    best = 1
    for i in range(len(durations) - 1):
        depth, t, j = 1, window[i], i + 1
        if t <= 0.0:
            continue
        depth += 1
        while window[j] > 0.0 and t > durations[j] - window[j]:
            t -= durations[j] - window[j]
            j += 1
            depth += 1
        best = max(best, depth)
    return best


class Reference:
    """The reference animation system of one world (see the module docstring).

    In: PlayerOptions (``batched`` is ignored: there is one path). Shares no state with
    any Player: its tasks, cursors, pool and deferred list are its own objects.
    """

    def __init__(self, options: PlayerOptions | None = None, skeleton=None):
        self.options = options or PlayerOptions()
        self.skeleton = skeleton if skeleton is not None else HUMANOID
        self.pool = RefPool(self.options.pool_size)
        self.deferred: list[tuple[RefTask, RefInstance]] = []
        self.refused: list[tuple[RefInstance, AnimLimitError]] = []
        self._stepped: list[RefInstance] = []
        self._leaving: list = []            # forgotten with tasks to release: records given back at the flush
        self._wraps: list = []                     # this step's wraps with a callback
        # the handlers the callbacks (data: anim.engine.callbacks.Callback) name
        self.callbacks = RefCallbacks()
        # id(clip) -> (clip, its channels): each clip decoded once, when first sampled
        # ("Notes for implementers" L406: decode a clip into channels of keys at load)
        self.decoded_clips: dict = {}
        # the humans named by row (rows_of, commands_at): row -> human (None: it left), each
        # row's generation (counted up when its human leaves), the free rows
        self._seats: list = []
        self._seat_gens: list[int] = []
        self._free_seats: list[int] = []

    # ---------------------------------------------------------------- clips and rates
    def find(self, anim_set, anim_id: int):
        """The clip an id (or a clip name) names (0x00175080 CharacterInstance_GetAnim);
        UnknownClip for none."""
        clip = anim_set.clip(anim_id)
        if clip is None:
            raise UnknownClip(f"anim id {anim_id}: no clip in set {getattr(anim_set, 'name', '?')!r}")
        return clip

    def rate_of(self, anim_set, anim_id: int) -> float:
        """"Playback rate" L294: CfgAnimSpeeds by the id's range flags (0x00104a38)."""
        return self.options.speeds.rate_for(int(anim_set.range(_id(anim_set, anim_id)).flags))

    def cursor(self, anim_set, anim_id: int, flags: int = 0) -> RefCursor:
        return RefCursor(self.find(anim_set, anim_id), _id(anim_set, anim_id), flags,
                         self.options.place_events == PlaceEvents.FIRED)

    # ---------------------------------------------------------------- constructors
    @_constructor
    def loop(self, inst, anim_id, *, flags=0, held=0, rate=None, on_wrap=None, on_end=None, anim_set=None):
        """Type 1 (0x00105678)."""
        on_end = plain_callback(on_end, "on_end")
        on_wrap = plain_callback(on_wrap, "on_wrap")
        s = anim_set or inst.anim_set
        self.pool.require(1)
        r = self.rate_of(s, anim_id) if rate is None else _number("rate", rate)
        return self.pool.take(RefLoop(self.cursor(s, anim_id), r, flags, held, on_end, on_wrap))

    @_constructor
    def clip(self, inst, anim_id, next=None, *, blend=0.0, flags=0, held=0, rate=None, on_end=None, anim_set=None):
        """Type 3 (0x00105990)."""
        on_end = plain_callback(on_end, "on_end")
        _live(next, "next")
        s = anim_set or inst.anim_set
        self.pool.require(1)
        _number("blend time", blend)
        r = self.rate_of(s, anim_id) if rate is None else _number("rate", rate)
        task = self.pool.take(RefClip(self.cursor(s, anim_id), r, next, blend, flags, held, on_end,
                                      self.options.blend_window))
        return task

    @_constructor
    def hold(self, inst, anim_id, *, flags=0, held=0, on_end=None):
        """Type 5 (0x00106140, ours)."""
        on_end = plain_callback(on_end, "on_end")
        self.pool.require(1)
        c = self.cursor(inst.anim_set, anim_id)
        return self.pool.take(RefHold(c, self.rate_of(inst.anim_set, anim_id), flags, held, on_end))

    @_constructor
    def scene(self, inst, anim_id, rate, *, flags=0, anim_set=None):
        """Type 7 (0x001069c0) at the scene's rate."""
        self.pool.require(1)
        _number("rate", rate)
        return self.pool.take(RefScene(self.cursor(anim_set or inst.anim_set, anim_id), rate, flags))

    @_constructor
    def paired(self, inst, attacker, anim_id, next=None, *, blend=0.0, flags=0, held=0, on_end=None):
        """Type 6 (0x00108a78, L240-243): the id looked up in the attacker's set, at its rate."""
        on_end = plain_callback(on_end, "on_end")
        _live(next, "next")
        _human("paired: attacker", attacker)
        s = attacker.anim_set
        self.pool.require(1)
        _number("blend time", blend)
        c = self.cursor(s, anim_id)
        task = self.pool.take(RefPairedClip(c, self.rate_of(s, anim_id), attacker.handle or attacker.name,
                                            next, blend, flags, held, on_end, self.options.blend_window))
        return task

    def paired_hold(self, inst, attacker, anim_id, *, flags=0, held=0, on_end=None):
        """Type 4 (0x00108450)."""
        on_end = plain_callback(on_end, "on_end")
        s = attacker.anim_set
        self.pool.require(1)
        c = self.cursor(s, anim_id)
        return self.pool.take(RefPairedHold(c, self.rate_of(s, anim_id), attacker.handle or attacker.name,
                                            flags, held, on_end))

    @_constructor
    def fade(self, inst, duration, *, held=0):
        """Type 9 (0x00106c80) at the human's speed multiplier (L295)."""
        self.pool.require(1)
        try:
            fine = duration >= 0.0 and math.isfinite(duration)
        except TypeError:                           # not a number
            fine = False
        if not fine:
            raise ValueError(f"fade time {duration!r} must be finite and >= 0")
        return self.pool.take(RefFade(duration, inst.speed, held))

    @_constructor
    def gait(self, inst, ids, *, target=0.0, value=None, flags=0x2C1, on_wrap=None, held=0):
        """Type 12 (0x0010a310) at the human's speed multiplier."""
        on_wrap = plain_callback(on_wrap, "on_wrap")
        self.pool.require(1)
        s = inst.anim_set
        ids = _id_list(s, ids, "gait blend")
        if len(ids) != 5:
            raise ValueError(f"gait blend: 5 anim ids, got {len(ids)}")
        for i in ids:
            self.find(s, i)
        _number("gait target", target, -math.inf)
        if value is not None:
            _number("gait value", value, -math.inf)
        return self.pool.take(RefGait(ids, lambda i: self.cursor(s, i), inst.speed,
                                      value=target if value is None else value, target=target, flags=flags,
                                      on_wrap=on_wrap, held=held))

    @_constructor
    def mix(self, inst, a, b, *, weight=0.0, flags=0):
        """Type 10 (0x0010b090) at the human's speed multiplier."""
        self.pool.require(1)
        s = inst.anim_set
        self.find(s, a)
        self.find(s, b)
        _number("mix weight", weight, -math.inf)
        return self.pool.take(RefMix(self.cursor(s, a), self.cursor(s, b), inst.speed, weight, flags))

    @_constructor
    def pick(self, inst, ids, rate, *, value=0.0, flags=0):
        """Type 11 (0x00106f50) at a given rate."""
        self.pool.require(1)
        s = inst.anim_set
        ids = _id_list(s, ids, "type 11")
        if len(ids) != 4:
            raise ValueError(f"type 11: 4 clips, got {len(ids)}")
        for i in ids:
            self.find(s, i)
        _number("rate", rate)
        _number("pick value", value, -math.inf)
        return self.pool.take(RefPick([self.cursor(s, i) for i in ids], rate, value, flags,
                                      sampling=self.options.pick))

    @_constructor
    def direction(self, inst, base, *, direction=0.0, flags=0):
        """Type 13 (0x00109210) over ids base..base+7."""
        self.pool.require(1)
        s = inst.anim_set
        base = _id(s, base)
        if isinstance(base, bool) or not isinstance(base, (int, np.integer)):
            self.find(s, base)                      # not an id: the set's own refusal (UnknownAnimId)
        for d in range(8):
            self.find(s, base + d)
        _number("direction", direction, -math.inf)
        return self.pool.take(RefDirection(base, lambda i: self.cursor(s, i), inst.speed, direction, flags))

    @_constructor
    def chain(self, inst, ids, *, blend=0.0, flags=0, held=0, paired_with=None, on_end=None):
        """``play = [A, ..., Z]``: A ... Y hand over in order (type 3, or 6 paired), Z loops;
        all tasks taken at once or none. ``held`` and ``on_end`` go to the first task."""
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__len__") or len(ids) == 0:
            raise ValueError(f"chain: at least one anim id, in a list (got {ids!r})")
        on_end = plain_callback(on_end, "on_end")
        _number("blend time", blend)
        self.pool.require(len(ids))
        src = paired_with.anim_set if paired_with is not None else inst.anim_set
        clips = [self.find(src, i) for i in ids]
        b = F.f32(float(blend))
        if self.options.refuse_deep_chains and len(ids) > 1 and b > 0.0:
            ds = [c.duration for c in clips]
            depth = _nest_depth(ds, [min(b, ds[i + 1]) for i in range(len(ds) - 1)] + [0.0])
            if depth > POSE_STACK_SIZE:
                raise PoseStackOverflow(f"{inst.name}: an eighth pose: chain {list(ids)} nests {depth} clips' "
                                        f"poses; the pose stack holds {POSE_STACK_SIZE} (refused, nothing changed)")
        task = self.loop(inst, ids[-1], flags=flags, anim_set=src)
        for k, anim_id in enumerate(reversed(ids[:-1])):
            first = k == len(ids) - 2
            if paired_with is not None:
                task = self.paired(inst, paired_with, anim_id, task, blend=blend, flags=flags,
                                   held=held if first else 0, on_end=on_end if first else None)
            else:
                task = self.clip(inst, anim_id, task, blend=blend, flags=flags,
                                 held=held if first else 0, on_end=on_end if first else None)
        if len(ids) == 1:
            task.held = int(held)
            task.on_end = on_end
        return task

    # ---------------------------------------------------------------- the stack (L251-259)
    @staticmethod
    def top(inst) -> RefTask | None:
        """0x00175210: the top task, or the bottom one when the top is a fade."""
        _human("top", inst)
        if not inst.stack:
            return None
        t = inst.stack[-1]
        return inst.stack[0] if t.type == TaskType.FADE else t

    @staticmethod
    def running(inst, ttype: int) -> RefTask | None:
        """The newest unreleased task of type ``ttype`` on the stack (nearest the bottom: a
        change inserts its new task there), or None (Player.running)."""
        _human("running", inst)
        try:
            ttype = TaskType(ttype)
        except (TypeError, ValueError):
            raise ValueError(f"running: {ttype!r} is not a task type (TaskType)") from None
        for t in inst.stack:
            if t.type == ttype and not t.released:
                return t
        return None

    def refresh_anim_id(self, inst) -> None:
        """0x001752c8: the top task's id into record +0x20 (-1 with none)."""
        t = self.top(inst)
        inst.record.anim_id = -1 if t is None else t.anim_id()

    def _pose_depth(self, task) -> int:
        seq = [task]
        while isinstance(seq[-1], RefClip) and seq[-1].next is not None and len(seq) <= POSE_STACK_SIZE + 1:
            seq.append(seq[-1].next)
        if len(seq) < 2:
            return 1
        return _nest_depth([t.duration() for t in seq],
                           [t.window() if isinstance(t, RefClip) else 0.0 for t in seq[:-1]] + [0.0])

    def _check_fits_poses(self, inst, task) -> None:
        if self.options.refuse_deep_chains and self._pose_depth(task) > POSE_STACK_SIZE:
            raise PoseStackOverflow(f"{inst.name or 'human'}: an eighth pose: the task's blend windows nest "
                                    f"more than {POSE_STACK_SIZE} clips' poses (refused, nothing changed)")

    @staticmethod
    def _newest_fade(stack) -> RefFade | None:
        """0x00177eb8: the newest (highest) fade on ``stack`` not yet released, or None."""
        for t in reversed(stack):
            if t.type == TaskType.FADE and not t.released:
                return t
        return None

    @staticmethod
    def _fade_span(stack, fade) -> slice:
        """L267: what a fade's end takes off ``stack``: itself and every task between its new
        task and itself (from the bottom when its new task is no longer on it)."""
        below = [k for k, t in enumerate(stack) if t is fade.incoming]
        top = next(k for k, t in enumerate(stack) if t is fade)
        return slice(below[0] + 1 if below else 0, top + 1)

    def _early_finish(self, inst) -> None:
        """L255: with more than 6 tasks, the newest fade is finished by its remaining time."""
        if len(inst.stack) > self.options.early_finish_above:
            fade = self._newest_fade(inst.stack)
            if fade is not None:
                fade.finish_early(self, inst)

    def _put(self, inst, task, at: int | None) -> None:
        _live(task, "the stack", none=False)
        self._check_fits_poses(inst, task)
        self._early_finish(inst)
        if len(inst.stack) >= STACK_SIZE:
            raise StackFull(f"{inst.name or 'human'}: the task stack already holds {STACK_SIZE} tasks")
        if at is None:
            inst.stack.append(task)
        else:
            inst.stack.insert(at, task)
        task.placed = True
        if task.held:
            inst.record.flags |= task.held          # L237: the caller sets them as it pushes

    def insert_bottom(self, inst, task) -> None:
        """0x001754e8: under the stack, then the anim id refresh."""
        _human("insert_bottom", inst)
        self._put(inst, task, 0)
        self.refresh_anim_id(inst)

    def push(self, inst, task) -> None:
        """0x001753d8: on top of the stack, then the anim id refresh."""
        _human("push", inst)
        self._put(inst, task, None)
        self.refresh_anim_id(inst)

    def _change_fits(self, inst, task) -> bool:
        """L259 tried on a copy of the stack: the two moves of a change (the new task under
        the stack, then the fade on top) each first finish the newest fade early (L255:
        it and the tasks its end takes go) when more than ``early_finish_above`` tasks are
        on, then need one of the 18 slots free. Nothing of ``inst`` is changed."""
        trial = list(inst.stack)
        for move in ("insert_bottom", "push"):
            if len(trial) > self.options.early_finish_above:
                fade = self._newest_fade(trial)
                if fade is not None:
                    del trial[self._fade_span(trial, fade)]
            if len(trial) >= STACK_SIZE:
                return False
            if move == "insert_bottom":
                trial.insert(0, task)
        return True

    def change(self, inst, task, fade: float = 0.0) -> RefFade:
        """L259: make a fade, insert the new task at the bottom, push the fade on top
        (the stack is then new, old..., fade). Refused before any change (the task given
        back): no task for the fade, no room, a bad fade time."""
        _human("change", inst)
        _live(task, "change", none=False)
        try:
            self._check_fits_poses(inst, task)
            self.pool.require(1)
            _number("fade time", fade)
            if not self._change_fits(inst, task):
                raise StackFull(f"{inst.name or 'human'}: no room for a change "
                                f"({len(inst.stack)} of {STACK_SIZE} tasks)")
            f = self.fade(inst, fade)
        except Exception:
            self.discard(task)
            raise
        f.incoming = task
        self._put(inst, task, 0)
        self._put(inst, f, None)
        self.refresh_anim_id(inst)
        return f

    # ---------------------------------------------------------------- prepared commands
    def prepare(self, recipe) -> RefCommand:
        """A recipe (anim.base.recipedata.Recipe, plain data) checked by the reference's own rules
        (anim.reference.commands): its RefCommand (Player.prepare's). RecipeError names the field."""
        return RefCommand(recipe)

    def run(self, inst, command, *params) -> None:
        """A prepared command (a RefCommand, or the engine's Command: its recipe is read)
        run as this engine's own constructors and stack rules (anim.reference.commands: the
        pool checked first, the tasks made last first, then placed; a refusal gives back
        what was made). Nothing of the Player's is read or written."""
        run_command(self, inst, command, params)

    def commands(self, commands, humans, args=None) -> None:
        """Prepared commands as columns (Player.commands): each row run as ``run`` runs it,
        in order (anim.reference.commands.run_columns: the columns checked first, a refused
        row raising with ``row`` set, the rows after it not run)."""
        run_columns(self, commands, humans, args)

    def rows_of(self, humans) -> tuple[np.ndarray, np.ndarray]:
        """Each human's row and generation (Player.rows_of): the reference keeps no table, so
        a row is a number it gives a human when first named here, until the human leaves
        (``forget``: the generation counts up). RecipeError for anything but a RefInstance."""
        n = len(humans)
        rows = np.empty(n, np.int64)
        gens = np.empty(n, np.int64)
        for i, inst in enumerate(humans):
            if not isinstance(inst, RefInstance):
                raise RecipeError(f"rows_of: humans[{i}] must be a CharacterInstance, got {type(inst).__name__}")
            r = next((k for k, held in enumerate(self._seats) if held is inst), None)
            if r is None:
                if self._free_seats:
                    r = self._free_seats.pop()
                else:
                    r = len(self._seats)
                    self._seats.append(None)
                    self._seat_gens.append(0)
                self._seats[r] = inst
            rows[i] = r
            gens[i] = self._seat_gens[r]
        return rows, gens

    @staticmethod
    def _whole_columns(rows, gens, n, call, per) -> list[list[int]]:
        """``rows`` and ``gens`` as two lists of ``n`` ints (RecipeError naming the field)."""
        cols = []
        for what, col in (("rows", rows), ("gens", gens)):
            try:
                v = np.asarray(col)
            except (TypeError, ValueError):
                v = None
            if v is None or v.shape != (n,) or not (v.dtype.kind in "iu" or (n == 0 and v.dtype.kind == "f")) \
                    or (v.dtype.kind == "u" and n and int(v.max()) >= 1 << 63):
                raise RecipeError(f"{call}: {what} must be {n} whole numbers, one per {per}")
            cols.append([int(x) for x in v.tolist()])
        return cols

    def _held_seats(self, cols) -> list:
        """The humans the rows name, up to the first row whose generation is stale or that
        no human holds."""
        humans = []
        for r, g in zip(*cols):
            if not (0 <= r < len(self._seats) and self._seats[r] is not None and self._seat_gens[r] == g):
                break
            humans.append(self._seats[r])
        return humans

    @staticmethod
    def _stale(call, bad, cols, done) -> StaleHandle:
        """The refusal of row ``bad``: StaleHandle naming it and its human row, ``row`` set."""
        exc = StaleHandle(f"{call}: row {bad}: human row {cols[0][bad]} does not hold generation "
                          f"{cols[1][bad]} (its human left, or the row holds another now)")
        exc.row = bad                          # type: ignore[attr-defined]
        exc.add_note(f"{call}: row {bad} (of the batch) was refused; the rows before it were {done}")
        return exc

    def commands_at(self, commands, rows, gens, args=None) -> None:
        """Prepared commands with the humans named by row and generation (Player.commands_at):
        the columns checked first (RecipeError naming the field), then the rows up to the
        first whose generation is stale run as ``commands`` runs them; that one raises
        StaleHandle naming it, with ``row`` set."""
        n = len(commands)
        cols = self._whole_columns(rows, gens, n, "commands_at", "command")
        if n == 0:
            return
        if args is not None:
            try:
                table = np.asarray(args, dtype=np.float64)
            except (TypeError, ValueError):
                raise RecipeError("commands: args must be rows of numbers (a 2-D array, one row per command)") \
                    from None
            if table.ndim != 2 or table.shape[0] != n:
                raise RecipeError(f"commands: args must be a 2-D array of {n} rows, got shape {table.shape}")
        humans = self._held_seats(cols)
        bad = len(humans)
        if bad:
            run_columns(self, list(commands[:bad]), humans, None if args is None else table[:bad])
        if bad < n:
            raise self._stale("commands_at", bad, cols, "run")

    def set_gait_targets(self, humans, targets) -> np.ndarray:
        """Each human's running gait (``running``) given its target, row after row, as its
        ``set_target`` (Player.set_gait_targets): a bool per row, True where a gait took it.
        RecipeError for targets that are not one number per human; a target a gait refuses
        raises with ``row`` set (the rows before it done)."""
        n = len(humans)
        try:
            values = np.asarray(targets, dtype=np.float64)
        except (TypeError, ValueError):
            raise RecipeError(f"set_gait_targets: targets must be {n} numbers, one per human") from None
        if values.shape != (n,):
            raise RecipeError(f"set_gait_targets: targets must be {n} numbers, one per human, got shape "
                              f"{values.shape}")
        moved = np.zeros(n, np.bool_)
        for i, (inst, v) in enumerate(zip(humans, values.tolist())):
            gait = self.running(inst, TaskType.GAIT)
            if not isinstance(gait, RefGait):
                continue
            try:
                gait.set_target(v)
            except Exception as exc:
                exc.row = i                    # type: ignore[attr-defined]
                exc.add_note(f"set_gait_targets: row {i} (of the batch) was refused; the rows before it were done")
                raise
            moved[i] = True
        return moved


    def set_gait_targets_at(self, rows, gens, targets) -> np.ndarray:
        """The running gaits' new targets with the humans named by row and generation
        (Player.set_gait_targets_at): the columns checked first (RecipeError naming the
        field), then the rows up to the first whose generation is stale done as
        ``set_gait_targets`` does them; that one raises StaleHandle naming it, ``row`` set."""
        try:
            values = np.asarray(targets, dtype=np.float64)
        except (TypeError, ValueError):
            raise RecipeError("set_gait_targets_at: targets must be numbers, one per row") from None
        if values.ndim != 1:
            raise RecipeError(f"set_gait_targets_at: targets must be numbers, one per row, got shape {values.shape}")
        n = values.shape[0]
        cols = self._whole_columns(rows, gens, n, "set_gait_targets_at", "target")
        humans = self._held_seats(cols)
        bad = len(humans)
        moved = np.zeros(n, np.bool_)
        if bad:
            try:
                moved[:bad] = self.set_gait_targets(humans, values[:bad])
            except Exception as exc:
                notes = getattr(exc, "__notes__", None)
                if notes:                      # the note names this call
                    notes[-1] = notes[-1].replace("set_gait_targets:", "set_gait_targets_at:")
                raise
        if bad < n:
            raise self._stale("set_gait_targets_at", bad, cols, "done")
        return moved
    def enqueue(self, inst, task) -> None:
        """Queue a task to start at the next step (+0x304, at most 10)."""
        _human("enqueue", inst)
        _live(task, "enqueue", none=False)
        if len(inst.queue) >= QUEUE_SIZE:
            raise QueueFull(f"{inst.name or 'human'}: the task queue already holds {QUEUE_SIZE} tasks")
        inst.queue.append(task)
        task.placed = True

    def _owner_of(self, inst, task) -> RefClip:
        todo = list(inst.stack)
        while todo:
            t = todo.pop()
            if isinstance(t, RefClip) and t.next is task and not t.handed_over:
                return t
            todo.extend(t.following())
        raise LookupError(f"{inst.name or 'human'}: {task!r} is neither on the stack nor a next task")

    def replace(self, inst, old, new) -> None:
        """A hand-over (L313): ``new`` takes ``old``'s place (on the stack, or as its owner's
        next task when ``old`` ended inside a blend window); ``old`` is deferred."""
        new.placed = True
        if not any(t is old for t in inst.stack):
            self._owner_of(inst, old).next = new
            self.defer(inst, old)
            return
        i = next(k for k, t in enumerate(inst.stack) if t is old)
        inst.stack[i] = new
        for t in inst.stack:
            if t.type == TaskType.FADE and t.incoming is old:
                t.incoming = new
        self.defer(inst, old)

    def complete_fade(self, inst, fade) -> None:
        """L267: the fade gives back itself and every task between the new one and itself."""
        if fade.released or not any(t is fade for t in inst.stack):
            return
        span = self._fade_span(inst.stack, fade)
        gone = inst.stack[span]
        del inst.stack[span]
        for t in gone:
            self.defer(inst, t)

    def cut(self, inst) -> None:
        """Every task off the stack onto the deferred list; the queue given back."""
        gone = inst.stack[:]
        inst.stack.clear()
        for t in gone:
            self.defer(inst, t)
        for t in inst.queue:
            self.discard(t)
        inst.queue.clear()

    def defer(self, inst, task) -> None:
        """AnimTask_DeferGive (0x00105640, L314)."""
        if not task.released:
            task.released = True
            self.deferred.append((task, inst))

    def discard(self, task) -> None:
        """Back to the pool without a release, with the next tasks it owns (L316)."""
        for t in task.following():
            self.discard(t)
        self.pool.give_back(task)

    # ---------------------------------------------------------------- per update
    def step(self, instances, dt: float | None = None) -> None:
        """Every character's animation step: its queue once (0x00175610), then its stack
        advanced bottom-up (the +0x64 calls); hand-overs, fades, events, held flags."""
        raw = self.options.dt if dt is None else dt
        if isinstance(raw, bool) or not isinstance(raw, (int, float, np.integer, np.floating)) \
                or not 0.0 <= float(raw) <= _MAX_DT:        # (NaN fails it too)
            raise ValueError(f"step: dt {raw!r} must be a number from 0 to {_MAX_DT:g} s")
        dt = F.f32(float(raw))
        instances = _humans("step", instances)
        self.give_back_unplaced()
        self.refused = []
        self._wraps = []
        for inst in instances:
            self.step_one(inst, dt)
            if not any(x is inst for x in self._stepped):
                self._stepped.append(inst)
        # the wrap callbacks, after every human stepped, in step order; the first
        # exception is raised once they all ran
        wraps, self._wraps = self._wraps, []
        failed = None
        for inst, task in wraps:
            try:
                self.callbacks.call(task.on_wrap, inst)
            except Exception as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    def give_back_unplaced(self) -> int:
        """The end of the update that made them: every task out of the pool with no place (no
        stack, queue or owner) that is not on the deferred list goes back with the next
        tasks it owns, without a release (it never played). Ours: the original's callers
        place every task they make (docs/original.md, "The stack, the queue and the pool").
        Out: how many went back."""
        before = self.pool.in_use
        for task in [t for t in self.pool.out if not t.placed and not t.released]:
            self.discard(task)
        return before - self.pool.in_use

    def wrapped(self, inst, task) -> None:
        """A task with a wrap callback wrapped: noted, called at the end of the step."""
        self._wraps.append((inst, task))

    def step_one(self, inst, dt: float) -> None:
        inst.events = []
        inst.released = []
        if inst.queue:
            queued = inst.queue[:]
            inst.queue.clear()
            for t in queued:
                try:
                    t.start(self, inst)
                except AnimLimitError as exc:
                    self.refused.append((inst, exc))
        newest = self.top(inst) if self.options.events == EventRule.NEWEST else None
        for task in inst.stack[:]:
            if task.released:
                continue
            sink = inst.events if newest is None or task is newest else None
            n0 = len(inst.events)
            task.advance(self, inst, dt, sink)
            for fe in inst.events[n0:]:
                self._held_event(inst, fe)

    def _held_event(self, inst, fe) -> None:
        """L402: events 0x2c, 0x2d and 0x48 act only on a task that holds the bits they change."""
        et, task = fe.event.type, fe.task
        if et in _HELD_EVENTS:
            need, clear, setb = _HELD_EVENTS[et]
            if task.held & need:
                task.held = (task.held & ~clear) | setb
                self._clear_flags(inst, clear, task)
                inst.record.flags |= setb
        elif et == EventType.HELD_REPLACE and task.held:
            old = task.held
            task.held = int(HeldFlags.REPLACED)
            self._clear_flags(inst, old, task)
            inst.record.flags |= task.held

    def _clear_flags(self, inst, bits: int, task) -> None:
        """L402: clear ``bits`` but not those another task on the stack holds."""
        others = 0
        for t in inst.stack:
            if t is not task and not t.released:
                others |= t.held
        inst.record.flags &= ~(bits & ~others)

    def write_commands(self) -> None:
        """Nothing waits: the reference writes each command at its call
        (Player.write_commands)."""

    def flush(self, listed: bool = True) -> list:
        """AnimTask_FlushDeferred (0x00105570, L314): release every deferred task, then
        refresh the playing anim ids of the humans with a release and of those stepped.
        A callback's exception is raised after the whole flush. Out: the humans with a
        release (Player.flush's; ``listed`` is taken for its signature, the list is made)."""
        touched: list = []
        failed = None
        while self.deferred:
            batch, self.deferred = self.deferred, []
            for task, inst in batch:
                if not any(x is inst for x in touched):
                    touched.append(inst)
                try:
                    self._release(inst, task)
                except Exception as exc:
                    failed = failed or exc
        for inst in touched + [i for i in self._stepped if not any(x is i for x in touched)]:
            self.refresh_anim_id(inst)
        self._stepped = []
        leaving, self._leaving = self._leaving, []
        for inst in leaving:
            inst.record.release()
        if failed is not None:
            raise failed
        return touched

    def _release(self, inst, task) -> None:
        """L314: types 3 and 6 clear state flag 0x4000000000; every release clears the held
        flags the task still holds (every one, L314, or with ``held_release="coney"`` not
        those another task holds, L402), reports 0x400000, runs the end callback (also when
        cut off) and gives back the next task of one cut off.
        Original: 0x00105f78, 0x00108f10, 0x00106ee8."""
        if isinstance(task, RefClip):
            inst.record.flags &= ~int(HeldFlags.ANIM_STATE)
        held = task.held
        if held:
            if self.options.held_release == HeldRelease.ORIGINAL:
                inst.record.flags &= ~held               # L314: no test of other tasks (0x00105f78)
            else:
                self._clear_flags(inst, held, task)      # L402: Coney's
            task.held = 0
        inst.released.append(task.anim_id())
        try:
            if held & HeldFlags.REPORT and inst.on_report is not None:
                self.callbacks.call(inst.on_report, inst)
            if task.on_end is not None:
                self.callbacks.call(task.on_end, inst)
        finally:
            self.discard(task)

    def update(self, instances, dt: float | None = None):
        """step, sample and flush; returns the poses."""
        self.step(instances, dt)
        poses = self.sample(instances)
        self.flush()
        return poses

    def tasks_out(self, instances) -> int:
        """Tasks held by the instances (stacks, queues, next tasks) and the deferred list."""
        seen: set[int] = set()              # the tasks' ids (a task is counted once, by identity)

        def walk(t):
            if id(t) in seen:
                return
            seen.add(id(t))
            for n in t.following():
                walk(n)

        for inst in instances:
            for t in inst.stack + inst.queue:
                walk(t)
        for t, _ in self.deferred:
            walk(t)
        return len(seen)

    # ---------------------------------------------------------------- poses
    def sample(self, instances):
        """Every instance's pose (a list of RefPose): the stack sampled bottom-up onto a
        pose stack of seven, over the queued tasks' pose when ``options.queued_default``
        passes for a human with queued tasks (anim.reference.pose, ``sample_instance``)."""
        from scuffle.anim.reference.pose import sample_instance
        return [sample_instance(self, inst) for inst in _humans("sample", instances)]

    def pose(self, instances, reference: bool = False) -> "RefBones":
        """Every instance's pose and model-space bone transforms (RefBones: ``each`` the
        (RefPose, positions (34, 3), rotations (34, 4)) per instance, and the engine's
        layout in new arrays: ``poses`` (RefPoseArrays: PoseBatch's fields), ``pos`` (3, 34, N), ``rot`` (4, 34, N)).
        ``reference`` is accepted for the Player's signature (there is one path)."""
        from scuffle.anim.reference.pose import bones_of
        motion = self.options.motion_entry == MotionEntry.MOTION
        return RefBones([(p, *bones_of(self.skeleton, p, motion)) for p in self.sample(instances)])

    # ---------------------------------------------------------------- what the game's systems ask
    def register(self, anim_set) -> None:
        """Nothing to do: clips are decoded when first sampled."""

    def forget(self, inst) -> None:
        """The human leaves the world. The reference keeps no rows, but a record that is a
        handle onto one (the Game's HumanRecord; a RefRecord is plain) gives its row back
        as the engine's does (BatchEngine.forget): at once, or at the end of the flush that
        releases the human's cut tasks."""
        self._stepped = [i for i in self._stepped if i is not inst]
        for r, held in enumerate(self._seats):           # its row named by rows_of: given back
            if held is inst:
                self._seats[r] = None
                self._seat_gens[r] += 1
                self._free_seats.append(r)
        if getattr(inst.record, "release", None) is None or any(i is inst for i in self._leaving):
            return
        if any(i is inst for _, i in self.deferred):
            self._leaving.append(inst)
        else:
            inst.record.release()

    def may_have_events(self, instances):
        """Every instance (the reference does not keep a list of those that fired)."""
        return instances

    def gait_speeds(self, anim_set, ids) -> tuple[float, ...]:
        """The looping gaits' speeds (m/s): displacement length / duration / rate ("Playback
        rate" L297, anim.data.rates.gait_speed)."""
        out = []
        for i in ids:
            clip, rate = self.find(anim_set, i), self.rate_of(anim_set, i)
            if not rate > 0.0:
                raise ValueError(f"gait speed of {clip.name!r}: rate {rate!r} must be > 0")
            dx, dy = (float(v) for v in clip.displacement)
            # 0x00101950 Anim_RootDisplacementLength: sqrt(x^2 + y^2) as written (+ * sqrt:
            # the same bits anywhere; libm's hypot differs by build)
            out.append(math.sqrt(dx * dx + dy * dy) / float(clip.duration) / float(rate))
        return tuple(out)


class RefPoseArrays:
    """N poses in the engine's layout, as plain arrays: ``vel`` (3, N), ``root`` (3, N),
    ``rot`` (4, 34, N) float32 and ``tag`` (36, N) bool ("The pose" L100-102)."""

    __slots__ = ("vel", "root", "rot", "tag")

    def __init__(self, n: int):
        self.vel = np.zeros((3, n), np.float32)
        self.root = np.zeros((3, n), np.float32)
        self.rot = np.zeros((4, NUM_BONES, n), np.float32)
        self.tag = np.zeros((2 + NUM_BONES, n), bool)

    def __len__(self) -> int:
        return self.vel.shape[1]

    def copy(self) -> "RefPoseArrays":
        """An independent copy."""
        out = RefPoseArrays(0)
        out.vel, out.root, out.rot, out.tag = self.vel.copy(), self.root.copy(), self.rot.copy(), self.tag.copy()
        return out

    def is_finite(self) -> bool:
        """Whether every translation and rotation value is finite."""
        return bool(np.isfinite(self.vel).all() and np.isfinite(self.root).all() and np.isfinite(self.rot).all())


class RefBones:
    """The reference's poses and bone transforms of one update (see ``Reference.pose``)."""

    def __init__(self, each: list):
        self.each = each
        n = self.n = len(each)
        self.poses = RefPoseArrays(n)
        self.pos = np.zeros((3, NUM_BONES, n), np.float32)
        self.rot = np.zeros((4, NUM_BONES, n), np.float32)
        for i, (p, pos, mrot) in enumerate(each):
            vel, root, rot, tag = p.arrays()
            self.poses.vel[:, i], self.poses.root[:, i] = vel, root
            self.poses.rot[:, :, i], self.poses.tag[:, i] = rot.T, tag
            self.pos[:, :, i], self.rot[:, :, i] = pos.T, mrot.T
