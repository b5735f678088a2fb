"""deploy/, docker-compose.yml and the Dockerfile, checked without Docker.

No Docker engine runs on the development machines or in CI, so this checks
statically what can be checked, and runs for real what Debian ships
(mosquitto, redis-server, kubectl kustomize) on free loopback ports:

- compose: `docker-compose config -q`; every services/* directory has a
  service with command, healthcheck, restart policy, depends_on conditions
  and its port; mosquitto and redis are wired to deploy/'s configs;
- Dockerfile: two bookworm-slim stages, non-root USER, release build without
  tests, runtime stage without build tools; a built daemon needs no shared
  library that the runtime stage does not install; the healthcheck script
  works against a real HTTP server;
- mosquitto.conf: the durable-intake settings (docs/architecture.md), a comment for
  each setting, the docker variant in step; a real mosquitto starts with it,
  queues more than 1000 messages for an offline durable client, and passes a
  1 MiB payload;
- redis.conf: AOF on, noeviction; a real redis-server starts with it;
- k8s: `kubectl kustomize` renders a StatefulSet per service with probes,
  resources, non-root security context and the shard wrapper;
- the service port table agrees everywhere.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_deploy_static.py
"""
import glob
import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(os.environ.get("VIGIL_SOURCE_DIR") or Path(__file__).resolve().parents[2])
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
MOSQ_CONF = DEPLOY / "mosquitto" / "mosquitto.conf"
MOSQ_DOCKER_CONF = DEPLOY / "mosquitto" / "mosquitto.docker.conf"
REDIS_CONF = DEPLOY / "redis" / "redis.conf"
K8S = DEPLOY / "k8s"

# Default health/metrics port of each service (deploy/README.md, scripts/lib.sh).
HTTP_PORTS = {
    "dormancy-monitor": 9101,
    "wake-evaluator": 9102,
    "chat-router": 9103,
    "heartbeat": 9104,
    "council": 9105,
    "stall-resumer": 9106,
    "presence-gateway": 8080,
    "floor-control": 9108,
}
# A service is a directory under services/ with a CMakeLists.txt: exactly
# what the top CMakeLists.txt builds into the image. Each needs a compose
# entry and a StatefulSet. A directory still without CMakeLists.txt (a
# service being written) may already have them.
SERVICE_DIRS = sorted(p.name for p in (ROOT / "services").iterdir() if p.is_dir()) \
    if (ROOT / "services").is_dir() else []
SERVICES = [d for d in SERVICE_DIRS if (ROOT / "services" / d / "CMakeLists.txt").is_file()]
INFRA = ("mosquitto", "redis")

# Runtime packages the image must install for the libraries the daemons link,
# and the packages that every debian:bookworm-slim has.
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}


