#!/usr/bin/env python3
"""scripts/simulate - a room of N scripted personas, with and without floor
control, measured.

It starts its own mosquitto and redis-server on free loopback ports in a
temporary folder (tests/integration/harness.py), then dormancy-monitor and
floor-control with thresholds of seconds, and plays the same scenario twice:
once with floor control (VIGIL_FLOOR_K, default 2) and once without it
(VIGIL_FLOOR_K=0). Everything it started is stopped at the end.

The personas are scripted, not models. Each one:
  - tracks its dormancy level from its retained persona/{p}/state;
  - answers a human message: with floor control when persona/{p}/floor says
    has_floor (a persona that gets no floor event within a second falls back
    to its level, counted as a fallback); without it, by its level (active
    and human-only answer, mention-only and asleep only when @mentioned);
  - "generates" for 200-500 ms before its answer appears (reply_to = the
    message, depth + 1);
  - is chatty: it replies to another AI's message (depth below 2) with a
    20 % chance when active, and while the human is away the active ones
    keep talking among themselves (one message every 400 ms), until
    dormancy-monitor's AI-only rule puts them to sleep.

Scenario (per run): a Kubernetes question two personas know, a general
question, a question that @mentions one persona, the human away (the
no-human suggestion and the AI-only sleep happen), the human's return,
and another Kubernetes question.

Reported per run: AI answers per human message, AI messages while the
human is away, unanswered human messages, and (with floor control) the time
from the human message to room/{r}/floor. --check exits 1 unless, with
floor control, every human message is answered by at most K personas plus
the ones it @mentions, none is unanswered, and no persona fell back.
"""
import argparse
import hashlib
import heapq
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
try:
    import harness  # the integration tests' process helpers (paho, redis, mosquitto)
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.stderr.write(f"error: {e}: scripts/simulate needs Debian's python3-paho-mqtt "
                     "(scripts/install-deps installs it)\n")
    sys.exit(2)

ROOM = "sim"
# dormancy-monitor with thresholds of seconds (every one a real variable).
DORMANCY_ENV = {
    "VIGIL_DORMANCY_NO_HUMAN_MS": "2500",
    "VIGIL_DORMANCY_AI_ONLY_MS": "3000",
    "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": "600",
    "VIGIL_DORMANCY_SNOOZE_MS": "600000",
    "VIGIL_TICK_MS": "50",
    "VIGIL_TIMER_LEASE_MS": "2000",
}
EXPERT_DOMAIN = "kubernetes"
OTHER_DOMAINS = ["cooking", "poetry", "history", "music", "gardening", "chess", "travel",
                 "finance", "astronomy", "football", "painting", "cycling", "film"]
CHAT_PCT = 20          # chance (in %) that an active persona replies to another AI's message
MAX_DEPTH = 2          # replies to replies stop here
AWAY_CHAT_EVERY = 0.4  # seconds between messages of the personas left talking while the human is away
FLOOR_WAIT = harness.scaled(1.0)  # a persona waits this long for its floor event (x VIGIL_TEST_SLOW), then falls back to its level
LEVEL_SETTLE = 0.25    # without floor control, a persona decides this long after the message


def h(*parts):
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16)


class Persona:
    def __init__(self, pid, domains, confidence):
        self.id = pid
        self.domains = domains
        self.confidence = confidence
        self.level = "active"
        self.trigger = ""
        self.gen = 0.2 + (h(pid, "gen") % 300) / 1000.0  # 200-500 ms, fixed per persona

    def meta(self):
        return {"persona": self.id, "name": self.id, "rooms": [ROOM], "role": "general-help",
                "expertise_domains": self.domains, "confidence_levels": self.confidence,
                "availability": 0.8, "tier": "basic"}

    def may_answer(self, msg):
        """Answering by level alone: what a persona does without a floor."""
        mentioned = f"@{self.id}" in msg.get("text", "")
        if mentioned:
            return True  # a mention wakes a sleeper (dormancy-monitor) and reaches mention-only
        if self.level == "active":
            return True
        return self.level == "human-only" and msg.get("sender_type") == "human"


