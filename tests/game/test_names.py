"""Names instead of numbers: clips by their name in the set, bones by
name, and ``Game.on`` for the animation events.

Spec: "Data: Descriptor" (the clip's name, +0x20), "Parent table" (L108-112: bone 0 the
root, bone 1 the pelvis), "Bone transforms" (entry 0 is motion, entry 1 the pelvis).
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle import parse_scenario, run_scenario
from scuffle.anim.data.animset import AnimSet, UnknownAnimId, UnknownAnimName
from scuffle.anim.data.clip import EventType, author_clip
from scuffle.anim.maths.skeleton import NUM_BONES, PARENTS, Bone
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.scenario import ScenarioError


# ---------------------------------------------------------------- clips by name


def test_the_demo_set_names_every_clip_after_its_move():
    s = demo_set()
    names = s.names()
    for m in Move:
        assert names[m.name] == int(m), m        # "FIGHT_IDLE" -> 358, "JAB" -> 11 ...
    assert s.id_of("FIGHT_IDLE") == 358 and s.id_of("JAB") == 11
    assert s.name_of(149) == "THROW_SIDE" and s.name_of(0) == ""


def test_a_name_matches_exactly_else_ignoring_case():
    s = demo_set()
    assert s.id_of("jab") == 11 and s.id_of("Throw_Back") == 151
    assert s.id_of(151) == 151                    # an id stays an id
    assert s.has("JAB") and "KICK" in s and "NOPE" not in s and 9999 not in s
    with pytest.raises(UnknownAnimName, match="'NOPE'"):
        s.has("NOPE")


def test_a_typo_says_did_you_mean():
    s = demo_set()
    with pytest.raises(UnknownAnimName, match=r"no clip named 'FIGHT_IDEL' in set 'demo'; did you mean 'FIGHT_IDLE'\?"):
        s.id_of("FIGHT_IDEL")
    with pytest.raises(UnknownAnimName) as info:
        s.id_of("zzzz")
    assert "did you mean" not in str(info.value) and info.value.suggestions == []
    assert isinstance(info.value, UnknownAnimId) and isinstance(info.value, ValueError)
    with pytest.raises(UnknownAnimId):
        s.id_of(722)


def test_a_name_several_ids_play_is_the_lowest_id():
    clip = author_clip("SHARED", 10)
    s = AnimSet.build({40: clip, 30: clip, 50: author_clip("OTHER", 10)}, name="t")
    assert s.names() == {"SHARED": 30, "OTHER": 50}
    assert s.clip("SHARED") is clip and s.range("OTHER") == s.range(50)


def test_the_player_takes_names(new_game):
    g = new_game()
    g.add_human("a", demo_set())
    inst = g.instance("a")
    g.change("a", g.player.chain(inst, ["JAB", "FIGHT_IDLE"]), fade=0.1)
    assert [t.trace()["id"] for t in inst.stack] == [11, -1]        # the jab under the fade
    for _ in range(40):
        g.step()
    assert g.record("a").anim_id == 358
    task = g.player.gait(inst, ["WALK", "JOG", "RUN", "SPRINT", "SPRINT"], target=1.0)
    assert task.trace()["ids"] == [408, 409, 410, 411, 411]
    g.player.discard(task)
    with pytest.raises(UnknownAnimName, match="did you mean 'JAB'"):
        g.player.loop(inst, "JAP")


SCENARIO = """
updates = 40
[sets.demo]
library = "demo"
[[humans]]
name = "a"
set = "demo"
[[humans]]
name = "b"
set = "demo"
position = [0, 0.9, 0]
heading = 180
[[commands]]
update = 0
human = "a"
loop = "FIGHT_IDLE"
[[commands]]
update = 0
human = "b"
play = ["HIT_FRONT", "idle"]
[[commands]]
update = 2
human = "a"
action = "strike"
move = "JAB"
"""


def _run(text: str) -> list[tuple[int, str, int]]:
    import io
    import json
    out = io.StringIO()
    run_scenario(parse_scenario(text), out).close()
    return [(r["update"], r["human"], r["anim"]) for r in map(json.loads, out.getvalue().splitlines())]


def test_a_scenario_names_clips_and_runs_as_with_ids():
    by_name = _run(SCENARIO)
    by_id = _run(SCENARIO.replace('"FIGHT_IDLE"', "358").replace('["HIT_FRONT", "idle"]', "[280, 388]")
                 .replace('move = "JAB"', "move = 11"))
    assert by_name == by_id
    assert (0, "a", 358) in by_name and (0, "b", 280) in by_name and (3, "a", 11) in by_name


def test_a_scenario_typo_names_the_line_and_the_nearest_names():
    text = SCENARIO.replace('loop = "FIGHT_IDLE"', 'loop = "FIGHT_IDEL"')
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "fight.toml")
    line = text.splitlines().index('loop = "FIGHT_IDEL"') + 1
    assert str(info.value) == (f"fight.toml:{line}: commands[0].loop: no clip named 'FIGHT_IDEL' in set 'demo'; "
                               f"did you mean 'FIGHT_IDLE'?")
    with pytest.raises(ScenarioError, match=r"commands\[2\]\.move: no clip named 'JABB'.*did you mean 'JAB'"):
        parse_scenario(SCENARIO.replace('move = "JAB"', 'move = "JABB"'))


# ---------------------------------------------------------------- bones by name


def test_every_bone_has_a_name_and_the_spec_names_root_and_pelvis():
    assert [int(b) for b in Bone] == list(range(NUM_BONES))
    assert Bone.ROOT == 0 and Bone.PELVIS == 1                       # spec L108-112
    # the names follow the parent table's shape
    assert PARENTS[Bone.HEAD] == Bone.CHEST and PARENTS[Bone.L_CLAVICLE] == Bone.CHEST
    assert PARENTS[Bone.L_THIGH] == Bone.HIPS and PARENTS[Bone.R_THIGH] == Bone.HIPS
    assert PARENTS[Bone.L_FINGERS] == Bone.L_HAND and PARENTS[Bone.R_THUMB] == Bone.R_HAND
    assert all(PARENTS[b] == Bone.HEAD for b in (Bone.JAW, Bone.NOSE, Bone.L_EYE, Bone.R_EYE, Bone.MOUTH,
                                                   Bone.HEAD_TOP))


def test_bone_of_takes_a_bone_a_number_or_a_name():
    assert Bone.of(Bone.HEAD) is Bone.HEAD and Bone.of(6) is Bone.HEAD and Bone.of("head") is Bone.HEAD
    assert Bone.of(np.int64(19)) is Bone.L_HAND and Bone.of(" l_hand ") is Bone.L_HAND
    with pytest.raises(ValueError, match="no bone named 'hed'; did you mean HEAD"):
        Bone.of("hed")
    for bad in (34, -1, True, 1.0, None):
        with pytest.raises(ValueError, match="expected a Bone"):
            Bone.of(bad)


def test_game_bone_reads_one_row_of_the_bones(new_game):
    g = new_game()
    g.add_human("a", demo_set(), position=(1.0, 2.0, 0.0), heading=90.0)
    g.change("a", g.player.loop(g.instance("a"), "FIGHT_IDLE"))
    for _ in range(5):
        g.step()
    wpos, wrot = g.bones_world("a")
    mpos, mrot = g.bones_model("a")
    pos, rot = g.bone("a", Bone.HEAD)
    assert np.array_equal(pos, wpos[6]) and np.array_equal(rot, wrot[6])
    pos, rot = g.bone("a", "r_hand", space="model")
    assert np.array_equal(pos, mpos[25]) and np.array_equal(rot, mrot[25])
    assert pos.shape == (3,) and rot.shape == (4,)
    assert g.bone("a", Bone.HEAD)[0][2] > g.bone("a", Bone.PELVIS)[0][2] > g.bone("a", Bone.L_FOOT)[0][2]
    with pytest.raises(ValueError, match="space 'screen'"):
        g.bone("a", Bone.HEAD, space="screen")
    with pytest.raises(ValueError, match="did you mean HEAD"):
        g.bone("a", "HAED")


# ---------------------------------------------------------------- Game.on


def test_game_on_hands_each_event_of_its_type_to_the_handler(new_game):
    g = new_game()
    g.add_human("a", demo_set())
    g.add_human("b", demo_set(), position=(3.0, 0.0, 0.0))
    seen: list[tuple[int, str, int, int]] = []

    def window(ctx, entity, fired):
        seen.append((ctx.update, g.name_of(entity), fired.anim_id, fired.event.type))

    assert g.on(EventType.HELD_OPEN, window) is window
    g.change("a", g.player.chain(g.instance("a"), ["JAB", "FIGHT_IDLE"]))
    for _ in range(30):
        g.step()
    jab = demo_set().clip(11)
    opens = [e.frame for e in jab.decoded_events() if e.type == EventType.HELD_OPEN]
    assert len(seen) == len(opens) == 1
    update, name, anim, etype = seen[0]
    assert (name, anim, etype) == ("a", 11, EventType.HELD_OPEN)
    assert 0 < update < 30


def test_game_on_refuses_what_is_not_a_type_or_a_handler(new_game):
    g = new_game()
    with pytest.raises(ValueError, match="event type 256"):
        g.on(256, lambda ctx, e, fe: None)
    with pytest.raises(ValueError, match="event type 'SOUND'"):
        g.on("SOUND", lambda ctx, e, fe: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not callable"):
        g.on(EventType.SOUND, None)  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        g.name_of(12345)
