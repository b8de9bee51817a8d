"""The demo's world and its pygame window.

``DemoSim`` is the simulation the window and the headless runner share: a Game with two
fighters ("p1", "p2") on the demo move set, facing each other 3 m apart, with the fight
rules attached. p2 is driven by a FighterAI; p1 by the keyboard, or by its own
FighterAI (another seed) in attract mode. Everything is seeded: the same seed gives
the same fight.

``App`` is the window: a fixed-timestep loop (the simulation at a steady 30 Hz, the
picture at the display's rate, interpolated between the last two updates), with pause,
single step and slow motion (the simulation at 1/4 speed).
"""
from __future__ import annotations

import math
import time
from collections import deque

import numpy as np
import pygame

from scuffle.components import FiredEvents
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import Fight, FightState
from scuffle.game.fighters.moves import Move, THROWS
from scuffle.game.runtime.world import Game

from scuffle.demo import render

__all__ = ["DemoSim", "KeyboardControl", "App", "DT", "AI_SETTINGS", "P1_SEED_OFFSET"]

DT = 1.0 / 30.0                  # one simulation update
SLOW_FACTOR = 0.25               # slow motion: the simulation at 1/4 speed
MAX_CATCH_UP = 5                 # updates run at most per rendered frame
START_DISTANCE = 3.0             # metres between the fighters at the start
P1_SEED_OFFSET = 1000            # p1's AI (attract mode) is seeded with seed + this
# FighterAI's constructor arguments for the demo (aggression, decision period).
AI_SETTINGS = {"aggression": 0.6, "think_every": 3}
RECENT_EVENTS = 8                # events kept per fighter for the HUD
BUFFER_UPDATES = 8               # a key press waits this long for the move in progress
KO_UPDATES = 120                 # the window starts a new round 4 s after a K.O.


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

    def _run(self, fight: Fight, action: str) -> bool:
        if action == "strike":
            c = fight.combat(self.me)
            if c.state == FightState.HOLDING:
                return fight.strike(self.me, Move.GRAB_PUNCH if self.throw_cycle % 2 else Move.GRAB_KNEE)
            return fight.strike(self.me)
        if action == "grab":
            return fight.grab(self.me)
        if action == "throw":
            throws = sorted(THROWS)
            ok = fight.throw(self.me, throws[self.throw_cycle % len(throws)])
            if ok:
                self.throw_cycle += 1
            return ok
        if action == "let_go":
            return fight.let_go(self.me)
        if action == "face":
            return fight.face(self.me, toward=self.opponent)
        return False

    def __call__(self, fight: Fight) -> None:
        now = fight.game.ctx.update
        kept = deque()
        while self.pending:
            action, until = self.pending.popleft()
            if until < now:
                continue
            if self._ready(fight, action):
                self._run(fight, action)
                kept.extend(a for a in self.pending if a[0] != action)
                self.pending = kept
                return                      # one command per update
            kept.append((action, until))
        self.pending = kept
        self._locomotion(fight)

    def _locomotion(self, fight: Fight) -> None:
        if not fight.free(self.me):
            return
        c = fight.combat(self.me)
        dx, dy = self.direction
        n = math.hypot(dx, dy)
        if n > 0.0:
            speed = fight.gait_speeds(self.me)[1 if self.jog else 0]
            d = np.array([dx / n, dy / n])
            if c.move_speed != speed or not np.allclose(c.move_dir[:2], d, atol=1e-6):
                fight.move(self.me, (float(d[0]), float(d[1])), speed)
        elif c.move_speed > 0.0:
            fight.move(self.me, (0.0, 0.0), 0.0)


