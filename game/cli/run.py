"""``scuffle run SCENARIO.toml [--trace OUT.jsonl] [--pose] [--strict] [-v] [--data DIR] [--engine reference]
[--snapshot-at U --snapshot-out F] [--from-snapshot F]``: run a scenario.

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

Snapshots (issue 20): ``--snapshot-at U --snapshot-out F`` writes the whole state after
U updates to F (Game.snapshot's byte form); ``--from-snapshot F`` resumes the scenario
from such a file: the run goes on from its update, and the trace holds the updates from
there (``scuffle diff`` of two traces names the update to cut at). A snapshot file that
is not one, or not of this scenario, is one line on stderr, status 2.
"""
from __future__ import annotations

import argparse
import sys

from scuffle.anim.limits import INT32_MAX
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


def cmd_run(args: argparse.Namespace) -> int:
    from scuffle.game.cli.errors import CliError  # the CLI's one-line error type
    from scuffle.game.runtime.files import OutputError, OutputFile, check_outputs, write_bytes

    try:
        sc = load_scenario(args.scenario, registry(), data=args.data)
    except ScenarioError as exc:
        raise CliError(str(exc)) from None
    try:
        check_outputs({"trace": args.trace, "snapshot": getattr(args, "snapshot_out", None)},
                      {"scenario": args.scenario, "snapshot (--from-snapshot)": getattr(args, "from_snapshot", None),
                       **{f"file {f!r} of the scenario": f for f in sc.files}})
    except OutputError as exc:
        raise CliError(str(exc)) from None
    start, at = _snapshot_args(args, sc)
    saved: list = []

    def keep(snapshot) -> None:
        saved.append(snapshot.to_bytes())       # while the Game is open
    snap = {"engine": args.engine, "start": start, "snapshot_at": at, "on_snapshot": keep}
    from scuffle.anim.warmup import announce_compile
    announce_compile()                  # a cold numba cache: said now; the first step compiles what it runs
    counts = {"accepted": 0, "refused": 0}

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
    total = counts["accepted"] + counts["refused"]
    ran = f"{sc.updates} updates" if start is None else \
        f"updates {start.update}-{sc.updates - 1} (from the snapshot of update {start.update})"
    print(f"{sc.source}: {ran}, {len(sc.humans)} humans; {total} action commands: "
          f"{counts['accepted']} accepted, {counts['refused']} refused", file=sys.stderr)
    game.close()
    if args.strict and counts["refused"]:
        return EXIT_REFUSED
    return 0
