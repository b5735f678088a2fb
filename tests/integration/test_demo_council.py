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
from script_support import assert_help_names, script_env

DEMO = os.path.join(harness.SOURCE_DIR, "scripts", "demo-council")


def test_help():
    assert_help_names(DEMO, "--check", "VIGIL_BUILD_DIR", "fake_llm.py", "fake_a2a.py")


def test_demo_council_shows_every_handler_in_about_a_minute(tmp_path):
    require_binary("council")
    env = script_env(tmp_path)
    r = subprocess.run([DEMO, "--check"], capture_output=True, timeout=harness.scaled(180), env=env,
                       stdin=subprocess.DEVNULL)
    out = r.stdout.decode()
    assert r.returncode == 0, out[-3000:] + r.stderr.decode()[-2000:]
    assert "all expected events seen" in out
    for text in ("DELIBERATION", "QUESTION [p8]", "SESSION_PAUSED: spinning", "request for a search tool"):
        assert text.lower() in out.lower(), text
