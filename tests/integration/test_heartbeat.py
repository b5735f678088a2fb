"""heartbeat (issue 11: the proactive "inner thoughts" heartbeat)
driven only through the broker, with a real Redis, the real service
process(es) and tests/support/fake_llm.py answering over real HTTP.

Intervals are shrunk to about a second through the documented
VIGIL_HEARTBEAT_* variables; the fake model answers by the checklist text
in the prompt (CHECK-OK -> HEARTBEAT_OK, CHECK-SPEAK -> a JSON message,
the break-reminder line -> plain text)."""

import json
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

import harness
from conftest import human, uid, validate_outputs
from harness import scaled
from fake_servers import FakeLLM, running

SERVICE = "heartbeat"
OUTPUTS = ("heartbeat/+/run", "room/+/message", "sys/#")

# The break-reminder test's checklist line.
BREAK = "- If more than 2 minutes have passed, remind the user to take a break."
BREAK_TEXT = "You have been at it for a while: time for a short break?"

RULES = [
    # plain text, as the specified prompt asks for (no JSON, no priority)
    {"match": "remind the user to take a break", "reply": BREAK_TEXT},
    {"match": "CHECK-OK-TAIL", "reply": "HEARTBEAT_OK. All quiet, nothing to report."},
    {"match": "CHECK-OKAY", "reply": "HEARTBEAT_OKAY"},
    {"match": "CHECK-OK", "reply": "HEARTBEAT_OK"},
    {"match": "CHECK-SPEAK", "reply": {"message": "Stand-up starts in 5 minutes.",
                                       "priority": "urgent", "category": "reminder"}},
    {"match": "CHECK-LOW", "reply": {"message": "Some trivia you might like.",
                                     "priority": "low", "category": "update"}},
    {"match": "CHECK-MIDDLE", "reply": "Nothing pressing, HEARTBEAT_OK, though the build is red."},
    {"reply": "HEARTBEAT_OK"},
]

# Fast but ordered: a run every ~1.5 s while the user is recent.
FAST = {
    "VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": 1500,
    "VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS": 3000,
    "VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS": 6000,
    "VIGIL_HEARTBEAT_LIVE_MS": 1000,
    "VIGIL_HEARTBEAT_UNANSWERED_MS": 600000,
    "VIGIL_LLM_TIMEOUT_MS": 4000,
    "VIGIL_LLM_RETRIES": 0,
}


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path, rules=RULES) as f:
        yield f


def start(stack, llm=None, instance=None, **env):
    e = dict(FAST)
    e["VIGIL_LLM_URL"] = llm.url if llm else ""
    e.update(env)
    return stack.service(SERVICE, env=e, instance=instance)


def config(persona, room, user="joel", checklist="CHECK-OK", **extra):
    """A config without quiet hours: it runs at any hour."""
    body = {"persona": persona, "user": user, "room": room, "checklist": checklist,
            "enabled": True, "ts": harness.now_ms()}
    body.update(extra)
    body = {k: v for k, v in body.items() if v is not None}
    return f"heartbeat/{persona}/config", body


def runs(col, persona="+", pred=None):
    return col.events(f"heartbeat/{persona}/run", pred)


def wait_run(col, persona, pred=None, timeout=15):
    return col.wait_event(f"heartbeat/{persona}/run", pred, timeout=timeout)


def room_messages(col, room="+"):
    return col.events(f"room/{room}/message")


def slow_run(stack, llm, persona, delay_ms, **env):
    """A service and a persona whose first run's model call (CHECK-SPEAK,
    answered after delay_ms) is in flight: (svc, collector, publisher, room)."""
    svc = start(stack, llm, **env)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    llm.control(delay_ms=delay_ms)
    pub.publish(*config(persona, room, checklist="CHECK-SPEAK"), retain=True)
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 15, "the run's model call in flight")
    return svc, col, pub, room


def configured(stack, llm, personas, checklist, delay_ms, topics=("heartbeat/+/run",)):
    """personas configured in one new room, the model answering after
    delay_ms: (collector on topics, publisher, room)."""
    col = stack.collector(topics=topics)
    pub = stack.publisher()
    room = uid("r")
    llm.control(delay_ms=delay_ms)
    for p in personas:
        pub.publish(*config(p, room, checklist=checklist), retain=True)
    return col, pub, room


def wait_log(svc, msg, pred=lambda d: True, timeout=10):
    """The info log line msg satisfying pred (logged just
    after the run's commit, so it may trail the run event a little)."""
    found = []

    def seen():
        found[:] = [d for d in svc.log_lines(msg) if d["level"] == "info" and pred(d)]
        return found

    harness.wait_until(seen, timeout, f"log line {msg!r}")
    return found[0]


# --------------------------------------------------------------------------


def test_ok_reply_sends_nothing_and_the_token_appears_in_no_room(stack, llm):
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("quiet1", room, checklist="CHECK-OK"), retain=True)
    pub.publish(*config("quiet2", room, checklist="CHECK-OK-TAIL"), retain=True)
    for p in ("quiet1", "quiet2"):
        ev = wait_run(col, p, lambda e: e["outcome"] == "ok")
        assert ev["tokens"] > 0 and ev["consecutive_skips"] == 1
        assert ev["next_in_ms"] > 0 and ev["next_run_ts"] > ev["ts"]
    # the user was active lately (configuring): the active interval is not stretched
    second = wait_run(col, "quiet1", lambda e: e["outcome"] == "ok" and e["consecutive_skips"] == 2)
    assert second["next_in_ms"] == 1500
    # the info log line, with the consecutive skips
    line = wait_log(svc, "heartbeat: no action needed",
                    lambda d: d.get("persona") == "quiet1" and d.get("run") == second["id"])
    assert line["consecutive_skips"] == "2"
    time.sleep(scaled(0.5))
    assert [m for m in room_messages(col) if m.get("sender", "").startswith("quiet")] == []
    for m in col.snapshot():
        assert b"HEARTBEAT_OK" not in m.payload or m.topic.startswith("heartbeat/"), m.topic
        if m.topic.startswith("room/"):
            assert b"HEARTBEAT_OK" not in m.payload
    # the prompt is the specified one
    prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    assert prompt.startswith("You are quiet")
    assert "Current time: " in prompt and "Time since last user interaction: " in prompt
    assert "Recent conversation summary:\n" in prompt
    assert "If nothing needs attention, reply only with: HEARTBEAT_OK" in prompt
    validate_outputs(col, OUTPUTS)


def test_message_reply_sends_exactly_one_proactive_message(stack, llm):
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*human(room, "joel", "I have the stand-up at ten"))
    pub.publish(*config("helper", room, checklist="CHECK-SPEAK"), retain=True)
    sent = wait_run(col, "helper", lambda e: e["outcome"] == "sent")
    assert sent["voi"] in (0.7, 0.8) and sent["priority"] == "urgent"
    assert sent["category"] == "reminder"
    assert sent["tokens"] > 0 and sent["consecutive_skips"] == 0
    line = wait_log(svc, "heartbeat: proactive message sent", lambda d: d.get("run") == sent["id"])
    assert line["persona"] == "helper"
    assert line["length"] == str(len("Stand-up starts in 5 minutes."))
    msg = col.wait_event(f"room/{room}/message", lambda m: m.get("sender") == "helper")
    assert msg["proactive"] is True and msg["sender_type"] == "ai"
    assert msg["text"] == "Stand-up starts in 5 minutes."
    assert msg["id"] == sent["message_id"]
    # the next run finds the message unanswered: skipped, nothing more sent
    wait_run(col, "helper", lambda e: e["outcome"] == "skipped" and e["reason"] == "unanswered")
    assert len([m for m in room_messages(col, room) if m.get("sender") == "helper"]) == 1
    assert llm.stats()["requests"] == 1
    assert svc.metric("vigil_heartbeat_runs_total", outcome="sent") == 1
    # the user answers: runs resume (and speak again)
    pub.publish(*human(room, "joel", "thanks!"))
    wait_run(col, "helper", lambda e: e["outcome"] == "sent" and e["id"] != sent["id"], timeout=20)
    validate_outputs(col, OUTPUTS)


