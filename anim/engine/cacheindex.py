"""numba's cache index files (``*.nbi``) read and merged as pickle opcodes, never unpickled.

What goes in: the bytes of an index numba wrote (numba/core/caching.py, IndexDataCacheFile:
the pickled numba version, then the pickled ``(source stamp, {key: data file name})``, a key
being numba's ``(signature, codegen magic tuple, bytecode hashes)``). ``read_index`` walks
both pickles' opcodes (``pickletools.genops``) and evaluates them symbolically: constants,
tuples, lists, dicts, globals and calls are described as plain data; nothing is imported,
looked up, built or called, whatever the bytes. What comes out: an ``Index`` (the version, the
stamp, each entry's key as a comparable description and its data file's name; a key set twice
is one entry, the last one's file, as numba's unpickled dict has it).

What is rejected (``BadIndex``, a ValueError): a cut stream or trailing bytes, an opcode
numba's index pickles never hold (persistent ids, extension codes, NEWOBJ, BUILD, INST,
OBJ, stack tricks), a global other than numba's type classes and the two functions that
rebuild them (``copyreg._reconstructor``, ``numba.core.types.abstract._type_reconstructor``)
or a class of scuffle named as data, a call of anything else or of those with other
arguments, a data file name that is not ``<base>.<n>.nbc``, and a layout other than numba's.

``merge_index`` writes one index from two of the same version and stamp: the target's
entries kept, the new ones added (a key the target has keeps its data file, which the
caller overwrites, and is written once). Each key is copied as its own opcode bytes with the memo references
renumbered (``_Out``); the values are written anew. A merge the keys' memo references do
not allow (a key pointing into another part of its file) raises ``Unlinkable``: the caller
then replaces the index. numba loads the result (it unpickles its cache as always: the
folder is this user's own, anim.engine.jitcache); scuffle never does.
"""
from __future__ import annotations

import io
import pickletools
import re
import struct
from dataclasses import dataclass

__all__ = ["BadIndex", "Unlinkable", "Index", "Entry", "read_index", "merge_index", "data_name", "ALLOWED_CALLS"]


class BadIndex(ValueError):
    """The bytes are not an index of numba's layout and shapes (the message says why)."""


class Unlinkable(Exception):
    """Two indexes that cannot be merged key by key (a key refers to memo entries outside its bytes)."""


# the functions numba's keys call to rebuild a type (numba.core.types.abstract.Type.__reduce__)
_TYPE_REBUILD = ("numba.core.types.abstract", "_type_reconstructor")
_RECONSTRUCTOR = ("copyreg", "_reconstructor")
ALLOWED_CALLS = (_TYPE_REBUILD, _RECONSTRUCTOR)
_OBJECT = ("builtins", "object")
_TYPES = "numba.core.types."
_MAX_DEPTH = 200

_CONSTANTS = {"NONE": lambda a: None, "NEWTRUE": lambda a: True, "NEWFALSE": lambda a: False}
_SCALARS = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT", "UNICODE",
            "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "SHORT_BINBYTES", "BINBYTES", "BINBYTES8", "STRING",
            "BINSTRING", "SHORT_BINSTRING"}
_STRINGS = {"UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"}
_PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}


class _Node:
    """A value the pickle would build, described: ``kind`` (tuple, list, dict, set,
    frozenset, global, call) and its parts. ``starts``: for a tuple, the op index where
    each part's opcodes begin; ``items``: for a dict, (key, key start, value, value start,
    end) per item set."""

    __slots__ = ("kind", "parts", "starts", "items")

    def __init__(self, kind: str, parts: list, starts: list | None = None):
        self.kind = kind
        self.parts = parts
        self.starts = starts
        self.items: list[tuple] = []


@dataclass(frozen=True)
class Entry:
    """One overload of the index: ``key`` (comparable description), ``name`` (its data
    file), and the op spans of its key and value in the index's second pickle."""
    key: object
    name: str
    key_span: tuple[int, int]
    value_span: tuple[int, int]


