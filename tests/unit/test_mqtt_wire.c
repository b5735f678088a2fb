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

/* A CONNECT that resumes a session and leaves a last will, byte for byte
 * against MQTT 5 section 3.1: flags user 0x80, password 0x40, will retain
 * 0x20, will QoS 1 0x08, will 0x04 and no clean start (0xEC); the Session
 * Expiry Interval (0x11) as a four-byte big-endian integer in the
 * properties; an empty will property block before the will topic; then
 * user and password. 604800 (a week) is 0x00093A80, so a wrong high half
 * shows. Without a will or an expiry the properties are one zero byte and
 * only the user flag is set: clean_start false must not set 0x02. */
static void test_connect_opts_bytes(void **state)
{
    (void)state;
    unsigned char b[512];
    static const char will[] = "{\"state\":\"lost\"}";
    vigil_connect_opts o = {
        .client_id = "c1", .user = "u", .password = "p", .keepalive_s = 30,
        .clean_start = false, .session_expiry_s = 604800,
        .will_topic = "sys/x/i/status", .will_payload = will, .will_len = sizeof will - 1,
        .will_retain = true,
    };
    static const unsigned char want[] = {
        0x10, 61,                           /* CONNECT, remaining length */
        0, 4, 'M', 'Q', 'T', 'T', 5,        /* protocol name and level */
        0xEC,                               /* user, password, will retain, will QoS 1, will */
        0, 30,                              /* keep alive */
        5, 0x11, 0x00, 0x09, 0x3A, 0x80,    /* Session Expiry Interval 604800 */
        0, 2, 'c', '1',                     /* client id */
        0,                                  /* no will properties */
        0, 14, 's', 'y', 's', '/', 'x', '/', 'i', '/', 's', 't', 'a', 't', 'u', 's',
        0, 16, '{', '"', 's', 't', 'a', 't', 'e', '"', ':', '"', 'l', 'o', 's', 't', '"', '}',
        0, 1, 'u',                          /* user */
        0, 1, 'p',                          /* password */
    };
    memset(b, 0xEE, sizeof b);
    size_t n = vigil_mqtt_encode_connect_opts(b, &o);
    assert_int_equal(n, sizeof want);
    assert_int_equal(vigil_mqtt_connect_opts_len(&o), sizeof want);
    assert_memory_equal(b, want, sizeof want);
    assert_int_equal(b[sizeof want], 0xEE); /* nothing written past the end */

    /* resume, no will, no expiry, a user and no password */
    vigil_connect_opts plain = { .client_id = "c1", .user = "u", .keepalive_s = 60,
                                 .clean_start = false };
    static const unsigned char want_plain[] = {
        0x10, 18,
        0, 4, 'M', 'Q', 'T', 'T', 5,
        0x80,                               /* user only: no clean start, no will */
        0, 60,
        0,                                  /* no properties */
        0, 2, 'c', '1',
        0, 1, 'u',
    };
    memset(b, 0xEE, sizeof b);
    n = vigil_mqtt_encode_connect_opts(b, &plain);
    assert_int_equal(n, sizeof want_plain);
    assert_int_equal(vigil_mqtt_connect_opts_len(&plain), sizeof want_plain);
    assert_memory_equal(b, want_plain, sizeof want_plain);
    assert_int_equal(b[sizeof want_plain], 0xEE);

    /* clean start with an expiry whose four bytes all differ (byte order)
     * and a will that is not retained and has an empty payload (0x0E) */
    vigil_connect_opts empty_will = { .client_id = "c", .clean_start = true,
                                      .session_expiry_s = 0x01020304u, .will_topic = "w" };
    static const unsigned char want_empty_will[] = {
        0x10, 25,
        0, 4, 'M', 'Q', 'T', 'T', 5,
        0x0E,                               /* will QoS 1, will, clean start */
        0, 0,
        5, 0x11, 0x01, 0x02, 0x03, 0x04,
        0, 1, 'c',
        0,
        0, 1, 'w',
        0, 0,                               /* an empty will payload */
    };
    memset(b, 0xEE, sizeof b);
    n = vigil_mqtt_encode_connect_opts(b, &empty_will);
    assert_int_equal(n, sizeof want_empty_will);
    assert_int_equal(vigil_mqtt_connect_opts_len(&empty_will), sizeof want_empty_will);
    assert_memory_equal(b, want_empty_will, sizeof want_empty_will);

    /* a will past 127 bytes of remaining length takes a two-byte length,
     * and _len still counts it */
    char big[200];
    memset(big, 'x', sizeof big);
    o.will_payload = big;
    o.will_len = sizeof big;
    unsigned char *out = malloc(vigil_mqtt_connect_opts_len(&o)); /* exact: ASan */
    assert_non_null(out);
    n = vigil_mqtt_encode_connect_opts(out, &o);
    assert_int_equal(n, vigil_mqtt_connect_opts_len(&o));
    size_t rem;
    assert_int_equal(vigil_mqtt_varint_get(out + 1, n - 1, &rem), 2);
    assert_int_equal(rem, n - 3);
    assert_int_equal(rem, 61 - 16 + 200);
    free(out);
}

