"""The window, tested: ``App`` under SDL's dummy video driver, driven by key events on
pygame's event queue (``App.post_key``), one update per frame (``run(frame_dt=DT)``).

This file never imports pygame itself (the demo package is the only one that does).
"""
from __future__ import annotations

import io
import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from scuffle.demo.app import App, DT  # noqa: E402
from scuffle.game.fighters import registry  # noqa: E402
from scuffle.game.fighters.combat import FightState  # noqa: E402
from scuffle.game.runtime.scenario import load_scenario, run_scenario  # noqa: E402


def p1_log(app, what: str) -> list:
    return [e for e in app.sim.fight.stats.log if e[1] == "p1" and e[2] == what]


def frames_until(app, done, limit: int) -> int:
    """Run one frame (one update) at a time until ``done()``; returns the frames run."""
    for i in range(limit):
        app.run(max_frames=1, frame_dt=DT)
        if done():
            return i + 1
    raise AssertionError(f"not done after {limit} frames: {app.sim.fight.stats.log}")


def test_keys_on_the_event_queue_walk_grab_throw_pause_and_step(tmp_path):
    app = App(seed=1, size=(640, 360), record=tmp_path / "s.toml", trace=tmp_path / "t.jsonl")
    try:
        app.sim.ai["p2"].enabled = False                     # a still partner for the keyboard
        app.run(max_frames=1, frame_dt=DT)                   # opens the (dummy) display: update 0
        assert app.sim.update == 1
        body1, body2 = app.sim.game.body("p1"), app.sim.game.body("p2")
        y0 = float(body1.position[1])
        # Walk: W held (KEYDOWN), then released (KEYUP).
        app.post_key("w")

        def close():
            d = body2.position - body1.position
            return (d[0] ** 2 + d[1] ** 2) ** 0.5 < 0.9
        frames_until(app, close, 200)
        assert float(body1.position[1]) > y0 + 0.5
        assert app.sim.fight.combat("p1").move_speed > 0
        app.post_key("w", down=False)
        frames_until(app, lambda: app.sim.fight.free("p1") and app.sim.fight.combat("p1").move_speed == 0, 60)
        # F faces p2, K grabs, L throws.
        app.post_key("f")
        app.run(max_frames=1, frame_dt=DT)
        app.post_key("k")
        frames_until(app, lambda: app.sim.fight.combat("p1").state == FightState.HOLDING, 90)
        assert len(p1_log(app, "grab")) == 1 and p1_log(app, "grab_connect")
        app.post_key("l")
        frames_until(app, lambda: app.sim.fight.stats.throws == 1, 150)
        assert len(p1_log(app, "throw")) == 1 and p1_log(app, "throw_release")
        # P pauses: frames run, the update counter stands still.
        app.post_key("p")
        app.run(max_frames=1, frame_dt=DT)
        assert app.sim.paused
        at = app.sim.update
        app.run(max_frames=10, frame_dt=DT)
        assert app.sim.update == at
        # N runs exactly one update while paused.
        app.post_key("n")
        app.run(max_frames=1, frame_dt=DT)
        assert app.sim.update == at + 1
        app.run(max_frames=5, frame_dt=DT)
        assert app.sim.update == at + 1
        # P again: running, one update a frame.
        app.post_key("p")
        app.run(max_frames=3, frame_dt=DT)
        assert not app.sim.paused and app.sim.update == at + 4
        # Escape quits: the loop ends and writes the recording.
        app.post_key("escape")
        app.run(max_frames=5, frame_dt=DT)
        assert not app.running
        end = app.sim.update
    finally:
        app.close()
    # The window's session replays byte for byte.
    buf = io.StringIO()
    game = run_scenario(load_scenario(tmp_path / "s.toml", registry()), trace=buf)
    try:
        assert game.update == end >= at + 4
        assert buf.getvalue().encode("utf-8") == (tmp_path / "t.jsonl").read_bytes()
        assert game.fight.stats.throws == 1
    finally:
        game.close()
