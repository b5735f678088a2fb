/* cfg_payload.c - reading heartbeat/{p}/config: who the persona serves and
 * where, its checklist (the default HEARTBEAT.md if none), quiet hours in
 * a time zone (true: the night; false or none given: none), the switch, the
 * allow list and an optional model. Every field is checked; a bad one names
 * itself in err. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/json.h>
#include "heartbeat.h"

/* The specified HEARTBEAT.md word for word but for the title, generic on
 * purpose: the original "# Orion Heartbeat Protocol" names its own assistant,
 * while a Vigil persona has its own name, given by the prompt's identity
 * line, and "Orion" above the checklist would contradict it. */
const char HB_DEFAULT_CHECKLIST[] =
    "# Heartbeat Protocol\n"
    "\n"
    "When running a heartbeat check, review the following:\n"
    "\n"
    "## Check 1: Pending Items\n"
    "- Are there any tasks or requests from the user that I said I would do?\n"
    "- Are there any follow-ups I promised but haven't done?\n"
    "- Did the user ask me to remind them about something?\n"
    "\n"
    "## Check 2: Context Relevance\n"
    "- Has anything new happened (based on recent memory) that the user should know about?\n"
    "- Are there patterns I've noticed that might be worth sharing?\n"
    "- Is there a better time to share something I've been waiting to share?\n"
    "\n"
    "## Check 3: Timing Assessment\n"
    "- What time is it locally for the user?\n"
    "- When did we last interact? How long ago?\n"
    "- Is this a reasonable time to interrupt them?\n"
    "\n"
    "## Check 4: Value Assessment\n"
    "- If I send a message, will it genuinely help them right now?\n"
    "- Or am I sending it because it's interesting to ME, not them?\n"
    "- Can this wait until they reach out?\n"
    "\n"
    "## Response Protocol\n"
    "- If nothing needs attention: reply HEARTBEAT_OK (this reply is stripped and not shown)\n"
    "- If something needs attention: compose and send the message\n"
    "- Never send more than one proactive message per heartbeat unless truly urgent\n";

/* A string value (a field's, an array element's) with heartbeat's own
 * statuses and texts over libshared's one rule (vigil_json_str_check): a
 * NUL inside (from \u0000) is refused, since every reader here takes it as
 * a C string and would silently see a shorter value ("Asia/Jakarta\u0000x"
 * as Asia/Jakarta, a checklist cut at the NUL). v NULL (absent or JSON
 * null): HB_CFG_OK with *out NULL unless required. */
static hb_cfg_status str_value(json_object *v, const char *k, bool required, const char **out,
                               char *err, size_t errlen)
{
    *out = NULL;
    switch (vigil_json_str_check(v, out)) {
    case VIGIL_JSON_STR_OK:
        return HB_CFG_OK;
    case VIGIL_JSON_STR_ABSENT:
        if (!required)
            return HB_CFG_OK;
        snprintf(err, errlen, "field '%s': missing", k);
        return HB_CFG_MISSING;
    case VIGIL_JSON_STR_NOT_STRING:
        snprintf(err, errlen, "field '%s': expected string", k);
        return HB_CFG_WRONG_TYPE;
    case VIGIL_JSON_STR_HAS_NUL:
        break;
    }
    snprintf(err, errlen, "field '%s': string contains NUL", k);
    return HB_CFG_BAD_VALUE;
}

/* A string field: HB_CFG_OK with *out (or NULL when absent and optional). */
static hb_cfg_status str_field(json_object *o, const char *k, bool required, const char **out,
                               char *err, size_t errlen)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v))
        v = NULL;
    return str_value(v, k, required, out, err, errlen);
}

static hb_cfg_status id_field(json_object *o, const char *k, char *dst, size_t n, char *err,
                              size_t errlen)
{
    const char *s;
    hb_cfg_status st = str_field(o, k, true, &s, err, errlen);
    if (st != HB_CFG_OK)
        return st;
    if (!vigil_id_valid(s, strlen(s))) {
        snprintf(err, errlen, "field '%s': not an id (1-64 of A-Z a-z 0-9 . _ -)", k);
        return HB_CFG_BAD_ID;
    }
    snprintf(dst, n, "%s", s);
    return HB_CFG_OK;
}

