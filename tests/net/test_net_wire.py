"""The netplay datagrams: written, read back, and every malformed one refused as data
(WireError naming the field), never a crash; the UDP link on 127.0.0.1."""
from __future__ import annotations

import random
import struct
import time

import pytest

from scuffle.game.fighters.fightinput import Action, FightInput
from scuffle.game.net import wire
from scuffle.net import LinkError, UdpLink, parse_address

GRAB = FightInput(face_toward="p2", action=Action.GRAB)
WALK = FightInput(move=(0.25, -1.0), speed=1.5)


def test_each_kind_reads_back_as_written():
    hello = wire.Hello(1, 77, 1, bytes(range(32)), bytes(range(32, 64)), "0.2.0", ("p1", "p2"), 0b10)
    inputs = wire.Inputs(4, 120, 118, 117, -1.5, 123456, 654321, 12, 110, ((GRAB,), (FightInput.EMPTY,), (WALK,)),
                         ((90, b"\x01" * 16), (120, b"\x02" * 16)))
    conf = wire.Confirmed(40, ((GRAB, WALK), (FightInput.EMPTY, FightInput.EMPTY)), 52)
    for msg in (hello, inputs, conf, wire.SpecAck(9), wire.Bye(4)):
        back = wire.read(msg.to_bytes(), 1, 2)
        assert back == msg, msg


@pytest.mark.parametrize("data, field", [
    (b"", "header"), (b"XX\x01\x05\x00", "magic"), (b"SN\x02\x05\x00", "version"), (b"SN\x01\x09", "kind"),
    (b"SN\x01\x05\x00\x00", "left over"), (b"SN\x01\x05\x80", "bye flags"), (b"SN\x01\x04\x00", "spec_ack"),
    (b"SN\x01\x04" + struct.pack("<I", 2 ** 31), "spec_ack have"),
    (b"SN\x01\x03" + struct.pack("<IB", 0, 65), "confirmed count"),
    (b"SN\x01\x03" + struct.pack("<IB", 0, 1) + b"\x00", "confirmed inputs"),
    (b"SN\x01\x03" + struct.pack("<IB", 0, 1) + b"\x04\x01\x00\x00\x09" + b"\x04\x01\x00\x00\xff", "confirmed inputs"),
    (b"SN\x01\x03" + struct.pack("<IB", 0, 1) + b"\x05\x01\x00\x00\xff\x00" + b"\x04\x01\x00\x00\xff", "confirmed inputs"),
    (b"\x00" * (wire.MAX_DATAGRAM + 1), "at most"),
])
def test_malformed_datagrams_are_refused_naming_the_field(data, field):
    with pytest.raises(wire.WireError, match=field):
        wire.read(data, 1, 2)


def test_a_hello_is_checked_field_by_field():
    good = wire.Hello(0, 1, 1, b"\x00" * 32, b"\x01" * 32, "0.2.0", ("p1", "p2"), 1).to_bytes()
    assert wire.read(good, 1, 2).players == ("p1", "p2")
    with pytest.raises(wire.WireError, match="local mask"):
        wire.read(good[:-4] + struct.pack("<I", 4), 1, 2)
    with pytest.raises(wire.WireError, match="hello players"):
        wire.read(good[:4 + 73 + 6] + b"\x00" + good[4 + 73 + 6 + 1:], 1, 2)
    with pytest.raises(wire.WireError, match="hello flags"):
        wire.read(good[:4] + b"\x40" + good[5:], 1, 2)


def test_random_bytes_never_escape_as_anything_but_wire_error():
    rng = random.Random(36)
    seeds = [m.to_bytes() for m in (wire.Inputs(0, 5, 4, 3, 0.5, 9, 8, 7, 2, ((GRAB,), (WALK,)), ((30, b"a" * 16),)),
                                    wire.Confirmed(1, ((GRAB, WALK),), 3), wire.Hello(1, 2, 1, b"c" * 32, b"d" * 32, "x", ("a",), 0))]
    for _ in range(3000):
        base = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            if op < 0.5 and base:
                base[rng.randrange(len(base))] = rng.randrange(256)
            elif op < 0.75:
                del base[rng.randrange(len(base) + 1):]
            else:
                base += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        try:
            wire.read(bytes(base), 1, 2)
        except wire.WireError:
            pass


def test_udp_link_on_localhost_learns_its_peer_and_ignores_strangers():
    host = UdpLink(("127.0.0.1", 0))
    join = UdpLink(("127.0.0.1", 0), peer=host.address)
    stranger = UdpLink(("127.0.0.1", 0), peer=host.address)
    try:
        host.send(b"nobody yet")                          # no peer: dropped quietly
        stranger.send(b"not ours")                        # not the wire's magic: adopts no one
        time.sleep(0.02)
        assert host.receive() == [] and host.peer is None
        join.send(b"SN hello")
        got = []
        end = time.monotonic() + 2.0
        while not got and time.monotonic() < end:
            got = host.receive()
            time.sleep(0.001)
        assert got == [b"SN hello"] and host.peer == join.address
        stranger.send(b"me too")
        host.send(b"back")
        back = []
        end = time.monotonic() + 2.0
        while not back and time.monotonic() < end:
            back = join.receive()
            host.receive()
            time.sleep(0.001)
        assert back == [b"back"]
        time.sleep(0.05)
        assert host.receive() == [] and host.dropped >= 1
    finally:
        for link in (host, join, stranger):
            link.close()


@pytest.mark.parametrize("text", ["", "host:", "host:0", "host:70000", ":80", "host:x"])
def test_addresses_are_checked(text):
    with pytest.raises(LinkError, match="address"):
        parse_address(text)


def test_addresses_read():
    assert parse_address("127.0.0.1:7000") == ("127.0.0.1", 7000)
    assert parse_address("7000") == ("127.0.0.1", 7000)
    with pytest.raises(LinkError, match="cannot|address"):
        UdpLink(("127.0.0.1", 1 << 17))
