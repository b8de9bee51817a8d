"""``python -m game lint RESOURCE_OR_CLIPS... [--json] [--data-speeds]``: never-ending clips.

Lists every clip that reaches an end step whose overshoot is exactly 0.0 at the rate
it plays at, which the original takes as "not ended" for ever (docs/original-bugs.md).
Each argument is a character data resource file (every id with a clip, at the rate
its Anim Range List flags pick), or a clip's descriptor file (80 bytes) followed by
its keyframes file (a lone clip has no id: it is checked at each of the four rates).
Rates are CfgAnimSpeeds' runtime values (0.75, 0.8, 1.0, 0.9), or with
``--data-speeds`` the values .data holds before the Lua runs (1.0, 0.85, 1.0, 1.0).

Exit status: 1 when a never-ending clip is found, 0 when none, 2 on an error (one
line on stderr).

Spec: "When a clip ends" (the overshoot of 0.0), "Playback rate".
Registered in game/cli.py's COMMANDS.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import DESCRIPTOR_SIZE, ClipFormatError, parse_clip
from scuffle.anim.data.lint import Finding, lint_clip, lint_set
from scuffle.anim.data.rangelist import RangeListFormatError
from scuffle.anim.data.rates import DATA_SPEEDS, RUNTIME_SPEEDS, CfgAnimSpeeds
from scuffle.anim.data.resource import ResourceFormatError, load_resource
from scuffle.game.cli.errors import CliError
from scuffle.game.runtime.files import MAX_BINARY_BYTES, FileLimitError, read_limited

__all__ = ["add_arguments", "run", "lint_paths"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The lint subcommand's arguments."""
    p.add_argument("paths", metavar="RESOURCE_OR_CLIPS", nargs="+",
                   help="resource files, or DESCRIPTOR_FILE KEYFRAMES_FILE pairs (a descriptor is 80 bytes)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    p.add_argument("--data-speeds", action="store_true",
                   help="use the rates .data holds before CfgAnimSpeeds runs (1.0, 0.85, 1.0, 1.0)")


def _read(path: str) -> bytes:
    try:
        return read_limited(path, MAX_BINARY_BYTES)
    except FileLimitError as exc:
        raise CliError(f"cannot read {path!r}: {exc.problem}") from None


def lint_paths(paths: list[str], speeds: CfgAnimSpeeds) -> tuple[list[Finding], int]:
    """Lint every resource and descriptor/keyframes pair in ``paths``.

    Out: the findings and the number of (id or clip, rate) checks made. Rejected
    (CliError, naming the file): an unreadable file, a descriptor without its keyframes
    file, a malformed resource or clip.
    """
    findings: list[Finding] = []
    checked = 0
    i = 0
    while i < len(paths):
        path = paths[i]
        data = _read(path)
        if len(data) == DESCRIPTOR_SIZE:
            if i + 1 >= len(paths):
                raise CliError(f"{path!r} is a clip descriptor ({DESCRIPTOR_SIZE} bytes); "
                               f"its keyframes file must follow it")
            keys_path = paths[i + 1]
            try:
                clip = parse_clip(data, _read(keys_path))
            except ClipFormatError as exc:
                raise CliError(f"{path!r} + {keys_path!r}: {exc}") from None
            for rate in sorted(set(speeds.as_list())):
                checked += 1
                f = lint_clip(clip, rate, source=path)
                if f is not None:
                    findings.append(f)
            i += 2
            continue
        try:
            anim_set = AnimSet.from_resource(load_resource(data), name=path)
        except (ResourceFormatError, ClipFormatError, RangeListFormatError, ValueError) as exc:
            raise CliError(f"{path!r}: not a resource file: {exc}") from None
        checked += len(anim_set.ids())
        findings += lint_set(anim_set, speeds, source=path)
        i += 1
    return findings, checked


def run(args: argparse.Namespace) -> int:
    """Run the lint; 1 when a never-ending clip was found, else 0."""
    speeds = DATA_SPEEDS if args.data_speeds else RUNTIME_SPEEDS
    findings, checked = lint_paths(args.paths, speeds)
    if args.json:
        print(json.dumps({"speeds": speeds.as_list(), "checked": checked,
                          "never_ending": [f.to_json() for f in findings]}, allow_nan=False))
    else:
        for f in findings:
            print(f.text())
        print(f"{len(findings)} never-ending clip{'s' if len(findings) != 1 else ''} "
              f"in {checked} checked")
    return 1 if findings else 0
