"""VIGIL_TOPIC_PREFIX: every Vigil topic under one prefix on a shared broker.

dormancy-monitor with VIGIL_TOPIC_PREFIX=tenant-a processes
tenant-a/room/<r>/message, publishes only under tenant-a/ (outputs, error
events, the retained status and the last will), and ignores the same input
without the prefix, which belongs to another tenant. The `vigil` CLI with
the same prefix works with a prefixed chat-router; without it, it reaches
no chat-router at all.
"""

from chat_personas import CHAT, run_vigil, vigil_ok
from conftest import ai, uid
from harness import retained

PREFIX = "tenant-a"
SERVICE = "dormancy-monitor"


def ours(col, mine):
    """Topics the collector saw that the test did not publish itself."""
    return [m.topic for m in col.snapshot() if m.topic not in mine]


def test_service_lives_under_the_prefix(stack):
    svc = stack.service(env={"VIGIL_TOPIC_PREFIX": PREFIX})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("pfx")
    mine = set()

    # Another tenant's identical input, without the prefix: ignored.
    topic, payload = ai(room, "ada", "@self dormant sleep")
    pub.publish(topic, payload)
    mine.add(topic)
    # Ours, under the prefix: processed.
    pub.publish(f"{PREFIX}/{topic}", payload)
    mine.add(f"{PREFIX}/{topic}")
    col.wait_event(f"{PREFIX}/persona/ada/dormancy", lambda e: e["level"] == "sleep", timeout=15)
    assert svc.metric("vigil_mqtt_messages_received_total") == 1

    # Bad input under the prefix: the error event is under it too.
    pub.publish(f"{PREFIX}/room/{room}/message", b"not json")
    mine.add(f"{PREFIX}/room/{room}/message")
    col.wait_event(f"{PREFIX}/sys/{SERVICE}/error", timeout=15)

    # The retained status is under the prefix.
    st = retained(stack.broker.port, f"{PREFIX}/sys/{SERVICE}/{svc.instance}/status")
    assert st and next(iter(st.values()))["state"] == "ready", st
    assert not retained(stack.broker.port, f"sys/{SERVICE}/#")

    # The last will too: a crash leaves "lost" under the prefix.
    svc.kill9()
    col.wait_event(f"{PREFIX}/sys/{SERVICE}/{svc.instance}/status",
                   lambda s: s["state"] == "lost", timeout=60)

    outside = [t for t in ours(col, mine) if not t.startswith(PREFIX + "/")]
    assert not outside, f"published outside {PREFIX}/: {outside}"
    assert any(t.startswith(f"{PREFIX}/persona/") for t in ours(col, mine))


def test_cli_follows_the_prefix(stack):
    stack.service(CHAT, env={"VIGIL_TOPIC_PREFIX": PREFIX})
    col = stack.collector()
    room = uid("room")
    env = {"VIGIL_TOPIC_PREFIX": PREFIX, "VIGIL_CLI_TIMEOUT_MS": "10000"}
    assert vigil_ok(stack, "chat", "new", room, "--no-join", env=env).strip() == room
    vigil_ok(stack, "chat", "send", room, "hello under a prefix", env=env)
    out = vigil_ok(stack, "chat", "view", room, env=env)
    assert "hello under a prefix" in out, out
    assert not [m.topic for m in col.snapshot() if not m.topic.startswith(PREFIX + "/")]

    # Without the prefix the CLI reaches no chat-router.
    r = run_vigil(stack, "chat", "new", uid("room"), "--no-join",
                  env={"VIGIL_CLI_TIMEOUT_MS": "2000"})
    assert r.returncode == 1, (r.stdout, r.stderr)

    # A prefix that could match other tenants' topics is refused.
    r = run_vigil(stack, "chat", "new", uid("room"), "--no-join",
                  env={"VIGIL_TOPIC_PREFIX": "tenant/+"})
    assert r.returncode == 2 and "VIGIL_TOPIC_PREFIX" in r.stderr, (r.stdout, r.stderr)


def test_two_prefixes_share_a_broker(stack):
    """Two deployments of the same service and shard on one broker, under
    different prefixes: each keeps its own MQTT session (the client id is
    under the prefix), both stay ready and each processes its own input. With
    one client id they took turns disconnecting each other."""
    a = stack.service(env={"VIGIL_TOPIC_PREFIX": "tenant-a"})
    b = stack.service(env={"VIGIL_TOPIC_PREFIX": "tenant-b",
                           "VIGIL_REDIS_PREFIX": stack.prefix + "b:"})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("pfx")
    topic, payload = ai(room, "ada", "@self dormant sleep")
    for p in ("tenant-a", "tenant-b"):
        pub.publish(f"{p}/{topic}", payload)
        col.wait_event(f"{p}/persona/ada/dormancy", lambda e: e["level"] == "sleep", timeout=15)
    for svc in (a, b):
        assert svc.is_ready(), svc.instance
        assert svc.metric("vigil_mqtt_messages_received_total") == 1
        assert svc.metric("vigil_mqtt_reconnects_total") == 0, svc.instance
