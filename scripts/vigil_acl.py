"""vigil_acl - the mosquitto ACL and the Redis ACL users, derived from the
contract so they cannot drift from it.

MQTT: topics/asyncapi.yaml has one operation per service (x-vigil-service),
`receive` = the service subscribes, `send` = it publishes. Every
implemented operation becomes `topic read|write <filter>` in that service's
`user` block (channel parameters such as {room} become `+`; {service} in
an operation a service sends is its own name). A `planned`
operation grants nothing: nothing publishes it yet. What a client needs
beyond the contract is in MQTT_EXTRA below, each with its reason; the `vigil`
CLI and the operators' users are there too.

Redis: every service keeps its keys under P S ":" (P = VIGIL_REDIS_PREFIX,
S = service, libshared runtime.c/store.c). Its user may touch only those,
read-only access to another service's keys is granted only where the code
reads them (REDIS_READS), and only the commands libshared and the service
call (REDIS_COMMON + REDIS_EXTRA). Keys a Lua script touches are checked
against the same patterns, and the commands it calls against the same list.

Used by scripts/acl and scripts/secrets; tests/integration/test_acl.py
checks it against the contract and the code.
"""
import hashlib
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASYNCAPI = os.path.join(ROOT, "topics", "asyncapi.yaml")

CLI_USER = "vigil-cli"
ADMIN_USER = "admin"
# Reads the broker's version only: the compose and Kubernetes health checks.
HEALTH_USER = "health"

# Topics a client uses that are not operations in the contract.
# {service} is the user's own service name.
MQTT_EXTRA = {
    # Every service: its own error events and its replicas' status (the
    # retained `ready`/`disconnected` and the `lost` last will, which the
    # broker checks as a write at connect). libshared runtime.c.
    "*": [("write", "sys/{service}/error"), ("write", "sys/{service}/+/status")],
    # The vigil CLI (cli/src): what it subscribes to and publishes, and its
    # own subscription probe cli/<client id>/probe (cli/src/conn.c).
    CLI_USER: [
        ("read", "room/+/message"), ("write", "room/+/message"),   # chat join, chat send
        ("write", "room/+/control"),                              # chat pause/resume
        ("write", "persona/+/command"),                           # persona sleep/wake
        ("read", "persona/+/dormancy"), ("read", "persona/+/state"),
        ("read", "room/+/state"),                                 # persona status
        ("read", "agent/+/assessment"), ("read", "agent/+/status"),  # agents status
        ("read", "sys/+/error"), ("read", "sys/+/+/status"),      # sys errors, sys status
        ("read", "cli/+/probe"), ("write", "cli/+/probe"),
    ],
    # Operators (mosquitto_sub -t '#', replaying by hand): everything under
    # the prefix.
    ADMIN_USER: [("read", "#"), ("write", "#")],
}
# Outside the prefix on purpose: $SYS is the broker's own tree.
HEALTH_RULES = [("read", "$SYS/broker/version")]

# Every command libshared issues for any service: C code (redis.c, store.c,
# store_commit.c, outbox.c, jobs.c, timers.c, handover.c, reads.c, stream_reads.c,
# job_consumer.c, metrics_backlog.c, shard_view.c) and the Lua scripts (store_lua.h,
# outbox_store.c, handover.c, shard_view.c), which run with the caller's permissions.
REDIS_COMMON = sorted("""
ping select evalsha script|load
watch unwatch multi exec discard
get set exists del type scan pexpire
hget hmget hgetall hset hsetnx hdel hlen hkeys
lindex llen lrange ltrim lpop rpush
sadd srem smembers
zadd zrem zcard zrange zrangebyscore zremrangebyrank zremrangebyscore zscan zscore
xadd xtrim xack xautoclaim xclaim xpending xdel xgroup|create xlen xrange xrevrange xread xreadgroup
xinfo|stream
""".split())
# Commands one service's own code adds (grep its src/ for Redis calls).
REDIS_EXTRA = {}
# Another service's keys a service reads, read-only (%R~): the pattern is
# under P. presence-gateway serves /api/rooms/R/messages from chat-router's
# room log (services/presence-gateway/src/api_messages.c).
REDIS_READS = {
    "presence-gateway": ["chat-router:log:*"],
}
# The vigil CLI reads every service's records (chat list/view, council,
# persona status), trims chat-router's logs (chat cleanup) and lists and
# replays dead letters (libshared outbox_store.c, a Lua move of a service's
# dead-letter list into its outbox).
CLI_REDIS_COMMANDS = sorted(set(REDIS_COMMON) | {"scard", "sismember"})
# The only keys (under P) the CLI writes: everything else is read-only to
# it (%R~P*), so the CLI's password cannot rewrite or delete a service's
# state records, processed ids, timers or job queues.
CLI_REDIS_WRITES = ["chat-router:log:*", "*:deadletter", "*:outbox:*"]


def load_contract(path=ASYNCAPI):
    import yaml  # python3-yaml

    with open(path) as f:
        return yaml.safe_load(f)


def topic_filter(address):
    """room/{room}/message -> room/+/message."""
    return "/".join("+" if p.startswith("{") and p.endswith("}") else p for p in address.split("/"))


