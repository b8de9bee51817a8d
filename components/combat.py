"""The combat table: every human's health and fight state in structure-of-arrays columns.

One ``CombatTable`` per world (``SimContext.combats``) holds, one row per human, what
the fight rules keep on a fighter: health, the partner of a paired move and its role,
the partner's place, the state, the damage taken, the hits, the move in progress, the
locomotion intent and a throw's push, the updates left on the ground and the moves
started. The esper component ``Combat`` is a view onto one row (as ``Body`` is onto
the body table), so a snapshot of the world copies the columns, never an object per
human (Game.snapshot).

Text fields (``state``, ``role``) are kept as codes into the table's list of the texts
it has seen (``texts``, append-only: a code never changes its meaning, so old rows read
the same after a restore); a view reads back the very object first stored for a text
(an enum member stays that member). Spec: "Paired tasks".
"""
from __future__ import annotations

from typing import Any, NamedTuple, cast

import numpy as np
from numpy.typing import DTypeLike

from scuffle.anim.base.limits import MAX_COORD
from scuffle.anim.engine.store import HUMAN_ROWS, Table, _fast_view, left_world
from scuffle.components.bodies import rehome_views

__all__ = ["Combat", "CombatTable", "CombatViews", "CombatFieldError", "COMBAT_COLUMNS"]

_VEC3: DTypeLike = (np.float64, (3,))

# column -> dtype; a (float64, (3,)) column is an (N, 3) array.
COMBAT_COLUMNS: dict[str, DTypeLike] = {
    "health": np.float64,
    "max_health": np.float64,
    "partner": np.int64,
    "role": np.int32,                 # a code into CombatTable.texts
    "partner_place": _VEC3,
    "place_len": np.int8,             # 0: no partner place; else its length (2 or 3)
    "state": np.int32,                # a code into CombatTable.texts
    "damage_taken": np.float64,
    "hits": np.int64,
    "move_id": np.int64,
    "struck": np.bool_,
    "move_dir": _VEC3,
    "move_speed": np.float64,
    "impulse": _VEC3,
    "down_left": np.int64,
    "serial": np.int64,
}


class CombatViews(NamedTuple):
    """The combat table's columns as fast views (anim.engine.store._fast_view: a read gives the
    Python number a Combat field gives) for the fight rules' per-update loops, which read
    rows without a view's descriptor: ``gen`` the rows' generations, then the columns by
    row; ``move_dir`` and ``impulse`` flat, row r's (3,) at 3r, 3r + 1, 3r + 2.
    ``CombatTable.views()`` makes them; they are made again once a column is replaced
    (growth, a snapshot of another capacity put back: Table.row_views is dropped)."""

    gen: Any
    partner: Any
    state: Any
    move_speed: Any
    down_left: Any
    move_dir: Any
    impulse: Any


class CombatFieldError(ValueError):
    """A value a Combat field cannot hold (the message names the field)."""


class CombatTable(Table):
    """The combat rows of one world (see the module docstring).

    In: the starting capacity (rows; it doubles when full). ``take(view)`` gives a view a
    fresh row (the defaults: health 100, no partner, state "free"), ``release(row)``
    takes it back; ``owners`` maps each row in use to its view; ``texts`` / ``code(text)``
    the texts' codes. Rejected: releasing a row not in use (ValueError, from Table.free).
    """

    def __init__(self, capacity: int = HUMAN_ROWS):
        super().__init__(COMBAT_COLUMNS, capacity)
        self.owners: dict[int, Combat] = {}
        self.texts: list[Any] = ["", "free"]
        self._codes: dict[str, int] = {"": 0, "free": 1}

    def code(self, text: str) -> int:
        """The code of ``text`` (a new one the first time); an enum member replaces a plain
        string of the same text, so reads give the member back."""
        c = self._codes.get(text)
        if c is None:
            c = self._codes[text] = len(self.texts)
            self.texts.append(text)
        elif type(self.texts[c]) is str and type(text) is not str:
            self.texts[c] = text
        return c

    def views(self) -> CombatViews:
        """The columns' fast views (CombatViews), kept in ``row_views`` until a column is
        replaced. Rejected: a (N, 3) column that is not one contiguous float64 block (a
        corrupt table: ValueError naming it; the table's own arrays always are)."""
        v = self.row_views
        if v is None:
            flat = []
            for name in ("move_dir", "impulse"):
                a = getattr(self, name)
                if not (isinstance(a, np.ndarray) and a.ndim == 2 and a.shape[1] == 3 and a.dtype == np.float64
                        and a.flags.c_contiguous):
                    raise ValueError(f"CombatTable.{name}: not a contiguous (N, 3) float64 column")
                flat.append(_fast_view(a.reshape(-1)))
            v = self.row_views = CombatViews(self.m_gen, self.m_partner, self.m_state, self.m_move_speed,
                                             self.m_down_left, *flat)
        return cast(CombatViews, v)

    def take(self, view: "Combat") -> int:
        """A row with the defaults for ``view``; returns the row."""
        r = self.alloc()
        self.health[r] = self.max_health[r] = 100.0
        self.partner[r] = self.move_id[r] = -1
        self.state[r] = 1
        self.owners[r] = view
        return r

    def release(self, row: int) -> None:
        """Give a row back: the view that had it is stale from now on (StaleHandle)."""
        self.free(row)
        self.owners.pop(row, None)

    def rehome(self, views) -> None:
        """Make this table hold exactly ``views`` (a world's Combat components): a view on
        another table (a standalone ``Combat()``) is copied into a row here; a row whose
        view is not among them (its entity was deleted) is given back, and that view is
        stale (StaleHandle). Rejected: a stale view among ``views`` (StaleHandle)."""
        rehome_views(self, views)


