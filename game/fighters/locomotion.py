"""The fight rules' locomotion: facing, walking at a pace, stopping, bodies kept apart.

``Locomotion`` (on ``FightCore``) turns ``move`` / ``face`` commands into the gait blend
and its target (the locomotion's flags 0x2c1, "Gait blend"), the walk start and stop,
the state function that sets each body's velocity from its intent before root motion
(0x0023fea8's state update, "Root motion"), and the separation of free bodies (ours: a
grid, linear in the humans).
"""
from __future__ import annotations

from typing import Sequence, cast
import collections
import functools
import heapq
import math
from math import copysign
import warnings

import numpy as np

from scuffle.anim.maths import detmath
from scuffle.anim.base.limits import MAX_COORD, check_float, check_vec
from scuffle.anim.playback.recipe import Arg, ClipStep, Command, GaitStep, Place, Recipe
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.tasks import LOCOMOTION_FLAGS, LOCOMOTION_STILL, HeldFlags, TaskType, task_at
from scuffle.components import NO_ATTACHMENT, Animator, Body, Combat, HumanRecord
from scuffle.components.bodies import flat_views
from scuffle.game.fighters.fightcore import CLIP_LOOP_KEYS, FightCore, fight_commands
from scuffle.game.fighters.fightdata import (PACES, GAITS, Who, ActionResult, MIN_SEPARATION, MAX_MOVE_SPEED,
                                             IMPULSE_DECAY, CHANGE_FADE, LocomotionStop, _wrap, _heading_to, _cell)
from scuffle.game.fighters.moves import GAIT_IDS, Move

__all__ = ["Locomotion"]

# the vector columns the state function reads and writes through flat fast views (flat_views)
_COMBAT_VECS = ("move_dir", "impulse")
_BODY_VECS = ("state_velocity",)


def _viewed(ct, bt) -> tuple:
    """The arrays the state function's kept views read (the combat and body tables' own now)."""
    return (ct.gen, bt.gen, ct.move_speed, ct.move_dir, ct.impulse, bt.state_velocity)

# The held bit the walk start and the walk stop hold while they play: bits of the mask the
# locomotion tests (LOCOMOTION_STILL, "Root motion" L376), so it sets no velocity of its own
# then and the clip's root velocity alone moves the body. Which of the spec's two "human
# flags" (0x80000, 0x10000000) goes with which clip is ours: the spec names them together.
WALK_START_HELD = HeldFlags.START_CLIP
WALK_STOP_HELD = HeldFlags.START_CLIP_2
_STILL = int(LOCOMOTION_STILL)
_GAIT = int(TaskType.GAIT)
# the types whose ``following()`` is their next task until it takes over (ClipTask's)
_HANDS_OVER = (int(TaskType.CLIP), int(TaskType.PAIRED_CLIP))

# WALK_START: the walk start (a change to the start clip, holding WALK_START_HELD, handing over
# to the gait blend, value 0, the move's target; flags 0x2c1, "Gait blend") as a recipe: Arg(0)
# the target, Arg(1) the clip's end
WALK_START = Recipe(Place.CHANGE, (ClipStep(Move.WALK_START, held=int(WALK_START_HELD), on_end=Arg(1)),
                                   GaitStep(GAIT_IDS, target=Arg(0), value=0.0, flags=int(LOCOMOTION_FLAGS))),
                    fade=CHANGE_FADE)

try:                                   # np.interp's own compiled routine (its Python wrapper's checks
    from numpy._core.multiarray import interp as _interp     # are for arrays and complex fp: ours are neither)
except ImportError:                    # numpy 1.x
    from numpy.core.multiarray import interp as _interp  # type: ignore[no-redef]


