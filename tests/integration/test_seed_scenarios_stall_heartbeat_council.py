"""The specified scenarios of stall-resumer, heartbeat and council that no
other test drove end to end, run as an outside checker runs them: only
what topics/README.md, topics/asyncapi.yaml and the services' READMEs tell
a user to publish, thresholds shrunk by the documented VIGIL_* variables,
and the outputs (topics, fields, texts) checked as the specification words
them. Each test says which rule it checks."""

import json
import re
import time

import pytest

import harness
from conftest import human, uid, validate_outputs
from council_support import events as council_events
from council_support import control, run_cli, start_service as start_council, wait_events
from fake_servers import FakeLLM, running

MIN = 60_000
HOUR = 60 * MIN


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f



# ================================================================ stall-resumer

STALL = "stall-resumer"
STALL_OUT = ("agent/+/assessment", "agent/+/resume", "sys/#")


def stall_status(agent, ts, fsm="EXECUTING", **extra):
    body = {"agent": agent, "fsm_state": fsm, "ts": ts}
    body.update(extra)
    return f"agent/{agent}/status", body


def stall_activity(agent, source, ts, detail="work"):
    return f"agent/{agent}/activity", {"id": uid("act"), "agent": agent, "source": source,
                                       "detail": detail, "ts": ts}


def stall_task(tid, priority, title):
    return "planner/task", {"id": tid, "title": title, "priority": priority, "ts": harness.now_ms()}


def test_status_age_walks_the_four_categories_then_one_resume_per_interval(stack):
    """Seed: the status checker's categories FRESH (<2 h), WARNING (2-6 h),
    CRITICAL (6-12 h), AUTO-RESUME (>12 h); a resume is allowed when the
    signals fail validation ("Validation failures: Allows resume with
    warning", logged at WARNING); the resume hands the agent the next
    planner task, auto-claimed; and an agent that shows activity is not
    escalated even though its status is stale. The three limits and the
    resume interval are shrunk (VIGIL_STALL_WARNING_MS, _CRITICAL_MS,
    _AUTORESUME_MS, _RESUME_INTERVAL_MS) so the status ages in real time."""
    svc = stack.service(STALL, env={"VIGIL_STALL_SCAN_MS": "250",
                                    "VIGIL_STALL_WARNING_MS": "1500",
                                    "VIGIL_STALL_CRITICAL_MS": "3000",
                                    "VIGIL_STALL_AUTORESUME_MS": "4500",
                                    "VIGIL_STALL_RESUME_INTERVAL_MS": "3000"})
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("aging-")
    pub.publish(*stall_task("t-first", 9, "Fix the uploader"))
    pub.publish(*stall_task("t-second", 5, "Write the release notes"))
    t0 = harness.now_ms()
    # a bare state: the status age starts now, but it is no sign of life
    pub.publish(*stall_status(agent, t0), retain=True)

    first = col.wait_event(f"agent/{agent}/resume", timeout=20)
    sent_at = harness.now_ms()
    cats = [a["category"] for a in col.events(f"agent/{agent}/assessment")]
    walked = [c for i, c in enumerate(cats) if i == 0 or c != cats[i - 1]]
    assert walked == ["fresh", "warning", "critical", "auto-resume"], cats
    for a in col.events(f"agent/{agent}/assessment"):
        age = a["ts"] - t0
        expect = ("fresh" if age < 1500 else "warning" if age < 3000
                  else "critical" if age <= 4500 else "auto-resume")
        assert a["category"] == expect, (age, a)
        assert a["is_active"] is False and a["validation_passed"] is False, a
    # the first resume: the top task claimed for it, the guard's reason,
    # and no idle time: a bare state is no sign of life (inactivity_minutes
    # is null), for the prompt as for the assessment
    assert first["claimed_task"] == {"id": "t-first", "title": "Fix the uploader", "priority": 9}
    assert first["reason"] == "validation failed (confidence 0.000): resume allowed", first
    assert first["prompt"].startswith(f"🔄 [stall-recovery] {agent}: no activity seen (state EXECUTING)."), first
    assert 'Claimed for you: t-first "Fix the uploader" (priority 9).' in first["prompt"], first
    # allowed although validation failed: a warning, as specified
    harness.wait_until(lambda: [d for d in svc.log_lines("resume due: validation failed")
                                if d.get("agent") == agent], 10, "the warning line")
    line = [d for d in svc.log_lines("resume due: validation failed") if d.get("agent") == agent][0]
    assert line["level"] == "warn", line  # libshared names the WARNING level "warn"

    # still stalled: the next resume comes one interval later, with the next task
    second = col.wait_event(f"agent/{agent}/resume", lambda r: r["id"] != first["id"], timeout=20)
    gap = harness.now_ms() - sent_at
    assert gap >= 3000 - 300, gap  # never within the interval
    assert second["claimed_task"]["id"] == "t-second", second
    assert len({r["id"] for r in col.events(f"agent/{agent}/resume")}) == 2

    # the agent works again: two tier-1 signals now -> active, fresh although
    # its status is far past the auto-resume age, and no resume follows
    mark = col.mark()
    now = harness.now_ms()
    pub.publish(*stall_activity(agent, "GIT_COMMIT", now, "fix: retry on 5xx"))
    pub.publish(*stall_activity(agent, "TEST_EXECUTION", now, "tests green"))
    a = col.wait_event(f"agent/{agent}/assessment", lambda a: len(a["signals"]) == 2, since=mark,
                       timeout=10)
    assert a["is_active"] and a["category"] == "fresh" and a["confidence"] == 0.9, a
    assert a["aged_from"] == "status", a
    settle = col.mark()
    # two resume intervals' worth of scans: none of them escalates or resumes
    harness.wait_until(lambda: len(col.find(f"agent/{agent}/assessment", since=settle)) >= 20, 20,
                       "20 more scans")
    assert {x["category"] for x in col.events(f"agent/{agent}/assessment", since=settle)} == {"fresh"}
    assert len({r["id"] for r in col.events(f"agent/{agent}/resume")}) == 2
    validate_outputs(col, STALL_OUT)


