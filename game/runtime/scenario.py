"""Scripted scenarios: the TOML file (pinned), its validation, and the runner with its trace.

The format is documented in docs/scenarios.md. Everything is validated before the
first update runs; an error names the file, the line and the field
(``ScenarioError``, a ValueError). The trace is JSONL, one object per human per
update, written after the whole update (``game.trace``).
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence, TextIO, cast

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet, UnknownAnimName
from scuffle.anim.base.limits import INT32_MAX, MAX_HEALTH
from scuffle.anim.engine.sampler import MAX_BANK_BYTES, bank_bytes
from scuffle.anim.data.clip import ClipFormatError, parse_clip
from scuffle.anim.playback.player import PlayerOptions, UnknownClip
from scuffle.anim.maths.pose import PoseStackOverflow
from scuffle.anim.data.rangelist import RangeAuthoringError, RangeRecord, author_range
from scuffle.anim.data.rates import CfgAnimSpeeds
from scuffle.anim.data.resource import ResourceFormatError, load_resource
from scuffle.anim.engine.stack import AnimLimitError
from scuffle.anim.data.options import READINGS
from scuffle.anim.playback.tasks import LOCOMOTION_FLAGS, TaskType

from scuffle.game.runtime.files import (MAX_BINARY_BYTES, MAX_TEXT_BYTES, FileLimitError, OutsideError,
                                        check_inside, data_dirs, read_limited)
from scuffle.game.runtime.registry import Registry, is_f32 as _is_f32, is_int as _is_int, is_num as _is_num

__all__ = ["ScenarioError", "Scenario", "Command", "HumanSpec", "load_scenario", "parse_scenario",
           "run_scenario", "MAX_UPDATES", "MAX_RATE", "MAX_FADE", "MAX_TARGET", "MAX_POSITION",
           "MAX_HEADING", "MAX_TOML_DEPTH", "MAX_HUMANS", "MAX_COMMANDS", "MAX_POOL", "MAX_HEALTH",
           "MAX_WORD", "MAX_WORLD_BYTES", "HUMAN_BYTES", "COMMAND_BYTES"]

# The documented ranges a scenario's numbers must fall in (docs/scenarios.md, "Limits").
# Values a float32 holds can still break the math (3e38 x 30 overflows; inf x 0 is NaN):
# these bounds keep every product of the update finite.
MAX_UPDATES = 1_000_000          # 9 h 15 min at 30 updates a second
MAX_RATE = 16.0                  # speeds: the disc's rates are 0.75-1.0
MAX_FADE = 60.0                  # fade and blend times, seconds
MAX_TARGET = 4.0                 # a gait target: 0-4 (Gait blend)
MAX_POSITION = 10_000.0          # |x|, |y|, |z| of a starting position, metres
MAX_HEADING = 36_000.0           # |heading|, degrees (a hundred turns)
MAX_TOML_DEPTH = 64              # nested arrays and tables, refused before tomllib reads them
# The budgets (docs/scenarios.md, "Limits"): a scenario under the 16 MiB cap stays under
# 500 MB. Counts are checked on the parsed document before anything is built for them,
# and the clip bank of the sets the humans use (scuffle.anim.engine.sampler.MAX_BANK_BYTES)
# from the clips' declared frames and keys, before any table is allocated.
MAX_HUMANS = 20_000              # about 10 KB each once stepped
MAX_COMMANDS = 150_000           # about 1.5 KB each while the file loads
MAX_POOL = 1_000_000             # options.pool_size
# The world a scenario builds: its clip bank, about 12 KiB a human once stepped (poses,
# bone transforms, a trace record) and 1 KiB a command, within one budget.
HUMAN_BYTES = 12 << 10
COMMAND_BYTES = 1 << 10
MAX_WORLD_BYTES = 320 << 20
MAX_WORD = INT32_MAX             # flags and held: the task's 32-bit words, 0 to 2^31 - 1

# The parsers' error callback err(line, field, problem): raises ScenarioError.
_Err = Callable[..., NoReturn]


class ScenarioError(ValueError):
    """A scenario file that cannot run: names the file, the line and the field."""

    def __init__(self, source: str, line: int | None, field_name: str, problem: str):
        # a value of hundreds of digits is shown by its head and its length
        problem = re.sub(r"\d{40,}", lambda m: f"{m.group()[:20]}...({len(m.group())} digits)", problem)
        self.source, self.line, self.field, self.problem = source, line, field_name, problem
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {field_name}: {problem}")


@dataclass
class HumanSpec:
    """One [[humans]] entry, validated."""
    name: str
    set: str
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    heading: float = 0.0
    line: int | None = None
    health: float | None = None          # None: the world's default (100)


@dataclass(slots=True)
class Command:
    """One [[commands]] entry, validated. ``kind`` is loop / play / gait / target / action."""

    update: int
    human: str
    kind: str
    ids: list[int] = field(default_factory=list)
    target: float | None = None
    action: str | None = None
    fade: float = 0.0
    blend: float = 0.0
    flags: int | None = None
    held: int = 0
    paired: str | None = None
    extra: dict = field(default_factory=dict)
    line: int | None = None
    index: int = 0


@dataclass
class Scenario:
    """A validated scenario: what ``run_scenario`` needs."""

    source: str
    updates: int
    speeds: CfgAnimSpeeds
    options: PlayerOptions
    sets: dict[str, AnimSet]
    humans: list[HumanSpec]
    commands: list[Command]
    registry: Registry = field(default_factory=Registry)
    tables: dict[str, dict] = field(default_factory=dict)     # the registry's tables given ([fight])
    files: list[str] = field(default_factory=list)            # the files it read (resources, chunks)


# ---------------------------------------------------------------- line finding


class _Lines:
    """Finds the line of a table header or a key in the TOML text (1-based)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self._headers: dict[str, list[int]] = {}

    def header(self, pattern: str, nth: int = 0) -> int | None:
        """The line of the nth header matching ``pattern``; each pattern's lines are found
        once (one pass over the text), so n headers cost O(n + lines), not O(n x lines)."""
        found = self._headers.get(pattern)
        if found is None:
            rx = re.compile(r"^\s*" + pattern + r"\s*(#.*)?$")
            found = [i + 1 for i, line in enumerate(self.lines) if "[" in line and rx.match(line)]
            self._headers[pattern] = found
        return found[nth] if 0 <= nth < len(found) else None

    def key(self, start: int | None, key: str) -> int | None:
        """The line of ``key =`` in the table starting at line ``start`` (None: top level)."""
        rx = re.compile(r"^\s*(" + re.escape(key) + r'|"' + re.escape(key) + r'")\s*=')
        first = start or 0
        for i in range(first, len(self.lines)):
            line = self.lines[i]
            if i >= first + (1 if start else 0) and re.match(r"^\s*\[", line):
                break
            if rx.match(line):
                return i + 1
        return start


