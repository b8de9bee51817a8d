"""The sample plan: every human's task stack as pose-stack operations, run compiled.

Sampling a stack bottom-up is a small stack machine: a clip pushes its pose, a fade or
a blend pops two and pushes their mix. ``SamplePlan`` records those operations for
many humans at once, then ``run`` hands them to one compiled call (anim.engine.kernels.pose_plan)
that samples, blends and builds the bone transforms human by human (the engine's own
pose kernel, pose_stacks, reads the stacks' rows instead; tests/anim/test_batch.py
checks this one bit for bit against the reference model's pose, anim.reference.pose).

Spec: "The task stack" (sampled bottom-up onto the pose stack of seven; L257:
0x00104ce0 refuses an eighth), "The pose" (L100).
Original: 0x00176d60 CharacterInstance_Sample, 0x00104ce0 (refuses an eighth pose).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from scuffle.anim.engine import kernels as K
from scuffle.anim.engine.kernels_pose import LANE_ROWS, LANES
from scuffle.anim.maths.pose import DTYPE, NUM_TAGS, POSE_STACK_SIZE, PoseBatch
from scuffle.anim.engine.sampler import ClipBank
from scuffle.anim.maths.skeleton import NUM_BONES, REFERENCE_ROTATIONS, subtree_mask

__all__ = ["SamplePlan", "PoseTables", "pose_tables", "Bones"]


class PoseTables:
    """A ClipBank's and its skeleton's tables in the layout the pose kernels read.

    Built once per bank (``pose_tables`` keeps them on the bank): the frame -> key table
    and the key values key-major, the sentinels, the animated slots, the reference
    rotations, the parent table, the bone offsets (float32) and every bone's subtree
    mask (34, 34); the bank's frame-major key rows as they are (no copy). ``tables`` is
    the kernels' BankTables. It holds no reference to its
    bank (no cycle: a bank the player replaces is freed with its tables at once).
    """

    __slots__ = ("tables", "__weakref__")

    def __init__(self, bank: ClipBank):
        sk = bank.skeleton
        ref = np.ascontiguousarray(REFERENCE_ROTATIONS, dtype=DTYPE)
        lanes = _identity_lanes(1)[0]                 # (4, LANES): the reference rotations, then identities
        lanes[:, :NUM_BONES] = ref.T
        submask = np.stack([subtree_mask(b, sk.parents) for b in range(NUM_BONES)])
        # The transposed tables are always copies (writable): ascontiguousarray would hand back
        # the bank's read-only array itself when a table has 0 or 1 rows (its transpose is then
        # contiguous too), and a read-only table is another type to numba: the pose kernels
        # would compile a second time for that bank.
        self.tables = K.BankTables(np.ascontiguousarray(bank.row0, np.int64), np.ascontiguousarray(bank.rows, np.int64),
                     np.array(bank.ftab.T, np.int64, order="C"), np.array(bank.kval.T, DTYPE, order="C"),
                     np.array(bank.kslope.T, DTYPE, order="C"), np.ascontiguousarray(bank.kstart, DTYPE),
                     np.ascontiguousarray(bank.ktag, np.bool_), np.int64(bank._sent_vel),
                     np.int64(bank._sent_bone), np.ascontiguousarray(bank.animated, np.bool_), ref, lanes,
                     np.float32(sk.bind_height), np.asarray(sk.parents, np.int64),
                     np.ascontiguousarray(sk.offsets, DTYPE), submask, bank.frow, bank.fkeys, bank.ftag)


def pose_tables(bank: ClipBank) -> PoseTables:
    """The PoseTables of ``bank``, built on first use and kept on the bank itself (one per
    bank: two Games, or a Player and a bench's own bank, each keep theirs; a module-wide
    single slot rebuilt them on every update when two Games alternated)."""
    t = bank.pose_tables
    if t is None:
        t = bank.pose_tables = PoseTables(bank)
    return t


class Bones:
    """Output buffers for n humans: their poses and model-space bone transforms.

    ``poses`` a PoseBatch, ``pos`` (3, 34, n) and ``rot`` (4, 34, n), float32; reused by
    whoever owns it, so a caller that keeps them across updates copies them.
    """

    __slots__ = ("n", "poses", "pos", "rot")

    def __init__(self, n: int):
        self.n = n
        self.poses = PoseBatch.empty(n)
        self.pos = np.empty((3, NUM_BONES, n), DTYPE)
        self.rot = np.empty((4, NUM_BONES, n), DTYPE)

    def outs(self) -> K.PoseOut:
        """The buffers as the pose kernels write them."""
        p = self.poses
        return K.PoseOut(p.vel, p.root, p.rot, p.tag, self.pos, self.rot)


def _identity_lanes(n: int) -> np.ndarray:
    """n poses' rotations in the kernels' lanes (n, 4, LANES), each the identity."""
    rot = np.zeros((n, 4, LANES), DTYPE)
    rot[:, 3] = 1.0
    return rot


def scratch_poses(n: int, tag_bits: bool = True, motion_entry: bool = True) -> K.Scratch:
    """Human-major scratch for ``n`` poses (the kernels' pose stack; rotations (n, 4,
    LANES), bones in SIMD lanes, the lanes past the last bone the identity), with the int32
    views of its values, the two pose switches (PlayerOptions.tag_bits is "y_bit",
    PlayerOptions.motion_entry is "motion": the original's, the defaults) and a blend's
    lanes (kernels_pose.LANE_ROWS rows of LANES float32, lane tags one per slot, the
    slerping lanes' bones)."""
    vel, root, rot = np.zeros((n, 3), DTYPE), np.zeros((n, 3), DTYPE), _identity_lanes(n)
    return K.Scratch(vel, root, rot, np.zeros((n, NUM_TAGS), np.bool_), vel.view(np.int32), root.view(np.int32),
                     rot.view(np.int32), np.bool_(tag_bits), np.bool_(motion_entry), np.full(1, -1, np.int64),
                     np.zeros(LANE_ROWS * LANES, DTYPE), np.zeros(NUM_TAGS, np.bool_),
                     np.zeros(LANES, np.int64))


class SamplePlan:
    """Pose-stack operations for a batch of humans (build, then execute once).

    Build: ``begin(name)`` per human, then ``sample``/``blend_top`` as its tasks are
    visited bottom-up, then ``end()``. Handles are ints: samples >= 0, blends < 0.
    An eighth pose on a human's stack is refused, as 0x00104ce0 refuses it: the push is
    skipped (``sample`` returns None), the refusal is counted for the human
    (``refusals``: (owner, count) for every human with one), and the build carries on;
    every later blend takes the two poses then on top, so the human shows the mix of
    the seven poses that fit.
    """

    __slots__ = ("s_clip", "s_time", "s_rate", "s_flags", "b_a", "b_b", "b_w", "b_mask", "b_level",
                 "finals", "refusals", "s_human", "first_s", "first_b", "_stack", "_name", "_owner", "_refused")

    def __init__(self):
        self.s_clip: list[int] = []
        self.s_time: list[float] = []
        self.s_rate: list[float] = []
        self.s_flags: list[int] = []
        self.s_human: list[int] = []      # the human (its begin index) of each sample
        self.b_a: list[int] = []
        self.b_b: list[int] = []
        self.b_w: list[float] = []
        self.b_mask: list[int] = []       # -1 whole body, else the subtree's bone
        self.b_level: list[int] = []
        self.finals: list[int | None] = []
        self.refusals: list[tuple[Any, int]] = []
        self.first_s: list[int] = []      # each human's first sample and blend
        self.first_b: list[int] = []
        self._stack: list[int] = []
        self._name = ""
        self._owner: Any = None
        self._refused = 0

    # ---------------------------------------------------------------- building
    def begin(self, name: str = "", owner: Any = None) -> None:
        """Open a human (``owner``: what ``refusals`` names it by, e.g. its instance)."""
        self._stack = []
        self._name = name
        self._owner = owner if owner is not None else name
        self._refused = 0
        self.first_s.append(len(self.s_clip))
        self.first_b.append(len(self.b_a))

    @property
    def depth(self) -> int:
        """Poses on the current human's stack."""
        return len(self._stack)

    def sample(self, bank_index: int, time: float, rate: float, flags: int) -> int | None:
        """Push the pose of one cursor; returns its handle, or None when the human's pose
        stack already holds seven (the push is skipped and counted).
        Original: 0x00104ce0 AnimCursor_SamplePose (refuses an eighth pose)."""
        if len(self._stack) >= POSE_STACK_SIZE:
            self._refused += 1
            return None
        h = len(self.s_clip)
        self.s_clip.append(bank_index)
        self.s_time.append(time)
        self.s_rate.append(rate)
        self.s_flags.append(int(flags))
        self.s_human.append(len(self.finals))
        self._stack.append(h)
        return h

    def blend_top(self, weight: float, bone: int = -1) -> int | None:
        """Pop the top two poses (lower, upper), push blend(lower, upper, weight).

        ``weight`` is the upper pose's share; ``bone`` >= 0 limits the blend to that
        bone's subtree. With fewer than two poses on the stack nothing happens.
        """
        if len(self._stack) < 2:
            return None
        upper = self._stack.pop()
        lower = self._stack.pop()
        level = max(self._level(lower), self._level(upper)) + 1
        h = -(len(self.b_a) + 1)
        self.b_a.append(lower)
        self.b_b.append(upper)
        self.b_w.append(weight)
        self.b_mask.append(bone)
        self.b_level.append(level)
        self._stack.append(h)
        return h

    def keep(self, pushed: list, handle: int | None) -> None:
        """Pop the poses just pushed (``pushed``: their handles, None where a push was
        refused) and push ``handle`` (one of them) back: of several sampled poses only one
        stays on the stack (type 11 sampling all four clips). A refused ``handle`` pushes
        nothing."""
        n = sum(1 for h in pushed if h is not None)
        if n:
            del self._stack[-n:]
        if handle is not None:
            self._stack.append(handle)

    def end(self) -> None:
        """Close the current human: its pose is the top of its stack (None: the default pose)."""
        self.finals.append(self._stack[-1] if self._stack else None)
        if self._refused:
            self.refusals.append((self._owner, self._refused))
        self._stack = []

    def _level(self, h: int) -> int:
        return 0 if h >= 0 else self.b_level[-h - 1]

    # ---------------------------------------------------------------- running
    def execute(self, bank: ClipBank) -> PoseBatch:
        """Run the plan compiled; returns one pose per human, in ``begin`` order."""
        out = Bones(len(self.finals))
        self.run(bank, np.arange(len(self.finals), dtype=np.int64), out)
        return out.poses

    def run(self, bank: ClipBank, cols: np.ndarray, out: Bones) -> None:
        """Run the plan in one compiled call: human i's pose and bone transforms go to
        column ``cols[i]`` of ``out``. Rejected: a human not closed with ``end``
        (ValueError), clip indices outside the bank (IndexError)."""
        n = len(self.finals)
        if len(self.first_s) != n or len(cols) != n:
            raise ValueError(f"plan: {len(self.first_s)} humans begun, {n} ended, {len(cols)} columns")
        if not n:
            return
        first_s = np.asarray(self.first_s + [len(self.s_clip)], np.int64)
        first_b = np.asarray(self.first_b + [len(self.b_a)], np.int64)
        s_clip = np.asarray(self.s_clip, np.int64)
        if len(s_clip) and (s_clip.min() < 0 or s_clip.max() >= len(bank)):
            raise IndexError(f"clip index out of range 0-{len(bank) - 1}")
        need = int((np.diff(first_s) + np.diff(first_b)).max()) + 1
        finals = np.asarray([K.NO_POSE if h is None else h for h in self.finals], np.int64)
        plan = K.PlanArrays(first_s, first_b, s_clip, np.asarray(self.s_time, DTYPE), np.asarray(self.s_rate, DTYPE),
                            np.asarray(self.s_flags, np.int64), np.asarray(self.b_a, np.int64),
                            np.asarray(self.b_b, np.int64), np.asarray(self.b_w, DTYPE),
                            np.asarray(self.b_mask, np.int64), finals)
        K.pose_plan(np.asarray(cols, np.int64), plan, pose_tables(bank).tables,
                    scratch_poses(need, bank.tag_bits, bank.motion_entry), out.outs())
