#!/usr/bin/python3
"""Vigil performance harness (a benchmark, not a test). Run via scripts/bench.

For each broker setting (mosquitto as shipped, i.e. WITHOUT set_tcp_nodelay,
and with set_tcp_nodelay true; --broker-nodelay picks one) it starts its own
mosquitto (the project's config with that setting), redis-server (AOF,
appendfsync everysec) and dormancy-monitor (release build) on free loopback
ports in a temporary folder, then measures, for the same stream of N QoS 1
room messages:

  1. broker relay        publisher -> broker -> plain QoS 1 subscriber; and
                         the same payloads through mosquitto_pub -l ->
                         mosquitto_sub (mosquitto's own clients, one topic)
  2. dormancy-monitor    publisher -> broker -> service (state committed in
                         Redis, persona/{p}/dormancy event out) -> subscriber,
                         with the service's CPU time (/proc) and Redis's time
                         per commit (INFO commandstats: the commit's reads
                         and transaction, COMMIT_COMMANDS)
  3. latency, paced      stages 1 and 2 again at a fixed rate (default 1,000
                         msg/s), p50/p99 from publish to event; the first
                         --warmup messages (default 20) are published and
                         awaited before the clock starts, because a broker
                         without TCP_NODELAY holds its first PUBLISH to a
                         new subscriber until the subscriber's delayed ACK
                         of its SUBACK (about 17 ms on loopback here)
     sustained          (--sustained) paced steps of rising rate until the
                         p99 exceeds --sustained-p99: the highest rate at
                         which input and output flow at once (a burst lets
                         the broker queue the input, so stage 2 does not
                         say this); see sustained_rate
  4. replicas            (--replicas) two replicas, VIGIL_SHARD 0/2 and 1/2,
                         against the same stream
and the service's resident memory idle (after start, and after the run).
Stage 2 also prints Redis's time per input by command (INFO commandstats;
the commands EXEC runs are counted both on their own and in EXEC).
For stages 2 and 4 it also splits CPU time per input by process (the
service or each replica, the broker, Redis, the bench itself), which says
how much of the machine the whole pipeline needs per input. A service's
CPU includes its child processes: with VIGIL_OUTBOX_PROCESS=1 (set in the
bench's environment) its outbox publisher process, which the split shows
as "publisher".
--persona-cost P1,P2,... then times inputs on rooms of P personas each
(msg/s, wall time, CPU time and Redis time per input).

Workloads (--mix):
  ai     every message is an AI message "@self dormant sleep" / "@self
         awake", alternating per persona (200 rooms x 5 personas by default)
  human  the mixed one: 20 rooms with one persona each; each room's stream
         alternates an AI "@self dormant sleep" and a human "hi" (which wakes
         the persona again)
Either way every input changes one persona's level and yields exactly one
event naming it (message_id), so the service path measured is the full one:
parse, route, Redis commit with dedupe + outbox + snapshots, publish of the
event and of the retained persona and room states.

Stage 2 also says how many MQTT packets the broker received and sent per
input, against the relay's per message (mosquitto's $SYS/broker/messages/
received and /sent, which count packets of every type; the bench's broker
publishes $SYS every second), and how many outputs the outbox published
and skipped as superseded per input. When the broker is the bottleneck and
a packet costs it the same whoever sends it, the quotient of the two packet
counts is the ratio its work allows.

Clients (--clients): by default every stage's load comes from
vigil-bench-load (tools/bench-load, built with the services: <build dir>/
tools/bench-load/vigil-bench-load), one single-threaded C process holding
the publisher's and the subscriber's MQTT connections, which spends 7-15
us of CPU per input (nearly all of it the kernel's loopback TCP); --clients python uses the Python paho
clients instead (a publisher in this process, the subscriber in a process
of its own), which spend 65-83 us per input on a 2-core machine, more than
the broker, Redis and the service together, and so take CPU from what they
measure and make the relay rate move from run to run. Either way times are
CLOCK_MONOTONIC, shared by all processes, and the CPU split's "bench" is
the load generator's CPU (with C clients, vigil-bench-load's own share is
shown beside it).
"""

