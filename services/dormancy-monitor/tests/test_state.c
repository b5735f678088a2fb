/* The room record: JSON round trip, bounds that keep it small, unreadable
 * records, snapshots (persona/{p}/state entries, room/{r}/state) and timer
 * bookkeeping. */
#include <inttypes.h>
#include <math.h>
#include "dm_test.h"
#include "step.h"

static void busy_record_round_trips(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides ov = {0};
    ov.has = VIGIL_OV_NO_HUMAN | VIGIL_OV_PRESENCE;
    ov.no_human_ms = 120000;
    ov.presence = true;
    dm_meta(f, "ann", &ov);
    dm_human(f, "q");
    dm_ai(f, "bob", "1");
    dm_ai(f, "cara", "2");
    dm_ai(f, "dan", "3 @self dormant sleep for 1h");
    dm_ai(f, "eve", "4");
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_PRESENCE;
    ev.presence.user = "joel";
    ev.presence.session = "tab";
    ev.presence.status = DORMANCY_PRESENCE_IDLE;
    dm_send(f, &ev);
    dm_advance(f, 2 * MIN_MS); /* ann's suggestion pending */
    /* dm_after already checked JSON -> record -> JSON is stable; check content */
    dormancy_persona *eve = dm_p(f, "eve");
    assert_int_equal(eve->level, DORMANCY_MENTION_ONLY); /* pile-on suggestion defaulted */
    assert_int_equal(eve->cause, DORMANCY_CAUSE_CHOICE);
    assert_true(eve->joined);
    dormancy_persona *ann = dm_p(f, "ann");
    assert_int_equal(ann->sugg.kind, DORMANCY_SUGGEST_NO_HUMAN);
    assert_true(ann->via_meta);
    assert_int_equal(ann->ov.no_human_ms, 120000);
    assert_int_equal(dm_p(f, "dan")->until, T0 + 3600000);
    assert_int_equal(f->room->n_humans, 1);
    assert_int_equal(dormancy_room_human(f->room, 0)->n_responders, 3);
    assert_int_equal(f->room->n_sessions, 1);
    assert_true(f->room->n_timers >= 3);
    /* the record is written as text: json-c writes it back byte for byte */
    char *t = dormancy_room_to_json(f->room);
    json_object *o = json_tokener_parse(t);
    assert_non_null(o);
    assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE),
                        t);
    assert_non_null(strstr(t, "\"humans\":[{\"id\":"));
    assert_non_null(strstr(t, "\"sessions\":[{\"user\":\"joel\""));
    json_object_put(o);
    free(t);
    /* each persona's part, written as text, is json-c's print of itself
     * (members in order, nothing json-c would write differently) */
    for (int i = 0; i < f->room->n_personas; i++) {
        char *pt = dormancy_persona_record_text(&f->room->personas[i]);
        json_object *po = json_tokener_parse(pt);
        assert_non_null(po);
        assert_string_equal(json_object_to_json_string_ext(po, JSON_C_TO_STRING_PLAIN |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE),
                            pt);
        if (strcmp(f->room->personas[i].id, "ann") == 0) {
            assert_non_null(strstr(pt, "\"meta\":true"));
            assert_non_null(strstr(pt, "\"sugg\":{\"kind\":\"no-human\""));
            assert_non_null(strstr(pt, "\"cfg\":{"));
        }
        json_object_put(po);
        free(pt);
    }
    dm_free(f);
}

static void lists_are_bounded(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.auto_suggest = false;
    f->cfg.auto_sleep = false;
    char name[32];
    f->cfg.max_personas = 20;
    for (int i = 0; i < 2 * f->cfg.max_personas; i++) {
        snprintf(name, sizeof name, "p%d", i);
        dm_ai(f, name, "hi");
    }
    assert_int_equal(f->room->n_personas, 20);
    for (int i = 0; i < 2 * DORMANCY_MAX_HUMAN_MSGS + 3; i++) {
        dm_human(f, "h");
        dm_advance(f, 1);
    }
    assert_int_equal(f->room->n_humans, DORMANCY_MAX_HUMAN_MSGS);
    /* the newest are kept, oldest first, across the ring's wrap */
    int64_t newest = dormancy_room_human(f->room, DORMANCY_MAX_HUMAN_MSGS - 1)->ts;
    for (int i = 0; i < DORMANCY_MAX_HUMAN_MSGS; i++)
        assert_true(dormancy_room_human(f->room, i)->ts == newest - (DORMANCY_MAX_HUMAN_MSGS - 1 - i));
    char *t = dormancy_room_to_json(f->room);
    char err[128];
    dormancy_room *back = dormancy_room_from_json(t, f->room->room, err, sizeof err);
    assert_non_null(back);
    for (int i = 0; i < DORMANCY_MAX_HUMAN_MSGS; i++)
        assert_string_equal(dormancy_room_human(back, i)->id, dormancy_room_human(f->room, i)->id);
    dormancy_room_free(back);
    free(t);
    assert_true(f->room->n_recent <= DORMANCY_MAX_RECENT);
    for (int i = 0; i < 2 * DORMANCY_MAX_SESSIONS; i++) {
        dormancy_event ev = {0};
        ev.kind = DORMANCY_EV_PRESENCE;
        ev.presence.user = "joel";
        snprintf(name, sizeof name, "s%d", i);
        ev.presence.session = name;
        ev.presence.status = DORMANCY_PRESENCE_ACTIVE;
        dm_send(f, &ev);
    }
    assert_int_equal(f->room->n_sessions, DORMANCY_MAX_SESSIONS);
    /* old entries age out */
    dm_advance(f, 10 * MIN_MS);
    dm_ai(f, "p0", "later");
    assert_int_equal(f->room->n_recent, 1);
    assert_int_equal(f->room->n_humans, 1); /* only the latest human message is kept */
    assert_int_equal(f->room->n_sessions, 0);
    dm_free(f);
}

