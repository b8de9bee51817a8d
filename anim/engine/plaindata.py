"""Plain data as bytes: an encoding that can only ever give numbers, strings, bytes, lists,
tuples, maps and numpy arrays of a few dtypes.

Snapshots (and anything else scuffle reads from a stranger) carry their values in this
form: nothing in the bytes names a class or a function, so reading them runs no code, and
the reader checks every length against the bytes that are left before it allocates, so a
few crafted bytes cannot ask for gigabytes. scuffle's own code rebuilds its objects from
the values (game.runtime.snapshot).

The form (little-endian), one tag byte per value:

| tag | value | then |
|---|---|---|
| 0x00 | None | |
| 0x01 / 0x02 | False / True | |
| 0x03 | int (-2^63 to 2^63 - 1) | 8 bytes, signed |
| 0x05 | float (finite) | 8 bytes, IEEE 754 double |
| 0x06 | str | u32 length, UTF-8 |
| 0x07 | bytes | u32 length, the bytes |
| 0x08 / 0x09 | list / tuple | u32 count, the items |
| 0x0a | dict | u32 count, then key, value for each (keys: None, bool, int, float, str, bytes, tuples of them) |
| 0x0b | numpy array | u8 dtype code (``DTYPES``), u8 ndim (0-4), u64 per dimension, the C-order bytes |

``encode`` refuses anything else (PlainDataError naming where in the value it is);
``decode`` refuses bytes that are not exactly one such value within its limits
(PlainDataError naming the byte offset). Original: none (ours).
"""
from __future__ import annotations

import math
import struct
from collections import Counter, deque
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np

__all__ = ["PlainDataError", "encode", "decode", "DTYPES", "MAX_DEPTH", "plain_key"]


class PlainDataError(ValueError):
    """A value with no plain form, or bytes that are not one (one line, naming where)."""


# The array dtypes the form carries, by code (little-endian on the wire).
DTYPES: tuple[np.dtype, ...] = tuple(np.dtype(t).newbyteorder("<") for t in (
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float32, np.float64))
_CODE = {d: i for i, d in enumerate(DTYPES)}
_CODE.update({d.newbyteorder("="): i for i, d in enumerate(DTYPES)})
# a 1-d array of a native little-endian dtype: its tag, code and ndim, by dtype
_NATIVE1 = {np.dtype(d): b"\x0b" + bytes((i, 1)) for i, d in enumerate(DTYPES)
            if np.dtype(d).newbyteorder("=") == np.dtype(d)}
# the native little-endian dtypes by code, read straight from the bytes (``_decode_fast``)
_FAST1 = {i: d for i, d in enumerate(DTYPES) if d.newbyteorder("=") == d and d.itemsize}
MAX_DEPTH = 32          # containers nested deeper are refused (no recursion limit is reached)
MAX_NDIM = 4

_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_TAG_I = b"\x03"
_TAG_F = b"\x05"
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1


def encode(value: Any, lenient: bool = False) -> bytes:
    """The bytes of ``value`` (see the module docstring). Rejected (PlainDataError naming
    the path, e.g. ``value[3]['x']``): any other type (an enum is written as its value,
    a numpy scalar as a Python number), an int outside int64, a float that is not finite,
    a dict key that is not plain, nesting deeper than MAX_DEPTH, an array of another
    dtype or of more than MAX_NDIM dimensions. ``lenient`` (a digest's encoding, never
    a file's): a dataclass is written as its class name and fields, a set sorted, a deque
    as a list and a Counter as a dict."""
    out: list[bytes] = []
    _enc(value, out, "value", 0, lenient)
    return b"".join(out)


