"""A game run on the reference: ``Game(engine="reference")`` and
``scuffle run --engine reference`` give the same trace as the compiled engine, poses and
bodies included, on a recorded fight (tests/hardening/fight_2min.toml, cut to its first
300 updates: walks, grabs, throws and hits through the fight rules)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from scuffle.anim.reference import RefInstance, Reference
from scuffle.game.cli import commands as cli
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.world import Game

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

FIGHT = Path(__file__).resolve().parents[1] / "hardening" / "fight_2min.toml"


def _cut(updates: int) -> str:
    head, *cmds = FIGHT.read_text(encoding="utf-8").split("[[commands]]")
    keep = [c for c in cmds if int(re.search(r"update = (\d+)", c).group(1)) < updates]
    return head.replace("updates = 3600", f"updates = {updates}") + "".join("[[commands]]" + c for c in keep)


@pytest.mark.slow
@pytest.mark.bits
def test_scuffle_run_on_the_reference_gives_the_compiled_trace(tmp_path):
    (tmp_path / "fight.toml").write_text(_cut(300), encoding="utf-8")
    out = {}
    for engine in ("compiled", "reference"):
        path = tmp_path / f"{engine}.jsonl"
        assert cli.main(["run", str(tmp_path / "fight.toml"), "--trace", str(path), "--pose",
                         "--engine", engine]) == 0
        out[engine] = path.read_text(encoding="utf-8")
    assert len(out["compiled"].splitlines()) == 600
    assert '"anim":70' in out["compiled"] or '"anim":69' in out["compiled"]   # a grab happened
    assert out["reference"] == out["compiled"]


def test_game_engine_keyword():
    """engine="reference" runs the reference's own objects; the old ``reference`` keyword
    still works; an unknown engine is refused naming the field."""
    aset = demo_set()
    with Game(engine="reference") as g:
        g.add_human("a", aset)
        assert isinstance(g.player, Reference) and isinstance(g.instance("a"), RefInstance)
        g.change("a", g.player.chain(g.instance("a"), [19, 388]))
        for _ in range(30):
            g.step()
        assert g.instance("a").record.anim_id == 388
    with Game(reference=True) as g:
        g.add_human("a", aset)
        g.step()
    with pytest.raises(ValueError, match="engine"):
        Game(engine="numpy")
