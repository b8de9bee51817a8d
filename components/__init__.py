"""esper components: slotted dataclasses and the Body view, holding data only (no game
logic, no pygame objects).

One human is one entity with these components:

    Name         its scenario / trace name
    Animator     the CharacterInstance: task stack and queue (the tasks own the cursors)
    HumanRecord  the record's held/state flags (+0x08) and playing anim id (+0x20)
    PoseRef      its row in the world's batched pose (the pose itself lives in SoA arrays)
    RangeRecords the human's Anim Range List records (+0x160 in the original's record)
    AnimSetRef   the anim set its clips come from (shared, read-only)
    Body         position, heading, velocities and the attachment (+0x280): a view onto
                 its row of the world's BodyTable (components.bodies; SoA columns)
    Combat       health and the fight state (rules in game/fighters): a view onto its row
                 of the world's CombatTable (components.combat; SoA columns)
    FiredEvents  the events its animation fired this update, for dispatch and the trace

Spec: "Root motion", "Where clips are found", "The Anim Range List", "Paired tasks".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.rangelist import RangeList
from scuffle.anim.engine.stack import CharacterInstance, HumanRecord
from scuffle.components.bodies import NO_ATTACHMENT, Body, BodyFieldError, BodyTable
from scuffle.components.combat import Combat, CombatFieldError, CombatTable

__all__ = ["Name", "Animator", "HumanRecord", "PoseRef", "RangeRecords", "AnimSetRef", "Body",
           "BodyTable", "BodyFieldError", "Combat", "CombatTable", "CombatFieldError", "FiredEvents",
           "NO_ATTACHMENT"]


@dataclass(slots=True)
class Name:
    """The human's name (scenario and trace)."""
    value: str


@dataclass(slots=True)
class Animator:
    """The character instance the animation system plays on (stack, queue, cursors)."""

    instance: CharacterInstance


class PoseRef:
    """Where this human's pose sits in the world's pose batch (-1 before the first sample).

    A view once the world's crowd links it (systems.crowd.Crowd): ``row`` is then the
    human's place in the last pose's layout, read from the crowd, so a human joining or
    leaving renumbers no one's PoseRef. ``PoseRef(row)`` holds a number of its own;
    assigning ``row`` unlinks it and holds the number given.
    """

    __slots__ = ("_row", "_crowd", "_ent")

    def __init__(self, row: int = -1):
        self._row = int(row)
        self._crowd = None
        self._ent = -1

    def link(self, crowd, ent: int) -> None:
        """Read ``row`` from ``crowd`` (its ``pose_place(ent)``) from now on."""
        self._crowd, self._ent = crowd, ent

    @property
    def row(self) -> int:
        crowd = self._crowd
        return self._row if crowd is None else crowd.pose_place(self._ent)

    @row.setter
    def row(self, value: int) -> None:
        self._crowd = None
        self._row = int(value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PoseRef):
            return NotImplemented
        return self.row == other.row

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PoseRef(row={self.row})"


@dataclass(slots=True)
class RangeRecords:
    """The human's Anim Range List (one 16-byte record per anim id)."""

    records: RangeList


@dataclass(slots=True)
class AnimSetRef:
    """The anim set (shared between humans, never written)."""

    anim_set: AnimSet


class FiredEvents:
    """The events this human's animation fired this update (anim.playback.cursor.FiredEvent).

    A view: once the animation step links it to the human's CharacterInstance
    (``source``), ``events`` is that instance's events of this update (made from the
    compiled step's event rows when first read). Assigning ``events`` unlinks it and
    holds the list given (the world's crowd, ``unlinked``, links it again when its human
    next fires). ``FiredEvents(events)`` holds a list of its own.
    """

    __slots__ = ("source", "_own", "_crowd", "_ent")

    def __init__(self, events: list | None = None, source: CharacterInstance | None = None):
        # its own list, made when first read unlinked (a crowd's humans are linked: none of
        # them holds an empty list it never reads)
        self._own: list | None = list(events) if events is not None else None
        self.source = source
        self._crowd: Any = None             # the world's crowd and the entity, set by the crowd
        self._ent = -1

    def link(self, crowd, ent: int) -> None:
        """Tell ``crowd`` (its ``unlinked``) when ``events`` is assigned: the human ``ent``'s."""
        self._crowd, self._ent = crowd, ent

    @property
    def events(self) -> list:
        if self.source is not None:
            return self.source.events
        own = self._own
        if own is None:
            own = self._own = []
        return own

    @events.setter
    def events(self, value: list) -> None:
        if self.source is not None and self._crowd is not None:
            self._crowd.unlinked[self._ent] = self
        self.source = None
        self._own = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FiredEvents):
            return NotImplemented
        return self.events == other.events

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FiredEvents({self.events!r})"
