"""Drawing the demo: a snapshot of the world, then pure functions that paint it on a Surface.

``snapshot(sim)`` reads everything the picture needs out of the running Game (world-space
bone points, bodies, health, task stacks, held flags, events, the fight state) into plain
data; ``lerp_scene(a, b, t)`` blends two snapshots for rendering between two 30 Hz
updates; ``draw_scene(surface, scene, fonts, camera)`` paints the top-down arena, the
side-view inset and the HUD. Nothing here changes the simulation.

Model space (game.ctx.bone_pos, (3, 34, N): one column per human, PoseRef.row) is x right, y forward,
z up; world = body position + Rz(heading) . model, heading in degrees counter-clockwise
seen from above, 0 facing +y. The arena is seen from above: world x to the right,
world y up the screen.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pygame

from scuffle.anim.maths.skeleton import HUMANOID, PARENTS, Bone
from scuffle.anim.playback.tasks import HeldFlags, TaskType
from scuffle.components import Body, Combat, HumanRecord, PoseRef
from scuffle.game.fighters.combat import FightFlags, FightState
from scuffle.game.fighters.moves import Move
from scuffle.systems.motion import to_world

__all__ = ["FighterView", "Scene", "Camera", "Fonts", "snapshot", "lerp_scene", "draw_scene",
           "draw_arena", "draw_inset", "draw_hud", "draw_help", "draw_log", "draw_status", "draw_counts", "fit_camera", "flag_names",
           "HELP_LINES", "ARENA_FRACTION", "close_camera", "mode_of", "draw_arena_only", "caption_lines", "draw_tile",
           "action_caption", "CAPTION_UPDATES", "status_text", "rewind_banner"]

# ---------------------------------------------------------------- look

BG = (18, 20, 26)
FLOOR = (34, 38, 46)
GRID = (48, 54, 64)
GRID_MAJOR = (62, 70, 84)
PANEL = (24, 27, 34)
PANEL_EDGE = (60, 66, 80)
TEXT = (222, 226, 234)
DIM = (140, 148, 162)
ACCENT = (255, 214, 90)
GOOD = (90, 210, 120)
BAD = (230, 80, 70)
FIGHTER_COLOURS = ((90, 175, 255), (255, 128, 80), (150, 220, 120), (220, 140, 255))
ARENA_FRACTION = 0.6          # the arena's share of the window's width; the HUD takes the rest

# Bones drawn as limbs (thick) and as face details (thin); the rest of 2-33 are drawn thin too.
_LEFT = {16, 17, 18, 19, 20, 21, 28, 29, 30}
_RIGHT = {22, 23, 24, 25, 26, 27, 31, 32, 33}
_FACE = set(range(7, 15))
_TIPPED = (Bone.L_FOOT, Bone.R_FOOT, Bone.L_HAND, Bone.R_HAND, 15)
_SEGMENTS = tuple((PARENTS[b], b) for b in range(2, len(PARENTS)) if PARENTS[b] > 0 and b not in _FACE)

# Task type names for the HUD (TaskType names, shortened).
_TYPE_NAMES = {t: t.name.lower() for t in TaskType}

# Anim id names for the HUD: the Move enum.
_MOVE_NAMES = {int(m): m.name.lower() for m in Move}

HELP_LINES = (
    ("Arrows / WASD", "move (hold Shift to jog)"),
    ("J", "strike (again in recovery: chain; in a hold: grab strike)"),
    ("K", "grab"),
    ("L", "throw from a hold (cycles side / back / hip)"),
    ("U", "let go"),
    ("F", "face the opponent"),
    ("P", "pause"),
    ("N", "single step while paused"),
    ("M", "slow motion (1/4 speed)"),
    ("R (hold)", "rewind, up to 10 s; release to play on"),
    ("T", "attract mode: AI against AI"),
    ("Tab", "side-view inset: next fighter"),
    ("F12", "save a screenshot"),
    ("H / F1", "this help"),
    ("Esc", "quit"),
)


def flag_names(flags: int) -> list[str]:
    """Names of the set FightFlags bits (and the other known held bits) of record +0x08."""
    names = [f.name for f in FightFlags if f.value and flags & f.value == f.value]
    for f in (HeldFlags.REPLACED, HeldFlags.START_CLIP, HeldFlags.REPORT, HeldFlags.START_CLIP_2,
              HeldFlags.ANIM_STATE):
        if flags & f.value:
            names.append(f.name)
    return names


def anim_name(anim_id: int) -> str:
    return _MOVE_NAMES.get(int(anim_id), "")


# ---------------------------------------------------------------- the snapshot


@dataclass
class FighterView:
    """What the renderer knows about one human for one update."""

    name: str
    colour: tuple[int, int, int]
    position: np.ndarray                  # (3,) world
    heading: float                        # degrees
    points: np.ndarray                    # (34, 3) world bone positions
    tips: np.ndarray                      # (34, 3) world bone tips
    model_points: np.ndarray              # (34, 3) model space (the inset)
    model_tips: np.ndarray                # (34, 3)
    health: float
    max_health: float
    state: str
    partner: str = ""
    role: str = ""
    anim_id: int = -1
    flags: int = 0
    tasks: list = field(default_factory=list)       # Task.trace() dicts, bottom to top
    gait: dict | None = None                        # the gait task's trace, if on the stack
    events: list = field(default_factory=list)      # recent events: (update, text)
    controller: str = ""
    speed: float = 0.0                              # |velocity| in the ground plane, m/s
    grab_radius: float = 0.0                        # > 0 while a grab searches
    clip_name: str = ""                             # the playing clip's name in the human's set


@dataclass
class Scene:
    """One picture's worth of state."""

    update: int
    fighters: list[FighterView]
    stats: dict
    log: list = field(default_factory=list)          # recent fight log lines
    mode: str = ""                                   # "ATTRACT" / "PLAYER"
    paused: bool = False
    slow: bool = False
    show_help: bool = False
    inset: int = 0                                   # which fighter the side view shows
    seed: int = 0
    fps: float = 0.0
    action: str = ""                                 # the latest grab, strike, throw or fall (action_caption)
    rewind: float | None = None                      # while R is held: seconds gone back (<= 0), else None
    ring: float = 0.0                                # seconds the rewind ring can go back now

    @property
    def seconds(self) -> float:
        return self.update / 30.0


