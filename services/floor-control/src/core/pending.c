/* pending.c - messages whose floor waits for the LLM: kept in the room
 * record (so a restart loses none) until the LLM's answer or the deadline
 * timer decides them, whichever comes first. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "floor.h"

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

int floor_pending_add(floor_room *r, const floor_message *m, int64_t due)
{
    if (floor_pending_find(r, m->id))
        return 0;
    if (r->n_pending >= FLOOR_MAX_PENDING)
        return -1;
    floor_pending *v = realloc(r->pending, (size_t)(r->n_pending + 1) * sizeof *v);
    if (!v)
        return -1;
    r->pending = v;
    floor_pending *p = &v[r->n_pending++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", m->id ? m->id : "");
    snprintf(p->sender, sizeof p->sender, "%s", m->sender ? m->sender : "");
    p->sender_type = m->sender_type;
    /* a longer text is cut at a character boundary: mentions past the cut
     * are lost, the `mentions` array is kept whole */
    size_t len = m->text ? strlen(m->text) : 0;
    if (len > FLOOR_TEXT_MAX) {
        len = FLOOR_TEXT_MAX;
        while (len > 0 && ((unsigned char)m->text[len] & 0xC0) == 0x80)
            len--;
    }
    if (len)
        memcpy(p->text, m->text, len);
    p->text[len] = '\0';
    for (int i = 0; i < m->n_mentions && p->n_mentions < FLOOR_MAX_MENTIONS; i++)
        if (m->mentions[i] && strlen(m->mentions[i]) <= FLOOR_ID_MAX)
            snprintf(p->mentions[p->n_mentions++], sizeof p->mentions[0], "%s", m->mentions[i]);
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
