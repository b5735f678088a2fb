"""/metrics of the real services (issue 17), read with a real parser
(Debian's python3-prometheus-client) and a strict reader of the text
exposition format written here: every family has HELP and TYPE before its
samples, counters end in _total, histograms carry a unit and cumulative
buckets up to 60 s, no series is labelled per room, persona or user, and
the series an alert watches exist from the first scrape at zero, so the
first event is an increase."""

import math
import re
import time

import pytest

import harness
from conftest import human, uid
from fake_servers import FakeLLM
from test_wake_evaluator import EMERGENCY, RULES, setup_sleepers

prom_parser = pytest.importorskip("prometheus_client.parser",
                                  reason="python3-prometheus-client (scripts/install-deps) is missing")

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)')
# Labels whose values grow with use: never on a metric.
UNBOUNDED_LABELS = {"room", "persona", "user", "session", "message_id", "id", "agent"}


def parse_labels(text):
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        assert m, f"bad label set {text!r} at {pos}"
        assert m.group(1) not in labels, f"label {m.group(1)} twice in {text!r}"
        labels[m.group(1)] = m.group(2)
        pos = m.end()
    return labels


def strict_parse(body):
    """The exposition text -> {family: {"type", "help", "samples": [(name, labels, value)]}}.
    Raises AssertionError on anything the 0.0.4 text format does not allow
    or our conventions forbid."""
    fams, current, seen = {}, None, set()
    assert body.endswith("\n"), "the exposition ends with a newline"
    for n, line in enumerate(body.split("\n")[:-1], 1):
        where = f"line {n}: {line!r}"
        assert line, f"{where}: empty line"
        if line.startswith("# HELP "):
            name, _, text = line[7:].partition(" ")
            assert NAME.match(name) and text, where
            assert name not in fams, f"{where}: family {name} described twice (not contiguous)"
            fams[name] = current = {"help": text, "type": None, "samples": []}
            current["name"] = name
            continue
        if line.startswith("# TYPE "):
            name, _, typ = line[7:].partition(" ")
            assert current is not None and current["name"] == name, f"{where}: TYPE without its HELP"
            assert typ in ("counter", "gauge", "histogram"), where
            assert current["type"] is None and not current["samples"], f"{where}: TYPE after samples"
            current["type"] = typ
            continue
        assert not line.startswith("#"), f"{where}: unknown comment"
        m = SAMPLE.match(line)
        assert m, f"{where}: not a sample"
        name, labels, value = m.group(1), parse_labels(m.group(2) or ""), m.group(3)
        assert current is not None and current["type"], f"{where}: sample before HELP and TYPE"
        fam = current["name"]
        if current["type"] == "histogram":
            assert name in (fam + "_bucket", fam + "_sum", fam + "_count"), f"{where}: not of {fam}"
        else:
            assert name == fam, f"{where}: sample of another family than {fam}"
        key = (name, tuple(sorted(labels.items())))
        assert key not in seen, f"{where}: duplicate series"
        seen.add(key)
        v = float(value.replace("+Inf", "inf").replace("-Inf", "-inf"))
        assert not math.isnan(v) or current["type"] == "gauge", f"{where}: NaN"
        current["samples"].append((name, labels, v))
    for name, f in fams.items():
        assert f["type"], f"{name}: no TYPE"
        assert f["samples"], f"{name}: HELP and TYPE without a sample"
    return fams


def check_conventions(fams):
    for name, f in fams.items():
        typ = f["type"]
        if typ == "counter":
            assert name.endswith("_total"), f"counter {name} does not end in _total"
            assert all(v >= 0 for _, _, v in f["samples"]), name
        else:
            assert not name.endswith("_total"), f"{typ} {name} ends in _total"
        if typ == "histogram":
            assert name.endswith("_seconds") or name.endswith("_bytes"), f"histogram {name} has no unit"
            by_series = {}
            for s, labels, v in f["samples"]:
                base = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
                by_series.setdefault(base, []).append((s, labels, v))
            for base, samples in by_series.items():
                buckets = [(float(lb["le"].replace("+Inf", "inf")), v) for s, lb, v in samples
                           if s.endswith("_bucket")]
                les = [le for le, _ in buckets]
                assert les == sorted(les) and les[-1] == math.inf, f"{name}{base}: buckets out of order"
                assert 60.0 in les and 30.0 in les, f"{name}: no bucket beyond 10 s"
                counts = [v for _, v in buckets]
                assert counts == sorted(counts), f"{name}{base}: buckets not cumulative"
                count = [v for s, _, v in samples if s.endswith("_count")]
                assert count == [counts[-1]], f"{name}{base}: _count differs from the +Inf bucket"
        for _, labels, _ in f["samples"]:
            for k in labels:
                assert LABEL_NAME.match(k) and not k.startswith("__"), f"{name}: label {k}"
                assert k not in UNBOUNDED_LABELS, f"{name}: unbounded label {k}"


