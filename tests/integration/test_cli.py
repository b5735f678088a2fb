"""The `vigil` CLI against a real broker, Redis and chat-router (issue 4):
help and exit codes, send/view (--since returns exactly the later
messages, both output formats), the room list, cleanup of expired messages
and empty rooms, delete, and the interactive join driven in a real
terminal with tmux (send-keys, capture-pane) and through a pipe."""

import json
import os
import shlex
import shutil
import subprocess
import time
import uuid

import pytest

import harness
from chat_personas import (CHAT, SANITIZER_MARKERS, chat_key, log_entries, room_state, run_vigil, vigil_env, vigil_exe,
                           vigil_ok)
from conftest import human, uid

SUBCOMMANDS = ["new", "join", "send", "view", "pause", "resume", "delete", "cleanup"]


def wait_log(stack, room, n, timeout=10):
    return harness.wait_until(lambda: len(log_entries(stack, room)) >= n and log_entries(stack, room), timeout,
                              f"{n} messages in the log of {room}")


def parse_view(out):
    """view's text lines -> [(id, timestamp, from, content)] (split on the first three '|')."""
    return [tuple(line.split("|", 3)) for line in out.splitlines()]


def new_room(stack, name=None):
    name = name or uid("room")
    assert vigil_ok(stack, "chat", "new", name, "--no-join").strip() == name
    return name


# --------------------------------------------------------------------------
# command line


