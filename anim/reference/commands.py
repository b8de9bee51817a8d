"""The reference's prepared commands: a Recipe (plain data) checked, then run as the
reference's own constructors and stack rules.

Written from what a recipe means (anim.base.recipedata; docs/api.md "Prepared commands"),
not from the engine's expansion: a recipe's ``tasks`` are made from the last to the first,
each ``ClipStep`` handing over to the task made before it (a gait, mix, pick or direction
step only last), then the first is placed by
``change`` (under a fade of ``fade`` s), ``push`` or ``enqueue``. A refused command leaves
nothing taken: the pool is checked for all its tasks first, and what was made before a
later refusal goes back to the pool.

Spec: "Animation tasks", "The task stack" (L251-259), "Fades", "Gait blend".
Original: 0x00105678, 0x00105990, 0x0010a310, 0x00106c80 (the constructors), 0x001754e8
TaskStack_InsertBottom, 0x001753d8 TaskStack_Push.
"""
from __future__ import annotations

import math

import numpy as np

from scuffle.anim.base.enums import TaskType
from scuffle.anim.base.recipedata import (Arg, ClipStep, DirectionStep, GaitStep, LoopStep, MixStep, PickStep, Place,
                                          Recipe, RecipeError)
from scuffle.anim.reference.handlers import plain_callback

__all__ = ["RefCommand", "run_command", "run_columns"]

_FLAGS_TOP = 2 ** 31            # a task's flags word (+0x10): a signed 32-bit column, never negative here
_HELD_TOP = 2 ** 63             # a task's held bits (+0x24, record +0x08): 63 bits


def _whole(where: str, v, top: int) -> int:
    """A flags or held word: an int (not a bool) in 0 .. top - 1."""
    if type(v) is bool or not isinstance(v, int):
        raise RecipeError(f"{where} {v!r} must be an int")
    if v < 0 or v >= top:
        raise RecipeError(f"{where} {v!r} is outside 0 .. {top - 1}")
    return int(v)


def _anim(where: str, v):
    """An anim id (an int or IntEnum, not a bool) or an Arg."""
    if isinstance(v, Arg) or (isinstance(v, int) and type(v) is not bool):
        return v
    raise RecipeError(f"{where} {v!r} must be an anim id (an int) or an Arg")


def _id_only(where: str, v):
    """An anim id (an int or IntEnum, not a bool) where a run gives none (no Arg)."""
    if isinstance(v, Arg):
        raise RecipeError(f"{where}: an anim id (an Arg is not taken there)")
    if isinstance(v, int) and type(v) is not bool:
        return v
    raise RecipeError(f"{where} {v!r} must be an anim id (an int)")


def _seconds(where: str, v, least):
    """A number that a float32 holds finite (and >= ``least`` when given), or an Arg."""
    if isinstance(v, Arg):
        return v
    if type(v) is bool or not isinstance(v, (int, float)):
        raise RecipeError(f"{where} {v!r} must be a number or an Arg")
    x = float(v)
    with np.errstate(over="ignore"):
        finite = math.isfinite(float(np.float32(x)))
    if not finite or (least is not None and x < least):
        tail = "" if least is None else f" and >= {least:g}"
        raise RecipeError(f"{where} {v!r} must be finite (a float32){tail}")
    return x


def _end(where: str, v):
    """An end callback in a recipe: None, an Arg, or a Callback with plain-data args; never code."""
    if v is None or isinstance(v, Arg):
        return v
    if callable(v) and not isinstance(v, tuple):
        raise RecipeError(f"{where}: a callable is not data (a Callback or an Arg)")
    try:
        return plain_callback(v, where, code=False)
    except ValueError as exc:
        raise RecipeError(str(exc)) from None