# ---------------------------------------------------------------- parsing

_TOP_KEYS = {"updates", "speeds", "sets", "humans", "commands", "options"}
_SET_KEYS = {"library", "resource", "clips"}
_CLIP_KEYS = {"id", "descriptor", "keyframes", "descriptor_file", "keyframes_file", "range"}
_RANGE_KEYS = {"dir", "reach", "far", "damage", "hit", "flags"}
_HUMAN_KEYS = {"name", "set", "position", "heading", "health"}
_CMD_KEYS = {"update", "human", "loop", "play", "gait", "target", "action", "fade", "blend", "flags",
             "held", "paired"}
_OPTION_KEYS = {"end_zero_overshoot", "pool_size"} | {key for key, _ in READINGS}


def load_scenario(path: str | Path, registry: Registry | None = None,
                  data: Sequence[str | Path] | None = None) -> Scenario:
    """Read and validate a scenario file against ``registry`` (its libraries and actions;
    None: an empty one; ``scuffle.load_scenario`` passes the demo fighters'). The files it
    names are read from below its own folder, or below one of ``data`` (folders) or of
    SCUFFLE_DATA's. Rejected: ScenarioError (unreadable file too)."""
    path = Path(path)
    try:
        text = read_limited(path, MAX_TEXT_BYTES).decode("utf-8")
    except FileLimitError as exc:
        raise ScenarioError(str(path), None, "file", exc.problem) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(str(path), None, "file", f"not UTF-8 text (byte {exc.start})") from None
    return parse_scenario(text, str(path), base=path.parent, registry=registry, data=data)


