"""Rewind in the demo: DemoSim's ring of snapshots, R held in the window,
``scuffle demo --headless --rewind-at T --rewind-by S``, and the recording and the trace
of a rewound fight replayed byte for byte by ``scuffle run``.

Everything runs under SDL_VIDEODRIVER=dummy; this file never imports pygame itself.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from scuffle.demo import render  # noqa: E402
from scuffle.demo.app import COMMAND_CHUNK, DT, REWIND_UPDATES, App, DemoSim  # noqa: E402
from scuffle.demo.cli import main, parse_args  # noqa: E402
from scuffle.demo.headless import rewind_plan, run_headless  # noqa: E402
from scuffle.game.fighters import registry  # noqa: E402
from scuffle.game.runtime.scenario import load_scenario, run_scenario  # noqa: E402
from scuffle.game.runtime.snapshot import sync_test  # noqa: E402

# Attract mode, seed 3, health 8, a 10-update round pause: a K.O. at update 77, so 100
# updates cover a fight, its K.O. and the next round's start.
KO = dict(seed=3, attract=True, health=8.0, round_pause=10)


def replay(path: Path) -> bytes:
    """``scuffle run``'s trace of a scenario file, in process (the same code as the command)."""
    buf = io.StringIO()
    game = run_scenario(load_scenario(path, registry()), trace=buf)
    game.close()
    return buf.getvalue().encode("utf-8")


def straight(updates: int, trace=None, **kw) -> DemoSim:
    """A DemoSim run ``updates`` updates without a rewind (no ring); the caller closes it."""
    sim = DemoSim(rewind_depth=0, trace=trace, **kw)
    for _ in range(updates):
        sim.step()
    return sim


# ---------------------------------------------------------------- the rollback sync test


def _sync(updates: int, **kw):
    sims: list[DemoSim] = []

    def build():
        sims.append(DemoSim(**kw))
        return sims[-1].game, sims[-1].step
    return sync_test(build, updates), sims


@pytest.mark.slow
def test_the_demo_passes_the_rollback_sync_test_through_a_ko():
    report, sims = _sync(100, rewind_depth=0, **KO)
    assert report.updates == 100 and report.rollbacks > 80 and report.replayed > 300
    kos = [r["ko_update"] for r in sims[0].rounds()]
    assert kos and kos[0] <= 100, kos                      # the K.O. was inside the checked updates


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 5])
def test_the_demo_passes_the_rollback_sync_test_over_long_fights(seed):
    report, sims = _sync(600, seed=seed, attract=True, health=15.0, round_pause=30, rewind_depth=0)
    assert report.updates == 600 and report.replayed > 2000
    assert len(sims[0].rounds()) >= 2, "the long fights have K.O.s and new rounds"


# ---------------------------------------------------------------- DemoSim.rewind


def test_rewind_goes_back_as_far_as_the_ring_and_plays_on_as_never_having_left():
    sim = DemoSim(rewind_depth=40, **KO)
    ref = straight(0, **KO)
    try:
        assert sim.rewind_room == 0 and sim.rewind(5) == 0 and sim.update == 0
        for _ in range(30):
            sim.step()
        assert sim.rewind_room == 30
        assert sim.rewind(12) == 12 and sim.update == 18 and sim.rewind_room == 18
        for _ in range(18):
            ref.step()
        assert sim.game.checksum() == ref.game.checksum()
        # The restored update's outputs are there for the window: the same picture as the straight run's.
        a, b = render.snapshot(sim), render.snapshot(ref)
        assert a.update == b.update == 18
        for fa, fb in zip(a.fighters, b.fighters):
            assert (fa.points == fb.points).all() and fa.events == fb.events
        # Play on: the ring refills up to its depth and never holds more.
        for _ in range(100):
            sim.step()
            ref.step()
        assert sim.game.checksum() == ref.game.checksum()
        assert sim.rewind_room == 40
        assert sim.rewind(1000) == 40 and sim.update == 78 and sim.rewind_room == 0
        assert sim.rewind(1) == 0 and sim.update == 78
        assert sim.rounds() == [r for r in ref.rounds() if r["ko_update"] < 78]
    finally:
        sim.close()
        ref.close()


