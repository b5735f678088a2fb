"""chat-router with real processes (issue 4): two scripted personas that
answer every notification by mentioning each other drive a chain to the
depth limit; a pause in mid-chain queues notifications and resume delivers
them in order; kill -9 of chat-router mid-chain loses and duplicates
nothing; redelivery, bad input and the global pause.

The ground truth is the room log in Redis (one entry per logged message)
and the notifications seen on the broker."""

import collections
import json
import time

import harness
from chat_personas import CHAT, Persona, chat_key, log_entries, pair, room_state, vigil_ok
from conftest import ai, human, uid, validate_outputs
from harness import scaled

MAX_DEPTH = 100
STOP_FILTER = "room/+/message"


def notify_events(col, since=0):
    """Distinct notifications (by id) in arrival order."""
    seen, out = set(), []
    for ev in col.events("persona/+/notify", since=since):
        if ev["id"] not in seen:
            seen.add(ev["id"])
            out.append(ev)
    return out


def is_stop(ev):
    return ev.get("sender") == CHAT and ev.get("sender_type") == "system" and ev.get("reason") == "max_depth"


def wait_stop(col, room, timeout=60):
    return col.wait_event(f"room/{room}/message", is_stop, timeout=timeout,
                          what=f"the depth-limit system message in {room}")


def wait_logged(stack, room, pred, timeout, what):
    return harness.wait_until(lambda: [m for _, m in log_entries(stack, room) if pred(m)], timeout, what)


def assert_clean_chain(stack, room, first_id):
    """The log holds the human message, exactly one AI message per depth
    1..MAX_DEPTH (each id once) and exactly one stop message at MAX_DEPTH."""
    entries = log_entries(stack, room)
    ids = [m["id"] for _, m in entries]
    dup = [i for i, n in collections.Counter(ids).items() if n > 1]
    assert not dup, f"messages logged twice: {dup[:5]}"
    ai = [m for _, m in entries if m["sender_type"] == "ai"]
    depths = sorted(m["depth"] for m in ai)
    assert depths == list(range(1, MAX_DEPTH + 1)), \
        f"AI depths logged: {len(depths)} messages, missing {sorted(set(range(1, MAX_DEPTH + 1)) - set(depths))[:10]}"
    stops = [m for _, m in entries if is_stop(m)]
    assert len(stops) == 1, f"{len(stops)} stop messages logged"
    assert stops[0]["depth"] == MAX_DEPTH
    assert "depth 100" in stops[0]["text"] and "@" not in stops[0]["text"]
    assert [m for _, m in entries if m["id"] == first_id][0]["sender_type"] == "human"
    # the log is ordered: every AI message comes after the one it answers
    pos = {m["id"]: i for i, (_, m) in enumerate(entries)}
    for m in ai:
        assert pos[m["reply_to"]] < pos[m["id"]], f"{m['id']} logged before what it answers"
    return entries


def test_chain_between_two_personas_stops_at_depth_100(stack):
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    arya, gendry = pair(stack.broker.port)
    try:
        room = uid("room")
        topic, msg = human(room, "joel", "@arya @self solve X, please")
        pub.publish(topic, msg)
        stop = wait_stop(col, room)
        assert stop["reply_to"] and stop["depth"] == MAX_DEPTH
        wait_logged(stack, room, is_stop, 10, "the stop message in the log")
        time.sleep(scaled(0.5))  # nothing may follow it
        entries = assert_clean_chain(stack, room, msg["id"])
        assert len(entries) == 1 + MAX_DEPTH + 1

        notes = notify_events(col)
        assert sorted(n["depth"] for n in notes) == list(range(0, MAX_DEPTH)), \
            "one notification per depth 0..99, none at or past the limit"
        assert all(n["room"] == room for n in notes)
        # alternate personas, each from the other one (the human first)
        assert notes[0]["persona"] == "arya" and notes[0]["from"] == "joel" and notes[0]["message_id"] == msg["id"]
        for n in notes[1:]:
            assert n["from"] != n["persona"] and {n["from"], n["persona"]} == {"arya", "gendry"}
        st = room_state(stack, room)
        assert st["count"] == len(entries) and st["stopped"] == 1 and st["queued"] == 0
        validate_outputs(col, filters=("persona/+/notify", "sys/#"))
    finally:
        arya.stop()
        gendry.stop()