def port_of(service):
    if service in HTTP_PORTS:
        return HTTP_PORTS[service]
    pytest.fail(f"services/{service} has no default HTTP port: add it to deploy/README.md, "
                f"scripts/lib.sh and HTTP_PORTS in {Path(__file__).name}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def stop(proc):
    """Ends a process this test started (by its own handle), bounded."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def conf_settings(path):
    """[(key, value)] of a mosquitto/redis style config, comments dropped."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        key, _, value = s.partition(" ")
        out.append((key, value.strip()))
    return out


def one(settings, key):
    values = [v for k, v in settings if k == key]
    assert len(values) == 1, f"{key}: expected exactly one setting, found {values}"
    return values[0]


# ------------------------------------------------------------------ compose

@pytest.fixture(scope="module")
def compose():
    """The compose model, anchors and merge keys resolved (by docker-compose
    itself when installed, else by PyYAML)."""
    exe = shutil.which("docker-compose")
    if exe:
        r = subprocess.run([exe, "-f", str(COMPOSE_FILE), "config"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return yaml.safe_load(r.stdout)
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


def test_docker_compose_config_is_valid():
    exe = shutil.which("docker-compose")
    if not exe:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose): "
                    "the compose file is still parsed and checked by the other tests")
    r = subprocess.run([exe, "-f", str(COMPOSE_FILE), "config", "-q"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"docker-compose config -q failed:\n{r.stdout}\n{r.stderr}"


def compose_block(text, name):
    """The raw text of one service's block in docker-compose.yml."""
    lines = text.splitlines()
    start = lines.index(f"  {name}:") + 1
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith("    ")
                                or lines[end].lstrip().startswith("#")):
        end += 1
    return "\n".join(lines[start:end])


def test_compose_uses_the_extension_fields():
    raw = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert "x-vigil-service" in raw and "x-vigil-env" in raw, \
        "the common service settings live in x-vigil-service and x-vigil-env"
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    for svc in set(raw["services"]) - set(INFRA):
        block = compose_block(text, svc)
        assert "<<: *vigil-service" in block, f"{svc} must merge *vigil-service"
        assert "<<: *vigil-env" in block, f"{svc}'s environment must merge *vigil-env"


def test_services_directory_is_not_empty():
    assert SERVICES, "no service directories under services/"


@pytest.mark.parametrize("svc", SERVICE_DIRS)
def test_every_service_has_a_compose_entry(compose, svc):
    services = compose["services"]
    if svc not in SERVICES and svc not in services:
        pytest.skip(f"services/{svc} has no CMakeLists.txt yet (not built, not required yet)")
    assert svc in services, (f"services/{svc} has no service in docker-compose.yml: copy the "
                             f"dormancy-monitor block (see deploy/README.md)")
    s = services[svc]
    assert s["build"]["dockerfile"] == "deploy/docker/Dockerfile"
    command = s["command"] if isinstance(s["command"], list) else s["command"].split()
    assert command[0] == svc, f"{svc}: command must run the daemon {svc}"
    assert s["restart"] == "unless-stopped"
    hc = s["healthcheck"]
    test = " ".join(hc["test"]) if isinstance(hc["test"], list) else hc["test"]
    assert "vigil-healthcheck" in test or "/readyz" in test, test
    for dep in INFRA:
        assert s["depends_on"][dep]["condition"] == "service_healthy", f"{svc} -> {dep}"
    env = s["environment"]
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    assert env["VIGIL_MQTT_URL"] == "mqtt://mosquitto:1883"
    # its own MQTT and Redis user (scripts/secrets' files), never a URL in the file
    assert "VIGIL_REDIS_URL" not in env and "VIGIL_MQTT_PASSWORD" not in env
    assert env["VIGIL_MQTT_USER"] == svc
    assert env["VIGIL_MQTT_PASSWORD_FILE"] == "/run/secrets/vigil/mqtt-password"
    assert env["VIGIL_REDIS_URL_FILE"] == "/run/secrets/vigil/redis-url"
    assert any(str(v).endswith(f"deploy/secrets/services/{svc}:/run/secrets/vigil:ro") for v in s["volumes"])
    assert env["VIGIL_HTTP_ADDR"] == f"0.0.0.0:{port_of(svc)}"
    ports = [str(p) for p in s.get("ports", [])]
    assert any(f"{port_of(svc)}:{port_of(svc)}" in p for p in ports), ports


def test_no_stale_compose_services(compose):
    extra = set(compose["services"]) - set(SERVICE_DIRS) - set(INFRA)
    assert not extra, f"compose services without a services/ directory: {sorted(extra)}"


def test_compose_mosquitto_and_redis(compose):
    m = compose["services"]["mosquitto"]
    assert str(m["image"]).startswith("eclipse-mosquitto:2")
    vols = [str(v) for v in m["volumes"]]
    assert any("deploy/mosquitto/mosquitto.docker.conf" in v and "/mosquitto/config/mosquitto.conf" in v
               for v in vols), vols
    assert any(v.startswith("mosquitto-data:/mosquitto/data") for v in vols), vols
    assert "mosquitto_sub" in " ".join(m["healthcheck"]["test"])
    assert m["restart"] == "unless-stopped"

    r = compose["services"]["redis"]
    assert str(r["image"]).startswith("redis:7")
    vols = [str(v) for v in r["volumes"]]
    assert any("deploy/redis/redis.conf" in v for v in vols), vols
    assert any(v.startswith("redis-data:/data") for v in vols), vols
    cmd = " ".join(r["command"]) if isinstance(r["command"], list) else r["command"]
    assert "/usr/local/etc/redis/redis.conf" in cmd and "--dir /data" in cmd
    assert "--appendonly no" not in cmd
    assert "redis-cli --user health ping" in " ".join(r["healthcheck"]["test"])
    assert "--protected-mode" not in cmd, "protected mode stays on (the default user is off)"
    assert "--aclfile /usr/local/etc/redis/secrets/users.acl" in cmd
    assert {"mosquitto-data", "redis-data"} <= set(compose["volumes"])
    for name, s in compose["services"].items():
        for p in s.get("ports", []):
            assert str(p).startswith("127.0.0.1:"), f"{name}: publish on the host's loopback only ({p})"


# ------------------------------------------------------------------ Dockerfile

def dockerfile_stages():
    """[(from_line, [instructions])] with line continuations joined."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)
    stages = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.upper().startswith("FROM "):
            stages.append((s, []))
        elif stages:
            stages[-1][1].append(s)
    return stages


def test_dockerfile_two_bookworm_slim_stages():
    stages = dockerfile_stages()
    assert len(stages) >= 2, "multi-stage: a build stage and a runtime stage"
    for from_line, _ in stages:
        assert re.match(r"FROM\s+debian:bookworm-slim(\s|$)", from_line, re.I), from_line
    # A `# syntax=` directive makes BuildKit pull a frontend image first,
    # which fails on a machine that reaches only package registries.
    assert not re.match(r"#\s*syntax\s*=", DOCKERFILE.read_text().lstrip(), re.I)


def test_dockerfile_build_stage():
    build = " ".join(dockerfile_stages()[0][1])
    for pkg in ("build-essential", "cmake", "pkg-config", "libpaho-mqtt-dev", "libhiredis-dev",
                "libjson-c-dev", "libcurl4-openssl-dev", "libmicrohttpd-dev"):
        assert pkg in build, f"build stage must install {pkg}"
    assert "-DVIGIL_TESTS=OFF" in build and "-DCMAKE_BUILD_TYPE=Release" in build
    assert "cmake --install" in build and "--prefix /opt/vigil" in build


def runtime_packages():
    runtime = " ".join(dockerfile_stages()[-1][1])
    m = re.search(r"apt-get install\s+(.*?)(&&|$)", runtime)
    assert m, "runtime stage installs its libraries with apt-get install"
    return {w for w in m.group(1).split() if not w.startswith("-")}


def test_dockerfile_runtime_stage():
    stages = dockerfile_stages()
    runtime = stages[-1][1]
    pkgs = runtime_packages()
    for pkg in ("libpaho-mqtt1.3", "libhiredis0.14", "libjson-c5", "libcurl4", "libmicrohttpd12",
                "ca-certificates"):
        assert pkg in pkgs, f"runtime stage must install {pkg}"
    assert not [p for p in pkgs if p.endswith("-dev") or p in ("build-essential", "cmake", "gcc")], \
        f"runtime stage must not carry build tools: {sorted(pkgs)}"
    text = " ".join(runtime)
    assert "COPY --from=build /opt/vigil /opt/vigil" in text
    assert re.search(r"ENV PATH=/opt/vigil/bin", text)
    users = [i.split(None, 1)[1].strip() for i in runtime if i.upper().startswith("USER ")]
    assert users, "runtime stage needs a USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), f"USER {users[-1]} is root"
    assert any(i.upper().startswith("CMD ") for i in runtime)
    assert any(i.upper().startswith("HEALTHCHECK ") for i in runtime)
    # the default command does not start a daemon
    cmd = [i for i in runtime if i.upper().startswith("CMD ")][-1]
    assert not any(svc in cmd for svc in SERVICES), cmd


def test_dockerignore():
    lines = {l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines()}
    for entry in ("build/", "run/", ".git"):
        assert entry in lines, f".dockerignore must exclude {entry}"


def test_docker_helper_scripts_are_valid_shell():
    for name in ("vigil-healthcheck.sh", "vigil-help.sh"):
        path = DEPLOY / "docker" / name
        assert os.access(path, os.X_OK), f"{path} must be executable"
        r = subprocess.run(["sh", "-n", str(path)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_healthcheck_script_against_a_real_http_server():
    if not shutil.which("curl"):
        pytest.skip("curl is not installed")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200 if self.path == "/readyz" else 503)
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        script = str(DEPLOY / "docker" / "vigil-healthcheck.sh")
        port = srv.server_address[1]

        def run(addr, *args):
            env = {k: v for k, v in os.environ.items() if k != "VIGIL_HTTP_ADDR"}
            if addr is not None:
                env["VIGIL_HTTP_ADDR"] = addr
            return subprocess.run(["sh", script, *args], env=env, capture_output=True,
                                  text=True, timeout=10).returncode

        assert run(f"0.0.0.0:{port}") == 0
        assert run(f":{port}") == 0
        assert run(f"0.0.0.0:{port}", "/healthz") != 0      # 503
        assert run(None) != 0                                # unset
        assert run("0.0.0.0:notaport") != 0
        assert run(f"127.0.0.1:{free_port()}") != 0          # nothing listening
    finally:
        srv.shutdown()
        srv.server_close()


SANITIZER_RUNTIMES = re.compile(r"^lib(asan|ubsan|lsan|tsan)\.so")


def built_daemons():
    """Built daemons and the sonames they need. A sanitizer build (what CI
    builds) counts too: its sanitizer runtimes are left out, the rest is what
    a release build links."""
    dirs = []
    if os.environ.get("VIGIL_BUILD_DIR"):
        dirs.append(os.environ["VIGIL_BUILD_DIR"])
    dirs += sorted(glob.glob(str(ROOT / "build" / "*")))
    found = {}
    for d in dirs:
        for svc in SERVICES:
            p = Path(d) / "services" / svc / svc
            if svc not in found and p.is_file() and os.access(p, os.X_OK):
                needed = readelf_needed(p)
                if needed is not None:
                    found[svc] = (p, [n for n in needed if not SANITIZER_RUNTIMES.match(n)])
    return found


def readelf_needed(path):
    if not shutil.which("readelf"):
        return None
    r = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return None
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout)


def package_of_soname(soname):
    r = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30)
    m = re.search(rf"^\s*{re.escape(soname)} \(.*?x86-64.*?\) => (\S+)$", r.stdout, re.M) or \
        re.search(rf"^\s*{re.escape(soname)} \(.*?\) => (\S+)$", r.stdout, re.M)
    if not m:
        return None
    path = os.path.realpath(m.group(1))
    for candidate in (m.group(1), path, path.replace("/usr/lib/", "/lib/", 1)):
        q = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True, timeout=30)
        if q.returncode == 0:
            return q.stdout.split(":", 1)[0].strip()
    return None


def test_runtime_stage_has_every_library_a_built_daemon_needs():
    if not (shutil.which("ldconfig") or os.path.exists("/usr/sbin/ldconfig")) or not shutil.which("dpkg"):
        pytest.skip("ldconfig/dpkg not available")
    daemons = built_daemons()
    if not daemons:
        pytest.skip("no daemon built yet (scripts/build); the Dockerfile's package list is "
                    "checked by name only")
    pkgs = runtime_packages() | BASE_PACKAGES
    missing = {}
    for svc, (path, needed) in daemons.items():
        for soname in needed:
            pkg = package_of_soname(soname)
            assert pkg, f"{svc} needs {soname}, which no installed package provides"
            if pkg not in pkgs:
                missing.setdefault(pkg, []).append(f"{svc}: {soname}")
    assert not missing, f"the runtime stage does not install: {missing}"


# ------------------------------------------------------------------ mosquitto

def test_mosquitto_conf_durable_intake_settings():
    s = conf_settings(MOSQ_CONF)
    assert one(s, "listener") == "1883 127.0.0.1"
    assert one(s, "persistence") == "true"
    assert one(s, "persistence_location") == "/var/lib/vigil/mosquitto/"
    assert one(s, "max_queued_messages") == "0", "the default 1000 silently drops QoS 1 messages"
    assert int(one(s, "max_queued_bytes")) > 0, "bound the queue by bytes"
    autosave = dict(s).get("autosave_interval")
    assert autosave is not None, "set an autosave (the default is 1800 s)"
    assert 0 < int(autosave) <= 10 or dict(s).get("autosave_on_changes") == "true"
    assert int(one(s, "max_packet_size")) >= 1048576 + 1024, \
        "a 1 MiB payload must still reach the service (to be rejected with a reason)"
    assert "message_size_limit" not in dict(s), \
        "message_size_limit would drop oversize input before the service can report it"
    assert re.fullmatch(r"\d+[hdwmy]", one(s, "persistent_client_expiration"))
    assert int(one(s, "max_inflight_messages")) >= 1
    assert one(s, "allow_anonymous") == "true"
    assert one(s, "log_dest") in ("stderr", "stdout")
    assert "per_listener_settings" not in dict(s)


def test_mosquitto_docker_conf_differs_only_where_it_must():
    local = conf_settings(MOSQ_CONF)
    docker = conf_settings(MOSQ_DOCKER_CONF)
    assert one(docker, "listener") == "1883 0.0.0.0"
    assert one(docker, "persistence_location") == "/mosquitto/data/"
    assert one(docker, "log_dest") == "stdout"
    # the container broker refuses anonymous clients (scripts/secrets' files)
    assert one(docker, "allow_anonymous") == "false"
    assert one(docker, "password_file") == "/mosquitto/secrets/passwd"
    assert one(docker, "acl_file") == "/mosquitto/secrets/acl"
    own = ("listener", "persistence_location", "log_dest", "allow_anonymous", "password_file", "acl_file")
    assert [kv for kv in local if kv[0] not in own] == [kv for kv in docker if kv[0] not in own]


@pytest.mark.parametrize("path", [MOSQ_CONF, MOSQ_DOCKER_CONF, REDIS_CONF], ids=lambda p: p.name)
def test_every_setting_is_explained(path):
    """Every setting line belongs to a block that starts with a comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        j = i - 1
        while j >= 0 and lines[j].strip() and not lines[j].strip().startswith("#"):
            j -= 1
        assert j >= 0 and lines[j].strip().startswith("#"), f"{path.name}:{i + 1}: {s!r} has no comment"


def mosquitto_exe():
    return shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)


@pytest.fixture
def broker(tmp_path):
    """A real mosquitto started with deploy/mosquitto/mosquitto.conf, rewritten
    the way scripts/up does (listener, data folder, user)."""
    exe = mosquitto_exe()
    if not exe or not shutil.which("mosquitto_pub") or not shutil.which("mosquitto_sub"):
        pytest.skip("mosquitto / mosquitto-clients not installed (scripts/install-deps)")
    port = free_port()
    data = tmp_path / "data"
    data.mkdir()
    lines = []
    for line in MOSQ_CONF.read_text(encoding="utf-8").splitlines():
        word = line.strip().split(" ", 1)[0]
        if word in ("listener", "persistence_location", "user"):
            continue
        lines.append(line)
    lines += [f"persistence_location {data}/",
              "user root" if os.geteuid() == 0 else f"user {os.environ.get('USER', 'nobody')}",
              f"listener {port} 127.0.0.1"]
    conf = tmp_path / "mosquitto.conf"
    conf.write_text("\n".join(lines) + "\n")
    log = open(tmp_path / "mosquitto.log", "wb")
    proc = subprocess.Popen([exe, "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: port_open(port) or proc.poll() is not None, 10, "mosquitto")
        assert proc.poll() is None, (tmp_path / "mosquitto.log").read_text()
        yield port
    finally:
        stop(proc)
        log.close()


def test_mosquitto_queues_past_1000_for_an_offline_durable_client(broker, tmp_path):
    """The default max_queued_messages (1000) would drop most of these."""
    port, n = broker, 1500
    sub = ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv5", "-q", "1",
           "-i", "vigil-test-durable", "-c", "-x", "3600", "-t", "room/+/message"]
    # register the durable session, then leave
    subprocess.run(sub + ["-W", "1"], capture_output=True, timeout=10)
    msgs = tmp_path / "msgs"
    msgs.write_text("".join(f'{{"id":"m-{i}","room":"general","sender":"joel",'
                            f'"sender_type":"human","text":"hello {i}"}}\n' for i in range(n)))
    with open(msgs) as f:
        r = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv5",
                            "-q", "1", "-t", "room/general/message", "-l"],
                           stdin=f, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(sub + ["-C", str(n), "-W", "30"], capture_output=True, timeout=60)
    got = r.stdout.decode().splitlines()
    assert len(got) == n, f"received {len(got)} of {n} queued messages"
    assert got[0].endswith('"text":"hello 0"}') and got[-1].endswith(f'"text":"hello {n - 1}"}}')


def test_mosquitto_passes_a_1_mib_payload(broker, tmp_path):
    port = broker
    payload = tmp_path / "big"
    payload.write_bytes(b"x" * (1024 * 1024))
    sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv5",
                            "-q", "1", "-t", "room/big/message", "-C", "1", "-W", "20", "-N"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        r = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv5",
                            "-q", "1", "-t", "room/big/message", "-f", str(payload)],
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        out, err = sub.communicate(timeout=30)
    finally:
        stop(sub)
    assert len(out) == 1024 * 1024, f"subscriber got {len(out)} bytes: {err!r}"


