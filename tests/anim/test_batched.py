"""Prepared commands as columns (``Player.commands``, anim.playback.batched): one call
checks a batch in compiled code and makes each row it can a command buffer row; every other
row goes through ``Player.run`` in its place. A batch leaves the tables bit for bit as the
same commands run one by one, refuses the same rows with the same errors (the row named,
the rows before it written, nothing of it taken), checks its columns before any row runs,
and runs on the reference engine as that engine's own ``run``, row after row.

The speed is measured by ``scuffle bench --crowd realistic`` (``command_cpu_us``,
``command_cpu_us_batch_call`` against ``command_cpu_us_single``), never here.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from scuffle.anim.engine.stack import AnimLimitError, TaskPoolExhausted
from scuffle.anim.engine.store import StaleHandle
from scuffle.anim.playback.recipe import Place, Recipe, ClipStep, RecipeError
from scuffle.anim.reference import RefInstance, Reference, engine_state, reference_state
from scuffle.game.fighters.moves import Move

from budget import examples
from test_cmdbuffer import BUFFERED, _learnt
from test_recipes import END, SHAPES, _world, tables
from scuffle.game.tools.bench import crowd_set

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

# shapes a batch takes: every shape but those whose end callback is an Arg (a callback is
# not a number); "ends_walk" has a constant one (its rows go through Player.run)
BATCHABLE = sorted(k for k in SHAPES if k not in ("ends", "ends_push"))
WIDTH = 3


def _row(kind: str, x: float, k: int, fade: float) -> list[float]:
    """A shape's params as a row of WIDTH numbers (the rest 0.0)."""
    got = [float(v) for v in SHAPES[kind][1](x, k, fade)]
    return got + [0.0] * (WIDTH - len(got))


def _one_by_one(p, hs, cmds, rows) -> tuple[int, type | None, str | None]:
    """``rows`` (kind, human, x, k, fade) run one by one with Player.run: how many ran, and
    the first refusal's class and message (None: none)."""
    for j, (kind, i, x, k, fade) in enumerate(rows):
        params = SHAPES[kind][1](x, k, fade)
        try:
            p.run(hs[i], cmds[kind], *params)
        except AnimLimitError as e:
            return j, type(e), str(e)
    return len(rows), None, None


def _batch(p, hs, cmds, rows) -> tuple[int, type | None, str | None]:
    """The same rows as one batch (Player.commands)."""
    try:
        p.commands([cmds[r[0]] for r in rows], [hs[r[1]] for r in rows], [_row(r[0], *r[2:]) for r in rows])
    except AnimLimitError as e:
        assert 0 <= e.row < len(rows)
        assert any(f"row {e.row}" in n for n in e.__notes__)
        return e.row, type(e), str(e)
    return len(rows), None, None


_rows = st.lists(st.tuples(st.sampled_from(BATCHABLE), st.integers(0, 3), st.floats(-0.5, 4.5), st.integers(0, 11),
                           st.sampled_from([0.0, 0.2, 0.45])), min_size=1, max_size=24)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(_rows, min_size=1, max_size=4), pool=st.sampled_from([40, 360]), learnt=st.booleans())
# a running gait steered (no buffer row), a row through Player.run, then the steered human
# again: nothing waits for it, so the batch goes on (it once waited for a write that never came)
@example(batches=[[("gait_alone", 0, 1.0, 0, 0.0)],
                  [("steer", 0, 1.0, 0, 0.0), ("ends_walk", 1, 1.0, 0, 0.0), ("attack", 0, 1.0, 0, 0.0)]],
         pool=360, learnt=True)
