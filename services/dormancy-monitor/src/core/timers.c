/* timers.c - deadlines: after each step every rule says which deadlines it
 * wants; the difference with those already set becomes timer set/cancel
 * actions. One deadline per pending thing, recomputed whenever an input
 * moves it, and nothing at all for a room with nothing pending (an idle
 * room costs no CPU). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "step.h"

/* Collects a wanted deadline; timers_sync keeps the earliest per name.
 * Deadlines at or before `now` are not wanted: the step that just ran has
 * handled everything due. Appending without looking for the name keeps
 * this O(1): a room of 1,000 personas may want 1,000 deadlines (one
 * pending suggestion each), and a search per deadline made every input
 * quadratic in them. */
void want_add(dormancy_want *w, const char *name, int64_t due)
{
    if (due <= w->now)
        return;
    if (w->n == w->cap) {
        int cap = w->cap ? w->cap * 2 : 8;
        dormancy_timer *v = realloc(w->v, (size_t)cap * sizeof *v);
        if (!v) {
            w->failed = true;
            return;
        }
        w->v = v;
        w->cap = cap;
    }
    vigil_utf8_copy(w->v[w->n].name, sizeof w->v[0].name, name);
    w->v[w->n].due = due;
    w->n++;
}

static int by_name_then_due(const void *a, const void *b)
{
    const dormancy_timer *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->due > y->due) - (x->due < y->due);
}

/* Sorted by name, one per name: the earliest. */
static void settle(dormancy_timer *v, int *n)
{
    if (*n < 2)
        return;
    qsort(v, (size_t)*n, sizeof *v, by_name_then_due);
    int k = 0;
    for (int i = 0; i < *n; i++)
        if (k == 0 || strcmp(v[k - 1].name, v[i].name) != 0)
            v[k++] = v[i];
    *n = k;
}

/* Timer names must fit the timer store's 63 characters; a long persona id
 * is replaced by its hash (names only need to be unique per room). */
void timer_name(char *out, size_t outlen, const char *kind, const char *persona)
{
    int n = snprintf(out, outlen, "%s:%s", kind, persona);
    if (n < 0 || (size_t)n >= outlen || n > DORMANCY_TIMER_NAME_MAX)
        snprintf(out, outlen, "%s:#%016" PRIx64, kind,
                 vigil_hash64(persona, strlen(persona)));
}

void timers_forget(dormancy_room *r, const char *name)
{
    for (int i = 0; i < r->n_timers; i++) {
        if (strcmp(r->timers[i].name, name) == 0) {
            r->timers[i] = r->timers[--r->n_timers];
            return;
        }
    }
}

void timers_sync(dormancy_step *s)
{
    dormancy_room *r = s->room;
    dormancy_want w = {.now = s->now};
    no_human_want(s, &w);
    ai_only_want(s, &w);
    suggestion_want(s, &w);
    manual_want(s, &w);
    presence_want(s, &w);
    snapshot_want(s, &w);
    if (w.failed) {
        free(w.v);
        s->failed = true;
        return;
    }
    /* both lists sorted by name: one merge finds what to set and cancel */
    settle(w.v, &w.n);
    settle(r->timers, &r->n_timers);
    int i = 0, j = 0;
    while (i < w.n || j < r->n_timers) {
        int c = i == w.n ? 1 : j == r->n_timers ? -1 : strcmp(w.v[i].name, r->timers[j].name);
        if (c > 0) {
            dormancy_action *a = step_push(s, DORMANCY_OUT_TIMER_CANCEL, NULL);
            if (a)
                vigil_utf8_copy(a->timer, sizeof a->timer, r->timers[j].name);
            j++;
            continue;
        }
        if (c < 0 || w.v[i].due != r->timers[j].due) {
            dormancy_action *a = step_push(s, DORMANCY_OUT_TIMER_SET, NULL);
            if (a) {
                vigil_utf8_copy(a->timer, sizeof a->timer, w.v[i].name);
                a->due = w.v[i].due;
            }
        }
        i++;
        j += c == 0;
    }
    free(r->timers);
    r->timers = w.v;
    r->n_timers = w.n;
    r->cap_timers = w.cap;
}
