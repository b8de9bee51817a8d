"""Prepared commands: a command's shape as plain data, run by writing its rows directly.

A game issues the same few commands over and over ("walk start", "attack", "hit
reaction"): a change under a fade to a clip handing over to a loop, a gait blend, a chain.
With the handle API each one is a dozen Python calls that make a handle object per task.
A ``Recipe`` describes such a command once, as plain data (named tuples of numbers,
picklable, no closures), with ``Arg(i)`` where a number or an anim id is given at run
time; ``Player.prepare(recipe)`` checks it once and returns a ``Command``;
``Player.run(inst, command, *params)`` then writes the task, cursor, fade and gait rows,
the pool's accounting and the human's stack or queue row straight from what the
``Command`` keeps per anim set (anim.playback.prepared: the engine's part; this module is the
``Command`` and ``expand``, the engine's; the plain data is anim.base.recipedata, which the
reference engine expands by its own code: each clip's bank index, cursor
proto and rate, found once per set; a new set, a clip replaced with ``AnimSet.with_clip`` (a new set) or new
options are found again), with no handle object: a row's handle is made on its first
read (``anim.playback.tasks.task_at``).

The rows are those the equivalent handle calls leave, bit for bit (the ``tasks`` from the
last to the first, each ``ClipStep`` handing over to the task after it, then the place):
``Recipe("change", (ClipStep(A, blend=0.1, held=W), LoopStep(B)), fade=Arg(0))`` run with
``(0.2,)`` leaves what ``player.change(inst, player.clip(inst, A, player.loop(inst, B),
blend=0.1, held=W), 0.2)`` leaves. Whenever the direct path cannot be sure of that (a
limit near: the pool, the stack or the queue; a table about to grow; an early finish of a
fade; ``refuse_deep_chains``; an id or set not seen yet; a number that is not a plain
float), the command runs through those very handle calls instead. A refused command
(TaskPoolExhausted, StackFull, QueueFull, PoseStackOverflow, ValueError) leaves nothing
taken: the pool is checked for all its tasks before the first one is made, and the tasks
made before a later refusal are given back (``Player.discard``), where the bare handle
expression would leave its inner tasks taken.

Spec: "Animation tasks", "The task stack", "Fades", "Gait blend".
Original: 0x00105678, 0x00105990, 0x0010a310, 0x00106c80 (the constructors), 0x001054c8
(take a task from the free list), 0x001041f8 AnimCursor_Init, 0x001754e8
TaskStack_InsertBottom, 0x001753d8 TaskStack_Push.
"""
from __future__ import annotations

import math
from typing import Any

from scuffle.anim.maths import f32 as F
from scuffle.anim.base.callbackdata import check_callback
from scuffle.anim.base.enums import TaskType
from scuffle.anim.base.recipedata import (Arg, ClipStep, DirectionStep, GaitStep, LoopStep, MixStep, PickStep, Place,
                                          Recipe, RecipeError)

__all__ = ["Arg", "ClipStep", "Command", "DirectionStep", "GaitStep", "LoopStep", "MixStep", "PickStep", "Place",
           "Recipe", "RecipeError", "check_params", "expand"]


# op codes of a prepared recipe's steps, in the order the tasks are made (last first)
_LOOP, _CLIP, _GAIT = int(TaskType.LOOP), int(TaskType.CLIP), int(TaskType.GAIT)
_MIX, _PICK, _DIRECTION = int(TaskType.MIX), int(TaskType.PICK), int(TaskType.DIRECTION)
# the steps over several clips (a step's ``anim`` their ids, a direction's base id; ``extra``
# their numbers): always a recipe's last task, each with one number a run may give (an Arg)
_BLENDS = frozenset((_GAIT, _MIX, _PICK, _DIRECTION))
_INT32 = 1 << 31
_INT63 = 1 << 63
_CHANGE, _PUSH, _ENQUEUE = Place.CHANGE, Place.PUSH, Place.ENQUEUE


