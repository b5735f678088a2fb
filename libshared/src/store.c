/* store.c - versioned state records committed atomically with the processed
 * input id, the outbox, timer changes and snapshot updates (one EVALSHA).
 * Key layout and semantics: store.h. The scripts: store_lua.h. */
#include "vigil/store.h"
#include "vigil/redis_raw.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "store_lua.h"
#include "vigil/jtext.h"
#include "vigil/limits.h"
#include "vigil/log.h"
#include "vigil/str.h"

#define DEDUPE_KEEP_DEFAULT 10000

vigil_store *vigil_store_new(vigil_redis *r, const vigil_store_config *cfg)
{
    vigil_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    const char *prefix = cfg && cfg->prefix ? cfg->prefix : "vigil:";
    const char *service = cfg && cfg->service ? cfg->service : "";
    s->r = r;
    s->shard_index = cfg ? cfg->shard_index : 0;
    s->dedupe_keep = cfg && cfg->dedupe_keep > 0 ? cfg->dedupe_keep : DEDUPE_KEEP_DEFAULT;
    if (cfg && cfg->dedupe_ttl_ms > 0) {
        /* set again at most every hour (half the TTL when shorter), for
         * the TTL plus that: every id lives the TTL at least */
        int64_t ttl = cfg->dedupe_ttl_ms, every = ttl / 2 < 3600000 ? ttl / 2 : 3600000;
        s->ttl_refresh_ms = every > 0 ? every : 1;
        vigil_i64_text(s->dedupe_ttl, ttl + s->ttl_refresh_ms);
        s->ttl_seen = calloc(DEDUPE_TTL_SLOTS, sizeof *s->ttl_seen); /* NULL: set every time */
    }
    int n = snprintf(s->base, sizeof s->base, "%s%s:", prefix, service);
    if (n < 0 || (size_t)n >= sizeof s->base) {
        free(s);
        return NULL;
    }
    snprintf(s->outbox_key, sizeof s->outbox_key, "%soutbox:%d", s->base, s->shard_index);
    snprintf(s->timers_key, sizeof s->timers_key, "%stimers:%d", s->base, s->shard_index);
    snprintf(s->dues_key, sizeof s->dues_key, "%s:due", s->timers_key);
    s->del = (vigil_script)VIGIL_SCRIPT(VIGIL_LUA_DELETE);
    s->claim = (vigil_script)VIGIL_SCRIPT(VIGIL_LUA_CLAIM);
    return s;
}

void vigil_store_free(vigil_store *s)
{
    if (!s)
        return;
    store_batch_free(s);
    free(s->ttl_seen);
    free(s);
}

/* kind "outbox"/"timers": the shard's list/set (key ignored); kind NULL or
 * "": P S ":" key (a snapshot hash); any other kind: P S ":" kind ":" key. */
void vigil_store_key(const vigil_store *s, const char *kind, const char *key, char *out,
                     size_t outlen)
{
    if (!out || outlen == 0)
        return;
    if (kind && strcmp(kind, "outbox") == 0)
        snprintf(out, outlen, "%s", s->outbox_key);
    else if (kind && strcmp(kind, "timers") == 0)
        snprintf(out, outlen, "%s", s->timers_key);
    else if (!kind || !*kind)
        snprintf(out, outlen, "%s%s", s->base, key ? key : "");
    else
        snprintf(out, outlen, "%s%s:%s", s->base, kind, key ? key : "");
}

/* malloc'd printf (keys and arguments no header buffer bounds). */
#define xprintf vigil_asprintf

static char *dup_reply_str(const redisReply *rep)
{
    char *p = malloc(rep->len + 1);
    if (!p)
        return NULL;
    memcpy(p, rep->str, rep->len);
    p[rep->len] = '\0';
    return p;
}

static bool is_str(const redisReply *rep)
{
    return rep && (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS);
}

