"""Every ```python block of the README and docs/*.md runs, so the
snippets cannot rot. A block whose first line is ``# not run: REASON`` is skipped (and
must give a reason); a block that defines a pytest test runs under pytest
(here in this process with the fixtures it names; tests/docs/test_plugin.py, slow, runs
them with pytest as a user would); every other block runs as a program, in this process, from
an empty folder, and must finish without an error; a line ``print(...)  # -> TEXT``
must print TEXT (the outputs so marked appear in the output in their order; a note in
parentheses after the text is not compared)."""
from __future__ import annotations

import ast
import contextlib
import io
import re

import pytest

from docblocks import NOT_RUN, all_blocks, python_blocks, ROOT

BLOCKS = all_blocks()
PROGRAMS = [b for b in BLOCKS if b.not_run is None and not b.is_pytest]
# (block, test function name) of every pytest block (run as a user would: tests/docs/test_plugin.py)
TESTS = [(b, node.name) for b in BLOCKS if b.not_run is None and b.is_pytest
         for node in ast.parse(b.code).body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def test_the_documents_have_blocks_and_every_skip_gives_a_reason():
    assert {b.path for b in PROGRAMS} >= {"README.md", "docs/embedding.md"}
    assert len([b for b in BLOCKS if b.path == "docs/embedding.md"]) >= 7
    for b in BLOCKS:
        if b.not_run is not None:
            assert len(b.not_run) >= 10, f"{b.id}: '{NOT_RUN}' needs a reason"


def test_a_fence_left_open_is_reported(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("text\n```python\nprint(1)\n", encoding="utf-8")
    with pytest.raises(ValueError):
        python_blocks(doc)


@pytest.mark.parametrize("block", PROGRAMS, ids=[b.id for b in PROGRAMS])
def test_the_block_runs(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    code = compile(block.code, str(ROOT / block.path) + f" (block at line {block.line})", "exec")
    with contextlib.redirect_stdout(out):
        exec(code, {"__name__": "__main__"})
    if "print(" in block.code:
        assert out.getvalue().strip(), f"{block.id} printed nothing"
    lines = out.getvalue().splitlines()
    at = 0
    for want in expected_outputs(block.code):
        while at < len(lines) and lines[at].strip() != want:
            at += 1
        assert at < len(lines), f"{block.id}: expected the line {want!r} (in order) in:\n{out.getvalue()}"
        at += 1


_EXPECT = re.compile(r"^\s*print\(.*#\s*->\s*(.*?)\s*(\(.*\))?\s*$")


def expected_outputs(code: str) -> list[str]:
    """The TEXT of every ``print(...)  # -> TEXT (note)`` line, in order."""
    return [m.group(1) for line in code.splitlines() if (m := _EXPECT.match(line))]


def test_the_expected_outputs_are_read():
    code = 'print(1, 2)   # -> 1 2\nx = 1  # -> not a print\nprint(True)  # -> True (accepted)\n'
    assert expected_outputs(code) == ["1 2", "True"]


@pytest.mark.parametrize("block,name", TESTS, ids=[f"{b.id}::{n}" for b, n in TESTS])
def test_the_test_block_passes(block, name, request):
    space: dict = {"__name__": "doc_test"}
    exec(compile(block.code, str(ROOT / block.path) + f" (block at line {block.line})", "exec"), space)
    fn = space[name]
    args = [request.getfixturevalue(a) for a in fn.__code__.co_varnames[:fn.__code__.co_argcount]]
    fn(*args)
