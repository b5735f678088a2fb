"""scripts/demo-council (issue 13): the council in about a minute. Runs it
with --check, which starts its own mosquitto, redis-server, council,
fake_llm.py and fake_a2a.py on free loopback ports and exits 1 unless every
expected event was seen (every phase, a deliberation per loop, every
handler, the answered question, research over A2A, the tool requests, the
circuit breaker, the end)."""

import os
import subprocess

import harness
from conftest import require_binary

DEMO = os.path.join(harness.SOURCE_DIR, "scripts", "demo-council")


def test_help():
    r = subprocess.run([DEMO, "--help"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr.decode()
    for word in ("--check", "VIGIL_BUILD_DIR", "fake_llm.py", "fake_a2a.py"):
        assert word in r.stdout.decode()


def test_demo_council_shows_every_handler_in_about_a_minute(tmp_path):
    require_binary("council")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env.update({"VIGIL_BUILD_DIR": harness.BUILD_DIR, "TMPDIR": str(tmp_path),
                "VIGIL_TEST_SLOW": os.environ.get("VIGIL_TEST_SLOW", "1")})
    r = subprocess.run([DEMO, "--check"], capture_output=True, timeout=harness.scaled(180), env=env,
                       stdin=subprocess.DEVNULL)
    out = r.stdout.decode()
    assert r.returncode == 0, out[-3000:] + r.stderr.decode()[-2000:]
    assert "all expected events seen" in out
    for text in ("DELIBERATION", "QUESTION [p8]", "SESSION_PAUSED: spinning", "request for a search tool"):
        assert text.lower() in out.lower(), text
