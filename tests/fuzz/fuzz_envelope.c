/* fuzz_envelope.c - every message a service takes from the broker goes
 * through vigil_input_parse first: the topic's levels, the payload's
 * strict JSON, `id` and `ts`. Input: the topic up to the first newline,
 * the payload after it. Whatever the bytes, the parse returns 0 or -1 with
 * a reason; the topic-id check then runs on every level. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "vigil/envelope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t tlen = nl ? (size_t)(nl - data) : size;
    char *topic = malloc(tlen + 1);
    if (!topic)
        return 0;
    memcpy(topic, data, tlen);
    topic[tlen] = '\0';
    const uint8_t *payload = nl ? nl + 1 : data + size;
    size_t plen = (size_t)(data + size - payload);
    vigil_input in;
    vigil_error err = {0};
    if (vigil_input_parse(topic, payload, plen, 4096, 1700000000000, &in, &err) == 0) {
        static const char *const fields[] = { "room", "persona", "agent", "session", NULL };
        for (int i = 0; i < in.nparts; i++) {
            const char *out;
            vigil_error e2 = {0};
            (void)vigil_input_topic_id(&in, i, fields[i % 4], &out, &e2);
        }
        vigil_input_clear(&in);
    } else if (err.reason == 0 || err.detail[0] == '\0') {
        abort(); /* a refusal always says why */
    }
    free(topic);
    return 0;
}
