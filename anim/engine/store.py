"""Growable structure-of-arrays tables: the numeric state of cursors, fades and gait blends.

Every cursor, fade and gait blend keeps its changing numbers (time, frame, elapsed,
value...) in one row of a ``Table`` owned by the world's Player, so a whole crowd can be
advanced with a few vectorised calls (anim.playback.batch) while the task objects keep the
logic. A table doubles its arrays when full; rows are reused through a free list.
Never keep a reference to a column across an ``alloc`` (it may have been replaced).
"""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from scuffle.anim.engine.callbacks import NO_CALLBACK, CallbackTable
from scuffle.anim.base.errors import StaleHandle
from scuffle.anim.base.limits import BudgetError
from scuffle.anim.engine.rules import NO_ROW, near_free_row
from scuffle.anim.engine.writefirst import write_first

__all__ = ["block_arrays", "Table", "cursor_table", "PROTO_END", "PROTO_EVENTS", "PROTO_FRAMES", "PROTO_EVF0",
           "PROTO_DUR32", "PROTO_LIMIT32", "fade_table", "gait_table", "task_table", "HumanTable", "near_hints", "NO_EVENT", "NO_ROW", "ROW_LINK", "MAX_ROWS", "FRAME_COLUMNS",
           "Stores", "column", "task_column", "TableCorrupt", "check_rows", "StaleHandle",
           "left_world", "DIRECTIONS", "LayoutSignal", "block_layout", "TableArena", "ARENA_BYTES", "HUMAN_ROWS"]

# The "next event frame" of a cursor with no event left.
NO_EVENT = np.iinfo(np.int32).max
# A row link to nothing (no next task, no incoming task, no cursor): anim.engine.rules.NO_ROW.
# A column linking to another row (a task's cursors, fade / gait row, next and incoming
# task): int32, half the bytes of an int64 in the largest tables, so no table that rows
# link into grows past MAX_ROWS rows (Table.reserve / _grow refuse it).
ROW_LINK = np.int32
MAX_ROWS = int(np.iinfo(np.int32).max)
# The arrays a Table keeps beside its columns: ``live``, each row's generation (int32,
# counted up when the row is freed and wrapping from MAX_ROWS to 0, so it never goes
# below 0; a handle compares it for equality only) and the free list (rows: ROW_LINK).
FRAME_COLUMNS = {"live": np.bool_, "gen": ROW_LINK, "free_rows": ROW_LINK}
# Table.settle resets up to this many rows one by one, more with one write per column.
_ROW_BY_ROW = 6                 # Table.settle: up to this many rows one by one (24 columns: ~1 µs a row)
# Table.load checks up to this many cached handles one by one, more by their rows' columns at once.
_FEW_VIEWS = 256
# A direction task's clips: one bank index per direction (the task table's ``dir_banks``).
DIRECTIONS = 8
# The rows a world's human table (and the Game's body and combat tables) start with: a
# fight's few fighters, grown by doubling for a crowd. Small, because a snapshot copies
# every row of every table, in use or not (a rollback copies them twice per update).
HUMAN_ROWS = 8


def _as_item(arr, value):
    """A column's default as the Python value its fast view takes (a memoryview writes a
    bool into a bool column, a float into a float one, an int into an integer one)."""
    kind = arr.dtype.kind if isinstance(arr, np.ndarray) else ""
    if kind == "b":
        return bool(value)
    if kind == "f":
        return float(value)
    if kind in "iu" and kind:
        return int(value)
    return value


def _stale(obj, store, row) -> None:
    """Raise StaleHandle for ``obj`` (whose row ``row`` of ``store`` went back)."""
    raise StaleHandle(f"{type(obj).__name__}: its row {row} went back to its table (the task it belonged to "
                      "ended); keep the task from the stack, not an old handle")


class column:
    """A property that reads and writes one column of the owner's table row.

    The owner (a handle) has ``store`` (a Table), ``row`` and ``gen`` (the row's
    generation when it was taken): reading or writing a row that went back since raises
    StaleHandle. ``cast`` turns the numpy scalar into a Python value (float, int, bool,
    or an IntFlag).
    """

    def __init__(self, name: str, cast=float, doc: str = ""):
        self.name, self.cast, self.__doc__ = name, cast, doc
        self.view = "m_" + name                 # the column's fast view (store._fast_view): reads

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        st, r = obj.store, obj.row
        if st.m_gen[r] != obj.gen:
            _stale(obj, st, r)
        return self.cast(getattr(st, self.view)[r])

    def __set__(self, obj, value) -> None:
        st, r = obj.store, obj.row
        if st.m_gen[r] != obj.gen:
            _stale(obj, st, r)
        getattr(st, self.name)[r] = value       # numpy's conversion (and errors) for a user's value


