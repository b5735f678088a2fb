/* effects.c - the effect list a decision core fills for one input.
 * See effects.h. Every string is copied, so a core may build its strings
 * in stack buffers. The copies (all but the state text, which the runtime
 * hands on to its cache) go into a few blocks owned by the effects: an
 * input's effects made about twenty small allocations and as many frees,
 * a tenth of what the service spent on the input outside its own code. */
#include "vigil/effects.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/json.h"
#include "vigil/str.h"
#include "vigil/jtext.h"

/* The first block's size: one dormancy input's strings (three messages, a
 * snapshot, timers, a part) fit, so most inputs make one allocation. */
#define FX_BLOCK_FIRST 4096
/* The ops arrays' first room, in elements, taken from the blocks (grow). */
#define ARRAY_FIRST 4
#define ARRAY_ALIGN 8
enum { ARR_PARTS = 1, ARR_OUT = 2, ARR_TIMERS = 4, ARR_SNAPS = 8, ARR_AUX = 16 };

struct vigil_fx_block {
    struct vigil_fx_block *next;
    size_t cap, used;
    char data[];
};

/* First-size blocks kept from earlier inputs' effects for the next ones:
 * a 4 KB request is above glibc's per-thread cache, so each input's
 * block went through the shared bins, about 1,000 instructions to take
 * it and 500 to give it back (callgrind). The runtime frees an input's
 * effects only once its commit is answered, while the next inputs of a
 * pipelined run fill theirs: one kept block was taken again for one
 * input in thirty, sixteen for one in two, sixty-four for all but 32 of
 * 6,000 (scripts/bench-instructions). Each slot is a pointer swapped
 * atomically (the intake, timers and replays each fill effects). A block
 * given back when every slot is full is freed as before; the slots hold
 * 256 KB at most, kept after a burst. */
#define SPARE_SLOTS 64
static _Atomic(struct vigil_fx_block *) spare_blocks[SPARE_SLOTS];

static struct vigil_fx_block *block_take(size_t cap)
{
    if (cap == FX_BLOCK_FIRST)
        for (int i = 0; i < SPARE_SLOTS; i++) {
            if (!atomic_load_explicit(&spare_blocks[i], memory_order_relaxed))
                continue;
            struct vigil_fx_block *b =
                atomic_exchange_explicit(&spare_blocks[i], NULL, memory_order_acquire);
            if (b)
                return b;
        }
    return malloc(sizeof(struct vigil_fx_block) + cap);
}

static void block_give(struct vigil_fx_block *b)
{
    if (b->cap == FX_BLOCK_FIRST)
        for (int i = 0; i < SPARE_SLOTS; i++) {
            struct vigil_fx_block *none = NULL;
            if (!atomic_load_explicit(&spare_blocks[i], memory_order_relaxed) &&
                atomic_compare_exchange_strong_explicit(&spare_blocks[i], &none, b,
                                                        memory_order_release,
                                                        memory_order_relaxed))
                return;
        }
    free(b);
}

void vigil_effects_init(vigil_effects *fx)
{
    memset(fx, 0, sizeof *fx);
}

void vigil_effects_free(vigil_effects *fx)
{
    if (!fx)
        return;
    free(fx->new_state);
    unsigned in_block = fx->arrays_in_block;
    if (!(in_block & ARR_OUT))
        free(fx->out);
    if (!(in_block & ARR_TIMERS))
        free(fx->timers);
    if (!(in_block & ARR_SNAPS))
        free(fx->snaps);
    if (!(in_block & ARR_AUX))
        free(fx->aux);
    if (!(in_block & ARR_PARTS))
        free(fx->parts);
    for (struct vigil_fx_block *b = fx->blocks, *next; b; b = next) {
        next = b->next;
        block_give(b);
    }
    vigil_effects_init(fx);
}

/* n bytes in the effects' blocks, or NULL when out of memory. The newest
 * block is the first; a string larger than half a new block gets a block
 * of its own, put behind the first so the first's room stays in use. */
