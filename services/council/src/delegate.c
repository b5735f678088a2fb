/* delegate.c - `research:` delegation over A2A off the worker's thread: a
 * small thread per worker that makes the blocking JSON-RPC POST (libshared's
 * vigil/http_post.h), reads the answer with the core's A2A reader and hands
 * it back, so a slow agent never stalls the other sessions' LLM calls. The
 * worker commits the loop once the reply is in. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/http_post.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "delegate.h"

typedef struct request {
    char job[COUNCIL_JOB_MAX + 1];
    char *body;
    council_a2a_reply *reply;
    atomic_int *done;
} request;

struct council_delegator {
    const council_service *svc;
    void (*wake)(void *);
    void *wake_ctx;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    request *q;
    int cap, head, n;
    bool stop;
};

/* One POST and its reading (the blocking part). */
static void run(const council_service *svc, request *r)
{
    council_a2a_reply *reply = r->reply;
    memset(reply, 0, sizeof *reply);
    vigil_http_reply http;
    int64_t t0 = vigil_mono_ms();
    int rc = vigil_http_post_json(svc->a2a_url, r->body, svc->a2a_token, svc->a2a_timeout_ms,
                                  1u << 20, &http);
    vigil_histogram_observe("vigil_council_a2a_seconds", "A2A delegation round trip", NULL,
                            (double)(vigil_mono_ms() - t0) / 1000.0);
    if (rc != 0)
        snprintf(reply->error, sizeof reply->error, "%s", http.error);
    else if (http.status < 200 || http.status > 299)
        snprintf(reply->error, sizeof reply->error, "HTTP %ld", http.status);
    else
        council_a2a_parse(http.body, http.len, r->job, reply);
    vigil_http_reply_free(&http);
    vigil_counter_add("vigil_council_a2a_total", "A2A delegations by outcome",
                      reply->ok ? "outcome=\"ok\"" : "outcome=\"error\"", 1);
    if (!reply->ok)
        vigil_log_kv(VIGIL_LOG_WARN, "A2A delegation failed", "job", r->job, "error",
                     reply->error, NULL);
}

static void *thread_main(void *arg)
{
    council_delegator *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->mu);
        while (d->n == 0 && !d->stop)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->stop) {
            pthread_mutex_unlock(&d->mu);
            return NULL; /* queued delegations are abandoned: their jobs stay pending */
        }
        request r = d->q[d->head];
        d->head = (d->head + 1) % d->cap;
        d->n--;
        pthread_mutex_unlock(&d->mu);
        run(d->svc, &r);
        free(r.body);
        atomic_store(r.done, 1);
        d->wake(d->wake_ctx);
    }
}

council_delegator *council_delegator_new(const council_service *svc, int cap,
                                         void (*wake)(void *), void *wake_ctx)
{
    council_delegator *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->svc = svc;
    d->wake = wake;
    d->wake_ctx = wake_ctx;
    d->cap = cap > 0 ? cap : 1;
    d->q = calloc((size_t)d->cap, sizeof *d->q);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (!d->q || pthread_create(&d->thread, NULL, thread_main, d) != 0) {
        council_delegator_free(d);
        return NULL;
    }
    d->started = true;
    return d;
}

void council_delegator_free(council_delegator *d)
{
    if (!d)
        return;
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL); /* waits for a POST in flight (its timeout bounds it) */
    }
    for (int i = 0; d->q && i < d->n; i++)
        free(d->q[(d->head + i) % d->cap].body);
    free(d->q);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
}

int council_delegator_submit(council_delegator *d, const char *job, char *body,
                             council_a2a_reply *reply, atomic_int *done)
{
    pthread_mutex_lock(&d->mu);
    if (d->n == d->cap) {
        pthread_mutex_unlock(&d->mu);
        return -1;
    }
    request *r = &d->q[(d->head + d->n) % d->cap];
    snprintf(r->job, sizeof r->job, "%s", job);
    r->body = body;
    r->reply = reply;
    r->done = done;
    d->n++;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return 0;
}
