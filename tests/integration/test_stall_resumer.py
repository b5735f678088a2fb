"""stall-resumer (issue 12: hardened activity detection, the
fail-open resume guard, resume prompts with auto-claimed tasks, status
categories) driven only through the broker, with a real Redis and the real
service processes.

Signals carry their own `ts`, so ages of minutes or hours are set up by
publishing old timestamps against the default tier windows; only the scan
period is shrunk (VIGIL_STALL_SCAN_MS)."""

import json
import re
import time

import pytest

import harness
from conftest import uid, validate_outputs

SERVICE = "stall-resumer"
MIN = 60_000
HOUR = 60 * MIN
OUTPUTS = ("agent/+/assessment", "agent/+/resume", "sys/#")
FAST = {"VIGIL_STALL_SCAN_MS": "300"}


def activity(agent, source, age_ms, detail="work", in_tool=None, sid=None):
    body = {"id": sid or uid("act"), "agent": agent, "source": source, "detail": detail,
            "ts": harness.now_ms() - age_ms}
    if in_tool is not None:
        body["in_tool"] = in_tool
    return f"agent/{agent}/activity", body


def status(agent, age_ms, fsm="EXECUTING", **extra):
    body = {"agent": agent, "fsm_state": fsm, "ts": harness.now_ms() - age_ms}
    body.update(extra)
    return f"agent/{agent}/status", body


def task(tid, priority, title=None, agent=None):
    body = {"id": tid, "title": title or f"do {tid}", "priority": priority, "ts": harness.now_ms()}
    if agent:
        body["agent"] = agent
    return "planner/task", body


def assessment(col, agent, pred=lambda a: True, timeout=10):
    return col.wait_event(f"agent/{agent}/assessment", pred, timeout=timeout,
                          what=f"an assessment of {agent}")


def resumes(col, agent="+", since=0):
    """Distinct resume events (by id) per agent: {agent: {id: payload}}."""
    out = {}
    for ev in col.events(f"agent/{agent}/resume", since=since):
        out.setdefault(ev["agent"], {})[ev["id"]] = ev
    return out


def pool(store):
    _, st = store.state("planner:tasks")
    return st or {"open": [], "claimed": []}


# ------------------------------------------------------------ signal mixes


@pytest.fixture(scope="module")
def mixes(module_stack):
    s = module_stack
    svc = s.service(SERVICE, env=FAST)
    col = s.collector()
    pub = s.publisher()
    return s, svc, col, pub


# (agent, [signals (source, age_ms, in_tool)], status age or None,
#  expected confidence, is_active, validation_passed, category)
MIXES = [
    ("two-tier1", [("GIT_COMMIT", MIN, None), ("TEST_EXECUTION", 2 * MIN, None)], 13 * HOUR,
     0.9, True, True, "fresh"),
    ("one-tier1-45min", [("TELEMETRY_EVENT", 45 * MIN, None)], None, 0.595, True, True, "fresh"),
    ("two-tier2", [("FILE_MODIFICATION", 5 * MIN, None), ("DEVLOG_CREATED", 6 * MIN, None)],
     3 * HOUR, 0.7, True, True, "fresh"),
    ("one-tier2", [("INBOX_PROCESSING", 5 * MIN, None)], None, 0.5, True, True, "fresh"),
    ("tier3-only", [("MESSAGE_QUEUE", MIN, None), ("WORKSPACE_ACCESS", MIN, None)], 3 * HOUR,
     0.3, False, False, "warning"),
    ("stale-tier2", [("STATUS_UPDATE", 40 * MIN, None)], 7 * HOUR, 0.0, False, False, "critical"),
    ("in-tool", [("TELEMETRY_EVENT", 100 * MIN, True), ("TEST_EXECUTION", 90 * MIN, True)],
     13 * HOUR, 0.63, True, True, "fresh"),
    ("tool-ended", [("TELEMETRY_EVENT", 100 * MIN, True), ("MESSAGE_QUEUE", MIN, False)],
     13 * HOUR + 5 * MIN, 0.3, False, False, "auto-resume"),
]


@pytest.mark.parametrize("agent,signals,status_age,conf,active,valid,category", MIXES,
                         ids=[m[0] for m in MIXES])
def test_signal_mix_gives_expected_assessment(mixes, agent, signals, status_age, conf, active, valid,
                                              category):
    s, svc, col, pub = mixes
    agent = uid(agent + "-")
    if status_age is not None:
        pub.publish(*status(agent, status_age))
    for source, age, in_tool in signals:
        pub.publish(*activity(agent, source, age, in_tool=in_tool))
    newest = min(age for _, age, _ in signals)
    a = assessment(col, agent, lambda a: a["last_activity"] is not None
                   and a["inactivity_minutes"] <= newest / MIN + 1 and a["category"] == category
                   and a["confidence"] == conf, timeout=10)
    assert a["is_active"] is active, a
    assert a["validation_passed"] is valid, a
    assert a["reasons"], a
    assert isinstance(a["last_activity"], int)
    # the retained copy says the same
    kept = harness.retained(s.broker.port, f"agent/{agent}/assessment")
    assert kept[f"agent/{agent}/assessment"]["category"] == category


def test_a_status_with_content_is_a_tier2_signal(mixes):
    """A status report with a mission or tasks is a STATUS_UPDATE sign of
    life (tier 2) at its own time: alone it makes the agent active at 0.5.
    A bare state is a status, not activity."""
    s, svc, col, pub = mixes
    reporting, bare = uid("reporting-"), uid("bare-")
    pub.publish(*status(reporting, 5 * MIN, mission="Harden the uploader", tasks=["retry on 5xx"]))
    pub.publish(*status(bare, 5 * MIN))
    a = assessment(col, reporting)
    assert a["is_active"] is True and a["confidence"] == 0.5, a
    assert a["validation_passed"] is True, a
    assert [(x["source"], x["tier"]) for x in a["signals"]] == [("STATUS_UPDATE", 2)], a
    assert a["last_activity"] == a["status_ts"], a
    b = assessment(col, bare)
    assert b["is_active"] is False and b["confidence"] == 0 and b["signals"] == [], b
    assert b["last_activity"] is None, b


