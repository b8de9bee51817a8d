"""The interpreted tier (anim.engine.interpret): the kernels run as Python on a cold start.

The twins are the kernels' own Python functions, rebound so that nothing they call is
compiled: they must write the compiled kernels' bits on every path (the differential
harness of test_reference.py against the reference; the fight, the realistic crowd's
commands, the checksum and a snapshot file against the compiled engine), compile
nothing, and hand over to the compiled kernels mid-run without a seam.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pytest

from scuffle.anim.engine import coldstart, interpret
from scuffle.anim.engine.interpret import STATE
from scuffle.game.fighters.moveset import demo_set

from test_reference import (DEMO_GAIT, GAIT, OPTIONS, _gen_blend_commands, _gen_commands, compare,  # noqa: E402
                            random_set)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def tier():
    """The tier forced on for the test's engine calls, and off again after it."""
    saved = dict(STATE)
    interpret.force(True)
    try:
        yield
    finally:
        interpret.force(False)
        STATE.update({k: saved[k] for k in ("on", "forced", "decided")})


def _kernels():
    import importlib
    names = list(coldstart.ALL_KERNELS) + list(coldstart.COLD_START_ONLY) + list(coldstart.COMPILED_ASIDE)
    return [(f"{mod}.{name}", getattr(importlib.import_module(f"scuffle.anim.engine.{mod}"), name))
            for mod, name in names]


@pytest.mark.parametrize("name,kernel", _kernels(), ids=[n for n, _ in _kernels()])
def test_each_kernels_twin_calls_nothing_compiled(name, kernel):
    """Every kernel a process may call has a twin, and no function the twin reaches names a
    compiled function or an intrinsic among the globals its code reads (each its twin or
    its Python form), nor holds one in a closure's cell."""
    fn = interpret.twin(kernel)
    seen, todo = set(), [fn]
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        code, g = f.__code__, f.__globals__
        names = set(code.co_names)
        for c in code.co_consts:                      # the names nested code objects read
            if hasattr(c, "co_names"):
                names |= set(c.co_names)
        values = [g[n] for n in names if n in g] + [c.cell_contents for c in (f.__closure__ or ())]
        for v in values:
            assert not interpret._is_dispatcher(v), f"{name}: {f.__qualname__} reaches compiled {v}"
            assert not interpret._is_intrinsic(v), f"{name}: {f.__qualname__} reaches an intrinsic"
            if interpret._ours(v):
                todo.append(v)
    assert len(seen) > 1 or name.startswith(("digest.", "snapkernel.")), name
    assert interpret.twin(kernel) is fn                 # made once


def test_twin_refuses_what_is_not_a_compiled_function(tier):
    """A callable with no twin: refused, and a call of it through the tier raises while
    forced (a test's), else ends the tier and runs it as it is."""
    with pytest.raises(TypeError, match="not a compiled function"):
        interpret.twin(len)
    with pytest.raises(TypeError):
        interpret.call(len, [1, 2])
    STATE["forced"] = False
    assert interpret.call(len, [1, 2]) == 2
    assert not STATE["on"]


def test_random_sets_as_python_equal_the_reference(tier):
    """Random commands on a randomly authored set, every task type: the twins equal the
    reference bit for bit (states, events, callbacks, pool and poses)."""
    aset = random_set(1)
    cmds = _gen_commands(random.Random(1), list(range(12)), GAIT, 5, 60, 0.12, directions=50)
    compare(aset, cmds, 60, 5, GAIT)


def test_demo_set_as_python_equals_the_reference_with_bones(tier):
    aset = demo_set()
    rng = random.Random(5)
    ids = [i for i in aset.ids() if i not in DEMO_GAIT]
    compare(aset, _gen_commands(rng, ids, DEMO_GAIT, humans=3, updates=60, rate=0.08, long_chains=True),
            60, 3, DEMO_GAIT, bones=True)


@pytest.mark.parametrize("options", [OPTIONS[0], OPTIONS[-2], OPTIONS[-1]], ids=["default", "all-readings",
                                                                                   "all-switches"])
def test_types_10_11_13_as_python_equal_the_reference(tier, options):
    """Mixes, picks and directions under fades and as next tasks, the readings and every
    switch of PlayerOptions: the twins equal the reference, poses and bones included."""
    seed = 300 + OPTIONS.index(options)
    aset = random_set(seed)
    cmds = _gen_blend_commands(random.Random(seed), list(range(12)), GAIT, 4, 40, 0.2)
    compare(aset, cmds, 40, 4, GAIT, options, bones=True, speeds=[1.0, 0.5, 1.25, 2.0])


