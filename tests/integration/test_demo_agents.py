"""scripts/demo-agents (issue 12): stall-resumer shown in about half a
minute. Runs `scripts/demo-agents --check`, which starts its own mosquitto,
redis-server and stall-resumer on free loopback ports with thresholds of
seconds (VIGIL_STALL_* variables) and exits 1 unless every expected event
was seen; it uses this build tree's binaries (VIGIL_BUILD_DIR)."""

import os
import subprocess
import time

import harness
from conftest import require_binary
from script_support import assert_help_names, script_env

DEMO = os.path.join(harness.SOURCE_DIR, "scripts", "demo-agents")


def demo_env(tmp_path):
    env = script_env(tmp_path)
    env.pop("NO_COLOR", None)
    return env


def test_help():
    assert_help_names(DEMO, "--check", "VIGIL_BUILD_DIR", "VIGIL_STALL_AUTORESUME_MS=24000",
                      "VIGIL_STALL_SCAN_MS")


def test_demo_shows_stall_resumer_in_about_a_minute(tmp_path):
    require_binary("stall-resumer")
    t0 = time.monotonic()
    r = subprocess.run([DEMO, "--check"], env=demo_env(tmp_path), cwd=harness.SOURCE_DIR,
                       capture_output=True, timeout=harness.scaled(180), stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0, f"scripts/demo-agents --check failed ({r.returncode}):\n{out[-6000:]}\n{err[-3000:]}"
    assert "✔ all" in out and "missing:" not in out
    for n in range(1, 6):
        assert f"Phase {n}/5" in out
    assert "confidence 0.595" in out and "[in a tool call]" in out
    assert "🔴 auto-resume" in out and "🔄 claimed task-9" in out and "no task left to claim" in out
    assert "🟢 FRESH" in out and "🔴 AUTO-RESUME" in out  # vigil agents status
    assert "\x1b[" not in out, "colours only on a terminal"
    assert took < harness.scaled(75), f"the demo took {took:.1f}s"
    assert not [p for p in os.listdir(tmp_path) if p.startswith("vigil-demo-agents-")]