class _Num:
    """A number field of the view (``cast``: float, int or bool)."""

    __slots__ = ("name", "cast", "view")

    def __init__(self, name: str, cast: type):
        self.name, self.cast = name, cast
        self.view = "m_" + name                     # the column's fast view (anim.engine.store._fast_view)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        t, r = obj._table, obj._row
        if t.m_gen[r] != obj._gen:                  # Combat._at, inlined (read on every update)
            raise left_world("Combat", self.name, r, "combat")
        return self.cast(getattr(t, self.view)[r])

    def __set__(self, obj, value) -> None:
        if value is None and self.name == "partner":        # no partner: -1
            value = -1
        try:
            v = self.cast(value)
            if self.cast is float and not abs(v) <= MAX_COORD:                      # NaN fails too
                raise ValueError("not finite or too large")
        except (ValueError, TypeError, OverflowError) as e:
            raise CombatFieldError(f"Combat.{self.name}: expected a {self.cast.__name__}, got {value!r}") from e
        getattr(obj._table, self.name)[obj._at(self.name)] = v


class _Text:
    """A text field of the view, kept as a code (CombatTable.texts)."""

    __slots__ = ("name", "view")

    def __init__(self, name: str):
        self.name = name
        self.view = "m_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        t, r = obj._table, obj._row
        if t.m_gen[r] != obj._gen:
            raise left_world("Combat", self.name, r, "combat")
        return t.texts[getattr(t, self.view)[r]]      # (a code: an int, or numpy's, an index too)

    def __set__(self, obj, value) -> None:
        if not isinstance(value, str):
            raise CombatFieldError(f"Combat.{self.name}: expected a str, got {value!r}")
        t = obj._table
        getattr(t, self.name)[obj._at(self.name)] = t.code(value)