def _fight(seed: int = 1):
    from scuffle.game.fighters.ai import FighterAI
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.runtime.world import Game

    s = demo_set()
    g = Game()
    g.add_human("a", s, (0, 0, 0), 0.0)
    g.add_human("b", s, (1.5, 0, 0), 180.0)
    f = Fight(g)
    f.controllers.append(FighterAI("a", "b", seed=seed))
    f.controllers.append(FighterAI("b", "a", seed=seed + 1))
    return g


def _step_both(compiled, python, updates: int) -> None:
    """Step ``compiled`` with the compiled kernels and ``python`` with their twins, each
    update's checksum (the twin's digest on the Python side) compared."""
    for u in range(updates):
        interpret.force(False)
        compiled.step()
        want = compiled.checksum()
        interpret.force(True)
        python.step()
        assert python.checksum() == want, f"update {u}"


def test_a_fight_as_python_equals_the_compiled_one_every_update(tier):
    """Two fighters with their AIs (grabs, strikes, throws, the flush's releases, root
    motion): the state's checksum after every update equals the compiled engine's, and
    the checksum's own twin gives the compiled digest."""
    python = _fight()
    _step_both(_fight(), python, 150)
    stats = python.fight.stats
    assert stats.strikes + stats.grabs > 0                     # the fight fought


def test_a_crowds_commands_as_python_equal_the_compiled_ones(tier):
    """The realistic crowd of 12 (prepared commands one at a time and as a batch, gait
    targets, mixes, picks and directions, the handle API): the same checksum every
    update as the compiled engine's."""
    from scuffle.game.tools.bench import build_crowd

    interpret.force(False)
    compiled = build_crowd(12, "realistic", "compiled", 3)
    interpret.force(True)
    python = build_crowd(12, "realistic", "compiled", 3)
    _step_both(compiled, python, 40)


def test_a_snapshot_file_as_python_is_the_compiled_ones_bytes(tier):
    """A snapshot file written with the twins (the packing kernels) has the compiled
    bytes, and read back with the twins (the checks, the unpacking) restores the state."""
    from scuffle.game.runtime.snapshot import Snapshot

    g = _fight()
    interpret.force(False)
    for _ in range(30):
        g.step()
    data = g.snapshot().to_bytes()
    want = g.checksum()
    interpret.force(True)
    assert g.snapshot().to_bytes() == data
    for _ in range(5):
        g.step()
    assert g.checksum() != want
    g.restore(Snapshot.from_bytes(data))
    assert g.checksum() == want


def test_a_crowds_snapshot_file_reads_back_as_python(tier):
    """A file of 40 humans (more than 127 rows in use over its tables: the checks count
    them as int64, where numpy would keep an int8 read's type and wrap) is read back and
    restored by the twins as by the compiled checks."""
    from scuffle.game.runtime.snapshot import Snapshot
    from scuffle.game.tools.bench import build_crowd

    interpret.force(False)
    a, b = build_crowd(40, "realistic"), build_crowd(40, "realistic")
    a.step()
    data, want = a.snapshot().to_bytes(), a.checksum()
    st = a.player.stores
    assert sum(1 + t.in_use for t in (st.cursors, st.fades, st.gaits, st.tasks)) > 127
    interpret.force(True)
    b.restore(Snapshot.from_bytes(data))
    assert b.checksum() == want


def test_the_tier_hands_over_to_the_compiled_kernels_when_the_compile_ends():
    """While the background compile runs (a real child process), the kernels run as
    Python; once it has ended, a thread loads the kernels run so far, the tier ends by
    itself when it is done, and the same engine goes on compiled, bit for bit the run
    that was compiled throughout."""
    saved, background = dict(STATE), list(coldstart.BACKGROUND)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        compiled, handed = _fight(3), _fight(3)
        coldstart.BACKGROUND[:] = [child]
        STATE.update(on=True, forced=False, decided=True)
        STATE["loader"] = None
        for u in range(60):
            if u == 30:
                child.communicate(b"")                      # the compile ends
                interpret.on()                              # the kernels loaded on a thread first
                assert STATE["loader"] is not None
                STATE["loader"].join(60)
            assert interpret.on() == (u < 30)
            handed.step()
            compiled.step()
            assert handed.checksum() == compiled.checksum(), f"update {u}"
        assert not STATE["on"]
        assert STATE["sigs"]                                # the kernels it loaded: those run as Python
        assert handed.player.batch._step_kernel._entry is not None     # compiled again, its entry kept
    finally:
        if child.poll() is None:
            child.kill()
        coldstart.BACKGROUND[:] = background
        STATE.update({k: saved[k] for k in ("on", "forced", "decided")})


