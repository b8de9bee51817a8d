"""``scuffle warm [--check]``: compile every animation kernel into numba's on-disk cache now
(``scuffle.warm``), once per install, so that no later run compiles; ``--check`` compiles
nothing and says whether every kernel is cached (exit 1 when one is not)."""
from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true",
                   help="compile nothing: say whether every kernel is cached (exit 1 when one is not)")


def run(args: argparse.Namespace) -> int:
    """Compile every animation kernel into numba's on-disk cache now (scuffle.warm), with a
    progress line, then one line: compiled or loaded, how long, and where the cache is."""
    import time

    from scuffle.anim.engine import coldstart
    from scuffle.anim.playback.warmup import warm

    if args.check:
        missing = [f"{m}.{n}" for m, n in coldstart.ALL_KERNELS if not coldstart.kernel_cached(n, m)]
        if missing:
            print(f"not cached: {', '.join(missing)} (run 'scuffle warm')")
            return 1
        print(f"every kernel cached in {coldstart.cache_folder()}")
        return 0
    t0 = time.perf_counter()
    cold = warm(progress=lambda msg: print(f"scuffle: {msg}", file=sys.stderr, flush=True))
    took = time.perf_counter() - t0
    where = coldstart.cache_folder()
    if where is None:
        print(f"kernels compiled for this process only in {took:.1f} s (numba has no writable cache folder: "
              "set NUMBA_CACHE_DIR)")
    elif cold:
        print(f"kernels compiled in {took:.1f} s and cached in {where}")
    else:
        print(f"kernels already cached in {where} (loaded in {took:.2f} s)")
    return 0
