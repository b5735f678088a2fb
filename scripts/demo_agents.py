#!/usr/bin/python3
"""stall-resumer demo: about a minute, as a timeline of what it publishes.
Run it through scripts/demo-agents (see `scripts/demo-agents --help`).

It starts its own mosquitto and redis-server on free loopback ports in a
temporary folder and its own stall-resumer with thresholds of seconds
(every one a VIGIL_STALL_* variable, see THRESHOLDS), plays a scripted
scenario over MQTT and prints each assessment change and resume. With
--check it exits 1 unless every expected event was seen. Everything it
started is stopped at the end, Ctrl-C included."""

import argparse
import json
import os
import shutil
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
    import harness  # the integration tests' process helpers
except ImportError as e:  # pragma: no cover
    sys.stderr.write(f"error: {e}: the demo needs Debian's python3-paho-mqtt (scripts/install-deps)\n")
    sys.exit(2)

# The default minutes and hours as seconds. Tier windows 60/30/15 min ->
# 20/10/5 s (so the recency penalties, which follow them, come at 10 s and
# 20 s), lookback 20 s, a tool call stretches to 40 s, categories at 8, 16
# and 24 s of status age, one scan a second, one resume per agent per demo.
THRESHOLDS = {
    "VIGIL_STALL_TIER1_MS": "20000",
    "VIGIL_STALL_TIER2_MS": "10000",
    "VIGIL_STALL_TIER3_MS": "5000",
    "VIGIL_STALL_LOOKBACK_MS": "20000",
    "VIGIL_STALL_IN_TOOL_MS": "40000",
    "VIGIL_STALL_WARNING_MS": "8000",
    "VIGIL_STALL_CRITICAL_MS": "16000",
    "VIGIL_STALL_AUTORESUME_MS": "24000",
    "VIGIL_STALL_RESUME_INTERVAL_MS": "600000",
    "VIGIL_STALL_SCAN_MS": "1000",
}
SERVICE_ENV = dict(THRESHOLDS, VIGIL_TICK_MS="100", VIGIL_TIMER_LEASE_MS="2000", VIGIL_LOG_LEVEL="warn")
EMOJI = {"fresh": "🟢", "warning": "🟡", "critical": "🟠", "auto-resume": "🔴"}


