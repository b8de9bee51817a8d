"""Fidelity to the spec's readings: type 8 events, held bits on release, bone-transform entry 0,
the tag bit, and the 0.15 s fade's clock figure, from the spec's own words and numbers.

Each point runs on the two paths: the engine (``Player``: the compiled step, the one engine)
and the plain-Python reference (``anim.reference``: the independent oracle).
tests/anim/test_reference.py ties the two bit for bit over random crowds with each option;
here each rule is checked on each by what it must give.
"""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import EventType, author_clip, make_event
from scuffle.anim.playback.player import Player, PlayerOptions
from scuffle.anim.maths.pose import tag_bits_of
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.reference import RefInstance, Reference
from scuffle.anim.engine.stack import CharacterInstance
from scuffle.anim.playback.tasks import HeldFlags

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

PATHS = ["engine", "reference"]
HOLD, IDLE, MOVE, STILL = 82, 388, 19, 7
ANIM_STATE = int(HeldFlags.ANIM_STATE)


def world(path: str, options: dict | None = None):
    """(world, instance class) for one path ("engine" or "reference"), with the options given."""
    assert path in PATHS, path
    opts = dict(options or {})
    if path == "reference":
        return Reference(PlayerOptions(**opts)), RefInstance
    return Player(PlayerOptions(**opts)), CharacterInstance


def turn_key(deg: float) -> tuple:
    h = math.radians(deg) / 2
    return (0.0, 0.0, math.sin(h), math.cos(h))


def the_set() -> AnimSet:
    """82 a paired hold with the spec's type 8 at frame 0 (the partner at (0.380, 1.012),
    "Paired tasks" L247) and a sound at frame 2; 19 a 21-frame move (rate 0.8); 388 an idle
    loop; 7 a clip with no root motion and no bone 0 channel (both taken as defaults)."""
    bend = {5: [(0, (0, 0, 0, 1)), (20, (0.2, 0, 0, math.sqrt(1 - 0.04)))]}
    clips = {
        HOLD: author_clip("hold", 20, velocity=[(0, (0.0, 0.0, 0.0)), (2, (0.0, 1.5, 0.0))],
                          rotations={0: [(0, turn_key(3.0))], **bend},
                          events=[make_event(0, int(EventType.PARTNER_PLACE), position=(0.380, 1.012, 0.0)),
                                  make_event(2, int(EventType.SOUND), word=7)]),
        MOVE: author_clip("move", 21, rotations=bend),
        IDLE: author_clip("idle", 60, rotations=bend),
        STILL: author_clip("still", 30, rotations=bend),
    }
    ranges = {HOLD: author_range(flags=0x1000), MOVE: author_range(flags=0x800), STILL: author_range(flags=0x1000)}
    return AnimSet.build(clips, ranges, name="round3")


def events_of(inst) -> list[int]:
    return [int(fe.event.type) for fe in inst.events]


# ---------------------------------------------------------------- 1. type 8 (L249)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rule,fires", [("silent", False), ("fired", True)])
def test_type_8_is_never_dispatched(path, rule, fires):
    """"Paired tasks" L249: "type 8 is never dispatched there" (Anim_FireFrameEvents,
    0x00101dd8); its place is read from the clip by 0x00101558 (L247). The hold's type 8 at
    frame 0 would fire on the first step (k = 1), its sound at frame 2 on k = 2 (rate 1.0): by
    default only the sound comes; ``place_events="fired"`` fires the place too."""
    w, cls = world(path, {"place_events": rule})
    aset = the_set()
    h = cls(aset, "h")
    w.change(h, w.loop(h, HOLD), 0.0)
    w.flush()
    fired = []
    for _ in range(4):
        w.step([h])
        fired.append(events_of(h))
        w.flush()
    place, sound = int(EventType.PARTNER_PLACE), int(EventType.SOUND)
    assert fired == [[place] if fires else [], [sound], [], []]
    # the place stays in the clip's data for whoever reads it (0x00101558)
    assert any(e.type == place for e in aset.clip(HOLD).decoded_events())