class RefCommand:
    """A Recipe the reference checked: its steps first first, the number of params its
    Args name, and how many tasks a run takes. RecipeError names the bad field."""

    __slots__ = ("recipe", "place", "steps", "fade", "n_params", "n_tasks", "steer")

    def __init__(self, recipe):
        if not isinstance(recipe, Recipe):
            raise RecipeError(f"Command: a Recipe, got {type(recipe).__name__}")
        if recipe.place not in {p.value for p in Place}:
            raise RecipeError(f"Recipe.place {recipe.place!r} must be one of {[p.value for p in Place]}")
        place = Place(recipe.place)
        tasks = tuple(recipe.tasks)
        if len(tasks) == 0:
            raise RecipeError("Recipe.tasks: at least one task")
        positions: list = []
        steps = []
        last = len(tasks) - 1
        for k, step in enumerate(tasks):
            where = f"Recipe.tasks[{k}]"
            if k != last and not isinstance(step, ClipStep):
                raise RecipeError(f"{where}: {type(step).__name__} before the last task (only a ClipStep hands over)")
            if isinstance(step, (ClipStep, LoopStep)):
                anim = _anim(f"{where}.anim", step.anim)
                flags = _whole(f"{where}.flags", step.flags, _FLAGS_TOP)
                held = _whole(f"{where}.held", step.held, _HELD_TOP)
                blend = 0.0
                if isinstance(step, ClipStep):
                    blend = _seconds(f"{where}.blend", step.blend, 0.0)
                    if isinstance(blend, Arg):
                        raise RecipeError(f"{where}.blend: a number (an Arg is not taken there)")
                end = _end(f"{where}.on_end", step.on_end)
                positions += [a.pos for a in (anim, end) if isinstance(a, Arg)]
                kind = TaskType.CLIP if isinstance(step, ClipStep) else TaskType.LOOP
                steps.append((kind, anim, flags, held, blend, end))
            elif isinstance(step, GaitStep):
                ids = tuple(step.ids)
                if len(ids) != 5:
                    raise RecipeError(f"{where}.ids: 5 anim ids, got {len(ids)}")
                for i, a in enumerate(ids):
                    if isinstance(a, Arg):
                        raise RecipeError(f"{where}.ids[{i}]: an anim id (an Arg is not taken there)")
                    _anim(f"{where}.ids[{i}]", a)
                target = _seconds(f"{where}.target", step.target, None)
                value = None if step.value is None else _seconds(f"{where}.value", step.value, None)
                positions += [a.pos for a in (target, value) if isinstance(a, Arg)]
                steps.append((TaskType.GAIT, ids, _whole(f"{where}.flags", step.flags, _FLAGS_TOP),
                              _whole(f"{where}.held", step.held, _HELD_TOP), target, value))
            elif isinstance(step, MixStep):
                ids = (_id_only(f"{where}.a", step.a), _id_only(f"{where}.b", step.b))
                weight = _seconds(f"{where}.weight", step.weight, None)
                positions += [weight.pos] if isinstance(weight, Arg) else []
                steps.append((TaskType.MIX, ids, _whole(f"{where}.flags", step.flags, _FLAGS_TOP), 0, weight, None))
            elif isinstance(step, PickStep):
                ids = tuple(step.ids)
                if len(ids) != 4:
                    raise RecipeError(f"{where}.ids: 4 anim ids, got {len(ids)}")
                for i, a in enumerate(ids):
                    _id_only(f"{where}.ids[{i}]", a)
                rate = _seconds(f"{where}.rate", step.rate, 0.0)
                if isinstance(rate, Arg):
                    raise RecipeError(f"{where}.rate: a number (an Arg is not taken there)")
                value = _seconds(f"{where}.value", step.value, None)
                positions += [value.pos] if isinstance(value, Arg) else []
                steps.append((TaskType.PICK, ids, _whole(f"{where}.flags", step.flags, _FLAGS_TOP), 0, value, rate))
            elif isinstance(step, DirectionStep):
                base = _id_only(f"{where}.base", step.base)
                direction = _seconds(f"{where}.direction", step.direction, None)
                positions += [direction.pos] if isinstance(direction, Arg) else []
                steps.append((TaskType.DIRECTION, base, _whole(f"{where}.flags", step.flags, _FLAGS_TOP), 0,
                              direction, None))
            else:
                raise RecipeError(f"{where}: a LoopStep, a ClipStep or a GaitStep (or a MixStep, a PickStep, "
                                  f"a DirectionStep), got {type(step).__name__}")
        fade = 0.0
        if place == Place.CHANGE:
            fade = _seconds("Recipe.fade", recipe.fade, 0.0)
            if isinstance(fade, Arg):
                positions.append(fade.pos)
        for pos in positions:
            if type(pos) is bool or not isinstance(pos, int) or pos < 0:
                raise RecipeError(f"Arg({pos!r}): its position must be an int >= 0")
        steer = getattr(recipe, "steer", False)
        if type(steer) is not bool:
            raise RecipeError(f"Recipe.steer {steer!r} must be True or False")
        if steer and not isinstance(tasks[-1], GaitStep):
            raise RecipeError("Recipe.steer: the last task must be a GaitStep (its target steers the running gait)")
        # the number or Arg a running gait takes as its target instead of a run (None: not steering)
        self.steer = steps[-1][4] if steer else None
        self.recipe = Recipe(place.value, tasks, recipe.fade, steer)     # the place as a plain str
        self.place = place
        self.steps = tuple(steps)
        self.fade = fade
        self.n_params = 1 + max(positions) if positions else 0
        self.n_tasks = len(steps) + (place == Place.CHANGE)

    def __repr__(self) -> str:
        return f"RefCommand({self.recipe!r})"


def _given(v, params: tuple):
    return params[v.pos] if isinstance(v, Arg) else v