static hb_cfg_status set_tz(const hb_config *c, const char *name, hb_persona_cfg *cfg, char *err,
                            size_t errlen)
{
    if (!name)
        return HB_CFG_OK;
    if (strlen(name) > HB_TZ_NAME_MAX) {
        snprintf(err, errlen, "time zone '%.*s...': longer than %d bytes (an IANA name such as "
                 "Asia/Jakarta)", (int)vigil_utf8_cut_max(name, 64), name, HB_TZ_NAME_MAX);
        return HB_CFG_BAD_VALUE;
    }
    if (!c->tz.lookup || !c->tz.lookup(c->tz.arg, name)) {
        snprintf(err, errlen, "unknown time zone '%.*s' (an IANA name such as Asia/Jakarta)",
                 (int)vigil_utf8_cut_max(name, 64), name);
        return HB_CFG_BAD_VALUE;
    }
    snprintf(cfg->tz, sizeof cfg->tz, "%s", name);
    return HB_CFG_OK;
}

static hb_cfg_status quiet_hours(json_object *o, const hb_config *c, hb_persona_cfg *cfg,
                                 char *err, size_t errlen)
{
    json_object *q;
    if (!json_object_object_get_ex(o, "quiet_hours", &q) || json_object_is_type(q, json_type_null))
        return HB_CFG_OK;
    int start, end;
    if (json_object_is_type(q, json_type_boolean)) {
        /* true: the night, 22:00-07:00 local; false: none, as when absent */
        if (json_object_get_boolean(q))
            cfg->quiet = *hb_quiet_night();
        else
            cfg->quiet = (hb_quiet){0};
        return HB_CFG_OK;
    }
    if (json_object_is_type(q, json_type_string)) {
        const char *s;
        char a[8], b[8];
        hb_cfg_status st = str_value(q, "quiet_hours", true, &s, err, errlen);
        if (st != HB_CFG_OK)
            return st;
        if (strlen(s) != 11 || s[5] != '-') {
            snprintf(err, errlen, "field 'quiet_hours': expected \"HH:MM-HH:MM\"");
            return HB_CFG_BAD_VALUE;
        }
        memcpy(a, s, 5), a[5] = '\0';
        memcpy(b, s + 6, 5), b[5] = '\0';
        start = hb_parse_hhmm(a);
        end = hb_parse_hhmm(b);
    } else if (json_object_is_type(q, json_type_object)) {
        const char *a, *b, *tz;
        hb_cfg_status st;
        if ((st = str_field(q, "start", true, &a, err, errlen)) != HB_CFG_OK ||
            (st = str_field(q, "end", true, &b, err, errlen)) != HB_CFG_OK ||
            (st = str_field(q, "timezone", false, &tz, err, errlen)) != HB_CFG_OK) {
            char inner[200];
            snprintf(inner, sizeof inner, "%s", err);
            snprintf(err, errlen, "quiet_hours: %s", inner);
            return st;
        }
        start = hb_parse_hhmm(a);
        end = hb_parse_hhmm(b);
        if ((st = set_tz(c, tz, cfg, err, errlen)) != HB_CFG_OK)
            return st;
    } else {
        snprintf(err, errlen, "field 'quiet_hours': expected object, string or boolean");
        return HB_CFG_WRONG_TYPE;
    }
    if (start < 0 || end < 0) {
        snprintf(err, errlen, "field 'quiet_hours': times must be HH:MM (00:00-23:59)");
        return HB_CFG_BAD_VALUE;
    }
    /* A window from a time to itself holds no minute, or every minute:
     * either reading would surprise someone, so it is refused (false, or
     * no quiet_hours, is "none"). */
    if (start == end) {
        snprintf(err, errlen, "field 'quiet_hours': start and end are the same time (an empty "
                              "window; false means none)");
        return HB_CFG_BAD_VALUE;
    }
    cfg->quiet.set = true;
    cfg->quiet.start_min = start;
    cfg->quiet.end_min = end;
    return HB_CFG_OK;
}

static hb_cfg_status allow_list(json_object *o, hb_persona_cfg *cfg, char *err, size_t errlen)
{
    json_object *a;
    cfg->allow = HB_ALLOW_ALL;
    if (!json_object_object_get_ex(o, "allow_proactive", &a) || json_object_is_type(a, json_type_null))
        return HB_CFG_OK;
    if (json_object_is_type(a, json_type_boolean)) {
        cfg->allow = json_object_get_boolean(a) ? HB_ALLOW_ALL : 0;
        return HB_CFG_OK;
    }
    if (!json_object_is_type(a, json_type_array)) {
        snprintf(err, errlen, "field 'allow_proactive': expected boolean or array of categories");
        return HB_CFG_WRONG_TYPE;
    }
    cfg->allow = 0;
    size_t n = json_object_array_length(a);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(a, i);
        if (!json_object_is_type(e, json_type_string)) {
            snprintf(err, errlen, "field 'allow_proactive[%zu]': expected string", i);
            return HB_CFG_WRONG_TYPE;
        }
        char field[40];
        const char *name;
        snprintf(field, sizeof field, "allow_proactive[%zu]", i);
        hb_cfg_status st = str_value(e, field, true, &name, err, errlen);
        if (st != HB_CFG_OK)
            return st;
        int cat = hb_category_parse(name);
        if (cat < 0) {
            snprintf(err, errlen, "field '%s': unknown category '%.*s'", field,
                     (int)vigil_utf8_cut_max(name, 40), name);
            return HB_CFG_BAD_VALUE;
        }
        cfg->allow |= 1u << cat;
    }
    return HB_CFG_OK;
}