def test_signals_outside_24h_or_the_lookback_are_not_activity(stack):
    """Seed validation rules: 1. temporal consistency (signals within a
    24-hour window), 2. recency (the newest signal inside the lookback),
    and is_active needs validation as well as confidence >= 0.5. A signal
    25 h old is dropped (counted `expired`); with the lookback shrunk
    (VIGIL_STALL_LOOKBACK_MS) under the tier-1 window, two commits counted
    at 0.9 are still inactive once the newest is older than the lookback."""
    svc = stack.service(STALL, env={"VIGIL_STALL_SCAN_MS": "250",
                                    "VIGIL_STALL_LOOKBACK_MS": "5000"})
    col = stack.collector()
    pub = stack.publisher()
    old, late, fresh = uid("old-"), uid("late-"), uid("fresh-")
    now = harness.now_ms()
    pub.publish(*stall_activity(old, "GIT_COMMIT", now - 25 * HOUR, "commit from yesterday"))
    harness.wait_until(lambda: svc.metric("vigil_stall_signals_total", result="expired") == 1, 10,
                       "the 25 h old signal dropped as expired")
    assert stack.store(STALL).state(f"agent:{old}") == (0, None)
    assert not col.find(f"agent/{old}/assessment")

    pub.publish(*stall_activity(late, "GIT_COMMIT", now - 20_000, "commit"))
    pub.publish(*stall_activity(late, "TEST_EXECUTION", now - 20_000, "tests"))
    pub.publish(*stall_activity(fresh, "GIT_COMMIT", now, "commit"))
    pub.publish(*stall_activity(fresh, "TEST_EXECUTION", now, "tests"))
    a = col.wait_event(f"agent/{late}/assessment", lambda a: len(a["signals"]) == 2, timeout=10)
    assert a["confidence"] == 0.9, a  # counted inside the tier-1 window
    assert a["validation_passed"] is False and a["is_active"] is False, a
    assert any("outside the 5 s lookback" in r for r in a["reasons"]), a["reasons"]
    b = col.wait_event(f"agent/{fresh}/assessment", lambda a: len(a["signals"]) == 2, timeout=10)
    assert b["confidence"] == 0.9 and b["is_active"] is True, b
    # the same agent, later: its newest signal ages past the lookback at a scan
    c = col.wait_event(f"agent/{fresh}/assessment", lambda a: not a["is_active"], timeout=15)
    assert c["ts"] - now > 5000 and c["validation_passed"] is False, c
    validate_outputs(col, STALL_OUT)