def test_pause_mid_chain_queues_and_resume_delivers_in_order(stack):
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    arya, gendry = pair(stack.broker.port, delay=0.02)
    try:
        room = uid("room")
        topic, first = human(room, "joel", "@arya start the chain")
        pub.publish(topic, first)
        col.wait_for(lambda c: any(n["depth"] >= 8 for n in notify_events(c)), 30, "depth 8")

        vigil_ok(stack, "chat", "pause", room)
        assert room_state(stack, room)["paused"] is True
        # the reply in flight is logged, and its notification queued
        q = chat_key(stack, f"queue:{room}")
        r = stack.redis.client()
        harness.wait_until(lambda: r.llen(q) >= 1, 10, "a notification queued")
        n_log = len(log_entries(stack, room))
        mark = col.mark()

        # more messages while paused: logged, their notifications queued
        extra = [vigil_ok(stack, "chat", "send", room, f"@observer{i} note {i}").strip() for i in range(3)]
        wait_logged(stack, room, lambda m: m["id"] == extra[-1], 10, "the last extra message")
        time.sleep(scaled(0.5))
        assert len(log_entries(stack, room)) == n_log + 3, "only the extra messages were logged while paused"
        queued = [json.loads(e.split(b"\n", 1)[1]) for e in r.lrange(q, 0, -1)]
        assert len(queued) == 4, queued
        assert [n["message_id"] for n in queued[1:]] == extra
        assert [n["persona"] for n in queued[1:]] == ["observer0", "observer1", "observer2"]
        assert room_state(stack, room)["queued"] == 4
        assert notify_events(col, since=mark) == [], "a notification went out while paused"
        chain_depth = queued[0]["depth"]

        vigil_ok(stack, "chat", "resume", room)
        after = col.wait_for(lambda c: len(notify_events(c, since=mark)) >= 4 and notify_events(c, since=mark),
                             10, "the queued notifications")
        assert [n["id"] for n in after[:4]] == [n["id"] for n in queued], "queue not delivered in order"
        assert r.llen(q) == 0
        r.close()
        # ... then live again: the chain runs on to the limit
        wait_stop(col, room)
        notes = notify_events(col)
        assert sorted(n["depth"] for n in notes if n["persona"] in ("arya", "gendry")) == list(range(MAX_DEPTH))
        assert chain_depth < MAX_DEPTH - 1
        assert max(n["depth"] for n in notify_events(col, since=mark)) == MAX_DEPTH - 1
        st = room_state(stack, room)
        assert st["paused"] is False and st["queued"] == 0
        validate_outputs(col, filters=("persona/+/notify",))
    finally:
        arya.stop()
        gendry.stop()


def test_kill9_of_chat_router_mid_chain_loses_nothing(stack):
    svc = stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    arya, gendry = pair(stack.broker.port, delay=0.005)
    try:
        room = uid("room")
        topic, first = human(room, "joel", "@arya go")
        pub.publish(topic, first)
        for depth in (20, 55):
            col.wait_for(lambda c: any(n["depth"] >= depth for n in notify_events(c)), 30, f"depth {depth}")
            svc.kill9()
            time.sleep(scaled(0.3))  # the personas' answers queue up at the broker meanwhile
            svc.start()
        wait_stop(col, room, timeout=60)
        wait_logged(stack, room, is_stop, 10, "the stop message in the log")
        time.sleep(scaled(0.5))
        assert_clean_chain(stack, room, first["id"])
        # every depth was notified; repeats after a restart carry the same id
        notes = notify_events(col)
        assert sorted(n["depth"] for n in notes) == list(range(MAX_DEPTH))
        assert len(arya.answered) + len(gendry.answered) == MAX_DEPTH
    finally:
        arya.stop()
        gendry.stop()


