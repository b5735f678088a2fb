"""wake-evaluator (issue 5: Wake-Up Decision Intelligence, the
autopilot, token economics) driven only through the broker, with a real
Redis, the real service process and tests/support/fake_llm.py answering
over real HTTP: the same client code path as against a real endpoint.

Sleeping personas are put in place the way dormancy-monitor would: retained
persona/{p}/state (and persona/{p}/meta) published by the test. Their sleep
is a manual one (trigger "manual"), so a human message does not wake them
by rule and the evaluator has to decide."""

import json
import time

import pytest

import harness
from conftest import ai, human, uid, validate_outputs, wake_levels
from fake_servers import FakeLLM, running
from harness import scaled

SERVICE = "wake-evaluator"

EMERGENCY = "Server is down, need help ASAP!"
WEEKEND = "How was your weekend?"

# Rules for the fake endpoint, matched against the prompt. The smart
# prompt itself contains "emergency" (consideration 1), so the rules look at
# the quoted new message only.
RULES = [
    {"regex": r'Text: "Server is down',
     "reply": {"shouldWake": True, "reason": "production outage, a human needs help now",
               "confidence": 0.92, "alternativeSuggestion": None}},
    {"regex": r'Text: "How was your weekend',
     "reply": {"shouldWake": False, "reason": "casual chatter", "confidence": 0.9}},
    {"regex": r'New message: "Server is down',
     "reply": {"shouldWake": True, "reason": "urgent"}},
    {"regex": r'New message: "How was your weekend',
     "reply": {"shouldWake": False, "reason": "small talk"}},
    {"match": "You are the Dormancy Autopilot", "reply": []},
    {"reply": {"shouldWake": False, "reason": "not relevant", "confidence": 0.6}},
]

# Everything the service publishes (validated against topics/ schemas).
WAKE_OUTPUTS = ("persona/+/wake", "room/+/autopilot", "room/+/economics", "sys/#")


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path, rules=RULES) as f:
        yield f


def start(stack, llm=None, **env):
    e = {"VIGIL_LLM_URL": llm.url if llm else "", "VIGIL_LLM_TIMEOUT_MS": 5000,
         "VIGIL_LLM_RETRIES": 0, "VIGIL_AUTOPILOT": 0}
    e.update(env)
    return stack.service(SERVICE, env=e)


def meta(persona, room, tier=None, parameters=None, **extra):
    body = {"persona": persona, "name": persona, "rooms": [room], "role": "operations",
            "expertise_domains": ["servers"], "confidence_levels": {"servers": 0.9},
            "availability": 0.8, "ts": harness.now_ms()}
    if tier:
        body["tier"] = tier
    if parameters is not None:
        body["parameters"] = parameters
    body.update(extra)
    return f"persona/{persona}/meta", body


def asleep(persona, room, trigger="manual", level="sleep"):
    now = harness.now_ms()
    return f"persona/{persona}/state", {
        "persona": persona, "rooms": {room: {"level": level, "since": now, "trigger": trigger}},
        "ts": now}


def setup_sleepers(stack, pub, room, personas, tier="smart", level="sleep", **meta_extra):
    """Retained meta + state for each persona, then waits until the service
    holds them all asleep in the room (its Redis record)."""
    items = []
    for p in personas:
        items.append(meta(p, room, tier=tier, **meta_extra))
        items.append(asleep(p, room, level=level))
    for topic, body in items:
        pub.c.publish(topic, json.dumps(body).encode(), qos=1, retain=True)
    def ready():
        levels = wake_levels(stack, room)
        return all(levels.get(p) == level for p in personas)

    harness.wait_until(ready, 30, f"{len(personas)} sleepers known in {room}", interval=0.05)


def wakes(col, persona="+", since=0):
    return col.events(f"persona/{persona}/wake", since=since)


def wait_wakes(col, n, timeout=20, persona="+", since=0, pred=None):
    return col.wait_count(f"persona/{persona}/wake", n, timeout, pred=pred, since=since)


# --------------------------------------------------------------------------
# The two specified LLM wake tests, end to end


def test_server_down_wakes_a_smart_sleeper_with_confidence_above_08(stack, llm):
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("ops")
    setup_sleepers(stack, pub, room, ["sre"])
    pub.publish(*human(room, "joel", EMERGENCY, mid="m-down"))
    ev = col.wait_event("persona/sre/wake", timeout=15)
    assert ev["should_wake"] is True
    assert ev["confidence"] > 0.8
    assert ev["via"] == "llm" and ev["tier"] == "smart"
    assert ev["persona"] == "sre" and ev["room"] == room and ev["message_id"] == "m-down"
    assert ev["tokens"] > 0 and ev["latency_ms"] >= 0
    assert "outage" in ev["reason"]
    # the request: the smart prompt, JSON mode, the specified numbers
    body = llm.stats()["last_request"]["body"]
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == 200 and abs(body["temperature"] - 0.2) < 1e-9
    prompt = body["messages"][-1]["content"]
    assert prompt.startswith("You are sre, currently in deep sleep mode.")
    assert 'From: joel (human)\nText: "Server is down, need help ASAP!"' in prompt
    assert "5. What's the opportunity cost of waking" in prompt
    # economics: tokens spent, retained
    econ = col.wait_event(f"room/{room}/economics", lambda e: e["tokens_spent"] > 0, timeout=10)
    assert econ["tokens_spent"] == ev["tokens"] and econ["evaluations"] == 1
    assert svc.metric("vigil_wake_tokens_spent_total") >= ev["tokens"]
    validate_outputs(col, WAKE_OUTPUTS)


