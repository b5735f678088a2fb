"""presence-gateway over HTTP: presence beats and their statuses,
messages in and out, council answers, auth, CORS, size and rate limits,
every error code. Real mosquitto, Redis and gateway process."""

import json
import threading
import time
from urllib.parse import quote

import pytest

from conftest import ai, human, uid
from gateway_client import SSE, TOKENS, auth, frame_name, request, start_gateway
from harness import scaled, wait_until

JOEL = auth()


def presence_events(col, room, since=0):
    return col.events(f"room/{room}/presence", since=since)


def test_presence_beats_status_changes_and_expiry(stack):
    """active on the first beat; idle after IDLE_MS without activity; away
    after AWAY_MS; a second session keeps the room active; when beats stop
    the session is gone and the room goes away; each change once."""
    gw = start_gateway(stack, VIGIL_GATEWAY_PRESENCE_IDLE_MS=1500, VIGIL_GATEWAY_PRESENCE_AWAY_MS=3000,
                       VIGIL_GATEWAY_PRESENCE_EXPIRE_MS=6000)
    col = stack.collector(["room/+/presence"])
    room = uid("r")
    now = int(time.time() * 1000)
    st, _, body = request(gw.http_port, "POST", "/api/presence",
                          {"session": "tab1", "rooms": [room], "status": "active", "last_activity": now}, JOEL)
    assert st == 200, body
    assert body["status"] == "active" and body["user"] == "joel"
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "active", timeout=scaled(5))
    # no new activity: idle after 1.5 s, away after 3 s (timers, no beats needed)
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "idle", timeout=scaled(6))
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "away", timeout=scaled(6))
    ev = presence_events(col, room)
    print("\nEV", [(e["id"], e["status"], e["last_activity"], e["ts"]) for e in ev])
    assert [e["status"] for e in ev] == ["active", "idle", "away"], ev
    for e in ev:
        assert e["user"] == "joel" and e["session"] == "tab1" and e["last_activity"] == now
    # activity again -> active; beats without new activity keep it (no repeat;
    # only newer activity is republished, at most every IDLE_MS / 4)
    mark = col.mark()
    again = int(time.time() * 1000)
    for _ in range(3):
        st, _, _ = request(gw.http_port, "POST", "/api/presence",
                           {"session": "tab1", "rooms": [room], "last_activity": again}, JOEL)
        assert st == 200
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "active", timeout=scaled(5), since=mark)
    time.sleep(0.5)
    assert [e["status"] for e in presence_events(col, room, since=mark)] == ["active"]
    # heartbeats stop: after EXPIRE_MS the session is gone -> away (once)
    mark = col.mark()
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "away", timeout=scaled(12), since=mark)
    stats = [e["status"] for e in presence_events(col, room, since=mark)]
    assert stats[-1] == "away" and stats.count("away") == 1, stats
    from conftest import validate_outputs
    assert validate_outputs(col, ("room/+/presence",)) >= 5


def test_presence_best_session_and_rooms_left(stack):
    gw = start_gateway(stack)
    col = stack.collector(["room/+/presence"])
    r1, r2 = uid("r"), uid("r")
    now = int(time.time() * 1000)
    assert request(gw.http_port, "POST", "/api/presence", {"session": "a", "rooms": [r1, r2]}, JOEL)[0] == 200
    col.wait_count(f"room/+/presence", 2, timeout=scaled(5), key="id")
    # another tab claims idle: the room stays active (best of sessions)
    assert request(gw.http_port, "POST", "/api/presence",
                   {"session": "b", "rooms": [r1], "status": "idle", "last_activity": now}, JOEL)[0] == 200
    # tab a leaves r2 -> r2 away; r1 still active through a
    mark = col.mark()
    assert request(gw.http_port, "POST", "/api/presence", {"session": "a", "rooms": [r1]}, JOEL)[0] == 200
    col.wait_event(f"room/{r2}/presence", lambda j: j["status"] == "away", timeout=scaled(5), since=mark)
    time.sleep(0.3)
    assert presence_events(col, r1, since=mark) == []
    # the client says away (its user left): away even with recent activity
    assert request(gw.http_port, "POST", "/api/presence",
                   {"session": "a", "rooms": [r1], "status": "away"}, JOEL)[0] == 200
    col.wait_event(f"room/{r1}/presence", lambda j: j["status"] == "idle", timeout=scaled(5), since=mark)


