/* shard_fence.c - a replica's fence through its own session (see
 * shard_fence.h). */
#include "vigil/shard_fence.h"
#include "vigil/unique.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* 16 random bytes as hex: a nonce no earlier process of this index had. */
static void make_nonce(char out[33])
{
    unsigned char b[16];
    vigil_random_bytes(b, sizeof b);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

void vigil_shard_fence_init(vigil_shard_fence *f, const char *service, int index, int count)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    snprintf(f->topic, sizeof f->topic, "sys/%s/fence/%d", service, index);
    snprintf(f->shard, sizeof f->shard, "%d/%d", index, count);
    make_nonce(f->nonce);
    f->next_seq = 1;
}

void vigil_shard_fence_destroy(vigil_shard_fence *f)
{
    pthread_mutex_destroy(&f->mu);
}

bool vigil_shard_fence_is_fence_topic(const char *service, const char *topic)
{
    size_t n = strlen(service);
    return strncmp(topic, "sys/", 4) == 0 && strncmp(topic + 4, service, n) == 0 &&
           strncmp(topic + 4 + n, "/fence/", 7) == 0;
}

bool vigil_shard_fence_due(vigil_shard_fence *f, const vigil_shard_view *held, int64_t now_ms,
                           int64_t retry_ms, char *out, size_t outlen)
{
    pthread_mutex_lock(&f->mu);
    bool send = false;
    if (held->n == 0) {
        f->first_seq = 0; /* nothing held: nothing to wait for */
    } else if (f->first_seq == 0 || now_ms - f->sent_at_ms >= retry_ms) {
        if (f->first_seq == 0) {
            f->snapshot = *held;
            f->first_seq = f->next_seq;
        }
        uint64_t seq = f->next_seq++;
        f->sent_at_ms = now_ms;
        char counts[64];
        vigil_shard_view_format(&f->snapshot, counts, sizeof counts);
        int w = snprintf(out, outlen,
                         "{\"shard\":\"%s\",\"nonce\":\"%s\",\"seq\":%" PRIu64
                         ",\"held\":[%s]}",
                         f->shard, f->nonce, seq, counts);
        send = w > 0 && (size_t)w < outlen;
    }
    pthread_mutex_unlock(&f->mu);
    return send;
}

/* The nonce and sequence number of a fence payload; false for anything
 * else. */
static bool parse_fence(const void *payload, size_t len, char nonce[33], uint64_t *seq)
{
    if (len == 0 || len >= VIGIL_FENCE_PAYLOAD_MAX)
        return false;
    char buf[VIGIL_FENCE_PAYLOAD_MAX];
    memcpy(buf, payload, len);
    buf[len] = '\0';
    json_object *o = json_tokener_parse(buf);
    if (!o)
        return false;
    json_object *n = NULL, *s = NULL;
    bool ok = json_object_is_type(o, json_type_object) &&
              json_object_object_get_ex(o, "nonce", &n) && json_object_is_type(n, json_type_string) &&
              json_object_get_string_len(n) == 32 && json_object_object_get_ex(o, "seq", &s) &&
              json_object_is_type(s, json_type_int) && json_object_get_int64(s) > 0;
    if (ok) {
        memcpy(nonce, json_object_get_string(n), 33);
        *seq = (uint64_t)json_object_get_int64(s);
    }
    json_object_put(o);
    return ok;
}

int vigil_shard_fence_arrived(vigil_shard_fence *f, const void *payload, size_t len,
                              vigil_shard_view *release)
{
    char nonce[33];
    uint64_t seq = 0;
    if (!parse_fence(payload, len, nonce, &seq))
        return -1;
    pthread_mutex_lock(&f->mu);
    bool ours = strcmp(nonce, f->nonce) == 0 && f->first_seq != 0 && seq >= f->first_seq &&
                seq < f->next_seq;
    if (ours) {
        *release = f->snapshot;
        f->first_seq = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return ours ? 1 : 0;
}
