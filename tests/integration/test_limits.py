"""Limits that speak: dormancy-monitor tracks at most
VIGIL_DORMANCY_MAX_PERSONAS personas per room; past it each refused persona
gets an error event on sys/dormancy-monitor/error (reason `limit`, naming
the room and the persona, valid against the sys-error schema) and a count
in vigil_limit_refusals_total{limit="personas_per_room"}, while the tracked
members keep working. The default (1000) tracks 200 personas in one room,
the case that once stopped silently at 100."""

import json

import harness
from conftest import SERVICE, ai, command, human, uid

ERROR_TOPIC = f"sys/{SERVICE}/error"


def room_personas(col, room, since=0):
    states = col.events(f"room/{room}/state", since=since)
    return states[-1].get("personas", {}) if states else {}


def test_personas_past_the_setting_are_refused_visibly(stack):
    svc = stack.service(env={"VIGIL_DORMANCY_MAX_PERSONAS": "3"})
    col = stack.collector()
    pub = stack.publisher()
    room = "capped"
    for p in ("p1", "p2", "p3"):
        pub.publish(*ai(room, p, "hello", mid=uid()))
    harness.wait_until(lambda: len(room_personas(col, room)) == 3, 10, "three members")
    mark = col.mark()
    before = svc.metric("vigil_limit_refusals_total", limit="personas_per_room") or 0
    pub.publish(*ai(room, "p4", "me too", mid=uid()))
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("reason") == "limit", since=mark,
                         what="a limit refusal")
    assert "room 'capped'" in err["detail"] and "persona 'p4'" in err["detail"], err
    assert "VIGIL_DORMANCY_MAX_PERSONAS" in err["detail"], err
    assert err["topic"] == f"room/{room}/message"
    assert err["service"] == SERVICE
    import schema_check  # tests/integration/schema_check.py
    schema_check.validate_message(ERROR_TOPIC, json.dumps(err).encode())
    harness.wait_until(
        lambda: svc.metric("vigil_limit_refusals_total", limit="personas_per_room") == before + 1,
        5, "the refusal counted")
    # the tracked members keep working: one sleeps by command, a human wakes it
    mark = col.mark()
    pub.publish(*command("p1", "dormant", level="sleep", room=room))
    col.wait_event("persona/p1/dormancy", lambda e: e.get("level") == "sleep", since=mark)
    assert "p4" not in room_personas(col, room)


def test_two_hundred_personas_are_tracked_by_default(stack):
    stack.service()
    col = stack.collector()
    pub = stack.publisher()
    room = "crowd"
    mark = col.mark()
    for i in range(200):
        pub.publish(*ai(room, f"p{i:03d}", "hello", mid=uid()))
    harness.wait_until(lambda: len(room_personas(col, room, since=mark)) == 200, 60,
                       "200 members in room/crowd/state")
    assert not col.find(ERROR_TOPIC, lambda e: e.get("reason") == "limit", since=mark)
    # and all 200 are woken by a human message after sleeping
    for i in range(200):
        pub.publish(*command(f"p{i:03d}", "dormant", level="sleep", room=room))
    harness.wait_until(
        lambda: sum(1 for v in room_personas(col, room).values() if v == "sleep") == 200, 60,
        "200 asleep")


def test_chat_router_reports_mentions_past_its_limit(stack):
    from chat_personas import CHAT

    svc = stack.service(CHAT, env={"VIGIL_CHAT_MAX_MENTIONS": "2"})
    col = stack.collector()
    pub = stack.publisher()
    room = "crowded"
    mark = col.mark()
    before = svc.metric("vigil_limit_refusals_total", limit="mentions_per_message") or 0
    pub.publish(*human(room, "joel", "@ann @bob @cid @dan please look", mid=uid()))
    err = col.wait_event(f"sys/{CHAT}/error", lambda e: e.get("reason") == "limit", since=mark,
                         what="a limit refusal from chat-router")
    assert "VIGIL_CHAT_MAX_MENTIONS" in err["detail"] and "room 'crowded'" in err["detail"], err
    import schema_check  # tests/integration/schema_check.py
    schema_check.validate_message(f"sys/{CHAT}/error", json.dumps(err).encode())
    # the first two were notified, the others were not
    harness.wait_until(lambda: len(col.events("persona/+/notify", since=mark)) >= 2, 10, "2 notifies")
    notified = {e["persona"] for e in col.events("persona/+/notify", since=mark)}
    assert notified == {"ann", "bob"}, notified
    harness.wait_until(
        lambda: svc.metric("vigil_limit_refusals_total", limit="mentions_per_message") == before + 1,
        5, "the refusal counted")


def test_chat_router_mentions_past_its_limit_at_the_depth_limit_notify_nobody(stack):
    from chat_personas import CHAT

    stack.service(CHAT, env={"VIGIL_CHAT_MAX_MENTIONS": "2", "VIGIL_CHAT_MAX_DEPTH": "3"})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("deep")
    mark = col.mark()
    pub.publish(*ai(room, "arya", "@ann @bob @cid @dan over to you", mid=uid(), depth=3))
    err = col.wait_event(f"sys/{CHAT}/error", lambda e: e.get("reason") == "limit", since=mark,
                         what="a limit refusal from chat-router")
    assert "none is notified anyway" in err["detail"], err
    harness.wait_until(lambda: any(e.get("sender") == "chat-router"
                                   for e in col.events(f"room/{room}/message", since=mark)),
                       10, "the stop message")
    assert col.events("persona/+/notify", since=mark) == []


def test_wake_evaluator_refuses_personas_past_its_limit_visibly(stack):
    wake = "wake-evaluator"
    svc = stack.service(wake, env={"VIGIL_WAKE_MAX_PERSONAS": "2", "VIGIL_LLM_URL": "",
                                   "VIGIL_AUTOPILOT": "0"})
    col = stack.collector()
    pub = stack.publisher()
    room = "busy"
    mark = col.mark()
    for p in ("w1", "w2", "w3"):
        pub.publish(f"persona/{p}/meta", {"persona": p, "name": p, "rooms": [room],
                                           "tier": "basic", "ts": harness.now_ms()})
    err = col.wait_event(f"sys/{wake}/error", lambda e: e.get("reason") == "limit", since=mark,
                         what="a limit refusal from wake-evaluator")
    assert "persona 'w3'" in err["detail"] and "room 'busy'" in err["detail"], err
    assert "VIGIL_WAKE_MAX_PERSONAS" in err["detail"], err
    assert err["topic"] == "persona/w3/meta"
    import schema_check  # tests/integration/schema_check.py
    schema_check.validate_message(f"sys/{wake}/error", json.dumps(err).encode())
    harness.wait_until(
        lambda: (svc.metric("vigil_limit_refusals_total", limit="personas_per_room") or 0) >= 1,
        5, "the refusal counted")
