"""Files: no output clobbers an input or another output, no output
follows a symbolic link, a failed run leaves the old file whole, a scenario reads only
files below its own folder (or a folder the user allows: ``--data DIR``,
``SCUFFLE_DATA``), and no error quotes a file's bytes.

Probes run ``scuffle`` in this process (tests/scuffle_cli.run_scuffle): every refusal is
one line on stderr, status 2, naming the file, and leaves every file as it was.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from scuffle.anim.data.resource import save_resource
from scuffle.game.runtime.files import OutputError, OutputFile, check_outputs, output_path
from scuffle.game.runtime.scenario import ScenarioError, load_scenario, run_scenario

from scuffle_cli import run_scuffle

from .support import IDLE, no_hang, synthetic_set

DEMO = os.environ | {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}

SCENARIO = """updates = 4
[sets.r]
resource = "{res}"
[[humans]]
name = "a"
set = "r"
[[commands]]
update = 0
human = "a"
loop = {idle}
"""


@pytest.fixture
def place(tmp_path) -> Path:
    """A scenario folder ``game/`` (s.toml reading set.res), a folder beside it
    (``other/`` with a resource and a secret) and an old trace with content."""
    game, other = tmp_path / "game", tmp_path / "other"
    game.mkdir()
    other.mkdir()
    res = save_resource(synthetic_set().to_resource())
    (game / "set.res").write_bytes(res)
    (other / "set.res").write_bytes(res)
    (other / "secret.txt").write_text("hunter2-SECRET-hunter2\n" * 4)
    (game / "s.toml").write_text(SCENARIO.format(res="set.res", idle=IDLE))
    (game / "old.jsonl").write_text('{"old": true}\n')
    return tmp_path


def _files(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (links as their target text), to see nothing changed."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p)] = b"->" + os.readlink(p).encode()
        elif p.is_file():
            out[str(p)] = p.read_bytes()
    return out


def _refused(r, *needles) -> str:
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.mark.parametrize("trace", ["s.toml", "./s.toml", "sub/../s.toml", "{game}/s.toml", "hard.toml",
                                   "set.res", "inner/../set.res"])
def test_the_trace_never_overwrites_an_input_of_the_run(place, trace):
    """--trace naming the scenario or the resource it reads, by any path (relative,
    absolute, through ``..``, a hard link): refused before anything runs."""
    game = place / "game"
    (game / "sub").mkdir()
    (game / "inner").mkdir()
    os.link(game / "s.toml", game / "hard.toml")
    before = _files(place)
    r = run_scuffle("run", "s.toml", "--trace", trace.format(game=game), cwd=game)
    _refused(r, "cannot write trace", "this run reads")
    assert _files(place) == before


@pytest.mark.parametrize("target", ["s.toml", "../other/secret.txt", "old.jsonl", "nowhere.jsonl"])
def test_no_output_follows_a_symbolic_link(place, target):
    """--trace (run) or --record / --trace (demo) that is a symbolic link, to an input,
    to another file, or dangling: refused, the link and its target untouched."""
    game = place / "game"
    (game / "link.jsonl").symlink_to(target)
    before = _files(place)
    r = run_scuffle("run", "s.toml", "--trace", "link.jsonl", cwd=game)
    _refused(r, "link.jsonl", "symbolic link")
    for flag in ("--record", "--trace"):
        r = run_scuffle("demo", "--headless", "--seconds", "0", "--out", "out", flag, "link.jsonl", cwd=game, env=DEMO)
        _refused(r, "link.jsonl", "symbolic link")
    assert {k: v for k, v in _files(place).items() if "/out/" not in k} == before


@pytest.mark.parametrize("args", [
    ["--record", "x.toml", "--trace", "x.toml"],
    ["--record", "x.toml", "--trace", "./sub/../x.toml"],
    ["--trace", "out/summary.json"],
    ["--record", "out/contact_sheet.png"],
    ["--gif", "t.jsonl", "--trace", "t.jsonl"],
    ["--trace", "old.jsonl", "--record", "hard.jsonl"],
])
def test_two_outputs_never_name_one_file(place, args):
    """The demo's outputs (--record, --trace, --gif, OUT/summary.json,
    OUT/contact_sheet.png) by one name or two: refused before the run; the old file whole."""
    game = place / "game"
    (game / "sub").mkdir()
    os.link(game / "old.jsonl", game / "hard.jsonl")
    before = _files(place)
    r = run_scuffle("demo", "--headless", "--seconds", "1", "--out", "out", *args, cwd=game, env=DEMO)
    _refused(r, "give each output its own file")
    assert _files(place) == before


def test_a_failed_run_leaves_the_old_trace_whole(place):
    """A run that fails after its trace was opened (an update that raises; a scenario
    refused at load) keeps the old file byte for byte and leaves no temporary file; a
    run that succeeds replaces it whole. A run stopped by a limit of the original keeps
    its documented partial trace (docs/scenarios.md)."""
    game = place / "game"
    old = (game / "old.jsonl").read_bytes()
    sc = load_scenario(game / "s.toml")

    def boom(g):
        if g.update == 3:
            raise RuntimeError("the host's callback")

    with pytest.raises(RuntimeError):
        with OutputFile(game / "old.jsonl", "trace") as out:
            run_scenario(sc, out.fp, on_update=boom).close()
    assert (game / "old.jsonl").read_bytes() == old
    (game / "bad.toml").write_text(SCENARIO.format(res="set.res", idle=IDLE) + "[[commands]]\nupdate = 1\n"
                                   'human = "a"\nloop = 777\n')
    _refused(run_scuffle("run", "bad.toml", "--trace", "old.jsonl", cwd=game), "bad.toml")
    assert (game / "old.jsonl").read_bytes() == old
    r = run_scuffle("run", "s.toml", "--trace", "old.jsonl", cwd=game)
    assert r.returncode == 0, r.stderr
    assert len((game / "old.jsonl").read_text().splitlines()) == 4
    assert sorted(p.name for p in game.iterdir()) == ["bad.toml", "old.jsonl", "s.toml", "set.res"]


def test_csv2trace_never_writes_over_its_csv_and_writes_whole(place):
    """csv2trace OUT naming its own IN.csv (by another path too): refused, the CSV whole;
    /dev/full: one line naming it."""
    game = place / "game"
    (game / "e.csv").write_text("update,anim,time\n0,358,0.0\n1,358,0.033333335\n")
    before = _files(place)
    for out in ("e.csv", "./sub/../e.csv", str(game / "e.csv")):
        (game / "sub").mkdir(exist_ok=True)
        _refused(run_scuffle("csv2trace", "e.csv", out, cwd=game), "cannot write trace", "this run reads")
    assert {k: v for k, v in _files(place).items()} == before
    if os.path.exists("/dev/full"):
        _refused(run_scuffle("csv2trace", "e.csv", "/dev/full", cwd=game), "'/dev/full'")
    assert run_scuffle("csv2trace", "e.csv", "e.jsonl", cwd=game).returncode == 0
    assert len((game / "e.jsonl").read_text().splitlines()) == 2


def test_a_full_device_is_one_line_naming_the_file(place):
    """--trace /dev/full (run, demo) and --record /dev/full (demo): one line naming it."""
    game = place / "game"
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    _refused(run_scuffle("run", "s.toml", "--trace", "/dev/full", cwd=game), "'/dev/full'", "No space left")
    for flag in ("--record", "--trace"):
        r = run_scuffle("demo", "--headless", "--seconds", "0.2", "--out", "out", flag, "/dev/full",
                        cwd=game, env=DEMO)
        _refused(r, "'/dev/full'", "No space left")
    for device in ("/dev/null", "/dev/stdout"):       # a device (or a link to one) is written in place
        r = run_scuffle("run", "s.toml", "--trace", device, cwd=game)
        assert r.returncode == 0, r.stderr
    os.mkfifo(game / "pipe")
    with no_hang(30):                                   # a FIFO nobody reads: refused, never blocks
        _refused(run_scuffle("run", "s.toml", "--trace", "pipe", cwd=game), "'pipe'", "a FIFO with no reader")


@pytest.mark.parametrize("name", ["/etc/passwd", "/proc/self/environ", "../other/secret.txt",
                                  "../../other/secret.txt", "peek.res", "deep/../../other/secret.txt",
                                  "{other}/set.res"])
@pytest.mark.parametrize("key", ["resource", "descriptor_file"])
def test_a_scenario_reads_only_below_its_own_folder(place, name, key):
    """A file a scenario names outside its folder (absolute, through ``..``, through a
    symbolic link in the folder): refused before it is opened, naming the file and the
    way to allow it, never quoting a byte of it."""
    game, other = place / "game", place / "other"
    (game / "peek.res").symlink_to(other / "secret.txt")
    name = name.format(other=other)
    if key == "resource":
        text = SCENARIO.format(res=name, idle=IDLE)
    else:
        text = SCENARIO.format(res="set.res", idle=IDLE) + \
            f'[[sets.r.clips]]\nid = 2\ndescriptor_file = "{name}"\nkeyframes = ""\n'
    (game / "x.toml").write_text(text)
    line = _refused(run_scuffle("run", "x.toml", cwd=game), key, "outside the scenario's folder", "--data DIR",
                    "SCUFFLE_DATA")
    assert "SECRET" not in line and "root:" not in line and "0x" not in line
    with pytest.raises(ScenarioError, match="outside"):
        load_scenario(game / "x.toml")


def test_the_user_allows_another_folder_with_data_or_scuffle_data(place):
    """--data DIR (repeatable) and SCUFFLE_DATA (os.pathsep-separated) let a scenario read
    below that folder, nowhere else; the API's ``data=`` the same."""
    game, other = place / "game", place / "other"
    (game / "x.toml").write_text(SCENARIO.format(res=f"{other}/set.res", idle=IDLE))
    (game / "y.toml").write_text(SCENARIO.format(res="../other/set.res", idle=IDLE))
    for toml in ("x.toml", "y.toml"):
        _refused(run_scuffle("run", toml, cwd=game), "outside")
        assert run_scuffle("run", toml, "--data", "../other", cwd=game).returncode == 0
        assert run_scuffle("run", toml, "--data", "/nowhere", "--data", str(other), cwd=game).returncode == 0
        r = run_scuffle("run", toml, cwd=game, env={"SCUFFLE_DATA": f"/nowhere{os.pathsep}{other}"})
        assert r.returncode == 0, r.stderr
        _refused(run_scuffle("run", toml, "--data", str(game), cwd=game), "outside")
    assert load_scenario(game / "y.toml", data=[other]).files
    (game / "z.toml").write_text(SCENARIO.format(res="../other/secret.txt", idle=IDLE))
    line = _refused(run_scuffle("run", "z.toml", "--data", str(place / "nope"), cwd=game), "outside")
    assert "SECRET" not in line


