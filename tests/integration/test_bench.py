"""scripts/bench and scripts/bench-chat still run end to end (benchmarks, not
timed tests: the figures are not checked, only that every stage ran, nothing
was lost, and the summary says what it measured). Tiny runs against this
build tree; --sustained-p99 is loose so a sanitizer build's slowness cannot
fail them. The load comes from vigil-bench-load (tools/bench-load, this
tree's build, so under the sanitizers here) by default; one quick run keeps
the Python clients (--clients python) working."""

import os
import re
import subprocess

import harness
import script_support

BENCH = os.path.join(harness.SOURCE_DIR, "scripts", "bench")
BENCH_CHAT = os.path.join(harness.SOURCE_DIR, "scripts", "bench-chat")
BENCH_INSTR = os.path.join(harness.SOURCE_DIR, "scripts", "bench-instructions")
SUSTAINED = ["--sustained", "--sustained-rates", "50,100", "--sustained-seconds", "1",
             "--sustained-p99", "2000"]


def run(tmp_path, script, *args, timeout=300):
    p = subprocess.run([script, *args, "--no-build", "--build-dir", harness.BUILD_DIR],
                       env=script_support.script_env(tmp_path), capture_output=True,
                       timeout=harness.scaled(timeout), stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")


def test_bench_runs_every_stage_and_finds_a_sustained_rate(tmp_path):
    rc, out = run(tmp_path, BENCH, "--mix", "human", "--n", "300", "--latency-n", "60", "--warmup", "5",
                  "--broker-nodelay", "off", "--syscalls", *SUSTAINED)
    assert rc == 0, out[-6000:]
    assert "clients: vigil-bench-load (C)" in out, out[-4000:]
    assert "300 commits for 300 inputs" in out, out[-4000:]
    # the C tool's CPU is the bench's, shown beside it
    assert re.search(r"CPU us per input by process, one replica: .*bench \d+ \(vigil-bench-load \d+\)",
                     out), out[-4000:]
    # counted where perf can count (then the intake thread made some), else
    # the reason, never a silent gap
    m = re.search(r"system calls per input, by thread: (.*)", out)
    assert m, out[-4000:]
    assert re.match(r"[\d.]+ in all: .*vigil-intake [\d.]+", m.group(1)) or \
        m.group(1).startswith("not counted: "), m.group(1)
    # Redis's time per commit is a figure (its commands were counted), not nan
    assert re.search(r"as shipped \(no nodelay\)\s+\d+\s+\d+\s+[\d.]+\s+\d+us\s+\d+\.\dus", out), out[-4000:]
    assert re.search(r"relay measured with mosquitto_pub -l -> mosquitto_sub \(one topic\): \d+ msg/s", out), \
        out[-4000:]
    m = re.search(r"sustained \(p99 <= 2000 ms over 1 s steps\): (\d+) msg/s", out)
    assert m and int(m.group(1)) in (50, 100), out[-4000:]
    # the broker's own packet counts: a relayed message is a PUBLISH and a
    # PUBACK each way; an input through the service at least twice that
    # (the input in and out, its event in and out, each with its PUBACK)
    m = re.search(r"relay ([\d.]+) in / ([\d.]+) out per message, service ([\d.]+) in / "
                  r"([\d.]+) out per input \(quotient ([\d.]+)\); the outbox published ([\d.]+) "
                  r"outputs per input", out)
    assert m, out[-4000:]
    relay_in, relay_out, svc_in, svc_out, _, outputs = map(float, m.groups())
    assert 1.95 <= relay_in <= 2.1 and 1.95 <= relay_out <= 2.1, m.group(0)
    assert svc_in >= 3.95 and svc_out >= 3.95 and outputs >= 1.0, m.group(0)
    assert "MISSING" not in out, out[-4000:]


def test_bench_chat_finds_each_services_sustained_rate(tmp_path):
    rc, out = run(tmp_path, BENCH_CHAT, "--n", "200", "--latency-n", "40", "--broker-nodelay", "off",
                  "--broker-max-inflight", "0", *SUSTAINED)
    assert rc == 0, out[-6000:]
    assert "clients: vigil-bench-load (C)" in out, out[-4000:]
    assert "broker max_inflight_messages 20 (mosquitto's default)" in out, out[-4000:]
    for name in ("chat-router", "wake-evaluator intake"):
        assert re.search(rf"{name}, as shipped \(no nodelay\): sustained \(p99 <= 2000 ms over 1 s steps\): "
                         r"(50|100) msg/s", out), out[-4000:]
    assert "MISSING" not in out, out[-4000:]


def test_bench_still_runs_the_python_clients(tmp_path):
    """--clients python: today's paho publisher and subscriber process, kept
    for comparison (one setting, no paced search: a quick run)."""
    rc, out = run(tmp_path, BENCH, "--clients", "python", "--mix", "human", "--n", "200",
                  "--latency-n", "40", "--warmup", "5", "--broker-nodelay", "off")
    assert rc == 0, out[-6000:]
    assert "clients: Python paho" in out, out[-4000:]
    assert "200 commits for 200 inputs" in out, out[-4000:]
    assert re.search(r"CPU us per input by process, one replica: .*bench \d+$", out, re.M), out[-4000:]
    assert "MISSING" not in out, out[-4000:]


def test_bench_load_tool_says_why_it_fails(tmp_path):
    """vigil-bench-load's own errors: exit status != 0 and the reason."""
    tool = os.path.join(harness.BUILD_DIR, "tools", "bench-load", "vigil-bench-load")
    stream = tmp_path / "stream"
    stream.write_bytes(b'k1\troom/r/message\t{"id": "k1"}\n')
    port = harness.free_port()
    p = subprocess.run([tool, "--port", str(port), "--stream", str(stream), "--sub-topic", "x/#"],
                       capture_output=True, timeout=60)
    assert p.returncode == 1 and b"cannot connect to 127.0.0.1" in p.stderr, p.stderr
    stream.write_bytes(b'k1\troom/r/message\t{"id": "k1"}\nno tabs here\n')
    p = subprocess.run([tool, "--port", str(port), "--stream", str(stream)], capture_output=True,
                       timeout=60)
    assert p.returncode == 1 and b"stream:2: not key<TAB>topic<TAB>payload" in p.stderr, p.stderr
    p = subprocess.run([tool, "--help"], capture_output=True, timeout=60)
    assert p.returncode == 0 and b"--sub-topic" in p.stdout
    p = subprocess.run([tool, "--stream", str(stream)], capture_output=True, timeout=60)
    assert p.returncode == 2 and b"--port" in p.stderr, p.stderr


def test_bench_refuses_options_it_cannot_use(tmp_path):
    for bad, says in (("5,a", "numbers separated by commas"), ("200,100", "positive and ascending"),
                      ("0,100", "positive and ascending")):
        for script in (BENCH, BENCH_CHAT):
            rc, out = run(tmp_path, script, "--sustained-rates", bad, timeout=60)
            assert rc == 2 and says in out, f"{script} {bad}: {out[-2000:]}"
    for script in (BENCH, BENCH_CHAT):
        rc, out = run(tmp_path, script, "--broker-max-inflight", "-1", timeout=60)
        assert rc == 2 and "must be 0 (mosquitto's default) or positive" in out, out[-2000:]


def test_bench_instructions_counts_a_release_build(tmp_path):
    """Refuses what it cannot measure (a sanitizer build, runs in the wrong
    order), then counts a release build (built here: the tests run the
    sanitizer build) on a few dozen inputs."""
    rc, out = run(tmp_path, BENCH_INSTR, "--n1", "50", "--n2", "50", timeout=60)
    assert rc == 2 and "--n2 must be larger than --n1" in out, out[-2000:]
    rc, out = run(tmp_path, BENCH_INSTR, timeout=60)  # run() passes this sanitizer build
    assert rc != 0 and "is a sanitizer build" in out, out[-2000:]
    subprocess.run([os.path.join(harness.SOURCE_DIR, "scripts", "build"), "release"], check=True,
                   capture_output=True, timeout=harness.scaled(900))
    release = os.path.join(harness.SOURCE_DIR, "build", "release")
    p = subprocess.run([BENCH_INSTR, "--no-build", "--build-dir", release, "--n1", "20", "--n2", "60",
                        "--top", "5"], env=script_support.script_env(tmp_path), capture_output=True,
                       timeout=harness.scaled(600), stdin=subprocess.DEVNULL)
    out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, out[-6000:]
    m = re.search(r"dormancy-monitor, --mix human: ([\d,]+) instructions per input", out)
    assert m and int(m.group(1).replace(",", "")) > 10000, out[-4000:]
    listed = re.findall(r"^\s+[\d,]+\s+[\d.]+ %\s+\S+$", out, re.M)
    assert len(listed) == 5, out[-4000:]
