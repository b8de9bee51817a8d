"""The soak: 200 humans in random legal command streams for 10,000 updates.

Afterwards every task is back in the pool, every pose is finite, and
memory does not grow. The humans play the demo move set through anim.playback.player.Player
directly (the compiled engine, the only one; no ECS), each update four of them (chosen
by a seeded random.Random) get a command: a change to a loop under a fade, a chain of
clips handing over with a blend time (holding bits, with an end callback), a gait blend
and its retargets, a paired chain from the partner's set, a queued task, or a cut.
The streams are legal (the pool is sized for the crowd and a stack never nears 18), so
nothing may be refused: a refusal or an exception fails the soak.

Checked: every update's poses are finite; every 1,000 updates the pool holds exactly
the tasks in play (Player.tasks_out); between updates 2,000 and 10,000 the resident
memory, the number of live Python objects and the stores' table sizes do not grow
(beyond a small tolerance); at the end, once every human is cut and the deferred list
flushed, the pool and the stores' tables are back to empty and no held bit is left.
"""
from __future__ import annotations

import pytest

import gc
import random
import time

import pytest


from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.engine.stack import STACK_SIZE, CharacterInstance
from scuffle.anim.playback.tasks import TaskType
from scuffle.game.fighters.moves import ATTACK_CHAIN, GAIT_IDS, PAIRED_MOVES, Move
from scuffle.game.fighters.moveset import demo_set

HUMANS = 200
UPDATES = 10_000
COMMANDS_PER_UPDATE = 4
FIRST_SAMPLE, LAST_SAMPLE = 2_000, UPDATES
RSS_TOLERANCE = 8 * 2 ** 20          # bytes: numpy scratch and allocator noise, not a leak
OBJECT_TOLERANCE = 2_000             # live Python objects

LOOPS = (Move.IDLE, Move.FIGHT_IDLE, Move.HOLD, Move.GROUNDED)
CLIPS = (*ATTACK_CHAIN, Move.ATTACK_END, Move.WALK_START, Move.WALK_STOP, Move.HIT_FRONT, Move.HIT_HEAVY,
         Move.KNOCKDOWN, Move.GET_UP, Move.GRAB_ATTEMPT)
PAIRS = tuple(PAIRED_MOVES.items())


def _rss() -> int | None:
    """Resident memory in bytes (Linux /proc), or None elsewhere."""
    try:
        with open("/proc/self/statm") as fp:
            pages = int(fp.read().split()[1])
    except OSError:
        return None
    import resource
    return pages * resource.getpagesize()


class Crowd:
    """The soak's world: the player, the humans and the seeded command stream."""

    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)
        self.anim_set = demo_set()
        self.player = Player(PlayerOptions(pool_size=12 * HUMANS))
        self.player.register(self.anim_set)
        self.humans = [CharacterInstance(self.anim_set, f"h{i}") for i in range(HUMANS)]
        self.ended = 0
        for h in self.humans:
            self.player.change(h, self.player.loop(h, Move.IDLE))
        self.counts: dict[str, int] = {}

    def _end(self, inst) -> None:
        self.ended += 1

    def command(self, i: int) -> None:
        p, rng, h = self.player, self.rng, self.humans[i]
        kind = rng.choice(("loop", "chain", "chain", "gait", "retarget", "paired", "enqueue", "cut"))
        self.counts[kind] = self.counts.get(kind, 0) + 1
        fade = rng.choice((0.0, 0.1, 0.2, 0.35))
        if kind == "loop":
            task = p.loop(h, rng.choice(LOOPS))
        elif kind == "chain":
            ids = [rng.choice(CLIPS) for _ in range(rng.randrange(1, 4))] + [rng.choice(LOOPS)]
            task = p.chain(h, ids, blend=rng.choice((0.0, 0.1, 0.2)), held=rng.choice((0, 0x1, 0x3)),
                           on_end=self._end)
        elif kind == "gait":
            task = p.gait(h, GAIT_IDS, target=rng.randrange(5), value=rng.uniform(0.0, 4.0))
        elif kind == "retarget":
            gait = next((t for t in h.stack if t.type == TaskType.GAIT and not t.released), None)
            if gait is not None:
                gait.set_target(rng.uniform(0.0, 4.0))
            return
        elif kind == "paired":
            attacker = self.humans[i ^ 1]
            _, victim_clip = rng.choice(PAIRS)
            task = p.chain(h, [victim_clip, Move.IDLE], paired_with=attacker, held=0x100)
        elif kind == "enqueue":
            if not h.queue:
                p.enqueue(h, p.loop(h, rng.choice(LOOPS)))
            return
        else:
            p.cut(h)
            return
        p.change(h, task, fade)

    def update(self) -> None:
        for i in self.rng.sample(range(HUMANS), COMMANDS_PER_UPDATE):
            self.command(i)
        poses = self.player.update(self.humans)
        assert self.player.refused == []
        assert poses.is_finite()


