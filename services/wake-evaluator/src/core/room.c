/* room.c - the room record in memory: its personas, found by id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wake.h"

wake_room *wake_room_new(const char *id)
{
    wake_room *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->id, sizeof r->id, "%s", id ? id : "");
    vigil_tlist_init(&r->times_text, ',');
    vigil_tlist_init(&r->texts_text, ',');
    return r;
}

void wake_room_free(wake_room *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_personas; i++)
        wake_persona_texts_free(&r->personas[i]);
    free(r->personas);
    vigil_tlist_free(&r->times_text);
    vigil_tlist_free(&r->texts_text);
    free(r);
}

wake_persona *wake_room_find(wake_room *r, const char *persona)
{
    for (int i = 0; persona && i < r->n_personas; i++)
        if (strcmp(r->personas[i].id, persona) == 0)
            return &r->personas[i];
    return NULL;
}

const wake_persona *wake_room_find_const(const wake_room *r, const char *persona)
{
    return wake_room_find((wake_room *)r, persona);
}

static void persona_init(wake_persona *p, const char *id)
{
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    p->parameters = -1;
    p->availability = -1;
    p->auto_wake_ov = -1;
    p->llm_wake_ov = -1;
    p->wake_conf_ov = -1;
    p->level = WAKE_LEVEL_UNKNOWN;
    vigil_tlist_init(&p->msg_text, ',');
    vigil_tlist_init(&p->resp_text, ',');
}

int wake_room_reserve(wake_room *r, int n)
{
    if (n <= r->cap_personas)
        return 0;
    wake_persona *v = realloc(r->personas, (size_t)n * sizeof *v);
    if (!v)
        return -1;
    r->personas = v;
    r->cap_personas = n;
    return 0;
}

wake_persona *wake_room_add(wake_room *r, const char *persona, int max_personas)
{
    wake_persona *p = wake_room_find(r, persona);
    if (p)
        return p;
    if (!persona || !persona[0] || strlen(persona) > WAKE_ID_MAX ||
        (max_personas > 0 && r->n_personas >= max_personas))
        return NULL;
    if (r->n_personas == r->cap_personas) {
        int cap = r->cap_personas ? r->cap_personas * 2 : 8;
        wake_persona *v = realloc(r->personas, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        r->personas = v;
        r->cap_personas = cap;
    }
    p = &r->personas[r->n_personas++];
    persona_init(p, persona);
    return p;
}

void wake_room_remove(wake_room *r, const char *persona)
{
    wake_persona *p = wake_room_find(r, persona);
    if (!p)
        return;
    size_t i = (size_t)(p - r->personas);
    wake_persona_texts_free(p);
    memmove(p, p + 1, (size_t)(r->n_personas - 1 - (int)i) * sizeof *p);
    r->n_personas--;
}

wake_room *wake_room_clone(const wake_room *src)
{
    wake_room *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    *r = *src;
    r->personas = NULL;
    r->n_personas = r->cap_personas = 0; /* none of src's until copied */
    /* copies of the texts (stale when short of memory: written again) */
    vigil_tlist_init(&r->times_text, ',');
    vigil_tlist_init(&r->texts_text, ',');
    vigil_tlist_copy(&r->times_text, &src->times_text);
    vigil_tlist_copy(&r->texts_text, &src->texts_text);
    if (src->n_personas > 0) {
        r->personas = malloc((size_t)src->n_personas * sizeof *r->personas);
        if (!r->personas) {
            wake_room_free(r);
            return NULL;
        }
        memcpy(r->personas, src->personas, (size_t)src->n_personas * sizeof *r->personas);
        r->n_personas = r->cap_personas = src->n_personas;
        for (int i = 0; i < src->n_personas; i++) { /* their own copies of the texts */
            wake_persona *p = &r->personas[i];
            vigil_tlist_init(&p->msg_text, ',');
            vigil_tlist_init(&p->resp_text, ',');
            vigil_tlist_copy(&p->msg_text, &src->personas[i].msg_text);
            vigil_tlist_copy(&p->resp_text, &src->personas[i].resp_text);
        }
    }
    return r;
}

size_t wake_room_bytes(const wake_room *r)
{
    size_t n = sizeof *r + (size_t)r->cap_personas * sizeof *r->personas +
               vigil_tlist_bytes(&r->times_text) + vigil_tlist_bytes(&r->texts_text);
    for (int i = 0; i < r->n_personas; i++)
        n += vigil_tlist_bytes(&r->personas[i].msg_text) +
             vigil_tlist_bytes(&r->personas[i].resp_text);
    return n;
}

wake_persona *wake_room_join(wake_room *r, const wake_config *c, const char *persona,
                             const wake_sink *sink)
{
    wake_persona *p = wake_room_add(r, persona, c->max_personas);
    if (!p && c->max_personas > 0 && r->n_personas >= c->max_personas && sink->limit) {
        char detail[256];
        snprintf(detail, sizeof detail,
                 "room '%s' already tracks %d personas, the most VIGIL_WAKE_MAX_PERSONAS allows: "
                 "persona '%.64s' is not evaluated there",
                 r->id, r->n_personas, persona ? persona : "");
        sink->limit(sink->ctx, "personas_per_room", detail);
    }
    return p;
}