static void quiet_room_record_is_small(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 5, "ann", "bob", "cara", "dan", "eve");
    dm_human(f, "hello");
    dm_advance(f, 60 * MIN_MS);
    char *json = dormancy_room_to_json(f->room);
    assert_true(strlen(json) < 2000);
    assert_int_equal(f->n_store, 0); /* idle: no deadline left */
    free(json);
    dm_free(f);
}

/* The message times travel as one string of differences; records written
 * before, with the recent_ts array, still read. */
static void recent_times_round_trip_compactly(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_human(f, "hello");
    dm_advance(f, 1234);
    dm_ai(f, "ann", "hi");
    dm_advance(f, 7);
    dm_human(f, "again");
    dormancy_room *r = f->room;
    assert_int_equal(r->n_recent, 3);
    char *json = dormancy_room_to_json(r);
    assert_non_null(strstr(json, "\"recent_dt\":\""));
    assert_null(strstr(json, "recent_ts"));
    char err[200];
    dormancy_room *back = dormancy_room_from_json(json, r->room, err, sizeof err);
    assert_non_null(back);
    assert_int_equal(back->n_recent, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(back->recent_ts[i], r->recent_ts[i]);
        assert_int_equal(back->recent_human[i], r->recent_human[i]);
    }
    assert_int_equal(back->recent_ts[1] - back->recent_ts[0], 1234);
    dormancy_room_free(back);
    free(json);
    dormancy_room *old = dormancy_room_from_json(
        "{\"room\":\"general\",\"recent_ts\":[1700000000000,1700000000500],"
        "\"recent_kind\":\"ha\",\"personas\":[]}", "general", err, sizeof err);
    assert_non_null(old);
    assert_int_equal(old->n_recent, 2);
    assert_int_equal(old->recent_ts[1], 1700000000500);
    assert_true(old->recent_human[0]);
    assert_false(old->recent_human[1]);
    dormancy_room_free(old);
    dm_free(f);
}

/* Persona texts are reused from the last record written: after changes,
 * a record written with them equals one written from nothing (a copy). */
static void reused_persona_texts_match_a_fresh_write(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    char *first = dormancy_room_to_json(f->room);
    dm_ai(f, "bob", "@self dormant sleep");
    dm_human(f, "hello");
    dm_ai(f, "dan", "joining");
    char *cached = dormancy_room_to_json(f->room);
    dormancy_room *copy = dormancy_room_clone(f->room);
    char *fresh = dormancy_room_to_json(copy);
    assert_string_equal(cached, fresh);
    assert_string_not_equal(first, cached);
    assert_non_null(strstr(cached, "\"id\":\"dan\""));
    /* a persona removed: the texts after it move, and still match */
    dormancy_room *r = f->room;
    memmove(&r->personas[0], &r->personas[1], (size_t)(r->n_personas - 1) * sizeof r->personas[0]);
    r->n_personas--;
    char *after = dormancy_room_to_json(f->room);
    dormancy_room *copy2 = dormancy_room_clone(f->room);
    char *fresh2 = dormancy_room_to_json(copy2);
    assert_string_equal(after, fresh2);
    assert_null(strstr(after, "\"id\":\"ann\""));
    free(first);
    free(cached);
    free(fresh);
    free(after);
    free(fresh2);
    dormancy_room_free(copy);
    dormancy_room_free(copy2);
    dm_free(f);
}

/* The record's human-message entries are written from the text each kept
 * at its last write (state_json.c): an answer, which changes the entry it
 * answers, shows in the next record, an entry left alone is copied, and
 * every record equals the one a room read back from it writes (its
 * entries written anew). */
