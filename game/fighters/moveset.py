"""The demo move set: every clip of game.moves authored in code, encoded in the clip
format and loaded back through the resource loader like any user's data.

    from scuffle.game.fighters.moveset import demo_set
    s = demo_set()                  # AnimSet "demo", shared and read-only (cached)
    s.clip(Move.HOLD), s.range(Move.HOLD)

How the poses are authored. A pose is a handful of body parameters (the whole body's
tilt, the spine's lean and twist, the head, a target direction or a hand point per
limb segment, the pelvis offset); ``solve`` turns it into the 34 local rotations of
the clip format. Each bone's change is a rotation D[b] in the rest pose's model frame
(x right, y forward, z up), carried down the parent table:

    local_b = conj(M_ref[p]) . D[b] . M_ref[p] . REF[b]        (b >= 2, p its parent)
    local_1 = D[1] . REF[1]                                    (the pelvis is absolute)

so a bone's model rotation is A[b] . M_ref[b] with A[b] = A[p] . D[b]. A bone whose
local rotation never leaves the reference pose gets no channel (the sampler fills it
from the reference pose, as the original's does). Bone 2 (the hips, the legs' parent)
is never changed: clips that have a bone 2 channel hold the reference constant
(-0.5, 0.5, -0.5, 0.5) in it, and the grab, grab-strike, let-go and grounded clips
leave it out, as on the disc ("The reference pose"). The pelvis height (section B's z,
relative to the bind height) is set so that the lowest point of the body touches the
ground, unless a pose fixes it.

Bone 0 is the root turn per 1/30 s (never drawn). The throws turn through it: a
constant key over a stretch of a multiple of 3 frames that starts on a multiple of 3,
with no turn at the start and the end, so that at rate 0.75 (3 frames = 4 updates,
the key in force taken at the nearest whole frame) the runtime's sum of rate x key
angle over the updates is exactly the authored angle ("Root motion").

Paired clips: each attacker clip carries a type-8 event at frame 0 whose position is
where the partner stands in the attacker's frame (x right, y forward) and whose
rotation is the partner's facing (a half turn: face to face); its Anim Range List
record holds the same point as a unit direction and a reach (the hold 82: event
(0.380, 1.012), record (0.351, 0.936) x 1.081 m). The victim's id has a record with
the same rate flag, so the victim plays at the attacker's rate ("Paired tasks"). The
two clips of a pair are authored together, frame by frame (``pair_poses``): the
attacker's hands go onto the partner standing at the type-8 place (neck and upper arm
in front, round the chest from behind) and the partner's hands onto its forearms.

Rates ("Playback rate"): flag 0x800 -> 0.8 (the attacks, the grab attempt, the grab
strikes), 0x1000 -> 1.0 (the gait loops), no flag -> 0.75 (everything else).

The move table (``MOVE_TABLE``; docs/moveset.md has it with the events):

    id   name                        F   flag    b2   turn    what it looks like
    388  IDLE                       60   -       yes  -       relaxed stance, breathing (loop)
    358  FIGHT_IDLE                 40   -       yes  -       guard, bouncing on the knees (loop)
    408  WALK                       35   0x1000  yes  -       walk cycle, 1.63 m/s (gait slot 0)
    409  JOG                        24   0x1000  yes  -       jog cycle, 3.5 m/s (slot 1)
    410  RUN                        21   0x1000  yes  -       run cycle, 5.5 m/s (slot 2)
    411  SPRINT                     18   0x1000  yes  -       sprint cycle, 7.8 m/s (slots 3, 4)
    412  WALK_START                 10   -       yes  -       first step, root 0 then 1.048 m/s
    413  WALK_STOP                  12   -       yes  -       last step, root slowing to 0
    11   JAB                        24   0x800   yes  -       left straight punch
    12   KICK                       16   0x800   yes  -       right front kick (heavy)
    14   CROSS                      24   0x800   yes  -       right straight punch
    15   HOOK                       16   0x800   yes  -       right hook
    19   COMBO                      21   0x800   yes  -       left body punch
    20   COMBO_HOLD                 26   0x800   yes  -       right uppercut
    17   FINISHER                   27   0x800   yes  -       lunging right haymaker (heavy)
    389  ATTACK_END                 19   -       yes  -       guard back to the relaxed stance
    70   GRAB_ATTEMPT               18   0x800   yes  -       both arms reach forward
    69   GRAB_CONNECT               12   -       no   -       grips the partner (paired)
    71   GRAB_CONNECT_VICTIM        12   -       no   -       is grabbed, hunches
    72   GRAB_HOLD_STRUGGLE         30   -       no   -       hold, shaking the partner (paired)
    73   GRAB_HOLD_STRUGGLE_VICTIM  30   -       no   -       struggles in the hold
    74   GRAB_TURN                  18   -       no   -       yanks the partner side to side (paired)
    75   GRAB_TURN_VICTIM           18   -       no   -       is yanked
    82   HOLD                       40   -       no   -       front hold (paired, loop)
    83   HOLD_VICTIM                40   -       no   -       held from the front (loop)
    84   HOLD_BACK                  40   -       no   -       hold from behind (paired, loop)
    85   HOLD_BACK_VICTIM           40   -       no   -       held from behind (loop)
    51   GRAB_KNEE                  21   0x800   no   -       knee to the body (paired)
    52   GRAB_KNEE_VICTIM           21   0x800   no   -       doubles over
    53   GRAB_PUNCH                 18   0x800   no   -       short punch in the hold (paired)
    54   GRAB_PUNCH_VICTIM          18   0x800   no   -       head snaps back
    55   GRAB_HEADBUTT              24   0x800   no   -       headbutt (paired)
    56   GRAB_HEADBUTT_VICTIM       24   0x800   no   -       head snaps back hard
    94   LET_GO                     15   -       no   -       pushes the partner away (paired)
    95   LET_GO_VICTIM              15   -       no   -       staggers back
    149  THROW_SIDE                 30   -       yes  -90     swings the partner to the right
    148  THROW_SIDE_VICTIM          30   -       yes  -90     thrown, lands on the back
    151  THROW_BACK                 36   -       yes  -180    spins and throws behind
    150  THROW_BACK_VICTIM          36   -       yes  -180    thrown, lands on the back
    153  THROW_HIP                  30   -       yes  +86.4   hip toss to the left
    154  THROW_HIP_VICTIM           30   -       yes  +86.4   tossed over the hip
    152  THROW_SPIN_VICTIM          33   -       yes  -269.4  spun round and thrown
    280  HIT_FRONT                  15   -       yes  -       recoils from a blow in front
    281  HIT_BACK                   15   -       yes  -       lurches forward from behind
    282  HIT_HEAVY                  24   -       yes  -       staggers back
    285  KNOCKDOWN                  30   -       yes  -       falls on the back
    196  GROUNDED                   40   -       no   -       lies on the back, breathing (loop)
    200  GET_UP                     30   -       yes  -       rises from the back to the stance

Spec: "Data", "The reference pose", "Bone transforms", "Root motion", "Paired tasks",
"The Anim Range List", "Gait blend", "Playback rate", "When a clip ends".
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import Clip, EventType, author_clip, make_event
from scuffle.anim.data.rangelist import RangeFlags, RangeRecord, author_range
from scuffle.anim.data.resource import load_resource, save_resource
from scuffle.anim.maths.skeleton import HUMANOID, PARENTS, REFERENCE_ROTATIONS
from scuffle.game.fighters.moves import PAIRED_MOVES, THROWS, Move

__all__ = ["demo_set", "demo_resource_bytes", "build_clips", "build_ranges", "MOVE_TABLE",
           "MoveInfo", "moves", "Pose", "solve", "points", "Pairing", "FRONT", "BACK",
           "HOLD_PLACE", "HOLD_BACK_PLACE", "NO_BONE2", "GAIT_SPEEDS", "REFERENCE_BONE2",
           "SOUND_FOOT_LEFT", "SOUND_FOOT_RIGHT", "SOUND_BODY_FALL", "SOUND_SWISH"]

# ---------------------------------------------------------------- constants

NB = 34
REFERENCE_BONE2 = (-0.5, 0.5, -0.5, 0.5)

# Sound ids of the type 11 events (ours): the word at +8, +0xa-+0xb left 0.
SOUND_FOOT_LEFT = 101
SOUND_FOOT_RIGHT = 102
SOUND_BODY_FALL = 110
SOUND_SWISH = 120

# Gait speeds (m/s) and cycle lengths (frames): the descriptor's displacement over the
# duration is the gait's speed (Gait blend; Characters' walk 1.63 m/s over 1.167 s).
GAIT_SPEEDS = {Move.WALK: (1.63, 35), Move.JOG: (3.5, 24), Move.RUN: (5.5, 21), Move.SPRINT: (7.8, 18)}

# Where the partner stands in the attacker's frame (x right, y forward) for the holds:
# the spec's hold 82 (Paired tasks), and ours for the hold from behind.
HOLD_PLACE = (0.380, 1.012)
HOLD_BACK_PLACE = (0.0, 0.45)

# Ids that leave bone 2 out (The reference pose: the grab clips, the grab strikes, the
# let-go clips and the grounded idle).
NO_BONE2 = frozenset([69, 71, 72, 73, 74, 75, 82, 83, 84, 85, 51, 52, 53, 54, 55, 56, 94, 95, 196])

F800 = int(RangeFlags.RATE_800)
F1000 = int(RangeFlags.RATE_1000)


# ---------------------------------------------------------------- quaternions (x, y, z, w tuples)
# Plain floats: the solver works on one pose at a time, where numpy's per-call cost dominates.

def _qmul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def _qconj(q):
    return (-q[0], -q[1], -q[2], q[3])


def _qrot(q, v):
    ux, uy, uz, w = q
    vx, vy, vz = v
    cx = uy * vz - uz * vy + w * vx
    cy = uz * vx - ux * vz + w * vy
    cz = ux * vy - uy * vx + w * vz
    return (vx + 2 * (uy * cz - uz * cy), vy + 2 * (uz * cx - ux * cz), vz + 2 * (ux * cy - uy * cx))


def _unit(v):
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return (v[0] / n, v[1] / n, v[2] / n)


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _scale(a, k):
    return (a[0] * k, a[1] * k, a[2] * k)


def _axis_angle(axis, deg):
    ax = _unit(axis)
    h = math.radians(deg) / 2.0
    s = math.sin(h)
    return (ax[0] * s, ax[1] * s, ax[2] * s, math.cos(h))


def _rx(deg):
    return _axis_angle((1.0, 0.0, 0.0), deg)


def _ry(deg):
    return _axis_angle((0.0, 1.0, 0.0), deg)


def _rz(deg):
    return _axis_angle((0.0, 0.0, 1.0), deg)


_I = (0.0, 0.0, 0.0, 1.0)


def _arc(u, v):
    """The shortest rotation taking unit vector u onto unit vector v."""
    u, v = _unit(u), _unit(v)
    d = _dot(u, v)
    if d > 1 - 1e-12:
        return _I
    if d < -1 + 1e-9:                       # opposite: any perpendicular axis
        perp = _cross(u, (1.0, 0.0, 0.0))
        if _dot(perp, perp) < 1e-12:
            perp = _cross(u, (0.0, 1.0, 0.0))
        return (*_unit(perp), 0.0)
    c = _cross(u, v)
    q = (c[0], c[1], c[2], 1.0 + d)
    n = math.sqrt(sum(x * x for x in q))
    return tuple(x / n for x in q)


# ---------------------------------------------------------------- the rest pose

def _rest():
    ref = REFERENCE_ROTATIONS.astype(np.float64)
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    mpos, mrot = HUMANOID.reference_model_space()
    mrot = np.asarray(mrot, float)
    mrot = mrot / np.linalg.norm(mrot, axis=1, keepdims=True)
    return ([tuple(map(float, q)) for q in ref], [tuple(map(float, v)) for v in mpos],
            [tuple(map(float, q)) for q in mrot])


_REF, _MPOS, _MROT = _rest()
# The rest vector parent -> bone and the drawn tip of each bone, in the model frame.
_OFFV = [(0.0, 0.0, 0.0)] * 2 + [tuple(_MPOS[b][i] - _MPOS[PARENTS[b]][i] for i in range(3))
                                 for b in range(2, NB)]
_TIPV = [_qrot(_MROT[b], (float(HUMANOID.tips[b]), 0.0, 0.0)) for b in range(NB)]

# Limb segments: bone -> the child that gives its direction.
_SEG_CHILD = {17: 18, 18: 19, 23: 24, 24: 25, 28: 29, 29: 30, 31: 32, 32: 33}
_REST_DIR = {b: _unit(tuple(_MPOS[c][i] - _MPOS[b][i] for i in range(3))) for b, c in _SEG_CHILD.items()}
for _b in (30, 33):
    _REST_DIR[_b] = _unit(_qrot(_MROT[_b], (1.0, 0.0, 0.0)))
_L_UPPER = math.dist(_MPOS[18], _MPOS[17])
_L_FORE = math.dist(_MPOS[19], _MPOS[18])
_ARM = {"l": (17, 18, 19), "r": (23, 24, 25)}
_LEG = {"l": (28, 29, 30), "r": (31, 32, 33)}
_SPINE = (3, 4, 5)
_LEFT = frozenset((17, 18, 28, 29, 30))


# ---------------------------------------------------------------- poses

def _side(v, s):
    """(out, fwd, up) -> model (x, y, z): out is -x on the left, +x on the right."""
    o, f, u = v
    return (-o if s == "l" else o, f, u)


@dataclass(frozen=True)
class Pose:
    """Body parameters of one frame (degrees; limb directions as (out, forward, up)).

    ``body``: the whole body's rotation about x, y, z (applied z . y . x), e.g. 90 about
    x lies it on its back. ``lean`` forward, ``side`` to the right, ``twist``
    counter-clockwise seen from above (the right shoulder forward), spread over the
    three spine bones. ``head`` (pitch down, yaw left). Arms: upper arm and forearm
    directions per side, or ``hand_l`` / ``hand_r`` points (x, y, z in the model frame,
    metres) reached by two-bone IK with the elbow toward ``pole``; ``grip_l`` / ``grip_r``
    (0-1) pull a hand onto the partner in a paired clip (``pair_poses``). Legs: thigh and calf
    directions, feet down by default. ``root``: the pelvis offset (x, y, z); its z is
    replaced by the grounding height unless ``ground`` is None; ``ground`` is the
    height the lowest point of the body is put at.
    """

    body: tuple = (0.0, 0.0, 0.0)
    lean: float = 0.0
    side: float = 0.0
    twist: float = 0.0
    head: tuple = (0.0, 0.0)
    arm_l: tuple = ((0.2, 0.0, -1.0), (0.12, 0.2, -1.0))
    arm_r: tuple = ((0.2, 0.0, -1.0), (0.12, 0.2, -1.0))
    hand_l: tuple | None = None
    hand_r: tuple | None = None
    pole: tuple = (0.6, -0.3, -1.0)
    leg_l: tuple = ((0.12, 0.0, -1.0), (0.12, -0.02, -1.0))
    leg_r: tuple = ((0.12, 0.0, -1.0), (0.12, -0.02, -1.0))
    foot_l: tuple = (0.0, 0.0, -1.0)
    foot_r: tuple = (0.0, 0.0, -1.0)
    root: tuple = (0.0, 0.0, 0.0)
    ground: float | None = 0.0
    grip_l: float = 0.0
    grip_r: float = 0.0


def _lerp_tree(a, b, t):
    if a is None or b is None:
        return a if t < 0.5 else b
    if isinstance(a, tuple):
        return tuple(_lerp_tree(x, y, t) for x, y in zip(a, b))
    return a + (b - a) * t


def mix(a: Pose, b: Pose, t: float) -> Pose:
    """Parameter-wise blend of two poses (directions are lerped and renormalised by the solver)."""
    kw = {}
    for name in Pose.__dataclass_fields__:
        kw[name] = _lerp_tree(getattr(a, name), getattr(b, name), t)
    return Pose(**kw)


def _ik(shoulder, target, pole):
    """Two-bone IK: upper arm and forearm directions from the shoulder to reach ``target``."""
    d = tuple(target[i] - shoulder[i] for i in range(3))
    dist = math.sqrt(_dot(d, d))
    u = _scale(d, 1 / dist) if dist > 1e-9 else (0.0, 1.0, 0.0)
    dist = min(max(dist, abs(_L_UPPER - _L_FORE) + 1e-3), _L_UPPER + _L_FORE - 1e-4)
    ca = (_L_UPPER ** 2 + dist ** 2 - _L_FORE ** 2) / (2 * _L_UPPER * dist)
    sa = math.sqrt(max(0.0, 1 - ca * ca))
    w = _add(pole, _scale(u, -_dot(pole, u)))
    w = _unit(w) if _dot(w, w) > 1e-12 else _unit(_cross(u, (1.0, 0.0, 0.0)))
    elbow = _add(shoulder, _scale(_add(_scale(u, ca), _scale(w, sa)), _L_UPPER))
    wrist = _add(shoulder, _scale(u, dist))
    return _unit(_add(elbow, _scale(shoulder, -1))), _unit(_add(wrist, _scale(elbow, -1)))


def _solve_once(p: Pose, pelvis: tuple, use_ik: bool):
    """Deltas D, accumulations A and model positions of a pose for a pelvis position."""
    D = [_I] * NB
    A = [_I] * NB
    pos = [(0.0, 0.0, 0.0)] * NB
    rx, ry, rz = p.body
    body = _qmul(_rz(rz), _qmul(_ry(ry), _rx(rx)))
    ibody = _qconj(body)
    D[1] = A[1] = body
    pos[1] = pelvis
    spine = _qmul(_rz(p.twist / 3), _qmul(_ry(p.side / 3), _rx(-p.lean / 3)))
    head = _qmul(_rz(p.head[1]), _rx(-p.head[0]))
    targets = {}
    for s, (up, fo, _) in _ARM.items():
        arm = p.arm_l if s == "l" else p.arm_r
        targets[up] = _side(arm[0], s)
        targets[fo] = _side(arm[1], s)
    for s, (th, ca, ft) in _LEG.items():
        leg = p.leg_l if s == "l" else p.leg_r
        targets[th] = _side(leg[0], s)
        targets[ca] = _side(leg[1], s)
        targets[ft] = _side(p.foot_l if s == "l" else p.foot_r, s)
    ik = {"l": p.hand_l, "r": p.hand_r} if use_ik else {}
    for b in range(2, NB):
        par = PARENTS[b]
        pos[b] = _add(pos[par], _qrot(A[par], _OFFV[b]))
        if b in _SPINE:
            D[b] = spine
        elif b == 6:
            D[b] = head
        elif b in targets:
            s = "l" if b in _LEFT else "r"
            if b in (17, 23) and ik.get(s) is not None:
                up_dir, fo_dir = _ik(pos[b], ik[s], _qrot(body, _side(p.pole, s)))
                targets[b] = _qrot(ibody, up_dir)
                targets[b + 1] = _qrot(ibody, fo_dir)
            world = _qrot(body, _unit(targets[b]))
            D[b] = _arc(_REST_DIR[b], _qrot(_qconj(A[par]), world))
        A[b] = _qmul(A[par], D[b])
    return D, A, pos


def _lowest(A, pos) -> float:
    """The lowest joint or drawn bone tip of a solved pose."""
    low = math.inf
    for b in range(1, NB):
        z = pos[b][2]
        tz = z + _qrot(A[b], _TIPV[b])[2]
        low = min(low, z, tz)
    return low


def _resolve(p: Pose):
    """D, A, model positions and the pelvis offset of a pose, grounded."""
    bind = float(HUMANOID.bind_height)
    root = [float(v) for v in p.root]
    pelvis = (root[0], root[1], bind + root[2])
    if p.ground is not None:
        _, A, pos = _solve_once(p, pelvis, use_ik=False)
        z = pelvis[2] + p.ground - _lowest(A, pos)
        pelvis = (root[0], root[1], z)
        root[2] = z - bind
    D, A, pos = _solve_once(p, pelvis, use_ik=True)
    return D, A, pos, root


def points(p: Pose) -> list:
    """The model-space joint positions (34 (x, y, z)) of a pose."""
    return _resolve(p)[2]


def solve(p: Pose) -> tuple[np.ndarray, np.ndarray]:
    """A pose -> local rotations (34, 4) (bone 0 identity) and the pelvis offset (3,).

    The offset's z is relative to the bind height (section B); with ``ground`` set it
    puts the lowest joint or bone tip at that height.
    """
    D, _, _, root = _resolve(p)
    local = np.empty((NB, 4))
    local[0] = _I
    local[1] = _qmul(D[1], _REF[1])
    for b in range(2, NB):
        m = _MROT[PARENTS[b]]
        local[b] = _qmul(_qmul(_qmul(_qconj(m), D[b]), m), _REF[b])
    local /= np.linalg.norm(local, axis=1, keepdims=True)
    return local, np.array(root)


# ---------------------------------------------------------------- clip building

def _ease(t):
    return t * t * (3 - 2 * t)


def keyed(keys: Sequence[tuple[int, Pose]], ease: bool = True) -> Callable[[int], Pose]:
    """A pose per frame from (frame, Pose) keys, eased between them."""
    keys = sorted(keys, key=lambda k: k[0])

    def at(f: int) -> Pose:
        if f <= keys[0][0]:
            return keys[0][1]
        for (fa, pa), (fb, pb) in zip(keys, keys[1:]):
            if f <= fb:
                t = (f - fa) / (fb - fa)
                return mix(pa, pb, _ease(t) if ease else t)
        return keys[-1][1]
    return at


@dataclass
class ClipSpec:
    """What one clip is made of before it is authored."""

    name: str
    frames: int
    pose_at: Callable[[int], Pose]
    bone2: bool = True
    velocity: list | None = None
    displacement: tuple | None = None
    turn: list | None = None            # [(frame, degrees per 1/30 s), ...] for bone 0
    events: list = field(default_factory=list)
    step: int = 1                       # key every ``step`` frames (and at F)


def _turn_keys(turn):
    return [(f, _rz(deg)) for f, deg in turn]


def author(spec: ClipSpec) -> Clip:
    """Sample the spec's poses at its key frames and author the clip (anim.data.clip.author_clip)."""
    F = spec.frames
    frames = sorted(set(list(range(0, F, spec.step)) + [F]))
    locals_, roots = [], []
    for f in frames:
        loc, root = solve(spec.pose_at(f))
        locals_.append(loc)
        roots.append(root)
    L = np.array(locals_)
    rotations = {}
    for b in range(1, NB):
        if b == 2:
            if spec.bone2:
                rotations[2] = [(0, REFERENCE_BONE2)]
            continue
        ch = L[:, b]
        ref = np.array(_REF[b])
        dots = np.abs(ch @ ref)
        if b != 1 and np.all(dots > 1 - 1e-9):
            continue                        # the reference pose: no channel
        rotations[b] = [(f, tuple(q)) for f, q in zip(frames, ch)]
    if spec.turn:
        rotations[0] = _turn_keys(spec.turn)
    translation = [(f, tuple(r)) for f, r in zip(frames, roots)]
    return author_clip(spec.name, F, velocity=spec.velocity, translation=translation,
                       rotations=rotations, events=spec.events, displacement=spec.displacement)


