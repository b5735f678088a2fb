/* id_index.h - ids to small integers, for reading a record of n entries in
 * O(n): an entry's id is looked up among those read so far without a
 * linear search (which made loading a room of 1,000 personas quadratic).
 *
 * Open addressing over vigil_hash_mem, kept at most half full for the n ids
 * it was sized for. The index does not copy ids: each must stay valid
 * while the index is used (typically it points into the JSON being read).
 * Pure: no I/O, no locks. */
#ifndef VIGIL_ID_INDEX_H
#define VIGIL_ID_INDEX_H

#include <stddef.h>

typedef struct vigil_id_index {
    const char **key;
    int *val;
    size_t mask;
    size_t count;
} vigil_id_index;

/* Room for n ids. 0, or -1 when memory runs out. */
int vigil_id_index_init(vigil_id_index *x, size_t n);
void vigil_id_index_free(vigil_id_index *x);

/* The value stored for id, 0 when id is not in the index. */
int vigil_id_index_get(const vigil_id_index *x, const char *id);

/* Stores val (not 0) for id unless id is there already. Returns the value
 * id already had, 0 when it was added, or -1 when the index already holds
 * the n ids it was sized for (nothing stored). */
int vigil_id_index_add(vigil_id_index *x, const char *id, int val);

#endif
