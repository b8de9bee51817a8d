"""System 4: the state update: the state function's velocity, root motion, then the move.

First the state functions (``SimContext.state_functions``, callables(ctx), e.g. the
fight rules' locomotion) set each body's ``state_velocity`` from its intent (the wanted
direction and gait the commands and the AI set), so the velocity arrives in the same
update ("Root motion", L347-349: the state update sets the velocity, then
Human_ApplyRootMotion adds the root velocity, then the human moves). Then for each
human the pose's root velocity (already times the rate) is turned by the
human's heading into world axes, capped at 50 m/s and added to the velocity the state
set; the turn a = 2 acos(w), signed by the quaternion's z, turns the heading by
a x 30 x dt; then the human moves by velocity x dt. A value tagged as a default ("none":
no section A, flag 0x1 / 0x2) adds nothing. A human with an attachment (+0x280) takes the
pose's quaternion as it is onto its held heading instead of the turn (L350); its velocity
is the same sum as any human's (the rule has no exception for it; ``PlayerOptions.
attached_velocity="zero"``: 0), and it does not move by itself: system 6 puts it at its
holder's offset (docs/original.md, "The attached human").

Conventions: metres, z up, heading in degrees counter-clockwise seen from above, 0
facing +y; the human's frame is x right, y forward, so world = Rz(heading) . local.
Original: 0x0023fea8 (the state update), 0x0023f238 Human_ApplyRootMotion.
"""
from __future__ import annotations

from typing import Any

import math
from operator import is_

import esper
import numpy as np

from scuffle.anim.maths import detmath, quat
from scuffle.anim.engine.jobs import MotionInputs, MotionJob
from scuffle.anim.engine.kernels import root_motion_step
from scuffle.anim.engine.kernels import root_motion_step as _root_motion_kernel   # the chunks' (a timer wraps the other)
from scuffle.anim.playback.tasks import AttachedVelocity
from scuffle.components import Body, NO_ATTACHMENT
from scuffle.systems.context import SimContext

__all__ = ["StateUpdate", "root_motion", "heading_matrix", "to_world"]

# Up to this many moving bodies their held flags are set one by one (no column operation).
_FEW = 16


