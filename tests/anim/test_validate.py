"""The tables' check (anim.engine.store.check_rows, BatchEngine.validate): one invalid row per rule.

The kernels index the tables with the rows they hold (a stack's task rows, a task's
cursor, fade, gait, next and incoming rows, a cursor's clip and next event); numba does
not check bounds, so a bad row would read or write another row's memory. The engine runs
the check whenever a table grew since the last one (and before every kernel call with
SCUFFLE_DEBUG=1); each rule below gets one corrupted row and must be named.
"""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, make_event
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.engine.store import HumanTable, TableCorrupt
from scuffle.anim.playback.tasks import TaskType

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

GAIT = [4, 5, 6, 7, 7]


def _set() -> AnimSet:
    rot = {1: [(0, (0.0, 0.0, 0.0, 1.0)), (8, (0.1, 0.0, 0.0, 0.995))]}
    clips = {i: author_clip(f"c{i}", 10 + i, rotations=rot, events=[make_event(3, 11, word=1)]) for i in range(4)}
    clips.update({i: author_clip(f"g{i}", 20 + i, rotations=rot) for i in (4, 5, 6, 7)})
    return AnimSet.build(clips, {i: author_range(flags=0x1000) for i in clips}, name="v")


@pytest.fixture
def crowd():
    """A Player stepping 40 humans: loops, chains under fades, gait blends (a pool larger
    than the original's 360, for the growth test's 240 humans)."""
    p = Player(PlayerOptions(pool_size=4000))
    s = _set()
    hs = [CharacterInstance(s, f"h{i}") for i in range(40)]
    for i, h in enumerate(hs):
        if i % 3 == 0:
            p.change(h, p.gait(h, GAIT, target=2.5, value=1.0), 0.2)
        elif i % 3 == 1:
            p.change(h, p.chain(h, [0, 1, 2], blend=0.1), 0.3)
        else:
            p.change(h, p.loop(h, i % 4), 0.1)
    for _ in range(5):
        p.update(hs)
    return p, hs


def _engine(p: Player):
    return p.batch


def test_a_healthy_crowd_passes(crowd):
    p, hs = crowd
    _engine(p).validate()


def _capacities(eng) -> tuple:
    """The engine's tables' sizes and its clip index's (what grows)."""
    st = eng.player.stores
    return (st.cursors.capacity, st.fades.capacity, st.gaits.capacity, st.tasks.capacity, st.humans.capacity,
            len(eng.e_first))


def test_the_engine_checks_after_a_table_grew(crowd):
    """New humans grow the tables past their capacity: their arrays are replaced (the world's
    layout signal moves on), and the next step runs the check and records the stamp it checked."""
    p, hs = crowd
    eng = _engine(p)
    p.update(hs)
    caps, checked = _capacities(eng), eng._validated
    assert checked == p.stores.signal.now
    s = hs[0].anim_set
    more = [CharacterInstance(s, f"m{i}") for i in range(200)]
    for h in more:
        p.change(h, p.loop(h, 1), 0.1)
    assert _capacities(eng) != caps and p.stores.signal.now != checked
    calls = []
    real = eng.validate
    eng.validate = lambda: (calls.append(1), real())[1]
    p.update(hs + more)
    assert calls and eng._validated == p.stores.signal.now


def _corrupt_and_expect(p: Player, fix, words: str) -> None:
    fix(p.stores)
    with pytest.raises(TableCorrupt, match=words):
        _engine(p).validate()


def _live(table) -> int:
    return int(np.flatnonzero(table.live)[0])


def _live_task_of(stores, ttype: TaskType) -> int:
    t = stores.tasks
    return int(np.flatnonzero(t.live & (t.type == int(ttype)))[0])


