"""The platform every service stands on, seen from outside through
dormancy-monitor: HTTP endpoints, command line, configuration errors, the
retained status topic and its last will, clean shutdown, and the first
end-to-end path (a human message wakes a sleeping AI persona), with every
published message checked against its JSON Schema."""

import re
import time

import pytest

import harness
from conftest import SERVICE, ai, command, human, require_binary, uid, validate_outputs
from harness import Service, scaled

COMMON_VARS = [
    "VIGIL_MQTT_URL", "VIGIL_MQTT_USER", "VIGIL_MQTT_PASSWORD", "VIGIL_REDIS_URL",
    "VIGIL_REDIS_PREFIX", "VIGIL_HTTP_ADDR", "VIGIL_LOG_LEVEL", "VIGIL_INSTANCE",
    "VIGIL_MAX_PAYLOAD", "VIGIL_SHARD", "VIGIL_TICK_MS",
]
DORMANCY_VARS = [
    "VIGIL_DORMANCY_AUTO_SUGGEST", "VIGIL_DORMANCY_AUTO_SLEEP", "VIGIL_DORMANCY_AUTO_WAKE",
    "VIGIL_DORMANCY_NO_HUMAN_MS", "VIGIL_DORMANCY_AI_ONLY_MS", "VIGIL_DORMANCY_REDUNDANT_WINDOW_MS",
    "VIGIL_DORMANCY_REDUNDANT_KEEP", "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS", "VIGIL_DORMANCY_SNOOZE_MS",
    "VIGIL_DORMANCY_LLM_WAKE", "VIGIL_DORMANCY_WAKE_CONFIDENCE", "VIGIL_DORMANCY_PRESENCE",
    "VIGIL_DORMANCY_ADAPTIVE", "VIGIL_DORMANCY_HUMAN_WAKES", "VIGIL_DORMANCY_MIN_AWAKE",
]
WAKE_TEXT = "\u2728 Human activity detected. Waking from dormancy."


def project_version():
    with open(f"{harness.SOURCE_DIR}/CMakeLists.txt") as f:
        m = re.search(r"project\(\s*vigil\s+VERSION\s+([0-9.]+)", f.read())
    return m.group(1) if m else None


def offline_service(tmp_path, **env):
    """A Service object for command-line checks (no broker, no Redis)."""
    require_binary()
    base = {"VIGIL_MQTT_URL": "mqtt://127.0.0.1:1", "VIGIL_REDIS_URL": "redis://127.0.0.1:1/0"}
    base.update(env)
    return Service(SERVICE, str(tmp_path), base)


# --------------------------------------------------------------------------
# command line


def test_help_lists_every_common_variable_and_exits_0(tmp_path):
    svc = offline_service(tmp_path)
    r = svc.run_cli(["--help"])
    out = r.stdout.decode("utf-8", "replace")
    assert r.returncode == 0, f"--help exited {r.returncode}: {r.stderr.decode()[:500]}"
    missing = [v for v in COMMON_VARS if v not in out]
    assert not missing, f"--help does not list {missing}:\n{out}"
    missing = [v for v in DORMANCY_VARS if v not in out]
    assert not missing, f"--help does not list the service's variables {missing}"
    # defaults are shown (README "Configuration")
    assert "mqtt://127.0.0.1:1883" in out and "redis://127.0.0.1:6379/0" in out
    assert svc.run_cli(["-h"]).returncode == 0


def test_version_prints_the_project_version(tmp_path):
    svc = offline_service(tmp_path)
    r = svc.run_cli(["--version"])
    assert r.returncode == 0
    out = r.stdout.decode()
    assert SERVICE in out and project_version() in out, out


def test_unknown_argument_exits_2(tmp_path):
    r = offline_service(tmp_path).run_cli(["--no-such-option"])
    assert r.returncode == 2
    assert r.stderr.strip(), "no message on stderr for an unknown argument"


@pytest.mark.parametrize("shard", ["1024/2", "0/1025", "abc", "1/0", "-1/2", "0/", "/2", "0/2/1"])
def test_bad_shard_exits_2_with_a_message(tmp_path, shard):
    r = offline_service(tmp_path, VIGIL_SHARD=shard).run_cli([], timeout=10)
    err = (r.stderr + r.stdout).decode("utf-8", "replace")
    assert r.returncode == 2, f"VIGIL_SHARD={shard}: exit {r.returncode}, output:\n{err[-800:]}"
    assert "VIGIL_SHARD" in err, f"the message does not name VIGIL_SHARD:\n{err[-800:]}"


@pytest.mark.parametrize("var,value", [
    ("VIGIL_TICK_MS", "soon"),
    ("VIGIL_MAX_PAYLOAD", "-5"),
    ("VIGIL_DORMANCY_NO_HUMAN_MS", "five minutes"),
    ("VIGIL_DORMANCY_HUMAN_WAKES", "some"),
    ("VIGIL_LOG_LEVEL", "chatty"),
])
def test_bad_config_value_exits_2_naming_the_variable(tmp_path, var, value):
    r = offline_service(tmp_path, **{var: value}).run_cli([], timeout=10)
    err = (r.stderr + r.stdout).decode("utf-8", "replace")
    assert r.returncode == 2, f"{var}={value}: exit {r.returncode}, output:\n{err[-800:]}"
    assert var in err, f"the message does not name {var}:\n{err[-800:]}"


