"""Per-update state dumps: the engine's and the reference's state as the same plain structure.

``engine_state(player, instances)`` reads a ``scuffle.anim.playback.player.Player`` and its
``CharacterInstance`` objects; ``reference_state(ref, instances)`` reads a ``Reference``
and its ``RefInstance`` objects. Both give nested tuples of ints and strings (float32
values as their bit patterns, ``bits``; the doubles the engine keeps for types 10 and 13
as ``float.hex``), so two dumps are compared with ``==``, bit for bit.

A human's dump: the stack bottom-to-top (each task's type, anim id, held bits, every
cursor's anim id / time bits / frame / flags, a fade's elapsed and duration, a gait's
value / target / lower / leader, a clip task's blend time and the chain of next tasks it
owns), the record's flags (+0x08) and anim id (+0x20), the events fired this update
(anim id, frame, type), the ids the last flush released, the queue, the poses the last
sample refused. A world's: the pool's tasks in use, the tasks the humans hold, and each
human's dump.
"""
from __future__ import annotations

import struct

from scuffle.anim.base.enums import TaskType

__all__ = ["bits", "engine_state", "reference_state", "task_state", "human_state"]

_F = struct.Struct("<f")
_I = struct.Struct("<I")


def bits(x: float) -> int:
    """The float32 bit pattern of ``x`` (which must hold a float32 value)."""
    return _I.unpack(_F.pack(float(x)))[0]


def _cursor(c) -> tuple:
    return (int(c.anim_id), bits(c.time), int(c.frame), int(c.flags))


def task_state(t, depth: int = 0) -> tuple:
    """One task (engine or reference: the same attribute names) as a plain tuple."""
    tt = int(t.type)
    out: list = [tt, int(t.anim_id()), int(t.held), bool(t.released), tuple(_cursor(c) for c in t.cursors())]
    if tt == TaskType.FADE:
        out.append(("fade", bits(t.elapsed), bits(t.fade_time), bits(t.rate)))
    elif tt == TaskType.GAIT:
        out.append(("gait", bits(t.value), bits(t.target), int(t.lower), int(t.leader), bits(t.rate)))
    elif tt == TaskType.MIX:
        out.append(("mix", float(t.value).hex(), float(t.target).hex()))
    elif tt == TaskType.PICK:
        out.append(("pick", bits(t.value)))
    elif tt == TaskType.DIRECTION:
        out.append(("direction", float(t.value).hex(), int(t.centre)))
    elif tt == TaskType.LOOP:
        out.append(("loop", int(t.wraps), bits(t.rate)))
    elif tt in (TaskType.CLIP, TaskType.PAIRED_CLIP):
        nxt = t.next if not t.handed_over else None
        out.append(("clip", bits(t.blend), bool(t.handed_over), bits(t.rate),
                    task_state(nxt, depth + 1) if nxt is not None and depth < 200 else None))
    else:
        out.append(("single", bits(t.rate)))
    return tuple(out)


def human_state(inst) -> tuple:
    """One human (a CharacterInstance or a RefInstance) as a plain tuple."""
    return (tuple(task_state(t) for t in inst.stack),
            int(inst.record.flags), int(inst.record.anim_id),
            tuple((int(e.anim_id), int(e.event.frame), int(e.event.type)) for e in inst.events),
            tuple(int(i) for i in inst.released),
            tuple(task_state(t) for t in inst.queue),
            int(inst.poses_refused))


def engine_state(player, instances) -> tuple:
    """A Player's world: (pool in use, tasks the humans hold, each human's dump)."""
    return (player.pool.in_use, player.tasks_out(instances), tuple(human_state(h) for h in instances))


def reference_state(ref, instances) -> tuple:
    """A Reference's world, the same structure as ``engine_state``."""
    return (ref.pool.in_use, ref.tasks_out(instances), tuple(human_state(h) for h in instances))
