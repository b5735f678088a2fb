"""presence-gateway's live streams (Server-Sent Events): order, the
`connected` and `ping` frames, unnamed frames (JSON with `type`) on
/api/autonomous/deliberations/live for an onmessage-only client and
named ones on /api/events, topic filters, Last-Event-ID reconnects
that miss nothing, floor-control's decisions in the `floor` family,
200 concurrent clients with a stalled one, a kill -9
that loses nothing and doubles nothing, a stream opened as soon as
/readyz says ready, bad input on the logged topics."""

import json
import os
import signal
import socket
import threading
import time

from conftest import human, uid
from gateway_client import SSE, auth, frame_name, request, start_gateway
from harness import HarnessError, scaled, wait_until

JOEL = auth()


def council_event(session, typ, n, **extra):
    body = {"id": f"{session}:{typ}:{n}", "type": typ, "session": session, "ts": int(time.time() * 1000)}
    body.update(extra)
    return f"council/{session}/event", body


def test_theater_stream_order_ping_and_types(stack):
    """/api/autonomous/deliberations/live: the six council event
    types in order, after `connected` and between pings; no frame has an
    event: line (the specified client has only onmessage), every one is JSON
    with its name as `type`, and the council events keep their id."""
    gw = start_gateway(stack, VIGIL_GATEWAY_PING_MS=300)
    pub = stack.publisher()
    s = SSE(gw.http_port, "/api/autonomous/deliberations/live", JOEL)
    assert s.status == 200 and s.headers["content-type"].startswith("text/event-stream")
    first = s.next()
    # connected's id is where the stream starts (a resume point before any entry)
    assert first["event"] == "message" and first["data"]["type"] == "connected", first
    assert first["id"] == first["data"]["position"], first
    assert first["raw"].startswith(f'id: {first["id"]}\ndata: {{"type":"connected",'), first
    assert first["data"]["topics"] == ["council/+/event"]
    # pings come every ~300 ms
    t0 = time.monotonic()
    pings = [s.next(timeout=3) for _ in range(3)]
    assert all(p["event"] == "message" and p["data"]["type"] == "ping" and p["id"] is None for p in pings), pings
    assert all(p["raw"].startswith('data: {"type":"ping","ts":') for p in pings)
    assert 0.4 <= time.monotonic() - t0 <= scaled(3.0)
    types = ["deliberation", "phase", "action", "question", "session_paused", "session_ended"]
    for i, t in enumerate(types):
        pub.publish(*council_event("s-1", t, i, text=f"event {i}"))
    pub.publish(*human("general", "joel", "not a council event"))
    pub.publish(*council_event("s-1", "unknown_type", 99))
    got = s.until(lambda f: f["data"].get("type") == "session_ended", timeout=10)
    assert [f["data"]["type"] for f in got] == types, got
    # unnamed: EventSource's type "message", i.e. onmessage; the id stays
    assert all(f["event"] == "message" and "event:" not in f["raw"] for f in got), got
    assert all(f["raw"] == f"id: {f['id']}\ndata: " + f["raw"].split("\ndata: ", 1)[1] for f in got)
    assert [f["data"]["text"] for f in got] == [f"event {i}" for i in range(6)]
    assert all(f["data"]["topic"] == "council/s-1/event" for f in got)
    ids = [f["id"] for f in got]
    assert all(ids) and ids == sorted(ids, key=lambda x: tuple(map(int, x.split("-"))))
    s.close()
    # Last-Event-ID resumes this stream too, its backlog unnamed as well
    r = SSE(gw.http_port, "/api/autonomous/deliberations/live", {**JOEL, "Last-Event-ID": ids[2]})
    assert frame_name(r.next()) == "connected"
    rest = r.until(lambda f: f["data"].get("type") == "session_ended", timeout=10)
    assert [(f["id"], f["data"]["type"]) for f in rest] == list(zip(ids[3:], types[3:])), rest
    assert all(f["event"] == "message" and "event:" not in f["raw"] for f in rest)
    r.close()


