"""The 34-entry skeleton: parent table, reference pose, bone offsets and bone transforms.

``PARENTS`` is the table Skeleton_InitParents writes (the code's, which wins over the
prose that calls bone 2 the spine's parent). ``REFERENCE_ROTATIONS`` are the 34
rotations of Pose_InitReference, normalised. ``Skeleton.model_space`` turns a batch of
poses into model-space transforms level by level of the parent table.

Our bone-offset table (the character data's chunk 0x28 is game data we do not have)
describes a humanoid of about 1.8 m. Every bone's children lie along its local +x
axis, as the reference rotations imply, except at the branch points (the pelvis, the
hips, the collar and the head), which also step sideways or forward.

Spec: "Parent table", "Bone transforms", "The reference pose".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from scuffle.anim.maths import quat

__all__ = ["PARENTS", "REFERENCE_ROTATIONS", "NUM_BONES", "Bone", "Skeleton", "HUMANOID",
           "MIRROR_PAIRS", "depth_levels", "subtree_mask"]

NUM_BONES = 34

# Original: 0x00101120 Skeleton_InitParents (the table at 0x00597200).
PARENTS: tuple[int, ...] = (-1, 0, 1, 1, 3, 4, 5, 6, 6, 8, 6, 10, 6, 12, 6, 6, 5, 16, 17, 18, 19, 19,
                            5, 22, 23, 24, 25, 25, 2, 28, 29, 2, 31, 32)


class Bone(IntEnum):
    """The 34 pose bones by name (0-33; the row of ``Game.bones_model`` / ``bones_world``).

    The spec names bone 0 (the root: motion, the turn per 1/30 s, never drawn) and bone 1
    (the pelvis) ("Parent table", L108-112); the other names are ours, read from the parent
    table's shape (bone -> parent) and our offsets: the spine 3-5 up from the pelvis, the
    head 6 with its face bones 7-15, the arms from the chest (16-21 left, 22-27 right,
    each hand with a finger and a thumb bone), the legs from the hips (28-30, 31-33).
    """

    ROOT = 0            # motion: the turn per 1/30 s, never drawn (spec)
    PELVIS = 1          # absolute: the root translation (spec)
    HIPS = 2            # parent of both legs
    SPINE = 3
    SPINE1 = 4
    CHEST = 5           # parent of the head and both clavicles
    HEAD = 6            # parent of the face bones 7-15
    JAW = 7
    NOSE = 8
    NOSE_TIP = 9
    L_EYE = 10
    L_EYELID = 11
    R_EYE = 12
    R_EYELID = 13
    MOUTH = 14
    HEAD_TOP = 15
    L_CLAVICLE = 16
    L_UPPERARM = 17
    L_FOREARM = 18
    L_HAND = 19
    L_FINGERS = 20
    L_THUMB = 21
    R_CLAVICLE = 22
    R_UPPERARM = 23
    R_FOREARM = 24
    R_HAND = 25
    R_FINGERS = 26
    R_THUMB = 27
    L_THIGH = 28
    L_CALF = 29
    L_FOOT = 30
    R_THIGH = 31
    R_CALF = 32
    R_FOOT = 33

    @classmethod
    def of(cls, bone: "Bone | int | str") -> "Bone":
        """A bone from a Bone, its number (0-33) or its name (any case: "head", "L_HAND").
        Rejected: anything else (ValueError, with "did you mean ..." for a near name)."""
        if isinstance(bone, str):
            key = bone.strip().upper()
            if key in cls.__members__:
                return cls[key]
            import difflib
            near = difflib.get_close_matches(key, list(cls.__members__), n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            raise ValueError(f"no bone named {bone!r}{hint}")
        if isinstance(bone, bool) or not isinstance(bone, (int, np.integer)) or not 0 <= int(bone) < NUM_BONES:
            raise ValueError(f"bone {bone!r}: expected a Bone, a name or a number 0-{NUM_BONES - 1}")
        return cls(int(bone))


# Original: 0x00100200 Pose_InitReference (constants of the code, rounded to 4 places
# by the spec; normalised here). (x, y, z, w) per bone.
_REFERENCE = [
    (0, 0, 0, 1), (-0.4912, -0.5087, 0.4912, 0.5087), (-0.5000, 0.5000, -0.5000, 0.5000),
    (0.4793, -0.5199, 0.5199, -0.4793), (0, -0.0298, 0, 0.9996), (0, -0.1757, 0, 0.9844),
    (0, 0.1172, 0, 0.9931), (0.5274, -0.4710, 0.4710, 0.5274), (0.6590, 0, 0.7521, 0),
    (0, -0.2983, 0, 0.9545), (0.6081, -0.5780, 0.3635, 0.4050), (0, 0.6425, 0, 0.7663),
    (0.4043, -0.3602, 0.5801, 0.6085), (-0.0036, -0.6166, 0.0054, 0.7873), (0.7393, 0, 0.6733, 0),
    (0.5247, -0.4805, 0.4743, 0.5186), (0.6200, -0.7643, -0.1281, 0.1227),
    (0.0452, -0.0282, 0.1112, 0.9924), (0, 0.1174, 0, 0.9931), (-0.6951, -0.0567, 0.0262, 0.7162),
    (-0.0004, -0.2858, 0.0001, 0.9583), (-0.0811, -0.3223, -0.0030, 0.9431),
    (-0.6200, -0.7643, 0.1281, 0.1227), (-0.0452, -0.0282, -0.1112, 0.9924), (0, 0.1174, 0, 0.9931),
    (0.6951, -0.0567, -0.0262, 0.7162), (0.0004, -0.2858, -0.0001, 0.9583),
    (0.0811, -0.3223, 0.0030, 0.9431), (-0.0066, -0.1154, 0.9910, -0.0678), (0, 0.0340, 0, 0.9994),
    (-0.0030, -0.0194, -0.0700, 0.9974), (-0.0066, 0.1154, 0.9910, 0.0678), (0, 0.0340, 0, 0.9994),
    (0.0030, -0.0194, 0.0700, 0.9974),
]
_ref = np.array(_REFERENCE, dtype=np.float64)
REFERENCE_ROTATIONS: np.ndarray = (_ref / np.linalg.norm(_ref, axis=1, keepdims=True)).astype(np.float32)
REFERENCE_ROTATIONS.setflags(write=False)

# Left/right bone pairs (mirror images across the model's x = 0 plane).
MIRROR_PAIRS: tuple[tuple[int, int], ...] = (
    (10, 12), (11, 13), (16, 22), (17, 23), (18, 24), (19, 25), (20, 26), (21, 27),
    (28, 31), (29, 32), (30, 33))


def depth_levels(parents=PARENTS) -> list[np.ndarray]:
    """Bones grouped by depth below the pelvis: [[2, 3], [4, 28, 31], ...] (bones 0, 1 excluded)."""
    depth = [0] * len(parents)
    for b in range(2, len(parents)):
        depth[b] = depth[parents[b]] + 1
    levels = []
    for d in range(1, max(depth) + 1):
        levels.append(np.array([b for b in range(2, len(parents)) if depth[b] == d], dtype=np.intp))
    return levels


def subtree_mask(bone: int, parents=PARENTS) -> np.ndarray:
    """(34,) bool: the bone and every bone below it in the parent table."""
    if not 0 <= bone < len(parents):
        raise ValueError(f"bone {bone}: bones are 0-{len(parents) - 1}")
    mask = np.zeros(len(parents), dtype=bool)
    mask[bone] = True
    for b in range(len(parents)):          # parents precede children in the table
        if parents[b] >= 0 and mask[parents[b]]:
            mask[b] = True
    return mask


# Offsets of each bone from its parent, in the parent's local frame (metres).
# Single-child chains step along the parent's +x; branch points step sideways too.
_OFFSETS = {
    2: (0.0, 0.0, 0.0),                 # hips sit at the pelvis
    3: (0.004, -0.100, 0.0),            # spine: 10 cm up (the pelvis's local -y is up)
    4: (0.120, 0.0, 0.0),
    5: (0.140, 0.0, 0.0),
    6: (0.230, 0.0, 0.0),               # chest -> head (neck)
    7: (0.090, 0.0, 0.050), 8: (0.110, 0.0, 0.070), 9: (0.030, 0.0, 0.0),
    10: (0.120, -0.035, 0.080), 11: (0.020, 0.0, 0.0),
    12: (0.120, 0.035, 0.080), 13: (0.020, 0.0, 0.0),
    14: (0.040, 0.0, 0.070), 15: (0.170, 0.0, 0.030),
    16: (0.190, -0.025, 0.0), 17: (0.150, 0.0, 0.0), 18: (0.280, 0.0, 0.0), 19: (0.250, 0.0, 0.0),
    20: (0.080, 0.0, 0.0), 21: (0.030, 0.0, -0.020),
    22: (0.190, 0.025, 0.0), 23: (0.150, 0.0, 0.0), 24: (0.280, 0.0, 0.0), 25: (0.250, 0.0, 0.0),
    26: (0.080, 0.0, 0.0), 27: (0.030, 0.0, -0.020),
    28: (-0.060, -0.090, 0.0), 29: (0.440, 0.0, 0.0), 30: (0.430, 0.0, 0.0),
    31: (-0.060, 0.090, 0.0), 32: (0.440, 0.0, 0.0), 33: (0.430, 0.0, 0.0),
}
# Drawn length of leaf bones along their own +x (feet, hands, head top).
_TIPS = {30: 0.085, 33: 0.085, 20: 0.03, 26: 0.03, 15: 0.05, 9: 0.02}


@dataclass(frozen=True, eq=False)
class Skeleton:
    """Parent table, bone offsets (34, 3) in parent frames, and the pelvis bind height.

    ``bind_height`` is what the sampler adds to section B's z (the bone offset chunk's
    entry +4 in the original). Rejected: a parent table not of 34 entries or whose
    parents do not precede their children.
    """

    offsets: np.ndarray
    bind_height: float
    tips: np.ndarray
    parents: tuple[int, ...] = PARENTS
    levels: list = field(default_factory=list)
    _level_offsets: list = field(default_factory=list, init=False, repr=False, compare=False)
    _widest: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self):
        if len(self.parents) != NUM_BONES or any(
                p >= b for b, p in enumerate(self.parents) if b > 0) or self.parents[0] != -1:
            raise ValueError("skeleton parents: 34 entries, -1 first, each parent before its child")
        if self.offsets.shape != (NUM_BONES, 3):
            raise ValueError(f"skeleton offsets: shape {self.offsets.shape}, expected (34, 3)")
        object.__setattr__(self, "levels", depth_levels(self.parents))
        # Each level's offsets as (3, k, 1) columns (broadcast over the poses).
        object.__setattr__(self, "_level_offsets", [self.offsets[lv].T[:, :, None].copy() for lv in self.levels])
        object.__setattr__(self, "_widest", max(len(lv) for lv in self.levels))
        for arr in (self.offsets, self.tips):
            arr.setflags(write=False)

    def model_space(self, rot: np.ndarray, root: np.ndarray,
                    out_pos: np.ndarray | None = None, out_rot: np.ndarray | None = None,
                    vel: np.ndarray | None = None, tag: np.ndarray | None = None):
        """Pose rotations (4, 34, N) and root translations (3, N) -> model-space transforms.

        Out: positions (3, 34, N) and rotations (4, 34, N). Entry 0 is motion, not a bone
        (nothing is parented to it): given the pose's root velocities ``vel`` (3, N) and
        tags ``tag`` (36, N), it holds the root velocity and bone 0's rotation (the turn
        per 1/30 s), each zero / the identity where its tag is set ("Bone transforms"
        L116, the original's); without them, zero and the identity (Coney's, L394).
        Entry 1, the pelvis, is absolute: the root
        translation and bone 1's own rotation. Bones 2-33 are composed down the parent
        table, one depth level at a time: rotation = parent x local, position = parent +
        parent . offset.
        Original: 0x00104630 Instance_BuildBoneMatrices.
        """
        n = rot.shape[-1]
        dtype = rot.dtype
        if out_pos is None:
            out_pos = np.empty((3, NUM_BONES, n), dtype=dtype)
        if out_rot is None:
            out_rot = np.empty((4, NUM_BONES, n), dtype=dtype)
        out_pos[:, 0] = 0
        out_rot[:, 0] = 0
        out_rot[3, 0] = 1
        if vel is not None and tag is not None:
            out_pos[:, 0] = np.where(tag[0], out_pos[:, 0], vel)
            out_rot[:, 0] = np.where(tag[2], out_rot[:, 0], rot[:, 0])
        out_pos[:, 1] = root
        out_rot[:, 1] = rot[:, 1]
        parents = np.asarray(self.parents)
        qbuf = np.empty((4, self._widest, n), dtype)
        vbuf = np.empty((3, self._widest, n), dtype)
        for level, offs in zip(self.levels, self._level_offsets):
            k = len(level)
            par = parents[level]
            prot = out_rot[:, par]
            out_rot[:, level] = quat.mul(prot, rot[:, level], out=qbuf[:, :k])
            quat.rotate(prot, offs.astype(dtype, copy=False), out=vbuf[:, :k])
            vbuf[:, :k] += out_pos[:, par]
            out_pos[:, level] = vbuf[:, :k]
        return out_pos, out_rot

    def tip_positions(self, pos: np.ndarray, rot: np.ndarray) -> np.ndarray:
        """The drawn end of each bone (3, 34, N): its position plus its tip length along +x."""
        tip = np.zeros((3, NUM_BONES, pos.shape[-1]), dtype=pos.dtype)
        tip[0] = self.tips[:, None]
        return pos + quat.rotate(rot, tip)

    def reference_model_space(self) -> tuple[np.ndarray, np.ndarray]:
        """Model-space positions (34, 3) and rotations (34, 4) of the reference pose, standing."""
        rot = REFERENCE_ROTATIONS.T[:, :, None].astype(np.float64)
        root = np.array([[0.0], [0.0], [self.bind_height]])
        pos, mrot = self.model_space(rot, root)
        return pos[:, :, 0].T, mrot[:, :, 0].T


def _humanoid() -> Skeleton:
    offs = np.zeros((NUM_BONES, 3))
    for b, o in _OFFSETS.items():
        offs[b] = o
    tips = np.zeros(NUM_BONES)
    for b, t in _TIPS.items():
        tips[b] = t
    probe = Skeleton(offsets=offs, bind_height=0.0, tips=tips)
    pos, rot = probe.model_space(REFERENCE_ROTATIONS.T[:, :, None].astype(np.float64), np.zeros((3, 1)))
    lowest = probe.tip_positions(pos, rot)[2, :, 0].min()
    # Stand the reference pose on the ground: the lowest foot tip at z = 0.
    return Skeleton(offsets=offs, bind_height=round(float(-lowest), 4), tips=tips)


HUMANOID: Skeleton = _humanoid()