# ---------------------------------------------------------------- events

def _sound(frame, sound):
    return make_event(frame, int(EventType.SOUND), word=sound)


def _open(frame):
    return make_event(frame, int(EventType.HELD_OPEN))


def _close(frame):
    return make_event(frame, int(EventType.HELD_CLOSE))


def _effect(frame, code, bone, position=(0.0, 0.0, 0.0)):
    return make_event(frame, int(EventType.NAMED_EFFECT), args=(0, bone), position=position, code=code)


def _place(x, y, facing=180.0):
    """Type 8 at frame 0: the partner's place (x right, y forward) and facing."""
    q = _rz(facing)
    if q[3] < 0:
        q = tuple(-v for v in q)
    return make_event(0, int(EventType.PARTNER_PLACE), position=(x, y, 0.0), rotation=tuple(q[:3]))


def _hit_events(contact, close, code, bone, position):
    return [_open(contact), _effect(contact, code, bone, position), _close(close),
            _sound(max(contact - 3, 1), SOUND_SWISH)]


# ---------------------------------------------------------------- base poses

STAND = Pose()
GUARD = Pose(
    twist=-12.0, lean=6.0, head=(6.0, 8.0),
    arm_l=((0.25, 0.45, -1.0), (-0.35, 0.55, 1.0)),
    arm_r=((0.3, 0.15, -1.0), (-0.4, 0.35, 1.0)),
    leg_l=((0.15, 0.32, -1.0), (0.1, 0.05, -1.0)),
    leg_r=((0.18, -0.22, -1.0), (0.12, -0.4, -1.0)),
)


