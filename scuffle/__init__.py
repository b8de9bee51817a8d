"""scuffle: a faithful, fast, embeddable runtime of the character animation system of
SLUS_212.15, after a reverse-engineered specification kept outside this repository.

The public face. Everything here imports without pygame (only ``scuffle.demo`` draws):

    from scuffle import Game, demo_set
    with Game() as g:
        g.add_human("a", demo_set())
        g.change("a", g.player.loop(g.instance("a"), 358))
        g.step()

- the runtime: ``Game`` (its own esper world, or ``Game.attach`` to a host's),
  ``install``, ``SCHEDULE`` and ``priority_of`` (the systems in the original's order),
  ``SimContext``; its errors ``UnknownHuman``, ``GameClosed``, ``WorldInUse``,
  ``HandlerError``, ``StaleHandle`` (a handle read after its row went back);
  the API's types: ``Vec3`` (a point: three numbers or a numpy array), ``BoneArray``
  (one human's bone positions or rotations), ``NameOrEntity``;
- the scenario runner: ``load_scenario``, ``parse_scenario``, ``run_scenario`` (with the
  demo fighters' libraries and actions unless another ``Registry`` is given),
  ``ScenarioError``, ``Registry``, ``ActionSpec``;
- the animation core: ``Player``, ``PlayerOptions``, ``CharacterInstance``, ``AnimSet``,
  ``Clip``, ``parse_clip``, ``encode_clip``, ``author_clip``, ``load_resource``,
  ``ClipFormatError``, ``ResourceFormatError``, ``UnknownClip`` (an id with no clip in
  the set), ``UnknownAnimName`` (a clip name no clip carries);
- prepared commands (``Player.prepare`` / ``Player.run``): ``Recipe``, its steps
  ``ClipStep``, ``LoopStep``, ``GaitStep``, ``MixStep``, ``PickStep``, ``DirectionStep``,
  ``Arg`` (a value given at run time), ``Place``,
  ``Command`` (a prepared recipe), ``RecipeError``;
- the demo fighters: ``demo_set``, ``Fight`` and its answers and events (``ActionResult``,
  ``Refusal``, ``FightEvent``, ``FightEventKind``), ``FightInput`` (one fighter's commands
  in one update, ``Fight.apply``); rollback netplay is ``scuffle.net`` (docs/netplay.md);
- names: ``Bone`` (the 34 bones, ``Game.bone``), ``EventType`` (``Game.on``);
- snapshots: ``Snapshot`` (``Game.snapshot()`` / ``restore`` / ``checksum``, the byte
  form), ``SnapshotError``, ``SavedRandom`` (a generator a snapshot saves cheaply),
  ``sync_test`` and ``SyncError`` (GGPO's rollback SyncTest on any Game);
- ``settle``: after loading, the loaded world out of the garbage collector's sight
  (gc.freeze, the application's call: process-wide); ``warm``: every animation kernel
  compiled (or loaded from numba's cache) now, for a loading screen;
- the esper components: ``Name``, ``Animator``, ``HumanRecord``, ``PoseRef``,
  ``RangeRecords``, ``AnimSetRef``, ``Body``, ``Combat``, ``FiredEvents``.

Sub-packages: ``scuffle.anim`` (the pure core, numpy only), ``scuffle.components``,
``scuffle.systems``, ``scuffle.game`` (runtime, fighters, cli, tools), ``scuffle.demo``.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TextIO

if TYPE_CHECKING:  # the names below load on first use (PEP 562), so the core stays light
    from scuffle.anim.data.animset import AnimSet, UnknownAnimName
    from scuffle.anim.playback.lookup import UnknownClip
    from scuffle.anim.engine.store import StaleHandle
    from scuffle.anim.data.clip import Clip, ClipFormatError, author_clip, encode_clip, parse_clip
    from scuffle.anim.playback.player import Player, PlayerOptions
    from scuffle.anim.playback.recipe import (Arg, ClipStep, Command, DirectionStep, GaitStep, LoopStep, MixStep,
                                              PickStep, Place, Recipe, RecipeError)
    from scuffle.anim.data.resource import ResourceFormatError, load_resource
    from scuffle.anim.engine.stack import CharacterInstance
    from scuffle.components import (Animator, AnimSetRef, Body, Combat, FiredEvents, HumanRecord, Name,
                                    PoseRef, RangeRecords)
    from scuffle.game.fighters import registry as fighters_registry
    from scuffle.anim.data.clip import EventType
    from scuffle.anim.maths.skeleton import Bone
    from scuffle.game.fighters.combat import ActionResult, Fight, FightEvent, FightEventKind, Refusal
    from scuffle.game.fighters.fightinput import FightInput
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.registry import ActionSpec, Registry
    from scuffle.game.runtime.scenario import Scenario, ScenarioError
    from scuffle.game.runtime.schedule import SCHEDULE, install, priority_of
    from scuffle.game.runtime.world import BoneArray, Game, GameClosed, NameOrEntity, UnknownHuman, Vec3, WorldInUse
    from scuffle.systems.context import HandlerError, SimContext
    from scuffle.game.runtime.snapshot import SavedRandom, Snapshot, SnapshotError, SyncError, sync_test
    from scuffle.game.runtime.collector import settle
    from scuffle.anim.playback.warmup import warm

def _repository_folders() -> None:
    """Imported from the repository's own face folder (``python ...`` run in the
    repository's root puts it first on sys.path, ahead of any install): the card's
    folders (anim/, game/...) sit beside it there, not inside it, so the sub-packages
    are looked up in the repository's root too. An installed scuffle (wheel, or the
    editable install's link tree) holds them inside and is left as it is."""
    here = Path(__file__).parent
    root = here.parent
    if not (here / "anim").is_dir() and (root / "anim" / "__init__.py").is_file() \
            and (root / "pyproject.toml").is_file():
        __path__.append(str(root))


