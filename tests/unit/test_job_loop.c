/* test_job_loop.c - a job worker's loop (vigil/job_loop.h) with test hooks
 * against a real redis-server and a real (disabled: no URL) LLM client:
 * jobs are parsed, submitted, committed once their call is over and only
 * then acknowledged; an unreadable job is counted and acknowledged; a
 * commit that gave up leaves the job pending, and after a restart the
 * same consumer finds it again and, when the dedupe record already holds
 * it, acknowledges it without a second call; duplicate and rejected
 * commits are acknowledged; a set stop flag ends the run; a job held
 * past several leases keeps its lease while the loop turns (no second
 * consumer takes it over), is taken over once the loop stops turning, and
 * a renewal never takes back a job another consumer took over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "fixture_redis.h"
#include "vigil/clock.h"
#include "vigil/job_loop.h"
#include "vigil/jobs.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/redis_raw.h"

#define STREAM "t:jobs"

typedef struct tslot {
    char key[16], job[16];
    bool done;
    int status;
} tslot;

typedef struct owner {
    vigil_job_loop *loop;
    vigil_decide_result result; /* what every commit returns */
    int submitted, committed, cleared;
    int done, duplicate, rejected, deferred, invalid, invalid_with_slot;
    int last_status;
    bool hold; /* the slots' work is not over while set (a slow LLM call) */
} owner;

static atomic_int stop; /* the service's stop flag */

/* A job is "<key> <job>"; anything else is unreadable. */
static int parse(void *o, void *sarg, const char *payload, size_t len, char *why, size_t whylen)
{
    tslot *s = sarg;
    if (sscanf(payload, "%15s %15s", s->key, s->job) != 2) {
        snprintf(why, whylen, "not \"key job\"");
        return -1;
    }
    return 0;
}

static void ids(const void *sarg, const char **key, const char **job)
{
    const tslot *s = sarg;
    *key = s->key;
    *job = s->job;
}

static void on_done(const vigil_llm_result *res, void *user)
{
    tslot *s = user;
    s->done = true;
    s->status = (int)res->status;
}

static void submit(void *oarg, void *sarg)
{
    owner *o = oarg;
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.user = "hello";
    assert_int_equal(vigil_llm_submit(vigil_job_loop_llm(o->loop), &req, sarg), 0);
    o->submitted++;
}

static bool ready(void *o, void *sarg) { return ((tslot *)sarg)->done && !((owner *)o)->hold; }

static vigil_decide_result commit(void *oarg, void *sarg)
{
    owner *o = oarg;
    o->committed++;
    o->last_status = ((tslot *)sarg)->status;
    return o->result;
}

static owner *current;

static void clear(void *sarg)
{
    if (current)
        current->cleared++;
}

static void count(const void *s, const char *outcome)
{
    owner *o = current;
    if (strcmp(outcome, "done") == 0)
        o->done++;
    else if (strcmp(outcome, "duplicate") == 0)
        o->duplicate++;
    else if (strcmp(outcome, "rejected") == 0)
        o->rejected++;
    else if (strcmp(outcome, "deferred") == 0)
        o->deferred++;
    else if (strcmp(outcome, "invalid") == 0)
        s ? o->invalid_with_slot++ : o->invalid++;
}

static const vigil_job_loop_ops OPS = {
    .slot_size = sizeof(tslot),
    .parse = parse,
    .ids = ids,
    .submit = submit,
    .ready = ready,
    .commit = commit,
    .clear = clear,
    .count = count,
    .on_done = on_done,
    .done_outcome = "done",
    .resumed_metric = "test_resumed_total",
    .resumed_help = "resumed",
};

static vigil_llm_config llm_cfg;