static char *fx_room(vigil_effects *fx, size_t n)
{
    struct vigil_fx_block *b = fx->blocks;
    if (b && b->cap - b->used >= n) {
        char *p = b->data + b->used;
        b->used += n;
        return p;
    }
    size_t cap = b ? b->cap * 2 : FX_BLOCK_FIRST;
    bool own = n > cap / 2;
    if (own)
        cap = n;
    struct vigil_fx_block *nb = block_take(cap);
    if (!nb)
        return NULL;
    nb->cap = cap;
    nb->used = n;
    if (own && b) {
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        fx->blocks = nb;
    }
    return nb->data;
}

/* A copy of s (NULL stays NULL) in the effects' blocks; *failed is set when
 * out of memory, so a caller can copy several strings and check once. */
static char *fx_copy(vigil_effects *fx, const char *s, bool *failed)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = fx_room(fx, n);
    if (!p) {
        *failed = true;
        return NULL;
    }
    memcpy(p, s, n);
    return p;
}

void vigil_effects_reset(vigil_effects *fx)
{
    vigil_effects_free(fx);
}

/* Makes room for one more element in a growable array (doubling), so the
 * five arrays share one growth rule. The first room (ARRAY_FIRST
 * elements) comes from the effects' blocks: five arrays grown from
 * nothing cost each input five reallocations and five frees. An array
 * still in its block room is marked in fx->arrays_in_block (bit) and is
 * never given to realloc or free. */
static int grow(vigil_effects *fx, unsigned bit, void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    if (*cap == 0) {
        /* the ops hold pointers and int64s: 8-byte aligned, a few bytes
         * more taken to round the start up */
        char *p = fx_room(fx, ARRAY_FIRST * elem + ARRAY_ALIGN - 1);
        if (!p)
            return -1;
        *arr = (void *)(((uintptr_t)p + ARRAY_ALIGN - 1) & ~(uintptr_t)(ARRAY_ALIGN - 1));
        *cap = ARRAY_FIRST;
        fx->arrays_in_block |= bit;
        return 0;
    }
    size_t ncap = *cap * 2;
    void *p;
    if (fx->arrays_in_block & bit) {
        p = malloc(ncap * elem);
        if (p)
            memcpy(p, *arr, n * elem);
    } else {
        p = realloc(*arr, ncap * elem);
    }
    if (!p)
        return -1;
    fx->arrays_in_block &= ~bit;
    *arr = p;
    *cap = ncap;
    return 0;
}

int vigil_fx_set_state(vigil_effects *fx, const char *state_json)
{
    char *copy = strdup(state_json ? state_json : "null");
    if (!copy)
        return -1;
    free(fx->new_state);
    fx->new_state = copy;
    return 0;
}

int vigil_fx_state_part(vigil_effects *fx, const char *name, const char *text)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 64 || (text && text[0] != '{'))
        return -1;
    if (grow(fx, ARR_PARTS, (void **)&fx->parts, &fx->cap_parts, fx->n_parts, sizeof *fx->parts) != 0)
        return -1;
    bool failed = false;
    vigil_state_part p = { fx_copy(fx, name, &failed), fx_copy(fx, text, &failed) };
    if (failed)
        return -1;
    fx->parts[fx->n_parts++] = p;
    return 0;
}

void vigil_fx_state_parts_reset(vigil_effects *fx)
{
    fx->parts_reset = true;
}

/* The outbox stores "<flag><topic>\n<payload>", so a topic containing a
 * newline could not be decoded again: refuse it here, at the source. */
int vigil_fx_publish(vigil_effects *fx, const char *topic, const char *payload, bool retain)
{
    if (!topic || !*topic || strchr(topic, '\n'))
        return -1;
    if (grow(fx, ARR_OUT, (void **)&fx->out, &fx->cap_out, fx->n_out, sizeof *fx->out) != 0)
        return -1;
    bool failed = false;
    vigil_outmsg m = { fx_copy(fx, topic, &failed), fx_copy(fx, payload ? payload : "", &failed),
                       retain };
    if (failed)
        return -1;
    fx->out[fx->n_out++] = m;
    return 0;
}

int vigil_fx_publish_json(vigil_effects *fx, const char *topic, json_object *obj, bool retain)
{
    char *text = vigil_json_dump(obj);
    if (!text)
        return -1;
    int rc = vigil_fx_publish(fx, topic, text, retain);
    free(text);
    return rc;
}