def heading_matrix(heading_deg: float) -> np.ndarray:
    """Rz(heading): the (3, 3) rotation about z that takes the human's frame (x right, y
    forward) into world axes, heading in degrees counter-clockwise seen from above."""
    s, c = detmath.sin_cos_deg_s(float(heading_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def to_world(model: np.ndarray, position: np.ndarray, heading_deg: float) -> np.ndarray:
    """(n, 3) points in the human's model space -> world: position + Rz(heading) . model."""
    return model @ heading_matrix(heading_deg).T + np.asarray(position, dtype=np.float64)[None, :]


def root_motion(vel: np.ndarray, vel_none: np.ndarray, turn: np.ndarray, turn_none: np.ndarray,
                heading_deg: np.ndarray, dt: float, cap: float) -> tuple[np.ndarray, np.ndarray]:
    """Batched Human_ApplyRootMotion: world root velocities (3, N) and heading changes (N,) deg.

    In: pose velocities (3, N) and bone-0 quaternions (4, N) with their "none" tags,
    headings in degrees. Original: 0x0023f238.
    """
    s, c = detmath.sin_cos_deg(heading_deg)
    world = np.stack([vel[0] * c - vel[1] * s, vel[0] * s + vel[1] * c, vel[2]]).astype(np.float64)
    speed = np.sqrt((world * world).sum(axis=0))
    scale = np.where(speed > cap, cap / np.where(speed == 0, 1, speed), 1.0)
    world = np.where(vel_none, 0.0, world * scale)
    a = quat.angle_about_z(turn.astype(np.float64))
    dturn = np.where(turn_none, 0.0, a * detmath.RAD * 30.0 * dt)
    return world, dturn


class StateUpdate(esper.Processor):
    """Apply root motion, then move (see the module docstring).

    The compiled path moves the whole body table (``ctx.bodies``) in one call of
    anim.engine.kernels.root_motion_step (the same arithmetic as ``root_motion``) over its
    columns in place: body row r reads pose column ``ctx.crowd.pose_col[r]``; a row no
    human of this world moves (free, or a body without a PoseRef) is passed as held, so
    the kernel leaves its position and heading alone (a body without a PoseRef gets its
    velocity and held heading put back, as the oracle leaves them). The crowd keeps that
    index as humans join and leave (systems.crowd). ``ctx.reference`` runs the readable oracle
    instead: ``root_motion`` (numpy) over the crowd, written through the views. An
    attached human's velocity follows ``player.options.attached_velocity`` (the kernel
    gives the "root" sum; "zero" writes 0 over the attached rows after it).
    Original: 0x0023fea8, 0x0023f238 Human_ApplyRootMotion.
    """

    def __init__(self, ctx: SimContext):
        self.ctx = ctx
        self._held = np.zeros(0, np.bool_)      # each update: attached or idle, per body row
        self._m_held = self._held.data          # a memoryview of it
        self._idle_of = -1                      # the crowd's version whose idle rows _held holds
        self._motion = MotionJob()              # root_motion_step's inputs validated before each run
        self._chunk_jobs: list[MotionJob] = []  # one a chunk of the body rows on threads
        self._cut: tuple = (None, -1, 0, [])     # (the columns, crowd version, parts, their spans)
        self._chunks: tuple = ((), None, [])     # (the inputs, the spans, the chunks' calls): _motion_chunks

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Run the state functions, apply root motion to every body, then move it."""
        ctx = self.ctx
        for fn in list(ctx.state_functions):
            try:                                 # one that raises: kept, the update goes on
                fn(ctx)
            except Exception as exc:
                ctx.fail("state", exc)
        crowd = ctx.crowd
        crowd.sync()
        table = ctx.bodies
        if self._held.shape[0] != table.capacity:
            self._held = np.ones(table.capacity, np.bool_)
            self._m_held = self._held.data
            self._idle_of = -1
        poses = ctx.poses
        if poses is not None and len(poses):
            if ctx.reference:
                self._reference(poses)
            else:
                held, stray, cols = self._held, crowd.strays, crowd.pose_col
                if crowd.posed is not crowd.entities:
                    cols = self._posed_cols()    # joined or left since the pose: its columns
                if len(crowd) <= _FEW:           # a few humans: their rows' held flags one by one
                    mh, att = self._m_held, table.m_attachment
                    if self._idle_of != crowd.version:
                        held[:] = crowd.idle
                        self._idle_of = crowd.version
                    for r in crowd.human_rows:
                        if r >= 0:
                            mh[r] = att[r] != NO_ATTACHMENT
                else:
                    self._idle_of = -1
                    np.not_equal(table.attachment, NO_ATTACHMENT, out=held)
                    np.logical_or(held, crowd.idle, out=held)
                if stray.size:
                    keep = table.velocity[stray], table.attach_heading[stray]
                inputs = MotionInputs(cols, poses.vel, poses.tag, poses.rot, table.heading, held,
                                      table.state_velocity, table.position, table.attach_heading,
                                      float(ctx.dt), float(ctx.max_root_speed), table.velocity)
                eng = getattr(ctx.player, "batch", None)
                split = eng.row_chunks(cols.shape[0]) if eng is not None else None
                if split is None:
                    self._motion.run(inputs, root_motion_step)
                else:
                    _motion_chunks(self, inputs, self._spans(cols, len(split[0]), crowd.version), split[1])
                if ctx.player.options.attached_velocity == AttachedVelocity.ZERO:
                    # the held rows that are humans' (not idle): their velocity 0
                    table.velocity[held & ~crowd.idle] = 0.0
                if stray.size:
                    table.velocity[stray], table.attach_heading[stray] = keep
        for p in ctx.probe:
            p(ctx, "state")

    def _spans(self, cols: np.ndarray, parts: int, version: int) -> list:
        """``parts`` chunks (lo, hi) of the body rows holding about as many posed bodies each
        (a row with no pose costs next to nothing), kept while the columns and the crowd are."""
        c = self._cut
        if c[0] is cols and c[1] == version and c[2] == parts:
            return c[3]
        posed = np.flatnonzero(cols >= 0)
        n = cols.shape[0]
        bounds = [0]
        for j in range(1, parts):
            cut = int(posed[len(posed) * j // parts]) if len(posed) else n * j // parts
            bounds.append(max(bounds[-1], cut))
        bounds.append(n)
        spans = list(zip(bounds[:-1], bounds[1:]))
        self._cut = (cols, version, parts, spans)
        return spans

    def _chunk_job(self, j: int, inputs: MotionInputs, a: int, b: int):
        """Chunk ``j``: root_motion_step over body rows ``a`` to ``b`` (each body's row its
        own: the chunks write no row in common)."""
        jobs = self._chunk_jobs
        while len(jobs) <= j:
            jobs.append(MotionJob())
        job = jobs[j]
        part = MotionInputs(inputs.idx[a:b], inputs.p_vel, inputs.p_tag, inputs.p_rot, inputs.heading[a:b],
                            inputs.attached[a:b], inputs.state_vel[a:b], inputs.position[a:b],
                            inputs.attach_heading[a:b], inputs.dt, inputs.cap, inputs.out_vel[a:b])
        return lambda: job.run(part, _root_motion_kernel)

    def _posed_cols(self) -> np.ndarray:
        """Body row -> column of the last pose, when humans joined or left since it (an
        event handler or a callback of this update): a newcomer has none (-1, held still
        for this update), a human gone has no row."""
        crowd = self.ctx.crowd
        cols = np.full(crowd.pose_col.shape[0], -1, np.int64)
        for e, r in zip(crowd.entities, crowd.human_rows):
            if r >= 0:
                cols[r] = crowd.pose_place(e)
        return cols

    def _reference(self, poses: Any) -> None:
        """The scalar oracle of the compiled move: ``root_motion`` over the crowd's
        gathered numbers, then each body moved through its view."""
        ctx = self.ctx
        dt = float(ctx.dt)
        crowd = ctx.crowd
        parts = crowd.parts
        bodies = [parts[e][Body] for e, r in zip(crowd.entities, crowd.human_rows) if r >= 0]
        col = np.array([crowd.pose_place(e) for e, r in zip(crowd.entities, crowd.human_rows) if r >= 0],
                       dtype=np.int64)
        ok = col >= 0
        j = np.where(ok, col, 0)
        vel_none = poses.tag[0, j] | ~ok
        turn_none = poses.tag[2, j] | ~ok
        turn = poses.rot[:, 0, j]
        heading = np.array([b.heading for b in bodies], dtype=np.float64)
        world, dturn = root_motion(poses.vel[:, j], vel_none, turn, turn_none, heading, dt,
                                   float(ctx.max_root_speed))
        raw = np.where(turn_none, 0.0, quat.angle_about_z(turn.astype(np.float64)) * detmath.RAD)
        zero = ctx.player.options.attached_velocity == AttachedVelocity.ZERO
        for k, body in enumerate(bodies):
            if body.attachment != NO_ATTACHMENT:       # held: its velocity, the held heading turns
                body.velocity = np.zeros(3) if zero or not ok[k] else body.state_velocity + world[:, k]
                body.attach_heading = _wrap(body.attach_heading + float(raw[k]))
                continue
            body.velocity = body.state_velocity + world[:, k]
            body.position = body.position + body.velocity * dt
            body.heading = _wrap(body.heading + float(dturn[k]))


def _wrap_v(deg: np.ndarray) -> np.ndarray:
    """Degrees into (-180, 180], elementwise (the same as _wrap)."""
    d = np.fmod(deg, 360.0)
    d = np.where(d <= -180.0, d + 360.0, d)
    return np.where(d > 180.0, d - 360.0, d)


def _wrap(deg: float) -> float:
    """Degrees into (-180, 180]."""
    d = math.fmod(deg, 360.0)
    if d <= -180.0:
        d += 360.0
    elif d > 180.0:
        d -= 360.0
    return d


def _motion_chunks(system: StateUpdate, inputs: MotionInputs, spans: list, pool) -> None:
    """Root motion over the body rows in chunks, side by side on the engine's worker threads
    (PlayerOptions.threads; BatchEngine.row_chunks): each body's values depend on its own
    row and pose column only, so the bits are one call's. The chunks' inputs (views of the
    columns) and calls are kept while every input is the very object it was and the spans
    are the same: a steady update makes none."""
    kept = system._chunks
    if kept[1] is not spans or not all(map(is_, inputs, kept[0])):
        kept = system._chunks = (inputs, spans, [system._chunk_job(j, inputs, a, b)
                                                 for j, (a, b) in enumerate(spans)])
    pool.run(kept[2])
