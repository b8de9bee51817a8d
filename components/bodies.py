"""The bodies' table: every human's place in the world in structure-of-arrays columns.

One ``BodyTable`` per world (``SimContext.bodies``) holds, one row per human, the
position (N, 3), heading, velocity (N, 3), state velocity (N, 3), the attachment
(+0x280; -1 none) with its offset (N, 3) and heading, and the slide (target (N, 3),
a "sliding" flag, target heading, updates left). The esper component ``Body`` is a
view: a row handle whose attributes read and write that row, so the state update moves
the whole crowd in one compiled call over the columns (systems.motion.StateUpdate).

The table is an ``anim.engine.store.Table`` (doubling growth, a free list, a generation per
row), plus the view that owns each row. A Body is a handle: its table, its row and the
row's generation; once its human leaves the world (``Game.remove_human``, or its entity
deleted: the next crowd change gives the row back, ``BodyTable.rehome``) the row goes
back and any read or write raises StaleHandle (a ValueError naming the field), so a new
human that takes the row is never read through the old handle. A column array is
replaced when the table grows: a view never keeps one, it fetches the row from the
table's current column at each access (a vector read earlier is a numpy view of the old
row: it does not follow the handle).
Spec: "Root motion", "Paired tasks".
"""
from __future__ import annotations

from typing import Any, Generic, Iterable, Sequence, TypeVar, overload

import numpy as np
import numpy.typing as npt
from numpy.typing import DTypeLike

from scuffle.anim.base.limits import MAX_COORD
from scuffle.anim.engine.store import HUMAN_ROWS, Table, left_world

__all__ = ["rehome_views", "Body", "BodyTable", "BodyFieldError", "NO_ATTACHMENT", "BODY_COLUMNS", "flat_views"]

# The attachment of a body held by no one (+0x280 empty).
NO_ATTACHMENT = -1

_VEC3: DTypeLike = (np.float64, (3,))

# column -> dtype; a (float64, (3,)) column is an (N, 3) array.
BODY_COLUMNS: dict[str, DTypeLike] = {
    "position": _VEC3,
    "heading": np.float64,
    "velocity": _VEC3,
    "state_velocity": _VEC3,
    "attachment": np.int64,
    "attach_offset": _VEC3,
    "attach_heading": np.float64,
    "slide_target": _VEC3,
    "sliding": np.bool_,
    "slide_heading": np.float64,
    "slide_left": np.int64,
}


def flat_views(table: Table, names: tuple[str, ...]) -> tuple:
    """Flat memoryviews of a table's (N, 3) float64 columns ``names`` (row r's x y z at
    3r, 3r+1, 3r+2), for the per-update loops' reads and writes of a few rows without a
    numpy row view per access: kept on the table (``m_flat``, not state: an "m_" name is
    never saved or copied) with the arrays they view, and made again when one of those is
    no longer the table's (it grew, a restore gave it a block of another size). In: the
    table and the names (a tuple, the cache's key). Out: one memoryview per name, in that
    order."""
    kept: dict[tuple[str, ...], tuple] | None = table.__dict__.get("m_flat")
    if kept is None:
        kept = {}
        object.__setattr__(table, "m_flat", kept)
    got = kept.get(names)
    if got is not None:
        arrays = got[0]
        for k, name in enumerate(names):
            if arrays[k] is not getattr(table, name):
                break
        else:
            return got[1]
    arrays = tuple([getattr(table, name) for name in names])
    views = tuple([memoryview(a.reshape(-1)) for a in arrays])
    kept[names] = (arrays, views)
    return views


class BodyFieldError(ValueError):
    """A value a Body field cannot hold (the message names the field)."""


def rehome_views(table, views: Iterable) -> None:
    """Make ``table`` (a BodyTable or a CombatTable, its ``owners``: row -> view) hold
    exactly ``views``: a view on another table is copied into a row here (``move_to``),
    a row whose view is not among them is given back (``release``: that view is stale
    from now on). Rejected: a stale view among ``views`` (its ``_at`` raises StaleHandle)."""
    keep = set()
    for v in views:
        if v._table is not table:
            v.move_to(table)
        keep.add(v._at("row"))
    for row in [r for r in table.owners if r not in keep]:
        table.release(row)


