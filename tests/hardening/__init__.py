"""Hardening: deterministic replays, the original's limits, the soak, fuzzed
loaders and the CLI's one-line errors.

The default run (``pytest``, which the pyproject's ``addopts`` gives ``-m "not fuzz"``)
runs a bounded number of fuzz examples (``support.QUICK_EXAMPLES``, 50 per property);
``pytest -m fuzz`` runs only the long fuzz runs (``support.LONG_EXAMPLES``, 2000 per
property, or ``SCUFFLE_FUZZ_EXAMPLES``: ``.ci/run`` sets 400), e.g. ``pytest -m fuzz
tests/hardening``.
"""
