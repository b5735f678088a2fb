/* test_oom.c - out of memory never acknowledges: the retry bound and the
 * exit that leaves without returning to the MQTT library (exit status 3,
 * from a child process). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>
#include <unistd.h>

#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/oom.h"
#include "vigil/runtime.h"

static void test_wait_bound(void **state)
{
    (void)state;
    assert_true(vigil_oom_wait(0, "test"));
    assert_false(vigil_oom_wait(VIGIL_OOM_ATTEMPTS - 1, "test"));
}

static void test_exit_unacknowledged_leaves_with_3(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        vigil_exit_unacknowledged("test exit", "room/r/message");
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 3);
}

/* The reason is distinct and has a name, but is never a refusal. */
static void test_reason_and_route_code(void **state)
{
    (void)state;
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_NO_MEMORY), "out_of_memory");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_STORED_DATA), "bad_stored_data");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_TOO_MANY_KEYS), "too_many_keys");
    assert_true(VIGIL_ROUTE_OOM < 0 && VIGIL_ROUTE_OOM != VIGIL_ROUTE_RETRY);
}

int main(void)
{
    vigil_log_init("test_oom", "test", VIGIL_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_bound),
        cmocka_unit_test(test_exit_unacknowledged_leaves_with_3),
        cmocka_unit_test(test_reason_and_route_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
