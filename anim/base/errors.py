"""The original's fixed sizes and the errors of the animation core (a leaf: it imports
nothing of scuffle).

Here so that the options, the recipes and the reference engine can name them without the
engine's tables and kernels; anim.engine.stack, anim.maths.pose and anim.playback.lookup re-export them under
their old names.

Spec: "The task stack" (18 tasks, a queue of 10, the pool of 360: L197, L253), "The
pose" (the pose stack of seven, 0x00104ce0).
"""
from __future__ import annotations

__all__ = ["POOL_SIZE", "STACK_SIZE", "QUEUE_SIZE", "POSE_STACK_SIZE", "AnimLimitError", "TaskPoolExhausted",
           "StackFull", "QueueFull", "PoseStackOverflow", "UnknownClip", "StaleHandle"]

POOL_SIZE = 360
STACK_SIZE = 18
QUEUE_SIZE = 10
# Original: 0x00104ce0 refuses an eighth pose on the player's stack.
POSE_STACK_SIZE = 7


class AnimLimitError(RuntimeError):
    """A fixed-size structure of the original is full; nothing was changed."""


class TaskPoolExhausted(AnimLimitError):
    """All tasks of the pool are in use (the original's free list of 360 is empty)."""


class StackFull(AnimLimitError):
    """A character's task stack already holds 18 tasks."""


class QueueFull(AnimLimitError):
    """A character's task queue already holds 10 tasks."""


class PoseStackOverflow(RuntimeError):
    """An eighth pose on a player's stack of seven. Kept for callers that catch it: the
    sample plan never raises it, it refuses the push and counts it, as 0x00104ce0
    does (anim.engine.plan.SamplePlan.sample, ``Player.stats.poses_refused``)."""


class UnknownClip(ValueError):
    """An anim id with no clip in the set it was looked up in."""


class StaleHandle(ValueError):
    """A handle (a task, a cursor, a human record, a body) read or written after its row
    went back to its table (its task ended and went back to the pool; its human left the
    world): the row may already be another's."""
