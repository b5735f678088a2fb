"""council (issue 13: Autonomous Mode, the Council System) driven
only through the broker, with a real Redis, the real service process,
tests/support/fake_llm.py answering per council persona over real HTTP and
tests/support/fake_a2a.py as the A2A agent `research:` is delegated to."""

import json
import time

import pytest

import harness
from conftest import human, uid, validate_outputs
from council_support import (OUTPUTS, SERVICE, FakeA2A, FakeLLM, control, events, kinds, rules,
                             run_cli, sol, start_service, wait_events)
from fake_servers import running


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f


@pytest.fixture
def a2a(tmp_path):
    with running(FakeA2A, tmp_path) as f:
        yield f


def test_full_loop_emits_phases_deliberation_and_action_in_order(stack, llm):
    llm.control(rules=rules(sol("note: the report is due on Friday")), delay_ms=300)
    start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*human("general", "joel", "I must finish the quarterly report by Friday"))
    time.sleep(0.3)
    pub.publish(*control("joel", "start", session="s-full", room="general"))
    wait_events(col, "s-full", lambda evs: any(e["type"] == "action" for e in evs), 20,
                "the first loop's action")
    loop1 = events(col, "s-full", loop=1)
    assert kinds(loop1) == ["phase:sense", "phase:plan", "deliberation", "phase:act", "action"]
    d = loop1[2]
    assert d["polaris"].startswith("Polaris:") and d["aurora"].startswith("Aurora:")
    assert d["vega"].startswith("Vega:") and d["sol"] == "note: the report is due on Friday"
    assert d["decision"] == "note: the report is due on Friday" and d["phase"] == "plan"
    a = loop1[4]
    assert a["action"] == "note" and a["content"] == "the report is due on Friday"
    assert loop1[0]["context"]["messages"] == 1
    # two stages: the three advisors' calls in flight at once (each answer
    # took 300 ms), then Sol's alone, the loop's last
    st = llm.stats()
    assert st["requests"] == 4 and st["max_concurrent"] == 3, st
    # each prompt names its persona and carries the user's message; Sol's
    # the advisors' answers too (test_council_plan_act.py)
    prompt = st["last_request"]["body"]["messages"][-1]["content"]
    assert "quarterly report by Friday" in prompt and prompt.startswith("You are Sol, ")
    assert "- Vega, the Analyst: Vega: the deadline is Friday." in prompt, prompt
    s = harness.retained(stack.broker.port, "council/s-full/state")["council/s-full/state"]
    assert s["status"] == "active" and s["loop_count"] == 1 and s["user"] == "joel"
    assert s["room"] == "general"
    # the deliberation's record says the phase it was made in, as the event does
    c = stack.redis.client()
    try:
        recs = [json.loads(m[b"m"]) for _, m in c.xrange(stack.prefix + "council:delib:s-full")]
    finally:
        c.close()
    assert [(r["loop"], r["phase"], r["decision"]) for r in recs] == \
        [(1, "plan", "note: the report is due on Friday")], recs
    pub.publish(*control("joel", "end"))
    wait_events(col, "s-full", lambda evs: any(e["type"] == "session_ended" for e in evs), 10,
                "session_ended")
    assert validate_outputs(col, OUTPUTS) > 0


