"""scuffle's pytest plugin: fixtures for a Game, a fight, and a record of each update.

Registered through the ``pytest11`` entry point, so any project that installs scuffle
gets it (``pytest -p no:scuffle`` turns it off). Fixtures:

- ``scuffle_game``: a fresh ``Game`` in its own esper world, closed after the test;
- ``scuffle_new_game``: a factory of Games (``Game``'s arguments), all closed after;
- ``scuffle_fight``: a ``Fight`` on a Game with two fighters on the demo set, "p1" at
  (0, -1.5, 0) facing +y and "p2" at (0, 1.5, 0) facing -y, both on the fight idle;
- ``scuffle_worlds``: restores esper's current world and deletes every esper world the
  test created (opt in, or make it autouse in your conftest).

Helpers to record what each update did and assert on it:

    def test_my_system_runs_after_the_state_update(scuffle_game):
        log = record_updates(scuffle_game, extra=[Regen])   # a host system, by its class
        scuffle_game.step()
        assert_runs_between(log.order(0), "Regen", after="StateUpdate", before="Actions")

``UpdateLog.order(u)`` lists the systems update ``u`` ran, by class name, in the order
they ran (scuffle's six in SCHEDULE order, with any ``extra`` host system where esper's
priorities put it); ``UpdateLog.events(u)`` the events dispatched in update ``u`` as
``EventRecord`` (update, human, anim id, frame, type). The record comes from the
systems' probes (``SimContext.probe``: each of scuffle's systems calls every probe
with the context and its short name after it runs) and from a default event handler
(``SimContext.default_handlers``).

This module imports pytest only; scuffle's modules load when a fixture or helper is
first used, so the plugin costs nothing at the start of a test run. It never imports
pygame.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import pytest

if TYPE_CHECKING:
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.runtime.world import Game

__all__ = ["EventRecord", "UpdateLog", "record_updates", "assert_order", "assert_runs_between",
           "PROBE_NAMES", "schedule_names", "scuffle_worlds", "scuffle_new_game", "scuffle_game",
           "scuffle_fight", "FIGHTERS"]

# The short name each of scuffle's systems passes to the probes -> its class name.
PROBE_NAMES: dict[str, str] = {
    "animation": "AnimationStep",
    "events": "EventDispatch",
    "flush": "DeferredFlush",
    "state": "StateUpdate",
    "actions": "Actions",
    "placement": "PairedPlacement",
}

# The scuffle_fight fixture's fighters: name -> (position, heading in degrees).
FIGHTERS: dict[str, tuple[tuple[float, float, float], float]] = {
    "p1": ((0.0, -1.5, 0.0), 0.0),
    "p2": ((0.0, 1.5, 0.0), 180.0),
}


def schedule_names() -> list[str]:
    """The class names of scuffle's systems in SCHEDULE order (one update's order)."""
    from scuffle.game.runtime.schedule import SCHEDULE
    return [s.__name__ for s in SCHEDULE]


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event dispatched to the handlers: the update, the human's name (or its entity
    id as a string when the Game does not know it), the anim id that fired it, the clip's
    frame and the event type (an ``EventType`` when the spec names it)."""

    update: int
    human: str
    anim_id: int
    frame: int
    type: int


@dataclass
class UpdateLog:
    """What the recorded updates did: ``systems`` (update, system class name) in the
    order they ran, ``dispatched`` every EventRecord. Made by ``record_updates``;
    ``detach()`` stops recording."""

    game: Game
    systems: list[tuple[int, str]] = field(default_factory=list)
    dispatched: list[EventRecord] = field(default_factory=list)
    _undo: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def updates(self) -> list[int]:
        """The numbers of the updates recorded, in order."""
        seen: list[int] = []
        for u, _ in self.systems:
            if not seen or seen[-1] != u:
                seen.append(u)
        return seen

    def order(self, update: int | None = None) -> list[str]:
        """The systems one update ran, in order (None: the last update recorded).
        Rejected: an update that was not recorded (KeyError)."""
        ups = self.updates()
        if update is None:
            if not ups:
                raise KeyError("no update recorded yet: step the game first")
            update = ups[-1]
        names = [n for u, n in self.systems if u == update]
        if not names:
            raise KeyError(f"update {update} was not recorded (recorded: {ups})")
        return names

    def events(self, update: int | None = None, *, human: str | None = None,
               type: int | None = None) -> list[EventRecord]:
        """The events dispatched, optionally of one update, one human, one type."""
        return [e for e in self.dispatched
                if (update is None or e.update == update) and (human is None or e.human == human)
                and (type is None or e.type == int(type))]

    def detach(self) -> None:
        """Stop recording: remove the probe, the event handler and the wrappers."""
        while self._undo:
            self._undo.pop()()


