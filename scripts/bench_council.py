#!/usr/bin/python3
"""bench-council: council's loop throughput and latency.

Starts its own mosquitto, redis-server, tests/support/fake_llm.py (answering
at once) and a council (VIGIL_BUILD_DIR, else build/release) on free
loopback ports in a temporary folder; then U users start a session each at
the same moment, every session running L loops back to back
(VIGIL_COUNCIL_LOOP_MS=0; Sol alternates note:/search: so the breaker never
trips). Reports loops committed per second (each loop: a durable job, four
LLM calls, one atomic commit of the deliberation and action), LLM calls per
second, and the start-to-first-action latency p50/p99. Exit status 1 if a
session did not finish all its loops.

    scripts/bench-council [--users U] [--loops L] [--no-build]
"""

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("VIGIL_BUILD_DIR", os.path.join(ROOT, "build", "release"))
os.environ.setdefault("VIGIL_SOURCE_DIR", ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
from council_support import ADVISORS, FakeLLM, sol  # noqa: E402


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description="council loop throughput (see the module doc)")
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--loops", type=int, default=10)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="vigil-bench-council-")
    redis = harness.RedisServer(d, appendfsync="everysec").start()
    broker = harness.Mosquitto(d).start()
    llm = FakeLLM(d)
    llm.control(rules=[sol("search: more", regex=r"loop \d*[02468] of"), sol("note: ok")] + ADVISORS)
    env = {"VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_URL": redis.url, "VIGIL_REDIS_PREFIX": "b:",
           "VIGIL_TICK_MS": "10", "VIGIL_LOG_LEVEL": "warn", "VIGIL_LLM_URL": llm.url,
           "VIGIL_LLM_RETRIES": "0", "VIGIL_COUNCIL_LOOP_MS": "0",
           "VIGIL_COUNCIL_MAX_LOOPS": str(a.loops), "VIGIL_COUNCIL_AUTO_START": "0"}
    svc = harness.Service("council", d, env, instance="council-bench").start()
    col = harness.Collector(broker.port, topics=("council/+/event",)).start()
    pub = harness.Publisher(broker.port).start()
    ok = False
    try:
        sent = {}
        t0 = time.monotonic()
        for i in range(a.users):
            s = f"b{i}"
            sent[s] = time.monotonic()
            pub.publish(f"council/u{i}/control", {"action": "start", "session": s})

        def ended():
            return len(col.find("council/+/event", lambda e: e["type"] == "session_ended")) >= a.users

        harness.wait_until(ended, 600, "every session to finish its loops", interval=0.1)
        elapsed = time.monotonic() - t0
        first, loops = {}, 0
        for m in col.snapshot():
            e = m.json()
            if e["type"] == "action":
                loops += 1
                first.setdefault(e["session"], m.t)
        lat = [(first[s] - sent[s]) * 1000 for s in sent if s in first]
        ok = loops == a.users * a.loops
        print(f"users {a.users}, loops per session {a.loops}: {loops} loops in {elapsed:.2f} s")
        print(f"  {loops / elapsed:.0f} loops/s, {4 * loops / elapsed:.0f} LLM calls/s")
        print(f"  start -> first action: p50 {pct(lat, 50):.0f} ms, p99 {pct(lat, 99):.0f} ms")
        print("  nothing lost" if ok else f"  LOST: expected {a.users * a.loops} actions")
    finally:
        for x in (col, pub):
            x.stop()
        svc.terminate()
        llm.stop()
        broker.stop()
        redis.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
