/* store_writes.c - the writes of a commit's transaction (store_commit.c
 * runs the rounds): the record and its parts, the processed id, timers,
 * auxiliary keys, and the outbox entries, the retained snapshot payloads
 * among them, assembled here from the snapshot hash read in the first
 * round plus the commit's own changes. */
#include <stdlib.h>
#include <string.h>

#include "store_commit.h"
#include "vigil/jtext.h"
#include "vigil/limits.h"
#include "vigil/str.h"

void store_put(w2 *w, int argc, const char **argv, const size_t *lens)
{
    if (w->rc != 0)
        return;
    if (vigil_redis_append(w->s->r, argc, argv, lens) != 0)
        w->rc = -1;
    else
        w->queued++;
}

/* A field name as cjson.encode writes it (the script's snapshot payloads
 * did; kept so payloads stay byte for byte what they were): control
 * characters, '"', '\\', '/' and DEL escaped, other bytes as they are. */
static void cjson_str(vigil_jtext *b, const char *v, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    vigil_jtext_ch(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        const char *e = NULL;
        switch (ch) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '/': e = "\\/"; break;
        case '\b': e = "\\b"; break;
        case '\t': e = "\\t"; break;
        case '\n': e = "\\n"; break;
        case '\f': e = "\\f"; break;
        case '\r': e = "\\r"; break;
        default: break;
        }
        if (e) {
            vigil_jtext_lit(b, e);
        } else if (ch < 0x20 || ch == 0x7f) {
            char u[7] = { '\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15], 0 };
            vigil_jtext_lit(b, u);
        } else {
            vigil_jtext_ch(b, (char)ch);
        }
    }
    vigil_jtext_ch(b, '"');
}

/* A snapshot hash's fields while a commit changes them. */
typedef struct fieldv {
    const char *f, *v;
    size_t fl, vl;
} fieldv;

typedef struct snapmap {
    fieldv *e;
    size_t n, cap;
} snapmap;

static int map_from(snapmap *m, const redisReply *hm)
{
    m->n = 0;
    m->cap = hm->elements / 2 + 4;
    m->e = malloc(m->cap * sizeof *m->e);
    if (!m->e)
        return -1;
    for (size_t i = 0; i + 1 < hm->elements; i += 2) {
        const redisReply *f = hm->element[i], *v = hm->element[i + 1];
        if (!rep_str(f) || !rep_str(v))
            continue;
        m->e[m->n++] = (fieldv){ f->str, v->str, f->len, v->len };
    }
    return 0;
}

static int map_apply(snapmap *m, const vigil_snapshot_op *op)
{
    size_t fl = strlen(op->field);
    size_t i = 0;
    while (i < m->n && !(m->e[i].fl == fl && memcmp(m->e[i].f, op->field, fl) == 0))
        i++;
    if (!op->value_json) {
        if (i < m->n)
            m->e[i] = m->e[--m->n];
        return 0;
    }
    if (i == m->n) {
        if (m->n == m->cap) {
            fieldv *e = realloc(m->e, 2 * m->cap * sizeof *e);
            if (!e)
                return -1;
            m->e = e;
            m->cap *= 2;
        }
        m->n++;
    }
    m->e[i] = (fieldv){ op->field, op->value_json, fl, strlen(op->value_json) };
    return 0;
}

/* Byte order, a prefix first (Lua's string order in the C locale). */
static int field_cmp(const void *a, const void *b)
{
    const fieldv *x = a, *y = b;
    size_t n = x->fl < y->fl ? x->fl : y->fl;
    int c = memcmp(x->f, y->f, n);
    return c ? c : (x->fl > y->fl) - (x->fl < y->fl);
}

/* The outbox entry of a snapshot: "1" topic "\n" payload, the payload
 * being the envelope with map_name set to the hash (values spliced as
 * they are, fields sorted) and "ts" the commit time. */
