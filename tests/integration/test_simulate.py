"""scripts/simulate (issue 15's measurement and demo): 15 scripted personas
in a room, with and without floor control. `--check` exits 1 unless, with
floor control, every human message got at least one and at most K (+ its
@mentions) answers and every persona decided on a floor event; the test
also checks the run without floor control shows the pile-on it prevents."""

import json
import os
import subprocess

import harness
from conftest import require_binary
from script_support import assert_help_names, script_env

SIMULATE = os.path.join(harness.SOURCE_DIR, "scripts", "simulate")


def test_help():
    assert_help_names(SIMULATE, "--check", "--personas", "--k", "VIGIL_BUILD_DIR")


def test_simulate_check_with_and_without_floor_control(tmp_path):
    require_binary("dormancy-monitor")
    require_binary("floor-control")
    env = script_env(tmp_path)
    r = subprocess.run([SIMULATE, "--check", "--json"], env=env, cwd=harness.SOURCE_DIR,
                       capture_output=True, timeout=harness.scaled(240), stdin=subprocess.DEVNULL)
    out = r.stdout.decode("utf-8", "replace")
    assert r.returncode == 0, f"scripts/simulate --check failed ({r.returncode}):\n{out[-5000:]}\n" \
                              f"{r.stderr.decode('utf-8', 'replace')[-3000:]}"
    res = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    floor, off = res["floor"], res["off"]
    assert all(1 <= row["answers"] <= 2 + row["mentions"] for row in floor["rows"]), floor["rows"]
    # the two kubernetes experts get the floor for both kubernetes questions
    kube = [row for row in floor["rows"] if "kubernetes" in row["label"]]
    assert all(sorted(row["answered_by"]) == ["p03", "p11"] for row in kube), kube
    # without floor control the first message is a pile-on of every persona
    assert off["rows"][0]["answers"] == 15 and off["unanswered"] == 0
    assert floor["ai_total"] < off["ai_total"]
