#!/usr/bin/python3
"""fake_llm.py - a small OpenAI-compatible chat completions server for tests.

Answers POST /v1/chat/completions (and /chat/completions) from a table of
rules matched against the last user message, and can be told to misbehave
the ways real endpoints do: be slow, fail with 500, answer 429 with
Retry-After, close the connection without answering, send garbage, put an
{"error": ...} object under HTTP 200 (Ollama) or cut the output short
(finish_reason "length"). Standard library only; run with /usr/bin/python3.

    fake_llm.py --port 0 [--rules rules.json] [--host 127.0.0.1] [--verbose]

The built-in table answers the wake prompts and, by persona name, the
council's four personas (COUNCIL_RULES). With --port 0 a free port is picked; the first stdout line is always
`PORT <n>` (flushed), so a test can start it and read where it listens.

Rules (a JSON list, first match wins; a rule without match/regex matches
everything):
    {"match": "server is down",      # case-insensitive substring, or
     "regex": "need\\s+help",        # a Python regex (search, IGNORECASE)
     "reply": {...} | "text",        # object/list serialized as the content
     "delay_ms": 0, "status": 200, "retry_after": 1,
     "mode": "ok" | "close" | "garbage" | "error200" | "truncated",
     "error_message": "..."}         # the error200 answer's message

Switches, either per request by header (X-Fake-Mode, X-Fake-Delay-Ms,
X-Fake-Status, X-Fake-Retry-After) or globally by POST /control with a JSON
object (every key optional):
    {"mode": ..., "status": 500, "retry_after": 1,   # override answers
     "fail_next": n,      # ... for the next n requests only (else forever)
     "delay_ms": 300,     # added to every answer
     "reset": true,       # clear overrides, delay and statistics first
     "usage": {...},      # the usage object of every answer (null: estimated)
     "rules": [...]}      # replace the rules table (null: the built-in one)
GET /stats -> {"requests", "max_concurrent", "in_flight", "last_request":
{"path", "headers", "body"}, "history": [{"start", "end", "prompt"}] (the
last 1000 requests, times in epoch seconds, the prompt's first 200
characters), "control": {...}}. GET /v1/models lists one.
Every request is served on its own thread, so delays overlap.
"""

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The council's four personas (services/council): each prompt starts "You
# are <Name>, ...". Sol's answer is the proposed action; tests replace these
# rules through /control to steer Sol.
COUNCIL_RULES = [
    {"match": "You are Polaris, the Navigator",
     "reply": "Polaris: keep the user's long-term goal in view; the report matters most."},
    {"match": "You are Aurora, the Empath",
     "reply": "Aurora: the user sounds busy but calm; support, do not interrupt."},
    {"match": "You are Vega, the Analyst",
     "reply": "Vega: the evidence is the user's own messages; the deadline is the key fact."},
    {"match": "You are Sol, the Executor",
     "reply": "note: the user is working towards a deadline"},
]

DEFAULT_RULES = COUNCIL_RULES + [
    {"regex": r"server is down|need help|emergency",
     "reply": {"shouldWake": True,
               "reason": "urgent request for help that needs an expert",
               "confidence": 0.92,
               "alternativeSuggestion": None}},
    {"match": "How was your weekend",
     "reply": {"shouldWake": False, "reason": "casual chatter", "confidence": 0.9}},
    # heartbeat prompts: the break-reminder test's checklist line makes
    # the persona speak, any other heartbeat check answers HEARTBEAT_OK
    {"regex": r"remind the user to take a break[\s\S]*Run the heartbeat check",
     "reply": {"message": "You have been at it for a while: time for a short break?",
               "priority": "urgent", "category": "reminder"}},
    {"match": "Run the heartbeat check", "reply": "HEARTBEAT_OK"},
    {"reply": {"shouldWake": False, "reason": "not relevant", "confidence": 0.6}},
]

MODES = ("ok", "close", "garbage", "error200", "truncated", "status")
HISTORY_MAX = 1000


class State:
    """Everything the handlers share, behind one lock."""

    def __init__(self, rules):
        self.lock = threading.Lock()
        self.rules = compile_rules(rules)
        self.in_flight = 0
        self.seq = 0
        self.reset()

    def reset(self):
        # in_flight is not reset: requests still being served (e.g. slow
        # ones a client gave up on) decrement it when they end.
        self.override = None  # {"mode", "status", "retry_after", "remaining"}
        self.delay_ms = 0
        self.usage = None  # replaces every answer's estimated usage when set
        self.requests = 0
        self.max_concurrent = 0
        self.last_request = None
        self.history = []  # last HISTORY_MAX requests: {start, end, prompt (first 200 chars)}


