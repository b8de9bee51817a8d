"""docs/architecture.md's "How to add a task type" stays true: every source file that names
a task type (by its TaskType name, a constant made from it, or its number compared with a
task's type) is one of the documented places, or one of the documented files that name
particular types for rules of their own; the places are at most six.

The paths come from the doc itself (its two lists), so a module moved is one edit there."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from sources import nodes, tree

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SOURCES = ("anim", "components", "systems", "game", "demo", "scuffle")
SECTION = "## How to add a task type"
MAX_PLACES = 6


def _types() -> dict[str, int]:
    from scuffle.anim.playback.tasks import TaskType
    return {t.name: int(t) for t in TaskType}


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def _doc_lists() -> tuple[list[list[str]], list[str]]:
    """The places (each a row of the table: its paths) and the files that name particular
    types (the bullet list after "Files that name particular types")."""
    sec = _section()
    places = []
    for line in sec.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|[^|]*\|([^|]*)\|", line)
        if m:
            places.append(re.findall(r"`([^`]+)`", m.group(2)))
    tail = sec[sec.index("Files that name particular types"):]
    named = [m for line in tail.splitlines() if line.startswith("- ")
             for m in re.findall(r"`([^`]+)`", line.split(": ", 1)[0])]
    return places, named


PREPARED = "A type that prepared commands may make too"


def _prepared_paths() -> list[str]:
    """The files the section names for a type that prepared commands make too (its
    paragraph "A type that prepared commands may make too ...": its step, template, rows
    and compiled writer), beyond the places."""
    sec = _section()
    para = sec[sec.index(PREPARED):].split("\n\n", 1)[0]
    return [q for q in re.findall(r"`([^`]+)`", para) if q.endswith(".py") and "/" in q]


def _module_path(importer: Path, node: ast.ImportFrom) -> Path | None:
    """The source file an ImportFrom reads (relative or scuffle.*), or None."""
    if node.level:
        base = importer.parent
        for _ in range(node.level - 1):
            base = base.parent
        parts = (node.module or "").split(".") if node.module else []
    elif node.module and node.module.startswith("scuffle."):
        base = ROOT
        parts = node.module.split(".")[1:]
    else:
        return None
    p = base.joinpath(*parts)
    return p.with_suffix(".py") if p.with_suffix(".py").exists() else (p / "__init__.py" if p.is_dir() else None)


_TYPE_WORDS = {"tt", "ttype", "task_type", "t_type"}


def _number_of(node: ast.AST) -> int | None:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _is_type_expr(node: ast.AST) -> bool:
    """A task's type: ``tt``, ``t_type[r]``, ``task.type`` (not a pygame event's)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id in _TYPE_WORDS
    return isinstance(node, ast.Attribute) and node.attr == "type" and not (
        isinstance(node.value, ast.Name) and node.value.id in ("event", "e", "ev"))


@functools.lru_cache(maxsize=1)
def names_by_file() -> dict[Path, set[str]]:
    """source file -> the task types it names (found once per test process: read only)."""
    types = _types()
    by_number = {v: k for k, v in types.items()}
    files = sorted(p for f in SOURCES for p in (ROOT / f).rglob("*.py"))
    trees = {p: tree(p) for p in files}
    out: dict[Path, set[str]] = {p: set() for p in files}
    consts: dict[tuple[Path, str], str] = {}        # (file, constant) -> the type it stands for
    for p, t in trees.items():
        for node in nodes(p):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "TaskType" and node.attr in types:
                out[p].add(node.attr)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "TaskType" \
                    and node.args and _number_of(node.args[0]) in by_number:
                out[p].add(by_number[_number_of(node.args[0])])
            elif isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_is_type_expr(s) for s in sides):
                    for s in sides:
                        elts = s.elts if isinstance(s, (ast.Tuple, ast.Set, ast.List)) else [s]
                        for e in elts:
                            if _number_of(e) in by_number:
                                out[p].add(by_number[_number_of(e)])
        for node in t.body:                          # module constants made from one type
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                named = {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)
                         and isinstance(n.value, ast.Name) and n.value.id == "TaskType" and n.attr in types}
                if len(named) == 1:
                    consts[(p, node.targets[0].id)] = named.pop()
    for p in trees:                                  # and the files that import such a constant
        for node in nodes(p):
            if isinstance(node, ast.ImportFrom):
                src = _module_path(p, node)
                for a in node.names:
                    t = consts.get((src, a.name)) if src is not None else None
                    if t is not None:
                        out[p].add(t)
    return {p: s for p, s in out.items() if s}


def _covers(paths: list[str], p: Path) -> bool:
    rel = p.relative_to(ROOT).as_posix()
    return any(rel == q or (q.endswith("/") and rel.startswith(q)) for q in paths)


def test_the_places_are_at_most_six_and_exist():
    places, named = _doc_lists()
    assert 1 <= len(places) <= MAX_PLACES, places
    for path in [q for row in places for q in row] + named:
        assert (ROOT / path).exists(), f"docs/architecture.md names {path}, which is not there"


def test_every_file_naming_a_task_type_is_documented():
    """Every source file that names a task type is a place or in the list of files that
    name particular types; in the engine (anim/), a type no rule outside its own knows
    (MIX, PICK, DIRECTION: the road a new type takes) is named in the places alone, and in
    the prepared commands' files the section names for such a type."""
    places, named = _doc_lists()
    place_paths = [q for row in places for q in row]
    found = names_by_file()
    missing = sorted(f"{p.relative_to(ROOT).as_posix()} ({', '.join(sorted(t))})" for p, t in found.items()
                     if not _covers(place_paths + named, p))
    assert not missing, "files naming a task type that docs/architecture.md does not list:\n" + "\n".join(missing)
    for t in ("MIX", "PICK", "DIRECTION"):
        outside = sorted(p.relative_to(ROOT).as_posix() for p, ts in found.items()
                         if t in ts and _covers(["anim/"], p) and not _covers(place_paths + _prepared_paths(), p))
        assert not outside, f"{t} is named outside the places: {outside}"


def test_no_documented_file_is_stale():
    """Each file of the list of files naming particular types still names one."""
    _, named = _doc_lists()
    found = names_by_file()
    for path in named:
        hits = [p for p in found if _covers([path], p)]
        assert hits, f"docs/architecture.md lists {path} as naming a task type; it names none"


def test_the_detector_sees_each_way_of_naming_a_type():
    """The scan itself: TaskType.X, a constant made from it and imported, a number
    compared with a task's type (so the tests above cannot pass by seeing nothing)."""
    found = {p.relative_to(ROOT).as_posix(): t for p, t in names_by_file().items()}
    assert "MIX" in found["anim/playback/tasks.py"]                      # TaskType.MIX
    assert "MIX" in found["anim/engine/kernels_step.py"]               # _MIX, imported from kernels_rows
    tree = ast.parse("if t.type == 12 or tt in (10, 11):\n    pass\n")
    cmp = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    assert all(any(_is_type_expr(s) for s in [c.left, *c.comparators]) for c in cmp)
