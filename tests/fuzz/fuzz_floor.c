/* fuzz_floor.c - floor-control's decision core over a room's life: a stored
 * view (possibly damaged), then persona metas, persona states, room
 * messages and controls read as the service's route reads them
 * (libshared's readers), each applied to the view the last step left as
 * the service does: learn, then choose by the rules, or keep the message
 * waiting for a model's ranking that comes, or whose deadline passes.
 *
 * Input: parts separated by lines holding only "---":
 *   1. "<now ms> <k> <switch bits> <min_awake> <max_personas>" (bits:
 *      1 decide AI messages too, 2 ask a model (budget 2 s), 4 auto_wake
 *      off, 8 human_wakes=all);
 *   2. the room's stored view (empty: none);
 *   3... one step each: a first line "<dt ms> <kind> [<persona>]", a
 *      payload after it; dt moves the clock on first. kind: message,
 *      control (room topics), meta, state (persona topics; an empty
 *      payload: the retained meta or state cleared), ranked (the
 *      payload is a JSON array of persona ids: the model's answer for the
 *      oldest waiting message), timer (the oldest waiting message's
 *      deadline passes: the rules decide it).
 * What must hold, whatever the bytes: nothing fails; a decision lists its
 * granted picks first, never grants the sender nor (unless mentioned) a
 * persona held back; its events are JSON objects in valid UTF-8; each
 * refusal names its limit and says why; the view reads back as written; a
 * clear applied again changes nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include "floor.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 24
#define ROOM "general"

static bool granted_why(floor_why w)
{
    return w == FLOOR_WHY_MENTION || w == FLOOR_WHY_DOMAIN || w == FLOOR_WHY_ROLE ||
           w == FLOOR_WHY_RECENCY || w == FLOOR_WHY_LLM;
}

/* floor_choose on m, its decision checked and rendered. */
static void decide(const floor_room *r, const floor_config *c, const floor_message *m,
                   const char *source, const char *fallback, int64_t now)
{
    floor_decision d;
    memset(&d, 0, sizeof d);
    floor_result res = floor_choose(r, c, m, &d);
    if (res == FLOOR_NOMEM)
        abort();
    if (res == FLOOR_NO_DECISION) {
        floor_decision_free(&d);
        return;
    }
    d.source = source;
    d.fallback = fallback;
    if (d.n_granted < 0 || d.n_granted > d.n)
        abort();
    for (int i = 0; i < d.n; i++) {
        const floor_pick *p = &d.v[i];
        if (p->granted != (i < d.n_granted) || p->granted != granted_why(p->why) ||
            p->index < -1 || p->index >= r->n || p->id[0] == '\0')
            abort(); /* granted first, each with a reason of its kind */
        if (p->granted && strcmp(p->id, m->sender) == 0 && m->sender_type != FLOOR_SENDER_HUMAN)
            abort(); /* an AI sender never gets the floor it spoke on */
        if (p->granted && p->why != FLOOR_WHY_MENTION && p->index >= 0 &&
            r->personas[p->index].level == FLOOR_SLEEP &&
            m->sender_type != FLOOR_SENDER_HUMAN)
            abort(); /* asleep, and no human to wake it */
    }
    fuzz_json_check_obj(floor_room_event_json(r, c, &d, "ev:" ROOM ":0", m->id, now));
    for (int i = 0; i < d.n; i++)
        fuzz_json_check_obj(floor_persona_event_json(r, c, &d, i, "ev:" ROOM ":1", m->id, now));
    floor_decision_free(&d);
}

/* The oldest waiting message, decided by the model's ranking (relevant,
 * ranked) or by the rules when its deadline passed. */
