"""Tests of ``scuffle clip DESCRIPTOR_FILE KEYFRAMES_FILE [--json]`` (game/cli.py)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scuffle.anim.data.clip import ROT_SCALE, author_clip, encode_clip, make_event
from scuffle.game.cli import commands as cli

REPO = Path(__file__).resolve().parents[2]


def walk_clip():
    return author_clip(
        "walk_start", 10,
        velocity=[(0, (0.0, 0.0, 0.0)), (2, (0.0, 1.048, 0.0))],
        translation=[(0, (0.0, 0.0, 0.5))],
        rotations={1: [(0, (0.0, 0.0, 0.0, 1.0)), (6, (0.0, 0.0, 0.6, 0.8))],
                   5: [(3, (0.6, 0.0, 0.0, 0.8))]},
        events=[make_event(2, 11, word=0x1234), make_event(4, 0x21, (0, 6), (0.5, 0.0, 1.0), code="bld"),
                make_event(5, 0x3A, fov=-1.0), make_event(6, 8, position=(0.38, 1.012, 0.0))],
        displacement=(0.0, 0.349), flags=0x20,
    )


@pytest.fixture
def clip_files(tmp_path):
    d, k = encode_clip(walk_clip())
    dp, kp = tmp_path / "walk.desc", tmp_path / "walk.keys"
    dp.write_bytes(d)
    kp.write_bytes(k)
    return str(dp), str(kp)


def run_cli(*args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "scuffle", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_subprocess_json(clip_files):
    r = run_cli("clip", *clip_files, "--json")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    out = json.loads(r.stdout)
    assert r.stdout.count("\n") == 1                   # one JSON object on one line
    assert out["name"] == "walk_start"
    assert out["duration"] == pytest.approx(1 / 3, rel=1e-6)
    assert out["frames"] == 10
    assert out["displacement"] == [0.0, pytest.approx(0.349, rel=1e-6)]
    assert out["flags"] == 0x20
    assert out["mask"] == [1, 5]
    vel = out["root_velocity"]
    assert [k[0] for k in vel] == [0, 2]
    assert vel[1][2] == pytest.approx(1.048, abs=0.5 / 1023)
    assert out["root_translation"] == [[0, 0.0, 0.0, pytest.approx(0.5, abs=1 / 2047)]]
    assert set(out["rotations"]) == {"1", "5"}
    r1 = out["rotations"]["1"]
    assert [k[0] for k in r1] == [0, 6]
    assert r1[0] == [0, 0.0, 0.0, 0.0, 1.0]
    assert r1[1][1:] == pytest.approx([0.0, 0.0, 0.6, 0.8], abs=1e-4)
    assert [k[0] for k in out["rotations"]["5"]] == [0, 3]   # held from frame 0
    ev = out["events"]
    assert [e["frame"] for e in ev] == [2, 4, 5, 6]
    assert ev[0]["type"] == 11 and ev[0]["word"] == 0x1234
    assert ev[1]["type"] == 0x21 and ev[1]["code"] == "bld" and ev[1]["args"] == [0, 6]
    assert ev[2]["fov"] == -1.0
    assert ev[3]["position"] == pytest.approx([0.38, 1.012, 0.0], abs=1 / 1023)
    for e in ev:
        assert {"frame", "type", "args", "position", "rotation"} <= set(e)


def test_subprocess_text(clip_files):
    r = run_cli("clip", *clip_files)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "walk_start" in text
    assert "10 frames" in text
    assert "mask: 1 5 (2 bones)" in text
    assert "root velocity (A): 2 keys, frames 0-2" in text
    assert "root translation (B): 1 key, frames 0-0" in text
    assert "bone 1: 2 keys, frames 0-6" in text
    assert "bone 5: 2 keys, frames 0-3" in text
    assert "events: 4" in text
    assert "sub_bld" in text and "word 0x00001234" in text and "fov -1.0" in text


@pytest.mark.slow
def test_subprocess_missing_file_is_one_line_exit_2(tmp_path, clip_files):
    r = run_cli("clip", str(tmp_path / "nope.desc"), clip_files[1])
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("scuffle clip: error: ")
    assert "nope.desc" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.slow
def test_subprocess_bad_clip_is_one_line_exit_2(tmp_path, clip_files):
    bad = tmp_path / "short.desc"
    bad.write_bytes(Path(clip_files[0]).read_bytes()[:79])
    r = run_cli("clip", str(bad), clip_files[1], "--json")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("scuffle clip: error: descriptor chunk, size at byte 79")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_subprocess_usage_error_exit_2():
    r = run_cli("clip")
    assert r.returncode == 2
    assert "scuffle clip: error:" in r.stderr and "Traceback" not in r.stderr


def test_main_json_matches_the_clip(clip_files, capsys):
    assert cli.main(["clip", *clip_files, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    q = out["rotations"]["5"][1]
    assert q[1] == pytest.approx(round(0.6 / ROT_SCALE) * ROT_SCALE, rel=1e-6)
    assert q[4] == pytest.approx(math.sqrt(1 - q[1] ** 2), rel=1e-6)
    # Floats are the float32 values, written shortest: they read back bit for bit.
    assert np.float32(out["duration"]) == np.float32(10 / 30)


def test_main_empty_sections_are_null(tmp_path, capsys):
    d, k = encode_clip(author_clip("still", 1))
    (tmp_path / "d").write_bytes(d)
    (tmp_path / "k").write_bytes(k)
    assert cli.main(["clip", str(tmp_path / "d"), str(tmp_path / "k"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["root_velocity"] is None and out["root_translation"] is None
    assert out["rotations"] == {} and out["events"] == [] and out["mask"] == []
    assert cli.main(["clip", str(tmp_path / "d"), str(tmp_path / "k")]) == 0
    text = capsys.readouterr().out
    assert "root velocity (A): none" in text and "mask: (none) (0 bones)" in text


def test_main_format_error(tmp_path, clip_files, capsys):
    (tmp_path / "k").write_bytes(Path(clip_files[1]).read_bytes() + b"\0")
    assert cli.main(["clip", clip_files[0], str(tmp_path / "k")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("scuffle clip: error: keyframes chunk, chunk size at byte")


def test_main_unreadable_path_is_an_error(tmp_path, clip_files, capsys):
    assert cli.main(["clip", str(tmp_path), clip_files[1]]) == 2       # a directory
    err = capsys.readouterr().err
    assert err.startswith("scuffle clip: error: cannot read descriptor file") and err.count("\n") == 1


def test_main_help_and_usage(capsys):
    assert cli.main(["--help"]) == 0
    assert "clip" in capsys.readouterr().out
    assert cli.main([]) == 2
    assert cli.main(["nosuch"]) == 2
    assert "scuffle: error:" in capsys.readouterr().err


def test_commands_registry():
    from scuffle.cli import commands

    names = [c.name for c in commands()]
    assert {"demo", "view", "run", "clip", "lint", "diff", "survey", "bench", "csv2trace", "warm"} == set(names)
    assert {c.name for c in cli.COMMANDS} == set(names) - {"demo", "view"}      # the demo's are the demo's
    assert len(set(names)) == len(names)
    parser = cli.build_parser()
    args = parser.parse_args(["clip", "a", "b", "--json"])
    assert args.run is cli.cmd_clip and args.json and args.descriptor == "a" and args.keyframes == "b"


@pytest.mark.slow
def test_subprocess_closed_stdout_is_quiet(clip_files):
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-m", "scuffle", "clip", *clip_files, "--json"], cwd=REPO,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                                    # the reader goes away at once
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait(timeout=60) in (0, 1)
    assert "Traceback" not in err and err == ""


# ---------------------------------------------------------------- resource files


def _resource(tmp_path):
    from scuffle.anim.data.animset import AnimSet
    from scuffle.anim.data.clip import author_clip
    from scuffle.anim.data.resource import save_resource

    a = author_clip("A", 12, rotations={3: [(0, (0, 0, 0, 1)), (12, (0.1, 0, 0, 0.995))]})
    b = author_clip("B", 20, velocity=[(0, (0, 1.048, 0))])
    path = tmp_path / "set.res"
    path.write_bytes(save_resource(AnimSet.build({11: a, 12: a, 408: b}).to_resource()))
    return path


def test_clip_reads_a_resource_file(tmp_path, capsys):
    path = _resource(tmp_path)
    assert cli.main(["clip", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in out["clips"]] == [[11, 12], [408]]
    assert out["clips"][1]["name"] == "B" and out["clips"][1]["frames"] == 20
    assert cli.main(["clip", str(path), "--id", "408", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["id"] == [408] and one["root_velocity"][0][2] == pytest.approx(1.048, abs=1e-3)
    assert cli.main(["clip", str(path)]) == 0
    text = capsys.readouterr().out
    assert "anim id 11, 12" in text and "clip 'B'" in text


def test_clip_resource_errors_are_one_line(tmp_path, capsys):
    path = _resource(tmp_path)
    assert cli.main(["clip", str(path), "--id", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "anim id 5 has no clip" in err
    bad = tmp_path / "bad.res"
    bad.write_bytes(path.read_bytes()[:30])
    assert cli.main(["clip", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.res" in err and "at byte" in err