def test_a_batch_leaves_the_rows_of_its_commands_run_one_by_one(batches, pool, learnt):
    """The same commands on two worlds, as batches on one and one ``run`` each on the other
    (a human commanded twice in a batch, the pool or a stack running out, commands not
    learnt yet): the same tables after every batch and update, the same refusals (class,
    message, row), the rows after a refusal run from the next one."""
    if learnt:
        a, ha, ca = _learnt(pool=pool)
        b, hb, cb = _learnt(pool=pool)
        for k in BATCHABLE:
            if k not in ca:
                ca[k], cb[k] = a.prepare(SHAPES[k][0]), b.prepare(SHAPES[k][0])
    else:
        (a, ha), (b, hb) = _world(4, pool), _world(4, pool)
        a.step(ha)
        b.step(hb)
        ca = {k: a.prepare(SHAPES[k][0]) for k in BATCHABLE}
        cb = {k: b.prepare(SHAPES[k][0]) for k in BATCHABLE}
    for rows in batches:
        rest = rows
        while rest:
            got_a = _batch(a, ha, ca, rest)
            got_b = _one_by_one(b, hb, cb, rest)
            assert got_a == got_b
            assert tables(a) == tables(b)
            rest = rest[got_a[0] + 1:]
        a.step(ha)
        b.step(hb)
        a.flush()
        b.flush()
        assert tables(a) == tables(b)


def test_a_learnt_batch_is_checked_in_one_compiled_call():
    """Once its commands are learnt, a batch's rows become command buffer rows (none through
    Player.run), written at the next read as the buffer's are."""
    p, hs, cmds = _learnt()
    buf, cols = p.prepared.commands, p.columns
    kinds = ["attack", "walk_start", "push", "queued"]
    rows = [_row(k, 1.5, j, 0.2) for j, k in enumerate(kinds)]
    before, run_before = cols.rows_buffered, cols.rows_run
    p.commands([cmds[k] for k in kinds], hs, rows)
    assert cols.rows_buffered == before + 4 and cols.rows_run == run_before
    assert buf.n == 4 and buf.due == {h.slot for h in hs}
    q, qs, qc = _learnt()
    for j, k in enumerate(kinds):
        q.run(qs[j], qc[k], *SHAPES[k][1](1.5, j, 0.2))
    assert tables(p) == tables(q)


def test_the_blends_of_types_10_11_13_go_through_the_compiled_call():
    """A learnt batch of mixes, picks and directions (their numbers given per row, clamped
    and wrapped: out of range too) becomes command buffer rows, none through Player.run, and
    leaves the rows their handle calls leave (Player.mix, pick, direction and the stack
    rules), bit for bit, update after update."""
    from test_recipes import handle_calls

    p, hs, cmds = _learnt()
    q, qs, _ = _learnt()
    kinds = ["mix", "pick", "direction", "pick_queued"]
    for u, x in enumerate((-0.6, 0.1, 1.99, 2.51, 3.3, 4.9, 1.0, 7.2)):
        rows = [(kinds[(u + j) % len(kinds)], j % 4, x + 0.37 * j, u + j, 0.2) for j in range(4)]
        before, run_before = p.columns.rows_buffered, p.columns.rows_run
        p.commands([cmds[r[0]] for r in rows], [hs[r[1]] for r in rows], [_row(r[0], *r[2:]) for r in rows])
        assert p.columns.rows_buffered == before + 4 and p.columns.rows_run == run_before, u
        for kind, i, xx, k, fade in rows:
            handle_calls(q, qs[i], kind, xx, k, fade)
        assert tables(p) == tables(q), u
        for _ in range(8):                                # the fades done: the stacks stay shallow
            for w, h in ((p, hs), (q, qs)):
                w.step(h)
                w.flush()
        assert tables(p) == tables(q), u


def test_a_steered_gait_leaves_its_human_with_no_command_waiting():
    """A learnt steering row on a human whose gait runs takes its target at once and makes
    no buffer row (anim.engine.cmdkernel.buffer_commands), so the buffer names that human
    as waiting for nothing; the rows buffered beside it are named, and a later row of the
    steered human, after one through Player.run, runs in the same batch."""
    p, hs, cmds = _learnt()
    q, qs, qc = _learnt()
    buf = p.prepared.commands
    for w, h, c in ((p, hs, cmds), (q, qs, qc)):
        w.run(h[0], c["gait_alone"], 1.0)
        w.step(h)
        w.flush()
    rows = [("steer", 0), ("push", 2)]
    p.commands([cmds[k] for k, _ in rows], [hs[i] for _, i in rows], [_row(k, 3.0, 1, 0.2) for k, _ in rows])
    assert buf.n == 1 and buf.due == {hs[2].slot}
    rows = [("steer", 0), ("ends_walk", 1), ("attack", 0)]
    p.commands([cmds.get(k) or p.prepare(SHAPES[k][0]) for k, _ in rows], [hs[i] for _, i in rows],
               [_row(k, 2.0, 1, 0.2) for k, _ in rows])
    for k, i in [("steer", 0), ("push", 2)]:
        q.run(qs[i], qc[k], *SHAPES[k][1](3.0, 1, 0.2))
    for k, i in rows:
        q.run(qs[i], qc.get(k) or q.prepare(SHAPES[k][0]), *SHAPES[k][1](2.0, 1, 0.2))
    assert tables(p) == tables(q)