# ---------------------------------------------------------------- 2. held bits on release (L314)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rule", ["original", "coney"])
def test_the_release_clears_the_held_bits_with_no_test_of_other_tasks(path, rule):
    """"When a clip ends" L314: "The release (0x00105f78 for type 3) clears the human's state
    flag 0x4000000000 and the held flags the task still holds from record +0x08" (confirmed
    (code)), no test of other tasks: a loop under the move holding 0x1 loses it when the
    move (holding 0x1 | 0x2) hands over at k = 26 (19: 21 frames at 0.8, "When a clip
    ends" table). "Coney's implementation" L402: "clears the bits it still holds, but not
    those another task on the stack holds": 0x1 stays (``held_release="coney"``)."""
    w, cls = world(path, {"held_release": rule})
    h = cls(the_set(), "h")
    base = w.loop(h, IDLE, held=0x1)
    w.change(h, base, 0.0)
    w.flush()
    move = w.clip(h, MOVE, w.loop(h, IDLE), held=0x1 | 0x2)
    w.push(h, move)
    h.record.flags |= ANIM_STATE
    for k in range(1, 26):
        w.update([h])
        assert h.record.flags == 0x3 | ANIM_STATE, k
    w.update([h])                                           # k = 26: the move hands over, released
    assert h.record.anim_id == IDLE
    assert h.record.flags == (0x0 if rule == "original" else 0x1)
    assert not base.released and base.held == 0x1          # the loop still holds its bit


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rule", ["original", "coney"])
def test_a_task_faded_out_clears_its_held_bits_too(path, rule):
    """L314 / L267: a task given back by a fade is released the same way (0x00105f78): the old
    loop's 0x1 goes even though the new task, pushed with 0x1, holds it (the original's);
    with Coney's rule (L402: "faded out and dropped clears the bits it still holds, but not
    those another task on the stack holds") it stays."""
    w, cls = world(path, {"held_release": rule})
    h = cls(the_set(), "h")
    w.change(h, w.loop(h, IDLE, held=0x1 | 0x4), 0.0)
    w.flush()
    w.change(h, w.loop(h, STILL, held=0x1), 0.1)            # 0x1 set again as it is pushed
    w.flush()
    for _ in range(3):                                      # 3 x dt sums to 0.1: gone on the 3rd update
        assert h.record.flags == 0x5
        w.update([h])
    assert len(h.stack) == 1
    assert h.record.flags == (0x0 if rule == "original" else 0x1)


# ---------------------------------------------------------------- 3. bone-transform entry 0 (L116)


def _bones(w, path, hs):
    """Per human: (vel (3,), bone 0 (4,), tags (36,), entry 0 pos (3,), entry 0 rot (4,), pos (34, 3))."""
    if path == "reference":
        return [(np.array(p.vel, np.float32), np.array(p.rot[0], np.float32), np.array(p.tag), pos[0], rot[0], pos)
                for p, pos, rot in w.pose(hs).each]
    b = w.pose(hs)
    return [(b.poses.vel[:, i].copy(), b.poses.rot[:, 0, i].copy(), b.poses.tag[:, i].copy(), b.pos[:, 0, i].copy(),
             b.rot[:, 0, i].copy(), b.pos[:, :, i].T.copy()) for i in range(len(hs))]


