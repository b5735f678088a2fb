"""presence-gateway's limits speak (its README, "Limits"): each HTTP
refusal by a limit answers its status with the gateway's {"error",
"detail"} naming the bound and counts vigil_gateway_limit_refusals_total
{limit}, and a malformed request counts nothing; the SSE stream cap
answers 503 before the listener's connection limit would reset sockets;
a client too slow for its queue gets a last `dropped` frame and catches
up from the log; a resume from a position the log trimmed gets a
`trimmed` frame (none from before a log that never trimmed an entry), one
past the log's newest entry an `ahead` frame and the entries from the head
on; open streams of a log reset under them with lower ids get `ahead` and
the new log's entries; a 17th presence session names the one it pushed out;
the page says when it is present in only 32 of its rooms. Real
mosquitto, Redis and gateway process."""

import json
import socket
import time
from urllib.parse import quote

import pytest

import theater_browser
from conftest import human, uid
from gateway_client import SSE, auth, request, start_gateway
from harness import scaled, wait_until

JOEL = auth()


def refusals(gw, limit):
    return gw.metric("vigil_gateway_limit_refusals_total", limit=limit)


def assert_refused(gw, answer, status, limit, detail_has):
    """The answer is the gateway's error naming the bound, and the limit
    counted it once more than before (counts start at 0 in each test)."""
    st, _, body = answer
    assert st == status, answer
    assert set(body) == {"error", "detail"} and detail_has in body["detail"], body
    assert refusals(gw, limit) >= 1, limit


def test_http_limits_answer_name_and_count(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_MAX_BODY=70000)
    port = gw.http_port
    room = uid("r")
    # body larger than VIGIL_GATEWAY_MAX_BODY: 413
    assert_refused(gw, request(port, "POST", f"/api/rooms/{room}/messages", raw=b"{" + b" " * 70001 + b"}",
                           headers={**JOEL, "Content-Type": "application/json"}),
                   413, "body_bytes", "VIGIL_GATEWAY_MAX_BODY")
    # a text over VIGIL_MAX_PAYLOAD less 1024 (64512 bytes), inside the body limit
    assert_refused(gw, request(port, "POST", f"/api/rooms/{room}/messages", {"text": "x" * 64513}, JOEL),
                   400, "text_bytes", "longer than 64512 bytes")
    assert request(port, "POST", f"/api/rooms/{room}/messages", {"text": "x" * 64512}, JOEL)[0] == 202
    # mentions past 32
    assert_refused(gw, request(port, "POST", f"/api/rooms/{room}/messages",
                           {"text": "hi", "mentions": [f"p{i}" for i in range(33)]}, JOEL),
                   400, "mentions_per_message", "at most 32 persona ids (33 given)")
    # rooms a presence session may name
    assert_refused(gw, request(port, "POST", "/api/presence",
                           {"session": "tab", "rooms": [f"r{i}" for i in range(33)]}, JOEL),
                   400, "rooms_per_session", "at most 32 rooms a session (33 given)")
    # a page of the room log
    assert_refused(gw, request(port, "GET", f"/api/rooms/{room}/messages?limit=1001", headers=JOEL),
                   400, "messages_page", "1-1000 messages a page")
    # topic filters of one stream (a family counts as its filters)
    spec = ",".join(["personas"] * 4 + ["rooms"])
    assert_refused(gw, request(port, "GET", f"/api/events?topics={spec}", headers=JOEL),
                   400, "topic_filters", "at most 16 topic filters")
    assert_refused(gw, request(port, "GET", f"/api/events?topics=room/{'a' * 300}", headers=JOEL),
                   400, "topic_filter_bytes", "at most 255 bytes")
    # malformed requests are no limit's: 400, nothing counted
    for answer in (request(port, "GET", f"/api/rooms/{room}/messages?limit=0", headers=JOEL),
                   request(port, "POST", f"/api/rooms/{room}/messages", {"text": ""}, JOEL),
                   request(port, "GET", "/api/events?topics=bogus+family", headers=JOEL),
                   request(port, "GET", "/api/events?topics=rooms,bogus", headers=JOEL)):
        assert answer[0] == 400, answer
    # a well-formed filter that no carried topic matches would stay silent forever
    st, _, body = request(port, "GET", "/api/events?topics=room/%2B", headers=JOEL)
    assert st == 400 and "matches no topic the gateway carries" in body["detail"], body
    after = gw.metrics()
    counted = {ls["limit"]: v for n, ls, v in after if n == "vigil_gateway_limit_refusals_total"}
    assert counted == {"body_bytes": 1, "text_bytes": 1, "mentions_per_message": 1, "rooms_per_session": 1,
                       "messages_page": 1, "topic_filters": 1, "topic_filter_bytes": 1}, counted
    # an id longer than 64 in the path: the id rule (400), not "no such endpoint"
    st, _, body = request(port, "POST", f"/api/rooms/{'r' * 200}/messages", {"text": "hi"}, JOEL)
    assert st == 400 and "1-64 characters" in body["detail"], body
    st, _, body = request(port, "POST", f"/api/council/{'s' * 65}/answers", {"question_id": "q", "answer": "a"}, JOEL)
    assert st == 400 and "1-64 characters" in body["detail"], body
    # a bearer token past 256 characters is told why
    st, _, body = request(port, "GET", "/api/whoami", headers={"Authorization": "Bearer " + "t" * 257})
    assert st == 401 and "8-256 printable characters" in body["detail"], body


