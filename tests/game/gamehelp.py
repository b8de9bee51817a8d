"""Shared helpers for the runtime tests: synthetic clips, scenario TOML, the CLI, esper clean-up.

In: nothing from the disc; every clip is authored (anim.data.clip.author_clip).
"""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path


from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, encode_clip
from scuffle.anim.data.rangelist import author_range

REPO = Path(__file__).resolve().parents[2]
IDLE = 388

def turn_quat(deg: float) -> tuple[float, float, float, float]:
    """A quaternion turning ``deg`` degrees about z (x, y, z, w)."""
    h = math.radians(deg) / 2
    return (0.0, 0.0, math.sin(h), math.cos(h))

def clip(frames: int, name: str = "c", **kw):
    """An authored clip of ``frames`` frames (author_clip's keywords)."""
    return author_clip(name, frames, **kw)

def still(frames: int = 60, name: str = "idle"):
    """A clip with no channels (no root motion)."""
    return author_clip(name, frames)

def make_set(clips: dict, flags: dict | None = None, name: str = "s") -> AnimSet:
    """An AnimSet from {id: clip} and {id: range flags}."""
    flags = flags or {}
    return AnimSet.build(clips, {i: author_range(flags=f) for i, f in flags.items()}, name=name)

def clip_toml(set_name: str, anim_id: int, c, flags: int | None = None) -> str:
    """One ``[[sets.NAME.clips]]`` table with the clip's chunks as hex."""
    d, k = encode_clip(c)
    out = f'[[sets.{set_name}.clips]]\nid = {anim_id}\ndescriptor = "{d.hex()}"\nkeyframes = "{k.hex()}"\n'
    if flags is not None:
        out += f"range = {{ flags = 0x{flags:x} }}\n"
    return out

def human_toml(name: str, set_name: str = "s", **extra) -> str:
    out = f'[[humans]]\nname = "{name}"\nset = "{set_name}"\n'
    for k, v in extra.items():
        out += f"{k} = {json.dumps(v)}\n"
    return out

def command_toml(update: int, human: str, **keys) -> str:
    out = f'[[commands]]\nupdate = {update}\nhuman = "{human}"\n'
    for k, v in keys.items():
        out += f"{k} = {json.dumps(v)}\n"
    return out

def run_cli(*args, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    """``scuffle ARGS`` in this process (tests/scuffle_cli.py), text output captured."""
    from scuffle_cli import run_scuffle
    return run_scuffle(*args, cwd=cwd or REPO)

def read_trace(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]

def by_human(records: list[dict], name: str) -> list[dict]:
    return [r for r in records if r["human"] == name]

def clip_length(records: list[dict], anim_id: int, next_id: int) -> int:
    """Updates from the first record showing ``anim_id`` to the first showing ``next_id``."""
    first = next(r["update"] for r in records if r["anim"] == anim_id)
    return next(r["update"] for r in records if r["anim"] == next_id and r["update"] > first) - first


def event_game(n: int = 6):
    """A Game of ``n`` humans looping clips with events: the odd ones clip 1 (a sound at
    frame 2, an effect 9 at frame 5), the even ones clip 2 (a camera shake at frame 1)."""
    from scuffle.anim.data.clip import EventType, make_event
    from scuffle.game.runtime.world import Game

    events = [make_event(2, EventType.SOUND, word=7), make_event(5, EventType.EFFECT_9)]
    s = make_set({1: clip(12, "a", events=events), 2: clip(9, "b", events=[make_event(1, EventType.CAMERA_SHAKE)])})
    g = Game()
    for i in range(n):
        g.add_human(f"h{i}", s, (2.0 * i, 0.0, 0.0))
        inst = g.instance(f"h{i}")
        g.player.change(inst, g.player.loop(inst, 1 if i % 2 else 2), 0.0)
    return g


def ai_fight(seed: int = 3, health: float = 8.0, engine: str = "compiled"):
    """Two fighters under the fight rules with rounds and K.O.s, both driven by AIs."""
    from scuffle.game.fighters.ai import FighterAI
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.fighters.moves import Move
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game
    g = Game(engine=engine)
    aset = demo_set()
    g.add_human("p1", aset, position=(0.0, -1.5, 0.0), heading=0.0, health=health)
    g.add_human("p2", aset, position=(0.0, 1.5, 0.0), heading=180.0, health=health)
    fight = Fight(g, separate=True, rounds=True, round_pause=10)
    for name in ("p1", "p2"):
        g.change(name, g.player.loop(g.instance(name), int(Move.FIGHT_IDLE)))
    fight.controllers.append(FighterAI("p1", "p2", seed=seed + 7))
    fight.controllers.append(FighterAI("p2", "p1", seed=seed))
    return g


def traced(game, updates: int) -> str:
    """``updates`` updates of ``game``, their trace records (poses included) as text."""
    import io
    from scuffle.game.runtime.trace import iter_trace_records, write_records
    out = io.StringIO()
    for _ in range(updates):
        game.step()
        write_records(out, iter_trace_records(game, pose=True))
    return out.getvalue()