class Scheduler:
    """One thread running delayed actions in time order."""

    def __init__(self):
        self.heap = []
        self.cond = threading.Condition()
        self.seq = 0
        self.stopping = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def at(self, delay, fn, *args):
        with self.cond:
            self.seq += 1
            heapq.heappush(self.heap, (time.monotonic() + delay, self.seq, fn, args))
            self.cond.notify()

    def run(self):
        while True:
            with self.cond:
                while not self.stopping and (not self.heap or self.heap[0][0] > time.monotonic()):
                    self.cond.wait(None if not self.heap else max(0.0, self.heap[0][0] - time.monotonic()))
                if self.stopping:
                    return
                _, _, fn, args = heapq.heappop(self.heap)
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001 - a broken action must not stop the room
                sys.stderr.write(f"simulate: action failed: {e!r}\n")

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify()
        self.t.join(timeout=5)


class Room:
    """The scripted personas of one run, on one MQTT connection."""

    def __init__(self, port, personas, floor_on, tag):
        self.personas = {p.id: p for p in personas}
        self.floor_on = floor_on
        self.tag = tag
        self.lock = threading.Lock()
        self.log = []          # (t, message dict) of every room message
        self.floors = {}       # message id -> (t received, room/{r}/floor payload)
        self.sent_at = {}      # human message id -> t published
        self.got_floor = {}    # message id -> personas that saw their floor event
        self.fallbacks = 0
        self.answered = set()  # (persona, message id) already answered or decided
        self.away = False
        self.sched = Scheduler()
        self.c = harness.new_client(f"sim-{tag}-{uuid.uuid4().hex[:8]}", v5=True)
        self.c.on_message = self.on_message
        self.ready = threading.Event()
        self.c.on_subscribe = lambda *a, **k: self.ready.set()
        self.c.connect("127.0.0.1", port, keepalive=10)
        self.c.loop_start()
        self.c.subscribe([(f"room/{ROOM}/message", 1), (f"room/{ROOM}/floor", 1),
                          ("persona/+/state", 1), ("persona/+/floor", 1)])
        if not self.ready.wait(10):
            raise harness.HarnessError("the simulation could not subscribe")

    def stop(self):
        self.sched.stop()
        self.c.loop_stop()
        self.c.disconnect()

    def publish(self, topic, body, retain=False):
        info = self.c.publish(topic, json.dumps(body), qos=1, retain=retain)
        info.wait_for_publish(timeout=10)

    # -- inputs -------------------------------------------------------------

    def on_message(self, client, userdata, m):
        now = time.monotonic()
        try:
            body = json.loads(m.payload)
        except ValueError:
            return
        parts = m.topic.split("/")
        if parts[0] == "persona" and parts[2] == "state":
            p = self.personas.get(parts[1])
            entry = (body.get("rooms") or {}).get(ROOM)
            if p and entry:
                p.level, p.trigger = entry.get("level", p.level), entry.get("trigger", "")
        elif parts[0] == "persona" and parts[2] == "floor":
            self.on_floor(parts[1], body)
        elif m.topic == f"room/{ROOM}/floor":
            with self.lock:
                self.floors[body["message_id"]] = (now, body)
        elif m.topic == f"room/{ROOM}/message":
            with self.lock:
                self.log.append((now, body))
            if body.get("sender_type") == "human":
                self.on_human(body)
            elif body.get("sender_type") == "ai":
                self.on_ai(body)

    def on_human(self, msg):
        if self.floor_on:
            self.sched.at(FLOOR_WAIT, self.floor_fallback, msg)
            return
        for p in self.personas.values():
            self.sched.at(LEVEL_SETTLE, self.decide_by_level, p, msg)

    def on_floor(self, pid, ev):
        p = self.personas.get(pid)
        if not p:
            return
        mid = ev["message_id"]
        with self.lock:
            self.got_floor.setdefault(mid, set()).add(pid)
            if (pid, mid) in self.answered:
                return
            self.answered.add((pid, mid))
        if ev.get("has_floor"):
            msg = self.find(mid)
            self.sched.at(p.gen, self.answer, p, msg or {"id": mid, "depth": 0})

    def floor_fallback(self, msg):
        got = self.got_floor.get(msg["id"], set())
        for p in self.personas.values():
            if p.id not in got:
                with self.lock:
                    self.fallbacks += 1
                self.decide_by_level(p, msg)

    def decide_by_level(self, p, msg):
        with self.lock:
            if (p.id, msg["id"]) in self.answered:
                return
            self.answered.add((p.id, msg["id"]))
        if p.may_answer(msg):
            self.sched.at(p.gen, self.answer, p, msg)

    def on_ai(self, msg):
        depth = int(msg.get("depth") or 0)
        if depth >= MAX_DEPTH:
            return
        for p in self.personas.values():
            if p.id == msg.get("sender") or p.level != "active":
                continue
            if h(p.id, msg["id"]) % 100 < CHAT_PCT:
                self.sched.at(p.gen, self.answer, p, msg)

    def find(self, mid):
        with self.lock:
            for _, m in self.log:
                if m.get("id") == mid:
                    return m
        return None

    # -- outputs ------------------------------------------------------------

    def answer(self, p, msg):
        mid = f"{self.tag}-{p.id}-{uuid.uuid4().hex[:8]}"
        self.publish(f"room/{ROOM}/message", {
            "id": mid, "room": ROOM, "sender": p.id, "sender_type": "ai",
            "text": f"{p.id}'s thoughts on that", "reply_to": msg["id"],
            "depth": int(msg.get("depth") or 0) + 1, "ts": int(time.time() * 1000)})

    def human(self, text):
        mid = f"{self.tag}-h-{uuid.uuid4().hex[:8]}"
        self.sent_at[mid] = time.monotonic()
        self.publish(f"room/{ROOM}/message", {"id": mid, "room": ROOM, "sender": "joel",
                                              "sender_type": "human", "text": text,
                                              "ts": int(time.time() * 1000)})
        return mid

    def away_chatter(self, until):
        """While the human is away the active personas keep talking."""
        if time.monotonic() >= until:
            return
        active = sorted(p.id for p in self.personas.values() if p.level == "active")
        if active:
            with self.lock:
                n = len([1 for _, m in self.log if m.get("sender_type") == "ai"])
            p = self.personas[active[n % len(active)]]
            self.publish(f"room/{ROOM}/message", {
                "id": f"{self.tag}-{p.id}-{uuid.uuid4().hex[:8]}", "room": ROOM, "sender": p.id,
                "sender_type": "ai", "text": f"{p.id} muses about {p.domains[0]}", "depth": 0,
                "ts": int(time.time() * 1000)})
        self.sched.at(AWAY_CHAT_EVERY, self.away_chatter, until)