def test_ask_user_then_answer_reaches_next_sense(stack, llm):
    llm.control(rules=rules(sol("note: the user wants mornings", regex=r'A: "Mornings'),
                            sol("ask user: [p8] When should I block focus time?")))
    start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("ann", "start", session="s-ask"))
    q = wait_events(col, "s-ask", lambda evs: [e for e in evs if e["type"] == "question"], 20,
                    "a question event")[0]
    assert q["priority"] == 8 and q["question"] == "When should I block focus time?"
    assert q["expires_at"] > q["ts"]
    t0 = time.monotonic()
    pub.publish("council/s-ask/answer", {"id": uid("a"), "question_id": q["question_id"],
                                         "answer": "Mornings, 9 to 11", "ts": harness.now_ms()})
    acts = wait_events(col, "s-ask", lambda evs: [e for e in evs if e["type"] == "action" and
                                                 e["loop"] == 2], 20, "loop 2's action")
    # the answer started the next loop at once (the loop interval is 60 s)
    assert time.monotonic() - t0 < 30
    sense2 = events(col, "s-ask", "phase", loop=2)[0]
    assert sense2["phase"] == "sense" and sense2["context"]["answered_questions"] == 1
    assert sense2["context"]["answers"] == ["Mornings, 9 to 11"]
    assert acts[0]["action"] == "note" and acts[0]["content"] == "the user wants mornings"
    # answering again is refused, with a reason, and changes nothing
    pub.publish("council/s-ask/answer", {"question_id": q["question_id"], "answer": "again"})
    err = col.wait_event("sys/council/error", timeout=10)
    assert err["reason"] == "bad_value" and "already answered" in err["detail"]
    validate_outputs(col, OUTPUTS)


def test_three_reflects_in_a_row_pause_the_session(stack, llm):
    llm.control(rules=rules(sol("reflect: nothing needs doing")))
    start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=200)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("bob", "start", session="s-spin"))
    p = wait_events(col, "s-spin", lambda evs: [e for e in evs if e["type"] == "session_paused"],
                    30, "session_paused")[0]
    assert "spinning" in p["reason"] and "reflect:" in p["reason"]
    time.sleep(1.0)  # several loop intervals: nothing more happens
    acts = events(col, "s-spin", "action")
    assert [a["action"] for a in acts] == ["reflect"] * 3
    assert len(events(col, "s-spin", "phase")) == 3 * 3  # sense, plan, act per loop
    s = harness.retained(stack.broker.port, "council/s-spin/state")["council/s-spin/state"]
    assert s["status"] == "paused" and "spinning" in s["reason"] and s["loop_count"] == 3
    # resume: the breaker starts over
    pub.publish(*control("bob", "resume"))
    wait_events(col, "s-spin", lambda evs: len([e for e in evs if e["type"] == "action"]) >= 4, 20,
                "an action after resume")
    validate_outputs(col, OUTPUTS)


@pytest.mark.parametrize("method", ["message/send", "SendMessage"])
def test_research_reaches_the_a2a_agent_and_its_artifact_is_recorded(stack, llm, a2a, method):
    llm.control(rules=rules(sol("research: vector databases for notes")))
    start_service(stack, llm, VIGIL_COUNCIL_A2A_URL=a2a.url, VIGIL_COUNCIL_A2A_METHOD=method)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("cyd", "start", session="s-res"))
    a = wait_events(col, "s-res", lambda evs: [e for e in evs if e["type"] == "action"], 20,
                    "the research action")[0]
    assert a["action"] == "research" and a["delegated"] is True
    assert a["result"].startswith("Findings on vector databases for notes")
    assert a["a2a_state"] == "completed" and a["a2a_task_id"]
    calls = a2a.stats()["calls"]
    assert len(calls) == 1 and calls[0]["method"] == method
    assert calls[0]["text"] == "vector databases for notes"
    assert calls[0]["role"] == ("user" if method == "message/send" else "ROLE_USER")
    # recorded: the session's durable record keeps the artifact as a note
    r = stack.redis.client()
    rec = json.loads(r.get(f"{stack.prefix}council:rec:s-res"))
    assert any(n["text"].startswith("Findings on") for n in rec["notes"])
    validate_outputs(col, OUTPUTS)


def test_research_without_a2a_is_recorded_as_not_delegated(stack, llm):
    llm.control(rules=rules(sol("Research: the user's calendar habits")))
    start_service(stack, llm)
    col = stack.collector()
    stack.publisher().publish(*control("dee", "start", session="s-nod"))
    a = wait_events(col, "s-nod", lambda evs: [e for e in evs if e["type"] == "action"], 20,
                    "the research action")[0]
    assert a["action"] == "research" and a["delegated"] is False
    assert "VIGIL_COUNCIL_A2A_URL" in a["result"]


