"""The CLI's one-line error type, shared by the subcommands (scuffle.game.cli.commands prints it),
and the range-checked number types of their flags (``number``, ``whole``)."""
from __future__ import annotations

import argparse
from typing import Callable, NoReturn

from scuffle.anim.base.limits import INT32_MAX, RangeError, check_float, check_int

__all__ = ["CliError", "OneLineParser", "EXIT_ERROR", "anim_ref", "resolve_anim", "examples", "number", "whole"]

EXIT_ERROR = 2


class CliError(Exception):
    """A user error a subcommand reports as one line (``scuffle CMD: error: ...``, status 2)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with a usage error on one line: ``PROG: error: MESSAGE (see --help)``, status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")


def anim_ref(text: str) -> int | str:
    """An ``--id`` value: a whole number (the anim id, 0 to 2^31 - 1) or a clip name
    (resolved later through the set: ``resolve_anim``)."""
    t = text.strip()
    if t.lstrip("+-").isdigit():
        return whole(0, INT32_MAX)(t)
    if not t:
        raise argparse.ArgumentTypeError("expected an anim id or a clip name")
    return t


def resolve_anim(anim_set, ref: int | str, where: str) -> int:
    """``anim_ref``'s value as an anim id of ``anim_set`` (a name through AnimSet.id_of);
    an unknown name raises CliError naming ``where`` with "did you mean"."""
    if isinstance(ref, int):
        return ref
    from scuffle.anim.data.animset import UnknownAnimName
    try:
        return anim_set.id_of(ref)
    except UnknownAnimName as exc:
        raise CliError(f"{where}: {exc}") from None


def examples(*lines: str) -> dict:
    """The keyword arguments that put ``examples:`` and the lines after a parser's help."""
    return {"epilog": "examples:\n" + "\n".join("  " + line for line in lines) + "\n",
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def number(lo: float | None, hi: float | None, *, lo_open: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a finite decimal number within [lo, hi] (``lo_open``: > lo).
    NaN, infinities and values out of range are a usage error on one line."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
        try:
            return check_float("value", value, lo, hi, lo_open=lo_open)
        except RangeError as exc:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: {exc.problem}") from None
    parse.__name__ = "number"
    return parse


def whole(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number within [lo, hi] (at most 30 digits read)."""
    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if len(digits) > 30 or not digits.isdigit():
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected a whole number {lo}-{hi}")
        try:
            return check_int("value", int(text), lo, hi)
        except RangeError as exc:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: {exc.problem}") from None
    parse.__name__ = "whole number"
    return parse