def test_redelivered_message_is_logged_and_forwarded_once(stack):
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")
    topic, msg = human(room, "joel", "@sansa hello", mid="dup-1")
    pub.publish(topic, msg)
    col.wait_event("persona/sansa/notify", timeout=10)
    pub.publish(topic, msg)
    no_id = {"room": room, "sender": "joel", "sender_type": "human", "text": "@bran no id here"}
    pub.publish(topic, no_id)
    pub.publish(topic, no_id)
    pub.publish(*human(room, "joel", "probe", mid="probe"))
    wait_logged(stack, room, lambda m: m["id"] == "probe", 10, "the probe")
    time.sleep(scaled(0.3))
    entries = log_entries(stack, room)
    assert [m["text"] for _, m in entries] == ["@sansa hello", "@bran no id here", "probe"]
    assert entries[1][1]["id"].startswith("h-") and isinstance(entries[1][1]["ts"], int)
    assert len({e["id"] for e in col.events("persona/sansa/notify")}) == 1
    assert len({e["id"] for e in col.events("persona/bran/notify")}) == 1


def test_mentions_from_text_and_field_never_the_sender(stack):
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")
    text = "@Arya, mail gendry@example.com or ask @arya again; cc @bran. @self status"
    topic, msg = human(room, "bran", text, mentions=["sansa", "bran"])
    pub.publish(topic, msg)
    pub.publish(*human(room, "joel", "probe", mid="probe2"))
    wait_logged(stack, room, lambda m: m["id"] == "probe2", 10, "the probe")
    time.sleep(scaled(0.3))
    got = sorted(e["persona"] for e in notify_events(col))
    assert got == ["arya", "bran", "sansa"], got  # a human may mention a persona of its name
    ev = notify_events(col)[0]
    assert ev["message_id"] == msg["id"] and ev["from"] == "bran" and ev["depth"] == 0
    assert ev["text"] == text and ev["sender_type"] == "human"
    # an AI sender never notifies itself
    mark = col.mark()
    topic, m2 = ai(room, "bran", "@Bran @arya note", mentions=["bran"], depth=1)
    pub.publish(topic, m2)
    pub.publish(*human(room, "joel", "probe", mid="probe3"))
    wait_logged(stack, room, lambda m: m["id"] == "probe3", 10, "the second probe")
    time.sleep(scaled(0.3))
    assert [e["persona"] for e in notify_events(col, since=mark)] == ["arya"]


def test_global_pause_covers_every_room_and_resume_all_delivers(stack):
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    rooms = [uid("room") for _ in range(3)]
    for r in rooms:
        pub.publish(*human(r, "joel", "hello"))
    for r in rooms:
        wait_logged(stack, r, lambda m: True, 10, f"room {r}")
    vigil_ok(stack, "chat", "pause", rooms[2])  # one room also paused by itself
    vigil_ok(stack, "chat", "pause", "--all")
    listing = vigil_ok(stack, "chat")
    assert all(line.split()[2] == "all" for line in listing.splitlines()[1:]), listing
    mark = col.mark()
    sent = []
    for i, r in enumerate(rooms):
        topic, m = human(r, "joel", f"@arya in room {i}")
        pub.publish(topic, m)
        sent.append(m["id"])
    for r, mid in zip(rooms, sent):
        wait_logged(stack, r, lambda m, mid=mid: m["id"] == mid, 10, "message logged while paused")
    time.sleep(scaled(0.3))
    assert notify_events(col, since=mark) == []
    # a room resumed alone stays held by the global pause
    vigil_ok(stack, "chat", "resume", rooms[0])
    time.sleep(scaled(0.3))
    assert notify_events(col, since=mark) == []
    vigil_ok(stack, "chat", "resume", "--all")
    got = col.wait_for(lambda c: len(notify_events(c, since=mark)) >= 3 and notify_events(c, since=mark), 10,
                       "every queued notification")
    assert sorted(n["message_id"] for n in got) == sorted(sent)
    for r in rooms:
        st = room_state(stack, r)
        assert st["paused"] is False and st["queued"] == 0, (r, st)
    # live again everywhere
    mark = col.mark()
    pub.publish(*human(rooms[2], "joel", "@arya live"))
    col.wait_for(lambda c: notify_events(c, since=mark), 10, "a live notification")


