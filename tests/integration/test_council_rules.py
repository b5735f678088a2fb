"""council's rules that an audit of the specified behaviour and the README checked, driven
through the broker with a real Redis and the real service: SENSE of a
session limited to a room holds that room's last messages (and the `sense`
event counts them), a session id is used once, a session's questions end
with it and are not answered after it, and an A2A reply that answers
another request, leaves its task unfinished or brings no text back is not
a delegation; a prefix with nothing after it acts on nothing, a sleep:
whose duration is not understood is refused, and an answer given while a
loop is in PLAN starts the next loop as soon as that loop commits."""

import json
import time

import pytest

import harness
from conftest import human, uid, validate_outputs
from council_support import (OUTPUTS, FakeLLM, ScriptedA2A, control, events, rules, run_cli, sol,
                             start_service, wait_events)
from fake_servers import running

ERROR = "sys/council/error"


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f


def first(col, session, etype, timeout=20, since_loop=None):
    """The first `etype` event of the session (of loop since_loop or later)."""
    return wait_events(col, session, lambda evs: [e for e in evs if e["type"] == etype and
                                                  (since_loop is None or e["loop"] >= since_loop)],
                       timeout, f"a {etype} event of {session}")[0]


def test_sense_of_a_room_session_holds_that_rooms_last_messages(stack, llm):
    llm.control(rules=rules(sol("note: fine")))
    svc = start_service(stack, llm, VIGIL_COUNCIL_CONTEXT_MESSAGES=3)
    col = stack.collector()
    pub = stack.publisher()
    before = svc.metric("vigil_commits_total") or 0
    for i in range(3):
        pub.publish(*human("general", "rho", f"general note {i}"))
    for i in range(3):
        pub.publish(*human("other", "rho", f"other note {i}"))
    harness.wait_until(lambda: (svc.metric("vigil_commits_total") or 0) >= before + 6, 10,
                       "the six room messages committed")
    pub.publish(*control("rho", "start", session="s-room", room="general"))
    sense = first(col, "s-room", "phase")
    assert sense["phase"] == "sense" and sense["context"]["messages"] == 3, sense
    first(col, "s-room", "action")
    prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    for i in range(3):
        assert f'"general note {i}"' in prompt, prompt
    assert "other note" not in prompt and "recent messages (oldest first):\n- (none)" not in prompt
    validate_outputs(col, OUTPUTS)


def test_a_session_id_is_used_once(stack, llm):
    llm.control(rules=rules(sol("note: fine")))
    start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    r = stack.redis.client()
    for sid in ("s-a", "s-b"):
        pub.publish(*control("sig", "start", session=sid))
        first(col, sid, "action")
        pub.publish(*control("sig", "end"))
        first(col, sid, "session_ended")
        # the same commit's state snapshot may still be on its way
        col.wait_event(f"council/{sid}/state", lambda e: e.get("status") == "completed",
                       timeout=10)
    rec_a = r.get(f"{stack.prefix}council:rec:s-a")
    index = r.xrange(f"{stack.prefix}council:sessions")
    states = stack.store("council").states()

    # an older, completed id again: refused, nothing changes
    mark = col.mark()
    pub.publish(*control("sig", "start", session="s-a"))
    err = col.wait_event(ERROR, timeout=10, since=mark)
    assert err["reason"] == "bad_value" and "session id 's-a' was already used" in err["detail"]
    time.sleep(0.5)
    assert not col.find("council/+/event", since=mark) + col.find("council/+/state", since=mark)
    assert r.get(f"{stack.prefix}council:rec:s-a") == rec_a
    assert r.xrange(f"{stack.prefix}council:sessions") == index
    assert stack.store("council").states() == states

    # while another session is live: refused too, never a session_ended on s-a's topic
    pub.publish(*control("sig", "start", session="s-c"))
    first(col, "s-c", "action")
    mark = col.mark()
    pub.publish(*control("sig", "start", session="s-a"))
    err = col.wait_event(ERROR, timeout=10, since=mark)
    assert err["reason"] == "bad_value" and "already used" in err["detail"]
    time.sleep(0.5)
    assert not col.find("council/s-a/event", since=mark)
    assert r.get(f"{stack.prefix}council:rec:s-a") == rec_a
    listed = [json.loads(m[b"m"])["session"]
              for _, m in r.xrange(f"{stack.prefix}council:sessions")]
    assert listed == ["s-a", "s-b", "s-c"]
    # another user naming it: refused as well
    pub.publish(*control("tau", "start", session="s-b"))
    err = col.wait_event(ERROR, lambda e: "s-b" in e["detail"], timeout=10, since=mark)
    assert err["reason"] == "bad_value"
    r.close()
    validate_outputs(col, OUTPUTS)


