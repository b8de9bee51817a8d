"""How many examples a property test runs: all of them in the full suite (``.ci/run``
sets SCUFFLE_FULL_TESTS=1), a quarter (at least 20) in the default ``pytest`` run, so
that it stays under a minute on 2 cores. The examples are the same kind either way."""
from __future__ import annotations

import os

__all__ = ["FULL", "examples"]

FULL = os.environ.get("SCUFFLE_FULL_TESTS") == "1"


def examples(n: int) -> int:
    """``n`` in the full suite, else max(20, n // 4)."""
    return n if FULL else max(20, n // 4)
