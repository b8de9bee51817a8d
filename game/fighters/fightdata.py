"""The fight rules' data: flags, states, answers, events, counts, constants and geometry.

What every part of ``scuffle.game.fighters.combat.Fight`` shares: the held bits it uses
(``FightFlags``), the fight states, the answers (``Refusal``, ``ActionResult``), the
events a host receives (``FightEventKind``, ``FightEvent``), the counts
(``FightStats``), the numbers (ours unless a spec line is named) and the ground-plane
geometry (headings, bearings, distances from anim.maths.detmath: the same bits on every CPU).
``scuffle.game.fighters.combat`` re-exports the public names.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntFlag, StrEnum
from typing import Callable
import collections
import math

import numpy as np

from scuffle.anim.maths import detmath
from scuffle.anim.playback.tasks import HeldFlags
from scuffle.components import Body
from scuffle.game.fighters.fightlog import FightLog
from scuffle.game.fighters.moves import Move



class FightFlags(IntFlag):
    """Held bits the fight rules use: the spec's attack phases plus ours."""

    WINDUP = HeldFlags.WINDUP          # before the hit window (0x2c opens it)
    HIT_WINDOW = HeldFlags.HIT_WINDOW  # the window (0x2d closes it)
    RECOVERY = HeldFlags.RECOVERY      # after it: a chained strike may follow
    PAIRED = 0x100                     # ours: in a paired move (either side)
    STAGGER = 0x200                    # ours: a hit reaction plays
    DOWN = 0x800                       # ours: knocked down, grounded or getting up


BUSY = FightFlags.WINDUP | FightFlags.HIT_WINDOW | FightFlags.PAIRED | FightFlags.STAGGER | FightFlags.DOWN


class LocomotionStop(StrEnum):
    """What stops the locomotion's own velocity (``Fight(locomotion_stop=)``; docs/original.md,
    "The locomotion's velocity").

    MASK: a held bit of the mask 0x110c0880 on record +0x08 (``LOCOMOTION_STILL``: the start
    and stop clips' START_CLIP / START_CLIP_2, event 0x48's REPLACED ...), tested at
    0x00241a88 ("Root motion" L376): the original's, the default. TOP_TASK: any newest task
    but the gait blend (``Player.top``), whatever the held flags (scuffle's earlier reading;
    the same figures on the demo's walk start, none where a mask bit is set while a gait
    leads).
    """

    MASK = "mask"
    TOP_TASK = "top_task"


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
            return f"update {self.update}: {self.who} {what} was accepted"
        # a sentence, then the Refusal's value for scripts that look for it
        return f"update {self.update}: {self.who} {what} was refused: {self.detail} [{self.refusal.value}]"


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
    oldest first, kept as table rows (fightlog.FightLog) (e.g. ``(u, "p2", "throw", 149, "p1")``, ``(u, "p1", "hit", "p2", 5.0)``,
    ``(u, "p1", "miss", 11)``, ``(u, "p1", "refused", "grab", "busy")``; ``update`` is
    the trace's number); ``kinds`` counts every entry ever logged by its ``what`` and
    ``logged`` all of them, so a long run's memory stays flat.
    """

    grabs: int = 0
    strikes: int = 0
    throws: int = 0
    damage: float = 0.0
    refused: int = 0
    log: FightLog = field(default_factory=lambda: FightLog(LOG_SIZE))
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


def _xy(v) -> list:
    """A position's numbers as Python floats (a float64 array's own values: the float64
    differences below are numpy's, bit for bit)."""
    return v.tolist() if v.__class__ is np.ndarray else [float(x) for x in v]


def _bearing(body: Body, target: np.ndarray) -> float:
    """Degrees from the body's facing to ``target`` (positive: to its left)."""
    t, p = _xy(target), _xy(body.position)
    ang = detmath.atan2_deg_s(-(t[0] - p[0]), t[1] - p[1])         # heading that would face the target
    return _wrap(ang - body.heading)


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    """The ground distance from a to b (x, y; metres)."""
    pa, pb = _xy(a), _xy(b)
    return detmath.hypot_s(pb[0] - pa[0], pb[1] - pa[1])


def _heading_to(src: np.ndarray, dst: np.ndarray) -> float:
    s, d = _xy(src), _xy(dst)
    return detmath.atan2_deg_s(-(d[0] - s[0]), d[1] - s[1])


def _cell(position) -> tuple[int, int]:
    """The separation grid's cell of a position (x, y in metres)."""
    return math.floor(float(position[0]) / _CELL), math.floor(float(position[1]) / _CELL)
