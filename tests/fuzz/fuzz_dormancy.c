/* fuzz_dormancy.c - dormancy-monitor's decision core over a room's life: a
 * stored record (possibly damaged), then a run of inputs read as the
 * service's route reads them (libshared's msg_room and msg_persona
 * readers) and deadlines coming due, each applied to the room kept from the
 * last step, as the service's record cache does.
 *
 * Input: parts separated by lines holding only "---":
 *   1. "<now ms> <switch bits> <no_human_ms> <ai_only_ms> <min_awake>
 *       <max_personas> <big_room>" (missing or bad numbers keep the
 *      defaults; now at most 2^59, a clock's; other ranges as the
 *      service's configuration allows; bits:
 *      1 auto_suggest off, 2 auto_sleep off, 4 auto_wake off, 8 llm_wake
 *      off, 16 presence, 32 adaptive, 64 human_wakes=all);
 *   2. the room's stored record (empty, or not UTF-8: no record; the store
 *      holds text the core wrote, though perhaps damaged);
 *   3... one input each: a first line "<dt ms> <kind> [<persona>]", the
 *      payload JSON after it; dt moves the clock on first. kind: message,
 *      presence, control, autopilot (room topics), command, meta, wake
 *      (persona topics), "timer" (no payload): the earliest deadline
 *      the room has set comes due (the clock moves on to it), or "clear"
 *      (no payload): the persona's retained meta cleared, which the route
 *      reads as the meta that says nothing.
 * What must hold, whatever the bytes: a step never fails; a refusal is
 * the step's only action and says why; levels and triggers are in range;
 * every action renders as JSON in valid UTF-8; the record written after a
 * step, in parts as the store keeps it, reads back to the same room; a
 * clear applied a second time (redelivered: it has no id to deduplicate
 * it by) makes no action and leaves the room as it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include "dormancy.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 24
#define CLEARED_MAX sizeof ((fuzz_step *)0)->arg /* a cleared persona: a step's arg */
#define ROOM "general"

static void make_id(void *ctx, int n, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s:" ROOM ":%d", (const char *)ctx, n);
}

/* The actions of one step, from index `from` of out. */
static void check_actions(const dormancy_room *r, const dormancy_config *cfg,
                          const dormancy_actions *out, size_t from, int64_t now)
{
    for (size_t i = from; i < out->n; i++) {
        const dormancy_action *a = &out->v[i];
        if (a->level >= DORMANCY_LEVEL__COUNT || a->previous >= DORMANCY_LEVEL__COUNT ||
            a->trigger >= DORMANCY_TRIGGER__COUNT)
            abort();
        switch (a->kind) {
        case DORMANCY_OUT_CHANGE:
            fuzz_json_check_free(dormancy_change_text(a, r->room, now));
            break;
        case DORMANCY_OUT_SUGGESTION:
            fuzz_json_check_obj(dormancy_suggestion_json(a, r->room, now));
            break;
        case DORMANCY_OUT_SYSTEM_MESSAGE:
            fuzz_json_check_obj(dormancy_system_message_json(a, r->room, "dormancy-monitor", now));
            break;
        case DORMANCY_OUT_PERSONA_STATE:
            fuzz_json_check_free(dormancy_persona_entry_text(a));
            break;
        case DORMANCY_OUT_ROOM_STATE:
            fuzz_json_check_free(dormancy_room_state_text(r, cfg, now));
            break;
        case DORMANCY_OUT_TIMER_SET:
        case DORMANCY_OUT_TIMER_CANCEL:
            if (a->timer[0] == '\0')
                abort();
            break;
        case DORMANCY_OUT_LIMIT:
            if (a->reason[0] == '\0')
                abort();
            break;
        case DORMANCY_OUT_REJECTED:
            if (a->reason[0] == '\0' || out->n - from != 1)
                abort(); /* a refusal is alone and says why */
            break;
        case DORMANCY_OUT_PERSONA_REMOVED:
        case DORMANCY_OUT_ROOM_CLEARED:
            break;
        default:
            abort();
        }
    }
}