def _guard_bob(f, period):
    k = 0.5 - 0.5 * math.cos(2 * math.pi * f / period)
    g = GUARD
    return replace(g, leg_l=((0.15, 0.32 + 0.08 * k, -1.0), (0.1, 0.05 - 0.12 * k, -1.0)),
                   leg_r=((0.18, -0.22 + 0.08 * k, -1.0), (0.12, -0.4 - 0.12 * k, -1.0)),
                   lean=6.0 + 2.0 * k)


def _idle(f, period):
    k = math.sin(2 * math.pi * f / period)
    return replace(STAND, lean=1.0 + 1.2 * k, head=(2.0 - 1.0 * k, 0.0),
                   arm_l=((0.2, 0.02 * k, -1.0), (0.12, 0.2 + 0.04 * k, -1.0)),
                   arm_r=((0.2, -0.02 * k, -1.0), (0.12, 0.2 - 0.04 * k, -1.0)))


# ---------------------------------------------------------------- locomotion

@dataclass(frozen=True)
class Gait:
    thigh: float       # thigh swing amplitude (deg)
    knee_swing: float  # knee bend at mid swing (deg)
    knee_stance: float
    arm: float         # arm swing amplitude (deg)
    elbow: float       # elbow bend (deg)
    lean: float
    twist: float


_GAITS = {
    Move.WALK: Gait(26, 55, 8, 22, 18, 3, 6),
    Move.JOG: Gait(34, 85, 14, 32, 75, 8, 9),
    Move.RUN: Gait(42, 100, 18, 42, 85, 13, 12),
    Move.SPRINT: Gait(50, 115, 20, 58, 95, 18, 14),
}


def _leg_dirs(th, knee):
    t, c = math.radians(th), math.radians(th - knee)
    return ((0.1, math.sin(t), -math.cos(t)), (0.08, math.sin(c), -math.cos(c)))


def _arm_dirs(a, elbow):
    t, c = math.radians(a), math.radians(a + elbow)
    return ((0.18, math.sin(t), -math.cos(t)), (0.1, math.sin(c), -math.cos(c)))


