"""Fuzzed scenario files: only ScenarioError comes out, naming the file, the line and the
field, never a hang; a file that loads runs, and its trace is strict JSON with finite
numbers.

Two valid scenarios (synthetic
clips as hex, a resource file and clip files, every command kind and key; the demo
library with every fight action) are damaged as text (cut short, a line dropped,
doubled or moved, a character replaced, a junk line inserted) or as values (a key
removed or added, a value replaced by another type, a huge or negative number, NaN,
Inf, an unknown name), the values written back as TOML. A file that loads runs for at
most MAX_UPDATES updates (a run-time limit is a ScenarioError too). The default run
tries QUICK_EXAMPLES per property; ``pytest -m fuzz`` tries LONG_EXAMPLES.
"""
from __future__ import annotations

import io
import json
import math
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import event
from hypothesis import strategies as st

from scuffle.anim.data.clip import encode_clip
from scuffle.anim.data.resource import save_resource
from scuffle import ScenarioError, parse_scenario, run_scenario

from .support import A, B, GAIT, IDLE, LONG, fuzz_pair, no_hang, synthetic_set

MAX_UPDATES = 30
SOURCE = "fuzz.toml"


# ---------------------------------------------------------------- the valid scenarios

def _hex_clip(set_name: str, anim_id: int, flags: int | None) -> str:
    d, k = encode_clip(synthetic_set().clip(anim_id))
    out = f'[[sets.{set_name}.clips]]\nid = {anim_id}\ndescriptor = "{d.hex()}"\nkeyframes = "{k.hex()}"\n'
    return out + (f"range = {{ flags = 0x{flags:x}, reach = 1.2, damage = 7, dir = [0.0, 1.0] }}\n"
                  if flags is not None else "")


def synthetic_text() -> str:
    text = "# every command kind on synthetic clips\nupdates = 40\nspeeds = [0.75, 0.8, 1.0, 0.9]\n"
    text += "[options]\nend_zero_overshoot = false\npool_size = 360\n\n"
    text += '[sets.s]\n'
    for anim_id, flags in ((IDLE, 0), (A, 0x800), (B, 0x2000), (LONG, 0x1000)):
        text += _hex_clip("s", anim_id, flags)
    for gid in sorted(set(GAIT)):
        text += _hex_clip("s", gid, 0x1000)
    text += '[[sets.s.clips]]\nid = 5\ndescriptor_file = "five.desc"\nkeyframes_file = "five.keys"\n'
    text += '\n[sets.r]\nresource = "set.res"\n\n'
    text += '[[humans]]\nname = "a"\nset = "s"\nposition = [0.0, 0.0, 0.0]\nheading = 0.0\n\n'
    text += '[[humans]]\nname = "b"\nset = "r"\nposition = [0.5, 1.0, 0.0]\nheading = 180.0\n\n'
    cmds = [
        (0, "a", {"loop": IDLE}), (0, "b", {"loop": IDLE, "fade": 0.2}),
        (2, "a", {"play": [A, B, IDLE], "blend": 0.1, "fade": 0.15, "held": 3, "flags": 0}),
        (4, "b", {"play": [A, IDLE], "paired": "a", "held": 256}),
        (6, "a", {"gait": list(GAIT), "target": 2.0, "flags": 0x2C1}),
        (9, "a", {"target": 3.5}), (12, "b", {"loop": 5, "paired": "a"}),
        (15, "a", {"play": [5, IDLE], "fade": 0.3}),
    ]
    for u, who, keys in cmds:
        text += f'[[commands]]\nupdate = {u}\nhuman = "{who}"\n'
        text += "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items()) + "\n"
    return text


