"""System 5: the actions: input, AI, scripted commands and the fight rules.

Runs the callables registered on ``SimContext.actions`` in order. They see this
update's flush: a move that ended this update is already over (held flags clear, end
callback run, the anim id naming the next clip), so a new command may start. An action
that raises does not stop the others (systems/context.py, HandlerError).
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
        """Run every action callable once, in order; one that raises does not keep the
        others (nor the placement) from running: its exception is kept (ctx.fail) and
        raised with the update's others as one HandlerError once the update is complete."""
        for act in list(self.ctx.actions):
            try:
                act(self.ctx)
            except Exception as exc:
                self.ctx.fail("actions", exc)
        for p in self.ctx.probe:
            p(self.ctx, "actions")
