"""Save, restore and rewind: Game.snapshot / restore / checksum, the byte form,
and the rollback sync test (GGPO's SyncTest) on fights and crowds.

Every check compares whole states (Game.checksum, which covers the tables, the engine's
values, the bodies, the combat rows, the fight rules and the stateful actions) and the
pinned trace bytes, poses included: a restore and a replay must give the bytes of a run
that never left.
"""
from __future__ import annotations

import random

import pytest

from scuffle.anim.engine.callbacks import Callback
from scuffle.components import Combat
from scuffle.game.fighters import registry as fighters_registry
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.scenario import parse_scenario, setup_scenario
from scuffle.game.runtime.snapshot import (SNAPSHOT_VERSION, SavedRandom, Snapshot, SnapshotError, SyncError,
                                           parts, sync_test)
from scuffle.game.runtime.world import Game
from scuffle.game.tools.bench import build_crowd

from gamehelp import ai_fight, traced

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


_fight, _trace = ai_fight, traced


def _rollbacks(updates: int, distances) -> int:
    """The rollbacks sync_test makes: after update u (u + 1 run), k = distances[u % len]
    back, when that many updates were run."""
    ks = list(distances)
    return sum(1 for u in range(updates) if u + 1 - ks[u % len(ks)] >= 0)


# ---------------------------------------------------------------- restore, replay
def test_a_restored_fight_replays_the_same_trace_bytes_and_state():
    g = _fight()
    try:
        _trace(g, 40)
        snap = g.snapshot()
        first = _trace(g, 50)
        end = g.checksum()
        for _ in range(2):                             # one snapshot restores any number of times
            g.restore(snap)
            assert g.update == snap.update == 40
            assert _trace(g, 50) == first
            assert g.checksum() == end
    finally:
        g.close()


def test_the_fight_reaches_a_ko_and_a_new_round_within_the_sync_run():
    g = _fight()
    try:
        _trace(g, 100)
        rounds = g.fight.stats.rounds
        assert rounds and rounds[0]["ko_update"] < 90 and g.fight.stats.round == 2
    finally:
        g.close()


def test_rollback_sync_test_on_a_short_fight_with_kos():
    report = sync_test(lambda: (g := _fight(), g.step), 100)
    assert report.rollbacks == _rollbacks(100, range(1, 9)) == 100
    assert report.replayed == sum(1 + u % 8 for u in range(100))


@pytest.mark.slow
def test_rollback_sync_test_on_a_small_realistic_crowd():
    def build():
        g = build_crowd(24, "realistic", seed=5)
        return g, g.step
    report = sync_test(build, 40, distances=(1, 3, 8))
    assert report.rollbacks == _rollbacks(40, (1, 3, 8))


@pytest.mark.slow
def test_rollback_sync_test_on_the_reference_engine():
    report = sync_test(lambda: (g := _fight(engine="reference"), g.step), 24, distances=(2, 5))
    assert report.rollbacks == _rollbacks(24, (2, 5))


@pytest.mark.slow
def test_rollback_sync_test_on_a_scenario_with_commands():
    sc = parse_scenario(_commands_scenario(60), registry=fighters_registry())

    def build():
        game = setup_scenario(sc)
        return game, game.step
    assert sync_test(build, 60, distances=(4, 7)).rollbacks == _rollbacks(60, (4, 7))


