"""Redis over TLS the supported way (deploy/redis-tls/): hiredis 0.14 has no
TLS, so a service connects in plain text to an stunnel client on its own
loopback, which verifies Redis' certificate and host name and shows a client
certificate to Redis' tls-port. Certificates made here with openssl; the
shipped stunnel-client.conf and redis-tls.conf are used with only their
paths, ports and host name rewritten.

- dormancy-monitor, with its own Redis ACL user, goes ready through the
  tunnel and commits a command's effects into the TLS-only Redis;
- a tunnel that trusts another CA, or expects another host name, never
  reaches Redis (the client sees the connection closed).
"""
import os
import re
import shutil
import subprocess

import pytest

import harness
from harness import HarnessError, Mosquitto, Service, free_port, wait_until

TLS_DIR = os.path.join(harness.SOURCE_DIR, "deploy", "redis-tls")

pytestmark = pytest.mark.skipif(shutil.which("stunnel4") is None and shutil.which("stunnel") is None,
                                reason="stunnel4 is not installed (scripts/install-deps installs it)")


@pytest.fixture
def pki(tmp_path):
    """harness.make_test_pki's CA, server (localhost), client and unrelated CA."""
    return harness.make_test_pki(str(tmp_path / "pki"))


def rewrite(path, repl):
    """The shipped file with `key = value` lines (or `key value` for Redis)
    replaced per repl; every other line kept."""
    out = []
    with open(path) as f:
        for line in f:
            m = re.match(r"^([A-Za-z-]+)(\s*=\s*|\s+)", line)
            if m and m.group(1) in repl:
                line = f"{m.group(1)}{m.group(2)}{repl[m.group(1)]}\n"
            out.append(line)
    return "".join(out)


class TlsRedis:
    def __init__(self, d, pki, aclfile=None):
        self.dir, self.port = d, free_port()
        conf = rewrite(os.path.join(TLS_DIR, "redis-tls.conf"), {
            "tls-port": str(self.port), "tls-cert-file": pki["server"],
            "tls-key-file": pki["server_key"], "tls-ca-cert-file": pki["ca"]})
        conf += f"bind 127.0.0.1\ndir {d}\nsave \"\"\nappendonly yes\n"
        if aclfile:
            conf += f"aclfile {aclfile}\n"
        self.conf = os.path.join(d, "redis-tls.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.log = os.path.join(d, "redis.log")
        self.proc = subprocess.Popen(["redis-server", self.conf], stdout=open(self.log, "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: harness.port_open(self.port), 15, "redis tls-port")

    def client(self, pki, **kw):
        import redis
        return redis.Redis(host="localhost", port=self.port, ssl=True, ssl_ca_certs=pki["ca"],
                           ssl_certfile=pki["client"], ssl_keyfile=pki["client_key"],
                           socket_timeout=5, **kw)

    def stop(self):
        harness._stop_process(self.proc)


class Tunnel:
    def __init__(self, d, pki, redis_port, ca="ca", host="localhost"):
        self.port = free_port()
        conf = rewrite(os.path.join(TLS_DIR, "stunnel-client.conf"), {
            "accept": f"127.0.0.1:{self.port}", "connect": f"127.0.0.1:{redis_port}",
            "CAfile": pki[ca], "checkHost": host,
            "cert": pki["client"], "key": pki["client_key"]})
        path = os.path.join(d, f"stunnel-{self.port}.conf")
        with open(path, "w") as f:
            f.write(conf)
        self.log = os.path.join(d, f"stunnel-{self.port}.log")
        exe = shutil.which("stunnel4") or shutil.which("stunnel")
        self.proc = subprocess.Popen([exe, path], stdout=open(self.log, "wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_until(lambda: harness.port_open(self.port) or self.proc.poll() is not None, 15, "stunnel")
        if self.proc.poll() is not None:
            raise HarnessError(f"stunnel exited:\n{harness.tail(self.log)}")

    def stop(self):
        harness._stop_process(self.proc)


def test_service_reaches_tls_only_redis_through_the_tunnel(tmp_path, pki):
    import redis as pyredis
    secrets = str(tmp_path / "secrets")
    subprocess.run([os.path.join(harness.SOURCE_DIR, "scripts", "secrets"), "--dir", secrets],
                   check=True, capture_output=True, timeout=60)
    r = TlsRedis(str(tmp_path), pki, aclfile=f"{secrets}/redis/users.acl")
    broker = Mosquitto(str(tmp_path)).start()
    tunnel = svc = None
    try:
        with open(f"{secrets}/passwords/admin") as f:
            admin = r.client(pki, username="admin", password=f.read().strip())
        assert admin.ping()
        with pytest.raises(pyredis.exceptions.ConnectionError):  # no plain text on the TLS port
            pyredis.Redis(host="127.0.0.1", port=r.port, socket_timeout=3).ping()
        tunnel = Tunnel(str(tmp_path), pki, r.port)
        # the service's URL points at the tunnel on its loopback
        with open(f"{secrets}/passwords/dormancy-monitor") as f:
            pw = f.read().strip()
        url_file = f"{secrets}/services/dormancy-monitor/redis-url"
        with open(url_file, "w") as f:
            f.write(f"redis://dormancy-monitor:{pw}@127.0.0.1:{tunnel.port}/0\n")
        svc = Service("dormancy-monitor", str(tmp_path), {
            "VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_PREFIX": "vigil:", "VIGIL_TICK_MS": "20",
            "VIGIL_REDIS_URL_FILE": url_file})
        svc.start(timeout=30)
        pub = harness.Publisher(broker.port).start()
        try:
            pub.publish("persona/p1/command", {"id": "c-tls-1", "cmd": "dormant", "level": "sleep",
                                               "room": "r1", "ts": harness.now_ms()})
        finally:
            pub.stop()
        wait_until(lambda: admin.exists("vigil:dormancy-monitor:state:r1") == 1, 20,
                   "the command's state committed in the TLS-only Redis")

        # a tunnel that trusts another CA, or expects another host name, is refused
        for kw, why in (({"ca": "other_ca"}, "self-signed certificate in certificate chain"),
                        ({"host": "redis.example.org"}, "rejected by cert")):
            t = Tunnel(str(tmp_path), pki, r.port, **kw)
            try:
                c = pyredis.Redis(host="127.0.0.1", port=t.port, socket_timeout=5, username="admin",
                                  password="x")
                with pytest.raises(pyredis.exceptions.ConnectionError):
                    c.ping()
            finally:
                t.stop()
            assert why in harness.tail(t.log).lower(), harness.tail(t.log)
    finally:
        if svc:
            svc.terminate()
            assert not svc.check(), svc.check()
        if tunnel:
            tunnel.stop()
        broker.stop()
        r.stop()