def test_shrunk_tier_windows_move_counting_and_the_recency_penalty(stack):
    """Seed: tier windows 1 h / 30 min / 15 min (tier1/2/3_window_seconds),
    the confidence table (one tier 1 -> 0.7, two -> 0.9, one tier 2 -> 0.5,
    tier 3 only -> 0.3) and the recency penalty (> 30 min x 0.85), whose
    hour and half hour the README ties to the tier-1 and tier-2 windows.
    With the windows shrunk to 8 s / 4 s / 2 s (VIGIL_STALL_TIER{1,2,3}_MS),
    a commit 6 s old is counted at 0.7 x 0.85, and as its signals age at
    the scans each agent's confidence falls through the table to 0."""
    stack.service(STALL, env={"VIGIL_STALL_SCAN_MS": "250", "VIGIL_STALL_TIER1_MS": "8000",
                              "VIGIL_STALL_TIER2_MS": "4000", "VIGIL_STALL_TIER3_MS": "2000"})
    col = stack.collector()
    pub = stack.publisher()
    one, two, file, queue = uid("one-"), uid("two-"), uid("file-"), uid("queue-")
    now = harness.now_ms()
    pub.publish(*stall_activity(one, "GIT_COMMIT", now - 6000, "commit"))
    pub.publish(*stall_activity(two, "GIT_COMMIT", now - 6000, "commit"))
    pub.publish(*stall_activity(two, "TEST_EXECUTION", now - 6000, "tests"))
    pub.publish(*stall_activity(file, "FILE_MODIFICATION", now, "edited uploader.c"))
    pub.publish(*stall_activity(queue, "MESSAGE_QUEUE", now, "queue poll"))

    def first(agent):
        return col.wait_event(f"agent/{agent}/assessment", timeout=10)

    a = first(one)
    assert (a["confidence"], a["is_active"]) == (0.595, True), a
    assert any("recency penalty applied" in r for r in a["reasons"]), a["reasons"]
    b = col.wait_event(f"agent/{two}/assessment", lambda x: len(x["signals"]) == 2, timeout=10)
    assert (b["confidence"], b["is_active"]) == (0.765, True), b
    c = first(file)
    assert (c["confidence"], c["is_active"], c["validation_passed"]) == (0.5, True, True), c
    d = first(queue)
    assert (d["confidence"], d["is_active"], d["validation_passed"]) == (0.3, False, False), d
    # the scans, as the signals leave their windows
    d = col.wait_event(f"agent/{queue}/assessment", lambda x: x["signals"] == [], timeout=10)
    assert d["confidence"] == 0 and d["ts"] - now > 2000, d
    c = col.wait_event(f"agent/{file}/assessment", lambda x: x["signals"] == [], timeout=10)
    assert c["confidence"] == 0 and c["is_active"] is False and c["ts"] - now > 4000, c
    assert "no tier-1 or tier-2 signal inside its window" in c["reasons"], c["reasons"]
    a = col.wait_event(f"agent/{one}/assessment", lambda x: x["signals"] == [], timeout=10)
    assert a["confidence"] == 0 and a["is_active"] is False and a["ts"] - (now - 6000) > 8000, a
    # never a confidence the table and the penalty do not give
    seen = {x["confidence"] for ag in (one, two, file, queue)
            for x in col.events(f"agent/{ag}/assessment")}
    assert seen <= {0.9, 0.765, 0.7, 0.595, 0.5, 0.3, 0}, seen
    validate_outputs(col, STALL_OUT)