@dataclass(frozen=True)
class Index:
    """An index read as opcodes: numba's ``version``, the source ``stamp`` (described),
    the ``entries``, the raw ``head`` (the version's pickle) and the second pickle's ops."""
    version: str
    stamp: object
    entries: tuple[Entry, ...]
    head: bytes
    ops: tuple
    stamp_span: tuple[int, int]
    raw: bytes


@dataclass(frozen=True)
class _Op:
    name: str
    arg: object
    raw: bytes
    memo: int | None          # the memo index a MEMOIZE / PUT assigns


def data_name(base: str, number: int) -> str:
    """numba's name of data file ``number`` of the function whose files start with ``base``."""
    return f"{base}.{number}.nbc"


def _read_ops(stream: io.BytesIO, data: bytes) -> list[_Op]:
    """The ops of the one pickle at ``stream``'s position (BadIndex: cut or not a pickle)."""
    raw: list[tuple] = []
    try:
        for op, arg, pos in pickletools.genops(stream):
            raw.append((op.name, arg, pos))
    except (ValueError, EOFError, struct.error, UnicodeDecodeError) as exc:
        raise BadIndex(f"not a whole pickle ({exc})") from None
    if not raw or raw[-1][0] != "STOP":
        raise BadIndex("a pickle without its STOP")
    ends = [p for _, _, p in raw[1:]] + [stream.tell()]
    ops: list[_Op] = []
    memo = 0
    for (name, arg, pos), end in zip(raw, ends):
        index = None
        if name == "MEMOIZE":
            index, memo = memo, memo + 1
        elif name in _PUTS:
            index = int(arg)                                  # type: ignore[arg-type]
            memo = max(memo, index + 1)
        ops.append(_Op(name, arg, data[pos:end], index))
    return ops


def _global(module: object, name: object) -> _Node:
    """A global named in the pickle, if one numba's keys may name (BadIndex otherwise)."""
    if not (isinstance(module, str) and isinstance(name, str) and name.isidentifier()):
        raise BadIndex("a global named by something other than two names")
    # a class of numba's types or of scuffle's (named tuples' classes), by a plain module
    # path: no dunder module (``scuffle.__main__`` would run the command line when imported)
    ok = (module, name) in (_TYPE_REBUILD, _RECONSTRUCTOR, _OBJECT) or (
        module.startswith((_TYPES, "scuffle.")) and not name.startswith("__")
        and all(p.isidentifier() and not p.startswith("__") for p in module.split(".")))
    if not ok:
        raise BadIndex(f"a global numba's index keys never name: {module}.{name}")
    return _Node("global", [module, name])


def _is_global(v: object, which: tuple[str, str]) -> bool:
    return isinstance(v, _Node) and v.kind == "global" and tuple(v.parts) == which


def _call(fn: object, args: object) -> _Node:
    """A call the pickle would make, if it is numba's rebuild of one of its types:
    ``_type_reconstructor(copyreg._reconstructor, (numba type class, object, None), state)``
    with ``copyreg._reconstructor(numba type class, object, None)``. BadIndex otherwise."""
    if not (isinstance(args, _Node) and args.kind == "tuple"):
        raise BadIndex("a call whose arguments are not a tuple")
    a = args.parts
    if _is_global(fn, _RECONSTRUCTOR):
        if len(a) == 3 and isinstance(a[0], _Node) and a[0].kind == "global" and a[0].parts[0].startswith(_TYPES) \
                and _is_global(a[1], _OBJECT) and a[2] is None:
            return _Node("call", [fn, args])
        raise BadIndex("copyreg._reconstructor called on something other than a numba type class")
    if _is_global(fn, _TYPE_REBUILD):
        if len(a) == 3 and _is_global(a[0], _RECONSTRUCTOR) and isinstance(a[1], _Node) and a[1].kind == "tuple" \
                and (a[2] is None or (isinstance(a[2], _Node) and a[2].kind == "dict")):
            return _Node("call", [fn, args])
        raise BadIndex("numba's _type_reconstructor called with other arguments than numba's own")
    raise BadIndex("a call of something other than numba's type rebuild")


