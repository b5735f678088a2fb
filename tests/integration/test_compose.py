"""The real docker-compose.yml, brought up and checked (scripts/compose-test
--short): healthy stack, the README recipe, kill -9 of service containers
mid-stream, broker and Redis restarts, `down` leaving nothing.

Runs the stack in containers: a Docker engine, or Debian's podman (installed
by the script). It needs root for that (apt, debootstrap) and the compose
file's host ports (1883, 6379, 9101...) free, so it skips with the reason on
a machine where either is not so (a developer's running scripts/up stack).
CI runs as root on a fresh machine and so runs it. scripts/compose-test
without --short adds the shard check and a longer stream."""
import os
import socket
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def port_busy(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_compose_stack():
    if os.geteuid() != 0:
        pytest.skip("needs root to install podman and make the base image")
    busy = [p for p in (1883, 6379, 9101, 9102, 9103) if port_busy(p)]
    if busy:
        pytest.skip(f"host ports in use (a scripts/up stack?): {busy}")
    r = subprocess.run([os.path.join(ROOT, "scripts", "compose-test"), "--short"],
                       cwd=ROOT, capture_output=True, text=True, timeout=1500)
    print(r.stdout[-6000:])
    print(r.stderr[-6000:])
    assert r.returncode == 0, "scripts/compose-test --short failed (output above)"
    assert "compose-test: passed" in r.stdout
    for check in ("healthy", "recipe", "kill", "restart"):
        assert f"  ok  {check}" in r.stdout, f"check {check} did not report ok"
