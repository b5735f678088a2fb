#!/bin/sh
# vigil-healthcheck [PATH] - container healthcheck: GET http://127.0.0.1:<port>/readyz
# where <port> comes from VIGIL_HTTP_ADDR (host:port, :port or a bare port),
# the same variable the daemon listens on. Exit 0 when the answer is 2xx.
# Installed in the image as /opt/vigil/bin/vigil-healthcheck.
set -eu
path=${1:-/readyz}
addr=${VIGIL_HTTP_ADDR:-}
if [ -z "$addr" ]; then
    echo "vigil-healthcheck: VIGIL_HTTP_ADDR is not set" >&2
    exit 1
fi
port=${addr##*:}
case $port in
    '' | *[!0-9]*) echo "vigil-healthcheck: no port in VIGIL_HTTP_ADDR=$addr" >&2; exit 1 ;;
esac
exec curl -fsS -m 2 -o /dev/null "http://127.0.0.1:${port}${path}"