def test_a_human_twice_in_a_batch_and_a_full_buffer():
    """The second command of a human reads its rows as the first left them (the buffer
    written first); a batch longer than the buffer fills it again."""
    p, hs, cmds = _learnt(early_finish_above=40)
    q, qs, qc = _learnt(early_finish_above=40)
    p.prepared.commands.capacity = 3
    rows = [("push", j % 2) for j in range(8)] + [("attack", 2), ("queued", 3), ("attack", 2)]
    p.commands([cmds[k] for k, _ in rows], [hs[i] for _, i in rows], [_row(k, 1.0, 1, 0.2) for k, _ in rows])
    for k, i in rows:
        q.run(qs[i], qc[k], *SHAPES[k][1](1.0, 1, 0.2))
    assert tables(p) == tables(q)
    assert p.columns.rows_run == 0 and p.prepared.commands.calls >= 3


def test_a_refused_row_raises_what_run_raises_naming_its_row():
    """The pool runs out in the middle of a batch: TaskPoolExhausted as ``run`` raises it
    (the same message), ``row`` set and a note naming it; the rows before it are written,
    nothing of it or after it."""
    p, hs, cmds = _learnt(pool=40)
    q, qs, qc = _learnt(pool=40)
    rows = [("combo", j % 4) for j in range(40)]
    with pytest.raises(TaskPoolExhausted) as got:
        p.commands([cmds[k] for k, _ in rows], [hs[i] for _, i in rows], [_row(k, 1.0, 1, 0.2) for k, _ in rows])
    row = got.value.row
    assert row >= 2
    for k, i in rows[:row]:
        q.run(qs[i], qc[k], 0.2)
    with pytest.raises(TaskPoolExhausted) as again:
        q.run(qs[rows[row][1]], qc["combo"], 0.2)
    assert str(got.value) == str(again.value)
    assert "row" in " ".join(got.value.__notes__)
    assert tables(p) == tables(q)


def test_bad_columns_are_refused_before_any_row_runs():
    """Columns of different lengths, numbers that are not a 2-D table of the batch's rows,
    too few numbers for a row's command, a row that is not a Command, an end callback
    given as an Arg: RecipeError naming the field and row, and nothing written."""
    p, hs, cmds = _learnt()
    ends = p.prepare(SHAPES["ends"][0])
    before = tables(p)
    good = [cmds["attack"], cmds["push"]]
    cases = [
        ((good, hs[:3], [[0.2, 1.0], [0.0, 0.0], [0.0, 0.0]]), "2 commands for 3 humans"),
        ((good, hs[:2], [0.2, 1.0]), "2-D array of 2 rows"),
        ((good, hs[:2], [[0.2, 1.0]]), "2-D array of 2 rows"),
        ((good, hs[:2], [["a", 1.0], [0.0, 0.0]]), "rows of numbers"),
        ((good, hs[:2], [[0.2], [0.0]]), r"args\[0\] has 1 numbers"),
        (([cmds["push"], SHAPES["push"][0]], hs[:2], None), r"commands\[1\]: a Command"),
        (([cmds["push"], ends], hs[:2], [[0.2, 1.0, 0.0], [0.2, 1.0, 0.0]]), r"commands\[1\]: an end callback"),
    ]
    for (c, h, a), msg in cases:
        with pytest.raises(RecipeError, match=msg):
            p.commands(c, h, a)
        assert p.prepared.commands.n == 0
    assert tables(p) == before
    p.commands([], [], None)                            # an empty batch: nothing
    assert tables(p) == before


