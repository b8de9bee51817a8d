"""numpy's SIMD dispatch targets at AVX2 and above, to switch off with NPY_DISABLE_CPU_FEATURES.

Same bits on every machine: numpy picks a kernel per CPU for many ufuncs, so the suite
runs once more with every target from AVX2 up switched off (.ci/run), and
tests/hardening/test_cpu_features.py compares the bit-defined paths between a process
with them and one without. The names come from numpy itself (``__cpu_dispatch__``):
numpy 2.4 calls them X86_V3, X86_V4, AVX512_ICL, AVX512_SPR, older ones AVX2, FMA3,
AVX512F, AVX512_SKX...; a name numpy does not dispatch on is ignored, so a hard-coded
list could silently switch nothing off.

``python tests/simd.py`` prints the value for the environment variable.
"""
from __future__ import annotations

__all__ = ["avx_targets", "enabled_targets", "disabled_env_value"]

_AT_OR_ABOVE_AVX2 = ("AVX2", "FMA3", "AVX512", "X86_V3", "X86_V4")


def _core():
    try:
        from numpy._core import _multiarray_umath as m          # numpy >= 2
    except ImportError:                                         # pragma: no cover - numpy 1.x
        from numpy.core import _multiarray_umath as m
    return m


def avx_targets() -> list[str]:
    """numpy's dispatch targets from AVX2 up (those this numpy build can dispatch to)."""
    return [t for t in _core().__cpu_dispatch__ if t.startswith(_AT_OR_ABOVE_AVX2)]


def enabled_targets() -> list[str]:
    """The targets of ``avx_targets`` this process may run (the CPU has them, none disabled)."""
    feats = _core().__cpu_features__
    return [t for t in avx_targets() if feats.get(t, False)]


def disabled_env_value() -> str:
    """NPY_DISABLE_CPU_FEATURES's value that switches every AVX2-and-above target off."""
    return " ".join(avx_targets())


if __name__ == "__main__":
    print(disabled_env_value())
