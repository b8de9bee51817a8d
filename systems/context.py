"""The state the systems share: the player, the batched pose and the per-update lists.

A ``SimContext`` is what a host hands to ``game.schedule.install`` (or to each
processor) so that the systems run without globals: several worlds, each with its own
context, can live side by side.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from scuffle.anim.base.limits import MAX_DT, check_float
from scuffle.anim.playback.player import Player
from scuffle.anim.maths.pose import PoseBatch
from scuffle.components import BodyTable, CombatTable
from scuffle.systems.crowd import Crowd

__all__ = ["SimContext", "MAX_ROOT_SPEED", "HandlerError"]


class HandlerError(RuntimeError):
    """A game's callback raised during an update; the update still completed for everyone.

    An event handler, an end, wrap or report callback of a task, or an action that raises
    does not stop the update: the other handlers, the flush, the state update, root motion, the actions
    and the placement all run for every human, and then ``Game.step()`` raises this, once,
    carrying every exception of the update. ``errors``: (phase, exception) in the order
    they were raised, phase one of "animation" (wrap callbacks), "events" (handlers),
    "flush" (end and report callbacks), "state" (the state functions), "actions" (the
    actions phase's callables);
    ``update`` the update's number. The first
    original is also the ``__cause__``. The world is then exactly as after an update
    whose callbacks did not raise, less what the raising ones would have done.
    """

    def __init__(self, update: int, errors: list[tuple[str, BaseException]]):
        self.update, self.errors = update, list(errors)
        first = errors[0][1] if errors else None
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"update {update}: a callback raised in the {errors[0][0] if errors else '?'} phase: "
                         f"{type(first).__name__}: {first}{more}; the update completed for every human")

# Human_ApplyRootMotion caps the root velocity at 50 m/s (0x0023f238).
MAX_ROOT_SPEED = 50.0


@dataclass(slots=True)
class SimContext:
    """Shared, per-world state of the systems.

    ``player`` the animation player; ``dt`` the update's time (1/30 s by default), which
    the animation step and the state update both take: it is the player's
    ``options.dt`` (PlayerOptions.dt), read from there and written there (setting it
    replaces the player's options by a copy with that dt), so a Game has one step; ``update`` the
    number of the update being run (0 first), set by the first system (AnimationStep)
    from ``updates_run``, the number of updates begun, which it then counts on: the
    counter advances with every ``esper.process()``, whoever drives the loop; ``entities`` the humans in the order the
    animation step visited them (entity ids ascending); ``poses`` their sampled poses
    and ``bone_pos`` / ``bone_rot`` the model-space bone transforms (row = PoseRef.row);
    ``handlers`` event type -> callables(ctx, entity, fired_event); ``row_handlers``
    (event types or None, callable(ctx, EventRows)) the rows handlers (``on_rows``); ``actions`` the
    callables(ctx) the actions phase runs, in order; ``state_functions`` the callables(ctx)
    the state update runs first, in order, to set each body's ``state_velocity`` from its
    intent (the state function of 0x0023fea8, before root motion); ``reference`` moves the bodies by
    the readable root motion (systems.motion.root_motion); ``probe`` (for tests) callables(ctx, system_name) run after
    each system; ``fired`` (entity, FiredEvents, instance) of the humans that fired events
    this update, in entity order (a sequence whose entries are made when first read:
    systems.crowd.FiredList; set by the animation step; None before it runs: the
    dispatch then looks at every FiredEvents); ``bodies`` the world's body table (every Body component is a view onto
    one of its rows; the state update moves a Body made elsewhere into it); ``combats``
    the world's combat table (each human's Combat component is a view onto one of its
    rows; Game.add_human takes it); ``crowd`` the world's humans and bodies in entity order
(systems.crowd.Crowd, kept by Game.add_human and remove_human); ``resimulating`` True while a rollback session re-runs
    an update (scuffle.net); ``failures``
    the (phase, exception) of the game's callbacks that raised in the update being run
    (``fail``; ``Game.step`` raises them as one HandlerError once the update is complete).
    """

    player: Player
    update: int = 0
    updates_run: int = 0
    entities: list[int] = field(default_factory=list)
    poses: PoseBatch | None = None
    bone_pos: np.ndarray | None = None
    bone_rot: np.ndarray | None = None
    handlers: dict[int, list[Callable]] = field(default_factory=dict)
    default_handlers: list[Callable] = field(default_factory=list)
    row_handlers: list[tuple[tuple[int, ...] | None, Callable]] = field(default_factory=list)
    actions: list[Callable] = field(default_factory=list)
    state_functions: list[Callable] = field(default_factory=list)
    reference: bool = False
    probe: list[Callable] = field(default_factory=list)
    max_root_speed: float = MAX_ROOT_SPEED
    fired: Sequence | None = None
    bodies: BodyTable = field(default_factory=BodyTable)
    combats: CombatTable = field(default_factory=CombatTable)
    crowd: Crowd = field(init=False)
    failures: list = field(default_factory=list)
    # True while a rollback session (scuffle.net) runs an update again with corrected
    # inputs: event handlers that play sounds or sparks skip them then (they played the
    # first time). Never saved: it describes the run, not the world.
    resimulating: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "crowd", Crowd(self))

    def fail(self, phase: str, exc: BaseException) -> None:
        """Keep a game callback's exception for the end of the update (HandlerError)."""
        self.failures.append((phase, exc))

    def report_failures(self) -> None:
        """At the end of the update (the last system): raise the callbacks' exceptions kept
        by ``fail`` as one HandlerError (its cause the first), and forget them."""
        if self.failures:
            failed, self.failures = self.failures, []
            raise HandlerError(self.update, failed) from failed[0][1]

    @property
    def dt(self) -> float:
        """The update's time (s): the player's ``options.dt``, the one value both the
        animation step and the state update take (0x005102cc, 1/30 s, by default)."""
        return self.player.options.dt

    @dt.setter
    def dt(self, value: float) -> None:
        # another value: a new options object, so what the player keeps per options (the
        # step's rules, the prepared commands' templates) is made again once, on first use
        value = check_float("ctx.dt", value, 0.0, MAX_DT)
        opts = self.player.options
        if value != opts.dt:
            self.player.options = dataclasses.replace(opts, dt=value)

    def __setattr__(self, name: str, value) -> None:
        """Set a field; ``dt`` must be a finite number of seconds 0 to MAX_DT (1 s) (the
        player's ``options.dt`` then holds it) and ``max_root_speed`` a finite number >= 0
        (RangeError naming it, nothing changed)."""
        if name == "max_root_speed":
            value = check_float("ctx.max_root_speed", value, 0.0, None)
        object.__setattr__(self, name, value)

    def on(self, event_type: int, handler: Callable) -> None:
        """Register a handler for one event type."""
        self.handlers.setdefault(int(event_type), []).append(handler)

    def on_rows(self, event_types, handler: Callable) -> None:
        """Register a rows handler: ``handler(ctx, rows)`` once per update with that
        update's events of ``event_types`` (ints; None: every type) as columns
        (systems.events.EventRows), after the per-event handlers (systems.events)."""
        wanted = None if event_types is None else tuple(sorted({int(t) for t in event_types}))
        self.row_handlers.append((wanted, handler))
