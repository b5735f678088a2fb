"""The operators' commands of the `vigil` CLI (issue 17) against a real
broker, Redis and dormancy-monitor: `vigil persona status|sleep|wake|level`,
`vigil status`, `vigil errors`. They read topics only (retained states,
events), so every assertion here is about what the services publish and
what the CLI makes of it: output, --json and exit status."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

import harness
import schema_check
from chat_personas import run_vigil, vigil_env, vigil_exe
from conftest import ai, command, human, uid

SUBCOMMANDS = [("persona",), ("persona", "status"), ("persona", "sleep"), ("persona", "wake"),
               ("persona", "level"), ("status",), ("errors",)]


def plain_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env["LSAN_OPTIONS"] = "print_suppressions=0"
    return env


def run_plain(*args):
    return subprocess.run([vigil_exe(), *args], env=plain_env(), capture_output=True, text=True, timeout=20)


def test_help_and_usage_errors():
    if not os.path.exists(vigil_exe()):
        pytest.fail(f"{vigil_exe()} does not exist: build it first")
    top = run_plain("--help").stdout
    for cmd in ("persona", "status", "errors"):
        assert f"\n  {cmd} " in top, cmd
    for args in SUBCOMMANDS:
        r = run_plain(*args, "--help")
        assert r.returncode == 0, args
        assert r.stdout.startswith(f"usage: vigil {' '.join(args)}"), (args, r.stdout[:120])
        assert "Exit status" in r.stdout and "VIGIL_MQTT_URL" in r.stdout, args
        assert "VIGIL_TOPIC_PREFIX" in r.stdout and "VIGIL_MQTT_PASSWORD_FILE" in r.stdout, args
    assert "--json" in run_plain("persona", "status", "--help").stdout
    for sub in ("sleep", "wake", "level"):  # every usage line of the three shows --json
        usage = [ln for ln in run_plain("persona", sub, "--help").stdout.splitlines()
                 if ln.startswith("usage: ") or ln.startswith("       vigil persona ")]
        assert usage and all("[--json]" in ln for ln in usage), (sub, usage)
    persona_usage = run_plain("persona", "--help").stdout.split("\n\n")[0]
    assert persona_usage.count("[--json]") == 4, persona_usage
    assert "--follow" in run_plain("errors", "--help").stdout
    for args, why in [(("persona",), "missing subcommand"), (("persona", "frob"), "unknown persona command"),
                      (("persona", "sleep", "p"), "missing PERSONA or ROOM"),
                      (("persona", "level", "p", "r"), "missing PERSONA, ROOM or LEVEL"),
                      (("persona", "level", "p", "r", "drowsy"), "bad LEVEL"),
                      (("persona", "sleep", "p/x", "r"), "bad PERSONA"),
                      (("persona", "sleep", "p", "r", "--for", "soon"), "bad --for"),
                      (("persona", "sleep", "p", "r", "--until", "25:00"), "bad --until"),
                      (("persona", "sleep", "p", "r", "--for", "1h", "--until", "17:00"), "not both"),
                      (("persona", "wake", "p", "r", "--for", "1h"), "do not go with active"),
                      (("persona", "status", "a", "b"), "too many"), (("persona", "status", "--bogus"), "unknown option"),
                      (("status", "--port", "x"), "bad --port"), (("status", "--port", "a=70000"), "bad --port"),
                      (("errors", "--service", "a/b"), "bad --service"), (("errors", "--service"), "needs a value")]:
        r = run_plain(*args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert why in r.stderr, (args, r.stderr)
        assert "Try 'vigil " in r.stderr, (args, r.stderr)


def test_broker_unreachable_is_a_runtime_error():
    env = plain_env()
    env.update({"VIGIL_MQTT_URL": f"mqtt://127.0.0.1:{harness.free_port()}", "VIGIL_CLI_TIMEOUT_MS": "500"})
    for args in (("persona", "status"), ("status", "--no-http"), ("errors",), ("persona", "wake", "p", "r")):
        r = subprocess.run([vigil_exe(), *args], env=env, capture_output=True, text=True, timeout=20)
        assert r.returncode == 1, (args, r.returncode, r.stderr)
        assert "cannot reach the MQTT broker" in r.stderr, (args, r.stderr)


def test_broker_credentials_come_from_the_common_configuration(tmp_path):
    """The commands take the broker's URL, user and password from libshared's
    common configuration (the services' VIGIL_MQTT_URL, VIGIL_MQTT_USER,
    VIGIL_MQTT_PASSWORD), so what that layer learns applies to them too:
    against a broker that refuses anonymous clients they work with the right
    credentials, fail (exit 1) without them or with a wrong password, and
    never print the password."""
    import shutil
    pw = tmp_path / "passwd"
    subprocess.run(["mosquitto_passwd", "-c", "-b", str(pw), "ops", "s3cret-pass"], check=True,
                   capture_output=True, timeout=20)
    port = harness.free_port()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {pw}\n"
                    "persistence false\nlog_dest stderr\n"
                    + ("user root\n" if os.geteuid() == 0 else ""))
    log = open(tmp_path / "mosquitto.log", "wb")
    broker = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", str(conf)],
                              stdout=log, stderr=log)
    try:
        harness.wait_until(lambda: harness.port_open(port), 15, "the password-protected broker listening")
        env = plain_env()
        env.update({"VIGIL_MQTT_URL": f"mqtt://127.0.0.1:{port}", "VIGIL_CLI_TIMEOUT_MS": "3000"})

        def run(args, **extra):
            e = dict(env, **extra)
            return subprocess.run([vigil_exe(), *args], env=e, capture_output=True, text=True, timeout=30)

        good = {"VIGIL_MQTT_USER": "ops", "VIGIL_MQTT_PASSWORD": "s3cret-pass"}
        r = run(("persona", "status"), **good)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "no persona state published yet", r.stdout
        # connected, but no service reports: no "all ready" (a health check
        # pointed at the wrong broker or prefix must not pass)
        r = run(("status", "--no-http", "--json"), **good)
        assert r.returncode == 6, (r.returncode, r.stdout, r.stderr)
        assert json.loads(r.stdout) == {"instances": [], "http": [], "ready": False}, r.stdout
        r = run(("status", "--no-http"), **good)
        assert r.returncode == 6 and "NOT READY: no service instance has published a status" in r.stdout
        for bad in ({}, {"VIGIL_MQTT_USER": "ops", "VIGIL_MQTT_PASSWORD": "wrong-pass"}):
            r = run(("persona", "status"), **bad)
            assert r.returncode == 1, (bad, r.returncode, r.stdout, r.stderr)
            who = bad.get("VIGIL_MQTT_USER", "(anonymous)")
            assert f"refused user '{who}'" in r.stderr, r.stderr
            assert "wrong-pass" not in r.stderr and "s3cret" not in r.stderr
    finally:
        broker.terminate()
        broker.wait(timeout=10)
        log.close()


# --------------------------------------------------------------------------
# persona


def test_persona_sleep_level_wake_and_status(stack):
    svc = stack.service()
    pub = stack.publisher()
    col = stack.collector(topics=("persona/#", "sys/#"))
    room, p, q = uid("room"), uid("p"), uid("q")
    pub.publish(*human(room, "joel", "hello"))
    pub.publish(*ai(room, p, "hi from p"))
    pub.publish(*ai(room, q, "hi from q"))
    col.wait_event(f"persona/{q}/state", timeout=10)

    r = run_vigil(stack, "persona", "sleep", p, room)
    assert r.returncode == 0, r.stderr
    assert f"{p} in {room}: active -> sleep (manual" in r.stdout, r.stdout
    ev = col.wait_event(f"persona/{p}/dormancy", lambda m: m["level"] == "sleep", timeout=10)
    assert ev["id"].startswith("cli-")

    # status, text and JSON, whole and filtered by room and by persona
    out = run_vigil(stack, "persona", "status").stdout
    assert f"room {room}" in out and "PERSONA" in out
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == [p])
    assert line.split()[1] == "sleep" and line.split()[-1] == "manual", line
    line_q = next(ln for ln in out.splitlines() if ln.split()[:1] == [q])
    assert line_q.split()[1] == "active"
    doc = json.loads(run_vigil(stack, "persona", "status", room, "--json").stdout)
    levels = {(e["persona"], e["room"]): e["level"] for e in doc["personas"]}
    assert levels == {(p, room): "sleep", (q, room): "active"}
    assert [rs["room"] for rs in doc["rooms"]] == [room]
    assert doc["rooms"][0]["personas"][p] == "sleep"
    assert all(isinstance(e["since"], int) and e["trigger"] for e in doc["personas"])
    doc = json.loads(run_vigil(stack, "persona", "status", q, "--json").stdout)
    assert [(e["persona"], e["level"]) for e in doc["personas"]] == [(q, "active")]
    r = run_vigil(stack, "persona", "status", uid("nobody"))
    assert r.returncode == 3 and "no persona or room" in r.stderr

    # a timed level: the until goes out in the command, the event comes back
    before = harness.now_ms()
    r = run_vigil(stack, "persona", "level", q, room, "mention-only", "--for", "1h", "--json")
    assert r.returncode == 0, r.stderr
    ev = json.loads(r.stdout)
    assert ev["persona"] == q and ev["level"] == "mention-only" and ev["previous"] == "active"
    cmd = col.wait_event(f"persona/{q}/command", timeout=5)
    assert cmd["cmd"] == "dormant" and cmd["level"] == "mention-only" and cmd["room"] == room
    assert before + 3600_000 - 5000 <= cmd["until"] <= harness.now_ms() + 3600_000
    assert cmd["by"] == "joel"

    # wake, then wake again: already active, nothing sent
    r = run_vigil(stack, "persona", "wake", p, room)
    assert r.returncode == 0, r.stderr
    assert "sleep -> active" in r.stdout
    n_cmds = len(col.events(f"persona/{p}/command"))
    r = run_vigil(stack, "persona", "wake", p, room)
    assert r.returncode == 0 and "already active" in r.stdout, (r.stdout, r.stderr)
    time.sleep(0.3)
    assert len(col.events(f"persona/{p}/command")) == n_cmds
    assert svc.alive()


def test_persona_status_shows_reason_and_pending_suggestion(stack):
    """The retained persona/{p}/state carries the last change's reason and
    the suggestion waiting for an answer; `vigil persona status` shows both,
    in text and in --json, as dormancy-monitor published them (the same
    reason as the persona/{p}/dormancy and persona/{p}/suggestion events)."""
    stack.service(env={"VIGIL_DORMANCY_NO_HUMAN_MS": 1500, "VIGIL_DORMANCY_AI_ONLY_MS": 600000,
                       "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 600000})
    pub = stack.publisher()
    col = stack.collector(topics=("persona/#",))
    room, p, q = uid("room"), uid("p"), uid("q")
    pub.publish(*ai(room, q, "hi from q"))
    col.wait_event(f"persona/{q}/state", timeout=10)
    # a reason: q is put to sleep and woken by joel (the CLI's VIGIL_USER)
    assert run_vigil(stack, "persona", "sleep", q, room).returncode == 0
    r = run_vigil(stack, "persona", "wake", q, room)
    assert r.returncode == 0, r.stderr
    woke = col.wait_event(f"persona/{q}/dormancy", lambda m: m["level"] == "active", timeout=10)
    assert woke["reason"] == "awake requested by joel"
    # a pending suggestion: p speaks, no human for 1.5 s
    pub.publish(*ai(room, p, "anyone here?"))
    sugg = col.wait_event(f"persona/{p}/suggestion", timeout=15)
    assert sugg["trigger"] == "no-human" and sugg["reason"]
    state = col.wait_event(f"persona/{p}/state", lambda m: "pending" in m["rooms"].get(room, {}), timeout=10)
    schema_check.validate("persona-state", state)

    doc = json.loads(run_vigil(stack, "persona", "status", room, "--json").stdout)
    by = {e["persona"]: e for e in doc["personas"]}
    pending = by[p]["pending"]
    assert pending["level"] == "mention-only" and pending["trigger"] == "no-human"
    assert pending["reason"] == sugg["reason"] and pending["text"] == sugg["text"]
    assert pending["expires"] == sugg["ts"] + sugg["default_after_ms"]
    assert by[p]["level"] == "active" and "reason" not in by[p]  # joined, never changed
    assert by[q]["reason"] == woke["reason"] and by[q]["trigger"] == "manual"
    assert "pending" not in by[q] or by[q]["pending"]["trigger"] == "no-human"

    out = run_vigil(stack, "persona", "status", room).stdout
    lines = out.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [p])
    assert lines[row].split()[1] == "active"
    detail = lines[row + 1].strip()
    assert detail.startswith("pending: mention-only suggested (no-human), default yes at "), out
    assert detail.endswith(": " + sugg["reason"]), out
    row_q = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [q])
    assert lines[row_q + 1].strip() == "reason: awake requested by joel", out

    # answered: the suggestion is no longer pending in the retained state
    pub.publish(*command(p, "answer", room=room, suggestion_id=sugg["id"], answer="no", by=p))
    col.wait_event(f"persona/{p}/state", lambda m: room in m["rooms"] and "pending" not in m["rooms"][room],
                   timeout=10)
    doc = json.loads(run_vigil(stack, "persona", "status", p, "--json").stdout)
    assert [e.get("pending") for e in doc["personas"]] == [None]


def test_persona_command_refused_and_unanswered(stack):
    stack.service()
    room, p = uid("room"), uid("p")
    # --for 1ms ends before dormancy-monitor receives it: refused as "in the past"
    r = run_vigil(stack, "persona", "sleep", p, room, "--for", "1ms")
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "refused the command: bad_value" in r.stderr and "in the past" in r.stderr
    r = run_vigil(stack, "persona", "sleep", p, room, "--for", "1ms", "--json")
    assert r.returncode == 5
    err = json.loads(r.stdout)
    assert err["service"] == "dormancy-monitor" and err["topic"] == f"persona/{p}/command"


def test_persona_command_without_dormancy_monitor_times_out(stack):
    r = run_vigil(stack, "persona", "sleep", uid("p"), uid("room"), env={"VIGIL_CLI_TIMEOUT_MS": "800"})
    assert r.returncode == 1
    assert "dormancy-monitor did not answer the command" in r.stderr


def test_persona_timed_end_at_the_same_level(stack):
    """A new end for the level the persona already has (or none instead of
    one) is a change: it is sent, and the answer is dormancy-monitor's new
    state (or its dormancy event), shown as soon as it comes. Only the same
    level with the same end is "already": nothing sent. Without an answer,
    as when dormancy-monitor is down, the command failed (exit 1), even
    though the retained state shows the level asked for."""
    svc = stack.service()
    pub = stack.publisher()
    col = stack.collector(topics=("persona/#",))
    room, p = uid("room"), uid("p")
    pub.publish(*ai(room, p, "hi"))
    col.wait_event(f"persona/{p}/state", timeout=10)
    assert run_vigil(stack, "persona", "sleep", p, room).returncode == 0

    def entry():
        return json.loads(run_vigil(stack, "persona", "status", p, "--json").stdout)["personas"][0]

    # a timed end added to the sleep: answered by the new state, well before the timeout
    t0 = time.monotonic()
    r = run_vigil(stack, "persona", "sleep", p, room, "--for", "1h", env={"VIGIL_CLI_TIMEOUT_MS": "20000"})
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert time.monotonic() - t0 < 12, "waited for the timeout instead of the answer"
    until = entry()["until"]
    assert abs(until - (harness.now_ms() + 3600_000)) < 30_000
    assert r.stdout.startswith(f"{p} is now sleep in {room} until ") or "sleep -> sleep" in r.stdout, r.stdout

    # the same sleep without an end: sent (not "already"), the end is gone
    n_cmds = len(col.events(f"persona/{p}/command"))
    r = run_vigil(stack, "persona", "sleep", p, room, "--json")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert len(col.events(f"persona/{p}/command")) == n_cmds + 1
    assert "until" not in col.events(f"persona/{p}/command")[-1]
    e = entry()
    assert e["level"] == "sleep" and "until" not in e, e
    # now it is the same: nothing sent
    r = run_vigil(stack, "persona", "sleep", p, room, "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == {
        "persona": p, "room": room, "level": "sleep", "unchanged": True, "sent": False}, r.stdout
    time.sleep(0.3)
    assert len(col.events(f"persona/{p}/command")) == n_cmds + 1

    # dormancy-monitor stopped: the retained state still says sleep, but
    # nobody applies the new end, so the command did not succeed
    svc.terminate()
    r = run_vigil(stack, "persona", "sleep", p, room, "--for", "2h", env={"VIGIL_CLI_TIMEOUT_MS": "1500"})
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and "did not answer the command" in r.stderr, r.stderr


def test_persona_command_for_a_persona_new_in_the_room(stack):
    """A command naming a persona that has no entry in the room makes
    dormancy-monitor add it there. A wake (or `level ... active`) then
    changes no level, so no dormancy event comes, only the new retained
    persona/{p}/state and room/{r}/state: showing the persona at the level
    asked for, they are the answer (not the timeout). A persona without any
    state before (a typo?) gets a warning on stderr that it has been added."""
    stack.service()
    pub = stack.publisher()
    col = stack.collector(topics=("persona/#",))
    room, other, p, ghost = uid("room"), uid("room"), uid("p"), uid("ghost")
    pub.publish(*ai(room, p, "hi"))
    col.wait_event(f"persona/{p}/state", timeout=10)
    slow = {"VIGIL_CLI_TIMEOUT_MS": "20000"}

    t0 = time.monotonic()
    r = run_vigil(stack, "persona", "wake", ghost, room, env=slow)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert time.monotonic() - t0 < 12, "waited for the timeout instead of the answer"
    assert r.stdout == f"{ghost} is now active in {room} (added to the room)\n", r.stdout
    assert f"warning: persona '{ghost}' was not known in room '{room}'" in r.stderr, r.stderr
    assert "has now been added" in r.stderr, r.stderr

    # known in another room: added without a warning; --json
    r = run_vigil(stack, "persona", "level", p, other, "active", "--json", env=slow)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert json.loads(r.stdout) == {"persona": p, "room": other, "level": "active", "added": True,
                                    "sent": True}, r.stdout
    assert "warning" not in r.stderr, r.stderr
    doc = json.loads(run_vigil(stack, "persona", "status", p, "--json").stdout)
    assert sorted((e["room"], e["level"]) for e in doc["personas"]) == sorted([(room, "active"),
                                                                             (other, "active")])
    # now it is there: nothing sent, no warning
    r = run_vigil(stack, "persona", "wake", ghost, room)
    assert r.returncode == 0 and "already active" in r.stdout and "warning" not in r.stderr

    # a new persona put to sleep: a level change (answered by its event or
    # its state, whichever comes first), with the warning too
    ghost2 = uid("ghost")
    r = run_vigil(stack, "persona", "sleep", ghost2, room, env=slow)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "sleep" in r.stdout and f"persona '{ghost2}' was not known" in r.stderr, (r.stdout, r.stderr)


# --------------------------------------------------------------------------
# status


def test_status_instances_and_ports(stack):
    svc = stack.service(instance=uid("dm-"))
    port_arg = f"dormancy-monitor={svc.http_port}"
    r = run_vigil(stack, "status", "--no-default-ports", "--port", port_arg)
    assert r.returncode == 0, (r.stdout, r.stderr)
    row = next(ln for ln in r.stdout.splitlines() if svc.instance in ln).split()
    assert row[:3] == ["dormancy-monitor", svc.instance, "ready"]
    assert f"127.0.0.1:{svc.http_port}" in r.stdout and "all ready" in r.stdout
    doc = json.loads(run_vigil(stack, "status", "--no-default-ports", "--port", port_arg, "--json").stdout)
    assert doc["ready"] is True
    inst = [i for i in doc["instances"] if i["instance"] == svc.instance]
    assert inst and inst[0]["state"] == "ready" and inst[0]["shard"] and inst[0]["version"]
    assert doc["http"] == [{"service": "dormancy-monitor", "host": "127.0.0.1", "port": svc.http_port,
                            "reachable": True, "status": 200, "ready": True}]

    # a port given explicitly that nothing answers: not ready
    dead = harness.free_port()
    r = run_vigil(stack, "status", "--no-default-ports", "--port", port_arg, "--port", f"ghost={dead}")
    assert r.returncode == 6 and "unreachable (NOT READY)" in r.stdout

    # a port that answers /readyz with 503 (Redis gone): not ready, exit 6
    stack.redis.kill9()
    try:
        harness.wait_until(lambda: harness.http_get(svc.http_port, "/readyz", timeout=2)[0] == 503, 20,
                           "dormancy-monitor not ready without Redis")
        r = run_vigil(stack, "status", "--no-default-ports", "--port", port_arg)
        assert r.returncode == 6, (r.returncode, r.stdout, r.stderr)
        assert "NOT READY" in r.stdout and "503" in r.stdout, r.stdout
        doc = json.loads(run_vigil(stack, "status", "--no-default-ports", "--port", port_arg, "--json").stdout)
        assert doc["ready"] is False
        assert doc["http"] == [{"service": "dormancy-monitor", "host": "127.0.0.1", "port": svc.http_port,
                                "reachable": True, "status": 503, "ready": False}]
    finally:
        stack.redis.restart()
    harness.wait_until(lambda: run_vigil(stack, "status", "--no-default-ports", "--port", port_arg).returncode == 0,
                       30, "ready again once Redis is back")

    # kill -9: the broker publishes the last will, the port is gone
    svc.kill9()
    harness.wait_until(lambda: "lost" in run_vigil(stack, "status", "--no-http").stdout, 15,
                       "the lost status of the killed instance")
    r = run_vigil(stack, "status", "--no-http", "--json")
    assert r.returncode == 6
    doc = json.loads(r.stdout)
    assert doc["ready"] is False
    assert [i["state"] for i in doc["instances"] if i["instance"] == svc.instance] == ["lost"]

    # a new instance of the same shard (a new container): the old instance's
    # retained `lost` stays, shown as replaced, and is no failure
    other = stack.service()
    r = run_vigil(stack, "status", "--no-http", "--json")
    assert r.returncode == 0, r.stdout
    old = [i for i in json.loads(r.stdout)["instances"] if i["instance"] == svc.instance]
    assert old[0]["state"] == "lost" and old[0]["replaced"] is True, old
    out = run_vigil(stack, "status", "--no-http").stdout
    assert "lost (replaced)" in out
    # the columns stay aligned after the widest state
    lines = out.splitlines()
    col = lines[0].index("VERSION")
    rows = lines[1:lines.index("")]
    assert len(rows) == 2 and all(ln[col - 1] == " " and ln[col] != " " for ln in rows), out

    other.terminate()

    # restarted and then stopped cleanly: with every instance stopped (the
    # deployment is down) that is no "all ready", however clean the stops
    svc.start()
    svc.terminate()

    def all_stopped():
        doc = json.loads(run_vigil(stack, "status", "--no-http", "--json").stdout)
        states = {i["instance"]: i["state"] for i in doc["instances"]}
        return states.get(svc.instance) == "disconnected" and set(states.values()) <= {"disconnected", "lost"}
    harness.wait_until(all_stopped, 15, "every instance stopped")
    r = run_vigil(stack, "status", "--no-http")
    assert r.returncode == 6, (r.returncode, r.stdout)
    assert "NOT READY: no service instance is running" in r.stdout, r.stdout
    r = run_vigil(stack, "status", "--no-http", "--json")
    assert r.returncode == 6 and json.loads(r.stdout)["ready"] is False
    # only a port answering /readyz with 200 would say something runs
    dead = harness.free_port()
    r = run_vigil(stack, "status", "--no-default-ports", "--port", f"ghost={dead}")
    assert r.returncode == 6 and "no service instance is running" in r.stdout, r.stdout

    # one replica running again: the other's "disconnected" (a clean stop) is no failure
    other.start()
    harness.wait_until(lambda: run_vigil(stack, "status", "--no-http").returncode == 0, 15,
                       "ready with one instance running")
    r = run_vigil(stack, "status", "--no-http", "--json")
    states = {i["instance"]: i["state"] for i in json.loads(r.stdout)["instances"]}
    assert r.returncode == 0 and states[svc.instance] == "disconnected" and states[other.instance] == "ready"


# --------------------------------------------------------------------------
# errors


def test_errors_listen_filter_and_follow(stack):
    stack.service()
    pub = stack.publisher()
    env = vigil_env(stack, VIGIL_CLI_TIMEOUT_MS="4000")
    proc = subprocess.Popen([vigil_exe(), "errors", "--service", "dormancy-monitor", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    follow = subprocess.Popen([vigil_exe(), "errors", "--follow"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    other = subprocess.Popen([vigil_exe(), "errors", "--service", "wake-evaluator", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    room = uid("room")
    stop = threading.Event()

    def keep_refusing():
        # error events are not retained: publish until the listeners (which
        # may take a while to subscribe on a loaded machine) have heard one
        while not stop.is_set():
            pub.publish(f"room/{room}/message", b"not json at all")
            stop.wait(0.25)

    sender = threading.Thread(target=keep_refusing, daemon=True)
    sender.start()
    try:
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        events = [json.loads(ln) for ln in out.splitlines()]
        assert f'"topic":"room/{room}/message"' in out, out  # as published, no "\\/" escapes
        assert any(e["topic"] == f"room/{room}/message" and e["service"] == "dormancy-monitor"
                   and e["reason"] for e in events), out
        out_other, _ = other.communicate(timeout=30)
        assert other.returncode == 0 and out_other == ""
        line = follow.stdout.readline()
        assert " dormancy-monitor " in line and f"room/{room}/message" in line, line
        assert follow.stdout.readline().startswith("  sample: not json at all")
        assert follow.poll() is None  # --follow keeps listening
        follow.send_signal(signal.SIGINT)
        assert follow.wait(timeout=15) == 0
    finally:
        stop.set()
        sender.join(timeout=10)
        for p in (proc, follow, other):
            if p.poll() is None:
                p.kill()
                p.wait()


def publish_until_exit(pub, proc, topic, payload, timeout=30):
    """Publishes payload every 0.25 s until proc exits (error events are not
    retained: the listener hears only what comes after it subscribed);
    returns its (stdout, stderr)."""
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            pub.publish(topic, payload)
            time.sleep(0.25)
        return proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_errors_prints_the_sample_escaped_once(stack):
    r"""A sample comes escaped already (libshared's vigil_json_sample:
    backslash doubled, control characters and bytes that are not UTF-8 as
    \xNN): `vigil errors` prints it as published, \xff as `vigil deadletter
    list` shows the byte, not \\xff; a raw control character a publisher
    put there is still escaped, so none reaches the terminal."""
    pub = stack.publisher()
    svc = uid("svc")
    sample = "\\xffnot an outbox entry \\\\ end\x1b[31m"
    event = {"id": uid("err"), "service": svc, "topic": "dl/x", "reason": "dead_letter", "detail": "d",
             "sample": sample, "ts": harness.now_ms()}
    proc = subprocess.Popen([vigil_exe(), "errors", "--service", svc], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=vigil_env(stack, VIGIL_CLI_TIMEOUT_MS="3000"))
    out, err = publish_until_exit(pub, proc, f"sys/{svc}/error", event)
    assert proc.returncode == 0, err
    samples = {ln for ln in out.splitlines() if ln.startswith("  sample: ")}
    assert samples == {"  sample: \\xffnot an outbox entry \\\\ end\\x1b[31m"}, out


def test_errors_follow_says_when_the_broker_is_lost_and_back(stack):
    """--follow reconnects by itself; it says so on stderr, once when the
    connection is lost and once when it is back, so an operator can tell
    "no errors" from "disconnected". It goes on printing afterwards."""
    env = vigil_env(stack, VIGIL_CLI_TIMEOUT_MS="4000")
    follow = subprocess.Popen([vigil_exe(), "errors", "--follow"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    out, err = [], []
    readers = [threading.Thread(target=lambda f=f, acc=acc: acc.extend(iter(f.readline, "")), daemon=True)
               for f, acc in ((follow.stdout, out), (follow.stderr, err))]
    for t in readers:
        t.start()
    svc = uid("svc")

    def heard(pub, tag):
        pub.publish(f"sys/{svc}/error", {"service": svc, "reason": tag, "topic": "t", "detail": "",
                                         "ts": harness.now_ms()})
        return any(f" {svc} {tag} " in ln for ln in out)
    try:
        pub = stack.publisher()
        harness.wait_until(lambda: heard(pub, "before"), 20, "the follower subscribed", interval=0.25)
        assert err == [], err
        stack.broker.kill9()
        harness.wait_until(lambda: err, 15, "the line saying the connection is lost")
        assert err == ["vigil: connection to the broker lost; reconnecting\n"], err
        stack.broker.restart()
        harness.wait_until(lambda: len(err) == 2, 40, "the line saying the connection is back")
        assert err[1] == "vigil: connection to the broker is back\n", err
        pub2 = stack.publisher()
        harness.wait_until(lambda: heard(pub2, "after"), 20, "an error event after the reconnect",
                           interval=0.25)
        assert follow.poll() is None
        follow.send_signal(signal.SIGINT)
        assert follow.wait(timeout=15) == 0
        for t in readers:
            t.join(timeout=10)
        assert len(err) == 2, err
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()


# --------------------------------------------------------------------------
# topic prefix


def test_operators_commands_under_a_topic_prefix(stack):
    """With VIGIL_TOPIC_PREFIX (several deployments on one broker) every
    operators' command works under the services' prefix: the states,
    commands, answers, refusals, statuses and error events are all found
    there, and nothing of that deployment is seen without the prefix."""
    prefix = uid("tenant-")
    svc = stack.service(instance=uid("dm-"), env={"VIGIL_TOPIC_PREFIX": prefix})
    pub = stack.publisher()
    col = stack.collector(topics=(f"{prefix}/#",))
    room, p = uid("room"), uid("p")
    topic, body = ai(room, p, "hi")
    pub.publish(f"{prefix}/{topic}", body)
    col.wait_event(f"{prefix}/persona/{p}/state", timeout=10)
    env = {"VIGIL_TOPIC_PREFIX": prefix}

    r = run_vigil(stack, "persona", "sleep", p, room, env=env)
    assert r.returncode == 0 and "active -> sleep" in r.stdout, (r.stdout, r.stderr)
    doc = json.loads(run_vigil(stack, "persona", "status", p, "--json", env=env).stdout)
    assert [(e["persona"], e["level"]) for e in doc["personas"]] == [(p, "sleep")]
    r = run_vigil(stack, "persona", "sleep", p, room, "--for", "1ms", env=env)
    assert r.returncode == 5 and "refused the command" in r.stderr, (r.returncode, r.stderr)

    r = run_vigil(stack, "status", "--no-default-ports", "--port", f"dormancy-monitor={svc.http_port}",
                  "--json", env=env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert [i["instance"] for i in json.loads(r.stdout)["instances"]] == [svc.instance]

    proc = subprocess.Popen([vigil_exe(), "errors", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=vigil_env(stack, VIGIL_CLI_TIMEOUT_MS="4000", **env))
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            pub.publish(f"{prefix}/room/{room}/message", b"not json")
            time.sleep(0.25)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert any(json.loads(ln)["topic"] == f"room/{room}/message" for ln in out.splitlines()), out

    # a room known only by its room state (every persona left): shown, not "nothing published"
    lonely = uid("room")
    pub.publish(f"{prefix}/room/{lonely}/state", {"room": lonely, "paused": False, "humans_present": ["joel"],
                                                   "personas": {}, "ts": harness.now_ms()}, retain=True)
    try:
        r = run_vigil(stack, "persona", "status", lonely, env=env)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert r.stdout.startswith(f"room {lonely}  paused=no") and "humans present: joel" in r.stdout, r.stdout
        assert "no persona has a state in this room" in r.stdout, r.stdout
    finally:
        pub.publish(f"{prefix}/room/{lonely}/state", b"", retain=True)

    # without the prefix: none of it
    r = run_vigil(stack, "persona", "status", p)
    assert r.returncode == 3, (r.returncode, r.stdout)
    r = run_vigil(stack, "status", "--no-http", "--json")
    assert svc.instance not in r.stdout
