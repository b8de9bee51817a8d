"""The kernels' shared maths: the jit decorators, the PS2 FPU's float32 arithmetic, the deterministic scalar maths.

``jit_kinds(cache)`` gives each kernel module its decorators: ``_helper`` (the named steps
only kernels call, compiled for linking only, anim/engine/jitpipe.py), ``_kernel`` (the entry
points Python calls: no reference counting, the GIL released) and ``_inline``. The
float32 toward-zero add, sub, multiply and divide and the frame test are bit for bit
those of ``anim.maths.f32`` (tests/anim/test_kernels.py pins them on the 0.75 and 0.9 ties,
subnormals and the largest floats): ``_add`` ... for the kernels, ``add`` ... (cached, with
an entry point) for Python. ``acos_s``, ``cos_pi_s``, ``sin_cos_s``, ``sin_cos_deg_s``:
anim.maths.detmath's scalar forms as the kernels link them (the only transcendental code).

The kernels are split by stage (kernels_step, kernels_pose, kernels_flush,
kernels_motion; the rules they share in kernels_rows); anim.engine.kernels lists the entry
points Python calls. numba's on-disk cache is keyed on each function's own file, so a
kernel module pins the sha256 of the modules it links (``LINKED_SHA256``).

Spec: "The cursor" (float policy). Original: 0x001044a0 AnimCursor_Advance (its FPU adds).
"""
from __future__ import annotations

import math
import struct
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]  # (no stubs; numba's own dependency)
from numba import njit, types
from numba.core import config
from numba.extending import intrinsic, register_jitable
from scuffle.anim.maths import detmath as _detmath
from scuffle.anim.engine.jitcache import cache_setting
from scuffle.anim.engine.jitpipe import LinkOnlyCompiler, link_only_supported

# numba's on-disk cache of this module's kernels: True, or False with no writable cache
# folder (they then compile for the process only); a corrupt cache is set aside first.
CACHE = cache_setting(__file__)
# The decorator of the named steps and helpers, which only the kernels call: no CPython
# or C wrapper (numba compiles one per function otherwise, unboxing every argument, for
# a call from Python that never comes: a quarter of the cold compile),
# and no reference counting (_nrt=False: the arrays they take are the kernel's). Never
# call one from Python (it has no entry point there); from an @njit function, as the
# kernels do. Compiled for linking only (anim/engine/jitpipe.py: no machine code of its own,
# so not in numba's on-disk cache either: cache=False; the kernels that link it are).
# Under a numba release anim/engine/jitpipe.py was not checked against, numba's usual way
# (machine code and a cache entry of their own: slower to compile, the same kernels).
LINK_ONLY = link_only_supported()


def jit_kinds(cache: bool):
    """The decorators of a kernel module whose numba cache setting is ``cache``:
    (helper, kernel, inline). The kernels' (which Python calls): without reference
    counting (the caller holds every array for the call) and no C wrapper; they release
    the GIL (nogil: BatchEngine steps and poses chunks of a crowd on threads). The pose's
    named steps are inlined (each a call that LLVM keeps passes the bank and scratch
    tuples field by field)."""
    helper = (njit(cache=False, _nrt=False, no_cpython_wrapper=True,  # type: ignore[call-overload]
                   no_cfunc_wrapper=True, pipeline_class=LinkOnlyCompiler) if LINK_ONLY else
              njit(cache=cache, _nrt=False, no_cpython_wrapper=True,  # type: ignore[call-overload]
                   no_cfunc_wrapper=True))
    kernel = njit(cache=cache, _nrt=False, no_cfunc_wrapper=True, nogil=True)  # type: ignore[call-overload]
    inline = njit(cache=cache, inline="always")
    return helper, kernel, inline


_helper, _kernel, _inline = jit_kinds(CACHE)

__all__ = ["jit_kinds", "LINK_ONLY", "acos_s", "cos_pi_s", "sin_cos_s", "sin_cos_deg_s", "add", "sub", "mul",
           "div", "frame_of"]
# numba's cache is keyed on each function's own file: the sha256 of the kernel modules
# this one links (anim.maths.detmath's scalar forms and the kernels_* modules it imports), so an
# edit there changes this file too (tests/anim/test_kernels.py checks it).
LINKED_SHA256 = "1fefdfce84d730584c7858903f9b07e7731023187abe7a6c17a326b4b1e7333c"
_FLT_MAX = 3.4028234663852886e38
_INT_MAX = 2147483647.0
_F32_ZERO = np.float32(0.0)




# ---------------------------------------------------------------- FPU arithmetic


def _bits_py(x):
    """NUMBA_DISABLE_JIT: a double's bits as an int64."""
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _double_py(u):
    """NUMBA_DISABLE_JIT: the double whose bits are the int64 ``u``."""
    return struct.unpack("<d", struct.pack("<q", u))[0]


def _f32_bits_py(x):
    """NUMBA_DISABLE_JIT: a float32's bits as an int32."""
    return np.float32(x).view(np.int32)


def _bits_f32_py(u):
    """NUMBA_DISABLE_JIT: the float32 whose bits are the int32 ``u``."""
    return np.int32(u).view(np.float32)


