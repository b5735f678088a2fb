"""council's loop in two stages, through the broker with the fake model:
PLAN asks the three advisors (Polaris, Aurora, Vega) at once, then ACT asks
Sol with the SENSE context plus their answers (a failed one as its
"(no answer: ...)" text) and whether the user is available; Sol's reply
is the action. The Theater Mode events keep their order."""

import harness
from conftest import uid, validate_outputs
from council_support import ADVISORS, OUTPUTS, control, events, kinds, sol, start_service, wait_events


def last_action(col, session):
    return wait_events(col, session, lambda evs: [e for e in evs if e["type"] == "action"],
                       20, f"the action of {session}")[0]


def persona_of(prompt):
    for name in ("Polaris", "Aurora", "Vega", "Sol"):
        if prompt.startswith(f"You are {name}, "):
            return name
    return None


def test_sol_is_asked_after_the_advisors_with_their_answers(stack, fake_llm):
    llm = fake_llm
    # Sol acts on the council only when its prompt holds all three answers
    heard = (r"(?s)- Polaris, the Navigator: Polaris: the long-term goal is the report\.\n"
             r"- Aurora, the Empath: Aurora: the user is calm\.\n"
             r"- Vega, the Analyst: Vega: the deadline is Friday\.\n")
    llm.control(rules=[sol("note: the council was heard", regex=heard),
                       sol("reflect: the council was not heard")] + ADVISORS)
    svc = start_service(stack, llm)
    col = stack.collector()
    pub = stack.publisher()
    before = svc.metric("vigil_commits_total") or 0
    now = harness.now_ms()
    pub.publish("room/general/presence", {"id": uid("p"), "user": "vera", "session": "tab-1",
                                          "status": "away", "last_activity": now, "ts": now})
    harness.wait_until(lambda: (svc.metric("vigil_commits_total") or 0) > before, 10,
                       "the presence report committed")
    pub.publish(*control("vera", "start", session="s-heard"))
    a = last_action(col, "s-heard")
    assert a["action"] == "note" and a["content"] == "the council was heard", a

    st = llm.stats()
    # Sol's request is the loop's last, its body holding the advisors' answers
    # and the user's availability, after the SENSE context
    sol_prompt = st["last_request"]["body"]["messages"][-1]["content"]
    assert sol_prompt.startswith("You are Sol, the Executor"), sol_prompt[:200]
    for answer in ("Polaris: the long-term goal is the report.", "Aurora: the user is calm.",
                   "Vega: the deadline is Friday."):
        assert answer in sol_prompt, sol_prompt
    assert "User available now: no (presence away, as SENSE found it)" in sol_prompt, sol_prompt
    assert sol_prompt.index("Current context (SENSE)") < sol_prompt.index("- Polaris, the Navigator: ")
    # two stages: Sol's call starts once the three advisors' calls are over
    calls = [(persona_of(h["prompt"]), h["start"], h["end"]) for h in st["history"]]
    assert sorted(c[0] for c in calls) == ["Aurora", "Polaris", "Sol", "Vega"], calls
    sol_start = [c[1] for c in calls if c[0] == "Sol"][0]
    assert all(end <= sol_start for name, _, end in calls if name != "Sol"), calls
    assert kinds(events(col, "s-heard", loop=1)) == [
        "phase:sense", "phase:plan", "deliberation", "phase:act", "action"]
    validate_outputs(col, OUTPUTS)


def test_a_failed_advisor_reaches_sol_as_no_answer(stack, fake_llm):
    llm = fake_llm
    aurora_down = {"match": "You are Aurora, the Empath", "status": 500, "reply": "x"}
    llm.control(rules=[sol("note: acting without Aurora", regex=r"- Aurora, the Empath: \(no answer: "),
                       sol("reflect: Aurora's failure not shown"), aurora_down] + ADVISORS)
    start_service(stack, llm)
    col = stack.collector()
    stack.publisher().publish(*control("vito", "start", session="s-aurora-down"))
    a = last_action(col, "s-aurora-down")
    d = events(col, "s-aurora-down", "deliberation")[0]
    assert d["aurora"].startswith("(no answer: "), d
    assert a["action"] == "note" and a["content"] == "acting without Aurora", a
    sol_prompt = llm.stats()["last_request"]["body"]["messages"][-1]["content"]
    assert f"- Aurora, the Empath: {d['aurora']}\n" in sol_prompt, sol_prompt
    validate_outputs(col, OUTPUTS)