def test_help_version_and_usage_errors(tmp_path):
    exe = vigil_exe()
    if not os.path.exists(exe):
        pytest.fail(f"{exe} does not exist: build it first")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env["LSAN_OPTIONS"] = "print_suppressions=0"

    def run(*args):
        return subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=20)

    r = run("--help")
    assert r.returncode == 0 and "chat" in r.stdout and "VIGIL_MQTT_URL" in r.stdout
    assert run("--version").stdout.startswith("vigil ")
    r = run("chat", "--help")
    assert r.returncode == 0
    for sub in SUBCOMMANDS:
        assert f"vigil chat {sub}" in r.stdout, sub
        h = run("chat", sub, "--help")
        assert h.returncode == 0 and h.stdout.startswith(f"usage: vigil chat {sub}"), (sub, h.stdout[:200])
        assert "Exit status" in h.stdout and "VIGIL_REDIS_URL" in h.stdout
    # the answers to the open design questions are in the help
    assert "does not pause" in run("chat", "join", "--help").stdout
    assert "--json" in run("chat", "view", "--help").stdout
    assert "--all" in run("chat", "pause", "--help").stdout
    # delete ends the conversation: a persona's late answer does not bring the room back
    delete_help = " ".join(run("chat", "delete", "--help").stdout.split())
    assert "late answer to the room is refused" in delete_help and "vigil chat new ROOM" in delete_help

    for args, why in [((), "missing command"), (("frob",), "unknown command"), (("chat", "frob"), "unknown chat"),
                      (("chat", "view"), "missing ROOM"), (("chat", "view", "a", "b"), "too many"),
                      (("chat", "view", "r", "--limit", "0"), "--limit"), (("chat", "view", "r", "--since", "a/b"), "--since"),
                      (("chat", "view", "r", "--bogus"), "unknown option"), (("chat", "send", "r"), "missing MESSAGE"),
                      (("chat", "send", "r", "hi", "--as", "a b"), "--as"), (("chat", "pause"), "missing ROOM"),
                      (("chat", "pause", "r", "--all"), "not both"), (("chat", "view", "r", "--limit"), "needs a value"),
                      (("chat", "send", "bad/room", "hi"), "bad room name"), (("chat", "new", "x" * 65), "bad room name"),
                      (("chat", "send", "r", "hi", "--depth", "3"), "--depth is for AI messages")]:
        r = run(*args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert why in r.stderr, (args, r.stderr)


SERVICES = ["dormancy-monitor", "wake-evaluator", "chat-router", "heartbeat", "council", "stall-resumer",
            "presence-gateway", "floor-control"]


def run_plain(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env["LSAN_OPTIONS"] = "print_suppressions=0"
    return subprocess.run([vigil_exe(), *args], env=env, capture_output=True, text=True, timeout=20)


def test_each_help_lists_its_own_exit_statuses_and_environment():
    """`vigil --help` lists every exit status a command uses (5 and 6 of the
    operators' commands too); `agents --help` and `deadletter --help` list
    their own exit statuses and the environment they read, not the chat
    commands' (room not found, chat-router, VIGIL_CHAT_LOG_MAX_AGE_MS), nor
    Redis for agents (it reads the broker only) nor the broker for
    deadletter (it reads Redis only)."""
    top = " ".join(run_plain("--help").stdout.split())
    exits = top[top.index("Exit status"):]
    for code in ("0 ok", "1 runtime error", "2 usage error", "3 not found", "4 room already exists",
                 "5 persona command refused", "6 not ready"):
        assert code in exits, (code, exits)
    chat_only = ("room not found", "already exists", "chat-router did not", "VIGIL_CHAT_LOG_MAX_AGE_MS")
    agents = run_plain("agents", "--help").stdout
    deadletter = run_plain("deadletter", "--help").stdout
    cases = ((agents, chat_only + ("VIGIL_REDIS",), ("VIGIL_MQTT_URL", "VIGIL_TOPIC_PREFIX")),
             (deadletter, chat_only + ("VIGIL_MQTT",), ("VIGIL_REDIS_URL", "VIGIL_REDIS_PREFIX")))
    for text, absent, present in cases:
        assert "Exit status" in text and "VIGIL_CLI_TIMEOUT_MS" in text, text
        for word in absent:
            assert word not in text, (word, text)
        for word in present:
            assert word in text, (word, text)
    flat = " ".join(agents.split())
    thresholds = flat[flat.index("Thresholds:"):].split(".")[0]
    for var in ("VIGIL_STALL_WARNING_MS", "VIGIL_STALL_CRITICAL_MS", "VIGIL_STALL_AUTORESUME_MS",
                "VIGIL_STALL_SCAN_MS"):
        assert var in thresholds, (var, thresholds)
    assert "configuration error" in flat[flat.index("Exit status"):], agents
    assert all(svc in " ".join(deadletter.split()) for svc in SERVICES), deadletter


def test_agents_and_deadletter_usage_errors_and_unknown_services():
    """Without a subcommand `vigil agents`, `vigil council` and `vigil deadletter` are usage
    errors like every other: the error and a "Try" line on stderr, nothing
    on stdout. A SERVICE deadletter does not know (a typo would otherwise
    read an empty list) is one too, naming the services it knows; it is
    refused before Redis is asked (none runs here)."""
    for args, why in [(("agents",), "missing subcommand"), (("deadletter",), "missing subcommand"),
                      (("council",), "missing subcommand"),
                      (("deadletter", "list", "dormancy-monitr"), "unknown service 'dormancy-monitr'"),
                      (("deadletter", "replay", "chat-routr", "--shard", "1"), "unknown service 'chat-routr'")]:
        r = run_plain(*args)
        assert r.returncode == 2, (args, r.returncode, r.stdout, r.stderr)
        assert r.stdout == "", (args, r.stdout)
        lines = r.stderr.splitlines()
        assert len(lines) == 2 and why in lines[0], (args, r.stderr)
        assert lines[1] == f"Try 'vigil {args[0]} --help'.", (args, r.stderr)
        if "unknown service" in why:
            assert all(svc in lines[0] for svc in SERVICES), lines[0]


def test_unreachable_redis_or_broker_exit_1(stack):
    r = run_vigil(stack, "chat", env={"VIGIL_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert r.returncode == 1 and "cannot reach Redis at redis://127.0.0.1:1/0" in r.stderr
    r = run_vigil(stack, "chat", "view", "general", env={"VIGIL_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert r.returncode == 1
    stack.service(CHAT)
    room = new_room(stack)
    r = run_vigil(stack, "chat", "send", room, "hi",
                  env={"VIGIL_MQTT_URL": "mqtt://127.0.0.1:1", "VIGIL_CLI_TIMEOUT_MS": "700"})
    assert r.returncode == 1 and "cannot reach the MQTT broker at mqtt://127.0.0.1:1" in r.stderr


def test_room_not_found_exit_3_and_exists_exit_4(stack):
    stack.service(CHAT)
    for args in (("send", "ghost", "hi"), ("view", "ghost"), ("pause", "ghost"), ("resume", "ghost"),
                 ("delete", "ghost"), ("join", "ghost")):
        r = run_vigil(stack, "chat", *args)
        assert r.returncode == 3, (args, r.returncode, r.stderr)
        assert "room 'ghost' not found" in r.stderr
    room = new_room(stack)
    r = run_vigil(stack, "chat", "new", room, "--no-join")
    assert r.returncode == 4 and "already exists" in r.stderr


def test_chat_router_down_is_reported(stack):
    svc = stack.service(CHAT)
    room = new_room(stack)
    svc.terminate()
    r = run_vigil(stack, "chat", "pause", room, env={"VIGIL_CLI_TIMEOUT_MS": "600"})
    assert r.returncode == 1 and "did not confirm" in r.stderr and "chat-router" in r.stderr
    svc.start()  # the pause it missed is queued for it by the broker
    harness.wait_until(lambda: (room_state(stack, room) or {}).get("paused"), 10, "the late pause applied")


# --------------------------------------------------------------------------
# send, view, list


def test_view_since_returns_exactly_the_later_messages(stack):
    stack.service(CHAT)
    room = new_room(stack)
    texts = ["first", "second @arya", "a|b\nc\\d\ttab", "fourth ✨ ünïcode", "fifth"]
    sent = [vigil_ok(stack, "chat", "send", room, t).strip() for t in texts]
    wait_log(stack, room, 6)
    lines = parse_view(vigil_ok(stack, "chat", "view", room))
    assert len(lines) == 6
    ids = [ln[0] for ln in lines]
    assert ids == [eid for eid, _ in log_entries(stack, room)]
    assert [ln[2] for ln in lines] == ["joel"] * 6
    assert lines[0][3].startswith("✨ room ") and lines[1][3] == "first"
    assert lines[3][3] == "a|b\\nc\\\\d\\ttab"  # one line per message, last field keeps its '|'
    assert lines[4][3] == "fourth ✨ ünïcode"
    assert all(ln[1].endswith("Z") and "T" in ln[1] for ln in lines)

    for k in range(len(ids)):
        later = parse_view(vigil_ok(stack, "chat", "view", room, "--since", ids[k]))
        assert [ln[0] for ln in later] == ids[k + 1:], k
    assert vigil_ok(stack, "chat", "view", room, "--since", ids[-1]) == ""
    assert [ln[0] for ln in parse_view(vigil_ok(stack, "chat", "view", room, "--since", ids[2], "--limit", "1"))] == [ids[3]]
    assert [ln[0] for ln in parse_view(vigil_ok(stack, "chat", "view", room, "--limit", "2"))] == ids[-2:]
    assert [ln[0] for ln in parse_view(vigil_ok(stack, "chat", "view", room, "--since", "0"))] == ids

    # messages posted after a caller's last id are exactly what it gets next
    last = ids[-1]
    more = [vigil_ok(stack, "chat", "send", room, f"later {i}").strip() for i in range(3)]
    wait_log(stack, room, 9)
    later = parse_view(vigil_ok(stack, "chat", "view", room, "--since", last))
    assert [ln[3] for ln in later] == ["later 0", "later 1", "later 2"]

    js = [json.loads(x) for x in vigil_ok(stack, "chat", "view", room, "--json").splitlines()]
    assert len(js) == 9 and [j["log_id"] for j in js[:6]] == ids
    assert [j["id"] for j in js[1:6]] == sent and [j["id"] for j in js[6:]] == more
    assert js[3]["text"] == texts[2] and js[3]["sender_type"] == "human" and js[3]["room"] == room
    js2 = [json.loads(x) for x in vigil_ok(stack, "chat", "view", room, "--json", "--since", ids[4]).splitlines()]
    assert [j["log_id"] for j in js2] == [j["log_id"] for j in js[5:]]


def test_view_since_a_message_id_as_send_prints_it(stack):
    """--since also takes the id `send` printed: a script that sends and
    then pages from its own message gets exactly what was logged after it,
    even when it asks before chat-router has logged the message."""
    svc = stack.service(CHAT)
    room, other = new_room(stack), new_room(stack)
    sent = [vigil_ok(stack, "chat", "send", room, f"m{i}").strip() for i in range(4)]
    wait_log(stack, room, 5)
    for k in range(4):
        later = parse_view(vigil_ok(stack, "chat", "view", room, "--since", sent[k]))
        assert [ln[3] for ln in later] == [f"m{i}" for i in range(k + 1, 4)], k
    assert [ln[3] for ln in parse_view(vigil_ok(stack, "chat", "view", room, "--since", sent[0],
                                                "--limit", "2"))] == ["m1", "m2"]
    js = [json.loads(x) for x in vigil_ok(stack, "chat", "view", room, "--json", "--since", sent[1]).splitlines()]
    assert [j["id"] for j in js] == sent[2:]

    # asked before chat-router has logged it: waits for it, then pages from it
    svc.terminate()
    mid = vigil_ok(stack, "chat", "send", room, "while the router is away").strip()
    wait_ms = int(harness.scaled(30) * 1000)
    view = subprocess.Popen([vigil_exe(), "chat", "view", room, "--since", mid],
                            env=vigil_env(stack, VIGIL_CLI_TIMEOUT_MS=wait_ms),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    assert view.poll() is None, view.communicate()
    svc.start()
    vigil_ok(stack, "chat", "send", room, "after it")
    out, err = view.communicate(timeout=harness.scaled(60))
    assert view.returncode == 0, err
    for m in SANITIZER_MARKERS:
        assert m not in err, err
    assert [ln[3] for ln in parse_view(out)] in ([], ["after it"])  # whatever was logged by then
    later = parse_view(vigil_ok(stack, "chat", "view", room, "--since", mid))
    assert [ln[3] for ln in later] == ["after it"]

    # a message id the room never logged: not found (3), after the wait
    r = run_vigil(stack, "chat", "view", other, "--since", sent[0], env={"VIGIL_CLI_TIMEOUT_MS": "300"})
    assert r.returncode == 3 and f"no message '{sent[0]}' in room '{other}'" in r.stderr, (r.returncode, r.stderr)


def test_view_since_out_of_range_is_a_usage_error(stack):
    stack.service(CHAT)
    room = new_room(stack)
    for bad in ["18446744073709551616", "18446744073709551616-0", "1-18446744073709551616",
                "99999999999999999999999-1", "1763800000000-0-1"]:
        r = run_vigil(stack, "chat", "view", room, "--since", bad)
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
        assert "--since needs a log id" in r.stderr, (bad, r.stderr)
    # the largest id there is: valid, and nothing comes after it
    for top in ["18446744073709551615", "18446744073709551615-18446744073709551615"]:
        r = run_vigil(stack, "chat", "view", room, "--since", top)
        assert r.returncode == 0 and r.stdout == "", (top, r.returncode, r.stderr)


def test_view_pages_through_a_long_log(stack):
    stack.service(CHAT)
    pub = stack.publisher()
    room = uid("room")
    pub.publish_many([human(room, "joel", f"m{i}", mid=f"{room}-{i}") for i in range(2500)], timeout=120)
    harness.wait_until(lambda: (room_state(stack, room) or {}).get("count") == 2500, 60, "2500 logged")
    out = vigil_ok(stack, "chat", "view", room)
    assert [ln[3] for ln in parse_view(out)] == [f"m{i}" for i in range(2500)]
    ids = [ln[0] for ln in parse_view(out)]
    assert [ln[0] for ln in parse_view(vigil_ok(stack, "chat", "view", room, "--since", ids[999]))] == ids[1000:]
    assert len(vigil_ok(stack, "chat", "view", room, "--since", ids[10], "--limit", "1500").splitlines()) == 1500
    # a reader that goes away early is not an error
    r = subprocess.run(f"{shlex.quote(vigil_exe())} chat view {room} | head -3", shell=True, capture_output=True,
                       text=True, env=vigil_env(stack), timeout=30)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3


def test_send_as_ai_with_reply_and_depth(stack):
    stack.service(CHAT)
    col = stack.collector()
    room = new_room(stack)
    mid = vigil_ok(stack, "chat", "send", room, "--ai", "--as", "arya", "--reply-to", "m-7", "--depth", "5",
                   "@gendry", "your", "turn").strip()
    n = col.wait_event("persona/gendry/notify", timeout=10)
    assert n["message_id"] == mid and n["from"] == "arya" and n["depth"] == 5
    (_, m), = [e for e in log_entries(stack, room) if e[1]["id"] == mid]
    assert m["sender_type"] == "ai" and m["reply_to"] == "m-7" and m["depth"] == 5 and m["text"] == "@gendry your turn"
    # `--` lets a message start with '-'
    vigil_ok(stack, "chat", "send", room, "--", "-1 is the answer")
    harness.wait_until(lambda: log_entries(stack, room)[-1][1]["text"] == "-1 is the answer", 10, "logged")


def test_list_rooms(stack):
    stack.service(CHAT)
    a, b = new_room(stack, "alpha-" + uuid.uuid4().hex[:6]), new_room(stack, "beta-" + uuid.uuid4().hex[:6])
    vigil_ok(stack, "chat", "send", a, "hello")
    wait_log(stack, a, 2)
    vigil_ok(stack, "chat", "pause", b)
    out = vigil_ok(stack, "chat").splitlines()
    assert out[0].split() == ["ROOM", "MESSAGES", "PAUSED", "QUEUED", "LAST", "ACTIVITY"]
    rows = {ln.split()[0]: ln.split() for ln in out[1:]}
    assert rows[a][1:3] == ["2", "no"] and rows[b][1:3] == ["1", "yes"]
    assert rows[a][4].endswith("Z")
    js = {json.loads(x)["room"]: json.loads(x) for x in vigil_ok(stack, "chat", "--json").splitlines()}
    assert js[a]["messages"] == 2 and js[a]["paused"] is False and js[a]["last_sender"] == "joel"
    assert js[b]["paused"] is True and js[b]["queued"] == 0
    assert [ln.split()[0] for ln in out[1:]] == sorted(rows)


# --------------------------------------------------------------------------
# cleanup, delete


def test_cleanup_removes_expired_messages_and_empty_rooms(stack):
    stack.service(CHAT)
    old = new_room(stack)
    mixed = new_room(stack)
    fresh = new_room(stack)
    vigil_ok(stack, "chat", "send", old, "old 1")
    vigil_ok(stack, "chat", "send", mixed, "old 2")
    wait_log(stack, old, 2)
    wait_log(stack, mixed, 2)
    t_old = time.time()
    time.sleep(4)
    t_new = time.time()
    vigil_ok(stack, "chat", "send", mixed, "new 1")
    vigil_ok(stack, "chat", "send", fresh, "new 2")
    wait_log(stack, mixed, 3)
    wait_log(stack, fresh, 2)
    # The service keeps 7 days by default; the CLI is told an age whose
    # cutoff falls midway between the two groups as of now, so it still
    # separates them if the CLI starts up to 2 s late on a loaded machine
    # (a fixed 1.5 s age did not: the new messages had expired by then).
    max_age_ms = int((time.time() - (t_old + t_new) / 2) * 1000)
    out = vigil_ok(stack, "chat", "cleanup", env={"VIGIL_CHAT_LOG_MAX_AGE_MS": str(max_age_ms)})
    # old: creation + "old 1"; mixed: creation + "old 2"; fresh: its creation
    assert out.strip() == f"removed 5 expired messages; deleted 1 empty room: {old}", out
    assert [m["text"] for _, m in log_entries(stack, fresh)] == ["new 2"]
    assert [m["text"] for _, m in log_entries(stack, mixed)] == ["new 1"]
    listing = vigil_ok(stack, "chat")
    assert old not in listing and mixed in listing
    assert run_vigil(stack, "chat", "view", old).returncode == 3
    # nothing left to do the second time (a cutoff the new messages are
    # well within: on a loaded machine 1.5 s may have passed since they went)
    out = vigil_ok(stack, "chat", "cleanup", env={"VIGIL_CHAT_LOG_MAX_AGE_MS": "60000"})
    assert out.startswith("removed 0 expired messages; deleted 0 empty rooms"), out


def test_cleanup_keeps_a_room_that_got_a_message_meanwhile(stack):
    stack.service(CHAT)
    pub = stack.publisher()
    room = uid("room")
    # a room made by a pause has no messages: empty, but its last activity is 0
    pub.publish(f"room/{room}/control", {"action": "pause", "by": "joel"})
    harness.wait_until(lambda: room_state(stack, room), 10, "room created by pause")
    # the guard itself: a delete with if_inactive_since in the past of the last message keeps the room
    pub.publish(*human(room, "joel", "just in time"))
    wait_log(stack, room, 1)
    since = room_state(stack, room)["last_activity"]
    pub.publish(f"room/{room}/control", {"id": "d-guard", "action": "delete", "by": "joel",
                                         "if_inactive_since": since})
    harness.wait_until(lambda: stack.redis.client().zscore(chat_key(stack, f"ids:{room}"), "d-guard") is not None,
                       10, "guarded delete processed")
    assert room_state(stack, room)["count"] == 1 and len(log_entries(stack, room)) == 1
    out = vigil_ok(stack, "chat", "cleanup")
    assert "deleted 0 empty rooms" in out


def paused_room_with_a_queued_notification(stack):
    """A new room, paused, holding one notification for arya: (room, a
    Redis client the caller closes)."""
    stack.service(CHAT)
    room = new_room(stack)
    vigil_ok(stack, "chat", "pause", room)
    vigil_ok(stack, "chat", "send", room, "@arya pending")
    r = stack.redis.client()
    harness.wait_until(lambda: r.llen(chat_key(stack, f"queue:{room}")) == 1, 10, "queued")
    return room, r


def test_cleanup_keeps_a_paused_room_with_queued_notifications(stack):
    room, r = paused_room_with_a_queued_notification(stack)
    time.sleep(0.3)  # past the 200 ms log age cleanup is given below
    # every message has aged out of the log, but arya is still owed the notification
    out = vigil_ok(stack, "chat", "cleanup", env={"VIGIL_CHAT_LOG_MAX_AGE_MS": "200"})
    assert "deleted 0 empty rooms" in out and "kept 1 room" in out, out
    assert "queued notifications" in out, out
    assert r.llen(chat_key(stack, f"queue:{room}")) == 1
    assert room in vigil_ok(stack, "chat")
    r.close()


def test_delete_removes_log_queue_and_state(stack):
    room, r = paused_room_with_a_queued_notification(stack)
    assert vigil_ok(stack, "chat", "delete", room).strip() == f"deleted room {room}"
    assert not r.exists(chat_key(stack, f"log:{room}"))
    assert not r.exists(chat_key(stack, f"queue:{room}"))
    assert room_state(stack, room) == {"deleted": room_state(stack, room)["deleted"], "by": "joel"}
    r.close()
    assert run_vigil(stack, "chat", "view", room).returncode == 3
    assert room not in vigil_ok(stack, "chat")


# --------------------------------------------------------------------------
# join


def test_join_through_a_pipe_with_pause(stack):
    svc = stack.service(CHAT)
    col = stack.collector()
    room = new_room(stack)
    r = run_vigil(stack, "chat", "join", room, "--pause", input="@arya while joined\n\n/quit\nnot sent\n")
    assert r.returncode == 0, r.stderr
    assert "joined room" in r.stderr and "paused while you are here" in r.stderr and "resumed room" in r.stderr
    assert "✨ room" in r.stdout  # history
    texts = [m["text"] for _, m in log_entries(stack, room)]
    assert "@arya while joined" in texts and "not sent" not in texts
    n = col.wait_event("persona/arya/notify", timeout=10)
    assert n["text"] == "@arya while joined"
    assert svc.metric("vigil_chat_notifications_total", mode="queued") >= 1
    assert room_state(stack, room)["paused"] is False


def test_join_pause_leaves_a_room_paused_by_someone_else_paused(stack):
    stack.service(CHAT)
    room = new_room(stack)
    vigil_ok(stack, "chat", "pause", room, env={"VIGIL_USER": "ann"})
    r = run_vigil(stack, "chat", "join", room, "--pause", input="/quit\n")
    assert r.returncode == 0, r.stderr
    assert f"room {room} is already paused by ann" in r.stderr, r.stderr
    assert "resumed room" not in r.stderr, r.stderr
    assert f"left room {room} paused" in r.stderr
    st = room_state(stack, room)
    assert st["paused"] is True and st["paused_by"] == "ann", st
    # a join that did pause it resumes it (and says so)
    vigil_ok(stack, "chat", "resume", room)
    r = run_vigil(stack, "chat", "join", room, "--pause", input="/quit\n")
    assert r.returncode == 0 and f"paused room {room} while you are here" in r.stderr, r.stderr
    assert f"resumed room {room}" in r.stderr
    assert room_state(stack, room)["paused"] is False


def test_join_does_not_pause_by_default(stack):
    svc = stack.service(CHAT)
    room = new_room(stack)
    r = run_vigil(stack, "chat", "join", room, input="@arya live\n")
    assert r.returncode == 0, r.stderr
    harness.wait_until(lambda: svc.metric("vigil_chat_notifications_total", mode="live") >= 1, 10, "live notify")
    assert svc.metric("vigil_chat_notifications_total", mode="queued") == 0


def test_new_creates_and_joins(stack):
    stack.service(CHAT)
    room = uid("room")
    r = run_vigil(stack, "chat", "new", room, input="hello new room\n")
    assert r.returncode == 0, r.stderr
    assert f"created room {room}" in r.stderr
    assert [m["text"] for _, m in log_entries(stack, room)][-1] == "hello new room"
    # without a name: a generated one
    out = vigil_ok(stack, "chat", "new", "--no-join").strip()
    assert out.startswith("chat-") and out in vigil_ok(stack, "chat")


class Tmux:
    """A private tmux server (own socket) running one command in a pane."""

    def __init__(self, workdir):
        self.sock = os.path.join(workdir, f"tmux-{uuid.uuid4().hex[:6]}")
        self.session = "vigil"

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True, timeout=10,
                              check=check)

    def start(self, command, env):
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", self.session, "-x", "200", "-y", "60",
                  *[a for k, v in env.items() if k.startswith(("VIGIL_", "LSAN_", "ASAN_", "UBSAN_"))
                    for a in ("-e", f"{k}={v}")], command)

    def pane(self):
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.session, check=False).stdout

    def send(self, *keys):
        self.tmux("send-keys", "-t", self.session, *keys)

    def alive(self):
        return self.tmux("has-session", "-t", self.session, check=False).returncode == 0

    def kill(self):
        self.tmux("kill-server", check=False)


def test_join_in_a_real_terminal_with_tmux(stack, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install -y tmux); the pipe-driven join tests still run")
    stack.service(CHAT)
    pub = stack.publisher()
    room = new_room(stack)
    vigil_ok(stack, "chat", "send", room, "before joining")
    wait_log(stack, room, 2)
    err = tmp_path / "join.err"
    t = Tmux(str(tmp_path))

    def cmd(tag):
        inner = f"{shlex.quote(vigil_exe())} chat join {room} 2> >(tee -a {err} >&2); echo {tag}=$?; sleep 60"
        return f"bash -c {shlex.quote(inner)}"

    t.start(cmd("EXIT1"), vigil_env(stack))
    try:
        harness.wait_until(lambda: "joined room" in t.pane(), 20, "the join banner in the pane")
        assert "joel: before joining" in t.pane()  # history
        t.send("hello from tmux", "Enter")
        got = harness.wait_until(lambda: [m for _, m in log_entries(stack, room) if m["text"] == "hello from tmux"],
                                 10, "the typed line in the log")
        assert got[0]["sender"] == "joel" and got[0]["sender_type"] == "human"
        # a message from another client shows up live
        pub.publish(*human(room, "sansa", "hi from outside ✨"))
        harness.wait_until(lambda: "sansa: hi from outside ✨" in t.pane(), 10, "the outside message in the pane")
        harness.wait_until(lambda: "joel: hello from tmux" in t.pane(), 10, "our own line echoed")
        t.send("/quit", "Enter")
        harness.wait_until(lambda: "EXIT1=0" in t.pane(), 10, "join exiting 0 on /quit")
        # Ctrl-C leaves cleanly too
        t.tmux("respawn-pane", "-k", "-t", t.session, cmd("EXIT2"))
        harness.wait_until(lambda: t.pane().count("joined room") >= 2 or
                           ("EXIT1" not in t.pane() and "joined room" in t.pane()), 20, "join again")
        t.send("C-c")
        harness.wait_until(lambda: "EXIT2=0" in t.pane(), 10, "join exiting 0 on Ctrl-C")
        text = err.read_text()
        assert "AddressSanitizer" not in text and "runtime error" not in text, text
    finally:
        t.kill()