def _enc(v: Any, out: list, where: Any, depth: int, lenient: bool = False) -> None:
    t = v.__class__
    if t is int:
        if not _INT_MIN <= v <= _INT_MAX:
            raise PlainDataError(f"{_path(where)}: {v} is outside int64")
        out.append(_TAG_I + _I64.pack(v))
    elif t is str:
        out.append(_str(v, where))
    elif v is None:
        out.append(b"\x00")
    elif t is bool:
        out.append(b"\x02" if v else b"\x01")
    elif t is float:
        if not math.isfinite(v):
            raise PlainDataError(f"{_path(where)}: {v!r} is not a finite number")
        out.append(_TAG_F + _F64.pack(v))
    elif t is tuple or t is list:
        if depth >= MAX_DEPTH:
            raise PlainDataError(f"{_path(where)}: nested more than {MAX_DEPTH} deep")
        app = out.append
        app((b"\x09" if t is tuple else b"\x08") + _U32.pack(len(v)))
        for i, x in enumerate(v):
            # the plain items written here (most of a state's values): no call per item
            tx = x.__class__
            if tx is int and _SMALL_LO <= x < _SMALL_HI:
                app(_SMALL[x - _SMALL_LO])
            elif tx is str and x in _STRS:
                app(_STRS[x])
            elif tx is int and _INT_MIN <= x <= _INT_MAX:
                app(_TAG_I + _I64.pack(x))
            elif tx is str and x.isascii():
                app(_ascii(x))
            elif tx is float and math.isfinite(x):
                app(_TAG_F + _F64.pack(x))
            elif x is None:
                app(b"\x00")
            else:
                _enc(x, out, (where, i), depth + 1, lenient)
    elif t is dict:
        if depth >= MAX_DEPTH:
            raise PlainDataError(f"{_path(where)}: nested more than {MAX_DEPTH} deep")
        app = out.append
        app(b"\x0a" + _U32.pack(len(v)))
        for k, x in v.items():
            tk = k.__class__
            if tk is str and k in _STRS:
                app(_STRS[k])
            elif tk is int and _SMALL_LO <= k < _SMALL_HI:
                app(_SMALL[k - _SMALL_LO])
            elif tk is int and _INT_MIN <= k <= _INT_MAX:
                app(_TAG_I + _I64.pack(k))
            elif tk is str and k.isascii():
                app(_ascii(k))
            else:
                if tk not in _FLAT:
                    plain_key(k, where)
                _enc(k, out, where, depth + 1, lenient)
            tx = x.__class__
            if tx is int and _SMALL_LO <= x < _SMALL_HI:
                app(_SMALL[x - _SMALL_LO])
            elif tx is str and x in _STRS:
                app(_STRS[x])
            elif tx is int and _INT_MIN <= x <= _INT_MAX:
                app(_TAG_I + _I64.pack(x))
            elif tx is str and x.isascii():
                app(_ascii(x))
            elif x is None:
                app(b"\x00")
            else:
                _enc(x, out, (where, k), depth + 1, lenient)
    elif t is bytes or t is bytearray or t is memoryview:
        b = bytes(v)
        out.append(b"\x07" + _U32.pack(len(b)) + b)
    elif t is np.ndarray and v.ndim == 1 and v.flags.c_contiguous and v.dtype in _NATIVE1:
        out.append(_NATIVE1[v.dtype] + _U64.pack(v.shape[0]) + v.tobytes())      # the common case, at once
    elif t is np.ndarray:
        code = _CODE.get(v.dtype)
        if code is None:
            raise PlainDataError(f"{_path(where)}: an array of dtype {v.dtype} has no plain form")
        if v.ndim > MAX_NDIM:
            raise PlainDataError(f"{_path(where)}: an array of {v.ndim} dimensions (at most {MAX_NDIM})")
        a = np.ascontiguousarray(v, dtype=DTYPES[code])
        out.append(b"\x0b" + bytes((code, a.ndim)) + b"".join(_U64.pack(n) for n in a.shape))
        out.append(a.tobytes())
    elif isinstance(v, bool):                     # (an IntEnum of bool: not ours)
        out.append(b"\x02" if v else b"\x01")
    elif isinstance(v, (int, np.integer)) and not isinstance(v, np.bool_):
        _enc(int(v), out, where, depth)           # an IntEnum / IntFlag, a numpy integer: its number
    elif isinstance(v, np.bool_):
        out.append(b"\x02" if v else b"\x01")
    elif isinstance(v, (float, np.floating)):
        _enc(float(v), out, where, depth)
    elif isinstance(v, str):                      # a StrEnum: its text
        _enc(str.__str__(v), out, where, depth)
    elif lenient and is_dataclass(v) and not isinstance(v, type):
        _enc((t.__qualname__, *(getattr(v, f.name) for f in fields(v))), out, where, depth, lenient)
    elif lenient and isinstance(v, (set, frozenset)):
        _enc(sorted(v, key=repr), out, where, depth, lenient)
    elif lenient and isinstance(v, Counter):
        _enc(dict(v), out, where, depth, lenient)
    elif lenient and isinstance(v, deque):
        _enc(list(v), out, where, depth, lenient)
    else:
        raise PlainDataError(f"{_path(where)}: {t.__name__} has no plain form (numbers, strings, bytes, lists, "
                             "tuples, dicts and numpy arrays only)")