def test_a_text_that_escapes_past_the_payload_limit_is_refused(stack):
    """A text within VIGIL_MAX_PAYLOAD less 1024 whose JSON escaping
    (every newline is two bytes) takes the published room/{r}/message past
    VIGIL_MAX_PAYLOAD is a 400 naming the bound (payload_bytes): it was
    answered 202 and published, and every consumer, the gateway's own log
    included, refused it as oversize."""
    gw = start_gateway(stack, VIGIL_MAX_PAYLOAD=4096)
    col = stack.collector(["room/+/message", "sys/+/error"])
    room = uid("r")
    lines = "\n" * 3000  # 3000 bytes (under 3072), 6000 in JSON
    answer = request(gw.http_port, "POST", f"/api/rooms/{room}/messages", {"text": lines, "id": "long-1"}, JOEL)
    assert_refused(gw, answer, 400, "payload_bytes", "VIGIL_MAX_PAYLOAD")
    # (an answer must say something: newlines alone are a blank answer)
    answer = request(gw.http_port, "POST", "/api/council/s1/answers", {"question_id": "q1", "answer": "y" + lines[1:]}, JOEL)
    assert_refused(gw, answer, 400, "payload_bytes", "VIGIL_MAX_PAYLOAD")
    assert refusals(gw, "payload_bytes") == 2
    # what fits is published and logged, as every 202
    text = "y\n" * 1000  # 2000 bytes, 3000 in JSON
    st, _, body = request(gw.http_port, "POST", f"/api/rooms/{room}/messages", {"text": text, "id": "fits-1"}, JOEL)
    assert st == 202, body
    col.wait_event(f"room/{room}/message", lambda j: j["id"] == "fits-1", timeout=10)
    assert [e["id"] for e in col.events(f"room/{room}/message")] == ["fits-1"]
    assert col.events("sys/+/error") == []


def test_rate_limit_names_itself(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_RATE=5)
    answers = [request(gw.http_port, "GET", "/api/whoami", headers=JOEL) for _ in range(30)]
    limited = [a for a in answers if a[0] == 429]
    assert limited, [a[0] for a in answers]
    assert_refused(gw, limited[0], 429, "requests_per_second", "VIGIL_GATEWAY_RATE")
    assert int(limited[0][1]["retry-after"]) >= 1
    assert refusals(gw, "requests_per_second") == len(limited)



