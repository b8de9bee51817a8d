"""The kernels run as Python while their machine code compiles: the interpreted tier.

A fresh install has no machine code for the kernels, and numba compiling the ones a first
step calls costs seconds of CPU before a game shows anything. The kernels are plain
Python functions under their ``@njit`` (numba runs them as such under
NUMBA_DISABLE_JIT=1, and writes the same bits: float32 and int64 values where the
compiled code has them, the FPU's arithmetic through the double's bits). ``twin(kernel)``
gives that Python function, bound to a copy of its module's globals in which every
compiled function it may call is its twin too (numba's dispatchers, their closures'
cells and defaults), and the few compiled intrinsics their Python forms
(``PY_FORMS``): calling it compiles nothing. Where numba and numpy would type a value
apart (a count begun at 0 that adds an int8 read: numba's int64, numpy's int8, which
wraps past 127), the kernels write the type out (``np.int64(...)``), so the two agree
(tests/anim/test_interpret.py ties them on every path the engine runs). The twins share nothing with the compiled
kernels but the arrays they are handed and their modules' constants.

While the tier is on (``on()``), the engine's kernel calls go to the twins, and a child
process compiles the machine code into numba's cache in the background
(anim.engine.coldstart.compile_rest); once it has installed them (``settle()``), a thread
loads the kernels run so far from the cache while the twins go on, and then the tier
ends: no update waits for numba. A few humans only (``MAX_HUMANS``): a twin steps and
poses a human in about a millisecond, so a crowd's first step compiles as before
(``why_not`` says when the tier is not taken). ``SCUFFLE_INTERPRET=0`` turns it off;
``force(True)`` turns it on whatever the cache holds (tests, to tie the twins to the
compiled kernels bit for bit).
"""
from __future__ import annotations

import os
import types
from typing import Any, Callable

import numpy as np

__all__ = ["twin", "PY_FORMS", "on", "force", "engage", "leave", "settle", "ENV", "MAX_HUMANS", "STATE", "call",
           "kcall", "MESSAGE", "why_not"]

ENV = "SCUFFLE_INTERPRET"       # "0": never run the kernels as Python on a cold start
MAX_HUMANS = 16                 # the most humans a cold start steps with the twins
# the tier's state, process-wide as numba's cache is: whether it is on, forced (tests),
# decided (at the process's first kernel call), the twins made so far (by id), the kernels
# called as Python with their argument types (by id) and the thread loading them (settle)
STATE: dict[str, Any] = {"on": False, "forced": False, "decided": False, "twins": {}, "sigs": {},
                         "loader": None}
MESSAGE = ("compiling the animation kernels in the background (once per install: numba caches them "
           "for later runs); until they are ready, about 20-60 s, they run as Python, slower")


def _intrinsics() -> dict[int, Any]:
    """The compiled intrinsics' Python forms, by the intrinsic (its id): one form, or by
    the global name a kernel calls it by where the one intrinsic serves two (the bits of
    a double or of a float32): the forms anim.engine.kernels_maths and anim.engine.jitpipe
    pick under NUMBA_DISABLE_JIT=1. A name an intrinsic is defined under, which no
    kernel calls, keeps it (None)."""
    from scuffle.anim.engine import jitpipe, kernels_maths as km

    return {id(jitpipe._prefetch_jit): jitpipe._no_prefetch,
            id(km._to_bits_jit): {"_bits": km._bits_py, "_f32_bits": km._f32_bits_py, "_to_bits_jit": None},
            id(km._from_bits_jit): {"_double": km._double_py, "_bits_f32": km._bits_f32_py, "_from_bits_jit": None}}


PY_FORMS: dict[int, Any] = {}


def _is_dispatcher(v: Any) -> bool:
    return hasattr(v, "py_func") and hasattr(v, "overloads")


def _is_intrinsic(v: Any) -> bool:
    return v.__class__.__name__ == "_Intrinsic"


