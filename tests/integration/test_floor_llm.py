"""floor-control's optional LLM relevance (VIGIL_FLOOR_LLM_BUDGET_MS), with
tests/support/fake_llm.py answering over real HTTP: the model's ranking
picks the floor; a model slower than the budget, failing or answering
nonsense leaves the decision to the rules at the deadline, marked in
`fallback`; a kill -9 while messages wait loses none of them."""

import time

import pytest

import harness
from conftest import human, uid, validate_outputs
from harness import scaled
from test_floor_control import OUTPUTS, SERVICE, fifteen, floor_for
from test_wake_evaluator import llm  # noqa: F401 - the fake_llm.py fixture

BUDGET_MS = 1500
# the deadline timer's fallback: true whether or not the model was ever asked
DEADLINE_PASSED = f"the decision deadline ({BUDGET_MS} ms) passed before an LLM answer was committed"


def start(stack, llm, budget=BUDGET_MS, **env):
    e = {"VIGIL_LLM_URL": llm.url, "VIGIL_FLOOR_LLM_BUDGET_MS": budget, "VIGIL_LLM_RETRIES": 0}
    e.update(env)
    return stack.service(SERVICE, env=e)


def kube_question(stack, llm, budget=BUDGET_MS):
    """The service, a room of fifteen and a human Kubernetes question in it:
    returns the service, the collector, the room, the message id and when
    (time.monotonic()) it was published."""
    svc = start(stack, llm, budget=budget)
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    fifteen(stack, pub, room)
    mid = uid()
    t0 = time.monotonic()
    pub.publish(*human(room, "joel", "Why does my Kubernetes pod restart?", mid=mid))
    return svc, col, room, mid, t0


def test_the_llm_ranking_picks_the_floor(stack, llm):
    llm.control(reset=True, rules=[{"match": "who answers a chat message",
                                    "reply": {"relevant": ["p05", "kube-bob", "nobody-here"]}}])
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    fifteen(stack, pub, room)
    mid = uid()
    t0 = time.monotonic()
    pub.publish(*human(room, "joel", "My Kubernetes pod restarts, @p09 any idea?", mid=mid))
    fl = floor_for(col, mid)
    took = (time.monotonic() - t0) * 1000
    assert fl["source"] == "llm" and "fallback" not in fl, fl
    assert fl["granted"] == ["p09", "p05", "kube-bob"], fl  # mention first, then the model's order
    assert fl["reasons"]["p05"] == "relevant to the message (LLM, rank 1)"
    assert took < BUDGET_MS + 1000 * harness.scaled(1)
    # the prompt named the able, unmentioned personas and the message
    body = llm.stats()["last_request"]["body"]
    prompt = body["messages"][-1]["content"]
    assert "- kube-ann: role general-help; expertise: kubernetes (confidence 0.95)" in prompt
    assert "- p09" not in prompt and "My Kubernetes pod restarts" in prompt
    per = col.wait_count("persona/+/floor", 15, timeout=10, pred=lambda e: e.get("message_id") == mid)
    assert {e["persona"] for e in per.values() if e["has_floor"]} == {"p09", "p05", "kube-bob"}
    print(f"\nfloor with the LLM (fake endpoint): {took:.0f} ms")
    validate_outputs(col, OUTPUTS)


@pytest.mark.parametrize("misbehave", ["slow", "status", "garbage"])
def test_the_rules_decide_when_the_llm_fails(stack, llm, misbehave):
    rule = {"match": "who answers a chat message", "reply": {"relevant": ["p05"]}}
    if misbehave == "slow":
        rule["delay_ms"] = 4 * BUDGET_MS
    elif misbehave == "status":
        rule["status"] = 500
    else:
        rule["mode"] = "garbage"
    llm.control(reset=True, rules=[rule])
    _, col, _, mid, t0 = kube_question(stack, llm)
    fl = floor_for(col, mid, timeout=BUDGET_MS / 1000 + 10)
    took = (time.monotonic() - t0) * 1000
    assert fl["source"] == "rules" and fl["granted"] == ["kube-ann", "kube-bob"], fl
    assert fl["fallback"], fl
    if misbehave == "slow":
        # the deadline timer or the client's own budget, whichever fires first
        fb = fl["fallback"]
        assert fb == DEADLINE_PASSED or fb.startswith("LLM timeout"), fb
        assert took >= BUDGET_MS * 0.9
    else:
        assert fl["fallback"].startswith("LLM ")
        assert took < BUDGET_MS + 1000 * harness.scaled(1)
    time.sleep(0.3)
    assert len([e for e in col.events("room/+/floor") if e["message_id"] == mid]) == 1
    validate_outputs(col, OUTPUTS)


