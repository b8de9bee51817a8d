"""The handle API refuses a bad argument with one clear error (a ValueError naming the call
or the field; UnknownAnimId for an id), on the engine and on the reference alike, before
anything is taken: the pool, the cursor table and the stack are as they were. What is
refused: an anim reference that is not an id or a clip name, ids that are not a list, a
task that is not a task, a human that is not a human, ``flags`` or ``held`` that are not
whole numbers their columns hold, an ``anim_set`` that is not a set, a fade time, a task
type or a step's ``dt`` that are not numbers in range."""
from __future__ import annotations

import numpy as np
import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip
from scuffle.anim.data.rangelist import UnknownAnimId, author_range
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.player import Player
from scuffle.anim.reference import Reference, RefInstance


def _set() -> AnimSet:
    clips = {i: author_clip(f"k{i}", 8) for i in range(8)}
    return AnimSet.build(clips, {i: author_range() for i in range(8)}, name="refs")


# (call, the error): p is the player, h and h2 two humans, ok a task made for the call
BAD = {
    "loop of a list": (lambda p, h, h2, ok: p.loop(h, [1, 2]), UnknownAnimId),
    "clip of a float": (lambda p, h, h2, ok: p.clip(h, 1.5), UnknownAnimId),
    "clip of None": (lambda p, h, h2, ok: p.clip(h, None), UnknownAnimId),
    "clip of a bool": (lambda p, h, h2, ok: p.clip(h, True), UnknownAnimId),
    "hold of a list": (lambda p, h, h2, ok: p.hold(h, [1]), UnknownAnimId),
    "mix of a list": (lambda p, h, h2, ok: p.mix(h, [0], 1), UnknownAnimId),
    "direction of a list": (lambda p, h, h2, ok: p.direction(h, [0, 1]), UnknownAnimId),
    "direction of None": (lambda p, h, h2, ok: p.direction(h, None), UnknownAnimId),
    "pick of an int": (lambda p, h, h2, ok: p.pick(h, 5, 1.0), ValueError),
    "pick of a string": (lambda p, h, h2, ok: p.pick(h, "k0k1", 1.0), ValueError),
    "pick with a list in it": (lambda p, h, h2, ok: p.pick(h, [0, [1], 2, 3], 1.0), UnknownAnimId),
    "gait of an int": (lambda p, h, h2, ok: p.gait(h, 3), ValueError),
    "gait with a float in it": (lambda p, h, h2, ok: p.gait(h, [0, 1, 2, 3.0, 4]), UnknownAnimId),
    "gait with a numpy float in it": (lambda p, h, h2, ok: p.gait(h, [0, 1, 2, np.float64(3), 4]), UnknownAnimId),
    "chain of an int": (lambda p, h, h2, ok: p.chain(h, 3), ValueError),
    "chain with None in it": (lambda p, h, h2, ok: p.chain(h, [0, None]), UnknownAnimId),
    "clip whose next is a string": (lambda p, h, h2, ok: p.clip(h, 1, "x"), ValueError),
    "paired whose next is an int": (lambda p, h, h2, ok: p.paired(h, h2, 1, 5), ValueError),
    "change to a string": (lambda p, h, h2, ok: p.change(h, "x"), ValueError),
    "change to None": (lambda p, h, h2, ok: p.change(h, None), ValueError),
    "enqueue of an int": (lambda p, h, h2, ok: p.enqueue(h, 5), ValueError),
    # the humans
    "loop for None": (lambda p, h, h2, ok: p.loop(None, 1), ValueError),
    "gait for a name": (lambda p, h, h2, ok: p.gait("h", [0, 1, 2, 3, 3]), ValueError),
    "paired by None": (lambda p, h, h2, ok: p.paired(h, None, 1), ValueError),
    "chain paired with a string": (lambda p, h, h2, ok: p.chain(h, [0, 1], paired_with="h2"), ValueError),
    "change for None": (lambda p, h, h2, ok: p.change(None, ok), ValueError),
    "enqueue for a number": (lambda p, h, h2, ok: p.enqueue(3, ok), ValueError),
    "push for a string": (lambda p, h, h2, ok: p.push("h", ok), ValueError),
    "insert_bottom for a list": (lambda p, h, h2, ok: p.insert_bottom([h], ok), ValueError),
    "top of None": (lambda p, h, h2, ok: p.top(None), ValueError),
    "running of None": (lambda p, h, h2, ok: p.running(None, 1), ValueError),
    "step of None": (lambda p, h, h2, ok: p.step(None), ValueError),
    "step of a string": (lambda p, h, h2, ok: p.step("hh"), ValueError),
    "step of one human": (lambda p, h, h2, ok: p.step(h), ValueError),
    "sample of numbers": (lambda p, h, h2, ok: p.sample([h, 3]), ValueError),
    # the numbers and bits
    "loop's flags None": (lambda p, h, h2, ok: p.loop(h, 1, flags=None), ValueError),
    "clip's flags a float": (lambda p, h, h2, ok: p.clip(h, 1, flags=1.5), ValueError),
    "mix's flags past int32": (lambda p, h, h2, ok: p.mix(h, 0, 1, flags=1 << 40), ValueError),
    "hold's held a list": (lambda p, h, h2, ok: p.hold(h, 1, held=[1]), ValueError),
    "fade's held past int64": (lambda p, h, h2, ok: p.fade(h, 0.2, held=1 << 70), ValueError),
    "gait's held a bool": (lambda p, h, h2, ok: p.gait(h, [0, 1, 2, 3, 3], held=True), ValueError),
    "fade of None": (lambda p, h, h2, ok: p.fade(h, None), ValueError),
    "fade of a string": (lambda p, h, h2, ok: p.fade(h, "0.2"), ValueError),
    "running of a float type": (lambda p, h, h2, ok: p.running(h, 1.5), ValueError),
    "running of type 99": (lambda p, h, h2, ok: p.running(h, 99), ValueError),
    "step by a list dt": (lambda p, h, h2, ok: p.step([h], [1]), ValueError),
    "step by a NaN dt": (lambda p, h, h2, ok: p.step([h], float("nan")), ValueError),
    # the sets
    "loop from a string set": (lambda p, h, h2, ok: p.loop(h, 1, anim_set="x"), ValueError),
    "scene from a number set": (lambda p, h, h2, ok: p.scene(h, 1, 1.0, anim_set=np.float32(2.5)), ValueError),
}


