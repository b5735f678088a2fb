"""The generated ACLs (scripts/vigil_acl.py) against the contract and the
code, without a broker: every implemented operation is granted, nothing
else is (beyond the listed extras), what each service's code subscribes to
and publishes is covered, the CLI's topics too, the topic prefix reaches
every rule, and each Redis user has its own key prefix and every command
its code (and libshared's, and the Lua scripts') calls."""
import glob
import os
import re
import subprocess
import sys

import harness

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, "scripts"))
import vigil_acl  # noqa: E402

ROOT = harness.SOURCE_DIR


def src(*parts):
    out = ""
    for pattern in parts:
        for p in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            with open(p, errors="replace") as f:
                out += f.read() + "\n"
    return out


def grants(rules, access, topic):
    """Does a (access, filter) list let `access` (read/write) on topic (a
    filter itself: + stands for any one level)?"""
    import paho.mqtt.client as mqtt

    for a, f in rules:
        if a not in (access, "readwrite"):
            continue
        if f == topic or mqtt.topic_matches_sub(f, topic.replace("+", "x-any")):
            return True
    return False


def code_topics(text):
    """(subscriptions, published) topic filters in C source: the string
    arrays handed to the broker (X_SUBSCRIPTIONS[], SUBS[], subs[]) and
    snprintf'd topics ("room/%s/state" -> room/+/state)."""
    defines = dict(re.findall(r'#define (\w+) "([^"]*)"', text))
    for name, value in defines.items():
        text = text.replace(f'" {name} "', value)  # "sys/" DORMANCY_SERVICE "/error"
    subs = set()
    for arr in re.findall(r"(?:SUBSCRIPTIONS|SUBS|subs)\[\]\s*=\s*\{([^}]*)\}", text):
        subs |= set(re.findall(r'"([^"]+)"', arr))
    pubs = set()
    for m in re.finditer(r'snprintf\(\s*([\w.>-]+)\s*,[^,]*,\s*"([a-z]+/%s/[a-z]+)"(?:\s*,\s*([\w.>-]+)\))?',
                         text):
        # "sys/%s/error", CHAT_SERVICE: the constant's value, else any level
        level = defines.get(m.group(3) or "", "+")
        (pubs if "topic" in m.group(1) else subs).add(m.group(2).replace("%s", level))
    return subs, pubs


def test_every_implemented_operation_is_granted_and_nothing_else():
    doc = vigil_acl.load_contract()
    rules = vigil_acl.mqtt_rules(doc)
    every = [(a, vigil_acl.topic_filter(ch)) for a, ch in vigil_acl.contract_rules(doc)["every service"]]
    assert every, "the contract's `every service` operations (sys status and error)"
    expected = {}
    for name, op in doc["operations"].items():
        svc = op["x-vigil-service"]
        chan = doc["channels"][op["channel"]["$ref"].split("/")[-1]]
        access = {"receive": "read", "send": "write"}[op["action"]]
        address = chan["address"]
        if access == "write":  # a service publishes under its own name only
            address = address.replace("{service}", svc)
        f = vigil_acl.topic_filter(address)
        if svc == "every service":
            continue
        if op.get("x-vigil-status") == "implemented":
            assert grants(rules[svc], access, f), f"{name}: {svc} may not {access} {f}"
            expected.setdefault(svc, set()).add((access, f))
        else:
            assert not grants(rules[svc], access, f), f"{name} is {op.get('x-vigil-status')}: granted anyway"
    for svc in vigil_acl.services(doc):
        own = {("write", f"sys/{svc}/error"), ("write", f"sys/{svc}/+/status")}
        own |= {(a, vigil_acl.topic_filter(addr.replace("{service}", svc)))
                for a, addr in vigil_acl.contract_rules(doc)["every service"]}
        for access, f in rules[svc]:
            for a in (["read", "write"] if access == "readwrite" else [access]):
                assert (a, f) in expected[svc] | own, f"{svc}: {a} {f} is granted but no operation names it"
        # sys/<service>/...: the one name it may publish under, so it
        # cannot send error events or status as another service
        for access, f in rules[svc]:
            if access != "read" and f.startswith("sys/"):
                assert f.split("/")[1] == svc, f"{svc} may publish {f}: as another service"
    # every service under services/ has a user
    assert sorted(vigil_acl.services(doc)) == sorted(os.listdir(os.path.join(ROOT, "services")))


def test_acl_covers_what_each_service_subscribes_to_and_publishes():
    rules = vigil_acl.mqtt_rules()
    for svc in vigil_acl.services():
        subs, pubs = code_topics(src(f"services/{svc}/src/**/*.h", f"services/{svc}/src/**/*.c"))
        assert subs, f"{svc}: no subscription found in its source (the pattern is stale)"
        for s in subs:
            assert grants(rules[svc], "read", s), f"{svc} subscribes to {s}: not in its ACL"
        for p in pubs:
            assert grants(rules[svc], "write", p), f"{svc} publishes {p}: not in its ACL"
    cli_subs, cli_pubs = set(), set()
    for path in glob.glob(os.path.join(ROOT, "cli", "src", "*.c")):
        text = src(os.path.relpath(path, ROOT))
        subs, pubs = code_topics(text)
        cli_subs |= subs
        # a topic variable there is published only where the file publishes
        (cli_pubs if "cli_publish(" in text else cli_subs).update(pubs)
    assert {"room/+/control", "persona/+/command", "room/+/message"} <= cli_pubs
    for s in cli_subs:
        assert grants(rules[vigil_acl.CLI_USER], "read", s), f"vigil subscribes to {s}: not in its ACL"
    for p in cli_pubs:
        assert grants(rules[vigil_acl.CLI_USER], "write", p), f"vigil publishes {p}: not in its ACL"


