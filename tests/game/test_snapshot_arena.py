"""A rollback's in-memory snapshot: the tables' blocks and a few counters.

- the seven tables (the engine's five, the bodies', the combat states') lie side by side
  in one arena, so a snapshot and a restore each copy them once; a snapshot given back
  (``reuse``) is written over in place;
- the engine's part of a snapshot holds no instance or task object: humans are named by
  a serial, the rows' arrangement by an id (a restore of the arrangement the engine has
  seats no human again);
- a restore across a table's growth (the arena laid out again) or a join gives back the
  state as it was, bit for bit;
- what a snapshot copies once per Game (the stateful actions, the names) follows a change.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from scuffle.anim.engine import store
from scuffle.anim.engine.stack import CharacterInstance, HumanRecord
from scuffle.anim.playback.tasks import Task
from scuffle.game.tools.bench import build_crowd

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _fight(updates: int = 20):
    game = build_crowd(2, "realistic", seed=3)
    for _ in range(updates):
        game.step()
    return game


def _tables(game) -> list:
    st, ctx = game.player.stores, game.ctx
    return [st.cursors, st.fades, st.gaits, st.tasks, st.humans, ctx.bodies, ctx.combats]


def test_the_seven_tables_lie_in_one_block_and_a_snapshot_copies_it_once():
    game = _fight()
    try:
        snap = game.snapshot()
        snap_sum = snap.checksum()
        live = [t.block for t in _tables(game)]
        assert len({id(b.base) for b in live}) == 1 and live[0].base is not None
        buf = snap._state.engine_state.arena[1]
        assert buf.nbytes >= sum(b.nbytes for b in live)
        es = snap._state.engine_state
        saved = [*es.tables.values(), es.humans, snap._state.bodies[0], snap._state.combats[0]]
        for ts, block in zip(saved, live):
            assert ts.block.base is buf and np.array_equal(ts.block, block)
        # given back to be written over: the same buffer, now holding the state after a step
        game.step()
        again = game.snapshot(reuse=snap)
        assert again._state.engine_state.arena[1] is buf
        for ts, t in zip([*again._state.engine_state.tables.values()], _tables(game)[:4]):
            assert np.array_equal(ts.block, t.block)
        assert again.checksum() == game.checksum() != snap_sum
    finally:
        game.close()


def _reachable(root) -> list:
    """Every object reachable from ``root`` (types, modules and functions not followed)."""
    seen, out, todo = set(), [], [root]
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, (type, weakref.ref)) or callable(o) and not isinstance(o, tuple):
            continue
        seen.add(id(o))
        out.append(o)
        todo.extend(gc.get_referents(o))
    return out


def test_the_engines_part_of_a_snapshot_holds_no_instance_or_task():
    game = _fight()
    try:
        snap = game.snapshot()
        found = [type(o).__name__ for o in _reachable(snap._state.engine_state)
                 if isinstance(o, (CharacterInstance, Task, HumanRecord))]
        assert found == []
        # the humans are named by serial, and found again by it
        assert [i.name for i in snap._state.engine_state.instances if i is not None] == \
            [n for n, _ in game.humans()]
    finally:
        game.close()


def test_a_rollback_to_the_same_crowd_seats_no_human_again(monkeypatch):
    game = _fight()
    try:
        seats = []
        real = CharacterInstance.seat
        monkeypatch.setattr(CharacterInstance, "seat", lambda self, e, s: (seats.append(s), real(self, e, s)))
        ring = [game.snapshot()]
        sums = [ring[0].checksum()]
        for _ in range(8):
            game.step()
            ring.append(game.snapshot())
            sums.append(ring[-1].checksum())
        for k in (0, 3, 8, 1):
            game.restore(ring[k])
            assert game.checksum() == sums[k]
        assert seats == []
        # a human added since: it leaves, the others keep their rows
        game.add_human("late", game.instance("h0").anim_set, (5.0, 5.0, 0.0), 0.0)
        game.step()
        game.restore(ring[2])
        assert game.checksum() == sums[2] and "late" not in game.names
        assert seats                                   # the engine's arrangement was set back
    finally:
        game.close()


def test_a_restore_across_growth_and_back_gives_each_state_bit_for_bit():
    game = _fight()
    try:
        before = game.snapshot()
        first = before.checksum()
        aset = game.instance("h0").anim_set
        for k in range(12):                            # past the human, body and combat tables' rows
            game.add_human(f"x{k}", aset, (k * 2.0, 9.0, 0.0), 0.0)
        for _ in range(3):
            game.step()
        grown = game.snapshot()
        second = grown.checksum()
        assert game.player.stores.humans.capacity > before._state.engine_state.humans.capacity
        game.restore(before)
        assert game.checksum() == first and len(game.names) == 2
        game.step()
        game.restore(before)
        assert game.checksum() == first
        out = []
        for _ in range(5):
            game.step()
            out.append(game.checksum())
        game.restore(before)
        again = []
        for _ in range(5):
            game.step()
            again.append(game.checksum())
        assert again == out
        with pytest.raises(ValueError, match="not in the world"):
            game.restore(grown)                        # its twelve humans were removed since
        assert second != first
    finally:
        game.close()


class _Counter:
    """A stateful action: its count is saved and restored with the Game."""

    def __init__(self):
        self.n = 0

    def __call__(self, ctx) -> None:
        self.n += 1

    def save_state(self) -> int:
        return self.n

    def load_state(self, n: int) -> None:
        self.n = n


def test_what_a_snapshot_keeps_per_game_follows_a_new_action_and_a_join():
    game = _fight()
    try:
        before = game.snapshot()
        counter = _Counter()
        game.ctx.actions.append(counter)
        with pytest.raises(ValueError, match="stateful actions"):
            game.restore(before)                       # one action more than it saved
        game.step()
        snap = game.snapshot()
        assert snap._state.extras[-1] == 1
        game.step()
        game.restore(snap)
        assert counter.n == 1
        # the names a snapshot keeps are a copy, made again once they change
        kept = snap._state.names
        assert game.snapshot()._state.names is kept
        game.add_human("late", game.instance("h0").anim_set, (5.0, 5.0, 0.0), 0.0)
        joined = game.snapshot()
        assert "late" in joined.humans and "late" not in snap.humans and "late" not in kept
    finally:
        game.close()


def test_tables_too_large_for_an_arena_are_copied_one_by_one_to_the_same_states(monkeypatch):
    monkeypatch.setattr(store, "ARENA_BYTES", 0)
    game = _fight()
    try:
        ring, sums = [], []
        for _ in range(6):
            game.step()
            ring.append(game.snapshot(reuse=ring[-6] if len(ring) >= 6 else None))
            sums.append(ring[-1].checksum())
        assert ring[-1]._state.engine_state.arena is None
        assert len({id(t.block.base) for t in _tables(game)}) > 1 or _tables(game)[0].block.base is None
        for k in (2, 5, 0):
            game.restore(ring[k])
            assert game.checksum() == sums[k]
        monkeypatch.setattr(store, "ARENA_BYTES", 1 << 22)   # laid out at the next snapshot, restored alike
        game.step()
        laid = game.snapshot()
        assert laid._state.engine_state.arena is not None
        game.restore(ring[1])
        assert game.checksum() == sums[1]
        game.restore(laid)
        assert game.checksum() == laid.checksum()
    finally:
        game.close()
