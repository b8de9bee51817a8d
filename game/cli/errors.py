"""The CLI's one-line error type, shared by the subcommands (scuffle.game.cli.commands prints it)."""
from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["CliError", "OneLineParser", "EXIT_ERROR"]

EXIT_ERROR = 2


class CliError(Exception):
    """A user error a subcommand reports as one line (``scuffle: error: ...``, status 2)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with a usage error on one line: ``PROG: error: MESSAGE (see --help)``, status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")