def make_personas(n):
    out = []
    for i in range(n):
        pid = f"p{i:02d}"
        if i in (3, 11 % max(n, 1)) and n > 3:
            domains = [EXPERT_DOMAIN, OTHER_DOMAINS[i % len(OTHER_DOMAINS)]]
            conf = {EXPERT_DOMAIN: 0.9 if i == 3 else 0.7}
        else:
            domains = [OTHER_DOMAINS[i % len(OTHER_DOMAINS)], OTHER_DOMAINS[(i + 5) % len(OTHER_DOMAINS)]]
            conf = {domains[0]: 0.8}
        out.append(Persona(pid, domains, conf))
    return out


SCENARIO = [
    # (label, text or None for the away phase, seconds to wait after it)
    ("first question (kubernetes)", "How do I debug a Kubernetes pod stuck in CrashLoopBackOff?", 2.0),
    ("general question", "Any tips for a relaxed weekend?", 2.0),
    ("question with an @mention", "@p07 and everyone: what should I read next?", 2.0),
    ("human away", None, 6.0),
    ("the human's return", "I'm back - what did I miss?", 2.0),
    ("second kubernetes question", "Kubernetes again: why can't my pods reach the service?", 2.0),
]


def run_once(args, bdir, k, tag):
    work = tempfile.mkdtemp(prefix=f"vigil-sim-{tag}-")
    redis = harness.RedisServer(work, appendfsync="everysec").start()
    broker = harness.Mosquitto(work)
    services, room = [], None
    try:
        broker.start()
        common = {"VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_URL": redis.url,
                  "VIGIL_REDIS_PREFIX": f"sim-{tag}:", "VIGIL_LOG_LEVEL": "warn"}
        services = [
            harness.Service("dormancy-monitor", work, {**common, **DORMANCY_ENV}, build_dir=bdir),
            harness.Service("floor-control", work, {**common, "VIGIL_FLOOR_K": str(k)}, build_dir=bdir),
        ]
        for s in services:
            s.start()
        personas = make_personas(args.personas)
        room = Room(broker.port, personas, k > 0, tag)
        for p in personas:
            room.publish(f"persona/{p.id}/meta", p.meta(), retain=True)
        # every persona joined (dormancy-monitor announces each) and floor-control caught up
        deadline = time.monotonic() + harness.scaled(15)
        while time.monotonic() < deadline and len(harness.retained(broker.port, "persona/+/state", 2, 0.2)) < len(personas):
            time.sleep(0.1)
        time.sleep(0.5)
        humans, away = [], (None, None)
        for label, text, wait in SCENARIO:
            if text is None:
                t0 = time.monotonic()
                room.away_chatter(t0 + wait)
                time.sleep(wait)
                away = (t0, time.monotonic())
                continue
            mid = room.human(text)
            humans.append((label, mid, text.count("@")))
            time.sleep(wait)
        time.sleep(0.6)  # late answers
        return summarize(room, humans, away, k)
    finally:
        if room:
            room.stop()
        for s in services:
            try:
                s.terminate()
            except harness.HarnessError as e:
                sys.stderr.write(f"{e}\n")
        broker.stop()
        redis.stop()
        if not args.keep:
            subprocess.call(["rm", "-rf", work])


