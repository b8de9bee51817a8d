"""System 5: the actions: input, AI, scripted commands and the fight rules.

Runs the callables registered on ``SimContext.actions`` in order. They see this
update's flush: a move that ended this update is already over (held flags clear, end
callback run, the anim id naming the next clip), so a new command may start.
"""
from __future__ import annotations

from typing import Any

import esper

from scuffle.systems.context import SimContext

__all__ = ["Actions"]


class Actions(esper.Processor):
    """Run the world's action callables."""

    def __init__(self, ctx: SimContext):
        self.ctx = ctx

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Run every action callable once, in order."""
        for act in list(self.ctx.actions):
            act(self.ctx)
        for p in self.ctx.probe:
            p(self.ctx, "actions")