def test_how_was_your_weekend_does_not_wake(stack, llm):
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("lounge")
    setup_sleepers(stack, pub, room, ["sre"])
    pub.publish(*human(room, "joel", WEEKEND))
    ev = col.wait_event("persona/sre/wake", timeout=15)
    assert ev["should_wake"] is False and ev["via"] == "llm"
    assert ev["confidence"] == pytest.approx(0.9)


def test_mid_tier_uses_the_short_prompt(stack, llm):
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("ops")
    setup_sleepers(stack, pub, room, ["helper"], tier=None, parameters=8_000_000_000)
    pub.publish(*human(room, "joel", EMERGENCY))
    ev = col.wait_event("persona/helper/wake", timeout=15)
    assert ev["tier"] == "mid" and ev["via"] == "llm" and ev["should_wake"] is True
    body = llm.stats()["last_request"]["body"]
    assert body["max_tokens"] == 50 and abs(body["temperature"] - 0.1) < 1e-9
    assert body["messages"][-1]["content"].endswith(
        'Respond JSON: {"shouldWake": true/false, "reason": "brief"}')


def test_basic_tier_decides_at_once_by_the_rules_without_the_llm(stack, llm):
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("dev")
    setup_sleepers(stack, pub, room, ["tiny"], tier=None, parameters=3_000_000_000)
    before = llm.stats()["requests"]
    pub.publish(*ai(room, "bot", "the build is BROKEN again", mid="m1"))
    pub.publish(*ai(room, "bot", "nice weather today, thanks", mid="m2"))
    got = wait_wakes(col, 2, persona="tiny")
    assert got[f"m1:{room}:wake:tiny"]["should_wake"] is True
    assert got[f"m1:{room}:wake:tiny"]["via"] == "rules"
    assert "broken" in got[f"m1:{room}:wake:tiny"]["reason"]
    assert got[f"m2:{room}:wake:tiny"]["should_wake"] is False
    assert all(e["tier"] == "basic" and e["latency_ms"] == 0 for e in got.values())
    assert llm.stats()["requests"] == before


def test_basic_tier_finds_urgent_keywords_as_the_specification_does(stack):
    """The specified basic rule is `text.toLowerCase().includes(kw)`: a
    keyword inside a longer word counts ("errors", "urgently", "downtime",
    "helpful"), in any case; text without one does not wake."""
    start(stack)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("kw")
    setup_sleepers(stack, pub, room, ["tiny"], tier="basic")
    texts = {"k1": ("Seeing errors in the logs", "error"), "k2": ("need a reply URGENTLY", "urgent"),
             "k3": ("planned downtime tonight", "down"), "k4": ("that was helpful", "help"),
             "k5": ("How was your weekend?", None)}
    for mid, (text, _) in texts.items():
        pub.publish(*ai(room, "bot", text, mid=mid))
    got = wait_wakes(col, len(texts), persona="tiny")
    for mid, (text, kw) in texts.items():
        w = got[f"{mid}:{room}:wake:tiny"]
        assert w["via"] == "rules" and w["tier"] == "basic", w
        if kw:
            assert w["should_wake"] is True and w["reason"] == f"rules: urgent keyword '{kw}'", (text, w)
        else:
            assert w["should_wake"] is False, (text, w)
    validate_outputs(col, WAKE_OUTPUTS)


def test_one_message_id_in_two_rooms_makes_two_wake_events(stack):
    """A message id is unique only within its room: a client may send "m1"
    in two rooms. The persona asleep in both gets two decisions, and their
    event ids differ (they name the room), so a consumer deduping by event
    id keeps both; a redelivery of either still has the same id."""
    start(stack, None)
    col = stack.collector()
    pub = stack.publisher()
    rooms = [uid("east"), uid("west")]
    now = harness.now_ms()
    topic, body = meta("tiny", rooms[0], parameters=3_000_000_000)
    body["rooms"] = rooms
    pub.c.publish(topic, json.dumps(body).encode(), qos=1, retain=True)
    state = {"persona": "tiny", "ts": now,
             "rooms": {r: {"level": "sleep", "since": now, "trigger": "manual"} for r in rooms}}
    pub.c.publish("persona/tiny/state", json.dumps(state).encode(), qos=1, retain=True)
    for r in rooms:
        harness.wait_until(lambda r=r: _level(stack, r, "tiny") == "sleep", 30, f"tiny asleep in {r}")
    for r in rooms:
        pub.publish(*ai(r, "bot", "the build is BROKEN again", mid="m1"))
    got = wait_wakes(col, 2, persona="tiny", timeout=15)
    assert set(got) == {f"m1:{r}:wake:tiny" for r in rooms}
    assert {ev["room"] for ev in got.values()} == set(rooms)
    assert all(ev["message_id"] == "m1" and ev["should_wake"] is True for ev in got.values())
    validate_outputs(col, WAKE_OUTPUTS)


def test_rule_wakes_are_not_evaluated(stack, llm):
    """An @mention, or a human message to a persona put to sleep by AI-only
    talk, wakes by rule in dormancy-monitor: no evaluation for that pair."""
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    setup_sleepers(stack, pub, room, ["ann", "bob"])
    pub.c.publish(*_retained(asleep("bob", room, trigger="ai-only")))
    harness.wait_until(lambda: _level_trigger(stack, room, "bob") == "ai-only", 10, "bob ai-only")
    pub.publish(*ai(room, "carl", "hey @ann, a question", mid="mention"))
    pub.publish(*human(room, "joel", WEEKEND, mid="human"))
    wait_wakes(col, 2, persona="+", timeout=15)
    time.sleep(scaled(1.0))
    evs = wakes(col)
    # ann: not for her @mention, but for the human message; bob: for the
    # AI message (not his mention), not for the human one
    assert sorted((e["persona"], e["message_id"]) for e in evs) == [
        ("ann", "human"), ("bob", "mention")], evs


