"""Pictures of a scripted fight: a scenario's run drawn as the demo draws its own.

``ScenarioView(game)`` is a scenario's Game seen as the demo's renderer sees a DemoSim
(``render.snapshot`` reads ``game``, ``fight``, ``recent_events``, ``controller_of``...):
``observe()`` after each update keeps each human's latest fired events for the HUD.

``ScenarioSim(scenario)`` runs a scenario one update at a time for the window
(``scuffle demo --play S.toml``): ``step()`` (the scenario runner's errors, one
ScenarioError naming the command), ``rewind(n)`` (a ring of snapshots, as the demo's:
the scenario's commands are replayed from there, so playing on gives the same updates),
``done`` once the scenario's updates have run.

``Pictures`` draws a run as ``scuffle run S.toml --gif F.gif --frames DIR`` asks: an
animated GIF of the arena (Pillow; 15 pictures per second of game time) and, in DIR, a
PNG of the whole scene every ``frame_every`` seconds of game time (and of the last
update), with ``contact_sheet.png``: one captioned tile per frame (time, round, each
fighter's state, move and health), as the headless demo makes them.
"""
from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Any

from scuffle.components import FiredEvents
from scuffle.demo.headless import GIF_EVERY, GIF_SIZE, TILE, UPDATES_PER_SECOND, GifWriter, _pygame, contact_sheet

__all__ = ["ScenarioView", "ScenarioSim", "Pictures", "RECENT_EVENTS"]

RECENT_EVENTS = 8                # events kept per human for the HUD (as the demo's)


class ScenarioView:
    """A scenario's Game as the demo's renderer reads a DemoSim (see the module docstring)."""

    attract = False
    mode_label = "SCENARIO"
    seed = 0

    def __init__(self, game: Any, source: str = "scenario"):
        self.game = game
        self.source = source
        self.fight = game.fight
        self.names = tuple(n for n, _ in game.humans())
        self.recent_events: dict[str, deque] = {n: deque(maxlen=RECENT_EVENTS) for n in self.names}
        self.paused = False
        self.slow = False

    @property
    def update(self) -> int:
        return int(self.game.update)

    @property
    def round(self) -> int:
        return int(self.fight.stats.round) if self.fight is not None else 1

    def controller_of(self, name: str) -> str:
        return "scripted"

    def observe(self) -> None:
        """Keep the events the update just run fired (the HUD's recent events)."""
        game, upd = self.game, self.game.update - 1
        for name in self.names:
            for fe in game.component(name, FiredEvents).events:
                ev = fe.event
                self.recent_events[name].append((upd, f"{fe.anim_id:4d} f{ev.frame:<3d} 0x{ev.type:02x} {ev.name}"))


class _NoKeyboard:
    """A scenario's keyboard: every human is scripted, so the keys that move or act do nothing."""

    direction = (0.0, 0.0)
    jog = False

    def press(self, action: str, update: int) -> None:
        """Ignored: a scenario's commands drive every human."""

    def clear(self) -> None:
        """Nothing held."""


class ScenarioSim(ScenarioView):
    """A scenario played one update at a time, with a rewind ring (see the module docstring).

    In: a validated Scenario (``load_scenario``), the engine, ``rewind_depth`` updates
    of rewind (0: none). Rejected: what ``setup_scenario`` rejects; at run time, a
    command that hits a limit of the original (ScenarioError naming it).
    """

    def __init__(self, sc: Any, engine: str = "compiled", rewind_depth: int = 300):
        from scuffle.game.runtime.scenario import Script, setup_scenario

        game = setup_scenario(sc, engine=engine)
        super().__init__(game, sc.source)
        self.attract = True                  # the window's keys do not act: all is scripted
        self.keyboard = _NoKeyboard()
        self.sc = sc
        self._last = next(a for a in game.ctx.actions if isinstance(a, Script)).last
        self.rewind_depth = int(rewind_depth)
        self._ring: deque = deque()
        self._spare: list = []
        if self.rewind_depth:
            self._ring.append(game.snapshot(outputs=True))

    @property
    def done(self) -> bool:
        """Whether every update of the scenario has run."""
        return self.game.update >= self.sc.updates

    @property
    def rewind_room(self) -> int:
        """How many updates ``rewind()`` can go back now."""
        return max(0, len(self._ring) - 1)

    def step(self) -> None:
        """One update of the scenario (nothing once ``done``); its snapshot joins the ring."""
        from scuffle.anim.maths.pose import PoseStackOverflow
        from scuffle.anim.playback.player import UnknownClip
        from scuffle.anim.engine.stack import AnimLimitError
        from scuffle.game.runtime.scenario import _handler_error, _run_error
        from scuffle.game.runtime.world import HandlerError

        if self.done:
            return
        game, sc, now = self.game, self.sc, self.game.update
        try:
            game.step()
        except HandlerError as exc:
            raise _handler_error(sc, now, exc, self._last) from None
        except (AnimLimitError, PoseStackOverflow, UnknownClip) as exc:
            raise _run_error(sc, now, exc, self._last) from None
        refused = game.player.refused
        if refused:
            inst, refusal = refused[0]
            raise _run_error(sc, now, refusal, self._last, inst.name)
        self.observe()
        if self.done:
            self.paused = True                   # the end: the window holds the last picture
        if self.rewind_depth:
            ring = self._ring
            reuse = ring.popleft() if len(ring) > self.rewind_depth else (self._spare.pop() if self._spare else None)
            ring.append(game.snapshot(outputs=True, reuse=reuse))

    def rewind(self, updates: int = 1) -> int:
        """Go back ``updates`` updates (as far as the ring goes); returns how many it went
        back. The scenario's commands of those updates run again as play goes on.
        Rejected (ValueError): ``updates`` not a whole number >= 0."""
        if isinstance(updates, bool) or not isinstance(updates, int) or updates < 0:
            raise ValueError(f"ScenarioSim.rewind: updates {updates!r} must be a whole number >= 0")
        n = min(updates, self.rewind_room)
        if n == 0:
            return 0
        for _ in range(n):
            self._spare.append(self._ring.pop())
        self.game.restore(self._ring[-1])
        return n

    def health(self) -> dict[str, float]:
        return {n: float(self.fight.combat(n).health) for n in self.names} if self.fight is not None else {}

    def set_attract(self, on: bool) -> None:
        """A scenario has no keyboard: every human is scripted (the window's T does nothing)."""

    def close(self, keep: bool = True) -> None:
        self._ring.clear()
        self._spare.clear()
        self.game.close()