class BodyTable(Table):
    """The bodies of one world (see the module docstring).

    In: the starting capacity (rows; it doubles when full). ``take(body)`` gives a
    body a fresh row (zeroed, no attachment), ``release(row)`` takes it back (its
    generation counts up: the view that had it is stale), ``owners`` maps each row in
    use to its view. Rejected: releasing a row not in use (ValueError, from Table.free).
    """

    def __init__(self, capacity: int = HUMAN_ROWS):
        super().__init__(BODY_COLUMNS, capacity)
        self.owners: dict[int, Body] = {}

    def take(self, body: "Body") -> int:
        """A zeroed row for ``body`` with no attachment; returns the row."""
        row = self.alloc()
        self.attachment[row] = NO_ATTACHMENT
        self.owners[row] = body
        return row

    def release(self, row: int) -> None:
        """Give a row back: the view that had it is stale from now on (StaleHandle)."""
        self.free(row)
        self.owners.pop(row, None)

    def rehome(self, bodies: Iterable["Body"]) -> None:
        """Make this table hold exactly ``bodies`` (a world's Body components).

        A body on another table (a standalone ``Body()``, or one moved in from another
        world) is copied into a row here; a row here whose view is not among ``bodies``
        (its entity was deleted) is given back, and that view is stale (StaleHandle).
        Rejected: a stale body among ``bodies`` (StaleHandle).
        """
        rehome_views(self, bodies)


# What a vector field of a Body takes: three numbers (a sequence or a numpy array).
Vec3Like = Sequence[float] | npt.NDArray[Any]
_N = TypeVar("_N", int, float)


