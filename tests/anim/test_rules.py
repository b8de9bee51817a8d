"""The spec's task rules written once (anim.engine.rules): their numbers from the spec, the same
text in Python and in every compiled writer, and no second copy anywhere in the engine."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from scuffle.anim.maths import f32 as F
from scuffle.anim.engine import rules as R

# compares bits: .ci/run runs it once more with numpy's AVX2 and AVX-512 kernels off
pytestmark = pytest.mark.simd

ROOT = Path(__file__).resolve().parents[2]
ANIM = ROOT / "anim"


def test_the_gait_pair_steps_at_the_spec_numbers():
    """"Gait blend" L269-288: floor(v) with the steps 0.995, 1.995, 2.995 (float32)."""
    assert [R.gait_pair(v) for v in (0.0, 0.5, 0.99, F.f32(0.995), 1.5, F.f32(1.995), 2.9, F.f32(2.995), 4.0)] \
        == [0, 0, 0, 1, 1, 2, 2, 3, 3]
    assert R.gait_pair(F.f32(0.995) - 1e-7) == 0       # just under the float32 step


def test_the_gait_leader_rule():
    """L285: the lower below a fraction of 0.01, the upper from 0.995; between them the
    upper when falling (v above the target) or the old fraction was over 0.875."""
    assert R.gait_leader(1.005, 1, 4.0, 0.0) == 0       # fraction 0.005
    assert R.gait_leader(1.0 + F.f32(0.995), 1, 0.0, 0.0) == 1
    assert R.gait_leader(1.5, 1, 4.0, 0.5) == 0         # rising, old fraction low
    assert R.gait_leader(1.5, 1, 1.0, 0.5) == 1         # falling
    assert R.gait_leader(1.5, 1, 4.0, 0.9) == 1         # old fraction over 0.875
    assert R.gait_first_leader(F.f32(0.995), 0) == 1 and R.gait_first_leader(0.5, 0) == 0


def test_what_a_gait_samples():
    assert R.gait_sampled(0.005) == 0 and R.gait_sampled(0.999) == 1 and R.gait_sampled(0.5) == -1
    assert R.gait_sampled(float(F.f32(0.995))) == -1     # the upper alone only above 0.995


def test_the_gait_target_and_clamp():
    """+0xac: clamped to 0-4, rounded to the nearest integer unless CONTINUOUS."""
    assert (R.gait_clamp(-1.0), R.gait_clamp(5.0), R.gait_clamp(2.5)) == (0.0, 4.0, 2.5)
    assert R.gait_rounded_target(2.5, 0) == 3.0 and R.gait_rounded_target(2.49, 0) == 2.0
    assert R.gait_rounded_target(2.49, 1) == 2.49


def test_the_fade_weight_curve():
    """"Fades" L261-267: w_old = (1 + cos(pi t / d)) / 2; d = 0 gives 0 at once."""
    assert R.fade_weight(0.0, 0.2) == 1.0
    assert R.fade_weight(0.1, 0.2) == pytest.approx(0.5, abs=1e-15)
    assert R.fade_weight(0.2, 0.2) == 0.0 and R.fade_weight(0.5, 0.2) == 0.0
    assert R.fade_weight(0.0, 0.0) == 0.0


def test_a_change_takes_the_plain_path_within_the_limits():
    assert R.change_room(0, 6) and R.change_room(5, 6)
    assert not R.change_room(6, 6)                      # the insert's early finish could act
    assert not R.change_room(17, 18)                    # no room for both


def test_the_compiled_rules_give_the_python_bits():
    """The kernels compile these very functions: the compiled and the plain forms agree
    on a sweep (the fade weight through anim.maths.detmath's cosine on both)."""
    from numba import njit

    fw, gp, gl = njit(R.fade_weight), njit(R.gait_pair), njit(R.gait_leader)
    for i in range(0, 401):
        t = i / 400.0 * 0.3
        assert fw(t, 0.25) == R.fade_weight(t, 0.25)
        v = float(F.f32(i / 100.0))
        assert gp(v) == R.gait_pair(v)
        assert gl(v, R.gait_pair(v), 2.0, 0.5) == R.gait_leader(v, R.gait_pair(v), 2.0, 0.5)


@pytest.mark.parametrize("name", ["cmdkernel", "kernels_rows", "kernels_write", "kernels_step", "kernels_pose",
                                  "kernels_flush"])
def test_each_module_compiling_the_rules_pins_them(name):
    """numba's cache is keyed on the kernel's own file: a module that compiles anim.engine.rules
    pins its source (LINKED_SHA256), or an edit of a rule would leave stale machine code."""
    from scuffle.anim.engine import jitcache

    mod = importlib.import_module(f"scuffle.anim.engine.{name}")
    assert "rules" in jitcache.linked_modules(mod.__file__)
    assert mod.LINKED_SHA256 == jitcache.linked_sha256(mod.__file__), (
        f"set LINKED_SHA256 in anim/engine/{name}.py to {jitcache.linked_sha256(mod.__file__)!r}")


# A rule's second copy would show one of these: the gait's steps or thresholds compared,
# the fade's cosine taken, outside anim.engine.rules (the reference, apart by design, keeps its own).
_NAMES = r"(?:GAIT_)?_?(?:STEP[012]|ALONE_(?:LOW|HIGH)|FALL(?:_FRACTION)?)\b"
_COPIES = (
    re.compile(r"[<>]=?\s*" + _NAMES),                 # a value compared with a step or threshold
    re.compile(_NAMES + r"\s*[<>]"),
    re.compile(r"cos_pi_s\("),                          # the fade's cosine
)


def test_no_rule_is_written_twice_in_the_engine():
    """The gait pair, its leaders, what it samples, its target's rounding and the fade
    weight live in anim/engine/rules.py only: no other engine file compares the gait's steps or
    thresholds or takes the fade's cosine."""
    found = []
    files = _engine_files()
    assert len(files) > 30                              # every floor's modules, not anim/'s top only
    for rel, code in files:
        if rel.endswith(("/rules.py", "/detmath.py", "/kernels_maths.py")):
            continue
        for pat in _COPIES:
            for m in pat.finditer(code):
                line = code.count("\n", 0, m.start()) + 1
                found.append(f"{rel}:{line}: {m.group(0)}")
    assert not found, "a rule written outside anim/engine/rules.py:\n" + "\n".join(found)


def _engine_files() -> list[tuple[str, str]]:
    """Every engine source under anim/ (each floor; not the reference, apart by design) as
    (path from the root, its code without comments)."""
    out = []
    for path in sorted(ANIM.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("anim/reference/"):
            continue
        src = path.read_text(encoding="utf-8")
        out.append((rel, "\n".join(line.split("#", 1)[0] for line in src.splitlines())))
    return out


# Each row kind's writers: one in Python (the handle API's) and one compiled (every kernel's:
# a prepared command at once, the command buffer, the step's new cursor). A row written
# anywhere else shows as a write of the column only a new row of that kind gets.
_ROW_WRITES = {
    "cursor (first event frame)": (re.compile(r"\b(?:m_)?evf0\[[^\]]*\]\s*=(?!=)"),
                                   {"anim/playback/cursor.py", "anim/engine/kernels_write.py"}),
    "task (type)": (re.compile(r"\b(?:m_type|\.type|types)\[[^\]]*\]\s*=(?!=)"),
                    {"anim/playback/tasks.py", "anim/engine/kernels_write.py"}),
    "fade (duration)": (re.compile(r"\bfades\.(?:m_)?dur\[[^\]]*\]\s*=(?!=)"),
                        {"anim/playback/tasks.py", "anim/engine/kernels_write.py"}),
    "gait (ids)": (re.compile(r"\b(?:m_)?id0\[[^\]]*\]\s*[,=](?!=)"),
                   {"anim/playback/tasks.py", "anim/engine/kernels_write.py"}),
    "direction (base)": (re.compile(r"\b(?:m_)?base\[[^\]]*\]\s*=(?!=)"),
                         {"anim/playback/tasks.py", "anim/engine/kernels_write.py"}),
}


# The rows given back, written back to their table's defaults (Table.settle's work) where a
# kernel gives them back: not a new row's columns but a free row's (anim.engine.store's
# TASK_DEFAULTS), so allowed beside the writers. The flush's reset (kernels_flush._reset_task)
# zeroes every column through one helper per value (``_to_zero``, ``_to_no_row``), which
# names no column: none here.
_ROW_RESETS: dict[str, set[str]] = {}


@pytest.mark.parametrize("kind", sorted(_ROW_WRITES))
def test_each_row_kind_has_one_python_and_one_compiled_writer(kind):
    """A new row of each kind is written by anim/playback's one writer (``cursor_row``,
    ``write_task_row``, ``write_fade_row``, ``write_gait_row``) and anim/engine/kernels_write.py's
    one compiled writer, which every kernel calls (cmdkernel's ``run_rows`` and
    ``apply_commands``, the step's new cursor): no other file writes a new row's columns."""
    pat, allowed = _ROW_WRITES[kind]
    where = {}
    for rel, code in _engine_files():
        for m in pat.finditer(code):
            where.setdefault(rel, code.count("\n", 0, m.start()) + 1)
    resets = _ROW_RESETS.get(kind, set())
    assert set(where) == allowed | resets, f"{kind} rows written in: {where}"
    for rel in allowed | resets:                        # once in each writer
        code = dict(_engine_files())[rel]
        assert len(pat.findall(code)) == 1, f"{kind}: {rel} writes it {len(pat.findall(code))} times"


def test_the_compiled_paths_call_the_compiled_writers():
    """cmdkernel (a command at once and the buffer) and the step's new cursor go through
    kernels_write's writers."""
    files = dict(_engine_files())
    for name in ("task_init", "cursor_init", "fade_init", "gait_init", "take_row", "mix_init", "pick_init",
                 "direction_init"):
        assert f"def {name}(" in files["anim/engine/kernels_write.py"]
        assert f"{name}(" in files["anim/engine/cmdkernel.py"], name
    assert "cursor_init(" in files["anim/engine/kernels_step.py"]
