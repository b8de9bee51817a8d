"""A crowd's slide step through the body table's fast views (systems.placement: the busy
rows picked from the columns) moves a body exactly as the fields' ``slide_step`` does:
the same float64 operations on the same numbers, the same bits in every column, the same
end of the slide, and the same BodyFieldError with nothing written for a step out of
range."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.components import Body
from scuffle.components.bodies import BodyFieldError, BodyTable
from scuffle.systems.placement import _slide_row, slide_step


def _twins(rng: np.random.Generator, n: int) -> tuple:
    """Two tables of ``n`` bodies with the same random slides in progress."""
    tables, bodies = [], []
    for _ in range(2):
        tables.append(BodyTable(n))
        bodies.append([])
    for i in range(n):
        pos = rng.uniform(-50.0, 50.0, 3).tolist()
        target = rng.uniform(-50.0, 50.0, 3).tolist()
        heading, aim = rng.uniform(-180.0, 180.0, 2).tolist()
        left = int(rng.integers(1, 6))
        for t, bs in zip(tables, bodies):
            bs.append(Body(pos, heading, slide_to=target, slide_heading=aim, slide_left=left, table=t))
    return tables, bodies


def _columns(t: BodyTable) -> list:
    return [getattr(t, c).tobytes() for c in ("position", "heading", "slide_target", "sliding", "slide_heading",
                                              "slide_left")]


def test_the_rows_slide_is_the_fields_slide_bit_for_bit():
    rng = np.random.default_rng(7)
    (ta, tb), (ba, bb) = _twins(rng, 12)
    for _ in range(6):                                   # every slide runs to its end
        for a, b in zip(ba, bb):
            if a.slide_to is not None:
                slide_step(a)
            r = b._row
            k = tb.m_slide_left[r]
            if k > 0 and tb.m_sliding[r]:
                _slide_row(b, tb, r, k)
        assert _columns(ta) == _columns(tb)
    assert not ta.sliding.any() and not tb.sliding.any()


def test_a_rows_slide_out_of_range_raises_as_the_fields_do():
    t = BodyTable(2)
    b = Body((0.0, 0.0, 0.0), 10.0, slide_to=(1.0, 2.0, 3.0), slide_heading=20.0, slide_left=2, table=t)
    t.slide_target[b._row] = (1e308, 0.0, 0.0)           # written behind the setter's check
    before = _columns(t)
    with pytest.raises(BodyFieldError):
        _slide_row(b, t, b._row, 2)
    assert _columns(t) == before
