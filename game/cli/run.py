"""``scuffle run SCENARIO.toml [--trace OUT.jsonl] [--pose] [--strict] [-v] [--data DIR] [--engine reference]
[--snapshot-at U --snapshot-out F] [--from-snapshot F] [--gif F.gif] [--frames DIR [--frame-every S]]``:
run a scenario.

Pictures (the demo draws them; pygame, and Pillow for the GIF): ``--gif`` an animated
GIF of the arena, ``--frames DIR`` a PNG of the whole scene every ``--frame-every``
seconds and of the last update, with ``contact_sheet.png`` (captioned tiles). A path
there already that is not a regular file is refused before anything runs.

Validates the whole file first (no update runs on a bad file), then runs it and
writes the trace. Errors are one line on stderr (``scuffle run: error: FILE:LINE:
FIELD: ...``), status 2: a bad file, or a command that hits the task pool, stack or
queue limit at run time (the trace then holds the updates before it).

The fight rules answer every action command (an ActionResult): each refused one is one
line on stderr (``FILE:LINE: update U: p1 throw: refused (not_holding: ...)``), and
``-v`` adds a line for each accepted one; a summary line counts them. ``--strict``
exits 1 when any command was refused.

Files: the trace is written to a temporary file beside it and renamed when the run
ends (a run stopped by a limit of the original keeps the updates before it, as above);
any other failure leaves an existing trace whole. The trace may not be the scenario or
a file it reads (refused before anything runs), nor a symbolic link. The scenario reads
files below its own folder only, and below ``--data DIR`` (repeatable) or the folders
of SCUFFLE_DATA.

Snapshots: ``--snapshot-at U --snapshot-out F`` writes the whole state after
U updates to F (Game.snapshot's byte form); ``--from-snapshot F`` resumes the scenario
from such a file: the run goes on from its update, and the trace holds the updates from
there (``scuffle diff`` of two traces names the update to cut at). A snapshot file that
is not one, or not of this scenario, is one line on stderr, status 2.
"""
from __future__ import annotations

import argparse
import sys

from scuffle.anim.base.limits import INT32_MAX
from scuffle.game.cli.errors import whole
from scuffle.game.fighters import registry
from scuffle.game.runtime.scenario import ScenarioError, load_scenario, run_scenario

__all__ = ["run_arguments", "cmd_run", "EXIT_REFUSED"]

EXIT_REFUSED = 1                 # --strict: a command was refused


def run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", metavar="SCENARIO.toml", help="the scenario file (docs/scenarios.md)")
    p.add_argument("--trace", metavar="OUT.jsonl", help="write the trace here ('-' for stdout)")
    p.add_argument("--pose", action="store_true", help="add each human's sampled pose to the trace")
    p.add_argument("--strict", action="store_true",
                   help=f"exit {EXIT_REFUSED} when the fight rules refused any command")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print every action command's answer, accepted ones too (stderr)")
    p.add_argument("--data", metavar="DIR", action="append", default=[],
                   help="a folder the scenario may read files from besides its own (repeatable; "
                        "also SCUFFLE_DATA, folders separated by ':')")
    p.add_argument("--snapshot-at", type=_update, metavar="U",
                   help="with --snapshot-out: save the whole state after U updates (0 to the scenario's updates)")
    p.add_argument("--snapshot-out", metavar="F", help="the file --snapshot-at writes (a snapshot's bytes)")
    p.add_argument("--from-snapshot", metavar="F",
                   help="resume from a snapshot file of this scenario (--snapshot-out): the run and the trace "
                        "go on from its update")
    p.add_argument("--gif", metavar="F.gif",
                   help="draw the fight as an animated GIF of the arena, 15 pictures per second of game time "
                        "(needs pygame and Pillow: pip install 'scuffle[demo,gif]')")
    p.add_argument("--frames", metavar="DIR",
                   help="draw a PNG of the whole scene every --frame-every seconds (and of the last update) into "
                        "DIR, with contact_sheet.png, one captioned tile per frame (needs pygame: "
                        "pip install 'scuffle[demo]')")
    p.add_argument("--frame-every", type=_seconds, default=2.0, metavar="S",
                   help="with --frames: seconds of game time between frames, at least 0.1 (default 2)")
    p.add_argument("--checksum", action="store_true",
                   help="print the state digest of the world after the last update (Game.checksum, the scenario "
                        "runner's own bookkeeping left out): a netplay recording's confirmed checksum")
    p.add_argument("--engine", choices=("compiled", "reference"), default="compiled",
                   help="the animation engine: the compiled one (default), or the reference, the "
                        "plain-Python model of the spec (slow; to debug a scenario)")


def _cut(text: str, n: int = 80) -> str:
    """``text`` cut to about ``n`` characters (an error line quotes a path as given)."""
    text = str(text)
    return text if len(text) <= n else text[:n - 3] + "..."


def _update(text: str) -> int:
    """An update number (a whole number 0 to 2^31 - 1), for --snapshot-at; the error line
    quotes at most 40 characters of the text."""
    return whole(0, INT32_MAX)(text)


MAX_FRAMES = 1000                # --frames: at most this many pictures in one run