def test_noise_is_not_activity(mixes):
    s, svc, col, pub = mixes
    agent = uid("noisy-")
    before = svc.metric("vigil_stall_signals_total", result="noise") or 0
    for text in ("Inactivity detected for 3h", "[C2A] broadcast", "ping #no-reply",
                 "🔄 [stall-recovery] you there?"):
        pub.publish(*activity(agent, "GIT_COMMIT", 0, detail=text))
    harness.wait_until(lambda: svc.metric("vigil_stall_signals_total", result="noise") == before + 4,
                       10, "four noise signals counted")
    assert not col.find(f"agent/{agent}/assessment"), "noise created an assessment"
    assert s.store(SERVICE).state(f"agent:{agent}") == (0, None)
    # the noise filter drops acknowledgements too: an agent that
    # answers "ok" has not worked
    acks = svc.metric("vigil_stall_signals_total", result="acknowledgement") or 0
    for text in ("ok", "Got it!", "👍", "OK 👍", "Got it, will do", "acknowledged, thanks"):
        pub.publish(*activity(agent, "TELEMETRY_EVENT", 0, detail=text))
    harness.wait_until(
        lambda: svc.metric("vigil_stall_signals_total", result="acknowledgement") == acks + 6,
        10, "six acknowledgements counted")
    assert not col.find(f"agent/{agent}/assessment"), "an acknowledgement created an assessment"
    assert s.store(SERVICE).state(f"agent:{agent}") == (0, None)
    pub.publish(*activity(agent, "GIT_COMMIT", 0, detail="real commit"))
    a = assessment(col, agent)
    assert a["confidence"] == 0.7 and a["is_active"] is True


def test_an_empty_noise_setting_is_the_default(stack):
    """VIGIL_STALL_NOISE set but empty means the seven default patterns, as
    unset does (a "," alone means none)."""
    svc = stack.service(SERVICE, env=dict(FAST, VIGIL_STALL_NOISE=""))
    pub = stack.publisher()
    agent = uid("noisy-")
    for text in ("Inactivity detected for 3h", "[C2A] broadcast", "ping #no-reply"):
        pub.publish(*activity(agent, "GIT_COMMIT", 0, detail=text))
    harness.wait_until(lambda: svc.metric("vigil_stall_signals_total", result="noise") == 3,
                       10, "three noise signals counted")
    assert stack.store(SERVICE).state(f"agent:{agent}") == (0, None)


def test_reasons_say_windows_shrunk_under_a_minute_in_seconds(stack):
    """With the lookback and the in-tool window shrunk under a minute
    (VIGIL_STALL_LOOKBACK_MS, _IN_TOOL_MS), the reasons read in seconds,
    not "0 min"."""
    svc = stack.service(SERVICE, env=dict(FAST, VIGIL_STALL_LOOKBACK_MS="2000",
                                          VIGIL_STALL_IN_TOOL_MS="5000"))
    col = stack.collector()
    pub = stack.publisher()
    late, tool = uid("late-"), uid("tool-")
    pub.publish(*activity(late, "GIT_COMMIT", 30_000))
    pub.publish(*activity(tool, "GIT_COMMIT", 0, in_tool=True))
    a = assessment(col, late, lambda a: not a["validation_passed"])
    assert any(r.startswith("newest signal 3") and r.endswith(" s old, outside the 2 s lookback")
               for r in a["reasons"]), a["reasons"]
    b = assessment(col, tool)
    assert "in a tool call: windows stretched to 5 s" in b["reasons"], b["reasons"]
    assert not any("0 min" in r for r in a["reasons"] + b["reasons"])
    assert svc.alive()


def test_a_job_that_waited_is_not_sent_to_an_agent_active_again(mixes):
    """Activity is checked again right before a resume prompt is written. A
    job can wait between its scan and a worker (a restart, its lease, a
    retry): here one decided ten minutes ago for an agent that has worked
    since. It is dropped without a claim or a resume."""
    s, svc, col, pub = mixes
    agent = uid("busy-")
    pub.publish(*status(agent, 13 * HOUR))
    pub.publish(*activity(agent, "GIT_COMMIT", 0, detail="commit 1"))
    pub.publish(*activity(agent, "TEST_EXECUTION", 0, detail="tests green"))
    assessment(col, agent, lambda a: a["is_active"])
    before = svc.metric("vigil_stall_jobs_total", outcome="skipped") or 0
    job = {"id": f"resume.{agent}.1", "agent": agent, "seq": 1,
           "decided": harness.now_ms() - 10 * MIN, "reason": "inactive: confidence 0.000 < 0.5"}
    c = s.redis.client()
    try:
        c.xadd(f"{s.prefix}{SERVICE}:resumes", {"m": json.dumps(job)})
    finally:
        c.close()
    harness.wait_until(lambda: svc.metric("vigil_stall_jobs_total", outcome="skipped") == before + 1,
                       10, "the job found no longer due")
    time.sleep(0.5)
    assert agent not in resumes(col)
    assert agent not in json.dumps(pool(s.store(SERVICE))["claimed"])
    # logged at info as "⏸️ Skipping resume prompt", with why
    skips = [json.loads(line) for line in svc.stderr_text().splitlines()
             if line.startswith("{") and agent in line and "Skipping" in line]
    assert skips and skips[0]["msg"] == "⏸️ Skipping resume prompt", skips
    assert skips[0]["level"] == "info" and "active" in skips[0]["why"], skips


def test_scan_republishes_and_outputs_validate(mixes):
    s, svc, col, pub = mixes
    agent = uid("scanned-")
    pub.publish(*status(agent, 3 * HOUR))
    first = assessment(col, agent)
    harness.wait_until(lambda: len(col.find(f"agent/{agent}/assessment")) >= 3, 10,
                       "the scan to republish the assessment")
    later = col.events(f"agent/{agent}/assessment")[-1]
    assert later["ts"] > first["ts"] and later["category"] == "warning"
    assert validate_outputs(col, OUTPUTS) > 0


# ----------------------------------------------------- resumes and claims


