"""The caches of an update's fixed cost (docs/performance.md's goal: 2 fighters <= 0.05 ms CPU per
update): each is derived data, made again by a change it cannot miss.

- the few-human paths (a human's queue count, status, refusals and held flag read one by
  one; the deferred list put in step order through a dict) against the column operations
  they stand for: a crowd that a host grows mid-run past the tables' 64 rows, restores
  from a snapshot and thins out, run both ways, gives the same state and poses bit for bit;
- ``Game.humans``' kept list after a human is added, removed, renamed, deleted directly
  in esper, a snapshot is restored, another esper world is current, and when a caller
  changes the list it was handed;
- the step's rules and float32 dt (made once per options object and dt object) after the
  options are swapped and when dt changes, a dt that is not a float included;
- a trusted kernel call whose arguments are the very objects typed last (one identity
  test each) and one whose arguments are new objects (checked, typed);
- the glue's fast views (the state function's kept views of the body and combat tables,
  the placement's rows, flat_views' memoryviews, the dispatch's event lists) after the
  tables grow, a restore, a removal, a stray body on the table, a handler that grows a table.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io

import esper
import numpy as np
import pytest

from scuffle.anim.playback import batch as batch_mod
from scuffle.anim.engine import kernels as K
from scuffle.anim.playback.tasks import EventRule
from scuffle.anim.engine.trusted import TrustedKernel
from scuffle.game.fighters.moves import Move
from scuffle.game.runtime.trace import iter_trace_records, write_records
from scuffle.game.tools.bench import build_crowd
from scuffle.anim.maths import detmath
from scuffle.components import Body, BodyTable, Combat
from scuffle.components.bodies import flat_views
from scuffle.game.fighters.locomotion import Locomotion
from scuffle.systems import motion as motion_mod
from scuffle.systems import placement as placement_mod
from scuffle.systems.motion import _wrap

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _steps(game, updates: int, digest) -> None:
    """Run ``updates`` updates, each one's trace records and poses (bone transforms, root
    velocities) into ``digest``."""
    for _ in range(updates):
        game.step()
        out = io.StringIO()
        write_records(out, iter_trace_records(game))
        digest.update(out.getvalue().encode())
        ctx = game.ctx
        for a in (ctx.bone_pos, ctx.bone_rot, ctx.poses.vel, ctx.poses.root):
            digest.update(a.tobytes())


def _command(game, name: str, k: int) -> None:
    """A change on an extra human: a clip handing over into the idle loop, under a fade."""
    p, inst = game.player, game.instance(name)
    move = (Move.JAB, Move.KICK, Move.HIT_FRONT, Move.WALK_STOP)[k % 4]
    p.change(inst, p.clip(inst, int(move), p.loop(inst, int(Move.IDLE))), 0.2)


def _grown_restored_thinned() -> tuple[str, str]:
    """Two fighters, then 70 extras added mid-run (the human, body and combat tables grow
    past their 64 rows), a snapshot restored (the continuation replayed), then most extras
    removed (by remove_human, and one deleted in esper directly); returns the digest of
    every update's trace records and poses, and the final checksum."""
    game = build_crowd(2, "realistic", seed=5)
    digest = hashlib.sha256()
    _steps(game, 30, digest)
    aset = game.instance("h0").anim_set
    for k in range(70):
        game.add_human(f"x{k}", aset, (k * 2.0, 9.0, 0.0), 0.0)
        _command(game, f"x{k}", k)
    _steps(game, 20, digest)
    for k in range(0, 70, 3):
        _command(game, f"x{k}", k + 1)
        if k % 2:                                       # queued: started by the next step
            inst = game.instance(f"x{k}")
            game.player.enqueue(inst, game.player.clip(inst, int(Move.CROSS), game.player.loop(inst, int(Move.IDLE))))
    snap = game.snapshot()
    ahead = hashlib.sha256()
    _steps(game, 15, ahead)
    game.restore(snap)
    again = hashlib.sha256()
    _steps(game, 15, again)
    assert again.hexdigest() == ahead.hexdigest()       # the restore forgot every cached list
    digest.update(ahead.digest())
    for k in range(1, 70):
        if k == 40:
            with game.active():                         # deleted behind the Game's back
                esper.delete_entity(game.entity(f"x{k}"))
        else:
            game.remove_human(f"x{k}")
    _steps(game, 25, digest)
    return digest.hexdigest(), game.checksum()