static void kept_human_entries_follow_answers(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_human(f, "first");
    dm_advance(f, 1000);
    dm_human(f, "hello");
    const char *order[] = {"ann", "bob", "cara"};
    const char *want[] = {"\"n\":1,\"responders\":[\"ann\"]}",
                          "\"n\":2,\"responders\":[\"ann\",\"bob\"]}",
                          "\"n\":3,\"responders\":[\"ann\",\"bob\",\"cara\"]}"};
    for (int i = 0; i <= 3; i++) {
        if (i > 0) {
            dm_advance(f, 1000);
            dm_ai(f, order[i - 1], "an answer");
        }
        char *t = dormancy_room_to_json(f->room);
        char *again = dormancy_room_to_json(f->room); /* every entry kept */
        assert_string_equal(t, again);
        assert_true(dormancy_room_human(f->room, 0)->text_len > 0);
        if (i > 0)
            assert_non_null(strstr(t, want[i - 1]));
        else
            assert_null(strstr(t, "responders"));
        char err[200];
        dormancy_room *back = dormancy_room_from_json(t, f->room->room, err, sizeof err);
        assert_non_null(back);
        assert_int_equal(dormancy_room_human(back, 0)->text_len, 0);
        char *fresh = dormancy_room_to_json(back);
        assert_string_equal(t, fresh);
        free(t);
        free(again);
        free(fresh);
        dormancy_room_free(back);
    }
    dm_free(f);
}

static void unreadable_records_are_refused(void **state)
{
    (void)state;
    char err[200];
    assert_null(dormancy_room_from_json("not json", "general", err, sizeof err));
    assert_null(dormancy_room_from_json("[1,2]", "general", err, sizeof err));
    assert_null(dormancy_room_from_json("{\"room\":\"other\"}", "general", err, sizeof err));
    assert_non_null(strstr(err, "other"));
    /* odd fields take defaults */
    dormancy_room *r = dormancy_room_from_json(
        "{\"room\":\"general\",\"last_human\":\"x\",\"personas\":[{\"id\":\"ann\",\"level\":\"weird\"},"
        "{\"id\":\"ann\"},3,{\"level\":\"sleep\"}],\"timers\":{\"nohuman\":5}}",
        "general", err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->last_human, 0);
    assert_int_equal(r->n_personas, 1);
    assert_int_equal(r->personas[0].level, DORMANCY_ACTIVE);
    assert_int_equal(r->n_timers, 1);
    dormancy_room_free(r);
}

/* A damaged record's time beyond any real one (here last_human, which
 * json-c reads as INT64_MAX) reads as absent: the no-human deadline (quiet
 * start + threshold) would overflow otherwise. Found by fuzzing. */
static void out_of_range_record_times_read_as_absent(void **state)
{
    (void)state;
    char err[200];
    dm_fx *f = dm_new();
    dormancy_room_free(f->room);
    f->room = dormancy_room_from_json(
        "{\"room\":\"general\",\"first_seen\":1700000000000,\"last_message\":1700000003000,"
        "\"last_human\":170000000000000000000,\"recent_ts\":[-9223372036854775807],"
        "\"recent_kind\":\"a\","
        "\"personas\":[{\"id\":\"ann\",\"level\":\"active\",\"joined\":true,"
        "\"since\":-9223372036854775807}]}",
        "general", err, sizeof err);
    assert_non_null(f->room);
    assert_int_equal(f->room->last_human, 0);
    assert_int_equal(f->room->recent_ts[0], 0);
    assert_int_equal(f->room->personas[0].since, 0);
    f->now = 1700000100000;
    dm_ai(f, "ann", "anyone?"); /* evaluates the no-human rule: no overflow */
    assert_int_equal(f->room->last_human, 0);
    dm_free(f);
}

static void persona_snapshot_on_join_and_change_only(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(s);
    assert_int_equal(s->level, DORMANCY_ACTIVE);
    json_object *o = dormancy_persona_entry_json(s);
    assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                        "{\"level\":\"active\",\"since\":1700000000000,\"trigger\":\"manual\"}");
    json_object_put(o);
    dm_clear(f);
    dm_ai(f, "ann", "hello"); /* same entry: not republished */
    assert_int_equal(dm_count(f, DORMANCY_OUT_PERSONA_STATE, NULL), 0);
    dm_sleep(f, "ann");
    s = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(s);
    assert_int_equal(s->level, DORMANCY_SLEEP);
    assert_int_equal(s->trigger, DORMANCY_TRIGGER_MANUAL);
    dm_free(f);
}

/* The digest records hold is the hash of the fields' decimal text joined
 * by '|': records written by earlier versions keep matching, so an upgrade
 * does not republish every persona's state. */
