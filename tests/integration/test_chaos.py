"""The short chaos run (scripts/chaos --short): real mosquitto and Redis,
dormancy-monitor, chat-router and wake-evaluator with two replicas each,
a steady load of room messages with known ids and random faults (kill -9
of replicas, of Redis and of mosquitto, Redis still loading its AOF, a
replica stopped past its timer lease, a change of a service's shard count
under load), compared with a fault-free run of
the same inputs: nothing lost, nothing applied twice, no dead letter, and
the oracle proves it can see a planted loss. The same for floor-control,
heartbeat, stall-resumer and council (scripts/chaos --services new --short),
checked against what each input must cause."""

import os
import re
import subprocess

import harness


def test_short_chaos_run_loses_and_doubles_nothing():
    exe = os.path.join(harness.SOURCE_DIR, "scripts", "chaos")
    env = dict(os.environ, VIGIL_BUILD_DIR=harness.BUILD_DIR)
    p = subprocess.run([exe, "--short", "--seed", "8", "--build-dir", harness.BUILD_DIR], env=env,
                       capture_output=True, timeout=harness.scaled(400), stdin=subprocess.DEVNULL)
    out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, out[-6000:]
    faults = int(re.search(r"faults injected\s+(\d+)", out).group(1))
    assert faults >= 5, out[-3000:]
    for kind in ("kill9_replica", "redis_kill9", "redis_loading", "mosquitto_kill9", "sigstop_replica",
                 "reshard"):
        assert kind in out, f"no {kind} fault:\n{out[-3000:]}"
    assert re.search(r"^\s+lost\s+0\b", out, re.M), out[-3000:]
    assert re.search(r"^\s+doubled\s+0\b", out, re.M), out[-3000:]
    assert "were both found" in out, out[-3000:]


def test_short_services_chaos_run_loses_and_doubles_nothing():
    """scripts/chaos --services new --short: floor-control, heartbeat,
    stall-resumer and council, two replicas each, under a few seconds of
    known-id inputs while kill -9 hits replicas, Redis and mosquitto; every
    input's effect present once, no dead letter, no replica crash, and the
    oracle finds the loss and doubling it plants for each service."""
    exe = os.path.join(harness.SOURCE_DIR, "scripts", "chaos")
    env = dict(os.environ, VIGIL_BUILD_DIR=harness.BUILD_DIR)
    p = subprocess.run([exe, "--services", "new", "--short", "--seed", "3", "--build-dir", harness.BUILD_DIR],
                       env=env, capture_output=True, timeout=harness.scaled(300), stdin=subprocess.DEVNULL)
    out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, out[-6000:]
    for kind in ("kill9_replica", "redis_kill9", "mosquitto_kill9"):
        assert kind in out, f"no {kind} fault:\n{out[-3000:]}"
    for name in ("floor-control", "heartbeat", "stall-resumer", "council"):
        assert re.search(rf"^\s+{name}\s+\d+ ", out, re.M), out[-3000:]
    assert re.search(r"^\s+lost\s+0\b", out, re.M), out[-3000:]
    assert re.search(r"^\s+doubled\s+0\b", out, re.M), out[-3000:]
    assert "were all found" in out, out[-3000:]
