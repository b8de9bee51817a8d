"""The fight rules' state as table rows (game.fighters.fightrows) and the fight log's ring
(game.fighters.fightlog.FightLog).

A snapshot file carries the fight's state, the AIs' and the log as tables declared like
the engine's, every column with a rule (Fight.ROW_RANGES) checked in the rows' compiled
pass: pushed past its rule at a row in use, a file is refused with one line naming the
table and column, the Game unchanged. What the rules cannot say (entities, move ends,
the log's ring and its values' kinds) is checked on reading them back.
"""
from __future__ import annotations

import numpy as np
import pytest

from gamehelp import ai_fight
from scuffle.anim.engine import snapkernel as K
from scuffle.anim.engine.store import _layout
from scuffle.game.fighters import fightrows
from scuffle.game.fighters.combat import END_WHATS
from scuffle.game.fighters.fightlog import LOG_EXTRAS, FightLog
from scuffle.game.runtime import snapfile as F
from scuffle.game.runtime.snapshot import Snapshot, SnapshotError

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd


@pytest.fixture(scope="module")
def pair():
    """A fight 150 updates on (hits, grabs, a log), its file with a hit window pending (the
    rules resolve them within an update: made here), and a twin set up alike."""
    a, b = ai_fight(seed=11), ai_fight(seed=11)
    for _ in range(150):
        a.step()
    assert len(a.fight.stats.log) > 3 and not a.fight.pending
    ent = a.entity("p1")

    def window(v, live):
        v["live"][0], v["kind"][0], v["entity"][0], v["move"][0], v["what"][0] = True, 0, ent, 11, -1
    data = _forged(a.snapshot().to_bytes(), "pending", window)
    b.restore(Snapshot.from_bytes(data))
    assert b.fight.pending == [("window", ent, 11)]
    b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
    yield a, b, data
    a.close()
    b.close()


def _forged(data: bytes, table: str, edit) -> bytes:
    """``data`` with table ``table``'s block edited by ``edit(columns by name, rows in use)``."""
    def one(name: str, sec: bytes) -> bytes:
        if name != f"table.{table}":
            return sec
        rows, raw, cols, block = F.table_block(sec)
        lay = _layout(cols, rows)[0]
        views = {n: block[o:o + int(np.prod(s)) * dt.itemsize].view(dt).reshape(s) for n, (o, dt, s) in lay.items()}
        edit(views, np.flatnonzero(views["live"]))
        return F.table_section(rows, raw, cols, block)
    version, config, sections = F.sections_of(data)
    return F.assemble([(n, one(n, s)) for n, s in sections], version, config)


def _refused(b, data: bytes, field: str) -> None:
    before = b.checksum()
    with pytest.raises(SnapshotError) as e:
        b.restore(Snapshot.from_bytes(data))
    text = str(e.value)
    assert field in text and "\n" not in text and len(text) < 400, text
    assert b.checksum() == before


def test_the_fight_state_goes_to_rows_and_back_unchanged(pair):
    a, _, _ = pair
    fight = a.fight
    state = fight.save_state()
    tables, counters = fight.rows_of(state)
    cols = {n: F._Rows(fightrows.COLUMNS[n], cap, block.copy()) for n, (cap, block) in tables.items()}
    assert fight.state_of(cols, counters) == state
    assert set(fightrows.END_WHATS) == END_WHATS