def test_questions_end_with_the_session_and_are_not_answered_after(stack, llm, tmp_path):
    llm.control(rules=rules(sol("ask user: [p6] Shall I plan Monday?")))
    start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("upa", "start", session="s-qend"))
    q = first(col, "s-qend", "question")
    assert [x["status"] for x in
            map(json.loads, run_cli(stack, "questions", "--json").stdout.splitlines())] == \
        ["pending"]
    pub.publish(*control("upa", "end"))
    ended = first(col, "s-qend", "session_ended")
    # the question expired at the end: the record says so, the CLI lists none pending
    rec = json.loads(stack.redis.client().get(f"{stack.prefix}council:rec:s-qend"))
    assert [(x["id"], x["status"], x["expires_at"]) for x in rec["questions"]] == \
        [(q["question_id"], "expired", ended["ts"])]
    r = run_cli(stack, "questions", "--json")
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout
    r = run_cli(stack, "questions", "--all", "--json")
    assert [(x["id"], x["status"]) for x in map(json.loads, r.stdout.splitlines())] == \
        [(q["question_id"], "expired")]

    # an answer now is refused with the reason, and changes nothing
    states = stack.store("council").states()
    mark = col.mark()
    pub.publish("council/s-qend/answer", {"id": uid("a"), "question_id": q["question_id"],
                                          "answer": "Yes", "ts": harness.now_ms()})
    err = col.wait_event(ERROR, timeout=10, since=mark)
    assert err["reason"] == "bad_value", err
    assert err["detail"] == f"question '{q['question_id']}' belongs to session s-qend, " \
                            "which has ended (completed)", err
    time.sleep(0.5)
    assert not col.find("council/+/event", since=mark) + col.find("council/+/state", since=mark)
    assert stack.store("council").states() == states
    validate_outputs(col, OUTPUTS)


def test_an_a2a_reply_not_ours_or_not_completed_is_not_delegated(stack, llm):
    """The first reply names another request's id; the second is ours but
    its task waits for input. Neither is a delegation: delegated false,
    the reason in `warning`, no artifact kept, counted as an error."""
    def reply(req):
        first_call = len(agent.requests) == 1
        return {"jsonrpc": "2.0", "id": "other-id" if first_call else req["id"],
                "result": {"taskId": "t9", "status": {"state": "input-required"}}}

    llm.control(rules=rules(sol("research: vector databases")))
    with ScriptedA2A(reply) as agent:
        svc = start_service(stack, llm, VIGIL_COUNCIL_A2A_URL=agent.url,
                            VIGIL_COUNCIL_LOOP_MS=200, VIGIL_COUNCIL_MAX_LOOPS=2)
        col = stack.collector()
        stack.publisher().publish(*control("vic", "start", session="s-a2a"))
        first(col, "s-a2a", "session_ended")
    acts = events(col, "s-a2a", "action")
    assert [a["delegated"] for a in acts] == [False, False], acts
    assert all(a["result"] == "delegation failed" and "a2a_task_id" not in a for a in acts), acts
    assert "A2A reply id 'other-id' does not match the request's id 's-a2a.L1'" in \
        acts[0]["warning"], acts[0]
    assert "A2A task state 'input-required': not completed" in acts[1]["warning"], acts[1]
    assert [q["id"] for q in agent.requests] == ["s-a2a.L1", "s-a2a.L2"]
    rec = json.loads(stack.redis.client().get(f"{stack.prefix}council:rec:s-a2a"))
    assert rec["notes"] == []
    assert svc.metric("vigil_council_a2a_total", outcome="error") == 2
    assert not svc.metric("vigil_council_a2a_total", outcome="ok")
    validate_outputs(col, OUTPUTS)