def test_messages_post_and_get_through_chat_router(stack):
    gw = start_gateway(stack)
    stack.service("chat-router")
    col = stack.collector(["room/+/message"])
    room = uid("r")
    st, _, body = request(gw.http_port, "POST", f"/api/rooms/{room}/messages", {"text": "hello from the web"}, JOEL)
    assert st == 202, body
    m = col.wait_event(f"room/{room}/message", timeout=scaled(5))
    assert m["sender"] == "joel" and m["sender_type"] == "human" and m["text"] == "hello from the web"
    assert m["id"] == body["id"]
    # the same client id twice is one message
    st, _, b2 = request(gw.http_port, "POST", f"/api/rooms/{room}/messages", {"text": "once", "id": "cli-1"}, JOEL)
    st3, _, b3 = request(gw.http_port, "POST", f"/api/rooms/{room}/messages", {"text": "once", "id": "cli-1"}, JOEL)
    assert st == 202 and st3 == 202 and b3["duplicate"] is True and b2["duplicate"] is False
    # the gateway's outbox publishes asynchronously: wait for it before
    # publishing directly, so the log order is known
    col.wait_event(f"room/{room}/message", lambda j: j["text"] == "once", timeout=scaled(5))
    stack.publisher().publish(*human(room, "ann", "from mqtt"))

    def log():
        s, _, b = request(gw.http_port, "GET", f"/api/rooms/{room}/messages", headers=JOEL)
        assert s == 200
        return b["messages"] if len(b["messages"]) >= 3 else None
    msgs = wait_until(log, scaled(10), "three messages in the room log")
    assert [x["text"] for x in msgs] == ["hello from the web", "once", "from mqtt"]
    # since= pages forward; limit bounds
    s, _, b = request(gw.http_port, "GET", f"/api/rooms/{room}/messages?since={msgs[0]['log_id']}&limit=1", headers=JOEL)
    assert s == 200 and [x["text"] for x in b["messages"]] == ["once"] and b["next"] == msgs[1]["log_id"]
    s, _, b = request(gw.http_port, "GET", f"/api/rooms/{room}/messages?limit=2", headers=JOEL)
    assert [x["text"] for x in b["messages"]] == ["once", "from mqtt"]
    # an empty page still says where to page on from: a room with no message
    # yet from its beginning, which then reads its first message
    empty = uid("empty")
    s, _, b = request(gw.http_port, "GET", f"/api/rooms/{empty}/messages", headers=JOEL)
    assert s == 200 and b == {"room": empty, "messages": [], "next": "0-0"}, b
    s, _, b = request(gw.http_port, "GET", f"/api/rooms/{room}/messages?since={b['next']}&limit=1",
                      headers=JOEL)
    assert [x["text"] for x in b["messages"]] == ["hello from the web"]
    assert time.sleep(0.3) is None and len(col.events(f"room/{room}/message")) == 3
    from conftest import validate_outputs
    validate_outputs(col, ("room/+/message",))


def test_messages_since_past_the_room_log(stack):
    """GET /api/rooms/{r}/messages?since= past the room log's newest
    message (the log lost its latest entries or was reset, an id typed by
    hand): an empty page whose `next` is that newest message, not the since
    given, so a client paging on reads what comes next instead of waiting
    for the log to reach its position; `ahead` says so. At the newest
    message itself nothing changes. A malformed since is a 400."""
    gw = start_gateway(stack)
    stack.service("chat-router")
    col = stack.collector(["room/+/message"])
    room = uid("r")
    pub = stack.publisher()
    pub.publish(*human(room, "ann", "first"))

    def log():
        s, _, b = request(gw.http_port, "GET", f"/api/rooms/{room}/messages", headers=JOEL)
        return b["messages"] if s == 200 and b["messages"] else None
    newest = wait_until(log, scaled(10), "the message in the room log")[-1]["log_id"]
    future = "9999999999999-0"
    s, _, b = request(gw.http_port, "GET", f"/api/rooms/{room}/messages?since={future}", headers=JOEL)
    assert s == 200 and b["messages"] == [] and b["next"] == newest, b
    assert b["ahead"]["since"] == future and b["ahead"]["newest"] == newest, b
    assert b["ahead"]["limit"] == "log_position" and "next is the newest message" in b["ahead"]["detail"], b
    assert gw.metric("vigil_gateway_limit_refusals_total", limit="log_position") == 1
    # paging on from next reads the message logged after it
    pub.publish(*human(room, "ann", "second"))
    col.wait_event(f"room/{room}/message", lambda j: j["text"] == "second", timeout=scaled(5))

    def page():
        s, _, b2 = request(gw.http_port, "GET", f"/api/rooms/{room}/messages?since={b['next']}", headers=JOEL)
        return b2 if s == 200 and b2["messages"] else None
    b2 = wait_until(page, scaled(10), "the second message after next")
    assert [m["text"] for m in b2["messages"]] == ["second"] and "ahead" not in b2, b2
    # at the newest message: an empty page, next the since given, no notice
    last = b2["next"]
    s, _, b3 = request(gw.http_port, "GET", f"/api/rooms/{room}/messages?since={last}", headers=JOEL)
    assert s == 200 and b3 == {"room": room, "messages": [], "next": last}, b3
    # a room with no message: since past it pages on from the beginning
    empty = uid("empty")
    s, _, b4 = request(gw.http_port, "GET", f"/api/rooms/{empty}/messages?since={future}", headers=JOEL)
    assert s == 200 and b4["messages"] == [] and b4["next"] == "0-0" and b4["ahead"]["newest"] == "0-0", b4
    assert gw.metric("vigil_gateway_limit_refusals_total", limit="log_position") == 2
    # malformed: 400 naming since
    for bad in ("yesterday", "1-2-3", "-1", "12-", "99999999999999999999999-0", "1.5-0", "%2012-0"):
        s, _, b5 = request(gw.http_port, "GET", f"/api/rooms/{room}/messages?since={bad}", headers=JOEL)
        assert s == 400 and b5["error"] == "bad_request" and "since" in b5["detail"], (bad, b5)


