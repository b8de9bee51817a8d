"""The plain-data form (anim.engine.plaindata): the fast reader and the naming reader agree.

``decode`` reads a value with ``_decode_fast`` (a call per container) and falls back to
``_Reader`` (which names the fault) on anything it does not take: for every valid
encoding they give equal values, and on bytes changed at random the fast reader either
gives what the naming reader gives or leaves the bytes to it.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from scuffle.anim.engine import plaindata as P


def _value(rng: random.Random, depth: int = 0):
    k = rng.randrange(12 if depth < 4 else 7)
    if k == 0:
        return rng.choice([None, True, False])
    if k == 1:
        return rng.randrange(-(1 << 63), 1 << 63)
    if k == 2:
        return rng.uniform(-1e9, 1e9)
    if k == 3:
        return "".join(rng.choice("ab\u00e9z") for _ in range(rng.randrange(6)))
    if k == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    if k == 5:
        dt = rng.choice(P.DTYPES)
        a = np.array([rng.randrange(2) for _ in range(rng.randrange(5))]).astype(dt.newbyteorder("="))
        return a.reshape(-1, 1) if rng.random() < 0.2 else a
    if k == 6:
        return rng.randrange(300)
    if k in (7, 8):
        items = [_value(rng, depth + 1) for _ in range(rng.randrange(5))]
        return items if k == 7 else tuple(items)
    return {rng.choice([rng.randrange(9), f"k{rng.randrange(9)}", (1, "x")]): _value(rng, depth + 1)
            for _ in range(rng.randrange(5))}


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _slow(data: bytes):
    r = P._Reader(data, 50_000_000)
    v = r.value(0)
    if r.pos != len(data):
        raise P.PlainDataError("bytes after the value")
    return v


@pytest.mark.parametrize("seed", range(40))
def test_the_fast_reader_reads_what_the_naming_reader_reads(seed):
    rng = random.Random(seed)
    for _ in range(25):
        v = _value(rng)
        data = P.encode(v)
        assert _same(P._decode_fast(data, 50_000_000), _slow(data))
        assert _same(P.decode(data), v) or isinstance(v, float)      # (a float: its own bits back)
        bad = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        bad = bytes(bad)
        try:
            want = _slow(bad)
        except (P.PlainDataError, RecursionError):
            want = P.PlainDataError
        try:
            got = P._decode_fast(bad, 50_000_000)
        except P._Slow:
            continue                                   # left to the naming reader
        assert want is not P.PlainDataError and _same(got, want), (v, bad)


def test_a_limit_of_items_below_the_bytes_is_counted_by_the_naming_reader():
    data = P.encode(list(range(10)))
    with pytest.raises(P.PlainDataError, match="more values than the limit"):
        P.decode(data, max_items=5)
    assert P.decode(data, max_items=11) == list(range(10))