def test_stalled_agent_gets_one_resume_with_a_claimed_task_active_gets_none(stack):
    svc = stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    stalled, active = uid("stalled-"), uid("active-")
    pub.publish(*task("t-low", 1, "Low priority chore"))
    pub.publish(*task("t-high", 9, "Fix the uploader"))
    pub.publish(*task("t-other", 50, "Someone else's", agent="nobody-else"))
    harness.wait_until(lambda: len(pool(store)["open"]) == 3, 10, "three open tasks")
    pub.publish(*status(stalled, 13 * HOUR, mission="Harden the uploader", tasks=["retry on 5xx"]))
    pub.publish(*activity(stalled, "GIT_COMMIT", 13 * HOUR, detail="wired the retry loop"))
    pub.publish(*status(active, 13 * HOUR))
    pub.publish(*activity(active, "GIT_COMMIT", 0, detail="commit 1"))
    pub.publish(*activity(active, "TEST_EXECUTION", 0, detail="tests green"))

    ev = col.wait_event(f"agent/{stalled}/resume", timeout=15)
    assert ev["claimed_task"] == {"id": "t-high", "title": "Fix the uploader", "priority": 9}
    assert ev["fsm_state"] == "EXECUTING"
    assert "[stall-recovery]" in ev["prompt"] and "wired the retry loop" in ev["prompt"]
    assert "Harden the uploader" in ev["prompt"] and "Low priority chore" in ev["prompt"]
    # its own assignments next to the project priorities, not instead of them
    assert "Your tasks: retry on 5xx." in ev["prompt"], ev["prompt"]
    # several more scans: still exactly one, and none for the active agent
    n = len(col.find(f"agent/{stalled}/assessment"))
    harness.wait_until(lambda: len(col.find(f"agent/{stalled}/assessment")) >= n + 4, 15, "4 more scans")
    got = resumes(col)
    assert list(got.get(stalled, {})) == [ev["id"]]
    assert active not in got
    a = col.events(f"agent/{active}/assessment")[-1]
    assert a["is_active"] and a["category"] == "fresh"
    p = pool(store)
    assert [c[0] for c in p["claimed"]] == ["t-high"]
    assert sorted(t[0] for t in p["open"]) == ["t-low", "t-other"]
    # a claimed task offered again is not taken back into the pool
    pub.publish(*task("t-high", 9, "Fix the uploader"))
    harness.wait_until(lambda: svc.metric("vigil_stall_tasks_total", result="already_claimed") == 1,
                       10, "the re-offered task refused")
    # an agent echoing its resume back is not activity
    pub.publish(*activity(stalled, "INBOX_PROCESSING", 0, detail=ev["prompt"]))
    pub.publish(*activity(stalled, "INBOX_PROCESSING", 0, detail="ack", sid=ev["id"]))
    harness.wait_until(lambda: svc.metric("vigil_stall_signals_total", result="noise") >= 2, 10,
                       "the echoes counted as noise")
    assert validate_outputs(col, OUTPUTS) > 0


def test_texts_kept_shorter_are_cut_on_a_character_boundary(stack):
    """A status' state, mission and tasks and a task's title are kept to
    200 bytes; one cut there is cut between characters, so the retained
    assessment and the resume quoting it stay valid UTF-8 (a cut inside
    "é" published a lone 0xC3 byte)."""
    stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("long-")
    long = lambda c: c * 199 + "é and more"  # noqa: E731 - "é" across the 200-byte limit
    pub.publish(*task("t-long", 9, long("w")))
    pub.publish(*status(agent, 13 * HOUR, fsm=long("z"), mission=long("m"), tasks=[long("y")]))
    ev = col.wait_event(f"agent/{agent}/resume", timeout=15)
    assert ev["claimed_task"]["title"] == "w" * 199, ev["claimed_task"]
    assert ev["fsm_state"] == "z" * 199
    assert f"Mission: {'m' * 199}." in ev["prompt"], ev["prompt"]
    assert f"Your tasks: {'y' * 199}." in ev["prompt"], ev["prompt"]
    assessment(col, agent, lambda a: a.get("fsm_state") == "z" * 199)
    for m in col.snapshot():
        if m.topic.startswith("agent/"):
            m.payload.decode("utf-8")  # raises on a cut sequence
    validate_outputs(col, OUTPUTS)


def test_a_mission_ending_its_sentence_gets_no_second_full_stop(stack):
    """The prompt closes the agent's mission and its task list with a full
    stop unless the agent's text ends its sentence already."""
    stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("punct-")
    pub.publish(*status(agent, 13 * HOUR, mission="Harden the uploader.",
                        tasks=["retry on 5xx", "write the docs!"]))
    ev = col.wait_event(f"agent/{agent}/resume", timeout=15)
    assert " Mission: Harden the uploader. No planner task is open" in ev["prompt"], ev["prompt"]
    assert " Your tasks: retry on 5xx; write the docs! Reply with progress" in ev["prompt"], ev["prompt"]
    assert ".." not in ev["prompt"], ev["prompt"]


def test_blank_texts_leave_no_empty_item_in_the_prompt(stack):
    """A task with a blank title is refused (error event, metric, the pool
    unchanged); a status' blank mission and blank task entries, and a
    signal with a blank detail (activity, not progress), leave nothing
    empty in the resume prompt: no empty quote, no dangling separator."""
    svc = stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    agent = uid("blank-")
    mark = col.mark()
    pub.publish(*task("t-blank", 9, title="   "))
    err = col.wait_event(f"sys/{SERVICE}/error", lambda e: e.get("topic") == "planner/task",
                         timeout=10, since=mark)
    assert err["reason"] == "bad_value" and "'title': blank" in err["detail"], err
    assert svc.metric("vigil_rejected_total", reason="bad_value") == 1
    assert not pool(store)["open"]
    pub.publish(*status(agent, 13 * HOUR, mission="   ", tasks=["  ", "retry on 5xx", ""]))
    pub.publish(*activity(agent, "MESSAGE_QUEUE", 13 * HOUR, detail="\u00a0 \u3000"))
    ev = col.wait_event(f"agent/{agent}/resume", timeout=15)
    prompt = ev["prompt"]
    assert "claimed_task" not in ev
    assert " No planner task is open: continue your own tasks. Your tasks: retry on 5xx. Reply" \
        in prompt, prompt
    for bad in ('""', "Mission:", "last progress", "; ;", ":.", "; retry"):
        assert bad not in prompt, (bad, prompt)
    validate_outputs(col, OUTPUTS)


