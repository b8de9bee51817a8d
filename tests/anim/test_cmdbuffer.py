"""The command buffer (anim.playback.cmdbuffer): prepared commands become rows that one
compiled call (anim.engine.cmdkernel.apply_commands) writes in order; every reader sees the
tables as if each command had been written at its call, bit for bit; the errors are raised
at the call with nothing left behind; a snapshot or restore between a command and the
update is exact.

The speed is measured by ``scuffle bench --crowd realistic`` (``command_cpu_us``), never here.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scuffle.anim.engine import cmdkernel as CK
from scuffle.anim.engine.snapshot import save_engine
from scuffle.anim.engine.stack import AnimLimitError, TaskPoolExhausted
from scuffle.anim.playback.cmdbuffer import CommandBuffer, CommandKind
from scuffle.anim.playback.prepared import _FEW_TAKEN
from scuffle.anim.playback.recipe import Place
from scuffle.anim.playback.tasks import HeldFlags, TaskType, note_view
from scuffle.game.fighters.moves import Move

from budget import examples
from test_recipes import SHAPES, _world, tables

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

# the shapes a command buffer takes (no end callbacks: those run at once, then their ends)
BUFFERED = sorted(k for k in SHAPES if not k.startswith("ends"))


def _learnt(n: int = 4, pool: int = 360, **opts):
    """A world of ``n`` humans, stepped once, with every buffered shape prepared and learnt
    (run once through the handle calls), stepped for a second (the fades done)."""
    p, hs = _world(n, pool, **opts)
    p.step(hs)
    cmds = {k: p.prepare(SHAPES[k][0]) for k in BUFFERED}
    for j, k in enumerate(BUFFERED):
        p.run(hs[j % n], cmds[k], *SHAPES[k][1](1.0, j, 0.2))
    for k in ("attack", "two_args", "clip_alone", "queued"):       # every Arg id of the shapes
        for j in range(16):
            p.learn(hs[0], cmds[k], *SHAPES[k][1](1.0, j, 0.2))
    p.learn(hs[0], cmds["steer"], *SHAPES["steer"][1](1.0, 0, 0.2))  # (its run above may have steered a gait)
    for _ in range(30):                                 # the fades done: shallow stacks
        p.step(hs)
        p.flush()
    return p, hs, cmds


def test_a_prepared_command_becomes_a_row_written_at_the_next_update():
    p, hs, cmds = _learnt()
    buf = p.prepared.commands
    assert isinstance(buf, CommandBuffer) and buf.n == 0
    for i, k in enumerate(("attack", "walk_start", "push", "queued")):
        p.run(hs[i], cmds[k], *SHAPES[k][1](2.0, i, 0.2))
    assert buf.n == 4 and buf.due == {h.slot for h in hs}
    assert [CommandKind(int(c)) for c in buf.bi[:4, CK.B_PLACE]] == [CommandKind.CHANGE, CommandKind.CHANGE,
                                                                      CommandKind.PUSH, CommandKind.ENQUEUE]
    applied, calls = buf.applied, buf.calls
    p.step(hs)                                          # one compiled call writes the four, then the step
    assert buf.n == 0 and buf.applied == applied + 4 and buf.calls == calls + 1


def test_write_commands_writes_the_buffer_now_and_changes_no_row():
    """Player.write_commands writes the waiting rows in one call and empties the buffer:
    the tables then are those a world that never called it reads (a read writes them
    first), and a second call with none waiting calls nothing; the reference has the call
    too, with nothing to write."""
    from scuffle.anim.reference import Reference

    a, ha, ca = _learnt()
    b, hb, cb = _learnt()
    for p, hs, cmds in ((a, ha, ca), (b, hb, cb)):
        for i, k in enumerate(("attack", "walk_start", "push", "queued")):
            p.run(hs[i], cmds[k], *SHAPES[k][1](2.0, i, 0.2))
    buf = a.prepared.commands
    assert buf.n == 4
    calls = buf.calls
    a.write_commands()
    assert buf.n == 0 and buf.calls == calls + 1 and b.prepared.commands.n == 4
    a.write_commands()
    assert buf.calls == calls + 1
    assert tables(a) == tables(b)                       # (tables() writes b's first)
    Reference().write_commands()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cmds=st.lists(st.tuples(st.sampled_from(BUFFERED), st.integers(0, 3), st.floats(-0.5, 4.5),
                               st.integers(0, 11), st.sampled_from([0.0, 0.2, 0.45])), min_size=1, max_size=30),
       steps=st.lists(st.integers(0, 29), max_size=3))
def test_buffered_commands_leave_the_rows_of_commands_written_at_their_call(cmds, steps):
    """The same commands on two worlds: one writes each at its call (the buffer applied at
    once), the other leaves them in the buffer until a read: the same tables, pool and
    stacks, bit for bit, after every update and at the end."""
    a, ha, ca = _learnt()
    b, hb, cb = _learnt()
    assert tables(a) == tables(b)
    for j, (kind, i, x, k, fade) in enumerate(cmds):
        args = SHAPES[kind][1](x, k, fade)
        ra = rb = None
        try:
            a.run(ha[i], ca[kind], *args)
            a.prepared.commands.apply()
        except AnimLimitError as e:
            ra = type(e)
        try:
            b.run(hb[i], cb[kind], *args)
        except AnimLimitError as e:
            rb = type(e)
        assert ra is rb, (j, kind)
        if j in steps:
            a.step(ha)
            b.step(hb)
            a.flush()
            b.flush()
            assert tables(a) == tables(b), f"after the update at command {j}"
    assert tables(a) == tables(b)


def test_a_read_of_a_human_with_a_command_waiting_sees_it():
    """Its stack, queue, running task, held flags, anim id and the pool's count: the buffer
    is written first; a read of another human leaves it waiting."""
    p, hs, cmds = _learnt()
    buf = p.prepared.commands
    p.run(hs[0], cmds["attack"], 0.2, Move.JAB)
    p.run(hs[1], cmds["push"])
    assert buf.n == 2
    depth2 = len(hs[2].stack)
    p.running(hs[2], TaskType.GAIT)
    hs[3].record.held
    assert buf.n == 2 and depth2 >= 1                   # another human's reads: nothing written
    assert hs[0].stack[0].anim_id() == int(Move.JAB) and hs[0].stack[-1].type == TaskType.FADE
    assert buf.n == 0
    p.run(hs[0], cmds["walk_start"], 0.2, 2.0)
    assert buf.n == 1 and p.running(hs[0], TaskType.CLIP).anim_id() == int(Move.WALK_START) and buf.n == 0
    p.run(hs[1], cmds["attack"], 0.2, Move.KICK)
    assert hs[1].record.held & int(HeldFlags.WINDUP) and buf.n == 0
    p.run(hs[2], cmds["queued"], Move.HOOK)
    assert len(hs[2].queue) == 1 and buf.n == 0
    p.run(hs[3], cmds["clip_alone"], Move.CROSS, 0.1)
    assert buf.n == 1
    n_out = p.pool.n_out                                # the pool's count: written first
    assert buf.n == 0 and n_out == p.tasks_out(hs)


def test_a_second_command_of_a_human_goes_after_the_first():
    """A human with a command waiting: its next command reads its rows as they will be
    (the buffer written first), so its depth and room are checked as at the call."""
    p, hs, cmds = _learnt(early_finish_above=40)
    buf = p.prepared.commands
    depth = len(hs[0].stack)
    runs = p.prepared.cmd_kernel_runs
    for _ in range(5):
        p.run(hs[0], cmds["push"])
    assert p.prepared.cmd_kernel_runs == runs + 5      # each through the compiled writers
    q, qs, qc = _learnt(early_finish_above=40)
    for _ in range(5):
        q.run(qs[0], qc["push"])
        q.prepared.commands.apply()
    assert tables(p) == tables(q) and buf.n == 0
    assert len(hs[0].stack) == depth + 5


def test_a_refused_command_raises_at_the_call_and_leaves_nothing():
    """The pool nearly taken by buffered commands of other humans: the command that would
    exhaust it raises TaskPoolExhausted at its call (the buffer written first, then the
    handle calls refuse it), and the tables are those of the commands before it."""
    p, hs, cmds = _learnt(n=4, pool=40)
    q, qs, qc = _learnt(n=4, pool=40)
    buf = p.prepared.commands
    done = waiting = 0
    with pytest.raises(TaskPoolExhausted):
        for j in range(40):
            waiting = buf.n                             # (reading the count writes nothing)
            p.run(hs[j % 4], cmds["combo"], 0.2)
            done = j + 1
    assert done >= 2 and waiting >= 1                   # refused with commands of others waiting
    for j in range(done):
        q.run(qs[j % 4], qc["combo"], 0.2)
    assert tables(p) == tables(q)


def test_a_restore_between_a_command_and_the_update_is_exact():
    """A snapshot with commands waiting writes them first (none is in a state); a restore
    drops the commands issued after the state it brings back."""
    from scuffle.anim.engine.snapshot import load_engine, save_engine

    p, hs, cmds = _learnt()
    saved = save_engine(p, hs)
    base = tables(p)
    p.run(hs[0], cmds["attack"], 0.2, Move.JAB)
    p.run(hs[1], cmds["walk_start"], 0.2, 1.5)
    assert p.prepared.commands.n == 2
    load_engine(p, saved)
    assert p.prepared.commands.n == 0 and tables(p) == base
    p.run(hs[2], cmds["combo"], 0.2)
    mid = save_engine(p, hs)                            # written first
    assert p.prepared.commands.n == 0
    after = tables(p)
    p.run(hs[3], cmds["push"])
    p.step(hs)
    load_engine(p, mid)
    assert tables(p) == after
    p.step(hs)                                          # and the update replays as from the snapshot
    q, qs, qc = _learnt()
    q.run(qs[2], qc["combo"], 0.2)
    q.step(qs)
    assert tables(p) == tables(q)


def test_a_full_buffer_is_written_and_filled_again():
    p, hs, cmds = _learnt()
    small = p.prepared.commands
    assert small.capacity >= 1
    with pytest.raises(ValueError, match="capacity"):
        CommandBuffer(lambda b: None, 0)
    q, qs, qc = _learnt()
    buf = q.prepared.commands
    buf.capacity = 1                                    # a one-row buffer: every second command writes the first
    q.run(qs[0], qc["push"])
    q.run(qs[1], qc["push"])
    assert buf.n == 1 and buf.calls >= 1
    p.run(hs[0], cmds["push"])
    p.run(hs[1], cmds["push"])
    assert tables(p) == tables(q)


@pytest.mark.parametrize("n", [6, 60])
def test_the_rows_a_write_takes_hold_no_handle(n):
    """Every task row the buffer's write takes holds no handle after it (``views``: one is
    made on its first read), whether a few rows are taken (let go one by one) or more
    than _FEW_TAKEN (only the rows flagged as maybe holding one are read): here every free
    row holds a stale handle, flagged, before the write."""
    q, qs, qc = _learnt(n, pool=4000)
    for _ in range(2):                                  # the tables and the pool's flags grown to a round's
        for i, h in enumerate(qs):                      # rows, which then goes as one write
            q.run(h, qc["attack"], *SHAPES["attack"][1](2.0, i, 0.2))
        for _ in range(30):
            q.step(qs)
            q.flush()
    ts = q.stores.tasks
    free = ts.free_rows[:int(ts.n_free[0])].tolist()
    views = ts.views
    views.extend([None] * (ts.capacity - len(views)))
    stale = object()
    for r in free:
        views[r] = stale
        note_view(ts, r)
    for i, h in enumerate(qs):
        q.run(h, qc["attack"], *SHAPES["attack"][1](2.0, i, 0.2))
    buf = q.prepared.commands
    assert buf.n == n
    q.write_commands()
    taken = [r for r in free if ts.live[r]]
    assert (len(taken) > _FEW_TAKEN) == (n == 60)       # both ways of letting the handles go
    assert taken and all(views[r] is None for r in taken)
    assert all(views[r] is stale for r in free if not ts.live[r])    # the rows still free: untouched
    for r in free:
        if views[r] is stale:
            views[r] = None


def test_apply_with_no_row_waiting_leaves_no_human_waiting():
    """``due`` names the humans with a row waiting: with none waiting, apply empties it and
    calls no writer (a human left named there would make the batch's compiled checks stop
    at its next command, again after every apply: a loop that never ends)."""
    written = []
    buf = CommandBuffer(written.append, 4)
    buf.due.update({3, 7})
    buf.apply()
    assert buf.due == set() and buf.n == 0 and written == []
    buf.append(int(CommandKind.PUSH), 5, 1, 0, 0, [0] * CK.B_MAX_STEPS, 1.0, 0.0, 0.0, 0.0, 1, 1, 0, 0)
    assert buf.due == {5} and buf.n == 1
    buf.apply()
    assert written == [buf]                             # the rows go to the writer, which empties the buffer


def test_the_handle_api_after_a_buffered_command_keeps_the_calls_order():
    """A handle call takes its rows after the buffered commands' (the row numbers are those
    of the calls' order)."""
    p, hs, cmds = _learnt()
    q, qs, qc = _learnt()
    p.run(hs[0], cmds["attack"], 0.2, Move.JAB)
    p.change(hs[1], p.loop(hs[1], Move.IDLE), 0.2)
    q.run(qs[0], qc["attack"], 0.2, Move.JAB)
    q.prepared.commands.apply()
    q.change(qs[1], q.loop(qs[1], Move.IDLE), 0.2)
    assert tables(p) == tables(q)