def test_search_and_schedule_go_out_as_requests(stack, llm):
    llm.control(rules=rules(sol("schedule: focus block tomorrow 9:00", regex=r"loop 2 of"),
                            sol("search: pomodoro technique")))
    start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=200)
    col = stack.collector()
    stack.publisher().publish(*control("eve", "start", session="s-req"))
    reqs = col.wait_for(lambda c: c.events("council/s-req/request") if
                        len(c.events("council/s-req/request")) >= 2 else None, 20, "two requests")
    assert reqs[0]["kind"] == "search" and reqs[0]["query"] == "pomodoro technique"
    assert reqs[1]["kind"] == "schedule" and reqs[1]["query"] == "focus block tomorrow 9:00"
    validate_outputs(col, OUTPUTS)


def test_without_llm_start_answers_with_the_reason(stack):
    start_service(stack, None)
    col = stack.collector()
    stack.publisher().publish(*control("fay", "start", session="s-nollm"))
    e = wait_events(col, "s-nollm", lambda evs: evs, 10, "the answer to start")[0]
    assert e["type"] == "session_ended" and e["started"] is False
    assert "no LLM" in e["reason"]
    time.sleep(0.3)
    assert not col.events("council/s-nollm/state")
    validate_outputs(col, OUTPUTS)


def sol_asked_in_loop(llm, loop):
    """Sol's call of `loop` is in flight (its advisors have answered)."""
    st = llm.stats()
    last = (st["last_request"] or {}).get("body", {}).get("messages", [{}])[-1].get("content", "")
    return st["in_flight"] >= 1 and last.startswith("You are Sol, ") and f"loop {loop} of" in last


@pytest.mark.parametrize("stage", ["advisors", "sol"])
def test_kill9_mid_loop_resumes_without_repeating_a_completed_action(stack, llm, stage):
    """A kill -9 while loop 2's advisors are asked, or while Sol is (its
    advisors' answers not committed on their own): the restarted service
    runs loop 2 again from its advisors and acts once."""
    # loop 1 notes, loop 2 searches, loop 3 notes (no three alike in a row)
    llm.control(rules=rules(sol("search: deep work", regex=r"loop 2 of"),
                            sol("note: progress noted")), delay_ms=1500)
    svc = start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=100, VIGIL_COUNCIL_MAX_LOOPS=3)
    col = stack.collector()
    stack.publisher().publish(*control("gus", "start", session="s-kill"))
    wait_events(col, "s-kill", lambda evs: any(e["type"] == "action" for e in evs), 20,
                "loop 1's action")
    # loop 2 is planning (each of its two stages takes 1.5 s): kill the service now
    wait_events(col, "s-kill", lambda evs: any(e["type"] == "phase" and e["phase"] == "plan" and
                                               e["loop"] == 2 for e in evs), 10, "loop 2 planning")
    if stage == "sol":
        harness.wait_until(lambda: sol_asked_in_loop(llm, 2), 10, "Sol asked in loop 2")
    svc.kill9()
    svc.start()
    wait_events(col, "s-kill", lambda evs: any(e["type"] == "session_ended" for e in evs), 40,
                "the session to end after its three loops")
    acts = events(col, "s-kill", "action")
    assert [(a["loop"], a["action"]) for a in acts] == [(1, "note"), (2, "search"), (3, "note")]
    reqs = {m["id"] for m in col.events("council/s-kill/request")}
    assert len(reqs) == 1  # the search request once
    rec = json.loads(stack.redis.client().get(f"{stack.prefix}council:rec:s-kill"))
    assert len(rec["notes"]) == 2 and rec["actions"] == 3 and rec["status"] == "completed"
    assert "loop limit" in rec["reason"]
    validate_outputs(col, OUTPUTS)


