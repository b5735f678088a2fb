"""Robustness of stall-resumer under a stream of mutated inputs (the
generator of test_fuzz_inputs.py, fixed seed) on the three topics it
consumes, with scans, resume jobs and claims running meanwhile (short
category limits): afterwards it is up and ready, rejected bad input with
reasons, still assesses a good signal, and (teardown) left no sanitizer
report."""

import json
import os
import random

import harness
from harness import wait_until
from test_fuzz_inputs import load_example, mutate_bytes, mutate_value, wait_drained

SEED = int(os.environ.get("VIGIL_FUZZ_SEED", "20261124"))
COUNT = int(os.environ.get("VIGIL_FUZZ_COUNT", "1500"))
TARGETS = [("agent/{a}/activity", "agent-activity"), ("agent/{a}/status", "agent-status"),
           ("planner/task", "planner-task")]


def messages(rng, count):
    examples = {name: load_example(name) for _, name in TARGETS}
    agents = ["fz-a", "fz-b", "fz-c", "fz-d"]
    for i in range(count):
        pattern, name = rng.choice(TARGETS)
        agent = rng.choice(agents)
        topic = pattern.format(a=agent)
        obj = json.loads(json.dumps(examples[name]))
        if "agent" in obj and "{a}" in pattern:
            obj["agent"] = agent
        obj["id"] = f"fz-{i}" if rng.random() < 0.9 else "fz-dup"
        obj["ts"] = harness.now_ms() - rng.choice([0, 60_000, 3_600_000, 13 * 3_600_000])
        for _ in range(rng.randint(0, 3)):
            obj = mutate_value(rng, obj)
            if isinstance(obj, dict) and rng.random() < 0.3:
                obj[rng.choice(["source", "fsm_state", "priority", "title", "in_tool", "detail",
                                "tasks", "agent"])] = rng.choice([None, 1, -1, "x", "", [], {}, True])
        data = json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass") \
            if isinstance(obj, dict) else json.dumps(obj).encode()
        if rng.random() < 0.35:
            data = mutate_bytes(rng, data)
        yield topic, data


def test_stall_resumer_survives_mutated_inputs(stack):
    svc = stack.service("stall-resumer", env={"VIGIL_STALL_SCAN_MS": 200,
                                              "VIGIL_STALL_AUTORESUME_MS": 10_000,
                                              "VIGIL_STALL_CRITICAL_MS": 5_000,
                                              "VIGIL_STALL_WARNING_MS": 1_000,
                                              "VIGIL_STALL_RESUME_INTERVAL_MS": 500})
    col = stack.collector(topics=("agent/+/assessment", "agent/+/resume"))
    pub = stack.publisher()
    rng = random.Random(SEED)
    for topic, data in messages(rng, COUNT):
        pub.publish(topic, data)
    wait_drained(svc, 180, "stall-resumer done with the fuzz backlog")
    assert svc.alive()
    wait_until(svc.is_ready, 30, "ready after fuzzing")
    assert svc.metric("vigil_rejected_total") > 0
    assert svc.metric("vigil_stall_signals_total", result="added") > 0
    agent = "fz-after"
    pub.publish(f"agent/{agent}/activity", {"agent": agent, "source": "GIT_COMMIT", "ts": harness.now_ms()})
    col.wait_event(f"agent/{agent}/assessment", lambda a: a["confidence"] == 0.7, timeout=20)