def test_overlong_and_surrogate_utf8_is_400_and_never_published(stack):
    """Text chat-router and dormancy-monitor would refuse (an overlong
    encoding, an encoded UTF-16 surrogate) is a 400 at the gateway, never a
    2xx for an event nobody takes: the gateway checks UTF-8 by libshared's
    one strict rule, the rule of every service's intake."""
    gw = start_gateway(stack)
    col = stack.collector(["room/+/message", "room/+/presence", "council/+/answer"])
    room = uid("r")
    bad = {"overlong": b"\xc0\xaf", "surrogate": b"\xed\xa0\x80"}
    for name, raw in bad.items():
        posts = [
            (f"/api/rooms/{room}/messages", b'{"text": "a' + raw + b'b"}'),
            (f"/api/rooms/{room}/messages", b'{"text": "ok", "id": "m-' + raw + b'"}'),
            ("/api/presence", b'{"session": "s' + raw + b'", "rooms": ["' + room.encode() + b'"]}'),
            ("/api/council/s-1/answers", b'{"question_id": "q1", "answer": "' + raw + b'"}'),
        ]
        for path, body in posts:
            st, _, b = request(gw.http_port, "POST", path, None,
                               {**JOEL, "Content-Type": "application/json"}, raw=body)
            assert st == 400 and b["error"] == "bad_request", (name, path, st, b)
            assert "UTF-8" in b["detail"], (name, path, b)
    # a good message after them is the only one published
    st, _, b = request(gw.http_port, "POST", f"/api/rooms/{room}/messages", {"text": "fine"}, JOEL)
    assert st == 202, b
    col.wait_event(f"room/{room}/message", lambda j: j["text"] == "fine", timeout=scaled(5))
    assert [e["text"] for e in col.events(f"room/{room}/message")] == ["fine"]
    assert col.events(f"room/{room}/presence") == [] and col.events("council/s-1/answer") == []


def test_council_answer_reaches_the_topic(stack):
    gw = start_gateway(stack)
    col = stack.collector(["council/+/answer"])
    st, _, body = request(gw.http_port, "POST", "/api/council/s-9c1e/answers",
                          {"question_id": "s-9c1e:question:2", "answer": "Yes, the uploader fix."}, JOEL)
    assert st == 202, body
    m = col.wait_event("council/s-9c1e/answer", timeout=scaled(5))
    assert m["question_id"] == "s-9c1e:question:2" and m["answer"] == "Yes, the uploader fix." and m["by"] == "joel"
    from conftest import validate_outputs
    validate_outputs(col, ("council/+/answer",))


def test_suggestion_answer_endpoint(stack):
    """POST /api/personas/{p}/suggestion publishes the user's answer as
    persona/{p}/command cmd "answer" (QoS 1, through the outbox) and says
    what it published; a client id makes a retry one command; any
    authenticated user may answer; every malformed request is a 400 naming
    what is wrong and publishes nothing."""
    gw = start_gateway(stack)
    col = stack.collector(["persona/+/command"])
    p = gw.http_port
    path = "/api/personas/helper/suggestion"
    st, _, b = request(p, "POST", path, {"room": "general", "suggestion_id": "timer.nohuman.1:general:0",
                                         "answer": "snooze"}, JOEL)
    assert st == 202, b
    assert b["topic"] == "persona/helper/command" and b["duplicate"] is False
    sent = b["published"]
    assert sent["id"] == b["id"] and isinstance(sent["ts"], int)
    assert {k: v for k, v in sent.items() if k not in ("id", "ts")} == {
        "cmd": "answer", "room": "general", "suggestion_id": "timer.nohuman.1:general:0", "answer": "snooze",
        "by": "joel"}
    m = col.wait_event("persona/helper/command", timeout=scaled(5))
    assert m == sent
    # a retry with the client's id is one command; another user may answer too
    body = {"room": "ops", "answer": "yes", "id": "ans-1"}
    st1, _, b1 = request(p, "POST", path, body, JOEL)
    st2, _, b2 = request(p, "POST", path, body, JOEL)
    assert (st1, st2) == (202, 202) and b1["duplicate"] is False and b2["duplicate"] is True
    assert b1["id"] == "ans-1" and "suggestion_id" not in b1["published"]
    st, _, b = request(p, "POST", "/api/personas/ann-bot/suggestion", {"room": "general", "answer": "no"},
                       auth("tok-bob-0123456789"))
    assert st == 202 and b["published"]["by"] == "bob", b
    col.wait_event("persona/ann-bot/command", timeout=scaled(5))
    # malformed: 400 {error, detail} naming the field; nothing published
    cases = [
        (path, b"not json", "body"),
        (path, b"[1]", "body"),
        (path, b'{"answer": "yes"}', "room"),
        (path, b'{"room": "a/b", "answer": "yes"}', "room"),
        (path, b'{"room": 3, "answer": "yes"}', "room"),
        (path, b'{"room": "general"}', "answer"),
        (path, b'{"room": "general", "answer": "maybe"}', "answer"),
        (path, b'{"room": "general", "answer": ["yes"]}', "answer"),
        (path, b'{"room": "general", "answer": "yes", "suggestion_id": ""}', "suggestion_id"),
        (path, b'{"room": "general", "answer": "yes", "suggestion_id": "a+b"}', "suggestion_id"),
        (path, b'{"room": "general", "answer": "yes", "suggestion_id": "' + b"x" * 161 + b'"}', "suggestion_id"),
        (path, b'{"room": "general", "answer": "yes", "id": "a/b"}', "'id'"),
        ("/api/personas/bad%20one/suggestion", b'{"room": "general", "answer": "yes"}', "persona"),
        ("/api/personas/" + "p" * 70 + "/suggestion", b'{"room": "general", "answer": "yes"}', "persona"),
    ]
    mark = col.mark()
    for cpath, raw, field in cases:
        st, _, b = request(p, "POST", cpath, None, {**JOEL, "Content-Type": "application/json"}, raw=raw)
        assert st == 400 and b["error"] == "bad_request" and field in b["detail"], (cpath, raw, st, b)
    st, h, b = request(p, "GET", path, None, JOEL)
    assert st == 405 and b["error"] == "method_not_allowed" and h["allow"] == "POST"
    st, _, b = request(p, "POST", path, {"room": "general", "answer": "yes"})
    assert st == 401 and b["error"] == "unauthorized"
    time.sleep(0.5)
    assert col.events("persona/+/command", since=mark) == []
    assert len(col.events("persona/+/command")) == 3
    assert gw.is_ready()
    from conftest import validate_outputs
    assert validate_outputs(col, ("persona/+/command",)) == 3