def test_the_few_human_paths_give_the_column_operations_bits_through_growth_restore_and_removal(monkeypatch):
    few = _grown_restored_thinned()
    monkeypatch.setattr(batch_mod, "_FEW", -1)          # every human through numpy's column operations
    monkeypatch.setattr(motion_mod, "_FEW", -1)
    columns = _grown_restored_thinned()
    assert few == columns


def test_the_moving_bodies_held_flags_follow_a_grab_and_the_crowd():
    """StateUpdate's few moving rows (the crowd's humans' body rows): their held flag is the
    attachment's every update, the idle rows held; a crowd grown past the few (the body table
    grown) and thinned again follows."""
    game = build_crowd(2, "realistic", seed=3)
    state = next(p for p in game.processors if isinstance(p, motion_mod.StateUpdate))
    table = game.ctx.bodies
    crowd = game.ctx.crowd
    seen: list = []

    def after_state(ctx, system: str) -> None:          # right after the state update's root motion
        if system == "state":
            rows = [r for r in crowd.human_rows if r >= 0]
            assert len(rows) == 2
            held = [bool(state._held[r]) for r in rows]
            assert held == [bool(table.attachment[r] != -1) for r in rows]
            idle = np.flatnonzero(crowd.idle[:table.capacity])
            assert state._held[idle].all() and not set(idle.tolist()) & set(rows)
            seen.append(any(held))

    game.ctx.probe.append(after_state)
    for _ in range(400):
        game.step()
    game.ctx.probe.remove(after_state)
    assert len(seen) == 400 and any(seen)               # the AIs held someone at least once
    for k in range(70):                                 # the body table grows: 72 moving rows
        game.add_human(f"x{k}", game.instance("h0").anim_set, (k * 2.0, 9.0, 0.0), 0.0)
    game.step()
    assert len(crowd) > motion_mod._FEW and table.capacity > 64   # past _FEW: the column operations
    assert (crowd.pose_col[[r for r in crowd.human_rows]] == np.arange(72)).all()
    for k in range(70):
        game.remove_human(f"x{k}")
    game.ctx.probe.append(after_state)
    game.step()
    assert len(crowd) == 2 and len(seen) == 401


def test_humans_list_follows_every_change_of_the_crowd(new_game):
    game = new_game()
    aset = build_crowd(2, "realistic").instance("h0").anim_set
    for name in ("a", "b", "c"):
        game.add_human(name, aset)
    first = game.humans()
    assert [n for n, _ in first] == ["a", "b", "c"]
    first.clear()                                       # a caller's list is its own
    assert [n for n, _ in game.humans()] == ["a", "b", "c"]
    game.add_human("d", aset)
    assert [n for n, _ in game.humans()] == ["a", "b", "c", "d"]
    game.remove_human("b")
    assert [n for n, _ in game.humans()] == ["a", "c", "d"]
    game.names["z"] = game.names.pop("a")               # renamed in place: another name, the same entity
    assert [n for n, _ in game.humans()] == ["z", "c", "d"]
    with game.active():
        esper.delete_entity(game.names["c"])            # deleted behind the Game's back
    assert [n for n, _ in game.humans()] == ["z", "d"]
    assert "c" not in game.names
    game.step()
    snap = game.snapshot()
    game.add_human("e", aset)
    assert [n for n, _ in game.humans()] == ["z", "d", "e"]
    game.restore(snap)                                  # the humans added since go
    assert [n for n, _ in game.humans()] == ["z", "d"]


def test_humans_list_of_each_game_in_its_own_world_whichever_world_is_current(new_game):
    one, two = new_game(), new_game()
    aset = build_crowd(2, "realistic").instance("h0").anim_set
    one.add_human("p", aset)
    two.add_human("q", aset)
    two.add_human("r", aset)
    for world in ("default", one.world, two.world):
        esper.switch_world(world)
        assert [n for n, _ in one.humans()] == ["p"]
        assert [n for n, _ in two.humans()] == ["q", "r"]
        one.step()
        two.step()
        with two.active():                              # deleted in the other world only
            if esper.entity_exists(two.names.get("r", -1)):
                esper.delete_entity(two.names["r"], immediate=True)
        assert [n for n, _ in two.humans()] == ["q"]
        assert [n for n, _ in one.humans()] == ["p"]
        two.add_human("r", aset)
    esper.switch_world("default")


