/* test_malloc_tune.c - the GLIBC_TUNABLES value a daemon starts itself
 * again with (malloc_tune.h): the cache size added to what is there, and
 * nothing when the operator named the cache already. The new start itself
 * is checked from outside (tests/integration/test_platform.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vigil/malloc_tune.h"

static void tunables_are(const char *cur, const char *want)
{
    char *v = vigil_malloc_tunables(cur);
    if (!want) {
        assert_null(v);
        return;
    }
    assert_non_null(v);
    assert_string_equal(v, want);
    free(v);
}

static void the_cache_size_is_added_to_what_is_there(void **state)
{
    (void)state;
    char ours[64];
    snprintf(ours, sizeof ours, "glibc.malloc.tcache_count=%d", VIGIL_MALLOC_TCACHE_COUNT);
    tunables_are(NULL, ours);
    tunables_are("", ours);
    char both[128];
    snprintf(both, sizeof both, "glibc.malloc.arena_max=2:%s", ours);
    tunables_are("glibc.malloc.arena_max=2", both);
    /* only the exact name counts, at the start of an item */
    snprintf(both, sizeof both, "glibc.malloc.tcache_count_x=1:%s", ours);
    tunables_are("glibc.malloc.tcache_count_x=1", both);
    snprintf(both, sizeof both, "xglibc.malloc.tcache_count=5:%s", ours);
    tunables_are("xglibc.malloc.tcache_count=5", both);
}

static void a_cache_size_already_named_is_kept(void **state)
{
    (void)state;
    tunables_are("glibc.malloc.tcache_count=7", NULL);
    tunables_are("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=64", NULL);
    tunables_are("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2", NULL);
}

/* A process started again once goes on (and its children, the outbox's
 * publisher process, do not inherit the mark). Run in a child process: a
 * broken check would start this test program again in it, whose run of
 * every test then ends with another status than the one asserted. */
static void a_process_started_again_goes_on(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("VIGIL_MALLOC_TUNED", "1", 1);
        unsetenv("GLIBC_TUNABLES");
        char *argv[] = {"test_malloc_tune", NULL};
        vigil_malloc_tune(argv);
        _exit(getenv("VIGIL_MALLOC_TUNED") == NULL && getenv("GLIBC_TUNABLES") == NULL ? 42 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_cache_size_is_added_to_what_is_there),
        cmocka_unit_test(a_cache_size_already_named_is_kept),
        cmocka_unit_test(a_process_started_again_goes_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
