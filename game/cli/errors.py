"""The CLI's one-line error type, shared by the subcommands (scuffle.game.cli.commands prints it),
and the range-checked number types of their flags (``number``, ``whole``)."""
from __future__ import annotations

import argparse
from typing import Callable, NoReturn

from scuffle.anim.limits import RangeError, check_float, check_int

__all__ = ["CliError", "OneLineParser", "EXIT_ERROR", "number", "whole"]

EXIT_ERROR = 2


class CliError(Exception):
    """A user error a subcommand reports as one line (``scuffle: error: ...``, status 2)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with a usage error on one line: ``PROG: error: MESSAGE (see --help)``, status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")


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
