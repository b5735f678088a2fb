"""Robustness: every running service under a stream of mutated inputs.

dormancy-monitor, wake-evaluator, chat-router and floor-control share one broker and one
Redis. A fixed-seed generator mutates valid example payloads (topics/examples)
and publishes them, QoS 1, to every topic the services consume: flipped and
truncated bytes, wrong types, huge and negative numbers, deep nesting,
invalid UTF-8, odd ids, duplicated ids. Afterwards every service must still
be up and ready, must still process a good message, and (teardown) must
have left no sanitizer report. Bounded: a few thousand messages.
"""

import json
import os
import random

import harness
from harness import SOURCE_DIR, wait_until

SERVICES = ("dormancy-monitor", "wake-evaluator", "chat-router", "floor-control", "presence-gateway")
SEED = int(os.environ.get("VIGIL_FUZZ_SEED", "20261122"))
COUNT = int(os.environ.get("VIGIL_FUZZ_COUNT", "2500"))

# (topic pattern, example file): the inputs of the three services.
TARGETS = [
    ("room/{r}/message", "room-message"),
    ("room/{r}/presence", "room-presence"),
    ("room/{r}/control", "room-control"),
    ("room/{r}/autopilot", "room-autopilot"),
    ("persona/{p}/command", "persona-command"),
    ("persona/{p}/meta", "persona-meta"),
    ("persona/{p}/wake", "persona-wake"),
    ("persona/{p}/state", "persona-state"),
]

ODD_VALUES = [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**64, 1e308, -1e308, 0.5, "", " ", "a/b",
    "+", "#", "$x", "x" * 70, "é", "💤", "\u0000", "null", [], {}, [[[]]], {"a": {"b": {}}},
    "@self dormant sleep for 1h", "@self dormant sleep until 25:99", "@self awake",
    "@self status", "@self dormant human-only for 99999999999h", "@ann @bob @ann",
]


def load_example(name):
    with open(os.path.join(SOURCE_DIR, "topics", "examples", f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def mutate_value(rng, obj):
    """Replaces, deletes or adds one field somewhere in obj (a dict)."""
    if not isinstance(obj, dict) or not obj:
        return rng.choice(ODD_VALUES)
    key = rng.choice(list(obj))
    roll = rng.random()
    if roll < 0.45:
        obj[key] = rng.choice(ODD_VALUES)
    elif roll < 0.6:
        del obj[key]
    elif roll < 0.75 and isinstance(obj[key], dict):
        mutate_value(rng, obj[key])
    elif roll < 0.85:
        obj[rng.choice(["room", "persona", "sender", "id", "ts", "text"])] = rng.choice(ODD_VALUES)
    else:
        obj["extra"] = rng.choice(ODD_VALUES)
    return obj


def mutate_bytes(rng, data):
    """Byte-level damage: truncation, flips, invalid UTF-8, garbage."""
    roll = rng.random()
    if roll < 0.25 and data:
        return data[: rng.randrange(len(data))]
    if roll < 0.5 and data:
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if roll < 0.65:
        return data + rng.choice([b"}", b" x", b"\xff", b"\xc0\x80", b",", b"\x00"])
    if roll < 0.8:
        depth = rng.randint(20, 60)
        return b'{"a":' * depth + b"1" + b"}" * depth
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))


def fuzz_messages(rng, count):
    examples = {name: load_example(name) for _, name in TARGETS}
    rooms = ["fz-a", "fz-b", "fz-c"]
    personas = ["ann", "bob", "cy"]
    for i in range(count):
        pattern, name = rng.choice(TARGETS)
        topic = pattern.format(r=rng.choice(rooms), p=rng.choice(personas))
        obj = json.loads(json.dumps(examples[name]))
        if "room" in obj and "{r}" in pattern:
            obj["room"] = topic.split("/")[1]
        if "persona" in obj and "{p}" in pattern:
            obj["persona"] = topic.split("/")[1]
        obj["id"] = f"fz-{i}" if rng.random() < 0.9 else "fz-dup"
        obj["ts"] = harness.now_ms()
        for _ in range(rng.randint(0, 3)):
            obj = mutate_value(rng, obj)
        data = json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass") \
            if isinstance(obj, dict) else json.dumps(obj).encode()
        if rng.random() < 0.35:
            data = mutate_bytes(rng, data)
        yield topic, data



def wait_drained(svc, timeout, what):
    """Waits until svc is done with its input backlog: its input counter is
    non-zero and the same five polls in a row (0.2 s apart)."""
    last = [-1.0, 0]

    def settled():
        n = svc.metric("vigil_inputs_total")
        if n > 0 and n == last[0]:
            last[1] += 1
        else:
            last[0], last[1] = n, 0
        return last[1] >= 5

    wait_until(settled, timeout, what, interval=0.2)

def test_services_survive_mutated_inputs(stack):
    env = {"VIGIL_DORMANCY_NO_HUMAN_MS": 200, "VIGIL_DORMANCY_AI_ONLY_MS": 400,
           "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 100, "VIGIL_DORMANCY_SNOOZE_MS": 150,
           "VIGIL_AUTOPILOT_INTERVAL_MS": 300}
    services = [stack.service(name, env=env) for name in SERVICES]
    col = stack.collector(topics=("persona/+/dormancy", "sys/+/error"))
    pub = stack.publisher()
    rng = random.Random(SEED)
    sent = 0
    for topic, data in fuzz_messages(rng, COUNT):
        pub.publish(topic, data)
        sent += 1
    assert sent == COUNT

    # every service drains its backlog (its input counter stops moving),
    # stays up and ready, and rejected something with a reason
    for svc in services:
        wait_drained(svc, 180, f"{svc.name} done with the fuzz backlog")
        assert svc.alive(), f"{svc.name} died under fuzzing"
        wait_until(svc.is_ready, 30, f"{svc.name} ready after fuzzing")
        rejected = harness.metric_value(svc.metrics(), "vigil_rejected_total")
        assert rejected > 0, f"{svc.name} rejected nothing: the fuzzer sent nothing bad?"
        committed = harness.metric_value(svc.metrics(), "vigil_commits_total")
        assert committed > 0, f"{svc.name} committed nothing: the fuzzer reached no decision"
    errors = col.events("sys/+/error")
    assert errors and all(e.get("reason") for e in errors)

    # and still does its job: a sleeping persona is woken by a human message
    mark = col.mark()
    pub.publish("room/fz-ok/message", json.dumps({
        "id": "ok-1", "room": "fz-ok", "sender": "dee", "sender_type": "ai",
        "text": "@self dormant sleep"}).encode())
    col.wait_event("persona/dee/dormancy", lambda e: e.get("level") == "sleep",
                   timeout=20, since=mark)
    pub.publish("room/fz-ok/message", json.dumps({
        "id": "ok-2", "room": "fz-ok", "sender": "joel", "sender_type": "human",
        "text": "anyone there?"}).encode())
    col.wait_event("persona/dee/dormancy", lambda e: e.get("level") == "active",
                   timeout=20, since=mark)
    for svc in services:
        assert svc.alive(), f"{svc.name} died"