/* Timer names end up in members "<key>|<name>" split at the last '|', so
 * a name must not contain '|', and must fit vigil_timer_claim.name. */
static int timer_op(vigil_effects *fx, const char *name, int64_t due_ms)
{
    if (!name || !*name || strchr(name, '|') || strlen(name) >= 64)
        return -1;
    if (grow(fx, ARR_TIMERS, (void **)&fx->timers, &fx->cap_timers, fx->n_timers, sizeof *fx->timers) != 0)
        return -1;
    bool failed = false;
    char *copy = fx_copy(fx, name, &failed);
    if (failed)
        return -1;
    fx->timers[fx->n_timers].name = copy;
    fx->timers[fx->n_timers].due_ms = due_ms;
    fx->n_timers++;
    return 0;
}

int vigil_fx_timer_set(vigil_effects *fx, const char *name, int64_t due_ms)
{
    if (due_ms == VIGIL_TIMER_CANCEL)
        return -1;
    return timer_op(fx, name, due_ms);
}

int vigil_fx_timer_cancel(vigil_effects *fx, const char *name)
{
    return timer_op(fx, name, VIGIL_TIMER_CANCEL);
}

/* True when text is one strict JSON value (object only if want_object).
 * The commit splices snapshot values into a retained payload verbatim, so
 * a bad value would poison every later snapshot of the hash. A syntax
 * pass, not a parse: this runs on every snapshot of every input. */
static bool json_valid(const char *text, bool want_object)
{
    return vigil_json_valid(text, strlen(text), want_object);
}

/* check: whether the JSON texts are checked here (vigil_fx_snapshot) or
 * were rendered by the caller's own code (vigil_fx_snapshot_rendered). */
static int snapshot_add(vigil_effects *fx, const char *hash, const char *field,
                        const char *value_json, const char *topic, const char *envelope_json,
                        const char *map_name, bool check)
{
    if (!hash || !*hash || !field || !topic || !*topic || strchr(topic, '\n') || !map_name ||
        !*map_name)
        return -1;
    if (!envelope_json)
        envelope_json = "{}";
    if (check &&
        (!json_valid(envelope_json, true) || (value_json && !json_valid(value_json, false))))
        return -1;
    if (grow(fx, ARR_SNAPS, (void **)&fx->snaps, &fx->cap_snaps, fx->n_snaps, sizeof *fx->snaps) != 0)
        return -1;
    bool failed = false;
    vigil_snapshot_op op = {
        .hash = fx_copy(fx, hash, &failed),
        .field = fx_copy(fx, field, &failed),
        .value_json = fx_copy(fx, value_json, &failed),
        .topic = fx_copy(fx, topic, &failed),
        .envelope_json = fx_copy(fx, envelope_json, &failed),
        .map_name = fx_copy(fx, map_name, &failed),
    };
    if (failed)
        return -1;
    fx->snaps[fx->n_snaps++] = op;
    return 0;
}

int vigil_fx_snapshot(vigil_effects *fx, const char *hash, const char *field,
                      const char *value_json, const char *topic,
                      const char *envelope_json, const char *map_name)
{
    return snapshot_add(fx, hash, field, value_json, topic, envelope_json, map_name, true);
}

/* The check of vigil_fx_snapshot was about 2,400 instructions of a
 * dormancy input, on texts the service's renderer (jtext) made and its
 * unit tests parse. Debug builds, which every test runs, still check. */
int vigil_fx_snapshot_rendered(vigil_effects *fx, const char *hash, const char *field,
                               const char *value_json, const char *topic,
                               const char *envelope_json, const char *map_name)
{
#ifdef NDEBUG
    bool check = false;
#else
    bool check = true;
#endif
    return snapshot_add(fx, hash, field, value_json, topic, envelope_json, map_name, check);
}

/* Outbox entry text: "<0|1><topic>\n<payload>" (the format store.h gives),
 * in the effects' blocks. */
