"""Fixtures of the game tests; the helpers they share are in gamehelp.py (a module name
of its own: ``from conftest import`` would find whichever conftest was imported first)."""
from __future__ import annotations

import pytest

from scuffle.game.runtime.world import Game


@pytest.fixture
def new_game(esper_clean):
    """A factory of Games, all closed after the test."""
    games = []

    def make(*args, **kw) -> Game:
        g = Game(*args, **kw)
        games.append(g)
        return g

    yield make
    for g in games:
        g.close()