def test_a_command_with_more_steps_than_a_row_holds_runs_at_once():
    from scuffle.anim.playback.recipe import ClipStep, LoopStep, Recipe

    p, hs, _ = _learnt()
    long = p.prepare(Recipe(Place.CHANGE, (ClipStep(Move.JAB), ClipStep(Move.CROSS), ClipStep(Move.HOOK),
                                           ClipStep(Move.KICK), LoopStep(Move.FIGHT_IDLE)), fade=0.2))
    assert len(long.steps) > CK.B_MAX_STEPS
    p.run(hs[0], long)                                  # learnt through the handle calls
    for _ in range(30):
        p.step(hs)
        p.flush()
    runs = p.prepared.cmd_kernel_runs
    p.run(hs[1], long)
    assert p.prepared.commands.n == 0 and p.prepared.cmd_kernel_runs == runs + 1


def test_a_game_restored_between_a_buffered_command_and_the_update_replays_the_same_bytes():
    """Through the Game: a snapshot taken with commands waiting holds them written (its
    checksum is the state's with them); a restore drops the ones issued after it; the
    replay gives the bytes of a Game that never issued them."""
    from scuffle.anim.playback.recipe import ClipStep, LoopStep, Recipe
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    def world():
        g = Game()
        for i, name in enumerate(("a", "b", "c")):
            g.add_human(name, demo_set(), position=(2.0 * i, 0.0, 0.0))
        cmd = g.player.prepare(Recipe(Place.CHANGE, (ClipStep(Move.JAB, blend=0.1), LoopStep(Move.FIGHT_IDLE)),
                                      fade=0.2))
        for _ in range(3):
            for name in ("a", "b", "c"):
                g.player.run(g.instance(name), cmd)      # learnt, then buffered
            for _ in range(20):
                g.step()
        return g, cmd

    g, cmd = world()
    h, hcmd = world()
    try:
        buf = g.player.prepared.commands
        g.player.run(g.instance("a"), cmd)
        h.player.run(h.instance("a"), hcmd)
        assert buf.n == 1
        snap = g.snapshot()                             # writes the waiting command first
        assert buf.n == 0 and g.checksum() == h.checksum()
        g.player.run(g.instance("b"), cmd)
        g.player.run(g.instance("c"), cmd)
        assert buf.n == 2
        g.restore(snap)                                 # the two issued after it: dropped
        assert buf.n == 0 and g.checksum() == h.checksum()
        for _ in range(10):
            g.step()
            h.step()
        assert g.checksum() == h.checksum()
    finally:
        g.close()
        h.close()


