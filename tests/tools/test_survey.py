"""``scuffle survey``: a generated corpus with planted bad files (a truncated chunk,
a channel count that disagrees with the mask, a NaN duration, never-ending 2-frame clips,
duplicates), whose counts are asserted exactly."""
from __future__ import annotations

import json
import math
import re
import struct

import numpy as np
import pytest

from scuffle.anim.data.animset import AnimSet
from scuffle.anim.data.clip import author_clip, encode_clip
from scuffle.anim.data.rangelist import author_range
from scuffle.anim.data.resource import save_resource
from scuffle.game.tools.survey import DISC, Item, Survey, collect, raw_mask_mismatch, survey_paths
from toolhelp import run_module


def q(deg: float, axis=(0.0, 0.0, 1.0)) -> tuple[float, float, float, float]:
    h = math.radians(deg) / 2
    return (axis[0] * math.sin(h), axis[1] * math.sin(h), axis[2] * math.sin(h), math.cos(h))


def clips():
    """The corpus's clips: X (section A, three events, bones 17 and 33), Y (no A or B, a
    7-key channel, one event), a 2-frame 'blink', Z (45 frames, section B, bone 0), a
    2-frame W played at 1.0, and a 2-frame 'tick' for a bare pair."""
    x = author_clip("strike", 20, velocity=[(0, (0, 0, 0)), (5, (0, 1.0, 0))],
                    rotations={17: [(0, q(0)), (10, q(40, (1, 0, 0))), (19, q(0))], 33: [(0, q(5))]},
                    events=[{"frame": 3, "type": 11, "word": 7}, {"frame": 12, "type": 11, "word": 8},
                            {"frame": 8, "type": 0x21, "code": "bld", "args": (0, 19)}])
    y = author_clip("idle", 30, rotations={1: [(0, q(0))], 5: [(f, q(f)) for f in (0, 4, 8, 12, 16, 20, 29)]},
                    events=[{"frame": 4, "type": 0x2C}])
    blink = author_clip("blink", 2)
    z = author_clip("turn", 45, rotations={0: [(0, q(-2))], 2: [(0, (-0.5, 0.5, -0.5, 0.5))]},
                    translation=[(0, (0, 0, 0)), (44, (0, 0.1, 0))])
    w = author_clip("fast2", 2)
    tick = author_clip("tick", 2)
    return x, y, blink, z, w, tick


def write_pair(d, stem: str, desc: bytes, keys: bytes, suffixes=(".desc", ".keys")) -> None:
    (d / f"{stem}{suffixes[0]}").write_bytes(desc)
    (d / f"{stem}{suffixes[1]}").write_bytes(keys)


@pytest.fixture
def corpus(tmp_path):
    x, y, blink, z, w, tick = clips()
    d = tmp_path / "corpus"
    (d / "sub").mkdir(parents=True)
    a = AnimSet.build({10: x, 11: y, 12: blink, 13: x},
                      {10: author_range(flags=0x800), 13: author_range(flags=0x800)})
    a_bytes = save_resource(a.to_resource())
    (d / "a.res").write_bytes(a_bytes)
    b = AnimSet.build({20: y, 21: z, 22: w}, {21: author_range(flags=0x1000), 22: author_range(flags=0x1000)})
    (d / "sub" / "b.res").write_bytes(save_resource(b.to_resource()))
    (d / "sub" / "cut.res").write_bytes(a_bytes[:30])                     # truncated in chunk 0's payload
    write_pair(d, "dup", *encode_clip(x))                                 # a duplicate of X
    zd, zk = encode_clip(z)
    write_pair(d, "nan", zd[:0x0C] + struct.pack("<f", float("nan")) + zd[0x10:], zk, ("_02.bin", "_00.bin"))
    yd, yk = encode_clip(y)
    write_pair(d, "mismatch", yd[:0x18] + struct.pack("<H", 3) + yd[0x1A:], yk)   # 3 channels, 2 mask bits
    xd, xk = encode_clip(x)
    write_pair(d / "sub", "trunc", xd, xk[:-8])                           # keyframes cut by one key
    write_pair(d, "tick", *encode_clip(tick))                             # never ends at 0.75 (no id)
    (d / "orphan.desc").write_bytes(encode_clip(w)[0])                    # no keyframes file
    (d / "notes.txt").write_text("not a clip")
    return d


EXPECTED = {
    "files": 9, "resources": 2, "pairs": 5, "bad_files": 2, "skipped": 1,
    "occurrences": 11, "distinct": 9, "failing": 3, "nonfinite": 0, "mismatch": 1,
    "no_section_a": 5, "no_section_b": 5, "events": 4, "events_by_type": {"11": 2, "33": 1, "44": 1},
    "events_type_11": 2, "highest_bone": 33, "highest_bone_clips": 1, "max_keys": 7,
    "min_frames": 2, "max_frames": 45, "never_ending": 2,
}


