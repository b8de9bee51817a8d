"""The sample plan: every human's task stack as pose-stack operations, run batched.

Sampling a stack bottom-up is a small stack machine: a clip pushes its pose, a fade or
a blend pops two and pushes their mix. ``SamplePlan`` records those operations for
many humans at once, then runs them as one batched sampler call and one batched blend
per dependency level, instead of per human and per bone. ``execute_reference`` runs
the same plan one pose at a time (the scalar reference path; issue 6 checks the two
agree).

Spec: "The task stack" (sampled bottom-up onto the pose stack of seven; L257:
0x00104ce0 refuses an eighth), "The pose" (L100).
Original: 0x00176d60 CharacterInstance_Sample, 0x00104ce0 (refuses an eighth pose).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .pose import DTYPE, POSE_STACK_SIZE, PoseBatch, blend
from .sampler import ClipBank
from .skeleton import subtree_mask

__all__ = ["SamplePlan"]


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
                 "finals", "refusals", "s_human", "_stack", "_name", "_owner", "_refused")

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
    def execute(self, bank: ClipBank, defaults: dict[int, PoseBatch] | None = None) -> PoseBatch:
        """Run the plan batched; returns one pose per human, in ``begin`` order.

        ``defaults``: {human index: a pose} used as that human's default pose instead of
        the reference pose: the rotations of bones 1-33 its samples took from the
        default (tagged) are that pose's, tags kept, and an empty stack shows it (bone 0
        without a channel stays the identity, the root translation and velocity the
        instance's). Original: 0x00176d60 (the queued tasks' pose as the default).
        """
        ns, nb = len(self.s_clip), len(self.b_a)
        poses = PoseBatch.empty(ns + nb + 1 + len(defaults or ()))
        if ns:
            bank.sample(np.asarray(self.s_clip, np.int64), np.asarray(self.s_time, DTYPE),
                        np.asarray(self.s_rate, DTYPE), np.asarray(self.s_flags, np.int64), poses, 0)
        default = ns + nb
        poses.put(slice(default, default + 1), PoseBatch.reference(1, bank.skeleton.bind_height))
        own_default: dict[int, int] = {}
        if defaults:
            humans = np.asarray(self.s_human, np.int64)
            for k, (hi, dpose) in enumerate(sorted(defaults.items())):
                row = default + 1 + k
                poses.put(slice(row, row + 1), dpose)
                own_default[hi] = row
                for s in np.flatnonzero(humans == hi):
                    tagged = poses.tag[2 + 1:, s]                   # bones 1-33
                    rot = poses.rot[:, 1:, s]
                    rot[:, tagged] = dpose.rot[:, 1:, 0][:, tagged]
        where = np.empty(nb, dtype=np.int64)          # blend j -> its row in ``poses``
        if nb:
            b_a = np.asarray(self.b_a, np.int64)
            b_b = np.asarray(self.b_b, np.int64)
            b_w = np.asarray(self.b_w, DTYPE)
            b_mask = np.asarray(self.b_mask, np.int64)
            levels = np.asarray(self.b_level, np.int64)
            nxt = ns
            for level in range(1, int(levels.max()) + 1):
                for bone in np.unique(b_mask[levels == level]):
                    js = np.flatnonzero((levels == level) & (b_mask == bone))
                    rows_a = self._rows(b_a[js], where)
                    rows_b = self._rows(b_b[js], where)
                    out = slice(nxt, nxt + len(js))
                    res = blend(poses.take(rows_a), poses.take(rows_b), b_w[js],
                                mask=None if bone < 0 else subtree_mask(int(bone)))
                    poses.put(out, res)
                    where[js] = np.arange(nxt, nxt + len(js))
                    nxt += len(js)
        rows = np.array([own_default.get(i, default) if h is None else (h if h >= 0 else where[-h - 1])
                         for i, h in enumerate(self.finals)], dtype=np.int64)
        return poses.take(rows)

    @staticmethod
    def _rows(handles: np.ndarray, where: np.ndarray) -> np.ndarray:
        return np.where(handles >= 0, handles, where[np.maximum(-handles - 1, 0)])

    def execute_reference(self, bank: ClipBank) -> PoseBatch:
        """Run the plan one pose at a time (the scalar reference path)."""
        ns, nb = len(self.s_clip), len(self.b_a)
        single: dict[int, PoseBatch] = {}
        for i in range(ns):
            single[i] = bank.sample(np.array([self.s_clip[i]]), np.array([self.s_time[i]], DTYPE),
                                    np.array([self.s_rate[i]], DTYPE), np.array([self.s_flags[i]]))
        for j in range(nb):
            bone = self.b_mask[j]
            single[-(j + 1)] = blend(single[self.b_a[j]], single[self.b_b[j]], np.array([self.b_w[j]], DTYPE),
                                     mask=None if bone < 0 else subtree_mask(bone))
        out = PoseBatch.empty(len(self.finals))
        ref = PoseBatch.reference(1, bank.skeleton.bind_height)
        for i, h in enumerate(self.finals):
            out.put(slice(i, i + 1), ref if h is None else single[h])
        return out
