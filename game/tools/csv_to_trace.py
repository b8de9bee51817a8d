"""Convert a CSV of per-update values read from an emulator into the pinned trace format.

    scuffle csv2trace IN.csv OUT.jsonl [--human NAME] [--update-offset K]

The CSV has a header row. Required columns:

    update   the update number (an integer; --update-offset K is added to it)
    anim     the playing anim id, the human's record +0x20 (an integer; -1: none)
    time     the time in seconds of the cursor of the task that id comes from
             (WarAnimInstance +0x18 of TaskStack_Top's task, 0x00175210)

Optional columns: ``human`` (the human's name; else --human, default "p1"), ``held``
(record +0x08; decimal or 0x hex), ``frame`` (the cursor's frame, +0x1c), ``heading``
(degrees), ``pos_x``, ``pos_y``, ``pos_z`` (metres; all three or none). Other columns
are ignored. Blank lines are skipped.

Each row becomes one trace record (docs/scenarios.md, "The trace"): ``update``,
``human``, ``anim``, then ``held``, ``pos``, ``heading`` when given, and ``tasks``, a
one-entry stack ``[{"id": anim, "time": time}]`` (plus ``frame``) holding the task the
anim id comes from, or ``[]`` when anim is -1 (an empty stack: the time is ignored). The time is a float32 in the original, so it is written as the
shortest decimal that reads back to the same float32, as our own trace writes it: two
traces of the same cursor then compare equal with no tolerance. Compare with

    scuffle diff ours.jsonl converted.jsonl --fields anim,tasks[top].time

(``tasks[top]`` is TaskStack_Top's pick in our trace: the top task, or the bottom one
when the top is a fade). Errors are one line on stderr naming IN.csv:LINE and the column
(status 2); no output file is written then.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys

import numpy as np

from scuffle.anim.maths import f32 as F
from scuffle.anim.base.limits import INT32_MAX, MAX_DIGITS, UINT32_MAX, RangeError, check_float, check_int
from scuffle.game.cli.errors import whole
from scuffle.game.runtime.files import MAX_TRACE_BYTES, FileLimitError, read_limited

REQUIRED = ("update", "anim", "time")
NO_ANIM = -1              # record +0x20 with an empty task stack
POS = ("pos_x", "pos_y", "pos_z")
# The ranges of the columns (docs/tools.md, "Limits"): what the original's fields hold.
INT64 = (-(1 << 63), (1 << 63) - 1)
RANGES = {"update": INT64, "anim": (NO_ANIM, INT32_MAX), "held": (0, UINT32_MAX), "frame": (0, INT32_MAX)}
MAX_COORD = 1e9                 # |pos_x|, |pos_y|, |pos_z| (metres) and |heading| (degrees)
MAX_FIELD = 1024                # characters of one CSV field
MAX_UPDATE_OFFSET = 1_000_000_000


class ConvertError(ValueError):
    """A CSV the converter cannot read (the message names FILE:LINE and the column)."""


def f32_shortest(v: float) -> float:
    """A value as a float32, written as the shortest decimal that reads back to it."""
    return float(str(np.float32(v)))


def _brief(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37]) + "..."


def _int(text: str, where: str, column: str) -> int:
    """A column's integer (decimal or 0x hex) within RANGES[column]; at most MAX_DIGITS digits."""
    s = text.strip()
    lo, hi = RANGES[column]
    if len(s.lstrip("+-")) > MAX_DIGITS + 2:
        raise ConvertError(f"{where}: {column}: an integer of more than {MAX_DIGITS} digits "
                           f"(expected {lo}-{hi}), got {_brief(text)}")
    try:
        v = int(s, 16) if s.lower().startswith(("0x", "-0x")) else int(s)
    except ValueError:
        raise ConvertError(f"{where}: {column}: expected an integer, got {_brief(text)}") from None
    try:
        return check_int(column, v, lo, hi)
    except RangeError as exc:
        raise ConvertError(f"{where}: {exc}") from None


def _num(text: str, where: str, column: str, bound: float = MAX_COORD) -> float:
    """A column's finite number within +-``bound``."""
    try:
        v = float(text.strip())
    except ValueError:
        raise ConvertError(f"{where}: {column}: expected a number, got {_brief(text)}") from None
    if not math.isfinite(v):
        raise ConvertError(f"{where}: {column}: {_brief(text)} is not finite")
    try:
        return check_float(column, v, -bound, bound)
    except RangeError as exc:
        raise ConvertError(f"{where}: {exc}") from None


def _rows(lines: list[str], source: str):
    """(line number, cells) of each CSV row; a field over MAX_FIELD characters, or a row
    the csv module cannot read, is a ConvertError naming the line."""
    reader = csv.reader(lines)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ConvertError(f"{source}:{reader.line_num}: not CSV: {exc}") from None
        for k, cell in enumerate(row):
            if len(cell) > MAX_FIELD:
                raise ConvertError(f"{source}:{reader.line_num}: column {k + 1}: a field of {len(cell):,} "
                                   f"characters, over the limit of {MAX_FIELD}")
        yield reader.line_num, row


