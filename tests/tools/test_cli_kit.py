"""The command line: one error form ``scuffle SUB: error: ...``,
examples in every ``--help``, conventional metavars, outputs only where asked, and the
cold compile announced once by the library on the ``scuffle`` logger."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scuffle.cli import commands

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scuffle_cli import run_scuffle  # noqa: E402

from scuffle.anim.engine.coldstart import COMPILE_MESSAGE  # noqa: E402

ENV = dict(SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")
NAMES = [c.name for c in commands()]


@pytest.mark.parametrize("name", NAMES)
def test_every_help_has_examples_of_its_own_command(name):
    r = run_scuffle(name, "--help", env=ENV)
    assert r.returncode == 0, r.stderr
    head, _, examples = r.stdout.partition("\nexamples:\n")
    lines = [ln.strip() for ln in examples.splitlines() if ln.strip()]
    assert len(lines) >= 1 and all(ln.startswith(f"scuffle {name}") for ln in lines), r.stdout
    # conventional metavars: none made up from a dest name (HUMANS, SCALAR_UPDATES, lowercase positionals)
    usage = head.split("\n\n")[0]
    for made_up in ("HUMANS", "SCALAR_UPDATES", "UPDATES", "HUMAN ", "FRAME_EVERY", "GIF_FROM", " scenario",
                    "ANIM_ID"):
        assert made_up not in usage, (made_up, usage)


def test_the_top_level_help_has_examples():
    r = run_scuffle("--help")
    assert "examples:\n  scuffle demo" in r.stdout and "scuffle COMMAND --help" in r.stdout


ERRORS = {
    "run": ["run", "missing.toml"],
    "clip": ["clip", "missing.desc", "missing.keys"],
    "lint": ["lint", "missing.res"],
    "diff": ["diff", "a.jsonl", "b.jsonl"],
    "survey": ["survey", "missing_dir/x.res"],
    "csv2trace": ["csv2trace", "missing.csv", "out.jsonl"],
    "bench": ["bench", "--humans", "0"],
    "demo": ["demo", "--headless", "--seconds", "-1"],
    "view": ["view", "missing.res", "--headless"],
    "warm": ["warm", "--check=yes"],
}


@pytest.mark.parametrize("name", NAMES)
def test_every_subcommand_errors_as_scuffle_sub_error(name, tmp_path):
    r = run_scuffle(*ERRORS[name], cwd=tmp_path, env=ENV)
    lines = r.stderr.splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith(f"scuffle {name}: error: "), r.stderr
    assert "Traceback" not in r.stderr


def test_a_clip_name_goes_where_an_id_goes_on_the_command_line(tmp_path):
    res = Path(__file__).resolve().parents[2] / "game" / "fighters" / "demo.res"
    by_name = run_scuffle("clip", res, "--id", "THROW_BACK", "--json")
    by_id = run_scuffle("clip", res, "--id", "151", "--json")
    assert by_name.returncode == 0 and by_name.stdout == by_id.stdout
    bad = run_scuffle("clip", res, "--id", "THROW_BAK")
    assert bad.returncode == 2
    assert "--id: no clip named 'THROW_BAK'" in bad.stderr and "did you mean 'THROW_BACK'" in bad.stderr


# ---------------------------------------------------------------- outputs only where asked


def test_demo_record_and_trace_write_only_those_files(tmp_path):
    r = run_scuffle("demo", "--headless", "--seconds", "1", "--record", "s.toml", "--trace", "t.jsonl",
                    cwd=tmp_path, env=ENV)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["s.toml", "t.jsonl"]
    r = run_scuffle("demo", "--headless", "--seconds", "1", "--trace", "t2.jsonl", "--out", "pics",
                    cwd=tmp_path, env=ENV)
    assert r.returncode == 0, r.stderr
    assert {"frame_0001.0s.png", "contact_sheet.png", "summary.json"} <= {p.name for p in (tmp_path / "pics").iterdir()}
    assert (tmp_path / "t2.jsonl").read_bytes() == (tmp_path / "t.jsonl").read_bytes()


# ---------------------------------------------------------------- the cold compile


def _python(code: str, cache: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), **ENV)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_the_library_announces_a_cold_cache_once_through_logging(tmp_path):
    # An empty NUMBA_CACHE_DIR is a cold cache; nothing compiles here (no kernel is called).
    code = ("from scuffle.anim.playback import warmup\n"
            "print(warmup.kernels_cached(), warmup.note_cold_compile(), warmup.note_cold_compile())\n")
    r = _python(code, tmp_path / "numba")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "False"]
    # an unconfigured host sees it on stderr (logging's last resort: WARNING and above), once
    assert r.stderr.splitlines() == [COMPILE_MESSAGE]
    assert "the others in the background" in COMPILE_MESSAGE
    assert "machine" not in r.stderr


@pytest.mark.slow
def test_a_host_can_silence_the_notice(tmp_path):
    code = ("import logging; logging.getLogger('scuffle').setLevel(logging.ERROR)\n"
            "from scuffle.anim.playback import warmup\n"
            "print(warmup.note_cold_compile())\n")
    r = _python(code, tmp_path / "numba")
    assert r.stdout.split() == ["True"] and r.stderr == ""


@pytest.mark.slow
def test_a_hosts_first_step_on_a_cold_cache_says_so_once(tmp_path_factory):
    """A Game's first three steps in a fresh process on an empty cache (the session's one
    cold first step, tests/coldcache.py, whose other checks are tests/hardening/test_compile_aside.py's)."""
    from coldcache import cold_first_step

    r = cold_first_step(tmp_path_factory)["first"]
    assert r["code"] == 0, r["stderr"]
    assert r["stderr"].count("compiling the animation kernels (once per install") == 1


@pytest.mark.slow
def test_the_benchs_parts_of_the_animation_step_print_indented_under_it():
    r = run_scuffle("bench", "--humans", "2", "--updates", "2", "--scalar-updates", "1", "--no-compile-time")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  AnimationStep "))
    assert lines[at + 1].startswith("    task step ") and lines[at + 2].startswith("    pose (sample, blend, bones) ")
    systems = [ln for ln in lines[lines.index(next(ln for ln in lines if ln.startswith("where the time goes"))) + 1:]
               if ln.startswith("  ") and not ln.startswith("    ")]
    assert {ln.split()[0] for ln in systems} == {"AnimationStep", "EventDispatch", "DeferredFlush", "StateUpdate",
                                                  "Actions", "PairedPlacement"}
