"""The fight rules' common ground: the host's handlers, look-ups, answers and tasks.

``FightCore`` is the base of ``scuffle.game.fighters.combat.Fight``: the host's event
handlers (``on``, ``on_hit``, ``on_ko``, ``on_round``), the look-ups by name or entity
(``combat``, ``body``, ``held``, ``inst``, ``free``, ``can_chain``), the answers
(``ActionResult``: accepted, refused and why), the fight log, the task helpers every
move uses (a loop, a clip into the fight idle, a change under the fight's fade, the
pool's room) and the end callbacks as data (``_begin`` / ``_ended``). The state it reads
is set by ``Fight.__init__``. Ours: the spec has no fight rules, only the tasks and
held flags they gate on ("Animation tasks", "Paired tasks").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from scuffle.anim.engine.callbacks import Callback
from scuffle.anim.playback.recipe import Arg, ClipStep, Command, LoopStep, Place, Recipe
from scuffle.anim.engine.stack import AnimLimitError, CharacterInstance
from scuffle.anim.playback.player import Player
from scuffle.anim.playback.tasks import HeldFlags, Task
from scuffle.components import Animator, Body, Combat, HumanRecord
from scuffle.game.fighters.fightdata import (FightFlags, BUSY, FightState, Who, Refusal, ActionResult,
                                             FightEventKind, FightEvent, FightHandler, CHANGE_FADE,
                                             FightStats)

if TYPE_CHECKING:
    from scuffle.game.runtime.world import Game


__all__ = ["FightCore", "keep_held"]

# The flag tests of every update as plain ints (an int & IntFlag builds a flag object in Python).
_NOT_FREE = int(BUSY | FightFlags.RECOVERY)
_BUSY = int(BUSY)
_RECOVERY = int(FightFlags.RECOVERY)
_PAIRED = int(FightFlags.PAIRED)
_DOWN = int(FightFlags.DOWN)


# The prepared commands of the fight's changes to a clip handing over to a loop
# (FightCore._clip_loop): one per (clip held bits, loop held bits, fade), kept on the
# Player (fight_commands: a Command keeps what it found per set with the Player, so one
# shared across Games would keep a closed Game's Player alive). CLIP_LOOP_KEYS: those the
# rules use, made ready for a human's set when it joins (Fight._warm).
CLIP_LOOP_KEYS = ((int(FightFlags.WINDUP), 0, CHANGE_FADE), (int(FightFlags.PAIRED), 0, CHANGE_FADE),
                  (int(FightFlags.STAGGER), 0, 0.05),
                  (int(FightFlags.DOWN), int(FightFlags.DOWN), 0.0), (int(FightFlags.DOWN), int(FightFlags.DOWN), 0.05),
                  (int(FightFlags.DOWN), 0, CHANGE_FADE), (0, 0, 0.0), (0, 0, CHANGE_FADE),
                  (int(HeldFlags.START_CLIP_2), 0, CHANGE_FADE))     # the walk stop (locomotion.WALK_STOP_HELD)


def fight_commands(player) -> dict:
    """The fight rules' prepared Commands, kept on the Player they run on: one set of
    templates per anim set for every Fight of its Game (a Command learns each id of a set:
    kept per Fight, the 100 pairs of 10,000 humans held 42 MB of them), freed with the
    Player (a Command's templates refer to it: a cycle the collector frees)."""
    cmds = player.__dict__.get("_fight_commands")
    if cmds is None:
        cmds = player._fight_commands = {}
    return cmds


def keep_held(inst) -> None:
    """The end hook of every task the fight rules make (the handler of their end callbacks,
    which are data: ``Callback(fight.end_kind, args)``, see ``FightCore._end_noted``).

    The original's release clears every held bit the task still holds, with no test of
    other tasks ("When a clip ends" L314, ``PlayerOptions.held_release``), and then calls
    the end callback with the human, "the hook the combat code chains on" ("Animation
    tasks" L237). The fight rules (ours) read a flag as "a live task of the move holds
    it": a knockdown clip hands over to the grounded loop, both holding DOWN; a hold
    loop gives way under a change to a strike that holds PAIRED too. So their hook sets
    again, on the human, the bits the tasks still live on its stack hold. With Coney's
    release (``held_release="coney"``) it finds them set already.
    """
    held = Player.held_on_stack(inst)
    if held:
        inst.record.flags |= held


class FightCore:
    """The fight rules' common ground (see the module docstring)."""

    game: Game
    separate: bool                    # keep free bodies apart (ours)
    rounds: bool                      # start a new round after a K.O. (ours)
    ko_rule: bool                     # knock out at 0 health, end the round (ours)
    round_pause: int
    ko: dict[int, int]                # knocked-out entity -> the update of its K.O. (this round)
    ko_at: int | None                 # the update the round ended
    starts: dict[int, tuple]          # entity -> (position, heading, health) a round starts with
    player: Any
    _lookup: Any                      # Game.component, bound (Fight.__init__)
    _live: Any                        # Game._alive, bound (Fight.__init__)
    _entity: Any                      # Game.entity, bound (Fight.__init__)
    stats: FightStats
    pending: list[tuple]
    end_kind: str
    controllers: list                 # AI / input callables(fight) run each actions phase
    listeners: dict[FightEventKind, list[FightHandler]]
    # Where fight events go instead of the handlers (None: to the handlers at once). A
    # rollback session (scuffle.net) sets it to hold each update's events until the
    # update's inputs are confirmed, so a handler hears every event once, as it finally went.
    event_sink: Callable[[FightEvent], None] | None = None

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
            sink = self.event_sink
            if sink is not None:
                sink(ev)
                return
            for h in list(handlers):
                h(ev)

    def _start_idle(self, ent: int, idle: int) -> None:
        self._require(1)
        self._change(ent, self._loop(ent, idle), 0.0)

    def _normalise_state(self, ent: int) -> None:
        """Combat.state as a FightState (the component's default is the plain 'free')."""
        c = self.combat(ent)
        if not isinstance(c.state, FightState):
            c.state = FightState(c.state)

    def _ent(self, name_or_ent: Who) -> int:
        """The entity of a human given by name or entity. Rejected: UnknownHuman for a name
        or entity that is no human's of the game (anything else given among them)."""
        if isinstance(name_or_ent, str):
            return self._entity(name_or_ent)
        game = self._lookup.__self__
        try:
            known = not isinstance(name_or_ent, bool) and name_or_ent in game._entities
        except TypeError:                           # unhashable
            known = False
        if not known:
            raise game._unknown_human(name_or_ent)
        return name_or_ent

    def _name(self, ent: int) -> str:
        for n, e in self.game.names.items():
            if e == ent:
                return n
        raise self.game._unknown_human(ent)

    def _who(self, who: Who) -> str:
        """The name of a human given by name or entity (a name is checked, then is its own
        answer: no scan of the world's names). Rejected: as ``_ent`` and ``_name``."""
        ent = self._ent(who)
        return who if isinstance(who, str) else self._name(ent)

    def _alive(self, ent: int) -> bool:
        return ent >= 0 and self._live(ent)

    def _component(self, ent: int, ctype: type) -> Any:
        """One component of a human's entity: ``Game.component``, bound once (``_lookup``,
        set by ``Fight.__init__``: no esper world switch, no look-up of the game's class
        per call). Rejected: an entity without it (KeyError, as esper)."""
        return self._lookup(ent, ctype)

    def _components(self) -> dict:
        """The game's entity -> {component type: component} (``Game._entities``, read at
        each call: a world made anew is bound again): the per-update loops read a human's
        components from it with no call per component (a missing one: KeyError, as
        ``_lookup``)."""
        return self._lookup.__self__._entities

    def _parts(self) -> tuple:
        """The game's humans as (entity, its components) in ``game.humans()``'s order, for
        the per-update loops: read again only when the world's humans or names changed
        (the crowd's and the names' versions, the world's dict of components), a change
        made in esper behind the Game's back seen first (``Game._see``, as ``humans()``
        does); the same tuple otherwise, with no list nor look-up made per update, and
        the same tuple again when it reads the same humans with the same components'
        dicts (another pair's human joined or left), so that what is kept by the tuple
        stays (FightStates' rows, which also ask whether the crowd was read again whole:
        the dicts are esper's own, read live, while the views' rows may have moved)."""
        game = self._lookup.__self__
        game._see()
        ents = game._entities
        key = (game.ctx.crowd.version, game.names.version)
        kept = self.__dict__.get("_parts_kept")
        if kept is None or kept[0] != key or kept[1] is not ents:
            was = kept[2] if kept is not None and kept[1] is ents else None
            humans = self.game.humans()
            get = ents.get
            if was is not None and len(was) == len(humans) and all(
                    e == p[0] and get(e) is p[1] for (_, e), p in zip(humans, was)):
                parts = was
            else:
                parts = tuple((e, ents[e]) for _, e in humans)
            kept = self._parts_kept = (key, ents, parts)
        return kept[2]

    # The look-ups below read the world's dict as ``_lookup`` (Game.component) does, without
    # its call: a name through Game.entity, an entity as it is (UnknownHuman when it is no
    # human's; a missing component: KeyError, as esper).
    def combat(self, who: Who) -> Combat:
        ent = who if who.__class__ is int else self._ent(who)
        try:
            return self._lookup.__self__._entities[ent][Combat]
        except KeyError:
            raise self._unknown(ent) from None

    def body(self, who: Who) -> Body:
        ent = who if who.__class__ is int else self._ent(who)
        try:
            return self._lookup.__self__._entities[ent][Body]
        except KeyError:
            raise self._unknown(ent) from None

    def held(self, who: Who) -> int:
        """The human's held flags (record +0x08, the trace's ``held``)."""
        ent = who if who.__class__ is int else self._ent(who)
        try:
            return self._lookup.__self__._entities[ent][HumanRecord].flags
        except KeyError:
            raise self._unknown(ent) from None

    def _unknown(self, ent: int) -> KeyError:
        """The error of a look-up of entity ``ent``: UnknownHuman when it is no human's of
        the game, else the KeyError of a component it lacks (as esper's)."""
        game = self._lookup.__self__
        if ent not in game._entities:
            return game._unknown_human(ent)
        return KeyError(f"entity {ent}: a component missing")

    flags = held                          # the older name

    def inst(self, who: Who) -> CharacterInstance:
        """The human's CharacterInstance. Rejected: a human not in the world (KeyError;
        UnknownHuman, a KeyError, for a name)."""
        ent = who if who.__class__ is int else self._ent(who)
        game = self._lookup.__self__
        ents = game._entities
        if ent not in ents:                      # not self._live(ent) (Game._alive), inline
            self.game.entity(self._name(ent))      # raises: UnknownHuman, or KeyError for no human's
        return ents[ent][Animator].instance

    def free(self, who: Who) -> bool:
        """No move in progress: none of the fight's held bits are set."""
        return not (self.flags(who) & _NOT_FREE)

    def can_chain(self, who: Who) -> bool:
        """In an attack's recovery (0x4 held, nothing busy): a chained strike may follow."""
        f = self.flags(who)
        return bool(f & _RECOVERY) and not (f & _BUSY)

    def _refuse(self, who: Who, action: str, reason: Refusal, detail: str, move: int = -1) -> ActionResult:
        """A refused command: counted, logged (update, human, "refused", what, reason) and
        answered with its reason. ``detail``: the why as a clause, ``{who}`` standing for
        the human's name ("{who} holds no one")."""
        name = self._who(who)
        detail = detail.replace("{who}", name)
        what = f"{action} {move}" if move >= 0 else action
        self.stats.refused += 1
        self.stats.record((self.game.ctx.update, name, "refused", what, reason.value))
        return ActionResult(action, name, self.game.ctx.update, reason, detail, move)

    def _accept(self, who: Who, action: str, move: int = -1) -> ActionResult:
        return ActionResult(action, self._who(who), self.game.ctx.update, None, "", move)

    def _why_busy(self, who: Who, action: str, move: int = -1) -> ActionResult:
        """The refusal of a command given while a move is in progress (the held flags)."""
        ent = self._ent(who)
        f = self.flags(ent)
        if ent in self.ko:
            return self._refuse(ent, action, Refusal.KNOCKED_OUT, "{who} is knocked out for this round", move)
        if f & FightFlags.DOWN:
            return self._refuse(ent, action, Refusal.DOWN, "{who} is down (knocked down, grounded or getting up)", move)
        names = ", ".join(fl.name or "" for fl in FightFlags if f & fl)
        return self._refuse(ent, action, Refusal.BUSY, f"{{who}} is in a move that holds {names or hex(f)}", move)

    def _anim(self, who: Who, move: int | str | None) -> int | None:
        """A move given as an anim id or a clip name (resolved through the human's set)."""
        if move is None or move.__class__ is not str:
            return None if move is None else int(move)
        return self.inst(who).anim_set.id_of(move)

    def _log(self, who, what: str, *extra) -> None:
        self.stats.record((self.game.ctx.update, self._who(who), what, *extra))

    def _loop(self, who, anim_id: int, held: int = 0, attacker=None) -> Task:
        inst = self.inst(who)
        if attacker is not None:
            a = self.inst(attacker)
            return self.player.loop(inst, anim_id, held=held, anim_set=a.anim_set, on_end=self._kept())
        return self.player.loop(inst, anim_id, held=held, on_end=self._kept())

    def _clip(self, who, anim_id: int, next_task: Task, held: int = 0, on_end=None, attacker=None,
              flags: int = 0) -> Task:
        inst = self.inst(who)
        hook = on_end if on_end is not None else self._kept()
        if attacker is not None:
            return self.player.paired(inst, self.inst(attacker), anim_id, next_task, held=held, on_end=hook,
                                      flags=flags)
        return self.player.clip(inst, anim_id, next_task, held=held, on_end=hook, flags=flags)

    def _change(self, who, task: Task, fade: float = CHANGE_FADE) -> None:
        self.player.change(self.inst(who), task, fade)

    def _clip_loop_command(self, held: int, loop_held: int, fade: float) -> Command:
        """The Command of ``_clip_loop`` for these held bits and fade: a change (fade
        ``fade``) to ClipStep(Arg(0), held, on_end=Arg(2)) then LoopStep(Arg(1), loop_held,
        on_end=Arg(3)); made on first use, kept on the Player (``fight_commands``)."""
        cmds = fight_commands(self.player)
        key = (held, loop_held, fade)
        cmd = cmds.get(key)
        if cmd is None:
            cmd = cmds[key] = Command(Recipe(Place.CHANGE, (
                ClipStep(Arg(0), held=held, on_end=Arg(2)), LoopStep(Arg(1), held=loop_held, on_end=Arg(3))),
                fade=fade))
        return cmd

    def _clip_loop(self, ent: int, clip: int, loop: int, *, held: int = 0, loop_held: int = 0, on_end=None,
                   fade: float = CHANGE_FADE) -> None:
        """A change under ``fade`` to the clip ``clip`` handing over to the loop ``loop``
        (the human's own set): ``self._change(ent, self._clip(ent, clip, self._loop(ent,
        loop, held=loop_held), held=held, on_end=on_end), fade)`` as one prepared command
        (anim.playback.recipe; the rows those calls leave, written directly when nothing can refuse,
        else through those very calls), its end callbacks as data (the loop's and, with
        ``on_end`` None, the clip's: ``_kept``). Rejected: as those calls (their errors;
        the pool checked by the caller)."""
        cmd = self._clip_loop_command(int(held), int(loop_held), fade)
        kept = self._kept()
        self.player.run(self.inst(ent), cmd, clip, loop, kept if on_end is None else on_end, kept)

    def _require(self, n: int) -> None:
        self.player.pool.require(n + 2)

    def _begin(self, who) -> None:
        """A new move starts: end callbacks of earlier moves no longer change the state."""
        self.combat(who).serial += 1

    def _ended(self, who, what: str) -> Callback:
        """An end callback for the current move, as data (it acts only if no move started
        since): the task's release notes ``("end", entity, what, serial)`` for this
        Fight's next actions phase."""
        ent = self._ent(who)
        return Callback(self.end_kind, (ent, what, self.combat(ent).serial))

    def _kept(self) -> Callback:
        """The end callback of a task with no move's end: the held bits kept (keep_held);
        one Callback (data, immutable) while ``end_kind`` is the same."""
        cb = self.__dict__.get("_kept_cb")
        if cb is None or cb.kind is not self.end_kind:
            cb = self._kept_cb = Callback(self.end_kind, ())
        return cb

    def _end_noted(self, inst, *move) -> None:
        """The handler of this Fight's end callbacks (``end_kind``): the held bits the live
        tasks hold set again (keep_held), then, for a move's end (``entity, what, serial``),
        the end noted for the next actions phase."""
        keep_held(inst)
        if move:
            self._end_note(*move)

    def _end_note(self, *move) -> None:
        """A move's end (``entity, what, serial``) noted for the next actions phase: the
        part of ``_end_noted`` after the held bits, which reads nothing of the world (the
        compiled flush keeps the bits and calls it: Callbacks.register's ``note``)."""
        self.pending.append(("end", *move))

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

