"""``python -m game bench --humans N --updates U [--json]``: the crowd benchmark (issue 6).

Builds N humans in one Game on the demo move set, each running the representative
stack: a gait blend of two clips under a fade into a clip that hands over (with its
events), and a paired pair every tenth human (the victim plays the attacker's hold from
the attacker's set). The humans cycle through those changes with staggered phases, so
every update has hand-overs, fades finishing and events somewhere in the crowd.

It runs U updates through the whole ECS schedule and reports the median milliseconds
per update (wall clock; the CPU time too, which other processes disturb less), each stage's share (the task step, the sample, the bone transforms, the
flush, events, root motion, actions, placement), the peak memory, and the same work
through the scalar reference path (fewer updates). ``--json`` ends with one object:
``humans``, ``updates``, ``ms_per_update``, ``scalar_ms_per_update``, ``speedup``,
``peak_mb`` and more. Speed is measured here, never in the test suite.
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

    def drive(ctx):
        u = ctx.update
        for i, name in enumerate(names):
            if name in paired or (u + i * 7) % CYCLE:
                continue
            inst = game.instance(name)
            # the gait under a fade into a clip that hands over (back into a gait)
            nxt = gait(name, 0.5 + ((u // CYCLE + i) % 5) * 0.6)
            attack = player.clip(inst, (Move.JAB, Move.KICK, Move.CROSS)[(u + i) % 3], nxt, blend=0.1)
            player.change(inst, attack, FADE)

    game.ctx.actions.append(drive)
    return game


def _run(n: int, updates: int, batched: bool, warmup: int = 5):
    game = _build(n, batched)
    player = game.player
    try:
        stages: dict[str, float] = {}
        with game.active():
            import esper
            procs = list(esper._processors)
        for p in procs:
            _Timed(p, stages, type(p).__name__)       # wraps p.process in place
        # split the animation step into the task step, the sample and the bone transforms
        orig_step, orig_sample, skel = player.step, player.sample, player.skeleton
        orig_model = skel.model_space

        def timed(fn, key):
            def call(*a, **k):
                t0 = time.perf_counter()
                r = fn(*a, **k)
                stages[key] = stages.get(key, 0.0) + time.perf_counter() - t0
                return r
            return call

        player.step = timed(orig_step, "task step")
        player.sample = timed(orig_sample, "sample + blend")
        object.__setattr__(skel, "model_space", timed(orig_model, "bone transforms"))
        for _ in range(warmup):
            game.step()
        stages.clear()
        times, cpu = [], []
        shapes = {}
        for _ in range(updates):
            c0 = time.process_time()
            t0 = time.perf_counter()
            game.step()
            times.append((time.perf_counter() - t0) * 1000.0)
            cpu.append((time.process_time() - c0) * 1000.0)
        for name, _ in game.humans()[: min(n, 200)]:
            key = tuple(int(t.type) for t in game.instance(name).stack)
            shapes[key] = shapes.get(key, 0) + 1
        total = sum(stages.get(type(p).__name__, 0.0) for p in procs)
        insts = [game.instance(nm) for nm, _ in game.humans()]
        leak = player.pool.in_use - player.tasks_out(insts)
        return times, cpu, stages, total, shapes, leak
    finally:
        if "model_space" in vars(player.skeleton):
            object.__delattr__(player.skeleton, "model_space")
        game.close()


def _pose_pipeline(n: int, repeats: int = 20) -> float:
    """µs per human for the pose pipeline alone: two clips sampled and blended, then
    local-to-model over 34 bones (the issue's reference measurement)."""
    from scuffle.anim.pose import PoseBatch, blend
    from scuffle.anim.sampler import ClipBank
    from scuffle.anim.skeleton import HUMANOID
    from scuffle.game.fighters.moveset import demo_set

    s = demo_set()
    bank = ClipBank(list(s.clips_by_index))
    rng = np.random.default_rng(0)
    clip = rng.integers(0, len(bank), 2 * n)
    t = (rng.random(2 * n) * bank.durations[clip] * 0.9).astype(np.float32)
    rate = np.full(2 * n, 0.75, np.float32)
    flags = np.zeros(2 * n, np.int64)
    out, res = PoseBatch.empty(2 * n), PoseBatch.empty(n)
    w = rng.random(n).astype(np.float32)
    lo, hi = out.take(slice(0, n)), out.take(slice(n, 2 * n))

    def once():
        bank.sample(clip, t, rate, flags, out)
        blend(lo, hi, w, out=res)
        HUMANOID.model_space(res.rot, res.root)

    once()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        once()
        ts.append(time.perf_counter() - t0)
    return median(ts) / n * 1e6


def run_bench(humans: int, updates: int, scalar_updates: int | None = None) -> dict:
    """Run the benchmark; returns the report dict (see the module docstring)."""
    times, cpu, stages, total, shapes, leak = _run(humans, updates, True)
    scalar_updates = scalar_updates if scalar_updates is not None else max(3, min(updates, 2000 // max(1, humans) + 3))
    stimes, _, _, _, _, _ = _run(humans, scalar_updates, False, warmup=2)
    ms = median(times)
    sms = median(stimes)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    share = {k: round(v / max(total, 1e-12), 4) for k, v in sorted(stages.items(), key=lambda kv: -kv[1])}
    return {
        "humans": humans,
        "updates": updates,
        "ms_per_update": round(ms, 3),
        "p90_ms": round(float(np.percentile(times, 90)), 3),
        "cpu_ms_per_update": round(median(cpu), 3),
        "us_per_human": round(ms * 1000.0 / humans, 3),
        "budget_ms": round(BUDGET_MS, 3),
        "budget_share": round(ms / BUDGET_MS, 4),
        "scalar_ms_per_update": round(sms, 3),
        "scalar_updates": scalar_updates,
        "speedup": round(sms / ms, 2) if ms else None,
        "peak_mb": round(peak_mb, 1),
        "pose_pipeline_us_per_human": round(_pose_pipeline(humans), 3),
        "stage_share": share,
        "stack_shapes": {"-".join(map(str, k)) or "empty": v for k, v in sorted(shapes.items())},
        "pool_leak": leak,
    }


def bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--humans", type=int, default=1000, help="humans in the world (default 1000)")
    p.add_argument("--updates", type=int, default=60, help="updates to time (default 60)")
    p.add_argument("--scalar-updates", type=int, default=None, help="updates for the scalar reference path")
    p.add_argument("--json", action="store_true", help="end with one JSON object")


def cmd_bench(args: argparse.Namespace) -> int:
    from scuffle.game.cli.errors import CliError

    if args.humans < 1 or args.updates < 1:
        raise CliError("--humans and --updates must be at least 1")
    if args.humans > MAX_HUMANS or args.updates > MAX_UPDATES:
        raise CliError(f"--humans {args.humans}, --updates {args.updates}: at most {MAX_HUMANS} humans "
                       f"and {MAX_UPDATES} updates")
    if args.scalar_updates is not None and args.scalar_updates > MAX_UPDATES:
        raise CliError(f"--scalar-updates {args.scalar_updates}: at most {MAX_UPDATES}")
    if args.scalar_updates is not None and args.scalar_updates < 1:
        raise CliError("--scalar-updates must be at least 1")
    r = run_bench(args.humans, args.updates, args.scalar_updates)
    print(f"{r['humans']} humans, {r['updates']} updates: {r['ms_per_update']} ms per update median "
          f"(p90 {r['p90_ms']}; CPU {r['cpu_ms_per_update']}), {r['us_per_human']} us per human, "
          f"{100 * r['budget_share']:.1f}% of the 30 Hz budget")
    print(f"scalar reference path: {r['scalar_ms_per_update']} ms per update "
          f"({r['scalar_updates']} updates); speedup {r['speedup']}x")
    print(f"pose pipeline alone: {r['pose_pipeline_us_per_human']} us per human; peak memory {r['peak_mb']} MB")
    print("where the time goes:")
    for k, v in r["stage_share"].items():
        print(f"  {k:<18} {100 * v:5.1f}%")
    if args.json:
        print(json.dumps(r))
    return 0