def parse_scenario(text: str, source: str = "<scenario>", base: Path | None = None,
                   registry: Registry | None = None, data: Sequence[str | Path] | None = None) -> Scenario:
    """Validate scenario TOML text into a Scenario; files are relative to ``base``; the
    libraries and actions it may name are ``registry``'s (None: an empty one).

    The files it names (resource, descriptor_file, keyframes_file) must lie below
    ``base`` (None: the current folder) or below a folder of ``data`` (an iterable of
    folders, the ``--data`` options) or of the SCUFFLE_DATA environment variable (os.pathsep
    separated); symbolic links are resolved first. A file outside is refused before it is
    opened, and no error quotes a file's bytes.

    Rejected (ScenarioError naming line and field): bad TOML, unknown keys, missing or
    mistyped values (names that are not strings included), rates, fade and blend times
    a float32 cannot hold, an unknown set, human, library, action or anim id,
    unreadable or malformed clip and resource files, files outside the allowed folders.
    """
    base = base or Path(".")
    reader = _Reader(base, data_dirs(data))
    registry = registry if registry is not None else Registry()
    lines = _Lines(text)
    deep = _too_deep(text, MAX_TOML_DEPTH)
    if deep is not None:
        raise ScenarioError(source, deep, "toml", f"nested more than {MAX_TOML_DEPTH} levels deep")
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise ScenarioError(source, None, "toml", "nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        # "at end of document" carries no line: the error is on the last one.
        line = int(m.group(1)) if m else max(len(lines.lines), 1)
        raise ScenarioError(source, line, "toml", str(exc)) from None
    except ValueError:                 # an integer past Python's conversion limit (4,300 digits)
        m = re.search(r"\d{1000,}", text)
        at = text.count("\n", 0, m.start()) + 1 if m else None
        raise ScenarioError(source, at, "toml", "an integer of more than 4,300 digits") from None

    def err(line, fld, problem) -> NoReturn:
        raise ScenarioError(source, line, fld, problem)

    top = _TOP_KEYS | set(registry.tables)
    for k in doc:
        if k not in top:
            err(lines.key(None, k), k, f"unknown key (expected one of {', '.join(sorted(top))})")
    if "updates" not in doc:
        err(1, "updates", "required at the top level (the number of updates to run)")
    updates = doc["updates"]
    if not _is_int(updates) or not 0 <= updates <= MAX_UPDATES:
        err(lines.key(None, "updates"), "updates", f"expected a whole number 0-{MAX_UPDATES}, got {updates!r}")

    speeds = CfgAnimSpeeds()
    if "speeds" in doc:
        sp = doc["speeds"]
        if not (isinstance(sp, list) and len(sp) == 4 and all(_is_f32(v) and 0 <= v <= MAX_RATE for v in sp)):
            err(lines.key(None, "speeds"), "speeds",
                f"expected [default, f800, f1000, f2000] rates 0-{MAX_RATE:g}, got {sp!r}")
        speeds = CfgAnimSpeeds(*[float(v) for v in sp])

    opt = doc.get("options", {})
    oline = lines.header(r"\[\s*options\s*\]")
    if not isinstance(opt, dict):
        err(lines.key(None, "options"), "options", "expected a table")
    for k in opt:
        if k not in _OPTION_KEYS:
            err(lines.key(oline, k), f"options.{k}", f"unknown option (known: {', '.join(sorted(_OPTION_KEYS))})")
    ezo = opt.get("end_zero_overshoot", False)
    if not isinstance(ezo, bool):
        err(lines.key(oline, "end_zero_overshoot"), "options.end_zero_overshoot", "expected true or false")
    pool = opt.get("pool_size", 360)
    if not _is_int(pool) or not 1 <= pool <= MAX_POOL:
        err(lines.key(oline, "pool_size"), "options.pool_size", f"expected a whole number 1-{MAX_POOL:,}")
    readings: dict[str, Any] = {}
    for key, kind in READINGS:
        if key in opt:
            if opt[key] not in {k.value for k in kind}:
                err(lines.key(oline, key), f"options.{key}",
                    f"expected one of {', '.join(repr(k.value) for k in kind)}, got {opt[key]!r}")
            readings[key] = kind(opt[key])
    options = PlayerOptions(end_zero_overshoot=ezo, pool_size=pool, speeds=speeds, **readings)

    tables: dict[str, dict] = {}
    for name, tspec in registry.tables.items():
        if name not in doc:
            continue
        tline = lines.header(r"\[\s*" + re.escape(name) + r"\s*\]")
        if not isinstance(doc[name], dict):
            err(lines.key(None, name), name, "expected a table")
        for k, v in doc[name].items():
            if k not in tspec.keys:
                err(lines.key(tline, k), f"{name}.{k}", f"unknown key (known: {', '.join(sorted(tspec.keys))})")
            if not tspec.keys[k](v):
                err(lines.key(tline, k), f"{name}.{k}", f"bad value {v!r}")
        tables[name] = dict(doc[name])

    for key, most in (("humans", MAX_HUMANS), ("commands", MAX_COMMANDS)):
        got = doc.get(key)
        if isinstance(got, list) and len(got) > most:
            err(lines.key(None, key) or lines.header(r"\[\[\s*" + key + r"\s*\]\]", most), key,
                f"{len(got):,} entries, over the limit of {most:,}")
    sets = _parse_sets(doc.get("sets", {}), lines, err, reader, source, registry.libraries)
    humans = _parse_humans(doc.get("humans", []), lines, err, sets)
    bank = _check_bank(sets, humans, lines, err)
    ncmd = len(doc["commands"]) if isinstance(doc.get("commands"), list) else 0
    need = bank + HUMAN_BYTES * len(humans) + COMMAND_BYTES * ncmd
    if need > MAX_WORLD_BYTES:
        err(lines.key(None, "humans") or lines.header(r"\[\[\s*humans\s*\]\]"), "humans",
            f"{len(humans):,} humans ({HUMAN_BYTES:,} bytes each), {ncmd:,} commands ({COMMAND_BYTES:,} each) "
            f"and a clip bank of {bank:,} bytes need {need:,} bytes, over the world's budget of "
            f"{MAX_WORLD_BYTES:,} bytes")
    commands = _parse_commands(doc.get("commands", []), lines, err, humans, sets, updates, registry.actions)
    return Scenario(source, updates, speeds, options, sets, humans, commands, registry, tables, reader.files)


class _Reader:
    """Reads the files a scenario names, confined to its folder and the allowed ones,
    and keeps their paths (``files``: the run's inputs, which no output may overwrite)."""

    def __init__(self, base: Path, allowed: list[str]):
        self.base, self.allowed = base, allowed
        self.files: list[str] = []

    def read(self, name: str) -> bytes:
        """The bytes of ``name`` (relative to the scenario's folder); FileLimitError or
        OutsideError (naming the file, never quoting it)."""
        real = check_inside(name, self.base, self.allowed)
        data = read_limited(real, MAX_BINARY_BYTES)
        self.files.append(str(self.base / name))
        return data


def _too_deep(text: str, limit: int) -> int | None:
    """The line where brackets and braces outside strings nest deeper than ``limit``, or None.

    A linear scan that skips comments and quoted strings (basic, literal and multi-line);
    it runs before tomllib, whose recursive reader would raise RecursionError on a deep
    document. Its count is an upper bound of the document's depth, never below it.
    """
    depth, line, i, n = 0, 1, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch in "\"'":
            q3 = text[i:i + 3]
            if q3 in ('"""', "'''"):
                j = text.find(q3, i + 3)
                end = n if j < 0 else j + 3
            else:
                j = i + 1
                while j < n and text[j] != ch and text[j] != "\n":
                    j += 2 if (ch == '"' and text[j] == "\\") else 1
                end = j + 1
            line += text.count("\n", i, min(end, n))
            i = end
            continue
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
        i += 1
    return None


def _check_table(obj, allowed, line, fld: str, lines: "_Lines", err: _Err) -> None:
    """A [[...]] entry must be a table holding only ``allowed`` keys (else err names it)."""
    if not isinstance(obj, dict):
        err(line, fld, "expected a table")
    for k in obj:
        if k not in allowed:
            err(lines.key(line, k), f"{fld}.{k}", f"unknown key (expected {', '.join(sorted(allowed))})")


def _parse_sets(raw, lines: _Lines, err: _Err, reader: _Reader, source: str,
                LIBRARIES: dict[str, Callable[[], AnimSet]]) -> dict[str, AnimSet]:
    if not isinstance(raw, dict):
        err(lines.key(None, "sets"), "sets", "expected tables [sets.NAME]")
    sets: dict[str, AnimSet] = {}
    for name, spec in raw.items():
        hline = lines.header(r"\[\s*sets\." + re.escape(name) + r"\s*\]") or \
            lines.header(r"\[\[\s*sets\." + re.escape(name) + r"\.clips\s*\]\]")
        fld = f"sets.{name}"
        _check_table(spec, _SET_KEYS, hline, fld, lines, err)
        aset = AnimSet.build({}, name=name)
        if "library" in spec:
            lib = spec["library"]
            if not isinstance(lib, str) or lib not in LIBRARIES:
                known = ", ".join(sorted(LIBRARIES)) or "none"
                err(lines.key(hline, "library"), f"{fld}.library", f"unknown library {lib!r} (known: {known})")
            aset = LIBRARIES[lib]()
        if "resource" in spec:
            rpath = spec["resource"]
            rline = lines.key(hline, "resource")
            if not isinstance(rpath, str):
                err(rline, f"{fld}.resource", "expected a file name")
            try:
                data = reader.read(rpath)
            except (FileLimitError, OutsideError) as exc:
                err(rline, f"{fld}.resource", f"{rpath!r}: {exc.problem}")
            try:
                res_set = AnimSet.from_resource(load_resource(data), name=name)
            except (ResourceFormatError, ValueError) as exc:
                err(rline, f"{fld}.resource", f"{rpath}: {exc}")
            aset = res_set if "library" not in spec else _merge(aset, res_set)
        clips = spec.get("clips", [])
        if not isinstance(clips, list):
            err(hline, f"{fld}.clips", "expected [[sets.NAME.clips]] tables")
        for i, c in enumerate(clips):
            cline = lines.header(r"\[\[\s*sets\." + re.escape(name) + r"\.clips\s*\]\]", i)
            cf = f"{fld}.clips[{i}]"
            _check_table(c, _CLIP_KEYS, cline, cf, lines, err)
            anim_id = c.get("id")
            if not _is_int(anim_id) or not 0 <= anim_id < aset.num_ids:
                err(lines.key(cline, "id"), f"{cf}.id", f"expected an anim id 0-{aset.num_ids - 1}, got {anim_id!r}")
            desc = _chunk(c, "descriptor", cline, cf, lines, err, reader)
            keys = _chunk(c, "keyframes", cline, cf, lines, err, reader)
            try:
                clip = parse_clip(desc, keys)
            except ClipFormatError as exc:
                part = exc.chunk if exc.chunk in ("descriptor", "keyframes") else None
                if part is None:
                    err(cline, cf, str(exc))
                key = part if part in c else f"{part}_file"
                err(lines.key(cline, key), f"{cf}.{key}", str(exc))
            rec = None
            if "range" in c:
                rec = _parse_range(c["range"], lines.key(cline, "range"), f"{cf}.range", err)
            aset = aset.with_clip(anim_id, clip, rec)
        sets[name] = aset
    return sets


def _check_bank(sets: dict[str, AnimSet], humans: list[HumanSpec], lines: _Lines, err: _Err) -> int:
    """Refuse sets whose clip bank would pass MAX_BANK_BYTES (the world's player keeps
    one bank of every clip of the sets its humans use): each set alone, then the sets the
    humans use together, from the clips' declared frames and keys (nothing allocated).
    Returns the bytes of the bank of the sets the humans use."""
    def distinct(names) -> list:
        seen: dict[int, object] = {}
        for n in names:
            s = sets[n]
            for a in s.ids():
                c = s.clip(a)
                seen.setdefault(id(c), c)
        return list(seen.values())

    for name in sets:
        need = bank_bytes(distinct([name]))
        if need > MAX_BANK_BYTES:
            line = lines.header(r"\[\s*sets\." + re.escape(name) + r"\s*\]") or \
                lines.header(r"\[\[\s*sets\." + re.escape(name) + r"\.clips\s*\]\]")
            err(line, f"sets.{name}", f"its clip bank needs {need:,} bytes (from its clips' frames and keys), "
                f"over the limit of {MAX_BANK_BYTES:,} bytes")
    used: list[str] = []
    need = 0
    for i, h in enumerate(humans):
        if h.set in used:
            continue
        used.append(h.set)
        need = bank_bytes(distinct(used))
        if need > MAX_BANK_BYTES:
            err(lines.key(h.line, "set"), f"humans[{i}].set", f"the sets {', '.join(used)} together need a clip bank of {need:,} bytes, "
                f"over the limit of {MAX_BANK_BYTES:,} bytes")
    return need


def _merge(a: AnimSet, b: AnimSet) -> AnimSet:
    out = a
    for anim_id in b.ids():
        out = out.with_clip(anim_id, b.clip(anim_id), b.range(anim_id))
    return out


def _chunk(c: dict, what: str, cline, cf: str, lines: _Lines, err: _Err, reader: _Reader) -> bytes:
    if what in c and f"{what}_file" in c:
        err(lines.key(cline, what), f"{cf}.{what}", f"give {what} or {what}_file, not both")
    if what in c:
        v = c[what]
        if not isinstance(v, str):
            err(lines.key(cline, what), f"{cf}.{what}", "expected the chunk payload as a hex string")
        try:
            return bytes.fromhex("".join(v.split()))
        except ValueError:
            err(lines.key(cline, what), f"{cf}.{what}", "not a hex string")
    if f"{what}_file" in c:
        v = c[f"{what}_file"]
        line = lines.key(cline, f"{what}_file")
        if not isinstance(v, str):
            err(line, f"{cf}.{what}_file", "expected a file name")
        try:
            return reader.read(v)
        except (FileLimitError, OutsideError) as exc:
            err(line, f"{cf}.{what}_file", f"{v!r}: {exc.problem}")
    err(cline, cf, f"needs {what} (hex) or {what}_file")


def _parse_range(r, line, fld: str, err: _Err) -> RangeRecord:
    if not isinstance(r, dict):
        err(line, fld, "expected { dir = [x, y], reach, far, damage, hit, flags }")
    for k in r:
        if k not in _RANGE_KEYS:
            err(line, f"{fld}.{k}", f"unknown key (expected {', '.join(sorted(_RANGE_KEYS))})")
    d = r.get("dir", [0.0, 1.0])
    if not (isinstance(d, list) and len(d) == 2 and all(_is_num(v) for v in d)):
        err(line, f"{fld}.dir", f"expected [x, y], got {d!r}")
    for k in ("reach", "far"):
        if k in r and not _is_num(r[k]):
            err(line, f"{fld}.{k}", f"expected a number, got {r[k]!r}")
    for k in ("damage", "hit", "flags"):
        if k in r and not _is_int(r[k]):
            err(line, f"{fld}.{k}", f"expected a whole number, got {r[k]!r}")
    far = r.get("far")
    try:
        return author_range(direction=(float(d[0]), float(d[1])), reach=float(r.get("reach", 0.0)),
                            far=None if far in (None, 0) else float(far), damage=r.get("damage", 0),
                            hit=r.get("hit", 10), flags=r.get("flags", 0))
    except RangeAuthoringError as exc:
        err(line, fld, str(exc))


def _parse_humans(raw, lines: _Lines, err: _Err, sets) -> list[HumanSpec]:
    if not isinstance(raw, list):
        err(lines.key(None, "humans"), "humans", "expected [[humans]] tables")
    out, seen = [], set()
    for i, h in enumerate(raw):
        hl = lines.header(r"\[\[\s*humans\s*\]\]", i)
        fld = f"humans[{i}]"
        _check_table(h, _HUMAN_KEYS, hl, fld, lines, err)
        name = h.get("name")
        if not isinstance(name, str) or not name:
            err(lines.key(hl, "name"), f"{fld}.name", "required: a non-empty string")
        if name in seen:
            err(lines.key(hl, "name"), f"{fld}.name", f"human {name!r} declared twice")
        seen.add(name)
        sname = h.get("set")
        if not isinstance(sname, str) or sname not in sets:
            err(lines.key(hl, "set"), f"{fld}.set", f"unknown set {sname!r} (declared: {', '.join(sets) or 'none'})")
        pos = h.get("position", [0.0, 0.0, 0.0])
        if not (isinstance(pos, list) and len(pos) == 3 and all(_is_num(v) and abs(v) <= MAX_POSITION for v in pos)):
            err(lines.key(hl, "position"), f"{fld}.position",
                f"expected [x, y, z] metres within +-{MAX_POSITION:g}, got {pos!r}")
        heading = h.get("heading", 0.0)
        if not _is_num(heading) or abs(heading) > MAX_HEADING:
            err(lines.key(hl, "heading"), f"{fld}.heading", f"expected degrees within +-{MAX_HEADING:g}, got {heading!r}")
        health = h.get("health")
        if health is not None and not (_is_num(health) and 0 < health <= MAX_HEALTH):
            err(lines.key(hl, "health"), f"{fld}.health", f"expected a number > 0 and <= {MAX_HEALTH:g}, got {health!r}")
        xyz = cast("tuple[float, float, float]", tuple(float(v) for v in pos))   # checked: three numbers
        out.append(HumanSpec(name, sname, xyz, float(heading), hl,
                             None if health is None else float(health)))
    return out


def _parse_commands(raw, lines: _Lines, err: _Err, humans: list[HumanSpec], sets, updates: int,
                    ACTIONS: dict) -> list[Command]:
    if not isinstance(raw, list):
        err(lines.key(None, "commands"), "commands", "expected [[commands]] tables")
    by_name = {h.name: h for h in humans}
    out = []
    for i, c in enumerate(raw):
        cl = lines.header(r"\[\[\s*commands\s*\]\]", i)
        fld = f"commands[{i}]"
        action = c.get("action") if isinstance(c, dict) else None
        spec = ACTIONS.get(action) if isinstance(action, str) else None
        _check_table(c, _CMD_KEYS | (set(spec.keys) if spec else set()), cl, fld, lines, err)
        u = c.get("update")
        if not _is_int(u) or not 0 <= u:
            err(lines.key(cl, "update"), f"{fld}.update", f"required: an update number >= 0, got {u!r}")
        if u >= updates:
            err(lines.key(cl, "update"), f"{fld}.update", f"{u} is past the last update ({updates - 1})")
        name = c.get("human")
        if not isinstance(name, str) or name not in by_name:
            err(lines.key(cl, "human"), f"{fld}.human", f"unknown human {name!r}")
        kinds = [k for k in ("loop", "play", "gait", "action") if k in c]
        if not kinds and "target" in c:
            kinds = ["target"]
        if len(kinds) != 1:
            err(cl, fld, "needs exactly one of loop, play, gait, target (alone) or action")
        kind = kinds[0]
        cmd = Command(update=u, human=name, kind=kind, line=cl, index=i)
        paired = c.get("paired")
        if paired is not None:
            if not isinstance(paired, str) or paired not in by_name:
                err(lines.key(cl, "paired"), f"{fld}.paired", f"unknown human {paired!r}")
            if kind not in ("loop", "play"):
                err(lines.key(cl, "paired"), f"{fld}.paired", "only with loop or play")
            cmd.paired = paired
        src = sets[by_name[paired or name].set]
        for k in ("fade", "blend"):
            if k in c:
                if not _is_f32(c[k]) or not 0 <= c[k] <= MAX_FADE:
                    err(lines.key(cl, k), f"{fld}.{k}", f"expected seconds 0-{MAX_FADE:g} (a float32), got {c[k]!r}")
                setattr(cmd, k, float(c[k]))
        for k in ("flags", "held"):
            if k in c:
                if not _is_int(c[k]) or not 0 <= c[k] <= MAX_WORD:
                    err(lines.key(cl, k), f"{fld}.{k}", f"expected a whole number 0-{MAX_WORD} (0x7fffffff), got {c[k]!r}")
                setattr(cmd, k, int(c[k]))

        def check_id(v, key):
            if isinstance(v, str):              # a clip's name in the set ("FIGHT_IDLE")
                try:
                    v = src.id_of(v)
                except UnknownAnimName as exc:
                    err(lines.key(cl, key), f"{fld}.{key}", str(exc))
            if not _is_int(v) or not 0 <= v < src.num_ids:
                err(lines.key(cl, key), f"{fld}.{key}", f"expected an anim id or a clip name, got {v!r}")
            if not src.has(v):
                err(lines.key(cl, key), f"{fld}.{key}", f"anim id {v} has no clip in set {src.name!r}")
            return int(v)

        if kind == "loop":
            cmd.ids = [check_id(c["loop"], "loop")]
        elif kind == "play":
            ids = c["play"]
            if not isinstance(ids, list) or not ids:
                err(lines.key(cl, "play"), f"{fld}.play", "expected a non-empty list of anim ids or clip names")
            cmd.ids = [check_id(v, "play") for v in ids]
        elif kind == "gait":
            ids = c["gait"]
            if not isinstance(ids, list) or len(ids) != 5:
                err(lines.key(cl, "gait"), f"{fld}.gait", f"expected 5 anim ids or clip names, got {ids!r}")
            cmd.ids = [check_id(v, "gait") for v in ids]
        elif kind == "action":
            if spec is None:
                known = ", ".join(sorted(ACTIONS)) or "none"
                err(lines.key(cl, "action"), f"{fld}.action", f"unknown action {action!r} (known: {known})")
            cmd.action = action
            for k, check in spec.keys.items():
                if k in c:
                    if k in spec.anim_keys and isinstance(c[k], str):
                        try:
                            c[k] = sets[by_name[name].set].id_of(c[k])
                        except UnknownAnimName as exc:
                            err(lines.key(cl, k), f"{fld}.{k}", str(exc))
                    if not check(c[k]):
                        err(lines.key(cl, k), f"{fld}.{k}", f"bad value {c[k]!r} for action {action!r}")
                    cmd.extra[k] = c[k]
        if "target" in c:
            t = c["target"]
            if not _is_num(t) or not 0 <= t <= MAX_TARGET:
                err(lines.key(cl, "target"), f"{fld}.target", f"expected a number 0-{MAX_TARGET:g}, got {t!r}")
            cmd.target = float(t)
        elif kind == "gait":
            err(cl, f"{fld}.target", "a gait command needs target = v")
        out.append(cmd)
    out.sort(key=lambda cmd: (cmd.update, cmd.index))
    return out


# ---------------------------------------------------------------- running


def apply_command(game, cmd: Command, actions: dict | None = None):
    """Apply one command in the actions phase (the change of animation, or an action
    looked up in ``actions``, the scenario registry's). Returns what the action's
    runner returns (the fight rules: an ActionResult, truthy when accepted, falsy with
    its reason when refused); None otherwise."""
    player = game.player
    inst = game.instance(cmd.human)
    if cmd.kind == "target":
        gaits = [t for t in inst.stack if t.type == TaskType.GAIT and not t.released]
        if gaits:
            gaits[0].set_target(cmd.target)
        return
    if cmd.kind == "action":
        return (actions or {})[cmd.action].run(game, cmd)
    flags = cmd.flags if cmd.flags is not None else 0
    if cmd.kind == "loop":
        if cmd.paired:
            task = player.chain(inst, cmd.ids, flags=flags, held=cmd.held,
                                paired_with=game.instance(cmd.paired))
        else:
            task = player.loop(inst, cmd.ids[0], flags=flags, held=cmd.held)
    elif cmd.kind == "play":
        task = player.chain(inst, cmd.ids, blend=cmd.blend, flags=flags, held=cmd.held,
                            paired_with=game.instance(cmd.paired) if cmd.paired else None)
    else:  # gait
        gflags = cmd.flags if cmd.flags is not None else int(LOCOMOTION_FLAGS)
        task = player.gait(inst, cmd.ids, target=cmd.target, flags=gflags, held=cmd.held)
    player.change(inst, task, cmd.fade)


class Script:
    """The scenario's commands as an action (the first of the actions phase): each update
    applies the commands of that update, in order. Its state is the index of the next
    command and the last command applied to each human (for errors), saved by
    Game.snapshot (``save_state`` / ``load_state``), so a restored run replays the same
    commands. Rejected at run time (ScenarioError naming the command): a limit of the
    original hit by a command, or an action given what it cannot act on."""

    def __init__(self, game, sc: "Scenario", on_command: Callable[[Command, Any], None] | None = None):
        self.game, self.sc, self.on_command = game, sc, on_command
        self.next = 0                                # sc.commands[next] is the next to apply
        self.last: dict[str, Command] = {}           # the last command applied to each human
        self._pos: dict[int, int] | None = None      # id(command) -> its position (derived)

    def __call__(self, ctx) -> None:
        from scuffle.game.runtime.world import UnknownHuman

        cmds, sc = self.sc.commands, self.sc
        while self.next < len(cmds) and cmds[self.next].update <= ctx.update:
            cmd = cmds[self.next]
            self.next += 1
            if cmd.update < ctx.update:               # a command of an update restored past
                continue
            self.last[cmd.human] = cmd
            try:
                result = apply_command(self.game, cmd, sc.registry.actions)
            except (AnimLimitError, PoseStackOverflow, UnknownClip, UnknownHuman, ValueError) as exc:
                # A limit of the original (pool, stack, queue) hit at run time, or an
                # action given what it cannot act on (a name that is no human): one
                # error naming the command, like a parse error.
                raise ScenarioError(sc.source, cmd.line, f"commands[{cmd.index}]",
                                    f"update {cmd.update}: {exc}") from None
            if self.on_command is not None:
                self.on_command(cmd, result)

    def save_state(self) -> tuple:
        """The next command's index and the last command per human, by its index in the
        scenario's commands (Game.snapshot: plain data)."""
        pos = self._positions()
        return (self.next, {h: pos[id(c)] for h, c in self.last.items()})

    def _positions(self) -> dict[int, int]:
        """id(command) -> its position in the scenario's commands (made once)."""
        if self._pos is None:
            self._pos = {id(c): k for k, c in enumerate(self.sc.commands)}
        return self._pos

    def state_fits(self, state) -> str | None:
        """Why ``state`` (a ``save_state``, perhaps from a file) cannot be loaded here, or
        None when it can: the next index within the commands, each human's last command
        one of this scenario's commands for that human."""
        cmds = self.sc.commands
        if not (isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict)):
            return "not a scenario script's state (next, last)"
        nxt, last = state
        if nxt.__class__ is not int or not 0 <= nxt <= len(cmds):
            return f"next command {str(nxt)[:20]} is not 0-{len(cmds)}"
        for h, i in last.items():
            if i.__class__ is not int or not 0 <= i < len(cmds) or cmds[i].human != h:
                return f"the last command of {str(h)[:40]!r} is not one of the scenario's commands for it"
        return None

    def load_state(self, state: tuple) -> None:
        """Put back a ``save_state`` (Game.restore)."""
        self.next, last = state
        self.last.clear()
        cmds = self.sc.commands
        self.last.update({h: cmds[i] for h, i in last.items()})


