"""The local test servers the LLM-using tests and scripts share:
tests/support/fake_llm.py (OpenAI-compatible) and tests/support/fake_a2a.py
(A2A JSON-RPC), each started on a free loopback port, with their /control
and /stats, and `running()` to hold one for the length of a fixture."""

import contextlib
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


@contextlib.contextmanager
def running(cls, workdir, **control):
    """A server of cls in workdir (given `control` first when any), stopped
    at the end."""
    server = cls(str(workdir))
    try:
        if control:
            server.control(**control)
        yield server
    finally:
        server.stop()
