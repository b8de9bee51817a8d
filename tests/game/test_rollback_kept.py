"""What a rollback loop and the checksum keep from one call to the next, held against the
state made again from scratch.

A snapshot shares the parts that did not change with the one before (the callbacks
table's saved lists, the empty deferred and step lists, the bodies' and combats' owners),
a restore leaves a part alone when it gets back the state it holds, and ``Game.checksum``
keeps on the Game's snapshot plan the owners' columns, the callbacks' plain values and the
plain forms of the fight rules' and the actions' states per object. Each kept part must
give what a fresh one gives: the same rows, the same key index, the same digest.
"""
from __future__ import annotations

import random

from scuffle.anim.engine import plaindata
from scuffle.anim.engine.callbacks import Callback, CallbackTable
from scuffle.game.runtime import snapfile as F
from scuffle.game.runtime.snapshot import Snapshot

from gamehelp import ai_fight


def test_a_state_encoded_part_by_part_is_the_plain_form_of_the_whole():
    forms: dict = {}
    rng = random.Random(5).getstate()
    counts = {"strike": 3, 7: [1, 2.5, None]}
    cases = [
        [],
        [()],
        [(rng, 3, "x", None, b"ab", counts, [1, (2, "y")], 1.5, True)],
        [{"k": 1}, (rng,), [2, "z"]],
        [(rng, 4, "x", None, b"ab", counts, [1, (2, "y")], 1.5, False)],     # the same parts again, kept
    ]
    for extras in cases:
        for _ in range(2):
            assert F._parts_plain(extras, forms) == plaindata.encode(extras, lenient=True), extras
    assert any(v[0] is counts for v in forms.values())


def test_the_callbacks_table_shares_its_saved_state_until_an_id_is_taken_or_dropped():
    t = CallbackTable()
    a, b = Callback("a", (1,)), Callback("b", ("x",))
    ia = t.take(a)
    first = t.save()
    assert t.save() is first                             # nothing taken or dropped since
    ib = t.take(b)
    second = t.save()
    assert second is not first and second[0] == [a, b] and first[0] == [a]
    t.drop(ia)
    assert t.save() is not second
    # a trusted load of an older state gives back its lists and its key index
    t.load(first, trusted=True)
    assert (t.values, t.uses, t.free) == (list(first[0]), list(first[1]), list(first[2]))
    assert t.save() is first
    assert t.take(a) == ia and t.take(b) != ia
    t.load(second, trusted=True)
    assert t.values == [a, b] and t.take(b) == ib and t.uses[ib] == 2


def test_a_checksum_with_kept_parts_equals_a_snapshots_through_a_rollback_and_a_join():
    g = ai_fight()
    try:
        ring: list = [None] * 5
        for u in range(60):
            g.step()
            k = g.update % len(ring)
            ring[k] = g.snapshot(reuse=ring[k])
            assert g.checksum() == ring[k].checksum(), u
            if u % 7 == 6:
                back = ring[(g.update - 4) % len(ring)]
                want = back.checksum()
                g.restore(back)
                assert g.checksum() == want, u
        # a human joins and leaves: the owners' columns are made again
        aset = g.instance("p1").anim_set
        g.add_human("p3", aset, position=(3.0, 0.0, 0.0), heading=0.0)
        g.step()
        assert g.checksum() == g.snapshot().checksum()
        g.remove_human("p3")
        g.step()
        assert g.checksum() == g.snapshot().checksum()
        # and a file's state read back (new objects for every kept part)
        snap = g.snapshot()
        want = snap.checksum()
        g.step()
        g.restore(Snapshot.from_bytes(snap.to_bytes()))
        assert g.checksum() == want
    finally:
        g.close()
