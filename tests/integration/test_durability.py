"""libshared durability edges (issue 8), with real processes: Redis still
loading its AOF after a restart, a wrong-typed key planted under a commit,
and what an input that cannot be applied whole gets.

Redis answers -LOADING to every command while it replays its AOF. Such an
answer says nothing about the input: the service must keep the input
unacknowledged and retry it like a lost connection, never refuse it."""

import json
import os
import signal
import socket
import threading
import time

import harness
from conftest import ai, command, uid

SLEEP = "@self dormant sleep"
ENV = {"VIGIL_DORMANCY_HUMAN_WAKES": "all"}


def restart_loading(redis, key_load_delay_us):
    """harness.redis_start_loading, then waits until the server answers
    LOADING (not until it is ready)."""
    harness.redis_start_loading(redis, key_load_delay_us)
    state = harness.wait_until(lambda: raw_ping(redis.port), 15, "redis to answer (LOADING)")
    assert state == "loading", "Redis finished loading before the test could publish"


def raw_ping(port):
    """"loading", "ready" or None (not answering), from an EXISTS on a raw
    socket (the Redis client library would wait out LOADING itself)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"EXISTS vigil-probe\r\n")
            reply = s.recv(200)
    except OSError:
        return None
    if reply.startswith(b"-LOADING"):
        return "loading"
    return "ready" if reply.startswith(b":") else None


def levels(stack, persona):
    return {room: v.get("level") for room, v in stack.store().snapshot(f"persona:{persona}").items()}


def error_events(col):
    return col.events("sys/dormancy-monitor/error")


def test_input_published_while_redis_loads_its_aof_is_retried_not_refused(stack):
    """Personas asleep in two rooms each; Redis is killed and restarted with
    a large AOF that takes seconds to load; "awake" commands without a room
    (routed by reading the persona's rooms from Redis) are published while
    it answers LOADING. Every one must be applied once Redis is up, and none
    refused."""
    svc = stack.service(env=ENV)
    col = stack.collector()
    pub = stack.publisher()
    tag = uid("ld")
    personas = [f"{tag}-p{i}" for i in range(6)]
    rooms = [f"{tag}-a", f"{tag}-b"]
    for p in personas:
        for r in rooms:
            pub.publish(*ai(r, p, SLEEP))
    harness.wait_until(lambda: all(levels(stack, p) == {r: "sleep" for r in rooms} for p in personas),
                       30, "every persona asleep in both rooms")

    harness.redis_fill(stack.redis)
    restart_loading(stack.redis, key_load_delay_us=150)  # 40k keys: about 6 s of LOADING
    t_loading = time.monotonic()
    for p in personas:
        pub.publish(*command(p, "awake", by=p))
    published_while_loading = time.monotonic()

    # Still loading when the last command was published (else the test
    # would prove nothing).
    assert raw_ping(stack.redis.port) == "loading", f"Redis was done loading {published_while_loading - t_loading:.1f}s in"

    harness.wait_until(lambda: all(levels(stack, p) == {r: "active" for r in rooms} for p in personas),
                       90, "every persona awake in both rooms after the load")
    refused = [e for e in error_events(col) if "LOADING" in e.get("detail", "") or "redis" in e.get("detail", "")]
    assert not refused, f"inputs refused because of Redis' state: {refused[:3]}"
    assert svc.metric("vigil_redis_transient_errors_total") >= 1
    assert svc.alive()


def test_wrong_typed_key_refuses_the_input_whole_and_writes_nothing(stack):
    """A key the commit needs holds another type (planted by hand): the
    input is refused with reason bad_stored_data, nothing of it is written
    (no processed id, no state, no output), and the service goes on with
    other rooms."""
    svc = stack.service(env=ENV)
    col = stack.collector()
    pub = stack.publisher()
    tag = uid("wt")
    bad_room, good_room = f"{tag}-bad", f"{tag}-good"
    prefix = stack.prefix + "dormancy-monitor:"
    c = stack.redis.client()
    try:
        c.set(f"{prefix}persona:{tag}-ann", "not a hash")  # the snapshot hash of the persona
        pub.publish(*ai(bad_room, f"{tag}-ann", SLEEP, mid=f"{tag}-m1"))
        ev = col.wait_event("sys/dormancy-monitor/error", lambda e: e.get("reason") == "bad_stored_data",
                            timeout=20, what="the bad_stored_data error event")
        assert f"{tag}-m1" in ev.get("sample", "") or bad_room in ev.get("topic", "")
        assert c.get(f"{prefix}persona:{tag}-ann") == b"not a hash"
        assert not c.exists(f"{prefix}state:{bad_room}"), "state written by a refused commit"
        assert not c.exists(f"{prefix}ids:{bad_room}"), "processed id written by a refused commit"
        assert not dormancy_for(col, f"{tag}-m1")
        pub.publish(*ai(good_room, f"{tag}-bob", SLEEP, mid=f"{tag}-m2"))
        harness.wait_until(lambda: dormancy_for(col, f"{tag}-m2"), 20, "the next input applied")
    finally:
        c.close()
    assert svc.metric("vigil_rejected_total", reason="bad_stored_data") == 1


def dormancy_for(col, mid):
    return [e for e in col.events("persona/+/dormancy") if e.get("message_id") == mid]


def test_multi_key_input_one_key_refuses_is_refused_whole(stack):
    """A persona asleep in two rooms; one room's record is made unreadable
    (wrong type). An "awake" command without a room touches both rooms: it
    is refused whole, up front, with an error event, and the healthy room
    is not changed either."""
    svc = stack.service(env=ENV)
    col = stack.collector()
    pub = stack.publisher()
    tag = uid("mk")
    p = f"{tag}-ann"
    good, bad = f"{tag}-a", f"{tag}-b"
    for r in (good, bad):
        pub.publish(*ai(r, p, SLEEP))
    harness.wait_until(lambda: levels(stack, p) == {good: "sleep", bad: "sleep"}, 30, "asleep in both rooms")
    prefix = stack.prefix + "dormancy-monitor:"
    c = stack.redis.client()
    try:
        v_before = c.hget(f"{prefix}state:{good}", "v")
        c.delete(f"{prefix}state:{bad}")
        c.set(f"{prefix}state:{bad}", "not a hash")
        pub.publish(*command(p, "awake", cid=f"{tag}-c1", by=p))
        ev = col.wait_event("sys/dormancy-monitor/error", lambda e: e.get("reason") == "bad_stored_data",
                            timeout=20, what="the refusal")
        assert "persona/" in ev["topic"]
        time.sleep(0.5)
        assert c.hget(f"{prefix}state:{good}", "v") == v_before, ("the healthy room was changed", ev, c.hgetall(f"{prefix}state:{good}"))
        assert levels(stack, p)[good] == "sleep"
        assert not c.zscore(f"{prefix}ids:{good}", f"{tag}-c1")
    finally:
        c.close()
    assert svc.alive()


def test_more_rooms_than_one_input_may_touch_is_refused_visibly(stack):
    """A persona in 65 rooms (one more than VIGIL_ROUTE_MAX_KEYS = 64): a
    command for all its rooms is refused with reason too_many_keys, not
    applied to the first 64."""
    svc = stack.service(env=ENV)
    col = stack.collector()
    pub = stack.publisher()
    tag = uid("tm")
    p = f"{tag}-ann"
    rooms = [f"{tag}-r{i}" for i in range(65)]
    pub.publish_many([ai(r, p, SLEEP) for r in rooms])
    harness.wait_until(lambda: len(levels(stack, p)) == 65, 60, "asleep in 65 rooms")
    pub.publish(*command(p, "awake", cid=f"{tag}-c1", by=p))
    col.wait_event("sys/dormancy-monitor/error", lambda e: e.get("reason") == "too_many_keys",
                   timeout=20, what="the too_many_keys refusal")
    time.sleep(0.5)
    assert set(levels(stack, p).values()) == {"sleep"}, "part of the rooms were changed"
    assert svc.metric("vigil_rejected_total", reason="too_many_keys") == 1


def healthz(svc):
    st, body, _ = harness.http_get(svc.http_port, "/healthz", timeout=2)
    return st, body


def test_healthz_fails_while_intake_is_stuck_and_recovers(stack):
    """Redis frozen (SIGSTOP: connections hang, commands time out) with an
    input in hand: after VIGIL_LIVENESS_MS /healthz answers 503 with a JSON
    reason naming the intake; once Redis continues, the input is applied
    and /healthz is 200 again."""
    svc = stack.service(env=dict(ENV, VIGIL_LIVENESS_MS="2000"))
    col = stack.collector()
    pub = stack.publisher()
    assert healthz(svc)[0] == 200
    tag = uid("lv")
    os.kill(stack.redis.proc.pid, signal.SIGSTOP)
    try:
        pub.publish(*ai(f"{tag}-r", f"{tag}-ann", SLEEP, mid=f"{tag}-m1"))
        harness.wait_until(lambda: healthz(svc)[0] == 503, 20, "/healthz to fail")

        # The frozen Redis stalls the outbox's sampler too, from the moment
        # of the SIGSTOP, while the intake counts from the input's arrival a
        # few ms later: /healthz may name the outbox first. The intake is
        # checked first, so once its bound has passed it is the one named.
        def intake_named():
            st, body = healthz(svc)
            doc = json.loads(body) if st == 503 else {}
            return doc.get("status") == "stalled" and doc.get("reason", "").startswith("intake")

        harness.wait_until(intake_named, 20, "/healthz to name the intake")
    finally:
        os.kill(stack.redis.proc.pid, signal.SIGCONT)
    harness.wait_until(lambda: dormancy_for(col, f"{tag}-m1"), 30, "the input applied after Redis continued")
    harness.wait_until(lambda: healthz(svc)[0] == 200, 20, "/healthz to recover")
    assert svc.alive()


def test_sigterm_under_load_with_readyz_polled_is_clean(stack):
    """SIGTERM while inputs stream in and /readyz and /healthz are polled
    in a loop: a clean exit (0) with no sanitizer report (the outbox is
    taken from the MQTT callback before it is freed; /readyz no longer
    reads the MQTT client), three times; nothing is lost across the
    restarts."""
    import threading

    col = stack.collector()
    pub = stack.publisher()
    tag = uid("st")
    svc = stack.service(env=ENV)
    mids = []
    for round_ in range(3):
        stop = threading.Event()

        def poll():
            while not stop.is_set():
                try:
                    harness.http_get(svc.http_port, "/readyz", timeout=1)
                    harness.http_get(svc.http_port, "/healthz", timeout=1)
                except OSError:
                    pass

        t = threading.Thread(target=poll, daemon=True)
        t.start()
        items = [ai(f"{tag}-r{i % 5}", f"{tag}-p{round_}-{i}", SLEEP, mid=f"{tag}-{round_}-{i}")
                 for i in range(150)]
        mids += [f"{tag}-{round_}-{i}" for i in range(150)]
        sender = threading.Thread(target=lambda: pub.publish_many(items), daemon=True)
        sender.start()
        time.sleep(0.3)
        assert svc.terminate(timeout=20) == 0
        stop.set()
        t.join(5)
        sender.join(60)
        svc.start()
    harness.wait_until(lambda: all(dormancy_for(col, m) for m in mids), 90, "every input applied")


def test_credentials_never_logged_published_or_exported(stack):
    """Redis URL with a password (Redis not reachable, so the outage is
    logged with the URL), MQTT user and password: neither password appears
    in any log line, in the retained status, in /metrics or in --help."""
    col = stack.collector()
    redis_secret, mqtt_secret = "r3dis-s3cret-pw", "mqtt-s3cret-pw"
    dead = harness.free_port()
    svc = stack.service(start=False, env=dict(ENV, VIGIL_REDIS_URL=f"redis://:{redis_secret}@127.0.0.1:{dead}/0",
                                              VIGIL_MQTT_USER="vigil", VIGIL_MQTT_PASSWORD=mqtt_secret))
    svc.start(wait=False)
    harness.wait_until(lambda: "redis not reachable" in svc.stderr_text(), 20, "the outage log line")
    harness.wait_until(lambda: col.find("sys/dormancy-monitor/+/status"), 20, "the status topic")
    st, metrics, _ = harness.http_get(svc.http_port, "/metrics")
    helptext = svc.run_cli(["--help"]).stdout.decode()
    svc.terminate(timeout=20)
    logs = svc.stderr_text()
    assert "***@127.0.0.1" in logs, "the URL is logged, masked"
    status = " ".join(m.payload.decode("utf-8", "replace") for m in col.snapshot("sys/#"))
    for secret in (redis_secret, mqtt_secret):
        for where, text in (("log", logs), ("status", status), ("metrics", metrics), ("--help", helptext)):
            assert secret not in text, f"{secret} in {where}"


def test_shrinking_the_shard_count_hands_over_outbox_and_timers(stack):
    """N shrinks from 3 to 1: the outbox and timers stored under index 2
    are taken over by the replica 0/1 (outbox entries published, timers
    merged at their original deadline), but only once index 2's heartbeat
    is gone: a replica still running under the old N keeps its own. Data
    from before the start is found by one scan; later, by the set of
    indexes the replicas' heartbeats list."""
    col = stack.collector()
    base = stack.prefix + "dormancy-monitor:"
    tag = uid("ho")
    c = stack.redis.client()
    try:
        c.set(f"{base}alive:2", "old-replica", px=60000)
        payload = json.dumps({"id": f"{tag}-e1", "probe": True})
        c.rpush(f"{base}outbox:2", f"0test/{tag}/handover\n{payload}")
        far = harness.now_ms() + 3600_000
        c.zadd(f"{base}timers:2", {f"{tag}-room|probe": far + 30000})  # a claimed one (lease score)...
        c.hset(f"{base}timers:2:due", f"{tag}-room|probe", far)         # ...and its original deadline
        svc = stack.service(env=dict(ENV, VIGIL_SHARD="0/1"))
        time.sleep(3)
        assert c.llen(f"{base}outbox:2") == 1, "taken from a replica that is still alive"
        assert not col.find(f"test/{tag}/handover")
        c.delete(f"{base}alive:2")
        col.wait_event(f"test/{tag}/handover", timeout=20, what="the adopted outbox entry published")
        harness.wait_until(lambda: not c.exists(f"{base}outbox:2") and not c.exists(f"{base}timers:2"),
                           10, "index 2 emptied")
        assert c.zscore(f"{base}timers:0", f"{tag}-room|probe") == far, "moved at its original deadline"
        assert svc.metric("vigil_handover_moved_total") == 2
        # after the start, candidates come from P S ":indexes" (each replica
        # lists its index with its heartbeat), not from a keyspace scan: an
        # index 4 that ran and died is adopted too
        payload4 = json.dumps({"id": f"{tag}-e4", "probe": True})
        c.rpush(f"{base}outbox:4", f"0test/{tag}/handover4\n{payload4}")
        c.sadd(f"{base}indexes", "4")
        col.wait_event(f"test/{tag}/handover4", timeout=20, what="index 4's outbox entry published")
        assert svc.metric("vigil_handover_moved_total") == 3
    finally:
        c.close()


def test_processed_ids_expire_after_the_dedupe_ttl(stack):
    """A record's processed input ids (the redelivery dedupe) expire
    VIGIL_DEDUPE_TTL_S after the last one was added, so a room gone quiet
    does not keep them in Redis for ever; the record itself stays. A TTL
    below the session expiry is warned about at start. With the default,
    the ids key carries the 7 days."""
    svc = stack.service(env=dict(ENV, VIGIL_DEDUPE_TTL_S="2"))
    pub = stack.publisher()
    room, p = uid("ttl"), uid("ann")
    pub.publish(*ai(room, p, SLEEP, mid=f"{room}-m1"))
    prefix = stack.prefix + "dormancy-monitor:"
    c = stack.redis.client()
    try:
        harness.wait_until(lambda: c.zscore(f"{prefix}ids:{room}", f"{room}-m1") is not None, 20,
                           "the id recorded")
        assert 0 < c.pttl(f"{prefix}ids:{room}") <= 3000  # the TTL plus half of it
        harness.wait_until(lambda: not c.exists(f"{prefix}ids:{room}"), 20, "the ids expired",
                           interval=0.1)
        assert c.exists(f"{prefix}state:{room}")
        assert c.pttl(f"{prefix}state:{room}") == -1
    finally:
        c.close()
    assert "VIGIL_DEDUPE_TTL_S 2 is below VIGIL_MQTT_SESSION_EXPIRY_S" in svc.stderr_text()
    svc.terminate()

    svc = stack.service(env=ENV)
    pub.publish(*ai(room, p, SLEEP, mid=f"{room}-m2"))
    c = stack.redis.client()
    try:
        harness.wait_until(lambda: c.zscore(f"{prefix}ids:{room}", f"{room}-m2") is not None, 20,
                           "the id recorded")
        assert 604_800_000 < c.pttl(f"{prefix}ids:{room}") <= 608_400_000  # plus an hour
    finally:
        c.close()
    assert "VIGIL_DEDUPE_TTL_S" not in svc.stderr_text()


class SlowRedisProxy:
    """A TCP proxy to Redis that holds each chunk of Redis' replies
    delay_s before passing it on: every round trip of a commit is slow, as
    with a Redis far away or overloaded."""

    def __init__(self, port, delay_s):
        self.target, self.delay = port, delay_s
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.port = self.srv.getsockname()[1]
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                client, _ = self.srv.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=harness.pipe_bytes, args=(client, upstream), daemon=True).start()
            threading.Thread(target=harness.pipe_bytes, args=(upstream, client, self.delay), daemon=True).start()

    def close(self):
        self.stopping = True
        self.srv.close()


