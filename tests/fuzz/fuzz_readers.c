/* fuzz_readers.c - libshared's readers of the messages several services
 * consume (room messages, control and presence; persona meta, state and
 * commands; dormancy overrides) and the @mention scanners, over one JSON
 * payload. Whatever it holds, each reader accepts it or refuses it with a
 * reason; what it accepts stays within its documented bounds, and
 * overrides written back out read the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "vigil/msg_persona.h"
#include "vigil/msg_room.h"
#include "vigil/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused_with_reason(int rc, const vigil_error *err)
{
    if (rc != 0 && (err->reason == VIGIL_REJECT_NONE || err->detail[0] == '\0'))
        abort();
}

static void mentions(const char *text)
{
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    int n = vigil_mentions_parse(text, out, 0, 8, "self");
    if (n < 0 || n > 8)
        abort();
    for (int i = 0; i < n; i++)
        if (strlen(out[i]) > VIGIL_MENTION_NAME_MAX)
            abort();
    static const char *const ids[] = { "bot", "Alice", "", "x/y" };
    n = vigil_mentions_collect(text, ids, 4, "bot", out, 8);
    if (n < 0 || n > 8)
        abort();
    vigil_mention_starts starts;
    vigil_mention_starts_of(&starts, text);
    (void)vigil_mention_may(&starts, "bot");
    (void)vigil_text_mentions(text, "bot");
    (void)vigil_text_has_word(text, "kubernetes");
}

static void overrides_round_trip(json_object *body)
{
    vigil_dormancy_overrides ov;
    vigil_error err = {0};
    int rc = vigil_dormancy_overrides_read(body, &ov, &err);
    refused_with_reason(rc, &err);
    if (rc != 0)
        return;
    json_object *back = vigil_dormancy_overrides_to_json(&ov);
    if (!back)
        return; /* out of memory */
    vigil_dormancy_overrides again;
    vigil_error err2 = {0};
    if (vigil_dormancy_overrides_read(back, &again, &err2) != 0 || again.has != ov.has)
        abort(); /* what was written out must read back */
    json_object_put(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vigil_error err = {0};
    json_object *body = vigil_json_parse_object((const char *)data, size, 65536, &err);
    refused_with_reason(body ? 0 : -1, &err);
    if (!body)
        return 0;
    vigil_room_message m;
    err = (vigil_error){0};
    int rc = vigil_room_message_read(body, &m, &err);
    refused_with_reason(rc, &err);
    if (rc == 0) {
        if (!m.text)
            abort();
        mentions(m.text);
        vigil_room_message_release(&m);
    }
    vigil_room_control c;
    err = (vigil_error){0};
    refused_with_reason(vigil_room_control_read(body, &c, &err), &err);
    vigil_room_presence p;
    err = (vigil_error){0};
    rc = vigil_room_presence_read(body, &p, &err);
    refused_with_reason(rc, &err);
    if (rc == 0 && (!p.user || !p.session || p.last_activity < 0))
        abort();
    vigil_persona_meta meta;
    err = (vigil_error){0};
    rc = vigil_persona_meta_read(body, 16, &meta, &err);
    refused_with_reason(rc, &err);
    if (rc == 0) {
        if (meta.n_rooms > 16 || meta.n_conf > VIGIL_MSG_MAX_DOMAINS)
            abort();
        for (int i = 0; i < meta.n_conf; i++)
            if (!(meta.conf_values[i] >= 0 && meta.conf_values[i] <= 1))
                abort();
        vigil_persona_meta_release(&meta);
    }
    vigil_persona_state st;
    err = (vigil_error){0};
    rc = vigil_persona_state_read(body, 16, &st, &err);
    refused_with_reason(rc, &err);
    if (rc == 0) {
        if (st.n_rooms > 16)
            abort();
        (void)vigil_persona_state_room(&st, "lobby");
        vigil_persona_state_release(&st);
    }
    vigil_persona_command cmd;
    err = (vigil_error){0};
    refused_with_reason(vigil_persona_command_read(body, 1700000000000, &cmd, &err), &err);
    overrides_round_trip(body);
    json_object_put(body);
    return 0;
}
