"""The house shows its rooms (issue 11): no import circles between scuffle's modules, and
the layers point one way: anim below components below systems below game, the demo on
top; game's runtime below its fighters, and neither imports the cli or the tools."""
from __future__ import annotations

import ast
from pathlib import Path

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
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    assert "scuffle.anim.tasks" in graph and "scuffle.game.runtime.world" in graph
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
