#!/usr/bin/python3
"""Vigil performance harness (a benchmark, not a test). Run via scripts/bench.

Starts its own mosquitto (the project's config), redis-server (AOF,
appendfsync everysec) and dormancy-monitor (release build) on free loopback
ports in a temporary folder, then measures in one run, for the same stream of
N QoS 1 room messages over many rooms:

  1. publisher only      publisher -> broker, nobody subscribed (PUBACK rate)
  2. broker relay        publisher -> broker -> plain QoS 1 subscriber
  3. dormancy-monitor    publisher -> broker -> service (state committed in
                         Redis, persona/{p}/dormancy event out) -> subscriber
  4. latency, paced      stages 2 and 3 again at a fixed rate below the
                         service's capacity, for latency without queueing

Every message is an AI message "@self dormant sleep" / "@self awake",
alternating per persona, so every input changes one persona's level and
yields exactly one event naming it (message_id): the service path measured is
the full one (parse, route, Redis commit with dedupe + outbox + snapshots,
publish of the event, the retained persona and room states).

Subscribers run in their own processes (no GIL contention with the
publisher); times are CLOCK_MONOTONIC, shared by all processes.
"""

import argparse
import json
import multiprocessing as mp
import os
import re
import shutil
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402  (the integration tests' process helpers)

KEY_RE = {
    "id": re.compile(rb'"id"\s*:\s*"([^"]+)"'),
    "message_id": re.compile(rb'"message_id"\s*:\s*"([^"]+)"'),
}

FILLER = ("Looking at the failing build log again: the linker error comes from the "
          "json-c symbol version, and I think pinning the package fixes it.")


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


# --------------------------------------------------------------------------
# subscriber process


def subscriber_main(port, topic, key, expect, timeout, ready, count, conn):
    """Records (key, monotonic time) of the first arrival of each key."""
    rx = KEY_RE[key]
    seen = {}
    c = harness.new_client(f"bench-sub-{uuid.uuid4().hex[:8]}", v5=False, clean=True)
    c.max_inflight_messages_set(65535)

    def on_connect(client, userdata, flags, rc, properties=None):
        client.subscribe(topic, qos=1)

    def on_subscribe(client, userdata, mid, granted, properties=None):
        ready.set()

    def on_message(client, userdata, m):
        t = time.monotonic()
        mm = rx.search(m.payload)
        if mm:
            k = mm.group(1).decode()
            if k not in seen:
                seen[k] = t
                count.value = len(seen)

    c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
    c.connect("127.0.0.1", port, keepalive=30)
    deadline = time.monotonic() + timeout
    while len(seen) < expect and time.monotonic() < deadline:
        c.loop(timeout=0.05)
    c.disconnect()
    conn.send(seen)
    conn.close()


class Subscriber:
    def __init__(self, port, topic, key, expect, timeout):
        self.ready = mp.Event()
        self.count = mp.Value("i", 0)
        self.parent, child = mp.Pipe(duplex=False)
        self.p = mp.Process(target=subscriber_main,
                            args=(port, topic, key, expect, timeout, self.ready, self.count, child),
                            daemon=True)
        self.p.start()
        if not self.ready.wait(15):
            self.p.kill()
            raise RuntimeError(f"subscriber for {topic} did not subscribe")

    def result(self, timeout):
        if not self.parent.poll(timeout):
            self.p.kill()
            raise RuntimeError("subscriber did not report")
        seen = self.parent.recv()
        self.p.join(5)
        return seen


# --------------------------------------------------------------------------
# publisher


def make_stream(n, rooms, personas, topic_fmt, run):
    """[(key, topic, payload bytes)]; toggles per (room, persona)."""
    out = []
    toggles = {}
    ts = harness.now_ms()
    for i in range(n):
        r = i % rooms
        p = (i // rooms) % personas
        k = toggles.get((r, p), 0)
        toggles[(r, p)] = k + 1
        room, persona, mid = f"room-{run}-{r}", f"persona-{r}-{p}", f"{run}-{i}"
        body = {
            "id": mid, "room": room, "sender": persona, "sender_type": "ai",
            "text": "@self dormant sleep" if k % 2 == 0 else "@self awake",
            "ts": ts, "depth": 0, "mentions": [],
            # unknown fields are ignored by consumers: a realistic size
            "client_context": FILLER,
        }
        out.append((mid, topic_fmt.format(room=room), json.dumps(body).encode()))
    return out


WINDOW = 500  # QoS 1 messages in flight at most (sent, not yet acknowledged)


def publish(port, stream, rate=None, progress=None, window=WINDOW):
    """Publishes at QoS 1, as fast as the broker acknowledges with at most
    `window` unacknowledged (so a message's publish time is when it really
    leaves, not when it joins a client-side queue), or paced at `rate`/s.
    Returns (t_first, t_all_acked, {key: publish time})."""
    c = harness.new_client(f"bench-pub-{uuid.uuid4().hex[:8]}", v5=False, clean=True)
    c.max_inflight_messages_set(window)
    c.max_queued_messages_set(0)
    acked = [0]
    c.on_publish = lambda client, userdata, mid: acked.__setitem__(0, acked[0] + 1)
    c.connect("127.0.0.1", port, keepalive=30)
    c.loop_start()
    sent = {}
    infos = []
    t_first = time.monotonic()
    last_print = t_first
    for i, (key, topic, payload) in enumerate(stream):
        if rate:
            due = t_first + i / rate
            d = due - time.monotonic()
            if d > 0:
                time.sleep(d)
        while i - acked[0] >= window:
            time.sleep(0.0002)
        sent[key] = time.monotonic()
        infos.append(c.publish(topic, payload, qos=1))
        now = time.monotonic()
        if progress and now - last_print >= 1.0:
            last_print = now
            progress(i + 1)
    for info in infos:
        info.wait_for_publish(timeout=120)
        if not info.is_published():
            raise RuntimeError("a publish was not acknowledged within 120 s")
    t_acked = time.monotonic()
    c.disconnect()
    c.loop_stop()
    return t_first, t_acked, sent


# --------------------------------------------------------------------------


def run_stage(name, port, stream, sub_topic, key, timeout, rate=None, quiet=False):
    n = len(stream)
    sub = Subscriber(port, sub_topic, key, n, timeout)

    def progress(k):
        if not quiet:
            print(f"  [{name}] published {k}/{n}, received {sub.count.value}", flush=True)

    t0, t_acked, sent = publish(port, stream, rate=rate, progress=progress)
    # wait for the subscriber, printing progress
    deadline = time.monotonic() + timeout
    last = -1
    while sub.count.value < n and time.monotonic() < deadline:
        time.sleep(0.5)
        if not quiet and sub.count.value != last:
            last = sub.count.value
            print(f"  [{name}] published {n}/{n}, received {last}", flush=True)
    seen = sub.result(timeout=30)
    lat = [(seen[k] - sent[k]) * 1000 for k in sent if k in seen]
    t_last = max(seen.values()) if seen else t0
    return {
        "n": n, "received": len(seen), "missing": n - len(seen),
        "pub_rate": n / (t_acked - t0),
        "rate": len(seen) / (t_last - t0) if seen else 0.0,
        "p50": pct(lat, 50), "p99": pct(lat, 99), "max": max(lat) if lat else float("nan"),
        "seconds": t_last - t0,
    }


def publisher_only(port, stream):
    t0, t_acked, _ = publish(port, stream)
    return {"n": len(stream), "rate": len(stream) / (t_acked - t0), "seconds": t_acked - t0}


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000, help="messages per stage (default 20000)")
    ap.add_argument("--rooms", type=int, default=200, help="rooms (default 200)")
    ap.add_argument("--personas", type=int, default=5, help="personas per room (default 5)")
    ap.add_argument("--latency-n", type=int, default=2000, help="messages in each paced latency stage")
    ap.add_argument("--latency-rate", type=float, default=0,
                    help="msg/s of the paced stages (default: half the measured service rate)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--timeout", type=float, default=600, help="bound on each stage, seconds")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (logs)")
    ap.add_argument("--appendfsync", choices=("everysec", "always"), default="everysec",
                    help="Redis AOF fsync policy (default everysec; always = no loss on a host crash)")
    a = ap.parse_args()
    if a.n < 1 or a.rooms < 1 or a.personas < 1:
        ap.error("--n, --rooms and --personas must be positive")

    exe = harness.service_binary("dormancy-monitor", a.build_dir)
    if not os.path.exists(exe):
        sys.exit(f"error: {exe} not found (scripts/build release)")
    if harness.is_asan_build(a.build_dir):
        print("warning: this is a sanitizer build; figures will be much lower than release", flush=True)

    work = tempfile.mkdtemp(prefix="vigil-bench-")
    redis = broker = svc = None
    try:
        redis = harness.RedisServer(work, appendfsync=a.appendfsync).start()
        broker = harness.Mosquitto(work).start()
        env = {
            "VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_URL": redis.url,
            "VIGIL_REDIS_PREFIX": "bench:", "VIGIL_LOG_LEVEL": "warn",
            # keep the timed rules out of a long run: every message is a
            # manual change, so the figures measure one path
            "VIGIL_DORMANCY_NO_HUMAN_MS": "86400000", "VIGIL_DORMANCY_AI_ONLY_MS": "86400000",
        }
        svc = harness.Service("dormancy-monitor", work, env, build_dir=a.build_dir, instance="bench")
        svc.start(timeout=30)
        payload_size = len(make_stream(1, 1, 1, "x/{room}", "s")[0][2])
        print(f"Vigil bench: N={a.n} QoS 1 messages over {a.rooms} rooms x {a.personas} personas, "
              f"~{payload_size} bytes each; mosquitto :{broker.port}, redis :{redis.port}, "
              f"{os.path.relpath(exe, ROOT)}", flush=True)

        print("stage 1/4: publisher only", flush=True)
        pub_only = publisher_only(broker.port, make_stream(a.n, a.rooms, a.personas, "bench/sink/{room}/message", "p"))
        print(f"  publisher only: {pub_only['rate']:.0f} msg/s", flush=True)

        print("stage 2/4: broker relay (plain subscriber)", flush=True)
        relay = run_stage("relay", broker.port, make_stream(a.n, a.rooms, a.personas, "relay/{room}/message", "r"),
                          "relay/+/message", "id", a.timeout)

        print("stage 3/4: dormancy-monitor", flush=True)
        service = run_stage("service", broker.port, make_stream(a.n, a.rooms, a.personas, "room/{room}/message", "s"),
                            "persona/+/dormancy", "message_id", a.timeout)

        rate = a.latency_rate or max(50.0, 0.5 * service["rate"])
        ln = min(a.latency_n, a.n)
        print(f"stage 4/4: latency at {rate:.0f} msg/s ({ln} messages each)", flush=True)
        relay_l = run_stage("relay-paced", broker.port, make_stream(ln, a.rooms, a.personas, "relay/{room}/message", "rl"),
                            "relay/+/message", "id", a.timeout, rate=rate, quiet=True)
        service_l = run_stage("service-paced", broker.port,
                              make_stream(ln, a.rooms, a.personas, "room/{room}/message", "sl"),
                              "persona/+/dormancy", "message_id", a.timeout, rate=rate, quiet=True)
        alive = svc.alive()
        problems = svc.check()
        svc.terminate(timeout=20)

        ratio = service["rate"] / relay["rate"] if relay["rate"] else float("nan")
        pub_bound = relay["rate"] >= 0.9 * pub_only["rate"]
        print()
        print("=" * 78)
        print(f"Vigil bench summary  (N={a.n}, {a.rooms} rooms, {a.personas} personas/room, "
              f"~{payload_size} B payloads, QoS 1, {os.cpu_count()} CPUs)")
        print("-" * 78)
        print(f"publisher only       {pub_only['rate']:9.0f} msg/s")
        print(f"broker relay         {relay['rate']:9.0f} msg/s   under load: p50 {relay['p50']:7.1f} ms  "
              f"p99 {relay['p99']:7.1f} ms   (missing {relay['missing']})")
        print(f"dormancy-monitor     {service['rate']:9.0f} msg/s   under load: p50 {service['p50']:7.1f} ms  "
              f"p99 {service['p99']:7.1f} ms   (missing {service['missing']})")
        print(f"ratio service/relay  {ratio:9.3f}")
        print(f"paced at {rate:.0f} msg/s: relay p50 {relay_l['p50']:.2f} ms p99 {relay_l['p99']:.2f} ms;  "
              f"service p50 {service_l['p50']:.2f} ms p99 {service_l['p99']:.2f} ms  "
              f"(missing {relay_l['missing']}/{service_l['missing']})")
        print("publisher bottleneck: " + (
            "YES: the relay runs at the publisher's own rate, so the broker's real relay capacity is higher"
            if pub_bound else "no (the relay is slower than the publisher alone)"))
        if not alive or problems:
            print("service problems: " + ("; ".join(problems) if problems else "it exited during the run"))
        print("=" * 78)
        ok = service["missing"] == 0 and relay["missing"] == 0 and alive and not problems
        return 0 if ok else 1
    finally:
        for p in (svc,):
            if p is not None and p.alive():
                p.kill9()
        for p in (broker, redis):
            if p is not None:
                p.stop()
        if a.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    mp.set_start_method("fork")
    sys.exit(main())