import argparse
import gc
import json
import multiprocessing as mp
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402  (the integration tests' process helpers)

KEY_RE = {
    "id": re.compile(rb'"id"\s*:\s*"([^"]+)"'),
    "message_id": re.compile(rb'"message_id"\s*:\s*"([^"]+)"'),
}

FILLER = ("Looking at the failing build log again: the linker error comes from the "
          "json-c symbol version, and I think pinning the package fixes it.")


# Messages a paced stage publishes and awaits before its clock starts (see
# run_stage); --warmup 0 times them too.
PACED_WARMUP = 20

# --clients: "c" = vigil-bench-load (tools/bench-load) drives every stage,
# "python" = the paho clients below (publish(), Subscriber). LOAD_TOOL is
# set by set_clients(); a script importing this module without calling it
# (scripts/bench-instructions) gets the release tree's tool when it is
# built, else the Python clients (one warning).
CLIENTS = "c"
LOAD_TOOL = None
TOOL_CPU = 0.0  # CPU seconds of every vigil-bench-load run so far (counted at its exit)
TOOL_KEY = "vigil-bench-load"  # its entry in cpu_by_process
_tool_warned = False


def load_tool_path(build_dir):
    return os.path.join(os.path.abspath(build_dir), "tools", "bench-load", "vigil-bench-load")


def add_clients_arg(ap):
    """--clients (scripts/bench and scripts/bench-chat)."""
    ap.add_argument("--clients", choices=("c", "python"), default="c",
                    help="the load generator: c = vigil-bench-load (tools/bench-load, from "
                         "--build-dir; default), one C process with both MQTT connections, "
                         "7-15 us of CPU per input; python = the Python paho clients "
                         "(65-83 us per input), for comparison")


def set_clients(a):
    """Applies --clients; exits with a clear error when the C tool is not
    built in a.build_dir."""
    global CLIENTS, LOAD_TOOL
    CLIENTS = a.clients
    if CLIENTS == "c":
        LOAD_TOOL = load_tool_path(a.build_dir)
        if not os.access(LOAD_TOOL, os.X_OK):
            sys.exit(f"error: {LOAD_TOOL} not found: build that tree (cmake --build "
                     f"{a.build_dir}, or scripts/build release) or use --clients python")


def _tool():
    """The vigil-bench-load to run, or None for the Python clients."""
    global LOAD_TOOL, _tool_warned
    if CLIENTS != "c":
        return None
    if LOAD_TOOL is None:
        path = load_tool_path(os.path.join(ROOT, "build", "release"))
        if os.access(path, os.X_OK):
            LOAD_TOOL = path
        else:
            if not _tool_warned:
                print(f"warning: {path} not built; using the Python clients", file=sys.stderr,
                      flush=True)
                _tool_warned = True
            return None
    return LOAD_TOOL


def clients_label():
    return "vigil-bench-load (C)" if _tool() else "Python paho"


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


# --------------------------------------------------------------------------
# subscriber process


def subscriber_main(port, topic, key, expect, timeout, ready, count, conn):
    """Records (key, monotonic time) of the first arrival of each key."""
    rx = KEY_RE[key]
    seen = {}
    # no cyclic collection in this process: a pause would be counted as the
    # latency of every message waiting in the socket meanwhile (see publish)
    gc.disable()
    c = harness.new_client(f"bench-sub-{uuid.uuid4().hex[:8]}", v5=False, clean=True)
    c.max_inflight_messages_set(65535)

    def on_connect(client, userdata, flags, rc, properties=None):
        client.subscribe(topic, qos=1)

    def on_subscribe(client, userdata, mid, granted, properties=None):
        ready.set()

    def on_message(client, userdata, m):
        t = time.monotonic()
        mm = rx.search(m.payload)
        if mm:
            k = mm.group(1).decode()
            if k not in seen:
                seen[k] = t
                count.value = len(seen)

    c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
    c.connect("127.0.0.1", port, keepalive=30)
    deadline = time.monotonic() + timeout
    while len(seen) < expect and time.monotonic() < deadline:
        c.loop(timeout=0.05)
    c.disconnect()
    conn.send(seen)
    conn.close()


class Subscriber:
    def __init__(self, port, topic, key, expect, timeout):
        self.ready = mp.Event()
        self.count = mp.Value("i", 0)
        self.parent, child = mp.Pipe(duplex=False)
        self.p = mp.Process(target=subscriber_main,
                            args=(port, topic, key, expect, timeout, self.ready, self.count, child),
                            daemon=True)
        self.p.start()
        if not self.ready.wait(15):
            self.p.kill()
            raise RuntimeError(f"subscriber for {topic} did not subscribe")

    def result(self, timeout):
        if not self.parent.poll(timeout):
            self.p.kill()
            raise RuntimeError("subscriber did not report")
        seen = self.parent.recv()
        self.p.join(5)
        return seen


# --------------------------------------------------------------------------
# publisher


def make_stream(n, rooms, personas, topic_fmt, run, mix="ai"):
    """[(key, topic, payload bytes)]. mix "ai": toggles per (room, persona);
    mix "human": per room, an AI sleep then a human "hi", alternating."""
    out = []
    toggles = {}
    ts = harness.now_ms()
    for i in range(n):
        r = i % rooms
        p = (i // rooms) % personas
        k = toggles.get((r, p), 0)
        toggles[(r, p)] = k + 1
        room, persona, mid = f"room-{run}-{r}", f"persona-{r}-{p}", f"{run}-{i}"
        if mix == "human" and k % 2 == 1:
            body = {"id": mid, "room": room, "sender": f"human-{r}", "sender_type": "human",
                    "text": "hi", "ts": ts, "depth": 0, "mentions": []}
        else:
            body = {
                "id": mid, "room": room, "sender": persona, "sender_type": "ai",
                "text": "@self dormant sleep" if k % 2 == 0 else "@self awake",
                "ts": ts, "depth": 0, "mentions": [],
                # unknown fields are ignored by consumers: a realistic size
                "client_context": FILLER,
            }
        out.append((mid, topic_fmt.format(room=room), json.dumps(body).encode()))
    return out


# --------------------------------------------------------------------------
# measuring a process and Redis


def _stat_ticks(pid):
    """(utime + stime, cutime + cstime) of a process in clock ticks: the CPU
    of all its threads, and that of its children which exited and which it
    waited for. Raises OSError once the process is gone."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def child_pids(pid):
    """The direct children of a process: the pids in
    /proc/<pid>/task/<tid>/children of each of its threads (a child is
    listed under the thread that started it). [] once it is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out = set()
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.update(int(x) for x in f.read().split())
        except OSError:
            pass  # that thread ended meanwhile
    return sorted(out)


def cpu_parts(pid):
    """(own, children) CPU seconds of a process: own = utime + stime of its
    threads; children = the CPU of every process below it, e.g. the outbox
    publisher child of a service run with VIGIL_OUTBOX_PROCESS=1.

    The children's part is read at the moment of the call: the processes
    below pid that run then (found through /proc/<pid>/task/*/children,
    recursively; utime + stime + cutime + cstime of each), plus those that
    exited and were reaped (the cutime + cstime of their parent). So a
    child restarted during a stage counts whole: the CPU of the one that
    died is in the service's cutime + cstime once the service reaped it,
    the new one's is read live. A child that exits between listing it and
    reading its /proc/<child>/stat simply contributes nothing for that
    read (it shows up in its parent's cutime at the next one). Raises
    OSError when pid itself is gone."""
    own, reaped = _stat_ticks(pid)
    kids = reaped
    seen = {pid}
    todo = child_pids(pid)
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        try:
            c_own, c_reaped = _stat_ticks(c)
        except OSError:
            continue  # exited between the two reads
        kids += c_own + c_reaped
        todo += child_pids(c)
    tck = os.sysconf("SC_CLK_TCK")
    return own / tck, kids / tck


def cpu_seconds(pid):
    """CPU seconds of a process (all its threads) and of its child
    processes (cpu_parts): the whole cost of a service, including its
    outbox publisher process when it runs one."""
    own, kids = cpu_parts(pid)
    return own + kids


def is_service_name(name):
    return name == "service" or name.startswith("replica")


def cpu_by_process(named_pids):
    """{name: CPU seconds} of each (name, pid) and of this process (the
    bench's own publisher and subscriber threads), to split a stage's CPU
    between the service, the broker, Redis and the load generator. A
    service's ("service", "replicaN") child processes (VIGIL_OUTBOX_PROCESS=1:
    its outbox publisher) get an entry of their own right after it,
    "publisher" (or "replicaN publisher"), when it has any; the broker's
    and Redis's own figures are their processes alone, as before."""
    out = {}
    for name, pid in named_pids:
        if is_service_name(name):
            own, kids = cpu_parts(pid)
            out[name] = own
            if kids > 0:
                out["publisher" if name == "service" else f"{name} publisher"] = kids
        else:
            out[name] = _stat_ticks(pid)[0] / os.sysconf("SC_CLK_TCK")
    t = os.times()
    # this process and its waited-for children: the Python clients'
    # subscriber processes, or every vigil-bench-load run (waited for
    # before run_stage returns, so its CPU is in children_*)
    out["bench"] = t.user + t.system + t.children_user + t.children_system
    if _tool():
        out[TOOL_KEY] = TOOL_CPU  # the part of "bench" that is the C tool
    return out


def cpu_split(before, after, n):
    """'name N us' per input for each process between two cpu_by_process
    (an entry only in `after`, e.g. a publisher child started during the
    stage, counts from 0). vigil-bench-load's CPU is part of "bench" and
    shown beside it, "bench N (vigil-bench-load M)"."""
    def per(k):
        return (after[k] - before.get(k, 0.0)) * 1e6 / n
    parts = []
    for k in after:
        if k == TOOL_KEY:
            continue
        if k == "bench" and TOOL_KEY in after:
            parts.append(f"bench {per(k):.0f} ({TOOL_KEY} {per(TOOL_KEY):.0f})")
        else:
            parts.append(f"{k} {per(k):.0f}")
    return ", ".join(parts)


def thread_stats(pid):
    """{thread name: [user s, system s, voluntary switches]} of a process's
    threads, those of one name summed (libshared names its threads
    vigil-intake, vigil-publish, vigil-outbox, vigil-timers, ...). {} once
    the process is gone."""
    out = {}
    tck = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                name, rest = f.read().split(" (", 1)[1].rsplit(")", 1)
            fields = rest.split()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                vol = next(int(line.split()[1]) for line in f
                           if line.startswith("voluntary_ctxt_switches"))
        except (OSError, StopIteration, ValueError, IndexError):
            continue  # the thread ended meanwhile
        row = out.setdefault(name, [0.0, 0.0, 0])
        row[0] += int(fields[11]) / tck
        row[1] += int(fields[12]) / tck
        row[2] += vol
    return out


def thread_split(before, after, n):
    """'name user/system us, wakeups' per input of each thread of a process
    between two thread_stats, the busiest first: the kernel's share of a
    service's CPU (its loopback TCP) is about half, and which thread wakes
    how often says where it goes."""
    rows = []
    for name, (u, sy, vol) in after.items():
        b = before.get(name, [0.0, 0.0, 0])
        rows.append((name, (u - b[0]) * 1e6 / n, (sy - b[1]) * 1e6 / n, (vol - b[2]) / n))
    rows.sort(key=lambda r: -(r[1] + r[2]))
    return ", ".join(f"{name} {u:.0f}/{sy:.0f} us {w:.2f} wakeups" for name, u, sy, w in rows
                     if u + sy >= 0.5 or w >= 0.01)


class SyscallCount:
    """System calls by thread name of a process while a stage runs, counted
    by `perf stat -e raw_syscalls:sys_enter --per-thread` (package
    linux-perf; needs kernel.perf_event_paranoid <= 1 or root). On this
    kind of machine a service's CPU time follows its system calls and
    wakeups more than its instructions, and their count moves far less
    between runs than CPU time does. `why` says why nothing was counted."""

    def __init__(self, pid):
        self.out = None
        self.proc = None
        self.why = None
        if not shutil.which("perf"):
            self.why = "perf not found (package linux-perf)"
            return
        fd, self.out = tempfile.mkstemp(prefix="vigil-bench-perf-")
        os.close(fd)
        self.proc = subprocess.Popen(["perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter",
                                      "--per-thread", "-p", str(pid), "-o", self.out],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.3)  # attached before the stage starts
        if self.proc.poll() is not None:
            self.why = "perf stat failed: " + self.proc.stderr.read().decode(errors="replace").strip()[:200]

    def stop(self, n):
        """'name calls' per input of each thread, the busiest first, or the
        reason there is none."""
        if self.why or self.proc is None:
            return f"not counted: {self.why}"
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "not counted: perf stat did not stop"
        by = {}
        with open(self.out) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) < 4 or parts[3] != "raw_syscalls:sys_enter":
                    continue
                try:
                    count = int(parts[1])
                except ValueError:
                    continue  # "<not counted>": the main thread, idle
                name = parts[0].rsplit("-", 1)[0]
                by[name] = by.get(name, 0) + count
        os.unlink(self.out)
        if not by:
            err = self.proc.stderr.read().decode(errors="replace").strip()[:200]
            return f"not counted: perf stat counted nothing ({err or 'no tracepoint output'})"
        rows = sorted(by.items(), key=lambda kv: -kv[1])
        total = sum(by.values()) / n
        return f"{total:.2f} in all: " + ", ".join(f"{k} {v / n:.2f}" for k, v in rows
                                                   if v / n >= 0.005)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def redis_reset_stats(redis):
    c = redis.client()
    try:
        c.config_resetstat()
    finally:
        c.close()


def redis_command_usec(redis, n, top=12):
    """Redis time per input by command since the last reset, as text
    ("zadd 8.0 (2.00 calls), lrange 2.3 (0.05 calls), ..."), the costliest
    first; so a Redis figure well above the commits' can be traced to the
    command that spends it."""
    c = redis.client()
    try:
        stats = c.info("commandstats")
    finally:
        c.close()
    rows = sorted(((k[len("cmdstat_"):], int(v.get("calls", 0)), float(v.get("usec", 0)))
                   for k, v in stats.items() if k.startswith("cmdstat_")),
                  key=lambda r: -r[2])
    total = sum(r[2] for r in rows) / n
    parts = [f"{name} {usec / n:.1f} ({calls / n:.2f} calls)" for name, calls, usec in rows[:top]]
    return f"{total:.0f} in commands: " + ", ".join(parts)


def commit_rounds(m0, m1):
    """How the service's commits travelled between two metric scrapes: the
    share that shared a Redis round trip with others (the batched intake's
    pipelined runs), and how often a decision found its room decoded in
    memory (vigil_record_cache_lookups_total)."""
    def d(name, **labels):
        return harness.metric_value(m1, name, **labels) - harness.metric_value(m0, name, **labels)
    commits, piped = d("vigil_commits_total"), d("vigil_commits_pipelined_total")
    if not commits:
        return "no commits"
    hit = d("vigil_record_cache_lookups_total", result="hit")
    miss = d("vigil_record_cache_lookups_total", result="miss")
    return (f"{piped / commits * 100:.0f} % of {commits:.0f} commits shared a round trip; "
            f"rooms found decoded in memory {hit:.0f}, decoded again {miss:.0f}")


# The commands a commit sends (libshared/src/store_commit.c): its reads
# under WATCH, then the transaction. EXEC itself is left out: Redis counts
# the commands it runs under their own names as well.
COMMIT_COMMANDS = {"watch", "unwatch", "multi", "discard", "hget", "zscore", "type", "hgetall",
                   "hkeys", "hset", "hdel", "zadd", "zrem", "zremrangebyrank", "rpush", "del",
                   "set", "sadd", "srem", "xadd", "xtrim", "xlen", "pexpire"}


def redis_commit_usec(redis, commits):
    """Redis's time in the commands of the commits since the last reset
    (INFO commandstats), per commit; NaN without commits."""
    c = redis.client()
    try:
        stats = c.info("commandstats")
    finally:
        c.close()
    usec = sum(float(v.get("usec", 0)) for k, v in stats.items()
               if k.startswith("cmdstat_") and k[len("cmdstat_"):] in COMMIT_COMMANDS)
    return usec / commits if commits else float("nan")


def commits_between(m0, m1):
    """State commits the service made between two metric scrapes."""
    return int(harness.metric_value(m1, "vigil_commits_total") - harness.metric_value(m0, "vigil_commits_total"))


# --broker-max-inflight: None keeps the project config's
# max_inflight_messages (100); 0 leaves mosquitto's default (20); N sets N.
# It is the Receive Maximum the broker announces, and so the outbox's window.
BROKER_MAX_INFLIGHT = None


def add_broker_inflight_arg(ap):
    """--broker-max-inflight (scripts/bench and scripts/bench-chat)."""
    ap.add_argument("--broker-max-inflight", type=int, default=None, metavar="N",
                    help="the broker's max_inflight_messages, which it announces as its Receive "
                         "Maximum and which sets the outbox's window: 0 = mosquitto's default (20), "
                         "as a broker configured by someone else most likely has (default: the "
                         "project config's 100)")


def set_broker_inflight(ap, a):
    """Checks --broker-max-inflight and applies it to broker_conf."""
    global BROKER_MAX_INFLIGHT
    if a.broker_max_inflight is not None and a.broker_max_inflight < 0:
        ap.error("--broker-max-inflight must be 0 (mosquitto's default) or positive")
    BROKER_MAX_INFLIGHT = a.broker_max_inflight


def broker_inflight_label():
    if BROKER_MAX_INFLIGHT is None:
        return "max_inflight_messages 100 (project config)"
    if BROKER_MAX_INFLIGHT == 0:
        return "max_inflight_messages 20 (mosquitto's default)"
    return f"max_inflight_messages {BROKER_MAX_INFLIGHT}"


def drop_session(port, client_id):
    """Ends the broker's persistent session of client_id (a service stopped
    after its stage): connects with clean start and no session expiry, then
    disconnects. Left alone, the session of a service subscribed to
    room/+/message would gather every later stage's messages, and the
    broker, which saves its database every second (autosave_interval 1),
    would stall tens of milliseconds on each save: that would be measured
    as the next service's latency."""
    c = harness.new_client(client_id, v5=True)
    done = threading.Event()
    c.on_connect = lambda *a, **k: done.set()
    c.connect("127.0.0.1", port, keepalive=10, clean_start=True)
    c.loop_start()
    try:
        if not done.wait(10):
            raise RuntimeError(f"cannot connect as {client_id} to drop its session")
    finally:
        c.disconnect()
        c.loop_stop()


def broker_conf(workdir, nodelay):
    """The project's broker config with set_tcp_nodelay as asked (absent =
    mosquitto's default, false: the broker as shipped) and, with
    --broker-max-inflight, max_inflight_messages as asked. It also
    publishes $SYS every second instead of every ten (broker_packets):
    a handful of messages a second to nobody, beside tens of thousands."""
    path = os.path.join(workdir, f"mosquitto-nodelay-{'on' if nodelay else 'off'}.conf")
    harness.project_broker_conf(path, nodelay=bool(nodelay), max_inflight=BROKER_MAX_INFLIGHT)
    with open(path, "a") as f:
        f.write(f"sys_interval {SYS_INTERVAL_S}\n")
    return path


SYS_INTERVAL_S = 1


def broker_packets(port):
    """(received, sent): the MQTT packets of every type the broker has
    received and sent since it started ($SYS/broker/messages/received and
    /sent), or None without mosquitto_sub. The retained figures can be a
    second or two old, so it waits for the broker's next publish of each
    (-R), which also counts this subscriber's own few packets."""
    if not shutil.which("mosquitto_sub"):
        return None
    topics = ("$SYS/broker/messages/received", "$SYS/broker/messages/sent")
    args = ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-v", "-R", "-C", "2", "-W",
            "10"]
    for t in topics:
        args += ["-t", t]
    out = subprocess.run(args, capture_output=True, timeout=30).stdout.decode(errors="replace")
    got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    try:
        return tuple(int(got[t]) for t in topics)
    except (KeyError, ValueError):
        return None


