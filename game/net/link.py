"""What carries a netplay session's datagrams: a UDP socket, an in-memory pair, and a
simulated link (latency, jitter, loss, duplication, reordering) over either.

A link is any object with ``send(data: bytes)``, ``receive() -> list[bytes]`` (every
datagram waiting, without blocking) and ``close()``: ``UdpLink`` (the standard library's
non-blocking UDP socket), ``MemoryLink.pair()`` (two ends in one process, for tests),
``SimLink(inner, ...)`` (the simulated network in front of another link's sending side,
deterministic from its seed and the clock it is given). Datagrams are bytes only: what
comes in is read by scuffle.game.net.wire, never unpickled.
"""
from __future__ import annotations

import heapq
import math
import random
import socket
import time
from collections import deque
from typing import Callable, Protocol

__all__ = ["Link", "UdpLink", "MemoryLink", "SimLink", "LinkError", "parse_address", "MAX_RECEIVE"]

MAX_RECEIVE = 2048           # bytes read per datagram: a longer one is dropped (wire.MAX_DATAGRAM is less)
MAX_BATCH = 256              # datagrams one receive() returns at most (the rest wait for the next)


class LinkError(ValueError):
    """A link set up wrongly (an address, a port, a probability): the message names it."""


class Link(Protocol):
    def send(self, data: bytes) -> None: ...

    def receive(self) -> list[bytes]: ...

    def close(self) -> None: ...


