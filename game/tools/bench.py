"""``python -m scuffle bench --humans N [N ...] | --sweep [--updates U] [--crowd light|realistic] [--json]``:
the crowd benchmark.

Builds N humans in one Game and times whole updates through the ECS schedule. Two crowds
(``--crowd``):

- ``light`` (the default, a representative stack): every human runs a gait
  blend of two clips under a fade into a clip that hands over (with its events), a paired
  pair every tenth human; the humans cycle through those changes with staggered phases;
  gait values never move and nobody listens to events.
- ``realistic`` (docs/performance.md): on the demo set plus eight direction
  ids (``crowd_set``), one pair of fighters per FIGHT_EVERY humans under the fight rules
  (``Fight`` on a view of the pair, two seeded ``FighterAI``; 2 humans: the two fighters
  alone), the others extras that ``RealisticCrowd`` commands in turn, about 3% of them
  per update (each every REAL_CYCLE updates): gait targets moved (the value follows, the
  pair changes), walk starts and stops, attacks and chains that hand over, hit
  reactions, types 10, 11 and 13, queued tasks, every change under a fade. A rows handler
  (``Game.on_rows``) reads the sound, effect and 0x2d events as columns. Seeded (``--seed``): the same seed and size
  give the same commands and state (``state_checksum``).

It reports the median milliseconds per update, wall clock and CPU (and the means), per
human too, from updates with nothing of the bench's inside them (a first pass: the
crowd's state figures, ``state_checksum`` included, are read after it); each stage's
share and ms from as many updates more (a second pass: every system timed by wrapping
its ``process`` as it is installed, plus the task step and the compiled pose, and for
the realistic crowd the fight rules and the commands, which run inside the update;
about a microsecond per timer, which the first pass's figures do not carry: that pass's
mean CPU per update is ``stage_pass_cpu_ms_mean``); the flush's own CPU from as many
updates more with one timer around it and none inside (``flush_cpu_ms``, the flush goal's
figure; a third pass); the update after one human joins and one leaves against a
steady update (``join_leave_ratio``, medians of JOIN_LEAVE_TRIALS pairs, as many on even
updates as on odd ones, between the first and the second pass); at 2 humans the fight's
mean over FIGHT_UPDATES whole updates more (``fight_cpu_ms_mean``, the fighters goal's
figure: ``_fight_pass``); Python outside the kernels (``python_cpu_ms``: the mean CPU per
update of as many updates more with the compiled calls alone timed, the update's six and the
command path's, KERNELS and COMMAND_KERNELS, less those calls' CPU, each timer's own cost
taken out: ``_python_pass``, between the join and leave and the second pass; one thread
only); the kernels
alone (``kernel_ms``; ``pose_stacks_us_per_human``); the same work on the reference
engine (``scalar_ms_per_update``: the plain-Python model of the spec, anim.reference; fewer
updates) and the speed-up; the peak memory after the compiled run (``compiled_peak_mb``)
and after the reference one too (``peak_mb``), and the peak of a fresh process that runs
the crowd alone (``crowd_peak_mb``, the memory goal's figure: ``crowd_memory``, with
``imports_mb`` and ``kernels_mb`` before any human); the pose pipeline alone (µs per human);
Python's cyclic garbage collector (``gc_ms_per_update``,
``gc_max_ms``, ``gc_share``); the mean cost of one command (``command_us``,
``command_cpu_us``: the crowd's commands as a game issues many, the prepared ones as one
batch an update, ``Player.commands``, and their rows' write (``Player.write_commands``),
timed as a whole; ``command_cpu_us_batch_call``: the batch call and the write alone, a
row; ``command_cpu_us_single`` and by kind: one ``Player.run`` call each, on alternate
updates, each timed by two clock readings (the rows' write shared among them), and
``command_cpu_us_empty``: an empty command timed the same way, the clocks' own cost;
``command_cpu_us_handles`` and by kind: every eighth command, issued through the handle
API instead, the same rows); at 2 humans what a level load costs (``level_load``: a new
Game, ``add_human``, ``Fight()``, the first step and a later one); the
time to load the kernels and (unless ``--no-compile-time``) the first step on a fresh
install: a fresh process with an empty NUMBA_CACHE_DIR, with numba's compile time per
kernel and function (``first_step``; ``kernel_compile_s`` is numba's compile of the
four kernels there). Then the performance goals beside their figures (``goals``,
``goals_table``). Several ``--humans`` (or ``--sweep``: 2, 100, 1,000, 10,000) run one
process each and add the fixed cost and per-human slope (a least-squares line).
``--json`` prints only the JSON object on stdout (the tables go to stderr): one size
gives ``humans``, ``updates``, ``ms_per_update``, ``cpu_ms_per_update``,
``scalar_ms_per_update``, ``speedup``, ``peak_mb`` and more; a sweep gives ``sweep``
(those objects) and the fit. What takes long (the first step's compile, each size of a
sweep) says so on stderr first, with a dot every two seconds it runs. Speed is measured
here, never in the test suite.
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from bisect import bisect
from collections import Counter
from itertools import accumulate
from operator import itemgetter
from statistics import median
from typing import Any
from types import MethodType

import numpy as np

from scuffle.anim.engine.interpret import MAX_HUMANS as MAX_INTERPRETED
from scuffle.anim.playback.cursor import FiredEvent
from scuffle.anim.playback.player import PlayerOptions
from scuffle.anim.playback.recipe import (Arg, ClipStep, DirectionStep, GaitStep, LoopStep, MixStep, PickStep, Place,
                                          Recipe)
from scuffle.anim.playback.tasks import LOCOMOTION_FLAGS, HeldFlags, TaskFlags, TaskType
from scuffle.game.runtime.collector import settle as settle_collector
from scuffle.game.fighters.moves import GAIT_IDS, Move

__all__ = ["bench_arguments", "cmd_bench", "run_bench", "BUDGET_MS", "CROWDS", "build_crowd", "crowd_set",
           "crowd_checksum", "RealisticCrowd", "goals_table", "GOALS", "fresh_first_step", "crowd_memory",
           "resident_mb", "level_load", "LOAD_BUILDS"]

BUDGET_MS = 1000.0 / 30.0            # the 30 Hz update
POSE_STAGE = "pose (sample, blend, bones)"
# The stages timed inside a system (parts of its share, printed indented under it).
NESTED_IN = "AnimationStep"
NESTED_STAGES = ("task step", POSE_STAGE)
SWEEP = (2, 100, 1000, 10000)
CYCLE = 60                           # updates between a human's changes
FADE = 0.6                           # s: the change's fade (the gait under it)
PAIR_EVERY = 10                      # one paired pair per ten humans
MAX_HUMANS = 50_000                  # the largest crowd bench builds (docs/tools.md, "Limits")
MAX_UPDATES = 100_000                # the most updates it times


class _Timed:
    """Wraps a processor's ``process`` to time it (the stage shares)."""

    def __init__(self, proc, sink: dict, name: str, cpu: dict | None = None):
        self.proc, self.sink, self.name, self.cpu = proc, sink, name, cpu
        self._orig = proc.process
        proc.process = self

    def __call__(self, *a, **k):
        c0 = time.process_time()
        t0 = time.perf_counter()
        self._orig(*a, **k)
        self.sink[self.name] = self.sink.get(self.name, 0.0) + time.perf_counter() - t0
        if self.cpu is not None:
            self.cpu[self.name] = self.cpu.get(self.name, 0.0) + time.process_time() - c0