def demo_text() -> str:
    text = "updates = 60\n[sets.demo]\nlibrary = \"demo\"\n\n"
    text += '[[humans]]\nname = "a"\nset = "demo"\n\n'
    text += '[[humans]]\nname = "b"\nset = "demo"\nposition = [0, 1.0, 0]\nheading = 180\n\n'
    cmds = [(0, "a", {"loop": 358}), (1, "a", {"action": "face", "toward": "b"}), (2, "a", {"action": "grab"}),
            (20, "a", {"action": "strike", "move": 51}), (24, "a", {"action": "throw", "move": 149}),
            (26, "a", {"action": "let_go"}), (3, "b", {"action": "move", "direction": [1.0, 0.0], "speed": 3.5}),
            (8, "b", {"action": "move", "speed": 0.0}), (10, "b", {"action": "face", "heading": 45.0}),
            (12, "b", {"action": "strike"})]
    for u, who, keys in cmds:
        text += f'[[commands]]\nupdate = {u}\nhuman = "{who}"\n'
        text += "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items()) + "\n"
    return text


BASES = (synthetic_text(), demo_text())


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """The directory the scenarios' files live in: the resource and the clip pair."""
    d = tmp_path_factory.mktemp("scenario_files")
    s = synthetic_set()
    (d / "set.res").write_bytes(save_resource(s.to_resource()))
    desc, keys = encode_clip(s.clip(B))
    (d / "five.desc").write_bytes(desc)
    (d / "five.keys").write_bytes(keys)
    return d


# ---------------------------------------------------------------- TOML out


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def _is_table(v) -> bool:
    return isinstance(v, dict)


