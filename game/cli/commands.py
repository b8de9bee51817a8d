"""The command line: ``scuffle SUBCOMMAND ...`` (or ``python -m scuffle SUBCOMMAND ...``).

Each subcommand is one function ``cmd_NAME(args) -> int`` plus one function that adds
its arguments; both are registered in ``COMMANDS`` (the one place to add another). The
demo's subcommands (``demo``, ``view``) are the demo's own (``scuffle.demo.commands``): the
package's face (``scuffle.cli``, the console script) hands them to ``main``.
Errors a user can cause (a missing file, a malformed chunk, bad flags) print one line,
``scuffle CMD: error: ...`` (``scuffle: error: ...`` only when no subcommand is named), to
stderr and exit with status 2; no traceback. Any ValueError (every format and validation error of
the runtime is one), OSError or limit of the original reaching ``main`` is such an
error. A reader that closes the output early (``| head``) ends the command quietly
with status 1.

Spec: "Data" (Descriptor, Keyframes, Events). Layouts: docs/formats.md.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from scuffle.anim.data.clip import Clip, decode_positions, decode_rotations, key_frames, parse_clip
from scuffle.anim.base.errors import AnimLimitError, PoseStackOverflow
from scuffle.game.cli.errors import EXIT_ERROR, CliError, OneLineParser, anim_ref, examples, resolve_anim
from scuffle.game.runtime.files import MAX_BINARY_BYTES, FileLimitError, read_limited
from scuffle.game.runtime.version import __version__

__all__ = ["COMMANDS", "Command", "CliError", "main", "build_parser", "clip_summary", "passthrough"]

PROG = "scuffle"


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, argument setup and runner."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    examples: tuple[str, ...] = ()


# ---------------------------------------------------------------- helpers


def _read(path: str, what: str) -> bytes:
    """A file's bytes; an unreadable file raises CliError naming it."""
    try:
        return read_limited(path, MAX_BINARY_BYTES)
    except FileLimitError as exc:
        raise CliError(f"cannot read {what} {path!r}: {exc.problem}") from None


def _num(v) -> float:
    """A float32 value as the shortest decimal that reads back to the same float32."""
    return float(str(np.float32(v)))


# ---------------------------------------------------------------- clip


def clip_summary(clip: Clip) -> dict:
    """The clip as one JSON-ready dict (the ``clip --json`` output).

    Keys are [start_frame, x, y, z] (positions, metres or m/s) or [start_frame, x, y,
    z, w] (rotations); start_frame is the running sum of the deltas. An empty section
    is null.
    """
    def positions(keys):
        if keys is None:
            return None
        return [[int(f), *map(_num, v)] for f, v in zip(key_frames(keys), decode_positions(keys))]

    def rotations(keys):
        return [[int(f), *map(_num, q)] for f, q in zip(key_frames(keys), decode_rotations(keys))]

    return {
        "name": clip.name,
        "duration": _num(clip.duration),
        "frames": clip.frames,
        "displacement": [_num(v) for v in clip.displacement],
        "flags": clip.flags,
        "mask": clip.bones,
        "root_velocity": positions(clip.velocity),
        "root_translation": positions(clip.translation),
        "rotations": {str(bone): rotations(clip.rotations[bone]) for bone in clip.bones},
        "events": [e.to_json() for e in clip.decoded_events()],
    }


def _channel_line(label: str, keys) -> str:
    if keys is None:
        return f"  {label}: none"
    frames = key_frames(keys)
    n = len(keys)
    return f"  {label}: {n} key{'s' if n != 1 else ''}, frames {int(frames[0])}-{int(frames[-1])}"


def _fmt(values) -> str:
    return "(" + ", ".join(f"{v:.4f}" for v in values) + ")"


def clip_text(clip: Clip) -> str:
    """A readable summary: name, duration, frames, mask, channels, events."""
    lines = [
        f"clip {clip.name!r}",
        f"duration: {_num(clip.duration)} s ({clip.frames} frames)",
        f"displacement: x {_num(clip.displacement[0])} m, y {_num(clip.displacement[1])} m",
        f"flags: 0x{clip.flags:08x}",
        f"mask: {' '.join(map(str, clip.bones)) or '(none)'} ({len(clip.bones)} bones)",
        "channels:",
        _channel_line("root velocity (A)", clip.velocity),
        _channel_line("root translation (B)", clip.translation),
    ]
    lines += [_channel_line(f"bone {bone}", clip.rotations[bone]) for bone in clip.bones]
    events = clip.decoded_events()
    lines.append(f"events: {len(events)}")
    for e in events:
        line = f"  frame {e.frame}: type 0x{e.type:02x} {e.name} args {e.args[0]} {e.args[1]}"
        if e.word is not None:
            line += f" word 0x{e.word:08x}"
        elif e.fov is not None:
            line += f" fov {e.fov}"
        else:
            line += f" position {_fmt(e.position)} rotation {_fmt(e.rotation)}"
        if e.code is not None:
            line += f" code {e.code!r}"
        lines.append(line)
    return "\n".join(lines)


