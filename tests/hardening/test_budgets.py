"""Budgets checked before allocating: a clip bank, a scenario, a diff.

Each hostile input is small on disk and would need far more memory if it were built:
clips with no channels and F = 65,535 (a frame table of 36 slots x 65,536 rows each),
400,000 humans, two traces of many records. Each is refused on one line naming the
file, the field and the limit, and the refusal comes before the allocation: the CLI
runs in a subprocess (tests/hardening/peak.py) that reports its peak RSS, which must
stay far below what building would take (and under the 500 MB the issue allows).
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, encode_clip
from scuffle.anim.data.resource import save_resource
from scuffle.anim.engine.sampler import MAX_BANK_BYTES, BankBudgetError, ClipBank, bank_bytes, clip_rows
from scuffle.game.fighters import registry
from scuffle.game.runtime.scenario import MAX_HUMANS, ScenarioError, parse_scenario
from scuffle.game.runtime.world import Game
from scuffle.game.tools import diff

from .support import REPO

PEAK = REPO / "tests" / "hardening" / "peak.py"
HUGE_F = 65_535
MB = 1024                      # KiB in a MiB


def _peak(*args, cwd, timeout: float = 180) -> tuple[subprocess.CompletedProcess, int]:
    """``scuffle ARGS`` in a subprocess: the result and its peak RSS in MiB."""
    r = subprocess.run([sys.executable, str(PEAK), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("PEAK_KB "), r.stderr[-2000:]
    r.stderr = "\n".join(lines[:-1]) + "\n"
    return r, int(lines[-1].split()[1]) // MB


def _one_line(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def _empty_clips(n: int, frames: int = HUGE_F) -> dict:
    """n distinct clips with no channels and F frames (each a frame table of F + 1 rows)."""
    return {100 + i: author_clip(f"empty{i}", frames) for i in range(n)}


def _huge_set(n: int = 40) -> AnimSet:
    return AnimSet.build(_empty_clips(n), name="huge")


# ---------------------------------------------------------------- the clip bank


def test_the_bank_budget_counts_the_declared_frames_not_the_bytes():
    clips = list(_empty_clips(2).values())
    assert clip_rows(clips[0]) == HUGE_F + 1
    assert bank_bytes(clips) > 2 * 36 * 8 * (HUGE_F + 1)        # the 36-slot rows, both layouts
    with pytest.raises(BankBudgetError, match="clip bank: needs .* over the limit of 268,435,456 bytes"):
        ClipBank(list(_empty_clips(40).values()))


def test_a_resource_of_empty_long_clips_is_refused_before_its_tables(tmp_path):
    """15 KB of resource, 1.5 GB of frame tables: refused by `scuffle run` naming the file."""
    res = save_resource(_huge_set().to_resource())
    assert len(res) < 20_000
    (tmp_path / "big.res").write_bytes(res)
    (tmp_path / "s.toml").write_text('updates = 2\n[sets.big]\nresource = "big.res"\n'
                                     '[[humans]]\nname = "p1"\nset = "big"\n')
    r, peak = _peak("run", "s.toml", "--trace", "t.jsonl", cwd=tmp_path)
    _one_line(r, "s.toml:2: sets.big", "clip bank needs", f"limit of {MAX_BANK_BYTES:,} bytes")
    assert peak < 300, peak


def test_inline_hex_clips_are_refused_the_same_way(tmp_path):
    out = ['updates = 1\n']
    for anim_id, c in _empty_clips(40).items():
        d, k = encode_clip(c)
        out.append(f'[[sets.big.clips]]\nid = {anim_id}\ndescriptor = "{d.hex()}"\nkeyframes = "{k.hex()}"\n')
    out.append('[[humans]]\nname = "p1"\nset = "big"\n')
    (tmp_path / "s.toml").write_text("".join(out))
    r, peak = _peak("run", "s.toml", cwd=tmp_path)
    _one_line(r, "sets.big", "clip bank needs", "over the limit")
    assert peak < 300, peak


def test_sets_that_fit_alone_but_not_together_are_refused_on_the_human(tmp_path):
    """Three sets of 3 long clips each (113 MB of tables): two fit together, not three."""
    sets = {f"s{k}": AnimSet.build({100 + i: author_clip(f"s{k}c{i}", HUGE_F) for i in range(3)}, name=f"s{k}")
            for k in range(3)}
    for name, s in sets.items():
        assert bank_bytes(list(s.clips_by_index)) <= MAX_BANK_BYTES
        (tmp_path / f"{name}.res").write_bytes(save_resource(s.to_resource()))
    text = "updates = 1\n" + "".join(f'[sets.{n}]\nresource = "{n}.res"\n' for n in sets) + \
        "".join(f'[[humans]]\nname = "h{k}"\nset = "s{k}"\n' for k in range(3))
    with pytest.raises(ScenarioError, match=r"s.toml:16: humans\[2\].set: the sets s0, s1, s2 together need a clip bank"):
        parse_scenario(text, "s.toml", base=tmp_path)


def test_add_human_refuses_a_set_past_the_budget_and_changes_nothing():
    game = Game()
    try:
        before = (len(game.player._clips), dict(game.names))
        with pytest.raises(BankBudgetError, match="anim_set: clip bank: needs"):
            game.add_human("p1", _huge_set())
        assert (len(game.player._clips), dict(game.names)) == before
        with pytest.raises(KeyError):
            game.entity("p1")
    finally:
        game.close()


# ---------------------------------------------------------------- the scenario


def _many_humans(n: int) -> str:
    return 'updates = 1\n[sets.a]\nlibrary = "demo"\n' + \
        "".join(f'[[humans]]\nname = "h{i}"\nset = "a"\n' for i in range(n))


def test_more_humans_than_the_limit_are_refused_before_any_is_built():
    with pytest.raises(ScenarioError, match=f"humans: {MAX_HUMANS + 1:,} entries, over the limit of {MAX_HUMANS:,}"):
        parse_scenario(_many_humans(MAX_HUMANS + 1))


@pytest.mark.slow
def test_a_crowd_and_a_large_bank_together_are_refused_on_the_worlds_budget(tmp_path):
    """20,000 humans (234 MiB once stepped) fit, 3 long clips (113 MB of tables) fit, not
    both: refused before the world is built."""
    from scuffle.game.runtime.scenario import MAX_WORLD_BYTES
    s = AnimSet.build({100 + i: author_clip(f"c{i}", HUGE_F) for i in range(3)}, name="s")
    (tmp_path / "s.res").write_bytes(save_resource(s.to_resource()))
    text = 'updates = 1\n[sets.s]\nresource = "s.res"\n' + \
        "".join(f'[[humans]]\nname = "h{i}"\nset = "s"\n' for i in range(MAX_HUMANS))
    with pytest.raises(ScenarioError, match=f"s.toml:4: humans: 20,000 humans .* over the world's budget of "
                                            f"{MAX_WORLD_BYTES:,} bytes"):
        parse_scenario(text, "s.toml", base=tmp_path)
    parse_scenario(text.replace('"s.res"', '"s.res"\n[sets.d]\nlibrary = "demo"', 1).replace('set = "s"', 'set = "d"'),
                   "s.toml", base=tmp_path, registry=registry())


@pytest.mark.slow
def test_400000_humans_under_the_size_cap_are_refused_in_bounded_memory(tmp_path):
    text = _many_humans(400_000)
    assert len(text) < 16 << 20
    (tmp_path / "s.toml").write_text(text)
    r, peak = _peak("run", "s.toml", cwd=tmp_path, timeout=600)
    _one_line(r, "s.toml", "humans: 400,000 entries, over the limit of 20,000")
    assert peak < 500, peak


@pytest.mark.slow
def test_too_many_commands_are_refused():
    from scuffle.game.runtime.scenario import MAX_COMMANDS
    text = 'updates = 1\ncommands = [' + ", ".join(['{update = 0, human = "x"}'] * (MAX_COMMANDS + 1)) + ']\n'
    with pytest.raises(ScenarioError, match=f"commands: {MAX_COMMANDS + 1:,} entries, over the limit"):
        parse_scenario(text)


# ---------------------------------------------------------------- the diff


def test_two_traces_past_the_diffs_byte_budget_are_refused_unread(tmp_path):
    """Two sparse 200 MiB files (under the 256 MiB cap each): refused from their sizes."""
    for name in ("a.jsonl", "b.jsonl"):
        with open(tmp_path / name, "wb") as f:
            f.truncate(200 << 20)
    r, peak = _peak("diff", "a.jsonl", "b.jsonl", cwd=tmp_path)
    _one_line(r, "a.jsonl: size: the two traces hold", f"budget of {diff.MAX_DIFF_BYTES:,} bytes")
    # the process alone peaks at 130-170 MB (numpy, the CLI); reading one of the files
    # would add 200 MB: under 250 MB, neither was read
    assert peak < 250, peak


@pytest.mark.slow
def test_two_traces_of_too_many_records_are_refused_before_they_are_indexed(tmp_path):
    """700,000 one-line records in each trace (25 MB): an index of 1.4 M records is past the budget."""
    line = b'{"update":0,"human":"a"}\n'
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(line * 700_000)
    r, peak = _peak("diff", "a.jsonl", "b.jsonl", cwd=tmp_path)
    _one_line(r, "a.jsonl: records: 700,001 lines", "over the diff's budget")
    assert peak < 200, peak


@pytest.mark.slow
def test_a_record_longer_than_the_line_limit_is_refused_with_its_line(tmp_path):
    good = json.dumps({"update": 0, "human": "a", "anim": 1}) + "\n"
    big = json.dumps({"update": 1, "human": "a", "anim": [0] * (diff.MAX_RECORD_BYTES // 2)}) + "\n"
    (tmp_path / "a.jsonl").write_text(good + big)
    (tmp_path / "b.jsonl").write_text(good)
    r, _ = _peak("diff", "a.jsonl", "b.jsonl", cwd=tmp_path)
    _one_line(r, "a.jsonl:2: a record of", f"over the limit of {diff.MAX_RECORD_BYTES:,}")
