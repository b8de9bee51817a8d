"""``scuffle diff A.jsonl B.jsonl [--fields F,...] [--tolerance T] [--context K] [--names SOURCE] [--json]``.

Compares two traces in the pinned trace format (docs/scenarios.md, "The trace") human
by human and field by field, and reports the first update at which they part: every
field that differs there with both values, and the K updates before it (the context).
Exit status: 0 when they agree, 1 when they differ (so it can gate a regression suite),
2 on an error (one line on stderr: a missing file, a line that is not JSON, a record
without ``update`` or ``human``, a bad ``--fields`` path).

What is compared (docs/tools.md, "Trace diff"):

- Records are matched by (``update``, ``human``). A record one trace has and the other
  lacks is a difference (field ``record``).
- The fields are ``--fields`` (paths, below) or, by default, every top-level key that
  both traces use, except ``update`` and ``human``; keys only one trace uses are listed
  as not compared.
- Numbers: two integers (ids, flags, frames) must be equal; when either side is written
  with a fraction or an exponent (a float), they agree when |a - b| <= the tolerance
  (default 0: exact). NaN agrees with NaN only. Booleans and strings must be equal.
- Lists are compared element by element (a length difference is a difference, named
  ``PATH.length``), objects key by key (a key one side lacks is a difference), so the
  nested ``tasks`` and ``events`` lists are compared field by field
  (``tasks[1].time``).

Names: the text report shows a name beside each id it prints: event types (EventType)
and task types (TaskType) always, clip names beside anim ids (``anim``, ``tasks[i].id``
and ``.next``, ``events[i].id``, ``released[i]``) with ``--names SOURCE``: a scenario
(each human's set), a resource file or a library ("demo"). ``--json`` adds ``a_name`` /
``b_name`` to a named difference.

Field paths: ``NAME``, then any of ``.KEY``, ``[I]`` (I may be negative) and ``[top]``:
``pos[0]``, ``pose.velocity``, ``tasks[top].time``. ``[top]`` picks the task the
playing anim id comes from, as TaskStack_Top does: the last entry (the top of the stack,
the list being bottom to top), or the first when the last is a fade (``type`` 9).
A path that leads nowhere in a record (an index past the end, a missing key) reads as
missing; missing on one side only is a difference.

Original: 0x00175210 TaskStack_Top (the ``[top]`` selector).
Registered in game/cli.py's COMMANDS.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import stat
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Iterator

from scuffle.game.cli.errors import CliError, number, whole
from scuffle.game.runtime.files import MAX_TRACE_BYTES, FileLimitError, read_limited

# The deepest record diff compares (a trace record is 4 levels deep: tasks[i].events[j].x).
MAX_JSON_DEPTH = 64
# The diff's memory budget (docs/tools.md, "Limits"): both traces' bytes, kept whole, plus
# RECORD_COST bytes of index per line, checked from the files' sizes and line counts
# before the records are indexed; a record is parsed only while it is compared.
MAX_DIFF_BYTES = 320 << 20
RECORD_COST = 512
MAX_RECORD_BYTES = 1 << 20          # one line of a trace (a record with its pose is ~5 KB)
MAX_UPDATE = (1 << 63) - 1


def _depth(value) -> int:
    """How deeply lists and objects nest in a JSON value (0 for a scalar); iterative."""
    best, todo = 0, [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            d += 1
            best = max(best, d)
            if d > MAX_JSON_DEPTH:
                return d
            todo.extend((x, d) for x in v)
    return best

__all__ = ["add_arguments", "run", "TraceFile", "read_trace", "parse_path", "select", "compare",
           "diff_traces", "DiffReport", "Difference", "MISSING", "FADE_TYPE", "Names", "load_names"]

FADE_TYPE = 9                 # a fade task (type 9): TaskStack_Top skips it for the bottom task
KEY_FIELDS = ("update", "human")
DEFAULT_CONTEXT = 3
MAX_CONTEXT = 1_000_000       # --context: updates shown before the first difference
SHOWN_DIFFERENCES = 20        # differences listed at the first update (the rest are counted)
SHOWN_CONTEXT_PATHS = 6       # differing paths the context shows
VALUE_WIDTH = 100             # characters of a value shown in the text report


class _Missing:
    """The value of a path that leads nowhere in a record."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