_repository_folders()

# name -> the module it comes from; ``import scuffle`` imports none of them (so
# ``import scuffle.anim.data.clip`` needs neither esper nor pygame).
_EXPORTS: dict[str, str] = {
    "AnimSet": "scuffle.anim.data.animset", "UnknownAnimName": "scuffle.anim.data.animset",
    "UnknownClip": "scuffle.anim.playback.lookup", "StaleHandle": "scuffle.anim.engine.store",
    "Clip": "scuffle.anim.data.clip", "ClipFormatError": "scuffle.anim.data.clip", "author_clip": "scuffle.anim.data.clip",
    "encode_clip": "scuffle.anim.data.clip", "parse_clip": "scuffle.anim.data.clip",
    "Player": "scuffle.anim.playback.player", "PlayerOptions": "scuffle.anim.playback.player",
    "ResourceFormatError": "scuffle.anim.data.resource", "load_resource": "scuffle.anim.data.resource",
    "CharacterInstance": "scuffle.anim.engine.stack",
    "Callback": "scuffle.anim.engine.callbacks", "CallbackError": "scuffle.anim.engine.callbacks",
    **{n: "scuffle.anim.playback.recipe" for n in ("Recipe", "ClipStep", "LoopStep", "GaitStep", "MixStep",
                                                                    "PickStep", "DirectionStep", "Arg", "Place",
                                                                    "Command", "RecipeError")},
    **{n: "scuffle.components" for n in ("Animator", "AnimSetRef", "Body", "Combat", "FiredEvents",
                                         "HumanRecord", "Name", "PoseRef", "RangeRecords")},
    "Fight": "scuffle.game.fighters.combat", "ActionResult": "scuffle.game.fighters.combat",
    "Refusal": "scuffle.game.fighters.combat", "FightEvent": "scuffle.game.fighters.combat",
    "FightEventKind": "scuffle.game.fighters.combat", "FightInput": "scuffle.game.fighters.fightinput",
    "Bone": "scuffle.anim.maths.skeleton", "EventType": "scuffle.anim.data.clip",
    "demo_set": "scuffle.game.fighters.moveset",
    "ActionSpec": "scuffle.game.runtime.registry", "Registry": "scuffle.game.runtime.registry",
    "Scenario": "scuffle.game.runtime.scenario", "ScenarioError": "scuffle.game.runtime.scenario",
    **{n: "scuffle.game.runtime.schedule" for n in ("SCHEDULE", "install", "priority_of")},
    **{n: "scuffle.game.runtime.world" for n in ("Game", "UnknownHuman", "GameClosed", "WorldInUse", "Vec3",
                                                 "BoneArray", "NameOrEntity")},
    "SimContext": "scuffle.systems.context", "HandlerError": "scuffle.systems.context",
    **{n: "scuffle.game.runtime.snapshot" for n in ("Snapshot", "SnapshotError", "SavedRandom", "sync_test",
                                                    "SyncError")},
    "settle": "scuffle.game.runtime.collector",
    "warm": "scuffle.anim.playback.warmup",
    "__version__": "scuffle.game.runtime.version",
}

