"""Shared set-ups of the flush tests (test_flush.py, test_deferred_rows.py): the engine and
the reference side by side, and three humans whose middle one's clip ends into a named
callback while the flush releases."""
from __future__ import annotations

from scuffle.anim.engine.callbacks import Callback
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.reference import Reference, RefInstance, engine_state, reference_state
from scuffle.anim.engine.stack import CharacterInstance

CLIP = 15           # a 16-frame clip of the demo set
IDLE = 388          # the idle loop


def worlds(**options) -> list:
    """The engine and the reference, each with the instance class it plays."""
    return [(Player(PlayerOptions(**options)), CharacterInstance), (Reference(PlayerOptions(**options)), RefInstance)]


def state(w, hs) -> tuple:
    """The whole state of world ``w`` and humans ``hs``, comparable across the two."""
    return engine_state(w, hs) if isinstance(w, Player) else reference_state(w, hs)


def three_handing_over(w, cls, aset, callback: str) -> list:
    """Three humans of ``cls`` on world ``w``, each changed to CLIP (held 0x1) handing over
    to IDLE, the middle one's clip with end callback ``callback`` (registered by the
    caller); stepped and flushed once. Returns the humans."""
    hs = [cls(aset, f"h{i}") for i in range(3)]
    for i, h in enumerate(hs):
        w.change(h, w.clip(h, CLIP, w.loop(h, IDLE), held=0x1,
                           on_end=Callback(callback, ()) if i == 1 else None), 0.0)
    w.step(hs)
    w.flush()
    return hs


def flush_until(w, hs, catch: type, done, most: int = 60) -> str | None:
    """Step and flush ``hs`` up to ``most`` times, each flush's exception of type ``catch``
    kept (its text); stop once ``done(text or None)`` says so. Returns the last text kept."""
    raised = None
    for _ in range(most):
        w.step(hs)
        try:
            w.flush()
        except catch as exc:
            raised = str(exc)
        if done(raised):
            break
    return raised
