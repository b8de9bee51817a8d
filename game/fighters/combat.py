"""The fight rules: grabs, strikes, throws and let-go between two humans, and locomotion.

``Fight(game)`` attaches the rules to a Game: an action callable run in the actions
phase and event handlers. Commands (``grab``, ``strike``, ``throw``, ``let_go``,
``move``, ``face``) are refused while a move in progress holds flags that forbid them:
input is gated by the human's held flags (record +0x08), which the tasks hold and
release ("Animation tasks", the held flags; "When a clip ends").

Pairs ("Paired tasks"): the victim plays the attacker's clips from the attacker's set
at the attacker's rate; before the connecting clip the two bodies are turned and slid
together (to the connecting clip's range point), at its end they snap to the hold's
type-8 point and the victim is attached; a throw releases the victim along the
thrower's turn. A grab searches within id 70's far range x 1.25 (0x00284920).
Strikes deal their range record's damage (+0x0a) and the hit code (+0x0c) picks the
reaction. Rules and numbers not in the spec are ours (docs/scenarios.md, "Actions").

Answers and events (ours): every command returns an ``ActionResult``, truthy when
accepted, falsy with its ``Refusal`` and a sentence when refused; what happens later
(a hit or a miss when a window opens, a grab connecting, a throw and its victim's fall,
a K.O., a round's end and the next round's start) reaches the host's handlers as a
``FightEvent`` (``Fight.on``, ``on_hit``, ``on_ko``, ``on_round``). A human added with
``Game.add_human`` while the rules are attached starts in the fight idle (358).

K.O. and rounds (ours; options, off by default so that scenarios run as before): with
``ko=True`` a fighter whose health reaches 0 is knocked out: it falls (the knockdown
285) and lies grounded (196) without getting up, and no hit lands on it. When at most
one fighter is left standing the round is over (``stats.rounds`` records the winner and
the K.O. update) and no hit lands at all; with ``rounds=True`` (which implies ``ko``)
the next round starts ``round_pause`` updates later, everyone back at their start with
full health.
"""
from __future__ import annotations

import collections
import heapq
import math
import warnings
from dataclasses import dataclass, field
from enum import IntFlag, StrEnum
from typing import TYPE_CHECKING, Callable, Sequence, cast

import numpy as np

from scuffle.anim import detmath
from scuffle.anim.clip import EventType
from scuffle.anim.limits import INT32_MAX, MAX_COORD, check_float, check_int, check_vec
from scuffle.anim.stack import AnimLimitError, CharacterInstance
from scuffle.anim.tasks import HeldFlags, LOCOMOTION_FLAGS, Task, TaskFlags, TaskType
from scuffle.components import Body, Combat, HumanRecord, NO_ATTACHMENT
from scuffle.game.fighters.moves import ATTACK_CHAIN, GAIT_IDS, GRAB_STRIKES, THROWS, Move
from scuffle.game.runtime.registry import ActionSpec, Registry, TableSpec, is_int as _is_int, is_num as _is_num, is_vec2 as _vec2
from scuffle.systems.placement import place_attached

if TYPE_CHECKING:
    from scuffle.game.runtime.world import Game

__all__ = ["Fight", "FightFlags", "FightState", "FightStats", "fight_of", "register_actions", "FIGHT_ACTIONS", "GAITS",
           "PACES", "GRAB_SEARCH_FACTOR", "reaction_for", "ROUND_PAUSE", "Refusal", "ActionResult", "FightEvent",
           "FightEventKind", "FightHandler", "Who"]


class FightFlags(IntFlag):
    """Held bits the fight rules use: the spec's attack phases plus ours."""

    WINDUP = HeldFlags.WINDUP          # before the hit window (0x2c opens it)
    HIT_WINDOW = HeldFlags.HIT_WINDOW  # the window (0x2d closes it)
    RECOVERY = HeldFlags.RECOVERY      # after it: a chained strike may follow
    PAIRED = 0x100                     # ours: in a paired move (either side)
    STAGGER = 0x200                    # ours: a hit reaction plays
    DOWN = 0x800                       # ours: knocked down, grounded or getting up


BUSY = FightFlags.WINDUP | FightFlags.HIT_WINDOW | FightFlags.PAIRED | FightFlags.STAGGER | FightFlags.DOWN


class FightState(StrEnum):
    """What a fighter is doing (Combat.state)."""
    FREE = "free"
    ATTACKING = "attacking"
    GRABBING = "grabbing"
    CONNECTING = "connecting"
    HOLDING = "holding"
    HELD = "held"
    STRIKING = "striking"
    THROWING = "throwing"
    LETTING_GO = "letting_go"
    REACTING = "reacting"
    DOWN = "down"


# The paces by name (walk, jog, run, sprint): the gait blend's value is their index.
# Their speeds come from the human's anim set (Fight.gait_speeds: the looping gait clips'
# displacement over duration). One word everywhere: ``pace`` (the scenario's move key,
# ``Fight.move(pace=...)``); "gait" is the gait blend task (type 12) that plays them.
PACES = ("walk", "jog", "run", "sprint")
GAITS = PACES                      # the older name, kept

# Who a fight command names: a human's name or its entity id.
Who = str | int


