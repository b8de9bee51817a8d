"""A kernel called through its compiled entry point once numba's dispatcher has typed the
same arguments (the fixed cost of an update for a few fighters).

numba's dispatcher types every argument on every call; the engine's kernels take named
tuples of a hundred columns, which it types through its Python fallback: about 20 µs a
call for ``step_stacks`` and ``pose_stacks``, most of their cost for 2 fighters. The
engine passes the same objects (its tables' column tuples, its buffers) from one update to
the next, so after one call typed by the dispatcher it may call the chosen machine code
(the overload's ``entry_point``) directly while every argument is the very object it was
then, or types as it did (an int for an int, a float for a float, an array of the same
dtype, dimensions, layout, alignment and writability, a tuple of the same class whose items
do: ``_same_type``). Anything else (a table grown, a buffer
replaced, a restore's new arrays, another overload, the kernel replaced by a timer as
``scuffle bench`` does, NUMBA_DISABLE_JIT, SCUFFLE_DEBUG=1) goes through the dispatcher
again, which type-checks it.
"""
from __future__ import annotations

from itertools import compress
from operator import is_ as _is
from operator import is_not as _is_not
from typing import Any

import numpy as np

from scuffle.anim.engine import interpret
from scuffle.anim.engine import kernels as K

__all__ = ["TrustedKernel", "entry_point", "first_call"]

_SCALARS = (int, float, bool)
_TIER = interpret.STATE          # the interpreted tier's state (anim.engine.interpret)


def entry_point(fn: Any, args: tuple) -> Any:
    """The machine code numba's dispatcher ``fn`` chose for ``args``, just called with
    them: its one overload's entry point (it would have compiled another), or with several
    (a test process) the one that types ``args`` (slow, rare). None without overloads
    (NUMBA_DISABLE_JIT) or with none that types them."""
    overloads = getattr(fn, "overloads", None)
    if not overloads:
        return None
    if len(overloads) == 1:
        return next(iter(overloads.values())).entry_point
    cres = overloads.get(tuple(fn.typeof_pyval(a) for a in args))
    return cres.entry_point if cres is not None else None


def first_call(fn: Any, args: tuple, humans: int) -> tuple[Any, Any]:
    """``fn(*args)`` where the caller keeps no call of its own yet (a prepared command's,
    the command buffer's, a batch's): its result and the call to keep for the next ones
    (the entry point numba chose, or ``fn``), or None to keep while a cold start of
    ``humans`` humans runs the kernels as Python (anim.engine.interpret.engage: asked again
    at the next call)."""
    if interpret.engage(humans):
        return interpret.call(fn, *args), None
    out = fn(*args)
    return out, entry_point(fn, args) or fn


def _same_type(a: Any, b: Any) -> bool:
    """Whether ``a`` types as ``b`` did for numba, judged cheaply: the same object; an int
    for an int, a float for a float; an array of the same dtype, dimensions, layout,
    alignment and writability (numba's array type); a tuple of the same class whose items
    each pass. Anything else: False (the dispatcher decides)."""
    if a is b:
        return True
    cls = a.__class__
    if cls is not b.__class__:
        return False
    if cls in _SCALARS:
        return True
    if cls is np.ndarray:
        if a.dtype != b.dtype or a.ndim != b.ndim:
            return False
        fa, fb = a.flags, b.flags
        return (fa.c_contiguous == fb.c_contiguous and fa.f_contiguous == fb.f_contiguous
                and fa.writeable == fb.writeable and fa.aligned == fb.aligned)
    if isinstance(a, tuple):
        if len(a) != len(b):
            return False
        # a new tuple of the very objects (a named tuple made again per call): identity, in C
        return all(map(_is, a, b)) or all(_same_type(x, y) for x, y in zip(a, b))
    return False


class TrustedKernel:
    """Call ``anim.engine.kernels.<name>`` (looked up at each call: a timer may wrap it), through
    its entry point while the arguments are those the dispatcher last typed.
    In: the kernel's name; ``debug`` True always dispatches. Out: the kernel's result."""

    __slots__ = ("name", "debug", "_fn", "_entry", "_args")

    def __init__(self, name: str, debug: bool = False):
        if not hasattr(K, name):
            raise ValueError(f"TrustedKernel: anim.engine.kernels has no kernel {name!r}")
        self.name, self.debug = name, debug
        self._fn: Any = None
        self._entry: Any = None
        self._args: tuple = ()

    def forget(self) -> None:
        """Type the next call through the dispatcher again (and drop the objects held)."""
        self._fn = self._entry = None
        self._args = ()

    def _same(self, args: tuple) -> bool:
        last = self._args
        if len(args) != len(last):
            return False
        # only the arguments that are not the very objects typed last (found in C)
        for a, b in compress(zip(args, last), map(_is_not, args, last)):
            cls = a.__class__
            if cls in _SCALARS and cls is b.__class__:      # a new int or float (the flush's bounds): alike
                continue
            if not _same_type(a, b):
                return False
        return True

    def __call__(self, *args: Any) -> Any:
        fn = getattr(K, self.name)
        if _TIER["on"] and interpret.on():          # a cold start's first steps: the kernel as Python
            self.forget()
            return interpret.call(fn, *args)
        if fn is self._fn:
            last = self._args
            # every argument the very object typed last (the engine's usual call: its cached
            # tuples, buffers, rules and dt): one identity test each, in C
            if len(args) == len(last) and all(map(_is, args, last)):
                return self._entry(*args)
            if self._same(args):
                self._args = args                    # the latest (the older objects are let go)
                return self._entry(*args)
        out = fn(*args)
        entry = None if self.debug else entry_point(fn, args)
        if entry is None:
            self.forget()
        else:
            self._fn, self._args, self._entry = fn, args, entry
        return out