def record_updates(game: Game, extra: Iterable[type] = ()) -> UpdateLog:
    """Record every later update of ``game``: the systems in the order they run and the
    events dispatched. ``extra`` host processor classes already added to the Game's esper
    world are recorded too, after they run, by their class name.
    Rejected: an ``extra`` class with no processor in the Game's world (LookupError)."""
    import esper

    log = UpdateLog(game)
    ctx = game.ctx

    def probe(c: Any, short: str) -> None:
        log.systems.append((c.update, PROBE_NAMES.get(short, short)))

    def on_event(c: Any, ent: int, fe: Any) -> None:
        name = next((n for n, e in game.names.items() if e == ent), str(ent))
        log.dispatched.append(EventRecord(c.update, name, int(fe.anim_id), int(fe.event.frame),
                                          _event_type(int(fe.event.type))))

    ctx.probe.append(probe)
    ctx.default_handlers.append(on_event)
    log._undo.append(lambda: ctx.probe.remove(probe))
    log._undo.append(lambda: ctx.default_handlers.remove(on_event))
    with game.active():
        for cls in extra:
            proc = esper.get_processor(cls)
            if proc is None:
                raise LookupError(f"extra: no {cls.__name__} processor in esper world {game.world!r}")
            _wrap(proc, log, cls.__name__)
    return log


def _event_type(t: int) -> int:
    from scuffle.anim.data.clip import EventType
    try:
        return EventType(t)
    except ValueError:
        return t


def _wrap(proc: Any, log: UpdateLog, name: str) -> None:
    """Log a host processor's runs: its ``process`` wrapped on the instance."""
    inner = proc.process
    ctx = log.game.ctx

    def process(*args: Any, **kwargs: Any) -> Any:
        out = inner(*args, **kwargs)
        log.systems.append((ctx.update, name))
        return out

    own = vars(proc).get("process")               # a wrapper someone else put on the instance
    proc.process = process

    def undo() -> None:
        if own is None:
            del proc.process
        else:
            proc.process = own

    log._undo.append(undo)


def assert_order(actual: Sequence[str], expected: Sequence[str] | None = None) -> None:
    """Assert that one update ran exactly ``expected`` (None: scuffle's SCHEDULE order),
    with a message that shows both lists and where they part."""
    want = list(expected) if expected is not None else schedule_names()
    got = list(actual)
    if got != want:
        at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise AssertionError(f"system order differs at position {at}:\n  ran:      {got}\n  expected: {want}")


def assert_runs_between(actual: Sequence[str], system: str, *, after: str | None = None,
                        before: str | None = None) -> None:
    """Assert that ``system`` ran once in the update, after ``after`` and before ``before``
    (class names; either may be None)."""
    got = list(actual)
    if got.count(system) != 1:
        raise AssertionError(f"{system} ran {got.count(system)} times in the update: {got}")
    i = got.index(system)
    for other, must_be_before in ((after, True), (before, False)):
        if other is None:
            continue
        if other not in got:
            raise AssertionError(f"{other} did not run in the update: {got}")
        j = got.index(other)
        if (j > i) if must_be_before else (j < i):
            where = ("before", "after") if must_be_before else ("after", "before")
            raise AssertionError(f"{system} ran {where[0]} {other}, expected {where[1]} it: {got}")


# ------------------------------------------------------------------------ fixtures

@pytest.fixture
def scuffle_worlds() -> Iterator[None]:
    """Restore esper's current world and delete every esper world the test created."""
    import esper

    before = set(esper.list_worlds())
    current = esper.current_world
    yield
    if current not in esper.list_worlds():
        current = "default"
    esper.switch_world(current)
    for w in set(esper.list_worlds()) - before:
        if w != current:
            esper.delete_world(w)


@pytest.fixture
def scuffle_new_game() -> Iterator[Callable[..., Game]]:
    """A factory of Games (``Game``'s arguments), every one closed after the test."""
    from scuffle.game.runtime.world import Game

    games: list[Game] = []

    def make(*args: Any, **kw: Any) -> Game:
        g = Game(*args, **kw)
        games.append(g)
        return g

    yield make
    for g in games:
        g.close()


@pytest.fixture
def scuffle_game(scuffle_new_game: Callable[..., Game]) -> Game:
    """A fresh Game in its own esper world, closed after the test."""
    return scuffle_new_game()


@pytest.fixture
def scuffle_fight(scuffle_game: Game) -> Fight:
    """The fight rules on a fresh Game with two fighters on the demo set (``FIGHTERS``),
    facing each other 3 m apart, each on the fight idle loop. ``fight.game`` is the Game."""
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.fighters.moves import Move
    from scuffle.game.fighters.moveset import demo_set

    aset = demo_set()
    for name, (pos, heading) in FIGHTERS.items():
        scuffle_game.add_human(name, aset, position=pos, heading=heading)
    fight = Fight(scuffle_game)
    for name in FIGHTERS:
        inst = scuffle_game.instance(name)
        if not inst.stack:                       # nothing playing yet: start the fight idle
            scuffle_game.change(name, scuffle_game.player.loop(inst, int(Move.FIGHT_IDLE)))
    return fight
