"""Pictures of scripted fights: ``scuffle run S.toml --gif F.gif --frames DIR``, ``scuffle
demo --play S.toml`` (the window with pause, slow motion and rewind; headless, its
pictures), ``scuffle clip demo`` and ``scuffle diff`` with names beside the ids.

Everything runs under SDL_VIDEODRIVER=dummy; this file never imports pygame itself.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from scuffle.demo.app import DT, App  # noqa: E402
from scuffle.demo.cli import main as demo_main  # noqa: E402
from scuffle.demo.headless import image_stats  # noqa: E402
from scuffle.demo.playback import ScenarioSim, ScenarioView  # noqa: E402
from scuffle.game.fighters import registry  # noqa: E402
from scuffle.game.runtime.scenario import load_scenario, run_scenario  # noqa: E402

from scuffle_cli import run_scuffle  # noqa: E402

# Two fighters on the demo set, written with names: p1 strikes p2, then grabs and throws.
FIGHT = """\
updates = 90
[sets.demo]
library = "demo"
[[humans]]
name = "p1"
set = "demo"
[[humans]]
name = "p2"
set = "demo"
position = [0.0, 0.9, 0.0]
heading = 180.0
[[commands]]
update = 0
human = "p1"
loop = "FIGHT_IDLE"
[[commands]]
update = 0
human = "p2"
loop = "FIGHT_IDLE"
[[commands]]
update = 5
human = "p1"
action = "strike"
move = "JAB"
[[commands]]
update = 45
human = "p1"
action = "grab"
"""


@pytest.fixture
def fight(tmp_path) -> Path:
    path = tmp_path / "fight.toml"
    path.write_text(FIGHT)
    return path


def _gif_frames(path: Path) -> int:
    from PIL import Image
    with Image.open(path) as im:
        return int(im.n_frames)


# ---------------------------------------------------------------- scuffle run --gif / --frames


def test_run_draws_the_gif_the_frames_and_a_captioned_contact_sheet(fight, tmp_path):
    pytest.importorskip("PIL")
    r = run_scuffle("run", "fight.toml", "--gif", "out/fight.gif", "--frames", "out/frames", "--frame-every", "1",
                    "--trace", "t.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    frames = sorted(p.name for p in (tmp_path / "out" / "frames").iterdir())
    assert frames == ["contact_sheet.png", "frame_0001.0s.png", "frame_0002.0s.png", "frame_0003.0s.png"]
    assert _gif_frames(tmp_path / "out" / "fight.gif") == 45          # 15 a second of 3 s
    for name in frames:
        st = image_stats(tmp_path / "out" / "frames" / name)
        assert st["colours"] > 8 and st["std"] > 5.0, name             # a picture, not a blank
    sheet = image_stats(tmp_path / "out" / "frames" / "contact_sheet.png")
    assert (sheet["width"], sheet["height"]) == (3 * 426 + 6, 312)     # three tiles (420 x 300) in a row
    assert "wrote out/fight.gif (45 pictures)" in r.stderr and "wrote 3 frames" in r.stderr
    # the pictures change nothing of the run: the same trace as without them
    plain = run_scuffle("run", "fight.toml", "--trace", "plain.jsonl", cwd=tmp_path)
    assert plain.returncode == 0 and (tmp_path / "t.jsonl").read_bytes() == (tmp_path / "plain.jsonl").read_bytes()


def test_run_never_replaces_what_is_not_a_regular_file_and_writes_whole(fight, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.gif").mkdir()                               # a folder where the GIF goes
    r = run_scuffle("run", "fight.toml", "--gif", "out/a.gif", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "out/a.gif" in r.stderr
    (tmp_path / "frames").write_text("a file")
    r = run_scuffle("run", "fight.toml", "--frames", "frames", cwd=tmp_path)
    assert r.returncode == 2 and "--frames frames: not a folder" in r.stderr
    (tmp_path / "shots").mkdir()
    os.symlink(tmp_path / "fight.toml", tmp_path / "shots" / "contact_sheet.png")
    r = run_scuffle("run", "fight.toml", "--frames", "shots", cwd=tmp_path)
    assert r.returncode == 2 and "contact" in r.stderr and (tmp_path / "fight.toml").read_text() == FIGHT
    long = "d" * 150
    (tmp_path / long).write_text("a file")
    r = run_scuffle("run", "fight.toml", "--frames", long, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "d" * 81 not in r.stderr
    r = run_scuffle("run", "fight.toml", "--frames", "x", "--frame-every", "0.05", cwd=tmp_path)
    assert r.returncode == 2 and "from 0.1 to 3600" in r.stderr
    r = run_scuffle("run", "fight.toml", "--frames", "x", "--frame-every", "nan", cwd=tmp_path)
    assert r.returncode == 2 and "nan" in r.stderr
    assert not any(p.name.startswith(".") or p.suffix == ".tmp" for p in tmp_path.rglob("*"))


@pytest.mark.slow
def test_the_last_frame_within_a_tenth_of_the_one_before_replaces_it(fight, tmp_path):
    """Frames every 0.1 s (3 updates) over 91 updates: update 90 is 3.0 s and update 91
    3.03 s, one name: the last update's picture is the one kept, once on the sheet."""
    (tmp_path / "f91.toml").write_text(FIGHT.replace("updates = 90", "updates = 91"))
    r = run_scuffle("run", "f91.toml", "--frames", "shots", "--frame-every", "0.1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "shots").iterdir())
    assert len(names) == 31 and names[-1] == "frame_0003.0s.png"          # 30 frames and the sheet
    sheet = image_stats(tmp_path / "shots" / "contact_sheet.png")
    assert sheet["height"] == 8 * 306 + 6                                 # 30 tiles, 4 a row


def test_run_without_pygame_or_pillow_says_which_extra_to_install(fight, tmp_path, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec

    def without(*missing):
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a, **k: None if name in missing else real(name, *a, **k))
    without("PIL")
    r = run_scuffle("run", "fight.toml", "--gif", "f.gif", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == "scuffle run: error: --gif needs Pillow, which is not installed: pip install 'scuffle[gif]'\n"
    without("pygame", "PIL")
    r = run_scuffle("run", "fight.toml", "--gif", "f.gif", cwd=tmp_path)
    assert r.returncode == 2 and "pip install 'scuffle[demo,gif]'" in r.stderr and len(r.stderr.splitlines()) == 1
    r = run_scuffle("run", "fight.toml", "--frames", "d", cwd=tmp_path)
    assert r.returncode == 2 and "pip install 'scuffle[demo]'" in r.stderr
    assert not (tmp_path / "f.gif").exists() and not (tmp_path / "d").exists()


# ---------------------------------------------------------------- scuffle demo --play


def test_play_in_the_window_pauses_slows_rewinds_and_plays_on_as_the_scenario_does(fight):
    sc = load_scenario(fight, registry())
    app = App(size=(640, 360), sim=ScenarioSim(sc))
    ref = None
    try:
        app.run(max_frames=30, frame_dt=DT)
        assert app.sim.update == 30
        app.post_key("p")                                   # pause: nothing moves
        app.run(max_frames=10, frame_dt=DT)
        assert app.sim.update == 30
        app.post_key("n")                                   # one step while paused
        app.run(max_frames=1, frame_dt=DT)
        assert app.sim.update == 31
        app.post_key("p")
        app.post_key("m")                                   # slow motion: 1/4 speed
        app.run(max_frames=8, frame_dt=DT)
        assert app.sim.update == 33
        app.post_key("m")
        app.post_key("r")                                   # R held: one update back a frame
        app.run(max_frames=13, frame_dt=DT)
        assert app.sim.update == 20
        app.post_key("r", down=False)
        app.run(max_frames=200, frame_dt=DT)
        assert app.sim.update == 90 and app.sim.paused    # the end: paused on the last update
        ref = run_scenario(sc)
        assert app.sim.game.checksum() == ref.checksum()   # the rewound commands ran again
        assert app.sim.fight.stats.strikes == ref.fight.stats.strikes == 1
        assert app.frame_scene(1.0).mode.startswith("SCENARIO")
    finally:
        app.running = False
        app.close()
        if ref is not None:
            ref.close()


def test_play_headless_writes_its_pictures_and_the_gif(fight, tmp_path, capsys):
    pytest.importorskip("PIL")
    status = demo_main(["--play", str(fight), "--headless", "--seconds", "2", "--frame-every", "1",
                        "--out", str(tmp_path / "out"), "--gif", str(tmp_path / "p.gif")])
    out = capsys.readouterr()
    assert status == 0, out.err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == \
        ["contact_sheet.png", "frame_0001.0s.png", "frame_0002.0s.png"]
    assert _gif_frames(tmp_path / "p.gif") == 30
    assert "played" in out.out and "60 of 90 updates" in out.out and "strikes 1" in out.out


def test_play_refuses_a_trace_a_bad_scenario_and_the_fights_own_flags(fight, tmp_path, capsys):
    (tmp_path / "t.jsonl").write_text('{"update": 0}\n')
    assert demo_main(["--play", str(tmp_path / "t.jsonl")]) == 2
    assert "is a trace (JSON lines), not a scenario" in capsys.readouterr().err
    (tmp_path / "bad.toml").write_text("updates = -1\n")
    assert demo_main(["--play", str(tmp_path / "bad.toml"), "--headless"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "bad.toml:1: updates" in err
    assert demo_main(["--play", str(fight), "--record", str(tmp_path / "r.toml")]) == 2
    assert "--record goes with the fight, not --play" in capsys.readouterr().err


# ---------------------------------------------------------------- clip names: scuffle clip demo, scuffle diff


def test_clip_demo_lists_the_demo_sets_clips_by_name(tmp_path):
    (tmp_path / "demo").mkdir()                             # a folder named demo, as in the repository
    r = run_scuffle("clip", "demo", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].endswith(" clips") and int(lines[0].split()[0]) >= 40
    assert any(ln.split()[:2] == ["358", "FIGHT_IDLE"] for ln in lines)
    assert any(ln.split()[:2] == ["11", "JAB"] for ln in lines)
    r = run_scuffle("clip", "demo", "--id", "THROW_SIDE", cwd=tmp_path)
    assert r.returncode == 0 and "clip 'THROW_SIDE'" in r.stdout
    r = run_scuffle("clip", "demo", "--id", "THROW_SIDDE", cwd=tmp_path)
    assert r.returncode == 2 and "did you mean 'THROW_SIDE'" in r.stderr


def test_diff_shows_clip_names_and_event_types_beside_the_ids(fight, tmp_path):
    (tmp_path / "kick.toml").write_text(FIGHT.replace('move = "JAB"', 'move = "KICK"'))
    for name in ("fight", "kick"):
        assert run_scuffle("run", f"{name}.toml", "--trace", f"{name}.jsonl", cwd=tmp_path).returncode == 0
    r = run_scuffle("diff", "fight.jsonl", "kick.jsonl", "--names", "fight.toml", "--context", "1", cwd=tmp_path)
    assert r.returncode == 1
    assert "p1  anim          A 11 (JAB)   B 12 (KICK)" in r.stdout
    assert "update     4:  A 358 (FIGHT_IDLE)   B 358 (FIGHT_IDLE)" in r.stdout
    r = run_scuffle("diff", "fight.jsonl", "kick.jsonl", "--names", "demo", "--fields", "events[0].type,anim",
                    "--context", "0", cwd=tmp_path)
    assert r.returncode == 1 and "A 11 (JAB)   B 12 (KICK)" in r.stdout
    r = run_scuffle("diff", "fight.jsonl", "kick.jsonl", cwd=tmp_path)
    assert "A 11   B 12" in r.stdout and "--names SCENARIO.toml" in r.stdout
    r = run_scuffle("diff", "fight.jsonl", "kick.jsonl", "--names", "fight.toml", "--json", cwd=tmp_path)
    first = json.loads(r.stdout)["differences"][0]
    assert (first["path"], first["a_name"], first["b_name"]) == ("anim", "JAB", "KICK")
    r = run_scuffle("diff", "fight.jsonl", "kick.jsonl", "--names", "nowhere.res", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "--names nowhere.res" in r.stderr


def test_the_diffs_names_know_event_types_task_types_and_each_humans_set():
    from scuffle.anim.data.clip import EventType
    from scuffle.anim.playback.tasks import TaskType
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.tools.diff import Names

    names = Names({"p1": demo_set()})
    assert names.of("p1", "events[2].type", int(EventType.HELD_OPEN)) == "HELD_OPEN"
    assert names.of("x", "tasks[top].type", int(TaskType.GAIT)) == "GAIT"
    assert names.of("p1", "tasks[1].next", 358) == "FIGHT_IDLE" and names.of("p1", "released[0]", 11) == "JAB"
    assert names.of("p2", "anim", 358) == ""                      # p2's set is not known
    assert names.of("p1", "held", 358) == "" and names.of("p1", "anim", -1) == ""
    assert names.of("p1", "anim", 10 ** 9) == "" and names.of("p1", "events[0].type", 999) == ""


def test_a_caption_names_the_clip_by_the_humans_own_set(fight):
    """A scenario's set names its own clips: the caption reads the set's name for the
    playing id (lower case, as the demo's moves), the demo's move only for a clip without one."""
    from scuffle.anim.data.animset import AnimSet
    from scuffle.anim.data.clip import author_clip
    from scuffle.demo import render
    from scuffle.game.runtime.world import Game

    with Game() as g:
        aset = AnimSet.build({11: author_clip("WAVE", 30), 12: author_clip("", 30)}, name="mine")
        g.add_human("a", aset)
        g.add_human("b", aset, position=(0, 2, 0))
        from scuffle.game.fighters.combat import Fight
        Fight(g, idle_existing=False)
        g.change("a", g.player.loop(g.instance("a"), 11))
        g.change("b", g.player.loop(g.instance("b"), 12))
        g.step()
        lines = [text for text, _ in render.caption_lines(render.snapshot(ScenarioView(g)))]
        assert "wave" in lines[1] and "jab" not in lines[1]       # 11 is JAB in the demo's moves
        assert "kick" in lines[2]                                 # unnamed: the demo's move 12
