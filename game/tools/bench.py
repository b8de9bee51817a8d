"""``python -m scuffle bench --humans N [N ...] | --sweep [--updates U] [--json]``: the crowd benchmark.

Builds N humans in one Game on the demo move set, each running the representative
stack: a gait blend of two clips under a fade into a clip that hands over (with its
events), and a paired pair every tenth human (the victim plays the attacker's hold from
the attacker's set). The humans cycle through those changes with staggered phases, so
every update has hand-overs, fades finishing and events somewhere in the crowd.

It runs U updates through the whole ECS schedule and reports the median milliseconds
per update, wall clock and CPU (which other processes disturb less), per human too;
each stage's share and ms (every system, timed by wrapping its ``process`` as it is
installed, plus the task step and the compiled pose: sample, blend, bones); the same
work through the scalar reference path (fewer updates) and the speed-up; the peak
memory after the compiled run (``compiled_peak_mb``) and after the scalar one too
(``peak_mb``); the pose pipeline alone (µs per human); the share of humans the compiled step
ran (``kernel_step_share``; the rest took the scalar step) and the time Python's cyclic
garbage collector took (``gc_ms_per_update``); the time to load the kernels and
(unless ``--no-compile-time``) their first-run compile time in a fresh process.
Several ``--humans`` (or ``--sweep``: 2, 100, 1,000, 10,000) run one process each and
add the fixed cost and per-human slope (a least-squares line). ``--json`` prints only
the JSON object on stdout (the table goes to stderr): one size gives ``humans``,
``updates``, ``ms_per_update``, ``cpu_ms_per_update``, ``scalar_ms_per_update``,
``speedup``, ``peak_mb`` and more; a sweep gives ``sweep`` (those objects) and the fit.
Speed is measured here, never in the test suite.
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from statistics import median

import numpy as np

from scuffle.anim.player import PlayerOptions
from scuffle.game.fighters.moves import GAIT_IDS, Move

__all__ = ["bench_arguments", "cmd_bench", "run_bench", "BUDGET_MS"]

BUDGET_MS = 1000.0 / 30.0            # the 30 Hz update
POSE_STAGE = "pose (sample, blend, bones)"
# The stages timed inside a system (parts of its share, printed indented under it).
NESTED_IN = "AnimationStep"
NESTED_STAGES = ("task step", POSE_STAGE)
SWEEP = (2, 100, 1000, 10000)
CYCLE = 60                           # updates between a human's changes
FADE = 0.6                           # s: the change's fade (the gait under it)
PAIR_EVERY = 10                      # one paired pair per ten humans
MAX_HUMANS = 20_000                  # the largest crowd bench builds (docs/tools.md, "Limits")
MAX_UPDATES = 100_000                # the most updates it times


class _Timed:
    """Wraps a processor's ``process`` to time it (the stage shares)."""

    def __init__(self, proc, sink: dict, name: str):
        self.proc, self.sink, self.name = proc, sink, name
        self._orig = proc.process
        proc.process = self

    def __call__(self, *a, **k):
        t0 = time.perf_counter()
        self._orig(*a, **k)
        self.sink[self.name] = self.sink.get(self.name, 0.0) + time.perf_counter() - t0


