"""presence-gateway: what a newly opened stream starts from and what the
gateway refuses, through a real broker, Redis and gateway: ?snapshot=1
carries the pending council questions, the most urgent first (gone
when answered, expired or their session ended) and each user's latest presence per room (gone at
away); a payload field disagreeing with its topic is topic_mismatch,
never logged; a NUL in a posted string is a 400; presence by idle_ms is
dated by the gateway's clock; the `connected` frame's id resumes a
client that saw no entry; a cleared retained snapshot leaves ?snapshot=1,
and the same snapshot delivered again is not logged twice."""

import time

from conftest import human, uid
import gateway_client
from gateway_client import SSE, auth, request, start_gateway
from harness import scaled, wait_until

JOEL = auth()


def now():
    return int(time.time() * 1000)


def snapshot(gw, topics):
    """The frames ?snapshot=1 sends before any live entry (until 1 s of
    silence), by event name."""
    return gateway_client.snapshot(gw.http_port, topics, JOEL)


def kept(gw, topics, event, topic):
    return [f["data"] for f in snapshot(gw, topics) if f["event"] == event and f["data"]["topic"] == topic]


def question(session, n, expires_at, **extra):
    qid = f"{session}:question:{n}"
    body = {"id": qid, "type": "question", "session": session, "question_id": qid, "question": f"q{n}?",
            "priority": 5, "expires_at": expires_at, "ts": now()}
    body.update(extra)
    return f"council/{session}/event", body


def test_snapshot_carries_pending_questions(stack):
    gw = start_gateway(stack)
    pub = stack.publisher()
    s, s2 = uid("s"), uid("s")
    pub.publish(*question(s, 1, now() + 600000))
    pub.publish(*question(s, 2, now() + 6000))        # expires soon
    pub.publish(*question(s, 3, now() + 600000))      # answered below
    pub.publish(*question(s2, 1, now() + 600000))     # its session ends
    pub.publish(f"council/{s2}/event", {"id": f"{s2}:end", "type": "session_ended", "session": s2,
                                        "reason": "done", "ts": now()})
    time.sleep(scaled(0.5))
    # all three of s are pending at first, s2 has none
    first = kept(gw, "council", "council.questions", f"council/{s}/questions")[0]
    assert first["session"] == s and {q["question_id"] for q in first["questions"]} == \
        {f"{s}:question:{i}" for i in (1, 2, 3)}
    assert all(q["topic"] == f"council/{s}/event" and q["type"] == "question" for q in first["questions"])
    assert not kept(gw, "council", "council.questions", f"council/{s2}/questions")
    # answered through the gateway (council/{s}/answer), and q2 expires
    st, _, body = request(gw.http_port, "POST", f"/api/council/{s}/answers",
                          {"question_id": f"{s}:question:3", "answer": "yes"}, JOEL)
    assert st == 202, body

    def left():
        k = kept(gw, "council", "council.questions", f"council/{s}/questions")
        return k and [q["question_id"] for q in k[0]["questions"]]
    wait_until(lambda: left() == [f"{s}:question:1", f"{s}:question:2"], scaled(10), "q3 answered")
    wait_until(lambda: left() == [f"{s}:question:1"], scaled(20), "q2 expired")
    # the deliberations stream has no snapshot: nothing new there
    assert not kept(gw, "council/%2B/event", "council.questions", f"council/{s}/questions")
    # the session completes: nothing is pending any more
    pub.publish(f"council/{s}/state", {"session": s, "user": "joel", "status": "completed", "loop_count": 1,
                                       "ts": now()}, retain=False)
    wait_until(lambda: not kept(gw, "council", "council.questions", f"council/{s}/questions"), scaled(10),
               "no questions once the session completed")


def test_snapshot_lists_questions_most_urgent_first(stack):
    """High-priority questions surface first: the session's pending
    questions (priority 1..10, higher more urgent) come the highest first,
    equal ones (a question without priority is 5) in the order asked,
    whatever order they were asked in; an answered one leaves the order of
    the others as it was."""
    gw = start_gateway(stack)
    pub = stack.publisher()
    s = uid("s")
    for n, prio in enumerate((2, 9, None, 5, 10, 1), start=1):
        topic, body = question(s, n, now() + 600000, priority=prio)
        if prio is None:
            del body["priority"]
        pub.publish(topic, body)

    def order():
        k = kept(gw, "council", "council.questions", f"council/{s}/questions")
        return k and [int(q["question_id"].rsplit(":", 1)[1]) for q in k[0]["questions"]]
    wait_until(lambda: order() == [5, 2, 3, 4, 1, 6], scaled(10), "the questions by priority")
    st, _, body = request(gw.http_port, "POST", f"/api/council/{s}/answers",
                          {"question_id": f"{s}:question:2", "answer": "yes"}, JOEL)
    assert st == 202, body
    wait_until(lambda: order() == [5, 3, 4, 1, 6], scaled(10), "q2 answered, the rest in order")


