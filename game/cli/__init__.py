"""The command line: one ``scuffle`` command with subcommands (main.py), and ``run`` (run.py)."""
from __future__ import annotations

from scuffle.game.cli.errors import CliError
from scuffle.game.cli.commands import main

__all__ = ["main", "CliError"]
