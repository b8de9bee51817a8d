"""The demo's netplay in one process: two sessions of the demo's Game over an in-memory
pair, the window (SDL's dummy driver) reading p1's keys into FightInputs with the HUD's
netplay line, the recording replayed by ``scuffle run --checksum``'s digest, and the
command line's netplay flags."""
from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pytest  # noqa: E402

from scuffle.demo.app import KeyboardControl  # noqa: E402
from scuffle.demo.cli import main as demo_main  # noqa: E402
from scuffle.demo.netplay import (PLAYERS, _record_text, build_demo_game, hud_line,  # noqa: E402
                                  make_window)
from scuffle.game.cli.run import world_checksum  # noqa: E402
from scuffle.game.fighters import registry  # noqa: E402
from scuffle.game.fighters.ai import FighterAI  # noqa: E402
from scuffle.game.fighters.fightinput import Action  # noqa: E402
from scuffle.game.runtime.scenario import parse_scenario, run_scenario  # noqa: E402
from scuffle.net import MemoryLink, Session  # noqa: E402


class Clock:
    t = 50.0

    def __call__(self) -> float:
        return self.t


def test_the_window_plays_p1_from_the_keys_and_the_recording_replays():
    clock = Clock()
    x, y = MemoryLink.pair()
    a = Session(build_demo_game, PLAYERS, "p1", x, clock=clock, warm=False)
    b = Session(build_demo_game, PLAYERS, "p2", y, clock=clock, warm=False)
    for _ in range(50):
        clock.t += 0.01
        a.poll()
        b.poll()
    keyboard = KeyboardControl("p1", "p2")
    ai = FighterAI("p2", "p1", seed=3, aggression=0.6, think_every=3)
    frame = make_window((640, 360), attract=False)
    a.finish_at(120)
    b.finish_at(120)
    strikes = 0
    for u in range(400):
        if a.finished and b.finished:
            break
        clock.t += 1 / 30
        if u == 5:
            keyboard.direction = (0.0, 1.0)                      # walk toward p2 (the window reads keys every frame)
        if u in (40, 70):
            frame.post_key("j")
        for s, me in ((a, "p1"), (b, "p2")):
            s.poll()
            if s.can_advance():
                inp = keyboard.decide(s.game.fight) if s is a else ai.decide(s.game)
                strikes += s is a and inp.action == Action.STRIKE
                s.add_local_input(me, inp)
            s.advance()
        assert frame(a, keyboard) is not False
    assert a.finished and b.finished and a.confirmed_checksum == b.confirmed_checksum
    assert strikes >= 1                                          # J reached the fight as an input
    assert "rtt" in hud_line(a) and "rollbacks" in hud_line(a) and "ahead" in hud_line(a)
    text = _record_text(a, 100.0)
    game = run_scenario(parse_scenario(text, "<record>", registry=registry()))
    try:
        assert game.update == 120 and world_checksum(game) == a.confirmed_checksum
    finally:
        game.close()
    frame.post_quit()
    assert frame(a, keyboard) is False
    for s in (a, b):
        s.close(linger=0.0)
        s.game.close()


@pytest.mark.parametrize("argv, text", [
    (["--host", "7000", "--join", "127.0.0.1:7000"], "one or the other"),
    (["--join", "127.0.0.1:7000", "--sim-loss", "1.5"], "--sim-loss"),
    (["--join", "127.0.0.1:0", "--headless"], "port must be a number 1-65535"),
])
def test_the_netplay_flags_are_checked(argv, text, capsys):
    assert demo_main(argv) == 2
    assert text in capsys.readouterr().err


def test_joining_no_one_times_out_with_a_message(capsys, tmp_path):
    """A join with nobody at the port: the handshake gives up with one line (bounded)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from scuffle.demo import netplay
    from scuffle.game.net import PeerTimeout
    with pytest.raises(PeerTimeout, match="no handshake"):
        netplay.run_netplay(join=f"127.0.0.1:{port}", seconds=1.0, timeout=0.3, log=lambda m: None,
                            handshake=0.3)


def test_netplay_plays_the_demo_fight():
    """The netplay demo (which imports no pygame) keeps the window demo's numbers."""
    from scuffle.demo import app, netplay
    assert netplay.AI_SETTINGS == app.AI_SETTINGS and netplay.KO_UPDATES == app.KO_UPDATES
    assert netplay.START_DISTANCE == app.START_DISTANCE and netplay.P1_SEED_OFFSET == app.P1_SEED_OFFSET
    sim = app.DemoSim(seed=1)
    try:
        assert sim.scenario_text().split("[fight]")[1].split("[[commands]]")[0].strip() == \
            netplay.demo_scenario_text().split("[fight]")[1].split("[[commands]]")[0].strip()
    finally:
        sim.close()
