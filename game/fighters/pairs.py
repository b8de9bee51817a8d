"""The fight rules' pairs: grabs, holds, grab strikes, throws and letting go.

``Pairs`` (on ``Locomotion``): a grab searches within id 70's far range x 1.25
(0x00284920), the two bodies are turned and slid together, the victim plays the
attacker's clips from the attacker's set at the attacker's rate ("Paired tasks"), is
snapped to the hold's point and attached; a grab strike, a throw releasing the victim
along the thrower's turn, letting go, and what happens to a partner when a human leaves.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from scuffle.anim.data.clip import EventType
from scuffle.anim.base.limits import INT32_MAX, check_int
from scuffle.anim.playback.tasks import TaskFlags
from scuffle.components import NO_ATTACHMENT, Body, Combat
from scuffle.game.fighters.fightdata import (FightFlags, FightState, Who, Refusal, ActionResult,
                                             FightEventKind, SLIDE_UPDATES, DOWN_UPDATES, THROW_SPEED, _wrap,
                                             _local_to_world)
from scuffle.game.fighters.locomotion import Locomotion
from scuffle.game.fighters.moves import GRAB_STRIKES, THROWS, Move
from scuffle.systems.placement import place_attached

# The flag sets the rules test and give, made once (an IntFlag's | and & run in Python)
_IN_WINDOW = int(FightFlags.WINDUP | FightFlags.HIT_WINDOW)
_PAIRED_DOWN = FightFlags.PAIRED | FightFlags.DOWN
_PAIRED_WINDUP = FightFlags.PAIRED | FightFlags.WINDUP

__all__ = ["Pairs"]


class Pairs(Locomotion):
    """Grabs, holds, throws and letting go (see the module docstring)."""

    _places: dict[int, tuple]         # the hold clips' type-8 points (_hold_place: clip id -> clip, events, point)

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
        self._clip_loop(p, Move.KNOCKDOWN, Move.GROUNDED, held=FightFlags.DOWN, loop_held=FightFlags.DOWN, fade=0.0)

    def _let_go_alone(self, p: int, was_victim: bool) -> None:
        self.player.pool.require(3)
        c = self.combat(p)
        c.state = FightState.LETTING_GO
        clip, rest = (Move.LET_GO_VICTIM, Move.IDLE) if was_victim else (Move.LET_GO, Move.FIGHT_IDLE)
        if self.inst(p).anim_set.clip(clip) is None:           # a set without the let-go: free at once
            c.state = FightState.FREE
            self._change(p, self._loop(p, rest), 0.0)
            return
        self._clip_loop(p, clip, rest, on_end=self._ended(p, "let_go"), fade=0.0)

    def _partners_gone(self) -> None:
        """Humans whose partner (or holder) is no longer in the world (deleted directly
        with esper.delete_entity) are freed as human_leaving would free them.

        Each human's partner and attachment are read from the columns' fast views
        (CombatTable.views, the body table's ``m_attachment``), not through the views'
        descriptors; a stale view still raises as its field's read (StaleHandle)."""
        live = self._live
        ct: Any = None                               # the combat table of the views cv (CombatViews)
        cv: Any = None
        for e, mine in self._parts():
            c = mine[Combat]
            t, r = c._table, c._row
            if t is not ct:
                ct, cv = t, t.row_views or t.views()
            if cv.gen[r] != c._gen:
                c.partner                            # a stale view: raises (StaleHandle)
            p = cv.partner[r]
            if p >= 0 and not live(p):
                self._partner_left(e, thrown=False)
                ct = None                            # (its tasks may have grown a table)
                continue
            b = mine[Body]
            bt, br = b._table, b._row
            if bt.m_gen[br] != b._gen:
                b.attachment                         # a stale view: raises (StaleHandle)
            a = bt.m_attachment[br]
            if a != NO_ATTACHMENT and not (a >= 0 and live(a)):
                self._partner_left(e, thrown=False)
                ct = None

    def grab(self, who: Who) -> ActionResult:
        """The grab attempt (70); it connects when its window opens on someone in reach
        (FightEventKind.GRAB, else MISS). Refused while busy (the result says why)."""
        ent = who if who.__class__ is int else self._ent(who)    # the name looked up once (its errors)
        if not self.free(ent):
            return self._why_busy(who, "grab")
        self._require(2)
        self._stop_moving(ent)
        self._begin(ent)
        self._clip_loop(ent, Move.GRAB_ATTEMPT, Move.FIGHT_IDLE, held=FightFlags.WINDUP,
                        on_end=self._ended(ent, "grab_attempt"))
        c = self.combat(ent)
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
        ent = who if who.__class__ is int else self._ent(who)    # the name looked up once (its errors)
        c = self.combat(ent)
        move = self._anim(ent, move)
        mv = -1 if move is None else int(move)
        if c.state != FightState.HOLDING or self.body(c.partner).attachment != ent:
            return self._refuse(who, "throw", Refusal.NOT_HOLDING, "{who} holds no one; grab first", mv)
        if self.flags(ent) & _IN_WINDOW:
            return self._refuse(who, "throw", Refusal.IN_WINDOW, "{who}'s grab strike is before or in its hit window", mv)
        move = int(move) if move is not None else int(Move.THROW_SIDE)
        if move not in THROWS:
            victim = " (a victim's clip)" if move in {int(v) for v, _ in THROWS.values()} else ""
            return self._refuse(who, "throw", Refusal.NOT_A_THROW,
                                f"{move}{victim} is not a throw ({', '.join(str(int(m)) for m in THROWS)})", move)
        v = c.partner
        victim_clip = THROWS[Move(move)][0]
        self._require(4)
        self._begin(ent)
        self._begin(v)
        self._clip_loop(ent, move, Move.FIGHT_IDLE, held=FightFlags.PAIRED, on_end=self._ended(ent, "throw"))
        down = self._loop(v, Move.GROUNDED, held=FightFlags.DOWN)
        # The attached victim is swung by the thrower's turn; its own clip's turn is off
        # (task flag 0x2), so it is not turned twice.
        self._change(v, self._clip(v, victim_clip, down, held=_PAIRED_DOWN, attacker=ent,
                                   flags=TaskFlags.NO_TURN))
        c.state = FightState.THROWING
        c.move_id = move
        self.combat(v).state = FightState.HELD
        self._log(who, "throw", move, self._name(v))
        self._emit(FightEventKind.THROW, attacker=self._who(who), victim=self._name(v), move=move)
        return self._accept(who, "throw", move)

    def let_go(self, who: Who) -> ActionResult:
        """Let the held victim go: both play their let-go clips; the victim is detached.
        Refused without a hold or in the hold's strike window (the result says which)."""
        ent = who if who.__class__ is int else self._ent(who)    # the name looked up once (its errors)
        c = self.combat(ent)
        if c.state != FightState.HOLDING:
            return self._refuse(who, "let_go", Refusal.NOT_HOLDING, "{who} holds no one")
        if self.flags(ent) & _IN_WINDOW:
            return self._refuse(who, "let_go", Refusal.IN_WINDOW, "{who}'s grab strike is before or in its hit window")
        v = c.partner
        self._require(4)
        self._begin(ent)
        self._begin(v)
        self._clip_loop(ent, Move.LET_GO, Move.FIGHT_IDLE, held=FightFlags.PAIRED, on_end=self._ended(ent, "let_go"))
        self._change(v, self._clip(v, Move.LET_GO_VICTIM, self._loop(v, Move.IDLE), held=FightFlags.PAIRED,
                                   attacker=ent, on_end=self._ended(v, "let_go")))
        self._detach(v)
        c.state = FightState.LETTING_GO
        self.combat(v).state = FightState.LETTING_GO
        self._log(who, "let_go")
        return self._accept(who, "let_go", int(Move.LET_GO))

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
        off = self._hold_place(self.inst(a).anim_set.clip(Move.HOLD))
        vb = self.body(v)
        vb.slide_to, vb.slide_left = None, 0
        vb.attachment = a
        vb.attach_offset = off
        vb.attach_heading = 180.0
        place_attached(self.body(a), vb)
        ca.partner_place = off
        ca.state = FightState.HOLDING

    def _hold_place(self, hold) -> np.ndarray:
        """The hold clip's first type-8 point (the partner's place, "Paired tasks"; (0, 0.8,
        0) when it has none), read-only. Decoded once per clip and kept (``_places``: clip id
        -> the clip, its events list, the point), found again when the clip or its events
        list is another object (a set with another hold clip). Rejected: ``hold`` None (a
        set without the hold: AttributeError, as before)."""
        places: dict[int, tuple] | None = self.__dict__.get("_places")
        if places is None:
            places = {}
            self._places = places
        kept = places.get(id(hold))
        if kept is not None and kept[0] is hold and kept[1] is hold.events:
            return kept[2]
        place = next((e for e in hold.decoded_events() if e.type == EventType.PARTNER_PLACE), None)
        off = np.array(place.position if place is not None else (0.0, 0.8, 0.0), dtype=np.float64)
        off.flags.writeable = False
        places[id(hold)] = (hold, hold.events, off)
        return off

    def _grab_strike(self, who: Who, move: int | None) -> ActionResult:
        a = self._ent(who)
        c = self.combat(a)
        mv = -1 if move is None else int(move)
        if self.body(c.partner).attachment != a:
            return self._refuse(who, "strike", Refusal.NOT_HOLDING, "{who}'s victim is not attached yet", mv)
        if self.flags(a) & _IN_WINDOW:
            return self._refuse(who, "strike", Refusal.IN_WINDOW, "{who}'s grab strike is before or in its hit window", mv)
        move = int(move) if move is not None else int(Move.GRAB_KNEE)
        if move not in GRAB_STRIKES:
            return self._refuse(who, "strike", Refusal.NOT_A_GRAB_STRIKE,
                                f"{move} is not a grab strike ({', '.join(str(int(m)) for m in GRAB_STRIKES)})", move)
        v = c.partner
        self._require(4)
        hold_a = self._loop(a, Move.HOLD, held=FightFlags.PAIRED)
        hold_v = self._loop(v, Move.HOLD_VICTIM, held=FightFlags.PAIRED, attacker=a)
        self._change(a, self._clip(a, move, hold_a, held=_PAIRED_WINDUP))
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