def test_low_value_message_is_voi_blocked_and_an_answer_holding_the_token_is_ok(stack, llm):
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("lowly", room, checklist="CHECK-LOW"), retain=True)
    ev = wait_run(col, "lowly", lambda e: e["outcome"] != "skipped")
    # 0.3 x 0.3 - 0.1 or 0.2, published as the detail shows it
    assert ev["outcome"] == "voi-blocked" and ev["voi"] in (-0.01, -0.11)
    assert f"VoI {ev['voi']:g} <= 0.3" in ev["detail"]
    line = wait_log(svc, "heartbeat: VoI blocked message", lambda d: d.get("run") == ev["id"])
    assert line["persona"] == "lowly" and float(line["score"]) == ev["voi"]
    assert line["reasoning"] == ev["detail"]
    # the token anywhere in the answer, with other text or glued to a word:
    # a no-action run, and nothing of it reaches the room
    pub.publish(*config("mid", room, checklist="CHECK-MIDDLE"), retain=True)
    pub.publish(*config("okay", room, checklist="CHECK-OKAY"), retain=True)
    for p in ("mid", "okay"):
        ev = wait_run(col, p, lambda e: e["outcome"] != "skipped")
        assert ev["outcome"] == "ok" and ev["consecutive_skips"] == 1, ev
    time.sleep(scaled(0.3))
    assert not [m for m in room_messages(col, room) if m.get("sender") in ("lowly", "mid", "okay")]


def test_any_answer_but_heartbeat_ok_resets_the_consecutive_skips(stack, llm):
    """As specified, consecutiveSkips = 0 on any answer that is not
    HEARTBEAT_OK, before the VoI check: a blocked message ends the stretch
    and the next interval is the normal one (no recent window here, so the
    stretch applies)."""
    start(stack, llm, VIGIL_HEARTBEAT_RECENT_MS=0)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    llm.control(rules=[{"match": "CHECK-STREAK", "reply": "HEARTBEAT_OK"}] + RULES)
    pub.publish(*config("streak", room, checklist="CHECK-STREAK"), retain=True)
    ok = wait_run(col, "streak", lambda e: e["outcome"] == "ok" and e["consecutive_skips"] == 1)
    assert ok["next_in_ms"] == 4500  # the normal interval x1.5
    trivia = {"message": "Some trivia you might like.", "priority": "low", "category": "update"}
    llm.control(rules=[{"match": "CHECK-STREAK", "reply": trivia}] + RULES)
    ev = wait_run(col, "streak", lambda e: e["outcome"] == "voi-blocked")
    assert ev["consecutive_skips"] == 0
    assert ev["next_in_ms"] == 3000  # VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS, not stretched


def test_permission_blocked_when_the_user_does_not_allow_the_category(stack, llm):
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("shy", room, checklist="CHECK-SPEAK", allow_proactive=["alert"]),
                retain=True)
    ev = wait_run(col, "shy", lambda e: e["outcome"] != "skipped")
    assert ev["outcome"] == "permission-blocked" and "reminder" in ev["detail"]
    assert not [m for m in room_messages(col, room) if m.get("sender") == "shy"]
    line = wait_log(svc, "heartbeat: sandbox blocked proactive message",
                    lambda d: d.get("run") == ev["id"])
    assert line["persona"] == "shy" and line["detail"] == ev["detail"]


def test_the_break_reminder_in_plain_text_is_sent(stack, llm):
    """The break-reminder test: add "If more than 2 minutes have passed, remind the
    user to take a break." to HEARTBEAT.md, wait: a reminder is sent. The
    model answers in plain text, as the specified prompt asks: a normal
    message, sent at peak (VoI 0.5) or off-peak (0.4) alike (UTC here)."""
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("coach", room, checklist=BREAK), retain=True)
    sent = wait_run(col, "coach", lambda e: e["outcome"] != "skipped")
    assert sent["outcome"] == "sent", sent
    assert sent["priority"] == "normal" and sent["category"] == "default"
    assert sent["voi"] in (0.4, 0.5)
    raw = [m.payload for m in col.snapshot("heartbeat/coach/run")]
    # written 0.4, never 0.40000000000000002
    assert any(f'"voi":{sent["voi"]:g},'.encode() in p for p in raw), raw
    msg = col.wait_event(f"room/{room}/message", lambda m: m.get("sender") == "coach")
    assert msg["text"] == BREAK_TEXT and msg["priority"] == "normal"
    validate_outputs(col, OUTPUTS)


def test_a_slow_answer_after_the_user_spoke_is_not_sent(stack, llm):
    """The run starts in silence; the user writes while the model thinks;
    the answer arrives under VIGIL_HEARTBEAT_LIVE_MS after the user's words:
    not sent right after them, skipped (live-exchange), as at a run's start."""
    _, col, pub, room = slow_run(stack, llm, "patient", 2000, VIGIL_HEARTBEAT_LIVE_MS=6000)
    pub.publish(*human(room, "joel", "back at my desk"))
    ev = wait_run(col, "patient",
                  lambda e: e["outcome"] != "skipped" or e["reason"] == "live-exchange")
    assert ev["outcome"] == "skipped" and ev["reason"] == "live-exchange", ev
    assert "joel wrote" in ev["detail"] and "not sent" in ev["detail"]
    assert ev["tokens"] > 0  # the model was asked
    assert llm.stats()["requests"] == 1
    llm.control(delay_ms=0)
    time.sleep(scaled(0.5))
    assert not [m for m in room_messages(col, room) if m.get("sender") == "patient"]
    validate_outputs(col, OUTPUTS)


@pytest.mark.parametrize("change", ["off", "off-and-on", "deleted"])
def test_a_run_whose_heartbeat_changes_while_the_model_answers_sends_nothing(stack, llm, change):
    """The model call of a run that would speak (CHECK-SPEAK, urgent) is in
    flight when the user switches the heartbeat off, switches it off and on
    again, or deletes it. When the answer comes back the run is cancelled:
    no room message; `skipped` with reason `disabled` (off) or
    `reconfigured` (on again: the run was asked under a config no longer in
    force), counted as a skipped run; a deleted heartbeat's run ends
    without a word (stale)."""
    persona = uid("turned-")
    svc, col, pub, room = slow_run(stack, llm, persona, 2500)
    topic, body = config(persona, room, checklist="CHECK-SPEAK")
    if change == "deleted":
        pub.publish(topic, b"", retain=True)
    else:
        pub.publish(topic, dict(body, enabled=False, ts=harness.now_ms()), retain=True)
    if change == "off-and-on":  # on again, its checklist reworded (still CHECK-SPEAK)
        pub.publish(topic, dict(body, checklist="CHECK-SPEAK again", ts=harness.now_ms() + 1),
                    retain=True)
    store = stack.store(SERVICE)

    def applied():
        cfg = (store.state(persona)[1] or {}).get("cfg")
        return {"deleted": cfg is None, "off": cfg and cfg.get("enabled") is False,
                "off-and-on": cfg and cfg.get("checklist") == "CHECK-SPEAK again"}[change]

    harness.wait_until(applied, 10, "the change applied")
    assert llm.stats()["in_flight"] >= 1, "the change came after the answer: the test proves nothing"
    if change == "deleted":
        harness.wait_until(lambda: svc.metric("vigil_heartbeat_runs_total", outcome="stale") == 1,
                           15, "the deleted heartbeat's run ended")
        assert not runs(col, persona)
    else:
        ev = wait_run(col, persona)
        want = "disabled" if change == "off" else "reconfigured"
        assert ev["outcome"] == "skipped" and ev["reason"] == want, ev
        assert "cancelled, nothing sent" in ev["detail"], ev
        assert ev["tokens"] > 0  # the model was asked before the change
        harness.wait_until(lambda: svc.metric("vigil_heartbeat_runs_total", outcome="skipped") == 1,
                           10, "the cancelled run counted as skipped")
    llm.control(delay_ms=0)
    if change == "off-and-on":  # the next run, under the config in force, speaks
        ev = wait_run(col, persona, lambda e: e["outcome"] != "skipped")
        assert ev["outcome"] == "sent", ev
        sent = [m for m in room_messages(col, room) if m.get("sender") == persona]
        assert [m["heartbeat_run"] for m in sent] == [ev["id"]], sent
    else:
        time.sleep(scaled(0.5))
        assert not [m for m in room_messages(col, room) if m.get("sender") == persona]
    validate_outputs(col, OUTPUTS)