def _retained(item):
    topic, body = item
    return topic, json.dumps(body).encode(), 1, True


def _level(stack, room, persona):
    return wake_levels(stack, room).get(persona)


def _level_trigger(stack, room, persona):
    _, st = stack.store(SERVICE).state(room)
    for p in (st or {}).get("p", []):
        if p["id"] == persona:
            return p.get("tr")
    return None


# --------------------------------------------------------------------------
# Failure modes: every one ends in the rules, marked "fallback"


FAILURES = {
    "slow": ({"delay_ms": 3000}, {"VIGIL_LLM_TIMEOUT_MS": 400}, "timeout"),
    "http500": ({"mode": "status", "status": 500}, {}, "http_error"),
    "rate429": ({"mode": "status", "status": 429, "retry_after": 0}, {"VIGIL_LLM_RETRIES": 1},
                "rate_limited"),
    "close": ({"mode": "close"}, {}, "connect_error"),
    "garbage": ({"mode": "garbage"}, {}, "bad_response"),
    "error200": ({"mode": "error200"}, {}, "http_error"),
    "truncated": ({"mode": "truncated"}, {}, "ok"),
    "nonsense": ({"rules": [{"reply": "I would rather not say."}]}, {}, "ok"),
    "wrong_types": ({"rules": [{"reply": {"shouldWake": "maybe", "confidence": "high"}}]}, {}, "ok"),
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_llm_failure_falls_back_to_the_rules_and_says_so(stack, llm, name):
    control, env, status = FAILURES[name]
    llm.control(**control)
    svc = start(stack, llm, **env)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("f")
    setup_sleepers(stack, pub, room, ["sre"])
    pub.publish(*human(room, "joel", EMERGENCY, mid="h"))
    pub.publish(*ai(room, "bot", "lunch anyone?", mid="a"))
    got = wait_wakes(col, 2, persona="sre", timeout=30)
    h, a = got[f"h:{room}:wake:sre"], got[f"a:{room}:wake:sre"]
    for ev in (h, a):
        assert ev["via"] == "fallback", ev
        assert ev["llm_status"] == status, ev
        assert ev["tier"] == "smart" and ev["confidence"] == 1
    # the rules: a human sender wakes, an AI's small talk does not
    assert h["should_wake"] is True and "rules: message from a human" in h["reason"]
    assert a["should_wake"] is False
    assert svc.metric("vigil_wake_decisions_total", via="fallback") >= 2
    validate_outputs(col, WAKE_OUTPUTS)


def test_an_llm_error_quoted_in_the_reason_is_cut_between_characters(stack, llm):
    """The fallback's reason quotes the first 150 bytes of the LLM client's
    reason ("error under HTTP 200: " and the endpoint's message): cut there
    between characters, so the decision stays valid UTF-8 (a cut inside
    "é" published a lone 0xC3 byte)."""
    message = "x" * 127 + "é" * 40  # byte 150 of the reason falls inside an "é"
    llm.control(rules=[{"mode": "error200", "error_message": message}])
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("f")
    setup_sleepers(stack, pub, room, ["sre"])
    pub.publish(*human(room, "joel", EMERGENCY, mid="h"))
    ev = wait_wakes(col, 1, persona="sre", timeout=30)[f"h:{room}:wake:sre"]
    assert ev["via"] == "fallback" and ev["llm_status"] == "http_error", ev
    assert "LLM http_error: error under HTTP 200: " + "x" * 127 + "; " in ev["reason"], ev
    for m in col.snapshot():
        m.payload.decode("utf-8")  # raises on a cut sequence
    validate_outputs(col, WAKE_OUTPUTS)


def test_connection_refused_falls_back(stack):
    port = harness.free_port()  # nothing listens there
    start(stack, None, VIGIL_LLM_URL=f"http://127.0.0.1:{port}/v1")
    col = stack.collector()
    pub = stack.publisher()
    room = uid("f")
    setup_sleepers(stack, pub, room, ["sre"])
    pub.publish(*ai(room, "bot", "prod is down", mid="x"))
    ev = col.wait_event("persona/sre/wake", timeout=20)
    assert ev["via"] == "fallback" and ev["llm_status"] == "connect_error"
    assert ev["should_wake"] is True and "keyword 'down'" in ev["reason"]


def test_no_llm_at_all_decides_by_the_rules_at_once(stack):
    start(stack, None)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("f")
    setup_sleepers(stack, pub, room, ["sre"])
    pub.publish(*human(room, "joel", EMERGENCY))
    ev = col.wait_event("persona/sre/wake", timeout=10)
    assert ev["via"] == "fallback" and ev["should_wake"] is True
    assert "no LLM configured" in ev["reason"] and "tokens" not in ev


def test_the_published_confidence_is_the_one_decided_on(stack, llm):
    """should_wake true always comes with a published confidence above the
    threshold: the decision is taken on the confidence as published (3
    decimals), which is what dormancy-monitor checks again. A confidence
    outside 0..1 that is no whole percentage is not guessed at: the rules
    decide."""
    def answer(tag, conf):
        return {"regex": f'Text: "{tag}"',
                "reply": {"shouldWake": True, "reason": f"answer {tag}", "confidence": conf}}
    llm.control(rules=[answer("c07004", 0.7004), answer("c07006", 0.7006),
                       answer("c85", 85), answer("c15", 1.5)])
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("conf")
    setup_sleepers(stack, pub, room, ["sre"])
    for tag in ("c07004", "c07006", "c85", "c15"):
        pub.publish(*ai(room, "bot", tag, mid=tag))
    got = wait_wakes(col, 4, persona="sre", timeout=20)
    for ev in got.values():
        if ev["via"] == "llm":
            assert ev["should_wake"] == (ev["confidence"] > 0.7), ev
    low, high = got[f"c07004:{room}:wake:sre"], got[f"c07006:{room}:wake:sre"]
    assert low["via"] == "llm" and low["confidence"] == 0.7 and low["should_wake"] is False
    assert "confidence 0.7 is not above 0.7" in low["reason"]
    assert high["via"] == "llm" and high["confidence"] == 0.701 and high["should_wake"] is True
    pct = got[f"c85:{room}:wake:sre"]
    assert pct["via"] == "llm" and pct["confidence"] == 0.85 and pct["should_wake"] is True
    bad = got[f"c15:{room}:wake:sre"]
    assert bad["via"] == "fallback" and bad["llm_status"] == "ok", bad
    assert "confidence out of range" in bad["reason"] and bad["should_wake"] is False
    validate_outputs(col, WAKE_OUTPUTS)


def test_the_fallback_rules_read_the_whole_message(stack, llm):
    """A message longer than the prompt's 4000 bytes, its urgent keyword at
    the end: the LLM fails, and the smart persona's fallback reaches the
    same verdict as the basic persona decided at intake on the full text."""
    llm.control(mode="status", status=500)
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("long")
    setup_sleepers(stack, pub, room, ["sre"])
    setup_sleepers(stack, pub, room, ["tiny"], tier="basic")
    text = "status report follows. " * 183 + "and the server is down"
    assert 4200 <= len(text.encode()) < 4400
    pub.publish(*ai(room, "bot", text, mid="long"))
    got = wait_wakes(col, 2, timeout=20)
    basic, smart = got[f"long:{room}:wake:tiny"], got[f"long:{room}:wake:sre"]
    assert basic["via"] == "rules" and basic["should_wake"] is True
    assert basic["reason"] == "rules: urgent keyword 'down'"
    assert smart["via"] == "fallback" and smart["llm_status"] == "http_error", smart
    assert smart["should_wake"] is True
    assert smart["reason"].endswith("; rules: urgent keyword 'down'"), smart
    # the job (and so the prompt) held only the first 4000 bytes
    prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    assert "status report follows." in prompt and "server is down" not in prompt
    validate_outputs(col, WAKE_OUTPUTS)


# --------------------------------------------------------------------------
# Concurrency and restarts


@pytest.fixture
def fast_stack(tmp_path, request):
    """A stack whose Redis syncs its AOF every second, as deploy/redis does
    (the default test stack fsyncs every write, which bounds commits to the
    disk's fsync rate, not what this test measures)."""
    from conftest import Stack

    s = Stack(tmp_path, request, appendfsync="everysec")
    try:
        yield s
    finally:
        s.close()


def test_200_sleepers_are_evaluated_concurrently(fast_stack, llm):
    stack = fast_stack
    n, delay = 200, 500
    llm.control(delay_ms=delay)
    svc = start(stack, llm, VIGIL_LLM_CONCURRENCY=256, VIGIL_LLM_TIMEOUT_MS=10000)
    col = stack.collector(topics=("persona/+/wake",))
    pub = stack.publisher()
    room = uid("big")
    personas = [f"p{i:03d}" for i in range(n)]
    setup_sleepers(stack, pub, room, personas)
    llm.control(reset=True, delay_ms=delay)
    t0 = time.monotonic()
    pub.publish(*human(room, "joel", EMERGENCY, mid="big"))
    got = wait_wakes(col, n, timeout=60)
    wall = time.monotonic() - t0
    assert {e["persona"] for e in got.values()} == set(personas)
    assert all(e["via"] == "llm" and e["should_wake"] for e in got.values())
    st = llm.stats()
    assert st["requests"] == n
    # one LLM latency, not 200 of them (100 s): calls overlapped
    assert st["max_concurrent"] >= 150, st
    commits = svc.metric("vigil_wake_commit_seconds_sum")
    print(f"\n{n} evaluations, {delay} ms each: {wall:.2f} s wall, max_concurrent "
          f"{st['max_concurrent']}, commits {commits:.2f} s")
    assert wall < scaled(8), f"{n} evaluations took {wall:.1f}s (commits {commits:.1f}s)"


def test_restart_with_jobs_pending_publishes_each_decision_once(stack, llm):
    n = 20
    llm.control(delay_ms=4000)
    svc = start(stack, llm, VIGIL_LLM_TIMEOUT_MS=10000)
    col = stack.collector(topics=("persona/+/wake",))
    pub = stack.publisher()
    room = uid("rs")
    personas = [f"q{i:02d}" for i in range(n)]
    setup_sleepers(stack, pub, room, personas)
    pub.publish(*human(room, "joel", EMERGENCY, mid="rs"))
    harness.wait_until(lambda: llm.stats()["in_flight"] >= n, 20, "every call in flight")
    svc.kill9()  # mid-call: nothing decided, every job pending
    assert wakes(col) == []
    llm.control(delay_ms=0)
    svc.start()
    got = wait_wakes(col, n, timeout=30)
    time.sleep(scaled(1.5))
    evs = wakes(col)
    assert len(evs) == n, "each decision published exactly once"
    assert {e["persona"] for e in got.values()} == set(personas)
    assert all(e["via"] == "llm" for e in evs)
    # the stream holds nothing unfinished
    c = stack.redis.client()
    try:
        assert c.xlen(f"{stack.prefix}{SERVICE}:jobs") == 0
    finally:
        c.close()


def test_a_job_queued_while_its_persona_wakes_is_not_sent_to_the_model(stack, llm):
    """One job held at a time (VIGIL_WAKE_MAX_INFLIGHT=1) and a slow model:
    a second human message's evaluation of the same sleeper waits on the
    job stream, and the persona is woken meanwhile (its state says active).
    When the worker takes that job, the model is not asked (the question is
    moot): no request with its text, no decision for it, counted as a call
    spared and a job "spared"; the first message is decided as usual."""
    llm.control(delay_ms=3000)
    svc = start(stack, llm, VIGIL_WAKE_MAX_INFLIGHT=1, VIGIL_LLM_TIMEOUT_MS=15000)
    col = stack.collector(topics=("persona/+/wake",))
    pub = stack.publisher()
    view = stack.store(SERVICE)
    room = uid("sp")
    setup_sleepers(stack, pub, room, ["dozy"])
    pub.publish(*human(room, "joel", EMERGENCY, mid=f"{room}-m1"))
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 15, "the first call in the model")
    pub.publish(*human(room, "joel", "QUEUED-ONLY: anyone?", mid=f"{room}-m2"))
    c = stack.redis.client()
    try:
        harness.wait_until(lambda: c.xlen(f"{stack.prefix}{SERVICE}:jobs") == 2, 10,
                           "the second job waiting")
    finally:
        c.close()
    now = harness.now_ms()
    pub.publish("persona/dozy/state", {"persona": "dozy", "ts": now, "rooms": {
        room: {"level": "active", "since": now, "trigger": "human"}}}, retain=True)

    def level():
        _, st = view.state(room)
        return {p["id"]: p.get("l") for p in (st or {}).get("p", [])}.get("dozy")

    harness.wait_until(lambda: level() not in ("sleep", None), 10, "dozy awake in the record")
    assert llm.stats()["requests"] == 1  # the first call still holds the one slot
    got = wait_wakes(col, 1)
    assert [e["message_id"] for e in got.values()] == [f"{room}-m1"]
    # the slot is free once the first is decided: the second job is taken
    harness.wait_until(
        lambda: svc.metric("vigil_wake_jobs_total", kind="wake", outcome="spared") == 1, 20,
        "the second job taken and spared")
    assert svc.metric("vigil_wake_calls_spared_total") == 1
    assert svc.metric("vigil_wake_jobs_total", kind="wake", outcome="decided") == 1
    assert len(wakes(col)) == 1  # a spared job is acknowledged with nothing published
    prompts = [h.get("prompt", "") for h in llm.stats().get("history", [])]
    assert prompts and not [p for p in prompts if "QUEUED-ONLY" in p], prompts


