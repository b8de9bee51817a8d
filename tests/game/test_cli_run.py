"""``scuffle run SCENARIO.toml --trace OUT.jsonl`` (game/runcmd.py) end to end.

Spec: "When a clip ends" (the table of chain clips: a clip lasts ceil((F - 0.5) / r)
updates, one more on an exact tie at 0.75). Checked: the clip-end table through the CLI;
errors are one line, no traceback, and no update runs on a bad file.
"""
from __future__ import annotations

import json

import esper
import pytest

from scuffle.game.cli import commands as cli

from gamehelp import (IDLE, by_human, clip, clip_length, clip_toml, command_toml, human_toml, read_trace,
                      run_cli, still)
from test_scenario import _errors, base_text

# (frames, range flags, updates from the first record showing the id to the first showing the next)
CLIP_END_TABLE = [
    (21, 0x800, 26), (26, 0x800, 32), (27, 0x800, 34), (24, 0x800, 30), (16, 0x800, 20),
    (19, 0, 25), (28, 0, 37), (26, 0, 35), (12, 0, 16), (8, 0, 11), (11, 0, 15), (10, 0, 13),
    (46, 0, 61),
]


def test_the_clip_end_table_through_the_cli(tmp_path):
    text = "updates = 70\n" + clip_toml("s", IDLE, still())
    for i, (frames, flags, _) in enumerate(CLIP_END_TABLE):
        text += clip_toml("s", 100 + i, clip(frames, f"c{i}"), flags=flags)
    for i in range(len(CLIP_END_TABLE)):
        text += human_toml(f"h{i}")
    for i in range(len(CLIP_END_TABLE)):
        text += command_toml(2, f"h{i}", play=[100 + i, IDLE])
    (tmp_path / "table.toml").write_text(text)
    r = run_cli("run", "table.toml", "--trace", "out.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    recs = read_trace(tmp_path / "out.jsonl")
    assert len(recs) == 70 * len(CLIP_END_TABLE)
    got = {(f, fl): clip_length(by_human(recs, f"h{i}"), 100 + i, IDLE)
           for i, (f, fl, _) in enumerate(CLIP_END_TABLE)}
    assert got == {(f, fl): n for f, fl, n in CLIP_END_TABLE}


@pytest.mark.parametrize("text, needle, fld", _errors())
def test_errors_are_one_line_and_nothing_runs(tmp_path, capsys, text, needle, fld):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = tmp_path / "out.jsonl"
    status = cli.main(["run", str(path), "--trace", str(out)])
    cap = capsys.readouterr()
    assert status == 2
    assert cap.out == ""
    lines = cap.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"scuffle run: error: {path}:")
    assert f": {fld}: " in lines[0]
    assert not out.exists()                              # no update ran, no trace


@pytest.mark.parametrize("extra", ["x = = 1\n", command_toml(1, "a", loop=IDLE, fade="x")])
def test_errors_through_a_subprocess(tmp_path, extra):
    (tmp_path / "bad.toml").write_text(base_text() + extra)
    r = run_cli("run", "bad.toml", "--trace", "out.jsonl", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("scuffle run: error: bad.toml:")
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_a_limit_hit_at_run_time_is_one_line_too(tmp_path, capsys):
    text = base_text(command_toml(3, "a", play=[1, IDLE]), updates=8)
    text = text.replace("updates = 8\n", "updates = 8\n[options]\npool_size = 2\n")
    path = tmp_path / "pool.toml"
    path.write_text(text)
    out = tmp_path / "out.jsonl"
    worlds = esper.list_worlds()
    status = cli.main(["run", str(path), "--trace", str(out)])
    assert esper.list_worlds() == worlds                 # the game's world was closed
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1
    assert err[0].startswith(f"scuffle run: error: {path}:{text.splitlines().index('[[commands]]') + 1}: commands[0]: ")
    assert "task pool exhausted" in err[0]
    assert [json.loads(x)["update"] for x in out.read_text().splitlines()] == [0, 1, 2]


def test_trace_to_stdout_and_unreadable_files(tmp_path, capsys):
    path = tmp_path / "ok.toml"
    path.write_text(base_text(updates=3))
    assert cli.main(["run", str(path), "--trace", "-"]) == 0
    cap = capsys.readouterr()
    assert [json.loads(x)["update"] for x in cap.out.splitlines()] == [0, 1, 2]
    assert cli.main(["run", str(tmp_path / "missing.toml")]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1
    assert cli.main(["run", str(path), "--trace", str(tmp_path / "no" / "dir" / "t.jsonl")]) == 2
    assert "cannot write trace" in capsys.readouterr().err


def test_the_game_command_line_alone_knows_no_demo(tmp_path, capsys):
    """The game layer's ``main`` has the game's subcommands only; the demo's (``demo``,
    ``view``, the pictures of ``run --gif``) are handed in by the package's face
    (``scuffle.cli``), which the console script runs."""
    assert cli.main(["demo", "--headless"]) == 2
    assert "invalid choice: 'demo'" in capsys.readouterr().err
    path = tmp_path / "s.toml"
    path.write_text(base_text())
    assert cli.main(["run", str(path), "--gif", str(tmp_path / "f.gif")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--gif needs the demo's pictures" in err, err
    assert not (tmp_path / "f.gif").exists()
    from scuffle import cli as face
    assert [c.name for c in face.commands()][:2] == ["demo", "view"]