def test_a_human_that_left_is_refused_as_run_refuses_it():
    """A batch row whose human left the world (its record stale): the error ``run`` raises
    for it (a twin world running the rows one by one), with its row; the row before it
    written."""
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    errors = []
    for batched in (True, False):
        with Game() as g:
            for name in ("a", "b"):
                g.add_human(name, demo_set())
            g.step()
            a, b = g.instance("a"), g.instance("b")
            push = g.player.prepare(Recipe(Place.PUSH, (ClipStep(Move.HIT_BACK),)))
            g.remove_human("b")
            with pytest.raises(StaleHandle) as got:
                if batched:
                    g.player.commands([push, push], [a, b], None)
                else:
                    g.player.run(a, push)
                    g.player.run(b, push)
            assert a.stack[-1].anim_id() == int(Move.HIT_BACK)
            errors.append(str(got.value))
            if batched:
                assert got.value.row == 1
    assert errors[0] == errors[1]


def test_the_reference_runs_a_batch_as_its_own_runs():
    """Reference.commands runs each row through the reference's own ``run``: the engine's
    batches and the reference's dump the same state, update after update, refusals
    included (the same class and row)."""
    from scuffle.anim.engine.stack import CharacterInstance
    from scuffle.anim.playback.player import Player
    from scuffle.game.tools.bench import crowd_set

    s = crowd_set()                                     # (with a direction task's eight clips)
    p, ref = Player(), Reference()
    hp = [CharacterInstance(s, f"h{i}") for i in range(3)]
    hr = [RefInstance(s, f"h{i}") for i in range(3)]
    cp = {k: p.prepare(SHAPES[k][0]) for k in BATCHABLE}
    cr = {k: ref.prepare(SHAPES[k][0]) for k in BATCHABLE}
    for w in (p, ref):
        w.callbacks.register(END, lambda inst, *args: None)
    for u in range(24):
        for w, hs in ((p, hp), (ref, hr)):
            w.step(hs)
            w.flush()
        rows = [(BATCHABLE[(u + j) % len(BATCHABLE)], (u + j) % 3, u * 0.17, u + j, 0.2) for j in range(4)]
        got = []
        for w, hs, c in ((p, hp, cp), (ref, hr, cr)):
            got.append(_batch(w, hs, c, rows))
        assert got[0][:2] == got[1][:2], u
        p.flush()
        ref.flush()
        assert engine_state(p, hp) == reference_state(ref, hr), u


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.floats(-1.0, 5.0)), min_size=1, max_size=12),
       cmds=st.lists(st.tuples(st.sampled_from(BUFFERED), st.integers(0, 3)), max_size=6))
def test_gait_targets_as_columns_are_each_gait_handles_set_target(rows, cmds):
    """Player.set_gait_targets against ``running(inst, GAIT).set_target(x)`` row by row (with
    commands waiting in the buffer before it): the same tables, and True exactly where a
    gait runs."""
    from scuffle.anim.playback.tasks import TaskType

    a, ha, ca = _learnt()
    b, hb, cb = _learnt()
    for w, hs, c in ((a, ha, ca), (b, hb, cb)):
        w.run(hs[0], c["gait_alone"], 2.5)
        w.run(hs[1], c["gait_value"], 1.5, 2.0)
        for kind, i in cmds:
            try:
                w.run(hs[i], c[kind], *SHAPES[kind][1](1.0, i, 0.2))
            except AnimLimitError:
                pass
    moved = a.set_gait_targets([ha[i] for i, _ in rows], [x for _, x in rows])
    want = []
    for i, x in rows:
        g = b.running(hb[i], TaskType.GAIT)
        want.append(g is not None)
        if g is not None:
            g.set_target(x)
    assert moved.tolist() == want
    assert tables(a) == tables(b)


def test_a_gait_target_that_is_not_finite_is_refused_with_its_row():
    """NaN: set_target's ValueError, ``row`` set, the rows before it done; targets that
    are not one number per human: RecipeError; the reference does the same rows."""
    from scuffle.anim.playback.tasks import TaskType

    p, hs, cmds = _learnt()
    p.run(hs[0], cmds["gait_alone"], 1.5)
    p.run(hs[1], cmds["gait_alone"], 1.5)
    with pytest.raises(ValueError, match="finite") as got:
        p.set_gait_targets([hs[0], hs[1]], [3.0, float("nan")])
    assert got.value.row == 1
    assert float(p.running(hs[0], TaskType.GAIT).target) == 3.0
    with pytest.raises(RecipeError, match="one per human"):
        p.set_gait_targets(hs[:2], [1.0])
    with pytest.raises(RecipeError, match="one per human"):
        p.set_gait_targets(hs[:2], [[1.0], [2.0]])
    assert p.set_gait_targets([], []).tolist() == []


