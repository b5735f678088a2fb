"""Integration test harness: real redis-server, real mosquitto, real service
processes, on free loopback ports in a temporary folder.

Every wait here is bounded and every process started here is killed at
teardown (see conftest.py). Nothing is mocked.

Pieces:
  RedisServer   redis-server with AOF on (appendfsync always by default),
                kill9()/restart() on the same port and data folder.
  Mosquitto     mosquitto with a config derived from the project's
                deploy/mosquitto/mosquitto.conf, kill9()/restart() likewise.
  Service       one daemon process (build/<kind>/services/<name>/<name>) with
                its env, /readyz wait, stderr captured to a file, and a clean
                exit / sanitizer check (check()).
  Collector     a paho client subscribed to '#' recording every message.
  Publisher     QoS 1 publishes that wait for the PUBACK; publish_reliably()
                retries what was not acknowledged (for broker restarts).
  metrics()     GET /metrics parsed into samples.
"""

import atexit
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.environ.get("VIGIL_SOURCE_DIR") or os.path.join(HERE, "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("VIGIL_BUILD_DIR") or os.path.join(SOURCE_DIR, "build", "asan"))

def malloc_tunables(cur):
    """GLIBC_TUNABLES as a daemon gives itself at start-up
    (libshared/include/vigil/malloc_tune.h): cur with the malloc cache size
    added, unless cur names it already (e.g. glibc.malloc.tcache_count=7,
    glibc's own)."""
    if "glibc.malloc.tcache_count=" in cur:
        return cur
    with open(os.path.join(SOURCE_DIR, "libshared", "include", "vigil", "malloc_tune.h")) as f:
        count = re.search(r"#define VIGIL_MALLOC_TCACHE_COUNT (\d+)", f.read()).group(1)
    ours = f"glibc.malloc.tcache_count={count}"
    return f"{cur}:{ours}" if cur else ours


# Multiplies every timeout (e.g. VIGIL_TEST_SLOW=3 on a loaded machine).
SLOW = float(os.environ.get("VIGIL_TEST_SLOW", "1"))

SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
    "WARNING: ThreadSanitizer",
    "SUMMARY: UndefinedBehaviorSanitizer",
)


# Every process started here, killed at interpreter exit if still running
# (teardown normally stops them first; this covers interrupted runs).
_STARTED = []


@atexit.register
def _kill_leftovers():
    for p in _STARTED:
        if p.poll() is None:
            try:
                p.kill()
            except OSError:
                pass


def _popen(*args, **kw):
    p = subprocess.Popen(*args, **kw)
    _STARTED[:] = [x for x in _STARTED if x.poll() is None]
    _STARTED.append(p)
    return p


class HarnessError(AssertionError):
    """A bounded wait ran out, or a process misbehaved."""


def scaled(seconds):
    return seconds * SLOW


def now_ms():
    return int(time.time() * 1000)


_handed_out = set()


def _ephemeral_low():
    """The lowest port the kernel gives outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A TCP port that was free on 127.0.0.1 a moment ago, below the
    kernel's range for outgoing connections: a port from that range (what
    binding port 0 gives) can be taken by any client's connection while a
    service killed in a test is down, and its restart on the same port then
    fails with "Address already in use". Never the same port twice in one
    process."""
    low, high = 10000, _ephemeral_low() - 1
    for _ in range(200):
        port = random.randint(low, high) if high > low else 0
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            port = s.getsockname()[1]
        _handed_out.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(pred, timeout, what, interval=0.02):
    """Polls pred() until it returns a truthy value (returned) or timeout."""
    deadline = time.monotonic() + scaled(timeout)
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - reported on timeout
            last_exc = e
        if time.monotonic() >= deadline:
            extra = f" (last error: {last_exc!r})" if last_exc else ""
            raise HarnessError(f"timed out after {scaled(timeout):.1f}s waiting for {what}{extra}")
        time.sleep(interval)


