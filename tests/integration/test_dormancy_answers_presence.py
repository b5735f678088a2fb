"""dormancy-monitor through the real broker: a pending suggestion is
withdrawn, not defaulted to yes, while a human reads along (presence); an
answer naming no pending suggestion (or, from a persona in one room, naming
none) is refused visibly and changes nothing,
while the redelivery of an answer that was applied stays a plain duplicate;
a human's @mention of a persona asleep for lack of humans wakes it with the
human re-entry text."""

import time

import harness
from conftest import SERVICE, ai, command, human, uid, validate_outputs

ERROR_TOPIC = f"sys/{SERVICE}/error"
WAKE_TEXT = "\u2728 Human activity detected. Waking from dormancy."


def presence(pub, room, status):
    pub.publish(f"room/{room}/presence", {"user": "joel", "session": "tab1", "status": status,
                                          "last_activity": harness.now_ms()})


def pending_in(state, room):
    return state["rooms"].get(room, {}).get("pending")


def suggestion_pending(stack, name, timeout_ms):
    """dormancy-monitor with presence on, and ada asked (no human for 1 s)
    in a new room; returns the collector, publisher, room and suggestion."""
    stack.service(env={
        "VIGIL_DORMANCY_PRESENCE": 1,
        "VIGIL_DORMANCY_NO_HUMAN_MS": 1000,
        "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": timeout_ms,
        "VIGIL_DORMANCY_SNOOZE_MS": 4000,
        "VIGIL_DORMANCY_AI_ONLY_MS": 600000,
    })
    col = stack.collector()
    pub = stack.publisher()
    room = uid(name)
    pub.publish(*ai(room, "ada", "anyone?"))
    return col, pub, room, col.wait_event("persona/ada/suggestion", timeout=15)


def test_presence_withdraws_a_pending_suggestion_instead_of_defaulting(stack):
    timeout_ms = 1000
    col, pub, room, s = suggestion_pending(stack, "reader", timeout_ms)
    assert s["snooze_ms"] == 4000 and s["options"] == ["yes", "no", "snooze"], s

    mark = col.mark()
    presence(pub, room, "active")
    col.wait_event("persona/ada/state", lambda st: room in st["rooms"] and
                   pending_in(st, room) is None, timeout=10, since=mark,
                   what="the pending suggestion withdrawn when joel became active")
    # Past the moment the default yes would have applied: nothing.
    time.sleep(timeout_ms / 1000 + 0.7)
    assert not col.find("persona/ada/dormancy"), "defaulted to yes while a human was present"

    # joel leaves: the room is still quiet, so ada is asked again, and an
    # unanswered question now defaults.
    mark = col.mark()
    presence(pub, room, "away")
    again = col.wait_event("persona/ada/suggestion", timeout=10, since=mark)
    assert again["id"] != s["id"]
    e = col.wait_event("persona/ada/dormancy", timeout=10, since=mark)
    assert e["trigger"] == "suggestion-default" and e["level"] == "mention-only", e
    validate_outputs(col)


def test_presence_in_camel_case_is_read(stack):
    """A browser heartbeat written {userId, sessionId, status, lastActivity}
    counts like the documented {user, session, status, last_activity}."""
    col, pub, room, _ = suggestion_pending(stack, "camel", 60000)
    mark = col.mark()
    pub.publish(f"room/{room}/presence", {"userId": "joel-id", "sessionId": "browser-tab-1",
                                          "status": "active", "lastActivity": harness.now_ms()})
    col.wait_event("persona/ada/state", lambda st: room in st["rooms"] and
                   pending_in(st, room) is None, timeout=10, since=mark,
                   what="the pending suggestion withdrawn when joel-id became active")
    assert not col.find(ERROR_TOPIC, since=mark), "the camelCase heartbeat was refused"
    validate_outputs(col)


