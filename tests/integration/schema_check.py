"""schema_check - validate what Vigil publishes against the wire contract.

The contract lives in topics/: asyncapi.yaml names every topic (channel
address such as ``persona/{persona}/dormancy``) and its message, whose payload
is topics/schemas/<name>.schema.json (JSON Schema draft-07) with an example in
topics/examples/<name>.json. Integration tests import this module to check
every message a real service publishes:

    from schema_check import validate_message
    validate_message(msg.topic, msg.payload)   # raises PayloadInvalid

Functions:
    load_schema(name)            -> dict, e.g. load_schema("sys-error")
    validate(name, payload)      -> None, or raises PayloadInvalid listing
                                    every violation with its JSON path
    schema_for_topic(topic)      -> schema name for a concrete topic, e.g.
                                    "persona/ann/dormancy" -> "persona-dormancy";
                                    raises UnknownTopic if no channel matches
    validate_message(topic, payload)
                                 -> schema_for_topic + validate, plus: the
                                    payload's id fields named like the
                                    topic's parameters (room, persona, agent,
                                    service, instance, session) equal the
                                    topic levels when present. payload may be
                                    bytes/str (strict UTF-8 JSON) or a dict;
                                    an empty payload is accepted only on a
                                    retained channel (it clears the snapshot).

Needs python3-jsonschema and python3-yaml (Debian packages; run with
/usr/bin/python3). The topics folder is found next to this file
(../../topics) unless VIGIL_SOURCE_DIR is set.
"""
from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import jsonschema
import yaml

__all__ = [
    "PayloadInvalid", "UnknownTopic", "TOPICS_DIR", "ID_PATTERN",
    "load_schema", "load_example", "load_asyncapi", "schema_names", "channels",
    "validate", "schema_for_topic", "validate_message", "is_retained_topic",
]

ID_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
_ID_RE = re.compile(ID_PATTERN)


def _topics_dir() -> Path:
    src = os.environ.get("VIGIL_SOURCE_DIR")
    if src:
        return Path(src) / "topics"
    return Path(__file__).resolve().parents[2] / "topics"


TOPICS_DIR = _topics_dir()
SCHEMA_DIR = TOPICS_DIR / "schemas"
EXAMPLE_DIR = TOPICS_DIR / "examples"
ASYNCAPI_FILE = TOPICS_DIR / "asyncapi.yaml"


class PayloadInvalid(AssertionError):
    """A payload does not satisfy its schema (or its topic)."""


class UnknownTopic(LookupError):
    """No channel of asyncapi.yaml matches a concrete topic."""


def schema_names() -> List[str]:
    """Every schema name under topics/schemas, sorted."""
    return sorted(p.name[: -len(".schema.json")] for p in SCHEMA_DIR.glob("*.schema.json"))


@functools.lru_cache(maxsize=None)
def _load_schema_cached(name: str) -> str:
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no schema named {name!r}: {path} does not exist "
            f"(known: {', '.join(schema_names())})")
    return path.read_text(encoding="utf-8")


def load_schema(name: str) -> Dict[str, Any]:
    """The parsed schema topics/schemas/<name>.schema.json (a fresh copy)."""
    return json.loads(_load_schema_cached(name))


