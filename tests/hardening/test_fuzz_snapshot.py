"""Fuzzed snapshot files: only SnapshotError comes out, one line, the Game it was meant for
unchanged; a file that is accepted is a state the engine steps on from.

The damaged files are made as an attacker makes them, with the header's sizes and digest
computed again (the digest catches accidents only): random bytes; a real file with bits
flipped; a section cut short; a table's column or a plain value pushed over its range
(the extremes of its type, NaN, infinities, another type). A file that restores runs
STEPS updates, which must not raise. Memory stays within a budget (tracemalloc). The
default run tries QUICK_EXAMPLES per property; ``pytest -m fuzz`` tries LONG_EXAMPLES.
"""
from __future__ import annotations

import struct
import tracemalloc

import numpy as np
from hypothesis import strategies as st

from scuffle.anim.engine import plaindata
from scuffle.anim.engine.store import _layout
from scuffle.game.fighters.ai import FighterAI
from scuffle.game.fighters.combat import Fight
from scuffle.game.fighters.moves import Move
from scuffle.game.fighters.moveset import demo_set
from scuffle.game.runtime import snapfile as F
from scuffle.game.runtime.snapshot import Snapshot, SnapshotError
from scuffle.game.runtime.world import Game

from .support import fuzz_pair, no_hang

STEPS = 8
MEMORY = 64 << 20            # a 70 kB file may take this much to refuse or restore, at most

_GAMES: dict = {}


def _fight() -> Game:
    g = Game()
    aset = demo_set()
    g.add_human("p1", aset, position=(0.0, -1.0, 0.0), heading=0.0, health=30.0)
    g.add_human("p2", aset, position=(0.0, 1.0, 0.0), heading=180.0, health=30.0)
    fight = Fight(g, separate=True, rounds=True, round_pause=10)
    for name in ("p1", "p2"):
        g.change(name, g.player.loop(g.instance(name), int(Move.FIGHT_IDLE)))
    fight.controllers.append(FighterAI("p1", "p2", seed=5))
    fight.controllers.append(FighterAI("p2", "p1", seed=6))
    return g


def _setup():
    """(the real files of a fight at a few updates, the Game they are restored into): made
    once per process."""
    import esper
    if _GAMES and (_GAMES["b"].closed or _GAMES["b"].world not in esper.list_worlds()):
        _GAMES.clear()                       # a fixture between tests reset esper's worlds
    if not _GAMES:
        a = _fight()
        files = []
        for u in range(90):
            a.step()
            if u in (20, 55, 89):
                files.append(a.snapshot().to_bytes())
        a.close()
        _GAMES["files"], _GAMES["b"] = files, _fight()
    return _GAMES["files"], _GAMES["b"]


def _try(data: bytes) -> None:
    """The property: refused with one SnapshotError line and the Game unchanged, or
    restored and stepped on."""
    _, b = _setup()
    before = b.checksum()
    tracemalloc.start()
    try:
        with no_hang(20):
            try:
                b.restore(Snapshot.from_bytes(data))
            except SnapshotError as e:
                text = str(e)
                assert "\n" not in text and len(text) < 600, text
                assert b.checksum() == before
                return
            for _ in range(STEPS):
                b.step()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < MEMORY, f"{peak} bytes"


def _reassembled(data: bytes, edit) -> bytes:
    version, config, sections = F.sections_of(data)
    return F.assemble([(n, edit(n, b)) for n, b in sections], version, config)


# ---------------------------------------------------------------- random bytes
def _random(data: bytes, head: bool) -> None:
    if head:                                      # a real header's first fields, then noise
        files, _ = _setup()
        data = files[0][:F.HEADER.size] + data
    _try(data)


test_random_bytes, test_random_bytes_fuzz = fuzz_pair(st.binary(max_size=4096), st.booleans())(_random)


