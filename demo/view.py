"""``python -m demo view SOURCE [--id N]``: play one clip on the skeleton, for the people who
study the original.

    python -m demo view demo --id 149                 # the demo move set's side throw
    python -m demo view chars.res --id 408            # a resource file (docs/formats-resource.md)
    python -m demo view walk.desc walk.keys           # a descriptor/keyframes pair (no id: rate 1.0)
    python -m demo view demo --id 149 --headless --out out/view

SOURCE is a resource file, ``demo`` (the demo move set, game.moveset.demo_set) or a
descriptor file and its keyframes file. The window shows the clip on the skeleton in a
side view and a top view, in place by default (R: root motion on), at the clip's rate:
the rate its anim id's range flags pick through CfgAnimSpeeds (0.75, 0.8, 1.0, 0.9 at
runtime), 1.0 for a pair (no id), or ``--rate``. Under the views, a timeline: the frame
ruler, the keys of each channel (a tick per key, a row per channel), the events (a marker
per event, labelled with its type) and the playing position. Overlay: the bone mask, the
rate and the clip's numbers; bones whose rotation the clip leaves to the reference pose
(no channel: the sampler fills them from Pose_InitReference's constants, tagged as
defaults) are drawn grey and dashed.

Time runs as the original's cursor runs: update u shows the clip at the time of u steps of
rate x 1/30 s summed in float32 with toward-zero rounding (anim.maths.f32), and the last update
shown is the one before the step that would reach frame F (the end update plays the next
task in the game). Looping restarts at time 0 (the original's loop carries its overshoot,
a period of D - 1/60; the viewer does not). Root motion is the game's
(systems.motion.root_motion, Human_ApplyRootMotion): the pose's velocity (times the rate)
turned into world axes and the turn of bone 0's key in force (times the rate) per update,
from update 1 on.

Keys: Space play / pause, Left / Right one update (Shift: 10), Home / End, drag on the
timeline to scrub, L loop, R root motion, M slow motion, PageUp / PageDown or [ / ] the
previous / next clip of the set, H help, F12 screenshot, Esc quit.

Headless (``--headless --out DIR``, or no display): writes NAME_sheet.png (a contact sheet
of the clip at evenly spaced frames), NAME_channels.png (its channels over time: root
velocity, root turn per frame, rotation components per bone) and NAME_view.png (the
viewer's window half-way through the clip); ``--all`` does it for every clip of the set.

Spec: "Data", "The reference pose", "Bone transforms", "Root motion", "Playback rate".
Original: 0x00104ce0 AnimCursor_SamplePose, 0x001044a0 AnimCursor_Advance, 0x00104630
Instance_BuildBoneMatrices, 0x0023f238 Human_ApplyRootMotion, 0x00104a38 Anim_RateMultiplier.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scuffle.anim.maths import f32 as F
from scuffle.anim.maths import quat
from scuffle.anim.data.clip import DESCRIPTOR_SIZE, Clip, ClipFormatError, key_frames, parse_clip
from scuffle.anim.data.lint import end_step
from scuffle.anim.data.rates import RUNTIME_SPEEDS, CfgAnimSpeeds
from scuffle.anim.maths.skeleton import HUMANOID, NUM_BONES, PARENTS, Bone, Skeleton
from scuffle.game.cli.errors import OneLineParser, anim_ref, examples
from scuffle.game.runtime.scenario import MAX_RATE
from scuffle.game.runtime.files import MAX_BINARY_BYTES, FileLimitError, OutputError, output_path, read_limited
from scuffle.systems.motion import heading_matrix

__all__ = ["ViewError", "ClipEntry", "Playback", "ViewerState", "load_source", "draw_view",
           "write_contact_sheet", "write_channels", "write_view_picture", "run_headless", "main",
           "sheet_size", "channels_size", "bone_label", "MAX_UPDATES"]

MAX_UPDATES = 20000             # updates a playback holds (the rest of a very long clip is cut)
DEFAULT_SIZE = (1280, 800)
DEFAULT_OUT = "out/view"
SHEET_CELLS = 12
SHEET_COLUMNS = 4
SHEET_CELL = (320, 240)
SHEET_PAD = 8
SHEET_HEADER = 74
PLOT_WIDTH = 1500
PLOT_HEADER = 70
PLOT_TOP_H = 270
PLOT_COLUMNS = 5
PLOT_CELL_H = 170
PLOT_PAD = 14
PLOT_FOOTER = 30

# The look (render's palette, plus the viewer's own).
REF_COLOUR = (128, 132, 142)            # bones filled from the reference pose
BODY = (90, 175, 255)                   # the animated bones (render.FIGHTER_COLOURS[0])
AXIS_COLOURS = ((235, 95, 85), (95, 205, 120), (95, 150, 255), (230, 200, 90))   # x, y, z, w
EVENT_COLOUR = (255, 150, 60)
KEY_COLOUR = (170, 205, 255)

_BONE_NAMES = {int(b): b.name for b in Bone}
_SLOT_LABELS = ("A velocity", "B root")


class ViewError(ValueError):
    """A source the viewer cannot show: the message names the file and what is wrong
    (for a clip chunk, the field and byte offset)."""


def bone_label(b: int) -> str:
    """``17 L_UPPERARM`` for a named bone, ``8`` for the others."""
    name = _BONE_NAMES.get(int(b))
    return f"{b} {name}" if name else str(b)


# ---------------------------------------------------------------- sources


@dataclass(frozen=True)
class ClipEntry:
    """One clip to show: the clip, its anim id (None for a pair), the rate it plays at, the
    range flags that picked it, where it came from and a label."""

    clip: Clip
    anim_id: int | None
    rate: float
    range_flags: int
    source: str
    rate_from: str

    @property
    def label(self) -> str:
        """``id 149 THROW_SIDE``, or ``clip NAME`` for a pair."""
        head = f"id {self.anim_id}" if self.anim_id is not None else "clip"
        return f"{head} {self.clip.name}".strip()

    @property
    def file_stem(self) -> str:
        """A file-name-safe name: ``id149_THROW_SIDE`` or the clip's name."""
        base = f"id{self.anim_id}_{self.clip.name}" if self.anim_id is not None else (self.clip.name or "clip")
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", base).strip("_") or "clip"


def _read(path: str, what: str) -> bytes:
    """A file's bytes; ViewError naming the file when it cannot be read."""
    try:
        return read_limited(path, MAX_BINARY_BYTES)
    except FileLimitError as exc:
        raise ViewError(f"cannot read {what} {path!r}: {exc.problem}") from None


def _set_entries(aset, source: str, speeds: CfgAnimSpeeds, rate: float | None) -> list[ClipEntry]:
    """One entry per id with a clip, at its range flags' rate (or ``rate``)."""
    out = []
    for anim_id in aset.ids():
        flags = int(aset.range(anim_id).flags)
        if rate is None:
            r, why = speeds.rate_for(flags), f"range flags 0x{flags:04x}"
        else:
            r, why = F.f32(rate), "--rate"
        out.append(ClipEntry(aset.clip(anim_id), anim_id, r, flags, source, why))
    return out


