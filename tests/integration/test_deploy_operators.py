"""The operators' side of deploy/ (issue 17), checked offline:

- `kubectl kustomize` renders deploy/k8s and deploy/k8s/monitoring, and every
  rendered object validates against the Kubernetes API schemas
  (tests/k8s_validate.mjs with npm's kubernetes-models and
  @kubernetes-models/prometheus-operator); a broken object is caught;
- a PodDisruptionBudget per StatefulSet selecting its pods, at most one
  pod of a service away at a time;
- NetworkPolicies: default deny both ways, egress to DNS, the broker and
  Redis only, the LLM endpoint only for pods labelled as LLM users;
- the shard from the apps.kubernetes.io/pod-index label, falling back to
  the pod name's ordinal, shown by running the rendered command in sh;
- ServiceMonitor matching every Service's labels and named port;
- PrometheusRule: `promtool check rules` (Debian's prometheus package)
  parses every expression, `promtool test rules` fires the alerts on
  synthetic series (not ready, dead letters, reconnect storm, LLM errors,
  stuck outbox, growing outbox backlog, overdue timers, trimmed jobs) and keeps them quiet on healthy ones; every metric they
  name is one the code exposes;
- the Grafana dashboard: every expression parses (promtool) and names
  metrics the code exposes.
"""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from test_deploy_static import K8S, ROOT, kustomize_capable_kubectl

MONITORING = K8S / "monitoring"
DASHBOARD = ROOT / "deploy" / "grafana" / "vigil-dashboard.json"
VALIDATOR = ROOT / "tests" / "k8s_validate.mjs"
NODE_MODELS = ROOT / "tests" / "node_modules" / "kubernetes-models"

# Metrics the rules and the dashboard may name that this repository's code
# does not define: Prometheus' own and kube-state-metrics'.
EXTERNAL_METRICS = {"up", "kube_statefulset_replicas"}
PROMQL_WORDS = {"sum", "by", "rate", "increase", "count", "max", "min", "avg", "histogram_quantile", "on",
                "and", "or", "unless", "label_replace", "deriv", "min_over_time", "group_left", "le",
                "job", "pod", "namespace", "status", "reason", "version", "statefulset", "without",
                "ignoring", "bool"}


def render(path):
    kubectl = kustomize_capable_kubectl()
    if not kubectl:
        pytest.skip("no kubectl with kustomize >= v5 on PATH")
    r = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"kubectl kustomize {path} failed:\n{r.stderr}"
    return [d for d in yaml.safe_load_all(r.stdout) if d]


@pytest.fixture(scope="module")
def docs():
    return render(K8S)


@pytest.fixture(scope="module")
def monitoring_docs():
    return render(MONITORING)


def promtool():
    exe = shutil.which("promtool")
    if not exe:
        pytest.skip("promtool missing (Debian package prometheus, scripts/install-deps)")
    return exe


def validate(objects):
    node = shutil.which("node")
    if not node or not NODE_MODELS.is_dir():
        pytest.skip("node or tests/node_modules/kubernetes-models missing: (cd tests && npm ci --ignore-scripts)")
    r = subprocess.run([node, str(VALIDATOR)], input=json.dumps(objects), capture_output=True, text=True,
                       timeout=120, cwd=str(ROOT / "tests"))
    return r.returncode, r.stdout + r.stderr


def by_kind(docs, kind):
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


# ------------------------------------------------------------------ schemas

def test_rendered_objects_validate_against_the_api_schemas(docs, monitoring_docs):
    rc, out = validate(docs + monitoring_docs)
    assert rc == 0, out
    assert out.count("\nok ") + out.startswith("ok ") == len(docs) + len(monitoring_docs), out
    # the check can fail: a replica count that is no integer, an unknown kind
    broken = json.loads(json.dumps(next(d for d in docs if d["kind"] == "StatefulSet")))
    broken["spec"]["replicas"] = "two"
    rc, out = validate([broken, {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}])
    assert rc == 1 and "must be integer" in out and "no schema for example.com/v1 Gadget" in out, out


