#!/usr/bin/python3
"""bench_heartbeat.py - heartbeat runs per second with many personas.

Starts its own mosquitto, redis-server, tests/support/fake_llm.py (instant
HEARTBEAT_OK answers) and one heartbeat (build/release, or VIGIL_BUILD_DIR)
on free loopback ports, gives N personas a heartbeat with an active interval
of INTERVAL ms, and counts the run outcomes published during SECONDS after
a warm-up. Every run is a timer firing, a job on the stream, one HTTP call
and a commit. Usage:

    /usr/bin/python3 scripts/bench_heartbeat.py [N=500] [INTERVAL_MS=1000] [SECONDS=15]
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    interval = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 15
    build = os.environ.get("VIGIL_BUILD_DIR") or os.path.join(ROOT, "build", "release")
    work = tempfile.mkdtemp(prefix="vigil-bench-heartbeat-")
    redis = harness.RedisServer(work, appendfsync="everysec").start()
    broker = harness.Mosquitto(work).start()
    llm = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "tests", "support", "fake_llm.py"),
                            "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    port = int(llm.stdout.readline().split()[1])
    env = {"VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_URL": redis.url, "VIGIL_LOG_LEVEL": "warn",
           "VIGIL_TICK_MS": "50", "VIGIL_LLM_URL": f"http://127.0.0.1:{port}/v1",
           "VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": str(interval), "VIGIL_HEARTBEAT_SKIP_STRETCH": "1",
           "VIGIL_HEARTBEAT_RECENT_MS": "3600000"}
    svc = harness.Service("heartbeat", work, env, build_dir=build).start()
    col = harness.Collector(broker.port, topics=("heartbeat/+/run",)).start()
    pub = harness.Publisher(broker.port).start()
    try:
        pub.publish_many([(f"heartbeat/p{i}/config", {"persona": f"p{i}", "user": "u", "room": f"r{i % 50}",
                                                      "enabled": True, "checklist": "check"})
                          for i in range(n)])
        time.sleep(interval / 1000 * 3)  # warm-up
        a = len(col.snapshot())
        t0 = time.monotonic()
        time.sleep(seconds)
        b = len(col.snapshot())
        took = time.monotonic() - t0
        oks = sum(1 for m in col.snapshot()[a:b] if b'"outcome":"ok"' in m.payload)
        ideal = n * 1000 / interval
        print(f"{n} personas, interval {interval} ms: {(b - a) / took:.0f} runs/s "
              f"({oks} ok of {b - a}); the schedule asks for {ideal:.0f} runs/s")
    finally:
        pub.stop()
        col.stop()
        svc.terminate()
        llm.kill()
        llm.wait()
        broker.stop()
        redis.stop()


if __name__ == "__main__":
    main()