def test_a_crowd_grown_past_the_limit_leaves_the_tier(tier):
    STATE["forced"] = False
    interpret.leave()
    assert not interpret.on()
    interpret.force(True)
    interpret.leave()                                       # forced: stays
    assert interpret.on()


_COLD = textwrap.dedent("""
    import json, logging, sys
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from scuffle.anim.engine import coldstart, interpret
    from scuffle.game.runtime.world import Game
    from scuffle.game.fighters.moveset import demo_set
    import os
    from scuffle.anim.playback.warmup import announce_compile
    announce_compile()          # the command line's notice: left to the first step, which may run them as Python
    whys = [interpret.why_not(2), interpret.why_not(interpret.MAX_HUMANS + 1)]
    os.environ[interpret.ENV] = "0"
    whys.append(interpret.why_not(2))
    del os.environ[interpret.ENV]
    s = demo_set()
    g = Game()
    for i in range(int(sys.argv[1])):
        g.add_human(f"h{i}", s, (i * 2.0, 0, 0), 0.0)
    g.step()
    on = interpret.STATE["on"]
    for _ in range(20 if on else 0):
        g.step()
    compiled = sorted(f"{n}.{k}" for n, m in list(sys.modules.items()) if n.startswith("scuffle")
                      for k, v in vars(m).items() if getattr(v, "overloads", None))
    child = coldstart.BACKGROUND[0] if coldstart.BACKGROUND else None
    if child is not None:
        child.kill()
        child.wait()
    print(json.dumps({"on": on, "compiled": compiled, "background": child is not None, "whys": whys}))
""")


def _cold(tmp_path, humans: int, **env) -> tuple[dict, str]:
    import json

    cache = tmp_path / "cache"
    cache.mkdir()
    # the background compile allowed (the test session turns it off for its children): the
    # script stops it before it ends
    e = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=ROOT, **{coldstart.REST_ENV: "1"})
    e.pop(interpret.ENV, None)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", _COLD, str(humans)], capture_output=True, text=True, env=e,
                       timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else True,
                    reason="the background compile needs a second core")
def test_a_cold_first_step_of_a_few_humans_compiles_nothing(tmp_path):
    """A fresh process on an empty cache: its first steps run the kernels as Python,
    compile nothing, start the background compile and say so once (the command line's
    notice before it says nothing: the first step says which it does). A crowd over
    MAX_HUMANS, or SCUFFLE_INTERPRET=0, would compile them (as the session's cold first
    step does: tests/coldcache.py)."""
    got, err = _cold(tmp_path, 2)
    assert got["whys"] == [None, f"{interpret.MAX_HUMANS + 1} humans, more than {interpret.MAX_HUMANS}",
                           f"{interpret.ENV}=0"], got["whys"]
    assert got["on"] and got["background"], (got, err)
    assert got["compiled"] == [], got["compiled"]
    assert err.splitlines().count(interpret.MESSAGE) == 1, err
    assert coldstart.COMPILE_MESSAGE not in err


def test_a_scenarios_trace_as_python_is_the_compiled_trace(tmp_path):
    """``scuffle run`` of a recorded fight (tests/hardening/fight_2min.toml cut to 200
    updates: walks, grabs, throws, hits), its trace with poses: the same bytes with the
    kernels run as Python as compiled."""
    import re
    from pathlib import Path

    from scuffle.game.cli import commands as cli

    fight = Path(ROOT) / "tests" / "hardening" / "fight_2min.toml"
    head, *cmds = fight.read_text(encoding="utf-8").split("[[commands]]")
    keep = [c for c in cmds if int(re.search(r"update = (\d+)", c).group(1)) < 200]
    (tmp_path / "fight.toml").write_text(head.replace("updates = 3600", "updates = 200")
                                         + "".join("[[commands]]" + c for c in keep), encoding="utf-8")
    saved = dict(STATE)
    out = {}
    try:
        for python in (False, True):
            interpret.force(python)
            path = tmp_path / f"{python}.jsonl"
            assert cli.main(["run", str(tmp_path / "fight.toml"), "--trace", str(path), "--pose"]) == 0
            out[python] = path.read_text(encoding="utf-8")
    finally:
        interpret.force(False)
        STATE.update({k: saved[k] for k in ("on", "forced", "decided")})
    assert len(out[False].splitlines()) == 400 and '"pose"' in out[False]
    assert out[True] == out[False]