def test_the_helpers_refuse_and_publish_whole(tmp_path):
    """check_outputs, OutputFile and output_path on their own: the same file by two
    names is refused; a file is published only whole, with no temporary left."""
    a = tmp_path / "a.txt"
    a.write_text("old")
    with pytest.raises(OutputError, match="this run reads"):
        check_outputs({"trace": tmp_path / "." / "a.txt"}, {"scenario": a})
    with pytest.raises(OutputError, match="its own file"):
        check_outputs({"trace": a, "record": str(a)})
    with pytest.raises(OutputError, match="a directory"):
        OutputFile(tmp_path, "trace")
    with pytest.raises(OutputError, match="cannot write trace"):
        OutputFile(tmp_path / "no" / "t.jsonl", "trace")
    with OutputFile(a, "trace") as out:
        out.write("new")
        assert a.read_text() == "old"                      # not yet: written beside it
    assert a.read_text() == "new" and os.listdir(tmp_path) == ["a.txt"]
    with pytest.raises(KeyError):
        with output_path(tmp_path / "p.png", "picture") as tmp:
            Path(tmp).write_bytes(b"half")
            raise KeyError("the writer failed")
    assert os.listdir(tmp_path) == ["a.txt"]


@pytest.mark.parametrize("command", [["clip", "secret"], ["clip", "secret", "--json"], ["view", "secret", "--headless"]])
def test_an_error_on_a_file_that_is_not_a_resource_quotes_none_of_it(tmp_path, command):
    """Naming any file (here a password-file look-alike) gets a one-line error that quotes
    none of its bytes: not as text, nor as the chunk type or size words they would be read
    as: no error ever prints a file's contents."""
    data = b"root:x:0:0:root:/root:/bin/bash\nsvc:x:1:1::/:/sbin/nologin\n"
    (tmp_path / "secret").write_bytes(data)
    r = run_scuffle(*command, cwd=tmp_path, env={"SDL_VIDEODRIVER": "dummy"})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, 16, 4)]
    quoted = [data[:4].decode(), data[4:8].decode()] + [str(w) for w in words] + [f"{w:x}" for w in words]
    assert not any(q in r.stderr for q in quoted), r.stderr