def test_a_completed_a2a_reply_without_text_is_not_delegated(stack, llm):
    """A reply of our id whose task completed with no text (no artifact) or
    a message of spaces only brought nothing back: not a delegation with an
    empty result and an empty note, but delegation failed with the reason
    in `warning`, counted as an error."""
    def reply(req):
        if len(agent.requests) == 1:
            return {"jsonrpc": "2.0", "id": req["id"],
                    "result": {"taskId": "t7", "status": {"state": "completed"}, "artifacts": []}}
        return {"jsonrpc": "2.0", "id": req["id"],
                "result": {"role": "agent", "parts": [{"kind": "text", "text": "  "}]}}

    llm.control(rules=rules(sol("research: vector databases")))
    with ScriptedA2A(reply) as agent:
        svc = start_service(stack, llm, VIGIL_COUNCIL_A2A_URL=agent.url,
                            VIGIL_COUNCIL_LOOP_MS=200, VIGIL_COUNCIL_MAX_LOOPS=2)
        col = stack.collector()
        stack.publisher().publish(*control("vic", "start", session="s-a2e"))
        first(col, "s-a2e", "session_ended")
    acts = events(col, "s-a2e", "action")
    assert [a["delegated"] for a in acts] == [False, False], acts
    assert all(a["result"] == "delegation failed" for a in acts), acts
    assert "A2A task 't7' completed with no text" in acts[0]["warning"], acts[0]
    assert "A2A message with no text" in acts[1]["warning"], acts[1]
    rec = json.loads(stack.redis.client().get(f"{stack.prefix}council:rec:s-a2e"))
    assert rec["notes"] == []
    assert svc.metric("vigil_council_a2a_total", outcome="error") == 2
    assert not svc.metric("vigil_council_a2a_total", outcome="ok")
    validate_outputs(col, OUTPUTS)


def test_disabled_autonomous_mode_starts_nothing_and_ends_a_live_session(stack, llm):
    """VIGIL_COUNCIL_ENABLED=0 switches autonomous mode off: a start is
    answered `started: false` with the reason, and a session that was live
    when the service came back with it off ends at its next loop."""
    llm.control(rules=rules(sol("note: fine")))
    svc = start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=1500)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("vic", "start", session="s-on"))
    first(col, "s-on", "action")
    svc.terminate()
    svc.env["VIGIL_COUNCIL_ENABLED"] = "0"
    svc.start()
    ended = first(col, "s-on", "session_ended")
    assert "VIGIL_COUNCIL_ENABLED=0" in ended["reason"], ended
    assert len(events(col, "s-on", "deliberation")) == 1
    s = harness.retained(stack.broker.port, "council/s-on/state")["council/s-on/state"]
    assert s["status"] == "completed" and s["reason"] == ended["reason"]

    pub.publish(*control("vic", "start", session="s-off"))
    e = wait_events(col, "s-off", lambda evs: evs, 10, "the answer to start")[0]
    assert e["type"] == "session_ended" and e["started"] is False
    assert "autonomous mode is disabled (VIGIL_COUNCIL_ENABLED=0)" in e["reason"], e
    time.sleep(0.5)
    assert [x["type"] for x in events(col, "s-off")] == ["session_ended"]
    assert not col.events("council/s-off/state")
    assert not stack.redis.client().get(f"{stack.prefix}council:rec:s-off")
    validate_outputs(col, OUTPUTS)