def test_snapshot_carries_presence_until_away(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_PRESENCE_IDLE_MS=4000, VIGIL_GATEWAY_PRESENCE_AWAY_MS=8000,
                       VIGIL_GATEWAY_PRESENCE_EXPIRE_MS=60000)
    pub = stack.publisher()
    room = uid("r")
    st, _, body = request(gw.http_port, "POST", "/api/presence", {"session": "tab1", "rooms": [room]}, JOEL)
    assert st == 200, body
    pub.publish(f"room/{room}/presence", {"user": "ann", "session": "cli", "status": "idle",
                                          "last_activity": now() - 1000, "ts": now()})

    def humans():
        k = kept(gw, "rooms", "room.humans", f"room/{room}/humans")
        return k and {h["user"]: h["status"] for h in k[0]["humans"]}
    wait_until(lambda: humans() == {"joel": "active", "ann": "idle"}, scaled(10), "joel and ann kept")
    # ann goes away: she leaves the snapshot; joel turns idle, then away (the gateway's timer)
    pub.publish(f"room/{room}/presence", {"user": "ann", "session": "cli", "status": "away",
                                          "last_activity": now() - 1000, "ts": now()})
    wait_until(lambda: humans() == {"joel": "idle"}, scaled(10), "ann gone, joel idle")
    wait_until(lambda: not humans(), scaled(10), "nobody once joel is away")


def test_topic_mismatch_is_refused_and_never_logged(stack):
    gw = start_gateway(stack)
    col = stack.collector(["sys/presence-gateway/error"])
    pub = stack.publisher()
    room, other = uid("r"), uid("r")
    s = SSE(gw.http_port, "/api/events?topics=all", JOEL)
    s.next()
    bad = [human(room, "joel", "filed in the wrong room")]
    bad[0][1]["room"] = other
    bad.append((f"council/{uid('s')}/event", {"id": uid(), "type": "phase", "session": "elsewhere",
                                               "phase": "sense", "loop": 1, "ts": now()}))
    bad.append((f"persona/{uid('p')}/dormancy", {"id": uid(), "persona": "someone-else", "room": room,
                                                  "level": "sleep", "previous": "active", "trigger": "manual",
                                                  "reason": "r", "text": "t", "ts": now()}))
    bad.append(("sys/x/i1/status", {"state": "ready", "service": "x", "instance": "i2", "version": "1",
                                    "shard": "0/1", "ts": now()}))
    for t, p in bad:
        pub.publish(t, p, retain=False)
    errs = col.wait_count("sys/presence-gateway/error", len(bad), timeout=scaled(10), key=None)
    assert sorted(e["reason"] for e in errs.values()) == ["topic_mismatch"] * len(bad), errs
    pub.publish(*human(room, "joel", "after the mismatches"))
    got = s.until(lambda f: f["data"].get("text") == "after the mismatches")
    assert [f["data"]["text"] for f in got if f["event"] == "room.message"] == ["after the mismatches"], got
    bad_ids = {p["id"] for _, p in bad if "id" in p}
    assert not any(f["data"].get("id") in bad_ids or f["data"].get("instance") == "i2" for f in got), got
    assert gw.metric("vigil_rejected_total", reason="topic_mismatch") >= len(bad)
    from conftest import validate_outputs
    validate_outputs(col, ("sys/presence-gateway/error",))
    s.close()


def test_nul_in_a_posted_string_is_400(stack):
    gw = start_gateway(stack)
    room = uid("r")
    col = stack.collector([f"room/{room}/message", "council/+/answer", "room/+/presence"])
    cases = [(f"/api/rooms/{room}/messages", b'{"text":"a\\u0000b"}', "'text'"),
             (f"/api/rooms/{room}/messages", b'{"text":"ab","mentions":["ann\\u0000x"]}', "'mentions'"),
             ("/api/council/s1/answers", b'{"question_id":"q1","answer":"y\\u0000es"}', "'answer'"),
             ("/api/presence", b'{"session":"t\\u0000x","rooms":["' + room.encode() + b'"]}', "'session'"),
             ("/api/personas/ann/suggestion", b'{"room":"g","answer":"yes\\u0000"}', "'answer'")]
    for path, raw, field in cases:
        st, _, body = request(gw.http_port, "POST", path, None, {**JOEL, "Content-Type": "application/json"},
                              raw=raw)
        assert st == 400 and body["error"] == "bad_request" and field in body["detail"], (path, st, body)
        assert "NUL" in body["detail"] or field in ("'mentions'",), body
    time.sleep(scaled(1))
    assert not col.events(f"room/{room}/message") and not col.events("council/s1/answer")
    assert not col.events(f"room/{room}/presence")