@pytest.mark.parametrize("path", PATHS)
def test_entry_0_holds_the_root_velocity_and_the_turn_per_frame(path):
    """"Bone transforms" L116: "Entry 0 is motion, not a bone: it holds the root velocity and
    bone 0's rotation (the turn per 1/30 s), or the identity when the pose's value is tagged
    as a default ... Nothing is parented to it." The hold plays at 1.0 (flag 0x1000) with a
    3 degree turn per frame and 1.5 m/s from frame 2 (within 1/1023 once quantised, "Decoding"
    L84): entry 0 is that velocity and a 3 degree
    turn about z; the clip without section A and bone 0 (7), and the hold with cursor flags
    0x1 / 0x2 (no root velocity, no turn: the defaults, tagged), give zero and the identity
    (Instance_BuildBoneMatrices, 0x00104630)."""
    runs = {}
    for entry in ("motion", "identity"):
        w, cls = world(path, {"motion_entry": entry})
        aset = the_set()
        hs = [cls(aset, n) for n in ("moving", "still", "flagged")]
        w.change(hs[0], w.loop(hs[0], HOLD), 0.0)
        w.change(hs[1], w.loop(hs[1], STILL), 0.0)
        w.change(hs[2], w.loop(hs[2], HOLD, flags=0x3), 0.0)
        w.flush()
        for _ in range(4):
            w.step(hs)
            w.flush()
        runs[entry] = _bones(w, path, hs)
    (vel, q0, tag, e_pos, e_rot, pos) = runs["motion"][0]
    assert not tag[0] and not tag[2]
    assert np.array_equal(e_pos, vel) and vel[0] == vel[2] == 0.0 and abs(vel[1] - 1.5) < 1 / 1023
    assert np.array_equal(e_rot, q0)
    assert math.degrees(2 * math.acos(float(e_rot[3]))) == pytest.approx(3.0, abs=1e-3) and e_rot[2] > 0
    for i in (1, 2):                                        # tagged: the identity
        (_, _, tag, e_pos, e_rot, _) = runs["motion"][i]
        assert tag[0] and tag[2]
        assert e_pos.tolist() == [0.0, 0.0, 0.0] and e_rot.tolist() == [0.0, 0.0, 0.0, 1.0]
    for i in range(3):                                      # Coney's: always the identity
        (_, _, _, e_pos, e_rot, _) = runs["identity"][i]
        assert e_pos.tolist() == [0.0, 0.0, 0.0] and e_rot.tolist() == [0.0, 0.0, 0.0, 1.0]
        # nothing is parented to entry 0: bones 1-33 are the same bits either way
        assert np.array_equal(runs["identity"][i][5][1:], runs["motion"][i][5][1:])


# ---------------------------------------------------------------- 4. the tag bit (L102)


def _y_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0] & 1


@pytest.mark.parametrize("path", PATHS)
def test_a_default_sets_the_lowest_bit_of_its_y_word(path):
    """"The pose" L102: "Each value taken from the default is tagged by setting the lowest
    bit of its y word (| 1 on the second 32-bit float); sampled values have the bit
    cleared." The still clip (7: no section A, no section B, no bone 0, bone 5 only) at
    k = 3: the velocity's y is 0 | 1 (1.4e-45), bone 0's identity y is 0 | 1, bone 1's
    reference y -0.5087 has its last bit set, bone 5's sampled y has it clear; with
    ``tag_bits="mark"`` the y floats are as computed (0.0, the reference's own bits)."""
    got = {}
    for rule in ("y_bit", "mark"):
        w, cls = world(path, {"tag_bits": rule})
        h = cls(the_set(), "h")
        w.change(h, w.loop(h, STILL), 0.0)
        w.flush()
        for _ in range(3):
            w.step([h])
            w.flush()
        if path == "reference":
            p = w.sample([h])[0]
            got[rule] = (p.vel[1], p.root[1], [q[1] for q in p.rot], p.tag)
        else:
            pb = w.sample([h])
            got[rule] = (pb.vel[1, 0], pb.root[1, 0], list(pb.rot[1, :, 0]), list(pb.tag[:, 0]))
    vel_y, root_y, rot_y, tag = got["y_bit"]
    assert all(tag[:3]) and tag[2 + 1] and not tag[2 + 5]
    assert struct.pack("<f", vel_y) == struct.pack("<I", 1)                 # 0.0 | 1
    assert struct.pack("<f", rot_y[0]) == struct.pack("<I", 1)              # bone 0 identity, y | 1
    assert _y_bits(root_y) == 1 and _y_bits(rot_y[1]) == 1 and _y_bits(rot_y[5]) == 0
    assert [_y_bits(y) for y in rot_y] == [int(t) for t in tag[2:]]
    m_vel_y, _, m_rot_y, m_tag = got["mark"]
    assert list(m_tag) == list(tag)                                         # the same decisions
    assert m_vel_y == 0.0 and m_rot_y[0] == 0.0
    # only the last bit of a y moves: the mark's value and the original's are one ulp apart at most
    for a, b in zip(m_rot_y, rot_y):
        assert abs(struct.unpack("<i", struct.pack("<f", a))[0] - struct.unpack("<i", struct.pack("<f", b))[0]) <= 1


