"""Theater Mode end to end: the real council service (its model the fake
OpenAI-compatible server) watched through presence-gateway's
/api/autonomous/deliberations/live as the specified browser client opens it
(EventSource with credentials: the login cookie), and questions answered
through the gateway's API as a user of the page would."""

import time

import pytest

import harness
from conftest import validate_outputs
from council_support import OUTPUTS, FakeLLM, control, events, rules, sol, start_service
from fake_servers import running
from gateway_client import SSE, TOKENS, auth, request, start_gateway
from gateway_client import snapshot as gateway_snapshot

TOKEN = next(t for t, u in TOKENS.items() if u == "joel")


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f


def snapshot(gw):
    return gateway_snapshot(gw.http_port, "council", auth(TOKEN))


def login_cookie(gw):
    st, hdrs, _ = request(gw.http_port, "GET", f"/login?token={TOKEN}")
    assert st == 302, st
    return hdrs["set-cookie"].split(";", 1)[0]


def test_the_theater_stream_carries_a_real_session_and_its_answer_comes_back(stack, llm):
    """A session of the real council seen live on the Theater stream with
    the login cookie: `connected` first, then each loop's sense, plan,
    deliberation, act and action; the question (priority 8) answered with
    POST /api/council/{s}/answers reaches the next SENSE (its phase event
    quotes it); three reflects in a row pause the session (the user is
    notified: `session_paused`, spinning); `end` gives `session_ended`.
    Pings keep the stream alive in between."""
    llm.control(rules=rules(sol("reflect: waiting", regex=r'A: "Mornings'),
                            sol("ask user: [p8] When should I block focus time?")))
    start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=200)
    gw = start_gateway(stack, VIGIL_GATEWAY_PING_MS=500)
    col = stack.collector()
    s = SSE(gw.http_port, "/api/autonomous/deliberations/live", {"Cookie": login_cookie(gw)})
    assert s.status == 200 and s.headers["content-type"].startswith("text/event-stream")
    assert s.next()["data"]["type"] == "connected"
    pub = stack.publisher()
    pub.publish(*control("joel", "start", session="s-theater"))
    got = s.until(lambda f: f["data"].get("type") == "action", timeout=30)
    mine = [f["data"] for f in got if f["data"].get("session") == "s-theater"]
    assert [d["type"] if d["type"] != "phase" else "phase:" + d["phase"] for d in mine] == \
        ["phase:sense", "phase:plan", "deliberation", "phase:act", "question", "action"], mine
    assert all(f["event"] == "message" for f in got)  # onmessage gets them all
    q = mine[4]
    assert q["priority"] == 8 and q["question"] == "When should I block focus time?"
    st, _, body = request(gw.http_port, "POST", "/api/council/s-theater/answers",
                          {"question_id": q["question_id"], "answer": "Mornings, 9 to 11"},
                          headers=auth(TOKEN))
    assert st == 202, body
    paused = s.until(lambda f: f["data"].get("type") == "session_paused", timeout=30)
    mine = [f["data"] for f in paused if f["data"].get("session") == "s-theater"]
    sense2 = next(d for d in mine if d["type"] == "phase" and d["phase"] == "sense")
    assert sense2["loop"] == 2 and sense2["context"]["answers"] == ["Mornings, 9 to 11"]
    acts = [d["action"] for d in mine if d["type"] == "action"]
    assert acts == ["reflect"] * 3, mine
    assert "spinning" in mine[-1]["reason"] and "reflect:" in mine[-1]["reason"]
    pub.publish(*control("joel", "end"))
    ended = s.until(lambda f: f["data"].get("type") == "session_ended", timeout=20)
    assert ended[-1]["data"]["reason"] == "ended by the user"
    # a ping arrives on an idle stream
    t0 = time.monotonic()
    p = s.next(timeout=5)
    assert p["data"]["type"] == "ping" and time.monotonic() - t0 < harness.scaled(3)
    s.close()
    assert len(events(col, "s-theater", "action")) == 4
    validate_outputs(col, OUTPUTS)


