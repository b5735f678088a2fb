# deploy/redis-tls/stunnel.Dockerfile - the sidecar image for Redis over TLS:
# Debian 12's stunnel4 running stunnel-client.conf, mounted with the
# certificates at /etc/stunnel (see k8s-sidecar.yaml).
#   docker build -f deploy/redis-tls/stunnel.Dockerfile -t <registry>/vigil-stunnel:0.1.0 deploy/redis-tls
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends stunnel4 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY stunnel-client.conf /etc/stunnel/stunnel.conf
USER 10001:10001
CMD ["stunnel4", "/etc/stunnel/stunnel.conf"]
