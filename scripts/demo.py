#!/usr/bin/python3
"""Vigil demo: every dormancy rule firing in under a minute, as a timeline.
Run it through scripts/demo (see `scripts/demo --help`).

What it starts (and stops again at the end, Ctrl-C included):
  - its own mosquitto and redis-server on free loopback ports in a
    temporary folder (with --stack: the local stack's, see --help for why
    that is not the default);
  - its OWN dormancy-monitor and wake-evaluator with thresholds of seconds,
    a Redis prefix of their own and free HTTP ports;
  - tests/support/fake_llm.py, a local OpenAI-compatible endpoint, as the
    wake-evaluator's LLM.

Then it plays a scripted scenario over MQTT (an id on every message, rooms
and personas named after this run) and prints what Vigil publishes, one line
per event. With --check it exits 1 unless every expected event was seen.
"""

import argparse
import json
import os
import re
import shutil
import signal
import select
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

try:
    import harness  # the integration tests' process helpers (paho, redis, mosquitto)
    from paho.mqtt.subscribeoptions import SubscribeOptions
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.stderr.write(f"error: {e}: the demo needs Debian's python3-paho-mqtt "
                     "(scripts/install-deps installs it)\n")
    sys.exit(2)

FAKE_LLM = os.path.join(ROOT, "tests", "support", "fake_llm.py")

# Thresholds of seconds (the defaults are minutes). Every one is a real
# service variable; see `dormancy-monitor --help`.
NO_HUMAN_MS = 4000
AI_ONLY_MS = 10000
SUGGESTION_TIMEOUT_MS = 2000
SNOOZE_MS = 3000
REDUNDANT_WINDOW_MS = 5000
DORMANCY_ENV = {
    "VIGIL_TICK_MS": "100",
    "VIGIL_TIMER_LEASE_MS": "2000",
    "VIGIL_LOG_LEVEL": "warn",
    "VIGIL_DORMANCY_NO_HUMAN_MS": str(NO_HUMAN_MS),
    "VIGIL_DORMANCY_AI_ONLY_MS": str(AI_ONLY_MS),
    "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": str(SUGGESTION_TIMEOUT_MS),
    "VIGIL_DORMANCY_SNOOZE_MS": str(SNOOZE_MS),
    "VIGIL_DORMANCY_REDUNDANT_WINDOW_MS": str(REDUNDANT_WINDOW_MS),
    "VIGIL_DORMANCY_PRESENCE": "1",   # rule 6: only the presence phase sends heartbeats
    "VIGIL_DORMANCY_ADAPTIVE": "1",   # rule 7: only the busy room runs fast enough to matter
}
WAKE_ENV = {
    "VIGIL_TICK_MS": "100",
    "VIGIL_TIMER_LEASE_MS": "2000",
    "VIGIL_LOG_LEVEL": "warn",
    "VIGIL_LLM_TIMEOUT_MS": "5000",
    "VIGIL_LLM_RETRIES": "1",
    "VIGIL_AUTOPILOT": "0",           # the autopilot is not part of this demo
}
# Personas of phases that are not about rules 1 and 2 carry these per-persona
# overrides in their meta, so those rules stay out of the way there.
QUIET_OVERRIDES = {"noHumanActivityThreshold": 60000, "aiOnlyDiscussionThreshold": 60000}

EMERGENCY = "Server is down, need help ASAP!"
CASUAL = "How was your weekend?"

# The fake endpoint's answers, matched against the prompt (the smart
# prompt itself says "emergency", so the rules look at the quoted message).
LLM_RULES = [
    {"regex": r'Text: "Server is down',
     "reply": {"shouldWake": True, "reason": "production outage: a human needs an expert now",
               "confidence": 0.92, "alternativeSuggestion": None}},
    {"regex": r'Text: "How was your weekend',
     "reply": {"shouldWake": False, "reason": "casual chatter, the active AIs can answer",
               "confidence": 0.9}},
    {"regex": r'New message: "Server is down', "reply": {"shouldWake": True, "reason": "urgent"}},
    {"match": "You are the Dormancy Autopilot", "reply": []},
    {"reply": {"shouldWake": False, "reason": "nothing for me here", "confidence": 0.6}},
]

# When the demo runs on the local stack's broker its services must not share
# a client id (vigil-<service>-<shard>) with the stack's: they take a shard
# of their own, and every demo room is named so that it falls in that shard.
STACK_SHARD = (63, 64)

PHASES = [
    ("1", "Rules 1-3: no human, AI-only discussion, human re-entry"),
    ("2", "Rule 4 and the minimum-awake guarantee: a pile-on"),
    ("3", "Rule 5: @self, commands, timed dormancy, @mention, room wake"),
    ("4", "Rule 6: presence"),
    ("5", "Rule 7: adaptive threshold"),
    ("6", "Wake-evaluator: LLM wake decisions and token economics"),
]


def base36(n):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def now_ms():
    return int(time.time() * 1000)


def fmt_ms(ms):
    ms = int(ms)
    if ms % 60000 == 0:
        return f"{ms // 60000}min"
    if ms % 1000 == 0:
        return f"{ms // 1000}s"
    return f"{ms}ms"


# --------------------------------------------------------------------------
# output


