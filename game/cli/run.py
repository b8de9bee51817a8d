"""``scuffle run SCENARIO.toml --trace OUT.jsonl [--pose] [--engine reference]``: run a scenario.

Validates the whole file first (no update runs on a bad file), then runs it and
writes the trace. Errors are one line on stderr (scuffle: error: FILE:LINE: FIELD: ...),
status 2: a bad file, or a command that hits the task pool, stack or queue limit at
run time (the trace then holds the updates before it).
"""
from __future__ import annotations

import argparse
import sys

from scuffle.game.fighters import registry
from scuffle.game.runtime.scenario import ScenarioError, load_scenario, run_scenario

__all__ = ["run_arguments", "cmd_run"]


def run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="the scenario TOML file")
    p.add_argument("--trace", metavar="OUT.jsonl", help="write the trace here ('-' for stdout)")
    p.add_argument("--pose", action="store_true", help="add each human's sampled pose to the trace")
    p.add_argument("--engine", choices=("compiled", "reference"), default="compiled",
                   help="the animation engine: the compiled one (default), or the reference, the "
                        "plain-Python model of the spec (slow; to debug a scenario)")


def cmd_run(args: argparse.Namespace) -> int:
    from scuffle.game.cli.errors import CliError  # the CLI's one-line error type

    try:
        sc = load_scenario(args.scenario, registry())
    except ScenarioError as exc:
        raise CliError(str(exc)) from None
    from scuffle.anim.warmup import announce_compile
    announce_compile()                  # a cold numba cache: compile ahead, with a progress line
    try:
        if args.trace in (None, ""):
            game = run_scenario(sc, engine=args.engine)
        elif args.trace == "-":
            game = run_scenario(sc, sys.stdout, pose=args.pose, engine=args.engine)
        else:
            try:
                fp = open(args.trace, "w", encoding="utf-8", newline="\n")
            except OSError as exc:
                raise CliError(f"cannot write trace {args.trace!r}: {exc.strerror or exc}") from None
            with fp:
                game = run_scenario(sc, fp, pose=args.pose, engine=args.engine)
    except ScenarioError as exc:          # a command hit a limit at run time
        raise CliError(str(exc)) from None
    print(f"{sc.source}: {sc.updates} updates, {len(sc.humans)} humans", file=sys.stderr)
    game.close()
    return 0
