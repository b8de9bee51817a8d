"""``scuffle run --snapshot-at U --snapshot-out F`` and ``--from-snapshot F``, and
``scuffle diff --from U`` / its cut line: a long scenario resumed near
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


# ---------------------------------------------------------------- outputs never clobber, interrupts leave no part
def test_the_snapshot_read_is_never_the_snapshot_written(fight_dir):
    assert run_cli("run", "fight.toml", "--snapshot-at", "30", "--snapshot-out", "s.snap", cwd=fight_dir).returncode == 0
    before = (fight_dir / "s.snap").read_bytes()
    r = run_cli("run", "fight.toml", "--from-snapshot", "s.snap", "--snapshot-at", "60", "--snapshot-out", "s.snap",
                cwd=fight_dir)
    assert r.returncode == 2 and "never overwrites an input" in r.stderr
    assert (fight_dir / "s.snap").read_bytes() == before


def test_an_output_never_replaces_a_device(fight_dir):
    import os
    import stat
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    r = run_cli("run", "fight.toml", "--snapshot-at", "3", "--snapshot-out", "/dev/full", cwd=fight_dir)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)            # still the device, never a file put there


@pytest.mark.parametrize("args", [
    ["--snapshot-at", "9" * 5000, "--snapshot-out", "x.snap"],
    ["--from-snapshot", "y" * 100_000],
])
def test_error_lines_quote_a_value_cut_short(fight_dir, args):
    r = run_cli("run", "fight.toml", *args, cwd=fight_dir)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert len(r.stderr) < 300, r.stderr[:300]


def test_a_clip_name_of_100000_characters_is_not_echoed_whole():
    from scuffle.anim.data.animset import UnknownAnimName
    e = UnknownAnimName("x" * 100_000, "demo", ["FIGHT_IDLE", "JAB"])
    assert len(str(e)) < 200 and "100000 characters" in str(e)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, word", [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")])
def test_a_signal_during_a_write_leaves_the_old_file_whole_and_no_part(tmp_path, sig, code, word):
    import os
    import signal
    import subprocess
    import sys
    import time
    (tmp_path / "long.toml").write_text(FIGHT.replace("updates = 120", "updates = 200000"), encoding="utf-8")
    (tmp_path / "t.jsonl").write_text("the old trace\n", encoding="utf-8")
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy"}
    # SIGINT at its default in the child: a job a shell started in the background (CI may be
    # one) has it ignored, and Python then keeps it ignored, as a shell's user would want
    p = subprocess.Popen([sys.executable, "-m", "scuffle", "run", "long.toml", "--trace", "t.jsonl"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        # well into the run (its kernels compiled: a cold cache compiles during the first updates)
        while not any(f.name.endswith(".part.jsonl") and f.stat().st_size > 200_000 for f in tmp_path.iterdir()):
            assert p.poll() is None and time.monotonic() < deadline, "the run never started writing"
            time.sleep(0.1)
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == code, err
    assert err.strip().splitlines() == [f"scuffle run: {word}"], err
    assert (tmp_path / "t.jsonl").read_text(encoding="utf-8") == "the old trace\n"
    assert not [f.name for f in tmp_path.iterdir() if ".part" in f.name]