# ---------------------------------------------------------------- reading


class _Index:
    """Where each record sits in a trace's bytes: its (start, end) and line, by number."""

    __slots__ = ("data", "starts", "ends", "lines")

    def __init__(self, data: bytes):
        self.data = data
        self.starts, self.ends, self.lines = array("q"), array("q"), array("q")

    def text(self, i: int) -> str:
        return self.data[self.starts[i]:self.ends[i]].decode("utf-8")


class _RecordView(Mapping):
    """(update, human) -> the record, parsed from the trace's bytes on each look-up (the
    records are never all held parsed: a trace's memory is its bytes and this index)."""

    def __init__(self, keys: dict, index: _Index):
        self._keys, self._index = keys, index

    def __getitem__(self, key) -> dict:
        return json.loads(self._index.text(self._keys[key]))

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key) -> bool:
        return key in self._keys


class _LineView(_RecordView):
    """(update, human) -> the record's line number (1-based)."""

    def __getitem__(self, key) -> int:
        return self._index.lines[self._keys[key]]


@dataclass
class TraceFile:
    """One trace read into memory: records by (update, human) (a read-only mapping, each
    record parsed when looked up), the humans in file order, the top-level keys used, and
    the line of each record (for messages)."""

    path: str
    records: Mapping[tuple[int, str], dict] = field(default_factory=dict)
    lines: Mapping[tuple[int, str], int] = field(default_factory=dict)
    humans: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    size: int = 0                   # bytes of the file
    line_count: int = 0             # its lines (what the diff's budget counts)

    @property
    def updates(self) -> list[int]:
        """The update numbers in the trace, ascending."""
        return sorted({u for u, _ in self.records})