def test_pause_resume_and_end_by_control(stack, llm):
    llm.control(rules=rules(sol("note: steady")), delay_ms=200)
    svc = start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("hal", "start", session="s-ctl"))
    wait_events(col, "s-ctl", lambda evs: any(e["type"] == "action" for e in evs), 20, "an action")
    pub.publish(*control("hal", "pause", session="s-ctl"))
    p = wait_events(col, "s-ctl", lambda evs: [e for e in evs if e["type"] == "session_paused"],
                    10, "paused")[0]
    assert p["reason"] == "paused by the user"
    pub.publish(*control("hal", "resume"))
    wait_events(col, "s-ctl", lambda evs: len([e for e in evs if e["type"] == "action"]) >= 2, 20,
                "an action after resume")
    pub.publish(*control("hal", "end"))
    e = wait_events(col, "s-ctl", lambda evs: [e for e in evs if e["type"] == "session_ended"],
                    10, "ended")[0]
    assert e["reason"] == "ended by the user"
    s = harness.retained(stack.broker.port, "council/s-ctl/state")["council/s-ctl/state"]
    assert s["status"] == "completed" and s["ended_at"] >= s["started_at"]
    # a second start of the same session id is refused (bad_value on sys/council/error)
    pub.publish(*control("hal", "start", session="s-ctl"))
    err = col.wait_event("sys/council/error", timeout=10)
    assert err["reason"] == "bad_value" and "already used" in err["detail"]
    # libshared's shard view keeps refreshing beside council's own
    # P S ":sessions" stream (its keys are P S ":shard:..."; sharing the
    # name made every refresh fail, and the intake waits for a view it can
    # read): one refresh from now on
    c = stack.redis.client()
    try:
        assert c.type(stack.prefix + "council:sessions") == b"stream"
        t0 = harness.now_ms()
        harness.wait_until(lambda: (c.zscore(stack.prefix + "council:shard:counts", "1") or 0)
                           > t0 + 10000, 10, "a shard view refresh beside the sessions stream")
    finally:
        c.close()
    assert "shard view:" not in svc.stderr_text()


def test_cli_lists_sessions_shows_one_and_lists_questions(stack, llm):
    llm.control(rules=rules(sol("ask user: [p9] Is Friday still the deadline?")))
    start_service(stack, llm)
    col = stack.collector()
    stack.publisher().publish(*control("ivy", "start", session="s-cli", room="general"))
    wait_events(col, "s-cli", lambda evs: any(e["type"] == "question" for e in evs), 20, "a question")
    r = run_cli(stack, "sessions", "--json")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["session"], x["user"], x["status"], x["loop_count"]) for x in rows] == \
        [("s-cli", "ivy", "active", 1)]
    r = run_cli(stack, "show", "s-cli")
    assert r.returncode == 0, r.stderr
    assert "status  active" in r.stdout and "[p9 pending] Is Friday still the deadline?" in r.stdout
    assert "polaris  Polaris:" in r.stdout and "decision ask user: [p9]" in r.stdout
    r = run_cli(stack, "questions", "--json")
    qs = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(qs) == 1 and qs[0]["priority"] == 9 and qs[0]["session"] == "s-cli"
    assert run_cli(stack, "show", "s-none").returncode == 3
    assert run_cli(stack, "show", "bad/id").returncode == 2