class _Vec3:
    """A (3,) float64 field of the Body view: reads give the row's live, writable view of
    the table's current column; assignment copies 3 numbers into it."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> "_Vec3": ...

    @overload
    def __get__(self, obj: "Body", owner: type | None = None) -> npt.NDArray[np.float64]: ...

    def __get__(self, obj: "Body | None", owner: type | None = None) -> "_Vec3 | npt.NDArray[np.float64]":
        if obj is None:
            return self
        t, r = obj._table, obj._row
        if t.m_gen[r] != obj._gen:                  # Body._at, inlined (read on every update)
            raise left_world("Body", self.name, r, "body")
        return getattr(t, self.name)[r]

    def __set__(self, obj: "Body", value: Vec3Like) -> None:
        if value.__class__ is tuple and len(value) == 3:         # three floats (the placement's): checked first
            x, y, z = value
            if x.__class__ is float and y.__class__ is float and z.__class__ is float \
                    and abs(x) <= MAX_COORD and abs(y) <= MAX_COORD and abs(z) <= MAX_COORD:
                getattr(obj._table, self.name)[obj._at(self.name)] = value
                return
        row = getattr(obj._table, self.name)[obj._at(self.name)]
        old = row.tolist()
        try:
            row[:] = value
        except (ValueError, TypeError, OverflowError) as e:
            row[:] = old
            raise BodyFieldError(f"Body.{self.name}: expected 3 numbers, got {value!r}") from e
        x, y, z = row.tolist()
        if not (abs(x) <= MAX_COORD and abs(y) <= MAX_COORD and abs(z) <= MAX_COORD):   # NaN fails too
            row[:] = old
            raise BodyFieldError(f"Body.{self.name}: expected 3 finite numbers within +-{MAX_COORD:g}, "
                                 f"got {[x, y, z]!r}")


class _Scalar(Generic[_N]):
    """A number field of the Body view (``cast`` makes the Python value: float or int)."""

    __slots__ = ("name", "cast", "view")

    def __init__(self, name: str, cast: type[_N]):
        self.name = name
        self.cast: type[_N] = cast
        self.view = "m_" + name                     # the column's fast view (anim.engine.store._fast_view)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> "_Scalar[_N]": ...

    @overload
    def __get__(self, obj: "Body", owner: type | None = None) -> _N: ...

    def __get__(self, obj: "Body | None", owner: type | None = None) -> "_Scalar[_N] | _N":
        if obj is None:
            return self
        t, r = obj._table, obj._row
        if t.m_gen[r] != obj._gen:                  # Body._at, inlined (read on every update)
            raise left_world("Body", self.name, r, "body")
        return self.cast(getattr(t, self.view)[r])

    def __set__(self, obj: "Body", value: _N | np.number[Any]) -> None:
        r = obj._at(self.name)
        try:
            v = self.cast(value)
            if self.cast is float and not abs(v) <= MAX_COORD:                      # NaN fails too
                raise ValueError("not finite or too large")
            getattr(obj._table, self.view)[r] = v       # the fast view (a value it cannot hold: ValueError)
        except (ValueError, TypeError, OverflowError) as e:
            within = f" finite within +-{MAX_COORD:g}" if self.cast is float else ""
            raise BodyFieldError(f"Body.{self.name}: expected a{within} number, got {value!r}") from e


class Body:
    """The human's place in the world (metres, z up; heading in degrees, counter-clockwise
    seen from above, 0 facing +y; the human's own frame is x right, y forward): a view
    onto one row of a ``BodyTable``.

    ``state_velocity`` is what the state function sets (locomotion, knock-backs);
    ``velocity`` is that plus the root velocity, as applied this update.
    ``attachment`` is the entity it is attached to (+0x280; -1 none), held at
    ``attach_offset`` (x right, y forward in the holder's frame) and ``attach_heading``
    degrees relative to the holder. ``slide_to`` (None or the target position),
    ``slide_heading`` and ``slide_left`` (updates left) are a slide in progress
    (system 6 moves it).

    In: the fields (as keywords or in that order) and ``table``, the world's table to
    take a row in (None: a private one-row table; the world's state update moves the
    body into its table). The vector fields read as live (3,) views of the row and
    assignment copies into it. A handle (table, row, generation): once its human left
    the world its row went back and every field raises StaleHandle (``alive()`` False).
    Rejected: a value a field cannot hold (BodyFieldError).
    """

    __slots__ = ("_table", "_row", "_gen")

    position = _Vec3("position")
    heading: _Scalar[float] = _Scalar("heading", float)
    velocity = _Vec3("velocity")
    state_velocity = _Vec3("state_velocity")
    attachment: _Scalar[int] = _Scalar("attachment", int)
    attach_offset = _Vec3("attach_offset")
    attach_heading: _Scalar[float] = _Scalar("attach_heading", float)
    slide_heading: _Scalar[float] = _Scalar("slide_heading", float)
    slide_left: _Scalar[int] = _Scalar("slide_left", int)

    def __init__(self, position: Vec3Like | None = None, heading: float = 0.0, velocity: Vec3Like | None = None,
                 state_velocity: Vec3Like | None = None, attachment: int = NO_ATTACHMENT,
                 attach_offset: Vec3Like | None = None, attach_heading: float = 0.0,
                 slide_to: Vec3Like | None = None, slide_heading: float = 0.0, slide_left: int = 0, *,
                 table: BodyTable | None = None) -> None:
        self._table: BodyTable = table if table is not None else BodyTable(1)
        self._row: int = self._table.take(self)
        self._gen: int = int(self._table.gen[self._row])
        for name, value in (("position", position), ("velocity", velocity),
                            ("state_velocity", state_velocity), ("attach_offset", attach_offset)):
            if value is not None:
                setattr(self, name, value)
        self.heading = heading
        self.attachment = attachment
        self.attach_heading = attach_heading
        self.slide_to = slide_to
        self.slide_heading = slide_heading
        self.slide_left = slide_left

    def _at(self, field: str) -> int:
        """The row, after checking its generation (StaleHandle naming ``Body.field``)."""
        r = self._row
        if self._table.m_gen[r] != self._gen:
            raise left_world("Body", field, r, "body")
        return r

    def alive(self) -> bool:
        """Whether the row is still this body's (False once its human left the world)."""
        return bool(self._table.gen[self._row] == self._gen)

    @property
    def slide_to(self) -> np.ndarray | None:
        """The slide's target position (a live (3,) view), None when not sliding."""
        t, r = self._table, self._at("slide_to")
        return t.slide_target[r] if t.sliding[r] else None

    @slide_to.setter
    def slide_to(self, value: Vec3Like | None) -> None:
        t, r = self._table, self._at("slide_to")
        if value is None:
            t.sliding[r] = False
            return
        try:
            target = np.asarray(value, dtype=np.float64)
            if target.shape not in ((), (3,)) or not (np.abs(target) <= MAX_COORD).all():
                raise ValueError("not three finite numbers")
            t.slide_target[r] = target
        except (ValueError, TypeError, OverflowError) as e:
            raise BodyFieldError(f"Body.slide_to: expected None or 3 finite numbers within +-{MAX_COORD:g}, "
                                 f"got {value!r}") from e
        t.sliding[r] = True

    @property
    def table(self) -> BodyTable:
        """The table this body's numbers live in."""
        return self._table

    @property
    def row(self) -> int:
        """The body's row in ``table``."""
        return self._row

    def rebind(self, table: BodyTable, row: int) -> None:
        """Make this view the handle of row ``row`` of ``table`` at the row's generation now
        (a restored state's: the row its owner had when it was saved)."""
        self._table, self._row, self._gen = table, row, int(table.gen[row])

    def move_to(self, table: BodyTable) -> None:
        """Copy this body's row into a new row of ``table`` and give the old row back.
        Rejected: a stale body (StaleHandle)."""
        old, row = self._table, self._at("move_to")
        if table is old:
            return
        new = table.take(self)
        for name in BODY_COLUMNS:
            getattr(table, name)[new] = getattr(old, name)[row]
        old.release(row)
        self._table, self._row, self._gen = table, new, int(table.gen[new])

    def detach(self) -> None:
        """Take the body out of its table onto a private one-row table, its numbers kept
        (a standalone body again, which a world's state update would move back in). The
        world never does this: a human leaving it gives its body's row back and the body
        is stale (``release``). Rejected: a stale body (StaleHandle)."""
        self.move_to(BodyTable(1))

    def release(self) -> None:
        """Give the body's row back to its table: the body is stale from now on (the
        human left the world). A second release does nothing."""
        if self.alive():
            self._table.release(self._row)

    def __repr__(self) -> str:
        if not self.alive():
            return f"Body(stale: row {self._row} went back)"
        return (f"Body(position={self.position.tolist()}, heading={self.heading}, "
                f"velocity={self.velocity.tolist()}, attachment={self.attachment})")
