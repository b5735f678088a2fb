#!/usr/bin/python3
"""fake_a2a.py - a small A2A (Agent2Agent) JSON-RPC 2.0 server for tests.

Answers POST (any path) with JSON-RPC 2.0: `message/send` (A2A 0.x, a Task
with status {state: "completed"} and artifacts [{parts: [{kind, text}]}])
and `SendMessage` (A2A 1.0, {task: {id, status: {state:
"TASK_STATE_COMPLETED"}, artifacts: [{artifactId, parts: [{text}]}]}}).
The artifact text is "Findings on <the prompt text>: ..." so a test can
see its prompt came through. Other methods get error -32601; a body that is
not JSON gets -32700. Standard library only; run with /usr/bin/python3.

    fake_a2a.py --port 0 [--host 127.0.0.1]

The first stdout line is `PORT <n>`. GET /stats -> {"requests": n,
"calls": [{"method", "id", "text"}...]}. POST /control {"fail": n} makes
the next n requests answer HTTP 500; {"delay_ms": n} delays every answer;
{"reset": true} clears everything.
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.calls = []
        self.fail = 0
        self.delay_ms = 0


def text_of(message):
    parts = message.get("parts") if isinstance(message, dict) else None
    out = []
    for p in parts or []:
        if isinstance(p, dict) and isinstance(p.get("text"), str):
            out.append(p["text"])
    return "\n".join(out)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        st = self.server.state
        if self.path == "/stats":
            with st.lock:
                self.send_json(200, {"requests": len(st.calls), "calls": list(st.calls)})
        else:
            self.send_json(404, {"error": "no route"})

    def do_POST(self):
        st = self.server.state
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        if self.path == "/control":
            c = json.loads(raw or b"{}")
            with st.lock:
                if c.get("reset"):
                    st.reset()
                if "fail" in c:
                    st.fail = int(c["fail"])
                if "delay_ms" in c:
                    st.delay_ms = int(c["delay_ms"])
            self.send_json(200, {"ok": True})
            return
        try:
            req = json.loads(raw)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError:
            self.send_json(200, {"jsonrpc": "2.0", "id": None,
                                 "error": {"code": -32700, "message": "Parse error"}})
            return
        rid = req.get("id")
        method = req.get("method")
        msg = (req.get("params") or {}).get("message") or {}
        text = text_of(msg)
        with st.lock:
            st.calls.append({"method": method, "id": rid, "text": text,
                             "role": msg.get("role"), "messageId": msg.get("messageId")})
            fail = st.fail > 0
            if fail:
                st.fail -= 1
            delay = st.delay_ms
        if delay:
            time.sleep(delay / 1000.0)
        if fail:
            self.send_json(500, {"error": "fake_a2a: simulated failure"})
            return
        answer = "Findings on %s: three sources agree; details attached." % text.strip()
        task_id = "task-%d" % len(st.calls)
        if method == "message/send":
            result = {"taskId": task_id, "id": task_id, "kind": "task",
                      "status": {"state": "completed"},
                      "artifacts": [{"parts": [{"kind": "text", "text": answer}]}]}
        elif method == "SendMessage":
            result = {"task": {"id": task_id, "status": {"state": "TASK_STATE_COMPLETED"},
                               "artifacts": [{"artifactId": "a-1",
                                              "parts": [{"text": answer}]}]}}
        else:
            self.send_json(200, {"jsonrpc": "2.0", "id": rid,
                                 "error": {"code": -32601, "message": "Method not found"}})
            return
        self.send_json(200, {"jsonrpc": "2.0", "id": rid, "result": result})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    srv = Server((a.host, a.port), Handler)
    srv.state = State()
    print("PORT %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