# ------------------------------------------------------------------ disruption budgets

def test_a_disruption_budget_per_statefulset(docs):
    pdbs = by_kind(docs, "PodDisruptionBudget")
    for name, sts in by_kind(docs, "StatefulSet").items():
        assert name in pdbs, f"StatefulSet {name} has no PodDisruptionBudget (disruption-budgets.yaml)"
        spec = pdbs[name]["spec"]
        assert spec.get("maxUnavailable") == 1 and "minAvailable" not in spec, spec
        labels = sts["spec"]["template"]["metadata"]["labels"]
        assert spec["selector"]["matchLabels"].items() <= labels.items(), (name, spec["selector"])


# ------------------------------------------------------------------ network policies

def egress_ports(policy):
    return {(p.get("protocol", "TCP"), p["port"]) for rule in policy["spec"].get("egress", [])
            for p in rule.get("ports", [])}


def selects(policy, labels):
    sel = policy["spec"]["podSelector"].get("matchLabels", {})
    return sel.items() <= labels.items()


def test_network_policies_deny_by_default_and_allow_only_the_dependencies(docs):
    pols = by_kind(docs, "NetworkPolicy")
    deny = [p for p in pols.values() if p["spec"]["podSelector"] == {} and
            set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"} and
            not p["spec"].get("ingress") and not p["spec"].get("egress")]
    assert deny, "no default-deny policy"
    config = by_kind(docs, "ConfigMap")["vigil-config"]["data"]
    mqtt_port = int(re.search(r":(\d+)$", config["VIGIL_MQTT_URL"]).group(1))
    redis_port = int(re.search(r":(\d+)/", config["VIGIL_REDIS_URL"]).group(1))
    for name, sts in by_kind(docs, "StatefulSet").items():
        labels = sts["spec"]["template"]["metadata"]["labels"]
        allowed = set()
        for p in pols.values():
            if "Egress" in p["spec"]["policyTypes"] and selects(p, labels):
                allowed |= egress_ports(p)
        base = {("UDP", 53), ("TCP", 53), ("TCP", mqtt_port), ("TCP", 8883), ("TCP", redis_port)}
        llm = {("TCP", 443), ("TCP", 11434)}
        env = {e["name"] for c in sts["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
        is_llm_user = labels.get("vigil.dev/llm") == "true"
        assert allowed == (base | llm if is_llm_user else base), (name, sorted(allowed))
        ingress = set()
        for p in pols.values():
            if "Ingress" in p["spec"]["policyTypes"] and selects(p, labels):
                ingress |= {pt["port"] for r in p["spec"].get("ingress", []) for pt in r.get("ports", [])}
        assert ingress == {"http"}, (name, ingress)
        assert "VIGIL_HTTP_ADDR" in env
    # the LLM users are exactly the services whose code loads the LLM
    # configuration (the client itself may be made by libshared's job loop)
    llm_users = {d.name for d in (ROOT / "services").iterdir()
                 if any("vigil_llm_config_load" in f.read_text(errors="replace")
                        for f in (d / "src").rglob("*.c"))}
    assert {"wake-evaluator", "council", "heartbeat", "floor-control"} <= llm_users, llm_users
    labelled = {name for name, sts in by_kind(docs, "StatefulSet").items()
                if sts["spec"]["template"]["metadata"]["labels"].get("vigil.dev/llm") == "true"}
    assert labelled == llm_users, (sorted(labelled), sorted(llm_users))
    # the broker and Redis are reached in their namespaces only
    dep = pols["vigil-egress-broker-redis-dns"]["spec"]["egress"]
    namespaces = {t["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                  for rule in dep for t in rule["to"]}
    assert namespaces == {"kube-system", "messaging", "data"}
    assert "messaging" in config["VIGIL_MQTT_URL"] and ".data." in config["VIGIL_REDIS_URL"]


# ------------------------------------------------------------------ shard from the pod index

@pytest.mark.parametrize("pod_index,hostname,want", [("3", "dormancy-monitor-7", "3/4"),
                                                     ("", "dormancy-monitor-2", "2/4")])
def test_shard_from_the_pod_index_label_else_the_ordinal(docs, pod_index, hostname, want):
    for name, sts in by_kind(docs, "StatefulSet").items():
        c = sts["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e for e in c["env"]}
        assert env["VIGIL_POD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == \
            "metadata.labels['apps.kubernetes.io/pod-index']", name
        script = c["command"][-1].replace(f"exec {name}", 'echo "$VIGIL_SHARD"')
        r = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10,
                           env={"VIGIL_POD_INDEX": pod_index, "HOSTNAME": hostname, "VIGIL_REPLICAS": "4",
                                "PATH": "/usr/bin:/bin"})
        assert r.stdout.strip() == want, (name, script, r.stdout, r.stderr)


# ------------------------------------------------------------------ monitoring

def test_service_monitor_selects_every_service(docs, monitoring_docs):
    sm = by_kind(monitoring_docs, "ServiceMonitor")["vigil"]["spec"]
    ports = {e["port"] for e in sm["endpoints"]}
    assert all(e["path"] == "/metrics" for e in sm["endpoints"])
    services = by_kind(docs, "Service")
    assert services
    for name, svc in services.items():
        assert sm["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(), name
        assert ports <= {p["name"] for p in svc["spec"]["ports"]}, name
    assert sm["namespaceSelector"]["matchNames"] == [next(iter(services.values()))["metadata"]["namespace"]]


def metric_names(expr):
    expr = re.sub(r'"[^"]*"', '""', expr)          # label values
    expr = re.sub(r"\{[^}]*\}", "{}", expr)          # label matchers
    expr = re.sub(r"\[[^\]]*\]", "[]", expr)         # ranges
    expr = re.sub(r"\((?:[a-z_, ]*)\)", "()", expr)  # by (...) / on (...) lists
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr)) - PROMQL_WORDS
    return {n for n in names if not re.fullmatch(r"[0-9.]+|e", n)}


def code_metric_names():
    """Every "vigil_..." or "process_..." string literal in the C sources."""
    found = set()
    for path in list((ROOT / "libshared").rglob("*.c")) + list((ROOT / "services").rglob("*.c")):
        text = path.read_text(encoding="utf-8", errors="replace")
        found |= set(re.findall(r'"((?:vigil|process)_[a-z0-9_]+)"', text))
    return found


def check_known(names, where):
    code = code_metric_names()
    hist = {n[: -len(s)] for n in names for s in ("_bucket", "_sum", "_count") if n.endswith(s)}
    for n in names:
        base = n[: -len("_bucket")] if n.endswith("_bucket") else n
        assert n in code or base in code or n in EXTERNAL_METRICS, \
            f"{where}: metric {n} is not exposed by the code"
    return hist


def rule_groups(monitoring_docs):
    return by_kind(monitoring_docs, "PrometheusRule")["vigil"]["spec"]["groups"]


def test_prometheus_rules_parse_and_name_real_metrics(monitoring_docs, tmp_path):
    groups = rule_groups(monitoring_docs)
    alerts = {r["alert"]: r for g in groups for r in g["rules"]}
    for want in ("VigilServiceNotReady", "VigilTargetDown", "VigilOutboxStuck", "VigilOutboxBacklogGrowing",
                 "VigilTimersOverdue", "VigilDeadLetters", "VigilMqttReconnectStorm", "VigilLlmErrors",
                 "VigilJobsTrimmed"):
        assert want in alerts, want
    for name, r in alerts.items():
        assert r["labels"]["severity"] in ("critical", "warning", "info"), name
        assert r["annotations"]["summary"] and r["annotations"]["description"], name
        check_known(metric_names(r["expr"]), name)
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    r = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(alerts)} rules found" in r.stdout, r.stdout


# Synthetic series for `promtool test rules`: each alert fires on its fault
# and stays quiet on the healthy pod beside it.
RULE_TESTS = [{
    "interval": "1m",
    "input_series": [
        {"series": 'vigil_ready{namespace="vigil",job="dormancy-monitor",pod="dormancy-monitor-0"}',
         "values": "1 1 0 0 0 0 0"},
        {"series": 'vigil_ready{namespace="vigil",job="dormancy-monitor",pod="dormancy-monitor-1"}',
         "values": "1 1 1 1 1 1 1"},
        {"series": 'vigil_outbox_dead_letters_total{namespace="vigil",job="chat-router",pod="chat-router-0"}',
         "values": "0 0 0 1 1 1 1"},
        {"series": 'vigil_outbox_dead_letters{namespace="vigil",job="chat-router",pod="chat-router-0"}',
         "values": "0 0 0 1 1 1 1"},
        {"series": 'vigil_mqtt_reconnects_total{namespace="vigil",job="chat-router",pod="chat-router-1"}',
         "values": "0 2 4 6 8 10 12"},
        {"series": 'vigil_mqtt_reconnects_total{namespace="vigil",job="chat-router",pod="chat-router-0"}',
         "values": "0 0 0 0 1 1 1"},
        {"series": 'vigil_llm_requests_total{namespace="vigil",job="wake-evaluator",status="ok"}',
         "values": "0+1x30"},
        {"series": 'vigil_llm_requests_total{namespace="vigil",job="wake-evaluator",status="timeout"}',
         "values": "0+1x30"},
        {"series": 'vigil_outbox_publish_failures_total{namespace="vigil",job="heartbeat",pod="heartbeat-0"}',
         "values": "0+3x30"},
        {"series": 'vigil_outputs_total{namespace="vigil",job="heartbeat",pod="heartbeat-0"}',
         "values": "5+0x30"},
        {"series": 'vigil_outbox_pending{namespace="vigil",job="heartbeat",pod="heartbeat-0"}',
         "values": "0+2x30"},
        {"series": 'vigil_outbox_oldest_age_seconds{namespace="vigil",job="heartbeat",pod="heartbeat-0"}',
         "values": "0+60x30"},
        {"series": 'vigil_outbox_pending{namespace="vigil",job="chat-router",pod="chat-router-0"}',
         "values": "3 0 2 0 1 0 2 0 1 0 3 0 2 0 1 0 2 0 1 0 3 0 2 0 1 0 2 0 1 0 1"},
        {"series": 'vigil_outbox_oldest_age_seconds{namespace="vigil",job="chat-router",pod="chat-router-0"}',
         "values": "0+0x30"},
        {"series": 'vigil_timers_overdue_seconds{namespace="vigil",job="council",pod="council-0"}',
         "values": "0 0 90 150 210 270 330 390 450 510 570 630"},
        {"series": 'vigil_stream_trimmed_total{namespace="vigil",job="council",pod="council-0",stream="jobs"}',
         "values": "0 0 0 40+0x20"},
        {"series": 'vigil_stream_trimmed_total{namespace="vigil",job="wake-evaluator",pod="wake-evaluator-0",'
                   'stream="jobs"}',
         "values": "0+0x23"},
    ],
    "alert_rule_test": [
        {"eval_time": "1m", "alertname": "VigilServiceNotReady", "exp_alerts": []},
        {"eval_time": "5m", "alertname": "VigilServiceNotReady", "exp_alerts": [
            {"exp_labels": {"severity": "critical", "namespace": "vigil", "job": "dormancy-monitor",
                            "pod": "dormancy-monitor-0"}}]},
        {"eval_time": "2m", "alertname": "VigilDeadLetters", "exp_alerts": []},
        {"eval_time": "4m", "alertname": "VigilDeadLetters", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "namespace": "vigil", "job": "chat-router",
                            "pod": "chat-router-0"}}]},
        {"eval_time": "6m", "alertname": "VigilMqttReconnectStorm", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "namespace": "vigil", "job": "chat-router",
                            "pod": "chat-router-1"}}]},
        {"eval_time": "25m", "alertname": "VigilLlmErrors", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "job": "wake-evaluator"}}]},
        {"eval_time": "20m", "alertname": "VigilOutboxBacklogGrowing", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "namespace": "vigil", "job": "heartbeat",
                            "pod": "heartbeat-0"}}]},
        {"eval_time": "4m", "alertname": "VigilTimersOverdue", "exp_alerts": []},
        {"eval_time": "9m", "alertname": "VigilTimersOverdue", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "namespace": "vigil", "job": "council", "pod": "council-0"}}]},
        {"eval_time": "2m", "alertname": "VigilJobsTrimmed", "exp_alerts": []},
        {"eval_time": "4m", "alertname": "VigilJobsTrimmed", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "namespace": "vigil", "job": "council", "pod": "council-0",
                            "stream": "jobs"}}]},
        {"eval_time": "15m", "alertname": "VigilJobsTrimmed", "exp_alerts": []},
        {"eval_time": "25m", "alertname": "VigilOutboxStuck", "exp_alerts": [
            {"exp_labels": {"severity": "critical", "namespace": "vigil", "job": "heartbeat",
                            "pod": "heartbeat-0"}}]},
    ],
}]


