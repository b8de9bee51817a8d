"""The ``scuffle`` command (the console script and ``python -m scuffle``): the game's
subcommands (``scuffle.game.cli``) with the demo's (``demo``, ``view``) and the demo's
pictures for ``scuffle run --gif/--frames`` (``scuffle.demo.commands``), put together
here because the game layer never imports the demo."""
from __future__ import annotations

from typing import Sequence

__all__ = ["main", "commands"]


def commands() -> tuple:
    """Every subcommand, the demo's first (as ``scuffle --help`` lists them)."""
    from scuffle.demo.commands import COMMANDS as DEMO
    from scuffle.game.cli.commands import COMMANDS as GAME
    return (*DEMO, *GAME)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns the exit status (0, or 2 on any user error)."""
    from scuffle.demo.commands import COMMANDS as DEMO, pictures
    from scuffle.game.cli.commands import main as run
    return run(argv, extra=DEMO, pictures=pictures)
