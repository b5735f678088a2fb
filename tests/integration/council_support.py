"""Helpers of the council tests (test_council*.py, scripts/demo-council):
the local test servers (fake_servers.py: tests/support/fake_llm.py and
fake_a2a.py, each on a free port; ScriptedA2A, an agent answering what a
test tells it), the advisors' rules, the service, its controls and CLI,
and the readers of council events."""

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import harness
from fake_servers import FakeA2A, FakeLLM  # noqa: F401 (the council tests and scripts take them from here)

SERVICE = "council"
OUTPUTS = ("council/+/event", "council/+/state", "council/+/request", "sys/#")


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


def start_service(stack, llm=None, **env):
    """The council service on `stack`, asking `llm` (none: no LLM), one loop a minute."""
    e = {"VIGIL_LLM_URL": llm.url if llm else "", "VIGIL_LLM_TIMEOUT_MS": 5000,
         "VIGIL_LLM_RETRIES": 0, "VIGIL_COUNCIL_LOOP_MS": 60000}
    e.update(env)
    return stack.service(SERVICE, env=e)


def control(user, action, **fields):
    """(topic, payload) of a council/{user}/control input."""
    from conftest import uid  # the tests' ids (conftest is the tests' own, not the scripts')
    body = {"id": uid("c"), "action": action, "ts": harness.now_ms()}
    body.update(fields)
    return f"council/{user}/control", body


def wait_events(col, session, pred, timeout, what):
    return col.wait_for(lambda c: pred(events(c, session)), timeout, what)


def run_cli(stack, *args):
    """`vigil council <args>` against the stack's Redis."""
    exe = os.path.join(harness.BUILD_DIR, "cli", "vigil")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env.update({"VIGIL_REDIS_URL": stack.redis.url, "VIGIL_REDIS_PREFIX": stack.prefix,
                "VIGIL_MQTT_URL": stack.broker.url, "ASAN_OPTIONS": "detect_leaks=1",
                "LSAN_OPTIONS": f"suppressions={harness.SOURCE_DIR}/tests/lsan.supp"})
    return subprocess.run([exe, "council", *args], env=env, capture_output=True, text=True,
                          timeout=30)


class ScriptedA2A:
    """An A2A agent in this process that answers every JSON-RPC POST with
    reply(request) (a dict sent as the JSON body), for the replies
    tests/support/fake_a2a.py never gives (another request's id, a task
    left waiting for input). Records the requests. Use as a context manager."""

    def __init__(self, reply):
        agent = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = json.loads(raw or b"{}")
                with agent.lock:
                    agent.requests.append(req)
                body = json.dumps(agent.reply(req)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.reply = reply
        self.requests = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/a2a"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
