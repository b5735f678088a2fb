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
    int n = snprintf(s->base, sizeof s->base, "%s%s:", prefix, service);
    if (n < 0 || (size_t)n >= sizeof s->base) {
        free(s);
        return NULL;
    }
    snprintf(s->outbox_key, sizeof s->outbox_key, "%soutbox:%d", s->base, s->shard_index);
    snprintf(s->timers_key, sizeof s->timers_key, "%stimers:%d", s->base, s->shard_index);
    snprintf(s->dues_key, sizeof s->dues_key, "%s:due", s->timers_key);
    s->commit = (vigil_script)VIGIL_SCRIPT(VIGIL_LUA_COMMIT);
    s->check = (vigil_script)VIGIL_SCRIPT(VIGIL_LUA_CHECK);
    s->del = (vigil_script)VIGIL_SCRIPT(VIGIL_LUA_DELETE);
    s->claim = (vigil_script)VIGIL_SCRIPT(VIGIL_LUA_CLAIM);
    return s;
}

void vigil_store_free(vigil_store *s)
{
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
    const redisReply *v = NULL, *st = NULL;
    for (size_t i = 0; i + 1 < hm->elements; i += 2) {
        const redisReply *f = hm->element[i];
        if (is_str(f) && f->len == 1 && f->str[0] == 'v')
            v = hm->element[i + 1];
        else if (is_str(f) && f->len == 1 && f->str[0] == 's')
            st = hm->element[i + 1];
    }
    if (is_str(st)) {
        *state = whole_record(hm, st);
        if (!*state)
            goto cleanup;
        *version = reply_int64(v);
    }
    rc = 0;
cleanup:
    if (hm)
        freeReplyObject(hm);
    if (zs)
        freeReplyObject(zs);
    free(skey);
    free(ikey);
    return rc;
}

/* Everything the commit script needs as argument strings. The arrays are
 * sized once; `owned` collects what was allocated here; the short strings
 * (keys, numbers, timer members) are written one after another into one
 * block, `arena`, sized up front: a malloc and a printf for each of them
 * were a visible part of every commit. */
typedef struct commit_args {
    const char **argv;
    size_t *argvlen;
    int argc;
    char **owned;
    int n_owned;
    char *arena;
    size_t arena_n, arena_cap;
} commit_args;

static const char *own(commit_args *a, char *p)
{
    if (p)
        a->owned[a->n_owned++] = p;
    return p;
}

static int push(commit_args *a, const char *p, size_t len)
{
    if (!p)
        return -1;
    a->argv[a->argc] = p;
    a->argvlen[a->argc] = len;
    a->argc++;
    return 0;
}

/* Pushes x, sep and y joined (sep and y may be NULL), written in the arena. */
static int push_cat(commit_args *a, const char *x, const char *sep, const char *y)
{
    sep = sep ? sep : "";
    y = y ? y : "";
    size_t lx = strlen(x), ls = strlen(sep), ly = strlen(y);
    if (a->arena_n + lx + ls + ly + 1 > a->arena_cap)
        return -1; /* cannot happen: sized for every argument up front */
    char *p = a->arena + a->arena_n;
    memcpy(p, x, lx);
    memcpy(p + lx, sep, ls);
    memcpy(p + lx + ls, y, ly);
    p[lx + ls + ly] = '\0';
    a->arena_n += lx + ls + ly + 1;
    return push(a, p, lx + ls + ly);
}

static int push_i64(commit_args *a, int64_t v)
{
    if (a->arena_n + VIGIL_I64_TEXT_MAX + 1 > a->arena_cap)
        return -1; /* cannot happen: sized for every argument up front */
    char *p = a->arena + a->arena_n;
    size_t len = vigil_i64_text(p, v);
    a->arena_n += len + 1;
    return push(a, p, len);
}

static int push_str(commit_args *a, const char *p)
{
    return push(a, p, p ? strlen(p) : 0);
}

