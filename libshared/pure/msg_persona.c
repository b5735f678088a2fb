/* msg_persona.c - the readers of persona/{persona}/meta (with the
 * `dormancy` overrides), state and command (msg_persona.h). */
#include "vigil/msg_persona.h"
#include "vigil/human_wake.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- dormancy overrides ------------------------------------------------ */

typedef enum { K_BOOL, K_MS, K_COUNT, K_RATIO } key_type;

typedef struct key_spec {
    const char *name;
    unsigned bit;
    key_type type;
    size_t off; /* offset of the field in vigil_dormancy_overrides */
    int64_t min; /* least value of a number: that of the matching VIGIL_DORMANCY_* variable */
} key_spec;

#define OFF(f) offsetof(vigil_dormancy_overrides, f)
static const key_spec KEYS[] = {
    {"enableAutoSuggestions", VIGIL_OV_AUTO_SUGGEST, K_BOOL, OFF(auto_suggest), 0},
    {"enableAutoSleep", VIGIL_OV_AUTO_SLEEP, K_BOOL, OFF(auto_sleep), 0},
    {"enableAutoWake", VIGIL_OV_AUTO_WAKE, K_BOOL, OFF(auto_wake), 0},
    {"noHumanActivityThreshold", VIGIL_OV_NO_HUMAN, K_MS, OFF(no_human_ms), 1},
    {"aiOnlyDiscussionThreshold", VIGIL_OV_AI_ONLY, K_MS, OFF(ai_only_ms), 1},
    {"redundantResponseWindow", VIGIL_OV_REDUNDANT_WINDOW, K_MS, OFF(redundant_window_ms), 0},
    {"enableLLMWakeDecisions", VIGIL_OV_LLM_WAKE, K_BOOL, OFF(llm_wake), 0},
    {"wakeConfidenceThreshold", VIGIL_OV_WAKE_CONFIDENCE, K_RATIO, OFF(wake_confidence), 0},
    {"enablePresenceChecking", VIGIL_OV_PRESENCE, K_BOOL, OFF(presence), 0},
    {"enableAdaptiveThresholds", VIGIL_OV_ADAPTIVE, K_BOOL, OFF(adaptive), 0},
    {"suggestionTimeout", VIGIL_OV_SUGGESTION_TIMEOUT, K_MS, OFF(suggestion_timeout_ms), 1},
    {"snoozeDuration", VIGIL_OV_SNOOZE, K_MS, OFF(snooze_ms), 1},
    {"redundantResponseKeep", VIGIL_OV_REDUNDANT_KEEP, K_COUNT, OFF(redundant_keep), 0},
};
#undef OFF
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

/* One key of the table into its field, checked for type and range. */
static int read_key(json_object *o, const key_spec *k, vigil_dormancy_overrides *ov,
                    vigil_error *err)
{
    char *field = (char *)ov + k->off;
    switch (k->type) {
    case K_BOOL: {
        bool b;
        if (vigil_json_bool(o, k->name, true, &b, err) < 0)
            break;
        memcpy(field, &b, sizeof b);
        return 0;
    }
    case K_MS:
    case K_COUNT: {
        int64_t v;
        int64_t max = k->type == K_MS ? VIGIL_OVERRIDE_MAX_MS : VIGIL_OVERRIDE_MAX_COUNT;
        if (vigil_json_int64(o, k->name, true, &v, err) < 0)
            break;
        if (v < k->min || v > max) {
            vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%lld out of range %lld..%lld",
                            (long long)v, (long long)k->min, (long long)max);
            break;
        }
        if (k->type == K_MS) {
            memcpy(field, &v, sizeof v);
        } else {
            int i = (int)v;
            memcpy(field, &i, sizeof i);
        }
        return 0;
    }
    case K_RATIO: {
        double d;
        if (vigil_json_double(o, k->name, true, &d, err) < 0)
            break;
        if (!(d >= 0.0 && d <= 1.0)) {
            vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "expected 0..1");
            break;
        }
        memcpy(field, &d, sizeof d);
        return 0;
    }
    }
    return -1;
}