def test_suggestion_answered_with_the_buttons_words(stack):
    """A suggestion offers [Yes] [No] [Snooze 5min]: a client that answers
    with those words as written ("Yes", "Snooze 5min", any case) is
    answered 202, the lowercase word goes out on persona/{p}/command, and
    dormancy-monitor applies it (Yes: mention-only; Snooze 5min: snoozed
    for the persona's snooze, whatever the label said); another word is a
    400 and publishes nothing."""
    gw = start_gateway(stack)
    stack.service("dormancy-monitor", env={"VIGIL_DORMANCY_NO_HUMAN_MS": "1500",
                                           "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": "120000",
                                           "VIGIL_DORMANCY_SNOOZE_MS": "300000"})
    col = stack.collector(["persona/+/command", "persona/+/suggestion", "persona/+/dormancy",
                           "persona/+/state"])
    pub = stack.publisher()
    room = uid("sw")
    ada, bea = f"ada-{room[-6:]}", f"bea-{room[-6:]}"
    for who in (ada, bea):
        pub.publish(*ai(room, who, "anyone?"))
    pub.publish(*human(room, "joel", "brb"))
    sugs = {}
    wait_until(lambda: sugs.update({m["persona"]: m for m in col.events("persona/+/suggestion")}) or
               {ada, bea} <= set(sugs), scaled(15), "both suggestions")
    assert sugs[ada]["text"].endswith("[Yes] [No] [Snooze 5min]"), sugs[ada]
    mark = col.mark()
    for said in ("Maybe", "Snooze later", "Yes please"):
        st, _, b = request(gw.http_port, "POST", f"/api/personas/{ada}/suggestion",
                           {"room": room, "answer": said}, auth())
        assert st == 400 and "answer" in b["detail"], (said, st, b)
    time.sleep(0.3)
    assert col.events("persona/+/command", since=mark) == []
    st, _, b = request(gw.http_port, "POST", f"/api/personas/{ada}/suggestion",
                       {"room": room, "answer": "Yes", "suggestion_id": sugs[ada]["id"]}, auth())
    assert st == 202 and b["published"]["answer"] == "yes", b
    st, _, b = request(gw.http_port, "POST", f"/api/personas/{bea}/suggestion",
                       {"room": room, "answer": "Snooze 5min", "suggestion_id": sugs[bea]["id"]}, auth())
    assert st == 202 and b["published"]["answer"] == "snooze", b
    dm = col.wait_event(f"persona/{ada}/dormancy", timeout=scaled(15))
    assert dm["level"] == "mention-only" and dm["room"] == room, dm

    def bea_snoozed():
        for m in col.events(f"persona/{bea}/state"):
            r = (m.get("rooms") or {}).get(room) or {}
            if r.get("snoozed_until") and not r.get("pending"):
                return r
        return None
    r = wait_until(bea_snoozed, scaled(15), "bea's suggestion snoozed")
    assert r["level"] == "active" and r["snoozed_until"] - int(time.time() * 1000) > 240000, r
    assert [m["answer"] for m in col.events("persona/+/command")] == ["yes", "snooze"]


API_ENDPOINTS = [
    ("POST", "/api/presence", {"session": "t", "rooms": ["r"]}),
    ("GET", "/api/rooms/general/messages", None),
    ("POST", "/api/rooms/general/messages", {"text": "hi"}),
    ("POST", "/api/council/s1/answers", {"question_id": "q1", "answer": "a"}),
    ("POST", "/api/personas/helper/suggestion", {"room": "general", "answer": "no"}),
    ("GET", "/api/autonomous/deliberations/live", None),
    ("GET", "/api/events?topics=rooms", None),
    ("GET", "/api/whoami", None),
    ("GET", "/api/nope", None),
]


