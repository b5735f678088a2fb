/* test_store_aux.c - the auxiliary operations of a commit (stream log,
 * durable queue and its flush into the outbox, keys, sets), against a real
 * redis-server: they must happen atomically with the state change, in the
 * order added, and not at all on a duplicate or a conflict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_redis.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/redis_raw.h"
#include "vigil/store.h"

#define NOW 1700000000123LL

typedef vt_store_fixture fixture;

static int setup(void **state)
{
    vigil_store_config cfg = { "vigil:", "svc", 0, 0, 0 };
    return vt_store_fixture_setup(state, &cfg);
}

static vigil_commit_result commit(fixture *f, const char *key, int64_t expected, const char *id,
                                  const vigil_effects *fx, int64_t now)
{
    vigil_commit c = { .key = key, .expected_version = expected, .input_id = id, .fx = fx,
                       .now_ms = now };
    int64_t nv = 0;
    char *cur = NULL;
    vigil_commit_result r = vigil_store_commit(f->s, &c, &nv, &cur);
    free(cur);
    return r;
}

static void stream_add_appends_and_bounds_by_count(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    char id[16], val[32];
    for (int i = 0; i < 300; i++) {
        vigil_effects_reset(&fx);
        snprintf(val, sizeof val, "{\"n\":%d}", i);
        assert_int_equal(vigil_fx_stream_add(&fx, "log:general", val, 100, 0), 0);
        snprintf(id, sizeof id, "m%d", i);
        assert_int_equal(commit(f, "general", 0, id, &fx, NOW + i), VIGIL_COMMIT_OK);
    }
    vigil_effects_free(&fx);
    long long n = vt_redis_int(f->r, "XLEN %s", "vigil:svc:log:general");
    /* MAXLEN ~ trims whole macro nodes: at least the bound, never unbounded */
    assert_true(n >= 100 && n < 300);
    redisReply *rep = vigil_redis_command(f->r, "XREVRANGE vigil:svc:log:general + - COUNT 1");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1);
    redisReply *fields = rep->element[0]->element[1];
    assert_string_equal(fields->element[0]->str, "m");
    assert_string_equal(fields->element[1]->str, "{\"n\":299}");
    vigil_redis_reply_free(rep);
}

static void stream_add_trims_by_age(void **state)
{
    fixture *f = *state;
    /* entries written "now" get ids at the server clock; an age bound far in
     * the past keeps them, one reaching past their ids drops them */
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_stream_add(&fx, "log:r", "{\"a\":1}", 0, 0), 0);
    assert_int_equal(commit(f, "r", 0, "a", &fx, NOW), VIGIL_COMMIT_OK);
    assert_int_equal(vt_redis_int(f->r, "XLEN %s", "vigil:svc:log:r"), 1);
    vigil_effects_reset(&fx);
    /* a commit "ten years later" with a one-day age drops the old entry
     * (the new one has a current id, older than now-1day in that future) */
    int64_t future = NOW + 10LL * 365 * 86400 * 1000;
    assert_int_equal(vigil_fx_stream_add(&fx, "log:r", "{\"a\":2}", 0, 86400000), 0);
    assert_int_equal(commit(f, "r", 0, "b", &fx, future), VIGIL_COMMIT_OK);
    vigil_effects_free(&fx);
    /* both entries carry ids of the server's real clock, far older than the
     * bound of that future commit: the exact MINID trim removes both */
    assert_int_equal(vt_redis_int(f->r, "XLEN %s", "vigil:svc:log:r"), 0);
}

/* A log with both bounds: the age goes with every XADD (MINID, exact), the
 * length trim with one append in 16 (with_record: the commit that takes
 * the record to a multiple of 16 versions; without: by the input id's
 * hash), and the stream still ends near its length, its newest entry
 * kept. */
static void both_bounds(fixture *f, bool with_record)
{
    vigil_redis_reply_free(vigil_redis_command(f->r, "CONFIG RESETSTAT"));
    vigil_effects fx;
    vigil_effects_init(&fx);
    char id[16], val[32];
    for (int i = 0; i < 400; i++) {
        vigil_effects_reset(&fx);
        snprintf(val, sizeof val, "{\"n\":%d}", i);
        if (with_record)
            assert_int_equal(vigil_fx_set_state(&fx, val), 0);
        /* the age bound (a day before NOW, in 2023) keeps every entry */
        assert_int_equal(vigil_fx_stream_add(&fx, "log:both", val, 100, 86400000), 0);
        snprintf(id, sizeof id, "b%d", i);
        assert_int_equal(commit(f, "both", with_record ? i : 0, id, &fx, NOW + i),
                         VIGIL_COMMIT_OK);
    }
    vigil_effects_free(&fx);
    long long n = vt_redis_int(f->r, "XLEN %s", "vigil:svc:log:both");
    assert_true(n >= 100 && n < 300);
    long long trims = vt_redis_calls(f->r, "xtrim");
    if (with_record)
        assert_int_equal(trims, 400 / 16);
    else
        assert_true(trims >= 5 && trims <= 60);
    assert_int_equal(vt_redis_calls(f->r, "xadd"), 400);
}