def _clip_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("descriptor", metavar="DESCRIPTOR_FILE",
                   help="the clip's descriptor (chunk 0x02, 80 bytes), a resource file, or a library's "
                        "name (demo: the demo move set, listed by name)")
    p.add_argument("keyframes", metavar="KEYFRAMES_FILE", nargs="?",
                   help="the clip's keyframes (chunk 0x00); omit it to read a resource file")
    p.add_argument("--id", type=anim_ref, dest="anim_id", metavar="ID",
                   help="with a resource file: only the clip anim id ID names (a number, or a clip's name)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    p.add_argument("--list", action="store_true",
                   help="with a resource file or a library: one line per clip (ids, name, frames, "
                        "duration, events); the default for a library")


def cmd_clip(args: argparse.Namespace) -> int:
    """Parse a clip's two chunks, or the clips of a resource file, and print them.

    With a resource file, --json prints one object {"clips": [{"id": [...], ...}]} (each
    distinct clip once, with the anim ids that name it), or the clip of ``--id`` alone.
    """
    if args.keyframes is None:
        return _clip_resource(args)
    if args.anim_id is not None or args.list:
        flag = "--id" if args.anim_id is not None else "--list"
        raise CliError(f"{flag} goes with a resource file or a library, not a descriptor/keyframes pair")
    descriptor = _read(args.descriptor, "descriptor file")
    keyframes = _read(args.keyframes, "keyframes file")
    clip = parse_clip(descriptor, keyframes)
    if args.json:
        print(json.dumps(clip_summary(clip), allow_nan=False))
    else:
        print(clip_text(clip))
    return 0


def _library(name: str):
    """The anim set of the scenario library ``name`` ("demo"), or None when ``name`` is
    no library or a regular file of that name is here (a file wins)."""
    from scuffle.game.fighters import registry

    make = registry().libraries.get(name)
    if make is None or os.path.isfile(name):
        return None
    return make()


def _clip_list(aset, ids_of: dict[int, list[int]], chosen: list[int]) -> str:
    """One line per clip: its anim ids, name, frames, duration and events."""
    rows = []
    for i in chosen:
        clip = aset.clips_by_index[i]
        ids = ", ".join(map(str, ids_of[i]))
        n = len(clip.decoded_events())
        rows.append((ids, clip.name or "-", f"{clip.frames} frames", f"{float(clip.duration):.3f} s",
                     f"{n} event{'s' if n != 1 else ''}"))
    widths = [max((len(r[k]) for r in rows), default=0) for k in range(5)]
    head = f"{len(rows)} clip{'s' if len(rows) != 1 else ''}"
    return "\n".join([head] + ["  " + "  ".join(v.rjust(widths[k]) if k in (0, 2, 3) else v.ljust(widths[k])
                                                for k, v in enumerate(r)).rstrip() for r in rows])