def test_automatic_start_every_interval_up_to_the_daily_limit(stack, llm):
    llm.control(rules=rules(sol("note: fine")))
    # 1.2 s interval, one loop per session, two sessions a day
    start_service(stack, llm, VIGIL_COUNCIL_INTERVAL_MIN=0.02, VIGIL_COUNCIL_MAX_LOOPS=1,
                  VIGIL_COUNCIL_MAX_DAILY=2)
    col = stack.collector()
    stack.publisher().publish(*control("joy", "start", session="s-auto1", room="lab"))

    def states(c):
        return {m.topic: m.json() for m in c.find("council/+/state")}

    auto = col.wait_for(lambda c: [s for s in states(c).values() if s.get("automatic")], 20,
                        "an automatic session")[0]
    assert auto["user"] == "joy" and auto["room"] == "lab" and auto["session"] != "s-auto1"
    col.wait_for(lambda c: states(c)[f"council/{auto['session']}/state"]["status"] == "completed", 20,
                 "the automatic session to finish its loop")
    time.sleep(3.0)  # more than two intervals: the daily limit holds
    sessions = {s["session"] for s in states(col).values()}
    assert len(sessions) == 2, sessions
    validate_outputs(col, OUTPUTS)


def test_idle_timeout_ends_a_paused_session(stack, llm):
    llm.control(rules=rules(sol("note: fine")))
    start_service(stack, llm, VIGIL_COUNCIL_IDLE_TIMEOUT_MIN=0.02)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("kim", "start", session="s-idle"))
    wait_events(col, "s-idle", lambda evs: any(e["type"] == "action" for e in evs), 20, "an action")
    pub.publish(*control("kim", "pause"))
    t0 = time.monotonic()
    e = wait_events(col, "s-idle", lambda evs: [e for e in evs if e["type"] == "session_ended"], 20,
                    "the idle timeout")[0]
    assert "idle timeout" in e["reason"] and time.monotonic() - t0 >= 1.0
    # the retained state is published after the event: under load it may trail it a little
    deadline = time.monotonic() + 10
    while True:
        s = harness.retained(stack.broker.port, "council/s-idle/state")["council/s-idle/state"]
        if s["status"] != "paused" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert s["status"] == "completed" and "idle" in s["reason"]


def test_unanswered_question_expires(stack, llm):
    llm.control(rules=rules(sol("ask user: still there?")))
    start_service(stack, llm, VIGIL_COUNCIL_QUESTION_TTL_MS=500)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("lee", "start", session="s-exp"))
    q = wait_events(col, "s-exp", lambda evs: [e for e in evs if e["type"] == "question"], 20,
                    "a question")[0]
    assert q["priority"] == 5 and q["expires_at"] - q["ts"] == 500
    time.sleep(1.0)
    pub.publish("council/s-exp/answer", {"question_id": q["question_id"], "answer": "late"})
    err = col.wait_event("sys/council/error", timeout=10)
    assert err["reason"] == "bad_value" and "expired" in err["detail"]
    r = run_cli(stack, "questions", "--all", "--json")
    qs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["id"], x["status"]) for x in qs] == [(q["question_id"], "expired")]


def test_sleep_delays_the_next_loop(stack, llm):
    llm.control(rules=rules(sol("sleep: 2 seconds", regex=r"loop 1 of"), sol("note: awake")))
    start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=100)
    col = stack.collector()
    stack.publisher().publish(*control("max", "start", session="s-sleep"))
    a = wait_events(col, "s-sleep", lambda evs: [e for e in evs if e["type"] == "action"], 20,
                    "the sleep action")[0]
    assert a["action"] == "sleep" and a["until"] - a["ts"] == 2000
    s2 = wait_events(col, "s-sleep", lambda evs: [e for e in evs if e["type"] == "phase" and
                                                 e["loop"] == 2], 20, "loop 2")[0]
    assert s2["ts"] - a["ts"] >= 2000


def test_a_slow_a2a_agent_does_not_hold_up_other_sessions(stack, llm, a2a):
    a2a.control(delay_ms=2500)
    llm.control(rules=rules(sol("research: slow topic", regex=r"User: ann2"), sol("note: quick")))
    start_service(stack, llm, VIGIL_COUNCIL_A2A_URL=a2a.url)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("ann2", "start", session="s-slow"))
    time.sleep(0.3)
    pub.publish(*control("ben2", "start", session="s-fast"))
    fast = wait_events(col, "s-fast", lambda evs: [e for e in evs if e["type"] == "action"], 20,
                       "the other session's action")[0]
    slow = wait_events(col, "s-slow", lambda evs: [e for e in evs if e["type"] == "action"], 20,
                       "the research action")[0]
    assert fast["ts"] < slow["ts"], "the quick session waited for the slow agent"
    assert slow["delegated"] is True and slow["result"].startswith("Findings on slow topic")