/* A version as stored ("17") or as returned by the script. */
static int64_t reply_int64(const redisReply *rep)
{
    if (!rep)
        return 0;
    if (rep->type == REDIS_REPLY_INTEGER)
        return rep->integer;
    if (is_str(rep))
        return strtoll(rep->str, NULL, 10);
    return 0;
}

/* The record as a service reads it: the head (field "s") alone, or, when
 * the hash holds parts (fields "p:" name, vigil_fx_state_part), the head
 * with a member "parts" added: {..., "parts":{"name":{...}, ...}}. The
 * parts come in the hash's order; names are JSON-quoted. NULL when out of
 * memory. */
static char *whole_record(const redisReply *hm, const redisReply *head)
{
    vigil_jtext b = { 0 };
    size_t n = 0;
    for (size_t i = 0; i + 1 < hm->elements; i += 2) {
        const redisReply *f = hm->element[i], *t = hm->element[i + 1];
        if (!is_str(f) || f->len < 3 || memcmp(f->str, "p:", 2) != 0 || !is_str(t))
            continue;
        if (n++ == 0) {
            size_t hl = head->len;
            while (hl > 0 && head->str[hl - 1] != '}')
                hl--; /* the head's closing brace */
            if (hl == 0) /* not an object: handed over as it is, the service says so */
                break;
            vigil_jtext_put(&b, head->str, hl - 1);
            bool empty = true;
            for (size_t k = 1; k + 1 < hl && empty; k++)
                empty = head->str[k] == ' ';
            vigil_jtext_key(&b, empty ? 0 : ',', "parts");
            vigil_jtext_put(&b, "{", 1);
        }
        char name[72];
        size_t nl = f->len - 2 < sizeof name - 1 ? f->len - 2 : sizeof name - 1;
        memcpy(name, f->str + 2, nl);
        name[nl] = '\0';
        vigil_jtext_key(&b, n > 1 ? ',' : 0, name);
        vigil_jtext_put(&b, t->str, t->len);
    }
    if (n == 0 || b.n == 0) {
        free(b.s);
        return dup_reply_str(head);
    }
    vigil_jtext_lit(&b, "}}");
    return vigil_jtext_take(&b);
}

int store_record_of(const redisReply *hm, int64_t *version, char **state)
{
    const redisReply *v = NULL, *st = NULL;
    *version = 0;
    *state = NULL;
    for (size_t i = 0; i + 1 < hm->elements; i += 2) {
        const redisReply *f = hm->element[i];
        if (is_str(f) && f->len == 1 && f->str[0] == 'v')
            v = hm->element[i + 1];
        else if (is_str(f) && f->len == 1 && f->str[0] == 's')
            st = hm->element[i + 1];
    }
    if (!is_str(st))
        return 0;
    *state = whole_record(hm, st);
    if (!*state)
        return -1;
    *version = reply_int64(v);
    return 0;
}

