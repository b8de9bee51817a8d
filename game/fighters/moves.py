"""The demo move set's anim ids: the original's where the spec names them, ours elsewhere.

Paired moves come in pairs of ids in the attacker's set: the attacker's clip and the
victim's, which the victim plays from the attacker's set at the attacker's rate
("Paired tasks"). Ids marked (spec) are the original's numbers for that move.
"""
from __future__ import annotations

from enum import IntEnum

__all__ = ["Move", "GAIT_IDS", "ATTACK_CHAIN", "GRAB_STRIKES", "THROWS", "PAIRED_MOVES"]


class Move(IntEnum):
    """Anim ids of the demo move set."""

    # Idles (spec: 388 idle loop, 358 fight idle)
    IDLE = 388
    FIGHT_IDLE = 358
    # Locomotion: the gait blend's slots (walk id 408 is Rembrandt's walk, spec) and
    # the start / stop clips, which move the body by their root velocity.
    WALK = 408
    JOG = 409
    RUN = 410
    SPRINT = 411
    WALK_START = 412
    WALK_STOP = 413
    # Attacks (spec: 11 X1, 12 S1, 14 XS2, 15 SX2, 17 SSX3, 19 SSS3, 20 SSS3_HOLD, 389 end)
    JAB = 11            # X1
    KICK = 12           # S1
    CROSS = 14          # XS2
    HOOK = 15           # SX2
    FINISHER = 17       # SSX3
    COMBO = 19          # SSS3
    COMBO_HOLD = 20     # SSS3_HOLD
    ATTACK_END = 389
    # Grabs (spec: 70 attempt; 69-75 and 82-85 connecting and hold clips)
    GRAB_ATTEMPT = 70
    GRAB_CONNECT = 69
    GRAB_CONNECT_VICTIM = 71
    GRAB_HOLD_STRUGGLE = 72
    GRAB_HOLD_STRUGGLE_VICTIM = 73
    GRAB_TURN = 74
    GRAB_TURN_VICTIM = 75
    HOLD = 82
    HOLD_VICTIM = 83
    HOLD_BACK = 84
    HOLD_BACK_VICTIM = 85
    # Grab strikes (spec: 51-56), attacker / victim
    GRAB_KNEE = 51
    GRAB_KNEE_VICTIM = 52
    GRAB_PUNCH = 53
    GRAB_PUNCH_VICTIM = 54
    GRAB_HEADBUTT = 55
    GRAB_HEADBUTT_VICTIM = 56
    # Let go (spec: 94, 95)
    LET_GO = 94
    LET_GO_VICTIM = 95
    # Throws (spec: 148-161 at 0.75; 149 -90, 151 -180, 153 +86.4 degrees)
    THROW_SIDE_VICTIM = 148
    THROW_SIDE = 149
    THROW_BACK_VICTIM = 150
    THROW_BACK = 151
    THROW_SPIN_VICTIM = 152
    THROW_HIP = 153
    THROW_HIP_VICTIM = 154
    # Reactions (ours in the spec's 280-315 knockdown / reaction range), grounded (196)
    HIT_FRONT = 280
    HIT_BACK = 281
    HIT_HEAVY = 282
    KNOCKDOWN = 285
    GROUNDED = 196
    GET_UP = 200


GAIT_IDS = (Move.WALK, Move.JOG, Move.RUN, Move.SPRINT, Move.SPRINT)
# The free attacks a fighter can chain: each opens (0x2c) and closes (0x2d) its hit window.
ATTACK_CHAIN = (Move.JAB, Move.CROSS, Move.HOOK, Move.COMBO, Move.COMBO_HOLD, Move.FINISHER, Move.KICK)
# Grab strike -> the victim's clip.
GRAB_STRIKES = {Move.GRAB_KNEE: Move.GRAB_KNEE_VICTIM, Move.GRAB_PUNCH: Move.GRAB_PUNCH_VICTIM,
                Move.GRAB_HEADBUTT: Move.GRAB_HEADBUTT_VICTIM}
# Throw -> (the victim's clip, the thrower's authored total turn in degrees).
THROWS = {Move.THROW_SIDE: (Move.THROW_SIDE_VICTIM, -90.0), Move.THROW_BACK: (Move.THROW_BACK_VICTIM, -180.0),
          Move.THROW_HIP: (Move.THROW_HIP_VICTIM, 86.4)}
# Every paired attacker clip -> its victim clip.
PAIRED_MOVES = {Move.GRAB_CONNECT: Move.GRAB_CONNECT_VICTIM, Move.HOLD: Move.HOLD_VICTIM,
                Move.HOLD_BACK: Move.HOLD_BACK_VICTIM, Move.GRAB_HOLD_STRUGGLE: Move.GRAB_HOLD_STRUGGLE_VICTIM,
                Move.GRAB_TURN: Move.GRAB_TURN_VICTIM, Move.LET_GO: Move.LET_GO_VICTIM,
                **GRAB_STRIKES, **{k: v for k, (v, _) in THROWS.items()}}
