# deploy/docker/stand-ins/mosquitto.Dockerfile - a stand-in for the upstream
# eclipse-mosquitto:2 image, built from Debian 12's mosquitto, for machines
# that cannot pull from an image registry (scripts/compose-test). Same paths
# as upstream: config /mosquitto/config/mosquitto.conf, data /mosquitto/data,
# port 1883, mosquitto_sub on PATH for the compose healthcheck. The
# compose file users run is unchanged: this image is only tagged with the
# upstream name in the local image store.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends mosquitto mosquitto-clients \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /mosquitto/config /mosquitto/data /mosquitto/log \
 && chown -R mosquitto:mosquitto /mosquitto
# Like upstream, the broker runs as the unprivileged user mosquitto, which
# owns the data volume (a named volume is seeded with this ownership).
USER mosquitto
EXPOSE 1883
CMD ["/usr/sbin/mosquitto", "-c", "/mosquitto/config/mosquitto.conf"]
