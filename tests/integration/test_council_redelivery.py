"""council inputs delivered twice (the same `id`: an MQTT redelivery, or a
publisher sending the same input again) while the service still holds the
user's record in memory: the second copy is a duplicate, dropped without a
word (no error event, no event, no state change), like a redelivery after a
restart. Covers a start, a pause, a resume, an answer and an end."""

import time

import pytest

import harness
from conftest import uid, validate_outputs
from council_support import OUTPUTS, FakeLLM, control, events, rules, sol, start_service, \
    wait_events
from fake_servers import running

ERROR = "sys/council/error"


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f


def twice(pub, svc, col, topic, body):
    """Publishes the same input twice; the second copy must be counted as a
    duplicate and draw no error event."""
    before = svc.metric("vigil_duplicates_total") or 0
    mark = col.mark()
    pub.publish(topic, body)
    pub.publish(topic, body)
    harness.wait_until(lambda: (svc.metric("vigil_duplicates_total") or 0) >= before + 1 or
                       col.find(ERROR, since=mark), 10, "the second copy taken")
    assert not col.find(ERROR, since=mark), (topic, [m.json() for m in col.find(ERROR)])


def test_an_input_delivered_twice_is_applied_once_without_an_error(stack, llm):
    llm.control(rules=rules(sol("ask user: [p7] Is Friday still the deadline?")))
    svc = start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()

    twice(pub, svc, col, *control("dup", "start", session="s-dup"))
    q = wait_events(col, "s-dup", lambda evs: [e for e in evs if e["type"] == "question"], 20,
                    "a question")[0]
    twice(pub, svc, col, *control("dup", "pause"))
    wait_events(col, "s-dup", lambda evs: [e for e in evs if e["type"] == "session_paused"], 10,
                "paused")
    twice(pub, svc, col, *control("dup", "resume"))
    wait_events(col, "s-dup", lambda evs: len([e for e in evs if e["type"] == "action"]) >= 2,
                20, "an action after the resume")
    twice(pub, svc, col, "council/s-dup/answer",
          {"id": uid("a"), "question_id": q["question_id"], "answer": "Yes", "ts": harness.now_ms()})
    twice(pub, svc, col, *control("dup", "end"))
    wait_events(col, "s-dup", lambda evs: [e for e in evs if e["type"] == "session_ended"], 10,
                "ended")
    time.sleep(0.5)
    assert not col.find(ERROR), [m.json() for m in col.find(ERROR)]
    evs = events(col, "s-dup")
    assert len([e for e in evs if e["type"] == "session_paused"]) == 1
    assert len([e for e in evs if e["type"] == "session_ended"]) == 1
    assert (svc.metric("vigil_rejected_total") or 0) == 0
    validate_outputs(col, OUTPUTS)