def test_auth_on_every_endpoint_and_the_cookie(stack):
    gw = start_gateway(stack)
    p = gw.http_port
    for method, path, body in API_ENDPOINTS:
        for hdrs in ({}, {"Authorization": "Bearer not-a-known-token"}, {"Authorization": "Basic abc"},
                     {"Cookie": "vigil_session=wrong-token-123"}):
            st, h, b = request(p, method, path, body, hdrs)
            assert st == 401, (method, path, hdrs, st, b)
            assert b["error"] == "unauthorized" and b["detail"] and "bearer" in h.get("www-authenticate", "").lower()
    # the page needs no token
    st, h, text = request(p, "GET", "/")
    assert st == 200 and "text/html" in h["content-type"] and "Vigil" in text
    # /login sets the cookie and redirects to /
    st, h, _ = request(p, "GET", "/login?token=tok-ann-0123456789")
    assert st == 302 and h["location"] == "/"
    ck = h["set-cookie"]
    assert ck.startswith("vigil_session=tok-ann-0123456789") and "HttpOnly" in ck and "SameSite=Lax" in ck
    assert request(p, "GET", "/login?token=bad-token-0000")[0] == 401
    assert request(p, "GET", "/login")[0] == 400
    cookie = {"Cookie": ck.split(";")[0]}
    st, _, b = request(p, "GET", "/api/whoami", headers=cookie)
    assert st == 200 and b == {"user": "ann"}
    # with a valid token every endpoint answers (streams: 200 and a connected frame)
    for method, path, body in API_ENDPOINTS:
        if "live" in path or "events" in path:
            s = SSE(p, path, cookie)
            assert s.status == 200 and frame_name(s.next()) == "connected"
            s.close()
            continue
        st, _, b = request(p, method, path, body, cookie)
        assert st in (200, 202, 404), (path, st, b)
        assert (st == 404) == path.endswith("nope")


COOKIE_OCTETS = set(chr(c) for c in range(0x21, 0x7f)) - set('",;\\')


def test_login_with_a_token_a_cookie_cannot_hold(stack, tmp_path):
    """Tokens written by hand with characters a cookie value cannot hold
    (; , " backslash) or '%' start the gateway, answer as bearer tokens,
    and log in: the cookie carries them %-encoded (only cookie-octets, so a
    browser keeps it whole) and reads back as the token. A token a cookie
    can hold is its own cookie, as before."""
    odd = {'pass;word,with"quote\\and%25=': "ann", '"quoted-token"': "bob", "plain-token-0123": "joel"}
    path = tmp_path / "hand-written-tokens"  # start_gateway writes "tokens" there
    path.write_text("".join(f"{t} {u}\n" for t, u in odd.items()))
    gw = start_gateway(stack, VIGIL_GATEWAY_TOKENS_FILE=str(path))
    p = gw.http_port
    for token, user in odd.items():
        st, _, b = request(p, "GET", "/api/whoami", headers={"Authorization": f"Bearer {token}"})
        assert st == 200 and b == {"user": user}, (token, st, b)
        st, h, _ = request(p, "GET", "/login?token=" + quote(token, safe=""))
        assert st == 302 and h["location"] == "/", (token, st)
        ck = h["set-cookie"]
        name, _, value = ck.split(";")[0].partition("=")
        assert name == "vigil_session" and value and set(value) <= COOKIE_OCTETS, ck
        assert (value == token) == (set(token) <= COOKIE_OCTETS and "%" not in token), (token, value)
        assert "HttpOnly" in ck and "SameSite=Lax" in ck
        st, _, b = request(p, "GET", "/api/whoami", headers={"Cookie": f"vigil_session={value}"})
        assert st == 200 and b == {"user": user}, (token, value, st, b)
        s = SSE(p, "/api/events?topics=rooms", {"Cookie": f"vigil_session={value}"})
        assert s.status == 200 and frame_name(s.next()) == "connected"
        s.close()
    # the raw token where the encoded one belongs is not a session
    st, _, _ = request(p, "GET", "/api/whoami", headers={"Cookie": 'vigil_session="quoted-token"x'})
    assert st == 401


