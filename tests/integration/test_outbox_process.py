"""VIGIL_OUTBOX_PROCESS=1: the outbox published by a child process, with
real processes (mosquitto, redis-server, dormancy-monitor).

With the mode on, each service process starts one child: the same
executable with the same argv and VIGIL_OUTBOX_CHILD=<parent pid> added to
its environment. The child publishes the Redis outbox (every output event)
as MQTT client vigil-<service>-<shard>-out; the parent only commits inputs
(paho's global lock no longer lets a saturated intake starve publishing).
Checked here:

- events flow, the child is a direct child of the service with the right
  environment, executable, argv and client id, and the parent's /metrics
  counts what the child published (vigil_outputs_total);
- kill -9 of the child during a burst: the parent reaps it, logs an error
  and starts a new one within about 2 s; every input's event arrives (with
  one event id per input; duplicates allowed), and
  vigil_outbox_process_restarts_total counts the restart;
- kill -9 of the parent: the child exits within 3 s (PR_SET_PDEATHSIG), and
  after a restart every input's event arrives and new ones flow;
- SIGTERM of the parent: the child publishes what was committed while it
  could not (it was stopped), the parent exits 0 and no child is left;
- the default (mode off) starts no child.
"""

import os
import re
import signal
import threading
import time

from conftest import ai, human, uid, validate_outputs
from harness import scaled, wait_until

SERVICE = "dormancy-monitor"
SLEEP = "@self dormant sleep"
ENV = {
    "VIGIL_OUTBOX_PROCESS": 1,
    "VIGIL_DORMANCY_NO_HUMAN_MS": 86400000,
    "VIGIL_DORMANCY_AI_ONLY_MS": 86400000,
    "VIGIL_DORMANCY_HUMAN_WAKES": "all",
}
DORMANCY = "persona/+/dormancy"
ERROR_TOPIC = f"sys/{SERVICE}/error"
CHILD_CLIENT_ID = f"vigil-{SERVICE}-0-out"


# --------------------------------------------------------------------------
# /proc helpers


def _read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def children_of(pid):
    """Pids of the direct children of process `pid`: the union of every
    thread's /proc/<pid>/task/<tid>/children (a child is listed under the
    thread that forked it). Unreaped (zombie) children are included. []
    once pid is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return []
    out = set()
    for tid in tids:
        text = _read(f"/proc/{pid}/task/{tid}/children")
        if text:
            out.update(int(x) for x in text.split())
    return sorted(out)


def lister_threads(pid, child):
    """The threads of pid whose children file lists child (the thread that
    started it)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [int(t) for t in tids if str(child) in (_read(f"/proc/{pid}/task/{t}/children") or "").split()]


def environ_of(pid):
    """{name: value} of /proc/<pid>/environ ({} when gone or a zombie)."""
    raw = _read(f"/proc/{pid}/environ", "rb") or b""
    env = {}
    for item in raw.split(b"\0"):
        if b"=" in item:
            k, v = item.split(b"=", 1)
            env[k.decode("utf-8", "replace")] = v.decode("utf-8", "replace")
    return env