def load_example(name: str) -> Dict[str, Any]:
    """The example payload topics/examples/<name>.json."""
    return json.loads((EXAMPLE_DIR / f"{name}.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _validator(name: str) -> jsonschema.Draft7Validator:
    schema = load_schema(name)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def _path(error: jsonschema.ValidationError) -> str:
    p = "$"
    for part in error.absolute_path:
        p += f"[{part}]" if isinstance(part, int) else f".{part}"
    return p


def _describe(error: jsonschema.ValidationError) -> str:
    # anyOf/allOf wrap the real cause; show the deepest messages too.
    msg = f"{_path(error)}: {error.message}"
    causes = sorted({f"{_path(c)}: {c.message}" for c in (error.context or [])})
    if causes:
        msg += " (" + "; ".join(causes[:4]) + ")"
    return msg


def validate(name: str, payload: Any) -> None:
    """Raises PayloadInvalid naming the schema and every violation."""
    errors = sorted(_validator(name).iter_errors(payload), key=lambda e: list(e.absolute_path))
    if errors:
        shown = json.dumps(payload, ensure_ascii=False)
        if len(shown) > 300:
            shown = shown[:300] + "..."
        lines = "\n  ".join(_describe(e) for e in errors)
        raise PayloadInvalid(
            f"payload does not match schema {name!r} "
            f"(topics/schemas/{name}.schema.json):\n  {lines}\npayload: {shown}")


@functools.lru_cache(maxsize=None)
def _asyncapi_text() -> str:
    return ASYNCAPI_FILE.read_text(encoding="utf-8")


def load_asyncapi() -> Dict[str, Any]:
    """The parsed topics/asyncapi.yaml (a fresh copy)."""
    return yaml.safe_load(_asyncapi_text())


def _message_name_of_channel(doc: Dict[str, Any], key: str, channel: Dict[str, Any]) -> str:
    msgs = channel.get("messages") or {}
    if len(msgs) != 1:
        raise ValueError(f"channel {key!r} must carry exactly one message, has {len(msgs)}")
    (msg,) = msgs.values()
    ref = msg.get("$ref", "")
    prefix = "#/components/messages/"
    if not ref.startswith(prefix):
        raise ValueError(f"channel {key!r}: message must be a $ref to {prefix}<name>, got {ref!r}")
    name = ref[len(prefix):]
    payload = doc["components"]["messages"][name]["payload"]
    schema_ref = payload.get("schema", payload).get("$ref", "")
    m = re.fullmatch(r"\./schemas/([a-z0-9-]+)\.schema\.json", schema_ref)
    if not m:
        raise ValueError(f"message {name!r}: payload must $ref ./schemas/<name>.schema.json, got {schema_ref!r}")
    return m.group(1)


@functools.lru_cache(maxsize=None)
def _channel_table() -> Tuple[Tuple[str, str, Tuple[str, ...], "re.Pattern[str]", str, bool], ...]:
    doc = load_asyncapi()
    table = []
    for key, ch in (doc.get("channels") or {}).items():
        address = ch["address"]
        params = tuple(re.findall(r"\{([^{}/]+)\}", address))
        rx = "^" + "/".join(
            "([^/]+)" if re.fullmatch(r"\{[^{}/]+\}", level) else re.escape(level)
            for level in address.split("/")) + "$"
        table.append((key, address, params, re.compile(rx), _message_name_of_channel(doc, key, ch),
                      bool(ch.get("x-vigil-retained"))))
    return tuple(table)


def channels() -> List[Dict[str, Any]]:
    """[{key, address, params, schema, retained}] for every channel of asyncapi.yaml."""
    return [{"key": k, "address": a, "params": list(p), "schema": s, "retained": r}
            for k, a, p, _, s, r in _channel_table()]


def _match(topic: str) -> Tuple[str, Dict[str, str]]:
    for key, address, params, rx, schema, _ in _channel_table():
        m = rx.match(topic)
        if not m:
            continue
        values = dict(zip(params, m.groups()))
        bad = {p: v for p, v in values.items() if not _ID_RE.match(v)}
        if bad:
            raise UnknownTopic(
                f"topic {topic!r} has the shape of {address!r} but "
                + ", ".join(f"{{{p}}}={v!r}" for p, v in bad.items())
                + f" is not an id ({ID_PATTERN})")
        return schema, values
    raise UnknownTopic(f"no channel in {ASYNCAPI_FILE} matches topic {topic!r}")


def schema_for_topic(topic: str) -> str:
    """Schema name for a concrete topic, e.g. 'sys/dormancy-monitor/host-0/status'
    -> 'sys-status'. Raises UnknownTopic for an unknown shape or a level
    that is not a valid id."""
    return _match(topic)[0]


def _decode(payload: Union[bytes, bytearray, str, Dict[str, Any]]) -> Any:
    if isinstance(payload, (bytes, bytearray)):
        try:
            payload = bytes(payload).decode("utf-8", errors="strict")
        except UnicodeDecodeError as e:
            raise PayloadInvalid(f"payload is not valid UTF-8: {e}") from None
    if isinstance(payload, str):
        try:
            return json.loads(payload)
        except json.JSONDecodeError as e:
            raise PayloadInvalid(f"payload is not JSON: {e}: {payload[:200]!r}") from None
    return payload


def is_retained_topic(topic: str) -> bool:
    """True when the topic's channel carries retained snapshots."""
    schema, _ = _match(topic)
    return any(s == schema and r for _, _, _, _, s, r in _channel_table())


def validate_message(topic: str, payload: Union[bytes, bytearray, str, Dict[str, Any]]) -> str:
    """Validates one published message (topic + payload) against the contract.
    Returns the schema name. Raises UnknownTopic or PayloadInvalid. An empty
    payload is valid only on a retained channel: it clears the snapshot."""
    schema, values = _match(topic)
    if isinstance(payload, (bytes, bytearray, str)) and len(payload) == 0:
        if is_retained_topic(topic):
            return schema
        raise PayloadInvalid(f"empty payload on {topic!r}, which is not a retained snapshot topic")
    obj = _decode(payload)
    validate(schema, obj)
    mismatched = [f"{p}={obj[p]!r} but the topic says {v!r}"
                  for p, v in values.items() if isinstance(obj, dict) and p in obj and obj[p] != v]
    if mismatched:
        raise PayloadInvalid(f"payload on {topic!r} disagrees with its topic: " + "; ".join(mismatched))
    return schema


def _stream_line(line: str) -> Tuple[str, Union[str, Dict[str, Any]]]:
    """One line of --stream -> (topic, payload). A line that is a JSON
    object with "topic" is mosquitto_sub's `-F '%j'` form, which keeps a
    payload spanning lines (a pretty-printed example published with -f) on
    one line: its "payload" is the payload as a string, or as JSON
    (`%J`), null when empty. Any other line is `-v`'s 'topic payload'."""
    line = line.rstrip("\n")
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("topic"), str):
            p = obj.get("payload")
            if p is None:
                return obj["topic"], ""
            return obj["topic"], p if isinstance(p, str) else json.dumps(p)
    topic, _, body = line.partition(" ")
    return topic, body


def main(argv: Optional[List[str]] = None) -> int:
    """CLI: schema_check.py TOPIC [PAYLOAD|-]  (validate one message), or
    `mosquitto_sub -F '%j' -t '#' | schema_check.py --stream` (one message a
    line; `mosquitto_sub -v` lines, 'topic payload', are read too, but -v
    splits a payload that spans lines)."""
    import sys
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--stream":
        bad = 0
        for line in sys.stdin:
            if not line.strip():
                continue
            topic, body = _stream_line(line)
            try:
                print(f"ok   {topic} ({validate_message(topic, body)})")
            except (UnknownTopic, PayloadInvalid) as e:
                bad += 1
                print(f"FAIL {topic}: {e}")
        return 1 if bad else 0
    if len(args) not in (1, 2):
        print(main.__doc__)
        return 2
    body = args[1] if len(args) == 2 and args[1] != "-" else sys.stdin.read()
    try:
        print(validate_message(args[0], body))
    except (UnknownTopic, PayloadInvalid) as e:
        print(e)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
