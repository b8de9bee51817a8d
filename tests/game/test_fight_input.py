"""FightInput: one fighter's commands in one update as a value (its byte form, its checks),
Fight.apply, and FighterAI.decide (an input decided from public state, apart from applying it)."""
from __future__ import annotations

import ast
import math
import struct
from pathlib import Path

import pytest

from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import Fight
from scuffle.game.fighters.fightinput import (MAX_INPUT_BYTES, Action, FightInput, FightInputError,
                                              InputFlags)
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

REPO = Path(__file__).resolve().parents[2]

SAMPLES = [
    FightInput.EMPTY,
    FightInput(move=(0.0, 1.0)),
    FightInput(move=(0.1, -0.7), speed=1.2345678901234567),
    FightInput(move=(3, 4), pace="jog"),
    FightInput(move=(0.0, 0.0), speed=0.0),
    FightInput(face_heading=-179.99999999999997),
    FightInput(face_toward="p2", action=Action.GRAB),
    FightInput(face_toward="ÿ" * 32, face_heading=1e9),
    FightInput(action=Action.STRIKE, move_id=2 ** 31 - 1),
    FightInput(action=Action.THROW),
    FightInput(action=Action.LET_GO),
    FightInput(move=(-1e9, 1e9), pace=3, face_heading=0.5, face_toward="p1", action=Action.STRIKE, move_id=0),
]


@pytest.mark.parametrize("inp", SAMPLES, ids=repr)
def test_the_bytes_give_back_the_same_input_and_floats_keep_their_bits(inp):
    data = inp.to_bytes()
    assert data[0] == 1 and len(data) <= MAX_INPUT_BYTES
    back = FightInput.from_bytes(data)
    assert back == inp and back.to_bytes() == data
    for a, b in ((back.move, inp.move), (back.speed, inp.speed), (back.face_heading, inp.face_heading)):
        if a is not None:
            assert struct.pack("<2d" if isinstance(a, tuple) else "<d", *(a if isinstance(a, tuple) else (a,))) == \
                struct.pack("<2d" if isinstance(b, tuple) else "<d", *(b if isinstance(b, tuple) else (b,)))
    assert FightInput.read(b"xx" + data + b"yy", 2) == (inp, 2 + len(data))


def test_empty_is_four_bytes_and_values_compare_and_hash_by_value():
    assert FightInput.EMPTY.to_bytes() == bytes((1, 0, 0, 255))
    assert FightInput() == FightInput.EMPTY and FightInput().empty and not SAMPLES[1].empty
    assert FightInput(move=(0, 1), pace="jog") == FightInput(move=(0.0, 1.0), pace=1)
    assert len({FightInput(action=Action.GRAB), FightInput(action=2 - 1)}) == 1
    with pytest.raises(AttributeError):
        FightInput.EMPTY.action = Action.GRAB                  # frozen


@pytest.mark.parametrize("kw, field", [
    ({"move": (0.0,)}, "move"), ({"move": (math.nan, 0.0)}, "move x"), ({"move": (0.0, 2e9)}, "move y"),
    ({"move": (0.0, "1")}, "move y"), ({"move": (0, 1), "speed": 51.0}, "speed"),
    ({"move": (0, 1), "speed": -0.5}, "speed"), ({"speed": 1.0}, "speed"), ({"move": (0, 1), "pace": 4}, "pace"),
    ({"move": (0, 1), "pace": "fly"}, "pace"), ({"move": (0, 1), "pace": True}, "pace"),
    ({"move": (0, 1), "pace": 1, "speed": 1.0}, "pace"), ({"face_heading": math.inf}, "face_heading"),
    ({"face_toward": ""}, "face_toward"), ({"face_toward": "x" * 65}, "face_toward"),
    ({"face_toward": "\udc80"}, "face_toward"), ({"face_toward": 3}, "face_toward"), ({"action": 9}, "action"),
    ({"action": True}, "action"), ({"action": Action.STRIKE, "move_id": -1}, "move_id"),
    ({"action": Action.GRAB, "move_id": 5}, "move_id"), ({"action": Action.THROW, "move_id": 2 ** 31}, "move_id"),
])
def test_every_rule_rejects_an_input_naming_its_field(kw, field):
    with pytest.raises(FightInputError, match=f"FightInput {field}"):
        FightInput(**kw)
    assert issubclass(FightInputError, ValueError)


