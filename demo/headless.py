"""The demo without a display: attract mode for S seconds of game time, pictures and a summary.

    run_headless(seconds=60, out="out/demo", seed=1) -> summary dict

writes ``frame_0002.0s.png``... (one picture every ``frame_every`` seconds of game time,
and the last update's), ``contact_sheet.png`` (one tile per frame: the arena cropped
around the fighters, captioned with the time, the round and both fighters' states) and
``summary.json``. Only the saved frames are rendered, onto an offscreen Surface, so a
minute of game time (1800 updates) takes a few seconds. Optionally: ``record`` (the run
as a scenario, ``DemoSim.save_scenario``), ``trace`` (the pinned JSONL trace) and
``gif`` (an animated GIF of the arena, 15 pictures per second of game time; Pillow),
and ``rewinds``: ``[(T, S), ...]`` rewinds the fight S seconds (at most 10) when the
update counter reaches round(T * 30) (each once, in order of T), then plays on to
``seconds``; the pictures, the GIF, the recording and the trace hold the final
timeline only (``scuffle run`` of the recording gives the trace byte for byte).

summary.json (pinned names): ``updates``, ``grabs``, ``strikes``, ``throws``, ``damage``;
also ``seed``, ``seconds``, ``health`` {name: value}, ``hits`` {name: hits taken},
``refused``, ``round`` (the round being fought at the end), ``rounds`` (the finished
ones: ``round``, ``winner``, ``loser``, ``ko_update``), ``frames`` (file names),
``contact_sheet``, ``gif``, ``record``, ``trace``, ``wall_seconds``, ``rewinds`` (the
rewinds done: ``at``, the update counter when it rewound, and ``by``, the updates it
went back).
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Callable

__all__ = ["run_headless", "contact_sheet", "save_picture", "image_stats", "GifWriter", "PillowMissing",
           "DEFAULT_SECONDS", "DEFAULT_OUT", "DEFAULT_FRAME_EVERY", "GIF_SIZE", "GIF_EVERY", "rewind_plan",
           "MAX_REWIND_SECONDS"]

DEFAULT_SECONDS = 20.0
DEFAULT_OUT = "out/demo"
DEFAULT_FRAME_EVERY = 2.0
UPDATES_PER_SECOND = 30
TILE = (420, 300)                # a contact sheet tile: the cropped arena and its caption
SHEET_COLUMNS = 4
GIF_SIZE = (480, 300)            # the GIF's pictures (the arena only)
GIF_EVERY = 2                    # a GIF picture every 2 updates: 15 per second
GIF_DURATIONS = (70, 60, 70)     # ms, repeated: 200 ms per 3 pictures = 15 per second (GIF counts 10 ms)
GIF_COLOURS = 64


MAX_REWIND_SECONDS = 10.0        # the rewind ring's depth (demo.app.REWIND_UPDATES)


def rewind_plan(rewinds, seconds: float) -> list[tuple[int, int]]:
    """``[(T, S), ...]`` (seconds of game time) -> ``[(at, by), ...]`` in updates, sorted
    by ``at``: rewind ``by`` = round(S * 30) updates when the counter reaches ``at`` =
    round(T * 30). Rejected (ValueError naming the value): a T that is not a finite number
    from 0 to ``seconds``, an S that does not round to 1 .. 300 updates (10 s) or goes
    back further than T."""
    plan = []
    end = int(round(float(seconds) * UPDATES_PER_SECOND))
    for pair in rewinds:
        t, b = (float(v) for v in pair)
        at = int(round(t * UPDATES_PER_SECOND)) if math.isfinite(t) else -1
        if not (math.isfinite(t) and 0 <= at <= end):
            raise ValueError(f"rewind at {t!r}: a time in seconds from 0 to the run's {seconds:g}")
        by = int(round(b * UPDATES_PER_SECOND)) if math.isfinite(b) else -1
        if not (math.isfinite(b) and 1 <= by <= MAX_REWIND_SECONDS * UPDATES_PER_SECOND):
            raise ValueError(f"rewind by {b!r}: a number of seconds from 1/30 to {MAX_REWIND_SECONDS:g}")
        if by > at:
            raise ValueError(f"rewind by {b:g} s at {t:g} s: goes back before the start")
        plan.append((at, by))
    return sorted(plan, key=lambda p: p[0])


class PillowMissing(RuntimeError):
    """--gif without Pillow installed (the optional ``gif`` extra)."""


def _pygame():
    """pygame with the dummy video driver (nothing here opens a window)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame
    pygame.font.init()
    return pygame


