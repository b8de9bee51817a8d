"""The fight rules' per-update reads: the loops read the combat columns'
fast views (``CombatTable.views``) and the body's attachment column instead of the views'
descriptors, and the hold's type-8 point is decoded once per clip (``Pairs._hold_place``).
Each cache follows what it keeps: a grown table, a snapshot of another capacity put back,
another hold clip; a stale view still raises. Spec: "Paired tasks" (the type-8 point).
"""
from __future__ import annotations

import dataclasses

import esper
import numpy as np
import pytest

from scuffle.anim.data.clip import EventType, make_event
from scuffle.anim.engine.store import StaleHandle
from scuffle.components import NO_ATTACHMENT, Combat, CombatTable
from scuffle.game.fighters.combat import Fight, FightState
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _fighters(gap: float = 3.0):
    """Two humans in the fight idle, ``gap`` m apart, under the fight rules."""
    g = Game()
    s = demo_set()
    g.add_human("a", s, (0, 0, 0), 0.0)
    g.add_human("b", s, (0, gap, 0), 180.0)
    f = Fight(g)
    for n in "ab":
        g.change(n, g.player.loop(g.instance(n), Move.FIGHT_IDLE))
    g.step()
    return g, f


def _hold():
    """a holds b (a grab connected and attached)."""
    g, f = _fighters(0.9)
    assert f.grab("a")
    for _ in range(200):
        g.step()
        if f.combat("a").state == FightState.HOLDING:
            break
    assert f.combat("a").state == FightState.HOLDING and g.body("b").attachment == g.entity("a")
    return g, f


def test_views_read_what_the_fields_read_and_are_made_again_when_the_table_grows():
    t = CombatTable(1)
    a = Combat(table=t, partner=5, move_speed=1.5, down_left=3, state="down")
    a.impulse = (1.0, -2.0, 3.5)
    a.move_dir = (0.0, 1.0, 0.0)
    v = t.views()
    assert t.views() is v                                   # kept while no column is replaced
    r = a.row
    assert (v.gen[r], v.partner[r], v.move_speed[r], v.down_left[r]) == (a._gen, 5, 1.5, 3)
    assert t.texts[v.state[r]] == a.state == "down"
    assert [v.impulse[3 * r + i] for i in range(3)] == a.impulse.tolist() == [1.0, -2.0, 3.5]
    assert [v.move_dir[3 * r + i] for i in range(3)] == [0.0, 1.0, 0.0]
    b = Combat(table=t, partner=7)                          # a one-row table: it grows, its columns replaced
    assert t.row_views is None
    w = t.views()
    assert w is not v and w.partner[b.row] == 7 and w.partner[a.row] == 5
    w.impulse[3 * a.row] = 9.0                              # the flat view is the column's memory
    assert a.impulse.tolist() == [9.0, -2.0, 3.5]


def test_views_reject_a_vector_column_that_is_not_one_contiguous_block():
    t = CombatTable(4)
    t.impulse = np.zeros((8, 3))[::2]                       # a corrupt table: every other row
    with pytest.raises(ValueError, match="CombatTable.impulse"):
        t.views()


def test_the_down_count_follows_the_combat_table_when_its_columns_are_replaced():
    g, f = _fighters()
    try:
        c = f.combat("b")
        c.state, c.down_left = FightState.DOWN, 3
        g.step()
        assert c.down_left == 2
        table = g.ctx.combats
        old = table.views()
        table.reserve(table.capacity + 1)                   # grown: every column a new array
        assert table.row_views is None
        c.state = FightState.FREE                           # written to the new column only
        g.step()
        assert c.down_left == 2                             # not counted: the loop read the new column
        assert table.views() is not old
        c.state = FightState.DOWN
        g.step()
        assert c.down_left == 1
        g.step()                                            # 0: the rules start its get-up (200)
        assert c.down_left == 0 and any(t.anim_id() == Move.GET_UP for t in g.instance("b").stack)
    finally:
        g.close()


