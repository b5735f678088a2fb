/* config.c - the core's defaults: the specified AUTONOMOUS_* values. */
#include <string.h>
#include "council.h"

void council_config_init(council_config *c)
{
    memset(c, 0, sizeof *c);
    c->enabled = true;                        /* AUTONOMOUS_ENABLED true */
    c->auto_start = true;
    c->interval_ms = 60 * COUNCIL_MIN_MS;     /* AUTONOMOUS_INTERVAL 60 min */
    c->max_daily = 10;                        /* AUTONOMOUS_MAX_DAILY 10 */
    c->idle_timeout_ms = 30 * COUNCIL_MIN_MS; /* AUTONOMOUS_IDLE_TIMEOUT 30 min */
    c->loop_ms = 30000;
    c->max_loops = 20;
    c->question_ttl_ms = COUNCIL_DAY_MS;
    c->context_messages = 10;
    c->max_sleep_ms = c->idle_timeout_ms;
    c->presence_active_ms = 120000;
}

/* A loop holds at most COUNCIL_SOL calls (the advisors at once, Sol after
 * them): with llm_concurrency / COUNCIL_SOL loops every call starts as soon
 * as it is made, so no loop's Sol waits behind other loops' advisors in
 * the client's queue; more loops would queue calls, fewer leave transfers
 * unused. */
int council_loops_per_worker(int llm_concurrency)
{
    int cap = llm_concurrency / COUNCIL_SOL;
    return cap < 1 ? 1 : cap;
}