def _task(t) -> tuple | None:
    """A task handle as plain values (None: no task)."""
    return None if t is None else (int(t.type), t.anim_id(), t.trow)


# Every kind of read (and write) anim.engine.writefirst names, as a game makes it: each
# returns plain values. ``one`` is the human read, ``hs`` every human.
READS = {
    "record.flags": lambda p, one, hs: one.record.flags,
    "record.held": lambda p, one, hs: one.record.held,
    "record.anim_id": lambda p, one, hs: one.record.anim_id,
    "record.flags =": lambda p, one, hs: setattr(one.record, "flags", one.record.flags | 1 << 40),
    "record.anim_id =": lambda p, one, hs: setattr(one.record, "anim_id", 7),
    "stack": lambda p, one, hs: [_task(t) for t in one.stack],
    "queue": lambda p, one, hs: [_task(t) for t in one.queue],
    "top": lambda p, one, hs: _task(p.top(one)),
    "running": lambda p, one, hs: (_task(p.running(one, TaskType.CLIP)), _task(p.running(one, TaskType.GAIT))),
    "held_on_stack": lambda p, one, hs: p.held_on_stack(one),
    "pool counts": lambda p, one, hs: (p.pool.n_out, p.pool.in_use, p.pool.free),
    "tables' counts": lambda p, one, hs: tuple(getattr(p.stores, t).in_use
                                               for t in ("tasks", "cursors", "fades", "gaits")),
    "tasks_out": lambda p, one, hs: p.tasks_out(hs),
    "a handle call": lambda p, one, hs: _task(p.push(one, p.loop(one, Move.IDLE))),
    "a change": lambda p, one, hs: _task(p.change(one, p.clip(one, Move.JAB, p.loop(one, Move.FIGHT_IDLE)), 0.2)),
    "a task given back": lambda p, one, hs: p.discard(p.loop(one, Move.IDLE)),
    "step": lambda p, one, hs: (p.step(hs), p.flush(), [_task(t) for h in hs for t in h.stack])[2],
    "sample": lambda p, one, hs: (p.sample(hs), [h.poses_refused for h in hs])[1],
    "snapshot": lambda p, one, hs: (save_engine(p, hs), None)[1],
}


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cmds=st.lists(st.tuples(st.sampled_from(BUFFERED), st.integers(0, 3), st.floats(-0.5, 4.5),
                               st.integers(0, 11), st.sampled_from([0.0, 0.2])), min_size=1, max_size=4),
       reads=st.lists(st.tuples(st.sampled_from(sorted(READS)), st.integers(0, 3)), min_size=1, max_size=4))