def _commands_scenario(updates: int, seed: int = 9) -> str:
    """A scenario of the demo fight's actions at random updates (seeded)."""
    rng = random.Random(seed)
    lines = [f"updates = {updates}", "", "[fight]", "rounds = true", "", "[sets.demo]", 'library = "demo"']
    for name, y, h in (("p1", -1.5, 0.0), ("p2", 1.5, 180.0)):
        lines += ["", "[[humans]]", f'name = "{name}"', 'set = "demo"', f"position = [0.0, {y}, 0.0]",
                  f"heading = {h}", "health = 20.0"]
    for u in sorted(rng.sample(range(1, updates), max(12, updates // 10))):
        who = rng.choice(("p1", "p2"))
        lines += ["", "[[commands]]", f"update = {u}", f'human = "{who}"',
                  f'action = "{rng.choice(("strike", "grab", "throw", "let_go"))}"']
    return "\n".join(lines) + "\n"


def test_a_state_kept_outside_the_snapshot_fails_the_sync_test():
    """An action that keeps its own counter in a closure, unsaved: the replay after a
    rollback sees the counter of the abandoned future, and the sync test says where."""
    def build():
        g = _fight()
        kept = [0]

        def drifting(ctx):                            # state outside the snapshot
            kept[0] += 1
            if kept[0] % 5 == 0:
                g.component("p1", Combat).hits += 1
        g.ctx.actions.append(drifting)
        return g, g.step
    with pytest.raises(SyncError, match="combats"):
        sync_test(build, 30, distances=(3,))


# ---------------------------------------------------------------- what a restore refuses
def test_restore_refuses_a_snapshot_whose_human_left_and_changes_nothing():
    g = _fight()
    try:
        _trace(g, 5)
        snap = g.snapshot()
        g.remove_human("p2")
        before = g.checksum()
        with pytest.raises(SnapshotError, match="'p2'.*cannot come back"):
            g.restore(snap)
        assert g.checksum() == before
    finally:
        g.close()


def test_restore_refuses_a_human_removed_and_added_again_under_its_name_and_changes_nothing():
    """A human that joined after snapshot A, then left with A's restore and joined again
    under the same name (and, esper's counter restored, the same entity), is not the
    human a later snapshot B holds: B's restore is refused, the Game unchanged; a human
    never removed restores as before."""
    g = _fight()
    try:
        _trace(g, 3)
        snap = g.snapshot()
        g.add_human("late", demo_set(), position=(5.0, 0.0, 0.0))
        ent = g.names["late"]
        _trace(g, 2)
        later = g.snapshot()
        g.restore(snap)
        g.add_human("late", demo_set(), position=(5.0, 0.0, 0.0))
        assert g.names["late"] == ent                 # the same name and entity: another human
        before = g.checksum()
        with pytest.raises(SnapshotError, match="'late'.*added again"):
            g.restore(later)
        assert g.checksum() == before
        g.remove_human("late")
        with pytest.raises(SnapshotError, match="'late'.*cannot come back"):
            g.restore(later)
        g.restore(snap)                               # the humans it holds were never removed
        again = _trace(g, 6)
        g.restore(snap)
        g.add_human("late", demo_set(), position=(5.0, 0.0, 0.0))
        _trace(g, 2)
        g.restore(snap)
        assert [n for n, _ in g.humans()] == ["p1", "p2"]
        assert _trace(g, 6) == again
    finally:
        g.close()


def test_a_human_is_named_by_a_serial_only_once_a_snapshot_names_it():
    """A game that takes no snapshot keeps no serial map of its crowd (memory: a weak
    entry per human); the first snapshot names the humans seated before it, and one who
    joins after it is named by the next, whose restore finds it by that name."""
    from scuffle.anim.engine.stack import instance_of

    g = _fight()
    try:
        _trace(g, 3)
        assert g.instance("p1").serial == 0 and g.instance("p2").serial == 0
        snap = g.snapshot()
        s1, s2 = g.instance("p1").serial, g.instance("p2").serial
        assert s1 and s2 and s1 != s2 and instance_of(s1) is g.instance("p1")
        g.add_human("late", demo_set(), position=(5.0, 0.0, 0.0))
        _trace(g, 2)
        assert g.instance("late").serial == 0
        later = g.snapshot()
        late = g.instance("late").serial
        assert late not in (0, s1, s2) and instance_of(late) is g.instance("late")
        expected = _trace(g, 6)
        g.restore(later)
        assert _trace(g, 6) == expected
        g.restore(snap)
        assert [n for n, _ in g.humans()] == ["p1", "p2"]
    finally:
        g.close()


def test_restore_removes_the_humans_added_after_the_snapshot():
    g = _fight()
    try:
        _trace(g, 5)
        snap = g.snapshot()
        expected = _trace(g, 10)
        g.restore(snap)
        g.add_human("late", demo_set(), position=(5.0, 0.0, 0.0))
        _trace(g, 3)
        g.restore(snap)
        assert [n for n, _ in g.humans()] == ["p1", "p2"]
        assert _trace(g, 10) == expected
        g.add_human("late", demo_set(), position=(5.0, 0.0, 0.0))   # the name is free again
    finally:
        g.close()


def test_a_rollback_to_the_same_crowd_keeps_the_systems_lists_and_a_changed_one_remakes_them():
    """A restore with the same humans, every body and combat view on its row, leaves the
    crowd's lists as they are (a rollback's first update does not read the crowd from
    esper again: 2.2 ms more at 1,000 humans); humans added since make the crowd be read
    again. Both replay the bytes of a run that never left."""
    g = _fight()
    try:
        _trace(g, 5)
        snap = g.snapshot()
        expected = _trace(g, 10)
        crowd = g.ctx.crowd
        kept = (crowd.version, crowd.pose_col, list(crowd.entities))
        out = g.player.pool.out                      # the pool's flags: written back in place, so the
        g.restore(snap)                              # prepared commands' views and the flush's arguments hold
        assert g.player.pool.out is out
        assert _trace(g, 10) == expected
        assert crowd.version == kept[0] and crowd.pose_col is kept[1] and crowd.entities == kept[2]
        g.restore(snap)
        g.add_human("late", demo_set(), position=(5.0, 0.0, 0.0))
        _trace(g, 2)
        v = crowd.version
        g.restore(snap)                              # "late" leaves: the crowd is read again
        assert crowd.version > v and crowd._stale
        assert _trace(g, 10) == expected
        assert not crowd._stale and crowd.entities == kept[2] and len(crowd) == 2
    finally:
        g.close()


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_a_human_not_yet_stepped_gets_its_private_record_back(engine):
    """A snapshot taken before a human's first step holds its record's private row (flags,
    anim id, speed, report callback); after steps moved the record into the world's human
    table, a restore puts the private row back, and the replay gives the same bytes."""
    g = Game(engine=engine)
    try:
        g.add_human("a", demo_set(), position=(0.0, 0.0, 0.0))
        inst, rec = g.instance("a"), g.record("a")
        rec.held, inst.speed, inst.on_report = 0x40, 0.5, Callback("report", (1,))
        private = rec.table
        snap = g.snapshot()
        g.change("a", g.player.gait(inst, [408, 409, 410, 411, 411], target=2.0, value=0.0), 0.3)
        expected = _trace(g, 6)
        assert engine == "reference" or rec.table is g.player.stores.humans
        g.restore(snap)
        assert rec.alive() and rec.table.world is None and (engine == "reference" or rec.table is not private)
        assert rec.held == 0x40 and inst.speed == 0.5 and inst.on_report == Callback("report", (1,))
        g.change("a", g.player.gait(inst, [408, 409, 410, 411, 411], target=2.0, value=0.0), 0.3)
        assert _trace(g, 6) == expected
    finally:
        g.close()


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_a_snapshot_between_remove_human_and_the_flush_gives_the_row_back_on_replay(engine):
    """Taken after remove_human, before the flush that releases the human's cut tasks (its
    record's row still held for them): each replay releases them, gives the row back and
    leaves the record stale, with the same bytes and checksum."""
    g = _fight(engine=engine)
    try:
        g.add_human("c", demo_set(), position=(4.0, 0.0, 0.0))
        g.change("c", g.player.chain(g.instance("c"), [int(Move.JAB), int(Move.FIGHT_IDLE)], held=0x1))
        _trace(g, 3)
        rec = g.record("c")
        g.remove_human("c")
        assert rec.alive()                                   # its tasks wait for the flush
        snap = g.snapshot()
        expected, checksum = _trace(g, 5), g.checksum()
        assert not rec.alive()
        for _ in range(2):
            g.restore(snap)
            assert rec.alive()
            assert _trace(g, 5) == expected and g.checksum() == checksum
            assert not rec.alive()
    finally:
        g.close()


def test_restore_refuses_another_engine_and_fight_rules_that_differ(new_game):
    g = _fight()
    plain = new_game()
    ref = new_game(engine="reference")
    try:
        snap = g.snapshot()
        with pytest.raises(SnapshotError, match="engine"):
            ref.restore(snap)
        plain.add_human("p1", demo_set())
        plain.add_human("p2", demo_set())
        with pytest.raises(SnapshotError):
            plain.restore(snap)
        with pytest.raises(SnapshotError, match="expected a Snapshot"):
            g.restore("not a snapshot")
    finally:
        g.close()


# ---------------------------------------------------------------- the byte form
def test_bytes_round_trip_restores_on_a_game_set_up_the_same_way():
    a = _fight()
    b = _fight()
    try:
        _trace(a, 60)
        data = a.snapshot().to_bytes()
        assert data[:8] == b"SCUFSNAP"
        expected = _trace(a, 40)
        snap = Snapshot.from_bytes(data)
        assert (snap.update, snap.humans, snap.engine) == (60, ("p1", "p2"), "compiled")
        b.restore(snap)
        assert b.checksum() != a.checksum()           # a is 40 updates on
        assert _trace(b, 40) == expected
        assert b.checksum() == a.checksum()
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("mangle, message", [
    (lambda d: d[:5], "shorter than the"),
    (lambda d: b"NOTASNAP" + d[8:], "magic"),
    (lambda d: d[:8] + (SNAPSHOT_VERSION + 1).to_bytes(4, "little") + d[12:], "format"),
    (lambda d: d[:-10], "truncated"),
    (lambda d: d + b"\0", "truncated or padded"),
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "corrupted"),
])
def test_bad_bytes_get_a_one_line_error_naming_the_offset(mangle, message):
    g = _fight()
    try:
        _trace(g, 3)
        data = g.snapshot().to_bytes()
    finally:
        g.close()
    with pytest.raises(SnapshotError, match=message) as e:
        Snapshot.from_bytes(mangle(data))
    assert "\n" not in str(e.value) and "offset" in str(e.value)


def test_from_bytes_refuses_what_is_not_bytes():
    with pytest.raises(SnapshotError, match="expected bytes"):
        Snapshot.from_bytes("SCUFSNAP")                # type: ignore[arg-type]


def test_bytes_of_another_world_are_refused_before_anything_changes(new_game):
    g = _fight()
    other = new_game()
    try:
        data = g.snapshot().to_bytes()
        other.add_human("zed", demo_set())
        before = other.checksum()
        with pytest.raises(SnapshotError):
            other.restore(Snapshot.from_bytes(data))
        assert other.checksum() == before
    finally:
        g.close()


def test_a_closure_callback_has_no_byte_form_but_data_has(new_game):
    g = new_game()
    g.add_human("a", demo_set())
    inst = g.instance("a")
    g.callback("test.noted", lambda inst, *args: None)
    g.change("a", g.player.clip(inst, int(Move.JAB), g.player.loop(inst, int(Move.FIGHT_IDLE)),
                                on_end=Callback("test.noted", (1, "x"))))
    g.step()
    assert Snapshot.from_bytes(g.snapshot().to_bytes()).update == 1
    g.change("a", g.player.clip(inst, int(Move.JAB), g.player.loop(inst, int(Move.FIGHT_IDLE)),
                                on_end=lambda i: None))
    with pytest.raises(SnapshotError, match="callbacks must be data"):
        g.snapshot().to_bytes()


def test_to_bytes_needs_the_game_open():
    g = _fight()
    snap = g.snapshot()
    g.close()
    with pytest.raises(SnapshotError, match="closed"):
        snap.to_bytes()


# ---------------------------------------------------------------- checksum, outputs, reuse
def test_two_peers_in_the_same_state_have_the_same_checksum_and_part_from_a_change():
    a, b = _fight(), _fight()
    try:
        _trace(a, 30)
        _trace(b, 30)
        assert a.checksum() == b.checksum()
        b.component("p1", Combat).health -= 1.0
        assert a.checksum() != b.checksum()
        pa, pb = parts(a.snapshot()), parts(b.snapshot())
        assert [k for k in pa if pa[k] != pb[k]] == ["combats"]
    finally:
        a.close()
        b.close()


def test_a_snapshot_is_independent_of_later_steps():
    g = _fight()
    try:
        _trace(g, 10)
        snap = g.snapshot()
        digest = snap.checksum()
        _trace(g, 20)
        assert snap.checksum() == digest
    finally:
        g.close()


def test_outputs_keep_the_last_updates_poses_and_events_for_a_viewer():
    g = _fight()
    try:
        _trace(g, 12)
        pos, rot = g.bones_world("p1")
        events = list(g.instance("p2").events)
        with_out, without = g.snapshot(outputs=True), g.snapshot()
        _trace(g, 9)
        g.restore(with_out)
        p2, r2 = g.bones_world("p1")
        assert (p2 == pos).all() and (r2 == rot).all()
        assert [repr(e) for e in g.instance("p2").events] == [repr(e) for e in events]
        g.restore(without)                             # no outputs: none until the next step
        assert g.instance("p2").events == [] and g.instance("p1").released == []
        assert g.checksum() == with_out.checksum() == without.checksum()   # outputs are not state
    finally:
        g.close()


def test_a_ring_of_reused_snapshots_restores_like_new_ones():
    g = _fight()
    try:
        ring = [g.snapshot() for _ in range(3)]
        sums = {}
        for u in range(12):
            ring[u % 3] = g.snapshot(reuse=ring[u % 3])
            sums[g.update] = g.checksum()
            g.step()
        at = ring[(11 - 1) % 3]                        # the snapshot of update 10
        g.restore(at)
        assert at.update == 10 and g.checksum() == sums[10]
    finally:
        g.close()


def test_saved_random_draws_the_numbers_of_random_random_and_saves_cheaply():
    a, b = SavedRandom(42), random.Random(42)
    assert [a.random() for _ in range(5)] == [b.random() for _ in range(5)]
    s = a.save_state()
    assert a.save_state() is s                         # nothing drawn: the same state
    x = [a.randint(0, 99) for _ in range(5)]
    a.load_state(s)
    assert [a.randint(0, 99) for _ in range(5)] == x



@pytest.mark.parametrize("draw", [
    lambda r: r.random(), lambda r: r.getrandbits(40), lambda r: r.randrange(12), lambda r: r.uniform(0.0, 4.0),
    lambda r: r.choice("abcdef"), lambda r: r.shuffle(list(range(9))), lambda r: r.gauss(0.0, 1.0),
    lambda r: r.randbytes(5), lambda r: r.choices(range(7), weights=range(1, 8), k=3)],
    ids=["random", "getrandbits", "randrange", "uniform", "choice", "shuffle", "gauss", "randbytes", "choices"])
def test_every_draw_of_a_saved_random_is_random_randoms_and_a_new_state(draw):
    """Each way of drawing gives random.Random's numbers, and the state saved after it is
    a new one (the one kept from before the draw is not handed out again): a load of the
    state saved before the draw draws it again."""
    a, b = SavedRandom(7), random.Random(7)
    for _ in range(3):
        before = a.save_state()
        got = draw(a)
        assert got == draw(b)
        after = a.save_state()
        assert after is not before and after != before
        a.load_state(before)
        assert draw(a) == got and a.save_state() == after

# ---------------------------------------------------------------- the full suite's long runs
@pytest.mark.slow
@pytest.mark.bits
@pytest.mark.parametrize("seed", [1, 2, 5, 7])
def test_rollback_sync_test_on_long_fights(seed):
    """Several rounds with K.O.s (health 12, round pause 10), 450 updates each."""
    report = sync_test(lambda: (g := _fight(seed=seed, health=12.0), g.step), 450)
    assert report.rollbacks == 450


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 11])
def test_rollback_sync_test_on_random_crowds(seed):
    def build():
        g = build_crowd(20 + 5 * seed, "realistic", seed=seed)
        return g, g.step
    assert sync_test(build, 90, distances=(1, 4, 8)).rollbacks == _rollbacks(90, (1, 4, 8))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 4, 9])