static void persona_digest_is_the_one_records_hold(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_sleep(f, "ann");
    const dormancy_persona *p = &f->room->personas[0];
    char buf[160];
    int n = snprintf(buf, sizeof buf, "%d|%" PRId64 "|%d|%d|%" PRId64 "|%d|%" PRId64,
                     (int)p->level, p->since, (int)p->trigger, 0, p->until, (int)p->sugg.kind,
                     p->sugg.default_at);
    uint64_t want = vigil_hash64(buf, (size_t)n);
    assert_int_equal(p->snap_digest, want ? want : 1);
    dm_free(f);
}

static const char *entry_str(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : NULL;
}

/* The persona/{p}/state entry says why the persona is at its level (the
 * reason of its last change, word for word as on persona/{p}/dormancy) and
 * which suggestion waits for an answer (level, trigger and reason as on
 * persona/{p}/suggestion, and when its default applies); both survive the
 * record's JSON round trip (dm_after) and a republish for another cause. */
static void persona_snapshot_carries_reason_and_pending_suggestion(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.ai_only_ms = 60 * MIN_MS; /* keep rule 2 out of the way */
    dm_personas(f, 1, "ann");
    dm_sleep(f, "ann");
    dm_command(f, "ann", DORMANCY_CMD_AWAKE, DORMANCY_ACTIVE, 0, "joel");
    const dormancy_action *ch = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_string_equal(ch->reason, "awake requested by joel");
    const dormancy_action *st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_string_equal(st->reason, ch->reason);
    assert_int_equal(st->suggest, DORMANCY_SUGGEST_NONE);
    json_object *o = dormancy_persona_entry_json(st);
    assert_string_equal(entry_str(o, "reason"), "awake requested by joel");
    assert_false(json_object_object_get_ex(o, "pending", NULL));
    json_object_put(o);

    /* quiet room: the no-human suggestion is pending, the entry says so */
    dm_ai(f, "ann", "anyone?");
    dm_clear(f);
    dm_advance(f, 5 * MIN_MS);
    const dormancy_action *sg = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    assert_non_null(sg);
    st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(st);
    assert_int_equal(st->suggest, DORMANCY_SUGGEST_NO_HUMAN);
    assert_int_equal(st->pending_expires, f->now + f->cfg.suggestion_timeout_ms);
    o = dormancy_persona_entry_json(st);
    assert_string_equal(entry_str(o, "level"), "active");
    assert_string_equal(entry_str(o, "reason"), "awake requested by joel"); /* still the last change */
    json_object *pd = NULL;
    assert_true(json_object_object_get_ex(o, "pending", &pd));
    assert_string_equal(entry_str(pd, "level"), "mention-only");
    assert_string_equal(entry_str(pd, "trigger"), "no-human");
    assert_string_equal(entry_str(pd, "reason"), sg->reason);
    assert_true(strlen(sg->reason) > 0);
    /* the text the persona was shown, word for word (a page opened after
     * the suggestion shows it, not one made up from the reason) */
    assert_string_equal(entry_str(pd, "text"),
                        "\xF0\x9F\x92\xA4 No human activity for 5min. Switch to mention-only? "
                        "[Yes] [No] [Snooze 5min]");
    assert_string_equal(entry_str(pd, "text"), sg->text);
    assert_int_equal(json_object_get_int64(json_object_object_get(pd, "expires")),
                     f->now + f->cfg.suggestion_timeout_ms);
    /* the snooze option's length, as on the suggestion, for a page that
     * opens after the suggestion was made */
    assert_int_equal(json_object_get_int64(json_object_object_get(pd, "snooze_ms")),
                     f->cfg.snooze_ms);
    assert_int_equal(sg->snooze_ms, f->cfg.snooze_ms);
    json_object_put(o);
    /* the record kept both through its JSON round trip, and the text */
    assert_string_equal(dm_p(f, "ann")->sugg.reason, sg->reason);
    char *rec = dormancy_persona_record_text(dm_p(f, "ann"));
    json_object *ro = json_tokener_parse(rec);
    assert_string_equal(entry_str(json_object_object_get(ro, "sugg"), "text"), sg->text);
    json_object_put(ro);
    free(rec);
    assert_string_equal(dm_p(f, "ann")->reason, "awake requested by joel");

    /* no answer: the default applies; the entry has the new reason and
     * nothing pending */
    dm_clear(f);
    dm_advance(f, f->cfg.suggestion_timeout_ms);
    ch = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_non_null(ch);
    assert_int_equal(ch->trigger, DORMANCY_TRIGGER_SUGGESTION_DEFAULT);
    st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(st);
    o = dormancy_persona_entry_json(st);
    assert_string_equal(entry_str(o, "level"), "mention-only");
    assert_string_equal(entry_str(o, "reason"), ch->reason);
    assert_false(json_object_object_get_ex(o, "pending", NULL));
    json_object_put(o);
    dm_free(f);
}

/* Answering or dropping a pending suggestion republishes the entry without
 * it; a timed dormancy shows its end. */