def _crowd(w, cls, aset):
    """Four humans on blends that mix defaults and sampled values: a fade from the still clip
    into the hold, the move blended into the idle over its last 0.3 s, a paired idle with
    flags 0x3 (velocity and turn defaults), and a fade of the hold into the still clip."""
    hs = [cls(aset, f"h{i}") for i in range(4)]
    w.change(hs[0], w.loop(hs[0], STILL), 0.0)
    w.change(hs[1], w.clip(hs[1], MOVE, w.loop(hs[1], IDLE), blend=0.3), 0.0)
    w.change(hs[2], w.loop(hs[2], HOLD, flags=0x3), 0.0)
    w.change(hs[3], w.loop(hs[3], HOLD), 0.0)
    w.flush()
    return hs


def _poses(w, path, hs):
    if path == "reference":
        return [p.arrays() for p in w.sample(hs)]
    pb = w.sample(hs)
    return [(pb.vel[:, i].copy(), pb.root[:, i].copy(), pb.rot[:, :, i].T.copy(), pb.tag[:, i].copy())
            for i in range(len(hs))]


@pytest.mark.parametrize("path", PATHS)
def test_every_y_bit_is_its_tag_and_no_blending_decision_changes(path):
    """L102 and L104 (Pose_BlendPartial decides by the tag): with the tag in the y words
    (the default) every y component's last bit equals its tag in every pose, sampled,
    blended or the default, so deciding by the bit (the original) and by scuffle's boolean
    is the same decision. Run beside ``tag_bits="mark"`` on the same commands, every tag
    of every update is the same (no blend decision changes) and the poses stay within a
    few float32 ulps (the bit moves a y by one; the blends carry that on)."""
    aset = the_set()
    runs = {}
    for rule in ("y_bit", "mark"):
        w, cls = world(path, {"tag_bits": rule})
        hs = _crowd(w, cls, aset)
        out = []
        for k in range(1, 40):
            w.step(hs)
            out.append(_poses(w, path, hs))
            w.flush()
            if k == 5:
                w.change(hs[0], w.loop(hs[0], HOLD), 0.2)
                w.change(hs[3], w.loop(hs[3], STILL), 0.2)
                w.flush()
        runs[rule] = out
    blended_mixed = 0
    for upd_a, upd_b in zip(runs["y_bit"], runs["mark"]):
        for (vel, root, rot, tag), (mvel, mroot, mrot, mtag) in zip(upd_a, upd_b):
            assert np.array_equal(tag, mtag)
            bits = np.concatenate([[vel[1].view(np.uint32) & 1], [root[1].view(np.uint32) & 1],
                                   rot[:, 1].view(np.uint32) & 1]).astype(bool)
            assert np.array_equal(bits, tag)
            assert np.allclose(rot, mrot, atol=2e-6) and np.allclose(vel, mvel, atol=1e-5)
            blended_mixed += int((~tag[3:]).sum())
    assert blended_mixed > 0


def test_tag_bits_of_reads_the_original_tags():
    """``pose.tag_bits_of``: the tags as the original reads them (the y words' lowest bit)
    equal scuffle's booleans in a sampled pose; under ``mark`` they need not."""
    aset = the_set()
    p = Player()
    h = CharacterInstance(aset, "h")
    p.change(h, p.loop(h, STILL), 0.0)
    p.flush()
    p.update([h])
    pb = p.sample([h])
    assert np.array_equal(tag_bits_of(pb), pb.tag)


# ---------------------------------------------------------------- the 0.15 s fade's clock figure (L267)


