"""The house shows its rooms: no import circles between scuffle's modules, and
the layers point one way: anim below components below systems below game, the demo on
top; game's runtime below its fighters, and neither imports the cli or the tools."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sources import nodes

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("anim", "components", "systems", "game", "demo", "scuffle")


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] != "scuffle":
        parts.insert(0, "scuffle")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    """module -> the scuffle modules it imports (anywhere in its body, TYPE_CHECKING included)."""
    files = {_module_of(p): p for f in FOLDERS for p in (ROOT / f).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        deps = set()
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in nodes(path):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for n in names:
                while n and n not in files:
                    n = n.rpartition(".")[0]
                if n and n != mod and n.startswith("scuffle"):
                    deps.add(n)
        graph[mod] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package_edges(graph, depth):
    edges = set()
    for a, deps in graph.items():
        for b in deps:
            pa, pb = ".".join(a.split(".")[:depth]), ".".join(b.split(".")[:depth])
            if pa != pb:
                edges.add((pa, pb))
    return edges


def test_the_checker_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles_between_modules():
    graph = _graph()
    assert "scuffle.anim.playback.tasks" in graph and "scuffle.game.runtime.world" in graph
    assert _cycles(graph) == []


def test_the_layers_point_one_way():
    rank = {"scuffle.anim": 0, "scuffle.components": 1, "scuffle.systems": 2, "scuffle.game": 3,
            "scuffle.demo": 4}
    graph = _graph()
    bad = [(a, b) for a, b in _package_edges(graph, 2)
           if a in rank and b in rank and rank[a] < rank[b]]
    assert bad == []
    inner = {"scuffle.game.runtime": 0, "scuffle.game.fighters": 1, "scuffle.game.tools": 2, "scuffle.game.cli": 2}
    bad = [(a, b) for a, b in _package_edges(graph, 3)
           if a in inner and b in inner and inner[a] < inner[b]]
    assert bad == []


FACE = {"scuffle", "scuffle.cli", "scuffle.net", "scuffle.testing", "scuffle.__main__"}


def _upward_mentions(path: Path, above: tuple[str, ...]) -> list[str]:
    """The package's face imported, or a module of ``above`` named whole in a string (what
    importlib.import_module would load), in one file."""
    bad = []
    for node in nodes(path):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name in FACE]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module in FACE:
            bad.append(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and any(node.value == a or node.value.startswith(a + ".") for a in above) \
                and node.value.replace(".", "").replace("_", "").isalnum():
            bad.append(repr(node.value))
    return bad


def test_the_checker_finds_an_upward_mention(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('from scuffle import __version__\nimport importlib\nimportlib.import_module("scuffle.demo.x")\n'
                 '"""only ``scuffle.demo`` draws"""\n')
    assert _upward_mentions(f, ("scuffle.demo",)) == ["scuffle", "'scuffle.demo.x'"]


def test_no_layer_imports_the_face_or_names_the_demo():
    """The layers below the face neither import it (the version is game.runtime.version)
    nor load the demo by name: the face's command line hands the demo's commands in."""
    bad = {}
    for folder in ("anim", "components", "systems", "game"):
        for path in (ROOT / folder).rglob("*.py"):
            found = _upward_mentions(path, ("scuffle.demo", "scuffle.cli"))
            if found:
                bad[str(path.relative_to(ROOT))] = found
    assert bad == {}


# anim/'s floors, from the ground up; each floor's package docstring says what it holds and
# what it may import. The reference stands apart from them all but the ground floor.
ANIM_FLOORS = ("base", "maths", "data", "engine", "playback")
APART = {"reference": ("base", "maths", "data")}


def _anim_floor(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["scuffle", "anim"] else None


def test_the_checker_finds_an_arrow_back_up():
    graph = {"scuffle.anim.base.x": {"scuffle.anim.engine.y"}, "scuffle.anim.engine.y": {"scuffle.anim.base.x"}}
    assert _floor_breaches(graph) == ["scuffle.anim.base.x -> scuffle.anim.engine.y"]


def _floor_breaches(graph) -> list[str]:
    rank = {f: i for i, f in enumerate(ANIM_FLOORS)}
    bad = []
    for mod, deps in sorted(graph.items()):
        f = _anim_floor(mod)
        if f is None:
            continue
        for dep in sorted(deps):
            g = _anim_floor(dep)
            if g is None or g == f:
                continue
            ok = g in APART[f] if f in APART else (g in rank and rank[g] <= rank[f])
            if not ok:
                bad.append(f"{mod} -> {dep}")
    return bad


def test_anim_shows_its_floors_with_no_arrow_back_up():
    graph = _graph()
    anim = ROOT / "anim"
    assert sorted(p.name for p in anim.glob("*.py")) == ["__init__.py"], "every anim module sits in a floor"
    floors = sorted(p.name for p in anim.iterdir() if (p / "__init__.py").is_file())
    assert floors == sorted(ANIM_FLOORS + tuple(APART))
    assert _floor_breaches(graph) == []


@pytest.mark.parametrize("floor", ANIM_FLOORS + tuple(APART))
def test_each_floor_says_what_it_holds_and_may_import(floor):
    init = ROOT / "anim" / floor / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree) or ""
    assert "May import" in doc and "Holds" in doc, floor
    held = sorted(p.stem for p in init.parent.glob("*.py") if p.stem != "__init__")
    missing = [m for m in held if m not in doc]
    assert missing == [], f"anim/{floor}/__init__.py does not name {missing}"
    below = ANIM_FLOORS[: ANIM_FLOORS.index(floor)] if floor in ANIM_FLOORS else APART[floor]
    assert all(b in doc for b in below), floor
