/* topic_prefix.h - VIGIL_TOPIC_PREFIX: every Vigil topic under one prefix,
 * so a broker shared with other tenants is never touched outside it.
 *
 * The prefix is applied once, at the MQTT boundary (mqtt.c): subscriptions,
 * every publish (outbox, direct, retained status, last will) get
 * "<prefix>/" in front, and incoming topics lose it before a service sees
 * them, so services, their cores and the contract in topics/ keep the
 * unprefixed names. The prefix is given without the trailing '/' (it is
 * added here): "tenant-a" puts room/r/message at tenant-a/room/r/message.
 * Pure functions, no I/O. */
#ifndef VIGIL_TOPIC_PREFIX_H
#define VIGIL_TOPIC_PREFIX_H
#include <stdbool.h>
#include <stddef.h>

#define VIGIL_TOPIC_PREFIX_MAX 100 /* bytes */

/* "" (no prefix) or 1..VIGIL_TOPIC_PREFIX_MAX bytes of A-Z a-z 0-9 . _ -
 * in levels separated by single '/': no wildcard (+ #), no leading '/' or
 * '$' (reserved for the broker's topics), no trailing '/', no empty level.
 * Returns 0, or -1 with err naming VIGIL_TOPIC_PREFIX. */
int vigil_topic_prefix_check(const char *prefix, char *err, size_t errlen);

/* "<prefix>/<topic>" into out; a shared subscription "$share/g/<filter>"
 * becomes "$share/g/<prefix>/<filter>". An empty prefix copies topic.
 * Returns the length, or -1 if it does not fit. */
int vigil_topic_prefix_apply(const char *prefix, const char *topic, char *out, size_t outlen);

/* The topic without "<prefix>/", or NULL when topic is not under the
 * prefix. An empty prefix returns topic. */
const char *vigil_topic_prefix_strip(const char *prefix, const char *topic);

/* A service replica's MQTT client id, stable across restarts:
 * "vigil-<service>-<shard>", under "<prefix>/" when there is a prefix, so
 * that two deployments sharing a broker under different prefixes never
 * take each other's sessions (a broker disconnects the older of two
 * connections with one client id). Returns the length, or -1 if it does not
 * fit. */
#define VIGIL_CLIENT_ID_MAX (VIGIL_TOPIC_PREFIX_MAX + 96)
int vigil_client_id(const char *prefix, const char *service, int shard, char *out,
                    size_t outlen);

#endif
