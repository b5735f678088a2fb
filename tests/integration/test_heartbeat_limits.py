"""Limits that speak, heartbeat end to end (services/heartbeat/README.md,
"Limits"): each bound that refuses or cuts part of an input says so on
sys/heartbeat/error (reason `limit`, or the reject's own reason) or in the
run's detail, and counts it in vigil_limit_refusals_total{limit}:

- a room has at most VIGIL_ROUTE_MAX_KEYS (64) heartbeats, the most one
  room message reaches: the config that would join a full room is refused,
  and a room message past it (two configs joining at once) is refused whole
  in the room's terms;
- a persona remembers the levels of at most 32 rooms, the configured room's
  first: a persona/{p}/state listing more is applied in part and says what
  it did not keep;
- a proactive message is at most 4000 bytes: a longer answer is sent cut and
  the run says so;
- a checklist_file name is at most 200 bytes, refused for its length."""

import json

import harness
import pytest
import schema_check
from conftest import human, uid
from fake_servers import FakeLLM, running

SERVICE = "heartbeat"
ERROR_TOPIC = f"sys/{SERVICE}/error"
ROOM_MAX = 64  # VIGIL_ROUTE_MAX_KEYS (libshared/include/vigil/runtime.h)
LEVELS_MAX = 32  # HB_LEVELS_MAX (services/heartbeat/src/core/heartbeat.h)
MESSAGE_MAX = 4000  # HB_MESSAGE_MAX

FAST = {
    "VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": 1500,
    "VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS": 3000,
    "VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS": 6000,
    "VIGIL_HEARTBEAT_LIVE_MS": 1000,
    "VIGIL_LLM_TIMEOUT_MS": 4000,
    "VIGIL_LLM_RETRIES": 0,
}


def config(persona, room, user="joel", checklist="CHECK", **extra):
    body = {"persona": persona, "user": user, "room": room, "checklist": checklist,
            "enabled": True, "ts": harness.now_ms()}
    body.update(extra)
    return f"heartbeat/{persona}/config", body


def refusals(svc, limit):
    return svc.metric("vigil_limit_refusals_total", limit=limit) or 0


def valid_error(err):
    assert err["service"] == SERVICE, err
    schema_check.validate_message(ERROR_TOPIC, json.dumps(err).encode())


def test_a_room_takes_64_heartbeats_and_refuses_the_next_visibly(stack):
    # default intervals (2 min): no run during the test; no model needed
    svc = stack.service(SERVICE)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    room = uid("r")
    index = f"{stack.prefix}{SERVICE}:room-personas:{room}"
    members = [f"p{i:02d}" for i in range(ROOM_MAX)]
    for p in members:
        pub.publish(*config(p, room))
    c = stack.redis.client()
    try:
        harness.wait_until(lambda: c.scard(index) == ROOM_MAX, 60, "64 heartbeats in the room")
        mark = col.mark()
        pub.publish(*config("late", room))
        err = col.wait_event(ERROR_TOPIC, lambda e: e.get("reason") == "limit", since=mark,
                             what="the config refused at the limit")
        assert f"room '{room}' already has the 64 heartbeats" in err["detail"], err
        assert "VIGIL_ROUTE_MAX_KEYS" in err["detail"] and "config is refused" in err["detail"]
        assert err["topic"] == "heartbeat/late/config"
        valid_error(err)
        harness.wait_until(lambda: refusals(svc, "heartbeats_per_room") == 1, 5, "counted")
        assert c.scard(index) == ROOM_MAX and store.state("late") == (0, None)

        # a member of the full room still switches off, and messages reach all 64
        pub.publish(*config("p00", room, enabled=False))
        harness.wait_until(lambda: store.state("p00")[1]["cfg"]["enabled"] is False, 10,
                           "p00 switched off")
        pub.publish(*human(room, "joel", "still here"))
        harness.wait_until(
            lambda: all((store.state(p)[1].get("recent") or [{}])[-1].get("t") == "still here"
                        for p in members), 20, "the message in the context of all 64",
            interval=0.2)
        assert not col.find(ERROR_TOPIC, since=mark, pred=lambda e: e.get("reason") != "limit")
        assert refusals(svc, "heartbeats_per_room") == 1

        # past the limit (two configs joining at once, here written directly),
        # a room message is refused whole, in the room's terms
        c.sadd(index, "intruder")
        mark = col.mark()
        pub.publish(*human(room, "joel", "anyone?"))
        err = col.wait_event(ERROR_TOPIC, lambda e: e.get("reason") == "too_many_keys",
                             since=mark, what="the room message refused past the limit")
        assert f"room '{room}' has more than 64 heartbeats one room message reaches" in err["detail"], err
        assert "the input is refused whole" in err["detail"]
        assert err["topic"] == f"room/{room}/message"
        valid_error(err)
        harness.wait_until(lambda: refusals(svc, "heartbeats_per_room") == 2, 5, "counted")
    finally:
        c.close()
    assert "limit reached" in svc.stderr_text()