def gait_pose(g: Gait, phase: float) -> Pose:
    """A gait at a phase in [0, 1): the left foot strikes at 0.25, the right at 0.75."""
    def leg(ph_strike):
        x = 2 * math.pi * (phase - ph_strike)
        th = g.thigh * math.cos(x)
        # mid swing half a cycle before the next strike's quarter: peak bend at strike - 0.25
        sw = 0.5 + 0.5 * math.cos(2 * math.pi * (phase - ph_strike + 0.25))
        knee = g.knee_stance + (g.knee_swing - g.knee_stance) * sw ** 3
        return _leg_dirs(th, knee)

    def arm(ph_strike):
        a = -g.arm * math.cos(2 * math.pi * (phase - ph_strike))
        return _arm_dirs(a, g.elbow + 0.3 * g.elbow * max(0.0, a) / max(g.arm, 1))

    tw = g.twist * math.cos(2 * math.pi * (phase - 0.25))
    return Pose(lean=g.lean, twist=tw, head=(-g.lean * 0.6, -tw * 0.8),
                leg_l=leg(0.25), leg_r=leg(0.75), arm_l=arm(0.25), arm_r=arm(0.75))


def _gait_spec(move: Move) -> ClipSpec:
    speed, F = GAIT_SPEEDS[move]
    g = _GAITS[move]
    duration = F / 30.0
    events = [_sound(round(0.25 * F), SOUND_FOOT_LEFT), _sound(round(0.75 * F), SOUND_FOOT_RIGHT)]
    return ClipSpec(move.name, F, lambda f: gait_pose(g, (f / F) % 1.0),
                    velocity=[(0, (0.0, speed, 0.0)), (F, (0.0, speed, 0.0))],
                    displacement=(0.0, speed * duration), events=events)


WALK_START_SPEED = 1.048


def _walk_start() -> ClipSpec:
    g = _GAITS[Move.WALK]
    end = gait_pose(g, 0.25)
    mid = replace(mix(STAND, end, 0.5), leg_l=_leg_dirs(12, 50))
    F = 10
    return ClipSpec("WALK_START", F, keyed([(0, STAND), (5, mid), (F, end)]),
                    velocity=[(0, (0.0, 0.0, 0.0)), (1, (0.0, WALK_START_SPEED, 0.0)),
                              (F, (0.0, WALK_START_SPEED, 0.0))],
                    displacement=(0.0, WALK_START_SPEED * F / 30.0),
                    events=[_sound(7, SOUND_FOOT_LEFT)])


def _walk_stop() -> ClipSpec:
    g = _GAITS[Move.WALK]
    start = gait_pose(g, 0.25)
    mid = replace(mix(start, STAND, 0.5), leg_r=_leg_dirs(10, 45))
    F = 12
    vel = [(0, (0.0, 0.0, 0.0)), (1, (0.0, 1.2, 0.0)), (10, (0.0, 0.0, 0.0)), (F, (0.0, 0.0, 0.0))]
    return ClipSpec("WALK_STOP", F, keyed([(0, start), (6, mid), (F, STAND)]), velocity=vel,
                    events=[_sound(8, SOUND_FOOT_RIGHT)])


# ---------------------------------------------------------------- attacks

def _strike(g: Pose, **kw) -> Pose:
    return replace(g, **kw)


_JAB_OUT = _strike(GUARD, twist=-22.0, lean=10.0,
                   arm_l=((0.02, 1.0, 0.12), (0.0, 1.0, 0.06)),
                   leg_l=((0.15, 0.42, -1.0), (0.1, 0.1, -1.0)))
_CROSS_OUT = _strike(GUARD, twist=28.0, lean=12.0, head=(6.0, -10.0),
                     arm_r=((-0.1, 1.0, 0.12), (-0.05, 1.0, 0.06)),
                     leg_r=((0.18, -0.3, -1.0), (0.12, -0.45, -1.0)))
_HOOK_WIND = _strike(GUARD, twist=-15.0, arm_r=((0.8, 0.2, -0.5), (0.2, 0.9, 0.3)))
_HOOK_OUT = _strike(GUARD, twist=38.0, lean=8.0, head=(6.0, -15.0),
                    arm_r=((0.75, 0.75, 0.12), (-0.95, 0.35, 0.06)))
_BODY_OUT = _strike(GUARD, twist=-20.0, lean=18.0, side=-4.0,
                    arm_l=((0.1, 1.0, -0.35), (0.0, 1.0, -0.2)),
                    leg_l=((0.18, 0.45, -1.0), (0.1, 0.0, -1.0)),
                    leg_r=((0.18, -0.3, -1.0), (0.12, -0.5, -1.0)))
_UPPER_WIND = _strike(GUARD, twist=15.0, lean=14.0, side=6.0,
                      arm_r=((0.3, -0.2, -1.0), (0.1, 0.6, -0.3)),
                      leg_l=((0.2, 0.35, -1.0), (0.1, -0.15, -1.0)),
                      leg_r=((0.2, -0.25, -1.0), (0.12, -0.6, -1.0)))
_UPPER_OUT = _strike(GUARD, twist=25.0, lean=0.0, head=(-5.0, -8.0),
                     arm_r=((0.05, 0.6, -0.4), (-0.05, 0.35, 1.0)))
_HAY_WIND = _strike(GUARD, twist=-35.0, lean=2.0, side=-6.0,
                    arm_r=((0.7, -0.6, -0.2), (0.3, 0.2, 0.5)))
_HAY_OUT = _strike(GUARD, twist=40.0, lean=20.0, head=(4.0, -18.0), root=(0.0, 0.25, 0.0),
                   arm_r=((-0.05, 1.0, 0.05), (-0.1, 1.0, 0.0)),
                   leg_l=((0.15, 0.6, -1.0), (0.1, 0.15, -1.0)),
                   leg_r=((0.18, -0.45, -1.0), (0.12, -0.6, -1.0)))
_KICK_CHAMBER = _strike(GUARD, lean=-6.0, twist=-5.0,
                        leg_r=((0.05, 1.0, 0.05), (0.02, -0.5, -1.0)),
                        leg_l=((0.12, 0.05, -1.0), (0.12, -0.05, -1.0)))
_KICK_OUT = _strike(GUARD, lean=-14.0, twist=-8.0, head=(14.0, 0.0),
                    arm_l=((0.4, 0.35, -1.0), (-0.3, 0.6, 1.0)),
                    arm_r=((0.6, -0.3, -1.0), (0.2, 0.3, -0.1)),
                    leg_r=((0.03, 1.0, 0.12), (0.02, 1.0, 0.15)),
                    leg_l=((0.12, -0.05, -1.0), (0.12, -0.1, -1.0)),
                    foot_r=(0.0, 1.0, 0.3))


@dataclass
class MoveInfo:
    """One move of the set: its clip spec and its Anim Range List record."""

    move: int
    spec: ClipSpec
    record: RangeRecord


def _hit(direction=0, height=0, strength=0):
    """The hit code: bits 0-1 direction (0 front, 1 left, 2 right, 3 back), 2-3 height
    (0 high, 1 middle, 2 low), 4-5 strength (0 light, 1 medium, 2 heavy)."""
    return direction | height << 2 | strength << 4


def _attack(name, F, contact, close, keys, bone, reach, damage, hit, code="pch", extra=()):
    pos_at = keyed(keys)
    hand = _hand_point(pos_at(contact), bone)
    spec = ClipSpec(name, F, pos_at, events=_hit_events(contact, close, code, bone, hand) + list(extra))
    rec = author_range((0.0, 1.0), reach, damage=damage, hit=hit, flags=F800)
    return spec, rec


def _hand_point(p: Pose, bone: int):
    """Where a bone's joint is in the model frame (an effect event's position)."""
    return tuple(points(p)[bone])


def _attacks() -> list[MoveInfo]:
    out = []

    def add(move, F, contact, close, keys, bone, reach, damage, hit, code="pch"):
        spec, rec = _attack(move.name, F, contact, close, keys, bone, reach, damage, hit, code)
        out.append(MoveInfo(move, spec, rec))

    add(Move.JAB, 24, 7, 10, [(0, GUARD), (4, mix(GUARD, _JAB_OUT, 0.4)), (7, _JAB_OUT), (10, _JAB_OUT),
                               (17, GUARD), (24, GUARD)], 19, 1.0, 5, _hit(0, 0, 0))
    add(Move.CROSS, 24, 8, 11, [(0, GUARD), (4, mix(GUARD, _CROSS_OUT, 0.35)), (8, _CROSS_OUT),
                                 (11, _CROSS_OUT), (18, GUARD), (24, GUARD)], 25, 1.05, 8, _hit(0, 0, 1))
    add(Move.HOOK, 16, 7, 10, [(0, GUARD), (3, _HOOK_WIND), (7, _HOOK_OUT), (10, _HOOK_OUT), (16, GUARD)],
        25, 0.9, 9, _hit(2, 0, 1))
    add(Move.COMBO, 21, 8, 11, [(0, GUARD), (4, mix(GUARD, _BODY_OUT, 0.4)), (8, _BODY_OUT),
                                 (11, _BODY_OUT), (17, GUARD), (21, GUARD)], 19, 1.0, 7, _hit(0, 1, 1))
    add(Move.COMBO_HOLD, 26, 10, 13, [(0, GUARD), (6, _UPPER_WIND), (10, _UPPER_OUT), (13, _UPPER_OUT),
                                       (21, GUARD), (26, GUARD)], 25, 0.95, 10, _hit(0, 0, 1))
    add(Move.FINISHER, 27, 11, 14, [(0, GUARD), (6, _HAY_WIND), (11, _HAY_OUT), (14, _HAY_OUT),
                                     (22, GUARD), (27, GUARD)], 25, 1.2, 14, _hit(0, 0, 2), "bld")
    add(Move.KICK, 16, 7, 10, [(0, GUARD), (3, _KICK_CHAMBER), (7, _KICK_OUT), (9, _KICK_OUT),
                                (12, _KICK_CHAMBER), (16, GUARD)], 33, 1.3, 12, _hit(0, 1, 2))
    end = ClipSpec("ATTACK_END", 19, keyed([(0, GUARD), (19, STAND)]))
    out.append(MoveInfo(Move.ATTACK_END, end, author_range((0.0, 1.0), 0.0)))
    return out


