"""Rollback sessions in one process (no sockets): two peers over a lossy, late, jittery
simulated link; the sync test; the handshake; a peer that stops answering."""
from __future__ import annotations

import pytest

from nethelp import DT, PLAYERS, Clock, build, pair, play
from scuffle.anim.data.clip import EventType
from scuffle.game.fighters.fightinput import Action, FightInput
from scuffle.game.runtime.snapshot import SyncError
from scuffle.net import (HandshakeError, MemoryLink, PeerLeft, PeerTimeout, Session, SessionSetupError, SimLink,
                         Spectator, SyncTestSession)

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

UPDATES = 240


def _single(inputs, health: float = 100.0):
    """One process fed the confirmed inputs: (its Game, the fight events it heard)."""
    g = build(health)
    heard = []
    for kind in ("hit", "grab", "throw", "ko", "miss"):
        g.fight.on(kind, heard.append)

    def feed(ctx) -> None:
        for name, inp in zip(PLAYERS, inputs[ctx.update]):
            g.fight.apply(name, inp)
    g.ctx.actions.insert(g.ctx.actions.index(g.fight._update), feed)
    for _ in inputs:
        g.step()
    return g, heard


def test_two_peers_over_a_lossy_late_link_agree_with_one_process():
    """20% loss, 6 updates late each way (plus jitter, duplicates, reordering), input
    delay 2, rollback up to 8: no desync, the same confirmed checksum on both, equal to a
    single process fed the confirmed inputs; every fight event heard once on each peer,
    as the single process hears it; a spectator follows to the same state."""
    clock = Clock()
    x, y = MemoryLink.pair()
    spectator = Spectator(build, PLAYERS, y, clock=clock)
    a, b, clock = pair(3, clock=clock, spectators=[x])
    for _ in range(200):
        if spectator.heard and a.spectators[0].heard_hello:
            break
        clock.t += 0.01
        a.poll()
        spectator.poll()
    heard = {id(a): [], id(b): []}
    replays = {id(a): 0, id(b): 0}
    for s in (a, b):
        for kind in ("hit", "grab", "throw", "ko", "miss"):
            s.game.fight.on(kind, heard[id(s)].append)

        def sound(ctx, ent, fired, s=s):
            if ctx.resimulating:
                replays[id(s)] += 1
        s.game.on(EventType.HELD_OPEN, sound)

    def watch():
        spectator.poll()
        spectator.advance(4)
    play(a, b, clock, UPDATES, seed=3, others=[watch])
    for s in (a, b):
        assert s.stats.desyncs == 0 and s.stats.checks >= UPDATES // 30
        assert s.confirmed_update == UPDATES and s.game.update == UPDATES
    assert a.stats.rollbacks > 5 and a.stats.max_depth <= 8 and sum(a.stats.depths) == a.stats.rollbacks
    assert replays[id(a)] + replays[id(b)] > 0                  # handlers were told of re-runs
    assert a.confirmed_checksum == b.confirmed_checksum is not None
    inputs = a.confirmed_inputs()
    assert inputs == b.confirmed_inputs() and len(inputs) == UPDATES
    assert any(i is not FightInput.EMPTY for row in inputs for i in row)
    g, single = _single(inputs)
    assert g.checksum() == a.confirmed_checksum
    assert heard[id(a)] == heard[id(b)] == single and len(single) > 3
    for _ in range(400):
        if spectator.update >= UPDATES:
            break
        clock.t += DT
        a.poll()
        spectator.poll()
        spectator.advance(8)
    assert spectator.update == UPDATES and spectator.game.checksum() == a.confirmed_checksum
    a.close(linger=0.0)
    b.close(linger=0.0)
    spectator.close()


def test_each_peer_finishes_after_the_other_has_its_digest():
    a, b, clock = pair(11, loss=0.1, delay=2)
    play(a, b, clock, 90, seed=11)
    assert a.finished and b.finished and a.confirmed_checksum == b.confirmed_checksum
    stats = a.stats.summary()
    assert set(stats) >= {"rollbacks", "depths", "max_depth", "stalls", "rtt_ms", "worst_frame_ms", "p99_frame_ms"}
    assert 40 < a.stats.rtt_ms < 400                           # 2 + 2 updates of latency, plus jitter and polling
    a.close(linger=0.0)
    b.close(linger=0.0)


