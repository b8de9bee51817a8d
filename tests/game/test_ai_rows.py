"""The fighter AIs' state as rows (game.fighters.airows): the generator draws random.Random's
numbers from its row, the rows lie in the Game's snapshot arena, and a restore of them
replays the next updates bit for bit with the AIs deciding."""
from __future__ import annotations

import io
import random

import numpy as np
import pytest

from scuffle.game.fighters.airows import RowRandom, ai_table
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.runtime.trace import iter_trace_records, write_records
from scuffle.game.tools.bench import build_crowd

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3, -12, "fighter"])
def test_the_row_generator_draws_random_randoms_numbers_through_several_twists(seed):
    """random(), randint, choice, getrandbits (short and long) and gauss give the numbers
    random.Random gives for the same seed, past several regenerations of the 624 words,
    and the states agree in getstate's form."""
    a, b = RowRandom(seed), random.Random(seed)
    for i in range(2600):               # about 4,400 words: seven regenerations
        k = i % 6
        if k == 0:
            assert a.random() == b.random()
        elif k == 1:
            assert a.randint(1, 3) == b.randint(1, 3)
        elif k == 2:
            assert a.choice((130, 131, 132, 133, 134)) == b.choice((130, 131, 132, 133, 134))
        elif k == 3:
            assert a.getrandbits(5) == b.getrandbits(5) and a.getrandbits(75) == b.getrandbits(75)
        elif k == 4:
            assert a.gauss(0.0, 1.0) == b.gauss(0.0, 1.0)
        else:
            assert a.getstate() == b.getstate()
    b.setstate(a.getstate())
    assert [a.random() for _ in range(5)] == [b.random() for _ in range(5)]


def test_the_generators_state_is_its_row_a_copy_of_the_block_is_a_copy_of_it():
    """Two generators on rows of one table: a copy of the table's block taken, numbers
    drawn, the copy put back: the same numbers again (no state outside the row)."""
    t = ai_table(2)
    r0, r1 = t.alloc(), t.alloc()
    a, b = RowRandom(5, t, r0), RowRandom(6, t, r1)
    saved = t.block.copy()
    first = [(a.random(), b.randint(1, 3)) for _ in range(400)]
    np.copyto(t.block, saved)
    assert [(a.random(), b.randint(1, 3)) for _ in range(400)] == first
    with pytest.raises(ValueError, match="625 words"):
        a.setstate((3, (0,) * 10, None))


def _ais(game) -> list:
    return [c for c in game.fight.controllers if isinstance(c, FighterAI)]


def _run(game, updates: int) -> tuple[str, list[str]]:
    """``updates`` updates: the trace's bytes (poses included) and each update's checksum."""
    out, sums = io.StringIO(), []
    for _ in range(updates):
        game.step()
        write_records(out, iter_trace_records(game, pose=True))
        sums.append(game.checksum())
    return out.getvalue(), sums


@pytest.mark.parametrize("engine", ["compiled", pytest.param("reference", marks=[pytest.mark.slow, pytest.mark.bits])])
def test_a_restore_of_the_ai_rows_replays_the_next_200_updates_bit_for_bit(new_game, engine):
    """Two fighters, the fight rules and two AIs: a snapshot, 200 updates (the AIs decide
    and draw), a restore, the same 200 updates' trace bytes and checksums again, and the
    same as a Game that never rolled back. On the compiled engine the AIs' rows are the
    Fight's ai_rows, whose block lies in the snapshot arena with the engine's tables."""
    game = build_crowd(2, "realistic", engine=engine, seed=4)
    fresh = build_crowd(2, "realistic", engine=engine, seed=4)
    try:
        for _ in range(30):
            game.step()
            fresh.step()
        snap = game.snapshot()
        ais = _ais(game)
        assert len(ais) == 2 and all(a.state_table is game.fight.ai_rows for a in ais)
        if engine == "compiled":
            arena = game._snapshot_plan.arena
            assert game.fight.ai_rows in arena.tables and game.fight.ai_rows.block.base is arena.buf
            assert snap._state.ais.block.base is snap._state.engine_state.arena[1]
        states = [a.save_state() for a in ais]
        ticks = [a.tick for a in ais]
        trace, sums = _run(game, 200)
        assert all(a.tick == t + 200 for a, t in zip(ais, ticks))
        assert [a.save_state()[0] for a in ais] != [s[0] for s in states]       # they drew
        assert game.fight.stats.strikes + game.fight.stats.grabs > 0            # and acted
        game.restore(snap)
        assert [a.save_state() for a in ais] == states
        again, sums_again = _run(game, 200)
        assert again == trace and sums_again == sums
        straight, straight_sums = _run(fresh, 200)
        assert straight == trace and straight_sums == sums
    finally:
        game.close()
        fresh.close()


def test_an_ai_added_later_is_seated_before_the_snapshot_copies_the_rows(new_game):
    """An AI appended to the controllers after the first snapshots gets its row of ai_rows
    before the next snapshot's copy (its state is in it), and a restore of that snapshot
    after its numbers were drawn puts them back; the older snapshot, taken with one
    controller fewer, is refused."""
    from scuffle.game.runtime.snapshot import SnapshotError

    game = build_crowd(2, "realistic", seed=2)
    try:
        for _ in range(10):
            game.step()
        old = game.snapshot()
        extra = FighterAI("h0", "h1", seed=99, think_every=1, aggression=1.0)
        game.fight.controllers.append(extra)
        snap = game.snapshot()
        assert extra.state_table is game.fight.ai_rows
        state = extra.save_state()
        for _ in range(12):
            game.step()
        assert extra.save_state() != state
        game.restore(snap)
        assert extra.save_state() == state
        with pytest.raises(SnapshotError, match="controllers"):
            game.restore(old)
    finally:
        game.close()