def test_presence_idle_ms_uses_the_gateways_clock(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_PRESENCE_IDLE_MS=1500, VIGIL_GATEWAY_PRESENCE_AWAY_MS=60000)
    col = stack.collector(["room/+/presence"])
    room, room2 = uid("r"), uid("r")
    before = now()
    st, _, body = request(gw.http_port, "POST", "/api/presence",
                          {"session": "tab1", "rooms": [room], "idle_ms": 1000}, JOEL)
    after = now()
    assert st == 200 and body["status"] == "active", body
    ev = col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "active", timeout=scaled(5))
    assert before - 1000 <= ev["last_activity"] <= after - 1000, (before, ev, after)
    # longer ago than the idle threshold: idle at once, whatever the client's clock says
    st, _, body = request(gw.http_port, "POST", "/api/presence",
                          {"session": "tab2", "rooms": [room2], "idle_ms": 2000}, JOEL)
    assert st == 200 and body["status"] == "idle", body
    st, _, body = request(gw.http_port, "POST", "/api/presence",
                          {"session": "tab3", "rooms": [room], "idle_ms": 5, "last_activity": now()}, JOEL)
    assert st == 400 and "not both" in body["detail"], body
    st, _, body = request(gw.http_port, "POST", "/api/presence",
                          {"session": "tab3", "rooms": [room], "idle_ms": -5}, JOEL)
    assert st == 400 and "'idle_ms'" in body["detail"], body


def test_connected_id_resumes_a_client_that_saw_no_entry(stack):
    gw = start_gateway(stack)
    pub = stack.publisher()
    room = uid("r")
    path = f"/api/events?topics=room/{room}/message"
    s = SSE(gw.http_port, path, JOEL)
    c = s.next()
    assert c["event"] == "connected" and c["id"] == c["data"]["position"], c
    s.close()
    for i in range(3):  # published while the client was away
        pub.publish(*human(room, "joel", f"gap {i}"))
    time.sleep(scaled(0.5))
    r = SSE(gw.http_port, path, {**JOEL, "Last-Event-ID": c["id"]})
    c2 = r.next()
    assert c2["event"] == "connected" and c2["id"] == c["id"], c2  # where this client is
    got = r.until(lambda f: f["data"].get("text") == "gap 2")
    assert [f["data"]["text"] for f in got] == ["gap 0", "gap 1", "gap 2"], got
    r.close()


def test_a_cleared_snapshot_leaves_the_snapshot(stack):
    """A retained snapshot cleared (an empty retained message, as
    stall-resumer clears agent/{a}/assessment when an agent retires) is no
    longer in ?snapshot=1 and is not refused as a bad input. An empty
    payload on a topic that is not a snapshot is still refused (not_json)."""
    gw = start_gateway(stack)
    pub = stack.publisher()
    col = stack.collector()
    a = uid("agent-")
    topic = f"agent/{a}/assessment"
    pub.publish(topic, {"agent": a, "is_active": False, "ts": now()}, retain=True)

    def shown():
        return [f for f in snapshot(gw, "agents") if f["data"].get("topic") == topic]
    wait_until(shown, scaled(10), "the assessment kept")
    mark = col.mark()
    pub.publish(topic, b"", retain=True)
    wait_until(lambda: not shown(), scaled(10), "the cleared assessment gone")
    room = f"room/{uid('r')}/message"
    pub.publish(room, b"")
    err = col.wait_event("sys/presence-gateway/error", lambda e: e.get("topic") == room,
                         timeout=10, since=mark)
    assert err["reason"] == "not_json", err
    assert not col.find("sys/presence-gateway/error", lambda e: e.get("topic") == topic, since=mark)


def test_the_same_snapshot_delivered_again_is_logged_once(stack):
    """The gateway is a log: a retained snapshot the broker sends again (it
    does on every connect) is recognised by its payload's hash and not
    logged twice, although its topic takes clears (unlike the services
    that apply a meta or a config, whose identical snapshot after a clear
    applies again)."""
    gw = start_gateway(stack)
    pub = stack.publisher()
    a = uid("agent-")
    topic = f"agent/{a}/assessment"
    body = {"agent": a, "is_active": True, "ts": now()}
    pub.publish(topic, body, retain=True)
    wait_until(lambda: [f for f in snapshot(gw, "agents") if f["data"].get("topic") == topic],
               scaled(10), "the assessment kept")
    dups = gw.metric("vigil_duplicates_total") or 0
    pub.publish(topic, body, retain=True)  # the same bytes
    wait_until(lambda: (gw.metric("vigil_duplicates_total") or 0) == dups + 1, scaled(10),
               "the second delivery recognised")
