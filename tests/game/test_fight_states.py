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
