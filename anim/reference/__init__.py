"""The reference: a plain-Python model of the animation spec, apart from the engine.

What it is: the original's animation tasks as the spec describes them
(animation.txt, kept outside this repository: "Animation tasks", "The task stack", "Fades", "Gait
blend", "When a clip ends", "Root motion", "The pose"), written as plain objects with
ordinary attributes, one class per task type, each rule next to the spec lines and
``Original:`` address it follows. No tables, rows, views, numba or caches: it is the
oracle the compiled engine (``scuffle.anim.player.Player``) is checked against, and a
slow engine a user can run to debug a scenario.

It shares no mutable state with ``Player``: it imports only stateless pieces of scuffle
(clip decoding and ``Clip`` / ``AnimSet`` look-ups, read-only; anim.f32; the skeleton's
constants; the enums; ``PlayerOptions``; the error classes).

How to run it:
    from scuffle.anim.reference import Reference, RefInstance
    ref = Reference(PlayerOptions())
    h = RefInstance(anim_set, "h0")
    ref.change(h, ref.loop(h, 388), 0.0)
    for _ in range(100):
        ref.step([h]); poses = ref.sample([h]); ref.flush()

``engine_state`` / ``reference_state`` (anim.reference.dump) turn either world into the
same plain structure for a bit-for-bit ``==`` (tests/anim/test_reference.py).
"""
from __future__ import annotations

from .cursor import RefCursor, RefEvent
from .dump import bits, engine_state, human_state, reference_state, task_state
from .pose import RefPose, bones_of, sample_cursor
from .tasks import (RefClip, RefDirection, RefFade, RefGait, RefHold, RefLoop, RefMix, RefPairedClip,
                    RefPairedHold, RefPick, RefScene, RefTask, fade_weight)
from .world import Reference, RefInstance, RefPool, RefRecord

__all__ = ["Reference", "RefInstance", "RefRecord", "RefPool", "RefCursor", "RefEvent", "RefTask", "RefLoop",
           "RefClip", "RefHold", "RefScene", "RefPairedClip", "RefPairedHold", "RefFade", "RefMix", "RefPick",
           "RefGait", "RefDirection", "fade_weight", "RefPose", "sample_cursor", "bones_of", "bits",
           "engine_state", "reference_state", "human_state", "task_state"]
