"""The kernels called through their compiled entry points (anim.engine.trusted, to cut
the fixed cost of an update): only while every argument is the object the dispatcher
typed, and with the same results as a call through the dispatcher."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.engine import kernels as K
from scuffle.anim.engine.trusted import TrustedKernel
from scuffle.game.tools.bench import build_crowd


def _poses(game) -> bytes:
    b = game.player.batch._bones
    return b.pos.tobytes() + b.rot.tobytes() + b.poses.vel.tobytes() + b.poses.root.tobytes()


def test_an_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="no kernel 'nope'"):
        TrustedKernel("nope")


def test_same_accepts_only_what_numba_would_type_alike():
    a, b = np.zeros(3, np.int64), np.zeros(5, np.int64)
    k = TrustedKernel("step_stacks")
    k._args = (a, 0, 0.5, K.StepRules(True, False, 12))
    assert k._same((a, 7, 0.25, k._args[3]))       # the same array; an int for an int, a float for a float
    assert k._same((b, 0, 0.5, K.StepRules(False, True, 3)))   # another array and tuple of the same types
    assert not k._same((a, 0.0, 0.5, k._args[3]))  # a float where the dispatcher typed an int
    assert not k._same((a, 0, 1, k._args[3]))      # an int where it typed a float
    assert not k._same((a, 0, 0.5))                # another number of arguments
    assert not k._same((np.zeros(3, np.int32), 0, 0.5, k._args[3]))       # another dtype
    assert not k._same((np.zeros((3, 1), np.int64), 0, 0.5, k._args[3]))  # other dimensions
    assert not k._same((np.zeros(6, np.int64)[::2], 0, 0.5, k._args[3]))  # not contiguous
    ro = np.zeros(3, np.int64)
    ro.flags.writeable = False
    assert not k._same((ro, 0, 0.5, k._args[3]))   # read-only: numba types it apart
    assert not k._same((a, 0, 0.5, (True, False, 12)))                    # a plain tuple for the named one
    assert not k._same((a, 0, 0.5, K.StepRules(1, False, 12)))            # an int where it typed a bool


def test_the_engine_calls_its_kernels_through_the_entry_points_after_the_first_update():
    game = build_crowd(4, "realistic")
    batch = game.player.batch
    game.step()
    game.step()
    for tk, name in ((batch._step_kernel, "step_stacks"), (batch._pose_kernel, "pose_stacks")):
        disp = getattr(K, name)
        if not hasattr(disp, "overloads"):          # NUMBA_DISABLE_JIT: plain Python, always called as is
            assert tk._entry is None
            continue
        assert tk._fn is disp
        # the overload the arguments select (one in a fresh process; tests may have made more)
        assert tk._entry is disp.overloads[tuple(disp.typeof_pyval(a) for a in tk._args)].entry_point
        # the arguments held are the engine's own objects: its tables' column tuples
        assert any(a is batch._tables()[1] for a in tk._args)


def test_a_grown_table_or_a_restore_hands_the_kernel_the_new_arrays():
    game = build_crowd(2, "realistic")
    batch = game.player.batch
    game.step()
    game.step()
    if batch._step_kernel._entry is None:
        pytest.skip("NUMBA_DISABLE_JIT: no entry points")
    held = batch._step_kernel._args
    snap = game.snapshot()
    for k in range(40):                              # the human table grows: new column arrays
        game.add_human(f"extra{k}", game.instance("h0").anim_set, (k * 2.0, 9.0, 0.0), 0.0)
    game.step()
    assert batch._step_kernel._args is not held      # the new tables' tuples, the old ones let go
    assert not any(a is b for a, b in zip(batch._step_kernel._args[4:10], held[4:10]))
    before = batch._step_kernel._args
    game.restore(snap)                               # the tables' arrays of the snapshot's size
    game.step()
    assert batch._step_kernel._args[4] is not before[4] and batch._step_kernel._args[4] is batch._tables()[0]
    assert batch._step_kernel._entry is not None


def test_trusted_and_dispatched_calls_give_the_same_bits(monkeypatch):
    """Two crowds, one with SCUFFLE_DEBUG=1 (every call typed by the dispatcher), give the
    same poses and state after every update."""
    monkeypatch.delenv("SCUFFLE_DEBUG", raising=False)
    fast = build_crowd(40, "realistic", seed=3)
    monkeypatch.setenv("SCUFFLE_DEBUG", "1")
    slow = build_crowd(40, "realistic", seed=3)
    assert slow.player.batch._step_kernel.debug and not fast.player.batch._step_kernel.debug
    for _ in range(30):
        fast.step()
        slow.step()
        assert _poses(fast) == _poses(slow)
    assert fast.checksum() == slow.checksum()
    assert slow.player.batch._step_kernel._entry is None