def test_rewind_rejects_a_bad_count_and_a_bad_depth():
    sim = DemoSim(rewind_depth=3, **KO)
    try:
        sim.step()
        for bad in (-1, 1.5, True, "2"):
            with pytest.raises(ValueError, match="updates"):
                sim.rewind(bad)
        assert sim.update == 1
    finally:
        sim.close()
    for bad in (-1, 2.0, None):
        with pytest.raises(ValueError, match="rewind_depth"):
            DemoSim(rewind_depth=bad)


def test_the_default_ring_holds_ten_seconds():
    assert REWIND_UPDATES == 300
    sim = DemoSim(seed=2, attract=True)
    try:
        for _ in range(REWIND_UPDATES + 20):
            sim.step()
        assert sim.rewind_room == REWIND_UPDATES
        assert sim.rewind(REWIND_UPDATES + 1) == REWIND_UPDATES and sim.update == 20
    finally:
        sim.close()


def test_after_a_rewind_the_trace_and_the_recording_hold_the_final_timeline(tmp_path):
    # Attract mode replays the same fight after a rewind (the AIs' generators go back too):
    # the final trace is a straight run's, though updates left the ring (and reached the file).
    sim = DemoSim(rewind_depth=25, trace=tmp_path / "t.jsonl", **KO)
    for _ in range(60):
        sim.step()
    assert sim.rewind(20) == 20
    for _ in range(30):
        sim.step()
    assert sim.rewind(100) == 25 and sim.update == 45
    for _ in range(35):
        sim.step()
    sim.save_scenario(tmp_path / "s.toml")
    sim.close()
    ref = straight(80, trace=tmp_path / "ref.jsonl", **KO)
    ref.close()
    trace = (tmp_path / "t.jsonl").read_bytes()
    assert trace.count(b"\n") == 80 * 2
    assert trace == (tmp_path / "ref.jsonl").read_bytes()
    assert replay(tmp_path / "s.toml") == trace


def test_a_rewound_keyboard_fight_takes_another_course_and_replays_byte_for_byte(tmp_path):
    sim = DemoSim(seed=4, rewind_depth=60, trace=tmp_path / "t.jsonl")
    sim.ai["p2"].enabled = False                            # a still partner
    first = None
    try:
        sim.keyboard.direction = (0.0, 1.0)                 # walk toward p2
        for _ in range(40):
            sim.step()
        first = sim.game.checksum()
        assert sim.rewind(30) == 30 and sim.update == 10
        assert sim.commands and all(c.update < 10 for c in sim.commands)   # the undone commands are gone
        sim.keyboard.direction = (1.0, 0.0)                 # this time, sideways
        for _ in range(30):
            sim.step()
        assert sim.update == 40 and sim.game.checksum() != first
        assert abs(float(sim.game.body("p1").position[0])) > 0.3
        sim.save_scenario(tmp_path / "s.toml")
    finally:
        sim.close()
    assert replay(tmp_path / "s.toml") == (tmp_path / "t.jsonl").read_bytes()


def test_the_ring_shares_the_recorded_commands_and_a_rewind_gives_them_back():
    sim = DemoSim(seed=1, attract=True, rewind_depth=100)
    try:
        for _ in range(400):
            sim.step()
        at_400 = list(sim.commands)
        for _ in range(60):
            sim.step()
        assert len(at_400) > COMMAND_CHUNK and len(sim.commands) > len(at_400)
        a = sim.save_state()[4]
        sim.step()
        b = sim.save_state()[4]
        assert a[0] and all(x is y for x, y in zip(a[0], b[0]))   # the full chunks: one copy for all
        assert sim.rewind(61) == 61 and sim.update == 400
        assert sim.commands == at_400
        del sim.commands[10:]                                       # cut by hand: frozen again
        assert sim.save_state()[4] == ((), tuple(at_400[:10]))
    finally:
        sim.close()


# ---------------------------------------------------------------- the window: R held


