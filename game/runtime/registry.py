"""What a scenario can name: its anim set libraries and its actions, registered explicitly.

A ``Registry`` is handed to ``scuffle.game.runtime.scenario.parse_scenario`` (and kept on
the Scenario for ``run_scenario``). The runtime knows no library and no action of its
own; the demo fighters fill one with ``scuffle.game.fighters.registry()``, and a host can
build its own or extend that one:

    reg = scuffle.game.fighters.registry()
    reg.add_action("taunt", ActionSpec({"move": is_int}, lambda game, cmd: ...))

The value checks (``is_int``, ``is_num``, ``is_f32``, ``is_vec2``) are the ones the
scenario format uses, shared so that an action's keys are checked the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet

__all__ = ["ActionSpec", "TableSpec", "Registry", "is_int", "is_num", "is_f32", "is_vec2"]


def is_int(v: Any) -> bool:
    """A TOML integer (not a bool)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v: Any) -> bool:
    """A finite TOML number (int or float, not a bool) a float can hold (an int of
    hundreds of digits is not one)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def is_f32(v: Any) -> bool:
    """A number the float32 fields it goes into (rates, fade and blend times) can hold."""
    return is_num(v) and math.isfinite(F.f32(float(v)))


def is_vec2(v: Any) -> bool:
    """A list of two finite numbers."""
    return isinstance(v, list) and len(v) == 2 and all(is_num(x) for x in v)


@dataclass(frozen=True)
class ActionSpec:
    """A scenario action: its extra keys (name -> value check) and its runner(game, cmd).

    ``anim_keys``: the keys that hold an anim id; the scenario also accepts a clip's name
    there (``move = "THROW_BACK"``), resolved through the human's set when the file is
    read (an unknown name is an error with "did you mean"), so the runner gets the id.
    """

    keys: dict[str, Callable[[Any], bool]]
    run: Callable[[Any, Any], object]
    anim_keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TableSpec:
    """A top-level scenario table of a provider's own (``[fight]``): its keys (name -> value
    check) and its set-up ``setup(game, values)``, run before the first update when the
    table is given (before the plain set-up calls)."""

    keys: dict[str, Callable[[Any], bool]]
    setup: Callable[[Any, dict], None]


@dataclass
class Registry:
    """Libraries (name -> function returning an AnimSet), actions (name -> ActionSpec),
    the set-up calls run on a scenario's Game before its first update (``setup``) and
    top-level tables of a provider's own (name -> TableSpec, ``tables``).

    Rejected: a name registered twice (ValueError), so two providers never silently
    replace each other.
    """

    libraries: dict[str, Callable[[], AnimSet]] = field(default_factory=dict)
    actions: dict[str, ActionSpec] = field(default_factory=dict)
    setup: list[Callable[[Any], object]] = field(default_factory=list)
    tables: dict[str, TableSpec] = field(default_factory=dict)

    def add_library(self, name: str, make: Callable[[], AnimSet]) -> None:
        """Register an anim set library under ``name``."""
        if name in self.libraries:
            raise ValueError(f"library {name!r} is already registered")
        self.libraries[name] = make

    def add_action(self, name: str, spec: ActionSpec) -> None:
        """Register a scenario action under ``name``."""
        if name in self.actions:
            raise ValueError(f"action {name!r} is already registered")
        self.actions[name] = spec

    def add_table(self, name: str, spec: TableSpec) -> None:
        """Register a top-level scenario table ``[name]`` (rejected: a name the format
        already uses, or one registered twice: ValueError)."""
        if name in ("updates", "speeds", "sets", "humans", "commands", "options"):
            raise ValueError(f"table {name!r} is a key of the scenario format itself")
        if name in self.tables:
            raise ValueError(f"table {name!r} is already registered")
        self.tables[name] = spec

    def add_setup(self, fn: Callable[[Any], object]) -> None:
        """Run ``fn(game)`` on every scenario's Game before its first update."""
        self.setup.append(fn)
