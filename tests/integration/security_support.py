"""Shared pieces of the credential and TLS tests (test_auth.py,
test_tls.py, test_prefix.py, test_secrets.py): a fixture that stops what a
test started, and the check that a service refused its configuration at
startup with exit status 78 and exactly one error line."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HarnessError, Service, scaled  # noqa: E402

EXIT_CONFIG = 78  # VIGIL_EXIT_CONFIG (libshared/include/vigil/config.h)


@pytest.fixture
def procs():
    """A list the test appends servers and services to; stopped (services
    checked for sanitizer reports and unexpected exits) in reverse order."""
    started = []
    yield started
    problems = []
    for p in reversed(started):
        if isinstance(p, Service):
            try:
                p.terminate()
            except HarnessError as e:
                problems.append(str(e))
            problems += p.check()
        else:
            p.stop()
    assert not problems, "\n".join(problems)


def error_lines(svc):
    return [l["msg"] for l in svc.log_lines() if l.get("level") == "error"]


def expect_config_exit(svc, procs, timeout=40):
    """Starts svc, which must exit by itself with status 78 after exactly
    one error line; returns that line's message."""
    svc.expect_exit = True
    procs.append(svc)
    svc.start(wait=False)
    try:
        rc = svc.proc.wait(timeout=scaled(timeout))
    except Exception:  # noqa: BLE001 - reported with the log
        svc.kill9()
        raise AssertionError(f"{svc.name} still running after {timeout}s:\n{svc.stderr_text()[-3000:]}")
    svc.runs[-1][1:] = [rc, "exited"]
    assert rc == EXIT_CONFIG, f"exit status {rc}, expected {EXIT_CONFIG}:\n{svc.stderr_text()[-3000:]}"
    errs = error_lines(svc)
    assert len(errs) == 1, f"expected one error line, got {errs}"
    return errs[0]
