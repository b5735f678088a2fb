/* record_parts.c - what a commit writes of a room's personas when the
 * record is kept in parts (dormancy.h): the personas whose text changed
 * (persona_texts.c keeps the text each index was last written with) and
 * the ones that left. Comparing a persona with its last text is a memcmp;
 * finding who left builds an index only when the membership changed. */
#include <stdlib.h>
#include <string.h>
#include <vigil/id_index.h>
#include "step.h"

void dormancy_parts_diff_free(dormancy_parts_diff *d)
{
    free(d->set);
    free(d->text);
    free(d->removed);
    memset(d, 0, sizeof *d);
}

/* The ids stored last that r no longer holds, from the persona texts
 * (which still hold what was written). 0, or -1 when out of memory. */
static int find_removed(const dormancy_room *r, int stored, dormancy_parts_diff *d)
{
    bool moved = stored > r->n_personas;
    for (int i = 0; i < stored && i < r->n_personas && !moved; i++) {
        const char *was = dormancy_texts_id(r->texts, i);
        moved = !was || strcmp(was, r->personas[i].id) != 0;
    }
    if (!moved)
        return 0;
    vigil_id_index now;
    if (vigil_id_index_init(&now, (size_t)r->n_personas) != 0)
        return -1;
    for (int i = 0; i < r->n_personas; i++)
        if (vigil_id_index_add(&now, r->personas[i].id, i + 1) < 0) {
            vigil_id_index_free(&now);
            return -1;
        }
    d->removed = malloc((size_t)stored * sizeof *d->removed);
    if (!d->removed) {
        vigil_id_index_free(&now);
        return -1;
    }
    for (int i = 0; i < stored; i++) {
        const char *was = dormancy_texts_id(r->texts, i);
        if (was && vigil_id_index_get(&now, was) == 0)
            vigil_utf8_copy(d->removed[d->n_removed++], sizeof d->removed[0], was);
    }
    vigil_id_index_free(&now);
    return 0;
}

int dormancy_parts_diff_make(dormancy_room *r, dormancy_parts_diff *d)
{
    memset(d, 0, sizeof *d);
    int stored = r->n_stored;
    d->whole = stored < 0 || dormancy_texts_count(r->texts) != stored;
    /* nobody joined or left: nobody to delete, and no id to compare */
    if (!d->whole && r->members_changed && find_removed(r, stored, d) != 0)
        goto oom;
    if (r->n_personas > 0) {
        d->set = malloc((size_t)r->n_personas * sizeof *d->set);
        d->text = malloc((size_t)r->n_personas * sizeof *d->text);
        if (!d->set || !d->text)
            goto oom;
    }
    for (int i = 0; i < r->n_personas; i++) {
        size_t len;
        bool fresh;
        const char *t = dormancy_texts_persona_fresh(r->texts, i, &r->personas[i], &len, &fresh);
        if (!t)
            goto oom;
        if (fresh || d->whole) {
            d->set[d->n_set] = i;
            d->text[d->n_set++] = t;
        }
    }
    return 0;
oom:
    dormancy_parts_diff_free(d);
    return -1;
}

void dormancy_parts_written(dormancy_room *r)
{
    dormancy_texts_truncate(r->texts, r->n_personas);
    r->n_stored = r->n_personas;
    r->members_changed = false;
}