class Style:
    CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34",
             "magenta": "35", "cyan": "36", "grey": "90"}

    def __init__(self, enabled):
        self.enabled = enabled

    def __call__(self, text, *names):
        if not self.enabled or not names:
            return text
        codes = ";".join(self.CODES[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"


LEVEL_COLOUR = {"active": "green", "mention-only": "yellow", "human-only": "yellow", "sleep": "blue"}
TOPIC_WIDTH = 38


class Timeline:
    """Prints one line per event, elapsed seconds first; thread-safe."""

    def __init__(self, style):
        self.s = style
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.names = {}  # persona id -> display name
        self.broken = False

    def elapsed(self, t=None):
        return (t if t is not None else time.monotonic()) - self.t0

    def out(self, text=""):
        with self.lock:
            if self.broken:
                return
            try:
                print(text, flush=True)
            except BrokenPipeError:
                # the reader went away (scripts/demo | head): stop quietly
                self.broken = True
                sys.stdout = open(os.devnull, "w")

    def line(self, who, topic, text, t=None, colour=None):
        el = f"{self.elapsed(t):6.2f}s"
        who_col = self.s(f"{who:<5}", "dim" if who == "sent" else "bold")
        top = topic if len(topic) <= TOPIC_WIDTH else topic[:TOPIC_WIDTH - 1] + "…"
        body = self.s(text, colour) if colour else text
        if who == "sent":
            body = self.s(text, "dim")
        self.out(f"{self.s(el, 'grey')}  {who_col} {self.s(f'{top:<{TOPIC_WIDTH}}', 'grey')} {body}")

    def note(self, text, colour="grey"):
        self.out(f"{'':9}{self.s('··', 'grey')} {self.s(text, colour)}")

    def header(self, number, title, room_names, lines):
        bar = "━" * 4
        self.out("")
        self.out(self.s(f"{bar} Phase {number}/{len(PHASES)} · {title} {bar}", "bold", "cyan"))
        self.out(self.s(f"     room{'s' if len(room_names) > 1 else ''}: {', '.join(room_names)}", "cyan"))
        for ln in lines:
            self.out(self.s(f"     {ln}", "cyan"))

    def name(self, persona):
        return self.names.get(persona, persona)


# --------------------------------------------------------------------------
# what Vigil publishes


class Event:
    __slots__ = ("seq", "t", "kind", "topic", "p")

    def __init__(self, seq, t, kind, topic, p):
        self.seq, self.t, self.kind, self.topic, self.p = seq, t, kind, topic, p


class Watch:
    """One MQTT v5 client: subscribes to Vigil's outputs, keeps the events of
    this run (deduplicated by event id), prints them as they arrive, and
    publishes the scenario's inputs at QoS 1."""

    TOPICS = ["persona/+/dormancy", "persona/+/suggestion", "persona/+/wake", "persona/+/state",
              "room/+/message", "room/+/state", "room/+/economics", "sys/+/error", "sys/+/+/status"]

    def __init__(self, port, tl, rooms, personas, instances):
        self.port = port
        self.tl = tl
        self.rooms = rooms            # set of room names of this run (filled per phase)
        self.personas = personas      # set of persona ids of this run
        self.instances = instances    # our services' instance names
        self.events = []
        self.seen_ids = set()
        self.cond = threading.Condition()
        self.seq = 0
        self.economics = {}           # room -> latest payload
        self.humans_present = {}      # room -> last printed list
        self.show_presence = set()    # rooms whose humans_present changes are printed
        self.errors = []
        self.closing = False
        self.subscribed = threading.Event()
        self.c = harness.new_client(f"vigil-demo-{uuid.uuid4().hex[:10]}", v5=True)
        self.c.max_inflight_messages_set(200)
        self.c.max_queued_messages_set(0)
        self.c.on_connect = self._on_connect
        self.c.on_subscribe = lambda *a, **k: self.subscribed.set()
        self.c.on_message = self._on_message

    def start(self, timeout=10):
        self.c.connect("127.0.0.1", self.port, keepalive=10)
        self.c.loop_start()
        if not self.subscribed.wait(harness.scaled(timeout)):
            raise harness.HarnessError(f"could not subscribe on the broker at 127.0.0.1:{self.port}")

    def stop(self):
        try:
            self.c.disconnect()
        except Exception:  # noqa: BLE001
            pass
        self.c.loop_stop()

    def _on_connect(self, client, userdata, flags, rc, properties=None):
        if rc == 0:
            client.subscribe([(t, SubscribeOptions(qos=1)) for t in self.TOPICS])

    # -- intake ------------------------------------------------------------

    def _ours(self, parts, p):
        if parts[0] == "persona":
            return parts[1] in self.personas
        if parts[0] == "room":
            return parts[1] in self.rooms
        if parts[0] == "sys" and len(parts) == 4:
            return parts[2] in self.instances
        if parts[0] == "sys" and parts[2] == "error":
            blob = json.dumps(p)
            return any(r in blob for r in self.rooms) or any(x in blob for x in self.personas)
        return False

    def _on_message(self, client, userdata, m):
        t = time.monotonic()
        if not m.payload:
            return  # a retained message cleared
        try:
            p = json.loads(m.payload.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(p, dict):
            return
        parts = m.topic.split("/")
        if not self._ours(parts, p):
            return
        kind = {"dormancy": "dormancy", "suggestion": "suggestion", "wake": "wake", "state": "state",
                "message": "message", "economics": "economics", "error": "error",
                "status": "status"}.get(parts[-1], parts[-1])
        if kind == "state" and parts[0] == "persona":
            kind = "pstate"
        if kind == "message" and p.get("sender_type") != "system":
            return  # our own inputs coming back
        if kind in ("dormancy", "suggestion", "wake", "message"):
            key = (kind, p.get("id"))
            if p.get("id") and key in self.seen_ids:
                return  # at-least-once delivery: printed once
            self.seen_ids.add(key)
        if kind == "economics":
            self.economics[parts[1]] = p
        with self.cond:
            self.seq += 1
            ev = Event(self.seq, t, kind, m.topic, p)
            self.events.append(ev)
            self.cond.notify_all()
        self._print(ev)

    # -- printing ----------------------------------------------------------

    def _print(self, ev):
        tl, p, n = self.tl, ev.p, self.tl.name
        if ev.kind == "dormancy":
            prev, lvl = p.get("previous", "?"), p.get("level", "?")
            arrow = f"{prev} → {self.tl.s(lvl, LEVEL_COLOUR.get(lvl, 'bold'))}"
            extra = ""
            if "fewer than" in p.get("reason", ""):
                extra = "  (minimum-awake guarantee)"
            tl.line("vigil", ev.topic,
                    f"{n(p.get('persona'))}: {arrow}  [{p.get('trigger')}]  \"{p.get('text', '')}\"{extra}", ev.t)
        elif ev.kind == "suggestion":
            opts = "/".join(p.get("options", []))
            tl.line("vigil", ev.topic,
                    f"{n(p.get('persona'))} is asked: \"{p.get('text', '')}\"  "
                    f"[{p.get('trigger')} · {opts} · default yes in {fmt_ms(p.get('default_after_ms', 0))}]",
                    ev.t, "magenta")
        elif ev.kind == "wake":
            conf = p.get("confidence")
            conf = f"{conf:.2f}" if isinstance(conf, (int, float)) else "?"
            tok = f", {p['tokens']} tokens" if p.get("tokens") else ""
            verdict = "WAKE" if p.get("should_wake") else "stay asleep"
            tl.line("vigil", ev.topic,
                    f"{n(p.get('persona'))}: {verdict}  (tier {p.get('tier')}, via {p.get('via')}, "
                    f"confidence {conf}{tok})  \"{p.get('reason', '')}\"",
                    ev.t, "green" if p.get("should_wake") else None)
        elif ev.kind == "message":
            tl.line("vigil", ev.topic, f"{p.get('sender')} (system): \"{p.get('text', '')}\"", ev.t, "cyan")
        elif ev.kind == "state":
            room = ev.topic.split("/")[1]
            if room in self.show_presence:
                hp = p.get("humans_present") or []
                if self.humans_present.get(room) != hp:
                    self.humans_present[room] = hp
                    tl.line("vigil", ev.topic, f"humans present: {', '.join(hp) if hp else 'nobody'}", ev.t)
        elif ev.kind == "error":
            if self.closing:
                return
            self.errors.append(p)
            tl.line("vigil", ev.topic, f"rejected: {p.get('reason')}", ev.t, "red")

    # -- queries -----------------------------------------------------------

    def mark(self):
        with self.cond:
            return self.seq

    def find(self, pred, since=0):
        with self.cond:
            evs = [e for e in self.events if e.seq > since]
        out = []
        for e in evs:
            try:
                if pred(e):
                    out.append(e)
            except (KeyError, TypeError, AttributeError):
                pass
        return out

    def wait(self, pred, timeout, since=0):
        """The first event after `since` satisfying pred, or None after timeout."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            got = self.find(pred, since)
            if got:
                return got[0]
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            with self.cond:
                self.cond.wait(min(left, 0.1))

    # -- publishing --------------------------------------------------------

    def publish(self, topic, payload, retain=False, timeout=10):
        data = json.dumps(payload, ensure_ascii=False).encode() if not isinstance(payload, bytes) else payload
        info = self.c.publish(topic, data, qos=1, retain=retain)
        info.wait_for_publish(timeout=harness.scaled(timeout))
        if not info.is_published():
            raise harness.HarnessError(f"no PUBACK for {topic} within {timeout}s")


# predicates ---------------------------------------------------------------

def is_dorm(persona, level=None, trigger=None, room=None, message_id=None):
    def pred(e):
        p = e.p
        return (e.kind == "dormancy" and p["persona"] == persona and (level is None or p["level"] == level)
                and (trigger is None or p["trigger"] == trigger) and (room is None or p["room"] == room)
                and (message_id is None or p.get("message_id") == message_id))
    return pred


def is_sugg(persona, trigger=None, room=None):
    def pred(e):
        p = e.p
        return (e.kind == "suggestion" and p["persona"] == persona and (trigger is None or p["trigger"] == trigger)
                and (room is None or p["room"] == room))
    return pred


def is_wake(persona, room, message_id=None):
    def pred(e):
        p = e.p
        return (e.kind == "wake" and p["persona"] == persona and p["room"] == room
                and (message_id is None or p.get("message_id") == message_id))
    return pred


def is_pstate(persona, room, level):
    def pred(e):
        return e.kind == "pstate" and e.p["persona"] == persona and e.p["rooms"].get(room, {}).get("level") == level
    return pred


# --------------------------------------------------------------------------
# the stack underneath


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pidfile, want):
    pid = read_int(pidfile)
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    return want in cmd


def local_stack():
    """What scripts/up left running: {'mqtt', 'redis', 'services': [...]}, or None."""
    run = os.environ.get("VIGIL_RUN_DIR") or os.path.join(ROOT, "run")
    pids = os.path.join(run, "pids")
    if not (pid_alive(os.path.join(pids, "mosquitto.pid"), "mosquitto")
            and pid_alive(os.path.join(pids, "redis.pid"), "redis-server")):
        return None
    mqtt = int(os.environ.get("VIGIL_MQTT_PORT") or read_int(os.path.join(run, "mosquitto", "port")) or 1883)
    redis = int(os.environ.get("VIGIL_REDIS_PORT") or read_int(os.path.join(run, "redis", "port")) or 6379)
    if not (harness.port_open(mqtt) and harness.port_open(redis)):
        return None
    services = [n for n in ("dormancy-monitor", "wake-evaluator")
                if pid_alive(os.path.join(pids, f"{n}.pid"), n)]
    return {"mqtt": mqtt, "redis": redis, "services": services}


class FakeLLM:
    def __init__(self, workdir):
        rules = os.path.join(workdir, "llm_rules.json")
        with open(rules, "w") as f:
            json.dump(LLM_RULES, f)
        self.log = os.path.join(workdir, "fake_llm.log")
        logf = open(self.log, "ab")
        self.proc = harness._popen(["/usr/bin/python3", FAKE_LLM, "--port", "0", "--rules", rules],
                                   stdout=subprocess.PIPE, stderr=logf, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        logf.close()
        line = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not line.endswith(b"\n"):
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                ch = os.read(self.proc.stdout.fileno(), 64)
                if not ch:
                    break
                line += ch
        m = re.match(rb"PORT (\d+)", line)
        if not m:
            self.stop()
            raise harness.HarnessError(f"fake_llm.py did not start: {line!r}\n{harness.tail(self.log)}")
        self.port = int(m.group(1))

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stdout:
            self.proc.stdout.close()


# --------------------------------------------------------------------------
# the scenario


class Demo:
    def __init__(self, args, style):
        self.a = args
        self.s = style
        self.tl = Timeline(style)
        self.tag = base36(int(time.time()) % 36 ** 6)
        self.stack_shard = None
        self.expectations = []  # (phase, label, ok, detail)
        self.phase = "setup"
        self.n = 0
        self.rooms = set()
        self.personas = set()
        self.all_rooms = []
        self.deadline = None
        self.scenario_end = None
        self.setup_s = 0.0
        self.services = []
        self.w = self.work = self.redis = self.broker = self.llm = self.rc = None

    # -- naming --------------------------------------------------------------

    def room(self, base):
        name = f"demo-{self.tag}-{base}"
        if self.stack_shard:
            k, n = self.stack_shard
            i = 2
            while harness.shard_of(name, n) != k:
                name = f"demo-{self.tag}-{base}{i}"
                i += 1
        self.rooms.add(name)
        self.all_rooms.append(name)
        return name

    def persona(self, name):
        pid = f"{name.lower()}-{self.tag}"
        self.personas.add(pid)
        self.tl.names[pid] = name
        return pid

    def mid(self, what):
        self.n += 1
        return f"{self.tag}-{what}-{self.n}"

    # -- bounded waits -------------------------------------------------------

    def left(self, want):
        """A wait bounded by `want` seconds (scaled) and by the run's deadline."""
        if self.tl.broken:
            raise KeyboardInterrupt
        return max(0.0, min(harness.scaled(want), self.deadline - time.monotonic()))

    def expect(self, label, pred, timeout, since=0):
        ev = self.w.wait(pred, self.left(timeout), since)
        self.expectations.append((self.phase, label, ev is not None))
        if ev is None:
            self.tl.note(f"✗ expected but not seen within {timeout:.1f}s: {label}", "red")
        return ev

    def expect_none(self, label, pred, seconds, since=0):
        """Waits `seconds` and records whether no event matched."""
        ev = self.w.wait(pred, min(seconds, max(0.0, self.deadline - time.monotonic())), since)
        self.expectations.append((self.phase, label, ev is None))
        if ev is not None:
            self.tl.note(f"✗ should not have happened: {label}", "red")
        return ev is None

    def evaluator_sees(self, room, levels, since, timeout=5):
        """wake-evaluator learns who sleeps from dormancy-monitor's retained
        persona/{p}/state; waits (bounded) until its room record in Redis
        holds those levels, so the next message is evaluated against them."""
        for p, lvl in levels.items():
            self.w.wait(is_pstate(p, room, lvl), self.left(timeout), since)
        key = f"{self.prefix}wake-evaluator:state:{room}"

        def known():
            raw = self.rc.hget(key, "s")
            st = json.loads(raw) if raw else {}
            have = {x.get("id"): x.get("l") for x in st.get("p", [])}
            return all(have.get(p) == lvl for p, lvl in levels.items())

        end = time.monotonic() + self.left(timeout)
        while time.monotonic() < end:
            try:
                if known():
                    return True
            except Exception:  # noqa: BLE001 - a layout this demo does not know: just wait a little
                time.sleep(0.3)
                return False
            time.sleep(0.05)
        self.tl.note("(wake-evaluator has not caught up with who sleeps yet: going on)", "yellow")
        return False

    def pause(self, seconds):
        if self.tl.broken:
            raise KeyboardInterrupt
        time.sleep(max(0.0, min(seconds, self.deadline - time.monotonic())))

    # -- inputs ----------------------------------------------------------------

    def meta(self, persona, room, overrides=None, **extra):
        body = {"persona": persona, "name": self.tl.name(persona), "rooms": [room] if room else [],
                "role": "assistant", "expertise_domains": ["python", "releases"],
                "confidence_levels": {"python": 0.8, "releases": 0.6}, "availability": 0.9,
                "tier": "smart", "ts": now_ms()}
        if overrides:
            body["dormancy"] = overrides
        body.update(extra)
        self.w.publish(f"persona/{persona}/meta", body, retain=True)

    def cast(self, room, personas, overrides=None):
        for p in personas:
            self.meta(p, room, overrides)
        self.tl.line("sent", "persona/+/meta",
                     f"{', '.join(self.tl.name(p) for p in personas)} join (meta, tier smart"
                     f"{', 60 s thresholds for rules 1-2' if overrides else ''})")

    def say(self, room, sender, text, human=False, reply_to=None, what="m"):
        mid = self.mid(what)
        body = {"id": mid, "room": room, "sender": sender, "sender_type": "human" if human else "ai",
                "text": text, "ts": now_ms()}
        if reply_to:
            body["reply_to"] = reply_to
        self.w.publish(f"room/{room}/message", body)
        who = f"{sender} (human)" if human else self.tl.name(sender)
        self.tl.line("sent", f"room/{room}/message", f"{who}: \"{text}\"")
        return mid

    def answer(self, persona, room, sugg, answer):
        body = {"id": self.mid("c"), "cmd": "answer", "room": room, "suggestion_id": sugg.p["id"],
                "answer": answer, "by": persona, "ts": now_ms()}
        self.w.publish(f"persona/{persona}/command", body)
        self.tl.line("sent", f"persona/{persona}/command", f"{self.tl.name(persona)} answers {answer}")

    def command(self, persona, cmd, room, text, **fields):
        body = {"id": self.mid("c"), "cmd": cmd, "room": room, "ts": now_ms()}
        body.update(fields)
        self.w.publish(f"persona/{persona}/command", body)
        self.tl.line("sent", f"persona/{persona}/command", text)

    def control(self, room, action, text, **fields):
        body = {"id": self.mid("ctl"), "action": action, "by": "joel", "ts": now_ms()}
        body.update(fields)
        self.w.publish(f"room/{room}/control", body)
        self.tl.line("sent", f"room/{room}/control", text)

    def presence(self, room, status):
        body = {"user": "joel", "session": "tab-1", "status": status, "last_activity": now_ms(),
                "ts": now_ms()}
        self.w.publish(f"room/{room}/presence", body)
        self.tl.line("sent", f"room/{room}/presence", f"joel's browser tab reports {status}")

    def forget(self, *rooms):
        """Ends a phase: the room is deleted so its timers stay quiet."""
        for r in rooms:
            body = {"id": self.mid("ctl"), "action": "delete", "by": "demo", "ts": now_ms()}
            self.w.publish(f"room/{r}/control", body)
        self.tl.note(f"(phase over: room{'s' if len(rooms) > 1 else ''} deleted so "
                     f"{'their' if len(rooms) > 1 else 'its'} timers stay quiet)")

    def header(self, i, rooms, lines):
        number, title = PHASES[i]
        self.phase = f"{number}. {title}"
        self.tl.header(number, title, rooms, lines)

    # -- phases ----------------------------------------------------------------

    def phase_quiet(self):
        room = self.room("quiet")
        ada, bo, cy, dee = (self.persona(n) for n in ("Ada", "Bo", "Cy", "Dee"))
        self.header(0, [room], [
            f"Rule 1: {fmt_ms(NO_HUMAN_MS)} after the last human message every active persona is asked",
            "  \"Switch to mention-only?\" (suggest, don't force). Ada answers yes, Bo no, Cy snoozes",
            f"  (asked again {fmt_ms(SNOOZE_MS)} later, then yes), Dee never answers (default yes after "
            f"{fmt_ms(SUGGESTION_TIMEOUT_MS)}).",
            f"Rule 2: {fmt_ms(AI_ONLY_MS)} into the AI-only talk everyone is put to sleep, mention-only ones too.",
            "Rule 3: the human's \"I'm back\" wakes all four: their dormancy came from human absence.",
        ])
        personas = [ada, bo, cy, dee]
        self.cast(room, personas)
        since = self.w.mark()
        h1 = self.say(room, "joel", "Morning! I'm off to a meeting - can you draft the release notes meanwhile?",
                      human=True)
        self.pause(0.3)
        a1 = self.say(room, ada, "On it: I'll collect the changelog.", reply_to=h1)
        self.pause(0.3)
        b1 = self.say(room, bo, "I'll write the upgrade notes.", reply_to=a1)
        self.pause(0.3)
        self.say(room, cy, "I'll review both drafts when they are ready.", reply_to=b1)
        wait1 = NO_HUMAN_MS / 1000 + 4
        sg = {}
        for p in personas:
            sg[p] = self.expect(f"{self.tl.name(p)} gets the no-human suggestion",
                                is_sugg(p, "no-human", room), wait1, since)
        if sg[ada]:
            self.answer(ada, room, sg[ada], "yes")
        if sg[bo]:
            self.answer(bo, room, sg[bo], "no")
        snooze_mark = self.w.mark()
        if sg[cy]:
            self.answer(cy, room, sg[cy], "snooze")
        self.expect("Ada -> mention-only (answered yes)", is_dorm(ada, "mention-only", "no-human"), 4, since)
        self.expect("Dee -> mention-only by default (no answer)",
                    is_dorm(dee, "mention-only", "suggestion-default"), SUGGESTION_TIMEOUT_MS / 1000 + 4, since)
        again = self.expect("Cy is asked again after the snooze", is_sugg(cy, "no-human", room),
                            SNOOZE_MS / 1000 + 4, snooze_mark)
        if again:
            self.answer(cy, room, again, "yes")
            self.expect("Cy -> mention-only (yes, second time)", is_dorm(cy, "mention-only", "no-human"), 4, since)
        for p in personas:
            self.expect(f"{self.tl.name(p)} auto-sleeps after the AI-only stretch", is_dorm(p, "sleep", "ai-only"),
                        AI_ONLY_MS / 1000 + 5, since)
        self.expectations.append((self.phase, "Bo (answered no) is not asked again in this quiet period",
                                  len(self.w.find(is_sugg(bo, "no-human", room), since)) == 1))
        self.pause(0.3)
        h2 = self.say(room, "joel", "I'm back - how far did you get?", human=True)
        for p in personas:
            self.expect(f"{self.tl.name(p)} wakes on the human's message",
                        is_dorm(p, "active", "human-reentry", message_id=h2), 5, since)
        self.forget(room)

    def phase_pileon(self):
        room = self.room("pileon")
        ada, bo, cy, dee = (self.persona(n) for n in ("Ada", "Bo", "Cy", "Dee"))
        self.header(1, [room], [
            "Rule 4: four AIs answer one human question; the first two are fine, the third and fourth",
            "  are asked \"Multiple AIs already responded. Switch to mention-only?\". Cy says yes, Dee",
            "  lets it default. Then Ada and Bo go to sleep by choice (@self dormant sleep).",
            "Rule 3, minimum awake: the next human question would meet nobody able to answer, so the",
            "  two most recent answerers (Dee, Cy) are woken; Ada and Bo stay asleep (their choice).",
            "  wake-evaluator asks the (fake) LLM about each sleeper: not for them.",
        ])
        personas = [ada, bo, cy, dee]
        self.cast(room, personas, QUIET_OVERRIDES)
        since = self.w.mark()
        q1 = self.say(room, "joel", "How do I reverse a list in Python?", human=True)
        texts = {ada: "my_list[::-1] returns a reversed copy.", bo: "my_list.reverse() reverses it in place.",
                 cy: "reversed(my_list) gives you an iterator.", dee: "Or sorted(my_list, reverse=True)."}
        for p in personas:
            self.pause(0.15)
            self.say(room, p, texts[p], reply_to=q1)
        s_cy = self.expect("Cy (3rd responder) gets the pile-on suggestion", is_sugg(cy, "redundant", room), 5, since)
        self.expect("Dee (4th responder) gets the pile-on suggestion", is_sugg(dee, "redundant", room), 5, since)
        self.expectations.append((self.phase, "Ada and Bo (first two responders) are not asked",
                                  not self.w.find(lambda e: e.kind == "suggestion" and e.p["persona"] in (ada, bo),
                                                  since)))
        if s_cy:
            self.answer(cy, room, s_cy, "yes")
        self.expect("Cy -> mention-only (yes)", is_dorm(cy, "mention-only", "redundant"), 4, since)
        self.expect("Dee -> mention-only by default", is_dorm(dee, "mention-only", "suggestion-default"),
                    SUGGESTION_TIMEOUT_MS / 1000 + 4, since)
        self.say(room, ada, "@self dormant sleep")
        self.expect("Ada sleeps by choice", is_dorm(ada, "sleep", "manual"), 5, since)
        self.say(room, bo, "@self dormant sleep")
        self.expect("Bo sleeps by choice", is_dorm(bo, "sleep", "manual"), 5, since)
        self.evaluator_sees(room, {ada: "sleep", bo: "sleep"}, since)
        q2 = self.say(room, "joel", "Thanks! And how do I sort it?", human=True)
        for p in (dee, cy):
            self.expect(f"{self.tl.name(p)} is woken by the minimum-awake guarantee",
                        is_dorm(p, "active", "human-reentry", message_id=q2), 5, since)
        for p in (ada, bo):
            self.w.wait(is_wake(p, room, q2), self.left(5), since)  # informational
        self.expect_none("Ada and Bo stay asleep (dormant by choice)",
                         lambda e: e.kind == "dormancy" and e.p["persona"] in (ada, bo) and e.p["level"] == "active",
                         0.3, since)
        self.forget(room)

    def phase_manual(self):
        room = self.room("manual")
        ada, bo, cy, dee = (self.persona(n) for n in ("Ada", "Bo", "Cy", "Dee"))
        self.header(2, [room], [
            "Rule 5: personas set their own level in their messages (@self dormant ..., @self awake,",
            "  @self status), a human can command one persona (persona/{p}/command) or wake a whole room",
            "  (room/{r}/control), an @mention wakes a sleeper, and a timed dormancy (\"for 3s\") ends by itself.",
        ])
        personas = [ada, bo, cy, dee]
        self.cast(room, personas, QUIET_OVERRIDES)
        since = self.w.mark()
        self.say(room, bo, "@self dormant mention-only")
        self.expect("Bo -> mention-only (@self)", is_dorm(bo, "mention-only", "manual"), 5, since)
        st = self.say(room, cy, "@self status")
        self.expect("@self status is answered in the room",
                    lambda e: e.kind == "message" and e.p.get("reply_to") == st, 5, since)
        self.say(room, dee, "@self dormant sleep")
        self.expect("Dee sleeps (@self)", is_dorm(dee, "sleep", "manual"), 5, since)
        self.say(room, cy, "@Dee could you double-check the numbers?")
        self.expect("Dee is woken by the @mention", is_dorm(dee, "active", "mention"), 5, since)
        self.command(cy, "dormant", room, "joel tells Cy to go human-only", level="human-only", by="joel")
        self.expect("Cy -> human-only (command from joel)", is_dorm(cy, "human-only", "manual"), 5, since)
        self.say(room, bo, "@self awake")
        self.expect("Bo -> active (@self awake)", is_dorm(bo, "active", "manual"), 5, since)
        self.say(room, dee, "@self dormant mention-only")
        self.expect("Dee -> mention-only (@self)", is_dorm(dee, "mention-only", "manual"), 5, since)
        self.say(room, ada, "@self dormant sleep for 3s")
        self.expect("Ada sleeps for 3 s (@self ... for 3s)", is_dorm(ada, "sleep", "manual"), 5, since)
        self.expect("Ada's timed dormancy ends by itself", is_dorm(ada, "active", "timed-end"), 3 + 4, since)
        self.pause(0.2)
        mark = self.w.mark()
        self.control(room, "wake", "joel wakes everyone in the room", all=True)
        for p in (cy, dee):
            self.expect(f"{self.tl.name(p)} is woken by the room wake", is_dorm(p, "active", "manual"), 5, mark)
        self.forget(room)

    def phase_presence(self):
        room = self.room("presence")
        ada, bo = self.persona("Ada"), self.persona("Bo")
        self.header(3, [room], [
            "Rule 6 (VIGIL_DORMANCY_PRESENCE=1): joel is reading the room in a browser tab (presence",
            f"  heartbeat \"active\"). Past the {fmt_ms(NO_HUMAN_MS)} no-human threshold nobody is asked while he is there;",
            "  when his tab goes idle the suggestions that came due meanwhile arrive at once.",
        ])
        self.w.show_presence.add(room)
        self.w.humans_present[room] = []
        self.cast(room, [ada, bo])
        since = self.w.mark()
        self.presence(room, "active")
        h = self.say(room, "joel", "I'm reading along - carry on.", human=True)
        t_h = time.monotonic()
        self.pause(0.3)
        a = self.say(room, ada, "Continuing with the migration plan.", reply_to=h)
        self.pause(0.3)
        self.say(room, bo, "I'll take the rollback section.", reply_to=a)
        quiet = NO_HUMAN_MS / 1000 + 1.2 - (time.monotonic() - t_h)
        self.tl.note(f"waiting {NO_HUMAN_MS / 1000 + 1.2:.1f}s after joel's message: past the threshold, "
                     "nobody should be asked while he is active")
        self.expect_none("no suggestion while joel's session is active",
                         lambda e: e.kind == "suggestion" and e.p["room"] == room, max(0.0, quiet), since)
        mark = self.w.mark()
        self.presence(room, "idle")
        sg = {}
        for p in (ada, bo):
            sg[p] = self.expect(f"{self.tl.name(p)} is asked once joel is idle", is_sugg(p, "no-human", room), 4, mark)
        for p in (ada, bo):
            if sg[p]:
                self.answer(p, room, sg[p], "no")
        self.pause(0.3)
        self.forget(room)

    def phase_adaptive(self):
        busy, calm = self.room("busy"), self.room("calm")
        ada, bo, cy, dee = (self.persona(n) for n in ("Ada", "Bo", "Cy", "Dee"))
        fast = NO_HUMAN_MS * 3 // 5
        self.header(4, [busy, calm], [
            "Rule 7 (VIGIL_DORMANCY_ADAPTIVE=1): two rooms, same threshold. In the busy one Ada and Bo",
            "  fire off six AI messages at once (> 5 messages a minute, AI:human > 3), so the no-human",
            f"  threshold shrinks to 3/5: they are asked after {fmt_ms(fast)}. The calm room waits the "
            f"normal {fmt_ms(NO_HUMAN_MS)}.",
        ])
        for p, r in ((ada, busy), (bo, busy), (cy, calm), (dee, calm)):
            self.meta(p, r)
        self.tl.line("sent", "persona/+/meta", f"Ada, Bo join {busy}; Cy, Dee join {calm}")
        since = self.w.mark()
        hb = self.say(busy, "joel", "Quick sync: where are we?", human=True)
        t_b = time.monotonic()
        hc = self.say(calm, "joel", "Anything new today?", human=True)
        t_c = time.monotonic()
        self.say(calm, cy, "Nothing new here.", reply_to=hc)
        prev = hb
        lines = ["Build is green.", "Two reviews pending.", "I'll take the first.", "I'll take the second.",
                 "Docs need a pass too.", "On it after the reviews."]
        for i, text in enumerate(lines):
            prev = self.say(busy, (ada, bo)[i % 2], text, reply_to=prev)
            self.pause(0.1)
        fast_txt, norm_txt = f"for {fmt_ms(fast)}.", f"for {fmt_ms(NO_HUMAN_MS)}."
        got = {}
        for p, r, txt, wait in ((ada, busy, fast_txt, fast), (bo, busy, fast_txt, fast),
                                (cy, calm, norm_txt, NO_HUMAN_MS), (dee, calm, norm_txt, NO_HUMAN_MS)):
            got[p] = self.expect(f"{self.tl.name(p)} is asked \"...{txt}\" in {r.split('-')[-1]}",
                                 lambda e, p=p, r=r, txt=txt: is_sugg(p, "no-human", r)(e) and txt in e.p["text"],
                                 wait / 1000 + 4, since)
            if p == bo and got[p]:
                st = [e for e in self.w.find(lambda e: e.kind == "state" and e.topic == f"room/{busy}/state", since)]
                if st:
                    v, ratio = st[-1].p.get("velocity_per_min"), st[-1].p.get("ai_to_human_ratio")
                    self.tl.note(f"room/{busy}/state: velocity {v:.1f} msg/min, AI:human {ratio:.0f} "
                                 f"-> threshold x3/5 = {fmt_ms(fast)}")
        if got[ada] and got[cy]:
            db, dc = got[ada].t - t_b, got[cy].t - t_c
            self.tl.note(f"busy room asked after {db:.1f}s, calm room after {dc:.1f}s")
            self.expectations.append((self.phase, "the busy room is asked sooner than the calm one", db < dc - 0.8))
        for p, r in ((ada, busy), (bo, busy), (cy, calm), (dee, calm)):
            if got[p]:
                self.answer(p, r, got[p], "no")
        self.pause(0.3)
        self.forget(busy, calm)

    def phase_llm(self):
        room = self.room("oncall")
        ada, bo, ops = self.persona("Ada"), self.persona("Bo"), self.persona("Ops")
        self.header(5, [room], [
            "wake-evaluator: Ops (a smart-tier persona, on call for servers) is asleep by choice. For each",
            "  human message the evaluator asks the LLM (here tests/support/fake_llm.py) whether Ops should",
            f"  wake: \"{CASUAL}\" -> no; \"{EMERGENCY}\" -> yes, and dormancy-monitor",
            "  wakes Ops (trigger wake-decision). Then the room's token economics.",
        ])
        for p in (ada, bo):
            self.meta(p, room, QUIET_OVERRIDES)
        self.meta(ops, room, QUIET_OVERRIDES, role="sre", expertise_domains=["servers", "incidents"],
                  confidence_levels={"servers": 0.95, "incidents": 0.9})
        self.tl.line("sent", "persona/+/meta", "Ada, Bo and Ops join (meta, tier smart)")
        since = self.w.mark()
        self.say(room, ops, "Nothing on fire - @self dormant sleep")
        self.expect("Ops sleeps by choice", is_dorm(ops, "sleep", "manual"), 5, since)
        self.evaluator_sees(room, {ops: "sleep"}, since)
        m1 = self.say(room, "joel", CASUAL, human=True)
        self.expect("the LLM says casual chatter is not for Ops",
                    lambda e: is_wake(ops, room, m1)(e) and e.p["should_wake"] is False and e.p["via"] == "llm",
                    10, since)
        m2 = self.say(room, "joel", EMERGENCY, human=True)
        self.expect("the LLM wakes Ops for the outage (smart tier, confidence > 0.7)",
                    lambda e: (is_wake(ops, room, m2)(e) and e.p["should_wake"] is True and e.p["via"] == "llm"
                               and e.p["tier"] == "smart" and e.p["confidence"] > 0.7), 10, since)
        self.expect("dormancy-monitor wakes Ops on that decision",
                    is_dorm(ops, "active", "wake-decision", message_id=m2), 5, since)
        self.expectations.append((self.phase, "Ops was not woken by the casual message",
                                  not self.w.find(is_dorm(ops, "active", message_id=m1), since)))
        econ = self.expect(f"room/{room}/economics counts the LLM tokens",
                           lambda e: (e.kind == "economics" and e.topic == f"room/{room}/economics"
                                      and e.p.get("llm_evaluations", 0) >= 2 and e.p.get("tokens_spent", 0) > 0),
                           5, since)
        self.forget(room)
        self.economics(room, econ.p if econ else None)

    def economics(self, room, p):
        s = self.s
        self.tl.out("")
        self.tl.out(s(f"Token economics of {room} (room/{room}/economics, retained):", "bold"))
        if not p:
            self.tl.out(s("  not published", "red"))
            return
        self.tl.out(f"  tokens spent on wake decisions   {p.get('tokens_spent', 0):>7}   "
                    f"({p.get('evaluations', 0)} evaluations, {p.get('llm_evaluations', 0)} by the LLM)")
        self.tl.out(f"  tokens saved (estimate)          {p.get('tokens_saved_estimate', 0):>7}   "
                    f"({p.get('messages_saved_estimate', 0):.2f} AI messages not sent while dormant)")
        others = {r: e for r, e in self.w.economics.items() if r != room}
        if others:
            spent = sum(e.get("tokens_spent", 0) for e in self.w.economics.values())
            saved = sum(e.get("tokens_saved_estimate", 0) for e in self.w.economics.values())
            self.tl.out(f"  all demo rooms: {spent} tokens spent, {saved} saved (estimate), "
                        f"over {len(self.w.economics)} rooms")
        self.tl.out(s("  (Saved is small here: personas were dormant for seconds. It is each persona's own "
                      "message rate before it went dormant x the dormant time x average AI message tokens.)",
                      "grey"))

    # -- setup and teardown ----------------------------------------------------

    def build_dir(self):
        d = self.a.build_dir or os.environ.get("VIGIL_BUILD_DIR") or os.path.join(ROOT, "build", "release")
        return os.path.abspath(d)

    def ensure_binaries(self):
        d = self.build_dir()
        missing = [n for n in ("dormancy-monitor", "wake-evaluator")
                   if not os.access(harness.service_binary(n, d), os.X_OK)]
        default = os.path.join(ROOT, "build", "release")
        if (missing or self.a.build) and d == os.path.abspath(default):
            self.log(f"==> building build/release (missing: {', '.join(missing) or 'none'})")
            rc = subprocess.call([os.path.join(ROOT, "scripts", "build"), "release"], stdout=sys.stderr)
            if rc != 0:
                raise harness.HarnessError("scripts/build release failed")
            missing = [n for n in ("dormancy-monitor", "wake-evaluator")
                       if not os.access(harness.service_binary(n, d), os.X_OK)]
        if missing:
            raise harness.HarnessError(f"no {', '.join(missing)} under {d}/services/ "
                                       "(scripts/build release, or point VIGIL_BUILD_DIR at a build tree)")
        return d

    def log(self, text):
        print(text, file=sys.stderr, flush=True)

    def setup(self):
        s = self.s
        bdir = self.ensure_binaries()
        self.work = tempfile.mkdtemp(prefix="vigil-demo-")
        stack = local_stack()
        if self.a.stack and stack is None:
            raise harness.HarnessError("--stack: the local stack's broker and Redis are not running (scripts/up)")
        if not self.a.stack:
            if stack:
                self.tl.out(s("(the local stack is running: the demo keeps off it and uses a private broker "
                              "and Redis; see --stack)", "grey"))
            stack = None
        if stack:
            running = stack["services"]
            if running:
                self.tl.out(s(f"warning: the stack's own {' and '.join(running)} answer the demo rooms too "
                              "(5-minute thresholds, no LLM) and their decisions mix with the demo's: "
                              "expect phases 2 and 6 to go differently", "yellow"))
            stopped = [n for n in ("dormancy-monitor", "wake-evaluator") if n not in running]
            if stopped:
                self.tl.out(s(f"warning: the stack's {' and '.join(stopped)} are stopped: their persistent "
                              "sessions queue the demo's messages, replayed at their next start", "yellow"))
            self.stack_shard = STACK_SHARD
            self.mqtt_port, self.redis_port = stack["mqtt"], stack["redis"]
            where = (f"the local stack's mosquitto 127.0.0.1:{self.mqtt_port} and redis 127.0.0.1:{self.redis_port} "
                     f"(watch along: mosquitto_sub -p {self.mqtt_port} -v -t 'persona/#' -t 'room/#')")
        else:
            self.redis = harness.RedisServer(self.work, appendfsync="everysec").start()
            self.broker = harness.Mosquitto(self.work).start()
            self.mqtt_port, self.redis_port = self.broker.port, self.redis.port
            where = (f"a private mosquitto 127.0.0.1:{self.mqtt_port} and redis 127.0.0.1:{self.redis_port} "
                     f"in {self.work}")
        import redis  # python3-redis, as the integration tests
        self.rc = redis.Redis(host="127.0.0.1", port=self.redis_port, socket_timeout=5)
        self.llm = FakeLLM(self.work)
        self.prefix = f"demo-{os.getpid()}-{self.tag}:"
        shard = f"{self.stack_shard[0]}/{self.stack_shard[1]}" if self.stack_shard else "0/1"
        common = {"VIGIL_MQTT_URL": f"mqtt://127.0.0.1:{self.mqtt_port}",
                  "VIGIL_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
                  "VIGIL_REDIS_PREFIX": self.prefix, "VIGIL_SHARD": shard}
        self.dm = harness.Service("dormancy-monitor", self.work, {**common, **DORMANCY_ENV},
                                  build_dir=bdir, instance=f"demo-{self.tag}-dm")
        self.we = harness.Service("wake-evaluator", self.work,
                                  {**common, **WAKE_ENV, "VIGIL_LLM_URL": self.llm.url},
                                  build_dir=bdir, instance=f"demo-{self.tag}-we")
        self.w = Watch(self.mqtt_port, self.tl, self.rooms, self.personas, {self.dm.instance, self.we.instance})
        self.w.start()
        for svc in (self.dm, self.we):
            self.services.append(svc)
            svc.start(timeout=30)
        ready = self.w.wait(lambda e: e.kind == "status" and e.p.get("state") == "ready"
                            and e.topic == f"sys/wake-evaluator/{self.we.instance}/status", harness.scaled(10))
        ready = ready and self.w.wait(lambda e: e.kind == "status" and e.p.get("state") == "ready"
                                      and e.topic == f"sys/dormancy-monitor/{self.dm.instance}/status",
                                      harness.scaled(10))
        if not ready:
            raise harness.HarnessError("the services did not announce ready on sys/<service>/<instance>/status")
        self.tl.out(s("Vigil demo", "bold") + f" - run {self.tag}, on {where}")
        self.tl.out(f"  dormancy-monitor + wake-evaluator from {os.path.relpath(bdir, ROOT)}, Redis prefix "
                    f"{self.prefix}, LLM: fake_llm.py at {self.llm.url}")
        self.tl.out(f"  thresholds: no-human {fmt_ms(NO_HUMAN_MS)}, AI-only {fmt_ms(AI_ONLY_MS)}, "
                    f"suggestion default {fmt_ms(SUGGESTION_TIMEOUT_MS)}, snooze {fmt_ms(SNOOZE_MS)}, "
                    f"pile-on window {fmt_ms(REDUNDANT_WINDOW_MS)}; presence and adaptive on")
        self.tl.out(s("  columns: time since the start, 'sent' = the demo's input / 'vigil' = what Vigil "
                      "published, topic, what it says", "grey"))

    def teardown(self):
        problems = []
        if self.w is not None:
            self.w.closing = True  # what a cleanup provokes is not the scenario's business
        for svc in self.services:
            try:
                if svc.alive():
                    svc.terminate(timeout=10)
            except harness.HarnessError as e:
                problems.append(str(e))
            problems += svc.check()
        if self.stack_shard:
            for what, fn in (("retained messages", self.clean_stack_retained),
                             ("MQTT sessions", self.clean_stack_sessions),
                             (f"Redis keys {self.prefix}*", self.clean_stack_redis)):
                try:
                    if self.w is not None or what.startswith("Redis"):
                        fn()
                except Exception as e:  # noqa: BLE001
                    problems.append(f"cleanup of {what} on the local stack: {e}")
        if self.w is not None:
            self.w.stop()
        if self.rc is not None:
            self.rc.close()
        if self.llm:
            self.llm.stop()
        if self.broker:
            self.broker.stop()
        if self.redis:
            self.redis.stop()
        return problems

    def clean_stack_retained(self):
        """On the stack's broker: the retained messages this run left behind
        (room states are cleared by the room deletes at the end of each phase)."""
        for p in self.personas:
            for t in ("meta", "state"):
                self.w.publish(f"persona/{p}/{t}", b"", retain=True)
        for r in self.all_rooms:
            for t in ("economics", "state"):
                self.w.publish(f"room/{r}/{t}", b"", retain=True)

    def clean_stack_sessions(self):
        """Our services' persistent MQTT sessions and status topics on the stack's broker."""
        for svc in (self.dm, self.we):
            self.w.publish(f"sys/{svc.name}/{svc.instance}/status", b"", retain=True)
            cid = f"vigil-{svc.name}-{self.stack_shard[0]}"
            c = harness.new_client(cid, v5=True)
            c.connect("127.0.0.1", self.mqtt_port, keepalive=5, clean_start=True)
            c.loop_start()
            harness.wait_until(lambda: c.is_connected(), 5, "session cleanup connect")
            c.disconnect()
            c.loop_stop()

    def clean_stack_redis(self):
        import redis
        c = redis.Redis(host="127.0.0.1", port=self.redis_port, socket_timeout=5)
        try:
            keys = list(c.scan_iter(match=self.prefix + "*", count=1000))
            for i in range(0, len(keys), 500):
                c.delete(*keys[i:i + 500])
        finally:
            c.close()

    # -- the run -------------------------------------------------------------------

    def run(self):
        started = time.monotonic()
        problems = []
        interrupted = False
        try:
            self.setup()
            self.setup_s = time.monotonic() - started
            self.deadline = time.monotonic() + harness.scaled(self.a.timeout)
            self.tl.t0 = time.monotonic()
            for ph in (self.phase_quiet, self.phase_pileon, self.phase_manual, self.phase_presence,
                       self.phase_adaptive, self.phase_llm):
                if time.monotonic() >= self.deadline:
                    self.tl.note(f"run deadline ({self.a.timeout:.0f}s) reached: skipping the rest", "red")
                    self.expectations.append((ph.__name__, "phase started before the deadline", False))
                    continue
                for svc in self.services:
                    if not svc.alive():
                        raise harness.HarnessError(f"{svc.name} exited:\n{harness.tail(svc.runs[-1][0])}")
                ph()
            self.scenario_end = time.monotonic()
        except KeyboardInterrupt:
            interrupted = True
            self.tl.out(self.s("\ninterrupted: stopping what the demo started", "yellow"))
        except harness.HarnessError as e:
            problems.append(str(e))
        except Exception:  # noqa: BLE001 - reported, and everything is still stopped
            problems.append(traceback.format_exc())
        finally:
            problems += self.teardown()
        total = time.monotonic() - started
        return self.report(total, problems, interrupted)

    def report(self, total, problems, interrupted):
        s = self.s
        missing = [(ph, label) for ph, label, ok in self.expectations if not ok]
        errors = self.w.errors if getattr(self, "w", None) else []
        self.tl.out("")
        seen = len(self.expectations) - len(missing)
        scen = (self.scenario_end or time.monotonic()) - self.tl.t0 if self.deadline else 0.0
        if not missing and not problems and not errors and not interrupted and self.expectations:
            self.tl.out(s(f"✔ all {seen} expected events seen", "green", "bold")
                        + f" - scenario {scen:.1f}s; whole run {total:.1f}s (setup {self.setup_s:.1f}s, teardown included)")
        else:
            what = "interrupted: " if interrupted else ""
            self.tl.out(s(f"{what}{seen} of {len(self.expectations)} expected events seen", "yellow", "bold")
                        + f" - scenario {scen:.1f}s; whole run {total:.1f}s")
            if missing:
                self.tl.out(s("missing:", "red", "bold"))
                for ph, label in missing:
                    self.tl.out(s(f"  - [{ph}] {label}", "red"))
            for e in errors:
                self.tl.out(s(f"  - a service rejected an input: {json.dumps(e)[:300]}", "red"))
            for p in problems:
                self.tl.out(s(f"  - {p}", "red"))
            if missing or problems or errors:
                for svc in self.services:
                    if svc.runs:
                        self.tl.out(s(f"--- {svc.name} log ({svc.runs[-1][0]}) ---", "grey"))
                        self.tl.out(harness.tail(svc.runs[-1][0], 20))
        failed = bool(missing or problems or errors or interrupted or not self.expectations)
        keep = self.a.keep or (failed and not interrupted)
        if getattr(self, "work", None):
            if keep:
                self.tl.out(s(f"logs kept in {self.work}", "grey"))
            else:
                shutil.rmtree(self.work, ignore_errors=True)
        if interrupted:
            return 130
        return 1 if (self.a.check and failed) else 0


def main():
    ap = argparse.ArgumentParser(
        prog="scripts/demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Shows every Vigil dormancy rule firing in under a minute, as a readable timeline.",
        epilog=f"""\
Phases (each in a room of its own, named demo-<run>-<phase>):
  1. rules 1-3: no-human suggestion answered yes / no / snooze / not at all,
     AI-only auto-sleep, "I'm back" waking the absence-caused sleepers
  2. rule 4: the third and fourth answers to one human question get "Multiple
     AIs already responded"; the minimum-awake guarantee
  3. rule 5: @self dormant / awake / status, a timed dormancy ending by itself,
     an @mention waking a sleeper, a human's command, the room's wake-all
  4. rule 6: an active human (presence heartbeat) blocks the suggestion
  5. rule 7: a busy AI-only burst shortens the no-human threshold to 3/5
  6. wake-evaluator: the LLM wakes a smart-tier sleeper for "{EMERGENCY}",
     not for "{CASUAL}"; the room's token economics

Where it runs: by default on a private mosquitto and redis-server on free
loopback ports in a temporary folder, even when the local stack (scripts/up)
is running: the stack's own dormancy-monitor and wake-evaluator would answer
the demo rooms too (5-minute thresholds, no LLM), and while they are stopped
their persistent sessions queue the demo's traffic for their next start.
--stack runs on the stack's broker and Redis anyway (its services on a shard
of their own, so their MQTT client ids differ from the stack's; Redis keys,
retained messages and sessions of the run are removed at the end). Either
way the demo starts its own dormancy-monitor and wake-evaluator (thresholds
of seconds, Redis prefix demo-<pid>-<run>:, free HTTP ports) and
tests/support/fake_llm.py as their LLM, and stops all of it at the end,
Ctrl-C included.

Environment:
  VIGIL_BUILD_DIR    build tree with services/<name>/<name> (default
                     build/release, built by scripts/build release if missing)
  VIGIL_RUN_DIR      the local stack's folder, for --stack (default ./run)
  VIGIL_MQTT_PORT, VIGIL_REDIS_PORT   the local stack's ports, for --stack
                     (default: from run/, else 1883 and 6379)
  VIGIL_TEST_SLOW    multiplies every wait (a slow machine)
  NO_COLOR           no colours (colours are used only on a terminal)

Exit status: 0; with --check, 1 unless every expected event was seen (the
missing ones are listed); 130 on Ctrl-C; 2 on bad usage.""")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--private", action="store_true",
                   help="a private broker and Redis (the default)")
    g.add_argument("--stack", action="store_true",
                   help="the local stack's broker and Redis instead (see below)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every expected event was seen (for tests)")
    ap.add_argument("--build-dir", help="build tree of the service binaries (overrides VIGIL_BUILD_DIR)")
    ap.add_argument("--build", action="store_true", help="run scripts/build release first")
    ap.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                    help="colour the timeline (auto: only when stdout is a terminal)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder with the logs")
    ap.add_argument("--timeout", type=float, default=90,
                    help="bound of the whole scenario in seconds (default 90; it takes about 40)")
    a = ap.parse_args()
    colour = a.color == "always" or (a.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))

    def on_term(signum, frame):
        raise KeyboardInterrupt

    # SIGINT too: a shell without job control starts background commands
    # with SIGINT ignored, and Python keeps it so.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_term)
    try:
        sys.exit(Demo(a, Style(colour)).run())
    except harness.HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
