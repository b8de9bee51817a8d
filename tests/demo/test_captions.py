"""Captions on the demo's pictures: who grabs, strikes, throws, falls.

Everything runs under SDL_VIDEODRIVER=dummy; this file itself never imports pygame.
"""
from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from scuffle.demo import render  # noqa: E402
from scuffle.demo.headless import run_headless  # noqa: E402


def test_the_caption_of_each_fight_log_entry():
    cap = render.action_caption
    assert cap([(100, "p2", "throw", 149, "p1")], 120) == "p2 throws p1 (149 throw_side)"
    assert cap([(100, "p2", "grab_connect", "p1")], 101) == "p2 grabs p1"
    assert cap([(100, "p1", "hit", "p2", 5.0)], 101) == "p1 strikes p2 (-5)"
    assert cap([(100, "p1", "strike", 11)], 101) == "p1 strikes (11 jab)"
    assert cap([(100, "p2", "throw_release", "p1")], 101) == "p1 falls (thrown by p2)"
    assert cap([(100, "p2", "ko", "p1")], 101) == "p1 knocks out p2"
    # the latest wins; refusals and misses are no caption; an old action is gone
    log = [(90, "p1", "strike", 11), (95, "p1", "hit", "p2", 5.0), (96, "p2", "refused", "grab", "busy")]
    assert cap(log, 100) == "p1 strikes p2 (-5)"
    assert cap(log, 95 + render.CAPTION_UPDATES + 1) == ""
    assert cap([], 0) == ""


def test_the_headless_demo_captions_its_throw(tmp_path):
    """Seed 1's first throw (the README's GIF: p2 grabs p1 and throws it, 149)."""
    captions: list[tuple[int, str]] = []

    def watch(sim):
        scene = render.snapshot(sim)
        if scene.action and (not captions or captions[-1][1] != scene.action):
            captions.append((sim.update, scene.action))

    run_headless(seconds=8, out=tmp_path, seed=1, pictures=False, on_update=watch)
    texts = [c for _, c in captions]
    assert "p2 grabs p1" in texts
    throw = next(c for c in texts if " throws " in c)
    assert throw.startswith("p2 throws p1 (") and any(t.startswith("p1 falls") for t in texts)
    assert texts.index("p2 grabs p1") < texts.index(throw)
    assert list(tmp_path.iterdir()) == []                           # pictures=False: nothing written


def test_the_caption_is_drawn_on_the_picture():
    from scuffle.demo.app import DemoSim

    pygame = render.pygame                    # the demo's own pygame: this file imports none

    sim = DemoSim(seed=1, attract=True)
    try:
        for _ in range(40):
            sim.step()
        scene = render.snapshot(sim)
    finally:
        sim.close()
    fonts = render.Fonts(14)
    plain, captioned = pygame.Surface((480, 300)), pygame.Surface((480, 300))
    scene.action = ""
    cam = render.draw_arena_only(plain, scene, fonts)
    scene.action = "p2 throws p1 (149 throw_side)"
    render.draw_arena_only(captioned, scene, fonts, cam)
    a, b = pygame.image.tobytes(plain, "RGB"), pygame.image.tobytes(captioned, "RGB")
    rows = [y for y in range(300) if a[y * 480 * 3:(y + 1) * 480 * 3] != b[y * 480 * 3:(y + 1) * 480 * 3]]
    assert rows and min(rows) >= 6 and max(rows) < 40               # a band at the top, nothing else
