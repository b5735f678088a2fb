/* lifecycle.c - what runs beside intake: the live stream hub (started
 * once Redis/MQTT connecting began) and its orderly stop before the HTTP
 * listener closes (open streams end cleanly). */
#include <stdio.h>
#include <vigil/log.h>
#include "adapter.h"

int gateway_start(void *ctx, vigil_runtime *rt)
{
    gateway *g = ctx;
    char key[256];
    vigil_runtime_key(rt, GATEWAY_LOG_NAME, key, sizeof key);
    vigil_runtime_key(rt, GATEWAY_SNAP_PREFIX, g->snap_prefix, sizeof g->snap_prefix);
    vigil_runtime_key(rt, GATEWAY_SNAP_SET, g->snap_set, sizeof g->snap_set);
    if (gw_hub_start(&g->hub, g, rt, key, (int)g->cfg.client_queue,
                     gw_stream_cap(g->cfg.max_clients), g->cfg.ping_ms, g->cfg.client_stall_ms) != 0)
        return -1;
    atomic_store(&g->rt, rt);
    vigil_log(VIGIL_LOG_INFO, "gateway: %d token(s), log %s, ping every %lld ms, at most %d SSE "
              "streams", g->tokens.n, key, (long long)g->cfg.ping_ms, g->hub.max_streams);
    return 0;
}

void gateway_stop(void *ctx)
{
    gateway *g = ctx;
    atomic_store(&g->rt, NULL); /* new requests: 503 */
    gw_hub_stop(&g->hub);
    /* requests in flight finish before the listener closes; the
     * connections they give back after this are closed, not kept */
    gw_pool_close(&g->pool);
}
