"""``python -m game survey PATH... [--json] [--progress N] [--data-speeds]``: count and check a corpus.

Walks resource files and descriptor/keyframes pairs, parses every clip, samples each
distinct clip at every frame (anim.engine.sampler.ClipBank) and reports the counts the spec
reports for the disc, side by side with the disc's ("ours / disc"):

- resources, clip occurrences and distinct clips (by content: the SHA-1 of the
  descriptor's and the keyframes' bytes);
- clips failing to parse, or sampling to a non-finite pose;
- clips whose channel count (+0x18) and mask (+0x20) disagree, read from the raw
  descriptor before parsing (parse_clip rejects them, so they also count as failing);
- clips without section A or without section B;
- the events, in all and by type; the highest animated bone and how many clips animate
  it; the most keys in one channel; the fewest and most frames;
- the clips ``lint`` flags: never-ending (an end step whose overshoot is exactly 0.0) at
  the rate each of their ids plays at; a clip no id names (a bare pair, or a resource's
  clip without a table slot) is checked at the default rate (CfgAnimSpeeds' first value,
  0.75).

Every count after "clip occurrences" is of distinct clips. What a path is (docs/tools.md,
"Corpus survey"): a directory is walked (sorted, recursively); in it ``*.res`` files are
resource files, ``NAME.desc`` + ``NAME.keys`` and ``NAME_02.bin`` + ``NAME_00.bin`` are
descriptor/keyframes pairs (the chunk types 0x02 and 0x00), and other files are skipped.
A file named on the command line is a pair half when its name says so, else a resource.
A bad file (unreadable, a broken chunk structure, a descriptor without its keyframes
file) gets an entry and the survey goes on; a resource whose structure holds but one of
whose clips does not parse counts that clip as failing and the rest as usual.

Exit status: 0 when everything read, parsed, sampled finite and no clip never ends; 1
when a bad file, a failing clip, a mismatch, a non-finite pose or a never-ending clip
was found; 2 on a usage error (a PATH that does not exist). Progress goes to stderr.

Spec: "Data" (the disc survey's counts), "Root motion" ("Disc survey"), "Coney's
implementation" ("Disc test"), "When a clip ends" (the check it asks for).
Registered in game/cli.py's COMMANDS.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from scuffle.anim.data.clip import DESCRIPTOR_SIZE, NUM_BONES, Clip, ClipFormatError, parse_clip
from scuffle.anim.data.lint import end_step
from scuffle.anim.data.rangelist import NUM_ANIM_IDS, RangeListFormatError, parse_range_list
from scuffle.anim.data.rates import DATA_SPEEDS, RUNTIME_SPEEDS, CfgAnimSpeeds
from scuffle.anim.data.resource import (CHUNK_HEADER_SIZE, NO_CLIP, AnimTableFormatError, ChunkType, ResourceFormatError,
                           parse_anim_table)
from scuffle.game.cli.errors import CliError
from scuffle.game.runtime.files import MAX_BINARY_BYTES, FileLimitError, read_limited

__all__ = ["add_arguments", "run", "Survey", "collect", "DISC", "PAIR_SUFFIXES", "RESOURCE_SUFFIX",
           "raw_mask_mismatch", "walk_resource", "SurveyError"]

# Pair file names: (descriptor suffix, keyframes suffix).
PAIR_SUFFIXES: tuple[tuple[str, str], ...] = ((".desc", ".keys"), ("_02.bin", "_00.bin"))
RESOURCE_SUFFIX = ".res"
DEFAULT_PROGRESS = 100          # a progress line every N files
SAMPLE_BATCH = 20000            # poses sampled per ClipBank.sample call

# The disc's numbers (SLUS_212.15, NTSC-U), from the spec: "Root motion" (Disc survey),
# "Coney's implementation" (Disc test), "Data" (events). None: not reported.
DISC: dict[str, object] = {
    "resources": 5127,
    "occurrences": 31274,
    "distinct": 1875,
    "failing": 0,
    "nonfinite": 0,
    "mismatch": 0,
    "no_section_a": 957,
    "no_section_b": 0,
    "events": 9468,
    "events_type_11": 4287,
    "highest_bone": 33,
    "highest_bone_clips": 1854,
    "max_keys": 606,
    "min_frames": 1,
    "max_frames": 680,
    "never_ending": None,        # the check "When a clip ends" asks for: not done
}

_U16 = struct.Struct("<H")
_HEADER = struct.Struct("<II")


class SurveyError(ValueError):
    """A file the survey could not read as what its name says (the message names the file
    and, for a resource, the chunk and byte offset)."""


# ---------------------------------------------------------------- raw checks


def raw_mask_mismatch(descriptor: bytes) -> tuple[int, int] | None:
    """(channel count at +0x18, bits set in the mask at +0x20) when they disagree, else
    None; None also for a descriptor that is not 80 bytes (nothing to read).

    parse_clip rejects such a clip, so this reads the two fields from the raw bytes.
    """
    if len(descriptor) != DESCRIPTOR_SIZE:
        return None
    count = _U16.unpack_from(descriptor, 0x18)[0]
    bits = bin(int.from_bytes(descriptor[0x20:0x25], "little")).count("1")
    return (count, bits) if count != bits else None


@dataclass
class ResourceClips:
    """What walk_resource finds: per clip pair (file order) its two payloads, the chunk
    index and payload offset of its keyframes chunk, the anim ids that name it and their
    range flags."""

    pairs: list[tuple[bytes, bytes, int, int]]
    ids: list[list[int]]
    flags: list[list[int]]


def walk_resource(data: bytes, num_ids: int = NUM_ANIM_IDS) -> ResourceClips:
    """The clip pairs, ids and range flags of a resource file, without parsing the clips.

    The structure is checked as load_resource checks it (docs/formats-resource.md,
    "Errors"), but a clip's contents are not: the survey parses each clip on its own.
    Rejected with ResourceFormatError (chunk index, type and absolute byte offset): a
    chunk header or payload cut short, a keyframes chunk not followed by its descriptor
    or a descriptor not after one, a missing or second range list or anim table, a range
    list or table that does not parse or whose count is not ``num_ids``, a slot outside
    -1..clips-1.
    Original: 0x00175080 CharacterInstance_GetAnim (the LIFO slots).
    """
    chunks: list[tuple[int, int, int]] = []          # (type, header offset, size)
    pos, n = 0, len(data)
    while pos < n:
        left = n - pos
        if left < CHUNK_HEADER_SIZE:
            ctype = struct.unpack_from("<I", data, pos)[0] if left >= 4 else None
            raise ResourceFormatError(len(chunks), ctype, pos,
                                      f"chunk header cut short: {left} bytes left, a header is {CHUNK_HEADER_SIZE}")
        ctype, size = _HEADER.unpack_from(data, pos)
        if size > left - CHUNK_HEADER_SIZE:
            raise ResourceFormatError(len(chunks), ctype, pos + 4,
                                      f"payload size {size} overruns the file ({left - CHUNK_HEADER_SIZE} bytes left)")
        chunks.append((ctype, pos, size))
        pos += CHUNK_HEADER_SIZE + size

    def payload(i: int) -> bytes:
        _, off, size = chunks[i]
        return data[off + CHUNK_HEADER_SIZE:off + CHUNK_HEADER_SIZE + size]

    pairs = []
    range_at = table_at = None
    range_list = table = None
    for i, (ctype, off, _) in enumerate(chunks):
        if ctype == ChunkType.KEYFRAMES:
            if i + 1 >= len(chunks) or chunks[i + 1][0] != ChunkType.DESCRIPTOR:
                raise ResourceFormatError(i, ctype, off, "keyframes without a descriptor chunk after it")
        elif ctype == ChunkType.DESCRIPTOR:
            if i == 0 or chunks[i - 1][0] != ChunkType.KEYFRAMES:
                raise ResourceFormatError(i, ctype, off, "descriptor without the keyframes chunk before it")
            pairs.append((payload(i), payload(i - 1), i - 1, chunks[i - 1][1] + CHUNK_HEADER_SIZE))
        elif ctype == ChunkType.ANIM_RANGE_LIST:
            if range_at is not None:
                raise ResourceFormatError(i, ctype, off, f"a second anim range list (the first is chunk {range_at})")
            range_at = i
            try:
                range_list = parse_range_list(payload(i))
            except RangeListFormatError as e:
                raise ResourceFormatError(i, ctype, off + CHUNK_HEADER_SIZE + e.offset, str(e)) from None
        elif ctype == ChunkType.ANIM_TABLE:
            if table_at is not None:
                raise ResourceFormatError(i, ctype, off, f"a second anim table (the first is chunk {table_at})")
            table_at = i
            try:
                table = parse_anim_table(payload(i))
            except AnimTableFormatError as e:
                raise ResourceFormatError(i, ctype, off + CHUNK_HEADER_SIZE + e.offset,
                                          f"anim table: {e.problem}") from None
    if range_list is None:
        raise ResourceFormatError(len(chunks), ChunkType.ANIM_RANGE_LIST, n, "no anim range list chunk")
    if table is None:
        raise ResourceFormatError(len(chunks), ChunkType.ANIM_TABLE, n, "no anim table chunk")
    range_off = chunks[range_at][1] + CHUNK_HEADER_SIZE
    table_off = chunks[table_at][1] + CHUNK_HEADER_SIZE
    if len(range_list) != num_ids:
        raise ResourceFormatError(range_at, ChunkType.ANIM_RANGE_LIST, range_off,
                                  f"range list count {len(range_list)}, expected {num_ids}")
    if len(table) != num_ids:
        raise ResourceFormatError(table_at, ChunkType.ANIM_TABLE, table_off,
                                  f"table count {len(table)}, expected {num_ids}")
    bad = np.flatnonzero((table < NO_CLIP) | (table >= len(pairs)))
    if len(bad):
        i = int(bad[0])
        raise ResourceFormatError(table_at, ChunkType.ANIM_TABLE, table_off + 4 + 4 * i,
                                  f"id {i}: slot {int(table[i])} outside -1..{len(pairs) - 1} "
                                  f"(the resource has {len(pairs)} clips)")
    ids: list[list[int]] = [[] for _ in pairs]
    flags: list[list[int]] = [[] for _ in pairs]
    all_flags = range_list.flags
    for anim_id in np.flatnonzero(table != NO_CLIP):
        k = len(pairs) - 1 - int(table[anim_id])       # slot 0 is the last clip (LIFO)
        ids[k].append(int(anim_id))
        flags[k].append(int(all_flags[anim_id]))
    return ResourceClips(pairs, ids, flags)


# ---------------------------------------------------------------- collecting files


@dataclass(frozen=True)
class Item:
    """One thing to survey: a resource file, a pair, or a bad entry (kind 'bad')."""

    kind: str                  # "resource", "pair", "bad"
    path: str
    keys: str | None = None    # a pair's keyframes file
    error: str | None = None


def _pair_role(name: str) -> tuple[str, str, str] | None:
    """('desc' | 'keys', stem, partner name) when a file name marks a pair half."""
    for d, k in PAIR_SUFFIXES:
        if name.endswith(d) and len(name) > len(d):
            return "desc", name[:-len(d)], name[:-len(d)] + k
        if name.endswith(k) and len(name) > len(k):
            return "keys", name[:-len(k)], name[:-len(k)] + d
    return None


def collect(paths: Iterable[str]) -> tuple[list[Item], int]:
    """The items to survey, in argument order (a directory's files sorted, recursively),
    and the number of files skipped in directories.

    A directory that cannot be listed (no permission) is an item of kind "bad" naming
    it; files are read later through read_limited (regular files only, at most
    MAX_BINARY_BYTES), so a FIFO or a device among them is a "bad" entry too.
    Rejected (CliError): a path that does not exist, a path named on the command line
    that is not a regular file or a directory (a FIFO, /dev/zero: one line).
    """
    items: list[Item] = []
    seen: set[str] = set()
    skipped = 0

    def add_file(p: Path, explicit: bool) -> None:
        nonlocal skipped
        key = os.path.realpath(p)
        if key in seen:
            return
        role = _pair_role(p.name)
        if role is None:
            if explicit or p.name.endswith(RESOURCE_SUFFIX):
                seen.add(key)
                items.append(Item("resource", str(p)))
            else:
                skipped += 1
            return
        kind, _, partner_name = role
        partner = p.with_name(partner_name)
        seen.add(key)
        seen.add(os.path.realpath(partner))
        if kind == "desc":
            if partner.is_file():
                items.append(Item("pair", str(p), str(partner)))
            else:
                items.append(Item("bad", str(p), error=f"a descriptor without its keyframes file {partner_name}"))
        else:
            if partner.is_file():
                items.append(Item("pair", str(partner), str(p)))
            else:
                items.append(Item("bad", str(p), error=f"a keyframes file without its descriptor {partner_name}"))

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            def unreadable(exc: OSError) -> None:      # reported as an entry, never skipped silently
                where = exc.filename or str(p)
                items.append(Item("bad", str(where), error=f"cannot read directory: {exc.strerror or exc}"))

            for root, dirs, files in os.walk(p, onerror=unreadable):
                dirs.sort()
                for name in sorted(files):
                    add_file(Path(root) / name, False)
        elif p.exists():
            if not p.is_file():                        # a FIFO or a device named on the command line
                try:
                    read_limited(p, 0)
                except FileLimitError as exc:
                    raise CliError(str(exc)) from None
            add_file(p, True)
        else:
            raise CliError(f"{raw}: no such file or directory")
    return items, skipped


# ---------------------------------------------------------------- the survey


@dataclass
class ClipInfo:
    """One distinct clip (by content): where it was first seen, every (source, id, rate)
    it is played under, its parse result and what the checks found."""

    digest: str
    where: str
    occurrences: int = 0
    uses: list = field(default_factory=list)          # (source, anim id or None, rate, range flags)
    clip: Clip | None = None
    error: str | None = None
    mismatch: tuple[int, int] | None = None
    nonfinite: bool = False
    never_ending: list = field(default_factory=list)   # (rate, update, [uses])


class Survey:
    """The running counts of a survey (feed items with ``add``, then ``finish``).

    In: the CfgAnimSpeeds the ids' rates come from. ``counts()`` and ``to_json()`` give
    the results; ``text()`` the side-by-side report.
    """

    def __init__(self, speeds: CfgAnimSpeeds = RUNTIME_SPEEDS):
        self.speeds = speeds
        self.files: list[dict] = []
        self.bad_files: list[dict] = []
        self.resources = 0
        self.pairs = 0
        self.skipped = 0
        self.occurrences = 0
        self.clips: dict[str, ClipInfo] = {}
        self._pending: list[ClipInfo] = []
        self._pending_samples = 0
        self._finished = False

    # ------------------------------------------------------------ feeding
    def add(self, item: Item) -> None:
        """Survey one item; a bad one is recorded, never raised."""
        if item.kind == "bad":
            self._bad(item.path, item.error)
            return
        try:
            if item.kind == "resource":
                self._resource(item.path)
            else:
                self._pair(item.path, item.keys)
        except SurveyError as exc:
            self._bad(item.path, str(exc))

    def _bad(self, path: str, error: str) -> None:
        entry = {"path": path, "error": error}
        self.bad_files.append(entry)
        self.files.append({"path": path, "kind": "bad", "error": error})

    def _read(self, path: str) -> bytes:
        try:
            return read_limited(path, MAX_BINARY_BYTES)
        except FileLimitError as exc:
            raise SurveyError(exc.problem) from None

    def _resource(self, path: str) -> None:
        """Survey a resource file (SurveyError when its structure is broken)."""
        data = self._read(path)
        try:
            rc = walk_resource(data)
        except ResourceFormatError as exc:
            raise SurveyError(f"not a resource file: {exc}") from None
        self.resources += 1
        self.files.append({"path": path, "kind": "resource", "clips": len(rc.pairs)})
        for k, (desc, keys, chunk_index, keys_off) in enumerate(rc.pairs):
            ids = rc.ids[k]
            named = (f"id {ids[0]}" if len(ids) == 1 else f"ids {', '.join(map(str, ids))}") if ids else "no id"
            where = f"{path}: clip {k} ({named}; chunk {chunk_index} at byte {keys_off - CHUNK_HEADER_SIZE})"
            uses = [(path, i, self.speeds.rate_for(f), f) for i, f in zip(rc.ids[k], rc.flags[k])]
            if not uses:
                uses = [(path, None, self.speeds.default, 0)]
            self._clip(desc, keys, where, uses)

    def _pair(self, desc_path: str, keys_path: str) -> None:
        """Survey a descriptor/keyframes pair (SurveyError when a file cannot be read)."""
        desc = self._read(desc_path)
        try:
            keys = read_limited(keys_path, MAX_BINARY_BYTES)
        except FileLimitError as exc:
            raise SurveyError(f"its keyframes file {keys_path}: {exc.problem}") from None
        self.pairs += 1
        self.files.append({"path": desc_path, "keys": keys_path, "kind": "pair", "clips": 1})
        self._clip(desc, keys, f"{desc_path} + {Path(keys_path).name}", [(desc_path, None, self.speeds.default, 0)])

    def _clip(self, desc: bytes, keys: bytes, where: str, uses: list) -> None:
        """Count one clip occurrence; parse, check and queue it for sampling when it is new."""
        self.occurrences += 1
        h = hashlib.sha1()
        h.update(len(desc).to_bytes(4, "little"))
        h.update(desc)
        h.update(keys)
        digest = h.hexdigest()
        info = self.clips.get(digest)
        if info is None:
            info = self.clips[digest] = ClipInfo(digest, where)
            info.mismatch = raw_mask_mismatch(desc)
            try:
                info.clip = parse_clip(desc, keys)
            except ClipFormatError as exc:
                info.error = str(exc)
            if info.clip is not None:
                self._pending.append(info)
                self._pending_samples += info.clip.frames + 1
                if self._pending_samples >= SAMPLE_BATCH:
                    self._sample_pending()
        info.occurrences += 1
        info.uses.extend(uses)

    def _sample_pending(self) -> None:
        """Sample every pending clip at each frame 0..F (time f / 30, rate 1, no flags) and
        mark the clips whose pose has a non-finite value."""
        from scuffle.anim.engine.sampler import ClipBank

        pending, self._pending, self._pending_samples = self._pending, [], 0
        if not pending:
            return
        bank = ClipBank([i.clip for i in pending])
        counts = [i.clip.frames + 1 for i in pending]
        clip_idx = np.repeat(np.arange(len(pending)), counts)
        frames = np.concatenate([np.arange(c) for c in counts])
        times = (frames / 30.0).astype(np.float32)
        ok = np.ones(len(clip_idx), bool)
        for s in range(0, len(clip_idx), SAMPLE_BATCH):
            sl = slice(s, s + SAMPLE_BATCH)
            n = len(clip_idx[sl])
            p = bank.sample(clip_idx[sl], times[sl], np.ones(n, np.float32), np.zeros(n, np.int64))
            ok[sl] = (np.isfinite(p.vel).all(axis=0) & np.isfinite(p.root).all(axis=0)
                      & np.isfinite(p.rot).all(axis=(0, 1)))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        finite = np.logical_and.reduceat(ok, starts)
        for info, fin in zip(pending, finite):
            info.nonfinite = not bool(fin)

    def finish(self) -> None:
        """Sample what is pending and run the never-ending check (once)."""
        if self._finished:
            return
        self._sample_pending()
        for info in self.clips.values():
            if info.clip is None:
                continue
            by_rate: dict[float, list] = {}
            for use in info.uses:
                by_rate.setdefault(use[2], []).append(use)
            for rate, uses in sorted(by_rate.items()):
                found = end_step(info.clip, rate)
                if found is not None and found[1] == 0.0:
                    info.never_ending.append((rate, found[0], uses))
        self._finished = True

    # ------------------------------------------------------------ results
    def parsed(self) -> list[ClipInfo]:
        """The distinct clips that parsed."""
        return [i for i in self.clips.values() if i.clip is not None]

    def counts(self) -> dict:
        """Every count (see the module docstring); distinct clips from ``distinct`` on."""
        self.finish()
        parsed = self.parsed()
        events_by_type: dict[int, int] = {}
        codes: dict[str, int] = {}
        highest = -1
        bone_clips = np.zeros(NUM_BONES, np.int64)
        max_keys, max_keys_where = 0, None
        min_frames = max_frames = None
        min_where = max_where = None
        for info in parsed:
            c = info.clip
            for t in c.events["type"]:
                events_by_type[int(t)] = events_by_type.get(int(t), 0) + 1
            for e in c.decoded_events():
                if e.code is not None:
                    codes[e.code] = codes.get(e.code, 0) + 1
            for b in c.rotations:
                bone_clips[b] += 1
            if c.rotations:
                highest = max(highest, max(c.rotations))
            chans = [("section A", c.velocity), ("section B", c.translation)]
            chans += [(f"bone {b}", k) for b, k in c.rotations.items()]
            for label, keys in chans:
                if keys is not None and len(keys) > max_keys:
                    max_keys, max_keys_where = len(keys), f"{info.where} {c.name!r}, {label}"
            f = c.frames
            if min_frames is None or f < min_frames:
                min_frames, min_where = f, f"{info.where} {c.name!r}"
            if max_frames is None or f > max_frames:
                max_frames, max_where = f, f"{info.where} {c.name!r}"
        return {
            "files": len(self.files), "resources": self.resources, "pairs": self.pairs,
            "bad_files": len(self.bad_files), "skipped": self.skipped,
            "occurrences": self.occurrences, "distinct": len(self.clips),
            "failing": sum(1 for i in self.clips.values() if i.error is not None),
            "nonfinite": sum(1 for i in parsed if i.nonfinite),
            "mismatch": sum(1 for i in self.clips.values() if i.mismatch is not None),
            "no_section_a": sum(1 for i in parsed if i.clip.velocity is None),
            "no_section_b": sum(1 for i in parsed if i.clip.translation is None),
            "events": int(sum(events_by_type.values())),
            "events_by_type": {t: events_by_type[t] for t in sorted(events_by_type)},
            "event_codes": {k: codes[k] for k in sorted(codes)},
            "events_type_11": events_by_type.get(11, 0),
            "highest_bone": highest if highest >= 0 else None,
            "highest_bone_clips": int(bone_clips[highest]) if highest >= 0 else 0,
            "clips_per_bone": [int(v) for v in bone_clips],
            "max_keys": max_keys if parsed else None, "max_keys_where": max_keys_where,
            "min_frames": min_frames, "min_frames_where": min_where,
            "max_frames": max_frames, "max_frames_where": max_where,
            "never_ending": sum(1 for i in parsed if i.never_ending),
        }

    def findings(self) -> dict:
        """The lists behind the counts: bad files, failing, mismatched, non-finite and
        never-ending clips (each with where it was first seen and its occurrences)."""
        self.finish()
        infos = list(self.clips.values())
        never = []
        for i in infos:
            for rate, update, uses in i.never_ending:
                never.append({"where": i.where, "name": i.clip.name, "frames": i.clip.frames,
                              "rate": float(f"{rate:.7g}"), "update": update,
                              "ids": [{"source": s, "id": a, "range_flags": f} for s, a, _, f in uses]})
        return {
            "bad_files": self.bad_files,
            "failing": [{"where": i.where, "error": i.error, "occurrences": i.occurrences}
                        for i in infos if i.error is not None],
            "mismatch": [{"where": i.where, "channel_count": i.mismatch[0], "mask_bits": i.mismatch[1],
                          "occurrences": i.occurrences} for i in infos if i.mismatch is not None],
            "nonfinite": [{"where": i.where, "name": i.clip.name} for i in infos
                          if i.clip is not None and i.nonfinite],
            "never_ending": never,
        }

    def status(self) -> int:
        """1 when anything was found wrong (bad file, failing, mismatch, non-finite, never-ending), else 0."""
        c = self.counts()
        return 1 if (c["bad_files"] or c["failing"] or c["mismatch"] or c["nonfinite"] or c["never_ending"]) else 0

    def to_json(self) -> dict:
        """The --json output: counts, the disc's numbers, the findings and the files."""
        c = self.counts()
        c = dict(c, events_by_type={str(k): v for k, v in c["events_by_type"].items()})
        return {"speeds": [float(f"{v:.7g}") for v in self.speeds.as_list()], "counts": c, "disc": DISC, "findings": self.findings(),
                "files": self.files}


# ---------------------------------------------------------------- text


def _n(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _event_name(t: int) -> str:
    from scuffle.anim.data.clip import EventType
    try:
        return EventType(t).name
    except ValueError:
        return ""


def report_text(s: Survey) -> str:
    """The text report: the counts as "ours / disc" rows, then the findings."""
    c = s.counts()
    f = s.findings()
    rows: list[tuple[str, str, str]] = [
        ("resources", _n(c["resources"]), _n(DISC["resources"])),
        ("clip occurrences", _n(c["occurrences"]), _n(DISC["occurrences"])),
        ("distinct clips (content hash)", _n(c["distinct"]), _n(DISC["distinct"])),
        ("failing to parse", _n(c["failing"]), _n(DISC["failing"])),
        ("sampling to a non-finite pose", _n(c["nonfinite"]), _n(DISC["nonfinite"])),
        ("channel count and mask disagree", _n(c["mismatch"]), _n(DISC["mismatch"])),
        ("without section A", _n(c["no_section_a"]), _n(DISC["no_section_a"])),
        ("without section B", _n(c["no_section_b"]), _n(DISC["no_section_b"])),
        ("events", _n(c["events"]), _n(DISC["events"])),
    ]
    for t, k in c["events_by_type"].items():
        disc = _n(DISC["events_type_11"]) if t == 11 else ""
        rows.append((f"  type 0x{t:02x} {_event_name(t)}".rstrip(), _n(k), disc))
    if 11 not in c["events_by_type"]:
        rows.append(("  type 0x0b SOUND", "0", _n(DISC["events_type_11"])))
    rows += [
        ("highest animated bone", _n(c["highest_bone"]), _n(DISC["highest_bone"])),
        ("  clips animating it", _n(c["highest_bone_clips"]), _n(DISC["highest_bone_clips"])),
        ("most keys in a channel", _n(c["max_keys"]), _n(DISC["max_keys"])),
        ("frames (fewest-most)",
         f"{_n(c['min_frames'])}-{_n(c['max_frames'])}" if c["min_frames"] is not None else "-",
         f"{DISC['min_frames']}-{DISC['max_frames']}"),
        ("never-ending (lint)", _n(c["never_ending"]), "not done"),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(max(len(r[1]) for r in rows), len("ours"))
    lines = [f"files: {c['files']} ({_count(c['resources'], 'resource')}, {_count(c['pairs'], 'pair')}, "
             f"{c['bad_files']} bad), {c['skipped']} skipped; rates {', '.join(f'{v:.7g}' for v in s.speeds.as_list())}",
             "",
             f"{'':{w0}}   {'ours':>{w1}} / disc"]
    for label, ours, disc in rows:
        lines.append(f"{label:{w0}}   {ours:>{w1}}" + (f" / {disc}" if disc else ""))
    lines.append("(disc: the spec's survey of SLUS_212.15; every count below the occurrences is of "
                 "distinct clips)")
    if c["max_keys_where"]:
        lines.append(f"most keys ({c['max_keys']}): {c['max_keys_where']}")
    if c["min_frames_where"]:
        lines.append(f"fewest frames ({c['min_frames']}): {c['min_frames_where']}")
        lines.append(f"most frames ({c['max_frames']}): {c['max_frames_where']}")
    if f["bad_files"]:
        lines += ["", f"bad files ({len(f['bad_files'])}):"]
        lines += [f"  {b['path']}: {b['error']}" for b in f["bad_files"]]
    if f["failing"]:
        lines += ["", f"failing to parse ({len(f['failing'])}):"]
        lines += [f"  {x['where']}: {x['error']}" for x in f["failing"]]
    if f["mismatch"]:
        lines += ["", f"channel count and mask disagree ({len(f['mismatch'])}):"]
        lines += [f"  {x['where']}: count {x['channel_count']}, mask sets {x['mask_bits']} bits"
                  for x in f["mismatch"]]
    if f["nonfinite"]:
        lines += ["", f"sampling to a non-finite pose ({len(f['nonfinite'])}):"]
        lines += [f"  {x['where']} {x['name']!r}" for x in f["nonfinite"]]
    if f["never_ending"]:
        lines += ["", f"never-ending ({len(f['never_ending'])}):"]
        for x in f["never_ending"]:
            lines.append(f"  {x['where']} {x['name']!r}: {x['frames']} frames at rate {x['rate']:g}: "
                         f"overshoot 0.0 on update {x['update']}")
    return "\n".join(lines)


# ---------------------------------------------------------------- the command


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The survey subcommand's arguments."""
    p.add_argument("paths", metavar="PATH", nargs="+",
                   help="resource files, pair halves (NAME.desc / NAME.keys, NAME_02.bin / NAME_00.bin) "
                        "or directories to walk")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.add_argument("--progress", type=int, default=DEFAULT_PROGRESS, metavar="N",
                   help=f"a progress line on stderr every N files (default {DEFAULT_PROGRESS}; 0: only the last)")
    p.add_argument("--data-speeds", action="store_true",
                   help="rates from the values .data holds before CfgAnimSpeeds runs (1.0, 0.85, 1.0, 1.0)")


def survey_paths(paths: list[str], speeds: CfgAnimSpeeds = RUNTIME_SPEEDS, progress: int = 0,
                 log: Callable[[str], None] | None = None) -> Survey:
    """Survey every item of ``paths``; ``log`` gets a progress line every ``progress``
    files (and a last one). Rejected (CliError): a path that does not exist."""
    items, skipped = collect(paths)
    s = Survey(speeds)
    s.skipped = skipped
    t0 = time.perf_counter()
    total = len(items)
    for k, item in enumerate(items, 1):
        s.add(item)
        if log is not None and progress > 0 and k % progress == 0 and k < total:
            log(f"survey: {k}/{total} files, {s.occurrences:,} clip occurrences, "
                f"{len(s.clips):,} distinct, {time.perf_counter() - t0:.1f} s")
    s.finish()
    if log is not None:
        log(f"survey: done: {total} files ({len(s.bad_files)} bad, {skipped} skipped), "
            f"{s.occurrences:,} clip occurrences, {len(s.clips):,} distinct, {time.perf_counter() - t0:.1f} s")
    return s


def run(args: argparse.Namespace) -> int:
    """Run the survey; 0 when nothing was found wrong, 1 otherwise (see the module docstring)."""
    if args.progress < 0:
        raise CliError("--progress: N must be >= 0")
    speeds = DATA_SPEEDS if args.data_speeds else RUNTIME_SPEEDS
    s = survey_paths(args.paths, speeds, args.progress, lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(s.to_json(), allow_nan=False))
    else:
        print(report_text(s))
    return s.status()