@pytest.mark.parametrize("noise", ["heartbeat, PING", ","])
def test_configured_noise_patterns_replace_the_specified_ones(stack, noise):
    """Seed: noise patterns filter signals (resume prompts, acknowledgements)
    out of activity. VIGIL_STALL_NOISE replaces the seven specified patterns
    (ASCII case-insensitive; "," alone: none); our own prompts (the
    [stall-recovery] marker) and bare acknowledgements stay out whatever
    it says."""
    svc = stack.service(STALL, env={"VIGIL_STALL_SCAN_MS": "250", "VIGIL_STALL_NOISE": noise})
    col = stack.collector()
    pub = stack.publisher()
    now = harness.now_ms()
    agents = {}
    for text in ("Heartbeat sent", "ping #no-reply", "inactivity detected, pushing a fix",
                 "🔄 [stall-recovery] you there?", "ok"):
        agents[text] = uid("noise-")
        pub.publish(*stall_activity(agents[text], "GIT_COMMIT", now, text))
    custom = noise != ","
    counted = {"Heartbeat sent": not custom, "ping #no-reply": not custom,
               "inactivity detected, pushing a fix": True,
               "🔄 [stall-recovery] you there?": False, "ok": False}
    want_noise = sum(1 for t, c in counted.items() if not c and t != "ok")
    harness.wait_until(
        lambda: (svc.metric("vigil_stall_signals_total", result="added") or 0)
        == sum(counted.values())
        and (svc.metric("vigil_stall_signals_total", result="noise") or 0) == want_noise
        and (svc.metric("vigil_stall_signals_total", result="acknowledgement") or 0) == 1,
        10, f"{sum(counted.values())} added, {want_noise} noise, 1 acknowledgement")
    for text, c in counted.items():
        if c:
            a = col.wait_event(f"agent/{agents[text]}/assessment", timeout=10)
            assert a["confidence"] == 0.7 and a["is_active"], (text, a)
        else:
            assert stack.store(STALL).state(f"agent:{agents[text]}") == (0, None), text
    validate_outputs(col, STALL_OUT)


@pytest.mark.parametrize("fsm", ["IDLE", "blocked", "Waiting", "REVIEW", "done", "SOMETHING-ELSE"])
def test_the_state_actions_point_at_a_claimed_task_only_when_one_was_claimed(stack, fsm):
    """Seed: the resume prompt gives FSM state-specific recovery actions and
    the next task from the cycle planner, auto-claimed. With the pool empty
    there is no claimed task: the state's actions must not send the agent
    to one ("pick up the claimed task below", "take the claimed task")
    next to "No planner task is open"; with a task claimed they do."""
    stack.service(STALL, env={"VIGIL_STALL_SCAN_MS": "250"})
    col = stack.collector()
    pub = stack.publisher()
    alone, served = uid("alone-"), uid("served-")
    pub.publish(*stall_status(alone, harness.now_ms() - 13 * HOUR, fsm=fsm), retain=True)
    r = col.wait_event(f"agent/{alone}/resume", timeout=15)
    assert "claimed_task" not in r, r
    assert "No planner task is open: continue your own tasks." in r["prompt"], r["prompt"]
    assert "claimed" not in r["prompt"].split("No planner task is open")[0], r["prompt"]
    assert f"(state {fsm}). Next: " in r["prompt"], r["prompt"]
    # the same state with a task in the pool: the actions name it
    pub.publish(*stall_task("t-only", 4, "Triage the flaky test"))
    pub.publish(*stall_status(served, harness.now_ms() - 13 * HOUR, fsm=fsm), retain=True)
    r = col.wait_event(f"agent/{served}/resume", timeout=15)
    assert r["claimed_task"]["id"] == "t-only", r
    if fsm != "SOMETHING-ELSE":
        assert "claimed task" in r["prompt"].split("Claimed for you:")[0], r["prompt"]
    assert 'Claimed for you: t-only "Triage the flaky test" (priority 4).' in r["prompt"], r["prompt"]
    validate_outputs(col, STALL_OUT)


