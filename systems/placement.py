"""System 6: paired-task placement: attached humans follow the human holding them.

A sliding human (Body.slide_to, set by the fight rules to turn and slide two bodies
together before a paired clip) moves one equal step toward its target. An attached
human (Body.attachment, +0x280) stands at its ``attach_offset`` in the
holder's frame (x right, y forward) and faces the holder's heading plus its
``attach_heading``. Runs last, after the actions, so a grab attached this update is in
place before the next animation step; then, the update complete for every human, it
raises the game callbacks' exceptions of the update as one HandlerError (context.py).
Spec: "Paired tasks" (the bodies are placed by the combat code, not by the task).
"""
from __future__ import annotations

from typing import Any

import math

import esper
import numpy as np

from scuffle.anim.maths import detmath
from scuffle.anim.base.limits import MAX_COORD
from scuffle.components import Body, NO_ATTACHMENT
from scuffle.components.bodies import flat_views
from scuffle.systems.context import SimContext

__all__ = ["PairedPlacement", "place_attached", "slide_step"]

# Up to this many bodies the placement reads their fields one by one (cheaper than the
# column operations, which pay off for a crowd).
_FEW = 8

# the vector columns place_attached reads and writes through flat fast views (flat_views)
_PLACE_VECS = ("position", "attach_offset")


def place_attached(holder: Body, body: Body) -> None:
    """Put ``body`` at its offset in ``holder``'s frame and turn it with the holder."""
    t, hr, r = body._table, holder._row, body._row
    if holder._table is t and t.m_gen[hr] == holder._gen and t.m_gen[r] == body._gen:
        # both live rows of one table: read and written through its fast views, the same numbers
        m_heading = t.m_heading
        heading = m_heading[hr]
        s, c = detmath.sin_cos_deg_s(heading)
        pos, off = flat_views(t, _PLACE_VECS)
        i, j = 3 * r, 3 * hr
        ox, oy, oz = off[i], off[i + 1], off[i + 2]
        hx, hy, hz = pos[j], pos[j + 1], pos[j + 2]
        x, y, z = hx + (ox * c - oy * s), hy + (ox * s + oy * c), hz + oz
        if abs(x) <= MAX_COORD and abs(y) <= MAX_COORD and abs(z) <= MAX_COORD:
            pos[i], pos[i + 1], pos[i + 2] = x, y, z
        else:
            body.position = (x, y, z)             # the setter's error (BodyFieldError)
        d = math.fmod(m_heading[hr] + t.m_attach_heading[r], 360.0)
        d = d - 360.0 if d > 180.0 else (d + 360.0 if d <= -180.0 else d)
        if abs(d) <= 180.0:
            m_heading[r] = d
        else:
            body.heading = d                      # not a number: the setter's error (BodyFieldError)
        return
    s, c = detmath.sin_cos_deg_s(float(holder.heading))
    ox, oy, oz = body.attach_offset.tolist()
    hx, hy, hz = holder.position.tolist()
    # the same float64 operations as holder.position + [ox c - oy s, ox s + oy c, oz], no arrays
    body.position = (hx + (ox * c - oy * s), hy + (ox * s + oy * c), hz + oz)
    d = math.fmod(holder.heading + body.attach_heading, 360.0)
    body.heading = d - 360.0 if d > 180.0 else (d + 360.0 if d <= -180.0 else d)


# the vector columns a slide step reads and writes through flat fast views (flat_views)
_SLIDE_VECS = ("position", "slide_target")


def _slide_row(body: Body, t: Any, r: int, k: int) -> None:
    """``slide_step`` of a live row ``r`` of table ``t`` sliding with ``k`` > 0 updates
    left, read and written through the table's fast views: the same float64 operations
    on the same numbers, no array made (a value out of range: the Body setter's error)."""
    pos, tgt = flat_views(t, _SLIDE_VECS)
    i = 3 * r
    px, py, pz = pos[i], pos[i + 1], pos[i + 2]
    x, y, z = px + (tgt[i] - px) / k, py + (tgt[i + 1] - py) / k, pz + (tgt[i + 2] - pz) / k
    if abs(x) <= MAX_COORD and abs(y) <= MAX_COORD and abs(z) <= MAX_COORD:
        pos[i], pos[i + 1], pos[i + 2] = x, y, z
    else:
        body.position = (x, y, z)                 # the setter's error (BodyFieldError)
    m_heading = t.m_heading
    heading = m_heading[r]
    dh = math.fmod(t.m_slide_heading[r] - heading + 540.0, 360.0) - 180.0
    h = math.fmod(heading + dh / k, 360.0)
    h = h - 360.0 if h > 180.0 else (h + 360.0 if h <= -180.0 else h)
    if abs(h) <= MAX_COORD:
        m_heading[r] = h
    else:
        body.heading = h                          # not a number: the setter's error (BodyFieldError)
    t.m_slide_left[r] = k - 1
    if k == 1:
        t.m_sliding[r] = False                    # slide_to = None