def test_prefix_reaches_every_rule():
    text = vigil_acl.mosquitto_acl("tenant-a")
    assert vigil_acl.mosquitto_acl("tenant-a/") == text
    topics = [line.split(None, 2)[2] for line in text.splitlines() if line.startswith("topic ")]
    assert topics
    assert all(t.startswith("tenant-a/") or t.startswith("$SYS/") for t in topics), topics
    assert "topic readwrite tenant-a/#" in text  # admin stays inside the prefix
    out = subprocess.run([os.path.join(ROOT, "scripts", "acl"), "--prefix", "tenant-a"], capture_output=True,
                         text=True, check=True).stdout
    assert out == text


def redis_commands(text):
    """Redis command names a C or Lua source calls."""
    known = set(c for c in re.findall(r"\b[A-Z]{3,}\b", text))
    lua = set(c.upper() for c in re.findall(r"redis\.p?call\('([A-Za-z]+)'", text))
    # a command a script builds as a table first ({'XCLAIM', ...}, then
    # redis.call(unpack(t)))
    lua |= set(c.upper() for c in re.findall(r"\{'([A-Za-z]+)',", text))
    c_calls = set(re.findall(r'"([A-Z]{3,})[ "]', text))
    return (known & c_calls) | lua


REDIS_COMMAND_NAMES = set("""
PING SELECT EVALSHA EVAL SCRIPT GET SET EXISTS DEL TYPE SCAN HGET HMGET HGETALL HSET HSETNX HDEL HKEYS
LINDEX LLEN LRANGE LTRIM LPOP RPUSH LPUSH SADD SREM SMEMBERS SCARD SISMEMBER ZADD ZREM ZCARD ZRANGE
ZRANGEBYSCORE ZREMRANGEBYRANK ZSCAN ZSCORE XADD XTRIM XACK XAUTOCLAIM XDEL XGROUP XRANGE XREVRANGE
XREAD XREADGROUP XLEN XINFO XPENDING XCLAIM EXPIRE PEXPIRE INCR INCRBY HINCRBY MULTI EXEC KEYS FLUSHDB
FLUSHALL INFO CLIENT RENAME UNLINK MGET MSET GETDEL SETNX SPOP SMOVE RPOP BLPOP BRPOP LMOVE ZPOPMIN
ZREMRANGEBYSCORE ZREMRANGEBYLEX ZCOUNT ZREVRANGE ZINCRBY ZRANGESTORE SETEX PSETEX GETSET HLEN HEXISTS LREM LSET
RPOPLPUSH PTTL TTL PERSIST PEXPIREAT EXPIREAT TIME
""".split())


def test_redis_users_have_their_prefix_and_the_commands_their_code_calls():
    rules = vigil_acl.redis_rules("vigil:")
    shared = redis_commands(src("libshared/src/*.c", "libshared/src/*.h")) & REDIS_COMMAND_NAMES
    assert {"EVALSHA", "XREADGROUP", "HSET"} <= shared
    for svc in vigil_acl.services():
        keys, cmds = rules[svc]
        granted = {c.split("|")[0].upper() for c in cmds}
        used = (redis_commands(src(f"services/{svc}/src/**/*.c")) & REDIS_COMMAND_NAMES) | shared
        assert used - {"AUTH"} <= granted, f"{svc} calls {sorted(used - granted)} without a grant"
        assert keys[0] == f"~vigil:{svc}:*"
        assert all(k.startswith("%R~") for k in keys[1:]), f"{svc}: only read-only grants beyond its own"
    cli_used = (redis_commands(src("cli/src/*.c")) & REDIS_COMMAND_NAMES) | shared
    cli_granted = {c.split("|")[0].upper() for c in rules[vigil_acl.CLI_USER][1]}
    assert cli_used - {"AUTH"} <= cli_granted, sorted(cli_used - cli_granted)
    # the CLI reads every key but writes only room logs, dead letters and outboxes
    cli_keys = rules[vigil_acl.CLI_USER][0]
    assert cli_keys[0] == "%R~vigil:*" and "~vigil:*" not in cli_keys, cli_keys
    # the one cross-service read the code makes
    gw = src("services/presence-gateway/src/*.c")
    assert "chat_log_prefix" in gw and rules["presence-gateway"][0][1] == "%R~vigil:chat-router:log:*"
    others = [s for s in vigil_acl.services() if s != "presence-gateway"]
    assert all(len(rules[s][0]) == 1 for s in others)


def test_redis_default_user_is_off_without_a_password():
    pw = {u: "pw-" + u for u in vigil_acl.all_users()}
    lines = vigil_acl.redis_users_acl(pw).splitlines()
    default = [line for line in lines if line.startswith("user default ")]
    assert len(default) == 1
    words = default[0].split()
    assert "off" in words and "on" not in words and "nopass" not in words
    assert not any(w.startswith((">", "#")) for w in words), "no password: nobody logs in as default"
    assert all(not line.startswith("#") for line in lines), "Redis refuses comments in an aclfile"
    for u in vigil_acl.all_users():
        line = [x for x in lines if x.startswith(f"user {u} ")][0]
        assert "pw-" not in line, f"{u}: clear password in users.acl"
