/* workers.c - a service's pool of job worker threads (workers.h). */
#include "vigil/workers.h"

#include <string.h>

int vigil_workers_start(vigil_workers *ws, const vigil_worker_ops *ops, int n, void *ctx,
                        vigil_runtime *rt)
{
    memset(ws, 0, sizeof *ws);
    ws->ops = *ops;
    if (n < 1)
        n = 1;
    if (n > VIGIL_WORKERS_MAX)
        n = VIGIL_WORKERS_MAX;
    for (int i = 0; i < n; i++) {
        void *w = ops->make(ctx, rt, i);
        if (!w)
            return -1;
        ws->w[ws->n++] = w;
        if (pthread_create(&ws->thread[i], NULL, ops->run, w) != 0)
            return -1;
        ws->started[i] = true;
    }
    return 0;
}

void vigil_workers_stop(vigil_workers *ws)
{
    if (ws->ops.wake)
        for (int i = 0; i < ws->n; i++)
            if (ws->started[i])
                ws->ops.wake(ws->w[i]);
    for (int i = 0; i < ws->n; i++) {
        if (ws->started[i])
            pthread_join(ws->thread[i], NULL);
        ws->ops.drop(ws->w[i]);
        ws->w[i] = NULL;
        ws->started[i] = false;
    }
    ws->n = 0;
}