def test_the_fights_counters_are_given_again_only_while_the_same_numbers(pair):
    """rows_of gives its last counters again for the same counts (whole numbers), damage
    to the bit and counts by kind and rounds objects; a count, a damage's sign or a bool
    where a count was makes new ones, equal to those made from nothing."""
    a, _, _ = pair
    fight = a.fight
    state = fight.save_state()
    _, first = fight.rows_of(state)
    _, again = fight.rows_of(fight.save_state())
    assert again is first
    ko, ko_at, starts, stats, pending, ctl = state

    def with_stats(**at) -> tuple:
        s = list(stats)
        for i, v in at.items():
            s[int(i[1:])] = v
        return (ko, ko_at, starts, tuple(s), pending, ctl)

    damage = -0.0 if stats[3] == 0 else -stats[3]
    cases = [(with_stats(i0=stats[0] + 1), lambda c: c["counts"][0] == stats[0] + 1),
             (with_stats(i3=damage), lambda c: str(c["damage"]) == str(float(damage)))]
    for i, k in ((0, 0), (1, 1), (2, 2)):                 # (a bool where a count of 1 was)
        if stats[i] == 1:
            cases.append((with_stats(**{f"i{i}": True}), lambda c, k=k: c["counts"][k] is True))
            break
    for changed, holds in cases:
        _, c = fight.rows_of(changed)
        assert c is not first and holds(c)
        _, back = fight.rows_of(state)
        assert back is not c and back == first
        assert F.plaindata.encode(back) == F.plaindata.encode(first)


def test_a_files_counts_by_kind_equal_to_those_held_keep_the_held_copy(pair):
    """Fight.load_state keeps the copy of the counts by kind it holds when a state's are
    equal to it in order and type (what is made of them, the file's counters, is kept
    with it); in another order they are the state's own."""
    a, _, _ = pair
    fight = a.fight
    held = fight.save_state()[3][5]
    assert len(held) > 1
    a.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
    assert fight.save_state()[3][5] is held
    st = fight.save_state()
    stats = list(st[3])
    stats[5] = dict(reversed(list(held.items())))
    fight.load_state((*st[:3], tuple(stats), *st[4:]))
    assert fight.save_state()[3][5] is stats[5]
    fight.load_state(st)
    assert fight.save_state()[3][5] is held


def test_the_ais_rows_read_again_give_the_states_made_of_them_before(pair):
    """state_of gives the AIs' states it made of the same bytes of rows again (the same
    objects: an AI handed its state again knows it by identity); other bytes make new
    ones, checked again (a position past 624 refused)."""
    a, _, _ = pair
    fight = a.fight
    state = fight.save_state()
    tables, counters = fight.rows_of(state)
    blocks = {n: (cap, block.copy()) for n, (cap, block) in tables.items()}

    def read(edit=None) -> tuple:
        cols = {n: F._Rows(fightrows.COLUMNS[n], cap, block.copy()) for n, (cap, block) in blocks.items()}
        if edit is not None:
            edit(cols["ais"])
        return fight.state_of(cols, counters)[5]

    first = read()
    assert len(first) == 2 and first == state[5]
    again = read()
    assert all(x is y for x, y in zip(first, again))

    def tick(t):
        t.tick[1] += 1
    other = read(tick)
    assert other[0] == first[0] and other[1] is not first[1] and other[1][1] == first[1][1] + 1

    def past(t):
        t.mt[0, 624] = 625
    with pytest.raises(fightrows.RowsRefused, match="position past 624"):
        read(past)
    assert all(x is y for x, y in zip(read(), read()))


def test_a_file_restores_the_fight_its_ais_and_its_log(pair):
    a, b, _ = pair
    b.restore(Snapshot.from_bytes(a.snapshot().to_bytes()))
    assert b.checksum() == a.checksum()
    assert b.fight.save_state() == a.fight.save_state()
    assert list(b.fight.stats.log) == list(a.fight.stats.log) and b.fight.stats.log == a.fight.stats.log
    for _ in range(30):
        a.step()
        b.step()
    assert b.checksum() == a.checksum()


def _cases():
    return [(t, c) for t, rules in fightrows.RANGES.items() for c, r in rules.items() if r[0] != K.Kind.ANY]


