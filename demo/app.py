"""The demo's world and its pygame window.

``DemoSim`` is the simulation the window and the headless runner share: a Game with two
fighters ("p1", "p2") on the demo move set, facing each other 3 m apart, with the fight
rules attached (bodies kept apart, rounds: a K.O. ends the round, the next starts
``KO_UPDATES`` later). p2 is driven by a FighterAI; p1 by the keyboard, or by its own
FighterAI (another seed) in attract mode. Everything is seeded: the same seed gives
the same fight.

Record and replay: the controllers (keyboard, AI) act through ``CommandFight``, which
turns every fight call into a scenario ``Command`` applied with the scenario runner's
own ``apply_command``, first in the actions phase, exactly where ``scuffle run`` applies
a scenario's commands. ``DemoSim.scenario_text()`` writes them (with the fighters, their
set and the fight options) as a scenario, and ``scuffle run`` of it gives the demo's
trace byte for byte (docs/scenarios.md, "Recording the demo").

Rewind: after each update ``DemoSim`` keeps a snapshot of the whole simulation
(``Game.snapshot(outputs=True)``, reused in a ring) for the last ``REWIND_UPDATES`` (10 s);
``DemoSim.rewind(n)`` restores the one ``n`` updates back and drops the later ones, so
play goes on from there, and the recording and the trace hold the final timeline only.

``App`` is the window: a fixed-timestep loop (the simulation at a steady 30 Hz, the
picture at the display's rate, interpolated between the last two updates), with pause,
single step, slow motion (the simulation at 1/4 speed) and rewind (R held: the fight
runs backwards, one update per 1/30 s, up to 10 s; released, it plays on from there).
``App.run(max_frames=, frame_dt=)`` runs a bounded number of frames on a fixed clock
(scripts and tests).
"""
from __future__ import annotations

import io
import math
import warnings
import time
from collections import deque

import numpy as np
import pygame

from scuffle.components import FiredEvents
from scuffle.game.fighters import registry as fighters_registry
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import PACES, Fight, FightState
from scuffle.game.fighters.fightinput import Action, FightInput
from scuffle.game.fighters.moves import Move, THROWS
from scuffle.game.runtime.files import OutputFile, output_path
from scuffle.game.runtime.scenario import Command, apply_command
from scuffle.game.runtime.trace import trace_records, write_records
from scuffle.game.runtime.world import Game

from scuffle.demo import render

__all__ = ["DemoSim", "CommandFight", "KeyboardControl", "App", "DT", "AI_SETTINGS", "P1_SEED_OFFSET", "KO_UPDATES",
           "REWIND_UPDATES"]

DT = 1.0 / 30.0                  # one simulation update
SLOW_FACTOR = 0.25               # slow motion: the simulation at 1/4 speed
MAX_CATCH_UP = 5                 # updates run at most per rendered frame
START_DISTANCE = 3.0             # metres between the fighters at the start
P1_SEED_OFFSET = 1000            # p1's AI (attract mode) is seeded with seed + this
# FighterAI's constructor arguments for the demo (aggression, decision period).
AI_SETTINGS = {"aggression": 0.6, "think_every": 3}
RECENT_EVENTS = 8                # events kept per fighter for the HUD
BUFFER_UPDATES = 8               # a key press waits this long for the move in progress
KO_UPDATES = 120                 # a new round starts 4 s after a K.O. (the fight's round_pause)
SET_NAME = "demo"                # the scenario library the fighters' set comes from
REWIND_UPDATES = 300             # the rewind ring: the last 10 s of updates
COMMAND_CHUNK = 64               # the recorded commands are saved in shared chunks of this many