int vigil_store_load(vigil_store *s, const char *key, const char *input_id, int *seen,
                     int64_t *version, char **state)
{
    int rc = -1;
    redisReply *hm = NULL, *zs = NULL;
    char *skey = xprintf("%sstate:%s", s->base, key);
    char *ikey = xprintf("%sids:%s", s->base, key);
    *version = 0;
    *state = NULL;
    if (seen)
        *seen = 0;
    if (!skey || !ikey)
        goto cleanup;
    const char *a1[] = { "HGETALL", skey };
    if (vigil_redis_append(s->r, 2, a1, NULL) != 0)
        goto cleanup;
    if (input_id) {
        const char *a2[] = { "ZSCORE", ikey, input_id };
        if (vigil_redis_append(s->r, 3, a2, NULL) != 0)
            goto cleanup;
    }
    hm = vigil_redis_pipeline_get(s->r);
    if (!hm)
        goto cleanup;
    if (input_id) {
        zs = vigil_redis_pipeline_get(s->r);
        if (!zs)
            goto cleanup;
        if (zs->type == REDIS_REPLY_ERROR) { /* a data error: transient ones are NULL */
            vigil_log(VIGIL_LOG_ERROR, "store load %s: processed ids: %s", key, zs->str);
            rc = VIGIL_STORE_BAD_DATA;
            goto cleanup;
        }
        if (seen)
            *seen = zs->type != REDIS_REPLY_NIL;
    }
    if (hm->type != REDIS_REPLY_ARRAY || hm->elements % 2 != 0) {
        vigil_log(VIGIL_LOG_ERROR, "store load %s: unexpected HGETALL reply (%s)", key,
                  hm->type == REDIS_REPLY_ERROR ? hm->str : "type");
        if (hm->type == REDIS_REPLY_ERROR)
            rc = VIGIL_STORE_BAD_DATA;
        goto cleanup;
    }
    if (store_record_of(hm, version, state) != 0)
        goto cleanup;
    rc = 0;
cleanup:
    if (hm)
        vigil_redis_reply_free(hm);
    if (zs)
        vigil_redis_reply_free(zs);
    free(skey);
    free(ikey);
    return rc;
}

/* True when env is the envelope services pass, a flat object of string
 * members with no escapes, no whitespace and distinct keys, none of them
 * map_name or "ts": json-c would print it back byte for byte, so it is
 * used as it is (this runs for every snapshot of every commit). */
