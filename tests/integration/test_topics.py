"""The wire contract in topics/ is whole and self-consistent.

- asyncapi.yaml parses, is AsyncAPI 3.0.0, and every channel/operation/message
  is wired correctly (parameters match the address, operations point at
  existing channels, actions are send/receive, every channel is marked
  implemented or planned);
- every message references an existing schema and example, and every schema
  and example is referenced;
- every schema is a valid draft-07 schema whose $refs resolve, with the
  canonical id and ts definitions;
- every example validates, also on a concrete topic built from it;
- negative cases fail: bad ids, missing required fields, bad ts, bad enums;
- schema_for_topic maps concrete topics and refuses bad ones;
- the sys-error reasons equal libshared's reject reasons;
- @asyncapi/parser accepts the document (when installed under tests/).

Run: /usr/bin/python3 -m pytest -q tests/integration/test_topics.py
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import schema_check as sc  # noqa: E402

ROOT = sc.TOPICS_DIR.parent
TOPICS = sc.TOPICS_DIR
DOC = sc.load_asyncapi()
CHANNELS = DOC.get("channels") or {}
MESSAGES = (DOC.get("components") or {}).get("messages") or {}
OPERATIONS = DOC.get("operations") or {}
SCHEMAS = sc.schema_names()
EXAMPLES = sorted(p.stem for p in (TOPICS / "examples").glob("*.json"))

REJECT_REASONS = ["oversize", "invalid_utf8", "not_json", "not_object", "missing_field",
                  "wrong_type", "bad_id", "bad_topic", "topic_mismatch", "bad_value",
                  "limit", "bad_stored_data", "too_many_keys"]
# Reasons on sys/<service>/error that are not a rejected input: a committed
# output moved to the dead-letter list by the outbox (libshared/src/outbox.c).
OUTPUT_ERROR_REASONS = ["dead_letter"]
# Reasons of one service's own refusals of an input it acknowledged:
# chat-router's message to a deleted room (services/chat-router).
SERVICE_ERROR_REASONS = ["room_deleted"]
BAD_IDS = ["", "a/b", "a+b", "a#b", "$x", "has space", "ü", "x" * 65, 42, None]


# Required fields per docs/contract.md (inputs: `id` and `ts` optional, see its
# conventions; events Vigil emits: `id` and `ts` required; retained
# snapshots: `ts` required). Pinned here so a schema cannot be loosened
# (or tightened) by accident: change both together.
CONTRACT_REQUIRED = {
    'room-economics': ['autopilot_runs', 'evaluations', 'llm_evaluations', 'messages_saved_estimate',
                       'room', 'tokens_saved_estimate', 'tokens_spent', 'tokens_spent_autopilot',
                       'tokens_spent_wake', 'ts'],
    'agent-activity': ['agent', 'source'],
    'agent-assessment': ['agent', 'category', 'confidence', 'inactivity_minutes', 'is_active',
                         'last_activity', 'reasons', 'signals', 'ts', 'validation_passed'],
    'agent-resume': ['agent', 'fsm_state', 'id', 'prompt', 'reason', 'ts'],
    'agent-status': ['agent', 'fsm_state'],
    'council-answer': ['answer', 'question_id'],
    'council-control': ['action'],
    'council-event': ['id', 'ts', 'type'],
    'council-request': ['id', 'kind', 'loop', 'query', 'session', 'ts', 'user'],
    'council-state': ['loop_count', 'session', 'status', 'ts', 'user'],
    'heartbeat-config': ['enabled', 'persona', 'room', 'user'],
    'heartbeat-run': ['consecutive_skips', 'id', 'next_in_ms', 'outcome', 'persona', 'ts'],
    'persona-command': ['cmd'],
    'persona-dormancy': ['id', 'level', 'persona', 'previous', 'reason', 'room', 'text', 'trigger', 'ts'],
    'persona-meta': ['availability', 'confidence_levels', 'expertise_domains', 'name', 'persona',
                     'role', 'rooms'],
    'persona-notify': ['depth', 'from', 'id', 'message_id', 'persona', 'room', 'ts'],
    'persona-state': ['persona', 'rooms', 'ts'],
    'persona-suggestion': ['default', 'default_after_ms', 'id', 'options', 'persona', 'room',
                           'suggest', 'text', 'trigger', 'ts'],
    'persona-wake': ['confidence', 'id', 'latency_ms', 'message_id', 'persona', 'reason', 'room',
                     'should_wake', 'tier', 'ts', 'via'],
    'planner-task': ['id', 'priority', 'title'],
    'room-autopilot': ['decisions', 'id', 'room', 'source', 'ts'],
    'room-control': ['action', 'by'],
    'room-message': ['room', 'sender', 'sender_type', 'text'],
    'room-presence': ['last_activity', 'session', 'status', 'user'],
    'room-state': ['ai_only_since', 'ai_to_human_ratio', 'humans_present', 'last_human_ts', 'paused',
                   'personas', 'room', 'ts', 'velocity_per_min'],
    'sys-error': ['detail', 'id', 'reason', 'sample', 'service', 'topic', 'ts'],
    'sys-status': ['instance', 'service', 'shard', 'state', 'ts', 'version'],
    'sys-fence': ['nonce', 'seq', 'shard'],
    'room-floor': ['granted', 'held', 'id', 'k', 'message_id', 'reasons', 'room', 'source', 'ts'],
    'persona-floor': ['granted', 'has_floor', 'id', 'k', 'message_id', 'persona', 'reason', 'room',
                      'ts'],
}


# ---------------------------------------------------------------- document

def test_asyncapi_is_yaml_3_0_0():
    raw = (TOPICS / "asyncapi.yaml").read_text(encoding="utf-8")
    doc = yaml.safe_load(raw)
    assert isinstance(doc, dict)
    assert str(doc.get("asyncapi")) == "3.0.0"
    assert doc["info"]["title"] and doc["info"]["version"]
    assert doc.get("defaultContentType") == "application/json"
    for name, server in doc["servers"].items():
        assert server["protocol"] == "mqtt", name
    assert CHANNELS and MESSAGES and OPERATIONS


@pytest.mark.parametrize("key", sorted(CHANNELS))
def test_channel_is_wired(key):
    ch = CHANNELS[key]
    address = ch["address"]
    placeholders = re.findall(r"\{([^{}]+)\}", address)
    assert sorted(placeholders) == sorted((ch.get("parameters") or {}).keys()), \
        f"{key}: parameters must match the placeholders of {address!r}"
    for p, ref in (ch.get("parameters") or {}).items():
        target = ref["$ref"].split("/")[-1]
        assert target in DOC["components"]["parameters"], f"{key}: parameter {p} -> {ref}"
    for level in address.split("/"):
        assert level and level not in ("+", "#") and not level.startswith("$"), address
    assert ch.get("x-vigil-status") in ("implemented", "planned"), \
        f"{key}: x-vigil-status must be implemented or planned"
    assert isinstance(ch.get("x-vigil-retained"), bool), key
    assert list((ch.get("messages") or {}).keys()) == [key], \
        f"{key}: one message, with the channel's key"
    assert ch["messages"][key] == {"$ref": f"#/components/messages/{key}"}


def test_channel_addresses_are_unique():
    addresses = [c["address"] for c in CHANNELS.values()]
    assert len(addresses) == len(set(addresses))


@pytest.mark.parametrize("opid", sorted(OPERATIONS))
def test_operation_is_wired(opid):
    op = OPERATIONS[opid]
    assert op["action"] in ("send", "receive")
    ref = op["channel"]["$ref"]
    assert ref.startswith("#/channels/") and ref.split("/")[-1] in CHANNELS, ref
    key = ref.split("/")[-1]
    assert op["messages"] == [{"$ref": f"#/channels/{key}/messages/{key}"}]
    mqtt = op["bindings"]["mqtt"]
    assert mqtt["qos"] == 1, "QoS 1 everywhere"
    assert mqtt["retain"] == CHANNELS[key]["x-vigil-retained"], \
        f"{opid}: retain must match the channel's x-vigil-retained"
    assert op.get("x-vigil-service"), f"{opid}: name the service"
    assert op.get("x-vigil-status") in ("implemented", "planned")


@pytest.mark.parametrize("key", sorted(CHANNELS))
def test_channel_status_follows_its_operations(key):
    statuses = {op["x-vigil-status"] for op in OPERATIONS.values()
                if op["channel"]["$ref"] == f"#/channels/{key}"}
    expected = "implemented" if "implemented" in statuses else "planned"
    assert CHANNELS[key]["x-vigil-status"] == expected


def _filter_to_address_regex(topic_filter):
    """room/+/message -> matches room/{room}/message."""
    parts = [r"\{[^{}/]+\}" if p == "+" else re.escape(p) for p in topic_filter.split("/")]
    return re.compile("^" + "/".join(parts) + "$")


def _service_sources(svc):
    return [p.read_text(encoding="utf-8", errors="replace")
            for p in sorted((ROOT / "services" / svc / "src").rglob("*.c"))]


SERVICES_WITH_CODE = sorted(p.parent.parent.name for p in (ROOT / "services").glob("*/src/main.c"))


@pytest.mark.parametrize("svc", SERVICES_WITH_CODE)
def test_receive_operations_match_the_service_subscriptions(svc):
    """The filters a service subscribes to (its *_SUBSCRIPTIONS[] table) are
    exactly its implemented receive operations."""
    src = "\n".join(_service_sources(svc))
    m = re.search(r"SUBSCRIPTIONS\[\]\s*=\s*\{(.*?)\};", src, re.S)
    if not m:
        pytest.skip(f"services/{svc}: no *_SUBSCRIPTIONS[] table found")
    filters = re.findall(r'"([^"]+)"', m.group(1))
    assert filters, svc
    subscribed = set()
    for f in filters:
        rx = _filter_to_address_regex(f)
        matches = [k for k, c in CHANNELS.items() if rx.match(c["address"])]
        assert matches, f"{svc} subscribes to {f!r}, which has no channel in asyncapi.yaml"
        subscribed.update(matches)
    documented = {op["channel"]["$ref"].split("/")[-1] for op in OPERATIONS.values()
                  if op["action"] == "receive" and op.get("x-vigil-service") == svc
                  and op["x-vigil-status"] == "implemented"}
    assert subscribed == documented, (
        f"{svc}: subscribed {sorted(subscribed)} but asyncapi.yaml documents implemented "
        f"receive operations for {sorted(documented)}")


@pytest.mark.parametrize("svc", SERVICES_WITH_CODE)
def test_topics_a_service_publishes_are_documented(svc):
    """Every topic format in the service's code ("persona/%s/dormancy") is a
    channel with an implemented send operation of that service."""
    src = "\n".join(_service_sources(svc))
    formats = set(re.findall(r'"((?:room|persona|agent|heartbeat|council|planner|sys)/[^"]*%s[^"]*)"', src))
    if not formats:
        pytest.skip(f"services/{svc}: no topic formats found")
    sends = {op["channel"]["$ref"].split("/")[-1] for op in OPERATIONS.values()
             if op["action"] == "send" and op.get("x-vigil-service") == svc
             and op["x-vigil-status"] == "implemented"}
    for fmt in formats:
        rx = _filter_to_address_regex(fmt.replace("%s", "+"))
        matches = {k for k, c in CHANNELS.items() if rx.match(c["address"])}
        assert matches, f"{svc} publishes {fmt!r}, which has no channel in asyncapi.yaml"
        assert matches & sends, f"{svc} publishes {fmt!r}: add an implemented send operation"


def test_every_channel_has_an_operation():
    used = {op["channel"]["$ref"].split("/")[-1] for op in OPERATIONS.values()}
    assert set(CHANNELS) == used


def test_implemented_channels_include_the_first_service_path():
    implemented = {CHANNELS[k]["address"] for k in CHANNELS
                   if CHANNELS[k]["x-vigil-status"] == "implemented"}
    for address in ("room/{room}/message", "persona/{persona}/dormancy", "persona/{persona}/state",
                    "sys/{service}/{instance}/status", "sys/{service}/error"):
        assert address in implemented


# ---------------------------------------------- messages, schemas, examples

@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_message_references_existing_schema_and_example(name):
    msg = MESSAGES[name]
    assert msg["name"] == name
    assert msg["contentType"] == "application/json"
    payload = msg["payload"]
    assert payload["schemaFormat"] == "application/schema+json;version=draft-07"
    assert payload["schema"] == {"$ref": f"./schemas/{name}.schema.json"}
    assert (TOPICS / "schemas" / f"{name}.schema.json").is_file()
    examples = msg["examples"]
    assert len(examples) >= 1
    for ex in examples:
        ref = ex["payload"]["$ref"]
        assert ref == f"./examples/{name}.json", ref
        assert (TOPICS / ref).is_file()


def test_every_schema_and_example_is_referenced():
    assert sorted(MESSAGES) == SCHEMAS, "schemas/ and components.messages differ"
    assert EXAMPLES == SCHEMAS, "examples/ and schemas/ differ"
    assert sorted(CHANNELS) == SCHEMAS, "every message has its own channel"
    stray = [p.name for p in (TOPICS / "schemas").iterdir() if not p.name.endswith(".schema.json")]
    assert not stray, f"files in topics/schemas that are not schemas: {stray}"


def _refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_is_valid_and_refs_resolve(name):
    schema = sc.load_schema(name)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema.get("additionalProperties", True) is True, "unknown fields must be allowed"
    assert schema.get("title") and schema.get("description")
    resolver = jsonschema.RefResolver.from_schema(schema)
    for ref in _refs(schema):
        assert ref.startswith("#/definitions/"), f"{name}: only local refs, got {ref}"
        resolver.resolve(ref)
    for prop in schema["required"]:
        assert prop in schema["properties"], f"{name}: required {prop!r} is not described"


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_uses_the_canonical_definitions(name):
    defs = sc.load_schema(name).get("definitions", {})
    if "id" in defs:
        assert defs["id"]["pattern"] == sc.ID_PATTERN and defs["id"]["type"] == "string"
    if "ts" in defs:
        assert defs["ts"] == {**defs["ts"], "type": "integer", "minimum": 0}
    for key, d in defs.items():
        if key in ("level",):
            assert d["enum"] == ["active", "mention-only", "human-only", "sleep"]


@pytest.mark.parametrize("name", SCHEMAS)
def test_example_validates(name):
    example = sc.load_example(name)
    sc.validate(name, example)
    # unknown fields are ignored by consumers, so they must validate too
    sc.validate(name, {**example, "x_added_by_a_newer_producer": {"any": [1, "thing"]}})


@pytest.mark.parametrize("key", sorted(CHANNELS))
def test_example_on_a_concrete_topic(key):
    """Build the concrete topic from the example's own fields and go through
    schema_for_topic + validate_message, as integration tests do."""
    address = CHANNELS[key]["address"]
    example = sc.load_example(key)
    fallback = {"user": "joel", "session": "s-9c1e", "instance": "host-0"}
    topic = re.sub(r"\{([^{}]+)\}",
                   lambda m: str(example.get(m.group(1), fallback.get(m.group(1), "x"))), address)
    assert sc.schema_for_topic(topic) == key
    assert sc.validate_message(topic, json.dumps(example).encode("utf-8")) == key


@pytest.mark.parametrize("name", SCHEMAS)
def test_example_texts_are_real_utf8(name):
    raw = (TOPICS / "examples" / f"{name}.json").read_bytes()
    text = raw.decode("utf-8")
    assert "\\u" not in text, "write real characters, not \\u escapes"
    assert "ðŸ" not in text and "âœ" not in text, "mis-decoded emoji (UTF-8 bytes read as cp1252/Latin-1)"


def test_dormancy_wake_example_uses_the_specified_wording():
    ex = sc.load_example("persona-dormancy")
    assert ex["text"] == "✨ Human activity detected. Waking from dormancy."
    assert sc.load_example("persona-suggestion")["text"].startswith("💤 ")


# ------------------------------------------------------------ negative cases

def test_required_fields_are_the_contracts():
    assert sorted(CONTRACT_REQUIRED) == SCHEMAS
    for name, fields in CONTRACT_REQUIRED.items():
        assert sorted(sc.load_schema(name)["required"]) == fields, name


def _fails(name, payload):
    with pytest.raises(sc.PayloadInvalid):
        sc.validate(name, payload)


@pytest.mark.parametrize("name", SCHEMAS)
def test_missing_required_field_fails(name):
    example = sc.load_example(name)
    required = sc.load_schema(name)["required"]
    assert required, f"{name} requires nothing?"
    for field in required:
        broken = {k: v for k, v in example.items() if k != field}
        with pytest.raises(sc.PayloadInvalid, match=re.escape(repr(field))):
            sc.validate(name, broken)


@pytest.mark.parametrize("name", SCHEMAS)
def test_bad_id_fails(name):
    """Every top-level field typed as an id rejects every bad id."""
    schema = sc.load_schema(name)
    example = sc.load_example(name)
    id_fields = [f for f, s in schema["properties"].items()
                 if s == {"$ref": "#/definitions/id"} or s.get("allOf") == [{"$ref": "#/definitions/id"}]]
    for field in id_fields:
        for bad in BAD_IDS:
            _fails(name, {**example, field: bad})


@pytest.mark.parametrize("name", [n for n in SCHEMAS if "ts" in sc.load_schema(n)["properties"]])
def test_bad_ts_fails(name):
    example = sc.load_example(name)
    for bad in (-1, 1.5, "1763800000000", True, [1]):
        _fails(name, {**example, "ts": bad})


def test_not_an_object_fails():
    for bad in ([], "text", 1, None):
        _fails("room-message", bad)


@pytest.mark.parametrize("field,value", [
    ("sender_type", "robot"), ("text", 42), ("mentions", "helper"), ("mentions", ["a/b"]),
    ("depth", -1), ("proactive", "yes"), ("id", "a/b"), ("id", "a+b"), ("id", "a#b"),
    ("id", ""), ("id", "x" * 129), ("id", "tab\there"), ("reply_to", "a/b"), ("about", "a/b"),
])
def test_room_message_bad_values(field, value):
    _fails("room-message", {**sc.load_example("room-message"), field: value})


def test_room_message_id_and_ts_are_optional_on_input():
    ex = sc.load_example("room-message")
    sc.validate("room-message", {k: v for k, v in ex.items() if k not in ("id", "ts")})


@pytest.mark.parametrize("name,field,value", [
    ("persona-dormancy", "level", "napping"),
    ("persona-dormancy", "previous", "awake"),
    ("persona-dormancy", "trigger", "because"),
    ("persona-state", "rooms", {"general": {"level": "active", "since": 1}}),
    ("persona-state", "rooms", {"bad/room": {"level": "active", "since": 1, "trigger": "manual"}}),
    ("persona-state", "rooms", {"general": {"level": "active", "since": 1, "trigger": "manual",
                                            "snoozed_until": -5}}),
    ("room-state", "personas", {"helper": "asleep"}),
    ("persona-suggestion", "suggest", "sleep"),
    ("persona-command", "cmd", "explode"),
    ("persona-wake", "confidence", 1.5),
    ("sys-status", "state", "up"),
    ("sys-status", "shard", "1"),
    ("sys-status", "shard", "a/b"),
    ("sys-error", "reason", "weird"),
    ("sys-error", "sample", "x" * 5000),
    ("agent-activity", "source", "GUESS"),
    ("heartbeat-run", "outcome", "maybe"),
    ("council-event", "type", "party"),
])
def test_bad_values_fail(name, field, value):
    _fails(name, {**sc.load_example(name), field: value})


def test_room_control_wake_needs_all_or_persona():
    sc.validate("room-control", {"action": "wake", "all": True, "by": "joel"})
    sc.validate("room-control", {"action": "wake", "persona": "helper", "by": "joel"})
    sc.validate("room-control", {"action": "pause", "by": "joel"})
    _fails("room-control", {"action": "wake", "by": "joel"})
    _fails("room-control", {"action": "wake", "all": False, "by": "joel"})


def test_persona_command_conditionals():
    sc.validate("persona-command", {"cmd": "awake"})
    sc.validate("persona-command", {"cmd": "dormant", "level": "sleep", "until": 1})
    _fails("persona-command", {"cmd": "dormant"})
    _fails("persona-command", {"cmd": "answer", "suggestion_id": "s-1"})
    _fails("persona-meta", {k: v for k, v in sc.load_example("persona-meta").items()
                            if k not in ("parameters", "tier")})


def test_error_message_is_clear():
    with pytest.raises(sc.PayloadInvalid) as e:
        sc.validate("persona-dormancy", {**sc.load_example("persona-dormancy"), "persona": "a/b"})
    text = str(e.value)
    assert "persona-dormancy" in text and "$.persona" in text and "a/b" in text


def test_sys_error_reasons_match_the_contract_and_libshared():
    enum = sc.load_schema("sys-error")["properties"]["reason"]["enum"]
    assert enum == REJECT_REASONS + OUTPUT_ERROR_REASONS + SERVICE_ERROR_REASONS
    header = ROOT / "libshared" / "include" / "vigil" / "json.h"
    if not header.is_file():
        pytest.skip("libshared/include/vigil/json.h not present")
    names = re.findall(r"VIGIL_REJECT_[A-Z_0-9]+,\s*/\*\s*\"([a-z_0-9]+)\"", header.read_text())
    assert names == REJECT_REASONS, "libshared's reject reasons and sys-error's enum differ"


# ------------------------------------------------------------ schema_for_topic

@pytest.mark.parametrize("topic,name", [
    ("persona/ann/dormancy", "persona-dormancy"),
    ("persona/ann/state", "persona-state"),
    ("room/general/message", "room-message"),
    ("room/dev.ops_2-x/state", "room-state"),
    ("sys/dormancy-monitor/error", "sys-error"),
    ("sys/dormancy-monitor/host-0/status", "sys-status"),
    ("planner/task", "planner-task"),
    ("council/joel/control", "council-control"),
    ("council/s-9c1e/event", "council-event"),
    ("agent/agent-7/resume", "agent-resume"),
    ("heartbeat/helper/run", "heartbeat-run"),
])
def test_schema_for_topic(topic, name):
    assert sc.schema_for_topic(topic) == name


@pytest.mark.parametrize("topic", [
    "room/$x/message", "room/a+b/message", "room//message", "room/general/unknown",
    "persona/ann", "persona/ann/dormancy/extra", "sys/dormancy-monitor/status",
    "x/y/z", "", "#", "room/+/message", "room/" + "x" * 65 + "/message",
])
def test_schema_for_topic_refuses(topic):
    with pytest.raises(sc.UnknownTopic):
        sc.schema_for_topic(topic)


def test_validate_message_checks_topic_against_payload():
    ex = sc.load_example("persona-dormancy")
    assert sc.validate_message("persona/codereview/dormancy", ex) == "persona-dormancy"
    with pytest.raises(sc.PayloadInvalid, match="disagrees with its topic"):
        sc.validate_message("persona/someone-else/dormancy", ex)
    with pytest.raises(sc.PayloadInvalid, match="not valid UTF-8"):
        sc.validate_message("persona/codereview/dormancy", b"\xff\xfe")
    with pytest.raises(sc.PayloadInvalid, match="not JSON"):
        sc.validate_message("persona/codereview/dormancy", b'{"persona":')
    status = sc.load_example("sys-status")
    with pytest.raises(sc.PayloadInvalid, match="instance"):
        sc.validate_message("sys/dormancy-monitor/host-9/status", status)


def test_empty_payload_clears_only_retained_snapshots():
    assert sc.validate_message("room/general/state", b"") == "room-state"
    assert sc.validate_message("persona/ann/state", "") == "persona-state"
    with pytest.raises(sc.PayloadInvalid, match="not a retained"):
        sc.validate_message("persona/ann/dormancy", b"")


def test_stream_reads_json_lines_with_multiline_payloads(monkeypatch, capsys):
    """`mosquitto_sub -F '%j' -t '#' | schema_check.py --stream`, as
    topics/README.md says: each message is one JSON line even when its
    payload spans lines (an example file published with -f, pretty
    printed), which `mosquitto_sub -v` would split into lines that are no
    messages. `-v` lines still work."""
    import io
    pretty = (TOPICS / "examples" / "persona-meta.json").read_text(encoding="utf-8")
    assert "\n" in pretty
    lines = [
        # what mosquitto_sub 2.0 prints with -F '%j' (payload as a string)
        json.dumps({"tst": "2026-12-02T04:11:33.029964Z+0000", "topic": "persona/helper/meta",
                    "qos": 1, "retain": 1, "payloadlen": len(pretty), "mid": 1,
                    "payload": pretty}),
        # newer mosquitto_sub may give a JSON payload as JSON
        json.dumps({"topic": "persona/helper/meta", "retain": 0,
                    "payload": json.loads(pretty)}),
        # a cleared retained snapshot: no payload
        json.dumps({"topic": "room/general/state", "retain": 1, "payloadlen": 0, "payload": None}),
        json.dumps({"topic": "persona/helper/meta", "payload": "{\"persona\": 5}"}),
        "room/general/message not json",
        "persona/helper/meta " + json.dumps(json.loads(pretty)),
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    assert sc.main(["--stream"]) == 1
    out = [o for o in capsys.readouterr().out.splitlines() if o.startswith(("ok ", "FAIL "))]
    assert [o.split()[0] for o in out] == ["ok", "ok", "ok", "FAIL", "FAIL", "ok"], out
    assert out[0].startswith("ok   persona/helper/meta (persona-meta)")
    assert out[3].startswith("FAIL persona/helper/meta")


def test_readme_lists_every_topic():
    readme = (TOPICS / "README.md").read_text(encoding="utf-8")
    for ch in CHANNELS.values():
        assert ch["address"] in readme, f"topics/README.md does not mention {ch['address']}"


# ------------------------------------------------------------ @asyncapi/parser

def test_asyncapi_parser_accepts_the_document():
    node = shutil.which("node")
    script = ROOT / "tests" / "asyncapi_validate.mjs"
    parser = ROOT / "tests" / "node_modules" / "@asyncapi" / "parser" / "package.json"
    required = os.environ.get("VIGIL_REQUIRE_ASYNCAPI_PARSER") == "1"
    missing = None
    if not node:
        missing = "node is not installed (apt-get install nodejs npm)"
    elif not parser.is_file():
        missing = ("@asyncapi/parser is not installed: run "
                   "(cd tests && npm ci --ignore-scripts --no-audit --no-fund)")
    if missing:
        if required:
            pytest.fail(missing + " [VIGIL_REQUIRE_ASYNCAPI_PARSER=1]")
        pytest.skip(missing)
    r = subprocess.run([node, str(script), str(TOPICS / "asyncapi.yaml")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "VALID:" in r.stdout, r.stdout + r.stderr


def test_asyncapi_parser_rejects_a_broken_document(tmp_path):
    """The validator can fail: a copy with a dangling schema $ref is refused."""
    node = shutil.which("node")
    parser = ROOT / "tests" / "node_modules" / "@asyncapi" / "parser" / "package.json"
    if not node or not parser.is_file():
        pytest.skip("@asyncapi/parser not installed (see test_asyncapi_parser_accepts_the_document)")
    copy_dir = tmp_path / "topics"
    shutil.copytree(TOPICS, copy_dir)
    doc = copy_dir / "asyncapi.yaml"
    doc.write_text(doc.read_text(encoding="utf-8").replace(
        "./schemas/room-state.schema.json", "./schemas/missing.schema.json"), encoding="utf-8")
    r = subprocess.run([node, str(ROOT / "tests" / "asyncapi_validate.mjs"), str(doc)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "INVALID" in r.stdout, r.stdout + r.stderr