def stat_of(pid):
    """(state letter, start time in clock ticks) from /proc/<pid>/stat, or
    None when the process is gone."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[19])


def running(pid, starttime):
    """True while the process that had this pid and start time exists and
    is not a zombie (a zombie reaped later by init counts as ended)."""
    st = stat_of(pid)
    return st is not None and st[0] != "Z" and st[1] == starttime


def outbox_children(pid):
    """The children of pid whose environment marks them as its outbox
    child (VIGIL_OUTBOX_CHILD=<pid>); a killed, not yet reaped child has no
    readable environment and is not listed."""
    return [c for c in children_of(pid) if environ_of(c).get("VIGIL_OUTBOX_CHILD") == str(pid)]


def the_child(svc, other_than=(), timeout=5):
    """Waits until the service has exactly one outbox child not in
    other_than, and returns its pid."""
    pid = svc.proc.pid

    def one():
        if not svc.alive():
            raise AssertionError(f"{SERVICE} exited with {svc.proc.returncode}")
        kids = [c for c in outbox_children(pid) if c not in other_than]
        return kids[0] if len(kids) == 1 else None

    return wait_until(one, timeout, f"one outbox child of {SERVICE} (pid {pid}), other than {list(other_than)}")


def check_child_identity(svc, child):
    """The child runs the service's executable with the service's argv and
    name and VIGIL_OUTBOX_CHILD=<parent pid>; the parent has no such
    variable."""
    pid = svc.proc.pid
    env = environ_of(child)
    assert env.get("VIGIL_OUTBOX_CHILD") == str(pid), env.get("VIGIL_OUTBOX_CHILD")
    assert "VIGIL_OUTBOX_CHILD" not in environ_of(pid)
    assert env.get("VIGIL_OUTBOX_PROCESS") == "1"
    assert os.readlink(f"/proc/{child}/exe") == os.readlink(f"/proc/{pid}/exe")
    assert _read(f"/proc/{child}/cmdline", "rb") == _read(f"/proc/{pid}/cmdline", "rb")
    # ps, top and pkill show the service's name, not "exe" (it is started
    # from /proc/self/exe, so that it is the parent's own binary)
    # (it names itself as it starts)
    assert _read(f"/proc/{pid}/comm").strip() == SERVICE[:15]
    wait_until(lambda: (_read(f"/proc/{child}/comm") or "").strip() == SERVICE[:15], 5,
               f"the outbox child {child} named {SERVICE[:15]}")


# --------------------------------------------------------------------------
# events, logs, Redis


def seen_ids(col):
    return {e.get("message_id") for e in col.events(DORMANCY)}


def wait_all_events(col, ids, timeout, what):
    want = set(ids)

    def done(c):
        return want <= seen_ids(c)

    try:
        col.wait_for(done, timeout, what)
    except AssertionError as e:
        missing = sorted(want - seen_ids(col))
        raise AssertionError(f"{e}\n{len(missing)} of {len(want)} missing, e.g. {missing[:10]}") from None


def one_event_id_per_input(col, ids):
    """Each input's event carries one event id however often it was
    published (consumers dedupe by it)."""
    by_input = {}
    for e in col.events(DORMANCY):
        if e.get("message_id") in ids:
            by_input.setdefault(e["message_id"], set()).add(e["id"])
    bad = {k: v for k, v in by_input.items() if len(v) > 1}
    assert not bad, f"inputs published under several event ids: {list(bad.items())[:5]}"


def outbox_len(stack, shard=0):
    return stack.store(SERVICE).outbox_len(shard)


def committed_sleepers(stack, room_personas):
    """True when every (room, persona) is stored asleep in Redis (the input
    was committed)."""
    store = stack.store(SERVICE)
    by_room = {}
    for room, persona in room_personas:
        by_room.setdefault(room, []).append(persona)
    for room, personas in by_room.items():
        _, doc = store.state(room)
        if doc is None:
            return False
        levels = {p["id"]: p.get("level") for p in (doc.get("parts") or {}).values()}
        levels.update({p["id"]: p.get("level") for p in doc.get("personas") or []})
        if any(levels.get(p) != "sleep" for p in personas):
            return False
    return True


def log_since(svc, pos):
    return svc.stderr_text()[pos:]


def error_lines(text):
    import json

    out = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("level") == "error":
            out.append(doc)
    return out


def broker_log(stack):
    return _read(stack.broker.log) or ""


def expect_error_event(stack, pub):
    """A bad input yields its error event on sys/<service>/error."""
    col = stack.collector(topics=(ERROR_TOPIC,))
    room = uid("bad")
    topic = f"room/{room}/message"
    pub.publish(topic, b"hello, not json")
    ev = col.wait_event(ERROR_TOPIC, lambda e: e.get("reason") == "not_json" and e.get("topic") == topic,
                        timeout=10, what="the error event of a bad input")
    validate_outputs(col, filters=(ERROR_TOPIC,))
    return ev


def sleep_burst(tag, n, rooms):
    items = [ai(f"{tag}-r{i % rooms}", f"{tag}-p{i}", SLEEP, mid=f"{tag}-{i}") for i in range(n)]
    return items, [f"{tag}-{i}" for i in range(n)]


# --------------------------------------------------------------------------


def test_events_flow_through_one_child_process(stack):
    """One child, started by one of the service's threads (the link thread,
    which outlives it: PR_SET_PDEATHSIG acts on that thread), running the same
    executable and argv with VIGIL_OUTBOX_CHILD=<parent pid>, connected as
    vigil-dormancy-monitor-0-out with a clean session; a sleep and a wake
    event and an error event arrive; the parent's /metrics counts the
    child's outputs and has the restart counter at 0."""
    svc = stack.service(env=ENV)
    col = stack.collector()
    pub = stack.publisher()
    pid = svc.proc.pid
    child = the_child(svc)
    listers = lister_threads(pid, child)
    assert len(listers) == 1 and listers[0] != pid, \
        f"child {child} listed under threads {listers} of {pid}: expected one, not the main thread"
    check_child_identity(svc, child)

    room, persona = uid("room"), uid("p")
    pub.publish(*ai(room, persona, SLEEP, mid=f"{room}-sleep"))
    ev = col.wait_event(f"persona/{persona}/dormancy", lambda e: e.get("message_id") == f"{room}-sleep",
                        timeout=20, what="the sleep event")
    assert ev["level"] == "sleep", ev
    pub.publish(*human(room, "joel", "hi", mid=f"{room}-hi"))
    ev = col.wait_event(f"persona/{persona}/dormancy", lambda e: e.get("message_id") == f"{room}-hi",
                        timeout=20, what="the wake event")
    assert ev["level"] == "active", ev
    # Error events (in memory, not in the Redis outbox) go out through the child.
    expect_error_event(stack, pub)

    # The parent counts what the child published (forwarded to it).
    wait_until(lambda: svc.metric("vigil_outputs_total") >= 2, 10, "parent vigil_outputs_total >= 2")
    names = {n for n, _, _ in svc.metrics()}
    assert "vigil_outbox_process_restarts_total" in names, sorted(n for n in names if "outbox" in n)
    assert svc.metric("vigil_outbox_process_restarts_total") == 0

    # The child's MQTT client: its own id, clean session.
    pat = re.compile(r"New client connected from \S+ as " + re.escape(CHILD_CLIENT_ID) + r" \(p\d+, c(\d)")
    m = wait_until(lambda: pat.search(broker_log(stack)), 5, f"{CHILD_CLIENT_ID} in the broker log")
    assert m.group(1) == "1", f"{CHILD_CLIENT_ID} connected without a clean session: {m.group(0)}"

    # Still the same single child.
    assert outbox_children(pid) == [child]
    assert svc.alive()
    validate_outputs(col)