# --------------------------------------------------------------------------
# Autopilot


def test_autopilot_without_llm_applies_the_guards(stack):
    start(stack, None, VIGIL_AUTOPILOT=1, VIGIL_AUTOPILOT_INTERVAL_MS=1500,
          VIGIL_AUTOPILOT_JUMP_RATIO=1e6, VIGIL_AUTOPILOT_JUMP_VELOCITY=1e6)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("ap")
    # chatty is active and dominating; the others are asleep; a human is here
    for p, lvl in (("chatty", "active"), ("sre", "sleep"), ("teacher", "sleep")):
        extra = {"expertise_domains": ["cooking"], "confidence_levels": {"cooking": 0.5}} \
            if p == "chatty" else {}
        pub.c.publish(*_retained(meta(p, room, tier="smart", **extra)))
        pub.c.publish(*_retained(asleep(p, room, level=lvl)))
    harness.wait_until(lambda: _level_trigger(stack, room, "teacher") == "manual", 10, "levels")
    pub.publish_many([ai(room, "chatty", f"point {i}") for i in range(12)])
    pub.publish(*human(room, "joel", "anyone know about servers?"))
    # a run may come before everything above was taken in (a loaded
    # machine): wait for the first run that saw the human's question
    ev = col.wait_event(f"room/{room}/autopilot",
                        lambda e: any(d["persona"] == "sre" for d in e["decisions"]), timeout=15)
    assert ev["source"] == "rules" and ev["room"] == room
    acts = {d["persona"]: d["action"] for d in ev["decisions"]}
    assert acts["chatty"] == "suggest-mention-only"
    # sre and teacher are experts (0.9) in "servers", the human's domain
    assert acts["sre"] == "wake" and acts["teacher"] == "wake"
    econ = col.wait_event(f"room/{room}/economics", lambda e: e["autopilot_runs"] >= 1, timeout=5)
    assert econ["tokens_spent"] == 0
    validate_outputs(col, WAKE_OUTPUTS)