# ------------------------------------------------------------------ redis

def test_redis_conf_settings():
    s = conf_settings(REDIS_CONF)
    assert one(s, "appendonly") == "yes"
    assert one(s, "appendfsync") == "always", "everysec loses acknowledged commits on a kill -9 when the disk is busy"
    assert one(s, "maxmemory-policy") == "noeviction", "state must never be evicted"
    assert one(s, "bind") == "127.0.0.1"
    assert one(s, "port") == "6379"
    assert one(s, "protected-mode") == "yes"
    # The container's data volume: Redis changes into it as it reads the
    # file, so it must exist there (scripts/up rewrites it).
    assert one(s, "dir") == "/data"
    assert one(s, "save") == '""'
    assert one(s, "daemonize") == "no"


def test_redis_starts_with_the_config(tmp_path):
    exe = shutil.which("redis-server")
    if not exe or not shutil.which("redis-cli"):
        pytest.skip("redis-server / redis-cli not installed (scripts/install-deps)")
    port = free_port()
    conf = tmp_path / "redis.conf"
    text = REDIS_CONF.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^port .*$", f"port {port}", text)
    text = re.sub(r"(?m)^dir .*$", f"dir {tmp_path}", text)
    conf.write_text(text)
    log = open(tmp_path / "redis.log", "wb")
    proc = subprocess.Popen([exe, str(conf)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        def cli(*args):
            return subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
                                   capture_output=True, text=True, timeout=10).stdout.split()

        wait_for(lambda: proc.poll() is not None or cli("ping") == ["PONG"], 10, "redis-server")
        assert proc.poll() is None, (tmp_path / "redis.log").read_text()
        assert cli("config", "get", "appendonly") == ["appendonly", "yes"]
        assert cli("config", "get", "maxmemory-policy") == ["maxmemory-policy", "noeviction"]
        assert cli("set", "vigil:test", "1") == ["OK"]
        wait_for(lambda: (tmp_path / "appendonlydir").is_dir(), 5, "the AOF folder")
    finally:
        stop(proc)
        log.close()


# ------------------------------------------------------------------ k8s

def kustomize_capable_kubectl():
    """kubectl with kustomize >= v5 (labels, replacements), or None. Debian's
    kubernetes-client 1.20 embeds kustomize v2, too old for these manifests."""
    kubectl = shutil.which("kubectl")
    if not kubectl:
        return None
    r = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True,
                       text=True, timeout=30)
    m = re.search(r'"kustomizeVersion":\s*"v(\d+)', r.stdout)
    return kubectl if m and int(m.group(1)) >= 5 else None


