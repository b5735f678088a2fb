"""Wrong credentials are a clear startup error; a refusal after a good start
is logged loudly and retried.

A mosquitto with a password_file and a redis with requirepass and an ACL
user (harness.SecureMosquitto, harness.AclRedisServer). A service started
with a wrong MQTT password, a wrong Redis password, or no Redis password
at all exits with status 78 (VIGIL_EXIT_CONFIG) after one error line that
names the broker or Redis and the user, never the secret; with the right
ones it becomes ready. A password rotated on the broker or in Redis while
the service runs does not stop it: every refused attempt is an error line,
and it is ready again once the credentials match.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    AclRedisServer,
    Mosquitto,
    RedisServer,
    SecureMosquitto,
    Service,
    scaled,
    wait_until,
)
from security_support import error_lines, expect_config_exit, procs  # noqa: E402,F401

SERVICE = "dormancy-monitor"
MQTT_GOOD = "s3cr3t-mqtt-good"
MQTT_BAD = "s3cr3t-mqtt-wrong"
REDIS_GOOD = "s3cr3t-redis-g@od/pw"  # '@' and '/' travel percent-encoded in the URL
REDIS_BAD = "s3cr3t-redis-wrong"
SECRETS = (MQTT_GOOD, MQTT_BAD, REDIS_GOOD, REDIS_BAD, "s3cr3t-redis-g%40od%2Fpw")


def env_for(broker_url, redis_url, **extra):
    env = {
        "VIGIL_MQTT_URL": broker_url,
        "VIGIL_REDIS_URL": redis_url,
        "VIGIL_REDIS_PREFIX": "auth:",
        "VIGIL_TICK_MS": "20",
        "VIGIL_LOG_LEVEL": "info",
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def assert_no_secret(svc):
    text = svc.stderr_text()
    for s in SECRETS:
        assert s not in text, f"secret {s!r} in the log of {svc.name}"


def expect_refused(svc, procs):
    msg = expect_config_exit(svc, procs)
    assert_no_secret(svc)
    return msg


def test_wrong_mqtt_password_exits_with_a_clear_error(tmp_path, procs):
    d = str(tmp_path)
    broker = SecureMosquitto(d, users={SERVICE: MQTT_GOOD, "other": "x-other-pw"}).start()
    procs.append(broker)
    redis = RedisServer(d).start()
    procs.append(redis)

    bad = Service(SERVICE, d, env_for(broker.url, redis.url, VIGIL_MQTT_USER=SERVICE,
                                      VIGIL_MQTT_PASSWORD=MQTT_BAD))
    msg = expect_refused(bad, procs)
    assert f"MQTT broker mqtt://127.0.0.1:{broker.port} refused user '{SERVICE}'" in msg, msg
    assert "not authorized" in msg or "bad user name or password" in msg, msg

    # An unknown user and no credentials at all are refused the same way.
    nouser = Service(SERVICE, d, env_for(broker.url, redis.url))
    msg = expect_refused(nouser, procs)
    assert "refused user '(anonymous)'" in msg, msg

    good = Service(SERVICE, d, env_for(broker.url, redis.url, VIGIL_MQTT_USER=SERVICE,
                                       VIGIL_MQTT_PASSWORD=MQTT_GOOD))
    procs.append(good)
    good.start(timeout=30)
    assert good.is_ready()
    assert error_lines(good) == []
    assert_no_secret(good)


def secure_pair(d, procs):
    """A broker with the service's user and a Redis with ACL user dm."""
    broker = SecureMosquitto(d, users={SERVICE: MQTT_GOOD}).start()
    procs.append(broker)
    redis = AclRedisServer(d, users={"dm": (REDIS_GOOD, "~auth:* +@all")}).start()
    procs.append(redis)
    return broker, redis


def test_password_from_file_is_used(tmp_path, procs):
    d = str(tmp_path)
    broker, redis = secure_pair(d, procs)
    pw = tmp_path / "mqtt_password"
    pw.write_text(MQTT_GOOD + "\n")
    url = tmp_path / "redis_url"
    url.write_text(redis.url_for("dm", REDIS_GOOD) + "\n")
    svc = Service(SERVICE, d, env_for(broker.url, "", VIGIL_MQTT_USER=SERVICE,
                                      VIGIL_MQTT_PASSWORD_FILE=str(pw),
                                      VIGIL_REDIS_URL_FILE=str(url)))
    del svc.env["VIGIL_REDIS_URL"]
    procs.append(svc)
    svc.start(timeout=30)
    assert svc.is_ready()
    assert_no_secret(svc)

    # Both the variable and its _FILE: a configuration error (status 2)
    # naming both, quoting nothing of the value.
    both = Service(SERVICE, d, env_for(broker.url, redis.url_for("dm", REDIS_GOOD),
                                       VIGIL_MQTT_USER=SERVICE, VIGIL_MQTT_PASSWORD=MQTT_BAD,
                                       VIGIL_MQTT_PASSWORD_FILE=str(pw)))
    r = both.run_cli([])
    assert r.returncode == 2, r
    out = (r.stdout + r.stderr).decode()
    assert "VIGIL_MQTT_PASSWORD and VIGIL_MQTT_PASSWORD_FILE are both set" in out, out
    for s in SECRETS:
        assert s not in out