def test_the_users_availability_reaches_sense_and_the_act_phase(stack, llm):
    """room/{r}/presence says whether the user is available: SENSE carries
    it (the `sense` event and every prompt, Sol told to weigh it) and the
    `act` phase event says what Sol weighed."""
    llm.control(rules=rules(sol("note: fine")))
    svc = start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()

    def presence(status):
        before = svc.metric("vigil_commits_total") or 0
        now = harness.now_ms()
        pub.publish("room/general/presence", {"id": uid("p"), "user": "wren", "session": "tab-1",
                                              "status": status, "last_activity": now, "ts": now})
        harness.wait_until(lambda: (svc.metric("vigil_commits_total") or 0) > before, 10,
                           f"the {status} report committed")

    presence("active")
    pub.publish(*control("wren", "start", session="s-avail"))
    sense = first(col, "s-avail", "phase")
    assert sense["phase"] == "sense"
    assert sense["context"]["user_available"] is True and sense["context"]["presence"] == "active"
    first(col, "s-avail", "action")
    act = [e for e in events(col, "s-avail", "phase", loop=1) if e["phase"] == "act"][0]
    assert act["context"] == {"user_available": True, "presence": "active"}, act
    prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    assert "User available: yes (active in room general, last active" in prompt, prompt

    # a report while the council deliberates is not what Sol weighed: the
    # act event still says this loop's SENSE (it said the report at commit)
    llm.control(rules=rules(sol("note: fine")), delay_ms=1500)
    pub.publish(*control("wren", "pause"))
    first(col, "s-avail", "session_paused")
    pub.publish(*control("wren", "resume"))
    first(col, "s-avail", "phase", since_loop=2)
    presence("away")
    first(col, "s-avail", "action", since_loop=2)
    act = [e for e in events(col, "s-avail", "phase", loop=2) if e["phase"] == "act"][0]
    assert act["context"] == {"user_available": True, "presence": "active"}, act
    llm.control(rules=rules(sol("note: fine")))

    pub.publish(*control("wren", "pause"))
    first(col, "s-avail", "session_paused", since_loop=2)
    pub.publish(*control("wren", "resume"))
    sense = first(col, "s-avail", "phase", since_loop=3)
    assert sense["context"]["user_available"] is False and sense["context"]["presence"] == "away"
    first(col, "s-avail", "action", since_loop=3)
    prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    assert "User available: no (away in room general" in prompt, prompt
    validate_outputs(col, OUTPUTS)


def test_a_presence_report_dated_in_the_future_does_not_pin_the_users_availability(stack, llm):
    """A presence report whose ts and last_activity are a year ahead (a
    producer's clock ahead, a mistyped date) is taken as heard now: the
    user's next report, `away` at the real time, still counts (a future ts
    outranked every later report, so the user stayed `active` for a year)."""
    llm.control(rules=rules(sol("note: fine")))
    svc = start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    year = 365 * 86400000

    def presence(status, ahead=0):
        before = svc.metric("vigil_commits_total") or 0
        now = harness.now_ms() + ahead
        pub.publish("room/general/presence", {"id": uid("p"), "user": "yara", "session": "tab-1",
                                              "status": status, "last_activity": now, "ts": now})
        harness.wait_until(lambda: (svc.metric("vigil_commits_total") or 0) > before, 10,
                           f"the {status} report committed")

    presence("active", ahead=year)
    presence("away")
    pub.publish(*control("yara", "start", session="s-future"))
    sense = first(col, "s-future", "phase")
    assert sense["phase"] == "sense"
    assert sense["context"]["presence"] == "away", sense
    assert sense["context"]["user_available"] is False, sense
    assert col.find(ERROR) == []
    validate_outputs(col, OUTPUTS)