# ---------------------------------------------------------------- pairs

@dataclass(frozen=True)
class Pairing:
    """Where the partner stands in the attacker's frame and which way it faces
    (degrees counter-clockwise from the attacker's facing), and how they hold on:
    "front" (face to face: hands on the neck and the upper arm, the partner's on the
    forearms) or "back" (arms round the partner's chest)."""

    place: tuple
    face: float
    kind: str

    def to_attacker(self, v):
        c, s = math.cos(math.radians(self.face)), math.sin(math.radians(self.face))
        return (self.place[0] + v[0] * c - v[1] * s, self.place[1] + v[0] * s + v[1] * c, v[2])

    def to_victim(self, a):
        x, y = a[0] - self.place[0], a[1] - self.place[1]
        c, s = math.cos(math.radians(-self.face)), math.sin(math.radians(-self.face))
        return (x * c - y * s, x * s + y * c, a[2])


def _lerp3(a, b, t):
    return tuple(a[i] + (b[i] - a[i]) * t for i in range(3))


def _free(p: Pose) -> Pose:
    return replace(p, hand_l=None, hand_r=None, grip_l=0.0, grip_r=0.0)


def _grip_points(pairing: Pairing, vpts) -> dict:
    """Where the attacker's hands hold the partner (attacker frame), from the partner's joints."""
    if pairing.kind == "front":
        neck = _lerp3(vpts[5], vpts[6], 0.8)
        arm = _lerp3(vpts[17], vpts[18], 0.35)
        return {"l": pairing.to_attacker(neck), "r": pairing.to_attacker(arm)}
    chest = vpts[5]
    return {"l": pairing.to_attacker((chest[0] - 0.07, chest[1] + 0.13, chest[2] - 0.06)),
            "r": pairing.to_attacker((chest[0] + 0.07, chest[1] + 0.14, chest[2] - 0.04))}


def _partner_grip_points(pairing: Pairing, apts) -> dict:
    """Where the partner's hands hold the attacker's forearms (partner frame)."""
    left_fore = _lerp3(apts[18], apts[19], 0.5)
    right_fore = _lerp3(apts[24], apts[25], 0.5)
    if pairing.kind == "front":
        return {"l": pairing.to_victim(right_fore), "r": pairing.to_victim(left_fore)}
    return {"l": pairing.to_victim(left_fore), "r": pairing.to_victim(right_fore)}


def _with_grips(p: Pose, targets: dict) -> Pose:
    if p.grip_l <= 0.0 and p.grip_r <= 0.0:
        return p
    free = points(_free(p))
    hands = {}
    for s, w, explicit, wrist in (("l", p.grip_l, p.hand_l, 19), ("r", p.grip_r, p.hand_r, 25)):
        if w <= 0.0:
            hands[s] = explicit
        else:
            base = explicit if explicit is not None else free[wrist]
            hands[s] = _lerp3(base, targets[s], min(w, 1.0))
    return replace(p, hand_l=hands["l"], hand_r=hands["r"])


def pair_poses(att: Pose, vic: Pose, pairing: Pairing) -> tuple[Pose, Pose]:
    """Resolve the grips of one frame of a pair: the attacker's hands go to the partner's
    body (by grip weight), then the partner's hands to the attacker's forearms."""
    vbody = points(_free(vic))
    a = _with_grips(att, _grip_points(pairing, vbody))
    v = _with_grips(vic, _partner_grip_points(pairing, points(a)))
    return a, v


def paired(att_at: Callable[[int], Pose], vic_at: Callable[[int], Pose],
           pairing: Pairing) -> tuple[Callable[[int], Pose], Callable[[int], Pose]]:
    """Per-frame pose functions of an attacker clip and its partner's, gripping each other."""
    cache: dict[int, tuple[Pose, Pose]] = {}

    def get(f):
        if f not in cache:
            cache[f] = pair_poses(att_at(f), vic_at(f), pairing)
        return cache[f]
    return (lambda f: get(f)[0]), (lambda f: get(f)[1])


FRONT = Pairing(HOLD_PLACE, 180.0, "front")
BACK = Pairing(HOLD_BACK_PLACE, 0.0, "back")


def _paired_record(place, flags=0, damage=0, hit=10):
    """The attacker's record: the partner's place as a unit direction and a reach."""
    x, y = place
    d = math.hypot(x, y)
    # Thousandths cut toward zero, as the spec's hold 82 reads: (0.380, 1.012) -> (351, 936) x 1.081.
    direction = (math.trunc(x / d * 1000) / 1000, math.trunc(y / d * 1000) / 1000)
    return author_range(direction, round(d, 3), damage=damage, hit=hit, flags=flags)


def _victim_record(flags=0):
    """The partner clip's record: no range data, the attacker's rate flag."""
    return author_range((0.0, 1.0), 0.0, flags=flags)


def _pair(att_move, vic_move, F, att_at, vic_at, pairing=FRONT, *, flags=0, damage=0, hit=10,
          att_events=(), vic_events=(), bone2=False, step=1, att_kw=None, vic_kw=None) -> list[MoveInfo]:
    """The two MoveInfos of a paired move (the attacker's with the type 8 place at frame 0)."""
    a_at, v_at = paired(att_at, vic_at, pairing)
    place = make_place(pairing)
    a = ClipSpec(Move(att_move).name, F, a_at, bone2=bone2, step=step, events=[place, *att_events],
                 **(att_kw or {}))
    v = ClipSpec(Move(vic_move).name, F, v_at, bone2=bone2, step=step, events=list(vic_events),
                 **(vic_kw or {}))
    return [MoveInfo(att_move, a, _paired_record(pairing.place, flags, damage, hit)),
            MoveInfo(vic_move, v, _victim_record(flags))]


def make_place(pairing: Pairing):
    return _place(pairing.place[0], pairing.place[1], pairing.face)


# ---------------------------------------------------------------- grabs and holds

def _reach_pose(frac):
    """Both arms reaching forward (frac 0 guard .. 1 full reach)."""
    out = replace(GUARD, twist=0.0, lean=16.0, head=(4.0, 0.0),
                  arm_l=((0.05, 1.0, 0.05), (0.15, 1.0, 0.05)),
                  arm_r=((0.05, 1.0, 0.05), (0.15, 1.0, 0.05)),
                  leg_l=((0.15, 0.45, -1.0), (0.1, 0.0, -1.0)),
                  leg_r=((0.18, -0.3, -1.0), (0.12, -0.55, -1.0)))
    return mix(GUARD, out, frac)


# The attacker holding the partner in front (hands on the neck and the upper arm),
# stepped in and leaning toward the partner's place.
HOLDER = Pose(lean=24.0, twist=-10.0, head=(14.0, -4.0), root=(0.05, 0.12, 0.0),
              arm_l=((0.05, 1.0, 0.0), (0.1, 1.0, 0.1)), arm_r=((0.05, 1.0, 0.0), (0.1, 1.0, 0.1)),
              pole=(0.8, -0.3, -0.6), grip_l=1.0, grip_r=1.0,
              leg_l=((0.15, 0.4, -1.0), (0.1, 0.05, -1.0)),
              leg_r=((0.2, -0.3, -1.0), (0.12, -0.5, -1.0)))
# The partner held from the front: hunched toward the attacker, hands on its forearms.
HELD = Pose(lean=26.0, head=(20.0, 0.0), root=(0.0, 0.1, 0.0),
            arm_l=((0.35, 0.7, -0.6), (-0.3, 0.9, 0.2)), arm_r=((0.35, 0.7, -0.6), (-0.3, 0.9, 0.2)),
            pole=(0.8, -0.3, -0.6), grip_l=1.0, grip_r=1.0,
            leg_l=((0.15, 0.2, -1.0), (0.1, -0.1, -1.0)),
            leg_r=((0.18, -0.25, -1.0), (0.12, -0.45, -1.0)))
