/* prompt.c - the question put to an LLM: which of the personas able to
 * answer fit this message best. Only the personas the rules would consider
 * (able, not mentioned, not the sender) are listed, with their role,
 * expertise and confidence, so the model ranks exactly the ones the choice
 * can grant. And the reading of its answer: which of the named ids count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "floor.h"

static void persona_line(FILE *b, const floor_persona *p)
{
    fprintf(b, "- %s", p->id);
    if (p->name[0] && strcmp(p->name, p->id) != 0)
        fprintf(b, " (%s)", p->name);
    fprintf(b, ": role %s; expertise:", p->role[0] ? p->role : "none given");
    if (p->n_domains == 0)
        fprintf(b, " none given");
    for (int d = 0; d < p->n_domains; d++) {
        fprintf(b, "%s %s", d ? "," : "", p->domains[d]);
        if (p->confidence[d] != FLOOR_CONFIDENCE_UNSET)
            fprintf(b, " (confidence %.2f)", p->confidence[d]);
    }
    fprintf(b, "\n");
}

char *floor_llm_prompt(const floor_room *r, const floor_config *cfg, const floor_message *m)
{
    char *text = NULL;
    size_t size = 0;
    FILE *b = open_memstream(&text, &size);
    if (!b)
        return NULL;
    /* the text whole: a message longer than FLOOR_TEXT_MAX never waits for
     * the LLM, so nothing of what the rules see is hidden from the model */
    fprintf(b,
            "You decide who answers a chat message in room %s. At most %d of the personas below "
            "should answer: the ones whose expertise fits the message best.\n\n"
            "Message from %s: \"%s\"\n\nPersonas:\n",
            r->room, cfg->k, m->sender ? m->sender : "someone", m->text ? m->text : "");
    /* listed only when the rules would consider it */
    bool *listed = calloc((size_t)r->n + 1, sizeof *listed);
    if (!listed || floor_rankable(r, cfg, m, listed) < 0) {
        free(listed);
        fclose(b);
        free(text);
        return NULL;
    }
    for (int i = 0; i < r->n; i++)
        if (listed[i])
            persona_line(b, &r->personas[i]);
    free(listed);
    fprintf(b,
            "\nRespond with JSON only: {\"relevant\": [\"<persona id>\", ...]} naming the "
            "personas that should answer, most relevant first, at most %d (an empty list when "
            "none fits).",
            cfg->k);
    /* a write that failed for want of memory shows in ferror */
    bool failed = ferror(b) != 0;
    if (fclose(b) != 0 || failed) {
        free(text);
        return NULL;
    }
    return text;
}

int floor_llm_relevant(json_object *answer, const char ***out)
{
    json_object *arr;
    *out = NULL;
    if (!answer || !json_object_object_get_ex(answer, "relevant", &arr) ||
        !json_object_is_type(arr, json_type_array))
        return FLOOR_RELEVANT_NONE;
    size_t len = json_object_array_length(arr);
    *out = calloc(len + 1, sizeof **out);
    if (!*out)
        return FLOOR_RELEVANT_NO_MEMORY;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        const char *id = NULL;
        if (vigil_json_str_check(json_object_array_get_idx(arr, i), &id) == VIGIL_JSON_STR_OK &&
            vigil_id_valid(id, strlen(id)))
            (*out)[n++] = id;
    }
    return n;
}
