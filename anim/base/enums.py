"""The animation system's enums and flag words: task types, task and held flags, and the
options' named readings (a leaf: it imports nothing of scuffle).

Here so that everything that only names them (the options, the recipes, the reference
engine, the game) can import them without the engine's tables and kernels; anim.playback.tasks
and anim.data.options re-export them under their old names.

Spec: "Animation tasks" (the type at +0x14, the flags at +0x10), "The task stack" (the
held flags at record +0x08), "Coney's implementation" (the readings the options name).
"""
from __future__ import annotations

from enum import IntEnum, IntFlag, StrEnum

__all__ = ["TaskType", "TaskFlags", "HeldFlags", "EventRule", "BlendWindow", "PickSampling", "PlaceEvents",
           "HeldRelease", "MotionEntry", "AttachedVelocity", "TagBits", "LOCOMOTION_FLAGS", "LOCOMOTION_STILL",
           "PAIRED_IDLE_FLAGS"]


class TaskType(IntEnum):
    """The type number at +0x14 (by vtable)."""

    LOOP = 1            # 0x005350d0, ctor 0x00105678
    CLIP = 3            # 0x00534fa8, ctor 0x00105990
    PAIRED_HOLD = 4     # 0x00534668, ctor 0x00108450 (paired type 5)
    HOLD = 5            # 0x00534e80, ctor 0x00106140 (not traced: ours)
    PAIRED_CLIP = 6     # 0x00534540, ctor 0x00108a78 (paired type 3)
    SCENE = 7           # 0x00534d58, ctor 0x001069c0
    FADE = 9            # 0x00534c30, ctor 0x00106c80
    MIX = 10            # 0x005349e0, ctor 0x0010b090
    PICK = 11           # 0x00534b08, ctor 0x00106f50
    GAIT = 12           # 0x00534790, ctor 0x0010a310
    DIRECTION = 13      # 0x005348b8, ctor 0x00109210


class TaskFlags(IntFlag):
    """Task flags (+0x10), set through +0xcc (0x001058f0, 0x0010a1f0)."""

    NONE = 0
    NO_VELOCITY = 0x1       # sets cursor flag 0x1: section A not sampled
    NO_TURN = 0x2           # sets cursor flag 0x2: bone 0 not sampled
    MUTED = 0x10            # sets cursor flag 0x10: events muted
    LOCOMOTION_40 = 0x40    # set on the locomotion blends
    GAIT_BASE = 0x80        # the locomotion's "base task is already a gait blend"
    CONTINUOUS = 0x200      # gait blend: the target is not rounded


LOCOMOTION_FLAGS = TaskFlags(0x2C1)   # the gait blend's
PAIRED_IDLE_FLAGS = TaskFlags(0xC1)   # the paired idle blends'


class HeldFlags(IntFlag):
    """Bits of the human's record +0x08 that tasks hold (names are ours, from their use).

    The attack phases: WINDUP until event 0x2c opens the hit window, HIT_WINDOW until
    0x2d closes it, then RECOVERY. 0x40000 is what event 0x48 leaves. START_CLIP and
    START_CLIP_2 are the two "human flags" a locomotion start or stop clip holds ("Root
    motion" L376); STILL_80, STILL_800 and STILL_1000000 are the other bits of the mask
    the locomotion tests (LOCOMOTION_STILL), which the spec names no holder for.
    ANIM_STATE (0x4000000000) is cleared by every release.
    """

    NONE = 0
    WINDUP = 0x1
    HIT_WINDOW = 0x2
    RECOVERY = 0x4
    PHASES = 0x7
    STILL_80 = 0x80
    STILL_800 = 0x800
    REPLACED = 0x40000
    START_CLIP = 0x80000
    REPORT = 0x400000          # release sets 0x80000000 on the reported object
    STILL_1000000 = 0x1000000
    START_CLIP_2 = 0x10000000
    ANIM_STATE = 0x4000000000