def test_answer_to_no_pending_suggestion_is_refused_and_changes_nothing(stack):
    svc = stack.service(env={"VIGIL_DORMANCY_NO_HUMAN_MS": 1000,
                             "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000,
                             "VIGIL_DORMANCY_AI_ONLY_MS": 600000})
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store()
    rejected = svc.metric("vigil_rejected_total", reason="bad_value")
    states = store.states()

    # A room nobody is in, a persona nobody knows.
    mark = col.mark()
    topic, body = command("zz", "answer", room="ghost", suggestion_id="nope", answer="yes")
    pub.publish(topic, body)
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("topic") == topic, timeout=10, since=mark)
    assert err["reason"] == "bad_value", err
    assert "no pending suggestion 'nope'" in err["detail"] and "'ghost'" in err["detail"], err
    harness.wait_until(lambda: svc.metric("vigil_rejected_total", reason="bad_value") ==
                       rejected + 1, 5, "vigil_rejected_total{reason=bad_value} + 1")
    assert store.states() == states, "the refused answer changed a record"
    assert not col.find("room/ghost/state") and not col.find("persona/zz/state")

    # A real suggestion, answered once: the same answer delivered again is
    # a duplicate, not an error.
    room = uid("answered")
    pub.publish(*ai(room, "ada", "hello"))
    s = col.wait_event("persona/ada/suggestion", timeout=15)
    topic, body = command("ada", "answer", room=room, suggestion_id=s["id"], answer="no")
    mark = col.mark()
    pub.publish(topic, body)
    col.wait_event("persona/ada/state", lambda st: room in st["rooms"] and
                   pending_in(st, room) is None, timeout=10, since=mark)
    dups = svc.metric("vigil_duplicates_total")
    pub.publish(topic, body)
    harness.wait_until(lambda: svc.metric("vigil_duplicates_total") == dups + 1, 5,
                       "the redelivered answer counted as a duplicate")
    assert not col.find(ERROR_TOPIC, since=mark), "the redelivered answer was refused"

    # Answering it again with a new command is a stale answer: refused.
    topic, body = command("ada", "answer", room=room, suggestion_id=s["id"], answer="yes")
    pub.publish(topic, body)
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("topic") == topic, timeout=10, since=mark)
    assert err["reason"] == "bad_value" and s["id"] in err["detail"], err
    # without a room it goes to the room the suggestion names: refused too
    topic, body = command("ada", "answer", suggestion_id=s["id"], answer="yes")
    mark = col.mark()
    pub.publish(topic, body)
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("topic") == topic and
                         body["id"] in e.get("sample", ""), timeout=10, since=mark)
    assert room in err["detail"], err
    # naming neither a room nor a suggestion, from a persona in one room:
    # that room's answer, refused there, not dropped without a word
    topic, body = command("ada", "answer", answer="yes")
    mark = col.mark()
    pub.publish(topic, body)
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("topic") == topic and
                         body["id"] in e.get("sample", ""), timeout=10, since=mark)
    assert err["reason"] == "bad_value" and "no pending suggestion for persona 'ada'" in \
        err["detail"] and room in err["detail"], err
    assert not col.find("persona/ada/dormancy"), "a refused answer changed the level"
    validate_outputs(col)


def test_human_mention_of_an_absence_sleeper_is_a_reentry(stack):
    stack.service(env={"VIGIL_DORMANCY_AI_ONLY_MS": 1500, "VIGIL_DORMANCY_AUTO_SUGGEST": 0})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("reentry")
    for p in ("ada", "bo", "cy"):
        pub.publish(*ai(room, p, "meta talk"))
    for p in ("ada", "bo", "cy"):
        col.wait_event(f"persona/{p}/dormancy", lambda e: e["trigger"] == "ai-only", timeout=15)
    pub.publish(*ai(room, "cy", "@self dormant sleep", mid="cy-choice"))  # now a choice
    col.wait_event("persona/cy/dormancy", lambda e: e.get("message_id") == "cy-choice", timeout=10)

    mark = col.mark()
    pub.publish(*human(room, "joel", "@ada @cy are you there?", mid="hm-1"))
    for p in ("ada", "bo"):
        e = col.wait_event(f"persona/{p}/dormancy", lambda e: e["level"] == "active", timeout=10,
                           since=mark)
        assert e["trigger"] == "human-reentry" and e["text"] == WAKE_TEXT, e
        assert e["message_id"] == "hm-1"
    e = col.wait_event("persona/cy/dormancy", lambda e: e["level"] == "active", timeout=10,
                       since=mark)
    assert e["trigger"] == "mention" and e["text"] == "\u2728 Mentioned by joel. Waking from sleep."
    time.sleep(0.3)
    assert len(col.find("persona/ada/dormancy", since=mark)) == 1, "ada woken twice"
    validate_outputs(col)