class DemoSim:
    """Two fighters, the fight rules, the AI and the keyboard (see the module docstring).

    ``step()`` runs one 30 Hz update and collects each fighter's fired events for the
    HUD. ``attract`` (settable) hands p1 to its own FighterAI.
    """

    names = ("p1", "p2")

    def __init__(self, seed: int = 1, attract: bool = False, health: float = 100.0,
                 ai_settings: dict | None = None, anim_set=None):
        if anim_set is None:
            from scuffle.game.fighters.moveset import demo_set
            anim_set = demo_set()
        self.seed = int(seed)
        self.anim_set = anim_set
        self.game = game = Game()
        half = START_DISTANCE / 2
        game.add_human("p1", anim_set, position=(0.0, -half, 0.0), heading=0.0, health=health)
        game.add_human("p2", anim_set, position=(0.0, half, 0.0), heading=180.0, health=health)
        for name in self.names:
            inst = game.instance(name)
            game.change(name, game.player.loop(inst, Move.FIGHT_IDLE))
        self.fight = Fight(game, separate=True)
        settings = dict(AI_SETTINGS, **(ai_settings or {}))
        self.ai_seeds = {"p1": self.seed + P1_SEED_OFFSET, "p2": self.seed}
        self.ai = {
            "p1": FighterAI("p1", "p2", seed=self.ai_seeds["p1"], **settings),
            "p2": FighterAI("p2", "p1", seed=self.ai_seeds["p2"], **settings),
        }
        self.keyboard = KeyboardControl("p1", "p2")
        self.attract = bool(attract)
        # One slot per fighter, in a fixed order, so toggling attract mode keeps the order.
        self.fight.controllers.append(self._control_p1)
        self.fight.controllers.append(self.ai["p2"])
        self.recent_events: dict[str, deque] = {n: deque(maxlen=RECENT_EVENTS) for n in self.names}
        self.paused = False
        self.slow = False

    # ------------------------------------------------------------ control
    def _control_p1(self, fight: Fight) -> None:
        if self.attract:
            self.ai["p1"](fight)
        else:
            self.keyboard(fight)

    def set_attract(self, on: bool) -> None:
        if on and not self.attract:
            self.keyboard.clear()
            c = self.fight.combat("p1")
            if c.move_speed > 0.0 and self.fight.free("p1"):
                self.fight.move("p1", (0.0, 0.0), 0.0)
        self.attract = bool(on)

    def controller_of(self, name: str) -> str:
        if name == "p1" and not self.attract:
            return "keyboard"
        return f"AI seed {self.ai_seeds[name]}"

    # ------------------------------------------------------------ running
    @property
    def update(self) -> int:
        return self.game.update

    def step(self) -> None:
        """One 30 Hz update of the whole world."""
        game = self.game
        game.step()
        upd = game.update - 1
        for name in self.names:
            for fe in game.component(name, FiredEvents).events:
                ev = fe.event
                self.recent_events[name].append((upd, f"{fe.anim_id:4d} f{ev.frame:<3d} 0x{ev.type:02x} {ev.name}"))

    def health(self) -> dict[str, float]:
        return {n: float(self.fight.combat(n).health) for n in self.names}

    def close(self) -> None:
        self.game.close()