/* A SUBSCRIBE, byte for byte against MQTT 5 section 3.8: first byte 0x82
 * (the reserved bits are 0010, a broker closes the connection otherwise),
 * the packet id big-endian (0x0401: the two bytes differ, so a swap
 * shows), an empty property block, and each filter as a length-prefixed
 * string followed by its options byte 0x01 (QoS 1, nothing else). */
static void test_subscribe_bytes(void **state)
{
    (void)state;
    const char *const filters[] = { "a/+", "sys/#" };
    static const unsigned char want[] = {
        0x82, 17,                           /* SUBSCRIBE, remaining length */
        0x04, 0x01,                         /* packet id */
        0,                                  /* no properties */
        0, 3, 'a', '/', '+', 0x01,
        0, 5, 's', 'y', 's', '/', '#', 0x01,
    };
    unsigned char b[64];
    memset(b, 0xEE, sizeof b);
    size_t n = vigil_mqtt_encode_subscribe(b, 0x0401, filters, 2);
    assert_int_equal(n, sizeof want);
    assert_int_equal(vigil_mqtt_subscribe_len(filters, 2), sizeof want);
    assert_memory_equal(b, want, sizeof want);
    assert_int_equal(b[sizeof want], 0xEE);
    /* one filter */
    const char *const one[] = { "t" };
    static const unsigned char want_one[] = { 0x82, 7, 0x00, 0x09, 0, 0, 1, 't', 0x01 };
    n = vigil_mqtt_encode_subscribe(b, 9, one, 1);
    assert_int_equal(n, sizeof want_one);
    assert_int_equal(vigil_mqtt_subscribe_len(one, 1), sizeof want_one);
    assert_memory_equal(b, want_one, sizeof want_one);
}

/* SUBACK bodies (MQTT 5 section 3.9): packet id, property block, one
 * reason code per filter. The codes must come after the properties
 * whether the block is empty or holds a Reason String (0x1F), and a body
 * too short for an id, without a property length, or whose property
 * length runs past the end is refused, each in an exact-size copy so ASan
 * sees any read past it. */