def test_a_cleared_status_retires_the_agent(stack):
    """Clearing an agent's retained status (an empty retained message, how
    MQTT deletes one) retires it: its retained assessment is cleared, its
    scans stop and no resume follows, not even one already queued. A signal
    later brings it back (within the resume interval of its last resume,
    so without a second one yet). A clear for an agent never seen changes nothing,
    and an empty activity payload is still a bad input."""
    svc = stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    agent, witness = uid("gone-"), uid("witness-")
    # the witness's scans (every 300 ms, each republishing its assessment)
    # are the clock below: no fixed sleep
    pub.publish(*status(witness, 3 * HOUR), retain=True)
    pub.publish(*status(agent, 13 * HOUR), retain=True)
    pub.publish(*activity(agent, "GIT_COMMIT", 13 * HOUR, detail="wired the retry loop"))
    first = col.wait_event(f"agent/{agent}/resume", timeout=15)
    # a resume job queued for it, waiting for a worker: skipped once retired
    job = {"id": f"resume.{agent}.9", "agent": agent, "seq": 9,
           "decided": harness.now_ms(), "reason": "inactive: confidence 0.000 < 0.5"}
    skipped = svc.metric("vigil_stall_jobs_total", outcome="skipped") or 0
    mark = col.mark()
    pub.publish(f"agent/{agent}/status", b"", retain=True)
    harness.wait_until(lambda: svc.metric("vigil_stall_agents_retired_total") == 1, 10,
                       "the agent retired")
    col.wait_for(lambda c: [m for m in c.find(f"agent/{agent}/assessment", since=mark)
                            if m.payload == b""], 10, "its assessment cleared")
    after = col.mark()  # a scan just before the clear may have published before it
    held = harness.retained(stack.broker.port, "agent/+/assessment")
    assert f"agent/{agent}/assessment" not in held
    _, rec = store.state(f"agent:{agent}")
    assert rec["retired"] is True and rec["sig"] == [] and "status" not in rec, rec
    c = stack.redis.client()
    try:
        c.xadd(f"{stack.prefix}{SERVICE}:resumes", {"m": json.dumps(job)})
    finally:
        c.close()
    harness.wait_until(
        lambda: svc.metric("vigil_stall_jobs_total", outcome="skipped") == skipped + 1, 10,
        "the queued job skipped")
    # four of the witness's scans: none for the retired agent, no resume
    harness.wait_until(lambda: len(col.find(f"agent/{witness}/assessment", since=after)) >= 4,
                       10, "four scans of the witness")
    assert not col.find(f"agent/{agent}/assessment", since=after)
    assert list(resumes(col).get(agent, {})) == [first["id"]]
    # cleared again: nothing more to retire. The witness's signal, published
    # after both clears on the same connection, is taken after them.
    added = svc.metric("vigil_stall_signals_total", result="added") or 0
    pub.publish(f"agent/{agent}/status", b"", retain=True)
    pub.publish(f"agent/{uid('never-seen-')}/status", b"", retain=True)
    pub.publish(*activity(witness, "GIT_COMMIT", 0, detail="still here"))
    harness.wait_until(lambda: svc.metric("vigil_stall_signals_total", result="added") == added + 1,
                       10, "the witness's signal, after the clears")
    assert svc.metric("vigil_stall_agents_retired_total") == 1
    assert not col.find(f"sys/{SERVICE}/error", since=mark)
    # it comes back: assessed, and scanned again (each scan republishes)
    back = col.mark()
    pub.publish(*activity(agent, "GIT_COMMIT", 13 * HOUR, detail="back at the retry loop"))
    harness.wait_until(lambda: len(col.find(f"agent/{agent}/assessment", since=back)) >= 3, 10,
                       "its assessment and scans again")
    _, rec = store.state(f"agent:{agent}")
    assert "retired" not in rec and rec["sig"], rec
    # an empty payload elsewhere is still refused
    err_mark = col.mark()
    pub.publish(f"agent/{agent}/activity", b"")
    err = col.wait_event(f"sys/{SERVICE}/error", timeout=10, since=err_mark)
    assert err["reason"] == "not_json", err
    assert validate_outputs(col, OUTPUTS) > 0


def wait_no_resume_job_pending(stack):
    """Every resume job acknowledged: nothing left pending in the stream."""
    c = stack.redis.client()
    try:
        stream = f"{stack.prefix}{SERVICE}:resumes"
        harness.wait_until(lambda: c.xpending(stream, "resumers")["pending"] == 0, 10,
                           "every resume job acknowledged")
    finally:
        c.close()


def stalled_fleet(pub, n, prefix):
    agents = [f"{prefix}{i:03d}" for i in range(n)]
    for a in agents:
        pub.publish(*status(a, 13 * HOUR, fsm="IDLE"))
    return agents


def two_replicas_and_a_stalled_fleet(stack, tag, instance=None):
    """Two replicas (VIGIL_SHARD 0/2 and 1/2) scanning every 100 ms, 30
    open tasks and 40 stalled agents: (replicas, collector, store, agents)."""
    env = dict(FAST, VIGIL_STALL_SCAN_MS="100")
    replicas = [stack.service(SERVICE, instance=instance and f"{instance}-{i}",
                              env=dict(env, VIGIL_SHARD=f"{i}/2")) for i in range(2)]
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    for i in range(30):
        pub.publish(*task(f"{tag}-t{i:02d}", i % 7))
    harness.wait_until(lambda: len(pool(store)["open"]) == 30, 15, "30 open tasks")
    return replicas, col, store, stalled_fleet(pub, 40, uid(tag) + "-")


def assert_each_resumed_once_with_each_task_once(col, store, agents, detail=""):
    """Every agent resumed, once; every task claimed once and handed to one
    agent; none left open."""
    got = resumes(col)
    assert sorted(got) == agents, f"missing: {sorted(set(agents) - set(got))}"
    doubled = {a: list(v) for a, v in got.items() if len(v) > 1}
    assert not doubled, f"agents resumed twice{detail}: {doubled}"
    claimed = [next(iter(v.values())).get("claimed_task", {}).get("id") for v in got.values()]
    with_task = [c for c in claimed if c]
    assert len(with_task) == 30 and len(set(with_task)) == 30, claimed
    p = pool(store)
    assert p["open"] == [] and len({c[0] for c in p["claimed"]}) == 30
    return got


def test_two_replicas_never_claim_the_same_task(stack):
    (r0, r1), col, store, agents = two_replicas_and_a_stalled_fleet(stack, "rep")
    col.wait_count("agent/+/resume", 40, timeout=60)
    time.sleep(1.0)  # a few more scans: nothing more may come
    assert_each_resumed_once_with_each_task_once(col, store, agents)
    # both replicas did part of the work
    for r in (r0, r1):
        assert (r.metric("vigil_stall_scans_total") or 0) > 0
    assert validate_outputs(col, OUTPUTS) > 0


