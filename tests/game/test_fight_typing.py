"""A host program's mistakes with the fight rules are type errors:
``Fight``'s public methods are typed (``who: str | int``, ``pace: str | int``, the
answers an ``ActionResult``), checked by mypy on the installed layout."""
from __future__ import annotations

import subprocess
import sys

import pytest

from test_typing import _installed_layout

HOST = '''
from scuffle import ActionResult, Fight, FightEvent, Game, Refusal, demo_set

def on_hit(e: FightEvent) -> None:
    print(e.attacker, e.damage + 1.0)

with Game() as g:
    fight = Fight(g)
    g.add_human("p1", demo_set())
    answer: ActionResult = fight.strike("p1", "JAB")
    if not answer and answer.refusal is Refusal.BUSY:
        print(answer.detail)
    fight.on_hit(on_hit)
    fight.move("p1", (1.0, 0.0), pace="jog")
    fight.strike("p1", 3.5)                  # wrong: a move is an id or a clip name
    fight.move(["p1"])                       # wrong: who is a name or an entity
    fight.on_ko(lambda e: e.nope)            # wrong: FightEvent has no nope
'''


@pytest.mark.slow
def test_mypy_catches_a_wrong_argument_to_the_fight_rules(tmp_path):
    pytest.importorskip("mypy")
    _installed_layout(tmp_path)
    (tmp_path / "host.py").write_text(HOST, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / ".mypy"), "--strict",
                        "--no-error-summary", "--follow-imports=silent", "host.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    errors = [ln for ln in r.stdout.splitlines() if ": error:" in ln]
    lines = sorted({int(ln.split(":")[1]) for ln in errors})
    wrong = [i + 1 for i, ln in enumerate(HOST.splitlines()) if "# wrong" in ln]
    assert lines == wrong, r.stdout[-3000:]
