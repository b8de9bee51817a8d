"""Play it, then replay it: the demo's recording and trace, rounds that end on a K.O., the GIF.

A demo run writes its session as a scenario (--record) and its own trace (--trace);
``scuffle run`` of the scenario must give the same trace bytes. Everything runs under
SDL_VIDEODRIVER=dummy; this file never imports pygame itself.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from scuffle.demo.app import DemoSim, KO_UPDATES  # noqa: E402
from scuffle.demo.headless import GIF_SIZE, PillowMissing, run_headless  # noqa: E402
from scuffle.game.fighters import registry  # noqa: E402
from scuffle.game.fighters.combat import Fight, FightState  # noqa: E402
from scuffle.game.fighters.moves import Move  # noqa: E402
from scuffle.game.runtime.scenario import ScenarioError, load_scenario, parse_scenario, run_scenario  # noqa: E402

ENV = dict(os.environ, SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")


def replay(path: Path) -> bytes:
    """``scuffle run``'s trace of a scenario file, in process (the same code as the command)."""
    buf = io.StringIO()
    game = run_scenario(load_scenario(path, registry()), trace=buf)
    game.close()
    return buf.getvalue().encode("utf-8")


def cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scuffle", *map(str, args)], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=600)


# ---------------------------------------------------------------- record and replay