def test_the_reference_moves_gait_targets_as_the_engine():
    from scuffle.anim.engine.stack import CharacterInstance
    from scuffle.anim.playback.player import Player
    from scuffle.game.tools.bench import crowd_set

    s = crowd_set()                                     # (with a direction task's eight clips)
    p, ref = Player(), Reference()
    hp = [CharacterInstance(s, f"h{i}") for i in range(3)]
    hr = [RefInstance(s, f"h{i}") for i in range(3)]
    cp = {"gait_alone": p.prepare(SHAPES["gait_alone"][0])}
    cr = {"gait_alone": ref.prepare(SHAPES["gait_alone"][0])}
    for w, hs, c in ((p, hp, cp), (ref, hr, cr)):
        w.step(hs)
        w.run(hs[0], c["gait_alone"], 1.5)
        w.run(hs[2], c["gait_alone"], 0.7)
    for u in range(12):
        got = [w.set_gait_targets(hs, [u * 0.37, 4.5 - u * 0.3, u * 0.61 - 1.0]).tolist()
               for w, hs in ((p, hp), (ref, hr))]
        assert got[0] == got[1] == [True, False, True]
        for w, hs in ((p, hp), (ref, hr)):
            w.step(hs)
            w.flush()
        assert engine_state(p, hp) == reference_state(ref, hr), u


# ---------------------------------------------------------------- humans named by row and generation


def test_humans_named_by_row_and_generation_leave_the_rows_of_commands():
    """``commands_at`` with the columns ``rows_of`` gives: the same tables as ``commands``
    with the instances (a twin world), the rows made buffer rows, no row through run."""
    p, hs, cmds = _learnt()
    q, qs, qc = _learnt()
    rows, gens = p.rows_of(hs)
    assert rows.dtype == gens.dtype == "int64" and rows.tolist() == [h.slot for h in hs]
    assert gens.tolist() == [h.record.gen for h in hs]
    kinds = ["attack", "mix", "walk_start", "pick", "queued", "direction", "clip_alone", "combo"]
    for u in range(3):
        picks = [(kinds[(u + j) % len(kinds)], (u + j) % 4) for j in range(6)]
        args = [_row(k, 0.7 * u + j, u + j, 0.2) for j, (k, _) in enumerate(picks)]
        before, run_before = p.columns.rows_buffered, p.columns.rows_run
        p.commands_at([cmds[k] for k, _ in picks], rows[[i for _, i in picks]], gens[[i for _, i in picks]], args)
        q.commands([qc[k] for k, _ in picks], [qs[i] for _, i in picks], args)
        assert p.columns.rows_run == run_before and p.columns.rows_buffered > before
        assert tables(p) == tables(q), u
        for _ in range(8):
            for w, h in ((p, hs), (q, qs)):
                w.step(h)
                w.flush()
        assert tables(p) == tables(q), u


@contextlib.contextmanager
def _three(engine):
    """A Game on ``engine`` with three crowd humans a, b, c after one update: (the Game,
    its Player, the three instances)."""
    from scuffle.game.runtime.world import Game

    with Game(engine=engine) as g:
        for name in ("a", "b", "c"):
            g.add_human(name, crowd_set())
        g.step()
        yield g, g.player, [g.instance(n) for n in ("a", "b", "c")]


