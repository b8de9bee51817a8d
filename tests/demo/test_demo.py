"""The pygame demo, headless: a minute of attract mode, the command line, the keyboard, purity.

Everything runs under SDL_VIDEODRIVER=dummy; this file itself never imports pygame (the
demo package is the only one that does).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from scuffle.demo.app import DemoSim, KO_UPDATES  # noqa: E402
from scuffle.demo.headless import TILE, image_stats, run_headless, save_picture  # noqa: E402
from scuffle.game.fighters.combat import FightState  # noqa: E402
from scuffle.game.fighters.moves import Move  # noqa: E402
from scuffle.game.fighters.moveset import demo_set  # noqa: E402
from test_purity import imported_roots    # tests/test_purity.py: the one import scanner

REPO = Path(__file__).resolve().parents[2]
PINNED = ("updates", "grabs", "strikes", "throws", "damage")
SECONDS = 60


class Watch:
    """Looks at the world after every update of the headless run."""

    def __init__(self):
        self.updates = 0
        self.nonfinite: list[int] = []
        self.health: dict[str, float] | None = None
        self.decreases: list[tuple[int, str, float, float]] = []     # (update, name, drop, new health)
        self.rises: list[tuple[int, str, float, float]] = []
        self.player = None
        self.instances = None
        self.leak_checks: list[tuple[int, int, int]] = []

    def __call__(self, sim) -> None:
        game = sim.game
        self.updates += 1
        if self.player is None:
            self.player = game.player
            self.instances = [game.instance(n) for n, _ in game.humans()]
        if game.ctx.poses is None or not game.ctx.poses.is_finite():
            self.nonfinite.append(game.update)
        h = sim.health()
        if self.health is not None:
            for n, v in h.items():
                before = self.health[n]
                if v < before:
                    self.decreases.append((game.update, n, before - v, v))
                elif v > before:
                    self.rises.append((game.update, n, v - before, v))
        self.health = h
        if game.update % 300 == 0:
            self.leak_checks.append((game.update, self.player.pool.in_use,
                                     self.player.tasks_out(self.instances)))


@pytest.fixture(scope="module")
def minute(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo60")
    watch = Watch()
    summary = run_headless(seconds=SECONDS, out=out, seed=1, on_update=watch)
    return out, summary, watch


def strike_damages() -> set[int]:
    """The damage (+0x0a) of every move of the set that has any."""
    s = demo_set()
    return {int(s.range(int(m)).damage) for m in Move if s.has(int(m)) and s.range(int(m)).damage > 0}


def test_a_minute_of_attract_mode_grabs_strikes_and_throws(minute):
    _, summary, watch = minute
    assert watch.updates == summary["updates"] == SECONDS * 30
    assert summary["grabs"] >= 1
    assert summary["strikes"] >= 1
    assert summary["throws"] >= 1


def test_poses_stay_finite_every_update(minute):
    _, _, watch = minute
    assert watch.nonfinite == []


def test_no_task_leaks_from_the_pool(minute):
    _, _, watch = minute
    assert watch.leak_checks and all(used == out for _, used, out in watch.leak_checks), watch.leak_checks
    assert watch.player.pool.in_use == watch.player.tasks_out(watch.instances)


def test_health_only_goes_down_by_the_range_records_damage(minute):
    _, summary, watch = minute
    damages = strike_damages()
    assert damages, "the set has no move with damage"
    # Health only rises when a round starts (the fight rules' round_pause after a K.O.):
    # back to full, on the update after the pause.
    starts = {r["ko_update"] + KO_UPDATES + 1 for r in summary["rounds"]}
    assert all(upd in starts and health == 100.0 for upd, _, _, health in watch.rises), (watch.rises, starts)
    assert watch.decreases, "nobody was hurt in a minute"
    for update, name, drop, health in watch.decreases:
        # A blow is its record's damage, or what was left of the health (down to 0).
        assert any(abs(drop - d) < 1e-9 for d in damages) or (health == 0 and drop < max(damages)), \
            (update, name, drop, sorted(damages))
    assert sum(d for _, _, d, _ in watch.decreases) == pytest.approx(summary["damage"])
    assert sum(summary["hits"].values()) == summary["strikes"] >= len(watch.decreases)


def test_summary_json_has_the_pinned_names(minute):
    out, summary, _ = minute
    on_disk = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    for key in PINNED:
        assert key in on_disk, key
        assert on_disk[key] == summary[key]
    assert on_disk["updates"] == SECONDS * 30
    assert on_disk["seed"] == 1 and on_disk["seconds"] == SECONDS
    assert set(on_disk["health"]) == {"p1", "p2"}
    if not on_disk["rounds"]:
        assert on_disk["damage"] == pytest.approx(sum(100.0 - v for v in on_disk["health"].values()))
    for r in on_disk["rounds"]:
        assert r["winner"] in ("p1", "p2") and r["loser"] in ("p1", "p2") and r["winner"] != r["loser"]
        assert 0 < r["ko_update"] < on_disk["updates"]
    assert on_disk["round"] == len(on_disk["rounds"]) + 1 or on_disk["round"] == len(on_disk["rounds"])


def test_the_pictures_exist_and_are_not_blank(minute):
    out, summary, _ = minute
    frames = summary["frames"]
    assert len(frames) == SECONDS // 2                       # one every 2 s of game time
    for name in (frames[0], frames[len(frames) // 2], frames[-1]):
        path = out / name
        assert path.stat().st_size > 20_000
        st = image_stats(path)
        assert (st["width"], st["height"]) == (1280, 720)
        assert st["colours"] > 40 and st["std"] > 15
    sheet = out / summary["contact_sheet"]
    assert sheet.exists() and sheet.stat().st_size > 50_000
    st = image_stats(sheet)
    assert st["width"] > 1280 and st["colours"] > 40
    # One tile per frame, the tiles' size: four columns.
    assert st["width"] == 4 * (TILE[0] + 6) + 6
    assert st["height"] == -(-len(frames) // 4) * (TILE[1] + 6) + 6


def test_the_same_seed_gives_the_same_fight():
    def run(seed):
        sim = DemoSim(seed=seed, attract=True)
        try:
            for _ in range(450):
                sim.step()
            st = sim.fight.stats
            return (st.grabs, st.strikes, st.throws, st.damage, tuple(st.log),
                    tuple(tuple(sim.game.body(n).position.round(9)) for n in sim.names))
        finally:
            sim.close()

    a, b = run(3), run(3)
    assert a == b
    assert run(4) != a


def test_the_keyboard_drives_p1_through_the_fight_rules():
    sim = DemoSim(seed=1, attract=False)
    try:
        sim.ai["p2"].enabled = False                         # p2 stands still for the keyboard part
        kb = sim.keyboard
        kb.direction = (0.0, 1.0)                            # walk toward p2 (world +y)
        for _ in range(20):
            sim.step()
        body = sim.game.body("p1")
        assert body.position[1] > -1.5 + 0.3
        assert abs(body.heading) < 1e-6
        assert sim.fight.combat("p1").move_speed > 0
        kb.direction = (0.0, 0.0)
        for _ in range(30):
            sim.step()
        assert sim.fight.combat("p1").move_speed == 0
        kb.press("strike", sim.update)
        for _ in range(3):
            sim.step()
        assert any(e[1] == "p1" and e[2] == "strike" for e in sim.fight.stats.log)
        # Attract mode hands p1 to its own AI; the keyboard is ignored.
        sim.ai["p2"].enabled = True
        sim.set_attract(True)
        assert sim.controller_of("p1").startswith("AI")
        assert sim.controller_of("p2").startswith("AI")
        for _ in range(200):
            sim.step()
        assert sum(1 for e in sim.fight.stats.log if e[1] == "p1") > 1
    finally:
        sim.close()


def test_the_keyboard_grabs_and_throws(tmp_path):
    sim = DemoSim(seed=1, attract=False)
    try:
        sim.ai["p2"].enabled = False                         # a still partner
        kb = sim.keyboard
        kb.direction = (0.0, 1.0)
        for _ in range(200):
            sim.step()
            d = sim.game.body("p2").position - sim.game.body("p1").position
            if (d[0] ** 2 + d[1] ** 2) ** 0.5 < 0.9:
                break
        kb.direction = (0.0, 0.0)
        for _ in range(20):
            sim.step()
        kb.press("face", sim.update)
        sim.step()
        kb.press("grab", sim.update)
        for _ in range(60):
            sim.step()
            if sim.fight.combat("p1").state == FightState.HOLDING:
                break
        assert sim.fight.combat("p1").state == FightState.HOLDING, sim.fight.stats.log
        kb.press("throw", sim.update)
        for _ in range(120):
            sim.step()
        assert sim.fight.stats.throws == 1, sim.fight.stats.log
        save_picture(sim, tmp_path / "help.png", show_help=True, paused=True, slow=True, inset=1)
        assert image_stats(tmp_path / "help.png")["colours"] > 40
    finally:
        sim.close()


@pytest.mark.slow
def test_scuffle_demo_headless_as_a_subprocess(tmp_path):
    out = tmp_path / "tmp"
    env = dict(os.environ, SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    proc = subprocess.run([sys.executable, "-m", "scuffle", "demo", "--headless", "--seconds", "2", "--out", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["updates"] == 60
    assert all(k in summary for k in PINNED)
    assert (out / "contact_sheet.png").exists() and (out / summary["frames"][0]).exists()


def test_without_a_display_scuffle_demo_runs_headless(tmp_path, monkeypatch, capsys):
    from scuffle.demo.cli import main, no_display

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("SDL_VIDEODRIVER", "x11")
    if sys.platform.startswith("linux"):
        assert no_display()
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    assert no_display() == "SDL_VIDEODRIVER=dummy"
    out = tmp_path / "auto"
    assert main(["--seconds", "1", "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["updates"] == 30
    assert "running headless" in capsys.readouterr().err


def _imports_pygame(path: Path) -> bool:
    """The import scanner's verdict; a file that never spells "pygame" is not parsed (the
    scanner reads only literal module names, so it could not find one there)."""
    return "pygame" in path.read_text(encoding="utf-8") and "pygame" in imported_roots(path)


def test_nothing_outside_demo_imports_pygame():
    top_skip = {"demo", "build", "dist", "out"}          # demo/ itself and build output

    def hidden(name):
        return name.startswith(".") or name.endswith(".egg-info") or name in ("site-packages", "__pycache__")

    files = []
    for folder, dirs, names in os.walk(REPO):
        top = Path(folder) == REPO
        # hidden folders (the virtual environments among them) are not walked at all
        dirs[:] = sorted(d for d in dirs if not hidden(d) and not (top and d in top_skip))
        files += [Path(folder) / n for n in sorted(names) if n.endswith(".py") and not hidden(n)]
    assert any(p.match("game/*.py") for p in files) and any(p.match("tests/demo/*.py") for p in files)
    bad = sorted(str(p.relative_to(REPO)) for p in files if _imports_pygame(p))
    assert bad == []
    assert any("pygame" in imported_roots(p) for p in (REPO / "demo").glob("*.py"))


def test_the_window_keys(tmp_path):
    from scuffle.demo.app import App

    app = App(seed=1)
    try:
        assert not app.sim.attract and app.sim.controller_of("p1") == "keyboard"
        app.press("p")
        assert app.sim.paused
        before = app.sim.update
        app.press("n")                                        # one update while paused
        assert app.sim.update == before + 1
        app.press("m")
        assert app.sim.slow
        app.press("h")
        assert app.frame_scene(1.0).show_help
        app.press("f1")
        assert not app.frame_scene(1.0).show_help
        app.press("j")
        assert [a for a, _ in app.sim.keyboard.pending] == ["strike"]
        app.press("t")
        assert app.sim.attract and not app.sim.keyboard.pending
        app.press("tab")
        assert app.frame_scene(1.0).inset == 1
        app.press("escape")
        assert not app.running
    finally:
        app.sim.close()


@pytest.mark.slow
def test_the_window_loop_runs_and_saves_a_screenshot(tmp_path):
    from scuffle.demo.app import App

    shot = tmp_path / "window.png"
    App(seed=1, attract=True, size=(960, 540), screenshot=shot, screenshot_at=15).run()
    st = image_stats(shot)
    assert (st["width"], st["height"]) == (960, 540) and st["colours"] > 40