def snapshot(sim) -> Scene:
    """Read the picture out of a demo simulation (``demo.app.DemoSim``) after an update."""
    game, fight = sim.game, sim.fight
    ctx = game.ctx
    pos_all, rot_all = ctx.bone_pos, ctx.bone_rot
    tips_all = HUMANOID.tip_positions(pos_all, rot_all) if pos_all is not None else None
    names = {e: n for n, e in game.humans()}
    views = []
    for i, (name, ent) in enumerate(game.humans()):
        body = game.component(ent, Body)
        com = game.component(ent, Combat)
        rec = game.component(ent, HumanRecord)
        row = game.component(ent, PoseRef).row
        if pos_all is not None and row >= 0:
            mp = np.asarray(pos_all[:, :, row].T, dtype=np.float64)
            mt = np.asarray(tips_all[:, :, row].T, dtype=np.float64)
        else:
            mp, _ = HUMANOID.reference_model_space()
            mt = mp.copy()
        position = np.array(body.position, dtype=np.float64)
        inst = game.instance(name)
        tasks = [dict(t.trace(), duration=float(t.duration()), rate=float(t.rate)) for t in inst.stack]
        gait = next((d for d in tasks if d["type"] == TaskType.GAIT), None)
        radius = 0.0
        if com.state == FightState.GRABBING:
            radius = float(inst.anim_set.range(Move.GRAB_ATTEMPT).far) * 1.25
        views.append(FighterView(
            name=name, colour=FIGHTER_COLOURS[i % len(FIGHTER_COLOURS)], position=position,
            heading=float(body.heading), points=to_world(mp, position, body.heading),
            tips=to_world(mt, position, body.heading), model_points=mp, model_tips=mt,
            health=float(com.health), max_health=float(com.max_health), state=str(com.state),
            partner=names.get(com.partner, ""), role=com.role, anim_id=int(rec.anim_id),
            flags=int(rec.held), tasks=tasks, gait=gait, events=list(sim.recent_events.get(name, ())),
            controller=sim.controller_of(name), speed=float(np.hypot(*body.velocity[:2])),
            grab_radius=radius, clip_name=_clip_name(inst.anim_set, int(rec.anim_id))))
    st = fight.stats
    stats = {"grabs": st.grabs, "strikes": st.strikes, "throws": st.throws, "damage": st.damage,
             "refused": st.refused}
    recent = list(st.log)[-12:]
    log = [_log_line(item) for item in recent[-6:]]
    return Scene(update=game.update, fighters=views, stats=stats, log=log,
                 mode=mode_of(sim), paused=getattr(sim, "paused", False),
                 slow=getattr(sim, "slow", False), seed=sim.seed,
                 action=action_caption(recent, game.update - 1))


def _clip_name(anim_set, anim_id: int) -> str:
    """The name of ``anim_id``'s clip in the set ('' for none): a scenario's set names its
    own clips, which need not be the demo's moves."""
    if anim_id < 0 or anim_id >= anim_set.num_ids:
        return ""
    return anim_set.name_of(anim_id)


CAPTION_UPDATES = 45               # a caption stays 1.5 s after its action


def _move(anim_id) -> str:
    name = anim_name(int(anim_id))
    return f"{int(anim_id)} {name}" if name else str(int(anim_id))


def action_caption(log, update: int) -> str:
    """The caption of the latest grab, strike, throw, fall or K.O. of a fight log
    (FightStats.log entries: update, human, what, ...) within CAPTION_UPDATES of
    ``update``: "p2 throws p1 (149 THROW_SIDE)", "p1 grabs p2", "p1 strikes p2 (11
    JAB, -5)", "p1 falls", "p2 knocks out p1"; '' when nothing happened lately."""
    for entry in reversed(list(log)):
        u, who, what, *extra = entry
        if update - u > CAPTION_UPDATES:
            break
        if what == "throw":
            victim = f" {extra[1]}" if len(extra) > 1 else ""
            return f"{who} throws{victim} ({_move(extra[0])})"
        if what == "throw_release":
            return f"{extra[0]} falls (thrown by {who})"
        if what == "ko":
            return f"{extra[0]} knocks out {who}"
        if what == "grab_connect":
            return f"{who} grabs {extra[0]}"
        if what == "hit":
            return f"{who} strikes {extra[0]} (-{float(extra[1]):g})"
        if what in ("strike", "grab_strike"):
            return f"{who} strikes ({_move(extra[0])})"
        if what == "grab":
            return f"{who} reaches for a grab"
        if what == "partner_left" and extra and extra[0] == "fall":
            return f"{who} falls"
    return ""