@functools.lru_cache(maxsize=64)
def _scale(speeds: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The walk-jog-run-sprint scale of a set's gait speeds as np.interp's float64 axes
    (speeds, 0 1 2 3): made once per set, the values np.interp makes of them each call."""
    xp = np.array(speeds, dtype=np.float64)
    fp = np.arange(len(speeds), dtype=np.float64)
    xp.flags.writeable = fp.flags.writeable = False
    return xp, fp


def _set_move_dir(c: Combat, x: float, y: float) -> None:
    """``c.move_dir = (x, y, 0.0)`` for a unit direction (finite: no check needed),
    written into the row's flat fast view; a stale view raises as the setter does."""
    t, r = c._table, c._row
    if t.m_gen[r] != c._gen:
        c.move_dir = (x, y, 0.0)                 # the descriptor's own error (StaleHandle)
        return
    m = flat_views(t, _COMBAT_VECS)[0]
    j = 3 * r
    m[j], m[j + 1], m[j + 2] = x, y, 0.0


class Locomotion(FightCore):
    """Facing, moving, stopping and keeping bodies apart (see the module docstring)."""

    _pace_scales: dict[int, tuple]      # anim set id -> (set, rate table, (speeds, np.interp axes, pace values)): _pace_scale
    # what stops the locomotion's own velocity (Fight(locomotion_stop=); the original's: the mask)
    locomotion_stop: LocomotionStop = LocomotionStop.MASK

    def face(self, who: Who, heading: float | None = None, toward: Who | None = None) -> ActionResult:
        """Turn to a heading (degrees) or toward another human. Refused while busy
        (the result says why; it is truthy when accepted).
        Rejected: a heading that is not a finite number within +-1e9 (RangeError, a ValueError)."""
        if heading is not None:
            heading = check_float("face: heading", heading, -MAX_COORD, MAX_COORD)
        ent = who if who.__class__ is int else self._ent(who)    # the name looked up once (its errors)
        if not self.free(ent):
            return self._why_busy(who, "face")
        b = self.body(ent)
        if toward is not None:
            b.heading = _wrap(_heading_to(b.position, self.body(toward).position))
        elif heading is not None:
            b.heading = _wrap(float(heading))
        return self._accept(who, "face")

    def gait_speeds(self, who: Who) -> tuple[float, ...]:
        """The human's walk, jog, run and sprint speeds (m/s), from its set's looping gait
        clips (GAIT_IDS): displacement length over duration, divided by the clip's rate.
        Original: 0x00254078, 0x00101950 Anim_RootDisplacementLength ("Playback rate")."""
        return self._pace_scale(self.inst(who).anim_set)[0]

    def _pace_scale(self, anim_set) -> tuple[tuple[float, ...], tuple[np.ndarray, np.ndarray], tuple[float, ...]]:
        """A set's gait speeds (``Player.gait_speeds`` of GAIT_IDS' walk..sprint), their
        np.interp axes (``_scale``) and each pace's gait value (np.interp of its speed on
        them, what ``move`` finds for that pace), kept per set in this Fight: found again while the set
        and the player's rate table (``options.speeds``, which the rates come from) are the
        same objects (an AnimSet is immutable), looked up anew otherwise. Rejected: as
        ``Player.gait_speeds`` (UnknownClip for a set without a gait clip; nothing kept)."""
        kept = self.__dict__.get("_pace_scales")
        if kept is None:
            kept = self._pace_scales = {}
        rates = self.player.options.speeds
        hit = kept.get(id(anim_set))
        if hit is not None and hit[0] is anim_set and hit[1] is rates:
            return hit[2]
        speeds = self.player.gait_speeds(anim_set, GAIT_IDS[:len(GAITS)])
        xp, fp = axes = _scale(speeds)
        # each pace's gait value, as ``move`` finds it for that pace's speed
        values = tuple(float(_interp(max(0.0, float(v)), xp, fp, None, None)) for v in speeds)
        made = (speeds, axes, values)
        kept[id(anim_set)] = (anim_set, rates, made)
        return made

    def _walk_start_command(self) -> Command:
        """The Command of WALK_START (made on first use; kept on the Player, as
        FightCore._clip_loop_command's: fightcore.fight_commands)."""
        cmds = fight_commands(self.player)
        cmd = cmds.get(WALK_START)
        if cmd is None:
            cmd = cmds[WALK_START] = Command(WALK_START)
        return cmd

    def _warm(self, ent: int) -> None:
        """Fill, before the first command, the look-ups a human's fight commands read: its
        set's clip look-up cache (clip, rate, bank index and cursor_proto of every Move the
        set has, found by Move and by int), its gait clips' entries and gait speeds
        (``_pace_scale``), the range records of its Moves. Caches only: the values a command
        reads are those it would find itself (the set is registered, so no bank index
        changes); an id the set lacks is
        left to the command (its own error then). The first command then costs what the
        later ones do (without it the first AI move costs ten times the others)."""
        s = self.inst(ent).anim_set
        p = self.player
        have = [m for m in Move if m in s]
        if not have:
            return
        lookup = getattr(p, "lookup", None)  # the compiled engine's look-up (the reference has none)
        if lookup is not None:
            lookup.warm(s, have, GAIT_IDS if all(g in s for g in GAIT_IDS) else None)
        inst = self.inst(ent)
        if hasattr(p, "learn") and inst.__class__ is CharacterInstance:
            # the prepared commands made ready for the set (no first command through the
            # handle calls): every Move of the set as the clip and the loop, and the walk start
            kept = self._kept()
            for key in CLIP_LOOP_KEYS:
                cmd = self._clip_loop_command(*key)
                for m in have:
                    if not p.knows(inst, cmd, m, m, kept, kept):     # (learnt for this set already)
                        p.learn(inst, cmd, m, m, kept, kept)
            if Move.WALK_START in s and all(g in s for g in GAIT_IDS):
                p.learn(inst, self._walk_start_command(), 1.0, kept)
        if all(g in s for g in GAIT_IDS[:len(GAITS)]):
            self._pace_scale(s)
        for m in have:                           # the range records the hits and grabs read (made once each)
            s.range(m)

    def move(self, who: Who, direction: Sequence[float] = (0.0, 1.0), speed: float | None = None, *,
             pace: str | int | None = None, gait: str | int | None = None) -> ActionResult:
        """Set the locomotion intent: walk / run along a world direction (speed 0 stops).
        Refused while busy (the result says why; it is truthy when accepted).

        ``speed`` in m/s, or ``pace`` (a name of PACES or its index) for that pace's
        speed in the human's set; neither: the set's walk speed. ``gait=`` is the older
        spelling of ``pace=`` (DeprecationWarning). The intent (direction,
        speed) is turned into the state velocity by the state update of every later
        update (``_state_velocities``). From a standstill the walk start clip moves the
        body by its root velocity, then the gait blend (flags 0x2c1: its own root motion
        off) moves it by the state velocity; the speed picks the gait value on the
        walk-jog-run-sprint scale of the set's own speeds. Rejected: an unknown gait
        (ValueError naming it); a direction that is not two finite numbers within +-1e9, a
        speed that is not a finite number <= 50 m/s (RangeError, a ValueError, naming it).
        """
        direction = check_vec("move: direction", direction, 2)
        scale = None                          # (speeds, np.interp axes, pace values) of the human's set: _pace_scale
        if speed is not None:
            speed = check_float("move: speed", speed, None, MAX_MOVE_SPEED)
        if gait is not None:
            warnings.warn("Fight.move(gait=...) is now Fight.move(pace=...)", DeprecationWarning, stacklevel=2)
            if pace is None:
                pace = gait
        if pace is not None:
            k = PACES.index(pace) if pace in PACES else pace
            if isinstance(k, bool) or not (isinstance(k, int) and 0 <= k < len(PACES)):
                raise ValueError(f"move: pace {pace!r} must be one of {', '.join(PACES)} or 0-{len(PACES) - 1}")
        ent = who if who.__class__ is int else self._ent(who)    # the name looked up once (its errors)
        if pace is not None:
            scale = self._pace_scale(self.inst(ent).anim_set)
            speed = scale[0][cast(int, k)]                      # (an int 0-3: checked above)
        elif speed is None:
            scale = self._pace_scale(self.inst(ent).anim_set)
            speed = scale[0][0]
        if not self.free(ent):
            return self._why_busy(who, "move")
        c, b = self.combat(ent), self.body(ent)
        x, y = float(direction[0]), float(direction[1])
        n = detmath.hypot_s(x, y)
        speed = max(0.0, float(speed))
        if speed > 0.0 and n > 0.0:
            x, y = x / n, y / n                  # a numpy array's d /= n: the same float64 quotients
            _set_move_dir(c, x, y)
            b.heading = _wrap(detmath.atan2_deg_s(-x, y))
            if scale is None:
                scale = self._pace_scale(self.inst(ent).anim_set)
            if pace is not None:
                value = scale[2][cast(int, k)]   # the pace's gait value, found once per set
            else:
                xp, fp = scale[1]
                value = float(_interp(speed, xp, fp, None, None))   # np.interp(speed, xp, fp): the same call
            running = self._gait(ent)
            if running is not None:
                running.set_target(value)
            else:
                self._require(2)
                # change(clip(WALK_START, gait(GAIT_IDS, target=value, value=0.0, flags=0x2c1)), CHANGE_FADE)
                # as one prepared command (the rows those calls leave; the clip's end: _kept)
                self.player.run(self.inst(ent), self._walk_start_command(), value, self._kept())
            c.move_speed = speed
        else:
            if c.move_speed > 0.0:
                self._require(2)
                self._clip_loop(ent, Move.WALK_STOP, Move.IDLE, held=WALK_STOP_HELD)
            c.move_speed = 0.0
        return self._accept(who, "move")

    def _gait(self, who):
        """The gait task on the stack, or waiting as a start clip's next task (the first
        found bottom-up, as ``inst.stack`` and each task's ``following()`` list them).
        Read from the human's stack row and the task rows (types, released flags, a
        clip's ``nxt`` and ``handed_over``): one handle made, for the gait found."""
        inst = self.inst(who)
        eng = inst.engine if inst.__class__ is CharacterInstance else None
        if eng is None:                          # the reference's human: its handles
            for t in inst.stack:
                for c in (t, *t.following()):
                    if c.type == TaskType.GAIT and not c.released:
                        return c
            return None
        h, ts, s = eng.humans, eng.player.stores.tasks, inst.slot
        ms, types, released, nxt, over = h.m_stack, ts.m_type, ts.m_released, ts.m_nxt, ts.m_handed_over
        b = s * h.stack_width
        for i in range(b, b + h.m_depth[s]):
            r = ms[i]
            tt = types[r]
            if tt == _GAIT:
                if not released[r]:
                    return ts.views[r] or task_at(ts, r)
            elif tt in _HANDS_OVER and not over[r]:     # a clip's next task, not yet handed over
                n = nxt[r]
                if n >= 0 and types[n] == _GAIT and not released[n]:
                    return ts.views[n] or task_at(ts, n)
        return None

    def _stop_moving(self, who) -> None:
        c = self.combat(who)
        c.move_speed = 0.0
        self.body(who).state_velocity.fill(0.0)      # zeros in the row (the setter's np.zeros(3), no checks needed)

    def _state_velocities(self, ctx) -> None:
        """The state function (run first in the state update, before root motion): each
        human's intent into its state velocity. The locomotion sets none while a start or
        stop clip plays, so the clip's root velocity alone moves the body then ("Root
        motion" L376): by default while the human holds a bit of the mask 0x110c0880 on
        its held flags (LOCOMOTION_STILL, tested at 0x00241a88; the walk start and stop
        hold one), with ``locomotion_stop="top_task"`` while the newest task is not the
        gait blend. Otherwise the intent's direction x speed; a throw's decaying push is
        added either way. Original: 0x0023fea8 (the state update), 0x00241a88."""
        hypot, top = detmath.hypot_s, self.player.top
        by_mask = self.locomotion_stop == LocomotionStop.MASK
        # the tables' fast views: kept from call to call while the humans' rows are in the same
        # two tables and those still hold the arrays viewed (a grown table's are new; not state)
        kept = self.__dict__.get("_state_views")
        if kept is not None:
            was, ct, bt = kept[0], kept[1], kept[2]
            if was[0] is not ct.gen or was[1] is not bt.gen or was[2] is not ct.move_speed or \
                    was[3] is not ct.move_dir or was[4] is not ct.impulse or was[5] is not bt.state_velocity:
                kept = None
        for e, mine in self._parts():
            c, b = mine[Combat], mine[Body]
            ct, cr, bt, br = c._table, c._row, b._table, b._row
            if kept is None or kept[1] is not ct or kept[2] is not bt:
                kept = self._state_views = (_viewed(ct, bt), ct, bt, ct.m_gen, bt.m_gen, ct.m_move_speed,
                                            *flat_views(ct, _COMBAT_VECS), *flat_views(bt, _BODY_VECS))
            _, _, _, cgen, bgen, m_speed, m_dir, m_imp, m_sv = kept
            if cgen[cr] != c._gen or bgen[br] != b._gen:   # a stale view: the descriptors' own error
                self._state_velocity_of(mine, c, b)
                continue
            speed = m_speed[cr]
            vel = None                                 # no intent: zeros
            j = 3 * cr
            if speed > 0.0:
                if by_mask:
                    goes = not mine[HumanRecord].held & _STILL
                else:
                    t = top(mine[Animator].instance)   # _gait_leads(e), e alive (from humans())
                    goes = t is not None and t.type == TaskType.GAIT
                if goes:
                    # the direction x speed, as numpy's float64 products
                    vel = (m_dir[j] * speed, m_dir[j + 1] * speed, m_dir[j + 2] * speed)
            ix, iy, iz = m_imp[j], m_imp[j + 1], m_imp[j + 2]      # the row's impulse
            if (ix or iy) and hypot(ix, iy) > 0.05:                 # (no push: its length 0)
                # the push added, as numpy's float64 sums (zeros + the push: 0.0 + x, -0.0 made +0.0)
                vel = (0.0 + ix, 0.0 + iy, 0.0 + iz) if vel is None else (vel[0] + ix, vel[1] + iy, vel[2] + iz)
                # in the row: c.impulse * IMPULSE_DECAY, the same bits
                m_imp[j], m_imp[j + 1], m_imp[j + 2] = ix * IMPULSE_DECAY, iy * IMPULSE_DECAY, iz * IMPULSE_DECAY
            else:                                      # zeros (+0.0 written over -0.0 too)
                m_imp[j] = m_imp[j + 1] = m_imp[j + 2] = 0.0
            k = 3 * br
            if vel is None:
                m_sv[k] = m_sv[k + 1] = m_sv[k + 2] = 0.0      # zeros need no check of the setter
            else:
                x, y, z = vel
                if abs(x) <= MAX_COORD and abs(y) <= MAX_COORD and abs(z) <= MAX_COORD:
                    m_sv[k], m_sv[k + 1], m_sv[k + 2] = x, y, z
                else:
                    b.state_velocity = vel             # the setter's error (BodyFieldError)

    # the rule FightStates' pass over many fights' rows stands for (a replacement lacks it)
    _state_velocities.one_pass = True       # type: ignore[attr-defined]

    def _state_velocity_of(self, mine: dict, c: Combat, b: Body) -> None:
        """``_state_velocities`` for one human through its views' descriptors (a stale view
        raises its StaleHandle here, as the descriptors do)."""
        speed = c.move_speed
        vel = None
        if speed > 0.0 and self._locomotion_goes(mine):
            dx, dy, dz = c.move_dir.tolist()
            vel = (dx * speed, dy * speed, dz * speed)
        imp = c.impulse
        ix, iy, iz = imp.tolist()
        if detmath.hypot_s(ix, iy) > 0.05:
            vel = (0.0 + ix, 0.0 + iy, 0.0 + iz) if vel is None else (vel[0] + ix, vel[1] + iy, vel[2] + iz)
            imp *= IMPULSE_DECAY
        elif ix or iy or iz or copysign(1.0, ix) + copysign(1.0, iy) + copysign(1.0, iz) != 3.0:
            imp.fill(0.0)
        if vel is None:
            b.state_velocity.fill(0.0)
        else:
            b.state_velocity = vel

    def _separate(self) -> None:
        """Keep free bodies at least MIN_SEPARATION apart (ours: the spec has no collision).

        The pairs (a, b) of free bodies, a before b in the humans' order, are pushed apart
        in that order, each seeing the pushes before it: what the pairwise loop over every
        pair did, bit for bit, but only the pairs a grid of cells (_CELL wide, kept up to
        date as bodies move) puts side by side are looked at, so the work is linear in the
        humans for a spread crowd. A body whose position is not finite is left out (it
        never spreads NaN to the others).
        """
        free = []
        for _, e in self.game.humans():
            b = self.body(e)
            if b.attachment == NO_ATTACHMENT and not b.slide_left:
                x, y = float(b.position[0]), float(b.position[1])
                if math.isfinite(x) and math.isfinite(y):
                    free.append((e, b))
        if len(free) < 2:
            return
        cell_of: list[tuple[int, int]] = []
        grid: dict[tuple[int, int], set[int]] = collections.defaultdict(set)
        for i, (_, b) in enumerate(free):
            c = _cell(b.position)
            cell_of.append(c)
            grid[c].add(i)

        def near(i: int, after: int, found: set[int], heap: list[int]) -> None:
            cx, cy = cell_of[i]
            for gx in (cx - 1, cx, cx + 1):
                for gy in (cy - 1, cy, cy + 1):
                    for j in grid.get((gx, gy), ()):
                        if j > after and j not in found:
                            found.add(j)
                            heapq.heappush(heap, j)

        def moved(i: int, body) -> None:
            c = _cell(body.position)
            if c != cell_of[i]:
                grid[cell_of[i]].discard(i)
                grid[c].add(i)
                cell_of[i] = c

        for i, (ea, ba) in enumerate(free):
            partner = self.combat(ea).partner
            found: set[int] = set()
            heap: list[int] = []
            near(i, i, found, heap)
            while heap:
                j = heapq.heappop(heap)
                eb, bb = free[j]
                if partner == eb:
                    continue
                d = bb.position[:2] - ba.position[:2]
                dist = detmath.hypot_s(float(d[0]), float(d[1]))
                if dist >= MIN_SEPARATION:
                    continue
                n = d / dist if dist > 1e-9 else np.array([1.0, 0.0])
                push = (MIN_SEPARATION - dist) / 2.0
                ba.position = ba.position - np.array([n[0], n[1], 0.0]) * push
                bb.position = bb.position + np.array([n[0], n[1], 0.0]) * push
                moved(j, bb)
                if _cell(ba.position) != cell_of[i]:
                    moved(i, ba)
                    near(i, j, found, heap)     # a's new neighbours after b, not yet looked at

    def _locomotion_goes(self, mine: dict) -> bool:
        """Whether the locomotion sets a velocity of its own for the human whose components
        are ``mine`` (``_state_velocities``' rule): no bit of LOCOMOTION_STILL held (the
        default), or the gait blend the newest task (``locomotion_stop="top_task"``)."""
        if self.locomotion_stop == LocomotionStop.MASK:
            return not mine[HumanRecord].held & _STILL
        t = self.player.top(mine[Animator].instance)
        return t is not None and t.type == TaskType.GAIT

    def _gait_leads(self, ent: int) -> bool:
        """The gait blend is the newest task (no start or stop clip playing)."""
        top = self.player.top(self.inst(ent))
        return top is not None and top.type == TaskType.GAIT