def test_kill9_of_the_child_during_a_burst_loses_nothing(stack):
    """kill -9 of the child after 30 events of a 200-input burst (8 rooms),
    the second half published while it is down: the parent reaps it, logs
    an error, counts a restart and starts another child (new pid, same
    environment) within 3 s; every input's event arrives, one event id per
    input; the outbox drains; error events flow through the new child."""
    svc = stack.service(env=ENV)
    col = stack.collector(topics=(DORMANCY,))
    pub = stack.publisher()
    pid = svc.proc.pid
    first = the_child(svc)
    items, ids = sleep_burst(uid("k"), 200, rooms=8)
    log_pos = len(svc.stderr_text())

    sender = threading.Thread(target=lambda: pub.publish_many(items[:100]), daemon=True)
    sender.start()
    wait_until(lambda: len(seen_ids(col) & set(ids)) >= 30, 30, "30 events of the burst")
    os.kill(first, signal.SIGKILL)
    sender.join(scaled(60))
    assert not sender.is_alive(), "the first half of the burst was not acknowledged"
    # The second half is published while the child is dead or restarting.
    pub.publish_many(items[100:])

    # A new child within about 1-2 s (the parent waits a second first).
    second = the_child(svc, other_than=(first,), timeout=3)
    check_child_identity(svc, second)

    wait_all_events(col, ids, 60, "an event for every input after kill -9 of the child")
    one_event_id_per_input(col, ids)
    wait_until(lambda: first not in children_of(pid), 3, f"the killed child {first} reaped by the parent")
    wait_until(lambda: svc.metric("vigil_outbox_process_restarts_total") >= 1, 5,
               "vigil_outbox_process_restarts_total >= 1")
    errors = error_lines(log_since(svc, log_pos))
    assert errors, "no error logged for the child's unexpected exit"
    wait_until(lambda: outbox_len(stack) == 0, 20, "the outbox to drain")
    # Error events go out through the new child too.
    expect_error_event(stack, pub)
    assert outbox_children(pid) == [second], outbox_children(pid)
    assert svc.alive()


