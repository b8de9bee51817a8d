"""The snapshot file: a Game's state as data that anyone can load.

A snapshot file is read from strangers (shared save states, replays, a netplay peer), so
it holds nothing but data: a fixed header, a directory of sections, each table's block
as raw bytes with its declared columns (the engine's tables and the fight rules':
game.fighters.fightrows, reached through the Game's Fight), the counts (the update
counters, the engine's lists of rows and counters and the body and combat rows' owners as
fixed columns), and the plain values (anim.engine.plaindata: numbers,
strings, bytes, lists, maps, numpy arrays; nothing in the bytes names a class or a
function). scuffle's own code rebuilds its objects from them, in the Game they are
restored into, after checking every size, every row and every value
(anim.engine.snapcheck and the checks here): **loading a snapshot file from anyone runs no code
and writes no file**, and one that does not fit is refused with one line naming the
section and field (SnapshotError), the Game unchanged. docs/formats.md, "Snapshot",
gives the byte layout.

Here: the format's constants, ``config_parts`` / ``config_digest`` (what a Game is set up
with: peers and files compare it before any state), ``plain_values`` (the saved values
as plain data, the byte form's), ``encode`` / ``parse`` (the
bytes), ``to_state`` (a parsed file checked against a Game and made into the saved
state ``snapshot.restore`` writes back), ``checksum`` / ``checksum_game`` /
``checksum_parsed`` (one digest of a snapshot, a Game now and a file), ``read_file``, and
``SnapCache``, the per-Game caches of all of these. Original: none (ours).
"""
from __future__ import annotations

import hashlib
import math
import struct
import zlib
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np

from scuffle.anim.engine import plaindata
from scuffle.anim.engine import snapshot as S
from scuffle.anim.engine.callbacks import Callback, CallbackTable
from scuffle.anim.playback.cursor import cursor_proto
from scuffle.anim.playback.deferred import NO_ENTRIES
from scuffle.anim.engine.digest import (arena_plan, blocks_digests, digest_form, digests_in, digests_plan,
                                        digests_with, values_bytes)
from scuffle.anim.engine.snapcheck import (EIGHT_CLIPS_TYPE, ClipFacts, Saved, StateError, check_deferred, check_ids,
                                          check_saved, id_kinds,
                                          clip_facts, pack, pack_all, pack_plan, pack_with, unpack)
from scuffle.anim.engine.store import Table, block_layout
from scuffle.components import Animator, Body, Combat
from scuffle.game.runtime.version import __version__

__all__ = ["SnapCache", "cache_of", "FORMAT", "MAGIC", "MAX_BYTES", "HEADER", "payload_digest", "config_parts", "config_digest",
           "config_bytes", "checksum_game", "owner_columns", "counts_raw",
           "table_block", "table_section", "plain_values", "encode",
           "parse", "Parsed", "to_state", "checksum", "read_file", "SECTIONS", "TABLES", "need", "need_int",
           "need_float", "need_random_state", "short", "assemble", "sections_of", "counts_of", "counts_section",
           "COUNT_LISTS", "COUNTERS", "VALUES", "values_of", "values_section"]

FORMAT = 8                       # the byte form's version (the header's second field)
MAGIC = b"SCUFSNAP"
# magic, format, header size, scuffle version (ASCII, NUL-padded), configuration digest,
# section count, flags (0), payload size (the bytes after the header), CRC-32 of the payload
# (``payload_digest``: it catches accidents, a damaged copy or a cut transfer; whoever edits
# a file computes any digest again, so every field is checked as well, and a cheap one
# does: CRC-32 is a few times faster than SHA-256 over a fight's 24 kB)
HEADER = struct.Struct("<8sII16s32sIIQI")
_ENTRY = struct.Struct("<16sQQ")  # a directory entry: section name (ASCII, NUL-padded), offset, size
MAX_BYTES = 1 << 30               # a file larger than this is refused before it is read
MAX_SECTIONS = 16
MAX_COUNTER = 1 << 62             # an update counter or entity id: an int64 with room to count on
ROW_TABLES = ("cursors", "fades", "gaits", "tasks", "humans", "bodies", "combats")
# the fight rules' tables (their columns and rules are the Game's fight rules': ``ROW_COLUMNS``,
# ``ROW_RANGES``; game.fighters.fightrows); a Game without fight rules writes them with no row in use
FIGHT_TABLES = ("fighters", "ais", "pending", "log")
TABLES = (*ROW_TABLES, *FIGHT_TABLES)
SECTIONS = ("config", "meta", "counts", "values", *(f"table.{t}" for t in TABLES))
# the fight tables' columns in a Game without fight rules: a live column only
_NO_FIGHT: dict[str, Any] = {"live": np.bool_}
_ENGINE_TABLES = ("cursors", "fades", "gaits", "tasks")
# a table section: its rows (u32) and the length of its columns' declaration (u32), the
# declaration (plain data: (name, dtype, inner shape) per array), then the block packed
# (anim.engine.snapcheck.pack: the free list's arrays whole, the other columns' rows in use)
_TABLE_HEAD = struct.Struct("<II")
# The counts section: the update counters and the engine's lists of rows and counters as
# fixed columns, read straight from the bytes: the lists' lengths and the pool's (u32
# each), the counters (i64 each, ``COUNTERS``), then the lists (int64 each, a deferred
# pair two, ``COUNT_LISTS``' order) and the pool's flags (one byte each, 0 or 1). The
# lists' rules are the compiled pass's (anim.engine.snapcheck.check_saved: generations,
# free list, pool) and check_ids' (the callbacks' uses and free ids), the deferred pairs'
# and the counters' to_state's (the update counters' parse's). The body and combat rows'
# owners: an entity per row of the table (-1 a row not in use), checked by to_state
# (``_owners_back``) in numpy.
COUNT_LISTS = ("humans.gen", "humans.free", "calls.uses", "calls.free", "deferred", "bodies.owner",
               "combats.owner")
COUNTERS = ("updates_run", "update", "entity_next", "pool.n_out", "stats[0]", "stats[1]", "batch.kernel_humans",
            "batch.pair_changes")
_COUNTS_HEAD = struct.Struct(f"<{len(COUNT_LISTS) + 1}I{len(COUNTERS)}q")
_WIDTH = (8, 8, 8, 8, 16, 8, 8)      # the bytes of an item of each list (a deferred pair: two int64)
_PAIRS_AT = COUNT_LISTS.index("deferred")


class _Refused(ValueError):
    """A field that does not fit (message only; snapshot.py makes it a SnapshotError)."""


