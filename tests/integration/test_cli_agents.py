"""`vigil agents status` (issue 12): the agents' status checker against a
real broker and a real stall-resumer, for a fixture of agents covering the
four categories. It reads only the retained agent/+/assessment and
agent/+/status topics: the tests run it with an unreachable Redis."""

import json
import os
import subprocess

import pytest

import harness
from chat_personas import run_vigil, vigil_exe
from conftest import uid

SERVICE = "stall-resumer"
MIN = 60_000
HOUR = 60 * MIN
NO_REDIS = {"VIGIL_REDIS_URL": f"redis://127.0.0.1:{harness.free_port()}/0"}


def publish_status(pub, agent, age_ms, fsm="EXECUTING"):
    pub.publish(f"agent/{agent}/status", {"agent": agent, "fsm_state": fsm,
                                          "ts": harness.now_ms() - age_ms}, retain=True)


def publish_signal(pub, agent, source, age_ms):
    pub.publish(f"agent/{agent}/activity", {"id": uid("a"), "agent": agent, "source": source,
                                            "detail": "work", "ts": harness.now_ms() - age_ms})


@pytest.fixture(scope="module")
def fleet(module_stack):
    s = module_stack
    s.service(SERVICE, env={"VIGIL_STALL_SCAN_MS": "300"})
    col = s.collector()
    pub = s.publisher()
    tag = uid("f")[-6:]
    a = {k: f"{k}-{tag}" for k in ("busy", "warn", "crit", "stuck", "nostatus")}
    publish_status(pub, a["busy"], 13 * HOUR)
    publish_signal(pub, a["busy"], "GIT_COMMIT", MIN)
    publish_signal(pub, a["busy"], "TEST_EXECUTION", MIN)
    publish_status(pub, a["warn"], 3 * HOUR, "PLANNING")
    publish_status(pub, a["crit"], 7 * HOUR, "BLOCKED")
    publish_status(pub, a["stuck"], 13 * HOUR)
    publish_signal(pub, a["stuck"], "MESSAGE_QUEUE", MIN)
    publish_signal(pub, a["nostatus"], "TELEMETRY_EVENT", 45 * MIN)
    expect = {"busy": "fresh", "warn": "warning", "crit": "critical", "stuck": "auto-resume",
              "nostatus": "fresh"}
    for k, cat in expect.items():
        col.wait_event(f"agent/{a[k]}/assessment",
                       lambda e, cat=cat: e["category"] == cat and (k in ("warn", "crit") or e["signals"]),
                       timeout=15, what=f"{k} assessed {cat}")
    col.wait_event(f"agent/{a['stuck']}/resume", timeout=15)
    return s, a


def lines_by_agent(out, agents):
    got = {}
    for line in out.splitlines():
        for k, name in agents.items():
            if f" {name} " in line:
                got[k] = line
    return got