/* The store: the head and a part per persona (a JSON object), as the
 * service's commit leaves them; and the record it hands back. */
static void store_commit(dormancy_room *r, json_object **store, char **head)
{
    dormancy_parts_diff d;
    if (dormancy_parts_diff_make(r, &d) != 0)
        abort();
    if (d.whole) {
        json_object_put(*store);
        if (!(*store = json_object_new_object()))
            abort();
    }
    json_object *parts = *store;
    for (int i = 0; i < d.n_set; i++)
        json_object_object_add(parts, r->personas[d.set[i]].id,
                               json_object_new_string(d.text[i]));
    for (int i = 0; i < d.n_removed; i++)
        json_object_object_del(parts, d.removed[i]);
    dormancy_parts_diff_free(&d);
    dormancy_parts_written(r);
    free(*head);
    *head = dormancy_room_head_json(r);
    fuzz_json_check(*head);
}

static char *store_record(const char *head, json_object *parts)
{
    size_t hl = strlen(head), cap = hl + 16;
    json_object_object_foreach(parts, k, v) {
        cap += strlen(k) + 4 + strlen(json_object_get_string(v));
    }
    char *s = malloc(cap);
    if (!s)
        abort();
    size_t n = (size_t)snprintf(s, cap, "%.*s,\"parts\":{", (int)hl - 1, head);
    bool first = true;
    json_object_object_foreach(parts, k2, v2) {
        n += (size_t)snprintf(s + n, cap - n, "%s\"%s\":%s", first ? "" : ",", k2,
                              json_object_get_string(v2));
        first = false;
    }
    snprintf(s + n, cap - n, "}}");
    return s;
}

/* The kept room and the one read back from the store are the same room. */
static void check_stored(const dormancy_room *r, const char *head, json_object *parts)
{
    char *rec = store_record(head, parts);
    char err[256] = "";
    dormancy_room *back = dormancy_room_from_json(rec, ROOM, err, sizeof err);
    if (!back)
        abort(); /* the core cannot read what it wrote */
    char *a = dormancy_room_to_json(r), *b = dormancy_room_to_json(back);
    fuzz_same_text("the room kept", a, b); /* what was written is the room kept */
    free(a);
    free(b);
    free(rec);
    dormancy_room_free(back);
}

/* Parsed input: what the event's strings point into. */
typedef struct held {
    json_object *body;
    vigil_room_message msg;
    vigil_persona_meta meta;
    dormancy_ap_decision *decisions;
} held;

/* A persona/{p}/meta event from the meta read (or the one a clear means). */
static void meta_event(const char *persona, const vigil_persona_meta *m, dormancy_event *ev)
{
    ev->kind = DORMANCY_EV_META;
    ev->meta.persona = persona;
    ev->meta.name = m->name;
    ev->meta.rooms = m->rooms;
    ev->meta.n_rooms = m->n_rooms;
    ev->meta.ov = m->dormancy;
}

/* Fills ev as the route does; false when the route refuses or drops it
 * (a refusal always says why). */
