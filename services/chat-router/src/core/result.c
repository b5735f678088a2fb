/* result.c - the list of actions a decision returns. */
#include <stdlib.h>
#include <string.h>
#include "chat.h"

void chat_result_init(chat_result *r)
{
    memset(r, 0, sizeof *r);
}

void chat_result_free(chat_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].name);
        free(r->v[i].topic);
        free(r->v[i].value);
    }
    free(r->v);
    free(r->new_state);
    chat_result_init(r);
}

static int dup_or_null(const char *s, char **out)
{
    *out = NULL;
    if (!s)
        return 0;
    *out = strdup(s);
    return *out ? 0 : -1;
}

int chat_result_add(chat_result *r, chat_action_kind kind, const char *name, const char *topic,
                    const char *value)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        chat_action *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    chat_action a = { .kind = kind };
    if (dup_or_null(name, &a.name) != 0 || dup_or_null(topic, &a.topic) != 0 ||
        dup_or_null(value, &a.value) != 0) {
        free(a.name);
        free(a.topic);
        free(a.value);
        return -1;
    }
    r->v[r->n++] = a;
    return 0;
}