def test_an_llm_error_quoted_in_the_fallback_is_cut_between_characters(stack, llm):
    """The fallback quotes the first 120 bytes of the LLM client's reason
    ("error under HTTP 200: " and the endpoint's message): cut there between
    characters, so the floor stays valid UTF-8 (a cut inside "é" published a
    lone 0xC3 byte)."""
    message = "x" * 97 + "é" * 60  # byte 120 of the reason falls inside an "é"
    llm.control(reset=True, rules=[{"match": "who answers a chat message", "mode": "error200",
                                    "error_message": message}])
    _, col, _, mid, _ = kube_question(stack, llm)
    fl = floor_for(col, mid, timeout=BUDGET_MS / 1000 + 10)
    assert fl["source"] == "rules", fl
    assert fl["fallback"] == "LLM http_error: error under HTTP 200: " + "x" * 97, fl
    for m in col.snapshot():
        m.payload.decode("utf-8")  # raises on a cut sequence
    validate_outputs(col, OUTPUTS)


def test_few_able_personas_need_no_llm(stack, llm):
    start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    for p in ("ann", "bob"):
        pub.publish(f"persona/{p}/meta", {"rooms": [room]}, retain=True)
    harness.wait_until(lambda: len((stack.store(SERVICE).state(room)[1] or {}).get("personas", [])) == 2,
                       10, "two personas")
    before = llm.stats()["requests"]
    mid = uid()
    pub.publish(*human(room, "joel", "hello", mid=mid))
    fl = floor_for(col, mid)
    assert fl["source"] == "rules" and sorted(fl["granted"]) == ["ann", "bob"]
    assert llm.stats()["requests"] == before


def test_kill9_while_messages_wait_loses_none(stack, llm):
    llm.control(reset=True, rules=[{"match": "who answers a chat message", "delay_ms": 800,
                                    "reply": {"relevant": ["p05", "p06"]}}])
    svc = start(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    fifteen(stack, pub, room)
    mids = [uid() for _ in range(10)]
    pub.publish_many([human(room, "joel", f"question {i}", mid=m) for i, m in enumerate(mids)])
    time.sleep(0.3)
    svc.kill9()
    time.sleep(0.5)
    svc.start()
    got = col.wait_count("room/+/floor", len(mids), timeout=BUDGET_MS / 1000 + 20, key="message_id")
    assert set(got) == set(mids)
    by_msg = {}
    for e in col.events("room/+/floor"):
        by_msg.setdefault(e["message_id"], set()).add(e["id"])
    assert all(len(ids) == 1 for ids in by_msg.values()), by_msg
    # each decided once: by the model or, for those caught by the kill, at the deadline
    for e in got.values():
        assert e["source"] in ("llm", "rules")
        assert e["granted"] == (["p05", "p06"] if e["source"] == "llm" else ["kube-ann", "kube-bob"]), e  # recency, ties by id
    time.sleep(0.5)
    assert len(col.events("room/+/floor")) == len(mids)
    validate_outputs(col, OUTPUTS)


def _held_then_killed(stack, llm, budget):
    """A room of fifteen and one human message whose model call the fake
    endpoint holds; the replica is killed -9 while it does. Returns the
    service, the collector, the message id and its deadline."""
    llm.control(reset=True, rules=[{"match": "who answers a chat message", "delay_ms": 60000,
                                    "reply": {"relevant": ["p05", "p06"]}}])
    svc, col, room, mid, _ = kube_question(stack, llm, budget)
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 10, "the model holds the call")
    due = next(w["due"] for w in stack.store(SERVICE).state(room)[1]["pending"] if w["id"] == mid)
    svc.kill9()
    llm.control(reset=True, rules=[{"match": "who answers a chat message",
                                    "reply": {"relevant": ["p05", "p06"]}}])
    return svc, col, mid, due


def test_a_job_taken_before_a_kill9_asks_the_model_again_while_time_remains(stack, llm):
    """A job the worker had taken (leased, not acknowledged) when it was
    killed is taken again after the restart and the model asked again, as
    the deadline is still ahead: the model's answer decides, not the rules
    with a fallback claiming the model did not answer."""
    budget = int(1000 * scaled(8))
    svc, col, mid, due = _held_then_killed(stack, llm, budget)
    svc.start()
    fl = floor_for(col, mid, timeout=budget / 1000 + 10)
    assert fl["source"] == "llm" and "fallback" not in fl, fl
    assert fl["granted"] == ["p05", "p06"], fl
    assert fl["ts"] < due, (fl, due)
    assert llm.stats()["requests"] == 1  # asked once more, after the restart
    time.sleep(0.3)
    assert len([e for e in col.events("room/+/floor") if e["message_id"] == mid]) == 1
    validate_outputs(col, OUTPUTS)