def test_sigterm_mid_read_stops_between_inputs_and_leaves_the_rest_unacknowledged(stack):
    """floor-control (one commit per input) restarts onto a backlog of 60
    human messages in its MQTT session, with Redis answering each round trip
    20 ms late; a SIGTERM just after its first commit stops it after the
    input in hand, not after every input the link still reads while it
    stops (the runtime used to take in 59 of the 60 here before it could
    stop: with a slow Redis, longer than an orchestrator's grace period).
    The inputs left unacknowledged go to the next process: every message
    is decided once."""
    proxy = SlowRedisProxy(stack.redis.port, 0.02)
    try:
        env = {"VIGIL_REDIS_URL": f"redis://127.0.0.1:{proxy.port}/0", "VIGIL_FLOOR_K": "2"}
        svc = stack.service("floor-control", env=env)
        col = stack.collector(topics=("room/+/floor",))
        svc.terminate()
        pub = stack.publisher()
        room = uid("r")
        mids = [uid("q") for _ in range(60)]
        for mid in mids:
            pub.publish(f"room/{room}/message", {"id": mid, "room": room, "sender": "joel",
                                                 "sender_type": "human", "text": "hello", "ts": harness.now_ms()})
        c = stack.redis.client()

        def processed():
            return sum(c.zcard(k) for k in c.scan_iter(match=f"{stack.prefix}floor-control:ids:*"))

        svc.start(wait=False)
        harness.wait_until(lambda: processed() >= 1, 30, "the first input of the backlog committed")
        at_term = processed()
        os.kill(svc.proc.pid, signal.SIGTERM)
        assert svc.proc.wait(timeout=30) == 0
        after = processed()
        assert after - at_term <= 3, f"{after - at_term} inputs taken in after SIGTERM (of {len(mids)})"
        svc.start()
        got = col.wait_count("room/+/floor", len(mids), timeout=60, key="message_id")
        assert set(got) == set(mids)
        by_msg = {}
        for e in col.events("room/+/floor"):
            by_msg.setdefault(e["message_id"], set()).add(e["id"])
        assert all(len(v) == 1 for v in by_msg.values())
        c.close()
    finally:
        proxy.close()
