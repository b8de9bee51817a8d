"""The batched animation step and sample: a whole crowd in a few vectorised calls.

Most updates of most characters are uneventful: each clip cursor steps, a fade's time
grows, a gait value eases toward its target. ``BatchEngine`` compiles each character's
stack once (when it changes) into a small fixed-width program, then each update:

1. computes every fast character's step at once over the world's tables (anim.store):
   the cursors' new times and frames, the fades' new elapsed times, the gait values,
   pairs and leaders, all in the FPU's toward-zero float32 (anim.f32);
2. marks a character "eventful" when anything beyond that happens this update: a clip
   reaches its end (a hand-over, a wrap, the zero-overshoot case), a fade finishes, a
   gait changes pair, leader or sampling regime, a clip enters its blend window;
3. commits the step of every uneventful character (and fires the events its cursors
   passed, with the held-flag rules), and runs every eventful one, plus those with
   queued tasks or task types outside the fast set (10, 11, 13), through the scalar
   per-character step (anim.player.Player.step_one), from the state before the update.

The scalar step stays the reference: the batched one gives the same times, frames,
events, ids and flags (tests/anim/test_batch.py checks it over random scenarios).

Sampling likewise: an uneventful character's compiled program names its samples by
cursor row and its blends by weight source (a fade's elapsed time, a gait's value), so
the plan for the crowd is a handful of gathers; the others are emitted by their tasks.

Spec: "When a clip ends", "Fades", "Gait blend", "The task stack".
"""
from __future__ import annotations

import math

import numpy as np

from . import f32 as F
from .plan import SamplePlan
from .pose import DTYPE, POSE_STACK_SIZE, PoseBatch, blend
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
_KIND_FADE = 1
_KIND_GAIT = 2
_GAIT_STEPS = np.array(GAIT_STEPS, dtype=np.float64)
_INF = np.float32(np.inf)


class _Dynamic(Exception):
    """The character cannot be compiled this update (a blend window, an unusual stack)."""


