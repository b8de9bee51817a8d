"""The CLI's one-line error type, shared by the subcommands (scuffle.game.cli.commands prints it)."""
from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["CliError", "OneLineParser", "EXIT_ERROR", "anim_ref", "resolve_anim", "examples"]

EXIT_ERROR = 2


class CliError(Exception):
    """A user error a subcommand reports as one line (``scuffle CMD: error: ...``, status 2)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with a usage error on one line: ``PROG: error: MESSAGE (see --help)``, status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")


def anim_ref(text: str) -> int | str:
    """An ``--id`` value: a whole number (the anim id) or a clip name (resolved later
    through the set: ``resolve_anim``)."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    if not t:
        raise argparse.ArgumentTypeError("expected an anim id or a clip name")
    return t


def resolve_anim(anim_set, ref: int | str, where: str) -> int:
    """``anim_ref``'s value as an anim id of ``anim_set`` (a name through AnimSet.id_of);
    an unknown name raises CliError naming ``where`` with "did you mean"."""
    if isinstance(ref, int):
        return ref
    from scuffle.anim.animset import UnknownAnimName
    try:
        return anim_set.id_of(ref)
    except UnknownAnimName as exc:
        raise CliError(f"{where}: {exc}") from None


def examples(*lines: str) -> dict:
    """The keyword arguments that put ``examples:`` and the lines after a parser's help."""
    return {"epilog": "examples:\n" + "\n".join("  " + line for line in lines) + "\n",
            "formatter_class": argparse.RawDescriptionHelpFormatter}