@intrinsic
def _to_bits_jit(typingctx, x):
    """A float32's or float64's bits as an int32 or int64 (a register move, no memory: in
    the register, a SIMD lane's value too)."""
    if not isinstance(x, types.Float) or x.bitwidth not in (32, 64):
        return None
    width = x.bitwidth

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(width))
    return (types.int32 if width == 32 else types.int64)(x), codegen


@intrinsic
def _from_bits_jit(typingctx, u):
    """The float32 or float64 whose bits are the int32 or int64 ``u``."""
    if not isinstance(u, types.Integer) or u.bitwidth not in (32, 64):
        return None
    single = u.bitwidth == 32

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType() if single else ir.DoubleType())
    return (types.float32 if single else types.float64)(u), codegen


_DISABLED = getattr(config, "DISABLE_JIT", False)
_bits = _bits_py if _DISABLED else _to_bits_jit             # a double's bits (int64) and back
_double = _double_py if _DISABLED else _from_bits_jit
_f32_bits = _f32_bits_py if _DISABLED else _to_bits_jit     # a float32's bits (int32) and back
_bits_f32 = _bits_f32_py if _DISABLED else _from_bits_jit
# A double whose exponent field lies in [_EXP_LO, _EXP_HI] is within float32's normal
# range (2^-125 <= |r| < 2^128, one binade kept clear of the subnormals so that a step
# down from it stays normal): its float32 toward zero is its bits with the 29 low
# mantissa bits (the ones float32 has not) cleared, one float32 step (2^29 in the
# double's bits, borrowing into the exponent at a power of two) less when it is a
# float32 already and the exact value lies just inside it. No rounding, no branch on
# the data's low bits (which round up about half the time): the same bits as the
# rounding and step back below, which handles the rest (zero, subnormals, overflow,
# inf and NaN).
_EXP_LO = 1023 - 125
_EXP_HI = 1023 + 127
_LOW_BITS = (1 << 29) - 1
_F32_STEP = 1 << 29


@_helper
def _truncate(r, err):
    """The exact value r + err (r a double, err its tail) truncated to float32 (as float64)."""
    u = _bits(r)
    e = (u >> 52) & 0x7FF
    if e >= _EXP_LO and e <= _EXP_HI:
        t = u & ~np.int64(_LOW_BITS)
        if t == u and err != 0.0 and (err < 0.0) != (r < 0.0):
            t -= np.int64(_F32_STEP)
        return _double(t)
    if r != r or r == math.inf or r == -math.inf:
        return r
    if r == 0.0 and err == 0.0:
        return r
    f = np.float32(r)                       # nearest (inf past FLT_MAX)
    fd = np.float64(f)
    if abs(fd) > abs(r):
        f = np.nextafter(f, _F32_ZERO)      # rounded away from zero: one step back
    elif fd == r and err != 0.0 and fd != 0.0 and (err < 0.0) != (fd < 0.0):
        f = np.nextafter(f, _F32_ZERO)      # r is a float32, the exact value just inside it
    return np.float64(f)


@_helper
def _add(a, b):
    """float32 a + b rounded toward zero (float64 in and out, holding float32 values)."""
    r = a + b
    bb = r - a
    err = (a - (r - bb)) + (b - bb)         # TwoSum: a + b == r + err exactly
    return _truncate(r, err)


@_helper
def _sub(a, b):
    """float32 a - b rounded toward zero."""
    return _add(a, -b)


@_helper
def _mul(a, b):
    """float32 a x b rounded toward zero (the double product of two float32s is exact)."""
    return _truncate(a * b, 0.0)


@_helper
def _div(a, b):
    """float32 a / b rounded toward zero (b != 0)."""
    q = a / b
    if q != q or q == math.inf or q == -math.inf:
        return _truncate(q, 0.0)
    r = q * b
    return _truncate(q, (a - r) / b)


@_helper
def _frame_of(t):
    """The cursor frame uint(t x 30 + 0.5) in the FPU's arithmetic, saturating."""
    v = _add(_mul(t, 30.0), 0.5)
    if v > 0.0:
        return np.int64(_INT_MAX if _INT_MAX < v else v)     # min(v, _INT_MAX)
    return np.int64(0)


def _python_of(f):
    """The Python function of an njit dispatcher (itself under NUMBA_DISABLE_JIT=1)."""
    return getattr(f, "py_func", f)


# anim.maths.detmath's scalar forms as the kernels call them: link-only (anim.engine.jitpipe) like the
# helpers, compiled from detmath's own Python functions (register_jitable: numba compiled
# each with machine code of its own in every process; what they call inside stays so).
for _fn in _detmath.JITABLE:       # detmath imports no numba: its scalar forms are made jitable here
    register_jitable(_fn)
acos_s = _helper(_detmath.acos_s)
cos_pi_s = _helper(_detmath.cos_pi_s)
sin_cos_s = _helper(_detmath.sin_cos_s)
sin_cos_deg_s = _helper(_detmath.sin_cos_deg_s)

# The same five for Python (tests, anim.maths.f32's twins): compiled with an entry point and
# cached, when Python calls them; the kernels call the link-only ones above (anim.engine.jitpipe).
add = njit(cache=CACHE)(_python_of(_add))
sub = njit(cache=CACHE)(_python_of(_sub))
mul = njit(cache=CACHE)(_python_of(_mul))
div = njit(cache=CACHE)(_python_of(_div))
frame_of = njit(cache=CACHE)(_python_of(_frame_of))