def mode_of(sim) -> str:
    """The status line's mode: who drives p1, the round, and K.O. while a round is over."""
    fight = sim.fight
    mode = getattr(sim, "mode_label", None) or ("ATTRACT" if sim.attract else "PLAYER")
    return mode + f"  round {fight.stats.round}" + ("  K.O." if getattr(fight, "round_over", False) else "")


def _log_line(item) -> str:
    update, who, what, *extra = item
    tail = " ".join(str(int(x)) if isinstance(x, float) and float(x).is_integer() else str(x) for x in extra)
    return f"{update / 30.0:6.2f}s  {who} {what} {tail}".rstrip()


def _lerp_angle(a: float, b: float, t: float) -> float:
    d = math.fmod(b - a + 540.0, 360.0) - 180.0
    return a + d * t


def lerp_scene(a: Scene | None, b: Scene, t: float) -> Scene:
    """``b`` with the fighters' geometry blended from ``a`` by ``t`` (0 = a, 1 = b).

    A fighter whose body jumped (a snap to the hold, more than 1 m) is not blended.
    """
    if a is None or t >= 1.0 or len(a.fighters) != len(b.fighters):
        return b
    t = max(0.0, float(t))
    out = []
    for fa, fb in zip(a.fighters, b.fighters):
        if float(np.linalg.norm(fb.position - fa.position)) > 1.0:
            out.append(fb)
            continue
        out.append(replace(
            fb, position=fa.position + (fb.position - fa.position) * t,
            heading=_lerp_angle(fa.heading, fb.heading, t),
            points=fa.points + (fb.points - fa.points) * t, tips=fa.tips + (fb.tips - fa.tips) * t,
            model_points=fa.model_points + (fb.model_points - fa.model_points) * t,
            model_tips=fa.model_tips + (fb.model_tips - fa.model_tips) * t))
    return replace(b, fighters=out)


# ---------------------------------------------------------------- camera and fonts


@dataclass
class Camera:
    """World point at the arena's centre and pixels per metre."""

    centre: np.ndarray = field(default_factory=lambda: np.zeros(2))
    scale: float = 110.0

    def to_screen(self, rect: pygame.Rect, xy) -> tuple[float, float]:
        return (rect.centerx + (float(xy[0]) - self.centre[0]) * self.scale,
                rect.centery - (float(xy[1]) - self.centre[1]) * self.scale)


def fit_camera(scene: Scene, rect: pygame.Rect, camera: Camera | None = None, ease: float = 1.0) -> Camera:
    """A camera on the fighters' midpoint, zoomed to keep them in view (eased toward it)."""
    if not scene.fighters:
        return camera or Camera()
    xy = np.array([f.position[:2] for f in scene.fighters])
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    centre = (lo + hi) / 2.0
    span = max(float(hi[0] - lo[0]) * rect.h / max(rect.w, 1), float(hi[1] - lo[1])) + 2.6
    scale = min(max(rect.h * 0.8 / max(span, 3.0), 45.0), 185.0)
    if camera is None or ease >= 1.0:
        return Camera(centre=centre, scale=scale)
    return Camera(centre=camera.centre + (centre - camera.centre) * ease,
                  scale=camera.scale + (scale - camera.scale) * ease)


class Fonts:
    """The HUD's fonts (a monospaced one when the system has it, else pygame's default)."""

    def __init__(self, size: int = 16):
        if not pygame.font.get_init():
            pygame.font.init()
        path = None
        try:
            path = pygame.font.match_font("dejavusansmono,liberationmono,menlo,consolas,couriernew,monospace")
        except Exception:  # pragma: no cover - fontconfig trouble
            path = None
        self.mono = pygame.font.Font(path, size)
        self.mono_bold = pygame.font.Font(path, size)
        self.mono_bold.set_bold(True)
        self.small = pygame.font.Font(path, size - 2)
        self.big = pygame.font.Font(None, size + 13)
        self.title = pygame.font.Font(None, size + 5)
        self.line = self.mono.get_linesize()


def _text(surface, font, s: str, pos, colour=TEXT, anchor: str = "topleft") -> pygame.Rect:
    img = font.render(s, True, colour)
    r = img.get_rect(**{anchor: (int(pos[0]), int(pos[1]))})
    surface.blit(img, r)
    return r


def _shade(c, k: float) -> tuple[int, int, int]:
    return tuple(int(min(255, max(0, v * k))) for v in c)


def _mix(a, b, t: float) -> tuple[int, int, int]:
    return tuple(int(a[i] + (b[i] - a[i]) * t) for i in range(3))


