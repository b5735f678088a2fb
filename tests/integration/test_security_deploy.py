"""scripts/secrets and the deploy files that use it, without a broker:
idempotence, rotation, file modes, the Kubernetes Secrets against the
rendered manifests (each StatefulSet mounts its own Secret, whose name
scripts/secrets --k8s writes), and mosquitto accepting the generated files."""
import base64
import os
import shutil
import stat
import subprocess

import pytest
import yaml

import harness

ROOT = harness.SOURCE_DIR
SECRETS = os.path.join(ROOT, "scripts", "secrets")


def run(*args):
    return subprocess.run([SECRETS, *args], capture_output=True, text=True, timeout=60)


def read(d, *p):
    with open(os.path.join(d, *p)) as f:
        return f.read()


def test_help_and_bad_user():
    r = run("--help")
    assert r.returncode == 0 and "--rotate" in r.stdout and "--k8s" in r.stdout and "deploy/secrets" in r.stdout
    r = run("--dir", "/nonexistent-never", "--rotate", "nobody")
    assert r.returncode == 2 and "no such user nobody" in r.stderr


def test_idempotent_rotation_and_modes(tmp_path):
    d = str(tmp_path / "s")
    assert run("--dir", d).returncode == 0
    before = {u: read(d, "passwords", u) for u in os.listdir(os.path.join(d, "passwords"))}
    assert len(set(before.values())) == len(before), "every user its own password"
    assert run("--dir", d).returncode == 0
    assert {u: read(d, "passwords", u) for u in before} == before, "existing passwords kept"
    assert run("--dir", d, "--rotate", "council").returncode == 0
    after = {u: read(d, "passwords", u) for u in before}
    assert after["council"] != before["council"]
    assert {u: p for u, p in after.items() if u != "council"} == \
        {u: p for u, p in before.items() if u != "council"}
    assert read(d, "passwords", "council.previous") == before["council"]
    assert after["council"].strip() in read(d, "services", "council", "mqtt-password")
    assert f"redis://council:{after['council'].strip()}@redis:6379/0" in read(d, "services", "council", "redis-url")
    assert run("--dir", d, "--drop-previous").returncode == 0
    assert not os.path.exists(os.path.join(d, "passwords", "council.previous"))
    # modes: the folder and the clear passwords are private; no password in clear in the ACL files
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(d, "passwords", "admin")).st_mode) == 0o600
    for f in (("redis", "users.acl"), ("mosquitto", "passwd"), ("mosquitto", "acl")):
        text = read(d, *f)
        assert not any(p.strip() in text for p in after.values()), f"a clear password in {f}"


def test_k8s_secrets_match_the_rendered_manifests(tmp_path):
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not installed")
    d = str(tmp_path / "s")
    assert run("--dir", d, "--k8s", "--k8s-redis-host", "redis.example:6379").returncode == 0
    secrets = {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(read(d, "k8s", "secrets.yaml")) if doc}
    rendered = subprocess.run(["kubectl", "kustomize", os.path.join(ROOT, "deploy", "k8s")], capture_output=True,
                              text=True, check=True, timeout=60).stdout
    docs = [x for x in yaml.safe_load_all(rendered) if x]
    sts = {x["metadata"]["name"]: x for x in docs if x["kind"] == "StatefulSet"}
    assert set(sts) == set(os.listdir(os.path.join(ROOT, "services")))
    for name, s in sts.items():
        pod = s["spec"]["template"]["spec"]
        c = next(c for c in pod["containers"] if c["name"] == name)
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["VIGIL_MQTT_USER"] == name
        assert env["VIGIL_MQTT_PASSWORD_FILE"] == "/run/secrets/vigil/mqtt-password"
        assert env["VIGIL_REDIS_URL_FILE"] == "/run/secrets/vigil/redis-url"
        assert env["VIGIL_REDIS_URL"] == "", "the ConfigMap's URL is emptied (both are refused together)"
        mount = next(m for m in c["volumeMounts"] if m["mountPath"] == "/run/secrets/vigil")
        vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        secret = secrets[vol["secret"]["secretName"]]
        assert secret["metadata"]["namespace"] == "vigil"
        assert set(secret["data"]) == {"mqtt-password", "redis-url"}
        url = base64.b64decode(secret["data"]["redis-url"]).decode()
        assert url.startswith(f"redis://{name}:") and url.endswith("@redis.example:6379/0")
        assert pod["securityContext"]["fsGroup"] == 10001 and vol["secret"]["defaultMode"] == 0o440
    assert {"vigil-mosquitto", "vigil-redis"} <= set(secrets)


def test_mosquitto_loads_the_generated_files(tmp_path):
    d = str(tmp_path / "s")
    assert run("--dir", d, "--prefix", "tenant-a").returncode == 0
    broker = harness.Mosquitto(str(tmp_path), auth=(f"{d}/mosquitto/passwd", f"{d}/mosquitto/acl")).start()
    try:
        assert "Error" not in harness.tail(broker.log)
    finally:
        broker.stop()