def _read_bytes(path: str, other: int) -> bytearray:
    """A trace's bytes, read into one buffer of its size (no second copy), after the diff's
    budget is checked on its declared size plus ``other`` (the other trace's). Rejected
    (CliError naming the file): what read_limited refuses, and a file past the budget."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CliError(f"cannot read trace {path!r}: cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            read_limited(path, MAX_TRACE_BYTES)          # names the kind (a FIFO, a directory...)
        size = st.st_size
        if size > MAX_TRACE_BYTES:
            raise CliError(f"cannot read trace {path!r}: cannot read: {size} bytes, "
                           f"over the limit of {MAX_TRACE_BYTES} bytes")
        if size + other > MAX_DIFF_BYTES:
            raise CliError(f"{path}: size: the two traces hold {size + other:,} bytes, over the diff's "
                           f"budget of {MAX_DIFF_BYTES:,} bytes")
        buf = bytearray(size)
        view, got = memoryview(buf), 0
        with open(fd, "rb", buffering=0, closefd=False) as fp:
            while got < size:
                n = fp.readinto(view[got:])
                if not n:
                    break
                got += n
            if fp.read(1):
                raise CliError(f"cannot read trace {path!r}: it grew while it was read")
        view.release()
        del buf[got:]
        return buf                                   # a bytearray: bytes' methods, no copy
    except FileLimitError as exc:
        raise CliError(f"cannot read trace {path!r}: {exc.problem}") from None
    except OSError as exc:
        raise CliError(f"cannot read trace {path!r}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_trace(path: str, other_bytes: int = 0, other_records: int = 0) -> TraceFile:
    """Read a JSONL trace.

    In: a file path; ``other_bytes`` / ``other_records`` the sizes of the trace it will be
    compared with (the diff's budget covers both). Out: a TraceFile. Blank lines are
    skipped. Time and memory are linear in the file: each record is parsed once here to
    be checked, then kept as its bytes. Rejected (CliError, one line naming FILE and,
    for a record, LINE): an unreadable file; the two traces past MAX_DIFF_BYTES (their
    bytes plus RECORD_COST per line, checked from the sizes before the records are
    indexed); a line over MAX_RECORD_BYTES; a line that is not UTF-8, not JSON, not a JSON
    object, nested more than 64 deep, or holding an integer of more than 4,300 digits; a
    record whose ``update`` is not an integer 0 to 2^63 - 1 or whose ``human`` is not a
    string (or either is missing); a second record for the same update and human.
    """
    data = _read_bytes(path, other_bytes)
    nlines = data.count(b"\n") + 1
    need = len(data) + other_bytes + RECORD_COST * (nlines + other_records)
    if need > MAX_DIFF_BYTES:
        raise CliError(f"{path}: records: {nlines:,} lines with the other trace's need {need:,} bytes, "
                       f"over the diff's budget of {MAX_DIFF_BYTES:,} bytes")
    index = _Index(data)
    keys: dict[tuple[int, str], int] = {}
    tf = TraceFile(path, _RecordView(keys, index), _LineView(keys, index), size=len(data), line_count=nlines)
    humans: dict[str, str] = {}
    pos, n, size = 0, 0, len(data)
    while pos <= size:
        n += 1
        end = data.find(b"\n", pos)
        end = size if end < 0 else end
        start, pos = pos, end + 1
        if end - start > MAX_RECORD_BYTES:
            raise CliError(f"{path}:{n}: a record of {end - start:,} bytes, over the limit of {MAX_RECORD_BYTES:,}")
        raw = data[start:end]
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise CliError(f"{path}: not UTF-8 text (byte {start + exc.start})") from None
        except json.JSONDecodeError as exc:
            raise CliError(f"{path}:{n}: not JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise CliError(f"{path}:{n}: JSON nested too deeply") from None
        except ValueError:             # an integer past Python's conversion limit
            raise CliError(f"{path}:{n}: an integer of more than 4,300 digits") from None
        if _depth(rec) > MAX_JSON_DEPTH:
            raise CliError(f"{path}:{n}: JSON nested more than {MAX_JSON_DEPTH} levels deep")
        if not isinstance(rec, dict):
            raise CliError(f"{path}:{n}: a trace record is a JSON object, got {type(rec).__name__}")
        upd, who = rec.get("update", MISSING), rec.get("human", MISSING)
        if upd is MISSING or who is MISSING:
            missing = "update" if upd is MISSING else "human"
            raise CliError(f"{path}:{n}: {missing}: missing (every record has update and human)")
        if isinstance(upd, bool) or not isinstance(upd, int):
            raise CliError(f"{path}:{n}: update: expected an integer, got {_brief(json.dumps(upd))}")
        if not 0 <= upd <= MAX_UPDATE:
            raise CliError(f"{path}:{n}: update: expected an integer 0-{MAX_UPDATE}, got {_brief(str(upd))}")
        if not isinstance(who, str):
            raise CliError(f"{path}:{n}: human: expected a string, got {_brief(json.dumps(who))}")
        who = humans.setdefault(who, who)
        key = (upd, who)
        if key in keys:
            raise CliError(f"{path}:{n}: a second record for update {upd}, human {_brief(repr(who))} "
                           f"(the first is line {tf.lines[key]})")
        keys[key] = len(index.starts)
        index.starts.append(start)
        index.ends.append(end)
        index.lines.append(n)
        tf.keys.update(rec)
    tf.humans.extend(humans)
    return tf


def _brief(text: str) -> str:
    """A value for a message, at most 60 characters."""
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------- paths

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PATH_RE = re.compile(rf"^{_NAME}(?:\.{_NAME}|\[(?:-?\d+|top)\])*$")
_STEP_RE = re.compile(rf"\.({_NAME})|\[(-?\d+|top)\]")


def parse_path(text: str) -> tuple:
    """A field path -> its steps: ('tasks', ('top',), 'time') for ``tasks[top].time``.

    A step is a key (str), an index (int) or the ``top`` selector (the tuple ('top',)).
    Rejected (CliError): anything but NAME followed by .KEY, [I] or [top] steps.
    """
    text = text.strip()
    if not _PATH_RE.match(text):
        raise CliError(f"--fields: {text!r} is not a field path (NAME, NAME.KEY, NAME[I], NAME[top])")
    head = re.match(_NAME, text).group(0)
    steps: list = [head]
    for m in _STEP_RE.finditer(text, len(head)):
        if m.group(1) is not None:
            steps.append(m.group(1))
        elif m.group(2) == "top":
            steps.append(("top",))
        else:
            steps.append(int(m.group(2)))
    return tuple(steps)


def path_text(steps: tuple) -> str:
    """The steps of a path back as text (``tasks[top].time``)."""
    out = str(steps[0])
    for s in steps[1:]:
        if isinstance(s, tuple):
            out += "[top]"
        elif isinstance(s, int):
            out += f"[{s}]"
        else:
            out += f".{s}"
    return out


def top_index(tasks: list) -> int:
    """The index TaskStack_Top picks in a bottom-to-top task list: the last entry, or the
    first when the last is a fade (type 9). -1 for an empty list.

    Original: 0x00175210 TaskStack_Top.
    """
    if not tasks:
        return -1
    last = tasks[-1]
    if isinstance(last, dict) and last.get("type") == FADE_TYPE:
        return 0
    return len(tasks) - 1


def select(record: dict, steps: tuple) -> Any:
    """The value a path names in a record, or MISSING where it leads nowhere."""
    v: Any = record
    for s in steps:
        if isinstance(s, str):
            if not isinstance(v, dict) or s not in v:
                return MISSING
            v = v[s]
        else:
            if not isinstance(v, list):
                return MISSING
            i = top_index(v) if isinstance(s, tuple) else s
            if not v or not -len(v) <= i < len(v):
                return MISSING
            v = v[i]
    return v


# ---------------------------------------------------------------- comparing


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numbers_agree(a, b, tol: float) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:                      # also equal infinities
        return True
    return abs(a - b) <= tol


def compare(a: Any, b: Any, path: str, tol: float) -> Iterator[tuple[str, Any, Any]]:
    """The differences between two values: (path, value in A, value in B) for each leaf
    that differs (MISSING where one side has nothing). Lists elementwise (a length
    difference as ``path.length``), objects key by key, numbers within ``tol`` (two
    integers exactly)."""
    if a is MISSING or b is MISSING:
        if not (a is MISSING and b is MISSING):
            yield path, a, b
        return
    if _is_number(a) and _is_number(b):
        if not _numbers_agree(a, b, tol):
            yield path, a, b
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{path}.length", len(a), len(b)
        for i in range(min(len(a), len(b))):
            yield from compare(a[i], b[i], f"{path}[{i}]", tol)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            yield from compare(a.get(k, MISSING), b.get(k, MISSING), f"{path}.{k}", tol)
        return
    if type(a) is not type(b) or a != b:
        yield path, a, b


# ---------------------------------------------------------------- the report


@dataclass(frozen=True)
class Difference:
    """One differing leaf: the update, the human, the leaf path, the field path it came
    from (a --fields entry or a top-level key) and both values (MISSING for none)."""

    update: int
    human: str
    path: str
    field: str
    a: Any
    b: Any

    def to_json(self) -> dict:
        """The difference as a JSON-ready dict (MISSING as null)."""
        return {"update": self.update, "human": self.human, "path": self.path,
                "a": _jsonable(self.a), "b": _jsonable(self.b)}


# The leaf paths whose integers are anim ids (named through a set), event types and task types.
_ANIM_LEAF = re.compile(r"(?:^anim|\.id|\.next|^released\[-?\d+\])$")
_EVENT_TYPE_LEAF = re.compile(r"^events\[-?\d+\]\.type$")
_TASK_TYPE_LEAF = re.compile(r"^tasks\[(?:-?\d+|top)\]\.type$")


class Names:
    """Names shown beside the ids of a diff: clip names from anim sets (``sets``: human ->
    AnimSet; ``default`` for the humans it does not name), and always the event types'
    (EventType) and task types' (TaskType) names. ``of(human, path, value)`` is the name
    of the integer ``value`` at leaf ``path``, or ''."""

    def __init__(self, sets: Mapping[str, Any] | None = None, default: Any = None):
        self.sets = dict(sets or {})
        self.default = default

    def of(self, human: str, path: str, value: Any) -> str:
        if not isinstance(value, int) or isinstance(value, bool):
            return ""
        if _EVENT_TYPE_LEAF.match(path):
            from scuffle.anim.data.clip import EventType
            return EventType(value).name if value in EventType._value2member_map_ else ""
        if _TASK_TYPE_LEAF.match(path):
            from scuffle.anim.playback.tasks import TaskType
            return TaskType(value).name if value in TaskType._value2member_map_ else ""
        if _ANIM_LEAF.search(path):
            aset = self.sets.get(human, self.default)
            if aset is None or not 0 <= value < aset.num_ids:
                return ""
            return aset.name_of(value)
        return ""


def load_names(source: str | None) -> Names:
    """The Names of ``--names SOURCE``: a scenario TOML (each human's set), a resource
    file, or a scenario library's name ("demo"); None: the types' names only. Rejected
    (CliError, one line): a source that is none of these."""
    if source is None:
        return Names()
    from scuffle.game.fighters import registry

    reg = registry()
    if source in reg.libraries and not os.path.isfile(source):
        return Names(default=reg.libraries[source]())
    shown = source if len(source) <= 80 else source[:77] + "..."
    if source.lower().endswith(".toml"):
        from scuffle.game.runtime.scenario import ScenarioError, load_scenario
        try:
            sc = load_scenario(source, reg)
        except ScenarioError as exc:
            raise CliError(f"--names: {exc}") from None
        return Names({h.name: sc.sets[h.set] for h in sc.humans})
    from scuffle.anim.data.animset import AnimSet
    from scuffle.anim.data.resource import ResourceFormatError, load_resource
    try:
        data = read_limited(source, MAX_TRACE_BYTES)
        return Names(default=AnimSet.from_resource(load_resource(data)))
    except FileLimitError as exc:
        raise CliError(f"--names {shown}: {exc.problem}") from None
    except (ResourceFormatError, ValueError) as exc:
        raise CliError(f"--names {shown}: not a scenario (.toml), a resource file or a library "
                       f"({', '.join(reg.libraries)}): {str(exc)[:80]}") from None


@dataclass
class DiffReport:
    """The outcome of diff_traces (see its docstring)."""

    a: TraceFile
    b: TraceFile
    fields: list[str]
    not_compared: dict[str, list[str]]
    tolerance: float
    context: int
    updates: list[int]
    first: list[Difference] = field(default_factory=list)
    differing_updates: int = 0
    by_field: dict[str, int] = field(default_factory=dict)
    context_rows: list[dict] = field(default_factory=list)
    names: Names = field(default_factory=Names)          # the names shown beside ids

    @property
    def agree(self) -> bool:
        """True when no update differs."""
        return not self.first

    @property
    def first_update(self) -> int | None:
        """The first update that differs, or None."""
        return self.first[0].update if self.first else None


def _jsonable(v):
    if v is MISSING:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def _record_diffs(ra: dict | None, rb: dict | None, fields: list[tuple[str, tuple]], update: int, human: str,
                  tol: float) -> list[Difference]:
    if ra is None or rb is None:
        return [Difference(update, human, "record", "record",
                           "present" if ra is not None else MISSING, "present" if rb is not None else MISSING)]
    out = []
    for name, steps in fields:
        for path, va, vb in compare(select(ra, steps), select(rb, steps), name, tol):
            out.append(Difference(update, human, path, name, va, vb))
    return out


def _leaf_steps(path: str, fields: dict[str, tuple]) -> tuple | None:
    """The steps of a leaf path reported by compare (field path + .key / [i] tail)."""
    for name, steps in fields.items():
        if path == name or path.startswith(name + ".") or path.startswith(name + "["):
            tail = path[len(name):]
            if tail.endswith(".length"):
                return None
            extra = [m.group(1) if m.group(1) is not None else int(m.group(2))
                     for m in _STEP_RE.finditer(tail)]
            return steps + tuple(extra)
    return None


def diff_traces(a: TraceFile, b: TraceFile, fields: list[str] | None = None, tolerance: float = 0.0,
                context: int = DEFAULT_CONTEXT, start: int = 0) -> DiffReport:
    """Compare two traces.

    In: the two TraceFiles, the field paths (None: every top-level key both traces use,
    but update and human), the tolerance (>= 0) and the number of context updates.
    Out: a DiffReport: ``first`` the differences at the first update where any human's
    records differ (every human and field there), ``differing_updates`` how many
    updates differ, ``by_field`` per field path the number of updates it differs on,
    ``context_rows`` the values of the first differing paths over the ``context``
    updates before and at the first one. ``start``: compare updates from
    this one on (a trace resumed from a snapshot starts there). Rejected (CliError): a field path that does not
    parse, or whose first name neither trace uses; a negative or non-finite tolerance.
    """
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise CliError(f"--tolerance: {tolerance} must be a finite number >= 0")
    if context < 0:
        raise CliError(f"--context: {context} must be >= 0")
    both = (a.keys & b.keys) - set(KEY_FIELDS)
    if fields is None:
        names = sorted(both, key=_field_order)
        parsed = [(n, (n,)) for n in names]
        not_compared = {"a": sorted(a.keys - b.keys, key=_field_order),
                        "b": sorted(b.keys - a.keys, key=_field_order)}
    else:
        parsed = []
        for text in fields:
            steps = parse_path(text)
            if steps[0] not in a.keys | b.keys:
                raise CliError(f"--fields: {steps[0]!r} is in neither trace")
            parsed.append((path_text(steps), steps))
        not_compared = {"a": [], "b": []}
    # Linear in the records (and a sort): each update's humans are grouped once, in the
    # order of the humans list (A's, then those only B has), instead of a look-up of every
    # human at every update.
    rank = {h: i for i, h in enumerate(dict.fromkeys(list(a.humans) + list(b.humans)))}
    at: dict[int, set[str]] = {}
    for u, h in a.records:
        at.setdefault(u, set()).add(h)
    for u, h in b.records:
        at.setdefault(u, set()).add(h)
    updates = [u for u in sorted(at) if u >= start]
    report = DiffReport(a, b, [n for n, _ in parsed], not_compared, tolerance, context, updates)
    for u in updates:
        diffs: list[Difference] = []
        for h in sorted(at[u], key=rank.__getitem__):
            ra, rb = a.records.get((u, h)), b.records.get((u, h))
            diffs += _record_diffs(ra, rb, parsed, u, h, tolerance)
        if diffs:
            report.differing_updates += 1
            for f in dict.fromkeys(d.field for d in diffs):
                report.by_field[f] = report.by_field.get(f, 0) + 1
            if not report.first:
                report.first = diffs
    if report.first:
        report.context_rows = _context(report, dict(parsed))
    return report


_PINNED_ORDER = ("update", "human", "anim", "held", "pos", "heading", "vel", "tasks", "events", "released", "pose")


def _field_order(name: str):
    return (_PINNED_ORDER.index(name), "") if name in _PINNED_ORDER else (len(_PINNED_ORDER), name)


def _context(report: DiffReport, fields: dict[str, tuple]) -> list[dict]:
    """Per differing path at the first update (at most SHOWN_CONTEXT_PATHS): its values in
    both traces over the K updates before and at the first one."""
    u0 = report.first_update
    before = [u for u in report.updates if u < u0][-report.context:] if report.context else []
    rows = []
    seen = set()
    for d in report.first:
        if (d.human, d.path) in seen or len(seen) >= SHOWN_CONTEXT_PATHS:
            continue
        seen.add((d.human, d.path))
        steps = _leaf_steps(d.path, fields) if d.path != "record" else None
        values = []
        for u in before + [u0]:
            ra, rb = report.a.records.get((u, d.human)), report.b.records.get((u, d.human))
            if steps is None:
                va = d.a if u == u0 else (None if ra is None else "present")
                vb = d.b if u == u0 else (None if rb is None else "present")
                if d.path.endswith(".length") and u != u0:
                    fsteps = _leaf_steps(d.path[:-len(".length")], fields)
                    la = select(ra, fsteps) if ra is not None and fsteps else MISSING
                    lb = select(rb, fsteps) if rb is not None and fsteps else MISSING
                    va = len(la) if isinstance(la, list) else MISSING
                    vb = len(lb) if isinstance(lb, list) else MISSING
            else:
                va = select(ra, steps) if ra is not None else MISSING
                vb = select(rb, steps) if rb is not None else MISSING
            values.append({"update": u, "a": va, "b": vb})
        rows.append({"human": d.human, "path": d.path, "values": values})
    return rows


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _show(v, name: str = "") -> str:
    if v is MISSING:
        return "(missing)"
    s = json.dumps(v, separators=(",", ":"), allow_nan=True)
    s = s if len(s) <= VALUE_WIDTH else s[:VALUE_WIDTH - 3] + "..."
    return f"{s} ({name})" if name else s


def report_text(r: DiffReport) -> str:
    """The text report (docs/tools.md has a sample)."""
    def describe(tf: TraceFile) -> str:
        ups = tf.updates
        span = f"updates {ups[0]}-{ups[-1]}" if ups else "no records"
        return f"{tf.path}: {len(tf.records)} records, {span}, humans {', '.join(tf.humans) or '-'}"

    lines = [f"A  {describe(r.a)}", f"B  {describe(r.b)}",
             f"fields: {', '.join(r.fields) or '(none)'}; tolerance {r.tolerance:g}"]
    for side in ("a", "b"):
        if r.not_compared[side]:
            lines.append(f"not compared (only in {side.upper()}): {', '.join(r.not_compared[side])}")
    if r.agree:
        lines.append(f"agree: {len(r.updates)} updates, {_plural(len(set(r.a.humans) | set(r.b.humans)), 'human')}")
        return "\n".join(lines)
    u0 = r.first_update
    lines.append("")
    lines.append(f"first difference: update {u0}")
    width = max(len(f"{d.human}  {d.path}") for d in r.first[:SHOWN_DIFFERENCES])
    for d in r.first[:SHOWN_DIFFERENCES]:
        label = f"{d.human}  {d.path}".ljust(width)
        extra = ""
        if _is_number(d.a) and _is_number(d.b) and not (isinstance(d.a, int) and isinstance(d.b, int)):
            extra = f"   |A - B| = {abs(float(d.a) - float(d.b)):.3g}"
        nm = r.names.of
        lines.append(f"  {label}   A {_show(d.a, nm(d.human, d.path, d.a))}   "
                     f"B {_show(d.b, nm(d.human, d.path, d.b))}{extra}")
    if len(r.first) > SHOWN_DIFFERENCES:
        lines.append(f"  ... {len(r.first) - SHOWN_DIFFERENCES} more at update {u0}")
    lines.append(f"cut: scuffle run SCENARIO.toml --snapshot-at {u0} --snapshot-out AT{u0}.snap saves the state "
                 f"entering update {u0}; --from-snapshot AT{u0}.snap replays from there")
    if r.context_rows:
        lines.append("")
        lines.append(f"context: the {r.context} update{'s' if r.context != 1 else ''} before, and update {u0}")
        for row in r.context_rows:
            lines.append(f"  {row['human']}  {row['path']}")
            h, path = row["human"], row["path"]
            for v in row["values"]:
                mark = "  <- differs" if v["update"] == u0 else ""
                lines.append(f"    update {v['update']:>5}:  A {_show(v['a'], r.names.of(h, path, v['a']))}   "
                             f"B {_show(v['b'], r.names.of(h, path, v['b']))}{mark}")
    if r.names.default is None and not r.names.sets and any(_ANIM_LEAF.search(d.path) for d in r.first):
        lines.append("names: --names SCENARIO.toml (or a resource file, or demo) shows clip names beside the ids")
    lines.append("")
    fields = ", ".join(f"{k} ({n})" for k, n in r.by_field.items())
    lines.append(f"differ: {r.differing_updates} of {len(r.updates)} updates; "
                 f"updates differing per field: {fields}")
    return "\n".join(lines)


def _named(d: dict, names: Names) -> dict:
    """A difference's JSON with ``a_name`` / ``b_name`` beside a named id."""
    for side in ("a", "b"):
        nm = names.of(d["human"], d["path"], d[side])
        if nm:
            d[f"{side}_name"] = nm
    return d


def report_json(r: DiffReport) -> dict:
    """The --json report: one object (docs/tools.md)."""
    return {
        "agree": r.agree, "a": r.a.path, "b": r.b.path, "fields": r.fields,
        "not_compared": r.not_compared, "tolerance": r.tolerance, "updates": len(r.updates),
        "first_update": r.first_update,
        "cut_at": r.first_update,                   # scuffle run --snapshot-at: the state entering it
        "differences": [_named(d.to_json(), r.names) for d in r.first],
        "context": [{"human": row["human"], "path": row["path"],
                     "values": [{"update": v["update"], "a": _jsonable(v["a"]), "b": _jsonable(v["b"])}
                                for v in row["values"]]} for row in r.context_rows],
        "differing_updates": r.differing_updates, "by_field": r.by_field,
    }


# ---------------------------------------------------------------- the command


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The diff subcommand's arguments."""
    p.add_argument("a", metavar="A.jsonl", help="the first trace (pinned trace format)")
    p.add_argument("b", metavar="B.jsonl", help="the second trace")
    p.add_argument("--fields", metavar="F1,F2,...",
                   help="field paths to compare: NAME, NAME.KEY, NAME[I], NAME[top] "
                        "(default: every top-level key both traces use)")
    p.add_argument("--tolerance", type=number(0, None), default=0.0, metavar="T",
                   help="numbers (floats) agree within T (default 0: exact); two integers must be equal")
    p.add_argument("--context", type=whole(0, MAX_CONTEXT), default=DEFAULT_CONTEXT, metavar="K",
                   help=f"updates shown before the first difference (default {DEFAULT_CONTEXT})")
    p.add_argument("--from", dest="start", type=whole(0, 2**62), default=0, metavar="U",
                   help="compare updates U and later only (a trace resumed with scuffle run --from-snapshot "
                        "starts at its snapshot's update)")
    p.add_argument("--names", metavar="SOURCE",
                   help="show clip names beside anim ids, from a scenario (.toml: each human's set), a resource "
                        "file or a library (demo); event and task types are always named")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text report")


def run(args: argparse.Namespace) -> int:
    """Diff two traces: 0 when they agree, 1 when they differ (errors: CliError, status 2)."""
    fields = None
    if args.fields is not None:
        fields = [f for f in (s.strip() for s in args.fields.split(",")) if f]
        if not fields:
            raise CliError("--fields: no field named")
    try:
        b_size = os.stat(args.b).st_size
    except OSError:
        b_size = 0                      # read_trace(b) names the problem
    a = read_trace(args.a, other_bytes=b_size)
    b = read_trace(args.b, other_bytes=a.size, other_records=a.line_count)
    names = load_names(getattr(args, "names", None))
    report = diff_traces(a, b, fields, args.tolerance, args.context, getattr(args, "start", 0))
    report.names = names
    if args.json:
        print(json.dumps(report_json(report), separators=(",", ":"), allow_nan=False))
    else:
        print(report_text(report))
    return 0 if report.agree else 1