# The hold from behind: arms round the partner's chest; the partner leans back, arms pinned.
HOLDER_BACK = Pose(lean=10.0, head=(5.0, 0.0), pole=(1.0, 0.0, -0.4), grip_l=1.0, grip_r=1.0,
                   leg_l=((0.18, 0.2, -1.0), (0.12, -0.05, -1.0)),
                   leg_r=((0.18, -0.2, -1.0), (0.12, -0.4, -1.0)))
HELD_BACK = Pose(lean=-6.0, head=(-8.0, 0.0), pole=(1.0, -0.2, -0.5), grip_l=1.0, grip_r=1.0,
                 arm_l=((0.25, -0.05, -1.0), (0.3, 0.7, -0.5)), arm_r=((0.25, -0.05, -1.0), (0.3, 0.7, -0.5)),
                 leg_l=((0.15, 0.2, -1.0), (0.12, 0.1, -1.0)),
                 leg_r=((0.15, 0.05, -1.0), (0.12, 0.0, -1.0)))


def _wave(f, period, phase=0.0):
    return math.sin(2 * math.pi * (f / period + phase))


def _grabs() -> list[MoveInfo]:
    out = []
    # 70: the grab attempt, both arms reaching forward (window 0x2c .. 0x2d).
    keys = [(0, GUARD), (5, _reach_pose(0.7)), (8, _reach_pose(1.0)), (11, _reach_pose(1.0)), (18, GUARD)]
    out.append(MoveInfo(Move.GRAB_ATTEMPT,
                        ClipSpec("GRAB_ATTEMPT", 18, keyed(keys),
                                 events=[_open(6), _close(11), _sound(4, SOUND_SWISH)]),
                        author_range((0.0, 1.0), 1.0, flags=F800)))
    # 69 / 71: connecting: from the reach into the hold.
    reach = replace(_reach_pose(1.0), pole=HOLDER.pole)
    att = keyed([(0, reach), (6, replace(HOLDER, lean=28.0)), (12, HOLDER)])
    vic = keyed([(0, GUARD), (4, replace(HELD, lean=34.0, head=(28.0, 0.0), grip_l=0.2, grip_r=0.2)),
                 (12, HELD)])
    out += _pair(Move.GRAB_CONNECT, Move.GRAB_CONNECT_VICTIM, 12, att, vic,
                 att_events=[_effect(5, "dus", 33)])
    # 82 / 83: the front hold (loops).
    out += _pair(Move.HOLD, Move.HOLD_VICTIM, 40,
                 lambda f: replace(HOLDER, lean=24.0 + 1.5 * _wave(f, 40)),
                 lambda f: replace(HELD, lean=26.0 - 2.0 * _wave(f, 40), head=(20.0 + 3 * _wave(f, 40),
                                                                                4 * _wave(f, 40))),
                 step=2)
    # 84 / 85: the hold from behind (loops).
    out += _pair(Move.HOLD_BACK, Move.HOLD_BACK_VICTIM, 40,
                 lambda f: replace(HOLDER_BACK, lean=10.0 + 2 * _wave(f, 40)),
                 lambda f: replace(HELD_BACK, side=4.0 * _wave(f, 40), head=(-8.0, 10 * _wave(f, 40))),
                 BACK, step=2)
    # 72 / 73: struggle: the holder shakes the partner, who pushes against the arms.
    out += _pair(Move.GRAB_HOLD_STRUGGLE, Move.GRAB_HOLD_STRUGGLE_VICTIM, 30,
                 lambda f: replace(HOLDER, lean=24.0 + 3 * _wave(f, 10), side=4 * _wave(f, 10),
                                   root=(0.05, 0.12 + 0.04 * _wave(f, 10), 0.0)),
                 lambda f: replace(HELD, lean=28.0 - 5 * _wave(f, 10), side=-7 * _wave(f, 10),
                                   head=(16.0, 14 * _wave(f, 10)), root=(0.0, 0.1 - 0.05 * _wave(f, 10), 0.0)))
    # 74 / 75: the yank: the holder hauls the partner to one side, then the other.
    out += _pair(Move.GRAB_TURN, Move.GRAB_TURN_VICTIM, 18,
                 lambda f: replace(HOLDER, twist=-10.0 + 22 * _wave(f, 18), side=-6 * _wave(f, 18)),
                 lambda f: replace(HELD, side=14 * _wave(f, 18), twist=-12 * _wave(f, 18), lean=30.0,
                                   head=(24.0, -12 * _wave(f, 18)),
                                   root=(0.12 * _wave(f, 18), 0.1, 0.0)))
    # 94 / 95: let go: the holder shoves the partner away; the partner staggers back.
    shove = replace(HOLDER, lean=12.0, grip_l=0.0, grip_r=0.0, root=(0.05, 0.2, 0.0),
                    arm_l=((0.1, 1.0, -0.1), (0.1, 1.0, 0.2)), arm_r=((0.1, 1.0, -0.1), (0.1, 1.0, 0.2)),
                    leg_l=((0.15, 0.5, -1.0), (0.1, 0.15, -1.0)))
    stagger = replace(HELD, lean=-10.0, head=(-12.0, 0.0), grip_l=0.0, grip_r=0.0, root=(0.0, 0.0, 0.0),
                      arm_l=((0.8, 0.2, -0.5), (0.6, 0.4, -0.1)), arm_r=((0.8, 0.2, -0.5), (0.6, 0.4, -0.1)),
                      leg_l=((0.15, 0.25, -1.0), (0.1, 0.1, -1.0)),
                      leg_r=((0.18, -0.4, -1.0), (0.12, -0.45, -1.0)))
    out += _pair(Move.LET_GO, Move.LET_GO_VICTIM, 15,
                 keyed([(0, HOLDER), (5, shove), (15, GUARD)]),
                 keyed([(0, HELD), (5, stagger), (15, GUARD)]),
                 vic_events=[_sound(9, SOUND_FOOT_RIGHT)],
                 vic_kw=dict(velocity=[(0, (0.0, 0.0, 0.0)), (1, (0.0, -1.5, 0.0)), (9, (0.0, 0.0, 0.0)),
                                       (15, (0.0, 0.0, 0.0))]))
    return out


def _grab_strikes() -> list[MoveInfo]:
    out = []
    # 51 / 52: knee to the body; the partner doubles over.
    knee_up = replace(HOLDER, lean=28.0, root=(0.05, 0.2, 0.0),
                      leg_r=((0.05, 1.0, 0.45), (0.02, -0.1, -1.0)),
                      leg_l=((0.15, 0.15, -1.0), (0.12, -0.05, -1.0)))
    folded = replace(HELD, lean=48.0, head=(30.0, 0.0), grip_l=0.6, grip_r=0.6,
                     leg_l=((0.15, 0.05, -1.0), (0.1, -0.5, -1.0)), leg_r=((0.18, -0.3, -1.0), (0.12, -0.7, -1.0)))
    knee_pt = tuple(points(_free(knee_up))[32])
    out += _pair(Move.GRAB_KNEE, Move.GRAB_KNEE_VICTIM, 21,
                 keyed([(0, HOLDER), (7, knee_up), (10, knee_up), (21, HOLDER)]),
                 keyed([(0, HELD), (7, HELD), (10, folded), (21, HELD)]),
                 flags=F800, damage=6, hit=_hit(0, 1, 1), att_events=_hit_events(7, 10, "pch", 32, knee_pt))
    # 53 / 54: a short right punch from the hold (the left hand keeps the grip).
    cock = replace(HOLDER, twist=-22.0, lean=18.0, grip_r=0.0, arm_r=((0.6, -0.5, -0.6), (0.0, 0.6, 0.8)))
    punch = replace(HOLDER, twist=14.0, lean=26.0, grip_r=0.0, arm_r=((0.25, 1.0, 0.25), (0.15, 1.0, 0.3)))
    snapped = replace(HELD, lean=2.0, head=(-35.0, 20.0), side=-6.0, root=(0.0, 0.0, 0.0))
    punch_pt = tuple(points(_free(punch))[25])
    out += _pair(Move.GRAB_PUNCH, Move.GRAB_PUNCH_VICTIM, 18,
                 keyed([(0, HOLDER), (4, cock), (7, punch), (9, punch), (18, HOLDER)]),
                 keyed([(0, HELD), (7, HELD), (9, snapped), (18, HELD)]),
                 flags=F800, damage=5, hit=_hit(0, 0, 0), att_events=_hit_events(7, 10, "pch", 25, punch_pt))
    # 55 / 56: headbutt: lean back, then drive the head forward.
    back = replace(HOLDER, lean=-4.0, head=(-15.0, 0.0), root=(0.03, 0.05, 0.0))
    butt = replace(HOLDER, lean=38.0, head=(24.0, 0.0), root=(0.06, 0.18, 0.0))
    rocked = replace(HELD, lean=-14.0, head=(-40.0, 0.0), grip_l=0.3, grip_r=0.3, root=(0.0, -0.05, 0.0))
    head_pt = tuple(points(_free(butt))[6])
    out += _pair(Move.GRAB_HEADBUTT, Move.GRAB_HEADBUTT_VICTIM, 24,
                 keyed([(0, HOLDER), (7, back), (11, butt), (13, butt), (24, HOLDER)]),
                 keyed([(0, HELD), (11, HELD), (14, rocked), (24, HELD)]),
                 flags=F800, damage=9, hit=_hit(0, 0, 2), att_events=_hit_events(11, 14, "bld", 6, head_pt))
    return out


