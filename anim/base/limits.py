"""Range checks where numbers enter, and the budget error: one small helper for every entry.

Every number a user hands in (a scenario's TOML, a CLI flag, a CSV field, a trace, the
Python API) goes through ``check_float`` / ``check_int`` / ``check_vec`` here before it
is stored: NaN, infinities, bools, values past the documented range and ints wider than
the field are refused with a ``RangeError`` (a ValueError) naming the argument. Inputs
whose declared sizes would need more memory than a documented budget are refused with
a ``BudgetError`` (a ValueError) naming the field and the limit, before anything is
allocated. The limits are listed in docs/tools.md and docs/scenarios.md ("Limits").
"""
from __future__ import annotations

import math
from typing import Any, Sequence

__all__ = ["RangeError", "BudgetError", "check_float", "check_int", "check_vec",
           "MAX_COORD", "INT32_MAX", "UINT32_MAX", "MAX_DIGITS", "MAX_HEALTH", "MAX_DT"]

INT32_MAX = (1 << 31) - 1
UINT32_MAX = (1 << 32) - 1
MAX_COORD = 1e9                # |x| of any body coordinate or heading the API takes (metres, degrees)
MAX_DIGITS = 30                # digits of an integer token a text reader converts (CSV, trace)
MAX_HEALTH = 1_000_000.0       # a human's health (the API, a scenario, the demo's --health)
MAX_DT = 1.0                   # Game.ctx.dt, seconds (the original's update is 1/30 s)


class RangeError(ValueError):
    """A number outside the range its field holds; ``name`` is the field or argument."""

    def __init__(self, name: str, problem: str):
        self.name, self.problem = name, problem
        super().__init__(f"{name}: {problem}")


class BudgetError(ValueError):
    """An input whose declared sizes need more memory than a documented budget: names the
    field, what it would take and the limit (raised before anything is allocated)."""

    def __init__(self, field: str, need: int, limit: int, unit: str = "bytes"):
        self.field, self.need, self.limit = field, need, limit
        super().__init__(f"{field}: needs {need:,} {unit}, over the limit of {limit:,} {unit}")


def check_float(name: str, value: Any, lo: float | None = None, hi: float | None = None,
                *, lo_open: bool = False) -> float:
    """``value`` as a float when it is a finite number within [lo, hi] (``lo_open``: > lo).

    Rejected (RangeError naming ``name``): a bool, a non-number, NaN, +-inf, a value
    outside the range, an int no float holds.
    """
    if value.__class__ is float and value - value == 0.0 and (hi is None or value <= hi) and (
            lo is None or (value > lo if lo_open else value >= lo)):
        return value                   # a finite float in range (x - x is 0.0 for those alone): as below
    if isinstance(value, bool) or not hasattr(value, "__float__"):
        raise RangeError(name, f"expected a number, got {_show(value)}")
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        raise RangeError(name, f"expected a finite number, got {_show(value)}") from None
    if not math.isfinite(f):
        raise RangeError(name, f"expected a finite number, got {_show(value)}")
    if lo is not None and (f <= lo if lo_open else f < lo):
        raise RangeError(name, f"{_show(value)} is below {'or at ' if lo_open else ''}the minimum {lo:g}")
    if hi is not None and f > hi:
        raise RangeError(name, f"{_show(value)} is over the maximum {hi:g}")
    return f


def check_int(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int when it is a whole number (not a bool, not a float) in [lo, hi].

    Rejected (RangeError naming ``name``): anything else, with the range in the message.
    """
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise RangeError(name, f"expected a whole number {lo}-{hi}, got {_show(value)}")
    v = value.__index__()
    if not lo <= v <= hi:
        raise RangeError(name, f"expected a whole number {lo}-{hi}, got {_show(v)}")
    return v


def check_vec(name: str, value: Any, n: int, bound: float = MAX_COORD) -> tuple[float, ...]:
    """``value`` as a tuple of ``n`` floats, each finite and within +-``bound``.

    Rejected (RangeError naming ``name`` and the index): not a sequence of ``n`` numbers,
    NaN, +-inf, a component past the bound.
    """
    if value.__class__ is tuple and len(value) == n and bound - bound == 0.0:
        for v in value:                # plain finite floats within the bound: the tuple as below
            if v.__class__ is not float or not -bound <= v <= bound:
                break
        else:
            return value
    try:
        items: Sequence = list(value)
    except TypeError:
        raise RangeError(name, f"expected {n} numbers, got {_show(value)}") from None
    if len(items) != n:
        raise RangeError(name, f"expected {n} numbers, got {len(items)}")
    return tuple(check_float(f"{name}[{i}]", v, -bound, bound) for i, v in enumerate(items))


def _show(v: Any) -> str:
    """A value for a message, never longer than 40 characters (a 5,000-digit int is cut)."""
    try:
        s = repr(v)
    except ValueError:                 # an int past Python's str() digit limit
        return f"an integer of more than {MAX_DIGITS} digits"
    return s if len(s) <= 40 else s[:37] + "..."
