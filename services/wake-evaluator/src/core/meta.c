/* meta.c - PersonaMetadata from persona/{p}/meta (retained):
 * role, expertise domains, per-domain confidence, tier or model size,
 * model, availability, mood, and the dormancy overrides that matter here
 * (enableAutoWake, enableLLMWakeDecisions, wakeConfidenceThreshold). */
#include <string.h>
#include "wake.h"

static void copy_meta(wake_persona *p, const wake_meta *m)
{
    vigil_utf8_copy(p->name, WAKE_NAME_MAX + 1, m->name ? m->name : "");
    vigil_utf8_copy(p->role, WAKE_NAME_MAX + 1, m->role ? m->role : "");
    vigil_utf8_copy(p->model, WAKE_NAME_MAX + 1, m->model ? m->model : "");
    vigil_utf8_copy(p->mood, WAKE_SHORT_MAX + 1, m->mood ? m->mood : "");
    wake_tier t;
    if (m->tier && wake_tier_parse(m->tier, &t) == 0)
        vigil_utf8_copy(p->tier, sizeof p->tier, m->tier);
    else
        p->tier[0] = '\0';
    p->parameters = m->parameters;
    p->availability = m->availability;
    p->n_domains = 0;
    for (int i = 0; i < m->n_domains && p->n_domains < WAKE_DOMAINS_MAX; i++)
        if (m->domains[i] && m->domains[i][0])
            vigil_utf8_copy(p->domains[p->n_domains++], WAKE_SHORT_MAX + 1, m->domains[i]);
    p->n_conf = 0;
    for (int i = 0; i < m->n_conf && p->n_conf < WAKE_DOMAINS_MAX; i++) {
        vigil_utf8_copy(p->conf_domain[p->n_conf], WAKE_SHORT_MAX + 1, m->conf_domains[i]);
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