def slide_step(body: Body) -> None:
    """Move a sliding body one equal step toward its target position and heading."""
    target = body.slide_to
    if target is None:                     # not sliding: nothing to move
        return
    k = body.slide_left
    body.position = body.position + (target - body.position) / k
    dh = math.fmod(body.slide_heading - body.heading + 540.0, 360.0) - 180.0
    h = math.fmod(body.heading + dh / k, 360.0)
    body.heading = h - 360.0 if h > 180.0 else (h + 360.0 if h <= -180.0 else h)
    body.slide_left = k - 1
    if body.slide_left == 0:
        body.slide_to = None


class PairedPlacement(esper.Processor):
    """Place every attached human relative to its holder.

    The sliding and attached bodies are picked from the body table's columns
    (``ctx.bodies``) with a few array operations (up to _FEW bodies: from their fields);
    only they are visited, in entity order, through their Body views: the world's bodies
    and their rows in entity order are the crowd's (``ctx.crowd``, kept as humans join and
    leave).
    """

    def __init__(self, ctx: SimContext):
        self.ctx = ctx
        self._busy = np.zeros(0, np.bool_)      # each update: attached or sliding, per row
        self._sliding = np.zeros(0, np.bool_)

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Slide sliding bodies one step and place attached ones."""
        ctx = self.ctx
        crowd = ctx.crowd
        crowd.sync()
        bodies = crowd.bodies
        table = ctx.bodies
        if table.capacity != self._busy.shape[0]:
            self._busy = np.empty(table.capacity, np.bool_)
            self._sliding = np.empty(table.capacity, np.bool_)
        if len(bodies) <= _FEW:                 # a few bodies: their rows read, no array work
            gen, att, left, sliding = table.m_gen, table.m_attachment, table.m_slide_left, table.m_sliding
            for body in bodies:
                r = body._row
                if body._table is not table or gen[r] != body._gen:     # (rehomed above: never) the fields
                    if body.attachment != NO_ATTACHMENT or (body.slide_left > 0 and body.slide_to is not None):
                        self._place(body)
                elif att[r] != NO_ATTACHMENT or (left[r] > 0 and sliding[r]):
                    self._place(body)
        else:
            busy, sliding = self._busy, self._sliding
            np.not_equal(table.attachment, NO_ATTACHMENT, out=busy)
            np.greater(table.slide_left, 0, out=sliding)
            np.logical_and(sliding, table.sliding, out=sliding)
            np.logical_or(busy, sliding, out=busy)
            if busy.any():
                # the busy bodies in entity order, each slid and placed from its row's fast views
                gen, att, left, sliding = table.m_gen, table.m_attachment, table.m_slide_left, table.m_sliding
                for k in np.flatnonzero(busy[crowd.body_rows[:len(bodies)]]).tolist():
                    body = bodies[k]
                    r = body._row
                    if body._table is not table or gen[r] != body._gen:     # (never: rehomed) the fields
                        self._place(body)
                        continue
                    k = left[r]
                    if k > 0 and sliding[r]:
                        _slide_row(body, table, r, k)
                    a = att[r]
                    if a != NO_ATTACHMENT:
                        holder = esper.try_component(a, Body)
                        if holder is None:
                            body.attachment = NO_ATTACHMENT         # its holder gone: let go
                        else:
                            place_attached(holder, body)
        for p in ctx.probe:
            p(ctx, "placement")
        if ctx.failures:
            ctx.report_failures()           # the update is complete: a callback's exception now

    @staticmethod
    def _place(body: Body) -> None:
        """One body: its slide step, then its place at its holder (a holder gone: let go)."""
        if body.slide_left > 0 and body.slide_to is not None:
            slide_step(body)
        if body.attachment == NO_ATTACHMENT:
            return
        holder = esper.try_component(body.attachment, Body)
        if holder is None:
            body.attachment = NO_ATTACHMENT
            return
        place_attached(holder, body)
