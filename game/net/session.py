"""Rollback sessions: two players in two processes, one fight, as GGPO and GGRS play it.

Each peer builds the same Game (``build()``: the humans, the fight rules), runs its own
players' inputs at once (after ``input_delay`` updates) and predicts the other's (the
last input received, repeated). When a real input arrives that differs from what was
predicted, the session restores the snapshot of that update (a ring of
``max_rollback + 2`` snapshots, written over in place) and runs the updates again to now
with ``ctx.resimulating`` True. Only inputs cross the network.

    session = Session(build, ("p1", "p2"), local="p1", link=UdpLink(("127.0.0.1", 7000), peer))
    session.start()                         # kernels warmed, then the handshake
    while playing:
        session.poll()                      # datagrams in and out
        if session.can_advance():           # not too far ahead of the peer (time sync)
            session.add_local_input("p1", my_input)
            session.advance()               # rollback if needed, then one update

- Fight events (``Fight.on``) reach the handlers once each, as the update finally went:
  they are held until the update's inputs are confirmed (``Fight.event_sink``).
  Animation event handlers (``Game.on``) run in every pass and read
  ``ctx.resimulating`` to skip sounds on the re-runs.
- Desyncs: every ``check_every`` updates the state digest of a confirmed update
  (``state_digest``: ``Game.checksum``) is sent; a differing digest is a desync
  (``stats.desyncs``, a "desync" event).
- The handshake compares the scuffle version, the snapshot format, the configuration
  of the Game each peer built (``config_digest``: ``Game.config_digest``) and its state
  at the first update (``state_digest``); a mismatch raises HandshakeError naming it.
- Time sync: each peer sends how far ahead it runs; the one ahead skips an update now and
  then (``can_advance`` False; ``stats.waits``), as GGPO's frame advantage.
- A peer silent for ``timeout`` seconds ends the session (PeerTimeout); one that leaves
  early, PeerLeft.
- ``finish_at(update)``: no update past it; ``finished`` once both peers have confirmed
  it and compared its digest (``confirmed_checksum``).

``SyncTestSession`` rolls back every update and compares (GGRS's SyncTestSession);
``Spectator`` follows a peer's confirmed inputs. Original: none (ours).
"""
from __future__ import annotations

import math
import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

from scuffle.game.fighters.fightdata import FightEvent
from scuffle.game.fighters.fightinput import FightInput
import scuffle.game.net.wire as wire
from scuffle.game.net.link import Link
from scuffle.game.runtime.snapshot import SNAPSHOT_VERSION, SyncError
from scuffle.game.runtime.version import __version__

if TYPE_CHECKING:
    from scuffle.game.runtime.world import Game

__all__ = ["Session", "SyncTestSession", "Spectator", "SessionStats", "SessionEvent", "NetError",
           "HandshakeError", "PeerTimeout", "PeerLeft", "SessionSetupError", "state_digest", "config_digest",
           "warm_up", "rollback_costs", "MAX_ROLLBACK", "MAX_INPUT_DELAY"]

EMPTY = FightInput.EMPTY
MAX_ROLLBACK = 60            # updates a session may roll back at most (2 s)
MAX_INPUT_DELAY = 30
MAX_AHEAD = 4096             # updates of a peer's inputs held beyond what is confirmed
HELLO_EVERY = 0.05           # s between handshake datagrams
LINGER = 1.0                 # s a finished peer keeps answering so the other finishes too
SILENCE_EVENT = 1.0          # s without a datagram before an "interrupted" event
_SYNC_WINDOW = 30            # updates of frame-advantage samples averaged
_WAIT_GAP = 10               # updates at least between two time-sync waits


class NetError(RuntimeError):
    """A netplay session that cannot go on: the message says why in one line."""


class HandshakeError(NetError):
    """The peers differ in what must be equal (scuffle, snapshot format, Game, players)."""


class PeerTimeout(NetError):
    """The peer sent nothing for the session's timeout."""


class PeerLeft(NetError):
    """The peer closed the session before its end."""


class SessionSetupError(ValueError):
    """A session asked for with wrong arguments: the message names the argument."""


def _version() -> str:
    return __version__


def state_digest(game: Game) -> bytes:
    """The digest of the Game's whole state that peers compare (``Game.checksum``):
    equal states give equal digests on any machine."""
    return bytes.fromhex(game.checksum())


def config_digest(game: Game) -> bytes:
    """The digest of how the Game was set up (``Game.config_digest``: the version, the
    snapshot format, the engine, the options, the humans' sets, the callback kinds, the
    fight rules' settings), compared in the handshake beside the state digest of the
    session's first update."""
    return bytes.fromhex(game.config_digest())


def warm_up(game: Game, updates: int = 4) -> None:
    """Compile (or load) the engine's kernels and run the Game's first updates once, then
    put it back: the session's first update then costs what the others do. Fight events
    of these updates reach no handler."""
    from scuffle.anim.playback.warmup import compile_kernels

    compile_kernels()
    fight: Any = game.fight
    snap = game.snapshot()
    sink = getattr(fight, "event_sink", None)
    if fight is not None:
        fight.event_sink = _drop
    try:
        for _ in range(updates):
            game.step()
        game.checksum()
        again = game.snapshot(reuse=None)
        game.restore(again)
    finally:
        game.restore(snap)
        if fight is not None:
            fight.event_sink = sink


def _drop(ev: FightEvent) -> None:
    """An event sink that keeps nothing."""


