"""What a steady update leaves allocated (the tables are the state: nothing allocated per
update that grows with the crowd).

A crowd's update keeps a few small objects of its own until the next one (the step's
array of the humans that fired, the event rows it stages, ``ctx.fired``, the jobs' last
inputs), but none per human: the systems read and write columns, and no Python int, list
entry or handle is made for each human that fired. Counted with tracemalloc: the blocks
allocated during an update and still alive at its end, at 60 humans and at 600 (their
places in the crowd past the small ints Python keeps, so a list of them would show).
"""
from __future__ import annotations

import tracemalloc

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import EventType, author_clip, make_event
from scuffle.anim.data.options import PlayerOptions
from scuffle.game.runtime.world import Game

UPDATES = 20


def _looping(n: int) -> Game:
    """``n`` humans looping clips with events (a sound and an effect, or a camera shake),
    their events read as columns by a rows handler (a crowd's sound code)."""
    events = [make_event(2, EventType.SOUND, word=7), make_event(5, EventType.EFFECT_9)]
    s = AnimSet.build({1: author_clip("a", 12, events=events),
                       2: author_clip("b", 9, events=[make_event(1, EventType.CAMERA_SHAKE)])}, {}, name="s")
    g = Game(PlayerOptions(pool_size=max(360, 4 * n)))
    for i in range(n):
        g.add_human(f"h{i}", s, (2.0 * i, 0.0, 0.0))
        inst = g.instance(f"h{i}")
        g.player.change(inst, g.player.loop(inst, 1 if i % 2 else 2), 0.0)
    g.on_rows(None, lambda ctx, rows: None)
    return g


def _kept_per_update(n: int) -> tuple[float, int]:
    """The mean and the most blocks an update at ``n`` humans leaves allocated, and how
    many humans fired over the updates counted."""
    g = _looping(n)
    try:
        for _ in range(5):
            g.step()
        kept, fired = [], 0
        for _ in range(UPDATES):
            tracemalloc.start(1)
            try:
                g.step()
                snap = tracemalloc.take_snapshot()
            finally:
                tracemalloc.stop()
            kept.append(sum(st.count for st in snap.statistics("filename")))
            fired += len(g.ctx.fired)
        return sum(kept) / len(kept), fired
    finally:
        g.close()


def test_a_steady_update_leaves_nothing_per_human():
    """Ten times the humans (hundreds firing an update) leave about what a few dozen do."""
    few, fired_few = _kept_per_update(60)
    many, fired_many = _kept_per_update(600)
    assert fired_many > 9 * fired_few > 0                 # ten times the humans fired
    assert many <= few + 15, (few, many)