class KeyboardControl:
    """p1's keyboard: held movement keys and buffered one-shot actions.

    The window sets ``direction`` (world x, y), ``jog`` and pushes actions; the fight
    runs ``__call__`` in the actions phase of each update, so commands reach the rules
    at the same point in the update as the AI's. A pressed action waits up to
    ``BUFFER_UPDATES`` updates for the held flags to allow it.
    """

    def __init__(self, me: str = "p1", opponent: str = "p2"):
        self.me, self.opponent = me, opponent
        self.direction = (0.0, 0.0)
        self.jog = False
        self.pending: deque = deque()
        self.throw_cycle = 0

    def press(self, action: str, update: int) -> None:
        self.pending.append((action, update + BUFFER_UPDATES))

    def clear(self) -> None:
        self.direction = (0.0, 0.0)
        self.jog = False
        self.pending.clear()

    def _ready(self, fight: Fight, action: str) -> bool:
        c = fight.combat(self.me)
        if action in ("throw", "let_go"):
            return c.state == FightState.HOLDING and not (fight.flags(self.me) & 0x3)
        if action == "strike":
            if c.state == FightState.HOLDING:
                return not (fight.flags(self.me) & 0x3)
            return fight.free(self.me) or fight.can_chain(self.me)
        return fight.free(self.me)

    def _input(self, fight: Fight, action: str) -> FightInput:
        """The input of a ready action (the throw cycle moves on with each throw asked)."""
        if action == "strike":
            if fight.combat(self.me).state == FightState.HOLDING:
                move = Move.GRAB_PUNCH if self.throw_cycle % 2 else Move.GRAB_KNEE
                return FightInput(action=Action.STRIKE, move_id=int(move))
            return FightInput(action=Action.STRIKE)
        if action == "grab":
            return FightInput(action=Action.GRAB)
        if action == "throw":
            throws = sorted(THROWS)
            move = throws[self.throw_cycle % len(throws)]
            self.throw_cycle += 1
            return FightInput(action=Action.THROW, move_id=int(move))
        if action == "let_go":
            return FightInput(action=Action.LET_GO)
        if action == "face":
            return FightInput(face_toward=self.opponent)
        return FightInput.EMPTY

    def decide(self, fight: Fight) -> FightInput:
        """This update's input from the keys: the oldest buffered action the held flags
        allow now (one per update; actions older than ``BUFFER_UPDATES`` dropped), else
        the held movement keys' walk or jog (or the stop when they are let go)."""
        now = fight.game.ctx.update
        kept: deque = deque()
        while self.pending:
            action, until = self.pending.popleft()
            if until < now:
                continue
            if self._ready(fight, action):
                inp = self._input(fight, action)
                kept.extend(a for a in self.pending if a[0] != action)
                self.pending = kept
                return inp                  # one command per update
            kept.append((action, until))
        self.pending = kept
        return self._locomotion(fight)

    def __call__(self, fight: Fight) -> None:
        """As a controller: this update's input (``decide``) given to the rules."""
        inp = self.decide(fight)
        if inp is not FightInput.EMPTY:
            fight.apply(self.me, inp)

    def _locomotion(self, fight: Fight) -> FightInput:
        if not fight.free(self.me):
            return FightInput.EMPTY
        c = fight.combat(self.me)
        dx, dy = self.direction
        n = math.hypot(dx, dy)
        if n > 0.0:
            speed = fight.gait_speeds(self.me)[1 if self.jog else 0]
            d = np.array([dx / n, dy / n])
            if c.move_speed != speed or not np.allclose(c.move_dir[:2], d, atol=1e-6):
                return FightInput(move=(float(d[0]), float(d[1])), speed=speed)
        elif c.move_speed > 0.0:
            return FightInput(move=(0.0, 0.0), speed=0.0)
        return FightInput.EMPTY