def test_k8s_infra_example_broker_and_redis_with_auth(tmp_path):
    """deploy/k8s/infra: the project's configs (copies kept identical), the
    broker's password_file/acl_file and Redis' aclfile from the Secrets
    scripts/secrets --k8s writes, in the namespaces the Vigil manifests
    expect."""
    infra = os.path.join(ROOT, "deploy", "k8s", "infra")
    for copy, orig in (("mosquitto.conf", ("mosquitto", "mosquitto.docker.conf")),
                       ("redis.conf", ("redis", "redis.conf"))):
        assert read(infra, copy) == read(os.path.join(ROOT, "deploy"), *orig), \
            f"deploy/k8s/infra/{copy} differs from deploy/{'/'.join(orig)}: copy it again"
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not installed")
    docs = [x for x in yaml.safe_load_all(subprocess.run(["kubectl", "kustomize", infra], capture_output=True,
                                                          text=True, check=True, timeout=60).stdout) if x]
    sts = {x["metadata"]["name"]: x for x in docs if x["kind"] == "StatefulSet"}
    svcs = {(x["metadata"]["namespace"], x["metadata"]["name"]) for x in docs if x["kind"] == "Service"}
    assert {("messaging", "mqtt"), ("data", "redis")} <= svcs  # configmap.yaml's URLs
    d = str(tmp_path / "s")
    assert run("--dir", d, "--k8s").returncode == 0
    secrets = {(x["metadata"]["namespace"], x["metadata"]["name"]): x
               for x in yaml.safe_load_all(read(d, "k8s", "secrets.yaml")) if x}
    conf = read(infra, "mosquitto.conf")
    for name, ns, path, keys in (("mosquitto", "messaging", "/mosquitto/secrets", {"passwd", "acl"}),
                                 ("redis", "data", "/usr/local/etc/redis/secrets", {"users.acl"})):
        s = sts[name]
        assert s["metadata"]["namespace"] == ns
        pod = s["spec"]["template"]["spec"]
        c = pod["containers"][0]
        mount = next(m for m in c["volumeMounts"] if m["mountPath"] == path)
        vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        secret = secrets[(ns, vol["secret"]["secretName"])]
        assert keys | {"health-password"} <= set(secret["data"])
        assert "health" in " ".join(c["readinessProbe"]["exec"]["command"])
    assert "allow_anonymous false" in conf and "password_file /mosquitto/secrets/passwd" in conf \
        and "acl_file /mosquitto/secrets/acl" in conf
    cmd = " ".join(sts["redis"]["spec"]["template"]["spec"]["containers"][0]["command"])
    assert "--aclfile /usr/local/etc/redis/secrets/users.acl" in cmd and "protected-mode" not in cmd


def llm_services():
    """The services whose code loads the LLM settings (and so the key)."""
    out = set()
    for svc in os.listdir(os.path.join(ROOT, "services")):
        for dirpath, _, files in os.walk(os.path.join(ROOT, "services", svc, "src")):
            for f in files:
                with open(os.path.join(dirpath, f), errors="replace") as fh:
                    if "vigil_llm_config_load(" in fh.read():
                        out.add(svc)
    return out


def test_llm_api_key_reaches_only_the_services_that_call_an_llm():
    """The LLM's API key is in no container that does not use it (above
    all presence-gateway, the HTTP door): compose passes it to the LLM
    services only, and in Kubernetes only their pods read Secret
    vigil-secrets."""
    llm = llm_services()
    assert {"wake-evaluator", "council"} <= llm and "presence-gateway" not in llm
    with open(os.path.join(ROOT, "docker-compose.yml")) as f:
        compose = yaml.safe_load(f)
    assert "VIGIL_LLM_API_KEY" not in compose["x-vigil-env"]
    given = {name for name, s in compose["services"].items()
             if "VIGIL_LLM_API_KEY" in s.get("environment", {})}
    assert given == llm
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not installed")
    rendered = subprocess.run(["kubectl", "kustomize", os.path.join(ROOT, "deploy", "k8s")],
                              capture_output=True, text=True, check=True, timeout=60).stdout
    reads, labelled = set(), set()
    for doc in yaml.safe_load_all(rendered):
        if doc and doc["kind"] == "StatefulSet":
            for c in doc["spec"]["template"]["spec"]["containers"]:
                refs = [e.get("secretRef", {}).get("name") for e in c.get("envFrom", [])]
                if "vigil-secrets" in refs:
                    reads.add(doc["metadata"]["name"])
            if doc["spec"]["template"]["metadata"].get("labels", {}).get("vigil.dev/llm") == "true":
                labelled.add(doc["metadata"]["name"])
    assert reads == llm == labelled


def test_an_empty_password_file_is_never_hashed_into_the_acls(tmp_path):
    """A truncated passwords/<user> (a full disk, a bad edit) stops
    scripts/secrets with the file's name instead of putting an empty
    password into the broker's and Redis' files; and an empty
    <user>.previous is not accepted by Redis during a rotation, where it
    would let anyone in as that user."""
    import hashlib
    empty = "#" + hashlib.sha256(b"").hexdigest()
    d = str(tmp_path / "s")
    assert run("--dir", d).returncode == 0
    open(os.path.join(d, "passwords", "council"), "w").close()
    r = run("--dir", d)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "passwords/council holds no valid password" in r.stderr
    assert "--rotate council" in r.stderr
    assert empty not in read(d, "redis", "users.acl")
    r = run("--dir", d, "--rotate", "council")  # the empty file becomes council.previous
    assert r.returncode == 0, r.stderr
    assert "council.previous holds no valid password" in r.stderr
    acl = read(d, "redis", "users.acl").splitlines()
    line = next(l for l in acl if l.startswith("user council "))
    assert empty not in line and line.count(" #") == 1, line


def test_gateway_token_file_is_not_world_readable_in_kubernetes():
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not installed")
    rendered = subprocess.run(["kubectl", "kustomize", os.path.join(ROOT, "deploy", "k8s")],
                              capture_output=True, text=True, check=True, timeout=60).stdout
    gw = next(d for d in yaml.safe_load_all(rendered)
              if d and d["kind"] == "StatefulSet" and d["metadata"]["name"] == "presence-gateway")
    pod = gw["spec"]["template"]["spec"]
    vol = next(v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == "vigil-gateway-tokens")
    assert vol["secret"]["defaultMode"] == 0o440 and pod["securityContext"]["fsGroup"] == 10001