# ---------------------------------------------------------------- the arena


def draw_scene(surface: pygame.Surface, scene: Scene, fonts: Fonts, camera: Camera | None = None) -> Camera:
    """Paint the whole picture; returns the camera used."""
    w, h = surface.get_size()
    arena = pygame.Rect(0, 0, int(w * ARENA_FRACTION), h)
    hud = pygame.Rect(arena.right, 0, w - arena.right, h)
    surface.fill(BG)
    camera = camera or fit_camera(scene, arena)
    draw_arena(surface, arena, scene, fonts, camera)
    inset = pygame.Rect(arena.x + 10, arena.bottom - 232, 210, 190)
    if scene.fighters:
        draw_inset(surface, inset, scene.fighters[scene.inset % len(scene.fighters)], fonts)
    draw_log(surface, pygame.Rect(inset.right + 10, inset.y + 80, arena.w - inset.w - 30, 110), scene, fonts)
    draw_status(surface, pygame.Rect(arena.x, arena.bottom - 32, arena.w, 32), scene, fonts)
    draw_counts(surface, arena, scene, fonts)
    draw_hud(surface, hud, scene, fonts)
    if scene.show_help:
        draw_help(surface, fonts)
    return camera


def draw_arena(surface: pygame.Surface, rect: pygame.Rect, scene: Scene, fonts: Fonts, camera: Camera,
               bars: bool = True) -> None:
    """The floor grid, the shadows, the skeletons from above, facing markers, names and
    health (and, with ``bars``, the health bars along the top edge)."""
    prev_clip = surface.get_clip()
    surface.set_clip(rect)
    surface.fill(FLOOR, rect)
    _grid(surface, rect, camera)
    fighters = scene.fighters
    for f in fighters:
        _shadow(surface, rect, camera, f)
    for f in fighters:
        if f.grab_radius > 0:
            c = camera.to_screen(rect, f.position)
            pygame.draw.circle(surface, _shade(f.colour, 0.55), c, max(2, int(f.grab_radius * camera.scale)), 1)
    by_name = {f.name: f for f in fighters}
    for f in fighters:
        if f.partner and f.role == "attacker" and f.partner in by_name:
            a = camera.to_screen(rect, f.points[Bone.PELVIS])
            b = camera.to_screen(rect, by_name[f.partner].points[Bone.PELVIS])
            pygame.draw.line(surface, ACCENT, a, b, 1)
    for f in fighters:
        _facing_marker(surface, rect, camera, f)
    segs = []
    for f in fighters:
        segs.extend(_segments(f))
    segs.sort(key=lambda s: s[0])
    grow = 1 if camera.scale >= 140 else 0
    for z, a, b, colour, width in segs:
        pa, pb = camera.to_screen(rect, a), camera.to_screen(rect, b)
        pygame.draw.line(surface, colour, pa, pb, width + grow)
    for f in fighters:
        for b in (Bone.L_HAND, Bone.R_HAND, Bone.L_FOOT, Bone.R_FOOT):
            col = _shade(f.colour, 0.72) if b in _LEFT else _mix(f.colour, (255, 255, 255), 0.35)
            pygame.draw.circle(surface, col, camera.to_screen(rect, f.tips[b]), 3 + grow)
    for f in fighters:
        _head(surface, rect, camera, f)
    for f in fighters:
        _label(surface, rect, camera, f, fonts)
    if bars:
        _health_bars(surface, rect, scene, fonts)
    if scene.rewind is not None:
        _action_banner(surface, rect, rewind_banner(scene), fonts, rect.y + (44 if bars else 6))
    elif scene.action:
        _action_banner(surface, rect, scene.action, fonts, rect.y + (44 if bars else 6))
    surface.set_clip(prev_clip)


def _action_banner(surface, rect: pygame.Rect, text: str, fonts: Fonts, top: int) -> None:
    """The action caption, centred on a dark band at ``top``."""
    img = fonts.mono_bold.render(text, True, ACCENT)
    band = pygame.Rect(0, 0, img.get_width() + 16, img.get_height() + 6)
    band.midtop = (rect.centerx, top)
    shade = pygame.Surface(band.size, pygame.SRCALPHA)
    shade.fill((0, 0, 0, 170))
    surface.blit(shade, band.topleft)
    surface.blit(img, (band.x + 8, band.y + 3))


def close_camera(scene: Scene, rect: pygame.Rect, margin: float = 1.0, max_scale: float = 150.0) -> Camera:
    """A camera cropped to the fighters: their midpoint, zoomed so that both, with
    ``margin`` metres around, fill ``rect`` (no closer than ``max_scale`` px/m)."""
    if not scene.fighters:
        return Camera()
    xy = np.array([f.position[:2] for f in scene.fighters])
    lo, hi = xy.min(axis=0) - margin, xy.max(axis=0) + margin
    centre = (lo + hi) / 2.0
    scale = min(rect.w / max(float(hi[0] - lo[0]), 0.1), rect.h / max(float(hi[1] - lo[1]), 0.1), max_scale)
    return Camera(centre=centre, scale=scale)