class CommandFight:
    """The fight as the demo's controllers see it: lookups pass through to the Fight;
    each command (grab, strike, throw, let_go, move, face) becomes a scenario Command of
    this update, applied with ``apply_command`` and recorded (``DemoSim.command``).
    Returns what the rules return (False: refused)."""

    def __init__(self, sim: "DemoSim"):
        self._sim = sim

    def __getattr__(self, name):
        return getattr(self._sim.fight, name)

    def grab(self, who) -> bool:
        return self._sim.command(who, "grab")

    def strike(self, who, move: int | None = None) -> bool:
        return self._sim.command(who, "strike", move=None if move is None else int(move))

    def throw(self, who, move: int | None = None) -> bool:
        return self._sim.command(who, "throw", move=None if move is None else int(move))

    def let_go(self, who) -> bool:
        return self._sim.command(who, "let_go")

    def move(self, who, direction=(0.0, 1.0), speed: float | None = None, *, pace: str | int | None = None,
             gait: str | int | None = None):
        keys = {"direction": [float(direction[0]), float(direction[1])]}
        if gait is not None:                     # the older keyword
            warnings.warn("move(gait=...) is now move(pace=...)", DeprecationWarning, stacklevel=2)
            pace = gait if pace is None else pace
        if pace is not None:                     # a pace by name: the "pace" key of the move action
            keys["pace"] = pace if isinstance(pace, str) else PACES[int(pace)]
        elif speed is not None:
            keys["speed"] = float(speed)
        return self._sim.command(who, "move", **keys)

    def face(self, who, heading: float | None = None, toward=None) -> bool:
        return self._sim.command(who, "face", heading=None if heading is None else float(heading), toward=toward)

    def apply(self, who, inp: FightInput):
        """A FightInput as ``Fight.apply`` gives it (move, face, then the action), each part
        one recorded command (``FightInput.commands``). Returns the last part's answer
        (None: an empty input)."""
        result = None
        for action, keys in inp.commands():
            result = self._sim.command(who, action, **keys)
        return result