def _f64(v: float) -> bytes:
    return struct.pack("<d", v)


@pytest.mark.parametrize("data, field", [
    (b"", "header"), (b"\x01\x00\x00", "header"), (b"\x02\x00\x00\xff", "version"),
    (b"\x01\x80\x00\xff", "flags"), (b"\x01\x00\x05\xff", "action"), (b"\x01\x00\x00\x04", "pace"),
    (b"\x01\x01\x00\xff" + _f64(0.0), "move"), (b"\x01\x02\x00\xff", "speed"),
    (b"\x01\x01\x00\xff" + _f64(math.nan) + _f64(0.0), "move x"),
    (b"\x01\x03\x00\xff" + _f64(0.0) * 2 + _f64(99.0), "speed"),
    (b"\x01\x04\x00\xff" + _f64(-math.inf), "face_heading"), (b"\x01\x08\x00\xff\x00", "face_toward"),
    (b"\x01\x08\x00\xff\x41p", "face_toward"), (b"\x01\x08\x00\xff\x01\xff", "face_toward"),
    (b"\x01\x10\x01\xff" + struct.pack("<i", 3), "move_id"), (b"\x01\x10\x02\xff" + struct.pack("<i", -3), "move_id"),
    (b"\x01\x10\x02\xff\x00", "move_id"), (b"\x01\x00\x00\xff\x00", "bytes"), (b"\x01\x01\x00\x01", "move"),
    (bytearray(b"\x01\x00\x00\x09"), "pace"),
])
def test_from_bytes_validates_every_field(data, field):
    with pytest.raises(FightInputError, match=f"FightInput {field}"):
        FightInput.from_bytes(data)


def test_from_bytes_refuses_what_is_not_bytes():
    with pytest.raises(FightInputError, match="not bytes"):
        FightInput.from_bytes("\x01\x00\x00\xff")            # type: ignore[arg-type]


def test_flags_are_named():
    assert FightInput(move=(0, 1), speed=1.0).to_bytes()[1] == InputFlags.MOVE | InputFlags.SPEED


def _two(new_game):
    s = demo_set()
    games = []
    for _ in range(2):
        g = new_game()
        g.add_human("p1", s, position=(0.0, -0.5, 0.0), heading=0.0)
        g.add_human("p2", s, position=(0.0, 0.5, 0.0), heading=180.0)
        for n in ("p1", "p2"):
            g.change(n, g.player.loop(g.instance(n), Move.FIGHT_IDLE))
        games.append((g, Fight(g)))
    return games


def test_apply_gives_the_parts_to_the_commands_in_order_move_face_action(new_game):
    (g1, f1), (g2, f2) = _two(new_game)
    plan = {0: FightInput(move=(0.0, 1.0), pace="walk"), 10: FightInput(move=(0.0, 0.0), speed=0.0),
            40: FightInput(face_toward="p2", action=Action.STRIKE), 80: FightInput(face_heading=10.0, action=Action.GRAB),
            120: FightInput(action=Action.STRIKE, move_id=int(Move.GRAB_KNEE))}
    results = []
    for u in range(160):
        inp = plan.get(u)
        if inp is not None:
            results.append(f1.apply("p1", inp))
            if inp.move is not None:
                f2.move("p1", inp.move, inp.speed, pace=inp.pace)
            if inp.face_heading is not None or inp.face_toward is not None:
                f2.face("p1", inp.face_heading, inp.face_toward)
            {Action.NONE: lambda: None, Action.GRAB: lambda: f2.grab("p1"),
             Action.STRIKE: lambda: f2.strike("p1", inp.move_id)}[inp.action]()
        assert f1.apply("p2", FightInput.EMPTY) is None
        g1.step()
        g2.step()
    assert g1.checksum() == g2.checksum()
    assert results[0].action == "move" and results[2].action == "strike" and results[3].action == "grab"
    with pytest.raises(TypeError):
        f1.apply("p1", (None,) * 7)                              # type: ignore[arg-type]


