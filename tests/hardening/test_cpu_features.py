"""Same bits on every machine: the bit-defined paths give the same bytes with numpy's AVX2
and AVX-512 kernels switched off (NPY_DISABLE_CPU_FEATURES) as with them on.

A child process runs with every numpy dispatch target from AVX2 up switched off (the
names from numpy itself: tests/simd.py) and this process keeps them; both hash the
numpy quaternion paths (slerp, the rate-scaled turn, the turn angle), the numpy root
motion, anim.maths.detmath's array forms, and the trace with poses of a real fight (600
updates of fight_2min.toml: grabs, throws and their turns, hits, walks), with the whole
state's checksum (Game.checksum) and the snapshot's bytes at its end: the hashes must
be equal. .ci/run also runs the default suite once more with the same switch (with the slow
tests marked ``bits``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from simd import avx_targets, disabled_env_value, enabled_targets

from .support import REPO

HASHES = textwrap.dedent(r"""
    import hashlib, io, json, sys
    from pathlib import Path
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from simd import enabled_targets
    from scuffle import parse_scenario, run_scenario
    from scuffle.anim.maths import detmath, quat
    from scuffle.systems.motion import root_motion

    def h(*arrays):
        d = hashlib.sha256()
        for a in arrays:
            d.update(np.ascontiguousarray(a).tobytes())
        return d.hexdigest()

    rng = np.random.default_rng(5)
    n = 50_000
    a = rng.standard_normal((4, n)); a /= np.linalg.norm(a, axis=0)
    b = np.where(rng.random(n) < 0.3, a + rng.standard_normal((4, n)) * 1e-3, rng.standard_normal((4, n)))
    b /= np.linalg.norm(b, axis=0)
    a, b = a.astype(np.float32), b.astype(np.float32)
    t = rng.uniform(-0.1, 1.1, n).astype(np.float32)
    rate = rng.choice(np.array([0.75, 0.8, 0.9, 1.0], np.float32), n)
    vel = (rng.standard_normal((3, n)) * 3).astype(np.float32)
    heading = rng.uniform(-180.0, 180.0, n)
    tags = rng.random(n) < 0.2
    out = {
        "slerp": h(quat.slerp(a, b, t)),
        "scale_turn": h(quat.scale_turn(a * np.sign(a[3]), rate)),
        "angle": h(quat.angle_about_z(a.astype(np.float64))),
        "root_motion": h(*root_motion(vel, tags, a, ~tags, heading, 1 / 30, 50.0)),
        "detmath": h(detmath.acos(rng.uniform(-1, 1, n)), *detmath.sin_cos_deg(heading),
                     detmath.cos_pi(rng.uniform(0, 1, n)), detmath.atan2_deg(vel[0], vel[1])),
    }
    head, *blocks = Path(sys.argv[2]).read_text().split("\n[[commands]]\n")
    blocks = [b for b in blocks if int(b.split("update = ")[1].split("\n")[0]) < 600]
    text = "\n[[commands]]\n".join([head.replace("updates = 3600", "updates = 600", 1), *blocks])
    trace = io.StringIO()
    game = run_scenario(parse_scenario(text, "fight.toml"), trace, pose=True)
    out["fight"] = hashlib.sha256(trace.getvalue().encode()).hexdigest()
    out["checksum"] = game.checksum()                 # the whole state's digest (Game.checksum)
    out["snapshot_bytes"] = hashlib.sha256(game.snapshot().to_bytes()).hexdigest()
    game.close()
    out["enabled"] = enabled_targets()
    print(json.dumps(out))
""")


def _hashes(env: dict) -> dict:
    r = subprocess.run([sys.executable, "-c", HASHES, str(REPO / "tests"),
                        str(REPO / "tests" / "hardening" / "fight_2min.toml")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1])


def test_the_switch_names_numpys_own_targets():
    """The value comes from numpy's dispatch list, so it cannot silently name nothing."""
    value = disabled_env_value()
    assert value.split() == avx_targets()
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=value)
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "from simd import enabled_targets; print(enabled_targets())", str(REPO / "tests")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.slow
def test_bit_defined_paths_equal_with_and_without_avx():
    """The parent with this CPU's targets (AVX-512 on the EPYCs this runs on), the child with
    none from AVX2 up: the same bytes for every bit-defined path and the fight's trace."""
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    on = _hashes(env)
    off = _hashes(dict(env, NPY_DISABLE_CPU_FEATURES=disabled_env_value()))
    assert off["enabled"] == []
    assert on["enabled"] == enabled_targets() or "NPY_DISABLE_CPU_FEATURES" in os.environ
    for key in ("slerp", "scale_turn", "angle", "root_motion", "detmath", "fight"):
        assert on[key] == off[key], key
