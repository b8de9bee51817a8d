"""The reference tasks: one plain class per task type, each rule next to its spec lines.

A task answers the calls of "Animation tasks" (L201-209): ``advance`` (+0x64),
``emit`` (+0x5c, push its pose on the pose stack), ``duration`` (+0xd4), ``anim_id``
(+0x104), ``set_target`` / ``set_value`` (+0xac / +0xbc). Stack changes (a hand-over,
a fade's clean-up) go through the world (``world.py``), which owns the pool and the
deferred list. Numbers the original keeps in float32 are kept as Python floats holding
float32 values; time arithmetic goes through anim.maths.f32 (the FPU's toward-zero rounding).

Types whose details the spec leaves open (5, 7, 4, 10, 11, 13) follow the readings
docs/original.md states for the engine (ours); so do the switches of PlayerOptions.
"""
from __future__ import annotations

import math

from scuffle.anim.maths import f32 as F
from scuffle.anim.maths.detmath import cos_pi_s
from scuffle.anim.base.enums import BlendWindow, PickSampling, TaskType
from scuffle.anim.reference.cursor import CURSOR_BITS, MUTED, RefCursor, follow

__all__ = ["RefTask", "RefLoop", "RefClip", "RefHold", "RefScene", "RefPairedClip", "RefPairedHold",
           "RefFade", "RefMix", "RefPick", "RefGait", "RefDirection", "fade_weight",
           "GAIT_STEPS", "GAIT_ALONE_LOW", "GAIT_ALONE_HIGH", "GAIT_FALL_FRACTION", "PICK_THRESHOLDS"]

# "Gait blend" L283-286: the pair steps 0.995 / 1.995 / 2.995, alone below 0.01 and from
# 0.995, the falling fraction 0.875. Constants the FPU compares with are float32.
GAIT_STEPS = tuple(F.f32(x) for x in (0.995, 1.995, 2.995))
GAIT_ALONE_LOW = F.f32(0.01)
GAIT_ALONE_HIGH = F.f32(0.995)
GAIT_FALL_FRACTION = 0.875
# "Animation tasks" L218: type 11's thresholds 0.51, 1.51, 2.51.
PICK_THRESHOLDS = tuple(F.f32(x) for x in (0.51, 1.51, 2.51))


def fade_weight(elapsed: float, duration: float) -> float:
    """"Fades" L265: w_old = (1 + cos(pi t / d)) / 2, 1 at the start, 0 at the end; d = 0
    gives 0 at once. Original: 0x00106e50."""
    if duration <= 0.0:
        return 0.0
    x = min(max(elapsed / duration, 0.0), 1.0)
    return (1.0 + cos_pi_s(x)) / 2.0        # anim.maths.detmath: the same bits on every CPU


def _ended(world, cursor: RefCursor, overshoot: float) -> bool:
    """L320: an overshoot of exactly 0.0 is "not ended" (PlayerOptions.end_zero_overshoot
    ends it anyway)."""
    return overshoot != 0.0 or (world.options.end_zero_overshoot and cursor.at_end)


def _advance_looping(world, cursor: RefCursor, step: float, sink, task) -> bool:
    """A looping cursor: wrap on the overshoot, restart, advance by it (L318). True on a wrap."""
    over = cursor.advance(step, sink, task)
    if _ended(world, cursor, over):
        cursor.restart()
        cursor.advance(over, sink, task)
        return True
    return False


