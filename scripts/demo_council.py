#!/usr/bin/python3
"""scripts/demo-council - the council (Autonomous Mode) in about a
minute, as a timeline of what it publishes.

It starts its own mosquitto and redis-server on free loopback ports in a
temporary folder, tests/support/fake_llm.py as the LLM (answering each of
the four personas; Sol's answer scripted per loop), tests/support/fake_a2a.py
as the A2A agent, and the council service with a loop interval of 1.5 s.
Then one session for user joel in room general:

  loop 1  note:       the report deadline is noted
  loop 2  ask user:   a [p8] question; joel answers 2 s later, which starts
                      loop 3 at once with the answer quoted in SENSE
  loop 3  research:   delegated over A2A (message/send); the artifact recorded
  loop 4  schedule:   published on council/{session}/request
  loop 5  search:     published on council/{session}/request
  loop 6  sleep:      the next loop waits 3 s
  loop 7-9 reflect:   three in a row: the circuit breaker pauses the session
  resume, one more loop, end; then `vigil council show` of the session.

Everything it started is stopped at the end, Ctrl-C included. Binaries come
from VIGIL_BUILD_DIR, else build/release, else build/asan.

    scripts/demo-council [--check] [--help]

--check exits 1 unless every expected event was seen
(tests/integration/test_demo_council.py runs it).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pick_build():
    if os.environ.get("VIGIL_BUILD_DIR"):
        return os.environ["VIGIL_BUILD_DIR"]
    for kind in ("release", "asan"):
        d = os.path.join(ROOT, "build", kind)
        if os.path.exists(os.path.join(d, "services", "council", "council")):
            return d
    return os.path.join(ROOT, "build", "release")


os.environ["VIGIL_BUILD_DIR"] = pick_build()
os.environ.setdefault("VIGIL_SOURCE_DIR", ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
from council_support import ADVISORS, FakeA2A, FakeLLM, sol  # noqa: E402

SESSION = "s-demo"
USER = "joel"
ROOM = "general"

SOL_SCRIPT = [
    (1, "note: Joel's quarterly report is due on Friday"),
    (2, "ask user: [p8] Shall I block 9 to 11 tomorrow for the report?"),
    (3, "research: how to structure a quarterly engineering report"),
    (4, "schedule: focus block tomorrow 9:00-11:00 'Quarterly report'"),
    (5, "search: quarterly report template"),
    (6, "sleep: 3 seconds"),
]


def llm_rules():
    rules = [sol(reply, regex=rf"loop {n} of") for n, reply in SOL_SCRIPT]
    rules.append(sol("reflect: nothing more to do right now"))
    return rules + ADVISORS


class Style:
    on = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    @classmethod
    def c(cls, code, s):
        return f"\033[{code}m{s}\033[0m" if cls.on else s


def short(s, n=90):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def describe(topic, p):
    if topic.endswith("/control"):
        return f"sent: {p['action']}" + (f" session {p['session']}" if p.get("session") else "")
    if topic.endswith("/answer"):
        return f"sent: answer to {p['question_id']}: \"{p['answer']}\""
    if topic.endswith("/state"):
        extra = f"  ({p['reason']})" if p.get("reason") else ""
        return f"state: {p['status']}, loop {p['loop_count']}{extra}"
    if topic.endswith("/request"):
        return f"request for a {p['kind']} tool: \"{short(p['query'], 60)}\""
    t = p.get("type")
    if t == "phase":
        return f"loop {p['loop']} ── {p['phase'].upper()}  {p.get('text', '')}"
    if t == "deliberation":
        return ("deliberation\n" + "".join(
            f"{'':>12}{who:>8}: {short(p[who], 80)}\n" for who in ("polaris", "aurora", "vega", "sol"))
            + f"{'':>12}decision: {p['decision']}")
    if t == "action":
        s = f"ACTION {p['action']}: {short(p['content'], 60)} → {short(p.get('result', ''), 70)}"
        if p.get("warning"):
            s += f"  ⚠ {short(p['warning'], 60)}"
        return s
    if t == "question":
        return f"QUESTION [p{p['priority']}] {p['question']}  (id {p['question_id']})"
    if t in ("session_paused", "session_ended"):
        return f"{t.upper()}: {p['reason']}"
    return json.dumps(p)[:120]


class Demo:
    def __init__(self, check):
        self.check = check
        self.dir = tempfile.mkdtemp(prefix="vigil-demo-council-")
        self.t0 = time.monotonic()
        self.procs = []
        self.col = None

    def say(self, text):
        print(Style.c("1;36", f"\n▶ {text}"), flush=True)

    def stamp(self):
        return f"{time.monotonic() - self.t0:6.2f}s"

    def start(self):
        self.redis = harness.RedisServer(self.dir).start()
        self.broker = harness.Mosquitto(self.dir).start()
        self.llm = FakeLLM(self.dir)
        self.llm.control(rules=llm_rules(), delay_ms=150)
        self.a2a = FakeA2A(self.dir)
        self.a2a.control(delay_ms=400)
        env = {
            "VIGIL_MQTT_URL": self.broker.url, "VIGIL_REDIS_URL": self.redis.url,
            "VIGIL_REDIS_PREFIX": "demo:", "VIGIL_TICK_MS": "50", "VIGIL_LOG_LEVEL": "warn",
            "VIGIL_LLM_URL": self.llm.url, "VIGIL_LLM_RETRIES": "0",
            "VIGIL_COUNCIL_LOOP_MS": "1500", "VIGIL_COUNCIL_MAX_LOOPS": "12",
            "VIGIL_COUNCIL_A2A_URL": self.a2a.url, "VIGIL_COUNCIL_AUTO_START": "0",
        }
        self.svc = harness.Service("council", self.dir, env, instance="council-demo").start()
        self.col = harness.Collector(self.broker.port, topics=("council/#",)).start()
        self.pub = harness.Publisher(self.broker.port).start()
        self.printed = 0

    def pump(self, seconds=0.0, until=None, timeout=20):
        """Prints what arrived, for `seconds`, or until until() is true."""
        end = time.monotonic() + (seconds if until is None else harness.scaled(timeout))
        while True:
            msgs = self.col.snapshot()
            for m in msgs[self.printed:]:
                if m.retained and not m.topic.endswith("/state"):
                    continue
                p = m.json()
                print(f"{Style.c('2', f'{m.t - self.t0:6.2f}s')}  {Style.c('33', m.topic):<28}  {describe(m.topic, p)}",
                      flush=True)
            self.printed = len(msgs)
            if until is not None and until():
                return True
            if time.monotonic() >= end:
                return until is None
            time.sleep(0.05)

    def events(self, etype=None):
        return [e for e in self.col.events(f"council/{SESSION}/event") if etype is None or e["type"] == etype]

    def run(self):
        self.say("The user's context: two messages in room general (council keeps the user's recent messages)")
        for text in ("The quarterly report is due Friday and I have not started",
                     "Mornings are when I focus best"):
            self.pub.publish(f"room/{ROOM}/message", {"room": ROOM, "sender": USER, "sender_type": "human",
                                                     "text": text, "ts": harness.now_ms()})
            print(f"{Style.c('2', self.stamp())}  {Style.c('32', 'sent room/general/message'):<28}  joel: {text}")
        time.sleep(0.3)
        self.say("joel starts a session: SENSE → PLAN (Polaris, Aurora and Vega asked at once) → ACT (Sol asked with their answers)")
        self.pub.publish(f"council/{USER}/control", {"action": "start", "session": SESSION, "room": ROOM})
        self.pump(until=lambda: self.events("question"), timeout=25)
        q = self.events("question")[0]
        self.pump(1.5)
        self.say("joel answers the question: the next loop starts at once, its SENSE quotes the answer")
        self.pub.publish(f"council/{SESSION}/answer", {"question_id": q["question_id"],
                                                        "answer": "Yes please, 9 to 11 works"})
        self.say("research: is delegated over A2A; schedule: and search: go out as requests; sleep: waits")
        self.pump(until=lambda: self.events("session_paused"), timeout=45)
        self.say("three reflect: in a row: the circuit breaker paused the session. joel resumes it")
        self.pump(0.5)
        self.pub.publish(f"council/{USER}/control", {"action": "resume"})
        self.pump(until=lambda: len(self.events("action")) >= 10, timeout=15)
        self.pub.publish(f"council/{USER}/control", {"action": "end"})
        self.pump(until=lambda: self.events("session_ended"), timeout=10)
        self.pump(0.3)
        self.show_cli()
        return self.verify()

    def show_cli(self):
        exe = os.path.join(harness.BUILD_DIR, "cli", "vigil")
        if not os.path.exists(exe):
            return
        self.say(f"vigil council show {SESSION}  (the durable record)")
        env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
        env.update({"VIGIL_REDIS_URL": self.redis.url, "VIGIL_REDIS_PREFIX": "demo:",
                    "VIGIL_MQTT_URL": self.broker.url})
        r = subprocess.run([exe, "council", "show", SESSION], env=env, capture_output=True, text=True,
                           timeout=20)
        lines = r.stdout.splitlines()
        print("\n".join(lines[:14] + (["  …"] if len(lines) > 14 else [])))

    def verify(self):
        acts = [a["action"] for a in self.events("action")]
        research = [a for a in self.events("action") if a["action"] == "research"]
        reqs = {r["kind"] for r in self.col.events(f"council/{SESSION}/request")}
        phases = {e["phase"] for e in self.events("phase")}
        paused = self.events("session_paused")
        expected = {
            "phases sense, plan, act": phases == {"sense", "plan", "act"},
            "a deliberation per loop": len(self.events("deliberation")) == len(acts),
            "every handler ran": all(a in acts for a in
                                     ("note", "ask user", "research", "schedule", "search", "sleep", "reflect")),
            "a question with priority 8": any(q["priority"] == 8 for q in self.events("question")),
            "research delegated over A2A": bool(research) and research[0].get("delegated") is True
                                           and research[0]["result"].startswith("Findings on"),
            "search and schedule requests": reqs == {"search", "schedule"},
            "the breaker paused the session": bool(paused) and "spinning" in paused[0]["reason"],
            "the session ended": bool(self.events("session_ended")),
        }
        self.say("check")
        for what, ok in expected.items():
            print(f"  {'✓' if ok else '✗'} {what}")
        return all(expected.values())

    def stop(self):
        for c in ("col", "pub"):
            try:
                getattr(self, c).stop()
            except Exception:  # noqa: BLE001
                pass
        for name in ("svc", "llm", "a2a", "broker", "redis"):
            obj = getattr(self, name, None)
            try:
                if obj is not None:
                    (obj.terminate if name == "svc" else obj.stop)()
            except Exception:  # noqa: BLE001
                pass
        subprocess.run(["rm", "-rf", self.dir], check=False)


def main():
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__)
        return 0
    check = "--check" in sys.argv
    exe = harness.service_binary("council")
    if not os.path.exists(exe):
        print(f"demo-council: {exe} does not exist (scripts/build release)", file=sys.stderr)
        return 2
    d = Demo(check)
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    ok = False
    try:
        d.start()
        ok = d.run()
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
    except harness.HarnessError as e:
        print(f"demo-council: {e}", file=sys.stderr)
    finally:
        d.stop()
    print(f"\n{'all expected events seen' if ok else 'SOME EXPECTED EVENTS WERE NOT SEEN'} "
          f"({time.monotonic() - d.t0:.0f} s)")
    return 0 if ok or not check else 1


if __name__ == "__main__":
    sys.exit(main())
