"""A scenario built and run from Python: the TOML text of docs/scenarios.md made in code,
validated with ``parse_scenario`` and run with ``run_scenario``, its trace kept in memory.

The same text in a file runs with ``scuffle run FILE.toml --trace OUT.jsonl`` and gives
the same trace bytes. Run: ``python docs/examples/scenario.py`` (no window).
"""
from __future__ import annotations

import io
import json

from scuffle import Fight, Game, ScenarioError, parse_scenario, run_scenario


def command(update: int, human: str, **keys: object) -> str:
    """One [[commands]] table; values written as JSON, which TOML reads alike."""
    lines = ["[[commands]]", f"update = {update}", f'human = "{human}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


TEXT = """
updates = 90

[sets.demo]
library = "demo"                 # the built-in move set (the demo's)

[[humans]]
name = "p1"
set = "demo"
position = [0.0, -1.0, 0.0]

[[humans]]
name = "p2"
set = "demo"
position = [0.0, 0.6, 0.0]
heading = 180.0
""" + "".join([
    command(0, "p1", loop="FIGHT_IDLE"),            # a clip by its name in the set (358)
    command(0, "p2", loop="FIGHT_IDLE"),
    command(2, "p1", action="move", direction=[0.0, 1.0], pace="walk"),
    command(20, "p1", action="move", speed=0.0),
    command(40, "p1", action="strike", move="JAB"),     # a clip's name in the set (id 11)
])

hits: list[int] = []


def after_each_update(game: Game) -> None:
    """run_scenario's on_update: called after every update with the Game."""
    fight = game.fight                             # the fight rules, attached by the actions
    if isinstance(fight, Fight) and fight.stats.strikes > len(hits):
        hits.append(game.update - 1)


sc = parse_scenario(TEXT, source="built-in")
trace = io.StringIO()
game = run_scenario(sc, trace=trace, on_update=after_each_update)
try:
    records = [json.loads(line) for line in trace.getvalue().splitlines()]
    last = {r["human"]: r for r in records if r["update"] == sc.updates - 1}
    print(f"{len(records)} trace records over {sc.updates} updates")
    print(f"p1 ends at y = {last['p1']['pos'][1]:.2f} m playing {last['p1']['anim']}; "
          f"hits landed at updates {hits}")
    log: list[tuple[object, ...]] = list(game.fight.stats.log) if isinstance(game.fight, Fight) else []
    print(f"fight log: {[e[2] for e in log]}")
finally:
    game.close()

try:                                                # a mistake names the line and field
    parse_scenario(TEXT.replace('heading = 180.0', 'heading = "south"'), source="typo.toml")
except ScenarioError as e:
    print("refused:", e)
