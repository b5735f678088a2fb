"""scripts/chaos - random faults under a steady load, against a fault-free run.

Starts a real mosquitto and redis-server (AOF on, appendfsync always, as deployed) on
free loopback ports, and dormancy-monitor, chat-router and wake-evaluator
with two replicas each (VIGIL_SHARD 0/2 and 1/2). Publishes a steady stream
of room messages with known ids (AI personas putting themselves to sleep,
one persona per message, so what each input must cause does not depend on
the order inputs are handled in), twice:

  1. fault-free: the reference;
  2. chaos: the same inputs while random faults are injected: kill -9 of a
     replica (restarted), kill -9 of Redis (restarted from its AOF), Redis
     restarted and still loading a large data set (LOADING for seconds),
     kill -9 of mosquitto (restarted from its persistence), a replica
     SIGSTOPped past its timer lease and continued, and a change of one
     service's shard count under load (2 -> 3 -> 1 -> 2 ..., the README's
     procedure: growing, the new replicas start first and the old ones
     restart one by one with the new N; shrinking, the survivors restart
     with the new N first, and the surplus replicas, sometimes after a
     restart as draining replicas i/N with i >= N, are then killed).

The oracle then compares the chaos run with the reference:
  - lost: an input recorded as processed by a service in the reference
    (its id in the service's processed ids, P S ":ids:" key) but not in
    the chaos run; or an output event id seen in the reference but never
    in the chaos run;
  - doubled: an effect applied twice: an output event id that the
    reference never produced (the same effect under another id), or a
    message appended twice to chat-router's room log (two stream entries
    with one message id). An output repeated with its same id is allowed
    (the outbox publishes at least once);
  - dead letters: entries left in any service's P S ":deadletter" list
    (a missing list counts as empty).
It prints inputs, faults injected, lost and doubled, and exits 1 on any
loss, doubling or dead letter, 2 on a harness failure.

The broker's own loss window is kept out of the comparison on purpose:
mosquitto has no write-ahead log and saves its state on a timer
(autosave_interval 1, which in 2.0.11 saves every 2 s), so a kill -9 of
the broker loses what it acknowledged since its last save. Before killing
mosquitto the driver pauses the publisher until the broker has saved a
snapshot begun after that, so what is measured for inputs is Vigil's
guarantee, not the broker's documented window (see the README's
durability section). Outputs the services publish meanwhile are not held.

--services LIST runs the newer services instead (floor-control, heartbeat,
stall-resumer, council, comma-separated; `new` = all four), two replicas
each, with the test LLM server (tests/support/fake_llm.py), under kill -9
of a replica, of Redis and of mosquitto (--kinds may add sigstop_replica).
Their inputs' effects are fixed by the inputs alone (a floor decision per
question, one resume per stalled agent with its own task, a gapless run
sequence per heartbeat, one action per council loop and one end per
session), so that run checks against those, with no reference run, and
also counts a replica that does not exit within 20 s of SIGTERM. See
scripts/chaos_services.py; --short is then about 30 s of load.
--floor-llm-budget MS gives floor-control that LLM budget (default 0: the
rules only): the test LLM then answers its question slowly, so kills land
on model calls in flight, and each question must be decided once, by the
model (its order) or at the deadline by the rules.
"""

import argparse
import collections
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
from harness import Collector, Mosquitto, RedisServer, ReliablePublisher, Service  # noqa: E402

SERVICES = ("dormancy-monitor", "chat-router", "wake-evaluator")
# Output families whose content depends on the order in which two services
# saw things (not compared with the reference; see main).
ORDER_DEPENDENT = {"persona/+/wake"}
# Output families whose effects are fixed by the input but whose ids carry a
# time (a timer's deadline depends on when the input was handled): the
# effects are compared with the reference, and one effect must have one id.
ID_VARIABLE = {"persona/+/dormancy timed-end"}
PREFIX = "chaos:"
LEASE_MS = 2000
FILLER_KEYS = 30000  # makes a restart with key-load-delay answer LOADING for seconds