def _ours(fn: Any) -> bool:
    """A plain function of scuffle's own (its globals may name compiled functions)."""
    return isinstance(fn, types.FunctionType) and (fn.__module__ or "").startswith("scuffle.")


def _twin_value(name: str, v: Any, made: dict) -> Any:
    if _is_dispatcher(v) or _ours(v):
        return _twin_of(v, made)
    if _is_intrinsic(v):
        if not PY_FORMS:
            PY_FORMS.update(_intrinsics())
        form = PY_FORMS.get(id(v))
        if isinstance(form, dict):
            if name not in form:
                raise RuntimeError(f"interpret: the intrinsic named {name!r} has no Python form by that name")
            form = form[name] or v          # (None: the intrinsic's own name, which no kernel calls)
        if form is None:
            raise RuntimeError(f"interpret: no Python form of the intrinsic named {name!r}")
        return form
    return v


def _twin_globals(g: dict, made: dict) -> dict:
    key = id(g)
    got = made.get(key)
    if got is None:
        got = made[key] = dict(g)             # made first: functions that call each other find it
        for k, v in g.items():
            got[k] = _twin_value(k, v, made)
    return got


def _twin_of(fn: Any, made: dict) -> Callable:
    key = id(fn)
    got = made.get(key)
    if got is not None:
        return got
    base = fn.py_func if _is_dispatcher(fn) else fn
    if not isinstance(base, types.FunctionType):
        raise RuntimeError(f"interpret: {fn!r} has no Python function to run")
    cells = None
    if base.__closure__:
        cells = tuple(types.CellType(_twin_value(name, c.cell_contents, made))
                      for name, c in zip(base.__code__.co_freevars, base.__closure__))
    out = types.FunctionType(base.__code__, _twin_globals(base.__globals__, made), base.__name__,
                             base.__defaults__, cells)
    out.__kwdefaults__ = base.__kwdefaults__
    out.__qualname__ = base.__qualname__
    out.__module__ = base.__module__
    out.__doc__ = base.__doc__
    out.__dict__["original"] = fn           # kept alive: its id keys the twin
    made[key] = out
    return out


def twin(kernel: Any) -> Callable:
    """The Python twin of compiled function ``kernel`` (see the module): made once per
    kernel and kept. Rejected: an object that is not a compiled function or one of
    scuffle's own (TypeError), an intrinsic it reaches that has no Python form
    (RuntimeError)."""
    if not (_is_dispatcher(kernel) or _ours(kernel)):
        raise TypeError(f"interpret.twin: {kernel!r} is not a compiled function")
    made = STATE["twins"]
    return _twin_of(kernel, made)


def call(kernel: Any, *args: Any) -> Any:
    """Run ``kernel``'s twin on ``args``, numpy's integer wraps and float warnings silent
    as in the compiled code (a hash's multiplies wrap by design). The argument types of
    a kernel's first call are kept (numba's, ``STATE["sigs"]``): the kernels ``settle``
    loads ahead. A kernel with no twin (``twin`` refuses it) ends the tier, unless forced:
    it runs as numba compiles it, as without the tier."""
    try:
        fn = twin(kernel)
    except (TypeError, RuntimeError):
        if STATE["forced"]:
            raise
        STATE["on"] = False
        return kernel(*args)
    sigs = STATE["sigs"]
    if id(kernel) not in sigs and _is_dispatcher(kernel):
        try:
            sigs[id(kernel)] = (kernel, tuple(kernel.typeof_pyval(a) for a in args))
        except ValueError:                    # a value numba does not type: loaded at its call
            sigs[id(kernel)] = (kernel, None)
    with np.errstate(all="ignore"):
        return fn(*args)


def on() -> bool:
    """Whether the engine's kernel calls go to the twins now: the tier on and, unless
    forced, the background compile not yet ended (``settle``)."""
    if not STATE["on"]:
        return False
    return STATE["forced"] or not settle()