def summarize(room, humans, away, k):
    with room.lock:
        log = list(room.log)
        floors = dict(room.floors)
    ai = [(t, m) for t, m in log if m.get("sender_type") == "ai"]
    rows = []
    for label, mid, mentions in humans:
        answers = sorted({m["sender"] for _, m in ai if m.get("reply_to") == mid})
        lat = None
        if mid in floors and mid in room.sent_at:
            lat = (floors[mid][0] - room.sent_at[mid]) * 1000
        rows.append({"label": label, "message_id": mid, "mentions": mentions, "answers": len(answers),
                     "answered_by": answers, "floor_ms": lat,
                     "granted": floors[mid][1]["granted"] if mid in floors else None})
    t0, t1 = away
    return {"k": k, "rows": rows,
            "ai_total": len(ai),
            "ai_while_away": len([1 for t, _ in ai if t0 <= t <= t1]) if t0 else 0,
            "unanswered": len([r for r in rows if r["answers"] == 0]),
            "beyond_k": len([r for r in rows if k and r["answers"] > k + r["mentions"]]),
            "fallbacks": room.fallbacks}


def report(res, k_label):
    print(f"\n== {k_label} ==")
    print(f"{'human message':32} {'AI answers':>10}  {'floor ms':>8}  answered by")
    for r in res["rows"]:
        fm = f"{r['floor_ms']:.1f}" if r["floor_ms"] is not None else "-"
        print(f"{r['label']:32} {r['answers']:>10}  {fm:>8}  {', '.join(r['answered_by']) or '(nobody)'}")
    per = [r["answers"] for r in res["rows"]]
    print(f"AI answers per human message: mean {statistics.mean(per):.1f}, max {max(per)}; "
          f"AI messages while the human is away: {res['ai_while_away']}; "
          f"unanswered human messages: {res['unanswered']}; AI messages in all: {res['ai_total']}")
    if res["k"]:
        lats = [r["floor_ms"] for r in res["rows"] if r["floor_ms"] is not None]
        if lats:
            print(f"floor latency (human message published -> room/{ROOM}/floor received): "
                  f"median {statistics.median(lats):.1f} ms, max {max(lats):.1f} ms; "
                  f"personas that fell back to their level: {res['fallbacks']}")