# ---------------------------------------------------------------- throws

def _turn_stretch(start: int, frames: int, total_deg: float) -> list:
    """Bone 0 keys: no turn, then total / frames per frame from ``start`` for ``frames``
    frames (both multiples of 3), then no turn again."""
    if start % 3 or frames % 3:
        raise ValueError("a turning stretch starts on, and lasts, a multiple of 3 frames")
    per = total_deg / frames
    return [(0, 0.0), (start, per), (start + frames, 0.0)]


LYING = Pose(body=(90.0, 0.0, 0.0), head=(-10.0, 0.0),
             arm_l=((0.7, 0.1, -0.5), (0.6, 0.5, -0.2)), arm_r=((0.7, 0.1, -0.5), (0.6, 0.5, -0.2)),
             leg_l=((0.2, 0.0, -1.0), (0.18, -0.1, -1.0)), leg_r=((0.15, 0.35, -1.0), (0.15, -0.3, -1.0)),
             foot_l=(0.0, 1.0, -0.3), foot_r=(0.0, 0.6, -1.0), ground=0.12)


def _airborne(body, dy):
    return replace(HELD, body=body, lean=10.0, ground=None, root=(0.0, dy, 0.2), grip_l=0.0, grip_r=0.0,
                   arm_l=((0.8, 0.3, 0.4), (0.6, 0.2, 0.8)), arm_r=((0.8, 0.3, 0.4), (0.6, 0.2, 0.8)),
                   leg_l=((0.3, 0.5, -1.0), (0.2, 0.0, -1.0)), leg_r=((0.3, 0.9, -0.6), (0.2, 0.6, -1.0)))


def _throw(att_move, vic_move, F, turn_start, turn_frames, angle, *, heave_twist, release_arms, land,
           fly_body, damage, hit, dy=-0.6, heave_kw=None) -> list[MoveInfo]:
    """A throw: hold, heave (turning through bone 0 at the stretch), release; the partner is
    lifted, flung and lands on the back. Both clips turn by ``angle``."""
    end_turn = turn_start + turn_frames
    heave_args = dict(lean=8.0, twist=heave_twist, root=(0.03, 0.05, 0.0),
                      leg_l=((0.28, 0.25, -1.0), (0.15, -0.25, -1.0)),
                      leg_r=((0.28, -0.25, -1.0), (0.15, -0.55, -1.0)))
    heave_args.update(heave_kw or {})
    heave = replace(HOLDER, **heave_args)
    swing = replace(heave, grip_l=0.4, grip_r=0.4, twist=heave_twist * 1.5,
                    arm_l=release_arms[0], arm_r=release_arms[1])
    release = replace(GUARD, lean=16.0, twist=-heave_twist * 0.4, arm_l=release_arms[0], arm_r=release_arms[1])
    att = keyed([(0, HOLDER), (turn_start, heave), (end_turn - 2, swing), (end_turn + 3, release), (F, GUARD)])
    lifted = replace(HELD, lean=14.0, body=(15.0, 0.0, 0.0), root=(0.0, 0.05, 0.05), ground=None)
    lying = replace(LYING, root=(0.0, dy, 0.0))
    vic = keyed([(0, HELD), (turn_start, lifted), (land - 7, _airborne(fly_body, dy * 0.4)), (land, lying),
                 (F, lying)])
    turn = _turn_stretch(turn_start, turn_frames, angle)
    return _pair(att_move, vic_move, F, att, vic, damage=damage, hit=hit, bone2=True,
                 att_events=[_sound(end_turn, SOUND_SWISH)],
                 vic_events=[_sound(land, SOUND_BODY_FALL), _effect(land, "dus", 1)],
                 att_kw=dict(turn=turn), vic_kw=dict(turn=turn))


def _throws() -> list[MoveInfo]:
    out = []
    # 149 / 148: side throw, -90 degrees (clockwise: the partner goes round to the right).
    out += _throw(Move.THROW_SIDE, Move.THROW_SIDE_VICTIM, 30, 9, 12, THROWS[Move.THROW_SIDE][1], heave_twist=-25.0,
                  release_arms=(((0.2, 1.0, -0.2), (0.2, 1.0, 0.0)), ((0.9, 0.6, -0.2), (0.8, 0.7, 0.0))),
                  land=24, fly_body=(40.0, -30.0, 0.0), damage=10, hit=_hit(2, 1, 2))
    # 151 / 150: back throw, -180 degrees.
    out += _throw(Move.THROW_BACK, Move.THROW_BACK_VICTIM, 36, 9, 18, THROWS[Move.THROW_BACK][1], heave_twist=-35.0,
                  release_arms=(((0.3, 1.0, -0.1), (0.2, 1.0, 0.1)), ((0.5, 0.9, -0.1), (0.3, 1.0, 0.1))),
                  land=30, fly_body=(60.0, 0.0, 0.0), damage=12, hit=_hit(3, 1, 2), dy=-0.8)
    # 153 / 154: hip toss, +86.4 degrees (counter-clockwise).
    out += _throw(Move.THROW_HIP, Move.THROW_HIP_VICTIM, 30, 9, 12, THROWS[Move.THROW_HIP][1], heave_twist=30.0,
                  release_arms=(((0.9, 0.4, -0.6), (0.7, 0.6, -0.5)), ((-0.3, 0.9, -0.5), (-0.5, 0.8, -0.6))),
                  land=25, fly_body=(100.0, 20.0, 0.0), damage=11, hit=_hit(1, 1, 2),
                  heave_kw=dict(leg_l=((0.3, 0.2, -1.0), (0.15, -0.4, -1.0)),
                                leg_r=((0.3, 0.0, -1.0), (0.15, -0.45, -1.0))))
    # 152: spun round three quarters and thrown (the spec's -269.4 degrees).
    lifted = replace(HELD, lean=14.0, body=(15.0, 0.0, 0.0), root=(0.0, 0.05, 0.05), ground=None, grip_l=0.5,
                     grip_r=0.5)
    spin = ClipSpec("THROW_SPIN_VICTIM", 33,
                    keyed([(0, _free(HELD)), (6, _free(lifted)), (20, _airborne((50.0, -20.0, 0.0), -0.25)),
                           (27, replace(LYING, root=(0.0, -0.6, 0.0))), (33, replace(LYING, root=(0.0, -0.6, 0.0)))]),
                    turn=_turn_stretch(6, 18, -269.4),
                    events=[_sound(27, SOUND_BODY_FALL), _effect(27, "dus", 1)])
    out.append(MoveInfo(Move.THROW_SPIN_VICTIM, spin, _victim_record()))
    return out


# ---------------------------------------------------------------- reactions