# The specified guard drops every dormancy proposal for the only confident
# expert on a domain being discussed: its suggest-mention-only too, which
# dormancy-monitor would make a suggestion that defaults to yes.
@pytest.mark.parametrize("proposal", ["auto-sleep", "suggest-mention-only"])
def test_autopilot_with_llm_is_overruled_by_the_guards(stack, llm, proposal):
    llm.control(rules=[{"match": "You are the Dormancy Autopilot", "reply": {"actions": [
        {"persona": "sre", "action": proposal, "reason": "quiet"},
        {"persona": "dev", "action": "auto_sleep", "reason": "quiet too"},
        {"persona": "ghost", "action": "wake", "reason": "not in the room"},
    ]}}])
    start(stack, llm, VIGIL_AUTOPILOT=1, VIGIL_AUTOPILOT_INTERVAL_MS=1500,
          VIGIL_AUTOPILOT_JUMP_RATIO=1e6, VIGIL_AUTOPILOT_JUMP_VELOCITY=1e6)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("ap")
    for p in ("sre", "dev"):
        pub.c.publish(*_retained(meta(p, room, tier="smart", expertise_domains=[p],
                                      confidence_levels={p: 0.85})))
        pub.c.publish(*_retained(asleep(p, room, level="active")))
    harness.wait_until(lambda: _level_trigger(stack, room, "dev") == "manual", 10, "levels")
    pub.publish(*ai(room, "dev", "the sre rota is fine"))
    ev = col.wait_event(f"room/{room}/autopilot", timeout=15)
    assert ev["source"] == "llm"
    acts = {d["persona"]: d for d in ev["decisions"]}
    assert "ghost" not in acts
    # sre is the only expert (0.85 > 0.8) on "sre", which is being discussed
    assert acts["sre"]["action"] == "keep" and "only confident expert" in acts["sre"]["reason"]
    assert acts["dev"]["action"] == "auto-sleep"
    body = llm.stats()["last_request"]["body"]
    assert body["messages"][-1]["content"].startswith(
        "You are the Dormancy Autopilot managing 2 AI personas in a chat room.")
    econ = col.wait_event(f"room/{room}/economics", lambda e: e["tokens_spent"] > 0, timeout=5)
    assert econ["tokens_spent_autopilot"] > 0