def test_every_read_after_a_buffered_command_sees_it(cmds, reads):
    """anim.engine.writefirst's rule, read kind by read kind: commands left in the buffer,
    then reads of the commanded humans and of others (the record's fields, the stack and
    queue, the running and top tasks, the held bits, the pool's and tables' counts, handle
    calls that take or give back rows, the update, a sample, a snapshot) give what they
    give when each command was written at its call; the tables agree after each read, bit
    for bit."""
    a, ha, ca = _learnt()
    b, hb, cb = _learnt()
    for kind, i, x, k, fade in cmds:
        args = SHAPES[kind][1](x, k, fade)
        ra = rb = None
        try:
            a.run(ha[i], ca[kind], *args)
            a.prepared.commands.apply()                 # a: written at its call
        except AnimLimitError as e:
            ra = type(e)
        try:
            b.run(hb[i], cb[kind], *args)               # b: left waiting
        except AnimLimitError as e:
            rb = type(e)
        assert ra is rb
    for name, i in reads:
        got = []
        for p, hs in ((a, ha), (b, hb)):
            try:
                got.append(READS[name](p, hs[i], hs))
            except AnimLimitError as e:
                got.append(type(e))
        assert got[0] == got[1], name
        assert tables(a) == tables(b), f"after {name}"


def test_a_fight_attached_has_the_buffers_compiled_call_ready_and_nothing_counted():
    """Fight attach learns the fighters' commands (Player.learn): the command buffer's views
    and compiled entry are made then (from numba's cache), not at the first move's update;
    no row is written nor counted by it, and the fight's first moves run the same rows."""
    from scuffle.anim.engine.coldstart import kernel_ready
    from scuffle.game.tools.bench import build_crowd, crowd_checksum

    game = build_crowd(2, "realistic", "compiled", 1)
    try:
        rules = game.player.prepared
        assert (rules._apply_entry is not None) == kernel_ready("apply_commands", "cmdkernel")
        assert rules.commands.calls == 0 and rules.commands.applied == 0 and rules.commands.n == 0
        for _ in range(40):
            game.step()
        assert rules.commands.applied > 0                     # the AIs' moves went through the buffer
        first = crowd_checksum(game)
    finally:
        game.close()
    again = build_crowd(2, "realistic", "compiled", 1)
    try:
        again.player.prepared._apply_entry = None             # the entry made at the first move instead
        for _ in range(40):
            again.step()
        assert crowd_checksum(again) == first
    finally:
        again.close()
