"""The trace (JSONL, pinned): one object per human per update, after the whole update.

Fields: ``update``, ``human``, ``anim`` (record +0x20, -1 none), ``held`` (record
+0x08 as an int), ``pos`` [x, y, z], ``heading`` (degrees), ``vel`` [x, y, z],
``tasks`` (the stack bottom to top: ``type``, ``id``, ``time`` and ``frame`` of the
leading cursor, plus a fade's ``elapsed`` / ``duration`` / ``weight`` and a gait's
``ids`` / ``value`` / ``target`` / ``lower`` / ``upper`` / ``leader``), ``events``
(fired this update: ``id``, ``frame``, ``type``, ``args``, ``position``,
``rotation``, and ``word`` / ``code`` where the type has them), ``released`` (the
ids this update's flush released) and, only on an update whose sample refused a pose
(the pose stack of seven, 0x00104ce0), ``poses_refused`` (how many). With ``pose``: ``pose`` = ``velocity``, ``root``,
``rotations`` (34 x [x, y, z, w]) and ``defaults`` (36 tags: velocity, root, bones
0-33). Cursor times are float32 and written as the shortest decimal that reads back
to the same float32. The same scenario always gives byte-identical traces.
"""
from __future__ import annotations

import json
from typing import Iterable, Iterator, TextIO

import numpy as np

from scuffle.components import Animator, Body, HumanRecord, PoseRef

__all__ = ["trace_records", "iter_trace_records", "write_records", "f32_json", "f32_values", "TraceValueError"]


class TraceValueError(ValueError):
    """A trace record holding NaN or an infinity (not JSON); names the update, human and field."""


# The shortest decimals of float32 values, remembered: a crowd's traces repeat the same few thousand
# values (a clip's keys, the rest pose), and numpy's shortest-decimal formatting costs
# about 2 µs a value where a look-up costs a tenth of that. Bounded: cleared when full.
_SHORTEST: dict[int, float] = {}
_SHORTEST_CAP = 1 << 18
_BY_VALUE: dict[float, float] = {}          # f32_json's, by the value given (any number type)


def _shortest(v) -> float:
    """``v`` rounded to float32, as the shortest decimal that reads back to it."""
    return float(str(np.float32(v)))


def f32_json(v: float) -> float:
    """A float32 value as the shortest decimal that reads back to the same float32 (through
    a bounded memo keyed by the value; the zeros, one key for both signs, and NaN, which
    equals nothing, are formatted each time, as is a value that is no dict key, such as a
    0-d array)."""
    try:
        s = _BY_VALUE.get(v)
    except TypeError:
        return _shortest(v)
    if s is None:
        s = _shortest(v)
        if v != 0.0 and v == v:
            if len(_BY_VALUE) > _SHORTEST_CAP:
                _BY_VALUE.clear()
            _BY_VALUE[v] = s
    return s


def f32_values(values) -> list[float]:
    """``[f32_json(v) for v in values]`` for an array of any shape, read in C order (as
    float32: a float64 is rounded to nearest first, as f32_json does), through a bounded
    memo keyed by the float32's bits."""
    flat = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    bits = flat.view(np.uint32).tolist()
    memo = _SHORTEST
    try:
        return [memo[b] for b in bits]
    except KeyError:
        pass
    if len(memo) > _SHORTEST_CAP:
        memo.clear()
    out = []
    for b, v in zip(bits, flat.tolist()):
        s = memo.get(b)
        if s is None:
            s = memo[b] = _shortest(v)
        out.append(s)
    return out


def _task(t) -> dict:
    d = t.trace()
    d["time"] = f32_json(d["time"])
    for k in ("elapsed", "duration", "value", "target", "blend"):
        if k in d:
            d[k] = f32_json(d[k])
    return d


def trace_records(game, pose: bool = False) -> list[dict]:
    """The trace objects of every human for the update just run (entity order)."""
    return list(iter_trace_records(game, pose))


def iter_trace_records(game, pose: bool = False) -> Iterator[dict]:
    """trace_records one human at a time (a writer holds one record, not the crowd's)."""
    update = game.update - 1
    for name, ent in game.humans():
        inst = game.component(ent, Animator).instance
        rec = game.component(ent, HumanRecord)
        body = game.component(ent, Body)
        d = {
            "update": update,
            "human": name,
            "anim": rec.anim_id,
            "held": rec.held,
            "pos": [float(v) for v in body.position],
            "heading": float(body.heading),
            "vel": [float(v) for v in body.velocity],
            "tasks": [_task(t) for t in inst.stack],
            "events": [{"id": fe.anim_id, **fe.event.to_json()} for fe in inst.events],
            "released": list(inst.released),
        }
        if inst.poses_refused:
            d["poses_refused"] = inst.poses_refused
        if pose:
            row = game.component(ent, PoseRef).row
            p = game.ctx.poses
            quats = f32_values(p.rot[:, :, row].T)          # bone by bone, x y z w each
            d["pose"] = {
                "velocity": f32_values(p.vel[:, row]),
                "root": f32_values(p.root[:, row]),
                "rotations": [quats[i:i + 4] for i in range(0, len(quats), 4)],
                "defaults": [bool(v) for v in p.tag[:, row]],
            }
        yield d


def _nonfinite_field(value, path: str = "") -> str | None:
    """The path of the first NaN or infinity in a record (``pos[0]``), or None."""
    todo = [(value, path)]
    while todo:
        v, p = todo.pop()
        if isinstance(v, float) and not np.isfinite(v):
            return p or "value"
        if isinstance(v, dict):
            todo.extend((x, f"{p}.{k}" if p else str(k)) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)):
            todo.extend((x, f"{p}[{i}]") for i, x in reversed(list(enumerate(v))))
    return None


def write_records(fp: TextIO, records: Iterable[dict]) -> None:
    """Write trace objects as JSON lines (compact, keys in a fixed order).

    Rejected: TraceValueError when a record holds NaN or an infinity (strict JSON,
    ``allow_nan=False``), naming the update, the human and the field; the record is
    not written (the lines before it are).
    """
    for r in records:
        try:
            line = json.dumps(r, separators=(",", ":"), allow_nan=False)
        except ValueError:
            where = _nonfinite_field(r)
            raise TraceValueError(f"trace: update {r.get('update')}, human {r.get('human')!r}: "
                                  f"{where} is not a finite number (NaN and infinities are not JSON)") from None
        fp.write(line)
        fp.write("\n")