@pytest.mark.slow
@pytest.mark.bits
def test_twenty_seconds_recorded_and_replayed_give_the_same_trace_bytes(tmp_path):
    out = tmp_path / "out"
    proc = cli("demo", "--headless", "--seconds", 20, "--out", out, "--record", "s.toml", "--trace", "t.jsonl",
               "--gif", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    trace = (tmp_path / "t.jsonl").read_bytes()
    assert trace.count(b"\n") == 20 * 30 * 2                       # one line per human per update
    run = cli("run", "s.toml", "--trace", "t2.jsonl", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "t2.jsonl").read_bytes() == trace
    # The GIF of the same 20 s: the arena at >= 10 pictures per second, under 8 MB.
    gif = out / "demo.gif"
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["gif"] == str(gif)
    check_gif(gif, seconds=20.0, max_bytes=8_000_000)


def test_a_short_run_with_rounds_replays_byte_for_byte(tmp_path):
    # Health 10: seed 1 has a K.O. (update 104) and the next round (224) within 7.5 s.
    summary = run_headless(seconds=7.5, out=tmp_path / "out", seed=1, health=10.0, sheet=False,
                           record=tmp_path / "s.toml", trace=tmp_path / "t.jsonl")
    assert summary["rounds"] and summary["round"] >= 2, summary["rounds"]
    text = (tmp_path / "s.toml").read_text(encoding="utf-8")
    assert "[fight]" in text and "rounds = true" in text and "health = 10.0" in text
    assert replay(tmp_path / "s.toml") == (tmp_path / "t.jsonl").read_bytes()


def test_the_recording_holds_both_fighters_and_every_command_at_its_update(tmp_path):
    sim = DemoSim(seed=2, attract=True, trace=tmp_path / "t.jsonl")
    try:
        for _ in range(150):
            sim.step()
        sim.save_scenario(tmp_path / "s.toml")
        commands = list(sim.commands)
        log = list(sim.fight.stats.log)
    finally:
        sim.close()
    sc = load_scenario(tmp_path / "s.toml", registry())
    assert sc.updates == 150
    assert [(h.name, h.set, h.position, h.heading, h.health) for h in sc.humans] == [
        ("p1", "demo", (0.0, -1.5, 0.0), 0.0, 100.0), ("p2", "demo", (0.0, 1.5, 0.0), 180.0, 100.0)]
    assert sc.tables == {"fight": {"separate": True, "rounds": True, "round_pause": KO_UPDATES}}
    assert [(c.update, c.human, c.kind, c.action, c.ids, c.extra) for c in sc.commands] == \
        [(c.update, c.human, c.kind, c.action, c.ids, c.extra) for c in commands]
    assert sc.commands[:2] and all(c.kind == "loop" and c.ids == [int(Move.FIGHT_IDLE)] and c.update == 0
                                   for c in sc.commands[:2])
    # Every fight command of the session is there: the log's commands, refused ones included.
    acted = [(u, who) for u, who, what, *_ in log if what in ("grab", "strike", "throw", "let_go", "refused")]
    recorded = {(c.update, c.human) for c in sc.commands if c.kind == "action"}
    assert acted and set(acted) <= recorded
    # The replay runs the same fight: the same log, not only the same trace.
    game = run_scenario(sc, trace=(buf := io.StringIO()))
    try:
        assert list(game.fight.stats.log) == log
        assert buf.getvalue().encode("utf-8") == (tmp_path / "t.jsonl").read_bytes()
    finally:
        game.close()


def test_the_keyboard_session_replays_too(tmp_path):
    sim = DemoSim(seed=1, attract=False, trace=tmp_path / "t.jsonl")
    try:
        sim.ai["p2"].enabled = False
        sim.keyboard.direction = (0.0, 1.0)
        for _ in range(40):
            sim.step()
        sim.keyboard.direction = (0.0, 0.0)
        for _ in range(15):
            sim.step()
        sim.keyboard.press("grab", sim.update)
        for _ in range(40):
            sim.step()
        sim.keyboard.press("strike", sim.update)
        for _ in range(30):
            sim.step()
        sim.save_scenario(tmp_path / "s.toml")
        kinds = {c.action for c in sim.commands if c.human == "p1"}
    finally:
        sim.close()
    assert {"move", "grab", "strike"} <= kinds
    assert replay(tmp_path / "s.toml") == (tmp_path / "t.jsonl").read_bytes()


def test_fight_table_and_human_health_are_checked():
    reg = registry()
    base = 'updates = 2\n[sets.demo]\nlibrary = "demo"\n[[humans]]\nname = "a"\nset = "demo"\n'
    sc = parse_scenario(base + 'health = 7\n[fight]\nseparate = true\nround_pause = 30\n', registry=reg)
    assert sc.tables == {"fight": {"separate": True, "round_pause": 30}} and sc.humans[0].health == 7.0
    game = run_scenario(sc)
    try:
        assert game.fight.separate and game.fight.round_pause == 30 and not game.fight.rounds
        assert game.fight.combat("a").health == 7.0
    finally:
        game.close()
    with pytest.raises(ScenarioError, match=r"<scenario>:8: fight.bogus: unknown key"):
        parse_scenario(base + "[fight]\nbogus = 1\n", registry=reg)
    with pytest.raises(ScenarioError, match=r"<scenario>:8: fight.round_pause: bad value 0"):
        parse_scenario(base + "[fight]\nround_pause = 0\n", registry=reg)
    with pytest.raises(ScenarioError, match=r"fight.separate: bad value 'yes'"):
        parse_scenario(base + '[fight]\nseparate = "yes"\n', registry=reg)
    with pytest.raises(ScenarioError, match=r":7: humans\[0\].health: expected a number > 0"):
        parse_scenario(base + "health = 0\n", registry=reg)
    # K.O. without rounds: the fight stays over; without either, blows land at 0 as before.
    ko = parse_scenario(base + "[fight]\nko = true\n", registry=reg)
    game = run_scenario(ko)
    try:
        assert game.fight.ko_rule and not game.fight.rounds
    finally:
        game.close()
    game = run_scenario(parse_scenario(base, registry=reg))
    try:
        assert not game.fight.ko_rule and not game.fight.rounds
    finally:
        game.close()
    # Without the fighters' registry there is no [fight] table.
    with pytest.raises(ScenarioError, match=r"fight: unknown key"):
        parse_scenario("updates = 1\n[fight]\nseparate = true\n")
    from scuffle.game.runtime.world import Game

    g = Game()
    try:
        with pytest.raises(ValueError, match="round_pause"):
            Fight(g, round_pause=0)
    finally:
        g.close()


# ---------------------------------------------------------------- rounds


class RoundWatch:
    """Health, states and the grounded loser, every update."""

    def __init__(self):
        self.rows = []                # (update, {name: (health, state, anim, position)})

    def __call__(self, sim) -> None:
        g = sim.game
        self.rows.append((g.update - 1, {n: (sim.fight.combat(n).health, str(sim.fight.combat(n).state),
                                             g.record(n).anim_id, tuple(g.body(n).position))
                                         for n in sim.names}))


def test_a_ko_ends_the_round_the_loser_stays_down_and_the_next_round_starts_after_the_pause(tmp_path):
    watch = RoundWatch()
    summary = run_headless(seconds=12, out=tmp_path, seed=1, health=10.0, sheet=False, on_update=watch)
    rounds = summary["rounds"]
    assert len(rounds) >= 2 and summary["round"] >= 2, rounds
    on_disk = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert on_disk["rounds"] == rounds and on_disk["round"] == summary["round"]
    by_update = dict(watch.rows)
    last = summary["updates"] - 1
    assert rounds[0]["ko_update"] + KO_UPDATES <= last                  # at least one whole pause
    for r in rounds:
        ko, loser, winner = r["ko_update"], r["loser"], r["winner"]
        assert winner != loser and by_update[ko][loser][0] == 0.0
        assert by_update[ko][winner][0] > 0.0
        # The pause: the loser is down, falling (285) then grounded (196), and nobody is hurt.
        pause = range(ko, min(ko + KO_UPDATES, last + 1))
        assert all(by_update[u][loser][1] == FightState.DOWN for u in pause)
        assert by_update[ko][loser][2] == Move.KNOCKDOWN
        if ko + KO_UPDATES > last:
            continue                                                     # the run ends in this pause
        assert by_update[ko + KO_UPDATES - 1][loser][2] == Move.GROUNDED
        for u in pause:
            assert by_update[u][loser][0] == 0.0
            assert by_update[u][winner][0] == by_update[ko][winner][0]
        # The next round: both back at the start with full health, in the fight idle.
        start = by_update[ko + KO_UPDATES]
        assert start["p1"][0] == start["p2"][0] == 10.0
        assert start["p1"][3] == (0.0, -1.5, 0.0) and start["p2"][3] == (0.0, 1.5, 0.0)
        assert start["p1"][1] == start["p2"][1] == FightState.FREE
        assert start["p1"][2] == start["p2"][2] == Move.FIGHT_IDLE


def test_no_hit_lands_on_a_fighter_at_zero():
    sim = DemoSim(seed=1, attract=True, health=10.0)
    try:
        health_before = {}
        landed_on_zero = []
        hits = 0
        seen = 0
        for _ in range(450):
            sim.step()
            log = list(sim.fight.stats.log)
            for upd, who, what, *extra in log[seen:]:
                if what == "hit":
                    hits += 1
                    if health_before.get(extra[0], 1.0) <= 0.0:
                        landed_on_zero.append((upd, who, extra))
            seen = len(log)
            health_before = sim.health()
        assert hits and len(sim.rounds()) >= 2
        assert landed_on_zero == []
        # The logged blows after a K.O. in the same round: none.
        for r in sim.rounds():
            assert not [e for e in sim.fight.stats.log if e[2] == "hit" and r["ko_update"] < e[0] < r["ko_update"] + KO_UPDATES]
    finally:
        sim.close()


def test_a_ko_in_a_hold_breaks_the_pair():
    sim = DemoSim(seed=1, attract=False, health=5.0)
    try:
        sim.ai["p2"].enabled = False
        f = sim.fight
        sim.step()                                            # update 0: the idles
        for _ in range(200):                                  # walk up to p2
            sim.keyboard.direction = (0.0, 1.0)
            sim.step()
            d = sim.game.body("p2").position - sim.game.body("p1").position
            if (d[0] ** 2 + d[1] ** 2) ** 0.5 < 0.9:
                break
        sim.keyboard.direction = (0.0, 0.0)
        for _ in range(20):
            sim.step()
        sim.keyboard.press("grab", sim.update)
        for _ in range(80):
            sim.step()
            if f.combat("p1").state == FightState.HOLDING:
                break
        assert f.combat("p1").state == FightState.HOLDING, f.stats.log
        sim.keyboard.press("strike", sim.update)               # a grab strike: 5 or more takes all 5
        for _ in range(60):
            sim.step()
            if f.round_over:
                break
        assert f.round_over and sim.rounds()[0]["winner"] == "p1", f.stats.log
        for _ in range(10):
            sim.step()
        assert f.combat("p2").state == FightState.DOWN and f.combat("p2").partner == -1
        assert sim.game.body("p2").attachment == -1
        assert f.combat("p1").state == FightState.FREE and f.combat("p1").partner == -1
    finally:
        sim.close()


# ---------------------------------------------------------------- the GIF


def check_gif(path: Path, seconds: float, max_bytes: int) -> None:
    from PIL import Image

    assert path.stat().st_size < max_bytes
    with Image.open(path) as im:
        assert im.format == "GIF" and im.size == GIF_SIZE and im.is_animated
        n = im.n_frames
        total = 0
        for i in range(n):
            im.seek(i)
            total += im.info["duration"]
    assert n / (total / 1000.0) >= 10.0                       # pictures per second, as played
    assert total / 1000.0 == pytest.approx(seconds, abs=0.2)  # in game time


def test_the_gif_moves_at_fifteen_pictures_per_second(tmp_path):
    pytest.importorskip("PIL")
    summary = run_headless(seconds=4, out=tmp_path, seed=1, sheet=False, gif=tmp_path / "a.gif")
    assert summary["gif"] == str(tmp_path / "a.gif")
    check_gif(tmp_path / "a.gif", seconds=4.0, max_bytes=8_000_000 * 4 // 20)
    from PIL import Image, ImageChops

    with Image.open(tmp_path / "a.gif") as im:
        im.seek(0)
        first = im.convert("RGB")
        im.seek(im.n_frames - 1)
        last = im.convert("RGB")
    assert ImageChops.difference(first, last).getbbox() is not None     # the pictures move


def test_gif_without_pillow_is_one_line(tmp_path, monkeypatch, capsys):
    from scuffle.demo.cli import main

    monkeypatch.setitem(sys.modules, "PIL", None)              # import PIL fails
    with pytest.raises(PillowMissing, match="pillow"):
        run_headless(seconds=1, out=tmp_path, gif=tmp_path / "x.gif")
    assert main(["--headless", "--seconds", "1", "--out", str(tmp_path), "--gif"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("scuffle demo: error: --gif needs Pillow")
    assert not (tmp_path / "demo.gif").exists()


def test_the_recording_example_in_the_docs_parses():
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    part = doc[doc.index("## Recording the demo"):]
    toml = re.search(r"```toml\n(.*?)```", part, re.S).group(1)
    sc = parse_scenario(toml, "fight.toml", registry=registry())
    assert sc.updates == 600 and [h.name for h in sc.humans] == ["p1", "p2"]
    assert sc.tables["fight"] == {"separate": True, "rounds": True, "round_pause": KO_UPDATES}
    assert [(c.update, c.human, c.action) for c in sc.commands if c.kind == "action"][-1] == (101, "p1", "grab")
