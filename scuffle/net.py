"""Rollback netplay: ``scuffle.net`` is ``scuffle.game.net`` (docs/netplay.md).

    from scuffle.net import Session, UdpLink, FightInput
"""
from scuffle.game.net import *  # noqa: F401,F403
from scuffle.game.net import __all__  # noqa: F401