def run_command(ref, inst, command, params: tuple) -> None:
    """Run ``command`` (a RefCommand, or anything with a ``recipe``: the engine's Command)
    on ``inst`` with ``params``: RecipeError for the wrong number of params; the pool
    checked for every task; the tasks made last first; the first placed. A refusal gives
    back what was made (``change`` gives its task back itself). A steering command
    (Recipe.steer) on a human with a running gait gives that gait the target instead."""
    if not isinstance(command, RefCommand):
        recipe = getattr(command, "recipe", None)
        if not isinstance(recipe, Recipe):
            raise RecipeError(f"run: a Command (prepare), got {type(command).__name__}")
        command = RefCommand(recipe)
    if len(params) != command.n_params:
        raise RecipeError(f"run: {command.n_params} params for {command.recipe!r}, got {len(params)}")
    if command.steer is not None:              # Recipe.steer: a running gait takes the target, nothing is made
        gait = ref.running(inst, TaskType.GAIT)
        if gait is not None:
            gait.set_target(_given(command.steer, params))
            return
    ref.pool.require(command.n_tasks)
    made = None
    try:
        for kind, anim, flags, held, a, b in reversed(command.steps):
            if kind == TaskType.GAIT:
                value = None if b is None else _given(b, params)
                made = ref.gait(inst, anim, target=_given(a, params), value=value, flags=flags, held=held)
            elif kind == TaskType.MIX:
                made = ref.mix(inst, anim[0], anim[1], weight=_given(a, params), flags=flags)
            elif kind == TaskType.PICK:
                made = ref.pick(inst, list(anim), b, value=_given(a, params), flags=flags)
            elif kind == TaskType.DIRECTION:
                made = ref.direction(inst, anim, direction=_given(a, params), flags=flags)
            elif kind == TaskType.CLIP:
                made = ref.clip(inst, _given(anim, params), made, blend=a, flags=flags, held=held,
                                on_end=_given(b, params))
            else:
                made = ref.loop(inst, _given(anim, params), flags=flags, held=held, on_end=_given(b, params))
    except BaseException:
        if made is not None:
            ref.discard(made)
        raise
    if command.place == Place.CHANGE:
        ref.change(inst, made, _given(command.fade, params))
        return
    try:
        (ref.push if command.place == Place.PUSH else ref.enqueue)(inst, made)
    except BaseException:
        ref.discard(made)
        raise


def run_columns(ref, commands, humans, args) -> None:
    """Prepared commands as columns (Player.commands' meaning, docs/api.md): row ``i`` runs
    ``commands[i]`` on ``humans[i]`` with the first n_params numbers of ``args[i]`` (an Arg
    that is an anim id as an int when whole, the others as floats), one row after another
    through ``run_command``. The columns are checked before any row runs (RecipeError
    naming the field and row); a row refused raises what ``run_command`` raises with
    ``row`` set on it (the rows before it run, the rest not)."""
    n = len(humans)
    if len(commands) != n:
        raise RecipeError(f"commands: {len(commands)} commands for {n} humans (one each)")
    if n == 0:
        return
    rows: list
    if args is None:
        rows = [()] * n
        width = 0
    else:
        try:
            table = np.asarray(args, dtype=np.float64)
        except (TypeError, ValueError):
            raise RecipeError("commands: args must be rows of numbers (a 2-D array, one row per command)") from None
        if table.ndim != 2 or table.shape[0] != n:
            raise RecipeError(f"commands: args must be a 2-D array of {n} rows, got shape {table.shape}")
        rows = table.tolist()
        width = table.shape[1]
    checked: dict[int, tuple] = {}
    plan = []
    for i, command in enumerate(commands):
        got = checked.get(id(command))
        if got is None or got[0] is not command:
            ref_command = command
            if not isinstance(command, RefCommand):
                recipe = getattr(command, "recipe", None)
                if not isinstance(recipe, Recipe):
                    raise RecipeError(f"commands[{i}]: a Command (Player.prepare), got {type(command).__name__}")
                ref_command = RefCommand(recipe)
            id_args: list[int] = []            # the Arg positions that are anim ids
            for kind, anim, _, _, _, end in ref_command.steps:
                if kind not in (TaskType.CLIP, TaskType.LOOP):
                    continue
                if isinstance(end, Arg):
                    raise RecipeError(f"commands[{i}]: an end callback given as an Arg cannot come from a row of "
                                      "numbers")
                if isinstance(anim, Arg):
                    id_args.append(anim.pos)
            got = checked[id(command)] = (command, ref_command, id_args)
        if got[1].n_params > width:
            raise RecipeError(f"commands: args[{i}] has {width} numbers, {got[1].recipe!r} takes {got[1].n_params}")
        plan.append(got)
    for i, ((_, ref_command, ids), inst, row) in enumerate(zip(plan, humans, rows)):
        params = tuple(int(v) if p in ids and float(v).is_integer() else float(v)
                       for p, v in enumerate(row[:ref_command.n_params]))
        try:
            run_command(ref, inst, ref_command, params)
        except Exception as exc:
            exc.row = i                        # type: ignore[attr-defined]
            exc.add_note(f"commands: row {i} (of the batch) was refused; the rows before it were run")
            raise