def test_a_peer_that_stops_answering_ends_the_session_with_a_message():
    a, b, clock = pair(5, loss=0.0, delay=1, timeout=2.0)
    for _ in range(30):
        clock.t += DT
        for s, me in ((a, "p1"), (b, "p2")):
            s.poll()
            s.add_local_input(me, FightInput.EMPTY)
            s.advance()
    with pytest.raises(PeerTimeout, match=r"no word from the peer for 2 s .*the session ends"):
        for _ in range(200):                                    # b is gone: a alone, for 200 updates at most
            clock.t += DT
            a.add_local_input("p1", FightInput.EMPTY)
            a.advance()
    assert a.stats.stalls > 0                                   # it stopped running ahead, then gave up


def test_a_peer_that_leaves_early_says_so():
    a, b, clock = pair(6, loss=0.0, delay=1)
    b.close(linger=0.0)
    with pytest.raises(PeerLeft, match="the peer left the session"):
        for _ in range(20):
            clock.t += DT
            a.advance()


def test_the_handshake_names_what_differs():
    clock = Clock()
    x, y = MemoryLink.pair()
    a = Session(build, PLAYERS, "p1", x, clock=clock, warm=False)
    b = Session(lambda: build(health=50.0), PLAYERS, "p2", y, clock=clock, warm=False)
    with pytest.raises(HandshakeError, match="starts in another state"):
        for _ in range(20):
            clock.t += 0.1
            a.poll()
            b.poll()
    x, y = MemoryLink.pair()
    a = Session(build, PLAYERS, "p1", x, clock=clock, warm=False)
    b = Session(lambda: _no_separation(build()), PLAYERS, "p2", y, clock=clock, warm=False)
    with pytest.raises(HandshakeError, match="set up otherwise"):
        for _ in range(20):
            clock.t += 0.1
            a.poll()
            b.poll()
    x, y = MemoryLink.pair()
    a = Session(build, PLAYERS, "p1", x, clock=clock, warm=False)
    b = Session(build, PLAYERS, "p1", y, clock=clock, warm=False)
    with pytest.raises(HandshakeError, match=r"local players \[p1\] there, \[p1\] here"):
        for _ in range(20):
            clock.t += 0.1
            a.poll()
            b.poll()


def _no_separation(game):
    game.fight.separate = False                 # another fight rule: the configuration differs
    return game


def test_start_gives_up_when_no_one_answers():
    clock = Clock()
    x, _ = MemoryLink.pair()
    a = Session(build, PLAYERS, "p1", x, warm=False)
    with pytest.raises(PeerTimeout, match="no handshake from the peer in 0.2 s"):
        a.start(wait=0.2)


@pytest.mark.parametrize("kw, field", [({"local": "p3"}, "local"), ({"local": PLAYERS}, "local"),
                                       ({"input_delay": 31}, "input_delay"), ({"max_rollback": 0}, "max_rollback"),
                                       ({"players": ("p1", "p1")}, "players"), ({"timeout": 0}, "timeout")])
def test_session_arguments_are_checked(kw, field):
    args = {"players": PLAYERS, "local": "p1", "link": MemoryLink(), "warm": False, **kw}
    with pytest.raises(SessionSetupError, match=field):
        Session(build, **args)


def test_a_local_input_is_a_fight_input_of_a_local_player():
    a, b, clock = pair(1, loss=0.0, delay=1)
    with pytest.raises(SessionSetupError, match="not a local player"):
        a.add_local_input("p2", FightInput.EMPTY)
    with pytest.raises(TypeError):
        a.add_local_input("p1", "grab")                          # type: ignore[arg-type]


def test_bad_datagrams_are_dropped_and_counted():
    a, b, clock = pair(2, loss=0.0, delay=0)
    for junk in (b"", b"SN\x01\x02" + b"\xff" * 40, b"\x00" * 5000, b"SN\x09\x01"):
        a.peer.link.inner.inbox.append(junk)              # straight into a's end of the pair
    clock.t += 0.1
    a.poll()
    assert a.stats.bad == 4 and a.synchronized


def test_sync_test_session_rolls_back_every_update():
    """GGRS's SyncTestSession: 100 updates of the two AIs' inputs, each rolled back 3 and
    compared; fight events heard once."""
    from scuffle.game.fighters.ai import FighterAI

    s = SyncTestSession(build, PLAYERS, check_distance=3)
    heard = []
    s.game.fight.on_hit(heard.append)
    ais = [FighterAI("p1", "p2", seed=8, think_every=2, aggression=1.0),
           FighterAI("p2", "p1", seed=9, think_every=2, aggression=1.0)]
    for _ in range(100):
        s.advance([ai.decide(s.game) for ai in ais])
    assert s.stats.rollbacks == 100 and s.stats.checks > 200
    assert len(heard) == len({(e.update, e.attacker) for e in heard}) > 0
    s.close()