def test_every_error_code(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_MAX_BODY=1024, VIGIL_GATEWAY_RATE=5,
                       VIGIL_GATEWAY_ORIGINS="http://theater.example")
    p = gw.http_port
    bob = auth("tok-bob-0123456789")

    def err(st, expect, b):
        assert st == expect, (st, b)
        assert set(b) == {"error", "detail"} and b["detail"], b
        return b["error"]
    # 400: not JSON, wrong types, bad ids, bad query values, invalid UTF-8
    cases = [
        ("POST", "/api/presence", None, b"not json"),
        ("POST", "/api/presence", None, b'{"session": 5, "rooms": []}'),
        ("POST", "/api/presence", None, b'{"session": "s", "rooms": ["bad/room"]}'),
        ("POST", "/api/presence", None, b'{"session": "s", "rooms": [], "status": "asleep"}'),
        ("POST", "/api/presence", None, b'{"session": "s", "rooms": [], "last_activity": "x"}'),
        ("POST", "/api/rooms/general/messages", None, b'{"text": ""}'),
        ("POST", "/api/rooms/general/messages", None, b'{"text": "\xff\xfe"}'),
        ("POST", "/api/rooms/general/messages", None, b'[1,2]'),
        ("POST", "/api/rooms/general/messages", None, b'{"text": "x", "id": "a/b"}'),
        ("POST", "/api/rooms/bad%20room/messages", None, b'{"text": "x"}'),
        ("GET", "/api/rooms/general/messages?limit=0", None, None),
        ("GET", "/api/rooms/general/messages?since=yesterday", None, None),
        ("POST", "/api/council/s1/answers", None, b'{"answer": "a"}'),
        ("GET", "/api/events", None, None),
        ("GET", "/api/events?topics=room/%23/x", None, None),
        ("GET", "/api/events?topics=rooms&since=nope", None, None),
    ]
    for method, path, body, raw in cases:
        st, _, b = request(p, method, path, body, {**bob, "Content-Type": "application/json"}, raw=raw)
        assert err(st, 400, b) == "bad_request", (path, raw)
        time.sleep(0.25)  # stay under the rate limit of 5/s
    # 403: another user's identity; a foreign origin
    st, _, b = request(p, "POST", "/api/presence", {"user": "joel", "session": "s", "rooms": []}, bob)
    assert err(st, 403, b) == "forbidden"
    st, _, b = request(p, "POST", "/api/rooms/general/messages", {"sender": "joel", "text": "hi"}, bob)
    assert err(st, 403, b) == "forbidden"
    st, _, b = request(p, "GET", "/api/whoami", None, {**bob, "Origin": "http://evil.example"})
    assert err(st, 403, b) == "forbidden"
    st, h, b = request(p, "GET", "/api/whoami", None, {**bob, "Origin": "http://theater.example"})
    assert st == 200 and h["access-control-allow-origin"] == "http://theater.example"
    assert h["access-control-allow-credentials"] == "true"
    st, h, _ = request(p, "OPTIONS", "/api/presence", None, {"Origin": "http://theater.example",
                                                             "Access-Control-Request-Method": "POST"})
    assert st == 204 and "POST" in h["access-control-allow-methods"]
    assert "Authorization" in h["access-control-allow-headers"]
    time.sleep(1.2)
    # 404
    st, _, b = request(p, "GET", "/api/rooms/general", None, bob)
    assert err(st, 404, b) == "not_found"
    st, _, b = request(p, "GET", "/no-such-file.js")
    assert err(st, 404, b) == "not_found"
    # 405
    st, h, b = request(p, "DELETE", "/api/presence", None, bob)
    assert err(st, 405, b) == "method_not_allowed" and h["allow"] == "POST"
    # 413
    st, _, b = request(p, "POST", "/api/rooms/general/messages", {"text": "x" * 5000}, bob)
    assert err(st, 413, b) == "payload_too_large"
    time.sleep(1.2)
    # 429 per token: the 6th request within a second; another token is unaffected
    codes = [request(p, "GET", "/api/whoami", None, bob)[0] for _ in range(8)]
    assert codes[:5] == [200] * 5 and 429 in codes[5:], codes
    st, h, b = request(p, "GET", "/api/whoami", None, bob)
    if st == 429:
        assert err(st, 429, b) == "rate_limited" and int(h["retry-after"]) >= 1
    assert request(p, "GET", "/api/whoami", None, JOEL)[0] == 200
    time.sleep(1.2)
    assert request(p, "GET", "/api/whoami", None, bob)[0] == 200
    # the gateway survived all of it and counts errors
    assert gw.is_ready()
    assert gw.metric("vigil_gateway_http_errors_total", code="400") >= len(cases)


def test_bad_config_and_token_file(stack, tmp_path):
    bad = tmp_path / "badtokens"
    bad.write_text("short joel\n")
    gw = stack.service("presence-gateway", start=False, env={"VIGIL_GATEWAY_TOKENS_FILE": str(bad)})
    gw.expect_exit = True
    gw.start(wait=False)
    assert gw.proc.wait(timeout=scaled(10)) == 2
    assert "line 1" in gw.stderr_text()
    # a directory where the file should be (what a container engine makes
    # of a missing bind-mount source) is refused too, not read as no tokens
    d = tmp_path / "tokendir"
    d.mkdir()
    gw2 = stack.service("presence-gateway", start=False, env={"VIGIL_GATEWAY_TOKENS_FILE": str(d)})
    gw2.expect_exit = True
    gw2.start(wait=False)
    assert gw2.proc.wait(timeout=scaled(10)) == 2
    assert "Is a directory" in gw2.stderr_text()