@pytest.mark.parametrize("rule, fix, words", [
    ("depth", lambda st: st.humans.depth.__setitem__(_live(st.humans), HumanTable.STACK_ROWS + 1),
     r"humans\.depth\[\d+\] = 19"),
    ("stack row", lambda st: st.humans.stack.__setitem__((_live(st.humans), 0), st.tasks.capacity),
     r"humans\.stack\[\d+\] = \d+: not a row of the task table"),
    ("stack none", lambda st: st.humans.stack.__setitem__((_live(st.humans), 0), -1),
     r"humans\.stack\[\d+\] = -1"),
    ("task type", lambda st: st.tasks.type.__setitem__(_live(st.tasks), 0), r"tasks\.type\[\d+\] = 0"),
    ("cursor row", lambda st: st.tasks.c0.__setitem__(_live_task_of(st, TaskType.LOOP), st.cursors.capacity),
     r"tasks\.c0\[\d+\] = \d+: not a row of the cursor table"),
    ("next row", lambda st: st.tasks.nxt.__setitem__(_live_task_of(st, TaskType.CLIP), -2),
     r"tasks\.nxt\[\d+\] = -2"),
    ("incoming row", lambda st: st.tasks.incoming.__setitem__(_live_task_of(st, TaskType.FADE), 10 ** 9),
     r"tasks\.incoming\[\d+\] = 1000000000"),
    ("fade row", lambda st: st.tasks.aux.__setitem__(_live_task_of(st, TaskType.FADE), st.fades.capacity),
     r"tasks\.aux\[\d+\] = \d+: not a row of the fade table"),
    ("gait row", lambda st: st.tasks.aux.__setitem__(_live_task_of(st, TaskType.GAIT), -1),
     r"tasks\.aux\[\d+\] = -1: not a row of the gait table"),
    ("clip", lambda st: st.cursors.bank.__setitem__(_live(st.cursors), 999), r"cursors\.bank\[\d+\] = 999"),
    ("next event", lambda st: st.cursors.ev.__setitem__(_live(st.cursors), 50), r"cursors\.ev\[\d+\] = 50: past"),
    ("gait clip", lambda st: st.gaits.b3.__setitem__(_live(st.gaits), 999),
     r"gaits\.b3\[\d+\] = 999: not a clip of the bank"),
    ("free list", lambda st: st.cursors.free_rows.__setitem__(0, _live(st.cursors)),
     r"cursors\.free_rows: \d+ free rows that are not"),
    ("free count", lambda st: st.cursors.n_free.__setitem__(0, st.cursors.capacity + 1),
     r"cursors\.n_free = \d+: not 0-\d+"),
    ("dtype", lambda st: setattr(st.tasks, "rate", st.tasks.rate.astype(np.float64)),
     r"tasks\.rate: dtype float64"),
    ("length", lambda st: setattr(st.cursors, "t", st.cursors.t[:-1].copy()), r"cursors\.t: dtype float32 shape"),
    ("stack shape", lambda st: setattr(st.humans, "stack", st.humans.stack[:, :5].copy()), r"humans\.stack"),
    # the queues, which the pose kernel walks for PlayerOptions.queued_default
    ("queued", lambda st: st.humans.queued.__setitem__(_live(st.humans), HumanTable.QUEUE_ROWS + 1),
     r"humans\.queued\[\d+\] = 11: not 0-10"),
    ("queue row", lambda st: (st.humans.queued.__setitem__(_live(st.humans), 1),
                              st.humans.queue.__setitem__((_live(st.humans), 0), st.tasks.capacity)),
     r"humans\.queue\[\d+\] = \d+: not a row of the task table"),
    ("queue shape", lambda st: setattr(st.humans, "queue", st.humans.queue[:, :3].copy()), r"humans\.queue: "),
])
def test_each_rule_names_its_fault(crowd, rule, fix, words):
    p, _ = crowd
    _corrupt_and_expect(p, fix, words)


@pytest.mark.parametrize("col", ["c2", "c3"])
def test_a_pick_task_third_and_fourth_cursor_rows_are_checked(crowd, col):
    """Types 10, 11 and 13 keep their cursors in c0-c3 (a pick's four); the kernels follow
    c2 and c3 too, so the check names a bad one."""
    p, hs = crowd
    h = hs[0]
    p.change(h, p.pick(h, [0, 1, 2, 3], 1.0, value=2.0), 0.0)
    p.update(hs)
    _engine(p).validate()
    r = _live_task_of(p.stores, TaskType.PICK)
    getattr(p.stores.tasks, col)[r] = p.stores.cursors.capacity
    with pytest.raises(TableCorrupt, match=rf"tasks\.{col}\[{r}\] = \d+: not a row of the cursor table"):
        _engine(p).validate()


def test_an_event_index_past_the_frames_is_named(crowd):
    p, _ = crowd
    eng = _engine(p)
    eng.e_first = eng.e_first + 1000
    with pytest.raises(TableCorrupt, match="events: first/count"):
        eng.validate()


def test_debug_mode_checks_before_every_call(crowd, monkeypatch):
    """SCUFFLE_DEBUG=1: a row corrupted between two updates (no table grew) stops the next
    step with TableCorrupt before the kernel reads it; without it the check waits for growth."""
    p, hs = crowd
    eng = _engine(p)
    eng.debug = True
    h = int(np.flatnonzero(p.stores.humans.live)[0])
    p.stores.humans.stack[h, 0] = p.stores.tasks.capacity + 7
    with pytest.raises(TableCorrupt, match="humans.stack"):
        p.update(hs)


def test_debug_mode_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SCUFFLE_DEBUG", "1")
    assert Player().batch.debug is True
    monkeypatch.setenv("SCUFFLE_DEBUG", "0")
    assert Player().batch.debug is False