def test_status_lines_with_emoji_confidence_sources_and_category(fleet):
    s, a = fleet
    r = run_vigil(s, "agents", "status", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    got = lines_by_agent(r.stdout, a)
    assert set(got) == set(a), r.stdout
    assert got["busy"].startswith("🟢 FRESH") and "confidence 0.900 active" in got["busy"]
    assert "GIT_COMMIT" in got["busy"] and "TEST_EXECUTION" in got["busy"]
    assert got["warn"].startswith("🟡 WARNING") and "PLANNING" in got["warn"]
    assert got["crit"].startswith("🟠 CRITICAL") and "BLOCKED" in got["crit"]
    assert got["stuck"].startswith("🔴 AUTO-RESUME") and "confidence 0.300 inactive" in got["stuck"]
    assert "MESSAGE_QUEUE" in got["stuck"]
    assert got["nostatus"].startswith("🟢 FRESH") and "activity 45m" in got["nostatus"]
    # worst first
    order = [line.split()[2] for line in r.stdout.splitlines() if line.split() and line.split()[2] in a.values()]
    assert order.index(a["stuck"]) < order.index(a["crit"]) < order.index(a["warn"]) < order.index(a["busy"])
    assert "5 agent(s): 2 🟢 fresh, 1 🟡 warning, 1 🟠 critical, 1 🔴 auto-resume" in r.stdout


def test_json_output(fleet):
    s, a = fleet
    r = run_vigil(s, "agents", "status", "--json", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    rows = {o["agent"]: o for o in map(json.loads, r.stdout.splitlines())}
    assert rows[a["busy"]]["category"] == "fresh" and rows[a["busy"]]["is_active"] is True
    assert rows[a["busy"]]["confidence"] == 0.9
    assert set(rows[a["busy"]]["sources"]) == {"GIT_COMMIT", "TEST_EXECUTION"}
    assert rows[a["stuck"]]["category"] == "auto-resume" and rows[a["stuck"]]["emoji"] == "🔴"
    assert rows[a["crit"]]["aged_from"] == "status" and rows[a["nostatus"]]["aged_from"] == "activity"


def test_no_activity_check_escalates_by_status_age(fleet):
    s, a = fleet
    r = run_vigil(s, "agents", "status", "--no-activity-check", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    got = lines_by_agent(r.stdout, a)
    assert got["busy"].startswith("🔴 AUTO-RESUME"), got["busy"]  # 13 h old status, activity ignored
    assert "confidence" not in got["busy"]
    assert got["warn"].startswith("🟡") and got["crit"].startswith("🟠")
    assert "activity check off" in r.stdout
    # thresholds come from the same variables as the service's
    r = run_vigil(s, "agents", "status", "--no-activity-check", "--json",
                  env=dict(NO_REDIS, VIGIL_STALL_WARNING_MS=str(8 * HOUR),
                           VIGIL_STALL_CRITICAL_MS=str(9 * HOUR),
                           VIGIL_STALL_AUTORESUME_MS=str(20 * HOUR)))
    rows = {o["agent"]: o for o in map(json.loads, r.stdout.splitlines())}
    assert rows[a["crit"]]["category"] == "fresh" and rows[a["busy"]]["category"] == "critical"


def test_a_stale_assessment_is_not_trusted(stack):
    """stall-resumer republishes every assessment at each scan; one much
    older is from a service that stopped scanning (here: none runs): its
    "active" may no longer be true, so the agent is judged by its status
    age, and the line says how old the assessment is."""
    pub = stack.publisher()
    agent, fresh = uid("stale-"), uid("live-")
    publish_status(pub, agent, 13 * HOUR)
    publish_status(pub, fresh, 13 * HOUR)
    for name, age in ((agent, 10 * MIN), (fresh, 5_000)):
        pub.publish(f"agent/{name}/assessment",
                    {"agent": name, "is_active": True, "confidence": 0.9, "validation_passed": True,
                     "signals": [{"source": "GIT_COMMIT", "tier": 1, "ts": harness.now_ms() - age,
                                  "age_minutes": 0}],
                     "category": "fresh", "ts": harness.now_ms() - age}, retain=True)
    r = run_vigil(stack, "agents", "status", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    got = lines_by_agent(r.stdout, {"stale": agent, "fresh": fresh})
    assert got["stale"].startswith("🔴 AUTO-RESUME") and "stale" in got["stale"], got["stale"]
    assert "assessed 10m ago: is stall-resumer running?" in got["stale"], got["stale"]
    assert got["fresh"].startswith("🟢 FRESH") and " active " in got["fresh"], got["fresh"]
    assert "assessed" not in got["fresh"]
    r = run_vigil(stack, "agents", "status", "--json", env=NO_REDIS)
    rows = {o["agent"]: o for o in map(json.loads, r.stdout.splitlines())}
    assert rows[agent]["assessment_stale"] is True and rows[agent]["is_active"] is False
    assert rows[agent]["category"] == "auto-resume" and rows[agent]["assessed_ms_ago"] >= 10 * MIN
    assert rows[fresh]["assessment_stale"] is False and rows[fresh]["is_active"] is True
    # the scan period the service runs with sets the bound
    r = run_vigil(stack, "agents", "status", "--json",
                  env=dict(NO_REDIS, VIGIL_STALL_SCAN_MS=str(5 * MIN)))
    rows = {o["agent"]: o for o in map(json.loads, r.stdout.splitlines())}
    assert rows[agent]["assessment_stale"] is False and rows[agent]["category"] == "fresh"


def test_usage_errors_and_empty_broker(stack):
    r = run_vigil(stack, "agents", "status", "--bogus")
    assert r.returncode == 2 and "unknown option" in r.stderr
    r = run_vigil(stack, "agents", "frobnicate")
    assert r.returncode == 2
    r = run_vigil(stack, "agents", "--help")
    assert r.returncode == 0 and "--no-activity-check" in r.stdout and "🔴" in r.stdout
    r = run_vigil(stack, "agents", "status", env=NO_REDIS)
    assert r.returncode == 0 and "no agents" in r.stdout
    r = run_vigil(stack, "agents", "status",
                  env={"VIGIL_MQTT_URL": f"mqtt://127.0.0.1:{harness.free_port()}",
                       "VIGIL_CLI_TIMEOUT_MS": "500"})
    assert r.returncode == 1 and "broker" in r.stderr
    assert os.path.exists(vigil_exe())


def test_thresholds_are_checked_as_stall_resumer_checks_them():
    """Thresholds stall-resumer refuses are refused by `vigil agents status`
    too, before any connection, with the same message and exit 2: inverted
    ones (warning <= critical <= auto-resume is required) and out-of-range
    ones, both as "configuration error:" like the CLI's other settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env.update({"LSAN_OPTIONS": "print_suppressions=0", "VIGIL_CLI_TIMEOUT_MS": "300",
                "VIGIL_MQTT_URL": f"mqtt://127.0.0.1:{harness.free_port()}", **NO_REDIS})
    order = ("configuration error: VIGIL_STALL_WARNING_MS <= VIGIL_STALL_CRITICAL_MS <= "
             "VIGIL_STALL_AUTORESUME_MS is required")

    def run(exe, *args, **extra):
        return subprocess.run([exe, *args], env=dict(env, **extra), capture_output=True, text=True, timeout=20)
    for bad in ({"VIGIL_STALL_WARNING_MS": "7200000", "VIGIL_STALL_CRITICAL_MS": "3600000"},
                {"VIGIL_STALL_CRITICAL_MS": str(13 * HOUR)}):
        r = run(vigil_exe(), "agents", "status", **bad)
        assert (r.returncode, r.stdout, r.stderr) == (2, "", f"vigil: {order}\n"), (bad, r)
        svc = run(harness.service_binary(SERVICE), **bad)
        assert svc.returncode == 2 and f"{SERVICE}: {order}" in svc.stderr, (bad, svc.stderr)
    for bad in ({"VIGIL_STALL_WARNING_MS": "0"}, {"VIGIL_STALL_SCAN_MS": "5"},
                {"VIGIL_STALL_AUTORESUME_MS": "soon"}):
        r = run(vigil_exe(), "agents", "status", **bad)
        name = next(iter(bad))
        assert r.returncode == 2 and r.stderr.startswith(f"vigil: configuration error: {name}"), (bad, r.stderr)
    # equal thresholds are allowed: on to the (unreachable) broker
    r = run(vigil_exe(), "agents", "status", VIGIL_STALL_WARNING_MS="3600000", VIGIL_STALL_CRITICAL_MS="3600000",
            VIGIL_STALL_AUTORESUME_MS="3600000")
    assert r.returncode == 1 and "broker" in r.stderr, r.stderr


def test_status_without_ts_is_aged_from_when_stall_resumer_got_it(stack):
    """A status published without `ts` is dated by its receive time; the
    CLI takes that time from the assessment's status_ts."""
    stack.service(SERVICE, env={"VIGIL_STALL_SCAN_MS": "300"})
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("nots-")
    pub.publish(f"agent/{agent}/status", {"agent": agent, "fsm_state": "IDLE"}, retain=True)
    col.wait_event(f"agent/{agent}/assessment", lambda e: isinstance(e.get("status_ts"), int), timeout=10)
    r = run_vigil(stack, "agents", "status", "--json", env=NO_REDIS)
    rows = {o["agent"]: o for o in map(json.loads, r.stdout.splitlines())}
    assert rows[agent]["aged_from"] == "status" and rows[agent]["age_ms"] < 60_000, rows[agent]


def test_ages_just_under_a_limit_never_read_as_the_limit(stack):
    """The age on a line is cut down to the minute, never rounded up: a
    status 5 h 59 min old is 🟡 WARNING and reads 5h59m, not 6.0h (the
    critical limit); the same below the fresh and auto-resume limits."""
    pub = stack.publisher()
    names = {k: uid(k + "-") for k in ("fresh", "warn", "crit", "auto")}
    for k, age in (("fresh", 2 * HOUR - 30_000), ("warn", 6 * HOUR - 30_000),
                   ("crit", 12 * HOUR - 30_000), ("auto", 13 * HOUR + MIN + 30_000)):
        publish_status(pub, names[k], age)
    r = run_vigil(stack, "agents", "status", "--no-activity-check", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    got = lines_by_agent(r.stdout, names)
    assert got["fresh"].startswith("🟢 FRESH") and "status 1h59m" in got["fresh"], got["fresh"]
    assert got["warn"].startswith("🟡 WARNING") and "status 5h59m" in got["warn"], got["warn"]
    assert got["crit"].startswith("🟠 CRITICAL") and "status 11h59m" in got["crit"], got["crit"]
    assert got["auto"].startswith("🔴 AUTO-RESUME") and "status 13h01m" in got["auto"], got["auto"]


def test_an_agent_known_nothing_about_is_auto_resume_as_stall_resumer_says(stack):
    """An assessment with no status and no activity (stall-resumer's
    stand-in for a record it could not read: status_age_hours null, category
    auto-resume, failing open) is listed 🔴 AUTO-RESUME, as the service
    treats it, not 🟢 FRESH at age 0."""
    pub = stack.publisher()
    agent = uid("blank-")
    pub.publish(f"agent/{agent}/assessment",
                {"id": uid("as"), "agent": agent, "is_active": False, "confidence": 0,
                 "signals": [], "reasons": [], "category": "auto-resume",
                 "status_age_hours": None, "aged_from": None, "last_activity": None,
                 "ts": harness.now_ms()}, retain=True)
    r = run_vigil(stack, "agents", "status", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    line = lines_by_agent(r.stdout, {"a": agent})["a"]
    assert line.startswith("🔴 AUTO-RESUME") and "no status, no activity known" in line, line
    r = run_vigil(stack, "agents", "status", "--json", env=NO_REDIS)
    rows = {o["agent"]: o for o in map(json.loads, r.stdout.splitlines())}
    assert rows[agent]["category"] == "auto-resume" and "age_ms" not in rows[agent], rows[agent]


def test_a_retired_agent_is_no_longer_listed(stack):
    """Clearing an agent's retained status retires it, and stall-resumer
    clears its retained assessment in the same commit: the checker, which
    reads only those two topics, no longer lists it."""
    stack.service(SERVICE, env={"VIGIL_STALL_SCAN_MS": "300"})
    col = stack.collector()
    pub = stack.publisher()
    stays, gone = uid("stays-"), uid("gone-")
    for agent in (stays, gone):
        publish_status(pub, agent, 3 * HOUR, "PLANNING")
        col.wait_event(f"agent/{agent}/assessment", timeout=15)
    r = run_vigil(stack, "agents", "status", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    assert set(lines_by_agent(r.stdout, {"stays": stays, "gone": gone})) == {"stays", "gone"}
    mark = col.mark()
    pub.publish(f"agent/{gone}/status", b"", retain=True)
    col.wait_for(lambda c: [m for m in c.find(f"agent/{gone}/assessment", since=mark)
                            if m.payload == b""], 10, "its assessment cleared")
    r = run_vigil(stack, "agents", "status", env=NO_REDIS)
    assert r.returncode == 0, r.stderr
    assert set(lines_by_agent(r.stdout, {"stays": stays, "gone": gone})) == {"stays"}, r.stdout
    assert "1 agent(s)" in r.stdout, r.stdout