def test_the_step_rules_follow_swapped_options_and_dt_follows_its_value():
    game = build_crowd(2, "realistic")
    player, batch = game.player, game.player.batch
    game.step()
    rules = batch._rules
    game.step()
    assert batch._rules is rules                        # one StepRules while the options are the same object
    player.options = dataclasses.replace(player.options, end_zero_overshoot=True, events=EventRule.NEWEST,
                                         cleanup_above=9)
    game.step()
    assert batch._rules == K.StepRules(True, True, 9) and batch._rules is not rules
    insts = [game.instance(n) for n, _ in game.humans()]
    player.step(insts, 1.0 / 60.0)
    assert batch._dt32 == float(np.float32(1.0 / 60.0))
    dt = np.array(1.0 / 30.0)                           # not a float: never taken as the same dt again
    player.step(insts, dt)
    assert batch._dt32 == float(np.float32(1.0 / 30.0))
    dt[...] = 0.01
    player.step(insts, dt)
    assert batch._dt32 == float(np.float32(0.01))


def test_a_dt_given_as_a_new_object_each_update_or_as_the_same_one_gives_the_same_bits():
    games = [build_crowd(2, "realistic", seed=4) for _ in range(2)]
    dts = (1.0 / 30.0, 1.0 / 60.0, 1.0 / 30.0, 0.05)
    for u in range(40):
        for g, fresh in zip(games, (False, True)):
            d = dts[u % 4]
            d = float(repr(d)) if fresh else d              # a new float object of the same value, or not
            g.ctx.dt = d
            g.step()
    assert games[0].checksum() == games[1].checksum()


def test_a_trusted_call_with_the_very_objects_skips_the_checks(monkeypatch):
    game = build_crowd(2, "realistic")
    game.step()
    game.step()
    tk = game.player.batch._step_kernel
    if tk._entry is None:
        pytest.skip("NUMBA_DISABLE_JIT: no entry points")
    checked = []
    real = TrustedKernel._same

    def spy(self, args):
        checked.append(args)
        return real(self, args)

    monkeypatch.setattr(TrustedKernel, "_same", spy)
    game.step()
    assert not checked                                  # the engine's own objects: identity alone
    held = tk._args
    out = held[-1]
    fresh = out._replace(status=out.status.copy())      # a new array of the same type
    tk(*held[:-1], fresh)
    assert len(checked) == 1 and tk._args[-1] is fresh  # typed alike: the entry point, the new objects held


# ---------------------------------------------------------------- the glue's fast views

def _state_velocities_by_descriptors(self, ctx) -> None:
    """Locomotion's state function as it read and wrote before its fast views: each
    human through its Combat and Body descriptors (Locomotion._state_velocity_of)."""
    comps = self._components()
    for _, e in self.game.humans():
        mine = comps[e]
        self._state_velocity_of(mine, mine[Combat], mine[Body])


def _place_attached_by_descriptors(holder, body) -> None:
    """place_attached as it read and wrote before its fast views (numpy row views)."""
    s, c = detmath.sin_cos_deg_s(float(holder.heading))
    ox, oy, oz = body.attach_offset.tolist()
    hx, hy, hz = holder.position.tolist()
    body.position = (hx + (ox * c - oy * s), hy + (ox * s + oy * c), hz + oz)
    body.heading = _wrap(holder.heading + body.attach_heading)


def test_the_glues_fast_views_give_the_descriptors_bits_through_growth_restore_and_removal(monkeypatch):
    """The state function's kept views (made again when the tables' arrays are new: the body
    and combat tables grow past 64 rows, a restore) and the placement's rows read through
    fast views give what the descriptors gave, bit for bit, with the placement's crowd path
    taken for the two fighters too (_FEW -1) in the reference run."""
    placed = []
    real = placement_mod.place_attached

    def counted(holder, body):
        placed.append(body)
        real(holder, body)

    monkeypatch.setattr(placement_mod, "place_attached", counted)
    fast = _grown_restored_thinned()
    assert placed                                        # the fighters held each other at least once
    monkeypatch.setattr(Locomotion, "_state_velocities", _state_velocities_by_descriptors)
    monkeypatch.setattr(placement_mod, "place_attached", _place_attached_by_descriptors)
    monkeypatch.setattr(placement_mod, "_FEW", -1)
    assert _grown_restored_thinned() == fast