class App:
    """The pygame window (see the module docstring)."""

    def __init__(self, seed: int = 1, attract: bool = False, size=(1280, 720), fps: int = 60,
                 screen: pygame.Surface | None = None, screenshot=None, screenshot_at: int | None = None):
        self.seed = int(seed)
        self.round = 1
        self.ko_at: int | None = None
        self.sim = DemoSim(seed=seed, attract=attract)
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

    # ------------------------------------------------------------ input
    _ACTIONS = {pygame.K_j: "strike", pygame.K_k: "grab", pygame.K_l: "throw", pygame.K_u: "let_go",
                pygame.K_f: "face"}

    def handle(self, event) -> None:
        sim = self.sim
        if event.type == pygame.QUIT:
            self.running = False
        elif event.type == pygame.KEYDOWN:
            k = event.key
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
                pygame.image.save(self.screen, path)
                print(f"demo: saved {path}")
            elif k in self._ACTIONS and not sim.attract:
                sim.keyboard.press(self._ACTIONS[k], sim.update)

    def press(self, key: str) -> None:
        """Handle a key press by its pygame constant's name ("p", "escape", "f1"...): for scripts and tests."""
        code = getattr(pygame, "K_" + key, None)
        if code is None:
            code = getattr(pygame, "K_" + key.upper())
        self.handle(pygame.event.Event(pygame.KEYDOWN, key=code, mod=0))

    def read_movement(self) -> None:
        keys = pygame.key.get_pressed()
        dx = (keys[pygame.K_RIGHT] or keys[pygame.K_d]) - (keys[pygame.K_LEFT] or keys[pygame.K_a])
        dy = (keys[pygame.K_UP] or keys[pygame.K_w]) - (keys[pygame.K_DOWN] or keys[pygame.K_s])
        mods = pygame.key.get_mods()
        self.sim.keyboard.direction = (float(dx), float(dy))
        self.sim.keyboard.jog = bool(mods & pygame.KMOD_SHIFT)

    # ------------------------------------------------------------ loop
    def _step(self) -> None:
        self.sim.step()
        self.prev_scene, self.scene = self.scene, render.snapshot(self.sim)
        if self.ko_at is None and any(v <= 0.0 for v in self.sim.health().values()):
            self.ko_at = self.sim.update
        elif self.ko_at is not None and self.sim.update - self.ko_at >= KO_UPDATES:
            self.next_round()

    def next_round(self) -> None:
        """After a K.O.: a fresh fight (the next seed), the controls as they were."""
        attract, paused, slow = self.sim.attract, self.sim.paused, self.sim.slow
        self.sim.close()
        self.round += 1
        self.sim = DemoSim(seed=self.seed + self.round - 1, attract=attract)
        self.sim.paused, self.sim.slow = paused, slow
        self.ko_at = None
        self.prev_scene, self.scene = None, render.snapshot(self.sim)

    def frame_scene(self, alpha: float) -> render.Scene:
        s = render.lerp_scene(self.prev_scene, self.scene, alpha)
        s.show_help = self.show_help
        s.inset = self.inset
        s.paused, s.slow = self.sim.paused, self.sim.slow
        s.mode = "ATTRACT" if self.sim.attract else "PLAYER"
        if self.round > 1:
            s.mode += f"  round {self.round}"
        return s

    def run(self) -> None:
        pygame.display.init()
        pygame.font.init()
        if self.screen is None:
            self.screen = pygame.display.set_mode(self.size, pygame.RESIZABLE)
        pygame.display.set_caption("scuffle: two fighters (H for help)")
        fonts = render.Fonts()
        clock = pygame.time.Clock()
        acc = 0.0
        last = time.perf_counter()
        shown_fps = 0.0
        try:
            while self.running:
                for event in pygame.event.get():
                    if event.type == pygame.VIDEORESIZE:
                        self.screen = pygame.display.set_mode(event.size, pygame.RESIZABLE)
                    self.handle(event)
                self.read_movement()
                now = time.perf_counter()
                real = min(now - last, 0.25)
                last = now
                if not self.sim.paused:
                    acc += real * (SLOW_FACTOR if self.sim.slow else 1.0)
                    n = 0
                    while acc >= DT and n < MAX_CATCH_UP:
                        self._step()
                        acc -= DT
                        n += 1
                    if n == MAX_CATCH_UP:
                        acc = min(acc, DT)
                alpha = 1.0 if self.sim.paused else acc / DT
                scene = self.frame_scene(alpha)
                shown_fps = clock.get_fps() or shown_fps
                scene.fps = shown_fps
                w, h = self.screen.get_size()
                arena = pygame.Rect(0, 0, int(w * render.ARENA_FRACTION), h)
                self.camera = render.fit_camera(scene, arena, self.camera, ease=0.08)
                render.draw_scene(self.screen, scene, fonts, self.camera)
                pygame.display.flip()
                if self.screenshot is not None and self.sim.update >= (self.screenshot_at or 0):
                    pygame.image.save(self.screen, str(self.screenshot))
                    print(f"demo: saved {self.screenshot} at update {self.sim.update}")
                    self.running = False
                clock.tick(self.fps)
        finally:
            self.sim.close()
            pygame.display.quit()

