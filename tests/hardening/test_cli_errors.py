"""Every CLI error is one clear line on stderr with a non-zero status, never a traceback.

Each case runs ``scuffle ...`` in its own
process (all of them at once, four at a time) with a bad input: a missing file, a
directory, a bad TOML, an unknown id, human, set or library, a malformed clip, resource
or range list, bad flags, an unwritable trace, a limit of the original hit at run time.
Every registered subcommand (game.cli.COMMANDS) also gets an unknown flag and, when it
takes files, a missing one. tests/game/test_cli_*.py hold each command's own behaviour.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from scuffle.anim.data.clip import encode_clip
from scuffle.anim.data.resource import save_resource
from scuffle import cli as face
from scuffle.game.cli import commands as cli

from scuffle_cli import run_scuffle

from .support import A, B, IDLE, LONG, SHORT, synthetic_set
from .test_fuzz_scenario import demo_text, synthetic_text


def _files(d: Path) -> None:
    """Every input file the cases name, good and bad, in ``d``."""
    s = synthetic_set()
    desc, keys = encode_clip(s.clip(A))
    (d / "a.desc").write_bytes(desc)
    (d / "a.keys").write_bytes(keys)
    (d / "short.desc").write_bytes(desc[:79])
    (d / "long.keys").write_bytes(keys + b"\0")
    nan = bytearray(desc)
    struct.pack_into("<f", nan, 0x0C, float("nan"))
    (d / "nan.desc").write_bytes(bytes(nan))
    mask = bytearray(desc)
    mask[0x24] |= 0x80                                      # bone 39
    (d / "mask.desc").write_bytes(bytes(mask))
    res = save_resource(s.to_resource())
    (d / "set.res").write_bytes(res)
    (d / "cut.res").write_bytes(res[:len(res) // 2])
    (d / "junk.res").write_bytes(b"\x01\x02\x03")
    reach = bytearray(res)
    at = res.index(struct.pack("<II", 0x45, 4 + 16 * 722)) + 8 + 4 + 16 * IDLE + 4
    struct.pack_into("<f", reach, at, float("inf"))
    (d / "reach.res").write_bytes(bytes(reach))
    (d / "ok.toml").write_text(synthetic_text())
    (d / "five.desc").write_bytes(encode_clip(s.clip(B))[0])
    (d / "five.keys").write_bytes(encode_clip(s.clip(B))[1])
    (d / "bad.toml").write_text(synthetic_text() + "x = = 1\n")
    (d / "unknown_id.toml").write_text(synthetic_text() + '[[commands]]\nupdate = 1\nhuman = "a"\nloop = 77\n')
    (d / "unknown_human.toml").write_text(synthetic_text() + '[[commands]]\nupdate = 1\nhuman = "zed"\nloop = 388\n')
    (d / "unknown_library.toml").write_text(demo_text().replace('library = "demo"', 'library = "street"'))
    (d / "bad_hex.toml").write_text(synthetic_text().replace('descriptor = "40de', 'descriptor = "zz40de', 1))
    (d / "bad_clip.toml").write_text(synthetic_text().replace('descriptor_file = "five.desc"',
                                                              'descriptor_file = "nan.desc"'))
    (d / "bad_resource.toml").write_text(synthetic_text().replace('resource = "set.res"', 'resource = "cut.res"'))
    (d / "no_resource.toml").write_text(synthetic_text().replace('resource = "set.res"', 'resource = "nope.res"'))
    (d / "huge_fade.toml").write_text(synthetic_text().replace("fade = 0.2", "fade = 1e39"))
    (d / "toward.toml").write_text(demo_text().replace('toward = "b"', 'toward = "nobody"'))
    # A grab that connects: the fight rules' own change needs a sixth task of a pool of 5.
    pool = ('updates = 40\n[options]\npool_size = 5\n[sets.demo]\nlibrary = "demo"\n'
            '[[humans]]\nname = "a"\nset = "demo"\n'
            '[[humans]]\nname = "b"\nset = "demo"\nposition = [0, 1.0, 0]\nheading = 180\n'
            '[[commands]]\nupdate = 0\nhuman = "a"\nloop = 358\n'
            '[[commands]]\nupdate = 2\nhuman = "a"\naction = "grab"\n')
    (d / "pool.toml").write_text(pool)
    (d / "a_dir").mkdir()


# name -> (argv, substrings the one line must hold)
CASES: dict[str, tuple[list[str], list[str]]] = {
    "clip: no arguments": (["clip"], ["scuffle clip: error:", "DESCRIPTOR_FILE"]),
    "clip: unknown flag": (["clip", "a.desc", "a.keys", "--bogus"], ["unrecognized arguments: --bogus"]),
    "clip: --id names no clip": (["clip", "set.res", "--id", "x"], ["--id", "no clip named 'x'"]),
    "clip: missing descriptor": (["clip", "nope.desc", "a.keys"], ["cannot read descriptor file", "nope.desc"]),
    "clip: missing keyframes": (["clip", "a.desc", "nope.keys"], ["cannot read keyframes file", "nope.keys"]),
    "clip: a directory": (["clip", "a_dir", "a.keys"], ["cannot read descriptor file", "a_dir"]),
    "clip: short descriptor": (["clip", "short.desc", "a.keys"], ["descriptor chunk, size at byte 79"]),
    "clip: bytes past the events": (["clip", "a.desc", "long.keys"], ["keyframes chunk, chunk size at byte"]),
    "clip: NaN duration": (["clip", "nan.desc", "a.keys", "--json"], ["duration at byte 12 (0xc)"]),
    "clip: mask bit 39": (["clip", "mask.desc", "a.keys"], ["bone mask at byte 36", "bone 39"]),
    "clip: junk resource": (["clip", "junk.res"], ["junk.res", "chunk 0", "cut short"]),
    "clip: truncated resource": (["clip", "cut.res", "--json"], ["cut.res", "overruns the file"]),
    "clip: infinite reach": (["clip", "reach.res"], ["reach.res", "reach"]),
    "clip: unknown id": (["clip", "set.res", "--id", "77"], ["anim id 77 has no clip"]),
    "clip: id past 721": (["clip", "set.res", "--id", "9999"], ["anim id 9999 has no clip"]),
    "clip: --id with a pair": (["clip", "a.desc", "a.keys", "--id", "3"], ["--id goes with a resource file"]),
    "run: no arguments": (["run"], ["scuffle run: error:", "SCENARIO.toml"]),
    "run: unknown flag": (["run", "ok.toml", "--fast"], ["unrecognized arguments: --fast"]),
    "run: missing file": (["run", "nope.toml"], ["nope.toml: file: cannot read"]),
    "run: a directory": (["run", "a_dir"], ["a_dir: file: cannot read"]),
    "run: bad TOML": (["run", "bad.toml"], ["bad.toml:", ": toml: "]),
    "run: unknown id": (["run", "unknown_id.toml"], ["commands[8].loop", "anim id 77 has no clip"]),
    "run: unknown human": (["run", "unknown_human.toml"], ["commands[8].human", "'zed'"]),
    "run: unknown library": (["run", "unknown_library.toml"], ["sets.demo.library", "'street'"]),
    "run: bad hex": (["run", "bad_hex.toml"], ["sets.s.clips[0].descriptor", "not a hex string"]),
    "run: malformed clip file": (["run", "bad_clip.toml"], ["sets.s.clips[8].descriptor_file", "duration"]),
    "run: malformed resource": (["run", "bad_resource.toml"], ["sets.r.resource", "cut.res"]),
    "run: missing resource": (["run", "no_resource.toml"], ["sets.r.resource", "nope.res"]),
    "run: a fade past float32": (["run", "huge_fade.toml"], ["commands[1].fade", "float32"]),
    "run: unwritable trace": (["run", "ok.toml", "--trace", "a_dir/no/x.jsonl"], ["cannot write trace"]),
    "run: a trace that is a directory": (["run", "ok.toml", "--trace", "a_dir"], ["cannot write trace"]),
    "run: face toward nobody": (["run", "toward.toml", "--trace", "t.jsonl"], ["commands[1]", "nobody"]),
    "run: the pool runs out in the fight rules": (["run", "pool.toml", "--trace", "p.jsonl"],
                                                  ["pool.toml:", "commands[1]: update", "task pool exhausted"]),
    "lint: no arguments": (["lint"], ["scuffle lint: error:", "RESOURCE_OR_CLIPS"]),
    "lint: unknown flag": (["lint", "set.res", "--strict"], ["unrecognized arguments: --strict"]),
    "lint: missing file": (["lint", "nope.res"], ["cannot read", "nope.res"]),
    "lint: junk resource": (["lint", "junk.res"], ["junk.res", "not a resource file"]),
    "lint: lone descriptor": (["lint", "a.desc"], ["a.desc", "keyframes file must follow"]),
    "lint: malformed pair": (["lint", "nan.desc", "a.keys"], ["nan.desc", "duration"]),
    "bench: zero humans": (["bench", "--humans", "0"], ["--humans and --updates must be at least 1"]),
    "bench: humans not a number": (["bench", "--humans", "many"], ["--humans", "invalid int value"]),
    "bench: negative updates": (["bench", "--updates", "-1"], ["must be at least 1"]),
    "bench: negative scalar updates": (["bench", "--humans", "1", "--updates", "1", "--scalar-updates", "-3"], []),
    "no command": ([], ["scuffle: error:", "COMMAND"]),
    "unknown command": (["dance"], ["invalid choice: 'dance'"]),
}


def _registry_cases() -> dict[str, tuple[list[str], list[str]]]:
    """An unknown flag for every registered subcommand, and a missing file for those
    whose first argument is a file."""
    out = {}
    commands = face.commands()
    parser = cli.build_parser(commands)
    subs = next(a for a in parser._actions if a.dest == "command").choices
    for command in commands:
        if command.add_arguments is cli.passthrough:      # demo / view parse their own arguments
            out[f"{command.name}: --no-such-flag"] = ([command.name, "--no-such-flag"], [f"scuffle {command.name}: error:"])
            continue
        positionals = [a for a in subs[command.name]._actions if not a.option_strings]
        n = sum(1 for a in positionals if a.nargs in (None, "+"))
        out[f"{command.name}: --no-such-flag"] = ([command.name, *(["no_such_file"] * n), "--no-such-flag"],
                                                   ["unrecognized arguments: --no-such-flag"])
        if n:
            out[f"{command.name}: missing files"] = ([command.name, *(["no_such_file"] * n)], ["no_such_file"])
    return out


ALL_CASES = {**CASES, **_registry_cases()}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("cli_errors")
    _files(d)
    return {name: (run_scuffle(*argv, cwd=d), d) for name, (argv, _) in ALL_CASES.items()}


@pytest.mark.parametrize("name", list(ALL_CASES))
def test_one_line_on_stderr_a_non_zero_status_and_no_traceback(results, name):
    r, d = results[name]
    _, needles = ALL_CASES[name]
    lines = r.stderr.splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("scuffle") and ": error: " in line, line
    for needle in needles:
        assert needle in line, (needle, line)
    assert r.stdout == "", r.stdout


def test_a_rejected_scenario_writes_no_trace_and_a_run_time_limit_keeps_the_updates_before_it(results):
    _, d = results["run: face toward nobody"]
    trace = (d / "t.jsonl").read_text().splitlines()
    assert len(trace) == 2 * 1                               # update 0 ran; update 1's command failed
    pool = (d / "p.jsonl").read_text().splitlines()
    n = int(results["run: the pool runs out in the fight rules"][0].stderr.split("update ")[1].split(":")[0])
    assert len(pool) == 2 * n
    assert not (d / "x.jsonl").exists()