@pytest.mark.parametrize("answer,why", [(" \t ", "blank"), ("x" * 60001, "long")], ids=["blank", "long"])
def test_an_answer_the_gateway_takes_is_one_council_takes(stack, llm, answer, why):
    """A 2xx from the gateway means the answer will be applied: an answer
    council would refuse (spaces only) is refused by the gateway with 400
    and reaches no topic; a long one the gateway takes (up to its text
    limit) is taken by council too, kept cut to 1000 bytes, and starts the
    next loop."""
    llm.control(rules=rules(sol("note: thanks", regex=r"loop 2 of"),
                            sol("ask user: Which project first?")))
    start_service(stack, llm)
    gw = start_gateway(stack)
    col = stack.collector()
    pub = stack.publisher()
    session = f"s-ans-{why}"
    pub.publish(*control("joel", "start", session=session))
    q = col.wait_for(lambda c: [e for e in events(c, session, "question")], 20, "a question")[0]
    st, _, body = request(gw.http_port, "POST", f"/api/council/{session}/answers",
                          {"question_id": q["question_id"], "answer": answer}, headers=auth(TOKEN))
    if why == "blank":
        assert st == 400 and body["error"] == "bad_request" and "'answer'" in body["detail"], (st, body)
        time.sleep(harness.scaled(1.0))
        assert not col.events(f"council/{session}/answer")
        assert not col.events("sys/council/error")
        # the same blank answer published on the broker by another client:
        # council refuses it, and the gateway still keeps the question as
        # pending for ?snapshot=1 (it is pending in council)
        pub.publish(f"council/{session}/answer", {"id": "blank-1", "question_id": q["question_id"],
                                                  "answer": answer})
        err = col.wait_event("sys/council/error", timeout=10)
        assert err["reason"] == "bad_value" and "blank" in err["detail"]
        time.sleep(harness.scaled(0.5))
        kept = [f["data"] for f in snapshot(gw) if f["event"] == "council.questions"
                and f["data"]["session"] == session]
        assert [x["question_id"] for x in kept[0]["questions"]] == [q["question_id"]], kept
        return
    assert st == 202, body
    a = col.wait_for(lambda c: [e for e in events(c, session, "action", loop=2)], 20,
                     "the loop the answer started")[0]
    assert a["action"] == "note"
    assert not col.events("sys/council/error")
    sense2 = events(col, session, "phase", loop=2)[0]
    assert sense2["context"]["answers"] == ["x" * 1000]
    validate_outputs(col, OUTPUTS)


def test_a_question_dropped_for_a_17th_ends_on_the_stream_and_in_the_snapshot(stack, llm):
    """Sixteen questions are kept per session: the 17th pending one ends the
    oldest, and council says so with a `question` event for it (status
    expired, expires_at the time it ended, the reason; counted in
    vigil_council_questions_dropped_total), which the Theater
    stream carries and after which the gateway's ?snapshot=1 no longer
    lists it. (Asks alternate with notes: three asks in a row would trip
    the circuit breaker.)"""
    llm.control(rules=rules(sol("ask user: Shall I go on?", regex=r"loop \d*[13579] of"),
                            sol("note: waiting for answers")))
    svc = start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=100, VIGIL_COUNCIL_MAX_LOOPS=40)
    gw = start_gateway(stack)
    col = stack.collector()
    s = SSE(gw.http_port, "/api/autonomous/deliberations/live", {"Cookie": login_cookie(gw)})
    assert s.next()["data"]["type"] == "connected"
    assert not svc.metric("vigil_council_questions_dropped_total")
    session = "s-seventeen"
    stack.publisher().publish(*control("joel", "start", session=session))
    last = 33  # the loop of the 17th question
    col.wait_for(lambda c: events(c, session, "action", loop=last), 90, f"loop {last}'s action")
    qs = events(col, session, "question")
    ended = [q for q in qs if q.get("status") == "expired"]
    assert [q["question_id"] for q in ended] == [f"{session}.L1.q"], ended
    gone = ended[0]
    assert gone["reason"] == "dropped: more than 16 questions pending", gone
    assert gone["loop"] == last and gone["expires_at"] <= gone["ts"], gone
    asked = [q for q in qs if q.get("status") == "pending"]
    assert len(asked) == 17 and qs.index(gone) == len(qs) - 2  # just before the 17th
    assert svc.metric("vigil_council_questions_dropped_total") == 1  # counted, once
    # the Theater stream carries it, and the snapshot keeps the 16 still pending
    frames = s.until(lambda f: f["data"].get("question_id") == gone["question_id"]
                     and f["data"].get("status") == "expired", timeout=20)
    assert frames[-1]["data"]["reason"] == gone["reason"]
    # the 17th comes after it: the snapshot is read once the gateway has it too
    s.until(lambda f: f["data"].get("question_id") == f"{session}.L{last}.q", timeout=20)
    s.close()
    kept = [f["data"] for f in snapshot(gw) if f["event"] == "council.questions"
            and f["data"]["session"] == session]
    ids = [q["question_id"] for q in kept[0]["questions"]]
    assert len(ids) == 16 and gone["question_id"] not in ids, ids
    assert sorted(ids) == sorted(q["question_id"] for q in asked[1:])
    validate_outputs(col, OUTPUTS)
