"""The player's options and counts: the switches a world is made with, and what it counted.

``PlayerOptions`` (frozen) holds the switches of ``scuffle.anim.playback.player.Player``: the
CfgAnimSpeeds rates, the pool size, dt, and the readings and original-bug switches
(docs/original.md, docs/original-bugs.md); its defaults are the original's behaviour.
``PlayerStats`` holds the counts a user can read (``Player.stats``). A module of its own
so that the parts of the player (anim.playback.lookup, anim.playback.construct, anim.playback.stackrules) can name
them without importing the player.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from scuffle.anim.maths import f32 as F
from scuffle.anim.base.callbackdata import Callback, check_callback
from scuffle.anim.base.enums import (AttachedVelocity, BlendWindow, EventRule, HeldRelease, MotionEntry, PickSampling, PlaceEvents,
                    TagBits)
from scuffle.anim.base.errors import POOL_SIZE
from scuffle.anim.base.limits import INT32_MAX, MAX_DT, check_float, check_int
from scuffle.anim.data.rates import RUNTIME_SPEEDS, CfgAnimSpeeds

__all__ = ["PlayerOptions", "PlayerStats", "READINGS", "MAX_THREADS"]

MAX_THREADS = 1024          # PlayerOptions.threads: more is a typo, not a machine

# The options that take one of an enum's values (a scenario's [options] takes them too).
READINGS = (("events", EventRule), ("blend_window", BlendWindow), ("pick", PickSampling),
            ("place_events", PlaceEvents), ("held_release", HeldRelease), ("motion_entry", MotionEntry),
            ("tag_bits", TagBits), ("attached_velocity", AttachedVelocity))


@dataclass(frozen=True)
class PlayerOptions:
    """Switches of the player. Defaults are the original's behaviour.

    ``end_zero_overshoot``: end a clip whose end step's overshoot is exactly 0.0 (the
    original takes 0.0 as "not ended", so such a clip never ends; docs/original-bugs.md).
    ``pool_size``: tasks in the world's pool (360). ``early_finish_above`` (6) and
    ``cleanup_above`` (12): the stack sizes past which a change finishes the newest fade
    early, and a fade gives back the tasks below it. (The crowd is always stepped and
    sampled by the compiled engine; the plain-Python model of the spec is the reference
    engine, ``scuffle.anim.reference``, ``Game(engine="reference")``.)

    Readings of passages the spec leaves open (docs/original.md cites the lines for
    each and argues the default):
    ``events`` (EventRule): "cursor", every task's cursors fire unless muted by flag
    0x10 (the confirmed code, the default), or "newest", only the newest task's
    (Coney's reading). ``blend_window`` (BlendWindow): "advanced", a type 3's next task
    is advanced too during the blend window (the runtime figure, the default), or
    "kept", kept to the time into the window. ``pick`` (PickSampling): "chosen", type 11
    samples the clip its value picks (the default), or "all", all four are sampled and
    the picked one's pose kept. ``queued_default``: None (the default pose is always
    the reference pose), or the human test 0x00223440: a Callback (data: its handler,
    registered with the world's callbacks, is called as handler(instance, *args)) or a
    callable(instance), whose answer is taken as a bool; asked at each sample for each
    human with queued tasks, and when it passes, those tasks are sampled first and
    their pose is the default pose of that sample (0x00176d60, "The pose" L102).
    ``place_events`` (PlaceEvents): "silent", a clip's type 8 events (the partner's
    place) are never dispatched (L249, the original's, the default), or "fired" like any
    other. ``held_release`` (HeldRelease): "original", a release clears every held bit
    the task still holds (L314, the default), or "coney", not those another live task
    holds (L402). ``motion_entry`` (MotionEntry): "motion", bone-transform entry 0 holds
    the root velocity and bone 0's rotation, the identity where tagged (L116, the
    default), or "identity" always (Coney's, L394). ``tag_bits`` (TagBits): "y_bit",
    a default value's tag is also the lowest bit of its y float, cleared on sampled
    values (L102, the default), or "mark", a separate mark only (Coney's, L394).
    ``attached_velocity`` (AttachedVelocity), read by the state update (systems.motion):
    "root", an attached human's velocity is its state velocity plus its root velocity as
    any human's (L349-350: only its turn is taken otherwise; the default), or "zero".
    ``dt``: the update's time (s); a Game steps its animation and its root motion by it
    (``Game.ctx.dt`` reads and sets this very value).
    ``refuse_deep_chains``: False (the original: a chain whose blend windows nest more
    than seven clips' poses plays, its eighth pose skipped when sampled), or True: such
    a chain or task is refused when given (PoseStackOverflow, nothing changed).
    ``threads``: the threads the step and the pose of a crowd run on (chunks of at
    least ``anim.engine.crowd.MIN_CHUNK`` humans each); None (the default) the cores the
    process may use. Not a rule: every result is the same bits whatever the count.
    Rejected: an unknown reading (ValueError naming the field); a ``queued_default`` that
    is neither a Callback with plain-data arguments nor a callable (CallbackError); a ``dt`` that is not a
    finite number 0 to 1 s, a ``pool_size`` outside 1 to 2^31 - 1, an ``early_finish_above``
    or ``cleanup_above`` outside 0 to 2^31 - 1, ``threads`` outside 1 to 1024 (RangeError,
    a ValueError naming it).
    """

    end_zero_overshoot: bool = False
    pool_size: int = POOL_SIZE
    early_finish_above: int = 6
    cleanup_above: int = 12
    speeds: CfgAnimSpeeds = field(default_factory=lambda: RUNTIME_SPEEDS)
    dt: float = F.DT
    events: str = EventRule.CURSOR
    blend_window: str = BlendWindow.ADVANCED
    pick: str = PickSampling.CHOSEN
    queued_default: Callback | Callable | None = None
    refuse_deep_chains: bool = False
    place_events: str = PlaceEvents.SILENT
    held_release: str = HeldRelease.ORIGINAL
    motion_entry: str = MotionEntry.MOTION
    tag_bits: str = TagBits.Y_BIT
    attached_velocity: str = AttachedVelocity.ROOT
    # not a rule: no state depends on it (a snapshot's configuration digest leaves it out)
    threads: int | None = field(default=None, metadata={"state": False})

    def __post_init__(self):
        object.__setattr__(self, "dt", check_float("PlayerOptions.dt", self.dt, 0.0, MAX_DT))
        check_int("PlayerOptions.pool_size", self.pool_size, 1, INT32_MAX)
        for name in ("early_finish_above", "cleanup_above"):
            check_int(f"PlayerOptions.{name}", getattr(self, name), 0, INT32_MAX)
        if self.threads is not None:
            object.__setattr__(self, "threads", check_int("PlayerOptions.threads", self.threads, 1, MAX_THREADS))
        for name, kind in READINGS:
            v = getattr(self, name)
            try:
                object.__setattr__(self, name, kind(v))
            except ValueError:
                raise ValueError(f"PlayerOptions.{name}: {v!r} is not one of "
                                 f"{', '.join(repr(k.value) for k in kind)}") from None
        # a Callback (data, through the world's Callbacks) or a callable; CallbackError names the field
        object.__setattr__(self, "queued_default", check_callback(self.queued_default, "PlayerOptions.queued_default"))


@dataclass
class PlayerStats:
    """Counts a user can read (``Player.stats``), summed since the player was made.

    ``poses_refused``: poses the pose stack of seven refused (an eighth, 0x00104ce0);
    each human's count for the last sample is ``CharacterInstance.poses_refused``.
    ``samples``: the sample calls.
    """

    poses_refused: int = 0
    samples: int = 0