def setup_scenario(sc: Scenario, on_command: Callable[[Command, Any], None] | None = None,
                   engine: str = "compiled"):
    """A Game set up as a scenario says, before its first update: its humans, its tables'
    setups (the fight rules), and its commands as the first action (``Script``). Each
    ``game.step()`` then runs one update of the scenario (``run_scenario`` adds the trace
    and the errors naming a command). Rejected: what ``Game.add_human`` rejects."""
    from scuffle.game.runtime.world import Game

    game = Game(sc.options, engine=engine)
    try:
        for h in sc.humans:
            if h.health is None:
                game.add_human(h.name, sc.sets[h.set], h.position, h.heading)
            else:
                game.add_human(h.name, sc.sets[h.set], h.position, h.heading, health=h.health)
        for name, values in sc.tables.items():
            sc.registry.tables[name].setup(game, values)
        for setup in sc.registry.setup:
            setup(game)
        game.ctx.actions.insert(0, Script(game, sc, on_command))
    except BaseException:
        game.close()
        raise
    return game


def run_scenario(sc: Scenario, trace: TextIO | None = None, pose: bool = False,
                 on_update: Callable | None = None, on_command: Callable[[Command, Any], None] | None = None,
                 engine: str = "compiled", start: Any = None, snapshot_at: int | None = None,
                 on_snapshot: Callable[[Any], None] | None = None):
    """Run a validated scenario; writes the trace (JSONL) if given; returns the Game.

    ``engine``: the Game's engine, "compiled" or "reference" (Game, ENGINES).
    ``on_update(game)`` is called after each update; ``on_command(cmd, result)`` after
    each command is applied, with what it answered (an action of the fight rules: an
    ActionResult, falsy when refused, with the reason; a change of animation: None).
    ``start``: a Snapshot of this scenario (``snapshot_at`` of an earlier run, or
    Snapshot.from_bytes): the run goes on from its update to the scenario's last, and the
    trace holds those updates only. ``snapshot_at`` U (0 to ``sc.updates``):
    ``on_snapshot(snapshot)`` is called with the Game's snapshot when U updates have run.
    Rejected: a start past the scenario's updates or of another set-up (ScenarioError
    naming the field ``start``).

    Rejected: a command that hits one of the original's limits (task pool, stack,
    queue) raises ScenarioError naming the command's line; the trace then holds the
    updates before it. A limit hit later in an update (the fight rules' own changes, a
    chain of blends that needs an eighth pose, a queued start) raises ScenarioError
    too: naming the last command applied to the human the error names, or, when it
    names none (the world's task pool), the field ``run`` with no line.
    """
    from scuffle.game.runtime.trace import iter_trace_records, write_records
    from scuffle.game.runtime.world import HandlerError

    from scuffle.game.runtime.snapshot import SnapshotError

    game = setup_scenario(sc, on_command, engine)
    try:
        last = next(a for a in game.ctx.actions if isinstance(a, Script)).last
        if start is not None:
            if not 0 <= start.update <= sc.updates:
                raise ScenarioError(sc.source, None, "start", f"a snapshot of update {start.update}, past the "
                                    f"scenario's {sc.updates} updates")
            try:
                game.restore(start)
            except SnapshotError as exc:
                raise ScenarioError(sc.source, None, "start", str(exc)) from None
        while game.update < sc.updates:
            if snapshot_at == game.update and on_snapshot is not None:
                on_snapshot(game.snapshot())
            now = game.update                  # the counter advances even when an update fails
            try:
                game.step()
            except HandlerError as exc:        # the update completed; a command or rule failed in it
                raise _handler_error(sc, now, exc, last) from None
            except (AnimLimitError, PoseStackOverflow, UnknownClip) as exc:
                raise _run_error(sc, now, exc, last) from None
            refused = game.player.refused
            if refused:
                inst, refusal = refused[0]
                raise _run_error(sc, game.update - 1, refusal, last, inst.name)
            if trace is not None:
                write_records(trace, iter_trace_records(game, pose=pose))
            if on_update is not None:
                on_update(game)
        if snapshot_at == game.update and on_snapshot is not None:
            on_snapshot(game.snapshot())
    except BaseException:
        game.close()
        raise
    return game


def _handler_error(sc: Scenario, update: int, exc, last: dict) -> BaseException:
    """A HandlerError of an update as the scenario's error: its first ScenarioError (a
    command that failed), else its first limit of the original (as ``_run_error``), else
    the HandlerError itself (a game callback's own exception)."""
    for _, e in exc.errors:
        if isinstance(e, ScenarioError):
            return e
    for _, e in exc.errors:
        if isinstance(e, (AnimLimitError, PoseStackOverflow, UnknownClip)):
            return _run_error(sc, update, e, last)
    return exc


def _run_error(sc: Scenario, update: int, exc: Exception, last: dict, human: str | None = None) -> ScenarioError:
    """A limit of the original hit inside an update (not by a command itself), as a
    ScenarioError: the last command applied to the human the error names (its message
    starts with the name), else the field ``run`` with no line."""
    text = str(exc)
    if human is None:
        human = next((h.name for h in sc.humans if text.startswith(h.name + ":")), None)
    cmd = last.get(human) if human is not None else None
    problem = f"update {update}: {text}"
    if cmd is None:
        return ScenarioError(sc.source, None, "run", problem)
    return ScenarioError(sc.source, cmd.line, f"commands[{cmd.index}]", f"{problem} (a limit of the original)")