def test_a_job_whose_replica_stays_down_past_its_deadline_says_why_the_rules_decided(stack, llm):
    """The same kill, the replica back only after the deadline: the rules
    decide, and the fallback says what is true (the deadline passed before
    an answer was committed), not that the model did not answer: it was
    never asked again, and the restarted worker does not ask it late."""
    svc, col, mid, due = _held_then_killed(stack, llm, BUDGET_MS)
    harness.wait_until(lambda: harness.now_ms() > due + 300, 10, "past the deadline")
    svc.start()
    fl = floor_for(col, mid, timeout=20)
    assert fl["source"] == "rules" and fl["granted"] == ["kube-ann", "kube-bob"], fl
    assert fl["fallback"] == DEADLINE_PASSED, fl
    assert "did not answer" not in fl["fallback"]
    time.sleep(0.5)
    assert llm.stats()["requests"] == 0  # the late job was acknowledged unasked
    validate_outputs(col, OUTPUTS)


def test_two_replicas_decide_waiting_messages_once_and_on_time_across_kills(stack, llm):
    """Two replicas (VIGIL_SHARD 0/2, 1/2), four rooms of four personas, the
    model answering in 400 ms (within the 1500 ms budget). Three bursts of
    human messages, each hit by a kill -9 while model calls are in flight:
    both replicas (down 2 s, past the budget), Redis (down 2 s), one replica
    (restarted at once). Every message is decided once (one event id, one
    payload per id): by the model ([d, c], its order) or by the rules at
    its deadline ([a, b]: never spoken, ties by id, with the fallback
    saying the LLM did not answer in time), never before its deadline
    when the rules decided, and on time: by its deadline, or when that fell
    in an outage, within the retry backoff (at most 5 s) after the service
    was back. After the kills, a
    round of one message per room is decided by the model (within six
    rounds: the job consumers may still be backing off from the outage)."""
    e = {"VIGIL_LLM_URL": llm.url, "VIGIL_FLOOR_LLM_BUDGET_MS": BUDGET_MS, "VIGIL_LLM_RETRIES": 0}
    replicas = [stack.service(SERVICE, instance=f"floor-llm-{i}", env=dict(e, VIGIL_SHARD=f"{i}/2"))
                for i in range(2)]
    col = stack.collector()
    pub = stack.publisher()
    tag = uid()[:6]
    rooms = harness.balanced_ids(lambda n: f"r-{tag}-{n}", 2)  # two rooms in each shard
    for room in rooms:
        for p in "abcd":
            pub.publish(f"persona/{p}-{room}/meta", {"persona": f"{p}-{room}", "rooms": [room]}, retain=True)
    for room in rooms:
        harness.wait_until(lambda room=room: len((stack.store(SERVICE).state(room)[1] or {})
                                                 .get("personas", [])) == 4, 10, f"four personas in {room}")
    ranking = [f"d-{r}" for r in rooms] + [f"c-{r}" for r in rooms]
    llm.control(reset=True, rules=[{"match": "who answers a chat message", "delay_ms": 400,
                                    "reply": {"relevant": ranking}}])
    sent, outages = {}, []

    def burst(i):
        items = []
        for j, room in enumerate(rooms):
            for k in range(8):
                items.append(human(room, "joel", f"question {i}.{k}", mid=f"w-{tag}-{i}-{j}-{k}"))
        pub.publish_many(items)
        ids = {body["id"]: body["room"] for _, body in items}

        def all_in():  # each waiting in its room record (its deadline known) or decided
            for room in rooms:
                for w in (stack.store(SERVICE).state(room)[1] or {}).get("pending", []):
                    if w["id"] in ids:
                        sent[w["id"]] = (room, w["due"])
            decided = {e["message_id"] for e in col.events("room/+/floor")}
            return all(m in sent or m in decided for m in ids)

        harness.wait_until(all_in, 10, "the burst committed")
        harness.wait_until(lambda: llm.stats()["in_flight"] >= 1, 10, "a model call in flight")
        for m, room in ids.items():
            sent.setdefault(m, (room, None))  # decided by the model before its deadline was read

    burst(0)
    down = harness.now_ms()
    for r in replicas:
        r.kill9()
    time.sleep(2.0)
    for r in replicas:
        r.start()
    outages.append((down, harness.now_ms()))
    burst(1)
    down = harness.now_ms()
    stack.redis.kill9()
    time.sleep(2.0)
    stack.redis.start()
    outages.append((down, harness.now_ms()))
    burst(2)
    down = harness.now_ms()
    replicas[1].kill9()
    replicas[1].start()
    outages.append((down, harness.now_ms()))
    # the model path works after the kills: on a loaded machine every burst
    # above may end decided by the rules (the job consumers back off up to
    # 5 s after the Redis outage), so once no call is in flight a message per
    # room goes in, round after round, until a round is decided by the model
    last = []
    for n in range(6):
        harness.wait_until(lambda: llm.stats()["in_flight"] == 0, 60, "the model's calls ended")
        last = [human(room, "joel", f"after the kills {n}", mid=f"z-{tag}-{n}-{j}")
                for j, room in enumerate(rooms)]
        pub.publish_many(last)
        for _, body in last:
            sent[body["id"]] = (body["room"], None)
        got = col.wait_count("room/+/floor", len(sent), timeout=60, key="message_id")
        if all(got[body["id"]]["source"] == "llm" for _, body in last):
            break
    assert set(got) == set(sent)
    time.sleep(scaled(0.5))
    by_msg, payloads = {}, {}
    for m in col.find("room/+/floor"):
        by_msg.setdefault(m.json()["message_id"], set()).add(m.json()["id"])
        payloads.setdefault(m.json()["id"], set()).add(m.payload)
    assert all(len(ids) == 1 for ids in by_msg.values()), by_msg
    assert all(len(p) == 1 for p in payloads.values())
    slack = 1000 * scaled(1.5)
    late, sources = [], {"llm": 0, "rules": 0}
    for mid, fl in got.items():
        room, due = sent[mid]
        sources[fl["source"]] += 1
        if fl["source"] == "llm":
            assert fl["granted"] == [f"d-{room}", f"c-{room}"] and "fallback" not in fl, fl
        else:
            assert fl["granted"] == [f"a-{room}", f"b-{room}"], fl
            assert fl["fallback"] == DEADLINE_PASSED, fl
            assert due is not None and fl["ts"] >= due - 150, (fl, due)  # waited for the model
        if due is None:
            continue
        allowed = slack
        for down, up in outages:
            if down <= due <= up:
                # after an outage a waiting decision commits on the retry
                # that follows the restart: the backoff (at most 5 s)
                due, allowed = up, slack + 5000
        if fl["ts"] > due + allowed:
            late.append((mid, fl["ts"] - due, fl.get("fallback")))
    assert not late, f"decided late (ms past the deadline or the restart): {late[:5]}"
    assert sources["rules"] > 0, sources
    assert [got[body["id"]]["source"] for _, body in last] == ["llm"] * len(rooms), sources
    for r in replicas:
        r.wait_ready(timeout=30)
    print(f"\n{len(sent)} waiting messages, 3 kills and a last message per room: {sources}")
    validate_outputs(col, OUTPUTS)