def convert(rows_text: str, source: str, human: str = "p1", offset: int = 0) -> list[dict]:
    """CSV text -> trace records (see the module docstring).

    Rejected (ConvertError, naming source:line and the column): no header, a required
    column missing, a value that is not an integer / a finite number, an empty human
    name, only some of pos_x / pos_y / pos_z, two rows for the same update and human.
    """
    lines = rows_text.splitlines()
    header = None
    records: list[dict] = []
    seen: dict[tuple[int, str], int] = {}
    for line_no, row in _rows(lines, source):
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [c.strip().lower() for c in row]
            missing = [c for c in REQUIRED if c not in header]
            if missing:
                raise ConvertError(f"{source}:{line_no}: header: no column {', '.join(missing)} "
                                   f"(required: {', '.join(REQUIRED)})")
            given = [c for c in POS if c in header]
            if given and len(given) != 3:
                raise ConvertError(f"{source}:{line_no}: header: pos_x, pos_y and pos_z go together "
                                   f"(found {', '.join(given)})")
            continue
        where = f"{source}:{line_no}"
        if len(row) < len(header):
            raise ConvertError(f"{where}: {header[len(row)]}: missing ({len(row)} of {len(header)} columns)")
        cell = dict(zip(header, row))
        upd = _int(cell["update"], where, "update") + offset
        if not INT64[0] <= upd <= INT64[1]:
            raise ConvertError(f"{where}: update: {upd} with --update-offset is outside {INT64[0]}-{INT64[1]}")
        anim = _int(cell["anim"], where, "anim")
        t = _num(cell["time"], where, "time", F.FLT_MAX)          # a float32: never written as Infinity
        who = cell.get("human", "").strip() or human
        if not who:
            raise ConvertError(f"{where}: human: empty")
        key = (upd, who)
        if key in seen:
            raise ConvertError(f"{where}: a second row for update {upd}, human {who!r} (the first is line {seen[key]})")
        seen[key] = line_no
        rec: dict = {"update": upd, "human": who, "anim": anim}
        if "held" in cell and cell["held"].strip():
            rec["held"] = _int(cell["held"], where, "held")
        if "pos_x" in cell:
            rec["pos"] = [_num(cell[c], where, c) for c in POS]
        if "heading" in cell and cell["heading"].strip():
            rec["heading"] = _num(cell["heading"], where, "heading")
        task = {"id": anim, "time": f32_shortest(t)}
        if "frame" in cell and cell["frame"].strip():
            task["frame"] = _int(cell["frame"], where, "frame")
        rec["tasks"] = [task] if anim != NO_ANIM else []
        records.append(rec)
    if header is None:
        raise ConvertError(f"{source}:1: header: the file is empty (required columns: {', '.join(REQUIRED)})")
    return records


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``scuffle csv2trace`` arguments."""
    p.add_argument("csv", metavar="IN.csv", help="the emulator's CSV: update, anim id, time (and human)")
    p.add_argument("out", metavar="OUT.jsonl", help="the trace to write ('-' for stdout)")
    p.add_argument("--human", default="p1", metavar="NAME", help="the human's name when the CSV has no human column (default p1)")
    p.add_argument("--update-offset", type=whole(-MAX_UPDATE_OFFSET, MAX_UPDATE_OFFSET), default=0, metavar="K",
                   help="add K to every update number")


def run(a: argparse.Namespace) -> int:
    """Convert; 0 on success. Errors raise ConvertError (one line, status 2 through the CLI)."""
    try:
        text = read_limited(a.csv, MAX_TRACE_BYTES).decode("utf-8-sig")
    except FileLimitError as exc:
        raise ConvertError(f"cannot read {a.csv!r}: {exc.problem}") from None
    except UnicodeDecodeError as exc:
        raise ConvertError(f"{a.csv}: not UTF-8 text (byte {exc.start})") from None
    records = convert(text, a.csv, a.human, a.update_offset)
    out = "".join(json.dumps(r, separators=(",", ":"), allow_nan=False) + "\n" for r in records)
    if a.out == "-":
        sys.stdout.write(out)
    else:
        from scuffle.game.runtime.files import OutputError, OutputFile, check_outputs
        try:                    # never over the CSV itself; written whole or not at all
            check_outputs({"trace": a.out}, {"CSV": a.csv})
            with OutputFile(a.out, "trace") as fp:
                fp.write(out)
        except OutputError as exc:
            raise ConvertError(str(exc)) from None
        print(f"scuffle csv2trace: {len(records)} records to {a.out}", file=sys.stderr)
    return 0