static bool plain_envelope(const char *env, const char *map_name)
{
    enum { MAX_KEYS = 8 };
    const char *key[MAX_KEYS];
    size_t klen[MAX_KEYS], nk = 0, mlen = strlen(map_name);
    const char *p = env;
    if (*p++ != '{')
        return false;
    if (*p == '}')
        return p[1] == '\0';
    for (;;) {
        const char *str[2];
        size_t len[2];
        for (int part = 0; part < 2; part++) { /* the key, then the value */
            if (*p++ != '"')
                return false;
            str[part] = p;
            while (*p && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
                p++;
            if (*p != '"')
                return false;
            len[part] = (size_t)(p - str[part]);
            p++;
            if (part == 0 && *p++ != ':')
                return false;
        }
        if (nk == MAX_KEYS || (len[0] == 2 && memcmp(str[0], "ts", 2) == 0) ||
            (len[0] == mlen && memcmp(str[0], map_name, mlen) == 0))
            return false;
        for (size_t i = 0; i < nk; i++)
            if (klen[i] == len[0] && memcmp(key[i], str[0], len[0]) == 0)
                return false;
        key[nk] = str[0];
        klen[nk++] = len[0];
        if (*p == '}')
            return p[1] == '\0';
        if (*p++ != ',')
            return false;
    }
}

/* The envelope as the script splices it: a compact JSON object without
 * map_name and "ts" (the script appends both, and a second copy of a key
 * would make the payload ambiguous), exactly "{}" when nothing is left. */
char *store_envelope(const char *envelope_json, const char *map_name)
{
    if (!envelope_json)
        envelope_json = "{}";
    if (plain_envelope(envelope_json, map_name))
        return strdup(envelope_json);
    json_object *env = json_tokener_parse(envelope_json);
    char *out = NULL;
    if (!env || !json_object_is_type(env, json_type_object))
        goto cleanup;
    json_object_object_del(env, map_name);
    json_object_object_del(env, "ts");
    if (json_object_object_length(env) == 0)
        out = strdup("{}");
    else
        out = strdup(json_object_to_json_string_ext(
            env, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
cleanup:
    json_object_put(env);
    return out;
}

int vigil_store_delete(vigil_store *s, const char *key)
{
    int rc = -1;
    redisReply *rep = NULL;
    char *skey = xprintf("%sstate:%s", s->base, key);
    char *ikey = xprintf("%sids:%s", s->base, key);
    char *prefix = xprintf("%s|", key);
    if (!skey || !ikey || !prefix)
        goto cleanup;
    const char *argv[] = { skey, ikey, s->timers_key, s->dues_key, prefix };
    rep = vigil_redis_eval(s->r, &s->del, 4, 5, argv, NULL);
    if (!rep)
        goto cleanup;
    if (rep->type == REDIS_REPLY_ERROR) {
        vigil_log(VIGIL_LOG_ERROR, "store delete %s: %s", key, rep->str);
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (rep)
        vigil_redis_reply_free(rep);
    free(skey);
    free(ikey);
    free(prefix);
    return rc;
}

/* Decodes "<0|1><topic>\n<payload>". An entry not in that form (written by
 * hand?) comes back with an empty topic and the raw text as payload, so
 * the count still matches the list and trim stays aligned: the publisher
 * must skip it. */
static int decode_entry(const redisReply *rep, vigil_outmsg *m)
{
    const char *p = rep->str;
    size_t len = rep->len;
    const char *nl = len > 0 ? memchr(p, '\n', len) : NULL;
    memset(m, 0, sizeof *m);
    if (!nl || (p[0] != '0' && p[0] != '1') || nl == p + 1) {
        vigil_log(VIGIL_LOG_WARN, "outbox: malformed entry (%zu bytes)", len);
        m->topic = strdup("");
        m->payload = dup_reply_str(rep);
    } else {
        size_t tl = (size_t)(nl - p - 1);
        m->retain = p[0] == '1';
        m->topic = malloc(tl + 1);
        if (m->topic) {
            memcpy(m->topic, p + 1, tl);
            m->topic[tl] = '\0';
        }
        size_t pl = len - tl - 2;
        m->payload = malloc(pl + 1);
        if (m->payload) {
            memcpy(m->payload, nl + 1, pl);
            m->payload[pl] = '\0';
        }
    }
    if (!m->topic || !m->payload) {
        free(m->topic);
        free(m->payload);
        m->topic = m->payload = NULL;
        return -1;
    }
    return 0;
}

int vigil_store_outbox_peek(vigil_store *s, int max, vigil_outmsg *out)
{
    if (max <= 0)
        return 0;
    int n = 0;
    char stop[16];
    snprintf(stop, sizeof stop, "%d", max - 1);
    const char *argv[] = { "LRANGE", s->outbox_key, "0", stop };
    redisReply *rep = vigil_redis_commandv(s->r, 4, argv, NULL);
    if (!rep)
        return -1;
    if (rep->type != REDIS_REPLY_ARRAY) {
        vigil_log(VIGIL_LOG_ERROR, "outbox peek: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        n = -1;
        goto cleanup;
    }
    for (size_t i = 0; i < rep->elements && n < max; i++) {
        if (!is_str(rep->element[i]) || decode_entry(rep->element[i], &out[n]) != 0) {
            vigil_outbox_entries_free(out, n);
            n = -1;
            goto cleanup;
        }
        n++;
    }
cleanup:
    vigil_redis_reply_free(rep);
    return n;
}

int vigil_store_outbox_trim(vigil_store *s, int n)
{
    if (n <= 0)
        return 0;
    char start[16];
    snprintf(start, sizeof start, "%d", n);
    const char *argv[] = { "LTRIM", s->outbox_key, start, "-1" };
    redisReply *rep = vigil_redis_commandv(s->r, 4, argv, NULL);
    if (!rep)
        return -1;
    int rc = rep->type == REDIS_REPLY_ERROR ? -1 : 0;
    if (rc != 0)
        vigil_log(VIGIL_LOG_ERROR, "outbox trim: %s", rep->str);
    vigil_redis_reply_free(rep);
    return rc;
}

void vigil_outbox_entries_free(vigil_outmsg *out, int n)
{
    if (!out)
        return;
    for (int i = 0; i < n; i++) {
        free(out[i].topic);
        free(out[i].payload);
        out[i].topic = out[i].payload = NULL;
    }
}
