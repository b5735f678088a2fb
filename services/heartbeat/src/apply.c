/* apply.c - one input or timer on one persona record: load the record, run
 * the core, and write its decision (record, messages, the run timer, the
 * job for the model, the room index) into the runtime's effects, which
 * commits them in one atomic step. A cleared config deletes the heartbeat
 * in such a step: record, timer and room index together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/event_id.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include <vigil/str.h>
#include "adapter.h"

int hb_out_to_fx(const hb_service *svc, const char *persona, const hb_state *s, hb_out *out,
                 vigil_effects *fx)
{
    char name[VIGIL_KEY_MAX + 32];
    if (out->changed) {
        char *st = hb_state_dump(s);
        int rc = st ? vigil_fx_set_state(fx, st) : -1;
        free(st);
        if (rc != 0)
            return -1;
    }
    for (int i = 0; i < out->n_msg; i++)
        if (vigil_fx_publish(fx, out->msg[i].topic, out->msg[i].payload, false) != 0)
            return -1;
    if (out->timer == HB_TIMER_CANCEL) {
        if (vigil_fx_timer_cancel(fx, HB_TIMER) != 0)
            return -1;
    } else if (out->timer != HB_TIMER_KEEP) {
        if (vigil_fx_timer_set(fx, HB_TIMER, out->timer) != 0)
            return -1;
    }
    if (out->job && vigil_fx_job_add(fx, svc->stream, HB_STREAM_LABEL, out->job, svc->jobs_maxlen) != 0)
        return -1;
    if (out->index_remove[0]) {
        snprintf(name, sizeof name, "%s%s", HB_ROOM_INDEX, out->index_remove);
        if (vigil_fx_set_remove(fx, name, persona) != 0)
            return -1;
    }
    if (out->index_add[0]) {
        snprintf(name, sizeof name, "%s%s", HB_ROOM_INDEX, out->index_add);
        if (vigil_fx_set_add(fx, name, persona) != 0)
            return -1;
    }
    return 0;
}

int hb_record_open(hb_state *s, hb_out *out, const char *key, const char *json, char *why,
                   size_t whylen)
{
    if (hb_state_load(s, key, json, why, whylen) != 0) {
        hb_state_free(s);
        return -1;
    }
    hb_out_init(out);
    return 0;
}

void hb_record_close(hb_state *s, hb_out *out)
{
    hb_out_clear(out);
    hb_state_free(s);
}

/* A bound the core reached on this input says so: an error event on
 * sys/heartbeat/error (reason limit), committed with the decision's other
 * effects, and vigil_limit_refusals_total{limit}. */
static int limit_fx(const char *key, const vigil_input *in, const hb_out *out, int64_t now,
                    vigil_effects *fx)
{
    if (!out->limit)
        return 0;
    /* "<input id>:<topic's room or persona>:limit:<persona>": an input id
     * is unique only within its topic (a message id within its room), and
     * one room message reaches every persona with a heartbeat there (one
     * record each) */
    char id[VIGIL_EVENT_ID_MAX + 1], what[VIGIL_KEY_MAX + 8];
    vigil_concat(what, sizeof what, "limit:", key, (const char *)NULL);
    vigil_event_id_in(id, sizeof id, in->id, in->nparts > 1 ? in->parts[1] : "", what);
    return vigil_fx_limit_refusal(fx, HB_SERVICE, id, in, out->limit, out->limit_detail, now);
}