static void stream_add_with_both_bounds_trims_length_every_16th_version(void **state)
{
    both_bounds(*state, true);
}

static void stream_add_with_both_bounds_and_no_record_trims_by_id(void **state)
{
    both_bounds(*state, false);
}

/* Counts the occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* A job stream past its cap, nothing finished: every job added is either
 * still in the stream or was trimmed, and vigil_stream_trimmed_total
 * {stream="jobs"} counts exactly the trimmed ones (a log trimmed in the
 * same commits counts nothing); the first trim is said by one warning
 * naming the stream, its key, the cap and how many were dropped, and the
 * later ones within the minute by none. */
static void job_add_past_its_cap_counts_and_says_the_trim(void **state)
{
    fixture *f = *state;
    vigil_metrics_reset();
    vigil_effects fx;
    vigil_effects_init(&fx);
    char id[16], val[32];
    fflush(stderr);
    FILE *log = tmpfile();
    assert_non_null(log);
    int saved = dup(STDERR_FILENO);
    dup2(fileno(log), STDERR_FILENO);
    vigil_log_init("test_store_aux", "test", VIGIL_LOG_WARN); /* the fixture keeps errors only */
    for (int i = 0; i < 300; i++) {
        vigil_effects_reset(&fx);
        snprintf(val, sizeof val, "{\"n\":%d}", i);
        /* the log first: the trim report names the job add by its place */
        assert_int_equal(vigil_fx_stream_add(&fx, "log:k", val, 10, 0), 0);
        assert_int_equal(vigil_fx_job_add(&fx, "jobs:0", "jobs", val, 10), 0);
        snprintf(id, sizeof id, "j%d", i);
        assert_int_equal(commit(f, "k", 0, id, &fx, NOW + i), VIGIL_COMMIT_OK);
    }
    vigil_effects_free(&fx);
    vigil_log_init("test_store_aux", "test", VIGIL_LOG_ERROR);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    static char text[8192];
    rewind(log);
    text[fread(text, 1, sizeof text - 1, log)] = '\0';
    fclose(log);

    long long left = vt_redis_int(f->r, "XLEN %s", "vigil:svc:jobs:0");
    assert_true(left >= 10 && left < 300); /* MAXLEN ~: whole macro nodes */
    assert_true(vt_redis_int(f->r, "XLEN %s", "vigil:svc:log:k") < 300);
    assert_true(vigil_metric_value("vigil_stream_trimmed_total", "stream=\"jobs\"") == 300 - left);
    char *metrics = vigil_metrics_render();
    assert_non_null(metrics);
    assert_int_equal(count_of(metrics, "vigil_stream_trimmed_total{"), 1); /* no series for the log */
    free(metrics);
    assert_int_equal(count_of(text, "job stream at its cap"), 1);
    assert_non_null(strstr(text, "\"stream\":\"jobs\""));
    assert_non_null(strstr(text, "\"key\":\"vigil:svc:jobs:0\""));
    assert_non_null(strstr(text, "\"cap\":\"10\""));
    assert_non_null(strstr(text, "\"dropped\":\""));
}

static void queue_push_then_flush_moves_entries_before_outputs(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_queue_push(&fx, "queue:r", "persona/a/notify", "{\"n\":1}", false), 0);
    assert_int_equal(vigil_fx_queue_push(&fx, "queue:r", "persona/b/notify", "{\"n\":2}", true), 0);
    assert_int_equal(commit(f, "r", 0, "p1", &fx, NOW), VIGIL_COMMIT_OK);
    assert_int_equal(vt_redis_int(f->r, "LLEN %s", "vigil:svc:queue:r"), 2);
    assert_int_equal(vt_redis_int(f->r, "LLEN %s", "vigil:svc:outbox:0"), 0);

    vigil_effects_reset(&fx);
    assert_int_equal(vigil_fx_publish(&fx, "room/r/message", "{\"resumed\":true}", false), 0);
    assert_int_equal(vigil_fx_queue_flush(&fx, "queue:r"), 0);
    assert_int_equal(commit(f, "r", 0, "resume", &fx, NOW + 1), VIGIL_COMMIT_OK);
    vigil_effects_free(&fx);
    assert_int_equal(vt_redis_int(f->r, "EXISTS %s", "vigil:svc:queue:r"), 0);

    vigil_outmsg out[8];
    int n = vigil_store_outbox_peek(f->s, 8, out);
    assert_int_equal(n, 3);
    assert_string_equal(out[0].topic, "persona/a/notify");
    assert_string_equal(out[0].payload, "{\"n\":1}");
    assert_false(out[0].retain);
    assert_string_equal(out[1].topic, "persona/b/notify");
    assert_true(out[1].retain);
    assert_string_equal(out[2].topic, "room/r/message");
    vigil_outbox_entries_free(out, n);
}

