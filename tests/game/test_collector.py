"""scuffle.settle: the loaded world out of the garbage collector's sight (gc.freeze), the
application's call (the collector's cost per update)."""
from __future__ import annotations

import gc
import weakref

import pytest

import scuffle
from scuffle.game.tools.bench import build_crowd, run_bench


@pytest.fixture
def unfrozen():
    """Every test leaves the process's collector as it found it (nothing frozen)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Cycle:
    def __init__(self):
        self.me = self


def test_settle_freezes_the_loaded_world_and_the_library_never_does(unfrozen):
    game = build_crowd(4, "realistic")
    for _ in range(3):
        game.step()
    assert gc.get_freeze_count() == 0                # the runtime itself never freezes anything
    n = scuffle.settle()
    # what settle froze, less what a reference count freed since (another thread's objects)
    assert n >= gc.get_freeze_count() > 1000 and gc.get_freeze_count() > n - 1000
    assert gc.get_count()[0] < 50                    # collected first: the young generation is empty
    game.step()                                      # the world still runs
    assert gc.get_freeze_count() <= n                # nothing more frozen (some freed by their counts)


def test_a_second_settle_frees_the_garbage_frozen_by_the_first(unfrozen):
    junk = _Cycle()
    ref = weakref.ref(junk)
    scuffle.settle()                                 # frozen alive
    del junk
    gc.collect()
    assert ref() is not None                         # a frozen cycle is not collected ...
    scuffle.settle()
    assert ref() is None                             # ... until the next settle unfreezes it first


@pytest.mark.slow
def test_the_bench_settles_unless_told_not_to(unfrozen):
    settled = run_bench(6, 3, scalar_updates=1, crowd="realistic", memory=False)
    assert settled["gc_settled"] > 1000
    assert gc.get_freeze_count() == 0                # the bench gives them back after its run
    plain = run_bench(6, 3, scalar_updates=1, crowd="realistic", settle=False, memory=False)
    assert plain["gc_settled"] is None