def _clip_resource(args: argparse.Namespace) -> int:
    from scuffle.anim.data.animset import AnimSet
    from scuffle.anim.data.resource import ResourceFormatError, load_resource

    aset = _library(args.descriptor)
    listing = args.list or (aset is not None and args.anim_id is None and not args.json)
    if aset is None:
        data = _read(args.descriptor, "resource file")
        try:
            aset = AnimSet.from_resource(load_resource(data))
        except ResourceFormatError as exc:
            raise CliError(f"{args.descriptor}: {exc}") from None
    ids_of: dict[int, list[int]] = {}
    for anim_id in aset.ids():
        ids_of.setdefault(int(aset.clip_index(anim_id) or 0), []).append(anim_id)   # ids() have a clip
    if args.anim_id is not None:
        args.anim_id = resolve_anim(aset, args.anim_id, f"{args.descriptor}: --id")
        if not 0 <= args.anim_id < aset.num_ids or not aset.has(args.anim_id):
            raise CliError(f"{args.descriptor}: anim id {args.anim_id} has no clip")
        chosen = [int(aset.clip_index(args.anim_id) or 0)]                        # has() checked
    else:
        chosen = sorted(ids_of, key=lambda i: ids_of[i][0])
    if listing and not args.json:
        print(_clip_list(aset, ids_of, chosen))
        if args.anim_id is None:
            print(f"one clip in full: scuffle clip {args.descriptor} --id NAME (or ID)")
        return 0
    if args.json:
        out = [{"id": ids_of[i], **clip_summary(aset.clips_by_index[i])} for i in chosen]
        print(json.dumps(out[0] if args.anim_id is not None else {"clips": out}, allow_nan=False))
    else:
        for i in chosen:
            print(f"anim id {', '.join(map(str, ids_of[i]))}")
            print(clip_text(aset.clips_by_index[i]))
            print()
    return 0


# ---------------------------------------------------------------- registry and entry point

def _lazy(module: str, name: str) -> Callable:
    """A function of another module, imported when first called (keeps start-up light)."""
    def call(*args, **kwargs):
        import importlib
        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    return call


def passthrough(p: argparse.ArgumentParser) -> None:
    """A subcommand with its own parser (the demo's ``demo`` and ``view``): everything after
    its name is its."""
    p.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


COMMANDS: tuple[Command, ...] = (
    Command("clip", "decode a clip (descriptor + keyframes chunks)", _clip_arguments, cmd_clip,
            ("scuffle clip walk.desc walk.keys", "scuffle clip chars.res --id 151 --json",
             "scuffle clip chars.res --id THROW_BACK", "scuffle clip demo            # the demo set's clips by name",
             "scuffle clip chars.res --list")),
    Command("run", "run a scenario TOML and write its trace", _lazy("scuffle.game.cli.run", "run_arguments"),
            _lazy("scuffle.game.cli.run", "cmd_run"),
            ("scuffle run fight.toml --trace out.jsonl", "scuffle run fight.toml --trace - --pose | head -1",
             "scuffle run fight.toml --strict -v      # every command answered; exit 1 on a refusal",
             "scuffle run fight.toml --engine reference --trace ref.jsonl   # the same bytes, from the reference",
             "scuffle run fight.toml --gif fight.gif --frames shots   # pictures of the fight")),
    Command("bench", "time the crowd update (N humans, U updates)", _lazy("scuffle.game.tools.bench", "bench_arguments"),
            _lazy("scuffle.game.tools.bench", "cmd_bench"),
            ("scuffle bench --humans 2 100 --updates 40", "scuffle bench --sweep --json > bench.json",
             "scuffle bench --humans 2 1000 10000 --crowd realistic   # the goals beside their figures")),
    Command("warm", "compile every animation kernel now (once per install; a cold first step then compiles nothing)",
            _lazy("scuffle.game.tools.warm", "add_arguments"), _lazy("scuffle.game.tools.warm", "run"),
            ("scuffle warm", "scuffle warm --check   # exit 1 when a kernel is not cached")),
    Command("lint", "list clips that never end (an end step's overshoot exactly 0.0)", _lazy("scuffle.game.tools.lint", "add_arguments"), _lazy("scuffle.game.tools.lint", "run"),
            ("scuffle lint chars.res", "scuffle lint walk.desc walk.keys --json")),
    Command("diff", "compare two traces; the first update where they part (exit 1 when they differ)",
            _lazy("scuffle.game.tools.diff", "add_arguments"), _lazy("scuffle.game.tools.diff", "run"),
            ("scuffle diff ours.jsonl emu.jsonl", "scuffle diff a.jsonl b.jsonl --fields anim,held,tasks[top].time --context 5",
             "scuffle diff a.jsonl b.jsonl --names fight.toml   # clip names beside the ids")),
    Command("survey", "count and check every clip of resource files and descriptor/keyframes pairs",
            _lazy("scuffle.game.tools.survey", "add_arguments"), _lazy("scuffle.game.tools.survey", "run"),
            ("scuffle survey corpus", "scuffle survey chars.res extracted/ --json > survey.json")),
    Command("csv2trace", "convert an emulator CSV (update, anim id, time) into a trace",
            _lazy("scuffle.game.tools.csv_to_trace", "add_arguments"), _lazy("scuffle.game.tools.csv_to_trace", "run"),
            ("scuffle csv2trace emu.csv emu.jsonl --human hero --update-offset -1000",)),
)


