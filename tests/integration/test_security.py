"""The stack with authentication on, as compose and Kubernetes
run it: scripts/secrets writes the passwords, mosquitto's password file and
ACL (from topics/asyncapi.yaml) and Redis' users.acl; the broker refuses
anonymous clients; every service logs in as its own MQTT and Redis user
(VIGIL_MQTT_USER, VIGIL_MQTT_PASSWORD_FILE, VIGIL_REDIS_URL_FILE).

- every service goes ready under its own user and the main flows work: a
  sleep command through the `vigil` CLI, a chat message logged and
  forwarded, a wake decision, the gateway reading chat-router's room log;
- an anonymous client, a wrong password and the default Redis user are
  refused;
- a service publishing outside its ACL is refused by the broker and the
  outbox keeps the output in its dead-letter list, replayed once the ACL
  allows it;
- one service's Redis user cannot read or write another's keys (NOPERM);
- no service can publish error events or status as another service;
- a VIGIL_REDIS_PREFIX outside the Redis user's ACL is a startup error;
- the CLI's Redis user reads every key but writes only room logs, dead
  letters and outboxes.
"""
import json
import os
import signal
import subprocess
import urllib.request
import uuid

import pytest

import harness
from chat_personas import vigil_exe
from conftest import DEFAULT_SERVICE_ENV, Stack, human, uid
from harness import SANITIZER_MARKERS, Collector, Mosquitto, Publisher, RedisServer, Service
from security_support import expect_config_exit, procs  # noqa: F401

SERVICES = ["dormancy-monitor", "wake-evaluator", "chat-router", "council", "stall-resumer",
            "floor-control", "presence-gateway", "heartbeat"]
SECRETS = os.path.join(harness.SOURCE_DIR, "scripts", "secrets")


def make_secrets(d, redis_port, topic_prefix=""):
    host = f"127.0.0.1:{redis_port}"
    subprocess.run([SECRETS, "--dir", d, "--redis-host", host, "--cli-redis-host", host,
                    "--prefix", topic_prefix], check=True, capture_output=True, timeout=60)


def password(d, user):
    with open(os.path.join(d, "passwords", user)) as f:
        return f.read().strip()


