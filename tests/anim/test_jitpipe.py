"""The link-only helpers (anim/engine/jitpipe.py, for the cold compile): a helper
compiled with LinkOnlyCompiler gets no machine code and no cache entry, a numba function
calling it computes what the plain Python does, and numba's own settings and an
engine author's own ``@njit`` code in the same process are as they were."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core import config
from numba.core.codegen import JITCodeLibrary

from scuffle.anim.engine import kernels as K
from scuffle.anim.engine import kernels_maths as KM, kernels_pose as KP, kernels_step as KS
from scuffle.anim.engine.jitpipe import InlineLinkOnlyCompiler, InlineLinkOnlyLibrary, LinkOnlyCompiler, LinkOnlyLibrary

_link_only = njit(cache=False, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True,
                  pipeline_class=LinkOnlyCompiler)


def _scale(a, b):
    return a * b + 0.1 * b


def _mix(xs, w):
    """Two link-only levels: a helper calling a helper."""
    s = 0.0
    for x in xs:
        s += scale(x, w)
    return s


scale = _link_only(_scale)
mix = _link_only(_mix)


@njit
def user_kernel(xs, w):              # an engine author's own njit code, calling the helpers
    return mix(xs, w) - 1.0


@njit
def user_alone(a):                   # and one that does not
    return a * 3.0


def test_a_link_only_helper_has_no_machine_code_and_its_caller_computes_the_same():
    before = (config.OPT, config.LOOP_VECTORIZE, config.SLP_VECTORIZE)
    xs = np.linspace(-2.0, 3.0, 11)
    w = 0.7
    want = 0.0
    for x in xs.tolist():                # the plain Python, in the same order (float64)
        want += _scale(x, w)
    assert user_kernel(xs, w) == want - 1.0
    for helper in (scale, mix):
        lib = helper.overloads[helper.signatures[0]].library
        assert isinstance(lib, LinkOnlyLibrary)
        assert lib.get_pointer_to_function(lib.name) == 0
        with pytest.raises(RuntimeError, match="cache=False"):
            lib.serialize_using_object_code()
    # the caller is numba's own kind of library, with machine code; numba's settings unchanged
    lib = user_kernel.overloads[user_kernel.signatures[0]].library
    assert type(lib) is JITCodeLibrary and not isinstance(lib, LinkOnlyLibrary)
    assert user_alone(2.0) == 6.0
    assert type(user_alone.overloads[user_alone.signatures[0]].library) is JITCodeLibrary
    assert (config.OPT, config.LOOP_VECTORIZE, config.SLP_VECTORIZE) == before


def test_the_kernels_helpers_are_link_only_and_the_python_twins_are_not():
    """The kernels' helpers and the arithmetic twins they call compile link-only; the
    FPU arithmetic Python calls (K.add...) is an ordinary cached numba function of the
    same Python function, bit for bit the link-only one's result inside a kernel."""
    for helper in (KP._blend, KS._room, KM._add, KM._frame_of, KM.acos_s, KM.sin_cos_s):
        assert helper._compiler.pipeline_class is LinkOnlyCompiler, helper
        assert not helper._cache_hits and type(helper._cache).__name__ == "NullCache", helper
    for name in ("add", "sub", "mul", "div", "frame_of"):
        public, twin = getattr(K, name), getattr(KM, "_" + name)
        assert public._compiler.pipeline_class is not LinkOnlyCompiler
        assert public.py_func is twin.py_func
    assert K.frame_of(np.float64(np.float32(1.0))) == 30


_inline_link_only = njit(cache=False, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True,
                         error_model="numpy", pipeline_class=InlineLinkOnlyCompiler)


def _poly(x):
    return (x * 0.5 - 1.25) * x + 3.0


poly = _inline_link_only(_poly)


@njit(error_model="numpy")
def poly_loop(xs, out):              # a loop calling it, as the pose's lane loops call detmath's polynomials
    for i in range(xs.shape[0]):
        out[i] = poly(xs[i]) / xs[i]