def test_kill9_of_the_parent_ends_the_child_and_a_restart_publishes_the_rest(stack):
    """kill -9 of the service during a 100-input burst: its child ends
    (gone, or a zombie) within 3 s; after a restart a new child runs, every
    input's event arrives and a new input's event flows."""
    svc = stack.service(env=ENV)
    col = stack.collector(topics=(DORMANCY,))
    pub = stack.publisher()
    child = the_child(svc)
    child_start = stat_of(child)[1]
    tag = uid("pk")
    items, ids = sleep_burst(tag, 100, rooms=5)

    sender = threading.Thread(target=lambda: pub.publish_many(items), daemon=True)
    sender.start()
    wait_until(lambda: len(seen_ids(col) & set(ids)) >= 10, 30, "10 events of the burst")
    svc.kill9()
    wait_until(lambda: not running(child, child_start), 3,
               f"the child {child} to exit after its parent's kill -9")
    sender.join(scaled(60))
    assert not sender.is_alive(), "the burst was not acknowledged by the broker"

    svc.start()
    second = the_child(svc, other_than=(child,))
    check_child_identity(svc, second)
    wait_all_events(col, ids, 60, "an event for every input after kill -9 of the parent and a restart")
    one_event_id_per_input(col, ids)

    # New inputs flow: a human wakes the sleepers of room 0.
    mark = col.mark()
    pub.publish(*human(f"{tag}-r0", "joel", "hi", mid=f"{tag}-hi"))
    ev = col.wait_event(DORMANCY, lambda e: e.get("message_id") == f"{tag}-hi", timeout=20,
                        since=mark, what="the wake event after the restart")
    assert ev["level"] == "active", ev


def test_sigterm_drains_through_the_child_and_leaves_no_process(stack):
    """With the child stopped (SIGSTOP), 40 inputs are committed and none
    of their events goes out (the parent publishes no outputs itself).
    Then SIGCONT and SIGTERM to the service: it exits 0, its child has
    ended by then, every committed event was published and the Redis
    outbox is empty (no restart follows to publish them)."""
    svc = stack.service(env=ENV)
    col = stack.collector(topics=(DORMANCY,))
    pub = stack.publisher()
    pid = svc.proc.pid
    child = the_child(svc)
    child_start = stat_of(child)[1]
    tag = uid("st")

    # One event through first: the child is connected and publishing.
    pub.publish(*ai(f"{tag}-warm", f"{tag}-warm", SLEEP, mid=f"{tag}-warm"))
    col.wait_event(DORMANCY, lambda e: e.get("message_id") == f"{tag}-warm", timeout=20)

    # The child stopped: inputs are committed (the parent does not publish
    # their events itself), their outputs wait in the Redis outbox.
    items, ids = sleep_burst(tag, 40, rooms=4)
    os.kill(child, signal.SIGSTOP)
    try:
        pub.publish_many(items)
        wait_until(lambda: committed_sleepers(stack, [(p["room"], p["sender"]) for _, p in items]),
                   20, "every input committed")
        time.sleep(0.3)
        early = seen_ids(col) & set(ids)
        assert not early, f"events published while the outbox child was stopped: {sorted(early)[:5]}"
        assert outbox_len(stack) >= len(ids)
    finally:
        os.kill(child, signal.SIGCONT)

    rc = svc.terminate(timeout=20)
    assert rc == 0, f"{SERVICE} exited with {rc} after SIGTERM"
    # Checked at once: the parent waits for its child before it exits.
    st = stat_of(child)
    assert not running(child, child_start), f"the child {child} of {pid} outlived its parent: {st}"
    # What was committed went out before the exit (nothing restarts it).
    wait_all_events(col, ids, 5, "the committed events, drained at SIGTERM")
    assert outbox_len(stack) == 0


def test_default_mode_starts_no_child(stack):
    """VIGIL_OUTBOX_PROCESS unset: no child process; the service publishes
    (and counts) its outputs itself, on its own second connection
    vigil-<service>-<shard>-out (the outbox thread's, not paho's)."""
    env = {k: v for k, v in ENV.items() if k != "VIGIL_OUTBOX_PROCESS"}
    svc = stack.service(env=env)
    col = stack.collector(topics=(DORMANCY,))
    pub = stack.publisher()
    room = uid("room")
    pub.publish(*ai(room, f"{room}-p", SLEEP, mid=f"{room}-s"))
    col.wait_event(DORMANCY, lambda e: e.get("message_id") == f"{room}-s", timeout=20)
    assert children_of(svc.proc.pid) == []
    log = broker_log(stack)
    assert f" as vigil-{SERVICE}-0 (" in log
    assert f" as {CHILD_CLIENT_ID} (" in log
    wait_until(lambda: svc.metric("vigil_outputs_total") >= 1, 10, "vigil_outputs_total >= 1")