def test_the_user_talking_skips_the_run_with_the_reason(stack, llm):
    start(stack, llm, VIGIL_HEARTBEAT_LIVE_MS=8000)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("polite", room, checklist="CHECK-SPEAK"), retain=True)
    pub.publish(*human(room, "joel", "talking to someone else right now"))
    ev = wait_run(col, "polite")
    assert ev["outcome"] == "skipped" and ev["reason"] == "live-exchange"
    assert "joel" in ev["detail"]
    assert ev["next_in_ms"] > 0
    assert llm.stats()["requests"] == 0
    assert not [m for m in room_messages(col, room) if m.get("sender") == "polite"]


def hhmm(dt):
    return dt.strftime("%H:%M")


@pytest.mark.parametrize("tz", ["UTC", "Asia/Jakarta", "America/New_York"])
def test_quiet_hours_skip_in_the_configured_time_zone(stack, llm, tz):
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    local = datetime.now(timezone.utc).astimezone(ZoneInfo(tz))
    quiet = {"start": hhmm(local - timedelta(hours=1)), "end": hhmm(local + timedelta(hours=1)),
             "timezone": tz}
    pub.publish(*config("night", room, checklist="CHECK-SPEAK", quiet_hours=quiet), retain=True)
    ev = wait_run(col, "night")
    assert ev["outcome"] == "skipped" and ev["reason"] == "quiet-hours"
    assert tz in ev["detail"]
    # the next look is at the end of the window, about an hour away
    assert 3500_000 <= ev["next_in_ms"] <= 3660_000
    # outside the window (the hours before now): it runs
    other = {"start": hhmm(local - timedelta(hours=3)), "end": hhmm(local - timedelta(hours=2)),
             "timezone": tz}
    pub.publish(*config("day", room, checklist="CHECK-OK", quiet_hours=other), retain=True)
    assert wait_run(col, "day")["outcome"] == "ok"
    assert not [h for h in llm.stats()["history"] if h["prompt"].startswith("You are night,")]


def zone_at_local_hour(hour):
    """A fixed-offset zone (Etc/GMT-N is UTC+N) whose local hour is `hour` now."""
    utc = datetime.now(timezone.utc)
    off = (hour - utc.hour) % 24
    off = off - 24 if off > 14 else off
    return "Etc/GMT" + ("-" if off > 0 else "+") + str(abs(off)) if off else "UTC"


def test_quiet_hours_true_is_the_night(stack, llm):
    """`quiet_hours: true` keeps the night (22:00-07:00 in the persona's time
    zone) quiet, at night and at dawn; without quiet hours a persona runs
    at any hour."""
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    night, day = zone_at_local_hour(3), zone_at_local_hour(13)
    pub.publish(*config("dawn", room, checklist="CHECK-SPEAK", quiet_hours=True, timezone=night),
                retain=True)
    ev = wait_run(col, "dawn")
    assert ev["outcome"] == "skipped" and ev["reason"] == "quiet-hours", ev
    assert "quiet hours 22:00-07:00" in ev["detail"] and night in ev["detail"], ev
    # the next look is when the night ends, at 07:00 local: about 4 h away
    assert 3 * 3600_000 <= ev["next_in_ms"] <= 4 * 3600_000 + 60_000, ev
    # the same zone without quiet hours, and a zone where it is day: they speak
    pub.publish(*config("owl", room, checklist="CHECK-SPEAK", timezone=night), retain=True)
    pub.publish(*config("lark", room, checklist="CHECK-SPEAK", quiet_hours=True, timezone=day),
                retain=True)
    assert wait_run(col, "owl")["outcome"] == "sent"
    assert wait_run(col, "lark")["outcome"] == "sent"
    assert not [m for m in room_messages(col, room) if m.get("sender") == "dawn"]
    assert not [h for h in llm.stats()["history"] if h["prompt"].startswith("You are dawn,")]
    validate_outputs(col, OUTPUTS)


def test_no_llm_and_empty_checklist_skip_without_a_model_call(stack):
    start(stack, None)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("nollm", room), retain=True)
    pub.publish(*config("empty", room, checklist="  \n"), retain=True)
    assert wait_run(col, "nollm")["reason"] == "no-llm"
    assert wait_run(col, "empty")["reason"] == "empty-checklist"


def test_a_sleeping_persona_does_not_run(stack, llm):
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    now = harness.now_ms()
    pub.publish("persona/dozy/state", {"persona": "dozy", "ts": now, "rooms": {
        room: {"level": "sleep", "since": now, "trigger": "manual"}}}, retain=True)
    time.sleep(scaled(0.3))
    pub.publish(*config("dozy", room, checklist="CHECK-SPEAK"), retain=True)
    ev = wait_run(col, "dozy")
    assert ev["outcome"] == "skipped" and ev["reason"] == "persona-asleep"
    assert llm.stats()["requests"] == 0


ROOM_MAX = 64  # VIGIL_ROUTE_MAX_KEYS (libshared, compile time: no variable shrinks it)


