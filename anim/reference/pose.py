"""The reference pose: a cursor's pose, the blends, the pose stack of seven, the bone transforms.

Plain Python on numpy float32 scalars, one value at a time, with the float32 operations
in the order the engine's pose kernel performs them (anim/engine/kernels.py ``_sample``,
``_blend``, ``_slerp_lane``, ``_scale_turn``, ``_emit``), so that the two agree bit for
bit. The angle functions are the kernel's polynomials (acos by Abramowitz & Stegun
4.4.46, sin / cos by their Taylor series), not libm's and never numpy's SIMD ufuncs.

Spec: "The pose" (L98-104), "Playing a clip" (L182-189), "Blending" (L191-193),
"Root motion" (L338-345), "Bone transforms" (L112-119), "The key in force" (L396).
"""
from __future__ import annotations

import math
import struct

import numpy as np

from scuffle.anim.maths import f32 as F
from scuffle.anim.maths.detmath import acos_s, sin_cos_s
from scuffle.anim.data.clip import decode_positions, decode_rotations, key_frames
from scuffle.anim.base.errors import POSE_STACK_SIZE
from scuffle.anim.maths.skeleton import NUM_BONES, REFERENCE_ROTATIONS
from scuffle.anim.base.enums import TagBits
from scuffle.anim.reference.cursor import NO_TURN, NO_VELOCITY

__all__ = ["RefPose", "RefPoseStack", "sample_cursor", "blend", "reference_pose", "queued_pose", "sample_instance",
           "bones_of", "scale_turn", "slerp", "with_tag_bits"]

f32 = np.float32
_ONE = f32(1.0)
_ZERO = f32(0.0)
_TURN_EPSILON = f32(5e-7)        # L341: w within 5e-7 of 1 is no turn
_LINEAR_DOT = f32(0.9995)        # Quat_Slerp's near-parallel case: a normalised lerp


# ---------------------------------------------------------------- the angle functions
#
# acos, sin and cos come from anim.maths.detmath (stateless: + - * / and sqrt only, the same
# bits on every CPU), the functions the kernels compile: Quat_Slerp's and the turn's
# angles are theirs, not libm's (docs/original.md, "Float policy").


def _sqrt32(v) -> np.float32:
    return f32(math.sqrt(float(v)))


def scale_turn(q: tuple, rate32: np.float32) -> tuple:
    """"Root motion" L341: bone 0's key slerped from the identity by the rate (clamped to
    [0, 1]); skipped at rate 1.0 or w within 5e-7 of 1. Original: 0x00336a00 Quat_Slerp."""
    qx, qy, qz, qw = q
    if rate32 == _ONE or abs(_ONE - qw) <= _TURN_EPSILON:
        return q
    r = float(min(max(rate32, _ZERO), _ONE))
    w = float(min(max(qw, f32(-1.0)), _ONE))
    half = acos_s(w)
    sh = math.sqrt(1.0 - w * w)
    if sh == 0.0:
        sh = 1.0
    s_rh, c_rh = sin_cos_s(r * half)
    kk = f32(s_rh / sh)
    return qx * kk, qy * kk, qz * kk, f32(c_rh)


def slerp(a: tuple, b: tuple, t) -> tuple:
    """Quat_Slerp (0x00336a00, L193) from a (t = 0) to b (t = 1), t clamped, the shorter arc;
    a normalised lerp above |dot| 0.9995."""
    t = min(max(f32(t), _ZERO), _ONE)
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    dot = ax * bx + ay * by + az * bz + aw * bw
    d = min(abs(dot), _ONE)
    if d > _LINEAR_DOT:
        wb = t if dot >= 0 else -t
        wa = _ONE - t
        ox = ax * wa + bx * wb
        oy = ay * wa + by * wb
        oz = az * wa + bz * wb
        ow = aw * wa + bw * wb
        n = _sqrt32(ox * ox + oy * oy + oz * oz + ow * ow)
        if n == 0:
            return _ZERO, _ZERO, _ZERO, _ONE
        return ox / n, oy / n, oz / n, ow / n
    dd = float(d)
    td = float(t)
    theta = acos_s(dd)
    inv = 1.0 / math.sqrt(1.0 - dd * dd)
    wa = f32(sin_cos_s((1.0 - td) * theta)[0] * inv)
    wb = f32(sin_cos_s(td * theta)[0] * inv)
    if dot < 0:
        wb = -wb
    return ax * wa + bx * wb, ay * wa + by * wb, az * wa + bz * wb, aw * wa + bw * wb


# ---------------------------------------------------------------- a pose