# ==================================================================== heartbeat

HEARTBEAT = "heartbeat"
HB_OUT = ("heartbeat/+/run", "room/+/message", "sys/#")

# The specified HEARTBEAT.md, word for word but for its title (the README:
# "# Heartbeat Protocol" for "# Orion Heartbeat Protocol").
SPECIFIED_CHECKLIST = """# Heartbeat Protocol

When running a heartbeat check, review the following:

## Check 1: Pending Items
- Are there any tasks or requests from the user that I said I would do?
- Are there any follow-ups I promised but haven't done?
- Did the user ask me to remind them about something?

## Check 2: Context Relevance
- Has anything new happened (based on recent memory) that the user should know about?
- Are there patterns I've noticed that might be worth sharing?
- Is there a better time to share something I've been waiting to share?

## Check 3: Timing Assessment
- What time is it locally for the user?
- When did we last interact? How long ago?
- Is this a reasonable time to interrupt them?

## Check 4: Value Assessment
- If I send a message, will it genuinely help them right now?
- Or am I sending it because it's interesting to ME, not them?
- Can this wait until they reach out?

## Response Protocol
- If nothing needs attention: reply HEARTBEAT_OK (this reply is stripped and not shown)
- If something needs attention: compose and send the message
- Never send more than one proactive message per heartbeat unless truly urgent
"""


def hb_service(stack, llm, **env):
    e = {"VIGIL_LLM_URL": llm.url, "VIGIL_LLM_TIMEOUT_MS": 4000, "VIGIL_LLM_RETRIES": 0}
    e.update(env)
    return stack.service(HEARTBEAT, env=e)


def hb_config(persona, room, user="joel", **extra):
    body = {"persona": persona, "user": user, "room": room, "enabled": True, "ts": harness.now_ms()}
    body.update(extra)
    return f"heartbeat/{persona}/config", body


def test_a_heartbeat_without_a_checklist_reasons_with_heartbeat_md_on_the_fast_model(stack, llm):
    """Seed: HEARTBEAT.md is the checklist injected into the heartbeat
    run's prompt; the run uses the "fast" engine (to save cost); the prompt
    carries the current time, the minutes since the last interaction and
    the recent conversation ("role: content" cut to 100 characters), and
    ends asking for HEARTBEAT_OK when nothing needs attention, which is
    stripped and not shown. A config without `checklist` gets that
    checklist; the fast tier is VIGIL_LLM_MODEL_FAST."""
    llm.control(rules=[{"reply": "HEARTBEAT_OK"}])
    hb_service(stack, llm, VIGIL_LLM_MODEL="smart-model", VIGIL_LLM_MODEL_FAST="fast-model",
               VIGIL_HEARTBEAT_MAX_TOKENS=123, VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS=1000,
               VIGIL_HEARTBEAT_LIVE_MS=0)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    long_text = "x" * 100 + "TAIL-NOT-SHOWN"
    # the context is what the room says once the heartbeat serves it: a
    # message from before the config is not read back (the README says so)
    pub.publish(*human(room, "joel", "BEFORE-THE-CONFIG"))
    pub.publish(*hb_config("helper", room), retain=True)
    pub.publish(*human(room, "joel", long_text))
    pub.publish(*human(room, "ann", "lunch at noon?"))
    ev = col.wait_event("heartbeat/helper/run", lambda e: e["outcome"] != "skipped", timeout=15)
    assert ev["outcome"] == "ok", ev
    req = llm.stats()["last_request"]["body"]
    assert req["model"] == "fast-model", req["model"]
    assert req["max_tokens"] == 123, req
    prompt = "\n".join(str(m.get("content", "")) for m in req["messages"])
    assert SPECIFIED_CHECKLIST in prompt, prompt
    assert re.search(r"^Current time: .*\d{4}-\d\d-\d\d \d\d:\d\d", prompt, re.M), prompt
    assert re.search(r"^Time since last user interaction: \d+ minutes$", prompt, re.M), prompt
    summary = prompt.split("Recent conversation summary:\n", 1)[1]
    assert summary.startswith(f"joel: {'x' * 100}\nann: lunch at noon?\n"), summary
    assert "TAIL-NOT-SHOWN" not in prompt and "BEFORE-THE-CONFIG" not in prompt
    assert "If nothing needs attention, reply only with: HEARTBEAT_OK" in prompt
    # HEARTBEAT_OK is stripped: nothing from helper in the room
    time.sleep(0.3)
    assert not [m for m in col.events(f"room/{room}/message") if m.get("sender") == "helper"]
    validate_outputs(col, HB_OUT)


