"""Tests of ``scuffle lint RESOURCE_OR_CLIPS... [--json] [--data-speeds]`` (game/lint.py).

A set with a 2-frame clip at no rate flag (0.75) is flagged; the same clip at flag
0x1000 (rate 1.0) is not (Spec: "When a clip ends", the overshoot of 0.0).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, encode_clip
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.data.resource import save_resource
from scuffle.game.cli import commands as cli
from scuffle_cli import run_scuffle

REPO = Path(__file__).resolve().parents[2]


def write_set(path: Path, flags: int) -> str:
    two = author_clip("blink", 2)
    ranges = {12: author_range(flags=flags)} if flags else {}
    s = AnimSet.build({12: two, 388: author_clip("idle", 60), 19: author_clip("SSS3", 21)},
                      {**ranges, 19: author_range(flags=0x800)})
    path.write_bytes(save_resource(s.to_resource()))
    return str(path)


def run_cli(*args):
    """``scuffle ARGS`` in this process (tests/scuffle_cli.py)."""
    return run_scuffle(*args, cwd=REPO)


def test_flagged_at_no_flag(tmp_path):
    res = write_set(tmp_path / "set.res", 0)
    r = run_cli("lint", res)
    assert r.returncode == 1, r.stderr
    assert r.stderr == ""
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2
    assert "id 12" in lines[0] and "'blink'" in lines[0] and "2 frames" in lines[0] and "rate 0.75" in lines[0]
    assert lines[1] == "1 never-ending clip in 3 checked"


def test_not_flagged_at_flag_0x1000(tmp_path):
    res = write_set(tmp_path / "set.res", 0x1000)
    r = run_cli("lint", res)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0 never-ending clips in 3 checked"


def test_json(tmp_path):
    a = write_set(tmp_path / "a.res", 0)
    b = write_set(tmp_path / "b.res", 0x1000)
    r = run_cli("lint", a, b, "--json")
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert r.stdout.count("\n") == 1
    assert out["checked"] == 6
    assert out["speeds"] == [0.75, pytest.approx(0.8), 1.0, pytest.approx(0.9)]
    assert out["never_ending"] == [{"source": a, "id": 12, "name": "blink", "frames": 2, "rate": 0.75,
                                    "range_flags": 0, "update": 2}]


def test_data_speeds(tmp_path, capsys):
    res = write_set(tmp_path / "set.res", 0)
    assert cli.main(["lint", res, "--data-speeds"]) == 0       # 1.0 with no flag before CfgAnimSpeeds
    assert "0 never-ending clips" in capsys.readouterr().out
    assert cli.main(["lint", res]) == 1


def test_clip_pair(tmp_path, capsys):
    d, k = encode_clip(author_clip("blink", 2))
    dp, kp = tmp_path / "blink.desc", tmp_path / "blink.keys"
    dp.write_bytes(d)
    kp.write_bytes(k)
    assert cli.main(["lint", str(dp), str(kp), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(f["id"], f["name"], f["rate"]) for f in out["never_ending"]] == [(None, "blink", 0.75)]
    assert out["checked"] == 4                                  # a lone clip: each of the four rates
    d, k = encode_clip(author_clip("three", 3))
    dp.write_bytes(d)
    kp.write_bytes(k)
    res = write_set(tmp_path / "set.res", 0x1000)
    assert cli.main(["lint", str(dp), str(kp), res]) == 0
    assert capsys.readouterr().out.strip().endswith("0 never-ending clips in 7 checked")


def test_errors_are_one_line_exit_2(tmp_path):
    missing = run_cli("lint", str(tmp_path / "nope.res"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and missing.stderr.startswith("scuffle lint: error: ")
    junk = tmp_path / "junk.res"
    junk.write_bytes(b"\x01\x02\x03")
    r = run_cli("lint", str(junk))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "junk.res" in r.stderr
    d, _ = encode_clip(author_clip("x", 5))
    lone = tmp_path / "x.desc"
    lone.write_bytes(d)
    r = run_cli("lint", str(lone))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "keyframes" in r.stderr
    bad_keys = tmp_path / "bad.keys"
    bad_keys.write_bytes(b"\xff" * 7)
    r = run_cli("lint", str(lone), str(bad_keys))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = run_cli("lint")
    assert r.returncode == 2                                    # usage: at least one path


def test_help_lists_lint():
    r = run_cli("--help")
    assert r.returncode == 0 and "lint" in r.stdout
