"""scripts/chaos --services: the random fault run of floor-control,
heartbeat, stall-resumer and council (scripts/chaos.py runs it).

One real mosquitto, one redis-server (AOF on, appendfsync always) and
tests/support/fake_llm.py on free loopback ports, and two replicas
(VIGIL_SHARD 0/2 and 1/2) of each chosen service, with their timers shrunk
by the variables their READMEs document. A steady stream of inputs with
known ids is published while kill -9 hits a replica (restarted), Redis
(restarted from its AOF) or mosquitto (restarted from its persistence,
the publisher held until the broker saved, as in the default run).

What each input must cause is fixed by the inputs alone, so the oracle
needs no reference run:
  - floor-control: rooms of three personas (ann, bob, cid); question i in a
    room (a human message) is followed by an answer of persona i % 3, so
    with K=2 question i goes to personas i % 3 and (i + 1) % 3 (the two
    that spoke least recently). Lost: a question with no room/{r}/floor
    decision; doubled: a question decided under two ids, or one id with
    two payloads, a persona told of one question twice (persona/{p}/floor);
    wrong: a decision on a room view that lost or doubled an answer.
    With --floor-llm-budget MS the test LLM answers floor-control's
    question in 60% of the budget (past the job lease, half of it, so the
    lease is renewed while the call is in flight) with [cid, bob] for the
    room; each question is then decided once, by the model (source llm,
    granted [cid, bob], no fallback) or at its deadline by the rules
    (source rules, the fallback saying the deadline passed, or the model's
    error when a replica stopped past its call's timeout; granted the two
    that spoke least recently when the deadline fell: with an answer after
    each question, two personas in the rooms' speaking order), under the
    event id <message id>:<room>:0.
  - stall-resumer: agents whose status is 13 h old, each with a planner
    task meant for it (published first). Lost: an agent with no
    agent/{a}/resume, or a resume without its task; doubled: two resume
    ids for one agent, a task claimed by two resumes.
  - heartbeat: personas configured to speak on every run (about a second
    apart). Lost: a gap in a persona's run numbers, a run not `sent`, a sent
    run without its room message; doubled: one run id with two payloads,
    a run's message under two ids.
  - council: a session started per user (known session id), two loops
    each. Lost: a session without one action per loop and its end;
    doubled: a loop with two action ids, a session ended twice, one event
    id with two payloads.
and for all: no dead letter (P S ":deadletter"), no replica crash or
sanitizer report (its stderr), every output seen with one payload per id.
Exit 1 on any of these, 2 on a harness failure.
"""

import collections
import json
import os
import random
import re
import tempfile
import threading
import time

import harness
from fake_servers import FakeLLM
from harness import Collector, Mosquitto, Publisher, RedisServer, Service

NEW_SERVICES = ("floor-control", "heartbeat", "stall-resumer", "council")
PREFIX = "chaosb:"
PERSONAS = ("ann", "bob", "cid")
HOUR_MS = 3600 * 1000