def thread_stacks(pid, timeout=30):
    """Every thread's stack of a live process, by gdb if the machine has it
    (a process that will not stop says where it waits); a line saying why
    not otherwise."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "(no gdb here: thread stacks not taken)"
    try:
        r = subprocess.run([gdb, "-batch", "-nx", "-p", str(pid), "-ex", "thread apply all bt"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out = r.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError) as e:
        return f"(gdb failed: {e})"
    keep = [l for l in out.splitlines() if l.startswith(("Thread ", "#"))]
    return "thread stacks (gdb):\n" + "\n".join(keep[:400])


def tail(path, n=60):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
        return "\n".join(lines[-n:])
    except OSError as e:
        return f"<cannot read {path}: {e}>"


def _stop_process(proc, grace=5.0):
    """SIGTERM, bounded wait, SIGKILL. Returns the exit code."""
    if proc is None:
        return None
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=scaled(grace))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode


def _kill9(proc):
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


# --------------------------------------------------------------------------
# redis-server


class RedisServer:
    def __init__(self, workdir, port=None, appendfsync="always", aclfile=None, auth=None):
        # aclfile: a users.acl (scripts/secrets); auth: (user, password) the
        # harness's own clients (readiness, client()) log in with.
        self.aclfile = aclfile
        self.auth = auth
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.port = port or free_port()
        self.appendfsync = appendfsync
        self.proc = None
        self.log = os.path.join(self.dir, "redis.log")
        self.conf = os.path.join(self.dir, "redis.conf")
        self.starts = 0

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def _write_conf(self):
        lines = [
            f"port {self.port}",
            "bind 127.0.0.1",
            "protected-mode yes",
            f"dir {self.dir}",
            "daemonize no",
            'logfile ""',
            "appendonly yes",
            f"appendfsync {self.appendfsync}",
            'save ""',
            "databases 16",
        ]
        if self.aclfile:
            lines.append(f"aclfile {self.aclfile}")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self, timeout=15):
        if shutil.which("redis-server") is None:
            raise HarnessError("redis-server not found (scripts/install-deps)")
        for attempt in range(3):
            self._write_conf()
            logf = open(self.log, "ab")
            self.proc = _popen(["redis-server", self.conf], stdout=logf, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
            logf.close()
            self.starts += 1
            try:
                wait_until(self._ready, timeout, f"redis-server on port {self.port}")
                return self
            except HarnessError:
                died = self.proc.poll() is not None
                _kill9(self.proc)
                if died and self.starts == 1 and "Address already in use" in tail(self.log) and attempt < 2:
                    self.port = free_port()  # lost a race for the port: only on the first start
                    self.starts = 0
                    continue
                raise HarnessError(f"redis-server did not start:\n{tail(self.log)}")
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            raise HarnessError(f"redis-server exited with {self.proc.returncode}:\n{tail(self.log)}")
        c = self.client()
        try:
            return c.ping()
        finally:
            c.close()

    def client(self, **kw):
        import redis  # python3-redis

        kw.setdefault("socket_timeout", 5)
        kw.setdefault("socket_connect_timeout", 2)
        if self.auth:
            kw.setdefault("username", self.auth[0])
            kw.setdefault("password", self.auth[1])
        return redis.Redis(host="127.0.0.1", port=self.port, db=0, **kw)

    def kill9(self):
        _kill9(self.proc)

    def restart(self, timeout=15):
        """Starts again on the same port with the same data folder."""
        self.kill9()
        return self.start(timeout)

    def stop(self):
        _stop_process(self.proc)


# --------------------------------------------------------------------------
# mosquitto

# Settings that belong to a listener (dropped with it), and settings we
# always set ourselves.
_MOSQ_LISTENER_OPTS = {
    "listener", "port", "bind_address", "bind_interface", "protocol", "socket_domain", "certfile",
    "keyfile", "cafile", "capath", "crlfile", "ciphers", "ciphers_tls1.3", "dhparamfile", "tls_version",
    "tls_engine", "tls_keyform", "require_certificate", "use_identity_as_username",
    "use_subject_as_username", "use_username_as_clientid", "psk_hint", "http_dir", "mount_point",
    "max_connections",
}
_MOSQ_OURS = {
    "persistence_location", "persistence_file", "log_dest", "log_type", "pid_file", "user",
    "include_dir", "password_file", "acl_file", "allow_anonymous", "per_listener_settings",
}
# What the project's broker config must give us when deploy/ has none yet
# (docs/architecture.md: no silent drop of queued QoS 1 messages, frequent autosave,
# an explicit packet size limit).
MOSQ_ESSENTIALS = [
    "persistence true",
    "autosave_interval 1",
    "max_queued_messages 0",
    "max_queued_bytes 268435456",
    "max_inflight_messages 20",
    "max_packet_size 1100000",
    "message_size_limit 1048576",
    "persistent_client_expiration 1d",
]


def deploy_mosquitto_conf():
    return os.path.join(SOURCE_DIR, "deploy", "mosquitto", "mosquitto.conf")


def project_broker_conf(path, nodelay=None, max_inflight=None):
    """Writes to path the project's broker config with two settings changed
    and returns path: nodelay True/False sets set_tcp_nodelay (False drops
    it: mosquitto's default, the broker as shipped; None keeps the
    config's); max_inflight None keeps the config's max_inflight_messages,
    0 drops it (mosquitto's default, 20), N sets N."""
    lines = []
    with open(deploy_mosquitto_conf()) as f:
        for line in f:
            word = line.strip().split(" ")[0]
            if nodelay is not None and word == "set_tcp_nodelay":
                continue
            if max_inflight is not None and word == "max_inflight_messages":
                continue
            lines.append(line)
    if nodelay:
        lines.append("set_tcp_nodelay true\n")
    if max_inflight:
        lines.append(f"max_inflight_messages {max_inflight}\n")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def mosquitto_config(port, datadir, source=None, auth=None):
    """Config text: the project's broker settings with our listener, data
    folder and logging. source defaults to deploy/mosquitto/mosquitto.conf;
    the essentials above are used when it does not exist. auth:
    (password_file, acl_file) for a broker that refuses anonymous clients."""
    source = source or deploy_mosquitto_conf()
    out = []
    if os.path.exists(source):
        out.append(f"# generated by tests/integration/harness.py from {source}")
        with open(source) as f:
            for line in f:
                s = line.strip()
                if not s or s.startswith("#"):
                    continue
                word = s.split()[0]
                if word in _MOSQ_LISTENER_OPTS or word in _MOSQ_OURS:
                    continue
                out.append(s)
    else:
        out.append(f"# generated by tests/integration/harness.py ({source} does not exist)")
        out += MOSQ_ESSENTIALS
    out += [
        f"persistence_location {datadir.rstrip('/')}/",
        "log_dest stderr",
        "log_type error",
        "log_type warning",
        "log_type notice",
        # Root would otherwise drop to user mosquitto, which cannot write
        # into pytest's private temporary folders (docs/architecture.md).
        "user root" if os.geteuid() == 0 else f"user {os.environ.get('USER', 'nobody')}",
        f"listener {port} 127.0.0.1",
    ]
    if auth:
        out += ["allow_anonymous false", f"password_file {auth[0]}", f"acl_file {auth[1]}"]
    else:
        out.append("allow_anonymous true")
    return "\n".join(out) + "\n"


class Mosquitto:
    def __init__(self, workdir, port=None, source_conf=None, auth=None):
        self.auth = auth  # (password_file, acl_file): see mosquitto_config
        self.dir = os.path.join(workdir, "mosquitto")
        os.makedirs(self.dir, exist_ok=True)
        self.port = port or free_port()
        self.source_conf = source_conf
        self.proc = None
        self.log = os.path.join(self.dir, "mosquitto.log")
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        self.starts = 0

    @property
    def url(self):
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self, timeout=15):
        if shutil.which("mosquitto") is None and not os.path.exists("/usr/sbin/mosquitto"):
            raise HarnessError("mosquitto not found (scripts/install-deps)")
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        for attempt in range(3):
            with open(self.conf, "w") as f:
                f.write(self.config_text())
            logf = open(self.log, "ab")
            self.proc = _popen([exe, "-c", self.conf], stdout=logf, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
            logf.close()
            self.starts += 1
            try:
                wait_until(self._ready, timeout, f"mosquitto on port {self.port}")
                return self
            except HarnessError:
                died = self.proc.poll() is not None
                _kill9(self.proc)
                if died and self.starts == 1 and "Address already in use" in tail(self.log) and attempt < 2:
                    self.port = free_port()
                    self.starts = 0
                    continue
                raise HarnessError(f"mosquitto did not start:\n{tail(self.log)}")
        return self

    def config_text(self):
        """The config file's text (SecureMosquitto adds authentication / TLS;
        auth= the generated password_file and acl_file)."""
        return mosquitto_config(self.port, self.dir, self.source_conf, self.auth)

    def _ready(self):
        if self.proc.poll() is not None:
            raise HarnessError(f"mosquitto exited with {self.proc.returncode}:\n{tail(self.log)}")
        if not port_open(self.port):
            return False
        # A full MQTT round trip (CONNECT/CONNACK).
        c = new_client(f"probe-{uuid.uuid4().hex[:8]}", v5=False)
        try:
            c.connect("127.0.0.1", self.port, keepalive=5)
            return True
        finally:
            try:
                c.disconnect()
            except Exception:  # noqa: BLE001
                pass

    def kill9(self):
        _kill9(self.proc)

    def wait_saved(self, since_ns=None, timeout=15):
        """Waits until mosquitto has written its in-memory database to disk
        after since_ns (time.time_ns(), default now): call it once what must
        survive a kill -9 exists (a session, a subscription, a queued
        message). mosquitto persists by snapshot, every 2 s with
        `autosave_interval 1` (it counts whole seconds), so a fixed wait of
        1.5 s after a client subscribed left its session unsaved about half
        the time."""
        since_ns = time.time_ns() if since_ns is None else since_ns
        path = os.path.join(self.dir, "mosquitto.db")
        wait_until(lambda: os.path.exists(path) and os.stat(path).st_mtime_ns > since_ns,
                   timeout, "mosquitto's save of its database to disk")

    def restart(self, timeout=15):
        """Starts again on the same port with the same persistence folder."""
        self.kill9()
        return self.start(timeout)

    def stop(self):
        _stop_process(self.proc)


# --------------------------------------------------------------------------
# paho helpers (python3-paho-mqtt 1.6.x; also works with 2.x)


def shard_of(key, count):
    """The shard index a key falls in (libshared's vigil_shard_of: FNV-1a
    64 of the key, modulo the shard count)."""
    h = 0xCBF29CE484222325
    for b in key.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h % count if count > 1 else 0


def balanced_ids(make, per_shard, count=2):
    """Ids make(n) for n = 0, 1, ... keeping per_shard of them in each of
    count shards (shard_of), in the order made: a test of replicas gives
    each the same share of the work."""
    ids, n = [], 0
    while len(ids) < per_shard * count:
        key = make(n)
        n += 1
        if sum(1 for x in ids if shard_of(x, count) == shard_of(key, count)) < per_shard:
            ids.append(key)
    return ids


def new_client(client_id, v5=True, clean=True):
    kw = {"client_id": client_id, "protocol": mqtt.MQTTv5 if v5 else mqtt.MQTTv311}
    if not v5:
        kw["clean_session"] = clean
    if hasattr(mqtt, "CallbackAPIVersion"):  # paho 2.x
        return mqtt.Client(mqtt.CallbackAPIVersion.VERSION1, **kw)
    return mqtt.Client(**kw)


class Msg:
    __slots__ = ("topic", "payload", "retained", "t", "seq")

    def __init__(self, topic, payload, retained, t, seq):
        self.topic = topic
        self.payload = payload
        self.retained = retained
        self.t = t
        self.seq = seq

    def json(self):
        return json.loads(self.payload.decode("utf-8"))

    def __repr__(self):
        p = self.payload[:300].decode("utf-8", "replace")
        return f"<{self.topic}{' (retained)' if self.retained else ''} {p}>"


def topic_matches(filt, topic):
    return mqtt.topic_matches_sub(filt, topic)


class Collector:
    """Records every message on `topics` (default '#') with its retain flag
    as published (MQTT 5 retain-as-published). Reconnects by itself; with
    persistent=True the broker keeps its session (and queues for it) while it
    is disconnected, e.g. across a broker restart."""

    def __init__(self, port, topics=("#",), persistent=True, name="collector"):
        self.port = port
        self.topics = list(topics)
        self.msgs = []
        self.cond = threading.Condition()
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.client_id = f"{name}-{uuid.uuid4().hex[:10]}"
        self.c = new_client(self.client_id, v5=True)
        self.c.on_connect = self._on_connect
        self.c.on_message = self._on_message
        self.c.on_subscribe = self._on_subscribe
        self.c.on_disconnect = self._on_disconnect
        self.c.reconnect_delay_set(0.05, 1)
        self.c.max_inflight_messages_set(1000)
        self.c.max_queued_messages_set(0)
        self.persistent = persistent
        self._seq = 0

    def start(self, timeout=10):
        props = None
        if self.persistent:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 3600
        # A persistent collector never asks for a clean start, not even on
        # its first connect (its client id is new, so there is nothing to
        # resume): mosquitto 2.0.11 does not bring back across a kill -9 the
        # session of a client whose first CONNECT had clean start set, even
        # with a Session Expiry Interval, and what is published after the
        # restart and before the collector is back never reaches it (4-5
        # of 20 such messages in /tmp experiments; none with clean start
        # off). The services' own sessions never use clean start.
        clean = False if self.persistent else True
        self.c.connect("127.0.0.1", self.port, keepalive=10, clean_start=clean, properties=props)
        self.c.loop_start()
        if not self.subscribed.wait(scaled(timeout)):
            raise HarnessError("collector did not subscribe")
        return self

    def _on_connect(self, client, userdata, flags, rc, properties=None):
        if rc != 0:
            return
        self.connected.set()
        opts = SubscribeOptions(qos=1, retainAsPublished=True)
        client.subscribe([(t, opts) for t in self.topics])

    def _on_subscribe(self, client, userdata, mid, granted, properties=None):
        self.subscribed.set()

    def _on_disconnect(self, client, userdata, rc, properties=None):
        self.connected.clear()

    def _on_message(self, client, userdata, m):
        with self.cond:
            self._seq += 1
            self.msgs.append(Msg(m.topic, bytes(m.payload), bool(m.retain), time.monotonic(), self._seq))
            self.cond.notify_all()

    def stop(self):
        try:
            self.c.disconnect()
        except Exception:  # noqa: BLE001
            pass
        self.c.loop_stop()

    # -- queries -----------------------------------------------------------

    def snapshot(self, filt=None):
        with self.cond:
            ms = list(self.msgs)
        if filt is None:
            return ms
        return [m for m in ms if topic_matches(filt, m.topic)]

    def clear(self):
        with self.cond:
            self.msgs.clear()

    def mark(self):
        """A position; pass as since= to look only at later messages."""
        with self.cond:
            return self._seq

    def find(self, filt, pred=None, since=0):
        out = []
        for m in self.snapshot(filt):
            if m.seq <= since:
                continue
            if pred is None:
                out.append(m)
                continue
            try:
                if pred(m.json()):
                    out.append(m)
            except (ValueError, UnicodeDecodeError):
                pass
        return out

    def events(self, filt, pred=None, since=0):
        """Decoded JSON payloads of matching messages, in arrival order."""
        return [m.json() for m in self.find(filt, pred, since)]

    def wait_for(self, fn, timeout, what):
        """Waits until fn(self) returns a truthy value, which is returned."""
        deadline = time.monotonic() + scaled(timeout)
        with self.cond:
            while True:
                self.cond.release()
                try:
                    t0 = time.monotonic()
                    v = fn(self)
                    cost = time.monotonic() - t0
                    # fn scans every message so far: run again on each
                    # arrival, it would take the GIL from the client thread
                    # and slow the receipt it waits for (5,000 inputs'
                    # 15,000 outputs arrived at 42 a second). Rest twice
                    # its cost first, so it uses a third of the time at most.
                    if not v and cost > 0.002:
                        time.sleep(min(2 * cost, max(0.0, deadline - time.monotonic())))
                finally:
                    self.cond.acquire()
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(min(left, 0.1))
        recent = "\n  ".join(repr(m) for m in self.snapshot()[-25:])
        raise HarnessError(f"timed out after {scaled(timeout):.1f}s waiting for {what}; last messages:\n  {recent}")

    def wait_event(self, filt, pred=None, timeout=10, what=None, since=0):
        """Waits for the first message on filt whose JSON satisfies pred."""
        ms = self.wait_for(lambda c: c.find(filt, pred, since), timeout, what or f"a message on {filt}")
        return ms[0].json()

    def wait_count(self, filt, n, timeout, pred=None, key="id", since=0, what=None):
        """Waits until n distinct values of payload[key] were seen on filt
        (duplicates of one event id count once). Returns {key: payload}."""

        def distinct(c):
            seen = {}
            for ev in c.events(filt, pred, since):
                seen.setdefault(ev.get(key) if key else json.dumps(ev, sort_keys=True), ev)
            return seen if len(seen) >= n else None

        try:
            return self.wait_for(distinct, timeout, what or f"{n} distinct '{key}' on {filt}")
        except HarnessError as e:
            got = len({(ev.get(key) if key else repr(ev)) for ev in self.events(filt, pred, since)})
            raise HarnessError(f"{e}\n(saw {got} of {n})") from None


def retained(port, filt, timeout=3.0, quiet=0.3):
    """The retained messages currently held by the broker for filt:
    {topic: decoded JSON (or bytes if not JSON)}."""
    got = {}
    done = threading.Event()
    last = [time.monotonic()]
    c = new_client(f"retained-{uuid.uuid4().hex[:10]}", v5=True)

    def on_connect(client, userdata, flags, rc, properties=None):
        client.subscribe([(filt, SubscribeOptions(qos=1))])

    def on_subscribe(client, userdata, mid, granted, properties=None):
        last[0] = time.monotonic()
        done.set()

    def on_message(client, userdata, m):
        if m.retain:
            try:
                got[m.topic] = json.loads(m.payload.decode("utf-8"))
            except ValueError:
                got[m.topic] = bytes(m.payload)
            last[0] = time.monotonic()

    c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
    c.connect("127.0.0.1", port, keepalive=10)
    c.loop_start()
    try:
        if not done.wait(scaled(timeout)):
            raise HarnessError(f"could not subscribe to {filt} for retained messages")
        # Retained messages arrive in a burst after the SUBACK: read until
        # nothing new came for `quiet` seconds.
        end = time.monotonic() + scaled(timeout)
        while time.monotonic() < end and time.monotonic() - last[0] < quiet:
            time.sleep(0.02)
        return dict(got)
    finally:
        c.disconnect()
        c.loop_stop()


class Publisher:
    """QoS 1 publisher. publish() waits for the PUBACK (bounded)."""

    def __init__(self, port, name="pub", persistent=False):
        self.port = port
        self.client_id = f"{name}-{uuid.uuid4().hex[:10]}"
        self.c = new_client(self.client_id, v5=False, clean=not persistent)
        self.c.reconnect_delay_set(0.05, 1)
        self.c.max_inflight_messages_set(200)
        self.c.max_queued_messages_set(0)
        self.connected = threading.Event()
        self.c.on_connect = lambda c, u, f, rc, p=None: self.connected.set() if rc == 0 else None
        self.c.on_disconnect = lambda c, u, rc, p=None: self.connected.clear()
        self.published_topics = set()

    def start(self, timeout=10):
        self.c.connect("127.0.0.1", self.port, keepalive=10)
        self.c.loop_start()
        if not self.connected.wait(scaled(timeout)):
            raise HarnessError("publisher did not connect")
        return self

    def stop(self):
        try:
            self.c.disconnect()
        except Exception:  # noqa: BLE001
            pass
        self.c.loop_stop()

    @staticmethod
    def _bytes(payload):
        if isinstance(payload, (dict, list)):
            return json.dumps(payload, ensure_ascii=False).encode("utf-8")
        if isinstance(payload, str):
            return payload.encode("utf-8")
        return payload

    def publish(self, topic, payload, retain=False, timeout=10, qos=1):
        self.published_topics.add(topic)
        info = self.c.publish(topic, self._bytes(payload), qos=qos, retain=retain)
        if qos == 0:
            return info
        info.wait_for_publish(timeout=scaled(timeout))
        if not info.is_published():
            raise HarnessError(f"no PUBACK within {scaled(timeout):.0f}s for {topic} (rc={info.rc})")
        return info

    def publish_many(self, items, timeout=60):
        """items: iterable of (topic, payload). Pipelines them (the paho
        window), then waits for every PUBACK."""
        infos = []
        for topic, payload in items:
            self.published_topics.add(topic)
            infos.append((topic, self.c.publish(topic, self._bytes(payload), qos=1)))
        deadline = time.monotonic() + scaled(timeout)
        for topic, info in infos:
            info.wait_for_publish(timeout=max(0.01, deadline - time.monotonic()))
            if not info.is_published():
                raise HarnessError(f"no PUBACK within {scaled(timeout):.0f}s for {topic}")
        return len(infos)


class ReliablePublisher:
    """Publishes a stream at QoS 1 through broker outages: each message is
    re-published (same payload, same id) until its PUBACK arrives, like a
    producer with retries. acked holds the indexes acknowledged at least
    once."""

    def __init__(self, port, name="rpub"):
        self.port = port
        self.name = name
        self.acked = set()
        self.attempts = 0
        self._client = None

    def _connect(self, deadline):
        while time.monotonic() < deadline:
            c = new_client(f"{self.name}-{uuid.uuid4().hex[:8]}", v5=False, clean=True)
            c.max_inflight_messages_set(100)
            c.max_queued_messages_set(0)
            try:
                c.connect("127.0.0.1", self.port, keepalive=5)
            except OSError:
                time.sleep(0.1)
                continue
            c.loop_start()
            ok = wait_quiet(lambda: c.is_connected(), 3)
            if ok:
                return c
            c.loop_stop()
            time.sleep(0.1)
        raise HarnessError("reliable publisher could not connect to the broker")

    def run(self, items, timeout=120, window=50, on_progress=None):
        """items: list of (topic, payload bytes/dict). Returns when every item
        was acknowledged. on_progress(n_acked) is called now and then (the
        test kills things from there)."""
        deadline = time.monotonic() + scaled(timeout)
        pending = list(range(len(items)))
        while pending:
            if time.monotonic() > deadline:
                raise HarnessError(f"{len(pending)} of {len(items)} messages never acknowledged")
            if self._client is None:
                self._client = self._connect(deadline)
            c = self._client
            batch, pending = pending[:window], pending[window:]
            infos = []
            for i in batch:
                topic, payload = items[i]
                self.attempts += 1
                infos.append((i, c.publish(topic, Publisher._bytes(payload), qos=1)))
            failed = []
            bdeadline = time.monotonic() + 3
            for i, info in infos:
                if _acked(info, max(0.01, bdeadline - time.monotonic())):
                    self.acked.add(i)
                else:
                    failed.append(i)
            if failed:
                # Connection trouble: drop this client and retry later.
                pending = failed + pending
                try:
                    c.disconnect()
                except Exception:  # noqa: BLE001
                    pass
                c.loop_stop()
                self._client = None
                time.sleep(0.1)
            if on_progress:
                on_progress(len(self.acked))
        return len(self.acked)

    def stop(self):
        if self._client is not None:
            try:
                self._client.disconnect()
            except Exception:  # noqa: BLE001
                pass
            self._client.loop_stop()
            self._client = None


def _acked(info, timeout):
    """True when a QoS 1 publish got its PUBACK within timeout (paho raises
    when the publish failed for lack of a connection)."""
    try:
        info.wait_for_publish(timeout=timeout)
        return info.is_published()
    except (RuntimeError, ValueError):
        return False


def pipe_bytes(src, dst, delay=0.0):
    """Copies what src receives to dst until either end closes (each chunk
    held delay seconds first), then shuts both down: one direction of a
    test's TCP proxy."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if delay:
                time.sleep(delay)
            dst.sendall(data)
    except OSError:
        pass
    for x in (src, dst):
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def wait_quiet(pred, timeout):
    """Like wait_until but returns False instead of raising."""
    try:
        return wait_until(pred, timeout, "condition")
    except HarnessError:
        return False


# --------------------------------------------------------------------------
# HTTP and metrics


def http_get(port, path, timeout=3):
    """(status, body text). Never raises for HTTP error statuses."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace"), dict(e.headers)


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text -> list of (name, {label: value}, float)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                  for k, v in _LABEL.findall(m.group(3) or "")}
        try:
            val = float(m.group(4))
        except ValueError:
            continue
        out.append((m.group(1), labels, val))
    return out


