"""The compiled engine's driver: a whole crowd stepped and posed by numba kernels.

Most updates of most characters are uneventful: each clip cursor steps, a fade's time
grows, a gait value eases toward its target. ``BatchEngine`` compiles each character's
stack once (when it changes) into a small fixed-width program (rows of arrays: the
cursors it advances, its fades, its gait blend, its samples and blends), then each
update:

1. one kernel call (anim.kernels.step_programs) steps every programmed character over
   the world's tables (anim.store): the cursors' new times and frames, the fades'
   elapsed times, the gait values, pairs and leaders, all in the FPU's toward-zero
   float32; it commits the uneventful ones and lists their events, wraps and follower
   jumps in preallocated buffers;
2. a character is "eventful" when anything beyond that happens this update: a clip
   reaches its end (a hand-over, a wrap with a callback, the zero-overshoot case), a
   fade finishes, a gait changes pair, leader or sampling regime, a clip enters its
   blend window; those, plus characters with queued tasks or task types outside the
   programs (10, 11, 13), take the scalar per-character step
   (anim.player.Player.step_one), from the state before the update;
3. Python turns the listed events into FiredEvent objects (the held-flag rules), counts
   the loops' wraps and lets gait followers re-find their next event.

The scalar step stays the reference: the compiled one gives the same times, frames,
events, ids and flags (tests/anim/test_batch.py checks it over random scenarios).

Posing likewise: one kernel call (anim.kernels.pose_programs) samples, blends and builds
the bone transforms of every programmed character from its program (samples by cursor
row, blends by weight source: a fade's elapsed time, a gait's value); the others emit a
plan (anim.plan.SamplePlan) that a second call runs.

Spec: "When a clip ends", "Fades", "Gait blend", "The task stack".
"""
from __future__ import annotations

import numpy as np

from . import f32 as F
from . import kernels as K
from .plan import Bones, SamplePlan, pose_tables, scratch_poses
from .pose import POSE_STACK_SIZE, PoseBatch
from .tasks import (GAIT_ALONE_HIGH, GAIT_ALONE_LOW, GAIT_FALL_FRACTION, GAIT_STEPS, EventRule, TaskType)

__all__ = ["BatchEngine", "A_MAX", "F_MAX", "S_MAX", "B_MAX"]

A_MAX = 4          # advancing cursors per fast character
F_MAX = 2          # fades
S_MAX = 6          # samples
B_MAX = 5          # blends
STACK_MAX = 6      # longer stacks take the scalar step (the early finish acts above 6)

_CLIP_TYPES = (TaskType.LOOP, TaskType.CLIP, TaskType.PAIRED_CLIP, TaskType.HOLD, TaskType.SCENE,
               TaskType.PAIRED_HOLD)
_WINDOW_TYPES = (TaskType.CLIP, TaskType.PAIRED_CLIP)
_KIND_FADE = K.KIND_FADE
_KIND_GAIT = K.KIND_GAIT
_GAIT_STEPS = np.array(GAIT_STEPS, dtype=np.float64)
_INF = np.float32(np.inf)


class _Dynamic(Exception):
    """The character cannot be compiled this update (a blend window, an unusual stack)."""