def test_a_partner_deleted_is_seen_after_a_snapshot_of_another_capacity_is_put_back():
    g, f = _fighters()
    try:
        cb = f.combat("b")
        cb.partner = g.entity("a")                          # paired, not attached (as while connecting)
        snap = g.snapshot()
        cb.partner = -1
        table = g.ctx.combats
        table.reserve(table.capacity + 1)                   # grown (no partner in the new columns) ...
        table.views()
        g.restore(snap)                                     # ... and the saved capacity put back: replaced again
        assert table.row_views is None and cb.partner == g.entity("a")
        with g.active():
            esper.delete_entity(g.entity("a"), immediate=True)
        g.step()                                            # the actions phase frees b (it read the restored column)
        assert cb.partner == -1 and cb.state == FightState.LETTING_GO
    finally:
        g.close()


def test_a_deleted_holder_frees_its_attached_victim():
    g, f = _hold()
    try:
        with g.active():
            esper.delete_entity(g.entity("a"), immediate=True)
        g.step()
        assert f.combat("b").partner == -1 and g.body("b").attachment == NO_ATTACHMENT
        assert f.combat("b").state == FightState.LETTING_GO
    finally:
        g.close()


def test_a_stale_combat_view_still_raises_in_the_rules_loops():
    g, f = _fighters()
    try:
        f.combat("b").release()                             # its row goes back behind the world's back
        with pytest.raises(StaleHandle):
            f._partners_gone()
        with pytest.raises(StaleHandle):
            f._update(g.ctx)
    finally:
        g.close()


def test_the_hold_point_is_decoded_once_per_clip_and_again_for_another_clip():
    g, f = _fighters()
    try:
        hold = demo_set().clip(Move.HOLD)
        p = f._hold_place(hold)
        want = next(e for e in hold.decoded_events() if e.type == EventType.PARTNER_PLACE).position
        assert p.tolist() == [float(x) for x in want] and not p.flags.writeable
        assert f._hold_place(hold) is p                     # kept
        events = hold.events.copy()
        k = int(np.flatnonzero(events["type"] == EventType.PARTNER_PLACE)[0])
        events[k] = make_event(0, int(EventType.PARTNER_PLACE), position=(0.25, 0.5, 0.0))
        other = dataclasses.replace(hold, events=events, _sorted_events=None, _dispatched=None)
        q = f._hold_place(other)                            # another clip: its own point
        assert q is not p and q[:2].tolist() == pytest.approx([0.25, 0.5], abs=1e-3)
        none = f._hold_place(demo_set().clip(Move.FIGHT_IDLE))     # no type-8 event: (0, 0.8, 0)
        assert none.tolist() == [0.0, 0.8, 0.0]
        assert f._hold_place(hold) is p                     # the first clip's point still kept
    finally:
        g.close()


def test_keep_held_reads_the_stack_rows_as_the_task_handles_read_them():
    """keep_held (the fight's end hook) ORs in the held bits of the tasks on the stack not
    released, read from the stack's rows; the handles' answer, update by update, through a
    grab, a hold and its strikes (released tasks under fades included)."""
    from scuffle.game.fighters.fightcore import keep_held

    g, f = _fighters(0.9)
    try:
        seen = set()
        assert f.grab("a")
        for k in range(160):
            if k == 60:
                f.strike("a", int(Move.GRAB_KNEE))
            g.step()
            for n in "ab":
                inst = g.instance(n)
                stack = inst.stack
                for marked in ([None] + [t for t in stack if t.held and not t.released]):
                    if marked is not None:
                        marked.released = True          # as during a release: on the stack, released
                    want = 0
                    for t in stack:
                        if not t.released:
                            want |= int(t.held)
                    seen.add((want, marked is not None))
                    saved = inst.record.flags
                    inst.record.flags = 0
                    keep_held(inst)
                    assert inst.record.flags == want
                    inst.record.flags = saved
                    if marked is not None:
                        marked.released = False
        assert len({w for w, _ in seen}) >= 3 and any(r for _, r in seen)   # several held sets, released rows met
    finally:
        g.close()