static void test_suback(void **state)
{
    (void)state;
    int id = 0, ncodes = -1;
    unsigned char codes[4];
    static const unsigned char bare[] = { 0x04, 0x01, 0x00, 0x01, 0x87 };
    assert_int_equal(vigil_mqtt_parse_suback(bare, sizeof bare, &id, codes, 4, &ncodes), 0);
    assert_int_equal(id, 0x0401);
    assert_int_equal(ncodes, 2);
    assert_int_equal(codes[0], 0x01);
    assert_int_equal(codes[1], 0x87);
    /* a Reason String before the codes: its bytes are not codes */
    static const unsigned char with_props[] = {
        0x00, 0x07, 0x06, 0x1F, 0x00, 0x03, 'a', 'c', 'l', 0x87, 0x01, 0x00,
    };
    id = 0;
    ncodes = -1;
    assert_int_equal(vigil_mqtt_parse_suback(with_props, sizeof with_props, &id, codes, 4, &ncodes),
                     0);
    assert_int_equal(id, 7);
    assert_int_equal(ncodes, 3);
    assert_int_equal(codes[0], 0x87);
    assert_int_equal(codes[1], 0x01);
    assert_int_equal(codes[2], 0x00);
    /* more codes than room: at most maxcodes are written */
    unsigned char one[2] = { 0xEE, 0xEE };
    assert_int_equal(vigil_mqtt_parse_suback(bare, sizeof bare, &id, one, 1, &ncodes), 0);
    assert_int_equal(ncodes, 1);
    assert_int_equal(one[0], 0x01);
    assert_int_equal(one[1], 0xEE);
    /* malformed */
    static const unsigned char short_id[] = { 0x04 };
    static const unsigned char no_props[] = { 0x04, 0x01 };
    static const unsigned char long_props[] = { 0x04, 0x01, 0x05, 0x1F, 0x00 };
    static const unsigned char long_props2[] = { 0x04, 0x01, 0x06, 0x1F, 0x00, 0x03, 'a', 'c' };
    static const unsigned char bad_varint[] = { 0x04, 0x01, 0x80, 0x80, 0x80, 0x80, 0x01 };
    static const unsigned char cut_varint[] = { 0x04, 0x01, 0x80 };
    const struct {
        const unsigned char *p;
        size_t n;
    } bad[] = {
        { short_id, 0 },
        { short_id, sizeof short_id },
        { no_props, sizeof no_props },
        { long_props, sizeof long_props },
        { long_props2, sizeof long_props2 },
        { bad_varint, sizeof bad_varint },
        { cut_varint, sizeof cut_varint },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char *copy = malloc(bad[i].n ? bad[i].n : 1);
        assert_non_null(copy);
        memcpy(copy, bad[i].p, bad[i].n);
        assert_int_equal(vigil_mqtt_parse_suback(copy, bad[i].n, &id, codes, 4, &ncodes), -1);
        free(copy);
    }
}

/* Incoming PUBLISH (MQTT 5 section 3.3): the flags come from the first
 * byte (dup 0x08, QoS bits 0x06, retain 0x01), the packet id is there only
 * at QoS 1, and the payload starts after the properties (here a Message
 * Expiry Interval 0x02 and a User Property 0x26), so a parser that
 * skipped the wrong number of property bytes hands out the wrong payload.
 * Refused: QoS 2 (we never subscribe at it) and 3 (malformed), a QoS 1
 * packet id of 0, an empty topic (an alias we never allowed), and a topic
 * or property length past the end. */
