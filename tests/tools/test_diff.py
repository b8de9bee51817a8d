"""``scuffle diff``: two traces that part at a known update and field, identical
traces, the tolerance, nested fields, the [top] selector and the one-line errors."""
from __future__ import annotations

import copy
import json

import pytest

from toolhelp import read_jsonl, run_module, write_jsonl
from scuffle.game.tools.diff import MISSING, compare, parse_path, select, top_index


def shifted(records, from_update: int, dx: float) -> list[dict]:
    """The records with pos[0] moved by dx from ``from_update`` on."""
    out = copy.deepcopy(records)
    for r in out:
        if r["update"] >= from_update:
            r["pos"][0] += dx
    return out


def test_identical_traces_agree(walk_trace):
    r = run_module("scuffle", "diff", walk_trace, walk_trace)
    assert r.returncode == 0, r.stderr
    assert "agree: 16 updates, 1 human" in r.stdout
    assert "first difference" not in r.stdout


def test_traces_that_part_at_update_7_in_pos(walk_trace, tmp_path):
    recs = read_jsonl(walk_trace)
    b = write_jsonl(tmp_path / "b.jsonl", shifted(recs, 7, 1e-3))
    r = run_module("scuffle", "diff", walk_trace, b)
    assert r.returncode == 1, r.stderr
    out = r.stdout
    assert "first difference: update 7" in out
    a7 = next(x for x in recs if x["update"] == 7)["pos"][0]
    line = next(line for line in out.splitlines() if "hero  pos[0]" in line and " A " in line)
    assert repr(a7) in line and repr(a7 + 1e-3) in line and "|A - B| = 0.001" in line
    # The context: updates 4, 5, 6 agree, 7 differs.
    ctx = out[out.index("context:"):]
    for u in (4, 5, 6):
        assert f"update     {u}:" in ctx
    assert "update     3:" not in ctx
    assert "update     7:" in ctx and "<- differs" in ctx
    assert "differ: 9 of 16 updates" in out and "pos (9)" in out


def test_json_report_names_the_update_and_the_field(walk_trace, tmp_path):
    b = write_jsonl(tmp_path / "b.jsonl", shifted(read_jsonl(walk_trace), 7, 1e-3))
    r = run_module("scuffle", "diff", walk_trace, b, "--json", "--context", "2")
    assert r.returncode == 1
    rep = json.loads(r.stdout)
    assert rep["agree"] is False and rep["first_update"] == 7
    assert [(d["human"], d["path"]) for d in rep["differences"]] == [("hero", "pos[0]")]
    assert [v["update"] for v in rep["context"][0]["values"]] == [5, 6, 7]
    assert rep["by_field"] == {"pos": 9} and rep["differing_updates"] == 9


def test_tolerance(walk_trace, tmp_path):
    b = write_jsonl(tmp_path / "b.jsonl", shifted(read_jsonl(walk_trace), 7, 1e-3))
    assert run_module("scuffle", "diff", walk_trace, b, "--tolerance", "0.002").returncode == 0
    assert run_module("scuffle", "diff", walk_trace, b, "--tolerance", "0.0005").returncode == 1


def test_integers_compare_exactly_whatever_the_tolerance(walk_trace, tmp_path):
    recs = read_jsonl(walk_trace)
    for x in recs:
        if x["update"] == 10:
            x["held"] = 3
    b = write_jsonl(tmp_path / "b.jsonl", recs)
    r = run_module("scuffle", "diff", walk_trace, b, "--tolerance", "100")
    assert r.returncode == 1
    assert "first difference: update 10" in r.stdout and "hero  held   A 1   B 3" in r.stdout


def test_nested_task_fields_and_fields_option(walk_trace, tmp_path):
    recs = read_jsonl(walk_trace)
    for x in recs:
        if x["update"] == 9:
            x["tasks"][0]["time"] = 0.2
        if x["update"] == 3:
            x["held"] = 0
    b = write_jsonl(tmp_path / "b.jsonl", recs)
    r = run_module("scuffle", "diff", walk_trace, b, "--fields", "tasks[top].time,anim", "--json")
    rep = json.loads(r.stdout)
    assert r.returncode == 1 and rep["first_update"] == 9
    assert [d["path"] for d in rep["differences"]] == ["tasks[top].time"]
    # Without --fields the held change at update 3 comes first; tasks are compared field by field.
    rep = json.loads(run_module("scuffle", "diff", walk_trace, b, "--json").stdout)
    assert rep["first_update"] == 3 and rep["by_field"] == {"held": 1, "tasks": 1}
    r = run_module("scuffle", "diff", walk_trace, b, "--fields", "pos,vel,anim")
    assert r.returncode == 0