static void persona_snapshot_drops_answered_suggestion_and_shows_until(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.ai_only_ms = 60 * MIN_MS;
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann")->suggest, DORMANCY_SUGGEST_NO_HUMAN);
    dm_clear(f);
    dm_answer(f, "ann", DORMANCY_ANSWER_NO, NULL);
    const dormancy_action *st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(st); /* republished: nothing pending any more */
    assert_int_equal(st->suggest, DORMANCY_SUGGEST_NONE);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, "ann"), 0);
    dm_clear(f);
    dm_ai(f, "ann", "@self dormant sleep for 1h");
    st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(st);
    assert_int_equal(st->until, f->now + 3600000);
    json_object *o = dormancy_persona_entry_json(st);
    assert_int_equal(json_object_get_int64(json_object_object_get(o, "until")), f->now + 3600000);
    assert_non_null(strstr(entry_str(o, "reason"), "sleep requested by ann until"));
    json_object_put(o);
    dm_free(f);
}

static void room_state_schema_and_change_detection(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    dm_clear(f);
    dm_human(f, "hi");
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 1);
    json_object *o = dormancy_room_state_json(f->room, &f->cfg, f->now);
    const char *keys[] = {"room", "last_human_ts", "ai_only_since", "humans_present",
                          "velocity_per_min", "ai_to_human_ratio", "paused", "personas", "ts"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_object *v;
        assert_true(json_object_object_get_ex(o, keys[i], &v));
    }
    assert_int_equal(json_object_get_int64(json_object_object_get(o, "last_human_ts")), T0);
    assert_null(json_object_object_get(o, "ai_only_since"));
    assert_string_equal(json_object_to_json_string_ext(json_object_object_get(o, "personas"),
                                                       JSON_C_TO_STRING_PLAIN),
                        "{\"ann\":\"active\",\"bob\":\"active\"}");
    json_object_put(o);
    dm_clear(f);
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_CONTROL;
    ev.control.action = DORMANCY_CTL_RESUME; /* changes nothing */
    dm_send(f, &ev);
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 0);
    dm_free(f);
}

static bool stored(const dm_fx *f, const char *name, int64_t *due)
{
    for (int j = 0; j < f->n_store; j++)
        if (strcmp(f->store[j].name, name) == 0) {
            if (due)
                *due = f->store[j].due;
            return true;
        }
    return false;
}

/* A room of more than cfg.big_room personas publishes room/{r}/state at
 * most once per big_room_state_ms: a change inside that gap waits for a
 * "roomstate" deadline, which publishes the room as it is then (every
 * change meanwhile in one message); the pending deadline survives the
 * record's round trip (dm_after). A smaller room publishes every change. */
static void a_big_room_coalesces_its_room_state(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.big_room = 2;
    f->cfg.big_room_state_ms = 1000;
    dm_personas(f, 3, "ann", "bob", "cy");
    dm_advance(f, 5000);
    dm_clear(f);
    int64_t first = f->now;
    dm_human(f, "hi"); /* nothing published for longer than the gap: at once */
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 1);
    assert_false(stored(f, "roomstate", NULL));
    dm_clear(f);
    dm_advance(f, 100);
    dm_human(f, "again");
    dm_ai(f, "ann", "@self dormant sleep");
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 0);
    int64_t due = 0;
    assert_true(stored(f, "roomstate", &due));
    assert_int_equal(due, first + 1000);
    dm_advance(f, 899); /* not yet */
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 0);
    dm_advance(f, 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 1);
    assert_false(stored(f, "roomstate", NULL));
    json_object *o = dormancy_room_state_json(f->room, &f->cfg, f->now);
    assert_string_equal(json_object_get_string(json_object_object_get(
                            json_object_object_get(o, "personas"), "ann")),
                        "sleep");
    json_object_put(o);
    dm_clear(f);
    dm_advance(f, 5000);
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 0); /* nothing pending */

    f->cfg.big_room = 3; /* not more than 3 personas: every change at once */
    dm_human(f, "one");
    dm_advance(f, 10);
    dm_human(f, "two");
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 2);
    f->cfg.big_room = 2;
    f->cfg.big_room_state_ms = 0; /* coalescing off */
    dm_advance(f, 10);
    dm_human(f, "three");
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 3);
    assert_false(stored(f, "roomstate", NULL));
    dm_free(f);
}

/* room/{r}/state is written as text: it is valid JSON that json-c writes
 * back byte for byte, with the names json-c must escape escaped, and empty
 * lists as []. */