def test_a_rate_below_one_a_second_still_lets_one_request_through(stack):
    """VIGIL_GATEWAY_RATE=0.5 is one request every 2 s per token: the first
    passes, the next is 429 with Retry-After 2-3 s (the burst was the rate,
    0.5 of a request, so every request of every token was 429 for ever)."""
    gw = start_gateway(stack, VIGIL_GATEWAY_RATE=0.5)
    st, _, body = request(gw.http_port, "GET", "/api/whoami", headers=JOEL)
    assert st == 200 and body == {"user": "joel"}, (st, body)
    answer = request(gw.http_port, "GET", "/api/whoami", headers=JOEL)
    assert_refused(gw, answer, 429, "requests_per_second", "VIGIL_GATEWAY_RATE")
    assert 2 <= int(answer[1]["retry-after"]) <= 3, answer[1]
    # another token has its own bucket
    assert request(gw.http_port, "GET", "/api/whoami", headers=auth("tok-ann-0123456789"))[0] == 200


def test_failed_authentications_are_limited_per_address(stack):
    """Token guessing is throttled per client address: after a burst of 10
    failures a bad token gets 429 with Retry-After (counted), while a valid
    token from the same address still gets through; after the refill a bad
    token gets 401 again."""
    gw = start_gateway(stack, VIGIL_GATEWAY_AUTH_FAIL_RATE=0.5)
    port = gw.http_port
    bad = auth("tok-guess-0123456789")
    statuses = []
    for _ in range(30):
        answer = request(port, "GET", "/api/whoami", headers=bad)
        statuses.append(answer[0])
        if answer[0] == 429:
            break
    # the burst of 10 (one more if a slow host let the bucket refill meanwhile)
    assert statuses[-1] == 429 and 10 <= len(statuses) - 1 <= 11, statuses
    assert set(statuses[:-1]) == {401}, statuses
    assert_refused(gw, answer, 429, "auth_failures_per_second", "VIGIL_GATEWAY_AUTH_FAIL_RATE")
    assert answer[2]["error"] == "rate_limited"
    retry = int(answer[1]["retry-after"])
    assert retry >= 1
    # /login guesses count against the same bucket
    assert request(port, "GET", "/login?token=tok-guess-0123456789")[0] == 429
    # a valid token from the same address is never held by it
    for _ in range(3):
        st, _, body = request(port, "GET", "/api/whoami", headers=JOEL)
        assert st == 200 and body == {"user": "joel"}, body
    assert gw.metric("vigil_gateway_auth_failures_total") == len(statuses) + 1
    assert refusals(gw, "auth_failures_per_second") == 2
    time.sleep(retry + 0.2)
    st, h, body = request(port, "GET", "/api/whoami", headers=bad)
    assert st == 401 and body["error"] == "unauthorized" and "www-authenticate" in h, (st, body)


def test_stream_cap_answers_503_and_keeps_room_for_requests(stack):
    """VIGIL_GATEWAY_MAX_CLIENTS=12: 8 streams (4 kept for requests); the
    9th is a 503 with its limit, while requests and health checks still
    get through (past 12 connections the listener would reset them
    without an answer)."""
    gw = start_gateway(stack, VIGIL_GATEWAY_MAX_CLIENTS=12)
    streams = [SSE(gw.http_port, "/api/events?topics=all", JOEL) for _ in range(8)]
    for s in streams:
        assert s.status == 200 and s.next()["event"] == "connected"
    st, h, body = request(gw.http_port, "GET", "/api/events?topics=all", headers=JOEL)
    assert_refused(gw, (st, h, body), 503, "sse_streams", "8 SSE streams are open")
    assert h["retry-after"] == "5"
    assert refusals(gw, "sse_streams") == 1
    for _ in range(5):
        assert request(gw.http_port, "GET", "/api/whoami", headers=JOEL)[0] == 200
        assert gw.is_ready()
    # a stream that leaves frees its place (noticed within the 2 s probe)
    streams.pop().close()
    wait_until(lambda: gw.metric("vigil_gateway_sse_clients") == 7, scaled(10), "the closed stream noticed")
    again = SSE(gw.http_port, "/api/events?topics=all", JOEL)
    assert again.status == 200 and again.next()["event"] == "connected"
    for s in streams + [again]:
        s.close()


