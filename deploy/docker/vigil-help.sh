#!/bin/sh
# vigil-help - the image's default command: says what the image holds and
# how to run a daemon. Installed as /opt/vigil/bin/vigil-help.
echo "Vigil $(ls /opt/vigil/bin | grep -c -v '^vigil-') daemon(s) in /opt/vigil/bin (on PATH):"
for f in /opt/vigil/bin/*; do
    case ${f##*/} in vigil-help | vigil-healthcheck) continue ;; esac
    echo "  ${f##*/}"
done
cat <<'TXT'

Run one by naming it, e.g.:
  docker run --rm -e VIGIL_MQTT_URL=mqtt://broker:1883 -e VIGIL_REDIS_URL=redis://redis:6379/0 \
      -e VIGIL_HTTP_ADDR=0.0.0.0:9101 vigil dormancy-monitor
  docker run --rm vigil dormancy-monitor --help     # every variable with its default
The whole stack: docker compose up (docker-compose.yml at the repository root).
TXT