def scrape(svc):
    st, body, headers = harness.http_get(svc.http_port, "/metrics")
    assert st == 200
    ctype = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
    assert ctype.startswith("text/plain") and "version=0.0.4" in ctype, ctype
    # the real parser first: it must read all of it
    families = list(prom_parser.text_string_to_metric_families(body))
    assert families
    fams = strict_parse(body)
    check_conventions(fams)
    return fams


def value(fams, name, **labels):
    fam = name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in fams:
            fam = name[: -len(suffix)]
    vals = [v for s, lb, v in fams[fam]["samples"] if s == name and all(lb.get(k) == x for k, x in labels.items())]
    assert vals, f"no series {name}{labels}"
    return sum(vals)


STARTUP_ZERO = [("vigil_rejected_total", {"reason": "not_json"}), ("vigil_rejected_total", {"reason": "bad_value"}),
                ("vigil_mqtt_reconnects_total", {}), ("vigil_mqtt_publish_failures_total", {}),
                ("vigil_redis_errors_total", {}), ("vigil_redis_reconnects_total", {}),
                ("vigil_commit_conflicts_total", {}), ("vigil_state_whole_loads_total", {}),
                ("vigil_commit_retries_total", {}), ("vigil_commit_replies_lost_total", {}),
                ("vigil_duplicates_total", {}),
                ("vigil_outbox_publish_failures_total", {}), ("vigil_outbox_dead_letters_total", {}),
                ("vigil_outbox_dead_letters", {}), ("vigil_outbox_refusals_total", {}),
                ("vigil_outbox_superseded_total", {}), ("vigil_mqtt_sessions_lost_total", {})]


def proc_cpu_seconds(pid):
    """utime + stime of /proc/<pid>/stat, in seconds (what the service reports)."""
    import os
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_process_series(fams, service, pid):
    assert value(fams, "vigil_build_info", service=service) == 1
    assert [lb["version"] for _, lb, _ in fams["vigil_build_info"]["samples"]][0]
    assert value(fams, "process_resident_memory_bytes") > 1e6
    assert value(fams, "process_open_fds") >= 5
    assert fams["process_cpu_seconds_total"]["type"] == "counter"
    cpu = value(fams, "process_cpu_seconds_total")
    # what the kernel counts for it (a process that just started may have
    # used less than one clock tick: 0 is then right)
    assert 0 <= cpu <= proc_cpu_seconds(pid), (cpu, proc_cpu_seconds(pid))
    assert value(fams, "process_start_time_seconds") > harness.now_ms() / 1000 - 3600
    assert value(fams, "process_max_fds") >= value(fams, "process_open_fds")


def test_dormancy_monitor_metrics_from_the_start_and_after_an_event(stack):
    svc = stack.service()
    fams = scrape(svc)
    check_process_series(fams, "dormancy-monitor", pid=svc.proc.pid)
    for name, labels in STARTUP_ZERO:
        assert value(fams, name, **labels) == 0, (name, labels)
    assert value(fams, "vigil_handler_seconds_count") >= 0
    # the first rejection is an increase from 0 on a series that existed
    pub = stack.publisher()
    pub.publish(f"room/{uid('room')}/message", b"{not json")
    harness.wait_until(lambda: value(scrape(svc), "vigil_rejected_total", reason="not_json") == 1, 10,
                       "the rejection counted")
    # rooms and personas in use add no series
    before = {(s, tuple(sorted(lb.items()))) for f in scrape(svc).values() for s, lb, _ in f["samples"]}
    for i in range(5):
        room = uid("room")
        pub.publish(*human(room, f"user{i}", "hello @helper"))
    harness.wait_until(lambda: value(scrape(svc), "vigil_commits_total") >= 5, 10, "five commits")
    after = {(s, tuple(sorted(lb.items()))) for f in scrape(svc).values() for s, lb, _ in f["samples"]}
    grown = {s for s, _ in after - before}
    assert grown <= {"vigil_inputs_total", "vigil_handler_seconds_bucket", "vigil_handler_seconds_sum",
                     "vigil_handler_seconds_count"}, grown - before


