"""HTTP and Server-Sent Events helpers for presence-gateway's tests:
a gateway process with a token file, plain requests, and an SSE reader
that parses frames (id/event/data) off a real socket."""

import http.client
import json
import os
import socket
import time

from harness import HarnessError, scaled

TOKENS = {"tok-joel-0123456789": "joel", "tok-ann-0123456789": "ann", "tok-bob-0123456789": "bob"}


def write_tokens(dirpath):
    path = os.path.join(dirpath, "tokens")
    with open(path, "w") as f:
        f.write("# test tokens\n")
        for t, u in TOKENS.items():
            f.write(f"{t} {u}\n")
    return path


def start_gateway(stack, **env):
    # limits off unless a test is about them (many tests answer 401 on purpose)
    e = {"VIGIL_GATEWAY_TOKENS_FILE": write_tokens(stack.dir), "VIGIL_GATEWAY_RATE": "0",
         "VIGIL_GATEWAY_AUTH_FAIL_RATE": "0"}
    e.update({k: str(v) for k, v in env.items()})
    return stack.service("presence-gateway", env=e)


def auth(token="tok-joel-0123456789"):
    return {"Authorization": f"Bearer {token}"}


def request(port, method, path, body=None, headers=None, timeout=10, raw=None):
    """Returns (status, headers dict (lower-case), parsed JSON or text)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(timeout))
    h = dict(headers or {})
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    try:
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        ctype = hdrs.get("content-type", "")
        if ctype.startswith("application/json"):
            return r.status, hdrs, json.loads(text)
        return r.status, hdrs, text.decode("utf-8", "replace")
    finally:
        c.close()


def frame_name(f):
    """A frame's name: its event: line on /api/events; on
    /api/autonomous/deliberations/live, whose frames have none (EventSource
    type "message", for an onmessage client), its data's `type`."""
    if f["event"] == "message" and isinstance(f["data"], dict):
        return f["data"].get("type")
    return f["event"]


class SSE:
    """One Server-Sent Events connection read frame by frame."""

    def __init__(self, port, path, headers=None, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=scaled(timeout))
        h = {"Host": f"127.0.0.1:{port}", "Accept": "text/event-stream"}
        h.update(headers or {})
        req = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        self.sock.sendall(req.encode())
        self.buf = b""
        head = self._until(b"\r\n\r\n", timeout)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {ln.split(":", 1)[0].lower(): ln.split(":", 1)[1].strip() for ln in lines[1:] if ":" in ln}
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self.body = b""  # de-chunked bytes not yet parsed into frames
        self.last_id = None

    def _recv(self, deadline):
        self.sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            d = self.sock.recv(65536)
        except socket.timeout:
            return False
        if not d:
            raise EOFError("connection closed")
        self.buf += d
        return True

    def _until(self, marker, timeout):
        deadline = time.monotonic() + scaled(timeout)
        while marker not in self.buf:
            if time.monotonic() > deadline:
                raise HarnessError(f"no {marker!r} within {timeout}s")
            self._recv(deadline)
        i = self.buf.index(marker)
        out, self.buf = self.buf[:i], self.buf[i + len(marker):]
        return out

    def _dechunk(self):
        if not self.chunked:
            self.body += self.buf
            self.buf = b""
            return
        while True:
            i = self.buf.find(b"\r\n")
            if i < 0:
                return
            size = int(self.buf[:i].split(b";")[0], 16)
            if len(self.buf) < i + 2 + size + 2:
                return
            self.body += self.buf[i + 2:i + 2 + size]
            self.buf = self.buf[i + 2 + size + 2:]
            if size == 0:
                return

    def next(self, timeout=10):
        """The next frame as dict(id, event, data (parsed JSON), raw (the
        frame's text)); event is "message" when the frame has no event:
        line, as EventSource says; comments and retry: lines are skipped."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            self._dechunk()
            while b"\n\n" in self.body:
                raw, self.body = self.body.split(b"\n\n", 1)
                text = raw.decode("utf-8")
                f = {"id": None, "event": "message", "data": None, "raw": text}
                data = []
                for ln in text.split("\n"):
                    if ln.startswith(":") or not ln:
                        continue
                    k, _, v = ln.partition(":")
                    v = v[1:] if v.startswith(" ") else v
                    if k == "data":
                        data.append(v)
                    elif k in ("id", "event"):
                        f[k] = v
                if not data:
                    continue
                f["data"] = json.loads("\n".join(data))
                if f["id"]:
                    self.last_id = f["id"]
                return f
            if time.monotonic() > deadline:
                raise HarnessError(f"no SSE frame within {timeout}s")
            self._recv(deadline)

    def until(self, pred, timeout=10, skip_ping=True):
        """Frames up to and including the first matching pred; pings (named
        or not: frame_name) are skipped unless skip_ping is False."""
        seen = []
        deadline = time.monotonic() + scaled(timeout)
        while True:
            f = self.next(max(0.1, deadline - time.monotonic()))
            if skip_ping and frame_name(f) == "ping":
                continue
            seen.append(f)
            if pred(f):
                return seen

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def snapshot(port, topics, headers):
    """The frames /api/events?topics=<topics>&snapshot=1 sends before any
    live entry (until 1 s of silence), pings left out."""
    s = SSE(port, f"/api/events?topics={topics}&snapshot=1", headers)
    assert s.next()["event"] == "connected"
    got = []
    try:
        while True:
            f = s.next(timeout=1)
            if f["event"] != "ping":
                got.append(f)
    except HarnessError:
        pass
    s.close()
    return got
