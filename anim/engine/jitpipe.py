"""The kernels' helpers compiled for linking only: no machine code of their own and no
on-disk cache entry (a shorter first step on a fresh install).

What goes in: the ``pipeline_class=`` of the kernel modules' ``@_helper`` functions (the
named steps that only the kernels call, never Python: no CPython or C wrapper). What
comes out: numba's nopython pipeline as always (type inference, lowering, LLVM's
per-function -O3 passes on the helper's own functions), but no module passes on the
helper's library and no machine code: its IR is not handed to the JIT engine. The kernel
that calls a helper links that IR and runs numba's module passes (the cheap pass, then
the full -O3 pipeline, which inlines and optimises the linked helpers) and emits the
whole, as numba does; the kernels are cached on disk whole (``cache=True``), so a
later process loads them without compiling any helper.

Why: numba optimised every helper's library at module level (its callees linked in and
optimised again at each level: a helper called by a helper called by a kernel went
through LLVM's module -O3 three times before the kernel's own), emitted machine code for
it and saved that in its on-disk cache, yet no helper's own code ever ran: every call is
to the copy linked into a kernel. On a cold cache the helpers' emission and cache files
are about a tenth of the CPU a first step compiles, their module passes a few per cent
more. Skipping the helpers' per-function passes as well gains nothing (the kernels then
optimise raw helper IR), nor does skipping the kernels' own; forcing every helper inline
costs half as much again.

What it does not change: numba's global configuration (NUMBA_OPT, the vectorizers, the
shared codegen): an engine author's own ``@njit`` code in the same process compiles as
it would without scuffle; the kernels' own libraries (optimised, emitted and cached as
numba does). The kernels' code differs from numba's usual: LLVM sees each helper once,
in the kernel, and inlines a little differently (step_stacks keeps 9 helpers as calls
instead of 14, pose_stacks 8 instead of 11); the same float operations in the same order
(no fast-math flags, so no reassociation), the same bits (tests/anim/test_reference.py,
the bench's state_checksum) and no slower kernels (the bench's kernel CPU). A helper compiled this way cannot be called from Python
(it has no entry point: ``get_pointer_to_function`` gives 0, as for any function without a
CPython wrapper) nor saved in numba's cache (``cache=False``).

Beside it, ``prefetch``: the kernels' hint that a row is read soon (LLVM's prefetch).
"""
from __future__ import annotations

from llvmlite import ir  # type: ignore[import-untyped]  # (no stubs; numba's own dependency)
from numba import types
from numba.core import cgutils, config
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import LoweringPass, register_pass
from numba.core.typed_passes import NativeLowering
from numba.extending import intrinsic

__all__ = ["LinkOnlyLibrary", "LinkOnlyCompiler", "InlineLinkOnlyLibrary", "InlineLinkOnlyCompiler", "TESTED_NUMBA",
           "link_only_supported", "entry_points_only", "prefetch"]

# The numba releases this module was checked against (it subclasses numba internals:
# JITCodeLibrary's module finalisation, the codegen's set_env, the nopython pipeline's
# NativeLowering); under any other, the kernel modules (anim/engine/kernels_maths.py's jit_kinds) compile their helpers numba's usual way
# (slower to compile, the same code): tests/anim/test_jitpipe.py pins the behaviour.
TESTED_NUMBA = ((0, 68),)
_INTERNALS = ("_optimize_final_module", "_finalize_final_module", "_finalize_dynamic_globals",
              "_verify_declare_only_symbols", "get_pointer_to_function", "serialize_using_object_code")


def link_only_supported(version: str | None = None) -> bool:
    """Whether the helpers may compile link-only under numba ``version`` (default: the
    installed one): a tested release (TESTED_NUMBA, major and minor) whose JITCodeLibrary
    still has the methods this module replaces or calls."""
    if version is None:
        import numba
        version = numba.__version__
    try:
        mm = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        return False
    return mm in TESTED_NUMBA and all(hasattr(JITCodeLibrary, n) for n in _INTERNALS)


class LinkOnlyLibrary(JITCodeLibrary):
    """numba's JITCodeLibrary with its per-function passes only (no module passes) and
    whose module never goes to the JIT engine: no machine code, only the IR the calling
    kernels link (``_get_module_for_linking``) and optimise. Its functions cannot be
    called from Python, and it cannot be serialised for numba's on-disk cache
    (RuntimeError: use cache=False)."""

    def _optimize_final_module(self):
        pass                              # the kernel's module passes optimise the linked helpers, once

    def _finalize_final_module(self):
        # numba's, without adding the module to the JIT engine (no machine code)
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True

    def get_pointer_to_function(self, name):
        self._ensure_finalized()
        return 0                          # nothing callable: the callers link the IR

    @property
    def codegen(self):
        # numba sets the function's environment pointer in the JIT engine through it
        # (BaseContext.get_executable); the module is not in the engine: a no-op
        return _NoEngineCodegen(self._codegen)

    def serialize_using_object_code(self):
        raise RuntimeError(f"{self.name}: a link-only library has no machine code to cache (use cache=False)")