def _build(n: int, batched: bool):
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    game = Game(PlayerOptions(batched=batched, pool_size=max(360, 12 * n)), reference=not batched)
    s = demo_set()
    side = int(np.ceil(np.sqrt(n)))
    for i in range(n):
        game.add_human(f"h{i}", s, ((i % side) * 2.0, (i // side) * 2.0, 0.0), 0.0)
    names = [f"h{i}" for i in range(n)]
    player = game.player

    def gait(name, target):
        inst = game.instance(name)
        return player.gait(inst, GAIT_IDS, target=target, value=target)

    paired = set()
    for i, name in enumerate(names):
        inst = game.instance(name)
        if i % PAIR_EVERY == 1 and i + 1 < n:
            attacker, victim = name, names[i + 1]
            paired.update((attacker, victim))
            player.change(inst, player.loop(inst, Move.HOLD), 0.0)
            vi = game.instance(victim)
            player.change(vi, player.chain(vi, [Move.HOLD_VICTIM], paired_with=inst), 0.0)
        elif name not in paired:
            player.change(inst, gait(name, 0.5 + (i % 5) * 0.6), 0.0)
    player.flush()

    # The humans that change at each phase of the cycle ((u + 7 i) % CYCLE == 0), in name
    # order, with their instances: the drive is O(changes), not O(humans), per update.
    by_phase: list[list[tuple[int, object]]] = [[] for _ in range(CYCLE)]
    for i, name in enumerate(names):
        if name not in paired:
            by_phase[(-7 * i) % CYCLE].append((i, game.instance(name)))
    attacks = (Move.JAB, Move.KICK, Move.CROSS)

    def drive(ctx):
        u = ctx.update
        turn = u // CYCLE
        for i, inst in by_phase[u % CYCLE]:
            # the gait under a fade into a clip that hands over (back into a gait)
            target = 0.5 + ((turn + i) % 5) * 0.6
            nxt = player.gait(inst, GAIT_IDS, target=target, value=target)
            attack = player.clip(inst, attacks[(u + i) % 3], nxt, blend=0.1)
            player.change(inst, attack, FADE)

    game.ctx.actions.append(drive)
    return game


def _run(n: int, updates: int, batched: bool, warmup: int = 5):
    from scuffle.game.runtime.schedule import SCHEDULE

    game = _build(n, batched)
    player = game.player
    try:
        stages: dict[str, float] = {}
        with game.active():
            import esper
            procs = [esper.get_processor(system) for system in SCHEDULE]     # public API only
        names = []
        for p in procs:
            if p is not None:
                _Timed(p, stages, type(p).__name__)   # wraps p.process in place
                names.append(type(p).__name__)
        # split the animation step into the task step and the pose (sample, blend, bones)
        orig_step, orig_pose = player.step, player.pose

        def timed(fn, key):
            def call(*a, **k):
                t0 = time.perf_counter()
                r = fn(*a, **k)
                stages[key] = stages.get(key, 0.0) + time.perf_counter() - t0
                return r
            return call

        player.step = timed(orig_step, "task step")
        player.pose = timed(orig_pose, POSE_STAGE)
        for _ in range(warmup):
            game.step()
        stages.clear()
        times, cpu = [], []
        shapes = {}
        engine = player.batch
        kernel = scalar = 0
        gc_s = [0.0, 0.0]

        def gc_clock(phase, info):
            if phase == "start":
                gc_s[1] = time.perf_counter()
            else:
                gc_s[0] += time.perf_counter() - gc_s[1]

        import gc
        gc.callbacks.append(gc_clock)
        try:
            for _ in range(updates):
                c0 = time.process_time()
                t0 = time.perf_counter()
                game.step()
                times.append((time.perf_counter() - t0) * 1000.0)
                cpu.append((time.process_time() - c0) * 1000.0)
                kernel += engine.kernel_humans
                scalar += engine.scalar_humans
        finally:
            gc.callbacks.remove(gc_clock)
        extra = {"kernel_step_share": round(kernel / max(1, kernel + scalar), 4) if batched else 0.0,
                 "gc_ms_per_update": round(gc_s[0] * 1000.0 / updates, 4)}
        for name, _ in game.humans()[: min(n, 200)]:
            key = tuple(int(t.type) for t in game.instance(name).stack)
            shapes[key] = shapes.get(key, 0) + 1
        total = sum(stages.get(nm, 0.0) for nm in names)
        insts = [game.instance(nm) for nm, _ in game.humans()]
        leak = player.pool.in_use - player.tasks_out(insts)
        return times, cpu, stages, total, shapes, leak, extra
    finally:
        game.close()


def _pose_pipeline(n: int, repeats: int = 20) -> tuple[float, float]:
    """µs per human (wall, CPU medians) for the pose pipeline alone, compiled: two clips sampled and blended,
    then local-to-model over 34 bones, in one kernel call (the issue's reference
    measurement; the plan is built before the clock starts)."""
    from scuffle.anim import kernels as K
    from scuffle.anim.plan import Bones, pose_tables, scratch_poses
    from scuffle.anim.sampler import ClipBank
    from scuffle.game.fighters.moveset import demo_set

    s = demo_set()
    bank = ClipBank(list(s.clips_by_index))
    rng = np.random.default_rng(0)
    clip = rng.integers(0, len(bank), 2 * n).astype(np.int64)
    t = (rng.random(2 * n) * bank.durations[clip] * 0.9).astype(np.float32)
    rate = np.full(2 * n, 0.75, np.float32)
    flags = np.zeros(2 * n, np.int64)
    first_s = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    first_b = np.arange(0, n + 1, dtype=np.int64)
    b_a, b_b = first_s[:-1].copy(), first_s[:-1] + 1
    w = rng.random(n).astype(np.float32)
    mask = np.full(n, -1, np.int64)
    finals = -(np.arange(n, dtype=np.int64) + 1)
    cols = np.arange(n, dtype=np.int64)
    out = Bones(n)
    args = (cols, first_s, first_b, clip, t, rate, flags, b_a, b_b, w, mask, finals, *pose_tables(bank).args,
            *scratch_poses(4), *out.outs())
    K.pose_plan(*args)
    ts, cs = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        K.pose_plan(*args)
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    return median(ts) / n * 1e6, median(cs) / n * 1e6


def _compile_seconds() -> float:
    """The kernels' first-run compile time: a fresh process compiling into an empty cache."""
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        code = ("import time; t0 = time.perf_counter(); from scuffle.anim.warmup import compile_kernels; "
                "compile_kernels(); print(time.perf_counter() - t0)")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
        if p.returncode:
            raise RuntimeError(f"compiling the kernels failed: {p.stderr.strip()[-500:]}")
        return float(p.stdout.strip().splitlines()[-1])


def run_bench(humans: int, updates: int, scalar_updates: int | None = None) -> dict:
    """Run the benchmark for one crowd size; returns the report dict (module docstring)."""
    from scuffle.anim.warmup import compile_kernels

    t0 = time.perf_counter()
    compile_kernels()                 # loads the cached kernels (compiles on a first run)
    load_s = time.perf_counter() - t0
    pose_us, pose_cpu_us = _pose_pipeline(max(humans, 1000))
    times, cpu, stages, total, shapes, leak, extra = _run(humans, updates, True)
    compiled_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    scalar_updates = scalar_updates if scalar_updates is not None else max(3, min(updates, 2000 // max(1, humans) + 3))
    stimes, scpu, _, _, _, _, _ = _run(humans, scalar_updates, False, warmup=2)
    ms = median(times)
    cpu_ms = median(cpu)
    sms = median(stimes)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    share = {k: round(v / max(total, 1e-12), 4) for k, v in sorted(stages.items(), key=lambda kv: -kv[1])}
    stage_ms = {k: round(v * 1000.0 / updates, 4) for k, v in sorted(stages.items(), key=lambda kv: -kv[1])}
    return {
        "humans": humans,
        "updates": updates,
        "ms_per_update": round(ms, 4),
        "p90_ms": round(float(np.percentile(times, 90)), 4),
        "cpu_ms_per_update": round(cpu_ms, 4),
        "us_per_human": round(ms * 1000.0 / humans, 3),
        "cpu_us_per_human": round(cpu_ms * 1000.0 / humans, 3),
        "budget_ms": round(BUDGET_MS, 3),
        "budget_share": round(ms / BUDGET_MS, 4),
        "scalar_ms_per_update": round(sms, 3),
        "scalar_cpu_ms_per_update": round(median(scpu), 3),
        "scalar_updates": scalar_updates,
        "speedup": round(sms / ms, 2) if ms else None,
        "peak_mb": round(peak_mb, 1),
        "compiled_peak_mb": round(compiled_peak_mb, 1),
        "pose_pipeline_us_per_human": round(pose_us, 3),
        "pose_pipeline_cpu_us_per_human": round(pose_cpu_us, 3),
        "kernel_load_s": round(load_s, 3),
        "stage_share": share,
        "stage_ms": stage_ms,
        "stack_shapes": {"-".join(map(str, k)) or "empty": v for k, v in sorted(shapes.items())},
        "pool_leak": leak,
        **extra,
    }


def fit_line(reports: list[dict], key: str = "cpu_ms_per_update") -> tuple[float, float]:
    """Least-squares fixed cost (ms) and per-human slope (µs) of ``key`` over the crowd sizes."""
    n = np.array([r["humans"] for r in reports], dtype=np.float64)
    y = np.array([r[key] for r in reports], dtype=np.float64)
    if len(n) < 2:
        return float(y[0]), 0.0
    slope, fixed = np.polyfit(n, y, 1)
    return float(fixed), float(slope * 1000.0)


def _sweep(sizes: list[int], updates: int, scalar_updates: int | None) -> list[dict]:
    """One fresh process per crowd size (so each peak memory is its own)."""
    import subprocess
    import sys

    out = []
    for n in sizes:
        cmd = [sys.executable, "-m", "scuffle", "bench", "--humans", str(n), "--updates", str(updates),
               "--json", "--no-compile-time"]
        if scalar_updates is not None:
            cmd += ["--scalar-updates", str(scalar_updates)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"bench --humans {n} failed: {p.stderr.strip()[-800:]}")
        out.append(json.loads(p.stdout))
    return out


def bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--humans", type=int, nargs="+", default=None, metavar="N",
                   help="humans in the world (default 1000); several sizes run one process each")
    p.add_argument("--sweep", action="store_true", help=f"run the sizes {', '.join(map(str, SWEEP))}")
    p.add_argument("--updates", type=int, default=60, metavar="U", help="updates to time (default 60)")
    p.add_argument("--scalar-updates", type=int, default=None, metavar="U", help="updates for the scalar reference path")
    p.add_argument("--json", action="store_true", help="print only the JSON report on stdout (the table to stderr)")
    p.add_argument("--no-compile-time", action="store_true",
                   help="skip measuring the kernels' first-run compile time (a fresh process, ~15-30 s)")


def _print_one(r: dict, out) -> None:
    print(f"{r['humans']} humans, {r['updates']} updates: {r['ms_per_update']} ms per update median "
          f"(p90 {r['p90_ms']}; CPU {r['cpu_ms_per_update']}), {r['us_per_human']} us per human, "
          f"{100 * r['budget_share']:.1f}% of the 30 Hz budget", file=out)
    print(f"scalar reference path: {r['scalar_ms_per_update']} ms per update "
          f"({r['scalar_updates']} updates); speedup {r['speedup']}x", file=out)
    print(f"pose pipeline alone (compiled, N >= 1000): {r['pose_pipeline_us_per_human']} us per human "
          f"(CPU {r['pose_pipeline_cpu_us_per_human']}); "
          f"peak memory {r['compiled_peak_mb']} MB (the compiled run), {r['peak_mb']} MB (with the scalar run)",
          file=out)
    print(f"humans stepped by the kernel: {100 * r['kernel_step_share']:.2f}% (the rest by the scalar step); "
          f"Python's cyclic GC: {r['gc_ms_per_update']} ms per update", file=out)
    print("where the time goes (the parts of a system indented under it):", file=out)
    shares = r["stage_share"]
    parts = [k for k in NESTED_STAGES if k in shares]
    for k, v in shares.items():
        if k in parts:
            continue
        print(f"  {k:<30} {100 * v:5.1f}%  {r['stage_ms'][k]:8.3f} ms", file=out)
        if k == NESTED_IN:
            for p in parts:
                print(f"    {p:<28} {100 * shares[p]:5.1f}%  {r['stage_ms'][p]:8.3f} ms", file=out)


def cmd_bench(args: argparse.Namespace) -> int:
    import sys

    from scuffle.game.cli.errors import CliError

    sizes = list(SWEEP) if args.sweep else (args.humans or [1000])
    if min(sizes) < 1 or args.updates < 1:
        raise CliError("--humans and --updates must be at least 1")
    if max(sizes) > MAX_HUMANS or args.updates > MAX_UPDATES:
        raise CliError(f"--humans {max(sizes)}, --updates {args.updates}: at most {MAX_HUMANS} humans "
                       f"and {MAX_UPDATES} updates")
    if args.scalar_updates is not None and args.scalar_updates > MAX_UPDATES:
        raise CliError(f"--scalar-updates {args.scalar_updates}: at most {MAX_UPDATES}")
    if args.scalar_updates is not None and args.scalar_updates < 1:
        raise CliError("--scalar-updates must be at least 1")
    from scuffle.anim.warmup import announce_compile
    announce_compile()                  # a cold numba cache: compile ahead, with a progress line
    text = sys.stderr if args.json else sys.stdout
    if len(sizes) == 1:
        r = run_bench(sizes[0], args.updates, args.scalar_updates)
        _print_one(r, text)
    else:
        runs = _sweep(sizes, args.updates, args.scalar_updates)
        for one in runs:
            _print_one(one, text)
        fixed, slope = fit_line(runs)
        wfixed, wslope = fit_line(runs, "ms_per_update")
        r = {"sweep": runs, "fixed_cpu_ms": round(fixed, 4), "cpu_us_per_human_slope": round(slope, 4),
             "fixed_wall_ms": round(wfixed, 4), "wall_us_per_human_slope": round(wslope, 4)}
        print(f"fit over {sizes}: {fixed:.3f} ms fixed + {slope:.3f} us per human (CPU); "
              f"{wfixed:.3f} ms + {wslope:.3f} us (wall)", file=text)
    if not args.no_compile_time:
        r["kernel_compile_s"] = round(_compile_seconds(), 2)
        print(f"kernels' first-run compile: {r['kernel_compile_s']} s (numba, cache=True: once per install)",
              file=text)
    if args.json:
        print(json.dumps(r))
    return 0