@pytest.mark.parametrize("warm", [False, True], ids=["cold-pool", "warm-pool"])
def test_redis_outage_is_503_then_recovers(stack, warm):
    """warm: earlier requests left connections in the gateway's pool, which
    were connected when Redis died; a POST that takes one answers 503 after
    a few quick attempts too, rather than waiting out the outage in the
    commit's retry loop (and being committed after the caller gave up)."""
    gw = start_gateway(stack)
    col = stack.collector(["room/+/message"])
    room = uid("r")
    if warm:
        for i in range(4):
            assert request(gw.http_port, "POST", f"/api/rooms/{room}/messages",
                           {"text": f"warm {i}", "id": f"warm-{i}"}, JOEL)[0] == 202
        col.wait_count(f"room/{room}/message", 4, timeout=scaled(10))
    stack.redis.kill9()
    t0 = time.monotonic()
    for method, path, body in (("POST", f"/api/rooms/{room}/messages", {"text": "during the outage"}),
                               ("POST", "/api/presence", {"session": "t", "rooms": [room]}),
                               ("GET", f"/api/rooms/{room}/messages", None)):
        st, _, b = request(gw.http_port, method, path, body, JOEL, timeout=15)
        assert st == 503 and b["error"] == "unavailable", (path, st, b)
    assert time.monotonic() - t0 < scaled(12)
    stack.redis.restart()
    wait_until(lambda: request(gw.http_port, "POST", f"/api/rooms/{room}/messages",
                               {"text": "after the outage", "id": "after-1"}, JOEL)[0] == 202,
               scaled(20), "the gateway takes messages again")
    col.wait_event(f"room/{room}/message", lambda j: j["text"] == "after the outage", timeout=scaled(10))
    assert not [e for e in col.events(f"room/{room}/message") if e["text"] == "during the outage"]


def _store(stack):
    """Every key of the test's prefix with its type and value (streams by
    length and last id): what a refused request must leave as it was."""
    r = stack.redis.client()
    out = {}
    for k in r.scan_iter(match=stack.prefix + "*", count=1000):
        t = r.type(k).decode()
        if t == "string":
            v = r.get(k)
        elif t == "hash":
            v = sorted(r.hgetall(k).items())
        elif t == "zset":
            v = r.zrange(k, 0, -1, withscores=True)
        elif t == "set":
            v = sorted(r.smembers(k))
        elif t == "list":
            v = r.lrange(k, 0, -1)
        elif t == "stream":
            v = (r.xlen(k), r.xrevrange(k, count=1))
        else:
            v = None
        out[k.decode()] = (t, v)
    return out


def test_refused_requests_change_nothing(stack):
    """Every kind of refused POST (400 bad input, 403 another user's name,
    413 too big) on each POST endpoint answers its JSON error with a
    detail naming what was wrong, publishes nothing and changes no key in
    Redis; the same user's valid requests afterwards go through."""
    gw = start_gateway(stack, VIGIL_GATEWAY_MAX_BODY=4096)
    col = stack.collector(["room/+/message", "room/+/presence", "council/+/answer", "persona/+/command"])
    room = uid("r")
    p = gw.http_port
    # the user exists already (a session, its timer), so a refused beat
    # could change a live record, not only create one
    assert request(p, "POST", "/api/presence", {"session": "tab1", "rooms": [room]}, JOEL)[0] == 200
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "active", timeout=scaled(5))
    time.sleep(0.5)
    # keys that change on their own (the runtime's shard heartbeat) are not the requests'
    a = _store(stack)
    time.sleep(2.5)
    b = _store(stack)
    volatile = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    before = {k: v for k, v in b.items() if k not in volatile}
    mark = col.mark()
    cases = [
        # (path, raw body, status, a word the detail must hold)
        ("/api/presence", b'{"session": "tab1", "rooms": [], "user": "ann"}', 403, "ann"),
        ("/api/presence", b'{"session": "tab1", "rooms": [%s]}' % b",".join(b'"r%d"' % i for i in range(33)), 400, "32"),
        ("/api/presence", b'{"session": "tab1", "rooms": ["%s", "bad room"]}' % room.encode(), 400, "rooms[1]"),
        ("/api/presence", b'{"session": "tab1", "rooms": ["%s"], "status": "asleep"}' % room.encode(), 400, "status"),
        ("/api/presence", b'{"session": "tab1", "rooms": ["%s"], "idle_ms": 5, "last_activity": 5}' % room.encode(), 400, "idle_ms"),
        ("/api/presence", b'{"session": "tab1", "rooms": ["%s"], "idle_ms": -1}' % room.encode(), 400, "idle_ms"),
        ("/api/presence", b'{"session": "tab\\u00001", "rooms": []}', 400, "session"),
        ("/api/presence", b'{"rooms": []}', 400, "session"),
        ("/api/presence", b'{"session": "tab1", "rooms": "general"}', 400, "rooms"),
        ("/api/presence", b'{"session": "tab1"', 400, "body"),
        (f"/api/rooms/{room}/messages", b'{"text": "hi", "sender": "ann"}', 403, "ann"),
        (f"/api/rooms/{room}/messages", b'{"text": "   "}'.replace(b"   ", b""), 400, "text"),
        (f"/api/rooms/{room}/messages", b'{"text": "hi", "mentions": ["a b"]}', 400, "mentions"),
        (f"/api/rooms/{room}/messages", b'{"text": "hi", "reply_to": "a#b"}', 400, "reply_to"),
        (f"/api/rooms/{room}/messages", b'{"text": "\xc0\xaf"}', 400, "UTF-8"),
        (f"/api/rooms/{room}/messages", b'{"text": "%s"}' % (b"x" * 5000), 413, "VIGIL_GATEWAY_MAX_BODY"),
        ("/api/council/s-1/answers", b'{"question_id": "q1", "answer": " \\t\\n "}', 400, "answer"),
        ("/api/council/s-1/answers", b'{"answer": "yes"}', 400, "question_id"),
        ("/api/council/s%201/answers", b'{"question_id": "q1", "answer": "yes"}', 400, "session"),
        ("/api/personas/ada/suggestion", b'{"room": "general", "answer": "maybe"}', 400, "answer"),
        ("/api/personas/ada/suggestion", b'{"answer": "yes"}', 400, "room"),
    ]
    for path, raw, status, word in cases:
        st, _, body = request(p, "POST", path, None, {**JOEL, "Content-Type": "application/json"}, raw=raw)
        assert st == status, (path, raw[:80], st, body)
        assert set(body) == {"error", "detail"} and word in body["detail"], (path, raw[:80], body)
    time.sleep(1.0)  # what a wrongly accepted request would publish has gone out
    assert col.find("#", since=mark) == [], [(m.topic, m.payload[:80]) for m in col.find("#", since=mark)]
    after = _store(stack)
    changed = sorted(k for k in set(before) | set(after)
                     if k not in volatile and before.get(k) != after.get(k))
    assert changed == [], changed
    # the same calls made right still go through
    assert request(p, "POST", "/api/presence", {"session": "tab1", "rooms": []}, JOEL)[0] == 200
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "away", timeout=scaled(5), since=mark)
    assert request(p, "POST", f"/api/rooms/{room}/messages", {"text": "hi"}, JOEL)[0] == 202
    col.wait_event(f"room/{room}/message", lambda j: j["text"] == "hi", timeout=scaled(5), since=mark)