def test_flat_views_follow_the_tables_arrays_and_are_not_state():
    """components.bodies.flat_views: the flat memoryviews of a table's (N, 3) columns read
    and write its current arrays after it grows (kept while the table holds those arrays), and
    are left out of the table's saved state (an "m_" name)."""
    table = BodyTable(2)
    a = Body(position=(1.0, 2.0, 3.0), table=table)
    pos, sv = flat_views(table, ("position", "state_velocity"))
    assert flat_views(table, ("position", "state_velocity"))[0] is pos       # kept
    assert list(pos[3 * a.row:3 * a.row + 3]) == [1.0, 2.0, 3.0]
    sv[3 * a.row + 1] = 5.0
    assert a.state_velocity.tolist() == [0.0, 5.0, 0.0]
    others = [Body(position=(float(k), 0.0, 0.0), table=table) for k in range(10)]     # grows
    assert table.capacity > 2
    pos2, _ = flat_views(table, ("position", "state_velocity"))
    assert pos2 is not pos and pos2.obj is not None
    r = others[-1].row
    pos2[3 * r] = 7.5
    assert others[-1].position.tolist() == [7.5, 0.0, 0.0] and a.position.tolist() == [1.0, 2.0, 3.0]
    assert "m_flat" not in table.__getstate__()


def test_the_placement_ignores_a_body_on_the_table_no_human_has():
    """A Body made on the world's table but given to no entity, attached and sliding: the
    crowd's placement (rows found by the columns) neither visits nor moves it."""
    game = build_crowd(12, "realistic", seed=2)
    for _ in range(3):
        game.step()
    stray = Body(position=(40.0, 40.0, 0.0), table=game.ctx.bodies)
    stray.attachment = game.entity("h0")
    stray.slide_to, stray.slide_left = (0.0, 0.0, 0.0), 4
    for _ in range(5):
        game.step()
    assert stray.position.tolist() == [40.0, 40.0, 0.0] and stray.slide_left == 4


def test_events_made_after_a_handler_grows_the_tables_are_the_rows_own():
    """EventDispatch makes each human's FiredEvents from the update's span through the
    engine's lists (BatchEngine.fired_maker), read again when a handler replaced a table's
    arrays: a handler that grows the cursor table mid-dispatch leaves the later humans'
    events equal to their rows (event, anim id, task) as the step wrote them."""
    game = build_crowd(40, "realistic", seed=6)
    for _ in range(5):
        game.step()
    eng = game.player.batch
    expected: dict = {}
    got: dict = {}

    def rows_now(ctx, system: str) -> None:             # after the step, before the dispatch
        if system != "animation":
            return
        _, trs, crs, gs, _ = eng.event_span()
        anim = game.player.stores.cursors.anim
        for ent, _, inst in ctx.fired:
            _, lo, hi = inst._event_rows
            expected[ent] = [(eng._events[gs[j]], int(anim[crs[j]]), eng._tasks[trs[j]]) for j in range(lo, hi)]

    grown = []

    def handler(ctx, ent, fe) -> None:
        if not grown:                                  # the update's first event: grow the cursor table
            cursors = game.player.stores.cursors
            assert cursors.reserve(int(cursors.n_free[0]) + 1)
            grown.append(cursors.capacity)
        got.setdefault(ent, []).append((fe.event, fe.anim_id, fe.task))

    game.ctx.probe.append(rows_now)
    for t in range(256):
        game.ctx.on(t, handler)
    for _ in range(3):
        grown.clear()
        expected.clear()
        got.clear()
        epoch = game.player.layout
        game.step()
        if expected:
            assert grown and game.player.layout != epoch
        assert got == expected
    assert any(len(v) for v in got.values())


def test_the_players_step_asks_the_engine_only_whether_a_top_may_have_changed(monkeypatch):
    """Player.step calls BatchEngine.step(listed=False): a bool, no list of the humans made;
    it is True exactly when the listed step's list is not empty, and the ids refreshed
    after (the flush) and the state are the same."""
    games = [build_crowd(60, "realistic", seed=7) for _ in range(2)]
    answers: list = [[], []]
    real = batch_mod.BatchEngine.step

    def spy(self, instances, dt, listed=True):
        k = 0 if self is games[0].player.batch else 1
        out = real(self, instances, dt, listed=(k == 0))
        assert listed is False
        answers[k].append(bool(out) if k == 0 else out)
        return out

    monkeypatch.setattr(batch_mod.BatchEngine, "step", spy)
    for _ in range(40):
        for g in games:
            g.step()
    assert answers[0] == answers[1] and all(type(a) is bool for a in answers[1])
    assert any(answers[0]) and games[0].checksum() == games[1].checksum()
