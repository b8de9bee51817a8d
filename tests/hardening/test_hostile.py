"""Hostile inputs: each hand-made probe of the adversarial pass, kept small.

1. Clips bounded by their own length (the keys past the first one at or after F are
   never read: kept raw, never decoded); 2. files read with limits (regular files only,
   size caps, a resource of many empty chunks refused early, unreadable directories in
   the survey); 3. numbers in documented ranges, strict traces, a bounded end_step;
   4. one line, never a traceback; 8. scenario paths relative to the scenario file.
The CLI cases run in subprocesses, four at a time, as tests/hardening/test_cli_errors.py.
"""
from __future__ import annotations

import io
import math
import os
import struct
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from scuffle.anim.data.clip import KEY_DTYPE, author_clip, encode_clip, key_frames, parse_clip, reachable_count
from scuffle.anim.data.lint import end_step
from scuffle.anim.data.resource import MAX_CHUNKS, ResourceFormatError, load_resource, save_resource
from scuffle.anim.engine.sampler import ClipBank
from scuffle.game.runtime.files import FileLimitError, read_limited
from scuffle.game.runtime.scenario import ScenarioError, load_scenario, parse_scenario
from scuffle.game.runtime.trace import TraceValueError, write_records
from scuffle.game.tools.survey import collect

from scuffle_cli import run_scuffle

from .support import B, no_hang, run_game, synthetic_set
from .test_fuzz_scenario import synthetic_text

# ---------------------------------------------------------------- 1. clips bounded by their length


def _far_keys_clip(n: int, frames: int = 30, delta: int = 255) -> tuple[bytes, bytes]:
    """One bone whose channel runs n keys ``delta`` frames apart, in a clip of ``frames``."""
    d, _ = encode_clip(author_clip("far", frames, rotations={0: [(0, (0, 0, 0, 1))]}))
    keys = np.zeros(n, KEY_DTYPE)
    keys["delta"][1:] = delta
    keys["x"] = np.arange(n) % 1000
    d = bytearray(d)
    struct.pack_into("<I", d, 0x14, keys.nbytes)
    return bytes(d), keys.tobytes()


def test_only_the_keys_up_to_the_first_at_or_past_F_are_kept_and_the_rest_written_back():
    d, k = _far_keys_clip(20_000)                            # the 160 KB probe: 20,000 keys, F = 30
    clip = parse_clip(d, k)
    assert key_frames(clip.rotations[0]).tolist() == [0, 255]   # frame 0 (in force), 255 (its lerp target)
    assert len(clip.unreachable[0]) == 19_998 * 8
    assert encode_clip(clip) == (d, k)                      # byte-exact all the same


@pytest.mark.parametrize("starts, frames, kept", [
    ([0, 10, 20, 29, 30, 31], 30, 5),      # 29 = F - 1 is shown; 30 is its lerp target; 31 never read
    ([0, 10, 20, 40, 50], 30, 4),          # 20 is in force at F - 1, 40 its target
    ([0, 1, 2], 30, 3),                    # all short of F
    ([0, 5], 1, 2),                        # F = 1: frame 0, then its target
])
def test_reachable_count_follows_the_last_frame_shown_and_the_next_key(starts, frames, kept):
    keys = np.zeros(len(starts), KEY_DTYPE)
    keys["delta"] = np.diff(starts, prepend=0)
    assert reachable_count(keys, frames) == kept


def test_far_keys_change_no_sample_the_cursor_can_reach():
    far = author_clip("f", 30, rotations={0: [(0, (0, 0, 0, 1)), (20, (0, 0, 0.3, 0.95)), (40, (0, 0, 0.6, 0.8)),
                                                (300, (0.5, 0, 0, 0.86))]})
    near = author_clip("n", 30, rotations={0: [(0, (0, 0, 0, 1)), (20, (0, 0, 0.3, 0.95)), (40, (0, 0, 0.6, 0.8))]})
    assert 0 in far.unreachable and not near.unreachable
    t = (np.arange(30, dtype=np.float64) / 30.0).astype(np.float32)
    a = ClipBank([far]).sample(np.zeros(30, np.int64), t, np.float32(1.0), 0)
    b = ClipBank([near]).sample(np.zeros(30, np.int64), t, np.float32(1.0), 0)
    assert np.array_equal(a.rot, b.rot)