def test_kill9_mid_scan_loses_no_resume_and_doubles_none(stack):
    env = dict(FAST, VIGIL_STALL_SCAN_MS="100")
    svc = stack.service(SERVICE, instance="stall-k9", env=env)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    for i in range(25):
        pub.publish(*task(f"k-{i:02d}", i))
    harness.wait_until(lambda: len(pool(store)["open"]) == 25, 15, "25 open tasks")
    agents = stalled_fleet(pub, 30, uid("k9") + "-")
    kills = 0
    for target in (1, 8, 16):
        col.wait_count("agent/+/resume", target, timeout=60)
        svc.kill9()
        kills += 1
        svc.start()
    col.wait_count("agent/+/resume", 30, timeout=90)
    time.sleep(1.5)
    got = resumes(col)
    assert sorted(got) == agents, f"missing: {sorted(set(agents) - set(got))}"
    doubled = {a: list(v) for a, v in got.items() if len(v) > 1}
    assert not doubled, f"agents resumed twice after {kills} kills: {doubled}"
    tasks = [next(iter(v.values())).get("claimed_task", {}).get("id") for v in got.values()]
    with_task = [t for t in tasks if t]
    assert len(with_task) == 25 and len(set(with_task)) == 25, tasks
    assert len(pool(store)["claimed"]) == 25
    # every resume job was acknowledged: nothing left pending in the stream
    wait_no_resume_job_pending(stack)
    assert validate_outputs(col, OUTPUTS) > 0


# --------------------------------------------------------------- bad input


def body(**fields):
    return json.dumps(fields, ensure_ascii=False).encode()


A = "agent/bad-agent/activity"
S = "agent/bad-agent/status"
T = "planner/task"
NOW = int(time.time() * 1000)
BAD = [
    ("activity not json", A, b"{not json", "not_json"),
    ("activity array", A, b"[1]", "not_object"),
    ("activity invalid utf8", A, b'{"agent":"bad-agent","source":"GIT_COMMIT","detail":"\xff\xfe"}',
     "invalid_utf8"),
    ("activity oversize", A, body(agent="bad-agent", source="GIT_COMMIT", detail="x" * 70000), "oversize"),
    ("activity no source", A, body(agent="bad-agent"), "missing_field"),
    ("activity unknown source", A, body(agent="bad-agent", source="COFFEE"), "bad_value"),
    ("activity source not string", A, body(agent="bad-agent", source=7), "wrong_type"),
    ("activity in_tool not bool", A, body(agent="bad-agent", source="GIT_COMMIT", in_tool="yes"),
     "wrong_type"),
    ("activity detail number", A, body(agent="bad-agent", source="GIT_COMMIT", detail=5), "wrong_type"),
    # a NUL would hide what follows it from the noise filter
    ("activity detail with NUL", A, body(agent="bad-agent", source="GIT_COMMIT", detail="a\u0000resumer"),
     "bad_value"),
    ("activity agent mismatch", A, body(agent="someone", source="GIT_COMMIT"), "topic_mismatch"),
    ("activity no agent", A, body(source="GIT_COMMIT"), "missing_field"),
    ("activity bad topic id", "agent/bad agent/activity", body(agent="bad-agent", source="GIT_COMMIT"),
     "bad_topic"),
    ("activity ts negative", A, body(agent="bad-agent", source="GIT_COMMIT", ts=-5), "bad_value"),
    ("activity ts string", A, body(agent="bad-agent", source="GIT_COMMIT", ts="now"), "wrong_type"),
    ("activity bad event id", A, body(id="a/b", agent="bad-agent", source="GIT_COMMIT"), "bad_id"),
    ("activity agent bad id", "agent/bad-agent/activity", body(agent="bad agent", source="GIT_COMMIT"),
     "topic_mismatch"),
    ("status agent mismatch", S, body(agent="other", fsm_state="IDLE"), "topic_mismatch"),
    ("status mission number", S, body(agent="bad-agent", fsm_state="IDLE", mission=5), "wrong_type"),
    ("status invalid utf8", S, b'{"agent":"bad-agent","fsm_state":"\xc0\x80"}', "invalid_utf8"),
    ("task not json", T, b"task!", "not_json"),
    ("task title empty", T, body(id="t1", title="", priority=1), "bad_value"),
    # a title of white space names nothing: the resume would hand over an empty task
    ("task title blank", T, body(id="t1", title=" \t\n ", priority=1), "bad_value"),
    ("task title unicode spaces", T, body(id="t1", title="\u00a0\u3000", priority=1), "bad_value"),
    ("status fsm blank", S, body(agent="bad-agent", fsm_state="   "), "bad_value"),
    ("task id too long", T, body(id="x" * 200, title="t", priority=1), "bad_id"),
    ("status no fsm", S, body(agent="bad-agent"), "missing_field"),
    ("status fsm number", S, body(agent="bad-agent", fsm_state=3), "wrong_type"),
    ("status fsm empty", S, body(agent="bad-agent", fsm_state=""), "bad_value"),
    ("status tasks not array", S, body(agent="bad-agent", fsm_state="IDLE", tasks="x"), "wrong_type"),
    ("status task with NUL", S, body(agent="bad-agent", fsm_state="IDLE", tasks=["a\u0000b"]),
     "bad_value"),
    ("status task number", S, body(agent="bad-agent", fsm_state="IDLE", tasks=[1]), "wrong_type"),
    ("task no id", T, body(title="t", priority=1), "missing_field"),
    ("task no title", T, body(id="t1", priority=1), "missing_field"),
    ("task priority negative", T, body(id="t1", title="t", priority=-1), "bad_value"),
    ("task priority string", T, body(id="t1", title="t", priority="high"), "wrong_type"),
    ("task bad agent", T, body(id="t1", title="t", priority=1, agent="a/b"), "bad_id"),
    # fsm_state and a task's title past 1000 bytes are refused (the topics' schemas say so)
    ("status fsm too long", S, body(agent="bad-agent", fsm_state="x" * 1001), "bad_value"),
    ("task title too long", T, body(id="t1", title="x" * 1001, priority=1), "bad_value"),
    ("status task object without title", S, body(agent="bad-agent", fsm_state="IDLE", tasks=[{}]),
     "wrong_type"),
    ("status cleared bad topic id", "agent/bad agent/status", b"", "bad_topic"),
    ("task cleared", T, b"", "not_json"),
    ("unknown topic", "agent/bad-agent/whatever", body(agent="bad-agent"), None),
]


@pytest.fixture(scope="module")
def bad_env(mixes):
    """The service of the signal-mix tests (one per module stack: replicas
    of one shard would share a client id)."""
    s, svc, col, pub = mixes
    pub.publish(*status("bad-agent", HOUR))  # a real record, so "no change" means something
    pub.publish(*task("seed-task", 1))
    col.wait_event("agent/bad-agent/assessment", timeout=10)
    harness.wait_until(lambda: s.store(SERVICE).state("planner:tasks")[1], 10, "the task pool")
    time.sleep(1.0)  # resumes of the mix agents (auto-resume ones) are done
    return s, svc, col, pub