# Rules that depend on the wall clock stay out of the way: what each input
# causes must be the same in both runs.
SERVICE_ENV = {
    "VIGIL_TICK_MS": "100",
    "VIGIL_TIMER_LEASE_MS": str(LEASE_MS),
    "VIGIL_LOG_LEVEL": "warn",
    "VIGIL_DORMANCY_AUTO_SUGGEST": "0",
    "VIGIL_DORMANCY_AUTO_SLEEP": "0",
    "VIGIL_DORMANCY_NO_HUMAN_MS": "86400000",
    "VIGIL_DORMANCY_AI_ONLY_MS": "86400000",
    "VIGIL_AUTOPILOT": "0",
    "VIGIL_LIVENESS_MS": "600000",
}


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def make_inputs(n, rooms, seed):
    """n AI messages "@self dormant sleep" (every third "... for 3s"), each
    from its own persona, spread over the rooms. Ids are fixed by the seed
    and the index."""
    items, ids = [], []
    for i in range(n):
        room = f"cr{seed}-r{i % rooms}"
        mid = f"cm{seed}-{i}"
        # every third one is timed: its end is a timer firing (claimed with a
        # lease, so a replica stopped past its lease exercises the re-claim)
        text = "@self dormant sleep for 3s" if i % 3 == 0 else "@self dormant sleep"
        body = {"id": mid, "room": room, "sender": f"cp{seed}-{i}", "sender_type": "ai",
                "text": text, "ts": 1700000000000 + i}
        items.append((f"room/{room}/message", body))
        ids.append(mid)
    return items, ids


class Run:
    """One stack: a broker, a Redis and two replicas of each service."""

    def __init__(self, workdir, build_dir, name, max_inflight=None):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        self.build_dir = build_dir
        self.redis = RedisServer(self.dir, appendfsync="always")
        source = None
        if max_inflight is not None:  # --broker-max-inflight
            source = harness.project_broker_conf(os.path.join(self.dir, "broker-source.conf"),
                                                 max_inflight=max_inflight)
        self.broker = Mosquitto(self.dir, source_conf=source)
        self.replicas = []
        self.retired = []  # replicas removed by a shrinking shard count
        self.shards = {name: 2 for name in SERVICES}
        self.env = None
        self.collector = None
        self.extra_conf = []

    def start(self, filler=0):
        self.redis.start()
        self.broker.start()
        if filler:
            harness.redis_fill(self.redis, filler)
        self.env = dict(SERVICE_ENV, VIGIL_MQTT_URL=self.broker.url, VIGIL_REDIS_URL=self.redis.url,
                        VIGIL_REDIS_PREFIX=PREFIX)
        for name in SERVICES:
            for shard in range(2):
                self.replicas.append(self.replica(name, shard, 2))
        for svc in self.replicas:
            svc.start(wait=False)
        for svc in self.replicas:
            svc.wait_ready(timeout=60)
        self.collector = Collector(self.broker.port, topics=("#",), persistent=True, name="chaos-oracle").start()

    def replica(self, name, index, count):
        # an index that comes back after a shrink gets a fresh instance name
        # (its own log files); the MQTT session follows the index
        again = sum(1 for s in self.replicas + self.retired if s.instance.startswith(f"{name}-{index}"))
        instance = f"{name}-{index}" + (f"-{again}" if again else "")
        return Service(name, self.dir, dict(self.env, VIGIL_SHARD=f"{index}/{count}"),
                       build_dir=self.build_dir, instance=instance)

    def stop(self):
        for svc in self.replicas:
            try:
                if svc.alive():
                    os.kill(svc.proc.pid, signal.SIGCONT)
                    svc.terminate(timeout=20)
            except Exception as e:  # noqa: BLE001
                log(f"stopping {svc.instance}: {e}")
        if self.collector:
            try:
                self.collector.stop()
            except Exception:  # noqa: BLE001
                pass
        for p in (self.broker, self.redis):
            try:
                p.stop()
            except Exception:  # noqa: BLE001
                pass

    def redis_client(self):
        return self.redis.client(socket_timeout=10)

    # -- what the oracle reads --------------------------------------------

    def processed_ids(self):
        """{service: set of input ids recorded as processed}."""
        out = {}
        c = self.redis_client()
        try:
            for name in SERVICES:
                ids = set()
                for key in c.scan_iter(match=f"{PREFIX}{name}:ids:*", count=1000):
                    ids.update(m.decode() for m in c.zrange(key, 0, -1))
                out[name] = ids
        finally:
            c.close()
        return out

    def output_ids(self, inputs):
        """{event id: (topic family, effect)} of every event the services
        published (not retained, not sys/, not one of our inputs). The
        effect names what the event is about: (family, input id, persona)."""
        out = {}
        for m in self.collector.snapshot():
            if m.retained or m.topic.startswith("sys/"):
                continue
            try:
                doc = json.loads(m.payload)
            except ValueError:
                continue
            if not (isinstance(doc, dict) and isinstance(doc.get("id"), str)) or doc["id"] in inputs:
                continue
            parts = m.topic.split("/")
            fam = "/".join([parts[0], "+"] + parts[2:]) if len(parts) > 2 else m.topic
            if doc.get("trigger") == "timed-end":
                fam += " timed-end"
            effect = (fam, str(doc.get("message_id") or doc.get("in_reply_to") or ""),
                      str(doc.get("persona") or doc.get("room") or ""))
            out[doc["id"]] = (fam, effect)
        return out

    def log_counts(self):
        """{message id: entries} over chat-router's room log streams."""
        counts = collections.Counter()
        c = self.redis_client()
        try:
            for key in c.scan_iter(match=f"{PREFIX}chat-router:*", count=1000):
                if c.type(key) != b"stream":
                    continue
                for _, fields in c.xrange(key):
                    raw = fields.get(b"m")
                    try:
                        doc = json.loads(raw) if raw else None
                    except ValueError:
                        doc = None
                    if isinstance(doc, dict) and isinstance(doc.get("id"), str):
                        counts[doc["id"]] += 1
        finally:
            c.close()
        return counts

    def dead_letters(self):
        return dead_letters(self.redis, PREFIX, SERVICES)

    def outbox_pending(self):
        c = self.redis_client()
        try:
            return sum(c.llen(k) for k in c.scan_iter(match=f"{PREFIX}*:outbox:*", count=1000)
                       if c.type(k) == b"list")
        finally:
            c.close()


