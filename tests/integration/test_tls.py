"""TLS to the broker (mqtts://, paho-mqtt3as).

Certificates made with openssl for each run (harness.make_test_pki): a CA,
a server certificate for 127.0.0.1/localhost, one for a wrong host name
signed by the same CA, an unrelated CA, a client certificate. mosquitto
serves a TLS listener (harness.SecureMosquitto). With the right CA the
service becomes ready and processes an input; with the wrong CA, and with
a certificate for another host name, the handshake is refused with a clear
error and the service exits with status 78. A broker that requires client
certificates accepts one with VIGIL_MQTT_CERT_FILE / VIGIL_MQTT_KEY_FILE
and refuses a client without one, also when the broker's alert is lost to
a connection reset (TLS 1.3 refuses a missing certificate only after the
client's handshake is done).
"""

import os
import socket
import ssl
import struct
import sys
import threading
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    RedisServer,
    SecureMosquitto,
    Service,
    free_port,
    make_test_pki,
    new_client,
    scaled,
    wait_until,
)
from security_support import error_lines, expect_config_exit, procs  # noqa: E402,F401

SERVICE = "dormancy-monitor"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_test_pki(str(tmp_path_factory.mktemp("pki")))


def tls_broker(d, pki, procs, server="server", require_certificate=False):
    b = SecureMosquitto(d, anonymous=True, tls={
        "cafile": pki["ca"], "certfile": pki[server], "keyfile": pki[server + "_key"],
        "require_certificate": require_certificate}).start()
    procs.append(b)
    return b


def service(d, broker, redis, **env):
    e = {
        "VIGIL_MQTT_URL": broker.url,
        "VIGIL_REDIS_URL": redis.url,
        "VIGIL_REDIS_PREFIX": f"tls{uuid.uuid4().hex[:6]}:",
        "VIGIL_TICK_MS": "20",
    }
    e.update({k: str(v) for k, v in env.items()})
    return Service(SERVICE, d, e)


def expect_refused(svc, procs, what):
    msg = expect_config_exit(svc, procs)
    assert what in msg, msg
    return msg


class TlsClient:
    """A paho client over TLS (python's ssl), for publishing inputs."""

    def __init__(self, port, ca, cert=None, key=None):
        self.c = new_client(f"tls-pub-{uuid.uuid4().hex[:8]}")
        self.c.tls_set(ca_certs=ca, certfile=cert, keyfile=key, cert_reqs=ssl.CERT_REQUIRED)
        self.c.connect("127.0.0.1", port, keepalive=10)
        self.c.loop_start()
        self.msgs = []
        self.c.on_message = lambda c, u, m: self.msgs.append((m.topic, m.payload, m.retain))

    def stop(self):
        self.c.loop_stop()
        self.c.disconnect()


def test_right_ca_is_ready_and_processes_input(tmp_path, pki, procs):
    d = str(tmp_path)
    broker = tls_broker(d, pki, procs)
    redis = RedisServer(d).start()
    procs.append(redis)
    svc = service(d, broker, redis, VIGIL_MQTT_CA_FILE=pki["ca"])
    procs.append(svc)
    svc.start(timeout=40)

    cli = TlsClient(broker.port, pki["ca"])
    try:
        wait_until(lambda: cli.c.is_connected(), 10, "TLS test client connected")
        cli.c.subscribe("sys/#", qos=1)
        before = svc.metric("vigil_mqtt_messages_received_total") or 0
        info = cli.c.publish("room/tls-room/message", b"not json", qos=1)
        info.wait_for_publish(timeout=scaled(10))
        # Processed: received, and refused as bad input with an error event.
        wait_until(lambda: (svc.metric("vigil_mqtt_messages_received_total") or 0) > before, 20,
                   "the input received over TLS")
        wait_until(lambda: any(t == f"sys/{SERVICE}/error" for t, _, _ in cli.msgs), 20,
                   "the error event published back over TLS")
    finally:
        cli.stop()
    assert error_lines(svc) == []