@pytest.mark.parametrize("name,topic,payload,reason", [b for b in BAD if b[3]], ids=[b[0] for b in BAD if b[3]])
def test_bad_input_is_rejected_and_changes_nothing(bad_env, name, topic, payload, reason):
    s, svc, col, pub = bad_env
    store = s.store(SERVICE)
    before = svc.metric("vigil_rejected_total", reason=reason) or 0
    # the scan keeps touching the agent's record (next_scan): compare what
    # the input could have changed
    def view():
        v = {}
        for k, (_, raw) in store.states().items():
            st = json.loads(raw)
            st.pop("next_scan", None)
            st.pop("published", None)
            v[k] = st
        return v
    states = view()
    mark = col.mark()
    pub.publish(topic, payload)
    err = col.wait_event(f"sys/{SERVICE}/error", lambda e: e.get("topic") == topic, timeout=10,
                         since=mark, what=f"an error event for {name}")
    assert err["reason"] == reason, err
    harness.wait_until(lambda: svc.metric("vigil_rejected_total", reason=reason) == before + 1, 5,
                       f"vigil_rejected_total{{reason={reason}}} + 1")
    assert view() == states
    assert not col.find("agent/+/resume", since=mark)
    assert svc.alive()


def test_unknown_subtopic_is_not_subscribed_and_service_survives(bad_env):
    s, svc, col, pub = bad_env
    for i in range(100):
        pub.publish(A, bytes([i % 256]) * (i + 1))
    agent = uid("after-")
    pub.publish(*activity(agent, "GIT_COMMIT", 0))
    assessment(col, agent)
    assert svc.alive() and svc.is_ready()
    validate_outputs(col, OUTPUTS)


def test_a_job_handled_again_claims_nothing_new_and_sends_nothing(stack):
    """The crash window between committing a resume and acknowledging its
    job: the job comes back (here: appended again, as XAUTOCLAIM would hand
    it over) and must neither claim a second task nor send a second resume."""
    svc, col, pub, store, agent, ev = resumed_once(stack, "again-", (("w-1", 5), ("w-2", 4)))
    assert ev["claimed_task"]["id"] == "w-1"
    before = svc.metric("vigil_stall_jobs_total", outcome="duplicate") or 0
    add_job(stack, {"id": f"resume.{agent}.1", "agent": agent, "seq": 1,
                    "decided": harness.now_ms(), "reason": "replayed"})
    harness.wait_until(lambda: svc.metric("vigil_stall_jobs_total", outcome="duplicate") == before + 1, 10,
                       "the replayed job found already done")
    time.sleep(0.5)
    assert list(resumes(col)[agent]) == [ev["id"]]
    p = pool(store)
    assert [t[0] for t in p["open"]] == ["w-2"] and [t[0] for t in p["claimed"]] == ["w-1"]


def test_a_task_claimed_for_a_resume_never_sent_goes_back_to_the_pool(stack):
    """A job's first pass claimed a task and then died before sending (here
    the pool record is written as it left it); by the time the job is
    handled again the agent has retired (its status cleared). No resume is
    sent, so the claim is released: the task is open again, and another
    agent's resume gets it."""
    svc = stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    agent, other = uid("left-"), uid("next-")
    pub.publish(*task("r-1", 5, title="wire the retry loop"))
    harness.wait_until(lambda: [t[0] for t in pool(store)["open"]] == ["r-1"], 10, "the task open")
    pub.publish(*status(agent, 0), retain=True)
    harness.wait_until(lambda: store.state(f"agent:{agent}")[1], 10, "the agent known")
    pub.publish(f"agent/{agent}/status", b"", retain=True)
    harness.wait_until(lambda: svc.metric("vigil_stall_agents_retired_total") == 1, 10,
                       "the agent retired")
    job_id = f"resume.{agent}.4"
    v, p = store.state("planner:tasks")
    opened = p["open"][0]  # [id, title, priority, agent, ts]
    p["open"] = []
    p["claimed"] = [opened[:4] + [job_id, harness.now_ms(), opened[3], opened[4]]]
    c = stack.redis.client()
    try:
        c.hset(f"{store.base}state:planner:tasks", mapping={"s": json.dumps(p), "v": v + 1})
        c.xadd(f"{stack.prefix}{SERVICE}:resumes", {"m": json.dumps(
            {"id": job_id, "agent": agent, "seq": 4, "decided": harness.now_ms(),
             "reason": "inactive: confidence 0.000 < 0.5"})})
    finally:
        c.close()
    harness.wait_until(lambda: svc.metric("vigil_stall_tasks_released_total") == 1, 10,
                       "the claim released")
    p = pool(store)
    assert p["claimed"] == [] and [t[0] for t in p["open"]] == ["r-1"], p
    assert p["open"][0][4] == opened[4]  # as offered: its own ts
    assert agent not in resumes(col)
    assert svc.metric("vigil_stall_jobs_total", outcome="skipped") == 1
    # the next stalled agent's resume gets it
    pub.publish(*status(other, 13 * HOUR))
    ev = col.wait_event(f"agent/{other}/resume", timeout=15)
    assert ev["claimed_task"]["id"] == "r-1"
    assert svc.metric("vigil_stall_tasks_released_total") == 1


def test_guard_fails_open_on_an_unreadable_record(stack):
    """An internal error (here: the agent's stored record corrupted behind
    the service's back) does not leave the agent alone: the scan fails open
    and the agent gets a resume saying why."""
    svc = stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("corrupt-")
    pub.publish(*status(agent, 10 * MIN))
    pub.publish(*activity(agent, "GIT_COMMIT", 0))
    assessment(col, agent, lambda a: a["is_active"])
    corrupt_record(stack, agent)
    ev = col.wait_event(f"agent/{agent}/resume", timeout=15)
    assert "failing open" in ev["reason"], ev
    a = assessment(col, agent, lambda a: any("failing open" in r for r in a["reasons"]))
    assert a["is_active"] is False
    assert "unreadable agent record replaced" in svc.stderr_text()
    assert svc.alive()
    validate_outputs(col, OUTPUTS)