# The mask the locomotion tests on the held flags (record +0x08) before it sets a velocity
# of its own: while any of these bits is held (a start or stop clip plays, event 0x48's
# 0x40000 ...) it sets none ("Root motion" L376). Original: 0x110c0880 at 0x00241a88.
LOCOMOTION_STILL = (HeldFlags.START_CLIP_2 | HeldFlags.STILL_1000000 | HeldFlags.START_CLIP | HeldFlags.REPLACED
                    | HeldFlags.STILL_800 | HeldFlags.STILL_80)



class EventRule(StrEnum):
    """Whose events fire in a step (``PlayerOptions.events``; docs/original.md, "Events").

    CURSOR: every task's cursors fire unless muted by flag 0x10 (the confirmed code:
    "Animation tasks" L231, "Gait blend" L285). NEWEST: only the newest task's
    (``Player.top``) fire, Coney's reading ("Coney's implementation", L402).
    """

    CURSOR = "cursor"
    NEWEST = "newest"


class BlendWindow(StrEnum):
    """Type 3's next task inside the blend window (``PlayerOptions.blend_window``).

    ADVANCED: "the next task is advanced too" during the clip's last b seconds
    ("Animation tasks" L215; the runtime figure L430: the idle showed 0.15 s on its
    first update after 389 blended into it with b = 0.15). KEPT: its time "kept to the
    time into the blend window" by the sampler ("When a clip ends" L313).
    """

    ADVANCED = "advanced"
    KEPT = "kept"


class PickSampling(StrEnum):
    """What type 11 samples (``PlayerOptions.pick``): CHOSEN, only the clip its value picks
    (the one audible clip is the one seen); ALL, the four clips pushed on the pose stack
    and the chosen one's pose kept ("one audible" read as events only)."""

    CHOSEN = "chosen"
    ALL = "all"



class PlaceEvents(StrEnum):
    """What becomes of a clip's type 8 events, the partner's place in a paired clip
    (``PlayerOptions.place_events``; docs/original.md, "Events").

    SILENT: never dispatched ("Paired tasks" L249: "type 8 is never dispatched there",
    0x00101dd8; the place is read from the clip's data by 0x00101558, L247): the
    original's. FIRED: fired like any other event (Coney's reading).
    """

    SILENT = "silent"
    FIRED = "fired"


class HeldRelease(StrEnum):
    """Which held bits a task's release clears (``PlayerOptions.held_release``).

    ORIGINAL: every bit the task still holds, with no test of other tasks ("When a clip
    ends" L314, confirmed (code) at 0x00105f78; "Animation tasks" L237). CONEY: not the
    bits another live task on the stack holds ("Coney's implementation" L402).
    """

    ORIGINAL = "original"
    CONEY = "coney"


class MotionEntry(StrEnum):
    """Bone-transform entry 0 (``PlayerOptions.motion_entry``; "Bone transforms" L116).

    MOTION: the root velocity and bone 0's rotation (the turn per 1/30 s), each the
    identity (zero, the unit quaternion) when the pose's value is tagged as a default:
    the original's (0x00104630). IDENTITY: always zero and the unit quaternion (Coney's
    boneTransforms(), L394).
    """

    MOTION = "motion"
    IDENTITY = "identity"


class AttachedVelocity(StrEnum):
    """An attached human's velocity (``PlayerOptions.attached_velocity``; "Root motion" L349-350).

    ROOT: the velocity rule as for every human, the state's velocity plus the pose's root
    velocity turned by its heading and capped at 50 m/s: the spec gives the attached human
    (+0x280 not -1) an exception for the turn alone ("instead takes the pose's quaternion
    once per update as it is"), the original's reading, the default. ZERO: its velocity is
    0, its root and state velocities dropped (scuffle's earlier reading of "instead").
    Either way its place is its holder's (system 6) and its turn goes onto its held heading.
    """

    ROOT = "root"
    ZERO = "zero"


class TagBits(StrEnum):
    """How a pose value's default tag is stored (``PlayerOptions.tag_bits``; "The pose" L102).

    Y_BIT: as the original, in the lowest bit of the value's y float (set on a default,
    cleared on a sampled value; 0x00104ce0), besides the separate boolean scuffle
    decides with; every y component's last bit is its tag. MARK: a separate mark only,
    the y floats as computed (Coney's "marked as a default", L394).
    """

    Y_BIT = "y_bit"
    MARK = "mark"


