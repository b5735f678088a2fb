/* ids.c - deterministic ids of the events this service publishes:
 * "<input id>:<key>" (e.g. "m-7f3a:wake:sre"), so a redelivered input or a
 * job handled twice yields the same id and consumers dedupe on it.
 *
 * Why not libshared's "<input>/<key>/<n>": these events are inputs of
 * dormancy-monitor, and an input id may not contain '/' (nor '+', '#').
 * ':' never occurs in a persona or room id, so the last ":wake:" splits an
 * id unambiguously. Ids longer than 128 bytes keep a prefix of the input
 * id and a hash of the whole. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <vigil/json.h>
#include "wake.h"
#include <vigil/str.h>

void wake_event_id(char *out, size_t outlen, const char *input, const char *key)
{
    input = input ? input : "";
    key = key ? key : "";
    size_t need = strlen(input) + 1 + strlen(key);
    if (need <= WAKE_EVID_MAX && need < outlen) {
        vigil_concat(out, outlen, input, ":", key, (const char *)NULL);
        return;
    }
    uint64_t h = vigil_hash64_more(VIGIL_HASH64_INIT, input, strlen(input));
    h = vigil_hash64_more(h, ":", 1);
    h = vigil_hash64_more(h, key, strlen(key));
    size_t room = WAKE_EVID_MAX < outlen - 1 ? WAKE_EVID_MAX : outlen - 1;
    size_t fixed = 1 + 16 + 1 + strlen(key); /* "~" hash ":" key */
    int keep = room > fixed ? (int)(room - fixed) : 0;
    snprintf(out, outlen, "%.*s~%016" PRIx64 ":%s", keep, input, h, key);
}