def test_a_worker_runs_as_many_loops_as_the_client_has_calls_for(stack, llm):
    """A loop has at most three calls in flight (its advisors; Sol is asked
    alone after them), so a worker holds VIGIL_LLM_CONCURRENCY/3 loops: with
    6, two loops' advisors run at once (six calls), never more than the
    client's six, and four users' first loops all end."""
    llm.control(rules=rules(sol("note: fine")), delay_ms=1500)
    start_service(stack, llm, VIGIL_LLM_CONCURRENCY=6, VIGIL_COUNCIL_AUTO_START=0)
    col = stack.collector()
    pub = stack.publisher()
    tag = uid("cc")
    users = [f"{tag}-u{i}" for i in range(4)]
    for u in users:
        pub.publish(*control(u, "start", session=f"s-{u}"))
    for u in users:
        wait_events(col, f"s-{u}", lambda evs: any(e["type"] == "action" for e in evs), 60,
                    f"{u}'s first loop")
    st = llm.stats()
    assert st["requests"] == 16 and st["max_concurrent"] == 6, st


def test_loop_jobs_past_the_stream_cap_are_counted_said_and_their_sessions_end(stack, llm):
    """Limits that speak: the loop job stream keeps about
    VIGIL_COUNCIL_JOBS_MAXLEN unfinished jobs. With the model slow and one
    loop held at a time (VIGIL_LLM_CONCURRENCY=4: a third of it, rounded down), 240 users'
    first loops queue 240 jobs against a cap of 100: every job is either
    still in the stream or was trimmed unrun, vigil_stream_trimmed_total
    {stream="jobs"} (at zero from the start) counts exactly the trimmed
    ones and one warning says so. A trimmed loop never comes back: its
    session ends at the idle timeout, with a reason that says why."""
    llm.control(rules=rules(sol("note: fine")), delay_ms=60000)
    n = 240
    svc = start_service(stack, llm, VIGIL_COUNCIL_JOBS_MAXLEN=100, VIGIL_LLM_CONCURRENCY=4,
                        VIGIL_LLM_TIMEOUT_MS=120000, VIGIL_COUNCIL_AUTO_START=0,
                        VIGIL_COUNCIL_IDLE_TIMEOUT_MIN=0.5)
    # declared at zero (metric() reads a missing series as 0 too)
    assert ("vigil_stream_trimmed_total", {"stream": "jobs"}, 0.0) in svc.metrics()
    col = stack.collector(topics=("council/+/event",))
    pub = stack.publisher()
    tag = uid("cap")
    users = [f"{tag}-u{i}" for i in range(n)]
    for u in users:
        pub.publish(*control(u, "start", session=f"s-{u}"))
    key = f"{stack.prefix}{SERVICE}:jobs"
    c = stack.redis.client()
    try:
        harness.wait_until(
            lambda: c.xlen(key) + (svc.metric("vigil_stream_trimmed_total", stream="jobs") or 0) == n,
            60, f"{n} loop jobs queued or trimmed", interval=0.2)
        left = {json.loads(m[b"m"])["user"] for _, m in c.xrange(key)}
    finally:
        c.close()
    assert 100 <= len(left) < n, len(left)
    assert llm.stats()["requests"] <= 4  # one loop in hand, none finished
    text = svc.stderr_text()
    assert text.count("job stream at its cap") == 1, text[-3000:]
    assert '"stream":"jobs"' in text and f'"key":"{key}"' in text and '"cap":"100"' in text
    trimmed = [u for u in users if u not in left]
    lost = f"s-{trimmed[-1]}"  # its job was trimmed: no worker will ever run it
    e = wait_events(col, lost, lambda evs: [e for e in evs if e["type"] == "session_ended"], 60,
                    "the idle timeout of a session whose loop was trimmed")[0]
    assert "idle timeout" in e["reason"] and "loop 1 never came back" in e["reason"], e
    assert "VIGIL_COUNCIL_JOBS_MAXLEN" in e["reason"], e


