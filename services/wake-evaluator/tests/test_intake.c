/* test_intake.c - which personas a room message gets evaluated for, and
 * how: jobs for smart/mid sleepers, rules at once for basic ones (and for
 * every tier without an LLM, or with LLM wake decisions off), nothing for
 * those a rule of dormancy-monitor already wakes. */
#include "wk_test.h"

/* The test room of sleepers and wakers, in room `id`. */
static wk *room_in(const char *id)
{
    wk *t = wk_new();
    wake_room_free(t->r);
    t->r = wake_room_new(id);
    assert_non_null(t->r);
    wk_persona(t, "smart", "smart", -1, NULL, 0);
    wk_persona(t, "mid", NULL, 8000000000LL, NULL, 0);
    wk_persona(t, "basic", NULL, 3000000000LL, NULL, 0);
    wk_persona(t, "awake", "smart", -1, NULL, 0);
    wk_persona(t, "mo", "smart", -1, NULL, 0);
    wk_level(t, "smart", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "mid", WAKE_LEVEL_SLEEP, "autopilot");
    wk_level(t, "basic", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "awake", WAKE_LEVEL_ACTIVE, "manual");
    wk_level(t, "mo", WAKE_LEVEL_MENTION_ONLY, "no-human");
    wk_clear(t);
    return t;
}

static wk *room(void) { return room_in("general"); }

static bool job_for(const wk *t, const char *persona)
{
    char needle[96];
    snprintf(needle, sizeof needle, "\"persona\":\"%s\"", persona);
    for (int i = 0; i < t->n_jobs; i++)
        if (strstr(t->jobs[i], needle))
            return true;
    return false;
}

static json_object *wake_of(const wk *t, const char *persona)
{
    char topic[96];
    snprintf(topic, sizeof topic, "persona/%s/wake", persona);
    for (int i = 0; i < t->n_pubs; i++)
        if (strcmp(t->pubs[i].topic, topic) == 0)
            return wk_json(t->pubs[i].payload);
    return NULL;
}

/* The first job the sink got, read as a wake job (free with
 * wake_job_clear). */
static void first_job(const wk *t, wake_job *j)
{
    wake_ap_job aj;
    wake_job_kind kind;
    char why[200];
    assert_true(t->n_jobs > 0);
    assert_int_equal(wake_job_parse(t->jobs[0], strlen(t->jobs[0]), &kind, j, &aj, why,
                                    sizeof why), 0);
    assert_int_equal(kind, WAKE_JOB_WAKE);
}

static void only_sleepers_are_evaluated(void **state)
{
    (void)state;
    wk *t = room();
    assert_int_equal(wk_msg(t, "awake", WAKE_SENDER_AI, "what do you all think?"), 0);
    assert_int_equal(t->n_jobs, 2);
    assert_true(job_for(t, "smart"));
    assert_true(job_for(t, "mid"));
    assert_false(job_for(t, "awake") || job_for(t, "mo") || job_for(t, "basic"));
    /* basic: decided at once by the rules */
    json_object *w = wake_of(t, "basic");
    assert_non_null(w);
    assert_string_equal(wk_str(w, "via"), "rules");
    assert_string_equal(wk_str(w, "tier"), "basic");
    assert_string_equal(wk_str(w, "id"), "m1:general:wake:basic");
    json_object *v;
    json_object_object_get_ex(w, "should_wake", &v);
    assert_false(json_object_get_boolean(v));
    json_object_put(w);
    assert_int_equal(wk_count(t, "/wake", NULL), 1);
    assert_int_equal(wk_count(t, "/economics", NULL), 1);
    assert_int_equal(t->r->evaluations, 1);
    wk_free(t);
}

static void the_sender_is_not_evaluated(void **state)
{
    (void)state;
    wk *t = room();
    wk_msg(t, "smart", WAKE_SENDER_AI, "talking in my sleep");
    assert_false(job_for(t, "smart"));
    assert_true(job_for(t, "mid"));
    wk_free(t);
}

static void mentions_wake_by_rule(void **state)
{
    (void)state;
    wk *t = room();
    wk_msg(t, "awake", WAKE_SENDER_AI, "@smart and @MID, see this");
    assert_false(job_for(t, "smart"));
    assert_false(job_for(t, "mid"));
    assert_int_equal(t->n_jobs, 0);
    /* the mentions array counts too */
    wk_clear(t);
    const char *ms[] = {"smart"};
    wake_message m = {"mx", "awake", WAKE_SENDER_AI, "see this", ms, 1};
    assert_int_equal(wake_on_message(t->r, &t->c, &m, t->now, &t->sink), 0);
    assert_false(job_for(t, "smart"));
    assert_true(job_for(t, "mid"));
    wk_free(t);
}

