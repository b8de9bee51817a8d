"""Prepared commands' plain data: a ``Recipe`` and its steps, ``Arg``, ``Place`` and
``RecipeError`` (a leaf: it imports only anim.base.enums).

A recipe is a command's shape as named tuples of numbers (picklable, no closures), with
``Arg(i)`` where a value is given at run time. anim.playback.recipe checks one into a ``Command``
(the engine's); the reference engine reads the same data with its own expansion. Both
re-export these names: anim.playback.recipe is where users take them.

Spec: "Animation tasks", "The task stack", "Fades", "Gait blend".
"""
from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple

from scuffle.anim.base.enums import LOCOMOTION_FLAGS

__all__ = ["Arg", "ClipStep", "DirectionStep", "GaitStep", "LoopStep", "MixStep", "PickStep", "Place", "Recipe",
           "RecipeError"]


class RecipeError(ValueError):
    """A recipe that cannot be prepared (the field named), or a run given the wrong
    number of parameters."""


class Place(StrEnum):
    """Where a recipe's first task goes: ``change`` (under a fade, Player.change), ``push``
    (on top, Player.push) or ``enqueue`` (the queue, Player.enqueue)."""

    CHANGE = "change"
    PUSH = "push"
    ENQUEUE = "enqueue"


class Arg(NamedTuple):
    """A value given at run time: ``params[pos]`` of ``Player.run(inst, command, *params)``."""

    pos: int


class LoopStep(NamedTuple):
    """A type 1 task (Player.loop): ``anim`` an anim id (int) or an ``Arg``; its own rate;
    ``on_end`` its end callback as data (anim.engine.callbacks.Callback) or an ``Arg``, or None."""

    anim: Any
    flags: int = 0
    held: int = 0
    on_end: Any = None


class ClipStep(NamedTuple):
    """A type 3 task (Player.clip) handing over to the recipe's next task (none when last),
    with blend time ``blend`` (s); ``anim`` an anim id (int) or an ``Arg``; its own rate;
    ``on_end`` its end callback as data (anim.engine.callbacks.Callback) or an ``Arg``, or None."""

    anim: Any
    blend: float = 0.0
    flags: int = 0
    held: int = 0
    on_end: Any = None


class GaitStep(NamedTuple):
    """A type 12 gait blend (Player.gait) over five anim ids; ``target`` and ``value``
    numbers or ``Arg``s (``value`` None: the target)."""

    ids: tuple
    target: Any = 0.0
    value: Any = None
    flags: int = int(LOCOMOTION_FLAGS)
    held: int = 0


class MixStep(NamedTuple):
    """A type 10 two-clip mix (Player.mix) of anim ids ``a`` and ``b`` at the human's speed
    multiplier; ``weight`` (the second clip's share, clamped to 0-1) a number or an ``Arg``."""

    a: Any
    b: Any
    weight: Any = 0.0
    flags: int = 0


class PickStep(NamedTuple):
    """A type 11 four-clip pick (Player.pick) over four anim ids at ``rate`` (a number);
    ``value`` (0-3, the audible clip) a number or an ``Arg``."""

    ids: tuple
    rate: float = 1.0
    value: Any = 0.0
    flags: int = 0


class DirectionStep(NamedTuple):
    """A type 13 eight-direction blend (Player.direction) over ids ``base``..``base + 7`` at
    the human's speed multiplier; ``direction`` (0-8, wrapping) a number or an ``Arg``."""

    base: Any
    direction: Any = 0.0
    flags: int = 0


class Recipe(NamedTuple):
    """A command's shape: ``place`` (a Place), ``tasks`` first first (every one but the
    last a ClipStep, which hands over to the one after it; a GaitStep, MixStep, PickStep
    or DirectionStep only last), ``fade`` the change's fade time
    (a number or an Arg; ``change`` only). ``steer`` (a recipe whose last task is a
    GaitStep): when the human has a running gait (the newest unreleased type 12 task on
    its stack, Player.running), a run gives that gait the GaitStep's target, as its
    handle's ``set_target`` does, and makes nothing; else the recipe runs as written (a
    game's "start walking, or steer the walk already running", as one command)."""

    place: str
    tasks: tuple
    fade: Any = 0.0
    steer: bool = False
