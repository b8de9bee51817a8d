"""Python's cyclic garbage collector after loading (the goal: the collector <= 1 ms per
update at 10,000 humans).

A loaded world is hundreds of thousands of long-lived Python objects (at 10,000 humans:
the esper components, the humans' instances and records, the live tasks' handles, numba's
and numpy's own), and every full collection walks all of them: about 150 ms at 10,000
humans, 45 ms for 2 fighters (numba alone brings 60,000), once every few dozen updates
(docs/performance.md). Nothing in them is garbage, so a game that has loaded its world
moves them out of the collector's sight, as CPython's gc.freeze() documents: full
collections then walk only what was made since.

This is the application's call, never the library's: ``gc.freeze`` is process-wide (the
host's objects too). scuffle's runtime never calls it; ``scuffle bench`` and the demo
call it once after building their world, as a game does at the end of a level load.
"""
from __future__ import annotations

import gc

__all__ = ["settle"]


def settle() -> int:
    """After loading: collect once, then move every object alive to the collector's
    permanent generation (gc.freeze), so later collections no longer walk the loaded world.
    Calling it again (after loading more, or after removing humans) first gives the frozen
    objects back to the collector (gc.unfreeze), so garbage among them is still freed.
    Process-wide: it affects every object of the process. Out: the number of objects frozen.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
