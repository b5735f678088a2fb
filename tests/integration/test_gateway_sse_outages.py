"""presence-gateway's live streams across outages, with the clients
connected while it happens: a kill -9 of the gateway (every stream
ends; each client reconnects with Last-Event-ID and misses nothing the
log holds, nothing twice), a kill -9 of Redis (the streams stay open or
are cut; either way each client ends with every entry once, in order,
including those published while Redis was down), on both the named
/api/events stream and the Theater's unnamed deliberations stream."""

import socket
import threading
import time

from conftest import human, uid
from gateway_client import SSE, auth, frame_name, request, start_gateway
from harness import HarnessError, scaled, wait_until

JOEL = auth()


class ResumingClient(threading.Thread):
    """An SSE client as a browser's EventSource (with the page's retry on
    a refused stream) behaves: it reads frames as they come, and when the
    stream ends or cannot be opened it opens it again with Last-Event-ID
    set to the last id it got. `keys` are what it took in order (the value
    of `field` of each data frame), `connects` how many streams it opened."""

    def __init__(self, port, path, field, last, deadline_s=90):
        super().__init__(daemon=True)
        self.port, self.path, self.field, self.last = port, path, field, last
        self.deadline = time.monotonic() + scaled(deadline_s)
        self.keys, self.names = [], []
        self.connects, self.refusals = 0, 0
        self.last_id = None
        self.first_connected = threading.Event()
        self.done = threading.Event()
        self.error = None
        self.current = None

    def cut(self):
        """Breaks the open stream as a network would: the client reconnects."""
        try:
            self.current.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _open(self):
        hdrs = dict(JOEL)
        if self.last_id:
            hdrs["Last-Event-ID"] = self.last_id
        try:
            s = SSE(self.port, self.path, hdrs, timeout=5)
        except (OSError, EOFError, HarnessError):
            return None
        if s.status != 200:
            self.refusals += 1
            s.close()
            return None
        return s

    def _read(self, s):
        """Reads one stream until its last expected frame (True) or its
        end (False); a quiet stream is read on, not reopened."""
        while time.monotonic() < self.deadline:
            try:
                f = s.next(timeout=2)
            except HarnessError:
                continue
            except (OSError, EOFError, ValueError):
                return False
            name = frame_name(f)
            if f["id"]:
                self.last_id = f["id"]
            if name == "connected":
                self.first_connected.set()
                continue
            if name == "ping":
                continue
            self.names.append(name)
            value = f["data"].get(self.field)
            if value is not None:
                self.keys.append(value)
            if value == self.last:
                return True
        return False

    def run(self):
        try:
            while time.monotonic() < self.deadline and not self.done.is_set():
                s = self._open()
                if s is None:
                    time.sleep(0.2)
                    continue
                self.connects += 1
                self.current = s
                try:
                    if self._read(s):
                        self.done.set()
                        return
                finally:
                    s.close()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = repr(e)


def publish_texts(pub, room, texts):
    pub.publish_many([human(room, "joel", t, mid=f"{room}-{t}") for t in texts], timeout=60)


def theater_event(session, n):
    return (f"council/{session}/event",
            {"id": f"{session}:action:{n}", "type": "action", "session": session, "n": n,
             "ts": int(time.time() * 1000)})


def start_clients(gw, room, session, per_kind, last_text, last_n):
    named = [ResumingClient(gw.http_port, f"/api/events?topics=room/{room}/message", "text", last_text)
             for _ in range(per_kind)]
    theater = [ResumingClient(gw.http_port, "/api/autonomous/deliberations/live", "n", last_n)
               for _ in range(per_kind)]
    for c in named + theater:
        c.start()
    for c in named + theater:
        assert c.first_connected.wait(scaled(15)), "a client never connected"
    return named, theater