static void settle(floor_room *r, const floor_config *c, json_object *ranking, int64_t now)
{
    if (r->n_pending == 0)
        return;
    int k = 0;
    for (int i = 1; i < r->n_pending; i++)
        if (r->pending[i].due < r->pending[k].due)
            k = i;
    char timer[FLOOR_TIMER_NAME_MAX];
    floor_timer_name(r->pending[k].id, timer, sizeof timer);
    floor_pending *p = floor_pending_by_timer(r, timer);
    if (!p)
        abort(); /* its own deadline's name finds it */
    const char *ptrs[FLOOR_MAX_MENTIONS];
    floor_message m;
    floor_pending_message(p, ptrs, &m);
    const char *rel[64];
    int n_rel = 0;
    if (ranking) {
        size_t n = json_object_array_length(ranking);
        for (size_t i = 0; i < n && n_rel < 64; i++) {
            json_object *e = json_object_array_get_idx(ranking, i);
            if (e && json_object_is_type(e, json_type_string))
                rel[n_rel++] = json_object_get_string(e);
        }
        m.ranked = true;
        m.relevant = rel;
        m.n_relevant = n_rel;
    }
    decide(r, c, &m, ranking ? "llm" : "rules", ranking ? NULL : "timeout", now);
    char id[FLOOR_MSG_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", p->id);
    floor_pending_remove(r, id);
}

static void on_message(floor_room *r, const floor_config *c, bool llm, json_object *b,
                       const char *id, int64_t now)
{
    vigil_room_message rm;
    if (!fuzz_read_message(b, &rm))
        return;
    floor_message m = { .id = id, .sender = rm.sender,
                        .sender_type = (floor_sender_type)rm.sender_type, .text = rm.text,
                        .mentions = rm.mentions, .n_mentions = rm.n_mentions };
    if (m.sender_type != FLOOR_SENDER_SYSTEM) {
        bool joined;
        floor_learn_message(r, now);
        if (m.sender_type == FLOOR_SENDER_AI)
            (void)floor_learn_spoke(r, c, m.sender, now, &joined);
        int rankable = llm && m.sender_type == FLOOR_SENDER_HUMAN
                           ? floor_rankable(r, c, &m, NULL) : 0;
        if (rankable < 0)
            abort();
        const char *refused = NULL;
        int rc = 1;
        if (rankable > c->k && !floor_pending_find(r, id)) {
            char *prompt = floor_llm_prompt(r, c, &m);
            if (!prompt || !vigil_utf8_valid(prompt, strlen(prompt)))
                abort();
            free(prompt);
            rc = floor_pending_add(r, &m, now + c->llm_budget_ms, &refused);
            if (rc < 0 || (rc > 0 && (!refused || !refused[0])))
                abort();
        }
        if (rc != 0 && c->k > 0)
            decide(r, c, &m, "rules", refused, now);
    }
    vigil_room_message_release(&rm);
}

/* A meta as the service's route hands it to the core. */
static void apply_meta(floor_room *r, const floor_config *c, const char *persona,
                       const vigil_persona_meta *pmp, int64_t now)
{
    const vigil_persona_meta pm = *pmp;
    bool ok = true;
    for (int i = 0; i < pm.n_domains; i++)
        ok = ok && pm.domains[i][0] && strlen(pm.domains[i]) <= FLOOR_WORD_MAX;
    for (int i = 0; i < pm.n_conf; i++)
        ok = ok && pm.conf_domains[i][0] && strlen(pm.conf_domains[i]) <= FLOOR_WORD_MAX;
    if (ok) { /* the route refuses other domains */
        floor_meta m = { .persona = persona, .name = pm.name, .role = pm.role,
                         .rooms = pm.rooms, .n_rooms = pm.n_rooms, .domains = pm.domains,
                         .n_domains = pm.n_domains, .conf_domains = pm.conf_domains,
                         .conf_values = pm.conf_values, .n_conf = pm.n_conf,
                         .has_auto_wake = (pm.dormancy.has & VIGIL_OV_AUTO_WAKE) != 0,
                         .auto_wake = pm.dormancy.auto_wake };
        bool joined, left;
        (void)floor_learn_meta(r, c, &m, now, &joined, &left);
    }
}

static void on_meta(floor_room *r, const floor_config *c, const char *persona, json_object *b,
                    int64_t now)
{
    vigil_persona_meta pm;
    if (!fuzz_read_meta(b, &pm))
        return;
    apply_meta(r, c, persona, &pm, now);
    vigil_persona_meta_release(&pm);
}

/* An empty payload on meta or state: the retained meta or state cleared,
 * as the service reads it (the meta that says nothing; a state without
 * this room). A clear has no id to deduplicate a redelivery by: applied a
 * second time, it must leave the view as the first left it. */
static void on_clear(floor_room *r, const floor_config *c, bool meta, const char *persona,
                     int64_t now)
{
    char *first = NULL;
    for (int pass = 0; pass < 2; pass++) {
        vigil_persona_meta pm;
        vigil_persona_meta_init(&pm);
        if (meta)
            apply_meta(r, c, persona, &pm, now);
        else
            (void)floor_forget_level(r, persona, NULL);
        json_object *o = floor_room_to_json(r);
        char *view = o ? strdup(fuzz_json_render(o)) : NULL;
        json_object_put(o);
        if (!view)
            abort();
        if (first)
            fuzz_same_text("a clear applied again", first, view);
        free(first);
        first = view;
    }
    free(first);
}

static void on_state(floor_room *r, const floor_config *c, const char *persona, json_object *b,
                     int64_t now)
{
    vigil_persona_state ps;
    vigil_error err = {0};
    if (vigil_persona_state_read(b, 64, &ps, &err) < 0) {
        fuzz_says_why(&err);
        return;
    }
    const vigil_persona_room_state *e = vigil_persona_state_room(&ps, ROOM);
    if (e) {
        floor_state_entry st = { .level = (floor_level)e->level,
                                 .trigger = e->trigger ? e->trigger : "",
                                 .cause = e->has_order ? e->cause : FLOOR_UNKNOWN,
                                 .answered_human = e->answered_human,
                                 .order = e->has_order ? e->order : FLOOR_UNKNOWN };
        bool joined;
        (void)floor_learn_level(r, c, persona, &st, now, &joined);
    } else {
        (void)floor_forget_level(r, persona, NULL); /* a state without this room */
    }
    vigil_persona_state_release(&ps);
}

/* The refusals of one step, and the view as the store keeps it. */
static floor_room *after_step(floor_room *r)
{
    for (int i = 0; i < r->n_notes; i++)
        if (!r->notes[i].limit || !r->notes[i].limit[0] || !r->notes[i].detail[0])
            abort();
    json_object *o = floor_room_to_json(r);
    char *text = strdup(fuzz_json_render(o));
    json_object_put(o);
    char err[256] = "";
    floor_room *back = floor_room_from_json(text, ROOM, err, sizeof err);
    if (!back)
        abort(); /* the core cannot read what it wrote */
    json_object *o2 = floor_room_to_json(back);
    if (!o2 || strcmp(text, json_object_to_json_string_ext(o2, JSON_C_TO_STRING_PLAIN)) != 0)
        abort(); /* the view does not read back as written */
    json_object_put(o2);
    free(text);
    floor_room_free(r);
    return back; /* the service loads the view afresh for each input */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_part parts[MAX_PARTS];
    int np = fuzz_split((const char *)data, size, parts, MAX_PARTS);
    floor_config c;
    floor_config_init(&c);
    int64_t now = 1700000000000, k = c.k, bits = 0, min_awake = c.wake.min_awake, maxp = 8;
    const fuzz_field f[] = {
        { 0, INT64_MAX / 4, &now }, { 0, 100, &k }, { 0, 15, &bits },
        { 0, 1000, &min_awake },    { 1, 1000, &maxp },
    };
    fuzz_header(parts[0], f, 5);
    c.k = (int)k;
    c.on_ai = bits & 1;
    c.llm_budget_ms = bits & 2 ? 2000 : 0;
    c.wake.auto_wake = !(bits & 4);
    c.wake.human_wakes_all = (bits & 8) != 0;
    c.wake.min_awake = (int)min_awake;
    c.max_personas = (int)maxp;
    floor_room *r = NULL;
    char *rec = fuzz_text_part(parts, np, 1);
    if (rec) {
        char err[256] = "";
        r = floor_room_from_json(rec, ROOM, err, sizeof err);
        if (!r && !err[0])
            abort(); /* a refusal says why */
        free(rec);
    }
    if (!r && !(r = floor_room_new(ROOM)))
        abort();
    for (int i = 2; i < np; i++) {
        fuzz_step st;
        if (!fuzz_step_read(parts[i], FUZZ_LINE_MAX, &now, &st))
            continue;
        r->n_notes = 0;
        if (strcmp(st.kind, "timer") == 0) {
            settle(r, &c, NULL, now);
            r = after_step(r);
            continue;
        }
        if (strcmp(st.kind, "ranked") == 0) {
            char *t = fuzz_dup(st.payload, st.plen);
            json_object *a = json_tokener_parse(t);
            free(t);
            if (a && json_object_is_type(a, json_type_array))
                settle(r, &c, a, now);
            json_object_put(a);
            r = after_step(r);
            continue;
        }
        bool persona_ok = st.arg[0] && vigil_id_valid(st.arg, strlen(st.arg));
        bool meta = strcmp(st.kind, "meta") == 0;
        if (st.plen == 0 && persona_ok && (meta || strcmp(st.kind, "state") == 0)) {
            on_clear(r, &c, meta, st.arg, now);
            r = after_step(r);
            continue;
        }
        vigil_error err = {0};
        json_object *b = vigil_json_parse_object(st.payload, st.plen, 65536, &err);
        if (!b)
            continue;
        const char *pid = NULL;
        char id[32];
        snprintf(id, sizeof id, "h-%d", i);
        if (vigil_json_string(b, "id", false, &pid, &err) < 0 ||
            (pid && !vigil_event_id_valid(pid, strlen(pid)))) {
            json_object_put(b);
            continue;
        }
        if (strcmp(st.kind, "message") == 0) {
            on_message(r, &c, c.llm_budget_ms > 0, b, pid ? pid : id, now);
        } else if (strcmp(st.kind, "control") == 0) {
            vigil_room_control rc;
            if (vigil_room_control_read(b, &rc, &err) == 0 && rc.action == VIGIL_CONTROL_DELETE &&
                floor_may_forget(r, rc.if_inactive_since))
                floor_forget(r);
        } else if (meta && persona_ok) {
            on_meta(r, &c, st.arg, b, now);
        } else if (strcmp(st.kind, "state") == 0 && persona_ok) {
            on_state(r, &c, st.arg, b, now);
        }
        json_object_put(b);
        r = after_step(r);
    }
    floor_room_free(r);
    return 0;
}