def test_a_cleared_config_deletes_the_heartbeat_and_frees_its_place_in_the_room(stack, llm):
    """Clearing a persona's retained config (an empty retained message, how
    MQTT deletes one) deletes its heartbeat: no further run, while a witness
    persona's heartbeat in the same room keeps running (its runs are the
    clock, no sleep), and its place under the room's limit of heartbeats is
    freed (the room is filled with switched-off heartbeats: the limit has no
    variable). Clearing again, or a config never seen, changes nothing and
    raises no error; a later config is a new heartbeat, its runs numbered
    after the old ones; an empty room message is still not_json."""
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    room, never = uid("r"), uid("never-")
    index = f"{stack.prefix}{SERVICE}:room-personas:{room}"
    pub.publish(*config("gone", room), retain=True)
    pub.publish(*config("witness", room), retain=True)
    pub.publish_many(config(f"f{i:02d}", room, enabled=False) for i in range(ROOM_MAX - 2))
    c = stack.redis.client()
    try:
        harness.wait_until(lambda: c.scard(index) == ROOM_MAX, 30, "the room full")
        assert wait_run(col, "gone")["outcome"] == "ok"
        mark = col.mark()
        pub.publish(*config("late", room))
        err = col.wait_event(f"sys/{SERVICE}/error", lambda e: e.get("reason") == "limit",
                             since=mark, what="a config refused: the room is full")
        assert err["topic"] == "heartbeat/late/config", err

        mark = col.mark()
        pub.publish("heartbeat/gone/config", b"", retain=True)
        harness.wait_until(lambda: "cfg" not in store.state("gone")[1], 10, "the heartbeat deleted")
        t = harness.now_ms()  # the clear is committed by now
        _, rec = store.state("gone")
        n = rec["runs"]
        assert n >= 1 and rec["running"] == "" and rec["next_run"] == 0, rec
        assert rec["recent"] == [] and rec["last_activity"] == 0, rec
        assert not c.sismember(index, "gone") and c.scard(index) == ROOM_MAX - 1
        # three runs of the witness decided after the clear: none of gone's
        harness.wait_until(lambda: len(runs(col, "witness", lambda e: e["ts"] > t)) >= 3, 15,
                           "three runs of the witness after the clear")
        assert not runs(col, "gone", lambda e: e["run"] > n)
        assert store.state("gone")[1] == rec

        # its place is free: the config refused before joins the room
        pub.publish(*config("late", room))
        harness.wait_until(lambda: c.sismember(index, "late"), 10, "late in the room")
        assert c.scard(index) == ROOM_MAX
        assert wait_run(col, "late")["outcome"] == "ok"

        # cleared again, and a config never seen cleared: the witness's
        # state, published after both on the same connection, is taken after
        pub.publish("heartbeat/gone/config", b"", retain=True)
        pub.publish(f"heartbeat/{never}/config", b"", retain=True)
        now = harness.now_ms()
        pub.publish("persona/witness/state", {"persona": "witness", "ts": now, "rooms": {
            room: {"level": "active", "since": now}}}, retain=True)
        harness.wait_until(lambda: store.state("witness")[1]["levels"] == {room: "active"}, 10,
                           "the witness's state, after the clears")
        assert store.state("gone")[1] == rec
        assert store.state(never) == (0, None)
        assert c.scard(index) == ROOM_MAX
        assert not col.find(f"sys/{SERVICE}/error", since=mark)
        assert not runs(col, "gone", lambda e: e["run"] > n)
    finally:
        c.close()

    # a later config is a new heartbeat (here in another room: this one is full)
    other = uid("r")
    pub.publish(*config("gone", other), retain=True)
    ev = wait_run(col, "gone", lambda e: e["run"] > n)
    assert ev["run"] == n + 1 and ev["room"] == other and ev["outcome"] == "ok", ev
    validate_outputs(col, OUTPUTS)

    # an empty payload where nothing is retained is still a bad input
    mark = col.mark()
    pub.publish(f"room/{room}/message", b"")
    err = col.wait_event(f"sys/{SERVICE}/error", since=mark, timeout=10)
    assert err["reason"] == "not_json" and err["topic"] == f"room/{room}/message", err


def test_the_cleared_config_published_again_byte_for_byte_is_a_new_heartbeat(stack, llm):
    """A config without an id is recognised by its payload's hash; on a
    topic that takes clears, that hash alone does not make it a
    redelivery: the very bytes that were cleared, published again, start a
    new heartbeat (and, published once more, change nothing)."""
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    room = uid("r")
    topic, body = config("again", room)
    pub.publish(topic, body, retain=True)
    assert wait_run(col, "again")["outcome"] == "ok"
    pub.publish(topic, b"", retain=True)
    harness.wait_until(lambda: "cfg" not in store.state("again")[1], 10, "the heartbeat deleted")
    n = store.state("again")[1]["runs"]
    pub.publish(topic, body, retain=True)  # the same dict: the same bytes
    ev = wait_run(col, "again", lambda e: e["run"] > n)
    assert ev["run"] == n + 1 and ev["outcome"] == "ok", ev
    _, rec = store.state("again")
    assert rec["cfg"]["room"] == room, rec


def test_a_run_queued_when_its_heartbeat_goes_is_not_sent_to_the_model(stack, llm):
    """One run in the model at a time (VIGIL_LLM_CONCURRENCY=1, a slow
    model): a second persona's run waits on the job stream; its config is
    cleared meanwhile. When the worker takes that run, the model is not
    asked (its answer would be ignored): no request with its checklist, the
    run ends without a word, counted as a call spared."""
    svc = start(stack, llm, VIGIL_LLM_CONCURRENCY=1, VIGIL_LLM_TIMEOUT_MS=15000)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    room = uid("r")
    llm.control(delay_ms=8000)  # queued's run is due ~3 s after its config
    pub.publish(*config("busy", room), retain=True)
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 15, "busy's run in the model")
    pub.publish(*config("queued", room, checklist="CHECK-QUEUED-ONLY"), retain=True)
    harness.wait_until(lambda: (store.state("queued")[1] or {}).get("running"), 15,
                       "queued's run waiting for the model")
    pub.publish("heartbeat/queued/config", b"", retain=True)
    harness.wait_until(lambda: "cfg" not in store.state("queued")[1], 10, "queued deleted")
    assert llm.stats()["requests"] == 1  # busy's call still holds the one slot
    harness.wait_until(lambda: svc.metric("vigil_heartbeat_calls_spared_total") == 1, 20,
                       "queued's run taken and spared")
    llm.control(delay_ms=0)
    assert wait_run(col, "busy")["outcome"] == "ok"
    prompts = [h.get("prompt", "") for h in llm.stats().get("history", [])]
    assert prompts and not [p for p in prompts if "CHECK-QUEUED-ONLY" in p], prompts
    assert not runs(col, "queued")
    assert svc.metric("vigil_heartbeat_runs_total", outcome="stale") == 1


def test_a_cleared_persona_state_forgets_its_levels(stack, llm):
    """A cleared persona/{p}/state is what {"rooms":{}} says: no level kept,
    as if no state had come, so a persona skipped as asleep runs again.
    Cleared again, nothing changes and nothing is refused."""
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    room = uid("r")
    now = harness.now_ms()
    pub.publish("persona/dozy/state", {"persona": "dozy", "ts": now, "rooms": {
        room: {"level": "sleep", "since": now, "trigger": "manual"}}}, retain=True)
    harness.wait_until(lambda: (store.state("dozy")[1] or {}).get("levels") == {room: "sleep"},
                       10, "the level kept")
    pub.publish(*config("dozy", room), retain=True)
    assert wait_run(col, "dozy")["reason"] == "persona-asleep"
    mark = col.mark()
    pub.publish("persona/dozy/state", b"", retain=True)
    harness.wait_until(lambda: store.state("dozy")[1]["levels"] == {}, 10, "the levels forgotten")
    t = harness.now_ms()
    ev = wait_run(col, "dozy", lambda e: e["ts"] > t)
    assert ev["outcome"] == "ok", ev
    # again (and for a persona never seen): the witness's state comes after
    pub.publish("persona/dozy/state", b"", retain=True)
    pub.publish(f"persona/{uid('never-')}/state", b"", retain=True)
    pub.publish("persona/wit/state", {"persona": "wit", "ts": now, "rooms": {
        room: {"level": "active", "since": now}}}, retain=True)
    harness.wait_until(lambda: (store.state("wit")[1] or {}).get("levels") == {room: "active"},
                       10, "the witness's state, after the clears")
    assert store.state("dozy")[1]["levels"] == {}
    assert sorted(stack.store(SERVICE).states()) == ["dozy", "wit"]
    assert not col.find(f"sys/{SERVICE}/error", since=mark)


def test_kill9_during_a_run_neither_loses_the_schedule_nor_runs_twice(stack, llm):
    env = {"VIGIL_LLM_TIMEOUT_MS": 3000, "VIGIL_HEARTBEAT_JOB_LEASE_MS": 4000}
    svc, col, _, room = slow_run(stack, llm, "sturdy", 2500, **env)
    svc.kill9()
    llm.control(delay_ms=0)
    svc.start()
    sent = wait_run(col, "sturdy", lambda e: e["outcome"] == "sent", timeout=30)
    # the schedule goes on: the next run comes (and skips: unanswered)
    wait_run(col, "sturdy", lambda e: e["outcome"] == "skipped" and e["reason"] == "unanswered",
             timeout=20)
    time.sleep(scaled(1.0))
    assert len(runs(col, "sturdy", lambda e: e["id"] == sent["id"])) == 1
    assert len([m for m in room_messages(col, room) if m.get("sender") == "sturdy"]) == 1
    validate_outputs(col, OUTPUTS)


