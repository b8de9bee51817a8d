"""The handlers a world's callbacks name: ``Callbacks``, the registry a Player calls them through.

The callbacks themselves are data (``Callback(kind, args)``, anim.callbackdata, re-exported
here): see that module for what a callback is and which arguments it may carry.

Spec: "Animation tasks" (the end callback +0x2c, the wrap callback +0x28), "When a clip
ends" (the release, L314). Original: 0x00105570 AnimTask_FlushDeferred (calls +0x2c).
"""
from __future__ import annotations

from typing import Any, Callable

from .callbackdata import Callback, CallbackError, UnknownCallback, callback, check_callback

__all__ = ["Callback", "Callbacks", "CallbackError", "UnknownCallback", "callback", "check_callback"]


class Callbacks:
    """The handlers a world's Callbacks name (kind -> handler(instance, *args)).

    ``register`` adds one (CallbackError for a handler that is not callable, a kind
    that is not a str, or a kind already taken by another handler); ``call`` runs a
    callback (a Callback through its handler, UnknownCallback when none is registered;
    a plain callable as ``fn(instance)``).
    """

    __slots__ = ("_handlers", "_checks")

    def __init__(self) -> None:
        self._handlers: dict[str, Callable] = {}
        self._checks: dict[str, Callable[[tuple], str | None]] = {}

    def register(self, kind: str, handler: Callable, check: Callable[[tuple], str | None] | None = None) -> Callable:
        """Name ``handler`` ``kind``; returns it. Registering the same handler again is a
        no-op. ``check(args)``: why a callback of this kind with ``args`` read from a file
        (a snapshot) must be refused, or None (``check_args``); give one for every kind
        whose handler trusts its arguments."""
        if not isinstance(kind, str) or not kind:
            raise CallbackError(f"Callbacks.register: kind {kind!r}: expected a non-empty str")
        if not callable(handler):
            raise CallbackError(f"Callbacks.register: handler for {kind!r} is not callable")
        if check is not None and not callable(check):
            raise CallbackError(f"Callbacks.register: check for {kind!r} is not callable")
        old = self._handlers.get(kind)
        if old is not None and old != handler:
            raise CallbackError(f"Callbacks.register: {kind!r} already names {old!r}")
        self._handlers[kind] = handler
        if check is not None:
            self._checks[kind] = check
        return handler

    def check_args(self, kind: str, args: tuple) -> str | None:
        """Why a callback of ``kind`` with ``args`` (plain data, from a snapshot file) cannot
        be taken, or None: an unregistered kind, or what the kind's ``check`` says."""
        if kind not in self._handlers:
            return f"callback kind {kind[:80]!r} is not registered in this Game"
        check = self._checks.get(kind)
        return None if check is None else check(args)

    def unregister(self, kind: str) -> None:
        """Forget ``kind`` (nothing if it is not registered)."""
        self._handlers.pop(kind, None)
        self._checks.pop(kind, None)

    def __contains__(self, kind: object) -> bool:
        return kind in self._handlers

    def kinds(self) -> list[str]:
        """The registered kinds, sorted."""
        return sorted(self._handlers)

    def call(self, cb: Any, inst: Any) -> Any:
        """Run ``cb`` for ``inst``: ``handler(inst, *cb.args)`` or ``cb(inst)``; returns what
        it returns (a test's answer: PlayerOptions.queued_default)."""
        if isinstance(cb, Callback):
            handler = self._handlers.get(cb.kind)
            if handler is None:
                raise UnknownCallback(f"callback kind {cb.kind!r}: no handler registered "
                                      f"(known: {', '.join(self.kinds()) or 'none'})")
            return handler(inst, *cb.args)
        return cb(inst)

    @staticmethod
    def is_data(cb: Any) -> bool:
        """Whether ``cb`` is None or a Callback (data), not code."""
        return cb is None or isinstance(cb, Callback)
