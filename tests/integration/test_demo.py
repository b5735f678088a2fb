"""scripts/demo (issue 3, "For people"): every dormancy rule fires in under a
minute and the timeline shows it. Runs `scripts/demo --check`, which starts
its own mosquitto, redis-server, dormancy-monitor, wake-evaluator and
fake_llm.py on free loopback ports and exits 1 unless every expected event
was seen. It is pointed at an empty run folder and free ports, so it never
goes near a developer's running stack (1883/6379), and at this build tree's
binaries (VIGIL_BUILD_DIR), so it needs no release build."""

import os
import subprocess
import time

import harness
from conftest import require_binary
from script_support import assert_help_names, script_env

DEMO = os.path.join(harness.SOURCE_DIR, "scripts", "demo")

DORMANCY_TEXTS = [
    "💤 No human activity for 4s. Switch to mention-only?",
    "💤 Auto-sleeping due to extended AI-only discussion. You'll wake when a human sends any message.",
    "✨ Human activity detected. Waking from dormancy.",
    "💤 Multiple AIs already responded. Switch to mention-only?",
]


def demo_env(tmp_path):
    env = script_env(tmp_path, VIGIL_RUN_DIR=str(tmp_path / "no-stack-here"),
                     VIGIL_MQTT_PORT=str(harness.free_port()),
                     VIGIL_REDIS_PORT=str(harness.free_port()))
    env.pop("NO_COLOR", None)
    return env


def test_help():
    assert_help_names(DEMO, "--check", "--stack", "VIGIL_BUILD_DIR", "fake_llm.py")


def test_demo_shows_every_rule_in_under_a_minute(tmp_path):
    require_binary("dormancy-monitor")
    require_binary("wake-evaluator")
    t0 = time.monotonic()
    r = subprocess.run([DEMO, "--check", "--private"], env=demo_env(tmp_path), cwd=harness.SOURCE_DIR,
                       capture_output=True, timeout=harness.scaled(180), stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0, f"scripts/demo --check failed ({r.returncode}):\n{out[-6000:]}\n{err[-3000:]}"
    assert "✔ all" in out and "missing:" not in out
    for text in DORMANCY_TEXTS:
        assert text in out, f"the timeline lacks {text!r}:\n{out[-4000:]}"
    # every phase header, the LLM's two decisions and the economics block
    for n in range(1, 7):
        assert f"Phase {n}/6" in out
    assert "WAKE  (tier smart, via llm" in out and "stay asleep  (tier smart, via llm" in out
    assert "[wake-decision]" in out and "Token economics of" in out and "tokens spent" in out
    assert "\x1b[" not in out, "colours only on a terminal"
    assert took < harness.scaled(60), f"the demo took {took:.1f}s"
    # it removed its temporary folder (kept only on failure)
    assert not [p for p in os.listdir(tmp_path) if p.startswith("vigil-demo-")]
