"""The body table and its views (components/bodies.py): a Body reads and writes its row
of the table, keeps working when the table grows, and gives its row back.

Bodies live in arrays too (docs/architecture.md, "The tables"): the esper components are
views (row handles) onto those tables.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.components import NO_ATTACHMENT, Body, BodyFieldError, BodyTable
from scuffle.anim.engine.store import StaleHandle
from scuffle.components.bodies import BODY_COLUMNS

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


def test_the_view_reads_and_writes_its_row():
    t = BodyTable(4)
    a, b = Body(table=t), Body(position=(1.0, 2.0, 3.0), heading=45.0, table=t)
    assert a.row != b.row and a.table is t and b.table is t
    np.testing.assert_array_equal(t.position[b.row], [1.0, 2.0, 3.0])
    assert t.heading[b.row] == 45.0 and a.heading == 0.0
    b.position[0] += 1.0                          # the view is the row itself
    b.position[1:] = (5.0, 6.0)
    np.testing.assert_array_equal(t.position[b.row], [2.0, 5.0, 6.0])
    t.velocity[b.row] = (0.0, 1.5, 0.0)           # and the row is what the view reads
    t.heading[b.row] = -90.0
    np.testing.assert_array_equal(b.velocity, [0.0, 1.5, 0.0])
    assert b.heading == -90.0 and isinstance(b.heading, float)
    np.testing.assert_array_equal(t.position[a.row], [0.0, 0.0, 0.0])


def test_assignment_copies_into_the_row():
    b = Body(table=BodyTable())
    src = np.array([1.0, 2.0, 3.0])
    b.position = src
    src[0] = 99.0
    np.testing.assert_array_equal(b.position, [1.0, 2.0, 3.0])
    b.state_velocity = np.zeros(3)
    b.attach_offset = [0.4, 1.0, 0.0]
    b.attachment, b.attach_heading = 7, 180.0
    assert (b.attachment, b.attach_heading) == (7, 180.0) and isinstance(b.attachment, int)
    np.testing.assert_array_equal(b.table.attach_offset[b.row], [0.4, 1.0, 0.0])


def test_a_new_body_has_the_old_defaults():
    b = Body(table=BodyTable())
    for name in ("position", "velocity", "state_velocity", "attach_offset"):
        np.testing.assert_array_equal(getattr(b, name), [0.0, 0.0, 0.0])
    assert b.attachment == NO_ATTACHMENT and b.slide_to is None
    assert (b.heading, b.attach_heading, b.slide_heading, b.slide_left) == (0.0, 0.0, 0.0, 0)


def test_slide_to_is_none_or_the_target():
    b = Body(table=BodyTable())
    b.slide_to, b.slide_heading, b.slide_left = np.array([1.0, 2.0, 0.0]), 90.0, 6
    np.testing.assert_array_equal(b.slide_to, [1.0, 2.0, 0.0])
    assert b.table.sliding[b.row]
    b.slide_to = None
    assert b.slide_to is None and not b.table.sliding[b.row]


def test_growth_keeps_every_view_valid():
    t = BodyTable(2)
    bodies = [Body(position=(float(i), 0.0, 0.0), heading=float(i), table=t) for i in range(2)]
    first = bodies[0].position                     # a view of the column before growth
    old_column = t.position
    bodies += [Body(position=(float(i), 0.0, 0.0), heading=float(i), table=t) for i in range(2, 37)]
    assert t.capacity >= 37 and t.position is not old_column
    for i, b in enumerate(bodies):
        assert b.position[0] == float(i) and b.heading == float(i)
        assert np.shares_memory(b.position, t.position)      # fetched from the current column
    bodies[0].position[1] = 4.0                    # writes reach the current table
    assert t.position[bodies[0].row, 1] == 4.0
    assert first[1] == 0.0                         # (a view kept from before is stale)


def test_a_released_body_is_stale_on_every_field():
    t = BodyTable(4)
    a = Body(position=(1.0, 2.0, 3.0), heading=30.0, table=t)
    row = a.row
    a.release()
    a.release()                                     # a second release does nothing
    assert not a.alive() and not t.live[row] and row not in t.owners and "stale" in repr(a)
    for field in ("position", "heading", "velocity", "state_velocity", "attachment", "attach_offset",
                  "attach_heading", "slide_to", "slide_heading", "slide_left"):
        with pytest.raises(StaleHandle, match=f"Body.{field}: its row {row} went back to the body table"):
            getattr(a, field)
        with pytest.raises(StaleHandle, match=f"Body.{field}"):
            setattr(a, field, None if field == "slide_to" else 0)
    c = Body(position=(7.0, 7.0, 7.0), heading=5.0, table=t)   # a new body takes the row ...
    assert c.row == row and c.heading == 5.0
    with pytest.raises(StaleHandle):                # ... and the old handle never reads it
        a.heading
    with pytest.raises(StaleHandle):
        a.move_to(BodyTable(1))
    assert isinstance(StaleHandle("x"), ValueError)


def test_detach_gives_the_row_back_and_keeps_the_numbers():
    t = BodyTable(4)
    a, b = Body(position=(1.0, 2.0, 3.0), heading=30.0, table=t), Body(table=t)
    row = a.row
    assert t.in_use == 2
    a.detach()
    assert t.in_use == 1 and not t.live[row] and row not in t.owners
    assert a.table is not t and a.heading == 30.0
    np.testing.assert_array_equal(a.position, [1.0, 2.0, 3.0])
    c = Body(position=(7.0, 7.0, 7.0), table=t)    # the row is reused ...
    assert c.row == row
    np.testing.assert_array_equal(a.position, [1.0, 2.0, 3.0])   # ... without touching a
    a.move_to(t)                                   # and a body moves into a table by copy
    assert a.table is t and t.in_use == 3 and a.heading == 30.0


def test_rehome_holds_exactly_the_given_bodies():
    t = BodyTable(4)
    kept, gone = Body(table=t), Body(position=(5.0, 0.0, 0.0), table=t)
    stray = Body(position=(1.0, 1.0, 1.0), heading=12.0)      # standalone, on its own table
    t.rehome([kept, stray])
    assert stray.table is t and stray.heading == 12.0 and list(stray.position) == [1.0, 1.0, 1.0]
    assert not gone.alive() and gone.row not in t.owners      # its row went back: the handle is stale
    with pytest.raises(StaleHandle, match="Body.position"):
        gone.position
    assert sorted(t.owners) == sorted([kept.row, stray.row]) and t.in_use == 2
    with pytest.raises(StaleHandle, match="Body.row"):          # a stale body is refused, not re-homed
        t.rehome([kept, stray, gone])


def test_a_standalone_body_works_on_a_private_row():
    b = Body(position=np.array([0.5, 1.0, 0.0]), heading=10.0)
    assert b.table.capacity == 1 and set(b.table.owners) == {b.row}
    b.position += np.array([1.0, 0.0, 0.0])        # in place, on its private row
    b.velocity = (0.0, 2.0, 0.0)
    np.testing.assert_array_equal(b.position, [1.5, 1.0, 0.0])
    assert b.velocity[1] == 2.0 and b.heading == 10.0
    assert "position=[1.5, 1.0, 0.0]" in repr(b)
    assert set(BODY_COLUMNS) <= {n for n in dir(b.table) if not n.startswith("_")}


@pytest.mark.parametrize("field, value", [("position", (1.0, 2.0)), ("velocity", "fast"),
                                           ("slide_to", np.zeros(4)), ("heading", "north"),
                                           ("attachment", None)])
def test_bad_values_are_refused_naming_the_field(field, value):
    b = Body()
    with pytest.raises(BodyFieldError, match=f"Body.{field}") as got:
        setattr(b, field, value)
    assert isinstance(got.value, ValueError)
