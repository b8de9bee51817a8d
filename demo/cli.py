"""``scuffle demo``: the window, or the headless run when there is no display.

    scuffle demo                         # the window (p1 on the keyboard, p2 the AI)
    scuffle demo --attract               # the window, AI against AI
    scuffle demo --headless --seconds 20 --out out/demo [--seed 1]
    scuffle demo --record S.toml --trace T.jsonl   # keep the session: scuffle run S.toml replays it
    scuffle demo --headless --gif [PATH]           # an animated GIF of the arena (Pillow)
    scuffle demo --headless --rewind-at 12 --rewind-by 5   # at 12 s go back 5 s, then play on
    scuffle demo --play S.toml           # a scenario in the window (pause, slow motion, rewind)
    scuffle demo --host 7000             # netplay: wait for a peer on port 7000 (p1)
    scuffle demo --join 127.0.0.1:7000   # netplay: join it (p2); --sim-loss P --sim-delay N
    scuffle view SOURCE [--id N]         # the clip viewer (scuffle.demo.view)

With no display (no DISPLAY / WAYLAND_DISPLAY on Linux, SDL_VIDEODRIVER=dummy or
offscreen, a display that fails to open, or SDL falling back to its offscreen or dummy
driver when DISPLAY names a display it cannot reach) it runs headless by itself, with
the same defaults.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from scuffle.demo.headless import DEFAULT_FRAME_EVERY, DEFAULT_OUT, DEFAULT_SECONDS, MAX_REWIND_SECONDS
from scuffle.game.cli.errors import OneLineParser, examples, number, whole
from scuffle.game.runtime.scenario import MAX_HEALTH, MAX_UPDATES as MAX_AT

# Caps on what one command line may ask for (docs/tools.md, "Limits").
MAX_SECONDS = 3600.0          # an hour of game time, 108,000 updates
MAX_PICTURES = 1000           # headless: --seconds / --frame-every frames saved at most
MAX_SIZE = (7680, 4320)       # the largest window or picture, WxH


def parse_size(text: str, least: tuple[int, int]) -> tuple[int, int] | None:
    """``WxH`` -> (w, h) within ``least`` .. MAX_SIZE, or None when it is not."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        return None
    if not (least[0] <= w <= MAX_SIZE[0] and least[1] <= h <= MAX_SIZE[1]):
        return None
    return w, h


