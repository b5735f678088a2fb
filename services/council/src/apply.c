/* apply.c - one input (or timer) on one user record: the typed input from
 * route.c handed to the core with a sink into this commit's effects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/log.h>
#include "adapter.h"

int council_with_user(const council_service *svc, const char *key, const char *state_json,
                      vigil_effects *fx, council_user_fn fn, void *arg, vigil_error *err)
{
    council_user *u = calloc(1, sizeof *u);
    if (!u)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    char why[COUNCIL_REASON_MAX] = "";
    int rc = 0;
    if (state_json) {
        if (council_user_load(state_json, u, why, sizeof why) != 0) {
            /* our own record unreadable: start over rather than wedge the user */
            vigil_log_kv(VIGIL_LOG_ERROR, "user record unreadable: starting over", "user", key,
                         "detail", why, NULL);
            council_user_init(u, key);
        }
    } else {
        council_user_init(u, key);
    }
    council_fx_ctx c = {fx, svc->jobs_maxlen, 0};
    council_sink sink = council_sink_fx(&c);
    council_rc r = fn(u, &sink, arg, why, sizeof why);
    if (r == COUNCIL_REFUSED) {
        rc = vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%s", why);
        goto done;
    }
    char *json = r == COUNCIL_OK && !c.failed ? council_user_dump(u) : NULL;
    if (!json || vigil_fx_set_state(fx, json) != 0)
        rc = vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory deciding for '%s'", key);
    free(json);
done:
    free(u);
    return rc;
}

typedef struct apply_arg {
    const council_service *svc;
    const council_parsed *pp;
    const vigil_input *in;
    const char *timer;
    int64_t due, now;
} apply_arg;

static council_rc on_input(council_user *u, const council_sink *sink, void *arg, char *why,
                           size_t whylen)
{
    apply_arg *a = arg;
    const council_parsed *pp = a->pp;
    const council_config *c = &a->svc->core;
    switch (pp->kind) {
    case COUNCIL_IN_CONTROL:
        return council_on_control(u, c, &pp->ctl, a->in->id, a->now, sink, why, whylen);
    case COUNCIL_IN_ANSWER:
        return council_on_answer(u, c, pp->session, pp->question_id, pp->answer, a->in->id, a->now,
                                 sink, why, whylen);
    case COUNCIL_IN_MESSAGE:
        return council_on_message(u, c, pp->room, pp->text, a->in->ts);
    case COUNCIL_IN_PRESENCE:
        return council_on_presence(u, pp->room, pp->presence, pp->presence_ts,
                                   pp->presence_activity, a->now);
    }
    return COUNCIL_OK;
}

int council_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                  const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const council_service *svc = ctx;
    apply_arg a = {svc, parsed, in, NULL, 0, now_ms};
    return council_with_user(svc, key, state_json, fx, on_input, &a, err);
}

static council_rc on_timer(council_user *u, const council_sink *sink, void *arg, char *why,
                           size_t whylen)
{
    (void)why;
    (void)whylen;
    apply_arg *a = arg;
    return council_on_timer(u, &a->svc->core, a->timer, a->due, a->now, sink);
}

int council_on_timer_fx(void *ctx, const char *key, const char *state_json, const char *timer_name,
                        int64_t due_ms, int64_t now_ms, vigil_effects *fx)
{
    const council_service *svc = ctx;
    apply_arg a = {svc, NULL, NULL, timer_name, due_ms, now_ms};
    vigil_error err = {0};
    int rc = council_with_user(svc, key, state_json, fx, on_timer, &a, &err);
    if (rc != 0)
        vigil_log_kv(VIGIL_LOG_ERROR, "timer not applied", "user", key, "timer", timer_name,
                     "detail", err.detail, NULL);
    return rc;
}
