"""The outbox publisher with real processes (issue 10, issue 8 item 5):

- against a broker with mosquitto's window of 20, which calls for a second
  outbox connection, behind a gate that refuses that connection's client
  id: the outbox gives it up and publishes every output on the first;

- kill -9 of dormancy-monitor while its outbox has a backlog in flight,
  against a broker as mosquitto ships it (no set_tcp_nodelay): after a
  restart every input's event arrives, with its same id, and the outbox and
  the dead-letter list end empty;
- an outbox entry that cannot be published moves to P S ":deadletter" (with
  an error event on sys/<service>/error that validates against the contract)
  instead of blocking or being deleted; `vigil deadletter list` shows it and
  `vigil deadletter replay` publishes it once fixed.
"""

import socket
import threading
import time

import harness
from chat_personas import run_vigil, vigil_ok
from conftest import ai, uid, validate_outputs
from harness import Collector, Mosquitto, Publisher, scaled

SERVICE = "dormancy-monitor"
SLEEP = "@self dormant sleep"
AWAKE = "@self awake"


def shipped_broker_conf(path):
    """The project's broker config without set_tcp_nodelay (mosquitto's
    default, false), written to path."""
    with open(harness.deploy_mosquitto_conf()) as f:
        lines = [line for line in f if not line.strip().startswith("set_tcp_nodelay")]
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def outbox_len(stack):
    c = stack.redis.client()
    try:
        return c.llen(f"{stack.prefix}{SERVICE}:outbox:0")
    finally:
        c.close()


def dead_letters(stack):
    c = stack.redis.client()
    try:
        return c.lrange(f"{stack.prefix}{SERVICE}:deadletter", 0, -1)
    finally:
        c.close()


def end_run(stack, broker, col, pub):
    """Stops a test's own clients, its services and its own broker."""
    for x in (col, pub):
        if x is not None:
            x.stop()
    for s in stack.services:
        if s.alive():
            s.terminate()
    broker.stop()


class ClientIdGate:
    """A TCP relay in front of a broker that refuses MQTT 5 CONNECTs whose
    client id ends in `refuse` (a CONNACK with Quota exceeded, 0x97) and
    relays every other connection both ways."""

    def __init__(self, to_port, refuse):
        self.to_port, self.refuse = to_port, refuse
        self.refused = []
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = self.lsock.getsockname()[1]
        self.stopping = False

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self.stopping = True
        self.lsock.close()

    @staticmethod
    def client_id(connect):
        """The client id of a whole MQTT 5 CONNECT packet, or None."""
        def varint(i):
            v, mult = 0, 1
            while True:
                b = connect[i]
                v, i, mult = v + (b & 127) * mult, i + 1, mult * 128
                if b < 128:
                    return v, i
        try:
            _, i = varint(1)
            i += 2 + int.from_bytes(connect[i:i + 2], "big") + 4  # name, level, flags, keep alive
            plen, i = varint(i)
            i += plen
            n = int.from_bytes(connect[i:i + 2], "big")
            return connect[i + 2:i + 2 + n].decode()
        except (IndexError, UnicodeDecodeError):
            return None

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        first = b""
        c.settimeout(5)
        try:
            while len(first) < 2 or len(first) < 2 + first[1]:  # CONNECTs here are short
                chunk = c.recv(4096)
                if not chunk:
                    c.close()
                    return
                first += chunk
            cid = self.client_id(first)
            if cid is None or cid.endswith(self.refuse):
                self.refused.append(cid)
                c.sendall(bytes([0x20, 0x03, 0x00, 0x97, 0x00]))
                c.close()
                return
            up = socket.create_connection(("127.0.0.1", self.to_port))
            up.sendall(first)
        except OSError:
            c.close()
            return
        c.settimeout(None)
        for a, b in ((c, up), (up, c)):
            threading.Thread(target=harness.pipe_bytes, args=(a, b), daemon=True).start()


def test_a_second_outbox_connection_the_broker_refuses_is_given_up(stack, tmp_path):
    broker = Mosquitto(str(tmp_path / "w20"), source_conf=harness.project_broker_conf(
        str(tmp_path / "w20.conf"), max_inflight=0)).start()
    gate = ClientIdGate(broker.port, "-out2").start()
    col = pub = None
    try:
        svc = stack.service(env={"VIGIL_MQTT_URL": f"mqtt://127.0.0.1:{gate.port}",
                                 "VIGIL_DORMANCY_HUMAN_WAKES": "all"})
        col = Collector(broker.port, topics=("persona/+/dormancy",)).start()
        pub = Publisher(broker.port).start()
        tag = uid("gate")
        items, ids = [], []
        for i in range(300):
            mid = f"{tag}-m{i}"
            items.append(ai(f"{tag}-r{i % 10}", f"{tag}-p{i}", SLEEP, mid=mid))
            ids.append(mid)
        pub.publish_many(items, timeout=60)

        def all_seen(c):
            return set(ids) <= {e.get("message_id") for e in c.events("persona/+/dormancy")}
        col.wait_for(all_seen, scaled(60), "an event for every input on the one connection left")
        assert gate.refused and all(c.endswith("-out2") for c in gate.refused), gate.refused
        assert svc.metric("vigil_outbox_connections") == 1
        assert "did not take connection 2" in svc.stderr_text()
        harness.wait_until(lambda: outbox_len(stack) == 0, scaled(20), "the outbox to drain")
        validate_outputs(col)
    finally:
        end_run(stack, broker, col, pub)
        gate.stop()