def test_the_ais_numbers_are_one_row_field_each_a_column_of_its_row():
    """tick, hold_actions and enabled are one descriptor (RowField) over the row's
    columns: a write lands in the row (enabled as a bool), a seat moves them with the row,
    and a float where the column holds whole numbers is refused."""
    from scuffle.game.fighters.airows import RowField

    assert all(type(vars(FighterAI)[n]) is RowField for n in ("tick", "hold_actions", "enabled"))
    ai = FighterAI("a", "b", seed=1)
    ai.tick, ai.hold_actions, ai.enabled = 41, 2, 0
    t, r = ai.state_table, ai.state_row
    assert (int(t.tick[r]), int(t.hold[r]), t.enabled[r].item()) == (41, 2, False)
    assert ai.enabled is False and ai.tick == 41 and ai.tick.__class__ is int
    other = ai_table(3)
    other.alloc()
    ai.seat(other)
    assert ai.state_table is other and ai.state_row == 1
    assert (ai.tick, ai.hold_actions, ai.enabled) == (41, 2, False)
    ai.enabled = True
    assert other.enabled[1] and not t.enabled[r]
    with pytest.raises(TypeError):
        ai.tick = 1.5


@pytest.mark.parametrize("seed", [0, 5, "fighter"])
def test_a_seeded_generators_first_regeneration_is_made_at_seeding(monkeypatch, seed):
    """A seed stands at its words' end: the regeneration the first draw needs is made
    when seeded (look_ahead), so the draw regenerates nothing, and gives random.Random's
    numbers; a restore of the block to before the draw draws them again from the words
    made ahead; a state put back at its end (setstate) is made ahead too."""
    from scuffle.game.fighters import airows

    a, b = RowRandom(seed), random.Random(seed)
    saved = a._table.block.copy()
    twists = []
    real = airows._twist
    monkeypatch.setattr(airows, "_twist", lambda mt: (twists.append(1), real(mt)))
    first = [a.random() for _ in range(5)]
    assert first == [b.random() for _ in range(5)] and not twists
    assert a.getstate() == b.getstate()
    np.copyto(a._table.block, saved)
    assert [a.random() for _ in range(5)] == first and not twists
    c = random.Random(seed + 1 if isinstance(seed, int) else 1)
    a.setstate(c.getstate())             # a fresh seed's state: at its end, made ahead there
    assert twists == [1]
    twists.clear()
    assert [a.random() for _ in range(3)] == [c.random() for _ in range(3)] and not twists
    for _ in range(400):                 # the next regeneration is made at the draw
        assert a.random() == c.random()
    assert twists


def test_the_ais_inputs_facing_its_opponent_are_made_once():
    """A decision's inputs that face the opponent (Replies) are made once per opponent's
    name: two AIs' grabs and faces over a fight are the same objects decision after
    decision, and equal to the inputs made anew."""
    from scuffle.game.fighters.ai import Replies

    game = build_crowd(2, "realistic", seed=3)
    try:
        seen = []
        for ai in _ais(game):
            ai.think_every = 1
            real = ai.decide

            def decide(g, real=real):
                inp = real(g)
                if inp.face_toward is not None:
                    seen.append(inp)
                return inp
            ai.decide = decide
        for _ in range(150):
            game.step()
        assert len(seen) > 4
        for inp in seen:
            made = Replies.facing(inp.face_toward)
            assert inp in (made.face, made.grab, made.strike)
            assert any(inp is x for ai in _ais(game) for x in ai.replies[1:])
    finally:
        game.close()


@pytest.mark.parametrize("rows", [[0, 1, 2], [1, 2], [2, 0], [3], []])
def test_the_ais_rows_copied_as_blocks_are_the_bytes_of_their_plain_states(rows):
    """A Game's own snapshot's AIs (rows of its saved AI table, copied a slice a column
    where they follow one another, else row by row) give the file's ``ais`` block byte for
    byte as the same states in their plain form (``row_state``) do: the words, tick,
    hold, on, the gauss value only where one is kept; and so does a mix of the two, each
    saved row copied to its own place."""
    from scuffle.anim.engine.snapshot import save_table
    from scuffle.game.fighters import fightrows
    from scuffle.game.fighters.airows import AIRow, ai_table, row_state

    t = ai_table(4)
    rng = np.random.default_rng(5)
    for r in range(4):
        t.alloc()
        t.mt[r] = rng.integers(-2**31, 2**31, 625, dtype=np.int64).astype(np.int32)
        t.has_gauss[r] = r % 2 == 1
        t.gauss[r] = -0.0 if r == 2 else rng.normal()      # (a stale value where none is kept: not copied)
        t.tick[r], t.hold[r], t.enabled[r], t.sid[r] = 100 + r, r, r != 1, 7 + r
    saved = save_table(t)
    as_rows = [AIRow(saved, row) for row in rows]
    plain = [row_state(saved, row) for row in rows]

    def ais_block(ctl: list) -> bytes:
        state = ({}, None, {}, (0, 0, 0, 0.0, 0, {}, 0, 1, []), [], tuple(ctl))
        tables, counters = fightrows.rows_of(state, [None] * len(ctl), fightrows.new_rows_kept())
        assert counters["controllers"] == [None] * len(ctl)     # every state went to its row
        return tables["ais"][1].tobytes()

    want = ais_block(plain)
    assert ais_block(as_rows) == want
    mixed = [a if i % 2 else p for i, (a, p) in enumerate(zip(as_rows, plain))]
    assert ais_block(mixed) == want
    assert any(want) or not rows