class Demo:
    def __init__(self, args):
        self.a = args
        self.t0 = time.monotonic()
        self.tag = uuid.uuid4().hex[:4]
        self.lock = threading.Lock()
        self.last = {}  # agent -> (category, active, confidence) last printed
        self.seen = []  # (topic, payload)
        self.color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        self.procs = []
        self.tmp = None

    # -- output ----------------------------------------------------------
    def say(self, text):
        print(f"{time.monotonic() - self.t0:6.2f}s  {text}", flush=True)

    def header(self, text):
        bold = ("\x1b[1m", "\x1b[0m") if self.color else ("", "")
        print(f"\n{bold[0]}== {text}{bold[1]}", flush=True)

    def name(self, agent):
        return agent.rsplit("-", 1)[0]

    def on_message(self, m):
        try:
            p = json.loads(m.payload)
        except ValueError:
            return
        with self.lock:
            self.seen.append((m.topic, p))
        parts = m.topic.split("/")
        if len(parts) != 3:
            return
        if parts[2] == "assessment":
            key = (p["category"], p["is_active"], p["confidence"], p.get("in_tool"))
            if self.last.get(p["agent"]) == key:
                return
            self.last[p["agent"]] = key
            srcs = ",".join(sorted({s["source"] for s in p["signals"]})) or "-"
            tool = "  [in a tool call]" if p.get("in_tool") else ""
            self.say(f"vigil agent/{self.name(p['agent'])}/assessment  {EMOJI[p['category']]} "
                     f"{p['category']:<11} {'active  ' if p['is_active'] else 'inactive'} "
                     f"confidence {p['confidence']:.3f}  sources {srcs}{tool}")
        elif parts[2] == "resume":
            task = p.get("claimed_task")
            t = f"claimed {task['id']} (priority {task['priority']})" if task else "no task left to claim"
            self.say(f"vigil agent/{self.name(p['agent'])}/resume      🔄 {t}\n"
                     f"         \"{p['prompt']}\"")

    def events(self, kind, agent=None, pred=lambda p: True):
        with self.lock:
            seen = list(self.seen)
        return [p for t, p in seen if t.endswith("/" + kind) and (agent is None or p.get("agent") == agent)
                and pred(p)]

    def wait(self, what, fn, timeout):
        end = time.monotonic() + harness.scaled(timeout)
        while time.monotonic() < end:
            v = fn()
            if v:
                return v
            time.sleep(0.05)
        self.missing.append(what)
        self.say(f"(not seen: {what})")
        return None

    def sleep_until(self, t):
        d = self.t0 + t - time.monotonic()
        if d > 0:
            time.sleep(d)

    # -- setup -----------------------------------------------------------
    def build_dir(self):
        d = self.a.build_dir or os.environ.get("VIGIL_BUILD_DIR") or os.path.join(ROOT, "build", "release")
        exe = os.path.join(d, "services", "stall-resumer", "stall-resumer")
        if not os.path.exists(exe) and not (self.a.build_dir or os.environ.get("VIGIL_BUILD_DIR")):
            print("==> building build/release", file=sys.stderr)
            if subprocess.call([os.path.join(ROOT, "scripts", "build"), "release"], stdout=sys.stderr) != 0:
                raise harness.HarnessError("scripts/build release failed")
        if not os.path.exists(exe):
            raise harness.HarnessError(f"{exe} does not exist (scripts/build release, or set VIGIL_BUILD_DIR)")
        return os.path.abspath(d)

    def start(self):
        self.bdir = self.build_dir()
        self.tmp = tempfile.mkdtemp(prefix="vigil-demo-agents-")
        self.redis = harness.RedisServer(self.tmp).start()
        self.broker = harness.Mosquitto(self.tmp).start()
        env = dict(SERVICE_ENV, VIGIL_MQTT_URL=self.broker.url, VIGIL_REDIS_URL=self.redis.url,
                   VIGIL_REDIS_PREFIX=f"demo{self.tag}:")
        self.svc = harness.Service("stall-resumer", self.tmp, env, build_dir=self.bdir,
                                   instance=f"stall-demo-{self.tag}")
        self.svc.start()
        self.col = harness.Collector(self.broker.port, topics=("agent/+/assessment", "agent/+/resume"))
        self.col.start()
        self.pub = harness.Publisher(self.broker.port).start()
        self.missing = []
        self.watch = threading.Thread(target=self.follow, daemon=True)
        self.stop_watch = threading.Event()
        self.watch.start()

    def follow(self):
        """Prints collector messages as they arrive."""
        done = 0
        while not self.stop_watch.is_set():
            ms = self.col.snapshot()
            for m in ms[done:]:
                self.on_message(m)
            done = len(ms)
            time.sleep(0.02)

    def stop(self):
        if hasattr(self, "stop_work"):
            self.stop_work.set()
        if hasattr(self, "stop_watch"):
            self.stop_watch.set()
        for name in ("pub", "col"):
            try:
                getattr(self, name).stop()
            except Exception:  # noqa: BLE001
                pass
        for name in ("svc",):
            try:
                getattr(self, name).terminate(timeout=10)
            except Exception:  # noqa: BLE001
                pass
        for name in ("broker", "redis"):
            try:
                getattr(self, name).stop()
            except Exception:  # noqa: BLE001
                pass
        if self.tmp and (not self.missing or not self.a.check):
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- inputs ------------------------------------------------------------
    def agent(self, name):
        return f"{name}-{self.tag}"

    def now(self):
        return int(time.time() * 1000)

    def signal(self, name, source, detail, ago_ms=0, in_tool=None, quiet=False):
        body = {"id": uuid.uuid4().hex[:12], "agent": self.agent(name), "source": source,
                "detail": detail, "ts": self.now() - ago_ms}
        if in_tool is not None:
            body["in_tool"] = in_tool
        self.pub.publish(f"agent/{self.agent(name)}/activity", body)
        if quiet:
            return
        extra = "  in_tool" if in_tool else ""
        self.say(f"sent  agent/{name}/activity   {source} \"{detail}\"{extra}"
                 + (f"  ({ago_ms // 1000}s ago)" if ago_ms else ""))

    def status(self, name, fsm, ago_ms=0, quiet=False, **extra):
        body = {"agent": self.agent(name), "fsm_state": fsm, "ts": self.now() - ago_ms, **extra}
        self.pub.publish(f"agent/{self.agent(name)}/status", body, retain=True)
        if quiet:
            return
        self.say(f"sent  agent/{name}/status     {fsm}" + (f"  ({ago_ms // 1000}s old)" if ago_ms else ""))

    def task(self, tid, title, prio, agent=None):
        body = {"id": f"{tid}-{self.tag}", "title": title, "priority": prio, "ts": self.now()}
        if agent:
            body["agent"] = self.agent(agent)
        self.pub.publish("planner/task", body)
        self.say(f"sent  planner/task            {tid} \"{title}\" priority {prio}"
                 + (f" for {agent}" if agent else ""))

    def assessed(self, name, pred, timeout, what):
        return self.wait(what, lambda: self.events("assessment", self.agent(name), pred), timeout)

    # -- the scenario --------------------------------------------------------
    def keep_working(self):
        """Background: ada commits every 5 s; the phase-1 agents and eve, fay
        report their status every 4 s (so only the agents meant to stall
        go stale)."""
        n = 0
        while not self.stop_work.wait(1.0):
            n += 1
            try:
                if n % 5 == 0:
                    self.signal("ada", "GIT_COMMIT", f"commit {n // 5}", quiet=True)
                    self.signal("ada", "TEST_EXECUTION", f"tests green {n // 5}", quiet=True)
                if n % 4 == 0:
                    for name in ("bob", "cy", "dee", "eve", "fay"):
                        self.status(name, "EXECUTING", quiet=True)
            except harness.HarnessError:
                return

    def run(self):
        A = self.agent
        self.header("Phase 1/5: confidence from signal mixes (tier windows 20/10/5 s stand for 60/30/15 min)")
        self.task("task-9", "Fix the flaky uploader test", 9)
        self.task("task-5", "Write the retry docs", 5)
        self.task("task-ada", "Review ada's own PR", 7, agent="ada")
        self.status("ada", "EXECUTING", mission="Ship the uploader")
        for name in ("bob", "cy", "dee"):
            self.status(name, "EXECUTING", quiet=True)
        self.signal("ada", "GIT_COMMIT", "fix: retry on 503")
        self.signal("ada", "TEST_EXECUTION", "42 tests passed")
        self.signal("bob", "FILE_MODIFICATION", "edited uploader.c")
        self.signal("cy", "MESSAGE_QUEUE", "polled the queue")
        self.signal("dee", "TELEMETRY_EVENT", "task done", ago_ms=12000)
        self.assessed("ada", lambda p: p["confidence"] == 0.9 and p["is_active"], 10,
                      "ada: two tier-1 signals -> 0.9, active")
        self.assessed("bob", lambda p: p["confidence"] == 0.5 and p["is_active"], 10,
                      "bob: one tier-2 signal -> 0.5, active")
        self.assessed("cy", lambda p: p["confidence"] == 0.3 and not p["validation_passed"], 10,
                      "cy: tier 3 only -> 0.3, validation fails")
        self.assessed("dee", lambda p: p["confidence"] == 0.595, 10,
                      "dee: one tier-1 signal 12 s old -> 0.7 x 0.85 = 0.595")
        self.say("(from now on ada keeps committing every 5 s and bob, cy, dee, eve, fay report "
                 "their status every 4 s, quietly)")
        self.stop_work = threading.Event()
        threading.Thread(target=self.keep_working, daemon=True).start()

        self.header("Phase 2/5: noise is not activity")
        noise_before = self.svc.metric("vigil_stall_signals_total", result="noise") or 0
        self.signal("cy", "INBOX_PROCESSING", "Inactivity detected #no-reply")
        self.signal("cy", "MESSAGE_QUEUE", "[C2A] broadcast to all agents")
        if self.wait("two noise signals ignored",
                     lambda: (self.svc.metric("vigil_stall_signals_total", result="noise") or 0)
                     >= noise_before + 2, 5):
            self.say("vigil (no change for cy: 2 noise signals counted in "
                     "vigil_stall_signals_total{result=\"noise\"})")

        self.header("Phase 3/5: a long tool call is not a stall; a status goes stale "
                    "(8/16/24 s stand for 2/6/12 h)")
        p3 = time.monotonic()
        self.status("gus", "EXECUTING", mission="Harden the uploader")
        self.signal("gus", "GIT_COMMIT", "wired the retry loop", ago_ms=21000)
        self.signal("eve", "TELEMETRY_EVENT", "started the full build", in_tool=True)
        self.signal("eve", "TEST_EXECUTION", "integration suite running", in_tool=True)
        self.signal("fay", "TELEMETRY_EVENT", "started the full build")
        self.signal("fay", "TEST_EXECUTION", "integration suite running")
        self.assessed("fay", lambda p: not p["is_active"], 30,
                      "fay: her signals left the 20 s tier-1 window -> inactive (status fresh: no resume)")
        self.assessed("eve", lambda p: p["is_active"] and p.get("in_tool") and p["signals"]
                      and p["signals"][0]["age_minutes"] > 0.35, 30,
                      "eve: the same signals in a tool call -> still active past 20 s (0.9 x 0.7)")
        for cat in ("warning", "critical", "auto-resume"):
            self.assessed("gus", lambda p, c=cat: p["category"] == c, 30, f"gus: {cat}")
        if time.monotonic() - p3 > 40:
            self.missing.append("phase 3 in time")

        self.header("Phase 4/5: the stalled agent is resumed once, with the top task claimed for it")
        r = self.wait("gus resumed with task-9 claimed",
                      lambda: self.events("resume", A("gus"), lambda p: (p.get("claimed_task") or {}).get("id")
                                          == f"task-9-{self.tag}"), 15)
        self.status("hal", "BLOCKED", ago_ms=30000)
        self.status("ivy", "PLANNING", ago_ms=30000)
        self.wait("hal resumed with task-5", lambda: self.events(
            "resume", A("hal"), lambda p: (p.get("claimed_task") or {}).get("id") == f"task-5-{self.tag}"), 10)
        self.wait("ivy resumed with no task left", lambda: self.events(
            "resume", A("ivy"), lambda p: "claimed_task" not in p), 10)
        if r:
            self.signal("gus", "INBOX_PROCESSING", r[0]["prompt"][:60] + "...")
            self.signal("gus", "GIT_COMMIT", "added the uploader test")
            self.signal("gus", "TEST_EXECUTION", "test passes")
            self.assessed("gus", lambda p: p["is_active"] and p["category"] == "fresh", 10,
                          "gus: working again -> active, fresh (the echoed prompt did not count)")
        time.sleep(2.5)  # a few more scans: nobody gets a second resume
        for name in ("gus", "hal", "ivy"):
            n = len({p["id"] for p in self.events("resume", A(name))})
            if n != 1:
                self.missing.append(f"exactly one resume for {name} (got {n})")
        for name in ("ada", "bob", "cy", "dee", "eve", "fay"):
            if self.events("resume", A(name)):
                self.missing.append(f"no resume for {name}")
        self.say("vigil (one resume each for gus, hal, ivy; none for ada, whose activity keeps her "
                 "fresh with a status as old as gus's, nor for the agents reporting their status)")

        self.header("Phase 5/5: the status checker, `vigil agents status`")
        vigil = os.path.join(self.bdir, "cli", "vigil")
        env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
        env.update({"VIGIL_MQTT_URL": self.broker.url, "VIGIL_REDIS_URL": self.redis.url,
                    "VIGIL_CLI_TIMEOUT_MS": "5000", "LSAN_OPTIONS": "detect_leaks=0"})
        env.update({k: THRESHOLDS[k] for k in ("VIGIL_STALL_WARNING_MS", "VIGIL_STALL_CRITICAL_MS",
                                                "VIGIL_STALL_AUTORESUME_MS")})
        self.stop_work.set()
        out = subprocess.run([vigil, "agents", "status"], env=env, capture_output=True, text=True, timeout=30)
        print(out.stdout.replace(f"-{self.tag}", "     "), end="", flush=True)
        if out.returncode != 0 or "🔴 AUTO-RESUME" not in out.stdout or "🟢 FRESH" not in out.stdout:
            self.missing.append("vigil agents status with 🟢 and 🔴 lines")

    def main(self):
        try:
            self.start()
            self.run()
        except KeyboardInterrupt:
            print("\ninterrupted", file=sys.stderr)
            return 130
        except harness.HarnessError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        finally:
            self.stop()
        took = time.monotonic() - self.t0
        if self.missing:
            print(f"\n✘ missing: {'; '.join(self.missing)}  ({took:.0f}s)")
            return 1 if self.a.check else 0
        print(f"\n✔ all expected events seen in {took:.0f}s")
        return 0