def parse_address(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT`` -> (host, port). Rejected (LinkError): a port that is not
    1-65535, an empty host."""
    host, sep, port = str(text).rpartition(":")
    if not sep:
        host, port = default_host, str(text)
    host = host.strip("[]")
    if not host:
        raise LinkError(f"address {text!r}: no host (HOST:PORT)")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise LinkError(f"address {text!r}: the port must be a number 1-65535")
    return host, int(port)


class UdpLink:
    """One UDP socket to one peer (non-blocking; the standard library's ``socket``).

    ``bind`` (host, port) to listen on (port 0: any free port, ``address`` tells it);
    ``peer`` (host, port) to send to, or None: the first sender heard whose datagram
    starts with ``accept`` (the wire format's magic) becomes the peer (a host waiting for
    whoever joins). Datagrams from any other address are dropped, as are those longer
    than MAX_RECEIVE. Rejected: an address that cannot be bound
    (LinkError naming it)."""

    def __init__(self, bind: tuple[str, int] = ("127.0.0.1", 0), peer: tuple[str, int] | None = None,
                 accept: bytes = b"SN"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind(bind)
            self.peer = None if peer is None else (socket.gethostbyname(peer[0]), int(peer[1]))
        except (OSError, OverflowError) as exc:
            self.sock.close()
            where = f"{bind[0]}:{bind[1]}" if peer is None else f"{bind[0]}:{bind[1]} or {peer[0]}:{peer[1]}"
            raise LinkError(f"UDP address {where}: {getattr(exc, 'strerror', None) or exc}") from None
        self.sock.setblocking(False)
        self.accept = bytes(accept)       # what the first datagram must start with to adopt its sender
        self.dropped = 0                  # datagrams from elsewhere or too long

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) this link listens on."""
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    def send(self, data: bytes) -> None:
        if self.peer is None:
            return                        # no one to send to yet
        try:
            self.sock.sendto(data, self.peer)
        except (BlockingIOError, ConnectionRefusedError, InterruptedError):
            pass                          # UDP: a datagram not sent is a datagram lost
        except OSError:
            pass

    def receive(self) -> list[bytes]:
        out: list[bytes] = []
        while len(out) < MAX_BATCH:
            try:
                data, addr = self.sock.recvfrom(MAX_RECEIVE + 1)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionResetError:  # an ICMP unreachable from an earlier send (Windows)
                continue
            except OSError:
                break
            if len(data) > MAX_RECEIVE:
                self.dropped += 1
                continue
            if self.peer is None:
                if not data.startswith(self.accept):  # not one of ours: no peer adopted from it
                    self.dropped += 1
                    continue
                self.peer = addr
            elif addr != self.peer:
                self.dropped += 1
                continue
            out.append(data)
        return out

    def close(self) -> None:
        self.sock.close()


class MemoryLink:
    """One end of an in-process pair (``MemoryLink.pair()``): what one end sends, the other
    receives, in order, at once."""

    def __init__(self) -> None:
        self.inbox: deque[bytes] = deque()
        self.other: MemoryLink | None = None
        self.closed = False

    @classmethod
    def pair(cls) -> tuple["MemoryLink", "MemoryLink"]:
        a, b = cls(), cls()
        a.other, b.other = b, a
        return a, b

    def send(self, data: bytes) -> None:
        if self.other is not None and not self.other.closed and not self.closed:
            self.other.inbox.append(bytes(data))

    def receive(self) -> list[bytes]:
        out: list[bytes] = []
        while self.inbox and len(out) < MAX_BATCH:
            out.append(self.inbox.popleft())
        return out

    def close(self) -> None:
        self.closed = True
        self.inbox.clear()


def _probability(name: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise LinkError(f"SimLink {name}: {v!r} must be a probability from 0 to 1")
    return float(v)


def _seconds(name: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 0.0 <= v <= 60.0):
        raise LinkError(f"SimLink {name}: {v!r} must be a number of seconds from 0 to 60")
    return float(v)


class SimLink:
    """A simulated network in front of ``inner``'s sending side: each datagram sent is lost
    with probability ``loss``, else delivered ``delay`` seconds later plus a uniform
    ``jitter`` (0 to jitter s), held a further ``delay`` with probability ``reorder`` (so a
    later one overtakes it), and sent twice with probability ``duplicate``. Receiving is
    ``inner``'s. Deterministic: the draws come from ``random.Random(seed)`` in the order of
    the sends, the times from ``clock`` (default time.monotonic; tests pass a clock of
    their own). Rejected (LinkError naming it): a probability outside 0-1, a time outside
    0-60 s."""

    def __init__(self, inner: Link, *, delay: float = 0.0, jitter: float = 0.0, loss: float = 0.0,
                 duplicate: float = 0.0, reorder: float = 0.0, seed: int = 0,
                 clock: Callable[[], float] = time.monotonic):
        self.inner = inner
        self.delay, self.jitter = _seconds("delay", delay), _seconds("jitter", jitter)
        self.loss, self.duplicate = _probability("loss", loss), _probability("duplicate", duplicate)
        self.reorder = _probability("reorder", reorder)
        self.rng = random.Random(seed)
        self.clock = clock
        self.queue: list[tuple[float, int, bytes]] = []
        self.serial = 0
        self.sent = self.lost = 0

    def send(self, data: bytes) -> None:
        now = self.clock()
        rng = self.rng
        self.sent += 1
        self.flush(now)
        if rng.random() < self.loss:
            self.lost += 1
            return
        copies = 2 if rng.random() < self.duplicate else 1
        for _ in range(copies):
            at = now + self.delay + rng.random() * self.jitter
            if rng.random() < self.reorder:
                at += self.delay or 0.001
            self.serial += 1
            heapq.heappush(self.queue, (at, self.serial, bytes(data)))

    def flush(self, now: float | None = None) -> None:
        """Hand the inner link every datagram whose time has come."""
        now = self.clock() if now is None else now
        q = self.queue
        while q and q[0][0] <= now:
            self.inner.send(heapq.heappop(q)[2])

    def receive(self) -> list[bytes]:
        self.flush()
        return self.inner.receive()

    def close(self) -> None:
        """Hand the inner link what is still held (a goodbye is not lost to the delay),
        then close it."""
        q = self.queue
        while q:
            self.inner.send(heapq.heappop(q)[2])
        self.inner.close()