def _seconds(text: str) -> float:
    """A number of seconds > 0 (at most an hour), for --frame-every."""
    import math
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_short(text)!r} is not a number of seconds") from None
    if not (math.isfinite(v) and 0.1 <= v <= 3600):      # the frames are named by tenths of seconds
        raise argparse.ArgumentTypeError(f"{_short(text)!r}: a number of seconds from 0.1 to 3600")
    return v


def _short(text: object, width: int = 80) -> str:
    """A value for an error line: at most ``width`` characters of it."""
    t = str(text)
    return t if len(t) <= width else t[:width - 3] + "..."


def _picture_outputs(args: argparse.Namespace, sc, first: int) -> list[tuple[str, str]]:
    """The files --gif and --frames will write, as (what, path): the GIF, each frame (one
    every --frame-every seconds from update ``first`` to the last, and the last) and the
    contact sheet. Rejected (CliError, one line): no ``args.pictures`` to draw them (the
    game's ``main`` called without the demo's), pygame or Pillow missing (naming the
    extra to install), a --frames DIR that is not a folder, too many frames, a path there
    already that is not a regular file (a folder, a link, a device: never replaced)."""
    import importlib.util
    import os
    import stat
    from scuffle.game.cli.errors import CliError

    gif, frames = getattr(args, "gif", None), getattr(args, "frames", None)
    if gif is None and frames is None:
        return []
    if getattr(args, "pictures", None) is None:    # the demo draws them: the package's face hands it in
        raise CliError(f"--{'gif' if gif is not None else 'frames'} needs the demo's pictures: "
                       "run it through the scuffle command (scuffle.cli.main)")
    if importlib.util.find_spec("pygame") is None:
        extra = "demo,gif" if gif is not None else "demo"
        raise CliError(f"--{'gif' if gif is not None else 'frames'} draws with pygame, which is not installed: "
                       f"pip install 'scuffle[{extra}]'")
    if gif is not None and importlib.util.find_spec("PIL") is None:
        raise CliError("--gif needs Pillow, which is not installed: pip install 'scuffle[gif]'")
    outs: list[tuple[str, str]] = []
    if gif is not None:
        outs.append(("--gif", gif))
    if frames is not None:
        if os.path.lexists(frames) and (os.path.islink(frames) or not os.path.isdir(frames)):
            raise CliError(f"--frames {_short(frames)}: not a folder")
        every = max(1, int(round(args.frame_every * 30)))
        ups = [u for u in range(first + 1, sc.updates + 1) if u % every == 0]
        if sc.updates > first and (not ups or ups[-1] != sc.updates):
            ups.append(sc.updates)
        if len(ups) > MAX_FRAMES:
            raise CliError(f"--frames: {len(ups)} frames (--frame-every {args.frame_every:g} over "
                           f"{sc.updates} updates); at most {MAX_FRAMES}")
        names = dict.fromkeys(f"frame_{u / 30:06.1f}s.png" for u in ups)   # the last may share its tenth
        outs += [("frame", os.path.join(frames, name)) for name in names]
        outs.append(("contact sheet", os.path.join(frames, "contact_sheet.png")))
    for what, path in outs:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CliError(f"{what} {_short(path)}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise CliError(f"{what} {_short(path)}: there already and not a regular file (not replaced)")
    return outs


def _snapshot_args(args: argparse.Namespace, sc):
    """The snapshot flags checked: (the start Snapshot or None, the update to save at or
    None). Rejected (CliError, one line): --snapshot-at without --snapshot-out (or the
    reverse), an update past the scenario's, a file that is not a snapshot."""
    from scuffle.game.cli.errors import CliError
    from scuffle.game.runtime.snapshot import Snapshot, SnapshotError

    at, out = getattr(args, "snapshot_at", None), getattr(args, "snapshot_out", None)
    if (at is None) != (out is None):
        raise CliError("--snapshot-at and --snapshot-out go together")
    if at is not None and at > sc.updates:
        raise CliError(f"--snapshot-at {at}: the scenario has {sc.updates} updates")
    start = None
    path = getattr(args, "from_snapshot", None)
    if path is not None:
        try:
            start = Snapshot.read(path)         # a regular file within the budget, data only
        except OSError as exc:
            raise CliError(f"--from-snapshot {_cut(path)}: {exc.strerror or exc}") from None
        except SnapshotError as exc:
            raise CliError(f"--from-snapshot {_cut(path)}: {exc}") from None
        if start.engine != args.engine:
            raise CliError(f"--from-snapshot {path}: a snapshot of the {start.engine} engine (--engine {start.engine})")
        if at is not None and at < start.update:
            raise CliError(f"--snapshot-at {at}: before the snapshot's update {start.update}")
    return start, at


def _looks_like_trace(path: str) -> bool:
    """Whether ``path`` is a trace (JSON lines) rather than a scenario: a regular file
    named .jsonl / .json, or whose first non-blank byte is ``{`` (no TOML starts so)."""
    import os
    import stat
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return path.lower().endswith((".jsonl", ".json")) or head.lstrip()[:1] == b"{"


def cmd_run(args: argparse.Namespace) -> int:
    from scuffle.game.cli.errors import CliError  # the CLI's one-line error type
    from scuffle.game.runtime.files import OutputError, OutputFile, check_outputs, write_bytes

    if _looks_like_trace(args.scenario):
        shown = args.scenario if len(args.scenario) <= 80 else args.scenario[:77] + "..."
        raise CliError(f"{shown} is a trace (JSON lines), not a scenario: 'scuffle run' takes a scenario "
                       f"TOML (docs/scenarios.md); to compare two traces: scuffle diff A.jsonl B.jsonl")
    try:
        sc = load_scenario(args.scenario, registry(), data=args.data)
    except ScenarioError as exc:
        raise CliError(str(exc)) from None
    inputs = {"scenario": args.scenario, "snapshot (--from-snapshot)": getattr(args, "from_snapshot", None),
              **{f"file {f!r} of the scenario": f for f in sc.files}}
    outs = {"trace": args.trace, "snapshot": getattr(args, "snapshot_out", None)}
    try:
        check_outputs(outs, inputs)
    except OutputError as exc:
        raise CliError(str(exc)) from None
    start, at = _snapshot_args(args, sc)
    pictures_out = _picture_outputs(args, sc, 0 if start is None else start.update)
    if pictures_out:
        outs.update({f"{what} {i}" if what == "frame" else what: path
                     for i, (what, path) in enumerate(pictures_out)})
        try:
            check_outputs(outs, inputs)
        except OutputError as exc:
            raise CliError(str(exc)) from None
    saved: list = []

    def keep(snapshot) -> None:
        saved.append(snapshot.to_bytes())       # while the Game is open
    snap = {"engine": args.engine, "start": start, "snapshot_at": at, "on_snapshot": keep}
    from scuffle.anim.playback.warmup import announce_compile
    announce_compile()                  # a cold numba cache: said now; the first step compiles what it runs
    counts = {"accepted": 0, "refused": 0}
    pictures = None
    if pictures_out:
        pictures = args.pictures(gif=args.gif, frames=args.frames, frame_every=args.frame_every, last=sc.updates)
        snap["on_update"] = pictures.add

    def answered(cmd, result) -> None:
        if cmd.kind != "action" or result is None:
            return
        ok = bool(result)
        counts["accepted" if ok else "refused"] += 1
        if not ok or args.verbose:
            where = f"{sc.source}:{cmd.line}" if cmd.line else sc.source
            print(f"{where}: {result}", file=sys.stderr)

    try:
        if args.trace in (None, ""):
            game = run_scenario(sc, on_command=answered, **snap)
        elif args.trace == "-":
            game = run_scenario(sc, sys.stdout, pose=args.pose, on_command=answered, **snap)
        else:
            out = OutputFile(args.trace, "trace")       # OutputError: one line naming the file
            try:
                game = run_scenario(sc, out.fp, pose=args.pose, on_command=answered, **snap)
            except ScenarioError:
                out.close(keep=True)        # a limit of the original: the updates before it
                raise
            except BaseException:
                out.close(keep=False)       # anything else: an existing trace stays whole
                raise
            try:
                out.close()
            except BaseException:
                game.close()
                raise
    except ScenarioError as exc:          # a command hit a limit at run time
        raise CliError(str(exc)) from None
    if saved:
        try:
            write_bytes(args.snapshot_out, saved[0], "snapshot")
        except OutputError as exc:
            game.close()
            raise CliError(str(exc)) from None
    if pictures is not None:
        try:
            drawn = pictures.finish()
        except (OutputError, OSError) as exc:
            game.close()
            raise CliError(str(exc)) from None
        if drawn["gif"]:
            print(f"{sc.source}: wrote {drawn['gif']} ({drawn['gif_pictures']} pictures)", file=sys.stderr)
        if drawn["frames"]:
            print(f"{sc.source}: wrote {len(drawn['frames'])} frames and {drawn['contact_sheet']}", file=sys.stderr)
    total = counts["accepted"] + counts["refused"]
    ran = f"{sc.updates} updates" if start is None else \
        f"updates {start.update}-{sc.updates - 1} (from the snapshot of update {start.update})"
    print(f"{sc.source}: {ran}, {len(sc.humans)} humans; {total} action commands: "
          f"{counts['accepted']} accepted, {counts['refused']} refused", file=sys.stderr)
    if args.checksum:
        print(f"checksum {world_checksum(game)}")
    game.close()
    if args.strict and counts["refused"]:
        return EXIT_REFUSED
    return 0


def world_checksum(game) -> str:
    """``Game.checksum`` of the world a scenario ran, without the scenario runner's
    Script (its index into the command list is the runner's, not the world's): the digest
    a netplay session gives the same update of the same fight."""
    from scuffle.game.runtime.scenario import Script

    actions = game.ctx.actions
    scripts = [(i, a) for i, a in enumerate(actions) if isinstance(a, Script)]
    for i, _ in reversed(scripts):
        del actions[i]
    try:
        return game.checksum()
    finally:
        for i, a in scripts:
            actions.insert(i, a)
