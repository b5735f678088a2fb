"""No credential ever leaves a service: not in a log line, the retained
status topic, /metrics, --help output or an error event.

wake-evaluator runs with an MQTT user and password (mosquitto with a
password_file), a Redis URL with an ACL user and a password holding '@'
and '/' (percent-encoded in the URL), and an LLM API key read from
VIGIL_LLM_API_KEY_FILE; debug logging, one LLM call (the key must reach
the endpoint as a Bearer token) and one bad input (an error event). Every
byte the service wrote or published is then searched for each secret in
every spelling it had (plain and percent-encoded).
"""

import json
import os
import sys
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import human, uid  # noqa: E402
from harness import (  # noqa: E402
    AclRedisServer,
    Collector,
    Publisher,
    SecureMosquitto,
    Service,
    StoreView,
    retained,
)
from security_support import procs  # noqa: E402,F401
from test_wake_evaluator import EMERGENCY, FakeLLM, setup_sleepers  # noqa: E402

SERVICE = "wake-evaluator"
MQTT_PW = "s3cr3t-mqtt-Zq81"
REDIS_PW = "s3cr3t-redis/Xy@77"
LLM_KEY = "s3cr3t-llm-Kx5Yt2"
SPELLINGS = (MQTT_PW, REDIS_PW, quote(REDIS_PW, safe=""), LLM_KEY, "s3cr3t")


class MiniStack:
    """What test_wake_evaluator.setup_sleepers needs of a stack."""

    def __init__(self, redis, prefix):
        self.redis, self.prefix = redis, prefix

    def store(self, name):
        return StoreView(self.redis, self.prefix, name)


def assert_clean(where, text):
    for s in SPELLINGS:
        assert s not in text, f"{s!r} found in {where}:\n{text[:2000]}"


def test_no_credential_leaves_the_service(tmp_path, procs):
    d = str(tmp_path)
    broker = SecureMosquitto(d, users={SERVICE: MQTT_PW}, anonymous=True).start()
    procs.append(broker)
    redis = AclRedisServer(d, users={"we": (REDIS_PW, "~* &* +@all")}).start()
    procs.append(redis)
    llm = FakeLLM(d)
    try:
        keyfile = tmp_path / "llm_key"
        keyfile.write_text(LLM_KEY + "\n")
        prefix = "sec:"
        env = {
            "VIGIL_MQTT_URL": broker.url,
            "VIGIL_MQTT_USER": SERVICE,
            "VIGIL_MQTT_PASSWORD": MQTT_PW,
            "VIGIL_REDIS_URL": redis.url_for("we", REDIS_PW),
            "VIGIL_REDIS_PREFIX": prefix,
            "VIGIL_LLM_URL": llm.url,
            "VIGIL_LLM_API_KEY_FILE": str(keyfile),
            "VIGIL_LLM_TIMEOUT_MS": "5000",
            "VIGIL_LLM_RETRIES": "0",
            "VIGIL_AUTOPILOT": "0",
            "VIGIL_LOG_LEVEL": "debug",
            "VIGIL_TICK_MS": "20",
        }
        assert quote(REDIS_PW, safe="") in env["VIGIL_REDIS_URL"]
        svc = Service(SERVICE, d, env)
        procs.append(svc)

        # --help with every secret in the environment
        r = svc.run_cli(["--help"])
        assert r.returncode == 0
        assert_clean("--help", (r.stdout + r.stderr).decode())

        svc.start(timeout=40)
        col = Collector(broker.port).start()
        pub = Publisher(broker.port).start()
        try:
            room = uid("sec")
            setup_sleepers(MiniStack(redis, prefix), pub, room, ["sre"])
            pub.publish(*human(room, "joel", EMERGENCY, mid="m-sec"))
            ev = col.wait_event("persona/sre/wake", timeout=20)
            assert ev["via"] == "llm", ev
            # the key from the file reached the endpoint, as a Bearer token
            headers = llm.stats()["last_request"]["headers"]
            assert headers.get("authorization") == f"Bearer {LLM_KEY}", headers

            pub.publish(f"room/{room}/message", b"not json")
            col.wait_event(f"sys/{SERVICE}/error", timeout=15)

            status = retained(broker.port, f"sys/{SERVICE}/#")
            assert status, "no retained status"
            assert_clean("the retained status", json.dumps(status))
            for m in col.snapshot():
                assert_clean(f"a message on {m.topic}", bytes(m.payload).decode("utf-8", "replace"))
        finally:
            col.stop()
            pub.stop()

        st, body, _ = svc.http("/metrics")
        assert st == 200
        assert_clean("/metrics", body if isinstance(body, str) else body.decode())
        for path in ("/healthz", "/readyz"):
            st, body, _ = svc.http(path)
            assert_clean(path, body if isinstance(body, str) else body.decode())

        svc.terminate()
        log = svc.stderr_text()
        assert "redis://we:***@" in log  # the URL is shown, its password masked
        assert_clean("the log", log)
    finally:
        llm.stop()
