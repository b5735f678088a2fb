/* id_index.c - see id_index.h. */
#include "vigil/id_index.h"

#include <stdlib.h>
#include <string.h>

#include "vigil/str.h"

int vigil_id_index_init(vigil_id_index *x, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    x->key = calloc(cap, sizeof *x->key);
    x->val = calloc(cap, sizeof *x->val);
    x->mask = cap - 1;
    x->count = 0;
    if (!x->key || !x->val) {
        vigil_id_index_free(x);
        return -1;
    }
    return 0;
}

void vigil_id_index_free(vigil_id_index *x)
{
    free(x->key);
    free(x->val);
    x->key = NULL;
    x->val = NULL;
    x->mask = 0;
    x->count = 0;
}

/* The slot of id, or the empty slot where it would go. */
static size_t slot_of(const vigil_id_index *x, const char *id)
{
    size_t i = (size_t)vigil_hash_mem(id, strlen(id)) & x->mask;
    while (x->key[i] && strcmp(x->key[i], id) != 0)
        i = (i + 1) & x->mask;
    return i;
}

int vigil_id_index_get(const vigil_id_index *x, const char *id)
{
    if (!x->key)
        return 0;
    size_t i = slot_of(x, id);
    return x->key[i] ? x->val[i] : 0;
}

int vigil_id_index_add(vigil_id_index *x, const char *id, int val)
{
    size_t i = slot_of(x, id);
    if (x->key[i])
        return x->val[i];
    if (2 * (x->count + 1) > x->mask + 1)
        return -1; /* more than sized for: the probe would never end */
    x->count++;
    x->key[i] = id;
    x->val[i] = val;
    return 0;
}