# --------------------------------------------------------------------------
# HTTP


def test_health_ready_and_metrics(stack):
    svc = stack.service()
    st, body, _ = svc.http("/healthz")
    assert st == 200 and body.strip() == "ok"
    st, body, _ = svc.http("/readyz")
    assert st == 200, body
    st, body, headers = svc.http("/metrics")
    assert st == 200
    ctype = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
    assert ctype.startswith("text/plain") and "version=0.0.4" in ctype, ctype
    assert "# TYPE" in body and "# HELP" in body
    samples = harness.parse_metrics(body)
    assert samples, "no samples in /metrics"
    assert harness.metric_value(samples, "vigil_ready") == 1, body[:2000]
    assert svc.http("/nope")[0] == 404


def test_metrics_count_inputs_and_handler_latency(stack):
    svc = stack.service()
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    before = svc.metric("vigil_inputs_total")
    for i in range(5):
        pub.publish(*ai(room, "ada", f"thought {i}"))
    harness.wait_until(lambda: svc.metric("vigil_inputs_total") >= before + 5, 10, "vigil_inputs_total +5")
    # an input is counted on arrival and its latency once committed: wait
    # for the commits (reading at once raced them on a busy machine)
    harness.wait_until(lambda: svc.metric("vigil_handler_seconds_count") >= 5, 10,
                       "handler latency histogram vigil_handler_seconds observed for the 5 inputs")
    samples = svc.metrics()
    assert any(n == "vigil_handler_seconds_bucket" and ls.get("le") == "+Inf" for n, ls, _ in samples)
    col.wait_event(f"room/{room}/state", timeout=10)


# --------------------------------------------------------------------------
# status topic, last will, shutdown


def status_of(stack, svc):
    topic = f"sys/{SERVICE}/{svc.instance}/status"
    return harness.retained(stack.broker.port, topic).get(topic)


def test_status_ready_disconnected_lost(stack):
    svc = stack.service(instance="inst-a")
    topic = f"sys/{SERVICE}/inst-a/status"

    st = harness.wait_until(lambda: (s := status_of(stack, svc)) and s.get("state") == "ready" and s,
                            10, "retained status ready")
    assert st["service"] == SERVICE and st["instance"] == "inst-a"
    assert st["shard"] == "0/1" and st["version"] == project_version()
    assert isinstance(st["ts"], int)

    # SIGTERM: exits 0 promptly and leaves "disconnected" (not the will).
    t0 = time.monotonic()
    rc = svc.terminate(timeout=10)
    took = time.monotonic() - t0
    assert rc == 0, f"exit status {rc} after SIGTERM"
    assert took < scaled(5), f"SIGTERM took {took:.1f}s"
    assert status_of(stack, svc)["state"] == "disconnected"
    time.sleep(0.5)  # a will would arrive now if the disconnect was not clean
    assert status_of(stack, svc)["state"] == "disconnected"

    # Back up: "ready" again. Then kill -9: the broker publishes the will.
    svc.start()
    harness.wait_until(lambda: status_of(stack, svc)["state"] == "ready", 10, "ready after restart")
    svc.kill9()
    harness.wait_until(lambda: status_of(stack, svc)["state"] == "lost", 15, "the 'lost' will after kill -9")
    col = stack.collector(topics=(topic,))
    col.wait_event(topic, lambda p: p["state"] == "lost", timeout=5)
    validate_outputs(col)


def test_status_ready_again_after_broker_restart(stack):
    svc = stack.service(instance="inst-b")
    harness.wait_until(lambda: status_of(stack, svc)["state"] == "ready", 10, "ready")
    col = stack.collector(topics=(f"sys/{SERVICE}/inst-b/status",))
    mark = col.mark()
    stack.broker.restart()
    # "ready" is published again after the automatic reconnect.
    col.wait_event(f"sys/{SERVICE}/inst-b/status", lambda p: p["state"] == "ready", timeout=40, since=mark,
                   what="status ready after the broker restart")
    svc.wait_ready(timeout=40)


def test_sigterm_while_busy_exits_0(stack):
    svc = stack.service()
    pub = stack.publisher()
    room = uid("r")
    pub.publish_many([ai(room, f"p{i % 20}", f"line {i}") for i in range(300)])
    t0 = time.monotonic()
    assert svc.terminate(timeout=15) == 0
    assert time.monotonic() - t0 < scaled(10)


# --------------------------------------------------------------------------
# the process: glibc's malloc cache (libshared/include/vigil/malloc_tune.h)


