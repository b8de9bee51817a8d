"""The pose's local-to-model over every human of a call (kernels_pose._emit_model): the
SIMD path over consecutive output columns gives the bits of the column-by-column path."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.engine import kernels as K
from scuffle.anim.engine import kernels_pose as KP
from scuffle.anim.engine.plan import Bones, pose_tables
from scuffle.game.tools.bench import build_crowd

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _pose(game, n: int, cols: np.ndarray) -> Bones:
    b = game.player.batch
    H, T, C, F, G, E = b._tables()
    bones = Bones(n)
    refused = np.zeros(n, np.int64)
    buffers = K.PoseBuffers(refused, np.zeros(64, np.float32), np.zeros(n, np.bool_))
    rows = np.arange(n, dtype=np.int64)
    K.pose_stacks(rows, cols, H, T, C, F, G, E, pose_tables(game.player.bank).tables, b._scratch, bones.outs(),
                  buffers)
    return bones


def test_consecutive_columns_take_the_simd_path_with_the_same_bits():
    n = 3 * KP._SIMD_HUMANS + 5
    game = build_crowd(n, "realistic", "compiled", 1, 1)
    try:
        for _ in range(12):
            game.step()
        straight = _pose(game, n, np.arange(n, dtype=np.int64))            # one run of columns: SIMD
        order = np.random.default_rng(3).permutation(n).astype(np.int64)
        shuffled = _pose(game, n, order)                                    # column by column
        for name in ("rot", "pos", "mrot", "vel", "root", "tag"):
            a, b = getattr(straight.outs(), name), getattr(shuffled.outs(), name)
            np.testing.assert_array_equal(_bytes(a), _bytes(_at(b, order)), err_msg=name)
        assert np.abs(straight.outs().pos[:, 2:, :]).max() > 0.0        # the bones moved: something compared
    finally:
        game.close()


def _at(b: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Human k's values, written to column ``order[k]``, back in human order."""
    return b[..., order]


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)
