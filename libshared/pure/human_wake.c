/* human_wake.c - dormancy rule 3 (see vigil/human_wake.h): the one
 * implementation dormancy-monitor applies and floor-control predicts. */
#include "vigil/human_wake.h"

const char *const vigil_cause_names[] = {NULL, "absence", "choice", NULL};

int vigil_cause_parse(const char *s)
{
    int i = vigil_name_index(vigil_cause_names + 1, s); /* index 0 has no name */
    return i < 0 ? -1 : i + 1;
}

void vigil_human_wake_config_init(vigil_human_wake_config *c)
{
    c->auto_wake = true;
    c->human_wakes_all = false;
    c->min_awake = 2;
}

/* Mentioned, a mention-only persona may answer, and a sleeping one is
 * woken by the mention right after this rule (dormancy-monitor). */
bool vigil_wake_able(const vigil_wake_view *p)
{
    return p->level == VIGIL_LEVEL_ACTIVE || p->level == VIGIL_LEVEL_HUMAN_ONLY ||
           (p->mentioned &&
            (p->level == VIGIL_LEVEL_MENTION_ONLY || p->level == VIGIL_LEVEL_SLEEP));
}

bool vigil_wake_by_human(const vigil_wake_view *p, bool human_wakes_all)
{
    return p->auto_wake && p->level != VIGIL_LEVEL_ACTIVE &&
           (human_wakes_all || p->cause == VIGIL_CAUSE_ABSENCE);
}

/* The persona step 2 wakes next: not able, auto-wake on, the latest
 * answered_human (ties: the first in room order); -1 when none is left. */
static int most_recent_answerer(const vigil_wake_room *room)
{
    int best = -1;
    int64_t best_at = 0;
    for (int i = 0; i < room->n; i++) {
        vigil_wake_view v;
        room->view(room->ctx, i, &v);
        if (vigil_wake_able(&v) || !v.auto_wake)
            continue;
        if (best < 0 || v.answered_human > best_at) {
            best = i;
            best_at = v.answered_human;
        }
    }
    return best;
}

int vigil_human_wake_apply(const vigil_wake_room *room, const vigil_human_wake_config *c)
{
    int woken = 0, able = 0;
    for (int i = 0; i < room->n; i++) {
        vigil_wake_view v;
        room->view(room->ctx, i, &v);
        if (vigil_wake_by_human(&v, c->human_wakes_all)) {
            room->wake(room->ctx, i, VIGIL_WAKE_ABSENCE);
            woken++;
            room->view(room->ctx, i, &v);
        }
        able += vigil_wake_able(&v);
    }
    while (able < c->min_awake) {
        int i = most_recent_answerer(room);
        if (i < 0)
            break;
        room->wake(room->ctx, i, VIGIL_WAKE_MIN_AWAKE);
        woken++;
        able++;
    }
    return woken;
}