int vigil_dormancy_overrides_read(json_object *o, vigil_dormancy_overrides *ov, vigil_error *err)
{
    memset(ov, 0, sizeof *ov);
    if (!o)
        return 0;
    if (!json_object_is_type(o, json_type_object))
        return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE, "field 'dormancy': expected object");
    for (size_t i = 0; i < N_KEYS; i++) {
        json_object *v;
        if (!json_object_object_get_ex(o, KEYS[i].name, &v) || v == NULL)
            continue;
        if (read_key(o, &KEYS[i], ov, err) < 0) {
            /* name the key inside its object, whatever the getter said */
            vigil_reject_reason r = err->reason;
            if (r == VIGIL_REJECT_WRONG_TYPE) {
                static const char *const TYPES[] = {"boolean", "integer", "integer", "number"};
                return vigil_error_set(err, r, "field 'dormancy.%s': expected %s", KEYS[i].name,
                                       TYPES[KEYS[i].type]);
            }
            char inner[sizeof err->detail];
            memcpy(inner, err->detail, sizeof inner);
            inner[sizeof inner - 1] = '\0';
            return vigil_error_set(err, r, "field 'dormancy.%s': %.*s", KEYS[i].name,
                                   (int)vigil_utf8_cut_max(inner, 120), inner);
        }
        ov->has |= KEYS[i].bit;
    }
    return 0;
}

json_object *vigil_dormancy_overrides_to_json(const vigil_dormancy_overrides *ov)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    for (size_t i = 0; i < N_KEYS; i++) {
        if (!(ov->has & KEYS[i].bit))
            continue;
        const char *field = (const char *)ov + KEYS[i].off;
        json_object *v = NULL;
        switch (KEYS[i].type) {
        case K_BOOL: {
            bool b;
            memcpy(&b, field, sizeof b);
            v = json_object_new_boolean(b);
            break;
        }
        case K_MS: {
            int64_t x;
            memcpy(&x, field, sizeof x);
            v = json_object_new_int64(x);
            break;
        }
        case K_COUNT: {
            int x;
            memcpy(&x, field, sizeof x);
            v = json_object_new_int(x);
            break;
        }
        case K_RATIO: {
            double d;
            memcpy(&d, field, sizeof d);
            v = json_object_new_double(d);
            break;
        }
        }
        if (!v || json_object_object_add(o, KEYS[i].name, v) != 0) {
            json_object_put(v);
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

/* ---- meta ------------------------------------------------------------- */

static int probability(json_object *o, const char *field, double *out, vigil_error *err)
{
    int rc = vigil_json_double(o, field, false, out, err);
    if (rc == 0 && !(*out >= 0.0 && *out <= 1.0))
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': expected 0..1", field);
    return rc;
}

/* confidence_levels: {domain: 0..1}, at most VIGIL_MSG_MAX_DOMAINS. */
static int read_confidence(json_object *b, vigil_persona_meta *m, vigil_error *err)
{
    json_object *cl = NULL;
    if (vigil_json_object(b, vigil_json_field_or(b, "confidence_levels", "confidenceLevels"), false,
                          &cl, err) < 0)
        return -1;
    if (!cl)
        return 0;
    int n = json_object_object_length(cl);
    if (n > VIGIL_MSG_MAX_DOMAINS)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "field 'confidence_levels': more than %d entries",
                               VIGIL_MSG_MAX_DOMAINS);
    m->conf_domains = calloc((size_t)n + 1, sizeof *m->conf_domains);
    m->conf_values = calloc((size_t)n + 1, sizeof *m->conf_values);
    if (!m->conf_domains || !m->conf_values)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory");
    json_object_object_foreach(cl, k, v) {
        if (!v || !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field 'confidence_levels.%.*s': expected number",
                                   (int)vigil_utf8_cut_max(k, 60), k);
        double x = json_object_get_double(v);
        if (!(x >= 0.0 && x <= 1.0))
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'confidence_levels.%.*s': expected 0..1",
                                   (int)vigil_utf8_cut_max(k, 60), k);
        m->conf_domains[m->n_conf] = k;
        m->conf_values[m->n_conf++] = x;
    }
    return 0;
}

/* The contract's rooms are unique (uniqueItems): a room named twice is a
 * producer's mistake, refused like any other rather than read past. At
 * most max_rooms (64) entries, so the quadratic check is small. */
static int rooms_unique(const vigil_persona_meta *m, vigil_error *err)
{
    for (int i = 1; i < m->n_rooms; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(m->rooms[i], m->rooms[j]) == 0)
                return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                       "field 'rooms': '%.64s' is listed twice", m->rooms[i]);
    return 0;
}

/* The specification's own PersonaMetadata names (expertiseDomains,
 * confidenceLevels, availabilityHeuristic, currentMood) are read where the
 * contract's are absent: a persona runner written from it is understood,
 * not silently taken for a persona without expertise. */