def test_rollback_sync_test_on_random_scenarios(seed):
    sc = parse_scenario(_commands_scenario(240, seed), registry=fighters_registry())

    def build():
        game = setup_scenario(sc)
        return game, game.step
    assert sync_test(build, 240, distances=(1, 2, 5, 8)).rollbacks == _rollbacks(240, (1, 2, 5, 8))


def test_a_removed_humans_combat_view_is_stale_and_a_newcomer_does_not_alias_it(new_game):
    from scuffle.anim.engine.store import StaleHandle

    g = new_game()
    g.add_human("a", demo_set(), health=50.0)
    old = g.component("a", Combat)
    g.remove_human("a")
    assert not old.alive()
    with pytest.raises(StaleHandle, match="Combat.health"):
        old.health
    g.add_human("b", demo_set(), health=70.0)
    assert g.component("b", Combat).health == 70.0
    with pytest.raises(StaleHandle):
        old.state = "free"


def test_a_fight_state_that_does_not_fit_is_refused_before_anything_changes():
    g = _fight()
    try:
        _trace(g, 4)
        snap = g.snapshot()
        _trace(g, 4)
        g.fight.controllers.pop()                      # one AI less than the snapshot saved
        before = g.checksum()
        with pytest.raises(SnapshotError, match="2 controllers saved, 1 here"):
            g.restore(snap)
        assert g.checksum() == before and g.update == 8
    finally:
        g.close()


