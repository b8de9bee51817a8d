"""The pose's local-to-model (kernels_pose._emit_model): the SIMD path over consecutive
output columns gives the bits of the column-by-column path, whether pose_stacks takes its
humans a block of ``_MODEL_BLOCK`` at a time (with a last block of any length) or the
lean pose stops inside a block."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.base.enums import TaskType
from scuffle.anim.engine import kernels as K
from scuffle.anim.engine import kernels_pose as KP
from scuffle.anim.engine.plan import Bones, pose_tables
from scuffle.game.tools.bench import build_crowd

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def _inputs(game, n: int) -> tuple:
    """A pose call's tables and fresh output for ``n`` humans: (the tables through the
    output, as pose_stacks takes them, the Bones, refusal counts, queued flags, weights)."""
    b = game.player.batch
    H, T, C, F, G, E = b._tables()
    bones = Bones(n)
    tables = (H, T, C, F, G, E, pose_tables(game.player.bank).tables, b._scratch, bones.outs())
    return tables, bones, np.zeros(n, np.int64), np.zeros(n, np.bool_), np.zeros(64, np.float32)


def _pose(game, n: int, cols: np.ndarray, rows: np.ndarray | None = None, lean: bool = False) -> Bones:
    """The poses of human rows ``rows`` (default 0 .. n-1) into output columns ``cols``: one
    pose_stacks call, or (``lean``) pose_lean then pose_stacks from where it stopped."""
    tables, bones, refused, queued, weights = _inputs(game, n)
    rows = np.arange(n, dtype=np.int64) if rows is None else rows
    start = 0
    if lean:
        start = K.pose_lean(rows, cols, *tables, K.PoseBuffers(refused, weights, queued))
    K.pose_stacks(rows[start:], cols[start:], *tables, K.PoseBuffers(refused[start:], weights, queued[start:]))
    return bones


CROWD = 2 * KP._MODEL_BLOCK + 40       # the humans of the module's crowd (rows 0 .. CROWD-1)


@pytest.fixture(scope="module")
def game():
    """The realistic crowd of CROWD humans, 12 updates on: the tests pose its first rows
    (the crowd uses no kept blend window, the one rule by which a pose writes the tables:
    each test's calls start from the same state)."""
    g = build_crowd(CROWD, "realistic", "compiled", 1, 1)
    for _ in range(12):
        g.step()
    yield g
    g.close()


def _same(a: Bones, b: Bones, order: np.ndarray | None = None) -> None:
    for name in ("rot", "pos", "mrot", "vel", "root", "tag"):
        x, y = getattr(a.outs(), name), getattr(b.outs(), name)
        np.testing.assert_array_equal(_bytes(x), _bytes(y if order is None else _at(y, order)), err_msg=name)
    assert np.abs(a.outs().pos[:, 2:, :]).max() > 0.0            # the bones moved: something compared


def test_consecutive_columns_take_the_simd_path_with_the_same_bits(game):
    n = 3 * KP._SIMD_HUMANS + 5
    straight = _pose(game, n, np.arange(n, dtype=np.int64))                # one run of columns: SIMD
    order = np.random.default_rng(3).permutation(n).astype(np.int64)
    _same(straight, _pose(game, n, order), order)                         # column by column


def _one_by_one(game, n: int) -> Bones:
    """The poses of human rows 0 .. n-1, one pose_stacks call each (no block: each call's
    own last one of one human)."""
    tables, bones, refused, queued, weights = _inputs(game, n)
    at = np.arange(n, dtype=np.int64)
    for k in range(n):
        K.pose_stacks(at[k:k + 1], at[k:k + 1], *tables, K.PoseBuffers(refused[k:k + 1], weights, queued[k:k + 1]))
    return bones


@pytest.mark.parametrize("tail", [KP._SIMD_HUMANS + 5, 5])
def test_blocks_of_humans_give_the_bits_of_one_human_at_a_time(game, tail):
    """Two whole blocks and a last one of ``tail`` humans (SIMD, or under _SIMD_HUMANS:
    column by column), against one call a human and against every column apart (a
    shuffled order: no run)."""
    n = 2 * KP._MODEL_BLOCK + tail
    straight = _pose(game, n, np.arange(n, dtype=np.int64))
    _same(straight, _one_by_one(game, n))
    order = np.random.default_rng(5).permutation(n).astype(np.int64)
    _same(straight, _pose(game, n, order), order)


def _lean_refused(game, n: int) -> np.ndarray:
    """Which of human rows 0 .. n-1 pose_lean leaves to pose_stacks: a type 10, 11 or 13
    on the stack or down a clip's chain of next tasks (the crowd uses no kept rule and no
    queued tasks' pose)."""
    H, T = game.player.batch._tables()[:2]
    rare = {int(TaskType.MIX), int(TaskType.PICK), int(TaskType.DIRECTION)}
    clips = {int(TaskType.CLIP), int(TaskType.PAIRED_CLIP)}
    out = np.zeros(n, np.bool_)
    for h in range(n):
        for i in range(int(H.depth[h])):
            r = int(H.stack[h, i])
            while True:
                if int(T.type[r]) in rare:
                    out[h] = True
                if int(T.type[r]) not in clips or T.nxt[r] < 0:
                    break
                r = int(T.nxt[r])
    return out


def test_a_lean_pose_stopped_inside_a_block_gives_the_same_bits(game):
    """pose_lean over rows ordered so that its first refused human is the 700th (inside
    the second block), then pose_stacks over the rest, against one pose_stacks call."""
    n = CROWD
    refused = _lean_refused(game, n)
    assert refused.any() and (~refused).sum() > 700, refused.sum()
    plain, rare = np.flatnonzero(~refused), np.flatnonzero(refused)
    rows = np.concatenate([plain[:700], rare, plain[700:]]).astype(np.int64)
    cols = np.arange(n, dtype=np.int64)
    tables, _, refused_n, queued, weights = _inputs(game, n)
    stop = K.pose_lean(rows, cols, *tables, K.PoseBuffers(refused_n, weights, queued))
    assert stop == 700
    _same(_pose(game, n, cols, rows), _pose(game, n, cols, rows, lean=True))


def _at(b: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Human k's values, written to column ``order[k]``, back in human order."""
    return b[..., order]


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)
