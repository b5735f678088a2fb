/* times_text.h - a list of times (milliseconds) written as one string
 * "t0,d1,d2,...": the first time, then each one's difference to the one
 * before, a few digits each instead of thirteen. The records of
 * dormancy-monitor and wake-evaluator keep such lists (up to thousands of
 * times) and write them on every commit, so the differences' text is kept
 * beside the list in a vigil_tlist (separator ',') and updated as times
 * are appended at the end and dropped from the start:
 *
 *   times appended    t[n-1] set, then vigil_times_kept_push(l, t, n)
 *   k oldest dropped  vigil_tlist_drop(l, k): their k differences go
 *   anything else     vigil_times_keep(l, t, n) writes it again
 *
 * A difference wraps instead of overflowing (unsigned arithmetic), so any
 * list reads back as it was written. Pure. */
#ifndef VIGIL_TIMES_TEXT_H
#define VIGIL_TIMES_TEXT_H
#include <stdint.h>

#include "jtext.h"
#include "tlist.h"

/* Reads such a text into at most max times; returns how many. A
 * malformed list keeps what was read before the fault. */
int vigil_times_parse(const char *s, int64_t *t, int max);
/* The text of t[0..n), appended to b (no quotes; nothing when n is 0). */
void vigil_times_text(vigil_jtext *b, const int64_t *t, int n);
/* l written again as the differences of t[0..n). */
void vigil_times_keep(vigil_tlist *l, const int64_t *t, int n);
/* t[n-1] was appended: its difference to t[n-2] joins l. */
void vigil_times_kept_push(vigil_tlist *l, const int64_t *t, int n);
/* The text of t[0..n), appended to b: t[0] and the kept differences when
 * l follows t (its count is n - 1), else written time by time. l may be
 * NULL (nothing kept). */
void vigil_times_put(vigil_jtext *b, const vigil_tlist *l, const int64_t *t, int n);

#endif