def with_annotations(tests, groups):
    """Adds to each expected alert the annotations its rule renders for
    those labels ({{ $labels.x }} only)."""
    rules = {r["alert"]: r for g in groups for r in g["rules"]}
    out = json.loads(json.dumps(tests))
    for case in out[0]["alert_rule_test"]:
        for exp in case["exp_alerts"]:
            labels = exp["exp_labels"]
            exp["exp_annotations"] = {
                k: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), v)
                for k, v in rules[case["alertname"]]["annotations"].items()}
    return out


def test_alerts_fire_on_synthetic_faults(monitoring_docs, tmp_path):
    exe = promtool()
    groups = rule_groups(monitoring_docs)
    tests = with_annotations(RULE_TESTS, groups)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"],
                                                         "evaluation_interval": "1m", "tests": tests}))
    r = subprocess.run([exe, "test", "rules", "tests.yaml"], capture_output=True, text=True, timeout=60,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    # and a wrong expectation fails (the test can fail)
    bad = json.loads(json.dumps(tests))
    bad[0]["alert_rule_test"][0]["exp_alerts"] = [{"exp_labels": {"severity": "critical"}}]
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"],
                                                         "evaluation_interval": "1m", "tests": bad}))
    r = subprocess.run([exe, "test", "rules", "tests.yaml"], capture_output=True, text=True, timeout=60,
                       cwd=str(tmp_path))
    assert r.returncode != 0


def test_grafana_dashboard(tmp_path):
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["title"] and dash["panels"]
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    names = set()
    for e in exprs:
        names |= metric_names(e.replace("$namespace", "x").replace("$service", "x"))
    check_known(names, "dashboard")
    for want in ("vigil_ready", "vigil_rejected_total", "process_resident_memory_bytes",
                 "process_cpu_seconds_total", "process_open_fds", "vigil_build_info",
                 "vigil_llm_latency_seconds_bucket", "vigil_llm_requests_total", "vigil_outbox_dead_letters",
                 "vigil_outbox_pending", "vigil_outbox_oldest_age_seconds", "vigil_timers_pending",
                 "vigil_timers_overdue_seconds", "vigil_inputs_in_flight", "vigil_mqtt_reconnects_total"):
        assert want in names, want
    # every expression parses: as recording rules through promtool
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expr{i}", "expr": e.replace("$namespace", ".*").replace("$service", ".*")}
        for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dash_rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    r = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