_FLAT = frozenset({int, str, float, bool, type(None), bytes})

# The encodings of the small ints and of the short ASCII strings met so far (names, keys,
# kinds: the same few in every state), written by lookup instead of packing each time.
_SMALL_LO, _SMALL_HI = -256, 4096
_SMALL = [_TAG_I + _I64.pack(i) for i in range(_SMALL_LO, _SMALL_HI)]
_STRS: dict[str, bytes] = {}
_STRS_MAX = 4096               # strings kept (then forgotten all at once)
_STR_LONG = 64                 # a longer string is not kept


def _ascii(x: str) -> bytes:
    """An ASCII string's encoding (kept when short)."""
    e = b"\x06" + _U32.pack(len(x)) + x.encode("ascii")
    if len(x) <= _STR_LONG:
        if len(_STRS) >= _STRS_MAX:
            _STRS.clear()
        _STRS[x] = e
    return e


def _path(where: Any) -> str:
    """A value's path for an error line: ``value[3]['x']`` (kept as (parent, key) pairs
    while encoding, so that no text is made unless something is refused)."""
    keys = []
    while where.__class__ is tuple:
        where, k = where
        keys.append(f"[{k!r}]" if k.__class__ is not int else f"[{k}]")
    return str(where) + "".join(reversed(keys))


def _str(v: str, where: Any) -> bytes:
    try:
        b = v.encode("utf-8")
    except UnicodeEncodeError:
        raise PlainDataError(f"{_path(where)}: a string that is not UTF-8 (a lone surrogate)") from None
    return b"\x06" + _U32.pack(len(b)) + b


def plain_key(k: Any, where: Any = "key") -> None:
    """Refuse (PlainDataError) a dict key that is not plain: None, bool, int, float, str,
    bytes or a tuple of them."""
    if k.__class__ in _FLAT or isinstance(k, (int, str)):
        return
    if k.__class__ is tuple:
        for x in k:
            plain_key(x, where)
        return
    raise PlainDataError(f"{_path(where)}: a key of type {k.__class__.__name__} has no plain form")


def _plain_tuple(k: Any) -> bool:
    """A tuple whose items are plain keys (a dict key the form allows)."""
    return k.__class__ is tuple and all(x.__class__ in _FLAT or _plain_tuple(x) for x in k)


def decode(data: bytes | bytearray | memoryview, max_items: int = 50_000_000) -> Any:
    """The value ``data`` holds (exactly one, with nothing after it). Rejected
    (PlainDataError, naming the byte offset): an unknown tag, a length or count past the
    end of the bytes, an array whose shape asks for more bytes than are left, a float
    that is not finite, invalid UTF-8, an unhashable dict key, nesting deeper than
    MAX_DEPTH, more than ``max_items`` values, bytes left over."""
    mv = bytes(memoryview(data).cast("B")) if not isinstance(data, bytes) else data
    try:
        return _decode_fast(mv, max_items)
    except _Slow:                        # not one value within the limits: the reader names the fault
        pass
    r = _Reader(mv, max_items)
    v = r.value(0)
    if r.pos != len(mv):
        raise PlainDataError(f"{len(mv) - r.pos} bytes after the value (offset {r.pos})")
    return v


class _Slow(Exception):
    """The fast decoder met something it does not take (the reader then names it)."""


_NOKEY = object()


def _decode_fast(b: bytes, max_items: int) -> Any:
    """``decode``'s value, read with one call per container (its plain items read in its
    own loop) where the bytes are one valid value within the limits; anything else raises
    _Slow, and ``_Reader`` reads the bytes again to name the fault. It takes exactly what
    ``_Reader`` takes. Every value takes at least one byte, so a limit of items at least
    the bytes' length is never reached: below it, the reader counts."""
    if max_items < len(b) or not b:
        raise _Slow
    v, pos = _fast_value(b, 0, len(b), 0)
    if pos != len(b):
        raise _Slow
    return v


_unpack_i, _unpack_u, _unpack_f, _unpack_q = _I64.unpack_from, _U32.unpack_from, _F64.unpack_from, _U64.unpack_from