def test_bad_input_is_rejected_without_a_trace(stack):
    svc = stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")
    bad = [
        {"room": room, "sender": "joel", "sender_type": "robot", "text": "@arya hi"},
        {"room": room, "sender": "jo el", "sender_type": "human", "text": "@arya hi"},
        {"room": room, "sender": "joel", "sender_type": "ai", "text": "@arya hi", "depth": -1},
        {"room": "other", "sender": "joel", "sender_type": "human", "text": "@arya hi"},
        {"room": room, "sender": "joel", "sender_type": "human"},
    ]
    for b in bad:
        pub.publish(f"room/{room}/message", b)
    pub.publish(f"room/{room}/control", {"action": "delete", "all": True, "by": "joel"})
    pub.publish(f"room/{room}/control", {"action": "explode", "by": "joel"})
    errors = col.wait_for(lambda c: len(c.events("sys/chat-router/error")) >= 7 and c.events("sys/chat-router/error"),
                          10, "seven rejections")
    reasons = [e["reason"] for e in errors]
    assert reasons == ["bad_value", "bad_id", "bad_value", "topic_mismatch", "missing_field", "bad_value",
                       "bad_value"], reasons
    assert log_entries(stack, room) == [] and room_state(stack, room) is None
    assert notify_events(col) == []
    assert svc.metric("vigil_rejected_total") >= 7
    validate_outputs(col, filters=("sys/chat-router/error",))


def test_retention_by_count(stack):
    stack.service(CHAT, env={"VIGIL_CHAT_LOG_MAXLEN": "10"})
    pub = stack.publisher()
    room = uid("room")
    pub.publish_many([human(room, "joel", f"m{i}", mid=f"r-{i}") for i in range(400)], timeout=60)
    wait_logged(stack, room, lambda m: m["id"] == "r-399", 30, "the last message")
    n = len(log_entries(stack, room))
    # MAXLEN ~ trims whole stream nodes (100 entries by default): about 10, never everything
    assert 10 <= n <= 200, n
    assert room_state(stack, room)["count"] == 400


def test_delete_then_a_new_message_starts_afresh(stack):
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")
    vigil_ok(stack, "chat", "new", room, "--no-join")
    vigil_ok(stack, "chat", "pause", room)
    pub.publish(*human(room, "joel", "@arya queued"))
    r = stack.redis.client()
    harness.wait_until(lambda: r.llen(chat_key(stack, f"queue:{room}")) == 1, 10, "queued")
    vigil_ok(stack, "chat", "delete", room)
    assert not r.exists(chat_key(stack, f"log:{room}"), chat_key(stack, f"queue:{room}"))
    assert not r.sismember(chat_key(stack, "rooms"), room)
    assert not r.sismember(chat_key(stack, "paused"), room)
    assert "deleted" in room_state(stack, room)
    r.close()
    mark = col.mark()
    pub.publish(*human(room, "joel", "@arya back"))
    col.wait_event("persona/arya/notify", timeout=10, since=mark)
    st = room_state(stack, room)
    assert st["count"] == 1 and st["paused"] is False
    assert notify_events(col) and all(n["text"] != "@arya queued" for n in notify_events(col))


def wait_refused(col, mid, since=0):
    """The room_deleted event on sys/chat-router/error for message mid."""
    return col.wait_event("sys/chat-router/error",
                          lambda e: e.get("reason") == "room_deleted" and f"'{mid}'" in e["detail"],
                          timeout=10, what=f"room_deleted for {mid}", since=since)