def _evaluate(ops: list[_Op]) -> tuple[object, object]:
    """The value the ops describe (not built) and its stack entry's start op index."""
    mark = object()
    stack: list[list] = []               # [value, start op index]
    marks: list[int] = []
    memo: dict[int, object] = {}

    def pop(n: int) -> list[list]:
        if n > len(stack) - (marks[-1] if marks else 0):
            raise BadIndex("an opcode with too few values on the stack")
        out = stack[len(stack) - n:] if n else []
        del stack[len(stack) - n:]
        return out

    def to_mark() -> tuple[list[list], int]:
        if not marks:
            raise BadIndex("an opcode without its MARK")
        at = marks.pop()
        items = stack[at:]
        del stack[at:]
        start = stack.pop()[1] if stack and stack[-1][0] is mark else None
        if start is None:
            raise BadIndex("a MARK lost")
        return items, start

    for i, op in enumerate(ops):
        name, arg = op.name, op.arg
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            if len(stack) != 1 or marks or i != len(ops) - 1:
                raise BadIndex("a pickle that does not end with one value")
            return stack[0][0], stack[0][1]
        if name == "MARK":
            stack.append([mark, i])
            marks.append(len(stack))
        elif name == "MEMOIZE" or name in _PUTS:
            if not stack or stack[-1][0] is mark:
                raise BadIndex("a memo of nothing")
            memo[op.memo] = stack[-1][0]                       # type: ignore[index]
        elif name in _GETS:
            if arg not in memo:
                raise BadIndex("a memo reference to nothing")
            stack.append([memo[arg], i])                       # type: ignore[index]
        elif name in _CONSTANTS:
            stack.append([_CONSTANTS[name](arg), i])
        elif name in _SCALARS:
            stack.append([arg, i])
        elif name == "EMPTY_TUPLE":
            stack.append([_Node("tuple", [], []), i])
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            items = pop(int(name[-1]))
            start = items[0][1] if items else i
            stack.append([_Node("tuple", [v for v, _ in items], [s for _, s in items]), start])
        elif name == "TUPLE":
            items, start = to_mark()
            stack.append([_Node("tuple", [v for v, _ in items], [s for _, s in items]), start])
        elif name in ("EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET"):
            stack.append([_Node(name[6:].lower(), []), i])
        elif name in ("LIST", "DICT", "FROZENSET"):
            items, start = to_mark()
            node = _Node(name.lower(), [v for v, _ in items])
            if name == "DICT":
                if len(items) % 2:
                    raise BadIndex("a dict of an odd count")
                node = _Node("dict", [])
                node.items = [(items[k][0], items[k][1], items[k + 1][0], items[k + 1][1],
                               items[k + 2][1] if k + 2 < len(items) else i) for k in range(0, len(items), 2)]
            stack.append([node, start])
        elif name in ("APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS"):
            if name in ("APPEND", "SETITEM"):
                items = pop(1 if name == "APPEND" else 2)
            else:
                items, _ = to_mark()
            target = stack[-1][0] if stack else None
            want = {"APPEND": "list", "APPENDS": "list", "SETITEM": "dict", "SETITEMS": "dict", "ADDITEMS": "set"}[name]
            if not (isinstance(target, _Node) and target.kind == want):
                raise BadIndex(f"{name} on something other than a {want}")
            if want == "dict":
                if len(items) % 2:
                    raise BadIndex("a dict of an odd count")
                target.items.extend((items[k][0], items[k][1], items[k + 1][0], items[k + 1][1],
                                     items[k + 2][1] if k + 2 < len(items) else i) for k in range(0, len(items), 2))
            else:
                target.parts.extend(v for v, _ in items)
        elif name == "GLOBAL":
            module, _, attr = str(arg).partition(" ")
            stack.append([_global(module, attr), i])
        elif name == "STACK_GLOBAL":
            (module, start), (attr, _) = pop(2)
            stack.append([_global(module, attr), start])
        elif name == "REDUCE":
            (fn, start), (args, _) = pop(2)
            stack.append([_call(fn, args), start])
        else:
            raise BadIndex(f"an opcode numba's index never holds: {name}")
    raise BadIndex("a pickle without its STOP")