class SnapCache:
    """A Game's snapshot-file caches, one object the Game owns (``Game.snapcache``, made
    with the Game): what a file of it is written and checked with that does not change
    between two files (the configuration's bytes and digest, the humans' names by view,
    the meta section, the anim sets, the tables' columns, the checked layouts, the
    humans checked, the checksum's plan). Each entry keeps the key it was made for and is
    made again when that moved; ``clear()`` drops them all, and ``config_bytes`` calls it
    when the Game's configuration changed (every file written or read asks it first)."""

    __slots__ = ("config", "views", "meta", "sets", "columns", "saved", "meta_ok", "digests", "names", "extras",
                 "words", "arena", "extras_bytes", "calls", "fitted", "texts_bytes", "check", "scratch", "owners",
                 "fight_bytes", "log_bytes", "instances", "stateful", "engine", "engine_bytes",
                 "packing", "owners_back", "values_bytes")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget every entry (the next file or checksum makes them again)."""
        self.config: Any = None       # (the configuration's stamp, its plain bytes, their sha256)
        self.views: Any = None        # (the names' version, id(view) -> name, the views kept alive)
        self.meta: Any = None         # (the state's names, the bank's bytes, the engine, the meta section)
        self.sets: Any = None         # (the names' version, name -> anim set digest)
        self.columns: Any = None      # (the Player's stores, table name -> columns)
        self.saved: Any = None        # (a file's tables' rows and declarations, their checked layouts)
        self.meta_ok: Any = None      # (a meta section and what it was checked against, its results)
        self.digests: Any = None      # (the tables' capacities, the checksum's plan)
        self.names: Any = None        # (the names' version, their plain bytes): the checksum's
        self.extras: Any = None       # (the stateful actions' last states, their digest): the checksum's
        self.words: dict = {}         # id(an AI's words) -> (the words, their sha256): the checksum's
        self.arena: Any = None        # (the arena's arrangement, the arena, the checksum's plan over it)
        self.extras_bytes: Any = None  # (the stateful actions' last states, their plain form): a file's
        self.calls: Any = None        # (a file's callbacks' values checked last: exact bytes, their callbacks, the values)
        self.fitted: list = []        # (each stateful action, the exact bytes of its state that fitted last, it)
        self.texts_bytes: Any = None  # (the combat texts, their plain form): a file's
        # a file's rows are checked on a scratch copy kept here (snapcheck.check_saved's
        # ``keep``), written over by the next file's check: a state made of it (to_state)
        # is restored before the next is made
        self.check: dict = {}
        self.scratch: Any = None      # (the checked blocks, the scratch tables over them)
        self.owners: Any = None       # (names, their version, bodies', combats' owners, the columns): owner_columns
        self.fight_bytes: Any = None  # (the fight's counters' key, counts by kind, their plain form, the counters): a file's
        self.log_bytes: Any = None    # (the log's texts, their plain form, (head, count, the counters' bytes)): a file's
        self.instances: Any = None    # (names version, a file's names, (entity, Animator, instance) each, name -> instance)
        self.stateful: Any = None     # (the lists stateful() read, its objects)
        self.engine: Any = None       # (callbacks' values, step's lists, seats' serials, the engine's plain values)
        self.engine_bytes: Any = None  # (the engine's plain values, their bytes): a file's
        self.values_bytes: Any = None  # (the values' bytes, the values section joined of them): a file's
        self.packing: Any = None      # (the tables' capacities, the fight's columns, the Game's, the pack plan, heads)
        # a file's body and combat owners checked last, by table: (its owner column's and live
        # flags' bytes, the humans by entity, (entity, view) each, row -> view)
        self.owners_back: dict = {}


def cache_of(game) -> SnapCache:
    """``game``'s SnapCache (a Game made without one, e.g. a test's stand-in: given one)."""
    c = getattr(game, "snapcache", None)
    if c is None:
        c = game.snapcache = SnapCache()
    return c


def short(v: Any, n: int = 80) -> str:
    """``repr(v)`` cut to about ``n`` characters (error lines quote a stranger's values)."""
    r = repr(v)
    return r if len(r) <= n else r[:n - 3] + "..."


def need(ok: bool, where: str, what: str) -> None:
    """Refuse (_Refused naming ``where``) unless ``ok``."""
    if not ok:
        raise _Refused(f"{where}: {what}")


def need_int(v: Any, where: str, lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> int:
    """``v`` an int (not a bool) within [lo, hi]."""
    if not (v.__class__ is int and lo <= v <= hi):
        raise _Refused(f"{where}: {short(v)} is not a whole number {lo} to {hi}")
    return v


def need_float(v: Any, where: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    """``v`` a finite float (an int is taken) within [lo, hi]."""
    if not (v.__class__ in (int, float) and math.isfinite(v) and lo <= v <= hi):
        raise _Refused(f"{where}: {short(v)} is not a finite number {lo} to {hi}")
    return float(v)


def need_random_state(v: Any, where: str) -> None:
    """``v`` a SavedRandom state: (3, 625 words as 2,500 bytes with the position word last
    at most 624, None or a finite gauss value)."""
    need(v.__class__ is tuple and len(v) == 3, where, "not a random generator's state")
    if not (v[0] == 3 and v[0].__class__ is int):
        raise _Refused(f"{where}: version {short(v[0])}, expected 3")
    need(v[1].__class__ is bytes and len(v[1]) == 2500, where, "not 625 words")
    need(int.from_bytes(v[1][-4:], "little") <= 624, where, "a position past 624")
    need(v[2] is None or (v[2].__class__ is float and math.isfinite(v[2])), where, "a gauss value that is not finite")


# ---------------------------------------------------------------- the configuration
def _plain_option(v: Any) -> Any:
    """An option's value as plain data: a dataclass (its fields marked ``state: False``, such
    as PlayerOptions.threads, left out) or named tuple by its fields, an enum by
    its value, a Callback as (kind, args), a callable by its module and name."""
    if isinstance(v, Callback):
        return ("callback", v.kind, tuple(v.args))
    if is_dataclass(v) and not isinstance(v, type):          # a field no state depends on is left out
        return {f.name: _plain_option(getattr(v, f.name)) for f in fields(v) if f.metadata.get("state", True)}
    if hasattr(v, "_fields"):
        return {f: _plain_option(getattr(v, f)) for f in v._fields}
    if v is None or v.__class__ in (bool, int, float, str):
        return v
    if isinstance(v, str):                             # a StrEnum: its text
        return str.__str__(v)
    if isinstance(v, (bool, int)):                     # an IntEnum or IntFlag: its number
        return int(v)
    if isinstance(v, float):
        return float(v)
    if callable(v):
        return ("code", getattr(v, "__module__", ""), getattr(v, "__qualname__", type(v).__qualname__))
    if isinstance(v, (tuple, list)):
        return [_plain_option(x) for x in v]
    return ("object", type(v).__module__, type(v).__qualname__)


def _options_digest(options) -> str:
    """The sha256 (hex) of the options' plain form (kept per options object: PlayerOptions
    is frozen)."""
    got = _OPTIONS.get(id(options))
    if got is None or got[0] is not options:
        if len(_OPTIONS) > 64:
            _OPTIONS.clear()
        got = _OPTIONS[id(options)] = (options, hashlib.sha256(plaindata.encode(_plain_option(options))).hexdigest())
    return got[1]


_OPTIONS: dict = {}


def config_parts(game) -> dict:
    """What ``game`` is set up with, as plain data, part by part: scuffle's version, the
    snapshot format, the engine, the Player's options (a digest of their plain form), the world's step (dt, the root
    motion cap, the reference motion), the anim sets of its humans (their digests, sorted),
    the callback kinds registered, the fight rules' settings (``Fight.config()``) and the
    stateful actions' kinds. Two Games with equal parts run the same inputs to the same
    states; a snapshot file is restored only where they are equal."""
    ctx = game.ctx
    sets = sorted({_set_of(game, ent).digest() for _, ent in game.humans()})
    fight = game.fight
    extras = [f"{type(o).__module__}.{type(o).__qualname__}" for o in stateful(game)]
    return {
        "scuffle": _version(),
        "format": FORMAT,
        "engine": game.engine,
        "options": _options_digest(game.player.options),
        "step": {"dt": float(ctx.dt), "max_root_speed": float(ctx.max_root_speed), "reference": bool(ctx.reference)},
        "sets": sets,
        "callbacks": list(game.player.callbacks.kinds()),
        "fight": None if fight is None else (fight.config() if hasattr(fight, "config") else
                                             f"{type(fight).__module__}.{type(fight).__qualname__}"),
        "actions": extras,
    }


def _set_of(game, ent):
    return game.component(ent, Animator).instance.anim_set


def _version() -> str:
    """scuffle's version (game.runtime.version, which the face re-exports)."""
    return __version__


def stateful(game) -> list:
    """The objects behind the state functions and actions that keep state of their own
    (``save_state`` / ``load_state``: the callable itself, or the owner of a bound
    method; a callable that runs several owners' actions as one names them,
    ``stateful_parts``), each once, in the lists' order; the Game's fight rules are
    saved apart."""
    out, seen = [], {id(game.fight)}
    owners = []
    for fn in (*game.ctx.state_functions, *game.ctx.actions):
        parts = getattr(fn, "stateful_parts", None)
        if parts is not None:                       # several owners' actions as one (fightupdates): each in its place
            owners += parts
        else:
            owners.append(getattr(fn, "__self__", fn))
    for owner in owners:
        if id(owner) in seen:
            continue
        seen.add(id(owner))
        if hasattr(owner, "save_state") and hasattr(owner, "load_state"):
            out.append(owner)
    return out



def config_digest(game) -> str:
    """The sha256 (hex) of ``config_parts(game)`` in the plain form."""
    return config_bytes(game)[1].hex()


def config_bytes(game) -> tuple[bytes, bytes]:
    """``config_parts(game)`` in the plain form and its sha256, computed once per Game and
    again only when its configuration's stamp (``_config_stamp``) moved."""
    stamp = _config_stamp(game)
    cache = cache_of(game)
    got = cache.config
    if got is None or got[0] != stamp:
        cache.clear()                         # the configuration changed: what was made of it goes
        raw = plaindata.encode(config_parts(game))
        got = cache.config = (stamp, raw, hashlib.sha256(raw).digest())
    return got[1], got[2]


def _config_stamp(game) -> tuple:
    """What ``config_parts`` reads, cheaply: equal stamps give equal parts. The humans
    (the names' change count: a human's anim set is given when it is added), the clip
    bank's size, the options object (frozen), the world's step, the callback kinds (in
    registration order), the fight rules (their object and their settings, which a user
    may change between two updates: ``config_key()`` where they give one, equal only
    for equal ``config()``) and the state functions and actions."""
    ctx, player = game.ctx, game.player
    fight = game.fight
    return (game.names.version, len(player.lookup.clips), player.options, ctx.dt, ctx.max_root_speed, ctx.reference,
            tuple(player.callbacks._handlers), fight,
            None if fight is None else fight.config_key() if hasattr(fight, "config_key") else
            fight.config() if hasattr(fight, "config") else None,
            tuple(ctx.state_functions), tuple(ctx.actions))




# ---------------------------------------------------------------- the saved values, plain
def _views_named(game) -> dict[int, str]:
    """``_names_of_views(game)``, kept per Game while its names are the same (the views
    are kept with it, so that no other object takes one's id; a view not found makes it
    again: ``_owners_plain``)."""
    version = game.names.version
    cache = cache_of(game)
    got = cache.views
    if got is None or got[0] != version:
        got = cache.views = (version, _names_of_views(game), _views_of(game))
    return got[1]


def _views_of(game) -> list:
    comps = game._entities
    return [v for ent in game.names.values() if (c := comps.get(ent)) is not None
            for v in (c.get(Body), c.get(Combat)) if v is not None]


def _names_of_views(game) -> dict[int, str]:
    """id(Body or Combat view) -> the human's name."""
    out: dict[int, str] = {}
    comps = game._entities
    for name, ent in game.names.items():
        c = comps.get(ent)
        if c is None:
            continue
        for t in (Body, Combat):
            v = c.get(t)
            if v is not None:
                out[id(v)] = name
    return out


def _owners_plain(owners: dict, views: dict[int, str], what: str, game: Any = None) -> dict:
    out = {}
    for row, view in owners.items():
        name = views.get(id(view))
        if name is None and game is not None:        # a view given since the names last changed
            views = _names_of_views(game)
            cache_of(game).views = None
            name = views.get(id(view))
        if name is None:
            raise S.NoPlainForm(f"{what} row {row} belongs to no human of the Game")
        out[int(row)] = name
    return out


def plain_values(game, st, strict: bool = True, array: Any = None) -> dict:
    """The saved values of snapshot state ``st`` (game.runtime.snapshot._State) but the
    tables' blocks and the last update's outputs, as plain data: the engine's values
    (anim.engine.snapshot.engine_plain), the combat texts, the fight rules' state (the
    file puts its rows' counters in its place: ``_fight_rows``) and each stateful
    action's; the owners are the counts section's (``owner_columns``). Rejected
    (NoPlainForm): the reference engine (its state is its objects), code where a value
    should be. Not ``strict``: code is named by its module and name instead, and entries
    held as objects by their rows."""
    if st.engine != "compiled":
        raise S.NoPlainForm("a snapshot of the reference engine has no byte form (its state is plain Python "
                            "objects); save the compiled engine's")
    return {
        "engine": S.engine_plain(st.engine_state, _name_of_instance, strict, array),
        "combats": {"texts": [str.__str__(t) if isinstance(t, str) else t for t in st.combats[2]]},
        "fight": st.fight,
        "extras": list(st.extras),
    }


def _same(a: Any) -> Any:
    return a


def _name_of_instance(inst) -> str:
    return inst.name


def _meta(game, st) -> dict:
    have = _sets_of(game)
    sets = {name: have[name] if have.get(name) is not None and game.names.get(name) == ent else
            game.component(ent, Animator).instance.anim_set.digest() for name, ent in st.names.items()}
    bank = _bank_bytes(game.player)
    return {"engine": st.engine, "names": {str(k): int(v) for k, v in st.names.items()}, "sets": sets, "bank": bank}


def _meta_bytes(game, st) -> bytes:
    """``_meta`` in the plain form (kept per Game for the state's names and the bank: a
    state's names are its own copy, never changed, and a Game's states share one while its
    names are the same; a human's anim set is given when it is added)."""
    bank = _bank_bytes(game.player)
    cache = cache_of(game)
    got = cache.meta
    if got is None or got[0] is not st.names or got[1] is not bank or got[2] != st.engine:
        got = cache.meta = (st.names, bank, st.engine, plaindata.encode(_meta(game, st)))
    return got[3]


def _sets_of(game) -> dict[str, str]:
    """Each human's anim set digest by name (kept per Game while its names are the same:
    a human's anim set is given when it is added)."""
    version = game.names.version
    cache = cache_of(game)
    got = cache.sets
    if got is None or got[0] != version:
        sets = {name: game.component(ent, Animator).instance.anim_set.digest() for name, ent in game.names.items()}
        got = cache.sets = (version, sets)
    return got[1]


def _facts(player, n: int) -> ClipFacts:
    """The ClipFacts of the first ``n`` clips of the Player's bank (kept while the bank
    and the event rule are the same: derived only)."""
    clips, all_ev = player.lookup.clips, player.stores.cursors.all_events
    key = (id(clips), n, all_ev, id(clips[n - 1]) if n else 0)
    got = _FACTS.get(id(clips))
    if got is None or got[0] != key or got[1] is not clips:
        _FACTS.clear()                      # one Player's at a time: a restore checks against one Game
        got = _FACTS[id(clips)] = (key, clips, clip_facts([cursor_proto(c, all_ev) for c in clips[:n]]))
    return got[2]


_FACTS: dict = {}


def _bank_digests(player) -> list[bytes]:
    from scuffle.anim.data.clip import clip_digest
    return [clip_digest(c) for c in player.lookup.clips]


def _bank_bytes(player) -> bytes:
    """The bank's clips' digests, joined (kept while the bank is the same: clips are
    immutable and the bank only grows)."""
    clips = player.lookup.clips
    key = (len(clips), id(clips[-1]) if clips else 0)
    got = _BANK.get(id(clips))
    if got is None or got[0] != key or got[1] is not clips:
        if len(_BANK) > 16:
            _BANK.clear()
        got = _BANK[id(clips)] = (key, clips, b"".join(_bank_digests(player)))
    return got[2]


_BANK: dict = {}


def _table_of(game, name: str):
    return getattr(game.player.stores, name) if name in (*_ENGINE_TABLES, "humans") else getattr(game.ctx, name)


def _columns_of(t) -> dict:
    return t._all if isinstance(t, Table) else t.COLUMNS


def _game_columns(game) -> dict:
    """Each of the Game's seven saved tables' columns by name (kept per Game: its tables
    and their columns are its own for its life)."""
    cache = cache_of(game)
    got = cache.columns
    if got is None or got[0] is not game.player.stores:
        got = cache.columns = (game.player.stores, {
            name: _columns_of(_table_of(game, name)) for name in (*_ENGINE_TABLES, "humans", "bodies", "combats")})
    return got[1]


def _saved_tables(st) -> dict:
    es = st.engine_state
    return {**{n: es.tables[n] for n in _ENGINE_TABLES}, "humans": es.humans, "bodies": st.bodies[0],
            "combats": st.combats[0]}


def _no_fight_block() -> np.ndarray:
    """The block of a fight table in a Game without fight rules: one row, not in use."""
    return np.zeros(block_layout(_NO_FIGHT, 1)[1], np.uint8)


def _fight_rows(game, st, log: bool = True) -> tuple[list, Any, Any]:
    """The fight rules' tables of state ``st`` as [(name, columns, rows, block)] (the log's
    with ``log``), their counters and the log's (Fight.rows_of, Fight.log_rows:
    game.fighters.fightrows), or tables with no row in use and None, None without fight
    rules. Rejected (NoPlainForm): fight rules that keep a state but no rows of it (for a
    checksum, not ``log``: their state as it is, and no tables)."""
    fight = game.fight
    if st.fight is None:
        blank = _no_fight_block()
        return [(n, _NO_FIGHT, 1, blank) for n in FIGHT_TABLES if log or n != "log"], None, None
    if not hasattr(fight, "rows_of"):
        if not log:                            # a checksum: the state as it is
            return [], st.fight, None
        raise S.NoPlainForm(f"the fight rules {type(fight).__qualname__} keep a state but no rows of it (rows_of)")
    cols = fight.ROW_COLUMNS
    tables, counters = fight.rows_of(st.fight)
    out = [(n, cols[n], cap, block) for n, (cap, block) in tables.items()]
    log_counters = None
    if log:
        cap, block, log_counters = fight.log_rows(st.fight_log)
        out.append(("log", cols["log"], cap, block))
    return out, counters, log_counters


# ---------------------------------------------------------------- the bytes
def encode(game, st) -> bytes:
    """The byte form of snapshot state ``st`` of ``game`` (see the module docstring;
    docs/formats.md, "Snapshot"). Rejected: NoPlainForm (the reference engine, code where
    a value should be: ``_file_engine``), PlainDataError."""
    if st.engine != "compiled":
        raise S.NoPlainForm("a snapshot of the reference engine has no byte form (its state is plain Python "
                            "objects); save the compiled engine's")
    engine, counts = _file_engine(game, st)
    v = {"engine": engine, "combats": None, "fight": None, "extras": st.extras}
    fight, v["fight"], v["fight_log"] = _fight_rows(game, st)
    values = _values_section(game, v, st.combats[2])    # first: it refuses what has no byte form
    config, config_sha = config_bytes(game)
    es = st.engine_state
    saved = [*(es.tables[n] for n in _ENGINE_TABLES), es.humans, st.bodies[0], st.combats[0]]
    # the tables' pack plan, section keys and heads, kept per Game while its tables'
    # columns (the seven's: the Game's, in _game_columns' order) and capacities are the same
    caps = [int(ts.capacity) for ts in saved] + [t[2] for t in fight]
    fcols = [t[1] for t in fight]
    cols = _game_columns(game)
    cache = cache_of(game)
    kept = cache.packing
    if kept is None or kept[0] != caps or kept[2] is not cols or len(kept[1]) != len(fcols) or \
            any(a is not b for a, b in zip(kept[1], fcols)):
        names = [*cols, *(t[0] for t in fight)]
        layouts = [*zip(cols.values(), caps), *((t[1], t[2]) for t in fight)]
        kept = cache.packing = (caps, fcols, cols, pack_plan(layouts),
                                [(_TABLE_KEY[n], _table_head(c, cap)) for n, (c, cap) in zip(names, layouts)])
    packed, ends = pack_with(kept[3], [*(ts.block for ts in saved), *(t[3] for t in fight)])
    raw = packed.data
    # (assemble's form, written here in one pass: the plain sections, then each table's
    # head and its packed rows, which lie one after another in ``raw``)
    parts: list = [b"", config, _meta_bytes(game, st), counts, values]
    off = _ENTRY.size * (len(_PLAIN_KEYS) + len(caps))
    entries: list = []
    for key, data in zip(_PLAIN_KEYS, parts[1:]):
        n = len(data)
        entries += (key, off, n)
        off += n
    start = 0
    for (key, head), end in zip(kept[4], ends.tolist()):
        n = len(head) + end - start
        entries += (key, off, n)
        parts += (head, raw[start:end])
        off += n
        start = end
    parts[0] = _directory(len(entries) // 3).pack(*entries)
    payload = b"".join(parts)
    return HEADER.pack(MAGIC, FORMAT, HEADER.size, _VERSION_FIELD, config_sha, len(entries) // 3, 0, off,
                       zlib.crc32(payload)) + payload


_SECTION_NAME = {name: f"table.{name}" for name in TABLES}
_TABLE_KEY = {name: f"table.{name}".encode("ascii") for name in TABLES}
_PLAIN_KEYS = (b"config", b"meta", b"counts", b"values")      # the plain sections, in the file's order
_VERSION_FIELD = _version().encode("ascii")[:16]
_TABLE_SECTIONS = frozenset(_SECTION_NAME.values())
_U32 = struct.Struct("<I")


def _values_section(game, v: dict, texts: list) -> bytes:
    """The values section (``values_section``'s form) of ``v`` (``combats``: {"texts":
    ``texts``}). What a Game gives again and again is encoded again only when it changed
    (its SnapCache keeps the last bytes): the stateful actions' states while they are the
    objects encoded last (an action gives its last state again while nothing changed, and
    a state is never written to), the combat texts while they are equal to the last (they
    only grow)."""
    extras = v["extras"]
    cache = cache_of(game)
    got = cache.extras_bytes
    if got is None or len(got[0]) != len(extras) or not all(a is b for a, b in zip(got[0], extras)):
        got = cache.extras_bytes = (tuple(extras), plaindata.encode(extras))
    kept = cache.texts_bytes
    if kept is None or kept[0] != texts:
        kept = cache.texts_bytes = (list(texts), plaindata.encode({"texts": [str.__str__(t) for t in texts]}))
    engine = v["engine"]
    plain = cache.engine_bytes
    if plain is None or plain[0] is not engine:         # (_file_engine's kept values: their bytes kept too)
        plain = cache.engine_bytes = (engine, plaindata.encode(engine))
    blobs = (plain[1], kept[1], _fight_bytes(cache, v["fight"]), got[1], _log_bytes(cache, v["fight_log"]))
    last = cache.values_bytes                           # (the same values' bytes as the last section's: it)
    if last is not None and all(a is b for a, b in zip(last[0], blobs)):
        return last[1]
    cache.values_bytes = (blobs, _values_joined(blobs))
    return cache.values_bytes[1]


def _fight_bytes(cache: SnapCache, c: Any) -> bytes:
    """The plain form of the fight's counters (fightrows.rows_of's), kept in ``cache`` and
    given again while they are the same: the same whole numbers, the same damage to the
    bit, counts by kind equal (whole numbers by text), no finished round and no plain
    controller state (else encoded again); the very counters encoded last (fightrows.rows_of
    gives them again while they are the same) at once."""
    got = cache.fight_bytes
    if got is not None and got[3] is c and c is not None:
        return got[2]
    if c is None or c["rounds"] or any(x is not None for x in c["controllers"]):
        return plaindata.encode(c)
    ko_at, counts, damage = c["ko_at"], c["counts"], c["damage"]
    if not (ko_at is None or ko_at.__class__ is int) or not all(x.__class__ is int for x in counts) or \
            damage.__class__ is not float:
        return plaindata.encode(c)
    key = (ko_at, tuple(counts), _F64.pack(damage), len(c["controllers"]))
    kinds = tuple(c["kinds"].items())
    if not all(n.__class__ is int for _, n in kinds):
        return plaindata.encode(c)
    if got is not None and got[0] == key and got[1] == kinds:     # (whole numbers equal in order: the same bytes)
        cache.fight_bytes = (got[0], got[1], got[2], c)
        return got[2]
    raw = plaindata.encode(c)
    cache.fight_bytes = (key, kinds, raw, c)
    return raw


_F64 = struct.Struct("<d")


def _log_bytes(cache: SnapCache, c: Any) -> bytes:
    """The plain form of the log's counters ([head, count, texts]), its texts' bytes kept in
    ``cache`` while they are equal to the last (a log's texts only grow)."""
    if c is None or not (c[0].__class__ is int and c[1].__class__ is int):
        return plaindata.encode(c)
    texts = c[2]
    got = cache.log_bytes
    if got is None or got[0] != texts:
        got = cache.log_bytes = (list(texts), plaindata.encode([str.__str__(t) for t in texts]), None)
    elif got[2] is not None and got[2][0] == c[0] and got[2][1] == c[1]:
        return got[2][2]                              # (the same head and count: the same bytes)
    raw = b"".join((_LOG_HEAD, plaindata.encode(c[0]), plaindata.encode(c[1]), got[1]))
    cache.log_bytes = (got[0], got[1], (c[0], c[1], raw))
    return raw


_LOG_HEAD = b"\x08" + struct.pack("<I", 3)


# The values section: a plain map of VALUES' names, in that order, each to the plain bytes of
# its value (so that a reader decodes again only the values whose bytes changed since the
# last file it read: the texts, the kinds and the stateful actions' states rarely do)
VALUES = ("engine", "combats", "fight", "extras", "fight_log")
_VALUES_HEAD = b"\x0a" + _U32.pack(len(VALUES))
_VALUES_KEYS = tuple(plaindata.encode(k) + b"\x07" for k in VALUES)


def _values_joined(blobs: tuple) -> bytes:
    parts = [_VALUES_HEAD]
    for key, blob in zip(_VALUES_KEYS, blobs):
        parts += (key, _U32.pack(len(blob)), blob)
    return b"".join(parts)


def values_section(v: dict) -> bytes:
    """A values section from its values (``values_of``'s dict: a tool's or a test's edit
    written back), VALUES' names in order."""
    return _values_joined(tuple(plaindata.encode(v[k]) for k in VALUES))


def values_of(sec: bytes, kept: bool = False) -> dict:
    """The values section read back: {name: value} of VALUES, each decoded (a tool's or a
    test's: its own objects to edit). ``kept`` (``parse``'s): each value kept with its
    bytes, so that the same bytes as the last read give the same value, which no reader
    writes to (a state's values are only ever read). Rejected (_Refused naming the field): a section that is not a map of VALUES'
    names to bytes, a value's bytes that are not one plain value."""
    whole = _VALUES_WHOLE[0]
    if kept and whole is not None and whole[0] == sec:      # (the section of the last file read: its values)
        return dict(whole[1])
    try:
        outer = plaindata.decode(sec)
    except plaindata.PlainDataError as e:
        raise _Refused(f"section values: {e}") from None
    if not (outer.__class__ is dict and len(outer) == len(VALUES) and all(
            outer.get(k).__class__ is bytes for k in VALUES)):
        raise _Refused(f"section values: not a map of {', '.join(VALUES)} to their bytes")
    out = {}
    last = _VALUES_READ if kept else {}
    for k in VALUES:
        raw = outer[k]
        got = last.get(k)
        if got is not None and got[0] == raw:
            out[k] = got[1]
            continue
        try:
            val = plaindata.decode(raw)
        except plaindata.PlainDataError as e:
            raise _Refused(f"values.{k}: {e}") from None
        last[k] = (raw, val)
        out[k] = val
    if kept:
        _VALUES_WHOLE[0] = (sec, dict(out))
    return out


# name -> (the bytes of the value read last, the value): ``values_of``'s
_VALUES_READ: dict = {}
_VALUES_WHOLE: list = [None]      # (the values section read last, its values): ``values_of``'s


def _file_engine(game, st) -> tuple[dict, bytes]:
    """(the engine's values a file holds, the counts section) of snapshot state ``st``:
    the callbacks' values, the step's lists, the leaving humans, the humans by row and the
    loose humans as plain data (anim.engine.snapshot.engine_plain's, strict), and the
    human table's generations and free list, the callbacks' uses and free ids, the
    deferred list, the pool, the step's counts, the batch's counters and the body and
    combat rows' owners as the counts section's columns, read from the saved lists as
    they are (no array made of a list only to be written). Rejected (NoPlainForm): as
    engine_plain (code where a callback should be, a human removed whose tasks wait for the
    flush, the step's entries pending, a direction task made with a make_cursor)."""
    es = st.engine_state
    ts = es.tables["tasks"]
    lay = _task_layout(ts.capacity)
    off, dt, shape = lay["type"]
    # a direction task's row (rare: the check over the rows in use then); the type column
    # is one byte a row, searched as bytes
    assert dt.itemsize == 1
    if ts.block.data[off:off + shape[0]].tobytes().find(_DIRECTION_BYTE) >= 0:
        S.engine_plain(es, _name_of_instance, True)
    h = es.humans
    pool, (rows, odd), (refused, wraps, failed), stepped, stats, (values, uses, free) = es.player
    if odd:
        raise S.NoPlainForm("a human removed since the last update still has tasks waiting for the flush: step "
                            "once, then save the byte form")
    if wraps or failed:
        raise S.NoPlainForm("the step's wrap callbacks or failures are pending: save between two updates")
    kernel_humans, pair_changes, leaving, instances = es.batch
    bodies, combats = owner_columns(game, st.names, (st.bodies[1], st.bodies[0].capacity),
                                    (st.combats[1], st.combats[0].capacity))
    counts = counts_raw(h.gen, h.free, uses, free, np.asarray(rows, _I8).reshape(-1, 2) if len(rows) else _NO_PAIRS,
                        bodies, combats, pool[0], int(pool[1]), (int(stats[0]), int(stats[1])), int(kernel_humans),
                        int(pair_changes), st.updates_run, st.update, st.entity_next)
    # the engine's values as the last file wrote them while they are the same objects (a
    # saved state's lists are never written to; the callbacks table and the step give the
    # same lists again while nothing changed), the humans sit on the same rows (each row's
    # instance serial: an instance's serial is never another's) and no human leaves or
    # waits for a row
    seats = instances[1].tobytes() if instances.__class__ is tuple else None
    cache = cache_of(game)
    got = cache.engine
    if got is not None and got[0] is values and got[1] is stepped and seats is not None and got[2] == seats and \
            not leaving and not es.loose:
        return got[3], counts
    calls: list[Any] = []
    for i, x in enumerate(values):
        if x.__class__ is Callback:
            calls.append((x.kind, tuple(x.args)))
        elif x.__class__ is str:
            calls.append(("", x))
        else:
            calls.append(S.callback_plain(x, f"calls[{i}]", True))
    loose = [(inst.name, (int(v[0]), int(v[1]), int(v[2]), float(v[3]),
                          S.callback_plain(v[4], f"{inst.name}.on_report", True)))
             for inst, v in ((x if x.__class__ is not int else S.instance_of(x), v) for x, v in es.loose)] \
        if es.loose else []
    engine = {"calls": {"values": calls},
              "stepped": [np.asarray(r, np.int64) for r in stepped],
              "leaving": [(int(r), int(g)) for r, g in leaving],
              "instances": [None if i is None else i.name for i in S.seated(instances)],
              "loose": loose}
    cache.engine = (values, stepped, seats, engine) if not leaving and not loose and seats is not None else None
    return engine, counts


_NO_PAIRS = np.zeros((0, 2), np.int64)
_DIRECTION_BYTE = bytes([EIGHT_CLIPS_TYPE])       # a direction task's type, as its byte


def _task_layout(cap: int) -> dict:
    """The task table's block layout at ``cap`` rows (kept per capacity: derived only)."""
    got = _TASK_LAYOUTS.get(cap)
    if got is None:
        from scuffle.anim.engine.store import task_table
        if len(_TASK_LAYOUTS) > 16:
            _TASK_LAYOUTS.clear()
        got = _TASK_LAYOUTS[cap] = block_layout(task_table(1)._all, cap)[0]
    return got


_TASK_LAYOUTS: dict = {}


def owner_columns(game, names: dict, bodies: tuple, combats: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The body and combat tables' owners ((row -> view, the table's rows) each) as entity
    columns: per row of the table, the entity (``names``: name -> entity) of the human
    whose view owns it, -1 for a row owned by none. Rejected (NoPlainForm): a row owned by
    a view of no human of the Game. The columns of the last call are given again (the same
    arrays, which no caller writes to) while the names are the same object at the same
    change of the Game's names and each row has the same view (kept in the Game's
    SnapCache: a state's names and owners are copies, never changed)."""
    cache = cache_of(game)
    got = cache.owners
    version = game.names.version
    if got is not None and got[0] is names and got[1] == version and _same_owners(got[2], bodies) and \
            _same_owners(got[3], combats):
        return got[4]
    views = _views_named(game)
    out = []
    for (owners, cap), what in ((bodies, "body"), (combats, "combat")):
        col = [-1] * int(cap)
        for row, name in _owners_plain(owners, views, what, game).items():
            col[row] = names[name]
        out.append(np.array(col, _I8))
    cache.owners = (names, version, (tuple(bodies[0].items()), bodies[1]), (tuple(combats[0].items()), combats[1]),
                    (out[0], out[1]))
    return out[0], out[1]


def _same_owners(kept: tuple, now: tuple) -> bool:
    """The owners ``now`` ((row -> view, rows)) the same rows, views (the objects) and
    rows as ``kept`` ((row, view) pairs, rows)."""
    items, cap = kept
    owners = now[0]
    if cap != now[1] or len(items) != len(owners):
        return False
    for row, view in items:
        if owners.get(row) is not view:
            return False
    return True


_I8 = np.dtype("<i8")


def counts_section(c: dict) -> bytes:
    """A counts section from its fields (``counts_of``'s dict: a tool's or a test's
    edit written back)."""
    lists = [np.asarray(c[n], _I8) for n in COUNT_LISTS]
    flags = np.asarray(c["pool.out"]).astype(np.uint8)
    head = _COUNTS_HEAD.pack(*(len(a) for a in lists), len(flags), *(c[n] for n in COUNTERS))
    return b"".join((head, *(a.tobytes() for a in lists), flags.tobytes()))


def counts_of(sec: bytes) -> dict:
    """The counts section read back: {name: int64 array} for ``COUNT_LISTS`` (the
    deferred pairs' of shape (n, 2)), "pool.out" (bools) and {name: int} for
    ``COUNTERS``. Rejected (_Refused naming the field): a section shorter than its head,
    lengths that do not add up to its size exactly (checked before anything is
    allocated), a pool flag that is not 0 or 1."""
    if len(sec) < _COUNTS_HEAD.size:
        raise _Refused(f"section counts: {len(sec)} bytes, shorter than its {_COUNTS_HEAD.size}-byte head")
    got = _COUNTS_HEAD.unpack_from(sec)
    k = len(COUNT_LISTS)
    lens, n_pool = got[:k], got[k]
    # (every list's items are one int64, a deferred pair's two: _WIDTH)
    words = sum(lens) + lens[_PAIRS_AT]
    size = _COUNTS_HEAD.size + 8 * words + n_pool
    if size != len(sec):
        raise _Refused(f"section counts: lengths {short(got[:k + 1])} take {size} bytes, the section holds {len(sec)}")
    out: dict[str, Any] = dict(zip(COUNTERS, got[k + 1:]))
    off = _COUNTS_HEAD.size
    # the lists lie one after the other: one copy of their int64 items, each list a view of it
    items = np.frombuffer(sec, _I8, words, off).astype(np.int64)
    at = 0
    for name, n in zip(COUNT_LISTS, lens):
        if name == "deferred":
            out[name] = items[at:at + 2 * n].reshape(n, 2)
            at += 2 * n
        else:
            out[name] = items[at:at + n]
            at += n
    off += 8 * words
    flags = bytes(sec[off:off + n_pool])
    if flags.translate(None, b"\0\1"):                     # (a byte other than 0 and 1)
        raise _Refused(f"counts.pool.out[{next(i for i, x in enumerate(flags) if x > 1)}]: a flag that is not 0 or 1")
    out["pool.out"] = np.frombuffer(flags, np.bool_).copy()
    for name in ("updates_run", "update", "entity_next"):
        if not 0 <= out[name] <= MAX_COUNTER:                 # (int64s: whole numbers)
            need_int(out[name], f"counts.{name}", 0, MAX_COUNTER)
    return out


def _table_head(columns: dict, cap: int) -> bytes:
    """A table section's head: its rows, its declaration's length and the declaration
    (kept per columns object and rows: a table's columns are one dict for its life)."""
    got = _TABLE_HEADS.get((id(columns), cap))
    if got is None or got[0] is not columns:
        head = _declared_bytes(columns)
        if len(_TABLE_HEADS) > 256:
            _TABLE_HEADS.clear()
        got = _TABLE_HEADS[(id(columns), cap)] = (columns, _TABLE_HEAD.pack(cap, len(head)) + head)
    return got[1]


_TABLE_HEADS: dict = {}


def payload_digest(payload: Any) -> int:
    """The header's digest of ``payload`` (the bytes after the header): their CRC-32."""
    return zlib.crc32(payload)


def assemble(sections: list[tuple[str, Any]], version: str, config: bytes) -> bytes:
    """A file from its sections (name, bytes, or a tuple of byte strings one after the
    other) in order: the header (its sizes and the payload's digest computed here) and
    the directory before them."""
    entries: list = []
    body: list = []
    off = _ENTRY.size * len(sections)
    for name, data in sections:
        if data.__class__ is tuple:
            n = 0
            for part in data:
                n += len(part)
            body += data
        else:
            n = len(data)
            body.append(data)
        entries += (_SECTION_KEY.get(name) or name.encode("ascii"), off, n)
        off += n
    payload = b"".join((_directory(len(sections)).pack(*entries), *body))
    return HEADER.pack(MAGIC, FORMAT, HEADER.size, version.encode("ascii")[:16], config, len(sections), 0, off,
                       zlib.crc32(payload)) + payload


_SECTION_KEY = {name: name.encode("ascii") for name in SECTIONS}


def sections_of(data: bytes) -> tuple[str, bytes, list[tuple[str, bytes]]]:
    """(version, config digest, the sections in file order) of a file that frames
    (``parse`` checks it first): what ``assemble`` takes back."""
    parse(data)
    _, _, _, version, config, count, _, _, _ = HEADER.unpack_from(data)
    payload = data[HEADER.size:]
    out = []
    for i in range(count):
        raw, off, length = _ENTRY.unpack_from(payload, i * _ENTRY.size)
        out.append((raw.rstrip(b"\0").decode("ascii"), payload[off:off + length]))
    return version.rstrip(b"\0").decode("ascii"), config, out


# the last meta section read and its value, checked (read only: a Parsed's meta is a copy
# of it with the update counters)
_META_READ: list = [None]
_CONFIG_READ: list = [None]       # the last config section read and its sha256

# a directory entry's name field (NUL-padded) -> the section's name
_SECTION_OF = {name.encode("ascii").ljust(16, b"\0"): name for name in SECTIONS}


def _directory(count: int) -> struct.Struct:
    """The struct of a directory of ``count`` entries (kept per count)."""
    got = _DIRECTORIES.get(count)
    if got is None:
        got = _DIRECTORIES[count] = struct.Struct("<" + "16sQQ" * count)
    return got


_DIRECTORIES: dict[int, struct.Struct] = {}


def _spans(entries: tuple, count: int, low: int, size: int) -> list[tuple[int, int, str]]:
    """The sections' (start, end, name) in the payload, in file order, of a directory's
    ``count`` entries (name, offset, size each) after the directory's ``low`` bytes in a
    payload of ``size``. Rejected (_Refused naming the entry): a name that is not a
    section of this format, a section twice or missing, one outside the payload, two
    that overlap."""
    found: set = set()
    spans = []
    for i in range(count):
        raw, off, length = entries[3 * i:3 * i + 3]
        name = _SECTION_OF.get(raw)
        if name is None:
            try:
                name = raw.rstrip(b"\0").decode("ascii")
            except UnicodeDecodeError:
                raise _Refused(f"directory[{i}].name: not ASCII") from None
            raise _Refused(f"directory[{i}].name: {short(name)} is not a section of format {FORMAT}")
        if name in found:                  # (no need(): its message would be made for every entry)
            raise _Refused(f"directory[{i}].name: section {name!r} twice")
        if not (low <= off and off + length <= size):
            raise _Refused(f"directory[{i}] ({name}): offset {off} and size {length} outside the payload")
        found.add(name)
        spans.append((off, off + length, name))
    order = sorted(spans)
    for a, b in zip(order, order[1:]):
        if a[1] > b[0]:
            raise _Refused(f"section {b[2]}: overlaps section {a[2]}")
    if len(found) != len(SECTIONS):                  # (each name found is a section's, once)
        missing = next(name for name in SECTIONS if name not in found)
        raise _Refused(f"directory: no section {missing!r}")
    return spans


# the last directory read, the payload's size and its sections' spans, checked
_DIRECTORY_READ: list = [None]


@dataclass(slots=True)
class Parsed:
    """A snapshot file read and framed (``parse``): nothing checked against a Game yet."""

    version: str                  # the scuffle version that wrote it
    config: bytes                 # its Game's configuration digest (32 bytes)
    config_parts: bytes           # the configuration itself (plain data, decoded only to say what differs)
    meta: dict
    values: dict
    values_bytes: bytes           # the values section as written (the checksum hashes it)
    tables: dict                  # name -> (rows, the columns' declaration (plain bytes), the packed block)
    counts: dict                  # the counts section read (``counts_of``): checked against a Game by to_state
    meta_bytes: bytes             # the meta section as written (a Game keeps its check of the last one)
    counts_bytes: bytes = b""     # the counts section as written (the checksum hashes it)
    heads: tuple = ()             # each table's rows and declaration, TABLES' order, one after another


def parse(data: bytes) -> Parsed:
    """Frame ``data`` (from ``encode``): the header (magic, format, sizes, digest), the
    directory (each known section once, inside the payload, none overlapping), the plain
    sections and the tables' headers. Rejected (_Refused, naming the byte offset or the
    section and field): anything else. Nothing is allocated beyond the data's own size."""
    # (each message is made only when its check fails: parse runs at every file read)
    n = len(data)
    if n < HEADER.size:
        raise _Refused(f"header: {n} bytes, shorter than the {HEADER.size}-byte header at offset 0 (truncated)")
    magic, fmt, hsize, version, config, count, flags, size, digest = HEADER.unpack_from(data)
    if not (magic == MAGIC):
        raise _Refused(f"header.magic: {short(magic)} at offset 0 is not {MAGIC!r} (not a scuffle snapshot)")
    if fmt != FORMAT:
        raise _Refused(f"header.format: format {fmt} at offset 8; this scuffle reads format {FORMAT}" +
                       (" (an older scuffle's file: take the snapshot again with this version)"
                        if 1 <= fmt < FORMAT else ""))
    if hsize != HEADER.size:
        raise _Refused(f"header.size: {hsize} at offset 12, expected {HEADER.size}")
    if flags != 0:
        raise _Refused(f"header.flags: {flags} at offset 68, expected 0")
    if size != n - HEADER.size:
        raise _Refused(f"header.payload: {size} bytes at offset 72, the file holds {n - HEADER.size} after the "
                       "header (truncated or padded)")
    if not 1 <= count <= MAX_SECTIONS:
        raise _Refused(f"header.sections: {count} sections at offset 64 (1-{MAX_SECTIONS})")
    payload = memoryview(data)[HEADER.size:]
    if zlib.crc32(payload) != digest:
        raise _Refused("header.crc32: the payload's CRC-32 differs from the header's (offset 80): corrupted")
    try:
        ver = version.rstrip(b"\0").decode("ascii")
    except UnicodeDecodeError:
        raise _Refused("header.scuffle: not ASCII") from None
    if _ENTRY.size * count > size:
        raise _Refused(f"directory: {count} entries do not fit the payload")
    whole = memoryview(data)
    low = _ENTRY.size * count
    directory = data[HEADER.size:HEADER.size + low]
    kept = _DIRECTORY_READ[0]
    if kept is not None and kept[0] == directory and kept[1] == size:
        spans = kept[2]                               # (the directory of the last file read: checked then)
    else:
        spans = _spans(_directory(count).unpack_from(directory), count, low, size)
        _DIRECTORY_READ[0] = (directory, size, spans)
    found: dict[str, Any] = {}
    for start, end, name in spans:
        # (a table's rows are read where they lie in the file; the plain sections are copied)
        found[name] = (whole if name in _TABLE_SECTIONS else data)[HEADER.size + start:HEADER.size + end]
    meta_raw = found["meta"]
    last = _META_READ[0]
    if last is not None and last[0] == meta_raw:    # the meta of the last file read (checked below then)
        meta = last[1]
    else:
        try:
            meta = plaindata.decode(meta_raw)
        except plaindata.PlainDataError as e:
            raise _Refused(f"section meta: {e}") from None
    values = values_of(found["values"], kept=True)
    if last is None or meta is not last[1]:
        need(isinstance(meta, dict), "meta", "not a map")
        need(meta.get("engine").__class__ is str, "meta.engine", "not an engine's name")
        names = meta.get("names")
        need(isinstance(names, dict) and all(k.__class__ is str for k in names), "meta.names", "not a map of names")
        need(not _COUNTER_KEYS & meta.keys(), "meta", "update counters (the counts section holds them)")
        _META_READ[0] = (meta_raw, meta)
    need(isinstance(values, dict), "values", "not a map")
    counts = counts_of(found["counts"])
    # (the update counters where a snapshot's readers find them)
    meta = {**meta, "updates_run": counts["updates_run"], "update": counts["update"],
            "entity_next": counts["entity_next"]}
    tables = {}
    heads: list[Any] = []
    head = _TABLE_HEAD.size
    for name in TABLES:
        sec = found[_SECTION_NAME[name]]
        if len(sec) < head:
            raise _Refused(f"section table.{name}: shorter than its header")
        rows, hl = _TABLE_HEAD.unpack_from(sec)
        if not 1 <= rows <= 1 << 28:
            raise _Refused(f"section table.{name}.rows: {rows} rows (1 to 2^28)")
        if head + hl > len(sec):
            raise _Refused(f"section table.{name}: a declaration of {hl} bytes past the section's end")
        # the declaration is checked against a Game's layout (to_state); the rows are read
        # from the section's bytes where they lie
        decl = bytes(sec[head:head + hl])
        tables[name] = (rows, decl, sec[head + hl:])
        heads += (rows, decl)
    conf = found["config"]
    last_c = _CONFIG_READ[0]
    if last_c is None or last_c[0] != conf:
        last_c = _CONFIG_READ[0] = (conf, hashlib.sha256(conf).digest())
    need(last_c[1] == config, "section config",
         "not the configuration the header's digest names")
    return Parsed(ver, config, found["config"], meta, values, found["values"], tables, counts, found["meta"],
                  found["counts"], tuple(heads))


# ---------------------------------------------------------------- checked against a Game
class _Rows:
    """A checked block's arrays by name (a scratch table: no handles, no fast views,
    nothing of the world's), each made when first read. ``_Rows(columns, cap, block)``
    gives an instance of the layout's own subclass, whose columns are descriptors."""

    __slots__ = ("capacity", "block", "__dict__")
    capacity: int
    block: np.ndarray
    live: np.ndarray                   # (a descriptor of the layout's subclass)

    def __new__(cls, columns: dict, cap: int, block: np.ndarray):
        sub = cls if cls is not _Rows else _rows_class(columns, cap)
        obj: _Rows = object.__new__(sub)
        obj.capacity, obj.block = cap, block
        return obj

    def __init__(self, columns: dict, cap: int, block: np.ndarray):
        pass


class _Column:
    """A column of a _Rows subclass: its view of the block, made at the first read and
    then kept in the instance (a non-data descriptor: the instance's dict wins after)."""

    __slots__ = ("name", "off", "dt", "shape")

    def __init__(self, name: str, off: int, dt: np.dtype, shape: tuple):
        self.name, self.off, self.dt, self.shape = name, off, dt, shape

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        a = obj.__dict__[self.name] = np.ndarray(self.shape, self.dt, obj.block, self.off)
        return a


def _rows_at(cls: type, cap: int, block: np.ndarray) -> "_Rows":
    """A scratch table of _Rows subclass ``cls`` (``_rows_class``) over ``block``."""
    obj: Any = object.__new__(cls)
    obj.capacity, obj.block = cap, block
    return obj


def _rows_class(columns: dict, cap: int) -> type:
    """The _Rows subclass of a layout (kept per columns object and rows)."""
    key = (id(columns), cap)
    got = _ROWS_CLASSES.get(key)
    if got is None or got[0] is not columns:
        lay = _layout_of(columns, cap)
        cls = type("_Rows", (_Rows,), {"__slots__": (), **{n: _Column(n, off, dt, shape)
                                                             for n, (off, dt, shape) in lay.items()
                                                             if n not in ("capacity", "block")}})
        if len(_ROWS_CLASSES) > 256:
            _ROWS_CLASSES.clear()
        got = _ROWS_CLASSES[key] = (columns, cls)
    return got[1]


_ROWS_CLASSES: dict = {}


_LAYOUTS: dict = {}                # (id of the columns, capacity) -> store.block_layout's: derived only


def _layout_full(columns: dict, cap: int) -> tuple:
    key = (id(columns), cap)
    got = _LAYOUTS.get(key)
    if got is None or got[0] is not columns:
        if len(_LAYOUTS) > 256:
            _LAYOUTS.clear()
        got = _LAYOUTS[key] = (columns, block_layout(columns, cap))
    return got[1]


def _layout_of(columns: dict, cap: int) -> dict:
    return _layout_full(columns, cap)[0]


def _block_size(columns: dict, cap: int) -> int:
    return _layout_full(columns, cap)[1]


def _saved(game, name: str, rows: int, cols: bytes, block: bytes) -> Saved:
    """Table ``name``'s saved rows (packed) for the checks, after checking that the declared
    columns are this Game's (their size is checked as they are unpacked: check_saved)."""
    live = _table_of(game, name)
    want = _columns_of(live)
    where = f"table.{name}"
    if cols != _declared_bytes(want):
        mine = _declared(want)
        try:
            declared = plaindata.decode(cols)
        except plaindata.PlainDataError as e:
            raise _Refused(f"{where}.columns: {e}") from None
        need(isinstance(declared, list), f"{where}.columns", "not a list")
        for i, c in enumerate(declared):
            need(isinstance(c, tuple) and len(c) == 3 and isinstance(c[0], str) and isinstance(c[1], str)
                 and isinstance(c[2], list), f"{where}.columns[{i}]", "not (name, dtype, shape)")
        diff = next((f"{short(a)} where this engine has {short(b)}" for a, b in zip(declared, mine) if a != b),
                    f"{len(declared)} columns where this engine has {len(mine)}")
        raise _Refused(f"{where}.columns: {diff} (another version's layout)")
    return Saved(want, rows, block, _blank(live, want, rows))


def _saved_all(game, tables: dict, fight_rules: Any, config_sha: bytes, heads: tuple = ()) -> list[Saved]:
    """``_saved`` of each of ROW_TABLES and ``_saved_fight`` of each of FIGHT_TABLES of a
    parsed file's ``tables`` (``heads``: their rows and declarations, Parsed.heads):
    checked once per Game for each rows and declarations met (a table's columns and
    defaults are its own for its life; the fight rules' are theirs for their settings,
    which the configuration's digest covers), then taken as they were while the file's
    are the same."""
    st, ctx = game.player.stores, game.ctx
    if len(heads) != 2 * len(TABLES):
        heads = tuple(x for name in TABLES for x in tables[name][:2])
    key = (st, ctx.bodies, ctx.combats, fight_rules, config_sha, heads)
    cache = cache_of(game)
    got = cache.saved
    if got is not None and got[0] == key:
        new = tuple.__new__                       # (Saved's own __new__ is a Python call more a table)
        return [new(Saved, (c, t[0], t[2], b)) for (c, b), t in zip(got[1], map(tables.__getitem__, TABLES))]
    saved = [*(_saved(game, name, *tables[name]) for name in ROW_TABLES),
             *(_saved_fight(fight_rules, name, *tables[name]) for name in FIGHT_TABLES)]
    # (with each table's _Rows class: the scratch tables' columns read by name)
    cache.saved = (key, [(sv.columns, sv.blank) for sv in saved],
                   [_rows_class(sv.columns, sv.capacity) for sv in saved])
    return saved


def _saved_fight(fight, name: str, rows: int, cols: bytes, block: bytes) -> Saved:
    """Fight table ``name``'s saved rows for the checks, after checking its rows and
    columns against the Game's fight rules (``ROW_COLUMNS``, ``row_limits``; without
    fight rules: one row of a live column)."""
    where = f"table.{name}"
    fcols = getattr(fight, "ROW_COLUMNS", None)
    want = fcols[name] if fcols is not None else _NO_FIGHT
    lo, hi = fight.row_limits(name) if fcols is not None else (1, 1)
    if not lo <= rows <= hi:
        raise _Refused(f"{where}.rows: {rows} rows, where this Game's fight rules take {lo} to {hi}")
    if cols != _declared_bytes(want):
        raise _Refused(f"{where}.columns: not the columns of this Game's fight rules (another version's layout, "
                       "or a Game set up otherwise)")
    return Saved(want, rows, block, _blank(None, want, rows))


_NO_FIGHT_RULES: dict[str, dict[str, Any]] = {name: {} for name in FIGHT_TABLES}


def _blank(table, columns: dict, cap: int) -> np.ndarray:
    """A block of ``cap`` rows of ``table``'s layout with every row as a free row holds it
    (a table with defaults: each column at its default; else 0), the file's rows in use
    written over it (kept per layout, capacity and defaults, never the table itself:
    derived only)."""
    given = getattr(table, "_defaults", None) or _NO_DEFAULTS
    key = (id(columns), cap)
    got = _BLANKS.get(key)
    if got is not None and got[0] is columns and got[3] is given and got[4] == len(given):
        return got[2]
    defaults = tuple(given.items())
    if got is None or got[0] is not columns or got[1] != defaults:
        lay, size = _layout_full(columns, cap)
        block = np.zeros(size, np.uint8)
        for name, value in defaults:
            if value and name in lay:
                off, dt, shape = lay[name]
                n = dt.itemsize
                for k in shape:
                    n *= k
                block[off:off + n].view(dt).reshape(shape)[...] = value
        if len(_BLANKS) >= 48:                  # a few Games' eleven tables
            _BLANKS.clear()
    else:
        block = got[2]
    _BLANKS[key] = (columns, defaults, block, given, len(given))       # (the defaults' items compared once)
    return block


_NO_DEFAULTS: dict = {}


_BLANKS: dict = {}


def table_block(section: bytes) -> tuple[int, bytes, dict, np.ndarray]:
    """(rows, the declaration's bytes, the columns declared, the block) of a table section
    as ``encode`` writes it: the packed rows unpacked, a free row's columns 0 (a tool's
    and a test's view of a file; ``table_section`` writes one back)."""
    rows, hl = _TABLE_HEAD.unpack_from(section)
    raw = bytes(section[_TABLE_HEAD.size:_TABLE_HEAD.size + hl])
    columns = _declared_columns(raw, "table")
    try:
        block = unpack(columns, rows, section[_TABLE_HEAD.size + hl:])
    except StateError as e:
        raise _Refused(str(e)) from None
    return rows, raw, columns, block


def table_section(rows: int, raw: bytes, columns: dict, block: np.ndarray) -> bytes:
    """A table section from its rows, declaration and block (``table_block`` undone)."""
    return _TABLE_HEAD.pack(rows, len(raw)) + raw + pack(columns, rows, block).tobytes()


def _declared(columns: dict) -> list:
    """The columns as a file declares them: (name, base dtype, inner shape) each."""
    key = tuple(columns)
    got = _DECLARED.get(key)
    if got is None or got[0] != columns:
        got = _DECLARED[key] = (dict(columns), [(c, np.dtype(d).base.str, list(np.dtype(d).shape))
                                                for c, d in columns.items()])
    return got[1]


_DECLARED: dict = {}


def _declared_bytes(columns: dict) -> bytes:
    """``_declared`` in the plain form (kept: what a file of this layout holds; a table's
    columns are one dict for its life)."""
    got = _DECLARED_BYTES.get(id(columns))
    if got is None or got[0] is not columns:
        key = ("bytes", tuple(columns))
        got = _DECLARED.get(key)
        if got is None or got[0] != columns:
            got = _DECLARED[key] = (dict(columns), plaindata.encode(_declared(columns)))
        if len(_DECLARED_BYTES) > 64:
            _DECLARED_BYTES.clear()
        got = _DECLARED_BYTES[id(columns)] = (columns, got[1])
    return got[1]


_DECLARED_BYTES: dict = {}


def _meta_checked(game, m: dict, cn: dict, have: bytes, have_sets: dict) -> tuple[int, range]:
    """(the next entity id, the bank's clip indexes) of a file's meta section checked
    against ``game``: each human by name, entity (alive) and anim set, the next entity id
    past them, the clip bank a prefix of the Game's. Rejected: _Refused naming the field."""
    names = m["names"]
    need(isinstance(names, dict) and len(names) <= 1 << 24, "meta.names", "not a map of names to entities")
    alive = game._alive
    for name, ent in names.items():
        if not (name.__class__ is str and len(name) <= 256):
            raise _Refused(f"meta.names: {short(name)} is not a name")
        if not (ent.__class__ is int and 0 <= ent < 1 << 63):
            need_int(ent, f"meta.names[{short(name)}]", 0)
        if not (game.names.get(name) == ent and alive(ent)):
            raise _Refused(f"meta.names[{short(name)}]: entity {ent}: this Game has no such human (set it up as "
                           "the snapshot's was)")
    need(len(set(names.values())) == len(names), "meta.names", "two names for one entity")
    entity_next = need_int(cn["entity_next"], "counts.entity_next", max(names.values(), default=0) + 1 if names else 1,
                           MAX_COUNTER)
    sets = m["sets"]
    need(isinstance(sets, dict) and set(sets) == set(names), "meta.sets", "not one anim set digest per human")
    for name, d in sets.items():
        if not (d == have_sets[name]):
            raise _Refused(f"meta.sets[{short(name)}]: the human's anim set differs from this Game's")
    bank_raw = m["bank"]
    need(isinstance(bank_raw, bytes) and len(bank_raw) % 32 == 0, "meta.bank", "not the clips' digests")
    need(have[:len(bank_raw)] == bank_raw, "meta.bank",
         "the clip bank lists other clips (set the Game up as the snapshot's was: the same humans in the same order)")
    bank = range(len(bank_raw) // 32)
    return entity_next, bank


def to_state(game, p: Parsed, state_cls) -> Any:
    """The saved state of parsed file ``p`` for ``game`` (a ``state_cls``, the snapshot's
    _State), after every check: the configuration, the humans (names, entities, anim
    sets), the clip bank, every table's layout and rows (anim.engine.snapcheck), every value's
    schema and cross-reference. Its tables' blocks are the Game's scratch (SnapCache.check),
    which the next call writes over: restore it first (snapshot.restore does at once).
    Rejected (_Refused, one line naming the section and field): anything that does not
    fit; nothing of the Game is changed."""
    # -- the configuration: the same parts, else say which differ
    mine, mine_sha = config_bytes(game)
    if p.config != mine_sha:
        try:
            theirs = plaindata.decode(p.config_parts)
        except plaindata.PlainDataError:
            theirs = None
        ours = plaindata.decode(mine)
        diff = [k for k in ours if not isinstance(theirs, dict) or theirs.get(k) != ours[k]]
        raise _Refused("header.config: the snapshot's Game is set up otherwise than this one (differs in: "
                       f"{', '.join(diff) or 'its digest'}; written by scuffle {short(p.version, 20)})")
    m = p.meta
    need(set(m) == _META_FIELDS, "meta", "not the fields of a snapshot's meta")
    if not (m["engine"] == game.engine):
        raise _Refused(f"meta.engine: {short(m['engine'])}, this Game runs {game.engine!r}")
    cn = p.counts
    updates_run = need_int(cn["updates_run"], "counts.updates_run", 0, MAX_COUNTER)
    update = need_int(cn["update"], "counts.update", 0, MAX_COUNTER)
    names = m["names"]
    have = _bank_bytes(game.player)
    have_sets = _sets_of(game)
    # the humans, their anim sets and the bank as checked last for this Game (its names,
    # sets and bank the same objects): their entities alive only
    meta_key = (p.meta_bytes, game.names.version, have, have_sets)
    cache = cache_of(game)
    got = cache.meta_ok
    if got is not None and got[0] == meta_key:
        alive = game._alive
        for name, ent in names.items():
            if not alive(ent):
                raise _Refused(f"meta.names[{short(name)}]: entity {ent}: this Game has no such human (set it up "
                               "as the snapshot's was)")
        entity_next = need_int(cn["entity_next"], "counts.entity_next", got[2], MAX_COUNTER)
        bank, entities = got[3], got[4]
    else:
        entity_next, bank = _meta_checked(game, m, cn, have, have_sets)
        entities = np.array(sorted(names.values()), np.int64)          # (read only: the compiled pass's)
        cache.meta_ok = (meta_key, names, max(names.values(), default=0) + 1 if names else 1, bank, entities)
    # -- the tables: their layouts, then every row checked in one pass on a scratch copy
    fight_rules = game.fight if game.fight is not None and hasattr(game.fight, "save_state") else None
    fcols = getattr(fight_rules, "ROW_COLUMNS", None)
    saved = _saved_all(game, p.tables, fight_rules, mine_sha, p.heads)
    v = p.values
    need(set(v) == _VALUES_FIELDS, "values",
         "not the fields of a snapshot")
    ev = v["engine"]
    need(isinstance(ev, dict) and set(ev) == _ENGINE_FIELDS, "values.engine", "not the engine's fields")
    hgen, hfree = cn["humans.gen"], cn["humans.free"]
    pool = (cn["pool.out"], cn["pool.n_out"])
    # a table's rows are reset to its defaults when given back (anim.engine.store.Table.free): no
    # table has rows waiting for a reset between two updates
    dirty = _NO_DIRTY
    texts = _texts(v["combats"])
    player = game.player
    try:
        buf, blocks = check_saved(saved, hgen=hgen, hfree=hfree, pool_out=pool[0], n_out=pool[1],
                                pool_capacity=player.pool.capacity, facts=_facts(player, len(bank)), dirty=dirty,
                                dirty_where=_DIRTY_WHERE, entities=entities,
                                texts=len(texts), names=TABLES,
                                rules=getattr(fight_rules, "ROW_RANGES", None) or _NO_FIGHT_RULES,
                                keep=cache.check, layouts=cache.saved[1])
    except StateError as e:
        raise _Refused(str(e)) from None
    # the scratch tables over the checked blocks (kept with them: the same blocks, written
    # over by each check, keep their tables and the columns' views made at their first read)
    got = cache.scratch
    if got is not None and got[0] is blocks:
        scratch, bases = got[1], got[2]
    else:
        scratch = {name: _rows_at(cls, sv.capacity, b) for name, sv, b, cls in zip(TABLES, saved, blocks,
                                                                                       cache.saved[2])}
        # each of the seven tables' offset in the scratch buffer (the blocks are its slices)
        at = buf.__array_interface__["data"][0]
        bases = tuple(b.__array_interface__["data"][0] - at for b in blocks[:len(ROW_TABLES)])
        cache.scratch = (blocks, scratch, bases)
    hum = scratch["humans"]
    kinds = player.callbacks
    calls = _calls_back(ev["calls"], kinds, cn["calls.uses"], cn["calls.free"], cache)
    try:
        check_ids(scratch["tasks"], hum, calls[0], calls[1], calls[2], len(bank), calls[3])
    except StateError as e:
        raise _Refused(f"table.{e}") from None
    states = {name: S.TableState(scratch[name].capacity, scratch[name].block) for name in _ENGINE_TABLES}
    humans_state = S.HumanTableState(hum.capacity, hum.block, hfree.tolist(), hgen.tolist())
    deferred = cn["deferred"]
    if len(deferred):
        hr, tr = deferred[:, 0], deferred[:, 1]
        need(bool(((hr >= 0) & (hr < hum.capacity)).all()) and bool(hum.live[hr].all()), "counts.deferred",
             "a human row not in use")
        tt = scratch["tasks"]
        need(bool(((tr >= 0) & (tr < tt.capacity)).all()) and bool(tt.live[tr].all()), "counts.deferred",
             "a task row not in use")
        try:
            check_deferred(tr, hum, tt)
        except StateError as e:
            raise _Refused(str(e)) from None
    stepped = ev["stepped"]
    need(isinstance(stepped, list) and len(stepped) <= 64 and all(
        isinstance(a, np.ndarray) and a.dtype == np.int64 and a.ndim == 1
        and bool(((a >= 0) & (a < hum.capacity)).all())
        for a in stepped), "values.engine.stepped", "not lists of human rows")
    # (counters with room to count on: a file's is never one an update takes past int64)
    stats = (need_int(cn["stats[0]"], "counts.stats[0]", 0, MAX_COUNTER),
             need_int(cn["stats[1]"], "counts.stats[1]", 0, MAX_COUNTER))
    b = (need_int(cn["batch.kernel_humans"], "counts.batch.kernel_humans", 0, hum.capacity),
         need_int(cn["batch.pair_changes"], "counts.batch.pair_changes", 0, MAX_COUNTER), ev["leaving"])
    need(isinstance(b[2], list), "values.engine.leaving", "not a list")
    leaving = []
    for i, x in enumerate(b[2]):
        need(isinstance(x, tuple) and len(x) == 2, f"values.engine.leaving[{i}]", "not (row, generation)")
        need_int(x[0], f"values.engine.leaving[{i}]", 0, hum.capacity - 1)
        need_int(x[1], f"values.engine.leaving[{i}]", 0)
        need(bool(hum.live[x[0]]), f"values.engine.leaving[{i}]", "a human row not in use")
        leaving.append(x)
    inst_of = _instances_of(game, names)
    rows = ev["instances"]
    need(isinstance(rows, list) and len(rows) <= hum.capacity, "values.engine.instances", "not one entry per row")
    seen: set = set()
    instances: list[Any] = []
    for r, name in enumerate(rows):
        if name is None:
            instances.append(None)
            continue
        if not (name.__class__ is str and name in inst_of and name not in seen):
            raise _Refused(f"values.engine.instances[{r}]: {short(name)} is not a human of the snapshot, or "
                           "named twice")
        if not hum.live[r]:
            raise _Refused(f"values.engine.instances[{r}]: the row is not in use")
        seen.add(name)
        instances.append(inst_of[name])
    loose = []
    need(isinstance(ev["loose"], list), "values.engine.loose", "not a list")
    for i, x in enumerate(ev["loose"]):
        where = f"values.engine.loose[{i}]"
        need(isinstance(x, tuple) and len(x) == 2 and x[0].__class__ is str and x[0] in inst_of and x[0] not in seen,
             where,
             "not a human of the snapshot without an engine row")
        vals = x[1]
        need(isinstance(vals, tuple) and len(vals) == 5, where, "not (generation, flags, anim, speed, report)")
        need_int(vals[0], where + ".gen", 0)
        need_int(vals[1], where + ".flags", 0)
        need_int(vals[2], where + ".anim", -1, (1 << 31) - 1)
        need_float(vals[3], where + ".speed", 0.0, 1e6)
        try:
            report = S.callback_back(vals[4], where + ".on_report", kinds)
        except StateError as e:
            raise _Refused(str(e)) from None
        seen.add(x[0])
        loose.append((inst_of[x[0]], (vals[0], vals[1], vals[2], vals[3], report)))
    # every human is restored whole: an engine row or a loose record each, and every row in
    # use held by one human or leaving (else a human kept whatever record this Game had)
    missing = [name for name in names if name not in seen]
    if missing:
        raise _Refused(f"values.engine.instances: {short(missing[0])}: neither an engine row nor a loose record")
    held = [x is not None for x in instances] + [False] * (hum.capacity - len(instances))
    for i, (r, _) in enumerate(leaving):
        need(not held[r], f"values.engine.leaving[{i}]", "a row held twice")
        held[r] = True
    need(held == hum.live.view(np.bool_).tolist(), "values.engine.instances",
         "a human row in use that no human holds and none is leaving")
    es = S.EngineState(states, humans_state,
                       ((pool[0].copy(), pool[1]), (deferred.copy(), {}) if len(deferred) else NO_ENTRIES, ([], [], []), [a.copy() for a in stepped],
                        stats, (calls[0], calls[1].tolist(), calls[2].tolist())),
                       (b[0], b[1], leaving, instances), loose, None,
                       placed=(buf, bases, (scratch["bodies"].capacity, scratch["combats"].capacity)))
    # -- the bodies and the combat rows: their owners by name, finite numbers
    by_entity = {e: n for n, e in names.items()}
    bodies = _owners_back(game, scratch["bodies"], cn["bodies.owner"], by_entity, Body, "bodies")
    combats = _owners_back(game, scratch["combats"], cn["combats.owner"], by_entity, Combat, "combats")
    # -- the fight rules and the stateful actions check their own
    fight: Any = v["fight"]
    log: Any = v["fight_log"]
    if (fight is None) == (fight_rules is not None):
        raise _Refused("values.fight: the snapshot was taken " + ("without" if fight is None else "with") +
                       " fight rules")
    if fight is None:
        need(log is None, "values.fight_log", "a fight log for a Game without fight rules")
        for name in FIGHT_TABLES:
            need(not scratch[name].live.any(), f"table.{name}", "rows in use for a Game without fight rules")
    else:
        if fcols is None:
            raise _Refused(f"values.fight: the fight rules {type(fight_rules).__qualname__} keep no rows")
        assert fight_rules is not None           # a fight saved needs fight rules (checked above)
        try:
            fight = fight_rules.state_of({name: scratch[name] for name in FIGHT_TABLES[:-1]}, fight)
            log = fight_rules.log_of(scratch["log"], log)
        except ValueError as e:
            raise _Refused(str(e)) from None
    extras = v["extras"]
    mine_x = _stateful_kept(game, cache)
    if not (isinstance(extras, list) and len(extras) == len(mine_x)):
        raise _Refused(f"values.extras: not the {len(mine_x)} stateful actions of this Game")
    fitted = cache.fitted                    # (an action, its state's exact bytes) checked last
    now: list = []
    for i, (obj, x) in enumerate(zip(mine_x, extras)):
        fits = getattr(obj, "state_fits", None)
        if fits is None:
            raise _Refused(f"values.extras[{i}]: {type(obj).__qualname__} has no state_fits: its state from a "
                           "file cannot be checked (give it state_fits(state) -> reason or None)")
        if i < len(fitted) and fitted[i][0] is obj and fitted[i][2] is x:     # (the state that fitted last)
            now.append(fitted[i])
            continue
        exact = _exact(x)
        if exact is None or i >= len(fitted) or fitted[i][0] is not obj or fitted[i][1] != exact:
            why = fits(x)                     # (a state equal in type and bits to one that fitted: fits)
            need(why is None, f"values.extras[{i}]", str(why))
        now.append((obj, exact, x))
    cache.fitted = now
    return state_cls(game.engine, updates_run, update, dict(names), entity_next, es, {},
                     (bodies[0], bodies[1]), (combats[0], combats[1], texts), fight, list(extras), log)


def _instances_of(game, names: dict) -> dict:
    """Each of ``names``' humans' CharacterInstance by name (its Animator's; kept per
    change of the Game's names while each human has the same Animator)."""
    cache = cache_of(game)
    comps = game._entities
    got = cache.instances
    if got is not None and got[0] == game.names.version and got[1] is names:
        for ent, anim, inst in got[2]:
            c = comps.get(ent)
            if c is None or c.get(Animator) is not anim or anim.instance is not inst:
                break
        else:
            return got[3]
    out = {name: game.instance(name) for name in names}
    cache.instances = (game.names.version, names,
                       [(ent, comps[ent][Animator], out[name]) for name, ent in names.items()], out)
    return out


def _stateful_kept(game, cache: SnapCache) -> list:
    """``stateful(game)``, made again only when the lists it reads changed (kept in
    ``cache``)."""
    ctx = game.ctx
    lists = (game.fight, *ctx.state_functions, None, *ctx.actions)
    got = cache.stateful
    if got is None or got[0] != lists:
        got = cache.stateful = (lists, stateful(game))
    return got[1]


def _calls_back(v: Any, kinds: Any, uses: np.ndarray, free: np.ndarray, cache: Any = None) -> tuple:
    """The callbacks table's saved (values, uses, free) and check_ids' kinds of its ids (the id lists: the counts
    section's int64 arrays, checked with the tasks' ids by check_ids): each value None (a
    free id), a callback (kind, args) of a kind this Game registered (each callback
    once), or ("", name) a partner's name. ``cache``: the Game's SnapCache, which keeps
    the last values checked (by their exact plain bytes, ``_exact``) and their callbacks."""
    where = "values.engine.calls"
    need(isinstance(v, dict) and set(v) == {"values"}, where, "not {values}")
    vals = v["values"]
    if not (isinstance(vals, list) and len(vals) <= MAX_CALLS):
        raise _Refused(f"{where}.values: not a list of at most {MAX_CALLS}")
    got = cache.calls if cache is not None else None
    if got is not None and got[2] is vals:          # (the values checked last, the same object: see _texts)
        return list(got[1]), uses, free, got[3]
    exact = _exact(vals) if cache is not None else None
    if exact is not None and got is not None and got[0] == exact:
        cache.calls = (exact, got[1], vals, got[3])
        return list(got[1]), uses, free, got[3]
    out: list = []
    for i, x in enumerate(vals):
        if x is None:
            out.append(None)
        elif x.__class__ is tuple and len(x) == 2 and x[0] == "" and x[1].__class__ is str:
            out.append(x[1])
        else:
            try:
                out.append(S.callback_back(x, f"{where}.values[{i}]", kinds))
            except StateError as e:
                raise _Refused(str(e)) from None
    ids: dict = {}                         # each callback once (the table keeps one id a callback)
    for i, x in enumerate(out):
        if x is not None and x.__class__ is not str:
            k = CallbackTable.key(x)
            if k in ids:
                raise _Refused(f"{where}.values[{i}]: the callback of values[{ids[k]}] again")
            ids[k] = i
    kinds = id_kinds(out)
    if exact is not None:
        cache.calls = (exact, list(out), vals, kinds)
    return out, uses, free, kinds


def _exact(v: Any) -> bytes | None:
    """Bytes equal only for values equal in type and bits (anim.engine.digest.values_bytes:
    True and 1, -0.0 and 0.0 differ), to know a value checked before; None for a value
    it does not write (an array)."""
    try:
        return values_bytes(v)
    except ValueError:
        return None


# the engine's values a file holds (the rest are the counts section's)
_ENGINE_FIELDS = frozenset({"calls", "stepped", "leaving", "instances", "loose"})
# the meta section's fields (the update counters are the counts section's)
_COUNTER_KEYS = frozenset({"updates_run", "update", "entity_next"})
_META_FIELDS = {"engine", "names", "sets", "bank", "updates_run", "update", "entity_next"}


def _engine_values(p: Parsed) -> dict:
    """The engine's values of parsed file ``p`` as ``plain_values`` gives them (the counts
    section's back in their places: the checksum of a file). Rejected (_Refused): values
    without the engine's fields."""
    e: Any = p.values.get("engine")
    need(isinstance(e, dict) and set(e) == _ENGINE_FIELDS and isinstance(e["calls"], dict)
         and set(e["calls"]) == {"values"}, "values.engine", "not the engine's fields")
    c = p.counts
    return {"humans": {"free": c["humans.free"], "gen": c["humans.gen"]},
            "calls": {"values": e["calls"]["values"], "uses": c["calls.uses"], "free": c["calls.free"]},
            "pool": (c["pool.out"], c["pool.n_out"]), "deferred": c["deferred"], "stepped": e["stepped"],
            "stats": (c["stats[0]"], c["stats[1]"]),
            "batch": (c["batch.kernel_humans"], c["batch.pair_changes"], e["leaving"]),
            "instances": e["instances"], "loose": e["loose"]}


# The most callbacks (and partners' names) a snapshot file's table may hold.
MAX_CALLS = 1 << 20


def _owners_back(game, t, col: np.ndarray, by_entity: dict, cls, what: str) -> tuple:
    """(TableState, owners: row -> the human's view) of a body or combat table from its
    owner column (``owner_columns``; ``by_entity``: the snapshot's humans, entity -> name):
    an entity on each row in use and -1 on each other row, each human owning one row at
    most and having a view of ``cls``. Rejected (_Refused naming ``counts.<what>.owner``)."""
    where = f"counts.{what}.owner"
    live = t.live.view(np.bool_)
    cap = len(live)
    if len(col) != cap:
        raise _Refused(f"{where}: {len(col)} entries, not one per row of the {cap}")
    # (a few rows: the owners made of the same column and live flags for the same humans
    # last time, each human's view still the one found then)
    key = (col.tobytes(), live.tobytes()) if cap <= 256 else None
    comps = game._entities
    kept = cache_of(game).owners_back.get(what)
    if key is not None and kept is not None and kept[0] == key and kept[1] == by_entity:
        for e, view in kept[2]:
            c = comps.get(e)
            if c is None or c.get(cls) is not view:
                break
        else:
            return S.TableState(t.capacity, t.block), dict(kept[3])
    # (a few rows, as two fighters' tables have, in plain Python; a crowd's thousands in numpy)
    if cap > 256:
        bad = (col >= 0) != live
        r = int(np.argmax(bad)) if bad.any() else -1
        rows = np.flatnonzero(live).tolist()
    else:
        lv = live.tolist()
        r = next((r for r, (on, e) in enumerate(zip(lv, col.tolist())) if on != (e >= 0)), -1)
        rows = [r for r, on in enumerate(lv) if on]
    if r >= 0:
        raise _Refused(f"{where}[{r}]: " + ("an owner for a row not in use" if col[r] >= 0 else
                                            "a row in use owned by no human" if col[r] == -1 else
                                            "an entity below -1"))
    ents = col[rows].tolist()
    if len(set(ents)) != len(ents):
        raise _Refused(f"{where}: a human owns two rows")
    owners = {}
    for r, e in zip(rows, ents):
        if e not in by_entity:
            raise _Refused(f"{where}[{r}]: entity {e} is not a human of the snapshot")
        view = comps.get(e, _NO_COMPONENTS).get(cls)
        if view is None:
            raise _Refused(f"{where}[{r}]: {short(by_entity[e])} has no {cls.__name__}")
        owners[r] = view
    if key is not None:
        cache_of(game).owners_back[what] = (key, dict(by_entity), [(e, owners[r]) for r, e in zip(rows, ents)],
                                            dict(owners))
    return S.TableState(t.capacity, t.block), owners


_NO_COMPONENTS: dict = {}
# the values section's fields (the owners are the counts section's columns)
_VALUES_FIELDS = frozenset({"engine", "combats", "fight", "fight_log", "extras"})


_NO_ROWS = np.zeros(0, np.int64)
_NO_DIRTY = (_NO_ROWS,) * len(TABLES)
_DIRTY_WHERE = tuple(f"table.{name}" for name in TABLES)


def _texts(v: Any) -> list:
    """The combat rows' texts (their state and role codes index them): distinct short texts
    (a copy; the values last checked are known by their object: a file's values, which no
    reader writes to, are the same object while their bytes are the same)."""
    kept = _TEXTS_OK[0]
    if kept is not None and kept[0] is v:
        return list(kept[1])
    texts: Any = v.get("texts") if isinstance(v, dict) and len(v) == 1 else None
    need(isinstance(texts, list) and 2 <= len(texts) <= 4096 and all(isinstance(x, str) and len(x) <= 256
                                                                     for x in texts)
         and len(set(texts)) == len(texts), "values.combats.texts", "not a list of distinct short texts")
    _TEXTS_OK[0] = (v, texts)
    return list(texts)


_TEXTS_OK: list = [None]          # (the combats value last checked, its texts)


# ---------------------------------------------------------------- the checksum
# The checksum is a sha256 over four parts, each the same bytes for a Game, a snapshot of
# it and that snapshot's file read back:
#   1. the counts section as a file holds it (``_COUNTS_HEAD``: the update counters, the
#      next entity id, the engine's lists and counters as int64 columns, the pool's flags);
#   2. the names (plaindata);
#   3. the digest of each of the seven saved tables (anim.engine.digest: the free list,
#      the generations and live flags whole, every other column over the rows in use, in
#      compiled code: a free row's columns are not state, so equal states give equal
#      digests whatever their free rows hold);
#   4. the rest, written once by anim.engine.digest.values_bytes (plain types by value, in
#      order, no back-references; only ever written, never read) of the engine's values (the
#      callbacks' values, the step's lists, the leaving humans, the humans by row, the
#      loose humans), the body and combat rows' owners by name (sorted by row), the combat
#      texts, the fight rules' state in one canonical form (``_fight_form``) and the
#      stateful actions' states (plaindata).
# The fight log is left out (no rule reads it), as are the last update's outputs.


def _digest_of(counts: bytes, names: bytes, tables: np.ndarray, values: bytes) -> str:
    h = hashlib.sha256(counts)
    h.update(names)
    h.update(tables.tobytes())
    h.update(values)
    return h.hexdigest()


def _pack_ints(xs: Any) -> bytes:
    """A list (or array) of ints as int64 bytes."""
    if xs.__class__ is list:
        return struct.pack(f"<{len(xs)}q", *xs)
    return np.ascontiguousarray(xs, _I8).tobytes()


def counts_raw(gen: Any, free: Any, uses: Any, call_free: Any, deferred: Any, bodies: np.ndarray,
               combats: np.ndarray, pool_out: np.ndarray, n_out: int, stats: tuple, kernel_humans: int,
               pair_changes: int, updates_run: int, update: int, entity_next: int) -> bytes:
    """The counts section's bytes (docs/formats.md, "Snapshot": ``counts_of`` reads them):
    the lists (the human rows' generations and free list, the callbacks' uses and free
    ids: lists or int64 arrays; the deferred (human row, task row) pairs: any int array
    of n pairs; the body and combat rows' owners: int64 entity columns, ``owner_columns``),
    the pool's flags (bools) and the counters."""
    d = np.ascontiguousarray(deferred, _I8)
    head = _COUNTS_HEAD.pack(len(gen), len(free), len(uses), len(call_free), d.size // 2, len(bodies), len(combats),
                             len(pool_out), updates_run, update, entity_next, n_out, stats[0], stats[1], kernel_humans,
                             pair_changes)
    return b"".join((head, _pack_ints(gen), _pack_ints(free), _pack_ints(uses), _pack_ints(call_free), d.tobytes(),
                     bodies.tobytes(), combats.tobytes(),
                     np.ascontiguousarray(pool_out, np.bool_).view(np.uint8).tobytes()))


def _values_raw(engine: tuple, texts: list, fight: Any, extras: list, cache: Any = None,
                forms: dict | None = None) -> bytes:
    """Part 4 of the checksum (see above): ``engine`` (calls' values, the step's lists as
    int64 bytes, leaving, instances, loose, the step's pending entries or None)."""
    v = (engine, texts, fight, extras_digest(extras, cache, forms))
    try:
        return values_bytes(v)
    except ValueError:                          # a type values_bytes does not write by value (an enum in args)
        return plaindata.encode(v, lenient=True)


def extras_digest(extras: list, cache: Any = None, forms: dict | None = None) -> bytes:
    """The sha256 of the stateful actions' states in the plain form (plaindata; an array of
    a dtype no file holds by its digest form). ``cache``: a Game's SnapCache, which keeps
    the last states and their digest: the same state objects give it again (a state's
    values are never written to; an action gives its last state again while nothing
    changed). ``forms``: a dict that keeps the plain form of each state's parts per
    object (a state made again shares the parts that did not change: a generator's state,
    counts)."""
    if cache is not None:
        got = cache.extras
        if got is not None and len(got[0]) == len(extras) and all(a is b for a, b in zip(got[0], extras)):
            return got[1]
    try:
        raw = plaindata.encode(extras, lenient=True) if forms is None else _parts_plain(extras, forms)
    except plaindata.PlainDataError:
        raw = plaindata.encode(digest_form(extras), lenient=True)
    d = hashlib.sha256(raw).digest()
    if cache is not None:
        cache.extras = (tuple(extras), d)
    return d


def _parts_plain(extras: list, forms: dict) -> bytes:
    """``plaindata.encode(extras, lenient=True)`` (a list's or tuple's form is its head and
    its items' forms in turn), each state's items that are containers encoded once per
    object (kept in ``forms``)."""
    out = [_head(list, len(extras))]
    for s in extras:
        if s.__class__ is not tuple:
            out.append(plaindata.encode(s, lenient=True))
            continue
        out.append(_head(tuple, len(s)))
        for x in s:
            if x.__class__ in _CONTAINERS:
                got = forms.get(id(x))
                if got is None or got[0] is not x:
                    got = (x, plaindata.encode(x, lenient=True))
                    _keep(forms, x, got[1])
                out.append(got[1])
            else:
                out.append(plaindata.encode(x, lenient=True))
    return b"".join(out)


_CONTAINERS = (tuple, list, dict)
_HEADS: dict = {}


def _head(kind: type, n: int) -> bytes:
    """The plain form's head of a ``kind`` (list or tuple) of ``n`` items: its form less
    its items' (n Nones, a byte each)."""
    got = _HEADS.get((kind, n))
    if got is None:
        whole = plaindata.encode(kind([None] * n))
        got = _HEADS[(kind, n)] = whole[:len(whole) - n]
    return got


def _words_digest(words: bytes, cache: Any) -> bytes:
    """The sha256 of an AI's random generator's words (kept in a Game's SnapCache for the
    last few words objects: an AI gives the same object again while it drew nothing)."""
    if cache is None:
        return hashlib.sha256(words).digest()
    kept = cache.words
    got = kept.get(id(words))
    if got is not None and got[0] is words:
        return got[1]
    if len(kept) >= 16:
        kept.clear()
    d = hashlib.sha256(words).digest()
    kept[id(words)] = (words, d)
    return d


def _fight_form(fight: Any, state: Any, cache: Any = None, forms: dict | None = None) -> Any:
    """The fight rules' ``save_state`` in the checksum's canonical form: the K.O.s and the
    starts sorted by entity, plain numbers, the stats with the counts by kind sorted, the
    pending windows and ends, and per controller its AI state (the words' sha256, the gauss
    value, tick, hold, enabled) or its plain state's bytes. Rules that keep no rows
    (no ``rows_of``): their state's plain bytes. None: no fight state."""
    if state is None:
        return None
    if not hasattr(fight, "rows_of"):
        return ("state", plaindata.encode(digest_form(state), lenient=True))
    ko, ko_at, starts, stats, pending, ctl = state
    grabs, strikes, throws, damage, refused, kinds, logged, round_, rounds = stats
    ctl_form: list = []
    for c in ctl:
        if c.__class__.__name__ == "AIRow":
            c = c.state()
        # an AI's generator state met before (the same object while it drew nothing): its
        # words' digest and gauss value as written then
        rng = c[0] if forms is not None and c.__class__ is tuple and len(c) == 4 else None
        got = forms.get(id(rng)) if rng is not None and forms is not None else None
        if got is not None and got[0] is rng:
            _, tick, hold, on = c
            ctl_form.append((*got[1], int(tick), int(hold), bool(on)))
        elif _is_ai_state(c):
            (_, words, gauss), tick, hold, on = c
            head = (_words_digest(words, cache), None if gauss is None else float(gauss))
            if forms is not None:
                _keep(forms, c[0], head)
            ctl_form.append((*head, int(tick), int(hold), bool(on)))
        else:
            ctl_form.append(None if c is None else plaindata.encode(c, lenient=True))
    return (_form(forms, ko, _ko_form), ko_at, _form(forms, starts, _starts_form),
            (int(grabs), int(strikes), int(throws), float(damage), int(refused),
             _form(forms, kinds, _kinds_form), int(logged), int(round_),
             plaindata.encode([dict(r) for r in rounds], lenient=True) if rounds else b""),
            [_pending_form(item, fight) for item in pending], ctl_form)


def _ko_form(ko: dict) -> list:
    return sorted([(int(e), int(u)) for e, u in ko.items()])


def _starts_form(starts: dict) -> list:
    return sorted([(int(e), (tuple([float(x) for x in p]), float(h), float(hp))) for e, (p, h, hp) in starts.items()])


def _kinds_form(kinds: dict) -> list:
    return sorted([(str(k), int(n)) for k, n in kinds.items()])


def _form(kept: dict | None, v: dict, make: Any) -> list:
    """``make(v)``, kept in ``kept`` (id(v) -> (v, its form)) for the last few ``v`` objects
    (a fight's state shares its K.O.s, starts and counts by kind from one save to the next
    while they are the same, and a state's values are never written to)."""
    if kept is None:
        return make(v)
    got = kept.get(id(v))
    if got is not None and got[0] is v:
        return got[1]
    f = make(v)
    _keep(kept, v, f)
    return f


def _keep(kept: dict, v: Any, f: Any) -> None:
    """``f`` kept for ``v`` (held, so that no other object takes its id) in ``kept``, which
    is emptied past a few dozen entries."""
    if len(kept) >= 32:
        kept.clear()
    kept[id(v)] = (v, f)


def _is_ai_state(s: Any) -> bool:
    """``s`` a FighterAI's saved state (fightrows' rows hold those)."""
    return s.__class__ is tuple and len(s) == 4 and s[0].__class__ is tuple and len(s[0]) == 3 and \
        s[0][0] == 3 and s[0][1].__class__ is bytes and len(s[0][1]) == 2500


def _pending_form(item: tuple, fight: Any) -> tuple:
    """A pending window or end in the checksum's form: an end's move by its code (its index
    in the rules' ``END_WHATS``, as a file's row holds it)."""
    if item[0] == "end":
        what = item[2]
        return ("end", int(item[1]), what if what.__class__ is int else fight.END_WHATS.index(what), int(item[3]))
    return ("window", int(item[1]), int(item[2]))


def _tables_digests(game, blocks: tuple, caps: tuple) -> np.ndarray:
    """The seven saved tables' digests (``_SAVED_NAMES``' order) of ``blocks`` at ``caps``
    rows (the plan kept in the Game's SnapCache per capacities: a table's columns are
    its own for its life)."""
    cache = cache_of(game)
    got = cache.digests
    if got is None or got[0] != caps:
        cols = _game_columns(game)
        got = cache.digests = (caps, digests_plan([(cols[name], cap) for name, cap in zip(_SAVED_NAMES, caps)]))
    return digests_with(got[1], blocks)


def checksum(game, st) -> str:
    """The digest of a snapshot state (``Snapshot.checksum``; ``checksum_game`` gives the
    same of a Game now, ``checksum_parsed`` of the file): a sha256 (hex) over the counts,
    the names, each saved table's digest and the rest of the values (see above). Equal
    states give equal digests on every machine; the last update's outputs and which rows
    have handles are not state and are left out."""
    es = st.engine_state
    e = S.engine_plain(es, _name_of_instance, False)
    h, calls, (pool_out, n_out) = e["humans"], e["calls"], e["pool"]
    kh, pc, leaving = e["batch"]
    bodies, combats = owner_columns(game, st.names, (st.bodies[1], st.bodies[0].capacity),
                                    (st.combats[1], st.combats[0].capacity))
    counts = counts_raw(h["gen"], h["free"], calls["uses"], calls["free"], e["deferred"], bodies, combats, pool_out,
                        n_out, e["stats"], kh, pc, st.updates_run, st.update, st.entity_next)
    engine = (calls["values"], [a.tobytes() for a in e["stepped"]], leaving, e["instances"], e["loose"],
              e.get("pending"))
    values = _values_raw(engine, [str.__str__(t) for t in st.combats[2]], _fight_form(game.fight, st.fight),
                         list(st.extras))
    saved = _saved_tables(st).values()
    tables = _tables_digests(game, tuple(ts.block for ts in saved), tuple(int(ts.capacity) for ts in saved))
    return _digest_of(counts, _names_bytes(st.names), tables, values)


def _arena_digests(game, arena, tabs: tuple) -> np.ndarray:
    """``_tables_digests`` of the seven tables ``tabs`` where they lie in ``arena`` (a
    TableArena whose first seven tables they are, each on its slice): one compiled call
    over the arena's buffer (its plan kept per arrangement)."""
    cache = cache_of(game)
    got = cache.arena
    if got is None or got[0] != arena.key or got[1] is not arena:
        caps = tuple(int(t.capacity) for t in tabs)
        _tables_digests(game, tuple(t.block for t in tabs), caps)        # (the plan per capacities)
        got = cache.arena = (arena.key, arena, arena_plan(cache.digests[1], [o for o, _ in arena.spans[:len(tabs)]]))
    return digests_in(got[2], arena.buf)


def checksum_game(game, entity_next: int, extras: list, arena: Any = None, kept: Any = None) -> str | None:
    """``checksum`` of the compiled Game's state now, read from its own tables and lists
    (no copy, no snapshot); ``extras``: the stateful actions; ``arena``: the TableArena
    whose first seven tables are the saved ones (their digests in one call while they lie
    in it); ``kept``: an object whose ``owners``, ``calls`` (None at first) and ``forms``
    (a dict) keep parts of the digest's input from one call to the next (the Game's
    snapshot plan), each with what it was made from. None where the state has
    parts this path does not read (a human never stepped, the step's entries pending):
    take a snapshot's view then."""
    player = game.player
    pool, (rows, odd), (refused, wraps, failed), stepped, stats, (values, uses, free) = player.save_state(view=True)
    if odd or wraps or failed:
        return None
    batch = player.batch
    kh, pc, leaving, instances = batch.save_state(view=True)
    seated = len(instances) - instances.count(None)
    if seated != len(game.names):
        return None                                  # (a human the engine has no row for yet)
    st, ctx = player.stores, game.ctx
    hum = st.humans
    combats = ctx.combats
    # (the owners' columns change only when a human comes or goes or a view moves: kept
    # while the names' version, each row's view and the capacities are the same)
    bo, co, caps = ctx.bodies.owners, combats.owners, (ctx.bodies.capacity, combats.capacity)
    got = kept.owners if kept is not None else None
    if got is None or got[0] != game.names.version or got[3] != caps or got[1] != bo or got[2] != co:
        got = (game.names.version, dict(bo), dict(co), caps,
               owner_columns(game, game.names, (bo, caps[0]), (co, caps[1])))
        if kept is not None:
            kept.owners = got
    bodies_col, combats_col = got[4]
    counts = counts_raw(hum.gen, hum._free, uses, free, rows, bodies_col, combats_col, pool[0], pool[1], stats, kh, pc,
                        ctx.updates_run, ctx.update, entity_next)
    # (the callbacks' values in their plain form, kept while the callbacks table gives the
    # same saved state: nothing taken or dropped since)
    saved = st.calls.save()
    got = kept.calls if kept is not None else None
    if got is None or got[0] is not saved:
        got = (saved, [("", v) if v.__class__ is str else S.callback_plain(v, "calls", False) for v in saved[0]])
        if kept is not None:
            kept.calls = got
    calls = got[1]
    engine: tuple = (calls, [np.ascontiguousarray(r, _I8).tobytes() for r in stepped],
              [(int(r), int(g)) for r, g in leaving], [None if i is None else i.name for i in instances], [], None)
    fight = game.fight
    fs = fight.save_state() if fight is not None and hasattr(fight, "save_state") else None
    cache = cache_of(game)
    forms = kept.forms if kept is not None else None
    values = _values_raw(engine, [str.__str__(t) for t in combats.texts], _fight_form(fight, fs, cache, forms),
                         [fn.save_state() for fn in extras], cache, forms)
    tabs = (st.cursors, st.fades, st.gaits, st.tasks, hum, ctx.bodies, combats)
    tables = _arena_digests(game, arena, tabs) if arena is not None and arena.whole() else \
        _tables_digests(game, tuple(t.block for t in tabs), tuple(int(t.capacity) for t in tabs))
    names = game.names
    got = cache.names
    if got is None or got[0] != names.version:
        got = cache.names = (names.version, plaindata.encode(dict(names)))
    return _digest_of(counts, got[1], tables, values)


_SAVED_NAMES = (*_ENGINE_TABLES, "humans", "bodies", "combats")         # _saved_tables' order


def _names_bytes(names: dict) -> bytes:
    """The plain form of a state's names (kept for the last names dict: a state's names
    are its own copy, never changed, and a Game's states share one while its names are
    the same)."""
    got = _NAMES[0]
    if got is not None and got[0] is names and got[1] == len(names):
        return got[2]
    raw = plaindata.encode(dict(names))
    _NAMES[0] = (names, len(names), raw)
    return raw


_NAMES: list = [None]


_COLUMNS_OF: dict = {}                # a declaration's bytes -> its columns (the same object each time)
_NUMERIC = frozenset(d.str for d in plaindata.DTYPES)


def _declared_columns(raw: bytes, where: str) -> dict:
    """The columns a table section declares, read without a Game (a checksum of a file, a
    tool's view of one): {name: dtype}. Rejected (_Refused naming ``where``): a declaration
    that is not (name, one of plaindata's numeric dtypes, an inner shape of at most 4
    dimensions of 1 to 4096) per array, at most 64 arrays, ``live`` among them."""
    got = _COLUMNS_OF.get(raw)
    if got is not None:
        return got
    try:
        cols = plaindata.decode(raw)
    except plaindata.PlainDataError as e:
        raise _Refused(f"{where}.columns: {e}") from None
    ok = isinstance(cols, list) and len(cols) <= 64 and all(
        isinstance(c, tuple) and len(c) == 3 and c[0].__class__ is str and c[1] in _NUMERIC and
        isinstance(c[2], list) and len(c[2]) <= 4 and all(d.__class__ is int and 1 <= d <= 4096 for d in c[2])
        for c in cols) and "live" in {c[0] for c in cols}
    need(ok, f"{where}.columns", "not (name, numeric dtype, inner shape) per array with a live column")
    if len(_COLUMNS_OF) > 64:
        _COLUMNS_OF.clear()
    got = _COLUMNS_OF[raw] = {c[0]: np.dtype((c[1], tuple(c[2]))) if c[2] else np.dtype(c[1]) for c in cols}
    return got


def checksum_parsed(p: Parsed) -> str:
    """``checksum`` of a parsed file (without a Game: the tables' declared columns)."""
    ev = _engine_values(p)
    v = p.values
    engine = (ev["calls"]["values"], [a.tobytes() for a in ev["stepped"]], ev["batch"][2], ev["instances"],
              ev["loose"], None)
    tables = {}
    for name in TABLES[:-1]:                     # (the log is no state: out of the checksum)
        rows, raw, packed = p.tables[name]
        columns = _declared_columns(raw, f"table.{name}")
        try:
            tables[name] = _Rows(columns, rows, unpack(columns, rows, packed, f"table.{name}"))
        except StateError as e:
            raise _Refused(str(e)) from None
    fight = None
    if v["fight"] is not None:
        fight = _fight_form(_HAS_ROWS, _fight_state_plain(tables, v["fight"]))
    digests = blocks_digests([(_COLUMNS_OF[p.tables[name][1]], tables[name].capacity, tables[name].block)
                              for name in ROW_TABLES])
    values = _values_raw(engine, v["combats"]["texts"], fight, v["extras"])
    return _digest_of(p.counts_bytes, plaindata.encode(p.meta["names"]), digests, values)


class _HasRows:
    """Stands for fight rules that keep rows (``_fight_form`` of a file's fight state)."""

    rows_of = None


_HAS_ROWS = _HasRows()


def _fight_state_plain(t: dict, counters: dict) -> tuple:
    """A file's fight rows and counters as a ``save_state`` (fightrows.state_of's reading,
    without a Game and unchecked: a checksum's)."""
    f = t["fighters"]
    ko, starts = {}, {}
    for r in np.flatnonzero(f.live).tolist():
        e = int(f.entity[r])
        if f.started[r]:
            starts[e] = (tuple(f.start[r].tolist()), float(f.heading[r]), float(f.health[r]))
        if f.ko[r] >= 0:
            ko[e] = int(f.ko[r])
    a = t["ais"]
    ctl = []
    for r, plain in enumerate(counters["controllers"]):
        if r < a.capacity and a.live[r]:
            ctl.append(((3, a.mt[r].tobytes(), float(a.gauss[r]) if a.has_gauss[r] else None), int(a.tick[r]),
                        int(a.hold[r]), bool(a.enabled[r])))
        else:
            ctl.append(plain)
    q = t["pending"]
    pending: list[tuple] = []
    for r in np.flatnonzero(q.live).tolist():
        if q.kind[r] == 0:
            pending.append(("window", int(q.entity[r]), int(q.move[r])))
        else:
            pending.append(("end", int(q.entity[r]), int(q.what[r]), int(q.serial[r])))
    c = counters["counts"]
    stats = (c[0], c[1], c[2], counters["damage"], c[3], counters["kinds"], c[4], c[5], counters["rounds"])
    return (ko, counters["ko_at"], starts, stats, tuple(pending), tuple(ctl))


# ---------------------------------------------------------------- reading a file
def read_file(path: str, budget: int = MAX_BYTES) -> bytes:
    """The bytes of snapshot file ``path`` (game.runtime.files.read_limited: a regular file
    only, opened without blocking and checked before a byte is read, of at most ``budget``
    bytes). Rejected: _Refused naming the file and the problem."""
    from scuffle.game.runtime.files import FileLimitError, read_limited
    try:
        return read_limited(path, budget)
    except FileLimitError as e:
        raise _Refused(f"{short(e.path)}: {e.problem}") from None
