"""scripts/demo-theater --check: presence-gateway end to end (presence,
messages in and out, dormancy badges, council question and answer,
idle/away, a Last-Event-ID reconnect) on its own broker, Redis and
services, with this build tree's binaries; exits 1 unless all was seen."""

import os
import subprocess

import harness
from conftest import require_binary
from script_support import script_env

DEMO = os.path.join(harness.SOURCE_DIR, "scripts", "demo-theater")


def test_demo_theater_check(tmp_path):
    for name in ("presence-gateway", "dormancy-monitor", "chat-router"):
        require_binary(name)
    env = script_env(tmp_path)
    p = subprocess.run([DEMO, "--check"], env=env, capture_output=True, text=True, timeout=harness.scaled(120))
    print(p.stdout[-4000:], p.stderr[-2000:])
    assert p.returncode == 0
    for line in ("joel is active in", "active → sleep", "sleep → active", "Ship the uploader fix today?",
                 'answered', "joel is idle in", "joel is away in", "sent while you were away",
                 "all expected events seen"):
        assert line in p.stdout, line


def test_demo_theater_help():
    p = subprocess.run([DEMO, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "--check" in p.stdout and "--screenshot" in p.stdout