def test_stopped_heartbeats_expire_a_session_before_its_away_time(stack):
    """VIGIL_GATEWAY_PRESENCE_EXPIRE_MS shorter than the away time: a tab
    whose beats stop (closed, crashed) is away at the expiry, long before
    its activity would make it away, with no beat after its last; a room
    another of the user's tabs keeps beating in stays active meanwhile
    (only refreshes of its activity, README: Presence), and goes the same
    way once that tab stops."""
    gw = start_gateway(stack, VIGIL_GATEWAY_PRESENCE_IDLE_MS=1000, VIGIL_GATEWAY_PRESENCE_AWAY_MS=60000,
                       VIGIL_GATEWAY_PRESENCE_EXPIRE_MS=2500)
    col = stack.collector(["room/+/presence"])
    r1, r2 = uid("r"), uid("r")
    p = gw.http_port
    t0 = time.monotonic()
    assert request(p, "POST", "/api/presence", {"session": "closing", "rooms": [r1, r2]}, JOEL)[0] == 200
    col.wait_count("room/+/presence", 2, timeout=scaled(5), key="room")
    stop = threading.Event()

    def keep_beating():  # the other tab: r2 only, active, every 300 ms
        while not stop.is_set():
            request(p, "POST", "/api/presence", {"session": "open", "rooms": [r2], "idle_ms": 0}, JOEL)
            stop.wait(0.3)
    t = threading.Thread(target=keep_beating, daemon=True)
    t.start()
    try:
        col.wait_event(f"room/{r1}/presence", lambda j: j["status"] == "away", timeout=scaled(8))
        took = time.monotonic() - t0
        assert 2.3 <= took <= scaled(8), took  # the expiry, not the 60 s away time
        assert [e["status"] for e in presence_events(col, r1)] == ["active", "idle", "away"]
        time.sleep(1.0)
        assert {e["status"] for e in presence_events(col, r2)} == {"active"}
    finally:
        stop.set()
        t.join(timeout=5)
    mark = col.mark()
    col.wait_event(f"room/{r2}/presence", lambda j: j["status"] == "away", timeout=scaled(8), since=mark)
    assert [e["status"] for e in presence_events(col, r2, since=mark)] == ["idle", "away"]


@pytest.mark.parametrize("victim", ["gateway", "redis"])
def test_presence_timers_survive_a_kill9(stack, victim):
    """A beat's idle and away are timers kept in Redis with the record: a
    kill -9 of the gateway (or of Redis) right after the beat, lasting past
    the idle time, still ends with idle and then away, each published once,
    for the last activity the beat gave. (An event the outbox had sent
    before the kill may come again after it, with the same id: consumers
    drop such a redelivery by its id; no second event is made.)"""
    gw = start_gateway(stack, VIGIL_GATEWAY_PRESENCE_IDLE_MS=1500, VIGIL_GATEWAY_PRESENCE_AWAY_MS=8000)
    col = stack.collector(["room/+/presence"])
    room = uid("r")
    st, _, body = request(gw.http_port, "POST", "/api/presence", {"session": "tab1", "rooms": [room]}, JOEL)
    assert st == 200, body
    first = col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "active", timeout=scaled(5))
    (gw if victim == "gateway" else stack.redis).kill9()
    time.sleep(2.0)  # past the idle time: its timer is due while nothing runs it
    gw.start() if victim == "gateway" else stack.redis.restart()
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "away", timeout=scaled(15))
    time.sleep(1.0)
    ev = list({e["id"]: e for e in presence_events(col, room)}.values())
    assert [e["status"] for e in ev] == ["active", "idle", "away"], ev
    assert all(e["last_activity"] == first["last_activity"] for e in ev), ev