class GifWriter:
    """Collects arena pictures of a DemoSim and saves them as one looping animated GIF.

    In: the path, the picture size. ``add(sim)`` renders the arena (no HUD) through an
    eased camera and quantizes it to a palette shared by all pictures (the first
    picture's); ``save()`` writes the file at 15 pictures per second of game time.
    Rejected: Pillow missing (PillowMissing, one line naming the ``gif`` extra).
    """

    def __init__(self, path, size: tuple[int, int] = GIF_SIZE):
        try:
            from PIL import Image
        except ImportError:
            raise PillowMissing("--gif needs Pillow: pip install 'scuffle[gif]' (or pip install pillow)") from None
        self.Image = Image
        self.path = Path(path)
        self.pygame = _pygame()
        from scuffle.demo import render
        self.render = render
        self.surface = self.pygame.Surface(size)
        self.fonts = render.Fonts(14)
        self.camera = None
        self.palette = None
        self.frames: list = []

    def add(self, sim) -> None:
        """Render the arena of the update just run and keep it."""
        render, pg = self.render, self.pygame
        scene = render.snapshot(sim)
        rect = self.surface.get_rect()
        want = render.close_camera(scene, rect, margin=1.0, max_scale=140.0)
        if self.camera is not None:              # eased toward the fighters, as the window's camera
            want = render.Camera(centre=self.camera.centre + (want.centre - self.camera.centre) * 0.2,
                                 scale=self.camera.scale + (want.scale - self.camera.scale) * 0.2)
        self.camera = want
        render.draw_arena_only(self.surface, scene, self.fonts, self.camera)
        img = self.Image.frombytes("RGB", self.surface.get_size(), pg.image.tobytes(self.surface, "RGB"))
        if self.palette is None:
            self.palette = img.quantize(colors=GIF_COLOURS, method=self.Image.Quantize.MEDIANCUT)
        self.frames.append(img.quantize(palette=self.palette, dither=self.Image.Dither.NONE))

    def save(self) -> int:
        """Write the GIF (looping); returns the number of pictures. Nothing to save: no file."""
        if not self.frames:
            return 0
        n = len(self.frames)
        durations = [GIF_DURATIONS[i % len(GIF_DURATIONS)] for i in range(n)]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        from scuffle.game.runtime.files import output_path
        with output_path(self.path, "gif") as tmp:
            self.frames[0].save(tmp, format="GIF", save_all=True, append_images=self.frames[1:],
                                duration=durations, loop=0, optimize=False, disposal=1)
        return n


def run_headless(seconds: float = DEFAULT_SECONDS, out: str | os.PathLike = DEFAULT_OUT, seed: int = 1,
                 frame_every: float = DEFAULT_FRAME_EVERY, size: tuple[int, int] = (1280, 720),
                 on_update: Callable | None = None, sheet: bool = True, record=None, trace=None, gif=None,
                 gif_from: float = 0.0, gif_size: tuple[int, int] = GIF_SIZE, health: float = 100.0,
                 pictures: bool = True, rewinds=()) -> dict:
    """Run attract mode for ``seconds`` of game time; write the frames, the sheet and the summary.

    ``pictures=False``: only the outputs asked for by name (``record``, ``trace``,
    ``gif``); no frames, no contact sheet, no summary.json (the summary is returned).

    ``on_update(sim)`` is called after every update (tests watch the world through it).
    ``record``: write the run as a scenario there; ``trace``: the JSONL trace there;
    ``gif``: an animated GIF of the arena there, from ``gif_from`` seconds of game time
    on; ``health``: each fighter's health (per round); ``rewinds``: ``[(T, S), ...]``
    in seconds (``rewind_plan``). Returns the summary (also written to
    ``out/summary.json``). Rejected, before anything runs: --gif without Pillow
    (PillowMissing), a bad rewind (ValueError, ``rewind_plan``).
    """
    pygame = _pygame()
    from scuffle.demo import render
    from scuffle.demo.app import DemoSim
    from scuffle.game.runtime.files import OutputFile, output_path

    plan = rewind_plan(rewinds, seconds)
    out = Path(out)
    if pictures:
        out.mkdir(parents=True, exist_ok=True)
    else:
        sheet = False
    gif_writer = GifWriter(gif, gif_size) if gif is not None else None
    updates = max(0, int(round(float(seconds) * UPDATES_PER_SECOND)))
    every = max(1, int(round(float(frame_every) * UPDATES_PER_SECOND)))
    gif_first = int(round(float(gif_from) * UPDATES_PER_SECOND))
    fonts = render.Fonts()
    tile_fonts = render.Fonts(17)
    surface = pygame.Surface(size)
    from scuffle.demo.app import REWIND_UPDATES
    sim = DemoSim(seed=seed, attract=True, trace=trace, health=health, rewind_depth=REWIND_UPDATES if plan else 0)
    frames: list[tuple[str, float]] = []
    tiles: list = []
    frame_updates: list[int] = []
    gif_updates: list[int] = []
    done: list[dict] = []
    t0 = time.perf_counter()

    def picture(name: str) -> None:
        scene = render.snapshot(sim)
        render.draw_scene(surface, scene, fonts)
        with output_path(out / name, "frame") as tmp:
            pygame.image.save(surface, tmp)
        frames.append((name, sim.update / UPDATES_PER_SECOND))
        frame_updates.append(sim.update)
        tile = pygame.Surface(TILE)
        render.draw_tile(tile, scene, tile_fonts, sim.round, sim.fight.round_over)
        tiles.append(tile)

    ok = False
    try:
        while sim.update < updates:
            sim.step()
            if on_update is not None:
                on_update(sim)
            if gif_writer is not None and sim.update > gif_first and (sim.update - gif_first) % GIF_EVERY == 0:
                gif_writer.add(sim)
                gif_updates.append(sim.update)
            if pictures and (sim.update % every == 0 or sim.update == updates):
                picture(f"frame_{sim.update / UPDATES_PER_SECOND:06.1f}s.png")
            if len(done) < len(plan) and sim.update == plan[len(done)][0]:
                at, by = plan[len(done)]
                done.append({"at": at, "by": sim.rewind(by)})
                # The pictures of the updates undone go too: they are drawn again as play goes on.
                keep = sum(1 for u in frame_updates if u <= sim.update)
                del frames[keep:], tiles[keep:], frame_updates[keep:]
                if gif_writer is not None:
                    keep = sum(1 for u in gif_updates if u <= sim.update)
                    del gif_writer.frames[keep:], gif_updates[keep:]
        if pictures and not frames:              # zero seconds: still one picture
            picture("frame_0000.0s.png")
        if record is not None:
            sim.save_scenario(record)
        st = sim.fight.stats
        summary = {
            "updates": sim.game.update,
            "grabs": st.grabs,
            "strikes": st.strikes,
            "throws": st.throws,
            "damage": st.damage,
            "seed": int(seed),
            "seconds": updates / UPDATES_PER_SECOND,
            "health": sim.health(),
            "hits": {n: sim.fight.combat(n).hits for n in sim.names},
            "refused": st.refused,
            "round": sim.round,
            "rounds": sim.rounds(),
            "frames": [f for f, _ in frames],
            "contact_sheet": None,
            "gif": None,
            "record": None if record is None else str(record),
            "trace": None if trace is None else str(trace),
            "wall_seconds": 0.0,
            "rewinds": done,
        }
        ok = True
    finally:
        sim.close(keep=ok)                       # a failed run leaves an old trace whole
    if gif_writer is not None and gif_writer.save():
        summary["gif"] = str(gif)
    if sheet:
        summary["contact_sheet"] = "contact_sheet.png"
        contact_sheet(tiles, out / "contact_sheet.png")
    summary["wall_seconds"] = round(time.perf_counter() - t0, 3)
    if pictures:
        with OutputFile(out / "summary.json", "summary") as fp:
            fp.write(json.dumps(summary, indent=2) + "\n")
    return summary