class RefTask:
    """Fields every task has (L201-207, L237): rate +0x0c (float32), flags +0x10, type
    +0x14, the held bits +0x24, the end callback +0x2c; ``released`` once deferred."""

    type: TaskType = TaskType.LOOP
    gone = False                    # given back to the pool unplaced (the reference's orphan rule)

    def __init__(self, rate: float, flags: int = 0, held: int = 0, on_end=None):
        self.rate = F.f32(float(rate))
        self.flags = int(flags)
        self.held = int(held)
        self.on_end = on_end
        self.released = False
        self.placed = False         # on a stack, in a queue or another task's next task

    def cursor_flags(self) -> int:
        """Task flags 0x1, 0x2, 0x10 become cursor flags (L226-231)."""
        return self.flags & CURSOR_BITS

    def cursors(self) -> list[RefCursor]:
        return []

    def set_flags(self, flags: int) -> None:
        """+0xcc: set the task flags; the cursor bits (0x1, 0x2, 0x10) go to its cursors
        (L226-231). Original: 0x001058f0."""
        self.flags = int(flags)
        self._apply_flags()

    def _apply_flags(self) -> None:
        for c in self.cursors():
            c.flags = self.cursor_flags()

    def leading_cursor(self) -> RefCursor | None:
        cs = self.cursors()
        return cs[0] if cs else None

    def anim_id(self) -> int:
        """+0x104: the anim id the task reports (-1 for none)."""
        c = self.leading_cursor()
        return c.anim_id if c is not None else -1

    def duration(self) -> float:
        """+0xd4: the leading clip's duration (s)."""
        c = self.leading_cursor()
        return c.duration if c is not None else 0.0

    def following(self) -> list["RefTask"]:
        """Tasks this one owns that are not on the stack (a type 3's next task)."""
        return []

    def start(self, world, inst) -> None:
        """+0x54, run once from the queue (0x00175610): ours, a change with no fade."""
        world.change(inst, self, 0.0)

    def set_window_time(self, t: float) -> None:
        """Kept at time ``t`` by a type 3's blend window (L313): the leading cursor at t,
        the others at its normalised time."""
        lead = self.leading_cursor()
        for c in self.cursors():
            c.set_time(t if c is lead else F.mul(F.div(t, self.duration()), c.duration))

    def trace(self) -> dict:
        """The task's entry in a scenario trace (game/runtime/trace.py): the engine's keys."""
        c = self.leading_cursor()
        return {"type": int(self.type), "id": self.anim_id(),
                "time": c.time if c else 0.0, "frame": c.frame if c else 0}

    def advance(self, world, inst, dt: float, sink) -> None:
        raise TypeError(f"{type(self).__name__} does not advance")

    def emit(self, world, stack) -> None:
        raise TypeError(f"{type(self).__name__} does not sample")


# ---------------------------------------------------------------- single clips


class _RefSingle(RefTask):
    def __init__(self, cursor: RefCursor, rate: float, flags: int = 0, held: int = 0, on_end=None):
        super().__init__(rate, flags, held, on_end)
        self.cursor = cursor
        cursor.flags = self.cursor_flags()

    def cursors(self) -> list[RefCursor]:
        return [self.cursor]

    def emit(self, world, stack) -> None:
        stack.sample(self.cursor, self.rate)


class RefLoop(_RefSingle):
    """Type 1 (L214, L318): one clip looping with a period of D - 1/60; on a wrap the cursor
    restarts, advances by the overshoot and the wrap callback (+0x28) is noted: it runs with
    the human once every human stepped (docs/original.md, "The per-update order").
    Original: 0x00105678, 0x00105770."""

    type = TaskType.LOOP

    def __init__(self, cursor, rate, flags=0, held=0, on_end=None, on_wrap=None):
        super().__init__(cursor, rate, flags, held, on_end)
        self.on_wrap = on_wrap
        self.wraps = 0

    def advance(self, world, inst, dt, sink) -> None:
        c = self.cursor
        over = c.advance(F.mul(dt, self.rate), sink, self)
        if _ended(world, c, over):
            c.restart()
            c.advance(over, sink, self)
            self.wraps += 1
            if self.on_wrap is not None:
                world.wrapped(inst, self)