def build_dir(args):
    d = os.path.abspath(args.build_dir or os.environ.get("VIGIL_BUILD_DIR") or os.path.join(ROOT, "build", "release"))
    names = ("dormancy-monitor", "floor-control")
    missing = [n for n in names if not os.access(harness.service_binary(n, d), os.X_OK)]
    if missing and d == os.path.abspath(os.path.join(ROOT, "build", "release")):
        print("==> building build/release", file=sys.stderr)
        if subprocess.call([os.path.join(ROOT, "scripts", "build"), "release"], stdout=sys.stderr) != 0:
            raise harness.HarnessError("scripts/build release failed")
        missing = [n for n in names if not os.access(harness.service_binary(n, d), os.X_OK)]
    if missing:
        raise harness.HarnessError(f"no {', '.join(missing)} under {d}/services/ "
                                   "(scripts/build release, or point VIGIL_BUILD_DIR at a build tree)")
    return d


def main():
    ap = argparse.ArgumentParser(
        description="N scripted personas in a room, with and without floor control (about 40 s).",
        epilog="Binaries: --build-dir, else VIGIL_BUILD_DIR, else build/release (built if missing). "
               "Everything runs on a private mosquitto and redis-server on free loopback ports.")
    ap.add_argument("--personas", type=int, default=15, help="personas in the room (default 15)")
    ap.add_argument("--k", type=int, default=2, help="VIGIL_FLOOR_K of the floor-control run (default 2)")
    ap.add_argument("--only", choices=("floor", "off", "both"), default="both",
                    help="run with floor control, without it (VIGIL_FLOOR_K=0), or both (default)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless, with floor control, every human message got at least one and at "
                         "most K (+ its @mentions) answers and no persona fell back")
    ap.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    ap.add_argument("--build-dir", help="build tree holding services/<name>/<name>")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folders (logs)")
    args = ap.parse_args()
    if args.personas < 4 or args.k < 1:
        ap.error("--personas must be at least 4 and --k at least 1")
    bdir = build_dir(args)
    results = {}
    if args.only in ("floor", "both"):
        results["floor"] = run_once(args, bdir, args.k, "floor")
        report(results["floor"], f"with floor control (VIGIL_FLOOR_K={args.k}), {args.personas} personas")
    if args.only in ("off", "both"):
        results["off"] = run_once(args, bdir, 0, "off")
        report(results["off"], f"without floor control (VIGIL_FLOOR_K=0), {args.personas} personas")
    if args.json:
        print(json.dumps(results))
    if args.check and "floor" in results:
        f = results["floor"]
        problems = []
        if f["unanswered"]:
            problems.append(f"{f['unanswered']} human message(s) unanswered")
        if f["beyond_k"]:
            problems.append(f"{f['beyond_k']} human message(s) answered by more than K (+ mentions)")
        if f["fallbacks"]:
            problems.append(f"{f['fallbacks']} persona decision(s) without a floor event")
        if problems:
            print("\ncheck FAILED: " + "; ".join(problems))
            return 1
        print("\ncheck passed: with floor control every human message was answered, by at most "
              f"K={args.k} personas plus the ones it @mentions")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except harness.HarnessError as e:
        sys.stderr.write(f"simulate: {e}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