def metric_value(samples, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for n, ls, v in samples:
        if n == name and all(ls.get(k) == val for k, val in labels.items()):
            total += v
    return total


# --------------------------------------------------------------------------
# service processes


def service_binary(name, build_dir=None):
    return os.path.join(os.path.abspath(build_dir or BUILD_DIR), "services", name, name)


def is_asan_build(build_dir=None):
    cache = os.path.join(build_dir or BUILD_DIR, "CMakeCache.txt")
    try:
        with open(cache) as f:
            return "VIGIL_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


class Service:
    """One daemon process. env holds the VIGIL_* variables; start() waits
    for /readyz. check() (called at teardown) fails on an unexpected exit or
    a sanitizer report in any of its stderr files."""

    def __init__(self, name, workdir, env, build_dir=None, instance=None):
        self.name = name
        self.exe = service_binary(name, build_dir)
        self.instance = instance or f"{name}-{uuid.uuid4().hex[:6]}"
        self.workdir = os.path.join(workdir, f"svc-{self.instance}")
        os.makedirs(self.workdir, exist_ok=True)
        self.env = dict(env)
        self.env.setdefault("VIGIL_INSTANCE", self.instance)
        if "VIGIL_HTTP_ADDR" not in self.env:
            self.env["VIGIL_HTTP_ADDR"] = f"127.0.0.1:{free_port()}"
        self.http_port = int(self.env["VIGIL_HTTP_ADDR"].rsplit(":", 1)[1])
        self.proc = None
        self.runs = []  # (stderr path, returncode or None, how it ended)
        self.expect_exit = False

    # -- process control ---------------------------------------------------

    def full_env(self):
        e = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
        supp = os.path.join(SOURCE_DIR, "tests", "lsan.supp")
        e.setdefault("LSAN_OPTIONS", f"suppressions={supp}")
        e.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        e.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        # What a daemon would start itself again with: given here, it does
        # not, which saves a sanitizer start (0.1 s) at each of the suite's
        # hundreds of starts (and valgrind, which would not follow it, sees
        # the daemon's work); test_platform.py checks the start again by
        # giving its own GLIBC_TUNABLES.
        e["GLIBC_TUNABLES"] = malloc_tunables(e.get("GLIBC_TUNABLES", ""))
        e.update({k: str(v) for k, v in self.env.items()})
        return e

    def start(self, wait=True, timeout=20, args=()):
        if not os.path.exists(self.exe):
            raise HarnessError(f"{self.exe} does not exist (build it: scripts/build asan)")
        if self.proc is not None and self.proc.poll() is None:
            raise HarnessError(f"{self.name} already running")
        path = os.path.join(self.workdir, f"stderr.{len(self.runs)}.log")
        errf = open(path, "wb")
        self.proc = _popen([self.exe, *args], env=self.full_env(), cwd=self.workdir,
                                     stdout=errf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        errf.close()
        self.runs.append([path, None, "running"])
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=20):
        def ready():
            if self.proc.poll() is not None:
                raise HarnessError(f"{self.name} exited with {self.proc.returncode} before ready:\n"
                                   f"{tail(self.runs[-1][0])}")
            st, _, _ = http_get(self.http_port, "/readyz", timeout=1)
            return st == 200

        try:
            wait_until(ready, timeout, f"{self.name} /readyz", interval=0.05)
        except HarnessError as e:
            raise HarnessError(f"{e}\n--- {self.name} stderr ---\n{tail(self.runs[-1][0])}") from None

    def is_ready(self):
        try:
            return http_get(self.http_port, "/readyz", timeout=1)[0] == 200
        except OSError:
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def terminate(self, timeout=10):
        """SIGTERM and wait (bounded). Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=scaled(timeout))
            except subprocess.TimeoutExpired:
                stacks = thread_stacks(self.proc.pid)
                self.proc.kill()
                self.proc.wait(timeout=10)
                self.runs[-1][1:] = [self.proc.returncode, "sigterm-timeout"]
                raise HarnessError(f"{self.name} did not exit within {timeout}s of SIGTERM:\n"
                                   f"{tail(self.runs[-1][0])}\n{stacks}")
            self.runs[-1][1:] = [self.proc.returncode, "sigterm"]
        elif self.runs[-1][2] == "running":
            self.runs[-1][1:] = [self.proc.returncode, "exited"]
        return self.proc.returncode

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.runs[-1][1:] = [self.proc.returncode, "sigkill"]

    def restart(self, wait=True, timeout=20):
        self.kill9()
        return self.start(wait=wait, timeout=timeout)

    def stderr_text(self):
        parts = []
        for path, _, _ in self.runs:
            try:
                with open(path, "rb") as f:
                    parts.append(f.read().decode("utf-8", "replace"))
            except OSError:
                pass
        return "\n".join(parts)

    def log_lines(self, msg=None):
        """The service's JSON log lines (libshared's vigil_log_kv, on stderr)
        over every run, as dicts; with msg, only those whose msg is msg."""
        out = []
        for line in self.stderr_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict) and (msg is None or d.get("msg") == msg):
                out.append(d)
        return out

    def check(self):
        """Problems seen over every run: unexpected exits and sanitizer
        reports. Returns a list of strings (empty when clean)."""
        problems = []
        if self.proc is not None and self.proc.poll() is not None and self.runs and self.runs[-1][2] == "running":
            self.runs[-1][1:] = [self.proc.returncode, "exited"]
        for path, rc, how in self.runs:
            if how == "exited" and not self.expect_exit:
                problems.append(f"{self.name} exited by itself with status {rc} (stderr {path})")
            if how == "sigterm" and rc != 0:
                problems.append(f"{self.name} exited with status {rc} after SIGTERM (stderr {path})")
            text = ""
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                pass
            for marker in SANITIZER_MARKERS:
                if marker in text:
                    i = text.index(marker)
                    problems.append(f"{self.name}: sanitizer report in {path}:\n{text[max(0, i - 200):i + 3000]}")
                    break
        return problems

    def http(self, path):
        return http_get(self.http_port, path)

    def metrics(self):
        st, body, _ = http_get(self.http_port, "/metrics")
        if st != 200:
            raise HarnessError(f"/metrics answered {st}")
        return parse_metrics(body)

    def metric(self, name, **labels):
        return metric_value(self.metrics(), name, **labels)

    def run_cli(self, args, timeout=10, env=None):
        """Runs the binary with args (no broker needed), returns CompletedProcess."""
        e = self.full_env()
        if env is not None:
            e.update(env)
        try:
            return subprocess.run([self.exe, *args], env=e, cwd=self.workdir, capture_output=True,
                                  timeout=scaled(timeout), stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as t:
            # Still running after the timeout (it was killed): returncode None.
            return subprocess.CompletedProcess([self.exe, *args], None, t.stdout or b"",
                                               (t.stderr or b"") + b"\n<still running: killed by the test>")


# --------------------------------------------------------------------------
# Redis inspection of a service's store (layout in libshared store.h)


class StoreView:
    """Reads a service's Redis keys: P S ":state:" key, snapshots P S ":" hash."""

    def __init__(self, redis_server, prefix, service):
        self.r = redis_server
        self.base = f"{prefix}{service}:"

    def _c(self):
        return self.r.client()

    def state(self, key):
        """(version, decoded state) of a state record, or (0, None)."""
        c = self._c()
        try:
            h = c.hgetall(self.base + "state:" + key)
        finally:
            c.close()
        if not h:
            return 0, None
        v = int(h.get(b"v", b"0"))
        s = h.get(b"s")
        doc = json.loads(s) if s else None
        parts = {k[2:].decode(): json.loads(t) for k, t in h.items() if k.startswith(b"p:")}
        if doc is not None and parts:
            doc["parts"] = parts  # a record kept in parts, whole (as libshared loads it)
        return v, doc

    def states(self):
        """{key: (version, raw state bytes)} of every state record."""
        c = self._c()
        try:
            out = {}
            for k in c.scan_iter(match=self.base + "state:*", count=1000):
                h = c.hgetall(k)
                out[k.decode()[len(self.base) + len("state:"):]] = (h.get(b"v"), h.get(b"s"))
            return out
        finally:
            c.close()

    def snapshot(self, name):
        """{field: decoded JSON} of snapshot hash `name` (e.g. persona:ann)."""
        c = self._c()
        try:
            h = c.hgetall(self.base + name)
        finally:
            c.close()
        out = {}
        for k, v in h.items():
            try:
                out[k.decode()] = json.loads(v)
            except ValueError:
                out[k.decode()] = v
        return out

    def keys(self):
        c = self._c()
        try:
            return sorted(k.decode() for k in c.scan_iter(match=self.base + "*", count=1000))
        finally:
            c.close()

    def outbox_len(self, shard=0):
        c = self._c()
        try:
            return c.llen(f"{self.base}outbox:{shard}")
        finally:
            c.close()


