"""council when the model fails (the fake OpenAI-compatible server
answering 500 for some personas): a persona whose call failed appears as
"(no answer: ...)"; Sol failing is a reflect with a warning, and three such
loops in a row trip the circuit breaker, so a dead model pauses the session
instead of spinning."""

import pytest

import harness
from conftest import validate_outputs
from council_support import (ADVISORS, OUTPUTS, FakeLLM, control, events, rules, sol,
                             start_service, wait_events)
from fake_servers import running


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f


def test_an_advisor_that_fails_appears_as_no_answer_and_sol_still_acts(stack, llm):
    polaris_down = {"match": "You are Polaris, the Navigator", "status": 500, "reply": "x"}
    llm.control(rules=[polaris_down, sol("note: the council goes on")] + ADVISORS[1:])
    start_service(stack, llm)
    col = stack.collector()
    stack.publisher().publish(*control("nia", "start", session="s-polaris-down"))
    a = wait_events(col, "s-polaris-down", lambda evs: [e for e in evs if e["type"] == "action"],
                    20, "the action")[0]
    d = events(col, "s-polaris-down", "deliberation")[0]
    assert d["polaris"].startswith("(no answer: ") and d["aurora"].startswith("Aurora:"), d
    assert a["action"] == "note" and a["content"] == "the council goes on" and "warning" not in a
    validate_outputs(col, OUTPUTS)


def test_a_dead_sol_is_a_reflect_with_a_warning_and_three_in_a_row_pause(stack, llm):
    sol_down = {"match": "You are Sol, the Executor", "status": 500, "reply": "x"}
    llm.control(rules=[sol_down] + ADVISORS)
    start_service(stack, llm, VIGIL_COUNCIL_LOOP_MS=200)
    col = stack.collector()
    pub = stack.publisher()
    pub.publish(*control("oli", "start", session="s-sol-down"))
    p = wait_events(col, "s-sol-down", lambda evs: [e for e in evs if e["type"] == "session_paused"],
                    30, "the breaker's pause")[0]
    assert "spinning: 3 'reflect:' actions in a row" in p["reason"], p
    acts = events(col, "s-sol-down", "action")
    assert [(a["loop"], a["action"]) for a in acts] == [(1, "reflect"), (2, "reflect"), (3, "reflect")]
    assert all(a["warning"].startswith("Sol did not answer (") for a in acts), acts
    ds = events(col, "s-sol-down", "deliberation")
    assert all(d["sol"].startswith("(no answer: ") and d["decision"].startswith("reflect:") for d in ds)
    s = harness.retained(stack.broker.port, "council/s-sol-down/state")["council/s-sol-down/state"]
    assert s["status"] == "paused" and s["loop_count"] == 3
    # the model is back: a resume runs the next loop, the breaker starts over
    llm.control(rules=rules(sol("note: back again")))
    pub.publish(*control("oli", "resume"))
    a4 = wait_events(col, "s-sol-down", lambda evs: [e for e in evs if e["type"] == "action" and
                                                     e["loop"] == 4], 20, "loop 4's action")[0]
    assert a4["action"] == "note" and "warning" not in a4
    validate_outputs(col, OUTPUTS)
