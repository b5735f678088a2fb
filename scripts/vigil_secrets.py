"""scripts/secrets: every password and credential file of a Vigil
deployment (see `scripts/secrets --help`)."""
import argparse
import base64
import os
import re
import secrets as rnd
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vigil_acl  # noqa: E402

HELP = """\
Writes (into DIR, default deploy/secrets/, which git ignores):
  passwords/<user>            the clear passwords, one file per user (0600):
                              every service, vigil-cli, admin, health
  mosquitto/passwd            mosquitto's password_file (mosquitto_passwd hashes)
  mosquitto/acl               mosquitto's acl_file (from topics/asyncapi.yaml)
  mosquitto/health-password   for the broker's health check
  redis/users.acl             Redis' aclfile (SHA-256 of each password; the
                              default user is off)
  redis/health-password       for Redis' health check
  services/<svc>/mqtt-password   what each service mounts:
  services/<svc>/redis-url       VIGIL_MQTT_PASSWORD_FILE, VIGIL_REDIS_URL_FILE
  vigil-cli/mqtt-password, vigil-cli/redis-url   the CLI's, for the host
  k8s/secrets.yaml            with --k8s: one Secret per service (vigil-<svc>),
                              vigil-mosquitto and vigil-redis (for the broker
                              and Redis, e.g. deploy/k8s/infra)

Idempotent: an existing password is kept (files derived from it are written
again); --rotate USER makes a new one for USER only, and Redis accepts the
previous one too (passwords/<user>.previous) until --drop-previous, so
nothing is refused while the service restarts. The steps: README,
"Security" (rotating a password).
"""


# Options with a value: (flag, default, help).
VALUE_OPTIONS = [
    ("--dir", os.path.join(vigil_acl.ROOT, "deploy", "secrets"), "output folder (default deploy/secrets)"),
    ("--prefix", "", "VIGIL_TOPIC_PREFIX for the MQTT ACL (default empty)"),
    ("--redis-prefix", "vigil:", "VIGIL_REDIS_PREFIX (default vigil:)"),
    ("--redis-host", "redis:6379", "host:port in the services' Redis URLs (default redis:6379, compose)"),
    ("--cli-redis-host", "127.0.0.1:6379", "host:port in the CLI's Redis URL (default 127.0.0.1:6379)"),
    ("--db", "0", "Redis database number (default 0)"),
    ("--namespace", "vigil", "namespace of the services' Secrets (default vigil)"),
    ("--broker-namespace", "messaging",
     "namespace of Secret vigil-mosquitto (default messaging, as deploy/k8s/infra)"),
    ("--redis-namespace", "data", "namespace of Secret vigil-redis (default data, as deploy/k8s/infra)"),
    ("--k8s-redis-host", "redis.data.svc.cluster.local:6379", "host:port in the Kubernetes Secrets' Redis URLs"),
]