@pytest.fixture(scope="module")
def k8s_docs():
    """The rendered manifests (kubectl kustomize), else the parsed files."""
    kubectl = kustomize_capable_kubectl()
    if kubectl:
        r = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"kubectl kustomize deploy/k8s failed:\n{r.stderr}"
        return [d for d in yaml.safe_load_all(r.stdout) if d], True
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    docs = []
    for res in kust["resources"]:
        docs += [d for d in yaml.safe_load_all((K8S / res).read_text()) if d]
    return docs, False


def test_k8s_every_yaml_file_parses():
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kust["kind"] == "Kustomization"
    for res in kust["resources"]:
        assert (K8S / res).is_file(), f"kustomization lists missing {res}"
    for path in K8S.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                assert doc.get("kind") and doc.get("apiVersion"), path.name
    listed = set(kust["resources"]) | {"kustomization.yaml"}
    unlisted = {p.name for p in K8S.glob("*.yaml")} - listed
    assert not unlisted, f"manifests not in kustomization.yaml: {unlisted}"


def test_k8s_namespace_and_config(k8s_docs):
    docs, _ = k8s_docs
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("Namespace", "vigil") in kinds
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "vigil-config")
    for key in ("VIGIL_MQTT_URL", "VIGIL_REDIS_URL", "VIGIL_LOG_LEVEL"):
        assert key in cm["data"], key
    assert cm["data"]["VIGIL_MQTT_URL"].startswith("mqtt")
    assert cm["data"]["VIGIL_REDIS_URL"].startswith("redis://")