static vigil_job_loop *loop_new_lease(owner *o, int cap, const vigil_job_loop_ops *ops,
                                      int64_t lease_ms)
{
    vigil_llm_config_init(&llm_cfg); /* no URL: every call ends "disabled" */
    vigil_job_loop_config c = {.redis = vt_conn,
                               .stop = &stop,
                               .llm = &llm_cfg,
                               .stream = STREAM,
                               .group = "g",
                               .consumer = "c1",
                               .lease_ms = lease_ms,
                               .ids_prefix = "t:ids:",
                               .cap = cap,
                               .block_ms = 10};
    current = o;
    o->loop = vigil_job_loop_new(ops, o, &c);
    assert_non_null(o->loop);
    return o->loop;
}

static vigil_job_loop *loop_new_ops(owner *o, int cap, const vigil_job_loop_ops *ops)
{
    return loop_new_lease(o, cap, ops, 60000);
}

static vigil_job_loop *loop_new(owner *o, int cap) { return loop_new_ops(o, cap, &OPS); }

static void add(const char *payload)
{
    redisReply *rep = vigil_redis_command(vt_conn, "XADD %s * m %s", STREAM, payload);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    vigil_redis_reply_free(rep);
}

/* An integer reply, or the first element of an array reply (XPENDING's
 * count). */
static long long int_of(redisReply *rep)
{
    assert_non_null(rep);
    long long n = rep->type == REDIS_REPLY_INTEGER ? rep->integer
                  : rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
                          rep->element[0]->type == REDIS_REPLY_INTEGER
                      ? rep->element[0]->integer
                      : -1;
    vigil_redis_reply_free(rep);
    return n;
}

static long long xlen(void) { return int_of(vigil_redis_command(vt_conn, "XLEN %s", STREAM)); }
static long long pending(void)
{
    return int_of(vigil_redis_command(vt_conn, "XPENDING %s g", STREAM));
}

/* Turns until the owner saw n outcomes (bounded: a hang fails). */
static void turn_until(owner *o, int n)
{
    for (int i = 0; i < 500; i++) {
        if (o->done + o->duplicate + o->rejected + o->deferred + o->invalid >= n)
            return;
        vigil_job_loop_turn(o->loop);
    }
    fail_msg("the loop did not finish %d jobs", n);
}

static void reset(void)
{
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    atomic_store(&stop, 0);
}

/* Two readable jobs and one unreadable: both called and committed, the
 * third counted invalid; all three acknowledged and deleted. More jobs
 * than slots: the rest wait for a free slot. */
static void commits_then_acknowledges(void **state)
{
    (void)state;
    reset();
    add("r1 j1");
    add("bad");
    add("r2 j2");
    add("r3 j3");
    owner o = {.result = VIGIL_DECIDE_DONE};
    vigil_job_loop *l = loop_new(&o, 2);
    turn_until(&o, 4);
    assert_int_equal(o.submitted, 3);
    assert_int_equal(o.committed, 3);
    assert_int_equal(o.done, 3);
    assert_int_equal(o.invalid, 1);
    assert_int_equal(o.invalid_with_slot, 0);
    assert_int_equal(o.last_status, VIGIL_LLM_DISABLED);
    assert_int_equal(vigil_job_loop_used(l), 0);
    assert_int_equal(xlen(), 0);
    assert_int_equal(pending(), 0);
    vigil_job_loop_free(l);
    assert_true(o.cleared >= 3); /* every released slot, then every slot at free */
    current = NULL;
}

/* One job "r1 j1" whose commit gives up (shutting down with Redis away):
 * counted deferred, left pending for this consumer. */
static void defer_one_job(void)
{
    reset();
    add("r1 j1");
    owner o = {.result = VIGIL_DECIDE_GAVE_UP};
    vigil_job_loop *l = loop_new(&o, 4);
    turn_until(&o, 1);
    assert_int_equal(o.deferred, 1);
    assert_int_equal(xlen(), 1);
    assert_int_equal(pending(), 1);
    vigil_job_loop_free(l);
}