def test_wake_evaluator_llm_metrics_and_no_per_room_labels(stack, tmp_path):
    llm = FakeLLM(str(tmp_path))
    try:
        llm.control(rules=RULES)
        svc = stack.service("wake-evaluator", env={"VIGIL_LLM_URL": llm.url, "VIGIL_LLM_RETRIES": 0,
                                                   "VIGIL_AUTOPILOT": 0})
        fams = scrape(svc)
        check_process_series(fams, "wake-evaluator", pid=svc.proc.pid)
        for status in ("ok", "timeout", "http_error", "rate_limited", "connect_error", "bad_response"):
            assert value(fams, "vigil_llm_requests_total", status=status) == 0, status
        assert value(fams, "vigil_llm_latency_seconds_count") == 0
        assert value(fams, "vigil_llm_latency_seconds_bucket", le="60") == 0

        pub = stack.publisher()
        col = stack.collector(topics=("persona/+/wake", "room/+/economics"))
        room = uid("ops")
        setup_sleepers(stack, pub, room, ["sre"])
        pub.publish(*human(room, "joel", EMERGENCY))
        col.wait_event("persona/sre/wake", timeout=20)
        col.wait_event(f"room/{room}/economics", timeout=10)
        fams = scrape(svc)
        assert value(fams, "vigil_llm_requests_total", status="ok") == 1
        assert value(fams, "vigil_llm_latency_seconds_count") == 1
        assert value(fams, "vigil_llm_latency_seconds_bucket", le="60") == 1
        # the per-room economics stay on the topic, not in a labelled gauge
        assert "vigil_wake_tokens_saved_estimate" not in fams
    finally:
        llm.stop()