HELP = """stall-resumer in about a minute, as a timeline.

It starts its own mosquitto, redis-server and stall-resumer on free loopback
ports in a temporary folder (never your scripts/up stack), with thresholds of
seconds set through the service's own variables:
  """ + "\n  ".join(f"{k}={v}" for k, v in THRESHOLDS.items()) + """
and plays:
  1. agents with different signal mixes: two tier-1 signals (0.9), one tier-2
     (0.5), tier 3 only (0.3, validation fails), one old tier-1 (penalised);
  2. noise ("inactivity detected", "[C2A]") ignored;
  3. a tool call keeping an agent active past the window; a status going
     stale through warning, critical, auto-resume while a busy agent with an
     equally old status stays fresh;
  4. the stalled agent resumed once with the top planner task claimed for it,
     two more with the next task and with none left, echoes of the prompt
     ignored, the agent back to work;
  5. `vigil agents status`.

Environment:
  VIGIL_BUILD_DIR    build tree with services/stall-resumer and cli/vigil
                     (default build/release, built if missing)
  VIGIL_TEST_SLOW    multiplies every wait (a loaded machine)
"""


def parse():
    ap = argparse.ArgumentParser(prog="scripts/demo-agents", description=HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 unless every expected event was seen")
    ap.add_argument("--build-dir", help="build tree (overrides VIGIL_BUILD_DIR)")
    return ap.parse_args()


if __name__ == "__main__":
    sys.exit(Demo(parse()).main())
