"""scuffle csv2trace: a CSV of per-update values (update, anim id, time) into the
pinned trace format, compared with our own trace by ``scuffle diff``."""
from __future__ import annotations

import json

import numpy as np

from toolhelp import read_jsonl, run_module




def emulator_csv(records, path, *, time_digits: int = 15, bump: tuple[int, float] | None = None) -> None:
    """A CSV as an emulator script would log it: the playing id and its cursor's time,
    printed with many digits (the float32 widened to a double)."""
    lines = ["update,anim,time,held"]
    for r in records:
        tasks = r["tasks"]
        top = tasks[0] if tasks and tasks[-1]["type"] == 9 else (tasks[-1] if tasks else None)
        t = float(np.float32(top["time"])) if top else 0.0
        if bump and r["update"] == bump[0]:
            t += bump[1]
        lines.append(f"{r['update']},{r['anim']},{t:.{time_digits}f},0x{r['held']:x}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_converted_emulator_trace_agrees_with_ours(walk_trace, tmp_path):
    ours = read_jsonl(walk_trace)
    emulator_csv(ours, tmp_path / "emu.csv")
    r = run_module("scuffle", "csv2trace", tmp_path / "emu.csv", tmp_path / "emu.jsonl", "--human", "hero")
    assert r.returncode == 0, r.stderr
    conv = read_jsonl(tmp_path / "emu.jsonl")
    assert len(conv) == len(ours)
    assert conv[5] == {"update": 5, "human": "hero", "anim": 412, "held": 1,
                       "tasks": [{"id": 412, "time": 0.099999994}]}
    # Update 1 has the clip under a fade: [top] picks the clip (TaskStack_Top), as the CSV does.
    r = run_module("scuffle", "diff", walk_trace, tmp_path / "emu.jsonl", "--fields", "anim,held,tasks[top].time")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "agree: 16 updates, 1 human" in r.stdout


def test_a_time_that_parts_is_reported_at_its_update(walk_trace, tmp_path):
    emulator_csv(read_jsonl(walk_trace), tmp_path / "emu.csv", bump=(8, 0.001))
    assert run_module("scuffle", "csv2trace", tmp_path / "emu.csv", tmp_path / "emu.jsonl", "--human", "hero").returncode == 0
    r = run_module("scuffle", "diff", walk_trace, tmp_path / "emu.jsonl", "--fields", "anim,tasks[top].time", "--json")
    assert r.returncode == 1
    rep = json.loads(r.stdout)
    assert rep["first_update"] == 8 and [d["path"] for d in rep["differences"]] == ["tasks[top].time"]
    ok = run_module("scuffle", "diff", walk_trace, tmp_path / "emu.jsonl", "--fields", "anim,tasks[top].time",
                    "--tolerance", "0.002")
    assert ok.returncode == 0


def test_optional_columns_offset_and_stdout(tmp_path):
    (tmp_path / "in.csv").write_text("update,anim,time,human,frame,heading,pos_x,pos_y,pos_z\n"
                                     "0,388,0.1,a,3,90,1,2,0\n\n1,388,0.125,a,4,90.5,1,2.5,0\n", encoding="utf-8")
    r = run_module("scuffle", "csv2trace", tmp_path / "in.csv", "-", "--update-offset", "10")
    assert r.returncode == 0, r.stderr
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    assert recs[0] == {"update": 10, "human": "a", "anim": 388, "pos": [1.0, 2.0, 0.0], "heading": 90.0,
                       "tasks": [{"id": 388, "time": 0.1, "frame": 3}]}
    assert recs[1]["update"] == 11 and recs[1]["tasks"][0]["time"] == 0.125


def test_bad_csv_is_one_line_naming_the_line_and_column(tmp_path):
    cases = {
        "update,anim\n0,1\n": "in.csv:1: header: no column time",
        "update,anim,time\n0,1,0.0\n1,x,0.1\n": "in.csv:3: anim: expected an integer, got 'x'",
        "update,anim,time\n0,1,nan\n": "in.csv:2: time: 'nan' is not finite",
        "update,anim,time\n0,1,0\n0,1,0.1\n": "in.csv:3: a second row for update 0",
        "update,anim,time,pos_x\n0,1,0\n": "pos_x, pos_y and pos_z go together",
        "update,anim,time\n0,1\n": "in.csv:2: time: missing",
        "": "the file is empty",
    }
    for text, message in cases.items():
        (tmp_path / "in.csv").write_text(text, encoding="utf-8")
        r = run_module("scuffle", "csv2trace", "in.csv", "out.jsonl", cwd=tmp_path)
        assert r.returncode == 2, text
        assert r.stderr.count("\n") == 1 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not (tmp_path / "out.jsonl").exists()
    r = run_module("scuffle", "csv2trace", tmp_path / "missing.csv", tmp_path / "out.jsonl")
    assert r.returncode == 2 and "cannot read" in r.stderr