class task_column(column):
    """A ``column`` of the task table: the owner keeps it in ``tstore`` / ``trow`` /
    ``tgen`` (a fade or a gait blend also owns a row of its own table in ``store`` /
    ``row`` / ``gen``)."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        st, r = obj.tstore, obj.trow
        if st.m_gen[r] != obj.tgen:
            _stale(obj, st, r)
        return self.cast(getattr(st, self.view)[r])

    def __set__(self, obj, value) -> None:
        st, r = obj.tstore, obj.trow
        if st.m_gen[r] != obj.tgen:
            _stale(obj, st, r)
        getattr(st, self.name)[r] = value


def left_world(owner: str, field: str, row: int, table: str) -> StaleHandle:
    """The StaleHandle of ``owner.field`` (a HumanRecord's, a CharacterInstance's, a
    Body's) whose row ``row`` of the ``table`` table went back: its human left the world."""
    return StaleHandle(f"{owner}.{field}: its row {row} went back to the {table} table (its human left the "
                       "world: removed, or forgotten by its Player); this handle is stale")


_ALIGN = 64            # each array of a table's block starts on a 64-byte boundary


def _layout(columns: dict[str, DTypeLike], cap: int) -> tuple[dict[str, tuple], int]:
    """Where each array of a table of ``cap`` rows lies in its block: name -> (byte
    offset, base dtype, shape), and the block's size. ``n_free`` comes first (one int64),
    then each column (a (dtype, (k,)) column is (cap, k)), each aligned. Kept by the
    columns and capacity (a restore asks at every load; the caller never changes it)."""
    try:
        key = (tuple(columns.items()), cap)
        got = _LAYOUTS.get(key)
    except TypeError:                                  # a dtype given as something unhashable
        return _layout_of(columns, cap)
    if got is None:
        if len(_LAYOUTS) > 512:
            _LAYOUTS.clear()
        got = _LAYOUTS[key] = _layout_of(columns, cap)
    return got


_LAYOUTS: dict = {}


def _layout_of(columns: dict[str, DTypeLike], cap: int) -> tuple[dict[str, tuple], int]:
    """``_layout``, computed."""
    out: dict[str, tuple] = {"n_free": (0, np.dtype(np.int64), (1,))}
    off = _ALIGN
    for name, dt in columns.items():
        d = np.dtype(dt)
        shape = (cap,) + d.shape
        out[name] = (off, d.base, shape)
        size = cap * d.itemsize
        off += -(-size // _ALIGN) * _ALIGN
    return out, off


# Where a table's arrays lie in its block, for a reader that lays a saved block out again
# (game.runtime.snapfile): the same function the tables use.
block_layout = _layout


# The arrays of a Table besides its columns that get a fast view (Table.__setattr__).
_TABLE_ARRAYS = ("live", "gen", "free_rows", "n_free")

# The tables' "layout changed" signal: whenever an array of a table is replaced (a table
# grew or was given a block, a column was assigned, a table was unpickled; BatchEngine
# counts its clip index too), the table's ``layout`` and its world's signal (its Stores':
# LayoutSignal) take a new stamp. What an engine built from its world's arrays (the
# kernels' named tuples, the rows' check, the prepared commands' views) is made again when
# its world's signal moved, instead of comparing the arrays at every call; another world's
# tables growing leaves it alone. The stamps come from one count, never given twice in a
# process, so a reading kept from one world never matches another's. Read inside anim/
# only: the layers above keep their caches by the arrays they view.
_STAMPS = itertools.count(1)


class LayoutSignal:
    """One world's "layout changed" signal (see above): ``now`` is the stamp of the last
    replacement of an array of any table that reports to it (equal to an earlier reading
    while none was replaced since). A table reports to its own signal until a Stores
    makes it one of its world's (``join``)."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = next(_STAMPS)

    def move(self) -> int:
        """A new stamp: what was built from the world's arrays is made again."""
        now = self.now = next(_STAMPS)
        return now

    def join(self, table) -> None:
        """Make ``table`` report to this signal (its old signal moves: a cache keyed by it
        no longer covers the table), and move this one."""
        old = table.__dict__.get("signal")
        if old is not None and old is not self:
            old.move()
        object.__setattr__(table, "signal", self)
        object.__setattr__(table, "layout", self.move())


def _moved(table) -> None:
    """A new layout stamp for ``table`` and its world's signal (an array of it was replaced)."""
    stamp = next(_STAMPS)
    sig = table.__dict__.get("signal")
    if sig is None:                 # (a table being made: its own signal from its first array on)
        sig = LayoutSignal()
        object.__setattr__(table, "signal", sig)
    sig.now = stamp
    object.__setattr__(table, "layout", stamp)


def block_arrays(columns: dict[str, DTypeLike], cap: int, block: np.ndarray) -> dict[str, np.ndarray]:
    """Each array of a table of ``cap`` rows as a view into ``block`` (bytes laid out by
    _layout for those columns): name -> array, ``n_free`` and the free list included."""
    out = {}
    for name, (off, dt, shape) in _layout(columns, cap)[0].items():
        out[name] = block[off:off + math.prod(shape) * dt.itemsize].view(dt).reshape(shape)
    return out


def _fast_view(arr):
    """A view of a table's 1-d array for the Python paths' one-row reads and writes: a
    memoryview of the same memory (a read gives a Python int, float or bool, the same value
    numpy's scalar converts to, at a third of the cost; a write stores what numpy would for
    the numbers the engine writes), or the array itself when it is not a plain 1-d
    contiguous array of numbers (a corrupt table: the checks of check_rows name it).
    Rejected writes differ from numpy's only in the error's type (the callers write their
    own numbers, never a user's unchecked one)."""
    if isinstance(arr, np.ndarray) and arr.ndim == 1 and arr.flags.c_contiguous and arr.dtype.kind in "biuf" \
            and arr.dtype.isnative:
        return memoryview(arr)
    return arr


class Table:
    """Named numpy columns with a row free list, each row with a generation.

    In: {column: dtype}. ``alloc()`` returns a free row (zeroed unless told not to),
    ``free(row)`` gives it back and counts its generation up, so a handle (an object that
    keeps a row and the generation it got) knows when its row is gone (``check``).
    The free list is a numpy stack (``free_rows[:n_free[0]]``, the next row on top) so
    that a kernel can take and give rows too; a take with a hint takes the free row
    nearest it from the middle of the list (``take_near``; ``free_at``, the list's index,
    a cache beside the block; ``near``, the hint a constructor sets). Rejected: freeing a row that is not in use
    (ValueError). ``ids``: the columns that hold ids of ``calls`` (a CallbackTable shared
    by the world's tables: the callbacks as data), let go when their row is freed.
    ``views`` (the world's task table only): row -> the task object that is its handle, a
    cache (a handle is made on read where it holds none: anim.playback.tasks.task_at); ``clips``
    (the world's cursor table only): bank index -> its Clip. ``layout``: the stamp of the
    last replacement of this table's arrays; ``signal``: the LayoutSignal it reports to
    (its world's, once a Stores holds it).
    """

    views: Any = None               # the world's task table: row -> its task object (a list)
    # the world's task table: task class -> handles the flush kept when their rows went back
    # and nothing but ``views`` held them (no one can see them again), which the Player's
    # constructors take instead of a new object (anim.playback.tasks.new_handle); not state (never
    # saved, pickled or copied)
    spare: dict
    clips: Any = None               # the world's cursor table: bank index -> Clip (a list)
    world: Any = None               # the world's task table: its Stores (the other tables)
    # the world's tables: the Player's command buffer (anim.playback.cmdbuffer), applied before
    # a row is taken or given back from Python (the rows keep the order of the calls)
    commands: Any = None
    all_events = False          # the cursor table: type 8 events fire too (PlaceEvents.FIRED)
    layout = 0                  # the layout stamp when this table's arrays were last replaced

    def __init__(self, columns: dict[str, DTypeLike], capacity: int = 64, ids: tuple[str, ...] = (),
                 defaults: dict[str, Any] | None = None, calls: CallbackTable | None = None):
        self._columns = dict(columns)
        self.spare = {}
        # the columns holding ids of ``calls`` (the callbacks, as data: a kind and plain
        # arguments each), let go when their row is freed
        self.ids = tuple(ids)
        self.calls = calls if calls is not None else CallbackTable()
        # a free row's value of each column (0 unless named): a row is reset to them when it
        # is freed (the flush's kernel resets the rows it gives back itself: anim.engine.kernels_flush;
        # rows given back otherwise wait in ``unsettled`` for ``settle``)
        self._defaults = {name: (defaults or {}).get(name, 0) for name in self._columns}
        self._resets = defaults is not None
        self.unsettled: list[int] = []      # rows given back, not yet reset (inside a flush only)
        # every array of the table lives in one block of memory (``block``), so a snapshot
        # of the table is one copy (anim.engine.snapshot)
        self._all = {**self._columns, **FRAME_COLUMNS}
        self._place(np.zeros(_layout(self._all, 0)[1], np.uint8), 0)
        self._grow(max(1, capacity))

    def __setattr__(self, name: str, value) -> None:
        """Set an attribute; a column (or ``live``, ``gen``, ``free_rows``, ``n_free``) also
        gets its fast view ``m_<name>`` (_fast_view), made again whenever the array is replaced."""
        object.__setattr__(self, name, value)
        d = self.__dict__
        cols = d.get("_columns")
        if cols is not None and (name in cols or name in _TABLE_ARRAYS):
            object.__setattr__(self, "m_" + name, _fast_view(value))
            d.pop("row_views", None)
            _moved(self)

    # A row writer's fast views of several arrays at once (one tuple, one writer per table:
    # anim.playback.cursor.cursor_row keeps the cursor table's twelve here, anim.playback.tasks.write_task_row
    # the task table's free list, live, gen, type and rate), dropped whenever an array is replaced.
    row_views: tuple | None = None

    def __getstate__(self) -> dict:
        """The table's state without the fast views (a memoryview is not copied or pickled)
        and without the spare handles (Table.spare)."""
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("m_") and k != "row_views"}
        state["spare"] = {cls: [] for cls in self.spare}      # which classes are kept, not the handles
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("spare", {})
        for name in (*state["_columns"], *_TABLE_ARRAYS):
            object.__setattr__(self, "m_" + name, _fast_view(state[name]))
        self._free_index(self.capacity)
        _moved(self)

    def __getattr__(self, name: str) -> np.ndarray:
        """A column (set as an attribute by ``_grow``); AttributeError for any other name.

        Only reached when normal lookup fails, so it declares the columns' type to a type
        checker without slowing the column reads down."""
        raise AttributeError(f"{type(self).__name__} has no column {name!r}")

    def _grow(self, cap: int) -> None:
        if cap > MAX_ROWS:
            raise BudgetError("table rows", cap, MAX_ROWS, "rows")
        old = self.capacity
        n = int(self.n_free[0])
        prev = {name: getattr(self, name) for name in (*self._columns, "live", "gen")}
        prev_free = self.free_rows
        self._place(np.zeros(_layout(self._all, cap)[1], np.uint8), cap)
        for name, a in prev.items():
            getattr(self, name)[:old] = a[:old]
        for name, value in self._defaults.items():      # the new rows at the defaults
            if value:
                getattr(self, name)[old:] = value
        # the new rows go under the free ones, lowest on top of them: taken after those
        free = self.free_rows
        k = cap - old
        free[:k] = np.arange(cap - 1, old - 1, -1)
        free[k:k + n] = prev_free[:n]
        self.n_free[0] = n + k

    def _free_index(self, cap: int) -> None:
        """The free list's index (``free_at``: row -> its place in the list) for ``cap``
        rows: made new (all -1) when it has another size. A cache, not state: its entries
        are checked at each take (``take_near``) and no snapshot saves it."""
        at = self.__dict__.get("free_at")
        if at is None or len(at) != cap:
            object.__setattr__(self, "free_at", np.full(cap, -1, ROW_LINK))
        object.__setattr__(self, "m_free_at", _fast_view(self.free_at))

    def _place(self, block: np.ndarray, cap: int) -> None:
        """Make ``block`` (bytes laid out by _layout for ``cap`` rows) the table's memory:
        every column, ``live``, ``gen``, ``free_rows`` and ``n_free`` a view into it; the
        free list's index (``free_at``) new at another capacity (its entries are checked
        at each use: ``take_near``)."""
        self._free_index(cap)
        self.block = block
        self.capacity = cap
        for name, arr in block_arrays(self._all, cap, block).items():
            setattr(self, name, arr)

    def reserve(self, n: int) -> bool:
        """At least ``n`` free rows (grown by doubling if not); True when the table grew."""
        write_first(self)                              # a count of rows (anim.engine.writefirst)
        if int(self.n_free[0]) >= n:
            return False
        cap = self.capacity
        while cap - self.in_use < n:
            cap *= 2
        self._grow(cap)
        return True

    def alloc(self, zero: bool = True) -> int:
        """A free row at the columns' defaults (0 unless named), unless the caller writes
        every column itself (``zero=False``)."""
        row = self.alloc_default()
        if zero:
            for name, value in self._defaults.items():
                getattr(self, name)[row] = value
        return row

    def alloc_default(self, hint: int | None = None) -> int:
        """A free row with every column at its default (a table made with ``defaults``: the
        caller writes only the columns it sets): the free row nearest ``hint`` (None: the
        table's ``near``, which a constructor sets for its human: near_hints; -1: the top
        of the free list; ``take_near``). Rows the flush gave back and has not reset yet (a
        callback taking a row in the middle of it) are reset first (``settle``); buffered
        commands are written first (``commands``)."""
        write_first(self)                              # a row taken or given back (anim.engine.writefirst)
        if self.unsettled:
            self.settle()
        if not self.m_n_free[0]:
            self._grow(self.capacity * 2)
        return self.take_near(self.near if hint is None else hint)

    # the hint of a take that names none (alloc_default): set by a constructor for the
    # rows of its human while it takes them (near_hints), -1 otherwise
    near = -1

    def take_near(self, hint: int) -> int:
        """Take a free row (the list holds one): the free row nearest ``hint``
        (rules.near_free_row), taken out of the middle of the free list (the list's top
        moved into its place, the row left where the top was: the slots just past the list
        hold the rows taken, in order), or the list's top when none is near (or ``hint`` < 0). The
        list's index (``free_at``: row -> its place) is a cache: checked at each use and
        made again from the list when wrong, so the row and the list after it depend on
        the list alone. kernels_write.take_row does the same in compiled code."""
        nf = self.m_n_free
        n = nf[0] - 1
        fr = self.m_free_rows
        live = self.m_live
        r = near_free_row(live, self.capacity, hint) if hint >= 0 else -1
        if r < 0:
            r = fr[n]
        else:
            at = self.m_free_at
            p = at[r]
            if not (0 <= p <= n and fr[p] == r):
                self.free_at[self.free_rows[:n + 1]] = np.arange(n + 1, dtype=ROW_LINK)
                p = at[r]
            last = fr[n]
            fr[p] = last
            fr[n] = r                                  # (past the list: the rows taken, in order)
            at[last] = p
        nf[0] = n
        live[r] = True
        return r

    def freed(self, rows: list[int], ids: list[int] | None = None, reset: bool = False) -> None:
        """Rows a kernel gave back (their ``live``, generation and free list written there):
        the callback ids they hold let go now (of the rows ``ids`` only when given: those
        found holding one), their columns reset to the defaults at ``settle`` (the flush's
        end, or the next take)."""
        if self.ids:
            calls = self.calls
            for name in self.ids:
                col = getattr(self, "m_" + name)
                for r in (rows if ids is None else ids):
                    i = col[r]
                    if i >= 0:
                        calls.drop(i)
                        col[r] = NO_CALLBACK
        if self._resets and not reset:
            self.unsettled.extend(rows)

    @property
    def resets(self) -> bool:
        """Whether rows given back wait in ``unsettled`` to be reset to the defaults
        (``settle``): a table made with defaults."""
        return self._resets

    def settle(self) -> None:
        """The rows given back and not yet reset back to the defaults (those still free: a
        kernel may have taken one since, which then wrote its own columns)."""
        dirty = self.unsettled
        if not dirty:
            return
        self.unsettled = []
        if len(dirty) <= _ROW_BY_ROW:                  # a few rows: cheaper one by one, through the fast views
            d = self.__dict__
            kept = d.get("m_defaults")                # (layout, the views with their defaults as
            if kept is None or kept[0] != self.layout:     # the Python values they take); no state: "m_"
                kept = (self.layout, [(getattr(self, "m_" + name), _as_item(getattr(self, name), value))
                                      for name, value in self._defaults.items()])
                object.__setattr__(self, "m_defaults", kept)
            cols = kept[1]
            live = self.m_live
            for r in dirty:
                if not live[r]:
                    for col, value in cols:
                        col[r] = value
            return
        live = self.live
        rows = np.array(dirty, np.int64)
        rows = rows[~live[rows]]
        for name, value in self._defaults.items():
            getattr(self, name)[rows] = value

    def free(self, row: int) -> None:
        """Give a row back (its generation counts up, the callback ids it holds let go; a
        table with defaults resets its columns to them); ValueError when it is not in use."""
        write_first(self)                              # a row taken or given back (anim.engine.writefirst)
        live = self.m_live
        if not live[row]:
            raise ValueError(f"row {row} freed twice or never taken")
        live[row] = False
        gen = self.m_gen
        gen[row] = (gen[row] + 1) & MAX_ROWS              # (kernels_rows._give_row: the same wrap)
        if self.ids or self._resets:
            self.freed([row])
            self.settle()
        nf = self.m_n_free
        n = nf[0]
        self.m_free_rows[n] = row
        self.m_free_at[row] = n                        # (the list's index: a cache, checked at each take)
        nf[0] = n + 1

    def load(self, capacity: int, block: np.ndarray) -> bool:
        """Make a saved ``block`` of ``capacity`` rows (a copy of an earlier ``block``,
        anim.engine.snapshot) the table's state: copied in place at the same capacity, else a copy
        of it placed as the table's new memory (True: the arrays were replaced, the layout
        signal moved). The task table's ``views`` (a cache of handles) keep only the handles
        of rows the block has in use at the handle's own generation: the others are made on
        read.
        Rejected (ValueError): a block of another size than this table's layout gives."""
        lay, size = self._lay(capacity)
        if block.nbytes != size:
            raise ValueError(f"Table.load: a block of {block.nbytes} bytes is not this table's layout for "
                             f"{capacity} rows")
        self.loaded(capacity, block)
        if capacity != self.capacity:
            self._place(block.copy(), capacity)
            return True
        np.copyto(self.block, block)
        return False

    def _lay(self, capacity: int) -> tuple:
        """(the layout, the block's size) of this table at ``capacity`` rows (kept for the
        last capacity asked: derived, not state)."""
        kept = self.__dict__.get("m_lay")
        if kept is None or kept[0] != capacity:
            kept = (capacity, _layout(self._all, capacity))
            object.__setattr__(self, "m_lay", kept)
        return kept[1]

    def loaded(self, capacity: int, block: np.ndarray) -> None:
        """What a load of ``block`` (``capacity`` rows, laid out as this table's) changes
        beside the bytes, called before they are copied in (Table.load; a TableArena
        copies many tables' blocks at once): the task table's ``views`` (a cache of
        handles) keep only the handles of rows the block has in use at the handle's own
        generation (the others are made on read), and rows left unsettled are forgotten."""
        views = self.views
        if views.__class__ is list and views:
            # a handle stays where the saved row is in use at the handle's own generation
            # (the same task: a generation counts up only when its row is freed)
            lay = self._lay(capacity)[0]
            off, gdt, _ = lay["gen"]
            gen = block[off:off + capacity * gdt.itemsize].view(gdt)
            off = lay["live"][0]
            live = block[off:off + capacity].view(np.bool_)
            n = min(len(views), capacity, self.capacity)
            if n <= _FEW_VIEWS:                        # a few rows: each handle against its row
                gm, lm = gen.data, live.data
                for r, t in enumerate(views[:n]):
                    if t is not None and (not lm[r] or t.tgen != gm[r]):
                        views[r] = None
            else:                                      # many: the rows whose life changed, found at once
                moved = np.flatnonzero((gen[:n] != self.gen[:n]) | (live[:n] != self.live[:n]))
                for r in moved.tolist():
                    views[r] = None
            if len(views) > n:
                del views[n:]
        if views.__class__ is list and len(views) < capacity:     # a row past the list reads None
            views.extend([None] * (capacity - len(views)))
        if self.unsettled:
            self.unsettled = []

    def reloaded(self) -> None:
        """``loaded`` once a saved block of this table's capacity is already in place (a
        TableArena copies many tables' blocks at once): the handles are checked against
        the rows as they now are."""
        views = self.views
        if views.__class__ is list and views:
            gm, lm = self.m_gen, self.m_live
            cap = self.capacity
            if len(views) != cap:
                del views[cap:]
                views.extend([None] * (cap - len(views)))
            # the handles, found in C (a handle is never false, a free slot None), each at its row
            for t in filter(None, views):
                r = t.trow
                if not lm[r] or t.tgen != gm[r]:
                    views[r] = None
        if self.unsettled:
            self.unsettled = []

    def give_back(self, row: int) -> None:
        """``free`` unless the row is already free (a second dispose: no error)."""
        if self.m_live[row]:
            self.free(row)

    @property
    def in_use(self) -> int:
        """Rows taken and not given back (a leak check compares it): every row not on the
        free list (store.check_rows checks the two agree), the waiting commands' written first."""
        write_first(self)                              # a count of rows (anim.engine.writefirst)
        return self.capacity - int(self.n_free[0])


def near_hints(stores: "Stores", inst) -> tuple[int, int]:
    """The hints of the task and cursor rows a constructor takes for human ``inst``: its
    stack's bottom task (after a change, the newest) and that task's first cursor; (-1,
    -1) (the free lists' tops) for a human with an empty stack, or without a row of the
    world's human table. The commands waiting are written first (their rows are
    taken before the constructor's). anim.engine.cmdkernel reads the same rows for a
    prepared command (``_anchor``)."""
    rec = inst.record
    h = stores.humans
    s = inst.slot
    if rec.table is not h or rec.row != s or s < 0:
        return -1, -1
    write_first(h)                                     # the commands waiting take their rows first
    if h.m_depth[s] <= 0:
        return -1, -1
    a = h.m_stack[s * h.stack_width]
    return a, stores.tasks.m_c0[a]


# A cursor prototype's fields (anim.playback.cursor.cursor_proto: what every new cursor on a
# clip starts from), by place: the duration, the end test's F, D - 1/60, the events and their
# frames, the first event's frame, the duration and D - 1/60 as the float32 columns hold them.
(PROTO_DURATION, PROTO_END, PROTO_LIMIT, PROTO_EVENTS, PROTO_FRAMES, PROTO_EVF0, PROTO_DUR32,
 PROTO_LIMIT32) = range(8)


def cursor_table(capacity: int = 64) -> Table:
    """The cursors' columns: time (f32), frame, the end test's F and D - 1/60, the
    duration, flags, the bank index, the next event's index and frame, the first event's
    frame (``evf0``, where a restart puts the next event), ``at_end``, the anim id."""
    return Table({"t": np.float32, "frame": np.int32, "end": np.int32, "limit": np.float32,
                  "dur": np.float32, "flags": np.int32, "bank": np.int32, "ev": np.int32,
                  "evf": np.int32, "evf0": np.int32, "at_end": bool, "anim": np.int32}, capacity)


def fade_table(capacity: int = 64) -> Table:
    """The fades' columns: elapsed and duration (f32)."""
    return Table({"el": np.float32, "dur": np.float32}, capacity)


def gait_table(capacity: int = 64) -> Table:
    """The gait blends' columns: value and target (f32), the lower pair index, the leader,
    the five anim ids (``id0``-``id4``) and their clips' bank indices (``b0``-``b4``: the
    compiled step makes the cursor of a clip a change of pair brings in)."""
    return Table({"value": np.float32, "target": np.float32, "lower": np.int32, "leader": np.int8,
                  "id0": np.int32, "id1": np.int32, "id2": np.int32, "id3": np.int32, "id4": np.int32,
                  "b0": np.int32, "b1": np.int32, "b2": np.int32, "b3": np.int32, "b4": np.int32}, capacity)


def task_table(capacity: int = 64, calls: CallbackTable | None = None) -> Table:
    """The tasks' columns (one row per task, the task object a view onto it): the type,
    rate (f32), flags, held bits, the cursor rows ``c0`` / ``c1`` (a clip's; a gait's lower
    and upper), ``aux`` (a fade's or gait's own row), ``nxt`` (a type 3 / 6's next task's
    row), ``blend`` (f32) and ``window`` (0 advanced, 1 kept), a fade's ``incoming`` task
    row, ``released``, ``handed_over``, a loop's ``wraps``, ``speed`` (a gait's, f32),
    ``callback`` (a wrap callback is set: the compiled step reports its wraps),
    ``placed`` (on a stack, in a queue or a next task: one place each, TaskInUse). A
    world's task links only to tasks of its own table (anim.playback.tasks.ForeignTask). Types 10,
    11 and 13 keep their numbers here too: the cursor rows ``c2`` / ``c3`` (a pick's
    third and fourth clips; a direction's c0 / c1 / c2 are its lower neighbour, centre
    and upper neighbour), ``value`` (float64: a mix's weight and a direction's value are
    doubles, a pick's value a float32 held exactly), ``target`` (a mix's, float64),
    ``base`` (a direction's first anim id), ``centre`` (its nearest direction, 0-7) and
    ``sampling`` (a pick's PickSampling: 0 chosen, 1 all). The callbacks (data: a kind and
    plain arguments, anim.engine.callbacks) are ids of the world's CallbackTable (``calls``;
    NO_CALLBACK: none): ``on_end`` and ``on_wrap``; a paired task's partner is the
    attacker's handle (``partner``, an entity id; -1 none) or, for a human with no handle,
    its name (``partner_name``, an id of ``calls``); a direction's eight clips are
    ``dir_banks`` (a bank index per direction; -1 for a row of another type)."""
    return Table({"type": np.int8, "rate": np.float32, "flags": np.int32, "held": np.int64,
                  "c0": ROW_LINK, "c1": ROW_LINK, "aux": ROW_LINK, "nxt": ROW_LINK, "blend": np.float32,
                  "window": np.int8, "incoming": ROW_LINK, "released": bool, "handed_over": bool,
                  "wraps": np.int64, "speed": np.float32, "callback": bool, "placed": bool,
                  "c2": ROW_LINK, "c3": ROW_LINK, "value": np.float64, "target": np.float64, "base": np.int32,
                  "centre": np.int8, "sampling": np.int8, "on_end": np.int32, "on_wrap": np.int32,
                  "partner": np.int64, "partner_name": np.int32, "dir_banks": (np.int32, (DIRECTIONS,))},
                 capacity, ids=TASK_IDS, defaults=TASK_DEFAULTS, calls=calls)


# A free task row's links: no cursor, fade / gait row, next or incoming task (every other
# column 0): Table.alloc_default hands out rows at these, so a constructor writes only what it sets.
TASK_DEFAULTS = {"c0": NO_ROW, "c1": NO_ROW, "c2": NO_ROW, "c3": NO_ROW, "aux": NO_ROW, "nxt": NO_ROW,
                 "incoming": NO_ROW, "on_end": NO_CALLBACK, "on_wrap": NO_CALLBACK, "partner": NO_ROW,
                 "partner_name": NO_CALLBACK, "dir_banks": NO_ROW}
# The task columns that hold ids of the world's CallbackTable.
TASK_IDS = ("on_end", "on_wrap", "partner_name")


class HumanTable:
    """The humans' rows (one per character instance the compiled engine has seen, or one
    private row of a standalone record), each row with a generation.

    Columns: ``flags`` (the record's held/state word +0x08, int64), ``anim`` (the record's
    playing anim id +0x20, -1 with none), ``speed`` (the instance's speed multiplier
    +0x3a4, float64 as given: each blend built for the human takes it as its float32
    rate factor), ``depth`` (tasks on the stack), ``stack`` (rows of the task table,
    bottom first, ``STACK_ROWS`` wide), ``queued`` (tasks waiting in the queue),
    ``queue`` (their rows, first first, ``QUEUE_ROWS`` wide), ``live``; ``gen`` (a list:
    each row's generation, counted up when the row is freed, so that a HumanRecord whose
    row went back raises StaleHandle; no kernel reads it, and a list is read in a tenth
    of a numpy element's time on the command path).
    ``on_report``: the human's report callback, an id of ``calls`` (the world's
    CallbackTable, or the table's own; NO_CALLBACK: none).
    The columns are views into one block of memory (``block``: one copy saves them,
    anim.engine.snapshot; the generations and the free list are saved beside it).
    Grown by doubling; rows reused through a free list. A record keeps its row, its
    generation and this table, never a column (they are replaced on growth).
    """

    STACK_ROWS = 18
    QUEUE_ROWS = 10
    world: Any = None           # a world's table: its Stores (None: a standalone record's private table)
    commands: Any = None        # a world's table: the Player's command buffer (Table.commands)
    layout = 0                  # the layout stamp when this table's arrays were last replaced
    # the fast views (set by __setattr__ with each column) and the two rows' widths
    m_depth: Any
    m_queued: Any
    m_flags: Any
    m_anim: Any
    m_speed: Any
    m_on_report: Any
    m_stack: Any
    m_queue: Any
    stack_width: int
    queue_width: int
    # the columns (views into ``block``, set by ``_place``), declared for a type checker
    flags: np.ndarray
    anim: np.ndarray
    speed: np.ndarray
    on_report: np.ndarray
    depth: np.ndarray
    queued: np.ndarray
    live: np.ndarray
    stack: np.ndarray
    queue: np.ndarray
    block: np.ndarray

    COLUMNS: dict[str, DTypeLike] = {"flags": np.int64, "anim": np.int64, "speed": np.float64, "depth": np.int32,
                                     "queued": np.int32, "live": np.bool_, "on_report": np.int64,
                                     "stack": (ROW_LINK, (STACK_ROWS,)), "queue": (ROW_LINK, (QUEUE_ROWS,))}

    def __setattr__(self, name: str, value) -> None:
        """Set an attribute; ``depth``, ``queued``, ``flags``, ``anim`` and ``speed`` also get
        their fast views (``m_depth``, ``m_queued``, ...), ``stack`` and ``queue`` flat ones (``m_stack``: slot ``s * stack_width
        + i``; ``m_queue``; store._fast_view), made again whenever the array is replaced."""
        object.__setattr__(self, name, value)
        if isinstance(value, np.ndarray) and self.world is not None:    # (a standalone record's: no kernel reads it)
            _moved(self)
        if name in ("depth", "queued", "flags", "anim", "speed", "on_report"):
            object.__setattr__(self, "m_" + name, _fast_view(value))
        elif name in ("stack", "queue"):
            flat = isinstance(value, np.ndarray) and value.ndim == 2 and value.flags.c_contiguous
            object.__setattr__(self, "m_" + name, _fast_view(value.reshape(-1)) if flat else value.reshape(-1))
            object.__setattr__(self, name + "_width", value.shape[1] if value.ndim == 2 else 1)

    def __getstate__(self) -> dict:
        """The table's state without the fast views (a memoryview is not copied or pickled)."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("m_")}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def __init__(self, capacity: int = 64, calls: CallbackTable | None = None):
        self.gen: list[int] = []
        self.calls = calls if calls is not None else CallbackTable()
        self._free: list[int] = []
        self._place(np.zeros(_layout(self.COLUMNS, 0)[1], np.uint8), 0)
        self._grow(max(1, capacity))

    def _place(self, block: np.ndarray, cap: int) -> None:
        """Make ``block`` (laid out by _layout for ``cap`` rows) the table's memory: every
        column a view into it (one copy saves the table: anim.engine.snapshot)."""
        self.block = block
        self.capacity = cap
        for name, arr in block_arrays(self.COLUMNS, cap, block).items():
            if name != "n_free":
                setattr(self, name, arr)

    def _grow(self, cap: int) -> None:
        old = self.capacity
        prev = {name: getattr(self, name) for name in self.COLUMNS}
        self._place(np.zeros(_layout(self.COLUMNS, cap)[1], np.uint8), cap)
        for name, a in prev.items():
            getattr(self, name)[:old] = a[:old]
        self.on_report[old:] = NO_CALLBACK             # a free row names no callback
        self.gen.extend([0] * (cap - old))
        self._free.extend(range(cap - 1, old - 1, -1))

    def alloc(self) -> int:
        """A free row: no flags, no anim (-1), speed 1, empty stack and queue, no report."""
        write_first(self)                              # a row taken or given back (anim.engine.writefirst)
        if not self._free:
            self._grow(self.capacity * 2)
        row = self._free.pop()
        self.live[row] = True
        self.flags[row] = self.depth[row] = self.queued[row] = 0
        self.anim[row] = -1
        self.speed[row] = 1.0
        self.stack[row] = NO_ROW
        self.queue[row] = NO_ROW
        self.on_report[row] = NO_CALLBACK
        return row

    def free(self, row: int) -> None:
        """Give a row back (its generation counts up, its report callback goes); ValueError
        when it is not in use."""
        write_first(self)                              # a row taken or given back (anim.engine.writefirst)
        if not (0 <= row < self.capacity and self.live[row]):
            raise ValueError(f"human row {row} freed twice or never taken")
        self.live[row] = False
        self.gen[row] += 1
        self.set_report(row, None)
        self._free.append(row)

    def report(self, row: int) -> Any:
        """Row ``row``'s report callback (None: none)."""
        return self.calls.get(self.m_on_report[row])

    def set_report(self, row: int, cb: Any) -> None:
        """Make ``cb`` (checked: anim.engine.callbacks.check_callback; None: none) row ``row``'s
        report callback, letting the old one's id go."""
        col = self.m_on_report
        old = col[row]
        if old >= 0:
            self.calls.drop(old)
        col[row] = self.calls.take(cb)

    @property
    def in_use(self) -> int:
        """Rows taken and not given back."""
        return self.capacity - len(self._free)

    def save(self) -> tuple:
        """The table's state beside its block: copies of its free list and generations."""
        return (list(self._free), list(self.gen))

    def load(self, state: tuple, capacity: int | None = None, block: np.ndarray | None = None) -> bool:
        """Write a ``save`` back (copied: the state restores again), with a saved ``block``
        of ``capacity`` rows when given (copied in place at the same capacity, else placed
        as a copy: True, the arrays were replaced). Rejected (ValueError): a block of
        another size than this table's layout gives."""
        replaced = False
        if block is not None:
            assert capacity is not None, "HumanTable.load: a block needs its capacity"
            if block.nbytes != (self.block.nbytes if capacity == self.capacity else _layout(self.COLUMNS, capacity)[1]):
                raise ValueError(f"HumanTable.load: a block of {block.nbytes} bytes is not this table's layout "
                                 f"for {capacity} rows")
            if capacity != self.capacity:
                self._place(block.copy(), capacity)
                replaced = True
            else:
                np.copyto(self.block, block)
        free, gen = state
        self._free[:] = free
        self.gen[:] = gen
        return replaced


# Up to this many bytes of tables, a TableArena lays them side by side (saving or loading
# them all is one copy: a few fighters' tables copy in less time than the calls of one
# copy each); past it each table is copied on its own, the bytes costing more than the calls.
ARENA_BYTES = 1 << 22

_ARENA_KEYS = itertools.count(1)        # each laying out's key, never given twice in a process


class TableArena:
    """Several tables' blocks side by side in one buffer (``buf``), so that a snapshot
    saves or loads them all with one copy (anim.engine.snapshot, game.runtime.snapshot).

    In: the tables (Table or HumanTable), in a fixed order. ``gather()`` lays their blocks
    out again in a new buffer, each table placed on its slice (its arrays are replaced:
    the layout signal moves), and gives that arrangement a new ``key``; it refuses (False,
    nothing changed) past ``limit`` bytes. ``whole()``: every table still lies on its
    slice (one that grew, or was given a block of another capacity, has left it; the next
    ``gather`` takes it back). A saved copy of ``buf`` with the same ``key`` has every
    table's block at the same place, of the same capacity."""

    __slots__ = ("tables", "buf", "blocks", "key", "spans", "watched", "mv", "_seen", "_sigs")

    def __init__(self, tables) -> None:
        self.tables = tuple(tables)
        self.buf: np.ndarray | None = None
        self.blocks: tuple = ()
        self.spans: tuple = ()                  # each table's (offset, size) in ``buf``
        self.key = 0
        self.mv: memoryview | None = None       # ``buf``'s bytes (a copy through it skips numpy's dispatch)
        self._seen: Any = -1                    # their signals' stamps when the tables were last seen whole
        self._sigs: tuple = ()                  # the LayoutSignals the tables report to
        # the tables a load looks at beside their bytes (Table.reloaded): a handle cache, or
        # rows a flush gives back unsettled (the task table's)
        self.watched = tuple(t for t in self.tables if isinstance(t, Table) and
                             (t.views.__class__ is list or t._resets))

    def whole(self) -> bool:
        """Whether every table's block is still its slice of ``buf``."""
        if self.buf is None:
            return False
        sigs = self._sigs
        if sigs and self._seen == (sigs[0].now if len(sigs) == 1 else tuple([s.now for s in sigs])):
            return True                         # no table's arrays replaced since (store._moved)
        for t, b in zip(self.tables, self.blocks):
            if t.block is not b:
                return False
        # the signals the tables report to now (a table that joined another since moved
        # the one it left: seen here)
        sigs = self._sigs = tuple({id(t.signal): t.signal for t in self.tables}.values())
        self._seen = sigs[0].now if len(sigs) == 1 else tuple([s.now for s in sigs])
        return True

    def gather(self, limit: int | None = None) -> bool:
        """Lay the tables' blocks side by side in a new buffer (their bytes copied, each
        table placed on its slice); True when done, False (nothing changed) when they
        would take more than ``limit`` bytes (None: ARENA_BYTES)."""
        if limit is None:
            limit = ARENA_BYTES
        spans, off = [], 0
        for t in self.tables:
            n = t.block.nbytes
            spans.append((off, n))
            off += -(-n // _ALIGN) * _ALIGN
        if off > limit:
            self.buf, self.blocks, self.spans, self.key, self.mv = None, (), (), 0, None
            return False
        buf = np.zeros(off, np.uint8)           # (the gaps between blocks stay zero: saved as they are)
        blocks = []
        for t, (o, n) in zip(self.tables, spans):
            b = buf[o:o + n]
            np.copyto(b, t.block)
            t._place(b, t.capacity)
            blocks.append(b)
        self.buf, self.blocks, self.spans, self.key = buf, tuple(blocks), tuple(spans), next(_ARENA_KEYS)
        self.mv, self._seen, self._sigs = buf.data, -1, ()
        return True


class Stores:
    """The tables of one world: cursors, fades, gait blends, tasks and humans, the
    callbacks their rows name (``calls``: one CallbackTable, shared by the task and
    human tables), and the world's layout signal (``signal``: a LayoutSignal the five
    tables report to, moved whenever an array of one of them is replaced)."""

    __slots__ = ("cursors", "fades", "gaits", "tasks", "humans", "calls", "signal")

    def __init__(self, capacity: int = 64):
        self.calls = CallbackTable()
        self.cursors = cursor_table(capacity)
        self.fades = fade_table(capacity)
        self.gaits = gait_table(capacity)
        self.tasks = task_table(capacity, self.calls)
        self.tasks.views = []                  # row -> its task object, a cache (anim.playback.tasks.task_at)
        self.tasks.world = self
        self.humans = HumanTable(min(capacity, HUMAN_ROWS), self.calls)
        self.humans.world = self
        self.signal = LayoutSignal()
        for t in (self.cursors, self.fades, self.gaits, self.tasks, self.humans):
            self.signal.join(t)


class TableCorrupt(RuntimeError):
    """A table the kernels index holds a row index, shape or dtype they would read out of
    bounds with (an engine bug or a row written behind the engine's back, never bad input).
    The message names the table, the column and the first bad row."""


def _check_columns(name: str, table, columns: dict) -> None:
    """Every column an array of the declared dtype, the table's capacity rows long."""
    cap = table.capacity
    for col, dt in columns.items():
        a = getattr(table, col)
        d = np.dtype(dt)
        if a.dtype != d.base or a.shape != (cap,) + d.shape:
            raise TableCorrupt(f"{name}.{col}: dtype {a.dtype} shape {a.shape}, expected {d.base} "
                               f"{(cap,) + d.shape}")
    if table.live.shape != (cap,):
        raise TableCorrupt(f"{name}.live: shape {table.live.shape}, expected ({cap},)")


def _check_links(name: str, col: str, values: np.ndarray, rows: np.ndarray, target_cap: int, target: str,
                 allow_none: bool = True) -> None:
    """``values`` (of the live ``rows``) are rows of a table of ``target_cap`` rows (or NO_ROW)."""
    bad = (values >= target_cap) | (values < (NO_ROW if allow_none else 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TableCorrupt(f"{name}.{col}[{int(rows[i])}] = {int(values[i])}: not a row of the {target} table "
                           f"(capacity {target_cap})")


def check_rows(stores: "Stores", e_first: np.ndarray, e_count: np.ndarray, e_frame: np.ndarray,
               task_types: tuple[int, int, int]) -> None:
    """Every row index the kernels follow is in bounds, every column has its dtype and length.

    In: the world's tables; the clips' event index (``e_first``, ``e_count`` per bank index,
    ``e_frame`` the frames); ``task_types`` = (fade type, gait type, largest type). Checked:
    the human table's depth (0-18) and its stacks' task rows (in the task table: a released
    row stays readable, so a stack may hold one), its queue counts (0-10) and queues' task
    rows (the pose kernel walks them for queued_default); each live task's
    type, cursor rows (c0-c3), fade / gait row (aux), next and incoming task rows; each
    live cursor's bank index (a clip the event index knows) and next-event index (within
    that clip's events); each live gait's clips' bank indices; the cursors' free list (each row not in use, once);
    the event index within
    ``e_frame``. Raises TableCorrupt naming the first fault. Vectorised: a few ms at 10,000
    humans, so the engine runs it after any table grew (and before every kernel call with
    SCUFFLE_DEBUG=1).
    """
    cur, fad, gai, tsk, hum = stores.cursors, stores.fades, stores.gaits, stores.tasks, stores.humans
    for name, table in (("cursors", cur), ("fades", fad), ("gaits", gai), ("tasks", tsk)):
        _check_columns(name, table, table._columns)
    hcap = hum.capacity
    for col in ("flags", "anim", "speed", "depth", "queued", "live", "on_report"):
        if getattr(hum, col).shape != (hcap,):
            raise TableCorrupt(f"humans.{col}: shape {getattr(hum, col).shape}, expected ({hcap},)")
    for col, width in (("stack", HumanTable.STACK_ROWS), ("queue", HumanTable.QUEUE_ROWS)):
        a = getattr(hum, col)
        if a.shape != (hcap, width) or a.dtype != ROW_LINK:
            raise TableCorrupt(f"humans.{col}: {a.dtype} {a.shape}, expected {np.dtype(ROW_LINK)} ({hcap}, {width})")
    nb = len(e_first)
    if e_count.shape != (nb,) or (nb and int((e_first + e_count).max()) > len(e_frame)) or (e_first < 0).any():
        raise TableCorrupt(f"events: first/count ({nb} clips) run past the {len(e_frame)} event frames")
    hrows = np.flatnonzero(hum.live)
    depth = hum.depth[hrows]
    if ((depth < 0) | (depth > HumanTable.STACK_ROWS)).any():
        i = int(np.flatnonzero((depth < 0) | (depth > HumanTable.STACK_ROWS))[0])
        raise TableCorrupt(f"humans.depth[{int(hrows[i])}] = {int(depth[i])}: not 0-{HumanTable.STACK_ROWS}")
    on = np.arange(HumanTable.STACK_ROWS)[None, :] < depth[:, None]
    stack = hum.stack[hrows][on]
    _check_links("humans", "stack", stack, np.repeat(hrows, depth), tsk.capacity, "task", allow_none=False)
    # the queues: the pose kernel walks them for PlayerOptions.queued_default
    queued = hum.queued[hrows]
    if ((queued < 0) | (queued > HumanTable.QUEUE_ROWS)).any():
        i = int(np.flatnonzero((queued < 0) | (queued > HumanTable.QUEUE_ROWS))[0])
        raise TableCorrupt(f"humans.queued[{int(hrows[i])}] = {int(queued[i])}: not 0-{HumanTable.QUEUE_ROWS}")
    on = np.arange(HumanTable.QUEUE_ROWS)[None, :] < queued[:, None]
    _check_links("humans", "queue", hum.queue[hrows][on], np.repeat(hrows, queued), tsk.capacity, "task",
                 allow_none=False)
    trows = np.flatnonzero(tsk.live)
    fade_t, gait_t, top_t = task_types
    ty = tsk.type[trows].astype(np.int64)
    if ((ty < 1) | (ty > top_t)).any():
        i = int(np.flatnonzero((ty < 1) | (ty > top_t))[0])
        raise TableCorrupt(f"tasks.type[{int(trows[i])}] = {int(ty[i])}: not a task type")
    for col in ("c0", "c1", "c2", "c3"):
        _check_links("tasks", col, getattr(tsk, col)[trows], trows, cur.capacity, "cursor")
    for col in ("nxt", "incoming"):
        _check_links("tasks", col, getattr(tsk, col)[trows], trows, tsk.capacity, "task")
    for t, table, what in ((fade_t, fad, "fade"), (gait_t, gai, "gait")):
        sel = ty == t
        _check_links("tasks", "aux", tsk.aux[trows[sel]], trows[sel], table.capacity, what, allow_none=False)
    crows = np.flatnonzero(cur.live)
    bank = cur.bank[crows].astype(np.int64)
    if ((bank < 0) | (bank >= nb)).any():
        i = int(np.flatnonzero((bank < 0) | (bank >= nb))[0])
        raise TableCorrupt(f"cursors.bank[{int(crows[i])}] = {int(bank[i])}: not a clip of the bank ({nb} known)")
    ev = cur.ev[crows].astype(np.int64)
    bad = (ev < 0) | (ev > e_count[bank] if nb else ev > 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TableCorrupt(f"cursors.ev[{int(crows[i])}] = {int(ev[i])}: past its clip's {int(e_count[bank[i]])} events")
    grows = np.flatnonzero(gai.live)
    for col in ("b0", "b1", "b2", "b3", "b4"):
        b = getattr(gai, col)[grows].astype(np.int64)
        if ((b < 0) | (b >= nb)).any():
            i = int(np.flatnonzero((b < 0) | (b >= nb))[0])
            raise TableCorrupt(f"gaits.{col}[{int(grows[i])}] = {int(b[i])}: not a clip of the bank ({nb} known)")
    nf = int(cur.n_free[0])
    if cur.free_rows.shape != (cur.capacity,) or not 0 <= nf <= cur.capacity:
        raise TableCorrupt(f"cursors.n_free = {nf}: not 0-{cur.capacity} (free_rows {cur.free_rows.shape})")
    free = cur.free_rows[:nf]
    if ((free < 0) | (free >= cur.capacity)).any() or cur.live[free].any() or len(np.unique(free)) != nf \
            or nf + len(crows) != cur.capacity:
        raise TableCorrupt(f"cursors.free_rows: {nf} free rows that are not the {cur.capacity - len(crows)} "
                           "rows not in use, each once")
