"""The JSONL trace (game/trace.py), pinned: the public trace contract (docs/scenarios.md, "The trace (JSONL)").

One scenario is run twice through the CLI with --pose; the records are checked field by
field and the two files byte for byte.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from scuffle.anim.data.clip import make_event

from gamehelp import (IDLE, REPO, by_human, clip, clip_toml, command_toml, human_toml, run_cli, still,
                      turn_quat)

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

GAIT = [408, 409, 410, 411, 411]
FIELDS = ["update", "human", "anim", "held", "pos", "heading", "vel", "tasks", "events", "released"]
UPDATES = 40


def scenario_text() -> str:
    hit = clip(12, "hit", events=[make_event(2, 11, word=0x1234),
                                  make_event(4, 0x21, (0, 6), (0.5, 0.0, 1.0), code="bld")])
    turn = clip(20, "turn", velocity=[(0, (0.0, 1.2, 0.0))], rotations={0: [(0, turn_quat(3.0))]})
    text = f"updates = {UPDATES}\n" + clip_toml("s", 1, hit, flags=0x1000) + clip_toml("s", 2, turn)
    text += clip_toml("s", IDLE, still())
    for i, f in zip(sorted(set(GAIT)), (30, 32, 34, 36)):
        text += clip_toml("s", i, clip(f, f"g{i}"), flags=0x1000)
    text += human_toml("a", position=[1.0, 2.0, 0.0], heading=30.0) + human_toml("b") + human_toml("c")
    text += command_toml(0, "a", play=[1, IDLE], held=3)
    text += command_toml(20, "a", gait=GAIT, target=1, fade=0.2)
    text += command_toml(30, "a", target=2.5)
    text += command_toml(0, "c", loop=2)
    return text


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("trace")
    (d / "sc.toml").write_text(scenario_text())
    out = []
    for name in ("one.jsonl", "two.jsonl"):
        r = run_cli("run", "sc.toml", "--trace", name, "--pose", cwd=d)
        assert r.returncode == 0, r.stderr
        out.append((d / name).read_bytes())
    return out


@pytest.fixture(scope="module")
def records(traces):
    return [json.loads(line) for line in traces[0].decode().splitlines()]


def test_the_same_scenario_gives_byte_identical_traces(traces):
    assert traces[0] == traces[1]
    assert traces[0].endswith(b"\n") and b"\r" not in traces[0]


def test_one_record_per_human_per_update_in_order(records):
    assert len(records) == 3 * UPDATES
    assert [(r["update"], r["human"]) for r in records] == [(u, h) for u in range(UPDATES) for h in "abc"]


def test_every_pinned_field_with_its_type(records):
    for r in records:
        assert list(r) == FIELDS + ["pose"]
        assert type(r["update"]) is int and type(r["human"]) is str
        assert type(r["anim"]) is int and type(r["held"]) is int
        for k in ("pos", "vel"):
            assert len(r[k]) == 3 and all(type(v) is float for v in r[k])
        assert type(r["heading"]) is float
        assert isinstance(r["tasks"], list) and isinstance(r["events"], list)
        assert all(type(i) is int for i in r["released"])
        for t in r["tasks"]:
            assert type(t["type"]) is int and type(t["id"]) is int
            assert type(t["time"]) is float and type(t["frame"]) is int
            assert str(np.float32(t["time"])) == repr(t["time"])     # float32, shortest decimal


def test_no_task_means_anim_minus_one(records):
    b = by_human(records, "b")
    assert all(r["anim"] == -1 and r["tasks"] == [] and r["held"] == 0 for r in b)
    assert all(r["events"] == [] and r["released"] == [] for r in b)


def test_held_bits_and_released_ids_on_the_flush_update(records):
    a = by_human(records, "a")
    assert a[0]["held"] == 3 and a[0]["anim"] == 1
    # 12 frames at 1.0, commanded on update 0: the end step is update 12.
    end = next(r["update"] for r in a if r["anim"] == IDLE)
    assert end == 12
    assert a[end]["released"] == [1] and a[end]["held"] == 0
    assert a[end - 1]["held"] == 3 and a[end - 1]["released"] == []
    assert [t["type"] for t in a[end]["tasks"]] == [1]
    assert a[end]["tasks"][0]["time"] == 0.0            # the next task shows time 0 that update
    assert a[1]["released"] == [-1]                      # the change's zero fade


def test_tasks_bottom_to_top_with_fade_fields(records):
    a = by_human(records, "a")
    r = a[21]
    assert [t["type"] for t in r["tasks"]] == [12, 1, 9]  # new, old, fade
    fade = r["tasks"][2]
    assert set(fade) >= {"type", "id", "time", "frame", "elapsed", "duration", "weight"}
    assert fade["duration"] == 0.2 and fade["elapsed"] == pytest.approx(1 / 30, rel=1e-6)
    assert fade["weight"] == pytest.approx((1 + np.cos(np.pi / 6)) / 2, abs=1e-6)
    assert a[20]["tasks"][2]["weight"] == 1.0
    # The fade ends after 0.2 s and gives back the old task.
    done = next(x["update"] for x in a if x["update"] > 20 and len(x["tasks"]) == 1)
    assert IDLE in a[done]["released"] and -1 in a[done]["released"]


def test_gait_fields(records):
    a = by_human(records, "a")
    g = a[35]["tasks"][0]
    assert g["type"] == 12 and g["ids"] == GAIT
    assert g["target"] == 2.5 and 1.0 < g["value"] <= 2.5
    assert set(g) >= {"ids", "value", "target", "lower", "upper", "leader"}
    assert g["lower"] in GAIT and g["upper"] == GAIT[GAIT.index(g["lower"]) + 1]
    assert g["leader"] in (g["lower"], g["upper"]) and g["id"] == g["leader"]
    assert a[25]["tasks"][0]["value"] == 1.0 and a[25]["tasks"][0]["lower"] == 409


def test_events_with_word_and_code(records):
    a = by_human(records, "a")
    fired = [(r["update"], e) for r in a for e in r["events"]]
    assert [u for u, _ in fired] == [2, 4]
    e11, e21 = fired[0][1], fired[1][1]
    assert list(e11)[:3] == ["id", "frame", "type"]
    assert (e11["id"], e11["frame"], e11["type"], e11["word"]) == (1, 2, 11, 0x1234)
    assert (e21["id"], e21["frame"], e21["type"], e21["code"]) == (1, 4, 0x21, "bld")
    assert e21["args"] == [0, 6] and e21["position"] == pytest.approx([0.5, 0.0, 1.0], abs=1e-3)
    assert "code" not in e11 and "word" not in e21


def test_position_heading_and_velocity(records):
    c = by_human(records, "c")
    assert c[0]["pos"] == [0.0, 0.0, 0.0]
    assert c[5]["heading"] == pytest.approx(5 * 2.25, abs=0.01)       # 3 deg x 0.75 a step
    assert c[5]["vel"][1] == pytest.approx(1.2 * 0.75 * np.cos(np.radians(c[5]["heading"])), rel=1e-2)
    a = by_human(records, "a")
    assert a[0]["pos"] == [1.0, 2.0, 0.0] and a[0]["heading"] == 30.0


def test_pose_fields(records):
    for r in records:
        p = r["pose"]
        assert list(p) == ["velocity", "root", "rotations", "defaults"]
        assert len(p["velocity"]) == 3 and len(p["root"]) == 3
        assert len(p["rotations"]) == 34 and all(len(q) == 4 for q in p["rotations"])
        assert len(p["defaults"]) == 36 and all(type(v) is bool for v in p["defaults"])
    c = by_human(records, "c")[3]["pose"]
    assert c["defaults"][0] is False and c["defaults"][2] is False          # velocity, bone 0 sampled
    assert c["velocity"][1] == pytest.approx(1.2 * 0.75, rel=1e-2)
    assert np.linalg.norm(c["rotations"][5]) == pytest.approx(1.0, abs=1e-5)


def test_without_pose_there_is_no_pose_field(tmp_path):
    (tmp_path / "sc.toml").write_text(
        "updates = 2\n" + clip_toml("s", IDLE, still()) + human_toml("a") + command_toml(0, "a", loop=IDLE))
    r = run_cli("run", "sc.toml", "--trace", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [list(x) for x in recs] == [FIELDS, FIELDS]


def test_the_worked_example_in_the_docs_is_real():
    import io
    import re

    from scuffle import parse_scenario, run_scenario

    doc = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
    toml = re.search(r"```toml\n(.*?)```", doc, re.S).group(1)
    shown = re.search(r"```json\n(.*?)```", doc, re.S).group(1).splitlines()
    out = io.StringIO()
    run_scenario(parse_scenario(toml, "walk.toml"), out).close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 16
    assert shown and all(line in lines for line in shown)


def test_the_memoised_float32_values_equal_f32_json_item_for_item():
    """f32_values (the pose's rotations, velocity and root) gives exactly f32_json of each
    value, in C order, for every kind of float32 (zeros of both signs, subnormals, the
    largest, NaN and infinities written as f32_json writes them) and for float64 input
    (rounded to float32 first), on a cold memo and on a warm one."""
    from scuffle.game.runtime import trace

    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    special = np.float32([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, 0.1, 1 / 3, np.inf, -np.inf, np.nan])
    values = np.concatenate([bits.view(np.float32), special]).reshape(-1, 3)[:, ::-1]     # not contiguous
    want = [trace.f32_json(v) for v in values.reshape(-1)]
    trace._SHORTEST.clear()
    for _ in range(2):                                      # cold, then from the memo
        got = trace.f32_values(values)
        assert [np.float64(g).tobytes() for g in got] == [np.float64(w).tobytes() for w in want]
        assert [type(g) for g in got] == [float] * len(want)
    doubles = rng.normal(size=50) * 1e3
    assert trace.f32_values(doubles) == [trace.f32_json(v) for v in doubles]


def test_f32_json_from_its_memo_is_the_formatting_itself():
    """f32_json gives numpy's shortest float32 decimal for every value, cold and remembered:
    Python floats, float32 and float64 scalars and ints of the same value, both zeros
    (their signs kept), NaN and the infinities."""
    from scuffle.game.runtime import trace

    rng = np.random.default_rng(11)
    values = ([float(x) for x in rng.normal(size=200) * 10.0 ** rng.integers(-40, 38, 200)]
              + [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 0.1, 1 / 3, 3])
    values += [np.float32(v) for v in values[:50]] + [np.float64(v) for v in values[:50]]
    values += [np.array(v, np.float32) for v in values[:5]]             # 0-d arrays: no dict key
    trace._BY_VALUE.clear()
    for _ in range(2):
        got = [trace.f32_json(v) for v in values]
        assert [np.float64(g).tobytes() for g in got] == [np.float64(float(str(np.float32(v)))).tobytes()
                                                          for v in values]