def test_holding_r_rewinds_the_window_one_update_a_frame_and_play_goes_on_from_there():
    app = App(seed=3, attract=True, size=(800, 450), health=8.0)
    ref = None
    try:
        app.run(max_frames=60, frame_dt=DT)
        assert app.sim.update == 60
        scene = app.frame_scene(1.0)
        assert scene.rewind is None and "ring 2.0 s" in render.status_text(scene)[1]
        app.post_key("r")
        app.run(max_frames=24, frame_dt=DT)
        assert app.sim.update == 36                          # one update back per frame
        scene = app.frame_scene(1.0)
        assert scene.rewind == pytest.approx(-0.8)
        left, right = render.status_text(scene)
        assert "REWIND -0.8 s" in left and "#36" in left
        assert render.rewind_banner(scene) == "<< REWIND -0.8 s   ring 1.2 s"
        assert "ring" not in right and render.status_text(app.frame_scene(1.0))[0] == left
        app.post_key("r", down=False)
        app.run(max_frames=50, frame_dt=DT)
        assert app.sim.update == 86 and app.frame_scene(1.0).rewind is None
        # The fight plays on as a DemoSim restored to update 36 does (through the K.O. at 77).
        ref = DemoSim(**KO)
        for _ in range(36):
            ref.step()
        snap_36 = ref.game.snapshot()
        for _ in range(24):
            ref.step()
        ref.game.restore(snap_36)
        for _ in range(50):
            ref.step()
        assert ref.update == 86
        assert app.sim.game.checksum() == ref.game.checksum()
        assert app.sim.rounds() == ref.rounds() and app.sim.rounds()[0]["ko_update"] == 77
    finally:
        app.running = False
        app.close()
        if ref is not None:
            ref.close()


def test_the_rewind_stops_at_the_ring_and_works_while_paused():
    app = App(seed=3, attract=True, size=(640, 360))
    try:
        app.run(max_frames=10, frame_dt=DT)
        app.post_key("p")
        app.run(max_frames=3, frame_dt=DT)
        assert app.sim.paused and app.sim.update == 10
        app.post_key("r")
        app.run(max_frames=4, frame_dt=DT)
        assert app.sim.update == 6 and app.sim.paused
        app.run(max_frames=20, frame_dt=DT)                  # past the start: the ring ends at update 0
        assert app.sim.update == 0 and app.sim.rewind_room == 0
        assert render.rewind_banner(app.frame_scene(1.0)) == "<< REWIND -0.3 s   ring 0.0 s"
        app.post_key("r", down=False)
        app.run(max_frames=3, frame_dt=DT)
        assert app.sim.update == 0                           # still paused
        app.post_key("n")                                    # N steps one update
        app.run(max_frames=1, frame_dt=DT)
        assert app.sim.update == 1
        app.post_key("p")
        app.run(max_frames=5, frame_dt=DT)
        assert app.sim.update == 6
    finally:
        app.running = False
        app.close()


def test_the_help_lists_r():
    assert any(k.startswith("R") and "rewind" in what for k, what in render.HELP_LINES)


def test_a_rewound_window_session_replays_byte_for_byte(tmp_path):
    app = App(seed=2, size=(640, 360), record=tmp_path / "s.toml", trace=tmp_path / "t.jsonl")
    app.sim.ai["p2"].enabled = False
    app.run(max_frames=1, frame_dt=DT)
    app.post_key("w")
    app.run(max_frames=40, frame_dt=DT)
    app.post_key("w", down=False)
    app.post_key("r")
    app.run(max_frames=30, frame_dt=DT)
    assert app.sim.update == 11
    app.post_key("r", down=False)
    app.post_key("d")                                        # another way this time
    app.run(max_frames=30, frame_dt=DT)
    app.post_key("d", down=False)
    app.run(max_frames=10, frame_dt=DT)
    app.post_key("escape")
    app.run(max_frames=2, frame_dt=DT)
    assert app._closed
    trace = (tmp_path / "t.jsonl").read_bytes()
    text = (tmp_path / "s.toml").read_text(encoding="utf-8")
    updates = int(text.split("updates = ", 1)[1].split()[0])
    assert updates >= 51 and trace.count(b"\n") == 2 * updates
    assert replay(tmp_path / "s.toml") == trace
    assert "direction = [1.0, 0.0]" in text