def test_a_stale_generation_is_refused_naming_the_row():
    """A human that left, its row taken by a newcomer: the kept generation is refused
    (StaleHandle naming the batch's row and the human row, ``row`` set), the rows before it
    written, nothing after it; the columns themselves are checked before any row runs; the
    reference refuses alike."""
    got = {}
    for engine in ("compiled", "reference"):
        with _three(engine) as (g, p, insts):
            rows, gens = p.rows_of(insts)
            push = p.prepare(Recipe(Place.PUSH, (ClipStep(Move.HIT_BACK),)))
            g.remove_human("b")
            g.add_human("d", crowd_set())
            new_rows, new_gens = p.rows_of([g.instance("d")])
            with pytest.raises(StaleHandle) as err:
                p.commands_at([push] * 3, rows, gens)
            assert err.value.row == 1
            assert "row 1" in str(err.value) and f"human row {rows[1]}" in str(err.value)
            assert any("row 1" in n for n in err.value.__notes__)
            assert [int(t.type) for t in insts[0].stack] == [3] and len(insts[2].stack) == 0     # (none before)
            got[engine] = str(err.value).replace(f"human row {rows[1]}", "human row R").replace(
                f"generation {gens[1]}", "generation G")
            for bad, msg in (((rows[:2], gens), "rows must be 3 whole numbers"),
                             ((rows.astype(float), gens), "rows must be 3 whole numbers"),
                             ((rows, [True, False, True]), "gens must be 3 whole numbers")):
                with pytest.raises(RecipeError, match=msg):
                    p.commands_at([push] * 3, *bad)
            with pytest.raises(RecipeError, match="must be a CharacterInstance"):
                p.rows_of([7])
            p.commands_at([push], new_rows, new_gens)           # the newcomer's own columns
            assert int(g.instance("d").stack[-1].anim_id()) == int(Move.HIT_BACK)
    assert got["compiled"] == got["reference"]


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.floats(-1.0, 5.0)), min_size=1, max_size=12))
def test_gait_targets_named_by_row_are_those_named_by_instance(rows):
    """``set_gait_targets_at`` with the columns ``rows_of`` gives: the same tables and the
    same bools as ``set_gait_targets`` with the instances (a twin world)."""
    a, ha, ca = _learnt()
    b, hb, cb = _learnt()
    for w, hs, c in ((a, ha, ca), (b, hb, cb)):
        w.run(hs[0], c["gait_alone"], 2.5)
        w.run(hs[2], c["gait_value"], 1.5, 2.0)
    r, g = a.rows_of(ha)
    idx = [i for i, _ in rows]
    got = a.set_gait_targets_at(r[idx], g[idx], [x for _, x in rows])
    want = b.set_gait_targets([hb[i] for i in idx], [x for _, x in rows])
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert got.tolist() == [i in (0, 2) for i in idx]
    assert tables(a) == tables(b)


def test_a_stale_gait_target_row_is_refused_naming_the_row_on_both_engines():
    """A human that left, its row taken by a newcomer: ``set_gait_targets_at`` refuses the
    kept generation (StaleHandle naming the batch's row and the human row, ``row`` set),
    the rows before it done, nothing after it; the columns checked before any row; a target
    that is not finite: set_target's ValueError with its row; the reference does the same."""
    from scuffle.anim.playback.tasks import TaskType

    walk = SHAPES["gait_alone"][0]
    got = {}
    for engine in ("compiled", "reference"):
        with _three(engine) as (g, p, insts):
            cmd = p.prepare(walk)
            for inst in insts:
                p.run(inst, cmd, 1.0)
            rows, gens = p.rows_of(insts)
            g.remove_human("b")
            g.add_human("d", crowd_set())
            with pytest.raises(StaleHandle) as err:
                p.set_gait_targets_at(rows, gens, [3.0, 2.0, 4.0])
            assert err.value.row == 1
            assert "row 1" in str(err.value) and f"human row {rows[1]}" in str(err.value)
            assert any("row 1" in n and "set_gait_targets_at" in n for n in err.value.__notes__)
            assert float(p.running(insts[0], TaskType.GAIT).target) == 3.0          # the row before it: done
            assert float(p.running(insts[2], TaskType.GAIT).target) == 1.0          # the row after it: not
            got[engine] = str(err.value).replace(f"human row {rows[1]}", "human row R").replace(
                f"generation {gens[1]}", "generation G")
            for bad, msg in (((rows[:2], gens, [1.0, 2.0, 3.0]), "rows must be 3 whole numbers"),
                             ((rows, gens.astype(float), [1.0, 2.0, 3.0]), "gens must be 3 whole numbers"),
                             ((rows, gens, [[1.0], [2.0], [3.0]]), "targets must be numbers"),
                             ((rows, gens, ["x", 1.0, 2.0]), "targets must be numbers")):
                with pytest.raises(RecipeError, match=msg):
                    p.set_gait_targets_at(*bad)
            assert float(p.running(insts[2], TaskType.GAIT).target) == 1.0          # nothing done by them
            r2, g2 = p.rows_of([insts[0], insts[2]])
            with pytest.raises(ValueError, match="finite") as err2:
                p.set_gait_targets_at(r2, g2, [2.0, float("nan")])
            assert err2.value.row == 1
            assert float(p.running(insts[0], TaskType.GAIT).target) == 2.0          # the row before it: done
            assert p.set_gait_targets_at(r2, g2, [2.0, 4.0]).tolist() == [True, True]
            assert p.set_gait_targets_at([], [], []).tolist() == []
    assert got["compiled"] == got["reference"]


