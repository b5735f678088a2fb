"""Helpers of the council tests (test_council*.py, scripts/demo-council):
the local test servers (fake_servers.py: tests/support/fake_llm.py and
fake_a2a.py, each on a free port), the advisors' rules and the readers of
council events."""

from fake_servers import FakeA2A, FakeLLM  # noqa: F401 (the council tests and scripts take them from here)


# The three personas that only advise, answering per persona; Sol's rules
# come first and steer the action of each test.
ADVISORS = [
    {"match": "You are Polaris, the Navigator", "reply": "Polaris: the long-term goal is the report."},
    {"match": "You are Aurora, the Empath", "reply": "Aurora: the user is calm."},
    {"match": "You are Vega, the Analyst", "reply": "Vega: the deadline is Friday."},
]


def sol(reply, regex=None):
    """A rule answering Sol's prompt (optionally only when regex matches it)."""
    r = {"match": "You are Sol, the Executor", "reply": reply}
    if regex:
        r["regex"] = regex
    return r


def rules(*sol_rules):
    return list(sol_rules) + ADVISORS


def events(col, session, etype=None, loop=None):
    """council/{session}/event payloads (deduplicated by id, in arrival order)."""
    seen, out = set(), []
    for e in col.events(f"council/{session}/event"):
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        if etype and e["type"] != etype:
            continue
        if loop is not None and e.get("loop") != loop:
            continue
        out.append(e)
    return out


def kinds(evs):
    return [f"phase:{e['phase']}" if e["type"] == "phase" else e["type"] for e in evs]