def test_a_run_of_a_dead_replica_is_taken_over_after_its_claim_lapses_and_sent_once(stack, llm):
    env = {"VIGIL_LLM_TIMEOUT_MS": 2000, "VIGIL_HEARTBEAT_JOB_LEASE_MS": 3000}
    a = start(stack, llm, instance="hb-dead", **env)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    llm.control(delay_ms=1800)
    topic, body = config("orphan", room, checklist="CHECK-SPEAK")
    pub.publish(topic, body, retain=True)
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 15, "the run's model call in flight")
    a.kill9()
    llm.control(delay_ms=0)
    # a replacement under another name: nothing of its own is pending; it
    # takes the dead replica's run once idle past the lease
    b = start(stack, llm, instance="hb-new", **env)
    sent = wait_run(col, "orphan", lambda e: e["outcome"] == "sent", timeout=30)
    # not before the claim lapsed: run start (1.5 s after configuring) + lease
    assert sent["ts"] - body["ts"] >= 1500 + 3000 - 100
    time.sleep(scaled(1.5))
    assert len(runs(col, "orphan", lambda e: e["id"] == sent["id"])) == 1
    assert len([m for m in room_messages(col, room) if m.get("sender") == "orphan"]) == 1
    assert b.metric("vigil_heartbeat_runs_reclaimed_total") >= 1


def test_shrinking_n_hands_over_the_removed_index_job_stream_and_the_run_is_sent_once(stack, llm):
    """N shrinks 2 -> 1 with replica 1/2 killed while a run of its shard is
    in the model: once its heartbeat key is gone, the survivor 0/1 takes
    over index 1's job stream (with its outbox and timers) and that very
    run is sent, once; it is neither stranded nor given up as run-lost.
    The lease is long, so the run guard (2 leases + a budget) cannot end
    the run before the takeover (~10 s)."""
    env = {"VIGIL_LLM_TIMEOUT_MS": 3000, "VIGIL_HEARTBEAT_JOB_LEASE_MS": 20000}
    a = start(stack, llm, instance="hb-s1", VIGIL_SHARD="1/2", **env)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    llm.control(delay_ms=2500)
    personas = [uid("sh") for _ in range(8)]
    for p in personas:
        pub.publish(*config(p, room, checklist="CHECK-SPEAK"), retain=True)
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 15, "a run of shard 1 in the model")
    a.kill9()
    llm.control(delay_ms=0)
    base = stack.prefix + "heartbeat:"
    c = stack.redis.client()
    try:
        entries = c.xrange(f"{base}jobs:1")
        text = b" ".join(v for _, f in entries for v in f.values())
        stranded = [p for p in personas if p.encode() in text]
        assert stranded, "index 1's job stream holds the run the killed replica had claimed"
        b = start(stack, llm, instance="hb-s0", VIGIL_SHARD="0/1", **env)
        harness.wait_until(lambda: not c.exists(f"{base}jobs:1"), 30, "index 1's job stream taken over")
        for p in stranded:
            first = wait_run(col, p, timeout=30)
            assert first["outcome"] == "sent", first
            time.sleep(scaled(0.5))
            assert len(runs(col, p, lambda e, i=first["id"]: e["id"] == i)) == 1
            assert len([m for m in room_messages(col, room) if m.get("sender") == p]) == 1
        assert b.metric("vigil_handover_moved_total") >= len(entries)
    finally:
        c.close()
    validate_outputs(col, OUTPUTS)


def test_a_restart_neither_bursts_nor_skips_runs(stack, llm):
    svc = start(stack, llm, VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS=2000)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("steady", room, checklist="CHECK-OK"), retain=True)
    first = wait_run(col, "steady", lambda e: e["outcome"] == "ok")
    svc.terminate()
    time.sleep(scaled(0.5))
    svc.start()  # the retained config comes again: the same input, no reset
    second = wait_run(col, "steady", lambda e: e["run"] == first["run"] + 1, timeout=20)
    # the second run came when the first scheduled it, not at once
    assert second["ts"] >= first["next_run_ts"] - 50
    time.sleep(scaled(0.5))
    assert len(runs(col, "steady", lambda e: e["run"] == first["run"] + 1)) == 1


def test_two_replicas_never_run_the_same_persona_at_once(stack, llm):
    env = {"VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": 200, "VIGIL_LLM_TIMEOUT_MS": 5000}
    start(stack, llm, instance="hb-a", VIGIL_SHARD="0/2", **env)
    start(stack, llm, instance="hb-b", VIGIL_SHARD="1/2", **env)
    personas = [f"twin{i}" for i in range(6)]
    col, _, _ = configured(stack, llm, personas, "CHECK-OK", 400)
    for p in personas:
        col.wait_for(lambda c, p=p: len(runs(col, p, lambda e: e["outcome"] == "ok")) >= 3, 40,
                     f"3 runs of {p}")
    history = llm.stats()["history"]
    for p in personas:
        spans = sorted((h["start"], h["end"]) for h in history
                       if h["prompt"].startswith(f"You are {p},"))
        assert len(spans) >= 3
        for (s0, e0), (s1, _) in zip(spans, spans[1:]):
            assert s1 >= e0, f"{p}: two model calls overlapped"
    # each run number once per persona
    for p in personas:
        numbers = [e["run"] for e in runs(col, p)]
        assert len(numbers) == len(set(numbers))


def test_user_message_reschedules_and_idle_cap_stops_runs(stack, llm):
    start(stack, llm, VIGIL_HEARTBEAT_IDLE_CAP_MS=2500)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("idler", room, checklist="CHECK-OK"), retain=True)
    stop = wait_run(col, "idler", lambda e: e["outcome"] == "skipped", timeout=20)
    assert stop["reason"] == "idle-cap" and "next_run_ts" not in stop
    time.sleep(scaled(2.0))
    assert len(runs(col, "idler", lambda e: e["reason"] == "idle-cap" if "reason" in e else False)) == 1
    n = len(runs(col, "idler"))
    pub.publish(*human(room, "joel", "back again"))
    wait_run(col, "idler", lambda e: e["outcome"] == "ok" and e["run"] > stop["run"], timeout=10)
    assert len(runs(col, "idler")) > n


def test_a_user_away_for_days_is_still_looked_in_on_every_inactive_interval(stack, llm):
    """No idle cap by default: a heartbeat keeps waking on its inactive
    interval however long the user has been away."""
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("patient", room, checklist="CHECK-OK"), retain=True)
    first = wait_run(col, "patient", lambda e: e["outcome"] == "ok")
    svc.terminate()
    # the user was last seen 49 hours ago (past the 48 h cap this service once had)
    key = f"{stack.prefix}{SERVICE}:state:patient"
    c = stack.redis.client()
    try:
        rec = json.loads(c.hget(key, "s"))
        rec["last_activity"] = harness.now_ms() - 49 * 3600_000
        c.hset(key, "s", json.dumps(rec))
    finally:
        c.close()
    svc.start()
    after = [wait_run(col, "patient", lambda e, n=n: e["run"] == first["run"] + n, timeout=20)
             for n in (1, 2)]
    for ev in after:
        assert ev["outcome"] == "ok", ev
        # the inactive interval (its stretch is capped there)
        assert ev["next_in_ms"] == FAST["VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS"], ev
    assert not runs(col, "patient", lambda e: e.get("reason") == "idle-cap")