def start_environ(pid):
    """The environment block the process (its last execve) started with, as
    /proc shows it: glibc splits GLIBC_TUNABLES there at its colons (it
    reads the value in place), so the items are looked for one by one."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read().split(b"\0")


def test_the_daemon_starts_itself_again_with_a_larger_malloc_cache(stack):
    """glibc reads GLIBC_TUNABLES only when a program starts: the daemon
    starts itself again, under the same process id and name, with the
    cache size added to the tunables it was given, and works."""
    svc = stack.service(env={"GLIBC_TUNABLES": "glibc.malloc.arena_max=8"})
    env = start_environ(svc.proc.pid)
    at = env.index(b"GLIBC_TUNABLES=glibc.malloc.arena_max=8")
    assert env[at + 1] == b"glibc.malloc.tcache_count=200", env
    assert b"VIGIL_MALLOC_TUNED=1" in env
    with open(f"/proc/{svc.proc.pid}/comm") as f:
        assert f.read().strip() == SERVICE[:15]  # not "exe"
    assert svc.http("/readyz")[0] == 200
    col = stack.collector()
    room = uid("r")
    stack.publisher().publish(*ai(room, "ada", "@self dormant sleep"))
    col.wait_event("persona/ada/dormancy", lambda p: p["room"] == room, timeout=10)


def test_a_malloc_cache_the_operator_set_is_kept(stack):
    svc = stack.service(env={"GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"})
    env = start_environ(svc.proc.pid)
    assert b"GLIBC_TUNABLES=glibc.malloc.tcache_count=7" in env
    assert b"glibc.malloc.tcache_count=200" not in env
    assert b"VIGIL_MALLOC_TUNED=1" not in env  # not started again


# --------------------------------------------------------------------------
# end to end: a human message wakes a sleeping AI persona


def test_human_message_wakes_a_sleeping_persona(stack):
    """The minimal path of issue 2, with the literal wake rule (any
    human message wakes every sleeper, VIGIL_DORMANCY_HUMAN_WAKES=all): message in through the broker, state
    committed in Redis, persona/{p}/dormancy event and retained
    persona/{p}/state and room/{r}/state out."""
    stack.service(env={"VIGIL_DORMANCY_HUMAN_WAKES": "all"})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")

    pub.publish(*ai(room, "ada", "Shall we refactor the parser?", mid="m-1"))
    pub.publish(*ai(room, "ada", "@self dormant sleep", mid="m-2"))
    ev = col.wait_event("persona/ada/dormancy", lambda p: p["level"] == "sleep", timeout=10)
    assert ev["persona"] == "ada" and ev["room"] == room
    assert ev["previous"] == "active" and ev["trigger"] == "manual"
    assert ev.get("message_id") == "m-2"

    def retained_level(level):
        ps = harness.retained(stack.broker.port, "persona/ada/state").get("persona/ada/state")
        rs = harness.retained(stack.broker.port, f"room/{room}/state").get(f"room/{room}/state")
        return (ps and ps["rooms"].get(room, {}).get("level") == level
                and rs and rs["personas"].get("ada") == level and (ps, rs))

    ps, rs = harness.wait_until(lambda: retained_level("sleep"), 10, "retained states showing sleep")
    assert ps["persona"] == "ada" and rs["room"] == room

    mark = col.mark()
    pub.publish(*human(room, "joel", "I'm back", mid="h-1"))
    ev = col.wait_event("persona/ada/dormancy", lambda p: p["level"] == "active", timeout=10, since=mark)
    assert ev["previous"] == "sleep"
    assert ev["trigger"] == "human-reentry"
    assert ev["message_id"] == "h-1", "the wake must name the human message that caused it"
    assert ev["text"] == WAKE_TEXT
    ps, rs = harness.wait_until(lambda: retained_level("active"), 10, "retained states showing active")
    assert ps["rooms"][room]["trigger"] == "human-reentry"
    assert rs["last_human_ts"] is not None and rs["ai_only_since"] is None

    # The state lives in Redis (the room is the state key).
    keys = stack.store().keys()
    assert any(room in k and ":state:" in k for k in keys), keys
    # One wake, one sleep: no duplicates with distinct ids.
    assert len({e["id"] for e in col.events("persona/ada/dormancy")}) == 2
    # Every retained state message was published with the retain flag.
    for m in col.find("persona/+/state") + col.find("room/+/state"):
        assert m.retained, f"{m.topic} published without retain"
    assert validate_outputs(col) >= 4


def test_wake_path_via_command_topic(stack):
    """Same path, the persona sent to sleep on persona/{p}/command; with the
    default (refined) rule a lone persona still wakes: a human never meets
    fewer than VIGIL_DORMANCY_MIN_AWAKE personas able to answer."""
    stack.service(env={"VIGIL_DORMANCY_MIN_AWAKE": "2"})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")
    pub.publish(*command("bo", "dormant", level="sleep", room=room, by="bo"))
    ev = col.wait_event("persona/bo/dormancy", lambda p: p["level"] == "sleep", timeout=10)
    assert ev["trigger"] == "manual" and ev["room"] == room
    mark = col.mark()
    pub.publish(*human(room, "joel", "anyone here?", mid="h-2"))
    ev = col.wait_event("persona/bo/dormancy", lambda p: p["level"] == "active", timeout=10, since=mark)
    assert ev["previous"] == "sleep" and ev["message_id"] == "h-2"
    assert ev["trigger"] in ("human-reentry", "manual")
    validate_outputs(col)