def test_autopilot_prompt_names_personas_by_display_name(stack, llm):
    """The autopilot prompt's state lines name each persona as the
    specified prompt does (its display name, the id when it has none), and
    an answer naming a persona that way acts on it."""
    llm.control(rules=[{"match": "You are the Dormancy Autopilot", "reply": [
        {"persona": "Alpha Bot", "action": "suggest-mention-only", "reason": "chatty"}]}])
    start(stack, llm, VIGIL_AUTOPILOT=1, VIGIL_AUTOPILOT_INTERVAL_MS=1500,
          VIGIL_AUTOPILOT_JUMP_RATIO=1e6, VIGIL_AUTOPILOT_JUMP_VELOCITY=1e6)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("ap")
    pub.c.publish(*_retained(meta("a1", room, tier="smart", name="Alpha Bot")))
    pub.c.publish(*_retained(asleep("a1", room, level="active")))
    pub.c.publish(*_retained(meta("a2", room, tier="smart", name="")))
    pub.c.publish(*_retained(asleep("a2", room, level="sleep")))
    harness.wait_until(lambda: _level_trigger(stack, room, "a2") == "manual", 10, "levels")
    pub.publish(*ai(room, "a1", "hello"))
    ev = col.wait_event(f"room/{room}/autopilot", timeout=15)
    prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    assert "**Current state**:\n- Alpha Bot: active\n- a2: sleep\n" in prompt, prompt
    assert "- a1:" not in prompt
    assert ev["source"] == "llm"
    assert {d["persona"]: d["action"] for d in ev["decisions"]} == {"a1": "suggest-mention-only"}


# --------------------------------------------------------------------------
# Token economics: the savings estimate


def test_tokens_saved_estimate_grows_while_a_talker_sleeps(stack):
    start(stack, None, VIGIL_AUTOPILOT=1, VIGIL_AUTOPILOT_INTERVAL_MS=1000)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("ec")
    pub.c.publish(*_retained(meta("talker", room, tier="basic")))
    pub.c.publish(*_retained(asleep("talker", room, level="active")))
    harness.wait_until(lambda: _level_trigger(stack, room, "talker") == "manual", 10, "level")
    # 40 messages of 400 characters: about 100 tokens each, 40 an hour
    pub.publish_many([ai(room, "talker", "x" * 400) for _ in range(40)])
    view = stack.store(SERVICE)
    harness.wait_until(lambda: (view.state(room)[1] or {}).get("mn") == 40, 15, "40 recorded")
    pub.c.publish(*_retained(asleep("talker", room, level="sleep")))
    time.sleep(scaled(2.0))
    pub.publish(*ai(room, "other", "still here"))
    econ = col.wait_event(f"room/{room}/economics",
                          lambda e: e["tokens_saved_estimate"] > 0, timeout=15)
    # 40/h for ~2 s is about 0.02 messages of ~97 tokens: a small, positive number
    assert 0 < econ["tokens_saved_estimate"] < 100
    assert econ["messages_saved_estimate"] >= 0


