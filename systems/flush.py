"""System 3: the deferred flush, once every human's animation has stepped.

Releases the tasks that ended, handed over, were cut off or faded out: their held
flags clear (every bit each still holds, or with ``held_release="coney"`` not those
another task holds), their end callbacks run, and the playing anim id (+0x20) is
refreshed from the new top task, so the actions of this same update already see the
move as over. The releases and the ids run as rows in the compiled engine
(anim.engine.kernels.flush_release, flush_anim_ids); the end and report callbacks run in
Python between the kernel's runs, in the deferred list's order.
Original: 0x00105570 AnimTask_FlushDeferred, 0x00105f78 (release).
"""
from __future__ import annotations

from typing import Any

import esper

from scuffle.systems.context import SimContext

__all__ = ["DeferredFlush"]


class DeferredFlush(esper.Processor):
    """Empty the player's deferred list."""

    def __init__(self, ctx: SimContext):
        self.ctx = ctx

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Release the tasks on the deferred list and refresh the playing anim ids."""
        self.ctx.player.flush(listed=False)
        for p in self.ctx.probe:
            p(self.ctx, "flush")
