"""The fights' state functions as one pass (game.fighters.fightstates): many fights'
fighters' intents into state velocities over their rows at once, the bits of each
fight's own function run one after the other."""
from __future__ import annotations

import io

import pytest

from scuffle.game.fighters.fightstates import FightStates
from scuffle.game.fighters.locomotion import Locomotion
from scuffle.game.runtime.trace import iter_trace_records, write_records
from scuffle.game.tools.bench import build_crowd


def _run(game, updates: int) -> tuple[str, list[str]]:
    out, sums = io.StringIO(), []
    for _ in range(updates):
        game.step()
        write_records(out, iter_trace_records(game))
        sums.append(game.checksum())
    return out.getvalue(), sums


def test_the_fights_state_functions_are_one_group_in_their_place():
    """Every pair's Fight joins the one group, which stands in the state functions where
    their functions stood; a state function added after it makes the next fight start a
    new group (the order kept)."""
    game = build_crowd(302, "realistic", seed=2)
    try:
        groups = [f for f in game.ctx.state_functions if f.__class__ is FightStates]
        assert len(groups) == 1 and groups[0].fights == game.crowd.fights and len(game.crowd.fights) == 4
    finally:
        game.close()


@pytest.mark.slow
def test_one_pass_over_the_fights_rows_gives_each_fights_own_bits(monkeypatch):
    """A crowd with several fight pairs moving, striking and throwing: the trace bytes and
    checksums of 120 updates with the one pass are those of each fight's own state
    function run in turn, and the pass did run."""
    ran = []
    real = FightStates.one_pass

    def counted(self):
        done = real(self)
        ran.append(done)
        return done

    monkeypatch.setattr(FightStates, "one_pass", counted)
    # 202 humans hold three fight pairs (one a FIGHT_EVERY humans): several fights in the
    # one pass, each with its own rows; the other humans only add time.
    game = build_crowd(202, "realistic", seed=5)
    try:
        grouped = _run(game, 120)
        stats = [(f.stats.strikes, f.stats.grabs, f.stats.throws) for f in game.crowd.fights]
    finally:
        game.close()
    assert ran and all(ran)
    assert sum(s[0] + s[1] for s in stats) > 0
    monkeypatch.setattr(FightStates, "one_pass", lambda self: False)
    game = build_crowd(202, "realistic", seed=5)
    try:
        assert _run(game, 120) == grouped
    finally:
        game.close()


def test_the_pass_stands_aside_for_a_replaced_rule_or_a_stale_view(monkeypatch):
    """The fights' own functions run when the state function is replaced (the pass
    stands only for Locomotion's), and a fighter whose row went stale makes the pass give
    way, so that its fight's own function raises its error, kept for the update's end."""
    game = build_crowd(202, "realistic", seed=1)
    try:
        group = next(f for f in game.ctx.state_functions if f.__class__ is FightStates)
        game.step()
        assert group.one_pass()
        calls = []
        monkeypatch.setattr(Locomotion, "_state_velocities", lambda self, ctx: calls.append(self))
        assert not group.one_pass()
        game.step()
        assert calls == game.crowd.fights
    finally:
        game.close()


def _fresh_rows(group) -> tuple:
    """What the group's rows would be read afresh from every fight's views."""
    group.kept, group.per = None, {}
    got = group.rows()
    return tuple(x.tolist() if hasattr(x, "tolist") else x for x in got[3:8])


def test_a_join_and_a_leave_elsewhere_read_no_fights_rows_again():
    """A human joining and one leaving outside the pairs leave each fight's parts the
    same tuple and its rows as kept (a join costs its own work, not every pair's); the
    rows are those a fresh read gives. A restore that puts every view back where it was
    keeps them; one that moves a view back (the crowd read again whole: Crowd.rebuilds)
    has every fight's rows read again, and right."""
    from scuffle.components import Combat, CombatTable

    game = build_crowd(202, "realistic", seed=3)
    try:
        group = next(f for f in game.ctx.state_functions if f.__class__ is FightStates)
        for _ in range(3):
            game.step()
        group.rows()
        parts = {f: f._parts() for f in group.fights}
        entries = {f: group.per[f][1] for f in group.fights}
        aset = game.instance(game.humans()[0][0]).anim_set
        version = game.ctx.crowd.version
        game.add_human("newcomer", aset, (0.0, -900.0, 0.0), 0.0)
        fighters = {nm for f in group.fights for nm in f.game.names}
        game.remove_human(next(nm for nm, _ in game.humans() if nm not in fighters and nm != "newcomer"))
        assert game.ctx.crowd.version > version
        got = group.rows()
        assert all(f._parts() is parts[f] for f in group.fights)
        assert all(group.per[f][1] is entries[f] for f in group.fights)
        kept = tuple(x.tolist() if hasattr(x, "tolist") else x for x in got[3:8])
        assert kept == _fresh_rows(group)
        parts = {f: f._parts() for f in group.fights}
        entries = {f: group.per[f][1] for f in group.fights}
        snap = game.snapshot()
        game.restore(snap)                                      # every view where it was: the rows kept
        game.step()
        assert all(f._parts() is parts[f] for f in group.fights)
        snap = game.snapshot()
        rebuilds = game.ctx.crowd.rebuilds
        c = group.fights[0]._parts()[0][1][Combat]
        row = c._row
        c.move_to(CombatTable(4))
        stand_in = Combat(table=game.ctx.combats)               # holds the row given back
        c.move_to(game.ctx.combats)                             # another row of the world's table
        assert c._row != row and stand_in._row == row
        game.restore(snap)                                      # the view back on its row: read again
        game.step()
        assert c._row == row and game.ctx.crowd.rebuilds > rebuilds
        assert all(group.per[f][1] is not entries[f] for f in group.fights)
        again = group.rows()
        assert row in again[3].tolist()
        assert tuple(x.tolist() if hasattr(x, "tolist") else x for x in again[3:8]) == _fresh_rows(group)
    finally:
        game.close()


def test_a_view_moved_to_another_row_is_read_again_after_the_next_change():
    """A fighter's combat view moved to another row (Combat.move_to, the old row given
    back) makes the pass give way, and the kept rows of every fight are let go: after the
    next change of the world the rows are read afresh, the moved view's new row among
    them, and the pass runs again."""
    from scuffle.components import Combat, CombatTable

    game = build_crowd(202, "realistic", seed=4)
    try:
        group = next(f for f in game.ctx.state_functions if f.__class__ is FightStates)
        game.step()
        assert group.one_pass()
        fight = group.fights[1]
        e, mine = fight._parts()[0]
        c = mine[Combat]
        table = c._table
        other = CombatTable(4)
        c.move_to(other)
        c.move_to(table)                                       # back in the world's table, a new row
        assert not group.one_pass() and group.per == {}
        game.add_human("newcomer", game.instance(game.humans()[0][0]).anim_set, (0.0, -900.0, 0.0), 0.0)
        assert group.one_pass()
        assert c._row in group.rows()[3].tolist()
    finally:
        game.close()