@pytest.mark.parametrize("server, ca, why", [
    ("server", "other_ca", "certificate verify failed"),                # a CA we do not trust
    ("wrong_host", "ca", "certificate verify failed: IP address mismatch"),  # trusted, other host
])
def test_untrusted_broker_is_refused(tmp_path, pki, procs, server, ca, why):
    d = str(tmp_path)
    broker = tls_broker(d, pki, procs, server=server)
    redis = RedisServer(d).start()
    procs.append(redis)
    msg = expect_refused(service(d, broker, redis, VIGIL_MQTT_CA_FILE=pki[ca]), procs,
                         f"TLS handshake with 127.0.0.1:{broker.port} failed")
    assert why in msg, msg


def test_client_certificate(tmp_path, pki, procs):
    d = str(tmp_path)
    broker = tls_broker(d, pki, procs, require_certificate=True)
    redis = RedisServer(d).start()
    procs.append(redis)
    svc = service(d, broker, redis, VIGIL_MQTT_CA_FILE=pki["ca"],
                  VIGIL_MQTT_CERT_FILE=pki["client"], VIGIL_MQTT_KEY_FILE=pki["client_key"])
    procs.append(svc)
    svc.start(timeout=40)
    msg = expect_refused(service(d, broker, redis, VIGIL_MQTT_CA_FILE=pki["ca"]), procs,
                         f"TLS handshake with 127.0.0.1:{broker.port} failed")
    assert "certificate required" in msg or "handshake failure" in msg, msg


class ResettingTlsBroker:
    """A TLS 1.3 listener that asks for a client certificate and, when the
    client has none, resets the connection without an alert: what a broker
    that requires one looks like when its alert is lost (the client's
    CONNECT reached a socket it had already closed)."""

    def __init__(self, pki):
        self.port = free_port()
        self.url = f"mqtts://127.0.0.1:{self.port}"
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        self.ctx.load_cert_chain(pki["server"], pki["server_key"])
        self.ctx.load_verify_locations(pki["ca"])
        self.ctx.verify_mode = ssl.CERT_OPTIONAL
        self.ctx.num_tickets = 0
        self.sock = socket.create_server(("127.0.0.1", self.port))
        self.sock.settimeout(0.2)
        self.resets = 0
        self.done = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.done:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(5)
            try:
                tls = self.ctx.wrap_socket(conn, server_side=True)
                if not tls.getpeercert():
                    tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.resets += 1
                tls.close()
            except (OSError, ssl.SSLError):
                conn.close()

    def stop(self):
        self.done = True
        self.thread.join(5)
        self.sock.close()


def test_client_certificate_refused_without_alert(tmp_path, pki, procs):
    d = str(tmp_path)
    broker = ResettingTlsBroker(pki)
    procs.append(broker)
    redis = RedisServer(d).start()
    procs.append(redis)
    msg = expect_refused(service(d, broker, redis, VIGIL_MQTT_CA_FILE=pki["ca"]), procs,
                         f"TLS handshake with 127.0.0.1:{broker.port} failed")
    assert "certificate required" in msg and "VIGIL_MQTT_CERT_FILE" in msg, msg
    assert broker.resets >= 1


def test_tls_configuration_errors(tmp_path, pki, procs):
    d = str(tmp_path)
    redis_url = "redis://127.0.0.1:1/0"
    cases = [
        # a CA with a plain URL: no TLS would happen, so it is an error
        ({"VIGIL_MQTT_URL": "mqtt://127.0.0.1:1", "VIGIL_MQTT_CA_FILE": pki["ca"]},
         "VIGIL_MQTT_CA_FILE is set but VIGIL_MQTT_URL is not mqtts://"),
        ({"VIGIL_MQTT_URL": "mqtts://127.0.0.1:1", "VIGIL_MQTT_CERT_FILE": pki["client"]},
         "VIGIL_MQTT_CERT_FILE is set without VIGIL_MQTT_KEY_FILE"),
        ({"VIGIL_MQTT_URL": "mqtts://127.0.0.1:1", "VIGIL_MQTT_CA_FILE": d + "/missing.pem"},
         "VIGIL_MQTT_CA_FILE: cannot read"),
    ]
    for env, want in cases:
        s = Service(SERVICE, d, dict(env, VIGIL_REDIS_URL=redis_url))
        r = s.run_cli([])
        out = (r.stdout + r.stderr).decode()
        assert r.returncode == 2, out
        assert want in out, out
