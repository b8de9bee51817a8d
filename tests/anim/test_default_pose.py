"""The default pose from the queued tasks, and the class record's range overrides.

Spec: "The pose" (L102: 0x00176d60 samples the queued tasks into a second buffer,
0x005fd040, and uses it as the default pose when the human test 0x00223440 passes),
"The Anim Range List" (L178: the class record overrides the range data for some ids,
Human_AttachInstance 0x00217a98). Issue 12, item 6.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from scuffle.anim.animset import AnimSet
from scuffle.anim.clip import author_clip
from scuffle.anim.player import Player, PlayerOptions
from scuffle.anim.rangelist import RangeAuthoringError, RangeList, UnknownAnimId, author_range
from scuffle.anim.reference import Reference, RefInstance
from scuffle.anim.skeleton import REFERENCE_ROTATIONS
from scuffle.anim.stack import CharacterInstance

STACK_ID, QUEUED_ID = 10, 11
STACK_BONE, QUEUED_BONE = 5, 7


def _turn(name: str, bone: int, angle: float):
    h = angle / 2
    q = (math.sin(h), 0.0, 0.0, math.cos(h))
    return author_clip(name, 30, rotations={bone: [(0, q), (30, q)]})


def _set() -> AnimSet:
    return AnimSet.build({STACK_ID: _turn("stack", STACK_BONE, 0.6), QUEUED_ID: _turn("queued", QUEUED_BONE, 1.1)},
                         name="s")


def _sampled(options: PlayerOptions, queue: bool = True, reference: bool = False):
    """One human playing STACK_ID, stepped once, QUEUED_ID queued after the step (with
    ``queue``), then sampled; on the engine, or with ``reference`` on the reference model
    (which has no ``queued_default``: its default pose is always the reference pose)."""
    p = Reference(options) if reference else Player(options)
    h = (RefInstance if reference else CharacterInstance)(_set(), "h")
    p.change(h, p.loop(h, STACK_ID))
    p.step([h])
    if queue:
        p.enqueue(h, p.loop(h, QUEUED_ID))          # queued after the step: waiting at the sample
    pose = p.sample([h])
    return pose, p, h


def test_the_queued_tasks_pose_is_the_default_when_the_test_passes():
    asked = []
    opts = PlayerOptions(queued_default=lambda inst: asked.append(inst.name) or True)
    pose, p, h = _sampled(opts)
    assert asked == ["h"]
    h7 = 1.1 / 2
    want = np.array([math.sin(h7), 0.0, 0.0, math.cos(h7)], dtype=np.float32)
    np.testing.assert_allclose(pose.rot[:, QUEUED_BONE, 0], want, atol=1e-4)   # from the queued clip
    assert pose.tag[2 + QUEUED_BONE, 0]                                          # still a default
    h5 = 0.6 / 2
    np.testing.assert_allclose(pose.rot[:, STACK_BONE, 0], [math.sin(h5), 0, 0, math.cos(h5)], atol=1e-4)
    assert not pose.tag[2 + STACK_BONE, 0]
    # Other bones the stack's clip leaves out still come from the default, here the
    # queued pose's, which itself took them from the reference pose.
    np.testing.assert_allclose(pose.rot[:, 3, 0], REFERENCE_ROTATIONS[3], atol=1e-4)
    p.step([h])                                     # the queue runs: nothing waits any more
    assert p.sample([h]).rot[:, QUEUED_BONE, 0] == pytest.approx(want, abs=1e-4)   # now the stack's own


@pytest.mark.parametrize("test, queue", [(None, True), (lambda inst: False, True), (lambda inst: True, False)])
def test_the_reference_pose_is_the_default_otherwise(test, queue):
    """No test, a test that fails, or no queued task: the engine's pose is the one with the
    reference pose as the default, bit for bit the reference model's (L102)."""
    pose, _, _ = _sampled(PlayerOptions(queued_default=test), queue=queue)
    np.testing.assert_allclose(pose.rot[:, QUEUED_BONE, 0], REFERENCE_ROTATIONS[QUEUED_BONE], atol=1e-6)
    assert pose.tag[2 + QUEUED_BONE, 0]
    (ref,), _, _ = _sampled(PlayerOptions(), queue=queue, reference=True)
    vel, root, rot, tag = ref.arrays()
    assert np.array_equal(pose.rot[:, :, 0].T.view(np.uint32), rot.view(np.uint32))
    assert np.array_equal(pose.vel[:, 0].view(np.uint32), vel.view(np.uint32))
    assert np.array_equal(pose.root[:, 0].view(np.uint32), root.view(np.uint32))
    assert np.array_equal(pose.tag[:, 0], tag)


def test_an_empty_stack_shows_the_queued_pose():
    p = Player(PlayerOptions(queued_default=lambda inst: True))
    h = CharacterInstance(_set(), "h")
    p.enqueue(h, p.loop(h, QUEUED_ID))
    pose = p.sample([h])
    assert pose.rot[:, QUEUED_BONE, 0] == pytest.approx([math.sin(0.55), 0, 0, math.cos(0.55)], abs=1e-4)


# ---------------------------------------------------------------- the class overrides

def test_a_class_override_table_gives_a_class_its_own_records():
    base = AnimSet.build({STACK_ID: _turn("stack", STACK_BONE, 0.6)},
                         {STACK_ID: author_range(reach=1.0, damage=5)}, name="s")
    s = base.with_class_overrides("heavy", {STACK_ID: author_range(reach=1.4, damage=9, flags=0x800)})
    assert s.range(STACK_ID).reach == pytest.approx(1.0)                  # the set's own value
    heavy = s.for_class("heavy")
    assert heavy.range(STACK_ID).reach == pytest.approx(1.4) and heavy.range(STACK_ID).damage == 9
    assert heavy.clip(STACK_ID) is s.clip(STACK_ID)                       # the same clips
    p = Player()
    assert p.rate_of(s, STACK_ID) == pytest.approx(0.75) and p.rate_of(heavy, STACK_ID) == pytest.approx(0.8)
    assert s.range_list.overrides["heavy"][STACK_ID].damage == 9
    assert s.with_clip(STACK_ID, s.clip(STACK_ID)).range_list.overrides.keys() == {"heavy"}
    assert s.range_list != base.range_list and s.range_list.to_bytes() == base.range_list.to_bytes()


def test_class_overrides_are_checked():
    rl = RangeList.zeros()
    with pytest.raises(RangeAuthoringError, match="override class 'x', id 3"):
        rl.with_overrides("x", {3: "far"})
    with pytest.raises(UnknownAnimId):
        rl.with_overrides("x", {9999: author_range()})
    with pytest.raises(RangeAuthoringError, match="non-empty"):
        rl.with_overrides("", {})
    with pytest.raises(RangeAuthoringError, match="'nobody': not in the table"):
        rl.with_overrides("x", {}).for_class("nobody")