def test_delete_stops_a_running_chain_and_a_late_ai_message_is_refused(stack):
    svc = stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    arya, gendry = pair(stack.broker.port, delay=0.02)
    try:
        room = uid("room")
        pub.publish(*human(room, "joel", "@arya start the chain"))
        col.wait_for(lambda c: any(n["depth"] >= 5 for n in notify_events(c)), 30, "depth 5")
        vigil_ok(stack, "chat", "delete", room)
        mark = col.mark()
        # the chain's answer to a notification sent before the delete
        topic, late = ai(room, "gendry", "@arya still there?", depth=7)
        pub.publish(topic, late)
        ev = wait_refused(col, late["id"], since=mark)
        assert ev["room"] == room and ev["topic"] == topic
        # the chain did not bring the room back (the refusal came after every earlier answer)
        st = room_state(stack, room)
        assert set(st) == {"deleted", "by"}, st
        assert log_entries(stack, room) == []
        assert notify_events(col, since=mark) == []
        assert not stack.redis.client().sismember(chat_key(stack, "rooms"), room)
        assert svc.metric("vigil_rejected_total", reason="room_deleted") >= 1
        validate_outputs(col, filters=("sys/chat-router/error",))
    finally:
        arya.stop()
        gendry.stop()

    # paused, then deleted: an AI message neither unpauses nor recreates it
    room = uid("room")
    vigil_ok(stack, "chat", "new", room, "--no-join")
    vigil_ok(stack, "chat", "pause", room)
    vigil_ok(stack, "chat", "delete", room)
    tomb = room_state(stack, room)
    mark = col.mark()
    topic, late = ai(room, "arya", "@gendry carry on", depth=5)
    pub.publish(topic, late)
    wait_refused(col, late["id"], since=mark)
    # acknowledged: its id is recorded, nothing else changed
    assert stack.redis.client().zscore(chat_key(stack, f"ids:{room}"), late["id"]) is not None
    assert room_state(stack, room) == tomb and log_entries(stack, room) == []
    assert notify_events(col, since=mark) == []


def stopped_chain(stack, col, pub):
    """Two personas chained from "@arya go" to the depth limit, then
    stopped: (room, the persona notified at 99, the other one)."""
    arya, gendry = pair(stack.broker.port)
    room = uid("room")
    try:
        pub.publish(*human(room, "joel", "@arya go"))
        wait_stop(col, room)
    finally:
        arya.stop()
        gendry.stop()
    last = max(notify_events(col), key=lambda n: n["depth"])
    assert last["depth"] == MAX_DEPTH - 1
    at99 = last["persona"]
    return room, at99, "gendry" if at99 == "arya" else "arya"


def test_an_ai_message_without_depth_continues_its_chain(stack):
    """An AI message with neither depth nor reply_to is one deeper than the
    notification its sender last got in the room: after the chain stopped,
    it does not start a new one at depth 1; a human message ends that."""
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room, at99, other = stopped_chain(stack, col, pub)
    # the persona notified at 99 speaks without depth: 100, stopped
    mark = col.mark()
    topic, m = ai(room, at99, f"@{other} one more thing")
    pub.publish(topic, m)
    stop = col.wait_event(f"room/{room}/message", lambda e: is_stop(e) and e["reply_to"] == m["id"],
                          timeout=10, what="the stop message for the depth-less answer", since=mark)
    assert stop["depth"] == MAX_DEPTH
    # the other one (notified at 98) is one hop short of the limit
    topic, m2 = ai(room, other, f"@{at99} and another", reply_to="forgotten-or-unknown")
    pub.publish(topic, m2)
    n = col.wait_event(f"persona/{at99}/notify", lambda e: e["message_id"] == m2["id"], timeout=10,
                       since=mark)
    assert n["depth"] == MAX_DEPTH - 1
    assert [e for e in notify_events(col, since=mark) if e["message_id"] == m["id"]] == []
    # a human message starts afresh: the remembered depths lapse
    pub.publish(*human(room, "joel", "ok, new topic"))
    topic, m3 = ai(room, at99, f"@{other} fresh start")
    pub.publish(topic, m3)
    n = col.wait_event(f"persona/{other}/notify", lambda e: e["message_id"] == m3["id"], timeout=10,
                       since=mark)
    assert n["depth"] == 1
    assert room_state(stack, room)["stopped"] == 2


