"""Tasks made and never placed go back to the pool at the end of the update that made
them (the next step's start), on both engines (anim.playback.orphans; docs/original.md, "The stack,
the queue and the pool"): a refused command leaves no task out for good, a task made and
placed within the update is untouched, and a snapshot restores the count and the sweep
alike."""
from __future__ import annotations

import random

import pytest

from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.reference import Reference, RefInstance, engine_state, reference_state
from scuffle.anim.engine.stack import AnimLimitError, CharacterInstance
from scuffle.anim.engine.store import StaleHandle
from scuffle.game.fighters.moves import GAIT_IDS, Move
from scuffle.game.fighters.moveset import demo_set

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

ENGINES = ("player", "reference")


def _world(engine: str, n: int = 1, pool: int = 360):
    opts = PlayerOptions(pool_size=pool)
    s = demo_set()
    if engine == "player":
        return Player(opts), [CharacterInstance(s, f"h{i}") for i in range(n)]
    return Reference(opts), [RefInstance(s, f"h{i}") for i in range(n)]


def _update(w, hs) -> None:
    w.step(hs)
    w.flush()


@pytest.mark.parametrize("engine", ENGINES)
def test_twenty_refused_commands_leave_the_pool_as_it_was_after_the_update(engine):
    """A command that raises after its next task was made (a bad blend time, an unknown
    id, a full pool for the fade) holds that task until the update ends, then it is back:
    20 refused commands, 0 tasks gone."""
    w, (h,) = _world(engine)
    w.change(h, w.loop(h, Move.FIGHT_IDLE), 0.0)
    _update(w, [h])
    base = w.pool.in_use
    for k in range(20):
        with pytest.raises(ValueError):
            if k % 2:
                w.change(h, w.clip(h, Move.JAB, w.loop(h, Move.FIGHT_IDLE), blend=-1.0))
            else:
                w.change(h, w.clip(h, 987654, w.loop(h, Move.FIGHT_IDLE)))
    assert w.pool.in_use == base + 20                # each one's loop, made before the refusal
    _update(w, [h])
    assert w.pool.in_use == base == w.tasks_out([h])
    for _ in range(3):
        _update(w, [h])
    assert w.pool.in_use == base


@pytest.mark.parametrize("engine", ENGINES)
def test_a_task_made_and_never_placed_goes_back_at_the_next_step_with_its_next_task(engine):
    """A handle made and dropped (a chain never changed to, a fade, a gait) goes back with
    the next tasks it owns, without a release: no end callback runs, no held flag is set."""
    w, (h,) = _world(engine)
    ended: list = []
    w.callbacks.register("end", lambda inst, *a: ended.append(a))
    w.change(h, w.loop(h, Move.FIGHT_IDLE), 0.0)
    _update(w, [h])
    base = w.pool.in_use
    w.chain(h, [Move.JAB, Move.KICK, Move.FIGHT_IDLE], blend=0.1, held=0x1, on_end=("end", (1,)))
    w.fade(h, 0.2)
    w.gait(h, GAIT_IDS, target=1.0)
    assert w.pool.in_use == base + 5
    _update(w, [h])
    assert w.pool.in_use == base
    assert ended == [] and h.record.flags & 0x1 == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_task_made_then_placed_in_the_same_update_is_untouched(engine):
    """Made first and placed later in the update (after other commands, as a next task,
    pushed): every one plays on; only the one never placed goes back."""
    w, (h,) = _world(engine)
    w.change(h, w.loop(h, Move.FIGHT_IDLE), 0.0)
    _update(w, [h])
    idle = w.loop(h, Move.FIGHT_IDLE)
    lost = w.loop(h, Move.WALK)
    jab = w.clip(h, Move.JAB, idle, blend=0.1)
    kick = w.clip(h, Move.KICK)
    w.change(h, jab, 0.1)
    w.push(h, kick)
    base = w.pool.in_use
    _update(w, [h])
    assert w.pool.in_use == base - 1 == w.tasks_out([h])
    ids = [t.anim_id() for t in h.stack]
    assert Move.KICK in ids
    with pytest.raises(StaleHandle):
        w.push(h, lost)


def test_both_engines_agree_on_a_fuzz_with_refusals_and_orphans():
    """Random commands, some refused after their next task was made, some handles dropped,
    on the engine and the reference: the same state after every update, and the pool
    never holds more than the stacks, queues and deferred list once an update ends."""
    rng = random.Random(7)
    ws = [_world(e, 3, 60) for e in ENGINES]
    for u in range(60):
        plan = [(rng.randrange(3), rng.randrange(6), rng.random()) for _ in range(rng.randrange(5))]
        for w, hs in ws:
            w.step(hs)
            w.flush()
            for i, kind, x in plan:
                h = hs[i]
                try:
                    if kind == 0:
                        w.change(h, w.clip(h, Move.JAB, w.loop(h, Move.FIGHT_IDLE), blend=0.1), 0.1)
                    elif kind == 1:
                        w.change(h, w.clip(h, Move.KICK, w.loop(h, Move.FIGHT_IDLE), blend=-x))
                    elif kind == 2:
                        w.loop(h, Move.WALK)
                    elif kind == 3:
                        w.enqueue(h, w.clip(h, 987654 if x < 0.5 else Move.JAB, w.loop(h, Move.FIGHT_IDLE)))
                    elif kind == 4:
                        w.change(h, w.gait(h, GAIT_IDS, target=3.0 * x), 0.2)
                    else:
                        w.push(h, w.clip(h, Move.KICK))
                except (ValueError, AnimLimitError):
                    pass
        (p, hp), (r, hr) = ws
        assert engine_state(p, hp) == reference_state(r, hr), u
    for w, hs in ws:
        _update(w, hs)
        assert w.pool.in_use == w.tasks_out(hs)


@pytest.mark.parametrize("engine", ("compiled", "reference"))
def test_a_snapshot_restores_the_orphan_and_the_next_update_gives_it_back(engine):
    """A snapshot taken with a task made and not placed holds it; restored, the pool counts
    it again and the next update gives it back as it did the first time: the same state."""
    from scuffle.game.runtime.world import Game

    with Game(engine=engine) as g:
        g.add_human("a", demo_set())
        g.change("a", g.player.loop(g.instance("a"), Move.FIGHT_IDLE))
        g.step()
        inst = g.instance("a")
        base = g.player.pool.in_use
        with pytest.raises(ValueError):
            g.change("a", g.player.clip(inst, Move.JAB, g.player.loop(inst, Move.FIGHT_IDLE), blend=-1.0))
        assert g.player.pool.in_use == base + 1
        snap = g.snapshot()
        g.step()
        after, sums = g.player.pool.in_use, g.checksum()
        assert after == base
        g.restore(snap)
        assert g.player.pool.in_use == base + 1
        g.step()
        assert g.player.pool.in_use == after and g.checksum() == sums