def dead_letters(redis, prefix, services):
    """{service: entries in P S ":deadletter"} (missing list = 0, another
    type -1)."""
    c = redis.client(socket_timeout=10)
    try:
        out = {}
        for name in services:
            key = f"{prefix}{name}:deadletter"
            t = c.type(key)
            out[name] = c.llen(key) if t == b"list" else (0 if t == b"none" else -1)
        return out
    finally:
        c.close()


def redis_ready(redis):
    try:
        c = redis.client(socket_timeout=1)
        try:
            return c.dbsize() >= 0
        finally:
            c.close()
    except Exception:  # noqa: BLE001
        return False


class Load:
    """Publishes the inputs at a steady rate in a thread, with a pause
    switch (used before a broker kill)."""

    def __init__(self, port, items, rate):
        self.pub = ReliablePublisher(port, name="chaos-load")
        self.items = items
        self.rate = rate
        self.paused = threading.Event()
        self.idle = threading.Event()
        self.done = threading.Event()
        self.error = None
        self.t0 = None
        self.acked_at = []  # (inputs acknowledged, epoch seconds), for the loss report

    def _progress(self, n):
        self.acked_at.append((n, time.time()))
        # hold the rate: n acknowledged by now means n / rate seconds in
        while True:
            ahead = self.t0 + n / self.rate - time.monotonic()
            if ahead > 0:
                time.sleep(min(ahead, 0.2))
                continue
            break
        while self.paused.is_set():
            self.idle.set()
            time.sleep(0.05)
        self.idle.clear()

    def run(self):
        self.t0 = time.monotonic()
        try:
            self.pub.run(self.items, timeout=3600, window=10, on_progress=self._progress)
        except Exception as e:  # noqa: BLE001
            self.error = e
        finally:
            self.done.set()
            self.idle.set()

    def pause(self, timeout=30):
        self.paused.set()
        self.idle.wait(timeout)

    def resume(self):
        self.paused.clear()