static bool read_event(const char *kind, const char *persona, held *h, int64_t now,
                       dormancy_event *ev)
{
    vigil_error err = {0};
    json_object *b = h->body;
    const char *room = NULL;
    if (strcmp(kind, "message") == 0) {
        ev->kind = DORMANCY_EV_MESSAGE;
        if (!fuzz_read_message(b, &h->msg))
            return false;
        if (h->msg.sender_type == VIGIL_SENDER_SYSTEM)
            return false; /* feeds no rule */
        ev->msg.sender = h->msg.sender;
        ev->msg.sender_type = (dormancy_sender_type)h->msg.sender_type;
        ev->msg.text = h->msg.text;
        ev->msg.reply_to = h->msg.reply_to;
        ev->msg.mentions = h->msg.mentions;
        ev->msg.n_mentions = h->msg.n_mentions;
        return true;
    }
    if (strcmp(kind, "presence") == 0) {
        vigil_room_presence p;
        ev->kind = DORMANCY_EV_PRESENCE;
        if (vigil_room_presence_read(b, &p, &err) < 0)
            goto refused;
        ev->presence.user = p.user;
        ev->presence.session = p.session;
        ev->presence.status = (dormancy_presence_status)p.status;
        ev->presence.last_activity = p.last_activity;
        return true;
    }
    if (strcmp(kind, "control") == 0) {
        vigil_room_control c;
        ev->kind = DORMANCY_EV_CONTROL;
        if (vigil_room_control_read(b, &c, &err) < 0)
            goto refused;
        if (c.all && (c.action == VIGIL_CONTROL_PAUSE || c.action == VIGIL_CONTROL_RESUME))
            return false; /* chat-router's global pause */
        ev->control.action = (dormancy_control_action)c.action;
        ev->control.all = c.all;
        ev->control.by = c.by;
        ev->control.persona = c.persona;
        ev->control.if_inactive_since = c.if_inactive_since;
        return true;
    }
    if (strcmp(kind, "autopilot") == 0) {
        json_object *arr;
        int source = -1;
        ev->kind = DORMANCY_EV_AUTOPILOT;
        if (vigil_json_array(b, "decisions", true, &arr, &err) < 0 ||
            vigil_json_enum(b, "source", false, vigil_autopilot_source_names, &source, &err) < 0)
            goto refused;
        ev->autopilot.source = source >= 0 ? vigil_autopilot_source_names[source] : NULL;
        size_t len = json_object_array_length(arr);
        if (len > 256)
            return false;
        h->decisions = calloc(len + 1, sizeof *h->decisions);
        if (!h->decisions)
            abort();
        for (size_t i = 0; i < len; i++) {
            json_object *d = json_object_array_get_idx(arr, i);
            int action;
            if (!d || !json_object_is_type(d, json_type_object))
                return false;
            if (vigil_json_id(d, "persona", true, &h->decisions[i].persona, &err) < 0 ||
                vigil_json_enum(d, "action", true, vigil_autopilot_action_names, &action,
                                &err) < 0 ||
                vigil_json_string(d, "reason", false, &h->decisions[i].reason, &err) < 0)
                goto refused;
            h->decisions[i].action = (dormancy_autopilot_action)action;
        }
        ev->autopilot.decisions = h->decisions;
        ev->autopilot.n = (int)len;
        return true;
    }
    if (!persona || !vigil_id_valid(persona, strlen(persona)))
        return false; /* a persona topic's level is an id */
    if (strcmp(kind, "command") == 0) {
        vigil_persona_command c;
        ev->kind = DORMANCY_EV_COMMAND;
        if (vigil_persona_command_read(b, now, &c, &err) < 0)
            goto refused;
        if (c.room && strcmp(c.room, ROOM) != 0)
            return false; /* another room's */
        dormancy_command_event(&c, ev);
        ev->command.persona = persona;
        /* an answer without a room comes here as its only room's */
        if (!c.room && c.cmd == VIGIL_COMMAND_ANSWER)
            ev->command.room = ROOM;
        return true;
    }
    if (strcmp(kind, "meta") == 0) {
        if (!fuzz_read_meta(b, &h->meta))
            return false;
        meta_event(persona, &h->meta, ev);
        return true;
    }
    if (strcmp(kind, "wake") == 0) {
        bool should = false;
        double conf = 1.0;
        int via = DORMANCY_VIA_RULES, tier;
        ev->kind = DORMANCY_EV_WAKE;
        if (vigil_json_id(b, "room", true, &room, &err) < 0 ||
            vigil_json_bool(b, "should_wake", true, &should, &err) < 0 ||
            vigil_json_double(b, "confidence", false, &conf, &err) < 0 ||
            vigil_json_string_bounded(b, "message_id", false, VIGIL_EVENT_ID_MAX,
                                      &ev->wake.message_id, &err) < 0 ||
            vigil_json_string(b, "reason", false, &ev->wake.reason, &err) < 0 ||
            vigil_json_enum(b, "via", false, vigil_via_names, &via, &err) < 0 ||
            vigil_json_enum(b, "tier", false, vigil_tier_names, &tier, &err) < 0)
            goto refused;
        if (!(conf >= 0.0 && conf <= 1.0) || strcmp(room, ROOM) != 0)
            return false;
        ev->wake.persona = persona;
        ev->wake.should_wake = should;
        ev->wake.confidence = conf;
        ev->wake.via = (dormancy_via)via;
        return true;
    }
    return false;
refused:
    fuzz_says_why(&err);
    return false;
}

