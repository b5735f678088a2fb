"""An LLM answer that arrives in time is not turned into a timeout by a
Redis outage. A job worker drives its LLM transfers on the thread that
commits; a commit waiting out an outage used to sleep there, so curl timed
out answers already on their way (heartbeat runs ended in error, council
loops recorded "(no answer: timeout)"). Redis is killed with -9 for 4 s,
longer than the LLM timeout minus the model's latency, while calls are in
flight, and restarted from its AOF."""
import json
import time

import pytest

import harness
from conftest import uid
from council_support import OUTPUTS, control, events, rules, sol
from fake_servers import FakeLLM, running

DOWN_S = 4.0


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f


def test_council_loops_keep_answers_through_a_redis_outage(stack, llm):
    llm.control(rules=rules(sol("note: progress noted", regex=r"loop (1|3|5) of"), sol("search: x")),
                delay_ms=700)
    env = {"VIGIL_LLM_URL": llm.url, "VIGIL_LLM_TIMEOUT_MS": 3000, "VIGIL_LLM_RETRIES": 0,
           "VIGIL_COUNCIL_LOOP_MS": 300, "VIGIL_COUNCIL_MAX_LOOPS": 5, "VIGIL_COUNCIL_AUTO_START": 0}
    stack.service("council", instance="co", env=env)
    col = stack.collector(topics=OUTPUTS)
    pub = stack.publisher()
    tag = uid()[:6]
    sessions = [f"s-{tag}-{i}" for i in range(6)]
    for i, s in enumerate(sessions):
        pub.publish(*control(f"u{tag}-{i}", "start", session=s))
    col.wait_for(lambda c: sum(1 for s in sessions if events(c, s, "action")) >= 3, 30,
                 "first actions")
    # calls in flight while a loop is about to commit
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 4, 15, "calls in flight")
    time.sleep(0.4)
    stack.redis.kill9()
    time.sleep(DOWN_S)
    stack.redis.start()
    col.wait_for(lambda c: all(events(c, s, "session_ended") for s in sessions), 90,
                 "sessions end")
    bad = [(s, d["loop"]) for s in sessions for d in events(col, s, "deliberation")
           if "(no answer" in json.dumps(d)]
    assert not bad, f"loops committed with LLM failures the model did not have: {bad}"


def test_heartbeat_runs_keep_answers_through_a_redis_outage(stack, llm):
    llm.control(rules=[{"reply": "HEARTBEAT_OK"}], delay_ms=700)
    env = {"VIGIL_LLM_URL": llm.url, "VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": 1000,
           "VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS": 1000, "VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS": 1000,
           "VIGIL_HEARTBEAT_SKIP_STRETCH": "1.0", "VIGIL_HEARTBEAT_LIVE_MS": 0,
           "VIGIL_LLM_TIMEOUT_MS": 3000, "VIGIL_LLM_RETRIES": 0}
    stack.service("heartbeat", instance="hb", env=env)
    col = stack.collector(topics=("heartbeat/+/run", "sys/#"))
    pub = stack.publisher()
    room = uid("r")
    ps = [f"p{i}" for i in range(10)]
    for p in ps:
        pub.publish(f"heartbeat/{p}/config", {"persona": p, "user": "joel", "room": room,
                                              "checklist": "CHECK", "enabled": True,
                                              "ts": harness.now_ms()}, retain=True)
        time.sleep(0.1)  # staggered: some runs commit while others are in the model
    col.wait_for(lambda c: all(len(c.events(f"heartbeat/{p}/run")) >= 2 for p in ps), 30,
                 "2 runs each")
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 3, 15, "calls in flight")
    time.sleep(0.3)
    stack.redis.kill9()
    time.sleep(DOWN_S)
    stack.redis.start()
    t1 = harness.now_ms()
    col.wait_for(lambda c: all(len([e for e in c.events(f"heartbeat/{p}/run") if e["ts"] > t1]) >= 2
                               for p in ps), 40, "2 runs each after")
    errs = [(e["persona"], e["run"], e.get("reason"), e.get("detail")) for p in ps
            for e in col.events(f"heartbeat/{p}/run") if e["outcome"] == "error"]
    assert not errs, f"runs ended in error although the model answered in 0.7 s: {errs}"


def test_floor_control_keeps_answers_through_a_redis_outage(stack, llm):
    """floor-control's worker backs off its job reads while Redis is away;
    the answers of the calls in flight still count. The model answers in
    6 s, the LLM timeout is 7 s, Redis is away for 9 s from 0.2 s into the
    calls: the read backoff reaches its 5 s cap, during which the worker
    used to drive no transfer at all."""
    from test_floor_control import SERVICE, fifteen
    from conftest import human
    llm.control(rules=[{"match": "who answers a chat message",
                        "reply": {"relevant": ["p05", "p06"]}}], delay_ms=6000)
    stack.service(SERVICE, env={"VIGIL_LLM_URL": llm.url, "VIGIL_FLOOR_LLM_BUDGET_MS": 30000,
                                "VIGIL_LLM_RETRIES": 0, "VIGIL_LLM_TIMEOUT_MS": 7000})
    col = stack.collector()
    pub = stack.publisher()
    room = "r-" + uid()[:8]
    fifteen(stack, pub, room)
    mids = []
    for i in range(4):
        mids.append(f"{room}-q{i}")
        pub.publish(*human(room, "joel", f"question {i}", mid=mids[-1]))
    harness.wait_until(lambda: llm.stats()["in_flight"] >= 4, 15, "calls in flight")
    time.sleep(0.2)
    stack.redis.kill9()
    time.sleep(9)
    stack.redis.start()
    col.wait_for(lambda c: {e["message_id"] for e in c.events("room/+/floor")} >= set(mids), 40,
                 "a floor per message")
    bad = [(e["message_id"], e["source"], e.get("fallback")) for e in col.events("room/+/floor")
           if e["message_id"] in mids and e["source"] != "llm"]
    assert not bad, f"messages decided by the rules although the model answered in 6 s: {bad}"