static int push_owned(commit_args *a, char *p)
{
    return push_str(a, own(a, p));
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
static char *normalize_envelope(const char *envelope_json, const char *map_name)
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

/* s as a JSON string (jtext writes it as json-c would). */
static char *json_quote(const char *s)
{
    vigil_jtext b = { 0 };
    vigil_jtext_str(&b, s);
    return vigil_jtext_take(&b);
}

/* Builds KEYS and ARGV of VIGIL_LUA_COMMIT:
 *   KEYS  state, ids, outbox, timers, timer dues, one snapshot hash per snapshot op,
 *         one key per auxiliary op
 *   ARGV  1 expected version, 2 input id or "", 3 now, 4 "1"/"0" new state,
 *         5 state JSON, 6 dedupe_keep, 7 leased member or "", 8 leased score,
 *         9 n_timers, 10 n_out, 11 n_snaps, 12 n_aux, then per timer (member,
 *         due or "" to cancel), per auxiliary op (kind, value, n1, n2), per
 *         output the outbox entry, per snapshot (field, "s"/"d", value, topic,
 *         normalized envelope, JSON-quoted map name).
 * ARGV 13 n_parts and 14 "1"/"0" parts reset come before the timers, and
 * each part (field "p:" name, text or "" to delete it) after the snapshots. */
static int build_commit_args(vigil_store *s, const vigil_commit *c, commit_args *a)
{
    const vigil_effects *fx = c->fx;
    size_t nt = fx ? fx->n_timers : 0, no = fx ? fx->n_out : 0, ns = fx ? fx->n_snaps : 0;
    size_t na = fx ? fx->n_aux : 0, np = fx ? fx->n_parts : 0;
    size_t total = 5 + ns + na + 14 + 2 * nt + 4 * na + no + 6 * ns + 2 * np;
    size_t base = strlen(s->base), key = strlen(c->key);
    size_t arena = 2 * (base + key + 8) + (9 + nt + 2 * na) * (VIGIL_I64_TEXT_MAX + 1);
    for (size_t j = 0; j < np; j++)
        arena += 2 + strlen(fx->parts[j].name) + 1;
    for (size_t j = 0; j < ns; j++)
        arena += base + strlen(fx->snaps[j].hash) + 1;
    for (size_t j = 0; j < na; j++)
        arena += base + strlen(fx->aux[j].name) + 1;
    for (size_t j = 0; j < nt; j++)
        arena += key + 1 + strlen(fx->timers[j].name) + 1;
    a->argv = calloc(total, sizeof *a->argv);
    a->argvlen = calloc(total, sizeof *a->argvlen);
    a->owned = calloc(total, sizeof *a->owned);
    a->arena = malloc(arena);
    a->arena_cap = arena;
    if (!a->argv || !a->argvlen || !a->owned || !a->arena)
        return -1;

    int rc = 0;
    rc |= push_cat(a, s->base, "state:", c->key);
    rc |= push_cat(a, s->base, "ids:", c->key);
    rc |= push_str(a, s->outbox_key);
    rc |= push_str(a, s->timers_key);
    rc |= push_str(a, s->dues_key);
    for (size_t j = 0; j < ns; j++)
        rc |= push_cat(a, s->base, NULL, fx->snaps[j].hash);
    for (size_t j = 0; j < na; j++)
        rc |= push_cat(a, s->base, NULL, fx->aux[j].name);

    rc |= push_i64(a, c->expected_version);
    rc |= push_str(a, c->input_id ? c->input_id : "");
    rc |= push_i64(a, c->now_ms);
    rc |= push_str(a, fx && fx->new_state ? "1" : "0");
    rc |= push_str(a, fx && fx->new_state ? fx->new_state : "");
    rc |= push_i64(a, s->dedupe_keep);
    rc |= push_str(a, c->leased_timer ? c->leased_timer : "");
    rc |= push_i64(a, c->leased_score);
    rc |= push_i64(a, (int64_t)nt);
    rc |= push_i64(a, (int64_t)no);
    rc |= push_i64(a, (int64_t)ns);
    rc |= push_i64(a, (int64_t)na);
    rc |= push_i64(a, (int64_t)np);
    rc |= push_str(a, fx && fx->parts_reset ? "1" : "0");
    for (size_t j = 0; j < nt && rc == 0; j++) {
        const vigil_timer_op *t = &fx->timers[j];
        rc |= push_cat(a, c->key, "|", t->name);
        if (t->due_ms == VIGIL_TIMER_CANCEL)
            rc |= push_str(a, "");
        else
            rc |= push_i64(a, t->due_ms);
    }
    static const char *const aux_names[] = { "xadd", "qpush", "qflush", "set", "del", "sadd", "srem",
                                             "xjob" };
    _Static_assert(sizeof aux_names / sizeof *aux_names == VIGIL_AUX_JOB_ADD + 1,
                   "a script name per auxiliary kind");
    for (size_t j = 0; j < na && rc == 0; j++) {
        const vigil_aux_op *op = &fx->aux[j];
        rc |= push_str(a, aux_names[op->kind]);
        rc |= push_str(a, op->value ? op->value : "");
        rc |= push_i64(a, op->n1);
        rc |= push_i64(a, op->n2);
    }
    for (size_t j = 0; j < no && rc == 0; j++) {
        const vigil_outmsg *m = &fx->out[j];
        size_t tl = strlen(m->topic), pl = strlen(m->payload);
        char *e = malloc(1 + tl + 1 + pl + 1);
        if (e) {
            e[0] = m->retain ? '1' : '0';
            memcpy(e + 1, m->topic, tl);
            e[1 + tl] = '\n';
            memcpy(e + 2 + tl, m->payload, pl + 1);
        }
        rc |= push(a, own(a, e), 2 + tl + pl);
    }
    for (size_t j = 0; j < ns && rc == 0; j++) {
        const vigil_snapshot_op *op = &fx->snaps[j];
        rc |= push_str(a, op->field);
        rc |= push_str(a, op->value_json ? "s" : "d");
        rc |= push_str(a, op->value_json ? op->value_json : "");
        rc |= push_str(a, op->topic);
        rc |= push_owned(a, normalize_envelope(op->envelope_json, op->map_name));
        rc |= push_owned(a, json_quote(op->map_name));
    }
    for (size_t j = 0; j < np && rc == 0; j++) {
        rc |= push_cat(a, "p:", NULL, fx->parts[j].name);
        rc |= push_str(a, fx->parts[j].text ? fx->parts[j].text : "");
    }
    return rc == 0 ? 0 : -1;
}

/* The pairs after {"OK", v} in a commit's reply: job stream adds whose cap
 * trimmed entries (auxiliary op k from 1, how many). Each is counted and
 * said under the op's label; a pair that names no job add (a script and a
 * library of different versions?) is logged and skipped. */
static void note_trims(const vigil_store *s, const vigil_commit *c, const redisReply *rep)
{
    const vigil_effects *fx = c->fx;
    for (size_t e = 2; e + 1 < rep->elements; e += 2) {
        int64_t k = reply_int64(rep->element[e]), n = reply_int64(rep->element[e + 1]);
        if (!fx || k < 1 || (size_t)k > fx->n_aux || fx->aux[k - 1].kind != VIGIL_AUX_JOB_ADD ||
            n <= 0) {
            vigil_log(VIGIL_LOG_ERROR, "store commit %s: unexpected trim report %" PRId64 " %" PRId64,
                      c->key, k, n);
            continue;
        }
        const vigil_aux_op *op = &fx->aux[k - 1];
        char key[512];
        snprintf(key, sizeof key, "%s%s", s->base, op->name);
        vigil_stream_trim_note(op->label, key, op->n1, n);
    }
}

static void commit_args_free(commit_args *a)
{
    for (int i = 0; i < a->n_owned; i++)
        free(a->owned[i]);
    free(a->owned);
    free(a->argv);
    free(a->argvlen);
    free(a->arena);
}

/* Reads a commit script's reply (rep may be NULL: no reply). */
static vigil_commit_result commit_reply(vigil_store *s, const vigil_commit *c,
                                        const redisReply *rep, int64_t *new_version,
                                        char **cur_state)
{
    vigil_commit_result res = VIGIL_COMMIT_ERROR;
    if (!rep)
        return res;
    if (rep->type == REDIS_REPLY_ERROR) {
        /* Transient error replies came back as NULL (vigil_redis_error_
         * transient): this one concerns the data, and the script checked
         * it before writing anything. */
        vigil_log(VIGIL_LOG_ERROR, "store commit %s: %s", c->key, rep->str);
        return VIGIL_COMMIT_BAD_DATA;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 || !is_str(rep->element[0])) {
        vigil_log(VIGIL_LOG_ERROR, "store commit %s: unexpected reply", c->key);
        return res;
    }
    const char *status = rep->element[0]->str;
    if (strcmp(status, "DUPLICATE") == 0) {
        res = VIGIL_COMMIT_DUPLICATE;
    } else if (strcmp(status, "OK") == 0 && rep->elements >= 2) {
        if (new_version)
            *new_version = reply_int64(rep->element[1]);
        note_trims(s, c, rep);
        res = VIGIL_COMMIT_OK;
    } else if (strcmp(status, "CONFLICT") == 0 && rep->elements >= 2) {
        if (new_version)
            *new_version = reply_int64(rep->element[1]);
        if (cur_state && rep->elements >= 3 && is_str(rep->element[2])) {
            *cur_state = dup_reply_str(rep->element[2]);
            if (!*cur_state)
                return VIGIL_COMMIT_ERROR; /* the caller retries */
        }
        res = VIGIL_COMMIT_CONFLICT;
    } else {
        vigil_log(VIGIL_LOG_ERROR, "store commit %s: unexpected status %s", c->key, status);
    }
    return res;
}

/* The commit's arguments, or -1 (logged). */
static int commit_args_of(vigil_store *s, const vigil_commit *c, commit_args *a)
{
    if (!c || !c->key || !*c->key) {
        vigil_log(VIGIL_LOG_ERROR, "store commit: no key");
        return -1;
    }
    if (build_commit_args(s, c, a) != 0) {
        vigil_log(VIGIL_LOG_ERROR, "store commit %s: cannot build arguments", c->key);
        return -1;
    }
    return 0;
}

static int commit_nkeys(const vigil_commit *c)
{
    return 5 + (int)(c->fx ? c->fx->n_snaps + c->fx->n_aux : 0);
}

/* Runs the commit script, or its check-only twin, and reads the reply. */
static vigil_commit_result run_commit(vigil_store *s, vigil_script *script, const vigil_commit *c,
                                      int64_t *new_version, char **cur_state)
{
    vigil_commit_result res = VIGIL_COMMIT_ERROR;
    commit_args a = { 0 };
    if (cur_state)
        *cur_state = NULL;
    if (commit_args_of(s, c, &a) == 0) {
        redisReply *rep = vigil_redis_eval(s->r, script, commit_nkeys(c), a.argc, a.argv,
                                           a.argvlen);
        res = commit_reply(s, c, rep, new_version, cur_state);
        if (rep)
            freeReplyObject(rep);
    }
    commit_args_free(&a);
    return res;
}

vigil_commit_result vigil_store_commit(vigil_store *s, const vigil_commit *c,
                                       int64_t *new_version, char **cur_state)
{
    return run_commit(s, &s->commit, c, new_version, cur_state);
}

vigil_commit_result vigil_store_check(vigil_store *s, const vigil_commit *c,
                                      int64_t *new_version, char **cur_state)
{
    return run_commit(s, &s->check, c, new_version, cur_state);
}

int vigil_store_commit_send(vigil_store *s, const vigil_commit *c)
{
    commit_args a = { 0 };
    int rc = commit_args_of(s, c, &a);
    if (rc == 0)
        rc = vigil_redis_eval_append(s->r, &s->commit, commit_nkeys(c), a.argc, a.argv,
                                     a.argvlen);
    commit_args_free(&a);
    return rc;
}

vigil_commit_result vigil_store_commit_recv(vigil_store *s, const vigil_commit *c,
                                            int64_t *new_version, char **cur_state)
{
    if (cur_state)
        *cur_state = NULL;
    redisReply *rep = vigil_redis_pipeline_get(s->r);
    vigil_commit_result res = VIGIL_COMMIT_ERROR;
    if (rep && rep->type == REDIS_REPLY_ERROR) {
        /* NOSCRIPT (Redis restarted) or a data error: left to the caller's
         * unpipelined retry, which loads the script and says which */
        if (rep->str && strncmp(rep->str, "NOSCRIPT", 8) == 0)
            vigil_redis_script_forget(&s->commit);
    } else {
        res = commit_reply(s, c, rep, new_version, cur_state);
    }
    if (rep)
        freeReplyObject(rep);
    return res;
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
        freeReplyObject(rep);
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
    freeReplyObject(rep);
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
    freeReplyObject(rep);
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
