/* match.c - does a message concern a persona: its expertise domains, or
 * else its role, as whole words of the text (vigil_text's word rule, so
 * "testing" is not found in "attesting"). A domain or role written with
 * '-' or '_' ("machine-learning", "code-review") also matches with spaces
 * ("machine learning", "code review"). */
#include <stdio.h>
#include <string.h>
#include <vigil/text.h>
#include "floor.h"

static double conf_or_default(double c)
{
    return c == FLOOR_CONFIDENCE_UNSET ? FLOOR_CONFIDENCE_DEFAULT : c;
}

/* A domain or role as a whole word or phrase of text: as written, or with
 * its '-' and '_' read as spaces (people write "machine learning" for the
 * domain "machine-learning", "code review" for the role "code-review"). */
static bool phrase_in(const char *phrase, const char *text)
{
    if (!phrase[0])
        return false;
    if (vigil_text_has_word(text, phrase))
        return true;
    char spaced[FLOOR_WORD_MAX + 1];
    snprintf(spaced, sizeof spaced, "%s", phrase);
    bool changed = false;
    for (char *s = spaced; *s; s++)
        if (*s == '-' || *s == '_') {
            *s = ' ';
            changed = true;
        }
    return changed && vigil_text_has_word(text, spaced);
}

int floor_match(const floor_persona *p, const char *text, const char **domain, double *score)
{
    int best = -1;
    double best_score = -1.0;
    if (!text)
        return -1;
    for (int i = 0; i < p->n_domains; i++) {
        if (!phrase_in(p->domains[i], text))
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
    if (phrase_in(p->role, text)) {
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
