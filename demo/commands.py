"""The demo's subcommands of the ``scuffle`` command (``demo``, ``view``) and the pictures
``scuffle run --gif/--frames`` draws: handed to the game's command line by the package's
face (``scuffle.cli``), since the game layer never imports the demo.

Nothing here imports pygame: each runner checks that it is installed (one line and status
2 when it is not) and imports its module when called.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
from typing import Any, Callable

from scuffle.game.cli.commands import Command, passthrough
from scuffle.game.cli.errors import CliError

__all__ = ["COMMANDS", "pictures"]


def _needs_pygame(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A pygame subcommand's runner: one line and status 2 when pygame is not installed."""
    def run(args: argparse.Namespace) -> int:
        if importlib.util.find_spec("pygame") is None:
            raise CliError(f"'scuffle {args.command}' needs pygame: pip install 'scuffle[demo]'")
        from scuffle.anim.playback.warmup import announce_compile   # (numba imported for these commands only)
        announce_compile()              # a cold numba cache: said now; the first step compiles what it runs
        return getattr(importlib.import_module(module), name)(args.argv)
    return run


def pictures(**options: Any) -> Any:
    """The pictures of a scenario's run (``scuffle.demo.playback.Pictures(**options)``),
    imported only when a run asks for them."""
    from scuffle.demo.playback import Pictures
    return Pictures(**options)


COMMANDS: tuple[Command, ...] = (
    Command("demo", "the two-fighter pygame demo (a window, or headless without a display)",
            passthrough, _needs_pygame("scuffle.demo.cli", "main")),
    Command("view", "the clip viewer: one clip on the skeleton, its timeline and events",
            passthrough, _needs_pygame("scuffle.demo.view", "main")),
)