def test_an_agent_known_nothing_about_has_no_status_age(stack):
    """The stand-in for an unreadable record knows no status and no
    activity. Its assessments give no age (status_age_hours and aged_from
    null), not the hours since 1970, and say why it is auto-resume all the
    same: detection failed, and the guard fails open."""
    svc = stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("blank-")
    pub.publish(*status(agent, 10 * MIN))
    first = assessment(col, agent)
    assert first["aged_from"] == "status" and 0.15 <= first["status_age_hours"] <= 0.2, first
    mark = col.mark()
    corrupt_record(stack, agent)
    later = col.wait_event(f"agent/{agent}/assessment",
                           lambda a: any("no status and no activity known" in r for r in a["reasons"]),
                           since=mark, timeout=15, what="an assessment of the stand-in record")
    assert later["category"] == "auto-resume" and later["status_ts"] is None, later
    for a in col.events(f"agent/{agent}/assessment", since=mark):
        assert a["status_age_hours"] is None and a["aged_from"] is None, a
        assert a["last_activity"] is None and a["inactivity_minutes"] is None, a
    assert svc.alive()
    validate_outputs(col, OUTPUTS)


def add_job(stack, job):
    """A resume job appended to the stream, as a scan (or XAUTOCLAIM handing
    one over) would."""
    c = stack.redis.client()
    try:
        c.xadd(f"{stack.prefix}{SERVICE}:resumes", {"m": json.dumps(job)})
    finally:
        c.close()


def resumed_once(stack, prefix, tasks=()):
    """The service, an agent whose 13 h old status got it a resume, and
    that resume: (svc, col, pub, store, agent, first)."""
    svc = stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store(SERVICE)
    for tid, prio in tasks:
        pub.publish(*task(tid, prio))
    harness.wait_until(lambda: len(pool(store)["open"]) == len(tasks), 10, "the tasks open")
    agent = uid(prefix)
    pub.publish(*status(agent, 13 * HOUR), retain=True)
    first = col.wait_event(f"agent/{agent}/resume", timeout=15)
    return svc, col, pub, store, agent, first


def corrupt_record(stack, agent):
    """The agent's stored record made unreadable behind the service's back
    (its processed input ids stay, as they are kept beside it)."""
    c = stack.redis.client()
    try:
        key = f"{stack.prefix}{SERVICE}:state:agent:{agent}"
        c.hset(key, mapping={"s": "{not a record", "v": int(c.hget(key, "v")) + 100})
    finally:
        c.close()


def test_guard_fails_open_on_an_unreadable_record_of_an_agent_resumed_before(stack):
    """The record of an agent resumed once already becomes unreadable: the
    fresh record standing in for it must not number its resume 1 again. The
    job id resume.<a>.1 is also the claim id in the task pool and the dedupe
    id of the agent's commit, so a reused number found the first resume's
    commit "already done" (no resume, ever: the same job came back every
    interval) and gave the task already handed out back to the pool."""
    svc, col, pub, store, agent, first = resumed_once(stack, "refail-", (("f-1", 5), ("f-2", 4)))
    assert first["claimed_task"]["id"] == "f-1"
    corrupt_record(stack, agent)
    again = col.wait_event(f"agent/{agent}/resume", lambda r: r["id"] != first["id"], timeout=15,
                           what="a resume failing open")
    assert "failing open" in again["reason"], again
    assert again["claimed_task"]["id"] == "f-2", again
    p = pool(store)
    assert sorted(t[0] for t in p["claimed"]) == ["f-1", "f-2"] and p["open"] == [], p
    assert (svc.metric("vigil_stall_tasks_released_total") or 0) == 0
    validate_outputs(col, OUTPUTS)


def test_a_job_sent_before_its_record_was_corrupted_keeps_its_task(stack):
    """A resume job whose resume went out (its task handed to the agent)
    comes back unacknowledged (a crash before its XACK) after the agent's
    record was corrupted and replaced by a fresh one (an input after the
    corruption: the agent at work again), which knows of no resume sent. The
    job is no longer due, but its resume did go out (its commit is recorded
    beside the record, in the dedupe ids): the task stays with the agent,
    not released to the pool for another."""
    svc, col, pub, store, agent, ev = resumed_once(stack, "sentcor-", (("k-1", 5), ("k-2", 4)))
    assert ev["claimed_task"]["id"] == "k-1"
    corrupt_record(stack, agent)
    pub.publish(*activity(agent, "GIT_COMMIT", 0, detail="back at work"))

    def replaced():
        rec = store.state(f"agent:{agent}")[1]
        return isinstance(rec, dict) and rec.get("sent_seq", 0) == 0

    harness.wait_until(replaced, 10, "the record replaced by a fresh one")
    add_job(stack, {"id": f"resume.{agent}.1", "agent": agent, "seq": 1,
                    "decided": harness.now_ms(), "reason": "replayed"})
    harness.wait_until(lambda: svc.metric("vigil_stall_jobs_total", outcome="skipped") == 1, 10,
                       "the replayed job skipped: the agent is at work")
    time.sleep(0.5)
    p = pool(store)
    assert [t[0] for t in p["claimed"]] == ["k-1"] and [t[0] for t in p["open"]] == ["k-2"], p
    assert (svc.metric("vigil_stall_tasks_released_total") or 0) == 0
    assert list(resumes(col)[agent]) == [ev["id"]]


def mark_pending(stack, agent, seq):
    """The agent's record marked as a scan queuing resume `seq` marks it
    (written behind the service's back, as corrupt_record does)."""
    c = stack.redis.client()
    try:
        key = f"{stack.prefix}{SERVICE}:state:agent:{agent}"
        rec = json.loads(c.hget(key, "s"))
        rec.update(pending_seq=seq, pending_since=harness.now_ms(), resume_seq=seq)
        c.hset(key, mapping={"s": json.dumps(rec), "v": int(c.hget(key, "v")) + 1})
    finally:
        c.close()


def test_a_resume_gives_the_reason_of_the_check_made_before_it_is_sent(stack):
    """A job waits between the scan that queued it and its worker; activity
    is checked again right before the prompt is written, and the resume's
    `reason` is that check's, so it matches the activity at send time. Here
    the scan saw nothing (confidence 0.000); a tier-3 signal came since
    (0.300, still not active): the resume says 0.300."""
    svc = stack.service(SERVICE, env={"VIGIL_STALL_SCAN_MS": "600000"})  # no scan of its own
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("waited-")
    pub.publish(*status(agent, 13 * HOUR))
    assessment(col, agent, lambda a: a["category"] == "auto-resume")
    pub.publish(*activity(agent, "MESSAGE_QUEUE", 0, detail="queue polled"))
    assessment(col, agent, lambda a: a["confidence"] == 0.3 and not a["is_active"])
    mark_pending(stack, agent, 1)
    add_job(stack, {"id": f"resume.{agent}.1", "agent": agent, "seq": 1,
                    "decided": harness.now_ms() - 10 * MIN,
                    "reason": "validation failed (confidence 0.000): resume allowed"})
    ev = col.wait_event(f"agent/{agent}/resume", timeout=15)
    assert ev["reason"] == "validation failed (confidence 0.300): resume allowed", ev
    assert svc.metric("vigil_stall_resumes_total", task="none") == 1
    validate_outputs(col, OUTPUTS)