def _int_field(what: str, value) -> int:
    """A flags / held field: an int 0 .. 2**63 - 1 (flags: 2**31 - 1), else RecipeError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecipeError(f"{what} {value!r} must be an int")
    top = _INT32 if what.endswith("flags") else _INT63
    if not 0 <= value < top:
        raise RecipeError(f"{what} {value!r} is outside 0 .. {top - 1}")
    return int(value)


def _anim_field(what: str, value):
    """An anim id (an int, an IntEnum) or an Arg, else RecipeError."""
    if isinstance(value, Arg):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecipeError(f"{what} {value!r} must be an anim id (an int) or an Arg")
    return value


def _id_field(what: str, value):
    """An anim id (an int, an IntEnum; an Arg is not taken there), else RecipeError."""
    if isinstance(value, Arg):
        raise RecipeError(f"{what}: an anim id (an Arg is not taken there)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecipeError(f"{what} {value!r} must be an anim id (an int)")
    return value


def _end_field(what: str, value):
    """An end callback: None, an Arg, or data (a Callback, or a ``(kind, args)`` tuple made
    one; anim.engine.callbacks.check_callback), never a callable (a recipe is plain data), else
    RecipeError."""
    if value is None or value.__class__ is Arg:
        return value
    if callable(value) and not isinstance(value, tuple):
        raise RecipeError(f"{what}: a callable is not data (a Callback or an Arg)")
    try:
        return check_callback(value, what)
    except ValueError as exc:
        raise RecipeError(str(exc)) from None


def _number_field(what: str, value, low: float | None):
    """A number kept as a float32 (finite, >= ``low`` when given) or an Arg, else RecipeError."""
    if isinstance(value, Arg):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecipeError(f"{what} {value!r} must be a number or an Arg")
    v = float(value)
    if not math.isfinite(F.f32(v)) or (low is not None and v < low):
        at_least = f" and >= {low:g}" if low is not None else ""
        raise RecipeError(f"{what} {value!r} must be finite (a float32){at_least}")
    return v


class Command:
    """A prepared recipe (Player.prepare): the recipe, its steps in the order the tasks are
    made, the number of parameters it takes and, per anim set, what its direct path needs
    (not state: a copy or a pickle keeps the recipe alone and finds them again)."""

    __slots__ = ("recipe", "steps", "n_params", "n_tasks", "n_cursors", "n_gaits", "place", "fade", "arg_steps",
                 "ends", "steer", "_sets")

    def __init__(self, recipe: Recipe):
        if not isinstance(recipe, Recipe):
            raise RecipeError(f"Command: a Recipe, got {type(recipe).__name__}")
        try:
            place = Place(recipe.place)
        except ValueError:
            raise RecipeError(f"Recipe.place {recipe.place!r} must be one of {[p.value for p in Place]}") from None
        tasks = tuple(recipe.tasks)
        if not tasks:
            raise RecipeError("Recipe.tasks: at least one task")
        args: list[int] = []
        steps: list[tuple[Any, Any, int, int, Any]] = []
        ends: list[Any] = []
        n_cursors = n_gaits = 0
        for k, t in enumerate(tasks):
            where = f"Recipe.tasks[{k}]"
            if k < len(tasks) - 1 and not isinstance(t, ClipStep):
                raise RecipeError(f"{where}: {type(t).__name__} before the last task (only a ClipStep hands over)")
            if isinstance(t, (LoopStep, ClipStep)):
                anim = _anim_field(f"{where}.anim", t.anim)
                flags = _int_field(f"{where}.flags", t.flags)
                held = _int_field(f"{where}.held", t.held)
                blend = _number_field(f"{where}.blend", t.blend, 0.0) if isinstance(t, ClipStep) else 0.0
                if isinstance(blend, Arg):
                    raise RecipeError(f"{where}.blend: a number (an Arg is not taken there)")
                if isinstance(anim, Arg):
                    args.append(anim.pos)
                end = _end_field(f"{where}.on_end", t.on_end)
                if isinstance(end, Arg):
                    args.append(end.pos)
                ends.append(end)
                steps.append((_CLIP if isinstance(t, ClipStep) else _LOOP, anim, flags, held, blend))
                n_cursors += 1
            elif isinstance(t, GaitStep):
                ids = tuple(t.ids)
                if len(ids) != 5:
                    raise RecipeError(f"{where}.ids: 5 anim ids, got {len(ids)}")
                for i, a in enumerate(ids):
                    if isinstance(a, Arg):
                        raise RecipeError(f"{where}.ids[{i}]: an anim id (an Arg is not taken there)")
                    _anim_field(f"{where}.ids[{i}]", a)
                target = _number_field(f"{where}.target", t.target, None)
                value = None if t.value is None else _number_field(f"{where}.value", t.value, None)
                for v in (target, value):
                    if isinstance(v, Arg):
                        args.append(v.pos)
                steps.append((_GAIT, ids, _int_field(f"{where}.flags", t.flags), _int_field(f"{where}.held", t.held),
                              (target, value)))
                n_cursors += 2
                n_gaits += 1
                ends.append(None)
            elif isinstance(t, MixStep):
                ab = (_id_field(f"{where}.a", t.a), _id_field(f"{where}.b", t.b))
                weight = _number_field(f"{where}.weight", t.weight, None)
                if isinstance(weight, Arg):
                    args.append(weight.pos)
                steps.append((_MIX, ab, _int_field(f"{where}.flags", t.flags), 0, (weight,)))
                n_cursors += 2
                ends.append(None)
            elif isinstance(t, PickStep):
                ids = tuple(t.ids)
                if len(ids) != 4:
                    raise RecipeError(f"{where}.ids: 4 anim ids, got {len(ids)}")
                ids = tuple(_id_field(f"{where}.ids[{i}]", a) for i, a in enumerate(ids))
                rate = _number_field(f"{where}.rate", t.rate, 0.0)
                if isinstance(rate, Arg):
                    raise RecipeError(f"{where}.rate: a number (an Arg is not taken there)")
                value = _number_field(f"{where}.value", t.value, None)
                if isinstance(value, Arg):
                    args.append(value.pos)
                steps.append((_PICK, ids, _int_field(f"{where}.flags", t.flags), 0, (value, rate)))
                n_cursors += 4
                ends.append(None)
            elif isinstance(t, DirectionStep):
                base = _id_field(f"{where}.base", t.base)
                direction = _number_field(f"{where}.direction", t.direction, None)
                if isinstance(direction, Arg):
                    args.append(direction.pos)
                steps.append((_DIRECTION, base, _int_field(f"{where}.flags", t.flags), 0, (direction,)))
                n_cursors += 3
                ends.append(None)
            else:
                raise RecipeError(f"{where}: a LoopStep, a ClipStep or a GaitStep (or a MixStep, a PickStep, "
                                  f"a DirectionStep), got {type(t).__name__}")
        fade = 0.0
        if place == Place.CHANGE:
            fade = _number_field("Recipe.fade", recipe.fade, 0.0)
            if isinstance(fade, Arg):
                args.append(fade.pos)
        for i in args:
            if isinstance(i, bool) or not isinstance(i, int) or i < 0:
                raise RecipeError(f"Arg({i!r}): its position must be an int >= 0")
        if recipe.steer.__class__ is not bool:
            raise RecipeError(f"Recipe.steer {recipe.steer!r} must be True or False")
        if recipe.steer and not isinstance(tasks[-1], GaitStep):
            raise RecipeError("Recipe.steer: the last task must be a GaitStep (its target steers the running gait)")
        # steer: the gait step's target (a number or an Arg) a running gait takes instead of a run
        self.steer = steps[-1][4][0] if recipe.steer else None
        self.recipe = Recipe(str(place), tasks, recipe.fade, recipe.steer)
        # the order the tasks are made: the last first
        self.steps: tuple[tuple[Any, Any, int, int, Any], ...] = tuple(reversed(steps))
        self.n_params = max(args) + 1 if args else 0
        self.n_tasks = len(steps) + (1 if place == Place.CHANGE else 0)
        self.n_cursors, self.n_gaits = n_cursors, n_gaits
        self.place = place
        self.fade = fade
        # the steps whose id, or a blend's numbers (a gait's target and value, a mix's weight,
        # a pick's value, a direction), the run may give (in self.steps' order: (index, op,
        # anim, extra)); the direct path looks those up per run
        # the end callbacks in self.steps' order (a Callback, an Arg, None), or None when no
        # task has one (Player.run writes them after the rows: ``_run_rows`` takes none)
        self.ends: tuple | None = tuple(reversed(ends)) if any(e is not None for e in ends) else None
        self.arg_steps = tuple((k, st[0], st[1], st[4]) for k, st in enumerate(self.steps)
                               if st[0] in _BLENDS or st[1].__class__ is Arg)
        self._sets: dict[int, tuple] = {}

    def __reduce__(self):
        return (Command, (self.recipe,))

    def __repr__(self) -> str:
        return f"Command({self.recipe!r})"


def _value(v, params: tuple):
    return params[v.pos] if v.__class__ is Arg else v


def expand(host: Any, inst: Any, command: Command, params: tuple) -> None:
    """Run ``command`` through ``host``'s handle calls (a Player's): the pool checked for all its tasks first, the tasks
    made last first, then placed; a refusal before the place, or by push or enqueue, gives
    back what was made (Player.change gives its task back itself). In: the host, the
    human, the command and its params (their number checked by the caller)."""
    host.pool.require(command.n_tasks)
    task = None
    place = command.place
    ends = command.ends
    try:
        for k, (op, anim, flags, held, extra) in enumerate(command.steps):
            end = None if ends is None or ends[k] is None else _value(ends[k], params)
            if op == _CLIP:
                if end is None:
                    task = host.clip(inst, _value(anim, params), task, blend=extra, flags=flags, held=held)
                else:
                    task = host.clip(inst, _value(anim, params), task, blend=extra, flags=flags, held=held, on_end=end)
            elif op == _LOOP:
                if end is None:
                    task = host.loop(inst, _value(anim, params), flags=flags, held=held)
                else:
                    task = host.loop(inst, _value(anim, params), flags=flags, held=held, on_end=end)
            elif op == _GAIT:
                target, value = extra
                task = host.gait(inst, anim, target=_value(target, params),
                                 value=None if value is None else _value(value, params), flags=flags, held=held)
            elif op == _MIX:
                task = host.mix(inst, anim[0], anim[1], weight=_value(extra[0], params), flags=flags)
            elif op == _PICK:
                task = host.pick(inst, anim, extra[1], value=_value(extra[0], params), flags=flags)
            else:
                task = host.direction(inst, anim, direction=_value(extra[0], params), flags=flags)
    except BaseException:
        if task is not None:
            host.discard(task)
        raise
    if place == Place.CHANGE:
        host.change(inst, task, _value(command.fade, params))       # gives the task back on a refusal
        return
    try:
        if place == Place.PUSH:
            host.push(inst, task)
        else:
            host.enqueue(inst, task)
    except BaseException:
        host.discard(task)
        raise


def check_params(command: Command, params: tuple) -> None:
    """RecipeError unless ``command`` is a Command given as many params as its Args name."""
    if command.__class__ is not Command:
        raise RecipeError(f"run: a Command (prepare), got {type(command).__name__}")
    if len(params) != command.n_params:
        raise RecipeError(f"run: {command.n_params} params for {command.recipe!r}, got {len(params)}")