static void room_state_text_is_what_json_c_writes(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    char *empty = dormancy_room_state_text(f->room, &f->cfg, f->now);
    assert_non_null(strstr(empty, "\"humans_present\":[]"));
    assert_non_null(strstr(empty, "\"personas\":{}"));
    dm_personas(f, 2, "ann", "bob");
    dm_human(f, "hi");
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_PRESENCE;
    ev.presence.user = "jo\"el/\\x";
    ev.presence.session = "tab";
    ev.presence.status = DORMANCY_PRESENCE_ACTIVE;
    dm_send(f, &ev);
    /* the step's own count of the window, carried with its room state,
     * renders the same bytes as a count made for the rendering */
    const dormancy_action *rs = dm_last(f, DORMANCY_OUT_ROOM_STATE, NULL);
    assert_non_null(rs);
    assert_true(rs->has_metrics);
    assert_int_equal(rs->metrics_at, f->now);
    assert_int_equal(rs->metrics.humans, 1);
    char *carried = dormancy_room_state_text_m(f->room, &f->cfg, f->now, &rs->metrics);
    char *counted = dormancy_room_state_text(f->room, &f->cfg, f->now);
    assert_string_equal(carried, counted);
    free(carried);
    free(counted);
    for (int round = 0; round < 2; round++) {
        char *t = dormancy_room_state_text(f->room, &f->cfg, f->now);
        json_object *o = json_tokener_parse(t);
        assert_non_null(o);
        assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE),
                            t);
        json_object_put(o);
        free(t);
    }
    json_object *e = json_tokener_parse(empty);
    assert_non_null(e);
    assert_string_equal(json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE),
                        empty);
    json_object_put(e);
    free(empty);
    dm_free(f);
}

static void timer_names_fit_the_store(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    const char *long_id = "a-persona-id-that-is-exactly-sixty-four-characters-long-01234567";
    assert_int_equal(strlen(long_id), 64);
    dm_ai(f, long_id, "@self dormant sleep for 1h");
    assert_int_equal(f->n_store, 2); /* aionly, until:<hash> (asleep: no nohuman) */
    for (int i = 0; i < f->n_store; i++)
        assert_true(strlen(f->store[i].name) <= DORMANCY_TIMER_NAME_MAX);
    dm_advance(f, 60 * MIN_MS);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, long_id)->trigger, DORMANCY_TRIGGER_TIMED_END);
    dm_free(f);
}

static void every_event_gets_its_own_id(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_ai(f, "ann", "x");
    dm_advance(f, 16 * MIN_MS);
    dm_clear(f);
    dm_human(f, "back");
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, NULL), 3);
    for (size_t i = 0; i < f->log.n; i++)
        for (size_t j = i + 1; j < f->log.n; j++)
            if (f->log.v[i].id[0])
                assert_string_not_equal(f->log.v[i].id, f->log.v[j].id);
    dm_free(f);
}

/* Past VIGIL_DORMANCY_MAX_PERSONAS a persona is refused visibly: one
 * DORMANCY_OUT_LIMIT per refused input naming the room and the persona,
 * whether it spoke, was listed by its meta or was commanded into the room;
 * the members already tracked keep working. */
static void personas_past_the_limit_are_refused_visibly(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.auto_suggest = false;
    f->cfg.auto_sleep = false;
    f->cfg.max_personas = 3;
    dm_ai(f, "p1", "hi");
    dm_ai(f, "p2", "hi");
    dm_ai(f, "p3", "hi");
    assert_int_equal(dm_count(f, DORMANCY_OUT_LIMIT, NULL), 0);
    dm_ai(f, "p4", "hi");
    assert_int_equal(f->room->n_personas, 3);
    assert_int_equal(dm_count(f, DORMANCY_OUT_LIMIT, "p4"), 1);
    const dormancy_action *a = dm_last(f, DORMANCY_OUT_LIMIT, "p4");
    assert_non_null(strstr(a->reason, "room 'general'"));
    assert_non_null(strstr(a->reason, "persona 'p4'"));
    assert_non_null(strstr(a->reason, "VIGIL_DORMANCY_MAX_PERSONAS"));
    assert_true(a->id[0] != '\0'); /* an event: it carries an id */
    /* listed by its meta: refused too */
    dm_meta(f, "p5", NULL);
    assert_int_equal(dm_count(f, DORMANCY_OUT_LIMIT, "p5"), 1);
    /* a tracked member is never refused */
    dm_ai(f, "p2", "still here");
    assert_int_equal(dm_count(f, DORMANCY_OUT_LIMIT, "p2"), 0);
    /* room for one more once a member leaves is not needed for the rest to
     * work: the tracked ones still follow the rules */
    dm_sleep(f, "p1");
    assert_int_equal(dm_level(f, "p1"), DORMANCY_SLEEP);
    dm_free(f);
}

/* room_rounded writes what snprintf "%.2f" writes: at ties (0.125,
 * 2.675), negative zero, large and odd values, and a sweep. */