def test_named_streams_keep_their_event_lines(stack):
    """/api/events is unchanged: every frame named by its event: line
    (connected, ping, the council types, council.event, room.message),
    the data as published, without a `type` of the gateway's."""
    gw = start_gateway(stack, VIGIL_GATEWAY_PING_MS=300)
    pub = stack.publisher()
    s = SSE(gw.http_port, "/api/events?topics=council,rooms", JOEL)
    first = s.next()
    assert first["event"] == "connected", first
    assert first["raw"].startswith(f'id: {first["id"]}\nevent: connected\ndata: {{"position":'), first
    assert "type" not in first["data"]
    p = s.next(timeout=3)
    assert p["event"] == "ping" and set(p["data"]) == {"ts"} and p["raw"].startswith('event: ping\ndata: {"ts":'), p
    session = uid("s")
    types = ["deliberation", "phase", "action", "question", "session_paused", "session_ended"]
    for i, t in enumerate(types):
        pub.publish(*council_event(session, t, i))
    pub.publish(*council_event(session, "unknown_type", 99))
    pub.publish(*human("general", "joel", "named room message"))
    got = s.until(lambda f: f["data"].get("text") == "named room message", timeout=10)
    assert [f["event"] for f in got] == types + ["council.event", "room.message"], got
    for f in got:
        assert f["id"] and f["raw"].startswith(f"id: {f['id']}\nevent: {f['event']}\ndata: {{"), f
    s.close()


def test_events_topic_families_and_filters(stack):
    gw = start_gateway(stack)
    pub = stack.publisher()
    rooms = SSE(gw.http_port, "/api/events?topics=rooms", JOEL)
    one = SSE(gw.http_port, "/api/events?topics=persona/ann/%2B,sys", JOEL)
    assert rooms.next()["event"] == "connected" and one.next()["event"] == "connected"
    pub.publish("persona/ann/dormancy", {"id": "d1", "persona": "ann", "room": "general", "level": "sleep",
                                         "previous": "active", "trigger": "manual", "reason": "r", "text": "t",
                                         "ts": int(time.time() * 1000)})
    pub.publish("persona/bob/dormancy", {"id": "d2", "persona": "bob", "room": "general", "level": "sleep",
                                         "previous": "active", "trigger": "manual", "reason": "r", "text": "t",
                                         "ts": int(time.time() * 1000)})
    pub.publish(*human("general", "joel", "hello rooms"))
    f = rooms.until(lambda f: f["event"] == "room.message")
    assert [x["event"] for x in f] == ["room.message"] and f[0]["data"]["text"] == "hello rooms"
    g = one.until(lambda f: f["event"] == "persona.dormancy")
    assert g[-1]["data"]["persona"] == "ann"
    # the gateway's own status (sys family) reached the log at start; a
    # later one shows up live too; bob's event never reaches this client
    pub.publish("sys/x/i1/status", {"state": "ready", "service": "x", "instance": "i1", "version": "1",
                                    "shard": "0/1", "ts": int(time.time() * 1000)}, retain=False)
    h = one.until(lambda f: f["event"] == "sys.status" and f["data"]["service"] == "x")
    assert not any(x["data"].get("persona") == "bob" for x in h)
    rooms.close()
    one.close()