static void human_messages_and_auto_wake(void **state)
{
    (void)state;
    wk *t = room();
    /* absence-caused sleep (ai-only) wakes by rule on a human message */
    wk_level(t, "smart", WAKE_LEVEL_SLEEP, "ai-only");
    wk_clear(t);
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "I'm back");
    assert_false(job_for(t, "smart"));
    assert_true(job_for(t, "mid"));            /* put to sleep by the autopilot: a choice */
    assert_int_equal(wk_count(t, "/wake", NULL), 1); /* basic, manual sleep: rules */

    /* VIGIL_DORMANCY_HUMAN_WAKES=all: every sleeper wakes by rule */
    wk_clear(t);
    t->c.human_wakes_all = true;
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "anyone?");
    assert_int_equal(t->n_jobs, 0);
    assert_int_equal(wk_count(t, "/wake", NULL), 0);

    /* auto-wake off (config, or the persona's override): evaluated */
    wk_clear(t);
    t->c.auto_wake = false;
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "anyone?");
    assert_true(job_for(t, "smart") && job_for(t, "mid"));
    wk_clear(t);
    t->c.auto_wake = true;
    wake_room_find(t->r, "mid")->auto_wake_ov = 0;
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "anyone?");
    assert_false(job_for(t, "smart"));
    assert_true(job_for(t, "mid"));
    wk_free(t);
}

static void without_llm_the_rules_decide_now(void **state)
{
    (void)state;
    wk *t = room();
    t->c.llm_enabled = false;
    wk_msg(t, "awake", WAKE_SENDER_AI, "the cluster is down");
    assert_int_equal(t->n_jobs, 0);
    json_object *w = wake_of(t, "smart");
    assert_non_null(w);
    assert_string_equal(wk_str(w, "via"), "fallback");
    assert_string_equal(wk_str(w, "reason"),
                        "no LLM configured (VIGIL_LLM_URL is empty); rules: urgent keyword 'down'");
    json_object *v;
    json_object_object_get_ex(w, "should_wake", &v);
    assert_true(json_object_get_boolean(v));
    assert_false(json_object_object_get_ex(w, "tokens", &v));
    json_object_put(w);
    w = wake_of(t, "basic");
    assert_string_equal(wk_str(w, "via"), "rules");
    json_object_put(w);
    assert_int_equal(wk_count(t, "/wake", NULL), 3);

    /* LLM wake decisions switched off (per persona here): rules, via rules */
    wk_clear(t);
    t->c.llm_enabled = true;
    wake_room_find(t->r, "smart")->llm_wake_ov = 0;
    wk_msg(t, "awake", WAKE_SENDER_AI, "lunch?");
    w = wake_of(t, "smart");
    assert_string_equal(wk_str(w, "via"), "rules");
    assert_non_null(strstr(wk_str(w, "reason"), "switched off"));
    json_object_put(w);
    assert_true(job_for(t, "mid"));
    wk_free(t);
}

static void system_messages_are_skipped_unless_asked(void **state)
{
    (void)state;
    wk *t = room();
    wk_msg(t, "vigil", WAKE_SENDER_SYSTEM, "server down notice");
    assert_int_equal(t->n_jobs, 0);
    assert_int_equal(wk_count(t, "/wake", NULL), 0);
    t->c.evaluate_system = true;
    wk_msg(t, "vigil", WAKE_SENDER_SYSTEM, "server down notice");
    assert_int_equal(t->n_jobs, 2);
    wk_free(t);
}