static void rounded_figures_match_printf(void **state)
{
    (void)state;
    const double cases[] = { 0, -0.0, 0.125, 0.375, 2.675, 1.005, 0.005, -0.004, -0.005, 1.0 / 3,
                             2.0 / 3, 256, 99.995, 99.994999, 1e9 - 0.001, 1e9, 1e12, -1e9, 1e-300,
                             12345678.9, INFINITY, -INFINITY, NAN };
    char got[32], want[32];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        room_rounded(cases[i], got, sizeof got);
        snprintf(want, sizeof want, "%.2f", cases[i]);
        assert_string_equal(got, want);
    }
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v = (double)(x % 2000000) / (double)(1 + (x >> 40) % 999) - 500.0;
        if (i % 4 == 0)
            v = (double)(x % 100000) / 1000.0; /* three decimals: many exact ties */
        room_rounded(v, got, sizeof got);
        snprintf(want, sizeof want, "%.2f", v);
        if (strcmp(got, want) != 0)
            fail_msg("%.17g: %s, printf %s", v, got, want);
    }
}

/* Each kind of suggestion (pile-on, autopilot) keeps its own text in the
 * persona state's pending entry, through the record's round trip. */
static void pending_entry_carries_each_kinds_text(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.ai_only_ms = 60 * MIN_MS;
    dm_personas(f, 2, "ann", "bob");
    dm_clear(f);
    dormancy_ap_decision d = {"ann", DORMANCY_AP_SUGGEST_MENTION_ONLY, "dominating the room"};
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_AUTOPILOT;
    ev.autopilot.decisions = &d;
    ev.autopilot.n = 1;
    dm_send(f, &ev);
    const dormancy_action *sg = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    const dormancy_action *st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(sg);
    assert_non_null(st);
    assert_string_equal(sg->text, DORMANCY_TEXT_AUTOPILOT " [Yes] [No]");
    json_object *o = dormancy_persona_entry_json(st);
    json_object *pd = json_object_object_get(o, "pending");
    assert_string_equal(entry_str(pd, "trigger"), "autopilot");
    assert_string_equal(entry_str(pd, "text"), sg->text);
    assert_false(json_object_object_get_ex(pd, "snooze_ms", NULL));
    json_object_put(o);
    char *rec = dormancy_persona_record_text(dm_p(f, "ann"));
    json_object *ro = json_tokener_parse(rec);
    assert_string_equal(entry_str(json_object_object_get(ro, "sugg"), "text"), sg->text);
    json_object_put(ro);
    free(rec);
    dm_free(f);
}

/* A record written before suggestions kept their text still loads, with
 * the suggestion pending; its entry then has no text (a reader falls back)
 * and is still what json-c writes. */
static void record_without_suggestion_text_still_loads(void **state)
{
    (void)state;
    char err[200];
    dormancy_room *r = dormancy_room_from_json(
        "{\"room\":\"general\",\"first_seen\":1700000000000,\"personas\":[{\"id\":\"ann\","
        "\"level\":\"active\",\"joined\":true,\"sugg\":{\"kind\":\"no-human\",\"id\":\"s1\","
        "\"at\":1700000300000,\"default_at\":1700000330000,"
        "\"reason\":\"no human message for 300000 ms (threshold 300000 ms)\"}}]}",
        "general", err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->personas[0].sugg.kind, DORMANCY_SUGGEST_NO_HUMAN);
    assert_string_equal(r->personas[0].sugg.id, "s1");
    assert_int_equal(r->personas[0].sugg.default_at, 1700000330000);
    assert_string_equal(r->personas[0].sugg.text, "");
    char *rec = dormancy_persona_record_text(&r->personas[0]);
    assert_null(strstr(rec, "\"text\""));
    free(rec);
    dormancy_room_free(r);
    dormancy_action a;
    memset(&a, 0, sizeof a);
    a.level = DORMANCY_ACTIVE;
    a.since = 1700000000000;
    a.suggest = DORMANCY_SUGGEST_NO_HUMAN;
    snprintf(a.pending_reason, sizeof a.pending_reason, "no human for 5min");
    a.pending_expires = 1700000330000;
    json_object *o = dormancy_persona_entry_json(&a);
    json_object *pd = NULL;
    assert_true(json_object_object_get_ex(o, "pending", &pd));
    assert_false(json_object_object_get_ex(pd, "text", NULL));
    json_object_put(o);
}

/* The change event and the persona entry are written as text: each is
 * json-c's own print of itself (so exactly the payload the json-c objects
 * gave), with escapes, a null trigger and every optional member. */