class _NoEngineCodegen:
    """The codegen a LinkOnlyLibrary shows numba: the shared one, but ``set_env`` does
    nothing: the helper's module, where numba's per-function environment variable
    lives, is in no engine, and only a CPython wrapper (which the helpers have none
    of) reads that environment; a kernel loaded from the cache never sets it either."""

    def __init__(self, codegen):
        self._codegen = codegen

    def set_env(self, env_name, env):
        pass

    def __getattr__(self, name):
        return getattr(self._codegen, name)


class InlineLinkOnlyLibrary(LinkOnlyLibrary):
    """A LinkOnlyLibrary whose functions LLVM inlines wherever they are called
    (``alwaysinline``): a small function a vectorised loop calls, typed and lowered once
    and inlined by LLVM into each caller, where numba's own inliner (``inline="always"``)
    would copy and type its IR again at every call site."""

    def add_ir_module(self, ir_module):
        for fn in ir_module.functions:
            if not fn.is_declaration:
                fn.attributes.add("alwaysinline")
        super().add_ir_module(ir_module)


@register_pass(mutates_CFG=False, analysis_only=True)
class LinkOnlyLibraryPass(LoweringPass):
    """Gives the function a LinkOnlyLibrary (``library_class``) before numba's
    NativeLowering (which makes a JITCodeLibrary only when the state holds none)."""

    _name = "scuffle_link_only_library"
    library_class: type = LinkOnlyLibrary

    def __init__(self):
        LoweringPass.__init__(self)

    def run_pass(self, state):
        if state.library is None:
            state.library = self.library_class(state.targetctx.codegen(), state.func_id.func_qualname)
        return False


@register_pass(mutates_CFG=False, analysis_only=True)
class InlineLinkOnlyLibraryPass(LinkOnlyLibraryPass):
    """LinkOnlyLibraryPass with an InlineLinkOnlyLibrary."""

    _name = "scuffle_inline_link_only_library"
    library_class = InlineLinkOnlyLibrary


class LinkOnlyCompiler(CompilerBase):
    """numba's nopython pipeline with LinkOnlyLibraryPass just before the lowering."""

    library_pass: type = LinkOnlyLibraryPass

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        at = next(i for i, (p, _) in enumerate(pm.passes) if p is NativeLowering)
        pm.passes.insert(at, (self.library_pass, "a link-only library (anim.engine.jitpipe)"))
        pm.finalize()
        return [pm]


class InlineLinkOnlyCompiler(LinkOnlyCompiler):
    """LinkOnlyCompiler whose functions LLVM always inlines (InlineLinkOnlyLibrary)."""

    library_pass = InlineLinkOnlyLibraryPass



def entry_points_only(*dispatchers) -> int:
    """Make each of ``dispatchers`` (kernels only Python calls) let go of a loaded
    overload's LLVM module: returns how many it now does so (0 under an untested numba).

    numba loads a kernel from its on-disk cache as machine code plus the kernel's whole
    module, parsed (``_shared_module``), and keeps the latter so that another compiled
    function could link the kernel in: about 5 MB for the six kernels a crowd loads,
    held for the process's life. No compiled function calls these kernels (Python does),
    so once an overload is added its library keeps the machine code only. A compiled
    function that did call one would get numba's RuntimeError "library unfit for
    linking" at its compile. An overload compiled here (not loaded) is unchanged: numba
    makes the module for linking again from the library's own when it saves the cache.
    Under a numba release this module was not checked against (``link_only_supported``)
    nothing is changed."""
    if not link_only_supported():
        return 0
    done = 0
    for disp in dispatchers:
        add = getattr(disp, "add_overload", None)
        if add is None or getattr(add, "_entry_points_only", False):
            continue

        def add_overload(cres, _add=add):
            _add(cres)
            lib = getattr(cres, "library", None)
            if lib is not None and getattr(lib, "_shared_module", None) is not None:
                lib._shared_module = None

        add_overload._entry_points_only = True        # type: ignore[attr-defined]
        disp.add_overload = add_overload
        done += 1
    return done


def _no_prefetch(a, i):
    """NUMBA_DISABLE_JIT: the kernels run as Python, nothing to fetch ahead."""


@intrinsic
def _prefetch_jit(typingctx, a, i):
    """LLVM's prefetch of ``a[i]``'s cache line for reading (no fault, no value: a hint)."""
    if not isinstance(a, types.Array) or a.ndim != 1 or not isinstance(i, types.Integer):
        return None
    sig = types.void(a, i)

    def codegen(context, builder, signature, args):
        aty, ity = signature.args
        arr = context.make_array(aty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer2(context, builder, data=arr.data,
                                        shape=cgutils.unpack_tuple(builder, arr.shape),
                                        strides=cgutils.unpack_tuple(builder, arr.strides), layout=aty.layout,
                                        inds=[context.cast(builder, args[1], ity, types.intp)],
                                        wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        # read (0), keep in every cache level (3), data (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return sig, codegen


# ``prefetch(a, i)`` in a kernel: a hint that ``a[i]`` (a 1-D array) is read soon. A
# crowd's rows lie scattered over tables of tens of thousands of rows; fetched a few
# humans ahead, their misses overlap. It changes no value: the same bits.
prefetch = _no_prefetch if getattr(config, "DISABLE_JIT", False) else _prefetch_jit