def test_levels_past_the_limit_keep_the_configured_room_and_say_so(stack):
    svc = stack.service(SERVICE, env=dict(FAST, VIGIL_LLM_URL=""))
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    room = uid("r")
    pub.publish(*config("dozy", room))
    harness.wait_until(lambda: store.state("dozy")[1] is not None, 10, "dozy configured")
    now = harness.now_ms()
    rooms = {f"x{i:02d}": {"level": "active", "since": now} for i in range(LEVELS_MAX + 7)}
    rooms[room] = {"level": "sleep", "since": now, "trigger": "manual"}  # the 40th, last
    mark = col.mark()
    pub.publish("persona/dozy/state", {"persona": "dozy", "ts": now, "rooms": rooms})
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("reason") == "limit", since=mark,
                         what="the levels not kept")
    assert "state of persona dozy lists 40 rooms" in err["detail"], err
    assert "the levels of 8 rooms are not kept" in err["detail"]
    assert f"'{room}' is kept first" in err["detail"]
    assert err["topic"] == "persona/dozy/state"
    valid_error(err)
    harness.wait_until(lambda: refusals(svc, "levels_per_persona") == 1, 5, "counted")
    levels = store.state("dozy")[1]["levels"]
    assert len(levels) == LEVELS_MAX and levels[room] == "sleep"
    # the level kept is the one runs read (a run after the levels' commit)
    mark = col.mark()
    run = col.wait_event("heartbeat/dozy/run", since=mark, timeout=15)
    assert run["outcome"] == "skipped" and run["reason"] == "persona-asleep", run


def test_a_long_proactive_message_is_sent_cut_and_says_so(stack, tmp_path):
    rules = [{"match": "CHECK-LONG", "reply": {"message": "x" * (MESSAGE_MAX + 1000),
                                                "priority": "urgent", "category": "reminder"}}]
    with running(FakeLLM, tmp_path, rules=rules) as llm:
        svc = stack.service(SERVICE, env=dict(FAST, VIGIL_LLM_URL=llm.url))
        col = stack.collector()
        pub = stack.publisher()
        room = uid("r")
        pub.publish(*config("wordy", room, checklist="CHECK-LONG"))
        run = col.wait_event("heartbeat/wordy/run", lambda e: e["outcome"] != "skipped",
                             timeout=20)
        assert run["outcome"] == "sent", run
        assert "message cut to 4000 of 5000 bytes" in run["detail"], run
        msg = col.wait_event(f"room/{room}/message", lambda m: m.get("sender") == "wordy")
        assert msg["text"] == "x" * MESSAGE_MAX
        harness.wait_until(lambda: refusals(svc, "proactive_message_bytes") >= 1, 5, "counted")
        assert "proactive_message_bytes" in svc.stderr_text()


def test_a_checklist_file_name_past_the_limit_is_refused_for_its_length(stack, tmp_path):
    folder = tmp_path / "checklists"
    folder.mkdir()
    svc = stack.service(SERVICE, env={"VIGIL_HEARTBEAT_CHECKLIST_DIR": str(folder)})
    col = stack.collector(topics=(ERROR_TOPIC,))
    pub = stack.publisher()
    topic, body = config("filed", uid("r"))
    del body["checklist"]
    body["checklist_file"] = "a" * 201
    pub.publish(topic, body)
    err = col.wait_event(ERROR_TOPIC, timeout=10)
    assert err["reason"] == "bad_value"
    assert "field 'checklist_file': longer than 200 bytes" in err["detail"], err
    valid_error(err)
    assert svc.metric("vigil_rejected_total", reason="bad_value") >= 1


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