def test_an_inline_link_only_function_is_typed_once_and_inlined_by_llvm_into_its_callers():
    """A function of InlineLinkOnlyCompiler is link-only (no machine code, no cache entry),
    marked ``alwaysinline`` in its IR, and its callers compute what Python does (a
    division by zero in the numpy error model: inf, no exception); the pose's detmath
    polynomials are compiled so, the lanes' small steps by numba's inliner."""
    xs = np.array([0.5, -2.0, 0.0, 7.25])
    out = np.empty(4)
    with np.errstate(divide="ignore"):
        poly_loop(xs, out)
        want = np.array([_poly(x) for x in xs.tolist()]) / xs
    assert out.tobytes() == want.tobytes()
    lib = poly.overloads[poly.signatures[0]].library
    assert isinstance(lib, InlineLinkOnlyLibrary) and lib.get_pointer_to_function(lib.name) == 0
    ir_text = str(poly.inspect_llvm(poly.signatures[0]))
    group = next(line for line in ir_text.splitlines() if line.startswith("define")).split()[-2]    # its "#N"
    assert "alwaysinline" in next(line for line in ir_text.splitlines() if line.startswith(f"attributes {group} "))
    # inlined: the loop calls no function (its caller's machine code has no call of it)
    assert "call" not in "".join(line for line in poly_loop.inspect_asm(poly_loop.signatures[0]).splitlines()
                                 if "_poly" in line)
    assert len(poly.signatures) == 1
    if K.LINK_ONLY:
        for f in (KP._acos_lane, KP._sin_lane, KP._asin_r):
            assert f._compiler.pipeline_class is InlineLinkOnlyCompiler, f
        assert KP._lerp_lane.targetoptions.get("inline") == "always"


def test_link_only_only_under_a_tested_numba():
    """The helpers compile link-only under the numba releases anim/engine/jitpipe.py was checked
    against, and numba's usual way under any other (its internals may differ there)."""
    from scuffle.anim.engine.jitpipe import TESTED_NUMBA, link_only_supported
    tested = ".".join(map(str, TESTED_NUMBA[0]))
    assert link_only_supported(tested + ".1")
    assert not link_only_supported("0.59.1")
    assert not link_only_supported("1.0.0")
    assert not link_only_supported("dev")
    import numba
    assert K.LINK_ONLY == link_only_supported(numba.__version__)


def _thrice(x):
    return 3.0 * x + 1.0


def test_a_kernel_loaded_from_the_cache_keeps_its_machine_code_only():
    """entry_points_only: an overload numba loads from its on-disk cache lets its parsed
    module go (numba keeps it otherwise, for linking into another compiled function) and
    computes the same; the engine's kernels are set up so."""
    from scuffle.anim.engine.jitpipe import entry_points_only, link_only_supported

    if not link_only_supported():
        pytest.skip("an untested numba release: nothing is changed")
    first = njit(cache=True)(_thrice)
    assert first(2.0) == 7.0                           # compiled (or loaded) and saved in the cache
    kept = njit(cache=True)(_thrice)                   # numba's own: loaded with its module
    assert kept(2.0) == 7.0 and sum(kept._cache_hits.values()) == 1
    assert kept.overloads[kept.signatures[0]].library._shared_module is not None
    loaded = njit(cache=True)(_thrice)
    assert entry_points_only(loaded) == 1 and entry_points_only(loaded) == 0     # once per dispatcher
    assert loaded(2.0) == 7.0 and sum(loaded._cache_hits.values()) == 1
    assert loaded.overloads[loaded.signatures[0]].library._shared_module is None
    for kernel in (K.step_stacks, K.pose_stacks, K.pose_plan, K.flush_release, K.flush_anim_ids,
                   K.root_motion_step):
        assert getattr(kernel.add_overload, "_entry_points_only", False), kernel