class RefClip(_RefSingle):
    """Type 3 (L215, L313-314): one clip, then a next task, with a blend time b into it.

    In the clip's last b seconds (b at most the next task's duration) the next task is
    advanced too (BlendWindow.ADVANCED) or kept at the time into the window (KEPT) and
    its pose blended over the clip's by the share of b elapsed. On the update whose step
    would reach frame F the next task takes this one's place (advanced by dt when b > 0)
    and this one is deferred. No next task: the clip holds its last frame (ours).
    Original: 0x00105990, 0x00105af0, 0x00105ba0, 0x00105f78.
    """

    type = TaskType.CLIP

    def __init__(self, cursor, rate, next=None, blend=0.0, flags=0, held=0, on_end=None,
                 window_rule=BlendWindow.ADVANCED):
        if not (blend >= 0.0 and math.isfinite(blend)):
            raise ValueError(f"blend time {blend!r} must be finite and >= 0")
        super().__init__(cursor, rate, flags, held, on_end)
        self.next = next
        self.blend = F.f32(float(blend))
        self.window_rule = BlendWindow(window_rule)
        self.handed_over = False

    @property
    def next(self) -> RefTask | None:
        """The task that takes this one's place when its clip ends (None: hold the last frame)."""
        return self._next

    @next.setter
    def next(self, task: RefTask | None) -> None:
        # a next task has its one place here; the one it replaces has none now
        old = getattr(self, "_next", None)
        if old is not None and old is not task:
            old.placed = False
        if task is not None:
            task.placed = True
        self._next = task

    def following(self) -> list[RefTask]:
        return [] if self.next is None or self.handed_over else [self.next]

    def window(self) -> float:
        """The effective blend time: b, at most the next task's duration (L214)."""
        if self.next is None or self.blend <= 0.0:
            return 0.0
        return min(self.blend, self.next.duration())

    def into_window(self) -> float:
        """t - (D - b): > 0 inside the window."""
        b = self.window()
        if b <= 0.0:
            return 0.0
        c = self.cursor
        return F.sub(c.time, F.sub(c.duration, b))

    def advance(self, world, inst, dt, sink) -> None:
        c = self.cursor
        over = c.advance(F.mul(dt, self.rate), sink, self)
        if self.next is not None and _ended(world, c, over):
            nxt = self.next
            self.handed_over = True
            world.replace(inst, self, nxt)                 # L313: in its own place
            if self.window() > 0.0:
                nxt.advance(world, inst, dt, sink)         # L313: advanced by dt with a blend time
        elif self.window_rule == BlendWindow.ADVANCED and self.into_window() > 0.0:
            assert self.next is not None                   # a window is a next task's
            self.next.advance(world, inst, dt, sink)       # L215: "the next task is advanced too"

    def trace(self) -> dict:
        d = super().trace()
        if self.next is not None:
            d["next"] = self.next.anim_id()
            d["blend"] = self.blend
        return d

    def emit(self, world, stack) -> None:
        c = self.cursor
        stack.sample(c, self.rate)
        b = self.window()
        if b > 0.0:
            into = self.into_window()
            if into > 0.0:
                assert self.next is not None               # a window is a next task's
                if self.window_rule == BlendWindow.KEPT:
                    self.next.set_window_time(into)
                self.next.emit(world, stack)
                stack.blend_top(min(into / b, 1.0))


class RefHold(_RefSingle):
    """Type 5 (not traced, ours): one clip played once, holding its last frame."""

    type = TaskType.HOLD

    def advance(self, world, inst, dt, sink) -> None:
        self.cursor.advance(F.mul(dt, self.rate), sink, self)


class RefScene(RefHold):
    """Type 7 (L221): a scene's clip at the scene code's rate; held at its end (ours).
    Original: 0x001069c0."""

    type = TaskType.SCENE


class RefPairedClip(RefClip):
    """Type 6 (L222, L241-245): a type 3 whose clip and rate come from another human's
    set. Original: 0x00108a78."""

    type = TaskType.PAIRED_CLIP

    def __init__(self, cursor, rate, partner, next=None, blend=0.0, flags=0, held=0, on_end=None,
                 window_rule=BlendWindow.ADVANCED):
        super().__init__(cursor, rate, next, blend, flags, held, on_end, window_rule)
        self.partner = partner


class RefPairedHold(RefHold):
    """Type 4 (L223): a paired type 5. Original: 0x00108450."""

    type = TaskType.PAIRED_HOLD

    def __init__(self, cursor, rate, partner, flags=0, held=0, on_end=None):
        super().__init__(cursor, rate, flags, held, on_end)
        self.partner = partner


# ---------------------------------------------------------------- fades


