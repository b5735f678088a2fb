#!/usr/bin/python3
"""compose_check.py - checks a running docker-compose.yml stack (run by
scripts/compose-test, which brings it up and down).

Each check prints one line; the first failure exits 1 with what was
expected and what was seen. Every wait is bounded.

  healthy     every container of the project reports healthy, and each
              published /readyz answers 200
  auth        an anonymous MQTT client and an anonymous Redis client are
              refused (the checks below log in as admin, scripts/secrets)
  recipe      the README's mosquitto_pub recipe gives persona/ann/dormancy
              events (sleep, then awake again) on the published port 1883
  kill        a stream of inputs with known ids; dormancy-monitor and
              chat-router are killed with SIGKILL mid-stream and started
              again: every input has exactly one dormancy event id and is
              in the room log exactly once
  restart     mosquitto and redis containers killed with SIGKILL and
              started: the room log and the retained state are still there
              (volumes), the services are ready again and still work
  shards      (not with --short) two dormancy-monitor shards from
              docker-compose.shards.yml: distinct instances and shards,
              every room's input handled once
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

import paho.mqtt.client as mqtt
import redis
import yaml

MQTT_PORT = 1883
REDIS_PORT = 6379
PREFIX = "vigil:"
# The stack runs with authentication on: this check logs in as admin with
# the password scripts/secrets wrote (scripts/compose-test runs it first).
SECRETS = os.environ.get("VIGIL_SECRETS_DIR",
                         os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                      "deploy", "secrets"))


def admin_password():
    with open(os.path.join(SECRETS, "passwords", "admin")) as f:
        return f.read().strip()


def mqtt_client(client_id):
    c = mqtt.Client(client_id=client_id, clean_session=True)
    c.username_pw_set("admin", admin_password())
    return c


def redis_admin():
    return redis.Redis(port=REDIS_PORT, username="admin", password=admin_password())


def say(what, detail=""):
    print(f"  ok  {what}" + (f"  ({detail})" if detail else ""), flush=True)


def fail(what, detail):
    print(f"  FAIL {what}: {detail}", flush=True)
    sys.exit(1)


def now_ms():
    return int(time.time() * 1000)


class Stack:
    def __init__(self, project, engine, files):
        self.project = project
        self.engine = engine
        self.files = files

    def compose(self, *args, check=True, timeout=300):
        cmd = ["docker-compose", "-p", self.project]
        for f in self.files:
            cmd += ["-f", f]
        cmd += list(args)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            fail("docker-compose " + " ".join(args), r.stderr.strip()[-800:])
        return r

    def containers(self):
        r = subprocess.run(
            [self.engine, "ps", "--filter", f"label=com.docker.compose.project={self.project}",
             "--format", "{{.Names}}"], capture_output=True, text=True, check=True)
        return [n for n in r.stdout.split() if n]

    def health(self, name):
        r = subprocess.run([self.engine, "inspect", name], capture_output=True, text=True)
        if r.returncode != 0:
            return "gone"
        st = json.loads(r.stdout)[0].get("State", {})
        h = st.get("Health") or st.get("Healthcheck") or {}
        return h.get("Status") or ("running" if st.get("Running") else st.get("Status", "?"))

    def wait_healthy(self, expect, timeout):
        deadline = time.time() + timeout
        last = {}
        while time.time() < deadline:
            names = self.containers()
            last = {n: self.health(n) for n in names}
            if len(names) >= expect and all(v == "healthy" for v in last.values()):
                return last
            time.sleep(1)
        fail("healthy", f"after {timeout}s: {last}")


def published_ports(compose_file):
    """Service -> host port of its health listener, from the compose file."""
    with open(compose_file) as f:
        doc = yaml.safe_load(f)
    out = {}
    for name, svc in doc["services"].items():
        env = svc.get("environment") or {}
        if "VIGIL_HTTP_ADDR" not in env:
            continue
        port = str(env["VIGIL_HTTP_ADDR"]).rsplit(":", 1)[1]
        for p in svc.get("ports") or []:
            parts = str(p).split(":")
            if parts[-1] == port:
                out[name] = int(parts[-2])
    return out


def get(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except Exception:
        return None


def wait_ready(ports, timeout):
    deadline = time.time() + timeout
    bad = {}
    while time.time() < deadline:
        bad = {s: p for s, p in ports.items() if get(f"http://127.0.0.1:{p}/readyz") != 200}
        if not bad:
            return
        time.sleep(0.5)
    fail("ready", f"/readyz not 200 after {timeout}s: {bad}")


class Watcher:
    """Collects messages of some topic filters on the published broker port."""

    def __init__(self, filters, name):
        self.msgs = []
        self.lock = threading.Lock()
        self.connected = threading.Event()
        self.c = mqtt_client(f"compose-check-{name}-{now_ms()}")
        self.filters = filters
        self.c.on_connect = self._on_connect
        self.c.on_message = self._on_message
        self.c.connect("127.0.0.1", MQTT_PORT)
        self.c.loop_start()
        if not self.connected.wait(20):
            fail("mqtt", "could not connect to 127.0.0.1:1883")

    def _on_connect(self, c, u, f, rc):
        for t in self.filters:
            c.subscribe(t, qos=1)
        time.sleep(0.2)
        self.connected.set()

    def _on_message(self, c, u, m):
        try:
            body = json.loads(m.payload) if m.payload else None
        except ValueError:
            body = None
        with self.lock:
            self.msgs.append((m.topic, body, m.retain))

    def snapshot(self):
        with self.lock:
            return list(self.msgs)

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()


def publisher():
    c = mqtt_client(f"compose-check-pub-{now_ms()}")
    c.connect("127.0.0.1", MQTT_PORT)
    c.loop_start()
    return c


def pub(c, topic, body):
    info = c.publish(topic, json.dumps(body), qos=1)
    info.wait_for_publish(timeout=30)
    if not info.is_published():
        fail("publish", f"no PUBACK for {topic}")


def check_recipe():
    w = Watcher(["persona/ann/dormancy"], "recipe")
    for text, who, kind in (("hello from ann", "ann", "ai"), ("@self dormant sleep", "ann", "ai"),
                            ("I am back", "joel", "human")):
        body = {"room": "general", "sender": who, "sender_type": kind, "text": text, "ts": now_ms()}
        r = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(MQTT_PORT), "-q", "1",
                            "-u", "admin", "-P", admin_password(),
                            "-t", "room/general/message", "-m", json.dumps(body)],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail("recipe", f"mosquitto_pub: {r.stderr.strip()}")
        time.sleep(0.3)
    deadline = time.time() + 30
    levels = []
    while time.time() < deadline:
        levels = [b.get("level") for t, b, _ in w.snapshot() if b]
        if "sleep" in levels and levels[-1] == "active":
            break
        time.sleep(0.2)
    w.close()
    if "sleep" not in levels or levels[-1] != "active":
        fail("recipe", f"persona/ann/dormancy levels seen: {levels}")
    say("recipe", "persona/ann/dormancy: " + " → ".join(levels))


def effects_by_input(msgs):
    """input id -> set of dormancy event ids that name it."""
    out = {}
    for topic, body, _ in msgs:
        if not body or not topic.endswith("/dormancy"):
            continue
        mid = body.get("message_id")
        if mid:
            out.setdefault(mid, set()).add(body.get("id"))
    return out


def log_ids(r, room):
    ids = []
    for _, fields in r.xrange(f"{PREFIX}chat-router:log:{room}"):
        try:
            ids.append(json.loads(fields[b"m"])["id"])
        except (KeyError, ValueError):
            pass
    return ids


def check_kill(stack, ports, n, rate):
    room, persona = "killroom", "kp"
    w = Watcher([f"persona/{persona}/dormancy"], "kill")
    c = publisher()
    ids = [f"ck-{now_ms()}-{i}" for i in range(n)]
    killed = {}

    def fault():
        time.sleep(n / rate / 3)
        stack.compose("kill", "-s", "KILL", "dormancy-monitor", "chat-router")
        killed["at"] = time.time()
        time.sleep(1.5)
        stack.compose("start", "dormancy-monitor", "chat-router")

    t = threading.Thread(target=fault)
    t.start()
    for i, mid in enumerate(ids):
        text = "@self dormant sleep" if i % 2 == 0 else "@self awake"
        pub(c, f"room/{room}/message", {"id": mid, "room": room, "sender": persona,
                                        "sender_type": "ai", "text": text, "ts": now_ms()})
        time.sleep(1.0 / rate)
    t.join()
    c.loop_stop()
    c.disconnect()
    r = redis_admin()
    deadline = time.time() + 120
    missing, doubled, logged = ids, [], []
    while time.time() < deadline:
        eff = effects_by_input(w.snapshot())
        missing = [i for i in ids if i not in eff]
        doubled = [i for i in ids if len(eff.get(i, ())) > 1]
        logged = log_ids(r, room)
        if not missing and len(set(logged) & set(ids)) == n:
            break
        time.sleep(0.5)
    w.close()
    if missing or doubled:
        fail("kill", f"{n} inputs: {len(missing)} without their dormancy event (e.g. {missing[:3]}), "
             f"{len(doubled)} with two event ids")
    in_log = [i for i in logged if i in set(ids)]
    if len(in_log) != n or len(set(in_log)) != n:
        fail("kill", f"room log holds {len(set(in_log))} of {n} inputs, {len(in_log) - len(set(in_log))} twice")
    wait_ready(ports, 90)
    say("kill", f"{n} inputs, dormancy-monitor and chat-router killed -9 mid-stream: "
        f"0 lost, 0 doubled, {n} log entries")
    return room, persona


def check_restart(stack, ports, room, persona):
    r = redis_admin()
    before = len(log_ids(r, room))
    stack.compose("kill", "-s", "KILL", "mosquitto", "redis")
    time.sleep(1)
    stack.compose("start", "mosquitto", "redis")
    stack.wait_healthy(0, 120)
    wait_ready(ports, 120)
    r = redis_admin()
    after = len(log_ids(r, room))
    if after != before:
        fail("restart", f"room log had {before} entries before the Redis kill, {after} after")
    w = Watcher([f"persona/{persona}/state"], "retained")
    deadline = time.time() + 20
    while time.time() < deadline and not any(ret for _, _, ret in w.snapshot()):
        time.sleep(0.2)
    retained = any(ret for _, _, ret in w.snapshot())
    w.close()
    if not retained:
        fail("restart", f"retained persona/{persona}/state gone after the broker restart")
    # Still working: one more input, one more event.
    w = Watcher([f"persona/{persona}/dormancy"], "after")
    c = publisher()
    mid = f"ck-after-{now_ms()}"
    last = None
    pub(c, f"room/{room}/message", {"id": mid, "room": room, "sender": persona, "sender_type": "ai",
                                    "text": "@self dormant mention-only", "ts": now_ms()})
    deadline = time.time() + 60
    while time.time() < deadline:
        last = effects_by_input(w.snapshot()).get(mid)
        if last:
            break
        time.sleep(0.2)
    c.loop_stop()
    c.disconnect()
    w.close()
    if not last:
        fail("restart", "no dormancy event for an input published after the restarts")
    say("restart", f"mosquitto and redis killed -9 and started: log kept ({after} entries), "
        "retained state kept, services ready and working")


def check_shards(stack, rooms=20):
    stack.files = ["docker-compose.yml", "docker-compose.shards.yml"]
    stack.compose("up", "-d", "--no-build")
    stack.wait_healthy(len(stack.containers()), 180)
    w = Watcher(["sys/dormancy-monitor/+/status", "persona/+/dormancy"], "shards")
    c = publisher()
    ids = []
    for i in range(rooms):
        mid = f"cs-{now_ms()}-{i}"
        ids.append(mid)
        pub(c, f"room/shard{i}/message", {"id": mid, "room": f"shard{i}", "sender": f"sp{i}",
                                          "sender_type": "ai", "text": "@self dormant sleep",
                                          "ts": now_ms()})
    deadline = time.time() + 60
    eff = {}
    while time.time() < deadline:
        eff = effects_by_input(w.snapshot())
        if all(i in eff for i in ids):
            break
        time.sleep(0.3)
    status = {}
    for topic, body, _ in w.snapshot():
        if topic.startswith("sys/") and body and body.get("state") == "ready":
            status[body.get("instance")] = body.get("shard")
    c.loop_stop()
    c.disconnect()
    w.close()
    missing = [i for i in ids if i not in eff]
    doubled = [i for i in ids if len(eff.get(i, ())) > 1]
    if missing or doubled:
        fail("shards", f"{len(missing)} of {rooms} rooms without their event, {len(doubled)} doubled")
    shards = {status.get("dormancy-monitor-0"), status.get("dormancy-monitor-1")}
    if len(shards) != 2 or None in shards:
        fail("shards", f"ready instances and shards seen: {status}")
    say("shards", f"two dormancy-monitor replicas {sorted(status.items())}: {rooms} rooms, each once")


def check_auth():
    """Anonymous clients are refused by the broker and by Redis."""
    r = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(MQTT_PORT), "-t", "#", "-C", "1",
                        "-W", "3"], capture_output=True, text=True, timeout=30)
    if r.returncode == 0 or "not authori" not in (r.stderr + r.stdout).lower():
        fail("auth", f"an anonymous MQTT client was not refused: rc={r.returncode} {r.stderr.strip()}")
    try:
        redis.Redis(port=REDIS_PORT).get(PREFIX + "dormancy-monitor:x")
        fail("auth", "an anonymous Redis client read a key")
    except (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError) as e:
        if "NOAUTH" not in str(e) and "uthentication" not in str(e):
            fail("auth", f"anonymous Redis: {e}")
    say("auth", "anonymous MQTT client and anonymous Redis client refused")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", required=True)
    ap.add_argument("--engine", default="podman")
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--up-started", type=int, default=None,
                    help="Unix time when 'docker-compose up' started, to report the time to healthy")
    a = ap.parse_args()
    stack = Stack(a.project, a.engine, ["docker-compose.yml"])
    t0 = time.time()
    with open("docker-compose.yml") as f:
        expect = len(yaml.safe_load(f)["services"])
    states = stack.wait_healthy(expect, 300)
    ports = published_ports("docker-compose.yml")
    wait_ready(ports, 60)
    since = f"{time.time() - a.up_started:.0f}s after 'up' started" if a.up_started else \
        f"{time.time() - t0:.0f}s after 'up' returned"
    say("healthy", f"{len(states)} containers healthy, {len(ports)} /readyz 200, {since}")
    check_auth()
    check_recipe()
    n = 200 if a.short else 1000
    room, persona = check_kill(stack, ports, n, 100)
    check_restart(stack, ports, room, persona)
    if not a.short:
        check_shards(stack)


if __name__ == "__main__":
    main()