def load_source(source: list[str], anim_id: int | str | None = None, rate: float | None = None,
                speeds: CfgAnimSpeeds = RUNTIME_SPEEDS) -> tuple[list[ClipEntry], int]:
    """The clips a SOURCE names and the index of the one to show first.

    In: ``["demo"]``, ``[RESOURCE]`` or ``[DESCRIPTOR, KEYFRAMES]``; the anim id to start
    at (a set only); a rate that overrides every clip's (> 0). Out: one entry per anim id
    with a clip (ascending ids), or the pair's one clip. Rejected (ViewError): a missing
    or unreadable file, a resource or clip that does not parse (the error names the
    chunk, field and offset), a descriptor that is not 80 bytes, an id with no clip, --id
    with a pair, a rate that is not a finite number > 0 and <= 16 (MAX_RATE).
    Original: 0x00175080 CharacterInstance_GetAnim, 0x00104a38 Anim_RateMultiplier.
    """
    if rate is not None and not (math.isfinite(rate) and 0 < rate <= MAX_RATE):
        raise ViewError(f"--rate: {rate} must be a finite number > 0 (at most {MAX_RATE:g})")
    if not source or len(source) > 2:
        raise ViewError("SOURCE: a resource file, 'demo', or a descriptor file and its keyframes file")
    if len(source) == 2:
        if anim_id is not None:
            raise ViewError("--id goes with a resource file or 'demo', not a descriptor/keyframes pair")
        desc = _read(source[0], "descriptor file")
        if len(desc) != DESCRIPTOR_SIZE:
            raise ViewError(f"{source[0]}: a descriptor is {DESCRIPTOR_SIZE} bytes, this file has {len(desc)} "
                            f"(give DESCRIPTOR KEYFRAMES, in that order)")
        keys = _read(source[1], "keyframes file")
        try:
            clip = parse_clip(desc, keys)
        except ClipFormatError as exc:
            raise ViewError(f"{source[0]} + {source[1]}: {exc}") from None
        r = F.f32(rate) if rate is not None else 1.0
        return [ClipEntry(clip, None, r, 0, source[0], "--rate" if rate is not None else "no id: 1.0")], 0
    if source[0] == "demo" and not Path("demo").is_file():
        from scuffle.game.fighters.moveset import demo_set
        aset, label = demo_set(), "demo move set"
    else:
        from scuffle.anim.data.animset import AnimSet
        from scuffle.anim.data.resource import ResourceFormatError, load_resource

        data = _read(source[0], "resource file")
        try:
            aset = AnimSet.from_resource(load_resource(data))
        except (ResourceFormatError, ValueError) as exc:
            raise ViewError(f"{source[0]}: not a resource file: {exc}") from None
        label = source[0]
    entries = _set_entries(aset, label, speeds, rate)
    if not entries:
        raise ViewError(f"{source[0]}: no anim id has a clip")
    start = 0
    if isinstance(anim_id, str):                 # a clip's name in the set
        from scuffle.anim.data.animset import UnknownAnimName
        try:
            anim_id = aset.id_of(anim_id)
        except UnknownAnimName as exc:
            raise ViewError(f"{source[0]}: --id: {exc}") from None
    if anim_id is not None:
        ids = [e.anim_id for e in entries]
        if anim_id not in ids:
            raise ViewError(f"{source[0]}: anim id {anim_id} has no clip (ids with clips: "
                            f"{ids[0]}-{ids[-1]}, {len(ids)} of them)")
        start = ids.index(anim_id)
    return entries, start


# ---------------------------------------------------------------- the playback


def _segments() -> tuple[tuple[int, int], ...]:
    """The drawn bones: (parent, child) for bones 2-33 whose parent is not the root."""
    return tuple((PARENTS[b], b) for b in range(2, NUM_BONES) if PARENTS[b] > 0)


SEGMENTS = _segments()
TIPPED = (int(Bone.L_FOOT), int(Bone.R_FOOT), int(Bone.L_HAND), int(Bone.R_HAND), 15)
_LEFT = {16, 17, 18, 19, 20, 21, 28, 29, 30}
_RIGHT = {22, 23, 24, 25, 26, 27, 31, 32, 33}


