"""The handlers a world's callbacks name: ``Callbacks``, the registry a Player calls them through.

The callbacks themselves are data (``Callback(kind, args)``, anim.base.callbackdata, re-exported
here): see that module for what a callback is and which arguments it may carry.

Spec: "Animation tasks" (the end callback +0x2c, the wrap callback +0x28), "When a clip
ends" (the release, L314). Original: 0x00105570 AnimTask_FlushDeferred (calls +0x2c).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from scuffle.anim.base.callbackdata import (Callback, CallbackAction, CallbackError, EndWork, UnknownCallback,
                                          callback, check_callback)

__all__ = ["Callback", "CallbackAction", "EndWork", "Callbacks", "CallbackError", "UnknownCallback", "callback", "check_callback",
           "CallbackTable", "NO_CALLBACK"]


# The flush kernel's work for a kind's declared action (EndWork's bits, as the kernel reads them).
_WORK_OF = {CallbackAction.NONE: int(EndWork.STOP), CallbackAction.KEEP_HELD: int(EndWork.KEEP_HELD)}
_NOTE = int(EndWork.NOTE)


class Callbacks:
    """The handlers a world's Callbacks name (kind -> handler(instance, *args)).

    ``register`` adds one (CallbackError for a handler that is not callable, a kind
    that is not a str, or a kind already taken by another handler); ``call`` runs a
    callback (a Callback through its handler, UnknownCallback when none is registered;
    a plain callable as ``fn(instance)``); ``note`` runs a noted callback's ``note``.
    """

    __slots__ = ("_handlers", "_checks", "_actions", "_notes", "version")

    def __init__(self) -> None:
        self._handlers: dict[str, Callable] = {}
        self._checks: dict[str, Callable[[tuple], str | None]] = {}
        self._actions: dict[str, CallbackAction] = {}
        self._notes: dict[str, Callable] = {}
        self.version = 0                 # counted up at each change of a kind's handler, action or note

    def register(self, kind: str, handler: Callable, check: Callable[[tuple], str | None] | None = None,
                 action: CallbackAction = CallbackAction.NONE, note: Callable | None = None) -> Callable:
        """Name ``handler`` ``kind``; returns it. Registering the same handler again changes
        nothing but its ``action`` and ``note``. ``check(args)``: why a callback of this
        kind with ``args`` read from a file (a snapshot) must be refused, or None
        (``check_args``); give one for every kind whose handler trusts its arguments.
        ``action``: what the handler does for a callback of the kind with no arguments
        (CallbackAction), which the compiled engine then does itself. ``note``: declares
        that for a callback with arguments the handler does ``action``, then calls
        ``note(*args)``, which only records them (it reads nothing of the world, commands
        nothing and changes no registration): the compiled flush then does the action
        itself and lists the callback, and the Player calls ``note`` once the kernel
        returns, in release order, before any other callback runs."""
        if not isinstance(kind, str) or not kind:
            raise CallbackError(f"Callbacks.register: kind {kind!r}: expected a non-empty str")
        if not callable(handler):
            raise CallbackError(f"Callbacks.register: handler for {kind!r} is not callable")
        if check is not None and not callable(check):
            raise CallbackError(f"Callbacks.register: check for {kind!r} is not callable")
        if action.__class__ is not CallbackAction:
            raise CallbackError(f"Callbacks.register: action for {kind!r}: {action!r} is not a CallbackAction")
        if note is not None and not callable(note):
            raise CallbackError(f"Callbacks.register: note for {kind!r} is not callable")
        old = self._handlers.get(kind)
        if old is not None and old != handler:
            raise CallbackError(f"Callbacks.register: {kind!r} already names {old!r}")
        if (old is None or self._actions.get(kind, CallbackAction.NONE) is not action
                or self._notes.get(kind) != note):
            self.version += 1
        self._handlers[kind] = handler
        if action is CallbackAction.NONE:
            self._actions.pop(kind, None)
        else:
            self._actions[kind] = action
        if note is None:
            self._notes.pop(kind, None)
        else:
            self._notes[kind] = note
        if check is not None:
            self._checks[kind] = check
        return handler

    def action_of(self, cb: Any) -> int:
        """What the compiled flush may do for ``cb`` instead of calling its handler
        (EndWork): for a Callback with no arguments, its kind's action; with arguments,
        its kind's action and NOTE when the kind has a ``note``; else STOP (0)."""
        if cb.__class__ is not Callback or cb.kind not in self._handlers:
            return 0
        work = _WORK_OF[self._actions.get(cb.kind, CallbackAction.NONE)]
        if not cb.args:
            return work
        return work | _NOTE if cb.kind in self._notes else 0

    def note(self, cb: Callback) -> None:
        """A listed callback's note: ``note(*cb.args)`` of its kind (the flush's
        EndWork.NOTE). UnknownCallback: a kind with no note registered."""
        fn = self._notes.get(cb.kind)
        if fn is None:
            raise UnknownCallback(f"callback kind {cb.kind!r}: no note registered")
        fn(*cb.args)

    def check_args(self, kind: str, args: tuple) -> str | None:
        """Why a callback of ``kind`` with ``args`` (plain data, from a snapshot file) cannot
        be taken, or None: an unregistered kind, or what the kind's ``check`` says."""
        if kind not in self._handlers:
            return f"callback kind {kind[:80]!r} is not registered in this Game"
        check = self._checks.get(kind)
        return None if check is None else check(args)

    def unregister(self, kind: str) -> None:
        """Forget ``kind`` (nothing if it is not registered)."""
        if self._handlers.pop(kind, None) is not None:
            self.version += 1
        self._checks.pop(kind, None)
        self._actions.pop(kind, None)
        self._notes.pop(kind, None)

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


