"""The fight rules: grabs, strikes, throws and let-go between two humans, and locomotion.

``Fight(game)`` attaches the rules to a Game: an action callable run in the actions
phase and event handlers. Commands (``grab``, ``strike``, ``throw``, ``let_go``,
``move``, ``face``) are refused while a move in progress holds flags that forbid them:
input is gated by the human's held flags (record +0x08), which the tasks hold and
release ("Animation tasks", the held flags; "When a clip ends"). ``Fight.apply(who,
input)`` gives a fighter's ``FightInput`` of one update (fightinput.py: what a keyboard,
an AI, a scenario or a netplay peer asks for) to those commands in a fixed order.

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
``Game.add_human`` while the rules are attached starts in the fight idle (358), and so do
the humans already there when the rules are attached. A Game has one Fight: it is
``game.fight`` (a second ``Fight(game)`` is refused, FightAttached).

K.O. and rounds (ours; options, off by default so that scenarios run as before): with
``ko=True`` a fighter whose health reaches 0 is knocked out: it falls (the knockdown
285) and lies grounded (196) without getting up, and no hit lands on it. When at most
one fighter is left standing the round is over (``stats.rounds`` records the winner and
the K.O. update) and no hit lands at all; with ``rounds=True`` (which implies ``ko``)
the next round starts ``round_pause`` updates later, everyone back at their start with
full health.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from scuffle.anim.data.clip import EventType
from scuffle.anim.engine.callbacks import CallbackAction
from scuffle.anim.base.limits import INT32_MAX, MAX_COORD, MAX_HEALTH, check_int
from scuffle.anim.data.rangelist import NUM_ANIM_IDS
from scuffle.components import Combat, HumanRecord
from scuffle.game.fighters.fightdata import (ActionResult, FightEvent, FightEventKind, FightFlags,
                                             FightHandler, FightState, FightStats, GAITS, GRAB_SEARCH_FACTOR,
                                             LocomotionStop,
                                             MAX_MOVE_SPEED, MAX_ROUND_PAUSE, PACES, ROUND_PAUSE, Refusal,
                                             Who, reaction_for)
from scuffle.game.fighters.fightinput import Action, FightInput
from scuffle.game.fighters.airows import AIRow, ai_table
from scuffle.game.fighters.hits import Hits
from scuffle.game.fighters.fightstates import join as join_states
from scuffle.game.fighters.fightupdates import join as join_updates
from scuffle.game.fighters.fightcore import _DOWN, _PAIRED
# the fight rules' other public names, still importable from combat
from scuffle.game.fighters.fightdata import (BUSY, CHANGE_FADE, DOWN_UPDATES, GRAB_CONE_DEG, HIT_CONE_DEG,
                                             IMPULSE_DECAY, LOG_SIZE, MIN_SEPARATION, SLIDE_UPDATES,
                                             THROW_SPEED)
from scuffle.game.fighters.fightrows import (COLUMNS as _ROW_COLUMNS, END_WHATS as _END_WHATS, MAX_ROWS as _MAX_ROWS,
                                            FightersRead as _FightersRead, RANGES as _ROW_RANGES, log_of as _log_of,
                                            INT_ONLY as _INT_ONLY, log_rows as _log_rows, new_rows_kept as _new_rows_kept,
                                            rows_of as _rows_of, state_of as _state_of)
from scuffle.game.fighters.moves import Move
from scuffle.game.runtime.registry import (ActionSpec, Registry, TableSpec, is_int as _is_int,
                                           is_num as _is_num, is_vec2 as _vec2)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scuffle.anim.engine.stack import CharacterInstance
    from scuffle.components import Body
    from scuffle.game.runtime.world import Game

__all__ = ["Fight", "FightAttached", "FightFlags", "FightState", "LocomotionStop",
           "FightStats", "fight_of", "register_actions", "FIGHT_ACTIONS", "GAITS",
           "PACES", "GRAB_SEARCH_FACTOR", "reaction_for", "ROUND_PAUSE", "Refusal", "ActionResult", "FightEvent",
           "FightEventKind", "FightHandler", "Who", "BUSY", "CHANGE_FADE", "DOWN_UPDATES", "GRAB_CONE_DEG",
           "HIT_CONE_DEG", "IMPULSE_DECAY", "LOG_SIZE", "MIN_SEPARATION", "SLIDE_UPDATES", "THROW_SPEED"]


class FightAttached(ValueError):
    """A second ``Fight(game)`` on a Game that has its fight rules (``game.fight``)."""


class Fight(Hits):
    """The fight rules of one Game (see the module docstring).

    ``separate`` pushes free bodies apart below MIN_SEPARATION (ours: the spec has no
    collision between humans, so scenarios run without it; the demo turns it on).
    ``ko`` knocks out a fighter at 0 health and ends the round (ours; off by default:
    blows then go on landing at 0, as before). ``rounds`` (implies ``ko``) starts a new
    round ``round_pause`` updates after a K.O. ``locomotion_stop`` (LocomotionStop): what
    stops the locomotion's own velocity, "mask" (the original's, the default: a held bit of
    0x110c0880 on record +0x08, "Root motion" L376) or "top_task" (any newest task but the
    gait blend; docs/original.md, "The locomotion's velocity"). ``idle_existing`` (default
    True): the humans already in the Game with nothing on their stacks start the fight
    idle, as one added later does; False leaves them as they are (the scenario runner and
    the demo: their humans play what their commands say, from update 0). Rejected:
    ``round_pause`` < 1, another ``locomotion_stop`` (ValueError naming it); a Game that
    has its fight rules already (FightAttached, a ValueError: one Fight per Game, reached
    as ``game.fight``).

    Made of parts, one concern each: ``FightCore`` (fightcore.py:
    handlers, look-ups, answers, task helpers), ``Locomotion`` (locomotion.py),
    ``Pairs`` (pairs.py), ``Rounds`` (rounds.py), ``Hits`` (hits.py), each on the one
    before; here the state they share (``__init__``), a human joining, the end callbacks
    and the per-update rules that call on all of them.
    """

    # this class's per-update action may run with other fights' as one (game.fighters.
    # fightupdates): read on this class alone, so a subclass's rules run as it writes them
    quiet_rules = True

    def __init__(self, game: Game, *, separate: bool = False, ko: bool = False, rounds: bool = False,
                 round_pause: int = ROUND_PAUSE, locomotion_stop: str = LocomotionStop.MASK,
                 idle_existing: bool = True) -> None:
        check_int("round_pause", round_pause, 1, MAX_ROUND_PAUSE)
        try:
            stop = LocomotionStop(locomotion_stop)
        except ValueError:
            raise ValueError(f"Fight.locomotion_stop: {locomotion_stop!r} is not one of "
                             f"{', '.join(repr(k.value) for k in LocomotionStop)}") from None
        if getattr(game, "fight", None) is not None:
            # One set of rules per Game: a second would take over ``game.fight`` while the
            # hits went on reaching the first one's handlers.
            raise FightAttached("this Game has its fight rules already: use game.fight (or "
                                "scuffle.game.fighters.combat.fight_of(game)) to reach them")
        self.game = game
        self._lookup = game.component     # bound once: the look-ups of every rule (FightCore._component)
        self._live = game._alive
        self._entity = game.entity
        self.separate = separate          # keep free bodies apart (ours; the demo turns it on)
        self.rounds = bool(rounds)        # start a new round after a K.O. (ours)
        self.ko_rule = bool(ko) or self.rounds    # knock out at 0 health, end the round (ours)
        self.round_pause = int(round_pause)
        self.locomotion_stop = stop       # what stops the locomotion's own velocity (L376)
        self.ko: dict[int, int] = {}      # knocked-out entity -> the update of its K.O. (this round)
        self.ko_at: int | None = None     # the update the round ended (at most one left standing)
        self.starts: dict[int, tuple] = {}    # entity -> (position, heading, health) a round starts with
        self.player = game.player
        self.stats = FightStats()
        self.pending: list[tuple] = []
        # the end callbacks are data (anim.engine.callbacks): this Fight's kind, its handler registered
        # with the world's callbacks (several Fights on one world each get their own kind)
        taken = sum(1 for k in self.player.callbacks.kinds() if k.startswith("scuffle.fight."))
        self.end_kind = f"scuffle.fight.{taken}.end"
        # the handler keeps the held bits (a task with no move's end: nothing else), then
        # notes a move's end: the compiled flush does both itself (CallbackAction.KEEP_HELD,
        # the note called in release order once its kernel returns)
        self.player.callbacks.register(self.end_kind, self._end_noted, self._end_args_fit,
                                       action=CallbackAction.KEEP_HELD, note=self._end_note)
        self.controllers: list = []       # AI / input callables(fight) run each actions phase
        # the AIs' state (game.fighters.airows): a row each of this table, which lies in the
        # Game's snapshot arena (a snapshot and a restore copy it with the engine's tables)
        self.ai_rows = ai_table(2)
        self._seated: list = []           # the controllers as last seated (seat_controllers)
        # id(a saved copy of ai_rows) -> (that copy, the seating, its AIRows): save_state
        self._ctl_kept: dict = {}
        self._fighters_read = _FightersRead()   # the fighters' rows read last from a file (fightrows)
        self._ais_read: list = [None]         # the AIs' rows read last from a file (fightrows.state_of)
        self._rows_kept = _new_rows_kept()    # the counters and fighters' rows made last (fightrows.rows_of)
        # The host's handlers by kind (Fight.on): registrations, called in order.
        self.listeners: dict[FightEventKind, list[FightHandler]] = {}
        game.fight = self
        join_updates(game.ctx, self)      # (with the other fights' actions: fightupdates)
        join_states(game.ctx, self)       # (with the other fights' state functions: fightstates)
        game.ctx.on(EventType.HELD_OPEN, self._on_window)
        self._note_starts()
        for _, e in game.humans():
            self._normalise_state(e)
            self._warm(e)
            if idle_existing:
                self._idle_if_empty(e)

    def human_joined(self, ent: int) -> None:
        """A human added to the Game while the rules are attached (Game.add_human calls
        it): its start is noted (a new round puts it back there) and, with nothing on
        its stack, it starts the fight idle (358; the idle 388 in a set without it), no
        fade."""
        self._normalise_state(ent)
        self._note_starts()
        self._warm(ent)
        self._idle_if_empty(ent)

    def _idle_if_empty(self, ent: int) -> None:
        """With nothing on its stack or queue, the human starts the fight idle (358; the
        idle 388 in a set without it), no fade; a human playing something is left so."""
        inst = self.inst(ent)
        if inst.stack or inst.queue:
            return
        aset = inst.anim_set
        for idle in (Move.FIGHT_IDLE, Move.IDLE):
            if aset.has(idle):
                self._guarded(ent, self._start_idle, ent, idle)
                return

    # ---------------------------------------------------------------- snapshots
    def save_state(self, rows: Any = None) -> tuple:
        """What the next updates read (Game.snapshot): the K.O.s and the round's end, each
        human's start (its position as three numbers), the stats, the
        pending hits and windows, and the state of each controller that has one (an AI's
        random generator). The combat states and health are the combat table's rows, saved
        by the Game; the log of recent entries is saved apart (``save_log``: a record for the
        host, which no rule reads). ``rows``: the Game's saved copy of ``ai_rows``
        (anim.engine.snapshot.TableState): an AI seated there is given as its ``AIRow``
        (its state is in that copy), not copied out. Original: none (ours)."""
        st = self.stats
        kinds, rounds = self._kept_counts()
        ko = self._ko_kept
        if ko != self.ko:
            ko = self._ko_kept = dict(self.ko)
        stats = (st.grabs, st.strikes, st.throws, st.damage, st.refused, kinds, st.logged, st.round, rounds)
        if self.controllers != self._seated:
            self.seat_controllers()
        if rows is not None:
            # (a saved copy of ai_rows, a ring's slot, gives the same AIRows while the same
            # controllers are seated: made once per copy)
            kept = self._ctl_kept.get(id(rows))
            if kept is not None and kept[0] is rows and kept[1] is self._seated:
                ctl = kept[2]
            else:
                mine = self.ai_rows
                ctl = tuple([AIRow(rows, c.state_row) if getattr(c, "state_table", None) is mine else
                             c.save_state() if hasattr(c, "save_state") else None for c in self.controllers])
                if all(x.__class__ is AIRow for x in ctl):
                    if len(self._ctl_kept) >= 64:
                        self._ctl_kept.clear()
                    self._ctl_kept[id(rows)] = (rows, self._seated, ctl)
        else:
            ctl = tuple([c.save_state() if hasattr(c, "save_state") else None for c in self.controllers])
        return (ko, self.ko_at, self._starts_plain(), stats, tuple(self.pending), ctl)

    # The copies a state holds of the counts by kind, the finished rounds and the K.O.s, made
    # again only when they changed: the counts by kind change with ``logged`` (stats.record),
    # rounds are only appended; (``logged``, copy), (their number, copy), the copy. A state's
    # values are never written to, so states share them.
    _kinds_kept: tuple = (-1, None)
    _rounds_kept: tuple = (0, ())
    _ko_kept: dict = {}

    def _kept_counts(self) -> tuple:
        """(the counts by kind, the finished rounds) as a state holds them (see above)."""
        st = self.stats
        kk = self._kinds_kept
        if kk[0] != st.logged or kk[1] is None:
            kk = self._kinds_kept = (st.logged, dict(st.kinds))
        rk = self._rounds_kept
        if rk[0] != len(st.rounds):
            rk = self._rounds_kept = (len(st.rounds), tuple([dict(r) for r in st.rounds]))
        return kk[1], rk[1]

    def seat_controllers(self) -> None:
        """Give each controller that keeps its state as a row (a FighterAI: ``seat``) a row
        of ``ai_rows``, its state copied there (once: a controller seated stays)."""
        for c in self.controllers:
            seat = getattr(c, "seat", None)
            if seat is not None and getattr(c, "ROW_STATE", False):
                seat(self.ai_rows)
        self._seated = list(self.controllers)

    # the starts as plain numbers, kept with the map they were made of and its size: a
    # start is only ever added (a human joins) or the map replaced (load_state), so the
    # same map of the same size gives the same plain form, made once
    _starts_kept: tuple = (None, -1, None)

    def _starts_plain(self) -> dict:
        m, n, plain = self._starts_kept
        if m is not self.starts or n != len(m):
            plain = {e: (tuple(p.tolist()), h, hp) for e, (p, h, hp) in self.starts.items()}    # plain numbers
            self._starts_kept = (self.starts, len(self.starts), plain)
        return plain

    def config(self) -> dict:
        """The rules' settings as plain data (Game.config): the options and, per controller,
        its kind and settings (``config()`` when it has one)."""
        return {"separate": bool(self.separate), "ko": bool(self.ko_rule), "rounds": self.rounds,
                "round_pause": self.round_pause, "locomotion_stop": str(self.locomotion_stop.value),
                "end_kind": self.end_kind,
                "controllers": [c.config() if hasattr(c, "config") else f"{type(c).__module__}.{type(c).__qualname__}"
                                for c in self.controllers]}

    def config_key(self) -> tuple:
        """What ``config`` is made of, as it is (cheaper: equal keys give equal configs, the
        Game's configuration stamp compares them): the options and, per controller, its
        ``config_key()``, else its ``config()``, else its type."""
        return (self.separate, self.ko_rule, self.rounds, self.round_pause, self.locomotion_stop, self.end_kind,
                *[c.config_key() if hasattr(c, "config_key") else c.config() if hasattr(c, "config") else type(c)
                  for c in self.controllers])

    def _end_args_fit(self, args: tuple) -> str | None:
        """Why an end callback's arguments read from a snapshot file cannot be taken: ()
        (the held bits kept), or (a fighter's entity, a move's end, a serial)."""
        if args == ():
            return None
        if len(args) != 3 or not self._is_fighter(args[0]) or args[1] not in END_WHATS or \
                args[2].__class__ is not int or args[2] < 0:
            return "not a fight end (entity, what, serial)"
        return None

    def _is_fighter(self, ent) -> bool:
        """An entity a saved fight state may name: a human of the Game, or one gone from the
        world (the rules skip those: a human removed since)."""
        if ent.__class__ is not int or ent < 0:
            return False
        return ent in self.game.names.values() or not self._live(ent)

    def state_fits(self, state, trusted: bool = False) -> str | None:
        """Why ``state`` (a ``save_state``, perhaps read from a file) cannot be loaded here,
        or None when it can (Game.restore asks before it changes anything): its shape and
        controllers and, unless ``trusted`` (a snapshot this Game took itself), the
        entities it names (the Game's humans), the moves (anim ids), the numbers (finite,
        in range), the log's and the controllers' states."""
        if not (isinstance(state, tuple) and len(state) == 6 and isinstance(state[5], tuple)):
            return "not a fight state"
        ko, ko_at, starts, stats, pending, ctl = state
        if len(ctl) != len(self.controllers):
            return f"{len(ctl)} controllers saved, {len(self.controllers)} here"
        if trusted:
            return None
        if not isinstance(ko, dict) or any(not self._is_fighter(e) or u.__class__ is not int or u < 0
                                           for e, u in ko.items()):
            return "ko: not fighters' entities and updates"
        if not (ko_at is None or (ko_at.__class__ is int and ko_at >= 0)):
            return "ko_at: not an update"
        if not isinstance(starts, dict):
            return "starts: not a map"
        for e, v in starts.items():
            if not (self._is_fighter(e) and isinstance(v, tuple) and len(v) == 3 and isinstance(v[0], tuple)
                    and len(v[0]) == 3 and all(_finite(x, MAX_COORD) for x in v[0])
                    and _finite(v[1], MAX_COORD) and _finite(v[2], MAX_HEALTH) and v[2] > 0):
                return f"starts[{str(e)[:20]}]: not (position, heading, health)"
        if not (isinstance(stats, tuple) and len(stats) == 9):
            return "stats: not the fight's counts"
        grabs, strikes, throws, damage, refused, kinds, logged, round_, rounds = stats
        if any(x.__class__ is not int or x < 0 for x in (grabs, strikes, throws, refused, logged, round_)) or \
                not _finite(damage, 1e15):
            return "stats: counts that are not whole numbers >= 0"
        if not (isinstance(kinds, dict) and all(isinstance(k, str) and n.__class__ is int and n >= 0
                                                for k, n in kinds.items())):
            return "stats.kinds: not counts by kind"
        if not (isinstance(rounds, tuple) and all(isinstance(r, dict) and all(isinstance(k, str) for k in r)
                                                  for r in rounds)):
            return "stats.rounds: not the finished rounds"
        if not isinstance(pending, tuple):
            return "pending: not a list"
        for item in pending:
            if not (isinstance(item, tuple) and item and (
                    (item[0] == "window" and len(item) == 3 and self._is_fighter(item[1])
                     and item[2].__class__ is int and 0 <= item[2] < NUM_ANIM_IDS)
                    or (item[0] == "end" and self._end_args_fit(item[1:]) is None and len(item) == 4))):
                return "pending: not hit windows (window, entity, move) and ends (end, entity, what, serial)"
        for i, (c, v) in enumerate(zip(self.controllers, ctl)):
            fits = getattr(c, "state_fits", None)
            why = fits(v) if fits is not None else (None if v is None else "a state for a controller without one")
            if why is not None:
                return f"controllers[{i}]: {why}"
        return None

    def load_state(self, state: tuple) -> None:
        """Put back a ``save_state`` (Game.restore). Rejected (ValueError): a state that
        does not fit (``state_fits``: another number of controllers)."""
        # (a file's was checked in full when read; the shape and the controllers' count here)
        if state.__class__ is not tuple or len(state) != 6 or state[5].__class__ is not tuple or \
                len(state[5]) != len(self.controllers):
            raise ValueError(f"Fight.load_state: {self.state_fits(state, trusted=True)}")
        ko, self.ko_at, starts, stats, pending, ctl = state
        if (ko or self.ko) and not (ko is self._ko_kept and ko == self.ko):
            self.ko = dict(ko)                          # (the state's own map is never taken)
            self._ko_kept = ko
        self.pending = list(pending)
        if starts is not self._starts_plain():          # (the plain form of the starts held: kept)
            self.starts = {e: (np.array(p, dtype=np.float64), h, hp) for e, (p, h, hp) in starts.items()}
            self._starts_kept = (self.starts, len(self.starts), starts)
        st = self.stats
        logged = st.logged
        (st.grabs, st.strikes, st.throws, st.damage, st.refused, kinds, st.logged, st.round, rounds) = stats
        self._kinds_back(st, kinds, logged)
        if rounds is not self._rounds_kept[1] or len(st.rounds) != len(rounds):
            st.rounds[:] = [dict(r) for r in rounds]
            self._rounds_kept = (len(rounds), rounds)
        if ctl:
            kept = self._ctl_kept.get(id(ctl[0].table)) if ctl[0].__class__ is AIRow else None
            if kept is not None and kept[2] is ctl and kept[1] is self._seated and \
                    ctl[0].table.capacity == self.ai_rows.capacity:
                return                                  # every AI's row is back (Game.restore)
        for c, s in zip(self.controllers, ctl):
            # an AI's row of the Game's own snapshot is back already (Game.restore puts the
            # saved ai_rows back first), unless the AI moved to another row since
            if s is not None and not (s.__class__ is AIRow and getattr(c, "state_row", -1) == s.row and
                                      c.state_table is self.ai_rows and s.table.capacity == self.ai_rows.capacity):
                c.load_state(s)

    def _kinds_back(self, st: Any, kinds: dict, logged: int) -> None:
        """The counts by kind of a state (``kinds``, never taken) put back into ``st.kinds``,
        unless they are held already (``kinds`` is the copy kept at the same count, or the
        counts are equal); ``logged``: the count before the load. The object kept for
        them (``_kinds_kept``, what fightrows.rows_of compares by identity) is the copy
        held when that copy equals ``kinds`` in values, order and type at the same count."""
        kept_at, held = self._kinds_kept
        same_count = kept_at == st.logged
        if not (held is kinds and same_count and logged == st.logged) and dict.__eq__(st.kinds, kinds) is not True:
            st.kinds.clear()
            dict.update(st.kinds, kinds)                # (a Counter's own update adds, and in Python)
        if held is not None and held is not kinds and same_count and dict.__eq__(held, kinds) is True and \
                list(held) == list(kinds) and set(map(type, held.values())) <= _INT_ONLY:
            kinds = held
        self._kinds_kept = (st.logged, kinds)

    # ---------------------------------------------------------------- the file's rows
    # A snapshot file carries the state as the tables of game.fighters.fightrows: their
    # columns, what a row may hold, and the conversions both ways (snapfile calls these).
    ROW_COLUMNS = _ROW_COLUMNS
    ROW_RANGES = _ROW_RANGES
    END_WHATS = _END_WHATS              # a pending end's move by its code (a file's row, the checksum)

    def rows_of(self, state: tuple) -> tuple[dict, dict]:
        """A ``save_state`` as the file's tables and counters (fightrows.rows_of)."""
        return _rows_of(state, self.controllers, self._rows_kept)

    def state_of(self, cols: dict, counters: Any) -> tuple:
        """A file's checked rows and counters as a ``save_state`` of this Fight
        (fightrows.state_of). Rejected: fightrows.RowsRefused naming the field."""
        return _state_of(self, cols, counters)

    def log_rows(self, saved: tuple) -> tuple[int, np.ndarray, list]:
        """A ``save_log`` as the file's log table: (rows, block, counters)."""
        block, counters = _log_rows(saved)
        return saved[5], block, counters

    def log_of(self, rows: Any, counters: Any) -> tuple:
        """A file's checked log rows and counters as a ``load_log`` form (fightrows.log_of)."""
        return _log_of(rows, counters)

    def row_limits(self, name: str) -> tuple[int, int]:
        """The rows a file's fight table ``name`` may have here (the log: at most this log's
        ``maxlen``)."""
        if name == "log":
            return 1, self.stats.log.maxlen
        try:
            return 1, _MAX_ROWS[name]
        except (KeyError, TypeError):
            raise KeyError(f"no fight table {name!r} (the tables: log, {', '.join(sorted(_MAX_ROWS))})") from None

    def save_log(self) -> tuple:
        """The log of recent entries (``stats.log``, at most LOG_SIZE rows: fightlog.FightLog),
        saved beside the state (Game.snapshot) and put back with it, but out of the state's
        checksum: it records what happened for the host and the demo's captions, and no rule
        reads it. The same object while nothing was logged since."""
        return self.stats.log.save()

    def load_log(self, log: tuple) -> None:
        """Put back a ``save_log``, or a snapshot file's checked rows
        (game.fighters.fightrows.log_of) (Game.restore)."""
        if log[0] == "file":
            self.stats.log.load_rows(*log[1:])
        else:
            self.stats.log.load(log)

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

    def _update(self, ctx) -> None:
        """The actions phase: resolve this update's windows and ends, run the controllers
        (they set intents; the state update turns them into velocities). With ``rounds``,
        the update ``round_pause`` after a K.O. first starts the next round."""
        if self.rounds and self.ko_at is not None and ctx.update - self.ko_at >= self.round_pause:
            self._new_round()
        self._partners_gone()
        pending = self.pending
        if pending:                                   # else the empty list stays (no new one per update)
            self.pending = []
        for item in pending:
            if not self._alive(item[1]):             # its human left the world
                continue
            self._guarded(item[1], self._hit if item[0] == "window" else self._on_end, *item[1:])
        if self.controllers != self._seated:
            self.seat_controllers()
        for ctl in self._seated:                      # (a copy of the list: a controller may change it)
            ctl(self)
        ko, down = self.ko, FightState.DOWN
        ct: Any = None                                # the combat table of the views cv (CombatViews)
        cv: Any = None
        texts: Any = None
        for e, mine in self._parts():
            c = mine[Combat]
            t, r = c._table, c._row                   # the state read from its column (CombatTable.views)
            if t is not ct:
                ct, cv, texts = t, t.row_views or t.views(), t.texts
            if cv.gen[r] != c._gen:
                c.state                               # a stale view: raises (StaleHandle)
            if texts[cv.state[r]] != down:            # only a human down has anything to count
                continue
            rec = mine[HumanRecord]
            left = cv.down_left[r]
            if left > 0 and e not in ko and not (rec.flags & _PAIRED):
                left -= 1
                cv.down_left[r] = left                # c.down_left -= 1, in the row
                if left == 0:
                    self._guarded(e, self._get_up, e)
                    ct = None                         # (the rule may have replaced the columns)
                    if c.state != down:
                        continue
                    left = c.down_left
            if not (rec.flags & _DOWN) and left == 0:
                c.state = FightState.FREE
        if self.separate:
            self._separate()

    def apply(self, who: Who, inp: FightInput) -> ActionResult | None:
        """Give one fighter's input of this update to the rules: its locomotion
        (``move``), then its facing (``face``), then its action (``grab``, ``strike``,
        ``throw``, ``let_go``), each gated as that command is. Returns the last part's
        answer (None for FightInput.EMPTY). Rejected: what those commands reject (an
        unknown human: UnknownHuman), and an ``inp`` that is not a FightInput (TypeError)."""
        if inp.__class__ is not FightInput:
            raise TypeError(f"Fight.apply: {inp!r} is not a FightInput")
        result = None
        if inp.move is not None:
            result = self.move(who, inp.move, inp.speed, pace=inp.pace)
        if inp.face_heading is not None or inp.face_toward is not None:
            result = self.face(who, inp.face_heading, inp.face_toward)
        action = inp.action
        if action == Action.GRAB:
            result = self.grab(who)
        elif action == Action.STRIKE:
            result = self.strike(who, inp.move_id)
        elif action == Action.THROW:
            result = self.throw(who, inp.move_id)
        elif action == Action.LET_GO:
            result = self.let_go(who)
        return result

    if TYPE_CHECKING:
        # The public commands and look-ups as Fight's own, for a host's type checker: its
        # errors then name "strike" of "Fight", not the part that implements it. Never run.
        def grab(self, who: Who) -> ActionResult:
            return super().grab(who)

        def strike(self, who: Who, move: int | str | None = None) -> ActionResult:
            return super().strike(who, move)

        def throw(self, who: Who, move: int | str | None = None) -> ActionResult:
            return super().throw(who, move)

        def let_go(self, who: Who) -> ActionResult:
            return super().let_go(who)

        def move(self, who: Who, direction: Sequence[float] = (0.0, 1.0), speed: float | None = None, *,
                 pace: str | int | None = None, gait: str | int | None = None) -> ActionResult:
            return super().move(who, direction, speed, pace=pace, gait=gait)

        def face(self, who: Who, heading: float | None = None, toward: Who | None = None) -> ActionResult:
            return super().face(who, heading, toward)

        def combat(self, who: Who) -> Combat:
            return super().combat(who)

        def body(self, who: Who) -> Body:
            return super().body(who)

        def inst(self, who: Who) -> CharacterInstance:
            return super().inst(who)

        def held(self, who: Who) -> int:
            return super().held(who)

        def flags(self, who: Who) -> int:
            return super().flags(who)

        def free(self, who: Who) -> bool:
            return super().free(who)

        def can_chain(self, who: Who) -> bool:
            return super().can_chain(who)

        def gait_speeds(self, who: Who) -> tuple[float, ...]:
            return super().gait_speeds(who)

        def on(self, kind: FightEventKind | str, handler: FightHandler) -> FightHandler:
            return super().on(kind, handler)

        def on_hit(self, handler: FightHandler) -> FightHandler:
            return super().on_hit(handler)

        def on_ko(self, handler: FightHandler) -> FightHandler:
            return super().on_ko(handler)

        def on_round(self, handler: FightHandler) -> FightHandler:
            return super().on_round(handler)


# The moves' ends an end callback notes (FightCore._ended; Fight._on_end acts on them).
END_WHATS = frozenset(_END_WHATS)


def _finite(v, bound: float) -> bool:
    return v.__class__ in (int, float) and math.isfinite(v) and abs(v) <= bound


def fight_of(game: Game) -> Fight:
    """The game's fight rules, attached on first use (the humans already there left as
    they are: a scenario's play what its commands say)."""
    f = getattr(game, "fight", None)
    return cast(Fight, f) if f is not None else Fight(game, idle_existing=False)


def _fight_table(game, values: dict) -> None:
    """A scenario's ``[fight]`` table: the fight rules attached with its options (its
    humans play what its commands say: none is started idle)."""
    Fight(game, idle_existing=False, **values)


# The ``[fight]`` table's keys: Fight's keyword options (docs/scenarios.md, "[fight]").
FIGHT_TABLE = TableSpec({"separate": lambda v: isinstance(v, bool), "ko": lambda v: isinstance(v, bool),
                         "rounds": lambda v: isinstance(v, bool),
                         "round_pause": lambda v: _is_int(v) and 1 <= v <= MAX_ROUND_PAUSE,
                         "locomotion_stop": lambda v: v in tuple(LocomotionStop)}, _fight_table)


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


def _apply(game, cmd, inp: FightInput):
    """A scenario command as a FightInput of one part, given to ``Fight.apply``."""
    return fight_of(game).apply(cmd.human, inp)


def _move_input(extra: dict) -> FightInput:
    """A scenario's move: its direction (default north) and its pace, else its speed (a
    pace given wins, as in ``Fight.move``)."""
    d = extra.get("direction", [0.0, 1.0])
    pace = extra.get("pace")
    return FightInput(move=(d[0], d[1]), speed=None if pace is not None else extra.get("speed"), pace=pace)


def _face(game, cmd):
    """A scenario's face: its heading or the human it turns toward; with neither, the
    bare command (accepted, or refused while busy, and nothing turned)."""
    heading, toward = cmd.extra.get("heading"), cmd.extra.get("toward")
    if heading is None and toward is None:
        return fight_of(game).face(cmd.human)
    return _apply(game, cmd, FightInput(face_heading=heading, face_toward=toward))


# A scenario's fight commands: each is the FightInput of one part, applied by Fight.apply.
FIGHT_ACTIONS: dict[str, ActionSpec] = {
    "grab": ActionSpec({}, lambda game, cmd: _apply(game, cmd, FightInput(action=Action.GRAB))),
    "strike": ActionSpec({"move": _is_move},
                         lambda game, cmd: _apply(game, cmd, FightInput(action=Action.STRIKE,
                                                                        move_id=cmd.extra.get("move"))),
                         frozenset({"move"})),
    "throw": ActionSpec({"move": _is_move},
                        lambda game, cmd: _apply(game, cmd, FightInput(action=Action.THROW,
                                                                       move_id=cmd.extra.get("move"))),
                        frozenset({"move"})),
    "let_go": ActionSpec({}, lambda game, cmd: _apply(game, cmd, FightInput(action=Action.LET_GO))),
    "move": ActionSpec({"direction": lambda v: _vec2(v) and all(abs(x) <= MAX_COORD for x in v),
                        "speed": lambda v: _is_num(v) and 0 <= v <= MAX_MOVE_SPEED,
                        "pace": lambda v: v in PACES},
                       lambda game, cmd: _apply(game, cmd, _move_input(cmd.extra))),
    "face": ActionSpec({"heading": lambda v: _is_num(v) and abs(v) <= MAX_COORD, "toward": lambda v: isinstance(v, str)},
                       _face),
}