static void the_job_carries_its_context(void **state)
{
    (void)state;
    wk *t = room();
    t->now = T0 - 90000;
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "hello team");
    t->now = T0;
    wk_clear(t);
    const char *ms[] = {"someone"};
    wake_message m = {"m9", "awake", WAKE_SENDER_AI, "deploy \"v2\" failed", ms, 1};
    assert_int_equal(wake_on_message(t->r, &t->c, &m, t->now, &t->sink), 0);
    wake_job j;
    first_job(t, &j);
    assert_string_equal(j.job, "m9:general:wake:smart");
    assert_string_equal(j.room, "general");
    assert_string_equal(j.persona, "smart");
    assert_string_equal(j.role, "operations");
    assert_int_equal(j.tier, WAKE_TIER_SMART);
    assert_true(j.threshold == 0.7);
    assert_string_equal(j.message_id, "m9");
    assert_string_equal(j.sender, "awake");
    assert_int_equal(j.sender_type, WAKE_SENDER_AI);
    assert_string_equal(j.text, "deploy \"v2\" failed");
    assert_int_equal(j.n_mentions, 1);
    assert_int_equal(j.recent_count, 1);
    assert_true(j.has_human);
    assert_string_equal(j.human_text, "hello team");
    assert_string_equal(j.since_human, "1 min ago");
    assert_string_equal(j.active_ais, "awake");
    assert_true(j.enqueued == T0);
    wake_job_clear(&j);
    /* per-persona threshold */
    wk_clear(t);
    wake_room_find(t->r, "smart")->wake_conf_ov = 0.9;
    wk_msg(t, "awake", WAKE_SENDER_AI, "x");
    first_job(t, &j);
    assert_true(j.threshold == 0.9);
    wake_job_clear(&j);
    wk_free(t);
}

/* A job is worth its model call only while its persona still sleeps in
 * the room: woken since, dropped to another level, or gone, it is not;
 * asleep again, it is; no room record at all, it is asked. */
static void a_job_is_wanted_while_its_persona_sleeps(void **state)
{
    (void)state;
    wk *t = room();
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "anyone around?");
    assert_true(job_for(t, "smart"));
    wake_job j;
    first_job(t, &j);
    assert_string_equal(j.persona, "smart");
    assert_true(wake_job_wanted(t->r, &j));
    assert_true(wake_job_wanted(NULL, &j));
    t->now += 1000;
    wk_level(t, "smart", WAKE_LEVEL_ACTIVE, "human");
    assert_false(wake_job_wanted(t->r, &j));
    t->now += 1000;
    wk_level(t, "smart", WAKE_LEVEL_MENTION_ONLY, "manual");
    assert_false(wake_job_wanted(t->r, &j));
    t->now += 1000;
    wk_level(t, "smart", WAKE_LEVEL_SLEEP, "manual");
    assert_true(wake_job_wanted(t->r, &j));
    wake_room_remove(t->r, "smart");
    assert_false(wake_job_wanted(t->r, &j));
    wake_job_clear(&j);
    wk_free(t);
}

/* The fallback's rules see the whole message, though the job keeps only
 * the prompt's first WAKE_PROMPT_TEXT_MAX bytes of it: the verdict is made
 * at intake and carried (a basic persona, decided at intake, agrees). */
static void the_job_carries_the_rules_verdict_on_the_whole_text(void **state)
{
    (void)state;
    wk *t = room();
    size_t n = WAKE_PROMPT_TEXT_MAX + 200;
    const char *tail = " the server is down";
    char *text = malloc(n + strlen(tail) + 1);
    memset(text, 'x', n);
    for (size_t i = 9; i < n; i += 10)
        text[i] = ' ';
    strcpy(text + n, tail);
    assert_int_equal(wk_msg(t, "awake", WAKE_SENDER_AI, text), 0);
    free(text);
    json_object *w = wake_of(t, "basic");
    assert_non_null(w);
    assert_string_equal(wk_str(w, "reason"), "rules: urgent keyword 'down'");
    json_object_put(w);
    wake_job j;
    first_job(t, &j);
    assert_true(strlen(j.text) <= WAKE_PROMPT_TEXT_MAX); /* the job stays bounded */
    assert_null(strstr(j.text, "down"));
    assert_true(j.has_rules && j.rules_wake);
    wake_decision d;
    wake_decide_rules(&j, WAKE_VIA_FALLBACK, "LLM http_error: 500", &d);
    assert_true(d.should_wake);
    assert_string_equal(d.reason, "LLM http_error: 500; rules: urgent keyword 'down'");
    wake_job_clear(&j);

    /* a short, harmless message: the verdict says stay asleep */
    wk_clear(t);
    wk_msg(t, "awake", WAKE_SENDER_AI, "lunch?");
    first_job(t, &j);
    assert_true(j.has_rules && !j.rules_wake);
    wake_decide_rules(&j, WAKE_VIA_FALLBACK, NULL, &d);
    assert_false(d.should_wake);
    wake_job_clear(&j);
    wk_free(t);
}

/* A job enqueued by a version whose jobs had no verdict is still decided:
 * the rules read the text it holds. */
