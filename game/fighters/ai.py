"""A simple fighter AI: approach, strike or grab, and from a hold strike, throw or let go.

Deterministic: every choice comes from its own ``random.Random(seed)``, and it only
acts through the fight rules' commands, so it is gated by the held flags like any
input. Add it to a Fight with ``fight.controllers.append(FighterAI(...))``.
"""
from __future__ import annotations

from scuffle.anim import detmath
from scuffle.components import Body, Combat
from scuffle.game.fighters.combat import Fight, FightState
from scuffle.game.fighters.moves import GRAB_STRIKES, THROWS
from scuffle.game.runtime.snapshot import SavedRandom

__all__ = ["FighterAI"]

ENGAGE_RANGE = 1.05        # ours: close enough to strike or grab (m)
RUN_RANGE = 4.0            # ours: further than this, jog
# The hold's choices in the order the generator draws from them (sorted ids), made once.
_HOLD_STRIKES = tuple(sorted(GRAB_STRIKES))
_THROW_MOVES = tuple(sorted(THROWS))
_FREE, _HOLDING, _DOWN, _HELD = FightState.FREE, FightState.HOLDING, FightState.DOWN, FightState.HELD


class FighterAI:
    """One AI-controlled fighter (see the module docstring).

    In: the fighter's and the opponent's names, a seed, and ``aggression`` (0-1, the
    chance per decision to act rather than wait). Decisions are taken every
    ``think_every`` updates.
    """

    def __init__(self, me: str, opponent: str, seed: int = 0, aggression: float = 0.6,
                 think_every: int = 6):
        self.me, self.opponent = me, opponent
        self.rng = SavedRandom(seed)
        self.aggression = aggression
        self.think_every = think_every
        self.hold_actions = 0
        self.tick = 0
        self.enabled = True

    def save_state(self) -> tuple:
        """What the next updates read (Game.snapshot): the random generator's state, the
        tick, the hold's strikes left, whether it is on."""
        return (self.rng.save_state(), self.tick, self.hold_actions, self.enabled)

    def config(self) -> dict:
        """Its settings as plain data (Game.config)."""
        return {"kind": "FighterAI", "me": self.me, "opponent": self.opponent, "aggression": self.aggression,
                "think_every": self.think_every}

    def state_fits(self, state) -> str | None:
        """Why ``state`` (a ``save_state``, perhaps from a file) cannot be loaded, or None."""
        from scuffle.game.runtime.snapfile import _Refused, need_random_state
        if not (isinstance(state, tuple) and len(state) == 4):
            return "not an AI's state"
        try:
            need_random_state(state[0], "rng")
        except _Refused as e:
            return str(e)
        tick, hold, on = state[1:]
        if tick.__class__ is not int or not 0 <= tick < 1 << 62 or hold.__class__ is not int or \
                not 0 <= hold <= 16 or on.__class__ is not bool:
            return "tick, hold actions or enabled out of range"
        return None

    def load_state(self, state: tuple) -> None:
        """Put back a ``save_state`` (Game.restore)."""
        rng, self.tick, self.hold_actions, self.enabled = state
        self.rng.load_state(rng)

    def __call__(self, fight: Fight) -> None:
        """One update: the tick counted; every ``think_every`` updates a decision (see the
        class docstring). Rejected: a fighter or opponent gone from the world (UnknownHuman
        for a name, KeyError for an entity), on every update, decision or not."""
        if not self.enabled:
            return
        self.tick = tick = self.tick + 1
        # the two humans looked up once (a name: Game.entity, UnknownHuman when gone), their
        # components read from the world's dict (fight.combat / fight.body without their calls)
        # (Game.entity's test inline: a name in the game's names whose entity is in the world
        # and not deleted; else the call itself, which raises)
        game, mine, theirs = fight._lookup.__self__, self.me, self.opponent
        comps, names, dead = game._entities, game.names, game._dead
        me_e = names.get(mine) if mine.__class__ is str else None
        if me_e is None or me_e not in comps or me_e in dead:
            me_e = fight._entity(mine) if mine.__class__ is str else fight._ent(mine)
        op_e = names.get(theirs) if theirs.__class__ is str else None
        if op_e is None or op_e not in comps or op_e in dead:
            op_e = fight._entity(theirs) if theirs.__class__ is str else fight._ent(theirs)
        my_comps, their_comps = comps[me_e], comps[op_e]
        me, op = my_comps[Body], their_comps[Body]
        if tick % self.think_every:
            return                   # no decision this update: the two only looked up (one gone raises)
        c = my_comps[Combat]
        state = c.state
        if state == _HOLDING:
            self._hold(fight)
            return
        if state != _FREE:
            return
        if fight.can_chain(me_e) and self.rng.random() < 0.5:
            fight.strike(mine)
            return
        if not fight.free(me_e):
            return
        # the ground offset to the opponent: the float64 differences numpy's would give
        ox, oy, _ = op.position.tolist()
        mx, my, _ = me.position.tolist()
        dx, dy = ox - mx, oy - my
        dist = detmath.hypot_s(dx, dy)
        if dist > ENGAGE_RANGE:
            fight.move(mine, (dx, dy), pace="jog" if dist > RUN_RANGE else "walk")
            return
        if c.move_speed > 0.0:
            fight.move(mine, (dx, dy), 0.0)
            return
        fight.face(mine, toward=theirs)
        if their_comps[Combat].state in (_DOWN, _HELD) or self.rng.random() > self.aggression:
            return
        if self.rng.random() < 0.45:
            self.hold_actions = self.rng.randint(1, 3)
            fight.grab(mine)
        else:
            fight.strike(mine)

    def _hold(self, fight: Fight) -> None:
        """In a hold: a few grab strikes, then a throw (mostly) or a let-go."""
        if self.tick % self.think_every:
            return
        if self.hold_actions > 0:
            if fight.strike(self.me, self.rng.choice(_HOLD_STRIKES)):
                self.hold_actions -= 1
            return
        if self.rng.random() < 0.8:
            fight.throw(self.me, self.rng.choice(_THROW_MOVES))
        else:
            fight.let_go(self.me)