def draw_arena_only(surface: pygame.Surface, scene: Scene, fonts: Fonts, camera: Camera | None = None) -> Camera:
    """The arena alone filling the surface, no HUD and no health bars (the GIF's frames);
    returns the camera used."""
    rect = surface.get_rect()
    camera = camera or fit_camera(scene, rect)
    draw_arena(surface, rect, scene, fonts, camera, bars=False)
    return camera


def caption_lines(scene: Scene, round_no: int = 1, ko: bool = False) -> list[tuple[str, tuple[int, int, int]]]:
    """A picture's caption: the time and round, then one line per fighter (name, state,
    the playing move, health), each with its colour."""
    head = f"{scene.seconds:5.1f}s  round {round_no}" + ("  K.O." if ko else "")
    out = [(head, ACCENT)]
    for f in scene.fighters:
        move = f.clip_name.lower() or anim_name(f.anim_id) or str(f.anim_id)
        out.append((f"{f.name} {f.state:<9} {move:<12} {f.health:3.0f}", f.colour))
    return out


def draw_tile(surface: pygame.Surface, scene: Scene, fonts: Fonts, round_no: int = 1, ko: bool = False) -> None:
    """A contact sheet tile: the arena cropped around the fighters, with the caption
    (``caption_lines``) on a dark band below it."""
    w, h = surface.get_size()
    line = fonts.mono_bold.get_linesize()
    lines = caption_lines(scene, round_no, ko)
    band = line * len(lines) + 8
    arena = pygame.Rect(0, 0, w, h - band)
    surface.fill(BG)
    draw_arena(surface, arena, scene, fonts, close_camera(scene, arena), bars=False)
    y = arena.bottom + 4
    for text, colour in lines:
        _text(surface, fonts.mono_bold, text, (6, y), colour)
        y += line


def _grid(surface, rect, camera: Camera) -> None:
    s = camera.scale
    x0 = camera.centre[0] - rect.w / 2 / s
    x1 = camera.centre[0] + rect.w / 2 / s
    y0 = camera.centre[1] - rect.h / 2 / s
    y1 = camera.centre[1] + rect.h / 2 / s
    for gx in range(math.floor(x0), math.ceil(x1) + 1):
        sx = camera.to_screen(rect, (gx, 0))[0]
        pygame.draw.line(surface, GRID_MAJOR if gx % 5 == 0 else GRID, (sx, rect.top), (sx, rect.bottom), 1)
    for gy in range(math.floor(y0), math.ceil(y1) + 1):
        sy = camera.to_screen(rect, (0, gy))[1]
        pygame.draw.line(surface, GRID_MAJOR if gy % 5 == 0 else GRID, (rect.left, sy), (rect.right, sy), 1)
    o = camera.to_screen(rect, (0, 0))
    pygame.draw.circle(surface, GRID_MAJOR, o, 4, 1)


def _shadow(surface, rect, camera: Camera, f: FighterView) -> None:
    pelvis = f.points[Bone.PELVIS]
    height = max(0.0, float(pelvis[2]))
    grow = 1.0 + max(0.0, 1.0 - height) * 0.9          # a low pelvis (down) spreads the shadow
    w = max(4, int(0.62 * grow * camera.scale))
    h = max(3, int(0.40 * grow * camera.scale))
    shadow = pygame.Surface((w, h), pygame.SRCALPHA)
    pygame.draw.ellipse(shadow, (0, 0, 0, 95), shadow.get_rect())
    shadow = pygame.transform.rotate(shadow, f.heading)
    c = camera.to_screen(rect, pelvis)
    surface.blit(shadow, shadow.get_rect(center=(int(c[0]), int(c[1]))))


def _facing_marker(surface, rect, camera: Camera, f: FighterView) -> None:
    h = math.radians(f.heading)
    fwd = np.array([-math.sin(h), math.cos(h)])
    side = np.array([fwd[1], -fwd[0]])
    base = f.position[:2]
    ring = camera.to_screen(rect, base)
    pygame.draw.circle(surface, _shade(f.colour, 0.6), ring, max(3, int(0.42 * camera.scale)), 2)
    tip = base + fwd * 0.62
    left = base + fwd * 0.46 + side * 0.09
    right = base + fwd * 0.46 - side * 0.09
    pts = [camera.to_screen(rect, p) for p in (tip, left, right)]
    pygame.draw.polygon(surface, f.colour, pts)


def _segments(f: FighterView):
    """(mean z, a, b, colour, width) for each drawn bone; higher parts are drawn last."""
    out = []
    base = f.colour
    for p, b in _SEGMENTS:
        a, c = f.points[p], f.points[b]
        if b in _LEFT:
            col = _shade(base, 0.72)
        elif b in _RIGHT:
            col = _mix(base, (255, 255, 255), 0.35)
        else:
            col = _mix(base, (255, 255, 255), 0.15)
        z = float(a[2] + c[2]) / 2
        # Lighter the higher it is: the depth cue of a view from above.
        col = _mix(col, (255, 255, 255), min(max(z - 1.0, 0.0), 0.8) * 0.25)
        width = 4 if b in (3, 4, 5, 6) else 3
        out.append((z, a, c, col, width))
    for b in _TIPPED:
        if b == 15:
            continue
        a, c = f.points[b], f.tips[b]
        col = _shade(base, 0.72) if b in _LEFT else _mix(base, (255, 255, 255), 0.35)
        out.append((float(a[2] + c[2]) / 2, a, c, col, 4))
    return out