def _model(skeleton: Skeleton, rot: np.ndarray, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pose rotations (4, 34, n) and roots (3, n) -> positions and tips, each (n, 34, 3)."""
    pos, mrot = skeleton.model_space(rot.astype(np.float64), root.astype(np.float64))
    tips = skeleton.tip_positions(pos, mrot)
    return np.ascontiguousarray(pos.transpose(2, 1, 0)), np.ascontiguousarray(tips.transpose(2, 1, 0))


class Playback:
    """One clip at one rate, prepared for playing: everything per update u = 0..n-1.

    ``times[u]`` the cursor time after u steps of rate x 1/30 s (float32, toward zero);
    ``frames_x[u]`` the frame position t x 30; ``points`` / ``tips`` (n, 34, 3) model
    space; ``tags`` (36, n) the default tags (velocity, root, bones 0-33); ``path`` (n, 3)
    and ``headings`` (n,) degrees: the body's place with root motion on (from update 1,
    heading 0 at the start); ``turn_deg`` (n,) the turn each update adds. ``end_update``
    is the update whose step would reach frame F (n when not cut at MAX_UPDATES);
    ``never_ends`` when that step's overshoot is exactly 0.0 (the original never ends it).

    In: a ClipEntry and the skeleton. Rejected: nothing (a clip that parsed plays).
    Original: 0x001044a0 AnimCursor_Advance, 0x00104ce0 AnimCursor_SamplePose,
    0x00104630 Instance_BuildBoneMatrices, 0x0023f238 Human_ApplyRootMotion.
    """

    def __init__(self, entry: ClipEntry, skeleton: Skeleton = HUMANOID):
        from scuffle.anim.engine.sampler import ClipBank
        from scuffle.systems.context import MAX_ROOT_SPEED
        from scuffle.systems.motion import root_motion

        self.entry = entry
        self.clip = clip = entry.clip
        self.skeleton = skeleton
        self.frames = clip.frames
        rate = F.f32(entry.rate)
        step = F.mul(F.DT, rate)
        times = [0.0]
        t = 0.0
        self.truncated = False
        while True:
            nt = F.add(t, step)
            if F.frame_of(nt) >= self.frames or nt == t:
                break
            if len(times) >= MAX_UPDATES:
                self.truncated = True
                break
            times.append(nt)
            t = nt
        found = end_step(clip, rate)
        self.end_update = found[0] if found is not None else len(times)
        self.never_ends = found is not None and found[1] == 0.0
        self.n = n = len(times)
        self.times = np.array(times, dtype=np.float32)
        self.frames_x = self.times.astype(np.float64) * 30.0
        self.bank = ClipBank([clip], skeleton)
        poses = self.bank.sample(np.zeros(n, np.int64), self.times, np.full(n, rate, np.float32),
                                 np.zeros(n, np.int64))
        self.tags = poses.tag.copy()
        self.points, self.tips = _model(skeleton, poses.rot, poses.root)
        # Root motion: update 0 shows time 0 and adds nothing; update u >= 1 adds its pose's.
        self.path = np.zeros((n, 3))
        self.headings = np.zeros(n)
        self.turn_deg = np.zeros(n)
        pos = np.zeros(3)
        heading = 0.0
        for u in range(1, n):
            world, dturn = root_motion(poses.vel[:, u:u + 1], poses.tag[0, u:u + 1], poses.rot[:, 0, u:u + 1],
                                       poses.tag[2, u:u + 1], np.array([heading]), F.DT, MAX_ROOT_SPEED)
            pos = pos + world[:, 0] * F.DT
            self.turn_deg[u] = float(dturn[0])
            heading = heading + float(dturn[0])
            self.path[u] = pos
            self.headings[u] = heading
        self.total_turn = float(self.turn_deg.sum())
        # Bounds for steady cameras: in place and with root motion.
        self.bounds_in_place = self._bounds(False)
        self.bounds_moving = self._bounds(True)

    # ---- geometry
    def world(self, u: int, root_motion: bool) -> tuple[np.ndarray, np.ndarray]:
        """Positions and tips (34, 3) of update u: model space in place, or placed on the path."""
        p, t = self.points[u], self.tips[u]
        if not root_motion:
            return p, t
        rz = heading_matrix(self.headings[u])
        return p @ rz.T + self.path[u], t @ rz.T + self.path[u]

    def _bounds(self, moving: bool) -> np.ndarray:
        """(min xyz, max xyz) over every update's bone points and tips."""
        if moving:
            pts = [np.concatenate(self.world(u, True)) for u in range(0, self.n, max(1, self.n // 200))]
            pts.append(np.concatenate(self.world(self.n - 1, True)))
            allp = np.concatenate(pts)
        else:
            allp = np.concatenate([self.points[:, 1:].reshape(-1, 3), self.tips[:, 1:].reshape(-1, 3)])
        return np.stack([allp.min(axis=0), allp.max(axis=0)])

    def update_of_frame(self, frame: float) -> int:
        """The update whose frame position is nearest ``frame`` (for scrubbing)."""
        i = int(np.searchsorted(self.frames_x, frame))
        if i <= 0:
            return 0
        if i >= self.n:
            return self.n - 1
        return i if abs(self.frames_x[i] - frame) < abs(frame - self.frames_x[i - 1]) else i - 1

    def sample_frames(self, frames: np.ndarray, rate: float = 1.0):
        """The clip sampled at whole frames (time f / 30) at ``rate``: a PoseBatch."""
        f = np.asarray(frames, dtype=np.float64)
        n = len(f)
        return self.bank.sample(np.zeros(n, np.int64), (f / 30.0).astype(np.float32),
                                np.full(n, rate, np.float32), np.zeros(n, np.int64))

    def model_at_frames(self, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, tips (n, 34, 3) and tags (36, n) at whole frames."""
        p = self.sample_frames(frames, self.entry.rate)
        pts, tips = _model(self.skeleton, p.rot, p.root)
        return pts, tips, p.tag.copy()


# ---------------------------------------------------------------- the state


@dataclass
class ViewerState:
    """What the viewer shows and how it plays (no pygame: the keys call these methods).

    ``entries`` the clips of the source, ``index`` the one shown, ``update`` the update
    shown (0..n-1), ``playing``, ``loop``, ``root_motion``, ``slow``, ``show_help``.
    """

    entries: list[ClipEntry]
    index: int = 0
    update: int = 0
    playing: bool = True
    loop: bool = True
    root_motion: bool = False
    slow: bool = False
    show_help: bool = False
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def entry(self) -> ClipEntry:
        """The clip shown."""
        return self.entries[self.index]

    @property
    def playback(self) -> Playback:
        """The shown clip's Playback (built on first use, a few kept)."""
        pb = self._cache.get(self.index)
        if pb is None:
            if len(self._cache) > 8:
                self._cache.clear()
            pb = self._cache[self.index] = Playback(self.entry)
        return pb

    def select(self, index: int) -> None:
        """Show clip ``index`` of the set (wrapping), from its first update."""
        self.index = index % len(self.entries)
        self.update = 0

    def next_clip(self, d: int = 1) -> None:
        """The clip ``d`` places on in the set (wrapping), from its first update."""
        self.select(self.index + d)

    def tick(self) -> None:
        """One update of playback: the next update; past the last, back to 0 (loop) or stop."""
        n = self.playback.n
        if self.update + 1 < n:
            self.update += 1
        elif self.loop:
            self.update = 0
        else:
            self.playing = False

    def step(self, d: int) -> None:
        """Single-step ``d`` updates (pauses; clamped to the clip)."""
        self.playing = False
        self.set_update(self.update + d)

    def set_update(self, u: int) -> None:
        """Show update ``u``, clamped to 0..n-1."""
        self.update = int(min(max(u, 0), self.playback.n - 1))

    def seek_frame(self, frame: float) -> None:
        """Scrub: the update nearest the frame position (pauses)."""
        self.playing = False
        self.update = self.playback.update_of_frame(frame)

    def toggle(self, what: str) -> None:
        """Flip ``playing``, ``loop``, ``root_motion``, ``slow`` or ``show_help``."""
        if what == "playing" and not self.playing and self.update >= self.playback.n - 1:
            self.update = 0                       # play again from the start
        setattr(self, what, not getattr(self, what))


# ---------------------------------------------------------------- drawing


def _pygame():
    """pygame with the font module up (and the dummy drivers when there is no display)."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame
    if not pygame.font.get_init():
        pygame.font.init()
    return pygame


def _dashed(surface, colour, a, b, width: int = 1, dash: float = 6.0, gap: float = 4.0) -> None:
    """A dashed line from a to b."""
    import pygame
    ax, ay = a
    bx, by = b
    length = math.hypot(bx - ax, by - ay)
    if length < 1e-6:
        return
    ux, uy = (bx - ax) / length, (by - ay) / length
    s = 0.0
    while s < length:
        e = min(s + dash, length)
        pygame.draw.line(surface, colour, (ax + ux * s, ay + uy * s), (ax + ux * e, ay + uy * e), width)
        s = e + gap


def _mix(a, b, t: float) -> tuple[int, int, int]:
    return tuple(int(a[i] + (b[i] - a[i]) * t) for i in range(3))


def _shade(c, k: float) -> tuple[int, int, int]:
    return tuple(int(min(255, max(0, v * k))) for v in c)


def _bone_colour(b: int) -> tuple[int, int, int]:
    if b in _LEFT:
        return _shade(BODY, 0.72)
    if b in _RIGHT:
        return _mix(BODY, (255, 255, 255), 0.35)
    return _mix(BODY, (255, 255, 255), 0.12)


def draw_skeleton(surface, project, points: np.ndarray, tips: np.ndarray, tags: np.ndarray,
                  depth_axis: int, width: int = 3) -> None:
    """The skeleton through ``project`` ((3,) -> screen xy), far parts first along
    ``depth_axis`` (0: x for the side view, 2: z for the top view). A segment parent ->
    child shows the parent's rotation: grey and dashed when that rotation is a default
    (the reference pose), in the bone's colour otherwise.
    """
    import pygame
    segs = []
    for p, c in SEGMENTS:
        ref = bool(tags[2 + p])
        depth = float(points[p][depth_axis] + points[c][depth_axis]) / 2
        segs.append((depth, points[p], points[c], ref, c))
    for b in TIPPED:
        if b == 15:
            continue
        segs.append((float(points[b][depth_axis] + tips[b][depth_axis]) / 2, points[b], tips[b], bool(tags[2 + b]), b))
    segs.sort(key=lambda s: s[0])
    for _, a, c, ref, b in segs:
        pa, pc = project(a), project(c)
        if ref:
            _dashed(surface, REF_COLOUR, pa, pc, max(1, width - 1))
        else:
            pygame.draw.line(surface, _bone_colour(b), pa, pc, width)
    head = (points[int(Bone.HEAD)] + tips[15]) / 2
    r = max(3, int(width * 2.4))
    ref_head = bool(tags[2 + int(Bone.HEAD)])
    pygame.draw.circle(surface, REF_COLOUR if ref_head else _mix(BODY, (255, 255, 255), 0.45), project(head), r,
                       2 if ref_head else 0)
    pygame.draw.circle(surface, (255, 255, 255), project(points[int(Bone.PELVIS)]), max(2, width - 1))


@dataclass
class _Frame2D:
    """A view's mapping: world (a, b) -> pixels, with a the screen's right and b up."""

    rect: object
    centre: tuple[float, float]
    scale: float

    def __call__(self, a: float, b: float) -> tuple[float, float]:
        return (self.rect.centerx + (a - self.centre[0]) * self.scale,
                self.rect.centery - (b - self.centre[1]) * self.scale)


def _fit(rect, lo: tuple[float, float], hi: tuple[float, float], margin: float = 0.25,
         min_span: float = 1.2) -> _Frame2D:
    span_a = max(hi[0] - lo[0], min_span) + 2 * margin
    span_b = max(hi[1] - lo[1], min_span) + 2 * margin
    scale = min(rect.w / span_a, rect.h / span_b)
    return _Frame2D(rect, ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2), scale)


def _panel(surface, rect, title: str | None, fonts, alpha: int = 230) -> None:
    from scuffle.demo import render
    render._panel(surface, rect, title, fonts, alpha)


def _text(surface, font, s: str, pos, colour=None, anchor: str = "topleft"):
    from scuffle.demo import render
    return render._text(surface, font, s, pos, colour or render.TEXT, anchor)


def draw_side(surface, rect, pb: Playback, u: int, root_motion: bool, fonts, points=None, tips=None,
              tags=None, title: bool = True) -> None:
    """The side view: forward (model or world y) to the right, up (z) up, a ground line with
    half-metre ticks; the camera fits every update of the clip (it does not follow)."""
    import pygame
    from scuffle.demo import render
    _panel(surface, rect, "side view (from the right)" if title else None, fonts)
    inner = rect.inflate(-16, -(30 if title else 12))
    inner.y = rect.y + (24 if title else 6)
    if points is None:
        points, tips = pb.world(u, root_motion)
        tags = pb.tags[:, u]
    lo_b, hi_b = (pb.bounds_moving if root_motion else pb.bounds_in_place)
    frame = _fit(inner, (lo_b[1], 0.0), (hi_b[1], max(hi_b[2], 1.9)), margin=0.15)
    gy = frame(0, 0)[1]
    pygame.draw.line(surface, render.GRID_MAJOR, (inner.x, gy), (inner.right, gy), 1)
    a0 = math.floor((frame.centre[0] - inner.w / 2 / frame.scale) * 2) / 2
    a = a0
    while frame(a, 0)[0] < inner.right:
        x = frame(a, 0)[0]
        if x >= inner.x:
            pygame.draw.line(surface, render.GRID, (x, gy), (x, gy + (6 if float(a).is_integer() else 3)), 1)
        a += 0.5
    if root_motion and u > 0:
        trail = [frame(p[1], 0.0) for p in pb.path[:u + 1:max(1, u // 60)]]
        if len(trail) > 1:
            pygame.draw.lines(surface, render.ACCENT, False, trail, 1)
    draw_skeleton(surface, lambda v: frame(float(v[1]), float(v[2])), points, tips, tags, 0,
                  width=3 if frame.scale > 120 else 2)


def draw_top(surface, rect, pb: Playback, u: int, root_motion: bool, fonts, points=None, tips=None,
             tags=None, title: bool = True) -> None:
    """The top view: x right, y up the screen (the clip's forward), a metre grid, the facing
    marker; with root motion the path so far."""
    import pygame
    from scuffle.demo import render
    _panel(surface, rect, "top view" if title else None, fonts)
    inner = rect.inflate(-16, -(30 if title else 12))
    inner.y = rect.y + (24 if title else 6)
    if points is None:
        points, tips = pb.world(u, root_motion)
        tags = pb.tags[:, u]
    lo_b, hi_b = (pb.bounds_moving if root_motion else pb.bounds_in_place)
    frame = _fit(inner, (min(lo_b[0], -0.5), min(lo_b[1], -0.5)), (max(hi_b[0], 0.5), max(hi_b[1], 0.5)),
                 margin=0.2)
    prev = surface.get_clip()
    surface.set_clip(inner)
    step = 0.5 if frame.scale > 90 else 1.0
    for k in range(-40, 41):
        v = k * step
        x = frame(v, 0)[0]
        y = frame(0, v)[1]
        col = render.GRID_MAJOR if v == 0 else render.GRID
        pygame.draw.line(surface, col, (x, inner.top), (x, inner.bottom), 1)
        pygame.draw.line(surface, col, (inner.left, y), (inner.right, y), 1)
    if root_motion:
        if u > 0:
            trail = [frame(p[0], p[1]) for p in pb.path[:u + 1]]
            if len(trail) > 1:
                pygame.draw.lines(surface, render.ACCENT, False, trail, 2)
        base, heading = pb.path[u], pb.headings[u]
    else:
        base, heading = np.zeros(3), 0.0
    h = math.radians(heading)
    fwd = np.array([-math.sin(h), math.cos(h)])
    side = np.array([fwd[1], -fwd[0]])
    b2 = base[:2]
    pygame.draw.circle(surface, _shade(BODY, 0.55), frame(*b2), max(3, int(0.42 * frame.scale)), 1)
    tri = [b2 + fwd * 0.62, b2 + fwd * 0.46 + side * 0.09, b2 + fwd * 0.46 - side * 0.09]
    pygame.draw.polygon(surface, _shade(BODY, 0.8), [frame(*p) for p in tri])
    draw_skeleton(surface, lambda v: frame(float(v[0]), float(v[1])), points, tips, tags, 2,
                  width=3 if frame.scale > 120 else 2)
    surface.set_clip(prev)


def event_label(e) -> str:
    """``0x0b sound``, ``0x21 sub_bld``, ``0x4f``: an event's type for the markers."""
    if e.code is not None:
        return f"0x{e.type:02x} sub_{e.code}"
    name = e.name
    return f"0x{e.type:02x}" + ("" if name.startswith("type_") else f" {name.lower()}")


def timeline_rows(clip: Clip) -> list[tuple[str, np.ndarray | None]]:
    """The timeline's rows: (label, key start frames or None for an absent section):
    section A, section B, then one row per rotation channel in bone order."""
    rows = [(_SLOT_LABELS[0], key_frames(clip.velocity) if clip.velocity is not None else None),
            (_SLOT_LABELS[1], key_frames(clip.translation) if clip.translation is not None else None)]
    rows += [(bone_label(b), key_frames(clip.rotations[b])) for b in clip.bones]
    return rows


@dataclass
class TimelineLayout:
    """Where the timeline put things (for the mouse): the track rect and its frame span."""

    track: object
    first: float
    last: float

    def frame_at(self, x: float) -> float:
        """The frame position under screen x."""
        return self.first + (x - self.track.x) / max(self.track.w, 1) * (self.last - self.first)

    def x_of(self, frame: float) -> float:
        """The screen x of a frame position."""
        return self.track.x + (frame - self.first) / max(self.last - self.first, 1e-9) * self.track.w


def draw_timeline(surface, rect, pb: Playback, u: int, fonts) -> TimelineLayout:
    """The frame ruler, a row of key ticks per channel, the event markers (type labels),
    the end frame F and the playing position."""
    import pygame
    from scuffle.demo import render
    _panel(surface, rect, None, fonts, alpha=255)
    clip = pb.clip
    rows = timeline_rows(clip)
    events = clip.decoded_events()
    last_key = max([int(k[-1]) for _, k in rows if k is not None and len(k)] + [0])
    last = float(max(pb.frames, last_key, max((e.frame for e in events), default=0)))
    label_w = 150
    ruler_h = 22
    events_h = 34
    track = pygame.Rect(rect.x + label_w, rect.y + ruler_h, rect.w - label_w - 40, rect.h - ruler_h - events_h - 8)
    lay = TimelineLayout(track, 0.0, max(last, 1.0))
    # Ruler.
    px_per_frame = track.w / max(lay.last - lay.first, 1.0)
    # A step of 42 px or more; past 10000 frames a step a power of ten (never runs out).
    major = next((s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000) if s * px_per_frame >= 42),
                 10 ** math.ceil(math.log10(42.0 / px_per_frame)))
    minor = next((s for s in (1, 2, 5, 10, 50, 100) if s * px_per_frame >= 6 and major % s == 0), major)
    f = 0
    while f <= lay.last:
        x = lay.x_of(f)
        is_major = f % major == 0
        pygame.draw.line(surface, render.DIM if is_major else render.GRID_MAJOR, (x, track.y - (8 if is_major else 4)),
                         (x, track.y - 1), 1)
        if is_major:
            if abs(x - lay.x_of(pb.frames)) > 44 or f == pb.frames:
                _text(surface, fonts.small, str(f), (x + 2, rect.y + 2), render.DIM)
            pygame.draw.line(surface, (36, 40, 50), (x, track.y), (x, track.bottom + events_h), 1)
        f += minor
    _text(surface, fonts.small, "frame", (rect.x + 8, rect.y + 2), render.DIM)
    # Channel rows.
    n = len(rows)
    row_h = min(track.h / max(n, 1), 18.0)
    font = fonts.small if row_h >= fonts.small.get_linesize() - 3 else fonts.tiny
    for i, (label, frames) in enumerate(rows):
        y0 = track.y + i * row_h
        if i % 2 == 0:
            pygame.draw.rect(surface, (30, 34, 42), (track.x, int(y0), track.w, max(1, int(row_h))))
        cy = y0 + row_h / 2
        show_label = row_h >= 7 or i % 2 == 0
        if show_label:
            _text(surface, font, label, (rect.x + 8, cy), render.DIM if frames is None else render.TEXT, "midleft")
        if frames is None:
            _text(surface, font, "none", (track.x + 4, cy), render.DIM, "midleft")
            continue
        tick = max(2, int(row_h * 0.7))
        for kf in frames:
            x = lay.x_of(float(kf))
            pygame.draw.line(surface, KEY_COLOUR, (x, cy - tick / 2), (x, cy + tick / 2), 2 if px_per_frame > 6 else 1)
        if len(frames) and row_h >= 9:
            _text(surface, fonts.tiny, f"{len(frames)}", (track.right + 8, cy), render.DIM, "midleft")
    # End frame F.
    xe = lay.x_of(pb.frames)
    pygame.draw.line(surface, render.BAD, (xe, track.y - 10), (xe, track.bottom + events_h - 4), 1)
    _text(surface, fonts.tiny, f"F={pb.frames}", (xe - 3, rect.y + 2), render.BAD, "topright")
    # Events.
    ey = track.bottom + 4
    _text(surface, fonts.small, f"events ({len(events)})", (rect.x + 8, ey + 10), render.TEXT if events else render.DIM,
          "midleft")
    placed: list[tuple[float, float]] = []
    for e in sorted(events, key=lambda e: e.frame):
        x = lay.x_of(e.frame)
        colour = EVENT_COLOUR if e.frame < pb.frames else render.DIM
        pygame.draw.line(surface, colour, (x, track.y), (x, ey + 6), 1)
        pygame.draw.polygon(surface, colour, [(x, ey + 2), (x - 5, ey + 10), (x + 5, ey + 10)])
        label = event_label(e)
        w = fonts.tiny.size(label)[0]
        level = 0
        while any(abs(px - x) < (w + pw) / 2 + 3 and pl == level for px, pl, pw in
                  ((p[0], p[1], p[2]) for p in placed)):
            level += 1
        placed.append((x, level, w))
        _text(surface, fonts.tiny, label, (x, ey + 12 + level * (fonts.tiny.get_linesize() - 2)), colour, "midtop")
    # Playing position.
    xf = lay.x_of(float(pb.frames_x[u]))
    pygame.draw.line(surface, render.ACCENT, (xf, track.y - 12), (xf, track.bottom + 2), 2)
    pygame.draw.polygon(surface, render.ACCENT, [(xf - 6, track.y - 14), (xf + 6, track.y - 14), (xf, track.y - 6)])
    return lay


def draw_info(surface, rect, state: ViewerState, fonts) -> None:
    """The overlay: the clip's numbers, the rate and where it comes from, the playing
    position, the switches, and the bone mask (animated bones lit, the others grey)."""
    import pygame
    from scuffle.demo import render
    pb = state.playback
    e = state.entry
    clip = pb.clip
    _panel(surface, rect, None, fonts)
    x, y = rect.x + 12, rect.y + 10
    lh = fonts.mono.get_linesize()
    _text(surface, fonts.title, e.label, (x, y), render.ACCENT)
    y += fonts.title.get_linesize() + 2
    _text(surface, fonts.small, f"{e.source}  ({state.index + 1} of {len(state.entries)})", (x, y), render.DIM)
    y += lh + 4
    u = state.update
    lines = [
        (f"rate {e.rate:.7g}  ({e.rate_from})", render.TEXT),
        (f"F {pb.frames} frames (D {clip.duration:.7g} s): {pb.n} updates at this rate, "
         f"the end step on update {pb.end_update}", render.TEXT),
        (f"update {u}   time {float(pb.times[u]):.6f} s   frame {pb.frames_x[u]:.2f} "
         f"(cursor frame {F.frame_of(float(pb.times[u]))})", render.ACCENT),
        (f"displacement x {clip.displacement[0]:+.3f} m, y {clip.displacement[1]:+.3f} m;  "
         f"turn over the clip at this rate {pb.total_turn:+.1f} deg", render.DIM),
        (f"sections: A {'yes' if clip.velocity is not None else 'none'}, "
         f"B {'yes' if clip.translation is not None else 'none'}, C {len(clip.rotations)} channels;  "
         f"{len(clip.events)} events", render.DIM),
    ]
    if state.root_motion:
        px_, py_, _ = pb.path[u]
        heading = (pb.headings[u] + 180.0) % 360.0 - 180.0        # (-180, 180], as the body's
        heading = 180.0 if heading == -180.0 else heading
        lines.append((f"body: x {px_:+.3f} m, y {py_:+.3f} m, heading {heading:+.1f} deg "
                      f"(this update's turn {pb.turn_deg[u]:+.2f} deg)", render.TEXT))
    if pb.never_ends:
        lines.append((f"never ends at this rate: overshoot 0.0 on update {pb.end_update}", render.BAD))
    if pb.truncated:
        lines.append((f"cut at {MAX_UPDATES} updates", render.BAD))
    width = rect.w - 24
    for s, col in lines:
        y = _wrapped(surface, fonts.small, s, x, y, width, col)
    y += 6
    state_line = (f"{'PLAYING' if state.playing else 'PAUSED'}   loop {'on' if state.loop else 'off'}   "
                  f"root motion {'on' if state.root_motion else 'off'}" + ("   SLOW" if state.slow else ""))
    _text(surface, fonts.mono_bold, state_line, (x, y), render.GOOD if state.playing else render.ACCENT)
    y += lh + 6
    # The bone mask: 34 cells in two rows of 17.
    y += 4
    _text(surface, fonts.small, f"bone mask 0x{clip.mask:09x} ({len(clip.rotations)} bones)", (x, y), render.DIM)
    y += fonts.small.get_linesize() + 2
    cw = min(30, (rect.w - 24) // 17)
    ch = 22
    for b in range(NUM_BONES):
        cx = x + (b % 17) * cw
        cy = y + (b // 17) * (ch + 3)
        cell = pygame.Rect(cx, cy, cw - 3, ch)
        if b in clip.rotations:
            pygame.draw.rect(surface, _bone_colour(b) if b else render.ACCENT, cell)
            _text(surface, fonts.tiny, str(b), cell.center, (10, 12, 16), "center")
        else:
            pygame.draw.rect(surface, (40, 44, 52), cell)
            _dashed(surface, REF_COLOUR, cell.topleft, cell.topright)
            _dashed(surface, REF_COLOUR, cell.bottomleft, cell.bottomright)
            _text(surface, fonts.tiny, str(b), cell.center, REF_COLOUR, "center")
    y += 2 * (ch + 3) + 6
    pygame.draw.line(surface, BODY, (x, y + 7), (x + 26, y + 7), 3)
    _text(surface, fonts.small, "animated", (x + 32, y), render.TEXT)
    _dashed(surface, REF_COLOUR, (x + 120, y + 7), (x + 146, y + 7), 2)
    _text(surface, fonts.small, "reference pose (no channel)", (x + 152, y), render.TEXT)


HELP_LINES = (
    ("Space", "play / pause"),
    ("Left / Right", "one update back / on (Shift: 10)"),
    ("Home / End", "first / last update"),
    ("drag the timeline", "scrub"),
    ("L", "loop on / off"),
    ("R", "root motion on / off (default: in place)"),
    ("M", "slow motion (1/4 speed)"),
    ("PgUp / PgDn, [ / ]", "previous / next clip of the set"),
    ("F12", "save a screenshot"),
    ("H / F1", "this help"),
    ("Esc", "quit"),
)


def _wrapped(surface, font, s: str, x: int, y: int, width: int, colour) -> int:
    """Draw ``s`` wrapped at spaces to ``width`` pixels; returns the y below it."""
    words = s.split(" ")
    line = ""
    for w in words:
        trial = w if not line else line + " " + w
        if line and font.size(trial)[0] > width:
            _text(surface, font, line, (x, y), colour)
            y += font.get_linesize()
            line = w.lstrip()
        else:
            line = trial
    if line:
        _text(surface, font, line, (x, y), colour)
        y += font.get_linesize()
    return y


def draw_view(surface, state: ViewerState, fonts) -> TimelineLayout:
    """The whole window: side view, top view, overlay, timeline, key hints (and help)."""
    import pygame
    from scuffle.demo import render
    w, h = surface.get_size()
    surface.fill(render.BG)
    pb = state.playback
    tl_h = int(min(max(h * 0.38, 200), h - 260))
    views_h = h - tl_h - 34
    info_w = max(360, int(w * 0.33))
    side_w = int((w - info_w - 30) * 0.55)
    side = pygame.Rect(10, 10, side_w, views_h - 10)
    top = pygame.Rect(side.right + 10, 10, w - info_w - side.right - 30, views_h - 10)
    info = pygame.Rect(top.right + 10, 10, w - top.right - 20, views_h - 10)
    draw_side(surface, side, pb, state.update, state.root_motion, fonts)
    draw_top(surface, top, pb, state.update, state.root_motion, fonts)
    draw_info(surface, info, state, fonts)
    lay = draw_timeline(surface, pygame.Rect(10, views_h + 6, w - 20, tl_h), pb, state.update, fonts)
    hint = "Space play  <- -> step  drag timeline  L loop  R root motion  [ ] clip  H help  Esc quit"
    _text(surface, fonts.small, hint, (12, h - 8), render.DIM, "bottomleft")
    if state.show_help:
        from scuffle.demo import render
        render.draw_help(surface, fonts, HELP_LINES, "Clip viewer")
    return lay


class Fonts:
    """render.Fonts plus a tiny one for tick labels."""

    def __init__(self, size: int = 15):
        from scuffle.demo import render
        base = render.Fonts(size)
        self.__dict__.update(base.__dict__)
        pygame = _pygame()
        path = None
        try:
            path = pygame.font.match_font("dejavusansmono,liberationmono,menlo,consolas,couriernew,monospace")
        except Exception:  # pragma: no cover - fontconfig trouble
            path = None
        self.tiny = pygame.font.Font(path, max(9, size - 4))


# ---------------------------------------------------------------- headless pictures


def sheet_size(cells: int, columns: int = SHEET_COLUMNS) -> tuple[int, int]:
    """The contact sheet's size in pixels for ``cells`` pictures."""
    cols = max(1, min(columns, cells))
    rows = max(1, -(-cells // cols))
    return (cols * (SHEET_CELL[0] + SHEET_PAD) + SHEET_PAD,
            SHEET_HEADER + rows * (SHEET_CELL[1] + SHEET_PAD) + SHEET_PAD)


def sheet_frames(frames: int, cells: int = SHEET_CELLS) -> list[int]:
    """Evenly spaced whole frames 0..F-1 (at most ``cells``, no repeats)."""
    last = max(frames - 1, 0)
    n = max(1, min(cells, last + 1))
    return sorted({int(round(v)) for v in np.linspace(0, last, n)})


def write_contact_sheet(entry: ClipEntry, path, cells: int = SHEET_CELLS, root_motion: bool = False,
                        pb: Playback | None = None) -> Path:
    """A PNG of the clip at evenly spaced frames: per frame a side view and a top view,
    labelled with the frame, its time and the update it plays on at the clip's rate."""
    pygame = _pygame()
    from scuffle.demo import render
    pb = pb or Playback(entry)
    fonts = Fonts(14)
    frames = sheet_frames(pb.frames, cells)
    size = sheet_size(len(frames))
    sheet = pygame.Surface(size)
    sheet.fill(render.BG)
    clip = entry.clip
    _text(sheet, fonts.big, entry.label, (SHEET_PAD + 4, 8), render.ACCENT)
    _text(sheet, fonts.mono, f"{entry.source}   rate {entry.rate:.7g} ({entry.rate_from})   F {pb.frames} frames   "
                             f"{pb.n} updates   root motion {'on' if root_motion else 'off (in place)'}",
          (SHEET_PAD + 4, 38), render.TEXT)
    legend_x = size[0] - 330
    pygame.draw.line(sheet, BODY, (legend_x, 18), (legend_x + 26, 18), 3)
    _text(sheet, fonts.small, "animated", (legend_x + 32, 10), render.TEXT)
    _dashed(sheet, REF_COLOUR, (legend_x + 120, 18), (legend_x + 146, 18), 2)
    _text(sheet, fonts.small, "reference pose", (legend_x + 152, 10), render.TEXT)
    _text(sheet, fonts.small, f"mask: {' '.join(map(str, clip.bones)) or '(none)'}", (SHEET_PAD + 4, 56), render.DIM)
    pts, tips, tags = pb.model_at_frames(np.array(frames))
    cols = max(1, min(SHEET_COLUMNS, len(frames)))
    for i, f in enumerate(frames):
        cx = SHEET_PAD + (i % cols) * (SHEET_CELL[0] + SHEET_PAD)
        cy = SHEET_HEADER + (i // cols) * (SHEET_CELL[1] + SHEET_PAD)
        cell = pygame.Rect(cx, cy, *SHEET_CELL)
        side = pygame.Rect(cell.x, cell.y, int(cell.w * 0.56), cell.h - 22)
        top = pygame.Rect(side.right + 4, cell.y, cell.w - side.w - 4, cell.h - 22)
        u = pb.update_of_frame(f)
        p, t = pts[i], tips[i]
        if root_motion:
            rz = heading_matrix(pb.headings[u])
            p, t = p @ rz.T + pb.path[u], t @ rz.T + pb.path[u]
        draw_side(sheet, side, pb, u, root_motion, fonts, p, t, tags[:, i], title=False)
        draw_top(sheet, top, pb, u, root_motion, fonts, p, t, tags[:, i], title=False)
        _text(sheet, fonts.mono_bold, f"frame {f}", (cell.x + 4, cell.bottom - 19), render.ACCENT)
        _text(sheet, fonts.small, f"t {f / 30:.3f} s   update {u}", (cell.right - 4, cell.bottom - 18), render.DIM,
              "topright")
    path = Path(path)
    with output_path(path, "picture") as tmp:          # whole or not at all
        pygame.image.save(sheet, tmp)
    return path


def channels_size(bones: int) -> tuple[int, int]:
    """The channel plot's size in pixels for a clip with ``bones`` rotation channels."""
    rows = -(-bones // PLOT_COLUMNS) if bones else 1
    return PLOT_WIDTH, PLOT_HEADER + PLOT_TOP_H + PLOT_PAD + 28 + rows * (PLOT_CELL_H + PLOT_PAD) + PLOT_FOOTER


def _nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    first = math.ceil(lo / step) * step
    out = []
    v = first
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _range(values: list[np.ndarray], min_span: float) -> tuple[float, float]:
    allv = np.concatenate([np.ravel(v) for v in values]) if values else np.zeros(1)
    lo, hi = float(allv.min()), float(allv.max())
    if hi - lo < min_span:
        mid = (lo + hi) / 2
        lo, hi = mid - min_span / 2, mid + min_span / 2
    pad = (hi - lo) * 0.08
    return lo - pad, hi + pad


def _plot(surface, rect, fonts, title: str, x: np.ndarray, series: list[tuple[str, np.ndarray, tuple]],
          frames: int, key_frames_at=None, events=(), steps: bool = False, min_span: float = 0.2,
          note: str | None = None, unit: str = "", legend: bool = True) -> None:
    """One small plot: title, axes with ticks, grid, the series (lines or steps), key ticks
    along the bottom, event markers."""
    import pygame
    from scuffle.demo import render
    _panel(surface, rect, None, fonts, alpha=255)
    tr = _text(surface, fonts.mono_bold, title, (rect.x + 8, rect.y + 5), render.TEXT)
    top = 28
    if note:
        if tr.right + 20 + fonts.small.size(note)[0] > rect.right - 8:
            _text(surface, fonts.small, note, (rect.x + 8, tr.bottom + 2), render.ACCENT)
            top += fonts.small.get_linesize()
        else:
            _text(surface, fonts.small, note, (rect.right - 8, rect.y + 6), render.ACCENT, "topright")
    area = pygame.Rect(rect.x + 58, rect.y + top, rect.w - 70, rect.h - top - 24)
    lo, hi = _range([s for _, s, _ in series] or [np.zeros(1)], min_span)
    x_hi = max(float(frames), 1.0)

    def px(f):
        return area.x + f / x_hi * area.w

    def py(v):
        return area.bottom - (v - lo) / (hi - lo) * area.h

    pygame.draw.rect(surface, (22, 25, 31), area)
    for t in _nice_ticks(lo, hi, 4):
        y = py(t)
        pygame.draw.line(surface, (44, 49, 60) if abs(t) > 1e-12 else render.GRID_MAJOR, (area.x, y), (area.right, y), 1)
        _text(surface, fonts.tiny, f"{t:g}", (area.x - 4, y), render.DIM, "midright")
    for t in _nice_ticks(0, x_hi, 8):
        xx = px(t)
        pygame.draw.line(surface, (44, 49, 60), (xx, area.y), (xx, area.bottom), 1)
        _text(surface, fonts.tiny, f"{t:g}", (xx, area.bottom + 3), render.DIM, "midtop")
    if unit:
        _text(surface, fonts.tiny, unit, (rect.x + 6, area.y - 2), render.DIM)
    _text(surface, fonts.tiny, "frame", (rect.x + 6, area.bottom + 3), render.DIM)
    placed: list[tuple[float, float, int]] = []           # (x, width, level) of the labels so far
    for ev in sorted(events, key=lambda e: e.frame):
        xx = px(ev.frame)
        _dashed(surface, EVENT_COLOUR, (xx, area.y), (xx, area.bottom), 1, 4, 3)
        label = event_label(ev)
        w = fonts.tiny.size(label)[0]
        level = 0
        while any(pl == level and xx < px0 + pw + 6 and px0 < xx + w + 6 for px0, pw, pl in placed):
            level += 1
        placed.append((xx, w, level))
        _text(surface, fonts.tiny, label, (xx + 2, area.y + 1 + level * (fonts.tiny.get_linesize() - 1)),
              EVENT_COLOUR)
    if key_frames_at is not None:
        for kf in key_frames_at:
            xx = px(float(kf))
            pygame.draw.line(surface, KEY_COLOUR, (xx, area.bottom - 5), (xx, area.bottom), 1)
    prev = surface.get_clip()
    surface.set_clip(area)
    for _, s, colour in series:
        if len(s) == 1:
            pygame.draw.circle(surface, colour, (px(x[0]), py(float(s[0]))), 3)
            continue
        if steps:
            pts = []
            for i in range(len(s)):
                pts.append((px(x[i]), py(float(s[i]))))
                pts.append((px(x[i] + 1), py(float(s[i]))))
        else:
            pts = [(px(float(xi)), py(float(v))) for xi, v in zip(x, s)]
        pygame.draw.lines(surface, colour, False, pts, 2)
    surface.set_clip(prev)
    lx = area.right - 4
    for name, _, colour in (reversed(series) if legend else ()):
        r = _text(surface, fonts.tiny, name, (lx, area.y + 3), colour, "topright")
        lx = r.x - 10


def write_channels(entry: ClipEntry, path, pb: Playback | None = None) -> Path:
    """A PNG of the clip's channels over its frames 0..F-1, sampled as the game samples
    them at rate 1 (the clip's own values): the root velocity x, y, z (m/s, section A),
    the root turn per frame (degrees, bone 0's key in force, not interpolated) with its
    total, and per animated bone its rotation's x, y, z, w (small multiples), with the
    keys ticked along the bottom and the events marked."""
    pygame = _pygame()
    from scuffle.demo import render
    pb = pb or Playback(entry)
    clip = entry.clip
    fonts = Fonts(14)
    bones = [b for b in clip.bones if b != 0]
    size = channels_size(len(bones))
    surf = pygame.Surface(size)
    surf.fill(render.BG)
    frames = np.arange(max(pb.frames, 1))
    poses = pb.sample_frames(frames, 1.0)
    events = [e for e in clip.decoded_events()]
    _text(surf, fonts.big, f"{entry.label}: channels over time", (PLOT_PAD, 10), render.ACCENT)
    _text(surf, fonts.mono, f"{entry.source}   F {pb.frames} frames ({clip.duration:.7g} s)   sampled at each "
                            f"frame, rate 1 (plays at {entry.rate:.7g})   events dashed, keys ticked",
          (PLOT_PAD, 42), render.TEXT)
    half = (PLOT_WIDTH - 3 * PLOT_PAD) // 2
    top_y = PLOT_HEADER
    vel = poses.vel.astype(np.float64)
    if clip.velocity is not None:
        series = [(n, vel[i], AXIS_COLOURS[i]) for i, n in enumerate("xyz")]
        note = f"displacement x {clip.displacement[0]:+.3f} m, y {clip.displacement[1]:+.3f} m"
        kf = key_frames(clip.velocity)
    else:
        series, note, kf = [], "no section A: no root velocity", None
    _plot(surf, pygame.Rect(PLOT_PAD, top_y, half, PLOT_TOP_H), fonts, "root velocity (section A)", frames, series,
          pb.frames, kf, events, note=note, unit="m/s", min_span=0.5)
    if 0 in clip.rotations:
        turn = np.degrees(quat.angle_about_z(poses.rot[:, 0].astype(np.float64)))
        series = [("deg per frame", turn, AXIS_COLOURS[3])]
        note = f"sum over the frames {turn.sum():+.1f} deg; at rate {entry.rate:.7g}: {pb.total_turn:+.1f} deg"
        kf = key_frames(clip.rotations[0])
    else:
        series, note, kf = [], "no bone 0 channel: no root turn", None
    _plot(surf, pygame.Rect(2 * PLOT_PAD + half, top_y, half, PLOT_TOP_H), fonts,
          "root turn per frame (bone 0, key in force)", frames, series, pb.frames, kf, events, steps=True,
          note=note, unit="deg", min_span=1.0)
    y = top_y + PLOT_TOP_H + PLOT_PAD
    ref = [b for b in range(1, NUM_BONES) if b not in clip.rotations]
    r = _text(surf, fonts.mono_bold, "rotation per bone: the local quaternion's", (PLOT_PAD, y + 4), render.TEXT)
    lx = r.right + 10
    for c, name in enumerate("xyzw"):
        pygame.draw.line(surf, AXIS_COLOURS[c], (lx, r.centery), (lx + 18, r.centery), 3)
        lx = _text(surf, fonts.mono_bold, name, (lx + 22, y + 4), AXIS_COLOURS[c]).right + 14
    _text(surf, fonts.small, f"from the reference pose (no channel): {_ranges(ref) or 'none'}",
          (PLOT_WIDTH - PLOT_PAD, y + 6), REF_COLOUR, "topright")
    y += 28
    cw = (PLOT_WIDTH - (PLOT_COLUMNS + 1) * PLOT_PAD) // PLOT_COLUMNS
    rot = poses.rot.astype(np.float64)
    for i, b in enumerate(bones):
        cx = PLOT_PAD + (i % PLOT_COLUMNS) * (cw + PLOT_PAD)
        cy = y + (i // PLOT_COLUMNS) * (PLOT_CELL_H + PLOT_PAD)
        series = [(n, rot[c, b], AXIS_COLOURS[c]) for c, n in enumerate("xyzw")]
        _plot(surf, pygame.Rect(cx, cy, cw, PLOT_CELL_H), fonts, f"bone {bone_label(b)}", frames, series, pb.frames,
              key_frames(clip.rotations[b]), min_span=0.1,
              note=f"{len(clip.rotations[b])} keys", legend=False)
    if not bones:
        _text(surf, fonts.mono, "no rotation channel (bones 1-33 all from the reference pose)", (PLOT_PAD, y + 20),
              render.DIM)
    path = Path(path)
    with output_path(path, "picture") as tmp:          # whole or not at all
        pygame.image.save(surf, tmp)
    return path


def _ranges(bones: list[int]) -> str:
    """[7, 8, 9, 12] -> '7-9, 12'."""
    out, i = [], 0
    while i < len(bones):
        j = i
        while j + 1 < len(bones) and bones[j + 1] == bones[j] + 1:
            j += 1
        out.append(f"{bones[i]}-{bones[j]}" if j > i else str(bones[i]))
        i = j + 1
    return ", ".join(out)


def write_view_picture(state: ViewerState, path, size: tuple[int, int] = DEFAULT_SIZE) -> Path:
    """The viewer's window, rendered offscreen, as a PNG."""
    pygame = _pygame()
    surf = pygame.Surface(size)
    draw_view(surf, state, Fonts())
    path = Path(path)
    with output_path(path, "picture") as tmp:          # whole or not at all
        pygame.image.save(surf, tmp)
    return path


def run_headless(entries: list[ClipEntry], start: int, out, all_clips: bool = False, root_motion: bool = False,
                 size: tuple[int, int] = DEFAULT_SIZE) -> list[Path]:
    """Write the contact sheet, the channel plot and the window picture of the clip at
    ``start`` (or of every clip with ``all_clips``) into ``out``; returns the paths."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ViewError(f"--out {str(out)!r}: cannot make the directory: {exc.strerror or exc}") from None
    written = []
    for i in (range(len(entries)) if all_clips else [start]):
        e = entries[i]
        state = ViewerState(entries, i, root_motion=root_motion, playing=False)
        pb = state.playback
        state.set_update(pb.n // 2)
        stem = e.file_stem
        written.append(write_contact_sheet(e, out / f"{stem}_sheet.png", root_motion=root_motion, pb=pb))
        written.append(write_channels(e, out / f"{stem}_channels.png", pb=pb))
        written.append(write_view_picture(state, out / f"{stem}_view.png", size))
    return written


# ---------------------------------------------------------------- the window


class ViewerApp:
    """The pygame window over a ViewerState (see the module docstring for the keys)."""

    def __init__(self, state: ViewerState, size=DEFAULT_SIZE, screen=None, screenshot=None):
        self.state = state
        self.size = size
        self.screen = screen
        self.screenshot = screenshot
        self.running = True
        self.scrubbing = False
        self.layout: TimelineLayout | None = None

    @classmethod
    def offscreen(cls, state: ViewerState, size=DEFAULT_SIZE) -> "ViewerApp":
        """A viewer drawing onto an offscreen Surface (no display): for scripts and tests."""
        pygame = _pygame()
        return cls(state, size, pygame.Surface(size))

    def handle(self, event) -> None:
        """One pygame event: keys, and mouse drags on the timeline."""
        import pygame
        st = self.state
        if event.type == pygame.QUIT:
            self.running = False
        elif event.type == pygame.KEYDOWN:
            k = event.key
            shift = bool(getattr(event, "mod", 0) & pygame.KMOD_SHIFT)
            if k == pygame.K_ESCAPE:
                self.running = False
            elif k == pygame.K_SPACE:
                st.toggle("playing")
            elif k in (pygame.K_RIGHT, pygame.K_PERIOD):
                st.step(10 if shift else 1)
            elif k in (pygame.K_LEFT, pygame.K_COMMA):
                st.step(-10 if shift else -1)
            elif k == pygame.K_HOME:
                st.step(-st.update)
            elif k == pygame.K_END:
                st.step(st.playback.n)
            elif k == pygame.K_l:
                st.toggle("loop")
            elif k == pygame.K_r:
                st.toggle("root_motion")
            elif k == pygame.K_m:
                st.toggle("slow")
            elif k in (pygame.K_h, pygame.K_F1):
                st.toggle("show_help")
            elif k in (pygame.K_PAGEDOWN, pygame.K_RIGHTBRACKET):
                st.next_clip(1)
            elif k in (pygame.K_PAGEUP, pygame.K_LEFTBRACKET):
                st.next_clip(-1)
            elif k == pygame.K_F12 and self.screen is not None:
                path = f"view-{st.entry.file_stem}-{st.update:05d}.png"
                with output_path(path, "screenshot") as tmp:
                    pygame.image.save(self.screen, tmp)
                print(f"view: saved {path}")
        elif event.type == pygame.MOUSEBUTTONDOWN and event.button == 1 and self.layout is not None:
            track = self.layout.track
            if track.inflate(0, 60).collidepoint(event.pos):
                self.scrubbing = True
                st.seek_frame(self.layout.frame_at(event.pos[0]))
        elif event.type == pygame.MOUSEMOTION and self.scrubbing and self.layout is not None:
            st.seek_frame(self.layout.frame_at(event.pos[0]))
        elif event.type == pygame.MOUSEBUTTONUP and event.button == 1:
            self.scrubbing = False

    def press(self, key: str, shift: bool = False) -> None:
        """Handle a key by its pygame constant's name ("space", "right", "r"...): for tests."""
        import pygame
        code = getattr(pygame, "K_" + key, None)
        if code is None:
            code = getattr(pygame, "K_" + key.upper())
        self.handle(pygame.event.Event(pygame.KEYDOWN, key=code, mod=pygame.KMOD_SHIFT if shift else 0))

    def mouse(self, kind: str, x: float, y: float) -> None:
        """Handle a left-button mouse event ("down", "move" or "up") at (x, y): for tests."""
        import pygame
        etype = {"down": pygame.MOUSEBUTTONDOWN, "move": pygame.MOUSEMOTION, "up": pygame.MOUSEBUTTONUP}[kind]
        extra = {"rel": (0, 0), "buttons": (1, 0, 0)} if kind == "move" else {"button": 1}
        self.handle(pygame.event.Event(etype, pos=(int(x), int(y)), **extra))

    def render(self, fonts) -> None:
        """Draw the window (and remember the timeline's place for the mouse)."""
        self.layout = draw_view(self.screen, self.state, fonts)

    def run(self, fps: int = 60) -> None:
        """The window loop: events, playback at 30 updates a second (1/4 in slow motion), drawing."""
        import time
        pygame = _pygame()
        pygame.display.init()
        if self.screen is None:
            self.screen = pygame.display.set_mode(self.size, pygame.RESIZABLE)
        pygame.display.set_caption("scuffle: clip viewer (H for help)")
        fonts = Fonts()
        clock = pygame.time.Clock()
        acc, last = 0.0, time.perf_counter()
        try:
            while self.running:
                for event in pygame.event.get():
                    if event.type == pygame.VIDEORESIZE:
                        self.screen = pygame.display.set_mode(event.size, pygame.RESIZABLE)
                    self.handle(event)
                now = time.perf_counter()
                real, last = min(now - last, 0.25), now
                if self.state.playing and not self.scrubbing:
                    acc += real * (0.25 if self.state.slow else 1.0)
                    while acc >= F.DT and self.state.playing:
                        self.state.tick()
                        acc -= F.DT
                else:
                    acc = 0.0
                self.render(fonts)
                pygame.display.flip()
                if self.screenshot is not None:
                    with output_path(self.screenshot, "screenshot") as tmp:
                        pygame.image.save(self.screen, tmp)
                    print(f"view: saved {self.screenshot}")
                    self.running = False
                clock.tick(fps)
        finally:
            pygame.display.quit()


# ---------------------------------------------------------------- the command line


def parse_args(argv) -> argparse.Namespace:
    """The view command's arguments; usage errors exit through argparse (status 2)."""
    p = OneLineParser(
        prog="scuffle view",
        description="Play one clip on the skeleton (side and top views, timeline, bone mask). SOURCE is a "
                    "resource file, 'demo' (the demo move set) or DESCRIPTOR KEYFRAMES.",
        **examples("scuffle view demo --id 151", "scuffle view demo --id THROW_BACK --root-motion",
                   "scuffle view chars.res --id 408", "scuffle view walk.desc walk.keys --rate 0.75",
                   "scuffle view chars.res --id 151 --headless --out out/view"))
    p.add_argument("source", nargs="+", metavar="SOURCE", help="RESOURCE, demo, or DESCRIPTOR KEYFRAMES")
    p.add_argument("--id", type=anim_ref, dest="anim_id", metavar="ID",
                   help="the anim id to show first (a set): a number 0 to 2^31 - 1, or a clip's name")
    p.add_argument("--rate", type=float, metavar="R",
                   help="play at R instead of the clip's rate (its id's range flags through CfgAnimSpeeds; "
                        "1.0 for a pair)")
    p.add_argument("--root-motion", action="store_true", help="start with root motion on (default: in place)")
    p.add_argument("--headless", action="store_true",
                   help="write the pictures to --out instead of opening a window")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"headless: output directory (default {DEFAULT_OUT})")
    p.add_argument("--all", action="store_true", help="headless: the pictures of every clip of the set")
    p.add_argument("--size", default=f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}", metavar="WxH",
                   help="window / picture size WxH (default %(default)s)")
    p.add_argument("--screenshot", metavar="PNG", help="window: save the first frame there, then quit")
    a = p.parse_args(argv)
    from scuffle.demo.cli import MAX_SIZE, parse_size
    size = parse_size(a.size, (900, 560))
    if size is None:
        p.error(f"--size {a.size!r}: WxH, from 900x560 to {MAX_SIZE[0]}x{MAX_SIZE[1]}")
    a.size = size
    if len(a.source) > 2:
        p.error("SOURCE: one resource file, 'demo', or DESCRIPTOR KEYFRAMES (two paths)")
    return a


def main(argv=None) -> int:
    """``scuffle view``: 0 on success, 2 with one line on stderr for a bad source."""
    try:
        a = parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        entries, start = load_source(a.source, a.anim_id, a.rate)
        why = None
        if not a.headless:
            from scuffle.demo.cli import no_display
            why = no_display()
        if a.headless or why:
            if why:
                print(f"view: no display ({why}); writing pictures instead", file=sys.stderr)
            paths = run_headless(entries, start, a.out, all_clips=a.all, root_motion=a.root_motion, size=a.size)
            for p in paths:
                print(f"view: wrote {p}")
            return 0
    except (ViewError, OutputError) as exc:
        print(f"scuffle view: error: {exc}", file=sys.stderr)
        return 2
    pygame = _pygame()
    from scuffle.demo.cli import offscreen_driver
    from scuffle.demo.quiet import sdl_quiet
    try:
        with sdl_quiet():                  # SDL's noise while it looks for a driver
            pygame.display.init()
            screen = pygame.display.set_mode(a.size, pygame.RESIZABLE)
        got = offscreen_driver(pygame)     # SDL's fallback when DISPLAY cannot be reached
        if got:
            raise pygame.error(f"SDL gave the {got!r} video driver")
    except pygame.error as e:
        pygame.display.quit()
        print(f"view: no display (pygame.display: {e}); writing pictures instead", file=sys.stderr)
        try:
            paths = run_headless(entries, start, a.out, all_clips=a.all, root_motion=a.root_motion, size=a.size)
        except (ViewError, OutputError) as exc:
            print(f"scuffle view: error: {exc}", file=sys.stderr)
            return 2
        for p in paths:
            print(f"view: wrote {p}")
        return 0
    state = ViewerState(entries, start, root_motion=a.root_motion)
    ViewerApp(state, a.size, screen, a.screenshot).run()
    return 0