static void change_and_entry_texts_are_what_json_c_writes(void **state)
{
    (void)state;
    dormancy_action a;
    memset(&a, 0, sizeof a);
    snprintf(a.id, sizeof a.id, "m1:general:0");
    snprintf(a.persona, sizeof a.persona, "ann");
    a.level = DORMANCY_SLEEP;
    a.previous = DORMANCY_ACTIVE;
    a.trigger = DORMANCY_TRIGGER_MANUAL;
    snprintf(a.reason, sizeof a.reason, "said \"sleep\" \\ at 5/7 \xc3\xa9\t");
    /* also the pending suggestion's text in the entry: with escapes too */
    snprintf(a.text, sizeof a.text, "\xf0\x9f\x92\xa4 Switching to \"sleep\" / now? [Yes]");
    snprintf(a.message_id, sizeof a.message_id, "m1");
    a.since = 1700000000000;
    a.until = 1700000060000;
    a.snoozed_until = 1700000030000;
    a.suggest = DORMANCY_SUGGEST_NO_HUMAN;
    snprintf(a.pending_reason, sizeof a.pending_reason, "no human for 5min");
    a.pending_expires = 1700000090000;
    for (int round = 0; round < 2; round++) {
        char *texts[2] = { dormancy_change_text(&a, "general", 1700000000123),
                           dormancy_persona_entry_text(&a) };
        for (int k = 0; k < 2; k++) {
            json_object *o = json_tokener_parse(texts[k]);
            assert_non_null(o);
            assert_string_equal(json_object_to_json_string_ext(
                                    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                                texts[k]);
            json_object_put(o);
            free(texts[k]);
        }
        /* then the bare form: no optional member, unnamed trigger */
        a.trigger = DORMANCY_TRIGGER_NONE;
        a.message_id[0] = a.reason[0] = '\0';
        a.until = a.snoozed_until = 0;
        a.suggest = DORMANCY_SUGGEST_NONE;
    }
}

/* The record's recent_dt and recent_kind, kept and edited as messages
 * come and age out (full list, drops of one and of many, a reset), read
 * the same as written anew from the list (a copy keeps no texts). The
 * room stays in memory throughout, as the service's record cache keeps
 * it (dm_after reads every record back, which starts the texts afresh). */
static void recent_texts_follow_the_list(void **state)
{
    (void)state;
    dormancy_config cfg;
    dormancy_config_init(&cfg);
    dormancy_room *r = dormancy_room_new("general");
    assert_non_null(r);
    dormancy_step s = { .room = r, .cfg = &cfg, .now = 1700000000000 };
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < DORMANCY_MAX_RECENT + 40; i++) {
            activity_prune(&s);
            activity_record(&s, i % 3 == 0);
            s.now += 1 + i % 7;
            if (i % 50 == 0) { /* a clock that went back */
                s.now -= 20;
            }
        }
        assert_int_equal(r->n_recent, DORMANCY_MAX_RECENT);
        s.now += cfg.velocity_window_ms - 900; /* most of them age out */
        activity_prune(&s);
        activity_record(&s, false);
        assert_true(r->n_recent > 1 && r->n_recent < DORMANCY_MAX_RECENT);
        char *kept = dormancy_room_to_json(r);
        dormancy_room *c = dormancy_room_clone(r);
        assert_non_null(c);
        assert_false(c->rtext_ok);
        char *anew = dormancy_room_to_json(c);
        assert_string_equal(kept, anew);
        free(kept);
        free(anew);
        dormancy_room_free(c);
        s.now += 10 * cfg.velocity_window_ms; /* all of them age out */
        activity_prune(&s);
        activity_record(&s, false);
        assert_int_equal(r->n_recent, 1);
    }
    /* edited all along: written whole once, at the first message */
    assert_true(r->rtext_ok);
    assert_int_equal(r->rtext_dt.rewrites, 1);
    dormancy_room_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(busy_record_round_trips),
        cmocka_unit_test(lists_are_bounded),
        cmocka_unit_test(personas_past_the_limit_are_refused_visibly),
        cmocka_unit_test(quiet_room_record_is_small),
        cmocka_unit_test(recent_times_round_trip_compactly),
        cmocka_unit_test(reused_persona_texts_match_a_fresh_write),
        cmocka_unit_test(kept_human_entries_follow_answers),
        cmocka_unit_test(unreadable_records_are_refused),
        cmocka_unit_test(out_of_range_record_times_read_as_absent),
        cmocka_unit_test(persona_snapshot_on_join_and_change_only),
        cmocka_unit_test(persona_digest_is_the_one_records_hold),
        cmocka_unit_test(persona_snapshot_carries_reason_and_pending_suggestion),
        cmocka_unit_test(persona_snapshot_drops_answered_suggestion_and_shows_until),
        cmocka_unit_test(room_state_schema_and_change_detection),
        cmocka_unit_test(a_big_room_coalesces_its_room_state),
        cmocka_unit_test(room_state_text_is_what_json_c_writes),
        cmocka_unit_test(timer_names_fit_the_store),
        cmocka_unit_test(every_event_gets_its_own_id),
        cmocka_unit_test(rounded_figures_match_printf),
        cmocka_unit_test(recent_texts_follow_the_list),
        cmocka_unit_test(change_and_entry_texts_are_what_json_c_writes),
        cmocka_unit_test(pending_entry_carries_each_kinds_text),
        cmocka_unit_test(record_without_suggestion_text_still_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
