/* test_topic_prefix.c - VIGIL_TOPIC_PREFIX: validation, applying it to
 * topics and shared subscriptions, stripping it from incoming topics. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "vigil/topic_prefix.h"

static void test_check(void **state)
{
    (void)state;
    char err[200];
    const char *good[] = { "", "tenant-a", "acme/vigil", "a.b_c-9", "x/y/z" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (vigil_topic_prefix_check(good[i], err, sizeof err) != 0)
            fail_msg("refused '%s': %s", good[i], err);
    assert_int_equal(vigil_topic_prefix_check(NULL, err, sizeof err), 0);
    struct { const char *p, *why; } bad[] = {
        { "/lead", "starts with '/'" },   { "trail/", "ends with '/'" },
        { "$SYS", "starts with '$'" },    { "a//b", "empty level" },
        { "a/+/b", "wildcard" },          { "a#", "wildcard" },
        { "sp ace", "character other" },  { "t\xc3\xa9", "character other" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (vigil_topic_prefix_check(bad[i].p, err, sizeof err) != -1)
            fail_msg("accepted '%s'", bad[i].p);
        if (!strstr(err, "VIGIL_TOPIC_PREFIX") || !strstr(err, bad[i].why))
            fail_msg("message for '%s': %s", bad[i].p, err);
    }
    char longp[102];
    memset(longp, 'a', 101);
    longp[101] = '\0';
    assert_int_equal(vigil_topic_prefix_check(longp, err, sizeof err), -1);
    longp[100] = '\0';
    assert_int_equal(vigil_topic_prefix_check(longp, err, sizeof err), 0);
}

static void test_apply(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(vigil_topic_prefix_apply("t1", "room/r/message", out, sizeof out), 17);
    assert_string_equal(out, "t1/room/r/message");
    assert_int_equal(vigil_topic_prefix_apply("", "room/+/message", out, sizeof out), 14);
    assert_string_equal(out, "room/+/message");
    assert_int_equal(vigil_topic_prefix_apply(NULL, "#", out, sizeof out), 1);
    assert_string_equal(out, "#");
    vigil_topic_prefix_apply("a/b", "room/+/message", out, sizeof out);
    assert_string_equal(out, "a/b/room/+/message");
    vigil_topic_prefix_apply("t1", "$share/grp/room/+/message", out, sizeof out);
    assert_string_equal(out, "$share/grp/t1/room/+/message");
    /* does not fit: -1, never truncated */
    char small[8];
    assert_int_equal(vigil_topic_prefix_apply("t1", "room/r", small, sizeof small), -1);
    assert_int_equal(vigil_topic_prefix_apply("t1", "room", small, sizeof small), 7);
}

static void test_strip(void **state)
{
    (void)state;
    assert_string_equal(vigil_topic_prefix_strip("t1", "t1/room/r/message"), "room/r/message");
    assert_string_equal(vigil_topic_prefix_strip("a/b", "a/b/sys/x"), "sys/x");
    assert_null(vigil_topic_prefix_strip("t1", "t10/room/r"));
    assert_null(vigil_topic_prefix_strip("t1", "room/r/message"));
    assert_null(vigil_topic_prefix_strip("t1", "t1"));
    assert_string_equal(vigil_topic_prefix_strip("", "room/r"), "room/r");
    assert_string_equal(vigil_topic_prefix_strip(NULL, "room/r"), "room/r");
}

/* Client ids: unchanged without a prefix (existing sessions are kept),
 * under the prefix with one, so two prefixes never share an id. */
static void test_client_id(void **state)
{
    (void)state;
    char id[VIGIL_CLIENT_ID_MAX];
    assert_int_equal(vigil_client_id("", "dormancy-monitor", 0, id, sizeof id), 24);
    assert_string_equal(id, "vigil-dormancy-monitor-0");
    assert_int_equal(vigil_client_id(NULL, "chat-router", 3, id, sizeof id), 19);
    assert_string_equal(id, "vigil-chat-router-3");
    vigil_client_id("tenant-a/prod", "chat-router", 1, id, sizeof id);
    assert_string_equal(id, "tenant-a/prod/vigil-chat-router-1");
    char longest[VIGIL_TOPIC_PREFIX_MAX + 1];
    memset(longest, 'p', VIGIL_TOPIC_PREFIX_MAX);
    longest[VIGIL_TOPIC_PREFIX_MAX] = '\0';
    assert_true(vigil_client_id(longest, "presence-gateway", 99999, id, sizeof id) > 0);
    char small[8];
    assert_int_equal(vigil_client_id("", "chat-router", 0, small, sizeof small), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_client_id),
    };
    return cmocka_run_group_tests_name("topic_prefix", tests, NULL, NULL);
}