int hb_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
             const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    hb_service *svc = ctx;
    const hb_parsed *p = parsed;
    hb_state s;
    hb_out out;
    char why[160];
    if (hb_record_open(&s, &out, key, state_json, why, sizeof why) != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "record of %s: %s", key, why);
    hb_result r = HB_OK;
    hb_persona_cfg cfg;
    switch (p->kind) {
    case HB_IN_MESSAGE:
        r = hb_on_message(&s, &svc->core, &p->msg, now_ms, &out);
        break;
    case HB_IN_CONFIG:
        if (hb_config_joins_full_room(&s, &p->cfg, p->room_members, VIGIL_ROUTE_MAX_KEYS)) {
            hb_record_close(&s, &out);
            return hb_room_limit(p->cfg.room, err);
        }
        /* apply may run again on a conflict: the core takes a copy */
        cfg = p->cfg;
        cfg.checklist = p->cfg.checklist ? strdup(p->cfg.checklist) : NULL;
        cfg.identity = p->cfg.identity ? strdup(p->cfg.identity) : NULL;
        if ((p->cfg.checklist && !cfg.checklist) || (p->cfg.identity && !cfg.identity))
            r = HB_ERR_NOMEM;
        else
            r = hb_on_config(&s, &svc->core, &cfg, now_ms, &out);
        hb_persona_cfg_clear(&cfg);
        break;
    case HB_IN_CONFIG_CLEARED:
        r = hb_on_config_cleared(&s, &out);
        if (r == HB_OK && out.changed)
            vigil_log_kv(VIGIL_LOG_INFO, "heartbeat deleted: its config was cleared", "persona",
                         key, NULL);
        break;
    case HB_IN_LEVELS:
        r = hb_on_levels(&s, p->levels, p->n_levels, now_ms, &out);
        break;
    }
    int rc = 0;
    if (r != HB_OK || hb_out_to_fx(svc, key, &s, &out, fx) != 0 ||
        limit_fx(key, in, &out, now_ms, fx) != 0)
        rc = vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory deciding %s",
                             in->id[0] ? in->id : in->topic); /* a clear has no id */
    hb_record_close(&s, &out);
    return rc;
}

/* A run the timer ended before the model (a skip, a run given up),
 * counted by its reason. */
static void count_skips(const hb_out *out)
{
    if (!out->run.outcome)
        return;
    char labels[96];
    const char *reason = out->run.reason ? out->run.reason : "unknown";
    snprintf(labels, sizeof labels, "reason=\"%.40s\"", reason);
    vigil_counter_add("vigil_heartbeat_skipped_total",
                      "Runs that ended before the model (skips, given-up runs), by reason", labels,
                      1);
}

/* A checklist kept in a file is read again before a run may start, so an
 * edit of the file steers the next run (without re-publishing the config);
 * a run in flight or a switched-off heartbeat starts none and needs none. */
static hb_result reread_checklist(const hb_service *svc, hb_state *s, hb_out *out)
{
    if (!s->cfg.set || !s->cfg.enabled || !s->cfg.checklist_file[0] || s->running[0])
        return HB_OK;
    char *text = NULL, why[160];
    vigil_reject_reason bad = hb_checklist_read(svc, s->cfg.checklist_file, &text, why, sizeof why);
    if (bad == VIGIL_REJECT_NO_MEMORY)
        return HB_ERR_NOMEM;
    hb_result r = hb_checklist_file_read(s, text, bad == VIGIL_REJECT_NONE ? NULL : why, out);
    free(text);
    return r;
}

int hb_on_timer_fx(void *ctx, const char *key, const char *state_json, const char *timer_name,
                   int64_t due_ms, int64_t now_ms, vigil_effects *fx)
{
    hb_service *svc = ctx;
    if (strcmp(timer_name, HB_TIMER) != 0)
        return 0;
    hb_state s;
    hb_out out;
    char why[160];
    if (hb_record_open(&s, &out, key, state_json, why, sizeof why) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "heartbeat record unreadable", "persona", key, "error", why,
                     NULL);
        return -1;
    }
    int rc = 0;
    if (reread_checklist(svc, &s, &out) != HB_OK ||
        hb_on_timer(&s, &svc->core, due_ms, now_ms, &out) != HB_OK ||
        hb_out_to_fx(svc, key, &s, &out, fx) != 0)
        rc = -1;
    else
        count_skips(&out);
    if (rc == 0 && out.job)
        vigil_counter_add("vigil_heartbeat_runs_started_total", "Runs handed to the model", NULL, 1);
    hb_record_close(&s, &out);
    return rc;
}
