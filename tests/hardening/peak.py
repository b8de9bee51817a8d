"""Run ``scuffle ARGS`` in this process and print its peak RSS (KiB) as the last stderr line.

The peak is VmHWM of /proc/self/status (this process's own memory since its exec;
getrusage's ru_maxrss would carry the parent's peak over the exec on Linux).

Used by the budget tests (tests/hardening/test_budgets.py) in a subprocess:
``python tests/hardening/peak.py run big.toml`` -> the command's own output, then
``PEAK_KB n``. Nothing here allocates.
"""
from __future__ import annotations

import sys

from scuffle.cli import main

if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
    finally:
        with open("/proc/self/status", encoding="ascii") as f:
            peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
        print(f"PEAK_KB {peak}", file=sys.stderr)
    sys.exit(status)