# --------------------------------------------------------------------------
# Redis with data to load (LOADING after a restart)


def redis_fill(redis, keys=40000):
    """Fills Redis with filler keys (prefix "filler:") and rewrites the AOF,
    so that a restart has something to load."""
    c = redis.client()
    try:
        p = c.pipeline(transaction=False)
        for i in range(keys):
            p.set(f"filler:{i}", "x" * 16)
            if i % 5000 == 4999:
                p.execute()
        p.execute()
        c.bgrewriteaof()
        wait_until(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0
                   and c.info("persistence")["aof_rewrite_scheduled"] == 0, 60, "the AOF rewrite")
    finally:
        c.close()


def redis_start_loading(redis, key_load_delay_us):
    """kill -9, then start again with Redis' key-load-delay (microseconds
    per key loaded), so loading its data takes seconds and every command
    meanwhile is answered -LOADING. Returns without waiting for the load."""
    redis.kill9()
    redis._write_conf()
    with open(redis.conf, "a") as f:
        f.write(f"key-load-delay {key_load_delay_us}\n")
        # answer clients (with -LOADING) every KB loaded, not every 2 MB
        f.write("loading-process-events-interval-bytes 1024\n")
    logf = open(redis.log, "ab")
    redis.proc = _popen(["redis-server", redis.conf], stdout=logf, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, start_new_session=True)
    logf.close()


