"""``scuffle run --snapshot-at U --snapshot-out F`` and ``--from-snapshot F``, and
``scuffle diff --from U`` / its cut line (issue 20, item 5): a long scenario resumed near
a divergence gives the same trace bytes as the whole run from there."""
from __future__ import annotations

import json

import pytest

from gamehelp import run_cli

FIGHT = """updates = 120

[fight]
rounds = true

[sets.demo]
library = "demo"

[[humans]]
name = "p1"
set = "demo"
position = [0.0, -1.5, 0.0]
heading = 0.0
health = 20.0

[[humans]]
name = "p2"
set = "demo"
position = [0.0, 1.5, 0.0]
heading = 180.0
health = 20.0

[[commands]]
update = 0
human = "p1"
loop = 358

[[commands]]
update = 0
human = "p2"
loop = 358

[[commands]]
update = 10
human = "p1"
action = "grab"

[[commands]]
update = 40
human = "p1"
action = "strike"

[[commands]]
update = 80
human = "p2"
action = "strike"
"""


@pytest.fixture
def fight_dir(tmp_path):
    (tmp_path / "fight.toml").write_text(FIGHT, encoding="utf-8")
    return tmp_path


def _lines(path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("at", [pytest.param(0, marks=pytest.mark.slow), 35, pytest.param(120, marks=pytest.mark.slow)])
def test_a_run_resumed_from_a_snapshot_writes_the_rest_of_the_trace_byte_for_byte(fight_dir, at):
    r = run_cli("run", "fight.toml", "--trace", "full.jsonl", "--pose", "--snapshot-at", str(at),
                "--snapshot-out", "s.snap", cwd=fight_dir)
    assert r.returncode == 0, r.stderr
    assert (fight_dir / "s.snap").read_bytes()[:8] == b"SCUFSNAP"
    r = run_cli("run", "fight.toml", "--trace", "rest.jsonl", "--pose", "--from-snapshot", "s.snap", cwd=fight_dir)
    assert r.returncode == 0, r.stderr
    assert f"from the snapshot of update {at}" in r.stderr
    full, rest = _lines(fight_dir / "full.jsonl"), _lines(fight_dir / "rest.jsonl")
    assert rest == [line for line in full if json.loads(line)["update"] >= at]
    assert len(rest) == 2 * (120 - at)
    r = run_cli("diff", "full.jsonl", "rest.jsonl", "--from", str(at), cwd=fight_dir)
    assert r.returncode == 0 and "agree" in r.stdout


def test_diff_names_the_update_to_cut_at(fight_dir):
    (fight_dir / "late.toml").write_text(FIGHT.replace("update = 80", "update = 81"), encoding="utf-8")
    assert run_cli("run", "fight.toml", "--trace", "a.jsonl", cwd=fight_dir).returncode == 0
    assert run_cli("run", "late.toml", "--trace", "b.jsonl", cwd=fight_dir).returncode == 0
    r = run_cli("diff", "a.jsonl", "b.jsonl", cwd=fight_dir)
    assert r.returncode == 1
    assert "first difference: update 80" in r.stdout and "--snapshot-at 80" in r.stdout
    r = run_cli("diff", "a.jsonl", "b.jsonl", "--json", cwd=fight_dir)
    assert json.loads(r.stdout)["cut_at"] == 80
    # cut there: the late scenario resumed from the fight's state entering update 80
    assert run_cli("run", "fight.toml", "--snapshot-at", "80", "--snapshot-out", "at80.snap",
                   cwd=fight_dir).returncode == 0
    r = run_cli("run", "late.toml", "--trace", "c.jsonl", "--from-snapshot", "at80.snap", cwd=fight_dir)
    assert r.returncode == 0, r.stderr
    assert _lines(fight_dir / "c.jsonl") == [x for x in _lines(fight_dir / "b.jsonl") if json.loads(x)["update"] >= 80]


@pytest.mark.parametrize("args, needle", [
    (["--snapshot-at", "5"], "--snapshot-at and --snapshot-out go together"),
    (["--snapshot-out", "x.snap"], "--snapshot-at and --snapshot-out go together"),
    (["--snapshot-at", "121", "--snapshot-out", "x.snap"], "the scenario has 120 updates"),
    (["--snapshot-at", "-1", "--snapshot-out", "x.snap"], "whole number 0-"),
    (["--from-snapshot", "fight.toml"], "not a scuffle snapshot"),
    (["--from-snapshot", "missing.snap"], "--from-snapshot missing.snap"),
    (["--snapshot-at", "3", "--snapshot-out", "fight.toml"], "snapshot"),
])
def test_bad_snapshot_flags_are_one_line_and_nothing_runs(fight_dir, args, needle):
    r = run_cli("run", "fight.toml", "--trace", "t.jsonl", *args, cwd=fight_dir)
    assert r.returncode == 2
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (fight_dir / "t.jsonl").exists()


def test_a_truncated_or_foreign_snapshot_is_refused(fight_dir):
    assert run_cli("run", "fight.toml", "--snapshot-at", "30", "--snapshot-out", "s.snap", cwd=fight_dir).returncode == 0
    data = (fight_dir / "s.snap").read_bytes()
    (fight_dir / "cut.snap").write_bytes(data[:-7])
    r = run_cli("run", "fight.toml", "--from-snapshot", "cut.snap", cwd=fight_dir)
    assert r.returncode == 2 and "truncated" in r.stderr
    other = FIGHT.replace('name = "p2"', 'name = "p3"').replace('human = "p2"', 'human = "p3"')
    (fight_dir / "other.toml").write_text(other, encoding="utf-8")
    r = run_cli("run", "other.toml", "--from-snapshot", "s.snap", cwd=fight_dir)
    assert r.returncode == 2 and "start" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run_cli("run", "fight.toml", "--engine", "reference", "--from-snapshot", "s.snap", cwd=fight_dir)
    assert r.returncode == 2 and "--engine compiled" in r.stderr
