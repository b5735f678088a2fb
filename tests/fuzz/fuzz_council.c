/* fuzz_council.c - council's decision core: the action router over Sol's
 * answer, the A2A JSON-RPC reply reader, the loop job reader, the user's
 * state record and every input a session takes.
 *
 * Input: parts separated by a line holding only "---". The first byte of
 * the first part chooses what is driven:
 *  - 'R': part 1 is a proposal: council_route, council_question_priority,
 *    council_parse_duration, vigil_utf8_copy_n;
 *  - 'A': part 1 an A2A response body, part 2 the request id (else "j");
 *    also council_a2a_request over the same text;
 *  - 'J': part 1 a loop job (council_job_parse);
 *  - anything else: part 1 a stored user record (empty: a new user),
 *    then one command a part, applied in order at a clock that only moves
 *    forward: "<verb> <+ms> <arg>|<arg>|..." with verbs start, pause,
 *    resume, end, answer, message, presence, timer, outcome. Ids (sessions,
 *    rooms) reach the core only when valid, as the shell checks them.
 * What must hold: a refusal says why; the router picks one of the seven
 * actions, its content lies inside the text and an unknown one is a
 * reflect with a warning; a priority is 1..10; a successful A2A read is
 * ok, a failed one has an error; the request is valid JSON; the record
 * dumps to JSON that loads again into the same dump, after every command. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "council.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 24
#define T0 1700000000000LL

static int sink_publish(void *ctx, const char *topic, json_object *payload, bool retain)
{
    (void)ctx;
    (void)retain;
    if (!topic || !topic[0] || !payload)
        abort();
    fuzz_json_reads(json_object_to_json_string_ext(payload, JSON_C_TO_STRING_PLAIN));
    return 0;
}

static int sink_timer(void *ctx, const char *name, int64_t due)
{
    (void)ctx;
    (void)due;
    if (!name || !name[0])
        abort();
    return 0;
}

/* A job the core enqueues must read back as a job. */
static int sink_job(void *ctx, json_object *job)
{
    (void)ctx;
    const char *s = json_object_to_json_string_ext(job, JSON_C_TO_STRING_PLAIN);
    council_job j;
    char why[256] = "";
    if (council_job_parse(s, strlen(s), &j, why, sizeof why) != 0) {
        fprintf(stderr, "job does not read back: %s\n%s\n", why, s);
        abort();
    }
    council_job_clear(&j);
    return 0;
}

static int sink_record(void *ctx, const char *name, json_object *value)
{
    (void)ctx;
    if (!name || !value)
        abort();
    return 0;
}

static int sink_append(void *ctx, const char *name, json_object *value, int64_t maxlen)
{
    (void)ctx;
    (void)maxlen;
    if (!name || !value)
        abort();
    return 0;
}

static const council_sink SINK = { NULL, sink_publish, sink_timer, sink_job, sink_record,
                                   sink_append };

static void fuzz_route(const char *t)
{
    council_routed r;
    council_route(t, &r);
    if (r.action < 0 || r.action >= COUNCIL_ACT__COUNT)
        abort();
    if (r.unknown && (r.action != COUNCIL_ACT_REFLECT || r.warning[0] == '\0'))
        abort();
    size_t tl = strlen(t);
    if (r.content && (r.content < t || r.content + r.content_len > t + tl))
        abort();
    const char *rest = NULL;
    int pr = council_question_priority(t, &rest);
    if (pr < 1 || pr > 10 || !rest || rest < t || rest > t + tl)
        abort();
    int64_t d = council_parse_duration(t);
    if (d < -1)
        abort();
    char out[COUNCIL_TEXT_MAX + 1];
    vigil_utf8_copy_n(out, sizeof out, t, tl);
    if (strlen(out) > COUNCIL_TEXT_MAX)
        abort();
    (void)council_action_parse(t);
}

