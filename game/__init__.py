"""The game layer over the animation core, in four groups:

- ``runtime``: the world (``Game``), ``schedule`` (the one system order), the scenario
  runner and the trace;
- ``fighters``: the demo fighters' content: move set, moves, fight rules, AI;
- ``cli``: the ``scuffle`` command and its subcommands' entry points;
- ``tools``: the research tools: trace diff, corpus survey, lint, bench, CSV converter.

Nothing here imports pygame; only ``scuffle.demo`` does.
"""