BAD = [
    ("heartbeat/p1/config", b"not json", "not_json"),
    ("room/r1/message", b"", "not_json"),  # only the retained inputs take an empty one (a clear)
    ("heartbeat/p1/config", {"persona": "p1", "room": "r1", "enabled": True}, "missing_field"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": "yes"}, "wrong_type"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u u", "room": "r1", "enabled": True}, "bad_id"),
    ("heartbeat/p2/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True}, "topic_mismatch"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "quiet_hours": {"start": "25:00", "end": "07:00"}}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "quiet_hours": "22:00-22:00"}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "quiet_hours": {"start": "22:00", "end": "07:00", "timezone": "Mars/Olympus"}},
     "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "allow_proactive": ["gossip"]}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "checklist_file": "../etc/passwd"}, "bad_value"),
    ("heartbeat/p1/config", b'{"persona": "p1", "user": "\xff"}', "invalid_utf8"),
    # a NUL (\u0000) would cut the value short: "Asia/Jakarta\u0000x" read as
    # Asia/Jakarta, a checklist cut at the NUL
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "checklist": "a\u0000b"}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "timezone": "UTC\u0000x"}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "identity": "me\u0000x"}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "model": "m\u0000x"}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "quiet_hours": "22:00-07:00\u0000x"}, "bad_value"),
    ("heartbeat/p1/config", {"persona": "p1", "user": "u", "room": "r1", "enabled": True,
                             "allow_proactive": ["reminder\u0000x"]}, "bad_value"),
    ("persona/p1/state", {"persona": "p1", "rooms": {"r1": {"level": "sleep\u0000x"}}}, "bad_value"),
    ("room/r1/message", b"{\"sender\": ", "not_json"),
    ("room/r1/message", {"sender": "a b", "sender_type": "human", "text": "t"}, "bad_id"),
    ("room/r1/message", {"sender": "a", "sender_type": "robot", "text": "t"}, "bad_value"),
    ("room/r1/message", {"sender": "a", "sender_type": "human"}, "missing_field"),
    ("persona/p1/state", {"persona": "p1", "rooms": {"r1": {"level": "napping"}}}, "bad_value"),
    ("persona/p1/state", {"persona": "p1", "rooms": ["r1"]}, "wrong_type"),
    ("persona/p1/state", {"persona": "p1", "rooms": {"r 1": {"level": "sleep"}}}, "bad_id"),
]


@pytest.mark.parametrize("topic,payload,reason", BAD)
def test_bad_input_is_rejected_with_a_reason_and_changes_nothing(stack, topic, payload, reason):
    svc = start(stack, None)
    col = stack.collector(topics=(f"sys/{SERVICE}/error",))
    pub = stack.publisher()
    pub.publish(topic, payload)
    ev = col.wait_event(f"sys/{SERVICE}/error", timeout=10)
    assert ev["reason"] == reason, ev
    assert ev["topic"] == topic and ev["detail"]
    assert svc.metric("vigil_rejected_total", reason=reason) >= 1
    assert stack.store(SERVICE).states() == {}
    validate_outputs(col, ("sys/#",))


def test_an_error_quoting_part_of_a_long_value_cuts_it_between_characters(stack):
    """A detail quotes the first 64 bytes of an unknown time zone and the
    first 40 of an unknown category: cut there, never inside a UTF-8
    sequence, so the error event stays valid UTF-8 (it carried a lone 0xC3)."""
    svc = start(stack, None)
    col = stack.collector(topics=(f"sys/{SERVICE}/error",))
    pub = stack.publisher()
    pub.publish(*config("tzlong", "r1", timezone="x" + "é" * 40))
    pub.publish(*config("catlong", "r1", allow_proactive=["x" + "é" * 30]))
    for p, want in (("tzlong", "time zone 'x" + "é" * 31 + "...': longer than 64 bytes"),
                    ("catlong", "unknown category 'x" + "é" * 19 + "'")):
        ev = col.wait_event(f"sys/{SERVICE}/error", lambda e, p=p: e["topic"] == f"heartbeat/{p}/config")
        assert ev["reason"] == "bad_value" and want in ev["detail"], ev
    for m in col.snapshot():
        m.payload.decode("utf-8")  # raises on a cut sequence
    assert stack.store(SERVICE).states() == {}
    assert svc.alive()


def test_oversize_config_is_rejected(stack):
    svc = start(stack, None, VIGIL_MAX_PAYLOAD=2048)
    col = stack.collector(topics=(f"sys/{SERVICE}/error",))
    pub = stack.publisher()
    topic, body = config("big", "r1", checklist="x" * 4000)
    pub.publish(topic, body)
    assert col.wait_event(f"sys/{SERVICE}/error", timeout=10)["reason"] == "oversize"
    assert svc.metric("vigil_rejected_total", reason="oversize") >= 1
    assert stack.store(SERVICE).states() == {}


def test_help_lists_every_heartbeat_variable(stack):
    svc = stack.service(SERVICE, start=False)
    out = svc.run_cli(["--help"]).stdout.decode()
    for name, default in [("ACTIVE_INTERVAL_MS", "120000"), ("NORMAL_INTERVAL_MS", "600000"),
                          ("INACTIVE_INTERVAL_MS", "1800000"), ("RECENT_MS", "300000"),
                          ("INACTIVE_AFTER_MS", "3600000"), ("LIVE_MS", "120000"),
                          ("UNANSWERED_MS", "7200000"), ("IDLE_CAP_MS", "0"),
                          ("SKIP_STRETCH", "1.5")]:
        assert f"VIGIL_HEARTBEAT_{name} (default: {default})" in out
    assert "9104" in out


def test_heartbeat_survives_mutated_inputs(stack, llm):
    """The fuzz of test_fuzz_inputs.py on heartbeat's own inputs (config,
    room messages, persona state), with runs going on meanwhile."""
    import json as _json
    import random

    from test_fuzz_inputs import load_example, mutate_bytes, mutate_value, wait_drained

    svc = start(stack, llm, VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS=300)
    col = stack.collector(topics=("heartbeat/+/run", "sys/+/error", "room/+/message"))
    pub = stack.publisher()
    rng = random.Random(20261124)
    targets = [("heartbeat/{p}/config", "heartbeat-config"), ("room/{r}/message", "room-message"),
               ("persona/{p}/state", "persona-state")]
    examples = {name: load_example(name) for _, name in targets}
    for i in range(1200):
        pattern, name = rng.choice(targets)
        p, r = rng.choice(["ann", "bob", "cy"]), rng.choice(["fz-a", "fz-b"])
        topic = pattern.format(p=p, r=r)
        obj = _json.loads(_json.dumps(examples[name]))
        if "persona" in obj:
            obj["persona"] = p
        if "room" in obj:
            obj["room"] = r
        obj["id"] = f"fz-{i}"
        for _ in range(rng.randint(0, 3)):
            obj = mutate_value(rng, obj)
        data = _json.dumps(obj).encode() if isinstance(obj, dict) else _json.dumps(obj).encode()
        if rng.random() < 0.35:
            data = mutate_bytes(rng, data)
        pub.publish(topic, data)
    wait_drained(svc, 120, "heartbeat done with the fuzz backlog")
    assert svc.alive()
    harness.wait_until(svc.is_ready, 30, "ready after fuzzing")
    assert svc.metric("vigil_rejected_total") > 0 and svc.metric("vigil_commits_total") > 0
    for m in col.snapshot():
        if m.topic.startswith("room/"):
            assert b"HEARTBEAT_OK" not in m.payload
    # and still works
    room = uid("r")
    pub.publish(*config("after", room, checklist="CHECK-OK"), retain=True)
    assert wait_run(col, "after", timeout=20)["outcome"] == "ok"
    validate_outputs(col, ("heartbeat/+/run", "sys/#"))  # room/+/message holds the fuzz itself


