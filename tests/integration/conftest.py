"""pytest fixtures for the integration tests: a private redis-server and
mosquitto per test, service processes, an MQTT collector and publisher.

Run one file by hand (from the repository root, after scripts/build asan):
    VIGIL_BUILD_DIR=build/asan /usr/bin/python3 -m pytest -q tests/integration/test_platform.py
"""

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import (  # noqa: E402
    Collector,
    HarnessError,
    Mosquitto,
    Publisher,
    RedisServer,
    Service,
    StoreView,
)

SERVICE = "dormancy-monitor"

# Environment every test service gets unless the test overrides it: fast
# timers, and thresholds far away so the timed rules stay out of the way of
# tests that are not about them.
DEFAULT_SERVICE_ENV = {
    "VIGIL_TICK_MS": "20",
    "VIGIL_LOG_LEVEL": "info",
    "VIGIL_TIMER_LEASE_MS": "2000",
}


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    if rep.failed and getattr(item, "module", None) is not None:
        item.module._vigil_failed = True  # for module-scoped stacks' logs


def require_binary(name=SERVICE):
    exe = harness.service_binary(name)
    if not os.path.exists(exe):
        pytest.fail(f"{exe} does not exist: build it first (scripts/build asan) or set VIGIL_BUILD_DIR")
    return exe


class Stack:
    """A broker, a Redis and the processes of one test."""

    def __init__(self, tmp_path, request, appendfsync="always"):
        self.dir = str(tmp_path)
        self.request = request
        self.services = []
        self.clients = []
        self.prefix = f"t{uuid.uuid4().hex[:8]}:"
        self.redis = RedisServer(self.dir, appendfsync=appendfsync).start()
        try:
            self.broker = Mosquitto(self.dir).start()
        except BaseException:
            self.redis.stop()
            raise

    # -- factories ----------------------------------------------------------

    def service_env(self, **overrides):
        env = dict(DEFAULT_SERVICE_ENV)
        env.update({
            "VIGIL_MQTT_URL": self.broker.url,
            "VIGIL_REDIS_URL": self.redis.url,
            "VIGIL_REDIS_PREFIX": self.prefix,
        })
        env.update({k: str(v) for k, v in overrides.items()})
        return env

    def service(self, name=SERVICE, start=True, instance=None, env=None, timeout=20):
        """A service process wired to this stack. env: extra VIGIL_* vars."""
        require_binary(name)
        svc = Service(name, self.dir, self.service_env(**(env or {})), instance=instance)
        self.services.append(svc)
        if start:
            svc.start(timeout=timeout)
        return svc

    def collector(self, topics=("#",), persistent=True):
        c = Collector(self.broker.port, topics=topics, persistent=persistent).start()
        self.clients.append(c)
        return c

    def publisher(self, persistent=False):
        p = Publisher(self.broker.port, persistent=persistent).start()
        self.clients.append(p)
        return p

    def store(self, name=SERVICE):
        return StoreView(self.redis, self.prefix, name)

    # -- teardown -----------------------------------------------------------

    def close(self):
        problems = []
        node = self.request.node
        failed = any(getattr(node, f"rep_{w}", None) is not None and getattr(node, f"rep_{w}").failed
                     for w in ("setup", "call")) or getattr(getattr(node, "obj", None), "_vigil_failed", False)
        for svc in self.services:
            try:
                if svc.alive():
                    svc.terminate(timeout=15)
            except HarnessError as e:
                problems.append(str(e))
            problems += svc.check()
        for c in self.clients:
            try:
                c.stop()
            except Exception:  # noqa: BLE001
                pass
        if failed or problems:
            for svc in self.services:
                for path, rc, how in svc.runs:
                    print(f"\n--- {svc.name} [{svc.instance}] run {path} ended: {how} rc={rc} ---")
                    print(harness.tail(path, 80))
            print(f"\n--- mosquitto log ---\n{harness.tail(self.broker.log, 30)}")
            print(f"\n--- redis log ---\n{harness.tail(self.redis.log, 15)}")
        self.broker.stop()
        self.redis.stop()
        if problems:
            pytest.fail("service problems at teardown:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture
def stack(tmp_path, request):
    """A broker, a Redis and the processes of one test."""
    s = Stack(tmp_path, request)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def fake_llm(tmp_path):
    """tests/support/fake_llm.py (fake_servers.FakeLLM) on a free port for one test."""
    from fake_servers import FakeLLM, running
    with running(FakeLLM, tmp_path) as f:
        yield f


@pytest.fixture(scope="module")
def module_stack(tmp_path_factory, request):
    """One broker and Redis shared by the tests of a module (for many small
    cases against one long-running service)."""
    s = Stack(tmp_path_factory.mktemp("stack"), request)
    try:
        yield s
    finally:
        s.close()


# --------------------------------------------------------------------------
# Payload helpers shared by the test files


def uid(prefix="m"):
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def room_message(room, sender, text, sender_type="ai", mid=None, **extra):
    msg = {"id": mid or uid(), "room": room, "sender": sender, "sender_type": sender_type,
           "text": text, "ts": harness.now_ms()}
    msg.update(extra)
    return f"room/{room}/message", msg


def human(room, user, text, mid=None, **extra):
    return room_message(room, user, text, "human", mid, **extra)


def ai(room, persona, text, mid=None, **extra):
    return room_message(room, persona, text, "ai", mid, **extra)


def command(persona, cmd, cid=None, **fields):
    body = {"id": cid or uid("c"), "cmd": cmd, "ts": harness.now_ms()}
    body.update(fields)
    return f"persona/{persona}/command", body


def dormancy_events(col, persona="+", pred=None, since=0):
    return col.events(f"persona/{persona}/dormancy", pred, since)


def wake_levels(stack, room):
    """{persona: level} as wake-evaluator holds them in room's record (its
    Redis state, learnt from the retained persona/{p}/state): the levels its
    next decision in the room reads. Tests wait on it instead of guessing
    how long the service takes to read the states."""
    _, st = stack.store("wake-evaluator").state(room)
    return {p["id"]: p.get("l") for p in (st or {}).get("p", [])}


# --------------------------------------------------------------------------
# Schema validation of what the services publish

OUTPUT_FILTERS = (
    "persona/+/dormancy", "persona/+/state", "persona/+/suggestion", "persona/+/wake",
    "persona/+/notify", "room/+/state", "room/+/autopilot", "sys/#",
)


def validate_outputs(col, filters=OUTPUT_FILTERS):
    """Validates every collected message on an output topic against its
    JSON Schema and topic (schema_check.validate_message, from the topics/
    contract). Returns the count validated."""
    import schema_check  # tests/integration/schema_check.py

    n = 0
    errors = []
    for m in col.snapshot():
        if not any(harness.topic_matches(f, m.topic) for f in filters):
            continue
        try:
            schema_check.validate_message(m.topic, m.payload)
        except schema_check.UnknownTopic as e:
            errors.append(f"{m.topic}: no schema for this topic ({e})")
        except Exception as e:  # noqa: BLE001 - PayloadInvalid, or not JSON
            errors.append(f"{m.topic}: {e}\n    payload: {m.payload[:400]!r}")
        n += 1
    if errors:
        raise AssertionError(f"{len(errors)} published message(s) fail their schema:\n  " + "\n  ".join(errors[:20]))
    return n
