"""scuffle bench: the pinned report (no timing assertions: speed is measured by the
benchmark, never by the test suite)."""
from __future__ import annotations

import json
import subprocess
import sys

from scuffle.game.tools.bench import POSE_STAGE, fit_line, run_bench


def test_bench_json_report_has_the_pinned_keys():
    p = subprocess.run([sys.executable, "-m", "scuffle", "bench", "--humans", "12", "--updates", "4",
                        "--scalar-updates", "2", "--json", "--no-compile-time"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)                 # stdout is the JSON object and nothing else
    for key in ("humans", "updates", "ms_per_update", "scalar_ms_per_update", "speedup", "peak_mb"):
        assert key in report, key
    assert report["humans"] == 12 and report["updates"] == 4
    assert report["ms_per_update"] > 0 and report["scalar_ms_per_update"] > 0 and report["peak_mb"] > 0
    assert abs(report["speedup"] - report["scalar_ms_per_update"] / report["ms_per_update"]) < 0.05 * report["speedup"]
    assert "where the time goes" in p.stderr      # the table goes to stderr with --json
    assert report["pool_leak"] == 0
    for key in ("cpu_ms_per_update", "us_per_human", "pose_pipeline_us_per_human", "kernel_load_s", "stage_ms"):
        assert key in report, key


def test_bench_runs_the_representative_stack_and_times_every_system():
    r = run_bench(30, 70, scalar_updates=1)
    shapes = r["stack_shapes"]
    # a gait under a fade into a clip that hands over: clip (3), gait (12), fade (9)
    assert any(k == "3-12-9" for k in shapes), shapes
    # the paired pair: the attacker's hold loop (1) and the victim's (1, from the attacker's set)
    assert "1" in shapes
    assert set(r["stage_share"]) >= {"AnimationStep", "DeferredFlush", "StateUpdate", "EventDispatch",
                                      "Actions", "PairedPlacement", "task step", POSE_STAGE}


def test_the_fit_recovers_a_fixed_cost_and_a_slope():
    runs = [{"humans": n, "cpu_ms_per_update": 0.5 + 0.002 * n} for n in (2, 100, 1000, 10000)]
    fixed, slope = fit_line(runs)
    assert abs(fixed - 0.5) < 1e-9 and abs(slope - 2.0) < 1e-9


def test_bench_rejects_bad_counts():
    p = subprocess.run([sys.executable, "-m", "scuffle", "bench", "--humans", "0"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