class RefFade(RefTask):
    """Type 9 ("Fades" L263-266): duration d (+0x18), elapsed t (+0x1c); when t reaches d,
    or the stack holds more than 12 tasks, it gives back itself and every task between
    the new one and itself. Original: 0x00106c80, 0x00106cc8, 0x00106e50, 0x00106ee8."""

    type = TaskType.FADE

    def __init__(self, duration: float, rate: float = 1.0, held: int = 0, on_end=None):
        if not (duration >= 0.0 and math.isfinite(duration)):
            raise ValueError(f"fade time {duration!r} must be finite and >= 0")
        super().__init__(rate, 0, held, on_end)
        self.fade_time = F.f32(float(duration))
        self.elapsed = 0.0
        self.incoming: RefTask | None = None

    def anim_id(self) -> int:
        return -1

    def duration(self) -> float:
        return self.fade_time

    def weight(self) -> float:
        return fade_weight(self.elapsed, self.fade_time)

    def advance(self, world, inst, dt, sink) -> None:
        self.elapsed = F.add(self.elapsed, F.mul(dt, self.rate))
        if self.elapsed >= self.fade_time or len(inst.stack) > world.options.cleanup_above:
            world.complete_fade(inst, self)

    def finish_early(self, world, inst) -> None:
        """"The task stack" L255: advanced by its remaining time (0x00177eb8)."""
        self.elapsed = F.add(self.elapsed, F.sub(self.fade_time, self.elapsed))
        if self.elapsed < self.fade_time:
            self.elapsed = self.fade_time
        world.complete_fade(inst, self)

    def trace(self) -> dict:
        return {"type": int(self.type), "id": -1, "time": self.elapsed, "frame": 0,
                "elapsed": self.elapsed, "duration": self.fade_time, "weight": round(self.weight(), 6)}

    def emit(self, world, stack) -> None:
        stack.blend_top(self.weight())


# ---------------------------------------------------------------- blends of several clips


class RefGait(RefTask):
    """Type 12 ("Gait blend" L269-288): five clips on a value v in 0-4.

    Each advance: v moves toward the target by at most rate x dt x speed (L283); the pair
    is floor(v), floor(v) + 1 with the steps 0.995 / 1.995 / 2.995, a clip that comes in
    joins at the normalised time of the one it joins (L284); one cursor leads and
    advances, the other follows at its normalised time, muted (L285). Leader: fraction
    < 0.01 the lower, >= 0.995 the upper; else the upper when v is still above the
    target or the fraction before the move was over 0.875, else the lower.
    Original: 0x0010a310, 0x0010a5b8, 0x0010adf8, 0x0010a500, 0x0010a558.
    """

    type = TaskType.GAIT

    def __init__(self, ids, make_cursor, rate=1.0, value=0.0, target=None, flags=0x2C1, speed=10.0,
                 on_wrap=None, held=0, on_end=None):
        if len(ids) != 5:
            raise ValueError(f"gait blend: 5 anim ids, got {len(ids)}")
        v = self._clamp(value)
        super().__init__(rate, flags, held, on_end)
        self.ids = tuple(int(i) for i in ids)
        self.make_cursor = make_cursor
        self.speed = F.f32(float(speed))
        self.on_wrap = on_wrap
        self.value = self.target = v
        self.lower = self.pair_index(v)
        self.lower_cursor = make_cursor(self.ids[self.lower])
        self.upper_cursor = make_cursor(self.ids[self.lower + 1])
        self.leader = 1 if v - self.lower >= GAIT_ALONE_HIGH else 0
        self._apply_flags()
        if target is not None:
            self.set_target(target)

    @staticmethod
    def _clamp(v: float) -> float:
        if not math.isfinite(v):
            raise ValueError(f"gait value {v!r} must be finite")
        return F.f32(min(max(float(v), 0.0), 4.0))

    @staticmethod
    def pair_index(v: float) -> int:
        """floor(v) with the steps 0.995, 1.995, 2.995 (L284)."""
        for i, step in enumerate(GAIT_STEPS):
            if v < step:
                return i
        return 3

    def set_target(self, target: float) -> None:
        """+0xac (0x0010a500): clamped to 0-4, rounded unless flag 0x200 (L232, L276)."""
        t = self._clamp(target)
        if not self.flags & 0x200:
            t = float(math.floor(t + 0.5))
        self.target = t

    def set_value(self, v: float) -> None:
        """+0xbc (0x0010a558): the value at once; the pair follows on the next advance."""
        self.value = self._clamp(v)

    def _lead_follow(self):
        if self.leader == 0:
            return self.lower_cursor, self.upper_cursor
        return self.upper_cursor, self.lower_cursor

    def _apply_flags(self) -> None:
        lead, other = self._lead_follow()
        lead.flags = self.cursor_flags()
        other.flags = self.cursor_flags() | MUTED                   # L285: the other's muted

    def cursors(self) -> list[RefCursor]:
        return [self.lower_cursor, self.upper_cursor]

    def leading_cursor(self) -> RefCursor:
        return self._lead_follow()[0]

    def advance(self, world, inst, dt, sink) -> None:
        old_value = self.value
        old_fraction = old_value - self.lower
        old_lead = self.leading_cursor()
        limit = F.mul(F.mul(self.rate, dt), self.speed)                          # L283
        if self.target > old_value:
            self.value = min(F.add(old_value, limit), self.target)
        elif self.target < old_value:
            self.value = max(F.sub(old_value, limit), self.target)
        lower = self.pair_index(self.value)
        if lower != self.lower:                                                   # L284
            kept = {self.ids[self.lower]: self.lower_cursor, self.ids[self.lower + 1]: self.upper_cursor}
            new = []
            for idx in (lower, lower + 1):
                cid = self.ids[idx]
                if cid in kept:
                    new.append(kept.pop(cid))
                else:
                    c = self.make_cursor(cid)
                    follow(old_lead, c)
                    new.append(c)
            self.lower_cursor, self.upper_cursor = new
            self.lower = lower
        frac = self.value - self.lower                                            # L285
        if frac < GAIT_ALONE_LOW:
            self.leader = 0
        elif frac >= GAIT_ALONE_HIGH:
            self.leader = 1
        elif self.value > self.target or old_fraction > GAIT_FALL_FRACTION:
            self.leader = 1
        else:
            self.leader = 0
        self._apply_flags()
        lead, other = self._lead_follow()
        if _advance_looping(world, lead, F.mul(dt, self.rate), sink, self):
            if self.on_wrap is not None:
                world.wrapped(inst, self)                                         # +0x40 / +0x44
        follow(lead, other)

    def trace(self) -> dict:
        d = super().trace()
        d.update(ids=list(self.ids), value=self.value, target=self.target, lower=self.ids[self.lower],
                 upper=self.ids[self.lower + 1], leader=self.leading_cursor().anim_id)
        return d

    def emit(self, world, stack) -> None:
        """L286: below 0.01 the lower alone, above 0.995 the upper alone, else both
        blended by the fraction (the upper's weight)."""
        frac = self.value - self.lower
        if frac < GAIT_ALONE_LOW:
            stack.sample(self.lower_cursor, self.rate)
        elif frac > GAIT_ALONE_HIGH:
            stack.sample(self.upper_cursor, self.rate)
        else:
            stack.sample(self.lower_cursor, self.rate)
            stack.sample(self.upper_cursor, self.rate)
            stack.blend_top(frac)