def kcall(kernel: Any, *args: Any) -> Any:
    """``kernel(*args)``, through its twin while the tier is on (``on``): the call of a
    kernel whose caller keeps no entry point of its own (the checksum's, a snapshot
    file's)."""
    if STATE["on"] and on():
        return call(kernel, *args)
    return kernel(*args)


def force(flag: bool) -> None:
    """Run every kernel call as Python (True) whatever the cache holds, or end the tier
    (False). For tests and tools: the twins tied to the compiled kernels."""
    STATE["on"] = STATE["forced"] = bool(flag)
    STATE["decided"] = True


def why_not(humans: int) -> str | None:
    """Why a cold start of ``humans`` humans would not run the kernels as Python now, or
    None when it would: SCUFFLE_INTERPRET is ``0``, more than MAX_HUMANS humans, no child
    may compile (anim.engine.coldstart.aside_allowed: NUMBA_DISABLE_JIT, no writable cache,
    one core), SCUFFLE_COMPILE_REST is ``0``, or the kernels a step calls are loaded or
    cached (coldstart.kernel_ready)."""
    from scuffle.anim.engine import coldstart

    if os.environ.get(ENV, "") == "0":
        return f"{ENV}=0"
    if humans > MAX_HUMANS:
        return f"{humans} humans, more than {MAX_HUMANS}"
    if not coldstart.aside_allowed():
        return "no child process may compile here"
    if os.environ.get(coldstart.REST_ENV, "") == "0":
        return f"{coldstart.REST_ENV}=0"
    if all(coldstart.kernel_ready(name) for name in coldstart.ENGINE_KERNELS):
        return "the kernels are cached"
    return None


def engage(humans: int) -> bool:
    """At a process's first kernel call (the first step's, or a command's before it):
    decide once whether the kernels run as Python while they compile in the background
    (``why_not`` says when not), and start that compile (anim.engine.coldstart
    .compile_rest); logs MESSAGE then (logger ``scuffle``). Returns whether the tier is on."""
    if STATE["decided"]:
        return on()
    STATE["decided"] = True
    from scuffle.anim.engine import coldstart

    if why_not(humans) is not None or not coldstart.compile_rest():
        return False
    STATE["on"] = True
    if not coldstart.ANNOUNCED:
        coldstart.ANNOUNCED.append(True)
        coldstart.LOGGER.warning(MESSAGE)
    return True


def leave() -> None:
    """End the tier now (a crowd grown past MAX_HUMANS): numba loads or compiles each
    kernel at its next call, as without the tier; the background compile goes on."""
    if not STATE["forced"]:
        STATE["on"] = False


def settle() -> bool:
    """Whether the background compile has ended, and the tier with it. Once the child has
    installed the kernels, a thread loads the ones called as Python from numba's cache
    (each for the argument types of its first call: ``call``) while the twins go on, and
    the tier ends when it is done, so no update waits for numba's load. A child that
    failed ends the tier at once (numba compiles each kernel here at its next call, as
    without the tier)."""
    from scuffle.anim.engine import coldstart

    child = coldstart.BACKGROUND[0] if coldstart.BACKGROUND else None
    if child is not None:
        code = child.poll()
        if code is None:
            return False
        if code == 0:
            loader = STATE["loader"]
            if loader is None:
                import threading
                loader = STATE["loader"] = threading.Thread(target=_load, args=(list(STATE["sigs"].values()),),
                                                            name="scuffle-kernel-load", daemon=True)
                loader.start()
            if loader.is_alive():
                return False
    STATE["on"] = False
    return True


def _load(kernels: list) -> None:
    """Load ``kernels`` ((dispatcher, argument types) pairs) from numba's cache, on the
    loading thread (``settle``): what cannot be loaded is left to its next call."""
    for disp, sig in kernels:
        if sig is None:
            continue
        try:
            disp.compile(sig)
        except Exception:                     # noqa: BLE001 (left to its next call, which raises it there)
            pass
