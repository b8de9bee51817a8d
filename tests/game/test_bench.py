"""scuffle bench: the pinned report (no timing assertions: speed is measured by the
benchmark, never by the test suite)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scuffle.anim.playback.tasks import TaskType
from scuffle.game.fighters.combat import Fight
from scuffle.game.tools.bench import (COMMAND_KINDS, FIGHT_EVERY, FILE_ROUNDS, GOAL_NOTES, GOALS, POSE_STAGE, REAL_CYCLE,
                                      build_crowd, crowd_checksum, crowd_memory, fit_line, goals_table, resident_mb,
                                      run_bench)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scuffle_cli import run_scuffle  # noqa: E402


@pytest.mark.slow
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
    assert report["flush_cpu_ms"] > 0                # the flush pass: the flush's own CPU per update
    # the systems' shares are the stage pass's alone (the flush pass after it counts in none)
    systems = ("AnimationStep", "EventDispatch", "DeferredFlush", "StateUpdate", "Actions", "PairedPlacement")
    inside = sum(report["stage_cpu_ms"][k] for k in systems)
    assert 0 < inside <= 1.1 * report["stage_pass_cpu_ms_mean"], (inside, report["stage_pass_cpu_ms_mean"])


@pytest.mark.slow
def test_bench_runs_the_representative_stack_and_times_every_system():
    r = run_bench(30, 70, scalar_updates=1, memory=False)
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
    p = run_scuffle("bench", "--humans", "0")        # in this process: a refusal needs no fresh one
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


# ---------------------------------------------------------------- the realistic crowd (scuffle bench --crowd realistic)


def _run_crowd(n, updates, seed=1):
    """Step the realistic crowd; collect the task types on every stack and whether a
    queue held a task between two updates."""
    game = build_crowd(n, "realistic", "compiled", seed)
    types, queued = set(), 0
    try:
        for _ in range(updates):
            game.step()
            for name, _ in game.humans():
                inst = game.instance(name)
                types.update(int(t.type) for t in inst.stack)
                queued += len(inst.queue)
        return game, types, queued, crowd_checksum(game)
    finally:
        game.close()


def test_the_realistic_crowd_runs_and_holds_every_ingredient():
    n, updates = 3 * REAL_CYCLE + 4, 2 * REAL_CYCLE
    game, types, queued, _ = _run_crowd(n, updates)
    crowd = game.crowd
    # types 10, 11, 13 stood on some stack, besides the gait (12), clips (3), loops (1), fades (9)
    assert {int(TaskType.MIX), int(TaskType.PICK), int(TaskType.DIRECTION)} <= types, types
    assert {1, 3, 9, 12} <= types, types
    assert queued > 0                                  # a queued task waited for its start
    assert game.player.batch.pair_changes > 0          # gait values moved across a pair
    assert crowd.by_kind["queued"][0] > 0
    # about 3% of the extras commanded per update, every kind issued
    extras = n - 2 * len(crowd.fights)
    assert crowd.commands == pytest.approx(updates * extras / REAL_CYCLE, rel=0.2)
    assert all(crowd.by_kind[k][0] > 0 for k in COMMAND_KINDS), crowd.by_kind
    assert crowd.refused == 0
    # events read by a handler
    assert sum(crowd.listener.counts.values()) > 0
    # the fight rules on pairs of fighters (one per FIGHT_EVERY humans), their 0x2c routed to them
    assert len(crowd.fights) == 2 and all(isinstance(f, Fight) for f in crowd.fights)
    assert [set(f.game.names) for f in crowd.fights] == [{"h0", "h1"}, {f"h{FIGHT_EVERY}", f"h{FIGHT_EVERY + 1}"}]
    # their per-update actions run as one group where they stood (game.fighters.fightupdates)
    assert [type(a).__name__ for a in game.ctx.actions] == ["FightUpdates", "RealisticCrowd"]
    assert game.ctx.actions[0].fights == crowd.fights
    assert ({0x2C}, crowd.router) in [(set(t), h) for t, h in game.ctx.row_handlers]    # a rows handler
    assert all(f._on_window not in game.ctx.handlers.get(0x2C, []) for f in crowd.fights)
    # the crowd's sounds and effects read as columns too (Game.on_rows)
    assert ({0x0B, 0x21, 0x2D}, crowd.listener) in [(set(t), h) for t, h in game.ctx.row_handlers]
    assert set(crowd.router.by_entity) == {game.names[f"h{i}"] for i in (0, 1, FIGHT_EVERY, FIGHT_EVERY + 1)}


@pytest.mark.bits
def test_the_crowd_leaves_the_same_state_with_batches_or_one_call_each(monkeypatch):
    """The realistic crowd's prepared commands as one batch an update (Player.commands) on
    even updates and one Player.run each on odd ones, against one call each always: the
    same whole state (Game.checksum), bit for bit; the batches took rows."""
    from scuffle.game.tools.bench import RealisticCrowd

    def run():
        game = build_crowd(120, "realistic", "compiled", 5)
        try:
            for _ in range(2 * REAL_CYCLE):
                game.step()
            return game.checksum(), crowd_checksum(game), game.crowd.batch_rows, game.player.columns.rows_buffered
        finally:
            game.close()

    mixed = run()
    monkeypatch.setattr(RealisticCrowd, "_batched", RealisticCrowd._single)
    single = run()
    assert mixed[2] > 0 and mixed[3] > 0 and single[2] == 0
    assert mixed[:2] == single[:2]


def test_two_humans_are_two_fighters_under_the_fight_rules():
    game = build_crowd(2, "realistic", "compiled", 1)
    try:
        for _ in range(90):
            game.step()
        assert game.fight is game.crowd.fights[0] and game.crowd.commands == 0
        stats = game.fight.stats
        assert stats.strikes + stats.grabs > 0         # the two AIs fought
    finally:
        game.close()


def test_the_realistic_crowd_is_deterministic():
    a = _run_crowd(24, 40, seed=3)
    b = _run_crowd(24, 40, seed=3)
    c = _run_crowd(24, 40, seed=4)
    assert a[0].crowd.commands == b[0].crowd.commands
    assert a[3] == b[3]                                # the same state, bit for bit
    assert a[3] != c[3]                                # and the seed matters


def test_the_goals_table_has_every_goal():
    reports = [{"humans": 2, "crowd": "realistic", "cpu_ms_mean": 0.04, "pose_stacks_cpu_us_per_human": 1.5,
                "gc_cpu_share": 0.0},
               {"humans": 10000, "crowd": "realistic", "cpu_ms_mean": 30.0, "command_cpu_us": 20.0,
                "stage_cpu_ms": {"DeferredFlush": 0.5}, "gc_cpu_ms_per_update": 2.0, "compiled_peak_mb": 310.0,
                "pose_stacks_cpu_us_per_human": 1.7, "gc_cpu_share": 0.05}]
    rows = goals_table(reports, {"first_step_s": 9.5})
    by_key = {r["key"]: r for r in rows if r["limit"] is not None}
    assert set(by_key) == {k for k, *_ in GOALS}
    assert by_key["fighters_cpu_ms"]["met"] is True and by_key["fighters_cpu_ms"]["figure"] == 0.04
    assert by_key["humans_1000_cpu_ms"]["figure"] is None and by_key["humans_1000_cpu_ms"]["met"] is None
    assert by_key["humans_10000_cpu_ms"]["met"] is False
    assert by_key["command_us"]["figure"] == 20.0 and by_key["command_us"]["at"] == 10000
    assert by_key["flush_ms"]["met"] is True and by_key["gc_ms"]["met"] is False
    assert by_key["memory_mb"]["met"] is False and by_key["first_step_s"]["met"] is True
    assert by_key["join_leave_10000"]["figure"] is None and by_key["python_10000_ms"]["figure"] is None
    reports[1].update(join_leave_ratio=1.1, python_cpu_ms=4.5)
    reports.append({"humans": 1000, "crowd": "realistic", "join_leave_ratio": 1.5, "python_cpu_ms": 0.4})
    jl = {r["key"]: r for r in goals_table(reports, {"first_step_s": 9.5}) if r["limit"] is not None}
    assert jl["join_leave_10000"]["met"] is True and jl["join_leave_1000"]["met"] is False
    assert jl["python_10000_ms"]["met"] is False and jl["python_1000_ms"]["met"] is True
    assert jl["python_1000_ms"]["figure"] == 0.4 and jl["join_leave_1000"]["at"] == 1000
    reports.pop()
    # the flush pass's figure (one timer, none inside the flush) before the stage pass's
    reports[1]["flush_cpu_ms"] = 1.2
    again = {r["key"]: r for r in goals_table(reports, {"first_step_s": 9.5}) if r["limit"] is not None}
    assert again["flush_ms"]["figure"] == 1.2 and again["flush_ms"]["met"] is False
    notes = [r for r in rows if r["limit"] is None]
    assert {r["key"] for r in notes} == {k for k, *_ in GOAL_NOTES} and len(notes) == 2 * len(GOAL_NOTES)


def test_the_memory_goal_reads_the_process_that_runs_the_crowd_alone():
    """The memory goal's figure is the fresh process's peak (crowd_peak_mb: none of the
    bench's pose pipeline, anchor or timers), the bench's own peak only without it."""
    r = {"humans": 10000, "crowd": "realistic", "compiled_peak_mb": 266.0}
    row = {g["key"]: g for g in goals_table([r])}["memory_mb"]
    assert row["figure"] == 266.0 and row["met"] is False
    r["crowd_peak_mb"] = 243.0
    row = {g["key"]: g for g in goals_table([r])}["memory_mb"]
    assert row["figure"] == 243.0 and row["met"] is True


@pytest.mark.slow
def test_crowd_memory_measures_the_crowd_in_its_process():
    """crowd_memory: the resident set after the imports, after the kernels' load, and the
    crowd's peak, each at least the one before (MB, from /proc on Linux)."""
    m = crowd_memory(6, 2, "realistic")
    assert set(m) == {"crowd_peak_mb", "imports_mb", "kernels_mb", "crowd_end_mb", "scipy_loaded",
                      "scipy_linalg_loaded"}
    assert 0 < m["imports_mb"] <= m["kernels_mb"] <= m["crowd_peak_mb"] and m["crowd_end_mb"] <= m["crowd_peak_mb"]
    now, peak = resident_mb()
    assert 0 < now <= peak


@pytest.mark.slow
def test_bench_json_has_the_goals_for_the_realistic_crowd():
    p = subprocess.run([sys.executable, "-m", "scuffle", "bench", "--humans", "20", "--updates", "6",
                        "--scalar-updates", "1", "--crowd", "realistic", "--json", "--no-compile-time"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["crowd"] == "realistic" and r["pool_leak"] == 0
    assert {g["key"] for g in r["goals"]} >= {k for k, *_ in GOALS}
    for key in ("command_us", "command_cpu_us", "pose_stacks_us_per_human", "pose_stacks_cpu_us_per_human",
                "gc_share", "gc_cpu_share", "kernel_ms", "kernel_cpu_ms", "stage_cpu_ms", "state_checksum",
                "events_handled", "fight_pairs"):
        assert key in r, key
    assert "goal" in p.stderr and "met?" in p.stderr


def test_the_command_paths_kernels_are_timed_as_kernels_and_put_back():
    """The command path's compiled calls (COMMAND_KERNELS) are timed through the entry
    points the player keeps, so that Python outside the kernels leaves them out; the
    entry points are put back as they were after the timed updates."""
    from scuffle.game.tools.bench import COMMAND_KERNELS, _patch_command_kernels, _timer_cost, _unpatch

    n = 3 * REAL_CYCLE + 4
    game = build_crowd(n, "realistic", "compiled", 1)
    try:
        for _ in range(2 * REAL_CYCLE):              # every kind issued: the entry points typed
            game.step()
        prepared, columns = game.player.prepared, game.player.columns
        before = (prepared._apply_entry, columns._entry_fn, dict(prepared._direct_entry))
        assert before[0] is not None and before[1] is not None and before[2]
        sink, calls, cpu = {}, {}, {}
        saved = _patch_command_kernels(game.player, sink, calls, cpu)
        try:
            for _ in range(REAL_CYCLE):
                game.step()
        finally:
            _unpatch(saved)
        assert set(calls) <= set(COMMAND_KERNELS)
        # the buffer's write and a batch's checks, the handle calls' clip and change writers
        assert {"apply_commands", "buffer_commands", "clip_rows", "change_rows"} <= set(calls), calls
        assert all(cpu[k] >= 0.0 and sink[k] > 0.0 for k in calls)
        assert (prepared._apply_entry, columns._entry_fn, prepared._direct_entry) == before
    finally:
        game.close()
    # what a timer's own clock readings add to one call, taken out of these many short calls
    wall_each, cpu_each = _timer_cost(n=200, rounds=2)
    assert 0.0 < wall_each < 1e-3 and 0.0 < cpu_each < 1e-3


def test_bench_rejects_an_unknown_crowd():
    p = run_scuffle("bench", "--crowd", "heavy")
    assert p.returncode == 2 and "heavy" in p.stderr and "Traceback" not in p.stderr


def test_snapshot_costs_take_their_rounds_and_leave_the_game_as_it_was():
    """The snapshot figure's rounds: at least ``repeats``, more while under the CPU budget,
    never more than ``most``; the Game's state is the same after (a restore each round)."""
    from scuffle.game.tools.bench import _snapshot_costs

    game = build_crowd(2, "realistic")
    for _ in range(5):
        game.step()
    before = game.checksum()
    fixed = _snapshot_costs(game, repeats=3, budget_s=0.0)
    assert fixed["snapshot_rounds"] == 3
    capped = _snapshot_costs(game, repeats=2, budget_s=60.0, most=9)
    assert capped["snapshot_rounds"] == 9
    for r in (fixed, capped):
        assert r["snapshot_restore_cpu_us"] > 0 and r["snapshot_mb"] > 0
    assert game.checksum() == before
    game.step()                                   # and it steps on from there


def test_the_rollback_figures_time_the_file_apart_from_the_snapshot_before_it(monkeypatch):
    """The file goal's figure is its three calls (to_bytes, from_bytes, restore); the
    snapshot taken before each is its own figure; the Game steps on after them."""
    from scuffle.game.runtime.snapshot import Snapshot
    from scuffle.game.tools.bench import _rollback_costs

    game = build_crowd(2, "realistic")
    for _ in range(5):
        game.step()
    calls: list[str] = []
    for name in ("to_bytes",):
        real = getattr(Snapshot, name)
        monkeypatch.setattr(Snapshot, name, lambda self, _f=real, _n=name: (calls.append(_n), _f(self))[1])
    r = _rollback_costs(game, updates=10, depth=3)
    assert calls == ["to_bytes"] * FILE_ROUNDS        # the file's round trips, each one to_bytes
    for key in ("rollback_cpu_us", "file_cpu_us", "file_snapshot_cpu_us", "checksum_cpu_us"):
        assert r[key] > 0, key
    assert r["rollback_cpu_us"] == pytest.approx(r["rollback_snapshot_cpu_us"] + r["rollback_restore_cpu_us"],
                                                 abs=0.011)
    before = game.update
    game.step()
    assert game.update == before + 1


def test_the_join_leave_figure_leaves_the_crowd_as_it_was():
    from scuffle.game.tools.bench import _join_leave
    game = build_crowd(24, "realistic", seed=2)
    try:
        for _ in range(3):
            game.step()
        before = game.humans()
        r = _join_leave(game, trials=2)
        assert game.humans() == before and len(game.ctx.crowd) == 24
        ratio = r["join_leave_after_cpu_ms"] / r["join_leave_steady_cpu_ms"]
        assert r["join_leave_ratio"] == pytest.approx(ratio, abs=2e-3)
        assert r["join_leave_calls_cpu_us"] > 0
    finally:
        game.close()


@pytest.mark.parametrize("start", [0, 1])
def test_the_join_leave_pairs_time_even_and_odd_updates_alike(start, monkeypatch):
    """The realistic crowd issues its commands as a batch on even updates and one call
    each on odd ones: the timed steady updates and the timed updates after a join and a
    leave each fall on both parities, as many on each, whatever the update it starts at."""
    from scuffle.game.tools import bench

    game = build_crowd(24, "realistic", seed=2)
    try:
        for _ in range(3 + start):
            game.step()
        timed: list[int] = []
        real_step = game.step

        def step():                                   # the update each clock pair brackets
            timed.append(game.ctx.updates_run)
            real_step()
        monkeypatch.setattr(game, "step", step)
        reads: list[int] = []

        def reading():
            reads.append(len(timed))
            return float(len(reads))
        r = bench._join_leave(game, trials=4, clock=reading)
        monkeypatch.undo()
        # the updates between a clock pair's two readings: the pairs' steady, calls, after in turn
        spans = [timed[a:b] for a, b in zip(reads[0::2], reads[1::2])]
        steady, after = [s[0] for s in spans[0::3]], [s[0] for s in spans[2::3]]
        assert all(len(s) == 1 for s in spans[0::3] + spans[2::3]) and not any(spans[1::3])
        assert [u % 2 for u in steady].count(0) == 2 and [u % 2 for u in after].count(0) == 2
        assert all(a == s + 1 for s, a in zip(steady, after))      # the after right after its steady
        assert r["join_leave_even_share"] == 0.5
    finally:
        game.close()


def test_the_fight_pass_times_the_two_fighters_on_and_the_goal_reads_it():
    """At 2 humans the run times ``fight_updates`` whole updates more after the first
    pass (their mean, median and p90), which the fighters goal reads; at another size,
    or with none, the goal reads the first pass's mean."""
    from scuffle.game.tools.bench import _fight_pass, _run

    game = build_crowd(2, "realistic", seed=1)
    try:
        before = game.update
        r = _fight_pass(game, 7)
        assert game.update == before + 7 and r["fight_updates"] == 7
        assert 0 < r["fight_cpu_ms_median"] <= r["fight_cpu_ms_p90"] and r["fight_cpu_ms_mean"] > 0
    finally:
        game.close()
    *_, extra = _run(2, 3, crowd="realistic", stage_pass=False, fight_updates=5)
    assert extra["fight_updates"] == 5 and extra["fight_cpu_ms_mean"] > 0
    *_, none = _run(2, 3, crowd="realistic", stage_pass=False)
    assert "fight_cpu_ms_mean" not in none
    *_, crowd = _run(4, 3, crowd="realistic", stage_pass=False, fight_updates=5)
    assert "fight_cpu_ms_mean" not in crowd
    reports = [{"humans": 2, "crowd": "realistic", "cpu_ms_mean": 0.07, "fight_cpu_ms_mean": 0.045}]
    fighters = {r["key"]: r for r in goals_table(reports)}["fighters_cpu_ms"]
    assert fighters["figure"] == 0.045 and fighters["met"] is True
    del reports[0]["fight_cpu_ms_mean"]
    fighters = {r["key"]: r for r in goals_table(reports)}["fighters_cpu_ms"]
    assert fighters["figure"] == 0.07 and fighters["met"] is False


def test_bench_refuses_a_fight_pass_out_of_range():
    p = run_scuffle("bench", "--humans", "2", "--fight-updates", "-1")
    assert p.returncode == 2 and "--fight-updates" in p.stderr and "Traceback" not in p.stderr


def test_a_level_load_times_each_step_of_a_fights_build():
    """level_load: the CPU medians of a new Game, a human's add_human, Fight() over the
    two, the first step and a later one, each a positive number of ms; the first step
    dearer than a later one (its first calls: the pose's tables, each kernel typed), the
    fight's warm-up dearer than a human joining (it learns every move's commands)."""
    from scuffle.game.tools.bench import level_load

    r = level_load(builds=3)
    assert set(r) == {"game_ms", "add_human_ms", "fight_ms", "first_step_ms", "later_step_ms"}
    assert all(isinstance(v, float) and v > 0 for v in r.values()), r
    assert r["first_step_ms"] > r["later_step_ms"] and r["fight_ms"] > r["add_human_ms"], r
    with pytest.raises(ValueError, match="builds"):
        level_load(builds=0)


def test_python_pass_takes_each_timers_own_cost_out(monkeypatch):
    """Python outside the kernels comes from one pass of its own: its CPU less the
    kernels', a timer's own cost out of each. With a CPU clock that moves one tick a
    reading, a kernel's timer costs the pass two ticks a call and the kernel's figure
    one, so all that is left is the pass's own last reading; the kernels are put back."""
    import itertools

    from scuffle.game.tools import bench

    game = build_crowd(4, "light")
    for _ in range(3):
        game.step()
    eng = game.player.batch
    before = (eng._step_kernel, eng._pose_kernel, eng._flush_release, eng._flush_anim_ids)
    ticks = itertools.count()
    monkeypatch.setattr(bench.time, "process_time", lambda: next(ticks) * 1e-6)
    counted: list = []
    patch = bench._patch_kernels

    def spy(sink, calls, cpu, batch=None):
        counted.append(calls)
        return patch(sink, calls, cpu, batch)

    monkeypatch.setattr(bench, "_patch_kernels", spy)
    assert bench._python_pass(game, 5) == round(1e-6 * 1000.0 / 5, 4)
    assert counted and all(counted[0].get(k) == 5 for k in ("step_stacks", "pose_stacks", "root_motion_step"))
    assert (eng._step_kernel, eng._pose_kernel, eng._flush_release, eng._flush_anim_ids) == before


def test_python_outside_the_kernels_is_measured_on_one_thread_only():
    """On two threads the pose's other chunks run beside the step's Python, outside any
    kernel's timer: no figure is given there (the goal is one core's)."""
    from scuffle.game.tools.bench import _run

    *_, one = _run(6, 3, crowd="light")
    *_, two = _run(6, 3, crowd="light", threads=2)
    assert one["python_cpu_ms"] >= 0.0
    assert "python_cpu_ms" not in two