def contact_sheet(tiles, path, columns: int = SHEET_COLUMNS) -> None:
    """Tile the pictures (pygame Surfaces of one size: ``render.draw_tile``'s) into one PNG."""
    pygame = _pygame()
    from scuffle.demo import render

    tiles = list(tiles)
    tw, th = tiles[0].get_size() if tiles else (1, 1)
    cols = max(1, min(columns, len(tiles)))
    rows = max(1, -(-len(tiles) // cols))
    pad = 6
    sheet = pygame.Surface((cols * (tw + pad) + pad, rows * (th + pad) + pad))
    sheet.fill(render.BG)
    for i, tile in enumerate(tiles):
        sheet.blit(tile, (pad + (i % cols) * (tw + pad), pad + (i // cols) * (th + pad)))
    from scuffle.game.runtime.files import output_path
    with output_path(path, "contact sheet") as tmp:
        pygame.image.save(sheet, tmp)


def save_picture(sim, path, size: tuple[int, int] = (1280, 720), show_help: bool = False, inset: int = 0,
                 paused: bool = False, slow: bool = False) -> None:
    """Render one picture of a DemoSim (HUD, inset, optionally the help overlay) to a PNG."""
    pygame = _pygame()
    from scuffle.demo import render

    scene = render.snapshot(sim)
    scene.show_help, scene.inset, scene.paused, scene.slow = show_help, inset, paused, slow
    surface = pygame.Surface(size)
    render.draw_scene(surface, scene, render.Fonts())
    from scuffle.game.runtime.files import output_path
    with output_path(path, "picture") as tmp:
        pygame.image.save(surface, tmp)


def image_stats(path) -> dict:
    """A PNG's size and how much is in it: ``width``, ``height``, ``colours`` (distinct
    colours in a 4-pixel grid sample) and ``std`` (the pixel values' spread)."""
    pygame = _pygame()
    import numpy as np

    img = pygame.image.load(str(path))
    px = pygame.surfarray.array3d(img)[::4, ::4].reshape(-1, 3)
    return {"width": img.get_width(), "height": img.get_height(),
            "colours": int(len(np.unique(px, axis=0))), "std": float(px.std())}
