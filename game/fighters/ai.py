"""A simple fighter AI: approach, strike or grab, and from a hold strike, throw or let go.

Deterministic: every choice comes from its own generator (MT19937, the numbers of
``random.Random(seed)``), and it reads only the game's public state. Its state (the
generator's words, its tick, its hold's strikes, whether it is on) is a row of a table
(game.fighters.airows): of its own while it stands alone, of its Fight's ``ai_rows`` once
the Fight runs it, where the Game's snapshots copy it with the engine's tables. ``decide(game)``
gives this update's ``FightInput`` (what a netplay peer sends for its fighter);
called as a controller, ``ai(fight)`` decides and applies it (``Fight.apply``), so it is
gated by the held flags like any input. Add it to a Fight with
``fight.controllers.append(FighterAI(...))``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from scuffle.anim.maths import detmath
from scuffle.components import Body, Combat
from scuffle.game.fighters.combat import BUSY, PACES, Fight, FightFlags, FightState
from scuffle.game.fighters.fightinput import Action, FightInput
from scuffle.game.fighters.moves import GRAB_STRIKES, THROWS
from scuffle.game.fighters.airows import AIRow, RowField, RowRandom, ai_table, new_sid, row_state as _row_state

if TYPE_CHECKING:
    from scuffle.game.runtime.world import Game

__all__ = ["FighterAI"]

ENGAGE_RANGE = 1.05        # ours: close enough to strike or grab (m)
RUN_RANGE = 4.0            # ours: further than this, jog
# The hold's choices in the order the generator draws from them (sorted ids), made once.
_HOLD_STRIKES = tuple(sorted(GRAB_STRIKES))
_THROW_MOVES = tuple(sorted(THROWS))
_FREE, _HOLDING, _DOWN, _HELD = FightState.FREE, FightState.HOLDING, FightState.DOWN, FightState.HELD
_IN_WINDOW = int(FightFlags.WINDUP | FightFlags.HIT_WINDOW)     # a grab strike before or in its window
_WALK, _JOG = PACES.index("walk"), PACES.index("jog")
EMPTY = FightInput.EMPTY
_STRIKE = FightInput(action=Action.STRIKE)
_LET_GO = FightInput(action=Action.LET_GO)
# the hold's inputs by move: one immutable FightInput each, made once
_HOLD_STRIKE_INPUTS = {m: FightInput(action=Action.STRIKE, move_id=int(m)) for m in _HOLD_STRIKES}
_THROW_INPUTS = {m: FightInput(action=Action.THROW, move_id=int(m)) for m in _THROW_MOVES}
# the held-flag tests of Fight.can_chain and Fight.free, as plain ints
_RECOVERY, _BUSY = int(FightFlags.RECOVERY), int(BUSY)
_NOT_FREE = int(BUSY | FightFlags.RECOVERY)


class FighterAI:
    """One AI-controlled fighter (see the module docstring).

    In: the fighter's and the opponent's names, a seed, and ``aggression`` (0-1, the
    chance per decision to act rather than wait). Decisions are taken every
    ``think_every`` updates.
    """

    # its state is a row of a snapshot file's ``ais`` table (game.fighters.fightrows) and,
    # in memory, of its Fight's ``ai_rows`` (game.fighters.airows)
    ROW_STATE = True
    # between decisions its update only counts the tick and looks its two humans up, which
    # a group of fights does for it (game.fighters.fightupdates, ``between_decisions``):
    # read on this class alone
    quiet_ticks = True

    def __init__(self, me: str, opponent: str, seed: int = 0, aggression: float = 0.6,
                 think_every: int = 6):
        self.me, self.opponent = me, opponent
        table = ai_table(1)
        self.state_table, self.state_row = table, table.alloc()
        self.rng = RowRandom(seed, table, self.state_row)
        self.aggression = aggression
        self.think_every = think_every
        self.hold_actions = 0
        self.tick = 0
        self.enabled = True

    # the state's numbers: columns of its row
    tick = RowField("tick", "Updates counted (a decision every ``think_every``).")
    hold_actions = RowField("hold", "Grab strikes left in the hold.")
    enabled = RowField("enabled", "Whether it decides (False: FightInput.EMPTY every update).", bool)

    def seat(self, table) -> None:
        """Move the state onto a new row of ``table`` (its Fight's ``ai_rows``: the Fight
        seats each AI it runs), its values copied; nothing when it is there already."""
        if table is self.state_table:
            return
        old, r = self.state_table, self.state_row
        row = table.alloc()
        for name in ("mt", "has_gauss", "gauss", "tick", "hold", "enabled", "sid"):
            getattr(table, name)[row] = getattr(old, name)[r]
        self.state_table, self.state_row = table, row
        self.rng.rebind(table, row)

    def save_state(self) -> tuple:
        """What the next updates read: the random generator's state (version 3, its 625
        words as 2,500 bytes, the gauss value), the tick, the hold's strikes left, whether
        it is on (a snapshot file's ``ais`` row)."""
        t, r = self.state_table, self.state_row
        key, rng = self.saved_rng
        now = self.rng.state_key()
        if key != now:                        # (the generator's state copied out again only when it changed)
            gauss = float(t.gauss[r]) if t.has_gauss[r] else None
            rng = (3, t.mt[r].tobytes(), gauss)
            self.saved_rng = (now, rng)
        return (rng, t.m_tick[r], t.m_hold[r], t.m_enabled[r])

    # (the generator's state's key, its state as save_state gives it): one copy per state
    saved_rng: tuple = (None, None)

    def config(self) -> dict:
        """Its settings as plain data (Game.config)."""
        return {"kind": "FighterAI", "me": self.me, "opponent": self.opponent, "aggression": self.aggression,
                "think_every": self.think_every}

    def config_key(self) -> tuple:
        """What ``config`` is made of, as it is (Fight.config_key: equal keys, equal configs)."""
        return (FighterAI, self.me, self.opponent, self.aggression, self.think_every)

    def state_fits(self, state) -> str | None:
        """Why ``state`` (a ``save_state``, perhaps from a file) cannot be loaded, or None."""
        from scuffle.game.runtime.snapfile import _Refused, need_random_state
        if state.__class__ is AIRow:
            return None
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

    def load_state(self, state) -> None:
        """Put back a ``save_state``, or an ``AIRow`` of a Game's own snapshot (Game.restore
        loads the AI table's saved block first: nothing is left to do when the row is this
        AI's row of that table; else the saved row's values are copied in)."""
        t, r = self.state_table, self.state_row
        if state.__class__ is AIRow:
            saved, row = state
            if row == r and saved.capacity == t.capacity and saved.block.nbytes == t.block.nbytes:
                return
            state = _row_state(saved, row)
        rng, tick, hold, on = state
        key, kept = self.saved_rng
        if not ((rng is kept or rng == kept) and key == self.rng.state_key()):     # (the generator holds it already)
            version, words, gauss = rng
            t.mt[r] = np.frombuffer(words, np.int32)
            t.has_gauss[r] = gauss is not None
            t.gauss[r] = 0.0 if gauss is None else gauss
            t.m_sid[r] = new_sid()
            self.saved_rng = (self.rng.state_key(), rng)
        t.m_tick[r], t.m_hold[r], t.m_enabled[r] = tick, hold, bool(on)

    def __call__(self, fight: Fight) -> None:
        """One update as a controller on a Fight: ``decide`` this update's input, then
        give it to the rules (``fight.apply``). Rejected: as ``decide``."""
        inp = self.decide(fight.game)
        if inp is not EMPTY:
            fight.apply(self.me, inp)

    def decide(self, game: Game) -> FightInput:
        """This update's input for the fighter, from the game's public state (the humans'
        Body and Combat, the fight's held-flag tests): the tick counted; every
        ``think_every`` updates a decision (see the class docstring), else
        FightInput.EMPTY. Deciding draws from the AI's own generator and counts its hold's
        strikes, so call it once per update (its state is saved with the Fight when it is
        one of the fight's controllers). Rejected: a fighter or opponent gone from the
        world (UnknownHuman for a name, KeyError for an entity), on every update, decision
        or not; a game without fight rules (ValueError)."""
        fight = game.fight
        t, r = self.state_table, self.state_row
        if not t.m_enabled[r]:
            return EMPTY
        if not isinstance(fight, Fight):
            raise ValueError("FighterAI.decide: the game has no fight rules (attach a Fight first)")
        tick = t.m_tick[r] + 1
        t.m_tick[r] = tick
        mine, theirs = self.me, self.opponent
        if tick % self.think_every:
            # no decision this update: the two only looked up (one gone raises), as the
            # decision's look-ups would
            game.entity(mine) if mine.__class__ is str else _entity(game, mine)
            game.entity(theirs) if theirs.__class__ is str else _entity(game, theirs)
            return EMPTY
        me_e = game.entity(mine) if isinstance(mine, str) else _entity(game, mine)
        op_e = game.entity(theirs) if isinstance(theirs, str) else _entity(game, theirs)
        me, op = game.component(me_e, Body), game.component(op_e, Body)
        c = game.component(me_e, Combat)
        state = c.state
        if state == _HOLDING:
            return self._hold(game, fight, me_e, c)
        if state != _FREE:
            return EMPTY
        # can_chain, then free: one read of the held flags (nothing below changes them)
        held = fight.held(me_e)
        if held & _RECOVERY and not held & _BUSY and self.rng.random() < 0.5:
            return _STRIKE
        if held & _NOT_FREE:
            return EMPTY
        # the ground offset to the opponent: the float64 differences numpy's would give
        ox, oy, _ = op.position.tolist()
        mx, my, _ = me.position.tolist()
        dx, dy = ox - mx, oy - my
        dist = detmath.hypot_s(dx, dy)
        if dist > ENGAGE_RANGE:
            return FightInput(move=(dx, dy), pace=_JOG if dist > RUN_RANGE else _WALK)
        if c.move_speed > 0.0:
            return FightInput(move=(dx, dy), speed=0.0)
        toward = theirs if isinstance(theirs, str) else game.name_of(op_e)
        if game.component(op_e, Combat).state in (_DOWN, _HELD) or self.rng.random() > self.aggression:
            return _replies(self, toward).face
        if self.rng.random() < 0.45:
            self.hold_actions = self.rng.randint(1, 3)
            return _replies(self, toward).grab
        return _replies(self, toward).strike

    def between_decisions(self, names: dict, humans: dict) -> int | None:
        """What ``decide`` counts this update when it would do nothing else, for a group of
        fights that counts the tick itself (game.fighters.fightupdates): 0 for a disabled AI
        (nothing counted), the tick to write when this update is one between decisions and
        both humans are found (``names``: the Game's name -> entity, ``humans``: its entity
        -> components, as ``decide``'s look-ups read them), else None (a decision, or
        ``decide`` would raise). Writes nothing. Kept beside ``decide``: the same rules."""
        t, r = self.state_table, self.state_row
        if not t.m_enabled[r]:
            return 0
        every = self.think_every
        if every.__class__ is not int or every < 1:
            return None                                 # (decide's own error)
        tick = t.m_tick[r] + 1
        if not tick % every:
            return None                                 # a decision this update
        for who in (self.me, self.opponent):            # decide's look-ups of the two (each raises when gone)
            if who.__class__ is str:
                ent = names.get(who)
                if ent is None or ent not in humans:
                    return None
            elif who.__class__ is not int or Body not in humans.get(who, ()):
                return None
        return tick

    # the answers that face the opponent, made once per opponent's name (Replies)
    replies: Replies

    def _hold(self, game: Game, fight: Fight, me_e: int, c: Combat) -> FightInput:
        """In a hold: a few grab strikes, then a throw (mostly) or a let-go. A grab strike
        counts when the rules will take it: the victim attached to the fighter and no
        grab strike before or in its window (the held flags)."""
        if self.hold_actions > 0:
            move = self.rng.choice(_HOLD_STRIKES)
            if game.component(c.partner, Body).attachment == me_e and not (fight.held(me_e) & _IN_WINDOW):
                self.hold_actions -= 1
            return _HOLD_STRIKE_INPUTS[move]
        if self.rng.random() < 0.8:
            return _THROW_INPUTS[self.rng.choice(_THROW_MOVES)]
        return _LET_GO


class Replies(NamedTuple):
    """A FighterAI's inputs that face its opponent (immutable FightInputs, made once per
    opponent's name): turn toward it, and that with a grab or a strike."""

    toward: str | None
    face: FightInput | None
    grab: FightInput | None
    strike: FightInput | None

    @classmethod
    def facing(cls, toward: str) -> Replies:
        """The three inputs facing ``toward`` (a human's name). Rejected: as FightInput."""
        return cls(toward, FightInput(face_toward=toward), FightInput(face_toward=toward, action=Action.GRAB),
                   FightInput(face_toward=toward, action=Action.STRIKE))


FighterAI.replies = Replies(None, None, None, None)        # none made yet


def _replies(ai: FighterAI, toward: str) -> Replies:
    """``ai``'s Replies facing ``toward``: kept, made again when the name is another."""
    got = ai.replies
    if got.toward != toward:
        got = ai.replies = Replies.facing(toward)
    return got


def _entity(game: Game, ent: int) -> int:
    """A human given by its entity: checked in the world (KeyError when gone, as esper)."""
    game.component(ent, Body)
    return ent