static int read_meta(json_object *b, int max_rooms, vigil_persona_meta *m, vigil_error *err)
{
    json_object *dorm = NULL;
    int tier = -1, params = 1;
    if (vigil_json_string(b, "name", false, &m->name, err) < 0 ||
        vigil_json_string(b, "role", false, &m->role, err) < 0 ||
        vigil_json_string(b, "model", false, &m->model, err) < 0 ||
        vigil_json_string(b, vigil_json_field_or(b, "mood", "currentMood"), false, &m->mood, err) < 0 ||
        vigil_json_enum(b, "tier", false, vigil_tier_names, &tier, err) < 0 ||
        (params = vigil_json_int64(b, "parameters", false, &m->parameters, err)) < 0 ||
        probability(b, vigil_json_field_or(b, "availability", "availabilityHeuristic"),
                    &m->availability, err) < 0 ||
        vigil_json_object(b, "dormancy", false, &dorm, err) < 0 ||
        vigil_dormancy_overrides_read(dorm, &m->dormancy, err) < 0)
        return -1;
    /* -1 is this struct's "not given"; the field itself must be a count */
    if (params == 0 && m->parameters < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'parameters': must be >= 0");
    m->has_tier = tier >= 0;
    m->tier = tier >= 0 ? (vigil_tier)tier : VIGIL_TIER_BASIC;
    if (vigil_json_string_array(b, "rooms", false, true, max_rooms, &m->rooms, &m->n_rooms, err) < 0 ||
        rooms_unique(m, err) < 0 ||
        vigil_json_string_array(b, vigil_json_field_or(b, "expertise_domains", "expertiseDomains"),
                                false, false, VIGIL_MSG_MAX_DOMAINS,
                                &m->domains, &m->n_domains, err) < 0 ||
        read_confidence(b, m, err) < 0)
        return -1;
    return 0;
}

bool vigil_dormancy_overrides_equal(const vigil_dormancy_overrides *a,
                                    const vigil_dormancy_overrides *b)
{
    return a->has == b->has && a->auto_suggest == b->auto_suggest &&
           a->auto_sleep == b->auto_sleep && a->auto_wake == b->auto_wake &&
           a->llm_wake == b->llm_wake && a->presence == b->presence &&
           a->adaptive == b->adaptive && a->no_human_ms == b->no_human_ms &&
           a->ai_only_ms == b->ai_only_ms && a->redundant_window_ms == b->redundant_window_ms &&
           a->suggestion_timeout_ms == b->suggestion_timeout_ms && a->snooze_ms == b->snooze_ms &&
           a->redundant_keep == b->redundant_keep && a->wake_confidence == b->wake_confidence;
}

void vigil_persona_meta_init(vigil_persona_meta *m)
{
    memset(m, 0, sizeof *m);
    m->parameters = -1;
    m->availability = -1;
}

int vigil_persona_meta_read(json_object *b, int max_rooms, vigil_persona_meta *m, vigil_error *err)
{
    vigil_persona_meta_init(m);
    if (read_meta(b, max_rooms, m, err) < 0) {
        vigil_persona_meta_release(m);
        return -1;
    }
    return 0;
}

void vigil_persona_meta_release(vigil_persona_meta *m)
{
    if (!m)
        return;
    free(m->rooms);
    free(m->domains);
    free(m->conf_domains);
    free(m->conf_values);
    m->rooms = m->domains = m->conf_domains = NULL;
    m->conf_values = NULL;
    m->n_rooms = m->n_domains = m->n_conf = 0;
}

/* ---- state ------------------------------------------------------------ */

static int read_room_state(const char *room, json_object *e, vigil_persona_room_state *x,
                           vigil_error *err)
{
    int level, rc, rc_order, cause = -1;
    if (!vigil_id_valid(room, strlen(room)))
        return vigil_error_set(err, VIGIL_REJECT_BAD_ID, "field 'rooms': key '%.*s' is not an id",
                               (int)vigil_utf8_cut_max(room, 64), room);
    if (!e || !json_object_is_type(e, json_type_object))
        return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE, "field 'rooms.%s': expected object",
                               room);
    x->room = room;
    if (vigil_json_enum(e, "level", true, vigil_level_names, &level, err) < 0 ||
        (rc = vigil_json_int64(e, "since", false, &x->since, err)) < 0 ||
        vigil_json_string(e, "trigger", false, &x->trigger, err) < 0 ||
        vigil_json_int64(e, "snoozed_until", false, &x->snoozed_until, err) < 0 ||
        vigil_json_enum(e, "cause", false, vigil_cause_names + 1, &cause, err) < 0 ||
        vigil_json_int64(e, "answered_human", false, &x->answered_human, err) < 0 ||
        (rc_order = vigil_json_int64(e, "order", false, &x->order, err)) < 0)
        goto inner;
    if (x->since < 0 || x->snoozed_until < 0 || x->answered_human < 0 || x->order < 0) {
        vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%s: must be >= 0",
                        x->since < 0           ? "since"
                        : x->snoozed_until < 0 ? "snoozed_until"
                        : x->answered_human < 0 ? "answered_human"
                                                : "order");
        goto inner;
    }
    x->level = (vigil_level)level;
    x->has_since = rc == 0;
    x->cause = cause < 0 ? VIGIL_CAUSE_NONE : cause + 1; /* names from "absence" on */
    x->has_order = rc_order == 0;
    return 0;
