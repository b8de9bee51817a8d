"""Every number range-checked where it enters.

One test per class of hostile number, each trying many values: NaN, infinities, values
past the documented ranges, ints wider than the field and ints of thousands of digits,
at every entry: the scenario TOML, the CLI's flags, csv2trace's columns, the traces
``scuffle diff`` reads, and the Python API (Game.add_human, Body's setters, ctx.dt, the
fight rules' commands). A file or a flag gives one line naming the file (and line) or
the flag, status 2; the API raises a ValueError naming the argument and changes nothing.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scuffle_cli import run_scuffle  # noqa: E402

from scuffle.game.fighters import registry
from scuffle.game.fighters.combat import Fight
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime.scenario import ScenarioError, parse_scenario
from scuffle.game.runtime.world import Game
from scuffle.game.tools.csv_to_trace import ConvertError, convert

NAN, INF = float("nan"), float("inf")
HUGE_INT = 10 ** 20
DIGITS_1200 = int("9" * 1200)


def _one_line(r, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout[-300:], r.stderr[-1000:])
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr[-1000:]
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


# ---------------------------------------------------------------- the scenario

BASE = 'updates = 4\n[sets.a]\nlibrary = "demo"\n[[humans]]\nname = "p1"\nset = "a"\n{human}' \
       '[[humans]]\nname = "p2"\nset = "a"\nposition = [1.0, 0.0, 0.0]\n{top}' \
       '[[commands]]\nupdate = 0\nhuman = "p1"\n{command}\n'

# (where: human / top / command, the TOML, the field the error names)
SCENARIO_CASES = [
    ("command", "loop = 11\nflags = 2147483648", "commands[0].flags"),
    ("command", "loop = 11\nflags = 4294967296", "commands[0].flags"),
    ("command", "loop = 11\nflags = 18446744073709551616", "commands[0].flags"),
    ("command", "loop = 11\nheld = 2147483648", "commands[0].held"),
    ("command", "loop = 11\nheld = 4294967295", "commands[0].held"),
    ("command", "loop = 11\nheld = -1", "commands[0].held"),
    ("command", f"loop = 11\nheld = {DIGITS_1200}", "commands[0].held"),
    ("command", "loop = 11\nfade = nan", "commands[0].fade"),
    ("command", "loop = 11\nfade = inf", "commands[0].fade"),
    ("command", "loop = 11\nfade = 1e308", "commands[0].fade"),
    ("command", "play = [11]\nblend = -inf", "commands[0].blend"),
    ("command", "loop = 100000000000000000000", "commands[0].loop"),
    ("command", "play = [11, -1]", "commands[0].play"),
    ("command", "target = nan", "commands[0].target"),
    ("command", "target = 1e308", "commands[0].target"),
    ("command", 'action = "move"\nspeed = nan', "commands[0].speed"),
    ("command", 'action = "move"\nspeed = inf', "commands[0].speed"),
    ("command", 'action = "move"\ndirection = [1e308, 0.0]', "commands[0].direction"),
    ("command", 'action = "move"\ndirection = [nan, 0.0]', "commands[0].direction"),
    ("command", 'action = "face"\nheading = inf', "commands[0].heading"),
    ("command", 'action = "face"\nheading = 1e300', "commands[0].heading"),
    ("command", 'action = "strike"\nmove = 2147483648', "commands[0].move"),
    ("command", 'action = "throw"\nmove = -1', "commands[0].move"),
    ("command", "loop = 11\nupdate = 100000000000000000000", "commands[0]"),
    ("human", "health = nan\n", "humans[0].health"),
    ("human", "health = inf\n", "humans[0].health"),
    ("human", "health = 1e308\n", "humans[0].health"),
    ("human", "health = 0\n", "humans[0].health"),
    ("human", "position = [nan, 0.0, 0.0]\n", "humans[0].position"),
    ("human", "position = [0.0, inf, 0.0]\n", "humans[0].position"),
    ("human", "position = [0.0, 0.0, 1e300]\n", "humans[0].position"),
    ("human", "heading = -inf\n", "humans[0].heading"),
    ("human", "heading = nan\n", "humans[0].heading"),
    ("human", f"heading = {DIGITS_1200}\n", "humans[0].heading"),
    ("top", "[options]\npool_size = 1000000000000\n", "options.pool_size"),
    ("top", "[options]\npool_size = 0\n", "options.pool_size"),
    ("top", "[fight]\nround_pause = 100000000000000000000\n", "fight.round_pause"),
    ("top", "[fight]\nround_pause = 0\n", "fight.round_pause"),
]


def _scenario(where: str, text: str) -> str:
    parts = {"human": "", "top": "", "command": "loop = 11"}
    parts[where] = text
    body = BASE.format(**parts)
    if where == "command" and text.startswith("loop = 11\nupdate"):
        body = body.replace("update = 0\n", "", 1)
    return body


@pytest.mark.parametrize("where, text, field", SCENARIO_CASES, ids=[c[1].replace("\n", " ")[:50] for c in SCENARIO_CASES])
def test_a_scenario_number_out_of_range_is_refused_at_load_naming_its_field(where, text, field):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_scenario(where, text), "s.toml", registry=registry())
    msg = str(info.value)
    assert msg.startswith("s.toml:") and field in msg, msg
    assert len(msg) < 400, msg


def test_the_top_values_of_the_32_bit_words_still_run(tmp_path):
    """flags and held of 2^31 - 1 pass validation and run (they crashed nothing before)."""
    (tmp_path / "s.toml").write_text(_scenario("command", "loop = 11\nflags = 2147483647\nheld = 2147483647"))
    r = run_scuffle("run", tmp_path / "s.toml", "--trace", tmp_path / "t.jsonl")
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 8


def test_a_word_of_2_31_fails_at_load_not_at_update_0(tmp_path):
    (tmp_path / "s.toml").write_text(_scenario("command", "loop = 11\nheld = 2147483648"))
    r = run_scuffle("run", tmp_path / "s.toml", "--trace", tmp_path / "t.jsonl")
    _one_line(r, "s.toml:", "commands[0].held", "0-2147483647")


def test_an_integer_of_5000_digits_in_a_scenario_names_its_file_and_line(tmp_path):
    (tmp_path / "s.toml").write_text(_scenario("human", "heading = " + "9" * 5000 + "\n"))
    r = run_scuffle("run", tmp_path / "s.toml")
    _one_line(r, "s.toml:7: toml: an integer of more than 4,300 digits")


# ---------------------------------------------------------------- the CLI's flags

CLI_CASES = [
    (["diff", "a.jsonl", "a.jsonl", "--tolerance", "nan"], "--tolerance"),
    (["diff", "a.jsonl", "a.jsonl", "--tolerance", "inf"], "--tolerance"),
    (["diff", "a.jsonl", "a.jsonl", "--tolerance", "-1"], "--tolerance"),
    (["diff", "a.jsonl", "a.jsonl", "--context", "1" + "0" * 40], "--context"),
    (["diff", "a.jsonl", "a.jsonl", "--context", "9" * 5000], "--context"),
    (["csv2trace", "a.csv", "o.jsonl", "--update-offset", "1" + "0" * 30], "--update-offset"),
    (["csv2trace", "a.csv", "o.jsonl", "--update-offset", "nan"], "--update-offset"),
    (["bench", "--humans", "9" * 5000], "--humans"),
    (["bench", "--updates", "1" + "0" * 20], "--updates"),
    (["survey", "x", "--progress", "-1"], "--progress"),
    (["clip", "a.res", "--id", "1" + "0" * 20], "--id"),
]


@pytest.mark.parametrize("args, flag", CLI_CASES, ids=[" ".join(a[0:1] + a[-2:])[:50] for a, _ in CLI_CASES])
def test_a_numeric_flag_out_of_range_is_one_line_naming_it(tmp_path, args, flag):
    from scuffle.anim.data.resource import save_resource
    (tmp_path / "a.jsonl").write_text('{"update": 0, "human": "a"}\n')
    (tmp_path / "a.csv").write_text("update,anim,time\n0,1,0.5\n")
    (tmp_path / "a.res").write_bytes(save_resource(demo_set().to_resource()))
    r = run_scuffle(*args, cwd=tmp_path)
    _one_line(r, flag)
    assert not (tmp_path / "o.jsonl").exists()


DEMO_CASES = [
    (["--gif-from", "1e308"], "--gif-from"), (["--gif-from", "nan"], "--gif-from"), (["--gif-from", "-1"], "--gif-from"),
    (["--health", "1e308"], "--health"), (["--health", "inf"], "--health"), (["--health", "0"], "--health"),
    (["--seed", "1" + "0" * 30], "--seed"), (["--seed", "nan"], "--seed"),
    (["--at", "-1"], "--at"), (["--at", "1" + "0" * 20], "--at"),
    (["--seconds", "1e308"], "--seconds"), (["--frame-every", "inf"], "--frame-every"),
]


@pytest.mark.parametrize("args, flag", DEMO_CASES, ids=[" ".join(a) for a, _ in DEMO_CASES])
def test_a_demo_or_viewer_flag_out_of_range_is_a_usage_error_naming_it(capsys, args, flag):
    from scuffle.demo.cli import parse_args
    with pytest.raises(SystemExit) as info:
        parse_args(["--headless", *args])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and flag in err, err


@pytest.mark.parametrize("args, flag", [(["--id", "1" + "0" * 30], "--id"), (["--id", "-3"], "--id"),
                                         (["--rate", "1e30"], "--rate"), (["--rate", "nan"], "--rate")])
def test_a_viewer_flag_out_of_range_is_one_line(tmp_path, args, flag):
    from scuffle.demo import view
    try:
        r = view.main(["demo", "--headless", "--out", str(tmp_path / "o"), *args])
    except SystemExit as exc:
        r = exc.code
    assert r == 2
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- csv2trace

CSV_CASES = [
    ("0,3,Infinity,1", "time"), ("0,3,-Infinity,1", "time"), ("0,3,NaN,1", "time"), ("0,3,nan,1", "time"),
    ("0,3,1e300,1", "time"), ("0,3,1e39,1", "time"),
    ("0,3,0.5," + "9" * 1200, "column 4"), ("0,3,0.5," + "9" * 40, "held"), ("0,3,0.5,4294967296", "held"),
    ("0,3,0.5,-1", "held"), ("0,3,0.5,0x1ffffffff", "held"),
    ("0,100000000000000000000,0.5,1", "anim"), ("0,2147483648,0.5,1", "anim"), ("0,-2,0.5,1", "anim"),
    ("1" + "0" * 25 + ",3,0.5,1", "update"), ("9" * 5000 + ",3,0.5,1", "column 1"),
    ('0,3,0.5,"' + "x" * 2_000_000 + '"', "not CSV"),
]


@pytest.mark.parametrize("row, column", CSV_CASES, ids=[r[:30] for r, _ in CSV_CASES])
def test_a_csv_value_out_of_range_is_refused_naming_its_line_and_column(tmp_path, row, column):
    text = "update,anim,time,held\n" + row + "\n"
    with pytest.raises(ConvertError) as info:
        convert(text, "in.csv")
    msg = str(info.value)
    assert msg.startswith("in.csv:2: ") and column in msg and len(msg) < 300, msg[:500]
    (tmp_path / "in.csv").write_text(text)
    r = run_scuffle("csv2trace", tmp_path / "in.csv", tmp_path / "out.jsonl")
    _one_line(r, "in.csv:2")
    assert not (tmp_path / "out.jsonl").exists()


def test_csv_positions_and_headings_past_1e9_are_refused():
    for row in ("0,3,0.5,1e10,0,0,0", "0,3,0.5,0,nan,0,0", "0,3,0.5,0,0,0,inf", "0,3,0.5,0,0,0,1e300"):
        with pytest.raises(ConvertError, match="in.csv:2: (pos_[xyz]|heading)"):
            convert("update,anim,time,pos_x,pos_y,pos_z,heading\n" + row + "\n", "in.csv")


def test_every_converted_record_is_strict_json(tmp_path):
    text = "update,anim,time,held,heading\n0,3,3.4e38,0xffffffff,-1e9\n1,-1,0,0,1e9\n"
    (tmp_path / "in.csv").write_text(text)
    assert run_scuffle("csv2trace", tmp_path / "in.csv", tmp_path / "o.jsonl").returncode == 0
    for line in (tmp_path / "o.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-standard token {c}"))


# ---------------------------------------------------------------- traces read by diff

TRACE_CASES = [
    ('{"update": 0, "human": "a", "anim": ' + "9" * 5000 + "}", "a.jsonl:2: an integer of more than 4,300 digits"),
    ('{"update": ' + "9" * 5000 + ', "human": "a"}', "a.jsonl:2: an integer of more than 4,300 digits"),
    ('{"update": 100000000000000000000, "human": "a"}', "a.jsonl:2: update: expected an integer 0-"),
    ('{"update": -1, "human": "a"}', "a.jsonl:2: update"),
    ('{"update": 1e3, "human": "a"}', "a.jsonl:2: update: expected an integer"),
    ('{"update": NaN, "human": "a"}', "a.jsonl:2: update: expected an integer"),
    ('{"update": 1, "human": ' + "1" * 3000 + "}", "a.jsonl:2: human: expected a string"),
]


@pytest.mark.parametrize("line, needle", TRACE_CASES, ids=[n[10:50] for _, n in TRACE_CASES])
def test_a_trace_number_out_of_range_names_the_file_and_line(tmp_path, line, needle):
    (tmp_path / "a.jsonl").write_text('{"update": 0, "human": "b"}\n' + line + "\n")
    (tmp_path / "b.jsonl").write_text('{"update": 0, "human": "b"}\n')
    r = run_scuffle("diff", "a.jsonl", "b.jsonl", cwd=tmp_path)
    _one_line(r, needle)
    assert len(r.stderr) < 300, r.stderr[:500]


# ---------------------------------------------------------------- the Python API

BAD_FLOATS = [NAN, INF, -INF, 1e300, "1.0", None, True]


@pytest.fixture
def game():
    g = Game()
    g.add_human("p1", demo_set(), (0.0, 0.0, 0.0))
    g.add_human("p2", demo_set(), (2.0, 0.0, 0.0), 180.0)
    yield g
    g.close()


@pytest.fixture(scope="module")
def fought():
    """The fight rules on a Game like ``game``'s, built once for the module's refusal
    tests: each checks that what it tried left its own values as they were, so they can
    share it (the tests that make their own Fight, or add humans, use ``game``)."""
    g = Game()
    g.add_human("p1", demo_set(), (0.0, 0.0, 0.0))
    g.add_human("p2", demo_set(), (2.0, 0.0, 0.0), 180.0)
    yield Fight(g)
    g.close()


@pytest.mark.parametrize("kw, name", [({"position": (NAN, 0, 0)}, "position"), ({"position": (0, INF, 0)}, "position"),
                                      ({"position": (0, 0, 1e300)}, "position"), ({"position": (0, 0)}, "position"),
                                      ({"position": "abc"}, "position"), ({"heading": NAN}, "heading"),
                                      ({"heading": -INF}, "heading"), ({"heading": 1e300}, "heading"),
                                      ({"health": NAN}, "health"), ({"health": INF}, "health"),
                                      ({"health": 0.0}, "health"), ({"health": -5.0}, "health"),
                                      ({"health": 1e300}, "health"), ({"health": HUGE_INT ** 20}, "health")])
def test_add_human_refuses_non_finite_and_out_of_range_numbers_naming_them(fought, kw, name):
    game = fought.game
    names = dict(game.names)
    with pytest.raises(ValueError, match=f"add_human: {name}"):
        game.add_human("p3", demo_set(), **kw)
    assert dict(game.names) == names and "p3" not in game.names


@pytest.mark.parametrize("field", ["position", "velocity", "state_velocity", "attach_offset"])
@pytest.mark.parametrize("value", [(NAN, 0, 0), (0, INF, 0), (0, 0, -1e300), NAN])
def test_a_body_vector_refuses_non_finite_values_and_keeps_its_old_one(fought, field, value):
    body = fought.body("p1")
    old = getattr(body, field).copy()
    with pytest.raises(ValueError, match=f"Body.{field}"):
        setattr(body, field, value)
    assert getattr(body, field).tobytes() == old.tobytes()


@pytest.mark.parametrize("field", ["heading", "attach_heading", "slide_heading"])
@pytest.mark.parametrize("value", [NAN, INF, -INF, 1e300, HUGE_INT ** 20])
def test_a_body_angle_refuses_non_finite_values(fought, field, value):
    body = fought.body("p2")
    old = getattr(body, field)
    with pytest.raises(ValueError, match=f"Body.{field}"):
        setattr(body, field, value)
    assert getattr(body, field) == old


@pytest.mark.parametrize("value", [(NAN, 0, 0), (INF, 0, 0), "x"])
def test_a_body_slide_target_refuses_non_finite_values(fought, value):
    body = fought.body("p1")
    with pytest.raises(ValueError, match="Body.slide_to"):
        body.slide_to = value
    assert body.slide_to is None


@pytest.mark.parametrize("value", [NAN, INF, -INF, -1.0, 2.0, "x", None])
def test_ctx_dt_refuses_nan_infinities_and_out_of_range(fought, value):
    game = fought.game
    with pytest.raises(ValueError, match="ctx.dt"):
        game.ctx.dt = value
    assert game.ctx.dt == pytest.approx(1 / 30)
    game.step()                         # the world still runs


@pytest.mark.parametrize("call, name", [
    (lambda f: f.move("p1", (NAN, 1.0)), "move: direction"),
    (lambda f: f.move("p1", (INF, 0.0)), "move: direction"),
    (lambda f: f.move("p1", (1e300, 0.0)), "move: direction"),
    (lambda f: f.move("p1", (1.0,)), "move: direction"),
    (lambda f: f.move("p1", (0.0, 1.0), NAN), "move: speed"),
    (lambda f: f.move("p1", (0.0, 1.0), INF), "move: speed"),
    (lambda f: f.move("p1", (0.0, 1.0), 1e300), "move: speed"),
    (lambda f: f.face("p1", NAN), "face: heading"),
    (lambda f: f.face("p1", -INF), "face: heading"),
    (lambda f: f.face("p1", 1e300), "face: heading"),
    (lambda f: f.strike("p1", NAN), "strike: move"),
    (lambda f: f.strike("p1", 2 ** 40), "strike: move"),
    (lambda f: f.strike("p1", -1), "strike: move"),
    (lambda f: f.throw("p1", HUGE_INT), "throw: move"),
    (lambda f: Fight(f.game, round_pause=NAN), "round_pause"),
    (lambda f: Fight(f.game, round_pause=HUGE_INT), "round_pause"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_fight_commands_refuse_bad_numbers_naming_the_argument(game, call, name):
    fight = Fight(game, separate=True)
    body = fight.body("p1")
    before = (body.position.tobytes(), body.heading, fight.combat("p1").state)
    with pytest.raises(ValueError, match=name):
        call(fight)
    assert (body.position.tobytes(), body.heading, fight.combat("p1").state) == before


def test_after_the_checks_no_nan_reaches_a_separated_crowd(game):
    """Every way in refuses NaN, so a crowd with the separation stays finite."""
    fight = Fight(game, separate=True)
    for k in range(8):
        game.add_human(f"c{k}", demo_set(), (0.1 * k, 0.05 * k, 0.0))
    for bad in (lambda: game.add_human("x", demo_set(), (NAN, 0, 0)), lambda: fight.face("c1", NAN),
                lambda: fight.move("c2", (NAN, 0.0)), lambda: setattr(fight.body("c3"), "position", (NAN, 0, 0))):
        with pytest.raises(ValueError):
            bad()
    for _ in range(10):
        game.step()
    pos = np.array([fight.body(e).position for _, e in game.humans()])
    assert np.isfinite(pos).all() and math.isfinite(sum(fight.body(e).heading for _, e in game.humans()))


@pytest.mark.parametrize("kw, name", [({"dt": NAN}, "PlayerOptions.dt"), ({"dt": INF}, "PlayerOptions.dt"),
                                      ({"dt": -0.1}, "PlayerOptions.dt"), ({"pool_size": 0}, "pool_size"),
                                      ({"pool_size": 2 ** 40}, "pool_size"), ({"pool_size": 1.5}, "pool_size"),
                                      ({"early_finish_above": -1}, "early_finish_above"),
                                      ({"cleanup_above": HUGE_INT}, "cleanup_above")])
def test_player_options_refuse_bad_numbers_naming_them(kw, name):
    from scuffle.anim.playback.player import PlayerOptions
    with pytest.raises(ValueError, match=name):
        PlayerOptions(**kw)


@pytest.mark.parametrize("dt", [NAN, INF, -1.0, 5.0])
def test_a_player_step_refuses_a_bad_dt_before_stepping(fought, dt):
    game = fought.game
    before = game.record("p1").anim_id, game.update
    with pytest.raises(ValueError, match="step: dt"):
        game.player.step([game.instance("p1")], dt)
    assert (game.record("p1").anim_id, game.update) == before