def read_all(sock, timeout):
    """The response until its end (the last chunk, or the peer closing):
    (head, de-chunked body, whether the last chunk came). An SSE frame's
    chunk ends in "\n\n\r\n", so only the last chunk ends in "0\r\n\r\n"."""
    data = b""
    deadline = time.monotonic() + timeout
    sock.settimeout(1)
    while not data.endswith(b"\r\n0\r\n\r\n"):
        if time.monotonic() > deadline:
            raise AssertionError(f"the stream did not end within {timeout}s")
        try:
            d = sock.recv(1 << 20)
        except socket.timeout:
            continue
        if not d:
            break
        data += d
    head, _, rest = data.partition(b"\r\n\r\n")
    body, ended = b"", False
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            ended = True
            break
        body, rest = body + rest[:size], rest[size + 2:]
    return head, body, ended


def frames_of(body):
    out = []
    for raw in body.split(b"\n\n"):
        f = {}
        for ln in raw.decode("utf-8").split("\n"):
            if ln and not ln.startswith(":"):
                k, _, v = ln.partition(": ")
                f[k] = v
        if "data" in f:
            out.append(f)
    return out


def flooded_reader(stack, gw, room):
    """A raw stream of room/{room}/# with a tiny receive buffer, then 250
    room states of 40 kB each published: 10 MB in all, more than the socket
    buffers hold. (the socket, the number of states)"""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", gw.http_port))
    sock.sendall(f"GET /api/events?topics=room/{room}/%23 HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: {JOEL['Authorization']}\r\n\r\n".encode())
    wait_until(lambda: gw.metric("vigil_gateway_sse_clients") == 1, scaled(10), "the reader joined")
    big = "x" * 40000
    n = 250
    stack.publisher().publish_many(
        [(f"room/{room}/state", {"room": room, "pad": big, "n": i, "ts": int(time.time() * 1000)})
         for i in range(n)], timeout=120)
    return sock, n


def test_slow_client_is_told_it_was_dropped_and_catches_up(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_CLIENT_QUEUE=4, VIGIL_GATEWAY_PING_MS=60000,
                       VIGIL_GATEWAY_CLIENT_STALL_MS=1000)
    room = uid("r")
    # a client that stops reading: no reads until dropped
    slow, n = flooded_reader(stack, gw, room)
    wait_until(lambda: refusals(gw, "sse_client_queue") == 1, scaled(60), "the slow client dropped")
    head, body, ended = read_all(slow, scaled(60))
    slow.close()
    assert b" 200 " in head.split(b"\r\n")[0]
    frames = frames_of(body)
    last = frames[-1]
    assert last["event"] == "dropped" and "id" not in last, last
    told = json.loads(last["data"])
    assert told["limit"] == "sse_client_queue" and told["queue"] == 4 and "Last-Event-ID" in told["detail"]
    assert ended, "the stream ends cleanly after the dropped frame"
    got = [json.loads(f["data"])["n"] for f in frames if f["event"] == "room.state"]
    assert got == list(range(len(got))) and len(got) < n, got[-3:]
    assert gw.metric("vigil_gateway_sse_dropped_total") == 1
    # it reconnects with the last id it got and misses nothing (once the
    # burst is logged: live frames past its queue while its backlog goes
    # out would drop it again, after the backlog)
    log = stack.redis.client()
    wait_until(lambda: log.xlen(stack.prefix + "presence-gateway:log") >= n, scaled(60), "the burst logged")
    after = [f["id"] for f in frames if f.get("id")][-1]
    again = SSE(gw.http_port, f"/api/events?topics=room/{room}/%23", {**JOEL, "Last-Event-ID": after}, timeout=30)
    assert again.next()["event"] == "connected"
    rest = again.until(lambda f: f["data"].get("n") == n - 1, timeout=60)
    assert [f["data"]["n"] for f in rest] == list(range(len(got), n))
    again.close()