def _reactions() -> list[MoveInfo]:
    out = []
    recoil = replace(GUARD, lean=-14.0, head=(-25.0, 10.0), twist=8.0,
                     arm_l=((0.5, 0.2, -0.8), (0.2, 0.5, 0.6)), arm_r=((0.5, 0.1, -0.8), (0.3, 0.4, 0.4)),
                     leg_l=((0.15, 0.15, -1.0), (0.1, 0.0, -1.0)), leg_r=((0.18, -0.35, -1.0), (0.12, -0.5, -1.0)))
    lurch = replace(GUARD, lean=28.0, head=(20.0, 0.0), twist=-5.0,
                    arm_l=((0.5, -0.4, -0.8), (0.4, 0.2, -0.8)), arm_r=((0.5, -0.4, -0.8), (0.4, 0.2, -0.8)),
                    leg_l=((0.15, 0.45, -1.0), (0.1, 0.1, -1.0)))
    stagger = replace(recoil, lean=-22.0, head=(-35.0, 15.0), side=-8.0,
                      arm_l=((0.9, 0.1, -0.2), (0.7, 0.4, 0.3)), arm_r=((0.9, 0.0, -0.1), (0.8, 0.3, 0.2)),
                      leg_l=((0.2, 0.3, -1.0), (0.1, 0.15, -1.0)), leg_r=((0.25, -0.45, -1.0), (0.12, -0.6, -1.0)))

    def back_vel(speed, until):
        return [(0, (0.0, 0.0, 0.0)), (1, (0.0, speed, 0.0)), (until, (0.0, 0.0, 0.0))]
    snap = replace(recoil, lean=-24.0, head=(-38.0, 14.0), twist=14.0, side=-5.0,
                   arm_l=((0.8, 0.1, -0.5), (0.5, 0.5, 0.4)), arm_r=((0.7, 0.0, -0.6), (0.6, 0.4, 0.3)))
    out.append(MoveInfo(Move.HIT_FRONT,
                        ClipSpec("HIT_FRONT", 15, keyed([(0, GUARD), (3, snap), (7, recoil), (15, GUARD)]),
                                 velocity=back_vel(-0.9, 8)), author_range((0.0, 1.0), 0.0)))
    out.append(MoveInfo(Move.HIT_BACK,
                        ClipSpec("HIT_BACK", 15, keyed([(0, GUARD), (3, lurch), (15, GUARD)]),
                                 velocity=back_vel(0.9, 8)), author_range((0.0, 1.0), 0.0)))
    out.append(MoveInfo(Move.HIT_HEAVY,
                        ClipSpec("HIT_HEAVY", 24, keyed([(0, GUARD), (4, stagger), (12, recoil), (24, GUARD)]),
                                 velocity=back_vel(-1.6, 14), events=[_sound(14, SOUND_FOOT_RIGHT)]),
                        author_range((0.0, 1.0), 0.0)))
    # 285: knockdown: reels back and falls on the back; the root carries the body back.
    reel = replace(stagger, ground=0.0)
    falling = Pose(body=(45.0, 0.0, 0.0), lean=10.0, head=(25.0, 0.0),
                   arm_l=((0.9, 0.3, 0.3), (0.6, 0.5, 0.6)), arm_r=((0.9, 0.3, 0.3), (0.6, 0.5, 0.6)),
                   leg_l=((0.2, 0.9, -0.8), (0.15, 0.3, -1.0)), leg_r=((0.2, 0.5, -1.0), (0.15, 0.0, -1.0)),
                   ground=0.0)
    bounce = replace(LYING, head=(15.0, 0.0), leg_l=((0.2, 0.7, -1.0), (0.15, 0.4, -1.0)))
    out.append(MoveInfo(Move.KNOCKDOWN,
                        ClipSpec("KNOCKDOWN", 30, keyed([(0, GUARD), (4, reel), (11, falling), (17, LYING),
                                                         (21, bounce), (30, LYING)]),
                                 velocity=[(0, (0.0, 0.0, 0.0)), (1, (0.0, -1.5, 0.0)), (17, (0.0, -0.4, 0.0)),
                                           (19, (0.0, 0.0, 0.0))],
                                 events=[_sound(17, SOUND_BODY_FALL), _effect(17, "dus", 1)]),
                        author_range((0.0, 1.0), 0.0)))

    # 196: lying on the back, breathing (loop, no bone 2).
    def lying_at(f):
        k = math.sin(2 * math.pi * f / 40)
        return replace(LYING, lean=1.5 * k, head=(-10.0 + 4 * k, 6 * k))
    out.append(MoveInfo(Move.GROUNDED, ClipSpec("GROUNDED", 40, lying_at, bone2=False, step=2),
                        author_range((0.0, 1.0), 0.0)))
    # 200: get up: sit up, tuck the legs, stand.
    sit = Pose(body=(30.0, 0.0, 0.0), lean=35.0, head=(10.0, 0.0),
               arm_l=((0.5, -0.6, -1.0), (0.3, -0.2, -1.0)), arm_r=((0.5, -0.6, -1.0), (0.3, -0.2, -1.0)),
               leg_l=((0.2, 0.9, 0.2), (0.15, 0.2, -1.0)), leg_r=((0.2, 0.95, -0.1), (0.15, 0.4, -1.0)),
               foot_l=(0.0, 0.3, -1.0), foot_r=(0.0, 0.3, -1.0), ground=0.05)
    crouch = Pose(lean=40.0, head=(-15.0, 0.0),
                  arm_l=((0.3, 0.5, -1.0), (0.2, 0.4, -1.0)), arm_r=((0.3, 0.5, -1.0), (0.2, 0.4, -1.0)),
                  leg_l=((0.2, 1.0, -0.3), (0.15, -0.6, -1.0)), leg_r=((0.2, 0.6, -1.0), (0.15, -1.0, -0.3)))
    out.append(MoveInfo(Move.GET_UP,
                        ClipSpec("GET_UP", 30, keyed([(0, LYING), (8, sit), (17, crouch), (30, GUARD)]),
                                 events=[_sound(20, SOUND_FOOT_RIGHT)]),
                        author_range((0.0, 1.0), 0.0)))
    return out


# ---------------------------------------------------------------- the set

def _idles_and_locomotion() -> list[MoveInfo]:
    out = [
        MoveInfo(Move.IDLE, ClipSpec("IDLE", 60, lambda f: _idle(f, 60), step=2), author_range((0.0, 1.0), 0.0)),
        MoveInfo(Move.FIGHT_IDLE, ClipSpec("FIGHT_IDLE", 40, lambda f: _guard_bob(f, 40), step=2),
                 author_range((0.0, 1.0), 0.0)),
    ]
    for m in (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT):
        out.append(MoveInfo(m, _gait_spec(m), author_range((0.0, 1.0), 0.0, flags=F1000)))
    out.append(MoveInfo(Move.WALK_START, _walk_start(), author_range((0.0, 1.0), 0.0)))
    out.append(MoveInfo(Move.WALK_STOP, _walk_stop(), author_range((0.0, 1.0), 0.0)))
    return out


@functools.lru_cache(maxsize=1)
def _moves() -> tuple[MoveInfo, ...]:
    moves = (_idles_and_locomotion() + _attacks() + _grabs() + _grab_strikes() + _throws() + _reactions())
    ids = [int(m.move) for m in moves]
    if len(set(ids)) != len(ids) or set(ids) != {int(m) for m in Move}:
        raise AssertionError("every Move id is authored exactly once")
    by_id = {int(m.move): m for m in moves}
    for att, vic in PAIRED_MOVES.items():      # the pairs of game.moves are the pairs authored
        a, v = by_id[int(att)].spec, by_id[int(vic)].spec
        if a.frames != v.frames or not any(int(e["type"]) == EventType.PARTNER_PLACE for e in a.events):
            raise AssertionError(f"paired move {int(att)} / {int(vic)}")
    return tuple(moves)


def moves() -> tuple[MoveInfo, ...]:
    """Every move of the set (spec and record), in authoring order."""
    return _moves()


def build_clips() -> dict[int, Clip]:
    """{anim id: Clip} of the whole set, authored (not yet encoded)."""
    return {int(m.move): author(m.spec) for m in _moves()}


def build_ranges() -> dict[int, RangeRecord]:
    """{anim id: RangeRecord} of the whole set."""
    return {int(m.move): m.record for m in _moves()}


# The demo set's resource file as authored by this module, kept beside it so that a start
# reads it instead of solving every pose again (1.5 s); tests/game/test_moveset.py checks
# it is what authoring gives, and ``write_demo_resource`` writes it again after a change.
DEMO_RESOURCE = Path(__file__).with_name("demo.res")


def author_demo_resource_bytes() -> bytes:
    """The demo set authored now: every move's clip solved and encoded, the range list,
    the anim table, as a character data resource file."""
    aset = AnimSet.build(build_clips(), build_ranges(), name="demo")
    return save_resource(aset.to_resource())


def write_demo_resource(path: Path = DEMO_RESOURCE) -> None:
    """Write the authored demo set to ``path`` (after a change to the moves)."""
    path.write_bytes(author_demo_resource_bytes())


@functools.lru_cache(maxsize=1)
def demo_resource_bytes() -> bytes:
    """The demo set as a character data resource file (clip pairs, range list, table):
    the file kept beside this module, or authored now when it is missing."""
    try:
        return DEMO_RESOURCE.read_bytes()
    except OSError:
        return author_demo_resource_bytes()


@functools.lru_cache(maxsize=1)
def demo_set() -> AnimSet:
    """The demo set, loaded from its resource bytes (shared, read-only)."""
    return AnimSet.from_resource(load_resource(demo_resource_bytes()), name="demo")


# ---------------------------------------------------------------- the table for docs

def _flag_name(flags: int) -> str:
    for f in (F800, F1000, int(RangeFlags.RATE_2000)):
        if flags & f:
            return f"0x{f:x}"
    return "-"


def _events_summary(spec: ClipSpec) -> str:
    parts = []
    names = {int(EventType.PARTNER_PLACE): "place", int(EventType.SOUND): "snd",
             int(EventType.HELD_OPEN): "0x2c", int(EventType.HELD_CLOSE): "0x2d",
             int(EventType.NAMED_EFFECT): "fx"}
    for e in sorted(spec.events, key=lambda r: (int(r["frame"]), int(r["type"]))):
        t = int(e["type"])
        label = names.get(t, f"0x{t:02x}")
        if t == int(EventType.NAMED_EFFECT):
            label = "sub_" + bytes(e["tail"]).split(b"\0", 1)[0].decode("latin-1")
        parts.append(f"{label}@{int(e['frame'])}")
    return " ".join(parts)


def _turn_total(spec: ClipSpec) -> float:
    if not spec.turn:
        return 0.0
    keys = spec.turn
    total = 0.0
    for (fa, deg), (fb, _) in zip(keys, keys[1:]):
        total += deg * (fb - fa)
    return round(total, 2)


def _table() -> list[tuple]:
    rows = []
    for m in _moves():
        s = m.spec
        rows.append((int(m.move), Move(m.move).name, s.frames, _flag_name(int(m.record.flags)), s.bone2,
                     _turn_total(s), _events_summary(s)))
    return rows


# Rows (id, name, frames, rate flag, bone 2 channel?, turn degrees, events summary), for docs.
MOVE_TABLE: list[tuple] = _table()
