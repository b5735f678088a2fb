/* match.c - does a message concern a persona: its expertise domains, or
 * else its role, as whole words of the text (vigil_text's word rule, so
 * "testing" is not found in "attesting"). A domain or role written with
 * '-' or '_' ("machine-learning", "code-review") also matches with spaces
 * ("machine learning", "code review"): libshared's vigil_text_has_phrase,
 * which wake-evaluator's autopilot reads domains with too. */
#include <stdio.h>
#include <string.h>
#include <vigil/text.h>
#include "floor.h"

static double conf_or_default(double c)
{
    return c == FLOOR_CONFIDENCE_UNSET ? FLOOR_CONFIDENCE_DEFAULT : c;
}

int floor_match(const floor_persona *p, const char *text, const char **domain, double *score)
{
    int best = -1;
    double best_score = -1.0;
    if (!text)
        return -1;
    for (int i = 0; i < p->n_domains; i++) {
        if (!vigil_text_has_phrase(text, p->domains[i]))
            continue;
        double s = conf_or_default(p->confidence[i]);
        if (s > best_score) {
            best_score = s;
            best = i;
        }
    }
    if (best >= 0) {
        if (domain)
            *domain = p->domains[best];
        if (score)
            *score = best_score;
        return FLOOR_WHY_DOMAIN;
    }
    if (vigil_text_has_phrase(text, p->role)) {
        /* a role match weighs as the persona's best confidence */
        double s = -1.0;
        for (int i = 0; i < p->n_domains; i++)
            if (conf_or_default(p->confidence[i]) > s)
                s = conf_or_default(p->confidence[i]);
        if (domain)
            *domain = p->role;
        if (score)
            *score = s < 0 ? FLOOR_CONFIDENCE_DEFAULT : s;
        return FLOOR_WHY_ROLE;
    }
    return -1;
}