def test_backlog_gauges_follow_the_outbox_and_the_timers(stack):
    """A timer set by an AI message (the no-human suggestion) shows in
    vigil_timers_pending; it fires while the broker is down, so its event
    waits in the outbox (vigil_outbox_pending, its age growing), and the
    gauge drops back to 0 once the broker is back and the event is out."""
    svc = stack.service(env={"VIGIL_DORMANCY_NO_HUMAN_MS": 1500, "VIGIL_DORMANCY_AI_ONLY_MS": 600000,
                             "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 600000})
    fams = scrape(svc)
    for name in ("vigil_outbox_pending", "vigil_outbox_oldest_age_seconds", "vigil_timers_pending",
                 "vigil_timers_overdue_seconds", "vigil_backlog_read_errors_total"):
        assert value(fams, name) == 0, name
    col = stack.collector(topics=("persona/+/suggestion",))
    pub = stack.publisher()
    room = uid("room")
    pub.publish(*human(room, "joel", "hi"))
    pub.publish(f"room/{room}/message", {"id": uid(), "room": room, "sender": "helper", "sender_type": "ai",
                                         "text": "hello", "ts": harness.now_ms()})
    harness.wait_until(lambda: value(scrape(svc), "vigil_timers_pending") >= 1, 10, "a timer pending")
    stack.broker.kill9()
    harness.wait_until(lambda: value(scrape(svc), "vigil_outbox_pending") >= 1, 15,
                       "the suggestion waiting in the outbox")
    time.sleep(1.2)
    fams = scrape(svc)
    assert value(fams, "vigil_outbox_oldest_age_seconds") >= 1.0
    assert value(fams, "vigil_backlog_read_errors_total") == 0
    stack.broker.restart()
    col.wait_event("persona/helper/suggestion", timeout=30)
    harness.wait_until(lambda: value(scrape(svc), "vigil_outbox_pending") == 0, 30, "the outbox drained")
    assert value(scrape(svc), "vigil_outbox_oldest_age_seconds") == 0


def test_inputs_in_flight_shows_intake_blocked_on_redis(stack):
    """An input whose commit waits for a frozen Redis is in flight (not yet
    acknowledged): vigil_inputs_in_flight is 1 until Redis answers again,
    then 0, and the input is applied."""
    import os
    import signal
    svc = stack.service()
    assert value(scrape(svc), "vigil_inputs_in_flight") == 0
    col = stack.collector(topics=("persona/+/dormancy",))
    pub = stack.publisher()
    room = uid("room")
    os.kill(stack.redis.proc.pid, signal.SIGSTOP)
    try:
        pub.publish(f"room/{room}/message", {"id": uid(), "room": room, "sender": "ann",
                                             "sender_type": "ai", "text": "@self dormant sleep",
                                             "ts": harness.now_ms()})
        harness.wait_until(lambda: value(scrape(svc), "vigil_inputs_in_flight") == 1, 15,
                           "the input in flight while Redis is frozen")
    finally:
        os.kill(stack.redis.proc.pid, signal.SIGCONT)
    col.wait_event("persona/ann/dormancy", timeout=30)
    harness.wait_until(lambda: value(scrape(svc), "vigil_inputs_in_flight") == 0, 15, "nothing in flight")


# Every daemon, not only the two above: the same libshared /metrics, so
# the same conventions, process series, backlog gauges and startup zeros.
# Services that call an LLM declare its series at zero too (an LLM that
# nobody answers: the URL is never called before an input needs it).
SERVICES = ["dormancy-monitor", "wake-evaluator", "chat-router", "heartbeat", "council",
            "stall-resumer", "floor-control", "presence-gateway"]
LLM_USERS = {"wake-evaluator", "heartbeat", "council", "floor-control"}
# The label of each durable job stream: what its cap trims is counted from
# zero, so the first trim is an increase VigilJobsTrimmed sees.
JOB_STREAMS = {"wake-evaluator": "jobs", "heartbeat": "jobs", "council": "jobs",
               "stall-resumer": "resumes", "floor-control": "jobs"}
BACKLOG = ("vigil_outbox_pending", "vigil_outbox_oldest_age_seconds", "vigil_timers_pending",
           "vigil_timers_overdue_seconds", "vigil_inputs_in_flight", "vigil_outbox_dead_letters")


@pytest.mark.parametrize("name", SERVICES)
def test_every_service_exposes_the_operators_series_from_the_start(stack, name):
    env = {"VIGIL_LLM_URL": f"http://127.0.0.1:{harness.free_port()}/v1"}
    if name == "floor-control":
        env["VIGIL_FLOOR_LLM_BUDGET_MS"] = "500"  # its LLM is off without a budget
    if name == "presence-gateway":
        from gateway_client import write_tokens
        env.update({"VIGIL_GATEWAY_TOKENS_FILE": write_tokens(stack.dir), "VIGIL_GATEWAY_RATE": "0"})
    svc = stack.service(name, env=env)
    fams = scrape(svc)
    check_process_series(fams, name, pid=svc.proc.pid)
    for series, labels in STARTUP_ZERO:
        assert value(fams, series, **labels) == 0, (name, series, labels)
    for series in BACKLOG:
        assert value(fams, series) == 0, (name, series)
    assert value(fams, "vigil_ready") == 1, name  # what VigilServiceNotReady watches
    if name in JOB_STREAMS:
        assert value(fams, "vigil_stream_trimmed_total", stream=JOB_STREAMS[name]) == 0, name
    # The shard view works in every service: its keys are libshared's own
    # (P S ":shard:..."), never one a service uses (council's P S
    # ":sessions" stream once made every refresh fail, and the intake waits
    # for a view it can read).
    harness.wait_until(lambda: value(scrape(svc), "vigil_shard_counts_in_use") == 1, 10,
                       f"{name}: a shard view read")
    assert value(scrape(svc), "vigil_shard_counts_held") == 0, name
    assert "shard view:" not in svc.stderr_text(), name
    if name in LLM_USERS:
        for status in ("ok", "timeout", "http_error", "rate_limited", "connect_error", "bad_response"):
            assert value(fams, "vigil_llm_requests_total", status=status) == 0, (name, status)
        assert value(fams, "vigil_llm_latency_seconds_bucket", le="60") == 0, name
        assert value(fams, "vigil_llm_latency_seconds_bucket", le="+Inf") == 0, name


def test_ready_gauge_follows_redis_without_readyz_polls(stack):
    """vigil_ready (what VigilServiceNotReady watches) is current at each
    scrape of /metrics, even when nothing polls /readyz (a Prometheus
    without a kubelet beside it): 0 while Redis is gone, 1 once it is back."""
    svc = stack.service()
    assert value(scrape(svc), "vigil_ready") == 1
    stack.redis.kill9()
    try:
        harness.wait_until(lambda: value(scrape(svc), "vigil_ready") == 0, 20, "vigil_ready 0 without Redis")
    finally:
        stack.redis.restart()
    harness.wait_until(lambda: value(scrape(svc), "vigil_ready") == 1, 30, "vigil_ready 1 with Redis back")
