"""Poses as structure-of-arrays batches, the tag ("default") rule and Pose_BlendPartial.

A pose holds two translations (the root velocity and the root translation) and 34
rotations. A ``PoseBatch`` holds N of them with the batch on the last axis:

    vel  (3, N)      root velocity, m/s, already times the rate
    root (3, N)      root translation (the pelvis), bind height added
    rot  (4, 34, N)  x, y, z, w per bone
    tag  (36, N)     True where the value came from the default pose:
                     row 0 the velocity, row 1 the root translation, row 2 + b bone b

Spec: "The pose", "Blending". Original: 0x00104ce0 AnimCursor_SamplePose (the tags),
0x00105158 Pose_BlendPartial.
"""
from __future__ import annotations

import numpy as np

from scuffle.anim.maths import quat
from scuffle.anim.base.errors import POSE_STACK_SIZE, PoseStackOverflow
from scuffle.anim.maths.skeleton import NUM_BONES, REFERENCE_ROTATIONS

__all__ = ["PoseBatch", "blend", "set_tag_bits", "tag_bits_of", "TAG_VELOCITY", "TAG_ROOT", "TAG_BONE", "NUM_TAGS",
           "POSE_STACK_SIZE", "PoseStackOverflow", "DTYPE"]

DTYPE = np.float32
TAG_VELOCITY = 0
TAG_ROOT = 1
TAG_BONE = 2
NUM_TAGS = 2 + NUM_BONES


class PoseBatch:
    """N poses in structure-of-arrays form (see the module docstring for the layout)."""

    __slots__ = ("vel", "root", "rot", "tag")

    def __init__(self, vel: np.ndarray, root: np.ndarray, rot: np.ndarray, tag: np.ndarray):
        self.vel, self.root, self.rot, self.tag = vel, root, rot, tag

    @classmethod
    def empty(cls, n: int) -> "PoseBatch":
        """Uninitialised storage for n poses."""
        return cls(np.empty((3, n), DTYPE), np.empty((3, n), DTYPE),
                   np.empty((4, NUM_BONES, n), DTYPE), np.empty((NUM_TAGS, n), bool))

    @classmethod
    def reference(cls, n: int, bind_height: float) -> "PoseBatch":
        """n copies of the default pose: zero velocity, the pelvis at its bind height, the
        reference rotations (bone 0 the identity), every value tagged as a default."""
        p = cls.empty(n)
        p.vel[:] = 0
        p.root[:] = 0
        p.root[2] = bind_height
        p.rot[:] = REFERENCE_ROTATIONS.T[:, :, None]
        p.tag[:] = True
        return p

    def __len__(self) -> int:
        return self.vel.shape[1]

    def take(self, index) -> "PoseBatch":
        """A new batch of the poses at ``index`` (an int array or a slice)."""
        if isinstance(index, slice):
            return PoseBatch(self.vel[:, index], self.root[:, index], self.rot[:, :, index], self.tag[:, index])
        return PoseBatch(self.vel[:, index], self.root[:, index], self.rot[:, :, index], self.tag[:, index])

    def put(self, index, src: "PoseBatch") -> None:
        """Write the poses of ``src`` at ``index`` (an int array or a slice)."""
        self.vel[:, index] = src.vel
        self.root[:, index] = src.root
        self.rot[:, :, index] = src.rot
        self.tag[:, index] = src.tag

    def copy(self) -> "PoseBatch":
        """An independent copy of the batch."""
        return PoseBatch(self.vel.copy(), self.root.copy(), self.rot.copy(), self.tag.copy())

    def is_finite(self) -> bool:
        """Whether every translation and rotation value is finite."""
        return bool(np.isfinite(self.vel).all() and np.isfinite(self.root).all() and np.isfinite(self.rot).all())


def set_tag_bits(p: PoseBatch, index=slice(None)) -> None:
    """Each value's tag into the lowest bit of its y float, in place: set on a default,
    cleared on any other value, for the poses at ``index`` (a slice or an int array).
    "The pose" L102: "Each value taken from the default is tagged by setting the lowest
    bit of its y word (| 1 on the second 32-bit float); sampled values have the bit
    cleared." Original: 0x00104ce0 AnimCursor_SamplePose."""
    for vals, tags in ((p.vel[1], p.tag[TAG_VELOCITY]), (p.root[1], p.tag[TAG_ROOT]), (p.rot[1], p.tag[TAG_BONE:])):
        bits = vals[..., index].view(np.int32)
        t = tags[..., index]
        bits &= np.int32(-2)
        bits |= t.astype(np.int32)
        vals[..., index] = bits.view(DTYPE)