def _head(surface, rect, camera: Camera, f: FighterView) -> None:
    c = camera.to_screen(rect, (f.points[Bone.HEAD] + f.tips[15]) / 2)
    r = max(3, int(0.11 * camera.scale))
    pygame.draw.circle(surface, _mix(f.colour, (255, 255, 255), 0.45), c, r)
    pygame.draw.circle(surface, _shade(f.colour, 0.5), c, r, 2)
    nose = camera.to_screen(rect, f.points[9])
    pygame.draw.line(surface, _shade(f.colour, 0.4), c, nose, 2)


def _label(surface, rect, camera: Camera, f: FighterView, fonts: Fonts) -> None:
    x, cy = camera.to_screen(rect, f.position)
    top = min(min(camera.to_screen(rect, p)[1] for p in f.points[1:]), cy - 0.62 * camera.scale)
    y = top - 12
    r = _text(surface, fonts.mono_bold, f.name, (x, y), f.colour, "midbottom")
    bw = 56
    bar = pygame.Rect(0, 0, bw, 6)
    bar.midtop = (int(x), r.bottom + 2)
    pygame.draw.rect(surface, (60, 20, 20), bar)
    frac = max(0.0, f.health / f.max_health) if f.max_health else 0.0
    pygame.draw.rect(surface, _health_colour(frac), (bar.x, bar.y, int(bw * frac), bar.h))
    pygame.draw.rect(surface, (10, 10, 10), bar, 1)


def _health_colour(frac: float) -> tuple[int, int, int]:
    return _mix(BAD, GOOD, min(max(frac, 0.0), 1.0))


def _health_bars(surface, rect, scene: Scene, fonts: Fonts) -> None:
    """Fighting-game health bars along the arena's top edge."""
    n = len(scene.fighters)
    if not n:
        return
    margin, gap = 16, 24
    bw = (rect.w - 2 * margin - gap * (n - 1)) // n
    for i, f in enumerate(scene.fighters):
        x = rect.x + margin + i * (bw + gap)
        frac = max(0.0, f.health / f.max_health) if f.max_health else 0.0
        bar = pygame.Rect(x, rect.y + 34, bw, 14)
        pygame.draw.rect(surface, (50, 18, 18), bar)
        fill = pygame.Rect(bar.x, bar.y, int(bw * frac), bar.h)
        if i % 2:                                  # the right bar drains toward the centre
            fill.right = bar.right
        pygame.draw.rect(surface, _health_colour(frac), fill)
        pygame.draw.rect(surface, (230, 230, 230), bar, 1)
        label = f"{f.name}  {f.controller}"
        hp = f"{f.health:.0f}/{f.max_health:.0f}"
        if i % 2:
            _text(surface, fonts.title, label, (bar.right, rect.y + 10), f.colour, "topright")
            _text(surface, fonts.mono, hp, (bar.left, rect.y + 12), TEXT, "topleft")
        else:
            _text(surface, fonts.title, label, (bar.left, rect.y + 10), f.colour, "topleft")
            _text(surface, fonts.mono, hp, (bar.right, rect.y + 12), TEXT, "topright")
        if f.health <= 0:
            _text(surface, fonts.big, "K.O.", (bar.centerx, bar.bottom + 24), BAD, "midtop")


def _panel(surface, rect, title: str | None, fonts: Fonts, alpha: int = 215) -> None:
    box = pygame.Surface(rect.size, pygame.SRCALPHA)
    box.fill((*PANEL, alpha))
    surface.blit(box, rect)
    pygame.draw.rect(surface, PANEL_EDGE, rect, 1)
    if title:
        _text(surface, fonts.small, title, (rect.x + 6, rect.y + 4), DIM)


def draw_inset(surface: pygame.Surface, rect: pygame.Rect, f: FighterView, fonts: Fonts) -> None:
    """A side view of one skeleton in its own frame: forward (model y) right, up (z) up."""
    _panel(surface, rect, f"side view: {f.name}", fonts)
    ground = rect.bottom - 18
    s = (ground - rect.y - 30) / 2.0                    # 2 m of height fill the box
    cx = rect.centerx
    fy = float(f.model_points[Bone.PELVIS][1])
    pygame.draw.line(surface, GRID_MAJOR, (rect.x + 6, ground), (rect.right - 6, ground), 1)
    for k in range(-3, 4):
        x = cx + (k * 0.5) * s
        if rect.x + 4 < x < rect.right - 4:
            pygame.draw.line(surface, GRID, (x, ground), (x, ground + 4), 1)

    def p(v):
        return (cx + (float(v[1]) - fy) * s, ground - float(v[2]) * s)

    segs = []
    for a, b in _SEGMENTS:
        # Near side (the right, +x... seen from the fighter's right) drawn last.
        x = float(f.model_points[a][0] + f.model_points[b][0]) / 2
        col = _shade(f.colour, 0.65) if b in _LEFT else (_mix(f.colour, (255, 255, 255), 0.35)
                                                         if b in _RIGHT else f.colour)
        segs.append((x, f.model_points[a], f.model_points[b], col))
    for b in _TIPPED:
        if b == 15:
            continue
        col = _shade(f.colour, 0.65) if b in _LEFT else _mix(f.colour, (255, 255, 255), 0.35)
        segs.append((float(f.model_points[b][0]), f.model_points[b], f.model_tips[b], col))
    segs.sort(key=lambda t: t[0])
    for _, a, b, col in segs:
        pygame.draw.line(surface, col, p(a), p(b), 3)
    head = (f.model_points[Bone.HEAD] + f.model_tips[15]) / 2
    pygame.draw.circle(surface, _mix(f.colour, (255, 255, 255), 0.45), p(head), max(3, int(0.11 * s)))
    _text(surface, fonts.small, f"{f.anim_id} {anim_name(f.anim_id)}", (rect.x + 6, rect.bottom - 16), DIM)