def test_a_low_depth_field_without_reply_to_does_not_restart_a_stopped_chain(stack):
    """Seed: the depth limit (100 per chain) is the safety cap against
    infinite chains. A persona that states a depth lower than the
    notification it got (here a naive one that always says depth 1) and
    names no message it answers is still one deeper than that
    notification: after the chain stopped it stays stopped, instead of
    starting a fresh chain at depth 1 that could run forever."""
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room, at99, other = stopped_chain(stack, col, pub)
    mark = col.mark()
    topic, m = ai(room, at99, f"@{other} let us start over", depth=1)
    pub.publish(topic, m)
    stop = col.wait_event(f"room/{room}/message", lambda e: is_stop(e) and e["reply_to"] == m["id"],
                          timeout=10, what="the stop message for the low-depth answer", since=mark)
    assert stop["depth"] == MAX_DEPTH
    # the other one (notified at 98), also claiming depth 1: one hop short
    topic, m2 = ai(room, other, f"@{at99} me too", depth=1, reply_to="forgotten-or-unknown")
    pub.publish(topic, m2)
    n = col.wait_event(f"persona/{at99}/notify", lambda e: e["message_id"] == m2["id"], timeout=10,
                       since=mark)
    assert n["depth"] == MAX_DEPTH - 1
    assert [e for e in notify_events(col, since=mark) if e["message_id"] == m["id"]] == []


class AnswersTheHuman(Persona):
    """A persona that answers every notification by naming the human's
    first message as reply_to (remembered, depth 0) and stating depth 1,
    mentioning the other persona."""

    def __init__(self, port, name, other, first):
        super().__init__(port, name, other)
        self.first = first

    def answer(self, n):
        topic, m = ai(n["room"], self.name, f"@{self.other} back to the question",
                      reply_to=self.first, depth=1)
        self.c.publish(topic, json.dumps(m), qos=1)
        with self._lock:
            self.answered.append(m["id"])


def test_answering_the_human_message_with_depth_1_does_not_escape_the_limit(stack):
    """Seed: the depth limit (100 per chain) stops infinite AI-to-AI
    chains. Two personas that always reply to the human's message (depth 0)
    with depth 1 while mentioning each other are each notified by the
    other's newer message, so each answer is one deeper than that
    notification: stopped at depth 100 with exactly one stop message
    (instead of running at depth 1 forever)."""
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")
    topic, h = human(room, "joel", "@arya solve X with gendry")
    arya = AnswersTheHuman(stack.broker.port, "arya", "gendry", h["id"]).start()
    gendry = AnswersTheHuman(stack.broker.port, "gendry", "arya", h["id"]).start()
    try:
        pub.publish(topic, h)
        answers = lambda: [e for e in col.events(f"room/{room}/message") if e.get("sender_type") == "ai"]
        # a chain that escapes the limit runs on: give up well past 100 hops
        harness.wait_until(lambda: [e for e in col.events(f"room/{room}/message") if is_stop(e)]
                           or len(answers()) > MAX_DEPTH + 50, 60, "the stop message or runaway hops")
        time.sleep(scaled(0.5))  # nothing may follow the stop
    finally:
        arya.stop()
        gendry.stop()
    assert len({e["id"] for e in answers()}) == MAX_DEPTH, \
        f"{len(answers())} AI messages: the chain did not stop at depth {MAX_DEPTH}"
    stops = [e for e in col.events(f"room/{room}/message") if is_stop(e)]
    assert len(stops) == 1 and stops[0]["depth"] == MAX_DEPTH
    notes = notify_events(col)
    assert sorted(n["depth"] for n in notes) == list(range(0, MAX_DEPTH)), \
        "one notification per depth 0..99, none at or past the limit"
    wait_logged(stack, room, is_stop, 10, "the stop message in the log")
    entries = log_entries(stack, room)
    assert len(entries) == 1 + MAX_DEPTH + 1
    assert all(m["reply_to"] == h["id"] for _, m in entries if m["sender_type"] == "ai")
    assert room_state(stack, room)["stopped"] == 1


def test_a_human_named_like_a_persona_can_mention_it(stack):
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("room")
    topic, m = human(room, "arya", "@arya please summarise")
    pub.publish(topic, m)
    n = col.wait_event("persona/arya/notify", timeout=10)
    assert n["message_id"] == m["id"] and n["from"] == "arya" and n["depth"] == 0