class Refusal(StrEnum):
    """Why the fight rules refused a command (``ActionResult.refusal``)."""

    BUSY = "busy"                       # a move in progress holds flags that forbid it
    DOWN = "down"                       # knocked down, grounded or getting up
    KNOCKED_OUT = "knocked_out"         # out of the round (K.O.)
    NOT_HOLDING = "not_holding"         # a throw, let-go or grab strike needs a hold of an attached victim
    IN_WINDOW = "in_window"             # the hold's own strike is before or in its hit window
    NOT_A_STRIKE = "not_a_strike"       # a free strike's move is not one of the attack chain's
    NOT_A_GRAB_STRIKE = "not_a_grab_strike"   # a grab strike's move is not 51, 53 or 55
    NOT_A_THROW = "not_a_throw"         # a throw's move is not one of the throws (149, 151, 153)


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What the fight rules answer to a command: truthy when accepted, else falsy with the
    reason (``refusal``, a Refusal) and a sentence (``detail``).

    ``action`` the command (grab, strike, throw, let_go, move, face), ``who`` the human's
    name, ``update`` the update it was given in (``ctx.update``, as the trace and the
    fight log number it), ``move`` the anim id it plays (-1: none). Accepted means the
    move starts; whether a strike or a grab then lands is told by the fight's events
    (``Fight.on_hit``, FightEventKind.MISS).
    """

    action: str
    who: str
    update: int
    refusal: Refusal | None = None
    detail: str = ""
    move: int = -1

    @property
    def accepted(self) -> bool:
        """True when the command was accepted."""
        return self.refusal is None

    def __bool__(self) -> bool:
        return self.refusal is None

    def __str__(self) -> str:
        what = f"{self.action} {self.move}" if self.move >= 0 else self.action
        if self.refusal is None:
            return f"update {self.update}: {self.who} {what}: accepted"
        return f"update {self.update}: {self.who} {what}: refused ({self.refusal.value}: {self.detail})"


class FightEventKind(StrEnum):
    """What a fight event tells the host (``Fight.on``)."""

    HIT = "hit"                 # a blow landed: attacker, victim, move, damage, victim's health after
    MISS = "miss"               # a strike's or grab's window opened on no one in reach
    GRAB = "grab"               # a grab connected: attacker, victim
    THROW = "throw"             # a throw started: attacker (thrower), victim, move
    FALL = "fall"               # the victim of a throw is released and goes down
    KO = "ko"                   # the victim's health reached 0 (ko rules): victim, attacker
    ROUND_END = "round_end"     # at most one fighter left standing: round, winner ('' none), victim
    ROUND_START = "round_start" # the next round starts (rounds=True): round


@dataclass(frozen=True, slots=True)
class FightEvent:
    """One fight event as handlers get it (data only: names, ids, numbers).

    ``update`` is the update it happened in (``ctx.update``: the trace's and the fight
    log's number); ``attacker`` / ``victim`` human names ('' when none); ``move`` the
    anim id (-1 none); ``damage`` the health taken; ``health`` the victim's health after;
    ``round`` the round's number; ``winner`` the round's winner ('' none).
    """

    kind: FightEventKind
    update: int
    attacker: str = ""
    victim: str = ""
    move: int = -1
    damage: float = 0.0
    health: float = 0.0
    round: int = 1
    winner: str = ""


# A fight event handler: ``handler(event) -> None`` with the FightEvent, called in the
# actions phase of the update the event happens in (Fight.on).
FightHandler = Callable[[FightEvent], None]
GRAB_SEARCH_FACTOR = 1.25          # the grab searches within id 70's far range x 1.25
GRAB_CONE_DEG = 70.0               # ours: the victim must be within this of the facing
HIT_CONE_DEG = 60.0                # ours: a strike's cone around its range direction
SLIDE_UPDATES = 4                  # ours: updates to slide two bodies together
CHANGE_FADE = 0.1                  # ours: the fade time of the fight's changes (s)
DOWN_UPDATES = 40                  # ours: updates on the ground before the get-up
MIN_SEPARATION = 0.6               # ours: free bodies are pushed apart below this (m)
# The separation's grid: cells a little wider than MIN_SEPARATION, so two bodies closer
# than it always sit in the same or neighbouring cells whatever the division rounds.
_CELL = MIN_SEPARATION * 1.0625
MAX_ROUND_PAUSE = 1_000_000        # updates (the scenario's MAX_UPDATES)
MAX_MOVE_SPEED = 50.0              # m/s a move command may ask (the root velocity's cap)
THROW_SPEED = 2.5                  # ours: the thrown victim's slide speed (m/s), decaying
IMPULSE_DECAY = 0.85
ROUND_PAUSE = 120                  # ours: updates from a K.O. to the next round (4 s)


LOG_SIZE = 1000                    # ours: the recent fight entries FightStats keeps


@dataclass
class FightStats:
    """Counts for the demo's summary (pinned names: grabs, strikes, throws, damage).

    ``log`` is a ring of the LOG_SIZE most recent entries (update, human, what, ...),
    oldest first (e.g. ``(u, "p2", "throw", 149, "p1")``, ``(u, "p1", "hit", "p2", 5.0)``,
    ``(u, "p1", "miss", 11)``, ``(u, "p1", "refused", "grab", "busy")``; ``update`` is
    the trace's number); ``kinds`` counts every entry ever logged by its ``what`` and
    ``logged`` all of them, so a long run's memory stays flat.
    """

    grabs: int = 0
    strikes: int = 0
    throws: int = 0
    damage: float = 0.0
    refused: int = 0
    log: collections.deque = field(default_factory=lambda: collections.deque(maxlen=LOG_SIZE))
    kinds: collections.Counter = field(default_factory=collections.Counter)
    logged: int = 0
    round: int = 1                 # the round being fought (or over, waiting for the next)
    rounds: list = field(default_factory=list)   # finished rounds: {round, winner, loser, ko_update}

    def record(self, entry: tuple) -> None:
        """Log one entry (update, human, what, ...): into the ring and the counts."""
        self.log.append(entry)
        self.kinds[entry[2]] += 1
        self.logged += 1


def reaction_for(hit_code: int, from_behind: bool) -> tuple[int, bool]:
    """The victim's reaction clip for a hit code (bits 4-5 strength): (id, knocked down)."""
    strength = (hit_code >> 4) & 3
    if strength >= 2:
        return int(Move.KNOCKDOWN), True
    if strength == 1:
        return int(Move.HIT_HEAVY), False
    return int(Move.HIT_BACK if from_behind else Move.HIT_FRONT), False


def _wrap(d: float) -> float:
    d = math.fmod(d, 360.0)
    return d - 360.0 if d > 180.0 else (d + 360.0 if d <= -180.0 else d)


def _local_to_world(body: Body, x: float, y: float) -> np.ndarray:
    s, c = detmath.sin_cos_deg_s(float(body.heading))
    return np.array([x * c - y * s, x * s + y * c, 0.0])


def _bearing(body: Body, target: np.ndarray) -> float:
    """Degrees from the body's facing to ``target`` (positive: to its left)."""
    d = target - body.position
    ang = detmath.atan2_deg_s(float(-d[0]), float(d[1]))          # heading that would face the target
    return _wrap(ang - body.heading)


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    """The ground distance from a to b (x, y; metres)."""
    return detmath.hypot_s(float(b[0] - a[0]), float(b[1] - a[1]))


def _heading_to(src: np.ndarray, dst: np.ndarray) -> float:
    d = dst - src
    return detmath.atan2_deg_s(float(-d[0]), float(d[1]))


class Fight:
    """The fight rules of one Game (see the module docstring).

    ``separate`` pushes free bodies apart below MIN_SEPARATION (ours: the spec has no
    collision between humans, so scenarios run without it; the demo turns it on).
    ``ko`` knocks out a fighter at 0 health and ends the round (ours; off by default:
    blows then go on landing at 0, as before). ``rounds`` (implies ``ko``) starts a new
    round ``round_pause`` updates after a K.O. Rejected: ``round_pause`` < 1 (ValueError).
    """

    def __init__(self, game: Game, *, separate: bool = False, ko: bool = False, rounds: bool = False,
                 round_pause: int = ROUND_PAUSE) -> None:
        check_int("round_pause", round_pause, 1, MAX_ROUND_PAUSE)
        self.game = game
        self.separate = separate          # keep free bodies apart (ours; the demo turns it on)
        self.rounds = bool(rounds)        # start a new round after a K.O. (ours)
        self.ko_rule = bool(ko) or self.rounds    # knock out at 0 health, end the round (ours)
        self.round_pause = int(round_pause)
        self.ko: dict[int, int] = {}      # knocked-out entity -> the update of its K.O. (this round)
        self.ko_at: int | None = None     # the update the round ended (at most one left standing)
        self.starts: dict[int, tuple] = {}    # entity -> (position, heading, health) a round starts with
        self.player = game.player
        self.stats = FightStats()
        self.pending: list[tuple] = []
        self.controllers: list = []       # AI / input callables(fight) run each actions phase
        # The host's handlers by kind (Fight.on): registrations, called in order.
        self.listeners: dict[FightEventKind, list[FightHandler]] = {}
        game.fight = self
        game.ctx.actions.append(self._update)
        game.ctx.state_functions.append(self._state_velocities)
        game.ctx.on(EventType.HELD_OPEN, self._on_window)
        self._note_starts()
        for _, e in game.humans():
            self._normalise_state(e)

    # ---------------------------------------------------------------- the host's handlers
    def on(self, kind: FightEventKind | str, handler: FightHandler) -> FightHandler:
        """Call ``handler(event: FightEvent)`` on every fight event of ``kind`` (a
        FightEventKind or its value: "hit", "miss", "grab", "throw", "fall", "ko",
        "round_end", "round_start"), in the actions phase of the update it happens in.
        Returns the handler (usable as a decorator). Rejected: an unknown kind or a
        handler that is not callable (ValueError)."""
        try:
            k = FightEventKind(kind)
        except ValueError:
            raise ValueError(f"Fight.on: unknown event kind {kind!r} (known: "
                             f"{', '.join(k.value for k in FightEventKind)})") from None
        if not callable(handler):
            raise ValueError(f"Fight.on: handler {handler!r} is not callable")
        self.listeners.setdefault(k, []).append(handler)
        return handler

    def on_hit(self, handler: FightHandler) -> FightHandler:
        """``on(FightEventKind.HIT, handler)``: every blow that lands (attacker, victim,
        move, damage, the victim's health after)."""
        return self.on(FightEventKind.HIT, handler)

    def on_ko(self, handler: FightHandler) -> FightHandler:
        """``on(FightEventKind.KO, handler)``: a fighter knocked out (``ko`` rules)."""
        return self.on(FightEventKind.KO, handler)

    def on_round(self, handler: FightHandler) -> FightHandler:
        """The handler for both round events: ROUND_END (the winner) and ROUND_START."""
        self.on(FightEventKind.ROUND_END, handler)
        return self.on(FightEventKind.ROUND_START, handler)

    def _emit(self, kind: FightEventKind, **fields) -> None:
        handlers = self.listeners.get(kind)
        if handlers:
            ev = FightEvent(kind, self.game.ctx.update, round=self.stats.round, **fields)
            for h in list(handlers):
                h(ev)

    # ---------------------------------------------------------------- a human joins
    def human_joined(self, ent: int) -> None:
        """A human added to the Game while the rules are attached (Game.add_human calls
        it): its start is noted (a new round puts it back there) and, with nothing on
        its stack, it starts the fight idle (358; the idle 388 in a set without it), no
        fade."""
        self._normalise_state(ent)
        self._note_starts()
        inst = self.inst(ent)
        if inst.stack or inst.queue:
            return
        aset = inst.anim_set
        for idle in (Move.FIGHT_IDLE, Move.IDLE):
            if aset.has(idle):
                self._guarded(ent, self._start_idle, ent, idle)
                return

    def _start_idle(self, ent: int, idle: int) -> None:
        self._require(1)
        self._change(ent, self._loop(ent, idle), 0.0)

    def _normalise_state(self, ent: int) -> None:
        """Combat.state as a FightState (the component's default is the plain 'free')."""
        c = self.combat(ent)
        if not isinstance(c.state, FightState):
            c.state = FightState(c.state)

    # ---------------------------------------------------------------- lookups
    def _ent(self, name_or_ent: Who) -> int:
        return self.game.entity(name_or_ent) if isinstance(name_or_ent, str) else name_or_ent

    def _name(self, ent: int) -> str:
        for n, e in self.game.names.items():
            if e == ent:
                return n
        raise KeyError(ent)

    def _alive(self, ent: int) -> bool:
        return ent >= 0 and self.game._alive(ent)

    # ---------------------------------------------------------------- a human leaves
    def human_leaving(self, ent: int) -> None:
        """The fight rules' side of Game.remove_human (called before the entity goes).

        Every partner of the leaving human (its ``partner``, or whoever holds it or is
        attached to it) is detached and freed, and plays what the rules choose: a victim
        whose thrower leaves mid-throw falls (KNOCKDOWN, then the ground and the get-up,
        as a knockdown reaction); any other partner plays its let-go (the attacker's
        LET_GO, the victim's LET_GO_VICTIM on its own set) and is free at its end. The
        leaving human's pending windows and ends are dropped.
        """
        self.pending = [item for item in self.pending if item[1] != ent]
        c = self.combat(ent)
        partners = [c.partner] if c.partner >= 0 and c.partner != ent else []
        for _, e in self.game.humans():
            if e != ent and e not in partners and (self.combat(e).partner == ent or self.body(e).attachment == ent
                                                   or self.body(ent).attachment == e):
                partners.append(e)
        for p in partners:
            if self._alive(p):
                self._partner_left(p, thrown=c.state == FightState.THROWING and self.combat(p).role == "victim")
        c.partner, c.role = -1, ""

    def _partner_left(self, p: int, thrown: bool) -> None:
        """Free ``p`` whose partner left: detached, its paired tasks cut off (released at
        the next flush as a cut-off release), then its let-go or its fall."""
        cp, bp = self.combat(p), self.body(p)
        was_victim = cp.role == "victim"
        self._detach(p)
        bp.slide_to, bp.slide_left = None, 0
        self._stop_moving(p)
        cp.partner, cp.role = -1, ""
        self._begin(p)
        inst = self.inst(p)
        self.player.cut(inst)
        if thrown:
            self._log(p, "partner_left", "fall")
            self._guarded(p, self._fall, p)
        else:
            self._log(p, "partner_left", "let_go")
            self._guarded(p, self._let_go_alone, p, was_victim)

    def _fall(self, p: int) -> None:
        self.player.pool.require(3)
        c = self.combat(p)
        c.state = FightState.DOWN
        c.down_left = DOWN_UPDATES
        self._change(p, self._clip(p, Move.KNOCKDOWN, self._loop(p, Move.GROUNDED, held=FightFlags.DOWN),
                                   held=FightFlags.DOWN), 0.0)

    def _let_go_alone(self, p: int, was_victim: bool) -> None:
        self.player.pool.require(3)
        c = self.combat(p)
        c.state = FightState.LETTING_GO
        clip, rest = (Move.LET_GO_VICTIM, Move.IDLE) if was_victim else (Move.LET_GO, Move.FIGHT_IDLE)
        if self.inst(p).anim_set.clip(clip) is None:           # a set without the let-go: free at once
            c.state = FightState.FREE
            self._change(p, self._loop(p, rest), 0.0)
            return
        self._change(p, self._clip(p, clip, self._loop(p, rest), on_end=self._ended(p, "let_go")), 0.0)

    def _partners_gone(self) -> None:
        """Humans whose partner (or holder) is no longer in the world (deleted directly
        with esper.delete_entity) are freed as human_leaving would free them."""
        for _, e in self.game.humans():
            c, b = self.combat(e), self.body(e)
            if (c.partner >= 0 and not self._alive(c.partner)) or \
                    (b.attachment != NO_ATTACHMENT and not self._alive(b.attachment)):
                self._partner_left(e, thrown=False)

    def combat(self, who: Who) -> Combat:
        return self.game.component(self._ent(who), Combat)

    def body(self, who: Who) -> Body:
        return self.game.component(self._ent(who), Body)

    def held(self, who: Who) -> int:
        """The human's held flags (record +0x08, the trace's ``held``)."""
        return self.game.component(self._ent(who), HumanRecord).flags

    flags = held                          # the older name

    def inst(self, who: Who) -> CharacterInstance:
        return self.game.instance(self._name(self._ent(who)))

    def free(self, who: Who) -> bool:
        """No move in progress: none of the fight's held bits are set."""
        return not (self.flags(who) & (BUSY | FightFlags.RECOVERY))

    def can_chain(self, who: Who) -> bool:
        """In an attack's recovery (0x4 held, nothing busy): a chained strike may follow."""
        f = self.flags(who)
        return bool(f & FightFlags.RECOVERY) and not (f & BUSY)

    def _refuse(self, who: Who, action: str, reason: Refusal, detail: str, move: int = -1) -> ActionResult:
        """A refused command: counted, logged (update, human, "refused", what, reason) and
        answered with its reason."""
        name = self._name(self._ent(who))
        what = f"{action} {move}" if move >= 0 else action
        self.stats.refused += 1
        self.stats.record((self.game.ctx.update, name, "refused", what, reason.value))
        return ActionResult(action, name, self.game.ctx.update, reason, detail, move)

    def _accept(self, who: Who, action: str, move: int = -1) -> ActionResult:
        return ActionResult(action, self._name(self._ent(who)), self.game.ctx.update, None, "", move)

    def _why_busy(self, who: Who, action: str, move: int = -1) -> ActionResult:
        """The refusal of a command given while a move is in progress (the held flags)."""
        ent = self._ent(who)
        f = self.flags(ent)
        if ent in self.ko:
            return self._refuse(ent, action, Refusal.KNOCKED_OUT, "knocked out for this round", move)
        if f & FightFlags.DOWN:
            return self._refuse(ent, action, Refusal.DOWN, "down (knocked down, grounded or getting up)", move)
        names = ", ".join(fl.name or "" for fl in FightFlags if f & fl)
        return self._refuse(ent, action, Refusal.BUSY, f"a move in progress holds {names or hex(f)}", move)

    def _anim(self, who: Who, move: int | str | None) -> int | None:
        """A move given as an anim id or a clip name (resolved through the human's set)."""
        if move is None or move.__class__ is not str:
            return None if move is None else int(move)
        return self.inst(who).anim_set.id_of(move)

    def _log(self, who, what: str, *extra) -> None:
        self.stats.record((self.game.ctx.update, self._name(self._ent(who)), what, *extra))

    # ---------------------------------------------------------------- task helpers
    def _loop(self, who, anim_id: int, held: int = 0, attacker=None) -> Task:
        inst = self.inst(who)
        if attacker is not None:
            a = self.inst(attacker)
            return self.player.loop(inst, anim_id, held=held, anim_set=a.anim_set)
        return self.player.loop(inst, anim_id, held=held)

    def _clip(self, who, anim_id: int, next_task: Task, held: int = 0, on_end=None, attacker=None,
              flags: int = 0) -> Task:
        inst = self.inst(who)
        if attacker is not None:
            return self.player.paired(inst, self.inst(attacker), anim_id, next_task, held=held, on_end=on_end,
                                      flags=flags)
        return self.player.clip(inst, anim_id, next_task, held=held, on_end=on_end, flags=flags)

    def _change(self, who, task: Task, fade: float = CHANGE_FADE) -> None:
        self.player.change(self.inst(who), task, fade)

    def _require(self, n: int) -> None:
        self.player.pool.require(n + 2)

    # ---------------------------------------------------------------- actions
    def face(self, who: Who, heading: float | None = None, toward: Who | None = None) -> ActionResult:
        """Turn to a heading (degrees) or toward another human. Refused while busy
        (the result says why; it is truthy when accepted).
        Rejected: a heading that is not a finite number within +-1e9 (RangeError, a ValueError)."""
        if heading is not None:
            heading = check_float("face: heading", heading, -MAX_COORD, MAX_COORD)
        if not self.free(who):
            return self._why_busy(who, "face")
        b = self.body(who)
        if toward is not None:
            b.heading = _wrap(_heading_to(b.position, self.body(toward).position))
        elif heading is not None:
            b.heading = _wrap(float(heading))
        return self._accept(who, "face")

    def gait_speeds(self, who: Who) -> tuple[float, ...]:
        """The human's walk, jog, run and sprint speeds (m/s), from its set's looping gait
        clips (GAIT_IDS): displacement length over duration, divided by the clip's rate.
        Original: 0x00254078, 0x00101950 Anim_RootDisplacementLength ("Playback rate")."""
        return self.player.gait_speeds(self.inst(who).anim_set, GAIT_IDS[:len(GAITS)])

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
            speed = self.gait_speeds(who)[k]
        elif speed is None:
            speed = self.gait_speeds(who)[0]
        if not self.free(who):
            return self._why_busy(who, "move")
        c, b = self.combat(who), self.body(who)
        d = np.array([float(direction[0]), float(direction[1]), 0.0])
        n = detmath.hypot_s(float(d[0]), float(d[1]))
        speed = max(0.0, float(speed))
        if speed > 0.0 and n > 0.0:
            d /= n
            c.move_dir = d
            b.heading = _wrap(detmath.atan2_deg_s(float(-d[0]), float(d[1])))
            speeds = self.gait_speeds(who)
            value = float(np.interp(speed, speeds, range(len(speeds))))
            running = self._gait(who)
            if running is not None:
                running.set_target(value)
            else:
                self._require(2)
                g = self.player.gait(self.inst(who), GAIT_IDS, target=value, value=0.0,
                                     flags=int(LOCOMOTION_FLAGS))
                start = self._clip(who, Move.WALK_START, g)
                self._change(who, start)
            c.move_speed = speed
        else:
            if c.move_speed > 0.0:
                self._require(2)
                self._change(who, self._clip(who, Move.WALK_STOP, self._loop(who, Move.IDLE)))
            c.move_speed = 0.0
        return self._accept(who, "move")

    def _gait(self, who):
        """The gait task on the stack, or waiting as a start clip's next task."""
        for t in self.inst(who).stack:
            for c in (t, *t.following()):
                if c.type == TaskType.GAIT and not c.released:
                    return c
        return None

    def strike(self, who: Who, move: int | str | None = None) -> ActionResult:
        """A strike: a grab strike when holding, else a free attack (chained in recovery).
        ``move`` an anim id or a clip name (None: the jab, or the chain's next). The
        result is truthy when the strike starts; whether it lands is told at its window
        (FightEventKind.HIT or MISS).
        Rejected: an id that is not a whole number 0-2^31-1 (RangeError, a ValueError)."""
        if move is not None and not isinstance(move, str):
            move = check_int("strike: move", move, 0, INT32_MAX)
        c = self.combat(who)
        move = self._anim(who, move)
        if c.state == FightState.HOLDING:
            return self._grab_strike(who, move)
        chained = self.can_chain(who)
        if not (self.free(who) or chained):
            return self._why_busy(who, "strike", -1 if move is None else move)
        if move is None:
            move = Move.JAB
            if chained:
                cur = self.game.record(self._name(self._ent(who))).anim_id
                if cur in ATTACK_CHAIN:
                    move = ATTACK_CHAIN[(ATTACK_CHAIN.index(cur) + 1) % len(ATTACK_CHAIN)]
        if int(move) not in ATTACK_CHAIN:
            return self._refuse(who, "strike", Refusal.NOT_A_STRIKE,
                                f"{move} is not a free strike ({', '.join(str(int(m)) for m in ATTACK_CHAIN)})",
                                int(move))
        self._require(2)
        self._stop_moving(who)
        self._begin(who)
        task = self._clip(who, move, self._loop(who, Move.FIGHT_IDLE), held=FightFlags.WINDUP,
                          on_end=self._ended(who, "attack"))
        self._change(who, task)
        c.state = FightState.ATTACKING
        c.move_id = int(move)
        c.struck = False
        self._log(who, "strike", int(move))
        return self._accept(who, "strike", int(move))

    def grab(self, who: Who) -> ActionResult:
        """The grab attempt (70); it connects when its window opens on someone in reach
        (FightEventKind.GRAB, else MISS). Refused while busy (the result says why)."""
        if not self.free(who):
            return self._why_busy(who, "grab")
        self._require(2)
        self._stop_moving(who)
        self._begin(who)
        task = self._clip(who, Move.GRAB_ATTEMPT, self._loop(who, Move.FIGHT_IDLE), held=FightFlags.WINDUP,
                          on_end=self._ended(who, "grab_attempt"))
        self._change(who, task)
        c = self.combat(who)
        c.state = FightState.GRABBING
        c.move_id = int(Move.GRAB_ATTEMPT)
        self._log(who, "grab")
        return self._accept(who, "grab", int(Move.GRAB_ATTEMPT))

    def throw(self, who: Who, move: int | str | None = None) -> ActionResult:
        """A throw from the hold: the thrower turns, the victim is released along the turn.
        ``move`` an anim id or a clip name (None: the side throw 149). Refused without a
        hold of an attached victim, in the hold's strike window, or for a move that is
        not a throw (a victim's clip included); the result says which.
        Rejected: an id that is not a whole number 0-2^31-1 (RangeError, a ValueError)."""
        if move is not None and not isinstance(move, str):
            move = check_int("throw: move", move, 0, INT32_MAX)
        c = self.combat(who)
        move = self._anim(who, move)
        mv = -1 if move is None else int(move)
        if c.state != FightState.HOLDING or self.body(c.partner).attachment != self._ent(who):
            return self._refuse(who, "throw", Refusal.NOT_HOLDING, "holds no one (grab first)", mv)
        if self.flags(who) & (FightFlags.WINDUP | FightFlags.HIT_WINDOW):
            return self._refuse(who, "throw", Refusal.IN_WINDOW, "a grab strike is before or in its hit window", mv)
        move = int(move) if move is not None else int(Move.THROW_SIDE)
        if move not in THROWS:
            victim = " (a victim's clip)" if move in {int(v) for v, _ in THROWS.values()} else ""
            return self._refuse(who, "throw", Refusal.NOT_A_THROW,
                                f"{move}{victim} is not a throw ({', '.join(str(int(m)) for m in THROWS)})", move)
        v = c.partner
        victim_clip = THROWS[Move(move)][0]
        self._require(4)
        self._begin(who)
        self._begin(v)
        self._change(who, self._clip(who, move, self._loop(who, Move.FIGHT_IDLE), held=FightFlags.PAIRED,
                                     on_end=self._ended(who, "throw")))
        down = self._loop(v, Move.GROUNDED, held=FightFlags.DOWN)
        # The attached victim is swung by the thrower's turn; its own clip's turn is off
        # (task flag 0x2), so it is not turned twice.
        self._change(v, self._clip(v, victim_clip, down, held=FightFlags.PAIRED | FightFlags.DOWN, attacker=who,
                                   flags=TaskFlags.NO_TURN))
        c.state = FightState.THROWING
        c.move_id = move
        self.combat(v).state = FightState.HELD
        self._log(who, "throw", move, self._name(v))
        self._emit(FightEventKind.THROW, attacker=self._name(self._ent(who)), victim=self._name(v), move=move)
        return self._accept(who, "throw", move)

    def let_go(self, who: Who) -> ActionResult:
        """Let the held victim go: both play their let-go clips; the victim is detached.
        Refused without a hold or in the hold's strike window (the result says which)."""
        c = self.combat(who)
        if c.state != FightState.HOLDING:
            return self._refuse(who, "let_go", Refusal.NOT_HOLDING, "holds no one")
        if self.flags(who) & (FightFlags.WINDUP | FightFlags.HIT_WINDOW):
            return self._refuse(who, "let_go", Refusal.IN_WINDOW, "a grab strike is before or in its hit window")
        v = c.partner
        self._require(4)
        self._begin(who)
        self._begin(v)
        self._change(who, self._clip(who, Move.LET_GO, self._loop(who, Move.FIGHT_IDLE), held=FightFlags.PAIRED,
                                     on_end=self._ended(who, "let_go")))
        self._change(v, self._clip(v, Move.LET_GO_VICTIM, self._loop(v, Move.IDLE), held=FightFlags.PAIRED,
                                   attacker=who, on_end=self._ended(v, "let_go")))
        self._detach(v)
        c.state = FightState.LETTING_GO
        self.combat(v).state = FightState.LETTING_GO
        self._log(who, "let_go")
        return self._accept(who, "let_go", int(Move.LET_GO))

    # ---------------------------------------------------------------- the pair
    def _connect(self, a: int, v: int) -> None:
        """Turn and slide the pair together, then both play their connecting clips.
        The six tasks are required before anything changes (TaskPoolExhausted: nothing did)."""
        self._require(4)
        aset = self.inst(a).anim_set
        rec = aset.range(Move.GRAB_CONNECT)
        dx, dy = rec.direction
        point = _local_to_world(self.body(a), dx * rec.reach, dy * rec.reach)
        vb, ab = self.body(v), self.body(a)
        vb.slide_to = ab.position + point
        vb.slide_heading = _wrap(ab.heading + 180.0)
        vb.slide_left = SLIDE_UPDATES
        vb.state_velocity = np.zeros(3)
        self._stop_moving(v)
        self._begin(a)
        self._begin(v)
        hold_a = self._loop(a, Move.HOLD, held=FightFlags.PAIRED)
        hold_v = self._loop(v, Move.HOLD_VICTIM, held=FightFlags.PAIRED, attacker=a)
        self._change(a, self._clip(a, Move.GRAB_CONNECT, hold_a, held=FightFlags.PAIRED,
                                   on_end=self._ended(a, "connect")))
        self._change(v, self._clip(v, Move.GRAB_CONNECT_VICTIM, hold_v, held=FightFlags.PAIRED, attacker=a))
        ca, cv = self.combat(a), self.combat(v)
        ca.partner, cv.partner = v, a
        ca.role, cv.role = "attacker", "victim"
        ca.state, cv.state = FightState.CONNECTING, FightState.HELD
        self.stats.grabs += 1
        self._log(a, "grab_connect", self._name(v))
        self._emit(FightEventKind.GRAB, attacker=self._name(a), victim=self._name(v), move=int(Move.GRAB_CONNECT))

    def _attach(self, a: int) -> None:
        """Snap the victim to the hold's type-8 point, then attach it to the attacker."""
        ca = self.combat(a)
        v = ca.partner
        if v < 0 or self.combat(v).partner != a:
            return
        hold = self.inst(a).anim_set.clip(Move.HOLD)
        place = next((e for e in hold.decoded_events() if e.type == EventType.PARTNER_PLACE), None)
        off = np.array(place.position if place is not None else (0.0, 0.8, 0.0), dtype=np.float64)
        vb = self.body(v)
        vb.slide_to, vb.slide_left = None, 0
        vb.attachment = a
        vb.attach_offset = off
        vb.attach_heading = 180.0
        place_attached(self.body(a), vb)
        ca.partner_place = off
        ca.state = FightState.HOLDING

    def _grab_strike(self, who: Who, move: int | None) -> ActionResult:
        a = self._ent(who)
        c = self.combat(a)
        mv = -1 if move is None else int(move)
        if self.body(c.partner).attachment != a:
            return self._refuse(who, "strike", Refusal.NOT_HOLDING, "the victim is not attached yet", mv)
        if self.flags(a) & (FightFlags.WINDUP | FightFlags.HIT_WINDOW):
            return self._refuse(who, "strike", Refusal.IN_WINDOW, "a grab strike is before or in its hit window", mv)
        move = int(move) if move is not None else int(Move.GRAB_KNEE)
        if move not in GRAB_STRIKES:
            return self._refuse(who, "strike", Refusal.NOT_A_GRAB_STRIKE,
                                f"{move} is not a grab strike ({', '.join(str(int(m)) for m in GRAB_STRIKES)})", move)
        v = c.partner
        self._require(4)
        hold_a = self._loop(a, Move.HOLD, held=FightFlags.PAIRED)
        hold_v = self._loop(v, Move.HOLD_VICTIM, held=FightFlags.PAIRED, attacker=a)
        self._change(a, self._clip(a, move, hold_a, held=FightFlags.PAIRED | FightFlags.WINDUP))
        self._change(v, self._clip(v, GRAB_STRIKES[Move(move)], hold_v, held=FightFlags.PAIRED, attacker=a))
        c.move_id = move
        c.struck = False
        self._log(a, "grab_strike", move)
        return self._accept(a, "strike", move)

    def _detach(self, v: int) -> None:
        vb = self.body(v)
        if vb.attachment != NO_ATTACHMENT:
            vb.attachment = NO_ATTACHMENT
            vb.attach_offset = np.zeros(3)

    def _release_throw(self, a: int) -> None:
        """At the throw's end: the victim leaves along the thrower's turn and goes down."""
        ca = self.combat(a)
        v = ca.partner
        if v < 0:
            return
        ab = self.body(a)
        self._detach(v)
        fwd = _local_to_world(ab, 0.0, 1.0)
        cv = self.combat(v)
        cv.impulse = fwd * THROW_SPEED
        cv.state = FightState.DOWN
        cv.down_left = DOWN_UPDATES
        cv.partner, ca.partner = -1, -1
        cv.role = ca.role = ""
        ca.state = FightState.FREE
        self.stats.throws += 1
        self._log(a, "throw_release", self._name(v))
        self._emit(FightEventKind.FALL, attacker=self._name(a), victim=self._name(v), move=ca.move_id)

    # ---------------------------------------------------------------- hits
    def _on_window(self, ctx, ent: int, fe) -> None:
        """Event 0x2c (the window opens): a hit or grab check for the actions phase."""
        c = self.combat(ent)
        if c.state in (FightState.ATTACKING, FightState.GRABBING, FightState.HOLDING):
            self.pending.append(("window", ent, fe.anim_id))

    def _hit(self, a: int, anim_id: int) -> None:
        ca = self.combat(a)
        aset = self.inst(a).anim_set
        rec = aset.range(anim_id)
        if self.ko_at is not None or a in self.ko:
            return                                   # the round is over: no hit lands
        if ca.state == FightState.HOLDING:
            v = ca.partner
            if v >= 0 and not ca.struck and v not in self.ko:
                ca.struck = True
                self._damage(a, v, rec.damage)
            return
        if ca.state == FightState.GRABBING:
            far = aset.range(Move.GRAB_ATTEMPT).far * GRAB_SEARCH_FACTOR
            cands = []
            for name, e in self.game.humans():
                if e == a or self.combat(e).state in (FightState.HELD, FightState.DOWN) or \
                        self.body(e).attachment != NO_ATTACHMENT or self.combat(e).partner >= 0:
                    continue
                d = _distance(self.body(a).position, self.body(e).position)
                if d <= far and abs(_bearing(self.body(a), self.body(e).position)) <= GRAB_CONE_DEG:
                    cands.append((d, e))
            if cands:
                self._connect(a, min(cands)[1])
            else:
                self._log(a, "miss", int(Move.GRAB_ATTEMPT))
                self._emit(FightEventKind.MISS, attacker=self._name(a), move=int(Move.GRAB_ATTEMPT))
            return
        if ca.state != FightState.ATTACKING or ca.struck:
            return
        dx, dy = rec.direction
        want = detmath.atan2_deg_s(float(-dx), float(dy)) if (dx or dy) else 0.0
        reach = rec.far if rec.reach > 0 else 0.0
        for name, e in self.game.humans():
            if e == a or self.combat(e).state == FightState.DOWN or e in self.ko:
                continue
            d = _distance(self.body(a).position, self.body(e).position)
            if d <= reach and abs(_wrap(_bearing(self.body(a), self.body(e).position) - want)) <= HIT_CONE_DEG:
                if self.combat(e).state != FightState.HELD:
                    self.player.pool.require(4)     # the reaction's tasks, before any damage (all or nothing)
                ca.struck = True
                self._damage(a, e, rec.damage)
                behind = abs(_bearing(self.body(e), self.body(a).position)) > 90.0
                if e not in self.ko and self.combat(e).state not in (FightState.HELD,):
                    self._react(e, rec.hit, behind)
                break
        else:
            self._log(a, "miss", int(anim_id))
            self._emit(FightEventKind.MISS, attacker=self._name(a), move=int(anim_id))

    def _damage(self, a: int, v: int, amount: float) -> None:
        cv = self.combat(v)
        amount = float(max(0, amount))
        taken = min(amount, cv.health)
        cv.health -= taken
        cv.damage_taken += taken
        cv.hits += 1
        self.stats.strikes += 1
        self.stats.damage += taken
        self._log(a, "hit", self._name(v), taken)
        self._emit(FightEventKind.HIT, attacker=self._name(a), victim=self._name(v), move=self.combat(a).move_id,
                   damage=taken, health=float(cv.health))
        if self.ko_rule and cv.health <= 0.0 and v not in self.ko:
            self._knock_out(a, v)

    # ---------------------------------------------------------------- K.O. and rounds
    def _knock_out(self, a: int, v: int) -> None:
        """Health 0: ``v`` leaves any pair, falls (285) and lies grounded (196) for good;
        when at most one fighter is left standing the round ends (ours)."""
        now = self.game.ctx.update
        self.ko[v] = now
        cv = self.combat(v)
        p = cv.partner
        if p >= 0:                                   # break the pair: both detached and apart
            self._detach(v)
            self._detach(p)
            cp = self.combat(p)
            cp.partner, cp.role = -1, ""
            if p not in self.ko:
                cp.state = FightState.FREE
                self._begin(p)
                self.player.pool.require(2)
                self._change(p, self._loop(p, Move.FIGHT_IDLE))
            cv.partner, cv.role = -1, ""
        self._stop_moving(v)
        cv.impulse = np.zeros(3)
        vb = self.body(v)
        vb.slide_to, vb.slide_left = None, 0
        self._begin(v)
        self.player.pool.require(4)
        fall = self._clip(v, Move.KNOCKDOWN, self._loop(v, Move.GROUNDED, held=FightFlags.DOWN), held=FightFlags.DOWN)
        self._change(v, fall, 0.05)
        cv.state = FightState.DOWN
        cv.down_left = 0
        self._log(v, "ko", self._name(a))
        self._emit(FightEventKind.KO, attacker=self._name(a), victim=self._name(v), move=self.combat(a).move_id)
        standing = [n for n, e in self.game.humans() if e not in self.ko]
        if len(standing) <= 1 and self.ko_at is None:
            self.ko_at = now
            self.stats.rounds.append({"round": self.stats.round, "winner": standing[0] if standing else None,
                                      "loser": self._name(v), "ko_update": now})
            self._emit(FightEventKind.ROUND_END, victim=self._name(v), winner=standing[0] if standing else "")

    def _note_starts(self) -> None:
        """Keep where each human starts (position, heading, health): a new round starts there."""
        for _, e in self.game.humans():
            if e not in self.starts:
                b, c = self.body(e), self.combat(e)
                self.starts[e] = (np.array(b.position, dtype=np.float64), float(b.heading), float(c.max_health))

    def _new_round(self) -> None:
        """The next round: pending windows and ends dropped, every human back at its start,
        at full health, free, in the fight idle (358), with no fade."""
        self.pending = []
        self._note_starts()
        self.player.pool.require(2 * len(self.starts) + 2)
        for _, e in self.game.humans():
            pos, heading, health = self.starts[e]
            b, c = self.body(e), self.combat(e)
            b.position, b.heading = pos.copy(), heading
            b.velocity, b.state_velocity = np.zeros(3), np.zeros(3)
            b.attachment, b.attach_offset = NO_ATTACHMENT, np.zeros(3)
            b.slide_to, b.slide_left = None, 0
            c.health = health
            c.state, c.partner, c.role, c.partner_place = FightState.FREE, -1, "", None
            c.move_id, c.struck = -1, False
            c.move_dir, c.move_speed, c.impulse, c.down_left = np.zeros(3), 0.0, np.zeros(3), 0
            self._begin(e)
            self._change(e, self._loop(e, Move.FIGHT_IDLE), 0.0)
        self.ko, self.ko_at = {}, None
        self.stats.round += 1
        self.stats.record((self.game.ctx.update, "", "round", self.stats.round))
        self._emit(FightEventKind.ROUND_START)

    @property
    def round_over(self) -> bool:
        """At most one fighter is left standing (the pause before the next round, if any)."""
        return self.ko_at is not None

    def _react(self, v: int, hit_code: int, behind: bool) -> None:
        clip, down = reaction_for(hit_code, behind)
        c = self.combat(v)
        self._stop_moving(v)
        self._begin(v)
        self.player.pool.require(4)
        if down:
            task = self._clip(v, clip, self._loop(v, Move.GROUNDED, held=FightFlags.DOWN), held=FightFlags.DOWN)
            c.state = FightState.DOWN
            c.down_left = DOWN_UPDATES
        else:
            task = self._clip(v, clip, self._loop(v, Move.FIGHT_IDLE), held=FightFlags.STAGGER,
                              on_end=self._ended(v, "react"))
            c.state = FightState.REACTING
        self._change(v, task, 0.05)

    def _stop_moving(self, who) -> None:
        c = self.combat(who)
        c.move_speed = 0.0
        self.body(who).state_velocity = np.zeros(3)

    # ---------------------------------------------------------------- callbacks
    def _begin(self, who) -> None:
        """A new move starts: end callbacks of earlier moves no longer change the state."""
        self.combat(who).serial += 1

    def _ended(self, who, what: str):
        """An end callback for the current move (it acts only if no move started since)."""
        ent = self._ent(who)
        serial = self.combat(ent).serial

        def on_end(inst) -> None:
            self.pending.append(("end", ent, what, serial))
        return on_end

    def _on_end(self, ent: int, what: str, serial: int) -> None:
        c = self.combat(ent)
        if c.serial != serial:
            return
        if what == "connect" and c.state == FightState.CONNECTING:
            self._attach(ent)
        elif what == "throw" and c.state == FightState.THROWING:
            self._release_throw(ent)
        elif what == "let_go":
            c.state = FightState.FREE
            c.partner, c.role = -1, ""
        elif what in ("attack", "grab_attempt", "react") and c.state in (
                FightState.ATTACKING, FightState.GRABBING, FightState.REACTING):
            c.state = FightState.FREE

    # ---------------------------------------------------------------- per update
    def _update(self, ctx) -> None:
        """The actions phase: resolve this update's windows and ends, run the controllers
        (they set intents; the state update turns them into velocities). With ``rounds``,
        the update ``round_pause`` after a K.O. first starts the next round."""
        if self.rounds and self.ko_at is not None and ctx.update - self.ko_at >= self.round_pause:
            self._new_round()
        self._partners_gone()
        pending, self.pending = self.pending, []
        for item in pending:
            if not self._alive(item[1]):             # its human left the world
                continue
            self._guarded(item[1], self._hit if item[0] == "window" else self._on_end, *item[1:])
        for ctl in list(self.controllers):
            ctl(self)
        for name, e in self.game.humans():
            c = self.combat(e)
            if c.state == FightState.DOWN and c.down_left > 0 and e not in self.ko and \
                    not (self.flags(e) & FightFlags.PAIRED):
                c.down_left -= 1
                if c.down_left == 0:
                    self._guarded(e, self._get_up, e)
            if c.state == FightState.DOWN and not (self.flags(e) & FightFlags.DOWN) and c.down_left == 0:
                c.state = FightState.FREE
        if self.separate:
            self._separate()

    def _state_velocities(self, ctx) -> None:
        """The state function (run first in the state update, before root motion): each
        human's intent into its state velocity. The locomotion sets none while a start or
        stop clip plays (the clip's root velocity moves the body then; "Root motion",
        0x00241a88), the intent's direction x speed once the gait blend is the newest
        task; a throw's decaying push is added. Original: 0x0023fea8 (the state update)."""
        for name, e in self.game.humans():
            c, b = self.combat(e), self.body(e)
            vel = np.zeros(3)
            if c.move_speed > 0.0 and self._gait_leads(e):
                vel = c.move_dir * c.move_speed
            if detmath.hypot_s(float(c.impulse[0]), float(c.impulse[1])) > 0.05:
                vel = vel + c.impulse
                c.impulse = c.impulse * IMPULSE_DECAY
            else:
                c.impulse = np.zeros(3)
            b.state_velocity = vel

    def _get_up(self, e: int) -> None:
        self.player.pool.require(3)
        self._begin(e)
        self._change(e, self._clip(e, Move.GET_UP, self._loop(e, Move.FIGHT_IDLE), held=FightFlags.DOWN,
                                   on_end=self._ended(e, "get_up")), 0.1)

    def _guarded(self, ent: int, rule, *args) -> None:
        """Run one fight rule; a limit of the original it hits (the task pool, the stack)
        refuses that rule alone: every rule checks its tasks before it changes anything,
        so the world is as before it, the update goes on for every other human, and the
        refusal is counted, logged and listed in ``player.refused`` (as the player lists
        a refused queued start), which run_scenario turns into one error."""
        try:
            rule(*args)
        except AnimLimitError as exc:
            self.stats.refused += 1
            self.stats.record((self.game.ctx.update, self._name(ent), "refused", f"limit: {exc}"))
            self.player.refused.append((self.inst(ent), exc))

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

    def _gait_leads(self, ent: int) -> bool:
        """The gait blend is the newest task (no start or stop clip playing)."""
        top = self.player.top(self.inst(ent))
        return top is not None and top.type == TaskType.GAIT


def _cell(position) -> tuple[int, int]:
    """The separation grid's cell of a position (x, y in metres)."""
    return math.floor(float(position[0]) / _CELL), math.floor(float(position[1]) / _CELL)


def fight_of(game: Game) -> Fight:
    """The game's fight rules, attached on first use."""
    f = getattr(game, "fight", None)
    return cast(Fight, f) if f is not None else Fight(game)


def _fight_table(game, values: dict) -> None:
    """A scenario's ``[fight]`` table: the fight rules attached with its options."""
    Fight(game, **values)


# The ``[fight]`` table's keys: Fight's keyword options (docs/scenarios.md, "[fight]").
FIGHT_TABLE = TableSpec({"separate": lambda v: isinstance(v, bool), "ko": lambda v: isinstance(v, bool),
                         "rounds": lambda v: isinstance(v, bool),
                         "round_pause": lambda v: _is_int(v) and 1 <= v <= MAX_ROUND_PAUSE}, _fight_table)


def register_actions(registry: Registry) -> None:
    """Register the fight actions (grab, strike, throw, let_go, move, face), the ``[fight]``
    table (the rules' options) and the set-up that attaches the fight rules to a
    scenario's Game (docs/scenarios.md, "Actions")."""
    registry.add_table("fight", FIGHT_TABLE)
    registry.add_setup(fight_of)
    for name, spec in FIGHT_ACTIONS.items():
        registry.add_action(name, spec)


def _is_move(v) -> bool:
    """A move id a scenario may name: a whole number 0 to 2^31 - 1."""
    return _is_int(v) and 0 <= v <= INT32_MAX


FIGHT_ACTIONS: dict[str, ActionSpec] = {
    "grab": ActionSpec({}, lambda game, cmd: fight_of(game).grab(cmd.human)),
    "strike": ActionSpec({"move": _is_move}, lambda game, cmd: fight_of(game).strike(cmd.human, cmd.extra.get("move")),
                         frozenset({"move"})),
    "throw": ActionSpec({"move": _is_move}, lambda game, cmd: fight_of(game).throw(cmd.human, cmd.extra.get("move")),
                        frozenset({"move"})),
    "let_go": ActionSpec({}, lambda game, cmd: fight_of(game).let_go(cmd.human)),
    "move": ActionSpec({"direction": lambda v: _vec2(v) and all(abs(x) <= MAX_COORD for x in v),
                        "speed": lambda v: _is_num(v) and 0 <= v <= MAX_MOVE_SPEED,
                        "pace": lambda v: v in PACES},
                       lambda game, cmd: fight_of(game).move(cmd.human, cmd.extra.get("direction", [0.0, 1.0]),
                                                             cmd.extra.get("speed"), pace=cmd.extra.get("pace"))),
    "face": ActionSpec({"heading": lambda v: _is_num(v) and abs(v) <= MAX_COORD, "toward": lambda v: isinstance(v, str)},
                       lambda game, cmd: fight_of(game).face(cmd.human, cmd.extra.get("heading"),
                                                             cmd.extra.get("toward"))),
}