def test_a_slow_reader_that_keeps_reading_is_not_dropped(stack):
    """A reader slower than the stream falls more than its queue behind;
    it is not dropped while it keeps reading: it catches up from the log
    and gets every entry, in order, in one stream."""
    gw = start_gateway(stack, VIGIL_GATEWAY_CLIENT_QUEUE=4, VIGIL_GATEWAY_PING_MS=60000,
                       VIGIL_GATEWAY_CLIENT_STALL_MS=int(scaled(3000)))
    room = uid("r")
    slow, n = flooded_reader(stack, gw, room)
    data = b""
    deadline = time.monotonic() + scaled(120)
    slow.settimeout(1)
    last = f'"n":{n - 1},'.encode()
    while last not in data or b"\n\n" not in data[data.find(last):]:
        assert time.monotonic() < deadline, "the slow reader did not get everything"
        try:
            d = slow.recv(64 * 1024)
        except socket.timeout:
            continue
        assert d, "the stream ended"
        data += d
        assert b"event: dropped" not in data, "the slow reader was dropped"
        time.sleep(0.005)  # slower than the gateway writes
    slow.close()
    rest, body = data.partition(b"\r\n\r\n")[2], b""
    while b"\r\n" in rest:
        size_line, _, after = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if len(after) < size:
            break  # the last chunk came in part
        body, rest = body + after[:size], after[size + 2:]
    frames = frames_of(body[:body.rfind(b"\n\n") + 2])
    assert not [f for f in frames if f["event"] == "dropped"]
    got = [json.loads(f["data"])["n"] for f in frames if f["event"] == "room.state"]
    assert got == list(range(n)), (len(got), got[:5], got[-5:])
    assert gw.metric("vigil_gateway_sse_dropped_total") == 0


def assert_resumes_without_notice(gw, path, pos, limit, count):
    """A resume from a position the log keeps, with an entry after it:
    `connected`, then that entry, and the limit still counted `count`."""
    k = SSE(gw.http_port, path, {**JOEL, "Last-Event-ID": pos})
    assert k.next()["event"] == "connected"
    assert k.next()["event"] == "room.message"
    k.close()
    assert refusals(gw, limit) == count


def assert_a_phase_comes_next(pub, stream):
    """A council phase published now is the next frame of a deliberations
    stream (nothing before it but pings)."""
    session = uid("s")
    pub.publish(f"council/{session}/event", {"id": f"{session}:phase:1", "type": "phase", "session": session,
                                             "ts": int(time.time() * 1000)})
    got = stream.until(lambda f: f["data"].get("session") == session, timeout=10)
    assert [f["data"]["type"] for f in got] == ["phase"], got


def first_message(gw, pub):
    """A new room's stream path, an open stream of it, the room, and the
    log position of its first message, m0."""
    room = uid("r")
    path = f"/api/events?topics=room/{room}/message"
    s = SSE(gw.http_port, path, JOEL)
    s.next()
    pub.publish(*human(room, "joel", "m0"))
    return path, s, room, s.until(lambda f: f["data"].get("text") == "m0")[-1]["id"]


