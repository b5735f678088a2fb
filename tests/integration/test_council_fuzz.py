"""Robustness of council under mutated inputs: a fixed-seed generator
mutates the examples of its three inputs (council/{user}/control,
council/{session}/answer, room/{room}/message) with the mutators of
test_fuzz_inputs.py, while sessions really run (fake LLM, 100 ms loops).
Afterwards council is up and ready, rejected what was bad with a reason,
still runs a session, and (teardown) left no sanitizer report."""

import json
import os
import random

import harness
from conftest import uid
from council_support import FakeLLM, rules, sol
from test_fuzz_inputs import load_example, mutate_bytes, mutate_value, wait_drained

SEED = int(os.environ.get("VIGIL_FUZZ_SEED", "20261124"))
COUNT = int(os.environ.get("VIGIL_FUZZ_COUNT", "1500"))
TARGETS = [("council/{u}/control", "council-control"), ("council/{s}/answer", "council-answer"),
           ("room/{r}/message", "room-message")]


def messages(rng, count):
    users, sessions = ["fz-u1", "fz-u2", "joel"], ["fz-s1", "fz-s2", "s-9c1e"]
    for i in range(count):
        pattern, name = rng.choice(TARGETS)
        topic = pattern.format(u=rng.choice(users), s=rng.choice(sessions), r="general")
        obj = load_example(name)
        obj["id"] = f"fz-{i}"
        if name == "council-control":
            obj["action"] = rng.choice(["start", "pause", "resume", "end"])
            obj["session"] = rng.choice(sessions)
        if name == "room-message":
            obj["sender"] = rng.choice(users)
        for _ in range(rng.randint(0, 2)):
            obj = mutate_value(rng, obj)
        data = json.dumps(obj).encode() if isinstance(obj, dict) else json.dumps(obj).encode()
        if rng.random() < 0.3:
            data = mutate_bytes(rng, data)
        yield topic, data


def test_council_survives_mutated_inputs(stack, tmp_path):
    llm = FakeLLM(str(tmp_path))
    try:
        llm.control(rules=rules(sol("ask user: [p3] anything?", regex=r"loop [13579] of"),
                                sol("note: steady")))
        svc = stack.service("council", env={"VIGIL_LLM_URL": llm.url, "VIGIL_LLM_RETRIES": 0,
                                            "VIGIL_COUNCIL_LOOP_MS": 100,
                                            "VIGIL_COUNCIL_MAX_LOOPS": 6,
                                            "VIGIL_COUNCIL_MAX_DAILY": 100000})
        col = stack.collector(topics=("council/+/event", "sys/council/error"))
        pub = stack.publisher()
        rng = random.Random(SEED)
        for topic, data in messages(rng, COUNT):
            pub.publish(topic, data)
        wait_drained(svc, 180, "council done with the fuzz backlog")
        assert svc.alive() and svc.is_ready()
        assert harness.metric_value(svc.metrics(), "vigil_rejected_total") > 0
        assert col.find("council/+/event"), "no session ran during the fuzzing"
        session = uid("s")
        pub.publish("council/after-fuzz/control", {"action": "start", "session": session})
        col.wait_event(f"council/{session}/event", lambda e: e["type"] == "action", timeout=30)
        assert svc.alive() and not svc.check()
    finally:
        llm.stop()
