"""Callbacks as data: an end, wrap or report callback is a kind and its plain arguments
(a leaf: it imports nothing of scuffle; the handlers' registry is anim.engine.callbacks).

A task's end callback (+0x2c), a loop's or gait's wrap callback (+0x28), a human's
report (0x400000 at the release) and the human test of ``PlayerOptions.queued_default``
(0x00223440, whose answer ``Callbacks.call`` returns) are kept as ``Callback(kind, args)``: a name the world's
``Callbacks`` registry maps to a handler, and arguments that are plain data (None, bool,
int, float, str, bytes and tuples of them). So the whole state of a world is data that
can be copied, compared and saved, with no closure in it; the handlers are code, given
to the world once (``Callbacks.register``, ``Game.callback``), like its systems.

A plain callable is taken too where a callback is; such a world works the same, but its
state holds code (``Callbacks.is_data`` tells).

Spec: "Animation tasks" (the end callback +0x2c, the wrap callback +0x28), "When a clip
ends" (the release, L314). Original: 0x00105570 AnimTask_FlushDeferred (calls +0x2c).
"""
from __future__ import annotations

import math
from enum import IntEnum, IntFlag
from typing import Any, NamedTuple

__all__ = ["Callback", "CallbackAction", "EndWork", "CallbackError", "UnknownCallback", "callback", "check_callback"]

_PLAIN = (type(None), bool, int, float, str, bytes)
# the plain types with nothing more to check (a float must be finite, a tuple is walked)
_SIMPLE = frozenset({type(None), bool, int, str, bytes})
_MAX_DEPTH = 8


class CallbackAction(IntEnum):
    """What a kind's handler does for a Callback of the kind with no arguments, declared
    when it is registered, so that the compiled engine may do it itself instead of
    stopping its flush to call the handler (the same state after). Ours."""

    NONE = 0
    # set again, on the human's held flags, the held bits (HeldFlags) of the unreleased
    # tasks on its stack, and nothing else (the fight rules' keep_held)
    KEEP_HELD = 1


class EndWork(IntFlag):
    """What the compiled flush does for a callback id instead of stopping to call its
    handler (a CallbackTable's ``actions``, one per id; 0: it stops). Ours."""

    STOP = 0
    # the kind's CallbackAction.KEEP_HELD, done on the human's held flags
    KEEP_HELD = 1
    # the id listed, in release order, for the kind's ``note`` (Callbacks.register), which
    # the Player calls with the callback's arguments once the kernel returns, before any
    # other callback runs
    NOTE = 2


class CallbackError(ValueError):
    """A callback that is neither a Callback with plain-data arguments nor a callable,
    or a handler that is not callable (the message names the field)."""


class UnknownCallback(CallbackError):
    """A Callback whose kind no handler is registered for."""


class Callback(NamedTuple):
    """A callback as data: ``kind`` names a handler registered with the world's
    ``Callbacks``; the handler is called as ``handler(instance, *args)``."""

    kind: str
    args: tuple = ()


def _check_plain(value: Any, where: str, depth: int = 0) -> None:
    """``value`` is plain data (None, bool, int, float (finite), str, bytes, tuples of them)."""
    if depth > _MAX_DEPTH:
        raise CallbackError(f"{where}: tuples nested more than {_MAX_DEPTH} deep")
    if isinstance(value, tuple):
        for i, v in enumerate(value):
            _check_plain(v, f"{where}[{i}]", depth + 1)
        return
    if not isinstance(value, _PLAIN):
        raise CallbackError(f"{where}: {type(value).__name__} is not plain data "
                            "(None, bool, int, float, str, bytes or a tuple of them)")
    if isinstance(value, float) and not math.isfinite(value):
        raise CallbackError(f"{where}: {value!r} is not a finite number")


def callback(kind: str, *args: Any) -> Callback:
    """A Callback of ``kind`` with ``args``. Rejected (CallbackError): a kind that is not
    a non-empty str, an argument that is not plain data."""
    return check_callback(Callback(kind, tuple(args)), "callback")


def check_callback(cb: Any, field: str = "callback") -> Any:
    """``cb`` as given if it is None, a callable, or a Callback with a str kind and
    plain-data args (a plain tuple ``(kind, args)`` becomes a Callback). Rejected
    (CallbackError naming ``field``): anything else."""
    if cb is None:
        return None
    if cb.__class__ is Callback:                 # the common one: a str kind, ints and strs as arguments
        kind, args = cb
        if kind.__class__ is str and kind and args.__class__ is tuple:
            for a in args:
                if a.__class__ not in _SIMPLE:
                    break
            else:
                return cb
    if isinstance(cb, tuple) and not isinstance(cb, Callback):
        if len(cb) != 2 or not isinstance(cb[1], tuple):
            raise CallbackError(f"{field}: {cb!r}: expected Callback(kind, args) or a callable")
        cb = Callback(*cb)
    if isinstance(cb, Callback):
        if not isinstance(cb.kind, str) or not cb.kind:
            raise CallbackError(f"{field}.kind: {cb.kind!r}: expected a non-empty str")
        if not isinstance(cb.args, tuple):
            raise CallbackError(f"{field}.args: {type(cb.args).__name__}: expected a tuple")
        _check_plain(cb.args, f"{field}.args")
        return cb
    if callable(cb):
        return cb
    raise CallbackError(f"{field}: {cb!r}: expected Callback(kind, args) or a callable")