def _sizes(p: Player) -> tuple:
    st = p.stores
    return (st.cursors.capacity, st.fades.capacity, st.gaits.capacity, st.tasks.capacity, st.humans.capacity,
            len(p.deferred))


@pytest.mark.slow
def test_200_humans_for_10000_updates_leak_nothing():
    crowd = Crowd()
    p, hs = crowd.player, crowd.humans
    t0 = time.perf_counter()
    marks = {}
    depth = 0
    for u in range(1, UPDATES + 1):
        crowd.update()
        if u % 1000 == 0:
            assert p.pool.in_use == p.tasks_out(hs), u
            depth = max(depth, max(len(h.stack) for h in hs))
        if u in (FIRST_SAMPLE, LAST_SAMPLE):
            gc.collect()
            marks[u] = (_rss(), len(gc.get_objects()), _sizes(p))
    seconds = time.perf_counter() - t0
    # The stream was rich: every kind of command ran many times, end callbacks ran.
    assert min(crowd.counts.values()) > 3000 and crowd.ended > 1000, crowd.counts
    assert 3 <= depth < STACK_SIZE
    (rss0, objs0, sizes0), (rss1, objs1, sizes1) = marks[FIRST_SAMPLE], marks[LAST_SAMPLE]
    if rss0 is not None:
        assert rss1 - rss0 <= RSS_TOLERANCE, (rss0, rss1)
    assert objs1 - objs0 <= OBJECT_TOLERANCE, (objs0, objs1)
    assert sizes1[:4] == sizes0[:4], (sizes0, sizes1)              # no table had to grow
    # Everything back: cut every human, flush, and the pool and the tables are empty.
    for h in hs:
        p.cut(h)
    p.flush()
    assert p.pool.in_use == 0 and p.deferred == []
    st = p.stores
    assert (st.cursors.in_use, st.fades.in_use, st.gaits.in_use) == (0, 0, 0)
    assert all(h.stack == [] and h.queue == [] and h.record.flags == 0 and h.record.anim_id == -1 for h in hs)
    print(f"soak: {HUMANS} humans x {UPDATES} updates in {seconds:.1f} s "
          f"({1000 * seconds / UPDATES:.2f} ms per update), max stack {depth}, commands {crowd.counts}, "
          f"rss {rss0} -> {rss1}, objects {objs0} -> {objs1}, tables {sizes0} -> {sizes1}")


# ---------------------------------------------------------------- the fight rules

FIGHTERS = 20
FIGHT_UPDATES = 6_000
FIGHT_FIRST, FIGHT_LAST = 2_000, FIGHT_UPDATES


@pytest.mark.slow
def test_the_fight_rules_for_6000_updates_keep_the_log_and_memory_flat():
    """Ten AI duels under the fight rules (strikes, grabs, throws, reactions, get-ups):
    the log stays a ring of LOG_SIZE with running counts, every task is accounted for,
    and between updates 2,000 and 6,000 the resident memory and the live objects do
    not grow."""
    from scuffle.anim.playback.player import PlayerOptions
    from scuffle.game.fighters.ai import FighterAI
    from scuffle.game.fighters.combat import LOG_SIZE, Fight
    from scuffle.game.runtime.world import Game

    g = Game(PlayerOptions(pool_size=12 * FIGHTERS))
    try:
        s = demo_set()
        for i in range(FIGHTERS):
            pair, side = divmod(i, 2)
            g.add_human(f"f{i}", s, (4.0 * pair, 0.9 * side, 0.0), 180.0 * side)
        fight = Fight(g, separate=True)
        for i in range(FIGHTERS):
            g.change(f"f{i}", g.player.loop(g.instance(f"f{i}"), Move.FIGHT_IDLE))
            fight.controllers.append(FighterAI(f"f{i}", f"f{i ^ 1}", seed=i))
        marks = {}
        for u in range(1, FIGHT_UPDATES + 1):
            g.step()
            assert not g.player.refused, g.player.refused
            if u % 1000 == 0:
                insts = [g.instance(f"f{i}") for i in range(FIGHTERS)]
                assert g.player.pool.in_use == g.player.tasks_out(insts), u
            if u in (FIGHT_FIRST, FIGHT_LAST):
                gc.collect()
                marks[u] = (_rss(), len(gc.get_objects()), fight.stats.logged)
        st = fight.stats
        assert len(st.log) == LOG_SIZE < st.logged == sum(st.kinds.values())
        assert st.strikes > 50 and st.kinds["strike"] > 50, st.kinds
        (rss0, objs0, n0), (rss1, objs1, n1) = marks[FIGHT_FIRST], marks[FIGHT_LAST]
        assert n1 > n0 + LOG_SIZE                                    # the log kept on filling
        if rss0 is not None:
            assert rss1 - rss0 <= RSS_TOLERANCE, (rss0, rss1)
        assert objs1 - objs0 <= OBJECT_TOLERANCE, (objs0, objs1)
    finally:
        g.close()
