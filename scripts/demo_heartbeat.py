#!/usr/bin/python3
"""Vigil heartbeat demo: one run that stays silent (HEARTBEAT_OK) and one
that speaks, in about half a minute, as a timeline. Run it through
scripts/demo-heartbeat (see `scripts/demo-heartbeat --help`).

It starts its own mosquitto and redis-server on free loopback ports in a
temporary folder, tests/support/fake_llm.py as the model, and its own
heartbeat with intervals of seconds (every one a real VIGIL_HEARTBEAT_*
variable), plays a scripted scenario over MQTT and prints what the
heartbeat publishes. Everything it started is stopped at the end, Ctrl-C
included. With --check it exits 1 unless every expected event was seen."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

try:
    import harness  # the integration tests' process helpers
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.stderr.write(f"error: {e}: the demo needs python3-paho-mqtt and python3-redis "
                     "(scripts/install-deps installs them)\n")
    sys.exit(2)

FAKE_LLM = os.path.join(ROOT, "tests", "support", "fake_llm.py")
ACTIVE_MS, LIVE_MS = 3000, 5000
HB_ENV = {
    "VIGIL_TICK_MS": "100",
    "VIGIL_TIMER_LEASE_MS": "2000",
    "VIGIL_LOG_LEVEL": "warn",
    "VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": str(ACTIVE_MS),
    "VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS": "6000",
    "VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS": "12000",
    "VIGIL_HEARTBEAT_LIVE_MS": str(LIVE_MS),
    "VIGIL_LLM_TIMEOUT_MS": "5000",
    "VIGIL_LLM_RETRIES": "1",
}
# The break-reminder test: "If more than 2 minutes have passed, remind the user
# to take a break." The fake model answers that checklist with a reminder,
# and any other heartbeat check with HEARTBEAT_OK (its built-in rules).
BREAK = "- If more than 2 minutes have passed, remind the user to take a break."


class Timeline:
    def __init__(self, col):
        self.col = col
        self.t0 = time.monotonic()
        self.shown = 0

    def say(self, text):
        print(f"{time.monotonic() - self.t0:7.2f}s  {text}", flush=True)

    def sent(self, topic, body):
        self.say(f"sent  {topic:34s} {body}")

    def flush(self):
        msgs = self.col.snapshot()
        for m in msgs[self.shown:]:
            if m.topic.startswith("heartbeat/") and m.topic.endswith("/run"):
                self.say(f"vigil {m.topic:34s} {describe_run(m.json())}")
            elif m.topic.startswith("room/") and m.topic.endswith("/message"):
                p = m.json()
                if p.get("proactive"):
                    self.say(f"vigil {m.topic:34s} {p['sender']} says (proactive, {p.get('priority')} "
                             f"{p.get('category')}): \"{p['text']}\"")
        self.shown = len(msgs)


def describe_run(e):
    what = {"ok": "HEARTBEAT_OK: stays silent", "sent": "speaks",
            "voi-blocked": "not worth the interruption", "permission-blocked": "not allowed",
            "skipped": f"skipped ({e.get('reason')}: {e.get('detail', '')})",
            "error": f"error ({e.get('reason')})"}.get(e["outcome"], e["outcome"])
    extra = f", VoI {e['voi']:.2f}" if "voi" in e else ""
    nxt = f"next in {e['next_in_ms'] / 1000:.1f} s" if e.get("next_in_ms") else "no next run"
    return f"{e['persona']} run {e['run']}: {what}  [{nxt}, {e['consecutive_skips']} ok in a row, " \
           f"{e['tokens']} tokens{extra}]"


class Demo:
    def __init__(self, args):
        self.a = args
        self.tag = uuid.uuid4().hex[:6]
        self.room = f"demo-{self.tag}"
        self.missing = []
        self.procs = []

    def persona(self, name):
        return f"{name}-{self.tag}"

    def expect(self, label, pred, timeout):
        try:
            self.col.wait_for(lambda c: any(pred(m) for m in c.snapshot()), harness.scaled(timeout), label)
            ok = True
        except harness.HarnessError:
            ok = False
        self.tl.flush()
        if not ok:
            self.missing.append(label)
            self.tl.say(f"✘ expected: {label}")
        return ok

    def run_event(self, persona, **want):
        def pred(m):
            if m.topic != f"heartbeat/{persona}/run":
                return False
            e = m.json()
            return all(e.get(k) == v for k, v in want.items())
        return pred

    def publish(self, topic, body, retain=False):
        self.pub.publish(topic, body, retain=retain)
        short = {k: v for k, v in body.items() if k not in ("ts", "checklist")}
        if "checklist" in body:
            short["checklist"] = body["checklist"][:60] + ("…" if len(body["checklist"]) > 60 else "")
        self.tl.sent(topic, json.dumps(short, ensure_ascii=False))

    def config(self, persona, **extra):
        body = {"persona": persona, "user": "joel", "room": self.room, "enabled": True,
                "ts": harness.now_ms()}
        body.update(extra)
        self.publish(f"heartbeat/{persona}/config", body, retain=True)

    def header(self, title, lines):
        print(f"\n== {title}", flush=True)
        for line in lines:
            print(f"   {line}", flush=True)

    def start(self):
        self.work = tempfile.mkdtemp(prefix="vigil-demo-heartbeat-")
        build = self.a.build_dir or os.environ.get("VIGIL_BUILD_DIR") or os.path.join(ROOT, "build", "release")
        if not os.path.exists(harness.service_binary("heartbeat", build)):
            print("==> building build/release", flush=True)
            if subprocess.run([os.path.join(ROOT, "scripts", "build"), "release"]).returncode != 0:
                raise harness.HarnessError("scripts/build release failed")
            build = os.path.join(ROOT, "build", "release")
        self.redis = harness.RedisServer(self.work).start()
        self.procs.append(self.redis)
        self.broker = harness.Mosquitto(self.work).start()
        self.procs.append(self.broker)
        logf = open(os.path.join(self.work, "fake_llm.log"), "ab")
        self.llm = harness._popen(["/usr/bin/python3", FAKE_LLM, "--port", "0"], stdout=subprocess.PIPE,
                                  stderr=logf, stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        line = self.llm.stdout.readline().decode()
        if not line.startswith("PORT "):
            raise harness.HarnessError(f"fake_llm.py did not start: {line!r}")
        env = dict(HB_ENV, VIGIL_MQTT_URL=self.broker.url, VIGIL_REDIS_URL=self.redis.url,
                   VIGIL_REDIS_PREFIX=f"demo{self.tag}:",
                   VIGIL_LLM_URL=f"http://127.0.0.1:{int(line.split()[1])}/v1")
        self.svc = harness.Service("heartbeat", self.work, env, build_dir=build,
                                   instance=f"heartbeat-demo-{self.tag}").start(timeout=harness.scaled(20))
        self.col = harness.Collector(self.broker.port, topics=("heartbeat/+/run", "room/+/message")).start()
        self.pub = harness.Publisher(self.broker.port).start()
        self.tl = Timeline(self.col)

    def stop(self):
        for c in ("pub", "col"):
            if hasattr(self, c):
                try:
                    getattr(self, c).stop()
                except Exception:  # noqa: BLE001 - best effort at exit
                    pass
        if getattr(self, "svc", None) and self.svc.alive():
            self.svc.terminate(timeout=15)
        if getattr(self, "llm", None) and self.llm.poll() is None:
            self.llm.kill()
            self.llm.wait(timeout=10)
            self.llm.stdout.close()
        for p in reversed(self.procs):
            p.stop()

    def scenario(self):
        sage, coach, owl = self.persona("sage"), self.persona("coach"), self.persona("owl")
        self.header("1. A silent run", [
            f"{sage} gets a heartbeat with the default HEARTBEAT.md checklist; configuring counts as",
            f"activity, so its first run comes after the active interval ({ACTIVE_MS / 1000:.0f} s). The model",
            "finds nothing worth saying and answers HEARTBEAT_OK: nothing reaches the room. While the",
            "user was active lately the next run comes on the active interval again; later, each",
            "`ok` in a row stretches the next interval x1.5."])
        self.config(sage)
        self.expect(f"{sage}: ok", self.run_event(sage, outcome="ok", consecutive_skips=1), 15)
        self.expect(f"{sage}: second ok", self.run_event(sage, outcome="ok", consecutive_skips=2), 15)

        self.header("2. Never barge into a conversation", [
            f"joel writes in {self.room}: activity, so the next run is rescheduled; it comes while his",
            f"message is under {LIVE_MS / 1000:.0f} s old (VIGIL_HEARTBEAT_LIVE_MS): skipped, with the reason."])
        self.publish(f"room/{self.room}/message", {"room": self.room, "sender": "joel", "sender_type": "human",
                                                   "text": "deep in the release notes, back in a bit",
                                                   "ts": harness.now_ms()})
        self.expect(f"{sage}: skipped, live-exchange", self.run_event(sage, outcome="skipped", reason="live-exchange"), 15)

        self.header("3. A run that speaks", [
            f"{coach}'s checklist is the break-reminder test: \"{BREAK[2:]}\"",
            "The model answers with an urgent reminder; VoI 0.9 x 1.0 - disturbance > 0.3, the user",
            "allows reminders: exactly one proactive message. The next run finds it unanswered: skipped."])
        self.config(coach, checklist=BREAK)
        self.expect(f"{coach}: sent", self.run_event(coach, outcome="sent"), 15)
        self.expect(f"{coach}: the proactive message in the room",
                    lambda m: m.topic == f"room/{self.room}/message" and m.json().get("sender") == coach
                    and m.json().get("proactive") is True, 5)
        self.expect(f"{coach}: skipped, unanswered", self.run_event(coach, outcome="skipped", reason="unanswered"), 15)

        local = datetime.now(timezone.utc).astimezone(ZoneInfo("Asia/Jakarta"))
        start, end = (local - timedelta(hours=1)).strftime("%H:%M"), (local + timedelta(hours=1)).strftime("%H:%M")
        self.header("4. Quiet hours, in the user's time zone", [
            f"{owl}'s user sleeps {start}-{end} in Asia/Jakarta (it is {local:%H:%M} there now): the run is",
            "skipped and the next one is due when the window ends."])
        self.config(owl, checklist=BREAK, quiet_hours={"start": start, "end": end, "timezone": "Asia/Jakarta"})
        self.expect(f"{owl}: skipped, quiet-hours", self.run_event(owl, outcome="skipped", reason="quiet-hours"), 15)

        time.sleep(0.3)
        self.tl.flush()
        leaks = [m for m in self.col.snapshot()
                 if m.topic.startswith("room/") and b"HEARTBEAT_OK" in m.payload]
        if leaks:
            self.missing.append("HEARTBEAT_OK must never reach a room")
        spoke = [m for m in self.col.snapshot()
                 if m.topic == f"room/{self.room}/message" and m.json().get("proactive")]
        if len(spoke) != 1:
            self.missing.append(f"exactly one proactive message (saw {len(spoke)})")
        print("")
        if self.missing:
            print("✘ missing: " + "; ".join(self.missing), flush=True)
        else:
            print("✔ all expected events seen; HEARTBEAT_OK reached no room; one proactive message.",
                  flush=True)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Environment: VIGIL_BUILD_DIR (build tree with services/heartbeat/heartbeat; default "
               "build/release, built by scripts/build release if missing), VIGIL_TEST_SLOW (multiplies "
               "every wait). The model is tests/support/fake_llm.py.")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every expected event was seen")
    ap.add_argument("--build-dir", help="build tree of the service binary (overrides VIGIL_BUILD_DIR)")
    args = ap.parse_args()
    d = Demo(args)
    failed = True
    try:
        d.start()
        d.scenario()
        failed = bool(d.missing)
    except KeyboardInterrupt:
        print("\ninterrupted", flush=True)
    except harness.HarnessError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    finally:
        d.stop()
        work = getattr(d, "work", None)
        if work and (not failed or not args.check):
            shutil.rmtree(work, ignore_errors=True)
        elif work:
            print(f"(kept {work} for inspection)", file=sys.stderr)
    return 1 if (failed and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