@pytest.mark.parametrize("table, col", _cases())
def test_a_fight_column_pushed_past_its_rule_is_refused_naming_it(pair, table, col):
    _, b, data = pair
    rule = fightrows.RANGES[table][col]
    done = []

    def edit(v, live):
        if not len(live):
            return
        a = v[col]
        r = int(live[-1])
        if rule[0] == K.Kind.FLOAT:
            a[r] = np.nan
        elif rule[0] == K.Kind.BOOL:
            a.view(np.uint8)[r] = 2
        elif rule[0] == K.Kind.SET:
            a[r] = 9
        else:
            hi = rule[2]
            a[r] = hi + 1 if hi < np.iinfo(a.dtype).max else rule[1] - 1
        done.append(r)
    forged = _forged(data, table, edit)
    if not done:
        pytest.skip(f"no row in use of {table} in this fight")
    _refused(b, forged, f"{table}.{col}")


@pytest.mark.parametrize("table, edit, field", [
    ("fighters", lambda v, live: v["entity"].__setitem__(live[-1], int(v["entity"][live[0]])), "fighters.entity"),
    ("fighters", lambda v, live: (v["health"].__setitem__(live[0], 0.0)), "table.fighters.health"),
    ("ais", lambda v, live: v["mt"].__setitem__((live[0], 624), 700), "table.ais.mt"),
    ("ais", lambda v, live: v["live"].__setitem__(live[0], False), "table.ais"),
    ("log", lambda v, live: v["live"].__setitem__(live[0], False), "table.log.live"),
    ("pending", lambda v, live: v["serial"].__setitem__(live[0], 3), "table.pending"),
    ("pending", lambda v, live: (v["kind"].__setitem__(live[0], 1), v["what"].__setitem__(live[0], -1)),
     "table.pending.what"),
    ("pending", lambda v, live: v["live"].__setitem__(3, True), "table.pending.live"),
    ("log", lambda v, live: v["human"].__setitem__(live[0], 4000), "table.log.human"),
    ("log", lambda v, live: (v["kind"].__setitem__((live[0], LOG_EXTRAS - 1), 2)), "table.log.value"),
    ("log", lambda v, live: (v["n"].__setitem__(live[0], 1), v["kind"].__setitem__((live[0], 0), 3),
                             v["value"].__setitem__((live[0], 0), np.float64(np.inf).view(np.int64))),
     "table.log.value"),
    ("log", lambda v, live: (v["n"].__setitem__(live[0], 1), v["kind"].__setitem__((live[0], 0), 1),
                             v["value"].__setitem__((live[0], 0), 5)), "table.log.value"),
])
def test_what_the_rules_cannot_say_is_refused_naming_the_field(pair, table, edit, field):
    _, b, data = pair
    _refused(b, _forged(data, table, edit), field)


@pytest.mark.parametrize("edit, field", [
    (lambda v: v["fight"].update(counts=[1, 2, 3]), "values.fight.counts"),
    (lambda v: v["fight"].update(damage="x"), "values.fight.damage"),
    (lambda v: v["fight"]["kinds"].update(hit=-1), "values.fight.kinds"),
    (lambda v: v["fight"].update(controllers=[None]), "values.fight.controllers"),
    (lambda v: v["fight_log"].__setitem__(1, 10 ** 6), "values.fight_log.count"),
    (lambda v: v["fight_log"][2].append(v["fight_log"][2][0]), "values.fight_log.texts"),
    (lambda v: v.update(fight_log=None), "values.fight_log"),
])
def test_the_fights_counters_are_checked(pair, edit, field):
    from scuffle.anim.engine import plaindata

    _, b, data = pair

    def one(name, sec):
        if name != "values":
            return sec
        v = F.values_of(sec)
        edit(v)
        return F.values_section(v)
    version, config, sections = F.sections_of(data)
    _refused(b, F.assemble([(n, one(n, s)) for n, s in sections], version, config), field)


