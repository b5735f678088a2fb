"""The seed's Theater client from another origin, in headless Chromium:
a page served on an origin listed in VIGIL_GATEWAY_ORIGINS opens
`new EventSource('<gateway>/api/autonomous/deliberations/live',
{withCredentials: true})` with the session cookie /login set, gets the
council events through onmessage, answers a question with
fetch(..., {credentials: 'include'}) (a CORS preflight), and, when the
gateway is killed (kill -9) and comes back on the same address, the
browser's own reconnect (with Last-Event-ID) misses nothing and repeats
nothing. A page on an origin not listed gets no stream."""

import http.server
import json
import subprocess
import threading
import time

import pytest

import theater_browser
from conftest import uid
from gateway_client import start_gateway
from harness import free_port, scaled, wait_until

pytestmark = pytest.mark.skipif(not theater_browser.available(),
                                reason="chromium, chromium-driver and python3-selenium are needed (scripts/install-deps)")

APP = b"<!doctype html><html><head><title>another app</title></head><body>app</body></html>"


class _App(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(APP)))
        self.end_headers()
        self.wfile.write(APP)

    def log_message(self, *args):
        pass


def serve_app():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _App)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def mosquitto_pub(port, topic, payload):
    subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-t", topic,
                    "-m", json.dumps(payload)], check=True, timeout=10)


# The seed's frontend integration, verbatim but for the gateway's address,
# recording what onmessage sees (and each lastEventId) and the errors.
SEED_CLIENT = """
window.seen = []; window.errors = 0;
const eventSource = new EventSource(arguments[0] + '/api/autonomous/deliberations/live', {
  withCredentials: true, // Required for auth
});
eventSource.onmessage = (event) => {
  const data = JSON.parse(event.data);
  window.seen.push({type: data.type, id: event.lastEventId, n: data.n === undefined ? null : data.n});
};
eventSource.onerror = () => { window.errors++; };
window.es = eventSource;
"""

ANSWER = """
const done = arguments[arguments.length - 1];
fetch(arguments[0] + '/api/council/' + arguments[1] + '/answers', {
  method: 'POST', credentials: 'include', headers: {'Content-Type': 'application/json'},
  body: JSON.stringify({question_id: arguments[2], answer: 'from the other app'}),
}).then(r => r.json().then(b => done({status: r.status, body: b})), e => done({error: String(e)}));
"""


def council(d, kind):
    return [x for x in d.execute_script("return window.seen") if x["type"] == kind]


def test_seed_client_from_another_origin_with_credentials(stack):
    app = serve_app()
    origin = f"http://127.0.0.1:{app.server_address[1]}"
    gw = start_gateway(stack, VIGIL_GATEWAY_ORIGINS=origin, VIGIL_GATEWAY_PING_MS=1000)
    base = f"http://127.0.0.1:{gw.http_port}"
    col = stack.collector(["council/+/answer"])
    session = uid("s")
    b = theater_browser.Browser()
    d = b.driver
    d.set_script_timeout(scaled(20))
    try:
        d.get(base + "/login?token=tok-joel-0123456789")  # the cookie, for 127.0.0.1
        d.get(origin + "/")
        d.execute_script(SEED_CLIENT, base)
        wait_until(lambda: council(d, "connected"), scaled(15), "connected through onmessage")
        wait_until(lambda: council(d, "ping"), scaled(10), "a ping through onmessage")

        def publish(n):
            mosquitto_pub(stack.broker.port, f"council/{session}/event",
                          {"id": f"{session}:action:{n}", "type": "action", "session": session, "n": n,
                           "ts": int(time.time() * 1000)})
        for n in range(5):
            publish(n)
        wait_until(lambda: len(council(d, "action")) == 5, scaled(15), "the first actions")
        # an answer from the other origin: preflight, cookie, 202, on the topic
        qid = f"{session}:question:9"
        r = d.execute_async_script(ANSWER, base, session, qid)
        assert r.get("status") == 202, r
        ans = col.wait_event(f"council/{session}/answer", timeout=scaled(10))
        assert ans["by"] == "joel" and ans["answer"] == "from the other app"
        # the gateway dies under the open stream; the browser reconnects by
        # itself (retry: 2000) with Last-Event-ID once it is back
        gw.kill9()
        for n in range(5, 10):
            publish(n)
        time.sleep(1.0)
        gw.start()
        for n in range(10, 15):
            publish(n)
        wait_until(lambda: council(d, "action") and council(d, "action")[-1]["n"] == 14, scaled(30),
                   "the actions after the restart")
        got = council(d, "action")
        assert [x["n"] for x in got] == list(range(15)), got
        assert all(x["id"] for x in got)
        assert d.execute_script("return window.errors") >= 1  # it did see the stream break
        assert len(council(d, "connected")) >= 2
        d.execute_script("window.es.close()")
    finally:
        b.close()
        app.shutdown()


def test_a_page_on_an_origin_not_listed_gets_no_stream(stack):
    app = serve_app()
    gw = start_gateway(stack, VIGIL_GATEWAY_ORIGINS="http://theater.example")
    base = f"http://127.0.0.1:{gw.http_port}"
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(base + "/login?token=tok-joel-0123456789")
        d.get(f"http://127.0.0.1:{app.server_address[1]}/")
        d.execute_script(SEED_CLIENT, base)
        wait_until(lambda: d.execute_script("return window.errors") >= 1, scaled(15), "the stream refused")
        time.sleep(1.0)
        assert d.execute_script("return window.seen") == []
        assert d.execute_script("return window.es.readyState") == 2  # CLOSED: a 403 is not retried
        assert gw.metric("vigil_gateway_http_errors_total", code="403") >= 1
    finally:
        b.close()
        app.shutdown()