static char *outbox_entry(vigil_effects *fx, const char *topic, const char *payload, bool retain)
{
    size_t tl = strlen(topic), pl = strlen(payload);
    char *e = fx_room(fx, tl + pl + 3);
    if (!e)
        return NULL;
    e[0] = retain ? '1' : '0';
    memcpy(e + 1, topic, tl);
    e[1 + tl] = '\n';
    memcpy(e + 2 + tl, payload, pl + 1);
    return e;
}

/* Names become Redis key suffixes: refuse empty ones and whitespace/control
 * characters so a bug cannot address an odd key. */
static bool aux_name_ok(const char *name)
{
    if (!name || !*name || strlen(name) > 200)
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return false;
    return true;
}

/* value: already in the effects' blocks (NULL where the kind takes none,
 * or when copying it failed: value_required tells which). */
static int aux_add(vigil_effects *fx, vigil_aux_kind kind, const char *name, char *value,
                   bool value_required, int64_t n1, int64_t n2)
{
    if (!aux_name_ok(name) || (value_required && !value) ||
        grow(fx, ARR_AUX, (void **)&fx->aux, &fx->cap_aux, fx->n_aux, sizeof *fx->aux) != 0)
        return -1;
    bool failed = false;
    char *n = fx_copy(fx, name, &failed);
    if (failed)
        return -1;
    fx->aux[fx->n_aux++] = (vigil_aux_op){ kind, n, value, n1, n2, NULL };
    return 0;
}

/* value copied for aux_add (NULL when out of memory, which aux_add
 * refuses). */
static char *aux_value(vigil_effects *fx, const char *value)
{
    bool failed = false;
    return fx_copy(fx, value, &failed);
}

/* A metric label value: short, and nothing the exposition format must
 * escape. */
static bool label_ok(const char *label)
{
    size_t n = label ? strlen(label) : 0;
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)label[i];
        if (!isalnum(c) && !strchr("_.:-", c))
            return false;
    }
    return true;
}

int vigil_fx_stream_add(vigil_effects *fx, const char *name, const char *value, int64_t maxlen,
                        int64_t max_age_ms)
{
    if (!value || maxlen < 0 || max_age_ms < 0)
        return -1;
    return aux_add(fx, VIGIL_AUX_STREAM_ADD, name, aux_value(fx, value), true, maxlen,
                   max_age_ms);
}

int vigil_fx_job_add(vigil_effects *fx, const char *name, const char *label, const char *value,
                     int64_t maxlen)
{
    if (!value || maxlen < 0 || !label_ok(label))
        return -1;
    char *l = aux_value(fx, label);
    if (!l || aux_add(fx, VIGIL_AUX_JOB_ADD, name, aux_value(fx, value), true, maxlen, 0) != 0)
        return -1;
    fx->aux[fx->n_aux - 1].label = l;
    return 0;
}

int vigil_fx_queue_push(vigil_effects *fx, const char *name, const char *topic,
                        const char *payload, bool retain)
{
    if (!topic || !*topic || strchr(topic, '\n') || !payload)
        return -1;
    return aux_add(fx, VIGIL_AUX_QUEUE_PUSH, name, outbox_entry(fx, topic, payload, retain), true,
                   0, 0);
}

int vigil_fx_queue_flush(vigil_effects *fx, const char *name)
{
    return aux_add(fx, VIGIL_AUX_QUEUE_FLUSH, name, NULL, false, 0, 0);
}

int vigil_fx_key_set(vigil_effects *fx, const char *name, const char *value)
{
    if (!value)
        return vigil_fx_key_delete(fx, name);
    return aux_add(fx, VIGIL_AUX_KEY_SET, name, aux_value(fx, value), true, 0, 0);
}

int vigil_fx_key_delete(vigil_effects *fx, const char *name)
{
    return aux_add(fx, VIGIL_AUX_KEY_DELETE, name, NULL, false, 0, 0);
}

int vigil_fx_set_add(vigil_effects *fx, const char *name, const char *member)
{
    if (!member)
        return -1;
    return aux_add(fx, VIGIL_AUX_SET_ADD, name, aux_value(fx, member), true, 0, 0);
}

int vigil_fx_set_remove(vigil_effects *fx, const char *name, const char *member)
{
    if (!member)
        return -1;
    return aux_add(fx, VIGIL_AUX_SET_REMOVE, name, aux_value(fx, member), true, 0, 0);
}
