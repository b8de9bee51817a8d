"""The compiled engine's kernels that Python calls, by name: the step, the pose, the flush, root motion.

The code lives in one module per stage: anim.engine.kernels_step (``step_stacks``),
anim.engine.kernels_pose (``pose_stacks``, ``pose_lean``, ``pose_plan``), anim.engine.kernels_flush
(``flush_release``, ``flush_anim_ids``), anim.engine.kernels_motion (``root_motion_step``); the
rules they share in anim.engine.kernels_rows, the FPU arithmetic, the decorators and
anim.maths.detmath's scalar forms in anim.engine.kernels_maths. This module names the entry points
and their constants in one place: the engine's trusted calls (anim.engine.trusted) look a
kernel up here at each call, and ``scuffle bench`` wraps them here to time them.
Every kernel is ``@njit(cache=...)`` with fastmath off, takes arrays and scalars (or the
named tuples of anim.engine.kernel_types) and writes into buffers its caller preallocated:
nothing is allocated per update. The machine code is cached on disk next to each
module (``__pycache__/kernels_step.step_stacks-*.nbi`` / ``.nbc``; numba moves it to its
user cache dir, or ``NUMBA_CACHE_DIR``, when that is not writable): anim.playback.warmup
compiles them ahead, and every later process loads them.
"""
from __future__ import annotations

from scuffle.anim.engine.kernel_types import (BankTables, CursorCols, EventIndex, FadeCols, GaitCols, HumanCols, PlanArrays,
                           PoseBuffers, PoseOut, Scratch, StepBuffers, StepRules, TaskCols)
from scuffle.anim.engine.kernels_maths import add, div, frame_of, mul, sub
from scuffle.anim.engine.kernels_motion import root_motion_step
from scuffle.anim.engine.kernels_pose import NO_POSE, QUEUED_POSE, pose_lean, pose_plan, pose_stacks
from scuffle.anim.engine.kernels_step import (COUNT_DEFERRED, COUNT_EVENTS, COUNT_GAITS, COUNT_STOPPED, COUNT_WRAPS, STATUS_BAD,
                           STATUS_DEFERRED, STATUS_EVENTS, STATUS_LEAN, STATUS_SKIPPED, STATUS_STACK, STATUS_TOP,
                           step_lean, step_stacks)
from scuffle.anim.engine.kernels_flush import (FLUSH_FREED, FLUSH_GEN, FLUSH_HELD, FLUSH_IN, FLUSH_KEEP, FLUSH_KEYED, FLUSH_NOTED, FLUSH_RESUME, FLUSH_STOP, flush_anim_ids,
                            flush_release)

from scuffle.anim.engine.jitpipe import entry_points_only
from scuffle.anim.engine import kernels_flush as _flush, kernels_maths as _maths, kernels_motion as _motion
from scuffle.anim.engine import kernels_pose as _pose, kernels_rows as _rows, kernels_step as _step

# whether numba's on-disk cache keeps the kernels (False: no writable cache folder, each
# module's anim.engine.jitcache.cache_setting; they then compile for the process only)
CACHE = all(m.CACHE for m in (_maths, _rows, _pose, _step, _flush, _motion))
LINK_ONLY = _maths.LINK_ONLY    # the helpers compiled for linking only (anim/engine/jitpipe.py)

# the kernel modules, each stage's entry points (anim.engine.coldstart and the bench read these)
STAGES = {"kernels_step": ("step_stacks", "step_lean"), "kernels_pose": ("pose_stacks", "pose_lean", "pose_plan"),
          "kernels_flush": ("flush_release", "flush_anim_ids"), "kernels_motion": ("root_motion_step",)}
MODULE_OF = {name: mod for mod, names in STAGES.items() for name in names}

# Python calls every kernel (no compiled function links one in): a kernel loaded from the
# cache keeps its machine code only, not its parsed module (anim.engine.jitpipe)
entry_points_only(step_stacks, step_lean, pose_stacks, pose_lean, pose_plan, flush_release, flush_anim_ids, root_motion_step)

__all__ = ["add", "sub", "mul", "div", "frame_of", "pose_plan", "root_motion_step", "NO_POSE", "step_stacks",
           "pose_stacks", "STATUS_BAD", "STATUS_STACK", "STATUS_EVENTS", "STATUS_TOP", "STATUS_DEFERRED",
           "STATUS_SKIPPED", "STATUS_LEAN", "step_lean", "pose_lean",
           "COUNT_EVENTS", "COUNT_DEFERRED", "COUNT_STOPPED", "COUNT_GAITS", "COUNT_WRAPS",
           "flush_release", "flush_anim_ids", "FLUSH_FREED", "FLUSH_IN", "FLUSH_STOP", "FLUSH_HELD", "FLUSH_GEN",
           "FLUSH_RESUME", "FLUSH_KEYED", "FLUSH_KEEP", "FLUSH_NOTED", "STAGES", "MODULE_OF", "CACHE", "LINK_ONLY",
           # the interfaces (anim.engine.kernel_types), for the callers
           "HumanCols", "TaskCols", "CursorCols", "FadeCols", "GaitCols", "EventIndex", "StepRules", "StepBuffers",
           "BankTables", "Scratch", "PoseOut", "PlanArrays", "PoseBuffers", "QUEUED_POSE"]