def rollback_costs(build: Callable[[], Game], players: Sequence[str],
                   decide: Callable[[Game], Sequence[FightInput]], updates: int = 900,
                   depth: int = 8) -> dict[str, float]:
    """What rollback costs on the Game ``build()`` makes (a host asks whether its game
    affords ``depth`` updates of rollback): ``updates`` updates as a session runs them (a
    snapshot into the ring, then the update), the inputs from ``decide(game)`` (one per
    player); every fifth update a rollback of ``depth`` (a restore, then ``depth``
    snapshots and updates again). Returns milliseconds, wall and CPU: ``frame_ms_p50``,
    ``frame_ms_p99``, ``frame_ms_max``, ``rollback_ms_p50``, ``rollback_ms_p99``,
    ``rollback_ms_max`` (and ``*_cpu`` of each), ``digest_ms`` (a state digest) and
    ``first_update_ms`` (after ``warm_up``). The Game is closed after. Rejected
    (SessionSetupError): ``updates`` < 2 * depth, a depth outside 1-60."""
    depth = _check_int("depth", depth, 1, MAX_ROLLBACK)
    updates = _check_int("updates", updates, 2 * depth, 1_000_000)
    game = build()
    try:
        warm_up(game)
        core = _Core(game, tuple(players), depth + 2, 0, hold_events=True)
        history: dict[int, tuple[FightInput, ...]] = {}
        frames: list[tuple[float, float]] = []
        rollbacks: list[tuple[float, float]] = []
        for f in range(updates):
            inputs = tuple(decide(game))
            history[f] = inputs
            history.pop(f - depth - 2, None)
            w, c = time.perf_counter(), time.process_time()
            core.save(f)
            core.step(f, inputs, resim=False)
            frames.append((time.perf_counter() - w, time.process_time() - c))
            if f >= depth and f % 5 == 0:
                w, c = time.perf_counter(), time.process_time()
                back = f + 1 - depth
                core.load(back)
                for u in range(back, f + 1):
                    if u > back:
                        core.save(u)
                    core.step(u, history[u], resim=True)
                rollbacks.append((time.perf_counter() - w, time.process_time() - c))
            core.deliver(f)
        w = time.perf_counter()
        for _ in range(20):
            state_digest(game)
        digest = (time.perf_counter() - w) / 20
        out: dict[str, float] = {"first_update_ms": round(frames[0][0] * 1000.0, 4),
                                 "digest_ms": round(digest * 1000.0, 4)}
        for name, xs in (("frame", frames[1:]), ("rollback", rollbacks)):
            for k, suffix in ((0, ""), (1, "_cpu")):
                v = sorted(x[k] * 1000.0 for x in xs)
                out[f"{name}_ms_p50{suffix}"] = round(v[len(v) // 2], 4)
                out[f"{name}_ms_p99{suffix}"] = round(v[min(len(v) - 1, int(len(v) * 0.99))], 4)
                out[f"{name}_ms_max{suffix}"] = round(v[-1], 4)
        core.close()
        return out
    finally:
        game.close()


@dataclass
class SessionStats:
    """A session's counts (``Session.stats``).

    ``updates`` run the first time; ``rollbacks`` and ``resimulated`` (updates run again);
    ``depths[d]`` rollbacks of d updates, ``max_depth``; ``stalls`` advances refused by the
    rollback limit (waiting for the peer's inputs); ``waits`` updates skipped by time
    sync; ``desyncs`` and ``checks`` (digests compared); ``rtt_ms`` the round-trip time
    (smoothed); ``worst_frame_ms`` the longest ``advance()``; ``sent``, ``received``,
    ``bad`` datagrams (bad: dropped as malformed)."""

    updates: int = 0
    rollbacks: int = 0
    resimulated: int = 0
    depths: list[int] = field(default_factory=list)
    max_depth: int = 0
    stalls: int = 0
    waits: int = 0
    desyncs: int = 0
    checks: int = 0
    rtt_ms: float = 0.0
    worst_frame_ms: float = 0.0
    sent: int = 0
    received: int = 0
    bad: int = 0
    frame_ms: deque[float] = field(default_factory=lambda: deque(maxlen=4096))

    def rollback(self, depth: int) -> None:
        self.rollbacks += 1
        self.resimulated += depth
        while len(self.depths) <= depth:
            self.depths.append(0)
        self.depths[depth] += 1
        self.max_depth = max(self.max_depth, depth)

    def percentile(self, q: float) -> float:
        """The ``q`` percentile (0-100) of the recent ``advance()`` times, in ms."""
        if not self.frame_ms:
            return 0.0
        xs = sorted(self.frame_ms)
        return float(xs[min(len(xs) - 1, int(math.ceil(q / 100.0 * len(xs))) - 1 if q > 0 else 0)])

    def summary(self) -> dict[str, Any]:
        """The counts as plain JSON values."""
        return {"updates": self.updates, "rollbacks": self.rollbacks, "resimulated": self.resimulated,
                "depths": list(self.depths), "max_depth": self.max_depth, "stalls": self.stalls, "waits": self.waits,
                "desyncs": self.desyncs, "checks": self.checks, "rtt_ms": round(self.rtt_ms, 3),
                "worst_frame_ms": round(self.worst_frame_ms, 3), "p99_frame_ms": round(self.percentile(99), 3),
                "sent": self.sent, "received": self.received, "bad": self.bad}


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """Something a session tells its host (``Session.events()``): ``kind`` one of
    "synchronized", "desync", "interrupted", "resumed", "peer_finished", "spectator_left";
    ``update`` the update it concerns; ``detail`` a sentence."""

    kind: str
    update: int
    detail: str = ""


def _check_int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise SessionSetupError(f"{name}: {v!r} must be a whole number {lo}-{hi}")
    return int(v)


def _check_seconds(name: str, v: Any, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and lo < v <= hi):
        raise SessionSetupError(f"{name}: {v!r} must be a number of seconds > {lo:g} and <= {hi:g}")
    return float(v)


class _Core:
    """The rollback machinery on one Game: the inputs action, the snapshot ring, the held
    fight events and the digests (Session and SyncTestSession share it)."""

    def __init__(self, game: Game, players: tuple[str, ...], ring: int, check_every: int, hold_events: bool):
        fight: Any = game.fight
        if fight is None or not callable(getattr(fight, "apply", None)):
            raise SessionSetupError("build: the Game has no fight rules (attach a Fight: it applies the inputs)")
        for p in players:
            game.entity(p)                                 # UnknownHuman for a player who is not there
        self.game, self.fight, self.players = game, fight, players
        self.size = ring
        self.ring: list[Any] = [None] * ring
        self.inputs: tuple[FightInput, ...] = (EMPTY,) * len(players)
        self.check_every = check_every
        self.digests: dict[int, bytes] = {}
        self.held: list[list[FightEvent]] = [[] for _ in range(ring)]
        self.hold_events = hold_events
        self.muted = False
        # the inputs are applied where a scenario's commands are: in the actions phase,
        # before the fight rules' own update (and after any action the build put first)
        actions = game.ctx.actions
        upd = getattr(fight, "_update", None)
        at = actions.index(upd) if upd in actions else 0
        actions.insert(at, self._apply)
        if hold_events:
            fight.event_sink = self._hold

    def _apply(self, ctx: Any) -> None:
        apply = self.fight.apply
        for name, inp in zip(self.players, self.inputs):
            if inp is not EMPTY:
                apply(name, inp)

    def _hold(self, ev: FightEvent) -> None:
        if not self.muted:
            self.held[ev.update % self.size].append(ev)

    def save(self, update: int) -> None:
        """The snapshot of the state at the start of ``update`` into its ring slot (the
        slot's older snapshot written over); its digest on check updates."""
        slot = update % self.size
        self.ring[slot] = self.game.snapshot(reuse=self.ring[slot])
        if self.check_every and update % self.check_every == 0 and update > 0:
            self.digests[update] = state_digest(self.game)

    def load(self, update: int) -> None:
        snap = self.ring[update % self.size]
        if snap is None or snap.update != update:
            raise NetError(f"netplay: no snapshot of update {update} to roll back to (ring of {self.size})")
        self.game.restore(snap)

    def step(self, update: int, inputs: tuple[FightInput, ...], resim: bool) -> None:
        self.inputs = inputs
        self.held[update % self.size].clear()
        ctx = self.game.ctx
        ctx.resimulating = resim
        try:
            self.game.step()
        finally:
            ctx.resimulating = False
            self.inputs = (EMPTY,) * len(self.players)

    def deliver(self, update: int) -> None:
        """Give the held fight events of ``update`` (final) to the fight's handlers."""
        slot = self.held[update % self.size]
        if not slot:
            return
        events, slot[:] = list(slot), []
        listeners = self.fight.listeners
        for ev in events:
            for h in list(listeners.get(ev.kind, ())):
                h(ev)

    def close(self) -> None:
        actions = self.game.ctx.actions
        if self._apply in actions:
            actions.remove(self._apply)
        if self.fight.event_sink == self._hold:
            self.fight.event_sink = None
        self.ring = [None] * self.size


class _Remote:
    """What a session knows of one endpoint (the peer or a spectator)."""

    def __init__(self, link: Link, now: float):
        self.link = link
        self.heard_hello = False          # its HELLO received (and found equal)
        self.heard_us = False             # it has received ours
        self.last_heard = now
        self.interrupted = False
        self.ping = 0                     # its last ping and when it came
        self.ping_at = now
        self.rtt = 0.0                    # s, smoothed
        self.have = 0                     # (spectator) updates it holds


class Session:
    """A rollback session of one peer (see the module docstring).

    In: ``build()`` -> the Game (the same on both peers: humans, fight rules; it may put
    its own actions first in the actions phase, e.g. the fighters' first loop at update
    0); ``players`` the fighters' names in the session's order (the same on both peers);
    ``local`` this peer's player(s) (the rest are the peer's); ``link`` to the peer
    (scuffle.game.net.link); ``input_delay`` updates (0-30) before a local input is run;
    ``max_rollback`` (1-60) updates of prediction at most; ``check_every`` updates between
    compared digests (0: none); ``frame_seconds`` the update's wall time (time sync and
    round-trip in updates); ``timeout`` s of silence that end the session; ``clock`` the
    time source (tests pass their own); ``spectators`` links to spectators; ``warm``
    compile and run the first updates ahead in ``start()``; ``handshake_timeout`` s that
    ``poll()`` waits for the handshake (``start(wait=)`` has its own).
    Rejected (SessionSetupError naming the argument): values outside those ranges, players
    that repeat, a local player not among them, no remote player, a Game without fight
    rules or without one of the players.
    """

    def __init__(self, build: Callable[[], Any], players: Sequence[str], local: str | Sequence[str], link: Link, *,
                 input_delay: int = 2, max_rollback: int = 8, check_every: int = 30, frame_seconds: float = 1 / 30,
                 timeout: float = 5.0, clock: Callable[[], float] = time.monotonic,
                 spectators: Sequence[Link] = (), warm: bool = True, handshake_timeout: float = 60.0):
        players = tuple(players)
        if not players or len(players) > wire.MAX_PLAYERS or len(set(players)) != len(players) or \
                not all(isinstance(p, str) and p for p in players):
            raise SessionSetupError(f"players: {players!r} must be 1-{wire.MAX_PLAYERS} different names")
        locals_ = (local,) if isinstance(local, str) else tuple(local)
        if not locals_ or any(p not in players for p in locals_):
            raise SessionSetupError(f"local: {local!r} must name players of {players!r}")
        if len(locals_) == len(players):
            raise SessionSetupError("local: every player is local; a session needs the peer's player(s)")
        self.input_delay = _check_int("input_delay", input_delay, 0, MAX_INPUT_DELAY)
        self.max_rollback = _check_int("max_rollback", max_rollback, 1, MAX_ROLLBACK)
        self.check_every = _check_int("check_every", check_every, 0, 1 << 20)
        self.frame_seconds = _check_seconds("frame_seconds", frame_seconds, 0.0, 1.0)
        self.timeout = _check_seconds("timeout", timeout, 0.0, 3600.0)
        self.handshake_timeout = _check_seconds("handshake_timeout", handshake_timeout, 0.0, 3600.0)
        self.clock = clock
        self.players = players
        self.local_mask = sum(1 << i for i, p in enumerate(players) if p in locals_)
        self.local_idx = [i for i in range(len(players)) if self.local_mask >> i & 1]
        self.remote_idx = [i for i in range(len(players)) if not self.local_mask >> i & 1]
        self.game = build()
        self.core = _Core(self.game, players, self.max_rollback + 2, self.check_every, hold_events=True)
        self.warm = bool(warm)
        self.base = self.game.update                      # the first update of the session
        self.frame = self.base                            # the next update to run
        n = len(players)
        # every player's inputs by update (None: not received yet); frames before base: none
        self.known: list[list[FightInput | None]] = [[EMPTY] * self.base for _ in range(n)]
        self.have = [self.base] * n                       # updates known without a gap, per player
        for i in self.local_idx:
            self.known[i].extend([EMPTY] * self.input_delay)
            self.have[i] = len(self.known[i])
        self.pending: dict[int, FightInput] = {}          # local inputs given for the next advance
        self.used: dict[int, tuple[FightInput, ...]] = {}  # inputs an unconfirmed update ran with
        self.first_wrong: int | None = None
        self.delivered = self.base                         # fight events given up to here
        self.stats = SessionStats()
        self._events: list[SessionEvent] = []
        now = self._born = clock()
        self.peer = _Remote(link, now)
        self.spectators = [_Remote(s, now) for s in spectators]
        self.synchronized = False
        self.nonce = os.getpid() & 0xFFFFFFFF               # tells two runs on one port apart in a capture
        self.config = config_digest(self.game)
        self.start_digest = state_digest(self.game)
        self._hello_sent = -math.inf
        self._last_sent = -math.inf
        self.peer_frame = self.base
        self.peer_confirmed = self.base
        self.peer_ack = self.base                         # updates of our inputs the peer holds
        self.remote_adv = 0.0
        self.adv_samples: deque[float] = deque(maxlen=_SYNC_WINDOW)
        self._verdict: bool | None = None                  # can_advance()'s answer for the next advance()
        self._last_wait = -_WAIT_GAP
        self.my_checks: dict[int, bytes] = {}
        self.peer_checks: dict[int, bytes] = {}
        self.checks_out: deque[tuple[int, bytes]] = deque(maxlen=4)
        self.stop_at: int | None = None
        self.confirmed_checksum: str | None = None
        self.peer_finished = False
        self.final_compared = False
        self.left: str | None = None
        self.closed = False

    # ------------------------------------------------------------ set-up
    def start(self, wait: float = 30.0) -> None:
        """Warm the kernels (``warm``), then shake hands with the peer (and the
        spectators): blocks until done, at most ``wait`` seconds. Raised: HandshakeError
        (the peers differ: the message names what), PeerTimeout (no answer in time)."""
        if self.warm:
            warm_up(self.game)
        self._born = self.clock()
        self.handshake_timeout = max(self.handshake_timeout, _check_seconds("wait", wait, 0.0, 3600.0))
        end = self.clock() + wait
        while not self.synchronized or any(not s.heard_hello for s in self.spectators):
            self.poll()
            if self.clock() > end:
                who = "the peer" if not self.synchronized else "a spectator"
                raise PeerTimeout(f"netplay: no handshake from {who} in {wait:g} s")
            time.sleep(0.002)
        for s in self.spectators:
            s.last_heard = self.clock()

    def finish_at(self, update: int) -> None:
        """Run no update past ``update``; ``finished`` turns True once both peers have
        confirmed it and compared its digest (``confirmed_checksum``)."""
        self.stop_at = _check_int("finish_at", update, self.base, wire.MAX_UPDATE - MAX_AHEAD)

    # ------------------------------------------------------------ the loop
    @property
    def confirmed_update(self) -> int:
        """Updates run with every input final: the state after them is the same on both
        peers (the session's confirmed update)."""
        return int(min(min(self.have), self.frame))

    @property
    def finished(self) -> bool:
        return self.confirmed_checksum is not None and self.final_compared

    @property
    def frames_ahead(self) -> float:
        """How many updates this peer runs ahead of the other (averaged; negative: behind)."""
        return sum(self.adv_samples) / len(self.adv_samples) if self.adv_samples else 0.0

    def events(self) -> list[SessionEvent]:
        """The events since the last call (see SessionEvent)."""
        out, self._events = self._events, []
        return out

    def add_local_input(self, player: str, inp: FightInput) -> None:
        """This peer's player's input for the next ``advance()`` (run ``input_delay``
        updates later). Rejected (SessionSetupError): a player that is not local here;
        TypeError for an input that is not a FightInput."""
        i = self.players.index(player) if player in self.players else -1
        if i < 0 or not self.local_mask >> i & 1:
            raise SessionSetupError(f"add_local_input: {player!r} is not a local player ({self._names(self.local_idx)})")
        if inp.__class__ is not FightInput:
            raise TypeError(f"add_local_input: {inp!r} is not a FightInput")
        self.pending[i] = inp

    def can_advance(self) -> bool:
        """Whether the next ``advance()`` will run an update: synchronized, not at
        ``finish_at``, within ``max_rollback`` of the peer's inputs, and not asked to wait
        by time sync. Decided once per ``advance()`` (asking twice gives one answer)."""
        if self._verdict is None:
            self._verdict = self._decide()
        return self._verdict

    def _decide(self) -> bool:
        if not self.synchronized or self.closed:
            return False
        if self.stop_at is not None and self.frame >= self.stop_at:
            return False
        if self.frame + 1 - min(self.have) > self.max_rollback:
            self.stats.stalls += 1
            return False
        if len(self.adv_samples) >= _SYNC_WINDOW // 2 and self.frame - self._last_wait >= _WAIT_GAP and \
                self.frames_ahead >= 1.0:
            self._last_wait = self.frame
            self.stats.waits += 1
            return False
        return True

    def advance(self) -> bool:
        """Roll back if a received input differs from its prediction, then run one update
        with this peer's inputs (EMPTY for a local player given none) and the peer's (as
        received, else predicted). Returns False when no update was run (still shaking
        hands, or ``can_advance`` False: the rollback limit counts a stall). Raised:
        PeerTimeout, PeerLeft, HandshakeError (see ``poll``)."""
        t0 = time.perf_counter()
        self.poll()
        if not self.synchronized:
            return False                                 # still shaking hands (poll() raises if it takes too long)
        self._rollback()
        ok = self.can_advance()
        self._verdict = None
        if ok:
            for i in self.local_idx:
                self.known[i].append(self.pending.get(i, EMPTY))
                self.have[i] = len(self.known[i])
            self.pending.clear()
            f = self.frame
            self.core.save(f)
            inputs = self._inputs_for(f)
            self.used[f] = inputs
            self.core.step(f, inputs, resim=False)
            self.frame = f + 1
            self.stats.updates += 1
            if self.peer_frame >= self.base:
                est = self.peer_frame + (self.peer.rtt / 2 + (self.clock() - self.peer.last_heard)) / self.frame_seconds
                self.adv_samples.append(((self.frame - est) - self.remote_adv) / 2)
        self._confirm()
        self._send(force=ok)
        ms = (time.perf_counter() - t0) * 1000.0
        if ok:
            self.stats.frame_ms.append(ms)
            self.stats.worst_frame_ms = max(self.stats.worst_frame_ms, ms)
        return ok

    def _inputs_for(self, update: int) -> tuple[FightInput, ...]:
        out = []
        for i, lst in enumerate(self.known):
            inp = lst[update] if update < len(lst) else None
            if inp is None:                                  # predicted: the last input known without a gap
                h = self.have[i]
                inp = lst[h - 1] if h > self.base else EMPTY
            out.append(inp)
        return tuple(out)

    def _rollback(self) -> None:
        f = self.first_wrong
        self.first_wrong = None
        if f is None or f >= self.frame:
            return
        core = self.core
        core.load(f)
        for u in range(f, self.frame):
            if u > f:
                core.save(u)
            inputs = self._inputs_for(u)
            self.used[u] = inputs
            core.step(u, inputs, resim=True)
        self.stats.rollback(self.frame - f)

    def _confirm(self) -> None:
        """After the rollback: the confirmed updates' events to the handlers, their digests
        to the peer, the final digest at ``finish_at``."""
        c = self.confirmed_update
        while self.delivered < c:
            self.core.deliver(self.delivered)
            self.used.pop(self.delivered, None)
            self.delivered += 1
        for u in [u for u in self.core.digests if u <= c]:
            d = self.core.digests.pop(u)
            self.my_checks[u] = d
            self.checks_out.append((u, d))
        if self.stop_at is not None and self.confirmed_checksum is None and self.frame == self.stop_at \
                and c == self.stop_at and self.first_wrong is None:
            d = state_digest(self.game)
            self.confirmed_checksum = d.hex()
            self.my_checks[self.stop_at] = d
            self.checks_out.append((self.stop_at, d))
        self._compare()

    def _compare(self) -> None:
        for u in sorted(set(self.my_checks) & set(self.peer_checks)):
            mine, theirs = self.my_checks.pop(u), self.peer_checks.pop(u)
            self.stats.checks += 1
            if mine[:wire.DIGEST_BYTES] != theirs[:wire.DIGEST_BYTES]:
                self.stats.desyncs += 1
                self._events.append(SessionEvent("desync", u, f"the state digests differ at update {u}: "
                                                              f"{mine[:8].hex()} here, {theirs[:8].hex()} there"))
            if u == self.stop_at:
                self.final_compared = True
        for d in (self.my_checks, self.peer_checks):     # bounded: the oldest go
            while len(d) > 64:
                d.pop(min(d))

    # ------------------------------------------------------------ the network
    def poll(self) -> None:
        """Read every datagram waiting (the handshake, the peer's inputs, its digests,
        spectators' acks) and send what is due. Raised: HandshakeError, PeerTimeout (no
        datagram from the peer for ``timeout`` s), PeerLeft (the peer closed first)."""
        if self.closed:
            return
        now = self.clock()
        for data in self.peer.link.receive():
            self._receive(self.peer, data, now)
        for s in list(self.spectators):
            for data in s.link.receive():
                self._receive(s, data, now)
        if self.left is not None:
            raise PeerLeft(self.left)
        if self.synchronized and self.stop_at is not None and self.frame >= self.stop_at:
            self._rollback()                             # the end: no advance() runs them any more
            self._confirm()
        if not self.synchronized:
            if now - self._born > self.handshake_timeout:
                raise PeerTimeout(f"netplay: no handshake from the peer in {self.handshake_timeout:g} s")
            if now - self._hello_sent >= HELLO_EVERY:
                self._hello(self.peer)
                self._hello_sent = now
            return
        for s in self.spectators:
            if not s.heard_hello and now - s.ping_at >= HELLO_EVERY:
                self._hello(s)
                s.ping_at = now
        silent = now - self.peer.last_heard
        if silent > self.timeout:
            raise PeerTimeout(f"netplay: no word from the peer for {self.timeout:g} s (at update {self.frame}, "
                              f"confirmed {self.confirmed_update}): the session ends")
        if silent > SILENCE_EVENT and not self.peer.interrupted:
            self.peer.interrupted = True
            self._events.append(SessionEvent("interrupted", self.frame, f"no word from the peer for {silent:.1f} s"))
        for s in list(self.spectators):
            if now - s.last_heard > self.timeout:
                self.spectators.remove(s)
                self._events.append(SessionEvent("spectator_left", self.frame, "a spectator stopped answering"))
        self._send(force=False)

    def _hello(self, r: _Remote) -> None:
        flags = wire.WireFlags.HEARD if r.heard_hello else 0
        msg = wire.Hello(int(flags), self.nonce, SNAPSHOT_VERSION, self.config, self.start_digest, _version(),
                         self.players, self.local_mask)
        self._put(r, msg.to_bytes())

    def _put(self, r: _Remote, data: bytes) -> None:
        r.link.send(data)
        self.stats.sent += 1

    def _receive(self, r: _Remote, data: bytes, now: float) -> None:
        n_remote = len(self.remote_idx)
        try:
            msg = wire.read(data, n_remote, len(self.players))
        except wire.WireError:
            self.stats.bad += 1
            return
        self.stats.received += 1
        spectator = r is not self.peer
        if isinstance(msg, wire.Hello):
            self._check_hello(msg, spectator)
            r.heard_hello = True
            if msg.flags & wire.WireFlags.HEARD:
                r.heard_us = True
            r.last_heard = now
            if not spectator and not msg.flags & wire.WireFlags.HEARD or spectator:
                self._hello(r)                          # answer, so it hears us
            self._synced()
            return
        if not r.heard_hello:
            return                                      # nothing counts before its HELLO
        r.last_heard = now
        if r.interrupted:
            r.interrupted = False
            self._events.append(SessionEvent("resumed", self.frame, "the peer is heard again"))
        if isinstance(msg, wire.SpecAck):
            if spectator:
                r.have = max(r.have, min(msg.have, self.confirmed_update))
            return
        if spectator:
            return
        if isinstance(msg, wire.Bye):
            if msg.flags & wire.WireFlags.FINISHED:
                self.peer_finished = True
            elif not self.finished:
                self.left = (f"netplay: the peer left the session at update {self.frame} "
                             f"(confirmed {self.confirmed_update})")
            return
        if isinstance(msg, wire.Inputs):
            r.heard_us = True
            self._synced()
            self._inputs(msg, now)

    def _check_hello(self, msg: wire.Hello, spectator: bool) -> None:
        diffs = []
        if msg.version != _version():
            diffs.append(f"scuffle {msg.version} there, {_version()} here")
        if msg.snapshot_version != SNAPSHOT_VERSION:
            diffs.append(f"snapshot format {msg.snapshot_version} there, {SNAPSHOT_VERSION} here")
        if msg.players != self.players:
            diffs.append(f"players {list(msg.players)} there, {list(self.players)} here")
        elif spectator:
            if not msg.flags & wire.WireFlags.SPECTATOR or msg.local_mask:
                diffs.append("a spectator link answered as a player")
        elif msg.local_mask != ((1 << len(self.players)) - 1) ^ self.local_mask:
            diffs.append(f"local players {self._names_mask(msg.local_mask)} there, "
                         f"{self._names_mask(self.local_mask)} here")
        if msg.config != self.config:
            diffs.append("the Game each built is set up otherwise (Game.config_digest): the same build() on both?")
        elif msg.start != self.start_digest:
            diffs.append("the Game each built starts in another state (the state digest of the first update: "
                         "positions, health...): the same build() on both?")
        if diffs:
            raise HandshakeError("netplay handshake: " + "; ".join(diffs))

    def _names(self, idx: Any) -> str:
        return ", ".join(self.players[i] for i in idx)

    def _names_mask(self, mask: int) -> str:
        return "[" + self._names(i for i in range(len(self.players)) if mask >> i & 1) + "]"

    def _synced(self) -> None:
        p = self.peer
        if not self.synchronized and p.heard_hello and p.heard_us:
            self.synchronized = True
            p.last_heard = self.clock()
            self._events.append(SessionEvent("synchronized", self.frame, "the peer answered the handshake"))

    def _inputs(self, msg: wire.Inputs, now: float) -> None:
        p = self.peer
        if msg.ping != p.ping:
            p.ping, p.ping_at = msg.ping, now
        if msg.echo:
            sample = ((int(now * 1000) - msg.echo) & 0xFFFFFFFF) - msg.echo_hold
            if 0 <= sample < 60_000:
                s = sample / 1000.0
                p.rtt = s if self.stats.rtt_ms == 0.0 else p.rtt * 0.875 + s * 0.125
                self.stats.rtt_ms = p.rtt * 1000.0
        if msg.frame >= self.peer_frame:
            self.peer_frame = msg.frame
            self.remote_adv = msg.advantage
        self.peer_confirmed = max(self.peer_confirmed, msg.confirmed)
        self.peer_ack = max(self.peer_ack, min(msg.ack, min(len(self.known[i]) for i in self.local_idx)))
        if msg.flags & wire.WireFlags.FINISHED:
            self.peer_finished = True
        limit = min(self.have[i] for i in self.remote_idx) + MAX_AHEAD
        for k, row in enumerate(msg.inputs):
            u = msg.first + k
            if u >= limit:
                break
            for i, inp in zip(self.remote_idx, row):
                if u < self.have[i]:
                    continue
                lst = self.known[i]
                if len(lst) <= u:
                    lst.extend([None] * (u + 1 - len(lst)))
                if lst[u] is not None:
                    continue
                lst[u] = inp
                if u < self.frame:
                    used = self.used.get(u)
                    if used is not None and used[i] != inp:
                        self.first_wrong = u if self.first_wrong is None else min(self.first_wrong, u)
                h = self.have[i]
                while h < len(lst) and lst[h] is not None:
                    h += 1
                self.have[i] = h
        for u, d in msg.checks:
            if u <= self.frame + MAX_AHEAD:
                self.peer_checks[u] = d
        self._compare()

    def _send(self, force: bool) -> None:
        now = self.clock()
        if not self.synchronized or (not force and now - self._last_sent < self.frame_seconds / 2):
            return
        self._last_sent = now
        p = self.peer
        first = self.peer_ack
        end = min(len(self.known[i]) for i in self.local_idx)
        rows: list[tuple[FightInput, ...]] = []
        size = 64 + len(self.checks_out) * 20
        for u in range(first, min(end, first + wire.MAX_FRAMES)):
            row = cast(tuple[FightInput, ...], tuple(self.known[i][u] for i in self.local_idx))
            size += wire.frame_size(row)
            if size > wire.MAX_DATAGRAM:
                break
            rows.append(row)
        est = self.peer_frame + (p.rtt / 2 + (now - p.last_heard)) / self.frame_seconds
        adv = self.frame - est
        msg = wire.Inputs(int(wire.WireFlags.FINISHED) if self.finished else 0, self.frame,
                          min(self.have[i] for i in self.remote_idx), self.confirmed_update, adv,
                          int(now * 1000) & 0xFFFFFFFF or 1, p.ping, int((now - p.ping_at) * 1000) if p.ping else 0,
                          first, tuple(rows), tuple(self.checks_out))
        self._put(p, msg.to_bytes())
        for s in self.spectators:
            if s.heard_hello:
                self._feed(s)

    def _feed(self, s: _Remote) -> None:
        c = self.confirmed_update
        rows = []
        size = 32
        for u in range(s.have, min(c, s.have + wire.MAX_FRAMES)):
            row = cast(tuple[FightInput, ...], tuple(lst[u] for lst in self.known))   # confirmed: no None
            size += wire.frame_size(row)
            if size > wire.MAX_DATAGRAM:
                break
            rows.append(row)
        self._put(s, wire.Confirmed(s.have, tuple(rows), self.frame).to_bytes())

    # ------------------------------------------------------------ the end
    def confirmed_inputs(self, upto: int | None = None) -> list[tuple[FightInput, ...]]:
        """Every player's input of each confirmed update from the session's first (in
        ``players`` order): what a single process fed them runs to the same states."""
        c = self.confirmed_update if upto is None else min(upto, self.confirmed_update)
        return [cast(tuple[FightInput, ...], tuple(lst[u] for lst in self.known)) for u in range(self.base, c)]

    def close(self, linger: float = LINGER) -> None:
        """Leave the session: a finished peer first keeps answering (at most ``linger``
        s) until the other has finished too, then says goodbye. The Game stays open (the
        caller's). Safe to call twice."""
        if self.closed:
            return
        try:
            if self.finished and not self.peer_finished:
                end = self.clock() + linger
                while not self.peer_finished and self.clock() < end:
                    try:
                        self.poll()
                    except NetError:
                        break
                    self._send(force=True)
                    time.sleep(0.005)
            bye = wire.Bye(int(wire.WireFlags.FINISHED) if self.finished else 0).to_bytes()
            for _ in range(3):
                self._put(self.peer, bye)
        finally:
            self.closed = True
            self.core.close()
            self.peer.link.close()
            for s in self.spectators:
                s.link.close()


class SyncTestSession:
    """GGRS's SyncTestSession on a Game: every update is run, then the last
    ``check_distance`` updates are rolled back and run again with the same inputs, and
    each state's digest is compared with the first run's. No network. Fight events reach
    the handlers once (from the first run); re-runs have ``ctx.resimulating`` True.

    ``advance(inputs)``: one FightInput per player (``players`` order). Raised: SyncError
    (scuffle.game.runtime.snapshot's) naming the update and the distance whose digests
    differ: state kept outside the snapshot. Rejected (SessionSetupError): a distance
    outside 1-60, inputs that are not one FightInput per player."""

    def __init__(self, build: Callable[[], Any], players: Sequence[str], check_distance: int = 2):
        self.check_distance = _check_int("check_distance", check_distance, 1, MAX_ROLLBACK)
        self.players = tuple(players)
        self.game = build()
        self.core = _Core(self.game, self.players, self.check_distance + 2, 0, hold_events=True)
        self.inputs: deque[tuple[FightInput, ...]] = deque(maxlen=self.check_distance + 1)
        self.digests: dict[int, bytes] = {}
        self.stats = SessionStats()

    def advance(self, inputs: Sequence[FightInput]) -> None:
        inputs = tuple(inputs)
        if len(inputs) != len(self.players) or any(i.__class__ is not FightInput for i in inputs):
            raise SessionSetupError(f"SyncTestSession.advance: {len(self.players)} FightInputs, one per player")
        core, game = self.core, self.game
        f = game.update
        core.save(f)
        core.step(f, inputs, resim=False)
        core.deliver(f)
        self.inputs.append(inputs)
        self.stats.updates += 1
        self.digests[f + 1] = state_digest(game)
        self.digests.pop(f + 1 - self.check_distance - 2, None)
        back = min(self.check_distance, len(self.inputs))
        start = f + 1 - back
        core.muted = True
        try:
            core.load(start)
            for k, u in enumerate(range(start, f + 1)):
                if u > start:
                    core.save(u)
                    self._compare(u, back)
                core.step(u, self.inputs[len(self.inputs) - back + k], resim=True)
        finally:
            core.muted = False
        self._compare(f + 1, back)
        self.stats.rollback(back)

    def _compare(self, u: int, back: int) -> None:
        d = state_digest(self.game)
        if d != self.digests.get(u, d):
            raise SyncError(f"SyncTestSession: update {u}'s state differs after a rollback of {back} updates "
                            f"(first run {self.digests[u][:8].hex()}, re-run {d[:8].hex()}): state kept outside "
                            f"the snapshot")
        self.digests[u] = d
        self.stats.checks += 1

    def close(self) -> None:
        self.core.close()


class Spectator:
    """Follows a session from one of its peers: receives the confirmed inputs only and
    runs them (no prediction, no rollback), its fight events at once.

    In: ``build``, ``players`` as the peers'; ``link`` to the peer (given to that peer's
    Session as one of its ``spectators``). ``start()`` shakes hands; ``poll()`` reads;
    ``advance(max_updates)`` runs the updates whose inputs are in (returns how many).
    Raised: HandshakeError, PeerTimeout (no word for ``timeout`` s)."""

    def __init__(self, build: Callable[[], Any], players: Sequence[str], link: Link, *, timeout: float = 5.0,
                 clock: Callable[[], float] = time.monotonic):
        self.players = tuple(players)
        self.game = build()
        self.core = _Core(self.game, self.players, 2, 0, hold_events=False)
        self.timeout = _check_seconds("timeout", timeout, 0.0, 3600.0)
        self.clock = clock
        self.link = link
        self.config = config_digest(self.game)
        self.start_digest = state_digest(self.game)
        self.inputs: dict[int, tuple[FightInput, ...]] = {}
        self.have = self.game.update
        self.peer_frame = self.have
        self.heard = False
        self.last_heard = clock()
        self._hello_at = -math.inf
        self._acked, self._ack_at = -1, -math.inf
        self.stats = SessionStats()

    @property
    def update(self) -> int:
        return int(self.game.update)

    def start(self, wait: float = 30.0) -> None:
        end = self.clock() + wait
        while not self.heard:
            self.poll()
            if self.clock() > end:
                raise PeerTimeout(f"netplay: no handshake from the peer in {wait:g} s")
            time.sleep(0.002)

    def poll(self) -> None:
        now = self.clock()
        for data in self.link.receive():
            try:
                msg = wire.read(data, 0, len(self.players))
            except wire.WireError:
                self.stats.bad += 1
                continue
            self.stats.received += 1
            if isinstance(msg, wire.Hello):
                diffs = []
                if msg.version != _version() or msg.snapshot_version != SNAPSHOT_VERSION:
                    diffs.append(f"scuffle {msg.version} / snapshot {msg.snapshot_version} there")
                if msg.players != self.players:
                    diffs.append(f"players {list(msg.players)} there, {list(self.players)} here")
                if msg.config != self.config or msg.start != self.start_digest:
                    diffs.append("the Game each built differs (Game.config_digest, or the first update's state)")
                if diffs:
                    raise HandshakeError("netplay handshake (spectator): " + "; ".join(diffs))
                self.heard = True
                self.last_heard = now
                if not msg.flags & wire.WireFlags.HEARD:      # the peer has not heard us: answer
                    self._hello(heard=True)
            elif isinstance(msg, wire.Confirmed) and self.heard:
                self.last_heard = now
                self.peer_frame = max(self.peer_frame, msg.frame)
                for k, row in enumerate(msg.inputs):
                    u = msg.first + k
                    if self.have <= u < self.have + MAX_AHEAD:
                        self.inputs.setdefault(u, row)
                while self.have in self.inputs:
                    self.have += 1
            elif isinstance(msg, wire.Bye) and self.heard:
                self.last_heard = now
        if not self.heard:
            if now - self._hello_at >= HELLO_EVERY:
                self._hello_at = now
                self._hello(heard=False)
            return
        if now - self.last_heard > self.timeout:
            raise PeerTimeout(f"netplay: no word from the peer for {self.timeout:g} s (spectator at update "
                              f"{self.update}): the session ends")
        if self.have != self._acked or now - self._ack_at >= HELLO_EVERY:
            self._acked, self._ack_at = self.have, now
            self.link.send(wire.SpecAck(self.have).to_bytes())
            self.stats.sent += 1

    def _hello(self, heard: bool) -> None:
        flags = wire.WireFlags.SPECTATOR | (wire.WireFlags.HEARD if heard else 0)
        self.link.send(wire.Hello(int(flags), 0, SNAPSHOT_VERSION, self.config, self.start_digest, _version(),
                                  self.players, 0).to_bytes())
        self.stats.sent += 1

    def advance(self, max_updates: int = 1) -> int:
        """Run up to ``max_updates`` updates whose inputs have come; returns how many."""
        n = 0
        while n < max_updates and self.game.update < self.have:
            u = self.game.update
            self.core.step(u, self.inputs.pop(u), resim=False)
            self.stats.updates += 1
            n += 1
        return n

    def close(self) -> None:
        self.core.close()
        self.link.close()

