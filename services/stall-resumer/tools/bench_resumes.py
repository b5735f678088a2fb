#!/usr/bin/python3
"""Rough scale figures for stall-resumer (not a test): its own broker and
Redis on free ports, one service process (build/release unless
VIGIL_BUILD_DIR says otherwise), then
  1. intake: N activity signals over N/10 agents, published QoS 1 with a
     window; time until the service counted them all (vigil_inputs_total);
  2. resumes: A stalled agents (status 13 h old) and A tasks; time from the
     last status to the A-th distinct resume, and that no task was claimed
     twice.
Usage: services/stall-resumer/tools/bench_resumes.py [--signals N] [--agents A] [--replicas R]"""

import argparse
import os
import sys
import tempfile
import time
import shutil

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
os.environ.setdefault("VIGIL_BUILD_DIR", os.path.join(ROOT, "build", "release"))
import harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--signals", type=int, default=20000)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--replicas", type=int, default=1)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vigil-bench-stall-")
    redis = harness.RedisServer(tmp, appendfsync="everysec").start()
    broker = harness.Mosquitto(tmp).start()
    svcs = []
    try:
        for i in range(a.replicas):
            env = {"VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_URL": redis.url, "VIGIL_LOG_LEVEL": "warn",
                   "VIGIL_STALL_SCAN_MS": "1000", "VIGIL_TICK_MS": "50",
                   "VIGIL_SHARD": f"{i}/{a.replicas}"}
            svcs.append(harness.Service("stall-resumer", tmp, env).start())
        col = harness.Collector(broker.port, topics=("agent/+/resume",)).start()
        pub = harness.ReliablePublisher(broker.port)
        now = harness.now_ms()
        items = [(f"agent/b{i % (a.signals // 10)}/activity",
                  {"id": f"s{i}", "agent": f"b{i % (a.signals // 10)}", "source": "GIT_COMMIT",
                   "detail": "work", "ts": now}) for i in range(a.signals)]
        t0 = time.monotonic()
        pub.run(items, timeout=600)
        # every replica sees every message (each acts on its shard's agents)
        seen = lambda: min(s.metric("vigil_inputs_total") or 0 for s in svcs)  # noqa: E731
        harness.wait_until(lambda: seen() >= a.signals, 600, "all signals counted", interval=0.1)
        t1 = time.monotonic() - t0
        print(f"intake: {a.signals} signals over {a.signals // 10} agents in {t1:.2f}s "
              f"= {a.signals / t1:.0f}/s ({a.replicas} replica(s))")
        tasks = [("planner/task", {"id": f"t{i}", "title": f"task {i}", "priority": i % 10, "ts": now})
                 for i in range(a.agents)]
        pub.run(tasks, timeout=600)
        store = harness.StoreView(redis, "vigil:", "stall-resumer")
        harness.wait_until(lambda: len((store.state("planner:tasks")[1] or {"open": []})["open"]) == a.agents,
                           600, "every task in the pool", interval=0.1)
        old = harness.now_ms() - 13 * 3600_000
        stalled = [(f"agent/z{i}/status", {"agent": f"z{i}", "fsm_state": "IDLE", "ts": old})
                   for i in range(a.agents)]
        t0 = time.monotonic()
        pub.run(stalled, timeout=600)
        got = col.wait_count("agent/+/resume", a.agents, timeout=600)
        t2 = time.monotonic() - t0
        claimed = [e["claimed_task"]["id"] for e in got.values() if "claimed_task" in e]
        dup = len(claimed) - len(set(claimed))
        print(f"resumes: {a.agents} stalled agents resumed in {t2:.2f}s (scan every 1 s), "
              f"{len(claimed)} tasks claimed, {dup} claimed twice")
        pub.stop()
        col.stop()
    finally:
        for s in svcs:
            try:
                s.terminate(timeout=20)
            except Exception:  # noqa: BLE001
                pass
        broker.stop()
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