def _is_aot(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def toml_dumps(doc: dict) -> str:
    """A TOML document from parsed data (tables as headers, arrays of tables as [[...]])."""
    out: list[str] = []

    def body(path: list[str], table: dict) -> None:
        for k, v in table.items():
            if not _is_table(v) and not _is_aot(v):
                out.append(f"{_key(k)} = {toml_value(v)}")
        for k, v in table.items():
            if _is_table(v):
                out.append(f"\n[{'.'.join(map(_key, path + [k]))}]")
                body(path + [k], v)
            elif _is_aot(v):
                for item in v:
                    out.append(f"\n[[{'.'.join(map(_key, path + [k]))}]]")
                    body(path + [k], item)

    body([], doc)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- mutations

NASTY_VALUES = st.sampled_from([
    -1, 0, 1, 2, 721, 722, 2 ** 31, 2 ** 63 - 1, -2 ** 63, 10 ** 9,
    float("nan"), float("inf"), float("-inf"), -0.0, 1e-320, 0.5, -1.5, 1e39, 3.5e38, 1e308,
    "", "a", "b", "zed", "demo", "x" * 300, "\u0000", "00ff", "grab", "dance", "set.res", "../nope",
    True, False, [], [1], [float("nan"), 0, 0], [0.0, 0.0], [1e308, -1e308], [[1]], ["a"], {}, {"x": 1},
    [358, 388], [404, 405, 406, 407, 407],
])
JUNK_LINES = ["bogus = 1", "[[commands]]", "updates = -1", "[sets.s]", 'human = "zed"', "x = = 1",
              "fade = nan", "speeds = [1e39, 1, 1, 1]", "[options]", "pool_size = 0", "[[humans]]",
              'name = "a"', "update = 0", "loop = 999", '"quoted key" = 2', "= 3", "[", "'''", "target = inf"]


def _paths(node, path=()):
    """Every (path, value) below the document: keys of tables, indices of lists."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield path + (k,), v
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield path + (i,), v
            yield from _paths(v, path + (i,))


def _parent(doc, path):
    node = doc
    for p in path[:-1]:
        node = node[p]
    return node


@st.composite
def mutated_text(draw) -> str:
    text = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "value", "delete_key", "add_key", "char", "line", "junk", "cut"]))
        event(f"mutation: {kind}")
        lines = text.splitlines()
        if kind in ("value", "delete_key", "add_key"):
            try:
                doc = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                continue
            paths = list(_paths(doc))
            if not paths:
                continue
            path, _ = draw(st.sampled_from(paths))
            parent = _parent(doc, path)
            if kind == "value":
                parent[path[-1]] = draw(NASTY_VALUES)
            elif kind == "delete_key":
                del parent[path[-1]]
            elif isinstance(parent, dict):
                parent[draw(st.sampled_from(["bogus", "fade", "update", "loop", "id", "move", "speed"]))] = \
                    draw(NASTY_VALUES)
            text = toml_dumps(doc)
        elif kind == "char" and text:
            i = draw(st.integers(0, len(text) - 1))
            text = text[:i] + draw(st.sampled_from(list("=[]\"\n#0-x{},\\.9 "))) + text[i + 1:]
        elif kind == "line" and lines:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            how = draw(st.sampled_from(["drop", "double", "move"]))
            line = lines[i]
            if how != "double":
                del lines[i]
            if how != "drop":
                lines.insert(min(j, len(lines)), line)
            text = "\n".join(lines) + "\n"
        elif kind == "junk":
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(JUNK_LINES)))
            text = "\n".join(lines) + "\n"
        elif kind == "cut":
            text = text[:draw(st.integers(0, len(text)))]
    return text


# ---------------------------------------------------------------- the property


def _strict(v):
    raise ValueError(f"{v} in the trace is not JSON")


def check_error(e: ScenarioError, text: str) -> None:
    """One line: FILE:LINE: FIELD: PROBLEM (no line for a file that cannot be read or a
    run-time limit of the world's pool); the line is the key's or its table header's."""
    msg = str(e)
    assert "\n" not in msg and e.field and e.problem and e.source == SOURCE, msg
    lines = text.splitlines()
    if e.line is None:
        assert msg.startswith(f"{SOURCE}: {e.field}: "), msg
        return
    assert msg.startswith(f"{SOURCE}:{e.line}: {e.field}: "), msg
    assert 1 <= e.line <= max(len(lines), 1), (e.line, len(lines))
    key = re.sub(r"\[\d+\]$", "", e.field.split(".")[-1])
    at = lines[e.line - 1] if lines else ""
    if e.field != "toml" and re.search(rf"^\s*\"?{re.escape(key)}\"?\s*=", text, re.M):
        # The key is in the file: the line names it, or is the header of its table (a
        # missing or misplaced key), or is the first line (a top-level key).
        assert key in at or at.lstrip().startswith("[") or e.line == 1, (e.field, e.line, at)


def _property(files: Path, text: str) -> None:
    with no_hang(30):
        try:
            sc = parse_scenario(text, SOURCE, base=files)
        except ScenarioError as e:
            check_error(e, text)
            event(f"rejected: {re.sub(r'[0-9]+', 'N', e.field)}")
            return
        sc.updates = min(sc.updates, MAX_UPDATES)
        sc.commands = [c for c in sc.commands if c.update < sc.updates]
        out = io.StringIO()
        try:
            game = run_scenario(sc, out)
        except ScenarioError as e:
            check_error(e, text)
            event("refused at run time")
        else:
            game.close()
            event("ran")
        for line in out.getvalue().splitlines():
            rec = json.loads(line, parse_constant=_strict)
            assert all(math.isfinite(v) for v in (*rec["pos"], rec["heading"], *rec["vel"])), rec


def _valid(files: Path, text: str) -> None:
    parse_scenario(text, SOURCE, base=files)             # the bases are valid
    _property(files, text)


test_the_base_scenarios_run, test_the_base_scenarios_run_fuzz = fuzz_pair(st.sampled_from(BASES))(_valid)
test_damaged_scenarios_raise_only_scenario_error, test_damaged_scenarios_raise_only_scenario_error_fuzz = \
    fuzz_pair(mutated_text())(_property)


def test_the_toml_writer_round_trips_the_bases():
    for text in BASES:
        doc = tomllib.loads(text)
        assert tomllib.loads(toml_dumps(doc)) == doc