def test_the_interval_follows_the_users_real_activity_through_its_three_bands(stack, llm):
    """Seed: adaptive interval from actual activity - 2 min while the last
    activity is under 5 min old, 30 min after 1 h without activity, 10 min
    in between - and recorded activity (a user's message) brings the short
    interval back at once. Shrunk by VIGIL_HEARTBEAT_ACTIVE/NORMAL/
    INACTIVE_INTERVAL_MS, _RECENT_MS and _INACTIVE_AFTER_MS; the skip stretch
    is switched off (VIGIL_HEARTBEAT_SKIP_STRETCH=1) so each band shows its
    own interval."""
    llm.control(rules=[{"reply": "HEARTBEAT_OK"}])
    active, normal, inactive, recent, after = 700, 1200, 2000, 2000, 4500
    hb_service(stack, llm, VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS=active,
               VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS=normal,
               VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS=inactive,
               VIGIL_HEARTBEAT_RECENT_MS=recent, VIGIL_HEARTBEAT_INACTIVE_AFTER_MS=after,
               VIGIL_HEARTBEAT_SKIP_STRETCH=1, VIGIL_HEARTBEAT_LIVE_MS=0)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("r")
    topic, cfg = hb_config("pulse", room, checklist="- anything pending?")
    pub.publish(topic, cfg, retain=True)  # configuring counts as activity

    def band(since):
        return active if since < recent else inactive if since > after else normal

    def check(evs, activity_ts):
        """Each run's next interval is its band's, judged from the time
        since the activity; runs within 250 ms of a band's edge are not
        judged (the run's own clock reading is a little later than its ts)."""
        for e in evs:
            since = e["ts"] - activity_ts
            if min(abs(since - recent), abs(since - after)) < 250:
                continue
            assert e["next_in_ms"] == band(since), (since, e)

    col.wait_for(lambda c: [e for e in c.events("heartbeat/pulse/run")
                            if e["next_in_ms"] == inactive], 25, "a run on the inactive interval")
    walk = col.events("heartbeat/pulse/run")
    assert all(e["outcome"] == "ok" for e in walk), walk
    seen = [e["next_in_ms"] for e in walk]
    assert [v for i, v in enumerate(seen) if i == 0 or v != seen[i - 1]] == [active, normal, inactive], seen
    check(walk, cfg["ts"])
    # runs come when the previous one said (timer-based, one at a time)
    for prev, nxt in zip(walk, walk[1:]):
        assert nxt["ts"] >= prev["next_run_ts"] - 50, (prev, nxt)
        assert nxt["run"] == prev["run"] + 1

    # the user speaks: the short interval at once
    mark = col.mark()
    topic, msg = human(room, "joel", "back at my desk")
    pub.publish(topic, msg)
    back = col.wait_event("heartbeat/pulse/run", since=mark, timeout=10)
    assert back["next_in_ms"] == active, back
    # the run after the message came within the active interval, not the
    # inactive one it was scheduled on
    assert back["ts"] - msg["ts"] <= active + 600, (back, msg)
    validate_outputs(col, HB_OUT)