static hb_cfg_status text_field(json_object *o, const char *k, size_t max, char **dst,
                                char *err, size_t errlen)
{
    const char *s;
    hb_cfg_status st = str_field(o, k, false, &s, err, errlen);
    if (st != HB_CFG_OK || !s)
        return st;
    if (strlen(s) > max) {
        snprintf(err, errlen, "field '%s': longer than %zu bytes", k, max);
        return HB_CFG_BAD_VALUE;
    }
    free(*dst);
    *dst = strdup(s);
    if (*dst)
        return HB_CFG_OK;
    snprintf(err, errlen, "field '%s': out of memory", k);
    return HB_CFG_NOMEM;
}

hb_cfg_status hb_config_payload(json_object *body, const hb_config *c, const char *checklist_text,
                                hb_persona_cfg *cfg, char *err, size_t errlen)
{
    hb_cfg_status st;
    json_object *v;
    const char *tz, *model;
    memset(cfg, 0, sizeof *cfg);
    cfg->set = true;
    if ((st = id_field(body, "persona", cfg->persona, sizeof cfg->persona, err, errlen)) ||
        (st = id_field(body, "user", cfg->user, sizeof cfg->user, err, errlen)) ||
        (st = id_field(body, "room", cfg->room, sizeof cfg->room, err, errlen)))
        goto fail;
    if (!json_object_object_get_ex(body, "enabled", &v) || json_object_is_type(v, json_type_null)) {
        snprintf(err, errlen, "field 'enabled': missing");
        st = HB_CFG_MISSING;
        goto fail;
    }
    if (!json_object_is_type(v, json_type_boolean)) {
        snprintf(err, errlen, "field 'enabled': expected boolean");
        st = HB_CFG_WRONG_TYPE;
        goto fail;
    }
    cfg->enabled = json_object_get_boolean(v);
    if ((st = text_field(body, "checklist", HB_CHECKLIST_MAX, &cfg->checklist, err, errlen)) ||
        (st = text_field(body, "identity", HB_IDENTITY_MAX, &cfg->identity, err, errlen)) ||
        (st = str_field(body, "timezone", false, &tz, err, errlen)) ||
        (st = set_tz(c, tz, cfg, err, errlen)) || (st = quiet_hours(body, c, cfg, err, errlen)) ||
        (st = allow_list(body, cfg, err, errlen)) ||
        (st = str_field(body, "model", false, &model, err, errlen)))
        goto fail;
    if (model && (strlen(model) > HB_MODEL_MAX || !model[0])) {
        snprintf(err, errlen, "field 'model': 1-%d bytes", HB_MODEL_MAX);
        st = HB_CFG_BAD_VALUE;
        goto fail;
    }
    snprintf(cfg->model, sizeof cfg->model, "%s", model ? model : "");
    if (checklist_text) {
        const char *file;
        if ((st = str_field(body, "checklist_file", false, &file, err, errlen)))
            goto fail;
        if (file && strlen(file) > HB_CHECKLIST_FILE_NAME_MAX) {
            snprintf(err, errlen, "field 'checklist_file': longer than %d bytes",
                     HB_CHECKLIST_FILE_NAME_MAX);
            st = HB_CFG_BAD_VALUE;
            goto fail;
        }
        snprintf(cfg->checklist_file, sizeof cfg->checklist_file, "%s", file ? file : "");
        if (strlen(checklist_text) > HB_CHECKLIST_MAX) {
            snprintf(err, errlen, "checklist file: longer than %d bytes", HB_CHECKLIST_MAX);
            st = HB_CFG_BAD_VALUE;
            goto fail;
        }
        free(cfg->checklist);
        cfg->checklist = strdup(checklist_text);
    } else if (!cfg->checklist) {
        cfg->checklist = strdup(HB_DEFAULT_CHECKLIST);
    }
    if (!cfg->checklist) {
        st = HB_CFG_NOMEM;
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    return HB_CFG_OK;
fail:
    hb_persona_cfg_clear(cfg);
    return st;
}
