"""The ```python code blocks of the README and docs/*.md, for the tests that run them.

A block whose first line is ``# not run: REASON`` is listed but not run (a fragment, or
a loop that waits for a window); a block that defines ``def test_`` is a pytest test and
runs under pytest; every other block runs as a program.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_RUN = "# not run:"
_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Block:
    """One code block: its file (relative to the repository), first code line, code."""

    path: str
    line: int
    code: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def not_run(self) -> str | None:
        """The reason given on a ``# not run:`` first line, else None."""
        first = self.code.lstrip("\n").splitlines()[0] if self.code.strip() else ""
        return first[len(NOT_RUN):].strip() if first.startswith(NOT_RUN) else None

    @property
    def is_pytest(self) -> bool:
        return re.search(r"^def test_", self.code, re.M) is not None


def documents() -> list[Path]:
    """README.md and every docs/*.md, in a fixed order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(path: Path) -> list[Block]:
    """Every ```python block of one Markdown file, in order. Rejected: a fence left open
    (ValueError naming the line)."""
    out: list[Block] = []
    lang, start, body = None, 0, []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if lang is None:
            if m:
                lang, start, body = m.group(1), n + 1, []
        elif line.strip() == "```":
            if lang == "python":
                out.append(Block(_rel(path), start, "\n".join(body) + "\n"))
            lang = None
        else:
            body.append(line)
    if lang is not None:
        raise ValueError(f"{path}: the code fence opened on line {start - 1} is never closed")
    return out


def all_blocks() -> list[Block]:
    return [b for doc in documents() for b in python_blocks(doc)]


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