def test_floor_decisions_reach_the_floor_family(stack):
    """floor-control's decision for a human message (room/{r}/floor) is
    logged: /api/events?topics=floor carries it as `room.floor` (and
    nothing else), `rooms` (room/#) too; its per-persona copies
    (persona/{p}/floor) are not logged, so `all` never shows them."""
    gw = start_gateway(stack)
    stack.service("floor-control")
    col = stack.collector(["persona/+/floor"])
    pub = stack.publisher()
    room = uid("r")
    ann, bob, cid = uid("ann"), uid("bob"), uid("cid")
    fam = SSE(gw.http_port, "/api/events?topics=floor", JOEL)
    every = SSE(gw.http_port, "/api/events?topics=all", JOEL)
    start = fam.next()
    assert start["event"] == "connected" and every.next()["event"] == "connected"
    for p, dom in ((ann, "kubernetes"), (bob, "kubernetes"), (cid, "cooking")):
        pub.publish(f"persona/{p}/meta", {"persona": p, "name": p, "rooms": [room], "role": "helper",
                                          "expertise_domains": [dom], "confidence_levels": {dom: 0.9}},
                    retain=True)
    seen = []

    def decided():
        # floor-control learns the metas asynchronously: ask until it knows all three
        mid = uid("m")
        pub.publish(*human(room, "joel", "Why does my Kubernetes pod restart?", mid=mid))
        try:
            got = fam.until(lambda f: f["data"].get("message_id") == mid, timeout=5)
        except HarnessError:
            return None  # no decision (no persona known yet): ask again
        seen.extend(got)
        d = got[-1]["data"]
        return got[-1] if sorted(d["granted"]) == sorted([ann, bob]) and d["held"] == [cid] else None
    f = wait_until(decided, scaled(20), "a floor decision granting the two experts")
    assert f["event"] == "room.floor" and f["id"], f
    assert f["data"]["topic"] == f"room/{room}/floor" and f["data"]["room"] == room
    assert "kubernetes" in f["data"]["reasons"][ann] and f["data"]["source"] == "rules"
    assert all(x["event"] == "room.floor" for x in seen), [x["event"] for x in seen]
    mid = f["data"]["message_id"]
    # floor-control did publish the per-persona copies; the gateway logged none
    col.wait_count("persona/+/floor", 3, timeout=scaled(10), pred=lambda e: e.get("message_id") == mid)
    sentinel = uid("sentinel")
    pub.publish(*human(uid("r"), "joel", sentinel))
    got = every.until(lambda x: x["data"].get("text") == sentinel, timeout=10)
    events = [x["event"] for x in got]
    assert "room.floor" in events and "persona.floor" not in events, events
    # the family is also in what rooms (room/#) carries, resumable by id
    r = SSE(gw.http_port, "/api/events?topics=rooms", {**JOEL, "Last-Event-ID": start["id"]})
    assert r.next()["event"] == "connected"
    assert any(x["data"].get("message_id") == mid
               for x in r.until(lambda x: x["data"].get("message_id") == mid and x["event"] == "room.floor"))
    for c in (fam, every, r):
        c.close()


def test_reconnect_with_last_event_id_misses_nothing(stack):
    gw = start_gateway(stack)
    pub = stack.publisher()
    room = uid("r")
    s = SSE(gw.http_port, f"/api/events?topics=room/{room}/message", JOEL)
    s.next()
    for i in range(5):
        pub.publish(*human(room, "joel", f"m{i}"))
    got = s.until(lambda f: f["data"].get("text") == "m4")
    assert [f["data"]["text"] for f in got] == [f"m{i}" for i in range(5)]
    last = got[2]["id"]  # pretend we only processed m0..m2
    s.close()
    for i in range(5, 8):  # published while disconnected
        pub.publish(*human(room, "joel", f"m{i}"))
    time.sleep(0.5)
    r = SSE(gw.http_port, f"/api/events?topics=room/{room}/message", {**JOEL, "Last-Event-ID": last})
    assert r.next()["event"] == "connected"
    pub.publish(*human(room, "joel", "m8"))
    got = r.until(lambda f: f["data"].get("text") == "m8")
    assert [f["data"]["text"] for f in got] == [f"m{i}" for i in range(3, 9)], got
    # ?since=0 replays the whole log in order
    z = SSE(gw.http_port, f"/api/events?topics=room/{room}/message&since=0", JOEL)
    z.next()
    got = z.until(lambda f: f["data"].get("text") == "m8")
    assert [f["data"]["text"] for f in got] == [f"m{i}" for i in range(9)]
    for c in (r, z):
        c.close()


