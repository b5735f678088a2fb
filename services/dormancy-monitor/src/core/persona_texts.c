/* persona_texts.c - the JSON text of each persona of a room record, kept
 * from the last time the record was written. Writing a record of 1,000
 * personas as one json-c tree cost about 1 ms an input although an input
 * changes one persona or none. A persona that is the same one (id and
 * arrival order) at the same generation (persona_touch) reuses its text,
 * so writing the record costs a few compares per persona: comparing each
 * persona's fields byte for byte (about 1 KB each) was an eighth of an
 * input at 1,000 personas. Debug builds still compare the bytes, to catch
 * a change made without persona_touch. A persona that changed, moved or
 * is new is written again. Not part of the record: a copy of a room starts
 * with none. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "step.h"

struct dormancy_texts {
    int n, cap;
    dormancy_persona *seen; /* each persona as its text was written */
    char **text;            /* malloc'd; NULL = none yet */
    size_t *len;
};

dormancy_texts *dormancy_texts_new(void)
{
    return calloc(1, sizeof(dormancy_texts));
}

void dormancy_texts_free(dormancy_texts *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->cap; i++)
        free(t->text[i]);
    free(t->seen);
    free(t->text);
    free(t->len);
    free(t);
}

/* Room for n personas; -1 when out of memory (the texts kept stay valid). */
static int reserve(dormancy_texts *t, int n)
{
    if (n <= t->cap)
        return 0;
    int cap = t->cap ? t->cap : 8;
    while (cap < n)
        cap *= 2;
    dormancy_persona *seen = realloc(t->seen, (size_t)cap * sizeof *seen);
    if (!seen)
        return -1;
    t->seen = seen;
    char **text = realloc(t->text, (size_t)cap * sizeof *text);
    if (!text)
        return -1;
    t->text = text;
    size_t *len = realloc(t->len, (size_t)cap * sizeof *len);
    if (!len)
        return -1;
    t->len = len;
    for (int i = t->cap; i < cap; i++) {
        t->text[i] = NULL;
        t->len[i] = 0;
    }
    t->cap = cap;
    return 0;
}

const char *dormancy_texts_persona(dormancy_texts *t, int i, const dormancy_persona *p,
                                   size_t *len)
{
    bool fresh;
    return dormancy_texts_persona_fresh(t, i, p, len, &fresh);
}

const char *dormancy_texts_persona_fresh(dormancy_texts *t, int i, const dormancy_persona *p,
                                         size_t *len, bool *fresh)
{
    *fresh = false;
    if (!t || reserve(t, i + 1) != 0)
        return NULL;
    if (t->text[i] && t->seen[i].gen == p->gen && t->seen[i].ord == p->ord &&
        strcmp(t->seen[i].id, p->id) == 0) {
        assert(memcmp(&t->seen[i], p, sizeof *p) == 0); /* changed without persona_touch */
        *len = t->len[i];
        return t->text[i];
    }
    *fresh = true;
    char *copy = dormancy_persona_record_text(p);
    if (!copy)
        return NULL;
    free(t->text[i]);
    t->text[i] = copy;
    t->len[i] = strlen(copy);
    memcpy(&t->seen[i], p, sizeof *p);
    if (i >= t->n)
        t->n = i + 1;
    *len = t->len[i];
    return copy;
}

int dormancy_texts_count(const dormancy_texts *t)
{
    return t ? t->n : 0;
}

const char *dormancy_texts_id(const dormancy_texts *t, int i)
{
    return t && i >= 0 && i < t->n && t->text[i] ? t->seen[i].id : NULL;
}

void dormancy_texts_truncate(dormancy_texts *t, int n)
{
    if (!t || n < 0)
        return;
    for (int i = n; i < t->n; i++) { /* forgotten: a persona back there is written again */
        free(t->text[i]);
        t->text[i] = NULL;
        t->len[i] = 0;
    }
    if (n < t->n)
        t->n = n;
}

size_t dormancy_texts_bytes(const dormancy_texts *t)
{
    if (!t)
        return 0;
    size_t n = sizeof *t + (size_t)t->cap * (sizeof *t->seen + sizeof *t->text + sizeof *t->len);
    for (int i = 0; i < t->n; i++)
        n += t->text[i] ? t->len[i] + 1 : 0;
    return n;
}