/* The restarted consumer takes its pending job again first: found in the
 * dedupe record, it is acknowledged without a call; not found, it is
 * called again and committed. */
static void restart_after_gave_up(void **state)
{
    (void)state;
    for (int decided = 1; decided >= 0; decided--) {
        defer_one_job();
        if (decided)
            assert_true(vt_redis_exec(vt_srv, "ZADD t:ids:r1 1 j1"));
        owner o = {.result = VIGIL_DECIDE_DONE};
        vigil_job_loop *l = loop_new(&o, 4);
        turn_until(&o, 1);
        assert_int_equal(o.duplicate, decided);
        assert_int_equal(o.submitted, !decided);
        assert_int_equal(o.done, !decided);
        assert_int_equal(xlen(), 0);
        assert_int_equal(pending(), 0);
        vigil_job_loop_free(l);
    }
    current = NULL;
}

/* Without an ids hook (floor-control's loop: its commit finds out itself
 * whether the work is still wanted) a job taken again after a restart is
 * worked again, whatever a dedupe record holds. */
static void without_ids_a_job_taken_again_is_worked_again(void **state)
{
    (void)state;
    defer_one_job();
    assert_true(vt_redis_exec(vt_srv, "ZADD t:ids:r1 1 j1"));
    vigil_job_loop_ops ops = OPS;
    ops.ids = NULL;
    owner o = {.result = VIGIL_DECIDE_DONE};
    vigil_job_loop *l = loop_new_ops(&o, 4, &ops);
    turn_until(&o, 1);
    assert_int_equal(o.duplicate, 0);
    assert_int_equal(o.submitted, 1);
    assert_int_equal(o.done, 1);
    assert_int_equal(pending(), 0);
    vigil_job_loop_free(l);
    current = NULL;
}

static void duplicate_and_rejected_are_acknowledged(void **state)
{
    (void)state;
    vigil_decide_result results[] = {VIGIL_DECIDE_DUPLICATE, VIGIL_DECIDE_REJECTED};
    for (int i = 0; i < 2; i++) {
        reset();
        add("r1 j1");
        owner o = {.result = results[i]};
        vigil_job_loop *l = loop_new(&o, 4);
        turn_until(&o, 1);
        assert_int_equal(i == 0 ? o.duplicate : o.rejected, 1);
        assert_int_equal(xlen(), 0);
        assert_int_equal(pending(), 0);
        vigil_job_loop_free(l);
    }
    current = NULL;
}

/* With the stop flag set, run returns at once without taking a job. */
static void stop_ends_the_run(void **state)
{
    (void)state;
    reset();
    add("r1 j1");
    owner o = {.result = VIGIL_DECIDE_DONE};
    vigil_job_loop *l = loop_new(&o, 4);
    atomic_store(&stop, 1);
    assert_true(vigil_job_loop_stopping(l));
    vigil_job_loop_run(l);
    assert_int_equal(o.submitted, 0);
    assert_int_equal(xlen(), 1);
    vigil_job_loop_free(l);
    current = NULL;
}

#define LEASE_MS 600

/* Consumer c2's take-over of jobs idle past LEASE_MS (another replica's
 * job consumer): how many it took. */
static int c2_takes(void)
{
    vigil_job_entries es = {0};
    char cursor[48] = "0-0";
    assert_int_equal(vigil_jobs_autoclaim(vt_conn, STREAM, "g", "c2", LEASE_MS, 10, cursor,
                                          sizeof cursor, &es),
                     0);
    int n = es.n;
    vigil_job_entries_free(&es);
    return n;
}

/* The consumer the job is pending on ("" when none). */
static void owner_of(char *out, size_t len)
{
    redisReply *rep = vigil_redis_command(vt_conn, "XPENDING %s g - + 10", STREAM);
    assert_non_null(rep);
    snprintf(out, len, "%s",
             rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 ? rep->element[0]->element[1]->str
                                                                 : "");
    vigil_redis_reply_free(rep);
}

