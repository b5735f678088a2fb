"""Helpers of the tests that run a script of scripts/ (demo, demo-*,
simulate): the environment a script runs in and the check of its --help."""

import os
import subprocess

import harness


def script_env(tmp_path, **extra):
    """This build tree's binaries (VIGIL_BUILD_DIR), temporary files under
    tmp_path, none of the caller's other VIGIL_* variables (the script sets
    its own), VIGIL_TEST_SLOW kept (default 1), then extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env.update({"VIGIL_BUILD_DIR": harness.BUILD_DIR, "TMPDIR": str(tmp_path),
                "VIGIL_TEST_SLOW": os.environ.get("VIGIL_TEST_SLOW", "1")})
    env.update(extra)
    return env


def assert_help_names(script, *words):
    """`script --help` succeeds and names every one of words."""
    r = subprocess.run([script, "--help"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    for word in words:
        assert word in out, word
