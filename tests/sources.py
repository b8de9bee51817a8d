"""The project's source files parsed once per test process: the layer, purity and docs
tests walk the same few hundred trees, and parsing and walking them is most of their time.

``nodes(path)`` is every node of the file's tree (``ast.walk``'s order), kept until the
file changes. The trees are shared: a test must not change them."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

__all__ = ["tree", "nodes"]


@functools.lru_cache(maxsize=None)
def _parsed(path: str, mtime_ns: int, size: int) -> tuple[ast.Module, tuple[ast.AST, ...]]:
    t = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    return t, tuple(ast.walk(t))


def _key(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path), st.st_mtime_ns, st.st_size


def tree(path: Path) -> ast.Module:
    """The file's tree (parsed once while the file is unchanged)."""
    return _parsed(*_key(Path(path)))[0]


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the file's tree, in ``ast.walk``'s order."""
    return _parsed(*_key(Path(path)))[1]
