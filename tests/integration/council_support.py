"""Helpers of the council tests (test_council*.py, scripts/demo-council):
the local OpenAI-compatible test server (tests/support/fake_llm.py) and the
local A2A test server (tests/support/fake_a2a.py), each on a free port,
with their /control and /stats."""

import json
import os
import subprocess
import urllib.request

import harness

SUPPORT = os.path.join(harness.SOURCE_DIR, "tests", "support")


class _Server:
    script = None

    def __init__(self, workdir):
        name = os.path.splitext(self.script)[0]
        self.log = os.path.join(workdir, f"{name}.log")
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(["/usr/bin/python3", os.path.join(SUPPORT, self.script),
                                      "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=logf, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        logf.close()
        line = self.proc.stdout.readline().decode()
        if not line.startswith("PORT "):
            raise harness.HarnessError(f"{self.script} did not start: {line!r}\n{harness.tail(self.log)}")
        self.port = int(line.split()[1])

    def _req(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    def control(self, **kw):
        return self._req("POST", "/control", kw)

    def stats(self):
        return self._req("GET", "/stats")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc.stdout.close()


class FakeLLM(_Server):
    script = "fake_llm.py"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/v1"


class FakeA2A(_Server):
    script = "fake_a2a.py"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/a2a"


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