@pytest.mark.parametrize("var,value", [
    ("VIGIL_HEARTBEAT_SKIP_STRETCH", "0.5"), ("VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS", "abc"),
    ("VIGIL_HEARTBEAT_IDLE_CAP_MS", "-1"), ("VIGIL_HEARTBEAT_MAX_TOKENS", "0"),
])
def test_bad_environment_exits_2_naming_the_variable(stack, var, value):
    svc = stack.service(SERVICE, start=False)
    r = svc.run_cli([], env={var: value})
    assert r.returncode == 2, r.stderr
    assert var.encode() in r.stderr


def test_editing_the_checklist_file_steers_the_next_run(stack, llm, tmp_path):
    """The user controls the heartbeat by editing its checklist file: the
    break-reminder line added to the file is used at the next run (no config
    published again), and a file that is gone skips runs without a model call."""
    folder = tmp_path / "checklists"
    folder.mkdir()
    path = folder / "HEARTBEAT.md"
    path.write_text("- CHECK-OK: anything pending?\n", encoding="utf-8")
    start(stack, llm, VIGIL_HEARTBEAT_CHECKLIST_DIR=str(folder))
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    topic, body = config("steered", room)
    del body["checklist"]
    body["checklist_file"] = "HEARTBEAT.md"
    pub.publish(topic, body, retain=True)
    first = wait_run(col, "steered")
    assert first["outcome"] == "ok", first
    path.write_text("- CHECK-OK: anything pending?\n" + BREAK + "\n", encoding="utf-8")
    sent = wait_run(col, "steered", lambda e: e["outcome"] == "sent", timeout=20)
    said = [m for m in room_messages(col, room) if m.get("sender") == "steered"]
    assert [m["text"] for m in said] == [BREAK_TEXT], said
    assert said[0]["heartbeat_run"] == sent["id"]
    # gone: the next run (after the user answers) is skipped before the model
    path.unlink()
    asked = llm.stats()["requests"]
    pub.publish(*human(room, "joel", "thanks, stretching now"))
    ev = wait_run(col, "steered", lambda e: e["run"] > sent["run"] and
                  e.get("reason") not in ("live-exchange", "unanswered"), timeout=20)
    assert ev["outcome"] == "skipped" and ev["reason"] == "checklist-unreadable", ev
    assert "cannot read 'HEARTBEAT.md'" in ev["detail"], ev
    assert llm.stats()["requests"] == asked
    validate_outputs(col, OUTPUTS)


def test_the_break_reminder_added_after_a_silent_run_comes_one_active_interval_later(
        stack, llm, tmp_path):
    """The test as specified: start, a silent run ("heartbeat: no action
    needed"), add the break-reminder line to the checklist file, wait the
    active interval (2 min; 1.5 s here): the reminder is sent. The silent
    run does not stretch the active interval, so the edit is read by the
    very next run, one active interval after the silent one."""
    folder = tmp_path / "checklists"
    folder.mkdir()
    path = folder / "HEARTBEAT.md"
    path.write_text("- CHECK-OK: anything pending?\n", encoding="utf-8")
    svc = start(stack, llm, VIGIL_HEARTBEAT_CHECKLIST_DIR=str(folder))
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    topic, body = config("breaker", room)
    del body["checklist"]
    body["checklist_file"] = "HEARTBEAT.md"
    pub.publish(topic, body, retain=True)
    first = wait_run(col, "breaker")
    assert first["outcome"] == "ok" and first["consecutive_skips"] == 1, first
    assert first["next_in_ms"] == 1500, first  # not 2250: the active interval is not stretched
    wait_log(svc, "heartbeat: no action needed", lambda d: d.get("run") == first["id"])
    path.write_text("- CHECK-OK: anything pending?\n" + BREAK + "\n", encoding="utf-8")
    sent = wait_run(col, "breaker", lambda e: e["run"] > first["run"])
    assert sent["outcome"] == "sent" and sent["run"] == first["run"] + 1, sent
    assert sent["ts"] - first["ts"] == pytest.approx(1500, abs=scaled(0.5) * 1000), sent
    said = [m for m in room_messages(col, room) if m.get("sender") == "breaker"]
    assert [m["text"] for m in said] == [BREAK_TEXT], said
    wait_log(svc, "heartbeat: proactive message sent", lambda d: d.get("run") == sent["id"])
    validate_outputs(col, OUTPUTS)


def test_past_the_recent_window_silent_runs_stretch_the_interval(stack, llm):
    """Consecutive HEARTBEAT_OK answers lengthen the normal interval x1.5
    (VIGIL_HEARTBEAT_SKIP_STRETCH), up to the inactive one."""
    start(stack, llm, VIGIL_HEARTBEAT_RECENT_MS=0)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*config("stretchy", uid("r")), retain=True)
    first = wait_run(col, "stretchy")
    assert first["outcome"] == "ok" and first["next_in_ms"] == 4500, first  # 3000 x 1.5
    second = wait_run(col, "stretchy", lambda e: e["run"] == 2)
    assert second["outcome"] == "ok" and second["next_in_ms"] == 6000, second  # capped


def test_a_failed_model_call_or_an_unusable_answer_logs_heartbeat_run_failed(stack, llm):
    """The model call fails (HTTP 500) or answers something unusable: the
    run ends `error` with its reason, nothing is sent, and the service logs
    "heartbeat run failed" at error level, as the specified engine does."""
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    llm.control(status=500, fail_next=1)
    pub.publish(*config("failing", room, checklist="CHECK-BROKEN"), retain=True)
    failed = wait_run(col, "failing")
    assert failed["outcome"] == "error" and failed["reason"] == "llm-error", failed

    def failed_line(run):
        found = []

        def seen():
            found[:] = [d for d in svc.log_lines("heartbeat run failed") if d.get("run") == run]
            return found

        harness.wait_until(seen, 10, f"'heartbeat run failed' of {run}")
        return found[0]

    line = failed_line(failed["id"])
    assert line["level"] == "error" and line["persona"] == "failing"
    assert line["reason"] == "llm-error" and "HTTP 500" in line["detail"]
    llm.control(rules=[{"match": "CHECK-BROKEN", "reply": {"note": "no message field"}}] + RULES)
    bad = wait_run(col, "failing", lambda e: e["run"] > failed["run"])
    assert bad["outcome"] == "error" and bad["reason"] == "unusable-answer", bad
    line = failed_line(bad["id"])
    assert line["level"] == "error" and line["reason"] == "unusable-answer"
    assert line["detail"] == bad["detail"]
    assert not [m for m in room_messages(col, room) if m.get("sender") == "failing"]
    validate_outputs(col, OUTPUTS)


def test_redis_kill9_loses_neither_the_schedule_nor_a_run(stack, llm):
    start(stack, llm, VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS=1000, VIGIL_HEARTBEAT_SKIP_STRETCH=1.0)
    col = stack.collector(topics=("heartbeat/+/run",))
    pub = stack.publisher()
    room = uid("r")
    pub.publish(*config("durable", room, checklist="CHECK-OK"), retain=True)
    first = wait_run(col, "durable", lambda e: e["outcome"] == "ok")
    stack.redis.restart()  # kill -9, then the same AOF (appendfsync always)
    # the schedule lives on: later runs come, numbered on from the first
    wait_run(col, "durable", lambda e: e["run"] >= first["run"] + 2, timeout=30)
    # every run once (an outbox entry may be delivered twice: same id), none missing
    numbers = sorted({e["run"] for e in runs(col, "durable")})
    assert numbers == list(range(numbers[0], numbers[-1] + 1))
    assert all(e["outcome"] == "ok" for e in runs(col, "durable"))