inner: { /* name the room: "rooms.<room>.<detail>" */
    char d[sizeof err->detail];
    memcpy(d, err->detail, sizeof d);
    d[sizeof d - 1] = '\0';
    return vigil_error_set(err, err->reason, "field 'rooms.%.64s': %.*s", room,
                           (int)vigil_utf8_cut_max(d, 120), d);
}
}

int vigil_persona_state_read(json_object *b, int max_rooms, vigil_persona_state *s,
                             vigil_error *err)
{
    json_object *rooms;
    memset(s, 0, sizeof *s);
    if (vigil_json_object(b, "rooms", true, &rooms, err) < 0)
        return -1;
    int n = json_object_object_length(rooms);
    if (n > max_rooms)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'rooms': more than %d entries",
                               max_rooms);
    if (n == 0)
        return 0;
    s->rooms = calloc((size_t)n, sizeof *s->rooms);
    if (!s->rooms)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory");
    json_object_object_foreach(rooms, room, entry) {
        if (read_room_state(room, entry, &s->rooms[s->n_rooms], err) < 0) {
            vigil_persona_state_release(s);
            return -1;
        }
        s->n_rooms++;
    }
    return 0;
}

void vigil_persona_state_release(vigil_persona_state *s)
{
    if (!s)
        return;
    free(s->rooms);
    s->rooms = NULL;
    s->n_rooms = 0;
}

const vigil_persona_room_state *vigil_persona_state_room(const vigil_persona_state *s,
                                                         const char *room)
{
    for (int i = 0; s && room && i < s->n_rooms; i++)
        if (strcmp(s->rooms[i].room, room) == 0)
            return &s->rooms[i];
    return NULL;
}

/* ---- command ---------------------------------------------------------- */

/* An answer as the suggestion's buttons name it ("Yes", "NO") is the
 * answer its lowercase name is: only the word matters, not its case. One
 * holding a NUL ("yes\u0000no") is no answer (vigil_json_str_check): it
 * goes on to vigil_json_enum, which refuses it, rather than being read
 * as the word before the NUL. */
static int read_answer(json_object *b, bool required, int *answer, vigil_error *err)
{
    json_object *v = NULL;
    const char *s = NULL;
    json_object_object_get_ex(b, "answer", &v);
    if (vigil_json_str_check(v, &s) == VIGIL_JSON_STR_OK) {
        int i = vigil_answer_index(s);
        if (i >= 0) {
            *answer = i;
            return 0;
        }
    }
    return vigil_json_enum(b, "answer", required, vigil_answer_names, answer, err);
}

int vigil_persona_command_read(json_object *b, int64_t now_ms, vigil_persona_command *c,
                               vigil_error *err)
{
    int cmd, level = -1, answer = -1, rc;
    memset(c, 0, sizeof *c);
    if (vigil_json_enum(b, "cmd", true, vigil_command_names, &cmd, err) < 0 ||
        vigil_json_enum(b, "level", false, vigil_level_names, &level, err) < 0 ||
        (rc = vigil_json_int64(b, "until", false, &c->until, err)) < 0 ||
        vigil_json_id(b, "room", false, &c->room, err) < 0 ||
        vigil_json_string_bounded(b, "suggestion_id", false, VIGIL_MSG_SUGGESTION_ID_MAX, &c->suggestion_id,
                                  err) < 0 ||
        read_answer(b, cmd == VIGIL_COMMAND_ANSWER, &answer, err) < 0 ||
        vigil_json_id(b, "by", false, &c->by, err) < 0)
        return -1;
    if (rc == 0 && c->until < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'until': must be >= 0");
    c->cmd = (vigil_command)cmd;
    if (c->cmd == VIGIL_COMMAND_DORMANT) {
        if (level < 0)
            return vigil_error_set(err, VIGIL_REJECT_MISSING_FIELD,
                                   "field 'level': required for cmd 'dormant'");
        if (level == VIGIL_LEVEL_ACTIVE)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'level': 'dormant' needs mention-only, human-only or sleep");
        if (c->until != 0 && c->until <= now_ms)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'until': in the past");
    }
    c->has_level = level >= 0;
    c->level = level >= 0 ? (vigil_level)level : VIGIL_LEVEL_ACTIVE;
    c->has_answer = answer >= 0;
    c->answer = answer >= 0 ? (vigil_answer)answer : VIGIL_ANSWER_NO;
    return 0;
}
