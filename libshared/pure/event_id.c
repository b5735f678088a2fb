/* event_id.c - deterministic, scoped ids of derived events (event_id.h).
 * Built without snprintf on the common path: two or three ids per input,
 * where snprintf's format parsing cost more than the rest of the id. */
#include "vigil/event_id.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vigil/json.h"
#include "vigil/jtext.h"
#include "vigil/str.h"

void vigil_event_id_in(char *out, size_t outlen, const char *input_id, const char *scope,
                       const char *key)
{
    if (!out || outlen == 0)
        return;
    const char *part[5] = {input_id ? input_id : "", ":", scope ? scope : "", ":",
                           key ? key : ""};
    /* vigil_concat cuts to fit: when it was cut, out already holds the
     * prefix the long form keeps */
    size_t need = vigil_concat(out, outlen, part[0], part[1], part[2], part[3], part[4],
                               (const char *)NULL);
    if (need < outlen)
        return;
    /* the hash of the whole id, piece by piece (equal to hashing the
     * concatenation, without a copy of an input of any length) */
    uint64_t h = VIGIL_HASH64_INIT;
    for (size_t i = 0; i < sizeof part / sizeof part[0]; i++)
        h = vigil_hash64_more(h, part[i], strlen(part[i]));
    char suffix[18];
    snprintf(suffix, sizeof suffix, "~%016" PRIx64, h);
    size_t room = outlen - 1;
    if (room < 17) { /* tiny buffer: as much of the hash as fits */
        memcpy(out, suffix + 1, room);
    } else {
        memcpy(out + room - 17, suffix, 17);
    }
    out[room] = '\0';
}

void vigil_event_id(char *out, size_t outlen, const char *input_id, const char *key, int n)
{
    char num[VIGIL_I64_TEXT_MAX + 1];
    vigil_i64_text(num, n);
    vigil_event_id_in(out, outlen, input_id, key, num);
}

void vigil_error_event_id(char *out, size_t outlen, const char *service, const char *topic,
                          const void *payload, size_t len)
{
    /* pieces separated by a NUL, which neither a service name nor a topic
     * holds: no two (service, topic) pairs hash the same bytes */
    service = service ? service : "";
    topic = topic ? topic : "";
    uint64_t h = vigil_hash64_more(VIGIL_HASH64_INIT, service, strlen(service) + 1);
    h = vigil_hash64_more(h, topic, strlen(topic) + 1);
    h = vigil_hash64_more(h, payload ? payload : "", payload ? len : 0);
    if (out && outlen > 0)
        snprintf(out, outlen, "err-%016" PRIx64, h);
}