static char *snapshot_entry(snapmap *m, const vigil_snapshot_op *op, int64_t now, size_t *len)
{
    char *env = store_envelope(op->envelope_json, op->map_name);
    if (!env)
        return NULL;
    qsort(m->e, m->n, sizeof *m->e, field_cmp);
    vigil_jtext b = { 0 };
    size_t est = strlen(op->topic) + strlen(env) + strlen(op->map_name) + 48;
    for (size_t i = 0; i < m->n; i++)
        est += m->e[i].fl + m->e[i].vl + 8;
    vigil_jtext_reserve(&b, est);
    vigil_jtext_ch(&b, '1');
    vigil_jtext_lit(&b, op->topic);
    vigil_jtext_ch(&b, '\n');
    size_t el = strlen(env);
    if (strcmp(env, "{}") == 0) {
        vigil_jtext_ch(&b, '{');
    } else {
        vigil_jtext_put(&b, env, el - 1);
        vigil_jtext_ch(&b, ',');
    }
    free(env);
    vigil_jtext_str(&b, op->map_name);
    vigil_jtext_lit(&b, ":{");
    for (size_t i = 0; i < m->n; i++) {
        if (i)
            vigil_jtext_ch(&b, ',');
        cjson_str(&b, m->e[i].f, m->e[i].fl);
        vigil_jtext_ch(&b, ':');
        vigil_jtext_put(&b, m->e[i].v, m->e[i].vl);
    }
    vigil_jtext_lit(&b, "},\"ts\":");
    vigil_jtext_i64(&b, now);
    vigil_jtext_ch(&b, '}');
    *len = b.n;
    return vigil_jtext_take(&b);
}

/* The outbox entries a commit appends, in the script's order: flushed
 * queue items, the outputs, the snapshots. */
typedef struct entries {
    const char **v;
    size_t *len;
    char **owned;
    size_t n, n_owned, cap;
} entries;

static int entry_add(entries *e, const char *v, size_t len, bool owned)
{
    if (!v)
        return -1;
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        const char **nv = realloc(e->v, (cap + 2) * sizeof *nv);
        if (nv)
            e->v = nv;
        size_t *nl = realloc(e->len, (cap + 2) * sizeof *nl);
        if (nl)
            e->len = nl;
        char **no = realloc(e->owned, cap * sizeof *no);
        if (no)
            e->owned = no;
        if (!nv || !nl || !no)
            return -1;
        e->cap = cap;
    }
    e->v[2 + e->n] = v; /* [0], [1]: RPUSH and the key */
    e->len[2 + e->n] = len;
    e->n++;
    if (owned)
        e->owned[e->n_owned++] = (char *)v;
    return 0;
}

static void entries_free(entries *e)
{
    for (size_t i = 0; i < e->n_owned; i++)
        free(e->owned[i]);
    free(e->v);
    free(e->len);
    free(e->owned);
}

static char *out_entry(const vigil_outmsg *m, size_t *len)
{
    size_t tl = strlen(m->topic), pl = strlen(m->payload);
    char *e = malloc(tl + pl + 3);
    if (!e)
        return NULL;
    e[0] = m->retain ? '1' : '0';
    memcpy(e + 1, m->topic, tl);
    e[1 + tl] = '\n';
    memcpy(e + 2 + tl, m->payload, pl + 1);
    *len = tl + pl + 2;
    return e;
}

/* The lease completion (what the commit script called complete_lease). */
void store_write_lease(w2 *w, const pend *p)
{
    if (!p->lease_hit)
        return;
    const char *z[] = { "ZREM", w->s->timers_key, p->c->leased_timer };
    store_put(w, 3, z, NULL);
    const char *h[] = { "HDEL", w->s->dues_key, p->c->leased_timer };
    store_put(w, 3, h, NULL);
}