def test_jobs_of_a_dead_replica_are_taken_over_after_the_lease(stack, llm):
    n = 10
    llm.control(delay_ms=4000)
    a = start(stack, llm, VIGIL_LLM_TIMEOUT_MS=10000, VIGIL_WAKE_JOB_LEASE_MS=2000)
    col = stack.collector(topics=("persona/+/wake",))
    pub = stack.publisher()
    room = uid("tk")
    personas = [f"t{i}" for i in range(n)]
    setup_sleepers(stack, pub, room, personas)
    pub.publish(*human(room, "joel", EMERGENCY, mid="tk"))
    harness.wait_until(lambda: llm.stats()["in_flight"] >= n, 20, "every call in flight")
    a.kill9()
    llm.control(delay_ms=0)
    # another replica (another consumer name): it finds nothing of its own
    # pending and takes the dead one's jobs once they idled past the lease
    b = start(stack, llm, VIGIL_LLM_TIMEOUT_MS=10000, VIGIL_WAKE_JOB_LEASE_MS=2000)
    assert b.instance != a.instance
    got = wait_wakes(col, n, timeout=30)
    time.sleep(scaled(1.0))
    assert len(wakes(col)) == n
    assert {e["persona"] for e in got.values()} == set(personas)
    assert b.metric("vigil_wake_jobs_reclaimed_total") >= n


def test_jobs_past_the_stream_cap_are_counted_and_said(stack, llm):
    """Limits that speak: the job stream keeps about VIGIL_WAKE_JOBS_MAXLEN
    unfinished jobs. With the model slow and one job held at a time,
    3 sleepers x 80 human messages queue 240 jobs against a cap of 100:
    every job is either still in the stream or was trimmed unrun, and
    vigil_stream_trimmed_total{stream="jobs"} (at zero from the start)
    counts exactly the trimmed ones; one warning names the stream, its
    key, the cap and how many were dropped."""
    llm.control(delay_ms=60000)
    svc = start(stack, llm, VIGIL_WAKE_JOBS_MAXLEN=100, VIGIL_WAKE_MAX_INFLIGHT=1,
                VIGIL_LLM_TIMEOUT_MS=120000)
    assert svc.metric("vigil_stream_trimmed_total", stream="jobs") == 0
    pub = stack.publisher()
    room = uid("cap")
    setup_sleepers(stack, pub, room, ["c1", "c2", "c3"])
    for i in range(80):
        pub.publish(*human(room, "joel", f"{WEEKEND} ({i})", mid=f"{room}-m{i}"))
    key = f"{stack.prefix}{SERVICE}:jobs"
    c = stack.redis.client()
    try:
        harness.wait_until(
            lambda: c.xlen(key) + (svc.metric("vigil_stream_trimmed_total", stream="jobs") or 0) == 240,
            30, "240 jobs queued or trimmed", interval=0.2)
        left = c.xlen(key)
    finally:
        c.close()
    assert 100 <= left < 240, left
    assert llm.stats()["requests"] <= 1  # nothing finished: every trimmed job never ran
    text = svc.stderr_text()
    assert text.count("job stream at its cap") == 1, text[-3000:]
    assert '"stream":"jobs"' in text and f'"key":"{key}"' in text and '"cap":"100"' in text


def test_a_redelivered_message_is_evaluated_once(stack, llm):
    start(stack, llm)
    col = stack.collector(topics=("persona/+/wake",))
    pub = stack.publisher()
    room = uid("dup")
    setup_sleepers(stack, pub, room, ["sre"])
    topic, body = human(room, "joel", EMERGENCY, mid="same-id")
    pub.publish(topic, body)
    pub.publish(topic, body)
    col.wait_event("persona/sre/wake", timeout=15)
    time.sleep(scaled(1.0))
    assert len(wakes(col)) == 1
    assert llm.stats()["requests"] == 1


@pytest.mark.parametrize("topic,payload,reason", [
    ("room/r1/message", b"not json", "not_json"),
    ("room/r1/message", {"id": "x", "sender": "a b", "sender_type": "ai", "text": "t"}, "bad_id"),
    ("room/r1/message", {"id": "x", "sender": "a", "sender_type": "robot", "text": "t"}, "bad_value"),
    ("room/r1/message", {"id": "x", "sender": "a", "sender_type": "ai"}, "missing_field"),
    ("persona/p1/meta", {"persona": "p1", "rooms": ["r1"], "confidence_levels": {"x": 2}}, "bad_value"),
    ("persona/p1/meta", {"persona": "p1", "rooms": "r1"}, "wrong_type"),
    ("persona/p1/meta", {"persona": "p1", "rooms": ["r1"], "tier": "genius"}, "bad_value"),
    ("persona/p1/state", {"persona": "p1", "rooms": {"r1": {"level": "napping"}}}, "bad_value"),
    ("persona/p2/meta", {"persona": "p1", "rooms": ["r1"]}, "topic_mismatch"),
])
def test_bad_input_is_rejected_with_a_reason(stack, topic, payload, reason):
    svc = start(stack, None)
    col = stack.collector(topics=(f"sys/{SERVICE}/error",))
    pub = stack.publisher()
    pub.publish(topic, payload)
    ev = col.wait_event(f"sys/{SERVICE}/error", timeout=10)
    assert ev["reason"] == reason, ev
    assert svc.metric("vigil_rejected_total", reason=reason) >= 1
    assert stack.store(SERVICE).state("r1") == (0, None)


def _personas(stack, room):
    """The room record's personas by id."""
    _, st = stack.store(SERVICE).state(room)
    return {p["id"]: p for p in (st or {}).get("p", [])}