COMMON_ENV = {
    "VIGIL_TICK_MS": "100",
    "VIGIL_TIMER_LEASE_MS": "2000",
    "VIGIL_LOG_LEVEL": "warn",
    "VIGIL_LLM_TIMEOUT_MS": "4000",
    "VIGIL_LLM_RETRIES": "0",
}
SERVICE_ENV = {
    "floor-control": {"VIGIL_FLOOR_K": "2", "VIGIL_FLOOR_LLM_BUDGET_MS": "0"},
    "heartbeat": {"VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS": "1000", "VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS": "1000",
                  "VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS": "1000", "VIGIL_HEARTBEAT_UNANSWERED_MS": "0",
                  "VIGIL_HEARTBEAT_LIVE_MS": "1000", "VIGIL_HEARTBEAT_JOB_LEASE_MS": "5000"},
    "stall-resumer": {"VIGIL_STALL_SCAN_MS": "500"},
    "council": {"VIGIL_COUNCIL_LOOP_MS": "300", "VIGIL_COUNCIL_MAX_LOOPS": "2",
                "VIGIL_COUNCIL_AUTO_START": "0", "VIGIL_COUNCIL_JOB_LEASE_MS": "6000"},
}
COUNCIL_LOOPS = 2
# the fault kinds of scripts/chaos.py this run takes (sigstop_replica only when asked)
KINDS = {"kill9_replica", "redis_kill9", "mosquitto_kill9", "sigstop_replica"}
HB_CHECK = "CHAOS-SPEAK"
# Sol and the heartbeat answer slowly, so that a kill often lands on a
# model call in flight (the job taken again, or over, and decided once)
LLM_RULES = [
    {"match": HB_CHECK, "delay_ms": 600, "reply": {"message": "Stand-up in 5 minutes.", "priority": "urgent",
                                                   "category": "reminder"}},
    {"match": "You are Sol, the Executor", "delay_ms": 800, "reply": "note: chaos run progress noted"},
    {"match": "You are Polaris", "reply": "Polaris: the goal."},
    {"match": "You are Aurora", "reply": "Aurora: calm."},
    {"match": "You are Vega", "reply": "Vega: evidence."},
    {"reply": "HEARTBEAT_OK"},
]


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Plan:
    """The inputs of one run (ids fixed by seed and index) and what each
    must cause."""

    def __init__(self, services, n, seed, floor_llm=False):
        self.services = services
        self.floor_llm = floor_llm
        self.floor_llm_granted = {}  # question id -> what the model's answer grants
        self.setup_retained = []   # (topic, payload): metas, heartbeat configs
        self.setup = []            # (topic, payload): planner tasks
        self.items = []            # the load
        self.floor = {}            # question id -> expected granted
        self.floor_room = {}       # question id -> its room
        self.agents = {}           # agent -> its task id
        self.sessions = {}         # session -> user
        self.hb_personas = []
        tag = f"x{seed}"
        base = harness.now_ms() - 60_000
        rooms = [f"fr{tag}-{r}" for r in range(max(4, n // 40))] if "floor-control" in services else []
        self.rooms = rooms
        for room in rooms:
            for p in PERSONAS:
                pid = f"{p}-{room}"
                self.setup_retained.append((f"persona/{pid}/meta", {
                    "persona": pid, "name": pid, "rooms": [room], "role": "general-help",
                    "expertise_domains": [], "confidence_levels": {}, "availability": 0.8, "tier": "basic"}))
        if "heartbeat" in services:
            for k in range(6):
                p = f"hb{tag}-{k}"
                self.hb_personas.append(p)
                self.setup_retained.append((f"heartbeat/{p}/config", {
                    "persona": p, "user": f"hbu{tag}", "room": f"hbr{tag}", "checklist": HB_CHECK,
                    "enabled": True, "ts": harness.now_ms()}))
        asked = collections.Counter()
        for i in range(n):
            before = len(self.items)
            if rooms:
                j = i % len(rooms)
                room = rooms[j]
                q = asked[room]
                asked[room] += 1
                ts = base + 2 * i
                mid = f"fq{tag}-{j}-{q}"
                self.items.append((f"room/{room}/message", {
                    "id": mid, "room": room, "sender": "joel", "sender_type": "human",
                    "text": f"question {q}", "ts": ts}))
                self.floor[mid] = [f"{PERSONAS[q % 3]}-{room}", f"{PERSONAS[(q + 1) % 3]}-{room}"]
                self.floor_room[mid] = room
                self.floor_llm_granted[mid] = [f"cid-{room}", f"bob-{room}"]
                self.items.append((f"room/{room}/message", {
                    "id": f"fa{tag}-{j}-{q}", "room": room, "sender": f"{PERSONAS[q % 3]}-{room}",
                    "sender_type": "ai", "text": f"answer {q}", "ts": ts + 1}))
            if "stall-resumer" in services and i % 4 == 0:
                a = f"ag{tag}-{i}"
                task = f"task{tag}-{i}"
                self.agents[a] = task
                self.setup.append(("planner/task", {"id": task, "title": f"Task for {a}", "priority": 5,
                                                    "agent": a, "ts": harness.now_ms()}))
                self.items.append((f"agent/{a}/status", {
                    "id": f"st{tag}-{i}", "agent": a, "fsm_state": "EXECUTING",
                    "ts": harness.now_ms() - 13 * HOUR_MS}))
            if "council" in services and i % 10 == 0:
                u = f"cu{tag}-{i}"
                s = f"cs{tag}-{i}"
                self.sessions[s] = u
                self.items.append((f"council/{u}/control", {"id": f"cc{tag}-{i}", "action": "start",
                                                            "session": s, "ts": harness.now_ms()}))
            if len(self.items) == before:
                # a tick nobody reads: the load (and so the faults) lasts
                # --duration whichever services run (heartbeat's runs need none)
                self.items.append(("chaos/tick", {"id": f"tick{tag}-{i}"}))


class Stack:
    """The broker, Redis, the test LLM and the replicas (what chaos.Faults
    drives: .replicas, .redis, .broker)."""

    def __init__(self, workdir, build_dir, services, floor_llm_budget=0, rooms=()):
        self.dir = workdir
        self.floor_llm_budget = floor_llm_budget
        self.rooms = rooms
        self.build_dir = build_dir
        self.services = services
        self.redis = RedisServer(self.dir, appendfsync="always")
        self.broker = Mosquitto(self.dir)
        self.llm = None
        self.replicas = []
        self.retired = []
        self.collector = None

    def start(self):
        self.redis.start()
        self.broker.start()
        self.llm = FakeLLM(self.dir)
        self.llm.control(rules=self.floor_rules() + LLM_RULES, delay_ms=150)
        self.collector = Collector(self.broker.port, topics=("#",), persistent=True,
                                   name="chaos-services-oracle").start()
        base = dict(COMMON_ENV, VIGIL_MQTT_URL=self.broker.url, VIGIL_REDIS_URL=self.redis.url,
                    VIGIL_REDIS_PREFIX=PREFIX, VIGIL_LLM_URL=self.llm.url)
        for name in self.services:
            for shard in range(2):
                env = dict(base, **SERVICE_ENV[name], VIGIL_SHARD=f"{shard}/2")
                if name == "floor-control":
                    env["VIGIL_FLOOR_LLM_BUDGET_MS"] = str(self.floor_llm_budget)
                self.replicas.append(Service(name, self.dir, env, build_dir=self.build_dir,
                                             instance=f"{name}-{shard}"))
        for svc in self.replicas:
            svc.start(wait=False)
        for svc in self.replicas:
            svc.wait_ready(timeout=60)

    def floor_rules(self):
        """floor-control's question, answered per room ("... in room R." in
        the prompt) with [cid, bob], in 60% of the budget: past the job
        lease (half the budget), so kills land on calls in flight and a
        live replica must renew its leases to ask once."""
        if not self.floor_llm_budget:
            return []
        delay = self.floor_llm_budget * 6 // 10
        return [{"match": f"who answers a chat message in room {room}.", "delay_ms": delay,
                 "reply": {"relevant": [f"cid-{room}", f"bob-{room}"]}} for room in self.rooms]

    def stop(self):
        """Stops everything; returns the replicas' problems at SIGTERM (an
        exit status other than 0, or no exit within 20 s)."""
        problems = []
        for svc in self.replicas:
            try:
                if svc.alive():
                    t = time.monotonic()
                    svc.terminate(timeout=20)
                    if time.monotonic() - t > 10:
                        log(f"{svc.instance} took {time.monotonic() - t:.1f} s to exit after SIGTERM")
            except Exception as e:  # noqa: BLE001
                log(f"stopping {svc.instance}: {e}")
                problems.append(f"{svc.instance}: {str(e)[:300]}")
        for p in (self.collector, self.llm, self.broker, self.redis):
            try:
                if p:
                    p.stop()
            except Exception:  # noqa: BLE001
                pass
        return problems

    def processed(self, name):
        c = self.redis.client(socket_timeout=10)
        try:
            ids = set()
            for key in c.scan_iter(match=f"{PREFIX}{name}:ids:*", count=1000):
                ids.update(m.decode() for m in c.zrange(key, 0, -1))
            return ids
        finally:
            c.close()

def events(col, filt):
    """(payload dict, raw payload) of the non-retained messages on filt."""
    out = []
    for m in col.snapshot(filt):
        if m.retained:
            continue
        try:
            doc = json.loads(m.payload)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append((doc, m.payload))
    return out


class Verdict:
    def __init__(self):
        self.lost = collections.defaultdict(list)
        self.doubled = collections.defaultdict(list)
        self.wrong = collections.defaultdict(list)
        self.figures = {}

    def counts(self, what):
        return {s: len(v) for s, v in what.items() if v}


def payloads_once(col, filters, verdict, service):
    seen = collections.defaultdict(set)
    for f in filters:
        for doc, raw in events(col, f):
            if isinstance(doc.get("id"), str):
                seen[doc["id"]].add(raw)
    for i, raws in seen.items():
        if len(raws) > 1:
            verdict.doubled[service].append(f"event {i} with {len(raws)} payloads")


def check_floor(plan, col, v):
    by_msg = collections.defaultdict(dict)
    sources = collections.Counter()
    for doc, _ in events(col, "room/+/floor"):
        by_msg[doc.get("message_id")][doc.get("id")] = doc
    for mid, want in plan.floor.items():
        got = by_msg.get(mid)
        if not got:
            v.lost["floor-control"].append(mid)
            continue
        if len(got) > 1:
            v.doubled["floor-control"].append(f"{mid} decided as {sorted(got)}")
        doc = next(iter(got.values()))
        room = plan.floor_room[mid]
        if f"{mid}:{room}:0" not in got:
            v.wrong["floor-control"].append(f"{mid}: decided as {sorted(got)}, not {mid}:{room}:0")
        source = doc.get("source")
        sources[source] += 1
        if not plan.floor_llm:
            if source != "rules" or doc.get("granted") != want:
                v.wrong["floor-control"].append(f"{mid}: {source} granted {doc.get('granted')}, want {want}")
        elif source == "llm":
            if doc.get("granted") != plan.floor_llm_granted[mid] or "fallback" in doc:
                v.wrong["floor-control"].append(f"{mid}: llm granted {doc.get('granted')} "
                                                f"(fallback {doc.get('fallback')!r}), want "
                                                f"{plan.floor_llm_granted[mid]}")
        elif source == "rules":
            # decided at its deadline, on the view then: the answers that
            # came after the question may have spoken, so any two personas
            # in the rooms' speaking order (ann, bob, cid, ann, ...)
            # (or when the model failed: a replica stopped past its call's
            # timeout, so the fallback names the LLM's error)
            ok = [[f"{PERSONAS[q % 3]}-{room}", f"{PERSONAS[(q + 1) % 3]}-{room}"] for q in range(3)]
            fallback = str(doc.get("fallback"))
            if fallback.startswith("LLM "):
                sources["rules"] -= 1
                sources["rules on an LLM error"] += 1
            if doc.get("granted") not in ok or not ("deadline" in fallback or fallback.startswith("LLM ")):
                v.wrong["floor-control"].append(f"{mid}: rules granted {doc.get('granted')} "
                                                f"(fallback {doc.get('fallback')!r})")
        else:
            v.wrong["floor-control"].append(f"{mid}: source {source!r}")
    # each persona of the room told once (granted or held) per question
    told = collections.defaultdict(set)
    for doc, _ in events(col, "persona/+/floor"):
        told[(doc.get("message_id"), doc.get("persona"))].add(doc.get("id"))
    for mid in plan.floor:
        room = plan.floor_room[mid]
        for p in PERSONAS:
            ids = told.get((mid, f"{p}-{room}"), set())
            if not ids:
                v.lost["floor-control"].append(f"{mid}: no persona/{p}-{room}/floor")
            elif len(ids) > 1:
                v.doubled["floor-control"].append(f"{mid}: persona {p} told as {sorted(ids)}")
    payloads_once(col, ("room/+/floor", "persona/+/floor"), v, "floor-control")
    v.figures["floor-control"] = (f"{len(plan.floor)} questions, {len(by_msg)} decided, by "
                                  + ", ".join(f"{s} {c}" for s, c in sorted(sources.items(), key=str) if c))


def check_stall(plan, col, v):
    resumes = collections.defaultdict(dict)
    for doc, _ in events(col, "agent/+/resume"):
        resumes[doc.get("agent")][doc.get("id")] = doc
    claimed = collections.defaultdict(set)
    for a, task in plan.agents.items():
        got = resumes.get(a)
        if not got:
            v.lost["stall-resumer"].append(f"{a}: no resume")
            continue
        if len(got) > 1:
            v.doubled["stall-resumer"].append(f"{a}: resumes {sorted(got)}")
        for rid, doc in got.items():
            t = (doc.get("claimed_task") or {}).get("id")
            if t:
                claimed[t].add(rid)
            if t != task:
                v.lost["stall-resumer"].append(f"{a}: resume {rid} claimed {t!r}, not its task {task}")
    for t, rids in claimed.items():
        if len(rids) > 1:
            v.doubled["stall-resumer"].append(f"task {t} claimed by {sorted(rids)}")
    payloads_once(col, ("agent/+/resume",), v, "stall-resumer")
    v.figures["stall-resumer"] = f"{len(plan.agents)} stalled agents, {len(resumes)} resumed"


def check_heartbeat(plan, col, v, cutoff_ms):
    runs = collections.defaultdict(dict)
    ids = collections.defaultdict(set)
    for doc, _ in events(col, "heartbeat/+/run"):
        runs[doc.get("persona")][doc.get("run")] = doc
        ids[(doc.get("persona"), doc.get("run"))].add(doc.get("id"))
    for (p, n), run_ids in ids.items():
        if len(run_ids) > 1:
            v.doubled["heartbeat"].append(f"{p} run {n} as {sorted(run_ids)}")
    msgs = collections.defaultdict(set)
    for doc, _ in events(col, "room/+/message"):
        if doc.get("heartbeat_run"):
            msgs[doc["heartbeat_run"]].add(doc.get("id"))
    total = 0
    for p in plan.hb_personas:
        evs = runs.get(p, {})
        numbers = sorted(n for n in evs if isinstance(n, int))
        if not numbers:
            v.lost["heartbeat"].append(f"{p}: no run")
            continue
        gaps = sorted(set(range(1, numbers[-1] + 1)) - set(numbers))
        if gaps:
            v.lost["heartbeat"].append(f"{p}: runs {gaps[:5]} never seen")
        for n in numbers:
            e = evs[n]
            if e.get("ts", 0) > cutoff_ms:
                continue  # still under way when the load stopped
            total += 1
            if e.get("outcome") != "sent":
                v.lost["heartbeat"].append(f"{e.get('id')}: {e.get('outcome')} {e.get('reason')}")
            elif msgs.get(e["id"]) != {f"{e['id']}:msg"}:
                what = v.lost if not msgs.get(e["id"]) else v.doubled
                what["heartbeat"].append(f"{e['id']}: room messages {sorted(msgs.get(e['id'], ()))}")
    payloads_once(col, ("heartbeat/+/run",), v, "heartbeat")
    v.figures["heartbeat"] = f"{len(plan.hb_personas)} personas, {total} runs checked"


def check_council(plan, col, v):
    evs = collections.defaultdict(dict)
    for doc, _ in events(col, "council/+/event"):
        evs[doc.get("session")][doc.get("id")] = doc
    done = 0
    for s in plan.sessions:
        got = evs.get(s, {})
        actions = collections.defaultdict(set)
        ended = set()
        for i, e in got.items():
            if e.get("type") == "action":
                actions[e.get("loop")].add(i)
            elif e.get("type") == "session_ended":
                ended.add(i)
        for loop in range(1, COUNCIL_LOOPS + 1):
            if not actions.get(loop):
                v.lost["council"].append(f"{s}: no action at loop {loop}")
            elif len(actions[loop]) > 1:
                v.doubled["council"].append(f"{s}: loop {loop} actions {sorted(actions[loop])}")
        extra = sorted(k for k in actions if k not in range(1, COUNCIL_LOOPS + 1))
        if extra:
            v.doubled["council"].append(f"{s}: loops {extra} beyond the limit")
        if not ended:
            v.lost["council"].append(f"{s}: never ended")
        elif len(ended) > 1:
            v.doubled["council"].append(f"{s}: ended as {sorted(ended)}")
        else:
            done += 1
    payloads_once(col, ("council/+/event", "council/+/request"), v, "council")
    v.figures["council"] = f"{len(plan.sessions)} sessions, {done} ended once"


class Planted:
    """The collected messages with a planted loss and doubling, read by the
    same checks (the oracle's self-check)."""

    def __init__(self, msgs):
        self.msgs = msgs

    def snapshot(self, filt=None):
        return [m for m in self.msgs if filt is None or harness.topic_matches(filt, m.topic)]


def oracle_self_check(plan, col, services, cutoff_ms):
    """Proves the checks are not blind: for each service, drops every copy
    of one output and republishes another under a new id (in a copy of
    what was collected), and expects the checks to report exactly one loss
    and one doubling more for it. Returns (ok, description)."""
    family = {"floor-control": ("room/+/floor", "message_id"), "stall-resumer": ("agent/+/resume", "agent"),
              "heartbeat": ("heartbeat/+/run", "persona"), "council": ("council/+/event", "session")}
    base = Verdict()
    run_checks(plan, col, services, base, cutoff_ms)
    msgs = col.snapshot()
    found = []
    for s in services:
        filt, key = family[s]
        mine = [m for m in msgs if not m.retained and harness.topic_matches(filt, m.topic)]
        docs = [(m, json.loads(m.payload)) for m in mine]
        if s == "heartbeat":  # a run in the middle of a persona's numbers
            docs = [(m, d) for m, d in docs if d.get("run") == 2]
        elif s == "council":
            docs = [(m, d) for m, d in docs if d.get("type") == "action"]
        if len(docs) < 2:
            return False, f"{s}: too few outputs to plant in"
        victim, twin = docs[0][1], docs[-1][1]
        keep = [m for m in msgs if not (harness.topic_matches(filt, m.topic) and
                                         json.loads(m.payload).get("id") == victim["id"])]
        doubled = dict(twin, id=twin["id"] + "-planted")
        keep.append(harness.Msg(next(m.topic for m, d in docs if d is twin), json.dumps(doubled).encode(),
                                False, time.time(), 0))
        v = Verdict()
        run_checks(plan, Planted(keep), services, v, cutoff_ms)
        more_lost = len(v.lost[s]) - len(base.lost[s])
        more_doubled = len(v.doubled[s]) - len(base.doubled[s])
        if more_lost < 1 or more_doubled < 1:
            return False, f"{s}: a planted loss ({victim['id']}) or doubling went unseen"
        found.append(s)
    return True, f"a planted lost and doubled output of {', '.join(found)} were all found"


def run_checks(plan, col, services, v, cutoff_ms):
    if "floor-control" in services:
        check_floor(plan, col, v)
    if "stall-resumer" in services:
        check_stall(plan, col, v)
    if "heartbeat" in services:
        check_heartbeat(plan, col, v, cutoff_ms)
    if "council" in services:
        check_council(plan, col, v)


def settled(plan, stack):
    col = stack.collector
    if plan.floor:
        decided = {d.get("message_id") for d, _ in events(col, "room/+/floor")}
        if not set(plan.floor) <= decided:
            return False
    if plan.agents:
        resumed = {d.get("agent") for d, _ in events(col, "agent/+/resume")}
        if not set(plan.agents) <= resumed:
            return False
    if plan.sessions:
        ended = {d.get("session") for d, _ in events(col, "council/+/event") if d.get("type") == "session_ended"}
        if not set(plan.sessions) <= ended:
            return False
    return True


def floor_asks(stats):
    """How many floor questions the model was asked more than once (a
    replica killed while it thought, or a lease lost), from the test LLM's
    history (its last 1000 requests: said when it holds fewer)."""
    asks = collections.Counter()
    for h in stats.get("history", []):
        m = re.search(r"in room (\S+)\. .*?Message from \S+: \"([^\"]*)\"", h.get("prompt", ""), re.S)
        if m:
            asks[m.groups()] += 1
    if not asks:
        return ""
    partial = " (of the last 1000 requests)" if stats.get("requests", 0) > len(stats.get("history", [])) else ""
    return f"; floor questions asked more than once {sum(1 for c in asks.values() if c > 1)}{partial}"


def wait_processed(stack, name, ids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ids <= stack.processed(name):
                return True
        except Exception:  # noqa: BLE001
            pass
        time.sleep(0.2)
    return False


def run(args, services):
    """The --services run; returns the exit status."""
    import chaos  # the default run's load and fault injector

    n = int(args.duration * args.rate)
    for name in services:
        if not os.path.exists(harness.service_binary(name, args.build_dir)):
            print(f"chaos: {harness.service_binary(name, args.build_dir)} missing (scripts/build release)")
            return 2
    if args.kinds and not args.kinds <= KINDS:
        print(f"chaos: --services takes the fault kinds {', '.join(sorted(KINDS))} only")
        return 2
    budget = getattr(args, "floor_llm_budget", 0)
    plan = Plan(services, n, args.seed, floor_llm=budget > 0)
    workdir = tempfile.mkdtemp(prefix="vigil-chaos-services-")
    log(f"seed {args.seed}, services {', '.join(services)}, {len(plan.items)} inputs at {args.rate}/s, "
        f"floor LLM budget {budget} ms, build {args.build_dir}, folder {workdir}")
    stack = Stack(workdir, args.build_dir, services, floor_llm_budget=budget, rooms=plan.rooms)
    t0 = time.monotonic()
    try:
        stack.start()
        pub = Publisher(stack.broker.port, name="chaos-setup").start()
        for topic, body in plan.setup_retained:
            pub.publish(topic, body, retain=True)
        for topic, body in plan.setup:
            pub.publish(topic, body)
        pub.stop()
        if plan.setup and not wait_processed(stack, "stall-resumer", {b["id"] for _, b in plan.setup}, 60):
            raise RuntimeError("stall-resumer never recorded the planner tasks")
        time.sleep(2.0)  # the metas reach floor-control (retained, before any question)
        stack.broker.wait_saved()  # the setup is on disk before the broker can be killed
        load = chaos.Load(stack.broker.port, plan.items, args.rate)
        lt = threading.Thread(target=load.run, daemon=True)
        lt.start()
        kinds = args.kinds or KINDS - {"sigstop_replica"}
        faults = chaos.Faults(stack, load, random.Random(args.seed), args.gap, kinds=kinds)
        until = time.monotonic() + args.duration * 3
        faults.loop(until, args.faults)
        lt.join()
        if load.error:
            raise RuntimeError(f"publisher failed: {load.error}")
        cutoff_ms = harness.now_ms()
        log(f"{len(plan.items)} inputs acknowledged by the broker; settling")
        deadline = time.monotonic() + max(120, args.duration)
        ok = False
        while time.monotonic() < deadline and not ok:
            ok = settled(plan, stack)
            time.sleep(0.5)
        time.sleep(4.0)  # heartbeat runs under way at the cutoff end; the last outputs arrive
        v = Verdict()
        run_checks(plan, stack.collector, services, v, cutoff_ms)
        self_ok, self_check = oracle_self_check(plan, stack.collector, services, cutoff_ms)
        dead = chaos.dead_letters(stack.redis, PREFIX, services)
        stats = stack.llm.stats()
        llm_calls = f"{stats.get('requests')}{floor_asks(stats)}"
    except BaseException as e:  # noqa: BLE001
        log(f"harness failure: {e!r}")
        stack.stop()
        return 2
    # stopped first: a replica that does not end on SIGTERM is a problem too
    crashed = stack.stop()
    crashed += [f"{s.instance}: {p}" for s in stack.replicas for p in s.check()
                if "exited by itself" not in p]
    lost = sum(len(x) for x in v.lost.values())
    doubled = sum(len(x) for x in v.doubled.values())
    wrong = sum(len(x) for x in v.wrong.values())
    dead_total = sum(x for x in dead.values() if x > 0)
    print()
    print("chaos summary (services)")
    print(f"  seed                {args.seed}")
    print(f"  services            {', '.join(services)} (2 replicas each)")
    print(f"  inputs              {len(plan.items)}")
    print(f"  faults injected     {faults.total}  " + ", ".join(f"{k} {c}" for k, c in sorted(faults.count.items())))
    for s in services:
        print(f"  {s:<19} {v.figures.get(s, '')}")
    print(f"  lost                {lost}  {v.counts(v.lost)}")
    print(f"  doubled             {doubled}  {v.counts(v.doubled)}")
    print(f"  wrong               {wrong}  {v.counts(v.wrong)}")
    print(f"  dead letters        {dead_total}  ({', '.join(f'{s}:deadletter {c}' for s, c in dead.items())})")
    print(f"  llm requests        {llm_calls}")
    print(f"  settled             {'yes' if ok else 'NO (timed out)'}")
    print(f"  replica problems    {len(crashed)}")
    print(f"  oracle self-check   {self_check if self_ok else 'FAILED: ' + self_check}")
    print(f"  elapsed             {time.monotonic() - t0:.0f} s")
    for what, d in (("lost", v.lost), ("doubled", v.doubled), ("wrong", v.wrong)):
        for s, items in d.items():
            print(f"  e.g. {what} {s}: {items[:5]}")
    for c in crashed[:5]:
        print(f"  e.g. replica problem: {c[:600]}")
    return chaos.finish(args.keep, workdir, self_ok, lost or doubled or wrong or dead_total or crashed or not ok)