def build_parser(commands: Sequence[Command] = COMMANDS, only: str | None = None) -> argparse.ArgumentParser:
    """The argparse parser with one subparser per command (usage errors on one line). In:
    ``commands``, the game's own (COMMANDS) unless given; ``only``: the one command whose
    arguments are set up (a command's set-up imports what its arguments name: the
    scenario, the player; ``--version``, ``--help`` and a usage error need none of it),
    the others listed by name and help; None: every one."""
    parser = OneLineParser(prog=PROG, description="scuffle: the character animation runtime's tools",
                           **examples("scuffle demo --attract --seed 7", "scuffle run fight.toml --trace out.jsonl",
                                      "scuffle view demo --id THROW_BACK", "scuffle COMMAND --help"))
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        own = command.add_arguments is passthrough         # demo / view parse their own --help
        p = sub.add_parser(command.name, help=command.help, description=command.help, add_help=not own,
                           **(examples(*command.examples) if command.examples else {}))
        if only is None or command.name == only:
            command.add_arguments(p)
        p.set_defaults(run=command.run)
    return parser


class _StderrLog(logging.Handler):
    """The library's ``scuffle`` logger on the command's stderr (as ``scuffle: MESSAGE``)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"{PROG}: {record.getMessage()}", file=sys.stderr, flush=True)


def show_library_log() -> None:
    """Show the library's ``scuffle`` logger (the cold compile's notice) on stderr, once."""
    log = logging.getLogger("scuffle")
    if not any(isinstance(h, _StderrLog) for h in log.handlers):
        log.addHandler(_StderrLog(logging.INFO))
        log.propagate = False
        if log.level == logging.NOTSET or log.level > logging.INFO:
            log.setLevel(logging.INFO)


MAX_ERROR_LINE = 400       # characters of an error line; the values in it are cut to about 80 at their source


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every output's ``finally`` and ``except
    BaseException`` runs (its temporary file deleted, an old file left whole)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def _on_terminate():
    """SIGTERM raises Terminated in the main thread (elsewhere nothing changes); returns
    the handler it replaced."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return signal.signal(signal.SIGTERM, _raise_terminated)
    except (ValueError, OSError):
        return None


def main(argv: Sequence[str] | None = None, extra: Sequence[Command] = (),
         pictures: Callable[..., Any] | None = None) -> int:
    """Run one subcommand; returns the exit status (0, or 2 on any user error). In: the
    arguments (``sys.argv[1:]`` when None), ``extra`` subcommands listed ahead of the game's
    own (the package's face hands in the demo's), ``pictures`` what draws ``run --gif`` and
    ``--frames`` (called with the Pictures options; without it those flags are refused)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    show_library_log()
    commands = (*extra, *COMMANDS)
    own = next((c for c in commands if argv[:1] == [c.name] and c.add_arguments is passthrough), None)
    if own is not None:                # demo / view: their own parser reads the rest, --help included
        args = argparse.Namespace(command=own.name, argv=argv[1:], run=own.run)
    else:
        parser = build_parser(commands, only=argv[0] if argv else "")
        parser.set_defaults(pictures=pictures)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:      # usage errors (already printed) and --help
            return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    previous = _on_terminate()
    try:
        # the commands that step humans (demo, view, run, bench) say so when numba's cache is
        # cold (anim.playback.warmup.announce_compile; the bench compiles every kernel ahead)
        status = args.run(args)
        sys.stdout.flush()
        return status
    except KeyboardInterrupt:          # Ctrl-C: the outputs' temporary files are gone, old files whole
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:                 # SIGTERM: as Ctrl-C
        print(f"{PROG} {args.command}: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:            # the reader went away (``| head``): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (CliError, ValueError, OSError, AnimLimitError, PoseStackOverflow) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        if len(text) > MAX_ERROR_LINE:  # a value quoted whole somewhere: the line stays readable
            text = text[:MAX_ERROR_LINE - 3] + "..."
        print(f"{PROG} {args.command}: error: {text}", file=sys.stderr)
        return EXIT_ERROR
    except RecursionError:             # a last guard: the readers refuse deep nesting first
        print(f"{PROG} {args.command}: error: input nested too deeply", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if previous is not None:
            import signal
            signal.signal(signal.SIGTERM, previous)
