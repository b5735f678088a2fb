/* tlist.h - the text of a list of entries joined by one separator byte,
 * kept in step with the list as entries are appended at its end and
 * dropped from its start. A record that holds such a list as one string
 * (chat-router's remembered message ids, up to hundreds of them) copies
 * this text instead of writing every entry again on every commit.
 *
 * The list's owner keeps its entries as it always did; this is a cache of
 * their text. Whatever it cannot follow (an entry changed in place, an
 * allocation failure) leaves it stale, and the owner then writes the
 * entries again (vigil_tlist_reset, then each entry). Pure. */
#ifndef VIGIL_TLIST_H
#define VIGIL_TLIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jtext.h"

typedef struct vigil_tlist {
    vigil_jtext t;  /* the text is t.s + start, t.n - start bytes */
    size_t start;   /* bytes of dropped entries not yet moved out */
    size_t mark;    /* where the entry being written began */
    uint32_t *lens; /* the entries' lengths: a ring, the oldest at head */
    int head, n, cap;
    char sep;
    bool fresh; /* false: the text is not the list's; write it again */
    /* times the owner wrote it whole (vigil_tlist_reset): a list kept in
     * step is written whole once, after a read; tests watch this */
    unsigned rewrites;
} vigil_tlist;

/* An empty list, fresh; nothing allocated yet. */
void vigil_tlist_init(vigil_tlist *l, char sep);
void vigil_tlist_free(vigil_tlist *l); /* then as vigil_tlist_init left it, stale */
/* Empty and fresh again, its entries to be joined by sep, keeping its
 * memory: before the owner writes every entry. Also makes a zeroed
 * vigil_tlist ready. */
void vigil_tlist_reset(vigil_tlist *l, char sep);
/* The text no longer follows the list (the owner changed an entry). */
void vigil_tlist_stale(vigil_tlist *l);
/* An entry appended: write its text into the buffer returned (with the
 * vigil_jtext functions), then call vigil_tlist_end. The separator is
 * already there when the list was not empty. */
vigil_jtext *vigil_tlist_begin(vigil_tlist *l);
/* Ends the entry begun; an append that ran out of memory leaves the list
 * stale. */
void vigil_tlist_end(vigil_tlist *l);
/* Drops the k oldest entries (all of them when k >= the count). */
void vigil_tlist_drop(vigil_tlist *l, int k);
/* The joined text (len bytes, NUL-terminated), or NULL when stale. */
const char *vigil_tlist_text(const vigil_tlist *l, size_t *len);
/* Entries held; -1 when stale. */
int vigil_tlist_count(const vigil_tlist *l);
/* dst (initialised) becomes a copy of src; stale when out of memory. */
void vigil_tlist_copy(vigil_tlist *dst, const vigil_tlist *src);
/* Heap bytes held. */
size_t vigil_tlist_bytes(const vigil_tlist *l);

#endif
