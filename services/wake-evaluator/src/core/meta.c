/* meta.c - PersonaMetadata from persona/{p}/meta (retained):
 * role, expertise domains, per-domain confidence, tier or model size,
 * model, availability, mood, and the dormancy overrides that matter here
 * (enableAutoWake, enableLLMWakeDecisions, wakeConfidenceThreshold). */
#include <string.h>
#include "wake.h"

static void copy_meta(wake_persona *p, const wake_meta *m)
{
    wake_copy_utf8(p->name, m->name ? m->name : "", WAKE_NAME_MAX);
    wake_copy_utf8(p->role, m->role ? m->role : "", WAKE_NAME_MAX);
    wake_copy_utf8(p->model, m->model ? m->model : "", WAKE_NAME_MAX);
    wake_copy_utf8(p->mood, m->mood ? m->mood : "", WAKE_SHORT_MAX);
    wake_tier t;
    if (m->tier && wake_tier_parse(m->tier, &t) == 0)
        wake_copy_utf8(p->tier, m->tier, sizeof p->tier - 1);
    else
        p->tier[0] = '\0';
    p->parameters = m->parameters;
    p->availability = m->availability;
    p->n_domains = 0;
    for (int i = 0; i < m->n_domains && p->n_domains < WAKE_DOMAINS_MAX; i++)
        if (m->domains[i] && m->domains[i][0])
            wake_copy_utf8(p->domains[p->n_domains++], m->domains[i], WAKE_SHORT_MAX);
    p->n_conf = 0;
    for (int i = 0; i < m->n_conf && p->n_conf < WAKE_DOMAINS_MAX; i++) {
        wake_copy_utf8(p->conf_domain[p->n_conf], m->conf_domains[i], WAKE_SHORT_MAX);
        p->conf[p->n_conf++] = m->conf_values[i];
    }
    p->auto_wake_ov = m->auto_wake;
    p->llm_wake_ov = m->llm_wake;
    p->wake_conf_ov = m->wake_conf;
}

int wake_on_meta(wake_room *r, const wake_config *c, const wake_meta *m, bool member, int64_t now,
                 const wake_sink *sink)
{
    (void)now;
    wake_persona *p = wake_room_find(r, m->persona);
    if (!member) {
        if (!p)
            return 0;
        p->member = false;
        if (p->level == WAKE_LEVEL_UNKNOWN) {
            wake_room_remove(r, m->persona);
            return sink->member(sink->ctx, m->persona, false);
        }
        copy_meta(p, m); /* it stays (it has a level here): the profile is still the meta's */
        return 0;
    }
    if (!p) {
        p = wake_room_join(r, c, m->persona, sink);
        if (!p)
            return 0; /* room full */
        if (sink->member(sink->ctx, m->persona, true) != 0)
            return -1;
    }
    p->member = true;
    p->has_meta = true;
    copy_meta(p, m);
    return 0;
}