def test_sync_test_session_catches_state_kept_outside_the_snapshot():
    """A handler that counts hits in a Python variable and lets the count change the
    fight: the re-run differs from the first run."""
    def leaky():
        g = build()
        seen = [0]

        def count(ctx, ent, fired):
            seen[0] += 1
            if seen[0] % 3 == 0:
                g.body("p2").heading += 1.0
        g.on(EventType.HELD_OPEN, count)
        return g

    s = SyncTestSession(leaky, PLAYERS, check_distance=2)
    with pytest.raises(SyncError, match="differs after a rollback of 2 updates"):
        for u in range(200):
            s.advance([FightInput(face_toward="p2", action=Action.STRIKE) if u % 20 == 5 else FightInput.EMPTY,
                       FightInput.EMPTY])


def test_sim_link_is_deterministic_from_its_seed():
    def run(seed):
        clock = Clock()
        x, y = MemoryLink.pair()
        link = SimLink(x, delay=0.1, jitter=0.05, loss=0.3, duplicate=0.2, reorder=0.2, seed=seed, clock=clock)
        got = []
        for i in range(300):
            link.send(bytes([i % 256, i // 256]))
            clock.t += 0.01
            link.flush()
            got += y.receive()
        clock.t += 1.0
        link.flush()
        return got + y.receive(), link.lost

    a, lost = run(4)
    assert a == run(4)[0] and a != run(5)[0]
    assert 50 < lost < 130                                       # about 30% of 300
    assert len(a) > 300 - lost                                   # duplicates
    assert a != sorted(a, key=lambda d: d[1] * 256 + d[0])       # reordered


def test_a_state_changed_behind_the_sessions_back_is_a_desync():
    """p2's heading turned on one peer only: the next compared digest differs."""
    a, b, clock = pair(9, loss=0.0, delay=1, check_every=10)
    events = []
    for u in range(80):
        clock.t += DT
        if u == 25:
            b.game.body("p2").heading += 5.0
        for s, me in ((a, "p1"), (b, "p2")):
            s.poll()
            s.add_local_input(me, FightInput.EMPTY)
            s.advance()
        events += [e for e in a.events() if e.kind == "desync"]
    assert a.stats.desyncs >= 1 and b.stats.desyncs >= 1
    assert events and "state digests differ" in events[0].detail and events[0].update >= 30


def test_the_handshake_refuses_another_scuffle_version():
    from scuffle.game.net import wire
    from scuffle.game.runtime.snapshot import SNAPSHOT_VERSION
    clock = Clock()
    x, y = MemoryLink.pair()
    a = Session(build, PLAYERS, "p1", x, clock=clock, warm=False)
    hello = wire.Hello(0, 1, SNAPSHOT_VERSION + 1, a.config, a.start_digest, "9.9.9", PLAYERS, 0b10)
    x.inbox.append(hello.to_bytes())
    with pytest.raises(HandshakeError, match=r"scuffle 9\.9\.9 there.*snapshot format"):
        a.poll()


def test_the_peer_running_ahead_waits():
    """a is given two ticks for each of b's: time sync makes a skip updates (waits) and
    says it runs ahead; b never waits."""
    a, b, clock = pair(4, loss=0.0, delay=2, jitter=0)
    for u in range(240):
        clock.t += DT / 2
        for s, me in ((a, "p1"), (b, "p2")):
            if s is b and u % 2:
                continue
            s.poll()
            s.add_local_input(me, FightInput.EMPTY)
            s.advance()
    assert a.stats.waits > 5 and b.stats.waits == 0
    assert a.frame - b.frame < a.max_rollback + 2


def test_rollback_costs_reports_frames_and_rollbacks():
    from scuffle.net import rollback_costs
    out = rollback_costs(build, PLAYERS, lambda g: [FightInput.EMPTY, FightInput.EMPTY], updates=20, depth=3)
    for key in ("frame_ms_p50", "frame_ms_p99", "rollback_ms_max", "rollback_ms_max_cpu", "digest_ms",
                "first_update_ms"):
        assert out[key] >= 0.0
    assert out["rollback_ms_p50_cpu"] <= out["rollback_ms_max_cpu"]
    with pytest.raises(SessionSetupError, match="updates"):
        rollback_costs(build, PLAYERS, lambda g: [], updates=3, depth=3)
