/* fuzz_mqtt_wire.c - the packets Vigil's own MQTT client decodes from the
 * broker (PUBLISH, SUBACK, CONNACK, PUBACK, the remaining-length varint).
 * Input: the fixed header's first byte, then the body. A malformed packet
 * must be refused (-1), never read past its end; a decoded PUBLISH must
 * point inside the body. */
#include <stdint.h>
#include <stdlib.h>
#include "../../libshared/src/mqtt_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned char first = data[0];
    const unsigned char *body = data + 1;
    size_t len = size - 1;
    vigil_inpub p;
    if (vigil_mqtt_parse_publish(first, body, len, &p) == 0) {
        const unsigned char *end = body + len;
        const unsigned char *topic = (const unsigned char *)p.topic;
        if (topic < body || topic + p.tlen > end || p.payload < body ||
            p.payload + p.plen > end || p.tlen == 0 || p.qos > 1 || (p.qos == 1 && p.id == 0))
            abort();
    }
    int id, n, reason;
    unsigned char codes[64];
    (void)vigil_mqtt_parse_suback(body, len, &id, codes, 64, &n);
    vigil_connack c;
    (void)vigil_mqtt_parse_connack(body, len, &c);
    (void)vigil_mqtt_parse_puback(body, len, &id, &reason);
    size_t v;
    int vn = vigil_mqtt_varint_get(body, len, &v);
    if (vn > 0 && ((size_t)vn > len || vn > 4))
        abort();
    return 0;
}