def test_a_steering_command_steers_the_running_gait_in_the_batch_and_starts_a_walk_elsewhere():
    """Recipe.steer: on a human with a running gait the batch's compiled call gives that
    gait the target (no row made, no row through run); on one without, the walk starts as
    a buffer row; the same tables as ``run`` row by row and as the handle calls, and the
    reference gives the same state; a target that is not finite on a running gait is
    set_target's ValueError with its row; a steering recipe needs a GaitStep last."""
    from scuffle.anim.playback.tasks import TaskType

    a, ha, ca = _learnt()
    b, hb, cb = _learnt()
    for w, hs, c in ((a, ha, ca), (b, hb, cb)):
        w.run(hs[0], c["gait_alone"], 2.5)               # a gait runs on humans 0 and 2
        w.run(hs[2], c["gait_value"], 1.5, 2.0)
    steps = [(0, 3.2), (1, 1.7), (2, 0.4), (3, 2.6)]
    before, run_before = a.columns.rows_buffered, a.columns.rows_run
    a.commands([ca["steer"]] * 4, [ha[i] for i, _ in steps], [[0.2, x, 0.0] for _, x in steps])
    for i, x in steps:
        b.run(hb[i], cb["steer"], 0.2, x)
    assert a.columns.rows_run == run_before and a.columns.rows_buffered == before + 4
    assert a.prepared.commands.n == 2                    # the two walk starts wait as rows; the steers made none
    assert tables(a) == tables(b)
    assert float(a.running(ha[2], TaskType.GAIT).target) == float(np.float32(0.4))     # steered (CONTINUOUS)
    for _ in range(6):
        for w, hs in ((a, ha), (b, hb)):
            w.step(hs)
            w.flush()
    assert tables(a) == tables(b)
    with pytest.raises(ValueError, match="finite") as err:
        a.commands([ca["steer"]] * 2, [ha[1], ha[0]], [[0.2, 1.0], [0.2, float("nan")]])
    assert err.value.row == 1
    for bad, msg in ((Recipe(Place.CHANGE, (ClipStep(Move.JAB),), steer=True), "GaitStep"),
                     (SHAPES["steer"][0]._replace(steer=1), "True or False")):
        for w in (a, Reference()):
            with pytest.raises(RecipeError, match=msg):
                w.prepare(bad)


def test_the_reference_steers_as_the_engine():
    from scuffle.anim.engine.stack import CharacterInstance
    from scuffle.anim.playback.player import Player

    s = crowd_set()
    p, ref = Player(), Reference()
    hp = [CharacterInstance(s, f"h{i}") for i in range(3)]
    hr = [RefInstance(s, f"h{i}") for i in range(3)]
    cp, cr = p.prepare(SHAPES["steer"][0]), ref.prepare(SHAPES["steer"][0])
    for w, hs in ((p, hp), (ref, hr)):
        w.step(hs)
    for u in range(10):
        for w, hs, c in ((p, hp, cp), (ref, hr, cr)):
            w.commands([c] * 3, hs, [[0.2, (u * 0.7 + j) % 4.5, 0.0] for j in range(3)])
            w.run(hs[u % 3], c, 0.1, u * 0.41)
            w.step(hs)
            w.flush()
        assert engine_state(p, hp) == reference_state(ref, hr), u
