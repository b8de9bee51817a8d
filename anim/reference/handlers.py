"""The reference's callbacks: its own check that a callback is data, and its own dispatch.

A callback is ``Callback(kind, args)`` (anim.base.callbackdata: the data type and its error
classes, shared as data) or a plain callable. The reference checks one where it is given
(``plain_callback``) and runs it through its own registry (``RefCallbacks``: kind ->
handler(instance, *args)), which has the surface a Game registers its handlers with
(register, unregister, kinds, check_args, ``in``, call).

Spec: "Animation tasks" (the end callback +0x2c, the wrap callback +0x28), "When a clip
ends" (L314: the release calls +0x2c). Original: 0x00105570 AnimTask_FlushDeferred.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from scuffle.anim.base.callbackdata import Callback, CallbackAction, CallbackError, UnknownCallback

__all__ = ["RefCallbacks", "plain_callback"]

_ATOMS = (type(None), bool, int, float, str, bytes)
_DEEPEST = 8


def _plain(v: Any, where: str, depth: int) -> None:
    """``v`` is None, a bool, an int, a finite float, a str, bytes, or a tuple of those."""
    if depth > _DEEPEST:
        raise CallbackError(f"{where}: tuples nested more than {_DEEPEST} deep")
    if isinstance(v, tuple):
        for i, item in enumerate(v):
            _plain(item, f"{where}[{i}]", depth + 1)
    elif not isinstance(v, _ATOMS):
        raise CallbackError(f"{where}: {type(v).__name__} is not plain data "
                            "(None, bool, int, float, str, bytes or a tuple of them)")
    elif isinstance(v, float) and not math.isfinite(v):
        raise CallbackError(f"{where}: {v!r} is not a finite number")


def plain_callback(cb: Any, where: str, code: bool = True) -> Any:
    """``cb`` checked: None; a Callback (a ``(kind, args)`` pair made one) with a non-empty
    str kind and plain-data args; or, with ``code``, a callable. CallbackError (a
    ValueError) naming ``where`` for anything else."""
    if cb is None:
        return None
    if isinstance(cb, tuple):
        if not isinstance(cb, Callback):
            if len(cb) != 2 or not isinstance(cb[1], tuple):
                raise CallbackError(f"{where}: {cb!r}: expected Callback(kind, args) or a callable")
            cb = Callback(cb[0], cb[1])
        if not isinstance(cb.kind, str) or cb.kind == "":
            raise CallbackError(f"{where}.kind: {cb.kind!r}: expected a non-empty str")
        if not isinstance(cb.args, tuple):
            raise CallbackError(f"{where}.args: {type(cb.args).__name__}: expected a tuple")
        _plain(cb.args, f"{where}.args", 0)
        return cb
    if code and callable(cb):
        return cb
    raise CallbackError(f"{where}: {cb!r}: expected Callback(kind, args) or a callable")


class RefCallbacks:
    """The handlers the reference's callbacks name (kind -> handler(instance, *args))."""

    def __init__(self) -> None:
        self.handlers: dict[str, Callable] = {}
        self.checks: dict[str, Callable] = {}

    def register(self, kind: str, handler: Callable, check: Callable | None = None,
                 action: CallbackAction = CallbackAction.NONE, note: Callable | None = None) -> Callable:
        """Name ``handler`` ``kind`` (the same handler again: nothing); returns it.
        ``action`` and ``note``: what the compiled engine may do instead of calling the
        handler; the reference calls every handler. CallbackError: a kind that is not a
        non-empty str, a handler, check or note that is not callable, an action that is not
        a CallbackAction, a kind another handler already has."""
        if not isinstance(kind, str) or kind == "":
            raise CallbackError(f"Callbacks.register: kind {kind!r}: expected a non-empty str")
        if not callable(handler):
            raise CallbackError(f"Callbacks.register: handler for {kind!r} is not callable")
        if check is not None and not callable(check):
            raise CallbackError(f"Callbacks.register: check for {kind!r} is not callable")
        if action.__class__ is not CallbackAction:
            raise CallbackError(f"Callbacks.register: action for {kind!r}: {action!r} is not a CallbackAction")
        if note is not None and not callable(note):
            raise CallbackError(f"Callbacks.register: note for {kind!r} is not callable")
        if kind in self.handlers and self.handlers[kind] != handler:
            raise CallbackError(f"Callbacks.register: {kind!r} already names {self.handlers[kind]!r}")
        self.handlers[kind] = handler
        if check is not None:
            self.checks[kind] = check
        return handler

    def unregister(self, kind: str) -> None:
        """Forget ``kind`` (nothing if it is not registered)."""
        self.handlers.pop(kind, None)
        self.checks.pop(kind, None)

    def __contains__(self, kind: object) -> bool:
        return kind in self.handlers

    def kinds(self) -> list[str]:
        """The registered kinds, sorted."""
        return sorted(self.handlers)

    def check_args(self, kind: str, args: tuple) -> str | None:
        """Why a callback of ``kind`` with ``args`` read from a file cannot be taken, or None."""
        if kind not in self.handlers:
            return f"callback kind {kind[:80]!r} is not registered in this Game"
        check = self.checks.get(kind)
        return None if check is None else check(args)

    def call(self, cb: Any, inst: Any) -> Any:
        """Run ``cb`` for ``inst`` and return its answer: a Callback through its kind's handler
        (UnknownCallback when none is registered), a callable as ``cb(inst)``."""
        if not isinstance(cb, Callback):
            return cb(inst)
        if cb.kind not in self.handlers:
            raise UnknownCallback(f"callback kind {cb.kind!r}: no handler registered "
                                  f"(known: {', '.join(self.kinds()) or 'none'})")
        return self.handlers[cb.kind](inst, *cb.args)

    @staticmethod
    def is_data(cb: Any) -> bool:
        """Whether ``cb`` is None or a Callback (data), not code."""
        return cb is None or isinstance(cb, Callback)