def test_200_clients_and_a_stalled_one(stack):
    """A client that never reads is dropped when its queue fills; the 200
    others get every event, in order, and the gateway stays responsive."""
    gw = start_gateway(stack, VIGIL_GATEWAY_CLIENT_QUEUE=128, VIGIL_GATEWAY_PING_MS=60000,
                       VIGIL_GATEWAY_CLIENT_STALL_MS=2000)
    room = uid("r")
    path = f"/api/events?topics=room/{room}/message"
    # the stalled client: tiny receive buffer, never reads after the request;
    # it also takes big room/{room}/state events the others do not
    stalled = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", gw.http_port))
    stalled.sendall(f"GET /api/events?topics=room/{room}/%23 HTTP/1.1\r\nHost: x\r\n"
                    f"Authorization: {JOEL['Authorization']}\r\n\r\n".encode())
    clients = [SSE(gw.http_port, path, JOEL, timeout=30) for _ in range(200)]
    for c in clients:
        assert c.status == 200 and c.next(timeout=30)["event"] == "connected"
    assert gw.metric("vigil_gateway_sse_clients") == 201
    n = 300
    results = [None] * len(clients)

    def drain(k):
        try:
            got = clients[k].until(lambda f: f["data"]["text"] == f"m{n - 1}", timeout=120)
            results[k] = [int(f["data"]["text"][1:]) for f in got]
        except Exception as e:  # noqa: BLE001 - reported below
            results[k] = repr(e)
    threads = [threading.Thread(target=drain, args=(k,)) for k in range(len(clients))]
    for t in threads:
        t.start()
    pub = stack.publisher()
    t0 = time.monotonic()
    big = "x" * 40000  # 10 MB in all: more than any socket buffer holds
    items = []
    for i in range(n):
        items.append(human(room, "joel", f"m{i}"))
        if i < 250:
            items.append((f"room/{room}/state", {"room": room, "pad": big, "n": i, "ts": int(time.time() * 1000)}))
    pub.publish_many(items, timeout=60)
    # the gateway answers other requests meanwhile
    assert request(gw.http_port, "GET", "/api/whoami", headers=JOEL)[0] == 200
    for t in threads:
        t.join(timeout=scaled(150))
    elapsed = time.monotonic() - t0
    for k, r in enumerate(results):
        assert r == list(range(n)), f"client {k}: {r if isinstance(r, str) else (None if r is None else len(r))}"
    wait_until(lambda: gw.metric("vigil_gateway_sse_dropped_total") >= 1, scaled(10), "the stalled client dropped")
    print(f"\n200 clients x {n} events delivered in {elapsed:.2f}s; the stalled client was dropped")
    assert gw.is_ready()
    stalled.close()
    for c in clients:
        c.close()
    wait_until(lambda: gw.metric("vigil_gateway_sse_clients") == 0, scaled(20), "clients gone")


def test_a_burst_read_at_once_drops_no_reader_that_keeps_up(stack):
    """Entries that reach the log while the gateway is stopped are read
    after it resumes in one go. Readers that keep up are not dropped even
    when the burst is longer than their queue: the gateway reads the log a
    quarter of a queue at a time and lets them drain between reads."""
    gw = start_gateway(stack, VIGIL_GATEWAY_CLIENT_QUEUE=16)
    room = uid("r")
    clients = [SSE(gw.http_port, f"/api/events?topics=room/{room}/message", JOEL, timeout=30)
               for _ in range(3)]
    for c in clients:
        assert c.next()["event"] == "connected"
    n = 200
    log = stack.redis.client()
    key = stack.prefix + "presence-gateway:log"
    os.kill(gw.proc.pid, signal.SIGSTOP)
    try:
        for i in range(n):
            body = {"id": f"b{i}", "room": room, "sender": "joel", "sender_type": "human",
                    "text": f"m{i}", "ts": int(time.time() * 1000)}
            log.xadd(key, {"m": f"room/{room}/message\nroom.message\n{json.dumps(body)}"})
    finally:
        os.kill(gw.proc.pid, signal.SIGCONT)
    for k, c in enumerate(clients):
        got = c.until(lambda f: f["event"] != "room.message" or f["data"]["text"] == f"m{n - 1}",
                      timeout=60)
        assert [f["data"].get("text") for f in got] == [f"m{i}" for i in range(n)], (k, got[-1])
    assert gw.metric("vigil_gateway_sse_dropped_total") == 0
    for c in clients:
        c.close()


def test_kill9_loses_and_doubles_nothing(stack):
    gw = start_gateway(stack)
    pub = stack.publisher()
    room = uid("r")
    for i in range(50):
        pub.publish(*human(room, "joel", f"a{i}"))
    time.sleep(0.2)
    gw.kill9()
    for i in range(50):  # queued by the broker for the gateway's persistent session
        pub.publish(*human(room, "joel", f"b{i}"))
    gw.restart()
    # a message published twice (redelivery) is logged once
    t, body = human(room, "joel", "dup", mid="dup-1")
    pub.publish(t, body)
    pub.publish(t, body)
    pub.publish(*human(room, "joel", "end"))
    s = SSE(gw.http_port, f"/api/events?topics=room/{room}/message&since=0", JOEL)
    s.next()
    got = s.until(lambda f: f["data"].get("text") == "end", timeout=20)
    texts = [f["data"]["text"] for f in got]
    assert texts == [f"a{i}" for i in range(50)] + [f"b{i}" for i in range(50)] + ["dup", "end"], texts
    s.close()