def test_a_clip_of_many_far_keys_is_sampled_in_bounded_memory():
    d, k = _far_keys_clip(60_000)                            # 480 KB: passed 6 GB before
    tracemalloc.start()
    try:
        clip = parse_clip(d, k)
        ClipBank([clip]).sample(np.zeros(4, np.int64), np.zeros(4, np.float32), np.float32(1.0), 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2 ** 20, peak


@pytest.mark.slow
def test_a_channel_summing_past_2_to_the_31_frames_does_not_wrap():
    d, k = _far_keys_clip(9_000_000)                         # 72 MB: 2.3e9 frames of deltas
    clip = parse_clip(d, k)
    assert key_frames(clip.rotations[0]).tolist() == [0, 255]
    assert clip.frames == 30


# ---------------------------------------------------------------- 2. files read with limits


def test_read_limited_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with no_hang(10):
        for path, word in ((fifo, "FIFO"), ("/dev/zero", "character device"), (tmp_path, "directory")):
            with pytest.raises(FileLimitError, match=word):
                read_limited(path)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(FileLimitError, match="over the limit of 100 bytes"):
        read_limited(big, 100)
    assert read_limited(big, 101) == b"x" * 101


def test_a_resource_of_many_empty_chunks_is_refused_at_the_chunk_cap():
    data = struct.pack("<II", 0x77, 0) * (MAX_CHUNKS + 10)
    tracemalloc.start()
    try:
        with pytest.raises(ResourceFormatError, match=f"more than {MAX_CHUNKS} chunks"):
            load_resource(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2 ** 20, peak


def test_load_resource_of_a_str_is_the_loaders_own_error():
    with pytest.raises(ResourceFormatError, match="needs bytes, got str"):
        load_resource("abc")


def test_the_survey_lists_an_unreadable_directory_as_an_entry(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    (tmp_path / "ok.res").write_bytes(b"")
    real = os.scandir

    def scandir(path="."):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    items, _ = collect([str(tmp_path)])
    bad = [i for i in items if i.kind == "bad"]
    assert [Path(i.path).name for i in bad] == ["locked"]
    assert "Permission denied" in bad[0].error


# ---------------------------------------------------------------- 3. numbers


def _scenario_files(d: Path) -> None:
    """The files synthetic_text names, in ``d``."""
    s = synthetic_set()
    desc, keys = encode_clip(s.clip(B))
    (d / "set.res").write_bytes(save_resource(s.to_resource()))
    (d / "five.desc").write_bytes(desc)
    (d / "five.keys").write_bytes(keys)


def _scenario(**repl) -> str:
    text = synthetic_text()
    for old, new in repl.items():
        assert old in text
        text = text.replace(old, new, 1)
    return text


@pytest.mark.parametrize("old, new, field", [
    ("speeds = [0.75, 0.8, 1.0, 0.9]", "speeds = [3e38, 1, 1, 1]", "speeds"),
    ("target = 3.5", "target = 1e300", "commands[5].target"),
    ("fade = 0.2", "fade = 1000.0", "commands[1].fade"),
    ("position = [0.5, 1.0, 0.0]", "position = [0.5, 1e30, 0.0]", "humans[1].position"),
    ("updates = 40", f"updates = {2 ** 63 - 1}", "updates"),
])
def test_numbers_out_of_their_documented_range_name_line_and_field(tmp_path, old, new, field):
    _scenario_files(tmp_path)
    text = _scenario(**{old: new})
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, "x.toml", base=tmp_path)
    assert e.value.field == field and e.value.line is not None, str(e.value)
    assert text.splitlines()[e.value.line - 1].strip().startswith(new.split(" ")[0]), str(e.value)


def test_the_trace_writer_refuses_nan_and_infinity_naming_the_field():
    fp = io.StringIO()
    with pytest.raises(TraceValueError, match=r"update 3, human 'a': pos\[1\] is not a finite number"):
        write_records(fp, [{"update": 3, "human": "a", "pos": [0.0, math.inf, 0.0]}])
    assert fp.getvalue() == ""


@pytest.mark.parametrize("rate", [1e-7, 1e-30, 1e-45, 1e-5])
def test_end_step_is_bounded_at_tiny_rates(rate):
    clip = author_clip("c", 30, rotations={0: [(0, (0, 0, 0, 1))]})
    with no_hang(5):
        found = end_step(clip, rate)
    if rate == 1e-5:                                        # 30 frames at 1e-5 a frame: about 3e6 updates
        assert found is not None and 2.9e6 < found[0] < 3.2e6
    else:
        assert found is None                                # the time stops growing first


# ---------------------------------------------------------------- 4 and 8: the CLI, one line


def _files(d: Path) -> None:
    s = synthetic_set()
    desc, keys = encode_clip(s.clip(s.ids()[0]))
    (d / "a.desc").write_bytes(desc)
    (d / "a.keys").write_bytes(keys)
    os.mkfifo(d / "fifo")
    (d / "deep.toml").write_text("updates = 1\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    (d / "deep.jsonl").write_text("[" * 100_000 + "\n")
    (d / "ok.jsonl").write_text('{"update":0,"human":"a"}\n')
    _scenario_files(d)
    (d / "fifo.toml").write_text(synthetic_text().replace('resource = "set.res"', 'resource = "fifo"'))
    (d / "zero.toml").write_text(synthetic_text().replace('keyframes_file = "five.keys"',
                                                          'keyframes_file = "/dev/zero"'))
    (d / "notres.toml").write_text(synthetic_text().replace('resource = "set.res"', 'resource = "junk.res"'))
    (d / "junk.res").write_bytes(b"SECRET-FIRST-BYTES" * 4)


CASES: dict[str, tuple[list[str], list[str]]] = {
    "run: deep TOML": (["run", "deep.toml"], ["deep.toml:", "nested more than 64"]),
    "diff: deep JSON": (["diff", "deep.jsonl", "ok.jsonl"], ["deep.jsonl:1", "nested too deeply"]),
    "diff: a FIFO": (["diff", "fifo", "ok.jsonl"], ["fifo", "a FIFO, not a regular file"]),
    "diff: /dev/zero": (["diff", "ok.jsonl", "/dev/zero"], ["/dev/zero", "character device"]),
    "clip: /dev/urandom": (["clip", "/dev/urandom", "a.keys"], ["/dev/urandom", "character device"]),
    "clip: a FIFO": (["clip", "fifo"], ["fifo", "a FIFO"]),
    "survey: a FIFO": (["survey", "fifo"], ["fifo", "a FIFO, not a regular file"]),
    "survey: /dev/zero": (["survey", "/dev/zero"], ["/dev/zero", "character device"]),
    "run: resource a FIFO": (["run", "fifo.toml"], ["sets.r.resource", "'fifo'", "a FIFO"]),
    "run: keyframes_file /dev/zero": (["run", "zero.toml", "--data", "/dev"], ["keyframes_file", "/dev/zero", "character device"]),
    "run: a resource that is not one": (["run", "notres.toml"], ["sets.r.resource", "junk.res"]),
    "demo: --seconds nan": (["demo", "--headless", "--seconds", "nan"], ["--seconds nan"]),
    "demo: --seconds inf": (["demo", "--headless", "--seconds", "inf"], ["--seconds inf"]),
    "demo: --seconds 1e9": (["demo", "--headless", "--seconds", "1e9"], ["--seconds 1000000000.0", "3600"]),
    "demo: too many pictures": (["demo", "--headless", "--seconds", "600", "--frame-every", "0.01"],
                                ["pictures; at most 1000"]),
    "demo: --frame-every nan": (["demo", "--headless", "--frame-every", "nan"], ["--frame-every nan"]),
    "demo: --size 99999x99999": (["demo", "--headless", "--size", "99999x99999"], ["--size '99999x99999'"]),
    "view: --size 99999x99999": (["view", "demo", "--headless", "--size", "99999x99999"], ["--size '99999x99999'"]),
    "bench: 100,000,000 humans": (["bench", "--humans", "100000000"], ["at most 50000 humans"]),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("hostile")
    _files(d)
    env = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    # A FIFO and a device, read through the guard every reader shares (read_limited), run
    # in a subprocess with a time limit, so a broken guard fails instead of hanging the
    # suite; the rest run in this process (tests/scuffle_cli.py), which is much faster.
    risky = {"clip: a FIFO", "diff: /dev/zero"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {n: pool.submit(run_game, *CASES[n][0], cwd=d, env=env, timeout=120) for n in sorted(risky)}
        out = {n: (run_scuffle(*argv, cwd=d, env=env), d) for n, (argv, _) in CASES.items() if n not in risky}
        out.update({n: (f.result(), d) for n, f in futures.items()})
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_cli_input_is_one_line_and_status_2(results, name):
    r, _ = results[name]
    lines = r.stderr.splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(lines) == 1, r.stderr
    for needle in CASES[name][1]:
        assert needle in lines[0], (needle, lines[0])
    assert "SECRET" not in lines[0]                         # a path is named, never a file's first bytes


@pytest.mark.slow
def test_the_viewer_draws_a_clip_of_2000_far_keys(tmp_path):
    d, k = _far_keys_clip(2_000)                             # a StopIteration in the ruler before
    (tmp_path / "far.desc").write_bytes(d)
    (tmp_path / "far.keys").write_bytes(k)
    r = run_game("view", "far.desc", "far.keys", "--headless", "--out", "out", cwd=tmp_path,
                 env={"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert (tmp_path / "out" / "far_channels.png").is_file()


@pytest.mark.slow
def test_scenario_paths_resolve_relative_to_the_scenario_file(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    _scenario_files(sub)
    (sub / "ok.toml").write_text(synthetic_text())
    r = run_game("run", "sub/ok.toml", cwd=tmp_path)          # run from the parent: files found next to it
    assert r.returncode == 0, r.stderr
    sc = load_scenario(sub / "ok.toml")
    assert set(sc.sets) == {"s", "r"}


# ---------------------------------------------------------------- 5. an update is all or nothing


def test_chain_blend_depth_counts_the_clips_nested_in_blend_windows():
    from scuffle.anim.playback.player import chain_blend_depth
    assert chain_blend_depth([1.0, 1.0, 1.0], 0.0) == 1                  # no blend: one clip at a time
    assert chain_blend_depth([1.0, 1.0, 1.0], 0.2) == 2                  # one hand-over at a time
    assert chain_blend_depth([1.0, 0.1, 0.1, 1.0], 0.5) == 4             # short clips nest in the window
    assert chain_blend_depth([1.0] * 8, 100.0) == 8                       # blend=100.0: every clip at once


def test_a_chain_that_could_never_fit_the_pose_stack_is_refused_when_given():
    """With PlayerOptions(refuse_deep_chains=True); by default the chain plays as the
    original plays it, its eighth pose skipped when sampled (test_limits)."""
    from scuffle.anim.playback.player import PlayerOptions
    from scuffle.anim.maths.pose import PoseStackOverflow
    from scuffle.game.fighters.moves import Move
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    g = Game(PlayerOptions(refuse_deep_chains=True))
    try:
        s = demo_set()
        g.add_human("a", s)
        g.add_human("by", s, (3.0, 0.0, 0.0))
        for n in ("a", "by"):
            g.change(n, g.player.loop(g.instance(n), Move.IDLE))
        ids = [Move.JAB, Move.CROSS, Move.HOOK, Move.FINISHER, Move.JAB, Move.CROSS, Move.HOOK, Move.IDLE]
        for _ in range(10):
            g.step()
        in_use, stack = g.player.pool.in_use, list(g.instance("a").stack)
        with pytest.raises(PoseStackOverflow, match="a: an eighth pose"):
            g.player.chain(g.instance("a"), ids, blend=100.0)
        assert g.player.pool.in_use == in_use and g.instance("a").stack == stack
        for _ in range(20):                                  # every later step runs, the counter moves on
            g.step()
        assert g.update == 30 and not g.player.refused
    finally:
        g.close()


def test_a_reaction_the_pool_cannot_serve_refuses_the_hit_whole_and_the_update_goes_on():
    from scuffle.anim.playback.player import PlayerOptions
    from scuffle.components import Combat
    from scuffle.game.fighters.combat import Fight
    from scuffle.game.fighters.moves import Move
    from scuffle.game.fighters.moveset import demo_set
    from scuffle.game.runtime.world import Game

    g = Game(PlayerOptions(pool_size=7))                 # pool_size=6 with two humans, plus a bystander
    try:
        s = demo_set()
        g.add_human("a", s, (0, 0, 0), 0.0)
        g.add_human("b", s, (0, 0.9, 0), 180.0)
        g.add_human("by", s, (5.0, 0, 0), 0.0)
        fight = Fight(g)                                  # all three start the fight idle
        g.step()
        assert all(g.record(n).anim_id == Move.FIGHT_IDLE for n in ("a", "b", "by"))
        assert fight.strike("a", Move.JAB)
        refused = []
        for _ in range(40):
            g.step()
            refused += [(inst.name, str(exc)) for inst, exc in g.player.refused]
        assert refused and refused[0][0] == "a" and "task pool exhausted" in refused[0][1]
        assert g.component("b", Combat).health == 100.0          # no damage without its reaction
        assert fight.stats.strikes == 0 and fight.stats.kinds["refused"] >= 1
        assert g.update == 41                                     # every update ran to its end
        assert g.player.pool.in_use == g.player.tasks_out([g.instance(n) for n in ("a", "b", "by")])
    finally:
        g.close()


# ---------------------------------------------------------------- 7. scenario validation is linear


@pytest.mark.slow
def test_10000_humans_and_10000_commands_load_without_the_quadratic_scan():
    text = 'updates = 10\n[sets.demo]\nlibrary = "demo"\n'
    text += "".join(f'[[humans]]\nname = "h{i}"\nset = "demo"\nposition = [{i % 100}, {i // 100}, 0]\n'
                    for i in range(10_000))
    text += "".join(f'[[commands]]\nupdate = {i % 10}\nhuman = "h{i}"\nloop = 388\n' for i in range(10_000))
    from scuffle import parse_scenario as parse_with_the_demo_fighters
    with no_hang(60):                                       # 141 s before (each header found from the top)
        sc = parse_with_the_demo_fighters(text, "big.toml")
    assert len(sc.humans) == 10_000 and len(sc.commands) == 10_000
    assert sc.humans[-1].line == text.splitlines().index('name = "h9999"')
    assert sc.commands[-1].line is not None


@pytest.mark.parametrize("how", ["push", "change"])
def test_a_hand_built_clip_chain_that_could_never_fit_is_refused_by_push_and_change(how):
    from scuffle.anim.playback.player import Player, PlayerOptions, task_pose_depth
    from scuffle.anim.maths.pose import PoseStackOverflow
    from scuffle.anim.engine.stack import CharacterInstance
    from .support import IDLE, SHORT

    s = synthetic_set()
    p = Player(PlayerOptions(refuse_deep_chains=True))
    p.register(s)
    h = CharacterInstance(s, "h")
    p.change(h, p.loop(h, IDLE))
    p.update([h])
    task = p.loop(h, IDLE)
    for anim_id in reversed(SHORT[:7]):                      # seven clips, each inside the last's window
        task = p.clip(h, anim_id, task, blend=100.0)
    assert task_pose_depth(task) == 8
    before, in_use = list(h.stack), p.pool.in_use
    with pytest.raises(PoseStackOverflow, match="h: an eighth pose"):
        p.push(h, task) if how == "push" else p.change(h, task, 0.2)
    assert h.stack == before
    if how == "change":                                      # change gives the refused task back
        assert p.pool.in_use == in_use - 8
    else:                                                    # push leaves it with the caller
        assert p.pool.in_use == in_use
        p.discard(task)
    assert p.pool.in_use == p.tasks_out([h])
    assert p.update([h]).is_finite()
