/* interpret.c - a model's answer to a wake prompt, into a decision.
 *
 * The JSON is found and fields are coerced by the tolerant readers handed
 * in (libshared's llm_parse: fences, prose, "yes", "85%"). What must be
 * there: shouldWake as a bool, and for the smart tier a confidence; without
 * them the answer is nonsense and the caller falls back to the rules.
 * Free text taken from the model (reason, alternativeSuggestion) is cut to
 * a bounded length and stripped of control characters: it is shown to
 * people and written to logs. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "internal.h"

static void clean_copy(char *out, size_t outlen, const char *s)
{
    vigil_utf8_copy(out, outlen, s ? s : "");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

static bool no_alternative(const char *s)
{
    static const char *const NONE[] = {"", "null", "none", "n/a", "no", "-", NULL};
    for (int i = 0; NONE[i]; i++)
        if (strcasecmp(s, NONE[i]) == 0)
            return true;
    return false;
}

int wake_interpret(const wake_reader *rd, wake_tier tier, const char *content, size_t len,
                   double threshold, wake_decision *d, char *why, size_t whylen)
{
    char ewhy[200] = "";
    json_object *o = rd->extract_object(content, len, ewhy, sizeof ewhy);
    if (!o) {
        snprintf(why, whylen, "no JSON object in the answer (%s)", ewhy);
        return -1;
    }
    int rc = -1;
    bool sw = false;
    int r = rd->read_bool(o, "shouldWake", &sw);
    if (r != 0) {
        snprintf(why, whylen, "shouldWake %s", r > 0 ? "missing" : "is not a boolean");
        goto done;
    }
    double conf = 1.0;
    char ctext[64], ttext[64];
    if (tier == WAKE_TIER_SMART) {
        r = rd->read_confidence(o, "confidence", &conf);
        if (r != 0) {
            snprintf(why, whylen, "confidence %s",
                     r > 0    ? "missing"
                     : r == -2 ? "out of range (neither 0..1 nor a whole percentage 2..100)"
                               : "is not a number");
            goto done;
        }
    }
    conf = wake_confidence_published(conf, ctext, sizeof ctext);
    const char *reason = NULL, *alt = NULL;
    char text[400]; /* < the %.400s below: never cut inside a character */
    if (rd->read_string(o, "reason", &reason) != 0 || !reason)
        reason = "";
    clean_copy(text, sizeof text, reason);
    if (!text[0])
        snprintf(text, sizeof text, "(no reason given)");
    d->alternative[0] = '\0';
    if (tier == WAKE_TIER_SMART && rd->read_string(o, "alternativeSuggestion", &alt) == 0 && alt) {
        clean_copy(d->alternative, sizeof d->alternative, alt);
        if (no_alternative(d->alternative))
            d->alternative[0] = '\0';
    }
    d->tier = tier;
    d->via = WAKE_VIA_LLM;
    d->confidence = conf;
    if (tier == WAKE_TIER_SMART) {
        d->should_wake = sw && conf > threshold;
        /* printed as published; the threshold with more decimals, so that
         * 0.7 against 0.7005 does not read "0.7 is not above 0.7" */
        wake_number_text(threshold, 6, ttext, sizeof ttext);
        if (sw && !d->should_wake)
            snprintf(d->reason, sizeof d->reason,
                     "shouldWake, but confidence %.16s is not above %.16s: %.400s", ctext, ttext,
                     text);
        else
            snprintf(d->reason, sizeof d->reason, "%s", text);
    } else {
        d->should_wake = sw; /* the mid answer is binary */
        snprintf(d->reason, sizeof d->reason, "%s", text);
    }
    rc = 0;
done:
    json_object_put(o);
    return rc;
}
