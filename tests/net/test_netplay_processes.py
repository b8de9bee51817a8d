"""Netplay between two processes on 127.0.0.1 (``scuffle demo --host`` / ``--join``,
headless, the AIs playing) over a lossy, late simulated link: no desync, the same
confirmed checksum on both, and ``scuffle run --checksum`` of the recording (one
process fed the confirmed inputs) gives it too; a peer that stops answering ends the
other's session with a message, not a hang. Every wait is bounded."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

RATE = "150"              # updates per second of wall time (the latency is in updates: it scales)

WAIT = 90                 # s at most for a pair of processes (a cold numba cache compiles first)


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scuffle(*args, **kw) -> subprocess.Popen:
    env = dict(os.environ, SDL_VIDEODRIVER="dummy", PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "scuffle", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def _pair(tmp: Path, seed: int, seconds: str, extra=()):
    port = _port()
    common = ["demo", "--headless", "--seconds", seconds, "--rate", RATE, "--seed", str(seed), "--timeout", "10",
              *extra]
    host = _scuffle(*common, "--host", f"127.0.0.1:{port}", "--out", str(tmp / "host"),
                    "--record", str(tmp / "host.toml"))
    time.sleep(0.2)
    join = _scuffle(*common, "--join", f"127.0.0.1:{port}", "--out", str(tmp / "join"))
    out = []
    for p in (host, join):
        try:
            o, e = p.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            host.kill()
            join.kill()
            raise AssertionError(f"a peer did not finish in {WAIT} s")
        out.append((p.returncode, o, e))
    return out


@pytest.mark.bits
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_processes_agree_over_a_lossy_late_link(tmp_path, seed):
    """20% loss, 6 updates late each way, input delay 2, rollback up to 8."""
    seconds = "8" if seed == 1 else "3"
    res = _pair(tmp_path, seed, seconds, ["--sim-loss", "0.2", "--sim-delay", "6"])
    for code, o, e in res:
        assert code == 0, f"exit {code}:\n{o}\n{e}"
    host = json.loads((tmp_path / "host" / "summary.json").read_text())["netplay"]
    join = json.loads((tmp_path / "join" / "summary.json").read_text())["netplay"]
    updates = int(float(seconds) * 30)
    for n in (host, join):
        assert n["desyncs"] == 0 and n["confirmed_update"] == updates and n["checks"] >= updates // 30
        assert set(n) >= {"desyncs", "rollbacks", "max_depth", "confirmed_update", "confirmed_checksum"}
        assert n["max_depth"] <= 8
    assert host["confirmed_checksum"] == join["confirmed_checksum"]
    assert host["rollbacks"] + join["rollbacks"] > 0
    if seed == 1:
        r = subprocess.run([sys.executable, "-m", "scuffle", "run", str(tmp_path / "host.toml"), "--checksum"],
                           capture_output=True, text=True, timeout=WAIT)
        assert r.returncode == 0, r.stderr
        assert f"checksum {host['confirmed_checksum']}" in r.stdout.splitlines()


def test_a_peer_that_stops_answering_ends_the_session_with_a_message(tmp_path):
    port = _port()
    common = ["demo", "--headless", "--seconds", "600", "--rate", "60", "--timeout", "1.5"]
    host = _scuffle(*common, "--host", f"127.0.0.1:{port}", "--out", str(tmp_path / "host"))
    join = _scuffle(*common, "--join", f"127.0.0.1:{port}", "--out", str(tmp_path / "join"))
    try:
        end = time.monotonic() + WAIT
        line = ""
        while "connected" not in line and time.monotonic() < end:     # the joiner's log line, bounded
            line = join.stderr.readline()
            if not line and join.poll() is not None:
                break
        assert "connected" in line, "the peers never connected"
        time.sleep(0.5)
        join.send_signal(signal.SIGKILL)                               # gone without a word
        o, e = host.communicate(timeout=30)
    finally:
        for p in (host, join):
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
    assert host.returncode == 1
    assert "no word from the peer for 1.5 s" in e and "Traceback" not in e