static void fuzz_a2a(const char *body, size_t len, const char *id)
{
    council_a2a_reply r;
    int rc = council_a2a_parse(body, len, id, &r);
    if (rc == 0 && !r.ok)
        abort();
    if (rc != 0 && (rc != -1 || r.ok || r.error[0] == '\0'))
        abort();
    if (strlen(r.text) > COUNCIL_RESULT_MAX)
        abort();
    for (int m = 0; m < 2; m++) {
        char *req = council_a2a_request((council_a2a_method)m, id, body);
        if (!req)
            abort();
        fuzz_json_reads(req);
        free(req);
    }
}

static void fuzz_job(const char *t, size_t len)
{
    council_job j;
    char why[256] = "";
    if (council_job_parse(t, len, &j, why, sizeof why) == 0) {
        for (int i = 0; i < COUNCIL_PERSONAS; i++)
            if (!j.prompts[i])
                abort();
        council_job_clear(&j);
    } else if (why[0] == '\0') {
        abort();
    }
}

/* The record dumps to JSON that loads back to the same dump. */
static void check_record(const council_user *u)
{
    char *d = council_user_dump(u);
    if (!d)
        abort();
    council_user *v = malloc(sizeof *v);
    if (!v)
        abort();
    char why[256] = "";
    if (council_user_load(d, v, why, sizeof why) != 0) {
        fprintf(stderr, "reload: %s\n%s\n", why, d);
        abort();
    }
    char *d2 = council_user_dump(v);
    fuzz_same_text("dump", d, d2);
    free(d2);
    free(d);
    free(v);
}

/* A number of milliseconds, bounded so that the harness's own sums stay
 * in range (about +-31 years). */
static int64_t num(const char *s)
{
    long long v = atoll(s);
    const long long lim = 1000000000000LL;
    return v > lim ? lim : v < -lim ? -lim : v;
}

static const char *or_null(const char *s)
{
    return s && s[0] ? s : NULL;
}

/* Ids as the shell lets them through (vigil_json_id, topic levels):
 * 1..64 of A-Z a-z 0-9 . _ - */
static bool id_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > COUNCIL_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]))
            return false;
    return true;
}

/* A string field as the shell passes it: absent (NULL) or a valid id. */
static const char *id_or_null(const char *s)
{
    s = or_null(s);
    return s && id_ok(s) ? s : NULL;
}