static void config_from(fuzz_part head, dormancy_config *cfg, int64_t *now)
{
    int64_t bits = 0, no_human = cfg->no_human_ms, ai_only = cfg->ai_only_ms;
    int64_t min_awake = cfg->min_awake, max_personas = 8, big_room = 4;
    const int64_t month = 30LL * 24 * 3600 * 1000;
    const fuzz_field f[] = {
        { 0, 1LL << 59, now }, /* a clock's, not any int64 */
        { 0, 127, &bits },
        { 1, month, &no_human },
        { 1, month, &ai_only },
        { 0, 1000, &min_awake },
        { 1, 1000, &max_personas },
        { 1, 1000, &big_room },
    };
    fuzz_header(head, f, 7);
    cfg->auto_suggest = !(bits & 1);
    cfg->auto_sleep = !(bits & 2);
    cfg->auto_wake = !(bits & 4);
    cfg->llm_wake = !(bits & 8);
    cfg->presence = (bits & 16) != 0;
    cfg->adaptive = (bits & 32) != 0;
    cfg->human_wakes_all = (bits & 64) != 0;
    cfg->no_human_ms = no_human;
    cfg->ai_only_ms = ai_only;
    cfg->min_awake = (int)min_awake;
    cfg->max_personas = (int)max_personas;
    cfg->big_room = (int)big_room;
}

/* persona's meta cleared: the route reads it as the meta that says
 * nothing (route.c). */
static int apply_clear(dormancy_room *r, const dormancy_config *cfg, const char *persona,
                       int64_t now, const dormancy_ids *ids, dormancy_actions *out)
{
    vigil_persona_meta m;
    vigil_persona_meta_init(&m);
    dormancy_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = ids->ctx;
    ev.ts = now;
    meta_event(persona, &m, &ev);
    return dormancy_room_apply(r, &ev, cfg, now, ids, out);
}

/* The clear just committed, applied again at once as its redelivery would
 * be (a clear has no id to deduplicate it by): no action, nothing for the
 * store to write, the same head and the same room. */
static void clear_again(dormancy_room *r, const dormancy_config *cfg, const char *persona,
                        int64_t now, const char *head)
{
    char *before = dormancy_room_to_json(r);
    dormancy_ids ids = { make_id, "again" };
    dormancy_actions out;
    dormancy_actions_init(&out);
    if (apply_clear(r, cfg, persona, now, &ids, &out) != 0 || out.n != 0)
        abort();
    dormancy_actions_free(&out);
    dormancy_parts_diff d;
    if (dormancy_parts_diff_make(r, &d) != 0 || d.whole || d.n_set != 0 || d.n_removed != 0)
        abort();
    dormancy_parts_diff_free(&d);
    char *h = dormancy_room_head_json(r), *after = dormancy_room_to_json(r);
    fuzz_same_text("the head after a second clear", head, h);
    fuzz_same_text("the room after a second clear", before, after);
    free(h);
    free(after);
    free(before);
}

