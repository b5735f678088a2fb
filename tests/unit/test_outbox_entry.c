/* test_outbox_entry.c - pure parts of the outbox: decoding a stored entry
 * (deadletter.h) and finding our TCP socket to the broker by its peer port
 * (libshared/src/tcp_quickack.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../libshared/src/tcp_quickack.h"
#include "vigil/deadletter.h"

static bool decode(const char *raw, size_t len, char **topic, const char **payload, size_t *plen,
                   bool *retain)
{
    return vigil_outbox_entry_decode(raw, len, topic, payload, plen, retain);
}

static void test_decode_valid(void **state)
{
    (void)state;
    char *topic;
    const char *payload;
    size_t plen;
    bool retain;
    const char raw[] = "1room/a/state\n{\"x\":1}";
    assert_true(decode(raw, sizeof raw - 1, &topic, &payload, &plen, &retain));
    assert_string_equal(topic, "room/a/state");
    assert_int_equal(plen, 7);
    assert_memory_equal(payload, "{\"x\":1}", 7);
    assert_true(retain);
    free(topic);
    /* an empty payload is publishable; a newline inside the payload is kept */
    const char raw2[] = "0t\n";
    assert_true(decode(raw2, sizeof raw2 - 1, &topic, &payload, &plen, &retain));
    assert_string_equal(topic, "t");
    assert_int_equal(plen, 0);
    assert_false(retain);
    free(topic);
    const char raw3[] = "0t\na\nb";
    assert_true(decode(raw3, sizeof raw3 - 1, &topic, &payload, &plen, &retain));
    assert_int_equal(plen, 3);
    free(topic);
}

static void test_decode_refuses_what_cannot_be_published(void **state)
{
    (void)state;
    const char *bad[] = {
        "",                 /* empty */
        "0",                /* too short */
        "2topic\npayload",  /* retain flag not 0/1 */
        "0topic-no-newline",
        "0\npayload",       /* empty topic */
        "0a/+/b\npayload",  /* wildcards are not topic names */
        "0a/#\npayload",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *topic = (char *)1;
        const char *payload;
        size_t plen;
        bool retain;
        assert_false(decode(bad[i], strlen(bad[i]), &topic, &payload, &plen, &retain));
        assert_null(topic);
    }
    const char nul[] = "0a\0b\npayload";
    char *topic;
    const char *payload;
    size_t plen;
    bool retain;
    assert_false(decode(nul, sizeof nul - 1, &topic, &payload, &plen, &retain));
}

static void test_deadletter_key(void **state)
{
    (void)state;
    char key[64];
    assert_int_equal(vigil_deadletter_key("vigil:", "dormancy-monitor", key, sizeof key), 0);
    assert_string_equal(key, "vigil:dormancy-monitor:deadletter");
    char small[8];
    assert_int_equal(vigil_deadletter_key("vigil:", "dormancy-monitor", small, sizeof small), -1);
}

/* The client side of a loopback connection is found by the listener's port;
 * the server side (peer = the client's ephemeral port) is not. */
static void test_find_peer_fds(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 1), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    int port = ntohs(a.sin_port);

    int fds[4];
    assert_int_equal(vigil_tcp_find_peer_fds(port, fds, 4), 0); /* a listener has no peer */
    int cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
    int sfd = accept(lfd, NULL, NULL);
    assert_true(sfd >= 0);
    int n = vigil_tcp_find_peer_fds(port, fds, 4);
    assert_int_equal(n, 1);
    assert_int_equal(fds[0], cfd);
    vigil_tcp_quickack(fds, n);
    close(sfd);
    close(cfd);
    close(lfd);
    /* a closed (or reused) descriptor is harmless */
    vigil_tcp_quickack(fds, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_valid),
        cmocka_unit_test(test_decode_refuses_what_cannot_be_published),
        cmocka_unit_test(test_deadletter_key),
        cmocka_unit_test(test_find_peer_fds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