class Faults:
    """Random faults, one at a time, each finished (the victim back up)
    before the next."""

    KINDS = (("kill9_replica", 6), ("redis_kill9", 1), ("redis_loading", 1), ("mosquitto_kill9", 1),
             ("sigstop_replica", 1), ("reshard", 1))
    # the shard count a service moves to from each count
    NEXT_COUNT = {2: 3, 3: 1, 1: 2}

    def __init__(self, run, load, rng, gap, kinds=None, drain=True):
        if kinds:
            self.KINDS = tuple((k, w) for k, w in self.KINDS if k in kinds)
        self.drain = drain
        self.run = run
        self.load = load
        self.rng = rng
        self.gap = gap
        self.count = collections.Counter()
        self.total = 0
        self.first = None
        self.victim = ""
        self.events = []  # (start, end epoch seconds, kind, victim), for the loss report

    def pick(self):
        # every kind once first (in random order), then weighted at random
        if self.first is None:
            self.first = [k for k, _ in self.KINDS]
            self.rng.shuffle(self.first)
        if self.first:
            return self.first.pop()
        kinds, weights = zip(*self.KINDS)
        return self.rng.choices(kinds, weights)[0]

    def inject(self, kind):
        r = self.run
        self.victim = ""
        if kind == "kill9_replica":
            svc = self.rng.choice(r.replicas)
            self.victim = svc.instance
            svc.kill9()
            time.sleep(self.rng.uniform(0.05, 0.5))
            svc.start(wait=False)
            svc.wait_ready(timeout=120)
        elif kind == "redis_kill9":
            r.redis.kill9()
            time.sleep(self.rng.uniform(0.2, 1.5))
            r.redis.start(timeout=60)
        elif kind == "redis_loading":
            harness.redis_start_loading(r.redis, self.rng.choice((30, 60, 90)))
            harness.wait_until(lambda: redis_ready(r.redis), 120, "Redis to finish loading")
            # the next plain restart loads at full speed again
        elif kind == "mosquitto_kill9":
            # The broker's own window is not Vigil's to close: the load
            # holds still until a snapshot begun after that is on disk, and
            # only then is the broker killed. mosquitto 2.0.11 with
            # autosave_interval 1 saves every 2 s (it compares whole seconds
            # strictly): a fixed 1.5 s pause lost inputs the broker had
            # acknowledged and not yet saved. (What the services publish
            # meanwhile is not held: an output acknowledged after that
            # snapshot is the broker's to lose.)
            self.load.pause()
            if not wait_broker_saved(r.broker.dir, time.time()):
                log("mosquitto saved no snapshot within 10 s; killing it anyway")
            r.broker.kill9()
            time.sleep(self.rng.uniform(0.2, 1.0))
            r.broker.start(timeout=60)
            self.load.resume()
        elif kind == "reshard":
            self.victim = self.rng.choice(SERVICES)
            self.reshard(self.victim)
        elif kind == "sigstop_replica":
            svc = self.rng.choice(r.replicas)
            self.victim = svc.instance
            os.kill(svc.proc.pid, signal.SIGSTOP)
            time.sleep(LEASE_MS / 1000.0 + self.rng.uniform(0.5, 1.5))
            os.kill(svc.proc.pid, signal.SIGCONT)
        self.count[kind] += 1
        self.total += 1

    def restart_as(self, svc, shard):
        """Stops a replica (kill -9 or SIGTERM) and starts it with another
        VIGIL_SHARD, as a rolling update does."""
        if self.rng.random() < 0.5:
            svc.kill9()
        else:
            svc.terminate(timeout=20)
        svc.env["VIGIL_SHARD"] = shard
        svc.start(wait=False)
        svc.wait_ready(timeout=120)

    def reshard(self, name):
        """Changes one service's shard count under load, by the README's
        procedure (see the module docstring)."""
        r = self.run
        old = r.shards[name]
        new = self.NEXT_COUNT[old]
        mine = {int(s.env["VIGIL_SHARD"].split("/")[0]): s for s in r.replicas if s.name == name}
        log(f"reshard {name}: {old} -> {new}")
        if new > old:
            for j in range(old, new):
                svc = r.replica(name, j, new)
                r.replicas.append(svc)
                svc.start(wait=False)
                svc.wait_ready(timeout=120)
            for i in sorted(mine, reverse=True):
                self.restart_as(mine[i], f"{i}/{new}")
        else:
            for i in sorted(mine):
                if i < new:
                    self.restart_as(mine[i], f"{i}/{new}")
            for j in sorted(mine, reverse=True):
                if j < new:
                    continue
                svc = mine[j]
                if self.drain and self.rng.random() < 0.5:
                    self.restart_as(svc, f"{j}/{new}")  # draining, as a StatefulSet rollout leaves it
                    time.sleep(self.rng.uniform(0.2, 1.0))
                svc.kill9()
                r.replicas.remove(svc)
                r.retired.append(svc)
        r.shards[name] = new

    def loop(self, until, max_faults):
        while not self.load.done.is_set() and time.monotonic() < until and self.total < max_faults:
            time.sleep(self.rng.uniform(self.gap * 0.5, self.gap * 1.5))
            if self.load.done.is_set():
                break
            kind = self.pick()
            t, start = time.monotonic(), time.time()
            self.inject(kind)
            self.events.append((start, time.time(), kind, self.victim))
            log(f"fault {self.total:3d}: {kind}{' ' + self.victim if self.victim else ''} "
                f"({time.monotonic() - t:.1f}s)")


