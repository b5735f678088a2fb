/* test_mqtt_wire.c - the MQTT 5 packets of the outbox's own connection
 * (libshared/src/mqtt_wire.h), byte for byte against the specification's
 * layout, and the readers of the broker's bytes against cut-short and
 * malformed input. Pure: no broker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../libshared/src/mqtt_wire.h"

static void test_varint_boundaries(void **state)
{
    (void)state;
    static const struct {
        size_t v;
        size_t len;
        unsigned char bytes[4];
    } cases[] = {
        { 0, 1, { 0x00 } },
        { 127, 1, { 0x7F } },
        { 128, 2, { 0x80, 0x01 } },
        { 16383, 2, { 0xFF, 0x7F } },
        { 16384, 3, { 0x80, 0x80, 0x01 } },
        { 2097151, 3, { 0xFF, 0xFF, 0x7F } },
        { 2097152, 4, { 0x80, 0x80, 0x80, 0x01 } },
        { VIGIL_MQTT_VARINT_MAX, 4, { 0xFF, 0xFF, 0xFF, 0x7F } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char b[4] = { 0 };
        assert_int_equal(vigil_mqtt_varint_len(cases[i].v), cases[i].len);
        assert_int_equal(vigil_mqtt_varint_put(b, cases[i].v), cases[i].len);
        assert_memory_equal(b, cases[i].bytes, cases[i].len);
        size_t back = 99;
        assert_int_equal(vigil_mqtt_varint_get(b, cases[i].len, &back), (int)cases[i].len);
        assert_int_equal(back, cases[i].v);
        /* one byte short: more is needed, not a value */
        assert_int_equal(vigil_mqtt_varint_get(b, cases[i].len - 1, &back), 0);
    }
    static const unsigned char five[] = { 0x80, 0x80, 0x80, 0x80, 0x01 };
    size_t v;
    assert_int_equal(vigil_mqtt_varint_get(five, sizeof five, &v), -1);
}

static void test_topic_names(void **state)
{
    (void)state;
    assert_true(vigil_mqtt_topic_name_ok("room/r1/message", 15));
    assert_true(vigil_mqtt_topic_name_ok("p\xc3\xa9rsona", 8)); /* UTF-8 */
    assert_false(vigil_mqtt_topic_name_ok("", 0));
    assert_false(vigil_mqtt_topic_name_ok("a/+/b", 5));
    assert_false(vigil_mqtt_topic_name_ok("a/#", 3));
    assert_false(vigil_mqtt_topic_name_ok("a\0b", 3));
    assert_false(vigil_mqtt_topic_name_ok("a\xff", 2));
    assert_false(vigil_mqtt_topic_name_ok(NULL, 3));
}

static void test_publish_bytes(void **state)
{
    (void)state;
    unsigned char b[64];
    size_t id_at = 0;
    size_t n = vigil_mqtt_encode_publish(b, "a/b", 3, "hi", 2, true, &id_at);
    static const unsigned char want[] = {
        0x33,             /* PUBLISH, QoS 1, retain */
        10,               /* remaining length */
        0, 3, 'a', '/', 'b',
        0, 0,             /* packet id, set later */
        0,                /* no properties */
        'h', 'i',
    };
    assert_int_equal(n, sizeof want);
    assert_int_equal(vigil_mqtt_publish_len(3, 2), sizeof want);
    assert_memory_equal(b, want, sizeof want);
    assert_int_equal(id_at, 7);
    vigil_mqtt_put_packet_id(b + id_at, 0x1234);
    assert_int_equal(b[7], 0x12);
    assert_int_equal(b[8], 0x34);
    /* not retained, no payload */
    n = vigil_mqtt_encode_publish(b, "t", 1, NULL, 0, false, &id_at);
    assert_int_equal(b[0], 0x32);
    assert_int_equal(n, vigil_mqtt_publish_len(1, 0));
    /* a payload past 127 bytes takes a two-byte length */
    char *big = calloc(1, 200);
    unsigned char *out = malloc(vigil_mqtt_publish_len(1, 200));
    assert_non_null(big);
    assert_non_null(out);
    n = vigil_mqtt_encode_publish(out, "t", 1, big, 200, false, &id_at);
    assert_int_equal(n, vigil_mqtt_publish_len(1, 200));
    size_t rem;
    assert_int_equal(vigil_mqtt_varint_get(out + 1, n - 1, &rem), 2);
    assert_int_equal(rem, n - 3);
    free(big);
    free(out);
}

static void test_connect_bytes(void **state)
{
    (void)state;
    unsigned char b[128];
    size_t n = vigil_mqtt_encode_connect(b, "id", "u", "pw", 20);
    static const unsigned char want[] = {
        0x10, 22,                          /* CONNECT, remaining length */
        0, 4, 'M', 'Q', 'T', 'T', 5,       /* protocol name and level */
        0xC2,                              /* user, password, clean start */
        0, 20,                             /* keep alive */
        0,                                 /* no properties */
        0, 2, 'i', 'd', 0, 1, 'u', 0, 2, 'p', 'w',
    };
    assert_int_equal(n, sizeof want);
    assert_int_equal(vigil_mqtt_connect_len("id", "u", "pw"), sizeof want);
    assert_memory_equal(b, want, sizeof want);
    n = vigil_mqtt_encode_connect(b, "id", NULL, NULL, 20);
    assert_int_equal(n, vigil_mqtt_connect_len("id", NULL, NULL));
    assert_int_equal(b[9], 0x02); /* clean start only */
}