def test_the_ai_reads_only_public_state():
    """decide() names no private member of the fight or the game (ast, not a grep of
    comments): fight._lookup, _entity, _ent, game._entities, _dead."""
    tree = ast.parse((REPO / "game/fighters/ai.py").read_text(encoding="utf-8"))
    private = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.startswith("_")
               and not n.attr.startswith("__")}
    assert private <= {"_hold"}, private


def test_decide_then_apply_is_the_controller_and_its_state_is_saved(new_game):
    """Two fights: one with the AIs as controllers, one deciding and applying by hand;
    the same checksum every 50 updates. The decisions after a restore are the same."""
    (g1, f1), (g2, f2) = _two(new_game)
    f1.controllers += [FighterAI("p1", "p2", seed=3, think_every=2, aggression=0.9),
                       FighterAI("p2", "p1", seed=4, think_every=2, aggression=0.9)]
    ais = [FighterAI("p1", "p2", seed=3, think_every=2, aggression=0.9),
           FighterAI("p2", "p1", seed=4, think_every=2, aggression=0.9)]

    class ByHand:
        """decide, then apply, by hand (its state: the AI's, as the controller saves it)."""

        def __init__(self, ai):
            self.ai = ai
            self.save_state, self.load_state = ai.save_state, ai.load_state

        def __call__(self, fight):
            inp = self.ai.decide(fight.game)
            assert isinstance(inp, FightInput)
            fight.apply(self.ai.me, inp)

    f2.controllers += [ByHand(ai) for ai in ais]
    snap = None
    for u in range(600):
        if u == 300:
            snap = g1.snapshot()
        g1.step()
        g2.step()
        if u % 50 == 49:
            assert g1.checksum() == g2.checksum(), u
    assert f1.stats.strikes > 3 and f1.stats.grabs > 0
    after = g1.checksum()
    g1.restore(snap)
    for _ in range(300):
        g1.step()
    assert g1.checksum() == after


def test_decide_refuses_a_game_without_fight_rules_and_a_fighter_gone(new_game):
    g = new_game()
    g.add_human("p1", demo_set())
    with pytest.raises(ValueError, match="no fight rules"):
        FighterAI("p1", "p2").decide(g)
    Fight(g)
    from scuffle.game.runtime.world import UnknownHuman
    with pytest.raises(UnknownHuman):
        FighterAI("p1", "p2").decide(g)
    with pytest.raises(KeyError):
        FighterAI(g.entity("p1"), 999).decide(g)                # type: ignore[arg-type]


@pytest.mark.parametrize("pace", [0, 1, 2, 3])
def test_a_pace_moves_at_the_gait_value_its_speed_gives(new_game, pace):
    """move(pace=k) sets the gait's target found once per set for that pace: the same
    bits as move(speed=) with the pace's speed (np.interp on the set's speeds), and the
    same direction and heading."""
    (g1, f1), (g2, f2) = _two(new_game)
    speed = f1.gait_speeds("p1")[pace]
    for d in ((0.3, 1.0), (-2.0, 0.7)):
        assert f1.move("p1", d, pace=pace) and f2.move("p1", d, speed=speed)
        for _ in range(12):
            g1.step()
            g2.step()
        t1, t2 = f1._gait(g1.entity("p1")), f2._gait(g2.entity("p1"))
        assert t1 is not None and t2 is not None and t1.target == t2.target
        c1, c2 = f1.combat("p1"), f2.combat("p1")
        assert c1.move_dir.tolist() == c2.move_dir.tolist() and c1.move_speed == c2.move_speed
        assert f1.body("p1").heading == f2.body("p1").heading