def test_the_checksum_does_not_depend_on_which_task_handles_were_read():
    """Game.checksum digests the rows, not which of their handles exist: a prepared command
    makes no handle until a row is read (anim.playback.tasks.task_at), and reading the stack (a debug
    view, one peer's overlay) must not change the digest two peers compare; a snapshot
    restored into a Game whose handles were read gives the same digest too."""
    from scuffle.anim.playback.recipe import Arg, ClipStep, LoopStep, Place, Recipe

    def run(read: bool) -> tuple[str, str]:
        with Game() as g:
            for i in range(3):
                g.add_human(f"h{i}", demo_set(), position=(2.0 * i, 0.0, 0.0))
            p = g.player
            cmd = p.prepare(Recipe(Place.CHANGE, (ClipStep(Arg(1)), LoopStep(Move.FIGHT_IDLE)), fade=Arg(0)))
            insts = [g.instance(f"h{i}") for i in range(3)]
            for inst in insts:                       # learnt: later runs take the direct path
                p.run(inst, cmd, 0.2, int(Move.JAB))
            g.step()
            for inst in insts:
                p.run(inst, cmd, 0.2, int(Move.JAB))
            if read:
                assert all(inst.stack for inst in insts)                # every row's handle made
            first = g.checksum()
            for _ in range(12):
                g.step()
            return first, g.checksum()

    assert run(False) == run(True)


def test_a_saved_random_given_a_state_saves_that_state():
    """setstate marks the state changed: the next save is the state given, not the one
    kept from before (a host that sets the generator's state directly)."""
    a = SavedRandom(3)
    kept = a.save_state()
    other = random.Random(99)
    a.setstate(other.getstate())
    assert a.save_state() != kept
    assert [a.random() for _ in range(3)] == [other.random() for _ in range(3)]