static void command(council_user *u, const council_config *c, char *cmd, int64_t *now, int k)
{
    char verb[16] = "";
    char *rest = fuzz_verb(cmd, verb, now, true); /* +ms within 10 days */
    if (!rest)
        return;
    char *f[8];
    fuzz_fields(rest, f, 8);
    char id[32], why[256] = "";
    snprintf(id, sizeof id, "in%d", k);
    council_rc rc = COUNCIL_OK;
    if (!strcmp(verb, "start") || !strcmp(verb, "pause") || !strcmp(verb, "resume")
        || !strcmp(verb, "end")) {
        council_control in = { COUNCIL_CTL_START, id_or_null(f[0]), id_or_null(f[1]),
                               f[2] && f[2][0] == '1' };
        in.action = verb[0] == 's' ? COUNCIL_CTL_START
                    : verb[0] == 'p' ? COUNCIL_CTL_PAUSE
                    : verb[0] == 'r' ? COUNCIL_CTL_RESUME : COUNCIL_CTL_END;
        char sid[COUNCIL_ID_MAX + 1];
        council_start_session_id(&in, u->user, id, sid, sizeof sid);
        rc = council_on_control(u, c, &in, id, *now, &SINK, why, sizeof why);
    } else if (!strcmp(verb, "answer")) {
        const char *sess = f[0] && f[0][0] == '@' ? u->s.id : f[0] ? f[0] : "";
        if (!id_ok(sess))
            return;
        rc = council_on_answer(u, c, sess, f[1] ? f[1] : "", f[2] ? f[2] : "", id, *now, &SINK,
                               why, sizeof why);
    } else if (!strcmp(verb, "message")) {
        if (!id_ok(f[0]))
            return;
        rc = council_on_message(u, c, f[0] ? f[0] : "", f[1] ? f[1] : "", *now);
    } else if (!strcmp(verb, "presence")) {
        if (!id_ok(f[0]))
            return;
        int p = f[1] ? atoi(f[1]) : 1;
        int64_t la = f[2] ? *now - num(f[2]) : *now;
        if (la < 0)
            return; /* the shell's reader refuses a negative last_activity */
        (void)council_on_presence(u, f[0] ? f[0] : "", (council_presence)(p & 3), *now, la,
                                  *now);
        rc = COUNCIL_OK;
    } else if (!strcmp(verb, "timer")) {
        int64_t due = f[1] ? *now - num(f[1]) : *now;
        rc = council_on_timer(u, c, f[0] ? f[0] : "", due, *now, &SINK);
    } else if (!strcmp(verb, "outcome")) {
        /* f[0] the job (empty: the current one), f[1] Polaris, f[2] Aurora,
         * f[3] Sol, f[4] an A2A response body */
        council_outcome o = { 0 };
        char job[COUNCIL_JOB_MAX + 1];
        snprintf(job, sizeof job, "%s", f[0] && f[0][0] ? f[0] : u->s.job);
        o.job = job;
        o.session = u->s.id;
        o.loop = u->s.loop;
        const char *said[COUNCIL_PERSONAS] = { f[1], f[2], "Evidence is thin.", f[3] };
        for (int i = 0; i < COUNCIL_PERSONAS; i++) {
            /* "!" (or nothing): that persona's call failed */
            o.answers[i] = said[i] && said[i][0] != '!' ? said[i] : NULL;
            o.errors[i] = o.answers[i] ? NULL : "timeout";
        }
        council_a2a_reply r;
        if (f[4]) {
            (void)council_a2a_parse(f[4], strlen(f[4]), job, &r);
            o.a2a_tried = true;
            o.a2a = &r;
        }
        rc = council_on_outcome(u, c, &o, *now, &SINK);
    } else {
        return;
    }
    bool says_why = strcmp(verb, "answer") == 0 || strchr("spre", verb[0]) != NULL;
    if (rc == COUNCIL_REFUSED && says_why && why[0] == '\0')
        abort(); /* a refusal says why */
    check_record(u);
}

static void fuzz_session(fuzz_strs *ps, int64_t now)
{
    council_config c;
    council_config_init(&c);
    c.llm_enabled = true;
    c.a2a_enabled = ps->p[0][1] != 'n';
    c.auto_start = ps->p[0][1] == 'a';
    council_user *u = malloc(sizeof *u);
    if (!u)
        abort();
    const char *rec = ps->n > 1 ? ps->p[1] : "";
    if (rec[0]) {
        char why[256] = "";
        if (council_user_load(rec, u, why, sizeof why) != 0) {
            if (why[0] == '\0')
                abort();
            free(u);
            return;
        }
    } else {
        council_user_init(u, "alice");
    }
    check_record(u);
    for (int i = 2; i < ps->n; i++)
        command(u, &c, ps->p[i], &now, i);
    char *ctx = council_sense_context(u, &c, now);
    if (ctx) {
        char *p = council_prompt(COUNCIL_SOL, ctx);
        free(p);
        free(ctx);
    }
    json_object *o = council_state_payload(u, now);
    json_object_put(o);
    o = council_session_record(u);
    json_object_put(o);
    (void)council_user_available(u, &c, now);
    free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 65536)
        return 0;
    fuzz_strs ps;
    fuzz_split_strs(data, size, MAX_PARTS, &ps);
    const char *a = ps.n > 1 ? ps.p[1] : "";
    switch (ps.p[0][0]) {
    case 'R':
        fuzz_route(a);
        break;
    case 'A':
        fuzz_a2a(a, strlen(a), ps.n > 2 ? ps.p[2] : "j");
        break;
    case 'J':
        fuzz_job(a, strlen(a));
        break;
    default:
        fuzz_session(&ps, T0);
        break;
    }
    fuzz_strs_free(&ps);
    return 0;
}