static void a_job_without_a_verdict_falls_back_on_its_text(void **state)
{
    (void)state;
    const char *old = "{\"kind\": \"wake\", \"job\": \"m1:wake:sre\", \"room\": \"r\", "
                      "\"persona\": \"sre\", \"tier\": \"smart\", \"threshold\": 0.7, "
                      "\"message\": {\"id\": \"m1\", \"sender\": \"bot\", "
                      "\"sender_type\": \"ai\", \"text\": \"the deploy is down\", "
                      "\"mentions\": []}, \"active_ais\": \"\", \"enqueued\": 5}";
    wake_job j;
    wake_ap_job aj;
    wake_job_kind kind;
    char why[200];
    assert_int_equal(wake_job_parse(old, strlen(old), &kind, &j, &aj, why, sizeof why), 0);
    assert_false(j.has_rules);
    wake_decision d;
    wake_decide_rules(&j, WAKE_VIA_FALLBACK, NULL, &d);
    assert_true(d.should_wake);
    assert_string_equal(d.reason, "rules: urgent keyword 'down'");
    wake_job_clear(&j);
}

static void bad_jobs_are_refused(void **state)
{
    (void)state;
    wake_job j;
    wake_ap_job aj;
    wake_job_kind kind;
    char why[200];
    const char *bad[] = {"", "not json", "[1]", "{\"kind\": \"other\"}",
                         "{\"kind\": \"wake\", \"room\": \"r\"}",
                         "{\"kind\": \"wake\", \"job\": \"j\", \"room\": \"r\", \"persona\": \"p\", "
                         "\"tier\": \"genius\", \"message\": {}}",
                         "{\"kind\": \"wake\", \"job\": \"j\", \"room\": \"r\", \"persona\": \"p\", "
                         "\"tier\": \"smart\"}",
                         "{\"kind\": \"autopilot\", \"job\": \"j\", \"room\": \"r\"}",
                         /* a verdict that is there but malformed */
                         "{\"kind\": \"wake\", \"job\": \"j\", \"room\": \"r\", "
                         "\"persona\": \"p\", \"tier\": \"smart\", \"message\": {\"id\": \"m\", "
                         "\"sender\": \"s\", \"sender_type\": \"ai\"}, "
                         "\"rules\": {\"wake\": \"yes\", \"reason\": \"r\"}}",
                         "{\"kind\": \"wake\", \"job\": \"j\", \"room\": \"r\", "
                         "\"persona\": \"p\", \"tier\": \"smart\", \"message\": {\"id\": \"m\", "
                         "\"sender\": \"s\", \"sender_type\": \"ai\"}, \"rules\": true}",
                         "{\"kind\": \"wake\"} trailing"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (wake_job_parse(bad[i], strlen(bad[i]), &kind, &j, &aj, why, sizeof why) != -1)
            fail_msg("case %zu accepted", i);
}

/* A smart persona's LLM decision with every optional field set. */
static void llm_decision(wake_decision *d, const char *reason)
{
    memset(d, 0, sizeof *d);
    snprintf(d->id, sizeof d->id, "m1:wake:smart");
    snprintf(d->persona, sizeof d->persona, "smart");
    snprintf(d->room, sizeof d->room, "general");
    snprintf(d->message_id, sizeof d->message_id, "m1");
    d->should_wake = true;
    d->confidence = 0.923456;
    snprintf(d->reason, sizeof d->reason, "%s", reason);
    d->via = WAKE_VIA_LLM;
    d->tier = WAKE_TIER_SMART;
    d->tokens = 187;
    d->latency_ms = 1240;
    d->llm_latency_ms = 1200;
    snprintf(d->llm_status, sizeof d->llm_status, "ok");
    snprintf(d->alternative, sizeof d->alternative, "helper");
}

static void a_decision_commit_counts_tokens(void **state)
{
    (void)state;
    wk *t = room();
    wake_decision d;
    llm_decision(&d, "outage");
    assert_int_equal(wake_on_decision(t->r, &t->c, &d, t->now, &t->sink), 0);
    wk_roundtrip(t);
    assert_true(t->r->tokens_wake == 187 && t->r->evaluations == 1 && t->r->llm_evaluations == 1);
    const wk_pub *p = NULL;
    assert_int_equal(wk_count(t, "/wake", &p), 1);
    assert_string_equal(p->topic, "persona/smart/wake");
    json_object *o = wk_json(p->payload), *v;
    const char *keys[] = {"id", "persona", "room", "message_id", "should_wake", "confidence",
                          "reason", "tier", "via", "alternative", "latency_ms", "tokens", "ts"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!json_object_object_get_ex(o, keys[i], &v))
            fail_msg("field %s missing", keys[i]);
    json_object_object_get_ex(o, "confidence", &v);
    assert_true(json_object_get_double(v) == 0.923);
    assert_non_null(strstr(p->payload, "\"confidence\":0.923,"));
    json_object_put(o);
    assert_int_equal(wk_count(t, "/economics", &p), 1);
    o = wk_json(p->payload);
    json_object_object_get_ex(o, "tokens_spent", &v);
    assert_int_equal(json_object_get_int64(v), 187);
    json_object_put(o);
    wk_free(t);
}

/* The decision and economics payloads, byte for byte: they are written as
 * text, and these are the texts json-c printed for the same values before
 * (every optional field, escapes, rounded numbers). */
static void decision_and_economics_texts_are_exact(void **state)
{
    (void)state;
    wake_decision d;
    llm_decision(&d, "an \"outage\"\nin eu/west \\ now");
    char *s = wake_decision_json(&d, 1732448000000);
    assert_string_equal(
        s, "{\"id\":\"m1:wake:smart\",\"persona\":\"smart\",\"room\":\"general\",\"message_id\":"
           "\"m1\",\"should_wake\":true,\"confidence\":0.923,\"reason\":\"an \\\"outage\\\"\\nin "
           "eu/west \\\\ now\",\"tier\":\"smart\",\"via\":\"llm\",\"alternative\":\"helper\","
           "\"latency_ms\":1240,\"tokens\":187,\"llm_status\":\"ok\",\"llm_latency_ms\":1200,"
           "\"ts\":1732448000000}");
    free(s);
    d.confidence = 0;
    d.tokens = -1;
    d.llm_latency_ms = -1;
    d.llm_status[0] = '\0';
    d.alternative[0] = '\0';
    d.latency_ms = -5;
    d.should_wake = false;
    s = wake_decision_json(&d, 1732448000000);
    assert_string_equal(
        s, "{\"id\":\"m1:wake:smart\",\"persona\":\"smart\",\"room\":\"general\",\"message_id\":"
           "\"m1\",\"should_wake\":false,\"confidence\":0,\"reason\":\"an \\\"outage\\\"\\nin "
           "eu/west \\\\ now\",\"tier\":\"smart\",\"via\":\"llm\",\"latency_ms\":0,"
           "\"ts\":1732448000000}");
    free(s);
    wk *t = wk_new();
    wake_persona *p = wake_room_add(t->r, "p1", 0);
    p->dormant_since = 1732448000000 - 3600000;
    p->rate_per_hour = 2.5;
    p->sent_dormant = 1;
    t->r->ai_msgs = 3;
    t->r->ai_chars = 1000;
    t->r->tokens_wake = 42;
    t->r->evaluations = 7;
    assert_int_equal(wake_publish_economics(t->r, 1732448000000 + 1234567, &t->sink), 0);
    const wk_pub *e = NULL;
    assert_int_equal(wk_count(t, "/economics", &e), 1);
    assert_string_equal(
        e->payload, "{\"room\":\"general\",\"tokens_spent\":42,\"tokens_saved_estimate\":196,"
                    "\"evaluations\":7,\"llm_evaluations\":0,\"autopilot_runs\":0,"
                    "\"tokens_spent_wake\":42,\"tokens_spent_autopilot\":0,"
                    "\"messages_saved_estimate\":2.36,\"ts\":1732449234567}");
    wk_free(t);
}

/* The wake event's id (also its job's) is "<message id>:<room>:wake:
 * <persona>": a message id is unique only within its room, so the same id
 * in two rooms makes two decisions with two ids, while the same message
 * decided again makes the same one (consumers dedupe on it). */
static void wake_ids_name_the_room(void **state)
{
    (void)state;
    wk *a = room_in("general"), *b = room_in("ops");
    assert_int_equal(wk_msg(a, "awake", WAKE_SENDER_AI, "what do you all think?"), 0);
    assert_int_equal(wk_msg(b, "awake", WAKE_SENDER_AI, "what do you all think?"), 0);
    json_object *wa = wake_of(a, "basic"), *wb = wake_of(b, "basic");
    assert_non_null(wa);
    assert_non_null(wb);
    assert_string_equal(wk_str(wa, "message_id"), "m1");
    assert_string_equal(wk_str(wb, "message_id"), "m1");
    assert_string_equal(wk_str(wa, "id"), "m1:general:wake:basic");
    assert_string_equal(wk_str(wb, "id"), "m1:ops:wake:basic");
    json_object_put(wa);
    json_object_put(wb);
    wake_job ja, jb;
    first_job(a, &ja);
    first_job(b, &jb);
    assert_string_not_equal(ja.job, jb.job);
    assert_string_equal(ja.job + strlen(ja.job) - strlen(":general:wake:smart"),
                        ":general:wake:smart");
    wake_job_clear(&ja);
    wake_job_clear(&jb);
    /* the same message again (a redelivery): the same id */
    wk_free(b);
    b = room_in("ops");
    assert_int_equal(wk_msg(b, "awake", WAKE_SENDER_AI, "what do you all think?"), 0);
    wb = wake_of(b, "basic");
    assert_string_equal(wk_str(wb, "id"), "m1:ops:wake:basic");
    json_object_put(wb);
    wk_free(a);
    wk_free(b);
}

/* A message id of the longest kind still gives a contract-sized id (cut
 * and hashed) that differs from another room's. */
static void long_wake_ids_stay_apart(void **state)
{
    (void)state;
    char input[WAKE_EVID_MAX + 1], ids[2][WAKE_EVID_MAX + 1];
    memset(input, 'a', WAKE_EVID_MAX);
    input[WAKE_EVID_MAX] = '\0';
    const char *rooms[] = {"general", "ops"};
    for (int i = 0; i < 2; i++) {
        wk *t = room_in(rooms[i]);
        wake_message m = {input, "awake", WAKE_SENDER_AI, "hi", NULL, 0};
        assert_int_equal(wake_on_message(t->r, &t->c, &m, t->now, &t->sink), 0);
        json_object *w = wake_of(t, "basic");
        assert_non_null(w);
        snprintf(ids[i], sizeof ids[i], "%s", wk_str(w, "id"));
        json_object_put(w);
        wk_free(t);
        assert_int_equal(strlen(ids[i]), WAKE_EVID_MAX);
        assert_null(strpbrk(ids[i], "/+#"));
    }
    assert_string_not_equal(ids[0], ids[1]);
}

/* Past VIGIL_WAKE_MAX_PERSONAS a persona is not tracked, and the sink is
 * told so (the service logs and counts it): by meta, by level report and by
 * speaking. Tracked members are never refused. */
static void personas_past_the_limit_are_told(void **state)
{
    (void)state;
    wk *t = wk_new();
    t->c.max_personas = 2;
    wk_persona(t, "a", "smart", -1, NULL, 0);
    wk_persona(t, "b", "smart", -1, NULL, 0);
    assert_int_equal(t->limits, 0);
    wk_persona(t, "c", "smart", -1, NULL, 0);
    assert_int_equal(t->limits, 1);
    assert_non_null(strstr(t->last_limit, "persona 'c'"));
    assert_non_null(strstr(t->last_limit, "VIGIL_WAKE_MAX_PERSONAS"));
    assert_null(wake_room_find(t->r, "c"));
    wk_level(t, "d", WAKE_LEVEL_SLEEP, "manual");
    assert_int_equal(t->limits, 2);
    wk_msg(t, "e", WAKE_SENDER_AI, "hello");
    assert_int_equal(t->limits, 3);
    wk_level(t, "a", WAKE_LEVEL_SLEEP, "manual");
    assert_int_equal(t->limits, 3);
    assert_int_equal(t->r->n_personas, 2);
    wk_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_sleepers_are_evaluated),
        cmocka_unit_test(the_sender_is_not_evaluated),
        cmocka_unit_test(mentions_wake_by_rule),
        cmocka_unit_test(human_messages_and_auto_wake),
        cmocka_unit_test(without_llm_the_rules_decide_now),
        cmocka_unit_test(system_messages_are_skipped_unless_asked),
        cmocka_unit_test(the_job_carries_its_context),
        cmocka_unit_test(the_job_carries_the_rules_verdict_on_the_whole_text),
        cmocka_unit_test(a_job_without_a_verdict_falls_back_on_its_text),
        cmocka_unit_test(bad_jobs_are_refused),
        cmocka_unit_test(a_decision_commit_counts_tokens),
        cmocka_unit_test(decision_and_economics_texts_are_exact),
        cmocka_unit_test(wake_ids_name_the_room),
        cmocka_unit_test(long_wake_ids_stay_apart),
        cmocka_unit_test(a_job_is_wanted_while_its_persona_sleeps),
        cmocka_unit_test(personas_past_the_limit_are_told),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
