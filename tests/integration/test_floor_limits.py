"""Limits that speak, floor-control: each bound that refuses part of an
input says so on sys/floor-control/error (reason `limit`, valid against the
sys-error schema) and counts it in vigil_limit_refusals_total{limit}, or
refuses the input whole with a reason; the rest of the input is applied.
The bounds themselves are unit-tested in
services/floor-control/tests/test_limits.c; here, what only the running
service shows: the events, the counts, the member sets, the decision."""

import json

import harness
import schema_check  # tests/integration/schema_check.py
from conftest import human, uid, validate_outputs
from test_floor_control import OUTPUTS, SERVICE, fifteen, floor_for, meta, wait_view
from test_wake_evaluator import llm  # noqa: F401 - the fake_llm.py fixture

ERROR_TOPIC = f"sys/{SERVICE}/error"


def limit_event(col, limit_word, since, what):
    """The next limit refusal whose detail holds limit_word, schema-checked."""
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("reason") == "limit" and limit_word in e.get("detail", ""),
                         since=since, what=what)
    schema_check.validate_message(ERROR_TOPIC, json.dumps(err).encode())
    assert err["service"] == SERVICE, err
    return err


def refusals(svc, limit):
    return svc.metric("vigil_limit_refusals_total", limit=limit) or 0


def member_rooms(stack, persona):
    c = stack.redis.client()
    try:
        return {m.decode() for m in c.smembers(f"{stack.prefix}{SERVICE}:rooms:{persona}")}
    finally:
        c.close()


def test_full_view_and_long_name_are_said(stack):
    svc = stack.service(SERVICE, env={"VIGIL_FLOOR_MAX_PERSONAS": "2"})
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    for p in ("ann", "bob"):  # one by one: ann is learned about first
        pub.publish(*meta(p, room))
        wait_view(stack, room, lambda v, p=p: p in v, f"{p} in the view")
    assert member_rooms(stack, "ann") == {room}
    mark = col.mark()
    long_name = "C" * 70
    pub.publish(*meta("cid", room, name=long_name))
    full = limit_event(col, "VIGIL_FLOOR_MAX_PERSONAS", mark, "the room view's refusal")
    assert f"room '{room}' keeps at most 2 personas" in full["detail"], full
    assert "'ann', learned about longest ago, is dropped from it to make room for 'cid'" in full["detail"], full
    assert full["topic"] == "persona/cid/meta", full
    name = limit_event(col, "display name", mark, "the long name's refusal")
    assert "persona 'cid'" in name["detail"] and "70 bytes" in name["detail"], name
    harness.wait_until(lambda: refusals(svc, "personas_per_room") == 1 and refusals(svc, "name_bytes") == 1,
                       5, "both refusals counted")
    # the rest of the meta applied; ann left the view and her member set
    wait_view(stack, room, lambda v: set(v) == {"bob", "cid"} and v["cid"]["name"] == "", "bob and cid")
    assert member_rooms(stack, "ann") == set()
    assert member_rooms(stack, "cid") == {room}
    mid = uid()
    pub.publish(*human(room, "joel", "hello", mid=mid))
    assert sorted(floor_for(col, mid)["granted"]) == ["bob", "cid"]
    validate_outputs(col, OUTPUTS)


def test_rooms_past_the_route_bound_refuse_the_meta_whole(stack):
    svc = stack.service(SERVICE)
    col = stack.collector()
    pub = stack.publisher()
    rooms = [f"room{i:02d}" for i in range(64)]
    pub.publish("persona/ann/meta", {"persona": "ann", "rooms": rooms})
    harness.wait_until(lambda: len(member_rooms(stack, "ann")) == 64, 30, "ann in 64 rooms")
    mark = col.mark()
    pub.publish("persona/ann/meta", {"persona": "ann", "rooms": ["room64"]})
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("topic") == "persona/ann/meta", since=mark,
                         what="the meta refused")
    assert err["reason"] == "too_many_keys", err
    schema_check.validate_message(ERROR_TOPIC, json.dumps(err).encode())
    harness.wait_until(lambda: refusals(svc, "rooms_per_input") == 1, 5, "the refusal counted")
    assert "limit reached" in svc.stderr_text()
    assert len(member_rooms(stack, "ann")) == 64  # nothing applied
    assert (stack.store(SERVICE).state("room64")[1] or {}).get("personas", []) == []


def start_llm(stack, llm, **env):
    e = {"VIGIL_LLM_URL": llm.url, "VIGIL_FLOOR_LLM_BUDGET_MS": 1500, "VIGIL_LLM_RETRIES": 0}
    e.update(env)
    return stack.service(SERVICE, env=e)


def test_long_text_is_decided_by_the_rules_at_once_and_said(stack, llm):
    llm.control(reset=True, rules=[{"match": "who answers a chat message", "reply": {"relevant": ["p05"]}}])
    svc = start_llm(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    fifteen(stack, pub, room)
    before = llm.stats()["requests"]
    mark = col.mark()
    mid = uid()
    text = "Why does my Kubernetes pod restart? " + "x" * 5000 + " @p09"
    pub.publish(*human(room, "joel", text, mid=mid))
    fl = floor_for(col, mid)
    # the rules, on the whole text: the mention at its very end is granted
    assert fl["source"] == "rules" and fl["granted"] == ["p09", "kube-ann", "kube-bob"], fl
    assert f"has a text of {len(text)} bytes, more than the 4096" in fl["fallback"], fl
    err = limit_event(col, "a text of", mark, "the long text's refusal")
    assert err["detail"] == fl["fallback"] and err["topic"] == f"room/{room}/message", err
    harness.wait_until(lambda: refusals(svc, "llm_text_bytes") == 1, 5, "the refusal counted")
    assert llm.stats()["requests"] == before  # the LLM was not asked
    validate_outputs(col, OUTPUTS)


def test_an_answer_cut_at_max_tokens_is_said(stack, llm):
    llm.control(reset=True, rules=[{"match": "who answers a chat message", "mode": "truncated",
                                    "reply": {"relevant": ["p05", "p06"]}}])
    svc = start_llm(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    fifteen(stack, pub, room)
    mid = uid()
    pub.publish(*human(room, "joel", "Why does my Kubernetes pod restart?", mid=mid))
    fl = floor_for(col, mid, timeout=12)
    assert fl["source"] == "rules" and fl["fallback"].startswith("LLM answer cut at 100 tokens: "), fl
    assert fl["granted"] == ["kube-ann", "kube-bob"], fl
    harness.wait_until(lambda: refusals(svc, "llm_answer_tokens") == 1, 5, "the cut counted")
    assert "the rules decided" in svc.stderr_text()