/* Queues an OK commit's writes, in the script's order. */
void store_write_commit(w2 *w, pend *p)
{
    vigil_store *s = w->s;
    const vigil_commit *c = p->c;
    const vigil_effects *fx = c->fx;
    size_t ns = fx ? fx->n_snaps : 0, na = fx ? fx->n_aux : 0;
    char num[4][VIGIL_I64_TEXT_MAX + 1];
    vigil_i64_text(num[0], c->now_ms);
    if (fx && fx->new_state) {
        p->version++;
        vigil_i64_text(num[1], p->version);
        const char *a[] = { "HSET", p->skey, "v", num[1], "s", fx->new_state };
        store_put(w, 6, a, NULL);
    }
    if (c->input_id && *c->input_id) {
        const char *z[] = { "ZADD", p->ikey, num[0], c->input_id };
        store_put(w, 4, z, NULL);
        vigil_i64_text(num[2], -(int64_t)s->dedupe_keep - 1);
        const char *t[] = { "ZREMRANGEBYRANK", p->ikey, "0", num[2] };
        store_put(w, 4, t, NULL);
    }
    store_write_lease(w, p);
    for (size_t j = 0; fx && j < fx->n_timers; j++) {
        const vigil_timer_op *t = &fx->timers[j];
        size_t ml = strlen(c->key) + 1 + strlen(t->name) + 1;
        char *member = malloc(ml);
        if (!member) {
            w->rc = -1;
            return;
        }
        vigil_concat(member, ml, c->key, "|", t->name, (char *)NULL);
        if (t->due_ms == VIGIL_TIMER_CANCEL) {
            const char *z[] = { "ZREM", s->timers_key, member };
            store_put(w, 3, z, NULL);
        } else {
            vigil_i64_text(num[1], t->due_ms);
            const char *z[] = { "ZADD", s->timers_key, num[1], member };
            store_put(w, 4, z, NULL);
        }
        const char *h[] = { "HDEL", s->dues_key, member };
        store_put(w, 3, h, NULL);
        free(member);
    }
    entries e = { 0 };
    for (size_t j = 0; j < na && w->rc == 0; j++) {
        const vigil_aux_op *op = &fx->aux[j];
        const char *key = p->aux_keys[j];
        const char *val = op->value ? op->value : "";
        switch (op->kind) {
        case VIGIL_AUX_STREAM_ADD:
        case VIGIL_AUX_JOB_ADD: {
            bool job = op->kind == VIGIL_AUX_JOB_ADD;
            const char *xl[] = { "XLEN", key };
            if (job) {
                p->xlen_at[j] = w->queued - w->base;
                store_put(w, 2, xl, NULL);
            }
            vigil_i64_text(num[1], op->n1);
            if (op->n1 > 0) {
                const char *x[] = { "XADD", key, "MAXLEN", "~", num[1], "*", "m", val };
                store_put(w, 8, x, NULL);
            } else {
                const char *x[] = { "XADD", key, "*", "m", val };
                store_put(w, 5, x, NULL);
            }
            if (op->n2 > 0 && c->now_ms - op->n2 > 0) {
                vigil_i64_text(num[2], c->now_ms - op->n2);
                const char *x[] = { "XTRIM", key, "MINID", num[2] };
                store_put(w, 4, x, NULL);
            }
            if (job)
                store_put(w, 2, xl, NULL);
            break;
        }
        case VIGIL_AUX_QUEUE_PUSH: {
            const char *a[] = { "RPUSH", key, val };
            store_put(w, 3, a, NULL);
            break;
        }
        case VIGIL_AUX_QUEUE_FLUSH: {
            const redisReply *items = p->queue_rep[j];
            for (size_t k = 0; items && k < items->elements && w->rc == 0; k++)
                if (rep_str(items->element[k]) &&
                    entry_add(&e, items->element[k]->str, items->element[k]->len, false) != 0)
                    w->rc = -1;
            const char *a[] = { "DEL", key };
            store_put(w, 2, a, NULL);
            break;
        }
        case VIGIL_AUX_KEY_SET: {
            const char *a[] = { "SET", key, val };
            store_put(w, 3, a, NULL);
            break;
        }
        case VIGIL_AUX_KEY_DELETE: {
            const char *a[] = { "DEL", key };
            store_put(w, 2, a, NULL);
            break;
        }
        case VIGIL_AUX_SET_ADD:
        case VIGIL_AUX_SET_REMOVE: {
            const char *a[] = { op->kind == VIGIL_AUX_SET_ADD ? "SADD" : "SREM", key, val };
            store_put(w, 3, a, NULL);
            break;
        }
        }
    }
    for (size_t j = 0; fx && j < fx->n_out && w->rc == 0; j++) {
        size_t len = 0;
        char *entry = out_entry(&fx->out[j], &len);
        if (entry_add(&e, entry, len, true) != 0) {
            free(entry);
            w->rc = -1;
        }
    }
    snapmap *maps = ns ? calloc(ns, sizeof *maps) : NULL;
    if (ns && !maps)
        w->rc = -1;
    for (size_t j = 0; j < ns && w->rc == 0; j++) {
        const vigil_snapshot_op *op = &fx->snaps[j];
        int src = p->snap_src[j];
        if (src == (int)j && map_from(&maps[j], p->snap_rep[j]) != 0) {
            w->rc = -1;
            break;
        }
        if (op->value_json) {
            const char *a[] = { "HSET", p->snap_keys[j], op->field, op->value_json };
            store_put(w, 4, a, NULL);
        } else {
            const char *a[] = { "HDEL", p->snap_keys[j], op->field };
            store_put(w, 3, a, NULL);
        }
        size_t len = 0;
        char *entry = map_apply(&maps[src], op) == 0
                          ? snapshot_entry(&maps[src], op, c->now_ms, &len)
                          : NULL;
        if (entry_add(&e, entry, len, true) != 0) {
            free(entry);
            w->rc = -1;
        }
    }
    for (size_t j = 0; j < ns; j++)
        free(maps[j].e);
    free(maps);
    if (fx && fx->parts_reset && p->part_rep) {
        for (size_t k = 0; k < p->part_rep->elements; k++) {
            const redisReply *f = p->part_rep->element[k];
            if (!rep_str(f) || f->len < 2 || memcmp(f->str, "p:", 2) != 0)
                continue;
            const char *a[] = { "HDEL", p->skey, f->str };
            size_t l[] = { 4, strlen(p->skey), f->len };
            store_put(w, 3, a, l);
        }
    }
    for (size_t j = 0; fx && j < fx->n_parts; j++) {
        const vigil_state_part *pt = &fx->parts[j];
        size_t fl = strlen(pt->name) + 3;
        char *field = malloc(fl);
        if (!field) {
            w->rc = -1;
            break;
        }
        vigil_concat(field, fl, "p:", pt->name, (char *)NULL);
        if (pt->text) {
            const char *a[] = { "HSET", p->skey, field, pt->text };
            store_put(w, 4, a, NULL);
        } else {
            const char *a[] = { "HDEL", p->skey, field };
            store_put(w, 3, a, NULL);
        }
        free(field);
    }
    if (e.n > 0 && w->rc == 0) {
        e.v[0] = "RPUSH";
        e.len[0] = 5;
        e.v[1] = s->outbox_key;
        e.len[1] = strlen(s->outbox_key);
        store_put(w, (int)e.n + 2, e.v, e.len);
    }
    entries_free(&e);
}

/* Job stream adds whose cap trimmed entries: counted and said under the
 * op's label (entries that will never run). */
void store_note_trims(const pend *p, const redisReply *exec)
{
    const vigil_effects *fx = p->c->fx;
    for (size_t j = 0; fx && j < fx->n_aux; j++) {
        int at = p->xlen_at[j];
        if (at < 0 || (size_t)at + 1 >= exec->elements)
            continue;
        const redisReply *before = exec->element[at];
        size_t after_at = (size_t)at + 2 + (fx->aux[j].n2 > 0 && p->c->now_ms - fx->aux[j].n2 > 0);
        if (after_at >= exec->elements)
            continue;
        const redisReply *after = exec->element[after_at];
        if (before->type != REDIS_REPLY_INTEGER || after->type != REDIS_REPLY_INTEGER)
            continue;
        long long gone = before->integer + 1 - after->integer;
        if (gone > 0)
            vigil_stream_trim_note(fx->aux[j].label, p->aux_keys[j], fx->aux[j].n1, gone);
    }
}

