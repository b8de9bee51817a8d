"""PoseRef: a view onto the crowd's last pose layout once linked (systems.crowd), a number
of its own otherwise."""
from __future__ import annotations

import pytest

from scuffle.components import PoseRef
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def test_a_pose_ref_of_its_own_holds_its_number_and_compares_by_row():
    p = PoseRef()
    assert p.row == -1 and PoseRef(3).row == 3 and PoseRef(3) == PoseRef(3) and PoseRef(2) != PoseRef(3)
    p.row = 5
    assert p.row == 5 and repr(p) == "PoseRef(row=5)"


def test_a_humans_pose_row_follows_the_last_pose_through_joins_and_leaves():
    s = demo_set()
    g = Game()
    try:
        for n in "abc":
            g.add_human(n, s)
        assert [g.pose_row(n) for n in "abc"] == [-1, -1, -1]      # before the first sample
        g.step()
        assert [g.pose_row(n) for n in "abc"] == [0, 1, 2]
        g.remove_human("a")
        g.add_human("d", s)
        # until the next pose, the columns of the pose the bones arrays hold
        assert [g.pose_row(n) for n in "bcd"] == [1, 2, -1]
        g.step()
        assert [g.pose_row(n) for n in "bcd"] == [0, 1, 2]
        pref = g.component("c", PoseRef)
        pref.row = 7                                                # unlinked: its own number
        assert pref.row == 7 and g.pose_row("b") == 0
    finally:
        g.close()