class BatchEngine:
    """The batched step and sample of one Player (see the module docstring)."""

    def __init__(self, player):
        self.player = player
        self.cap = 0
        self.dirty: set[int] = set()            # slots whose program must be recompiled
        self._instances: list = []              # slot -> CharacterInstance
        self._next = 0
        self._last: list = []                   # the instance list of the last step
        self._last_slots = np.zeros(0, np.int64)
        self._noisy: list = []                  # characters whose events / released to clear
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
        flag = np.zeros(self.cap, bool)
        H = slots[fast]
        dt32 = np.float32(dt)

        # Gait blends: ease the value, find the pair, the leader and the sampling regime.
        gh = H[self.gait_row[H] >= 0]
        if len(gh):
            gr = self.gait_row[gh]
            val, tgt = gai.value[gr], gai.target[gr]
            lower, leader = gai.lower[gr], gai.leader[gr]
            limit = F.mul_v(F.mul_v(self.gait_rate[gh], dt32), self.gait_speed[gh])
            up = np.minimum(F.add_v(val, limit), tgt)
            down = np.maximum(F.sub_v(val, limit), tgt)
            nv = np.where(tgt > val, up, np.where(tgt < val, down, val)).astype(np.float32)
            nlower = np.searchsorted(_GAIT_STEPS, nv.astype(np.float64), side="right")
            frac = nv.astype(np.float64) - lower
            old_frac = val.astype(np.float64) - lower
            nlead = np.where(frac < GAIT_ALONE_LOW, 0,
                             np.where(frac >= GAIT_ALONE_HIGH, 1,
                                      np.where((nv > tgt) | (old_frac > GAIT_FALL_FRACTION), 1, 0)))
            regime = np.where(frac < GAIT_ALONE_LOW, 0, np.where(frac > GAIT_ALONE_HIGH, 2, 1))
            gflag = (nlower != lower) | (nlead != leader) | (regime != self.gait_regime[gh])
            flag[gh[gflag]] = True

        # Clip cursors (and the gait leaders): the step, the end test, the blend window.
        A = self.adv_row[H]
        am = A >= 0
        rows = A[am]
        owner = np.broadcast_to(H[:, None], A.shape)[am]
        order = np.broadcast_to(np.arange(A_MAX), A.shape)[am]
        step = F.mul_v(dt32, self.adv_rate[H][am])
        nt = F.add_v(cur.t[rows], step)
        nf = F.frame_of_v(nt)
        ended = nf >= cur.end[rows]
        # A loop (or a gait's leading clip) with no wrap callback wraps here: restart and
        # advance by the overshoot (t + s) - (D - 1/60); an overshoot of exactly 0.0, a
        # negative one or one past the end again takes the scalar step.
        wrapped = ended & self.adv_wrap[H][am]
        if wrapped.any():
            wi = np.flatnonzero(wrapped)
            over = F.sub_v(nt[wi], cur.limit[rows[wi]])
            f2 = F.frame_of_v(over)
            good = (over > 0) & (f2 < cur.end[rows[wi]])
            if self.player.options.end_zero_overshoot:
                good &= over != 0
            wi = wi[good]
            nt[wi] = over[good]
            nf[wi] = f2[good]
            ended[wi] = False
            wrapped[:] = False
            wrapped[wi] = True
        ws = self.adv_ws[H][am]
        windowed = np.isfinite(ws)
        if windowed.any():
            into = F.sub_v(nt[windowed], ws[windowed])
            ended[np.flatnonzero(windowed)[into > 0]] = True
        flag[owner[ended]] = True

        # Fades: the elapsed time, the finish.
        Fr = self.fade_row[H]
        fm = Fr >= 0
        frows = Fr[fm]
        fowner = np.broadcast_to(H[:, None], Fr.shape)[fm]
        nel = F.add_v(fad.el[frows], F.mul_v(dt32, self.fade_rate[H][fm]))
        flag[fowner[nel >= fad.dur[frows]]] = True

        # Commit the uneventful ones.
        ok = ~flag[owner]
        crow = rows[ok]
        cur.t[crow] = nt[ok]
        cur.frame[crow] = nf[ok]
        cur.at_end[crow] = False
        wok = wrapped & ok
        if wok.any():
            wrows = rows[wok]
            cur.ev[wrows] = 0
            cur.evf[wrows] = cur.evf0[wrows]
            for s, k in zip(owner[wok].tolist(), order[wok].tolist()):
                task = self._adv_tasks[s][k]
                if task.type == TaskType.LOOP:
                    task.wraps += 1
        fok = ~flag[fowner]
        fad.el[frows[fok]] = nel[fok]
        if len(gh):
            gok = ~flag[gh]
            gai.value[gr[gok]] = nv[gok]
            fh = gh[gok]
            fol, lead = self.fol_row[fh], self.fol_lead[fh]
            tf = F.mul_v(F.div_v(cur.t[lead], cur.dur[lead]), cur.dur[fol])
            ff = np.minimum(F.frame_of_v(tf), np.maximum(cur.end[fol] - 1, 0))
            back = (ff < cur.frame[fol]) & (cur.ev[fol] > 0)     # the leader wrapped
            cur.t[fol] = tf
            cur.frame[fol] = ff
            skip = fh[(ff >= cur.evf[fol]) | back]
        else:
            skip = ()
        # Events the committed cursors passed, in stack order per character (all tasks
        # fire, their muted cursors excepted, unless only the newest task's do).
        evm = nf[ok] >= cur.evf[crow]
        newest_only = player.options.events == EventRule.NEWEST
        if evm.any():
            eo, ek, er = owner[ok][evm], order[ok][evm], crow[evm]
            for j in np.lexsort((ek, eo)):
                s, k = int(eo[j]), int(ek[j])
                inst = self._instances[s]
                task = self._adv_tasks[s][k]
                c = _cursor_at(task, int(er[j]))
                n0 = len(inst.events)
                if not n0:
                    self._noisy.append(inst)
                c._fire(inst.events if self.adv_newest[s, k] or not newest_only else None, task)
                if len(inst.events) > n0:
                    player._held_events(inst, inst.events, n0)
        for s in skip:
            self._follower[int(s)]._skip()

        # The eventful ones, and those the batch does not cover, take the scalar step.
        slow_mask = ~fast | flag[slots]
        for i in np.flatnonzero(slow_mask):
            inst = instances[int(i)]
            player.step_one(inst, dt)
            self._noisy.append(inst)
            s = inst.slot
            if self.valid[s] and _signature(inst) != self._sig[s]:
                self.mark(inst)
            slow.append(inst)
        return slow

    # ---------------------------------------------------------------- the sample
    def sample(self, instances, dynamic_plan: SamplePlan | None = None) -> PoseBatch:
        """Every character's pose (instances order): compiled programs, plus task emission
        for those without a valid one."""
        player = self.player
        bank = player.bank
        cur, fad, gai = player.stores.cursors, player.stores.fades, player.stores.gaits
        n = len(instances)
        slots = self._slots_of(instances)
        static = self.valid[slots]
        dyn_idx = np.flatnonzero(~static)
        out = PoseBatch.empty(n)

        Hs = slots[static]
        if len(Hs):
            SR = self.s_row[Hs]
            sm = SR >= 0
            rows = SR[sm]
            ns = len(rows)
            pos = np.full(SR.shape, -1, np.int64)
            pos[sm] = np.arange(ns)
            nb_total = int((self.b_a[Hs] >= 0).sum())
            poses = PoseBatch.empty(ns + nb_total + 1)
            bank.sample(cur.bank[rows], cur.t[rows], self.s_rate[Hs][sm], cur.flags[rows], poses, 0)
            default = ns + nb_total
            poses.put(slice(default, default + 1), PoseBatch.reference(1, bank.skeleton.bind_height))
            BA, BB = self.b_a[Hs], self.b_b[Hs]
            bm = BA >= 0
            bpos = np.full(BA.shape, -1, np.int64)
            nxt = ns
            if bm.any():
                kinds, srcs, levels = self.b_kind[Hs], self.b_src[Hs], self.b_level[Hs]
                weights = np.zeros(BA.shape, DTYPE)
                fk = bm & (kinds == _KIND_FADE)
                if fk.any():
                    fr = self.fade_row[Hs][np.nonzero(fk)[0], srcs[fk]]
                    weights[fk] = _fade_weight_v(fad.el[fr], fad.dur[fr])
                gk = bm & (kinds == _KIND_GAIT)
                if gk.any():
                    gr = self.gait_row[Hs][np.nonzero(gk)[0]]
                    weights[gk] = gai.value[gr].astype(np.float64) - gai.lower[gr]
                for level in range(1, int(levels[bm].max()) + 1):
                    lm = bm & (levels == level)
                    hi, ki = np.nonzero(lm)
                    if not len(hi):
                        continue
                    ra = _resolve(BA[hi, ki], hi, pos, bpos)
                    rb = _resolve(BB[hi, ki], hi, pos, bpos)
                    blend(poses.take(ra), poses.take(rb), weights[hi, ki],
                          out=poses.take(slice(nxt, nxt + len(hi))))
                    bpos[hi, ki] = np.arange(nxt, nxt + len(hi))
                    nxt += len(hi)
            fin = self.final[Hs]
            frow = np.where(fin < 0, default,
                            np.where(fin < S_MAX, pos[np.arange(len(Hs)), np.clip(fin, 0, S_MAX - 1)],
                                     bpos[np.arange(len(Hs)), np.clip(fin - S_MAX, 0, B_MAX - 1)]))
            if not len(dyn_idx):
                return poses.take(frow)
            out.put(np.flatnonzero(static), poses.take(frow))
        if len(dyn_idx):
            plan = dynamic_plan or SamplePlan()
            for i in dyn_idx:
                inst = instances[int(i)]
                plan.begin(inst.name, inst)
                for task in inst.stack:
                    task.emit(plan)
                plan.end()
            out.put(dyn_idx, plan.execute(bank))
        return out


def _resolve(handles: np.ndarray, hi: np.ndarray, pos: np.ndarray, bpos: np.ndarray) -> np.ndarray:
    """Compiled handles (samples < S_MAX, blends S_MAX + j) -> rows of the pose buffer."""
    is_s = handles < S_MAX
    return np.where(is_s, pos[hi, np.clip(handles, 0, S_MAX - 1)],
                    bpos[hi, np.clip(handles - S_MAX, 0, B_MAX - 1)])


def _fade_weight_v(elapsed: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """Vectorised anim.tasks.fade_weight: (1 + cos(pi t / d)) / 2, d = 0 gives 0."""
    e = elapsed.astype(np.float64)
    d = duration.astype(np.float64)
    x = np.clip(e / np.where(d > 0, d, 1.0), 0.0, 1.0)
    return np.where(d > 0, (1.0 + np.cos(math.pi * x)) / 2.0, 0.0)


def _cursor_at(task, row: int):
    for c in task.cursors():
        if c.row == row:
            return c
    raise LookupError(f"no cursor at row {row} in {task!r}")


def _signature(inst) -> tuple:
    """What a compiled program depends on: the stack's tasks in order, a gait's pair
    cursors, leader and sampling regime, whether a clip is in its blend window."""
    sig = []
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