def compile_rules(rules):
    if not isinstance(rules, list):
        raise ValueError("rules must be a JSON list")
    out = []
    for r in rules:
        if not isinstance(r, dict):
            raise ValueError("each rule must be an object")
        r = dict(r)
        if "regex" in r:
            r["_re"] = re.compile(r["regex"], re.IGNORECASE)
        mode = r.get("mode", "ok")
        if mode not in MODES:
            raise ValueError("unknown mode %r" % mode)
        out.append(r)
    return out


def rule_matches(rule, text):
    if "_re" in rule and not rule["_re"].search(text):
        return False
    if "match" in rule and rule["match"].lower() not in text.lower():
        return False
    return True


def estimate_tokens(text):
    return max(1, len(text) // 4)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake_llm/1"

    # -- plumbing -----------------------------------------------------
    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake_llm: " + (fmt % args) + "\n")

    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_raw(code, body, "application/json", headers)

    def send_raw(self, code, body, ctype, headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    # -- routes -------------------------------------------------------
    def do_GET(self):
        st = self.server.state
        if self.path == "/stats":
            with st.lock:
                self.send_json(200, {
                    "requests": st.requests,
                    "max_concurrent": st.max_concurrent,
                    "in_flight": st.in_flight,
                    "last_request": st.last_request,
                    "history": st.history,
                    "control": {"override": st.override, "delay_ms": st.delay_ms},
                })
        elif self.path in ("/v1/models", "/models"):
            self.send_json(200, {"object": "list",
                                 "data": [{"id": "fake", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "no route " + self.path}})

    def do_POST(self):
        if self.path == "/control":
            self.control()
        elif self.path in ("/v1/chat/completions", "/chat/completions"):
            self.chat()
        else:
            self.read_body()
            self.send_json(404, {"error": {"message": "no route " + self.path}})

    def control(self):
        st = self.server.state
        try:
            c = json.loads(self.read_body() or b"{}")
            if not isinstance(c, dict):
                raise ValueError("control body must be an object")
            with st.lock:
                if c.get("reset"):
                    st.reset()
                if "rules" in c:
                    st.rules = compile_rules(DEFAULT_RULES if c["rules"] is None
                                             else c["rules"])
                if "delay_ms" in c:
                    st.delay_ms = int(c["delay_ms"])
                if "usage" in c:
                    st.usage = c["usage"]
                if "mode" in c or "status" in c:
                    mode = c.get("mode") or "status"
                    if mode not in MODES:
                        raise ValueError("unknown mode %r" % mode)
                    if mode == "ok" and "status" not in c and "fail_next" not in c:
                        st.override = None
                    else:
                        st.override = {
                            "mode": mode,
                            "status": int(c.get("status",
                                                500 if mode == "status" else 200)),
                            "retry_after": c.get("retry_after"),
                            "remaining": c.get("fail_next"),
                        }
                elif "fail_next" in c:
                    st.override = {"mode": "status", "status": 500,
                                   "retry_after": c.get("retry_after"),
                                   "remaining": int(c["fail_next"])}
                snapshot = {"override": st.override, "delay_ms": st.delay_ms}
        except (ValueError, TypeError, re.error) as e:
            self.send_json(400, {"error": {"message": str(e)}})
            return
        self.send_json(200, snapshot)

    # -- chat completions ---------------------------------------------
    def chat(self):
        st = self.server.state
        raw = self.read_body()
        with st.lock:
            st.requests += 1
            st.seq += 1
            seq = st.seq
            st.in_flight += 1
            st.max_concurrent = max(st.max_concurrent, st.in_flight)
        start = time.time()
        try:
            self.answer(raw, seq)
        finally:
            with st.lock:
                st.in_flight -= 1
                try:
                    prompt = json.loads(raw)["messages"][-1]["content"][:200]
                except Exception:  # noqa: BLE001 - a bad request has no prompt
                    prompt = ""
                st.history.append({"start": start, "end": time.time(), "prompt": prompt})
                del st.history[:-HISTORY_MAX]

    def pick(self, user_text):
        """The behaviour for this request: rule, then global override, then
        per-request headers (most specific last)."""
        st = self.server.state
        with st.lock:
            rule = next((r for r in st.rules if rule_matches(r, user_text)), {})
            b = {
                "mode": rule.get("mode", "ok"),
                "reply": rule.get("reply", ""),
                "delay_ms": int(rule.get("delay_ms", 0)) + st.delay_ms,
                "status": int(rule.get("status", 200)),
                "retry_after": rule.get("retry_after"),
                "error_message": rule.get("error_message"),
            }
            if b["status"] != 200 and b["mode"] == "ok":
                b["mode"] = "status"
            o = st.override
            if o is not None:
                b["mode"] = o["mode"]
                b["status"] = o["status"]
                if o.get("retry_after") is not None:
                    b["retry_after"] = o["retry_after"]
                if o.get("remaining") is not None:
                    o["remaining"] = int(o["remaining"]) - 1
                    if o["remaining"] <= 0:
                        st.override = None
        h = self.headers
        if h.get("X-Fake-Mode"):
            b["mode"] = h["X-Fake-Mode"]
        if h.get("X-Fake-Status"):
            b["status"] = int(h["X-Fake-Status"])
            if b["mode"] == "ok":
                b["mode"] = "status"
        if h.get("X-Fake-Delay-Ms"):
            b["delay_ms"] += int(h["X-Fake-Delay-Ms"])
        if h.get("X-Fake-Retry-After"):
            b["retry_after"] = h["X-Fake-Retry-After"]
        return b

    def answer(self, raw, seq):
        st = self.server.state
        try:
            req = json.loads(raw)
            msgs = req.get("messages")
            if not isinstance(msgs, list) or not msgs:
                raise ValueError("messages must be a non-empty list")
        except (ValueError, AttributeError) as e:
            self.send_json(400, {"error": {"message": "bad request: %s" % e,
                                           "type": "invalid_request_error"}})
            return
        user_text = ""
        for m in msgs:
            if isinstance(m, dict) and m.get("role") == "user":
                user_text = str(m.get("content", ""))
        prompt_text = "".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict))
        with st.lock:
            st.last_request = {
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": req,
            }
        b = self.pick(user_text)
        if b["delay_ms"] > 0:
            time.sleep(b["delay_ms"] / 1000.0)

        mode = b["mode"]
        if mode == "close":
            # Hang up without a status line: the client sees an empty reply.
            self.close_connection = True
            return
        if mode == "garbage":
            self.send_raw(200, b"<html>502 Bad Gateway</html> this is not JSON {",
                          "text/html")
            return
        if mode == "error200":
            self.send_json(200, {"error": {"message": b.get("error_message") or
                                           "fake_llm: model runner crashed",
                                           "type": "server_error"}})
            return
        if mode == "status" or b["status"] != 200:
            headers = {}
            if b["retry_after"] is not None:
                headers["Retry-After"] = str(b["retry_after"])
            self.send_json(b["status"], {"error": {
                "message": "fake_llm: simulated HTTP %d" % b["status"],
                "type": "rate_limit_error" if b["status"] == 429 else "server_error",
                "code": b["status"]}}, headers)
            return

        reply = b["reply"]
        content = reply if isinstance(reply, str) else json.dumps(reply)
        finish = "stop"
        if mode == "truncated":
            content = content[: max(1, len(content) // 2)]
            finish = "length"
        pt, ct = estimate_tokens(prompt_text), estimate_tokens(content)
        self.send_json(200, {
            "id": "chatcmpl-fake-%d" % seq,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.get("model") or "fake",
            "choices": [{"index": 0,
                         "message": {"role": "assistant", "content": content},
                         "finish_reason": finish}],
            "usage": self.server.state.usage or {"prompt_tokens": pt, "completion_tokens": ct,
                                                  "total_tokens": pt + ct},
        })


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # bursts of concurrent connects must not hit SYN retries

    def handle_error(self, request, client_address):
        # A client that gave up (timeout) is expected here, not a failure.
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--rules", help="JSON file with a list of rules")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    rules = DEFAULT_RULES
    if a.rules:
        with open(a.rules, encoding="utf-8") as f:
            rules = json.load(f)
    srv = Server((a.host, a.port), Handler)
    srv.state = State(rules)
    srv.verbose = a.verbose
    print("PORT %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