def wait_broker_saved(folder, since, timeout=10.0):
    """Waits until mosquitto.db in folder was written (renamed into place)
    after since (epoch seconds) plus a second's margin for a save that was
    already under way. Returns False on timeout."""
    path = os.path.join(folder, "mosquitto.db")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.stat(path).st_mtime > since + 1.0:
                return True
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    return False


def settle(run, want_processed, timeout, inputs=frozenset(), want_effects=frozenset()):
    """Waits until every service recorded what the reference recorded, the
    outboxes are empty and the timed effects of the reference were seen
    (a timer set by one of the last inputs fires seconds after it was
    processed), bounded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = run.processed_ids()
            timed = {v[1] for v in run.output_ids(inputs).values() if v[0] in ID_VARIABLE} \
                if want_effects else set()
            if all(want_processed[s] <= got[s] for s in SERVICES) and run.outbox_pending() == 0 \
                    and want_effects <= timed:
                time.sleep(2.0)  # let the last outputs reach the collector
                return True
        except Exception:  # noqa: BLE001 - Redis may still be coming back
            pass
        time.sleep(0.5)
    return False


def loss_context(lost, ids, faults, span=8.0):
    """Lines that place each lost output (first ten) in time: when the
    broker acknowledged the input that caused it, and which faults ran
    within span seconds of that. A loss is found by its neighbours."""
    index = {mid: i for i, mid in enumerate(ids)}
    acked = faults.load.acked_at
    lines = []
    for out_id in lost[:10]:
        mid = out_id.split(":")[0].strip("('\" ")
        for word in str(out_id).replace("'", " ").replace(",", " ").split():
            if word in index:
                mid = word
        i = index.get(mid)
        if i is None:
            continue
        t = next((when for n, when in acked if n > i), None)
        if t is None:
            continue
        near = [f"{kind}{' ' + victim if victim else ''} {start - t:+.1f}..{end - t:+.1f}s"
                for start, end, kind, victim in faults.events if end >= t - span and start <= t + span]
        lines.append(f"{out_id}: input acknowledged at {time.strftime('%H:%M:%S', time.localtime(t))}; "
                     f"faults near it: {', '.join(near) or 'none'}")
    return lines


def oracle_self_check(run, want, got, log_counts):
    """Proves the oracle is not blind: removes one input's processed id
    (dormancy-monitor) and one room log entry (chat-router) from the chaos
    run's Redis, reads again and expects exactly those two to be missing.
    Runs after the real figures were taken. Returns a description, or None
    when the oracle missed the planted loss."""
    victim = sorted(want["dormancy-monitor"] & got["dormancy-monitor"])[:1]
    if not victim:
        return None
    c = run.redis_client()
    try:
        removed_id = 0
        for key in c.scan_iter(match=f"{PREFIX}dormancy-monitor:ids:*", count=1000):
            removed_id += c.zrem(key, victim[0])
        removed_log = None
        for key in c.scan_iter(match=f"{PREFIX}chat-router:*", count=1000):
            if c.type(key) != b"stream":
                continue
            for sid, fields in c.xrange(key, count=1):
                removed_log = json.loads(fields[b"m"]).get("id")
                c.xdel(key, sid)
                break
            if removed_log:
                break
    finally:
        c.close()
    # only what the planting changed (a run with real losses still checks)
    lost_ids = (want["dormancy-monitor"] - run.processed_ids()["dormancy-monitor"]) - \
        (want["dormancy-monitor"] - got["dormancy-monitor"])
    after = run.log_counts()
    lost_log = {m for m, n in log_counts.items() if n >= 1 and after.get(m, 0) == 0}
    if removed_id and lost_ids == {victim[0]} and removed_log and lost_log == {removed_log}:
        return f"a planted lost input ({victim[0]}) and lost log entry ({removed_log}) were both found"
    return None


def one_run(args, workdir, items, ids, faults):
    name = "chaos" if faults else "reference"
    run = Run(workdir, args.build_dir, name, args.broker_max_inflight)
    try:
        log(f"{name}: starting mosquitto, redis and 6 replicas")
        run.start(filler=FILLER_KEYS if faults else 0)
        load = Load(run.broker.port, items, args.rate)
        lt = threading.Thread(target=load.run, daemon=True)
        lt.start()
        f = None
        if faults:
            f = Faults(run, load, random.Random(args.seed), args.gap, kinds=args.kinds, drain=not args.no_drain)
            f.loop(time.monotonic() + args.duration * 3, args.faults)
        lt.join()
        if load.error:
            raise RuntimeError(f"publisher failed: {load.error}")
        log(f"{name}: {len(items)} inputs acknowledged by the broker; settling")
        return run, f
    except BaseException:
        run.stop()
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=600, help="seconds of load (default 600)")
    ap.add_argument("--rate", type=float, default=40, help="inputs per second (default 40)")
    ap.add_argument("--rooms", type=int, default=0,
                    help="rooms the inputs spread over (default: one per 15 inputs, so a room's "
                         "sleepers, which every message there is weighed against, stay few)")
    ap.add_argument("--gap", type=float, default=4.0, help="mean seconds between faults")
    ap.add_argument("--faults", type=int, default=1000000, help="stop injecting after this many")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--kinds", type=lambda v: set(v.split(",")), default=None,
                    help="only these fault kinds (comma-separated: kill9_replica, redis_kill9, "
                         "redis_loading, mosquitto_kill9, sigstop_replica, reshard)")
    ap.add_argument("--no-drain", action="store_true",
                    help="a shrink never restarts the surplus replicas as draining ones first "
                         "(for binaries that refuse VIGIL_SHARD i/N with i >= N)")
    ap.add_argument("--short", action="store_true",
                    help="the CI version: 35 s of load, a fault every ~1.5 s, each kind at least once")
    ap.add_argument("--build-dir", default=os.environ.get("VIGIL_BUILD_DIR") or os.path.join(ROOT, "build", "release"))
    ap.add_argument("--broker-max-inflight", type=int, default=None, metavar="N",
                    help="the broker's max_inflight_messages (its Receive Maximum): 0 = mosquitto's "
                         "default, 20, against which the outbox publishes on two connections "
                         "(default: the project config's 100, one connection)")
    ap.add_argument("--services", default=None, metavar="LIST",
                    help="instead of the default run, the fault run of these services (comma-separated, "
                         "of floor-control, heartbeat, stall-resumer, council; 'new' = all four): "
                         "kill -9 of a replica, of Redis and of mosquitto under a load of known-id "
                         "inputs, checked against what each input must cause (scripts/chaos_services.py)")
    ap.add_argument("--floor-llm-budget", type=int, default=0, metavar="MS",
                    help="with --services: floor-control's VIGIL_FLOOR_LLM_BUDGET_MS (default 0, the "
                         "rules only); > 0 has the test LLM answer its question in 60%% of it")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--log-level", default="warn", choices=("debug", "info", "warn", "error"),
                    help="the replicas' VIGIL_LOG_LEVEL (default warn; their logs stay in the "
                         "folder with --keep)")
    args = ap.parse_args()
    SERVICE_ENV["VIGIL_LOG_LEVEL"] = args.log_level
    # the client choices of the environment reach the replicas, so both
    # intakes and both outbox modes can be put through the same faults
    for name in ("VIGIL_MQTT_INTAKE", "VIGIL_OUTBOX_PROCESS"):
        if os.environ.get(name):
            SERVICE_ENV[name] = os.environ[name]
    if args.broker_max_inflight is not None and args.broker_max_inflight < 0:
        ap.error("--broker-max-inflight must be 0 (mosquitto's default) or positive")
    if args.short:
        args.duration, args.gap, args.rate = 35, 1.5, 20
    args.build_dir = os.path.abspath(args.build_dir)
    if args.services:
        import chaos_services
        chosen = chaos_services.NEW_SERVICES if args.services == "new" else tuple(args.services.split(","))
        unknown = [s for s in chosen if s not in chaos_services.NEW_SERVICES]
        if unknown:
            ap.error(f"--services: unknown {', '.join(unknown)} (one of {', '.join(chaos_services.NEW_SERVICES)})")
        if args.short:  # the CI version of this run: a few seconds of load
            args.duration, args.gap, args.rate = 12, 2.0, 10
        return chaos_services.run(args, chosen)
    for name in SERVICES:
        if not os.path.exists(harness.service_binary(name, args.build_dir)):
            print(f"chaos: {harness.service_binary(name, args.build_dir)} missing (scripts/build release)",
                  file=sys.stderr)
            return 2
    n = int(args.duration * args.rate)
    if args.rooms <= 0:
        args.rooms = max(10, n // 15)
    elif args.rooms < n // 100:
        # each input is a persona of its own: a room's sleepers, and so
        # wake-evaluator's outputs per input, grow with its inputs (4 rooms
        # of 1,500: over 400,000 outputs, a reference run that never
        # settled and an oracle reporting losses that were not)
        log(f"warning: {args.rooms} rooms for {n} inputs is over 100 inputs per room; "
            "the reference run may not settle")
    items, ids = make_inputs(n, args.rooms, args.seed)
    workdir = tempfile.mkdtemp(prefix="vigil-chaos-")
    log(f"seed {args.seed}, {n} inputs at {args.rate}/s, build {args.build_dir}, folder {workdir}")
    ref = chaos = None
    t0 = time.monotonic()
    try:
        ref, _ = one_run(args, workdir, items, ids, faults=False)
        want = {s: set() for s in SERVICES}
        # the reference: wait until a service stops changing, bounded
        prev, stable_since = None, time.monotonic()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            cur = ref.processed_ids()
            sig = tuple(len(cur[s]) for s in SERVICES)
            if sig != prev:
                prev, stable_since = sig, time.monotonic()
            elif time.monotonic() - stable_since > 6 and ref.outbox_pending() == 0:  # > a timed end (3 s)
                break
            time.sleep(0.5)
        want = {s: ref.processed_ids()[s] & set(ids) for s in SERVICES}
        ref_out = ref.output_ids(set(ids))
        ref_log = ref.log_counts()
        ref.stop()
        ref = None
        if not any(want.values()):
            raise RuntimeError("the reference run recorded nothing: the oracle would prove nothing")

        chaos, faults = one_run(args, workdir, items, ids, faults=True)
        ref_timed = frozenset(v[1] for v in ref_out.values() if v[0] in ID_VARIABLE)
        settled = settle(chaos, want, max(180, args.duration / 2), frozenset(ids), ref_timed)
        got = chaos.processed_ids()
        out = chaos.output_ids(set(ids))
        log_counts = chaos.log_counts()
        dead = chaos.dead_letters()
        self_check = oracle_self_check(chaos, want, got, log_counts)
        adopted = sum(s.stderr_text().count("adopted the MQTT session of a removed shard index")
                      for s in chaos.replicas + chaos.retired)
        crashed = [f"{s.instance}: {p}" for s in chaos.replicas + chaos.retired for p in s.check()
                   if "exited by itself" not in p]
    except BaseException as e:  # noqa: BLE001
        log(f"harness failure: {e!r}")
        for r in (ref, chaos):
            if r:
                r.stop()
        return 2
    finally:
        pass
    chaos.stop()

    lost_inputs = {s: sorted(want[s] - got[s]) for s in SERVICES}
    # Outputs that are a function of the input alone are compared with the
    # reference (timed ends by effect, their ids carry a deadline). A wake
    # decision is not: which personas wake-evaluator sees
    # asleep when a message arrives depends on how far dormancy-monitor has
    # got, so for those only the chaos run's own consistency is checked (one
    # effect, one id).
    det = lambda d: {i: v for i, v in d.items() if v[0] not in ORDER_DEPENDENT | ID_VARIABLE}  # noqa: E731
    lost_outputs = sorted(set(det(ref_out)) - set(det(out)))
    extra_outputs = sorted(set(det(out)) - set(det(ref_out)))
    ref_effects = {v[1] for v in ref_out.values() if v[0] in ID_VARIABLE}
    got_effects = {v[1] for v in out.values() if v[0] in ID_VARIABLE}
    lost_outputs += sorted(str(e) for e in ref_effects - got_effects)
    by_effect = collections.defaultdict(set)
    for i, (fam, effect) in out.items():
        if fam in ORDER_DEPENDENT | ID_VARIABLE:
            by_effect[effect].add(i)
    extra_outputs += sorted(i for ids_ in by_effect.values() if len(ids_) > 1 for i in sorted(ids_)[1:])
    families = collections.Counter(v[0] for v in ref_out.values())
    doubled_log = sorted(m for m, c in log_counts.items() if c > 1 and m in set(ids))
    missing_log = sorted(m for m, c in ref_log.items() if c >= 1 and log_counts.get(m, 0) == 0)
    lost = sum(len(v) for v in lost_inputs.values()) + len(lost_outputs) + len(missing_log)
    doubled = len(extra_outputs) + len(doubled_log)
    dead_total = sum(v for v in dead.values() if v > 0)

    print()
    print("chaos summary")
    print(f"  seed                {args.seed}")
    print(f"  inputs              {len(items)} (x {len(SERVICES)} services, 2 replicas each)")
    print(f"  faults injected     {faults.total}  " + ", ".join(f"{k} {v}" for k, v in sorted(faults.count.items())))
    print(f"  reference           {', '.join(f'{s} {len(want[s])}' for s in SERVICES)} inputs processed; "
          f"{len(ref_out)} output ids ({', '.join(f'{k} {v}' for k, v in sorted(families.items()))}); "
          f"{sum(ref_log.values())} room log entries")
    print(f"  lost                {lost}  (inputs: "
          + ", ".join(f"{s} {len(v)}" for s, v in lost_inputs.items())
          + f"; output ids {len(lost_outputs)}; room log entries {len(missing_log)})")
    print(f"  doubled             {doubled}  (output ids the reference never produced {len(extra_outputs)}; "
          f"room log entries twice {len(doubled_log)})")
    print(f"  dead letters        {dead_total}  ({', '.join(f'{s}:deadletter {v}' for s, v in dead.items())})")
    print(f"  sessions adopted    {adopted}  (MQTT sessions of removed shard indexes drained and ended)")
    print(f"  settled             {'yes' if settled else 'NO (timed out)'}")
    print(f"  oracle self-check   {self_check or 'FAILED: a planted loss went unseen'}")
    print(f"  elapsed             {time.monotonic() - t0:.0f} s")
    for what, sample in (("lost inputs", {s: v[:5] for s, v in lost_inputs.items() if v}),
                         ("lost outputs", lost_outputs[:5]), ("extra outputs", extra_outputs[:5]),
                         ("doubled log", doubled_log[:5]), ("replica problems", crashed[:5])):
        if sample:
            print(f"  e.g. {what}: {sample}")
    for line in loss_context(lost_outputs, ids, faults):
        print(f"  lost output         {line}")
    return finish(args.keep, workdir, self_check, lost or doubled or dead_total or not settled or crashed)


def finish(keep, workdir, self_check_ok, bad):
    """The end of a run (this one and scripts/chaos_services.py's): the
    folder kept or removed, and the exit status (2 when the oracle's
    self-check failed, 1 on any finding)."""
    if keep:
        print(f"  folder              {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    if not self_check_ok:
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