static void test_connack(void **state)
{
    (void)state;
    vigil_connack c;
    /* accepted, with Receive Maximum 20, Maximum Packet Size 1100000,
     * Server Keep Alive 30, a user property and Topic Alias Maximum */
    static const unsigned char ok[] = {
        0x00, 0x00, 24,
        0x21, 0x00, 0x14,
        0x27, 0x00, 0x10, 0xC8, 0xE0,
        0x13, 0x00, 0x1E,
        0x26, 0x00, 0x01, 'k', 0x00, 0x02, 'v', 'v',
        0x22, 0x00, 0x0A,
        0x24, 0x01,
    };
    assert_int_equal(vigil_mqtt_parse_connack(ok, sizeof ok, &c), 0);
    assert_int_equal(c.reason, 0);
    assert_int_equal(c.recv_max, 20);
    assert_int_equal(c.max_packet, 1100000);
    assert_int_equal(c.keepalive, 30);
    /* no properties: the defaults */
    static const unsigned char bare[] = { 0x00, 0x00, 0x00 };
    assert_int_equal(vigil_mqtt_parse_connack(bare, sizeof bare, &c), 0);
    assert_int_equal(c.recv_max, 65535);
    assert_int_equal(c.max_packet, 0);
    assert_int_equal(c.keepalive, -1);
    /* refused, with a Reason String */
    static const unsigned char refused[] = { 0x00, 0x87, 0x06, 0x1F, 0x00, 0x03, 'a', 'c', 'l' };
    assert_int_equal(vigil_mqtt_parse_connack(refused, sizeof refused, &c), 0);
    assert_int_equal(c.reason, 0x87);
    assert_string_equal(c.reason_string, "acl");
    /* malformed: each is refused without reading past the end (ASan) */
    static const unsigned char unknown_prop[] = { 0x00, 0x00, 0x02, 0x7F, 0x00 };
    static const unsigned char cut_value[] = { 0x00, 0x00, 0x02, 0x21, 0x00 };
    static const unsigned char cut_string[] = { 0x00, 0x00, 0x03, 0x1F, 0x00, 0x09 };
    static const unsigned char cut_pair[] = { 0x00, 0x00, 0x04, 0x26, 0x00, 0x01, 'k' };
    static const unsigned char long_props[] = { 0x00, 0x00, 0x09, 0x21, 0x00 };
    static const unsigned char bad_varint[] = { 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x01 };
    static const unsigned char refused_cut[] = { 0x00, 0x86, 0x05, 0x1F };
    const struct {
        const unsigned char *p;
        size_t n;
    } bad[] = {
        { unknown_prop, sizeof unknown_prop }, { cut_value, sizeof cut_value },
        { cut_string, sizeof cut_string },     { cut_pair, sizeof cut_pair },
        { long_props, sizeof long_props },     { bad_varint, sizeof bad_varint },
        { ok, 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char *copy = malloc(bad[i].n); /* exact size: ASan sees an overread */
        assert_non_null(copy);
        memcpy(copy, bad[i].p, bad[i].n);
        assert_int_equal(vigil_mqtt_parse_connack(copy, bad[i].n, &c), -1);
        free(copy);
    }
    /* a refusal whose properties are broken is still a refusal */
    assert_int_equal(vigil_mqtt_parse_connack(refused_cut, sizeof refused_cut, &c), -1);
    assert_int_equal(c.reason, 0x86);
}

/* Every prefix of a valid CONNACK, and every byte value in every position,
 * is either decoded or refused: never a read past the end (ASan). */
static void test_connack_never_overreads(void **state)
{
    (void)state;
    static const unsigned char ok[] = {
        0x00, 0x00, 13, 0x21, 0x00, 0x14, 0x1F, 0x00, 0x02, 'o', 'k', 0x26, 0x00, 0x00, 0x00, 0x00,
    };
    vigil_connack c;
    assert_int_equal(vigil_mqtt_parse_connack(ok, sizeof ok, &c), 0);
    assert_string_equal(c.reason_string, "ok");
    for (size_t n = 0; n <= sizeof ok; n++) {
        unsigned char *copy = malloc(n ? n : 1);
        assert_non_null(copy);
        memcpy(copy, ok, n);
        int rc = vigil_mqtt_parse_connack(copy, n, &c);
        assert_true(rc == 0 || rc == -1);
        for (size_t at = 0; at < n; at++)
            for (int v = 0; v < 256; v += 7) {
                copy[at] = (unsigned char)v;
                rc = vigil_mqtt_parse_connack(copy, n, &c);
                assert_true(rc == 0 || rc == -1);
                copy[at] = ok[at];
            }
        free(copy);
    }
}

static void test_puback(void **state)
{
    (void)state;
    int id = 0, reason = 0;
    static const unsigned char plain[] = { 0x01, 0x02 };
    assert_int_equal(vigil_mqtt_parse_puback(plain, 2, &id, &reason), 0);
    assert_int_equal(id, 0x0102);
    assert_int_equal(reason, 0);
    static const unsigned char refused[] = { 0x00, 0x07, 0x87, 0x00 };
    assert_int_equal(vigil_mqtt_parse_puback(refused, 4, &id, &reason), 0);
    assert_int_equal(id, 7);
    assert_int_equal(reason, 0x87);
    assert_int_equal(vigil_mqtt_parse_puback(plain, 1, &id, &reason), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_boundaries),
        cmocka_unit_test(test_topic_names),
        cmocka_unit_test(test_publish_bytes),
        cmocka_unit_test(test_connect_bytes),
        cmocka_unit_test(test_connack),
        cmocka_unit_test(test_connack_never_overreads),
        cmocka_unit_test(test_puback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
