"""``scuffle demo --play SCENARIO.toml``: a scripted fight played in the demo's window.

In the window the scenario runs at 30 updates per second with the demo's keys: P pause,
N single step while paused, M slow motion (1/4 speed), R held rewinds (up to 10 s; play
goes on from there, the scenario's commands run again), H help, Tab the side-view inset,
F12 a screenshot, Esc quits. The keys that move or act do nothing (every human is
scripted). At the scenario's end the window pauses on its last update.

Without a display (or with ``--headless``) it plays ``--seconds`` of the scenario (default:
all of it) and writes, as the headless demo does, a PNG every ``--frame-every`` seconds
and ``contact_sheet.png`` to ``--out`` and, with ``--gif``, an animated GIF.

Rejected, one line each on stderr, status 2: a scenario that does not load (the line and
field, as ``scuffle run`` says), an output that cannot be written or is there already
and not a regular file.
"""
from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from typing import Any, Callable

__all__ = ["play"]


def _short(text: object, width: int = 80) -> str:
    t = str(text)
    return t if len(t) <= width else t[:width - 3] + "..."


def _fail(message: str) -> int:
    print(f"scuffle demo: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _load(a: argparse.Namespace):
    """The scenario of ``--play``; ValueError (ScenarioError: FILE:LINE: FIELD: ...) when it
    does not load, a trace given instead included."""
    from scuffle.game.fighters import registry
    from scuffle.game.runtime.scenario import load_scenario

    path = a.play
    if path.lower().endswith((".jsonl", ".json")):
        raise ValueError(f"{_short(path)} is a trace (JSON lines), not a scenario: --play takes a scenario TOML")
    return load_scenario(path, registry(), data=a.data)


def _not_regular(paths) -> str | None:
    """The first output there already that is not a regular file (never replaced), as an
    error line, or None."""
    for what, path in paths:
        if path is None:
            continue
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{what} {_short(path)}: {exc.strerror or exc}"
        if not stat.S_ISREG(mode):
            return f"{what} {_short(path)}: there already and not a regular file (not replaced)"
    return None


def play(a: argparse.Namespace, open_window: Callable[[tuple[int, int]], tuple[Any, str | None]]) -> int:
    """Play ``a.play`` in the window, or headless (see the module docstring); the exit
    status. ``open_window``: the demo's window or why there is none (scuffle.demo.cli),
    which falls back to the headless run."""
    try:
        sc = _load(a)
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    if a.headless or a.gif is not None:
        return _headless(a, sc)
    screen, why = open_window(a.size)
    if screen is None:
        return _headless(a, sc, why)
    import pygame
    bad = _not_regular([("--screenshot", a.screenshot)])
    if bad:
        pygame.display.quit()
        return _fail(bad)
    from scuffle.demo.app import App
    from scuffle.demo.playback import ScenarioSim

    sim = ScenarioSim(sc)
    app = App(size=a.size, screen=screen, screenshot=a.screenshot, screenshot_at=a.at, sim=sim)
    app.caption = f"scuffle: {_short(os.path.basename(sc.source), 60)} (H for help)"
    try:
        app.run()
    except ValueError as exc:              # a limit of the original hit by a command, or an output
        pygame.display.quit()
        return _fail(str(exc))
    return 0


def _headless(a: argparse.Namespace, sc, why: str | None = None) -> int:
    """The scenario's pictures without a window (see the module docstring)."""
    from scuffle.demo.headless import PillowMissing
    from scuffle.demo.playback import Pictures, ScenarioSim
    from scuffle.game.runtime.files import OutputError, check_outputs

    end = sc.updates if a.whole else min(sc.updates, int(round(a.seconds * 30)))
    every = max(1, int(round(a.frame_every * 30)))
    if a.pictures and end // every > 1000:
        return _fail(f"--frame-every {a.frame_every:g} over {end} updates would save {end // every} pictures; "
                     f"at most 1000")
    out = a.out if a.pictures else None
    sheet = os.path.join(out, "contact_sheet.png") if out is not None else None
    try:
        check_outputs({"--gif": a.gif, "contact sheet": sheet}, {"scenario": a.play})
    except OutputError as exc:
        return _fail(str(exc))
    if out is not None and os.path.lexists(out) and (os.path.islink(out) or not os.path.isdir(out)):
        return _fail(f"--out {_short(out)}: not a folder")
    bad = _not_regular([("--gif", a.gif), ("contact sheet", sheet)])
    if bad:
        return _fail(bad)
    if why:
        print(f"demo: no display ({why}); playing headless", file=sys.stderr)
    t0 = time.perf_counter()
    try:
        pictures = Pictures(gif=a.gif, frames=out, frame_every=a.frame_every, last=end, size=a.size)
    except PillowMissing as exc:
        return _fail(str(exc))
    sim = ScenarioSim(sc, rewind_depth=0)
    try:
        while sim.update < end:
            sim.step()
            pictures.add(sim.game)
        drawn = pictures.finish()
    except (ValueError, OSError) as exc:     # a limit of the original (ScenarioError), an output
        sim.close()
        return _fail(str(exc))
    st = sim.fight.stats if sim.fight is not None else None
    counts = "" if st is None else (f": grabs {st.grabs}, strikes {st.strikes}, throws {st.throws}, "
                                    f"damage {st.damage:g}")
    print(f"demo: played {_short(sc.source)}: {sim.update} of {sc.updates} updates in "
          f"{time.perf_counter() - t0:.1f} s{counts}")
    sim.close()
    if drawn["frames"]:
        print(f"demo: wrote {len(drawn['frames'])} frames and contact_sheet.png to {os.path.abspath(out or '.')}")
    if drawn["gif"]:
        print(f"demo: wrote gif {drawn['gif']} ({drawn['gif_pictures']} pictures)")
    return 0