def _fast_value(b: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    """(the value at ``pos``, the position after it); _Slow for anything the reader would
    refuse (see _decode_fast)."""
    tag = b[pos]
    if tag == 0x03:
        if pos + 9 > end:
            raise _Slow
        return _unpack_i(b, pos + 1)[0], pos + 9
    if tag == 0x06:
        if pos + 5 > end:
            raise _Slow
        q = pos + 5 + _unpack_u(b, pos + 1)[0]
        if q > end:
            raise _Slow
        try:
            return b[pos + 5:q].decode("utf-8"), q
        except UnicodeDecodeError:
            raise _Slow from None
    if tag <= 0x02:
        return (None if tag == 0 else tag == 0x02), pos + 1
    if tag == 0x05:
        if pos + 9 > end:
            raise _Slow
        f = _unpack_f(b, pos + 1)[0]
        if f - f != 0.0:                      # not finite
            raise _Slow
        return f, pos + 9
    if tag == 0x07:
        if pos + 5 > end:
            raise _Slow
        q = pos + 5 + _unpack_u(b, pos + 1)[0]
        if q > end:
            raise _Slow
        return b[pos + 5:q], q
    if 0x08 <= tag <= 0x0A:
        if depth >= MAX_DEPTH or pos + 5 > end:
            raise _Slow
        n = _unpack_u(b, pos + 1)[0]
        pos += 5
        if n > end - pos:
            raise _Slow
        if tag == 0x0A:
            return _fast_dict(b, pos, end, n, depth)
        items, pos = _fast_items(b, pos, end, n, depth)
        return (items if tag == 0x08 else tuple(items)), pos
    if tag == 0x0B:
        return _fast_array(b, pos, end, depth)
    raise _Slow


def _fast_items(b: bytes, pos: int, end: int, n: int, depth: int) -> tuple[list, int]:
    """``n`` values from ``pos`` (a list's or a tuple's items: the plain ones read here)."""
    out: list = []
    app = out.append
    for _ in range(n):
        if pos >= end:
            raise _Slow
        tag = b[pos]
        if tag == 0x03 and pos + 9 <= end:
            app(_unpack_i(b, pos + 1)[0])
            pos += 9
        elif tag <= 0x02:
            app(None if tag == 0 else tag == 0x02)
            pos += 1
        else:
            v, pos = _fast_value(b, pos, end, depth + 1)
            app(v)
    return out, pos


def _fast_dict(b: bytes, pos: int, end: int, n: int, depth: int) -> tuple[dict, int]:
    """A dict of ``n`` entries from ``pos`` (keys plain: see plain_key)."""
    d: dict = {}
    for _ in range(n):
        if pos >= end:
            raise _Slow
        tag = b[pos]
        if tag == 0x06 and pos + 5 <= end:            # a text key (most): read here
            q = pos + 5 + _unpack_u(b, pos + 1)[0]
            if q > end:
                raise _Slow
            try:
                k = b[pos + 5:q].decode("utf-8")
            except UnicodeDecodeError:
                raise _Slow from None
            pos = q
        else:
            k, pos = _fast_value(b, pos, end, depth + 1)
            if k.__class__ not in _FLAT and not _plain_tuple(k):
                raise _Slow
        if pos >= end:
            raise _Slow
        tag = b[pos]
        if tag == 0x03 and pos + 9 <= end:
            d[k] = _unpack_i(b, pos + 1)[0]
            pos += 9
        else:
            d[k], pos = _fast_value(b, pos, end, depth + 1)
    return d, pos


_BYTE_BOOLS = b"\x00\x01"


def _fast_array(b: bytes, pos: int, end: int, depth: int) -> tuple[np.ndarray, int]:
    """An array from ``pos``: a 1-d array of a native dtype read here, any other by the
    reader's own checks."""
    if pos + 11 <= end and b[pos + 2] == 1 and b[pos + 1] in _FAST1:
        dt = _FAST1[b[pos + 1]]
        n = _unpack_q(b, pos + 3)[0]
        q = pos + 11
        if n > end - q or q + n * dt.itemsize > end:
            raise _Slow
        stop = q + n * dt.itemsize
        if not n:
            return np.zeros(0, dt), stop
        if dt.kind == "b" and b[q:stop].translate(None, _BYTE_BOOLS):      # a byte not 0 or 1
            raise _Slow
        v = np.frombuffer(b, dt, n, q).copy()
        if dt.kind == "f" and not (all(map(math.isfinite, v.tolist())) if n <= 32 else np.isfinite(v).all()):
            raise _Slow
        return v, stop
    r = _Reader(b, end)
    r.pos = pos
    try:
        v = r.value(depth)
    except PlainDataError:
        raise _Slow from None
    return v, r.pos


class _Reader:
    __slots__ = ("b", "pos", "end", "left")

    def __init__(self, b, max_items: int):
        self.b, self.pos, self.end, self.left = b, 0, len(b), max_items

    def _need(self, n: int, what: str) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise PlainDataError(f"{what} at offset {p} needs {n} bytes, {self.end - p} left (truncated)")
        self.pos = p + n
        return p

    def value(self, depth: int) -> Any:
        self.left -= 1
        if self.left < 0:
            raise PlainDataError(f"more values than the limit (offset {self.pos})")
        p = self._need(1, "a tag")
        tag = self.b[p]
        if tag == 0x03:
            return _I64.unpack_from(self.b, self._need(8, "an int"))[0]
        if tag == 0x06:
            n = _U32.unpack_from(self.b, self._need(4, "a length"))[0]
            q = self._need(n, "a string")
            try:
                return bytes(self.b[q:q + n]).decode("utf-8")
            except UnicodeDecodeError:
                raise PlainDataError(f"a string at offset {q} is not UTF-8") from None
        if tag == 0x00:
            return None
        if tag == 0x01:
            return False
        if tag == 0x02:
            return True
        if tag == 0x05:
            q = self._need(8, "a float")
            f = _F64.unpack_from(self.b, q)[0]
            if not math.isfinite(f):
                raise PlainDataError(f"a float at offset {q} is not finite ({f!r})")
            return f
        if tag == 0x07:
            n = _U32.unpack_from(self.b, self._need(4, "a length"))[0]
            q = self._need(n, "bytes")
            return bytes(self.b[q:q + n])
        if tag in (0x08, 0x09, 0x0A):
            if depth >= MAX_DEPTH:
                raise PlainDataError(f"containers nested more than {MAX_DEPTH} deep (offset {p})")
            n = _U32.unpack_from(self.b, self._need(4, "a count"))[0]
            if n > self.end - self.pos:                # each item takes at least one byte
                raise PlainDataError(f"a count of {n} at offset {p + 1} is more than the {self.end - self.pos} "
                                     "bytes left (truncated)")
            if tag == 0x0A:
                d: dict = {}
                for _ in range(n):
                    kp = self.pos
                    k = self.value(depth + 1)
                    if k.__class__ not in _FLAT and not _plain_tuple(k):
                        raise PlainDataError(f"a dict key at offset {kp} is a {type(k).__name__}")
                    d[k] = self.value(depth + 1)
                return d
            items = [self.value(depth + 1) for _ in range(n)]
            return items if tag == 0x08 else tuple(items)
        if tag == 0x0B:
            q = self._need(2, "an array's dtype and ndim")
            code, ndim = self.b[q], self.b[q + 1]
            if code >= len(DTYPES):
                raise PlainDataError(f"an array's dtype code {code} at offset {q} is not one of 0-{len(DTYPES) - 1}")
            if ndim > MAX_NDIM:
                raise PlainDataError(f"an array of {ndim} dimensions at offset {q + 1} (at most {MAX_NDIM})")
            shape = struct.unpack_from(f"<{ndim}Q", self.b, self._need(8 * ndim, "an array's shape"))
            dt = DTYPES[code]
            n = dt.itemsize
            for s in shape:                           # checked before any product can grow large
                if s > self.end:
                    raise PlainDataError(f"an array's dimension {s} at offset {q + 2} is more than the bytes left")
                n *= s
            r = self._need(n, "an array's data")
            a = np.frombuffer(self.b, dtype=dt, count=n // dt.itemsize if dt.itemsize else 0, offset=r) \
                if n else np.zeros(0, dt)
            a = a.reshape(shape).astype(dt.newbyteorder("="), copy=True)
            if dt.kind == "f" and not np.isfinite(a).all():
                raise PlainDataError(f"an array at offset {r} holds a number that is not finite")
            if dt.kind == "b" and a.size and (a.view(np.uint8) > 1).any():
                raise PlainDataError(f"a bool array at offset {r} holds a byte that is not 0 or 1")
            return a
        raise PlainDataError(f"unknown tag 0x{tag:02x} at offset {p}")