# ====================================================================== council

COUNCIL_OUT = ("council/+/event", "council/+/state", "council/+/request", "sys/#")

# The four personas as specified: name, title, role, focus, question.
PERSONAS = [
    ("Polaris", "the Navigator", "Strategic direction and long-term thinking",
     "Goals, priorities, overall trajectory", "What serves the user's long-term interests?"),
    ("Aurora", "the Empath", "Emotional intelligence and user wellbeing",
     "Feelings, relationships, support needs", "How is the user feeling and what do they need?"),
    ("Vega", "the Analyst", "Logic, reasoning, and evidence-based analysis",
     "Facts, patterns, data-driven insights", "What does the evidence tell us?"),
    ("Sol", "the Executor", "Practical action and implementation",
     "Concrete steps, feasibility, execution", "What specific action should we take now?"),
]
PREFIXES = ("search:", "note:", "ask user:", "schedule:", "research:", "sleep:", "reflect:")


def sol_loop(reply, loop, regex=""):
    """A rule for Sol's prompt of loop `loop` (its SENSE says "loop N of")."""
    return {"match": "You are Sol, the Executor", "regex": rf"(?s)loop {loop} of.*{regex}",
            "reply": reply}


def loops(*replies):
    """Sol answering replies[i] in loop i+1, the advisors answering plainly."""
    out = [sol_loop(r, i + 1) for i, r in enumerate(replies)]
    for name, title, *_ in PERSONAS[:3]:
        out.append({"match": f"You are {name}, {title}", "reply": f"{name}: fine."})
    return out


def test_each_persona_is_asked_with_its_role_focus_and_question(stack, llm):
    """Seed: the council is four personas - Polaris the Navigator, Aurora the
    Empath, Vega the Analyst, Sol the Executor - each with its role, focus
    and question, deliberating on every decision; Sol proposes the action,
    one of the seven prefixes. The fake model answers each persona "as
    specified" only when its prompt carries that persona's role, focus and
    question word for word (and, for Sol, all seven prefixes); the
    deliberation event shows what each answered."""
    rules = []
    for name, title, role, focus, question in PERSONAS:
        want = (rf"^Role: {re.escape(role)}\.$.*^Focus: {re.escape(focus)}\.$.*"
                rf"{re.escape(question)}")
        if name == "Sol":
            want = "".join(rf"(?=.*^{re.escape(p)} )" for p in PREFIXES) + r".*" + want
            rules.append({"match": f"You are {name}, {title}", "regex": "(?ms)" + want,
                          "reply": "note: asked as specified"})
            rules.append({"match": f"You are {name}, {title}", "reply": "reflect: prompt not as specified"})
        else:
            rules.append({"match": f"You are {name}, {title}", "regex": "(?ms)" + want,
                          "reply": f"{name}: asked as specified"})
            rules.append({"match": f"You are {name}, {title}", "reply": f"{name}: prompt not as specified"})
    llm.control(rules=rules)
    start_council(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("joel", "start", session="s-personas"))
    wait_events(col, "s-personas", lambda evs: [e for e in evs if e["type"] == "action"],
                20, "the first loop's action")
    d = council_events(col, "s-personas", "deliberation")[0]
    assert d["polaris"] == "Polaris: asked as specified", d
    assert d["aurora"] == "Aurora: asked as specified", d
    assert d["vega"] == "Vega: asked as specified", d
    assert d["sol"] == "note: asked as specified", d
    assert d["decision"] == d["sol"]
    # SENSE -> PLAN -> ACT, then the routed action
    loop1 = council_events(col, "s-personas", loop=1)
    assert [(e["type"], e.get("phase")) for e in loop1] == [
        ("phase", "sense"), ("phase", "plan"), ("deliberation", "plan"), ("phase", "act"),
        ("action", None)], loop1
    validate_outputs(col, COUNCIL_OUT)