__all__ = [
    "__version__",
    "Game", "UnknownHuman", "GameClosed", "WorldInUse", "HandlerError", "StaleHandle", "install", "SCHEDULE",
    "priority_of", "SimContext", "Vec3", "BoneArray", "NameOrEntity",
    "load_scenario", "parse_scenario", "run_scenario", "Scenario", "ScenarioError", "Registry", "ActionSpec",
    "fighters_registry",
    "Player", "PlayerOptions", "CharacterInstance", "AnimSet", "Clip", "parse_clip", "encode_clip",
    "author_clip", "load_resource", "ClipFormatError", "ResourceFormatError", "UnknownClip", "UnknownAnimName",
    "demo_set", "Fight", "FightInput", "ActionResult", "Refusal", "FightEvent", "FightEventKind", "Bone", "EventType",
    "Name", "Animator", "HumanRecord", "PoseRef", "RangeRecords", "AnimSetRef", "Body", "Combat",
    "FiredEvents", "Callback", "CallbackError",
    "Recipe", "ClipStep", "LoopStep", "GaitStep", "MixStep", "PickStep", "DirectionStep", "Arg", "Place", "Command",
    "RecipeError",
    "Snapshot", "SnapshotError", "SavedRandom", "sync_test", "SyncError", "settle", "warm",
]


def __getattr__(name: str) -> Any:
    """Load an exported name from its module on first use (PEP 562)."""
    if name == "fighters_registry":
        from scuffle.game.fighters import registry
        globals()[name] = registry
        return registry
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'scuffle' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_scenario(path: str | Path, registry: Registry | None = None,
                  data: Sequence[str | Path] | None = None) -> Scenario:
    """Read and validate a scenario file (docs/scenarios.md). ``registry`` gives the
    libraries and actions it may name; None: the demo fighters' (``fighters_registry()``).
    The files it names are read from below its folder or a folder of ``data`` (or of
    SCUFFLE_DATA). Rejected: ScenarioError naming the file, line and field."""
    from scuffle.game.fighters import registry as default
    from scuffle.game.runtime import scenario
    return scenario.load_scenario(path, registry if registry is not None else default(), data=data)


def parse_scenario(text: str, source: str = "<scenario>", base: Path | None = None,
                   registry: Registry | None = None, data: Sequence[str | Path] | None = None) -> Scenario:
    """Validate scenario TOML text (files relative to ``base``, read from below it or a
    folder of ``data``); the registry as for ``load_scenario``. Rejected: ScenarioError."""
    from scuffle.game.fighters import registry as default
    from scuffle.game.runtime import scenario
    return scenario.parse_scenario(text, source, base, registry if registry is not None else default(),
                                   data=data)


def run_scenario(sc: Scenario, trace: TextIO | None = None, pose: bool = False,
                 on_update: Callable[[Game], None] | None = None,
                 on_command: Callable[[Any, Any], None] | None = None, engine: str = "compiled") -> Game:
    """Run a validated scenario, writing its JSONL trace to ``trace`` if given and calling
    ``on_update(game)`` after each update and ``on_command(command, result)`` after each
    command (the fight rules' ActionResult: falsy with its reason when refused); returns
    the Game (close it when done). Rejected: ScenarioError for a limit hit at run time."""
    from scuffle.game.runtime import scenario
    game: Game = scenario.run_scenario(sc, trace, pose, on_update, on_command, engine)
    return game