class BatchEngine:
    """The batched step and sample of one Player (see the module docstring)."""

    # The program arrays, one row per slot, made (and grown) by _grow from its spec.
    valid: np.ndarray
    adv_row: np.ndarray
    adv_rate: np.ndarray
    adv_ws: np.ndarray
    adv_newest: np.ndarray
    adv_wrap: np.ndarray
    fol_row: np.ndarray
    fol_lead: np.ndarray
    fade_row: np.ndarray
    fade_rate: np.ndarray
    gait_row: np.ndarray
    gait_rate: np.ndarray
    gait_speed: np.ndarray
    gait_regime: np.ndarray
    s_row: np.ndarray
    s_rate: np.ndarray
    b_a: np.ndarray
    b_b: np.ndarray
    b_kind: np.ndarray
    b_src: np.ndarray
    b_level: np.ndarray
    final: np.ndarray

    def __init__(self, player):
        self.player = player
        self.cap = 0
        self.dirty: set[int] = set()            # slots whose program must be recompiled
        self._instances: list = []              # slot -> CharacterInstance
        self._next = 0
        self._last: list = []                   # the instance list of the last step
        self._last_slots = np.zeros(0, np.int64)
        self._noisy: list = []                  # characters whose events / released to clear
        self._nbuf = 0
        self._counts = np.zeros(3, np.int64)
        self._work_f = np.zeros((2, max(A_MAX, F_MAX)), np.float64)
        self._work_i = np.zeros(A_MAX, np.int64)
        self._work_b = np.zeros(A_MAX, np.bool_)
        self._scratch = scratch_poses(S_MAX + B_MAX + 1)
        self._bones: Bones | None = None
        self._grow(64)

    # ---------------------------------------------------------------- programs
    def _grow(self, cap: int) -> None:
        old = self.cap

        def arr(shape, dtype, fill=0):
            a = np.full((cap,) + shape, fill, dtype=dtype)
            if old:
                a[:old] = getattr(self, name)[:old]
            return a

        spec = {
            "valid": ((), bool, False), "adv_row": ((A_MAX,), np.int64, -1), "adv_rate": ((A_MAX,), np.float32, 0),
            "adv_ws": ((A_MAX,), np.float32, np.inf), "adv_newest": ((A_MAX,), bool, False),
            "adv_wrap": ((A_MAX,), bool, False),
            "fol_row": ((), np.int64, -1), "fol_lead": ((), np.int64, -1),
            "fade_row": ((F_MAX,), np.int64, -1), "fade_rate": ((F_MAX,), np.float32, 0),
            "gait_row": ((), np.int64, -1), "gait_rate": ((), np.float32, 0), "gait_speed": ((), np.float32, 0),
            "gait_regime": ((), np.int8, 0),
            "s_row": ((S_MAX,), np.int64, -1), "s_rate": ((S_MAX,), np.float32, 0),
            "b_a": ((B_MAX,), np.int64, -1), "b_b": ((B_MAX,), np.int64, -1), "b_kind": ((B_MAX,), np.int8, 0),
            "b_src": ((B_MAX,), np.int64, 0), "b_level": ((B_MAX,), np.int64, 0), "final": ((), np.int64, -1),
        }
        for name, (shape, dtype, fill) in spec.items():
            setattr(self, name, arr(shape, dtype, fill))
        self._adv_tasks = getattr(self, "_adv_tasks", []) + [[None] * A_MAX for _ in range(cap - old)]
        self._follower = getattr(self, "_follower", []) + [None] * (cap - old)
        self._sig = getattr(self, "_sig", []) + [None] * (cap - old)
        self._instances = self._instances + [None] * (cap - old)
        self.cap = cap

    def _slot(self, inst) -> int:
        """The character's slot in the program arrays (a new one on first sight)."""
        s = inst.slot
        if not (0 <= s < self.cap and self._instances[s] is inst):
            s = self._next
            self._next += 1
            if s >= self.cap:
                self._grow(max(self.cap * 2, s + 1))
            inst.slot = s
            self._instances[s] = inst
            self.dirty.add(s)
        return s

    def _slots_of(self, instances) -> np.ndarray:
        """The slots of ``instances``, reused while the same characters come in the same order."""
        if len(instances) == len(self._last) and instances == self._last:
            return self._last_slots
        slots = np.array([self._slot(inst) for inst in instances], dtype=np.int64)
        self._last, self._last_slots = list(instances), slots
        return slots

    def touched(self) -> list:
        """The characters whose events or released lists were filled since the last step
        began (every one with events this update is here)."""
        return self._noisy

    def released_by_flush(self, inst) -> None:
        """The flush filled ``inst.released``: clear it at the next step."""
        self._noisy.append(inst)

    def mark(self, inst) -> None:
        """The character's stack changed: recompile its program before it is used again."""
        if 0 <= inst.slot < self.cap and self._instances[inst.slot] is inst:
            self.dirty.add(inst.slot)
            self.valid[inst.slot] = False

    def _compile(self, slot: int) -> None:
        """Compile one character's stack into its fixed-width program, or mark it slow."""
        inst = self._instances[slot]
        self.valid[slot] = False
        self.dirty.discard(slot)
        try:
            prog = self._program(inst)
        except _Dynamic:
            self._sig[slot] = None
            return
        (adv, fades, gait, samples, blends, final) = prog
        pad = A_MAX - len(adv)
        self.adv_row[slot] = [a[0] for a in adv] + [-1] * pad
        self.adv_rate[slot] = [a[1] for a in adv] + [0.0] * pad
        self.adv_ws[slot] = [a[2] for a in adv] + [np.inf] * pad
        self.adv_newest[slot] = [a[3] for a in adv] + [False] * pad
        self._adv_tasks[slot] = [a[4] for a in adv] + [None] * pad
        self.adv_wrap[slot] = [a[4].type in (TaskType.LOOP, TaskType.GAIT) and a[4].on_wrap is None
                               for a in adv] + [False] * pad
        pad = F_MAX - len(fades)
        self.fade_row[slot] = [f[0] for f in fades] + [-1] * pad
        self.fade_rate[slot] = [f[1] for f in fades] + [0.0] * pad
        if gait is not None:
            g, regime = gait
            lead, follow = g._lead_follow()
            self.gait_row[slot], self.gait_rate[slot], self.gait_speed[slot] = g.row, g.rate, g.speed
            self.gait_regime[slot] = regime
            self.fol_row[slot], self.fol_lead[slot] = follow.row, lead.row
            self._follower[slot] = follow
        else:
            self.gait_row[slot] = self.fol_row[slot] = self.fol_lead[slot] = -1
            self._follower[slot] = None
        pad = S_MAX - len(samples)
        self.s_row[slot] = [x[0] for x in samples] + [-1] * pad
        self.s_rate[slot] = [x[1] for x in samples] + [0.0] * pad
        pad = B_MAX - len(blends)
        self.b_a[slot] = [b[0] for b in blends] + [-1] * pad
        self.b_b[slot] = [b[1] for b in blends] + [-1] * pad
        self.b_kind[slot] = [b[2] for b in blends] + [0] * pad
        self.b_src[slot] = [b[3] for b in blends] + [0] * pad
        self.b_level[slot] = [b[4] for b in blends] + [0] * pad
        self.final[slot] = final
        self.valid[slot] = True
        self._sig[slot] = _signature(inst)

    def _program(self, inst):
        """The stack as (advancing cursors, fades, gait, samples, blends, final handle)."""
        stack = inst.stack
        if inst.queue or len(stack) > STACK_MAX:
            raise _Dynamic
        newest = self.player.top(inst)
        adv, fades, samples, blends = [], [], [], []
        gait = None
        pstack: list[tuple[int, int]] = []        # (handle, level)

        def sample(row: int, rate: float) -> None:
            if len(samples) >= S_MAX or len(pstack) >= POSE_STACK_SIZE:
                raise _Dynamic
            pstack.append((len(samples), 0))
            samples.append((row, rate))

        def blend_top(kind: int, src: int) -> None:
            if len(pstack) < 2:
                return
            if len(blends) >= B_MAX:
                raise _Dynamic
            (hb, lb), (ha, la) = pstack.pop(), pstack.pop()
            level = max(la, lb) + 1
            blends.append((ha, hb, kind, src, level))
            pstack.append((S_MAX + len(blends) - 1, level))

        for task in stack:
            tt = task.type
            if tt in _CLIP_TYPES:
                c = task.cursor
                ws = _INF
                if tt in _WINDOW_TYPES and task.window() > 0.0:
                    ws = F.sub(c.duration, task.window())
                    if F.sub(c.time, ws) > 0.0:
                        raise _Dynamic                # in the blend window: emitted per update
                if len(adv) >= A_MAX:
                    raise _Dynamic
                adv.append((c.row, task.rate, ws, task is newest, task))
                sample(c.row, task.rate)
            elif tt == TaskType.FADE:
                if len(fades) >= F_MAX:
                    raise _Dynamic
                fades.append((task.row, task.rate))
                blend_top(_KIND_FADE, len(fades) - 1)
            elif tt == TaskType.GAIT and gait is None:
                if len(adv) >= A_MAX:
                    raise _Dynamic
                lead, _ = task._lead_follow()
                adv.append((lead.row, task.rate, _INF, task is newest, task))
                frac = task.fraction()
                regime = 0 if frac < GAIT_ALONE_LOW else (2 if frac > GAIT_ALONE_HIGH else 1)
                gait = (task, regime)
                lo, up = task.lower_cursor, task.upper_cursor
                if regime == 0:
                    sample(lo.row, task.rate)
                elif regime == 2:
                    sample(up.row, task.rate)
                else:
                    sample(lo.row, task.rate)
                    sample(up.row, task.rate)
                    blend_top(_KIND_GAIT, 0)
            else:
                raise _Dynamic
        final = pstack[-1][0] if pstack else -1
        return adv, fades, gait, samples, blends, final

    # ---------------------------------------------------------------- the step
    def _buffers(self, n: int) -> None:
        """The step kernel's outputs for up to n compiled humans (grown, never per update)."""
        if self._nbuf >= max(n, 1):
            return
        m = max(n, 2 * self._nbuf, 64)
        self._eventful = np.zeros(m, np.int8)
        self._ev_out = np.zeros((m * A_MAX, 3), np.int64)
        self._wrap_out = np.zeros((m * A_MAX, 2), np.int64)
        self._skip_out = np.zeros(m, np.int64)
        self._nbuf = m

    def step(self, instances, dt: float) -> list:
        """Advance every character one update; returns those that took the scalar step."""
        player = self.player
        cur, fad, gai = player.stores.cursors, player.stores.fades, player.stores.gaits
        slots = self._slots_of(instances)
        slow: list = []
        # Clear last update's events and releases (only the lists that were filled).
        for inst in self._noisy:
            inst.events.clear()
            inst.released.clear()
        self._noisy = []
        for s in sorted(self.dirty):
            self._compile(s)
        fast = self.valid[slots]
        H = slots[fast]
        nh = len(H)
        self._buffers(nh)
        counts = self._counts
        K.step_programs(H, float(np.float32(dt)), bool(player.options.end_zero_overshoot),
                        self.adv_row, self.adv_rate, self.adv_ws, self.adv_wrap, self.fade_row, self.fade_rate,
                        self.gait_row, self.gait_rate, self.gait_speed, self.gait_regime, self.fol_row,
                        self.fol_lead, cur.t, cur.frame, cur.end, cur.limit, cur.dur, cur.ev, cur.evf, cur.evf0,
                        cur.at_end, fad.el, fad.dur, gai.value, gai.target, gai.lower, gai.leader,
                        _GAIT_STEPS, GAIT_ALONE_LOW, GAIT_ALONE_HIGH, GAIT_FALL_FRACTION,
                        self._eventful, self._ev_out, self._wrap_out, self._skip_out, counts,
                        self._work_f, self._work_i, self._work_b)
        n_ev, n_wrap, n_skip = int(counts[0]), int(counts[1]), int(counts[2])
        # What stays in Python: the loops' wrap counts, the events' objects (the human's
        # list, the held-flag events), a gait follower's next event after a jump.
        if n_wrap:
            for s, k in self._wrap_out[:n_wrap].tolist():
                task = self._adv_tasks[s][k]
                if task.type == TaskType.LOOP:
                    task.wraps += 1
        # Events the committed cursors passed, in stack order per character (all tasks
        # fire, their muted cursors excepted, unless only the newest task's do).
        newest_only = player.options.events == EventRule.NEWEST
        if n_ev:
            for s, k, r in self._ev_out[:n_ev].tolist():
                inst = self._instances[s]
                task = self._adv_tasks[s][k]
                c = _cursor_at(task, r)
                n0 = len(inst.events)
                if not n0:
                    self._noisy.append(inst)
                c._fire(inst.events if self.adv_newest[s, k] or not newest_only else None, task)
                if len(inst.events) > n0:
                    player._held_events(inst, inst.events, n0)
        if n_skip:
            for s in self._skip_out[:n_skip].tolist():
                self._follower[s]._skip()

        # The eventful ones, and those the kernel does not cover, take the scalar step.
        slow_mask = ~fast
        if nh:
            slow_mask[np.flatnonzero(fast)[self._eventful[:nh] != 0]] = True
        for i in np.flatnonzero(slow_mask).tolist():
            inst = instances[i]
            player.step_one(inst, dt)
            self._noisy.append(inst)
            s = inst.slot
            if self.valid[s] and _signature(inst) != self._sig[s]:
                self.mark(inst)
            slow.append(inst)
        return slow

    # ---------------------------------------------------------------- the sample
    def sample(self, instances, dynamic_plan: SamplePlan | None = None) -> PoseBatch:
        """Every character's pose (instances order), in new arrays."""
        out = Bones(len(instances))
        self.pose(instances, out, dynamic_plan)
        return out.poses

    def pose(self, instances, out: Bones | None = None, dynamic_plan: SamplePlan | None = None) -> Bones:
        """Every character's pose and bone transforms (instances order) in one compiled call
        for the compiled programs, one more for the others (their tasks emit a plan).

        ``out`` (Bones for len(instances)) is written; without it the engine's own buffers
        are reused (overwritten by the next call).
        """
        player = self.player
        bank = player.bank
        cur, fad, gai = player.stores.cursors, player.stores.fades, player.stores.gaits
        n = len(instances)
        if out is None:
            if self._bones is None or self._bones.n != n:
                self._bones = Bones(n)
            out = self._bones
        slots = self._slots_of(instances)
        static = self.valid[slots]
        tables = pose_tables(bank)
        K.pose_programs(slots[static], np.flatnonzero(static), self.s_row, self.s_rate, self.b_a, self.b_b,
                        self.b_kind, self.b_src, self.final, self.fade_row, self.gait_row,
                        cur.t, cur.flags, cur.bank, fad.el, fad.dur, gai.value, gai.lower,
                        *tables.args, *self._scratch, *out.outs())
        dyn_idx = np.flatnonzero(~static)
        if len(dyn_idx):
            plan = dynamic_plan or SamplePlan()
            for i in dyn_idx.tolist():
                inst = instances[i]
                plan.begin(inst.name, inst)
                for task in inst.stack:
                    task.emit(plan)
                plan.end()
            plan.run(bank, dyn_idx, out)
        return out


def _cursor_at(task, row: int):
    for c in task.cursors():
        if c.row == row:
            return c
    raise LookupError(f"no cursor at row {row} in {task!r}")


def _signature(inst) -> tuple:
    """What a compiled program depends on: the stack's tasks in order, a gait's pair
    cursors, leader and sampling regime, whether a clip is in its blend window."""
    sig: list = []
    for t in inst.stack:
        tt = t.type
        if tt == TaskType.GAIT:
            frac = t.fraction()
            regime = 0 if frac < GAIT_ALONE_LOW else (2 if frac > GAIT_ALONE_HIGH else 1)
            sig.append((id(t), t.lower_cursor.row, t.upper_cursor.row, t.leader, regime))
        elif tt in _WINDOW_TYPES and t.window() > 0.0:
            c = t.cursor
            sig.append((id(t), F.sub(c.time, F.sub(c.duration, t.window())) > 0.0))
        else:
            sig.append(id(t))
    return (tuple(sig), len(inst.queue))
