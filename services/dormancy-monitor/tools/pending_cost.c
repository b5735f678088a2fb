/* pending_cost.c - the decision cost of one input in a room where every
 * persona has a pending suggestion (and so a deadline of its own): n
 * personas speak, no human comes for the no-human threshold, every one is
 * asked, then 200 AI messages are decided and timed (the decision alone,
 * without the shell, Redis or the broker). Deadlines used to be compared
 * by a search per name, quadratic in them; this shows they are not.
 *
 * Build against a release build's core (the fake timer store of the unit
 * tests' dm_test.h holds 512 deadlines, so it is raised for 1,000):
 *   mkdir -p /tmp/dmt && sed 's/512/4096/g' services/dormancy-monitor/tests/dm_test.h > /tmp/dmt/dm_test.h
 *   cc -O2 -std=c11 -I/tmp/dmt -Iservices/dormancy-monitor/src/core -Ilibshared/include \
 *      -isystem /usr/include/json-c services/dormancy-monitor/tools/pending_cost.c -o /tmp/pending_cost \
 *      build/release/services/dormancy-monitor/libdormancy_core.a build/release/libshared/libvigil_text.a \
 *      -ljson-c -lm -lcmocka
 *   /tmp/pending_cost 1000
 */
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include "dm_test.h"

static double ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    dm_fx *f = dm_new();
    f->cfg.max_personas = 100000;
    f->cfg.no_human_ms = 60000;
    f->cfg.suggestion_timeout_ms = 3600000;
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%d", i);
        dm_ai(f, id, "hello");
    }
    dm_advance(f, 61000);
    int pend = 0;
    for (int i = 0; i < f->room->n_personas; i++)
        pend += f->room->personas[i].sugg.kind != DORMANCY_SUGGEST_NONE;
    int steps = 200;
    double t0 = ms();
    for (int k = 0; k < steps; k++) {
        f->now += 10;
        dormancy_event ev = {0};
        ev.kind = DORMANCY_EV_MESSAGE;
        ev.id = "x";
        ev.ts = f->now;
        ev.msg.sender = "p0";
        ev.msg.sender_type = DORMANCY_SENDER_AI;
        ev.msg.text = "still here";
        dormancy_ids ids = {dm_make_id, f};
        dormancy_actions a;
        dormancy_actions_init(&a);
        if (dormancy_room_apply(f->room, &ev, &f->cfg, f->now, &ids, &a) != 0) return 1;
        dormancy_actions_free(&a);
    }
    double t = ms() - t0;
    printf("personas %d, pending suggestions %d, deadlines %d: %.1f us per input (decision only)\n",
           n, pend, f->room->n_timers, t * 1000 / steps);
    dm_free(f);
    return 0;
}