# A numba type's state holds ``_code``, the number its process gave the type when it was
# first made (an interning counter): two processes pickle the same type with two codes,
# and numba's types compare equal without it (by class and key). A key compiled by two
# processes must be one key here as it is one in the dict numba unpickles.
_PROCESS_ONLY = "_code"


def _freeze(v: object, active: set | None = None, depth: int = 0) -> object:
    """A comparable, hashable description of a described value (equal only where the
    values the pickles would build are: types are part of it, so 1, 1.0 and True differ;
    a numba type's state without its process's ``_code``, as numba compares types)."""
    if depth > _MAX_DEPTH:
        raise BadIndex("a value nested too deep")
    if not isinstance(v, _Node):
        if isinstance(v, float):
            return ("float", v.hex())
        return (type(v).__name__, v)
    active = set() if active is None else active
    if id(v) in active:
        raise BadIndex("a value that holds itself")
    active.add(id(v))
    try:
        if v.kind == "dict":
            return ("dict",) + tuple((_freeze(k, active, depth + 1), _freeze(x, active, depth + 1))
                                     for k, _, x, _, _ in v.items)
        if v.kind == "global":
            return ("global",) + tuple(v.parts)
        if v.kind == "call" and _is_global(v.parts[0], _TYPE_REBUILD):
            fn, args = v.parts                 # _type_reconstructor(copyreg._reconstructor, (cls, object, None), state)
            rebuild, cls_args, state = args.parts
            if isinstance(state, _Node) and state.kind == "dict":
                kept = _Node("dict", [])
                kept.items = [item for item in state.items if item[0] != _PROCESS_ONLY]
                state = kept
            return ("call", _freeze(fn, active, depth + 1),
                    ("tuple",) + tuple(_freeze(p, active, depth + 1) for p in (rebuild, cls_args, state)))
        return (v.kind,) + tuple(_freeze(p, active, depth + 1) for p in v.parts)
    finally:
        active.discard(id(v))


def read_index(data: bytes, base: str) -> Index:
    """The index ``data`` of the function whose cache files start with ``base`` (e.g.
    ``kernels_pose.pose_stacks-955.py311``), read as opcodes (see the module docstring).
    BadIndex: anything but an index of numba's layout and shapes, or a data file name not
    ``<base>.<n>.nbc``."""
    stream = io.BytesIO(data)
    first = _read_ops(stream, data)
    head = data[:stream.tell()]
    version, _ = _evaluate(first)
    if not isinstance(version, str):
        raise BadIndex("numba's version is not a string")
    ops = _read_ops(stream, data)
    if stream.tell() != len(data):
        raise BadIndex("bytes after the index")
    top, _ = _evaluate(ops)
    if not (isinstance(top, _Node) and top.kind == "tuple" and len(top.parts) == 2):
        raise BadIndex("not numba's (stamp, overloads)")
    stamp, overloads = top.parts
    if not (isinstance(overloads, _Node) and overloads.kind == "dict"):
        raise BadIndex("the overloads are not a dict")
    assert top.starts is not None
    pattern = re.compile(re.escape(base) + r"\.[1-9][0-9]{0,8}\.nbc")
    entries: dict[object, Entry] = {}
    for key, key_start, value, value_start, end in overloads.items:
        if not (isinstance(value, str) and pattern.fullmatch(value)):
            raise BadIndex(f"a data file name not of {base}: {value!r}")
        frozen = _freeze(key)
        # a key set twice is one entry, the last one's file, in the first one's place: the
        # dict numba unpickles
        entries[frozen] = Entry(frozen, value, (key_start, value_start), (value_start, end))
    return Index(version, _freeze(stamp), tuple(entries.values()), head, tuple(ops), (top.starts[0], top.starts[1]),
                 data)