def parse(argv):
    p = argparse.ArgumentParser(prog="scripts/secrets", description=HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, default, what in VALUE_OPTIONS:
        p.add_argument(flag, default=default, help=what)
    p.add_argument("--rotate", action="append", default=[], metavar="USER",
                   help="make a new password for USER (repeatable; 'all' = every user)")
    p.add_argument("--drop-previous", action="store_true",
                   help="end a rotation: Redis stops accepting the previous passwords")
    p.add_argument("--k8s", action="store_true", help="also write k8s/secrets.yaml")
    return p.parse_args(argv)


def write(path, text, mode=0o644):
    """Atomic replace, mode set before the content lands."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# What token_urlsafe(32) makes (43 characters), or a longer one of the same
# alphabet put there by hand.
PASSWORD_RE = re.compile(r"[A-Za-z0-9_-]{32,}")


def passwords(d, users, rotate):
    """{user: password}: kept from d/passwords/<user>, made when missing or
    rotated. 32 random bytes, URL-safe (no %-encoding in a Redis URL)."""
    out = {}
    for u in users:
        path = os.path.join(d, "passwords", u)
        if os.path.exists(path) and u not in rotate and "all" not in rotate:
            with open(path) as f:
                out[u] = f.read().strip()
            if not PASSWORD_RE.fullmatch(out[u]):
                # a truncated or hand-edited file: never hash an empty or
                # odd password into the broker's and Redis' files
                sys.exit(f"scripts/secrets: {path} holds no valid password (empty or not "
                         f"what scripts/secrets writes): restore it, or make a new one with "
                         f"--rotate {u}")
            continue
        if os.path.exists(path):
            # Redis accepts the previous password too until --drop-previous,
            # so connections that ACL LOAD closes reconnect with it.
            os.replace(path, path + ".previous")
        out[u] = rnd.token_urlsafe(32)
        write(path, out[u] + "\n", 0o600)
        print(f"scripts/secrets: new password for {u}", file=sys.stderr)
    return out


def previous(d, users, drop):
    """{user: [new, previous]} for users in rotation (a passwords/<user>.previous
    file); with drop, those files are removed instead."""
    out = {}
    for u in users:
        path = os.path.join(d, "passwords", u + ".previous")
        if not os.path.exists(path):
            continue
        if drop:
            os.unlink(path)
            print(f"scripts/secrets: previous password of {u} dropped", file=sys.stderr)
            continue
        with open(path) as f:
            p = f.read().strip()
        if PASSWORD_RE.fullmatch(p):
            out[u] = p
        else:  # an empty one would let anyone in as u until --drop-previous
            print(f"scripts/secrets: {path} holds no valid password: not accepted",
                  file=sys.stderr)
    return out


def mosquitto_passwd(pw):
    """The password_file text, hashed by mosquitto_passwd -U."""
    fd, tmp = tempfile.mkstemp(prefix="vigil-passwd-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.writelines(f"{u}:{p}\n" for u, p in pw.items())
        subprocess.run(["mosquitto_passwd", "-U", tmp], check=True)
        with open(tmp) as f:
            return f.read()
    finally:
        os.unlink(tmp)


def redis_url(user, pw, host, db):
    return f"redis://{user}:{pw}@{host}/{db}"


def k8s_secret(name, namespace, files):
    lines = ["---", "apiVersion: v1", "kind: Secret", "metadata:", f"  name: {name}",
             f"  namespace: {namespace}", "  labels:", "    app.kubernetes.io/part-of: vigil",
             "type: Opaque", "data:"]
    lines += [f"  {k}: {base64.b64encode(v.encode()).decode()}" for k, v in files.items()]
    return "\n".join(lines) + "\n"


def main(argv):
    a = parse(argv)
    users = vigil_acl.all_users()
    unknown = [u for u in a.rotate if u != "all" and u not in users]
    if unknown:
        print(f"scripts/secrets: no such user {', '.join(unknown)} (users: {', '.join(users)})",
              file=sys.stderr)
        return 2
    os.makedirs(a.dir, exist_ok=True)
    os.chmod(a.dir, 0o700)  # other host users stay out; the mounted files inside are 0644
    pw = passwords(a.dir, users, set(a.rotate))
    d = a.dir
    acl = vigil_acl.mosquitto_acl(a.prefix)
    passwd = mosquitto_passwd(pw)
    prev = previous(a.dir, users, a.drop_previous)
    users_acl = vigil_acl.redis_users_acl({u: [p, prev[u]] if u in prev else p for u, p in pw.items()},
                                          a.redis_prefix)
    write(os.path.join(d, "mosquitto", "acl"), acl)
    write(os.path.join(d, "mosquitto", "passwd"), passwd)
    write(os.path.join(d, "mosquitto", "health-password"), pw["health"] + "\n")
    write(os.path.join(d, "redis", "users.acl"), users_acl)
    write(os.path.join(d, "redis", "health-password"), pw["health"] + "\n")
    for s in vigil_acl.services():
        write(os.path.join(d, "services", s, "mqtt-password"), pw[s] + "\n")
        write(os.path.join(d, "services", s, "redis-url"), redis_url(s, pw[s], a.redis_host, a.db) + "\n")
    cli = vigil_acl.CLI_USER
    write(os.path.join(d, cli, "mqtt-password"), pw[cli] + "\n", 0o600)
    write(os.path.join(d, cli, "redis-url"), redis_url(cli, pw[cli], a.cli_redis_host, a.db) + "\n", 0o600)
    if a.k8s:
        docs = [k8s_secret(f"vigil-{s}", a.namespace, {
            "mqtt-password": pw[s],
            "redis-url": redis_url(s, pw[s], a.k8s_redis_host, a.db)}) for s in vigil_acl.services()]
        docs.append(k8s_secret("vigil-mosquitto", a.broker_namespace, {
            "passwd": passwd, "acl": acl, "health-password": pw["health"]}))
        docs.append(k8s_secret("vigil-redis", a.redis_namespace, {
            "users.acl": users_acl, "health-password": pw["health"]}))
        write(os.path.join(d, "k8s", "secrets.yaml"), "".join(docs), 0o600)
    print(f"scripts/secrets: {len(users)} users in {d}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
