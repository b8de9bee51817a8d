"""The fight rules' strikes and hits: free attacks, chains, hit windows, damage, reactions.

``Hits`` (on ``Rounds``): a strike (a grab strike when holding, else a free attack,
chained in the recovery), its hit window opened by the 0x2c event ("Events", the held
flags), the range record's damage (+0x0a) and hit code (+0x0c) picking the victim's
reaction ("The Anim Range List"), and a K.O. when the health reaches 0.
"""
from __future__ import annotations

from scuffle.anim.maths import detmath
from scuffle.anim.base.limits import INT32_MAX, check_int
from scuffle.anim.engine.stack import AnimLimitError
from scuffle.components import NO_ATTACHMENT, Body, Combat, HumanRecord
from scuffle.game.fighters.fightdata import (FightFlags, FightState, Who, Refusal, ActionResult,
                                             FightEventKind, GRAB_SEARCH_FACTOR, GRAB_CONE_DEG, HIT_CONE_DEG,
                                             DOWN_UPDATES, reaction_for, _wrap, _bearing, _distance)
from scuffle.game.fighters.moves import ATTACK_CHAIN, Move
from scuffle.game.fighters.rounds import Rounds

__all__ = ["Hits"]


class Hits(Rounds):
    """Strikes, hit windows, damage and reactions (see the module docstring)."""

    def strike(self, who: Who, move: int | str | None = None) -> ActionResult:
        """A strike: a grab strike when holding, else a free attack (chained in recovery).
        ``move`` an anim id or a clip name (None: the jab, or the chain's next). The
        result is truthy when the strike starts; whether it lands is told at its window
        (FightEventKind.HIT or MISS).
        Rejected: an id that is not a whole number 0-2^31-1 (RangeError, a ValueError)."""
        if move is not None and not isinstance(move, str):
            move = check_int("strike: move", move, 0, INT32_MAX)
        ent = who if who.__class__ is int else self._ent(who)    # the name looked up once (its errors)
        c = self.combat(ent)
        move = self._anim(ent, move)
        if c.state == FightState.HOLDING:
            return self._grab_strike(who, move)
        chained = self.can_chain(ent)
        if not (chained or self.free(ent)):
            return self._why_busy(who, "strike", -1 if move is None else move)
        if move is None:
            move = Move.JAB
            if chained:
                cur = self._lookup(ent, HumanRecord).anim_id
                if cur in ATTACK_CHAIN:
                    move = ATTACK_CHAIN[(ATTACK_CHAIN.index(cur) + 1) % len(ATTACK_CHAIN)]
        if int(move) not in ATTACK_CHAIN:
            return self._refuse(who, "strike", Refusal.NOT_A_STRIKE,
                                f"{move} is not a free strike ({', '.join(str(int(m)) for m in ATTACK_CHAIN)})",
                                int(move))
        self._require(2)
        self._stop_moving(ent)
        self._begin(ent)
        self._clip_loop(ent, move, Move.FIGHT_IDLE, held=FightFlags.WINDUP, on_end=self._ended(ent, "attack"))
        c.state = FightState.ATTACKING
        c.move_id = int(move)
        c.struck = False
        self._log(who, "strike", int(move))
        return self._accept(who, "strike", int(move))

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
            ba = self.body(a)
            for e, mine in self._parts():            # (game.humans()' order, no list made)
                if e == a or mine[Combat].state in (FightState.HELD, FightState.DOWN) or \
                        mine[Body].attachment != NO_ATTACHMENT or mine[Combat].partner >= 0:
                    continue
                pe = mine[Body].position
                d = _distance(ba.position, pe)
                if d <= far and abs(_bearing(ba, pe)) <= GRAB_CONE_DEG:
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
        ba = self.body(a)
        for e, mine in self._parts():                # (game.humans()' order, no list made)
            if e == a or mine[Combat].state == FightState.DOWN or e in self.ko:
                continue
            pe = mine[Body].position
            d = _distance(ba.position, pe)
            if d <= reach and abs(_wrap(_bearing(ba, pe) - want)) <= HIT_CONE_DEG:
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

    def _react(self, v: int, hit_code: int, behind: bool) -> None:
        clip, down = reaction_for(hit_code, behind)
        c = self.combat(v)
        self._stop_moving(v)
        self._begin(v)
        self.player.pool.require(4)
        # the reaction: a change (fade 0.05) to the clip handing over to the grounded loop or
        # the fight idle, one prepared command; the state is set once its tasks are made,
        # before the change (a change that refuses, an AnimLimitError, leaves it set)
        try:
            if down:
                self._clip_loop(v, clip, Move.GROUNDED, held=FightFlags.DOWN, loop_held=FightFlags.DOWN, fade=0.05)
            else:
                self._clip_loop(v, clip, Move.FIGHT_IDLE, held=FightFlags.STAGGER, on_end=self._ended(v, "react"),
                                fade=0.05)
        except AnimLimitError:                       # the pool was checked: the change refused
            self._react_state(c, down)
            raise
        self._react_state(c, down)

    @staticmethod
    def _react_state(c, down: bool) -> None:
        """A reaction's state: down (DOWN_UPDATES to count) or reacting."""
        if down:
            c.state = FightState.DOWN
            c.down_left = DOWN_UPDATES
        else:
            c.state = FightState.REACTING