class RefMix(RefTask):
    """Type 10 (L217; details ours, as docs/original.md reads them): two looping clips
    mixed by a weight (the second's share) that eases toward its target at ``speed``
    units/s; the heavier clip leads, the other follows at its normalised time, muted.
    The weight is a double, as the engine keeps it. Original: 0x0010b090, 0x0010b448."""

    type = TaskType.MIX

    def __init__(self, a, b, rate=1.0, weight=0.0, flags=0, speed=10.0, held=0, on_end=None):
        super().__init__(rate, flags, held, on_end)
        self.a, self.b = a, b
        self.value = self.target = min(max(float(weight), 0.0), 1.0)
        self.speed = F.f32(float(speed))
        self._apply()

    def _apply(self) -> None:
        lead = self.leading_cursor()
        for c in (self.a, self.b):
            c.flags = self.cursor_flags() | (0 if c is lead else MUTED)

    def set_target(self, w: float) -> None:
        self.target = min(max(float(w), 0.0), 1.0)

    def set_value(self, w: float) -> None:
        self.value = self.target = min(max(float(w), 0.0), 1.0)
        self._apply()

    def cursors(self) -> list[RefCursor]:
        return [self.a, self.b]

    def leading_cursor(self) -> RefCursor:
        return self.b if self.value >= 0.5 else self.a

    def advance(self, world, inst, dt, sink) -> None:
        limit = F.mul(F.mul(self.rate, dt), self.speed)
        if self.target > self.value:
            self.value = min(self.value + limit, self.target)
        elif self.target < self.value:
            self.value = max(self.value - limit, self.target)
        self._apply()
        lead = self.leading_cursor()
        other = self.a if lead is self.b else self.b
        _advance_looping(world, lead, F.mul(dt, self.rate), sink, self)
        follow(lead, other)

    def emit(self, world, stack) -> None:
        stack.sample(self.a, self.rate)
        stack.sample(self.b, self.rate)
        stack.blend_top(self.value)