/* One input or deadline applied to r; false when nothing was applied. */
static bool one_step(dormancy_room *r, const dormancy_config *cfg, fuzz_part in, int step_no,
                     int64_t *now, dormancy_actions *out, char cleared[CLEARED_MAX])
{
    fuzz_step st;
    if (!fuzz_step_read(in, FUZZ_LINE_MAX, now, &st))
        return false;
    const char *kind = st.kind, *persona = st.arg;
    char input_id[32];
    snprintf(input_id, sizeof input_id, "in%d", step_no);
    dormancy_ids ids = { make_id, input_id };
    if (strcmp(kind, "timer") == 0) {
        if (r->n_timers == 0)
            return false;
        int k = 0;
        for (int i = 1; i < r->n_timers; i++)
            if (r->timers[i].due < r->timers[k].due)
                k = i;
        char name[DORMANCY_TIMER_NAME_MAX + 1];
        memcpy(name, r->timers[k].name, sizeof name);
        int64_t due = r->timers[k].due;
        if (due > 1LL << 59)
            return false; /* a deadline no clock reaches (a far `until`) */
        if (due > *now)
            *now = due;
        if (dormancy_room_timer(r, name, due, cfg, *now, &ids, out) != 0)
            abort();
        return true;
    }
    if (strcmp(kind, "clear") == 0) {
        if (!persona[0] || !vigil_id_valid(persona, strlen(persona)))
            return false; /* a persona topic's level is an id */
        if (apply_clear(r, cfg, persona, *now, &ids, out) != 0)
            abort();
        snprintf(cleared, CLEARED_MAX, "%s", persona);
        return true;
    }
    if (st.one_line)
        return false;
    vigil_error perr = {0};
    held h = {0};
    h.body = vigil_json_parse_object(st.payload, st.plen, 65536, &perr);
    if (!h.body) {
        fuzz_says_why(&perr);
        return false;
    }
    dormancy_event ev;
    memset(&ev, 0, sizeof ev);
    const char *pid = NULL;
    vigil_error err = {0};
    bool ok = vigil_json_string(h.body, "id", false, &pid, &err) >= 0 &&
              (!pid || vigil_event_id_valid(pid, strlen(pid)));
    ev.id = pid ? pid : input_id;
    ev.ts = *now;
    if (ok && read_event(kind, persona[0] ? persona : NULL, &h, *now, &ev) &&
        dormancy_room_apply(r, &ev, cfg, *now, &ids, out) != 0)
        abort();
    bool applied = ok && out->n > 0;
    vigil_room_message_release(&h.msg);
    vigil_persona_meta_release(&h.meta);
    free(h.decisions);
    json_object_put(h.body);
    return applied || ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_part parts[MAX_PARTS];
    int np = fuzz_split((const char *)data, size, parts, MAX_PARTS);
    dormancy_config cfg;
    dormancy_config_init(&cfg);
    int64_t now = 1700000000000;
    config_from(parts[0], &cfg, &now);
    char *head = NULL;
    dormancy_room *r = NULL;
    /* the store holds what the core wrote: damaged, perhaps, but text */
    char *rec = fuzz_text_part(parts, np, 1);
    if (rec) {
        char err[256] = "";
        bool head_only = false;
        r = dormancy_room_read(rec, ROOM, &head_only, err, sizeof err);
        if (!r && err[0] == '\0')
            abort(); /* a refusal says why */
        free(rec);
    }
    if (!r && !(r = dormancy_room_new(ROOM)))
        abort();
    json_object *store = json_object_new_object();
    if (!store)
        abort();
    r->n_stored = -1; /* whatever the store held goes: it is written whole */
    dormancy_actions out;
    dormancy_actions_init(&out);
    for (int i = 2; i < np; i++) {
        size_t from = out.n;
        char cleared[CLEARED_MAX] = "";
        if (!one_step(r, &cfg, parts[i], i, &now, &out, cleared))
            continue;
        check_actions(r, &cfg, &out, from, now);
        store_commit(r, &store, &head);
        check_stored(r, head, store);
        if (cleared[0])
            clear_again(r, &cfg, cleared, now, head);
    }
    dormancy_actions_free(&out);
    json_object_put(store);
    free(head);
    dormancy_room_free(r);
    return 0;
}
