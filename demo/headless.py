"""The demo without a display: attract mode for S seconds of game time, pictures and a summary.

    run_headless(seconds=60, out="out/demo", seed=1) -> summary dict

writes ``frame_0002.0s.png``... (one picture every ``frame_every`` seconds of game time,
and the last update's), ``contact_sheet.png`` (the frames tiled, with their times) and
``summary.json``. Only the saved frames are rendered, onto an offscreen Surface, so a
minute of game time (1800 updates) takes a few seconds.

summary.json (pinned names): ``updates``, ``grabs``, ``strikes``, ``throws``, ``damage``;
also ``seed``, ``seconds``, ``health`` {name: value}, ``hits`` {name: hits taken},
``refused``, ``frames`` (file names), ``contact_sheet``, ``wall_seconds``.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

__all__ = ["run_headless", "contact_sheet", "save_picture", "image_stats", "DEFAULT_SECONDS", "DEFAULT_OUT", "DEFAULT_FRAME_EVERY"]

DEFAULT_SECONDS = 20.0
DEFAULT_OUT = "out/demo"
DEFAULT_FRAME_EVERY = 2.0
UPDATES_PER_SECOND = 30
THUMB = (384, 216)
SHEET_COLUMNS = 5


def _pygame():
    """pygame with the dummy video driver (nothing here opens a window)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame
    pygame.font.init()
    return pygame


def run_headless(seconds: float = DEFAULT_SECONDS, out: str | os.PathLike = DEFAULT_OUT, seed: int = 1,
                 frame_every: float = DEFAULT_FRAME_EVERY, size: tuple[int, int] = (1280, 720),
                 on_update: Callable | None = None, sheet: bool = True) -> dict:
    """Run attract mode for ``seconds`` of game time; write the frames, the sheet and the summary.

    ``on_update(sim)`` is called after every update (tests watch the world through it).
    Returns the summary (also written to ``out/summary.json``).
    """
    pygame = _pygame()
    from scuffle.demo import render
    from scuffle.demo.app import DemoSim

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    updates = max(0, int(round(float(seconds) * UPDATES_PER_SECOND)))
    every = max(1, int(round(float(frame_every) * UPDATES_PER_SECOND)))
    fonts = render.Fonts()
    surface = pygame.Surface(size)
    sim = DemoSim(seed=seed, attract=True)
    frames: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    try:
        for _ in range(updates):
            sim.step()
            if on_update is not None:
                on_update(sim)
            if sim.update % every == 0 or sim.update == updates:
                scene = render.snapshot(sim)
                render.draw_scene(surface, scene, fonts)
                name = f"frame_{sim.update / UPDATES_PER_SECOND:06.1f}s.png"
                pygame.image.save(surface, str(out / name))
                frames.append((name, sim.update / UPDATES_PER_SECOND))
        if not frames:                           # zero seconds: still one picture
            render.draw_scene(surface, render.snapshot(sim), fonts)
            pygame.image.save(surface, str(out / "frame_0000.0s.png"))
            frames.append(("frame_0000.0s.png", 0.0))
        wall = time.perf_counter() - t0
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
            "frames": [f for f, _ in frames],
            "contact_sheet": None,
            "wall_seconds": round(wall, 3),
        }
    finally:
        sim.close()
    if sheet:
        summary["contact_sheet"] = "contact_sheet.png"
        contact_sheet([(out / f, t) for f, t in frames], out / "contact_sheet.png", fonts)
    summary["wall_seconds"] = round(time.perf_counter() - t0, 3)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def contact_sheet(frames, path, fonts=None, thumb=THUMB, columns: int = SHEET_COLUMNS) -> None:
    """Tile the saved frames (path, game seconds) into one PNG, each labelled with its time."""
    pygame = _pygame()
    from scuffle.demo import render

    fonts = fonts or render.Fonts()
    frames = list(frames)
    cols = max(1, min(columns, len(frames)))
    rows = max(1, -(-len(frames) // cols))
    pad = 6
    sheet = pygame.Surface((cols * (thumb[0] + pad) + pad, rows * (thumb[1] + pad) + pad))
    sheet.fill(render.BG)
    for i, (p, t) in enumerate(frames):
        img = pygame.image.load(str(p))
        img = pygame.transform.smoothscale(img, thumb)
        x = pad + (i % cols) * (thumb[0] + pad)
        y = pad + (i // cols) * (thumb[1] + pad)
        sheet.blit(img, (x, y))
        label = fonts.mono_bold.render(f"{t:.1f}s", True, render.ACCENT)
        bg = pygame.Surface((label.get_width() + 8, label.get_height() + 4))
        bg.fill((0, 0, 0))
        sheet.blit(bg, (x + 4, y + thumb[1] - bg.get_height() - 4))
        sheet.blit(label, (x + 8, y + thumb[1] - label.get_height() - 6))
    pygame.image.save(sheet, str(path))


def save_picture(sim, path, size: tuple[int, int] = (1280, 720), show_help: bool = False, inset: int = 0,
                 paused: bool = False, slow: bool = False) -> None:
    """Render one picture of a DemoSim (HUD, inset, optionally the help overlay) to a PNG."""
    pygame = _pygame()
    from scuffle.demo import render

    scene = render.snapshot(sim)
    scene.show_help, scene.inset, scene.paused, scene.slow = show_help, inset, paused, slow
    surface = pygame.Surface(size)
    render.draw_scene(surface, scene, render.Fonts())
    pygame.image.save(surface, str(path))


def image_stats(path) -> dict:
    """A PNG's size and how much is in it: ``width``, ``height``, ``colours`` (distinct
    colours in a 4-pixel grid sample) and ``std`` (the pixel values' spread)."""
    pygame = _pygame()
    import numpy as np

    img = pygame.image.load(str(path))
    px = pygame.surfarray.array3d(img)[::4, ::4].reshape(-1, 3)
    return {"width": img.get_width(), "height": img.get_height(),
            "colours": int(len(np.unique(px, axis=0))), "std": float(px.std())}