# ---------------------------------------------------------------- headless: --rewind-at / --rewind-by


def test_headless_rewinds_write_the_final_timeline(tmp_path):
    s = run_headless(seconds=4.0, out=tmp_path / "out", seed=3, health=8.0, frame_every=1.0,
                     record=tmp_path / "s.toml", trace=tmp_path / "t.jsonl", rewinds=[(3.0, 2.5), (1.0, 0.5)])
    assert s["rewinds"] == [{"at": 30, "by": 15}, {"at": 90, "by": 75}]
    assert s["updates"] == 120
    assert s["frames"] == [f"frame_{t:06.1f}s.png" for t in (1.0, 2.0, 3.0, 4.0)]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["rewinds"] == s["rewinds"]
    trace = (tmp_path / "t.jsonl").read_bytes()
    assert trace.count(b"\n") == 120 * 2
    assert replay(tmp_path / "s.toml") == trace


def test_scuffle_demo_rewind_flags(tmp_path, capsys):
    assert main(["--headless", "--seconds", "3", "--seed", "3", "--rewind-at", "2", "--rewind-by", "1.5",
                 "--record", str(tmp_path / "s.toml"), "--trace", str(tmp_path / "t.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "rewound 45 updates at update 60" in out
    assert replay(tmp_path / "s.toml") == (tmp_path / "t.jsonl").read_bytes()
    a = parse_args(["--rewind-at", "2", "--rewind-by", "1", "--rewind-at", "15", "--rewind-by", "10"])
    assert a.rewinds == [(2.0, 1.0), (15.0, 10.0)]


@pytest.mark.parametrize("args, flag", [
    (["--rewind-at", "4"], "--rewind-at and --rewind-by"),
    (["--rewind-by", "1"], "--rewind-at and --rewind-by"),
    (["--rewind-at", "4", "--rewind-by", "10.5"], "--rewind-by"),
    (["--rewind-at", "4", "--rewind-by", "0"], "--rewind-by"),
    (["--rewind-at", "4", "--rewind-by", "0.01"], "--rewind-by"),
    (["--rewind-at", "1", "--rewind-by", "2"], "--rewind-by 2: goes back before the start"),
    (["--rewind-at", "30", "--rewind-by", "1"], "--rewind-at 30: after the end"),
    (["--rewind-at", "-1", "--rewind-by", "1"], "--rewind-at"),
    (["--rewind-at", "nan", "--rewind-by", "1"], "--rewind-at"),
    (["--rewind-at", "x", "--rewind-by", "1"], "--rewind-at"),
])
def test_scuffle_demo_rejects_bad_rewinds_on_one_line(args, flag, capsys, tmp_path):
    assert main(["--headless", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("scuffle demo: error:") and flag in err[0], err
    assert not (tmp_path / "o").exists()


def test_rewind_plan_checks_its_pairs():
    assert rewind_plan([(3, 1), (1, 1 / 30)], 4) == [(30, 1), (90, 30)]
    for bad, what in (([(5, 1)], "rewind at"), ([(2, 11)], "rewind by"), ([(1, 2)], "before the start"),
                      ([(float("inf"), 1)], "rewind at"), ([(2, float("nan"))], "rewind by")):
        with pytest.raises(ValueError, match=what):
            rewind_plan(bad, 4)


def test_a_headless_gif_shows_the_final_timeline(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    s = run_headless(seconds=2.0, out=tmp_path / "out", seed=3, pictures=False, gif=tmp_path / "r.gif",
                     gif_from=0.5, rewinds=[(1.5, 1.0)])
    assert s["rewinds"] == [{"at": 45, "by": 30}] and s["gif"] == str(tmp_path / "r.gif")
    with Image.open(tmp_path / "r.gif") as im:
        assert im.n_frames == (60 - 15) // 2                   # one picture every 2 updates after 0.5 s, once each
