#!/usr/bin/python3
"""Vigil Theater demo: presence-gateway working end to end in about 30 s,
as a timeline of what a browser sees on the live stream (SSE) and what
the gateway publishes. Run it through scripts/demo-theater (--help).

It starts its own mosquitto and redis-server on free loopback ports in a
temporary folder, its own dormancy-monitor, chat-router and
presence-gateway (presence thresholds of seconds: idle after 3 s, away
after 6 s), plays a scenario over HTTP and MQTT, and stops everything at
the end (Ctrl-C included). With --check it exits 1 unless every expected
event was seen; --screenshot PATH also saves the Theater page from
headless Chromium (if chromium, chromium-driver and python3-selenium are
installed)."""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402  the integration tests' process helpers
from gateway_client import SSE, request, write_tokens  # noqa: E402

TOKEN = "tok-joel-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
IDLE_MS, AWAY_MS = 3000, 6000


class Demo:
    def __init__(self, args):
        self.a = args
        self.t0 = time.monotonic()
        self.seen = []  # (event, data)
        self.lock = threading.Lock()
        self.procs = []
        self.tag = uuid.uuid4().hex[:6]
        self.room = f"demo-{self.tag}"
        self.ada = f"ada-{self.tag}"

    def log(self, who, what, detail=""):
        print(f"{time.monotonic() - self.t0:6.2f}s  {who:<5} {what:<34} {detail}", flush=True)

    def header(self, text):
        print(f"\n--- {text}", flush=True)

    # -- the stack ------------------------------------------------------------
    def start(self):
        self.dir = tempfile.mkdtemp(prefix="vigil-theater-demo-")
        self.redis = harness.RedisServer(self.dir).start()
        self.broker = harness.Mosquitto(self.dir).start()
        bdir = self.a.build_dir or os.environ.get("VIGIL_BUILD_DIR") or os.path.join(ROOT, "build", "release")
        for name in ("presence-gateway", "dormancy-monitor", "chat-router"):
            if not os.path.exists(harness.service_binary(name, bdir)):
                raise SystemExit(f"error: {harness.service_binary(name, bdir)} is missing: scripts/build release "
                                 "(or point VIGIL_BUILD_DIR at a build tree)")
        env = {"VIGIL_MQTT_URL": self.broker.url, "VIGIL_REDIS_URL": self.redis.url,
               "VIGIL_REDIS_PREFIX": f"demo{self.tag}:", "VIGIL_LOG_LEVEL": "warn", "VIGIL_TICK_MS": "100"}
        gw_env = dict(env, VIGIL_GATEWAY_TOKENS_FILE=write_tokens(self.dir), VIGIL_GATEWAY_PING_MS="5000",
                      VIGIL_GATEWAY_PRESENCE_IDLE_MS=str(IDLE_MS), VIGIL_GATEWAY_PRESENCE_AWAY_MS=str(AWAY_MS),
                      VIGIL_GATEWAY_PRESENCE_EXPIRE_MS="20000")
        self.gw = harness.Service("presence-gateway", self.dir, gw_env, build_dir=bdir, instance=f"demo-{self.tag}-gw")
        self.procs.append(self.gw.start())
        for name in ("dormancy-monitor", "chat-router"):
            self.procs.append(harness.Service(name, self.dir, env, build_dir=bdir,
                                              instance=f"demo-{self.tag}-{name[:4]}").start())
        self.pub = harness.Publisher(self.broker.port, name=f"demo-{self.tag}").start()
        self.port = self.gw.http_port
        self.log("setup", "stack up", f"Theater page: http://127.0.0.1:{self.port}/login?token={TOKEN}")

    def stop(self):
        for p in reversed(self.procs):
            try:
                p.terminate()
            except Exception:  # noqa: BLE001
                pass
        for x in ("pub", "broker", "redis"):
            try:
                getattr(self, x).stop()
            except Exception:  # noqa: BLE001
                pass
        shutil.rmtree(getattr(self, "dir", ""), ignore_errors=True)

    # -- the browser's stream ---------------------------------------------------
    def watch(self):
        self.sse = SSE(self.port, "/api/events?topics=rooms,personas,council", AUTH)
        self.sse.next()
        self.log("sse", "connected", "/api/events?topics=rooms,personas,council")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                f = self.sse.next(timeout=3600)
            except Exception:  # noqa: BLE001 - closed at the end
                return
            if f["event"] == "ping":
                continue
            d = f["data"]
            with self.lock:
                self.seen.append((f["event"], d))
            self.log("sse", f["event"], describe(f["event"], d))

    def wait(self, event, pred=lambda d: True, timeout=10):
        deadline = time.monotonic() + harness.scaled(timeout)
        while time.monotonic() < deadline:
            with self.lock:
                if any(e == event and pred(d) for e, d in self.seen):
                    return True
            time.sleep(0.05)
        self.missing.append(event)
        self.log("!", f"MISSING {event}")
        return False

    # -- the scenario -----------------------------------------------------------
    def run(self):
        self.missing = []
        r, ada = self.room, self.ada
        self.header("1. A browser says its person is here (POST /api/presence): presence goes out on MQTT")
        st, _, b = request(self.port, "POST", "/api/presence", {"session": "tab1", "rooms": [r]}, AUTH)
        self.log("http", "POST /api/presence", f"{st} status={b.get('status')}")
        self.wait("room.presence", lambda d: d["status"] == "active")

        self.header("2. An AI persona speaks over MQTT; the human answers over HTTP; both are in the log")
        self.pub.publish(f"room/{r}/message", {"id": f"m1-{self.tag}", "room": r, "sender": ada, "sender_type": "ai",
                                               "text": "Shall I draft the release notes?"})
        st, _, b = request(self.port, "POST", f"/api/rooms/{r}/messages", {"text": "Yes please, ada."}, AUTH)
        self.log("http", f"POST /api/rooms/{r}/messages", str(st))
        self.wait("room.message", lambda d: d.get("sender") == "joel")
        time.sleep(0.5)
        st, _, b = request(self.port, "GET", f"/api/rooms/{r}/messages?limit=10", headers=AUTH)
        texts = [m["text"] for m in b.get("messages", [])]
        self.log("http", f"GET /api/rooms/{r}/messages", f"{st} {texts}")
        if texts != ["Shall I draft the release notes?", "Yes please, ada."]:
            self.missing.append("room log")

        self.header("3. dormancy-monitor changes a persona's level: the badge event reaches the browser")
        self.pub.publish(f"room/{r}/message", {"id": f"m2-{self.tag}", "room": r, "sender": ada, "sender_type": "ai",
                                               "text": "@self dormant sleep"})
        self.wait("persona.dormancy", lambda d: d["level"] == "sleep")
        request(self.port, "POST", f"/api/rooms/{r}/messages", {"text": "ada, one more thing"}, AUTH)
        self.wait("persona.dormancy", lambda d: d["level"] == "active")

        self.header("4. The council deliberates and asks; the answer goes back on council/{session}/answer")
        s = f"s-{self.tag}"
        for i, (typ, extra) in enumerate([("deliberation", {"text": "Polaris, Aurora, Vega and Sol weigh the week"}),
                                          ("phase", {"phase": "plan", "text": "🧭 Sol is planning the next action."}),
                                          ("question", {"question_id": f"{s}:question:3", "priority": 8,
                                                        "text": "Ship the uploader fix today?"})]):
            self.pub.publish(f"council/{s}/event", {"id": f"{s}:{typ}:{i}", "type": typ, "session": s, **extra})
        self.wait("question")
        st, _, b = request(self.port, "POST", f"/api/council/{s}/answers",
                           {"question_id": f"{s}:question:3", "answer": "Yes, today."}, AUTH)
        self.log("http", f"POST /api/council/{s}/answers", str(st))
        self.wait("council.answer", lambda d: d["answer"] == "Yes, today.")

        self.header(f"5. The person stops moving: idle after {IDLE_MS // 1000} s, away after {AWAY_MS // 1000} s")
        self.wait("room.presence", lambda d: d["status"] == "idle", timeout=IDLE_MS / 1000 + 5)
        self.wait("room.presence", lambda d: d["status"] == "away", timeout=AWAY_MS / 1000 + 5)

        self.header("6. A browser reconnects with Last-Event-ID: it gets exactly what it missed")
        last = self.sse.last_id
        self.sse.close()
        self.pub.publish(f"room/{r}/message", {"id": f"m3-{self.tag}", "room": r, "sender": ada, "sender_type": "ai",
                                               "text": "sent while you were away"})
        time.sleep(0.5)
        again = SSE(self.port, f"/api/events?topics=room/{r}/message", {**AUTH, "Last-Event-ID": last})
        again.next()
        f = again.until(lambda f: True, timeout=10)[-1]
        self.log("sse", "caught up after reconnect", describe(f["event"], f["data"]))
        if f["data"].get("text") != "sent while you were away":
            self.missing.append("reconnect")
        again.close()
        if self.a.screenshot:
            self.screenshot(self.a.screenshot)
        return not self.missing

    def screenshot(self, path):
        try:
            import theater_browser
            if not theater_browser.available():
                self.log("!", "no chromium/selenium: screenshot skipped")
                return
            b = theater_browser.Browser()
            try:
                b.driver.get(f"http://127.0.0.1:{self.port}/login?token={TOKEN}")
                time.sleep(2)
                b.driver.save_screenshot(path)
                self.log("shot", "Theater page saved", path)
            finally:
                b.close()
        except Exception as e:  # noqa: BLE001
            self.log("!", f"screenshot failed: {e}")


def describe(event, d):
    if event == "room.message":
        return f'{d.get("sender")}: "{d.get("text")}"'
    if event == "room.presence":
        return f'{d.get("user")} is {d.get("status")} in {d.get("room") or d.get("topic")}'
    if event == "persona.dormancy":
        return f'{d.get("persona")}: {d.get("previous")} → {d.get("level")} [{d.get("trigger")}]'
    if event == "council.answer":
        return f'{d.get("by")} answered {d.get("question_id")}: "{d.get("answer")}"'
    if event in ("deliberation", "phase", "action", "question", "session_paused", "session_ended"):
        return d.get("text", "")
    return d.get("topic", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 unless every expected event was seen")
    ap.add_argument("--build-dir", help="build tree of the service binaries (overrides VIGIL_BUILD_DIR)")
    ap.add_argument("--screenshot", metavar="PATH", help="also save the Theater page as a PNG")
    args = ap.parse_args()
    d = Demo(args)
    ok = False
    try:
        d.start()
        d.watch()
        ok = d.run()
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
    finally:
        d.stop()
    print("\nall expected events seen" if ok else f"\nMISSING: {getattr(d, 'missing', '?')}")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