def test_the_last_loop_ends_the_session_even_when_the_breaker_trips_on_it(stack, llm):
    """Three identical actions on a session's last loops: the loop limit
    wins, the session ends with "loop limit reached" (it was paused as
    spinning, "resume to continue", and a resume only ended it)."""
    llm.control(rules=rules(sol("note: same again")))
    start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=100, VIGIL_COUNCIL_MAX_LOOPS=3)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("lena", "start", session="s-last"))
    done = wait_events(col, "s-last", lambda evs: [e for e in evs if e["type"] in
                                                  ("session_ended", "session_paused")], 30,
                       "the session to end or pause")[0]
    assert done["type"] == "session_ended", done
    assert done["reason"] == "loop limit reached (VIGIL_COUNCIL_MAX_LOOPS)" and done["loop"] == 3
    assert [a["action"] for a in events(col, "s-last", "action")] == ["note"] * 3
    s = col.wait_for(lambda c: [m.json() for m in c.find("council/s-last/state")
                                if m.json()["status"] == "completed"], 10, "the completed state")[0]
    assert s["loop_count"] == 3 and "loop limit" in s["reason"], s
    assert col.find(ERROR) == []
    validate_outputs(col, OUTPUTS)


def loop_rules(*replies, delays=None):
    """Sol answering `replies[i]` in loop i+1 (its prompt says "loop N of"), with
    an optional delay (ms) per loop."""
    out = []
    for i, r in enumerate(replies):
        rule = sol(r, regex=rf"loop {i + 1} of")
        if delays and delays.get(i + 1):
            rule["delay_ms"] = delays[i + 1]
        out.append(rule)
    return rules(*out)


def test_a_prefix_with_nothing_after_it_acts_on_nothing(stack, llm):
    """Sol naming an action that takes an object with nothing after it - only
    spaces, or a question's bare priority marker - acts on nothing: no empty
    question reaches the user, no empty request goes out; the action is
    reflect with a warning saying so (and the breaker counts it as one). The
    service keeps running (spaces after a prefix were once read past the
    end of the answer)."""
    llm.control(rules=loop_rules("note:     ", "ask user:   [p4]   ", "search:  "))
    svc = start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=100)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("ines", "start", session="s-bare"))
    paused = first(col, "s-bare", "session_paused")
    assert "3 'reflect:' actions in a row" in paused["reason"], paused
    acts = events(col, "s-bare", "action")
    assert [a["action"] for a in acts] == ["reflect"] * 3, acts
    for a, prefix in zip(acts, ("note:", "ask user:", "search:")):
        assert f"'{prefix}' with nothing to act on" in a["warning"], a
    assert events(col, "s-bare", "question") == []
    assert col.find("council/+/request") == []
    assert col.find(ERROR) == []
    assert svc.alive()
    validate_outputs(col, OUTPUTS)


def test_a_sleep_is_read_exactly_and_one_not_understood_is_refused(stack, llm):
    """`sleep:` takes a duration in the README's grammar, compound ones
    whole (1s 500ms is 1.5 s); anything else (2h30: thirty what?, nothing
    at all) is refused as an unknown prefix is: reflect with a warning
    quoting it, counted in vigil_council_actions_refused_total by the
    prefix refused. Three such loops trip the breaker as reflects."""
    llm.control(rules=loop_rules("sleep: 1s 500ms", "sleep: 2h30", "sleep:   ", "wander: off"))
    svc = start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=100)
    col = stack.collector()
    stack.publisher().publish(*control("ines", "start", session="s-zz"))
    paused = first(col, "s-zz", "session_paused")
    assert "3 'reflect:' actions in a row" in paused["reason"], paused
    acts = events(col, "s-zz", "action")
    assert [a["action"] for a in acts] == ["sleep", "reflect", "reflect", "reflect"], acts
    assert acts[0]["result"] == "sleeping 1500 ms" and acts[0]["until"] - acts[0]["ts"] == 1500
    assert "warning" not in acts[0], acts[0]
    assert acts[1]["warning"] == ("'sleep:' with no duration understood in '2h30' (say 10m, "
                                  "30 seconds, 1h30m): recorded as reflect:"), acts[1]
    assert "'sleep:' with nothing to act on" in acts[2]["warning"], acts[2]
    assert "unknown action prefix 'wander:'" in acts[3]["warning"], acts[3]
    sense2 = first(col, "s-zz", "phase", since_loop=2)
    assert sense2["ts"] - acts[0]["ts"] >= 1500, (acts[0], sense2)
    assert svc.metric("vigil_council_actions_refused_total", prefix="sleep:") == 2
    assert svc.metric("vigil_council_actions_refused_total", prefix="none") == 1
    assert col.find(ERROR) == []
    validate_outputs(col, OUTPUTS)


