"""SDL's start-up noise kept off the demo's stderr.

SDL writes to the process's stderr (file descriptor 2, not Python's ``sys.stderr``) while
it looks for a video driver: ``error: XDG_RUNTIME_DIR is invalid or not set in the
environment.`` when it tries Wayland without a runtime folder, ALSA's ``ALSA lib ...``
lines when a sound card is missing. None of it is the demo's business (it falls back to
headless by itself and says so in one line), so ``sdl_quiet()`` holds descriptor 2 in a
temporary file around a pygame call and writes back every other line.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from typing import Iterator

__all__ = ["sdl_quiet", "NOISE"]

# The lines SDL and the libraries under it print on a machine without a display or sound.
NOISE = re.compile(r"XDG_RUNTIME_DIR|^ALSA lib |^Hello from the pygame community|^pygame \d")


@contextlib.contextmanager
def sdl_quiet() -> Iterator[None]:
    """Run the block with descriptor 2 held in a temporary file; afterwards write back to
    stderr the lines that are not SDL's known noise (``NOISE``). Without a descriptor 2
    (an embedded interpreter) the block runs as it is."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            text = held.read().decode("utf-8", "replace")
            kept = [ln for ln in text.splitlines() if ln.strip() and not NOISE.search(ln)]
            if kept:
                print("\n".join(kept), file=sys.stderr, flush=True)