class Pictures:
    """The pictures ``scuffle run`` draws of a scenario's run (see the module docstring).

    In: ``gif`` (a path or None), ``frames`` (a folder or None), ``frame_every`` seconds
    of game time between frames, ``last`` the run's last update (its frame is always
    drawn), ``size`` the frames' size. ``add(game)`` after each update; ``finish()``
    writes the GIF and the contact sheet and returns what was written. Each file is
    written beside its name and renamed (an old file stays whole when a run fails).
    Rejected: pygame or Pillow missing (PillowMissing: the one line names the extra).
    """

    def __init__(self, gif: str | None = None, frames: str | None = None, frame_every: float = 2.0,
                 last: int | None = None, size: tuple[int, int] = (1280, 720), gif_size: tuple[int, int] = GIF_SIZE):
        self.pygame = _pygame()          # first: the dummy driver set before pygame loads
        from scuffle.demo import render

        self.render = render
        self.gif = GifWriter(gif, gif_size) if gif is not None else None
        self.gif_path = gif
        self.frames_dir = Path(frames) if frames is not None else None
        self.every = max(1, int(round(float(frame_every) * UPDATES_PER_SECOND)))
        self.last = last
        self.size = size
        self.view: ScenarioView | None = None
        self.fonts = render.Fonts()
        self.tile_fonts = render.Fonts(17)
        self.written: list[str] = []
        self.tiles: list = []
        if self.frames_dir is not None:
            self.frames_dir.mkdir(parents=True, exist_ok=True)

    def add(self, game: Any) -> None:
        """Draw what the update just run asks for: a GIF picture every GIF_EVERY updates,
        a frame every ``frame_every`` seconds and at the last update."""
        if self.view is None or self.view.game is not game:
            self.view = ScenarioView(game)
        view = self.view
        view.observe()
        u = game.update
        if self.gif is not None and u % GIF_EVERY == 0:
            self.gif.add(view)
        if self.frames_dir is not None and (u % self.every == 0 or u == self.last):
            self._frame(view)

    def _frame(self, view: ScenarioView) -> None:
        from scuffle.game.runtime.files import output_path

        pg, render = self.pygame, self.render
        scene = render.snapshot(view)
        surface = pg.Surface(self.size)
        render.draw_scene(surface, scene, self.fonts)
        name = f"frame_{view.update / UPDATES_PER_SECOND:06.1f}s.png"
        assert self.frames_dir is not None
        with output_path(self.frames_dir / name, "frame") as tmp:
            pg.image.save(surface, tmp)
        if self.written and self.written[-1] == str(self.frames_dir / name):
            # the last update within the tenth of a second of the frame before: it replaces it
            self.written.pop()
            self.tiles.pop()
        self.written.append(str(self.frames_dir / name))
        tile = pg.Surface(TILE)
        fight = view.fight
        render.draw_tile(tile, scene, self.tile_fonts, view.round, bool(getattr(fight, "round_over", False)))
        self.tiles.append(tile)

    def finish(self) -> dict:
        """Write the GIF and the contact sheet; returns {"gif": path or None, "gif_pictures":
        n, "frames": [paths], "contact_sheet": path or None}."""
        out: dict = {"gif": None, "gif_pictures": 0, "frames": list(self.written), "contact_sheet": None}
        if self.gif is not None:
            n = self.gif.save()
            if n:
                out["gif"], out["gif_pictures"] = str(self.gif_path), n
        if self.frames_dir is not None and self.tiles:
            sheet = os.path.join(str(self.frames_dir), "contact_sheet.png")
            contact_sheet(self.tiles, sheet)
            out["contact_sheet"] = sheet
        return out