def test_resume_from_a_trimmed_position_is_told(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_LOG_MAXLEN=10)
    pub = stack.publisher()
    path, s, room, first = first_message(gw, pub)
    # MAXLEN ~ 10 trims whole nodes (at most 100 entries): 300 more trim m0
    pub.publish_many([human(room, "joel", f"f{i}") for i in range(300)], timeout=120)
    s.until(lambda f: f["data"].get("text") == "f299", timeout=60)  # all logged
    s.close()
    z = SSE(gw.http_port, path + "&since=0", JOEL)
    z.next()
    frames = z.until(lambda f: f["data"].get("text") == "f299", timeout=60)
    z.close()
    assert frames[0]["event"] == "room.message" and frames[0]["data"]["text"] != "m0", frames[0]
    oldest = frames[0]["id"]
    # since=0 is "whatever is kept": no notice
    assert refusals(gw, "log_entries") == 0
    r = SSE(gw.http_port, path, {**JOEL, "Last-Event-ID": first})
    assert r.next()["event"] == "connected"
    t = r.next()
    assert t["event"] == "trimmed" and t["id"] is None, t
    assert t["data"]["since"] == first and t["data"]["oldest"] == oldest and t["data"]["limit"] == "log_entries"
    assert "VIGIL_GATEWAY_LOG_MAXLEN" in t["data"]["detail"]
    nxt = r.next()
    assert nxt["id"] == oldest, nxt
    r.close()
    assert refusals(gw, "log_entries") == 1
    # a position still kept: no notice
    assert_resumes_without_notice(gw, path, oldest, "log_entries", 1)
    # the deliberations stream says it too, unnamed (for onmessage), with type
    c = SSE(gw.http_port, "/api/autonomous/deliberations/live", {**JOEL, "Last-Event-ID": first})
    assert c.next()["data"]["type"] == "connected"
    t = c.next()
    assert t["event"] == "message" and t["id"] is None and t["raw"].startswith('data: {"type":"trimmed",'), t
    assert t["data"]["since"] == first and t["data"]["oldest"] == oldest and t["data"]["limit"] == "log_entries"
    c.close()
    assert refusals(gw, "log_entries") == 2
    # a position from before the log's first entry ever: the entries the log
    # trimmed are still ones this client never saw, so it is told
    r = SSE(gw.http_port, path, {**JOEL, "Last-Event-ID": "1-0"})
    assert r.next()["event"] == "connected"
    t = r.next()
    assert t["event"] == "trimmed" and t["data"]["since"] == "1-0" and t["data"]["oldest"] == oldest, t
    r.close()
    assert refusals(gw, "log_entries") == 3


def test_resume_from_before_a_log_that_never_trimmed_replays_it_without_notice(stack):
    """`trimmed` means entries the client had not seen were dropped. A log
    that never lost an entry (a fresh one, or one recreated after a
    reset) has dropped nothing: a resume from before its first entry (an
    id from before the log existed, `0-1`) replays it from the start,
    without a `trimmed` frame, on both streams."""
    gw = start_gateway(stack)
    pub = stack.publisher()
    path, s, room, m0 = first_message(gw, pub)
    pub.publish(*human(room, "joel", "m1"))
    s.until(lambda f: f["data"].get("text") == "m1")
    s.close()
    for since in ("0-1", "1-0", "1000-0"):
        for hdrs, p in (({**JOEL, "Last-Event-ID": since}, path), (JOEL, path + "&since=" + since)):
            r = SSE(gw.http_port, p, hdrs)
            c = r.next()
            assert c["event"] == "connected" and c["id"] == since, c
            got = r.until(lambda f: f["data"].get("text") == "m1")
            assert [(f["event"], f["data"].get("text")) for f in got] == [
                ("room.message", "m0"), ("room.message", "m1")], (since, got)
            assert got[0]["id"] == m0
            r.close()
    d = SSE(gw.http_port, "/api/autonomous/deliberations/live", {**JOEL, "Last-Event-ID": "0-1"})
    assert d.next()["data"]["type"] == "connected"
    assert_a_phase_comes_next(pub, d)
    d.close()
    assert refusals(gw, "log_entries") == 0


FUTURE = "9999999999999-0"