def draw_log(surface: pygame.Surface, rect: pygame.Rect, scene: Scene, fonts: Fonts) -> None:
    """The last lines of the fight's log."""
    if not scene.log:
        return
    lines = scene.log[-5:]
    h = 22 + len(lines) * fonts.small.get_linesize()
    box = pygame.Rect(rect.x, rect.bottom - h, rect.w, h)
    _panel(surface, box, "fight log", fonts, alpha=170)
    y = box.y + 20
    for line in lines:
        _text(surface, fonts.small, line, (box.x + 6, y), DIM if " refused " in line else TEXT)
        y += fonts.small.get_linesize()


def draw_status(surface: pygame.Surface, rect: pygame.Rect, scene: Scene, fonts: Fonts) -> None:
    """The bottom line: time, update, mode, stats and the help hint."""
    bar = pygame.Surface(rect.size, pygame.SRCALPHA)
    bar.fill((10, 12, 16, 200))
    surface.blit(bar, rect)
    left, right = status_text(scene)
    _text(surface, fonts.mono, left, (rect.x + 10, rect.centery),
          ACCENT if scene.paused or scene.rewind is not None else TEXT, "midleft")
    _text(surface, fonts.mono, right, (rect.right - 10, rect.centery), DIM, "midright")


def status_text(scene: Scene) -> tuple[str, str]:
    """The bottom line's two texts (left, right): time, update, mode, pause, slow motion
    and, while R is held, the rewind ("<< REWIND -3.2 s"); the frame rate, how far R can
    rewind ("ring 6.8 s"; while rewinding, in the banner) and the help hint."""
    parts = [f"{scene.seconds:6.2f}s", f"#{scene.update}", scene.mode]
    if scene.rewind is not None:
        parts.append(rewind_banner(scene).split("   ")[0])
    if scene.paused:
        parts.append("PAUSED (N: step)")
    if scene.slow:
        parts.append("SLOW x1/4")
    ring = "" if scene.rewind is not None else f"ring {scene.ring:.1f} s   "   # rewinding: in the banner
    right = (f"{scene.fps:3.0f} fps   " if scene.fps > 0 else "") + ring + "H help"
    return "   ".join(parts), right


def rewind_banner(scene: Scene) -> str:
    """The rewind's caption: how far back this hold of R went and how far the ring still
    goes ("<< REWIND -3.2 s   ring 6.8 s"); "" when not rewinding."""
    if scene.rewind is None:
        return ""
    back = min(0.0, scene.rewind)
    return f"<< REWIND {'-' if back < 0 else ''}{abs(back):.1f} s   ring {scene.ring:.1f} s"


def draw_counts(surface: pygame.Surface, rect: pygame.Rect, scene: Scene, fonts: Fonts) -> None:
    """The fight's counts under the health bars."""
    st = scene.stats
    line = (f"grabs {st['grabs']}   strikes {st['strikes']}   throws {st['throws']}   "
            f"damage {st['damage']:.0f}")
    _text(surface, fonts.small, line, (rect.centerx, rect.y + 54), DIM, "midtop")


# ---------------------------------------------------------------- the HUD


def draw_hud(surface: pygame.Surface, rect: pygame.Rect, scene: Scene, fonts: Fonts) -> None:
    """Per fighter: state, held flags, gait, the task stack and the last events."""
    surface.fill(PANEL, rect)
    pygame.draw.line(surface, PANEL_EDGE, rect.topleft, rect.bottomleft, 2)
    n = max(1, len(scene.fighters))
    h = rect.h // n
    for i, f in enumerate(scene.fighters):
        _fighter_block(surface, pygame.Rect(rect.x + 12, rect.y + i * h + 8, rect.w - 20, h - 12), f, fonts)
        if i:
            pygame.draw.line(surface, PANEL_EDGE, (rect.x + 8, rect.y + i * h), (rect.right - 8, rect.y + i * h), 1)