def _world(reference: bool):
    p = Reference() if reference else Player()
    make = RefInstance if reference else CharacterInstance
    aset = _set()
    h, h2 = make(aset, "h"), make(aset, "h2")
    p.change(h, p.loop(h, 0), 0.0)
    p.flush()
    return p, h, h2


def _cursors_out(p) -> int | None:
    st = getattr(p, "stores", None)                 # (the engine's cursor table; the reference has none)
    return None if st is None else int(st.cursors.capacity - st.cursors.m_n_free[0])


@pytest.mark.parametrize("reference", [False, True], ids=["engine", "reference"])
@pytest.mark.parametrize("what", sorted(BAD))
def test_a_bad_argument_is_refused_clearly_and_takes_nothing(what, reference):
    call, error = BAD[what]
    p, h, h2 = _world(reference)
    ok = p.loop(h, 1)                               # (a task of the world's own, unplaced)
    pool, cursors, stack = p.pool.in_use, _cursors_out(p), [type(t).__name__ for t in h.stack]
    with pytest.raises(error) as got:
        call(p, h, h2, ok)
    assert isinstance(got.value, ValueError)
    line = str(got.value)
    assert line and "\n" not in line and "object has no attribute" not in line and "not supported" not in line
    assert (p.pool.in_use, _cursors_out(p), [type(t).__name__ for t in h.stack]) == (pool, cursors, stack)


def test_valid_references_of_every_kind_still_pass():
    """Names, numpy ints, tuples and IntFlag bits are what they were: the same tasks on both
    engines."""
    seen = []
    for reference in (False, True):
        p, h, _ = _world(reference)
        made = [p.clip(h, "k1", p.loop(h, np.int64(2))), p.gait(h, (0, 1, 2, 3, 3), target=1.0),
                p.pick(h, ["k0", 1, np.int32(2), 3], 1.0), p.direction(h, "k0", direction=1.5),
                p.chain(h, ("k0", 1, 2)), p.chain(h, np.array([3, 4], np.int64))]
        seen.append([(int(t.type), int(t.anim_id())) for t in made])
        for t in made:
            p.change(h, t, 0.0)
        p.flush()
        p.step([h])
    assert seen[0] == seen[1], seen