def test_a_stream_opened_as_soon_as_readyz_says_ready_is_served(stack):
    """/readyz turns 200 once the broker and Redis are connected, which
    can be before the fan-out thread has read the log's end once; a
    stream opened in between waits for it instead of getting 503 "the
    stream is not ready" (seen in most runs of 30 restarts, and as a
    flaky 503 of test_200_clients_and_a_stalled_one on a loaded host)."""
    gw = start_gateway(stack)
    refused = []
    for k in range(30):
        gw.kill9()
        gw.start(wait=False)

        def ready():
            try:
                return request(gw.http_port, "GET", "/readyz", timeout=1)[0] == 200
            except OSError:
                return False

        wait_until(ready, 20, "/readyz 200", interval=0.001)
        s = SSE(gw.http_port, "/api/events?topics=rooms", JOEL)
        if s.status != 200:
            refused.append((k, s.status, s.buf[:200]))
        s.close()
    assert not refused, refused


def test_bad_input_on_logged_topics(stack):
    gw = start_gateway(stack)
    col = stack.collector(["sys/presence-gateway/error"])
    pub = stack.publisher()
    room = uid("r")
    s = SSE(gw.http_port, "/api/events?topics=all", JOEL)
    s.next()
    bad = [("room/x/message", b"not json"), ("room/x/message", b"[1]"), ("room/x/message", b'{"a":'),
           ("persona/p/state", b'{"t":"\xff"}'), ("room/x/message", b"{" + b" " * 70000 + b"}"),
           ("room/x/message", b'{"id": "a/b"}')]
    for t, p in bad:
        pub.publish(t, p)
    errs = col.wait_count("sys/presence-gateway/error", len(bad), timeout=scaled(10), key=None)
    reasons = sorted(e["reason"] for e in errs.values())
    assert set(reasons) <= {"not_json", "not_object", "invalid_utf8", "oversize", "bad_id"}, reasons
    pub.publish(*human(room, "joel", "after the bad ones"))
    got = s.until(lambda f: f["data"].get("text") == "after the bad ones")
    assert not any(f["data"].get("topic") == "room/x/message" for f in got)
    assert gw.metric("vigil_rejected_total", reason="not_json") >= 1
    from conftest import validate_outputs
    validate_outputs(col, ("sys/presence-gateway/error",))
    s.close()


def test_snapshot_starts_from_current_states_even_after_trimming(stack):
    """?snapshot=1: the latest kept state of each matching state topic
    (frames without id), then live; still there when the log was trimmed."""
    gw = start_gateway(stack, VIGIL_GATEWAY_LOG_MAXLEN=10)
    pub = stack.publisher()
    room = uid("r")
    for level in ("active", "sleep"):
        pub.publish("persona/ann/state", {"persona": "ann", "rooms": {room: {"level": level, "since": 1, "trigger": "manual"}},
                                          "ts": int(time.time() * 1000)}, retain=True)
    for i in range(30):  # pushes the states out of the 10-entry log
        pub.publish(*human(room, "joel", f"filler {i}"))
    s0 = SSE(gw.http_port, f"/api/events?topics=room/{room}/message&since=0", JOEL)
    s0.next()
    wait_until(lambda: s0.until(lambda f: f["data"].get("text") == "filler 29"), scaled(10), "the log filled")
    s0.close()
    s = SSE(gw.http_port, "/api/events?topics=personas&snapshot=1", JOEL)
    assert s.next()["event"] == "connected"
    f = s.next()
    assert f["event"] == "persona.state" and f["id"] is None
    assert f["data"]["rooms"][room]["level"] == "sleep" and f["data"]["topic"] == "persona/ann/state"
    pub.publish("persona/ann/dormancy", {"id": uid(), "persona": "ann", "room": room, "level": "active",
                                         "previous": "sleep", "trigger": "manual", "reason": "r", "text": "t",
                                         "ts": int(time.time() * 1000)})
    g = s.until(lambda f: f["event"] == "persona.dormancy")
    assert [x["event"] for x in g] == ["persona.dormancy"] and g[0]["id"]
    s.close()