def test_personas_module_answers_once_per_notification(stack):
    """The scripted persona itself: a duplicate notification is answered once."""
    p = Persona(stack.broker.port, "arya", "gendry").start()
    col = stack.collector()
    pub = stack.publisher()
    try:
        n = {"id": "n-1", "persona": "arya", "room": "r", "message_id": "m-1", "from": "joel", "depth": 4,
             "ts": harness.now_ms()}
        pub.publish("persona/arya/notify", n)
        pub.publish("persona/arya/notify", n)
        ans = col.wait_event("room/r/message", timeout=10)
        time.sleep(scaled(0.3))
        assert ans["depth"] == 5 and ans["reply_to"] == "m-1" and "@gendry" in ans["text"]
        assert len(col.events("room/r/message")) == 1 and p.duplicates == 1
    finally:
        p.stop()


def test_messages_from_many_rooms_in_parallel(stack):
    """Chains in several rooms at once stay separate and each stops at 100."""
    stack.service(CHAT)
    col = stack.collector()
    pub = stack.publisher()
    arya, gendry = pair(stack.broker.port)
    try:
        rooms = [uid("room") for _ in range(4)]
        firsts = {}
        for r in rooms:
            topic, m = human(r, "joel", "@gendry begin")
            firsts[r] = m["id"]
            pub.publish(topic, m)
        for r in rooms:
            wait_stop(col, r, timeout=120)
        time.sleep(scaled(0.5))
        for r in rooms:
            assert_clean_chain(stack, r, firsts[r])
        lst = vigil_ok(stack, "chat", "--json")
        rows = {json.loads(line)["room"]: json.loads(line) for line in lst.splitlines()}
        for r in rooms:
            assert rows[r]["messages"] == MAX_DEPTH + 2 and rows[r]["paused"] is False
    finally:
        arya.stop()
        gendry.stop()


def test_backlog_is_batched_and_a_pause_set_by_hand_is_read_between_runs(stack):
    """A backlog across many rooms arrives many messages per read: their
    commits share Redis round trips (the batched intake). The global pause
    flag, set by hand in Redis, is re-read every 20 ms meanwhile; route()
    gets no Redis while commits are in flight, so such a message is routed
    again after the run's replies: nothing fails, every message is logged
    once, and every notification is queued, none sent."""
    env = {"VIGIL_CHAT_FLAG_REFRESH_MS": "20"}
    svc = stack.service(CHAT, env=env)
    col = stack.collector()
    pub = stack.publisher()
    assert svc.terminate() == 0
    r = stack.redis.client()
    try:
        r.set(chat_key(stack, "paused-all"), "1")
    finally:
        r.close()
    rooms = [uid("room") for _ in range(40)]
    items, sent = [], collections.defaultdict(list)
    for k in range(25):
        for room in rooms:
            topic, m = human(room, "joel", f"@arya number {k}")
            items.append((topic, m))
            sent[room].append(m["id"])
    mark = col.mark()
    pub.publish_many(items, timeout=120)
    svc.start()
    for room in rooms:
        wait_logged(stack, room, lambda m, last=sent[room][-1]: m["id"] == last, 60, f"every message of {room}")
    for room in rooms:
        ids = [m["id"] for _, m in log_entries(stack, room)]
        assert ids == sent[room], f"{room}: logged {len(ids)} of {len(sent[room])}, in order: {ids == sorted(ids)}"
        st = room_state(stack, room)
        assert st["queued"] == len(sent[room]), (room, st)
    time.sleep(scaled(0.3))
    assert notify_events(col, since=mark) == []
    pipelined = svc.metric("vigil_commits_pipelined_total")
    print(f"\n{pipelined:.0f} of {len(items)} commits shared a Redis round trip")
    assert pipelined > len(items) // 4, pipelined
    assert svc.metric("vigil_redis_errors_total") == 0
    assert svc.metric("vigil_commit_conflicts_total") == 0
    # route() got no connection while commits were in flight: no reply was
    # read by the flag's GET and taken from the run
    assert svc.metric("vigil_commit_replies_lost_total") == 0
    assert "\"level\":\"error\"" not in svc.stderr_text()