def test_a_cleared_meta_or_state_says_nothing(stack):
    """Clearing a persona's retained state or meta (an empty retained
    message, how MQTT deletes one) is the state {"rooms":{}} or the meta
    that says nothing: each room holding the persona forgets its level (it
    is no longer evaluated there), then, its meta gone too, the persona
    leaves the room. A clear applied again changes nothing (a witness input
    published after it is the clock), and an empty room message is still
    a bad input."""
    start(stack, None)  # no LLM: a smart sleeper is decided by the rules at once
    col = stack.collector()
    pub = stack.publisher()
    room, witness = uid("clr"), uid("witness-")
    setup_sleepers(stack, pub, room, ["sre"])
    mark = col.mark()
    pub.publish(*human(room, "joel", EMERGENCY, mid="before"))
    ev = col.wait_event("persona/sre/wake", timeout=10, since=mark)
    assert ev["message_id"] == "before" and ev["tier"] == "smart"
    sre = _personas(stack, room)["sre"]
    assert sre["m"] is True and sre["l"] == "sleep" and sre["t"] == "smart", sre

    # its state cleared: the level is forgotten, its meta keeps it in the room
    pub.publish("persona/sre/state", b"", retain=True)
    harness.wait_until(lambda: "l" not in _personas(stack, room)["sre"], 10, "sre's level gone")
    sre = _personas(stack, room)["sre"]
    assert sre["m"] is True and not sre.get("lt") and not sre.get("tr"), sre
    assert "persona/sre/state" not in harness.retained(stack.broker.port, "persona/+/state")
    # cleared again, then a witness's meta: sre's entry is as it was
    pub.publish("persona/sre/state", b"", retain=True)
    pub.publish(*meta(witness, room), retain=True)
    harness.wait_until(lambda: witness in _personas(stack, room), 10, "the witness in the room")
    assert _personas(stack, room)["sre"] == sre
    # no longer asleep there: a message is recorded, no evaluation
    n = (stack.store(SERVICE).state(room)[1] or {}).get("mn", 0)
    pub.publish(*human(room, "joel", EMERGENCY, mid="after"))
    harness.wait_until(lambda: stack.store(SERVICE).state(room)[1].get("mn") == n + 1, 10,
                       "the message recorded")
    assert [e["message_id"] for e in wakes(col, "sre")] == ["before"]

    # its meta cleared too: nothing holds it in the room any more
    pub.publish("persona/sre/meta", b"", retain=True)
    harness.wait_until(lambda: "sre" not in _personas(stack, room), 10, "sre gone from the room")
    c = stack.redis.client()
    try:
        assert not c.sismember(f"{stack.prefix}{SERVICE}:persona-rooms:sre", room)
    finally:
        c.close()
    _, before = stack.store(SERVICE).state(room)
    mark = col.mark()
    pub.publish("persona/sre/meta", b"", retain=True)
    pub.publish("persona/sre/state", b"", retain=True)
    pub.publish(*meta(witness, room, name="Witness again"), retain=True)
    harness.wait_until(lambda: _personas(stack, room)[witness]["n"] == "Witness again", 10,
                       "the witness renamed")
    _, after = stack.store(SERVICE).state(room)
    assert list(_personas(stack, room)) == [witness]
    assert {k: v for k, v in after.items() if k != "p"} == \
        {k: v for k, v in before.items() if k != "p"}
    assert not col.find(f"sys/{SERVICE}/error", since=mark)
    # an empty payload elsewhere is still refused
    pub.publish(f"room/{room}/message", b"")
    err = col.wait_event(f"sys/{SERVICE}/error", timeout=10, since=mark)
    assert err["reason"] == "not_json" and err["topic"] == f"room/{room}/message", err
    validate_outputs(col, WAKE_OUTPUTS)


def test_help_lists_the_llm_and_service_variables(stack):
    svc = stack.service(SERVICE, start=False)
    out = svc.run_cli(["--help"]).stdout.decode()
    for var in ("VIGIL_LLM_URL", "VIGIL_LLM_CONCURRENCY", "VIGIL_WAKE_JOB_LEASE_MS",
                "VIGIL_AUTOPILOT_INTERVAL_MS", "VIGIL_DORMANCY_WAKE_CONFIDENCE"):
        assert var in out
    bad = svc.run_cli([], env={"VIGIL_DORMANCY_HUMAN_WAKES": "sometimes"})
    assert bad.returncode == 2 and b"VIGIL_DORMANCY_HUMAN_WAKES" in bad.stderr


def test_with_dormancy_monitor_a_positive_decision_wakes_the_persona(stack, llm):
    """The two services together: dormancy-monitor puts a persona to sleep
    and publishes its state; wake-evaluator evaluates an AI's alarm with the
    LLM; dormancy-monitor acts on the decision."""
    stack.service("dormancy-monitor", env={"VIGIL_DORMANCY_MIN_AWAKE": 0})
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("both")
    pub.c.publish(*_retained(meta("sre", room, tier="smart")))
    pub.c.publish(*_retained(meta("bot", room, tier="basic")))
    harness.wait_until(lambda: _level(stack, room, "sre") == "active", 10, "sre joined, active")
    pub.publish("persona/sre/command", {"id": uid("c"), "cmd": "dormant", "level": "sleep",
                                         "room": room, "ts": harness.now_ms()})
    harness.wait_until(lambda: _level(stack, room, "sre") == "sleep", 10,
                       "sre asleep in wake-evaluator's view")
    mark = col.mark()
    pub.publish(*ai(room, "bot", EMERGENCY, mid="alarm"))
    ev = col.wait_event("persona/sre/wake", timeout=15, since=mark)
    assert ev["should_wake"] and ev["via"] == "llm" and ev["confidence"] > 0.8
    change = col.wait_event("persona/sre/dormancy", lambda e: e["level"] == "active", timeout=15,
                            since=mark)
    assert change["trigger"] == "wake-decision" and change["message_id"] == "alarm"
    validate_outputs(col, WAKE_OUTPUTS + ("persona/+/dormancy", "persona/+/state"))