def _fighter_block(surface, rect: pygame.Rect, f: FighterView, fonts: Fonts) -> None:
    lh = fonts.line
    x, y = rect.x, rect.y
    r = _text(surface, fonts.title, f.name, (x, y), f.colour)
    _text(surface, fonts.small, f"  {f.controller}", (r.right, y + 3), DIM)
    state = f.state.upper()
    if f.partner:
        state += f"  {f.role} of {f.partner}" if f.role == "victim" else f"  {f.role}, {f.partner}"
    _text(surface, fonts.mono_bold, state, (rect.right, y + 2), ACCENT if f.state != "free" else GOOD, "topright")
    y += lh + 6
    names = flag_names(f.flags)
    r = _text(surface, fonts.mono, f"held 0x{f.flags:08x}", (x, y), TEXT)
    _text(surface, fonts.mono, " ".join(names) if names else "-", (r.right + 14, y), ACCENT if names else DIM)
    y += lh
    _text(surface, fonts.mono, f"anim {f.anim_id} {anim_name(f.anim_id)}", (x, y), TEXT)
    if f.gait is not None:
        g = f.gait
        gtxt = f"gait {g['value']:.2f} -> {g['target']:.0f}  {g['lower']}/{g['upper']}"
        _text(surface, fonts.mono, gtxt, (rect.right, y), ACCENT, "topright")
    else:
        _text(surface, fonts.mono, "gait -", (rect.right, y), DIM, "topright")
    y += lh
    _text(surface, fonts.mono, f"pos {f.position[0]:+.2f} {f.position[1]:+.2f}  hdg {f.heading:+6.1f}",
          (x, y), DIM)
    _text(surface, fonts.mono, f"speed {f.speed:4.2f} m/s", (rect.right, y), DIM, "topright")
    y += lh + 6
    # The task stack, top first.
    cols = (x, x + 26, x + 178, x + 230, x + 300, x + 352)
    for cx, head in zip(cols, ("#", "type", "id", "time", "frame", "rate")):
        _text(surface, fonts.small, head, (cx, y), DIM)
    y += fonts.small.get_linesize() + 1
    events_h = lh * 6 + 8
    room = max(1, (rect.bottom - events_h - y) // lh)
    tasks = list(reversed(f.tasks))
    shown = tasks[:room]
    bar_x, bar_w = x + 402, rect.right - (x + 402)
    for k, d in enumerate(shown):
        tname = _TYPE_NAMES.get(d["type"], str(d["type"]))
        colour = TEXT if k == 0 else DIM
        cells = (f"{len(tasks) - 1 - k}", f"{d['type']:2d} {tname}", f"{d['id']:4d}", f"{d['time']:6.3f}",
                 f"{d['frame']:4d}", f"{d.get('rate', 1.0):4.2f}")
        for cx, cell in zip(cols, cells):
            _text(surface, fonts.mono, cell, (cx, y), colour)
        dur = d.get("duration", 0.0)
        if bar_w > 20:
            frac = min(max(d["time"] / dur, 0.0), 1.0) if dur > 0 else 0.0
            if d["type"] == TaskType.FADE:
                frac = 1.0 - d.get("weight", 0.0)
            bar = pygame.Rect(bar_x, y + lh // 2 - 3, bar_w, 6)
            pygame.draw.rect(surface, (44, 48, 58), bar)
            pygame.draw.rect(surface, _shade(f.colour, 1.0 if k == 0 else 0.6),
                             (bar.x, bar.y, int(bar.w * frac), bar.h))
        y += lh
    if len(tasks) > len(shown):
        _text(surface, fonts.small, f"   ... {len(tasks) - len(shown)} more", (x, y), DIM)
        y += lh
    # The last events.
    y = rect.bottom - events_h
    _text(surface, fonts.small, "last events (newest first)", (x, y), DIM)
    y += fonts.small.get_linesize() + 1
    evs = f.events[-5:]
    if not evs:
        _text(surface, fonts.mono, "-", (x, y), DIM)
    for k, (upd, txt) in enumerate(reversed(evs)):
        _text(surface, fonts.mono, f"{upd / 30.0:6.2f}s {txt}", (x, y), TEXT if k == 0 else DIM)
        y += lh


def draw_help(surface: pygame.Surface, fonts: Fonts, lines=HELP_LINES, title: str = "Controls") -> None:
    """A key help overlay of (key, what) ``lines``, centred on the window."""
    HELP_LINES = lines
    w, h = surface.get_size()
    lh = fonts.mono.get_linesize() + 2
    key_w = max(fonts.mono_bold.size(k)[0] for k, _ in HELP_LINES) + 24
    text_w = max(fonts.mono.size(t)[0] for _, t in HELP_LINES)
    box = pygame.Rect(0, 0, min(w - 20, 48 + key_w + text_w), 70 + lh * len(HELP_LINES))
    box.center = (w // 2, h // 2)
    shade = pygame.Surface((w, h), pygame.SRCALPHA)
    shade.fill((0, 0, 0, 120))
    surface.blit(shade, (0, 0))
    _panel(surface, box, None, fonts, alpha=240)
    _text(surface, fonts.big, title, (box.x + 20, box.y + 14), ACCENT)
    y = box.y + 52
    for key, what in HELP_LINES:
        _text(surface, fonts.mono_bold, key, (box.x + 24, y), TEXT)
        _text(surface, fonts.mono, what, (box.x + 24 + key_w, y), DIM)
        y += lh
