"""The fight rules' K.O. and rounds (ours; options, off by default).

``Rounds`` (on ``Pairs``): with ``ko`` a fighter at 0 health falls (285) and lies
grounded (196); at most one left standing ends the round (``stats.rounds``); with
``rounds`` the next starts ``round_pause`` updates later, everyone back at their start
with full health; a knocked-down fighter gets up after ``DOWN_UPDATES``.
"""
from __future__ import annotations

import numpy as np

from scuffle.components import NO_ATTACHMENT
from scuffle.game.fighters.fightdata import FightFlags, FightState, FightEventKind
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.pairs import Pairs

__all__ = ["Rounds"]


class Rounds(Pairs):
    """K.O.s, rounds and getting up (see the module docstring)."""

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
        self._clip_loop(v, Move.KNOCKDOWN, Move.GROUNDED, held=FightFlags.DOWN, loop_held=FightFlags.DOWN, fade=0.05)
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

    def _get_up(self, e: int) -> None:
        self.player.pool.require(3)
        self._begin(e)
        self._clip_loop(e, Move.GET_UP, Move.FIGHT_IDLE, held=FightFlags.DOWN, on_end=self._ended(e, "get_up"), fade=0.1)

