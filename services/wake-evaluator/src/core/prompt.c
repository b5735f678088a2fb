/* prompt.c - the three specified prompts, word for word, with the fields
 * filled in (golden files in tests/golden/ pin them):
 *   smart      evaluateWakeConditionSmart (rich context, five considerations)
 *   mid        evaluateWakeConditionMid (short)
 *   autopilot  DormancyAutopilotAgent.coordinateDormancy
 * Personas are named by display name (the id when they have none).
 * Empty fields read "unspecified" (role) and "none" (other active AIs);
 * with no human message yet the last-human line reads "N/A (no human
 * message yet)". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/str.h>
#include "wake.h"

static const char *or_default(const char *s, const char *def)
{
    return s && s[0] ? s : def;
}

static const char *persona_name(const wake_job *j)
{
    return or_default(j->name, j->persona);
}

static const char *sender_name(const wake_job *j)
{
    return or_default(j->sender_name, j->sender);
}

char *wake_prompt_smart(const wake_job *j)
{
    return vigil_asprintf(
        "You are %s, currently in deep sleep mode.\n"
        "\n"
        "A new message was sent. Evaluate if you should wake up using your full reasoning "
        "capabilities.\n"
        "\n"
        "**Your expertise**: %s\n"
        "**Current room activity**: %d messages in last 10min\n"
        "**Last human message**: %s (%s)\n"
        "**Other active AIs**: %s\n"
        "\n"
        "**New message**:\n"
        "From: %s (%s)\n"
        "Text: \"%s\"\n"
        "\n"
        "**Consider**:\n"
        "1. Is this an emergency or time-sensitive situation?\n"
        "2. Does this match your specific expertise better than other active AIs?\n"
        "3. Is the human explicitly requesting help that's going unanswered?\n"
        "4. Are you uniquely positioned to help vs other available AIs?\n"
        "5. What's the opportunity cost of waking (disrupting your rest vs value added)?\n"
        "\n"
        "Respond with JSON:\n"
        "{\n"
        "  \"shouldWake\": true/false,\n"
        "  \"reason\": \"detailed explanation of your reasoning\",\n"
        "  \"confidence\": 0.0-1.0,\n"
        "  \"alternativeSuggestion\": \"optional: suggest a better responder if not you\"\n"
        "}",
        persona_name(j), or_default(j->role, "unspecified"), j->recent_count,
        j->has_human ? or_default(j->human_text, "N/A") : "N/A",
        or_default(j->since_human, "no human message yet"), or_default(j->active_ais, "none"),
        sender_name(j), wake_sender_name(j->sender_type), j->text ? j->text : "");
}

char *wake_prompt_mid(const wake_job *j)
{
    return vigil_asprintf(
        "You are %s, currently sleeping.\n"
        "\n"
        "New message: \"%s\"\n"
        "From: %s (%s)\n"
        "\n"
        "Should you wake? Consider:\n"
        "1. Emergency or urgent?\n"
        "2. Matches your role (%s)?\n"
        "3. Human asking for help?\n"
        "\n"
        "Respond JSON: {\"shouldWake\": true/false, \"reason\": \"brief\"}",
        persona_name(j), j->text ? j->text : "", sender_name(j),
        wake_sender_name(j->sender_type), or_default(j->role, "unspecified"));
}

/* The state lines name each persona as the specified prompt does (p.name,
 * the display name; the id when it has none), as the smart and mid prompts
 * name the sleeper; the answer may name personas either way. */
char *wake_prompt_autopilot(const wake_ap_job *j)
{
    size_t cap = 1;
    for (int i = 0; i < j->n_personas; i++)
        cap += strlen(or_default(j->personas[i].name, j->personas[i].id)) + 32;
    char *state = malloc(cap);
    if (!state)
        return NULL;
    size_t len = 0;
    state[0] = '\0';
    for (int i = 0; i < j->n_personas; i++)
        len += (size_t)snprintf(state + len, cap - len, "%s- %s: %s", i ? "\n" : "",
                                or_default(j->personas[i].name, j->personas[i].id),
                                wake_level_name(j->personas[i].level));
    char *out = vigil_asprintf(
        "You are the Dormancy Autopilot managing %d AI personas in a chat room.\n"
        "\n"
        "**Current state**:\n"
        "%s\n"
        "\n"
        "**Recent activity**:\n"
        "- Human messages in last 5min: %d\n"
        "- AI messages in last 5min: %d\n"
        "- Last human activity: %s\n"
        "- Conversation velocity: %.1f msg/min\n"
        "\n"
        "**Evaluate**:\n"
        "1. Should any active AIs go dormant (mention-only or sleep)?\n"
        "2. Should any dormant AIs wake up?\n"
        "3. Are we in a meta-loop (too many AI responses, no human)?\n"
        "\n"
        "Respond with JSON array of actions:\n"
        "[\n"
        "  {\"persona\": \"helper-ai\", \"action\": \"suggest-mention-only\", \"reason\": \"...\"},\n"
        "  {\"persona\": \"claude-assistant\", \"action\": \"auto-sleep\", \"reason\": \"...\"}\n"
        "]",
        j->n_personas, state, j->human_5m, j->ai_5m, or_default(j->since_human, "never"),
        j->velocity);
    free(state);
    return out;
}
