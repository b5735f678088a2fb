"""Out of memory never acknowledges (issue 8), with a real dormancy-monitor
process: json-c's allocations are made to fail on demand by an LD_PRELOAD
library (tests/support/preload/failalloc.c) while an input is in hand.

paho acknowledges a QoS 1 message when the message callback returns, so
running out of memory must keep the callback from returning: the service
retries after a pause while memory stays short, and when it stays short
past the bound it exits without returning (status 3); the broker then
delivers the message again to the restarted process. Either way the
input is applied exactly once and never refused."""

import json
import os

import pytest

import harness
from conftest import ai, uid

SLEEP = "@self dormant sleep"
PRELOAD = os.path.join(harness.BUILD_DIR, "tests", "libvt_failalloc.so")


def failing_env(trigger, **narrow):
    """narrow: VT_FAILALLOC_LIBRARY / VT_FAILALLOC_SIZE (failalloc.c)."""
    if not os.path.exists(PRELOAD):
        pytest.skip(f"{PRELOAD} not built")
    # ASan wants to come first in the library list; the preload forwards to
    # it, so the order check is what must be relaxed.
    env = {"LD_PRELOAD": PRELOAD, "VT_FAILALLOC_TRIGGER": trigger,
           "ASAN_OPTIONS": "detect_leaks=1:verify_asan_link_order=0"}
    env.update(narrow)
    return env


def start_failing(trigger):
    """Creates the trigger and waits until the preload has seen it."""
    for p in (trigger, trigger + ".seen"):
        if os.path.exists(p):
            os.unlink(p)
    open(trigger, "w").close()
    harness.wait_until(lambda: os.path.exists(trigger + ".seen"), 10, "json-c's allocations to fail")


def processed(stack, room, mid):
    c = stack.redis.client()
    return c.zscore(f"{stack.prefix}dormancy-monitor:ids:{room}", mid) is not None


def test_short_of_memory_the_input_waits_and_is_applied_once(stack, tmp_path):
    trigger = str(tmp_path / "fail-json-c")
    svc = stack.service(env=failing_env(trigger))
    col = stack.collector()
    pub = stack.publisher()
    tag = uid("oom")
    room, persona, mid = f"{tag}-r", f"{tag}-ann", f"{tag}-m1"
    start_failing(trigger)
    try:
        pub.publish(*ai(room, persona, SLEEP, mid=mid))
        harness.wait_until(lambda: svc.metric("vigil_out_of_memory_total") >= 2, 20,
                           "the service to run out of memory and retry")
        assert not processed(stack, room, mid), "applied while json-c could not allocate"
        assert svc.metric("vigil_inputs_in_flight") == 1
    finally:
        os.unlink(trigger)
    harness.wait_until(lambda: processed(stack, room, mid), 30, "the input applied once memory is back")
    ev = col.wait_event(f"persona/{persona}/dormancy", lambda e: e.get("level") == "sleep", timeout=20,
                        what="the dormancy event")
    assert ev.get("room") == room
    assert not col.events("sys/dormancy-monitor/error"), "an out-of-memory input was refused"
    assert "out of memory: retrying" in svc.stderr_text()
    assert svc.alive()


def test_memory_short_past_the_bound_exits_unacknowledged_and_the_broker_redelivers(stack, tmp_path):
    trigger = str(tmp_path / "fail-json-c")
    svc = stack.service(env=failing_env(trigger))
    col = stack.collector()
    pub = stack.publisher()
    tag = uid("oomx")
    room, persona, mid = f"{tag}-r", f"{tag}-bob", f"{tag}-m1"
    start_failing(trigger)
    svc.expect_exit = True
    try:
        pub.publish(*ai(room, persona, SLEEP, mid=mid))
        # 12 attempts with pauses of 0.1 s doubling up to 5 s: about 31 s
        harness.wait_until(lambda: not svc.alive(), 90, "the service to give up and exit")
    finally:
        os.unlink(trigger)
    assert svc.proc.returncode == 3, svc.stderr_text()[-2000:]
    text = svc.stderr_text()
    assert "out of memory parsing an input" in text or "out of memory routing an input" in text, text[-2000:]
    assert "the broker delivers the message again after the restart" in text
    assert not processed(stack, room, mid)
    svc.expect_exit = False
    svc.start()  # same client id: the broker still holds the unacknowledged message
    harness.wait_until(lambda: processed(stack, room, mid), 30, "the redelivered input applied")
    ev = col.wait_event(f"persona/{persona}/dormancy", lambda e: e.get("level") == "sleep", timeout=20,
                        what="the dormancy event after the restart")
    assert ev.get("room") == room
    assert len([e for e in col.events(f"persona/{persona}/dormancy") if e.get("level") == "sleep"]) == 1
    assert not col.events("sys/dormancy-monitor/error")


# heartbeat's config reader (hb_config_payload) copies `identity` with
# strdup: an identity of this length makes that copy, and no other
# allocation of heartbeat's own on the way there, one of IDENTITY_LEN + 1
# bytes (odd: no struct has that size; json-c's copy of the string is
# json-c's, left alone).
IDENTITY_LEN = 1234


def test_heartbeat_config_short_of_memory_waits_and_is_applied_once(stack, tmp_path):
    """The config reader out of memory (HB_CFG_NOMEM) is the runtime's
    out_of_memory: retried, never acknowledged, never refused; applied
    once when memory is back. Mapped to bad_value instead, the config
    would be refused on sys/heartbeat/error and never applied."""
    trigger = str(tmp_path / "fail-identity")
    svc = stack.service("heartbeat", env=failing_env(
        trigger, VT_FAILALLOC_LIBRARY=harness.service_binary("heartbeat"),
        VT_FAILALLOC_SIZE=str(IDENTITY_LEN + 1)))
    col = stack.collector(topics=("sys/heartbeat/error",))
    pub = stack.publisher()
    tag = uid("oomh")
    persona, mid = f"{tag}-hb", f"{tag}-c1"
    identity = "I am a careful helper. " * (IDENTITY_LEN // 23) + "x" * (IDENTITY_LEN % 23)
    assert len(identity) == IDENTITY_LEN
    body = {"id": mid, "persona": persona, "user": "joel", "room": f"{tag}-r", "enabled": True,
            "checklist": "CHECK-OK", "identity": identity, "ts": harness.now_ms()}
    ids = f"{stack.prefix}heartbeat:ids:{persona}"
    c = stack.redis.client()
    start_failing(trigger)
    try:
        pub.publish(f"heartbeat/{persona}/config", body)
        harness.wait_until(lambda: (svc.metric("vigil_out_of_memory_total") or 0) >= 2
                           or col.events("sys/heartbeat/error"), 20,
                           "the config reader to run out of memory and retry")
        assert not col.events("sys/heartbeat/error"), "the out-of-memory config was refused"
        assert c.zscore(ids, mid) is None, "applied while the identity could not be copied"
        assert svc.metric("vigil_inputs_in_flight") == 1
    finally:
        os.unlink(trigger)
    harness.wait_until(lambda: c.zscore(ids, mid) is not None, 30, "the config applied once memory is back")
    version, state = stack.store("heartbeat").state(persona)
    assert version == 1, (version, state)  # one commit: applied once
    assert identity in json.dumps(state)
    assert not col.events("sys/heartbeat/error"), "an out-of-memory config was refused"
    assert not svc.metric("vigil_rejected_total", reason="bad_value")
    assert "out of memory: retrying" in svc.stderr_text()
    assert svc.alive()
    c.close()