# ---------------------------------------------------------------- bits flipped, digest forged
def _flipped(which: int, positions: list[int]) -> None:
    files, _ = _setup()
    data = bytearray(files[which % len(files)])
    n = len(data) - F.HEADER.size
    for p in positions:
        i = F.HEADER.size + p % n
        data[i] ^= 1 << (p // n % 8)
    payload = bytes(data[F.HEADER.size:])
    head = bytearray(data[:F.HEADER.size])
    struct.pack_into("<I", head, F.HEADER.size - 4, F.payload_digest(payload))
    _try(bytes(head) + payload)


test_bits_flipped, test_bits_flipped_fuzz = fuzz_pair(
    st.integers(0, 2), st.lists(st.integers(0, 1 << 24), min_size=1, max_size=6))(_flipped)


# ---------------------------------------------------------------- a section cut short
def _cut(which: int, section: int, keep: float) -> None:
    files, _ = _setup()
    data = files[which % len(files)]
    names = F.SECTIONS

    def edit(name: str, b: bytes) -> bytes:
        return b[:int(len(b) * keep)] if name == names[section % len(names)] else b
    _try(_reassembled(data, edit))


test_section_cut, test_section_cut_fuzz = fuzz_pair(st.integers(0, 2), st.integers(0, 20),
                                                    st.floats(0.0, 0.999))(_cut)


# ---------------------------------------------------------------- a column pushed over its range
_EXTREMES = (-1, -2, 0, 1, 2, 7, 8, 255, 1 << 31, -(1 << 31), (1 << 63) - 1, -(1 << 63), 1e30, -1e30,
             float("nan"), float("inf"), -0.0, 0.5, 4.0001, 1e-40)


def _column(which: int, table: int, column: int, row: int, value: int) -> None:
    files, _ = _setup()
    data = files[which % len(files)]
    tname = F.TABLES[table % len(F.TABLES)]

    def edit(name: str, b: bytes) -> bytes:
        if name != f"table.{tname}":
            return b
        rows, raw, cols, block = F.table_block(b)
        lay = _layout(cols, rows)[0]
        names = list(lay)
        off, dt, shape = lay[names[column % len(names)]]
        a = block[off:off + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)
        live_off, _, _ = lay["live"]
        live = np.flatnonzero(block[live_off:live_off + rows])
        r = int(live[row % len(live)]) if len(live) and shape[0] == rows else row % shape[0]
        v = _EXTREMES[value % len(_EXTREMES)]
        with np.errstate(all="ignore"):
            if dt.kind == "b":
                a.view(np.uint8)[r] = int(v) & 0xFF if isinstance(v, int) else 2
            elif dt.kind in "iu":
                a[r] = np.array(int(v) if isinstance(v, int) else -7).astype(dt) if isinstance(v, int) \
                    else np.array(-7, dt)
            else:
                a[r] = v
        return F.table_section(rows, raw, cols, block)
    _try(_reassembled(data, edit))


test_column_pushed, test_column_pushed_fuzz = fuzz_pair(
    st.integers(0, 2), st.integers(0, 6), st.integers(0, 40), st.integers(0, 200), st.integers(0, 40))(_column)


# ---------------------------------------------------------------- a plain value pushed over its range
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 63), (1 << 63) - 1),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5), st.binary(max_size=5),
                    st.lists(st.integers(-3, 3), max_size=3).map(tuple),
                    st.lists(st.integers(-3, 3), max_size=2))      # (a list: never hashable, where a name is)


def _paths(v, path=()):
    """Every path to a leaf or container inside the plain value ``v``."""
    yield path
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _paths(x, (*path, k))
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            yield from _paths(x, (*path, i))


def _replace(v, path, new):
    if not path:
        return new
    k, rest = path[0], path[1:]
    if isinstance(v, dict):
        out = dict(v)
        out[k] = _replace(v[k], rest, new)
        return out
    out = list(v)
    out[k] = _replace(v[k], rest, new)
    return tuple(out) if isinstance(v, tuple) else out


def _value(which: int, section: int, pick: int, new) -> None:
    files, _ = _setup()
    data = files[which % len(files)]
    target = ("values", "meta")[section % 2]

    def edit(name: str, b: bytes) -> bytes:
        if name != target:
            return b
        if target == "values":                # (each value's bytes in the section's map: the values inside)
            v = F.values_of(b)
            paths = list(_paths(v))[1:]
            out = _replace(v, paths[pick % len(paths)], new)
            if pick % 11 == 0:                # (now and then a value's bytes themselves pushed)
                raw = plaindata.decode(b)
                return plaindata.encode({**raw, F.VALUES[pick % len(F.VALUES)]: new})
            return F.values_section(out)
        v = plaindata.decode(b)
        paths = list(_paths(v))
        return plaindata.encode(_replace(v, paths[pick % len(paths)], new))
    _try(_reassembled(data, edit))


test_value_pushed, test_value_pushed_fuzz = fuzz_pair(st.integers(0, 2), st.integers(0, 1), st.integers(0, 5000),
                                                      _VALUES)(_value)


# ---------------------------------------------------------------- a count pushed over its range
def _count(which: int, field: int, item: int, value: int) -> None:
    """A counter, or an item of one of the counts section's lists (one item appended or
    dropped too), pushed to an extreme: the section is rewritten whole (its lengths agree)."""
    files, _ = _setup()
    data = files[which % len(files)]
    names = (*F.COUNTERS, *F.COUNT_LISTS, "pool.out")
    fname = names[field % len(names)]
    v = _EXTREMES[value % len(_EXTREMES)]
    n = int(v) if isinstance(v, int) else -7

    def edit(name: str, b: bytes) -> bytes:
        if name != "counts":
            return b
        c = F.counts_of(b)
        if fname in F.COUNTERS:
            c[fname] = n
        else:
            a = c[fname]
            if item % 7 == 5:                     # one more
                a = np.concatenate([a, a[:1] if len(a) else np.zeros((1, *a.shape[1:]), a.dtype)])
            elif item % 7 == 6 and len(a):        # one fewer
                a = a[:-1]
            elif len(a):
                a = a.copy()
                a.reshape(-1)[item % a.size] = bool(n & 1) if a.dtype == np.bool_ else n
            c[fname] = a
        return F.counts_section(c)
    _try(_reassembled(data, edit))


test_count_pushed, test_count_pushed_fuzz = fuzz_pair(st.integers(0, 2), st.integers(0, 20), st.integers(0, 200),
                                                      st.integers(0, 40))(_count)
