/* prompt.c - the question put to an LLM: which of the personas able to
 * answer fit this message best. Only the personas the rules would consider
 * (able, not mentioned, not the sender) are listed, with their role,
 * expertise and confidence, so the model ranks exactly the ones the choice
 * can grant. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "floor.h"

#define PROMPT_TEXT_MAX 2000 /* message text quoted in the prompt */

typedef struct buf {
    char *s;
    size_t len, cap;
    bool failed;
} buf;

/* Appends printf-style to b, growing it; a failure sticks (checked once). */
static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static void persona_line(buf *b, const floor_persona *p)
{
    put(b, "- %s", p->id);
    if (p->name[0] && strcmp(p->name, p->id) != 0)
        put(b, " (%s)", p->name);
    put(b, ": role %s; expertise:", p->role[0] ? p->role : "none given");
    if (p->n_domains == 0)
        put(b, " none given");
    for (int d = 0; d < p->n_domains; d++) {
        put(b, "%s %s", d ? "," : "", p->domains[d]);
        if (p->confidence[d] != FLOOR_CONFIDENCE_UNSET)
            put(b, " (confidence %.2f)", p->confidence[d]);
    }
    put(b, "\n");
}

char *floor_llm_prompt(const floor_room *r, const floor_config *cfg, const floor_message *m)
{
    buf b = {malloc(2048), 0, 2048, false};
    if (!b.s)
        return NULL;
    b.s[0] = '\0';
    int tlen = m->text ? (int)strlen(m->text) : 0;
    if (tlen > PROMPT_TEXT_MAX)
        tlen = PROMPT_TEXT_MAX;
    put(&b,
        "You decide who answers a chat message in room %s. At most %d of the personas below "
        "should answer: the ones whose expertise fits the message best.\n\n"
        "Message from %s: \"%.*s\"\n\nPersonas:\n",
        r->room, cfg->k, m->sender ? m->sender : "someone", tlen, m->text ? m->text : "");
    floor_message plain = *m;
    plain.ranked = false;
    for (int i = 0; i < r->n; i++) {
        const floor_persona *p = &r->personas[i];
        if (m->sender && strcmp(p->id, m->sender) == 0)
            continue;
        floor_room one = {.n = 1, .personas = (floor_persona *)p};
        snprintf(one.room, sizeof one.room, "%s", r->room);
        /* listed only when the rules would consider it */
        if (floor_rankable(&one, cfg, &plain) == 1)
            persona_line(&b, p);
    }
    put(&b,
        "\nRespond with JSON only: {\"relevant\": [\"<persona id>\", ...]} naming the personas "
        "that should answer, most relevant first, at most %d (an empty list when none fits).",
        cfg->k);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
