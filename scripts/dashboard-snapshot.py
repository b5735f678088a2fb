#!/usr/bin/python3
"""Draws the Grafana dashboard (deploy/grafana/vigil-dashboard.json) from a
real run: a picture for the README, not a test.

Starts, on free loopback ports in a temporary folder, mosquitto, redis,
dormancy-monitor, chat-router and wake-evaluator (the build in
VIGIL_BUILD_DIR, default build/asan) with tests/support/fake_llm.py as the
LLM endpoint, and a real Prometheus (Debian's `prometheus`) scraping every
service's /metrics each second. Then sends traffic for --seconds: human and
AI messages in a few rooms, sleeping personas the wake-evaluator asks the
LLM about (answers delayed 0.3-2.5 s; a burst of HTTP 500s in the middle),
and some malformed inputs. Finally it runs each panel's query through
Prometheus' HTTP API over the run (rate windows shortened from 5m to 20s to
suit a short run) and draws the panels in the dashboard's layout with
matplotlib (Debian: prometheus, python3-matplotlib).

    scripts/dashboard-snapshot.py [--seconds 90] [--out deploy/grafana/vigil-dashboard.png]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402

DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "vigil-dashboard.json")
FAKE_LLM = os.path.join(ROOT, "tests", "support", "fake_llm.py")
SERVICES = ("dormancy-monitor", "chat-router", "wake-evaluator")
RULES = [
    {"regex": r'Text: "Server is down', "delay_ms": 2500,
     "reply": {"shouldWake": True, "reason": "outage", "confidence": 0.9}},
    {"match": "deploy", "delay_ms": 1200, "reply": {"shouldWake": True, "reason": "deploy", "confidence": 0.85}},
    {"delay_ms": 300, "reply": {"shouldWake": False, "reason": "chatter", "confidence": 0.7}},
]


def start_fake_llm(workdir):
    log = open(os.path.join(workdir, "fake_llm.log"), "ab")
    proc = subprocess.Popen(["/usr/bin/python3", FAKE_LLM, "--port", "0"], stdout=subprocess.PIPE, stderr=log,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    line = proc.stdout.readline().decode()
    if not line.startswith("PORT "):
        raise SystemExit(f"fake_llm did not start: {line!r}")
    return proc, int(line.split()[1])


def llm_control(port, **kw):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/control", data=json.dumps(kw).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()


def start_prometheus(workdir, targets):
    port = harness.free_port()
    conf = os.path.join(workdir, "prometheus.yml")
    scrape = [{"job_name": name, "scrape_interval": "1s", "scrape_timeout": "900ms",
               "static_configs": [{"targets": [f"127.0.0.1:{p}"], "labels": {"pod": f"{name}-0"}}]}
              for name, p in targets.items()]
    with open(conf, "w") as f:
        json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "scrape_configs": scrape}, f)
    log = open(os.path.join(workdir, "prometheus.log"), "ab")
    proc = subprocess.Popen([shutil.which("prometheus"), f"--config.file={conf}",
                             f"--storage.tsdb.path={os.path.join(workdir, 'tsdb')}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    harness.wait_until(lambda: harness.port_open(port), 30, "prometheus listening")
    return proc, port


def query_range(port, expr, start, end, step):
    q = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query_range?{q}", timeout=30) as r:
        body = json.loads(r.read())
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return body["data"]["result"]


def traffic(pub, llm_port, seconds):
    rooms = [f"room-{i}" for i in range(4)]
    personas = ["helper", "teacher", "sre", "critic"]
    now = harness.now_ms()
    for p in personas[2:]:
        meta = {"persona": p, "name": p, "rooms": rooms, "role": "operations", "tier": "smart",
                "expertise_domains": ["servers", "deploy"], "confidence_levels": {"servers": 0.9},
                "availability": 0.8, "ts": now}
        pub.publish(f"persona/{p}/meta", meta, retain=True)
    time.sleep(1)
    # asleep by choice (dormancy-monitor keeps them so through human messages
    # while helper and teacher stay awake): wake-evaluator asks the LLM
    def sleep_all(tag):
        for p in personas[2:]:
            pub.publish(f"persona/{p}/command", {"id": f"sleep-{p}-{tag}", "cmd": "dormant", "level": "sleep",
                                                 "by": "dashboard", "ts": harness.now_ms()})

    sleep_all("start")
    time.sleep(1)
    next_sleep = 8
    rnd = random.Random(17)
    texts = ["Server is down, need help ASAP!", "How was your weekend?", "Can we deploy the fix today?",
             "I think the build is green again.", "Lunch?"]
    t0 = time.monotonic()
    n = 0
    burst_done = False
    while time.monotonic() - t0 < seconds:
        elapsed = time.monotonic() - t0
        if elapsed >= next_sleep:  # the LLM woke them: back to sleep, so it is asked again
            sleep_all(n)
            next_sleep += 8
        if not burst_done and elapsed > seconds / 2:
            llm_control(llm_port, status=500, fail_next=12)
            burst_done = True
        room = rnd.choice(rooms)
        if rnd.random() < 0.35:
            body = {"id": f"h{n}", "room": room, "sender": "joel", "sender_type": "human",
                    "text": rnd.choice(texts), "ts": harness.now_ms()}
        else:
            p = rnd.choice(personas[:2])
            body = {"id": f"a{n}", "room": room, "sender": p, "sender_type": "ai",
                    "text": f"{p} thinks about it ({n})", "ts": harness.now_ms()}
        pub.publish(f"room/{room}/message", body)
        if rnd.random() < 0.04:
            pub.publish(f"room/{room}/message", b"{not json")
        if rnd.random() < 0.02:
            pub.publish(f"room/{room}/message", {"room": room, "sender": 5, "text": "x"})
        n += 1
        # busier in the middle third
        time.sleep(0.05 if seconds / 3 < elapsed < 2 * seconds / 3 else 0.15)
    return n


def draw(panels, results, start, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    fig = plt.figure(figsize=(16, rows * 0.55), facecolor="#111217")
    gs = fig.add_gridspec(rows, 24, hspace=1.2, wspace=1.5, top=0.96, bottom=0.02)
    for p, series in zip(panels, results):
        g = p["gridPos"]
        ax = fig.add_subplot(gs[g["y"]:g["y"] + g["h"], g["x"]:g["x"] + g["w"]])
        ax.set_facecolor("#181b1f")
        ax.set_title(p["title"], color="#d8d9da", fontsize=9, loc="left")
        ax.tick_params(colors="#8e8e8e", labelsize=7)
        for s in ax.spines.values():
            s.set_color("#2c3235")
        unit = p["fieldConfig"]["defaults"].get("unit", "short")
        if p["type"] in ("stat", "table"):
            ax.set_xticks([])
            ax.set_yticks([])
            items = []
            for legend, pts in series:
                if pts:
                    items.append((legend, pts[-1][1]))
            text = "    ".join(f"{k}: {v:g}" for k, v in items) or "no data"
            ax.text(0.01, 0.5, text, color="#73bf69", fontsize=10, va="center", transform=ax.transAxes,
                    wrap=True)
            continue
        if len(series) > 6:  # many label values: leave out the ones that stayed at zero
            series = [(k, pts) for k, pts in series if any(v for _, v in pts)] or series[:1]
        scale, label = {"bytes": (1 / 2**20, "MiB"), "percentunit": (100, "% of a core"),
                        "s": (1, "s"), "reqps": (1, "/s")}.get(unit, (1, ""))
        for legend, pts in series:
            if pts:
                ax.plot([t - start for t, _ in pts], [v * scale for _, v in pts], linewidth=1.2, label=legend)
        ax.set_ylabel(label, color="#8e8e8e", fontsize=7)
        ax.set_xlabel("seconds into the run", color="#8e8e8e", fontsize=7)
        if any(pts for _, pts in series):
            ax.legend(fontsize=6, loc="upper left", facecolor="#181b1f", labelcolor="#d8d9da", edgecolor="#2c3235")
        else:
            ax.text(0.5, 0.5, "no data", color="#8e8e8e", ha="center", transform=ax.transAxes)
    fig.suptitle("Vigil — deploy/grafana/vigil-dashboard.json drawn from a real run "
                 "(scripts/dashboard-snapshot.py: local ASan build, fake LLM, Prometheus scraping every second)",
                 color="#d8d9da", fontsize=11)
    fig.savefig(out, dpi=80, facecolor=fig.get_facecolor(), bbox_inches="tight")


def legend_of(fmt, metric):
    out = fmt
    for k, v in metric.items():
        out = out.replace("{{" + k + "}}", v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--out", default=os.path.join(ROOT, "deploy", "grafana", "vigil-dashboard.png"))
    args = ap.parse_args()
    if not shutil.which("prometheus"):
        raise SystemExit("prometheus not found (Debian package prometheus)")
    dash = json.load(open(DASHBOARD))
    work = tempfile.mkdtemp(prefix="vigil-dash-")
    procs, services = [], []
    redis = broker = None
    try:
        redis = harness.RedisServer(work).start()
        broker = harness.Mosquitto(work).start()
        llm, llm_port = start_fake_llm(work)
        procs.append(llm)
        llm_control(llm_port, rules=RULES)
        env = {"VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_URL": redis.url, "VIGIL_REDIS_PREFIX": "dash:",
               "VIGIL_TICK_MS": "100", "VIGIL_LOG_LEVEL": "warn"}
        for name in SERVICES:
            e = dict(env)
            if name == "wake-evaluator":
                e.update({"VIGIL_LLM_URL": f"http://127.0.0.1:{llm_port}/v1", "VIGIL_LLM_RETRIES": "0",
                          "VIGIL_LLM_TIMEOUT_MS": "5000", "VIGIL_AUTOPILOT": "0"})
            services.append(harness.Service(name, work, e, instance=f"{name}-0").start(timeout=30))
        prom, prom_port = start_prometheus(work, {s.name: s.http_port for s in services})
        procs.append(prom)
        pub = harness.Publisher(broker.port).start()
        start = time.time()
        n = traffic(pub, llm_port, args.seconds)
        time.sleep(3)
        end = time.time()
        pub.stop()
        print(f"{n} messages over {end - start:.0f} s", file=sys.stderr)
        for s in services:
            if s.name == "wake-evaluator":
                print("wake decisions:", s.metric("vigil_wake_decisions_total"),
                      "llm requests:", s.metric("vigil_llm_requests_total"), file=sys.stderr)
        results = []
        for p in dash["panels"]:
            series = []
            for t in p["targets"]:
                expr = t["expr"].replace('namespace=~"$namespace", ', "").replace("$service", ".*")
                expr = expr.replace("[5m]", "[20s]")
                for r in query_range(prom_port, expr, start, end, 1):
                    series.append((legend_of(t.get("legendFormat", ""), r["metric"]),
                                   [(float(ts), float(v)) for ts, v in r["values"] if v not in ("NaN", "+Inf")]))
            results.append(series)
        draw(dash["panels"], results, start, args.out)
        print(args.out)
    finally:
        for s in services:
            try:
                s.terminate()
            except harness.HarnessError as e:
                print(e, file=sys.stderr)
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        if broker:
            broker.stop()
        if redis:
            redis.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