class RefPick(RefTask):
    """Type 11 (L218; details ours): four looping clips advancing in step; a value 0-3
    picks the audible one by 0.51 / 1.51 / 2.51 (the others muted). PickSampling CHOSEN
    samples the picked clip; ALL pushes all four and keeps the picked one's pose.
    Original: 0x00106f50, 0x00107f60."""

    type = TaskType.PICK

    def __init__(self, cursors, rate, value=0.0, flags=0, held=0, on_end=None, sampling=PickSampling.CHOSEN):
        super().__init__(rate, flags, held, on_end)
        if len(cursors) != 4:
            raise ValueError(f"type 11: 4 clips, got {len(cursors)}")
        self.sampling = PickSampling(sampling)
        self.clips = list(cursors)
        self.set_value(value)

    def chosen(self) -> int:
        for i, th in enumerate(PICK_THRESHOLDS):
            if self.value < th:
                return i
        return 3

    def set_value(self, v: float) -> None:
        self.value = F.f32(min(max(float(v), 0.0), 3.0))
        k = self.chosen()
        for i, c in enumerate(self.clips):
            c.flags = self.cursor_flags() | (0 if i == k else MUTED)

    set_target = set_value

    def cursors(self) -> list[RefCursor]:
        return list(self.clips)

    def leading_cursor(self) -> RefCursor:
        return self.clips[self.chosen()]

    def advance(self, world, inst, dt, sink) -> None:
        for c in self.clips:
            _advance_looping(world, c, F.mul(dt, self.rate), sink, self)

    def emit(self, world, stack) -> None:
        if self.sampling == PickSampling.ALL:
            pushed = [stack.sample(c, self.rate) for c in self.clips]
            stack.keep(pushed, pushed[self.chosen()])
        else:
            stack.sample(self.leading_cursor(), self.rate)


class RefDirection(RefTask):
    """Type 13 (L220; weights ours): three neighbouring clips of eight, ids
    base + (d - 1) & 7, base + d, base + (d + 1) & 7 around the nearest direction d; the
    centre leads and fires, the neighbours follow at its normalised time; the pose mixes
    the centre with the neighbour on the value's side by the distance to it.
    Original: 0x00109210, 0x0010a008."""

    type = TaskType.DIRECTION

    def __init__(self, base, make_cursor, rate=1.0, direction=0.0, flags=0, held=0, on_end=None):
        super().__init__(rate, flags, held, on_end)
        self.base = int(base)
        self.make_cursor = make_cursor
        self.by_dir: dict[int, RefCursor] = {}
        self.set_value(direction)

    def _neighbours(self):
        c = self.centre
        return (c - 1) & 7, c, (c + 1) & 7

    def set_value(self, direction: float) -> None:
        self.value = float(direction) % 8.0
        self.centre = int(math.floor(self.value + 0.5)) & 7
        lead = self.by_dir.get(self.centre)
        keep = {}
        for d in self._neighbours():
            cur = self.by_dir.get(d)
            if cur is None:
                cur = self.make_cursor(self.base + d)
                if lead is not None:
                    follow(lead, cur)
            keep[d] = cur
        self.by_dir = keep
        for d, cur in keep.items():
            cur.flags = self.cursor_flags() | (0 if d == self.centre else MUTED)

    set_target = set_value

    def cursors(self) -> list[RefCursor]:
        return [self.by_dir[d] for d in self._neighbours()]

    def leading_cursor(self) -> RefCursor:
        return self.by_dir[self.centre]

    def advance(self, world, inst, dt, sink) -> None:
        lead = self.leading_cursor()
        _advance_looping(world, lead, F.mul(dt, self.rate), sink, self)
        for cur in self.by_dir.values():
            if cur is not lead:
                follow(lead, cur)

    def emit(self, world, stack) -> None:
        lead = self.leading_cursor()
        off = (self.value - self.centre + 4.0) % 8.0 - 4.0
        lo, _, hi = self._neighbours()
        side, w = (hi, off) if off >= 0 else (lo, -off)
        stack.sample(lead, self.rate)
        if w > 0.0:
            stack.sample(self.by_dir[side], self.rate)
            stack.blend_top(w)
