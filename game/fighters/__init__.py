"""The demo fighters' content: the move set (clips and range records), the moves, the fight
rules and the AI. ``registry()`` is what a scenario may name with them: the "demo"
library and the fight actions, registered explicitly (never as an import side effect).
"""
from __future__ import annotations

from scuffle.game.runtime.registry import Registry

__all__ = ["registry"]


def registry() -> Registry:
    """A new Registry holding the "demo" anim set library and the fight actions
    (grab, strike, throw, let_go, move, face), with the fight rules attached to each
    scenario's Game."""
    from scuffle.game.fighters.combat import register_actions
    from scuffle.game.fighters.moveset import demo_set

    reg = Registry()
    reg.add_library("demo", demo_set)
    register_actions(reg)
    return reg