/* The id of the one pending entry. */
static void pending_entry(char *out, size_t len)
{
    redisReply *rep = vigil_redis_command(vt_conn, "XPENDING %s g - + 10", STREAM);
    assert_non_null(rep);
    assert_true(rep->type == REDIS_REPLY_ARRAY && rep->elements == 1);
    snprintf(out, len, "%s", rep->element[0]->element[0]->str);
    vigil_redis_reply_free(rep);
}

/* Turns the loop (or only sleeps, when !turning) for ms while c2 tries
 * to take the job over every 25 ms; returns what c2 took. */
static int turn_while_c2_tries(vigil_job_loop *l, int64_t ms, bool turning)
{
    int taken = 0;
    for (int64_t end = vigil_mono_ms() + ms; vigil_mono_ms() < end && taken == 0;) {
        if (turning)
            vigil_job_loop_turn(l);
        taken += c2_takes();
        vigil_sleep_ms(25, NULL);
    }
    return taken;
}

/* A job whose work takes several leases (a slow LLM call) is not taken
 * over by another consumer while the loop turns: its lease is renewed.
 * Once the loop stops turning (the worker died) it is taken over past
 * the lease as before. */
static void a_job_in_flight_keeps_its_lease(void **state)
{
    (void)state;
    reset();
    add("r1 j1");
    owner o = {.result = VIGIL_DECIDE_DONE, .hold = true};
    vigil_job_loop *l = loop_new_lease(&o, 4, &OPS, LEASE_MS);
    vigil_job_loop_turn(l);
    assert_int_equal(vigil_job_loop_used(l), 1);
    assert_int_equal(turn_while_c2_tries(l, 5 * LEASE_MS, true), 0);
    char who[64];
    owner_of(who, sizeof who);
    assert_string_equal(who, "c1");
    assert_int_equal(o.committed, 0);
    /* the worker stops turning: taken over once idle past the lease */
    assert_int_equal(turn_while_c2_tries(l, 4 * LEASE_MS, false), 1);
    owner_of(who, sizeof who);
    assert_string_equal(who, "c2");
    /* the loop turns again while c2, live, renews its own: the loop's
     * renewal finds the job c2's and leaves it c2's; its slot still
     * commits (the commit is deduplicated by its input id) */
    char entry[48];
    pending_entry(entry, sizeof entry);
    const char *ids[] = {entry};
    for (int i = 0; i < 6; i++) {
        vigil_job_loop_turn(l);
        bool lost = true;
        assert_int_equal(vigil_jobs_renew(vt_conn, STREAM, "g", "c2", ids, 1, &lost), 0);
        assert_false(lost);
        vigil_sleep_ms(LEASE_MS / 3, NULL);
    }
    owner_of(who, sizeof who);
    assert_string_equal(who, "c2");
    assert_true(vigil_metric_value("vigil_job_leases_lost_total", NULL) == 1.0);
    o.hold = false;
    turn_until(&o, 1);
    assert_int_equal(o.committed, 1);
    assert_int_equal(o.submitted, 1);
    /* acknowledged: no longer pending, neither renewed nor lost */
    assert_int_equal(pending(), 0);
    bool lost = true;
    assert_int_equal(vigil_jobs_renew(vt_conn, STREAM, "g", "c1", ids, 1, &lost), 0);
    assert_false(lost);
    assert_int_equal(pending(), 0);
    vigil_job_loop_free(l);
    current = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(commits_then_acknowledges),
        cmocka_unit_test(restart_after_gave_up),
        cmocka_unit_test(without_ids_a_job_taken_again_is_worked_again),
        cmocka_unit_test(duplicate_and_rejected_are_acknowledged),
        cmocka_unit_test(stop_ends_the_run),
        cmocka_unit_test(a_job_in_flight_keeps_its_lease),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup_conn, vt_redis_group_teardown_conn);
}
