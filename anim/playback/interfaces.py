"""What a task needs from the player and from the pose program, as Protocols.

Tasks call back into whoever runs them (a queued start, a fade finished early) and push
their poses onto whatever samples them. Naming those two sides here, instead of
importing ``anim.playback.player`` and ``anim.engine.plan``, keeps the task module below both: the
player imports the tasks, never the other way round.

Spec: "Animation tasks" (the virtual calls +0x5c sample, +0x64 advance), "The task stack".
"""
from __future__ import annotations

from typing import Any, Protocol

__all__ = ["TaskHost", "PoseProgram"]


class TaskHost(Protocol):
    """The player as a task sees it: its options and the stack changes (a queued start,
    a fade finished early)."""

    options: Any

    def change(self, inst: Any, task: Any, fade: float = 0.0) -> Any:
        """A change of animation: fade over ``fade`` seconds into ``task``."""
        ...

    def replace(self, inst: Any, old: Any, new: Any) -> None:
        """Put ``new`` in ``old``'s place on the stack (a hand-over); ``old`` is deferred."""
        ...

    def complete_fade(self, inst: Any, fade: Any) -> None:
        """A fade is done: give back it and every task below the incoming one."""
        ...


class PoseProgram(Protocol):
    """The pose stack a task pushes onto (+0x5c): sample a clip, or blend the top two."""

    def sample(self, bank_index: int, time: float, rate: float, flags: int) -> int:
        """Push the pose of clip ``bank_index`` at ``time``; returns its slot."""
        ...

    def blend_top(self, weight: float, bone: int = -1) -> int | None:
        """Blend the top two poses by ``weight`` (the upper one's share), optionally a subtree."""
        ...

    def keep(self, pushed: list, handle: int | None) -> None:
        """Pop the poses ``pushed`` (handles, None for a refused push) and push ``handle`` back."""
        ...
