"""A kernel called through its compiled entry point once numba's dispatcher has typed the
same arguments (issue 19, item 7: the fixed cost of an update).

numba's dispatcher types every argument on every call; the engine's kernels take named
tuples of a hundred columns, which it types through its Python fallback: about 20 µs a
call for ``step_stacks`` and ``pose_stacks``, most of their cost for 2 fighters. The
engine passes the same objects (its tables' column tuples, its buffers) from one update to
the next, so after one call typed by the dispatcher it may call the chosen machine code
(the overload's ``entry_point``) directly while every argument is the very object it was
then, or a plain int or float where it was one. Anything else (a table grown, a buffer
replaced, a restore's new arrays, another overload, the kernel replaced by a timer as
``scuffle bench`` does, NUMBA_DISABLE_JIT, SCUFFLE_DEBUG=1) goes through the dispatcher
again, which type-checks it.
"""
from __future__ import annotations

from typing import Any

from . import kernels as K

__all__ = ["TrustedKernel"]

_SCALARS = (int, float)


class TrustedKernel:
    """Call ``anim.kernels.<name>`` (looked up at each call: a timer may wrap it), through
    its entry point while the arguments are those the dispatcher last typed.
    In: the kernel's name; ``debug`` True always dispatches. Out: the kernel's result."""

    __slots__ = ("name", "debug", "_fn", "_entry", "_args")

    def __init__(self, name: str, debug: bool = False):
        if not hasattr(K, name):
            raise ValueError(f"TrustedKernel: anim.kernels has no kernel {name!r}")
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
        for a, b in zip(args, last):
            if a is not b and not (a.__class__ in _SCALARS and a.__class__ is b.__class__):
                return False
        return True

    def __call__(self, *args: Any) -> Any:
        fn = getattr(K, self.name)
        if fn is self._fn and self._same(args):
            return self._entry(*args)
        out = fn(*args)
        overloads = getattr(fn, "overloads", None)
        entry = None
        if not self.debug and overloads:
            if len(overloads) == 1:                  # the one the call used (it would have compiled another)
                entry = next(iter(overloads.values())).entry_point
            else:                                    # several (a test process): the arguments' own (slow, rare)
                cres = overloads.get(tuple(fn.typeof_pyval(a) for a in args))
                entry = cres.entry_point if cres is not None else None
        if entry is None:
            self.forget()
        else:
            self._fn, self._args, self._entry = fn, args, entry
        return out