def check_clients(named, theater, texts, ns):
    for c in named + theater:
        c.join(timeout=scaled(90))
        assert c.error is None, c.error
        assert c.done.is_set(), (c.path, c.connects, c.keys[-3:])
    for c in named:
        assert c.keys == texts, (c.connects, [t for t in texts if t not in c.keys][:5],
                                 len(c.keys), len(texts))
        assert set(c.names) == {"room.message"}, c.names
    for c in theater:
        assert c.keys == ns, (c.connects, len(c.keys), len(ns))
        assert set(c.names) == {"action"}, c.names


class Run:
    """Room messages (texts m0.., on /api/events) and council actions
    (n 0.., on the deliberations stream) published in slices while
    per_kind clients of each stream read them."""

    def __init__(self, stack, gw, n_texts, n_actions, per_kind=3):
        self.pub = stack.publisher()
        self.room, self.session = uid("r"), uid("s")
        self.texts = [f"m{i}" for i in range(n_texts)]
        self.ns = list(range(n_actions))
        self.named, self.theater = start_clients(gw, self.room, self.session, per_kind,
                                                 self.texts[-1], self.ns[-1])

    def publish(self, texts_to, ns_to, texts_from=None, ns_from=None):
        publish_texts(self.pub, self.room, self.texts[texts_from:texts_to])
        self.pub.publish_many([theater_event(self.session, n) for n in self.ns[ns_from:ns_to]])

    def wait_delivered(self, texts, ns):
        wait_until(lambda: all(len(c.keys) >= texts for c in self.named) and
                   all(len(c.keys) >= ns for c in self.theater), scaled(20), "the first entries delivered")

    def check(self):
        check_clients(self.named, self.theater, self.texts, self.ns)


def test_kill9_of_the_gateway_with_streams_open(stack):
    """Streams of both kinds are open when the gateway is killed; entries
    logged before the kill, published while it is down (queued by the
    broker for its persistent session) and after it is back reach every
    client once, in order, through its reconnect with Last-Event-ID."""
    gw = start_gateway(stack, VIGIL_GATEWAY_PING_MS=1000)
    run = Run(stack, gw, 90, 60)
    run.publish(30, 20)
    run.wait_delivered(30, 20)
    gw.kill9()
    run.publish(60, 40, 30, 20)
    time.sleep(0.5)
    gw.start()
    run.publish(None, None, 60, 40)
    run.check()
    clients = run.named + run.theater
    assert all(c.connects >= 2 for c in clients), [c.connects for c in clients]


def test_kill9_of_redis_with_streams_open(stack):
    """Redis dies (kill -9) under open streams, some of them behind (a
    small queue, so the burst after the restart is read from the log by
    their own threads) and comes back with its data (AOF). Entries
    published while it was down are logged once it is back (the intake
    acknowledges nothing it has not committed); every client, whether its
    stream stayed open or was cut and resumed with Last-Event-ID, ends
    with every entry once, in order."""
    gw = start_gateway(stack, VIGIL_GATEWAY_PING_MS=1000, VIGIL_GATEWAY_CLIENT_QUEUE=8)
    run = Run(stack, gw, 120, 60)
    named, theater = run.named, run.theater
    run.publish(30, 20)
    run.wait_delivered(30, 20)
    stack.redis.kill9()
    run.publish(90, 40, 30, 20)
    # a stream resuming meanwhile is refused with 503 (the page retries it
    # every 5 s), and one client of each kind loses its connection now:
    # it keeps trying until Redis is back
    st, _, b = request(gw.http_port, "GET", "/api/events?topics=rooms&since=0", headers=JOEL)
    assert st == 503 and b["error"] == "unavailable", (st, b)
    for c in (named[0], theater[0]):
        c.cut()
    wait_until(lambda: named[0].refusals and theater[0].refusals, scaled(10), "resumes refused")
    time.sleep(1.0)
    stack.redis.restart()
    run.publish(None, None, 90, 40)
    run.check()
    assert named[0].connects >= 2 and theater[0].connects >= 2
    wait_until(gw.is_ready, scaled(10), "the gateway ready again")