def test_a_missing_record_and_a_short_list_differ(walk_trace, tmp_path):
    recs = read_jsonl(walk_trace)
    b = write_jsonl(tmp_path / "b.jsonl", [x for x in recs if x["update"] != 12])
    rep = json.loads(run_module("scuffle", "diff", walk_trace, b, "--json").stdout)
    assert rep["first_update"] == 12
    assert rep["differences"] == [{"update": 12, "human": "hero", "path": "record", "a": "present", "b": None}]
    recs2 = copy.deepcopy(recs)
    recs2[1]["tasks"] = recs2[1]["tasks"][:1]            # update 1 holds a clip and a fade
    b2 = write_jsonl(tmp_path / "b2.jsonl", recs2)
    rep = json.loads(run_module("scuffle", "diff", walk_trace, b2, "--json").stdout)
    assert rep["first_update"] == 1 and rep["differences"][0]["path"] == "tasks.length"
    assert (rep["differences"][0]["a"], rep["differences"][0]["b"]) == (2, 1)


def test_errors_are_one_line_exit_2(walk_trace, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = walk_trace.read_text().splitlines()
    bad.write_text("\n".join(lines[:2] + ['{"update": 2, "human": '] + lines[3:]) + "\n")
    cases = [
        ((walk_trace, bad), "bad.jsonl:3: not JSON"),
        ((walk_trace, tmp_path / "nope.jsonl"), "nope.jsonl"),
        ((walk_trace, walk_trace, "--fields", "tasks[x"), "--fields: 'tasks[x' is not a field path"),
        ((walk_trace, walk_trace, "--fields", "bogus"), "'bogus' is in neither trace"),
        ((walk_trace, walk_trace, "--tolerance", "nan"), "--tolerance"),
    ]
    for args, text in cases:
        r = run_module("scuffle", "diff", *args)
        assert r.returncode == 2, (args, r.stdout)
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and text in r.stderr, r.stderr
    nohuman = write_jsonl(tmp_path / "nohuman.jsonl", [{"update": 0, "anim": 1}])
    r = run_module("scuffle", "diff", walk_trace, nohuman)
    assert r.returncode == 2 and "nohuman.jsonl:1: human: missing" in r.stderr
    dup = write_jsonl(tmp_path / "dup.jsonl", [{"update": 0, "human": "a"}, {"update": 0, "human": "a"}])
    r = run_module("scuffle", "diff", dup, dup)
    assert r.returncode == 2 and "dup.jsonl:2: a second record for update 0" in r.stderr


def test_paths_and_the_top_selector():
    assert parse_path("tasks[top].time") == ("tasks", ("top",), "time")
    assert parse_path("pose.rotations[-1][3]") == ("pose", "rotations", -1, 3)
    clip, fade = {"type": 3, "id": 412, "time": 0.5}, {"type": 9, "id": -1, "time": 0.0}
    assert top_index([clip, fade]) == 0                 # a fade on top: the bottom task
    assert top_index([fade, clip]) == 1 and top_index([]) == -1
    rec = {"tasks": [clip, fade]}
    assert select(rec, parse_path("tasks[top].id")) == 412
    assert select(rec, parse_path("tasks[5].id")) is MISSING
    assert list(compare(1, 1.0000001, "x", 1e-6)) == []
    assert list(compare(1, 2, "x", 10)) == [("x", 1, 2)]          # two integers: exact
    assert list(compare(float("nan"), float("nan"), "x", 0)) == []
    assert list(compare({"a": [1, 2]}, {"a": [1, 3], "b": 0}, "r", 0)) == [("r.a[1]", 2, 3), ("r.b", MISSING, 0)]


def test_diff_catches_a_change_of_the_runtime(walk_trace, tmp_path):
    """A regression gate: the same scenario at another rate parts from the saved trace."""
    from toolhelp import walk_scenario
    sc = walk_scenario(tmp_path / "walk.toml")
    text = sc.read_text().replace("updates = 16", "updates = 16\nspeeds = [0.8, 0.8, 1.0, 0.9]")
    sc.write_text(text)
    assert run_module("scuffle", "run", sc, "--trace", tmp_path / "b.jsonl").returncode == 0
    rep = json.loads(run_module("scuffle", "diff", walk_trace, tmp_path / "b.jsonl", "--json").stdout)
    assert rep["first_update"] == 2             # the first step: 0.025 s at 0.75, 0.0266... at 0.8
    assert {"tasks[0].time", "pos[0]", "vel[0]"} <= {d["path"] for d in rep["differences"]}


@pytest.mark.parametrize("flag", ["--help"])
def test_help_lists_diff_and_survey(flag):
    r = run_module("scuffle", flag)
    assert "diff" in r.stdout and "survey" in r.stdout
