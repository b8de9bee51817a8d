"""The reference: a plain-Python model of the animation spec, apart from the engine.

What it is: the original's animation tasks as the spec describes them
(animation.txt, kept outside this repository: "Animation tasks", "The task stack", "Fades", "Gait
blend", "When a clip ends", "Root motion", "The pose"), written as plain objects with
ordinary attributes, one class per task type, each rule next to the spec lines and
``Original:`` address it follows. No tables, rows, views, numba or caches: it is the
oracle the compiled engine (``scuffle.anim.playback.player.Player``) is checked against, and a
slow engine a user can run to debug a scenario.

It shares neither state nor engine code with ``Player``: importing it loads no Player,
table, kernel or numba (a test checks the modules a fresh interpreter loads). Of scuffle
it imports only
- the enums, the options and the errors (anim.base.enums, anim.data.options with anim.data.rates'
  CfgAnimSpeeds and anim.base.limits' checks of them, anim.base.errors);
- plain data and its error classes: recipes (anim.base.recipedata) and callbacks
  (anim.base.callbackdata), which it checks, expands and dispatches by its own code
  (anim/reference/commands.py, handlers.py);
- the data it plays: the clip data and its codecs (anim.data.clip: the key decoding is the
  clip format's definition, as the spec gives it, not a rule of the engine), the anim
  sets it is handed (read through ``clip`` / ``range``), the skeleton's tables
  (anim.maths.skeleton, whose bind height anim.maths.quat computes once at import);
- the number model both engines must share to agree bit for bit: anim.maths.f32 (the PS2
  FPU's float32, rounded toward zero) and anim.maths.detmath's angles (+ - * / sqrt only).
Everything else is its own: the tasks, cursors, pool, stack rules, prepared commands,
callback dispatch, parameter checks, pose and bone transforms.

How to run it:
    from scuffle.anim.reference import Reference, RefInstance
    ref = Reference(PlayerOptions())
    h = RefInstance(anim_set, "h0")
    ref.change(h, ref.loop(h, 388), 0.0)
    for _ in range(100):
        ref.step([h]); poses = ref.sample([h]); ref.flush()

``engine_state`` / ``reference_state`` (anim.reference.dump) turn either world into the
same plain structure for a bit-for-bit ``==`` (tests/anim/test_reference.py).

Holds: world (the Reference, its pool, stack rules and update), tasks, cursor, pose,
commands (its prepared commands), handlers (its callback dispatch), dump.
May import: scuffle.anim.base, scuffle.anim.maths, scuffle.anim.data (the modules named
above), numpy; never scuffle.anim.engine or scuffle.anim.playback.
"""
from __future__ import annotations

from scuffle.anim.reference.cursor import RefCursor, RefEvent
from scuffle.anim.reference.dump import bits, engine_state, human_state, reference_state, task_state
from scuffle.anim.reference.pose import RefPose, bones_of, sample_cursor
from scuffle.anim.reference.tasks import (RefClip, RefDirection, RefFade, RefGait, RefHold, RefLoop, RefMix, RefPairedClip,
                    RefPairedHold, RefPick, RefScene, RefTask, fade_weight)
from scuffle.anim.reference.commands import RefCommand
from scuffle.anim.reference.handlers import RefCallbacks
from scuffle.anim.reference.world import Reference, RefInstance, RefPool, RefRecord

__all__ = ["Reference", "RefInstance", "RefRecord", "RefPool", "RefCursor", "RefEvent", "RefTask", "RefLoop",
           "RefClip", "RefHold", "RefScene", "RefPairedClip", "RefPairedHold", "RefFade", "RefMix", "RefPick",
           "RefGait", "RefDirection", "fade_weight", "RefPose", "sample_cursor", "bones_of", "bits",
           "engine_state", "reference_state", "human_state", "task_state", "RefCommand", "RefCallbacks"]