class _Vec:
    """A (3,) float64 field: reads give the row's live view; assignment copies into it."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        t, r = obj._table, obj._row
        if t.m_gen[r] != obj._gen:
            raise left_world("Combat", self.name, r, "combat")
        return getattr(t, self.name)[r]

    def __set__(self, obj, value) -> None:
        try:
            v = np.asarray(value, dtype=np.float64)
            if v.shape != (3,) or not (np.abs(v) <= MAX_COORD).all():
                raise ValueError("not 3 finite numbers")
        except (ValueError, TypeError, OverflowError) as e:
            raise CombatFieldError(f"Combat.{self.name}: expected 3 finite numbers, got {value!r}") from e
        getattr(obj._table, self.name)[obj._at(self.name)] = v


class Combat:
    """Health and the fight state of one human (rules: game/fighters): a view onto one
    row of a ``CombatTable``.

    Fields: ``health``, ``max_health``; ``partner`` the other human of a paired move (-1
    none; None sets -1) and ``role`` ("attacker" / "victim" while paired, else ""); ``partner_place``
    the type-8 point (x right, y forward, metres; None when there is none); ``state``
    (a FightState); ``damage_taken``, ``hits``; ``move_id`` the move in progress (anim
    id); ``struck`` its hit has landed; ``move_dir`` (3,) and ``move_speed`` the
    locomotion; ``impulse`` (3,) a throw's push; ``down_left`` updates left on the
    ground; ``serial`` the moves started (end callbacks check it).

    In: the fields as keywords (or health, max_health first) and ``table``, the world's
    table to take a row in (None: a private one-row table; Game.add_human takes the
    world's). A handle: once its human leaves the world the row goes back and every
    field raises StaleHandle (``alive()`` False). Rejected: a value a field cannot hold
    (CombatFieldError naming it).
    """

    __slots__ = ("_table", "_row", "_gen")

    health = _Num("health", float)
    max_health = _Num("max_health", float)
    partner = _Num("partner", int)
    role = _Text("role")
    state = _Text("state")
    damage_taken = _Num("damage_taken", float)
    hits = _Num("hits", int)
    move_id = _Num("move_id", int)
    struck = _Num("struck", bool)
    move_dir = _Vec("move_dir")
    move_speed = _Num("move_speed", float)
    impulse = _Vec("impulse")
    down_left = _Num("down_left", int)
    serial = _Num("serial", int)

    def __init__(self, health: float = 100.0, max_health: float = 100.0, *, table: CombatTable | None = None,
                 **fields: Any):
        self._table: CombatTable = table if table is not None else CombatTable(1)
        self._row: int = self._table.take(self)
        self._gen: int = int(self._table.gen[self._row])
        self.health = health
        self.max_health = max_health
        for name, value in fields.items():
            if name not in _FIELDS:
                self._table.release(self._row)
                raise CombatFieldError(f"Combat: no field {name!r}")
            setattr(self, name, value)

    def _at(self, field: str) -> int:
        """The row, after checking its generation (StaleHandle naming ``Combat.field``)."""
        r = self._row
        if self._table.m_gen[r] != self._gen:
            raise left_world("Combat", field, r, "combat")
        return r

    def alive(self) -> bool:
        """Whether the row is still this view's (False once its human left the world)."""
        return bool(self._table.gen[self._row] == self._gen)

    def release(self) -> None:
        """Give the row back to its table: the view is stale from now on (the human left
        the world). A second release does nothing."""
        if self.alive():
            self._table.release(self._row)

    @property
    def partner_place(self) -> np.ndarray | None:
        """The partner's place (a live view of its numbers), None when there is none."""
        t, r = self._table, self._at("partner_place")
        n = int(t.place_len[r])
        return t.partner_place[r, :n] if n else None

    @partner_place.setter
    def partner_place(self, value) -> None:
        t, r = self._table, self._at("partner_place")
        if value is None:
            t.place_len[r] = 0
            return
        try:
            v = np.asarray(value, dtype=np.float64)
            if v.shape not in ((2,), (3,)) or not (np.abs(v) <= MAX_COORD).all():
                raise ValueError("not 2 or 3 finite numbers")
        except (ValueError, TypeError, OverflowError) as e:
            raise CombatFieldError(f"Combat.partner_place: expected None or 2-3 finite numbers, got {value!r}") from e
        t.partner_place[r] = 0.0
        t.partner_place[r, :len(v)] = v
        t.place_len[r] = len(v)

    @property
    def table(self) -> CombatTable:
        """The table this view's numbers live in."""
        return self._table

    @property
    def row(self) -> int:
        """The view's row in ``table``."""
        return self._row

    def rebind(self, table: CombatTable, row: int) -> None:
        """Make this view the handle of row ``row`` of ``table`` at the row's generation now
        (a restored state's: the row its owner had when it was saved)."""
        self._table, self._row, self._gen = table, row, int(table.gen[row])

    def move_to(self, table: CombatTable) -> None:
        """Copy this row into a new row of ``table`` and give the old row back. Rejected:
        a stale view (StaleHandle)."""
        old, row = self._table, self._at("move_to")
        if table is old:
            return
        values = {name: getattr(self, name) for name in _FIELDS}
        values["move_dir"], values["impulse"] = self.move_dir.copy(), self.impulse.copy()
        p = self.partner_place
        place = None if p is None else p.copy()
        new = table.take(self)
        old.release(row)
        self._table, self._row, self._gen = table, new, int(table.gen[new])
        for name, v in values.items():
            setattr(self, name, v)
        self.partner_place = place

    def detach(self) -> None:
        """Take the view out of its table onto a private one-row table, its numbers kept
        (a standalone Combat again). The world never does this: a human leaving it gives
        the row back and the view is stale (``release``)."""
        self.move_to(CombatTable(1))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Combat):
            return NotImplemented
        a, b = self.partner_place, other.partner_place
        return all(np.array_equal(getattr(self, n), getattr(other, n)) for n in _FIELDS) and (
            (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b)))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if not self.alive():
            return f"Combat(stale: row {self._row} went back)"
        return (f"Combat(health={self.health}, state={str(self.state)!r}, partner={self.partner}, "
                f"role={self.role!r}, move_id={self.move_id})")


_FIELDS = ("health", "max_health", "partner", "role", "state", "damage_taken", "hits", "move_id", "struck",
           "move_dir", "move_speed", "impulse", "down_left", "serial")
