"""scripts/demo-heartbeat (issue 11, "For people"): one run that stays
silent and one that speaks, in about a minute. Runs `--check`, which starts
its own mosquitto, redis-server, heartbeat and fake_llm.py on free loopback
ports (this build tree's binary, VIGIL_BUILD_DIR) and exits 1 unless every
expected event was seen."""

import os
import subprocess
import time

import harness
from conftest import require_binary
from script_support import assert_help_names, script_env

DEMO = os.path.join(harness.SOURCE_DIR, "scripts", "demo-heartbeat")


def test_help():
    assert_help_names(DEMO, "--check", "VIGIL_BUILD_DIR", "fake_llm.py")


def test_demo_shows_a_silent_run_and_one_that_speaks(tmp_path):
    require_binary("heartbeat")
    env = script_env(tmp_path)
    t0 = time.monotonic()
    r = subprocess.run([DEMO, "--check"], env=env, cwd=harness.SOURCE_DIR, capture_output=True,
                       timeout=harness.scaled(180), stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0, f"scripts/demo-heartbeat --check failed ({r.returncode}):\n{out[-6000:]}\n{err[-3000:]}"
    assert "✔ all expected events seen" in out and "missing:" not in out
    assert "HEARTBEAT_OK: stays silent" in out
    assert "says (proactive, urgent reminder)" in out
    for reason in ("live-exchange", "unanswered", "quiet-hours"):
        assert f"skipped ({reason}:" in out
    assert took < harness.scaled(90), f"the demo took {took:.1f}s"
    assert not [p for p in os.listdir(tmp_path) if p.startswith("vigil-demo-heartbeat-")]
