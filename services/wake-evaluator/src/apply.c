/* apply.c - one input (or one timer) on one room: the typed input from
 * route.c handed to the core with a sink into this commit's effects. */
#include <string.h>
#include "adapter.h"

typedef struct apply_arg {
    const wake_service *svc;
    const wake_parsed *pp;
    const char *key;
    const char *timer;
    int64_t due;
} apply_arg;

static bool listed(const char *const *rooms, int n, const char *room)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rooms[i], room) == 0)
            return true;
    return false;
}

/* The level a persona/{p}/state snapshot gives this room, if any. */
static int state_entry(const wake_parsed *pp, const char *room, wake_level *level,
                       int64_t *since, const char **trigger)
{
    const vigil_persona_room_state *e = vigil_persona_state_room(&pp->state, room);
    if (!e)
        return 0;
    *level = wake_level_from(e->level);
    *since = e->has_since ? e->since : pp->state_ts;
    *trigger = e->trigger ? e->trigger : "";
    return 1;
}

static int on_input(wake_room *r, const wake_sink *sink, int64_t now, void *arg)
{
    apply_arg *a = arg;
    const wake_parsed *pp = a->pp;
    const wake_config *c = &a->svc->core;
    switch (pp->kind) {
    case WAKE_IN_MESSAGE:
        return wake_on_message(r, c, &pp->msg, now, sink);
    case WAKE_IN_META:
        return wake_on_meta(r, c, &pp->meta, listed(pp->rooms, pp->n_rooms, a->key), now, sink);
    case WAKE_IN_STATE: {
        wake_level level = WAKE_LEVEL_UNKNOWN;
        int64_t since = 0;
        const char *trigger = NULL;
        int known = state_entry(pp, a->key, &level, &since, &trigger);
        return wake_on_level(r, c, pp->persona, known, level, since, trigger, now, sink);
    }
    case WAKE_IN_DORMANCY:
        return wake_on_level(r, c, pp->persona, true, pp->level, pp->since, pp->trigger, now,
                             sink);
    }
    return 0;
}

int wake_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
               const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const wake_service *svc = ctx;
    apply_arg a = {svc, parsed, key, NULL, 0};
    if (wake_with_room(svc, key, state_json, in, now_ms, fx, true, on_input, &a) != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory deciding on room '%s'",
                               key);
    return 0;
}

static int on_timer(wake_room *r, const wake_sink *sink, int64_t now, void *arg)
{
    apply_arg *a = arg;
    return wake_on_timer(r, &a->svc->core, a->timer, a->due, now, sink);
}

int wake_on_timer_fx(void *ctx, const char *key, const char *state_json, const char *timer_name,
                     int64_t due_ms, int64_t now_ms, vigil_effects *fx)
{
    const wake_service *svc = ctx;
    apply_arg a = {svc, NULL, key, timer_name, due_ms};
    return wake_with_room(svc, key, state_json, NULL, now_ms, fx, true, on_timer, &a);
}