def test_resume_past_the_log_newest_entry_is_told_and_served_from_the_head(stack):
    """A Last-Event-ID or since= past the newest entry of the log (a log
    that lost its latest entries or was reset, an id typed by hand) is
    not a silent stream until the log gets there: the client gets an
    `ahead` frame naming the position and the newest entry, `connected`
    carries that entry (what a reconnect sends back), and the next entry
    logged reaches it. A malformed position is a 400."""
    gw = start_gateway(stack)
    pub = stack.publisher()
    path, s, room, m0 = first_message(gw, pub)
    s.close()
    for hdrs, p in (({**JOEL, "Last-Event-ID": FUTURE}, path), (JOEL, path + "&since=" + FUTURE)):
        r = SSE(gw.http_port, p, hdrs)
        c = r.next()
        assert c["event"] == "connected", c
        a = r.next()
        assert a["event"] == "ahead" and a["id"] is None, a
        assert a["data"]["since"] == FUTURE and a["data"]["limit"] == "log_position", a
        newest = a["data"]["newest"]
        # the newest entry of the log, at or after m0 (the gateway logs its own status too)
        key = lambda x: tuple(map(int, x.split("-")))
        assert key(m0) <= key(newest) < key(FUTURE), (m0, newest)
        assert c["id"] == newest, (c, newest)
        assert "head" in a["data"]["detail"], a
        text = uid("live")
        pub.publish(*human(room, "joel", text))
        got = r.until(lambda f: f["data"].get("text") == text, timeout=10)
        assert [f["event"] for f in got] == ["room.message"], got
        assert key(got[0]["id"]) > key(newest)
        r.close()
    assert refusals(gw, "log_position") == 2
    # the deliberations stream says it too, unnamed, with type
    c = SSE(gw.http_port, "/api/autonomous/deliberations/live", {**JOEL, "Last-Event-ID": FUTURE})
    assert c.next()["data"]["type"] == "connected"
    a = c.next()
    assert a["event"] == "message" and a["raw"].startswith('data: {"type":"ahead",'), a
    assert_a_phase_comes_next(pub, c)
    c.close()
    assert refusals(gw, "log_position") == 3
    # a position within the log is served as before, without a notice
    assert_resumes_without_notice(gw, path, m0, "log_position", 3)
    # malformed positions: a clear 400, on both streams
    for bad in ("nope", "1-2-3", "-1", "12-", "99999999999999999999999-0", "1.5-0"):
        for p in (path, "/api/autonomous/deliberations/live"):
            st, _, body = request(gw.http_port, "GET", p, headers={**JOEL, "Last-Event-ID": bad})
            assert st == 400 and body["error"] == "bad_request" and "Last-Event-ID" in body["detail"], (bad, body)
            st, _, body = request(gw.http_port, "GET", p + ("&" if "?" in p else "?") + "since=" + quote(bad),
                                  headers=JOEL)
            assert st == 400 and "since" in body["detail"], (bad, body)