class SecureStack(Stack):
    """mosquitto with password_file + acl_file and allow_anonymous false,
    Redis with users.acl (default user off), secrets from scripts/secrets.
    Teardown (close) is conftest's Stack's."""

    def __init__(self, tmp_path, request, acl_edit=None, topic_prefix=""):
        self.dir = str(tmp_path)
        self.request = request
        self.topic_prefix = topic_prefix  # VIGIL_TOPIC_PREFIX of every service and the CLI
        self.secrets = os.path.join(self.dir, "secrets")
        self.prefix = "vigil:"  # the key prefix users.acl grants
        self.services, self.clients = [], []
        self.redis = RedisServer(self.dir, aclfile=os.path.join(self.secrets, "redis", "users.acl"))
        make_secrets(self.secrets, self.redis.port, topic_prefix)
        self.redis.auth = ("admin", password(self.secrets, "admin"))
        self.acl = os.path.join(self.secrets, "mosquitto", "acl")
        if acl_edit:
            with open(self.acl) as f:
                text = f.read()
            with open(self.acl, "w") as f:
                f.write(acl_edit(text))
        self.redis.start()
        try:
            self.broker = Mosquitto(self.dir, auth=(os.path.join(self.secrets, "mosquitto", "passwd"),
                                                    self.acl)).start()
        except BaseException:
            self.redis.stop()
            raise

    def creds(self, user):
        return user, password(self.secrets, user)

    def service_env(self, name, **extra):
        env = dict(DEFAULT_SERVICE_ENV)
        sd = os.path.join(self.secrets, "services", name)
        env.update({"VIGIL_MQTT_URL": self.broker.url, "VIGIL_REDIS_PREFIX": self.prefix,
                    "VIGIL_MQTT_USER": name,
                    "VIGIL_MQTT_PASSWORD_FILE": os.path.join(sd, "mqtt-password"),
                    "VIGIL_REDIS_URL_FILE": os.path.join(sd, "redis-url"),
                    "VIGIL_TOPIC_PREFIX": self.topic_prefix})
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def service(self, name, env=None, start=True):
        svc = Service(name, self.dir, self.service_env(name, **(env or {})))
        self.services.append(svc)
        if start:
            svc.start(timeout=30)
        return svc

    def collector(self, topics=("#",), user="admin"):
        c = Collector(self.broker.port, topics=topics)
        c.c.username_pw_set(*self.creds(user))
        self.clients.append(c)
        return c.start()

    def publisher(self, user="admin"):
        p = Publisher(self.broker.port)
        p.c.username_pw_set(*self.creds(user))
        self.clients.append(p)
        return p.start()

    def vigil(self, *args, timeout=30):
        """`vigil args...` as the CLI's user, with its secret files."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
        cd = os.path.join(self.secrets, "vigil-cli")
        env.update({"VIGIL_MQTT_URL": self.broker.url, "VIGIL_REDIS_PREFIX": self.prefix,
                    "VIGIL_MQTT_USER": "vigil-cli",
                    "VIGIL_MQTT_PASSWORD_FILE": os.path.join(cd, "mqtt-password"),
                    "VIGIL_REDIS_URL_FILE": os.path.join(cd, "redis-url"),
                    "VIGIL_USER": "joel", "VIGIL_CLI_TIMEOUT_MS": "15000",
                    "VIGIL_TOPIC_PREFIX": self.topic_prefix})
        r = subprocess.run([vigil_exe(), *args], env=env, capture_output=True, text=True, timeout=timeout)
        for m in SANITIZER_MARKERS:
            assert m not in r.stderr, f"vigil {' '.join(args)}: sanitizer report:\n{r.stderr[:4000]}"
        return r

    def vigil_ok(self, *args):
        r = self.vigil(*args)
        assert r.returncode == 0, f"vigil {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
        return r.stdout

    def redis_as(self, user):
        u, pw = self.creds(user)
        return self.redis.client(username=u, password=pw)


@pytest.fixture
def secure(tmp_path, request):
    s = SecureStack(tmp_path, request)
    request.addfinalizer(s.close)
    return s


def connack(port, user=None, pw=None):
    """The CONNACK reason code of one MQTT 5 connect (0 = accepted)."""
    c = harness.new_client(f"probe-{uuid.uuid4().hex[:8]}", v5=True)
    if user is not None:
        c.username_pw_set(user, pw)
    got = []
    c.on_connect = lambda cl, u, f, rc, p=None: got.append(int(getattr(rc, "value", rc)))
    c.connect("127.0.0.1", port, keepalive=5)
    c.loop_start()
    try:
        harness.wait_until(lambda: got, 10, "a CONNACK")
    finally:
        c.disconnect()
        c.loop_stop()
    return got[0]


# --------------------------------------------------------------------------


def test_anonymous_and_wrong_credentials_are_refused(secure):
    port = secure.broker.port
    assert connack(port) == 135, "anonymous client: not authorized"
    assert connack(port, "chat-router", "wrong") in (134, 135), "wrong password: refused"
    assert connack(port, *secure.creds("chat-router")) == 0
    import redis as pyredis
    anon = pyredis.Redis(host="127.0.0.1", port=secure.redis.port, socket_timeout=5)
    refused = (pyredis.exceptions.AuthenticationError, pyredis.exceptions.ResponseError)
    with pytest.raises(refused, match="NOAUTH|Authentication required"):
        anon.get("vigil:chat-router:x")  # the default user is off
    with pytest.raises(refused, match="WRONGPASS"):
        secure.redis.client(username="council", password="wrong").ping()


def test_redis_users_cannot_touch_other_services_keys(secure):
    import redis as pyredis
    admin = secure.redis.client()
    admin.set("vigil:dormancy-monitor:probe", "x")
    admin.xadd("vigil:chat-router:log:r1", {"m": "1"})
    council = secure.redis_as("council")
    council.set("vigil:council:probe", "mine")
    assert council.get("vigil:council:probe") == b"mine"
    with pytest.raises(pyredis.exceptions.NoPermissionError):
        council.get("vigil:dormancy-monitor:probe")
    with pytest.raises(pyredis.exceptions.NoPermissionError):
        council.set("vigil:dormancy-monitor:probe", "theirs")
    # keys touched inside a script are checked too
    with pytest.raises(pyredis.exceptions.ResponseError, match="(?i)noperm|no permissions"):
        council.evalsha(council.script_load("return redis.call('GET', KEYS[1])"), 1,
                        "vigil:dormancy-monitor:probe")
    with pytest.raises(pyredis.exceptions.NoPermissionError):
        council.flushall()  # a command it does not use
    gw = secure.redis_as("presence-gateway")
    assert len(gw.xrange("vigil:chat-router:log:r1")) == 1  # read-only access to the room log
    with pytest.raises(pyredis.exceptions.NoPermissionError):
        gw.xadd("vigil:chat-router:log:r1", {"m": "2"})
    with pytest.raises(pyredis.exceptions.NoPermissionError):
        gw.get("vigil:chat-router:state:r1")  # nothing else of chat-router's
    assert admin.get("vigil:dormancy-monitor:probe") == b"x"


def test_cli_redis_user_reads_everything_but_writes_only_logs_and_dead_letters(secure):
    """The vigil CLI's Redis user reads every service's keys, and writes
    only what its commands write (chat cleanup trims chat-router's room
    logs; dead-letter replay moves a service's dead letters into its
    outbox): its password cannot rewrite or delete a service's state."""
    import redis as pyredis
    admin = secure.redis.client()
    admin.hset("vigil:dormancy-monitor:persona:p1", "s", "awake")
    admin.set("vigil:council:seen:m1", "1")
    admin.sadd("vigil:chat-router:rooms", "r1")
    admin.xadd("vigil:chat-router:log:r1", {"m": "old"}, id="1-0")  # long expired
    admin.xadd("vigil:chat-router:log:r1", {"m": "new"})
    admin.rpush("vigil:council:deadletter", "dl-1")
    cli = secure.redis_as("vigil-cli")
    assert cli.hget("vigil:dormancy-monitor:persona:p1", "s") == b"awake"
    assert cli.get("vigil:council:seen:m1") == b"1"
    for write in (lambda: cli.hset("vigil:dormancy-monitor:persona:p1", "s", "asleep"),
                  lambda: cli.delete("vigil:council:seen:m1"),
                  lambda: cli.set("vigil:wake-evaluator:x", "1")):
        with pytest.raises(pyredis.exceptions.NoPermissionError):
            write()
    refused = "(?i)noperm|no permissions|can't access"
    with pytest.raises(pyredis.exceptions.ResponseError, match=refused):
        sha = cli.script_load("return redis.call('DEL', KEYS[1])")
        cli.evalsha(sha, 1, "vigil:council:seen:m1")
    assert admin.hget("vigil:dormancy-monitor:persona:p1", "s") == b"awake"
    assert admin.get("vigil:council:seen:m1") == b"1"
    # what the CLI's commands do, through the CLI
    assert "removed 1 expired message;" in secure.vigil_ok("chat", "cleanup")
    assert [f[b"m"] for _, f in admin.xrange("vigil:chat-router:log:r1")] == [b"new"]
    out = secure.vigil_ok("deadletter", "replay", "council")
    assert admin.llen("vigil:council:deadletter") == 0, out
    assert admin.lrange("vigil:council:outbox:0", 0, -1) == [b"dl-1"]