# A row's callback column with no callback in it.
NO_CALLBACK = -1


def _typed(args: tuple) -> tuple:
    """``args`` with each value's type beside it (and a float's exact bits), so two
    argument tuples that ``==`` conflates (1, 1.0 and True; 0.0 and -0.0) never share an id."""
    out: list[tuple[type, Any]] = []
    for a in args:
        c = a.__class__
        if c is tuple:
            out.append((c, _typed(a)))
        elif c is float:
            out.append((c, a.hex()))
        else:
            out.append((c, a))
    return tuple(out)


_ACTIONS_MIN = 16       # the ids a CallbackTable's ``actions`` array holds at least
_KEPT_INDEXES = 16      # the key indexes a CallbackTable keeps of its saved states (a rollback ring's depth and more)


class CallbackTable:
    """The callbacks the rows of a world's tables name: the registry table behind the
    ``on_end`` / ``on_wrap`` task columns and the ``on_report`` human column, which hold
    an id into it (NO_CALLBACK: none).

    Each id is one callback (a ``Callback``: kind and plain arguments; or a callable),
    taken once however many rows name it (``take``: a use counted up), given back when
    the last row naming it lets it go (``drop``: its id goes on a free list, reused next).
    Its state is three lists of plain values (``values``, ``uses``, ``free``): ``save``
    copies them, ``load`` writes a copy back; the key index is made from ``values``, and so
    are the ids' ``actions`` (what the flush kernel may run itself: ``reclassify``).
    In: a callback already checked (anim.engine.callbacks.check_callback). Rejected (ValueError):
    an id that is not taken.
    """

    __slots__ = ("values", "uses", "free", "_ids", "_saved", "_ids_kept", "actions", "classify", "classified")

    def __init__(self) -> None:
        self.values: list = []           # id -> the callback (None: a free id)
        self.uses: list[int] = []        # id -> rows naming it
        self.free: list[int] = []        # ids given back, the next one taken last
        self._ids: dict = {}             # the callback's key -> its id
        # id -> what the compiled engine may run itself (Callbacks.action_of, 0: nothing),
        # kept while ``classify`` is set (``reclassify``); grown as a new array
        self.actions = np.zeros(_ACTIONS_MIN, np.int8)
        self.classify: Callable[[Any], int] | None = None
        self.classified: int | None = None   # the registry's version the actions were made under
        # the state last saved or loaded while the lists still equal it (None: they changed
        # since): a rollback's snapshots and restores between two changes share one copy
        self._saved: tuple | None = None
        # id(a saved ``values`` list) -> (that list, the key index it had, the ids' actions,
        # the classification and registry version they were made under): a restore of a
        # state this table saved takes them back instead of making them again
        self._ids_kept: dict = {}

    @staticmethod
    def key(cb: Any) -> Any:
        """What makes two callbacks one id: a Callback's kind and typed arguments, a
        callable's identity (the table holds it, so the identity stays unique)."""
        if cb.__class__ is Callback:
            args = cb.args
            for a in args:
                if a.__class__ is not str:
                    return (cb.kind, _typed(args))
            return (cb.kind, args)
        return ("code", id(cb))

    def take(self, cb: Any) -> int:
        """The id of ``cb`` (None: NO_CALLBACK), its use counted up."""
        if cb is None:
            return NO_CALLBACK
        k = self.key(cb)
        i = self._ids.get(k)
        self._saved = None
        if i is None:
            if self.free:
                i = self.free.pop()
                self.values[i] = cb
                self.uses[i] = 1
            else:
                i = len(self.values)
                self.values.append(cb)
                self.uses.append(1)
            self._ids[k] = i
            if self.classify is not None:
                self._act(i, self.classify(cb))
        else:
            self.uses[i] += 1
        return i

    def _act(self, i: int, action: int) -> None:
        """Id ``i``'s action set (the array grown to hold it)."""
        acts = self.actions
        if i >= len(acts):
            grown = np.zeros(max(2 * len(acts), i + 1), np.int8)
            grown[:len(acts)] = acts
            acts = self.actions = grown
        acts[i] = action

    def reclassify(self, classify: Callable[[Any], int] | None, version: int | None = None) -> None:
        """Each id's action made again with ``classify`` (Callbacks.action_of; None: every
        one 0 and none kept), noted as made under the registry's ``version``."""
        self.classify, self.classified = classify, version
        acts = np.zeros(max(_ACTIONS_MIN, len(self.values)), np.int8)
        if classify is not None:
            for i, v in enumerate(self.values):
                if v is not None:
                    acts[i] = classify(v)
        self.actions = acts

    def drop(self, i: int) -> None:
        """A row lets id ``i`` go (NO_CALLBACK: nothing); the last use frees the id."""
        if i < 0:
            return
        uses = self.uses
        if i >= len(uses) or uses[i] <= 0:
            raise ValueError(f"CallbackTable: id {i} is not taken")
        self._saved = None
        n = uses[i] - 1
        uses[i] = n
        if not n:
            del self._ids[self.key(self.values[i])]
            self.values[i] = None
            self.free.append(i)
            if i < len(self.actions):
                self.actions[i] = 0

    def get(self, i: int) -> Any:
        """The callback of id ``i``, None for NO_CALLBACK."""
        return None if i < 0 else self.values[i]

    def __len__(self) -> int:
        return len(self.values) - len(self.free)

    def save(self) -> tuple:
        """The table's state: copies of ``values``, ``uses`` and ``free`` (the same tuple
        while no id was taken or dropped since the last save or load: a state's lists are
        never written to)."""
        s = self._saved
        if s is None:
            s = self._saved = (list(self.values), list(self.uses), list(self.free))
            kept = self._ids_kept
            if len(kept) >= _KEPT_INDEXES:
                kept.clear()
            # with the ids' actions as the registry's version gave them (a rollback's restore
            # of this state takes both back instead of making them again)
            kept[id(s[0])] = (s[0], dict(self._ids), self.actions.copy(), self.classify, self.classified)
        return s

    def load(self, state: tuple, trusted: bool = False) -> None:
        """Write a ``save`` back (copied: the state restores again). ``trusted``: a ``save``
        of this table (a Game's own snapshot), not checked. Rejected (ValueError): lists
        that do not agree (another length, a free id with uses, a value twice)."""
        if state is self._saved:                # (the lists equal it: nothing taken or dropped since)
            return
        values, uses, free = state
        if trusted:
            if values != self.values:           # (the same values keep their key index)
                self.values[:] = values
                got = self._ids_kept.get(id(values))
                if got is None or got[0] is not values:
                    got = None
                self._ids = dict(got[1]) if got is not None else \
                    {self.key(v): i for i, v in enumerate(values) if v is not None}
                if self.classify is not None:
                    if got is not None and got[3] == self.classify and got[4] == self.classified:
                        self.actions = got[2].copy()
                    else:
                        self.reclassify(self.classify, self.classified)
            self.uses[:] = uses
            self.free[:] = free
            self._saved = state
            return
        if values == self.values and uses == self.uses and free == self.free:
            return
        if len(values) != len(uses) or any(values[i] is not None or uses[i] for i in free) \
                or len(set(free)) != len(free):
            raise ValueError("CallbackTable.load: values, uses and free ids that do not agree")
        ids: dict[Any, int] = {}
        for i, v in enumerate(values):
            if v is not None:
                k = self.key(v)
                if k in ids:
                    raise ValueError(f"CallbackTable.load: the callback of id {i} is also id {ids[k]}")
                ids[k] = i
        self.values[:] = values
        self.uses[:] = uses
        self.free[:] = free
        self._ids = ids
        self._saved = None                      # (a state not made by save: its lists may be the caller's)
        if self.classify is not None:
            self.reclassify(self.classify, self.classified)