class _Out:
    """A pickle written op by op from the ops of others: MEMOIZE numbered anew, each
    source's memo references rewritten through its own map (Unlinkable: a reference
    to a memo entry not copied)."""

    def __init__(self) -> None:
        self.buf = bytearray(b"\x80\x04")                      # PROTO 4 (numba's)
        self.count = 0

    def memoize(self) -> int:
        self.buf += b"\x94"                                    # MEMOIZE
        self.count += 1
        return self.count - 1

    def get(self, index: int) -> None:
        self.buf += (b"h" + bytes([index])) if index < 256 else (b"j" + struct.pack("<I", index))

    def copy(self, ops: tuple, span: tuple[int, int], mapping: dict[int, int]) -> None:
        for op in ops[span[0]:span[1]]:
            if op.name in ("FRAME", "PROTO"):
                continue
            if op.memo is not None:
                mapping[op.memo] = self.memoize()
            elif op.name in _GETS:
                if op.arg not in mapping:
                    raise Unlinkable("a key refers to a memo entry outside the bytes copied")
                self.get(mapping[op.arg])
            else:
                self.buf += op.raw

    def string(self, text: str) -> int:
        raw = text.encode("utf-8")
        self.buf += (b"\x8c" + bytes([len(raw)]) if len(raw) < 256 else b"X" + struct.pack("<I", len(raw))) + raw
        return self.memoize()


def merge_index(old: Index, new: Index, base: str) -> tuple[bytes, dict[str, str]]:
    """One index holding ``old``'s entries and ``new``'s (same version and stamp, else
    ValueError): returns its bytes and, per data file name of ``new``, the name it has in
    the merged index (a key ``old`` holds keeps its old name: the caller overwrites that
    file; a key it does not gets the first number no entry uses). Unlinkable: the keys
    cannot be copied on their own (the caller replaces the index with ``new``)."""
    if old.version != new.version or old.stamp != new.stamp:
        raise ValueError("indexes of another numba version or source stamp are not merged")
    names = {e.key: e.name for e in old.entries}
    used = set(names.values())
    renamed: dict[str, str] = {}
    for e in new.entries:
        if e.key in names:
            renamed[e.name] = names[e.key]
            continue
        number = 1
        while data_name(base, number) in used:
            number += 1
        renamed[e.name] = names[e.key] = data_name(base, number)
        used.add(renamed[e.name])
    out = _Out()
    maps: dict[int, dict[int, int]] = {id(old): {}, id(new): {}}
    out.copy(new.ops, new.stamp_span, maps[id(new)])
    out.buf += b"}"                                            # EMPTY_DICT
    out.memoize()
    out.buf += b"("                                            # MARK
    kept = {e.key for e in old.entries}
    for index, name_of, skip in ((old, lambda e: e.name, set()), (new, lambda e: renamed[e.name], kept)):
        mapping = maps[id(index)]
        for e in index.entries:
            if e.key in skip:                          # old's entry stays, written once
                continue
            out.copy(index.ops, e.key_span, mapping)
            at = out.string(name_of(e))
            for op in index.ops[e.value_span[0]:e.value_span[1]]:
                if op.memo is not None:                        # the value's own memo: the name written anew
                    mapping[op.memo] = at
    out.buf += b"u\x86"                                        # SETITEMS, TUPLE2
    out.memoize()
    out.buf += b"."                                            # STOP
    data = new.head + bytes(out.buf)
    merged = read_index(data, base)                            # the result checked as numba would read it
    if {e.key: e.name for e in merged.entries} != names or merged.stamp != new.stamp:
        raise Unlinkable("the merged index does not read back as merged")
    return data, renamed
