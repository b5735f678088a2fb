/* pending.c - messages whose floor waits for the LLM: kept whole in the
 * room record (so a restart loses none) until the LLM's answer or the
 * deadline timer decides them, whichever comes first. A message that does
 * not fit the record's bounds does not wait: the rules decide it at once,
 * on all of it, and the refusal is noted. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "floor.h"

_Static_assert(FLOOR_TIMER_NAME_MAX >= sizeof "llm." + 16, "a timer name always fits");

void floor_timer_name(const char *message_id, char *out, size_t outlen)
{
    /* a hash: timer names are short and free of the store's separator */
    snprintf(out, outlen, "llm.%016" PRIx64, vigil_hash64(message_id, strlen(message_id)));
}

floor_pending *floor_pending_find(floor_room *r, const char *message_id)
{
    for (int i = 0; message_id && i < r->n_pending; i++)
        if (strcmp(r->pending[i].id, message_id) == 0)
            return &r->pending[i];
    return NULL;
}

floor_pending *floor_pending_by_timer(floor_room *r, const char *timer_name)
{
    char name[FLOOR_TIMER_NAME_MAX];
    for (int i = 0; timer_name && i < r->n_pending; i++) {
        floor_timer_name(r->pending[i].id, name, sizeof name);
        if (strcmp(name, timer_name) == 0)
            return &r->pending[i];
    }
    return NULL;
}

void floor_pending_remove(floor_room *r, const char *message_id)
{
    floor_pending *p = floor_pending_find(r, message_id);
    if (!p)
        return;
    int i = (int)(p - r->pending);
    memmove(&r->pending[i], &r->pending[i + 1], (size_t)(r->n_pending - i - 1) * sizeof *p);
    r->n_pending--;
}

/* Notes why message m cannot wait in r, if a bound refuses it, and
 * returns the note (NULL when it fits). */
static const floor_note *refusal(floor_room *r, const floor_message *m)
{
    const char *id = m->id ? m->id : "";
    size_t len = m->text ? strlen(m->text) : 0;
    if (r->n_pending >= FLOOR_MAX_PENDING)
        return floor_note_add(r, "llm_waiting_per_room",
                              "room '%s' has %d messages waiting for the LLM, the most it keeps "
                              "(compile time): message '%s' is decided by the rules at once",
                              r->room, r->n_pending, id);
    if (len > FLOOR_TEXT_MAX)
        return floor_note_add(r, "llm_text_bytes",
                              "message '%s' in room '%s' has a text of %zu bytes, more than the %d "
                              "a message waiting for the LLM keeps (compile time): it is decided "
                              "by the rules at once, on its whole text",
                              id, r->room, len, FLOOR_TEXT_MAX);
    if (m->n_mentions > FLOOR_MAX_MENTIONS)
        return floor_note_add(r, "llm_mentions_per_message",
                              "message '%s' in room '%s' has %d mentions, more than the %d a "
                              "message waiting for the LLM keeps (compile time): it is decided "
                              "by the rules at once, every persona it mentions granted",
                              id, r->room, m->n_mentions, FLOOR_MAX_MENTIONS);
    return NULL;
}

int floor_pending_add(floor_room *r, const floor_message *m, int64_t due, const char **why)
{
    if (floor_pending_find(r, m->id))
        return 0;
    const floor_note *no = refusal(r, m);
    if (no) {
        if (why)
            *why = no->detail;
        return 1;
    }
    floor_pending *v = realloc(r->pending, (size_t)(r->n_pending + 1) * sizeof *v);
    if (!v)
        return -1;
    r->pending = v;
    floor_pending *p = &v[r->n_pending++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", m->id ? m->id : "");
    snprintf(p->sender, sizeof p->sender, "%s", m->sender ? m->sender : "");
    p->sender_type = m->sender_type;
    snprintf(p->text, sizeof p->text, "%s", m->text ? m->text : "");
    for (int i = 0; i < m->n_mentions; i++)
        snprintf(p->mentions[p->n_mentions++], sizeof p->mentions[0], "%s",
                 m->mentions[i] ? m->mentions[i] : "");
    p->due = due;
    return 0;
}

void floor_pending_message(const floor_pending *p, const char **ptrs, floor_message *m)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < p->n_mentions; i++)
        ptrs[i] = p->mentions[i];
    m->id = p->id;
    m->sender = p->sender;
    m->sender_type = p->sender_type;
    m->text = p->text;
    m->mentions = ptrs;
    m->n_mentions = p->n_mentions;
}