# --------------------------------------------------------------------------
# Authenticated and TLS servers (credentials, ACL users, certificates):
# subclasses, so the plain ones above stay as they are.


def write_mosquitto_password_file(path, users):
    """users: {name: password}; hashed with mosquitto_passwd -b."""
    exe = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    with open(path, "w"):
        pass
    for name, pw in users.items():
        subprocess.run([exe, "-b", path, name, pw], check=True, capture_output=True, timeout=10)
    os.chmod(path, 0o600)
    return path


class SecureMosquitto(Mosquitto):
    """mosquitto with allow_anonymous false and a password_file (users:
    {name: password}, written again at every start, so changing
    self.users then restart() rotates a password), an optional acl_file
    (its text), and an optional TLS listener: tls={"cafile", "certfile",
    "keyfile", "require_certificate": bool}. anonymous=True keeps
    anonymous clients allowed (TLS-only tests)."""

    def __init__(self, workdir, port=None, users=None, acl=None, tls=None, anonymous=False,
                 source_conf=None):
        super().__init__(workdir, port=port, source_conf=source_conf)
        self.users = dict(users or {})
        self.acl = acl
        self.tls = tls
        self.anonymous = anonymous

    @property
    def url(self):
        if self.tls:
            return f"mqtts://127.0.0.1:{self.port}"
        return f"mqtt://127.0.0.1:{self.port}"

    def config_text(self):
        lines = [l for l in super().config_text().splitlines()
                 if not l.startswith("listener ") and not l.startswith("allow_anonymous ")]
        lines.append(f"listener {self.port} 127.0.0.1")
        if self.tls:
            lines += [f"cafile {self.tls['cafile']}", f"certfile {self.tls['certfile']}",
                      f"keyfile {self.tls['keyfile']}"]
            if self.tls.get("require_certificate"):
                lines.append("require_certificate true")
        if self.users:
            pw = write_mosquitto_password_file(os.path.join(self.dir, "passwd"), self.users)
            lines.append(f"password_file {pw}")
        if self.acl is not None:
            path = os.path.join(self.dir, "acl")
            with open(path, "w") as f:
                f.write(self.acl)
            lines.append(f"acl_file {path}")
        lines.append("allow_anonymous " + ("true" if self.anonymous or not self.users else "false"))
        return "\n".join(lines) + "\n"

    def _ready(self):
        if self.proc.poll() is not None:
            raise HarnessError(f"mosquitto exited with {self.proc.returncode}:\n{tail(self.log)}")
        return port_open(self.port)