def _build(n: int, engine: str = "compiled", threads: int = 1):
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    game = Game(PlayerOptions(pool_size=max(360, 12 * n), threads=threads), engine=engine)
    s = demo_set()
    side = int(np.ceil(np.sqrt(n)))
    for i in range(n):
        game.add_human(f"h{i}", s, ((i % side) * 2.0, (i // side) * 2.0, 0.0), 0.0)
    names = [f"h{i}" for i in range(n)]
    player = game.player

    def gait(name, target):
        inst = game.instance(name)
        return player.gait(inst, GAIT_IDS, target=target, value=target)

    paired: set[str] = set()
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


# ---------------------------------------------------------------- the realistic crowd
CROWDS = ("light", "realistic")
REAL_CYCLE = 33                      # updates between two commands to one extra: ~3% of humans per update
FIGHT_EVERY = 100                    # one pair of fighters (the fight rules, two FighterAIs) per 100 humans
DIRECTION_BASE = 600                 # ids 600-607: the type 13 task's eight directions (the gait clips)
REAL_FADE = (0.2, 0.3, 0.45)         # s: every change of the crowd is under one of these fades
WALK_FLAGS = int(LOCOMOTION_FLAGS | TaskFlags.CONTINUOUS)    # the walk start's gait: its value moves
COMMAND_KINDS = ("gait_target", "walk_start", "walk_stop", "attack", "combo", "hit", "mix", "pick",
                 "direction", "queued")
COMMAND_WEIGHTS = (30, 14, 10, 18, 6, 13, 1, 1, 1, 6)   # types 10, 11, 13: 1% of commands each (rare, as in the game)
# random.choices' own cumulated weights and total (the same draw: one random() bisected)
_CUM_WEIGHTS = tuple(accumulate(COMMAND_WEIGHTS))
_TOTAL_WEIGHT = _CUM_WEIGHTS[-1] + 0.0
_N_KINDS = len(COMMAND_KINDS)
ATTACKS = (Move.JAB, Move.KICK, Move.CROSS, Move.HOOK)
REACTIONS = (Move.HIT_FRONT, Move.HIT_BACK, Move.HIT_HEAVY)
# The crowd's commands as a game issues them: prepared recipes (anim.playback.recipe; plain data,
# Player.prepare once, Player.run with the fade and the id, gait target, weight, value or
# direction), the same rows as the handle calls of RealisticCrowd._do_handles; a gait's new
# target is a steering walk start (Recipe.steer: the running gait steered, or the walk
# started), a running mix's goes to its task.
PACES = (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT)
REAL_RECIPES = {
    "walk_start": Recipe(Place.CHANGE, (ClipStep(Move.WALK_START),
                                        GaitStep(GAIT_IDS, target=Arg(1), value=0.0, flags=WALK_FLAGS)), fade=Arg(0)),
    # a gait's new target: the running gait steered, or the walk started where none runs
    "steer": Recipe(Place.CHANGE, (ClipStep(Move.WALK_START),
                                   GaitStep(GAIT_IDS, target=Arg(1), value=0.0, flags=WALK_FLAGS)), fade=Arg(0),
                    steer=True),
    "walk_stop": Recipe(Place.CHANGE, (ClipStep(Move.WALK_STOP), LoopStep(Move.IDLE)), fade=Arg(0)),
    "attack": Recipe(Place.CHANGE, (ClipStep(Arg(1), blend=0.1, held=int(HeldFlags.WINDUP)), LoopStep(Move.FIGHT_IDLE)),
                     fade=Arg(0)),
    "combo": Recipe(Place.CHANGE, (ClipStep(Move.JAB, blend=0.1, held=int(HeldFlags.WINDUP)),
                                   ClipStep(Move.CROSS, blend=0.1),
                                   LoopStep(Move.FIGHT_IDLE)), fade=Arg(0)),
    "hit": Recipe(Place.CHANGE, (ClipStep(Arg(1)), LoopStep(Move.FIGHT_IDLE)), fade=Arg(0)),
    "queued": Recipe(Place.ENQUEUE, (ClipStep(Arg(0), blend=0.1), LoopStep(Move.FIGHT_IDLE))),
    "mix": Recipe(Place.CHANGE, (MixStep(Move.WALK, Move.JOG, weight=Arg(1)),), fade=Arg(0)),
    "pick": Recipe(Place.CHANGE, (PickStep(PACES, 1.0, value=Arg(1)),), fade=Arg(0)),
    "direction": Recipe(Place.CHANGE, (DirectionStep(DIRECTION_BASE, direction=Arg(1)),), fade=Arg(0)),
}
HANDLE_SAMPLE = 8                    # every 8th command through the handle API (command_cpu_us_handles)
_first = itemgetter(0)
EMPTY_SAMPLE = 4                     # empty commands timed an update of single calls (command_cpu_us_empty)


def crowd_set():
    """The demo move set plus ids DIRECTION_BASE..+7 (the gait clips, with their range
    records) for the type 13 eight-direction task; one set shared by the whole crowd."""
    from scuffle.game.fighters.moveset import demo_set

    s = demo_set()
    gaits = (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT)
    for d in range(8):
        src = gaits[d % 4]
        s = s.with_clip(DIRECTION_BASE + d, s.clip(src), s.range(src))
    return s


class _PairView:
    """A Game seen by the fight rules of one pair: ``humans()`` and ``names`` list the two
    fighters only (so the rules' per-update loops and hit searches stay within the pair);
    everything else is the Game's own (its player, context, components)."""

    def __init__(self, game, names: tuple[str, str]):
        self._game = game
        self._pair = names
        self.fight = None

    @property
    def names(self) -> dict[str, int]:
        a, b = self._pair
        names = self._game.names
        return {a: names[a], b: names[b]}

    def humans(self) -> list[tuple[str, int]]:
        """The two fighters as (name, entity) in entity order (Game.humans over the pair:
        a name gone from the Game raises KeyError, as ``names``), a new list each call."""
        a, b = self._pair
        names = self._game.names
        ea, eb = names[a], names[b]
        return [(a, ea), (b, eb)] if ea <= eb else [(b, eb), (a, ea)]

    def __getattr__(self, name):
        v = getattr(self._game, name)
        if v.__class__ is MethodType and v.__self__ is self._game and name not in self._game.__dict__:
            self.__dict__[name] = v          # a method of the Game's class: bound once, then read directly
        return v


class _FightRouter:
    """One rows handler of event 0x2c (Game.on_rows) for every pair: hands each event of a
    fighter to the fight rules of the pair it fights in, in dispatch order (one Fight per
    pair would otherwise see every human's 0x2c; the extras' are most of them). A dict
    look-up an event (a few dozen an update): no array operation."""

    def __init__(self):
        self.by_entity: dict[int, Any] = {}

    def __call__(self, ctx, rows) -> None:
        get = self.by_entity.get
        ids = None
        for j, ent in enumerate(rows.entities.tolist()):
            fight = get(ent)
            if fight is not None:
                if ids is None:
                    ids = rows.anim_ids.tolist()
                # the window's check reads the event's anim id alone: no task handle made for it
                fight._on_window(ctx, ent, FiredEvent(rows.events[j], ids[j], None))


class _Listener:
    """The crowd's event handler (a game's sound and effect code, which reads a crowd's
    events in bulk: a rows handler, Game.on_rows): counts the events it is handed, by
    type (a new type's count added in type order)."""

    def __init__(self):
        self.counts: dict[int, int] = {}

    def __call__(self, ctx, rows) -> None:
        got = Counter(rows.types.tolist())
        counts = self.counts
        for t in sorted(got):
            counts[t] = counts.get(t, 0) + got[t]


class RealisticCrowd:
    """The realistic crowd's driver (docs/performance.md): an action run in the actions
    phase that commands the extras in turn, about 3% of them per update (each one every
    REAL_CYCLE updates, staggered), every change under a fade; the fight pairs are driven
    by their FighterAIs through the fight rules. Seeded (``random.Random(seed)``): the
    same seed and size give the same commands and the same state.

    The commands go as a game issues them: prepared recipes (REAL_RECIPES, Player.prepare
    once; ``_prepared``) for the walk start, a gait target (a steering walk start: the
    running gait steered, or the walk started), walk
    stop, attack, combo, hit reaction, queued attack, mix (with no mix running), pick and
    direction, first, in draw order; then the handle API (``_do_handles``: the constructors
    and stack rules) for a running mix's new target; then the HANDLE_SAMPLE-th commands, which go through
    ``_do_handles`` whatever their kind, timed apart. The prepared ones go as one batch an
    update (``_batched``: Player.commands_at, the columns of the update's commands, the
    gait targets among them) on even updates and one call each (``_single``: Player.run)
    on odd ones: the same rows either way
    (tests/anim/test_batched.py), as the handle API's sample leaves the rows of the
    prepared command (tests/anim/test_recipes.py), so the state and its checksum depend on
    neither. ``_do`` (one command at once, a prepared recipe where one covers it) builds
    the crowd's first stacks.

    ``commands`` counts the commands issued; ``batch_s`` / ``batch_cpu_s`` the wall and
    CPU time of the batched updates' commands (``batch_timed`` of them, the sample aside:
    the update's columns built, the batch call and its rows' write, the handle API's after
    it, timed as a whole), ``batch_call_cpu_s`` the batch calls and writes alone
    (``batch_rows`` rows);
    ``command_s`` / ``command_cpu_s`` those of the single calls' updates
    (``command_timed`` of them; each timed from the clocks' reading before its player
    calls to the one after them; an update's draws are made before its first command),
    ``empty_s`` / ``empty_cpu_s`` an empty command timed the same way (``empty_n``: the
    clocks' own reading, process_time a system call, which each single call's figure
    holds); ``by_kind`` [count, wall s, CPU s, timed count] per kind of COMMAND_KINDS (the
    count: every command of the kind; the times: the single calls' timed ones),
    ``by_kind_handles`` [count, wall s, CPU s] of the handle API's sample, ``refused`` the
    commands a limit of the original refused (AnimLimitError; counted, the update goes on:
    a batch from the row after the refused one). Today's figures are in
    docs/performance.md.
    """

    def __init__(self, game, extras: list[tuple[int, object]], seed: int):
        from scuffle.game.runtime.snapshot import SavedRandom

        self.game, self.player = game, game.player
        self.rng = SavedRandom(seed)
        self.by_phase: list[list[tuple[int, object]]] = [[] for _ in range(REAL_CYCLE)]
        for pair in extras:                               # (the caller's pairs themselves: no copy each)
            self.by_phase[(-7 * pair[0]) % REAL_CYCLE].append(pair)
        self.commands = 0
        self.command_s = 0.0
        self.command_cpu_s = 0.0
        self.by_kind: dict[str, list] = {k: [0, 0.0, 0.0, 0] for k in COMMAND_KINDS}
        self.by_kind_handles: dict[str, list] = {k: [0, 0.0, 0.0] for k in COMMAND_KINDS}
        self.command_timed = 0
        self.batch_timed = 0                              # the batched updates' commands (Player.commands)
        self.batch_s = self.batch_cpu_s = 0.0
        self.batch_call_cpu_s = 0.0                       # the Player.commands calls alone
        self.batch_rows = 0                               # the rows they took
        self.empty_n = 0                                  # empty commands timed (the clocks' own cost)
        self.empty_s = self.empty_cpu_s = 0.0
        # which command is sampled (HANDLE_SAMPLE): the commands of the updates before this one,
        # set from the update at each call (the sample changes the rows' order within an update,
        # so a replay after a rollback must take the same sample)
        self.commands_seen = 0
        self.cmds = {k: game.player.prepare(r) for k, r in REAL_RECIPES.items()}
        self._common = tuple(self.cmds[k] for k in ("steer", "attack", "walk_start", "hit"))
        # each prepared command's kind (the batch's counts, made after its clocks)
        self._kind_of = {id(c): ("gait_target" if k == "steer" else k) for k, c in self.cmds.items()}
        self.refused = 0
        self._kept: tuple | None = None             # the last save_state (given again while nothing changed)
        self._kinds_of: tuple = (None, -1)          # (a state's counts by kind, the command count they are at)
        self.fights: list = []
        self._row_cols: tuple | None = None          # the extras' rows and generations (_index_rows)
        self.listener = _Listener()
        self.router = _FightRouter()

    # -- snapshots (Game.snapshot saves an action's state through these)
    def save_state(self) -> tuple:
        """The driver's state: its random generator, the counts and the listener's counts
        (timings are measurements, not state: not saved; each pair's fight rules are
        actions of the Game, saved on their own)."""
        rng, counts = self.rng.save_state(), self.listener.counts
        kept = self._kept
        # (the last state saved again while nothing changed: the counts by kind change only
        # with a command, and a state's values are never written to)
        if kept is not None and kept[0] is rng and kept[1] == self.commands and kept[2] == self.refused \
                and kept[4] == counts:
            return kept
        held, at = self._kinds_of
        kinds = held if held is not None and at == self.commands else {k: v[0] for k, v in self.by_kind.items()}
        kept = self._kept = (rng, self.commands, self.refused, kinds, dict(counts))
        self._kinds_of = (kept[3], self.commands)
        return kept

    def state_fits(self, state) -> str | None:
        """Why ``state`` (a ``save_state``, perhaps from a file) cannot be loaded, or None."""
        from scuffle.game.runtime.snapfile import _Refused, need_random_state
        if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[3], dict)
                and isinstance(state[4], dict)):
            return "not the crowd's state"
        try:
            need_random_state(state[0], "rng")
        except _Refused as e:
            return str(e)
        if set(state[3]) != set(self.by_kind) or not all(
                n.__class__ is int and n >= 0 for n in (state[1], state[2], *state[3].values(), *state[4].values())):
            return "counts that are not whole numbers >= 0 by kind"
        return None

    def load_state(self, state: tuple) -> None:
        """Put back a ``save_state``."""
        rng, commands, self.refused, kinds, counts = state
        self.rng.load_state(rng)
        held, at = self._kinds_of                   # (the counts by kind held: ``held``'s while no command since)
        if held is not kinds or at != self.commands:
            for k, n in kinds.items():
                self.by_kind[k][0] = n
            self._kinds_of = (kinds, commands)
        self.commands = commands
        if self.listener.counts != counts:
            self.listener.counts = dict(counts)

    def _index_rows(self) -> tuple:
        """The extras' rows and generations (Player.rows_of) by their index in the crowd,
        kept as the driver's columns (read again when a row was given to another)."""
        pairs = [pair for phase in self.by_phase for pair in phase]
        size = max((i for i, _ in pairs), default=-1) + 1
        rows, gens = self.player.rows_of([inst for _, inst in pairs])
        by_i = np.full((2, size), -1, np.int64)          # (one fancy index reads a batch's rows and gens)
        idx = np.fromiter((i for i, _ in pairs), np.int64, len(pairs))
        by_i[0, idx], by_i[1, idx] = rows, gens
        self._row_cols = by_i
        return by_i

    # -- one command of each kind (the player's own calls: what a game's code does)
    def _running(self, inst, ttype):
        """The newest unreleased task of ``ttype`` on the human's stack (Player.running: a
        scan of its stack row, one handle made)."""
        return self.player.running(inst, ttype)

    def _walk_start(self, inst, x, fade):
        p = self.player
        g = p.gait(inst, GAIT_IDS, target=x, value=0.0, flags=WALK_FLAGS)
        p.change(inst, p.clip(inst, Move.WALK_START, g), fade)

    def _do(self, kind, inst, x, k, fade):
        """One command as a game issues it: a prepared recipe (REAL_RECIPES) where one
        covers it, else the handle API (``_do_handles``, the same rows)."""
        run, cmds = self.player.run, self.cmds
        if kind == "gait_target":
            g = self.player.running(inst, TaskType.GAIT)
            if g is None:
                run(inst, cmds["walk_start"], fade, x)
            else:
                g.set_target(x)
        elif kind == "walk_start":
            run(inst, cmds["walk_start"], fade, x)
        elif kind == "attack":
            run(inst, cmds["attack"], fade, ATTACKS[k % 4])
        elif kind == "hit":
            run(inst, cmds["hit"], fade, REACTIONS[k % 3])
        elif kind == "walk_stop":
            run(inst, cmds["walk_stop"], fade)
        elif kind == "combo":
            run(inst, cmds["combo"], fade)
        elif kind == "queued":
            run(inst, cmds["queued"], ATTACKS[k % 4])
        else:
            got = self._prepared(kind, inst, x, k, fade)
            if got is None:
                self._do_handles(kind, inst, x, k, fade)
            else:
                run(inst, got[0], *got[1])

    def _do_handles(self, kind, inst, x, k, fade):
        """One command through the handle API (the player's constructors and stack rules)."""
        p = self.player
        if kind == "gait_target":
            g = self._running(inst, TaskType.GAIT)
            if g is None:
                self._walk_start(inst, x, fade)
            else:
                g.set_target(x)                           # the value moves; the pair changes on the way
        elif kind == "walk_start":
            self._walk_start(inst, x, fade)
        elif kind == "walk_stop":
            p.change(inst, p.clip(inst, Move.WALK_STOP, p.loop(inst, Move.IDLE)), fade)
        elif kind == "attack":
            p.change(inst, p.clip(inst, ATTACKS[k % 4], p.loop(inst, Move.FIGHT_IDLE), blend=0.1,
                                  held=int(HeldFlags.WINDUP)), fade)
        elif kind == "combo":
            p.change(inst, p.chain(inst, [Move.JAB, Move.CROSS, Move.FIGHT_IDLE], blend=0.1,
                                   held=int(HeldFlags.WINDUP)), fade)
        elif kind == "hit":
            p.change(inst, p.clip(inst, REACTIONS[k % 3], p.loop(inst, Move.FIGHT_IDLE)), fade)
        elif kind == "mix":
            m = self._running(inst, TaskType.MIX)
            if m is None:
                p.change(inst, p.mix(inst, Move.WALK, Move.JOG, weight=x / 4.0), fade)
            else:
                m.set_target(x / 4.0)
        elif kind == "pick":
            p.change(inst, p.pick(inst, list(PACES), 1.0, value=x * 0.75), fade)
        elif kind == "direction":
            p.change(inst, p.direction(inst, DIRECTION_BASE, direction=x * 2.0), fade)
        else:                                             # queued: starts at the next step
            p.enqueue(inst, p.clip(inst, ATTACKS[k % 4], p.loop(inst, Move.FIGHT_IDLE), blend=0.1))

    def _prepared(self, kind, inst, x, k, fade):
        """The prepared command and its numbers that issue ``kind`` (REAL_RECIPES: two numbers
        a row, the second 0.0 where the recipe takes one), or None: the handle API's (a
        running gait's or mix's new target). A gait or mix target reads whether one runs
        (Player.running) here, as ``_do`` does."""
        cmds = self.cmds
        if kind == "gait_target":                         # (the running gait steered, or the walk started)
            return cmds["steer"], (fade, x)
        if kind == "walk_start":
            return cmds["walk_start"], (fade, x)
        if kind == "attack":
            return cmds["attack"], (fade, ATTACKS[k % 4])
        if kind == "hit":
            return cmds["hit"], (fade, REACTIONS[k % 3])
        if kind == "walk_stop" or kind == "combo":
            return cmds[kind], (fade, 0.0)
        if kind == "queued":
            return cmds["queued"], (ATTACKS[k % 4], 0.0)
        if kind == "mix":
            if self.player.running(inst, TaskType.MIX) is not None:
                return None
            return cmds["mix"], (fade, x / 4.0)
        if kind == "pick":
            return cmds["pick"], (fade, x * 0.75)
        if kind == "direction":
            return cmds["direction"], (fade, x * 2.0)
        return None

    def __call__(self, ctx) -> None:
        phase = self.by_phase[ctx.update % REAL_CYCLE]
        if not phase:                                     # no extra commanded this update (2 fighters: never)
            return
        # the phase's draws first (the commands draw nothing from this generator: the same
        # numbers in the same order as drawn one command at a time; random.choices' draw,
        # its cumulated weights kept)
        by_phase, u = self.by_phase, ctx.update
        self.commands_seen = (u // REAL_CYCLE) * sum(map(len, by_phase)) + sum(map(len, by_phase[:u % REAL_CYCLE]))
        rng = self.rng
        rand, uniform, randrange = rng.random, rng.uniform, rng.randrange
        draws = []
        for _ in phase:
            kind = COMMAND_KINDS[bisect(_CUM_WEIGHTS, rand() * _TOTAL_WEIGHT, 0, _N_KINDS - 1)]
            draws.append((kind, uniform(0.0, 4.0), randrange(12), REAL_FADE[randrange(3)]))
        # The prepared commands first, in draw order, then the others (the handle API's), in
        # draw order: on alternate updates as one batch (Player.commands) or one call each
        # (Player.run): the same rows either way.
        if ctx.update % 2 == 0:
            self._batched(phase, draws)
        else:
            self._single(phase, draws)

    def _batched(self, phase, draws) -> None:
        """The update's commands as a game issues many: the prepared ones (the gait
        targets' steering walk starts among them) as columns in one ``Player.commands_at``,
        their rows written (Player.write_commands), then the handle API's; timed as a
        whole (one pair of clock readings an update: the game's own dispatch, which command
        with which numbers, and the calls), the batch call and the rows' write alone too;
        the handle API's sample (every HANDLE_SAMPLE-th) after them, each timed apart. The
        bench's own counts (which commands the sample takes, each kind's count) are made
        outside the clocks."""
        from scuffle.anim.base.errors import StaleHandle
        from scuffle.anim.engine.stack import AnimLimitError

        clock, cpu_clock = time.perf_counter, time.process_time
        prepared, do_handles = self._prepared, self._do_handles
        nth = self.commands_seen
        todo, sampled = [], []
        for (i, inst), (kind, x, k, fade) in zip(phase, draws):
            nth += 1
            if nth % HANDLE_SAMPLE == 0:                  # the handle API's sample
                sampled.append(("hit" if kind == "queued" and inst.queue else kind, inst, x, k, fade))
            else:
                todo.append((i, inst, kind, x, k, fade))
        steer, attack, walk_start, hit = self._common
        c0 = cpu_clock()
        t0 = clock()
        cmds, who, args, later = [], [], [], []
        for i, inst, kind, x, k, fade in todo:
            if kind == "queued" and inst.queue:
                kind = "hit"
            # the four commonest kinds as ``_prepared`` gives them, inline (a game's own dispatch)
            if kind == "gait_target":
                cmds.append(steer)
                args.append((fade, x))
            elif kind == "attack":
                cmds.append(attack)
                args.append((fade, ATTACKS[k % 4]))
            elif kind == "walk_start":
                cmds.append(walk_start)
                args.append((fade, x))
            elif kind == "hit":
                cmds.append(hit)
                args.append((fade, REACTIONS[k % 3]))
            else:
                got = prepared(kind, inst, x, k, fade)
                if got is None:
                    later.append((kind, inst, x, k, fade))
                    continue
                cmds.append(got[0])
                args.append(got[1])
            who.append(i)
        refused = 0
        b0 = cpu_clock()
        # the humans named by their rows and generations, kept as columns (Player.rows_of):
        # the batch reads no instance of theirs
        cols = self._row_cols
        if cols is None:
            cols = self._index_rows()
        rows, gens = cols[:, who]
        lo = 0
        reread = False
        while lo < len(cmds):                             # a refused row counted, the rest run after it
            try:
                self.player.commands_at(cmds[lo:] if lo else cmds, rows[lo:], gens[lo:], args[lo:] if lo else args)
                break
            except AnimLimitError as e:
                refused += 1
                lo += e.row + 1                           # type: ignore[attr-defined]
            except StaleHandle as e:                      # a row given to another (a restore): read again, once
                if reread:
                    raise
                reread = True
                lo += e.row                               # type: ignore[attr-defined]
                rows, gens = self._index_rows()[:, who]
        self.player.write_commands()                      # their rows written now: counted with them
        b1 = cpu_clock()
        for kind, inst, x, k, fade in later:
            try:
                do_handles(kind, inst, x, k, fade)
            except AnimLimitError:
                refused += 1
        t1 = clock()
        c1 = cpu_clock()
        self.batch_timed += len(cmds) + len(later)
        self.batch_s += t1 - t0
        self.batch_cpu_s += c1 - c0
        self.batch_call_cpu_s += b1 - b0
        self.batch_rows += len(cmds)
        by_handles_kind = self.by_kind_handles
        for kind, inst, x, k, fade in sampled:
            t0, c0 = clock(), cpu_clock()
            try:
                do_handles(kind, inst, x, k, fade)
            except AnimLimitError:
                refused += 1
            t1, c1 = clock(), cpu_clock()
            one = by_handles_kind[kind]
            one[0] += 1
            one[1] += t1 - t0
            one[2] += c1 - c0
        self.commands_seen = nth
        self.refused += refused
        self.commands += len(todo) + len(sampled)
        by_kind, kind_of = self.by_kind, self._kind_of
        for cmd in cmds:
            by_kind[kind_of[id(cmd)]][0] += 1
        for kind, *_ in later:
            by_kind[kind][0] += 1
        for kind, *_ in sampled:
            by_kind[kind][0] += 1

    def _single(self, phase, draws) -> None:
        """The update's commands one call each (Player.run for the prepared ones), in the
        order ``_batched`` issues them (the prepared first, then the handle API's), each
        timed from the clocks' last reading to their next (two readings a command; the
        prepared ones' rows written after them, Player.write_commands, its time shared
        among them), then ``EMPTY_SAMPLE`` empty commands timed the same way (the clocks'
        own cost)."""
        from scuffle.anim.engine.stack import AnimLimitError

        clock, cpu_clock = time.perf_counter, time.process_time
        prepared, do_handles, run = self._prepared, self._do_handles, self.player.run
        nth = self.commands_seen
        kinds, walls, cpus, later = [], [], [], []
        ran: list[int] = []                               # the prepared commands' places in ``kinds``
        refused = 0
        c0 = cpu_clock()
        t0 = clock()
        for (i, inst), (kind, x, k, fade) in zip(phase, draws):
            if kind == "queued" and inst.queue:
                kind = "hit"
            nth += 1
            by_handles = nth % HANDLE_SAMPLE == 0
            got = None if by_handles else prepared(kind, inst, x, k, fade)
            if got is None:
                later.append((by_handles, len(kinds), kind, inst, x, k, fade))
            else:
                ran.append(len(kinds))
                try:
                    run(inst, got[0], *got[1][:got[0].n_params])
                except AnimLimitError:
                    refused += 1
            t1 = clock()
            c1 = cpu_clock()
            kinds.append(kind)
            walls.append(t1 - t0)
            cpus.append(c1 - c0)
            t0, c0 = t1, c1
        # the prepared commands' rows written now (the buffer's one call), its time shared
        # among them: counted with them, not with the handle API's first call after them
        self.player.write_commands()
        t1 = clock()
        c1 = cpu_clock()
        if ran:
            dt, dc = (t1 - t0) / len(ran), (c1 - c0) / len(ran)
            for j in ran:
                walls[j] += dt
                cpus[j] += dc
        t0, c0 = t1, c1
        sampled = [False] * len(kinds)
        later.sort(key=_first)                            # the handle API's, then its sample (as _batched)
        for by_handles, j, kind, inst, x, k, fade in later:
            sampled[j] = by_handles
            try:
                do_handles(kind, inst, x, k, fade)
            except AnimLimitError:
                refused += 1
            t1 = clock()
            c1 = cpu_clock()
            walls[j] += t1 - t0
            cpus[j] += c1 - c0
            t0, c0 = t1, c1
        for _ in range(EMPTY_SAMPLE):                     # the clocks' own reading: an empty command
            t1 = clock()
            c1 = cpu_clock()
            self.empty_s += t1 - t0
            self.empty_cpu_s += c1 - c0
            t0, c0 = t1, c1
        self.empty_n += EMPTY_SAMPLE
        self.commands_seen = nth
        self.refused += refused
        self.commands += len(kinds)
        by_kind, by_handles_kind = self.by_kind, self.by_kind_handles
        for kind, dt, dc, h in zip(kinds, walls, cpus, sampled):
            by_kind[kind][0] += 1
            if h:
                one = by_handles_kind[kind]
                one[0] += 1
                one[1] += dt
                one[2] += dc
                continue
            self.command_timed += 1
            self.command_s += dt
            self.command_cpu_s += dc
            one = by_kind[kind]
            one[1] += dt
            one[2] += dc
            one[3] += 1


def _build_realistic(n: int, engine: str = "compiled", seed: int = 1, threads: int = 1):
    """The realistic crowd in one Game (docs/performance.md): pairs of fighters under the
    fight rules (one per FIGHT_EVERY humans; 2 humans: the two fighters alone), the rest
    extras commanded by RealisticCrowd; events read by a rows handler (Game.on_rows) and the
    fight rules' handler of 0x2c."""
    from scuffle.anim.data.clip import EventType
    from scuffle.game.fighters.ai import FighterAI
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.runtime.world import Game

    game = Game(PlayerOptions(pool_size=max(360, 16 * n), threads=threads), engine=engine)
    s = crowd_set()
    side = max(2, int(np.ceil(np.sqrt(n))))
    names = [f"h{i}" for i in range(n)]
    pairs = [(i, i + 1) for i in range(0, n - 1, FIGHT_EVERY)]
    fighters = {j for pair in pairs for j in pair}
    for i, name in enumerate(names):
        if i in fighters:                                 # the two of a pair face each other
            heading = -90.0 if (i, i + 1) in pairs else 90.0
        else:
            heading = (i * 37) % 360 - 180.0
        game.add_human(name, s, ((i % side) * 2.0, (i // side) * 2.0, 0.0), heading)
    player = game.player
    extras = [(i, game.instance(nm)) for i, nm in enumerate(names) if i not in fighters]
    crowd = RealisticCrowd(game, extras, seed)
    starts = ("walk_start", "attack", "walk_stop", "walk_start", "combo", "walk_stop", "walk_start", "attack",
              "walk_stop", "walk_start", "attack")
    rare = ("mix", "pick", "direction")
    for k, (i, inst) in enumerate(extras):                # a start of every kind of stack (10, 11, 13: 3%)
        kind = rare[(k // REAL_CYCLE) % 3] if k % REAL_CYCLE == 0 else starts[k % len(starts)]
        crowd._do(kind, inst, (i % 9) * 0.45, i, 0.0)
        if k % REAL_CYCLE:                                # and a second change over it
            crowd._do("gait_target" if i % 2 else "hit", inst, (i % 7) * 0.5, i, 0.0)
    player.flush()
    crowd._index_rows()                                   # the extras' rows, read once as they join
    for k, (a, b) in enumerate(pairs):
        pair = (names[a], names[b])
        fight = Fight(game if len(pairs) == 1 and n == 2 else _PairView(game, pair), idle_existing=False)
        fight.controllers.append(FighterAI(pair[0], pair[1], seed=seed * 7919 + 2 * k))
        fight.controllers.append(FighterAI(pair[1], pair[0], seed=seed * 7919 + 2 * k + 1))
        crowd.fights.append(fight)
    if crowd.fights and n > 2:                            # one 0x2c handler routes to the pairs
        held_open = game.ctx.handlers[int(EventType.HELD_OPEN)]
        for fight in crowd.fights:
            held_open.remove(fight._on_window)
            for nm in fight.game.names:
                crowd.router.by_entity[game.names[nm]] = fight
        if not held_open:                                 # (no type left without a handler)
            del game.ctx.handlers[int(EventType.HELD_OPEN)]
        game.on_rows(EventType.HELD_OPEN, crowd.router)
    game.on_rows((EventType.SOUND, EventType.NAMED_EFFECT, EventType.HELD_CLOSE), crowd.listener)
    game.ctx.actions.append(crowd)
    game.crowd = crowd
    return game


def build_crowd(n: int, crowd: str = "light", engine: str = "compiled", seed: int = 1, threads: int = 1):
    """A Game with ``n`` humans running the bench's ``crowd`` (CROWDS): the light crowd
    (a representative stack) or the realistic one, on ``engine`` ("compiled",
    or "reference": the plain-Python model), its step and pose on ``threads`` threads
    (PlayerOptions.threads). Rejected: an unknown crowd (ValueError naming it)."""
    if crowd not in CROWDS:
        raise ValueError(f"crowd: {crowd!r} is not one of {', '.join(CROWDS)}")
    return _build(n, engine, threads) if crowd == "light" else _build_realistic(n, engine, seed, threads)


def crowd_checksum(game) -> str:
    """A digest of the crowd's state after a run (per human: held flags, playing id, the
    stack's task types and anim ids, the queue, the body; the commands, events and fight
    counts): two runs of the same crowd, size and seed give the same digest."""
    import hashlib

    h = hashlib.sha256()
    for name, _ in game.humans():
        inst = game.instance(name)
        b = game.body(name)
        h.update(repr((name, inst.record.flags, inst.record.anim_id,
                       [(int(t.type), t.anim_id()) for t in inst.stack], len(inst.queue),
                       b.position.tolist(), float(b.heading))).encode())
    crowd = getattr(game, "crowd", None)
    if crowd is not None:
        h.update(repr((crowd.commands, crowd.refused, sorted(crowd.listener.counts.items()),
                       [(f.stats.grabs, f.stats.strikes, f.stats.throws, f.stats.damage) for f in crowd.fights]
                       )).encode())
    return h.hexdigest()


# the compiled kernels: anim.engine.kernels' (the step, the pose, the plan, the flush's releases and
# anim ids), then systems.motion's root motion (last: _patch_kernels wraps it there)
KERNELS = ("step_stacks", "pose_stacks", "pose_plan", "flush_release", "flush_anim_ids", "root_motion_step")
# the command path's compiled calls (anim.engine.cmdkernel), timed through the entry points the
# player keeps once a first call typed them (anim.playback.prepared, anim.playback.batched): the
# command buffer's write, a long command's rows, a batch's checks and gait targets, the handle
# calls' three writers
COMMAND_KERNELS = ("apply_commands", "run_rows", "buffer_commands", "gait_targets", "clip_rows", "gait_rows",
                   "change_rows")
# the kernels a fresh install's first step may compile (step_lean and pose_lean: step_stacks and
# pose_stacks without their rare paths, anim.engine.coldstart.lean_first_step, lean_first_pose)
FIRST_STEP_KERNELS = ("step_stacks", "step_lean", "pose_stacks", "pose_lean") + KERNELS[2:]
FIGHT_STAGE = "fight rules (pairs, AI)"
COMMAND_STAGE = "commands"


def _timed_call(fn, sink: dict, key: str, calls: dict | None = None, cpu: dict | None = None):
    """``fn`` wrapped to add its wall time to ``sink[key]`` (its CPU time to ``cpu[key]``,
    and count its calls)."""
    clock, cpu_clock = time.perf_counter, time.process_time

    def call(*a, **k):
        c0 = cpu_clock() if cpu is not None else 0.0
        t0 = clock()
        r = fn(*a, **k)
        sink[key] = sink.get(key, 0.0) + clock() - t0
        if cpu is not None:
            cpu[key] = cpu.get(key, 0.0) + cpu_clock() - c0
        if calls is not None:
            calls[key] = calls.get(key, 0) + 1
        return r
    return call


def _nothing() -> None:
    """An empty call (``_timer_costs``)."""


def _timer_costs(n: int = 4000, rounds: int = 3) -> tuple[float, float, float]:
    """What a timer (``_timed_call`` with its counts) costs: the wall and CPU seconds its
    own clock readings add to one call's figure, and the CPU seconds it adds to the
    update around the call (a timed empty call over a bare one); each the least of
    ``rounds`` rounds of ``n`` calls."""
    clock = time.process_time
    best = (float("inf"), float("inf"))
    whole = float("inf")
    for _ in range(rounds):
        sink: dict = {}
        cpu: dict = {}
        timed = _timed_call(_nothing, sink, "empty", {}, cpu)
        c0 = clock()
        for _ in range(n):
            timed()
        c1 = clock()
        for _ in range(n):
            _nothing()
        c2 = clock()
        best = min(best, (sink["empty"] / n, cpu["empty"] / n), key=lambda wc: wc[1])
        whole = min(whole, ((c1 - c0) - (c2 - c1)) / n)
    return best[0], best[1], max(0.0, whole)


def _timer_cost(n: int = 4000, rounds: int = 3) -> tuple[float, float]:
    """The wall and CPU seconds that ``_timed_call``'s own clock readings add to one call's
    figure (``_timer_costs``)."""
    return _timer_costs(n, rounds)[:2]


def _python_pass(game, updates: int) -> float:
    """Python outside the kernels (``python_cpu_ms``), from ``updates`` updates of a pass
    of its own with the compiled calls alone timed (``_patch_kernels``, as the stage pass
    times them; no system's timer): the pass's CPU less the kernels', a timer's own cost
    taken out of each (``_timer_costs``: what it adds to the update, from the pass; what
    its clock readings add to the call's figure, from the kernels'). Both terms come from
    the same updates, so a machine whose speed moves between passes moves them alike."""
    kernels: dict[str, float] = {}
    calls: dict[str, int] = {}
    cpu: dict[str, float] = {}
    saved = _patch_kernels(kernels, calls, cpu, game.player.batch)
    clock = time.process_time
    try:
        c0 = clock()
        for _ in range(updates):
            game.step()
        total = clock() - c0
    finally:
        _unpatch(saved)
    n = sum(calls.values())
    _, inside, whole = _timer_costs()
    python = (total - n * whole) - (sum(cpu.values()) - n * inside)
    return round(max(0.0, python) * 1000.0 / updates, 4)


def _patch_kernels(sink: dict, calls: dict, cpu: dict, batch=None) -> list:
    """Time the compiled kernels alone, as the engine calls them: the step, the pose and
    the flush's two through the engine's trusted calls (``batch._step_kernel``,
    ``_pose_kernel``, ``_flush_release``, ``_flush_anim_ids``; anim.engine.trusted: the compiled
    entry point once the dispatcher typed the arguments), the plan through anim.engine.kernels and
    root motion through systems.motion (the module attributes they are called by); each is
    wrapped for the run; returns what ``_unpatch`` puts back."""
    from scuffle.anim.engine import kernels as K
    from scuffle.systems import motion

    saved = []
    trusted = {"step_stacks": "_step_kernel", "pose_stacks": "_pose_kernel", "flush_release": "_flush_release",
               "flush_anim_ids": "_flush_anim_ids"}
    targets = [(batch, trusted[n]) if batch is not None and n in trusted else (K, n) for n in KERNELS[:-1]]
    targets.append((motion, "root_motion_step"))
    for mod, name in targets:
        fn = getattr(mod, name)
        saved.append((mod, name, fn))
        key = next((k for k, v in trusted.items() if v == name), name)
        setattr(mod, name, _timed_call(fn, sink, key, calls, cpu))
    if batch is not None:               # on threads: the chunks' calls and their merge, as one
        for name, key in (("_step_chunks", "step_stacks"), ("_pose_chunks", "pose_stacks")):
            fn = getattr(batch, name)
            saved.append((batch, name, fn))
            setattr(batch, name, _timed_call(fn, sink, key, calls, cpu))
        fn = motion._motion_chunks       # root motion's chunks on threads, as one
        saved.append((motion, "_motion_chunks", fn))
        motion._motion_chunks = _timed_call(fn, sink, "root_motion_step", calls, cpu)
        saved += _patch_command_kernels(batch.player, sink, calls, cpu)
    return saved


def _patch_command_kernels(player, sink: dict, calls: dict, cpu: dict) -> list:
    """Time the command path's compiled calls (COMMAND_KERNELS) through the entry points
    ``player`` keeps: those typed already (a kernel first called later runs untimed, its
    time counted as Python). Returns what ``_unpatch`` puts back."""
    prepared, columns = player.prepared, player.columns
    slots = [(prepared, "_apply_entry", "apply_commands"), (prepared, "_cmd_entry", "run_rows"),
             (columns, "_entry_fn", "buffer_commands"), (columns, "_targets_fn", "gait_targets")]
    slots += [(prepared._direct_entry, name, name) for name in ("clip_rows", "gait_rows", "change_rows")]
    saved = []
    for owner, name, key in slots:
        fn = owner.get(name) if owner.__class__ is dict else getattr(owner, name)
        if fn is None:
            continue
        saved.append((owner, name, fn))
        _put(owner, name, _timed_call(fn, sink, key, calls, cpu))
    return saved


def _put(owner, name: str, fn) -> None:
    """``fn`` as ``owner``'s ``name``: a dict's entry, else an attribute."""
    if owner.__class__ is dict:
        owner[name] = fn
    else:
        setattr(owner, name, fn)


def _unpatch(saved: list) -> None:
    for owner, name, fn in saved:
        _put(owner, name, fn)


def _install_stage_timers(game, stages: dict, stages_cpu: dict, kernels: dict, kernels_cpu: dict,
                          kernel_calls: dict, compiled: bool) -> tuple[list, list]:
    """Wrap every system's ``process``, the task step and the pose, the kernels (compiled)
    and the realistic crowd's fight rules to time them (the second pass of ``_run``);
    returns the systems' names and what ``_unpatch`` puts back of the kernels."""
    from scuffle.game.runtime.schedule import SCHEDULE

    player = game.player
    with game.active():
        import esper
        procs = [esper.get_processor(system) for system in SCHEDULE]     # public API only
    names = []
    for p in procs:
        if p is not None:
            _Timed(p, stages, type(p).__name__, stages_cpu)   # wraps p.process in place
            names.append(type(p).__name__)
    # split the animation step into the task step and the pose (sample, blend, bones)
    player.step = _timed_call(player.step, stages, "task step", cpu=stages_cpu)
    player.pose = _timed_call(player.pose, stages, POSE_STAGE, cpu=stages_cpu)
    saved = _patch_kernels(kernels, kernel_calls, kernels_cpu, player.batch) if compiled else []
    real = getattr(game, "crowd", None)
    if real is not None:                  # the fight rules' own time (in the actions and state update)
        ctx = game.ctx
        from scuffle.game.fighters.fightstates import FightGroup

        mine = set(map(id, real.fights))
        for lst in (ctx.actions, ctx.state_functions):
            for k, fn in enumerate(lst):
                # a fight's own action or state function, or a group running several fights' as one
                if id(getattr(fn, "__self__", None)) in mine or (
                        isinstance(fn, FightGroup) and any(id(f) in mine for f in fn.fights)):
                    lst[k] = _timed_call(fn, stages, FIGHT_STAGE, cpu=stages_cpu)
        for t, hs in ctx.handlers.items():
            ctx.handlers[t] = [_timed_call(h, stages, FIGHT_STAGE, cpu=stages_cpu)
                               if getattr(h, "__self__", None) in real.fights else h for h in hs]
        ctx.row_handlers[:] = [(t, _timed_call(h, stages, FIGHT_STAGE, cpu=stages_cpu) if h is real.router else h)
                               for t, h in ctx.row_handlers]
    return names, saved


def _run(n: int, updates: int, engine: str = "compiled", warmup: int = 5, crowd: str = "light", seed: int = 1,
         settle: bool = True, stage_pass: bool = True, threads: int = 1, layout: bool = False,
         fight_updates: int = 0):
    """Build the crowd, warm it up, settle the collector, then time ``updates`` whole
    updates with nothing of the bench's inside them (the per-update figures, the
    collector's, and every figure of the crowd's state: the checksum, the counts, the
    stack shapes, the pool's leak), then (``stage_pass``) ``updates`` more with the
    compiled calls alone timed (Python outside the kernels: ``_python_pass``, one thread)
    and ``updates`` more with every system, stage and kernel wrapped by a timer (their
    shares and ms: each timer costs about a microsecond, which the first pass's figures
    do not carry); with ``layout``
    (compiled, one thread) last the kernels on the crowd's rows as they lie and
    renumbered into walk order (game.tools.layout.layout_pass: ``layout``). At 2 humans,
    ``fight_updates`` more whole updates after the first pass's figures (``_fight_pass``:
    the fighters goal's figure)."""
    compiled = engine == "compiled"
    game = build_crowd(n, crowd, engine, seed, threads)
    player = game.player
    saved: list = []
    frozen = None
    import gc
    try:
        for _ in range(warmup):
            game.step()
        # the world loaded: out of the collector's sight, as a game does after a level load
        # (scuffle.settle, gc.freeze; --no-settle times the collector without it)
        frozen = settle_collector() if settle else None
        real = getattr(game, "crowd", None)
        if real is not None:
            real.commands = real.command_timed = real.batch_timed = real.batch_rows = real.empty_n = 0
            real.command_s = real.command_cpu_s = real.batch_s = real.batch_cpu_s = real.batch_call_cpu_s = 0.0
            real.empty_s = real.empty_cpu_s = 0.0
            for v in real.by_kind.values():
                v[:] = [0, 0.0, 0.0, 0]
            for v in real.by_kind_handles.values():
                v[:] = [0, 0.0, 0.0]
        times, cpu = [], []
        shapes: dict[tuple, int] = {}
        batch = player.batch if compiled else None
        pairs0 = batch.pair_changes if batch is not None else 0
        gc_s = [0.0, 0.0, 0.0, 0.0]          # wall total, wall start, CPU total, CPU start

        def gc_clock(phase, info):
            if phase == "start":
                gc_s[1] = time.perf_counter()
                gc_s[3] = time.process_time()
            else:
                gc_s[0] += time.perf_counter() - gc_s[1]
                gc_s[2] += time.process_time() - gc_s[3]

        gc_per: list[float] = []
        gc.callbacks.append(gc_clock)
        try:                                 # the first pass: whole updates, untouched
            for _ in range(updates):
                g0 = gc_s[0]
                c0 = time.process_time()
                t0 = time.perf_counter()
                game.step()
                times.append((time.perf_counter() - t0) * 1000.0)
                cpu.append((time.process_time() - c0) * 1000.0)
                gc_per.append((gc_s[0] - g0) * 1000.0)
        finally:
            gc.callbacks.remove(gc_clock)
        extra: dict[str, Any] = {"gc_settled": frozen,
                                 "gc_ms_per_update": round(gc_s[0] * 1000.0 / updates, 4),
                                 "gc_max_ms": round(max(gc_per), 4),
                                 "gc_share": round(gc_s[0] * 1000.0 / max(sum(times), 1e-12), 4),
                                 "gc_cpu_ms_per_update": round(gc_s[2] * 1000.0 / updates, 4),
                                 "gc_cpu_share": round(gc_s[2] * 1000.0 / max(sum(cpu), 1e-12), 4),
                                 "crowd": crowd}
        if batch is not None:
            extra["gait_pair_changes_per_update"] = round((batch.pair_changes - pairs0) / updates, 3)
        command_cpu_ms = command_s = None
        if real is not None:                 # the crowd after the first pass (its state, its commands)
            made, timed, spent = real.commands, real.command_timed, real.command_s
            b_n = real.batch_timed
            hk = real.by_kind_handles
            h_n = sum(v[0] for v in hk.values())
            # the commands' stage: every command, the handle API's sample included
            command_cpu_ms = round((real.command_cpu_s + real.batch_cpu_s + sum(v[2] for v in hk.values()))
                                   * 1000.0 / updates, 4)
            command_s = spent + real.batch_s + sum(v[1] for v in hk.values())
            extra.update({
                "commands_per_update": round(made / updates, 3),
                "command_us": round(real.batch_s * 1e6 / b_n, 3) if b_n else None,
                "command_cpu_us": round(real.batch_cpu_s * 1e6 / b_n, 3) if b_n else None,
                "command_cpu_us_batch_call": (round(real.batch_call_cpu_s * 1e6 / real.batch_rows, 3)
                                              if real.batch_rows else None),
                "command_us_single": round(spent * 1e6 / timed, 3) if timed else None,
                "command_cpu_us_single": round(real.command_cpu_s * 1e6 / timed, 3) if timed else None,
                "command_cpu_us_empty": round(real.empty_cpu_s * 1e6 / real.empty_n, 3) if real.empty_n else None,
                "command_us_by_kind": {k: round(v[1] * 1e6 / max(1, v[3]), 3) for k, v in real.by_kind.items()},
                "command_cpu_us_by_kind": {k: round(v[2] * 1e6 / max(1, v[3]), 3) for k, v in real.by_kind.items()},
                "commands_by_kind": {k: v[0] for k, v in real.by_kind.items()},
                "command_cpu_us_handles": round(sum(v[2] for v in hk.values()) * 1e6 / h_n, 3) if h_n else None,
                "command_cpu_us_handles_by_kind": {k: round(v[2] * 1e6 / max(1, v[0]), 3) for k, v in hk.items()},
                "commands_by_handles": h_n,
                "commands_refused": real.refused,
                "events_handled": {f"0x{t:02x}": c for t, c in sorted(real.listener.counts.items())},
                "fight_pairs": len(real.fights),
                "fight_counts": {k: sum(getattr(f.stats, k) for f in real.fights)
                                 for k in ("strikes", "grabs", "throws", "damage")},
                "state_checksum": crowd_checksum(game)})
        for name, _ in game.humans()[: min(n, 200)]:
            key = tuple(int(t.type) for t in game.instance(name).stack)
            shapes[key] = shapes.get(key, 0) + 1
        insts = [game.instance(nm) for nm, _ in game.humans()]
        leak = player.pool.in_use - player.tasks_out(insts)
        if n == 2 and fight_updates > 0:
            extra.update(_fight_pass(game, fight_updates))
        extra.update(_join_leave(game))
        # (one thread: on more, the pose's other chunks run beside the step's Python, outside any kernel's timer)
        python_ms = _python_pass(game, updates) if stage_pass and batch is not None and threads <= 1 else None
        # the second pass: the same number of updates on from there, every stage timed
        stages: dict[str, float] = {}
        stages_cpu: dict[str, float] = {}
        kernels: dict[str, float] = {}
        kernels_cpu: dict[str, float] = {}
        kernel_calls: dict[str, int] = {}
        names: list[str] = []
        if stage_pass:
            names, saved = _install_stage_timers(game, stages, stages_cpu, kernels, kernels_cpu, kernel_calls,
                                                 compiled)
            timed_cpu = 0.0
            try:
                for _ in range(updates):
                    c0 = time.process_time()
                    game.step()
                    timed_cpu += time.process_time() - c0
            finally:
                _unpatch(saved)
                saved = []
            # the update's mean CPU with every timer inside it (what the stage shares add up to)
            extra["stage_pass_cpu_ms_mean"] = round(timed_cpu * 1000.0 / updates, 4)
            # the stage pass's figures as they are: the systems' timers stay installed (the
            # Game is closed after the run) and would go on counting the flush pass's updates
            kept = [(d, dict(d)) for d in (stages, stages_cpu, kernels, kernels_cpu, kernel_calls)]
            extra["flush_cpu_ms"] = _flush_pass(game, updates)
            for d, was in kept:
                d.clear()
                d.update(was)
        extra["stage_cpu_ms"] = {k: round(v * 1000.0 / updates, 4)
                                 for k, v in sorted(stages_cpu.items(), key=lambda kv: -kv[1])}
        if command_cpu_ms is not None and command_s is not None:      # the commands: the first pass's own timing
            extra["stage_cpu_ms"][COMMAND_STAGE] = command_cpu_ms
            stages[COMMAND_STAGE] = command_s
        if batch is not None:
            every = KERNELS + COMMAND_KERNELS
            if stage_pass:
                # the command path's calls are many and short: their timers' own clock
                # readings taken out (``_timer_cost``), which would count as kernel time
                wall_each, cpu_each = _timer_cost()
                for k in COMMAND_KERNELS:
                    if kernel_calls.get(k):
                        kernels[k] = max(0.0, kernels[k] - kernel_calls[k] * wall_each)
                        kernels_cpu[k] = max(0.0, kernels_cpu[k] - kernel_calls[k] * cpu_each)
                extra["timer_cpu_us"] = round(cpu_each * 1e6, 3)
            extra["kernel_ms"] = {k: round(kernels.get(k, 0.0) * 1000.0 / updates, 4) for k in every}
            extra["kernel_calls"] = {k: kernel_calls.get(k, 0) for k in every}
            extra["pose_stacks_us_per_human"] = round(kernels.get("pose_stacks", 0.0) * 1e6 / (updates * n), 4)
            extra["step_stacks_us_per_human"] = round(kernels.get("step_stacks", 0.0) * 1e6 / (updates * n), 4)
            extra["kernel_cpu_ms"] = {k: round(kernels_cpu.get(k, 0.0) * 1000.0 / updates, 4) for k in every}
            extra["pose_stacks_cpu_us_per_human"] = round(kernels_cpu.get("pose_stacks", 0.0) * 1e6 / (updates * n), 4)
            if python_ms is not None:
                extra["python_cpu_ms"] = python_ms
        if frozen is not None:
            gc.unfreeze()                    # the next run's world is another one (the snapshots: unsettled, as before)
            frozen = None
        if compiled:
            # the run's own peak first: the snapshots measured next hold copies of the tables
            extra["run_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
            extra.update(_snapshot_costs(game))
            if n <= 2:
                extra.update(_rollback_costs(game))
            if layout:
                from scuffle.game.tools.layout import layout_pass
                extra["layout"] = layout_pass(game)
        total = sum(stages.get(nm, 0.0) for nm in names)
        return times, cpu, stages, total, shapes, leak, extra
    finally:
        _unpatch(saved)
        if frozen is not None:
            gc.unfreeze()                    # the next run's world is another one
        game.close()


JOIN_LEAVE_TRIALS = 12                # pairs of a steady update and one after a join and a leave (even:
                                      # as many of each on even updates as on odd ones, _join_leave)


def _join_leave(game, trials: int = JOIN_LEAVE_TRIALS, clock=time.process_time) -> dict:
    """The update after one human joins and one leaves, against a steady update (CPU,
    medians over ``trials`` pairs): each pair times one update, then adds a human (on the
    first human's anim set, standing apart) and removes the one the pair before added, then
    times the next update. Every second pair starts one untimed update later, so that the
    steady and the after updates each fall on even and odd updates alike: the realistic
    crowd issues its commands as one batch on even updates and one call each on odd ones
    (RealisticCrowd), which a pair always on the same two would compare instead of the join
    and the leave. ``join_leave_ratio`` the after over the steady;
    ``join_leave_after_cpu_ms``, ``join_leave_steady_cpu_ms``, ``join_leave_calls_cpu_us``
    (the add_human and remove_human calls themselves) and ``join_leave_even_share`` (the
    share of the timed updates that were even: one half for an even ``trials``), read on
    ``clock``. The Game's crowd is as it was after (the last newcomer removed)."""
    first = game.humans()[0][0]
    aset = game.instance(first).anim_set
    name = "bench-join-0"
    game.add_human(name, aset, (0.0, -1000.0, 0.0), 0.0)
    game.step()
    steady, after, calls = [], [], []
    even = 0
    for k in range(1, trials + 1):
        if k % 2 == 0:
            game.step()                                   # (this pair on the other parity)
        even += game.ctx.updates_run % 2 == 0
        c0 = clock()
        game.step()
        steady.append(clock() - c0)
        c0 = clock()
        game.add_human(f"bench-join-{k}", aset, (float(k), -1000.0, 0.0), 0.0)
        game.remove_human(name)
        calls.append(clock() - c0)
        name = f"bench-join-{k}"
        even += game.ctx.updates_run % 2 == 0
        c0 = clock()
        game.step()
        after.append(clock() - c0)
    game.remove_human(name)
    game.step()
    s, a = median(steady) * 1000.0, median(after) * 1000.0
    return {"join_leave_steady_cpu_ms": round(s, 4), "join_leave_after_cpu_ms": round(a, 4),
            "join_leave_ratio": round(a / s, 3) if s > 0 else None,
            "join_leave_calls_cpu_us": round(median(calls) * 1e6, 2),
            "join_leave_even_share": round(even / (2 * trials), 4) if trials else None}


FIGHT_UPDATES = 3000                  # the 2 fighters' long pass (_fight_pass): 100 s of a fight


def _fight_pass(game, updates: int) -> dict:
    """The 2 fighters' mean CPU per update over ``updates`` more updates, timed whole (the
    fighters goal's figure, ``fight_cpu_ms_mean``; its median and p90 beside): the fight's
    approaches, strikes, grabs, throws and get-ups in their share, where the first pass's
    few updates hold the fight's first seconds (its approach, each move's first use).
    ``fight_updates`` the number timed."""
    clock = time.process_time
    cpu = []
    for _ in range(updates):
        c0 = clock()
        game.step()
        cpu.append(clock() - c0)
    ms = np.array(cpu) * 1000.0
    return {"fight_updates": updates, "fight_cpu_ms_mean": round(float(ms.mean()), 4),
            "fight_cpu_ms_median": round(float(np.median(ms)), 4),
            "fight_cpu_ms_p90": round(float(np.percentile(ms, 90)), 4)}


def _flush_pass(game, updates: int) -> float | None:
    """The flush's own CPU per update (the goal's figure): ``updates`` more updates with one
    timer around DeferredFlush and none inside it (the stage pass times the flush's kernel
    calls too, about 17 an update at 10,000, each timer about 2 µs of clock reads); None
    when the schedule has no DeferredFlush."""
    from scuffle.game.runtime.schedule import SCHEDULE
    from scuffle.systems.flush import DeferredFlush

    if DeferredFlush not in SCHEDULE:
        return None
    with game.active():
        import esper
        proc = esper.get_processor(DeferredFlush)
    if proc is None:
        return None
    outer = proc.process
    inner = outer
    while isinstance(inner, _Timed):                 # the stage pass's timer: left out
        inner = inner._orig
    cpu = [0.0]
    clock = time.process_time

    def timed(*a, **k):
        c0 = clock()
        inner(*a, **k)
        cpu[0] += clock() - c0

    proc.process = timed
    try:
        for _ in range(updates):
            game.step()
    finally:
        proc.process = outer
    return round(cpu[0] * 1000.0 / updates, 4)


SNAPSHOT_REPEATS = 15                # at least this many rounds of snapshot, restore and new snapshot
FILE_ROUNDS = 31                     # a snapshot file's round trips after the rollback loop (file_cpu_us)
SNAPSHOT_BUDGET_S = 0.05             # and more, up to SNAPSHOT_MAX_REPEATS, while they take less CPU than this
SNAPSHOT_MAX_REPEATS = 400


def _snapshot_costs(game, repeats: int = SNAPSHOT_REPEATS, budget_s: float = SNAPSHOT_BUDGET_S,
                    most: int = SNAPSHOT_MAX_REPEATS) -> dict:
    """The CPU cost of saving and restoring the whole Game, medians over
    ``repeats`` rounds or more: rounds go on while they have taken less than ``budget_s``
    CPU s, up to ``most`` (a small Game's round is tens of µs, its first few cold: 15 of
    them give a median that moves by a fifth between runs; 10,000 humans stop at 15).
    Out: ``snapshot_cpu_us`` a snapshot written over an older one (a rollback ring:
    Game.snapshot(reuse=)), ``restore_cpu_us`` its restore, their sum
    ``snapshot_restore_cpu_us`` (the goal's figure), ``snapshot_new_cpu_us`` a
    snapshot into new memory, ``snapshot_mb`` the arrays one holds and
    ``snapshot_rounds`` the rounds measured. The Game is left in the state it was in."""
    clock = time.process_time
    ring = [game.snapshot(), game.snapshot()]
    take, back, new = [], [], []
    start = clock()
    i = 0
    while i < repeats or (i < most and clock() - start < budget_s):
        c0 = clock()
        s = ring[i % 2] = game.snapshot(reuse=ring[i % 2])
        c1 = clock()
        game.restore(s)
        c2 = clock()
        fresh = game.snapshot()
        c3 = clock()
        del fresh
        take.append(c1 - c0)
        back.append(c2 - c1)
        new.append(c3 - c2)
        i += 1
    med = lambda xs: sorted(xs)[len(xs) // 2] * 1e6          # noqa: E731
    return {"snapshot_cpu_us": round(med(take), 2), "restore_cpu_us": round(med(back), 2),
            "snapshot_restore_cpu_us": round(med([a + b for a, b in zip(take, back)]), 2),
            "snapshot_new_cpu_us": round(med(new), 2), "snapshot_mb": round(ring[0].nbytes / 1e6, 2),
            "snapshot_rounds": i}


def _rollback_costs(game, updates: int = 240, depth: int = 8) -> dict:
    """Snapshots and restores as a rollback session makes them (CPU): after every update a
    snapshot into a ring of ``depth`` + 1 (Game.snapshot(reuse=)), and every ``depth``
    updates a restore of the one ``depth`` back and a replay of those updates, each
    followed by its snapshot again. Out: ``rollback_snapshot_cpu_us`` and
    ``rollback_restore_cpu_us`` (means), their sum ``rollback_cpu_us`` (the goal's figure:
    one snapshot and one restore), ``file_cpu_us``: a snapshot's ``to_bytes``, then
    ``Snapshot.from_bytes`` and a restore from it (the goal's sum; median of FILE_ROUNDS),
    ``file_snapshot_cpu_us``: the ``Game.snapshot()`` taken before each (median), and ``checksum_cpu_us``:
    ``Game.checksum()`` after an update, as a netplay peer checks for a desync (median of
    15). The Game goes on from where it was (the updates run here are part of its run)."""
    from scuffle.game.runtime.snapshot import Snapshot
    clock = time.process_time
    ring: list = [None] * (depth + 1)
    snaps, backs = [], []

    def step_and_save() -> None:
        game.step()
        k = game.update % len(ring)
        c0 = clock()
        ring[k] = game.snapshot(reuse=ring[k])
        snaps.append(clock() - c0)

    for u in range(updates):
        step_and_save()
        if u >= depth and u % depth == 0:
            back = ring[(game.update - depth) % len(ring)]
            c0 = clock()
            game.restore(back)
            backs.append(clock() - c0)
            for _ in range(depth):
                step_and_save()
    files, takes = [], []
    for _ in range(FILE_ROUNDS):
        c0 = clock()
        taken = game.snapshot()
        c1 = clock()
        game.restore(Snapshot.from_bytes(taken.to_bytes()))
        c2 = clock()
        takes.append(c1 - c0)
        files.append(c2 - c1)
    sums = []
    for _ in range(15):
        game.step()
        c0 = clock()
        game.checksum()
        sums.append(clock() - c0)
    mean = lambda xs: sum(xs) / len(xs) * 1e6 if xs else 0.0      # noqa: E731
    return {"rollback_snapshot_cpu_us": round(mean(snaps), 2), "rollback_restore_cpu_us": round(mean(backs), 2),
            "rollback_cpu_us": round(mean(snaps) + mean(backs), 2),
            "file_cpu_us": round(sorted(files)[len(files) // 2] * 1e6, 2),
            "file_snapshot_cpu_us": round(sorted(takes)[len(takes) // 2] * 1e6, 2),
            "checksum_cpu_us": round(sorted(sums)[len(sums) // 2] * 1e6, 2)}


def _pipeline_case(n: int) -> tuple:
    """The pose pipeline's work for ``n`` humans on the demo set: two clips each (times
    within their durations, rate 0.75), blended by a random weight over every bone, then
    local-to-model. Returns (pose_plan's arguments, the Bones it writes, the bank's
    tables, the per-human columns clip_a, clip_b, flags, t_a, t_b, rate, w)."""
    from scuffle.anim.engine import kernels as K
    from scuffle.anim.engine.plan import Bones, pose_tables, scratch_poses
    from scuffle.anim.engine.sampler import ClipBank
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
    tables = pose_tables(bank).tables
    args = (cols, K.PlanArrays(first_s, first_b, clip, t, rate, flags, b_a, b_b, w, mask, finals),
            tables, scratch_poses(4), out.outs())
    humans = (clip[0::2], clip[1::2], flags[0::2], t[0::2], t[1::2], rate[0::2], w)
    return args, out, tables, humans


def _pose_pipeline(n: int, repeats: int = 20) -> tuple[float, float]:
    """µs per human (wall, CPU medians) for the pose pipeline alone, compiled: two clips sampled and blended,
    then local-to-model over 34 bones, in one kernel call (the reference
    measurement of the pose's cost; the plan is built before the clock starts)."""
    from scuffle.anim.engine import kernels as K

    args = _pipeline_case(n)[0]
    K.pose_plan(*args)
    ts, cs = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        K.pose_plan(*args)
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    return median(ts) / n * 1e6, median(cs) / n * 1e6


# ---------------------------------------------------------------- the C++ anchor
ANCHOR_SOURCE = "anchor/pose_anchor.cpp"     # beside this module (package data)
ANCHOR_FLAGS = ("-O2", "-ffp-contract=off")


def _compiler() -> str | None:
    """The C++ compiler to build the anchor with: $CXX, else g++, c++ or clang++ on PATH."""
    import os
    import shutil

    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build_anchor(cache_dir: str | None = None) -> tuple[str | None, str]:
    """The anchor's program (game/tools/anchor/pose_anchor.cpp) built with the C++ compiler
    (``_compiler``) at -O2, into ``cache_dir`` (default: $XDG_CACHE_HOME/scuffle/anchor,
    or ~/.cache/scuffle/anchor), never into the source tree; built once per source and
    compiler. Returns (its path, the compiler's name and version) or (None, why not)."""
    import hashlib
    import os
    import subprocess
    from pathlib import Path

    cxx = _compiler()
    if cxx is None:
        return None, "no C++ compiler ($CXX, g++, c++ or clang++) on PATH"
    src = Path(__file__).with_name("anchor") / "pose_anchor.cpp"
    try:
        text = src.read_bytes()
    except OSError as e:
        return None, f"the anchor's source is missing ({e.strerror}: {src})"
    try:
        version = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"{cxx} --version failed: {e}"
    version = (version.splitlines() or [cxx])[0].strip()
    key = hashlib.sha256(text + version.encode() + " ".join(ANCHOR_FLAGS).encode()).hexdigest()[:16]
    base = Path(cache_dir) if cache_dir else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
        / "scuffle" / "anchor"
    exe = base / f"pose_anchor-{key}"
    if exe.exists():
        return str(exe), version
    try:
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / f".pose_anchor-{key}.{os.getpid()}"
        p = subprocess.run([cxx, *ANCHOR_FLAGS, "-o", str(tmp), str(src)], capture_output=True, text=True,
                           timeout=300)
        if p.returncode:
            return None, f"{cxx} failed: {p.stderr.strip()[-300:]}"
        os.replace(tmp, exe)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"building the anchor failed: {e}"
    return str(exe), version


def _anchor_input(path: str, tables, humans: tuple) -> None:
    """The anchor's input file (pose_anchor.cpp, read_input): the bank's tables, then the
    humans' columns."""
    clip_a, clip_b, flags, t_a, t_b, rate, w = humans
    ftab = np.ascontiguousarray(tables.ftab, np.int64)
    kval = np.ascontiguousarray(tables.kval, np.float32)
    i64 = lambda *v: np.array(v, np.int64).tobytes()          # noqa: E731
    parts = [b"SCPA", i64(len(tables.row0), ftab.shape[0], ftab.shape[1], kval.shape[0], len(clip_a)),
             np.ascontiguousarray(tables.row0, np.int64).tobytes(), np.ascontiguousarray(tables.rows, np.int64).tobytes(),
             ftab.tobytes(), kval.tobytes(), np.ascontiguousarray(tables.kslope, np.float32).tobytes(),
             np.ascontiguousarray(tables.kstart, np.float32).tobytes(),
             np.ascontiguousarray(tables.ktag, np.uint8).tobytes(), i64(tables.sent_vel, tables.sent_bone),
             np.ascontiguousarray(tables.animated, np.uint8).tobytes(),
             np.ascontiguousarray(tables.ref_rot, np.float32).tobytes(),
             np.float32(tables.bind_height).tobytes(), np.ascontiguousarray(tables.parents, np.int64).tobytes(),
             np.ascontiguousarray(tables.offsets, np.float32).tobytes()]
    parts += [np.ascontiguousarray(a, np.int64).tobytes() for a in (clip_a, clip_b, flags)]
    parts += [np.ascontiguousarray(a, np.float32).tobytes() for a in (t_a, t_b, rate, w)]
    with open(path, "wb") as f:
        f.write(b"".join(parts))


def run_anchor(n: int, repeats: int = 20, cache_dir: str | None = None) -> dict:
    """The pose pipeline (``_pipeline_case``) for ``n`` humans in the kernel (pose_plan) and
    in the C++ anchor, timed in the same run (medians of ``repeats`` passes each, CPU for
    the kernel, the anchor's own clock), and their poses compared. Returns ``built``
    (False: ``reason`` says why, and nothing else is measured), ``compiler``,
    ``cpp_ns_per_human``, ``kernel_ns_per_human``, ``ratio`` (kernel over C++; the goal
    is <= 1.0), ``max_pos_diff`` and ``max_rot_diff`` (the largest difference of a
    model-space position and rotation component)."""
    import os
    import subprocess
    import tempfile

    from scuffle.anim.engine import kernels as K

    exe, info = build_anchor(cache_dir)
    if exe is None:
        return {"built": False, "reason": info}
    args, out, tables, humans = _pipeline_case(n)
    K.pose_plan(*args)
    cs = []
    with tempfile.TemporaryDirectory(prefix="scuffle-anchor-") as d:
        src, dst = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        _anchor_input(src, tables, humans)
        for _ in range(repeats):                 # the kernel's passes, then the anchor's: one run, one machine state
            c0 = time.process_time()
            K.pose_plan(*args)
            cs.append(time.process_time() - c0)
        p = subprocess.run([exe, src, dst, str(repeats)], capture_output=True, text=True, timeout=600)
        if p.returncode:
            return {"built": True, "compiler": info, "reason": f"the anchor failed: {p.stderr.strip()[-300:]}"}
        cpp_ns = float(p.stdout.split()[0])
        got = np.fromfile(dst, np.float32)
    nb = out.pos.shape[1]
    pos = got[:n * nb * 3].reshape(n, nb, 3)
    rot = got[n * nb * 3:].reshape(n, nb, 4)
    kernel_ns = median(cs) / n * 1e9
    return {"built": True, "compiler": info, "humans": n, "cpp_ns_per_human": round(cpp_ns, 1),
            "kernel_ns_per_human": round(kernel_ns, 1), "ratio": round(kernel_ns / cpp_ns, 3) if cpp_ns else None,
            "max_pos_diff": float(np.abs(pos - out.pos.transpose(2, 1, 0)).max()),
            "max_rot_diff": float(np.abs(rot - out.rot.transpose(2, 1, 0)).max())}


def fresh_first_step(launched: float) -> dict:
    """In a fresh process with an empty NUMBA_CACHE_DIR (``_first_step``): the first step of
    2 fighters under the fight rules, timed from the process's launch (``launched``,
    time.perf_counter() in the parent: CLOCK_MONOTONIC, one clock for every process on
    Linux), numba's compile events per function (their own time.time() stamps, used only
    as differences). ``python_start_s`` is
    the interpreter's start with numpy, numba and the core imported (this module's
    imports). Where the kernels run as Python while they compile in the background
    (anim.engine.interpret; ``interpreted``), the game then goes on at 30 updates a second
    until they are compiled: ``compiled_after_s`` (wall from the launch), the median
    interpreted update (``interpreted_update_ms``, CPU), the dearest of the updates after
    it (``switch_update_ms``: numba loading the kernels from its cache) and the
    background compile's CPU (``background_cpu_s``). Else the step compiles the other big
    kernel in a child process meanwhile where it can (anim.engine.coldstart.compile_aside;
    ``compiled_aside``: the kernel, whether it came from the child, and the kernels this
    process compiled while it waited); numba's compile events are this process's (a
    kernel from the child: its load from the cache). ``first_step_cpu_s``: this process's
    CPU time to the end of the first step (its start included), ``aside_cpu_s`` the
    child's (on a loaded machine, the larger of the two is about the wall time on two
    idle cores). Prints nothing; returns the figures."""
    from scuffle.anim.engine import coldstart, interpret
    from numba.core import event as ev

    t_import = time.perf_counter()
    tier: dict = {"interpreted": False}
    with ev.install_recorder("numba:compile") as rec:
        from scuffle.game.runtime.world import Game      # noqa: F401  (the imports, timed apart)
        imported = time.perf_counter()
        game = build_crowd(2, "realistic", "compiled", 1)
        built = time.perf_counter()
        game.step()
        first = time.perf_counter()
        first_cpu = time.process_time()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        if interpret.STATE["on"]:
            tier = _until_compiled(game, launched)
        game.close()
    # inclusive and own (minus the functions compiled inside it) time per compiled function
    incl: dict[str, float] = {}
    own: dict[str, float] = {}
    stack: list[list] = []
    for ts, e in rec.buffer:
        d = e.data.get("dispatcher") if isinstance(e.data, dict) else None
        name = getattr(getattr(d, "py_func", None), "__qualname__", None) or str(d)
        if e.is_start:
            stack.append([name, ts, 0.0])
        elif stack:
            nm, t0, inner = stack.pop()
            dur = ts - t0
            incl[nm] = incl.get(nm, 0.0) + dur
            own[nm] = own.get(nm, 0.0) + dur - inner
            if stack:
                stack[-1][2] += dur
    top = sorted(own.items(), key=lambda kv: -kv[1])
    count: dict[str, int] = {}
    for _, e in rec.buffer:
        if e.is_start:
            d = e.data.get("dispatcher") if isinstance(e.data, dict) else None
            nm = getattr(getattr(d, "py_func", None), "__qualname__", None) or str(d)
            count[nm] = count.get(nm, 0) + 1
    return {"first_step_s": round(first - launched, 3),
            "first_step_cpu_s": round(first_cpu, 3),
            "aside_cpu_s": round(children.ru_utime + children.ru_stime, 3),
            "python_start_s": round(t_import - launched, 3),
            "import_s": round(imported - t_import, 3),
            "build_s": round(built - imported, 3),
            "first_step_only_s": round(first - built, 3),
            "compile_total_s": round(sum(incl.get(k, 0.0) for k in FIRST_STEP_KERNELS), 3),
            "compile_by_kernel_s": {k: round(incl.get(k, 0.0), 3) for k in FIRST_STEP_KERNELS},
            "compile_own_s": {k: round(v, 3) for k, v in top[:12]},
            "compiled_functions": len(own),
            "compiled_more_than_once": {k: v for k, v in sorted(count.items()) if v > 1},
            "compiled_aside": list(coldstart.ASIDE_LOG), **tier}


# the updates timed after the compiled kernels took over (the dearest of them: the switch's)
AFTER_COMPILED = 5


def _until_compiled(game, launched: float) -> dict:
    """A game whose kernels run as Python (anim.engine.interpret) stepped at 30 Hz
    (BUDGET_MS apart), as a host would, until they are compiled, then AFTER_COMPILED
    updates more: the figures ``fresh_first_step`` reports."""
    from scuffle.anim.engine import interpret

    cpus = []
    while interpret.on():
        c0, t0 = time.process_time(), time.perf_counter()
        game.step()
        cpus.append(time.process_time() - c0)
        time.sleep(max(0.0, BUDGET_MS / 1e3 - (time.perf_counter() - t0)))
    done = time.perf_counter()
    after = []
    for _ in range(AFTER_COMPILED):
        c0 = time.process_time()
        game.step()
        after.append(time.process_time() - c0)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"interpreted": True, "interpreted_updates": len(cpus) + 1,
            "interpreted_update_ms": round(float(np.median(cpus)) * 1e3, 3) if cpus else None,
            "compiled_after_s": round(done - launched, 3), "switch_update_ms": round(max(after) * 1e3, 3),
            "background_cpu_s": round(kids.ru_utime + kids.ru_stime, 3)}


# The first step's fresh process: a dot on the progress stream every PROGRESS_EVERY
# seconds while it compiles (10-20 s: silence that long reads as a hang), and the most
# it may take.
PROGRESS_EVERY = 2.0
FIRST_STEP_LIMIT_S = 900.0
FIRST_STEP_NOTICE = ("scuffle bench: timing the first step on a fresh install: a fresh process on an empty cache "
                     "runs its kernels as Python until the background has compiled them (about 30-60 s; "
                     "--no-compile-time skips it)")
FIRST_STEP_COMPILED_NOTICE = ("scuffle bench: timing a crowd's first step on a fresh install: a fresh process "
                              "compiles the kernels it needs into an empty cache (about 10-20 s)")


def wait_with_progress(p, progress=None, every: float = PROGRESS_EVERY,
                       limit: float = FIRST_STEP_LIMIT_S) -> tuple[str, str]:
    """Wait for the subprocess ``p`` (text pipes), writing a dot to ``progress`` every
    ``every`` seconds it runs on and, at the end, the seconds it took. Returns its
    (stdout, stderr). Past ``limit`` seconds it is killed: RuntimeError."""
    import subprocess

    start = time.perf_counter()
    while True:
        try:
            out, err = p.communicate(timeout=every)
            break
        except subprocess.TimeoutExpired:
            if time.perf_counter() - start > limit:
                p.kill()
                p.communicate()
                raise RuntimeError(f"the fresh process took more than {limit:g} s") from None
            if progress is not None:
                print(".", end="", file=progress, flush=True)
    if progress is not None:
        print(f" {time.perf_counter() - start:.1f} s", file=progress, flush=True)
    return out, err


def _first_step(progress=None, interpreted: bool = True) -> dict:
    """The first step on a fresh install: a fresh process on an empty cache, its kernels
    run as Python while they compile in the background where a host of a few humans
    would (``interpreted``), else compiled at once, as a crowd's first step does
    (SCUFFLE_INTERPRET=0); ``progress`` (a text stream) gets a line before it and dots
    while it runs."""
    import os
    import subprocess
    import sys
    import tempfile

    from scuffle.anim.engine import coldstart, interpret

    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d, **{coldstart.REST_ENV: "1"})
        env[interpret.ENV] = "1" if interpreted else "0"
        code = ("import json, sys; from scuffle.game.tools.bench import fresh_first_step; "
                "print(json.dumps(fresh_first_step(float(sys.argv[1]))))")
        if progress is not None:
            print(FIRST_STEP_NOTICE if interpreted else FIRST_STEP_COMPILED_NOTICE, end=" ", file=progress,
                  flush=True)
        p = subprocess.Popen([sys.executable, "-c", code, repr(time.perf_counter())], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        out, err = wait_with_progress(p, progress)
        if p.returncode:
            raise RuntimeError(f"compiling the kernels failed: {err.strip()[-500:]}")
        return json.loads(out.strip().splitlines()[-1])


def resident_mb() -> tuple[float, float]:
    """This process's resident set now and its peak (MB): VmRSS and VmHWM of
    /proc/self/status on Linux (the peak of this program's own memory: a child's
    ``ru_maxrss`` also carries the parent's resident set when it was started from it);
    elsewhere ``ru_maxrss`` for both."""
    try:
        now = peak = None
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    now = int(line.split()[1]) / 1024.0
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024.0
        if now is not None and peak is not None:
            return now, peak
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return kb, kb


def crowd_memory(n: int, updates: int, crowd: str = "light", seed: int = 1, threads: int = 1,
                 settle: bool = True, warmup: int = 5) -> dict:
    """The memory of a game running ``n`` humans of ``crowd``, measured in this process
    (run it in a fresh one: ``_crowd_memory``): the kernels loaded (``scuffle.warm``, a
    game's loading screen), the crowd built, ``warmup`` updates, the collector settled
    (``settle``), ``updates`` updates. Out (MB): ``crowd_peak_mb`` the peak resident set
    (the memory goal's figure), ``imports_mb`` the resident set after the imports,
    ``kernels_mb`` after the kernels' load (both before any human), ``crowd_end_mb`` at
    the end; ``scipy_loaded``: whether scipy's package is in the process (numba's import
    loads it where it is installed, a few modules); ``scipy_linalg_loaded``: whether its
    linear algebra is (about 17 MB, which numba's first compiled call would load for its
    BLAS check, and anim/engine/numbastart.py keeps out: docs/performance.md). Nothing
    of the bench's timing harness is in it."""
    import sys

    from scuffle.anim.playback.warmup import warm

    imports = resident_mb()[0]
    warm()
    kernels = resident_mb()[0]
    game = build_crowd(n, crowd, "compiled", seed, threads)
    frozen = None
    try:
        for _ in range(warmup):
            game.step()
        frozen = settle_collector() if settle else None
        for _ in range(updates):
            game.step()
        end, peak = resident_mb()
    finally:
        if frozen is not None:
            import gc
            gc.unfreeze()
        game.close()
    return {"crowd_peak_mb": round(peak, 1), "imports_mb": round(imports, 1), "kernels_mb": round(kernels, 1),
            "crowd_end_mb": round(end, 1), "scipy_loaded": sys.modules.get("scipy") is not None,
            "scipy_linalg_loaded": sys.modules.get("scipy.linalg") is not None}


def _crowd_memory(n: int, updates: int, crowd: str, seed: int, threads: int, settle: bool) -> dict | None:
    """``crowd_memory`` in a fresh process (its peak is the crowd's alone: none of this
    process's pose pipeline, C++ anchor, timers or reference run); None when it failed."""
    import subprocess
    import sys

    code = ("import json, sys; from scuffle.game.tools.bench import crowd_memory; "
            "a = sys.argv[1:]; print(json.dumps(crowd_memory(int(a[0]), int(a[1]), a[2], int(a[3]), int(a[4]), "
            "a[5] == '1')))")
    p = subprocess.run([sys.executable, "-c", code, str(n), str(updates), crowd, str(seed), str(threads),
                        "1" if settle else "0"], capture_output=True, text=True, timeout=FIRST_STEP_LIMIT_S)
    if p.returncode:
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_bench(humans: int, updates: int, scalar_updates: int | None = None, crowd: str = "light",
              seed: int = 1, settle: bool = True, threads: int = 1, memory: bool = True, layout: bool = False,
              fight_updates: int = FIGHT_UPDATES) -> dict:
    """Run the benchmark for one crowd size; returns the report dict (module docstring);
    ``settle`` calls scuffle.settle after the build and the warm-up (``gc_settled``: the
    objects it froze); ``threads`` the compiled engine's (PlayerOptions.threads; the
    reference engine runs on one); ``memory`` also runs the crowd alone in a fresh
    process for its peak memory (``crowd_memory``: a few seconds more); ``layout`` also
    times the kernels on the crowd's rows renumbered into walk order (``layout``:
    game.tools.layout); ``fight_updates`` the 2 fighters' long pass (``_fight_pass``; 0:
    none, and the fighters goal reads the first pass's mean). Rejected: an unknown crowd
    (ValueError naming it)."""
    from scuffle.anim.playback.warmup import compile_kernels

    if crowd not in CROWDS:
        raise ValueError(f"crowd: {crowd!r} is not one of {', '.join(CROWDS)}")
    t0 = time.perf_counter()
    compile_kernels()                 # loads the cached kernels (compiles on a first run)
    load_s = time.perf_counter() - t0
    pose_us, pose_cpu_us = _pose_pipeline(max(humans, 1000))
    anchor = run_anchor(max(humans, 1000))
    times, cpu, stages, total, shapes, leak, extra = _run(humans, updates, "compiled", crowd=crowd, seed=seed,
                                                          settle=settle, threads=threads, layout=layout,
                                                          fight_updates=fight_updates)
    compiled_peak_mb = extra.pop("run_peak_mb", None) or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    crowd_mb = _crowd_memory(humans, updates, crowd, seed, threads, settle) if memory else None
    scalar_updates = scalar_updates if scalar_updates is not None else max(3, min(updates, 2000 // max(1, humans) + 3))
    stimes, scpu, _, _, _, _, _ = _run(humans, scalar_updates, "reference", warmup=2, crowd=crowd, seed=seed,
                                       settle=settle, stage_pass=False)
    ms = median(times)
    cpu_ms = median(cpu)
    sms = median(stimes)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    net = _netplay_costs() if humans == 2 else None
    if net is not None:
        extra.update(netplay=net, netplay_frame_p99_ms=net["frame_ms_p99_cpu"],
                     netplay_rollback8_max_ms=net["rollback_ms_max_cpu"])
        extra["level_load"] = level_load()
    share = {k: round(v / max(total, 1e-12), 4) for k, v in sorted(stages.items(), key=lambda kv: -kv[1])}
    stage_ms = {k: round(v * 1000.0 / updates, 4) for k, v in sorted(stages.items(), key=lambda kv: -kv[1])}
    return {
        "humans": humans,
        "updates": updates,
        "threads": threads,
        "ms_per_update": round(ms, 4),
        "p90_ms": round(float(np.percentile(times, 90)), 4),
        "cpu_ms_per_update": round(cpu_ms, 4),
        "cpu_ms_mean": round(float(np.mean(cpu)), 4),
        "ms_mean": round(float(np.mean(times)), 4),
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
        **(crowd_mb or {}),
        "pose_pipeline_us_per_human": round(pose_us, 3),
        "pose_pipeline_cpu_us_per_human": round(pose_cpu_us, 3),
        "anchor": anchor,
        "kernel_load_s": round(load_s, 3),
        "stage_share": share,
        "stage_ms": stage_ms,
        "stack_shapes": {"-".join(map(str, k)) or "empty": v for k, v in sorted(shapes.items())},
        "pool_leak": leak,
        **extra,
    }


LOAD_BUILDS = 15                     # the level load's builds, timed one after the other (level_load)
LOAD_LATER = 5                       # the steps run before the level load's "later" step is timed
# the demo's two fighters: 3 m apart, facing each other (name, position, heading)
PAIR = (("p1", (0.0, -1.5, 0.0), 0.0), ("p2", (0.0, 1.5, 0.0), 180.0))


def _add_pair(g, aset) -> None:
    """The demo's two fighters (PAIR) of set ``aset`` added to Game ``g``."""
    for name, position, heading in PAIR:
        g.add_human(name, aset, position=position, heading=heading)


def level_load(builds: int = LOAD_BUILDS) -> dict:
    """What a game pays once before its first update, for the demo's two fighters (the
    kernels loaded): CPU medians (ms) of ``builds`` builds after one untimed, each a new
    Game (``game_ms``), its two ``add_human`` calls (``add_human_ms``: one of them),
    ``Fight(game)`` (``fight_ms``: its warm-up learns the fight's prepared commands),
    the first ``Game.step`` (``first_step_ms``) and a later one (``later_step_ms``, the
    one after LOAD_LATER). Rejected: ``builds`` < 1 (ValueError)."""
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    if builds < 1:
        raise ValueError(f"level_load: builds must be at least 1, got {builds}")
    aset = demo_set()
    clock = time.process_time
    rows = []
    for k in range(builds + 1):
        t0 = clock()
        g = Game()
        t1 = clock()
        _add_pair(g, aset)
        t2 = clock()
        Fight(g)
        t3 = clock()
        g.step()
        t4 = clock()
        for _ in range(LOAD_LATER - 1):
            g.step()
        t5 = clock()
        g.step()
        t6 = clock()
        g.close()
        if k:                                             # (the first build untimed: its first calls)
            rows.append((t1 - t0, (t2 - t1) / len(PAIR), t3 - t2, t4 - t3, t6 - t5))
    keys = ("game_ms", "add_human_ms", "fight_ms", "first_step_ms", "later_step_ms")
    return {key: round(median([row[j] for row in rows]) * 1000.0, 4) for j, key in enumerate(keys)}


def _netplay_costs(updates: int = 600) -> dict:
    """Rollback on the demo's fight (``scuffle.net.rollback_costs``): two fighters 3 m
    apart under the fight rules, their FighterAIs' inputs, a rollback of 8 updates every
    fifth update (docs/netplay.md)."""
    from scuffle.game.fighters.ai import FighterAI
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.net import rollback_costs
    from scuffle.game.runtime.world import Game

    aset = demo_set()

    def build():
        g = Game()
        _add_pair(g, aset)
        for name, _, _ in PAIR:
            g.change(name, g.player.loop(g.instance(name), Move.FIGHT_IDLE))
        Fight(g, separate=True, rounds=True)
        return g

    ais = (FighterAI("p1", "p2", seed=1001, think_every=3), FighterAI("p2", "p1", seed=1, think_every=3))
    return rollback_costs(build, ("p1", "p2"), lambda g: [ai.decide(g) for ai in ais], updates=updates, depth=8)


# ---------------------------------------------------------------- the goals (docs/performance.md)
# (key, the goal as the table prints it, limit, unit, the crowd size it is measured at (None: any))
GOALS = (
    ("fighters_cpu_ms", "2 fighters with the fight rules: CPU per update", 0.05, "ms", 2),
    ("humans_1000_cpu_ms", "1,000 humans: CPU per update", 2.5, "ms", 1000),
    ("humans_10000_cpu_ms", "10,000 humans: CPU per update", 25.0, "ms", 10000),
    ("command_us", "one command as a game issues many (mean, CPU)", 3.0, "us", None),
    ("flush_ms", "the flush per update at 10,000 (CPU)", 1.0, "ms", 10000),
    ("gc_ms", "the garbage collector per update at 10,000 (CPU)", 1.0, "ms", 10000),
    ("memory_mb", "memory at 10,000 (peak, a process running the crowd alone)", 250.0, "MB", 10000),
    ("join_leave_1000", "the update after a join and a leave, over a steady one, at 1,000 (CPU)", 1.2, "x",
     1000),
    ("join_leave_10000", "the update after a join and a leave, over a steady one, at 10,000 (CPU)", 1.2, "x",
     10000),
    ("python_1000_ms", "Python outside the kernels at 1,000 (CPU per update)", 0.5, "ms", 1000),
    ("python_10000_ms", "Python outside the kernels at 10,000 (CPU per update)", 4.0, "ms", 10000),
    ("first_step_s", "first step on a fresh install (wall, cold numba cache)", 10.0, "s", None),
    ("snapshot_2", "snapshot + restore of 2 fighters in a rollback loop (CPU)", 50.0, "us", 2),
    ("snapshot_file_2", "to_bytes + from_bytes + restore of 2 fighters (CPU)", 0.3, "ms", 2),
    ("checksum_2", "Game.checksum() at 2 fighters, netplay's desync check (CPU)", 50.0, "us", 2),
    ("snapshot_1000", "snapshot + restore of 1,000 humans (CPU)", 1.0, "ms", 1000),
    ("snapshot_10000", "snapshot + restore of 10,000 humans (CPU)", 10.0, "ms", 10000),
    ("netplay_frame_p99_ms", "netplay: an update and its snapshot at 2 fighters, p99 (CPU)", 2.0, "ms", 2),
    ("netplay_rollback8_max_ms", "netplay: a rollback of 8 updates at 2 fighters, at worst (CPU)", 16.7, "ms", 2),
    ("kernels_10000_ms", "the step and pose kernels at 10,000 (one thread, CPU)", 12.0, "ms", 10000),
    ("pose_vs_cpp", "the pose kernel over a scalar C++ build of its maths (CPU)", 1.0, "x", None),
    ("threads2_10000_ms", "10,000 humans on 2 threads (--threads 2): wall per update", 14.0, "ms", 10000),
    ("first_step_cpu_s", "first step on a fresh install (CPU, cold numba cache)", 8.0, "s", None),
)
# figures shown beside the goals (no limit of their own)
GOAL_NOTES = (
    ("pose_stacks_cpu_us_per_human", "pose_stacks (the pose kernel alone, CPU) per human", "us"),
    ("command_cpu_us_batch_call", "a prepared command in a batch (Player.commands and its write, CPU) per row", "us"),
    ("command_cpu_us_single", "one command a call (CPU, with the clocks' own)", "us"),
    ("command_cpu_us_empty", "an empty command timed as one a call (the clocks' own, CPU)", "us"),
    ("gc_cpu_share", "the garbage collector's share of the update (CPU)", "%"),
)


def _figure(key: str, r: dict):
    """One goal's figure in one size's report (None: that report does not measure it)."""
    if key == "fighters_cpu_ms":         # the long pass's, where it ran (_fight_pass)
        f = r.get("fight_cpu_ms_mean")
        return f if f is not None else r.get("cpu_ms_mean")
    if key in ("humans_1000_cpu_ms", "humans_10000_cpu_ms"):
        return r.get("cpu_ms_mean")
    if key == "flush_ms":                # the flush pass's (no timer inside), else the stage pass's
        f = r.get("flush_cpu_ms")
        return f if f is not None else r.get("stage_cpu_ms", {}).get("DeferredFlush")
    if key == "gc_ms":
        return r.get("gc_cpu_ms_per_update")
    if key == "command_us":
        return r.get("command_cpu_us")
    if key == "memory_mb":               # the crowd's own process, else the bench's (its harness too)
        f = r.get("crowd_peak_mb")
        return f if f is not None else r.get("compiled_peak_mb")
    if key.startswith("join_leave_"):
        return r.get("join_leave_ratio")
    if key.startswith("python_"):
        return r.get("python_cpu_ms")
    if key in ("first_step_s", "first_step_cpu_s"):
        return (r.get("first_step") or {}).get(key)
    if key == "kernels_10000_ms":
        k = r.get("kernel_cpu_ms")
        return round(k["step_stacks"] + k["pose_stacks"], 4) if k and r.get("threads", 1) == 1 else None
    if key == "pose_vs_cpp":
        return (r.get("anchor") or {}).get("ratio")
    if key == "threads2_10000_ms":
        return r.get("ms_per_update") if r.get("threads") == 2 else None
    if key == "snapshot_2" and "rollback_cpu_us" in r:
        return r["rollback_cpu_us"]
    if key == "checksum_2":
        return r.get("checksum_cpu_us")
    if key == "snapshot_file_2":
        us = r.get("file_cpu_us")
        return None if us is None else round(us / 1000.0, 4)
    if key.startswith("snapshot_"):
        us = r.get("snapshot_restore_cpu_us")
        return None if us is None else (us if key == "snapshot_2" else round(us / 1000.0, 4))
    return r.get(key)


def goals_table(reports: list[dict], first_step: dict | None = None) -> list[dict]:
    """Every performance goal (GOALS, then GOAL_NOTES) beside its figure from the report
    of the size it is set at (a goal for any size takes the largest one's): ``goal``,
    ``limit``, ``unit``, ``figure`` (None: not measured by these sizes), ``met`` (None
    when not measured or a note), ``at`` (the humans the figure comes from) and
    ``crowd`` (the goals are set for the realistic crowd)."""
    by_size = {r["humans"]: r for r in reports}
    largest = max(reports, key=lambda r: r["humans"]) if reports else {}
    rows = []
    for key, text, limit, unit, size in GOALS:
        r = by_size.get(size) if size is not None else largest
        fig = None
        if key in ("first_step_s", "first_step_cpu_s"):
            fig = (first_step or {}).get(key)
            r = None
        elif r is not None:
            fig = _figure(key, r)
        met = None if fig is None else (fig < limit if unit == "MB" else fig <= limit)
        rows.append({"goal": text, "key": key, "limit": limit, "unit": unit,
                     "figure": fig, "met": met, "at": r["humans"] if r is not None else None,
                     "crowd": r.get("crowd") if r is not None else None})
    for key, text, unit in GOAL_NOTES:
        for r in sorted(reports, key=lambda r: r["humans"]):
            fig = r.get(key)
            if fig is not None and unit == "%":
                fig = round(100.0 * fig, 2)
            rows.append({"goal": f"{text} ({r['humans']:,} humans)", "key": key, "limit": None, "unit": unit,
                         "figure": fig, "met": None, "at": r["humans"], "crowd": r.get("crowd")})
    return rows


def _print_goals(rows: list[dict], out) -> None:
    """The goals table: goal | figure | met?"""
    print(f"{'goal':<66} | {'figure':>12} | met?", file=out)
    print(f"{'-' * 66}-|-{'-' * 12}-|-----", file=out)
    for g in rows:
        lim = "" if g["limit"] is None else f" ({'<' if g['unit'] == 'MB' else '<='} {g['limit']:g} {g['unit']})"
        fig = "not measured" if g["figure"] is None else f"{g['figure']:g} {g['unit']}"
        met = "-" if g["met"] is None else ("yes" if g["met"] else "NO")
        if g["met"] is None and g["limit"] is not None:
            met = "n/a"
        if g["crowd"] == "light" and g["limit"] is not None:
            met += " (light crowd)"
        print(f"{(g['goal'] + lim)[:66]:<66} | {fig:>12} | {met}", file=out)


def fit_line(reports: list[dict], key: str = "cpu_ms_per_update") -> tuple[float, float]:
    """Least-squares fixed cost (ms) and per-human slope (µs) of ``key`` over the crowd sizes."""
    n = np.array([r["humans"] for r in reports], dtype=np.float64)
    y = np.array([r[key] for r in reports], dtype=np.float64)
    if len(n) < 2:
        return float(y[0]), 0.0
    slope, fixed = np.polyfit(n, y, 1)
    return float(fixed), float(slope * 1000.0)


def _sweep(sizes: list[int], updates: int, scalar_updates: int | None, crowd: str = "light",
           seed: int = 1, settle: bool = True, threads: int = 1, progress=None, layout: bool = False,
           fight_updates: int = FIGHT_UPDATES) -> list[dict]:
    """One fresh process per crowd size (so each peak memory is its own); ``progress`` (a
    text stream) gets a line per size and dots while it runs."""
    import subprocess
    import sys

    out = []
    for i, n in enumerate(sizes, 1):
        cmd = [sys.executable, "-m", "scuffle", "bench", "--humans", str(n), "--updates", str(updates),
               "--json", "--no-compile-time", "--crowd", crowd, "--seed", str(seed), "--threads", str(threads),
               "--fight-updates", str(fight_updates)]
        if scalar_updates is not None:
            cmd += ["--scalar-updates", str(scalar_updates)]
        if not settle:
            cmd.append("--no-settle")
        if layout:
            cmd.append("--layout")
        if progress is not None:
            print(f"scuffle bench: {n:,} humans ({i} of {len(sizes)}, a process of its own)", end=" ",
                  file=progress, flush=True)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stdout, stderr = wait_with_progress(p, progress, limit=float("inf"))
        if p.returncode:
            raise RuntimeError(f"bench --humans {n} failed: {stderr.strip()[-800:]}")
        out.append(json.loads(stdout))
    return out


def bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--humans", type=int, nargs="+", default=None, metavar="N",
                   help="humans in the world (default 1000); several sizes run one process each")
    p.add_argument("--sweep", action="store_true", help=f"run the sizes {', '.join(map(str, SWEEP))}")
    p.add_argument("--updates", type=int, default=60, metavar="U", help="updates to time (default 60)")
    p.add_argument("--scalar-updates", type=int, default=None, metavar="U", help="updates for the reference engine (plain Python)")
    p.add_argument("--fight-updates", type=int, default=FIGHT_UPDATES, metavar="U",
                   help=f"at 2 humans, updates more timed whole after the first pass: the fighters goal's figure, "
                        f"the fight's mean over its exchanges (default {FIGHT_UPDATES}; 0: none, the goal then reads "
                        f"the first pass's mean)")
    p.add_argument("--json", action="store_true", help="print only the JSON report on stdout (the table to stderr)")
    p.add_argument("--no-compile-time", action="store_true",
                   help="skip measuring the first step on a fresh install (two fresh processes on "
                        "empty caches: 2 fighters running the kernels as Python until the background "
                        "has compiled them, ~40 s, then a crowd's first step compiling them, ~15 s)")
    p.add_argument("--crowd", choices=CROWDS, default="light",
                   help="light: a representative stack of gaits, fades, hand-overs and pairs (default); realistic: moving gaits, "
                        "walk starts, attacks, hit reactions, types 10/11/13, queued tasks, fight pairs, "
                        "event handlers, ~3%% of humans commanded per update (docs/performance.md)")
    p.add_argument("--seed", type=int, default=1, help="the realistic crowd's seed (default 1)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="threads the compiled step and pose run on (PlayerOptions.threads; default 1: the "
                        "one-core figures the goals are set for)")
    p.add_argument("--no-settle", action="store_true",
                   help="do not call scuffle.settle() after building the crowd (the garbage collector "
                        "then walks the whole loaded world in its full collections)")
    p.add_argument("--layout", action="store_true",
                   help="also time the step and pose kernels on the crowd's rows renumbered into the walk's "
                        "order beside the rows as they lie (the same update, in turns), with the walk's "
                        "scatter (docs/performance.md, 'The kernels per human')")


def _print_one(r: dict, out) -> None:
    print(f"{r['humans']} humans ({r.get('crowd', 'light')} crowd, {r.get('threads', 1)} thread(s)), "
          f"{r['updates']} updates: "
          f"{r['ms_per_update']} ms per update median "
          f"(p90 {r['p90_ms']}; CPU {r['cpu_ms_per_update']}, mean {r.get('cpu_ms_mean')}), "
          f"{r['us_per_human']} us per human, "
          f"{100 * r['budget_share']:.1f}% of the 30 Hz budget; load {r.get('load')}", file=out)
    print(f"the reference engine (plain Python, anim.reference): {r['scalar_ms_per_update']} ms per update "
          f"({r['scalar_updates']} updates); speedup {r['speedup']}x", file=out)
    print(f"pose pipeline alone (compiled, N >= 1000): {r['pose_pipeline_us_per_human']} us per human "
          f"(CPU {r['pose_pipeline_cpu_us_per_human']}); "
          f"peak memory {r['compiled_peak_mb']} MB (the compiled run), {r['peak_mb']} MB (with the reference run)",
          file=out)
    if r.get("crowd_peak_mb") is not None:
        print(f"memory of a process running the crowd alone: peak {r['crowd_peak_mb']} MB (after the imports "
              f"{r['imports_mb']} MB, the kernels loaded {r['kernels_mb']} MB"
              f"{'; scipy.linalg loaded' if r.get('scipy_linalg_loaded') else ''})", file=out)
    a = r.get("anchor") or {}
    if a.get("ratio") is not None:
        print(f"the C++ anchor (the pose pipeline's maths in scalar C++, {a['compiler']}, -O2; {a['humans']} humans): "
              f"{a['cpp_ns_per_human']} ns per human against pose_plan's {a['kernel_ns_per_human']} (CPU): "
              f"the kernel at {a['ratio']}x; poses differ by at most {max(a['max_pos_diff'], a['max_rot_diff']):g}",
              file=out)
    elif a:
        print(f"the C++ anchor: not measured ({a.get('reason')}); going on", file=out)
    settled = r.get("gc_settled")
    print(f"Python's cyclic GC: {r['gc_ms_per_update']} ms per update (max {r.get('gc_max_ms')}, "
          f"{100 * r.get('gc_share', 0.0):.1f}% of the update; "
          + (f"after scuffle.settle() froze {settled} objects)" if settled is not None
             else "not settled: --no-settle)"), file=out)
    lay = r.get("layout")
    if lay:
        sc = lay["scatter"]
        print(f"the kernels' walk (one update, CPU us per human, medians): as the rows lie step_stacks "
              f"{lay['as_they_lie_us']['step']}, pose_stacks {lay['as_they_lie_us']['pose']}; renumbered into walk "
              f"order {lay['walk_order_us']['step']}, {lay['walk_order_us']['pose']} (the same bits: "
              f"{lay['same_bits']}); successive task rows {sc['tasks']['mean_distance']} rows apart on average, "
              f"{sc['tasks']['near_share']:.1%} within 8; {sc['lines_per_human']} cache lines a human "
              f"({lay['scatter_walk_order']['lines_per_human']} in walk order); the tables {sc['tables_mb']} MB",
              file=out)
    if "kernel_ms" in r:
        ks = ", ".join(f"{k} {v}" for k, v in r["kernel_ms"].items())
        kc = ", ".join(f"{k} {v}" for k, v in r.get("kernel_cpu_ms", {}).items())
        print(f"kernels alone (ms per update, wall): {ks}; CPU: {kc}; pose_stacks "
              f"{r['pose_stacks_us_per_human']} us per human (CPU {r.get('pose_stacks_cpu_us_per_human')})",
              file=out)
    if "snapshot_restore_cpu_us" in r:
        print(f"snapshot + restore (CPU medians): {r['snapshot_restore_cpu_us']} us "
              f"(snapshot into a reused one {r['snapshot_cpu_us']} us, restore {r['restore_cpu_us']} us; "
              f"a snapshot into new memory {r['snapshot_new_cpu_us']} us; {r['snapshot_mb']} MB each)", file=out)
    if "rollback_cpu_us" in r:
        print(f"in a rollback loop (CPU means): snapshot {r['rollback_snapshot_cpu_us']} us, restore "
              f"{r['rollback_restore_cpu_us']} us; a file's to_bytes + from_bytes + restore {r['file_cpu_us']} us "
              f"(the snapshot before it {r.get('file_snapshot_cpu_us')} us); Game.checksum() {r.get('checksum_cpu_us')} us", file=out)
    if "level_load" in r:
        lv = r["level_load"]
        print(f"a level load (CPU medians of {LOAD_BUILDS} builds): Game() {lv['game_ms']} ms, add_human "
              f"{lv['add_human_ms']} ms a human, Fight() over two {lv['fight_ms']} ms, the first step "
              f"{lv['first_step_ms']} ms, a later one {lv['later_step_ms']} ms", file=out)
    if r.get("fight_cpu_ms_mean") is not None:
        print(f"the fight over {r['fight_updates']} updates more (the fighters goal's figure): "
              f"{r['fight_cpu_ms_mean']} ms CPU per update mean (median {r['fight_cpu_ms_median']}, "
              f"p90 {r['fight_cpu_ms_p90']}); the first pass's {r['updates']}: mean {r.get('cpu_ms_mean')}", file=out)
    if r.get("join_leave_ratio") is not None:
        print(f"the update after one human joins and one leaves: {r['join_leave_after_cpu_ms']} ms CPU against "
              f"{r['join_leave_steady_cpu_ms']} steady ({r['join_leave_ratio']}x; the two calls "
              f"{r['join_leave_calls_cpu_us']} us); Python outside the kernels {r.get('python_cpu_ms')} ms CPU "
              f"per update", file=out)
    if "command_us" in r:
        print(f"commands: {r['commands_per_update']} per update, {r['command_us']} us each (mean; CPU "
              f"{r.get('command_cpu_us')} as a batch, the batch call {r.get('command_cpu_us_batch_call')} a row; "
              f"one call each {r.get('command_cpu_us_single')}, an empty command timed the same way "
              f"{r.get('command_cpu_us_empty')}), "
              f"{r['commands_refused']} refused; events handled {r['events_handled']}; "
              f"{r['fight_pairs']} fight pairs {r['fight_counts']}", file=out)
    print("where the time goes (wall share, wall ms, CPU ms per update; the parts of a system indented "
          "under it):", file=out)
    shares = r["stage_share"]
    cpu = r.get("stage_cpu_ms", {})
    parts = [k for k in NESTED_STAGES if k in shares]
    for k, v in shares.items():
        if k in parts:
            continue
        print(f"  {k:<30} {100 * v:5.1f}%  {r['stage_ms'][k]:8.3f} ms  {cpu.get(k, float('nan')):8.3f} ms CPU",
              file=out)
        if k == NESTED_IN:
            for p in parts:
                print(f"    {p:<28} {100 * shares[p]:5.1f}%  {r['stage_ms'][p]:8.3f} ms  "
                      f"{cpu.get(p, float('nan')):8.3f} ms CPU", file=out)


def cmd_bench(args: argparse.Namespace) -> int:
    import os
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
    fight_updates = getattr(args, "fight_updates", FIGHT_UPDATES)
    if not 0 <= fight_updates <= MAX_UPDATES:
        raise CliError(f"--fight-updates {fight_updates}: expected 0 to {MAX_UPDATES}")
    threads = getattr(args, "threads", 1)
    if not 1 <= threads <= 1024:
        raise CliError(f"--threads {threads}: expected 1 to 1024")
    from scuffle.anim.playback.warmup import announce_compile
    announce_compile(ahead=True)        # a cold numba cache: compile every kernel ahead (they are timed)
    text = sys.stderr if args.json else sys.stdout
    crowd = getattr(args, "crowd", "light")
    seed = getattr(args, "seed", 1)
    if len(sizes) == 1:
        load0 = os.getloadavg()[0]
        r = run_bench(sizes[0], args.updates, args.scalar_updates, crowd=crowd, seed=seed,
                      settle=not getattr(args, "no_settle", False), threads=threads,
                      layout=getattr(args, "layout", False), fight_updates=fight_updates)
        r["load"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
        _print_one(r, text)
        runs = [r]
    else:
        runs = _sweep(sizes, args.updates, args.scalar_updates, crowd, seed, not getattr(args, "no_settle", False),
                      threads, progress=sys.stderr, layout=getattr(args, "layout", False),
                      fight_updates=fight_updates)
        for one in runs:
            _print_one(one, text)
        fixed, slope = fit_line(runs)
        wfixed, wslope = fit_line(runs, "ms_per_update")
        r = {"sweep": runs, "fixed_cpu_ms": round(fixed, 4), "cpu_us_per_human_slope": round(slope, 4),
             "fixed_wall_ms": round(wfixed, 4), "wall_us_per_human_slope": round(wslope, 4)}
        print(f"fit over {sizes}: {fixed:.3f} ms fixed + {slope:.3f} us per human (CPU); "
              f"{wfixed:.3f} ms + {wslope:.3f} us (wall)", file=text)
    first = None
    if not args.no_compile_time:
        first = _first_step(progress=sys.stderr)
        r["first_step"] = first
        print(f"first step on a fresh install (a fresh process, an empty NUMBA_CACHE_DIR): "
              f"{first['first_step_s']} s wall (CPU {first['first_step_cpu_s']} s; Python's start with numpy, "
              f"numba and the core {first['python_start_s']}, the Game's imports {first['import_s']}, 2 fighters "
              f"built {first['build_s']}, the step {first['first_step_only_s']}); the kernels run as Python: "
              f"{first['interpreted']}", file=text)
        if first["interpreted"]:
            print(f"  then {first['interpreted_updates']} updates as Python at 30 a second (median "
                  f"{first['interpreted_update_ms']} ms CPU) until the background compile ended, "
                  f"{first['compiled_after_s']} s after the launch (its CPU {first['background_cpu_s']} s); "
                  f"the dearest of the next {AFTER_COMPILED} updates {first['switch_update_ms']} ms (numba loading the "
                  f"kernels from its cache)", file=text)
        crowd_first = _first_step(progress=sys.stderr, interpreted=False)
        r["first_step_compiled"] = crowd_first
        r["kernel_compile_s"] = crowd_first["compile_total_s"]
        print(f"a crowd's first step on a fresh install (over {MAX_INTERPRETED} humans, or SCUFFLE_INTERPRET=0: "
              f"the kernels compiled at once): {crowd_first['first_step_s']} s wall (CPU "
              f"{crowd_first['first_step_cpu_s']} s, the child compiling aside {crowd_first['aside_cpu_s']} s)",
              file=text)
        print(f"numba's compile per kernel in that process (s, with what it compiles inside): "
              f"{crowd_first['compile_by_kernel_s']}; own time, the largest: {crowd_first['compile_own_s']}; "
              f"compiled in a child process meanwhile: {crowd_first.get('compiled_aside')}", file=text)
    r["goals"] = goals_table(runs, first)
    print("the goals (docs/performance.md; set for the realistic crowd, CPU per update as the mean):", file=text)
    _print_goals(r["goals"], text)
    if args.json:
        print(json.dumps(r))
    return 0
