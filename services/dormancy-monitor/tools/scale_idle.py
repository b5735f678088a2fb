#!/usr/bin/python3
"""Measures issue 3's scale claim for dormancy-monitor (a measurement, not a
test): with ROOMS quiet rooms of 5 personas each (every room holding its
pending no-human and AI-only deadlines in the timer store), how much CPU does
the idle service use, and how late does a due deadline fire compared with one
tick (VIGIL_TICK_MS)?

Usage: /usr/bin/python3 services/dormancy-monitor/tools/scale_idle.py \
           [--bin build/services/dormancy-monitor/dormancy-monitor] [--rooms 10000]

Starts its own mosquitto and redis-server on free loopback ports in a
temporary folder. Lateness is read two ways: from the suggestion's `reason`
("no human message for X ms (threshold T ms)": X - T, on the service's own
clock) and end to end (suggestion received - message published - T).
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import functools

import paho.mqtt.client as mqtt

print = functools.partial(print, flush=True)  # noqa: A001 - progress as it happens


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/services/dormancy-monitor/dormancy-monitor")
    ap.add_argument("--rooms", type=int, default=10000)
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--tick-ms", type=int, default=1000)
    ap.add_argument("--shared-personas", action="store_true",
                    help="the same 5 personas in every room (default: 5 of its own per room)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (logs)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="dm-scale-")
    procs = []
    try:
        mport, rport, hport = free_port(), free_port(), free_port()
        with open(os.path.join(tmp, "mosquitto.conf"), "w") as f:
            f.write(f"listener {mport} 127.0.0.1\nallow_anonymous true\n"
                    "max_queued_messages 0\nmax_queued_bytes 0\n")
        procs.append(subprocess.Popen(["mosquitto", "-c", os.path.join(tmp, "mosquitto.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(["redis-server", "--port", str(rport), "--dir", tmp,
                                       "--save", "", "--appendonly", "yes",
                                       "--appendfsync", "everysec"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        env = dict(os.environ, VIGIL_MQTT_URL=f"mqtt://127.0.0.1:{mport}",
                   VIGIL_REDIS_URL=f"redis://127.0.0.1:{rport}/0",
                   VIGIL_HTTP_ADDR=f"127.0.0.1:{hport}", VIGIL_TICK_MS=str(args.tick_ms),
                   VIGIL_LOG_LEVEL="warn",
                   # the bulk rooms' deadlines stay pending through the run
                   VIGIL_DORMANCY_NO_HUMAN_MS="3600000", VIGIL_DORMANCY_AI_ONLY_MS="7200000")
        svc = subprocess.Popen([args.bin], env=env, stdout=subprocess.DEVNULL,
                               stderr=open(os.path.join(tmp, "svc.log"), "w"))
        procs.append(svc)
        time.sleep(1.0)

        got = {}
        lock = threading.Lock()

        def on_message(_c, _u, msg):
            with lock:
                got.setdefault(msg.topic, []).append((time.monotonic(), json.loads(msg.payload)))

        sub = mqtt.Client(client_id="scale-sub")
        sub.on_message = on_message
        sub.connect("127.0.0.1", mport)
        sub.subscribe("persona/+/suggestion", qos=1)
        sub.loop_start()

        pub = mqtt.Client(client_id="scale-pub")
        pub.max_inflight_messages_set(1000)
        pub.max_queued_messages_set(0)
        pub.connect("127.0.0.1", mport)
        pub.loop_start()

        # 1. ROOMS quiet rooms of 5 personas, each with 2 pending deadlines
        t0 = time.monotonic()
        last = None
        for r in range(args.rooms):
            for p in range(5):
                sender = f"p{p}" if args.shared_personas else f"r{r}p{p}"
                body = {"id": f"r{r}p{p}", "room": f"room{r}", "sender": sender,
                        "sender_type": "ai", "text": "a thought"}
                last = pub.publish(f"room/room{r}/message", json.dumps(body), qos=1)
        last.wait_for_publish()
        key = "vigil:dormancy-monitor:timers:0"
        while True:
            n = int(subprocess.check_output(["redis-cli", "-p", str(rport), "ZCARD", key]))
            if n >= 2 * args.rooms:
                break
            if time.monotonic() - t0 > 1800:
                sys.exit(f"only {n} timers after 30 min")
            time.sleep(1.0)
        load_s = time.monotonic() - t0
        print(f"committed {args.rooms} rooms x 5 personas ({5 * args.rooms} messages) in "
              f"{load_s:.1f} s; {n} pending deadlines in the timer store")
        # the outbox (events, retained states) drains after the commits
        outbox = "vigil:dormancy-monitor:outbox:0"
        while int(subprocess.check_output(["redis-cli", "-p", str(rport), "LLEN", outbox])) > 0:
            time.sleep(0.5)
        print(f"outbox drained {time.monotonic() - t0:.1f} s after the first message")

        # 2. idle CPU
        time.sleep(5.0)
        c0, w0 = cpu_seconds(svc.pid), time.monotonic()
        time.sleep(args.idle_seconds)
        c1, w1 = cpu_seconds(svc.pid), time.monotonic()
        idle_pct = 100.0 * (c1 - c0) / (w1 - w0)
        print(f"idle CPU over {w1 - w0:.0f} s: {c1 - c0:.2f} s of CPU = {idle_pct:.2f}% of one core")

        # 3. deadline lateness: rooms whose persona has a 2 s threshold
        thr = 2000
        sent = {}
        for i in range(args.samples):
            p, room = f"fast{i}", f"fast-room{i}"
            meta = {"persona": p, "name": p, "rooms": [room], "role": "x", "expertise_domains": [],
                    "confidence_levels": {}, "availability": 1,
                    "dormancy": {"noHumanActivityThreshold": thr}}
            pub.publish(f"persona/{p}/meta", json.dumps(meta), qos=1).wait_for_publish()
            msg = {"id": f"fast{i}", "room": room, "sender": p, "sender_type": "ai", "text": "hi"}
            pub.publish(f"room/{room}/message", json.dumps(msg), qos=1).wait_for_publish()
            sent[p] = time.monotonic()
            time.sleep(0.137)  # spread over the tick
        deadline = time.monotonic() + thr / 1000 + 3 * args.tick_ms / 1000 + 10
        while time.monotonic() < deadline:
            with lock:
                if all(f"persona/fast{i}/suggestion" in got for i in range(args.samples)):
                    break
            time.sleep(0.1)
        late_service, late_e2e = [], []
        with lock:
            for i in range(args.samples):
                ev = got.get(f"persona/fast{i}/suggestion")
                if not ev:
                    print(f"fast{i}: no suggestion")
                    continue
                t_recv, body = ev[0]
                m = re.search(r"for (\d+) ms \(threshold (\d+) ms\)", body["reason"])
                late_service.append(int(m.group(1)) - int(m.group(2)))
                late_e2e.append((t_recv - sent[f"fast{i}"]) * 1000 - thr)
        if not late_service:
            sys.exit("no deadline fired")
        late_service.sort()
        late_e2e.sort()
        print(f"deadline lateness, service clock (ms): min {late_service[0]} "
              f"median {late_service[len(late_service) // 2]} max {late_service[-1]} "
              f"(tick {args.tick_ms} ms)")
        print(f"deadline lateness, end to end (ms): min {late_e2e[0]:.0f} "
              f"median {late_e2e[len(late_e2e) // 2]:.0f} max {late_e2e[-1]:.0f}")
        sub.loop_stop()
        pub.loop_stop()
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
