"""The Player by composition: the look-up, the builders, the stack rules and the prepared
commands are parts it owns, each over the stores; its public surface is theirs, unchanged;
game/ reaches the engine through the Player's and the Game's public surface only."""
from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

from scuffle import Game, demo_set
from scuffle.anim.playback.construct import TaskBuilder
from scuffle.anim.playback.lookup import ClipLookup
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.playback.prepared import RecipeRules
from scuffle.anim.playback.batched import CommandColumns
from scuffle.anim.playback.stackrules import StackRules
from scuffle.game.fighters.moveset import Move

ROOT = Path(__file__).resolve().parents[2]
PARTS = {"lookup": ClipLookup, "builders": TaskBuilder, "rules": StackRules, "prepared": RecipeRules,
         "columns": CommandColumns}
# The Player's public methods that are its parts' (docs/api.md: constructors, stack rules,
# prepared commands, the look-up)
PART_METHODS = {
    "lookup": ("bank_index", "check_budget", "register", "find", "cursor", "rate_of", "gait_speeds"),
    "builders": ("loop", "clip", "hold", "scene", "paired", "paired_hold", "fade", "gait", "mix", "pick",
                 "direction", "chain"),
    "rules": ("top", "held_on_stack", "running", "refresh_anim_id", "insert_bottom", "push", "change", "enqueue",
              "replace", "complete_fade", "cut", "defer", "discard"),
    "prepared": ("prepare", "run", "learn", "knows"),
    "columns": ("commands", "set_gait_targets", "set_gait_targets_at"),
}


def test_the_player_is_made_of_parts_not_of_a_chain():
    """No inheritance: Player derives from object alone, and no part from another."""
    assert Player.__mro__ == (Player, object)
    for cls in PARTS.values():
        assert cls.__mro__ == (cls, object), cls
    p = Player()
    for name, cls in PARTS.items():
        assert type(getattr(p, name)) is cls
        assert getattr(p, name).stores is p.stores           # each over the world's stores


def test_the_public_surface_is_the_parts_own():
    """Each public method reads on the class as the part's function (signature and
    docstring, for help and the API page) and on a Player as the part's bound method."""
    p = Player()
    for part, names in PART_METHODS.items():
        cls = PARTS[part]
        for name in names:
            func = getattr(Player, name)
            assert inspect.signature(func) == inspect.signature(inspect.getattr_static(cls, name).__func__
                                                                if isinstance(inspect.getattr_static(cls, name),
                                                                              staticmethod)
                                                                else getattr(cls, name)), name
            assert (func.__doc__ or "").strip(), name
            bound = getattr(p, name)
            assert getattr(bound, "__self__", getattr(p, part)) is getattr(p, part), name
    assert isinstance(p.bank, type(p.lookup.bank)) and p.cmd_kernel_runs == 0


def test_new_options_reach_every_part():
    p = Player()
    new = dataclasses.replace(p.options, dt=0.02)
    p.options = new
    assert p.options is new and all(getattr(p, name).options is new for name in PARTS)


def test_a_subclass_override_is_kept():
    """Player binds its parts' methods per instance (no call in between), except a name a
    subclass overrides."""
    class Noting(Player):
        def change(self, inst, task, fade=0.0):
            return super().change(inst, task, fade)

    p = Noting()
    assert "change" not in p.__dict__ and p.change.__func__ is Noting.change
    assert p.loop == p.builders.loop and "loop" in p.__dict__


def test_the_look_up_warms_a_set_for_a_game():
    """ClipLookup.warm (what the fight rules call when a fighter joins): every id found
    with its rate, bank index and cursor template; an id the set lacks raises as a command would."""
    import pytest
    from scuffle.anim.playback.lookup import UnknownClip
    from scuffle.anim.data.rangelist import UnknownAnimId

    p = Player()
    s = demo_set()
    p.register(s)
    ids = [m for m in Move if m in s][:5]
    p.lookup.warm(s, ids)
    for m in ids:
        e = p.lookup._known(s, m)
        assert e is not None and e[1] is not None and e[2] >= 0 and e[3] is not None
    with pytest.raises((UnknownClip, UnknownAnimId)):
        p.lookup.warm(s, [99999])


def test_the_handle_api_and_a_prepared_command_run_through_the_parts():
    """A command through the public API: the parts write the same rows as before (the
    stack holds the new task under its fade)."""
    with Game() as g:
        g.add_human("a", demo_set())
        inst = g.instance("a")
        g.change("a", g.player.loop(inst, Move.IDLE))
        g.step()
        t = g.player.clip(inst, Move.JAB, g.player.loop(inst, Move.FIGHT_IDLE), blend=0.1)
        g.change("a", t, 0.1)
        stack = inst.stack
        assert stack[0] is t and stack[-1].type == 9 and g.player.top(inst) is t
        g.step()


# ---------------------------------------------------------------- game/ and the anim parts

# anim modules that are the Player's parts or its compiled writers: game/ goes through the
# Player instead (UnknownClip, an error a game catches, is the look-up's one public name)
_PRIVATE_MODULES = {"scuffle.anim.playback.construct", "scuffle.anim.playback.stackrules", "scuffle.anim.playback.prepared",
                    "scuffle.anim.engine.cmdkernel"}
_ALLOWED = {("scuffle.anim.playback.lookup", "UnknownClip")}


def _anim_imports(path: Path):
    """(line, module, name) of every scuffle.anim import in a file (name None: the module)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("scuffle.anim"):
            for a in node.names:
                yield node.lineno, node.module, a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("scuffle.anim"):
                    yield node.lineno, a.name, None


def test_game_imports_no_private_part_of_anim():
    """game/ imports no name with a leading underscore from scuffle.anim, none of the
    Player's part modules (the Player owns them), and the look-up for its error only."""
    bad = []
    for path in sorted((ROOT / "game").rglob("*.py")):
        rel = path.relative_to(ROOT)
        for line, mod, name in _anim_imports(path):
            full = f"{mod}.{name}" if name else mod
            if (mod, name) in _ALLOWED:
                continue
            if name and name.startswith("_") or any(p.startswith("_") for p in mod.split(".")):
                bad.append(f"{rel}:{line}: {full} (a private name)")
            elif mod in _PRIVATE_MODULES or full in _PRIVATE_MODULES or mod == "scuffle.anim.playback.lookup":
                bad.append(f"{rel}:{line}: {full} (a part of the Player: use the Player)")
            elif name in {c.__name__ for c in PARTS.values()}:
                bad.append(f"{rel}:{line}: {full} (a part of the Player: use the Player)")
    assert not bad, "\n".join(bad)
