"""Bad input on each of council's topics (council/{user}/control,
council/{session}/answer, room/{room}/message) never crashes it and never
changes state: each case yields an event on sys/council/error with the
precise reason, one increment of vigil_rejected_total{reason=...}, no state
record change in Redis and no council event or state message; a good
control right after still works."""

import json

import pytest

import harness
from conftest import uid, validate_outputs
from council_support import FakeLLM, rules, sol

SERVICE = "council"
ERROR_TOPIC = f"sys/{SERVICE}/error"
USER = "bad-user"
SESSION = "s-bad"


def body(base, **over):
    for k, v in over.items():
        if v is None:
            base.pop(k, None)
        else:
            base[k] = v
    return json.dumps(base, ensure_ascii=False).encode("utf-8")


def ctl(**over):
    return body({"id": uid("c"), "action": "pause", "session": SESSION, "ts": harness.now_ms()}, **over)


def ans(**over):
    return body({"id": uid("a"), "question_id": "nope", "answer": "yes", "ts": harness.now_ms()}, **over)


def msg(**over):
    return body({"id": uid(), "room": "general", "sender": USER, "sender_type": "human",
                 "text": "hello", "ts": harness.now_ms()}, **over)


C = f"council/{USER}/control"
A = f"council/{SESSION}/answer"
M = "room/general/message"

CASES = [
    ("control: not json", C, b"start please", "not_json"),
    ("control: truncated", C, ctl()[:-5], "not_json"),
    ("control: array", C, b"[1]", "not_object"),
    ("control: missing action", C, ctl(action=None), "missing_field"),
    ("control: action of wrong type", C, ctl(action=3), "wrong_type"),
    ("control: unknown action", C, ctl(action="reboot"), "bad_value"),
    ("control: session with /", C, ctl(session="a/b"), "bad_id"),
    ("control: room too long", C, ctl(action="start", room="r" * 65), "bad_id"),
    ("control: invalid utf-8", C, ctl(room="x").replace(b'"x"', b'"\xc3("'), "invalid_utf8"),
    ("control: oversize", C, ctl(pad="x" * 70000), "oversize"),
    ("control: topic user with space", "council/a b/control", ctl(), "bad_topic"),
    ("control: pause without a session", C, ctl(session=None), "bad_value"),
    ("control: resume without a session", C, ctl(action="resume", session=None), "bad_value"),
    ("answer: not json", A, b"yes!", "not_json"),
    ("answer: missing question_id", A, ans(question_id=None), "missing_field"),
    ("answer: missing answer", A, ans(answer=None), "missing_field"),
    ("answer: answer of wrong type", A, ans(answer=["yes"]), "wrong_type"),
    ("answer: empty answer", A, ans(answer=""), "bad_value"),
    # the session has ended, so any answer is refused: the detail says why
    ("answer: blank answer", A, ans(answer=" \t\n "), "bad_value", "field 'answer': blank"),
    ("answer: question_id too long", A, ans(question_id="q" * 200), "bad_value"),
    ("answer: session disagrees with topic", A, ans(session="other"), "topic_mismatch"),
    ("answer: unknown session", "council/s-unknown/answer", ans(), "bad_value"),
    ("answer: unknown question", A, ans(question_id="s-bad.L9.q"), "bad_value"),
    ("message: missing sender", M, msg(sender=None), "missing_field"),
    ("message: text of wrong type", M, msg(text=7), "wrong_type"),
    ("message: sender with #", M, msg(sender="a#b"), "bad_id"),
    ("message: room disagrees with topic", M, msg(room="elsewhere"), "topic_mismatch"),
    ("message: unknown sender_type", M, msg(sender_type="robot"), "bad_value"),
]


@pytest.fixture(scope="module")
def env(module_stack, tmp_path_factory):
    s = module_stack
    llm = FakeLLM(str(tmp_path_factory.mktemp("llm")))
    llm.control(rules=rules(sol("note: fine")))
    svc = s.service(SERVICE, env={"VIGIL_LLM_URL": llm.url, "VIGIL_LLM_RETRIES": 0,
                                  "VIGIL_COUNCIL_LOOP_MS": 3600000, "VIGIL_COUNCIL_MAX_DAILY": 1000})
    col = s.collector()
    pub = s.publisher()
    # A session exists (and ends) so answers to it reach a real record.
    pub.publish(f"council/{USER}/control", ctl(action="start"))
    col.wait_event(f"council/{SESSION}/event", lambda e: e["type"] == "action", timeout=20)
    pub.publish(f"council/{USER}/control", ctl(action="end"))
    col.wait_event(f"council/{SESSION}/event", lambda e: e["type"] == "session_ended", timeout=10)
    try:
        yield s, svc, col, pub
    finally:
        llm.stop()


@pytest.mark.parametrize("name,topic,payload,reason,detail",
                         [c if len(c) == 5 else c + (None,) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_with_reason_and_changes_nothing(env, name, topic, payload, reason,
                                                               detail):
    s, svc, col, pub = env
    store = s.store(SERVICE)
    before = harness.metric_value(svc.metrics(), "vigil_rejected_total", reason=reason)
    states_before = store.states()
    mark = col.mark()
    pub.publish(topic, payload)
    err = col.wait_event(ERROR_TOPIC, lambda e: e.get("topic") == topic, timeout=10, since=mark,
                         what=f"an error event for {name}")
    assert err["reason"] == reason, f"{name}: {err}"
    assert err["service"] == SERVICE and err["detail"]
    assert detail is None or detail in err["detail"], f"{name}: {err}"
    harness.wait_until(lambda: svc.metric("vigil_rejected_total", reason=reason) == before + 1, 5,
                       f"vigil_rejected_total{{reason={reason}}} + 1")
    assert store.states() == states_before, "a rejected input changed a state record"
    changed = col.find("council/+/event", since=mark) + col.find("council/+/state", since=mark)
    assert not changed, f"a rejected input produced council messages: {changed[:3]}"
    assert svc.alive()


def test_still_working_after_bad_input(env):
    s, svc, col, pub = env
    mark = col.mark()
    session = uid("s")
    pub.publish(f"council/{USER}/control", ctl(action="start", session=session))
    col.wait_event(f"council/{session}/event", lambda e: e["type"] == "action", timeout=20, since=mark)
    validate_outputs(col, ("council/+/event", "council/+/state", "sys/#"))
    assert svc.alive() and not svc.check()