def test_an_answer_given_during_plan_starts_the_next_loop_when_it_commits(stack, llm):
    """An answer that comes while a loop is in PLAN was not in its SENSE: when
    that loop commits, the next one starts at once (not a loop interval or a
    sleep: later) and quotes the answer."""
    llm.control(rules=loop_rules("ask user: Shall I block 9 to 11?", "sleep: 10m",
                                 "note: 9 to 11 is blocked", delays={2: 1500}))
    start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=600000)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("ines", "start", session="s-mid"))
    q = first(col, "s-mid", "question")
    # loop 2 by pause and resume (the interval is ten minutes), slow to answer
    pub.publish(*control("ines", "pause"))
    first(col, "s-mid", "session_paused")
    pub.publish(*control("ines", "resume"))
    first(col, "s-mid", "phase", since_loop=2)
    pub.publish("council/s-mid/answer", {"id": uid("a"), "question_id": q["question_id"],
                                         "answer": "Yes please"})
    act2 = first(col, "s-mid", "action", since_loop=2)
    assert act2["loop"] == 2 and act2["action"] == "sleep", act2
    assert act2["result"].startswith("not sleeping 600000 ms: the user answered"), act2
    assert act2["until"] == act2["ts"], act2
    sense3 = first(col, "s-mid", "phase", timeout=10, since_loop=3)
    assert sense3["phase"] == "sense" and sense3["context"]["answers"] == ["Yes please"], sense3
    assert sense3["ts"] - act2["ts"] < 5000, (act2, sense3)
    first(col, "s-mid", "action", since_loop=3)
    assert col.find(ERROR) == []
    validate_outputs(col, OUTPUTS)


def test_texts_quoted_in_part_are_cut_between_characters(stack, llm):
    """A proposal with no known action is named by its first 24 bytes, and
    a refused answer quotes the first 80 bytes of its question id: cut
    there between characters, so the action event and the error event stay
    valid UTF-8 (a cut inside "é" published a lone 0xC3 byte)."""
    llm.control(rules=rules(sol("x" + "é" * 30)))  # byte 24 falls inside the 12th "é"
    start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("u-utf8", "start", session="s-utf8"))
    act = first(col, "s-utf8", "action")
    assert act["action"] == "reflect", act
    assert act["warning"].startswith("unknown action 'x" + "é" * 11 + "...': recorded as reflect:"), act
    mark = col.mark()
    qid = "q" * 79 + "é"  # byte 80 falls inside the "é"
    pub.publish("council/s-utf8/answer", {"id": uid("a"), "question_id": qid, "answer": "Yes",
                                          "ts": harness.now_ms()})
    err = col.wait_event(ERROR, timeout=10, since=mark)
    assert err["reason"] == "bad_value", err
    assert err["detail"] == f"no question '{'q' * 79}' in session s-utf8", err
    for m in col.snapshot():
        m.payload.decode("utf-8")  # raises on a cut sequence
    validate_outputs(col, OUTPUTS)