def test_checklist_from_a_file_below_the_checklist_dir(stack, llm, tmp_path):
    folder = tmp_path / "checklists"
    folder.mkdir()
    (folder / "ops.md").write_text("- CHECK-SPEAK: is the nightly backup done?\n", encoding="utf-8")
    start(stack, llm, VIGIL_HEARTBEAT_CHECKLIST_DIR=str(folder))
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    topic, body = config("filed", room)
    del body["checklist"]
    body["checklist_file"] = "ops.md"
    pub.publish(topic, body, retain=True)
    assert wait_run(col, "filed", lambda e: e["outcome"] != "skipped")["outcome"] == "sent"
    prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    assert "- CHECK-SPEAK: is the nightly backup done?" in prompt
    # a missing file is refused with the reason, and changes nothing
    errs = stack.collector(topics=(f"sys/{SERVICE}/error",))
    body["checklist_file"] = "missing.md"
    pub.publish(topic, body)
    ev = errs.wait_event(f"sys/{SERVICE}/error", timeout=10)
    assert ev["reason"] == "bad_value" and "missing.md" in ev["detail"]


def test_two_replicas_under_redis_and_broker_kills_lose_no_run_and_run_none_twice(stack, llm):
    """Two replicas (VIGIL_SHARD 0/2 and 1/2), eight personas each sending a
    proactive message every run, while kill -9 hits Redis twice and
    mosquitto twice, each with model calls in flight (each restarted on the
    same data). Per persona: the runs are numbered without a gap and every
    one sent (none lost, none given up as run-lost), one payload per run id
    and one room message per sent run (none twice), no two model calls of
    one persona overlap, no two runs closer than the interval allows, and
    both replicas are ready again."""
    interval = 700
    env = {"VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": interval, "VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS": interval,
           "VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS": interval, "VIGIL_HEARTBEAT_UNANSWERED_MS": 0,
           "VIGIL_LLM_TIMEOUT_MS": 10000, "VIGIL_HEARTBEAT_JOB_LEASE_MS": 4000}
    replicas = [start(stack, llm, instance=f"hb-k{i}", VIGIL_SHARD=f"{i}/2", **env) for i in range(2)]
    tag = uid("kb")
    personas = harness.balanced_ids(lambda n: f"{tag}-{n}", 4)  # four in each shard
    col, _, room = configured(stack, llm, personas, "CHECK-SPEAK", 300,
                              topics=("heartbeat/+/run", "room/+/message"))

    def each_has(n):
        col.wait_for(lambda c: all(len({e["run"] for e in runs(col, p)}) >= n for p in personas),
                     60, f"{n} runs of every persona")

    def settled():
        sent = {e["id"] for e in runs(col) if e["outcome"] == "sent"}
        return sent <= {m["heartbeat_run"] for m in room_messages(col, room)}

    kills, target = [], 2
    for what in ("redis", "broker", "redis", "broker"):
        each_has(target)
        if what == "redis":
            harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 15, "a model call in flight")
            stack.redis.restart()
        else:
            # mosquitto holds what it acknowledged since its last save (every
            # 2 s) only in memory, and a kill -9 loses it: that window is the
            # broker's, not the service's. So the kill comes while every
            # persona's model call is held and every output sent so far has
            # arrived, after a save; the held answers then come while the
            # broker is down, and their runs must reach it once it is back.
            llm.control(delay_ms=6000)
            harness.wait_until(lambda: llm.stats()["in_flight"] >= len(personas), 15,
                               "every persona's model call held")
            harness.wait_until(settled, 15, "every sent run's room message")
            stack.broker.wait_saved()
            answered = len(llm.stats()["history"])
            stack.broker.kill9()
            # the held calls end first (every later call is held as long)
            harness.wait_until(lambda: len(llm.stats()["history"]) >= answered + len(personas), 20,
                               "the held answers, with the broker down")
            llm.control(delay_ms=300)
            stack.broker.start()
        kills.append(what)
        target += 2
    each_has(target)
    for r in replicas:
        r.wait_ready(timeout=30)
    # the runs seen so far (runs go on meanwhile), then their room messages:
    # a run's event and its message leave the outbox one after the other
    seen = {p: {e["run"]: e for e in runs(col, p)} for p in personas}
    want = {e["id"] for evs in seen.values() for e in evs.values() if e["outcome"] == "sent"}
    try:
        harness.wait_until(lambda: want <= {m["heartbeat_run"] for m in room_messages(col, room)}, 10,
                           "the room message of every sent run seen")
    except harness.HarnessError:
        pass  # the per-run check below says which
    history = llm.stats()["history"]
    payloads = {}
    for m in col.find("heartbeat/+/run"):
        payloads.setdefault(m.json()["id"], set()).add(m.payload)
    assert all(len(v) == 1 for v in payloads.values()), {k: v for k, v in payloads.items() if len(v) > 1}
    messages = {}
    for m in room_messages(col, room):
        messages.setdefault(m["heartbeat_run"], set()).add(m["id"])
    total = 0
    for p in personas:
        evs = seen[p]
        numbers = sorted(evs)
        assert numbers == list(range(1, numbers[-1] + 1)), f"{p}: runs {numbers}"
        assert all(e["outcome"] == "sent" for e in evs.values()), \
            [(e["run"], e["outcome"], e.get("reason")) for e in evs.values() if e["outcome"] != "sent"]
        for n, e in evs.items():
            assert messages.get(e["id"]) == {f"{e['id']}:msg"}, \
                (p, n, messages.get(e["id"]), kills,
                 [d for r in replicas for d in r.log_lines() if "again" in d.get("msg", "")])
        for a, b in zip(numbers, numbers[1:]):
            assert evs[b]["ts"] - evs[a]["ts"] >= interval - 50, (p, evs[a], evs[b])
        spans = sorted((h["start"], h["end"]) for h in history if h["prompt"].startswith(f"You are {p},"))
        for (s0, e0), (s1, _) in zip(spans, spans[1:]):
            assert s1 >= e0, f"{p}: two model calls overlapped"
        total += len(numbers)
    print(f"\n8 personas on 2 replicas, kills {kills}: {total} runs, each sent once, "
          f"{len(history)} model calls")
    validate_outputs(col, OUTPUTS)


def test_a_redis_outage_longer_than_the_run_guard_loses_no_answered_run(stack, llm):
    """Redis goes away (kill -9) while the model calls of six personas' runs
    are in flight and stays away well past the run guard (2 x lease +
    budget = 5 s here): the answers came meanwhile and wait for Redis, and
    so do the guard timers, which come due in the outage. Once Redis is back
    every one of those runs is sent, once: a guard that fired late (the
    worker's commit retry may come seconds after the timers' poll) does not
    give its run up as run-lost."""
    env = {"VIGIL_LLM_TIMEOUT_MS": 1000, "VIGIL_HEARTBEAT_JOB_LEASE_MS": 2000}
    svc = start(stack, llm, **env)
    personas = [f"{uid('pt')}-{i}" for i in range(6)]
    col, _, room = configured(stack, llm, personas, "CHECK-SPEAK", 300,
                              topics=("heartbeat/+/run", "room/+/message"))
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 6, 15, "six runs in the model")
    stack.redis.kill9()
    time.sleep(14.0)  # nearly three guards: an outage, not a lost job
    stack.redis.start()
    for p in personas:
        first = wait_run(col, p, timeout=30)
        assert first["outcome"] == "sent", first
        wait_run(col, p, lambda e, n=first["run"]: e["run"] == n + 1, timeout=30)
        assert [e["outcome"] for e in runs(col, p) if e["run"] == first["run"]] == ["sent"]
        assert {m["id"] for m in room_messages(col, room) if m.get("sender") == p} == {f"{first['id']}:msg"}
    svc.wait_ready(timeout=30)
    validate_outputs(col, OUTPUTS)