def test_two_replicas_ask_the_model_once_per_message_when_it_is_slower_than_the_lease(stack, llm):
    """Two replicas share the job stream; the model answers after 70% of
    the budget, past the lease (half the budget) that lets a replica take
    over a job idle that long. The replica working on a job renews its
    lease while the call runs, so the other one never takes it over: one
    model request per message (before the renewal, about half the jobs
    were taken over by the other replica's XAUTOCLAIM and asked twice),
    each message decided once, by the model."""
    budget = int(1000 * scaled(3))
    llm.control(reset=True, rules=[{"match": "who answers a chat message", "delay_ms": int(budget * 0.7),
                                    "reply": {"relevant": ["p05", "p06"]}}])
    e = {"VIGIL_LLM_URL": llm.url, "VIGIL_FLOOR_LLM_BUDGET_MS": budget, "VIGIL_LLM_RETRIES": 0}
    replicas = [stack.service(SERVICE, instance=f"floor-lease-{i}", env=dict(e, VIGIL_SHARD=f"{i}/2"))
                for i in range(2)]
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    fifteen(stack, pub, room)
    mids = [uid() for _ in range(8)]
    for i, mid in enumerate(mids):  # spread over a take-over scan period
        pub.publish(*human(room, "joel", f"slow question {i}", mid=mid))
        time.sleep(budget / 4 / 1000 / len(mids))
    got = col.wait_count("room/+/floor", len(mids), timeout=budget / 1000 + 20, key="message_id",
                         pred=lambda e: e.get("message_id") in mids)
    assert {fl["source"] for fl in got.values()} == {"llm"}, got
    harness.wait_until(lambda: llm.stats()["in_flight"] == 0, 20, "the model's calls ended")
    time.sleep(budget / 1000)  # a job taken over would be asked again by now
    assert llm.stats()["requests"] == len(mids), llm.stats()["requests"]
    by_msg = {}
    for e in col.events("room/+/floor"):
        by_msg.setdefault(e["message_id"], set()).add(e["id"])
    assert all(len(ids) == 1 for ids in by_msg.values()), by_msg
    for r in replicas:
        assert r.metric("vigil_job_leases_lost_total") == 0
    validate_outputs(col, OUTPUTS)
