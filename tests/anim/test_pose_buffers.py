"""The engine's own pose buffers (BatchEngine._bones_of): a join or a leave within their
room makes no new buffers (the peak memory of a crowd that changes), the poses they hold
are the bits a fresh set of buffers gets, and a crowd past the room gets larger ones."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.engine.plan import Bones
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _game(n: int) -> Game:
    g = Game()
    s = demo_set()
    for i in range(n):
        g.add_human(f"h{i}", s, (2.0 * i, 0.0, 0.0), 0.0)
        inst = g.instance(f"h{i}")
        g.player.change(inst, g.player.loop(inst, Move.WALK if i % 2 else Move.FIGHT_IDLE), 0.0)
    return g


def _bytes(b: Bones) -> bytes:
    return b"".join(a.tobytes() for a in (b.pos, b.rot, b.poses.vel, b.poses.root, b.poses.rot, b.poses.tag))


def test_a_join_and_a_leave_reuse_the_pose_buffers_and_give_the_same_bits():
    g = _game(32)
    for _ in range(3):
        g.step()
    eng = g.player.batch
    backing = eng._bones_flat
    assert backing[0] > 32                          # room for joiners
    g.add_human("late", demo_set(), (0.0, 9.0, 0.0), 0.0)
    g.remove_human("h3")
    g.step()
    assert eng._bones_flat is backing               # no new buffers
    b = eng._bones
    assert b.n == 32 and b.pos.shape == (3, 34, 32) and b.rot.flags.c_contiguous
    assert np.shares_memory(b.pos, backing[5]) and np.shares_memory(b.poses.rot, backing[3])
    insts = g.ctx.crowd.instances
    fresh = eng.pose(insts, out=Bones(len(insts)))   # the same pose into buffers of its own
    assert _bytes(fresh) == _bytes(b)
    g.close()


def test_a_crowd_past_the_room_gets_larger_buffers():
    g = _game(4)
    g.step()
    eng = g.player.batch
    cap = eng._bones_flat[0]
    for k in range(cap - 4 + 1):
        g.add_human(f"j{k}", demo_set(), (float(k), 30.0, 0.0), 0.0)
    g.step()
    assert eng._bones_flat[0] > cap and eng._bones.n == cap + 1
    assert np.isfinite(eng._bones.pos).all() and np.isfinite(eng._bones.rot).all()
    g.close()


def test_the_pose_tables_have_one_type_whatever_the_banks_size():
    """A bank of no clip, of one clip of one frame and of the demo set's clips give the pose
    kernels the same numba types: a read-only table where another bank's is writable is
    another type, and the pose kernels would compile a second time for that bank."""
    from numba import typeof

    from scuffle.anim.data.clip import author_clip
    from scuffle.anim.engine.plan import PoseTables
    from scuffle.anim.engine.sampler import ClipBank

    banks = {"empty": ClipBank([]), "one frame": ClipBank([author_clip("one", 1)]),
             "demo": ClipBank(list(demo_set().clips_by_index))}
    types = {name: typeof(PoseTables(bank).tables) for name, bank in banks.items()}
    assert types["empty"] == types["demo"], (types["empty"], types["demo"])
    assert types["one frame"] == types["demo"], (types["one frame"], types["demo"])
