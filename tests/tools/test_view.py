"""``scuffle view``: the clip viewer headless on the demo move set (the PNGs exist,
have the right size and are not blank), its playback against the runtime, its keys and
mouse, and the one-line errors. Runs under SDL_VIDEODRIVER=dummy; this file never imports
pygame."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from scuffle.anim.maths import f32 as F
from scuffle.anim.data.clip import author_clip, encode_clip  # noqa: E402
from scuffle.anim.playback.cursor import Cursor  # noqa: E402
from scuffle.anim.data.resource import save_resource  # noqa: E402
from scuffle.demo.headless import image_stats  # noqa: E402
from scuffle.demo.view import (DEFAULT_SIZE, Fonts, Playback, ViewerApp, ViewerState, ViewError,  # noqa: E402
                       channels_size, load_source, sheet_frames, sheet_size)
from scuffle.game.fighters.moveset import demo_set  # noqa: E402
from toolhelp import run_module  # noqa: E402


def entry(anim_id: int):
    entries, i = load_source(["demo"], anim_id)
    return entries, i


def not_blank(path) -> dict:
    st = image_stats(path)
    assert st["colours"] > 40 and st["std"] > 8, (path, st)
    return st


def test_headless_on_the_demo_move_set_writes_three_pictures(tmp_path):
    out = tmp_path / "view"
    r = run_module("scuffle", "view", "demo", "--id", "149", "--headless", "--out", out)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["id149_THROW_SIDE_channels.png", "id149_THROW_SIDE_sheet.png", "id149_THROW_SIDE_view.png"]
    clip = demo_set().clip(149)
    sheet = not_blank(out / "id149_THROW_SIDE_sheet.png")
    assert (sheet["width"], sheet["height"]) == sheet_size(len(sheet_frames(clip.frames))) == (1320, 826)
    plot = not_blank(out / "id149_THROW_SIDE_channels.png")
    assert (plot["width"], plot["height"]) == channels_size(len([b for b in clip.bones if b])) == (1500, 1148)
    view = not_blank(out / "id149_THROW_SIDE_view.png")
    assert (view["width"], view["height"]) == DEFAULT_SIZE
    assert all(str(out / n) in r.stdout for n in names)


def test_headless_all_clips_of_a_resource(tmp_path):
    aset = demo_set()
    small = type(aset).build({358: aset.clip(358), 412: aset.clip(412)}, {412: aset.range(412)})
    res = tmp_path / "two.res"
    res.write_bytes(save_resource(small.to_resource()))
    r = run_module("scuffle", "view", res, "--headless", "--all", "--root-motion", "--out", tmp_path / "o",
                   "--size", "1000x640")
    assert r.returncode == 0, r.stderr
    pngs = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert len(pngs) == 6 and "id412_WALK_START_view.png" in pngs
    assert image_stats(tmp_path / "o" / "id412_WALK_START_view.png")["width"] == 1000


def test_without_a_display_view_writes_the_pictures(tmp_path, monkeypatch, capsys):
    from scuffle.cli import main

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    assert main(["view", "demo", "--id", "11", "--out", str(tmp_path)]) == 0
    assert "writing pictures instead" in capsys.readouterr().err
    assert (tmp_path / "id11_JAB_sheet.png").exists()


def test_scuffle_demo_and_view_take_their_own_options():
    r = run_module("scuffle", "demo", "--help")
    assert r.returncode == 0 and "--seconds" in r.stdout
    r = run_module("scuffle", "view", "--help")
    assert r.returncode == 0 and "SOURCE" in r.stdout and "--root-motion" in r.stdout


def test_the_playback_steps_the_cursors_time():
    entries, i = entry(19)                      # COMBO: 21 frames at 0.8
    pb = Playback(entries[i])
    assert entries[i].rate == F.f32(0.8)
    cur = Cursor(entries[i].clip, 0)
    step = cur.step_size(F.DT, entries[i].rate)
    for u in range(1, pb.n):
        assert cur.advance(step, None) == 0.0
        assert pb.times[u] == np.float32(cur.time)
    assert cur.advance(step, None) != 0.0       # the end step: update n
    assert pb.end_update == pb.n == 26          # ceil((21 - 0.5) / 0.8), the spec's table


def test_root_motion_matches_the_runtime():
    from scuffle.game.runtime.world import Game

    for anim_id, next_id in ((412, 388), (151, 196)):
        entries, i = entry(anim_id)
        pb = Playback(entries[i])
        g = Game()
        try:
            g.add_human("a", demo_set(), position=(0, 0, 0), heading=0)
            g.change("a", g.player.chain(g.instance("a"), [anim_id, next_id]), fade=0.0)
            for m in range(1, pb.n):
                g.step()
                assert g.record("a").anim_id == anim_id
                np.testing.assert_allclose(g.body("a").position, pb.path[m], atol=1e-9)
                assert abs((g.body("a").heading - pb.headings[m] + 180) % 360 - 180) < 1e-9
            g.step()
            assert g.record("a").anim_id == next_id     # the end update plays the next clip
        finally:
            g.close()
    assert Playback(entry(151)[0][entry(151)[1]]).total_turn == pytest.approx(-180.0, abs=0.05)
    assert Playback(entry(149)[0][entry(149)[1]]).total_turn == pytest.approx(-90.0, abs=0.05)


def test_bones_without_a_channel_are_the_reference_pose():
    entries, i = entry(149)
    pb = Playback(entries[i])
    clip = entries[i].clip
    assert 7 not in clip.rotations and 17 in clip.rotations
    assert pb.tags[2 + 7].all() and not pb.tags[2 + 17].any()
    assert pb.tags[0].all()                     # no section A: the velocity is a default


def test_a_pair_plays_at_1_unless_told_and_shows_a_never_ending_clip(tmp_path):
    d, k = encode_clip(author_clip("blink", 2))
    (tmp_path / "b.desc").write_bytes(d)
    (tmp_path / "b.keys").write_bytes(k)
    entries, i = load_source([str(tmp_path / "b.desc"), str(tmp_path / "b.keys")])
    assert entries[i].anim_id is None and entries[i].rate == 1.0 and not Playback(entries[i]).never_ends
    entries, i = load_source([str(tmp_path / "b.desc"), str(tmp_path / "b.keys")], rate=0.75)
    pb = Playback(entries[i])
    assert pb.never_ends and pb.end_update == 2 and pb.n == 2


def test_the_state_plays_loops_steps_and_scrubs():
    entries, i = entry(412)                     # 10 frames at 0.75: 13 updates
    st = ViewerState(entries, i)
    n = st.playback.n
    assert n == 13
    for _ in range(n - 1):
        st.tick()
    assert st.update == n - 1
    st.tick()
    assert st.update == 0 and st.playing        # loop: back to the start
    st.loop = False
    st.set_update(n - 1)
    st.tick()
    assert not st.playing and st.update == n - 1
    st.toggle("playing")
    assert st.playing and st.update == 0        # play again from the start
    st.step(5)
    assert not st.playing and st.update == 5
    st.step(-50)
    assert st.update == 0
    st.seek_frame(4.5)                          # frame 4.5 = update 6 at 0.75
    assert st.update == 6 and st.playback.frames_x[6] == pytest.approx(4.5, abs=1e-5)
    st.next_clip(1)
    assert st.entry.anim_id == 413 and st.update == 0
    st.next_clip(1)
    assert st.entry.anim_id == 11               # wraps to the first id
    st.next_clip(-1)
    assert st.entry.anim_id == 413


def test_the_window_keys_and_mouse():
    entries, i = entry(149)
    app = ViewerApp.offscreen(ViewerState(entries, i), (1280, 800))
    st = app.state
    app.render(Fonts())
    app.press("space")
    assert not st.playing
    app.press("right")
    assert st.update == 1
    app.press("right", shift=True)
    assert st.update == 11
    app.press("left")
    assert st.update == 10
    app.press("end")
    assert st.update == st.playback.n - 1
    app.press("home")
    assert st.update == 0
    app.press("r")
    assert st.root_motion
    app.press("l")
    assert not st.loop
    app.press("m")
    assert st.slow
    app.press("h")
    assert st.show_help
    app.render(Fonts())                          # the help overlay draws
    app.press("pagedown")
    assert st.entry.anim_id == 150
    app.press("leftbracket")
    assert st.entry.anim_id == 149
    app.render(Fonts())
    lay = app.layout
    app.mouse("down", lay.x_of(10.0), lay.track.centery)
    assert app.scrubbing and st.update == st.playback.update_of_frame(10.0) == 13
    app.mouse("move", lay.x_of(20.0), lay.track.centery)
    assert st.update == st.playback.update_of_frame(20.0) == 27
    app.mouse("up", lay.x_of(20.0), lay.track.centery)
    assert not app.scrubbing
    app.mouse("move", lay.x_of(5.0), lay.track.centery)
    assert st.update == 27                        # no drag without the button
    app.press("escape")
    assert not app.running


def test_bad_sources_are_one_line_exit_2(tmp_path):
    d, k = encode_clip(author_clip("c", 5))
    (tmp_path / "c.desc").write_bytes(d)
    (tmp_path / "c.keys").write_bytes(k[:0] + b"\0" * 8)
    (tmp_path / "junk.res").write_bytes(b"\x00\x00\x00\x00\xff\x00\x00\x00")
    cases = [
        (("nope.res",), "cannot read resource file 'nope.res'"),
        (("junk.res",), "junk.res: not a resource file: chunk 0 (type 0x00 KEYFRAMES) at byte 4"),
        (("demo", "--id", "5"), "anim id 5 has no clip"),
        (("c.keys", "c.desc"), "a descriptor is 80 bytes, this file has 8"),
        (("c.desc", "c.keys"), "c.desc + c.keys: keyframes chunk"),
        (("c.desc", "c.keys", "--id", "3"), "--id goes with a resource file"),
        (("demo", "--rate", "0"), "--rate: 0.0 must be a finite number > 0"),
    ]
    for args, text in cases:
        r = run_module("scuffle", "view", *args, "--headless", "--out", tmp_path / "o", cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout)
        assert r.stderr.count("\n") == 1 and text in r.stderr and "Traceback" not in r.stderr, r.stderr
    with pytest.raises(ViewError):
        load_source(["a", "b", "c"])


def test_the_window_loop_runs_and_saves_a_screenshot(tmp_path, monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    entries, i = entry(412)
    path = tmp_path / "shot.png"
    app = ViewerApp(ViewerState(entries, i), (1000, 640), screenshot=path)
    app.run()
    assert not app.running
    st = not_blank(path)
    assert (st["width"], st["height"]) == (1000, 640)