static void test_parse_publish(void **state)
{
    (void)state;
    vigil_inpub p;
    static const unsigned char q1[] = {
        0, 3, 'a', '/', 'b',
        0x12, 0x34,                         /* packet id */
        12,                                 /* property length */
        0x02, 0x00, 0x00, 0x0E, 0x10,       /* Message Expiry Interval 3600 */
        0x26, 0, 1, 'k', 0, 1, 'v',         /* User Property k=v */
        'h', 'e', 'l', 'l', 'o',
    };
    assert_int_equal(vigil_mqtt_parse_publish(0x3B, q1, sizeof q1, &p), 0); /* dup, QoS 1, retain */
    assert_int_equal(p.qos, 1);
    assert_true(p.retain);
    assert_true(p.dup);
    assert_int_equal(p.id, 0x1234);
    assert_int_equal(p.tlen, 3);
    assert_ptr_equal(p.topic, (const char *)q1 + 2);
    assert_memory_equal(p.topic, "a/b", 3);
    assert_int_equal(p.plen, 5);
    assert_ptr_equal(p.payload, q1 + 20);
    assert_memory_equal(p.payload, "hello", 5);
    /* the same without dup and retain */
    assert_int_equal(vigil_mqtt_parse_publish(0x32, q1, sizeof q1, &p), 0);
    assert_false(p.retain);
    assert_false(p.dup);
    assert_int_equal(p.qos, 1);
    assert_int_equal(p.id, 0x1234);
    /* QoS 0: no packet id, the byte after the topic is the property length */
    static const unsigned char q0[] = { 0, 1, 't', 0, 'x', 'y' };
    assert_int_equal(vigil_mqtt_parse_publish(0x31, q0, sizeof q0, &p), 0);
    assert_int_equal(p.qos, 0);
    assert_true(p.retain);
    assert_false(p.dup);
    assert_int_equal(p.id, 0);
    assert_int_equal(p.tlen, 1);
    assert_int_equal(p.topic[0], 't');
    assert_int_equal(p.plen, 2);
    assert_memory_equal(p.payload, "xy", 2);
    /* an empty payload */
    static const unsigned char empty[] = { 0, 1, 't', 0x00, 0x07, 0 };
    assert_int_equal(vigil_mqtt_parse_publish(0x32, empty, sizeof empty, &p), 0);
    assert_int_equal(p.id, 7);
    assert_int_equal(p.plen, 0);
    assert_ptr_equal(p.payload, empty + sizeof empty);
    /* malformed */
    static const unsigned char id0[] = { 0, 1, 't', 0x00, 0x00, 0 };
    static const unsigned char no_topic[] = { 0, 0, 0, 'x' };
    static const unsigned char long_topic[] = { 0, 5, 'a', 'b', 0 };
    static const unsigned char long_props[] = { 0, 1, 't', 0x00, 0x01, 0x05, 0x02, 0x00 };
    static const unsigned char long_props_q0[] = { 0, 1, 't', 0x06, 0x26, 0, 1, 'k' };
    static const unsigned char cut_id[] = { 0, 1, 't', 0x00 };
    static const unsigned char no_props[] = { 0, 1, 't', 0x00, 0x01 };
    static const unsigned char bad_varint[] = { 0, 1, 't', 0x80, 0x80, 0x80, 0x80, 0x01 };
    const struct {
        unsigned char first;
        const unsigned char *p;
        size_t n;
    } bad[] = {
        { 0x34, q1, sizeof q1 },            /* QoS 2 */
        { 0x36, q1, sizeof q1 },            /* QoS 3 */
        { 0x3D, q1, sizeof q1 },            /* QoS 2 with dup and retain */
        { 0x32, id0, sizeof id0 },
        { 0x30, no_topic, sizeof no_topic },
        { 0x32, no_topic, sizeof no_topic },
        { 0x32, long_topic, sizeof long_topic },
        { 0x32, long_props, sizeof long_props },
        { 0x30, long_props_q0, sizeof long_props_q0 },
        { 0x32, cut_id, sizeof cut_id },
        { 0x32, no_props, sizeof no_props },
        { 0x30, bad_varint, sizeof bad_varint },
        { 0x30, q0, 1 },
        { 0x30, q0, 0 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char *copy = malloc(bad[i].n ? bad[i].n : 1);
        assert_non_null(copy);
        memcpy(copy, bad[i].p, bad[i].n);
        assert_int_equal(vigil_mqtt_parse_publish(bad[i].first, copy, bad[i].n, &p), -1);
        free(copy);
    }
}

/* Every prefix of a valid PUBLISH body (at QoS 1 and at QoS 0) and of a
 * valid SUBACK body, and every seventh byte value in every position of
 * each, is either decoded or refused: never a read past the end (ASan, the
 * copy is exactly that size). What is decoded lies inside the buffer. */
static void test_publish_suback_never_overread(void **state)
{
    (void)state;
    static const unsigned char pub[] = {
        0, 3, 'a', '/', 'b', 0x12, 0x34, 12,
        0x02, 0x00, 0x00, 0x0E, 0x10, 0x26, 0, 1, 'k', 0, 1, 'v',
        'h', 'e', 'l', 'l', 'o',
    };
    static const unsigned char sub[] = {
        0x00, 0x07, 0x06, 0x1F, 0x00, 0x03, 'a', 'c', 'l', 0x87, 0x01,
    };
    static const unsigned char firsts[] = { 0x32, 0x30, 0x3B };
    vigil_inpub p;
    assert_int_equal(vigil_mqtt_parse_publish(0x32, pub, sizeof pub, &p), 0);
    for (size_t f = 0; f < sizeof firsts; f++)
        for (size_t n = 0; n <= sizeof pub; n++) {
            unsigned char *copy = malloc(n ? n : 1);
            assert_non_null(copy);
            memcpy(copy, pub, n);
            for (size_t at = 0; at <= n; at++)
                for (int v = 0; v < 256; v += 7) {
                    if (at < n)
                        copy[at] = (unsigned char)v;
                    int rc = vigil_mqtt_parse_publish(firsts[f], copy, n, &p);
                    assert_true(rc == 0 || rc == -1);
                    if (rc == 0) {
                        assert_true((const unsigned char *)p.topic >= copy);
                        assert_true((const unsigned char *)p.topic + p.tlen <= copy + n);
                        assert_ptr_equal(p.payload + p.plen, copy + n);
                    }
                    if (at < n)
                        copy[at] = pub[at];
                    else
                        break; /* the unmutated prefix, once */
                }
            free(copy);
        }
    int id, ncodes;
    unsigned char codes[16];
    assert_int_equal(vigil_mqtt_parse_suback(sub, sizeof sub, &id, codes, 16, &ncodes), 0);
    assert_int_equal(ncodes, 2);
    for (size_t n = 0; n <= sizeof sub; n++) {
        unsigned char *copy = malloc(n ? n : 1);
        assert_non_null(copy);
        memcpy(copy, sub, n);
        for (size_t at = 0; at <= n; at++)
            for (int v = 0; v < 256; v += 7) {
                if (at < n)
                    copy[at] = (unsigned char)v;
                int rc = vigil_mqtt_parse_suback(copy, n, &id, codes, 16, &ncodes);
                assert_true(rc == 0 || rc == -1);
                if (rc == 0)
                    assert_true(ncodes >= 0 && (size_t)ncodes <= n);
                if (at < n)
                    copy[at] = sub[at];
                else
                    break;
            }
        free(copy);
    }
}

/* A PUBACK with reason Success (MQTT 5 section 3.4.2.1: the reason code
 * and properties may be left out), packet id big-endian: 0x40, 0x02, hi,
 * lo, and nothing past the four bytes. */
static void test_encode_puback(void **state)
{
    (void)state;
    unsigned char b[5];
    memset(b, 0xEE, sizeof b);
    vigil_mqtt_encode_puback(b, 0xABCD);
    static const unsigned char want[] = { 0x40, 0x02, 0xAB, 0xCD, 0xEE };
    assert_memory_equal(b, want, sizeof want);
    vigil_mqtt_encode_puback(b, 0x0001);
    static const unsigned char want1[] = { 0x40, 0x02, 0x00, 0x01, 0xEE };
    assert_memory_equal(b, want1, sizeof want1);
}

/* Session Present is bit 0 of the CONNACK's first byte (MQTT 5 section
 * 3.2.2.1.1): it decides whether the intake must subscribe again. */
static void test_connack_session_present(void **state)
{
    (void)state;
    vigil_connack c;
    static const unsigned char resumed[] = { 0x01, 0x00, 0x00 };
    static const unsigned char fresh[] = { 0x00, 0x00, 0x00 };
    assert_int_equal(vigil_mqtt_parse_connack(resumed, sizeof resumed, &c), 0);
    assert_true(c.session_present);
    assert_int_equal(c.reason, 0);
    assert_int_equal(vigil_mqtt_parse_connack(fresh, sizeof fresh, &c), 0);
    assert_false(c.session_present);
    /* no property length at all (tolerated) still says it */
    assert_int_equal(vigil_mqtt_parse_connack(resumed, 2, &c), 0);
    assert_true(c.session_present);
    /* a fresh parse does not keep the previous answer */
    assert_int_equal(vigil_mqtt_parse_connack(fresh, 2, &c), 0);
    assert_false(c.session_present);
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
        cmocka_unit_test(test_connect_opts_bytes),
        cmocka_unit_test(test_subscribe_bytes),
        cmocka_unit_test(test_suback),
        cmocka_unit_test(test_parse_publish),
        cmocka_unit_test(test_publish_suback_never_overread),
        cmocka_unit_test(test_encode_puback),
        cmocka_unit_test(test_connack_session_present),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