def test_the_counts_of_a_corpus_with_planted_bad_files(corpus):
    r = run_module("scuffle", "survey", corpus, "--json")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    counts = out["counts"]
    assert {k: counts[k] for k in EXPECTED} == EXPECTED
    assert counts["event_codes"] == {"bld": 1}
    assert counts["max_keys_where"].endswith("bone 5") and "a.res" in counts["max_keys_where"]
    f = out["findings"]
    bad = {b["path"].split("/")[-1]: b["error"] for b in f["bad_files"]}
    assert set(bad) == {"cut.res", "orphan.desc"}
    assert "chunk 0 (type 0x00 KEYFRAMES) at byte 4 (0x4): payload size" in bad["cut.res"]
    assert "without its keyframes file orphan.keys" in bad["orphan.desc"]
    failing = {x["where"].split("/")[-1]: x["error"] for x in f["failing"]}
    assert "duration at byte 12 (0xc): nan" in failing["nan_02.bin + nan_00.bin"]
    assert "channel count at byte 24 (0x18): 3 channels but the mask sets 2 bits" in failing["mismatch.desc + mismatch.keys"]
    assert "overrun" in failing["trunc.desc + trunc.keys"]
    assert [(m["channel_count"], m["mask_bits"]) for m in f["mismatch"]] == [(3, 2)]
    never = sorted((n["name"], n["rate"], n["update"], [u["id"] for u in n["ids"]]) for n in f["never_ending"])
    assert never == [("blink", 0.75, 2, [12]), ("tick", 0.75, 2, [None])]
    assert out["disc"] == DISC and out["speeds"] == [0.75, 0.8, 1.0, 0.9]
    assert r.stderr.strip().splitlines()[-1].startswith("survey: done: 9 files (2 bad, 1 skipped), 11 clip occurrences")


def rows(text: str) -> dict[str, tuple[str, str]]:
    """The side-by-side rows of the text report: label -> (ours, disc)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S.*?|  \S.*?)\s{2,}(\S+)(?: / (.+))?$", line)
        if m and not line.startswith(("files:", "(disc", "most keys (", "fewest frames (", "most frames (")):
            out[m.group(1).strip()] = (m.group(2), m.group(3) or "")
    return out


def test_the_text_report_puts_ours_beside_the_disc(corpus):
    r = run_module("scuffle", "survey", corpus)
    assert r.returncode == 1
    t = rows(r.stdout)
    assert t["resources"] == ("2", "5,127")
    assert t["clip occurrences"] == ("11", "31,274")
    assert t["distinct clips (content hash)"] == ("9", "1,875")
    assert t["failing to parse"] == ("3", "0")
    assert t["channel count and mask disagree"] == ("1", "0")
    assert t["without section A"] == ("5", "957")
    assert t["events"] == ("4", "9,468")
    assert t["type 0x0b SOUND"] == ("2", "4,287")
    assert t["highest animated bone"] == ("33", "33")
    assert t["most keys in a channel"] == ("7", "606")
    assert t["frames (fewest-most)"] == ("2-45", "1-680")
    assert t["never-ending (lint)"] == ("2", "not done")
    assert "ours / disc" in r.stdout
    for section in ("bad files (2):", "failing to parse (3):", "never-ending (2):"):
        assert section in r.stdout


def test_files_named_twice_count_once_and_progress_goes_to_stderr(corpus):
    r = run_module("scuffle", "survey", corpus / "a.res", corpus / "dup.keys", corpus, "--json", "--progress", "3")
    counts = json.loads(r.stdout)["counts"]
    assert (counts["files"], counts["occurrences"], counts["distinct"]) == (9, 11, 9)
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("survey: 3/9 files") and lines[1].startswith("survey: 6/9 files")
    assert lines[-1].startswith("survey: done: 9 files")


def test_a_clean_corpus_exits_0(tmp_path):
    from scuffle.game.fighters.moveset import demo_resource_bytes
    (tmp_path / "demo.res").write_bytes(demo_resource_bytes())
    r = run_module("scuffle", "survey", tmp_path, "--json")
    assert r.returncode == 0, r.stdout
    c = json.loads(r.stdout)["counts"]
    assert (c["resources"], c["occurrences"], c["distinct"], c["failing"], c["never_ending"]) == (1, 48, 48, 0, 0)
    assert c["highest_bone"] == 33 and c["min_frames"] == 10 and c["max_frames"] == 60


def test_a_missing_path_is_a_one_line_error(tmp_path):
    r = run_module("scuffle", "survey", tmp_path / "nope")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nope: no such file or directory" in r.stderr


def test_a_non_finite_pose_is_counted(corpus, monkeypatch):
    """The parser guarantees finite decodes, so a non-finite pose is planted in the sampler
    to see that the survey would catch one."""
    import scuffle.anim.engine.sampler

    real = scuffle.anim.engine.sampler.ClipBank.sample
    target = {}

    def sample(self, clip, time, rate, flags, out=None, start=0):
        p = real(self, clip, time, rate, flags, out, start)
        names = [self.clips[int(i)].name for i in clip]
        bad = np.array([n == target["name"] for n in names])
        p.rot[:, 5, bad] = np.nan
        return p

    monkeypatch.setattr(scuffle.anim.engine.sampler.ClipBank, "sample", sample)
    target["name"] = "idle"
    s = survey_paths([str(corpus)])
    assert s.counts()["nonfinite"] == 1
    assert [x["name"] for x in s.findings()["nonfinite"]] == ["idle"]
    assert s.status() == 1


def test_the_raw_mask_check_and_pair_naming(tmp_path):
    x = clips()[0]
    d, k = encode_clip(x)
    assert raw_mask_mismatch(d) is None
    assert raw_mask_mismatch(d[:0x18] + struct.pack("<H", 9) + d[0x1A:]) == (9, 2)
    assert raw_mask_mismatch(d[:40]) is None
    (tmp_path / "w_02.bin").write_bytes(d)
    (tmp_path / "w_00.bin").write_bytes(k)
    (tmp_path / "lone.keys").write_bytes(k)
    items, skipped = collect([str(tmp_path)])
    assert [(i.kind, i.path.split("/")[-1]) for i in items] == [("bad", "lone.keys"), ("pair", "w_02.bin")]
    assert skipped == 0
    s = Survey()
    for i in items:
        s.add(i)
    s.add(Item("resource", str(tmp_path / "w_00.bin")))      # named as a resource: not one
    assert s.counts()["bad_files"] == 2 and "not a resource file" in s.findings()["bad_files"][1]["error"]