static void keys_and_sets(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_key_set(&fx, "paused-all", "1"), 0);
    assert_int_equal(vigil_fx_set_add(&fx, "rooms", "general"), 0);
    assert_int_equal(vigil_fx_set_add(&fx, "rooms", "random"), 0);
    assert_int_equal(commit(f, "general", 0, "k1", &fx, NOW), VIGIL_COMMIT_OK);
    assert_int_equal(vt_redis_int(f->r, "SCARD %s", "vigil:svc:rooms"), 2);
    redisReply *rep = vigil_redis_command(f->r, "GET vigil:svc:paused-all");
    assert_string_equal(rep->str, "1");
    vigil_redis_reply_free(rep);

    vigil_effects_reset(&fx);
    assert_int_equal(vigil_fx_key_set(&fx, "paused-all", NULL), 0);
    assert_int_equal(vigil_fx_set_remove(&fx, "rooms", "random"), 0);
    assert_int_equal(vigil_fx_key_delete(&fx, "log:general"), 0);
    assert_int_equal(commit(f, "general", 0, "k2", &fx, NOW), VIGIL_COMMIT_OK);
    vigil_effects_free(&fx);
    assert_int_equal(vt_redis_int(f->r, "EXISTS %s", "vigil:svc:paused-all"), 0);
    assert_int_equal(vt_redis_int(f->r, "SCARD %s", "vigil:svc:rooms"), 1);
}

static void nothing_happens_on_duplicate_or_conflict(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_set_state(&fx, "{\"v\":1}"), 0);
    assert_int_equal(vigil_fx_stream_add(&fx, "log:x", "{}", 0, 0), 0);
    assert_int_equal(commit(f, "x", 0, "once", &fx, NOW), VIGIL_COMMIT_OK);
    /* the same input again: duplicate, no second log entry */
    assert_int_equal(commit(f, "x", 1, "once", &fx, NOW), VIGIL_COMMIT_DUPLICATE);
    /* a stale version: conflict, no log entry */
    assert_int_equal(commit(f, "x", 0, "other", &fx, NOW), VIGIL_COMMIT_CONFLICT);
    vigil_effects_free(&fx);
    assert_int_equal(vt_redis_int(f->r, "XLEN %s", "vigil:svc:log:x"), 1);
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_stream_add(&fx, "", "{}", 0, 0), -1);
    assert_int_equal(vigil_fx_stream_add(&fx, "bad name", "{}", 0, 0), -1);
    assert_int_equal(vigil_fx_stream_add(&fx, "log:a", NULL, 0, 0), -1);
    assert_int_equal(vigil_fx_stream_add(&fx, "log:a", "{}", -1, 0), -1);
    assert_int_equal(vigil_fx_job_add(&fx, "jobs", "", "{}", 10), -1);
    assert_int_equal(vigil_fx_job_add(&fx, "jobs", "a\"b", "{}", 10), -1);
    assert_int_equal(vigil_fx_job_add(&fx, "jobs", "jobs", "{}", -1), -1);
    assert_int_equal(vigil_fx_queue_push(&fx, "q", "a\nb", "{}", false), -1);
    assert_int_equal(vigil_fx_set_add(&fx, "s", NULL), -1);
    assert_int_equal(fx.n_aux, 0);
    vigil_effects_free(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(stream_add_appends_and_bounds_by_count, setup, vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(stream_add_trims_by_age, setup, vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(stream_add_with_both_bounds_trims_length_every_16th_version,
                                        setup, vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(stream_add_with_both_bounds_and_no_record_trims_by_id,
                                        setup, vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(job_add_past_its_cap_counts_and_says_the_trim, setup,
                                        vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(queue_push_then_flush_moves_entries_before_outputs, setup,
                                        vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(keys_and_sets, setup, vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(nothing_happens_on_duplicate_or_conflict, setup, vt_store_fixture_teardown),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup, vt_redis_group_teardown);
}