class RefPose:
    """A sampled pose (0x240 bytes, L100): the root velocity, the root translation, 34
    rotations, and 36 default tags (velocity, translation, bones 0-33; L102)."""

    __slots__ = ("vel", "root", "rot", "tag")

    def __init__(self, vel, root, rot, tag):
        self.vel, self.root, self.rot, self.tag = vel, root, rot, tag

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(vel (3,), root (3,), rot (34, 4)) float32 and tag (36,) bool."""
        return (np.array(self.vel, np.float32), np.array(self.root, np.float32),
                np.array(self.rot, np.float32).reshape(NUM_BONES, 4), np.array(self.tag, bool))


def _y_bit(v, on: bool) -> np.float32:
    """The float32 ``v`` with the lowest bit of its word set (``on``) or cleared."""
    (word,) = struct.unpack("<I", struct.pack("<f", v))
    word = (word | 1) if on else (word & 0xFFFFFFFE)
    return f32(struct.unpack("<f", struct.pack("<I", word))[0])


def with_tag_bits(p: RefPose) -> RefPose:
    """"The pose" L102: "Each value taken from the default is tagged by setting the lowest
    bit of its y word (| 1 on the second 32-bit float); sampled values have the bit
    cleared": the y of the velocity, the root translation and each rotation, by its tag
    (in place; returns ``p``). Original: 0x00104ce0."""
    p.vel = [p.vel[0], _y_bit(p.vel[1], p.tag[0]), p.vel[2]]
    p.root = [p.root[0], _y_bit(p.root[1], p.tag[1]), p.root[2]]
    p.rot = [(q[0], _y_bit(q[1], p.tag[2 + b]), q[2], q[3]) for b, q in enumerate(p.rot)]
    return p


def reference_pose(bind_height: float, bits: bool = False) -> RefPose:
    """The default pose (L102): no velocity, the pelvis at its bind height, the reference
    rotations (Pose_InitReference 0x00100200), every value tagged (with ``bits``, in
    the y words' lowest bit too)."""
    rot = [tuple(f32(v) for v in REFERENCE_ROTATIONS[b]) for b in range(NUM_BONES)]
    p = RefPose([_ZERO] * 3, [_ZERO, _ZERO, f32(bind_height)], rot, [True] * (2 + NUM_BONES))
    return with_tag_bits(p) if bits else p


class _Channel:
    """One channel decoded at load ("Notes for implementers" L406): each key's start frame,
    value, and step toward the next key per frame (the sign flip done for rotations;
    0 for a channel's last key and for bone 0, which is never interpolated, L340)."""

    __slots__ = ("start", "value", "slope")

    def __init__(self, keys, rotation: bool, carried: bool):
        start = key_frames(keys)
        v = decode_rotations(keys) if rotation else np.concatenate(
            [decode_positions(keys), np.zeros((len(keys), 1), np.float32)], axis=1)
        self.start = [int(s) for s in start]
        self.value = [tuple(f32(x) for x in row) for row in v]
        self.slope = []
        n = len(keys)
        for i in range(n):
            a = self.value[i]
            if i + 1 < n and carried:
                b = self.value[i + 1]
                if rotation:
                    dot = a[0] * b[0]
                    for c in (1, 2, 3):
                        dot = dot + a[c] * b[c]
                    if dot < 0:
                        b = tuple(-x for x in b)
                inv = _ONE / f32(int(keys["delta"][i + 1]))
                self.slope.append(tuple((b[c] - a[c]) * inv for c in range(4)))
            else:
                self.slope.append((_ZERO,) * 4)

    def key(self, frame: int) -> int:
        """The key in force at ``frame``: the last one starting at or before it."""
        k = 0
        while k + 1 < len(self.start) and self.start[k + 1] <= frame:
            k += 1
        return k

    def carried(self, k: int, x: np.float32) -> tuple:
        """Key k carried toward the next: value + slope x (frame - key start), per component."""
        dx = x - f32(self.start[k])
        return tuple(self.slope[k][c] * dx + self.value[k][c] for c in range(4))


class _Decoded:
    """A clip's channels (slots: velocity, translation, bones 0-33) and its frame table length."""

    def __init__(self, clip):
        self.velocity = _Channel(clip.velocity, False, True) if clip.velocity is not None and len(clip.velocity) \
            else None
        self.translation = _Channel(clip.translation, False, True) \
            if clip.translation is not None and len(clip.translation) else None
        self.bones = {int(b): _Channel(k, True, int(b) != 0) for b, k in clip.rotations.items() if len(k)}
        last = clip.frames
        for ch in [self.velocity, self.translation, *self.bones.values()]:
            if ch is not None:
                last = max(last, ch.start[-1])
        self.last_frame = last


def decoded(world, clip) -> _Decoded:
    """The clip decoded into channels, once per clip for this world (the spec's "decode a
    clip into channels of keys at load")."""
    d = world.decoded_clips
    hit = d.get(id(clip))
    if hit is None or hit[0] is not clip:
        hit = d[id(clip)] = (clip, _Decoded(clip))
    return hit[1]


def sample_cursor(world, cursor, rate: float, default: RefPose | None = None) -> RefPose:
    """AnimCursor_SamplePose (0x00104ce0): the pose of ``cursor`` at its time.

    Each channel takes its key in force at the nearest whole frame (a tie to the lower,
    L396) carried toward the next key; rotations are normalised; the velocity times the
    rate (L338); bone 0 the key in force scaled by the rate (L340-341); section B's z
    plus the bind height (L70); a slot the clip leaves out (or flags 0x1 / 0x2 switch
    off) takes the default, tagged (L102), the tag also in the y words' lowest bit
    unless ``tag_bits`` is "mark". The default pose is the instance's (+0x70): the
    reference pose, or ``default`` (the queued tasks' pose, ``sample_instance``), whose
    rotations a bone 1-33 the clip leaves out takes as they are (ours: bone 0 stays the
    identity, the velocity and root translation the reference pose's).
    """
    dec = decoded(world, cursor.clip)
    x = f32(F.mul(cursor.time, 30.0))
    fr = max(math.ceil(float(x) - 0.5), 0)
    fr = min(fr, dec.last_frame)
    rate32 = f32(rate)
    bind = f32(world.skeleton.bind_height)
    tag = [True] * (2 + NUM_BONES)
    ch = None if cursor.flags & NO_VELOCITY else dec.velocity
    if ch is None:
        vel = [_ZERO * rate32] * 3
    else:
        v = ch.carried(ch.key(fr), x)
        vel = [v[c] * rate32 for c in range(3)]
        tag[0] = False
    ch = dec.translation
    if ch is None:
        root = [_ZERO, _ZERO, _ZERO + bind]
    else:
        v = ch.carried(ch.key(fr), x)
        root = [v[0], v[1], v[2] + bind]
        tag[1] = False
    rot: list[tuple] = []
    ch = None if cursor.flags & NO_TURN else dec.bones.get(0)
    if ch is None:
        rot.append((_ZERO, _ZERO, _ZERO, _ONE))
    else:
        rot.append(scale_turn(ch.carried(ch.key(fr), x), rate32))
        tag[2] = False
    for b in range(1, NUM_BONES):
        ch = dec.bones.get(b)
        if ch is None:
            rot.append(tuple(f32(v) for v in REFERENCE_ROTATIONS[b]) if default is None else default.rot[b])
            continue
        q0, q1, q2, q3 = ch.carried(ch.key(fr), x)
        n2 = q0 * q0
        n2 = n2 + q1 * q1
        n2 = n2 + q2 * q2
        n2 = n2 + q3 * q3
        n = _sqrt32(n2)
        if n == 0:
            n = _ONE
        inv = _ONE / n
        rot.append((q0 * inv, q1 * inv, q2 * inv, q3 * inv))
        tag[2 + b] = False
    p = RefPose(vel, root, rot, tag)
    return with_tag_bits(p) if world.options.tag_bits == TagBits.Y_BIT else p


def blend(lo: RefPose, up: RefPose, w, bits: bool = False) -> RefPose:
    """Pose_BlendPartial (0x00105158, L104) over the whole body, ``w`` the upper's share:
    the motion channels (velocity, bone 0) take the untagged side when one is tagged,
    else lerp / slerp; the root translation and bones 1-33 keep the lower's when both are
    tagged, else lerp / slerp (untagged). With ``bits`` each result's y word carries its
    tag in its lowest bit (ours: L104 does not say what the blend writes there)."""
    w = f32(w)
    lt, ut = lo.tag[0], up.tag[0]
    vel = [lo.vel[c] if ut else up.vel[c] if lt else lo.vel[c] + (up.vel[c] - lo.vel[c]) * w for c in range(3)]
    lt2, ut2 = lo.tag[2], up.tag[2]
    rot0 = lo.rot[0] if ut2 else up.rot[0] if lt2 else slerp(lo.rot[0], up.rot[0], w)
    tag = [lt and ut, False, lt2 and ut2] + [False] * (NUM_BONES - 1)
    if lo.tag[1] and up.tag[1]:
        root = list(lo.root)
        tag[1] = True
    else:
        root = [lo.root[c] + (up.root[c] - lo.root[c]) * w for c in range(3)]
    rot = [rot0]
    for b in range(1, NUM_BONES):
        if lo.tag[2 + b] and up.tag[2 + b]:
            rot.append(lo.rot[b])
            tag[2 + b] = True
        else:
            rot.append(slerp(lo.rot[b], up.rot[b], w))
    p = RefPose(vel, root, rot, tag)
    return with_tag_bits(p) if bits else p


class RefPoseStack:
    """The pose stack (L100, L257): at most seven poses; an eighth push is refused and
    counted (0x00104ce0); a blend with fewer than two poses does nothing. Its samples take
    ``default`` as the default pose (None: the reference pose)."""

    def __init__(self, world, default: RefPose | None = None):
        self.world = world
        self.default = default
        self.poses: list[RefPose] = []
        self.refused = 0

    def sample(self, cursor, rate: float) -> RefPose | None:
        if len(self.poses) >= POSE_STACK_SIZE:
            self.refused += 1
            return None
        p = sample_cursor(self.world, cursor, rate, self.default)
        self.poses.append(p)
        return p

    def blend_top(self, w) -> None:
        if len(self.poses) < 2:
            return
        up = self.poses.pop()
        lo = self.poses.pop()
        self.poses.append(blend(lo, up, w, self.world.options.tag_bits == TagBits.Y_BIT))

    def keep(self, pushed: list, kept) -> None:
        """Of the poses just pushed, only ``kept`` stays (type 11 sampling all four)."""
        n = sum(1 for p in pushed if p is not None)
        if n:
            del self.poses[-n:]
        if kept is not None:
            self.poses.append(kept)


def queued_pose(world, inst) -> RefPose | None:
    """The default pose from the queued tasks ("The pose" L102), or None (the reference
    pose is the default): when the instance has queued tasks (the count at +0x2ae) and the
    human test (0x00223440, ``PlayerOptions.queued_default``, asked only then) passes,
    the queued tasks are sampled first, in queue order, onto a pose stack of their own
    (the reference pose their default, as the second buffer 0x005fd040 starts), and the
    top of that stack is the default pose, or the reference pose when it is empty. That
    stack's refusals are not counted (ours). Original: 0x00176d60."""
    test = world.options.queued_default
    if test is None or not inst.queue or not world.callbacks.call(test, inst):
        return None
    stack = RefPoseStack(world)
    for task in inst.queue:
        task.emit(world, stack)
    return stack.poses[-1] if stack.poses else reference_pose(world.skeleton.bind_height,
                                                              world.options.tag_bits == TagBits.Y_BIT)


def sample_instance(world, inst) -> RefPose:
    """CharacterInstance_Sample (0x00176d60): the stack sampled bottom-up (L257); the top
    of the pose stack, or the default pose for an empty one: the reference pose, or the
    queued tasks' pose when ``queued_pose`` gives one (L102)."""
    default = queued_pose(world, inst)
    stack = RefPoseStack(world, default)
    for task in inst.stack:
        task.emit(world, stack)
    inst.poses_refused = stack.refused
    if stack.poses:
        return stack.poses[-1]
    if default is not None:
        return default
    return reference_pose(world.skeleton.bind_height, world.options.tag_bits == TagBits.Y_BIT)


def bones_of(skeleton, pose: RefPose, motion: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Instance_BuildBoneMatrices (0x00104630, L112-119): model-space positions (34, 3) and
    rotations (34, 4). Entry 0 is motion, not a bone: with ``motion`` (L116, the
    original's) "the root velocity and bone 0's rotation (the turn per 1/30 s), or the
    identity when the pose's value is tagged as a default", each by its own tag; without,
    zero and the identity (Coney's, L394). The pelvis takes the root translation and bone
    1's rotation as is; bones 2-33 compose down the parent table."""
    offsets = np.asarray(skeleton.offsets, np.float32)
    parents = skeleton.parents
    entry_pos = (_ZERO, _ZERO, _ZERO)
    entry_rot = (_ZERO, _ZERO, _ZERO, _ONE)
    if motion and not pose.tag[0]:
        entry_pos = tuple(pose.vel)
    if motion and not pose.tag[2]:
        entry_rot = tuple(pose.rot[0])
    pos = [entry_pos, tuple(pose.root)]
    mrot = [entry_rot, tuple(pose.rot[1])]
    two = f32(2.0)
    for b in range(2, NUM_BONES):
        bx, by, bz, bw = pose.rot[b]
        vx, vy, vz = (f32(v) for v in offsets[b])
        par = parents[b]
        ax, ay, az, aw = mrot[par]
        px, py, pz = pos[par]
        mrot.append((aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz))
        cx = ay * vz - az * vy + aw * vx
        cy = az * vx - ax * vz + aw * vy
        cz = ax * vy - ay * vx + aw * vz
        pos.append(((ay * cz - az * cy) * two + vx + px,
                    (az * cx - ax * cz) * two + vy + py,
                    (ax * cy - ay * cx) * two + vz + pz))
    return np.array(pos, np.float32), np.array(mrot, np.float32)
