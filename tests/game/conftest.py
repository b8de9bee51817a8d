"""Fixtures of the game tests; the helpers they share are in gamehelp.py (a module name
of its own: ``from conftest import`` would find whichever conftest was imported first)."""
from __future__ import annotations

import pytest


@pytest.fixture
def new_game(esper_clean, scuffle_new_game):
    """A factory of Games, all closed after the test (``scuffle.testing``'s
    ``scuffle_new_game``)."""
    return scuffle_new_game
