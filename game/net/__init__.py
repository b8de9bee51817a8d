"""Rollback netplay (``scuffle.net``): FightInput values between two peers, sessions that
predict, roll back and re-run, the transport (UDP, an in-memory pair, a simulated link)
and the datagram format. docs/netplay.md walks through putting two players online."""
from scuffle.game.fighters.fightinput import Action, FightInput, FightInputError
from scuffle.game.net.link import Link, LinkError, MemoryLink, SimLink, UdpLink, parse_address
from scuffle.game.net.session import (HandshakeError, NetError, PeerLeft, PeerTimeout, Session, SessionEvent,
                                      SessionSetupError, SessionStats, Spectator, SyncTestSession, config_digest,
                                      rollback_costs, state_digest, warm_up)
from scuffle.game.net.wire import WireError

__all__ = ["Action", "FightInput", "FightInputError", "Link", "LinkError", "MemoryLink", "SimLink", "UdpLink",
           "parse_address", "HandshakeError", "NetError", "PeerLeft", "PeerTimeout", "Session", "SessionEvent",
           "SessionSetupError", "SessionStats", "Spectator", "SyncTestSession", "config_digest", "state_digest",
           "warm_up", "rollback_costs", "WireError"]
