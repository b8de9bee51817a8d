"""``scuffle run SCENARIO.toml [--trace OUT.jsonl] [--pose] [--strict] [-v] [--data DIR] [--engine reference]``: run a scenario.

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
"""
from __future__ import annotations

import argparse
import sys

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
    p.add_argument("--engine", choices=("compiled", "reference"), default="compiled",
                   help="the animation engine: the compiled one (default), or the reference, the "
                        "plain-Python model of the spec (slow; to debug a scenario)")


def cmd_run(args: argparse.Namespace) -> int:
    from scuffle.game.cli.errors import CliError  # the CLI's one-line error type
    from scuffle.game.runtime.files import OutputError, OutputFile, check_outputs

    try:
        sc = load_scenario(args.scenario, registry(), data=args.data)
    except ScenarioError as exc:
        raise CliError(str(exc)) from None
    try:
        check_outputs({"trace": args.trace},
                      {"scenario": args.scenario, **{f"file {f!r} of the scenario": f for f in sc.files}})
    except OutputError as exc:
        raise CliError(str(exc)) from None
    from scuffle.anim.warmup import announce_compile
    announce_compile()                  # a cold numba cache: compile ahead, with a progress line
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
            game = run_scenario(sc, on_command=answered, engine=args.engine)
        elif args.trace == "-":
            game = run_scenario(sc, sys.stdout, pose=args.pose, on_command=answered, engine=args.engine)
        else:
            out = OutputFile(args.trace, "trace")       # OutputError: one line naming the file
            try:
                game = run_scenario(sc, out.fp, pose=args.pose, on_command=answered, engine=args.engine)
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
    total = counts["accepted"] + counts["refused"]
    print(f"{sc.source}: {sc.updates} updates, {len(sc.humans)} humans; {total} action commands: "
          f"{counts['accepted']} accepted, {counts['refused']} refused", file=sys.stderr)
    game.close()
    if args.strict and counts["refused"]:
        return EXIT_REFUSED
    return 0