def tag_bits_of(p: PoseBatch) -> np.ndarray:
    """The tags as the original reads them: the lowest bit of each value's y float,
    (36, N) bool in the ``tag`` layout (row 0 the velocity, 1 the root, 2 + b bone b)."""
    out = np.empty(p.tag.shape, bool)
    out[TAG_VELOCITY] = (p.vel[1].view(np.int32) & 1) != 0
    out[TAG_ROOT] = (p.root[1].view(np.int32) & 1) != 0
    out[TAG_BONE:] = (p.rot[1].view(np.int32) & 1) != 0
    return out


def blend(lower: PoseBatch, upper: PoseBatch, weight, out: PoseBatch | None = None,
          mask: np.ndarray | None = None) -> PoseBatch:
    """Blend two pose batches by ``weight`` (the upper pose's share, per pose or scalar).

    The tag rule: for the root translation and bones 1-33 two tagged values keep the
    lower pose's (still tagged); otherwise they are lerped / slerped, even when one is
    a default, and the result is untagged. For the motion channels (the root velocity
    and bone 0) a tagged side gives way: the other side is copied with its tag, so a
    clip without root motion does not damp the motion of the one it blends with.
    ``mask`` (34,) bool, from skeleton.subtree_mask, limits the blend to a subtree; the
    rest keeps the lower pose (bone 0 gates the velocity, bone 1 the root translation).
    Rejected: batches of different lengths (ValueError).
    Original: 0x00105158 Pose_BlendPartial.
    """
    n = len(lower)
    if len(upper) != n:
        raise ValueError(f"blend: lower holds {n} poses, upper {len(upper)}")
    if out is None:
        out = PoseBatch.empty(n)
    w = np.broadcast_to(np.asarray(weight, dtype=DTYPE), (n,))
    lt, ut = lower.tag, upper.tag

    # Motion channels: velocity (tag row 0) and bone 0 (tag row 2).
    vel = lower.vel + (upper.vel - lower.vel) * w
    vel = np.where(lt[0] & ~ut[0], upper.vel, np.where(ut[0], lower.vel, vel))
    b0 = quat.slerp(lower.rot[:, 0], upper.rot[:, 0], w)
    b0 = np.where(lt[2] & ~ut[2], upper.rot[:, 0], np.where(ut[2], lower.rot[:, 0], b0))
    vel_tag = lt[0] & ut[0]
    b0_tag = lt[2] & ut[2]

    # The root translation and bones 1-33: both tagged keeps the lower pose's.
    root = lower.root + (upper.root - lower.root) * w
    both_root = lt[1] & ut[1]
    root = np.where(both_root, lower.root, root)
    both = lt[3:] & ut[3:]
    live = ~both.all(axis=1)                  # bones some pose of the batch really blends
    if live.sum() > 0.6 * len(live):          # gathering the live ones costs more than it saves
        rot = quat.slerp(lower.rot[:, 1:], upper.rot[:, 1:], w)
        rot = np.where(both, lower.rot[:, 1:], rot)
    else:
        rot = lower.rot[:, 1:].copy()
        cols = np.flatnonzero(live)
        if len(cols):
            lo, up = lower.rot[:, 1 + cols], upper.rot[:, 1 + cols]
            rot[:, cols] = np.where(both[cols], lo, quat.slerp(lo, up, w))

    if mask is None:
        out.vel[:] = vel
        out.root[:] = root
        out.rot[:, 0] = b0
        out.rot[:, 1:] = rot
        out.tag[0] = vel_tag
        out.tag[1] = both_root
        out.tag[2] = b0_tag
        out.tag[3:] = both
        return out

    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (NUM_BONES,):
        raise ValueError(f"blend: mask shape {mask.shape}, expected ({NUM_BONES},)")
    keep_rot = ~mask[:, None]
    out.rot[:, 0] = b0 if mask[0] else lower.rot[:, 0]
    out.rot[:, 1:] = np.where(keep_rot[1:], lower.rot[:, 1:], rot)
    out.vel[:] = vel if mask[0] else lower.vel
    out.root[:] = root if mask[1] else lower.root
    out.tag[0] = vel_tag if mask[0] else lt[0]
    out.tag[1] = both_root if mask[1] else lt[1]
    out.tag[2] = b0_tag if mask[0] else lt[2]
    out.tag[3:] = np.where(keep_rot[1:], lt[3:], both)
    return out