def test_kill9_with_outbox_in_flight_loses_nothing(stack, tmp_path):
    broker = Mosquitto(str(tmp_path / "shipped"),
                       source_conf=shipped_broker_conf(str(tmp_path / "shipped.conf"))).start()
    col = pub = None
    try:
        svc = stack.service(env={"VIGIL_MQTT_URL": broker.url, "VIGIL_DORMANCY_HUMAN_WAKES": "all"})
        col = Collector(broker.port, topics=("persona/+/dormancy",)).start()
        pub = Publisher(broker.port).start()
        tag = uid("ob")
        items, ids = [], []
        for k in range(4):
            for i in range(150):
                mid = f"{tag}-p{i}-{k}"
                items.append(ai(f"{tag}-r{i % 15}", f"{tag}-p{i}", SLEEP if k % 2 == 0 else AWAKE, mid=mid))
                ids.append(mid)

        kills = []

        def killer():
            # kill -9 while events are on their way out: some received, the
            # outbox still holding committed outputs
            def in_flight():
                n = len({e.get("message_id") for e in col.events("persona/+/dormancy")})
                return n >= 100 and outbox_len(stack) > 0
            harness.wait_until(in_flight, scaled(60), "events flowing with a non-empty outbox")
            kills.append(outbox_len(stack))
            svc.kill9()
            time.sleep(0.2)
            svc.start()

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        pub.publish_many(items, timeout=120)
        t.join(timeout=scaled(90))
        assert not t.is_alive() and kills, "the kill did not happen while the outbox was busy"

        def all_seen(c):
            return set(ids) <= {e.get("message_id") for e in c.events("persona/+/dormancy")}
        col.wait_for(all_seen, scaled(60), "an event for every input after kill -9")
        # Each input's event has one id, however often it was published.
        by_input = {}
        for e in col.events("persona/+/dormancy"):
            by_input.setdefault(e["message_id"], set()).add(e["id"])
        assert all(len(v) == 1 for v in by_input.values()), \
            [k for k, v in by_input.items() if len(v) > 1][:5]
        harness.wait_until(lambda: outbox_len(stack) == 0, scaled(20), "the outbox to drain")
        assert dead_letters(stack) == []
        validate_outputs(col)
    finally:
        end_run(stack, broker, col, pub)


def test_undecodable_entry_becomes_a_dead_letter_listed_and_replayed(stack):
    key_outbox = f"{stack.prefix}{SERVICE}:outbox:0"
    col = stack.collector(topics=("sys/dormancy-monitor/error", "dl/#", "persona/+/dormancy"))
    r = stack.redis.client()
    try:
        # Planted before the start: an entry that is not in the outbox form,
        # and a valid one behind it that must not be held up.
        r.rpush(key_outbox, b"\xffnot an outbox entry")
        r.rpush(key_outbox, b'0dl/behind\n{"n":1}')
        stack.service(env={"VIGIL_OUTBOX_RETRY_MS": "50"})
        ev = col.wait_event("sys/dormancy-monitor/error", lambda e: e.get("reason") == "dead_letter",
                            timeout=20, what="the dead-letter error event")
        assert ev["service"] == SERVICE and ev["dead_letters"] == 1, ev
        col.wait_event("dl/behind", timeout=20, what="the entry behind it published")
        harness.wait_until(lambda: r.llen(key_outbox) == 0, 20, "the outbox to drain")
        assert dead_letters(stack) == [b"\xffnot an outbox entry"]

        # A committed output the broker could not take (planted as if
        # refused), listed and replayed with the CLI.
        r.rpush(f"{stack.prefix}{SERVICE}:deadletter", b'1dl/replayed\n{"n":2}')
        out = run_vigil(stack, "deadletter", "list", SERVICE)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0].startswith("0\t(undecodable)\t"), lines
        assert lines[1] == '1\tdl/replayed (retained)\t{"n":2}', lines
        assert "2 dead letters" in out.stderr

        assert vigil_ok(stack, "deadletter", "replay", SERVICE).startswith("replayed 2 dead letters")
        assert dead_letters(stack)[-1:] != [b'1dl/replayed\n{"n":2}']
        m = col.wait_event("dl/replayed", timeout=20, what="the replayed output")
        assert m == {"n": 2}
        # The undecodable one went back to the outbox and out again as a
        # dead letter: never deleted, never blocking.
        harness.wait_until(lambda: dead_letters(stack) == [b"\xffnot an outbox entry"], 20,
                           "the undecodable entry back in the dead-letter list")
        validate_outputs(col, filters=("sys/dormancy-monitor/error",))

        bad = run_vigil(stack, "deadletter", "list", "no/such")
        assert bad.returncode == 2
        assert run_vigil(stack, "deadletter", "frobnicate", SERVICE).returncode == 2
    finally:
        r.close()


def test_dead_letter_metrics(stack):
    r = stack.redis.client()
    try:
        r.rpush(f"{stack.prefix}{SERVICE}:outbox:0", b"garbage")
        svc = stack.service()
        harness.wait_until(lambda: r.llen(f"{stack.prefix}{SERVICE}:deadletter") == 1, 20,
                           "the dead letter")

        def metrics():
            st, body, _ = harness.http_get(svc.http_port, "/metrics")
            text = body.decode() if isinstance(body, bytes) else body
            return {ln.split()[0]: float(ln.split()[1]) for ln in text.splitlines()
                    if ln and not ln.startswith("#") and len(ln.split()) == 2}
        harness.wait_until(lambda: metrics().get("vigil_outbox_dead_letters_total") == 1, 10,
                           "vigil_outbox_dead_letters_total 1")
        assert metrics().get("vigil_outbox_dead_letters") == 1
    finally:
        r.close()