def test_wrong_redis_credentials_exit_with_a_clear_error(tmp_path, procs):
    d = str(tmp_path)
    broker = Mosquitto(d).start()
    procs.append(broker)
    redis = AclRedisServer(d, users={"dm": (REDIS_GOOD, "~auth:* +@all")}).start()
    procs.append(redis)

    bad = Service(SERVICE, d, env_for(broker.url, redis.url_for("dm", REDIS_BAD)))
    msg = expect_refused(bad, procs)
    assert f"Redis 127.0.0.1:{redis.port} refused user 'dm'" in msg, msg
    assert "WRONGPASS" in msg, msg

    # No password while Redis requires one: NOAUTH, the same clear exit.
    none = Service(SERVICE, d, env_for(broker.url, redis.url_for()))
    msg = expect_refused(none, procs)
    assert f"Redis 127.0.0.1:{redis.port} refused user 'default'" in msg, msg
    assert "NOAUTH" in msg, msg

    good = Service(SERVICE, d, env_for(broker.url, redis.url_for("dm", REDIS_GOOD)))
    procs.append(good)
    good.start(timeout=30)
    c = redis.client()
    try:
        clients = c.execute_command("CLIENT", "LIST")
        if isinstance(clients, bytes):
            clients = clients.decode()
        assert " user=dm " in str(clients), clients  # connected as the ACL user
    finally:
        c.close()
    assert_no_secret(good)


def test_refusal_after_start_is_logged_and_retried(tmp_path, procs):
    d = str(tmp_path)
    broker, redis = secure_pair(d, procs)
    svc = Service(SERVICE, d, env_for(broker.url, redis.url_for("dm", REDIS_GOOD),
                                      VIGIL_MQTT_USER=SERVICE, VIGIL_MQTT_PASSWORD=MQTT_GOOD))
    procs.append(svc)
    svc.start(timeout=30)

    # The broker's password changes and the broker restarts: the service
    # keeps running, says why it cannot connect, and connects again once
    # the password matches.
    broker.users[SERVICE] = "s3cr3t-rotated-elsewhere"
    broker.restart()
    wait_until(lambda: any("refused user" in e for e in error_lines(svc)), 30,
               "an error line about the refused reconnect")
    wait_until(lambda: not svc.is_ready(), 10, "not ready while refused")
    assert svc.alive()
    time.sleep(scaled(2))  # more attempts: still running
    assert svc.alive()
    broker.users[SERVICE] = MQTT_GOOD
    broker.restart()
    wait_until(svc.is_ready, 60, "ready again after the password matches")

    # Redis: the ACL user's password changes and its connections drop.
    c = redis.client()
    try:
        c.execute_command("ACL", "SETUSER", "dm", "resetpass", ">s3cr3t-rotated-redis")
        c.execute_command("CLIENT", "KILL", "USER", "dm")
        wait_until(lambda: any("credentials refused" in e for e in error_lines(svc)), 30,
                   "an error line about the refused Redis AUTH")
        assert svc.alive()
        c.execute_command("ACL", "SETUSER", "dm", "resetpass", f">{REDIS_GOOD}")
    finally:
        c.close()
    wait_until(svc.is_ready, 60, "ready again after the Redis password matches")
    assert svc.alive()
    assert_no_secret(svc)
    assert "s3cr3t-rotated" not in svc.stderr_text()


def test_cli_says_which_credentials_were_refused(tmp_path, procs):
    import subprocess

    from chat_personas import vigil_exe

    d = str(tmp_path)
    broker = SecureMosquitto(d, users={"ops": MQTT_GOOD}).start()
    procs.append(broker)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    env.update({"LSAN_OPTIONS": "print_suppressions=0", "VIGIL_MQTT_URL": broker.url,
                "VIGIL_MQTT_USER": "ops", "VIGIL_MQTT_PASSWORD": MQTT_BAD,
                "VIGIL_CLI_TIMEOUT_MS": "60000"})
    t0 = time.monotonic()
    r = subprocess.run([vigil_exe(), "persona", "status"], env=env, capture_output=True, text=True,
                       timeout=scaled(60))
    took = time.monotonic() - t0
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"MQTT broker mqtt://127.0.0.1:{broker.port} refused user 'ops'" in r.stderr, r.stderr
    assert took < 30, f"waited {took:.1f}s instead of stopping at the refusal"
    for s in SECRETS:
        assert s not in r.stdout + r.stderr
    env["VIGIL_MQTT_PASSWORD"] = MQTT_GOOD
    r = subprocess.run([vigil_exe(), "persona", "status"], env=env, capture_output=True, text=True,
                       timeout=scaled(60))
    assert r.returncode in (0, 3), (r.stdout, r.stderr)


def test_gateway_refuses_a_token_given_to_two_users(tmp_path):
    """presence-gateway's token file with one token on two lines (for two
    users, or twice for one) does not start: lookups take the first line, so
    the second would silently grant nothing or the wrong user. The error
    names the users and the file, never the token."""
    import subprocess

    from harness import free_port, service_binary

    token = "tok-s3cr3t-0123456789"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{token} joel\ntok-other-0123456789 ann\n{token} bob\n")
    tokens.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
    nobody = free_port()  # nothing listens: the gateway must stop before connecting
    env.update({"VIGIL_MQTT_URL": f"mqtt://127.0.0.1:{nobody}",
                "VIGIL_REDIS_URL": f"redis://127.0.0.1:{nobody}/0",
                "VIGIL_HTTP_ADDR": f"127.0.0.1:{free_port()}", "VIGIL_GATEWAY_TOKENS_FILE": str(tokens)})
    r = subprocess.run([service_binary("presence-gateway")], env=env, capture_output=True, text=True,
                       timeout=scaled(30))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "VIGIL_GATEWAY_TOKENS_FILE" in r.stderr and "given twice" in r.stderr, r.stderr
    assert "'joel'" in r.stderr and "'bob'" in r.stderr and token not in r.stderr, r.stderr
