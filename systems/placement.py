"""System 6: paired-task placement: attached humans follow the human holding them.

An attached human (Body.attachment, +0x280) stands at its ``attach_offset`` in the
holder's frame (x right, y forward) and faces the holder's heading plus its
``attach_heading``. Runs last, after the actions, so a grab attached this update is in
place before the next animation step.
Spec: "Paired tasks" (the bodies are placed by the combat code, not by the task).
"""
from __future__ import annotations

import math

import esper
import numpy as np

from components import Body, NO_ATTACHMENT
from systems.context import SimContext

__all__ = ["PairedPlacement", "place_attached"]


def place_attached(holder: Body, body: Body) -> None:
    """Put ``body`` at its offset in ``holder``'s frame and turn it with the holder."""
    h = math.radians(holder.heading)
    c, s = math.cos(h), math.sin(h)
    ox, oy, oz = body.attach_offset
    body.position = holder.position + np.array([ox * c - oy * s, ox * s + oy * c, oz])
    d = math.fmod(holder.heading + body.attach_heading, 360.0)
    body.heading = d - 360.0 if d > 180.0 else (d + 360.0 if d <= -180.0 else d)


class PairedPlacement(esper.Processor):
    """Place every attached human relative to its holder."""

    def __init__(self, ctx: SimContext):
        self.ctx = ctx

    def process(self) -> None:
        for ent, body in sorted(esper.get_component(Body)):
            if body.attachment == NO_ATTACHMENT:
                continue
            holder = esper.try_component(body.attachment, Body)
            if holder is None:
                body.attachment = NO_ATTACHMENT
                continue
            place_attached(holder, body)
        for p in self.ctx.probe:
            p(self.ctx, "placement")