def contract_rules(doc):
    """{service: set((access, address))} from the implemented operations
    (addresses with their {parameters})."""
    out = {}
    for name, op in doc.get("operations", {}).items():
        if op.get("x-vigil-status", "implemented") != "implemented":
            continue
        chan = doc["channels"][op["channel"]["$ref"].split("/")[-1]]
        access = {"receive": "read", "send": "write"}[op["action"]]
        out.setdefault(op["x-vigil-service"], set()).add((access, chan["address"]))
    return out


def _own(address, svc):
    """A service publishes under its own name only: sys/{service}/error
    sent by chat-router is sys/chat-router/error, never sys/+/error (which
    would let it publish error events as any other service). Reading keeps
    {service} as + (presence-gateway reads every service's status)."""
    return address.replace("{service}", svc)


def mqtt_rules(doc=None):
    """{user: sorted [(access, filter)]}: every service (from the contract,
    `every service` operations expanded), the CLI and admin. No prefix."""
    doc = doc or load_contract()
    rules = contract_rules(doc)
    every = rules.pop("every service", set())
    out = {}
    for svc in sorted(rules):
        r = {(access, topic_filter(_own(a, svc) if access == "write" else a))
             for access, a in rules[svc]}
        for access, a in every | set(MQTT_EXTRA["*"]):
            r.add((access, topic_filter(a.replace("{service}", svc))))
        out[svc] = r
    out[CLI_USER] = set(MQTT_EXTRA[CLI_USER])
    out[ADMIN_USER] = set(MQTT_EXTRA[ADMIN_USER])
    return {u: _merge(r) for u, r in out.items()}


def _merge(rules):
    """read + write of one filter -> readwrite; sorted by filter."""
    by = {}
    for access, f in rules:
        by.setdefault(f, set()).add(access)
    return [("readwrite" if len(a) == 2 else a.pop(), f) for f, a in sorted(by.items())]


def services(doc=None):
    return [u for u in mqtt_rules(doc) if u not in (CLI_USER, ADMIN_USER)]


def mosquitto_acl(prefix="", doc=None):
    """The acl_file text. prefix: VIGIL_TOPIC_PREFIX (e.g. "tenant-a"; a
    trailing "/" is accepted): every Vigil filter goes under "<prefix>/",
    as the services put every topic there."""
    prefix = prefix.rstrip("/") + "/" if prefix else ""
    lines = ["# Generated by scripts/acl from topics/asyncapi.yaml: do not edit.",
             "# Each Vigil user may read and write exactly the topics its",
             "# operations in the contract name (scripts/vigil_acl.py).",
             f"# Topic prefix: {prefix!r}", ""]
    for user, rules in mqtt_rules(doc).items():
        lines.append(f"user {user}")
        lines += [f"topic {access} {prefix}{f}" for access, f in rules]
        lines.append("")
    lines.append(f"user {HEALTH_USER}")
    lines += [f"topic {access} {f}" for access, f in HEALTH_RULES]
    return "\n".join(lines) + "\n"


def _pw(password):
    """Redis ACL password clause(s): the SHA-256 (the file holds no clear
    text). A list gives several valid passwords: the new and the previous
    one while a rotation is under way (scripts/secrets --rotate)."""
    pws = password if isinstance(password, (list, tuple)) else [password]
    return " ".join("#" + hashlib.sha256(p.encode()).hexdigest() for p in pws)


def redis_rules(redis_prefix="vigil:", doc=None):
    """{user: (key patterns, commands)}; patterns carry %R~ / ~."""
    out = {}
    for svc in services(doc):
        keys = [f"~{redis_prefix}{svc}:*"] + [f"%R~{redis_prefix}{k}" for k in REDIS_READS.get(svc, [])]
        out[svc] = (keys, sorted(set(REDIS_COMMON) | set(REDIS_EXTRA.get(svc, []))))
    out[CLI_USER] = ([f"%R~{redis_prefix}*"] + [f"~{redis_prefix}{k}" for k in CLI_REDIS_WRITES],
                     CLI_REDIS_COMMANDS)
    return out


def redis_users_acl(passwords, redis_prefix="vigil:", doc=None):
    """The aclfile text. passwords: {user: clear password, or a list of
    them} for every service, the CLI, admin and health. The default user is
    off."""
    # No comment line: Redis refuses an aclfile with one.
    # The default user is off (nobody can log in as it: an unauthenticated
    # connection gets NOAUTH) but keeps every permission: Redis 7.0 replays
    # the AOF as the default user and re-checks its permissions at each
    # EXEC, so a default user without them silently drops, at the next
    # restart, every write a Lua script made (redis/redis#14541, fixed after
    # 7.0; tests/integration/test_security.py restarts Redis to prove it).
    lines = ["user default off resetpass ~* &* +@all"]
    for user, (keys, cmds) in redis_rules(redis_prefix, doc).items():
        lines.append(f"user {user} on {_pw(passwords[user])} resetchannels -@all "
                     + " ".join(keys) + " " + " ".join("+" + c for c in cmds))
    lines.append(f"user {ADMIN_USER} on {_pw(passwords[ADMIN_USER])} ~* &* +@all")
    # PING only (the health checks): no key, no data.
    lines.append(f"user {HEALTH_USER} on {_pw(passwords[HEALTH_USER])} resetchannels -@all +ping")
    return "\n".join(lines) + "\n"


def all_users(doc=None):
    return services(doc) + [CLI_USER, ADMIN_USER, HEALTH_USER]