def test_no_stale_k8s_statefulsets(k8s_docs):
    docs, _ = k8s_docs
    names = {d["metadata"]["name"] for d in docs if d["kind"] == "StatefulSet"}
    assert not names - set(SERVICE_DIRS), f"StatefulSets without a services/ directory: {names - set(SERVICE_DIRS)}"


@pytest.mark.parametrize("svc", SERVICE_DIRS)
def test_k8s_statefulset_per_service(k8s_docs, svc):
    docs, rendered = k8s_docs
    sts = [d for d in docs if d["kind"] == "StatefulSet" and d["metadata"]["name"] == svc]
    if svc not in SERVICES and not sts:
        pytest.skip(f"services/{svc} has no CMakeLists.txt yet (not built, not required yet)")
    assert sts, f"services/{svc} has no StatefulSet in deploy/k8s (see deploy/k8s/README.md)"
    sts = sts[0]
    headless = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == sts["spec"]["serviceName"]]
    assert headless and headless[0]["spec"].get("clusterIP") == "None"
    pod = sts["spec"]["template"]["spec"]
    c = next(c for c in pod["containers"] if c["name"] == svc)
    cmd = " ".join(c["command"] + c.get("args", []))
    assert f"exec {svc}" in cmd and "VIGIL_SHARD=" in cmd and "${HOSTNAME##*-}" in cmd, cmd
    env = {e["name"]: e for e in c.get("env", [])}
    assert env["VIGIL_HTTP_ADDR"]["value"] == f"0.0.0.0:{port_of(svc)}"
    if rendered:
        assert env["VIGIL_REPLICAS"]["value"] == str(sts["spec"]["replicas"]), \
            "VIGIL_REPLICAS must equal spec.replicas (kustomization.yaml replacements)"
    assert any(r.get("configMapRef", {}).get("name") == "vigil-config" for r in c.get("envFrom", []))
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports["http"] == port_of(svc)
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][kind]), kind
    non_root = pod.get("securityContext", {}).get("runAsNonRoot") or \
        c.get("securityContext", {}).get("runAsNonRoot")
    assert non_root is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    if rendered:
        assert c["image"].startswith("vigil:"), c["image"]


# ------------------------------------------------------------------ ports

def test_port_table_agrees_everywhere():
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| ([a-z-]+) \| (\d{4}) \|$", readme, re.M))
    assert {k: int(v) for k, v in table.items()} == HTTP_PORTS, "deploy/README.md port table"
    lib = ROOT / "scripts" / "lib.sh"
    if lib.is_file():
        found = dict(re.findall(r"\[([a-z-]+)\]=(\d+)", lib.read_text()))
        assert {k: int(v) for k, v in found.items()} == HTTP_PORTS, "scripts/lib.sh VIGIL_HTTP_PORTS"