@pytest.mark.parametrize("path", PATHS)
def test_the_015_s_fade_read_at_the_sample_and_at_the_end_of_the_update(path):
    """"Fades" L267: "At runtime a fade of 0.15 s ran 0, 0.033, 0.100 s and was gone at the
    next sample". The fade's clock (elapsed +0x1c, advanced by dt in the step, gone in the
    step its time reaches d: 5 x dt = 0.1667) read at two moments:

    * at the pose sample, after the step (0x00176d60, where scuffle and the original's root
      motion take the pose, L313): 0.033, 0.067, 0.100, 0.133, then gone. A reading of 0
      never happens there: the fade has advanced once by its first sample.
    * at the end of the update (after the actions that made the change, where a memory
      reader polling once per frame sees it): 0, 0.033, 0.067, 0.100, 0.133, then gone.

    The spec's readings 0, 0.033, 0.100 are the second list with 0.067 unread, and "gone at
    the next sample" is the reading after the next unread one (0.133): three readings over
    four updates, which no clock advancing once per update gives in consecutive updates
    (0 to 0.100 is three steps of dt). So the figure was read at the end of an update (it
    holds a 0), not once per update, and it agrees with the clock above; nothing in it
    separates another clock (docs/original.md, "Fades")."""
    w, cls = world(path)
    aset = the_set()
    h = cls(aset, "h")
    w.change(h, w.loop(h, IDLE), 0.0)
    w.flush()
    w.update([h])
    fade = w.change(h, w.loop(h, MOVE), 0.15)
    w.flush()
    at_sample, at_end = [], [round(fade.elapsed, 3)]
    while True:
        w.step([h])
        live = any(t is fade for t in h.stack)
        at_sample.append(round(fade.elapsed, 3) if live else None)
        w.flush()
        at_end.append(round(fade.elapsed, 3) if any(t is fade for t in h.stack) else None)
        if not live:
            break
    assert at_sample == [0.033, 0.067, 0.1, 0.133, None]
    assert at_end == [0.0, 0.033, 0.067, 0.1, 0.133, None]
    spec = [0.0, 0.033, 0.1]
    it = iter(at_end)
    assert all(v in it for v in spec)                       # a subsequence of the end-of-update readings
    assert 0.0 not in at_sample
    # the fade's time is summed in float32 toward zero: 5 x dt reaches 0.15
    t = 0.0
    for _ in range(4):
        t = F.add(t, F.DT)
    assert t < F.f32(0.15) <= F.add(t, F.DT)


@pytest.mark.parametrize("engine", ["compiled", "reference"])
@pytest.mark.parametrize("rule", ["silent", "fired"])
def test_type_8_reaches_no_handler_and_no_trace_in_a_game(engine, rule):
    """L249 through the game: the demo's hold 82 carries the partner's place as a type 8 at
    frame 0 (docs/moveset.md); looping it three times, no default handler and no trace
    record sees a type 8, unless ``place_events="fired"`` (then both see one per pass)."""
    from scuffle import Game, demo_set
    from scuffle.game.fighters.moves import Move
    from scuffle.game.runtime.trace import trace_records

    aset = demo_set()
    assert any(e.type == EventType.PARTNER_PLACE for e in aset.clip(Move.HOLD).decoded_events())
    seen, traced = [], []
    with Game(PlayerOptions(place_events=rule), engine=engine) as g:
        g.ctx.default_handlers.append(lambda ctx, ent, fe: seen.append(int(fe.event.type)))
        g.add_human("a", aset, position=(0, 0, 0), heading=0)
        g.change("a", g.player.loop(g.instance("a"), Move.HOLD))
        for _ in range(3 * aset.clip(Move.HOLD).frames):
            g.step()
            traced += [int(e["type"]) for r in trace_records(g) for e in r["events"]]
    place = int(EventType.PARTNER_PLACE)
    assert seen == traced
    assert seen.count(place) == (3 if rule == "fired" else 0)


@pytest.mark.parametrize("path", PATHS)
def test_the_015_s_figure_with_two_updates_of_dt_2_30(path):
    """The other way the figure of L267 comes out of the same clock: read at the end of each
    update, with the two updates after the first run at dt = 2/30 (an emulator running
    slow): 0, 0.033, 0.100, then gone (0.167 >= 0.15). docs/original.md, "Fades"."""
    w, cls = world(path)
    h = cls(the_set(), "h")
    w.change(h, w.loop(h, IDLE), 0.0)
    w.flush()
    w.update([h])
    fade = w.change(h, w.loop(h, MOVE), 0.15)
    w.flush()
    readings = [round(fade.elapsed, 3)]
    for dt in (1 / 30, 2 / 30, 2 / 30):
        w.step([h], dt)
        w.flush()
        readings.append(round(fade.elapsed, 3) if any(t is fade for t in h.stack) else None)
    assert readings == [0.0, 0.033, 0.1, None]