class AclRedisServer(RedisServer):
    """redis-server with requirepass (the default user's password) and ACL
    users: users={name: (password, rules)}, e.g. {"svc": ("pw", "~t:* +@all")}.
    client() authenticates as the default user."""

    def __init__(self, workdir, port=None, requirepass="admin-pw", users=None, appendfsync="always"):
        super().__init__(workdir, port=port, appendfsync=appendfsync)
        self.requirepass = requirepass
        self.users = dict(users or {})

    def url_for(self, user=None, password=None, db=0):
        """redis://user:password@127.0.0.1:port/db, percent-encoded."""
        from urllib.parse import quote

        auth = ""
        if password is not None:
            auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@"
        return f"redis://{auth}127.0.0.1:{self.port}/{db}"

    def _write_conf(self):
        super()._write_conf()
        with open(self.conf, "a") as f:
            if self.requirepass:
                f.write(f"requirepass {self.requirepass}\n")
            for name, (pw, rules) in self.users.items():
                f.write(f"user {name} on >{pw} {rules}\n")

    def client(self, **kw):
        if self.requirepass:
            kw.setdefault("password", self.requirepass)
        return super().client(**kw)


def make_test_pki(dirpath, hosts=("127.0.0.1", "localhost")):
    """Certificates for TLS tests, made with openssl in dirpath: a CA, a
    server certificate for hosts signed by it, a server certificate for a
    wrong host name signed by the same CA, a second (unrelated) CA, and a
    client certificate signed by the first CA. Returns a dict of paths."""
    os.makedirs(dirpath, exist_ok=True)
    p = {k: os.path.join(dirpath, f"{k}.pem") for k in (
        "ca", "ca_key", "server", "server_key", "wrong_host", "wrong_host_key", "other_ca",
        "other_ca_key", "client", "client_key")}

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    def ca(cert, key, cn):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
            "-days", "2", "-subj", f"/CN={cn}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def leaf(cert, key, cn, san, usage):
        csr = cert + ".csr"
        ext = cert + ".ext"
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={cn}")
        with open(ext, "w") as f:
            if san:
                f.write(f"subjectAltName={san}\n")
            f.write(f"extendedKeyUsage={usage}\n")
        run("x509", "-req", "-in", csr, "-CA", p["ca"], "-CAkey", p["ca_key"], "-CAcreateserial",
            "-out", cert, "-days", "2", "-extfile", ext)

    ca(p["ca"], p["ca_key"], "vigil test CA")
    ca(p["other_ca"], p["other_ca_key"], "vigil unrelated CA")
    san = ",".join(("IP:" if h.replace(".", "").isdigit() else "DNS:") + h for h in hosts)
    leaf(p["server"], p["server_key"], hosts[0], san, "serverAuth")
    leaf(p["wrong_host"], p["wrong_host_key"], "wrong.example", "DNS:wrong.example", "serverAuth")
    leaf(p["client"], p["client_key"], "vigil-client", None, "clientAuth")
    return p
