/* internal.h - helpers shared by the core's files (not part of the
 * service's view of the core). */
#ifndef WAKE_INTERNAL_H
#define WAKE_INTERNAL_H
#include "wake.h"

/* The room context a wake job carries (computed once per message, before
 * the message itself is recorded). */
typedef struct wake_context {
    int recent_count;
    bool has_human;
    const char *human_text;
    char since_human[48];
    char *active_ais; /* owned, ", "-joined display names, "" if none */
} wake_context;

int wake_context_build(const wake_room *r, int64_t now, wake_context *ctx);
void wake_context_clear(wake_context *ctx);

/* The room has a persona someone manages (meta or a reported level): only
 * then does the autopilot run. */
bool wake_room_managed(const wake_room *r);
/* Display name of a persona: its meta name, else its id. */
const char *wake_display_name(const wake_persona *p);
/* Effective settings of a persona (meta overrides over the config). */
bool wake_persona_auto_wake(const wake_persona *p, const wake_config *c);
bool wake_persona_llm_wake(const wake_persona *p, const wake_config *c);
double wake_persona_threshold(const wake_persona *p, const wake_config *c);
/* A human message wakes p by dormancy-monitor's rule 3 (its sleep came from
 * human absence, or VIGIL_DORMANCY_HUMAN_WAKES=all, and auto-wake is on). */
bool wake_persona_human_wakes(const wake_persona *p, const wake_config *c);

/* What the rules look at for persona p and message m: the whole text. */
wake_rules_in wake_rules_input(const wake_persona *p, const wake_message *m);

/* A wake job for p and m; it carries the rules' verdict on m's whole text
 * (the text itself is cut at WAKE_PROMPT_TEXT_MAX). */
char *wake_job_build(const wake_room *r, const wake_persona *p, const wake_message *m,
                     const wake_context *ctx, const char *job_id, double threshold,
                     int64_t now);
char *wake_ap_job_build(const wake_room *r, const char *job_id, int64_t now);

/* A JSON number printed with at most `decimals` decimals and no trailing
 * zeros ("0.92", not "0.92000000000000004"). */
json_object *wake_json_number(double v, int decimals);
/* The same number as text (s of at least 64 bytes), for payloads written
 * with jbuf.h. */
void wake_number_text(double v, int decimals, char *s, size_t len);
/* json-c to a malloc'd compact string (NULL on failure); drops obj. */
char *wake_json_take(json_object *obj);
int wake_publish_obj(const wake_sink *sink, const char *topic, json_object *obj, bool retain);

#endif