def _toml_value(v) -> str:
    """One TOML value (bool, int, float as its exact repr, string, list of these)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot record a non-finite number {v!r}")
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot record {v!r}")


class DemoSim:
    """Two fighters, the fight rules, the AI and the keyboard (see the module docstring).

    ``step()`` runs one 30 Hz update, collects each fighter's fired events for the HUD
    and, with ``trace`` (a path), writes the update's trace records (the pinned JSONL,
    as ``scuffle run --trace`` writes them). ``attract`` (settable) hands p1 to its own
    FighterAI. ``commands`` are every command applied so far (``scenario_text()``).

    ``rewind_depth`` (default ``REWIND_UPDATES``; 0: no rewind) is how many updates
    ``rewind()`` can go back: a snapshot of the whole simulation is kept after each
    update. With a trace and a ring, an update's records reach the file once the update
    can no longer be rewound (at the latest at ``close()``), so the file holds the final
    timeline only, streams (a FIFO, /dev/stdout) included.
    """

    names = ("p1", "p2")

    def __init__(self, seed: int = 1, attract: bool = False, health: float = 100.0,
                 ai_settings: dict | None = None, anim_set=None, trace=None, round_pause: int = KO_UPDATES,
                 rewind_depth: int = REWIND_UPDATES):
        if isinstance(rewind_depth, bool) or not isinstance(rewind_depth, int) or rewind_depth < 0:
            raise ValueError(f"DemoSim: rewind_depth {rewind_depth!r} must be a whole number of updates >= 0")
        self.registry = fighters_registry()
        if anim_set is None:
            anim_set = self.registry.libraries[SET_NAME]()
        self.seed = int(seed)
        self.anim_set = anim_set
        self.health0 = float(health)
        self.game = game = Game()
        half = START_DISTANCE / 2
        self.starts = {"p1": ((0.0, -half, 0.0), 0.0), "p2": ((0.0, half, 0.0), 180.0)}
        for name in self.names:
            pos, heading = self.starts[name]
            game.add_human(name, anim_set, position=pos, heading=heading, health=health)
        self.fight_options = {"separate": True, "rounds": True, "round_pause": int(round_pause)}
        # Not started idle here: the update-0 command does it, so the recording replays it.
        self.fight = Fight(game, idle_existing=False, **self.fight_options)
        self.control = CommandFight(self)
        self.commands: list[Command] = []
        self._chunks: list[tuple] = []           # the commands' frozen chunks (save_state)
        settings = dict(AI_SETTINGS, **(ai_settings or {}))
        self.ai_seeds = {"p1": self.seed + P1_SEED_OFFSET, "p2": self.seed}
        self.ai = {
            "p1": FighterAI("p1", "p2", seed=self.ai_seeds["p1"], **settings),
            "p2": FighterAI("p2", "p1", seed=self.ai_seeds["p2"], **settings),
        }
        self.keyboard = KeyboardControl("p1", "p2")
        self.attract = bool(attract)
        self._stop_p1 = False
        # First in the actions phase, where the scenario runner applies its commands.
        game.ctx.actions.insert(0, self._control)
        self.recent_events: dict[str, deque] = {n: deque(maxlen=RECENT_EVENTS) for n in self.names}
        self.paused = False
        self.slow = False
        self.trace_path = trace
        # written beside the file and renamed at close(): a run that fails leaves an old trace whole
        self._trace = OutputFile(trace, "trace") if trace is not None else None
        self.rewind_depth = rewind_depth
        self._ring: deque = deque()            # snapshots after updates ring[0].update .. self.update
        self._spare: list = []                 # given-up snapshots whose arrays a new one writes over
        self._pending: deque = deque()         # (update, trace text) not yet in the file (rewindable)
        if rewind_depth:
            self._ring.append(game.snapshot(outputs=True))

    # ------------------------------------------------------------ control
    def command(self, who: str, action: str | None = None, loop: int | None = None, **extra):
        """Apply one command now (this update's actions phase) through the scenario
        runner's ``apply_command`` and record it: a fight ``action`` with its extra keys
        (None values left out), or a ``loop`` of an anim id. Returns the action's result."""
        upd = self.game.ctx.update
        if loop is not None:
            cmd = Command(update=upd, human=who, kind="loop", ids=[int(loop)], index=len(self.commands))
        else:
            cmd = Command(update=upd, human=who, kind="action", action=action,
                          extra={k: v for k, v in extra.items() if v is not None}, index=len(self.commands))
        self.commands.append(cmd)
        return apply_command(self.game, cmd, self.registry.actions)

    def _control(self, ctx) -> None:
        """The actions phase's first action: on update 0 both fighters start the fight
        idle (358); then p1's controller, then p2's AI."""
        if ctx.update == 0:
            for name in self.names:
                self.command(name, loop=int(Move.FIGHT_IDLE))
        self._control_p1(self.control)
        self.ai["p2"](self.control)

    def _control_p1(self, fight) -> None:
        if self._stop_p1:
            self._stop_p1 = False
            if fight.combat("p1").move_speed > 0.0 and fight.free("p1"):
                fight.move("p1", (0.0, 0.0), 0.0)
        if self.attract:
            self.ai["p1"](fight)
        else:
            self.keyboard(fight)

    def set_attract(self, on: bool) -> None:
        """Hand p1 to its AI (True) or the keyboard; handing it to the AI drops the
        keyboard's input and stops p1's walk in the next update's actions phase."""
        if on and not self.attract:
            self.keyboard.clear()
            self._stop_p1 = True
        self.attract = bool(on)

    def controller_of(self, name: str) -> str:
        if name == "p1" and not self.attract:
            return "keyboard"
        return f"AI seed {self.ai_seeds[name]}"

    # ------------------------------------------------------------ snapshots
    def save_state(self) -> tuple:
        """The demo's own state, which Game.snapshot saves through the ``_control``
        action: the AIs' random generators, the keyboard's keys and buffered actions,
        attract mode, the commands recorded so far (each immutable) and the HUD's recent
        events."""
        kb = self.keyboard
        return (tuple(ai.save_state() for ai in self.ai.values()),
                (kb.direction, kb.jog, tuple(kb.pending), kb.throw_cycle),
                self.attract, self._stop_p1, self._frozen_commands(),
                {n: tuple(d) for n, d in self.recent_events.items()})

    def _frozen_commands(self) -> tuple:
        """The commands so far as (full chunks, the rest): tuples of ``COMMAND_CHUNK``
        commands, each made once and shared by every later snapshot, so a ring of 300
        snapshots of an hour's session holds the commands once, not 300 times."""
        cmds, chunks, size = self.commands, self._chunks, COMMAND_CHUNK
        k = len(chunks)
        if k and (len(cmds) < k * size or chunks[-1][-1] is not cmds[k * size - 1]):
            chunks.clear()                          # the list was changed by hand: freeze it again
            k = 0
        while len(cmds) >= (k + 1) * size:
            chunks.append(tuple(cmds[k * size:(k + 1) * size]))
            k += 1
        return tuple(chunks), tuple(cmds[k * size:])

    def load_state(self, state: tuple) -> None:
        """Put back a ``save_state`` (Game.restore): the commands recorded after it are
        gone, so ``scenario_text()`` records the fight as it now goes on."""
        ais, (direction, jog, pending, cycle), self.attract, self._stop_p1, commands, recent = state
        for ai, s in zip(self.ai.values(), ais):
            ai.load_state(s)
        kb = self.keyboard
        kb.direction, kb.jog, kb.pending, kb.throw_cycle = direction, jog, deque(pending), cycle
        chunks, rest = commands
        self.commands[:] = [c for chunk in chunks for c in chunk] + list(rest)
        self._chunks[:] = chunks
        for n, d in recent.items():
            self.recent_events[n] = deque(d, maxlen=RECENT_EVENTS)

    # ------------------------------------------------------------ running
    @property
    def update(self) -> int:
        return self.game.update

    @property
    def round(self) -> int:
        return self.fight.stats.round

    def step(self) -> None:
        """One 30 Hz update of the whole world (then its snapshot joins the rewind ring)."""
        game = self.game
        game.step()
        upd = game.update - 1
        for name in self.names:
            for fe in game.component(name, FiredEvents).events:
                ev = fe.event
                self.recent_events[name].append((upd, f"{fe.anim_id:4d} f{ev.frame:<3d} 0x{ev.type:02x} {ev.name}"))
        if not self.rewind_depth:
            if self._trace is not None:
                write_records(self._trace.fp, trace_records(game))
            return
        if self._trace is not None:
            buf = io.StringIO()
            write_records(buf, trace_records(game))
            self._pending.append((upd, buf.getvalue()))
        ring = self._ring
        reuse = None
        if len(ring) > self.rewind_depth:
            reuse = ring.popleft()
        elif self._spare:
            reuse = self._spare.pop()
        ring.append(game.snapshot(outputs=True, reuse=reuse))
        self._flush_trace(ring[0].update)

    def _flush_trace(self, before: int | None = None) -> None:
        """Write the held trace records of the updates before ``before`` (None: all)."""
        pending = self._pending
        while pending and (before is None or pending[0][0] < before):
            text = pending.popleft()[1]
            if self._trace is not None:
                self._trace.fp.write(text)

    @property
    def rewind_room(self) -> int:
        """How many updates ``rewind()`` can go back now (at most ``rewind_depth``)."""
        return max(0, len(self._ring) - 1)

    def rewind(self, updates: int = 1) -> int:
        """Go back ``updates`` updates (as far as the ring goes): restore the whole
        simulation as it was then (its last update's poses too, for the window), drop the
        later snapshots and their trace records, so play goes on from there and the
        recording (``scenario_text()``) and the trace hold the fight as it now goes.
        Returns how many updates it went back (0: nothing to rewind). Rejected
        (ValueError): ``updates`` not a whole number >= 0."""
        if isinstance(updates, bool) or not isinstance(updates, int) or updates < 0:
            raise ValueError(f"DemoSim.rewind: updates {updates!r} must be a whole number >= 0")
        n = min(int(updates), self.rewind_room)
        if n == 0:
            return 0
        ring = self._ring
        for _ in range(n):
            self._spare.append(ring.pop())
        self.game.restore(ring[-1])
        back = self.game.update
        while self._pending and self._pending[-1][0] >= back:
            self._pending.pop()
        return n

    def health(self) -> dict[str, float]:
        return {n: float(self.fight.combat(n).health) for n in self.names}

    def rounds(self) -> list[dict]:
        """The finished rounds: ``round``, ``winner`` (None: a double K.O.), ``loser``, ``ko_update``."""
        return [dict(r) for r in self.fight.stats.rounds]

    def scenario_text(self) -> str:
        """The session so far as a scenario (the pinned TOML; docs/scenarios.md): the
        fight options, the set, both fighters and every command at its update.
        ``scuffle run`` of it reproduces this run's trace byte for byte."""
        mode = "attract mode" if self.attract else "keyboard / AI"
        out = [f"# Recorded by scuffle demo (seed {self.seed}, {mode}).",
               "# Replay: scuffle run THIS.toml --trace T.jsonl (the demo's --trace, byte for byte).",
               f"updates = {self.game.update}", "", "[fight]"]
        out += [f"{k} = {_toml_value(v)}" for k, v in self.fight_options.items()]
        out += ["", f"[sets.{SET_NAME}]", f"library = {_toml_value(SET_NAME)}"]
        for name in self.names:
            pos, heading = self.starts[name]
            out += ["", "[[humans]]", f"name = {_toml_value(name)}", f"set = {_toml_value(SET_NAME)}",
                    f"position = {_toml_value([float(v) for v in pos])}", f"heading = {_toml_value(float(heading))}",
                    f"health = {_toml_value(self.health0)}"]
        for cmd in self.commands:
            if cmd.update >= self.game.update:          # an update that did not finish (an error)
                continue
            out += ["", "[[commands]]", f"update = {cmd.update}", f"human = {_toml_value(cmd.human)}"]
            if cmd.kind == "loop":
                out.append(f"loop = {cmd.ids[0]}")
            else:
                out.append(f"action = {_toml_value(cmd.action)}")
                out += [f"{k} = {_toml_value(v)}" for k, v in cmd.extra.items()]
        return "\n".join(out) + "\n"

    def save_scenario(self, path) -> None:
        """Write ``scenario_text()`` to ``path`` (UTF-8; whole or not at all: OutputFile).
        Rejected: OutputError naming the file (a full disk, a folder not writable)."""
        with OutputFile(path, "record") as out:
            out.write(self.scenario_text())

    def close(self, keep: bool = True) -> None:
        """Close the world and the trace: the trace file is published (``keep``), or
        dropped and an old file of that name left whole (``keep=False``: a failed run)."""
        try:
            if self._trace is not None:
                trace = self._trace
                try:
                    if keep:
                        self._flush_trace()
                except BaseException:
                    self._trace = None
                    trace.close(keep=False)
                    raise
                self._trace = None
                trace.close(keep=keep)
        finally:
            self._ring.clear()
            self._spare.clear()
            self._pending.clear()
            self.game.close()


class App:
    """The pygame window (see the module docstring)."""

    def __init__(self, seed: int = 1, attract: bool = False, size=(1280, 720), fps: int = 60,
                 screen: pygame.Surface | None = None, screenshot=None, screenshot_at: int | None = None,
                 record=None, trace=None, health: float = 100.0, sim=None):
        self.seed = int(seed)
        # ``sim``: another simulation to show (a scenario's: demo.playback.ScenarioSim)
        self.sim = sim if sim is not None else DemoSim(seed=seed, attract=attract, trace=trace, health=health)
        self.record = record                      # write the session as a scenario here on exit
        self.held: set[int] = set()               # keys held down (from KEYDOWN / KEYUP events)
        self._loop: dict | None = None            # the loop's state between bounded run() calls
        self._closed = False
        self.screenshot = screenshot              # save the window here at update screenshot_at, then quit
        self.screenshot_at = screenshot_at
        self.size = size
        self.fps = fps
        self.screen = screen
        self.show_help = False
        self.inset = 0
        self.running = True
        self.camera = None
        self.prev_scene = None
        self.scene = render.snapshot(self.sim)
        self.rewind_from: int | None = None       # while R is held: the update the rewind started at
        self.caption = "scuffle: two fighters (H for help)"

    # ------------------------------------------------------------ input
    _ACTIONS = {pygame.K_j: "strike", pygame.K_k: "grab", pygame.K_l: "throw", pygame.K_u: "let_go",
                pygame.K_f: "face"}

    def handle(self, event) -> None:
        sim = self.sim
        if event.type == pygame.QUIT:
            self.running = False
        elif event.type == pygame.KEYUP:
            self.held.discard(event.key)
        elif event.type in (getattr(pygame, "WINDOWFOCUSLOST", -1), getattr(pygame, "ACTIVEEVENT", -1)):
            if event.type != getattr(pygame, "ACTIVEEVENT", -1) or not getattr(event, "gain", 1):
                self.held.clear()
        elif event.type == pygame.KEYDOWN:
            k = event.key
            self.held.add(k)
            if k == pygame.K_ESCAPE:
                self.running = False
            elif k in (pygame.K_h, pygame.K_F1):
                self.show_help = not self.show_help
            elif k == pygame.K_p:
                sim.paused = not sim.paused
            elif k == pygame.K_n and sim.paused:
                self._step()
            elif k == pygame.K_m:
                sim.slow = not sim.slow
            elif k == pygame.K_t:
                sim.set_attract(not sim.attract)
            elif k == pygame.K_TAB:
                self.inset = (self.inset + 1) % len(sim.names)
            elif k == pygame.K_F12:
                path = f"scuffle-{sim.seed}-{sim.update:06d}.png"
                with output_path(path, "screenshot") as tmp:
                    pygame.image.save(self.screen, tmp)
                print(f"demo: saved {path}")
            elif k in self._ACTIONS and not sim.attract:
                sim.keyboard.press(self._ACTIONS[k], sim.update)

    def press(self, key: str) -> None:
        """Handle a key press by its pygame constant's name ("p", "escape", "f1"...): for scripts and tests."""
        self.handle(pygame.event.Event(pygame.KEYDOWN, key=self.key_code(key), mod=0))

    @staticmethod
    def key_code(key: str) -> int:
        """A pygame key constant by its name ("p", "escape", "f1", "LSHIFT"...)."""
        code = getattr(pygame, "K_" + key, None)
        return code if code is not None else getattr(pygame, "K_" + key.upper())

    def post_key(self, key: str, down: bool = True) -> None:
        """Put a key event (KEYDOWN, or KEYUP) on pygame's event queue, as the keyboard
        would: the loop handles it on its next frame (scripts and tests; the display
        must be open, i.e. after a first ``run`` call)."""
        kind = pygame.KEYDOWN if down else pygame.KEYUP
        pygame.event.post(pygame.event.Event(kind, key=self.key_code(key), mod=0))

    def read_movement(self) -> None:
        """The movement keys held (the key events seen, or the keyboard state) set p1's
        direction; shift jogs."""
        state = pygame.key.get_pressed()

        def down(*codes) -> bool:
            return any(c in self.held or state[c] for c in codes)

        dx = down(pygame.K_RIGHT, pygame.K_d) - down(pygame.K_LEFT, pygame.K_a)
        dy = down(pygame.K_UP, pygame.K_w) - down(pygame.K_DOWN, pygame.K_s)
        mods = pygame.key.get_mods()
        self.sim.keyboard.direction = (float(dx), float(dy))
        self.sim.keyboard.jog = bool(mods & pygame.KMOD_SHIFT) or down(pygame.K_LSHIFT, pygame.K_RSHIFT)

    def rewind_held(self) -> bool:
        """Whether R is held (the key events seen, or the keyboard state)."""
        return pygame.K_r in self.held or bool(pygame.key.get_pressed()[pygame.K_r])

    # ------------------------------------------------------------ loop
    def _rewind(self) -> int:
        """One update back (DemoSim.rewind); the picture follows. Returns 0 at the ring's end."""
        n = self.sim.rewind(1)
        if n:
            self.prev_scene, self.scene = self.scene, render.snapshot(self.sim)
        return n

    def _step(self) -> None:
        """One update (the rounds are the fight rules': a K.O. ends the round, and the
        next starts KO_UPDATES later, in the simulation itself)."""
        self.sim.step()
        self.prev_scene, self.scene = self.scene, render.snapshot(self.sim)

    @property
    def round(self) -> int:
        return self.sim.round

    def frame_scene(self, alpha: float) -> render.Scene:
        s = render.lerp_scene(self.prev_scene, self.scene, alpha)
        s.show_help = self.show_help
        s.inset = self.inset
        s.paused, s.slow = self.sim.paused, self.sim.slow
        s.mode = render.mode_of(self.sim)
        s.rewind = None if self.rewind_from is None else (self.sim.update - self.rewind_from) * DT
        s.ring = self.sim.rewind_room * DT
        return s

    def run(self, max_frames: int | None = None, frame_dt: float | None = None) -> None:
        """The window's loop until Escape / close (or ``max_frames`` frames). Each frame
        handles the queued events, then runs the updates the elapsed time owes
        (``frame_dt``: a fixed time per frame instead of the clock; DT runs exactly one
        update per frame). When the window is quit (or on an error) it writes the
        recording (``record``) and closes (``close``); after ``max_frames`` frames it
        returns with everything open, and another ``run`` call goes on from there."""
        if self._loop is None:
            from scuffle.demo.quiet import sdl_quiet
            with sdl_quiet():                     # SDL's noise while it looks for a driver
                pygame.display.init()
                pygame.font.init()
                if self.screen is None:
                    self.screen = pygame.display.set_mode(self.size, pygame.RESIZABLE)
            pygame.display.set_caption(self.caption)
            self._loop = {"fonts": render.Fonts(), "clock": pygame.time.Clock(), "acc": 0.0,
                          "last": time.perf_counter(), "fps": 0.0}
        lp = self._loop
        fonts, clock, acc, last, shown_fps = lp["fonts"], lp["clock"], lp["acc"], lp["last"], lp["fps"]
        frames = 0
        completed = False
        try:
            while self.running and (max_frames is None or frames < max_frames):
                frames += 1
                for event in pygame.event.get():
                    if event.type == pygame.VIDEORESIZE:
                        self.screen = pygame.display.set_mode(event.size, pygame.RESIZABLE)
                    self.handle(event)
                self.read_movement()
                now = time.perf_counter()
                real = min(now - last, 0.25) if frame_dt is None else float(frame_dt)
                last = now
                rewinding = self.rewind_held()
                if rewinding != (self.rewind_from is not None):   # R went down or up: start afresh
                    self.rewind_from = self.sim.update if rewinding else None
                    acc = 0.0
                    self.prev_scene = None                   # no blend across the turn
                if rewinding:
                    # The fight runs backwards at the simulation's pace (slow motion too),
                    # paused or not, until the ring's end.
                    acc += real * (SLOW_FACTOR if self.sim.slow else 1.0)
                    n = 0
                    while acc >= DT and n < MAX_CATCH_UP:
                        acc -= DT
                        n += 1
                        if not self._rewind():
                            acc = 0.0
                            break
                    if n == MAX_CATCH_UP:
                        acc = min(acc, DT)
                elif not self.sim.paused:
                    acc += real * (SLOW_FACTOR if self.sim.slow else 1.0)
                    n = 0
                    while acc >= DT and n < MAX_CATCH_UP:
                        self._step()
                        acc -= DT
                        n += 1
                    if n == MAX_CATCH_UP:
                        acc = min(acc, DT)
                alpha = 1.0 if self.sim.paused and not rewinding else acc / DT
                scene = self.frame_scene(alpha)
                shown_fps = clock.get_fps() or shown_fps
                scene.fps = shown_fps
                w, h = self.screen.get_size()
                arena = pygame.Rect(0, 0, int(w * render.ARENA_FRACTION), h)
                self.camera = render.fit_camera(scene, arena, self.camera, ease=0.08)
                render.draw_scene(self.screen, scene, fonts, self.camera)
                pygame.display.flip()
                if self.screenshot is not None and self.sim.update >= (self.screenshot_at or 0):
                    with output_path(self.screenshot, "screenshot") as tmp:
                        pygame.image.save(self.screen, tmp)
                    print(f"demo: saved {self.screenshot} at update {self.sim.update}")
                    self.running = False
                if frame_dt is None:
                    clock.tick(self.fps)
            completed = True
        finally:
            lp.update(acc=acc, last=last, fps=shown_fps)
            if not completed or not self.running:    # quit, or an error: a bounded run stays open
                self.close()

    def close(self) -> None:
        """Write the recording (``record``), close the trace and the world, close the display."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.record is not None:
                self.sim.save_scenario(self.record)
                print(f"demo: recorded {self.sim.update} updates, {len(self.sim.commands)} commands to {self.record}")
        finally:
            self.sim.close()
            if self._loop is not None:
                pygame.display.quit()