def test_the_prompt_idle_time_is_the_assessments_inactivity(stack):
    """One notion of inactivity: the prompt's "no activity for N min" is
    the assessment's inactivity_minutes (since the newest sign of life), and
    a status with nothing but a state is no sign of life for either. Here
    the last commit is 20 h old and a bare status 13 h old: 1200 min, not
    780."""
    stack.service(SERVICE, env=FAST)
    col = stack.collector()
    pub = stack.publisher()
    agent = uid("idle-")
    pub.publish(*activity(agent, "GIT_COMMIT", 20 * HOUR, detail="last commit"))
    pub.publish(*status(agent, 13 * HOUR))
    ev = col.wait_event(f"agent/{agent}/resume", timeout=15)
    a = col.events(f"agent/{agent}/assessment")[-1]
    assert 1200 <= a["inactivity_minutes"] < 1201, a
    assert re.search(r": no activity for 120[01] min \(state EXECUTING\)", ev["prompt"]), ev["prompt"]

    # never seen active (a bare status only): no idle time to give
    other = uid("idle-")
    pub.publish(*status(other, 13 * HOUR))
    ev = col.wait_event(f"agent/{other}/resume", timeout=15)
    a = col.events(f"agent/{other}/assessment")[-1]
    assert a["inactivity_minutes"] is None, a
    assert f"{other}: no activity seen (state EXECUTING)." in ev["prompt"], ev["prompt"]
    validate_outputs(col, OUTPUTS)


def test_a_job_queued_before_a_retirement_is_skipped_after_the_return(stack):
    """A resume job queued for an agent that then retires and comes back
    before a worker takes it (a kill -9 can hold a job that long) is not
    the agent's pending resume any more: its scans decide afresh, under new
    numbers. Carried out, it sent a second resume within the resume
    interval; it is skipped."""
    svc, col, pub, _, agent, first = resumed_once(stack, "stray-")
    pub.publish(f"agent/{agent}/status", b"", retain=True)
    harness.wait_until(lambda: svc.metric("vigil_stall_agents_retired_total") == 1, 10,
                       "the agent retired")
    back = col.mark()
    pub.publish(*status(agent, 13 * HOUR), retain=True)
    harness.wait_until(lambda: len(col.find(f"agent/{agent}/assessment", since=back)) >= 3, 10,
                       "its assessment and scans again")
    def handled():
        return sum(svc.metric("vigil_stall_jobs_total", outcome=o) or 0
                   for o in ("done", "skipped", "duplicate"))
    skipped, before = svc.metric("vigil_stall_jobs_total", outcome="skipped") or 0, handled()
    job = {"id": f"resume.{agent}.2", "agent": agent, "seq": 2,
           "decided": harness.now_ms() - 5_000, "reason": "inactive: confidence 0.000 < 0.5"}
    add_job(stack, job)
    harness.wait_until(lambda: handled() == before + 1, 10, "the stray job handled")
    time.sleep(0.5)
    assert list(resumes(col)[agent]) == [first["id"]]
    assert svc.metric("vigil_stall_jobs_total", outcome="skipped") == skipped + 1


def test_broker_and_redis_restarts_lose_no_resume_and_double_none(stack):
    env = dict(FAST, VIGIL_STALL_SCAN_MS="100")
    svc = stack.service(SERVICE, env=env)
    col = stack.collector()
    pub = stack.publisher(persistent=True)
    store = stack.store(SERVICE)
    for i in range(20):
        pub.publish(*task(f"r-{i:02d}", i))
    harness.wait_until(lambda: len(pool(store)["open"]) == 20, 15, "20 open tasks")
    agents = stalled_fleet(pub, 20, uid("rs") + "-")
    col.wait_count("agent/+/resume", 1, timeout=60)
    stack.broker.restart()
    col.wait_count("agent/+/resume", 8, timeout=60)
    stack.redis.restart()
    col.wait_count("agent/+/resume", 20, timeout=120)
    time.sleep(1.0)
    got = resumes(col)
    assert sorted(got) == agents
    assert all(len(v) == 1 for v in got.values()), {a: list(v) for a, v in got.items() if len(v) > 1}
    tasks = [next(iter(v.values()))["claimed_task"]["id"] for v in got.values()]
    assert len(set(tasks)) == 20
    harness.wait_until(svc.is_ready, 30, "ready again")


def test_two_replicas_under_replica_and_redis_kills_resume_each_stall_once(stack):
    """Two replicas (VIGIL_SHARD 0/2 and 1/2) scanning a stalled fleet
    while kill -9 hits replica 0, replica 1, Redis and both replicas at once,
    each during the scans (resumes still coming): every stalled agent is
    resumed, once (one resume id), every task claimed once and handed to one
    agent, no resume job left pending, both replicas ready again."""
    replicas, col, store, agents = two_replicas_and_a_stalled_fleet(stack, "k2", instance="stall")
    assert {harness.shard_of(f"agent:{a}", 2) for a in agents} == {0, 1}
    kills = []
    for target, what in ((1, "replica-0"), (8, "replica-1"), (16, "redis"), (24, "both")):
        col.wait_count("agent/+/resume", target, timeout=60)
        if what == "redis":
            stack.redis.restart()
        else:
            hit = replicas if what == "both" else [replicas[int(what[-1])]]
            for r in hit:
                r.kill9()
            for r in hit:
                r.start(wait=False)
        kills.append((what, len(resumes(col))))
    col.wait_count("agent/+/resume", 40, timeout=90)
    for r in replicas:
        r.wait_ready(timeout=30)
    # more scans of both replicas after the last resume: nothing more may come
    scans = [r.metric("vigil_stall_scans_total") or 0 for r in replicas]
    harness.wait_until(lambda: all((r.metric("vigil_stall_scans_total") or 0) >= s + 5
                                   for r, s in zip(replicas, scans)), 20, "five more scans each")
    got = assert_each_resumed_once_with_each_task_once(col, store, agents, f" after kills {kills}")
    wait_no_resume_job_pending(stack)
    print(f"\n40 stalled agents, 30 tasks, kills {kills}: {len(got)} resumed once")
    assert validate_outputs(col, OUTPUTS) > 0
