"""A warning for a host that processes its own esper world while a Game waits unstepped.

``Game()`` makes an esper world of its own: its humans and its systems live there, and
``Game.step()`` (or ``esper.process()`` with that world current) runs them. A host that
calls ``esper.process()`` on the world it was in (its own, or esper's "default") runs
none of them: the Game's humans never move, and nothing says why. ``UnsteppedWatch``, one
per such world, added at the lowest priority, notices: a Game made while that world was
current, holding humans, never stepped after ``CALLS`` processes of that world, gets one
``UnsteppedGame`` warning naming both worlds and the two ways out. Once a Game has
stepped (or is closed, or gone) the watch forgets it; it holds Games weakly and does
nothing else.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any

import esper

__all__ = ["UnsteppedGame", "UnsteppedWatch", "watch_host_world", "CALLS", "WATCH_PRIORITY"]

CALLS = 3                        # processes of the host's world with the Game never stepped
WATCH_PRIORITY = -(1 << 30)      # after every system of the host


class UnsteppedGame(RuntimeWarning):
    """A host's esper world was processed while a Game with humans was never stepped."""


class UnsteppedWatch(esper.Processor):
    """The watch of one host world (see the module docstring)."""

    def __init__(self) -> None:
        self.games: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def process(self, *args: Any, **kwargs: Any) -> None:
        if not self.games:
            return
        for game, calls in list(self.games.items()):
            if game.closed or game.update > 0:
                del self.games[game]                 # stepped, or gone: nothing to say
                continue
            if not game.names:
                continue                             # no humans yet: nothing to miss
            calls += 1
            if calls < CALLS:
                self.games[game] = calls
                continue
            del self.games[game]
            host = esper.current_world
            warnings.warn(
                f"esper.process() ran world {host!r} {calls} times, but this Game's humans "
                f"({', '.join(repr(n) for n in list(game.names)[:3])}{', ...' if len(game.names) > 3 else ''}) live in its own "
                f"world {game.world!r}, which nothing has stepped: call game.step() once per update, or "
                f"make the Game in your world with Game.attach()", UnsteppedGame, stacklevel=3)


def watch_host_world(game: Any, host: str) -> None:
    """Have the world ``host`` (current now, not the Game's) watch ``game``."""
    if host == game.world:
        return
    watch = esper.get_processor(UnsteppedWatch)      # the current world's, if it has one
    if not isinstance(watch, UnsteppedWatch):
        watch = UnsteppedWatch()
        esper.add_processor(watch, priority=WATCH_PRIORITY)
    watch.games[game] = 0
