#!/usr/bin/python3
"""Scripted AI personas for chat-router tests (and demos).

Each persona is a paho client subscribed to persona/{name}/notify. It
answers every notification by posting an AI message to the room that
mentions the other persona, with depth = notification depth + 1 and
reply_to = the notified message id: a well-behaved persona, so two of them
talk to each other until chat-router stops the chain.

Well-behaved also means at-least-once safe: a notification delivered twice
(QoS 1, or an outbox republished after a chat-router restart) is answered
once, and the answer's id is derived from the notification id, so even a
second answer would be the same message (chat-router logs it once).

Run by hand against a broker:
    /usr/bin/python3 tests/integration/chat_personas.py --port 1883 arya gendry
then: vigil chat send general "@arya start"
"""

import argparse
import hashlib
import json
import queue
import threading
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.subscribeoptions import SubscribeOptions


def _client(client_id):
    kw = {"client_id": client_id, "protocol": mqtt.MQTTv5}
    if hasattr(mqtt, "CallbackAPIVersion"):  # paho 2.x
        return mqtt.Client(mqtt.CallbackAPIVersion.VERSION1, **kw)
    return mqtt.Client(**kw)


def reply_id(persona, notify_id):
    """The id of persona's answer to one notification (deterministic)."""
    return f"{persona}-{hashlib.sha1(notify_id.encode()).hexdigest()[:20]}"


class Persona:
    """One scripted persona. `other` is who it mentions in its answers;
    `delay` seconds pass between a notification and the answer."""

    def __init__(self, port, name, other, delay=0.0, host="127.0.0.1"):
        self.port = port
        self.host = host
        self.name = name
        self.other = other
        self.delay = delay
        self.notifications = []  # every distinct notify payload, in arrival order
        self.duplicates = 0
        self.answered = []  # ids of the answers posted
        self.enabled = threading.Event()
        self.enabled.set()
        self._seen = set()
        self._lock = threading.Lock()
        self._work = queue.Queue()
        self._subscribed = threading.Event()
        self._stop = threading.Event()
        self.c = _client(f"persona-{name}-{uuid.uuid4().hex[:8]}")
        self.c.on_connect = self._on_connect
        self.c.on_subscribe = lambda *a, **k: self._subscribed.set()
        self.c.on_message = self._on_message
        self.c.max_inflight_messages_set(100)
        self.c.max_queued_messages_set(0)
        self.c.reconnect_delay_set(0.05, 1)
        self._worker = threading.Thread(target=self._run, daemon=True, name=f"persona-{name}")

    def start(self, timeout=10):
        self.c.connect(self.host, self.port, keepalive=10)
        self.c.loop_start()
        self._worker.start()
        if not self._subscribed.wait(timeout):
            raise RuntimeError(f"persona {self.name} did not subscribe")
        return self

    def stop(self):
        self._stop.set()
        self._work.put(None)
        try:
            self.c.disconnect()
        except Exception:  # noqa: BLE001
            pass
        self.c.loop_stop()
        self._worker.join(timeout=5)

    def _on_connect(self, client, userdata, flags, rc, properties=None):
        if rc == 0:
            client.subscribe([(f"persona/{self.name}/notify", SubscribeOptions(qos=1))])

    def _on_message(self, client, userdata, m):
        try:
            n = json.loads(m.payload.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return
        with self._lock:
            if n.get("id") in self._seen:
                self.duplicates += 1
                return
            self._seen.add(n.get("id"))
            self.notifications.append(n)
        self._work.put(n)

    def _run(self):
        # Answers on our own thread: the delay never holds paho's loop.
        while not self._stop.is_set():
            n = self._work.get()
            if n is None:
                return
            if self.delay:
                time.sleep(self.delay)
            self.enabled.wait()
            if self._stop.is_set():
                return
            self.answer(n)

    def answer(self, n):
        depth = int(n["depth"]) + 1
        mid = reply_id(self.name, n["id"])
        msg = {
            "id": mid,
            "room": n["room"],
            "sender": self.name,
            "sender_type": "ai",
            "text": f"@{self.other} over to you (hop {depth})",
            "reply_to": n["message_id"],
            "depth": depth,
            "ts": int(time.time() * 1000),
        }
        self.c.publish(f"room/{n['room']}/message", json.dumps(msg), qos=1)
        with self._lock:
            self.answered.append(mid)

    def depths(self):
        with self._lock:
            return [int(n["depth"]) for n in self.notifications]


def pair(port, a="arya", b="gendry", delay=0.0):
    """Two personas that mention each other, started."""
    return Persona(port, a, b, delay).start(), Persona(port, b, a, delay).start()


# --------------------------------------------------------------------------
# Helpers shared by test_chat_router.py and test_cli.py (they need a
# harness Stack; imported lazily so this file also runs on its own).

CHAT = "chat-router"
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "SUMMARY: UndefinedBehaviorSanitizer")


def vigil_exe():
    import os

    import harness
    return os.path.join(harness.BUILD_DIR, "cli", "vigil")


def vigil_env(stack, **overrides):
    """Environment for the `vigil` CLI wired to the stack's broker and Redis."""
    import os
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    supp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lsan.supp")
    env["LSAN_OPTIONS"] = f"suppressions={supp}:print_suppressions=0"
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    env.update({"VIGIL_MQTT_URL": stack.broker.url, "VIGIL_REDIS_URL": stack.redis.url,
                "VIGIL_REDIS_PREFIX": stack.prefix, "VIGIL_USER": "joel",
                "VIGIL_CLI_TIMEOUT_MS": "10000"})
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def run_vigil(stack, *args, env=None, input=None, timeout=30):
    """Runs `vigil args...`; returns CompletedProcess (text). Fails the test
    on a sanitizer report."""
    import subprocess
    e = vigil_env(stack, **(env or {}))
    r = subprocess.run([vigil_exe(), *args], env=e, input=input, capture_output=True, text=True,
                       timeout=timeout)
    for m in SANITIZER_MARKERS:
        assert m not in r.stderr, f"vigil {' '.join(args)}: sanitizer report:\n{r.stderr[:4000]}"
    return r


def vigil_ok(stack, *args, **kw):
    r = run_vigil(stack, *args, **kw)
    assert r.returncode == 0, f"vigil {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def chat_key(stack, name):
    return f"{stack.prefix}{CHAT}:{name}"


def log_entries(stack, room):
    """The room log from Redis: [(log id, message dict)] oldest first."""
    c = stack.redis.client()
    try:
        out = []
        for eid, fields in c.xrange(chat_key(stack, f"log:{room}")):
            out.append((eid.decode(), json.loads(fields[b"m"])))
        return out
    finally:
        c.close()


def room_state(stack, room):
    c = stack.redis.client()
    try:
        s = c.hget(chat_key(stack, f"state:{room}"), "s")
        return json.loads(s) if s else None
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=1883)
    ap.add_argument("--delay", type=float, default=0.2, help="seconds before each answer")
    ap.add_argument("names", nargs=2, metavar="NAME", help="two persona ids")
    args = ap.parse_args()
    a, b = args.names
    ps = [Persona(args.port, a, b, args.delay, args.host).start(),
          Persona(args.port, b, a, args.delay, args.host).start()]
    print(f"personas {a} and {b} answering on {args.host}:{args.port}; Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    for p in ps:
        p.stop()


if __name__ == "__main__":
    main()