@pytest.mark.parametrize("value", ["99", "100000001", "lots"])
def test_jobs_maxlen_out_of_range_is_refused_at_start(stack, value):
    svc = stack.service(SERVICE, start=False)
    out = svc.run_cli(["--help"]).stdout.decode()
    assert "VIGIL_COUNCIL_JOBS_MAXLEN" in out and "100000" in out
    r = svc.run_cli([], env={"VIGIL_COUNCIL_JOBS_MAXLEN": value})
    assert r.returncode == 2, r.stderr
    assert b"VIGIL_COUNCIL_JOBS_MAXLEN: expected an integer in 100..100000000" in r.stderr, r.stderr


@pytest.mark.parametrize("fault", ["redis", "broker"])
def test_redis_or_broker_kill9_mid_loops_repeats_and_loses_no_action(stack, llm, fault):
    """Eight sessions loop (a search at loops 2 and 4, notes between) while
    redis-server or mosquitto is killed with kill -9 twice and restarted on
    the same port and data: every session still runs its five loops, each
    action once (one payload per event id), one search request per search,
    and ends once.

    The kills come once every start is committed (each session's first
    event seen) and, for the broker, once mosquitto has saved a database
    holding the collector's session: it saves every 2 s, and a kill -9
    before that forgets the collector, whose new session after the
    restart misses what council publishes before it subscribes again (a
    loss of the broker's, not the service's: the outbox's replay covers a
    broker crash, not a subscriber the broker forgot; one run in twelve on
    a loaded machine, every run when the kills are timed to hit it). The
    second kill waits for the collector to be back."""
    llm.control(rules=rules(sol("search: deep work", regex=r"loop [24] of"),
                            sol("note: progress noted")), delay_ms=600)
    svc = start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=400, VIGIL_COUNCIL_MAX_LOOPS=5)
    col = stack.collector()
    pub = stack.publisher()
    sessions = [f"s-k{i}-{uid()[:6]}" for i in range(8)]
    for i, s in enumerate(sessions):
        pub.publish(*control(f"kim{i}", "start", session=s))
    col.wait_for(lambda c: all(events(c, s) for s in sessions), 30, "every session's first event")
    target = stack.redis if fault == "redis" else stack.broker
    if fault == "broker":
        stack.broker.wait_saved()  # 0-2 s: the loops are under way
    else:
        time.sleep(harness.scaled(1.5))
    for n in range(2):
        if n:
            harness.wait_until(col.connected.is_set, 30, "the collector back")
            time.sleep(harness.scaled(1.5))
        target.kill9()
        time.sleep(0.5)
        target.start()
    col.wait_for(lambda c: all(any(e["type"] == "session_ended" for e in events(c, s))
                               for s in sessions), 60, "every session to end")
    payloads = {}
    for m in col.find("council/+/event"):
        payloads.setdefault(m.json()["id"], set()).add(m.payload)
    assert all(len(p) == 1 for p in payloads.values())  # a copy is the same event
    c = stack.redis.client()
    for s in sessions:
        acts = events(col, s, "action")
        assert sorted(a["loop"] for a in acts) == [1, 2, 3, 4, 5], (s, acts)
        assert len(events(col, s, "session_ended")) == 1
        assert len({m["id"] for m in col.events(f"council/{s}/request")}) == 2
        rec = json.loads(c.get(f"{stack.prefix}council:rec:{s}"))
        assert rec["actions"] == 5 and rec["status"] == "completed", rec
    svc.wait_ready(timeout=30)
    validate_outputs(col, OUTPUTS)
