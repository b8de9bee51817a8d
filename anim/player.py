"""The animation player of one world: the pool, the deferred list and the stack rules.

``Player`` builds tasks (finding clips in anim sets, taking rates from the Anim Range
List and CfgAnimSpeeds), changes animations the original's way, advances every
character's stack, samples them all in one batched plan, and flushes the deferred
list. It holds no global state: several players can live side by side.

Per update, in the original's order (Humans_Update):
    player.step(instances)      run queues, advance stacks, hand over, fire events
    poses = player.sample(instances)
    player.flush()              release what ended, refresh the playing anim ids

Spec: "The task stack", "Fades", "When a clip ends", "Paired tasks", "Playback rate".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence, TypeVar

from . import f32 as F
from .clip import Clip, EventType
from .cursor import Cursor, FiredEvent
from .plan import Bones, SamplePlan
from .pose import POSE_STACK_SIZE, PoseBatch, PoseStackOverflow
from .rates import RUNTIME_SPEEDS, CfgAnimSpeeds, gait_speed
from .limits import INT32_MAX, MAX_DT, check_float, check_int
from .sampler import BANK_KEY_BYTES, BANK_ROW_BYTES, MAX_BANK_BYTES, NUM_SLOTS, BankBudgetError, ClipBank, \
    clip_keys, clip_rows
from .skeleton import HUMANOID, Skeleton
from .animset import AnimRef
from .batch import BatchEngine
from .store import Stores
from .stack import (POOL_SIZE, QUEUE_SIZE, STACK_SIZE, AnimLimitError, CharacterInstance, QueueFull, StackFull,
                    TaskPool)
from .tasks import (HELD_EVENTS, BlendWindow, ClipTask, DirectionTask, EventRule, FadeTask, GaitTask, HeldFlags, HoldTask,
                    LoopTask, MixTask, PairedClipTask, PairedHoldTask, PickSampling, PickTask, SceneTask, Task,
                    TaskType, LOCOMOTION_FLAGS)

__all__ = ["Player", "PlayerOptions", "PlayerStats", "UnknownClip", "chain_blend_depth", "task_pose_depth"]


def _ref(anim_set, anim_id: AnimRef) -> int:
    """An anim id, or a clip name resolved through ``anim_set`` (AnimSet.id_of: did you mean)."""
    return anim_set.id_of(anim_id) if isinstance(anim_id, str) else anim_id


def _refs(anim_set, ids: Sequence[AnimRef]) -> Sequence[int]:
    """``_ref`` of each of ``ids`` (the same sequence when none is a name)."""
    if any(isinstance(i, str) for i in ids):
        return [_ref(anim_set, i) for i in ids]
    return ids  # type: ignore[return-value]  # no name among them: ints

_T = TypeVar("_T", bound=Task)

# The hot paths compare plain ints; the values come from the enums.
_ANIM_STATE = int(HeldFlags.ANIM_STATE)
_REPORT = int(HeldFlags.REPORT)
_FADE = int(TaskType.FADE)


class UnknownClip(ValueError):
    """An anim id with no clip in the set it was looked up in."""


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


@dataclass(frozen=True)
class PlayerOptions:
    """Switches of the player. Defaults are the original's behaviour.

    ``end_zero_overshoot``: end a clip whose end step's overshoot is exactly 0.0 (the
    original takes 0.0 as "not ended", so such a clip never ends; docs/original-bugs.md).
    ``pool_size``: tasks in the world's pool (360). ``early_finish_above`` (6) and
    ``cleanup_above`` (12): the stack sizes past which a change finishes the newest fade
    early, and a fade gives back the tasks below it. ``batched``: step and sample the
    crowd with the compiled engine (anim.batch over anim.kernels); off, every character takes the
    scalar reference step (the same results, slower).

    Readings of passages the spec leaves open (docs/original.md cites the lines for
    each and argues the default):
    ``events`` (EventRule): "cursor", every task's cursors fire unless muted by flag
    0x10 (the confirmed code, the default), or "newest", only the newest task's
    (Coney's reading). ``blend_window`` (BlendWindow): "advanced", a type 3's next task
    is advanced too during the blend window (the runtime figure, the default), or
    "kept", kept to the time into the window. ``pick`` (PickSampling): "chosen", type 11
    samples the clip its value picks (the default), or "all", all four are sampled and
    the picked one's pose kept. ``queued_default``: None (the default pose is always
    the reference pose), or the human test 0x00223440 as a callable(instance) -> bool:
    when it passes for a human with queued tasks, those tasks are sampled first and
    their pose is the default pose of that sample (0x00176d60, "The pose" L102).
    ``refuse_deep_chains``: False (the original: a chain whose blend windows nest more
    than seven clips' poses plays, its eighth pose skipped when sampled), or True: such
    a chain or task is refused when given (PoseStackOverflow, nothing changed).
    Rejected: an unknown reading (ValueError naming the field); a ``dt`` that is not a
    finite number 0 to 1 s, a ``pool_size`` outside 1 to 2^31 - 1, an ``early_finish_above``
    or ``cleanup_above`` outside 0 to 2^31 - 1 (RangeError, a ValueError naming it).
    """

    end_zero_overshoot: bool = False
    pool_size: int = POOL_SIZE
    early_finish_above: int = 6
    cleanup_above: int = 12
    speeds: CfgAnimSpeeds = field(default_factory=lambda: RUNTIME_SPEEDS)
    dt: float = F.DT
    batched: bool = True
    events: str = EventRule.CURSOR
    blend_window: str = BlendWindow.ADVANCED
    pick: str = PickSampling.CHOSEN
    queued_default: Callable | None = None
    refuse_deep_chains: bool = False

    def __post_init__(self):
        object.__setattr__(self, "dt", check_float("PlayerOptions.dt", self.dt, 0.0, MAX_DT))
        check_int("PlayerOptions.pool_size", self.pool_size, 1, INT32_MAX)
        for name in ("early_finish_above", "cleanup_above"):
            check_int(f"PlayerOptions.{name}", getattr(self, name), 0, INT32_MAX)
        for name, kind in (("events", EventRule), ("blend_window", BlendWindow), ("pick", PickSampling)):
            v = getattr(self, name)
            try:
                object.__setattr__(self, name, kind(v))
            except ValueError:
                raise ValueError(f"PlayerOptions.{name}: {v!r} is not one of "
                                 f"{', '.join(repr(k.value) for k in kind)}") from None
        if self.queued_default is not None and not callable(self.queued_default):
            raise ValueError(f"PlayerOptions.queued_default: {self.queued_default!r} is not callable")


@dataclass
class PlayerStats:
    """Counts a user can read (``Player.stats``), summed since the player was made.

    ``poses_refused``: poses the pose stack of seven refused (an eighth, 0x00104ce0);
    each human's count for the last sample is ``CharacterInstance.poses_refused``.
    ``samples``: the sample calls.
    """

    poses_refused: int = 0
    samples: int = 0


class Player:
    """The animation system of one world (see the module docstring).

    In: options and the skeleton the sampler works for. Rejected: a pool size below 1.
    """

    def __init__(self, options: PlayerOptions | None = None, skeleton: Skeleton = HUMANOID):
        self.options = options or PlayerOptions()
        self.skeleton = skeleton
        self.pool = TaskPool(self.options.pool_size)
        self.stores = Stores()
        self.batch = BatchEngine(self)
        self.deferred: list[tuple[Task, CharacterInstance]] = []
        self._clips: list[Clip] = []
        self._clip_index: dict[int, int] = {}
        self._flags: dict[int, tuple] = {}         # id(anim set) -> (set, its range flags column)
        # id(anim set) -> (set, the speeds, {anim id: [clip, rate, bank index or -1]}): the ids
        # found there before (a set is immutable, so its clips and range flags never change)
        self._known_ids: dict[int, tuple] = {}
        self._id_types: set[type] = {int}          # the id types the cache may be asked with
        self._gait_speeds: dict[tuple, tuple] = {}  # (id(anim set), ids) -> (set, speeds)
        self._bank: ClipBank | None = None
        self._bank_cost = BANK_KEY_BYTES * NUM_SLOTS     # bank_bytes of _clips (the sentinels' keys)
        self._stepped: dict[int, CharacterInstance] = {}
        # Queued tasks the last step could not start (a limit): (instance, the error).
        self.refused: list[tuple[CharacterInstance, AnimLimitError]] = []
        # A callback's exception (wrap, end, report): handed to on_callback_error(phase, exc)
        # when set (the Game's: raised after the whole update), else raised by step / flush
        # once they are done for every character.
        self.on_callback_error: Callable[[str, BaseException], None] | None = None
        self._failed: list[BaseException] = []
        self.stats = PlayerStats()
        self._pose_refused: list[CharacterInstance] = []   # humans whose poses_refused is set

    # ---------------------------------------------------------------- clips
    @property
    def bank(self) -> ClipBank:
        """The ClipBank of every clip this player has seen (rebuilt after new clips)."""
        if self._bank is None or len(self._bank) != len(self._clips):
            self._bank = None                       # the old bank goes before the new one is built
            from .plan import forget_tables
            forget_tables()
            self._bank = ClipBank(self._clips, self.skeleton)
        return self._bank

    @staticmethod
    def _cost(clip: Clip) -> int:
        return BANK_ROW_BYTES * clip_rows(clip) + BANK_KEY_BYTES * clip_keys(clip)

    def bank_index(self, clip: Clip) -> int:
        """The bank index of ``clip``, adding it to the bank's clips when new. Rejected: a
        clip that would take the bank past MAX_BANK_BYTES (BankBudgetError; nothing added)."""
        key = id(clip)
        i = self._clip_index.get(key)
        if i is None:
            cost = self._cost(clip)
            if self._bank_cost + cost > MAX_BANK_BYTES:
                raise BankBudgetError(f"clip {clip.name!r}: clip bank", self._bank_cost + cost, MAX_BANK_BYTES)
            i = len(self._clips)
            self._clips.append(clip)
            self._clip_index[key] = i
            self._bank_cost += cost
        return i

    def check_budget(self, anim_set, what: str = "anim_set") -> None:
        """Refuse an anim set whose new clips would take the bank past MAX_BANK_BYTES
        (BankBudgetError naming ``what``), computed from the clips' declared sizes before
        anything is added or allocated."""
        new = {id(c): c for c in (anim_set.clip(a) for a in anim_set.ids()) if id(c) not in self._clip_index}
        need = self._bank_cost + sum(self._cost(c) for c in new.values())
        if need > MAX_BANK_BYTES:
            raise BankBudgetError(f"{what}: clip bank", need, MAX_BANK_BYTES)

    def register(self, anim_set) -> None:
        """Put every clip of an anim set in the bank up front (optional; lookups add them).
        Rejected: a set that would take the bank past MAX_BANK_BYTES (BankBudgetError;
        nothing added)."""
        self.check_budget(anim_set)
        for anim_id in anim_set.ids():
            self.bank_index(anim_set.clip(anim_id))
        _ = self.bank

    def _known(self, anim_set, anim_id) -> list | None:
        """The cached [clip, rate or None, bank index or -1] of an id found in ``anim_set`` before,
        or None (not found yet, or an id of a type the cache is not asked with: those take
        the checked path, which raises the errors)."""
        if anim_id.__class__ not in self._id_types:
            return None
        per = self._known_ids.get(id(anim_set))
        if per is None or per[0] is not anim_set or per[1] is not self.options.speeds:
            return None
        return per[2].get(anim_id)

    def _learn(self, anim_set, anim_id, clip: Clip) -> list:
        """Cache a found id: its clip (its rate on the first ``rate_of``, its bank index on
        its first cursor: caching adds no clip to the bank)."""
        per = self._known_ids.get(id(anim_set))
        speeds = self.options.speeds
        if per is None or per[0] is not anim_set or per[1] is not speeds:
            per = self._known_ids[id(anim_set)] = (anim_set, speeds, {})
        entry = [clip, None, -1]
        kind = anim_id.__class__
        if issubclass(kind, int) and kind is not bool:
            self._id_types.add(kind)
            per[2][anim_id] = entry
        return entry

    def _cursor_of(self, entry: list, anim_id: int, flags: int = 0) -> Cursor:
        """A new cursor from a cache entry (``_known`` / ``_learn``)."""
        bank = entry[2]
        if bank < 0:
            bank = entry[2] = self.bank_index(entry[0])
        return Cursor(entry[0], bank, anim_id, flags, self.stores.cursors)

    def _entry(self, anim_set, anim_id) -> list:
        """The cache entry of ``anim_id`` (found and cached on a miss: UnknownAnimId,
        UnknownClip as ``find`` raises them)."""
        hit = self._known(anim_set, anim_id)
        if hit is None:
            if isinstance(anim_id, str):
                anim_id = _ref(anim_set, anim_id)
                hit = self._known(anim_set, anim_id)
                if hit is not None:
                    return hit
            hit = self._learn(anim_set, anim_id, self._find_checked(anim_set, anim_id))
        return hit

    def _check_ids(self, anim_set, ids: Sequence[int]) -> None:
        """``find`` each id in order (the same errors), the ids found before by the cache."""
        per = self._known_ids.get(id(anim_set))
        if per is None or per[0] is not anim_set or per[1] is not self.options.speeds:
            for i in ids:
                self.find(anim_set, i)
            return
        known, types = per[2], self._id_types
        for i in ids:
            if i.__class__ not in types or i not in known:
                self.find(anim_set, i)

    def find(self, anim_set, anim_id: AnimRef) -> Clip:
        """The clip an id names in a set; UnknownClip when it has none (UnknownAnimId for
        an id outside the set's ids). Kept per set and id after the first look-up (an
        AnimSet is immutable); an id that is not an int (nor an IntEnum) is looked up and
        checked every time. Original: 0x00175080 CharacterInstance_GetAnim.
        """
        return self._entry(anim_set, anim_id)[0]

    @staticmethod
    def _find_checked(anim_set, anim_id: int) -> Clip:
        """``find`` through the set itself (no cache)."""
        clip = anim_set.clip(anim_id)
        if clip is None:
            raise UnknownClip(f"anim id {anim_id}: no clip in set {getattr(anim_set, 'name', '?')!r}")
        return clip

    def cursor(self, anim_set, anim_id: AnimRef, flags: int = 0) -> Cursor:
        """A new cursor on the clip ``anim_id`` (an id or a clip name) names in ``anim_set``."""
        if isinstance(anim_id, str):
            anim_id = _ref(anim_set, anim_id)
        return self._cursor_of(self._entry(anim_set, anim_id), anim_id, flags)

    def rate_of(self, anim_set, anim_id: AnimRef) -> float:
        """A single clip's rate: CfgAnimSpeeds by its id's range flags (0x00104a38).

        The flags are read from the set's range list records (+0x0e), once per set; the
        rate of an id already found (``find``) is kept with it.
        """
        if isinstance(anim_id, str):
            anim_id = _ref(anim_set, anim_id)
        hit = self._known(anim_set, anim_id)
        if hit is None:
            return self._rate_checked(anim_set, anim_id)
        r = hit[1]
        if r is None:
            r = hit[1] = self._rate_checked(anim_set, anim_id)
        return r

    def _rate_checked(self, anim_set, anim_id: int) -> float:
        """``rate_of`` through the range list (no cache)."""
        flags = self._flags.get(id(anim_set))
        if flags is None or flags[0] is not anim_set:
            flags = self._flags[id(anim_set)] = (anim_set, anim_set.range_list.records["flags"])
        table = flags[1]
        if not 0 <= anim_id < len(table):
            return self.options.speeds.rate_for(int(anim_set.range(anim_id).flags))   # its own error
        return self.options.speeds.rate_for(int(table[anim_id]))

    def gait_speeds(self, anim_set, ids: Sequence[int]) -> tuple[float, ...]:
        """The speeds (m/s) of the looping gait clips ``ids`` (walk, jog, run, sprint) in a
        set: each clip's displacement length over its duration, divided by the rate its
        range flags give (anim.rates.gait_speed). Cached per set and ids.

        Rejected: an id with no clip in the set (UnknownClip). Original: 0x00254078 (the
        human's walking speeds), 0x00101950 Anim_RootDisplacementLength.
        """
        key = (id(anim_set), tuple(int(i) for i in ids))
        hit = self._gait_speeds.get(key)
        if hit is not None and hit[0] is anim_set:
            return hit[1]
        speeds = tuple(gait_speed(self.find(anim_set, i), self.rate_of(anim_set, i)) for i in key[1])
        self._gait_speeds[key] = (anim_set, speeds)
        return speeds

    def ended(self, cursor: Cursor, overshoot: float) -> bool:
        """Whether an advance ended the clip: a non-zero overshoot (the original), or with
        ``end_zero_overshoot`` also an end step whose overshoot is exactly 0.0."""
        if overshoot != 0.0:
            return True
        return self.options.end_zero_overshoot and cursor.at_end

    # ---------------------------------------------------------------- constructors
    def _take(self, task: _T) -> _T:
        self.pool.take(task)
        self.batch.register(task)
        return task

    def loop(self, inst: CharacterInstance, anim_id: AnimRef, *, flags: int = 0, held: int = 0,
             rate: float | None = None, on_wrap: Callable | None = None, on_end: Callable | None = None,
             anim_set=None) -> LoopTask:
        """A type 1 task on ``anim_id`` (rate from its range flags unless given).
        Original: 0x00105678."""
        s = anim_set or inst.anim_set
        if isinstance(anim_id, str):
            anim_id = _ref(s, anim_id)
        self.pool.require(1)
        hit = self._known(s, anim_id)
        if hit is None:
            r = self.rate_of(s, anim_id) if rate is None else _check_number("rate", rate)
            c = self.cursor(s, anim_id)
        else:
            r = self.rate_of(s, anim_id) if rate is None else _check_number("rate", rate)
            c = self._cursor_of(hit, anim_id)
        return self._take(LoopTask(c, r, flags, held, on_end, on_wrap, tstore=self.stores.tasks))

    def clip(self, inst: CharacterInstance, anim_id: AnimRef, next: Task | None = None, *, blend: float = 0.0,
             flags: int = 0, held: int = 0, rate: float | None = None, on_end: Callable | None = None,
             anim_set=None) -> ClipTask:
        """A type 3 task: ``anim_id``, then ``next`` (blend time ``blend``). Original: 0x00105990."""
        s = anim_set or inst.anim_set
        if isinstance(anim_id, str):
            anim_id = _ref(s, anim_id)
        self.pool.require(1)
        _check_number("blend time", blend)
        hit = self._known(s, anim_id)
        if hit is None:
            r = self.rate_of(s, anim_id) if rate is None else _check_number("rate", rate)
            c = self.cursor(s, anim_id)
        else:
            r = self.rate_of(s, anim_id) if rate is None else _check_number("rate", rate)
            c = self._cursor_of(hit, anim_id)
        return self._take(ClipTask(c, r, next, blend, flags, held, on_end, self.options.blend_window, tstore=self.stores.tasks))

    def hold(self, inst: CharacterInstance, anim_id: AnimRef, *, flags: int = 0, held: int = 0,
             on_end: Callable | None = None) -> HoldTask:
        """A type 5 task (ours: plays once, holds the last frame). Original: 0x00106140."""
        anim_id = _ref(inst.anim_set, anim_id)
        self.pool.require(1)
        c = self.cursor(inst.anim_set, anim_id)
        return self._take(HoldTask(c, self.rate_of(inst.anim_set, anim_id), flags, held, on_end, tstore=self.stores.tasks))

    def scene(self, inst: CharacterInstance, anim_id: AnimRef, rate: float, *, flags: int = 0,
              anim_set=None) -> SceneTask:
        """A type 7 scene clip at the scene's rate. Original: 0x001069c0."""
        anim_id = _ref(anim_set or inst.anim_set, anim_id)
        self.pool.require(1)
        _check_number("rate", rate)
        c = self.cursor(anim_set or inst.anim_set, anim_id)
        return self._take(SceneTask(c, rate, flags, tstore=self.stores.tasks))

    def paired(self, inst: CharacterInstance, attacker: CharacterInstance, anim_id: AnimRef,
               next: Task | None = None, *, blend: float = 0.0, flags: int = 0, held: int = 0,
               on_end: Callable | None = None) -> PairedClipTask:
        """A type 6 task: ``anim_id`` looked up in the attacker's set, at the attacker's rate
        (its range flags there); the cursor plays on ``inst``. Original: 0x00108a78."""
        s = attacker.anim_set
        anim_id = _ref(s, anim_id)
        self.pool.require(1)
        _check_number("blend time", blend)
        c = self.cursor(s, anim_id)
        return self._take(PairedClipTask(c, self.rate_of(s, anim_id), attacker.handle or attacker.name,
                                         next, blend, flags, held, on_end, self.options.blend_window, tstore=self.stores.tasks))

    def paired_hold(self, inst: CharacterInstance, attacker: CharacterInstance, anim_id: AnimRef, *,
                    flags: int = 0, held: int = 0, on_end: Callable | None = None) -> PairedHoldTask:
        """A type 4 task: a paired type 5. Original: 0x00108450."""
        s = attacker.anim_set
        anim_id = _ref(s, anim_id)
        self.pool.require(1)
        c = self.cursor(s, anim_id)
        return self._take(PairedHoldTask(c, self.rate_of(s, anim_id), attacker.handle or attacker.name,
                                         flags, held, on_end, tstore=self.stores.tasks))

    def fade(self, inst: CharacterInstance, duration: float, *, held: int = 0) -> FadeTask:
        """A type 9 fade over ``duration`` s at the human's speed multiplier. Original: 0x00106c80."""
        self.pool.require(1)
        return self._take(FadeTask(duration, inst.speed, held, store=self.stores.fades, tstore=self.stores.tasks))

    def gait(self, inst: CharacterInstance, ids: Sequence[AnimRef], *, target: float = 0.0,
             value: float | None = None, flags: int = int(LOCOMOTION_FLAGS),
             on_wrap: Callable | None = None, held: int = 0) -> GaitTask:
        """A type 12 gait blend over five ids, at the human's speed multiplier. Original: 0x0010a310."""
        self.pool.require(1)
        if len(ids) != 5:
            raise ValueError(f"gait blend: 5 anim ids, got {len(ids)}")
        s = inst.anim_set
        ids = _refs(s, ids)
        self._check_ids(s, ids)
        _check_number("gait target", target, -math.inf)
        if value is not None:
            _check_number("gait value", value, -math.inf)
        task = GaitTask(ids, lambda i: self.cursor(s, i), inst.speed,
                        value=target if value is None else value, target=target, flags=flags,
                        on_wrap=on_wrap, held=held, store=self.stores.gaits, tstore=self.stores.tasks)
        return self._take(task)

    def mix(self, inst: CharacterInstance, a: AnimRef, b: AnimRef, *, weight: float = 0.0,
            flags: int = 0) -> MixTask:
        """A type 10 two-clip mix at the human's speed multiplier. Original: 0x0010b090."""
        self.pool.require(1)
        s = inst.anim_set
        a, b = _ref(s, a), _ref(s, b)
        self.find(s, a)
        self.find(s, b)
        _check_number("mix weight", weight, -math.inf)
        return self._take(MixTask(self.cursor(s, a), self.cursor(s, b), inst.speed, weight, flags, tstore=self.stores.tasks))

    def pick(self, inst: CharacterInstance, ids: Sequence[AnimRef], rate: float, *, value: float = 0.0,
             flags: int = 0) -> PickTask:
        """A type 11 four-clip task at a given rate. Original: 0x00106f50."""
        self.pool.require(1)
        s = inst.anim_set
        ids = _refs(s, ids)
        if len(ids) != 4:
            raise ValueError(f"type 11: 4 clips, got {len(ids)}")
        for i in ids:
            self.find(s, i)
        _check_number("rate", rate)
        _check_number("pick value", value, -math.inf)
        return self._take(PickTask([self.cursor(s, i) for i in ids], rate, value, flags,
                                   sampling=self.options.pick, tstore=self.stores.tasks))

    def direction(self, inst: CharacterInstance, base: AnimRef, *, direction: float = 0.0,
                  flags: int = 0) -> DirectionTask:
        """A type 13 eight-direction blend over ids base..base+7. Original: 0x00109210."""
        self.pool.require(1)
        s = inst.anim_set
        base = _ref(s, base)
        for d in range(8):
            self.find(s, base + d)
        _check_number("direction", direction, -math.inf)
        return self._take(DirectionTask(base, lambda i: self.cursor(s, i), inst.speed, direction, flags, tstore=self.stores.tasks))

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
        if not ids:
            raise ValueError("chain: at least one anim id")
        _check_number("blend time", blend)
        self.pool.require(len(ids))
        src = paired_with.anim_set if paired_with is not None else inst.anim_set
        ids = _refs(src, ids)
        clips = [self.find(src, i) for i in ids]
        depth = chain_blend_depth([c.duration for c in clips], F.f32(float(blend)))
        if self.options.refuse_deep_chains and depth > POSE_STACK_SIZE:
            raise PoseStackOverflow(
                f"{inst.name}: an eighth pose: chain {list(ids)} with blend time {blend:g} s nests {depth} "
                f"clips' poses at once; the pose stack holds {POSE_STACK_SIZE}, a limit of the original "
                f"(refused, nothing changed)")
        task: Task = self.loop(inst, ids[-1], flags=flags, anim_set=src)
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

    # ---------------------------------------------------------------- the stack
    @staticmethod
    def top(inst: CharacterInstance) -> Task | None:
        """The top task, or the bottom one when the top is a fade. Original: 0x00175210."""
        if not inst.stack:
            return None
        t = inst.stack[-1]
        return inst.stack[0] if t.type == TaskType.FADE else t

    def refresh_anim_id(self, inst: CharacterInstance) -> None:
        """The top task's id into record +0x20 (-1 with no task). Original: 0x001752c8."""
        stack = inst.stack
        if not stack:
            inst.record.anim_id = -1
            return
        t = stack[-1]
        if t.type == _FADE:
            t = stack[0]
        inst.record.anim_id = t.anim_id()

    def _early_finish(self, inst: CharacterInstance) -> None:
        """With more than 6 tasks, finish the newest fade by its remaining time (0x00177eb8)."""
        if len(inst.stack) > self.options.early_finish_above:
            for t in reversed(inst.stack):
                if t.type == TaskType.FADE and not t.released:
                    t.finish_early(self, inst)
                    break

    def _hold(self, inst: CharacterInstance, task: Task) -> None:
        held = task.held
        if held:
            inst.record.flags |= held

    def _check_fits_poses(self, inst: CharacterInstance, task: Task) -> None:
        """With ``refuse_deep_chains``: PoseStackOverflow when ``task``'s own blend windows
        would nest more clips than the pose stack of seven holds (task_pose_depth), before
        anything changes. Without it (the original) such a task plays, its eighth pose
        skipped when sampled."""
        if not self.options.refuse_deep_chains:
            return
        depth = task_pose_depth(task)
        if depth > POSE_STACK_SIZE:
            raise PoseStackOverflow(
                f"{inst.name or 'human'}: an eighth pose: the task's blend windows nest {depth} clips' poses "
                f"at once; the pose stack holds {POSE_STACK_SIZE}, a limit of the original (refused, nothing changed)")

    def insert_bottom(self, inst: CharacterInstance, task: Task) -> None:
        """Put a task under the stack (index 0); sets its held bits on the human.

        Rejected: a full stack (StackFull; nothing changed), a task whose own blend
        windows could never fit the pose stack (PoseStackOverflow; nothing changed).
        Original: 0x001754e8.
        """
        self._insert_bottom(inst, task)
        self.refresh_anim_id(inst)

    def _insert_bottom(self, inst: CharacterInstance, task: Task) -> None:
        """``insert_bottom`` without the anim id's refresh (``change`` refreshes once)."""
        self._put(inst, task, 0)

    def _put(self, inst: CharacterInstance, task: Task, at: int | None) -> None:
        """Put ``task`` at index ``at`` of the stack (None: on top), after the early finish
        and the checks insert_bottom and push share; no anim id refresh."""
        self._check_fits_poses(inst, task)
        self._early_finish(inst)
        if len(inst.stack) >= STACK_SIZE:
            raise StackFull(f"{inst.name or 'human'}: the task stack already holds {STACK_SIZE} tasks")
        if at is None:
            inst.stack.append(task)
        else:
            inst.stack.insert(at, task)
        self.batch.mark(inst)
        self._hold(inst, task)

    def push(self, inst: CharacterInstance, task: Task) -> None:
        """Put a task on top of the stack; sets its held bits on the human.

        Rejected: a full stack (StackFull; nothing changed), a task whose own blend
        windows could never fit the pose stack (PoseStackOverflow; nothing changed).
        Original: 0x001753d8.
        """
        self._push(inst, task)
        self.refresh_anim_id(inst)

    def _push(self, inst: CharacterInstance, task: Task) -> None:
        """``push`` without the anim id's refresh (``change`` refreshes once)."""
        self._put(inst, task, None)

    def change(self, inst: CharacterInstance, task: Task, fade: float = 0.0) -> FadeTask:
        """A change of animation, the three moves: make a fade, insert the new task at the
        bottom, push the fade on top (the stack is then new, old..., fade).

        The new task must already be taken from the pool. Rejected before any change:
        no free task for the fade (TaskPoolExhausted), no room for the insert and the
        push after the early finishes they would make (StackFull, from a dry run), a
        fade time that is not finite and >= 0 (ValueError); ``task`` is then given back.
        Original: 0x001754e8 TaskStack_InsertBottom, 0x001753d8 TaskStack_Push, in the
        order of every locomotion builder (0x0025b200, 0x0025f1b8, 0x0025c0e8).
        """
        try:
            self._check_fits_poses(inst, task)
            self.pool.require(1)
            _check_number("fade time", fade)
            if not self._change_fits(inst, task):
                raise StackFull(f"{inst.name or 'human'}: no room for a change "
                                f"({len(inst.stack)} of {STACK_SIZE} tasks)")
            f = self.fade(inst, fade)
        except Exception:
            self.discard(task)
            raise
        f.incoming = task
        # insert_bottom, then push: nothing between them reads the anim id, so it is
        # refreshed once, after both (the value the second refresh gave).
        self._insert_bottom(inst, task)
        self._push(inst, f)
        self.refresh_anim_id(inst)
        return f

    def _change_fits(self, inst: CharacterInstance, task: Task) -> bool:
        """Whether insert_bottom then push fit, each after its own early finish (a dry run
        on a copy of the stack: the finish can free as little as the fade itself)."""
        n = len(inst.stack)
        if n + 1 <= self.options.early_finish_above:
            return n + 1 < STACK_SIZE         # neither early finish acts: no copy needed
        stack = list(inst.stack)

        def finish_newest() -> None:
            if len(stack) <= self.options.early_finish_above:
                return
            fade = next((t for t in reversed(stack) if t.type == TaskType.FADE and not t.released), None)
            if fade is None:
                return
            hi = stack.index(fade)
            lo = stack.index(fade.incoming) + 1 if fade.incoming in stack else 0
            del stack[lo:hi + 1]

        finish_newest()
        if len(stack) >= STACK_SIZE:
            return False
        stack.insert(0, task)
        finish_newest()
        return len(stack) < STACK_SIZE

    def enqueue(self, inst: CharacterInstance, task: Task) -> None:
        """Queue a task to start at the next step. Rejected: a full queue (QueueFull)."""
        if len(inst.queue) >= QUEUE_SIZE:
            raise QueueFull(f"{inst.name or 'human'}: the task queue already holds {QUEUE_SIZE} tasks")
        inst.queue.append(task)
        self.batch.mark(inst)

    def replace(self, inst: CharacterInstance, old: Task, new: Task) -> None:
        """A hand-over: ``new`` takes ``old``'s place; ``old`` goes on the deferred list.

        ``old`` is on the stack, or a next task advanced inside its owner's blend window
        (BlendWindow.ADVANCED) that ended there: ``new`` then becomes the owner's next task.
        """
        if not any(t is old for t in inst.stack):
            owner = self._owner_of(inst, old)
            owner.next = new
            self.batch.mark(inst)
            self.defer(inst, old)
            return
        i = inst.stack.index(old)
        inst.stack[i] = new
        self.batch.mark(inst)
        for t in inst.stack:
            if t.type == TaskType.FADE and t.incoming is old:
                t.incoming = new
        self.defer(inst, old)

    @staticmethod
    def _owner_of(inst: CharacterInstance, task: Task) -> ClipTask:
        """The clip task (on the stack or following one) whose next task is ``task``."""
        todo = list(inst.stack)
        while todo:
            t = todo.pop()
            if isinstance(t, ClipTask) and t.next is task and not t.handed_over:
                return t
            todo.extend(t.following())
        raise LookupError(f"{inst.name or 'human'}: {task!r} is neither on the stack nor a next task")

    def complete_fade(self, inst: CharacterInstance, fade: FadeTask) -> None:
        """The fade gives back itself and every task between the new one and itself."""
        if fade.released or fade not in inst.stack:
            return
        hi = inst.stack.index(fade)
        lo = inst.stack.index(fade.incoming) + 1 if fade.incoming in inst.stack else 0
        gone = inst.stack[lo:hi + 1]
        del inst.stack[lo:hi + 1]
        self.batch.mark(inst)
        for t in gone:
            self.defer(inst, t)

    def cut(self, inst: CharacterInstance) -> None:
        """Cut every task off the stack (and the queue): all go on the deferred list."""
        gone = inst.stack[:]
        inst.stack.clear()
        self.batch.mark(inst)
        for t in gone:
            self.defer(inst, t)
        for t in inst.queue:
            self.discard(t)
        inst.queue.clear()

    def defer(self, inst: CharacterInstance, task: Task) -> None:
        """Put a task on the deferred list (AnimTask_DeferGive, 0x00105640)."""
        if not task.released:
            task.released = True
            self.deferred.append((task, inst))

    def discard(self, task: Task) -> None:
        """Give a task (and the next tasks it owns) back without its release."""
        for t in task.following():
            self.discard(t)
        if self.pool._take_back(task):
            self.batch.unregister(task)
            task.dispose()

    # ---------------------------------------------------------------- per update
    def step(self, instances: Iterable[CharacterInstance], dt: float | None = None) -> None:
        """The animation step of every character: run its queue once, then advance its
        stack bottom-up; clips hand over, fades finish, events fire (every cursor not
        muted by flag 0x10, or the newest task's only: ``options.events``) and the
        held-flag events act. Original: 0x00175610, the +0x64 calls.

        A queued task whose start hits a limit (the pool, the stack of 18) is refused:
        it goes back to the pool, the step goes on for every character, and the refusal
        is listed in ``refused`` (emptied at each ``step``) as (instance, error). The
        original has no such check (it would write past the stack). Rejected: a ``dt`` that
        is not a finite number 0 to 1 s (RangeError naming it, before anything changes).
        """
        # one float32 dt for both paths (the compiled step reads it as a float32)
        dt = F.f32(self.options.dt if dt is None else check_float("step: dt", dt, 0.0, MAX_DT))
        self.refused = []
        if self.options.batched:
            # Only the characters whose stack or gait leader changed can have a new top task.
            for inst in self.batch.step(instances if isinstance(instances, list) else list(instances), dt):
                self._stepped[id(inst)] = inst
        else:
            for inst in instances:
                self.step_one(inst, dt)
                self._stepped[id(inst)] = inst
        self._raise_failed()

    def run_callback(self, fn: Callable, inst: CharacterInstance, phase: str) -> None:
        """Call a task's callback ``fn(inst)``; its exception does not stop the step or the
        flush: it goes to ``on_callback_error(phase, exc)`` when set, else it is raised
        once the step or flush is done for every character (the first one)."""
        try:
            fn(inst)
        except Exception as exc:
            if self.on_callback_error is not None:
                self.on_callback_error(phase, exc)
            else:
                self._failed.append(exc)

    def _raise_failed(self) -> None:
        if self._failed:
            failed, self._failed = self._failed, []
            raise failed[0]

    def step_one(self, inst: CharacterInstance, dt: float) -> None:
        """One character's animation step (see ``step``)."""
        inst.clear_events()
        inst.released.clear()
        if inst.queue:
            queued = inst.queue[:]
            inst.queue.clear()
            for t in queued:
                try:
                    t.start(self, inst)
                except AnimLimitError as exc:       # the change gave the task back
                    self.refused.append((inst, exc))
        newest = self.top(inst) if self.options.events == EventRule.NEWEST else None
        for task in inst.stack[:]:
            if task.released:
                continue
            sink = inst.events if newest is None or task is newest else None
            n0 = len(inst.events)
            task.advance(self, inst, dt, sink)
            if len(inst.events) > n0:
                self._held_events(inst, inst.events, n0)

    def may_have_events(self, instances: Sequence[CharacterInstance]) -> Sequence[CharacterInstance]:
        """After ``step``: the instances whose ``events`` may be non-empty (a superset; may
        hold repeats). The compiled path knows them (those that fired or took the scalar
        step), so a caller need not look at every human; the scalar path gives them all."""
        if self.options.batched:
            return self.batch.touched()
        return instances

    def _held_events(self, inst: CharacterInstance, events: list[FiredEvent], start: int) -> None:
        """Events 0x2c, 0x2d, 0x48 act on the task that fired them if it holds the bits."""
        for fe in events[start:]:
            et = fe.event.type
            task = fe.task
            if task is None:
                continue
            if et in HELD_EVENTS:
                need, clear, setb = HELD_EVENTS[et]
                if task.held & need:
                    task.held = (task.held & ~clear) | setb
                    self._clear_flags(inst, clear, task)
                    inst.record.flags |= setb
            elif et == EventType.HELD_REPLACE and task.held:
                old = task.held
                task.held = int(HeldFlags.REPLACED)
                self._clear_flags(inst, old, task)
                inst.record.flags |= task.held

    def _clear_flags(self, inst: CharacterInstance, bits: int, task: Task) -> None:
        """Clear ``bits`` from the human, except those another task on the stack holds."""
        others = 0
        for t in inst.stack:
            if t is not task and not t.released:
                others |= t.held
        inst.record.flags &= ~(bits & ~others)

    def sample(self, instances: Sequence[CharacterInstance], reference: bool = False) -> PoseBatch:
        """Every character's pose, one per instance, in new arrays: the stacks sampled
        bottom-up (the compiled engine, or their plan run compiled).

        ``reference`` runs the plan one pose at a time (the scalar path) instead. A pose
        the stack of seven refuses is skipped (0x00104ce0) and counted: the human's
        ``poses_refused`` for this sample and ``stats.poses_refused`` in total; the
        update carries on. Original: 0x00176d60 CharacterInstance_Sample.
        """
        if reference:
            plan = self.plan(instances)
            out = plan.execute_reference(self.bank)
        elif self.options.batched:
            plan = SamplePlan()
            out = self.batch.sample(instances, plan)
        else:
            plan = self.plan(instances)
            out = plan.execute(self.bank)
        self._count_refusals(plan)
        test = self.options.queued_default
        if test is not None:
            for i, inst in enumerate(instances):
                if inst.queue and test(inst):
                    out.put(slice(i, i + 1), self._sample_over_queued(inst))
        return out

    def _sample_over_queued(self, inst: CharacterInstance) -> PoseBatch:
        """One human's pose with its queued tasks' pose as the default pose: the queued
        tasks are sampled first (in queue order, onto their own pose stack) and the
        top of that stack replaces the reference pose for this sample.
        Original: 0x00176d60 (the second buffer 0x005fd040; "The pose", L102)."""
        q = SamplePlan()
        q.begin(inst.name)
        for task in inst.queue:
            task.emit(q)
        q.end()
        default = q.execute(self.bank)
        plan = SamplePlan()
        plan.begin(inst.name, inst)
        for task in inst.stack:
            task.emit(plan)
        plan.end()
        return plan.execute(self.bank, defaults={0: default})

    def _count_refusals(self, plan: SamplePlan) -> None:
        """Each human's refused poses of this sample (0 again for those of the last one)."""
        self.stats.samples += 1
        for inst in self._pose_refused:
            inst.poses_refused = 0
        self._pose_refused = []
        for inst, n in plan.refusals:
            inst.poses_refused = n
            self.stats.poses_refused += n
            self._pose_refused.append(inst)

    def pose(self, instances: Sequence[CharacterInstance], reference: bool = False) -> Bones:
        """Every character's pose and model-space bone transforms (``Bones``).

        The compiled path writes them in one call into buffers the engine reuses (the next
        call overwrites them); ``reference`` (or ``batched`` off) samples one pose at a
        time and composes the bones with numpy, in new arrays. With ``queued_default``
        the poses come from ``sample`` (which applies it), the bones from numpy. Refused
        poses are counted on every path.
        Original: 0x00176d60 CharacterInstance_Sample, 0x00104630 Instance_BuildBoneMatrices.
        """
        if self.options.batched and not reference and self.options.queued_default is None:
            plan = SamplePlan()                  # the stacks the kernels do not cover emit here
            bones = self.batch.pose(instances, dynamic_plan=plan)
            self._count_refusals(plan)
            return bones
        out = Bones(0)
        out.n = len(instances)
        out.poses = self.sample(instances, reference=reference)
        out.pos, out.rot = self.skeleton.model_space(out.poses.rot, out.poses.root)
        return out

    def plan(self, instances: Sequence[CharacterInstance]) -> SamplePlan:
        plan = SamplePlan()
        for inst in instances:
            plan.begin(inst.name, inst)
            for task in inst.stack:
                task.emit(plan)
            plan.end()
        return plan

    def flush(self) -> list[CharacterInstance]:
        """Empty the deferred list: release each task, then refresh the playing anim ids.

        The release clears the held bits the task still holds (not those another task on
        the stack holds), reports 0x400000, runs the end callback (also on a cut-off) and
        gives back a cut-off task's next task; a clip that hands over (types 3 and 6) also
        clears state flag 0x4000000000. The ids are refreshed for every instance with a
        released task and every instance stepped since the last flush (a gait's leader
        changes the id without any release). Out: the instances with a released task.
        An exception from a callback (``on_end``, ``on_report``) does not stop the flush:
        every deferred task is still released and given back, the ids are refreshed, and
        then the first such exception is raised (with ``on_callback_error`` set, every
        one goes there instead and nothing is raised).
        Original: 0x00105570 AnimTask_FlushDeferred, 0x00105f78 (type 3's release),
        0x00108f10 (type 6's), 0x00106ee8 (the fade's).
        """
        touched: list[CharacterInstance] = []
        seen: set[int] = set()
        stepped, self._stepped = self._stepped, {}        # id -> instance: no repeats
        release = self._release
        while self.deferred:
            batch = self.deferred
            self.deferred = []
            for task, inst in batch:
                key = id(inst)
                if key not in seen:
                    seen.add(key)
                    touched.append(inst)
                rows = inst._event_rows                 # lazy events read the rows the release gives back:
                if rows is not None and rows[0].fired_by(task, rows[1], rows[2]):
                    inst.events                         # noqa: B018  (made now, while the rows are the task's)
                release(inst, task)          # a callback's exception is kept (run_callback)
        # touched (no repeats), then the stepped ones not among them: each refreshed once
        refresh = self.refresh_anim_id
        for inst in touched:
            refresh(inst)
        for key, inst in stepped.items():
            if key not in seen:
                refresh(inst)
        self._raise_failed()
        return touched

    def _release(self, inst: CharacterInstance, task: Task) -> None:
        if isinstance(task, ClipTask):      # 0x00105f78 / 0x00108f10; not the fade's 0x00106ee8
            rec = inst.record
            flags = rec.flags
            if flags & _ANIM_STATE or flags < 0:     # else clearing it writes the same value
                rec.flags = flags & ~_ANIM_STATE
        ts, tr = task.tstore, task.trow
        held = int(ts.held[tr])                      # task.held
        if held:
            self._clear_flags(inst, held, task)
            ts.held[tr] = 0
        if not inst.released:
            self.batch.released_by_flush(inst)
        inst.released.append(task.anim_id())
        try:
            if held & _REPORT and inst.on_report is not None:
                self.run_callback(inst.on_report, inst, "flush")
            if task.on_end is not None:
                self.run_callback(task.on_end, inst, "flush")
        finally:                            # back to the pool even when a callback raises
            self.discard(task)

    def update(self, instances: Sequence[CharacterInstance], dt: float | None = None) -> PoseBatch:
        """step, sample and flush in the original's order; returns the poses."""
        self.step(instances, dt)
        poses = self.sample(instances)
        self.flush()
        return poses

    def forget(self, inst: CharacterInstance) -> None:
        """The human leaves the world: its row in the human table goes back (its record
        keeps its flags in a private row). Cut its tasks first (``cut``, then ``flush``)."""
        self.batch.forget(inst)

    def tasks_out(self, instances: Iterable[CharacterInstance]) -> int:
        """Tasks the instances hold (stacks, queues and the next tasks they own) plus the
        deferred ones: what the pool's ``in_use`` must equal when nothing leaks."""
        seen: set[int] = set()

        def walk(t: Task):
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