def test_redis_prefix_outside_the_users_acl_is_a_startup_error(secure, procs):
    """A service whose VIGIL_REDIS_PREFIX is not the one its Redis user's
    ACL grants (users.acl made with another --redis-prefix) would have every
    commit refused (NOPERM) and retry for ever, never ready: it stops at
    start instead, with one error line naming Redis, the user, the key and
    the variable to fix (exit status 78), and no secret."""
    svc = Service("chat-router", secure.dir, secure.service_env("chat-router", VIGIL_REDIS_PREFIX="other:"))
    msg = expect_config_exit(svc, procs)
    assert "refused user 'chat-router' the key other:chat-router:" in msg, msg
    assert "NOPERM" in msg and "VIGIL_REDIS_PREFIX" in msg, msg
    pw = password(secure.secrets, "chat-router")
    assert pw not in svc.stderr_text()


def test_whole_stack_each_service_its_own_user(secure, tmp_path):
    tokens = tmp_path / "gateway-tokens"
    tokens.write_text("t0ken-secure joel\n")
    col = secure.collector()
    for name in SERVICES:
        env = {"VIGIL_LLM_URL": "", "VIGIL_AUTOPILOT": 0} if name == "wake-evaluator" else {}
        if name == "presence-gateway":
            env["VIGIL_GATEWAY_TOKENS_FILE"] = str(tokens)
        secure.service(name, env=env)
    for svc in secure.services:  # each announced itself under its own user
        col.wait_event(f"sys/{svc.name}/{svc.instance}/status", lambda e: e.get("state") == "ready",
                       timeout=15, what=f"{svc.name} ready")
    room, persona = uid("ops"), "sre"
    pub = secure.publisher()
    meta = {"persona": persona, "name": persona, "rooms": [room], "role": "operations",
            "expertise_domains": ["servers"], "confidence_levels": {"servers": 0.9},
            "availability": 0.8, "tier": "smart", "ts": harness.now_ms()}
    pub.publish(f"persona/{persona}/meta", meta, retain=True)

    # dormancy: the CLI puts the persona to sleep (waits for dormancy-monitor's event)
    secure.vigil_ok("persona", "sleep", persona, room)
    col.wait_event(f"persona/{persona}/state",
                   lambda e: e.get("rooms", {}).get(room, {}).get("level") == "sleep", timeout=15,
                   what="the persona asleep (retained state)")
    admin = secure.redis.client()

    def wake_knows():
        h = admin.hgetall(f"vigil:wake-evaluator:state:{room}")
        st = json.loads(h[b"s"]) if h.get(b"s") else {}
        return any(p.get("id") == persona and p.get("l") == "sleep" for p in st.get("p", []))

    harness.wait_until(wake_knows, 30, "wake-evaluator holds the sleeper")

    # a chat message through the CLI: chat-router logs it (the CLI waits for
    # that) and forwards it to the mentioned persona
    secure.vigil_ok("chat", "new", room)
    mid = secure.vigil_ok("chat", "send", room, "@arya Server is down, need help ASAP!").strip()
    col.wait_event("persona/arya/notify", lambda e: e.get("message_id") == mid, timeout=15,
                   what="chat-router's notification to arya")
    # a wake decision (the rules: no LLM) and dormancy-monitor applying it
    ev = col.wait_event(f"persona/{persona}/wake", timeout=20, what="the wake decision")
    assert ev["should_wake"] is True
    col.wait_event(f"persona/{persona}/state",
                   lambda e: e.get("rooms", {}).get(room, {}).get("level") == "active", timeout=20,
                   what="the persona awake again")
    # the gateway reads chat-router's room log with its read-only grant
    gw = [s for s in secure.services if s.name == "presence-gateway"][0]
    req = urllib.request.Request(f"http://127.0.0.1:{gw.http_port}/api/rooms/{room}/messages",
                                 headers={"Authorization": "Bearer t0ken-secure"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = json.loads(r.read())
    assert mid in [m["id"] for m in body["messages"]]
    # the CLI reads the records with its own Redis user
    assert room in secure.vigil_ok("chat")
    assert "Server is down" in secure.vigil_ok("chat", "view", room)
    # kill -9 of Redis: what the services' Lua scripts wrote is replayed from
    # the AOF with the ACL on (a default user without permissions would drop
    # every scripted write at this point: see scripts/vigil_acl.py)
    before = admin.hgetall(f"vigil:wake-evaluator:state:{room}")
    log_len = admin.xlen(f"vigil:chat-router:log:{room}")
    assert before and log_len >= 1
    secure.redis.restart()
    admin = secure.redis.client()
    assert admin.hgetall(f"vigil:wake-evaluator:state:{room}") == before
    assert admin.xlen(f"vigil:chat-router:log:{room}") == log_len
    assert "CRITICAL" not in harness.tail(secure.redis.log, 200)
    for svc in secure.services:
        svc.wait_ready(timeout=30)
    for svc in secure.services:
        assert svc.is_ready(), f"{svc.name} not ready at the end"
        assert svc.metric("vigil_outbox_dead_letters_total") in (None, 0), f"{svc.name} dead letters"


def _drop_dormancy_write(text):
    """dormancy-monitor's ACL without its write of persona/+/dormancy."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("user "):
            inside = line == "user dormancy-monitor"
        if inside and line == "topic write persona/+/dormancy":
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def test_publish_outside_acl_is_dead_lettered_not_lost(tmp_path, request):
    s = SecureStack(tmp_path, request, acl_edit=_drop_dormancy_write)
    try:
        s.service("dormancy-monitor", env={"VIGIL_OUTBOX_DEAD_LETTER_AFTER": 2})
        col = s.collector()
        pub = s.publisher()
        room, persona = uid("r"), "sleepy"
        topic, body = f"persona/{persona}/command", {"id": uid("c"), "cmd": "dormant", "level": "sleep",
                                                      "room": room, "ts": harness.now_ms()}
        pub.publish(topic, body)
        admin = s.redis.client()
        dl = "vigil:dormancy-monitor:deadletter"
        harness.wait_until(lambda: any(b"persona/sleepy/dormancy" in e for e in admin.lrange(dl, 0, -1)),
                           60, "the refused dormancy event in the dead-letter list")
        # the allowed outputs of the same input went out
        col.wait_event(f"persona/{persona}/state", timeout=15, what="the allowed state update")
        assert not col.events(f"persona/{persona}/dormancy")
        out = s.vigil_ok("deadletter", "list", "dormancy-monitor")
        assert f"persona/{persona}/dormancy" in out
        # fix the ACL, reload the broker, replay: published exactly then
        with open(s.acl) as f:
            text = f.read()
        with open(s.acl, "w") as f:
            f.write(text.replace("user dormancy-monitor\n", "user dormancy-monitor\ntopic write persona/+/dormancy\n"))
        s.broker.proc.send_signal(signal.SIGHUP)
        assert s.vigil_ok("deadletter", "replay", "dormancy-monitor").startswith("replayed")
        ev = col.wait_event(f"persona/{persona}/dormancy", timeout=30, what="the replayed dormancy event")
        assert ev["persona"] == persona
    finally:
        s.close()


def test_generated_acl_is_what_the_broker_loads(secure):
    """The broker runs with the generated files (no parse error): every
    service user may connect; admin reads everything; the health user
    only the broker version."""
    for name in SERVICES + ["vigil-cli", "admin", "health"]:
        assert connack(secure.broker.port, *secure.creds(name)) == 0, name
    col = secure.collector(topics=("room/+/message",), user="vigil-cli")
    pub = secure.publisher(user="health")
    pub.publish("room/x/message", human("x", "joel", "hi")[1])  # accepted at QoS 1, dropped by the ACL
    secure.publisher(user="vigil-cli").publish(*human("x", "joel", "allowed"))
    col.wait_event("room/x/message", lambda e: e.get("text") == "allowed", timeout=10)
    assert [e["text"] for e in col.events("room/x/message")] == ["allowed"]


def test_a_service_cannot_publish_as_another_service(secure):
    """A service's user publishes error events and status under its own
    name only: chat-router (whose contract operation sends on
    sys/{service}/error) cannot put a forged error event or a `lost` status
    on dormancy-monitor's topics, where operators and `vigil sys errors`
    would take it for dormancy-monitor's."""
    col = secure.collector(topics=("sys/#",))
    # one connection each: the broker may close a client after a refused publish
    secure.publisher(user="chat-router").publish("sys/dormancy-monitor/error",
                                                 json.dumps({"reason": "forged"}))
    secure.publisher(user="chat-router").publish("sys/dormancy-monitor/dormancy-monitor-0/status",
                                                 json.dumps({"state": "lost"}))
    secure.publisher(user="chat-router").publish("sys/chat-router/error",
                                                 json.dumps({"reason": "own"}))
    col.wait_event("sys/chat-router/error", lambda e: e.get("reason") == "own", timeout=10)
    assert [m.topic for m in col.snapshot("sys/dormancy-monitor/#")] == []


def test_password_rotation_as_the_readme_says(secure):
    """README "Security", rotating a password: new files, ACL LOAD (Redis
    accepts the previous password too until --drop-previous, so the
    connections it closes come back at once), then stop the service, reload
    the broker, start it (input published meanwhile waits in its session and
    is handled), then --drop-previous: the old password is refused
    everywhere."""
    import redis as pyredis
    svc = secure.service("chat-router")
    old = password(secure.secrets, "chat-router")
    args = [SECRETS, "--dir", secure.secrets, "--redis-host", f"127.0.0.1:{secure.redis.port}",
            "--cli-redis-host", f"127.0.0.1:{secure.redis.port}"]
    subprocess.run(args + ["--rotate", "chat-router"], check=True, capture_output=True, timeout=60)
    new = password(secure.secrets, "chat-router")
    assert new != old
    admin = secure.redis.client()
    assert admin.execute_command("ACL", "LOAD") == b"OK"  # closes chat-router's Redis connections
    svc.wait_ready(timeout=20)  # back at once, with the previous password
    assert secure.redis.client(username="chat-router", password=old).ping()
    room = uid("rot")
    secure.vigil_ok("chat", "new", room)
    # stop, reload the broker, start: mosquitto 2.0.11 drops a *connected*
    # client whose password a reload revokes, and then does not queue its
    # input until it is back (measured); a client stopped cleanly first keeps
    # its queue
    svc.terminate()
    pub = secure.publisher()
    topic, msg = human(room, "joel", "sent while chat-router restarts")
    pub.publish(topic, msg)
    secure.broker.proc.send_signal(signal.SIGHUP)
    harness.wait_until(lambda: connack(secure.broker.port, "chat-router", new) == 0, 10, "the broker reloaded")
    svc.start(timeout=30)  # reads the new files
    subprocess.run(args + ["--drop-previous"], check=True, capture_output=True, timeout=60)
    assert admin.execute_command("ACL", "LOAD") == b"OK"
    svc.wait_ready(timeout=20)
    harness.wait_until(lambda: msg["text"] in secure.vigil_ok("chat", "view", room), 20,
                       "the message published during the restart, logged")
    secure.vigil_ok("chat", "send", room, "after the rotation")  # chat-router confirms it
    assert connack(secure.broker.port, "chat-router", old) in (134, 135)
    with pytest.raises(pyredis.exceptions.ResponseError, match="WRONGPASS"):
        secure.redis.client(username="chat-router", password=old).ping()


def test_topic_prefix_acl_with_prefixed_services(tmp_path, request):
    """scripts/secrets --prefix with VIGIL_TOPIC_PREFIX: the services and
    the CLI work under the prefix with the generated ACL (which grants
    nothing outside it: test_acl.py)."""
    s = SecureStack(tmp_path, request, topic_prefix="tenant-a")
    request.addfinalizer(s.close)
    s.service("dormancy-monitor")
    s.service("chat-router")
    col = s.collector()
    room = uid("p")
    s.vigil_ok("persona", "sleep", "ann", room)  # the CLI waits for dormancy-monitor's event
    s.vigil_ok("chat", "new", room)
    s.vigil_ok("chat", "send", room, "@ann hello")  # chat-router logs it
    col.wait_event("tenant-a/persona/ann/notify", timeout=15, what="chat-router's notification, prefixed")
    col.wait_event(f"tenant-a/room/{room}/message", timeout=15, what="the message under the prefix")
    col.wait_event("tenant-a/sys/dormancy-monitor/+/status", timeout=15, what="status under the prefix")
