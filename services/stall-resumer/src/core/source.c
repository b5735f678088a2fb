/* source.c - the ten activity sources and their reliability tiers:
 * tier 1 (telemetry, git commits, contract claims, test runs), tier 2
 * (status updates, file changes, devlogs, inbox processing), tier 3
 * (message queue, workspace access). */
#include <vigil/names.h>
#include "stall.h"

const char *const STALL_SOURCE_NAMES[] = {
    "TELEMETRY_EVENT",   "GIT_COMMIT",     "CONTRACT_CLAIMED", "TEST_EXECUTION",
    "STATUS_UPDATE",     "FILE_MODIFICATION", "DEVLOG_CREATED", "INBOX_PROCESSING",
    "MESSAGE_QUEUE",     "WORKSPACE_ACCESS", NULL};

static const int TIERS[STALL_SRC__COUNT] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3};

const char *stall_source_name(int source)
{
    return source >= 0 && source < STALL_SRC__COUNT ? STALL_SOURCE_NAMES[source] : "UNKNOWN";
}

int stall_source_parse(const char *name)
{
    return vigil_name_index(STALL_SOURCE_NAMES, name);
}

int stall_source_tier(int source)
{
    return source >= 0 && source < STALL_SRC__COUNT ? TIERS[source] : 0;
}