def packets_per(p0, p1, n):
    """(in, out) packets per message between two broker_packets readings."""
    if not p0 or not p1 or n <= 0:
        return None
    return ((p1[0] - p0[0]) / n, (p1[1] - p0[1]) / n)


def packets_line(r):
    """The summary's line on the broker's packets: the relay's per message
    against the service path's per input. Their quotient is the ratio the
    broker's work allows when it is the bottleneck and a packet costs it
    the same whoever sends it."""
    rp, sp = r.get("relay_packets"), r.get("service_packets")
    if not rp or not sp or sum(sp) <= 0:
        return None
    return (f"MQTT packets through the broker ($SYS/broker/messages): relay {rp[0]:.2f} in / "
            f"{rp[1]:.2f} out per message, service {sp[0]:.2f} in / {sp[1]:.2f} out per input "
            f"(quotient {sum(rp) / sum(sp):.2f}); the outbox published {r['outputs'][0]:.2f} "
            f"outputs per input and skipped {r['outputs'][1]:.2f} as superseded")


WINDOW = 500  # QoS 1 messages in flight at most (sent, not yet acknowledged)


def run_load_tool(port, stream, sub_topic, key, timeout, rate=None, warmup=0, window=WINDOW,
                  progress=None, acked=None):
    """Runs vigil-bench-load once over `stream` ([(key, topic, payload)]):
    written to a temporary stream file, published at QoS 1 (paced at `rate`
    if given) with at most `window` unacknowledged (the broker's Receive
    Maximum at most), and, with `sub_topic`, each key's first arrival at a
    subscriber of it timed (the first `warmup` messages awaited before the
    clock starts). Its stdout is read live: progress(published, received)
    about once a second, acked() at the moment the broker has acknowledged
    every timed message. Returns (t_first, t_all_acked, [(key, publish
    time, arrival time or None)]) in time.monotonic() seconds; raises
    RuntimeError with its reason when it fails."""
    global TOOL_CPU
    tool = _tool()
    d = tempfile.mkdtemp(prefix="vigil-bench-load-")
    try:
        sp, op, ep = (os.path.join(d, x) for x in ("stream", "out", "stderr"))
        with open(sp, "wb") as f:
            f.write(b"".join(b"%s\t%s\t%s\n" % (k.encode(), t.encode(), p) for k, t, p in stream))
        args = [tool, "--port", str(port), "--stream", sp, "--out", op, "--window", str(window),
                "--timeout", f"{timeout:g}", "--key-field", key]
        if sub_topic:
            args += ["--sub-topic", sub_topic, "--warmup", str(warmup)]
        if rate:
            args += ["--rate", repr(float(rate))]
        t_first = t_acked = None
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(ep, "wb") as err:
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err,
                                    stdin=subprocess.DEVNULL)
        # its own timeouts end it; this only guards against a hang
        guard = threading.Timer(2 * timeout + 120, proc.kill)
        guard.start()
        try:
            for line in proc.stdout:
                w = line.split()
                if not w:
                    continue
                if w[0] == b"progress" and progress:
                    progress(int(w[1]), int(w[2]))
                elif w[0] == b"acked":
                    t_first, t_acked = int(w[1]) / 1e9, int(w[2]) / 1e9
                    if acked:
                        acked()
            rc = proc.wait()
        finally:
            guard.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        TOOL_CPU += (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        if rc != 0 or t_acked is None:
            with open(ep, "rb") as f:
                why = f.read().decode(errors="replace").strip()[-2000:]
            raise RuntimeError(f"vigil-bench-load failed (exit {rc}): {why or 'no reason given'}")
        rows = []
        with open(op, "rb") as f:
            for line in f:
                k, pub, recv = line.rstrip(b"\n").split(b"\t")
                rows.append((k.decode(), int(pub) / 1e9,
                             int(recv) / 1e9 if recv != b"-1" else None))
        return t_first, t_acked, rows
    finally:
        shutil.rmtree(d, ignore_errors=True)


def publish(port, stream, rate=None, progress=None, window=WINDOW):
    """Publishes at QoS 1, as fast as the broker acknowledges with at most
    `window` unacknowledged (so a message's publish time is when it really
    leaves, not when it joins a client-side queue), or paced at `rate`/s.
    Returns (t_first, t_all_acked, {key: publish time}). With --clients c
    (the default) vigil-bench-load publishes (run_load_tool, no subscriber).

    Paced, Python's cyclic garbage collector is off while it publishes:
    after a loaded stage of 20,000 messages a collection stopped this
    process for 50-60 ms while a message's publish time was already taken
    (a capture of the loopback port showed the PUBLISH leave 58 ms after
    it), and chat-router's p99 read 12-60 ms where it was 3-4 ms."""
    if _tool():
        t0, t1, rows = run_load_tool(port, stream, None, "id", 120, rate=rate, window=window,
                                     progress=(lambda k, _r: progress(k)) if progress else None)
        return t0, t1, {k: pub for k, pub, _ in rows}
    if not rate:
        return _publish(port, stream, rate, progress, window)
    gc.collect()
    gc.disable()
    try:
        return _publish(port, stream, rate, progress, window)
    finally:
        gc.enable()


def _publish(port, stream, rate, progress, window):
    c = harness.new_client(f"bench-pub-{uuid.uuid4().hex[:8]}", v5=False, clean=True)
    c.max_inflight_messages_set(window)
    c.max_queued_messages_set(0)
    acked = [0]
    c.on_publish = lambda client, userdata, mid: acked.__setitem__(0, acked[0] + 1)
    connected = threading.Event()
    c.on_connect = lambda client, userdata, flags, rc, properties=None: connected.set()
    c.connect("127.0.0.1", port, keepalive=30)
    c.loop_start()
    # The clock starts at the CONNACK, so no message's time includes the
    # client's own connection set-up.
    if not connected.wait(15):
        c.loop_stop()
        raise RuntimeError("the bench publisher did not connect within 15 s")
    sent = {}
    infos = []
    t_first = time.monotonic()
    last_print = t_first
    for i, (key, topic, payload) in enumerate(stream):
        if rate:
            due = t_first + i / rate
            d = due - time.monotonic()
            if d > 0:
                time.sleep(d)
        while i - acked[0] >= window:
            time.sleep(0.0002)
        sent[key] = time.monotonic()
        infos.append(c.publish(topic, payload, qos=1))
        now = time.monotonic()
        if progress and now - last_print >= 1.0:
            last_print = now
            progress(i + 1)
    for info in infos:
        info.wait_for_publish(timeout=120)
        if not info.is_published():
            raise RuntimeError("a publish was not acknowledged within 120 s")
    t_acked = time.monotonic()
    c.disconnect()
    c.loop_stop()
    return t_first, t_acked, sent


# --------------------------------------------------------------------------


def run_stage(name, port, stream, sub_topic, key, timeout, rate=None, quiet=False, warmup=0,
              on_published=None):
    """Publishes `stream` and times each key's first arrival at a subscriber
    of `sub_topic`. With `warmup`, the first `warmup` messages are published
    and awaited before the clock starts and are left out of the figures: a
    broker without TCP_NODELAY holds its first PUBLISH to a new subscriber
    until that subscriber's delayed ACK of the SUBACK (about 17 ms here), and
    at a paced 1,000/s the dozen messages queued behind it would be the p99
    of a 1,000-message run, measuring the subscription's start, not the
    pipeline. `on_published`, if given, is called once the broker has
    acknowledged the last message, and what it returns is the result's
    "at_published". With --clients c (the default) one vigil-bench-load
    run does it all (_run_stage_c); with --clients python, the Python
    publisher here and a Subscriber process."""
    if _tool():
        return _run_stage_c(name, port, stream, sub_topic, key, timeout, rate, quiet, warmup,
                            on_published)
    n = len(stream)
    sub = Subscriber(port, sub_topic, key, n, timeout)

    def progress(k):
        if not quiet:
            print(f"  [{name}] published {k}/{n}, received {sub.count.value}", flush=True)

    if warmup:
        publish(port, stream[:warmup])
        deadline = time.monotonic() + timeout
        while sub.count.value < warmup and time.monotonic() < deadline:
            time.sleep(0.01)
        if sub.count.value < warmup:
            sub.p.kill()
            raise RuntimeError(f"[{name}] the {warmup} warm-up messages did not arrive within {timeout:.0f} s")
    t0, t_acked, sent = publish(port, stream[warmup:], rate=rate, progress=progress)
    at_published = on_published() if on_published else None
    # wait for the subscriber, printing progress
    deadline = time.monotonic() + timeout
    last = -1
    while sub.count.value < n and time.monotonic() < deadline:
        time.sleep(0.5)
        if not quiet and sub.count.value != last:
            last = sub.count.value
            print(f"  [{name}] published {n}/{n}, received {last}", flush=True)
    seen = sub.result(timeout=30)
    lat = [(seen[k] - sent[k]) * 1000 for k in sent if k in seen]
    timed = [seen[k] for k in sent if k in seen]
    t_last = max(timed) if timed else t0
    return {
        "n": n, "received": len(seen), "missing": n - len(seen),
        "pub_rate": len(sent) / (t_acked - t0),
        "rate": len(timed) / (t_last - t0) if timed else 0.0,
        "p50": pct(lat, 50), "p99": pct(lat, 99), "max": max(lat) if lat else float("nan"),
        "seconds": t_last - t0, "at_published": at_published,
    }


def _run_stage_c(name, port, stream, sub_topic, key, timeout, rate, quiet, warmup, on_published):
    """run_stage with vigil-bench-load: the same figures from its results
    (publish and first-arrival times per key, the first `warmup` left out of
    the figures but counted as received, as the Python subscriber does)."""
    n = len(stream)
    at = {}

    def progress(published, received):
        if not quiet:
            print(f"  [{name}] published {published}/{n}, received {received}", flush=True)

    def acked():
        if on_published:
            at["v"] = on_published()

    try:
        t0, t_acked, rows = run_load_tool(port, stream, sub_topic, key, timeout, rate=rate,
                                          warmup=warmup, progress=progress, acked=acked)
    except RuntimeError as e:
        raise RuntimeError(f"[{name}] {e}") from None
    timed = rows[warmup:]
    received = sum(1 for _, _, rv in rows if rv is not None)
    lat = [(rv - pb) * 1000 for _, pb, rv in timed if rv is not None]
    arrivals = [rv for _, _, rv in timed if rv is not None]
    t_last = max(arrivals) if arrivals else t0
    return {
        "n": n, "received": received, "missing": n - received,
        "pub_rate": len(timed) / (t_acked - t0) if t_acked > t0 else float("nan"),
        "rate": len(arrivals) / (t_last - t0) if arrivals and t_last > t0 else 0.0,
        "p50": pct(lat, 50), "p99": pct(lat, 99), "max": max(lat) if lat else float("nan"),
        "seconds": t_last - t0, "at_published": at.get("v"),
    }


CLI_RELAY_MAX = 40000  # messages through mosquitto_pub -l at most (cli_relay)


def cli_relay(port, stream, timeout):
    """The broker's relay for the same payloads measured with mosquitto's own
    clients, as the performance goals' reference was: `mosquitto_pub -l -q 1`
    (one topic, each payload a line of its stdin, the client's default 20
    in flight) into a persistent-session `mosquitto_sub -q 1 -C N`. The
    subscription is made first (`-E`: exit at its SUBACK), so the subscriber
    can start with the publisher and misses nothing. Returns msg/s from the
    publisher's start to the subscriber's exit, or None without the
    clients (package mosquitto-clients). At most the first CLI_RELAY_MAX
    payloads go through (see below)."""
    if not (shutil.which("mosquitto_pub") and shutil.which("mosquitto_sub")):
        return None
    # Between 60,000 and 80,000 lines in one run, mosquitto 2.0.11 cut
    # mosquitto_pub -l off ("disconnected due to out of memory" in its log,
    # on a machine with gigabytes free; mosquitto_pub still exits 0) and
    # mosquitto_sub waited out its -W. A rate needs no more than this many.
    stream = stream[:CLI_RELAY_MAX]
    n = len(stream)
    topic = f"relaycli/{uuid.uuid4().hex[:8]}"
    cid = f"bench-cli-{uuid.uuid4().hex[:8]}"
    base = ["-h", "127.0.0.1", "-p", str(port), "-q", "1"]
    subprocess.run(["mosquitto_sub", *base, "-c", "-i", cid, "-t", topic, "-E"], check=True,
                   stdout=subprocess.DEVNULL, timeout=30)
    lines = b"".join(payload + b"\n" for _, _, payload in stream)
    t0 = time.monotonic()
    sub = subprocess.Popen(["mosquitto_sub", *base, "-c", "-i", cid, "-t", topic, "-C", str(n),
                            "-W", str(int(timeout))], stdout=subprocess.DEVNULL)
    try:
        pub = subprocess.run(["mosquitto_pub", *base, "-l", "-t", topic], input=lines, timeout=timeout)
        # A failed publisher leaves the subscriber short: do not wait out its -W.
        rc = sub.wait(timeout=timeout) if pub.returncode == 0 else None
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    t1 = time.monotonic()
    if pub.returncode != 0 or rc != 0:
        raise RuntimeError(f"mosquitto_pub/mosquitto_sub relay failed (exit {pub.returncode}/{rc})")
    return n / (t1 - t0)


def sustained_rate(a, port, svc, stream_of, sub_topic, key, label):
    """The highest paced rate at which the service keeps pace: steps through
    --sustained-rates (each step --sustained-seconds of messages, published
    at that rate after the usual warm-up) until a step's p99 publish-to-event
    latency exceeds --sustained-p99 ms, then halves the gap between the last
    rate kept and the first missed twice (to the nearest 25/s). A backlog
    that grows for the whole step shows as a p99 of seconds.

    A burst (stage 2) measures something else: the broker queues the input
    and the service takes it in, then publishes; here input and output must
    flow at once, as under a steady load. For a failing step it also reads,
    when the broker has acknowledged the step's last message, how many of
    the step's inputs the service had not yet taken in and how many outputs
    waited in its outbox, which says whether intake or publishing fell
    behind. A step whose publisher could not offer 95 % of its rate ends the
    search (the rate found is then a lower bound). stream_of(n, tag) makes
    a step's input (fresh message ids per tag); each input yields one
    message on sub_topic naming it under `key`."""
    steps = []

    def step(rate):
        n = max(4 * PACED_WARMUP, int(rate * a.sustained_seconds))
        in0 = harness.metric_value(svc.metrics(), "vigil_inputs_total")

        def backlog():
            m = svc.metrics()
            return {"intake_behind": int(n - (harness.metric_value(m, "vigil_inputs_total") - in0)),
                    "outbox_pending": int(harness.metric_value(m, "vigil_outbox_pending"))}

        r = run_stage(f"sustained {rate:.0f}/s", port, stream_of(n, f"su{rate:.0f}"),
                      sub_topic, key, a.timeout, rate=rate, quiet=True,
                      warmup=PACED_WARMUP, on_published=backlog)
        r["offered"] = rate
        r["short"] = r["pub_rate"] < 0.95 * rate
        r["ok"] = r["missing"] == 0 and r["p99"] <= a.sustained_p99
        b = r["at_published"]
        print(f"  [{label}] {rate:.0f}/s for {a.sustained_seconds:g} s: p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms, "
              f"events at {r['rate']:.0f}/s -> {'keeps pace' if r['ok'] else 'falls behind'}"
              f" (at the last publish: {b['intake_behind']} inputs not taken in, "
              f"{b['outbox_pending']} outputs in the outbox)"
              + (f"; the publisher offered only {r['pub_rate']:.0f}/s" if r["short"] else ""), flush=True)
        steps.append(r)
        return r

    lo = hi = None
    for rate in (float(x) for x in a.sustained_rates.split(",") if x.strip()):
        r = step(rate)
        if not r["ok"]:
            hi = rate
            break
        lo = rate
        if r["short"]:
            break
    for _ in range(2):
        if lo is None or hi is None:
            break
        mid = round((lo + hi) / 2 / 25) * 25
        if mid <= lo or mid >= hi:
            break
        if step(mid)["ok"]:
            lo = mid
        else:
            hi = mid
    first_miss = next((x for x in steps if x["offered"] == hi), None)
    return {"rate": lo, "miss": first_miss, "bound": any(x["short"] for x in steps), "steps": steps}


def sustained_line(a, s):
    """One summary line for sustained_rate's result."""
    crit = f"p99 <= {a.sustained_p99:g} ms over {a.sustained_seconds:g} s steps"
    kept = f"{s['rate']:.0f} msg/s" if s["rate"] is not None else f"none of {a.sustained_rates}"
    if s["bound"]:
        kept += " or more (the bench's publisher could not offer more)"
    elif s["rate"] is not None and s["miss"] is None:
        kept += " or more (every step kept pace)"
    line = f"sustained ({crit}): {kept}"
    m = s["miss"]
    if m:
        b = m["at_published"]
        line += (f"; at {m['offered']:.0f}/s p50 {m['p50']:.0f} ms p99 {m['p99']:.0f} ms, events at {m['rate']:.0f}/s, "
                 f"at the last publish {b['intake_behind']} inputs not yet taken in and "
                 f"{b['outbox_pending']} outputs in the outbox")
    return line


def publisher_only(port, stream):
    t0, t_acked, _ = publish(port, stream)
    return {"n": len(stream), "rate": len(stream) / (t_acked - t0), "seconds": t_acked - t0}


def start_service(work, name, broker, redis, prefix, extra_env, build_dir, instance, shard=None):
    env = {
        "VIGIL_MQTT_URL": broker.url, "VIGIL_REDIS_URL": redis.url,
        "VIGIL_REDIS_PREFIX": prefix, "VIGIL_LOG_LEVEL": "warn",
    }
    env.update(extra_env)
    # VIGIL_* variables of bench's own environment reach the service (e.g.
    # VIGIL_OUTBOX_PROCESS=1 scripts/bench ...), over the bench's defaults.
    env.update({k: v for k, v in os.environ.items() if k.startswith("VIGIL_")})
    if shard:
        env["VIGIL_SHARD"] = shard
    svc = harness.Service(name, work, env, build_dir=build_dir, instance=instance)
    svc.start(timeout=30)
    return svc


DORMANCY_ENV = {
    # keep the timed rules out of a long run: every message is a manual
    # change or a wake, so the figures measure one path
    "VIGIL_DORMANCY_NO_HUMAN_MS": "86400000", "VIGIL_DORMANCY_AI_ONLY_MS": "86400000",
    # a human message wakes every sleeper (the literal wake-on-human rule), so
    # each "hi" of the mixed workload yields one event
    "VIGIL_DORMANCY_HUMAN_WAKES": "all",
}


def run_setting(a, work, nodelay, label):
    """Every stage against a fresh broker (with or without TCP_NODELAY),
    Redis and service. Returns the figures."""
    d = os.path.join(work, f"nodelay-{'on' if nodelay else 'off'}")
    os.makedirs(d, exist_ok=True)
    redis = broker = None
    svcs = []
    res = {"label": label}
    tag = "nodelay-on" if nodelay else "nodelay-off"
    try:
        redis = harness.RedisServer(d, appendfsync=a.appendfsync).start()
        broker = harness.Mosquitto(d, source_conf=broker_conf(d, nodelay)).start()
        svc = start_service(d, "dormancy-monitor", broker, redis, "bench:", DORMANCY_ENV,
                            a.build_dir, f"bench-{tag}")
        svcs.append(svc)
        time.sleep(1.0)
        res["rss_start"] = rss_mib(svc.proc.pid)
        mk = lambda n, fmt, run: make_stream(n, a.rooms, a.personas, fmt, run, a.mix)  # noqa: E731
        print(f"[{label}] stage 1/4: broker relay (plain subscriber)", flush=True)
        pk0 = broker_packets(broker.port)
        res["relay"] = run_stage("relay", broker.port, mk(a.n, "relay/{room}/message", "r"),
                                 "relay/+/message", "id", a.timeout)
        res["relay_packets"] = packets_per(pk0, broker_packets(broker.port), a.n)
        res["relay_cli"] = cli_relay(broker.port, mk(a.n, "relay/{room}/message", "rc"), a.timeout)
        pk0 = broker_packets(broker.port)
        print(f"[{label}] stage 2/4: dormancy-monitor", flush=True)
        redis_reset_stats(redis)
        cpu0 = cpu_seconds(svc.proc.pid)
        procs = [("service", svc.proc.pid), ("broker", broker.proc.pid), ("redis", redis.proc.pid)]
        split0 = cpu_by_process(procs)
        threads0 = thread_stats(svc.proc.pid)
        m0 = svc.metrics()
        sysc = SyscallCount(svc.proc.pid) if a.syscalls else None
        res["service"] = run_stage("service", broker.port, mk(a.n, "room/{room}/message", "s"),
                                   "persona/+/dormancy", "message_id", a.timeout)
        if sysc:
            res["syscalls"] = sysc.stop(a.n)
        m1 = svc.metrics()
        res["rounds"] = commit_rounds(m0, m1)
        res["cpu_us"] = (cpu_seconds(svc.proc.pid) - cpu0) * 1e6 / a.n
        res["cpu_split"] = cpu_split(split0, cpu_by_process(procs), a.n)
        res["thread_split"] = thread_split(threads0, thread_stats(svc.proc.pid), a.n)
        res["commits"] = commits_between(m0, m1)
        res["redis_us"] = redis_commit_usec(redis, res["commits"])
        res["redis_split"] = redis_command_usec(redis, a.n)
        outputs = harness.metric_value(m1, "vigil_outputs_total") - harness.metric_value(
            m0, "vigil_outputs_total")
        skipped = harness.metric_value(m1, "vigil_outbox_superseded_total") - harness.metric_value(
            m0, "vigil_outbox_superseded_total")
        res["outputs"] = (outputs / a.n, skipped / a.n)
        res["service_packets"] = packets_per(pk0, broker_packets(broker.port), a.n)
        ln = min(a.latency_n, a.n)
        print(f"[{label}] stage 3/4: latency at {a.latency_rate:.0f} msg/s ({ln} messages each)",
              flush=True)
        res["relay_paced"] = run_stage("relay-paced", broker.port, mk(ln, "relay/{room}/message", "rl"),
                                       "relay/+/message", "id", a.timeout, rate=a.latency_rate, quiet=True,
                                       warmup=PACED_WARMUP)
        res["service_paced"] = run_stage("service-paced", broker.port,
                                         mk(ln, "room/{room}/message", "sl"),
                                         "persona/+/dormancy", "message_id", a.timeout,
                                         rate=a.latency_rate, quiet=True, warmup=PACED_WARMUP)
        if a.sustained:
            print(f"[{label}] stage 3/4: sustained rate (paced steps until events fall behind)", flush=True)
            res["sustained"] = sustained_rate(a, broker.port, svc,
                                              lambda n, tag: mk(n, "room/{room}/message", tag),
                                              "persona/+/dormancy", "message_id", label)
        time.sleep(2.0)
        res["rss_after"] = rss_mib(svc.proc.pid)
        res["problems"] = svc.check() + ([] if svc.alive() else ["exited during the run"])
        if a.replicas:
            print(f"[{label}] stage 4/4: two replicas (VIGIL_SHARD 0/2 and 1/2)", flush=True)
            svc.terminate(timeout=20)
            svcs = [start_service(d, "dormancy-monitor", broker, redis, "bench:", DORMANCY_ENV,
                                  a.build_dir, f"bench-{tag}-{i}", shard=f"{i}/2") for i in range(2)]
            settle_shards(svcs, label)
            procs = [(f"replica{i}", x.proc.pid) for i, x in enumerate(svcs)] + [
                ("broker", broker.proc.pid), ("redis", redis.proc.pid)]
            split0 = cpu_by_process(procs)
            redis_reset_stats(redis)
            pk0 = broker_packets(broker.port)
            res["two"] = run_stage("two replicas", broker.port, mk(a.n, "room/{room}/message", "s2"),
                                   "persona/+/dormancy", "message_id", a.timeout)
            res["two_packets"] = packets_per(pk0, broker_packets(broker.port), a.n)
            res["two_split"] = cpu_split(split0, cpu_by_process(procs), a.n)
            res["two_redis_split"] = redis_command_usec(redis, a.n)
            for x in svcs:
                res["problems"] += x.check() + ([] if x.alive() else ["a replica exited"])
        for x in svcs:
            if x.alive():
                x.terminate(timeout=20)
        return res
    finally:
        for x in svcs:
            if x.alive():
                x.kill9()
        for p in (broker, redis):
            if p is not None:
                p.stop()


def settle_shards(svcs, label, timeout=60.0):
    """Waits until every replica uses one shard count only. The single
    replica stopped just before still counts as N=1 for about 10 s, and
    while it does each new replica also takes the keys it would own under
    N=1 (the rolling-change rule), so half the inputs would be committed
    twice (the second a no-op) and the stage would time a reshard."""
    print(f"[{label}] stage 4/4: waiting for the replicas to settle on N=2", flush=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(x.metric("vigil_shard_counts_in_use") == 1 for x in svcs):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the replicas did not settle on one shard count within {timeout:.0f} s")


def alternate_settings(a, work):
    """Both stacks (broker as shipped, broker with nodelay) up at once; the
    relay and service stages alternate between them a.rounds times, so a
    change of machine load hits both settings alike. Returns per setting the
    median relay rate, service rate and ratio."""
    stacks = []
    try:
        for nodelay in (False, True):
            d = os.path.join(work, f"alt-{'on' if nodelay else 'off'}")
            os.makedirs(d, exist_ok=True)
            redis = harness.RedisServer(d, appendfsync=a.appendfsync).start()
            broker = harness.Mosquitto(d, source_conf=broker_conf(d, nodelay)).start()
            stacks.append({"nodelay": nodelay, "redis": redis, "broker": broker, "svc": None,
                           "relay": [], "service": []})
            stacks[-1]["svc"] = start_service(d, "dormancy-monitor", broker, redis, "bench:",
                                              DORMANCY_ENV, a.build_dir,
                                              f"bench-alt-{'on' if nodelay else 'off'}")
        for r in range(a.rounds):
            for st in stacks:
                name = "nodelay on" if st["nodelay"] else "as shipped"
                print(f"[alternating {r + 1}/{a.rounds}, {name}] relay and service", flush=True)
                port = st["broker"].port
                st["relay"].append(run_stage(
                    "relay", port, make_stream(a.n, a.rooms, a.personas, "relay/{room}/message",
                                               f"ar{r}", a.mix), "relay/+/message", "id",
                    a.timeout, quiet=True)["rate"])
                st["service"].append(run_stage(
                    "service", port, make_stream(a.n, a.rooms, a.personas, "room/{room}/message",
                                                 f"as{r}", a.mix), "persona/+/dormancy",
                    "message_id", a.timeout, quiet=True)["rate"])
        out = []
        for st in stacks:
            ratios = [sv / rl for sv, rl in zip(st["service"], st["relay"]) if rl]
            out.append({"label": "nodelay on" if st["nodelay"] else "as shipped",
                        "relay": statistics.median(st["relay"]),
                        "service": statistics.median(st["service"]),
                        "ratio": statistics.median(ratios) if ratios else float("nan"),
                        "services": st["service"]})
        return out
    finally:
        for st in stacks:
            if st["svc"] is not None and st["svc"].alive():
                st["svc"].terminate(timeout=20)
            st["broker"].stop()
            st["redis"].stop()


def print_summary(a, results, payload_size):
    print()
    print("=" * 100)
    print(f"Vigil bench summary  (dormancy-monitor, --mix {a.mix}: N={a.n}, {a.rooms} rooms x "
          f"{a.personas} personas, ~{payload_size} B payloads, QoS 1, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; broker {broker_inflight_label()})")
    print(f"clients: {clients_label()}")
    print("-" * 100)
    print(f"{'broker':<22}{'relay':>9}{'service':>9}{'ratio':>7}{'CPU/input':>11}{'Redis/commit':>14}"
          f"{'p50/p99 at ' + str(int(a.latency_rate)) + '/s':>22}{'RSS idle':>11}")
    for r in results:
        rl, sv, sp = r["relay"], r["service"], r["service_paced"]
        ratio = sv["rate"] / rl["rate"] if rl["rate"] else float("nan")
        r["ratio"] = ratio
        print(f"{r['label']:<22}{rl['rate']:>9.0f}{sv['rate']:>9.0f}{ratio:>7.3f}{r['cpu_us']:>9.0f}us"
              f"{r['redis_us']:>12.1f}us{sp['p50']:>12.2f} / {sp['p99']:<7.2f}"
              f"{r['rss_start']:>6.1f} MiB")
    print("-" * 100)
    for r in results:
        rp = r["relay_paced"]
        line = (f"{r['label']}: relay paced p50 {rp['p50']:.2f} ms p99 {rp['p99']:.2f} ms; "
                f"service under load p50 {r['service']['p50']:.1f} ms p99 {r['service']['p99']:.1f} ms; "
                f"{r['commits']} commits for {a.n} inputs; RSS after the run {r['rss_after']:.1f} MiB")
        if "two" in r:
            line += (f"; two replicas {r['two']['rate']:.0f} msg/s = "
                     f"{r['two']['rate'] / r['service']['rate']:.2f}x one")
        print(line)
        if r.get("relay_cli"):
            print(f"  relay measured with mosquitto_pub -l -> mosquitto_sub (one topic): {r['relay_cli']:.0f} msg/s; "
                  f"the service's rate is {r['service']['rate'] / r['relay_cli']:.3f} of it")
        if "sustained" in r:
            print(f"  {sustained_line(a, r['sustained'])}")
        print(f"  CPU us per input by process, one replica: {r['cpu_split']}")
        if r.get("thread_split"):
            print(f"  the service's threads per input (user/system): {r['thread_split']}")
        if r.get("syscalls"):
            print(f"  the service's system calls per input, by thread: {r['syscalls']}")
        print(f"  Redis us per input, one replica: {r['redis_split']}; {r['rounds']}")
        if packets_line(r):
            print(f"  {packets_line(r)}")
        if "two_split" in r:
            print(f"  CPU us per input by process, two replicas: {r['two_split']}")
            if r.get("two_packets"):
                print(f"  MQTT packets through the broker, two replicas: "
                      f"{r['two_packets'][0]:.2f} in / {r['two_packets'][1]:.2f} out per input")
            print(f"  Redis us per input, two replicas: {r['two_redis_split']}")
        missing = [f"{k} {r[k]['missing']}" for k in ("relay", "service", "relay_paced", "service_paced", "two")
                   if k in r and r[k]["missing"]]
        missing += [f"sustained {x['offered']:.0f}/s {x['missing']}"
                    for x in r.get("sustained", {}).get("steps", []) if x["missing"]]
        if missing:
            print(f"  MISSING: {', '.join(missing)}")
        if r["problems"]:
            print("  service problems: " + "; ".join(r["problems"]))
    if len(results) == 2:
        off, on = results
        print(f"nodelay on vs off: ratio changes by {100 * (on['ratio'] - off['ratio']) / off['ratio']:+.1f} %")
    print("=" * 100)
# --------------------------------------------------------------------------
# --persona-cost: the cost of one input as rooms grow


def persona_cost_stream(rooms, personas, n, run, base):
    """n messages over `rooms` rooms of the run `base` that already hold
    `personas` personas each (all asleep): each one toggles a persona
    awake/asleep, so each yields exactly one persona/{p}/dormancy event."""
    out, toggles, ts = [], {}, harness.now_ms()
    for i in range(n):
        r, p = i % rooms, (i * 7919 + i // rooms) % personas
        k = toggles[(r, p)] = toggles.get((r, p), 0) + 1
        mid = f"{run}-{i}"
        body = {"id": mid, "room": f"cost-{base}-{r}", "sender": f"persona-{r}-{p}",
                "sender_type": "ai", "text": "@self awake" if k % 2 else "@self dormant sleep",
                "ts": ts}
        out.append((mid, f"room/cost-{base}-{r}/message", json.dumps(body).encode()))
    return out


def persona_cost(port, sizes, rooms, n, timeout, pid=None, redis=None):
    """For each size P: fills `rooms` fresh rooms with P sleeping personas
    each (not timed), then times n inputs on them, counting the service's
    CPU time (pid) and Redis's time per commit. Returns [(P, stage)]."""
    results = []
    for size in sizes:
        # one message per (room, persona): each persona joins and sleeps
        fill = [(f"f{size}-{r}-{p}", f"room/cost-{size}-{r}/message", json.dumps({
            "id": f"f{size}-{r}-{p}", "room": f"cost-{size}-{r}", "sender": f"persona-{r}-{p}",
            "sender_type": "ai", "text": "@self dormant sleep", "ts": harness.now_ms()}).encode())
            for p in range(size) for r in range(rooms)]
        print(f"  [persona-cost] filling {rooms} rooms with {size} personas each", flush=True)
        run_stage(f"fill-{size}", port, fill, "persona/+/dormancy", "message_id", timeout, quiet=True)
        print(f"  [persona-cost] {n} inputs on rooms of {size} personas", flush=True)
        if redis is not None:
            redis_reset_stats(redis)
        cpu0 = cpu_seconds(pid) if pid else 0.0
        st = run_stage(f"cost-{size}", port, persona_cost_stream(rooms, size, n, f"c{size}", size),
                       "persona/+/dormancy", "message_id", timeout, quiet=True)
        st["cpu_us"] = (cpu_seconds(pid) - cpu0) * 1e6 / n if pid else float("nan")
        st["redis_us"] = redis_commit_usec(redis, n) if redis is not None else float("nan")
        results.append((size, st))
    return results


def run_persona_cost(a, work, sizes):
    """--persona-cost on a stack of its own (broker as configured in deploy/,
    Redis, dormancy-monitor): the input cost at each room size."""
    d = os.path.join(work, "persona-cost")
    os.makedirs(d, exist_ok=True)
    redis = broker = svc = None
    try:
        redis = harness.RedisServer(d, appendfsync=a.appendfsync).start()
        broker = harness.Mosquitto(d).start()
        svc = start_service(d, "dormancy-monitor", broker, redis, "bench:", DORMANCY_ENV,
                            a.build_dir, "bench-cost")
        print(f"persona cost: room sizes {sizes}", flush=True)
        return persona_cost(broker.port, sizes, 4, a.persona_cost_n, a.timeout,
                            pid=svc.proc.pid, redis=redis)
    finally:
        if svc is not None and svc.alive():
            svc.terminate(timeout=20)
        for x in (broker, redis):
            if x is not None:
                x.stop()


def print_persona_cost(results, rooms):
    print(f"input cost by room size ({rooms} rooms, each input toggles one sleeping persona):")
    print("  personas/room     msg/s   ms/input   CPU/input  Redis/commit   p50 ms   p99 ms   missing")
    for size, st in results:
        per = 1000.0 / st["rate"] if st["rate"] else float("nan")
        print(f"  {size:13d} {st['rate']:9.0f} {per:10.3f} {st['cpu_us']:8.0f}us {st['redis_us']:10.1f}us "
              f"{st['p50']:8.1f} {st['p99']:8.1f} {st['missing']:9d}")


def add_sustained_args(ap):
    """The --sustained options (scripts/bench and scripts/bench-chat)."""
    ap.add_argument("--sustained", action="store_true",
                    help="also find the highest paced rate the service keeps pace with (input and "
                         "output flowing at once, as under a steady load), stepping through "
                         "--sustained-rates")
    ap.add_argument("--sustained-rates", default="500,1000,1500,2000,2500,3000,4000,5000,6000",
                    help="msg/s steps of --sustained, ascending (default 500,...,6000)")
    ap.add_argument("--sustained-seconds", type=float, default=4.0,
                    help="length of each --sustained step in seconds (default 4)")
    ap.add_argument("--sustained-p99", type=float, default=100.0,
                    help="a --sustained step keeps pace when its p99 publish-to-event latency is at "
                         "most this many ms (default 100)")


def check_sustained_args(ap, a):
    """Rejects --sustained-* values the search cannot use."""
    try:
        rates = [float(x) for x in a.sustained_rates.split(",") if x.strip()]
    except ValueError:
        ap.error("--sustained-rates must be numbers separated by commas, e.g. 500,1000,2000")
    if not rates or any(x <= 0 for x in rates) or rates != sorted(rates):
        ap.error("--sustained-rates must be positive and ascending")
    if a.sustained_seconds <= 0 or a.sustained_p99 <= 0:
        ap.error("--sustained-seconds and --sustained-p99 must be positive")


def main():
    global PACED_WARMUP
    ap = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mix", choices=("ai", "human"), default="ai",
                    help="workload: ai (AI-only toggles) or human (20 rooms, AI sleep / human hi)")
    ap.add_argument("--broker-nodelay", choices=("off", "on", "both"), default="both",
                    help="broker set_tcp_nodelay: off (as shipped), on, or both in one run (default)")
    ap.add_argument("--n", type=int, default=20000, help="messages per stage (default 20000)")
    ap.add_argument("--rooms", type=int, default=0, help="rooms (default 200; 20 with --mix human)")
    ap.add_argument("--personas", type=int, default=0, help="personas per room (default 5; 1 with --mix human)")
    ap.add_argument("--latency-n", type=int, default=2000, help="messages in each paced latency stage")
    ap.add_argument("--latency-rate", type=float, default=1000, help="msg/s of the paced stages (default 1000)")
    ap.add_argument("--replicas", action="store_true", help="also run two replicas (VIGIL_SHARD 0/2, 1/2)")
    add_sustained_args(ap)
    add_broker_inflight_arg(ap)
    ap.add_argument("--rounds", type=int, default=0,
                    help="with both broker settings: also alternate the relay and service stages "
                         "between them ROUNDS times and print the medians (robust to load changes)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"),
                    help="the tree whose dormancy-monitor (and vigil-bench-load) run "
                         "(default build/release)")
    add_clients_arg(ap)
    ap.add_argument("--timeout", type=float, default=600, help="bound on each stage, seconds")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (logs)")
    ap.add_argument("--syscalls", action="store_true",
                    help="also count the service's system calls per input by thread during the "
                         "loaded stage (perf stat; package linux-perf)")
    ap.add_argument("--persona-cost", default="",
                    help="also time one input on rooms of these sizes, e.g. 10,100,1000 "
                         "(personas per room; printed as msg/s, ms, CPU and Redis time per input)")
    ap.add_argument("--persona-cost-n", type=int, default=2000,
                    help="inputs timed per room size (default 2000)")
    ap.add_argument("--appendfsync", choices=("everysec", "always"), default="everysec",
                    help="Redis AOF fsync policy (default everysec; always = no loss on a host crash)")
    ap.add_argument("--warmup", type=int, default=PACED_WARMUP,
                    help="messages each paced stage publishes and awaits before timing the rest "
                         f"(default {PACED_WARMUP}; 0 = time them all, as runs before 2026-11-25 did)")
    a = ap.parse_args()
    PACED_WARMUP = max(0, a.warmup)
    a.rooms = a.rooms or (20 if a.mix == "human" else 200)
    a.personas = a.personas or (1 if a.mix == "human" else 5)
    if a.n < 1 or a.rooms < 1 or a.personas < 1 or a.latency_rate <= 0:
        ap.error("--n, --rooms, --personas and --latency-rate must be positive")
    check_sustained_args(ap, a)
    set_broker_inflight(ap, a)

    exe = harness.service_binary("dormancy-monitor", a.build_dir)
    if not os.path.exists(exe):
        sys.exit(f"error: {exe} not found (scripts/build release)")
    set_clients(a)
    if harness.is_asan_build(a.build_dir):
        print("warning: this is a sanitizer build; figures will be much lower than release", flush=True)

    work = tempfile.mkdtemp(prefix="vigil-bench-")
    settings = {"off": [False], "on": [True], "both": [False, True]}[a.broker_nodelay]
    payload_size = len(make_stream(1, 1, 1, "x/{room}", "s", a.mix)[0][2])
    print(f"Vigil bench: --mix {a.mix}, N={a.n} QoS 1 messages over {a.rooms} rooms x {a.personas} "
          f"personas, ~{payload_size} bytes each; {os.path.relpath(exe, ROOT)}; "
          f"clients: {clients_label()}", flush=True)
    try:
        results = [run_setting(a, work, nd, "nodelay on" if nd else "as shipped (no nodelay)")
                   for nd in settings]
        print_summary(a, results, payload_size)
        if a.rounds > 0 and len(settings) == 2:
            alt = alternate_settings(a, work)
            print(f"alternated {a.rounds} rounds (medians):")
            for x in alt:
                print(f"  {x['label']:<12} relay {x['relay']:7.0f} msg/s  service {x['service']:7.0f} msg/s  "
                      f"ratio {x['ratio']:.3f}   (service per round: "
                      f"{', '.join(f'{v:.0f}' for v in x['services'])})")
            off, on = alt
            print(f"  nodelay on vs off: ratio changes by {100 * (on['ratio'] - off['ratio']) / off['ratio']:+.1f} %, "
                  f"service rate by {100 * (on['service'] - off['service']) / off['service']:+.1f} %")
        sizes = [int(x) for x in a.persona_cost.split(",") if x.strip()]
        cost = run_persona_cost(a, work, sizes) if sizes else []
        if cost:
            print_persona_cost(cost, 4)
        ok = all(st["missing"] == 0 for _, st in cost) and all(not r["problems"] and all(r[k]["missing"] == 0 for k in
                                           ("relay", "service", "relay_paced", "service_paced", "two")
                                           if k in r) for r in results)
        ok = ok and all(x["missing"] == 0 for r in results for x in r.get("sustained", {}).get("steps", []))
        return 0 if ok else 1
    finally:
        if a.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    mp.set_start_method("fork")
    sys.exit(main())