# ---------------------------------------------------------------- the log's ring
def test_the_log_keeps_the_newest_entries_as_a_deque_would():
    log = FightLog(4)
    entries = [(u, "p1", "hit", "p2", 2.5 * u, u % 2 == 0, None, u) for u in range(7)]
    for e in entries:
        log.append(e)
    assert len(log) == 4 and list(log) == entries[-4:] and log[0] == entries[3] and log[-1] == entries[6]
    assert log[1:3] == entries[4:6] and log == entries[-4:]
    assert all(type(x) is type(y) for e, f in zip(log, entries[-4:]) for x, y in zip(e, f))
    with pytest.raises(IndexError):
        log[4]
    with pytest.raises(TypeError):
        log.append((1, "p1", "hit", object()))
    with pytest.raises(TypeError):
        log.append((1, "p1", "hit", 1, 2, 3, 4, 5, 6))


def test_a_saved_log_is_put_back_and_kept_while_nothing_is_logged():
    log = FightLog(3)
    log.append((1, "a", "strike", 11))
    saved = log.save()
    assert log.save() is saved                       # nothing logged since: the same object
    log.extend([(2, "b", "miss", 3), (3, "a", "ko", "b"), (4, "b", "grab")])
    assert list(log) == [(2, "b", "miss", 3), (3, "a", "ko", "b"), (4, "b", "grab")]
    log.load(saved)
    assert list(log) == [(1, "a", "strike", 11)]
    log.append((5, "c", "let_go"))
    assert list(log) == [(1, "a", "strike", 11), (5, "c", "let_go")]


def test_the_log_grows_to_its_maxlen_then_keeps_the_newest():
    log = FightLog(40)
    entries = [(u, "p1", "miss", u) for u in range(100)]
    for k, e in enumerate(entries):
        log.append(e)
        if k == 20:
            saved = log.save()
    assert log.cap == 40 and list(log) == entries[-40:]
    log.load(saved)
    assert log.cap == 32 and list(log) == entries[:21]


def test_the_fighters_rows_read_again_give_the_kept_state_and_check_the_entities_again(pair, monkeypatch):
    """The same bytes of fighters' rows read again by one Fight give the K.O.s and starts
    made of them the first time (the same objects, which the Fight then holds already);
    other bytes are read anew; an entity that is no longer a fighter is refused even when
    the bytes are the ones read before."""
    a, _, _ = pair
    fight = a.fight
    state = fight.save_state()
    tables, counters = fight.rows_of(state)

    def cols():
        return {n: F._Rows(fightrows.COLUMNS[n], cap, block.copy()) for n, (cap, block) in tables.items()}
    first = fight.state_of(cols(), counters)
    again = fight.state_of(cols(), counters)
    assert first == state and again == state
    assert again[0] is first[0] and again[2] is first[2]
    edited = cols()
    t = edited["fighters"]
    r = int(np.flatnonzero(t.started)[0])
    t.health[r] = t.health[r] / 2.0
    other = fight.state_of(edited, counters)
    e = int(t.entity[r])
    assert other[2] is not first[2] and other[2][e][2] == state[2][e][2] / 2.0
    assert fight.state_of(cols(), counters)[2] == state[2]
    fight.state_of(cols(), counters)                       # kept once more: the next read is the kept path
    gone = int(t.entity[r])
    monkeypatch.setattr(fight, "_is_fighter", lambda ent: ent != gone)
    with pytest.raises(fightrows.RowsRefused, match=rf"table\.fighters\.entity\[{r}\] = {gone}"):
        fight.state_of(cols(), counters)


def test_each_fight_writes_its_rows_into_blocks_of_its_own(pair):
    """Two Games' fight rules never share the blocks their rows are written into (a Game
    on another thread writing its file while this one packs its own): each Fight keeps
    its own."""
    a, b, _ = pair
    sa, sb = a.fight.save_state(), b.fight.save_state()
    ta, _ = a.fight.rows_of(sa)
    tb, _ = b.fight.rows_of(sb)
    for name in ("ais", "pending"):
        assert not np.shares_memory(ta[name][1], tb[name][1]), name
    before = {name: ta[name][1].copy() for name in ("ais", "pending")}
    b.fight.rows_of(b.fight.save_state())             # b's next rows leave a's as they were
    for name, block in before.items():
        assert np.array_equal(ta[name][1], block), name
