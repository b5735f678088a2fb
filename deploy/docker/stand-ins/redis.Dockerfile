# deploy/docker/stand-ins/redis.Dockerfile - a stand-in for the upstream
# redis:7.0 image, built from Debian 12's redis-server (7.0), for machines
# that cannot pull from an image registry (scripts/compose-test). Same
# layout as upstream: redis-server and redis-cli on PATH, data in /data,
# port 6379; docker-compose.yml passes the config file and --dir itself.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data /usr/local/etc/redis \
 && chown redis:redis /data
USER redis
WORKDIR /data
EXPOSE 6379
CMD ["redis-server"]