def test_a_log_reset_under_open_streams_is_told_and_its_new_entries_delivered(stack):
    """A running gateway whose log is reset (Redis flushed, or restarted
    without its data) while the new log's ids are lower than the last one
    the fan-out read (a clock that went back): the open streams are not
    left silent until the log gets back there. Each gets an `ahead` frame
    naming the position it had reached and the new log's newest entry,
    then the new log's entries from its start; new streams too."""
    gw = start_gateway(stack)
    pub = stack.publisher()
    path, s, room, m0 = first_message(gw, pub)
    d = SSE(gw.http_port, "/api/autonomous/deliberations/live", JOEL)
    assert d.next()["data"]["type"] == "connected"
    log = stack.redis.client()
    key = stack.prefix + "presence-gateway:log"
    # an entry a day ahead: what the fan-out read before the clock went back
    future = f"{int(time.time() * 1000) + 86_400_000}-0"
    body = {"id": uid("fut"), "room": room, "sender": "joel", "sender_type": "human", "text": "future",
            "ts": int(time.time() * 1000)}
    log.xadd(key, {"m": f"room/{room}/message\nroom.message\n{json.dumps(body)}"}, id=future)
    assert s.until(lambda f: f["data"].get("text") == "future")[-1]["id"] == future
    log.delete(key)  # the log is gone; what is logged next has smaller ids
    pub.publish(*human(room, "joel", "after"))
    got = s.until(lambda f: f["data"].get("text") == "after", timeout=15)
    assert [f["event"] for f in got] == ["ahead", "room.message"], got
    a = got[0]
    key_of = lambda x: tuple(map(int, x.split("-")))
    # since: the position the fan-out had read (future, or an entry the
    # gateway logged after it, which Redis numbered future-1, -2, ...)
    assert a["id"] is None and key_of(a["data"]["since"]) >= key_of(future), a
    assert a["data"]["limit"] == "log_position" and "reset" in a["data"]["detail"], a
    assert key_of(got[1]["id"]) < key_of(future), got[1]
    # the deliberations stream is told too, unnamed, and gets what follows
    a = d.until(lambda f: f["data"].get("type") == "ahead", timeout=15)[-1]
    assert a["raw"].startswith('data: {"type":"ahead",') and key_of(a["data"]["since"]) >= key_of(future), a
    assert_a_phase_comes_next(pub, d)
    d.close()
    # the open stream goes on with the new log, and a new one starts with it
    pub.publish(*human(room, "joel", "later"))
    assert [f["data"].get("text") for f in s.until(lambda f: f["data"].get("text") == "later")] == ["later"]
    n = SSE(gw.http_port, path, JOEL)
    assert n.next()["event"] == "connected"
    pub.publish(*human(room, "joel", "newest"))
    assert [f["data"].get("text") for f in n.until(lambda f: f["data"].get("text") == "newest")] == ["newest"]
    n.close()
    s.close()
    assert refusals(gw, "log_position") >= 2


def test_a_17th_presence_session_names_the_one_it_pushed_out(stack):
    gw = start_gateway(stack)
    room = uid("r")
    for i in range(16):
        st, _, body = request(gw.http_port, "POST", "/api/presence", {"session": f"tab{i}", "rooms": [room]}, JOEL)
        assert st == 200 and body["forgotten"] == [], body
    st, _, body = request(gw.http_port, "POST", "/api/presence", {"session": "tab16", "rooms": [room]}, JOEL)
    assert st == 200 and body["forgotten"] == ["tab0"], body
    assert refusals(gw, "sessions_per_user") == 1
    # a known session beating again pushes nobody out
    st, _, body = request(gw.http_port, "POST", "/api/presence", {"session": "tab16", "rooms": [room]}, JOEL)
    assert st == 200 and body["forgotten"] == [], body
    assert refusals(gw, "sessions_per_user") == 1


@pytest.mark.skipif(not theater_browser.available(),
                    reason="chromium, chromium-driver and python3-selenium are needed (scripts/install-deps)")
def test_page_says_it_is_present_in_32_of_its_rooms(stack):
    from selenium.webdriver.common.by import By
    gw = start_gateway(stack)
    col = stack.collector(["room/+/presence"])
    tag = uid("p")[-6:]
    rooms = [f"r{i}-{tag}" for i in range(33)]
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        d.get(f"http://127.0.0.1:{gw.http_port}/?rooms={','.join(rooms)}")
        wait_until(lambda: "present in the first 32 of 33 rooms" in d.find_element(By.ID, "notice").text,
                   scaled(20), "the page's notice")
        col.wait_event(f"room/{rooms[31]}/presence", lambda j: j["status"] == "active", timeout=scaled(10))
        assert col.events(f"room/{rooms[32]}/presence") == []
    finally:
        b.close()


def test_a_refused_topic_filter_is_quoted_cut_between_characters(stack):
    """A refused topic filter is quoted to its first 64 bytes: cut there
    between characters, so the JSON answer stays valid UTF-8 (a cut inside
    "é" answered a lone 0xC3 byte)."""
    gw = start_gateway(stack)
    # "room/" and 40 "é": byte 64 falls inside the 30th "é"
    st, _, body = request(gw.http_port, "GET", "/api/events?topics=room/" + "%C3%A9" * 40, headers=JOEL)
    assert st == 400, body
    assert body["detail"].startswith("'room/" + "é" * 29 + "' is neither a topic family"), body