def parse_args(argv=None) -> argparse.Namespace:
    p = OneLineParser(prog="scuffle demo",
                      description="The two-fighter demo: a window, or a headless run when there is no display.",
                      **examples("scuffle demo                                  # the window: p1 on the keyboard",
                                 "scuffle demo --attract --seed 7              # AI against AI",
                                 "scuffle demo --headless --seconds 60 --out out/demo",
                                 "scuffle demo --headless --record fight.toml  # the scenario only, no PNGs",
                                 "scuffle demo --headless --seconds 8 --gif demo.gif --gif-from 4.3",
                                 "scuffle demo --headless --rewind-at 12 --rewind-by 5 --record r.toml",
                                 "scuffle demo --play fight.toml               # a scenario in the window",
                                 "scuffle demo --play fight.toml --headless --gif fight.gif",
                                 "scuffle demo --host 7000                     # netplay: p1 here, waiting",
                                 "scuffle demo --join 127.0.0.1:7000           # netplay: p2 (another terminal)"))
    p.add_argument("--headless", action="store_true", help="run attract mode without a display")
    p.add_argument("--seconds", type=float, default=None, metavar="S",
                   help=f"headless: game time to run (default {DEFAULT_SECONDS:g}; with --play, the whole scenario)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"headless: write the frames, contact sheet and summary.json to DIR (default {DEFAULT_OUT}; "
                        f"with --record, --trace or --gif only when --out is given)")
    p.add_argument("--seed", type=whole(-(1 << 63), (1 << 63) - 1), default=1, metavar="N",
                   help="the AI seed: the same seed gives the same fight (default 1)")
    p.add_argument("--frame-every", type=float, default=DEFAULT_FRAME_EVERY, metavar="S",
                   help=f"headless: seconds of game time between saved frames (default {DEFAULT_FRAME_EVERY:g})")
    p.add_argument("--attract", action="store_true", help="window: start in attract mode (AI against AI)")
    p.add_argument("--size", default="1280x720", metavar="WxH", help="window / frame size WxH (default 1280x720)")
    p.add_argument("--screenshot", metavar="PNG", help="window: save the window at update --at, then quit")
    p.add_argument("--at", type=whole(0, MAX_AT), default=300, metavar="UPDATE",
                   help="window: the update of --screenshot (default 300)")
    p.add_argument("--record", metavar="SCENARIO.toml",
                   help="write the session (both fighters, every command at its update) as a scenario")
    p.add_argument("--trace", metavar="TRACE.jsonl", help="write the demo's trace (scuffle run S.toml --trace gives the same bytes)")
    p.add_argument("--gif", nargs="?", const="", default=None, metavar="PATH",
                   help="headless: an animated GIF of the arena (default PATH: OUT/demo.gif; needs Pillow)")
    p.add_argument("--gif-from", type=number(0, MAX_SECONDS), default=0.0, metavar="SECONDS",
                   help="headless: the GIF starts at SECONDS of game time (default 0)")
    p.add_argument("--play", metavar="SCENARIO.toml",
                   help="play a scenario instead of the fight: in the window with pause (P), single step (N), "
                        "slow motion (M) and rewind (R held); headless, its frames, contact sheet and --gif")
    p.add_argument("--data", metavar="DIR", action="append", default=[],
                   help="with --play: a folder the scenario may read files from besides its own (repeatable)")
    p.add_argument("--health", type=number(0, MAX_HEALTH, lo_open=True), default=100.0, metavar="H",
                   help="each fighter's health, every round (default 100)")
    p.add_argument("--rewind-at", type=number(0, MAX_SECONDS), action="append", default=[], metavar="T",
                   help="headless: rewind when the fight reaches T seconds of game time (repeatable, "
                        "each with its --rewind-by), then play on to --seconds")
    p.add_argument("--rewind-by", type=number(0, MAX_REWIND_SECONDS, lo_open=True), action="append", default=[],
                   metavar="S", help=f"headless: how far that rewind goes back, in seconds "
                                     f"(at most {MAX_REWIND_SECONDS:g}, and not before the start)")
    net = p.add_argument_group("netplay (two processes, one fight; docs/netplay.md)")
    net.add_argument("--host", metavar="[ADDR:]PORT", help="wait for a peer on PORT and play p1")
    net.add_argument("--join", metavar="HOST:PORT", help="join the peer at HOST:PORT and play p2")
    net.add_argument("--sim-loss", type=number(0, 1), default=0.0, metavar="P",
                     help="netplay: lose each datagram sent with probability P (a simulated network)")
    net.add_argument("--sim-delay", type=whole(0, 300), default=0, metavar="N",
                     help="netplay: deliver each datagram sent N updates late (a simulated network)")
    net.add_argument("--rate", type=number(1, 1000), default=30.0, metavar="HZ",
                     help="netplay: updates per second of wall time (default 30)")
    net.add_argument("--timeout", type=number(0.1, 3600), default=5.0, metavar="S",
                     help="netplay: end the session when the peer is silent this long (default 5 s)")
    argv = sys.argv[1:] if argv is None else list(argv)
    a = p.parse_args(argv)
    a.seconds_given = any(x == "--seconds" or x.startswith("--seconds=") for x in argv)
    if a.host and a.join:
        p.error("--host and --join: one or the other (the host plays p1, the one who joins p2)")
    a.whole = a.seconds is None                 # --play without --seconds: the whole scenario
    if a.seconds is None:
        a.seconds = DEFAULT_SECONDS
    if a.play is not None and (a.record or a.trace or a.rewind_at):
        flag = "--record" if a.record else ("--trace" if a.trace else "--rewind-at")
        p.error(f"{flag} goes with the fight, not --play (a scenario's trace: scuffle run S.toml --trace T.jsonl)")
    if a.play is not None and (a.host or a.join):
        p.error("--play plays a scenario here: not with --host or --join")
    size = parse_size(a.size, (320, 240))
    if size is None:
        p.error(f"--size {a.size!r}: WxH, from 320x240 to {MAX_SIZE[0]}x{MAX_SIZE[1]}")
    a.size = size
    if not (math.isfinite(a.seconds) and 0 <= a.seconds <= MAX_SECONDS):
        p.error(f"--seconds {a.seconds!r}: a number of seconds from 0 to {MAX_SECONDS:g}")
    if not (math.isfinite(a.frame_every) and a.frame_every > 0):
        p.error(f"--frame-every {a.frame_every!r}: a number of seconds > 0")
    if a.headless and not (a.play and a.whole) and a.seconds / a.frame_every > MAX_PICTURES:
        p.error(f"--seconds {a.seconds:g} / --frame-every {a.frame_every:g} would save "
                f"{int(a.seconds / a.frame_every)} pictures; at most {MAX_PICTURES}")
    if not (math.isfinite(a.health) and a.health > 0):
        p.error("--health must be a number > 0")
    if not (math.isfinite(a.gif_from) and a.gif_from >= 0):
        p.error("--gif-from must be a number >= 0")
    if len(a.rewind_at) != len(a.rewind_by):
        p.error(f"--rewind-at and --rewind-by go in pairs: got {len(a.rewind_at)} --rewind-at and "
                f"{len(a.rewind_by)} --rewind-by")
    for t, b in zip(a.rewind_at, a.rewind_by):
        at, by = round(t * 30), round(b * 30)
        if at > round(a.seconds * 30):
            p.error(f"--rewind-at {t:g}: after the end of the run (--seconds {a.seconds:g})")
        if by < 1:
            p.error(f"--rewind-by {b:g}: less than one update (1/30 s)")
        if by > at:
            p.error(f"--rewind-by {b:g}: goes back before the start (--rewind-at {t:g})")
    a.rewinds = list(zip(a.rewind_at, a.rewind_by))
    # Outputs only where asked: with --record, --trace or --gif the frames, the sheet and
    # summary.json are written only when --out names their directory.
    a.pictures = a.out is not None or not (a.record or a.trace or a.gif is not None)
    if a.out is None:
        a.out = DEFAULT_OUT
    if a.gif == "":
        a.gif = os.path.join(a.out, "demo.gif")
    return a


def no_display() -> str | None:
    """Why there is no display to open, or None."""
    driver = os.environ.get("SDL_VIDEODRIVER", "").lower()
    if driver in ("dummy", "offscreen"):
        return f"SDL_VIDEODRIVER={driver}"
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "no DISPLAY or WAYLAND_DISPLAY"
    return None


def check_files(a: argparse.Namespace, headless: bool) -> str | None:
    """The one-line error when two outputs name one file (--record, --trace, --gif, the
    screenshot, headless: OUT/summary.json and OUT/contact_sheet.png), or one is a
    symbolic link or a directory; None when they are fine (files.check_outputs)."""
    from scuffle.game.runtime.files import OutputError, check_outputs

    outs = {"--record": a.record, "--trace": a.trace}
    if headless:
        outs.update({"--gif": a.gif, "summary": os.path.join(a.out, "summary.json"),
                     "contact sheet": os.path.join(a.out, "contact_sheet.png")})
    else:
        outs["--screenshot"] = a.screenshot
    try:
        check_outputs(outs)
    except OutputError as exc:
        return f"scuffle demo: error: {exc}"
    return None


def headless(a: argparse.Namespace, why: str | None = None) -> int:
    from scuffle.demo.headless import PillowMissing, run_headless

    bad = check_files(a, headless=True)
    if bad:
        print(bad, file=sys.stderr)
        return 2
    if why:
        print(f"demo: no display ({why}); running headless", file=sys.stderr)
    try:
        s = run_headless(seconds=a.seconds, out=a.out, seed=a.seed, frame_every=a.frame_every, size=a.size,
                         record=a.record, trace=a.trace, gif=a.gif, gif_from=a.gif_from, health=a.health,
                         pictures=a.pictures, rewinds=a.rewinds)
    except PillowMissing as exc:
        print(f"scuffle demo: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:                 # OutputError: a file that cannot be written, named
        print(f"scuffle demo: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"scuffle demo: error: {exc.filename or a.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"demo: {s['updates']} updates ({s['seconds']:g} s, seed {s['seed']}) in {s['wall_seconds']:.1f} s: "
          f"grabs {s['grabs']}, strikes {s['strikes']}, throws {s['throws']}, damage {s['damage']:g}")
    for r in s["rewinds"]:
        print(f"demo: rewound {r['by']} updates at update {r['at']}")
    for r in s["rounds"]:
        print(f"demo: round {r['round']}: {r['winner'] or 'nobody'} won, {r['loser']} K.O. at update {r['ko_update']}")
    if a.pictures:
        print(f"demo: wrote {len(s['frames'])} frames, {s['contact_sheet']} and summary.json to {os.path.abspath(a.out)}")
    for what in ("gif", "record", "trace"):
        if s[what]:
            print(f"demo: wrote {what} {s[what]}")
    return 0


def open_window(size: tuple[int, int]) -> tuple[Any, str | None]:
    """The demo's window of ``size``: (the pygame screen, None), or (None, why there is
    none: no display, pygame's error, SDL falling back to a driver that shows nothing),
    pygame's display closed again then, for a caller that runs headless instead."""
    why = no_display()
    if why:
        return None, why
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    from scuffle.demo.quiet import sdl_quiet
    try:
        with sdl_quiet():                  # SDL's noise while it looks for a driver
            pygame.display.init()
            screen = pygame.display.set_mode(size, pygame.RESIZABLE)
    except pygame.error as e:
        pygame.display.quit()
        return None, f"pygame.display: {e}"
    got = offscreen_driver(pygame)
    if got:                                # SDL fell back to a driver that shows nothing
        pygame.display.quit()
        return None, f"SDL gave the {got!r} video driver"
    return screen, None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        a = parse_args(argv)
    except SystemExit as exc:              # usage errors (already printed) and --help
        return exc.code if isinstance(exc.code, int) else 2
    if a.play is not None:
        from scuffle.demo.play import play
        return play(a, open_window)
    if a.host or a.join:
        return netplay(a)
    if a.headless or a.gif is not None or a.rewinds:     # --rewind-at is a headless run's
        return headless(a)
    screen, why = open_window(a.size)
    if screen is None:
        return headless(a, why)
    import pygame
    bad = check_files(a, headless=False)
    if bad:
        pygame.display.quit()
        print(bad, file=sys.stderr)
        return 2
    from scuffle.demo.app import App

    try:
        App(seed=a.seed, attract=a.attract, size=a.size, screen=screen, screenshot=a.screenshot,
            screenshot_at=a.at, record=a.record, trace=a.trace, health=a.health).run()
    except ValueError as exc:              # OutputError: a file that cannot be written, named
        pygame.display.quit()
        print(f"scuffle demo: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0


def netplay(a: argparse.Namespace) -> int:
    """``--host`` / ``--join``: one peer of a netplay fight (scuffle.demo.netplay), in a
    window, or headless (``--headless`` or no display; then the AI plays)."""
    from scuffle.demo.netplay import run_netplay
    from scuffle.game.net import LinkError, NetError

    window = None
    why = None if a.headless else no_display()
    if not a.headless and why is None:
        from scuffle.demo.netplay import make_window
        window = make_window(a.size, attract=a.attract)
    elif why and not a.headless:
        print(f"demo: no display ({why}); netplay headless, the AI plays", file=sys.stderr)
    seconds = a.seconds if (a.seconds_given or window is None) else None
    out = a.out if (a.pictures and window is None) or a.seconds_given else None
    try:
        s = run_netplay(host=a.host, join=a.join, seconds=seconds, attract=a.attract or window is None, seed=a.seed,
                        sim_loss=a.sim_loss, sim_delay=a.sim_delay, record=a.record, out=out, health=a.health,
                        rate=a.rate, timeout=a.timeout, window=window,
                        log=lambda m: print(m, file=sys.stderr))
    except NetError as exc:
        print(f"scuffle demo: {exc}", file=sys.stderr)
        return 1
    except (LinkError, ValueError) as exc:
        print(f"scuffle demo: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    n = s["netplay"]
    print(f"demo: netplay as {s['player']}: {s['updates']} updates confirmed {n['confirmed_update']}, "
          f"checksum {n['confirmed_checksum']}, desyncs {n['desyncs']}, rollbacks {n['rollbacks']} "
          f"(max {n['max_depth']}), rtt {n['rtt_ms']:.0f} ms")
    if s.get("record"):
        print(f"demo: wrote record {s['record']}")
    return 0 if n["desyncs"] == 0 else 1


# SDL's video drivers that open no visible window: the demo runs headless on them.
OFFSCREEN_DRIVERS = ("offscreen", "dummy")


def offscreen_driver(pygame) -> str | None:
    """The video driver SDL actually opened when it shows nothing (``offscreen``,
    ``dummy``: SDL falls back to them when DISPLAY names a display it cannot reach),
    else None."""
    try:
        driver = (pygame.display.get_driver() or "").lower()
    except pygame.error:
        return None
    return driver if driver in OFFSCREEN_DRIVERS else None