def test_questions_surface_by_priority_in_the_next_sense(stack, llm):
    """Seed: Sol's `ask user: <question>` queues a question with a priority
    1-10 (higher = more urgent, default 5), broadcast to Theater Mode;
    high-priority questions surface first. Three questions, the urgent one
    asked last: the next loop's prompts list it first, and so does
    `vigil council questions`."""
    ordered = (r"Open questions to the user \(most urgent first\):\n"
               r"- \[priority 9\] Is the report still due Friday\?\n"
               r"- \[priority 5\] Shall I tidy the notes\?\n"
               r"- \[priority 2\] Any music preference\?\n")
    # (three questions in a row would trip the circuit breaker: a note between)
    rules = [sol_loop("note: questions in order", 5, ordered),
             sol_loop("note: questions out of order", 5)]
    rules += loops("ask user: [p2] Any music preference?", "ask user: Shall I tidy the notes?",
                   "note: the report matters", "ask user: [p9] Is the report still due Friday?")[:4]
    rules += [{"match": "You are Sol, the Executor", "reply": "sleep: 10m"}]
    rules += loops()
    llm.control(rules=rules)
    start_council(stack, llm, VIGIL_COUNCIL_LOOP_MS=200)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("ann", "start", session="s-prio"))
    acts = wait_events(col, "s-prio", lambda evs: [e for e in evs if e["type"] == "action"
                                                    and e["loop"] == 5], 30, "loop 5's action")
    assert acts[0]["action"] == "note" and acts[0]["content"] == "questions in order", acts[0]
    qs = council_events(col, "s-prio", "question")
    assert [(q["priority"], q["question"]) for q in qs] == [
        (2, "Any music preference?"), (5, "Shall I tidy the notes?"),
        (9, "Is the report still due Friday?")], qs
    r = run_cli(stack, "questions", "--json")
    assert r.returncode == 0, r.stderr
    listed = [json.loads(line) for line in r.stdout.splitlines()]
    assert [q["priority"] for q in listed] == [9, 5, 2], listed
    validate_outputs(col, COUNCIL_OUT)


def test_the_router_matches_prefixes_only_and_three_searches_in_a_row_pause(stack, llm):
    """Seed: action routing uses startsWith(), so a proposal that only
    contains a prefix is not routed by it; the circuit breaker pauses the
    session after three identical action types in a row (any type, not
    only reflect), telling the user via Theater Mode. Loops: a note that
    mentions `search:`, a sentence holding `search:` (no known prefix:
    reflect with a warning), then three searches."""
    llm.control(rules=loops("note: we should search: later", "I think we should search: the docs",
                            "search: alpha", "search: beta", "search: gamma", "note: never reached"))
    start_council(stack, llm, VIGIL_COUNCIL_LOOP_MS=150)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("cy", "start", session="s-route"))
    paused = wait_events(col, "s-route", lambda evs: [e for e in evs if e["type"] == "session_paused"],
                         30, "session_paused")[0]
    assert "spinning: 3 'search:' actions in a row (circuit breaker)" in paused["reason"], paused
    acts = council_events(col, "s-route", "action")
    assert [(a["action"], a["content"]) for a in acts][:2] == [
        ("note", "we should search: later"), ("reflect", "I think we should search: the docs")], acts
    assert "warning" not in acts[0] or not acts[0]["warning"], acts[0]
    assert acts[1]["warning"], acts[1]
    assert [a["action"] for a in acts] == ["note", "reflect", "search", "search", "search"], acts
    reqs = col.events("council/s-route/request")
    assert [(r["kind"], r["query"]) for r in reqs] == [
        ("search", "alpha"), ("search", "beta"), ("search", "gamma")], reqs
    time.sleep(0.6)  # several loop intervals: paused, nothing more
    assert len(council_events(col, "s-route", "action")) == 5
    s = harness.retained(stack.broker.port, "council/s-route/state")["council/s-route/state"]
    assert s["status"] == "paused" and s["loop_count"] == 5, s
    validate_outputs(col, COUNCIL_OUT)
