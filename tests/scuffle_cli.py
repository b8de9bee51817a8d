"""``scuffle ARGS`` run in this process: the same ``main`` as the console script, with
stdout and stderr captured, the working directory and environment set for the call.

About a hundred CLI cases run this way in well under a second each, where a subprocess
costs a Python start-up and the imports every time. The few tests about the process
itself (the console script, ``python -m scuffle``, a closed pipe, a hang) keep their
subprocess.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path

__all__ = ["run_scuffle"]


@contextlib.contextmanager
def _environ(extra: dict | None):
    saved = dict(os.environ)
    os.environ.update({k: str(v) for k, v in (extra or {}).items()})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_scuffle(*args, cwd=None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``scuffle ARGS`` in-process; a CompletedProcess with the exit status and the text
    written to stdout and stderr. An exception escaping ``main`` (a traceback) propagates."""
    from scuffle.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with _environ(env), contextlib.chdir(cwd or Path.cwd()), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:                 # a subcommand's own parser exiting
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(["scuffle", *argv], code, out.getvalue(), err.getvalue())
