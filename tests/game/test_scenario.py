"""The scenario file (game/scenario.py): validation with field and line, and what each key does.

Pinned: the public scenario format (docs/scenarios.md, "The file"). Runs in process (run_scenario with an
in-memory trace); the CLI's own behaviour is in test_cli_run.py.
"""
from __future__ import annotations

import io
import json

import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import encode_clip
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.data.resource import save_resource
from scuffle import ScenarioError, load_scenario, parse_scenario, run_scenario
from scuffle.game.runtime.trace import f32_json

from gamehelp import IDLE, clip, clip_toml, command_toml, human_toml, still

GAIT = [408, 409, 410, 411, 411]


def base_text(commands: str = "", updates: int = 10) -> str:
    """A valid scenario: set s (id 1: 10 frames; IDLE; the gait ids), human a."""
    text = f"updates = {updates}\n" + clip_toml("s", 1, clip(10), flags=0) + clip_toml("s", IDLE, still())
    for i, f in zip(sorted(set(GAIT)), (30, 32, 34, 36)):
        text += clip_toml("s", i, clip(f, f"g{i}"), flags=0x1000)
    return text + human_toml("a") + (commands or command_toml(0, "a", play=[1, IDLE]))


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the last line holding ``needle``."""
    return [i + 1 for i, line in enumerate(text.splitlines()) if needle in line][-1]


def run_text(text: str, tmp_path=None, **kw) -> list[dict]:
    sc = parse_scenario(text, "t.toml", base=tmp_path)
    out = io.StringIO()
    run_scenario(sc, out, **kw).close()
    return [json.loads(line) for line in out.getvalue().splitlines()]


# ---------------------------------------------------------------- errors: the field and the line

def _errors():
    b = base_text()
    cases = [
        ("unknown top-level key", "bogus = 1\n" + b, "bogus = 1", "bogus"),
        ("unknown command key", b + "bogus = 2\n", "bogus = 2", "commands[0].bogus"),
        ("missing updates", b.replace("updates = 10\n", ""), None, "updates"),
        ("missing human", b + command_toml(1, "zed", loop=IDLE), 'human = "zed"', "commands[1].human"),
        ("human without a name", b + '[[humans]]\nset = "s"\n', "[[humans]]", "humans[1].name"),
        ("unknown set", b + human_toml("b", "nope"), 'set = "nope"', "humans[1].set"),
        ("an id with no clip", b + command_toml(1, "a", loop=5), "loop = 5", "commands[1].loop"),
        ("a play id with no clip", b + command_toml(1, "a", play=[1, 7]), "play = [1, 7]", "commands[1].play"),
        ("bad type", b + command_toml(1, "a", loop=IDLE, fade="x"), 'fade = "x"', "commands[1].fade"),
        ("bad flags type", b + command_toml(1, "a", loop=IDLE, held=1.5), "held = 1.5", "commands[1].held"),
        ("bad hex", b + '[[sets.s.clips]]\nid = 2\ndescriptor = "zz"\nkeyframes = ""\n',
         'descriptor = "zz"', "sets.s.clips[6].descriptor"),
        ("malformed clip payload", b + '[[sets.s.clips]]\nid = 2\ndescriptor = "0011"\nkeyframes = ""\n',
         'descriptor = "0011"', "sets.s.clips[6].descriptor"),
        ("bad TOML syntax", b + "x = = 1\n", "x = = 1", "toml"),
        ("TOML cut short", b + "x = [1,\n", "x = [1,", "toml"),
        ("gait without target", b + command_toml(1, "a", gait=GAIT), "[[commands]]", "commands[1].target"),
        ("two kinds", b + command_toml(1, "a", loop=IDLE, play=[1]), "[[commands]]", "commands[1]"),
        ("command past the end", b + command_toml(10, "a", loop=IDLE), "update = 10", "commands[1].update"),
        ("unknown option", b.replace("updates = 10\n", "updates = 10\n[options]\nfoo = 1\n"), "foo = 1",
         "options.foo"),
        ("bad option type", b.replace("updates = 10\n", "updates = 10\n[options]\nend_zero_overshoot = 1\n"),
         "end_zero_overshoot", "options.end_zero_overshoot"),
        ("bad speeds", b.replace("updates = 10\n", "updates = 10\nspeeds = [1, 2]\n"), "speeds",
         "speeds"),
        ("unknown range key", b.replace("range = { flags = 0x0 }", "range = { flag = 1 }"),
         "flag = 1", "sets.s.clips[0].range.flag"),
        ("paired with nobody", b + command_toml(1, "a", loop=IDLE, paired="zz"), 'paired = "zz"',
         "commands[1].paired"),
        ("unknown action", b + command_toml(1, "a", action="dance"), 'action = "dance"', "commands[1].action"),
        ("missing clip file", b + '[[sets.s.clips]]\nid = 2\ndescriptor_file = "no.bin"\nkeyframes = ""\n',
         "descriptor_file", "sets.s.clips[6].descriptor_file"),
        ("missing resource file", b + '[sets.r]\nresource = "no.res"\n', "resource", "sets.r.resource"),
    ]
    return [pytest.param(text, needle, fld, id=name) for name, text, needle, fld in cases]


@pytest.mark.parametrize("text, needle, fld", _errors())
def test_every_error_names_the_field_and_the_line(tmp_path, text, needle, fld):
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(text, "t.toml", base=tmp_path)
    e = ei.value
    line = 1 if needle is None else line_of(text, needle)
    assert (e.field, e.line) == (fld, line)
    assert str(e).startswith(f"t.toml:{line}: {fld}: ")
    assert "\n" not in str(e)
    assert isinstance(e, ValueError)


def test_a_valid_file_parses():
    sc = parse_scenario(base_text(command_toml(0, "a", play=[1, IDLE], fade=0.1, blend=0.0, flags=0,
                                               held=3)), "t.toml")
    assert sc.updates == 10 and [h.name for h in sc.humans] == ["a"]
    cmd = sc.commands[0]
    assert (cmd.kind, cmd.ids, cmd.fade, cmd.held, cmd.flags) == ("play", [1, IDLE], 0.1, 3, 0)


# ---------------------------------------------------------------- what the keys do

def test_a_command_applies_in_the_actions_phase_of_its_update():
    recs = run_text(base_text(command_toml(3, "a", loop=1)))
    first = next(r for r in recs if r["anim"] == 1)
    assert first["update"] == 3
    assert first["tasks"][0]["time"] == 0.0                 # pushed after this update's step
    nxt = recs[4]
    assert nxt["update"] == 4 and nxt["tasks"][0]["time"] == f32_json(F.mul(F.DT, 0.75))
    assert all(r["anim"] == -1 for r in recs[:3])


@pytest.mark.parametrize("speeds, rate", [(None, 0.75), ([0.5, 0.8, 1.0, 0.9], 0.5), ([1.0, 0.85, 1.0, 1.0], 1.0)])
def test_speeds_set_the_rates(speeds, rate):
    text = base_text(command_toml(0, "a", loop=1))
    if speeds is not None:
        text = text.replace("updates = 10\n", f"updates = 10\nspeeds = {speeds}\n")
    recs = run_text(text)
    assert recs[1]["tasks"][0]["time"] == f32_json(F.mul(F.DT, F.f32(rate)))


def test_speeds_f800_picks_the_rate_of_flag_0x800():
    text = base_text(command_toml(0, "a", loop=1)).replace("range = { flags = 0x0 }", "range = { flags = 0x800 }")
    text = text.replace("updates = 10\n", "updates = 10\nspeeds = [0.75, 0.5, 1.0, 0.9]\n")
    assert run_text(text)[1]["tasks"][0]["time"] == f32_json(F.mul(F.DT, 0.5))


@pytest.mark.parametrize("option, ends", [(None, False), (False, False), (True, True)])
def test_end_zero_overshoot_option(option, ends):
    text = "updates = 30\n"
    if option is not None:
        text += f"[options]\nend_zero_overshoot = {str(option).lower()}\npool_size = 360\n"
    text += clip_toml("s", 2, clip(2, "two")) + clip_toml("s", IDLE, still()) + human_toml("a")
    text += command_toml(0, "a", play=[2, IDLE])
    ids = [r["anim"] for r in run_text(text)]
    if ends:
        assert ids[-1] == IDLE and ids.index(IDLE) <= 3
    else:
        assert set(ids) == {2}                             # the 0.0 overshoot: never ends


def test_clip_files_are_relative_to_the_scenario(tmp_path, monkeypatch):
    c = clip(14, "from_file", velocity=[(0, (0.0, 1.0, 0.0))])
    d, k = encode_clip(c)
    (tmp_path / "sc" / "clips").mkdir(parents=True)
    (tmp_path / "sc" / "clips" / "w.desc").write_bytes(d)
    (tmp_path / "sc" / "clips" / "w.keys").write_bytes(k)
    path = tmp_path / "sc" / "x.toml"
    path.write_text('updates = 3\n[[sets.s.clips]]\nid = 5\ndescriptor_file = "clips/w.desc"\n'
                    'keyframes_file = "clips/w.keys"\n' + human_toml("a") + command_toml(0, "a", loop=5))
    monkeypatch.chdir(tmp_path)                             # not the scenario's folder
    sc = load_scenario(path)
    assert encode_clip(sc.sets["s"].clip(5)) == (d, k)
    game = run_scenario(sc)
    assert game.record("a").anim_id == 5
    game.close()


def test_a_resource_file_is_relative_to_the_scenario(tmp_path, monkeypatch):
    c1, c2 = clip(12, "one"), clip(20, "two")
    aset = AnimSet.build({1: c1, 2: c2, IDLE: still()}, {1: author_range(flags=0x800), 2: author_range(reach=1.5)})
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "chars.res").write_bytes(save_resource(aset.to_resource()))
    override = clip(7, "override")
    path = tmp_path / "sc" / "x.toml"
    path.write_text('updates = 3\n[sets.r]\nresource = "chars.res"\n' + clip_toml("r", 2, override)
                    + human_toml("a", "r") + command_toml(0, "a", loop=1))
    monkeypatch.chdir(tmp_path)
    sc = load_scenario(path)
    r = sc.sets["r"]
    assert encode_clip(r.clip(1)) == encode_clip(c1)
    assert encode_clip(r.clip(2)) == encode_clip(override)     # [[sets.r.clips]] replaces an id
    assert r.range(1).flags == 0x800 and r.range(2).reach == pytest.approx(1.5)
    assert r.ids() == [1, 2, IDLE]
    # A malformed resource names the resource key's line.
    (tmp_path / "sc" / "chars.res").write_bytes(b"\x00\x00\x00\x00\xff\x00\x00\x00")
    with pytest.raises(ScenarioError) as ei:
        load_scenario(path)
    assert (ei.value.field, ei.value.line) == ("sets.r.resource", 3)


def test_target_alone_retargets_the_gait():
    cmds = command_toml(0, "a", gait=GAIT, target=0) + command_toml(5, "a", target=2.5)
    recs = run_text(base_text(cmds, updates=14))
    gait = [r["tasks"][0] for r in recs]
    assert all(g["type"] == 12 and g["ids"] == GAIT for g in gait)
    assert [g["target"] for g in gait[:5]] == [0.0] * 5
    assert gait[5]["target"] == 2.5                          # flags 0x2c1: not rounded
    values = [g["value"] for g in gait]
    assert values[:6] == [0.0] * 6                           # retargeted after the step of update 5
    assert 0 < values[6] <= 1 / 3 + 1e-6                     # at most 10 units/s
    assert values[-1] == 2.5
    assert gait[-1]["lower"] == 410 and gait[-1]["upper"] == 411


def test_a_gait_target_is_rounded_without_flag_0x200():
    cmds = command_toml(0, "a", gait=GAIT, target=0, flags=0xC1) + command_toml(1, "a", target=2.4)
    recs = run_text(base_text(cmds, updates=3))
    assert recs[1]["tasks"][0]["target"] == 2.0


def test_held_fade_and_paired_keys():
    text = base_text(command_toml(0, "a", play=[1, IDLE], held=5) + command_toml(2, "b", loop=1, paired="a")
                     + command_toml(4, "a", loop=IDLE, fade=0.2), updates=20)
    text = text.replace('[[commands]]', human_toml("b", "t") + "[[commands]]", 1)
    text += clip_toml("t", 1, clip(40, "t_one"), flags=0x1000)
    recs = run_text(text)
    a = [r for r in recs if r["human"] == "a"]
    b = [r for r in recs if r["human"] == "b"]
    assert [r["held"] for r in a[:4]] == [5, 5, 5, 5]
    # The fade: new task at the bottom, the old one, the fade on top.
    assert [t["type"] for t in a[4]["tasks"]] == [1, 3, 9]
    assert a[4]["tasks"][2]["duration"] == 0.2
    # Cut off by the fade's end: its held bits are cleared by the release.
    assert a[-1]["held"] == 0 and [t["type"] for t in a[-1]["tasks"]] == [1]
    # b's loop of id 1 comes from a's set (10 frames, no flag: 0.75), not b's own (40, 1.0).
    assert b[3]["tasks"][0]["time"] == f32_json(F.mul(F.DT, 0.75))
